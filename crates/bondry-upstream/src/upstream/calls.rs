//! Calls on an upstream: each one started on the live connection within the upstream's
//! call slots, settled into what it means for the caller and for the upstream's health
//! (failures in a row mark it down), and the log level a handshake upstream's one session
//! is asked for on behalf of every call in flight.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bondry_core::handler::LogLevel;
use bondry_mcp_proto::Era;
use bondry_mcp_proto::error::code as rpc;
use serde_json::{Map, Value, json};

use super::{Upstream, lock, read};
use crate::backoff;
use crate::client::{ClientError, Connection, Outgoing, Watch};
use crate::warnings;

/// Consecutive failed calls after which an upstream is marked down for its backoff.
pub const FAILURES_BEFORE_DOWN: u32 = 5;
/// How long a `logging/setLevel` may take: calls wanting a level wait for it.
const SET_LEVEL_WITHIN: Duration = Duration::from_secs(10);

/// One request on its way to the upstream; see [`Upstream::start`].
pub struct Flight {
    /// The number of the connection it went on.
    number: u64,
    /// The connection it went on, which answers the upstream's requests about it.
    pub connection: Connection,
    pub answer: Pin<Box<dyn Future<Output = Result<Value, ClientError>> + Send>>,
}

/// Why a call could not be relayed.
#[derive(Debug, Clone, PartialEq)]
pub enum Unrelayed {
    /// No connection, marked down, or the transport failed or timed out: retryable.
    Unavailable,
    /// The upstream answered a JSON-RPC error.
    Refused { code: i64, message: String },
    /// The upstream says the caller lacks the client capabilities `required` (-32021).
    ClientLacks { required: Value },
}

impl Upstream {
    /// Waits until no call is running, at most one call timeout.
    pub(super) async fn calls_finished(&self) {
        let wait = self.spec().tunables.call_timeout;
        let _ = tokio::time::timeout(wait, self.calls.idle()).await;
    }

    /// Sends `request`, watched by `watch` when given: the flight answers once it has a
    /// call slot and the upstream answered. Whoever drives it applies the call timeout
    /// and hands the outcome to [`Upstream::settle`]; dropped, it is cancelled upstream.
    pub fn start(&self, request: &Outgoing, watch: Option<Watch>) -> Result<Flight, Unrelayed> {
        let (number, connection) = self.usable().ok_or(Unrelayed::Unavailable)?;
        let mut running = self.calls.enter();
        let slots = Arc::clone(&self.calls);
        let on = connection.clone();
        // Written now, from the borrowed request: the flight holds its bytes, not a copy.
        let prepared = connection.prepare(request, watch);
        let answer = Box::pin(async move {
            let prepared = prepared?;
            running.admitted(&slots).await;
            let answered = on.send(prepared).await;
            drop(running);
            answered
        });
        Ok(Flight { number, connection, answer })
    }

    /// What a flight's outcome means for the caller; `None` when it timed out. Transport
    /// failures count toward marking the upstream down.
    pub fn settle(&self, flight: &Flight, answered: Option<Result<Value, ClientError>>) -> Result<Value, Unrelayed> {
        let number = flight.number;
        match answered {
            Some(Ok(result)) => {
                self.succeeded();
                Ok(result)
            }
            // The upstream is alive and said no: not a failure of the link.
            Some(Err(ClientError::Rpc { code: rpc::MISSING_CLIENT_CAPABILITY, data, .. })) => {
                self.succeeded();
                let required = data.as_ref().and_then(|data| data.get("requiredCapabilities")).cloned();
                Err(Unrelayed::ClientLacks { required: required.unwrap_or_else(|| json!({})) })
            }
            Some(Err(ClientError::Rpc { code, message, .. })) => {
                self.succeeded();
                Err(Unrelayed::Refused { code, message })
            }
            Some(Err(error)) => {
                if let Some(print) = warnings::hear(self.name(), "", &error.to_string()) {
                    tracing::warn!(upstream = self.name(), error = ?error.to_string(), suppressed = print.suppressed, "an upstream call failed");
                }
                if matches!(error, ClientError::Closed | ClientError::Unreachable(_)) {
                    self.lost.send_if_modified(|lost| {
                        let newer = number > *lost;
                        if newer {
                            *lost = number;
                        }
                        newer
                    });
                }
                self.failed();
                Err(Unrelayed::Unavailable)
            }
            None => {
                if let Some(print) = warnings::hear(self.name(), "", "call timed out") {
                    tracing::warn!(upstream = self.name(), suppressed = print.suppressed, "an upstream call timed out");
                }
                self.failed();
                Err(Unrelayed::Unavailable)
            }
        }
    }

