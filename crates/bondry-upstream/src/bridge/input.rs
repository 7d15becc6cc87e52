//! What passes between a caller and an upstream's requests for input: which of the
//! upstream's requests reach the caller and how they are shaped, what a modern upstream's
//! `input_required` asks of whom, and what a modern retry round carries back.

use std::collections::BTreeMap;

use bondry_core::handler::{InputKind, InputRequest};
use bondry_mcp_proto::error::code as rpc;
use bondry_mcp_proto::input;
use serde_json::{Map, Value, json};

use crate::client::{Asked, Outgoing, roots_result};
use crate::spec::UpstreamSpec;

/// The state keys of a modern upstream's own state and of the answers Bondry gave it itself.
pub(super) const UPSTREAM_STATE: &str = "upstreamState";
pub(super) const ANSWERED_HERE: &str = "answeredHere";

/// What the caller is asked: `requests`, keyed; its retry carries `state` back.
#[derive(Debug)]
pub struct Asking {
    pub requests: BTreeMap<String, InputRequest>,
    pub state: Value,
}

/// The caller's client capabilities as a modern upstream is told them: `roots` Bondry's
/// own (it answers them from the stanza, never with the caller's), and elicitation's URL
/// mode only where the stanza allows it.
pub fn offered(caller: &Value, spec: &UpstreamSpec) -> Value {
    let mut offered = caller.as_object().cloned().unwrap_or_default();
    offered.insert("roots".into(), json!({}));
    if !spec.allow_url_elicitation
        && let Some(Value::Object(elicitation)) = offered.get_mut("elicitation")
        && elicitation.remove("url").is_some()
        && elicitation.is_empty()
    {
        // URL mode alone was declared: an empty object would declare form mode instead.
        offered.remove("elicitation");
    }
    Value::Object(offered)
}

/// What a modern retry round carries: the answers (the caller's and Bondry's own) and the
/// upstream's own state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Carried {
    pub responses: BTreeMap<String, Value>,
    pub upstream_state: Option<Value>,
}

impl Carried {
    /// What a caller's retry carries: its answers, Bondry's own answers and the upstream's
    /// state, both kept in Bondry's `state`.
    pub fn of_retry(responses: &BTreeMap<String, Value>, state: Option<&Value>) -> Self {
        let mut responses = responses.clone();
        let here = state.and_then(|state| state.get(ANSWERED_HERE)).and_then(Value::as_object);
        responses.extend(here.into_iter().flatten().map(|(key, value)| (key.clone(), value.clone())));
        Self { responses, upstream_state: state.and_then(|state| state.get(UPSTREAM_STATE)).cloned() }
    }

    /// Writes the round into `outgoing`, replacing what an earlier round wrote.
    pub fn write(self, outgoing: &mut Outgoing) {
        outgoing.params.insert("inputResponses".into(), Value::Object(self.responses.into_iter().collect()));
        match self.upstream_state.filter(|state| !state.is_null()) {
            Some(state) => outgoing.params.insert("requestState".into(), state),
            None => outgoing.params.remove("requestState"),
        };
    }
}

/// A modern upstream's `input_required`, split between what the caller is asked and
/// what Bondry answers itself (`roots/list`, from the stanza).
#[derive(Debug)]
pub(super) struct UpstreamInput {
    /// The caller's requests and Bondry's state, when there is anything to ask the caller.
    pub asking: Option<Asking>,
    /// Bondry's answers and the upstream's state, for a round that asks nobody.
    pub carried: Carried,
}

