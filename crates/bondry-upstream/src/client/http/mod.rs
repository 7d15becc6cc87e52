//! An upstream over Streamable HTTP.
//!
//! The realm's pooled client for the upstream's origin (`bondry-outbound`): rustls with
//! the system roots plus the spec's `ca_file`, redirects never followed, no proxy unless
//! the spec names one; the spec's headers set on every request. Each request is its own
//! POST, built from the frame's prepared body and headers; its answer is a JSON body or
//! an SSE stream, read event by event until the response with the request's id; on the
//! way, what concerns a watched request goes to its watch, other notices to the inbox,
//! and the upstream's other requests are answered. No message is read beyond
//! `max_response_bytes` ([`ClientError::TooLarge`]).
//!
//! A handshake upstream's `Mcp-Session-Id` (given with the `InitializeResult`) goes on
//! every later request; a 404 on it initializes again, once, and retries once. Its GET
//! stream is kept open while the connection lives (reconnected with backoff, resumed
//! with `Last-Event-ID`), and a POST stream it ends before the answer is resumed the
//! same way. A modern upstream keeps no session: dropping a request's future drops its
//! response stream, which is the cancellation.
//!
//! By job: this file sends (sessions, renewal, the wire), `answers.rs` reads what comes
//! back, `listen.rs` keeps the GET stream.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bondry_mcp_proto::{Era, Revision, headers};
use bondry_outbound::Response;
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use serde_json::Value;
use tokio::sync::watch;

use super::ClientError;
use super::negotiate::{self, Offer, Wire};
use super::watched::Router;
use super::wire::{Frame, Ids};
use crate::backoff::{self, Backoff};
use crate::spec::UpstreamSpec;

mod answers;
mod listen;

use answers::media_type;

const SESSION: &str = "Mcp-Session-Id";
const LAST_EVENT_ID: &str = "Last-Event-ID";
const BOTH: &str = "application/json, text/event-stream";
const EVENT_STREAM: &str = "text/event-stream";
/// How often a POST stream ended before its answer is resumed.
const RESUMES: usize = 3;
/// The longest `retry` an upstream may make Bondry wait before resuming.
const RETRY_CAP: Duration = Duration::from_secs(10);
/// A renewed session that lived this long resets the renewals' backoff.
const STEADY: Duration = Duration::from_secs(60);
/// A GET stream that lived this long resets its backoff: shorter than the idle cut of
/// common proxies (30 s and more), longer than a stream ended at once.
const STREAM_STEADY: Duration = Duration::from_secs(10);
/// How long ending the session (DELETE) may take: it must not hold a shutdown.
const CLOSE_WITHIN: Duration = Duration::from_secs(2);
/// How long Bondry's answer to one of the upstream's requests may take to be delivered:
/// the stream it came on is not read meanwhile.
const REPLY_WITHIN: Duration = Duration::from_secs(10);

pub(crate) struct Http {
    upstream: String,
    /// The realm's pooled client for the upstream's origin.
    client: bondry_outbound::Client,
    /// `headers_from`, sent on every request.
    headers: HeaderMap,
    target: bondry_outbound::Target,
    limit: usize,
    router: Router,
    /// Declared again when the session is renewed.
    url_elicitation: bool,
    ids: Arc<Ids>,
    session: Mutex<Session>,
    /// Held while an expired session is renewed, so one expiry initializes once; it
    /// holds when the last renewal was made and when the next may be.
    renewing: tokio::sync::Mutex<Renewals>,
    /// Bumped by each renewal: the new session holds nothing of the old one's.
    renewals: watch::Sender<u64>,
}

/// What a handshake upstream agreed; empty for a modern one.
#[derive(Debug, Clone, Default)]
struct Session {
    id: Option<String>,
    revision: Option<Revision>,
}

/// The session renewals' backoff: an upstream that forgets every session at once is
/// initialized again at most once per step, never in a loop.
#[derive(Debug, Default)]
struct Renewals {
    backoff: Backoff,
    last: Option<tokio::time::Instant>,
    not_before: Option<tokio::time::Instant>,
}

