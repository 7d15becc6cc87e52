//! The resources of one upstream that someone follows, and Bondry's one subscription to
//! each of them on the upstream's current connection.
//!
//! However many sessions and listen streams follow a resource, the upstream is asked
//! once: a `resources/subscribe` in a handshake upstream's session, or one
//! `subscriptions/listen` stream to a modern upstream naming every followed URI, opened
//! anew with the new set when the set changes (the new stream is under way before the old
//! one closes). That stream is open while a modern upstream is connected, followed
//! resources or none, since it also carries the upstream's list changes, which a
//! handshake upstream sends on its session's stream. The last follower gone, the subscription ends. A new connection starts
//! with none, so every followed resource is subscribed again after a reconnect. Updates
//! arrive as notices, which reach every follower that can still read the resource.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bondry_mcp_proto::Era;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::backoff::{self, Backoff};
use crate::client::{ClientError, Connection, Outgoing};
use crate::warnings;

/// How long a new listen stream gets to be under way before the one it replaces closes.
const OVERLAP: Duration = Duration::from_millis(50);

/// Who follows which of an upstream's resources.
pub struct Followers {
    counts: Mutex<HashMap<String, usize>>,
    /// Bumped whenever a resource gains its first follower or loses its last.
    changed: watch::Sender<u64>,
}

impl Default for Followers {
    fn default() -> Self {
        Self { counts: Mutex::new(HashMap::new()), changed: watch::Sender::new(0) }
    }
}

impl Followers {
    pub fn follow(&self, uri: &str) {
        let mut counts = self.counts();
        let count = counts.entry(uri.to_owned()).or_insert(0);
        *count += 1;
        if *count == 1 {
            self.changed.send_modify(|version| *version += 1);
        }
    }

    pub fn unfollow(&self, uri: &str) {
        let mut counts = self.counts();
        let Some(count) = counts.get_mut(uri) else { return };
        *count -= 1;
        if *count == 0 {
            counts.remove(uri);
            self.changed.send_modify(|version| *version += 1);
        }
    }

    /// The resources with at least one follower.
    pub fn followed(&self) -> BTreeSet<String> {
        self.counts().keys().cloned().collect()
    }

    /// Changes from now on.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The followed resources kept subscribed on one connection: subscribed anew when the
/// followers change, when a listen stream ended (after a backoff), and on a new session.
pub struct Following {
    followers: Arc<Followers>,
    changes: watch::Receiver<u64>,
    subscribed: Subscribed,
    /// Set when a listen stream ended: asked again then, not at once, and later each
    /// time, so that an upstream ending every stream is not asked in a loop.
    relisten: Option<tokio::time::Instant>,
    relisten_wait: Backoff,
}

impl Following {
    /// None subscribed yet on `connection` of `upstream`; `timeout` for each change.
    pub fn new(upstream: &str, connection: &Connection, timeout: Duration, followers: Arc<Followers>) -> Self {
        Self {
            changes: followers.changes(),
            followers,
            subscribed: Subscribed::new(upstream, connection, timeout),
            relisten: None,
            relisten_wait: Backoff::default(),
        }
    }

    /// Subscribes to exactly the followed resources.
    pub async fn reconcile(&mut self) {
        self.subscribed.reconcile(self.followers.followed()).await;
    }

    /// The connection's session is new: it holds no subscription.
    pub fn renew(&mut self) {
        let old = &self.subscribed;
        self.subscribed = Subscribed::new(&old.upstream, &old.connection, old.timeout);
    }

    /// Resolves when the subscriptions are to be reconciled: the followers changed, or a
    /// listen stream ended and its wait is over.
    pub async fn due(&mut self) {
        loop {
            let relisten = self.relisten;
            tokio::select! {
                _ = self.changes.changed() => return,
                () = self.subscribed.listen_ended() => {
                    self.relisten = Some(tokio::time::Instant::now() + self.relisten_wait.fail(backoff::jitter()));
                }
                () = tokio::time::sleep_until(relisten.unwrap_or_else(tokio::time::Instant::now)), if relisten.is_some() => {
                    self.relisten = None;
                    return;
                }
            }
        }
    }
}

type Listen = Pin<Box<dyn Future<Output = Result<Value, ClientError>> + Send>>;

/// Bondry's subscriptions on one connection.
pub struct Subscribed {
    upstream: String,
    connection: Connection,
    /// How long one `resources/subscribe` or `resources/unsubscribe` may take.
    timeout: Duration,
    uris: BTreeSet<String>,
    /// A modern upstream's listen stream, while one is open.
    listen: Option<Listen>,
}

impl Subscribed {
    pub fn new(upstream: &str, connection: &Connection, timeout: Duration) -> Self {
        let connection = connection.clone();
        Self { upstream: upstream.to_owned(), connection, timeout, uris: BTreeSet::new(), listen: None }
    }

