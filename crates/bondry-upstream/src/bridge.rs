//! A relayed call driven to its end across the caller's input rounds (docs/upstreams.md),
//! whatever the era of the caller and of the upstream.
//!
//! While the upstream works on a call, its progress and log messages about the call go
//! to the caller's emitter, and its requests for input become the caller's:
//! - a modern upstream answers `input_required`: its `inputRequests` pass through, its
//!   `requestState` travels inside Bondry's state, and the retry carries the caller's
//!   answers back ([`upstream_input`], [`retried`]);
//! - a handshake upstream sends requests and waits for their answers: once one has come
//!   and then nothing for [`QUIET`], the call is held in memory under the invocation's
//!   random id ([`Exchanges`]) and the caller is asked; the retry that names the id
//!   answers the upstream and drives the call on. An exchange nobody takes up within
//!   `input_wait_ms` answers the upstream's requests -32603 and cancels the call.
//!
//! Either way the handler answers [`Answer::InputRequired`], which the core and the
//! adapter turn into the caller's era: an `input_required` result for a modern caller,
//! requests on the call's stream for a session caller.
//!
//! An upstream's request the caller did not declare the capability for is refused to the
//! upstream (-32602), and so is URL-mode elicitation unless `allow_url_elicitation`;
//! sampling goes to the caller with `includeContext: "none"`. The call timeout does not
//! run while the caller is asked.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bondry_core::backend::BackendKind;
use bondry_core::handler::{Emitter, HandlerRequest, InputKind, InputRequest, LogLevel};
use bondry_mcp_proto::error::code as rpc;
use bondry_mcp_proto::input;
use bondry_mcp_proto::jsonrpc::Id;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::client::{Asked, CALL_EVENTS, CallEvent, Connection, Notice, Outgoing, Watch, roots_result};
use crate::spec::UpstreamSpec;
use crate::upstream::{Flight, LogWish, Unrelayed, Upstream};
use crate::warnings;

/// How long a handshake upstream's requests are gathered after the last one before the
/// caller is asked.
pub const QUIET: Duration = Duration::from_millis(50);
/// Held exchanges per principal in a realm at once.
pub const EXCHANGES_PER_PRINCIPAL: usize = 8;
/// How long an answer to an upstream's request may take to be delivered.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// The state keys of a held exchange's id, of a modern upstream's own state, and of the
/// answers Bondry gave it itself.
const EXCHANGE: &str = "exchange";
const UPSTREAM_STATE: &str = "upstreamState";
const ANSWERED_HERE: &str = "answeredHere";
/// Rounds in a row a modern upstream may ask Bondry alone (for its roots) in one call.
const ROUNDS_ANSWERED_HERE: usize = 8;

/// How a driven call ended.
#[derive(Debug)]
pub enum Driven {
    /// The upstream's answer (a modern upstream's `input_required` among them), or why
    /// there is none.
    Answered(Result<Value, Unrelayed>),
    /// The caller is to be asked.
    Asking(Asking),
    /// A retry named an exchange that is not (or no longer, or not the caller's) held.
    Lost,
    /// The upstream asked for input Bondry cannot pass on, as it says.
    Unpassable(String),
    /// The caller holds as many exchanges as it may.
    TooManyExchanges,
    /// The caller went away.
    Cancelled,
}

/// What the caller is asked: `requests`, keyed; its retry carries `state` back.
#[derive(Debug)]
pub struct Asking {
    pub requests: BTreeMap<String, InputRequest>,
    pub state: Value,
}

/// A call to a handshake upstream that waits for its caller's answers.
struct Held {
    flight: Flight,
    events: mpsc::Receiver<CallEvent>,
    /// What is left of the call timeout, which does not run while the caller is asked.
    remaining: Duration,
    /// The upstream's requests the caller is asked, by the key it answers under.
    asked: Vec<(String, Asked)>,
    /// The caller's log level, wanted of the upstream while the call lives.
    _wish: Option<Arc<LogWish>>,
}

