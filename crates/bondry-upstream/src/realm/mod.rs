//! A realm's upstreams together: started and stopped as one, and named as one, since
//! the naming rule decides between upstreams in stanza order (see [`crate::naming`]).
//!
//! Every listing that changes something moves the upstream's pins, names every
//! upstream's entries again, against the realm's own capabilities, and offers each
//! upstream's pinned set to the registry; what does not compile is skipped with a warning
//! and never costs the realm (`offer.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use bondry_core::capability::CapabilityKind;
use bondry_core::handler::Handler;
use bondry_core::realm::RealmEvents;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::bridge::Exchanges;
use crate::catalogue::Exposed;
use crate::naming::Owner;
use crate::pins::{PinBook, PinStore, StoreError};
use crate::relay::Relay;
use crate::spec::UpstreamSpec;
use crate::upstream::{News, Stop, Upstream, lock, read, write};

mod offer;

/// The upstreams of one realm, while they are served.
pub struct RealmUpstreams {
    pub(crate) realm: Arc<Realm>,
    /// Each upstream's way to stop, by name; changed by a reload.
    stops: Mutex<HashMap<String, watch::Sender<Stop>>>,
    tasks: Mutex<JoinSet<()>>,
}

/// What the realm's upstreams share: the realm, and the upstreams in stanza order.
pub(crate) struct Realm {
    /// The realm's name, under which its upstreams' pins are kept.
    pub(crate) name: String,
    events: RealmEvents,
    pub(crate) members: RwLock<Vec<Member>>,
    /// One naming at a time, so two listings landing together are named in order.
    naming: Mutex<()>,
    /// The input exchanges held for the realm's callers, whichever upstream asked.
    exchanges: Arc<Exchanges>,
    pub(crate) store: Arc<dyn PinStore>,
    /// The owner of every id ever named in the realm: an id is never given to another.
    owners: Mutex<HashMap<String, Owner>>,
}

/// Whose pins a naming moves first.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Observe<'a> {
    /// The upstream that listed: its listing is logged.
    Listed(&'a str),
    /// Every upstream that listed before (a reload may have changed filters and hashes).
    All,
    /// None (an approval moved them already).
    Nothing,
}

/// One upstream of the realm and its handler, made once: a listing that changes nothing
/// of an entry keeps it compiled, since the catalogue knows an unchanged entry by its
/// handler.
#[derive(Clone)]
pub(crate) struct Member {
    pub(crate) upstream: Arc<Upstream>,
    relay: Arc<dyn Handler>,
    /// The upstream's pins, as its store keeps them.
    pub(crate) pins: Arc<Mutex<PinBook>>,
    /// The id each admitted entry is exposed as, served or not, by kind and pin key.
    pub(crate) exposed: Arc<Mutex<HashMap<(CapabilityKind, String), Exposed>>>,
}

impl Member {
    /// The member serving `spec` with `pins`; one that replaces another takes over its
    /// followers, whose subscriptions the new connection makes again.
    fn new(
        spec: UpstreamSpec,
        exchanges: &Arc<Exchanges>,
        replaced: Option<&Member>,
        pins: Arc<Mutex<PinBook>>,
    ) -> Self {
        let followers = replaced.map_or_else(Arc::default, |member| member.upstream.followers());
        let upstream = Arc::new(Upstream::new(spec, followers));
        let relay = Arc::new(Relay::new(Arc::clone(&upstream), Arc::clone(exchanges)));
        Self { upstream, relay, pins, exposed: Arc::default() }
    }
}

impl RealmUpstreams {
    /// Starts serving `specs` in the realm `name` of `events`, their pins kept in
    /// `store`: each upstream is connected and listed in the background, so the realm
    /// serves at once and its upstreams' pinned capabilities appear as their listings
    /// land. Refused if the store cannot give an upstream's pins. Must be called within a
    /// Tokio runtime.
    pub fn start(
        name: &str,
        events: RealmEvents,
        specs: Vec<UpstreamSpec>,
        store: Arc<dyn PinStore>,
    ) -> Result<Self, StoreError> {
        events.promise(promised(&specs));
        let exchanges = Arc::new(Exchanges::default());
        let mut members = Vec::new();
        for spec in specs {
            let pins = Arc::new(Mutex::new(store.load(name, &spec.name)?));
            members.push(Member::new(spec, &exchanges, None, pins));
        }
        events.rank(owners(&members));
        let named = store.owners(name)?;
        let realm = Arc::new(Realm {
            name: name.to_owned(),
            events,
            members: RwLock::new(members.clone()),
            naming: Mutex::new(()),
            exchanges,
            store,
            owners: Mutex::new(named),
        });
        let started = Self { realm, stops: Mutex::new(HashMap::new()), tasks: Mutex::new(JoinSet::new()) };
        for member in &members {
            started.supervise(member);
        }
        Ok(started)
    }

