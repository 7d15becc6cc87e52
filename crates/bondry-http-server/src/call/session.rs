//! A call inside a handshake session. It runs as its own task: a client disconnect is
//! not a cancellation in this era, so it runs to the end and its result is dropped. Only
//! `notifications/cancelled`, DELETE, the session's end or the hard stop cancel it, and
//! nothing is sent for a cancelled call.

use std::sync::Arc;
use std::time::SystemTime;

use axum::response::Response;
use bondry_mcp_proto::Conversation;
use tokio::sync::mpsc;

use super::answer::answer;
use super::drive::{Client, drive};
use super::settling::{Opener, OwnedOpener, Settling};
use crate::context::{EMITTED_QUEUE, StreamEmitter};
use crate::gauges::Gauge;
use crate::listener::Endpoint;
use crate::measure::Measure;
use crate::respond::respond;

/// Runs a dispatched session call, answering its request while the client waits.
pub async fn run(
    endpoint: &Arc<Endpoint>,
    mut conversation: Conversation,
    opener: Opener<'_>,
    measure: Option<Measure>,
) -> Response {
    let session = conversation.call().session().cloned().expect("only session calls come here");
    let (slot, token) = match endpoint.sessions.begin_call(&session.sid, conversation.call().request_id()) {
        Ok(begun) => begun,
        Err(why) => {
            let mut settling = Settling::new(endpoint, opener, measure);
            return respond(conversation.call().not_started(why).settle(&mut settling));
        }
    };
    let (queue, feed) = mpsc::channel(EMITTED_QUEUE);
    let task_endpoint = Arc::clone(endpoint);
    let gauges = Arc::clone(opener.gauges);
    let opener = OwnedOpener::of(opener);
    let task = endpoint.calls.spawn(async move {
        let endpoint = task_endpoint;
        let _running = opener.borrow().gauges.hold(Gauge::Calls);
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
        conversation.finish(SystemTime::now()).settle(&mut Settling::new(&endpoint, opener.borrow(), measure))
    });
    // Dropping the wait (the client went away) leaves the task running: in this era a
    // disconnect is not a cancellation.
    answer(endpoint, &gauges, Box::pin(async move { task.await.ok().flatten() }), feed).await
}
