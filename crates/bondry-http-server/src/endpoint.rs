//! The MCP endpoint: one request through admission, the body limit, authentication and
//! the adapter; a dispatched call through the core; a session's event stream.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bondry_core::audit::{AuditRecord, AuditSink};
use bondry_core::handler::Emitter;
use bondry_mcp_proto::error::Context;
use bondry_mcp_proto::listen::Subscription;
use bondry_mcp_proto::{
    ADAPTER, Adapter, Call, Conversation, Csprng, Effect, Error, Inbound, Next, NotStarted, SessionRef, Settle, Step,
};
use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http::header::{AUTHORIZATION, CONTENT_LENGTH, COOKIE, ORIGIN, PROXY_AUTHORIZATION};
use http::{HeaderMap, Method, Request};
use http_body_util::BodyExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admission::{self, OriginPolicy};
use crate::auth::{Authenticator, Rejected};
use crate::context::{EMITTED_QUEUE, SilentEmitter, StreamEmitter, TokenCancellation};
use crate::cors;
use crate::gauges::{Gauge, Gauges};
use crate::limits::{self, Bucket, Cidr};
use crate::publish::{Publications, RealmPublisher};
use crate::realm::{DEFAULT_REALM, RealmEntry};
use crate::session::{Owner, Refused, SessionLimits, Sessions};

/// Everything the endpoint of one listener needs.
pub struct Endpoint {
    pub adapter: Adapter,
    pub origins: OriginPolicy,
    pub loopback: bool,
    pub max_body_bytes: usize,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
    pub realms: Arc<std::collections::HashMap<String, RealmEntry>>,
    pub audit: Arc<dyn AuditSink>,
    /// Cancelled when shutdown begins: event streams end so connections can drain.
    pub shutdown: CancellationToken,
    /// Cancelled when the shutdown grace period is over: whatever is still running stops.
    pub hard_stop: CancellationToken,
    pub sessions: Arc<Sessions>,
    /// The calls running inside sessions, which outlive their requests: shutdown waits
    /// for them too.
    pub calls: TaskTracker,
    pub trusted_proxies: Vec<Cidr>,
    pub per_address: Option<Bucket>,
    /// Where handlers' publications go.
    pub publications: Arc<Publications>,
    pub gauges: Arc<Gauges>,
}

/// Where replies settle: the audit sink, and the session table with what opening a
/// session needs (the caller, its realm's limits and the credentials' epoch).
struct Settling<'a> {
    endpoint: &'a Endpoint,
    opener: Opener<'a>,
}

/// Who a reply's effect acts for.
#[derive(Clone, Copy)]
struct Opener<'a> {
    limits: &'a SessionLimits,
    epoch: &'a CancellationToken,
    owner: &'a Owner,
}

/// An [`Opener`] a call that outlives its request keeps.
struct OwnedOpener {
    limits: SessionLimits,
    epoch: CancellationToken,
    owner: Owner,
}

impl OwnedOpener {
    fn of(opener: Opener<'_>) -> Self {
        Self { limits: opener.limits.clone(), epoch: opener.epoch.clone(), owner: opener.owner.clone() }
    }

    fn borrow(&self) -> Opener<'_> {
        Opener { limits: &self.limits, epoch: &self.epoch, owner: &self.owner }
    }
}

impl Settle for Settling<'_> {
    fn record(&mut self, record: AuditRecord) {
        self.endpoint.audit.record(record);
    }

    fn apply(&mut self, effect: Effect) {
        let Opener { limits, epoch, owner } = self.opener;
        self.endpoint.sessions.apply(effect, limits, epoch, owner);
    }
}

impl Endpoint {
    fn settling<'a>(&'a self, opener: Opener<'a>) -> Settling<'a> {
        Settling { endpoint: self, opener }
    }

    /// The publisher of `call`'s handler.
    fn publisher(&self, call: &Call) -> Arc<RealmPublisher> {
        let capability = call.capability();
        Arc::new(RealmPublisher {
            publications: Arc::clone(&self.publications),
            realm: call.realm().to_owned(),
            binding: capability.descriptor.binding.clone(),
            handler: Arc::clone(&capability.handler),
        })
    }
}

/// How often an idle event stream carries a comment, so dead streams are noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The operating system's CSPRNG.
struct OsRandom;

