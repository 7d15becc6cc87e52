//! Resolve, then invoke: the two halves of dispatch an adapter runs its own checks between.
//!
//! [`resolve`] is pure and answers the same [`Resolution::Hidden`] for a capability that
//! does not exist and one the caller may not see; only the audit reason differs.
//! [`invoke`] validates the input, runs the handler, checks its answer against the
//! capability's kind and output schema, and reports an [`Outcome`].

use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::BoxFuture;
use crate::audit::AuditOutcome;
use crate::capability::CapabilityKind;
use crate::handler::{Answer, HandlerRequest};
use crate::policy::Principal;
use crate::realm::RealmSnapshot;
use crate::registry::Capability;
use crate::schema::Violation;

/// What a caller's name refers to in its view.
#[derive(Debug)]
pub enum Resolution {
    Visible(Arc<Capability>),
    Hidden(HiddenReason),
}

/// Why a name resolved to nothing. Recorded in audit, never shown to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenReason {
    NotFound,
    Denied,
}

impl HiddenReason {
    pub fn audit_outcome(self) -> AuditOutcome {
        match self {
            Self::NotFound => AuditOutcome::NotFound,
            Self::Denied => AuditOutcome::Denied,
        }
    }
}

/// Looks `name` up as a capability of `kind` in `principal`'s view through `adapter`.
pub fn resolve(
    snapshot: &RealmSnapshot,
    principal: &Principal,
    adapter: &str,
    kind: CapabilityKind,
    name: &str,
) -> Resolution {
    match snapshot.catalogue.get(name) {
        Some(capability) if capability.kind() == kind => {
            if snapshot.policy.permits(principal, adapter, capability.id()) {
                Resolution::Visible(Arc::clone(capability))
            } else {
                Resolution::Hidden(HiddenReason::Denied)
            }
        }
        _ => Resolution::Hidden(HiddenReason::NotFound),
    }
}

/// Whether `capability` is in `principal`'s view through `adapter`.
pub fn visible(snapshot: &RealmSnapshot, principal: &Principal, adapter: &str, capability: &Capability) -> bool {
    snapshot.policy.permits(principal, adapter, capability.id())
}

/// How an invocation ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The handler answered something its kind allows, and it passed the output schema.
    Answered(Answer),
    /// The arguments failed the input schema; the handler was not called.
    InvalidInput(Vec<Violation>),
    /// The handler failed, or answered something the capability may not answer.
    Failed { code: String },
}

/// Failure codes the core itself assigns.
pub mod failure {
    /// The handler answered a kind its capability may not answer.
    pub const WRONG_ANSWER_KIND: &str = "wrong_answer_kind";
    /// The structured result broke the output schema, or was missing while one is declared.
    pub const INVALID_OUTPUT: &str = "invalid_output";
    /// The handler panicked.
    pub const HANDLER_PANICKED: &str = "handler_panicked";
}

impl Outcome {
    pub fn audit_outcome(&self) -> AuditOutcome {
        match self {
            Self::Answered(Answer::ToolError { .. }) => AuditOutcome::ToolError,
            Self::Answered(Answer::InputRequired { .. }) => AuditOutcome::InputRequired,
            Self::Answered(Answer::Failure { .. }) | Self::Failed { .. } => AuditOutcome::HandlerFailed,
            Self::Answered(_) => AuditOutcome::Succeeded,
            Self::InvalidInput(_) => AuditOutcome::InvalidInput,
        }
    }
}

/// Validates `request.arguments`, runs the handler and checks its answer.
pub async fn invoke(capability: &Capability, request: HandlerRequest) -> Outcome {
    if let Err(violations) = capability.input.validate(&request.arguments) {
        return Outcome::InvalidInput(violations);
    }
    // A panicking handler fails its own call, not the connection or the server.
    let answer = match panic::catch_unwind(AssertUnwindSafe(|| capability.handler.call(request))) {
        Ok(future) => CatchUnwind(future).await,
        Err(_) => None,
    };
    let Some(answer) = answer else {
        return Outcome::Failed { code: failure::HANDLER_PANICKED.to_owned() };
    };
    if !answer.allowed_for(capability.kind()) {
        return Outcome::Failed { code: failure::WRONG_ANSWER_KIND.to_owned() };
    }
    if let Some(output) = &capability.output {
        let structured = match &answer {
            Answer::Value(value) => Some(Some(value)),
            Answer::Content { structured, .. } => Some(structured.as_ref()),
            _ => None,
        };
        if let Some(structured) = structured
            && structured.is_none_or(|value| output.validate(value).is_err())
        {
            return Outcome::Failed { code: failure::INVALID_OUTPUT.to_owned() };
        }
    }
    Outcome::Answered(answer)
}

/// Polls a handler's future, turning a panic into `None`.
struct CatchUnwind<'a>(BoxFuture<'a, Answer>);

impl Future for CatchUnwind<'_> {
    type Output = Option<Answer>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match panic::catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Ready(answer)) => Poll::Ready(Some(answer)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(None),
        }
    }
}
