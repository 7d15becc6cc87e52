//! Bondry's MCP adapter, sans IO.
//!
//! A pure function from a request (head, body, principal, realm snapshot, time and a
//! random source) to a [`Step`]: a finished [`Reply`], or a [`Call`] for the runtime to run
//! through the core's dispatcher and hand back to [`Adapter::complete`]. No sockets, no
//! runtime, no clock and no randomness of its own: everything is injected, so every rule
//! here is testable without a server.
//!
//! The pipeline follows the contract's order of checks: [`head`] (method, media types),
//! then [`jsonrpc`] framing, era choice, the [`envelope`], the version and [`headers`],
//! then the method ([`discover`], [`tools`]). Every refusal is an [`error::Error`], and
//! that one table decides its status, code and message.

pub mod completion;
pub mod cursor;
pub mod discover;
pub mod envelope;
pub mod error;
mod handshake;
pub mod head;
pub mod headers;
mod input;
pub mod jsonrpc;
pub mod lint;
pub mod listen;
pub mod listing;
mod methods;
mod modern;
pub mod notify;
pub mod prompts;
mod request;
pub mod resources;
pub mod revision;
pub mod seal;
pub mod sentinel;
pub mod session;
pub mod shape;
pub mod state;
pub mod tools;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bondry_core::BoxFuture;
use bondry_core::audit::{AuditOutcome, AuditRecord, Digest};
use bondry_core::capability::CapabilityKind;
use bondry_core::dispatch::{self, Outcome};
use bondry_core::handler::{
    Answer, Cancellation, CompletionQuery, Emitter, HandlerRequest, InputRequest, InvocationId, Publisher, Retry,
    TraceContext,
};
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use bondry_core::registry::Capability;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub use error::Error;
pub use revision::{Era, Revision};
pub use session::{Effect, LiveSession, NewSession, NoSessions, SessionLookup, SessionRef};

/// The adapter id grants name: `mcp:demo.*`, or `demo.*` for short.
pub const ADAPTER: &str = "mcp";

/// Version `serverInfo` reports unless the host says otherwise.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A cryptographically secure random source, injected so tests can seed it and so
/// instances sharing keys never derive nonces from time or counters.
pub trait Csprng {
    fn fill(&mut self, dest: &mut [u8]);
}

/// What one listener serves.
#[derive(Debug, Clone)]
pub struct ListenerSettings {
    /// Protocol revisions accepted on this listener.
    pub revisions: Vec<Revision>,
    /// Entries per list page.
    pub page_size: usize,
    /// `ttlMs` of discover and list results.
    pub list_ttl_ms: u64,
    /// The version `serverInfo` reports.
    pub server_version: String,
    /// How long a handshake session may live, however active.
    pub session_lifetime: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no protocol revision is enabled; enable 2026-07-28, 2025-11-25 or 2025-06-18")]
pub struct NoRevision;

/// One request as the adapter sees it: credentials already removed by the runtime.
#[derive(Debug, Clone, Copy)]
pub struct Inbound<'a> {
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

/// The MCP adapter of one listener.
#[derive(Debug)]
pub struct Adapter {
    settings: ListenerSettings,
    /// The modern revisions accepted, newest first, as `supportedVersions` lists them.
    supported: Vec<&'static str>,
    /// The handshake revisions accepted, newest first.
    handshake: Vec<Revision>,
    server_meta: Value,
}

/// The endpoint's next move for one request.
#[must_use]
#[derive(Debug)]
pub enum Step {
    /// Answer now.
    Reply(Reply),
    /// Run the call, then hand its outcome to [`Adapter::complete`].
    Dispatch(Box<Call>),
    /// Open the session's standalone event stream (a handshake-era GET).
    Listen(SessionRef),
    /// Open a `subscriptions/listen` stream (modern).
    Subscribe(Box<listen::Subscription>),
}

impl From<Error> for Step {
    fn from(error: Error) -> Self {
        Self::Reply(error.into())
    }
}

/// A finished response, with the audit record the runtime must write, if any.
#[must_use]
#[derive(Debug)]
pub struct Reply {
    pub response: http::Response<Bytes>,
    /// Boxed: most replies carry none, and replies travel by value through every step.
    pub audit: Option<Box<AuditRecord>>,
    /// What the runtime's session table must do besides answering (boxed, like `audit`).
    pub effect: Option<Box<Effect>>,
}

impl Reply {
    fn json(status: StatusCode, body: Vec<u8>) -> Self {
        let mut response = http::Response::new(Bytes::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Self { response, audit: None, effect: None }
    }

    /// An empty body with `status`: 202 for an accepted notification, 204 for a DELETE.
    fn empty(status: StatusCode) -> Self {
        let mut response = http::Response::new(Bytes::new());
        *response.status_mut() = status;
        Self { response, audit: None, effect: None }
    }

    fn error(error: Error, context: error::Context) -> Self {
        Self { response: error.to_http_in(context), audit: None, effect: None }
    }

    fn audited(mut self, record: AuditRecord) -> Self {
        self.audit = Some(Box::new(record));
        self
    }

    fn with_effect(mut self, effect: Effect) -> Self {
        self.effect = Some(Box::new(effect));
        self
    }
}

impl From<Error> for Reply {
    fn from(error: Error) -> Self {
        Self::error(error, error::Context::default())
    }
}

impl Adapter {
    pub fn new(settings: ListenerSettings) -> Result<Self, NoRevision> {
        let newest_first = |era: Era| {
            let mut revisions: Vec<Revision> = settings.revisions.iter().copied().filter(|r| r.era() == era).collect();
            revisions.sort_unstable_by(|a, b| b.cmp(a));
            revisions.dedup();
            revisions
        };
        let (modern, handshake) = (newest_first(Era::Modern), newest_first(Era::Handshake));
        if modern.is_empty() && handshake.is_empty() {
            return Err(NoRevision);
        }
        let server_meta = json!({ envelope::SERVER_INFO: { "name": "bondry", "version": settings.server_version } });
        Ok(Self { supported: modern.into_iter().map(Revision::as_str).collect(), handshake, settings, server_meta })
    }

