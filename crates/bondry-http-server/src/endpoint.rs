//! The MCP endpoint: one request through the order of checks (ARCHITECTURE.md; the front
//! door, the realm, the adapter's admission, the body, authentication) to the adapter's
//! step, and that step to its response: a reply, a call ([`crate::call`]) or an event
//! stream ([`crate::streams`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::response::{IntoResponse, Response};
use bondry_core::audit::{AuditOutcome, AuditRecord};
use bondry_core::telemetry::{AuthResult, Limit, RequestOutcome};
use bondry_mcp_proto::error::Context;
use bondry_mcp_proto::{ADAPTER, Error, Inbound, Step};
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_LENGTH, COOKIE, ORIGIN, PROXY_AUTHORIZATION};
use http::{HeaderMap, Method, Request};
use http_body_util::BodyExt;

use crate::auth::{Authenticator, Rejected};
use crate::call::{self, Opener, Settling};
use crate::cors;
use crate::listener::Endpoint;
use crate::measure::Measure;
use crate::random::OsRandom;
use crate::realm::{DEFAULT_REALM, RealmEntry};
use crate::respond::{refusal, respond};
use crate::session::Owner;
use crate::streams::{self, Caller};

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
    let error = endpoint.front_door(peer, &parts.headers, &parts.uri, &endpoint.origins).err();
    refusal(error.unwrap_or(Error::NotFound))
}

async fn serve(endpoint: &Arc<Endpoint>, realm_name: &str, peer: SocketAddr, request: Request<Body>) -> Response {
    let origin = request.headers().get(ORIGIN).cloned();
    let session_id = request.headers().get(bondry_mcp_proto::session::HEADER).cloned();
    let realm = endpoint.realms.get(realm_name);
    // Handed to the reply or the call that settles the request; still here, it ends here.
    let mut measure = Some(Measure::begin(&endpoint.telemetry, realm.map(|realm| &realm.label)));
    let result = tokio::select! {
        result = handle(endpoint, realm_name, realm, peer, request, &mut measure) => result,
        // Dropping `handle` cancels a running call, which records it as cancelled.
        () = endpoint.hard_stop.cancelled() => Err(Error::ShuttingDown),
    };
    if let Some(measure) = measure {
        measure.end(result.as_ref().map_or_else(Error::outcome, |_| RequestOutcome::Audited(AuditOutcome::Succeeded)));
    }
    let mut response = match result {
        Ok(response) => response,
        // A refused origin learns nothing more than the refusal.
        Err(error @ Error::OriginNotAllowed) => return refusal(error),
        Err(error) => {
            let context = match (session_id, realm) {
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

/// The order of checks up to the adapter (the first that fails answers), then the
/// adapter's step. `realm` is `realm_name`'s entry, looked up once by the caller; what
/// settles the request takes `measure`.
async fn handle(
    endpoint: &Arc<Endpoint>,
    realm_name: &str,
    realm: Option<&RealmEntry>,
    peer: SocketAddr,
    request: Request<Body>,
    measure: &mut Option<Measure>,
) -> Result<Response, Error> {
    let (parts, body) = request.into_parts();
    let client_key = endpoint.front_door(peer, &parts.headers, &parts.uri, &endpoint.origins)?;
    let realm = realm.ok_or(Error::NoSuchRealm)?;
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
        failures.check(&client_key).inspect_err(|_| endpoint.telemetry.rate_limited(Limit::AuthFailures))?;
    }
    // The epoch of the credentials this request is checked against: what it opens ends
    // when they change.
    let (authenticator, epoch) = realm.auth.in_force();
    let per_principal = |owner: &Owner| match &realm.rate_limits.per_principal {
        Some(bucket) => bucket.take(owner.as_str()).inspect_err(|_| endpoint.telemetry.rate_limited(Limit::Principal)),
        None => Ok(()),
    };
    let checked = authenticator.authenticate(&parts.headers).await;
    let result = match &checked {
        Ok(_) => AuthResult::Accepted,
        Err(Rejected::Unauthenticated(_)) => AuthResult::Refused,
        Err(Rejected::InsufficientScope(..)) => AuthResult::InsufficientScope,
    };
    endpoint.telemetry.authentication(&realm.label, Authenticator::scheme(&parts.headers), result);
    let authenticated = match checked {
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
            per_principal(&Owner::of(&principal, &client_key))?;
            endpoint.audit.record(AuditRecord::refused(SystemTime::now(), realm_name, &principal, ADAPTER));
            return Err(error);
        }
    };
    let principal = authenticated.principal;
    let owner = Owner::of(&principal, &client_key);
    per_principal(&owner)?;
    let mut headers = parts.headers;
    for credential in [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE] {
        headers.remove(credential);
    }
    let snapshot = realm.registry.snapshot();
    let inbound = Inbound { method: &parts.method, headers: &headers, body: &body };
    let received =
        endpoint.adapter.receive(inbound, &snapshot, &principal, &*endpoint.sessions, SystemTime::now(), &mut OsRandom);
    if let Some(measure) = measure {
        measure.label(received.labels);
    }
    let opener = Opener { limits: &realm.limits, epoch: &epoch, owner: &owner, gauges: &realm.gauges };
    Ok(match received.step {
        Step::Reply(reply) => respond(reply.settle(&mut Settling::new(endpoint, opener, measure.take()))),
        Step::Dispatch(dispatched) => {
            let conversation = endpoint.adapter.conversation(*dispatched, realm.limits.client_response_timeout);
            // Boxed: a call's future would be most of every request's, and each request's
            // future is moved whole (kilobytes copied) before it first runs.
            match conversation.call().session().is_some() {
                true => Box::pin(call::session::run(endpoint, conversation, opener, measure.take())).await,
                false => Box::pin(call::modern::run(endpoint, conversation, opener, measure.take())).await,
            }
        }
        Step::Listen(session) => streams::listen(endpoint, &realm.gauges, &session, authenticated.valid_until)?,
        Step::Subscribe(subscription) => {
            let cap = realm.limits.listen_streams_per_principal;
            let caller = Caller { owner: &owner, principal: &principal, valid_until: authenticated.valid_until, epoch };
            streams::subscribe(endpoint, realm, caller, *subscription, cap)?
        }
    })
}

/// Reads the body into one buffer as it arrives, refusing it as soon as it passes
/// `limit` bytes, declared or streamed.
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
