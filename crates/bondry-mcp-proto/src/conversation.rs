//! One dispatched call from its first handler invocation to its reply, in either era.
//!
//! A handler may answer that it needs input from the client. In the modern era that ends
//! the call with an `input_required` result the client retries with; in a handshake
//! session the server asks the client itself, on the call's stream, and calls the handler
//! again with the answers. [`Conversation`] holds every rule of that exchange (the round
//! limit, one deadline per round, the failure codes, the empty-input rule, the client
//! capability check) and shapes the reply, so the runtime only moves messages and time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bondry_core::BoxFuture;
use bondry_core::audit::{AuditOutcome, AuditRecord, Digest};
use bondry_core::capability::CapabilityKind;
use bondry_core::dispatch::Outcome;
use bondry_core::handler::{Answer, HandlerRequest, InputRequest, Retry};
use bondry_core::telemetry::RequestOutcome;
use serde_json::{Map, Value, json};

use crate::call::Call;
use crate::error::{self, Error};
use crate::jsonrpc::{self, Id};
use crate::reply::{Reply, Settle};
use crate::revision::Era;
use crate::settings::Listener;
use crate::vocabulary::{
    CLIENT_ERROR, CLIENT_TIMEOUT, Csprng, EMPTY_INPUT_REQUIRED, MISSING_CLIENT_CAPABILITY, STATE_TOO_LARGE,
    TOO_MANY_PENDING_INPUTS, TOO_MANY_ROUNDS,
};
use crate::{completion, input, prompts, resources, state, tools};

/// Rounds of input one session call may ask the client for: the handler is called at most
/// once more than this.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// A call's conversation with its handler and, in a session, with its client.
///
/// The driver (the runtime) feeds it events (`handle_*`) and polls it ([`poll`]), in this
/// order, until `poll` says [`Next::Done`]:
///
/// 1. [`Next::Invoke`]: run the handler once with the call's [`Call::handler_request`]
///    through [`invoke`], then feed [`handle_outcome`].
/// 2. [`Next::Ask`]: send each [`Question`] to the client as [`Question::message`] with an
///    id the session reserved for it. Feed [`handle_refused`] if the session cannot wait
///    for one more answer, [`handle_unreachable`] if the message cannot be sent, and
///    [`handle_asked`] once all of them went out.
/// 3. [`Next::Wait`]: wait for the answers, feeding each to [`handle_answer`], until the
///    deadline; then (or when the client can no longer answer) feed [`handle_timeout`].
/// 4. [`Next::Done`]: [`finish`] gives how the call ended.
///
/// At any point the driver may [`cancel`] (the client cancelled, the session ended, the
/// server stops): the call then ends silently, with a `cancelled` audit record. Calling
/// [`finish`] before `Done` is such a cancellation. A modern call never asks: it goes
/// from `Invoke` to `Done`.
///
/// [`poll`]: Conversation::poll
/// [`invoke`]: Conversation::invoke
/// [`handle_outcome`]: Conversation::handle_outcome
/// [`handle_refused`]: Conversation::handle_refused
/// [`handle_unreachable`]: Conversation::handle_unreachable
/// [`handle_asked`]: Conversation::handle_asked
/// [`handle_answer`]: Conversation::handle_answer
/// [`handle_timeout`]: Conversation::handle_timeout
/// [`finish`]: Conversation::finish
/// [`cancel`]: Conversation::cancel
#[derive(Debug)]
pub struct Conversation {
    call: Call,
    listener: Arc<Listener>,
    /// How long the client has to answer one round, from when its requests went out.
    answer_within: Duration,
    /// Handler invocations so far.
    invocations: usize,
    stage: Stage,
}

#[derive(Debug)]
enum Stage {
    /// The handler is to be called (again); its outcome comes next.
    Invoke,
    /// The handler asked for input: the questions go out next.
    Asking { questions: Vec<Question>, state: Option<Value> },
    /// The questions went out; the answers are awaited until `deadline`.
    Waiting { deadline: SystemTime, awaited: usize, answers: BTreeMap<String, Value>, state: Option<Value> },
    /// Over.
    Ended(Ended),
}

/// What a conversation needs next.
#[derive(Debug)]
pub enum Next {
    /// Run the handler, then feed its outcome.
    Invoke,
    /// Send these requests to the client.
    Ask(Vec<Question>),
    /// Wait for the client's answers until this instant.
    Wait(SystemTime),
    /// The call is over: [`Conversation::finish`].
    Done,
}

/// One request a session call sends its client, under the key its handler gave it.
#[derive(Debug, Clone)]
pub struct Question {
    pub key: String,
    request: InputRequest,
}

