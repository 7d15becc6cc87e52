//! The call lifecycle at the protocol crate's boundary: a call planned by
//! [`Adapter::receive`] driven through its [`Conversation`] by hand, each step asserting
//! what is polled out. No runtime, a fixed clock, the tests' seeded random source.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bondry_core::BoxFuture;
use bondry_core::audit::AuditOutcome;
use bondry_core::capability::{Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::dispatch::Outcome;
use bondry_core::handler::{Answer, Handler, HandlerRequest, InputKind, InputRequest, Retry};
use bondry_core::policy::{Grant, Policy, Principal, PrincipalKind, Subject};
use bondry_core::realm::{Key, KeySet, RealmSnapshot};
use bondry_core::registry::{Catalogue, Registration};
use bondry_core::schema::SchemaBounds;
use bondry_mcp_proto::conversation::MAX_INPUT_ROUNDS;
use bondry_mcp_proto::jsonrpc::Id;
use bondry_mcp_proto::vocabulary::{
    CLIENT_ERROR, CLIENT_TIMEOUT, EMPTY_INPUT_REQUIRED, MISSING_CLIENT_CAPABILITY, TOO_MANY_PENDING_INPUTS,
    TOO_MANY_ROUNDS,
};
use bondry_mcp_proto::{Adapter, Conversation, Ended, Inbound, ListenerSettings, Next, Revision, Step};
use bondry_test_sans_io::{Quiet, SessionTable, TestRandom};
use http::{HeaderMap, HeaderValue, Method};
use serde_json::{Value, json};

struct Unused;

impl Handler for Unused {
    fn call(&self, _: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready(Answer::Failure { code: "unused".into(), detail: None }))
    }
}

const ANSWER_WITHIN: Duration = Duration::from_secs(30);

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_785_000_000)
}

/// The realm of these calls: the tool `t.ask`, granted to every user.
fn realm() -> Arc<RealmSnapshot> {
    let binding = Binding { kind: "builtin".into(), target: "unused".into() };
    let descriptor =
        Descriptor::new(CapabilityId::new("t.ask").unwrap(), CapabilityKind::Tool, json!({"type": "object"}), binding);
    let registration = Registration { descriptor: Arc::new(descriptor), handler: Arc::new(Unused) };
    let catalogue = Catalogue::build(1, vec![registration], &SchemaBounds::default(), &[]).unwrap();
    let keys = KeySet { active: Key { id: "k1".into(), secret: [7; 32] }, retired: Vec::new() };
    let grants = vec![Grant::parse(Subject::Role("user".into()), "t.*", "mcp").unwrap()];
    Arc::new(RealmSnapshot::new("default", catalogue, Policy::new(grants), keys))
}

fn adapter() -> Adapter {
    let settings = ListenerSettings {
        revisions: Revision::ALL.to_vec(),
        page_size: 10,
        list_ttl_ms: 1000,
        server_version: "0.0.0-test".into(),
        session_lifetime: Duration::from_secs(3600),
    };
    Adapter::new(settings).unwrap()
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    for (name, value) in pairs {
        headers.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    headers
}

/// The conversation of a `tools/call` of `t.ask` (id 7), in a session of `session` or
/// modern, from a client declaring `client_capabilities`.
fn planned(session: Option<Revision>, client_capabilities: Value) -> Conversation {
    let (adapter, realm, sessions) = (adapter(), realm(), SessionTable::default());
    let principal = Principal::new("alice", PrincipalKind::User, vec!["user".to_owned()]);
    let rng = &mut TestRandom::new(1);
    let mut call =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t.ask", "arguments": {}}});
    let headers = match session {
        Some(revision) => {
            let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": revision.as_str(), "capabilities": client_capabilities, "clientInfo": {"name": "c", "version": "1"}}});
            let body = serde_json::to_vec(&initialize).unwrap();
            let (plain, post) = (headers(&[]), Method::POST);
            let inbound = Inbound { method: &post, headers: &plain, body: &body };
            let Step::Reply(reply) = adapter.receive(inbound, &realm, &principal, &sessions, now(), rng).step else {
                panic!("initialize replies at once")
            };
            sessions.apply(reply.effect().expect("initialize opens a session"));
            let sid = reply.response().headers()["mcp-session-id"].to_str().unwrap().to_owned();
            headers(&[("mcp-session-id", &sid)])
        }
        None => {
            call["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": client_capabilities,
            });
            headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "t.ask")])
        }
    };
    let body = serde_json::to_vec(&call).unwrap();
    let inbound = Inbound { method: &Method::POST, headers: &headers, body: &body };
    match adapter.receive(inbound, &realm, &principal, &sessions, now(), rng).step {
        Step::Dispatch(call) => adapter.conversation(*call, ANSWER_WITHIN),
        other => panic!("t.ask is dispatched: {other:?}"),
    }
}

/// What the handler's next invocation is handed back: the client's answers and its state.
fn retry_of(conversation: &Conversation) -> Retry {
    let quiet = Arc::new(Quiet);
    conversation.call().handler_request(quiet.clone(), quiet.clone(), quiet).retry.expect("a retry")
}