    /// Whether this endpoint serves the handshake era.
    pub fn serves_handshake(&self) -> bool {
        !self.handshake.is_empty()
    }

    /// `_meta` every modern result carries.
    fn server_meta(&self) -> Value {
        self.server_meta.clone()
    }

    /// How to answer an error raised before a request reaches [`Adapter::receive`]:
    /// `"id": null` when its session id names a live 2025-06-18 session.
    pub fn early_context(
        &self,
        session_id: Option<&str>,
        realm: &RealmSnapshot,
        sessions: &dyn SessionLookup,
        now: SystemTime,
    ) -> error::Context {
        let null_id = self.serves_handshake()
            && session_id.and_then(|token| session::peek(token, realm, sessions, now)) == Some(Revision::V2025_06_18);
        error::Context { in_session: false, null_id }
    }

    /// Checks the request head before the body is read.
    pub fn admit(&self, method: &Method, headers: &HeaderMap) -> Result<(), Error> {
        head::admit(method, headers, self.serves_handshake())
    }

    /// Takes one request through framing, era choice and the method's checks.
    pub fn receive(
        &self,
        inbound: Inbound<'_>,
        realm: &Arc<RealmSnapshot>,
        principal: &Principal,
        sessions: &dyn SessionLookup,
        now: SystemTime,
        rng: &mut dyn Csprng,
    ) -> Step {
        use jsonrpc::{FramingError, Message};
        // A session header that is repeated or unreadable names no session.
        let session_id = headers::single(inbound.headers, session::HEADER).unwrap_or(Some(""));
        let attributed = |sessions: &dyn SessionLookup| {
            let token = session_id.filter(|_| self.serves_handshake())?;
            session::resolve(token, realm, principal, sessions, now)
        };
        if inbound.method != Method::POST {
            return handshake::session_method(self, inbound, session_id, attributed(sessions));
        }
        let message = match jsonrpc::parse(inbound.body) {
            Ok(message) => message,
            Err(error) => {
                let null_id =
                    attributed(sessions).is_some_and(|(session, _)| session.revision == Revision::V2025_06_18);
                let context = error::Context { in_session: false, null_id };
                let error = match error {
                    FramingError::Parse => Error::Parse,
                    FramingError::Invalid { id, reason } => Error::InvalidRequest { id, reason },
                };
                return Step::Reply(Reply::error(error, context));
            }
        };
        match message {
            Message::Response { .. } if session_id.is_none() || !self.serves_handshake() => {
                Error::InvalidRequest { id: None, reason: "clients do not send responses to this endpoint" }.into()
            }
            // A client's answer to a request the server sent inside its session: the
            // runtime hands it to the call waiting for it.
            Message::Response { id, answer } => match attributed(sessions) {
                Some((session, _)) if handshake::version(self, inbound.headers, &session).is_none() => {
                    Error::InvalidSessionVersion { id: None }.into()
                }
                Some((session, _)) => Step::Reply(Reply::empty(StatusCode::ACCEPTED).with_effect(Effect::Respond {
                    sid: session.sid,
                    id,
                    answer,
                })),
                None => Error::SessionNotFound { id: None }.into(),
            },
            Message::Notification { method, params } => {
                let claim = envelope::claim(params.as_ref());
                if claim.is_some() || session_id.is_none() || !self.serves_handshake() {
                    // Modern notifications need no headers; only a claim of the wrong type is
                    // refused. `notifications/cancelled` is accepted and ignored: closing the
                    // stream cancels.
                    return match claim {
                        Some(claim) if !claim.is_string() => Error::InvalidEnvelope {
                            id: None,
                            missing: vec![],
                            invalid: vec![envelope::PROTOCOL_VERSION],
                        }
                        .into(),
                        _ => Step::Reply(Reply::empty(StatusCode::ACCEPTED)),
                    };
                }
                match attributed(sessions) {
                    Some((session, _)) => {
                        handshake::notification(self, inbound.headers, &method, params.as_ref(), session)
                    }
                    None => Error::SessionNotFound { id: None }.into(),
                }
            }
            Message::Request { id, method, params } => {
                let params = params.unwrap_or_default();
                if envelope::claim(Some(&params)).is_some() && !self.supported.is_empty() {
                    return modern::receive(
                        self,
                        inbound.headers,
                        inbound.body.len(),
                        id,
                        &method,
                        &params,
                        realm,
                        principal,
                        now,
                        rng,
                    );
                }
                let session = match session_id {
                    Some(_) if self.serves_handshake() => match attributed(sessions) {
                        Some(session) => Some(session),
                        None => return Error::SessionNotFound { id: Some(id) }.into(),
                    },
                    _ => None,
                };
                match (method.as_str(), session) {
                    ("initialize", None) if self.serves_handshake() => {
                        handshake::initialize(self, id, &params, realm, principal, now, rng)
                    }
                    (_, Some((session, live))) => {
                        let request = handshake::Attributed { session, live, id, method: &method, params: &params };
                        handshake::receive(self, inbound, request, realm, principal, now, rng)
                    }
                    _ => self.unclaimed(inbound.headers, id, &method, &params).into(),
                }
            }
        }
    }