    /// Subscribes to exactly `wanted` on the connection; a modern upstream's listen
    /// stream is opened (again) even for none, since it carries the list changes too.
    pub async fn reconcile(&mut self, wanted: BTreeSet<String>) {
        let modern = self.connection.revision().era() == Era::Modern;
        if wanted == self.uris && (!modern || self.listen.is_some()) {
            return;
        }
        let done = match modern {
            true => self.listen(&wanted).await,
            false => self.in_session(&wanted).await,
        };
        if done && wanted != self.uris {
            tracing::info!(upstream = self.upstream, resources = wanted.len(), "upstream resource subscriptions");
            self.uris = wanted;
        }
    }

    /// Resolves when a modern upstream ended its listen stream; never otherwise. The next
    /// reconcile opens another.
    pub async fn listen_ended(&mut self) {
        match self.listen.as_mut() {
            Some(listen) => {
                let ended = listen.await;
                tracing::info!(upstream = self.upstream, ?ended, "upstream listen stream ended");
                self.listen = None;
            }
            None => std::future::pending().await,
        }
    }

    /// Changes the upstream session's subscriptions to `wanted`; always done, as far as
    /// it goes: a change the upstream refused or did not answer in time is logged and not
    /// tried again until the set changes.
    async fn in_session(&mut self, wanted: &BTreeSet<String>) -> bool {
        let offered = self.connection.server_capabilities().pointer("/resources/subscribe") == Some(&json!(true));
        if !offered {
            return true;
        }
        let changes = wanted
            .difference(&self.uris)
            .map(|uri| ("resources/subscribe", uri))
            .chain(self.uris.difference(wanted).map(|uri| ("resources/unsubscribe", uri)));
        for (method, uri) in changes {
            let params = Map::from_iter([("uri".to_owned(), json!(uri))]);
            let request = self.connection.request(Outgoing::new(method, params));
            match tokio::time::timeout(self.timeout, request).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => {
                    if let Some(print) = warnings::hear(&self.upstream, uri, &format!("{method} failed")) {
                        let suppressed = print.suppressed;
                        tracing::warn!(
                            upstream = self.upstream,
                            method,
                            uri,
                            ?error,
                            suppressed,
                            "upstream subscription not changed"
                        )
                    }
                }
                Err(_) => {
                    if let Some(print) = warnings::hear(&self.upstream, uri, &format!("{method} timed out")) {
                        let suppressed = print.suppressed;
                        tracing::warn!(
                            upstream = self.upstream,
                            method,
                            uri,
                            suppressed,
                            "upstream subscription timed out"
                        )
                    }
                }
            }
        }
        true
    }

    /// Whether a listen stream carrying the list changes and `wanted` is open now; one the
    /// upstream refused at once is tried again at the next reconcile.
    async fn listen(&mut self, wanted: &BTreeSet<String>) -> bool {
        let filter = json!({
            "toolsListChanged": true,
            "promptsListChanged": true,
            "resourcesListChanged": true,
            "resourceSubscriptions": wanted,
        });
        let params = Map::from_iter([("notifications".to_owned(), filter)]);
        let connection = self.connection.clone();
        let mut listen: Listen =
            Box::pin(async move { connection.request(Outgoing::new("subscriptions/listen", params)).await });
        // Under way before the stream it replaces closes, so no change falls between.
        if let Ok(ended) = tokio::time::timeout(OVERLAP, &mut listen).await {
            tracing::warn!(upstream = self.upstream, ?ended, "upstream listen stream refused");
            return false;
        }
        self.listen = Some(listen);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_is_followed_from_its_first_follower_to_its_last() {
        let followers = Followers::default();
        let changes = followers.changes();
        followers.follow("test://a");
        followers.follow("test://a");
        followers.follow("test://b");
        assert_eq!(*changes.borrow(), 2, "each resource once");
        assert_eq!(followers.followed(), BTreeSet::from(["test://a".to_owned(), "test://b".to_owned()]));
        followers.unfollow("test://a");
        assert_eq!(*changes.borrow(), 2, "one follower left");
        followers.unfollow("test://a");
        followers.unfollow("test://never");
        assert_eq!(*changes.borrow(), 3);
        assert_eq!(followers.followed(), BTreeSet::from(["test://b".to_owned()]));
    }
}
