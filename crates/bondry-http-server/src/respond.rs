//! Answers as axum sends them.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bondry_mcp_proto::Error;
use bondry_mcp_proto::error::Context;
use bytes::Bytes;

/// An error answered before any session or call: it has no record and no effect.
pub fn refusal(error: Error) -> Response {
    error.to_http_in(Context::default()).map(Body::from).into_response()
}

/// A settled response, as axum sends it.
pub fn respond(response: http::Response<Bytes>) -> Response {
    response.map(Body::from).into_response()
}
