//! Bondry's MCP client: one live connection to one upstream MCP server, over Streamable
//! HTTP or stdio: the connection layer.
//!
//! ```text
//! Connection::open(&UpstreamSpec, Inbox) -> Result<Connection, ClientError>
//! Connection::revision(&self) -> Revision
//! Connection::server_capabilities(&self) -> &Value
//! Connection::server_info(&self) -> &Value
//! Connection::session(&self) -> Option<String>          // a handshake HTTP upstream's
//! Connection::renewals(&self) -> watch::Receiver<u64>   // its session initialized again
//! Connection::process_group(&self) -> Option<i32>       // a stdio child's
//! Connection::request(&self, Outgoing) -> Result<Value, ClientError>
//! Connection::prepare(&self, &Outgoing, Option<Watch>) -> Result<Prepared, ClientError>
//! Connection::send(&self, Prepared) -> Result<Value, ClientError>
//! Connection::respond(&self, &Id, Result<Value, (i64, String)>) -> Result<(), ClientError>
//! Connection::ended(&self) -> String                    // a stdio child exited or stalled
//! Connection::broken(&self) -> Option<String>           // why its stdin broke
//! Connection::notify(&self, &str, Value) -> Result<(), ClientError>
//! Connection::close(&self)
//! Inbox::channel(capacity) -> (Inbox, mpsc::Receiver<Notice>); Inbox::discard()
//! ```
//!
//! - [`Connection::open`] negotiates the era within `connect_timeout` ([`negotiate`]):
//!   `server/discover` at 2026-07-28 when offered, else or on any other answer
//!   `initialize` with the newest handshake revision offered.
//! - [`Connection::request`] resolves to the JSON-RPC `result` object; a JSON-RPC error
//!   is [`ClientError::Rpc`]. It has no timeout of its own (the caller applies
//!   `call_timeout`); a dead transport fails it at once. Dropping its future cancels it:
//!   `notifications/cancelled` to a handshake or stdio upstream, and the dropped response
//!   stream to a modern HTTP one.
//! - To a modern upstream every request carries the `_meta` envelope (with the
//!   [`Outgoing::client_capabilities`] of the caller) and, on HTTP, the routing headers.
//! - [`Connection::prepare`] writes a request at once (its id minted) and hands what the
//!   upstream says about it to its [`Watch`] ([`watched`] says which messages are a request's): progress and log
//!   messages, and the requests it makes of the caller, which [`Connection::respond`]
//!   answers.
//! - What the upstream sends on its own goes to the [`Inbox`]; its `ping` and
//!   `roots/list` are answered from the spec, any other request that is no watched
//!   call's is refused (-32603 `cannot attribute request`). At most
//!   `max_pending_server_requests` of its requests await Bondry's answer at once; past
//!   that one is refused at once (-32603, [`owed`]).
//! - A stdio child's stdin is written from a bounded queue by one task; a child that
//!   leaves it undrained for `stdin_stall_ms` ends the connection ([`Connection::ended`]).
//! - A message over `max_response_bytes` is logged and dropped; the request it answered
//!   fails with [`ClientError::TooLarge`] and the connection stays usable.
//! - [`Connection::close`] ends the connection (the HTTP session's DELETE; SIGTERM to a
//!   stdio child's process group, SIGKILL after 5 s); dropping the last clone of a
//!   connection ends its background tasks and kills a stdio child's group.
//!
//! Only the spec's headers reach an upstream: no credential of a caller enters here.
//!
//! Modules: `wire` (frames out, messages in), `negotiate` (the era), `http` and `stdio`
//! (the transports), `group` (a child's process group), `pending` (stdio requests
//! awaiting answers), `owed` (the upstream's requests awaiting Bondry's), `watched` (a request's own messages), `answer` (Bondry's answers to
//! the upstream's requests), `sse` and `lines` (bounded readers), `stderr` (a child's
//! stderr in the log), `inbox`, `error`.

