//! The one way an event stream is answered: each message a `message` event, a comment
//! while idle so dead streams are noticed, and no buffering by proxies in front.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{Stream, StreamExt};
use http::HeaderValue;

/// How often an idle event stream carries a comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A `text/event-stream` response carrying `messages`, each a JSON-RPC message.
pub fn response(messages: impl Stream<Item = String> + Send + 'static) -> Response {
    let events = messages.map(|message| Ok::<_, Infallible>(Event::default().event("message").data(message)));
    let mut response = Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    // nginx buffers responses unless told not to; an event stream must flow.
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
