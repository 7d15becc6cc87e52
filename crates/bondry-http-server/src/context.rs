//! The runtime's side of the handler interface: cancellation, emitter and publisher.

use bondry_core::BoxFuture;
use bondry_core::capability::Descriptor;
use bondry_core::handler::{Cancellation, Emitter, LogLevel, Publisher};
use serde_json::Value;
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

/// Progress and log messages are dropped until response streams deliver them (issue 6).
pub struct SilentEmitter;

impl Emitter for SilentEmitter {
    fn progress(&self, _progress: f64, _total: Option<f64>, _message: Option<String>) {}
    fn log(&self, _level: LogLevel, _logger: Option<String>, _data: Value) {}
}

/// Publications are dropped until listen and GET streams deliver them (issue 6).
pub struct SilentPublisher;

impl Publisher for SilentPublisher {
    fn resource_updated(&self, _uri: &str) {}
    fn set_dynamic(&self, _capabilities: Vec<Descriptor>) {}
}
