//! The runtime's side of the handler interface: cancellation and the emitter (the
//! publisher is in `publish.rs`).

use bondry_core::BoxFuture;
use bondry_core::handler::{Cancellation, Emitter, LogLevel, Wants};
use bondry_mcp_proto::notify::Notifier;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Cancellation backed by a token the runtime cancels when the caller goes away.
pub struct TokenCancellation(pub CancellationToken);

impl Cancellation for TokenCancellation {
    fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.cancelled())
    }
}

/// The emitter of a request that asked for no notifications: everything is dropped.
pub struct SilentEmitter;

impl Emitter for SilentEmitter {
    fn progress(&self, _progress: f64, _total: Option<f64>, _message: Option<String>) {}
    fn log(&self, _level: LogLevel, _logger: Option<String>, _data: Value) {}
}

/// Progress and log messages a client asked for, rendered by the adapter and queued for
/// the request's event stream. They are lossy by nature: when the queue is full (the
/// client reads slower than the handler talks) the newest is dropped, and when the client
/// is gone all are.
pub struct StreamEmitter {
    notifier: Notifier,
    queue: mpsc::Sender<String>,
}

/// Notifications queued per request; past it new ones are dropped.
pub const EMITTED_QUEUE: usize = 64;

impl StreamEmitter {
    pub fn new(notifier: Notifier, queue: mpsc::Sender<String>) -> Self {
        Self { notifier, queue }
    }

    fn send(&self, notification: Option<String>) {
        if let Some(notification) = notification {
            let _ = self.queue.try_send(notification);
        }
    }
}

impl Emitter for StreamEmitter {
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.send(self.notifier.progress(progress, total, message.as_deref()));
    }

    fn log(&self, level: LogLevel, logger: Option<String>, data: Value) {
        self.send(self.notifier.log(level, logger.as_deref(), &data));
    }

    fn wants(&self) -> Wants {
        Wants { progress: self.notifier.wants_progress(), log_level: self.notifier.log_level() }
    }
}
