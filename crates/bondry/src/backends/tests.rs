//! A kind of backend that exists only here proves the family's shape: a new kind needs
//! core's interface and one [`Kind`] entry, nothing else. Its one tool is called through
//! the core's dispatch and run as a task whose handle is read, fed and cancelled.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bondry_core::BoxFuture;
use bondry_core::backend::{BackendKind, BackendStatus, Backends, EntryState, Listed, Plan, WrongKind, counted};
use bondry_core::capability::{Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::dispatch::{self, Outcome};
use bondry_core::handler::{
    Answer, BackendTask, Handler, HandlerRequest, InputKind, InputRequest, InvocationId, Started, TaskRefused,
    TaskState,
};
use bondry_core::policy::Principal;
use bondry_core::realm::RealmEvents;
use bondry_core::registry::Registration;
use bondry_test_support::sans_io::Quiet;
use serde_json::{Value, json};

use super::*;
use crate::assemble::{Overrides, assemble};
use crate::builtins::Builtins;
use crate::config::{EMBEDDED_DEFAULT, parse};

const ECHO: BackendKind = BackendKind::new("echo");

/// The whole kind: its plan names nothing, its start offers one tool.
const ECHO_KIND: Kind = Kind {
    kind: ECHO,
    plan: |_, _, _| Some(Plan::new(ECHO, ())),
    start: |Start { events, plan, .. }| {
        plan.take::<()>(ECHO)?;
        let descriptor = Descriptor::new(
            CapabilityId::new("echo.later").expect("a valid id"),
            CapabilityKind::Tool,
            json!({"type": "object"}),
            Binding { kind: ECHO.as_str().into(), target: "echo".into() },
        );
        let registration = Registration { descriptor: Arc::new(descriptor), handler: Arc::new(Echo) };
        assert!(events.offer("echo", vec![registration]).is_empty());
        Ok(Arc::new(EchoBackends))
    },
    prefixes: |_| vec!["echo".to_owned()],
    report: |_, _| Vec::new(),
    warnings: |_, _| Vec::new(),
    bind: None,
};

struct EchoBackends;

impl Backends for EchoBackends {
    fn kind(&self) -> BackendKind {
        ECHO
    }

    fn statuses(&self) -> Vec<BackendStatus> {
        let capabilities = counted(&self.catalogue(), "echo");
        vec![BackendStatus {
            kind: ECHO,
            name: "echo".into(),
            state: "serving",
            capabilities,
            restarts: 0,
            detail: json!({}),
        }]
    }

    fn catalogue(&self) -> Vec<Listed> {
        let (key, id) = ("later".to_owned(), Some("echo.later".to_owned()));
        vec![Listed { backend: "echo".into(), kind: "tool", key, id, state: EntryState::Served, why: None, hash: None }]
    }

    fn reconfigure(&self, plan: Plan) -> Result<(), WrongKind> {
        plan.take::<()>(ECHO)
    }

    fn stop(&self, _: Duration) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// Answers with its arguments; as a task, asks for a word first.
struct Echo;

impl Handler for Echo {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready(Answer::Value(request.arguments)))
    }

    fn start_task(&self, request: HandlerRequest) -> BoxFuture<'static, Started> {
        let task = EchoTask { arguments: request.arguments, state: Mutex::new(Stage::Asking) };
        Box::pin(std::future::ready(Started::Task(Box::new(task))))
    }
}

struct EchoTask {
    arguments: Value,
    state: Mutex<Stage>,
}

#[derive(Clone)]
enum Stage {
    Asking,
    Answered(Value),
    Cancelled,
}

impl BackendTask for EchoTask {
    fn get(&self) -> BoxFuture<'_, TaskState> {
        let state = match self.state.lock().unwrap().clone() {
            Stage::Asking => {
                let word = InputRequest { kind: InputKind::Elicitation, params: json!({"message": "a word?"}) };
                TaskState::InputRequired { requests: BTreeMap::from([("word".to_owned(), word)]) }
            }
            Stage::Answered(word) => TaskState::Finished(Answer::Value(json!({"echo": self.arguments, "word": word}))),
            Stage::Cancelled => TaskState::Cancelled,
        };
        Box::pin(std::future::ready(state))
    }

    fn update(&self, mut responses: BTreeMap<String, Value>) -> BoxFuture<'_, Result<(), TaskRefused>> {
        let mut state = self.state.lock().unwrap();
        let updated = match (&*state, responses.remove("word")) {
            (Stage::Asking, Some(word)) => {
                *state = Stage::Answered(word);
                Ok(())
            }
            (Stage::Asking, None) | (Stage::Answered(_), _) => Err(TaskRefused::NotWaiting),
            (Stage::Cancelled, _) => Err(TaskRefused::Ended),
        };
        Box::pin(std::future::ready(updated))
    }

    fn cancel(&self) -> BoxFuture<'_, ()> {
        let mut state = self.state.lock().unwrap();
        if matches!(*state, Stage::Asking) {
            *state = Stage::Cancelled;
        }
        Box::pin(std::future::ready(()))
    }
}

