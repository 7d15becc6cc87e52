//! Why an exchange with an upstream failed.

use serde_json::Value;

/// What went wrong talking to an upstream. Nothing here carries a credential: only
/// what the upstream said and what Bondry saw of the transport.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The connection could not be made: the URL does not answer, the command cannot start.
    #[error("upstream unreachable: {0}")]
    Unreachable(String),
    /// The connection cannot be built from its specification (an unreadable CA file).
    #[error("upstream connection cannot be set up: {0}")]
    Setup(String),
    /// The era was not negotiated within the connect timeout.
    #[error("upstream did not complete negotiation in time")]
    Timeout,
    /// The connection ended (closed, the child exited, the stream ended) before the answer.
    #[error("upstream connection closed")]
    Closed,
    /// The upstream answered a JSON-RPC error.
    #[error("upstream error {code}: {message}")]
    Rpc { code: i64, message: String, data: Option<Value> },
    /// The upstream answered an HTTP status without a JSON-RPC answer.
    #[error("upstream answered HTTP {status}")]
    Http { status: u16 },
    /// The answer was larger than the upstream's `max_response_bytes`; it was dropped.
    #[error("upstream message larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// The request cannot be sent as given (a method or header that cannot be a header).
    #[error("request cannot be sent: {0}")]
    Invalid(String),
    /// The upstream did not answer within the deadline the named key sets.
    #[error("upstream did not answer within {0}")]
    TimedOut(&'static str),
    /// The upstream broke the protocol (a malformed answer, a revision not offered).
    #[error("upstream protocol violation: {0}")]
    Protocol(String),
}

impl ClientError {
    /// Whether this is the upstream refusing a request rather than the transport failing:
    /// what makes negotiation fall back from `server/discover` to `initialize`.
    pub(crate) fn is_refusal(&self) -> bool {
        matches!(self, Self::Rpc { .. } | Self::Http { .. } | Self::Protocol(_))
    }

    /// The error of a JSON-RPC `error` member, read leniently: an upstream that sends a
    /// malformed one still fails the request, with what could be read.
    pub(crate) fn from_rpc(error: &Value) -> Self {
        Self::Rpc {
            code: error.get("code").and_then(Value::as_i64).unwrap_or_default(),
            message: error.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
            data: error.get("data").cloned(),
        }
    }
}