impl Question {
    /// The server-to-client request asking this question as `id`.
    pub fn message(&self, id: &Id) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": input::method(self.request.kind), "params": self.request.params})
            .to_string()
    }
}

/// How a call ended.
#[must_use]
#[derive(Debug)]
pub enum Ended {
    /// Answered: the reply, with its audit record.
    Replied(Reply),
    /// Cancelled: nothing is sent, and this is recorded.
    Cancelled(Box<AuditRecord>),
}

impl Ended {
    /// Hands the outcome and the audit record to `to`; the response to send, if the call
    /// has one.
    pub fn settle(self, to: &mut dyn Settle) -> Option<http::Response<bytes::Bytes>> {
        match self {
            Self::Replied(reply) => Some(reply.settle(to)),
            Self::Cancelled(record) => {
                to.settled(RequestOutcome::Audited(record.outcome));
                to.record(*record);
                None
            }
        }
    }
}

impl Conversation {
    /// The conversation of `call`, served by `listener`; a session's client has
    /// `answer_within` to answer each round.
    pub fn new(call: Call, listener: Arc<Listener>, answer_within: Duration) -> Self {
        Self { call, listener, answer_within, invocations: 0, stage: Stage::Invoke }
    }

    /// The call being conversed.
    pub fn call(&self) -> &Call {
        &self.call
    }

    /// What the conversation needs next.
    pub fn poll(&self) -> Next {
        match &self.stage {
            Stage::Invoke => Next::Invoke,
            Stage::Asking { questions, .. } => Next::Ask(questions.clone()),
            Stage::Waiting { deadline, .. } => Next::Wait(*deadline),
            Stage::Ended(_) => Next::Done,
        }
    }

