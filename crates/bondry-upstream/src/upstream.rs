//! One upstream of a realm, alive: its connection (made, lost and made again with
//! backoff), its health, its latest listing, and which of the realm's capabilities it
//! serves under which upstream name.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bondry_core::capability::{CapabilityId, CapabilityKind};
use bondry_core::handler::LogLevel;
use bondry_mcp_proto::Era;
use bondry_mcp_proto::error::code as rpc;
use bondry_mcp_proto::lint::ParamHeader;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, watch};

use crate::backoff::{self, Backoff};
use crate::client::{ClientError, Connection, Inbox, Notice, Outgoing, Watch};
use crate::listing::{Collect, KindListing, Listing, Refused};
use crate::slots::CallSlots;
use crate::spec::UpstreamSpec;
use crate::subscriptions::{Followers, Subscribed};
use crate::warnings;

/// Consecutive failed calls after which an upstream is marked down for its backoff.
pub const FAILURES_BEFORE_DOWN: u32 = 5;
/// How long a `logging/setLevel` may take: calls wanting a level wait for it.
const SET_LEVEL_WITHIN: Duration = Duration::from_secs(10);
/// A connection that lived this long resets the backoff.
const STEADY: Duration = Duration::from_secs(60);
/// Notices queued from the upstream before new ones are dropped.
const INBOX: usize = 64;

/// What one of the upstream's capabilities is called there.
#[derive(Debug, Clone)]
pub struct Target {
    pub kind: CapabilityKind,
    /// The upstream's own name of the entry.
    pub name: String,
    /// A static resource's URI, or a template's URI template.
    pub uri: Option<String>,
    /// The tool's `x-mcp-header` parameters, mirrored into `Mcp-Param-*` headers.
    pub params: Vec<ParamHeader>,
}

/// Where an upstream's news goes: its realm.
pub trait News: Send + Sync {
    /// `upstream` listed something new: the realm names and serves it.
    fn listed(&self, upstream: &Upstream);
    /// The upstream says the resource at `uri` changed.
    fn resource_updated(&self, uri: &str);
}

/// How a supervised upstream is to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Serving,
    /// Close the connection now: its calls still running fail as unavailable.
    Now,
    /// Let the calls running finish (within the call timeout), then close.
    AfterCalls,
}

/// One upstream and everything it holds while Bondry serves it.
pub struct Upstream {
    name: String,
    /// Replaced whole by a reload that keeps the connection; read afresh by each call,
    /// each listing and each connection attempt.
    spec: RwLock<Arc<UpstreamSpec>>,
    /// The live connection, and its number: the supervisor numbers each one it opens.
    connection: RwLock<Option<(u64, Connection)>>,
    health: Mutex<Health>,
    listing: RwLock<Listing>,
    /// Whether a listing ever landed: an empty first listing is a listing too.
    listed: AtomicBool,
    /// An operator asked for a listing now.
    asked_to_list: Notify,
    /// How the latest listing attempt ended, and when: changed by every attempt.
    refreshed: watch::Sender<Refreshed>,
    /// Why the latest attempt to connect or list failed, until one succeeds.
    last_error: Mutex<Option<String>>,
    targets: RwLock<HashMap<CapabilityId, Target>>,
    calls: Arc<CallSlots>,
    /// The log level asked of a handshake upstream's session, and on which connection:
    /// the lowest any call in flight wanted, since one session serves every caller.
    log_level: Mutex<Option<(u64, LogLevel)>>,
    /// Held while a level is asked, so that levels reach the upstream in the order chosen.
    setting_level: tokio::sync::Mutex<()>,
    /// The log levels the calls in flight asked for, counted.
    log_wishes: Arc<Mutex<BTreeMap<LogLevel, usize>>>,
    /// Who follows which of the upstream's resources: the supervisor keeps each
    /// connection subscribed to those.
    followers: Arc<Followers>,
    /// The number of the latest connection a call saw die: the supervisor connects again
    /// at once. A number, not a signal, so that a loss reported late (by a second call that
    /// saw the same connection die) is never read as the loss of the next connection.
    lost: watch::Sender<u64>,
}

