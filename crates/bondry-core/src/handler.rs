//! The handler interface: what a capability's code is given and what it may answer.
//!
//! Handlers are async and must be cancel-safe: the runtime drops the future when the
//! caller goes away. They never talk to the client directly; a handler that needs input
//! answers [`Answer::InputRequired`] and is called again with the client's responses.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::BoxFuture;
use crate::backend::BackendKind;
use crate::capability::CapabilityKind;
use crate::policy::Principal;

/// Code behind one or more capabilities.
pub trait Handler: Send + Sync + 'static {
    /// Serves one call, read or get.
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer>;

    /// Suggests values for an argument of a prompt or resource template. `request` says
    /// who asks, in which realm, and carries the cancellation; its arguments are empty.
    /// The default offers nothing.
    fn complete(&self, request: HandlerRequest, query: CompletionQuery) -> BoxFuture<'static, CompletionAnswer> {
        let _ = (request, query);
        Box::pin(std::future::ready(Ok(Completion::default())))
    }

    /// Someone follows the updates of the resource at `uri`, which this handler serves (a
    /// session's subscription, a listen stream's filter): a backend may ask its upstream
    /// for them. Every call is balanced by one [`Handler::unwatch`], made when the
    /// [`Watching`] it belongs to drops. The default does nothing.
    fn watch(&self, uri: &str) {
        let _ = uri;
    }

    /// One follower of `uri` fewer; see [`Handler::watch`].
    fn unwatch(&self, uri: &str) {
        let _ = uri;
    }

    /// Starts `request` as a task that keeps running after the caller's request ends, and
    /// hands back its handle; or answers at once, as [`Handler::call`] would, a handler
    /// that cannot run it so. The default answers at once. Called through
    /// `dispatch::start_task`, which validates the arguments first and checks an answer.
    fn start_task(&self, request: HandlerRequest) -> BoxFuture<'static, Started> {
        let answer = self.call(request);
        Box::pin(async move { Started::Answered(answer.await) })
    }
}

/// What [`Handler::start_task`] began.
pub enum Started {
    /// A task, still running.
    Task(Box<dyn BackendTask>),
    /// An answer, given at once.
    Answered(Answer),
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Started::Task(_) => f.write_str("Started::Task"),
            Started::Answered(answer) => f.debug_tuple("Started::Answered").field(answer).finish(),
        }
    }
}

/// A call that keeps running after its caller's request ended, as its backend holds it.
/// The Tasks extension reads and steers it through this handle.
pub trait BackendTask: Send + Sync {
    /// Where the task stands now.
    fn get(&self) -> BoxFuture<'_, TaskState>;
    /// The client's answers to the input the task asked for, keyed as it asked.
    fn update(&self, responses: BTreeMap<String, Value>) -> BoxFuture<'_, Result<(), TaskRefused>>;
    /// Asks the task to stop; it ends cancelled unless it had finished.
    fn cancel(&self) -> BoxFuture<'_, ()>;
}

/// Where a backend task stands.
#[derive(Debug)]
pub enum TaskState {
    Working {
        message: Option<String>,
    },
    /// Waits for [`BackendTask::update`] with answers to these requests.
    InputRequired {
        requests: BTreeMap<String, InputRequest>,
    },
    /// Its answer, as the call would have given it.
    Finished(Answer),
    Cancelled,
}

/// Why a task refused an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TaskRefused {
    #[error("the task is not waiting for input")]
    NotWaiting,
    #[error("the task has ended")]
    Ended,
}

/// One follower of a resource's updates, told to the handler serving it: made by
/// `dispatch::watch`, unwatched when dropped.
pub struct Watching {
    handler: Arc<dyn Handler>,
    uri: String,
}

impl Watching {
    pub(crate) fn new(handler: Arc<dyn Handler>, uri: &str) -> Self {
        handler.watch(uri);
        Self { handler, uri: uri.to_owned() }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.handler.unwatch(&self.uri);
    }
}

impl std::fmt::Debug for Watching {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watching").field("uri", &self.uri).finish_non_exhaustive()
    }
}

/// Everything a handler is called with.
pub struct HandlerRequest {
    /// The capability being served: one handler may serve several (its configured ones
    /// and the dynamic ones it published).
    pub capability: crate::capability::CapabilityId,
    /// The capability's output schema, compiled (a tool's, when it has one): what its
    /// structured content is held to after the handler answers. A handler that answers
    /// otherwise when a backend's answer fails it checks it here rather than compiling a
    /// copy of its own.
    pub output: Option<crate::schema::CompiledSchema>,
    pub arguments: Value,
    /// The URI a resource read names: the static resource's own, or the one a template
    /// matched, whose variables are `arguments`.
    pub uri: Option<String>,
    pub realm: String,
    pub principal: Principal,
    pub invocation: InvocationId,
    pub trace: TraceContext,
    /// The client capabilities declared for this request, opaque to the core.
    pub client_capabilities: Value,
    pub cancellation: Arc<dyn Cancellation>,
    pub emitter: Arc<dyn Emitter>,
    pub publisher: Arc<dyn Publisher>,
    /// On a retry after [`Answer::InputRequired`]: the client's responses and the state
    /// the handler returned before.
    pub retry: Option<Retry>,
    /// Where a handler that relays to a backend notes which and how long, for the audit.
    pub backend: Arc<BackendNote>,
}