    /// Makes a handshake upstream send log messages of the lowest level the calls in
    /// flight want, this one's `level` among them, unless it was asked for exactly that on
    /// this connection already: lowered for a call that wants more, and raised back by the
    /// next call asking a level once no call in flight wants the lower one. Each caller's
    /// emitter passes on only what that caller asked for. A modern upstream is asked per
    /// request. The wish lasts while the call holds it, waiting for its caller's input too.
    pub async fn ask_log_level(&self, level: LogLevel) -> LogWish {
        let wish = LogWish::new(Arc::clone(&self.log_wishes), level);
        let Some((number, connection)) = self.usable() else { return wish };
        if connection.revision().era() != Era::Handshake || connection.server_capabilities().get("logging").is_none() {
            return wish;
        }
        // Most calls find the level already asked, and wait for nothing.
        if *lock(&self.log_level) == Some((number, wish.lowest())) {
            return wish;
        }
        let _one_at_a_time = self.setting_level.lock().await;
        let lowest = wish.lowest();
        {
            let mut asked = lock(&self.log_level);
            if *asked == Some((number, lowest)) {
                return wish;
            }
            *asked = Some((number, lowest));
        }
        let params = Map::from_iter([("level".to_owned(), json!(lowest.as_str()))]);
        // Boxed: asked rarely, and a request's future would otherwise be part of every call's.
        let set = Box::pin(connection.request(Outgoing::new("logging/setLevel", params)));
        match tokio::time::timeout(self.spec().tunables.call_timeout.min(SET_LEVEL_WITHIN), set).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::debug!(upstream = self.name, %error, "the upstream's log level is not set"),
            Err(_) => tracing::debug!(upstream = self.name, "the upstream's log level is not set: timed out"),
        }
        wish
    }

    /// The connection, unless there is none or the upstream is marked down.
    pub(super) fn usable(&self) -> Option<(u64, Connection)> {
        let health = lock(&self.health);
        if health.down_until.is_some_and(|until| until > Instant::now()) {
            return None;
        }
        read(&self.connection).clone()
    }

    pub(super) fn succeeded(&self) {
        let mut health = lock(&self.health);
        health.failures = 0;
        health.down_until = None;
    }

    pub(super) fn failed(&self) {
        let mut health = lock(&self.health);
        health.failures += 1;
        if health.failures >= FAILURES_BEFORE_DOWN {
            let down = backoff::FIRST;
            health.down_until = Some(Instant::now() + down);
            tracing::warn!(
                upstream = self.name,
                failures = health.failures,
                down_ms = down.as_millis() as u64,
                "upstream marked down: its calls answer at once until the backoff is over"
            );
        }
    }
}

/// One call's wish for a log level, counted among the upstream's until dropped.
#[must_use = "the wish lasts while it is held"]
pub struct LogWish {
    wishes: Arc<Mutex<BTreeMap<LogLevel, usize>>>,
    level: LogLevel,
}

impl LogWish {
    fn new(wishes: Arc<Mutex<BTreeMap<LogLevel, usize>>>, level: LogLevel) -> Self {
        *lock(&wishes).entry(level).or_default() += 1;
        Self { wishes, level }
    }

    /// The lowest level any call in flight wants: this one's at most.
    fn lowest(&self) -> LogLevel {
        lock(&self.wishes).keys().next().copied().unwrap_or(self.level)
    }
}

impl Drop for LogWish {
    fn drop(&mut self) {
        let mut wishes = lock(&self.wishes);
        if let Some(count) = wishes.get_mut(&self.level) {
            *count -= 1;
            if *count == 0 {
                wishes.remove(&self.level);
            }
        }
    }
}
