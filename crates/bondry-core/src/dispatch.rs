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
use crate::handler::{
    Answer, BackendTask, Completion, CompletionFailed, CompletionQuery, HandlerRequest, Started, Watching,
};
use crate::policy::Principal;
use crate::realm::RealmSnapshot;
use crate::registry::Capability;
use crate::schema::Violations;
use serde_json::{Map, Value};

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

/// What a resource URI refers to in a caller's view.
#[derive(Debug)]
pub enum ResourceResolution {
    /// A static resource (empty arguments), or a template with the URI's variables as
    /// its arguments, typed as the template's input schema says.
    Visible {
        capability: Arc<Capability>,
        arguments: Value,
    },
    /// A visible template matched, but a variable could not be read as its type.
    InvalidVariables(Arc<Capability>),
    Hidden(HiddenReason),
}

/// Looks `uri` up in `principal`'s view: a static resource first, then the templates in
/// the order they were registered (the configured ones, then each backend's as its realm
/// ranks them). A template the caller cannot see is passed over, as if it did not exist.
pub fn resolve_resource(
    snapshot: &RealmSnapshot,
    principal: &Principal,
    adapter: &str,
    uri: &str,
) -> ResourceResolution {
    let permits = |capability: &Capability| snapshot.policy.permits(principal, adapter, capability.id());
    let mut hidden = HiddenReason::NotFound;
    if let Some(resource) = snapshot.catalogue.resource(uri) {
        if permits(resource) {
            return ResourceResolution::Visible {
                capability: Arc::clone(resource),
                arguments: Value::Object(Map::new()),
            };
        }
        hidden = HiddenReason::Denied;
    }
    for capability in snapshot.catalogue.templates_by_precedence() {
        let Some(matched) = capability.template.as_ref().and_then(|template| template.matches(uri)) else {
            continue;
        };
        if !permits(capability) {
            hidden = HiddenReason::Denied;
            continue;
        }
        let schema = &capability.descriptor.input_schema;
        let arguments = matched.ok().and_then(|values| {
            values.into_iter().map(|(name, raw)| Some((name.to_owned(), typed(schema, name, raw)?))).collect()
        });
        return match arguments {
            Some(arguments) => {
                ResourceResolution::Visible { capability: Arc::clone(capability), arguments: Value::Object(arguments) }
            }
            None => ResourceResolution::InvalidVariables(Arc::clone(capability)),
        };
    }
    ResourceResolution::Hidden(hidden)
}

/// Tells the handler that serves `uri` in `principal`'s view that the principal follows
/// its updates, until the [`Watching`] drops; `None` when the principal can read nothing
/// there. The same capability a read would reach: a template hidden from the principal
/// is passed over.
pub fn watch(snapshot: &RealmSnapshot, principal: &Principal, adapter: &str, uri: &str) -> Option<Watching> {
    match resolve_resource(snapshot, principal, adapter, uri) {
        ResourceResolution::Visible { capability, .. } => Some(Watching::new(Arc::clone(&capability.handler), uri)),
        ResourceResolution::InvalidVariables(_) | ResourceResolution::Hidden(_) => None,
    }
}

/// A URI variable as the type its property in `schema` declares: integers, numbers and
/// booleans are parsed (`None` when the text is not one); anything else stays a string.
fn typed(schema: &Value, name: &str, raw: String) -> Option<Value> {
    let declared = schema.get("properties").and_then(|p| p.get(name)).and_then(|p| p.get("type"));
    Some(match declared.and_then(Value::as_str) {
        Some("integer") => Value::from(raw.parse::<i64>().ok()?),
        Some("number") => Value::from(raw.parse::<f64>().ok().filter(|n| n.is_finite())?),
        Some("boolean") => match raw.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return None,
        },
        _ => Value::String(raw),
    })
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
    InvalidInput(Violations),
    /// The handler failed, or answered something the capability may not answer.
    Failed { code: String },
    /// A completion hook answered.
    Completed(Completion),
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
            Self::Answered(Answer::ToolError { .. } | Answer::Relayed { tool_error: true, .. }) => {
                AuditOutcome::ToolError
            }
            Self::Answered(Answer::InputRequired { .. }) => AuditOutcome::InputRequired,
            // The caller's shortcoming, as when the adapter refuses it before dispatch.
            Self::Answered(Answer::MissingClientCapability { .. }) => AuditOutcome::InvalidInput,
            Self::Answered(Answer::Failure { .. }) | Self::Failed { .. } => AuditOutcome::HandlerFailed,
            Self::Answered(_) => AuditOutcome::Succeeded,
            Self::InvalidInput(_) => AuditOutcome::InvalidInput,
            Self::Completed(_) => AuditOutcome::Succeeded,
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
    match answer {
        Some(answer) => checked(capability, answer),
        None => Outcome::Failed { code: failure::HANDLER_PANICKED.to_owned() },
    }
}

/// As [`invoke`], for a call that may go on as a task after its request ends: validates
/// `request.arguments`, then has the handler start it, and hands back the task's handle,
/// or the outcome of a call answered at once (checked as [`invoke`] checks it).
pub async fn start_task(capability: &Capability, request: HandlerRequest) -> Result<Box<dyn BackendTask>, Outcome> {
    if let Err(violations) = capability.input.validate(&request.arguments) {
        return Err(Outcome::InvalidInput(violations));
    }
    let started = match panic::catch_unwind(AssertUnwindSafe(|| capability.handler.start_task(request))) {
        Ok(future) => CatchUnwind(future).await,
        Err(_) => None,
    };
    match started {
        Some(Started::Task(task)) => Ok(task),
        Some(Started::Answered(answer)) => Err(checked(capability, answer)),
        None => Err(Outcome::Failed { code: failure::HANDLER_PANICKED.to_owned() }),
    }
}

/// The outcome of `answer`: refused when the capability's kind may not answer it, or its
/// structured result fails the output schema.
fn checked(capability: &Capability, answer: Answer) -> Outcome {
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

/// Most values a completion offers; the rest are left out and `hasMore` set.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// Runs `capability`'s completion hook for `query`, asked by `request`'s caller; a hook
/// that panics or fails fails the completion.
pub async fn complete(capability: &Capability, request: HandlerRequest, query: CompletionQuery) -> Outcome {
    let completion = match panic::catch_unwind(AssertUnwindSafe(|| capability.handler.complete(request, query))) {
        Ok(future) => CatchUnwind(future).await,
        Err(_) => None,
    };
    let mut completion = match completion {
        None => return Outcome::Failed { code: failure::HANDLER_PANICKED.to_owned() },
        Some(Err(CompletionFailed { code })) => return Outcome::Failed { code },
        Some(Ok(completion)) => completion,
    };
    if completion.values.len() > MAX_COMPLETION_VALUES {
        completion.values.truncate(MAX_COMPLETION_VALUES);
        completion.has_more = Some(true);
    }
    Outcome::Completed(completion)
}

/// Polls a handler's future, turning a panic into `None`.
struct CatchUnwind<'a, T>(BoxFuture<'a, T>);

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match panic::catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Ready(answer)) => Poll::Ready(Some(answer)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(None),
        }
    }
}
