//! The bridge at its sans-IO boundary: every cell of the era matrix (a modern or a session
//! caller, a modern or a handshake upstream) with input rounds, timeouts and cancellation,
//! on a fixed clock. The test plays the driver: it feeds events and writes down, in order,
//! every action the bridge asks for.
//!
//! A caller's era shows only in how its retry comes back: a modern caller's state has been
//! through the wire (sealed, sent and returned as JSON), a session caller's stays in
//! memory while the server asks it on the call's stream.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bondry_mcp_proto::jsonrpc::Id;
use serde_json::{Map, Value, json};

use super::*;
use crate::spec::Root;

#[derive(Debug, Clone, Copy)]
enum Caller {
    Modern,
    Session,
}

#[derive(Debug, Clone, Copy)]
enum Upstream {
    Modern,
    Handshake,
}

const CELLS: [(Caller, Upstream); 4] = [
    (Caller::Modern, Upstream::Modern),
    (Caller::Modern, Upstream::Handshake),
    (Caller::Session, Upstream::Modern),
    (Caller::Session, Upstream::Handshake),
];

const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The fixed clock: milliseconds after one instant.
struct Clock(Instant);

impl Clock {
    fn at(&self, ms: u64) -> Instant {
        self.0 + Duration::from_millis(ms)
    }
}

fn spec() -> Arc<UpstreamSpec> {
    let mut spec = crate::spec::tests::example();
    spec.call_timeout = CALL_TIMEOUT;
    spec.roots = vec![Root { uri: "file:///srv".into(), name: None }];
    Arc::new(spec)
}

fn declared() -> Value {
    json!({"elicitation": {"form": {}}, "sampling": {}})
}

fn call(carried: Option<Carried>) -> Bridge {
    let params = Map::from_iter([("name".to_owned(), json!("deploy"))]);
    Bridge::new(Mode::Call, Outgoing::new("tools/call", params), carried, spec())
}

fn asked(id: i64, method: &str, params: Value) -> Asked {
    Asked { id: Id::Integer(id), method: method.into(), params: params.as_object().cloned().unwrap(), _claim: None }
}

fn elicitation(message: &str) -> Value {
    json!({"message": message, "requestedSchema": {"type": "object"}})
}

fn notice(progress: u64) -> Notice {
    Notice { method: "notifications/progress".into(), params: Map::from_iter([("progress".into(), json!(progress))]) }
}

/// Every action the bridge asks for until it waits, written down.
fn said(bridge: &mut Bridge) -> Vec<String> {
    std::iter::from_fn(|| bridge.poll()).map(|action| written(&action)).collect()
}

fn written(action: &Action) -> String {
    let id = |asked: &Asked| serde_json::to_string(&asked.id).unwrap();
    match action {
        Action::Emit(notice) => format!("emit {} {}", notice.method, Value::Object(notice.params.clone())),
        Action::Answer { asked, answer: Ok(result) } => format!("answer {} {result}", id(asked)),
        Action::Answer { asked, answer: Err((code, message)) } => format!("answer {} {code} {message}", id(asked)),
        Action::Refuse { asked, code, message } => format!("refuse {} {code} {message}", id(asked)),
        Action::Resend => "resend".into(),
        Action::Expire => "expire".into(),
        Action::Hold(requests) => {
            let asked: Vec<_> = requests.iter().map(|(key, request)| format!("{key}={}", request.params)).collect();
            format!("hold {}", asked.join(" "))
        }
        Action::GiveUp { asked, why } => {
            format!("give up {}: {why}", asked.iter().map(id).collect::<Vec<_>>().join(","))
        }
        Action::Done(Driven::Answered(Ok(result))) => format!("done {result}"),
        Action::Done(Driven::Answered(Err(why))) => format!("done {why:?}"),
        Action::Done(Driven::Asking(asking)) => {
            let keys: Vec<_> = asking.requests.keys().cloned().collect();
            format!("asking {} {}", keys.join(","), asking.state)
        }
        Action::Done(other) => format!("done {other:?}"),
    }
}