fn elicit(message: &str) -> InputRequest {
    InputRequest { kind: InputKind::Elicitation, params: json!({"message": message}) }
}

fn needs(requests: &[(&str, InputRequest)], state: Option<Value>) -> Outcome {
    let requests = requests.iter().map(|(key, request)| ((*key).to_owned(), request.clone())).collect();
    Outcome::Answered(Answer::InputRequired { requests, state })
}

fn answered(text: &str) -> Outcome {
    Outcome::Answered(Answer::Value(json!({"text": text})))
}

fn elicitation() -> Value {
    json!({"elicitation": {}})
}

/// How the conversation ended: the reply's status and body and its record's outcome.
fn ended(conversation: Conversation) -> (u16, Value, AuditOutcome) {
    match conversation.finish(now()) {
        Ended::Replied(reply) => {
            let body = serde_json::from_slice(reply.response().body()).unwrap();
            (reply.response().status().as_u16(), body, reply.audit().unwrap().outcome)
        }
        Ended::Cancelled(record) => (0, Value::Null, record.outcome),
    }
}

/// The `_meta` error code of a tool error result.
fn tool_error_code(body: &Value) -> &str {
    assert_eq!(body["result"]["isError"], true, "{body}");
    body["result"]["_meta"]["dev.bondry/errorCode"].as_str().unwrap_or_default()
}

#[test]
fn a_session_call_asks_its_client_three_rounds_then_answers() {
    let mut conversation = planned(Some(Revision::V2025_11_25), elicitation());
    let rng = &mut TestRandom::new(100);
    for round in 0..3 {
        assert!(matches!(conversation.poll(), Next::Invoke), "round {round}");
        let question = format!("question {round}");
        conversation.handle_outcome(needs(&[("q", elicit(&question))], Some(json!(round))), now(), rng);
        let Next::Ask(questions) = conversation.poll() else { panic!("round {round} asks") };
        assert_eq!(questions.len(), 1);
        let message: Value = serde_json::from_str(&questions[0].message(&Id::String("bondry-1".into()))).unwrap();
        assert_eq!(
            message,
            json!({"jsonrpc": "2.0", "id": "bondry-1", "method": "elicitation/create", "params": {"message": question}})
        );
        // Nothing is awaited before every question went out.
        assert!(matches!(conversation.poll(), Next::Ask(_)));
        conversation.handle_asked(now());
        let Next::Wait(deadline) = conversation.poll() else { panic!("round {round} waits") };
        assert_eq!(deadline, now() + ANSWER_WITHIN);
        conversation.handle_answer("q", Ok(json!({"action": "accept", "round": round})), now(), rng);
        // The handler's next round gets the answers and its own state back.
        let retry = retry_of(&conversation);
        assert_eq!(retry.responses["q"], json!({"action": "accept", "round": round}));
        assert_eq!(retry.state, Some(json!(round)));
    }
    assert!(matches!(conversation.poll(), Next::Invoke));
    conversation.handle_outcome(answered("done"), now(), rng);
    assert!(matches!(conversation.poll(), Next::Done));
    let (status, body, outcome) = ended(conversation);
    assert_eq!((status, outcome), (200, AuditOutcome::Succeeded));
    assert_eq!(body["id"], 7);
    assert_eq!(body["result"]["structuredContent"], json!({"text": "done"}), "{body}");
}

#[test]
fn a_round_waits_for_every_answer_until_one_deadline() {
    let mut conversation = planned(Some(Revision::V2025_11_25), elicitation());
    let rng = &mut TestRandom::new(0);
    assert!(matches!(conversation.poll(), Next::Invoke));
    conversation.handle_outcome(needs(&[("a", elicit("a")), ("b", elicit("b"))], None), now(), rng);
    conversation.handle_asked(now());
    conversation.handle_answer("a", Ok(json!({})), now(), rng);
    // One answer of two: still waiting, on the same deadline.
    let Next::Wait(deadline) = conversation.poll() else { panic!("still waiting") };
    assert_eq!(deadline, now() + ANSWER_WITHIN);
    conversation.handle_timeout(deadline, rng);
    assert!(matches!(conversation.poll(), Next::Done));
    let (status, body, outcome) = ended(conversation);
    assert_eq!((status, outcome), (200, AuditOutcome::ToolError));
    assert_eq!(tool_error_code(&body), CLIENT_TIMEOUT);
}

#[test]
fn a_client_error_ends_the_call() {
    let mut conversation = planned(Some(Revision::V2025_06_18), elicitation());
    let rng = &mut TestRandom::new(0);
    assert!(matches!(conversation.poll(), Next::Invoke));
    conversation.handle_outcome(needs(&[("q", elicit("q"))], None), now(), rng);
    conversation.handle_asked(now());
    conversation.handle_answer("q", Err(json!({"code": -1, "message": "no"})), now(), rng);
    let (status, body, _) = ended(conversation);
    assert_eq!(status, 200);
    assert_eq!(tool_error_code(&body), CLIENT_ERROR);
}