mod answer;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod group;
mod http;
mod inbox;
mod lines;
mod negotiate;
mod owed;
mod pending;
mod sse;
mod stderr;
mod stdio;
mod watched;
mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bondry_mcp_proto::jsonrpc::{self, ErrorId, ErrorObject, Id};
use bondry_mcp_proto::{Era, Revision, envelope};
use serde_json::{Map, Value};
use tokio::sync::watch;

pub(crate) use answer::roots_result;
pub use error::ClientError;
pub use inbox::{Inbox, Notice};
pub use watched::{Asked, CALL_EVENTS, CallEvent, Watch};

use self::http::Http;
use self::negotiate::{Negotiated, Offer, Wire};
use self::stdio::Stdio;
use self::watched::{Router, Watchers};
use self::wire::{Frame, Ids};
use crate::spec::{TransportSpec, UpstreamSpec};

/// One request to an upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub method: String,
    pub params: Map<String, Value>,
    /// `Mcp-Name` to a modern upstream (the `tools/call` and `prompts/get` name, the
    /// `resources/read` uri).
    pub name: Option<String>,
    /// `Mcp-Param-{suffix}` headers for a modern `tools/call`: (suffix, value), chosen by
    /// the caller from the tool's `x-mcp-header` annotations; sentinel-encoded here.
    pub param_headers: Vec<(String, String)>,
    /// The caller's client capabilities, sent in a modern request's envelope (a handshake
    /// upstream was given Bondry's own at `initialize`).
    pub client_capabilities: Value,
}

impl Outgoing {
    /// A request of `method` with `params`, no routing name, no parameter headers and no
    /// client capabilities.
    pub fn new(method: impl Into<String>, params: Map<String, Value>) -> Self {
        Self {
            method: method.into(),
            params,
            name: None,
            param_headers: Vec::new(),
            client_capabilities: Value::Object(Map::new()),
        }
    }
}

/// A request written for one connection and not sent yet: its frame, and the watch of
/// what the upstream says about it, held until its answer.
pub struct Prepared {
    frame: Frame,
    id: String,
    _watched: Option<watched::Watched>,
}

/// A live connection to one upstream; clones share it.
#[derive(Clone)]
pub struct Connection(Arc<Inner>);

struct Inner {
    upstream: String,
    transport: Transport,
    negotiated: Negotiated,
    ids: Arc<Ids>,
    watchers: Arc<Watchers>,
    closed: AtomicBool,
    /// Never sent but by `close`; dropped with the connection. Either ends the
    /// background tasks that watch it.
    lives: watch::Sender<()>,
}

enum Transport {
    Http(Arc<Http>),
    Stdio(Stdio),
}

impl Wire for Transport {
    async fn exchange(&self, frame: Frame) -> Result<Value, ClientError> {
        match self {
            Self::Http(http) => http.exchange(frame).await,
            Self::Stdio(stdio) => stdio.exchange(frame).await,
        }
    }

    async fn send(&self, frame: Frame) -> Result<(), ClientError> {
        match self {
            Self::Http(http) => http.send(frame).await,
            Self::Stdio(stdio) => stdio.send(frame).await,
        }
    }
}

