//! Long-lived event streams: a session's GET stream and a `subscriptions/listen` stream.
//! Each ends from the server's side at shutdown, when what let it in is revoked, and
//! when the credential that opened it expires; and when the client goes away, noticed
//! at the next keep-alive or message.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::response::Response;
use bondry_core::policy::Principal;
use bondry_mcp_proto::listen::Subscription;
use bondry_mcp_proto::{Error, SessionRef};
use futures_util::stream::{self, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::gauges::{Gauge, Gauges};
use crate::limits::RetryAfter;
use crate::listener::Endpoint;
use crate::realm::RealmEntry;
use crate::session::Owner;
use crate::sse;

/// Who opens a listen stream.
pub struct Caller<'a> {
    pub owner: &'a Owner,
    pub principal: &'a Principal,
    /// When the caller's credential expires.
    pub valid_until: Option<SystemTime>,
    /// Cancelled when the realm's credentials change.
    pub epoch: CancellationToken,
}

/// What ends a long-lived stream from the server's side.
struct Ends {
    shutdown: CancellationToken,
    /// What let the stream in is over: the realm's credentials changed (a listen stream's
    /// epoch), or its session ended (a child of that epoch).
    revoked: CancellationToken,
    /// The credential that opened it expired (or, for a session's stream, the session).
    expiry: tokio::time::Instant,
}

impl Ends {
    async fn reached(&self) {
        tokio::select! {
            () = self.shutdown.cancelled() => {}
            () = self.revoked.cancelled() => {}
            () = tokio::time::sleep_until(self.expiry) => {}
        }
    }
}

/// About thirty years: as good as never for a stream, and far from the clock's overflow.
const NEVER: Duration = Duration::from_secs(86_400 * 365 * 30);

/// The instant `until` (wall clock) falls at on Tokio's clock; `None` is never.
fn deadline(until: Option<SystemTime>) -> tokio::time::Instant {
    let left = until.map_or(NEVER, |until| until.duration_since(SystemTime::now()).unwrap_or_default());
    tokio::time::Instant::now() + left.min(NEVER)
}

/// Opens a `subscriptions/listen` stream: the acknowledgement first, then the changes
/// the subscription follows. When the server ends it, it ends with the listen request's
/// own result, and the client listens again (with a fresh credential).
pub fn subscribe(
    endpoint: &Endpoint,
    realm: &RealmEntry,
    caller: Caller<'_>,
    subscription: Subscription,
    cap: usize,
) -> Result<Response, Error> {
    let id = subscription.id().clone();
    let acknowledged = subscription.acknowledged();
    let closed = subscription.closed();
    let (listening, feed) = endpoint
        .publications
        .listen(&realm.label, caller.owner, caller.principal, subscription, cap)
        .ok_or_else(|| RetryAfter::SECOND.refusing(Some(id)))?;
    let expiry = deadline(caller.valid_until);
    // The table entry and the gauge unit travel with the stream's state: both are given
    // back when the body drops, however the stream ends.
    let ends = Ends { shutdown: endpoint.shutdown.clone(), revoked: caller.epoch, expiry };
    let state = (Some(feed), ends, listening, realm.gauges.hold(Gauge::Listens), closed);
    let later = stream::unfold(state, move |(feed, ends, listening, open, closed)| async move {
        let mut feed = feed?;
        tokio::select! {
            message = feed.recv() => Some(match message {
                Some(message) => (message, (Some(feed), ends, listening, open, closed)),
                // The table let go of the stream (a swap left it nothing to follow): it
                // closes gracefully, after whatever was queued.
                None => (closed.clone(), (None, ends, listening, open, closed)),
            }),
            () = ends.reached() => Some((closed.clone(), (None, ends, listening, open, closed))),
        }
    });
    Ok(sse::response(stream::once(std::future::ready(acknowledged)).chain(later)))
}

/// Opens a session's event stream: what the session queued first, then what it is sent.
/// It ends with the session, or when the credential that opened it expires.
pub fn listen(
    endpoint: &Endpoint,
    gauges: &Arc<Gauges>,
    session: &SessionRef,
    valid_until: Option<SystemTime>,
) -> Result<Response, Error> {
    let opened = endpoint.sessions.open_stream(&session.sid)?;
    let queued = stream::iter(opened.pending);
    let expiry = deadline(Some(valid_until.map_or(opened.expires, |valid_until| valid_until.min(opened.expires))));
    let ends = Ends { shutdown: endpoint.shutdown.clone(), revoked: opened.ended, expiry };
    // The gauge unit travels with the stream's state, so it is given back when the body drops.
    let state = (opened.feed, ends, gauges.hold(Gauge::Streams));
    let live = stream::unfold(state, move |(mut feed, ends, open)| async move {
        tokio::select! {
            message = feed.recv() => message.map(|message| (message, (feed, ends, open))),
            () = ends.reached() => None,
        }
    });
    Ok(sse::response(queued.chain(live)))
}