/// The latest listing attempt: when it ended (Unix milliseconds), and whether it listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refreshed {
    pub at_ms: Option<u64>,
    pub listed: bool,
}

/// What an operator is shown of an upstream's connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `"stdio"` or `"http"`.
    pub transport: &'static str,
    pub connected: bool,
    /// The revision negotiated on the live connection.
    pub revision: Option<String>,
    /// When it was last listed (Unix milliseconds).
    pub last_refresh_ms: Option<u64>,
    /// Why the latest attempt to connect or list failed, until one succeeds.
    pub last_error: Option<String>,
    /// Why a kind's latest listing was refused, by kind: its pins stay as they were.
    pub refused: Vec<(CapabilityKind, String)>,
    /// While not connected: attempts to connect failed in a row, and when the next is
    /// made (Unix milliseconds).
    pub retry: Option<Retry>,
}

/// The supervisor's backoff between attempts to connect, as an operator is shown it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub failed: u32,
    pub next_at_ms: u64,
}

#[derive(Debug, Default)]
struct Health {
    failures: u32,
    down_until: Option<Instant>,
    backoff: Backoff,
    /// When the next attempt to connect is made, while the supervisor waits.
    retry_at_ms: Option<u64>,
}

/// One request on its way to the upstream; see [`Upstream::start`].
pub struct Flight {
    /// The number of the connection it went on.
    number: u64,
    /// The connection it went on, which answers the upstream's requests about it.
    pub connection: Connection,
    pub answer: Pin<Box<dyn Future<Output = Result<Value, ClientError>> + Send>>,
}

/// Why a call could not be relayed.
#[derive(Debug, Clone, PartialEq)]
pub enum Unrelayed {
    /// No connection, marked down, or the transport failed or timed out: retryable.
    Unavailable,
    /// The upstream answered a JSON-RPC error.
    Refused { code: i64, message: String },
    /// The upstream says the caller lacks the client capabilities `required` (-32021).
    ClientLacks { required: Value },
}