impl Csprng for OsRandom {
    fn fill(&mut self, dest: &mut [u8]) {
        // Without entropy no id or nonce is safe to mint; there is no sane fallback.
        getrandom::fill(dest).expect("the operating system random source is available");
    }
}

pub async fn default_realm(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request<Body>,
) -> Response {
    serve(&endpoint, DEFAULT_REALM, peer, request).await
}

pub async fn named_realm(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(realm): Path<String>,
    request: Request<Body>,
) -> Response {
    serve(&endpoint, &realm, peer, request).await
}

/// Every path the router does not serve (`/mcp/`, `//mcp` and `/MCP` are not `/mcp`):
/// checked like the endpoint up to the path, then 404 with the table's body.
pub async fn unrouted(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request<Body>,
) -> Response {
    let (parts, _) = request.into_parts();
    let client = limits::client_address(peer.ip(), &parts.headers, &endpoint.trusted_proxies);
    let refusal = match &endpoint.per_address {
        Some(bucket) => bucket.take(&limits::network_key(client)).err(),
        None => None,
    };
    let error = match refusal {
        Some(retry_after_secs) => Error::TooManyRequests { id: None, retry_after_secs },
        None => admission::check(
            &parts.headers,
            parts.uri.authority().map(|a| a.as_str()),
            &endpoint.origins,
            endpoint.loopback,
        )
        .err()
        .unwrap_or(Error::NotFound),
    };
    self::refusal(error)
}

/// An error answered before any session or call: it has no record and no effect.
fn refusal(error: Error) -> Response {
    error.to_http_in(Context::default()).map(Body::from).into_response()
}

async fn serve(endpoint: &Arc<Endpoint>, realm_name: &str, peer: SocketAddr, request: Request<Body>) -> Response {
    let origin = request.headers().get(ORIGIN).cloned();
    let session_id = request.headers().get(bondry_mcp_proto::session::HEADER).cloned();
    let result = tokio::select! {
        result = handle(endpoint, realm_name, peer, request) => result,
        // Dropping `handle` cancels a running call, which records it as cancelled.
        () = endpoint.hard_stop.cancelled() => Err(Error::ShuttingDown),
    };
    let mut response = match result {
        Ok(response) => response,
        // A refused origin learns nothing more than the refusal.
        Err(error @ Error::OriginNotAllowed) => return refusal(error),
        Err(error) => {
            let context = match (session_id, endpoint.realms.get(realm_name)) {
                (Some(session_id), Some(realm)) => endpoint.adapter.early_context(
                    session_id.to_str().ok(),
                    &realm.registry.snapshot(),
                    &*endpoint.sessions,
                    SystemTime::now(),
                ),
                _ => Context::default(),
            };
            error.to_http_in(context).map(Body::from).into_response()
        }
    };
    // Only an allowed origin may read the answer, whatever it is.
    if let Some(origin) = origin.filter(|origin| origin.to_str().is_ok_and(|o| endpoint.origins.allows(o.trim()))) {
        cors::expose(&origin, &mut response);
    }
    response
}

