//! The JSON a procedure is POSTed: who calls what, with which arguments, and on a retry
//! the client's input responses and the state the service handed back.

use bondry_core::capability::CapabilityKind;
use bondry_core::handler::HandlerRequest;
use serde_json::{Map, Value, json};

/// The wire version of the request body.
pub const VERSION: u64 = 1;

/// The body of one POST for `request`, of a capability of `kind`. `request_id` is fresh
/// for every POST, so that each input round of one invocation is signed apart; the
/// principal goes only where the stanza says `disclose_principal`.
pub fn body(request: &HandlerRequest, kind: CapabilityKind, request_id: &str, disclose_principal: bool) -> Value {
    let mut body = Map::new();
    body.insert("bondry".into(), json!(VERSION));
    body.insert("capability".into(), json!({"id": request.capability.as_str(), "kind": kind.as_str()}));
    body.insert("invocation_id".into(), json!(request.invocation.as_str()));
    body.insert("request_id".into(), json!(request_id));
    body.insert("realm".into(), json!(request.realm));
    body.insert("arguments".into(), request.arguments.clone());
    if let Some(uri) = &request.uri {
        body.insert("uri".into(), json!(uri));
    }
    body.insert("client_capabilities".into(), request.client_capabilities.clone());
    if let Some(traceparent) = &request.trace.traceparent {
        let mut trace = Map::from_iter([("traceparent".to_owned(), json!(traceparent))]);
        if let Some(tracestate) = &request.trace.tracestate {
            trace.insert("tracestate".into(), json!(tracestate));
        }
        body.insert("trace".into(), Value::Object(trace));
    }
    if disclose_principal {
        let principal = &request.principal;
        body.insert(
            "principal".into(),
            json!({"id": principal.id(), "kind": principal.kind().as_str(), "roles": principal.roles()}),
        );
    }
    if let Some(retry) = &request.retry {
        body.insert("input_responses".into(), json!(retry.responses));
        if let Some(state) = &retry.state {
            body.insert("state".into(), state.clone());
        }
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use bondry_core::handler::Retry;

    use super::*;
    use crate::procedure::testing::request;

    #[test]
    fn the_body_names_the_call_and_discloses_the_principal_only_when_asked() {
        let first = body(&request(json!({"city": "Lyon"}), None), CapabilityKind::Tool, "r1", false);
        assert_eq!(
            first,
            json!({
                "bondry": 1,
                "capability": {"id": "weather.forecast", "kind": "tool"},
                "invocation_id": "01010101010101010101010101010101",
                "request_id": "r1",
                "realm": "default",
                "arguments": {"city": "Lyon"},
                "client_capabilities": {"elicitation": {}},
                "trace": {"traceparent": "00-t-s-01"},
            })
        );
        let retry = Retry {
            responses: [("name".to_owned(), json!({"action": "accept"}))].into(),
            state: Some(json!({"round": 2})),
            continuation: None,
        };
        let again = body(&request(json!({"city": "Lyon"}), Some(retry)), CapabilityKind::Tool, "r2", true);
        assert_eq!(again["principal"], json!({"id": "ada", "kind": "user", "roles": ["ops"]}));
        assert_eq!(again["input_responses"], json!({"name": {"action": "accept"}}));
        assert_eq!(again["state"], json!({"round": 2}));
        assert_eq!(again["request_id"], "r2", "each POST its own request id");
    }
}
