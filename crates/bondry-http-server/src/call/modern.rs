//! A modern call: it lives as long as its request. If the client goes away the call's
//! future is dropped, which cancels the handler and records the call as cancelled.

use std::sync::Arc;
use std::time::SystemTime;

use axum::response::Response;
use bondry_core::handler::Emitter;
use bondry_mcp_proto::{Conversation, Error};
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::answer::{Work, answer};
use super::drive::drive;
use super::settling::{Opener, OwnedOpener, Settling};
use crate::context::{EMITTED_QUEUE, SilentEmitter, StreamEmitter};
use crate::gauges::Gauge;
use crate::listener::Endpoint;
use crate::measure::Measure;
use crate::respond::{refusal, respond};

/// Runs a dispatched modern call to its response.
pub async fn run(
    endpoint: &Arc<Endpoint>,
    conversation: Conversation,
    opener: Opener<'_>,
    measure: Option<Measure>,
) -> Response {
    // Only a request that asked for notifications can get an event stream; the others
    // are answered with the reply itself, with no queue to set up.
    if !conversation.call().notifier().wants_any() {
        let settled = work(endpoint, conversation, Arc::new(SilentEmitter), opener, measure).await;
        // Only a dropped call ends cancelled, and this one is awaited to its end.
        return settled.map_or_else(|| refusal(Error::ShuttingDown), respond);
    }
    let (queue, feed) = mpsc::channel(EMITTED_QUEUE);
    let emitter = Arc::new(StreamEmitter::new(conversation.call().notifier().clone(), queue));
    let gauges = Arc::clone(opener.gauges);
    let opener = OwnedOpener::of(opener);
    let work: Work = Box::pin({
        let endpoint = Arc::clone(endpoint);
        async move { work(&endpoint, conversation, emitter, opener.borrow(), measure).await }
    });
    answer(endpoint, &gauges, work, feed).await
}

/// A modern call from dispatch to its settled response. Dropped before it finished (the
/// client went away), it cancels the handler and records the call as cancelled.
async fn work(
    endpoint: &Endpoint,
    conversation: Conversation,
    emitter: Arc<dyn Emitter>,
    opener: Opener<'_>,
    measure: Option<Measure>,
) -> Option<http::Response<Bytes>> {
    let _running = opener.gauges.hold(Gauge::Calls);
    let token = CancellationToken::new();
    let settling = Settling::new(endpoint, opener, measure);
    let mut finishing = Finishing { settling, conversation: Some(conversation), token };
    if let Some(conversation) = finishing.conversation.as_mut() {
        drive(endpoint, conversation, &finishing.token, emitter, None).await;
    }
    let conversation = finishing.conversation.take()?;
    conversation.finish(SystemTime::now()).settle(&mut finishing.settling)
}

/// A conversation that, dropped before it was finished, cancels its handler and settles
/// as cancelled; finishing it first leaves nothing for the drop to do.
struct Finishing<'a> {
    settling: Settling<'a>,
    conversation: Option<Conversation>,
    token: CancellationToken,
}

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        if let Some(conversation) = self.conversation.take() {
            self.token.cancel();
            // Nobody is left to send the response to.
            let _ = conversation.finish(SystemTime::now()).settle(&mut self.settling);
        }
    }
}