/// The contract's order of checks up to the adapter, then the adapter's step.
async fn handle(
    endpoint: &Arc<Endpoint>,
    realm_name: &str,
    peer: SocketAddr,
    request: Request<Body>,
) -> Result<Response, Error> {
    let (parts, body) = request.into_parts();
    let client = limits::client_address(peer.ip(), &parts.headers, &endpoint.trusted_proxies);
    let client_key = limits::network_key(client);
    if let Some(bucket) = &endpoint.per_address {
        bucket.take(&client_key).map_err(|retry_after_secs| Error::TooManyRequests { id: None, retry_after_secs })?;
    }
    admission::check(&parts.headers, parts.uri.authority().map(|a| a.as_str()), &endpoint.origins, endpoint.loopback)?;
    let realm = endpoint.realms.get(realm_name).ok_or(Error::NoSuchRealm)?;
    if parts.method == Method::OPTIONS {
        return Ok(cors::preflight(&parts.headers, endpoint.adapter.serves_handshake()));
    }
    endpoint.adapter.admit(&parts.method, &parts.headers)?;
    // GET and DELETE carry nothing the endpoint reads.
    let body = if parts.method == Method::POST {
        tokio::time::timeout(endpoint.body_read_timeout, read_body(&parts.headers, body, endpoint.max_body_bytes))
            .await
            .map_err(|_| Error::BodyTimeout)??
    } else {
        Bytes::new()
    };
    let presents_credential = Authenticator::presents_credential(&parts.headers);
    if presents_credential && let Some(failures) = &realm.rate_limits.auth_failures {
        // Checked before any credential is verified: an exhausted address costs no hashing.
        failures
            .check(&client_key)
            .map_err(|retry_after_secs| Error::TooManyRequests { id: None, retry_after_secs })?;
    }
    // The epoch of the credentials this request is checked against: what it opens ends
    // when they change.
    let (authenticator, epoch) = realm.auth.in_force();
    let per_principal = |owner: &Owner| match &realm.rate_limits.per_principal {
        Some(bucket) => bucket
            .take(owner.as_str())
            .map_err(|retry_after_secs| Error::TooManyRequests { id: None, retry_after_secs }),
        None => Ok(()),
    };
    let authenticated = match authenticator.authenticate(&parts.headers).await {
        Ok(authenticated) => authenticated,
        Err(Rejected::Unauthenticated(error)) => {
            if presents_credential {
                endpoint.audit.record(AuditRecord::unauthenticated(SystemTime::now(), realm_name, ADAPTER));
                if let Some(failures) = &realm.rate_limits.auth_failures {
                    failures.failed(&client_key);
                }
            }
            return Err(error);
        }
        // A valid token short of a scope: its principal is known, so its own limit applies
        // before the refusal is recorded.
        Err(Rejected::InsufficientScope(principal, error)) => {
            per_principal(&Owner::of(&principal, client))?;
            endpoint.audit.record(AuditRecord::refused(SystemTime::now(), realm_name, &principal, ADAPTER));
            return Err(error);
        }
    };
    let principal = authenticated.principal;
    let owner = Owner::of(&principal, client);
    per_principal(&owner)?;
    let mut headers = parts.headers;
    for credential in [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE] {
        headers.remove(credential);
    }
    let snapshot = realm.registry.snapshot();
    let inbound = Inbound { method: &parts.method, headers: &headers, body: &body };
    let step =
        endpoint.adapter.receive(inbound, &snapshot, &principal, &*endpoint.sessions, SystemTime::now(), &mut OsRandom);
    let opener = Opener { limits: &realm.limits, epoch: &epoch, owner: &owner };
    Ok(match step {
        Step::Reply(reply) => respond(reply.settle(&mut endpoint.settling(opener))),
        Step::Dispatch(call) => {
            let conversation = endpoint.adapter.conversation(*call, realm.limits.client_response_timeout);
            match conversation.call().session().is_some() {
                true => run_in_session(endpoint, conversation, opener).await,
                false => run(endpoint, conversation, opener).await,
            }
        }
        Step::Listen(session) => listen(endpoint, &session, authenticated.valid_until)?,
        Step::Subscribe(subscription) => {
            let cap = realm.limits.listen_streams_per_principal;
            let caller = Caller { owner: &owner, principal: &principal, valid_until: authenticated.valid_until, epoch };
            subscribe(endpoint, realm_name, caller, *subscription, cap)?
        }
    })
}

/// Who opens a listen stream.
struct Caller<'a> {
    owner: &'a Owner,
    principal: &'a bondry_core::policy::Principal,
    /// When the caller's credential expires.
    valid_until: Option<SystemTime>,
    /// Cancelled when the realm's credentials change.
    epoch: CancellationToken,
}

/// What ends a long-lived stream from the server's side.
struct Ends {
    shutdown: CancellationToken,
    /// What let the stream in is over: the realm's credentials changed (a listen stream's
    /// epoch), or its session ended (a child of that epoch).
    revoked: CancellationToken,
    /// The credential that opened it expired (or, for a session's stream, the session).
    expiry: tokio::time::Instant,
}

impl Ends {
    async fn reached(&self) {
        tokio::select! {
            () = self.shutdown.cancelled() => {}
            () = self.revoked.cancelled() => {}
            () = tokio::time::sleep_until(self.expiry) => {}
        }
    }
}

/// About thirty years: as good as never for a stream, and far from the clock's overflow.
const NEVER: Duration = Duration::from_secs(86_400 * 365 * 30);

