//! One upstream of a realm, alive: its connection (made, lost and made again with
//! backoff), its health, its latest listing, and which of the realm's capabilities it
//! serves under which upstream name.

//!
//! By job: `supervisor.rs` keeps it connected and listed, `refresh.rs` lists it,
//! `calls.rs` starts and settles its calls; subscriptions are `crate::subscriptions`'.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bondry_core::capability::{CapabilityId, CapabilityKind};
use bondry_core::handler::LogLevel;
use bondry_mcp_proto::lint::ParamHeader;
use tokio::sync::{Notify, watch};

use crate::backoff::Backoff;
use crate::client::Connection;
use crate::listing::{KindListing, Listing};
use crate::slots::CallSlots;
use crate::spec::UpstreamSpec;
use crate::subscriptions::Followers;

mod calls;
mod refresh;
mod supervisor;

pub use calls::{Flight, LogWish, Unrelayed};

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
    /// Attempts to connect again after one failed or a connection ended.
    pub restarts: u64,
}

impl Status {
    /// `serving`, `connecting`, or `reconnecting` while the supervisor waits to try again.
    pub fn state(&self) -> &'static str {
        state(self.connected, self.retry.is_some())
    }
}

fn state(connected: bool, waiting: bool) -> &'static str {
    match (connected, waiting) {
        (true, _) => "serving",
        (false, true) => "reconnecting",
        (false, false) => "connecting",
    }
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
    /// Attempts to connect again after one failed or a connection ended.
    restarts: u64,
}

impl Upstream {
    /// The upstream of `spec`, keeping `followers`' resources subscribed.
    pub fn new(spec: UpstreamSpec, followers: Arc<Followers>) -> Self {
        let calls = Arc::new(CallSlots::new(spec.tunables.max_concurrent_calls));
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
        self.calls.resize(spec.tunables.max_concurrent_calls);
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
        let (retry, restarts) = {
            let health = lock(&self.health);
            let retry = health.retry_at_ms.map(|next_at_ms| Retry { failed: health.backoff.failed(), next_at_ms });
            (retry, health.restarts)
        };
        Status {
            retry,
            restarts,
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

    /// What [`Status::state`] says, without making the rest of the status.
    pub fn state(&self) -> &'static str {
        let waiting = lock(&self.health).retry_at_ms.is_some();
        state(read(&self.connection).is_some(), waiting)
    }

    fn last_listed_ms(&self) -> Option<u64> {
        let refreshed = *self.refreshed.borrow();
        refreshed.listed.then_some(refreshed.at_ms).flatten()
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
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
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