impl Upstream {
    /// The upstream of `spec`, keeping `followers`' resources subscribed.
    pub fn new(spec: UpstreamSpec, followers: Arc<Followers>) -> Self {
        let calls = Arc::new(CallSlots::new(spec.max_concurrent_calls));
        Self {
            name: spec.name.clone(),
            spec: RwLock::new(Arc::new(spec)),
            connection: RwLock::new(None),
            health: Mutex::new(Health::default()),
            listing: RwLock::new(Vec::new()),
            listed: AtomicBool::new(false),
            asked_to_list: Notify::new(),
            refreshed: watch::Sender::new(Refreshed::default()),
            last_error: Mutex::new(None),
            targets: RwLock::new(HashMap::new()),
            calls,
            log_level: Mutex::new(None),
            setting_level: tokio::sync::Mutex::new(()),
            log_wishes: Arc::new(Mutex::new(BTreeMap::new())),
            followers,
            lost: watch::Sender::new(0),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn spec(&self) -> Arc<UpstreamSpec> {
        Arc::clone(&read(&self.spec))
    }

    /// Takes `spec`, which reaches the upstream the same way (a reload that changed its
    /// naming, filters or limits): the connection stays, and a new `max_concurrent_calls`
    /// holds for the calls that start from now on.
    pub fn respec(&self, spec: UpstreamSpec) {
        self.calls.resize(spec.max_concurrent_calls);
        *write(&self.spec) = Arc::new(spec);
    }

    /// Who follows which of its resources: taken over by an upstream that replaces it.
    pub fn followers(&self) -> Arc<Followers> {
        Arc::clone(&self.followers)
    }

    /// Someone follows the updates of the upstream's resource at `uri`.
    pub fn follow(&self, uri: &str) {
        self.followers.follow(uri);
    }

    /// One follower of `uri` fewer.
    pub fn unfollow(&self, uri: &str) {
        self.followers.unfollow(uri);
    }

    /// The owner key of this upstream's capabilities in its realm's registry.
    pub fn owner(&self) -> String {
        format!("upstream/{}", self.name)
    }

    /// Waits until no call is running, at most one call timeout.
    async fn calls_finished(&self) {
        let wait = self.spec().call_timeout;
        let _ = tokio::time::timeout(wait, self.calls.idle()).await;
    }

    pub fn listing(&self) -> Listing {
        read(&self.listing).clone()
    }

    /// Whether a listing of the upstream ever landed.
    pub fn has_listed(&self) -> bool {
        self.listed.load(Ordering::Acquire)
    }

    pub fn status(&self) -> Status {
        let transport = match self.spec().transport {
            crate::spec::TransportSpec::Stdio { .. } => "stdio",
            crate::spec::TransportSpec::Http { .. } => "http",
        };
        let revision = read(&self.connection).as_ref().map(|(_, connection)| connection.revision().as_str().to_owned());
        let retry = {
            let health = lock(&self.health);
            health.retry_at_ms.map(|next_at_ms| Retry { failed: health.backoff.failed(), next_at_ms })
        };
        Status {
            retry,
            transport,
            connected: revision.is_some(),
            revision,
            last_refresh_ms: self.last_listed_ms(),
            last_error: lock(&self.last_error).clone(),
            refused: read(&self.listing)
                .iter()
                .filter_map(|(kind, listed)| match listed {
                    KindListing::Refused(why) => Some((*kind, why.to_string())),
                    KindListing::Listed(_) => None,
                })
                .collect(),
        }
    }

    fn last_listed_ms(&self) -> Option<u64> {
        let refreshed = *self.refreshed.borrow();
        refreshed.listed.then_some(refreshed.at_ms).flatten()
    }

    /// Lists the upstream now, as an operator asks; whether it listed within `within`.
    /// Refused at once when it is not connected.
    pub async fn list_now(&self, within: Duration) -> Result<(), &'static str> {
        if read(&self.connection).is_none() {
            return Err("the upstream is not connected");
        }
        // A new receiver has seen the current value: only the next listing wakes it.
        let mut refreshed = self.refreshed.subscribe();
        self.asked_to_list.notify_one();
        match tokio::time::timeout(within, refreshed.changed()).await {
            Ok(Ok(())) if refreshed.borrow().listed => Ok(()),
            Ok(_) => Err("the upstream could not be listed"),
            Err(_) => Err("the upstream did not answer its listing in time"),
        }
    }

    fn remember_failure(&self, error: String) {
        *lock(&self.last_error) = Some(error);
    }

    pub fn target(&self, id: &CapabilityId) -> Option<Target> {
        read(&self.targets).get(id).cloned()
    }

    /// Which capability ids this upstream now serves, and as what.
    pub fn set_targets(&self, targets: HashMap<CapabilityId, Target>) {
        *write(&self.targets) = targets;
    }

    /// Sends `request`, watched by `watch` when given: the flight answers once it has a
    /// call slot and the upstream answered. Whoever drives it applies the call timeout
    /// and hands the outcome to [`Upstream::settle`]; dropped, it is cancelled upstream.
    pub fn start(&self, request: &Outgoing, watch: Option<Watch>) -> Result<Flight, Unrelayed> {
        let (number, connection) = self.usable().ok_or(Unrelayed::Unavailable)?;
        let mut running = self.calls.enter();
        let slots = Arc::clone(&self.calls);
        let on = connection.clone();
        // Written now, from the borrowed request: the flight holds its bytes, not a copy.
        let prepared = connection.prepare(request, watch);
        let answer = Box::pin(async move {
            let prepared = prepared?;
            running.admitted(&slots).await;
            let answered = on.send(prepared).await;
            drop(running);
            answered
        });
        Ok(Flight { number, connection, answer })
    }

    /// What a flight's outcome means for the caller; `None` when it timed out. Transport
    /// failures count toward marking the upstream down.
    pub fn settle(&self, flight: &Flight, answered: Option<Result<Value, ClientError>>) -> Result<Value, Unrelayed> {
        let number = flight.number;
        match answered {
            Some(Ok(result)) => {
                self.succeeded();
                Ok(result)
            }
            // The upstream is alive and said no: not a failure of the link.
            Some(Err(ClientError::Rpc { code: rpc::MISSING_CLIENT_CAPABILITY, data, .. })) => {
                self.succeeded();
                let required = data.as_ref().and_then(|data| data.get("requiredCapabilities")).cloned();
                Err(Unrelayed::ClientLacks { required: required.unwrap_or_else(|| json!({})) })
            }
            Some(Err(ClientError::Rpc { code, message, .. })) => {
                self.succeeded();
                Err(Unrelayed::Refused { code, message })
            }
            Some(Err(error)) => {
                if let Some(print) = warnings::hear(self.name(), "", &error.to_string()) {
                    tracing::warn!(upstream = self.name(), error = ?error.to_string(), suppressed = print.suppressed, "an upstream call failed");
                }
                if matches!(error, ClientError::Closed | ClientError::Unreachable(_)) {
                    self.lost.send_if_modified(|lost| {
                        let newer = number > *lost;
                        if newer {
                            *lost = number;
                        }
                        newer
                    });
                }
                self.failed();
                Err(Unrelayed::Unavailable)
            }
            None => {
                if let Some(print) = warnings::hear(self.name(), "", "call timed out") {
                    tracing::warn!(upstream = self.name(), suppressed = print.suppressed, "an upstream call timed out");
                }
                self.failed();
                Err(Unrelayed::Unavailable)
            }
        }
    }

    /// Makes a handshake upstream send log messages of the lowest level the calls in
    /// flight want, this one's `level` among them, unless it was asked for exactly that on
    /// this connection already: lowered for a call that wants more, and raised back by the
    /// next call asking a level once no call in flight wants the lower one. Each caller's
    /// emitter passes on only what that caller asked for. A modern upstream is asked per
    /// request. The wish lasts while the call holds it, waiting for its caller's input too.
    pub async fn ask_log_level(&self, level: LogLevel) -> LogWish {
        let wish = LogWish::new(Arc::clone(&self.log_wishes), level);
        let Some((number, connection)) = self.usable() else { return wish };
        if connection.revision().era() != Era::Handshake || connection.server_capabilities().get("logging").is_none() {
            return wish;
        }
        // Most calls find the level already asked, and wait for nothing.
        if *lock(&self.log_level) == Some((number, wish.lowest())) {
            return wish;
        }
        let _one_at_a_time = self.setting_level.lock().await;
        let lowest = wish.lowest();
        {
            let mut asked = lock(&self.log_level);
            if *asked == Some((number, lowest)) {
                return wish;
            }
            *asked = Some((number, lowest));
        }
        let params = Map::from_iter([("level".to_owned(), json!(lowest.as_str()))]);
        // Boxed: asked rarely, and a request's future would otherwise be part of every call's.
        let set = Box::pin(connection.request(Outgoing::new("logging/setLevel", params)));
        match tokio::time::timeout(self.spec().call_timeout.min(SET_LEVEL_WITHIN), set).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::debug!(upstream = self.name, %error, "the upstream's log level is not set"),
            Err(_) => tracing::debug!(upstream = self.name, "the upstream's log level is not set: timed out"),
        }
        wish
    }

