//! The labels a request's metrics carry: its era and its method, each from a closed set,
//! so that no client can grow the number of series whatever it sends.

use crate::envelope;
use crate::jsonrpc::Message;
use crate::revision::Era;

/// The method label of anything not in [`METHODS`]: an unknown method, a client's
/// response, a session's GET or DELETE, a body that is not JSON-RPC.
pub const OTHER: &str = "other";

/// The methods a client sends, in every revision Bondry speaks.
pub const METHODS: [&str; 23] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "tasks/list",
    "tasks/result",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/roots/list_changed",
];

/// A request's labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labels {
    /// `None` for a request refused before its era was known.
    pub era: Option<Era>,
    /// One of [`METHODS`], or [`OTHER`].
    pub method: &'static str,
}

impl Labels {
    /// A request refused before its message was read.
    pub const NONE: Self = Self { era: None, method: OTHER };

    /// The era as the label names it: `modern`, `handshake` or `none`.
    pub fn era_label(self) -> &'static str {
        match self.era {
            Some(Era::Modern) => "modern",
            Some(Era::Handshake) => "handshake",
            None => "none",
        }
    }
}

/// The method label of `message`, and whether it claims a modern revision in its `_meta`.
pub fn of(message: &Message) -> (&'static str, bool) {
    let (method, params) = match message {
        Message::Request { method, params, .. } | Message::Notification { method, params } => (method, params),
        Message::Response { .. } => return (OTHER, false),
    };
    (label(method), envelope::claim(params.as_ref()).is_some())
}

/// `method` as a label: itself when the specification names it, else [`OTHER`].
pub fn label(method: &str) -> &'static str {
    METHODS.iter().find(|known| **known == method).copied().unwrap_or(OTHER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_specifications_methods_are_labels() {
        assert_eq!(label("tools/call"), "tools/call");
        assert_eq!(label("notifications/initialized"), "notifications/initialized");
        for bogus in ["tools/call2", "", "TOOLS/CALL", "tools/call\u{0}", "x".repeat(10_000).as_str()] {
            assert_eq!(label(bogus), OTHER);
        }
    }
}
