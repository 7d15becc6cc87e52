//! Bondry's answers to the requests an upstream sends it.
//!
//! `ping` and `roots/list` are answered here, `roots/list` always from the stanza's
//! `roots` (one caller's roots must never reach another through a shared connection).
//! Any other request goes to the call it belongs to, if one is known
//! ([`super::watched`]); here it is refused.

use bondry_mcp_proto::error::code;
use bondry_mcp_proto::jsonrpc::{self, ErrorId, ErrorObject, Id};
use serde_json::{Value, json};

use crate::spec::Root;

/// What a refused request is told.
const CANNOT_ATTRIBUTE: &str = "cannot attribute request";
/// What a request past `max_pending_server_requests` is told.
const TOO_MANY: &str = "too many requests awaiting an answer";

/// Whether Bondry answers `method` itself, whoever's call it came with.
pub(crate) fn is_local(method: &str) -> bool {
    matches!(method, "ping" | "roots/list")
}

/// The response body to the upstream's request `method` with `id`.
pub(crate) fn answer(id: &Id, method: &str, roots: &[Root]) -> Vec<u8> {
    match method {
        "ping" => jsonrpc::result_body(id, &json!({})),
        "roots/list" => jsonrpc::result_body(id, &roots_result(roots)),
        _ => jsonrpc::error_body(
            ErrorId::Id(id),
            &ErrorObject { code: code::INTERNAL_ERROR, message: CANNOT_ATTRIBUTE, data: None },
        ),
    }
}

/// The answer to a request past `max_pending_server_requests`.
pub(crate) fn too_many(id: &Id) -> Vec<u8> {
    jsonrpc::error_body(ErrorId::Id(id), &ErrorObject { code: code::INTERNAL_ERROR, message: TOO_MANY, data: None })
}

/// Bondry's answer to a `roots/list`, whoever asks: the stanza's `roots`.
pub(crate) fn roots_result(roots: &[Root]) -> Value {
    json!({"roots": roots.iter().map(root).collect::<Vec<_>>()})
}

fn root(root: &Root) -> Value {
    match &root.name {
        Some(name) => json!({"uri": root.uri, "name": name}),
        None => json!({"uri": root.uri}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(method: &str, roots: &[Root]) -> Value {
        serde_json::from_slice(&answer(&Id::Integer(4), method, roots)).unwrap()
    }

    #[test]
    fn answers_ping_and_roots_and_refuses_the_rest() {
        assert_eq!(answered("ping", &[]), json!({"jsonrpc": "2.0", "id": 4, "result": {}}));
        let roots = [
            Root { uri: "file:///work".into(), name: Some("work".into()) },
            Root { uri: "file:///tmp".into(), name: None },
        ];
        assert_eq!(
            answered("roots/list", &roots)["result"],
            json!({"roots": [{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}]})
        );
        assert_eq!(
            answered("sampling/createMessage", &roots)["error"],
            json!({"code": -32603, "message": "cannot attribute request"})
        );
        let refused: Value = serde_json::from_slice(&too_many(&Id::Integer(5))).unwrap();
        assert_eq!(
            refused,
            json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32603, "message": "too many requests awaiting an answer"}})
        );
    }
}