    /// The connection, unless there is none or the upstream is marked down.
    fn usable(&self) -> Option<(u64, Connection)> {
        let health = lock(&self.health);
        if health.down_until.is_some_and(|until| until > Instant::now()) {
            return None;
        }
        read(&self.connection).clone()
    }

    fn succeeded(&self) {
        let mut health = lock(&self.health);
        health.failures = 0;
        health.down_until = None;
    }

    fn failed(&self) {
        let mut health = lock(&self.health);
        health.failures += 1;
        if health.failures >= FAILURES_BEFORE_DOWN {
            let down = backoff::FIRST;
            health.down_until = Some(Instant::now() + down);
            tracing::warn!(
                upstream = self.name,
                failures = health.failures,
                down_ms = down.as_millis() as u64,
                "upstream marked down: its calls answer at once until the backoff is over"
            );
        }
    }

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
        health.retry_at_ms = Some(now_ms().saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)));
        wait
    }

    /// Serves one live connection; how `stop` ended it, or `None` when it was lost.
    async fn serve(
        &self,
        number: u64,
        connection: &Connection,
        mut notices: tokio::sync::mpsc::Receiver<Notice>,
        stop: &mut watch::Receiver<Stop>,
        news: &dyn News,
    ) -> Option<Stop> {
        if let Err(ended) = self.refresh_unless(stop, connection, news).await {
            return ended;
        }
        let mut lost = self.lost.subscribe();
        let mut every = tokio::time::interval(self.spec().refresh_interval);
        every.reset();
        // A new connection holds no subscription: every followed resource is subscribed anew.
        let mut followed = self.followers.changes();
        let mut renewals = connection.renewals();
        let mut subscribed = Subscribed::new(&self.name, connection, self.spec().call_timeout);
        // Set when a listen stream ended: asked again then, not at once, and later each
        // time, so that an upstream ending every stream is not asked in a loop.
        let mut relisten: Option<tokio::time::Instant> = None;
        let mut relisten_wait = Backoff::default();
        tokio::select! {
            () = subscribed.reconcile(self.followers.followed()) => {}
            _ = stop.changed() => return Some(*stop.borrow()),
        }
        loop {
            tokio::select! {
                _ = followed.changed() => {
                    // Subscribing waits on the upstream: a stop is heard meanwhile.
                    tokio::select! {
                        () = subscribed.reconcile(self.followers.followed()) => {}
                        _ = stop.changed() => return Some(*stop.borrow()),
                    }
                }
                // A new session of the same connection: the upstream may have restarted,
                // holding nothing of the old session's.
                Ok(()) = renewals.changed() => {
                    *lock(&self.log_level) = None;
                    if let Err(ended) = self.refresh_unless(stop, connection, news).await {
                        return ended;
                    }
                    subscribed = Subscribed::new(&self.name, connection, self.spec().call_timeout);
                    tokio::select! {
                        () = subscribed.reconcile(self.followers.followed()) => {}
                        _ = stop.changed() => return Some(*stop.borrow()),
                    }
                }
                () = subscribed.listen_ended() => {
                    relisten = Some(tokio::time::Instant::now() + relisten_wait.fail(backoff::jitter()));
                }
                () = tokio::time::sleep_until(relisten.unwrap_or_else(tokio::time::Instant::now)), if relisten.is_some() => {
                    relisten = None;
                    tokio::select! {
                        () = subscribed.reconcile(self.followers.followed()) => {}
                        _ = stop.changed() => return Some(*stop.borrow()),
                    }
                }
                notice = notices.recv() => {
                    let notice = notice?;
                    if notice.method.ends_with("/list_changed") {
                        // Refreshes coalesce: the list changes already queued are answered by
                        // this one; anything else queued is still heard.
                        while let Ok(queued) = notices.try_recv() {
                            if let Some(uri) = updated_uri(&queued) {
                                news.resource_updated(uri);
                            }
                        }
                        if let Err(ended) = self.refresh_unless(stop, connection, news).await {
                            return ended;
                        }
                    } else if let Some(uri) = updated_uri(&notice) {
                        news.resource_updated(uri);
                    }
                }
                _ = every.tick() => {
                    if let Err(ended) = self.refresh_unless(stop, connection, news).await {
                        return ended;
                    }
                }
                () = self.asked_to_list.notified() => {
                    if let Err(ended) = self.refresh_unless(stop, connection, news).await {
                        return ended;
                    }
                }
                // The guard `wait_for` answers is dropped at once: it is not `Send`.
                _ = async { lost.wait_for(|lost| *lost == number).await.is_ok() } => return None,
                // A child that died or stalled between calls is restarted without waiting for
                // one to fail.
                why = connection.ended() => {
                    self.remember_failure(format!("connection ended: {why}"));
                    return None;
                }
                _ = stop.changed() => return Some(*stop.borrow()),
            }
        }
    }

    /// [`Upstream::refresh`], unless `stop` says to end first: a listing in progress does
    /// not hold a shutdown. `Err` with how the connection ends (`None`: it was lost).
    async fn refresh_unless(
        &self,
        stop: &mut watch::Receiver<Stop>,
        connection: &Connection,
        news: &dyn News,
    ) -> Result<(), Option<Stop>> {
        tokio::select! {
            listed = self.refresh(connection, news) => if listed { Ok(()) } else { Err(None) },
            _ = stop.changed() => Err(Some(*stop.borrow())),
        }
    }

    /// Lists every kind the upstream serves and the stanza exposes; whether the connection
    /// is still good. A kind whose listing fails keeps what it listed before.
    async fn refresh(&self, connection: &Connection, news: &dyn News) -> bool {
        let listed = self.list(connection, news).await;
        if listed {
            *lock(&self.last_error) = None;
        }
        self.refreshed.send_replace(Refreshed { at_ms: Some(now_ms()), listed });
        listed
    }

    async fn list(&self, connection: &Connection, news: &dyn News) -> bool {
        let announced = connection.server_capabilities();
        let spec = self.spec();
        let expose = spec.expose;
        let kinds = [
            (CapabilityKind::Tool, expose.tools && announced.get("tools").is_some(), "tools/list", "tools"),
            (CapabilityKind::Prompt, expose.prompts && announced.get("prompts").is_some(), "prompts/list", "prompts"),
            (
                CapabilityKind::Resource,
                expose.resources && announced.get("resources").is_some(),
                "resources/list",
                "resources",
            ),
            (
                CapabilityKind::ResourceTemplate,
                expose.resources && announced.get("resources").is_some(),
                "resources/templates/list",
                "resourceTemplates",
            ),
        ];
        let mut listing = Listing::new();
        for (kind, served, method, field) in kinds {
            if !served {
                listing.push((kind, KindListing::Listed(Vec::new())));
                continue;
            }
            let collect = Collect::new(kind, spec.listing);
            match list(connection, method, field, collect, spec.listing.page_timeout).await {
                Ok(Ok((entries, skipped))) => {
                    for (key, bytes) in skipped {
                        let entry = format!("{method} {key}");
                        let Some(print) = warnings::hear(&self.name, &entry, "over max_definition_bytes") else {
                            continue;
                        };
                        tracing::warn!(
                            upstream = self.name,
                            method,
                            entry = key,
                            bytes,
                            limit = spec.listing.max_definition_bytes,
                            suppressed = print.suppressed,
                            "an upstream entry is over max_definition_bytes: skipped, neither stored nor pinned"
                        );
                    }
                    listing.push((kind, KindListing::Listed(entries)));
                }
                Ok(Err(refused)) => {
                    // The upstream's own message or repeated name is no new cause.
                    let cause = match &refused {
                        Refused::Failed { .. } => "answered an error".to_owned(),
                        Refused::Repeated { key, .. } => format!("a {key} listed twice"),
                        limit => limit.to_string(),
                    };
                    if let Some(print) = warnings::hear(&self.name, method, &cause) {
                        tracing::warn!(
                            upstream = self.name,
                            method,
                            why = %refused,
                            suppressed = print.suppressed,
                            "an upstream listing is refused: what was pinned before stays served"
                        );
                    }
                    listing.push((kind, KindListing::Refused(refused)));
                }
                Err(error) => {
                    if let Some(print) = warnings::hear(&self.name, method, &error.to_string()) {
                        tracing::warn!(upstream = self.name, method, error = ?error.to_string(), suppressed = print.suppressed, "cannot list the upstream");
                    }
                    self.remember_failure(format!("cannot list ({method}): {error}"));
                    return false;
                }
            }
        }
        if listing != self.listing() || !self.has_listed() {
            *write(&self.listing) = listing;
            self.listed.store(true, Ordering::Release);
            news.listed(self);
        }
        true
    }
}