/// A request's failure as the retry sees it.
enum Failure {
    /// A 404 on the session named.
    Expired(String),
    Error(ClientError),
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        Self::Error(error)
    }
}

impl Failure {
    fn into_error(self) -> ClientError {
        match self {
            Self::Expired(_) => ClientError::Http { status: 404 },
            Self::Error(error) => error,
        }
    }
}

impl Http {
    pub(crate) fn new(
        spec: &UpstreamSpec,
        url: &bondry_outbound::Url,
        spec_headers: &[(http::HeaderName, HeaderValue)],
        ca_file: Option<&std::path::Path>,
        proxy: Option<&bondry_outbound::Url>,
        router: Router,
        ids: Arc<Ids>,
    ) -> Result<Self, ClientError> {
        let settings = bondry_outbound::Settings {
            connect_timeout: spec.tunables.connect_timeout,
            http2_prior_knowledge: false,
            ca_file: ca_file.map(std::path::Path::to_path_buf),
            proxy: proxy.cloned(),
        };
        let client = bondry_outbound::Pool::shared()
            .client(&spec.realm, url, &settings)
            .map_err(|error| ClientError::Setup(error.to_string()))?;
        let target = bondry_outbound::Target::new(url).map_err(ClientError::Setup)?;
        Ok(Self {
            upstream: spec.name.clone(),
            client,
            headers: spec_headers.iter().cloned().collect(),
            target,
            limit: spec.tunables.max_response_bytes,
            router,
            url_elicitation: spec.allow_url_elicitation,
            ids,
            session: Mutex::new(Session::default()),
            renewing: tokio::sync::Mutex::new(Renewals::default()),
            renewals: watch::Sender::new(0),
        })
    }

    /// Changes with each renewal of the session from now on.
    pub(crate) fn renewals(&self) -> watch::Receiver<u64> {
        self.renewals.subscribe()
    }

    /// The session id of a handshake upstream.
    pub(crate) fn session_id(&self) -> Option<String> {
        self.session().id
    }

    /// After negotiation: a handshake upstream's GET stream is opened and kept while the
    /// connection lives (until `gone` changes or closes).
    pub(crate) fn begin(self: &Arc<Self>, revision: Revision, gone: watch::Receiver<()>) {
        self.lock_session().revision = Some(revision);
        if revision.era() == Era::Handshake {
            tokio::spawn(Arc::clone(self).listen(gone));
        }
    }

    /// Ends a handshake upstream's session with DELETE (a 405 means it cannot be ended: fine).
    pub(crate) async fn close(&self) {
        let session = std::mem::take(&mut *self.lock_session());
        let Some(id) = session.id else { return };
        let mut request = self.request(Method::DELETE, Bytes::new());
        Self::with_session(request.headers_mut(), &Session { id: Some(id), revision: session.revision });
        match tokio::time::timeout(CLOSE_WITHIN, self.client.send(request)).await {
            Ok(Ok(response)) => {
                tracing::debug!(upstream = self.upstream, status = %response.status(), "upstream session ended")
            }
            Ok(Err(error)) => tracing::debug!(upstream = self.upstream, %error, "upstream session end failed"),
            Err(_) => tracing::debug!(upstream = self.upstream, "upstream session end not answered in time"),
        }
    }

    fn session(&self) -> Session {
        self.lock_session().clone()
    }

    fn lock_session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// A request to the upstream's URL with the spec's headers.
    fn request(&self, method: Method, body: Bytes) -> Request<Bytes> {
        self.target.request(method, &self.headers, body)
    }

    /// The session's headers in `headers`, in place of any the spec gave.
    fn with_session(headers: &mut HeaderMap, session: &Session) {
        if let Some(id) = session.id.as_deref().and_then(|id| HeaderValue::from_str(id).ok()) {
            headers.insert(SESSION, id);
        }
        if let Some(revision) = session.revision.filter(|revision| revision.era() == Era::Handshake) {
            headers.insert(headers::name::PROTOCOL_VERSION, HeaderValue::from_static(revision.as_str()));
        }
    }

