//! Every cell of the era matrix (a modern or a session caller, a modern or a handshake
//! upstream) with input rounds, timeouts and cancellation.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::json;

use super::*;
use crate::upstream::Unrelayed;

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
