//! How a call is answered: as plain JSON when it finished without emitting anything,
//! otherwise as an event stream of what the handler emits as it emits it, then the reply.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use tokio::sync::mpsc;

use crate::gauges::{Gauge, Gauges};
use crate::listener::Endpoint;
use crate::sse;

/// The work of one call: its settled response, or `None` when it was cancelled and sends
/// nothing.
pub type Work = std::pin::Pin<Box<dyn Future<Output = Option<http::Response<Bytes>>> + Send>>;

/// Answers `work`, whose emitted messages arrive on `feed`. Dropping the response (the
/// client went away) drops `work`.
pub async fn answer(
    endpoint: &Arc<Endpoint>,
    gauges: &Arc<Gauges>,
    mut work: Work,
    mut feed: mpsc::Receiver<String>,
) -> Response {
    let first = tokio::select! {
        biased;
        done = &mut work => {
            let queued: Vec<String> = std::iter::from_fn(|| feed.try_recv().ok()).collect();
            return match done {
                Some(response) if queued.is_empty() => response.map(Body::from).into_response(),
                done => event_stream(endpoint, gauges, queued, Streaming::Finished(done)),
            };
        }
        Some(first) = feed.recv() => first,
    };
    event_stream(endpoint, gauges, vec![first], Streaming::Running { work, feed })
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

/// The event stream of a call: `sent` first, then whatever `state` still brings.
fn event_stream(endpoint: &Arc<Endpoint>, gauges: &Arc<Gauges>, sent: Vec<String>, state: Streaming) -> Response {
    let open = gauges.hold(Gauge::Streams);
    let endpoint = Arc::clone(endpoint);
    let last = |done: Option<http::Response<Bytes>>| {
        done.map(|response| String::from_utf8_lossy(response.body()).into_owned())
    };
    let later = stream::unfold(state, move |state| {
        let endpoint = Arc::clone(&endpoint);
        // Owned by the body: counted until the stream is dropped, however it ends.
        let _open = &open;
        async move {
            let mut messages = Vec::new();
            let next = match state {
                Streaming::Running { mut work, mut feed } => tokio::select! {
                    biased;
                    // Past the grace period the call stops, however much it still says;
                    // its guard records it.
                    () = endpoint.hard_stop.cancelled() => Streaming::Closed,
                    Some(message) = feed.recv() => {
                        messages.push(message);
                        Streaming::Running { work, feed }
                    }
                    done = &mut work => {
                        messages.extend(std::iter::from_fn(|| feed.try_recv().ok()));
                        messages.extend(last(done));
                        Streaming::Closed
                    }
                },
                Streaming::Finished(done) => {
                    messages.extend(last(done));
                    Streaming::Closed
                }
                Streaming::Closed => return None,
            };
            Some((stream::iter(messages), next))
        }
    })
    .flatten();
    sse::response(stream::iter(sent).chain(later))
}