    /// Runs the handler (or a completion hook) once: its future owns what it needs, so the
    /// conversation stays free to be cancelled while it runs.
    /// `now` is when it is invoked, the start of a builtin handler's run in the audit record.
    pub fn invoke(&mut self, request: HandlerRequest, now: SystemTime) -> BoxFuture<'static, Outcome> {
        self.call.runs.invoked(now);
        self.call.invoke(request)
    }

    /// The handler's outcome at `now`, which ends its run for the audit record's
    /// `backend_duration_us`.
    pub fn handle_outcome(&mut self, outcome: Outcome, now: SystemTime, rng: &mut dyn Csprng) {
        if !matches!(self.stage, Stage::Invoke) {
            return;
        }
        self.call.runs.ended(now, !matches!(outcome, Outcome::InvalidInput(_)));
        self.invocations += 1;
        let in_session = self.call.session.is_some();
        let (requests, state) = match outcome {
            Outcome::Answered(Answer::InputRequired { requests, state }) if in_session => (requests, state),
            outcome => return self.end(outcome, now, rng),
        };
        if requests.is_empty() && state.is_none() {
            return self.end(Outcome::Failed { code: EMPTY_INPUT_REQUIRED.to_owned() }, now, rng);
        }
        // The client is never asked for input the handler would not get to use.
        if self.invocations > MAX_INPUT_ROUNDS {
            return self.fail_for_client(TOO_MANY_ROUNDS, now, rng);
        }
        if requests.values().any(|request| !input::declared(request, &self.call.client_capabilities)) {
            return self.fail_for_client(MISSING_CLIENT_CAPABILITY, now, rng);
        }
        if requests.is_empty() {
            // Only a state: the handler is called again at once, with no answers.
            self.call.retry = Some(Retry { responses: BTreeMap::new(), state, continuation: None });
            self.stage = Stage::Invoke;
            return;
        }
        let questions = requests.into_iter().map(|(key, request)| Question { key, request }).collect();
        self.stage = Stage::Asking { questions, state };
    }

    /// The session already waits for as many answers as it may.
    pub fn handle_refused(&mut self, now: SystemTime, rng: &mut dyn Csprng) {
        if matches!(self.stage, Stage::Asking { .. }) {
            self.fail_for_client(TOO_MANY_PENDING_INPUTS, now, rng);
        }
    }

    /// A question could not be sent: the client has no way to answer.
    pub fn handle_unreachable(&mut self, now: SystemTime, rng: &mut dyn Csprng) {
        if matches!(self.stage, Stage::Asking { .. }) {
            self.fail_for_client(CLIENT_TIMEOUT, now, rng);
        }
    }

    /// Every question of the round went out at `now`: the round's deadline starts.
    pub fn handle_asked(&mut self, now: SystemTime) {
        if let Stage::Asking { questions, state } = &mut self.stage {
            let awaited = questions.len();
            let state = state.take();
            let deadline = now.checked_add(self.answer_within).unwrap_or(now);
            self.stage = Stage::Waiting { deadline, awaited, answers: BTreeMap::new(), state };
        }
    }

    /// The client's answer to the question under `key`: its result, or its error.
    pub fn handle_answer(&mut self, key: &str, answer: Result<Value, Value>, now: SystemTime, rng: &mut dyn Csprng) {
        let Stage::Waiting { awaited, answers, state, .. } = &mut self.stage else { return };
        match answer {
            Ok(result) => {
                answers.insert(key.to_owned(), result);
            }
            Err(_) => return self.fail_for_client(CLIENT_ERROR, now, rng),
        }
        if answers.len() >= *awaited {
            let responses = std::mem::take(answers);
            self.call.retry = Some(Retry { responses, state: state.take(), continuation: None });
            self.stage = Stage::Invoke;
        }
    }

    /// The round's deadline passed at `now`, or the client can no longer answer.
    pub fn handle_timeout(&mut self, now: SystemTime, rng: &mut dyn Csprng) {
        if matches!(self.stage, Stage::Waiting { .. }) {
            self.fail_for_client(CLIENT_TIMEOUT, now, rng);
        }
    }

    /// The call is cancelled at `now`, its handler's run having ended with `outcome`,
    /// which nothing sends: a run refused for invalid input never reached its backend.
    pub fn cancel_after(&mut self, outcome: &Outcome, now: SystemTime) {
        self.call.runs.ended(now, !matches!(outcome, Outcome::InvalidInput(_)));
        self.cancel(now);
    }

    /// Ends the call silently at `now`, whatever it was doing; an ended call stays ended.
    pub fn cancel(&mut self, now: SystemTime) {
        // A run cancelled under way counts until now.
        self.call.runs.ended(now, true);
        if !matches!(self.stage, Stage::Ended(_)) {
            let record = self.call.record(AuditOutcome::Cancelled, now);
            self.stage = Stage::Ended(Ended::Cancelled(Box::new(record)));
        }
    }

    /// How the call ended; before [`Next::Done`], it is cancelled at `now` first.
    pub fn finish(mut self, now: SystemTime) -> Ended {
        self.cancel(now);
        match self.stage {
            Stage::Ended(ended) => ended,
            // `cancel` left it ended; a cancelled record all the same.
            _ => Ended::Cancelled(Box::new(self.call.record(AuditOutcome::Cancelled, now))),
        }
    }

    /// Ends the call because its client cannot supply the input: a tool error the model
    /// can read for a tool, a failure with `code` for a prompt or resource.
    fn fail_for_client(&mut self, code: &str, now: SystemTime, rng: &mut dyn Csprng) {
        let outcome = match self.call.capability.kind() {
            CapabilityKind::Tool => Outcome::Answered(Answer::ToolError {
                code: code.into(),
                retryable: false,
                content: None,
                detail: None,
            }),
            _ => Outcome::Failed { code: code.into() },
        };
        self.end(outcome, now, rng);
    }

    fn end(&mut self, outcome: Outcome, now: SystemTime, rng: &mut dyn Csprng) {
        let reply = shape(&mut self.call, outcome, &self.listener, now, rng);
        self.stage = Stage::Ended(Ended::Replied(reply));
    }
}