fn request(capability: &CapabilityId, arguments: Value) -> HandlerRequest {
    HandlerRequest {
        capability: capability.clone(),
        output: None,
        arguments,
        uri: None,
        realm: "default".into(),
        principal: Principal::anonymous(Vec::new()),
        invocation: InvocationId::from_random([7; 16]),
        trace: Default::default(),
        client_capabilities: json!({}),
        cancellation: Arc::new(Quiet),
        emitter: Arc::new(Quiet),
        publisher: Arc::new(Quiet),
        retry: None,
        backend: Arc::default(),
    }
}

#[tokio::test]
async fn a_new_kind_needs_the_interface_and_one_entry() {
    let loaded = parse("t.toml", EMBEDDED_DEFAULT, ".".into(), std::iter::empty()).unwrap();
    let mut assembled = assemble(&loaded, &Builtins::demo(), &Overrides::default(), false).unwrap();
    let registry = Arc::clone(&assembled.server.realms["default"].registry);
    let mut plans = assembled.backends.remove("default").unwrap();
    plans.push(Plan::new(ECHO, ()));
    let kinds = [KINDS[0], KINDS[1], KINDS[2], KINDS[3], ECHO_KIND];
    let shared = Shared { pins: Arc::new(bondry_upstream::pins::MemoryStore::default()) };
    let backends = start(&kinds, "default", &registry, plans, &shared).unwrap();

    let kinds_started: Vec<&str> = backends.iter().map(|backends| backends.kind().as_str()).collect();
    assert_eq!(kinds_started, ["builtin", "http", "openapi", "upstream", "echo"]);
    let statuses: Vec<Value> = backends.iter().flat_map(|backends| backends.statuses()).map(|s| json!(s)).collect();
    assert_eq!(
        statuses.last().unwrap(),
        &json!({"kind": "echo", "name": "echo", "state": "serving",
                "capabilities": {"served": 1, "withheld": 0, "refused": 0}, "detail": {}})
    );
    let builtins: Vec<Value> = backends[0].catalogue().iter().map(|listed| json!(listed)).collect();
    assert!(
        builtins.contains(
            &json!({"backend": "demo.echo", "kind": "tool", "key": "demo.echo", "id": "demo.echo", "state": "served"})
        ),
        "{builtins:?}"
    );

    // Served, resolved and dispatched like every capability.
    let snapshot = RealmEvents::new(Arc::clone(&registry)).snapshot();
    let id = CapabilityId::new("echo.later").unwrap();
    let capability = snapshot.catalogue.iter().find(|entry| entry.id() == &id).expect("the echo tool is served");
    assert_eq!(capability.descriptor.binding.kind, "echo");
    match dispatch::invoke(capability, request(&id, json!({"say": "hi"}))).await {
        Outcome::Answered(Answer::Value(value)) => assert_eq!(value, json!({"say": "hi"})),
        other => panic!("not answered: {other:?}"),
    }

    // As a task: asked for input, fed, finished; another cancelled.
    let Ok(task) = dispatch::start_task(capability, request(&id, json!({"say": "hi"}))).await else {
        panic!("not a task")
    };
    assert!(matches!(task.get().await, TaskState::InputRequired { requests } if requests.contains_key("word")));
    assert_eq!(task.update(BTreeMap::new()).await, Err(TaskRefused::NotWaiting));
    task.update(BTreeMap::from([("word".to_owned(), json!("yes"))])).await.unwrap();
    match task.get().await {
        TaskState::Finished(Answer::Value(value)) => assert_eq!(value, json!({"echo": {"say": "hi"}, "word": "yes"})),
        other => panic!("not finished: {other:?}"),
    }
    let Ok(other) = dispatch::start_task(capability, request(&id, json!({}))).await else { panic!("not a task") };
    let refused = dispatch::start_task(capability, request(&id, json!("not an object"))).await;
    assert!(matches!(refused, Err(Outcome::InvalidInput(_))), "validated before the handler starts it");
    other.cancel().await;
    assert!(matches!(other.get().await, TaskState::Cancelled));
    assert_eq!(other.update(BTreeMap::from([("word".to_owned(), json!("late"))])).await, Err(TaskRefused::Ended));

    // A plan reaches only its own kind.
    let echo = backends.last().unwrap();
    assert_eq!(echo.reconfigure(Plan::new(BackendKind::UPSTREAM, ())).unwrap_err(), WrongKind(BackendKind::UPSTREAM));
    stop(vec![backends], Duration::from_secs(1)).await;
}