/// A modern upstream's `input_required` result as [`UpstreamInput`]; `None` for any other
/// result, `Some(Err)` for one Bondry cannot pass on (a request of an unknown method, or
/// one [`shaped`] refuses).
pub(super) fn upstream_input(result: &Value, spec: &UpstreamSpec) -> Option<Result<UpstreamInput, String>> {
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return None;
    }
    let Some(asked) = result.get("inputRequests").and_then(Value::as_object) else {
        return Some(Err("an input_required result without inputRequests".into()));
    };
    let mut requests = BTreeMap::new();
    let mut answered_here = BTreeMap::new();
    for (key, asked) in asked {
        let method = asked.get("method").and_then(Value::as_str).unwrap_or_default();
        let Some(kind) = input::kind(method) else {
            return Some(Err(format!("an input request of method {method:?}")));
        };
        if kind == InputKind::Roots {
            // Never the caller's roots: one caller's must not reach an upstream shared by all.
            answered_here.insert(key.clone(), roots_result(&spec.roots));
            continue;
        }
        let params = asked.get("params").and_then(Value::as_object).cloned().unwrap_or_default();
        match shaped(kind, params, spec.allow_url_elicitation) {
            Ok(params) => requests.insert(key.clone(), InputRequest { kind, params: Value::Object(params) }),
            Err((_, why)) => return Some(Err(why.into())),
        };
    }
    let upstream_state = result.get("requestState").cloned();
    let asking = (!requests.is_empty()).then(|| {
        let mut state = Map::from_iter([(UPSTREAM_STATE.to_owned(), upstream_state.clone().unwrap_or(Value::Null))]);
        if !answered_here.is_empty() {
            let here = answered_here.iter().map(|(key, value)| (key.clone(), value.clone())).collect();
            state.insert(ANSWERED_HERE.into(), Value::Object(here));
        }
        Asking { requests, state: Value::Object(state) }
    });
    Some(Ok(UpstreamInput { asking, carried: Carried { responses: answered_here, upstream_state } }))
}

/// A handshake upstream's request as the caller's, or the error the upstream is answered.
pub(super) fn admit(asked: &Asked, declared: &Value, allow_url: bool) -> Result<InputRequest, (i64, &'static str)> {
    // The client answers `roots/list` itself before a call could see it; refused here
    // all the same, since no caller's roots may ever reach an upstream.
    let kind = input::kind(&asked.method)
        .filter(|kind| *kind != InputKind::Roots)
        .ok_or((rpc::METHOD_NOT_FOUND, "Method not found"))?;
    let params = shaped(kind, asked.params.clone(), allow_url)?;
    let request = InputRequest { kind, params: Value::Object(params) };
    if !input::declared(&request, declared) {
        return Err((rpc::INVALID_PARAMS, "the caller did not declare this client capability"));
    }
    Ok(request)
}

/// An upstream's request parameters as the caller is asked them: sampling never with
/// context from other servers (a shared connection must not carry one caller's context to
/// another), URL-mode elicitation only where the stanza allows it.
fn shaped(
    kind: InputKind,
    mut params: Map<String, Value>,
    allow_url: bool,
) -> Result<Map<String, Value>, (i64, &'static str)> {
    // The upstream's request metadata is about its side of the exchange.
    params.remove("_meta");
    match kind {
        InputKind::Elicitation if params.get("mode").and_then(Value::as_str) == Some("url") && !allow_url => {
            Err((rpc::INVALID_PARAMS, "URL-mode elicitation is not allowed through this gateway"))
        }
        InputKind::Sampling => {
            params.insert("includeContext".into(), json!("none"));
            Ok(params)
        }
        _ => Ok(params),
    }
}

#[cfg(test)]
mod tests {
    use bondry_mcp_proto::jsonrpc::Id;

    use super::*;

    pub(crate) fn asked(method: &str, params: Value) -> Asked {
        Asked { id: Id::Integer(1), method: method.into(), params: params.as_object().cloned().unwrap(), _claim: None }
    }

