//! OAuth 2.0 Protected Resource Metadata (RFC 9728): where a client learns which
//! issuers grant tokens for a realm. Served for realms with OAuth issuers only, at
//! `/.well-known/oauth-protected-resource` and `.../mcp` for the default realm and at
//! `.../mcp/realm/{realm}` for every realm; anything else is 404.
//!
//! The document is public and the same for everyone, so any page may read it (`*`)
//! and it carries no credentials.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::response::Response;
use http::header::{
    ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_MAX_AGE, ALLOW, CACHE_CONTROL,
    CONTENT_TYPE, RETRY_AFTER,
};
use http::{HeaderValue, Method, StatusCode};

use crate::endpoint::Endpoint;
use crate::{DEFAULT_REALM, limits};

pub async fn default_realm(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    method: Method,
    headers: http::HeaderMap,
) -> Response {
    serve(&endpoint, DEFAULT_REALM, peer, &method, &headers)
}

pub async fn named_realm(
    State(endpoint): State<Arc<Endpoint>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(realm): Path<String>,
    method: Method,
    headers: http::HeaderMap,
) -> Response {
    serve(&endpoint, &realm, peer, &method, &headers)
}

fn serve(endpoint: &Endpoint, realm: &str, peer: SocketAddr, method: &Method, headers: &http::HeaderMap) -> Response {
    let mut response = Response::new(Body::empty());
    if let Some(bucket) = &endpoint.per_address {
        let client = limits::client_address(peer.ip(), headers, &endpoint.trusted_proxies);
        if let Err(retry_after_secs) = bucket.take(&limits::network_key(client)) {
            *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(retry_after_secs));
            return response;
        }
    }
    let Some(oauth) = endpoint.realms.get(realm).and_then(|realm| realm.auth.current().oauth().cloned()) else {
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    };
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
            headers.insert(ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD"));
            headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        _ => {
            headers.insert(ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        }
    }
    response
}