    async fn post(&self, body: Bytes, frame_headers: &HeaderMap, session: &Session) -> Result<Response, ClientError> {
        let mut request = self.request(Method::POST, body);
        let headers = request.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(BOTH));
        Self::with_session(headers, session);
        headers.extend(frame_headers.clone());
        self.client.send(request).await.map_err(|error| ClientError::Unreachable(error.to_string()))
    }

    /// A GET of the session's event stream, resuming after `last_event_id` when given.
    async fn get(&self, session: &Session, last_event_id: Option<&str>) -> Result<Response, ClientError> {
        let mut request = self.request(Method::GET, Bytes::new());
        let headers = request.headers_mut();
        headers.insert(ACCEPT, HeaderValue::from_static(EVENT_STREAM));
        Self::with_session(headers, session);
        if let Some(last) = last_event_id.and_then(|last| HeaderValue::from_str(last).ok()) {
            headers.insert(LAST_EVENT_ID, last);
        }
        self.client.send(request).await.map_err(|error| ClientError::Unreachable(error.to_string()))
    }

    async fn exchange_once(&self, frame: &Frame) -> Result<Value, Failure> {
        let id = frame.id.as_deref().ok_or_else(|| ClientError::Invalid("a request without an id".into()))?;
        let session = self.session();
        let response = self.post(frame.body.clone(), &frame.headers, &session).await?;
        if response.status() == StatusCode::NOT_FOUND
            && let Some(stale) = session.id
        {
            return Err(Failure::Expired(stale));
        }
        if frame.method == "initialize" && response.status().is_success() {
            let id = response.headers().get(SESSION).and_then(|id| id.to_str().ok()).map(str::to_owned);
            self.lock_session().id = id;
        }
        Ok(self.answer(response, id).await?)
    }

    /// Initializes again after a 404 on session `stale`, unless another request already
    /// has; only the revision already agreed is offered, so the connection's era holds.
    /// Within the renewals' backoff the 404 stands instead.
    async fn renew(&self, stale: &str) -> Result<(), ClientError> {
        let mut renewals = self.renewing.lock().await;
        let session = self.session();
        if session.id.as_deref() != Some(stale) {
            return Ok(());
        }
        let now = tokio::time::Instant::now();
        if renewals.not_before.is_some_and(|not_before| now < not_before) {
            tracing::debug!(upstream = self.upstream, "upstream session expired again: renewal backing off");
            return Err(ClientError::Http { status: 404 });
        }
        if renewals.last.is_some_and(|last| now.duration_since(last) >= STEADY) {
            renewals.backoff.succeed();
        }
        renewals.last = Some(now);
        renewals.not_before = Some(now + renewals.backoff.fail(backoff::jitter()));
        let revision = session.revision.ok_or(ClientError::Closed)?;
        self.lock_session().id = None;
        let offer = Offer { revisions: &[revision], url_elicitation: self.url_elicitation };
        negotiate::handshake(&Once(self), offer, &self.ids).await?;
        tracing::info!(upstream = self.upstream, "upstream session expired: initialized again");
        self.renewals.send_modify(|renewals| *renewals += 1);
        Ok(())
    }
}

impl Wire for Http {
    async fn exchange(&self, frame: Frame) -> Result<Value, ClientError> {
        match self.exchange_once(&frame).await {
            Err(Failure::Expired(stale)) => {
                // Boxed: a renewal is rare, and its handshake large.
                Box::pin(self.renew(&stale)).await?;
                self.exchange_once(&frame).await.map_err(Failure::into_error)
            }
            answer => answer.map_err(Failure::into_error),
        }
    }

    async fn send(&self, frame: Frame) -> Result<(), ClientError> {
        let response = self.post(frame.body, &frame.headers, &self.session()).await?;
        match response.status() {
            status if status.is_success() => Ok(()),
            status => Err(ClientError::Http { status: status.as_u16() }),
        }
    }
}

/// The transport without the renewal: what renewing itself initializes over.
struct Once<'a>(&'a Http);

impl Wire for Once<'_> {
    async fn exchange(&self, frame: Frame) -> Result<Value, ClientError> {
        self.0.exchange_once(&frame).await.map_err(Failure::into_error)
    }

    async fn send(&self, frame: Frame) -> Result<(), ClientError> {
        self.0.send(frame).await
    }
}
