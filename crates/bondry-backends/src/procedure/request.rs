//! The JSON a procedure is POSTed: who calls what, with which arguments, and on a retry
//! the client's input responses and the state the service handed back.

use bondry_core::capability::CapabilityKind;
use bondry_core::compact::{self, estimate};
use bondry_core::handler::HandlerRequest;

/// The wire version of the request body.
pub const VERSION: u64 = 1;

/// The body of one POST for `request`, of a capability of `kind`. `request_id` is fresh
/// for every POST, so that each input round of one invocation is signed apart; the
/// principal goes only where the stanza says `disclose_principal`. Written straight from
/// borrowed parts: the arguments are often kilobytes, and are neither copied into a tree
/// of their own nor escaped by a formatter.
pub fn body(request: &HandlerRequest, kind: CapabilityKind, request_id: &str, disclose_principal: bool) -> Vec<u8> {
    let size = 256 + estimate(&request.arguments) + estimate(&request.client_capabilities);
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(b"{\"bondry\":");
    out.extend_from_slice(VERSION.to_string().as_bytes());
    member(&mut out, "capability");
    object(&mut out, &[("id", request.capability.as_str()), ("kind", kind.as_str())]);
    member(&mut out, "invocation_id");
    compact::write_str(request.invocation.as_str(), &mut out);
    member(&mut out, "request_id");
    compact::write_str(request_id, &mut out);
    member(&mut out, "realm");
    compact::write_str(&request.realm, &mut out);
    member(&mut out, "arguments");
    compact::write(&request.arguments, &mut out);
    if let Some(uri) = &request.uri {
        member(&mut out, "uri");
        compact::write_str(uri, &mut out);
    }
    member(&mut out, "client_capabilities");
    compact::write(&request.client_capabilities, &mut out);
    if let Some(traceparent) = &request.trace.traceparent {
        member(&mut out, "trace");
        match &request.trace.tracestate {
            Some(tracestate) => object(&mut out, &[("traceparent", traceparent), ("tracestate", tracestate)]),
            None => object(&mut out, &[("traceparent", traceparent)]),
        }
    }
    if disclose_principal {
        let principal = &request.principal;
        member(&mut out, "principal");
        out.extend_from_slice(b"{\"id\":");
        compact::write_str(principal.id(), &mut out);
        member(&mut out, "kind");
        compact::write_str(principal.kind().as_str(), &mut out);
        member(&mut out, "roles");
        out.push(b'[');
        for (index, role) in principal.roles().iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            compact::write_str(role, &mut out);
        }
        out.extend_from_slice(b"]}");
    }
    if let Some(retry) = &request.retry {
        member(&mut out, "input_responses");
        out.push(b'{');
        for (index, (name, response)) in retry.responses.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            compact::write_str(name, &mut out);
            out.push(b':');
            compact::write(response, &mut out);
        }
        out.push(b'}');
        if let Some(state) = &retry.state {
            member(&mut out, "state");
            compact::write(state, &mut out);
        }
    }
    out.push(b'}');
    out
}

/// `,"key":`, a member after the first.
fn member(out: &mut Vec<u8>, key: &str) {
    out.push(b',');
    compact::write_str(key, out);
    out.push(b':');
}

/// An object of string members.
fn object(out: &mut Vec<u8>, members: &[(&str, &str)]) {
    out.push(b'{');
    for (index, (key, value)) in members.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        compact::write_str(key, out);
        out.push(b':');
        compact::write_str(value, out);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use bondry_core::handler::Retry;
    use serde_json::{Value, json};

    use super::*;

    fn body(request: &HandlerRequest, kind: CapabilityKind, request_id: &str, disclose_principal: bool) -> Value {
        serde_json::from_slice(&super::body(request, kind, request_id, disclose_principal)).unwrap()
    }
    use crate::testing::request;

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
