//! The bridge's rules one at a time: refusals, give-ups, roots answered here, completions.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Map, json};

use super::*;
use crate::bridge::machine::ROUNDS_ANSWERED_HERE;
use crate::upstream::Unrelayed;

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

/// A round Bondry answers itself ends the round before it: what that round gathered is
/// answered, never asked of the caller in the next one.
#[test]
fn a_roots_round_gives_up_what_the_round_before_gathered() {
    let asks_roots = json!({"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}});
    let clock = Clock(Instant::now());
    let mut bridge = call(None);
    bridge.handle_started(clock.at(0));
    bridge.handle_asked(asked(4, "elicitation/create", elicitation("a")), &declared(), clock.at(10));
    bridge.handle_settled(Ok(asks_roots));
    assert_eq!(said(&mut bridge), ["give up 4: the call ended before the caller was asked", "resend"]);
    bridge.handle_started(clock.at(20));
    assert_eq!(bridge.poll_timeout(), Some(clock.at(60_020)), "nothing gathered: only the round's deadline");
    bridge.handle_timeout(clock.at(60));
    assert!(said(&mut bridge).is_empty(), "nobody is asked");
    bridge.handle_asked(asked(5, "elicitation/create", elicitation("b")), &declared(), clock.at(100));
    bridge.handle_timeout(clock.at(150));
    assert_eq!(said(&mut bridge), [format!("hold upstream-1={}", elicitation("b"))], "its own requests, numbered anew");
}

/// A request read with the upstream's answer has nobody left to ask: it is given up with
/// the call, not refused or asked, whatever it is.
#[test]
fn a_request_read_with_the_answer_is_given_up_with_the_call() {
    let clock = Clock(Instant::now());
    for mode in [Mode::Call, Mode::Completion] {
        let mut bridge = Bridge::new(mode, Outgoing::new("tools/call", Map::new()), None, spec());
        bridge.handle_started(clock.at(0));
        bridge.handle_unasked(asked(6, "roots/list", json!({})));
        bridge.handle_unasked(asked(7, "elicitation/create", elicitation("late")));
        bridge.handle_settled(Ok(json!({"content": []})));
        let expected = ["give up 6,7: the call ended before the caller was asked", r#"done {"content":[]}"#];
        assert_eq!(said(&mut bridge), expected, "{mode:?}");
    }
}
