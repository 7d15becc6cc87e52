//! The supervisor: keeps one upstream connected (connecting again with backoff), lists it
//! when it says its lists changed, on a timer and when an operator asks, and keeps its
//! followed resources subscribed, until it is told to stop.
//!
//! Serving a connection is a short loop: it waits for the next thing to do (the upstream
//! said something, the followed resources changed, a listing is due, or a stop), then does
//! it, a stop still heard while it works.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Interval;

use super::{News, Stop, Upstream, lock, now_ms, write};
use crate::backoff;
use crate::client::{Connection, Inbox, Notice};
use crate::subscriptions::Following;

/// A connection that lived this long resets the backoff.
const STEADY: Duration = Duration::from_secs(60);
/// Notices queued from the upstream before new ones are dropped.
const INBOX: usize = 64;

impl Upstream {
    /// Keeps the upstream connected until `stop` says otherwise: connects (with backoff),
    /// lists it, and lists it again when it says a list changed, every
    /// `refresh_interval`, and after a reconnect. `news` hears of every listing that
    /// changed something.
    pub async fn supervise(self: Arc<Self>, mut stop: watch::Receiver<Stop>, news: Arc<dyn News>) {
        let mut number = 0;
        loop {
            let (inbox, notices) = Inbox::channel(INBOX);
            let spec = self.spec();
            let opened = tokio::select! {
                opened = Connection::open(&spec, inbox) => opened,
                _ = stop.changed() => return,
            };
            let began = Instant::now();
            match opened {
                Ok(connection) => {
                    number += 1;
                    *write(&self.connection) = Some((number, connection.clone()));
                    self.succeeded();
                    lock(&self.health).retry_at_ms = None;
                    let stopped = self.serve(number, &connection, notices, &mut stop, &*news).await;
                    if stopped == Some(Stop::AfterCalls) {
                        // New calls already go elsewhere; those running finish here.
                        self.calls_finished().await;
                    }
                    *write(&self.connection) = None;
                    // Why a child's connection broke says more than the request it failed.
                    if let Some(why) = connection.broken() {
                        self.remember_failure(format!("connection ended: {why}"));
                    }
                    connection.close().await;
                    if stopped.is_some() {
                        return;
                    }
                }
                Err(error) => {
                    // Quoted and escaped: the error may hold the upstream's own words.
                    tracing::warn!(upstream = self.name, error = ?error.to_string(), "cannot connect to the upstream");
                    self.remember_failure(format!("cannot connect: {error}"));
                }
            }
            let wait = self.next_backoff(began.elapsed());
            tracing::info!(
                upstream = self.name,
                retry_ms = wait.as_millis() as u64,
                "connecting to the upstream again later"
            );
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// The wait before the next connection attempt, after one that lasted `lived`; shown
    /// by [`Upstream::status`] until that attempt connects.
    fn next_backoff(&self, lived: Duration) -> Duration {
        let mut health = lock(&self.health);
        if lived >= STEADY {
            health.backoff.succeed();
        }
        let wait = health.backoff.fail(backoff::jitter());
        health.restarts += 1;
        health.retry_at_ms = Some(now_ms().saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)));
        wait
    }

    /// Serves one live connection; how `stop` ended it, or `None` when it was lost.
    async fn serve(
        &self,
        number: u64,
        connection: &Connection,
        notices: mpsc::Receiver<Notice>,
        stop: &mut watch::Receiver<Stop>,
        news: &dyn News,
    ) -> Option<Stop> {
        let live = Live { number, connection, notices, renewals: connection.renewals(), lost: self.lost.subscribe() };
        match self.keep_serving(live, stop, news).await {
            Ok(never) => match never {},
            Err(ended) => ended,
        }
    }

