//! The MCP endpoint: one request through admission, the body limit, authentication and
//! the adapter, and a dispatched call through the core.

use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use bondry_core::audit::{AuditOutcome, AuditRecord, AuditSink};
use bondry_core::dispatch;
use bondry_core::policy::Principal;
use bondry_mcp_proto::{ADAPTER, Adapter, Call, Csprng, Error, Reply, Step};
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_LENGTH, COOKIE, ORIGIN, PROXY_AUTHORIZATION};
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tokio_util::sync::CancellationToken;

use crate::admission::{self, OriginPolicy};
use crate::context::{SilentEmitter, SilentPublisher, TokenCancellation};
use crate::cors;
use crate::{DEFAULT_REALM, RealmEntry};

/// Everything the endpoint of one listener needs.
pub struct Endpoint {
    pub adapter: Adapter,
    pub origins: OriginPolicy,
    pub loopback: bool,
    pub max_body_bytes: usize,
    pub realms: Arc<std::collections::HashMap<String, RealmEntry>>,
    pub audit: Arc<dyn AuditSink>,
    /// Cancelled when the shutdown grace period is over: whatever is still running stops.
    pub hard_stop: CancellationToken,
}

/// The operating system's CSPRNG.
struct OsRandom;

impl Csprng for OsRandom {
    fn fill(&mut self, dest: &mut [u8]) {
        // Without entropy no id or nonce is safe to mint; there is no sane fallback.
        getrandom::fill(dest).expect("the operating system random source is available");
    }
}

pub async fn default_realm(State(endpoint): State<Arc<Endpoint>>, request: Request<Body>) -> Response {
    serve(&endpoint, DEFAULT_REALM, request).await
}

pub async fn named_realm(
    State(endpoint): State<Arc<Endpoint>>,
    Path(realm): Path<String>,
    request: Request<Body>,
) -> Response {
    serve(&endpoint, &realm, request).await
}

async fn serve(endpoint: &Endpoint, realm_name: &str, request: Request<Body>) -> Response {
    let origin = request.headers().get(ORIGIN).cloned();
    let result = tokio::select! {
        result = handle(endpoint, realm_name, request) => result,
        // Dropping `handle` cancels a running call, which records it as cancelled.
        () = endpoint.hard_stop.cancelled() => Err(Error::ShuttingDown),
    };
    let mut response = match result {
        Ok(response) => response,
        // A refused origin learns nothing more than the refusal.
        Err(error @ Error::OriginNotAllowed) => return reply(endpoint, error.into()),
        Err(error) => reply(endpoint, error.into()),
    };
    if let Some(origin) = origin {
        cors::expose(&origin, &mut response);
    }
    response
}

/// The contract's order of checks up to the adapter, then the adapter's step.
async fn handle(endpoint: &Endpoint, realm_name: &str, request: Request<Body>) -> Result<Response, Error> {
    let (parts, body) = request.into_parts();
    admission::check(&parts.headers, parts.uri.authority().map(|a| a.as_str()), &endpoint.origins, endpoint.loopback)?;
    let realm = endpoint.realms.get(realm_name).ok_or(Error::NoSuchRealm)?;
    if parts.method == Method::OPTIONS {
        return Ok(cors::preflight(&parts.headers));
    }
    endpoint.adapter.admit(&parts.method, &parts.headers)?;
    let body = read_body(&parts.headers, body, endpoint.max_body_bytes).await?;
    let principal = authenticate(realm_name, realm, &parts.headers).inspect_err(|_| {
        if parts.headers.contains_key(AUTHORIZATION) {
            endpoint.audit.record(AuditRecord::unauthenticated(SystemTime::now(), realm_name, ADAPTER));
        }
    })?;
    let mut headers = parts.headers;
    for credential in [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE] {
        headers.remove(credential);
    }
    let snapshot = realm.registry.snapshot();
    let step = endpoint.adapter.receive(&headers, &body, &snapshot, &principal, SystemTime::now(), &mut OsRandom);
    Ok(match step {
        Step::Reply(reply) => self::reply(endpoint, reply),
        Step::Dispatch(call) => run(endpoint, *call).await,
    })
}

/// Reads the body, refusing it as soon as it passes `limit` bytes, declared or streamed.
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, Error> {
    let declared = headers.get(CONTENT_LENGTH).and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(Error::PayloadTooLarge);
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(Error::PayloadTooLarge),
        // The client broke off mid-body; nobody is left to read a precise answer.
        Err(_) => Err(Error::Parse),
    }
}

/// Until access control lands (issue 4) only anonymous callers exist: a presented
/// credential cannot be verified, so it is refused rather than ignored.
fn authenticate(realm_name: &str, realm: &RealmEntry, headers: &HeaderMap) -> Result<Principal, Error> {
    let unauthenticated = || Error::Unauthenticated { challenges: vec![format!("Bearer realm=\"{realm_name}\"")] };
    if headers.contains_key(AUTHORIZATION) {
        return Err(unauthenticated());
    }
    realm.anonymous_roles.as_ref().map(|roles| Principal::anonymous(Arc::clone(roles))).ok_or_else(unauthenticated)
}

fn reply(endpoint: &Endpoint, reply: Reply) -> Response {
    if let Some(record) = reply.audit {
        endpoint.audit.record(*record);
    }
    reply.response.map(Body::from).into_response()
}

/// Runs a dispatched call. If the client goes away the future is dropped: the guard then
/// cancels the handler's token and records the call as cancelled.
async fn run(endpoint: &Endpoint, call: Call) -> Response {
    let token = CancellationToken::new();
    let guard = CancelledCall { call: &call, token: token.clone(), audit: &*endpoint.audit, armed: true };
    let request =
        call.handler_request(Arc::new(TokenCancellation(token)), Arc::new(SilentEmitter), Arc::new(SilentPublisher));
    let outcome = dispatch::invoke(call.capability(), request).await;
    drop(guard.disarm());
    reply(endpoint, endpoint.adapter.complete(call, outcome, SystemTime::now()))
}

struct CancelledCall<'a> {
    call: &'a Call,
    token: CancellationToken,
    audit: &'a dyn AuditSink,
    armed: bool,
}

impl CancelledCall<'_> {
    fn disarm(mut self) -> Self {
        self.armed = false;
        self
    }
}

impl Drop for CancelledCall<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.token.cancel();
            self.audit.record(self.call.record(AuditOutcome::Cancelled, SystemTime::now()));
        }
    }
}
