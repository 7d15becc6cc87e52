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

pub mod cursor;
pub mod discover;
pub mod envelope;
pub mod error;
pub mod head;
pub mod headers;
pub mod jsonrpc;
pub mod lint;
mod modern;
pub mod revision;
pub mod seal;
pub mod sentinel;
pub mod shape;
pub mod tools;

use std::sync::Arc;
use std::time::SystemTime;

use bondry_core::audit::{AuditOutcome, AuditRecord, Digest};
use bondry_core::dispatch::Outcome;
use bondry_core::handler::{Cancellation, Emitter, HandlerRequest, InvocationId, Publisher, Retry, TraceContext};
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use bondry_core::registry::Capability;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::{Value, json};

pub use error::Error;
pub use revision::{Era, Revision};

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
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no protocol revision that this build serves is enabled; enable 2026-07-28")]
pub struct NoRevision;

/// The MCP adapter of one listener.
#[derive(Debug)]
pub struct Adapter {
    settings: ListenerSettings,
    /// The modern revisions accepted, newest first, as `supportedVersions` lists them.
    supported: Vec<&'static str>,
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
}

impl Reply {
    fn json(status: StatusCode, body: Vec<u8>) -> Self {
        let mut response = http::Response::new(Bytes::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Self { response, audit: None }
    }

    /// 202 with an empty body: a notification was accepted.
    fn accepted() -> Self {
        let mut response = http::Response::new(Bytes::new());
        *response.status_mut() = StatusCode::ACCEPTED;
        Self { response, audit: None }
    }

    fn audited(mut self, record: AuditRecord) -> Self {
        self.audit = Some(Box::new(record));
        self
    }
}

impl From<Error> for Reply {
    fn from(error: Error) -> Self {
        Self { response: error.to_http(), audit: None }
    }
}

impl Adapter {
    pub fn new(settings: ListenerSettings) -> Result<Self, NoRevision> {
        let mut modern: Vec<Revision> =
            settings.revisions.iter().copied().filter(|revision| revision.era() == Era::Modern).collect();
        modern.sort_unstable_by(|a, b| b.cmp(a));
        modern.dedup();
        if modern.is_empty() {
            return Err(NoRevision);
        }
        let server_meta = json!({ envelope::SERVER_INFO: { "name": "bondry", "version": settings.server_version } });
        Ok(Self { supported: modern.into_iter().map(Revision::as_str).collect(), settings, server_meta })
    }

    /// `_meta` every modern result carries.
    fn server_meta(&self) -> Value {
        self.server_meta.clone()
    }

    /// Checks the request head before the body is read.
    pub fn admit(&self, method: &Method, headers: &HeaderMap) -> Result<(), Error> {
        head::admit(method, headers)
    }

    /// Takes one request body through framing, era choice and the method's checks.
    pub fn receive(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        realm: &Arc<RealmSnapshot>,
        principal: &Principal,
        now: SystemTime,
        rng: &mut dyn Csprng,
    ) -> Step {
        use jsonrpc::{FramingError, Message};
        let message = match jsonrpc::parse(body) {
            Ok(message) => message,
            Err(FramingError::Parse) => return Error::Parse.into(),
            Err(FramingError::Invalid { id, reason }) => return Error::InvalidRequest { id, reason }.into(),
        };
        match message {
            Message::Response => {
                Error::InvalidRequest { id: None, reason: "clients do not send responses to this endpoint" }.into()
            }
            // Modern notifications need no headers; only a claim of the wrong type is refused.
            // `notifications/cancelled` is accepted and ignored: closing the stream cancels.
            Message::Notification { params, .. } => match envelope::claim(params.as_ref()) {
                Some(claim) if !claim.is_string() => {
                    Error::InvalidEnvelope { id: None, missing: vec![], invalid: vec![envelope::PROTOCOL_VERSION] }
                        .into()
                }
                _ => Step::Reply(Reply::accepted()),
            },
            Message::Request { id, method, params } => {
                let params = params.unwrap_or_default();
                if envelope::claim(Some(&params)).is_some() {
                    modern::receive(self, headers, body.len(), id, &method, &params, realm, principal, now, rng)
                } else {
                    self.unclaimed(headers, id, &method, &params).into()
                }
            }
        }
    }

    /// A request without a modern claim, on an endpoint with no handshake revision.
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
        let offered = (method == "initialize").then(|| params.get("protocolVersion").and_then(Value::as_str)).flatten();
        let requested = offered.or(header).unwrap_or("2025-03-26").to_owned();
        Error::UnsupportedVersion { id: Some(id), supported: self.supported.clone(), requested }
    }

    /// Shapes the outcome of a dispatched call into its reply and audit record.
    pub fn complete(&self, call: Call, outcome: Outcome, now: SystemTime) -> Reply {
        let result =
            tools::call_result(&outcome, call.invocation.as_str(), &self.server_meta, call.capability.id().as_str());
        let audit_outcome = match &outcome {
            Outcome::Answered(bondry_core::handler::Answer::InputRequired { .. }) => AuditOutcome::HandlerFailed,
            _ => outcome.audit_outcome(),
        };
        let body = jsonrpc::result_body(&call.id, &result);
        let mut record = call.into_record(audit_outcome, now);
        record.result_sha256 = Some(Digest::of(result, body.len()));
        Reply::json(StatusCode::OK, body).audited(record)
    }
}

use jsonrpc::Id;

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
    received: SystemTime,
    /// The size of the request body, a bound on the arguments' serialised size.
    body_len: usize,
}

impl Call {
    fn new(request: modern::Request<'_>, admitted: tools::Admitted, rng: &mut dyn Csprng) -> Self {
        let mut bytes = [0; 16];
        rng.fill(&mut bytes);
        Self {
            realm: Arc::clone(request.realm),
            capability: admitted.capability,
            id: request.id,
            arguments: admitted.arguments,
            invocation: InvocationId::from_random(bytes),
            principal: request.principal.clone(),
            client_capabilities: request.envelope.client_capabilities,
            trace: request.envelope.trace,
            retry: admitted.retry,
            received: request.now,
            body_len: request.body_len,
        }
    }

    /// The capability to invoke.
    pub fn capability(&self) -> &Capability {
        &self.capability
    }

    pub fn invocation(&self) -> &InvocationId {
        &self.invocation
    }

    /// The handler's view of this call.
    pub fn handler_request(
        &self,
        cancellation: Arc<dyn Cancellation>,
        emitter: Arc<dyn Emitter>,
        publisher: Arc<dyn Publisher>,
    ) -> HandlerRequest {
        HandlerRequest {
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
        if self.capability.descriptor.audit_arguments {
            record.arguments = Some(arguments.clone());
        }
        record.arguments_sha256 = Some(Digest::of(arguments, self.body_len));
        record
    }
}
