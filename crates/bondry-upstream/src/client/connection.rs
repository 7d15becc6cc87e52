//! One live connection to one upstream, over either transport: opened with the era
//! negotiated, and every request, answer and notice Bondry sends on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bondry_mcp_proto::jsonrpc::{self, ErrorId, ErrorObject, Id};
use bondry_mcp_proto::{Era, Revision, envelope};
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::http::Http;
use super::negotiate::{self, Negotiated, Offer, Wire};
use super::stdio::Stdio;
use super::watched::{self, Router, Watch, Watchers};
use super::wire::{Frame, Ids};
use super::{ClientError, Inbox, Outgoing, owed};
use crate::spec::{TransportSpec, UpstreamSpec};

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
    /// `spec.tunables.connect_timeout`; notices it sends go to `inbox`.
    pub async fn open(spec: &UpstreamSpec, inbox: Inbox) -> Result<Self, ClientError> {
        let ids = Arc::new(Ids::default());
        let watchers = Arc::new(Watchers::default());
        let router = Router {
            inbox,
            watchers: Arc::clone(&watchers),
            owed: owed::Owed::new(spec.tunables.max_pending_server_requests),
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
            tokio::time::timeout(spec.tunables.connect_timeout, opening).await.map_err(|_| ClientError::Timeout)??;
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
