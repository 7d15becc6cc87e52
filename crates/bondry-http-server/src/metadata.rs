//! OAuth 2.0 Protected Resource Metadata (RFC 9728): where a client learns which
//! issuers grant tokens for a realm. Served for realms with OAuth issuers only, at
//! `/.well-known/oauth-protected-resource` and `.../mcp` for the default realm and at
//! `.../mcp/realm/{realm}` for every realm (the default one included, as
//! `/mcp/realm/default` serves it); anything else is 404 `Not found`, with the error
//! table's body like every refusal. A challenge's `resource_metadata` is built from
//! `resource_url` (its origin, the well-known prefix, then its path), so it names a served
//! path only when `resource_url`'s path is the realm's.
//!
//! The document is public and the same for everyone, so any page may read it (`*`)
//! and it carries no credentials.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::response::Response;
use bondry_mcp_proto::Error;
use http::header::{
    ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_MAX_AGE, ALLOW, CACHE_CONTROL,
    CONTENT_TYPE,
};
use http::{HeaderValue, Method, StatusCode, Uri};

use crate::admission::OriginPolicy;
use crate::listener::Endpoint;
use crate::realm::DEFAULT_REALM;

pub async fn default_realm(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    method: Method,
    uri: Uri,
    headers: http::HeaderMap,
) -> Response {
    respond(document(&endpoint, DEFAULT_REALM, peer, &method, &uri, &headers))
}

pub async fn named_realm(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(realm): Path<String>,
    method: Method,
    uri: Uri,
    headers: http::HeaderMap,
) -> Response {
    respond(document(&endpoint, &realm, peer, &method, &uri, &headers))
}

/// The document, or the refusal from the error table; any page may read either.
fn respond(document: Result<Response, Error>) -> Response {
    document.unwrap_or_else(|error| {
        let mut response = error.to_http().map(Body::from);
        response.headers_mut().insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        response
    })
}

/// The document, or why not. Any origin may ask; the `Host` rules still hold.
fn document(
    endpoint: &Endpoint,
    realm: &str,
    peer: SocketAddr,
    method: &Method,
    uri: &Uri,
    headers: &http::HeaderMap,
) -> Result<Response, Error> {
    endpoint.front_door(peer, headers, uri, &OriginPolicy::Any)?;
    let oauth =
        endpoint.realms.get(realm).and_then(|realm| realm.auth.current().oauth().cloned()).ok_or(Error::NotFound)?;
    let mut response = Response::new(Body::empty());
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    match *method {
        Method::GET | Method::HEAD => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
            if method == Method::GET {
                *response.body_mut() = Body::from(oauth.metadata().clone());
            }
        }
        Method::OPTIONS => {
            headers.insert(ALLOW, HeaderValue::from_static(ALLOWED));
            headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD"));
            headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        _ => return Err(Error::MethodNotAllowed { allow: ALLOWED }),
    }
    Ok(response)
}

/// The methods the metadata document answers.
const ALLOWED: &str = "GET, HEAD, OPTIONS";