/// One call's wish for a log level, counted among the upstream's until dropped.
#[must_use = "the wish lasts while it is held"]
pub struct LogWish {
    wishes: Arc<Mutex<BTreeMap<LogLevel, usize>>>,
    level: LogLevel,
}

impl LogWish {
    fn new(wishes: Arc<Mutex<BTreeMap<LogLevel, usize>>>, level: LogLevel) -> Self {
        *lock(&wishes).entry(level).or_default() += 1;
        Self { wishes, level }
    }

    /// The lowest level any call in flight wants: this one's at most.
    fn lowest(&self) -> LogLevel {
        lock(&self.wishes).keys().next().copied().unwrap_or(self.level)
    }
}

impl Drop for LogWish {
    fn drop(&mut self) {
        let mut wishes = lock(&self.wishes);
        if let Some(count) = wishes.get_mut(&self.level) {
            *count -= 1;
            if *count == 0 {
                wishes.remove(&self.level);
            }
        }
    }
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// The URI of a `notifications/resources/updated`; URIs are never rewritten, so it is
/// the realm's too.
fn updated_uri(notice: &Notice) -> Option<&str> {
    (notice.method == "notifications/resources/updated").then(|| notice.params.get("uri")?.as_str()).flatten()
}

/// Every entry of one list method, following `nextCursor` page after page into
/// `collect` (which refuses the listing past its limits) and stopping at a cursor seen
/// before; each page within `page_timeout`. A JSON-RPC error refuses the listing; a
/// failed or timed-out transport fails it.
async fn list(
    connection: &Connection,
    method: &'static str,
    field: &'static str,
    mut collect: Collect,
    page_timeout: Duration,
) -> Result<Result<(Vec<Value>, Vec<(String, usize)>), Refused>, ClientError> {
    let mut cursors = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = Map::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".into(), json!(cursor));
        }
        let mut page = match tokio::time::timeout(page_timeout, connection.request(Outgoing::new(method, params))).await
        {
            Ok(Ok(page)) => page,
            Ok(Err(ClientError::Rpc { code, message, .. })) => {
                return Ok(Err(Refused::Failed { method, code, message }));
            }
            // The page was dropped unread, and the connection is still good.
            Ok(Err(ClientError::TooLarge { limit })) => return Ok(Err(Refused::PageTooLarge { limit })),
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(ClientError::TimedOut("list_timeout_ms")),
        };
        // A page without its kind's array is not an empty listing: taken as one, it
        // would remove every pin of the kind.
        let Some(Value::Array(entries)) = page.get_mut(field).map(Value::take) else {
            return Ok(Err(Refused::Malformed { field }));
        };
        if let Err(refused) = collect.page(entries) {
            return Ok(Err(refused));
        }
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        match &cursor {
            Some(next) if !cursors.contains(next) => {
                if let Err(refused) = collect.cursor(next) {
                    return Ok(Err(refused));
                }
                cursors.insert(next.clone());
            }
            _ => return Ok(Ok(collect.finish())),
        }
    }
}

/// The guarded value, also after a panic elsewhere: every write here leaves it whole.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}
