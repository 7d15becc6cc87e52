//! Input a handler asks the client for: which method carries each kind, and whether the
//! client declared the capability it needs.

use bondry_core::handler::{InputKind, InputRequest};
use serde_json::{Value, json};

/// The client capability a request needs, as `requiredCapabilities` names it.
pub(crate) fn requirement(request: &InputRequest) -> (&'static str, Value) {
    match request.kind {
        InputKind::Sampling => ("sampling", json!({})),
        InputKind::Roots => ("roots", json!({})),
        InputKind::Elicitation => {
            let mode = request.params.get("mode").and_then(Value::as_str).unwrap_or("form");
            ("elicitation", json!({ mode: {} }))
        }
    }
}

/// The client method that supplies an input of `kind`.
pub fn method(kind: InputKind) -> &'static str {
    match kind {
        InputKind::Elicitation => "elicitation/create",
        InputKind::Sampling => "sampling/createMessage",
        InputKind::Roots => "roots/list",
    }
}

/// The kind of input the client method `method` supplies (the inverse of [`method`]).
pub fn kind(method: &str) -> Option<InputKind> {
    [InputKind::Elicitation, InputKind::Sampling, InputKind::Roots]
        .into_iter()
        .find(|kind| self::method(*kind) == method)
}

/// Whether `declared` client capabilities cover `request`: `sampling` and `roots` by
/// their key; elicitation by its mode, where an empty `elicitation` declares form mode.
pub fn declared(request: &InputRequest, declared: &Value) -> bool {
    match request.kind {
        InputKind::Sampling => declared.get("sampling").is_some_and(Value::is_object),
        InputKind::Roots => declared.get("roots").is_some_and(Value::is_object),
        InputKind::Elicitation => {
            let Some(elicitation) = declared.get("elicitation").and_then(Value::as_object) else {
                return false;
            };
            let mode = request.params.get("mode").and_then(Value::as_str).unwrap_or("form");
            match elicitation.get(mode) {
                Some(declared) => declared.is_object(),
                None => mode == "form" && elicitation.is_empty(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(kind: InputKind, params: Value) -> InputRequest {
        InputRequest { kind, params }
    }

    #[test]
    fn each_kind_is_known_by_its_method() {
        for each in [InputKind::Elicitation, InputKind::Sampling, InputKind::Roots] {
            assert_eq!(kind(method(each)), Some(each));
        }
        assert_eq!(kind("tools/call"), None);
    }

    #[test]
    fn capabilities_cover_their_kinds() {
        let form = request(InputKind::Elicitation, json!({"message": "m"}));
        let url = request(InputKind::Elicitation, json!({"mode": "url"}));
        assert!(declared(&form, &json!({"elicitation": {}})));
        assert!(!declared(&url, &json!({"elicitation": {}})));
        assert!(declared(&url, &json!({"elicitation": {"url": {}}})));
        assert!(!declared(&form, &json!({"elicitation": {"url": {}}})));
        assert!(declared(&form, &json!({"elicitation": {"form": {}}})));
        assert!(declared(&request(InputKind::Sampling, json!({})), &json!({"sampling": {}})));
        assert!(!declared(&request(InputKind::Sampling, json!({})), &json!({"roots": {}})));
        assert!(declared(&request(InputKind::Roots, json!({})), &json!({"roots": {"listChanged": true}})));
    }
}