/// The instant `until` (wall clock) falls at on Tokio's clock; `None` is never.
fn deadline(until: Option<SystemTime>) -> tokio::time::Instant {
    let left = until.map_or(NEVER, |until| until.duration_since(SystemTime::now()).unwrap_or_default());
    tokio::time::Instant::now() + left.min(NEVER)
}

/// Opens a `subscriptions/listen` stream: the acknowledgement first, then the changes
/// the subscription follows. At shutdown, when the caller's credential expires and when
/// the realm's credentials change, it ends with the listen request's own result (the client listens again, with a fresh
/// credential); it also ends when the client goes away (noticed at the next keep-alive or
/// message).
fn subscribe(
    endpoint: &Endpoint,
    realm: &str,
    caller: Caller<'_>,
    subscription: Subscription,
    cap: usize,
) -> Result<Response, Error> {
    let id = subscription.id().clone();
    let acknowledged = subscription.acknowledged();
    let closed = subscription.closed();
    let (listening, feed) = endpoint
        .publications
        .listen(realm, caller.owner, caller.principal, subscription, cap)
        .ok_or(Error::TooManyRequests { id: Some(id), retry_after_secs: 1 })?;
    let event = |message: String| Ok::<_, Infallible>(Event::default().event("message").data(message));
    let first = stream::once(std::future::ready(event(acknowledged)));
    let expiry = deadline(caller.valid_until);
    // The table entry and the gauge unit travel with the stream's state: both are given
    // back when the body drops, however the stream ends.
    let ends = Ends { shutdown: endpoint.shutdown.clone(), revoked: caller.epoch, expiry };
    let state = (Some(feed), ends, listening, endpoint.gauges.hold(Gauge::Streams), closed);
    let later = stream::unfold(state, move |(feed, ends, listening, open, closed)| async move {
        let mut feed = feed?;
        tokio::select! {
            message = feed.recv() => Some(match message {
                Some(message) => (event(message), (Some(feed), ends, listening, open, closed)),
                // The table let go of the stream (a swap left it nothing to follow): it
                // closes gracefully, after whatever was queued.
                None => (event(closed.clone()), (None, ends, listening, open, closed)),
            }),
            () = ends.reached() => Some((event(closed.clone()), (None, ends, listening, open, closed))),
        }
    });
    let mut response = Sse::new(first.chain(later)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    response.headers_mut().insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    Ok(response)
}

/// Opens a session's event stream. It ends when the session ends, at shutdown, when the
/// credential that opened it expires, or when the client goes away (noticed at the next
/// keep-alive).
fn listen(endpoint: &Endpoint, session: &SessionRef, valid_until: Option<SystemTime>) -> Result<Response, Error> {
    let opened = endpoint.sessions.open_stream(&session.sid).map_err(|refused| match refused {
        Refused::Gone => Error::SessionNotFound { id: None },
        Refused::Conflict => Error::StreamConflict,
        Refused::TooMany | Refused::IdInFlight => Error::TooManyRequests { id: None, retry_after_secs: 1 },
    })?;
    let event = |message: String| Ok::<_, Infallible>(Event::default().event("message").data(message));
    let queued = stream::iter(opened.pending.into_iter().map(event));
    let expiry = deadline(Some(valid_until.map_or(opened.expires, |valid_until| valid_until.min(opened.expires))));
    let ends = Ends { shutdown: endpoint.shutdown.clone(), revoked: opened.ended, expiry };
    // The gauge unit travels with the stream's state, so it is given back when the body drops.
    let state = (opened.feed, ends, endpoint.gauges.hold(Gauge::Streams));
    let live = stream::unfold(state, move |(mut feed, ends, open)| async move {
        tokio::select! {
            message = feed.recv() => message.map(|message| (event(message), (feed, ends, open))),
            () = ends.reached() => None,
        }
    });
    let mut response = Sse::new(queued.chain(live)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    response.headers_mut().insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    Ok(response)
}

/// Runs a call inside a session. The call runs as its own task: a client disconnect is
/// not a cancellation in this era, so it runs to the end and its result is dropped. Only
/// `notifications/cancelled`, DELETE, the session's end or the hard stop cancel it, and
/// nothing is sent for a cancelled call.
async fn run_in_session(endpoint: &Arc<Endpoint>, mut conversation: Conversation, opener: Opener<'_>) -> Response {
    let session = conversation.call().session().cloned().expect("only session calls come here");
    let (slot, token) = match endpoint.sessions.begin_call(&session.sid, conversation.call().request_id()) {
        Ok(begun) => begun,
        Err(refused) => {
            let why = match refused {
                Refused::TooMany => NotStarted::TooMany,
                Refused::IdInFlight => NotStarted::IdInFlight,
                Refused::Gone | Refused::Conflict => NotStarted::SessionGone,
            };
            return respond(conversation.call().not_started(why).settle(&mut endpoint.settling(opener)));
        }
    };
    let (queue, feed) = mpsc::channel(EMITTED_QUEUE);
    let task_endpoint = Arc::clone(endpoint);
    let opener = OwnedOpener::of(opener);
    let task = endpoint.calls.spawn(async move {
        let endpoint = task_endpoint;
        let _running = endpoint.gauges.hold(Gauge::Calls);
        let emitter = Arc::new(StreamEmitter::new(conversation.call().notifier().clone(), queue.clone()));
        let client = Client { queue: &queue, sid: &session.sid };
        let stopped = tokio::select! {
            () = drive(&endpoint, &mut conversation, &token, emitter, Some(client)) => false,
            () = token.cancelled() => true,
            () = endpoint.hard_stop.cancelled() => true,
        };
        endpoint.sessions.end_call(&slot);
        if stopped {
            token.cancel();
        }
        // Settled here, not when answering: the client may be gone by then.
        conversation.finish(SystemTime::now()).settle(&mut endpoint.settling(opener.borrow()))
    });
    // Dropping the wait (the client went away) leaves the task running: in this era a
    // disconnect is not a cancellation.
    answer(endpoint, Box::pin(async move { task.await.ok().flatten() }), feed).await
}

/// A session call's way to its client: the call's stream, in its session.
#[derive(Clone, Copy)]
struct Client<'a> {
    queue: &'a mpsc::Sender<String>,
    sid: &'a str,
}

/// Drives `conversation` until it is done: runs its handler, and in a session carries
/// its questions to `client` and the answers back.
async fn drive(
    endpoint: &Endpoint,
    conversation: &mut Conversation,
    token: &CancellationToken,
    emitter: Arc<dyn Emitter>,
    client: Option<Client<'_>>,
) {
    let cancellation = Arc::new(TokenCancellation(token.clone()));
    let publisher = endpoint.publisher(conversation.call());
    let mut round: Option<Round> = None;
    loop {
        match conversation.poll() {
            Next::Invoke => {
                round = None;
                let request =
                    conversation.call().handler_request(cancellation.clone(), emitter.clone(), publisher.clone());
                let outcome =
                    CancelOnDrop { token: token.clone(), work: conversation.invoke(request), done: false }.await;
                // A handler that noticed its cancellation may still have answered: nothing is sent.
                if token.is_cancelled() {
                    conversation.cancel(SystemTime::now());
                } else {
                    conversation.handle_outcome(outcome, SystemTime::now(), &mut OsRandom);
                }
            }
            Next::Ask(questions) => {
                let Some(client) = client else {
                    conversation.handle_unreachable(SystemTime::now(), &mut OsRandom);
                    continue;
                };
                // Every id this round waits for is forgotten when the round ends, however
                // it ends (answered, timed out, or the call dropped).
                let asking = round.insert(Round::new(&endpoint.sessions, client.sid));
                for question in questions {
                    let Some((id, answer)) = endpoint.sessions.expect_answer(client.sid) else {
                        conversation.handle_refused(SystemTime::now(), &mut OsRandom);
                        break;
                    };
                    asking.ids.push(id.clone());
                    // The client reads its requests on this call's stream; without it, it cannot answer.
                    if client.queue.send(question.message(&id)).await.is_err() {
                        conversation.handle_unreachable(SystemTime::now(), &mut OsRandom);
                        break;
                    }
                    asking.answers.push_back((question.key, answer));
                }
                conversation.handle_asked(SystemTime::now());
            }
            Next::Wait(deadline) => {
                let Some((key, answer)) = round.as_mut().and_then(|round| round.answers.pop_front()) else {
                    conversation.handle_timeout(SystemTime::now(), &mut OsRandom);
                    continue;
                };
                let left = deadline.duration_since(SystemTime::now()).unwrap_or_default();
                match tokio::time::timeout(left, answer).await {
                    Ok(Ok(answer)) => conversation.handle_answer(&key, answer, SystemTime::now(), &mut OsRandom),
                    // Timed out, or the session ended and nobody can answer any more.
                    Ok(Err(_)) | Err(_) => conversation.handle_timeout(SystemTime::now(), &mut OsRandom),
                }
            }
            Next::Done => return,
        }
    }
}

/// One round of a session call's questions: the ids the session waits on, forgotten when
/// dropped, and the answers still to come.
struct Round {
    sessions: Arc<Sessions>,
    sid: String,
    ids: Vec<bondry_mcp_proto::jsonrpc::Id>,
    answers: std::collections::VecDeque<(
        String,
        tokio::sync::oneshot::Receiver<Result<serde_json::Value, serde_json::Value>>,
    )>,
}

impl Round {
    fn new(sessions: &Arc<Sessions>, sid: &str) -> Self {
        Self { sessions: Arc::clone(sessions), sid: sid.to_owned(), ids: Vec::new(), answers: Default::default() }
    }
}

impl Drop for Round {
    fn drop(&mut self) {
        for id in &self.ids {
            self.sessions.forget_answer(&self.sid, id);
        }
    }
}

/// The work of one call: its settled response, or `None` when it was cancelled and sends
/// nothing.
type Work = std::pin::Pin<Box<dyn Future<Output = Option<http::Response<Bytes>>> + Send>>;

/// Answers a call as plain JSON when it finished without emitting anything, otherwise as
/// an event stream: the progress and log messages as the handler emits them, then the
/// reply. Dropping the stream (the client went away) drops `work`.
async fn answer(endpoint: &Arc<Endpoint>, mut work: Work, mut feed: mpsc::Receiver<String>) -> Response {
    let first = tokio::select! {
        biased;
        done = &mut work => {
            let queued: Vec<String> = std::iter::from_fn(|| feed.try_recv().ok()).collect();
            return match done {
                Some(response) if queued.is_empty() => response.map(Body::from).into_response(),
                done => event_stream(endpoint, queued, Streaming::Finished(done)),
            };
        }
        Some(first) = feed.recv() => first,
    };
    event_stream(endpoint, vec![first], Streaming::Running { work, feed })
}

/// Where a call's event stream stands.
enum Streaming {
    Running {
        work: Work,
        feed: mpsc::Receiver<String>,
    },
    /// The call ended: its response (if any) is the last event.
    Finished(Option<http::Response<Bytes>>),
    Closed,
}

fn event_stream(endpoint: &Arc<Endpoint>, sent: Vec<String>, state: Streaming) -> Response {
    let open = endpoint.gauges.hold(Gauge::Streams);
    let endpoint = Arc::clone(endpoint);
    let event = |message: String| Ok::<_, Infallible>(Event::default().event("message").data(message));
    let last = |done: Option<http::Response<Bytes>>| {
        done.map(|response| String::from_utf8_lossy(response.body()).into_owned())
    };
    let later = stream::unfold(state, move |state| {
        let endpoint = Arc::clone(&endpoint);
        // Owned by the body: counted until the stream is dropped, however it ends.
        let _open = &open;
        async move {
            let mut events = Vec::new();
            let next = match state {
                Streaming::Running { mut work, mut feed } => tokio::select! {
                    biased;
                    // Past the grace period the call stops, however much it still says;
                    // its guard records it.
                    () = endpoint.hard_stop.cancelled() => Streaming::Closed,
                    Some(message) = feed.recv() => {
                        events.push(message);
                        Streaming::Running { work, feed }
                    }
                    done = &mut work => {
                        events.extend(std::iter::from_fn(|| feed.try_recv().ok()));
                        events.extend(last(done));
                        Streaming::Closed
                    }
                },
                Streaming::Finished(done) => {
                    events.extend(last(done));
                    Streaming::Closed
                }
                Streaming::Closed => return None,
            };
            Some((stream::iter(events.into_iter().map(event)), next))
        }
    })
    .flatten();
    let events = stream::iter(sent.into_iter().map(event)).chain(later);
    let mut response = Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    response.headers_mut().insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    response
}

/// Reads the body, refusing it as soon as it passes `limit` bytes, declared or streamed.
/// Reads the body into one buffer as it arrives, within `limit`.
///
/// Each frame hyper hands over is a slice of its connection's read buffer, and keeping the
/// frame keeps the whole buffer: a client sending one byte per packet would pin a read
/// buffer per byte, thousands of times the body's size. So every frame is copied into one
/// growing buffer and dropped at once, and the memory a body holds is bounded by its
/// length whatever the pace or framing of its bytes. The buffer is not reserved from a
/// declared `Content-Length`: a client that declares much and sends little costs little.
async fn read_body(headers: &HeaderMap, mut body: Body, limit: usize) -> Result<Bytes, Error> {
    let declared = headers.get(CONTENT_LENGTH).and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(Error::PayloadTooLarge);
    }
    let mut gathered = Vec::new();
    while let Some(frame) = body.frame().await {
        // The client broke off mid-body; nobody is left to read a precise answer.
        let frame = frame.map_err(|_| Error::Parse)?;
        if let Some(data) = frame.data_ref() {
            if data.len() > limit - gathered.len() {
                return Err(Error::PayloadTooLarge);
            }
            gathered.extend_from_slice(data);
        }
    }
    Ok(Bytes::from(gathered))
}