/// The reply and audit record of `call` ending with `outcome`.
fn shape(call: &mut Call, outcome: Outcome, listener: &Listener, now: SystemTime, rng: &mut dyn Csprng) -> Reply {
    let era = if call.session.is_some() { Era::Handshake } else { Era::Modern };
    let server_meta = listener.server_meta_ref();
    // The first round that keeps state opens an exchange: its id goes into the sealed
    // state and, like every later round's, onto the audit record.
    if let (Outcome::Answered(Answer::InputRequired { state: Some(_), .. }), Era::Modern, None) =
        (&outcome, era, &call.continuation)
    {
        call.continuation = Some(state::new_continuation(rng));
    }
    // A modern handler that needs input answers `input_required`; one that cannot be
    // sent fails as a handler failure of its kind.
    let asked = match (&outcome, era) {
        (Outcome::Answered(Answer::InputRequired { requests, state }), Era::Modern) => {
            // The state and the exchange it continues (opened above if it begins here).
            let sealing = state.as_ref().zip(call.continuation.as_deref());
            Some(input_required(call, requests, sealing, server_meta, now, rng))
        }
        _ => None,
    };
    let outcome = match asked {
        Some(Err(Unsendable::Failed(code))) => Outcome::Failed { code: code.into() },
        _ => outcome,
    };
    let asked = match (asked, &outcome, era) {
        (Some(Ok(result)), _, _) => Some(Ok(result)),
        (Some(Err(Unsendable::Undeclared(missing))), _, _) => {
            Some(Err(Error::MissingClientCapability { id: call.id.clone(), missing }))
        }
        // A backend's upstream found the caller lacking: refused as Bondry's own check would.
        (None, Outcome::Answered(Answer::MissingClientCapability { required }), Era::Modern) => {
            Some(Err(Error::MissingClientCapability { id: call.id.clone(), missing: required.clone() }))
        }
        _ => None,
    };
    // The record's outcome is read from the handler's before a tool's result takes its parts.
    let answered = matches!(outcome, Outcome::Answered(_));
    let asks = matches!(outcome, Outcome::Answered(Answer::InputRequired { .. }));
    let needs_input =
        matches!(outcome, Outcome::Answered(Answer::InputRequired { .. } | Answer::MissingClientCapability { .. }));
    let as_answered = outcome.audit_outcome();
    let shaped = match (asked, &call.completion, call.capability.kind()) {
        (Some(asked), _, _) => asked,
        (None, Some(_), _) => completion::result(&outcome, call, server_meta, era),
        (None, None, CapabilityKind::Tool) => Ok(tools::call_result(
            outcome,
            Some(call.invocation.as_str()),
            server_meta,
            call.capability.id().as_str(),
            era,
        )),
        (None, None, CapabilityKind::Prompt) => prompts::result(&outcome, call, server_meta, era),
        (None, None, CapabilityKind::Resource | CapabilityKind::ResourceTemplate) => {
            resources::result(&outcome, call, server_meta, era)
        }
    };
    let audit_outcome = match &shaped {
        Ok(_) if asks && era == Era::Modern => AuditOutcome::InputRequired,
        // Input the request cannot supply: the caller's refusal, as before dispatch.
        Err(Error::MissingClientCapability { .. }) if needs_input => AuditOutcome::InvalidInput,
        // A resource whose handler found nothing there.
        Err(Error::ResourceNotFound { .. }) if answered => AuditOutcome::NotFound,
        Err(_) if answered => AuditOutcome::HandlerFailed,
        _ => as_answered,
    };
    match shaped {
        Ok(result) => {
            let body = jsonrpc::value_result_body(&call.id, &result);
            let mut record = call.take_record(audit_outcome, now);
            record.result_sha256 = Some(Digest::of(result, body.len()));
            Reply::json(http::StatusCode::OK, body).audited(record)
        }
        Err(error) => {
            let context = error::Context::of(call.session.as_ref().map(|session| session.revision));
            let record = call.take_record(audit_outcome, now);
            Reply::error(error, context).audited(record)
        }
    }
}

/// Why an `input_required` answer could not be sent.
#[derive(Debug)]
enum Unsendable {
    /// It asks for input the client did not declare: the client capabilities it needs.
    Undeclared(Value),
    /// A handler failure with this code.
    Failed(&'static str),
}

/// The modern `input_required` result for a handler's requests and state: each request
/// under its key, the state sealed into `requestState` with the id of the exchange it
/// continues (`sealing`). Never cached, so no `ttlMs`.
fn input_required(
    call: &Call,
    requests: &BTreeMap<String, InputRequest>,
    sealing: Option<(&Value, &str)>,
    server_meta: &Value,
    now: SystemTime,
    rng: &mut dyn Csprng,
) -> Result<Value, Unsendable> {
    if requests.is_empty() && sealing.is_none() {
        return Err(Unsendable::Failed(EMPTY_INPUT_REQUIRED));
    }
    let mut missing = Map::new();
    for request in requests.values().filter(|request| !input::declared(request, &call.client_capabilities)) {
        let (key, needed) = input::requirement(request);
        missing.insert(key.into(), needed);
    }
    if !missing.is_empty() {
        return Err(Unsendable::Undeclared(Value::Object(missing)));
    }
    let mut result = Map::new();
    result.insert("resultType".into(), json!("input_required"));
    if !requests.is_empty() {
        let wire: Map<String, Value> = requests
            .iter()
            .map(|(key, request)| {
                (key.clone(), json!({"method": input::method(request.kind), "params": request.params}))
            })
            .collect();
        result.insert("inputRequests".into(), Value::Object(wire));
    }
    if let Some((handler_state, continuation)) = sealing {
        let sealed = state::seal(&call.realm.keys, &call.binding(), handler_state.clone(), continuation, now, rng)
            .map_err(|_| Unsendable::Failed(STATE_TOO_LARGE))?;
        result.insert("requestState".into(), json!(sealed));
    }
    result.insert("_meta".into(), server_meta.clone());
    Ok(Value::Object(result))
}
