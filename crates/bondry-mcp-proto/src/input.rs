//! Input a handler asks the client for: which method carries each kind, and whether the
//! client declared the capability it needs.

use std::collections::BTreeMap;
use std::time::SystemTime;

use bondry_core::handler::{InputKind, InputRequest};
use serde_json::{Map, Value, json};

use crate::tools::EMPTY_INPUT_REQUIRED;
use crate::{Call, Csprng, state};

/// A state that seals larger than `requestState` may be.
pub const STATE_TOO_LARGE: &str = "state_too_large";

/// Why an `input_required` answer could not be sent.
#[derive(Debug)]
pub enum Unsendable {
    /// It asks for input the client did not declare: the client capabilities it needs.
    Undeclared(Value),
    /// A handler failure with this code.
    Failed(&'static str),
}

/// The modern `input_required` result for a handler's requests and state: each request
/// under its key, the state sealed into `requestState` with the id of the exchange it
/// continues (`sealing`). Never cached, so no `ttlMs`.
pub fn required_result(
    call: &Call,
    requests: &BTreeMap<String, InputRequest>,
    sealing: Option<(&Value, &str)>,
    server_meta: &Value,
    now: SystemTime,
    rng: &mut dyn Csprng,
) -> Result<Value, Unsendable> {
    if requests.is_empty() && sealing.is_none() {
        return Err(Unsendable::Failed(EMPTY_INPUT_REQUIRED));
    }
    let mut missing = Map::new();
    for request in requests.values().filter(|request| !declared(request, &call.client_capabilities)) {
        let (key, needed) = requirement(request);
        missing.insert(key.into(), needed);
    }
    if !missing.is_empty() {
        return Err(Unsendable::Undeclared(Value::Object(missing)));
    }
    let mut result = Map::new();
    result.insert("resultType".into(), json!("input_required"));
    if !requests.is_empty() {
        let wire: Map<String, Value> = requests
            .iter()
            .map(|(key, request)| (key.clone(), json!({"method": method(request.kind), "params": request.params})))
            .collect();
        result.insert("inputRequests".into(), Value::Object(wire));
    }
    if let Some((handler_state, continuation)) = sealing {
        let sealed = state::seal(&call.realm.keys, &call.binding(), handler_state.clone(), continuation, now, rng)
            .map_err(|_| Unsendable::Failed(STATE_TOO_LARGE))?;
        result.insert("requestState".into(), json!(sealed));
    }
    result.insert("_meta".into(), server_meta.clone());
    Ok(Value::Object(result))
}

/// The client capability a request needs, as `requiredCapabilities` names it.
fn requirement(request: &InputRequest) -> (&'static str, Value) {
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