/// A settled response, as axum sends it.
fn respond(response: http::Response<Bytes>) -> Response {
    response.map(Body::from).into_response()
}

/// Runs a dispatched modern call. If the client goes away the future is dropped: the
/// call is then cancelled and recorded so.
async fn run(endpoint: &Arc<Endpoint>, conversation: Conversation, opener: Opener<'_>) -> Response {
    // Only a request that asked for notifications can get an event stream; the others
    // are answered with the reply itself, with no queue to set up.
    if !conversation.call().notifier().wants_any() {
        let settled = work(endpoint, conversation, Arc::new(SilentEmitter), opener).await;
        // Only a dropped call ends cancelled, and this one is awaited to its end.
        return settled.map_or_else(|| refusal(Error::ShuttingDown), respond);
    }
    let (queue, feed) = mpsc::channel(EMITTED_QUEUE);
    let emitter = Arc::new(StreamEmitter::new(conversation.call().notifier().clone(), queue));
    let opener = OwnedOpener::of(opener);
    let work: Work = Box::pin({
        let endpoint = Arc::clone(endpoint);
        async move { work(&endpoint, conversation, emitter, opener.borrow()).await }
    });
    answer(endpoint, work, feed).await
}

/// A modern call from dispatch to its settled response. Dropped before it finished (the
/// client went away), it cancels the handler and records the call as cancelled.
async fn work(
    endpoint: &Endpoint,
    conversation: Conversation,
    emitter: Arc<dyn Emitter>,
    opener: Opener<'_>,
) -> Option<http::Response<Bytes>> {
    let _running = endpoint.gauges.hold(Gauge::Calls);
    let token = CancellationToken::new();
    let mut finishing = Finishing { settling: endpoint.settling(opener), conversation: Some(conversation), token };
    if let Some(conversation) = finishing.conversation.as_mut() {
        drive(endpoint, conversation, &finishing.token, emitter, None).await;
    }
    let conversation = finishing.conversation.take()?;
    conversation.finish(SystemTime::now()).settle(&mut finishing.settling)
}

/// A conversation that, dropped before it was finished, cancels its handler and settles
/// as cancelled; finishing it first leaves nothing for the drop to do.
struct Finishing<'a> {
    settling: Settling<'a>,
    conversation: Option<Conversation>,
    token: CancellationToken,
}

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        if let Some(conversation) = self.conversation.take() {
            self.token.cancel();
            // Nobody is left to send the response to.
            let _ = conversation.finish(SystemTime::now()).settle(&mut self.settling);
        }
    }
}

/// A handler's future that, dropped before it finished, cancels the call's token first:
/// work the handler spawned hears of the cancellation while its future is torn down.
struct CancelOnDrop<F> {
    token: CancellationToken,
    work: F,
    done: bool,
}

impl<F: Future + Unpin> Future for CancelOnDrop<F> {
    type Output = F::Output;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let output = std::pin::Pin::new(&mut self.work).poll(cx);
        self.done = output.is_ready();
        output
    }
}

impl<F> Drop for CancelOnDrop<F> {
    fn drop(&mut self) {
        if !self.done {
            self.token.cancel();
        }
    }
}