    #[test]
    fn an_upstream_request_reaches_the_caller_only_as_the_gateway_allows() {
        let both = json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}});
        let sampling =
            asked("sampling/createMessage", json!({"messages": [], "includeContext": "allServers", "_meta": {"k": 1}}));
        let request = admit(&sampling, &both, false).unwrap();
        assert_eq!(request.kind, InputKind::Sampling);
        assert_eq!(request.params, json!({"messages": [], "includeContext": "none"}), "no other server's context");

        let url = asked("elicitation/create", json!({"mode": "url", "url": "https://example.com", "message": "m"}));
        assert_eq!(admit(&url, &both, false).unwrap_err().0, rpc::INVALID_PARAMS, "not allowed by the stanza");
        assert_eq!(admit(&url, &both, true).unwrap().kind, InputKind::Elicitation);
        let form = asked("elicitation/create", json!({"message": "m", "requestedSchema": {"type": "object"}}));
        assert_eq!(admit(&form, &json!({"sampling": {}}), true).unwrap_err().0, rpc::INVALID_PARAMS, "undeclared");
        assert_eq!(admit(&asked("roots/list", json!({})), &both, true).unwrap_err().0, rpc::METHOD_NOT_FOUND);
        assert_eq!(admit(&asked("tools/call", json!({})), &both, true).unwrap_err().0, rpc::METHOD_NOT_FOUND);
    }

    #[test]
    fn a_modern_upstreams_input_required_becomes_the_callers_but_for_its_roots() {
        let mut spec = crate::spec::tests::example();
        spec.roots = vec![crate::spec::Root { uri: "file:///srv".into(), name: None }];
        let result = json!({"resultType": "input_required", "requestState": "opaque",
            "inputRequests": {"q": {"method": "sampling/createMessage", "params": {"messages": []}}}});
        let Some(Ok(input)) = upstream_input(&result, &spec) else { panic!("passed on") };
        let asking = input.asking.expect("the caller is asked");
        assert_eq!(asking.requests["q"].params, json!({"messages": [], "includeContext": "none"}));
        assert_eq!(asking.state, json!({UPSTREAM_STATE: "opaque"}));
        assert!(upstream_input(&json!({"resultType": "complete"}), &spec).is_none());
        let unknown = json!({"resultType": "input_required", "inputRequests": {"q": {"method": "x/y"}}});
        assert!(matches!(upstream_input(&unknown, &spec), Some(Err(_))));

        // Roots are answered from the stanza: alone, nobody is asked; beside another
        // request, Bondry's answer waits in the state for the caller's.
        let roots = json!({"roots": [{"uri": "file:///srv"}]});
        let alone = json!({"resultType": "input_required", "requestState": "s1",
            "inputRequests": {"r": {"method": "roots/list"}}});
        let Some(Ok(input)) = upstream_input(&alone, &spec) else { panic!("answered here") };
        assert!(input.asking.is_none());
        let carried =
            Carried { responses: BTreeMap::from([("r".to_owned(), roots.clone())]), upstream_state: Some(json!("s1")) };
        assert_eq!(input.carried, carried);
        let mixed = json!({"resultType": "input_required", "requestState": "s2", "inputRequests": {
            "r": {"method": "roots/list"}, "q": {"method": "elicitation/create", "params": {"message": "m"}}}});
        let Some(Ok(input)) = upstream_input(&mixed, &spec) else { panic!("passed on") };
        let asking = input.asking.expect("the caller is asked");
        assert_eq!(asking.requests.keys().collect::<Vec<_>>(), ["q"]);
        assert_eq!(asking.state, json!({UPSTREAM_STATE: "s2", ANSWERED_HERE: {"r": roots}}));
    }

    #[test]
    fn a_round_carries_the_answers_and_the_upstreams_state_and_nothing_of_the_round_before() {
        let mut outgoing = Outgoing::new("tools/call", Map::new());
        let state = json!({UPSTREAM_STATE: "opaque", ANSWERED_HERE: {"r": {"roots": []}}});
        let carried = Carried::of_retry(&BTreeMap::from([("q".to_owned(), json!({"ok": 1}))]), Some(&state));
        carried.write(&mut outgoing);
        assert_eq!(outgoing.params["inputResponses"], json!({"q": {"ok": 1}, "r": {"roots": []}}));
        assert_eq!(outgoing.params["requestState"], "opaque");
        Carried { responses: BTreeMap::new(), upstream_state: Some(Value::Null) }.write(&mut outgoing);
        assert_eq!(Value::Object(outgoing.params), json!({"inputResponses": {}}), "no state left from before");
    }

    #[test]
    fn a_modern_upstream_is_told_the_callers_capabilities_but_its_roots_are_bondrys() {
        let mut spec = crate::spec::tests::example();
        let caller = json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {"form": {}, "url": {}}});
        assert_eq!(offered(&caller, &spec), json!({"roots": {}, "sampling": {}, "elicitation": {"form": {}}}));
        assert_eq!(offered(&json!({"elicitation": {"url": {}}}), &spec), json!({"roots": {}}), "not form mode instead");
        spec.allow_url_elicitation = true;
        let allowed = json!({"roots": {}, "sampling": {}, "elicitation": {"form": {}, "url": {}}});
        assert_eq!(offered(&caller, &spec), allowed);
    }
}