/// The exchanges of one upstream held for their callers' retries, by id.
#[derive(Default)]
pub struct Exchanges(Mutex<HashMap<String, Waiting>>);

/// A held exchange as its retry finds it: whose it is, and where to ask for the call.
struct Waiting {
    principal: String,
    /// The upstream that asked: only a call of its capabilities takes the exchange up.
    upstream: String,
    resume: oneshot::Sender<oneshot::Sender<Held>>,
}

impl Exchanges {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Sends `outgoing` for `request`'s caller, or takes up the exchange its retry names,
/// and drives the call until it is answered or the caller must be asked. A modern
/// upstream's `input_required` becomes the caller's, but for its `roots/list` requests,
/// which Bondry answers from the stanza, retrying by itself when nothing else is asked.
pub async fn drive(
    upstream: &Arc<Upstream>,
    exchanges: &Arc<Exchanges>,
    outgoing: Outgoing,
    request: &HandlerRequest,
) -> Driven {
    let state = request.retry.as_ref().and_then(|retry| retry.state.as_ref());
    if let Some(id) = state.and_then(|state| state.get(EXCHANGE)).and_then(Value::as_str) {
        // Boxed: a resumed exchange is rare, and its future would otherwise be every call's.
        return Box::pin(resume(upstream, exchanges, id, request)).await;
    }
    let mut carried = request.retry.as_ref().map(|retry| {
        let mut responses = retry.responses.clone();
        let here = state.and_then(|state| state.get(ANSWERED_HERE)).and_then(Value::as_object);
        responses.extend(here.into_iter().flatten().map(|(key, value)| (key.clone(), value.clone())));
        (responses, state.and_then(|state| state.get(UPSTREAM_STATE)).cloned())
    });
    let wants = request.emitter.wants();
    let wish = match wants.log_level {
        Some(level) => Some(Arc::new(upstream.ask_log_level(level).await)),
        None => None,
    };
    let spec = upstream.spec();
    for _ in 0..=ROUNDS_ANSWERED_HERE {
        let (events, receiver) = mpsc::channel(CALL_EVENTS);
        let watch = Watch { events, progress: wants.progress, log_level: wants.log_level.map(|l| l.as_str().into()) };
        // Only a retry's round sends anything but the request as the caller made it.
        let started = match &carried {
            None => upstream.start(&outgoing, Some(watch)),
            Some((responses, upstream_state)) => {
                let mut sent = outgoing.clone();
                retried(&mut sent, responses, upstream_state.as_ref());
                upstream.start(&sent, Some(watch))
            }
        };
        let flight = match started {
            Ok(flight) => flight,
            Err(why) => return Driven::Answered(Err(why)),
        };
        let held =
            Held { flight, events: receiver, remaining: spec.call_timeout, asked: Vec::new(), _wish: wish.clone() };
        let driven = run(upstream, exchanges, held, request).await;
        let Driven::Answered(Ok(result)) = &driven else { return driven };
        match upstream_input(result, &spec) {
            None => return driven,
            Some(Err(why)) => return Driven::Unpassable(why),
            Some(Ok(UpstreamInput { asking: Some(asking), .. })) => return Driven::Asking(asking),
            Some(Ok(UpstreamInput { asking: None, answered_here, upstream_state })) => {
                carried = Some((answered_here, upstream_state));
            }
        }
    }
    Driven::Unpassable("the upstream asks for its roots over and over".into())
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

/// A modern retry carries the answers (the caller's and Bondry's own), and the upstream's
/// own state back to it.
fn retried(outgoing: &mut Outgoing, responses: &BTreeMap<String, Value>, upstream_state: Option<&Value>) {
    let responses: Map<String, Value> = responses.iter().map(|(key, value)| (key.clone(), value.clone())).collect();
    outgoing.params.insert("inputResponses".into(), Value::Object(responses));
    if let Some(state) = upstream_state.filter(|state| !state.is_null()) {
        outgoing.params.insert("requestState".into(), state.clone());
    }
}

/// A modern upstream's `input_required`, split between what the caller is asked and
/// what Bondry answers itself (`roots/list`, from the stanza).
#[derive(Debug)]
struct UpstreamInput {
    /// The caller's requests and Bondry's state, when there is anything to ask the caller.
    asking: Option<Asking>,
    /// Bondry's answers, by the upstream's keys.
    answered_here: BTreeMap<String, Value>,
    upstream_state: Option<Value>,
}

/// A modern upstream's `input_required` result as [`UpstreamInput`]; `None` for any other
/// result, `Some(Err)` for one Bondry cannot pass on (a request of an unknown method, or
/// one [`shaped`] refuses).
fn upstream_input(result: &Value, spec: &UpstreamSpec) -> Option<Result<UpstreamInput, String>> {
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
    Some(Ok(UpstreamInput { asking, answered_here, upstream_state }))
}

/// Drives `held` until the upstream answers, asks the caller, times out or the caller
/// goes away.
async fn run(upstream: &Arc<Upstream>, exchanges: &Arc<Exchanges>, mut held: Held, request: &HandlerRequest) -> Driven {
    let began = Instant::now();
    let deadline = began + held.remaining;
    let spec = upstream.spec();
    let mut requests = BTreeMap::new();
    let mut quiet: Option<Instant> = None;
    let driven = loop {
        tokio::select! {
            answered = &mut held.flight.answer => {
                // What the upstream said before its answer reaches the caller before it; a
                // request it made meanwhile has nobody left to ask.
                while let Ok(event) = held.events.try_recv() {
                    match event {
                        CallEvent::Notice(notice) => emit(&*request.emitter, &notice),
                        CallEvent::Asked(asked) => held.asked.push((String::new(), asked)),
                    }
                }
                break Driven::Answered(upstream.settle(&held.flight, Some(answered)));
            }
            Some(event) = held.events.recv() => match event {
                CallEvent::Notice(notice) => emit(&*request.emitter, &notice),
                CallEvent::Asked(asked) => match admit(&asked, &request.client_capabilities, spec.allow_url_elicitation) {
                    Ok(input) => {
                        let key = format!("upstream-{}", held.asked.len() + 1);
                        requests.insert(key.clone(), input);
                        held.asked.push((key, asked));
                        quiet = Some(Instant::now() + QUIET);
                    }
                    Err((code, message)) => {
                        // Known by Bondry's reason alone: the method is the upstream's to choose.
                        if let Some(print) = warnings::hear(upstream.name(), "", message) {
                            tracing::info!(
                                upstream = upstream.name(),
                                method = asked.method,
                                message,
                                suppressed = print.suppressed,
                                "an upstream request refused"
                            );
                        }
                        answer_upstream(&held.flight.connection, &asked.id, Err((code, message.into()))).await;
                    }
                },
            },
            () = tokio::time::sleep_until(quiet.unwrap_or(deadline)), if quiet.is_some() => {
                held.remaining = deadline.saturating_duration_since(Instant::now());
                request.backend.record(BackendKind::UPSTREAM, upstream.name(), began.elapsed());
                return hold(upstream, exchanges, held, requests, request);
            }
            () = tokio::time::sleep_until(deadline) => break Driven::Answered(upstream.settle(&held.flight, None)),
            () = request.cancellation.cancelled() => break Driven::Cancelled,
        }
    };
    request.backend.record(BackendKind::UPSTREAM, upstream.name(), began.elapsed());
    // Requests gathered but never asked: the upstream is not left waiting on them.
    if !held.asked.is_empty() {
        tokio::spawn(give_up(held, "the call ended before the caller was asked"));
    }
    driven
}

/// Sends `outgoing`, a request that cannot ask its caller for input (a completion),
/// passing the upstream's progress and log messages about it to the caller as they
/// come; a request the upstream makes meanwhile is refused. Within the call timeout.
pub async fn relay_watched(
    upstream: &Upstream,
    outgoing: Outgoing,
    request: &HandlerRequest,
) -> Result<Value, Unrelayed> {
    let wants = request.emitter.wants();
    let _wish = match wants.log_level {
        Some(level) => Some(upstream.ask_log_level(level).await),
        None => None,
    };
    let (events, mut receiver) = mpsc::channel(CALL_EVENTS);
    let watch = Watch { events, progress: wants.progress, log_level: wants.log_level.map(|l| l.as_str().into()) };
    let mut flight = upstream.start(&outgoing, Some(watch))?;
    let deadline = tokio::time::sleep(upstream.spec().call_timeout);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            answered = &mut flight.answer => {
                while let Ok(event) = receiver.try_recv() {
                    if let CallEvent::Notice(notice) = event {
                        emit(&*request.emitter, &notice);
                    }
                }
                return upstream.settle(&flight, Some(answered));
            }
            Some(event) = receiver.recv() => match event {
                CallEvent::Notice(notice) => emit(&*request.emitter, &notice),
                CallEvent::Asked(asked) => {
                    let refusal = Err((rpc::INTERNAL_ERROR, "this request cannot ask for input".to_owned()));
                    answer_upstream(&flight.connection, &asked.id, refusal).await;
                }
            },
            () = &mut deadline => return upstream.settle(&flight, None),
        }
    }
}