/// What a handler that relays to a backend leaves for the call's audit record: which
/// backend, and how long it took over every time it was asked in this call. A builtin
/// handler notes nothing: the adapter times its runs by its own clock.
#[derive(Debug, Default)]
pub struct BackendNote {
    taken: Mutex<Option<Taken>>,
}

/// What a [`BackendNote`] holds at the end of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub kind: BackendKind,
    pub backend: String,
    /// The time the backend took in all.
    pub took: Duration,
}

impl BackendNote {
    /// The call went to `backend`, of `kind`, which answered in `took`.
    pub fn record(&self, kind: BackendKind, backend: &str, took: Duration) {
        let mut taken = self.taken.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match &mut *taken {
            Some(noted) if noted.kind == kind && noted.backend == backend => noted.took += took,
            noted => *noted = Some(Taken { kind, backend: backend.to_owned(), took }),
        }
    }

    /// The backend noted, and the time it took in all.
    pub fn taken(&self) -> Option<Taken> {
        self.taken.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

/// The input a client supplied on a retry, keyed as the handler keyed its requests.
#[derive(Debug, Clone, Default)]
pub struct Retry {
    pub responses: BTreeMap<String, Value>,
    pub state: Option<Value>,
    /// The same over every round of one exchange: a replay key for a handler that wants
    /// its exchange to complete once only. `None` before the first state was sealed.
    pub continuation: Option<String>,
}

/// A unique id for one invocation, minted from the injected random source.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InvocationId(String);

impl InvocationId {
    pub fn from_random(bytes: [u8; 16]) -> Self {
        Self(crate::canon::hex(&bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// W3C trace context, passed to backends unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub baggage: Option<String>,
}

impl TraceContext {
    /// The `traceparent`, when W3C Trace Context says it is well-formed: lowercase hex
    /// fields `version-trace_id-parent_id-flags` of 2, 32, 16 and 2 digits, the version not
    /// `ff`, neither id all zeros; a later version may add fields after them, version 00
    /// may not. Only such a value is passed on to a backend.
    pub fn traceparent(&self) -> Option<&str> {
        let value = self.traceparent.as_deref()?;
        let hex = |field: &str, len: usize| {
            field.len() == len && field.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let mut fields = value.splitn(5, '-');
        let (version, trace_id, parent_id, flags) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
        let rest = fields.next();
        let formed = hex(version, 2)
            && version != "ff"
            && hex(trace_id, 32)
            && trace_id.bytes().any(|b| b != b'0')
            && hex(parent_id, 16)
            && parent_id.bytes().any(|b| b != b'0')
            && hex(flags, 2)
            && (rest.is_none() || version != "00")
            && value.len() <= 512
            && value.bytes().all(|b| b.is_ascii_graphic());
        formed.then_some(value)
    }

    /// The `tracestate` to pass on beside a well-formed `traceparent`: at most 512 bytes
    /// of printable ASCII, as W3C Trace Context bounds it.
    pub fn tracestate(&self) -> Option<&str> {
        self.traceparent()?;
        let value = self.tracestate.as_deref()?;
        (value.len() <= 512 && value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())).then_some(value)
    }

    /// The trace id of a well-formed `traceparent`, for audit records.
    pub fn trace_id(&self) -> Option<&str> {
        self.traceparent()?.split('-').nth(1)
    }
}

/// Tells a handler whether its caller is gone.
pub trait Cancellation: Send + Sync {
    fn is_cancelled(&self) -> bool;
    /// Resolves once the call is cancelled.
    fn cancelled(&self) -> BoxFuture<'_, ()>;
}

/// Progress and log messages about the running call.
pub trait Emitter: Send + Sync {
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);
    fn log(&self, level: LogLevel, logger: Option<String>, data: Value);

    /// What the caller asked to hear, so that a backend asks its upstream for no more.
    /// The default: nothing.
    fn wants(&self) -> Wants {
        Wants::default()
    }
}

/// The notifications a caller asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wants {
    pub progress: bool,
    /// The least severe log level wanted; `None` for no log messages.
    pub log_level: Option<LogLevel>,
}

/// Changes a handler announces to other clients.
pub trait Publisher: Send + Sync {
    /// The resource at `uri` changed.
    fn resource_updated(&self, uri: &str);
    /// Replaces the handler's own dynamic capabilities, merged into every snapshot rebuild.
    fn set_dynamic(&self, capabilities: Vec<crate::capability::Descriptor>);
}

/// Syslog severities, as MCP logging uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub const ALL: [LogLevel; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The syslog name: `debug` … `emergency`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == name)
    }
}

/// What a handler answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A plain tool result.
    Value(Value),
    /// Content blocks, with optional structured content.
    Content { blocks: Vec<ContentBlock>, structured: Option<Value> },
    /// A prompt result.
    Messages { description: Option<String>, messages: Vec<Message> },
    /// A resource or template read result.
    Contents { items: Vec<ResourceContents> },
    /// A tool-level error the caller may see and act on.
    ToolError {
        code: String,
        retryable: bool,
        content: Option<Vec<ContentBlock>>,
        /// What the caller may learn beside the code, in the adapter's wire form: a
        /// relayed upstream's own error code and message.
        detail: Option<Value>,
    },
    /// The handler needs input from the client before it can answer.
    InputRequired { requests: BTreeMap<String, InputRequest>, state: Option<Value> },
    /// A failure with a stable code. The handler's own reasons never reach the caller;
    /// `detail` does, as [`Answer::ToolError`]'s: a relayed upstream's error code and message.
    Failure { code: String, detail: Option<Value> },
    /// The caller lacks client capabilities a backend's upstream needs to answer: the
    /// capabilities `required`, in the adapter's wire form. Refused as the adapter refuses
    /// a capability whose own requirement the caller does not meet.
    MissingClientCapability { required: Value },
    /// A result as a backend's upstream answered it, in the adapter's wire form, for the
    /// capability's own kind: the adapter passes it through, replacing only the keys that
    /// are Bondry's own. `tool_error` says whether it reports a tool error, which the core
    /// cannot read from the wire. Not held to the output schema: the upstream owns it.
    Relayed { result: Value, tool_error: bool },
}