#[test]
fn the_client_is_asked_eight_rounds_at_most() {
    let mut conversation = planned(Some(Revision::V2025_11_25), elicitation());
    let rng = &mut TestRandom::new(0);
    let (mut invocations, mut asked) = (0, 0);
    loop {
        match conversation.poll() {
            Next::Invoke => {
                invocations += 1;
                conversation.handle_outcome(needs(&[("q", elicit("again"))], None), now(), rng);
            }
            Next::Ask(_) => {
                asked += 1;
                conversation.handle_asked(now());
            }
            Next::Wait(_) => conversation.handle_answer("q", Ok(json!({})), now(), rng),
            Next::Done => break,
        }
        assert!(invocations <= MAX_INPUT_ROUNDS + 1, "the loop ends");
    }
    assert_eq!((invocations, asked), (MAX_INPUT_ROUNDS + 1, MAX_INPUT_ROUNDS));
    let (_, body, _) = ended(conversation);
    assert_eq!(tool_error_code(&body), TOO_MANY_ROUNDS);
}

#[test]
fn what_the_client_cannot_answer_is_never_asked() {
    let rng = &mut TestRandom::new(0);
    // Input the session's client did not declare.
    let mut undeclared = planned(Some(Revision::V2025_11_25), json!({}));
    assert!(matches!(undeclared.poll(), Next::Invoke));
    undeclared.handle_outcome(needs(&[("q", elicit("q"))], None), now(), rng);
    assert!(matches!(undeclared.poll(), Next::Done));
    assert_eq!(tool_error_code(&ended(undeclared).1), MISSING_CLIENT_CAPABILITY);
    // Neither requests nor state.
    let mut empty = planned(Some(Revision::V2025_11_25), elicitation());
    assert!(matches!(empty.poll(), Next::Invoke));
    empty.handle_outcome(needs(&[], None), now(), rng);
    let (status, body, outcome) = ended(empty);
    assert_eq!((status, outcome), (200, AuditOutcome::HandlerFailed));
    assert_eq!(body["result"]["_meta"]["dev.bondry/errorCode"], EMPTY_INPUT_REQUIRED, "{body}");
    // A session that waits for as many answers as it may, and a stream that is gone.
    for (refuse, code) in [(true, TOO_MANY_PENDING_INPUTS), (false, CLIENT_TIMEOUT)] {
        let mut conversation = planned(Some(Revision::V2025_11_25), elicitation());
        assert!(matches!(conversation.poll(), Next::Invoke));
        conversation.handle_outcome(needs(&[("q", elicit("q"))], None), now(), rng);
        if refuse {
            conversation.handle_refused(now(), rng);
        } else {
            conversation.handle_unreachable(now(), rng);
        }
        // Asked after the refusal: the call stays ended.
        conversation.handle_asked(now());
        assert!(matches!(conversation.poll(), Next::Done));
        assert_eq!(tool_error_code(&ended(conversation).1), code);
    }
}

#[test]
fn a_call_cancelled_mid_round_sends_nothing_and_is_recorded() {
    let mut conversation = planned(Some(Revision::V2025_11_25), elicitation());
    let rng = &mut TestRandom::new(0);
    assert!(matches!(conversation.poll(), Next::Invoke));
    conversation.handle_outcome(needs(&[("q", elicit("q"))], None), now(), rng);
    conversation.handle_asked(now());
    assert!(matches!(conversation.poll(), Next::Wait(_)));
    conversation.cancel(now());
    // A late answer changes nothing.
    conversation.handle_answer("q", Ok(json!({})), now(), rng);
    assert!(matches!(conversation.poll(), Next::Done));
    assert_eq!(ended(conversation), (0, Value::Null, AuditOutcome::Cancelled));
    // Finishing before the end is a cancellation too.
    let running = planned(None, json!({}));
    assert!(matches!(running.poll(), Next::Invoke));
    assert_eq!(ended(running), (0, Value::Null, AuditOutcome::Cancelled));
}

#[test]
fn a_modern_call_answers_input_required_at_once() {
    let mut conversation = planned(None, elicitation());
    let rng = &mut TestRandom::new(0);
    assert!(matches!(conversation.poll(), Next::Invoke));
    conversation.handle_outcome(needs(&[("q", elicit("which?"))], Some(json!({"step": 1}))), now(), rng);
    assert!(matches!(conversation.poll(), Next::Done), "a modern call never asks");
    let (status, body, outcome) = ended(conversation);
    assert_eq!((status, outcome), (200, AuditOutcome::InputRequired));
    let result = &body["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"],
        json!({"q": {"method": "elicitation/create", "params": {"message": "which?"}}})
    );
    assert!(result["requestState"].as_str().is_some_and(|state| !state.is_empty()), "{body}");
    // Undeclared input is the caller's refusal, as before dispatch.
    let mut undeclared = planned(None, json!({}));
    assert!(matches!(undeclared.poll(), Next::Invoke));
    undeclared.handle_outcome(needs(&[("q", elicit("which?"))], None), now(), rng);
    let (status, body, outcome) = ended(undeclared);
    assert_eq!((status, outcome), (400, AuditOutcome::InvalidInput));
    assert_eq!(body["error"]["code"], -32021, "{body}");
}