/// Sends the upstream `answer` to its request `id`, within [`ANSWER_WITHIN`]: an
/// upstream that does not read what it asked for must not hold the call (or the task
/// giving it up) for ever. A failure is the upstream's to notice.
async fn answer_upstream(connection: &Connection, id: &Id, answer: Result<Value, (i64, String)>) {
    // Boxed: the upstream asks rarely, and the answer's transport future is large; unboxed
    // it would be part of every relayed call's future, copied as that future moves.
    match tokio::time::timeout(ANSWER_WITHIN, Box::pin(connection.respond(id, answer))).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::debug!(%error, "an answer to the upstream was not delivered"),
        Err(_) => tracing::debug!("an answer to the upstream was not delivered in time"),
    }
}

/// The upstream's request as the caller's, or the error the upstream is answered.
fn admit(asked: &Asked, declared: &Value, allow_url: bool) -> Result<InputRequest, (i64, &'static str)> {
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

/// Holds `held` for its caller's retry, or refuses when the caller holds enough already.
fn hold(
    upstream: &Arc<Upstream>,
    exchanges: &Arc<Exchanges>,
    held: Held,
    requests: BTreeMap<String, InputRequest>,
    request: &HandlerRequest,
) -> Driven {
    let principal = request.principal.id().to_owned();
    let id = request.invocation.as_str().to_owned();
    let (resume, resumed) = oneshot::channel();
    {
        let mut table = exchanges.table();
        if table.values().filter(|waiting| waiting.principal == principal).count() >= EXCHANGES_PER_PRINCIPAL {
            drop(table);
            tokio::spawn(give_up(held, "the caller holds too many pending inputs"));
            return Driven::TooManyExchanges;
        }
        table.insert(id.clone(), Waiting { principal, upstream: upstream.name().to_owned(), resume });
    }
    let wait = upstream.spec().input_wait;
    tokio::spawn(wait_for_retry(Arc::clone(exchanges), id.clone(), held, resumed, wait));
    Driven::Asking(Asking { requests, state: json!({ EXCHANGE: id }) })
}

/// Keeps a held call until its retry asks for it, or gives up after `wait`.
async fn wait_for_retry(
    exchanges: Arc<Exchanges>,
    id: String,
    held: Held,
    resumed: oneshot::Receiver<oneshot::Sender<Held>>,
    wait: Duration,
) {
    match tokio::time::timeout(wait, resumed).await {
        Ok(Ok(hand_over)) => {
            if let Err(held) = hand_over.send(held) {
                give_up(held, "the caller went away").await;
            }
        }
        _ => {
            exchanges.table().remove(&id);
            give_up(held, "the caller did not answer in time").await;
        }
    }
}

/// Answers every request the upstream still waits on with -32603; dropping the call
/// then cancels it upstream.
async fn give_up(held: Held, why: &'static str) {
    for (_, asked) in &held.asked {
        answer_upstream(&held.flight.connection, &asked.id, Err((rpc::INTERNAL_ERROR, why.into()))).await;
    }
}

/// Takes up the exchange `id` for the caller's retry: the upstream gets the caller's
/// answers, and the call is driven on.
async fn resume(upstream: &Arc<Upstream>, exchanges: &Arc<Exchanges>, id: &str, request: &HandlerRequest) -> Driven {
    let waiting = {
        let mut table = exchanges.table();
        // Only its own caller takes an exchange up, once.
        match table.get(id) {
            Some(waiting) if waiting.principal == request.principal.id() && waiting.upstream == upstream.name() => {
                table.remove(id)
            }
            _ => None,
        }
    };
    let Some(waiting) = waiting else { return Driven::Lost };
    let (hand_over, handed) = oneshot::channel();
    if waiting.resume.send(hand_over).is_err() {
        return Driven::Lost;
    }
    let Ok(mut held) = handed.await else { return Driven::Lost };
    let responses = request.retry.as_ref().map(|retry| &retry.responses);
    for (key, asked) in std::mem::take(&mut held.asked) {
        let answer = responses
            .and_then(|responses| responses.get(&key))
            .cloned()
            .ok_or((rpc::INTERNAL_ERROR, "the caller gave no answer".to_owned()));
        answer_upstream(&held.flight.connection, &asked.id, answer).await;
    }
    run(upstream, exchanges, held, request).await
}

/// Hands an upstream's progress or log message about the call to the caller's emitter,
/// which sends only what the caller asked for.
fn emit(emitter: &dyn Emitter, notice: &Notice) {
    let params = &notice.params;
    match notice.method.as_str() {
        "notifications/progress" => {
            if let Some(progress) = params.get("progress").and_then(Value::as_f64) {
                let total = params.get("total").and_then(Value::as_f64);
                let message = params.get("message").and_then(Value::as_str).map(str::to_owned);
                emitter.progress(progress, total, message);
            }
        }
        "notifications/message" => {
            if let Some(level) = params.get("level").and_then(Value::as_str).and_then(LogLevel::parse) {
                let logger = params.get("logger").and_then(Value::as_str).map(str::to_owned);
                emitter.log(level, logger, params.get("data").cloned().unwrap_or(Value::Null));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(method: &str, params: Value) -> Asked {
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
        assert_eq!(input.answered_here, BTreeMap::from([("r".to_owned(), roots.clone())]));
        assert_eq!(input.upstream_state, Some(json!("s1")));
        let mixed = json!({"resultType": "input_required", "requestState": "s2", "inputRequests": {
            "r": {"method": "roots/list"}, "q": {"method": "elicitation/create", "params": {"message": "m"}}}});
        let Some(Ok(input)) = upstream_input(&mixed, &spec) else { panic!("passed on") };
        let asking = input.asking.expect("the caller is asked");
        assert_eq!(asking.requests.keys().collect::<Vec<_>>(), ["q"]);
        assert_eq!(asking.state, json!({UPSTREAM_STATE: "s2", ANSWERED_HERE: {"r": roots}}));

        let mut outgoing = Outgoing::new("tools/call", Map::new());
        retried(&mut outgoing, &BTreeMap::from([("q".to_owned(), json!({"ok": 1}))]), Some(&json!("opaque")));
        assert_eq!(outgoing.params["inputResponses"], json!({"q": {"ok": 1}}));
        assert_eq!(outgoing.params["requestState"], "opaque");
    }
}

#[cfg(test)]
mod offered_tests {
    use super::*;

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