impl Connection {
    /// Connects to the upstream of `spec` and negotiates its era within
    /// `spec.connect_timeout`; notices it sends go to `inbox`.
    pub async fn open(spec: &UpstreamSpec, inbox: Inbox) -> Result<Self, ClientError> {
        let ids = Arc::new(Ids::default());
        let watchers = Arc::new(Watchers::default());
        let router = Router {
            inbox,
            watchers: Arc::clone(&watchers),
            owed: owed::Owed::new(spec.max_pending_server_requests),
            roots: spec.roots.clone(),
        };
        let opening = async {
            let transport = match &spec.transport {
                TransportSpec::Http { url, headers, ca_file, proxy } => Transport::Http(Arc::new(Http::new(
                    spec,
                    url,
                    headers,
                    ca_file.as_deref(),
                    proxy.as_ref(),
                    router,
                    Arc::clone(&ids),
                )?)),
                TransportSpec::Stdio { command, args, env, cwd } => {
                    Transport::Stdio(Stdio::start(spec, command, args, env, cwd.as_deref(), router)?)
                }
            };
            let offer = Offer { revisions: &spec.protocol_versions, url_elicitation: spec.allow_url_elicitation };
            let negotiated = negotiate::negotiate(&transport, offer, &ids).await?;
            Ok::<_, ClientError>((transport, negotiated))
        };
        // A transport dropped here (the timeout) ends what it started: a child is killed.
        let (transport, negotiated) =
            tokio::time::timeout(spec.connect_timeout, opening).await.map_err(|_| ClientError::Timeout)??;
        let (lives, gone) = watch::channel(());
        if let Transport::Http(http) = &transport {
            http.begin(negotiated.revision, gone);
        }
        tracing::info!(upstream = spec.name, revision = %negotiated.revision, "upstream connected");
        Ok(Self(Arc::new(Inner {
            upstream: spec.name.clone(),
            transport,
            negotiated,
            ids,
            watchers,
            closed: AtomicBool::new(false),
            lives,
        })))
    }

    pub fn revision(&self) -> Revision {
        self.0.negotiated.revision
    }

    /// The `capabilities` of the discover or initialize result.
    pub fn server_capabilities(&self) -> &Value {
        &self.0.negotiated.capabilities
    }

    /// The upstream's `serverInfo` (`Null` when it sent none).
    pub fn server_info(&self) -> &Value {
        &self.0.negotiated.server_info
    }

    /// The `Mcp-Session-Id` a handshake HTTP upstream gave, if it gave one.
    pub fn session(&self) -> Option<String> {
        match &self.0.transport {
            Transport::Http(http) => http.session_id(),
            Transport::Stdio(_) => None,
        }
    }

    /// Changes each time a handshake HTTP upstream's expired session is initialized again
    /// (the upstream restarted, say): what the old session held, such as resource
    /// subscriptions, is gone. Never changes for other connections (its sender may be gone).
    pub fn renewals(&self) -> watch::Receiver<u64> {
        match &self.0.transport {
            Transport::Http(http) => http.renewals(),
            Transport::Stdio(_) => watch::channel(0).1,
        }
    }

    /// A stdio child's process group id, which is its pid.
    pub fn process_group(&self) -> Option<i32> {
        match &self.0.transport {
            Transport::Http(_) => None,
            Transport::Stdio(stdio) => stdio.process_group(),
        }
    }

    /// Resolves, with why, once the connection is known dead without a request failing: a
    /// stdio child that exited, or that left its stdin undrained for `stdin_stall_ms`.
    /// Never for HTTP, whose failures only a request can see.
    pub async fn ended(&self) -> String {
        match &self.0.transport {
            Transport::Http(_) => std::future::pending().await,
            Transport::Stdio(stdio) => stdio.ended().await,
        }
    }

    /// Why a stdio child's connection broke before the child exited (its stdin stalled or
    /// failed), if it did.
    pub fn broken(&self) -> Option<String> {
        match &self.0.transport {
            Transport::Http(_) => None,
            Transport::Stdio(stdio) => stdio.broken(),
        }
    }

    /// Sends one request; resolves to its JSON-RPC `result` object. Dropping the future
    /// cancels the request upstream.
    pub async fn request(&self, request: Outgoing) -> Result<Value, ClientError> {
        let prepared = self.prepare(&request, None)?;
        self.send(prepared).await
    }

