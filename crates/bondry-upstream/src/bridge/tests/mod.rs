//! The bridge at its sans-IO boundary, on a fixed clock: the test plays the driver, feeds
//! events and writes down, in order, every action the bridge asks for. `matrix.rs` covers
//! every cell of the era matrix; `rules.rs` the rules one cell at a time.
//!
//! A caller's era shows only in how its retry comes back: a modern caller's state has been
//! through the wire (sealed, sent and returned as JSON), a session caller's stays in
//! memory while the server asks it on the call's stream.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bondry_mcp_proto::jsonrpc::Id;
use serde_json::{Map, Value, json};

use super::input::Carried;
use super::machine::{Action, Bridge, Driven, Mode};
use crate::client::{Asked, Notice, Outgoing};
use crate::spec::{Root, UpstreamSpec};

mod matrix;
mod rules;

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
    spec.tunables.call_timeout = CALL_TIMEOUT;
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