    /// A request with no modern claim and no session.
    fn unclaimed(&self, headers: &HeaderMap, id: Id, method: &str, params: &serde_json::Map<String, Value>) -> Error {
        let header = headers::single(headers, headers::PROTOCOL_VERSION).ok().flatten();
        if method != "initialize"
            && header.and_then(|version| version.parse::<Revision>().ok()).is_some_and(|r| r.era() == Era::Modern)
        {
            return Error::InvalidEnvelope {
                id: Some(id),
                missing: envelope::missing_keys(Some(params)),
                invalid: vec![],
            };
        }
        if self.serves_handshake() {
            return Error::SessionRequired { id: Some(id) };
        }
        let offered = (method == "initialize").then(|| params.get("protocolVersion").and_then(Value::as_str)).flatten();
        let requested = offered.or(header).unwrap_or("2025-03-26").to_owned();
        Error::UnsupportedVersion { id: Some(id), supported: self.supported.clone(), requested }
    }

    /// Shapes the outcome of a dispatched call into its reply and audit record.
    pub fn complete(&self, mut call: Call, outcome: Outcome, now: SystemTime, rng: &mut dyn Csprng) -> Reply {
        let era = if call.session.is_some() { Era::Handshake } else { Era::Modern };
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
                Some(input::required_result(&call, requests, sealing, &self.server_meta, now, rng))
            }
            _ => None,
        };
        let outcome = match asked {
            Some(Err(input::Unsendable::Failed(code))) => Outcome::Failed { code: code.into() },
            _ => outcome,
        };
        let asked = match asked {
            Some(Ok(result)) => Some(Ok(result)),
            Some(Err(input::Unsendable::Undeclared(missing))) => {
                Some(Err(Error::MissingClientCapability { id: call.id.clone(), missing }))
            }
            _ => None,
        };
        let shaped = match (asked, &call.completion, call.capability.kind()) {
            (Some(asked), _, _) => asked,
            (None, Some(_), _) => completion::result(&outcome, &call, &self.server_meta, era),
            (None, None, CapabilityKind::Tool) => Ok(tools::call_result(
                &outcome,
                Some(call.invocation.as_str()),
                &self.server_meta,
                call.capability.id().as_str(),
                era,
            )),
            (None, None, CapabilityKind::Prompt) => prompts::result(&outcome, &call, &self.server_meta, era),
            (None, None, CapabilityKind::Resource | CapabilityKind::ResourceTemplate) => {
                resources::result(&outcome, &call, &self.server_meta, era)
            }
        };
        let audit_outcome = match (&outcome, &shaped) {
            (Outcome::Answered(Answer::InputRequired { .. }), Ok(_)) if era == Era::Modern => {
                AuditOutcome::InputRequired
            }
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
                let mut record = call.into_record(audit_outcome, now);
                record.result_sha256 = Some(Digest::of(result, body.len()));
                Reply::json(StatusCode::OK, body).audited(record)
            }
            Err(error) => {
                let context = error::Context {
                    in_session: call.session.is_some(),
                    null_id: call.session.as_ref().is_some_and(|s| s.revision == Revision::V2025_06_18),
                };
                let record = call.into_record(audit_outcome, now);
                Reply::error(error, context).audited(record)
            }
        }
    }
}