    fn supervise(&self, member: &Member) {
        let (stop, stopping) = watch::channel(Stop::Serving);
        let news: Arc<dyn News> = Arc::clone(&self.realm) as Arc<dyn News>;
        lock(&self.tasks).spawn(Arc::clone(&member.upstream).supervise(stopping, news));
        lock(&self.stops).insert(member.upstream.name().to_owned(), stop);
    }

    /// Serves `specs` from now on, as a reload says: an upstream whose
    /// stanza did not change keeps its connection, and so does one whose changes reach
    /// it the same way (naming, filters, limits); one whose transport or versions
    /// changed gets a new connection while its calls in flight finish on the old one; a
    /// removed one is closed at once, its calls answering unavailable, and its
    /// capabilities withdrawn. Must be called within a Tokio runtime.
    pub fn reconfigure(&self, specs: Vec<UpstreamSpec>) {
        self.realm.events.promise(promised(&specs));
        let old = read(&self.realm.members).clone();
        let mut members = Vec::new();
        let mut started = Vec::new();
        for spec in specs {
            match old.iter().find(|member| member.upstream.name() == spec.name) {
                Some(kept) if kept.upstream.spec().same_connection(&spec) => {
                    if *kept.upstream.spec() != spec {
                        kept.upstream.respec(spec);
                    }
                    members.push(kept.clone());
                }
                replaced => {
                    // A replacing connection keeps the pins of the one it replaces.
                    let pins = match replaced {
                        Some(member) => Arc::clone(&member.pins),
                        None => match self.realm.store.load(&self.realm.name, &spec.name) {
                            Ok(pins) => Arc::new(Mutex::new(pins)),
                            Err(error) => {
                                tracing::error!(upstream = spec.name, %error, "upstream not started: its pins cannot be read");
                                continue;
                            }
                        },
                    };
                    if replaced.is_some() {
                        self.stop(&spec.name, Stop::AfterCalls);
                    }
                    let member = Member::new(spec, &self.realm.exchanges, replaced, pins);
                    started.push(member.clone());
                    members.push(member);
                }
            }
        }
        for gone in
            old.iter().filter(|member| !members.iter().any(|kept| kept.upstream.name() == member.upstream.name()))
        {
            self.stop(gone.upstream.name(), Stop::Now);
            self.realm.events.offer(&gone.upstream.owner(), Vec::new());
            tracing::info!(upstream = gone.upstream.name(), "upstream removed: its capabilities are withdrawn");
        }
        self.realm.events.rank(owners(&members));
        *write(&self.realm.members) = members;
        for member in &started {
            self.supervise(member);
        }
        // Naming and filters may have changed for the upstreams that stayed.
        self.realm.name_and_offer(Observe::All);
    }

    fn stop(&self, name: &str, how: Stop) {
        if let Some(stop) = lock(&self.stops).remove(name) {
            stop.send_replace(how);
        }
    }

    /// Stops every upstream: each connection is closed (a stdio child's process group
    /// ended) before this returns. Calls still running fail as unavailable.
    pub async fn shutdown(&self) {
        for (_, stop) in lock(&self.stops).drain() {
            stop.send_replace(Stop::Now);
        }
        let mut tasks = std::mem::take(&mut *lock(&self.tasks));
        while tasks.join_next().await.is_some() {}
    }
}

/// The upstreams' owner keys in stanza order: their templates match a URI in that order,
/// after the realm's own, so the source declared first serves a URI two of them offer.
pub(super) fn owners(members: &[Member]) -> Vec<String> {
    members.iter().map(|member| member.upstream.owner()).collect()
}

/// The kinds the upstreams' `expose` names: the realm announces them from start-up.
fn promised(specs: &[UpstreamSpec]) -> Vec<CapabilityKind> {
    let expose = |pick: fn(&crate::spec::Expose) -> bool| specs.iter().any(|spec| pick(&spec.expose));
    let mut kinds = Vec::new();
    if expose(|expose| expose.tools) {
        kinds.push(CapabilityKind::Tool);
    }
    if expose(|expose| expose.prompts) {
        kinds.push(CapabilityKind::Prompt);
    }
    if expose(|expose| expose.resources) {
        kinds.extend([CapabilityKind::Resource, CapabilityKind::ResourceTemplate]);
    }
    kinds
}