    /// Writes `request` for this connection, its id minted now, watched by `watch` when
    /// given: asked for progress, its progress token is the request's id; asked for a log
    /// level, a modern upstream is told in the request's `_meta`. Written from borrowed
    /// parts at once, so that a request sent again (a retry's next round) is not copied.
    pub fn prepare(&self, request: &Outgoing, watch: Option<Watch>) -> Result<Prepared, ClientError> {
        let id = self.0.ids.next();
        let revision = self.revision();
        let mut watching = [("", ""); 2];
        let mut count = 0;
        if let Some(watch) = &watch {
            if watch.progress {
                watching[count] = (envelope::PROGRESS_TOKEN, id.as_str());
                count += 1;
            }
            if let Some(level) = watch.log_level.as_deref().filter(|_| revision.era() == Era::Modern) {
                watching[count] = (envelope::LOG_LEVEL, level);
                count += 1;
            }
        }
        let watching = &watching[..count];
        let frame = match revision.era() {
            Era::Modern => Frame::modern_watched(Some(id.clone()), request, watching)?,
            Era::Handshake => Frame::handshake_watched(id.clone(), request, watching, revision),
        };
        let watched = watch.map(|watch| self.0.watchers.watch(&id, watch.events));
        Ok(Prepared { frame, id, _watched: watched })
    }

    /// Sends a request [`Connection::prepare`] wrote; resolves to its JSON-RPC `result`
    /// object. Dropping the future cancels the request upstream.
    pub async fn send(&self, prepared: Prepared) -> Result<Value, ClientError> {
        if self.0.closed.load(Ordering::Acquire) {
            return Err(ClientError::Closed);
        }
        let Prepared { frame, id, _watched } = prepared;
        let by_message = !matches!((&self.0.transport, self.revision().era()), (Transport::Http(_), Era::Modern));
        let mut cancel = CancelOnDrop { connection: by_message.then(|| self.clone()), id };
        let answer = self.0.transport.exchange(frame).await;
        cancel.connection = None;
        answer
    }

    /// Answers the request `id` the upstream made: its result, or a JSON-RPC error.
    pub async fn respond(&self, id: &Id, answer: Result<Value, (i64, String)>) -> Result<(), ClientError> {
        if self.0.closed.load(Ordering::Acquire) {
            return Err(ClientError::Closed);
        }
        let body = match &answer {
            Ok(result) => jsonrpc::result_body(id, result),
            Err((code, message)) => {
                jsonrpc::error_body(ErrorId::Id(id), &ErrorObject { code: *code, message, data: None })
            }
        };
        self.0.transport.send(Frame::response(self.revision(), body)).await
    }

    /// Sends one notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        if self.0.closed.load(Ordering::Acquire) {
            return Err(ClientError::Closed);
        }
        let params = match params {
            Value::Object(params) => params,
            Value::Null => Map::new(),
            _ => return Err(ClientError::Invalid("notification params must be an object".into())),
        };
        let frame = match self.revision() {
            Revision::V2026_07_28 => Frame::modern(None, &Outgoing::new(method, params))?,
            revision => Frame::handshake(None, method, params, Some(revision)),
        };
        self.0.transport.send(frame).await
    }

    /// Ends the connection: the HTTP session's DELETE; for stdio SIGTERM to the child's
    /// process group, SIGKILL after 5 s. Later requests fail with [`ClientError::Closed`].
    pub async fn close(&self) {
        if self.0.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.0.lives.send_replace(());
        match &self.0.transport {
            Transport::Http(http) => http.close().await,
            Transport::Stdio(stdio) => stdio.close().await,
        }
        tracing::info!(upstream = self.0.upstream, "upstream connection closed");
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("upstream", &self.0.upstream).field("revision", &self.revision()).finish()
    }
}

/// Armed while a request waits: dropped armed (the caller went away), it tells the
/// upstream with `notifications/cancelled`.
struct CancelOnDrop {
    connection: Option<Connection>,
    id: String,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let frame = Frame::cancelled(connection.revision(), &self.id);
        runtime.spawn(async move {
            if let Err(error) = connection.0.transport.send(frame).await {
                tracing::debug!(upstream = connection.0.upstream, %error, "cancellation not delivered");
            }
        });
    }
}
