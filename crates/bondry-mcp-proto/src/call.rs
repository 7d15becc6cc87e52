//! A call that passed every check: what the runtime runs through the core, and what its
//! reply and audit record are made from.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bondry_core::BoxFuture;
use bondry_core::audit::{AuditOutcome, AuditRecord, Digest};
use bondry_core::backend::BackendKind;
use bondry_core::dispatch::{self, Outcome};
use bondry_core::handler::{
    BackendNote, Cancellation, CompletionQuery, Emitter, HandlerRequest, InvocationId, Publisher, Retry, TraceContext,
};
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use bondry_core::registry::Capability;
use serde_json::Value;

use crate::error::{Context, Error};
use crate::jsonrpc::Id;
use crate::reply::Reply;
use crate::session::SessionRef;
use crate::vocabulary::{ADAPTER, Csprng};
use crate::{notify, request, state};

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
    pub(crate) realm: Arc<RealmSnapshot>,
    pub(crate) capability: Arc<Capability>,
    pub(crate) id: Id,
    pub(crate) arguments: Value,
    pub(crate) invocation: InvocationId,
    pub(crate) principal: Principal,
    pub(crate) client_capabilities: Value,
    pub(crate) trace: TraceContext,
    pub(crate) retry: Option<Retry>,
    pub(crate) completion: Option<CompletionQuery>,
    pub(crate) uri: Option<String>,
    pub(crate) continuation: Option<String>,
    /// The method the call answers, which a `requestState` is bound to.
    pub(crate) method: String,
    pub(crate) notifier: notify::Notifier,
    pub(crate) received: SystemTime,
    /// The size of the request body, a bound on the arguments' serialised size.
    pub(crate) body_len: usize,
    pub(crate) session: Option<SessionRef>,
    /// What a relaying handler noted, over every round of the call.
    pub(crate) backend: Arc<BackendNote>,
    /// A builtin handler's runs, timed here: the core reads no clock.
    pub(crate) runs: Runs,
    /// The tool the caller called to reach this one (`bondry.call`), when not directly.
    pub(crate) via: Option<&'static str>,
}

/// The time a builtin handler ran over the rounds of a call, by the driver's clock: from
/// when each run was invoked to its outcome (its arguments' validation, microseconds,
/// included); a run refused for invalid input never reached the handler.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    invoked: Option<SystemTime>,
    /// Over the runs that reached the handler; `None` while none did.
    spent: Option<Duration>,
}

impl Runs {
    pub(crate) fn invoked(&mut self, at: SystemTime) {
        self.invoked = Some(at);
    }

    /// The run under way ended at `at`, having `reached` the handler or not.
    pub(crate) fn ended(&mut self, at: SystemTime, reached: bool) {
        if let Some(invoked) = self.invoked.take()
            && reached
        {
            let run = at.duration_since(invoked).unwrap_or(Duration::ZERO);
            self.spent = Some(self.spent.unwrap_or_default() + run);
        }
    }
}

impl Call {
    pub(crate) fn new(request: request::Request<'_>, admitted: Admitted, rng: &mut dyn Csprng) -> Self {
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
            backend: Arc::default(),
            runs: Runs::default(),
            via: request.via,
        }
    }

    /// The capability to invoke.
    pub fn capability(&self) -> &Capability {
        &self.capability
    }

    /// Runs the call through the core: the handler, or for `completion/complete` its
    /// completion hook.
    pub fn invoke(&self, request: HandlerRequest) -> BoxFuture<'static, Outcome> {
        // The future holds its own capability, so the call is free while it runs.
        let capability = Arc::clone(&self.capability);
        match self.completion.clone() {
            Some(query) => Box::pin(async move { dispatch::complete(&capability, request, query).await }),
            None => Box::pin(async move { dispatch::invoke(&capability, request).await }),
        }
    }

    pub fn invocation(&self) -> &InvocationId {
        &self.invocation
    }

    /// What a `requestState` sealed by this call is bound to.
    pub(crate) fn binding(&self) -> state::Binding<'_> {
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
            output: self.capability.output.clone(),
            arguments: self.arguments.clone(),
            uri: self.uri.clone(),
            realm: self.realm.realm.clone(),
            principal: self.principal.clone(),
            invocation: self.invocation.clone(),
            trace: self.trace.clone(),
            client_capabilities: self.client_capabilities.clone(),
            cancellation,
            emitter,
            publisher,
            retry: self.retry.clone(),
            backend: Arc::clone(&self.backend),
        }
    }

    /// The audit record of this call ending with `outcome` at `now`.
    pub(crate) fn record(&self, outcome: AuditOutcome, now: SystemTime) -> AuditRecord {
        self.record_with(outcome, now, self.arguments.clone())
    }

    /// [`Call::record`], taking the arguments over instead of copying them: for the
    /// call's last record.
    pub(crate) fn take_record(&mut self, outcome: AuditOutcome, now: SystemTime) -> AuditRecord {
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
        record.via = self.via;
        if self.capability.descriptor.audit_arguments {
            record.arguments = Some(arguments.clone());
        }
        record.arguments_sha256 = Some(Digest::of(arguments, self.body_len));
        // The backend, once reached: a relay names it, a builtin's binding does.
        let binding = &self.capability.descriptor.binding;
        let reached = match (self.backend.taken(), self.runs.spent) {
            (Some(taken), _) => Some((taken.kind, taken.backend, taken.took)),
            (None, Some(spent)) if binding.kind == BackendKind::BUILTIN.as_str() => {
                Some((BackendKind::BUILTIN, binding.target.clone(), spent))
            }
            (None, _) => None,
        };
        if let Some((kind, backend, took)) = reached {
            record.backend_kind = Some(kind);
            record.backend = Some(backend);
            record.backend_duration_us = Some(took.as_micros() as u64);
        }
        record
    }
}

/// Why the runtime could not start a session call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotStarted {
    /// The session runs as many calls as it may.
    TooMany,
    /// A call with this request's id is still running.
    IdInFlight,
    /// The session ended meanwhile.
    SessionGone,
}

impl Call {
    /// The answer to a session call the runtime could not start, attributed to its
    /// session: JSON-RPC errors ride 200, a 429 keeps its status.
    pub fn not_started(&self, why: NotStarted) -> Reply {
        let id = Some(self.id.clone());
        let error = match why {
            NotStarted::TooMany => Error::TooManyRequests { id, retry_after_secs: 1 },
            NotStarted::IdInFlight => Error::InvalidRequest { id, reason: "a request with this id is still running" },
            NotStarted::SessionGone => Error::SessionNotFound { id },
        };
        Reply::error(error, Context::of(self.session.as_ref().map(|session| session.revision)))
    }
}