impl Answer {
    /// Whether a capability of `kind` may answer this: only a tool answers a value, content
    /// or a tool error, a prompt messages, a resource or template contents; any kind may ask
    /// for input, fail, or pass an upstream's answer through.
    pub fn allowed_for(&self, kind: CapabilityKind) -> bool {
        use CapabilityKind::*;
        match self {
            Self::InputRequired { .. }
            | Self::Failure { .. }
            | Self::Relayed { .. }
            | Self::MissingClientCapability { .. } => true,
            Self::Value(_) | Self::Content { .. } | Self::ToolError { .. } => kind == Tool,
            Self::Messages { .. } => kind == Prompt,
            Self::Contents { .. } => matches!(kind, Resource | ResourceTemplate),
        }
    }
}

/// A neutral content block, shaped into the adapter's wire form.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    Text { text: String },
    Image { data: String, mime_type: String },
    Audio { data: String, mime_type: String },
    Resource(ResourceContents),
    ResourceLink { uri: String, name: String, mime_type: Option<String>, description: Option<String> },
}

/// The contents of one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceContents {
    pub uri: String,
    pub mime_type: Option<String>,
    pub body: ResourceBody,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ResourceBody {
    Text(String),
    /// Base64 of the bytes.
    Blob(String),
}

/// One message of a prompt result.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: ContentBlock,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// Something a handler asks the client for.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    pub kind: InputKind,
    /// The request's parameters, as the adapter's wire defines them.
    pub params: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Elicitation,
    Sampling,
    Roots,
}

/// A completion query for one argument.
#[derive(Debug, Clone)]
pub struct CompletionQuery {
    pub capability: crate::capability::CapabilityId,
    pub argument: String,
    pub value: String,
    /// Values of other arguments already chosen.
    pub context: BTreeMap<String, String>,
}

/// What a completion hook answers: suggestions, or a failure with a stable code.
pub type CompletionAnswer = Result<Completion, CompletionFailed>;

/// A completion hook that could not answer; the code is stable, the detail never reaches
/// the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionFailed {
    pub code: String,
}

/// Suggested values for a completion query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    pub values: Vec<String>,
    pub total: Option<u64>,
    pub has_more: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_note_sums_what_a_relay_records() {
        let note = BackendNote::default();
        assert_eq!(note.taken(), None, "nothing reached");
        note.record(BackendKind::UPSTREAM, "up", Duration::from_millis(3));
        note.record(BackendKind::UPSTREAM, "up", Duration::from_millis(4));
        let relayed = Taken { kind: BackendKind::UPSTREAM, backend: "up".into(), took: Duration::from_millis(7) };
        assert_eq!(note.taken(), Some(relayed));
    }
}
