//! CORS for browser clients: preflights, and the headers that let a page read responses.
//!
//! CORS only governs what a browser lets a page read; the `Origin` allow-list in
//! [`crate::admission`] is what refuses requests. A preflight reaches this module only
//! from an allowed origin, so every origin seen here is echoed back (never `*`, since
//! requests may carry credentials).

use axum::body::Body;
use axum::response::Response;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS, ALLOW, ORIGIN, VARY,
};
use http::{HeaderMap, HeaderValue, StatusCode};

/// Response headers a page may read.
const EXPOSED: &str = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate";
/// How long a browser may cache a preflight, in seconds.
const MAX_AGE: &str = "600";

/// The 204 answer to `OPTIONS`: a CORS preflight when it comes with an `Origin`, echoing
/// the requested headers (the `Mcp-Param-*` names vary per tool). GET and DELETE exist
/// only where a handshake revision is served.
pub fn preflight(request: &HeaderMap, handshake: bool) -> Response {
    let methods = if handshake { "POST, GET, DELETE" } else { "POST" };
    let allow = if handshake { "OPTIONS, POST, GET, DELETE" } else { "OPTIONS, POST" };
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert(ALLOW, HeaderValue::from_static(allow));
    if let Some(origin) = request.get(ORIGIN) {
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(methods));
        for requested in request.get_all(ACCESS_CONTROL_REQUEST_HEADERS) {
            headers.append(ACCESS_CONTROL_ALLOW_HEADERS, requested.clone());
        }
        headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(MAX_AGE));
        headers.insert(VARY, HeaderValue::from_static("Origin"));
    }
    response
}

/// Lets the page of an allowed `origin` read `response`.
pub fn expose(origin: &HeaderValue, response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSED));
    headers.append(VARY, HeaderValue::from_static("Origin"));
}
