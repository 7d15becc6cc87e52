//! A relayed call driven to its end across the caller's input rounds (docs/upstreams.md),
//! whatever the era of the caller and of the upstream.
//!
//! While the upstream works on a call, its progress and log messages about the call go
//! to the caller's emitter, and its requests for input become the caller's:
//! - a modern upstream answers `input_required`: its `inputRequests` pass through, its
//!   `requestState` travels inside Bondry's state, and the retry carries the caller's
//!   answers back (`input.rs`);
//! - a handshake upstream sends requests and waits for their answers: once one has come
//!   and then nothing for [`machine::QUIET`], the call is held in memory under the invocation's
//!   random id ([`Exchanges`]) and the caller is asked; the retry that names the id
//!   answers the upstream and drives the call on. An exchange nobody takes up within
//!   `input_wait_ms` answers the upstream's requests -32603 and cancels the call.
//!
//! Either way the handler answers `Answer::InputRequired`, which the core and the
//! adapter turn into the caller's era: an `input_required` result for a modern caller,
//! requests on the call's stream for a session caller.
//!
//! Those rules live in one sans-IO state machine, [`machine::Bridge`], tested at its
//! boundary with a fixed clock; this module is the short loop that drives it with the
//! upstream's connection, the caller's emitter and cancellation, and tokio's timers.
//!
//! An upstream's request the caller did not declare the capability for is refused to the
//! upstream (-32602), and so is URL-mode elicitation unless `allow_url_elicitation`;
//! sampling goes to the caller with `includeContext: "none"`. The call timeout does not
//! run while the caller is asked.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bondry_core::backend::BackendKind;
use bondry_core::handler::{Emitter, HandlerRequest, InputRequest, LogLevel};
use bondry_mcp_proto::error::code as rpc;
use bondry_mcp_proto::jsonrpc::Id;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::client::{Asked, CALL_EVENTS, CallEvent, Connection, Notice, Outgoing, Watch};
use crate::upstream::{Flight, LogWish, Unrelayed, Upstream};
use crate::warnings;

mod exchanges;
mod input;
mod machine;
#[cfg(test)]
mod tests;

pub use exchanges::Exchanges;
pub use input::{Asking, offered};
pub use machine::Driven;

use exchanges::{EXCHANGE, held_or_over, resume};
use input::Carried;
use machine::{Action, Bridge, Mode};

/// How long an answer to an upstream's request may take to be delivered.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// A call on its way, with its bridge: what a held exchange keeps for its caller's retry.
pub(super) struct Held {
    bridge: Bridge,
    flight: Flight,
    events: mpsc::Receiver<CallEvent>,
    /// The caller's log level, wanted of the upstream while the call lives.
    _wish: Option<Arc<LogWish>>,
}

/// How a run of a call ended: over, or held for its caller's retry.
pub(super) enum Ran {
    Over(Driven),
    /// Boxed: a held call is rare, and every run's answer would otherwise be its size.
    Hold(Box<Held>, BTreeMap<String, InputRequest>),
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
    let carried = request.retry.as_ref().map(|retry| Carried::of_retry(&retry.responses, state));
    let wish = match request.emitter.wants().log_level {
        Some(level) => Some(Arc::new(upstream.ask_log_level(level).await)),
        None => None,
    };
    let mut bridge = Bridge::new(Mode::Call, outgoing, carried, upstream.spec());
    let held = match start(upstream, &mut bridge, request) {
        Ok((flight, events)) => Held { bridge, flight, events, _wish: wish },
        Err(why) => return Driven::Answered(Err(why)),
    };
    let ran = run_timed(upstream, held, request).await;
    held_or_over(upstream, exchanges, ran, request)
}

/// Sends `outgoing`, a request that cannot ask its caller for input (a completion),
/// passing the upstream's progress and log messages about it to the caller as they
/// come; a request the upstream makes meanwhile is refused. Within the call timeout.
pub async fn relay_watched(
    upstream: &Upstream,
    outgoing: Outgoing,
    request: &HandlerRequest,
) -> Result<Value, Unrelayed> {
    let wish = match request.emitter.wants().log_level {
        Some(level) => Some(Arc::new(upstream.ask_log_level(level).await)),
        None => None,
    };
    let mut bridge = Bridge::new(Mode::Completion, outgoing, None, upstream.spec());
    let (flight, events) = start(upstream, &mut bridge, request)?;
    match run(upstream, Held { bridge, flight, events, _wish: wish }, request).await {
        Ran::Over(Driven::Answered(answered)) => answered,
        // A completion is never held: the caller went away.
        Ran::Over(_) | Ran::Hold(..) => Err(Unrelayed::Unavailable),
    }
}