/// The state a caller's retry brings back, as its era carries it.
fn returned(caller: Caller, state: &Value) -> Value {
    match caller {
        Caller::Modern => serde_json::from_str(&state.to_string()).unwrap(),
        Caller::Session => state.clone(),
    }
}

/// The state and answers of a modern upstream's round, asked of the caller, as its retry
/// brings them back into a new call.
fn retried(caller: Caller, asking_state: &Value, answers: &[(&str, Value)]) -> Bridge {
    let responses: BTreeMap<String, Value> =
        answers.iter().map(|(key, value)| ((*key).to_owned(), value.clone())).collect();
    call(Some(Carried::of_retry(&responses, Some(&returned(caller, asking_state)))))
}

fn input_required(state: &str, key: &str, message: &str) -> Value {
    json!({"resultType": "input_required", "requestState": state,
        "inputRequests": {key: {"method": "elicitation/create", "params": elicitation(message)}}})
}

#[test]
fn a_call_asked_nothing_passes_its_progress_then_its_answer_in_every_cell() {
    for (caller, upstream) in CELLS {
        let clock = Clock(Instant::now());
        let mut bridge = call(None);
        bridge.handle_started(clock.at(0));
        assert_eq!(bridge.poll_timeout(), Some(clock.at(60_000)), "{caller:?} × {upstream:?}");
        bridge.handle_notice(notice(1));
        bridge.handle_settled(Ok(json!({"content": []})));
        assert_eq!(said(&mut bridge), [r#"emit notifications/progress {"progress":1}"#, r#"done {"content":[]}"#]);
        assert_eq!(bridge.poll_timeout(), None);
    }
}

/// Two rounds of input, then the answer: a handshake upstream's requests are held for
/// the caller's retry; a modern upstream's `input_required` is the caller's, its state
/// carried through the caller's.
#[test]
fn two_rounds_of_input_reach_the_caller_and_their_answers_the_upstream_in_every_cell() {
    for (caller, upstream) in CELLS {
        let clock = Clock(Instant::now());
        let cell = format!("{caller:?} × {upstream:?}");
        match upstream {
            Upstream::Handshake => {
                let mut bridge = call(None);
                bridge.handle_started(clock.at(0));
                for (round, at) in [(1, 1_000), (2, 5_000)] {
                    bridge.handle_asked(
                        asked(round, "elicitation/create", elicitation("which?")),
                        &declared(),
                        clock.at(at),
                    );
                    // Gathered until QUIET after the last request; nothing is asked before.
                    assert_eq!(bridge.poll_timeout(), Some(clock.at(at + 50)), "{cell}");
                    bridge.handle_timeout(clock.at(at + 49));
                    assert!(said(&mut bridge).is_empty(), "{cell}");
                    bridge.handle_timeout(clock.at(at + 50));
                    assert_eq!(said(&mut bridge), [format!("hold upstream-1={}", elicitation("which?"))], "{cell}");
                    assert_eq!(bridge.poll_timeout(), None, "the caller is asked: no deadline runs");
                    let answer = json!({"action": "accept", "content": {"round": round}});
                    let responses = BTreeMap::from([("upstream-1".to_owned(), answer.clone())]);
                    bridge.handle_resumed(Some(&responses), clock.at(at + 10_000));
                    assert_eq!(said(&mut bridge), [format!("answer {round} {answer}")], "{cell}");
                }
                bridge.handle_settled(Ok(json!({"content": [], "rounds": 2})));
                assert_eq!(said(&mut bridge), [r#"done {"content":[],"rounds":2}"#], "{cell}");
            }
            Upstream::Modern => {
                let mut bridge = call(None);
                bridge.handle_started(clock.at(0));
                bridge.handle_settled(Ok(input_required("s1", "q1", "which?")));
                let [asking] = &said(&mut bridge)[..] else { panic!("{cell}: one action") };
                assert_eq!(asking, r#"asking q1 {"upstreamState":"s1"}"#, "{cell}");

                let mut bridge =
                    retried(caller, &json!({"upstreamState": "s1"}), &[("q1", json!({"action": "accept"}))]);
                assert_eq!(bridge.outgoing().params["inputResponses"], json!({"q1": {"action": "accept"}}), "{cell}");
                assert_eq!(bridge.outgoing().params["requestState"], "s1", "{cell}");
                bridge.handle_started(clock.at(1_000));
                bridge.handle_settled(Ok(input_required("s2", "q2", "sure?")));
                assert_eq!(said(&mut bridge), [r#"asking q2 {"upstreamState":"s2"}"#], "{cell}");

                let mut bridge =
                    retried(caller, &json!({"upstreamState": "s2"}), &[("q2", json!({"action": "decline"}))]);
                assert_eq!(bridge.outgoing().params["inputResponses"], json!({"q2": {"action": "decline"}}), "{cell}");
                assert_eq!(bridge.outgoing().params["requestState"], "s2", "{cell}");
                bridge.handle_started(clock.at(2_000));
                bridge.handle_settled(Ok(json!({"content": [], "rounds": 2})));
                assert_eq!(said(&mut bridge), [r#"done {"content":[],"rounds":2}"#], "{cell}");
            }
        }
    }
}

/// The call timeout runs while the upstream works, not while the caller is asked; a held
/// call nobody comes back for is given up, answering the upstream.
#[test]
fn a_call_times_out_on_the_upstreams_time_alone_in_every_cell() {
    for (caller, upstream) in CELLS {
        let clock = Clock(Instant::now());
        let cell = format!("{caller:?} × {upstream:?}");
        let mut bridge = match upstream {
            Upstream::Handshake => {
                let mut bridge = call(None);
                bridge.handle_started(clock.at(0));
                bridge.handle_asked(
                    asked(7, "elicitation/create", elicitation("which?")),
                    &declared(),
                    clock.at(40_000),
                );
                bridge.handle_timeout(clock.at(40_050));
                assert_eq!(said(&mut bridge).len(), 1, "{cell}: held");
                // Ten minutes with the caller; 19.95 s of the call timeout are left.
                let responses = BTreeMap::from([("upstream-1".to_owned(), json!({"action": "accept"}))]);
                bridge.handle_resumed(Some(&responses), clock.at(640_050));
                said(&mut bridge);
                assert_eq!(bridge.poll_timeout(), Some(clock.at(660_000)), "{cell}");
                bridge
            }
            Upstream::Modern => {
                let mut bridge =
                    retried(caller, &json!({"upstreamState": "s1"}), &[("q1", json!({"action": "accept"}))]);
                bridge.handle_started(clock.at(600_000));
                assert_eq!(bridge.poll_timeout(), Some(clock.at(660_000)), "{cell}: a whole call timeout");
                bridge
            }
        };
        bridge.handle_timeout(clock.at(659_999));
        assert!(said(&mut bridge).is_empty(), "{cell}");
        bridge.handle_timeout(clock.at(660_000));
        assert_eq!(said(&mut bridge), ["expire"], "{cell}");
        bridge.handle_settled(Err(Unrelayed::Unavailable));
        assert_eq!(said(&mut bridge), ["done Unavailable"], "{cell}");
    }

    let clock = Clock(Instant::now());
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    bridge.handle_asked(asked(7, "sampling/createMessage", json!({"messages": []})), &declared(), clock.at(10));
    bridge.handle_timeout(clock.at(60));
    said(&mut bridge);
    bridge.handle_abandoned("the caller did not answer in time");
    assert_eq!(said(&mut bridge), ["give up 7: the caller did not answer in time"]);
}

/// A caller that goes away ends the call at once; a handshake upstream's requests not yet
/// asked are answered, not left waiting.
#[test]
fn a_caller_going_away_ends_the_call_in_every_cell() {
    for (caller, upstream) in CELLS {
        let clock = Clock(Instant::now());
        let cell = format!("{caller:?} × {upstream:?}");
        let mut bridge = match upstream {
            Upstream::Handshake => call(None),
            Upstream::Modern => {
                retried(caller, &json!({"upstreamState": "s1"}), &[("q1", json!({"action": "accept"}))])
            }
        };
        bridge.handle_started(clock.at(0));
        let expected: &[&str] = match upstream {
            Upstream::Handshake => {
                bridge.handle_asked(asked(3, "elicitation/create", elicitation("which?")), &declared(), clock.at(20));
                &["give up 3: the call ended before the caller was asked", "done Cancelled"]
            }
            Upstream::Modern => &["done Cancelled"],
        };
        bridge.handle_cancelled();
        assert_eq!(said(&mut bridge), expected, "{cell}");
        bridge.handle_settled(Ok(json!({"content": []})));
        bridge.handle_notice(notice(2));
        assert!(said(&mut bridge).is_empty(), "{cell}: an ended call stays ended");
    }
}

#[test]
fn a_handshake_upstreams_request_the_caller_may_not_get_is_refused_at_once() {
    let clock = Clock(Instant::now());
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    let url = json!({"mode": "url", "url": "https://example.com", "message": "sign in"});
    bridge.handle_asked(asked(1, "elicitation/create", url), &declared(), clock.at(1));
    bridge.handle_asked(asked(2, "elicitation/create", elicitation("m")), &json!({"sampling": {}}), clock.at(2));
    bridge.handle_asked(asked(3, "roots/list", json!({})), &declared(), clock.at(3));
    assert_eq!(
        said(&mut bridge),
        [
            "refuse 1 -32602 URL-mode elicitation is not allowed through this gateway",
            "refuse 2 -32602 the caller did not declare this client capability",
            "refuse 3 -32601 Method not found",
        ]
    );
    assert_eq!(bridge.poll_timeout(), Some(clock.at(60_000)), "nothing gathered: nobody is asked");
}

#[test]
fn an_answer_while_requests_are_gathered_ends_the_call_and_gives_them_up() {
    let clock = Clock(Instant::now());
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    bridge.handle_asked(asked(4, "elicitation/create", elicitation("a")), &declared(), clock.at(10));
    bridge.handle_asked(asked(5, "sampling/createMessage", json!({"messages": []})), &declared(), clock.at(20));
    bridge.handle_settled(Ok(json!({"content": []})));
    assert_eq!(
        said(&mut bridge),
        ["give up 4,5: the call ended before the caller was asked", r#"done {"content":[]}"#]
    );
}

#[test]
fn a_held_call_its_caller_has_no_room_for_is_given_up() {
    let clock = Clock(Instant::now());
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    bridge.handle_asked(asked(9, "elicitation/create", elicitation("a")), &declared(), clock.at(0));
    bridge.handle_timeout(clock.at(50));
    said(&mut bridge);
    bridge.handle_hold_refused();
    assert_eq!(said(&mut bridge), ["give up 9: the caller holds too many pending inputs", "done TooManyExchanges"]);
}

#[test]
fn a_retry_without_an_answer_answers_the_upstream_an_error() {
    let clock = Clock(Instant::now());
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    bridge.handle_asked(asked(1, "elicitation/create", elicitation("a")), &declared(), clock.at(0));
    bridge.handle_asked(asked(2, "elicitation/create", elicitation("b")), &declared(), clock.at(10));
    bridge.handle_timeout(clock.at(60));
    assert_eq!(said(&mut bridge), [format!("hold upstream-1={} upstream-2={}", elicitation("a"), elicitation("b"))]);
    let responses = BTreeMap::from([("upstream-2".to_owned(), json!({"action": "cancel"}))]);
    bridge.handle_resumed(Some(&responses), clock.at(1_000));
    assert_eq!(said(&mut bridge), ["answer 1 -32603 the caller gave no answer", r#"answer 2 {"action":"cancel"}"#]);
}

/// A modern upstream's roots are answered from the stanza, by a round of Bondry's own,
/// never the caller's; beside a request for the caller, they wait in its state.
#[test]
fn a_modern_upstream_asking_for_its_roots_is_answered_here_a_bounded_number_of_times() {
    let roots = json!({"roots": [{"uri": "file:///srv"}]});
    let asks_roots = json!({"resultType": "input_required", "requestState": "r",
        "inputRequests": {"roots": {"method": "roots/list"}}});
    let clock = Clock(Instant::now());
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    bridge.handle_settled(Ok(asks_roots.clone()));
    assert_eq!(said(&mut bridge), ["resend"]);
    assert_eq!(bridge.outgoing().params["inputResponses"], json!({"roots": roots}));
    assert_eq!(bridge.poll_timeout(), None, "not sent yet");
    bridge.handle_started(clock.at(30_000));
    assert_eq!(bridge.poll_timeout(), Some(clock.at(90_000)), "a round has a call timeout of its own");
    bridge.handle_settled(Ok(json!({"content": []})));
    assert_eq!(said(&mut bridge), [r#"done {"content":[]}"#]);

    let mut bridge = call(None);
    for _ in 0..ROUNDS_ANSWERED_HERE {
        bridge.handle_started(clock.at(0));
        bridge.handle_settled(Ok(asks_roots.clone()));
        assert_eq!(said(&mut bridge), ["resend"]);
    }
    bridge.handle_started(clock.at(0));
    bridge.handle_settled(Ok(asks_roots));
    assert_eq!(said(&mut bridge), ["done Unpassable(\"the upstream asks for its roots over and over\")"]);

    let mixed = json!({"resultType": "input_required", "requestState": "m", "inputRequests": {
        "roots": {"method": "roots/list"}, "q": {"method": "elicitation/create", "params": elicitation("m")}}});
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    bridge.handle_settled(Ok(mixed));
    let state = json!({"upstreamState": "m", "answeredHere": {"roots": roots}});
    assert_eq!(said(&mut bridge), [format!("asking q {state}")]);
    let bridge = retried(Caller::Modern, &state, &[("q", json!({"action": "accept"}))]);
    assert_eq!(bridge.outgoing().params["inputResponses"], json!({"q": {"action": "accept"}, "roots": roots}));
}

#[test]
fn a_completion_refuses_the_upstreams_requests_and_passes_its_answer_as_it_is() {
    let clock = Clock(Instant::now());
    let mut bridge = Bridge::new(Mode::Completion, Outgoing::new("completion/complete", Map::new()), None, spec());
    bridge.handle_started(clock.at(0));
    bridge.handle_asked(asked(1, "elicitation/create", elicitation("a")), &declared(), clock.at(0));
    bridge.handle_settled(Ok(input_required("s", "q", "m")));
    let [refused, done] = &said(&mut bridge)[..] else { panic!("two actions") };
    assert_eq!(refused, "answer 1 -32603 this request cannot ask for input");
    assert!(done.starts_with("done {") && done.contains(r#""resultType":"input_required""#), "{done}");
}

#[test]
fn an_unsent_call_or_a_refused_one_ends_as_its_connection_says() {
    let mut bridge = call(None);
    bridge.handle_unstarted(Unrelayed::Unavailable);
    assert_eq!(said(&mut bridge), ["done Unavailable"]);
    let clock = Clock(Instant::now());
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    bridge.handle_settled(Err(Unrelayed::Refused { code: -32000, message: "no".into() }));
    assert_eq!(said(&mut bridge), [r#"done Refused { code: -32000, message: "no" }"#]);
}