use jsonrpc::Id;

/// What a method leaves `receive` with once every pre-dispatch check passed.
pub(crate) struct Admitted {
    pub capability: Arc<Capability>,
    pub arguments: Value,
    pub retry: Option<Retry>,
    /// Set for `completion/complete`: the hook to run instead of the handler's call.
    pub completion: Option<CompletionQuery>,
    /// The URI a `resources/read` names, which its errors echo.
    pub uri: Option<String>,
    /// The exchange a retry's `requestState` continues.
    pub continuation: Option<String>,
}

impl Admitted {
    pub fn new(capability: Arc<Capability>, arguments: Value) -> Self {
        Self { capability, arguments, retry: None, completion: None, uri: None, continuation: None }
    }
}

/// A call that passed every check and waits for the runtime to run it.
#[derive(Debug)]
pub struct Call {
    realm: Arc<RealmSnapshot>,
    capability: Arc<Capability>,
    id: Id,
    arguments: Value,
    invocation: InvocationId,
    principal: Principal,
    client_capabilities: Value,
    trace: TraceContext,
    retry: Option<Retry>,
    completion: Option<CompletionQuery>,
    uri: Option<String>,
    continuation: Option<String>,
    /// The method the call answers, which a `requestState` is bound to.
    method: String,
    notifier: notify::Notifier,
    received: SystemTime,
    /// The size of the request body, a bound on the arguments' serialised size.
    body_len: usize,
    session: Option<SessionRef>,
}

impl Call {
    fn new(request: request::Request<'_>, admitted: Admitted, rng: &mut dyn Csprng) -> Self {
        let mut bytes = [0; 16];
        rng.fill(&mut bytes);
        Self {
            realm: Arc::clone(request.realm),
            capability: admitted.capability,
            id: request.id,
            arguments: admitted.arguments,
            invocation: InvocationId::from_random(bytes),
            principal: request.principal.clone(),
            notifier: notify::Notifier::new(request.envelope.progress_token, request.envelope.log_level),
            client_capabilities: request.envelope.client_capabilities,
            trace: request.envelope.trace,
            retry: admitted.retry,
            completion: admitted.completion,
            uri: admitted.uri,
            continuation: admitted.continuation,
            method: request.method.to_owned(),
            received: request.now,
            body_len: request.body_len,
            session: request.session,
        }
    }

    /// The capability to invoke.
    pub fn capability(&self) -> &Capability {
        &self.capability
    }