    /// Lists the connection and subscribes its followed resources, then does each thing
    /// that comes up until it is lost (`Err(None)`) or stopped.
    async fn keep_serving(
        &self,
        mut live: Live<'_>,
        stop: &mut watch::Receiver<Stop>,
        news: &dyn News,
    ) -> Result<Infallible, Option<Stop>> {
        let connection = live.connection;
        self.refresh_unless(stop, connection, news).await?;
        let mut every = tokio::time::interval(self.spec().tunables.refresh_interval);
        every.reset();
        // A new connection holds no subscription: every followed resource is subscribed anew.
        let mut following = Following::new(&self.name, connection, self.spec().tunables.call_timeout, self.followers());
        reconcile_unless(stop, &mut following).await?;
        loop {
            let work = tokio::select! {
                heard = live.next() => match heard {
                    Heard::Notice(notice) => live.work_for(notice, news),
                    Heard::Renewed => Some(Work::Renew),
                    Heard::Lost(why) => {
                        if let Some(why) = why {
                            self.remember_failure(why);
                        }
                        return Err(None);
                    }
                },
                () = following.due() => Some(Work::Reconcile),
                () = due_to_list(&mut every, &self.asked_to_list) => Some(Work::List),
                _ = stop.changed() => return Err(Some(*stop.borrow())),
            };
            match work {
                None => {}
                Some(Work::List) => self.refresh_unless(stop, connection, news).await?,
                Some(Work::Reconcile) => reconcile_unless(stop, &mut following).await?,
                // A new session of the same connection: the upstream may have restarted,
                // holding nothing of the old session's.
                Some(Work::Renew) => {
                    *lock(&self.log_level) = None;
                    self.refresh_unless(stop, connection, news).await?;
                    following.renew();
                    reconcile_unless(stop, &mut following).await?;
                }
            }
        }
    }
}

/// What serving a connection does next, beside waiting.
enum Work {
    /// List the upstream again.
    List,
    /// Subscribe to exactly the followed resources.
    Reconcile,
    /// Start over on the connection's new session.
    Renew,
}

/// What a live connection says, as its serving loop hears it.
enum Heard {
    Notice(Notice),
    /// The connection's session was renewed.
    Renewed,
    /// The connection is gone, and why when the connection says.
    Lost(Option<String>),
}

/// One live connection's own sources of news.
struct Live<'a> {
    /// The number the supervisor gave the connection.
    number: u64,
    connection: &'a Connection,
    notices: mpsc::Receiver<Notice>,
    renewals: watch::Receiver<u64>,
    /// The number of the latest connection a call saw die.
    lost: watch::Receiver<u64>,
}

impl Live<'_> {
    async fn next(&mut self) -> Heard {
        let number = self.number;
        tokio::select! {
            notice = self.notices.recv() => notice.map_or(Heard::Lost(None), Heard::Notice),
            Ok(()) = self.renewals.changed() => Heard::Renewed,
            // The guard `wait_for` answers is dropped at once: it is not `Send`.
            _ = async { self.lost.wait_for(|lost| *lost == number).await.is_ok() } => Heard::Lost(None),
            // A child that died or stalled between calls is restarted without waiting for
            // one to fail.
            why = self.connection.ended() => Heard::Lost(Some(format!("connection ended: {why}"))),
        }
    }

    /// What `notice` calls for: a resource update goes to `news`; a list change calls for
    /// a listing, which answers the list changes queued behind it too (anything else
    /// queued is still heard).
    fn work_for(&mut self, notice: Notice, news: &dyn News) -> Option<Work> {
        if !notice.method.ends_with("/list_changed") {
            if let Some(uri) = updated_uri(&notice) {
                news.resource_updated(uri);
            }
            return None;
        }
        while let Ok(queued) = self.notices.try_recv() {
            if let Some(uri) = updated_uri(&queued) {
                news.resource_updated(uri);
            }
        }
        Some(Work::List)
    }
}

/// Resolves when a listing is due: every `refresh_interval`, or when an operator asks.
async fn due_to_list(every: &mut Interval, asked: &Notify) {
    tokio::select! {
        _ = every.tick() => {}
        () = asked.notified() => {}
    }
}

/// Subscribes to the followed resources, unless `stop` says to end first.
async fn reconcile_unless(stop: &mut watch::Receiver<Stop>, following: &mut Following) -> Result<(), Option<Stop>> {
    tokio::select! {
        () = following.reconcile() => Ok(()),
        _ = stop.changed() => Err(Some(*stop.borrow())),
    }
}

/// The URI of a `notifications/resources/updated`; URIs are never rewritten, so it is
/// the realm's too.
fn updated_uri(notice: &Notice) -> Option<&str> {
    (notice.method == "notifications/resources/updated").then(|| notice.params.get("uri")?.as_str()).flatten()
}
