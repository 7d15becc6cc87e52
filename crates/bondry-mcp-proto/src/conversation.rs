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
use bondry_core::handler::{Answer, Cancellation, Emitter, HandlerRequest, InputRequest, Publisher, Retry};
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
/// 1. [`Next::Invoke`]: run the handler once with [`handler_request`]'s request through
///    [`invoke`], then feed [`handle_outcome`].
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
/// [`handler_request`]: Conversation::handler_request
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
    /// The handler is to be called (again).
    Invoke,
    /// The handler is running; its outcome comes next.
    Running,
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
    /// Hands the audit record to `to`; the response to send, if the call has one.
    pub fn settle(self, to: &mut dyn Settle) -> Option<http::Response<bytes::Bytes>> {
        match self {
            Self::Replied(reply) => Some(reply.settle(to)),
            Self::Cancelled(record) => {
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
    pub fn poll(&mut self) -> Next {
        match &mut self.stage {
            Stage::Invoke => {
                self.stage = Stage::Running;
                Next::Invoke
            }
            // Polled again before the outcome came: nothing new to do.
            Stage::Running => Next::Invoke,
            Stage::Asking { questions, .. } => Next::Ask(questions.clone()),
            Stage::Waiting { deadline, .. } => Next::Wait(*deadline),
            Stage::Ended(_) => Next::Done,
        }
    }

    /// The handler's view of the call, for its next invocation.
    pub fn handler_request(
        &self,
        cancellation: Arc<dyn Cancellation>,
        emitter: Arc<dyn Emitter>,
        publisher: Arc<dyn Publisher>,
    ) -> HandlerRequest {
        self.call.handler_request(cancellation, emitter, publisher)
    }

    /// Runs the handler (or a completion hook) once: its future owns what it needs, so the
    /// conversation stays free to be cancelled while it runs.
    pub fn invoke(&self, request: HandlerRequest) -> BoxFuture<'static, Outcome> {
        self.call.invoke(request)
    }

    /// The handler's outcome at `now`.
    pub fn handle_outcome(&mut self, outcome: Outcome, now: SystemTime, rng: &mut dyn Csprng) {
        if !matches!(self.stage, Stage::Running | Stage::Invoke) {
            return;
        }
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

    /// Ends the call silently at `now`, whatever it was doing; an ended call stays ended.
    pub fn cancel(&mut self, now: SystemTime) {
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
            CapabilityKind::Tool => {
                Outcome::Answered(Answer::ToolError { code: code.into(), retryable: false, content: None })
            }
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
    let asked = match asked {
        Some(Ok(result)) => Some(Ok(result)),
        Some(Err(Unsendable::Undeclared(missing))) => {
            Some(Err(Error::MissingClientCapability { id: call.id.clone(), missing }))
        }
        _ => None,
    };
    let shaped = match (asked, &call.completion, call.capability.kind()) {
        (Some(asked), _, _) => asked,
        (None, Some(_), _) => completion::result(&outcome, call, server_meta, era),
        (None, None, CapabilityKind::Tool) => Ok(tools::call_result(
            &outcome,
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
    let audit_outcome = match (&outcome, &shaped) {
        (Outcome::Answered(Answer::InputRequired { .. }), Ok(_)) if era == Era::Modern => AuditOutcome::InputRequired,
        // Input the request cannot supply: the caller's refusal, as before dispatch.
        (Outcome::Answered(Answer::InputRequired { .. }), Err(Error::MissingClientCapability { .. })) => {
            AuditOutcome::InvalidInput
        }
        // A resource whose handler found nothing there.
        (Outcome::Answered(_), Err(Error::ResourceNotFound { .. })) => AuditOutcome::NotFound,
        (Outcome::Answered(_), Err(_)) => AuditOutcome::HandlerFailed,
        _ => outcome.audit_outcome(),
    };
    match shaped {
        Ok(result) => {
            let body = jsonrpc::result_body(&call.id, &result);
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

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use bondry_core::capability::{Annotations, Binding, CapabilityId, Descriptor};
    use bondry_core::handler::{Handler, InputKind};
    use bondry_core::policy::{Policy, Principal, PrincipalKind};
    use bondry_core::realm::{Key, KeySet, RealmSnapshot};
    use bondry_core::registry::{Catalogue, Registration};
    use bondry_core::schema::SchemaBounds;
    use http::HeaderMap;

    use super::*;
    use crate::call::Admitted;
    use crate::envelope::Envelope;
    use crate::request::Request;
    use crate::revision::Revision;
    use crate::session::SessionRef;
    use crate::settings::ListenerSettings;

    /// Counts instead of drawing: every run mints the same ids.
    struct Counting(u8);

    impl Csprng for Counting {
        fn fill(&mut self, dest: &mut [u8]) {
            for byte in dest {
                self.0 = self.0.wrapping_add(1);
                *byte = self.0;
            }
        }
    }

    struct Unused;

    impl Handler for Unused {
        fn call(&self, _: HandlerRequest) -> BoxFuture<'static, Answer> {
            Box::pin(std::future::ready(Answer::Failure { code: "unused".into() }))
        }
    }

    const NOW: Duration = Duration::from_secs(1_785_000_000);
    const ANSWER_WITHIN: Duration = Duration::from_secs(30);

    fn now() -> SystemTime {
        UNIX_EPOCH + NOW
    }

    fn listener() -> Arc<Listener> {
        let settings = ListenerSettings {
            revisions: Revision::ALL.to_vec(),
            page_size: 10,
            list_ttl_ms: 1000,
            server_version: "0.0.0-test".into(),
            session_lifetime: Duration::from_secs(3600),
        };
        Arc::new(Listener::new(settings).unwrap())
    }

    /// A conversation calling the tool `t.ask`, in a session of `session` or modern, from a
    /// client declaring `client_capabilities`.
    fn conversation(session: Option<Revision>, client_capabilities: Value) -> Conversation {
        let descriptor = Descriptor {
            id: CapabilityId::new("t.ask").unwrap(),
            kind: CapabilityKind::Tool,
            title: None,
            summary: None,
            uri: None,
            mime_type: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Annotations::default(),
            requires_client: None,
            binding: Binding { kind: "builtin".into(), target: "unused".into() },
            audit_arguments: false,
        };
        let registration = Registration { descriptor: Arc::new(descriptor), handler: Arc::new(Unused) };
        let catalogue = Catalogue::build(1, vec![registration], &SchemaBounds::default(), &[]).unwrap();
        let keys = KeySet { active: Key { id: "k1".into(), secret: [7; 32] }, retired: Vec::new() };
        let realm = Arc::new(RealmSnapshot::new("default", catalogue, Policy::default(), keys));
        let capability = Arc::clone(realm.catalogue.get("t.ask").unwrap());
        let principal = Principal::new("alice", PrincipalKind::User, Vec::new());
        let listener = listener();
        let (headers, params) = (HeaderMap::new(), Map::new());
        let envelope = Envelope {
            version: "2026-07-28".into(),
            client_capabilities,
            trace: Default::default(),
            progress_token: None,
            log_level: None,
        };
        let request = Request {
            listener: &listener,
            headers: &headers,
            body_len: 2,
            id: Id::Integer(7),
            method: "tools/call",
            params: &params,
            envelope,
            realm: &realm,
            principal: &principal,
            now: now(),
            session: session.map(|revision| SessionRef { sid: "s1".into(), revision }),
        };
        let call = Call::new(request, Admitted::new(capability, json!({})), &mut Counting(0));
        Conversation::new(call, Arc::clone(&listener), ANSWER_WITHIN)
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
        let mut conversation = conversation(Some(Revision::V2025_11_25), elicitation());
        let rng = &mut Counting(100);
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
            let retry = conversation.call().retry.as_ref().unwrap();
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
        let mut conversation = conversation(Some(Revision::V2025_11_25), elicitation());
        let rng = &mut Counting(0);
        let _ = conversation.poll();
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
        let mut conversation = conversation(Some(Revision::V2025_06_18), elicitation());
        let rng = &mut Counting(0);
        let _ = conversation.poll();
        conversation.handle_outcome(needs(&[("q", elicit("q"))], None), now(), rng);
        conversation.handle_asked(now());
        conversation.handle_answer("q", Err(json!({"code": -1, "message": "no"})), now(), rng);
        let (status, body, _) = ended(conversation);
        assert_eq!(status, 200);
        assert_eq!(tool_error_code(&body), CLIENT_ERROR);
    }

    #[test]
    fn the_client_is_asked_eight_rounds_at_most() {
        let mut conversation = conversation(Some(Revision::V2025_11_25), elicitation());
        let rng = &mut Counting(0);
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
        let rng = &mut Counting(0);
        // Input the session's client did not declare.
        let mut undeclared = conversation(Some(Revision::V2025_11_25), json!({}));
        let _ = undeclared.poll();
        undeclared.handle_outcome(needs(&[("q", elicit("q"))], None), now(), rng);
        assert!(matches!(undeclared.poll(), Next::Done));
        assert_eq!(tool_error_code(&ended(undeclared).1), MISSING_CLIENT_CAPABILITY);
        // Neither requests nor state.
        let mut empty = conversation(Some(Revision::V2025_11_25), elicitation());
        let _ = empty.poll();
        empty.handle_outcome(needs(&[], None), now(), rng);
        let (status, body, outcome) = ended(empty);
        assert_eq!((status, outcome), (200, AuditOutcome::HandlerFailed));
        assert_eq!(body["result"]["_meta"]["dev.bondry/errorCode"], EMPTY_INPUT_REQUIRED, "{body}");
        // A session that waits for as many answers as it may, and a stream that is gone.
        for (refuse, code) in [(true, TOO_MANY_PENDING_INPUTS), (false, CLIENT_TIMEOUT)] {
            let mut conversation = conversation(Some(Revision::V2025_11_25), elicitation());
            let _ = conversation.poll();
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
        let mut conversation = conversation(Some(Revision::V2025_11_25), elicitation());
        let rng = &mut Counting(0);
        let _ = conversation.poll();
        conversation.handle_outcome(needs(&[("q", elicit("q"))], None), now(), rng);
        conversation.handle_asked(now());
        assert!(matches!(conversation.poll(), Next::Wait(_)));
        conversation.cancel(now());
        // A late answer changes nothing.
        conversation.handle_answer("q", Ok(json!({})), now(), rng);
        assert!(matches!(conversation.poll(), Next::Done));
        assert_eq!(ended(conversation), (0, Value::Null, AuditOutcome::Cancelled));
        // Finishing before the end is a cancellation too.
        let mut running = self::conversation(None, json!({}));
        let _ = running.poll();
        assert_eq!(ended(running), (0, Value::Null, AuditOutcome::Cancelled));
    }

    #[test]
    fn a_modern_call_answers_input_required_at_once() {
        let mut conversation = conversation(None, elicitation());
        let rng = &mut Counting(0);
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
        let mut undeclared = self::conversation(None, json!({}));
        let _ = undeclared.poll();
        undeclared.handle_outcome(needs(&[("q", elicit("which?"))], None), now(), rng);
        let (status, body, outcome) = ended(undeclared);
        assert_eq!((status, outcome), (400, AuditOutcome::InvalidInput));
        assert_eq!(body["error"]["code"], -32021, "{body}");
    }
}