    /// Runs the call through the core: the handler, or for `completion/complete` its
    /// completion hook.
    pub fn invoke(&self, request: HandlerRequest) -> BoxFuture<'_, Outcome> {
        match &self.completion {
            Some(query) => Box::pin(dispatch::complete(&self.capability, query.clone())),
            None => Box::pin(dispatch::invoke(&self.capability, request)),
        }
    }

    pub fn invocation(&self) -> &InvocationId {
        &self.invocation
    }

    /// Prepares the handler's next round: the client's answers to its input requests.
    pub fn set_retry(&mut self, retry: Retry) {
        self.retry = Some(retry);
    }

    /// The server-to-client request asking the client for `request`, sent as `id`.
    pub fn input_request(&self, id: &Id, request: &InputRequest) -> String {
        let message =
            json!({"jsonrpc": "2.0", "id": id, "method": input::method(request.kind), "params": request.params});
        message.to_string()
    }

    /// The client capabilities the session lacks for `requests`, if any.
    pub fn missing_input_capabilities(&self, requests: &BTreeMap<String, InputRequest>) -> bool {
        requests.values().any(|request| !input::declared(request, &self.client_capabilities))
    }

    /// How a call ends when the client cannot supply its input: a tool error the model
    /// can read for a tool, a failure with that code for a prompt or resource.
    pub fn client_failure(&self, code: &str) -> Outcome {
        match self.capability.kind() {
            CapabilityKind::Tool => {
                Outcome::Answered(Answer::ToolError { code: code.into(), retryable: false, content: None })
            }
            _ => Outcome::Failed { code: code.into() },
        }
    }

    /// What a `requestState` sealed by this call is bound to.
    fn binding(&self) -> state::Binding<'_> {
        state::Binding {
            principal: self.principal.id(),
            realm: &self.realm.realm,
            method: &self.method,
            capability: self.capability.id().as_str(),
            arguments: &self.arguments,
        }
    }

    /// The realm the call runs in.
    pub fn realm(&self) -> &str {
        &self.realm.realm
    }

    /// What the client asked to hear while the call runs.
    pub fn notifier(&self) -> &notify::Notifier {
        &self.notifier
    }

    /// The handshake session the call belongs to; `None` in the modern era.
    pub fn session(&self) -> Option<&SessionRef> {
        self.session.as_ref()
    }

    /// The JSON-RPC id of the request, as `notifications/cancelled` names it.
    pub fn request_id(&self) -> &Id {
        &self.id
    }

    /// The handler's view of this call.
    pub fn handler_request(
        &self,
        cancellation: Arc<dyn Cancellation>,
        emitter: Arc<dyn Emitter>,
        publisher: Arc<dyn Publisher>,
    ) -> HandlerRequest {
        HandlerRequest {
            capability: self.capability.id().clone(),
            arguments: self.arguments.clone(),
            realm: self.realm.realm.clone(),
            principal: self.principal.clone(),
            invocation: self.invocation.clone(),
            trace: self.trace.clone(),
            client_capabilities: self.client_capabilities.clone(),
            cancellation,
            emitter,
            publisher,
            retry: self.retry.clone(),
        }
    }

    /// The audit record of this call ending with `outcome` at `now`.
    pub fn record(&self, outcome: AuditOutcome, now: SystemTime) -> AuditRecord {
        self.record_with(outcome, now, self.arguments.clone())
    }

    /// [`Call::record`], consuming the call so the arguments move instead of copying.
    fn into_record(mut self, outcome: AuditOutcome, now: SystemTime) -> AuditRecord {
        let arguments = std::mem::take(&mut self.arguments);
        self.record_with(outcome, now, arguments)
    }

    fn record_with(&self, outcome: AuditOutcome, now: SystemTime, arguments: Value) -> AuditRecord {
        let mut record = AuditRecord::new(
            self.received,
            &self.realm.realm,
            &self.principal,
            ADAPTER,
            self.capability.id().as_str(),
            Some(&self.invocation),
            outcome,
            &self.trace,
        )
        .finished_at(now);
        record.continuation_id = self.continuation.clone();
        if self.capability.descriptor.audit_arguments {
            record.arguments = Some(arguments.clone());
        }
        record.arguments_sha256 = Some(Digest::of(arguments, self.body_len));
        record
    }
}