/// Sends the bridge's request, watched for the caller's `request`.
fn start(
    upstream: &Upstream,
    bridge: &mut Bridge,
    request: &HandlerRequest,
) -> Result<(Flight, mpsc::Receiver<CallEvent>), Unrelayed> {
    let wants = request.emitter.wants();
    let (events, receiver) = mpsc::channel(CALL_EVENTS);
    let watch = Watch { events, progress: wants.progress, log_level: wants.log_level.map(|l| l.as_str().into()) };
    let flight = upstream.start(bridge.outgoing(), Some(watch))?;
    bridge.handle_started(Instant::now().into_std());
    Ok((flight, receiver))
}

/// [`run`], its time noted as the upstream's.
pub(super) async fn run_timed(upstream: &Upstream, held: Held, request: &HandlerRequest) -> Ran {
    let began = Instant::now();
    let ran = run(upstream, held, request).await;
    request.backend.record(BackendKind::UPSTREAM, upstream.name(), began.elapsed());
    ran
}

/// Does what the call's bridge says, feeding it what the upstream and the caller do,
/// until the call is over or held.
async fn run(upstream: &Upstream, mut held: Held, request: &HandlerRequest) -> Ran {
    let mut gave_up = None;
    loop {
        while let Some(action) = held.bridge.poll() {
            match action {
                Action::Emit(notice) => emit(&*request.emitter, &notice),
                Action::Answer { asked, answer } => answer_upstream(&held.flight.connection, &asked.id, answer).await,
                Action::Refuse { asked, code, message } => {
                    // Known by Bondry's reason alone: the method is the upstream's to choose.
                    if let Some(print) = warnings::hear(upstream.name(), "", message) {
                        let (method, suppressed) = (&asked.method, print.suppressed);
                        tracing::info!(
                            upstream = upstream.name(),
                            method,
                            message,
                            suppressed,
                            "an upstream request refused"
                        );
                    }
                    answer_upstream(&held.flight.connection, &asked.id, Err((code, message.into()))).await;
                }
                Action::Resend => match start(upstream, &mut held.bridge, request) {
                    Ok((flight, events)) => {
                        let before = std::mem::replace(&mut held.flight, flight);
                        held.events = events;
                        // What the round before left unasked is answered on its own flight.
                        if let Some((asked, why)) = gave_up.take() {
                            tokio::spawn(give_up(before, asked, why));
                        }
                    }
                    Err(why) => held.bridge.handle_unstarted(why),
                },
                Action::Expire => {
                    let settled = upstream.settle(&held.flight, None);
                    held.bridge.handle_settled(settled);
                }
                Action::Hold(requests) => return Ran::Hold(Box::new(held), requests),
                Action::GiveUp { asked, why } => gave_up = Some((asked, why)),
                Action::Done(driven) => {
                    if let Some((asked, why)) = gave_up {
                        tokio::spawn(give_up(held.flight, asked, why));
                    }
                    return Ran::Over(driven);
                }
            }
        }
        let wake = held.bridge.poll_timeout().map(Instant::from_std);
        let declared = &request.client_capabilities;
        tokio::select! {
            answered = &mut held.flight.answer => {
                // What the upstream said before its answer reaches the caller before it; what
                // it asked meanwhile has nobody left to ask.
                while let Ok(event) = held.events.try_recv() {
                    match event {
                        CallEvent::Notice(notice) => held.bridge.handle_notice(notice),
                        CallEvent::Asked(asked) => held.bridge.handle_unasked(asked),
                    }
                }
                let settled = upstream.settle(&held.flight, Some(answered));
                held.bridge.handle_settled(settled);
            }
            Some(event) = held.events.recv() => feed(&mut held.bridge, event, declared),
            () = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {
                held.bridge.handle_timeout(Instant::now().into_std());
            }
            () = request.cancellation.cancelled() => held.bridge.handle_cancelled(),
        }
    }
}

fn feed(bridge: &mut Bridge, event: CallEvent, declared: &Value) {
    match event {
        CallEvent::Notice(notice) => bridge.handle_notice(notice),
        CallEvent::Asked(asked) => bridge.handle_asked(asked, declared, Instant::now().into_std()),
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

/// Answers each of `asked` -32603 with `why`; dropping `flight` then cancels the call upstream.
pub(super) async fn give_up(flight: Flight, asked: Vec<Asked>, why: &'static str) {
    for asked in asked {
        answer_upstream(&flight.connection, &asked.id, Err((rpc::INTERNAL_ERROR, why.into()))).await;
    }
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
