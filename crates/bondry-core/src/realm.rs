//! A realm's snapshot: the catalogue, the policy and the key set that one request sees.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::capability::{CapabilityId, CapabilityKind};
use crate::policy::{Policy, Principal};
use crate::registry::{Catalogue, CatalogueError, Lint, Registration};
use crate::schema::SchemaBounds;
use crate::search::Index;
use crate::view::{View, Views};

/// Everything a request in one realm reads, frozen at one instant.
///
/// A request keeps the `Arc` it started with, so a concurrent swap never changes the view
/// halfway through resolving and calling a capability.
#[derive(Debug)]
pub struct RealmSnapshot {
    pub realm: String,
    pub catalogue: Catalogue,
    pub policy: Policy,
    pub keys: KeySet,
    /// Kinds a backend will serve once it has listed them: announced from the start,
    /// so a client that connects before the listing lands still looks for them.
    pub promised: Vec<CapabilityKind>,
    /// The callers' views computed so far, shared by callers with the same grants.
    views: Views,
    /// The search index of the catalogue's searched tools, made when first searched (a
    /// snapshot nobody searches costs nothing more), or taken over from the snapshot before
    /// when its searched tools are the same.
    index: OnceLock<Arc<Index>>,
}

impl RealmSnapshot {
    pub fn new(realm: &str, catalogue: Catalogue, policy: Policy, keys: KeySet) -> Self {
        Self {
            realm: realm.to_owned(),
            catalogue,
            policy,
            keys,
            promised: Vec::new(),
            views: Views::default(),
            index: OnceLock::new(),
        }
    }

    /// Whether the realm serves `kind` now, or a backend promised it.
    pub fn announces(&self, kind: CapabilityKind) -> bool {
        self.catalogue.has_kind(kind) || self.promised.contains(&kind)
    }

    /// What `principal` may list of `kind` through `adapter`, in id order: computed once
    /// per set of covering grants in this snapshot.
    pub fn view(&self, principal: &Principal, adapter: &str, kind: CapabilityKind) -> Arc<View> {
        self.views.get(&self.catalogue, &self.policy, principal, adapter, kind)
    }

    /// The search index of the catalogue's searched tools, numbered as views' members are.
    pub fn search_index(&self) -> &Index {
        self.index.get_or_init(|| Arc::new(Index::build(self.catalogue.searched().to_vec())))
    }

    /// Takes over `previous`'s search index, if it made one and searched the very tools
    /// this snapshot searches: an upstream's relisting or a reload that leaves them be does
    /// not make the next search build it again.
    fn keep_index_of(&self, previous: &RealmSnapshot) {
        let (now, before) = (self.catalogue.searched(), previous.catalogue.searched());
        let same = now.len() == before.len() && now.iter().zip(before).all(|(a, b)| Arc::ptr_eq(a, b));
        if let (true, Some(index)) = (same, previous.index.get()) {
            let _ = self.index.set(Arc::clone(index));
        }
    }
}

/// A symmetric key with its id: the material that seals tokens issued in a realm.
#[derive(Clone)]
pub struct Key {
    pub id: String,
    pub secret: [u8; 32],
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key").field("id", &self.id).field("secret", &"<redacted>").finish()
    }
}

/// One active key that seals and opens, plus older keys that only open.
#[derive(Debug, Clone)]
pub struct KeySet {
    pub active: Key,
    pub retired: Vec<Key>,
}

/// Called after each swap with the old and the new snapshot.
pub type SwapObserver = Box<dyn Fn(&RealmSnapshot, &RealmSnapshot) + Send + Sync>;

/// Called with the URI of a resource a backend says changed outside any call.
pub type UpdateObserver = Box<dyn Fn(&str) + Send + Sync>;

/// What a realm's catalogue is compiled from: the configured capabilities, plus the
/// dynamic ones each handler owns (keyed by the handler's binding target), which survive
/// every rebuild until their handler replaces them.
pub struct Sources {
    pub configured: Vec<Registration>,
    pub dynamic: BTreeMap<String, Vec<Registration>>,
    /// Owners of dynamic capabilities whose order matters, first to last; the others
    /// follow in key order. A URI is matched against templates in this precedence.
    pub ranked: Vec<String>,
    pub bounds: SchemaBounds,
    pub lints: Vec<Arc<dyn Lint>>,
}

impl Sources {
    /// The catalogue tagged `version`, taking over what did not change from `previous`
    /// (built from these sources' bounds and lints, as every catalogue of a registry is).
    fn build(&self, previous: Option<&Catalogue>, version: u64) -> Result<Catalogue, CatalogueError> {
        let ranked = self.ranked.iter().filter_map(|owner| self.dynamic.get(owner));
        let unranked = self
            .dynamic
            .iter()
            .filter(|(owner, _)| !self.ranked.contains(owner))
            .map(|(_, registrations)| registrations);
        let registrations = self.configured.iter().chain(ranked.chain(unranked).flatten());
        let lints: Vec<&dyn Lint> = self.lints.iter().map(|lint| &**lint).collect();
        Catalogue::build_reusing(previous, version, registrations, &self.bounds, &lints)
    }

    /// Whether `registration` compiles on its own under these bounds and lints.
    fn compiles_alone(&self, registration: &Registration) -> Result<(), CatalogueError> {
        let lints: Vec<&dyn Lint> = self.lints.iter().map(|lint| &**lint).collect();
        Catalogue::build_reusing(None, 0, [registration], &self.bounds, &lints).map(drop)
    }

    /// Points every registration at the descriptor its entry in `catalogue` holds, so an
    /// equal copy handed in again (a reload parses every descriptor anew) is let go and
    /// the sources and the catalogue keep one copy between them.
    fn share_descriptors(&mut self, catalogue: &Catalogue) {
        for registration in self.configured.iter_mut().chain(self.dynamic.values_mut().flatten()) {
            let Some(entry) = catalogue.get(registration.descriptor.id.as_str()) else { continue };
            // The same handler under a unique id: this registration is what the entry was
            // compiled from, or taken over for, so their descriptors are equal.
            if Arc::ptr_eq(&entry.handler, &registration.handler) {
                registration.descriptor = Arc::clone(&entry.descriptor);
            }
        }
    }
}

/// A registry's sources, and the snapshot it last built from them: what a rebuild may
/// take compiled capabilities from (a snapshot the host swapped in may have been built
/// under other bounds or lints).
struct Compiled {
    sources: Sources,
    built: Arc<RealmSnapshot>,
}

/// Puts a registry's sources back as they were before a change that did not compile.
type Undo = Box<dyn FnOnce(&mut Sources)>;

/// The live snapshot of a realm, swapped whole when configuration or the catalogue changes.
pub struct Registry {
    current: RwLock<Arc<RealmSnapshot>>,
    observers: RwLock<Vec<SwapObserver>>,
    update_observers: RwLock<Vec<UpdateObserver>>,
    /// What backends promised; every rebuilt snapshot carries it.
    promised: RwLock<Vec<CapabilityKind>>,
    /// Present when the registry rebuilds its own catalogue (dynamic capabilities and
    /// reloads); a registry swapped only by its host has none.
    sources: Mutex<Option<Compiled>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("current", &self.current).finish_non_exhaustive()
    }
}

impl Registry {
    pub fn new(snapshot: RealmSnapshot) -> Self {
        Self {
            current: RwLock::new(Arc::new(snapshot)),
            observers: RwLock::new(Vec::new()),
            update_observers: RwLock::new(Vec::new()),
            promised: RwLock::new(Vec::new()),
            sources: Mutex::new(None),
        }
    }

    /// A registry whose catalogue is compiled from `sources`, under `policy` and `keys`.
    pub fn compiled(realm: &str, sources: Sources, policy: Policy, keys: KeySet) -> Result<Self, CatalogueError> {
        let catalogue = sources.build(None, 1)?;
        let registry = Self::new(RealmSnapshot::new(realm, catalogue, policy, keys));
        let built = registry.snapshot();
        *registry.sources.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(Compiled { sources, built });
        Ok(registry)
    }

    /// Replaces the dynamic capabilities `owner` contributes, then rebuilds and swaps. A
    /// set that does not compile (a clashing id, a bad schema) changes nothing.
    pub fn set_dynamic(&self, owner: &str, registrations: Vec<Registration>) -> Result<(), CatalogueError> {
        self.rebuild(
            |sources| {
                let owner = owner.to_owned();
                let replaced = if registrations.is_empty() {
                    sources.dynamic.remove(&owner)
                } else {
                    sources.dynamic.insert(owner.clone(), registrations)
                };
                Box::new(move |sources: &mut Sources| match replaced {
                    Some(replaced) => {
                        sources.dynamic.insert(owner, replaced);
                    }
                    None => {
                        sources.dynamic.remove(&owner);
                    }
                })
            },
            None,
        )
    }

    /// Offers `owner`'s dynamic capabilities, serving every one that compiles: an entry
    /// that does not (a bad schema, a lint, an id or URI another source holds) is left out
    /// and returned with why, and never costs the others or the realm. Withdrawing is
    /// offering none.
    pub fn offer_dynamic(&self, owner: &str, mut registrations: Vec<Registration>) -> Vec<Skipped> {
        let mut skipped = Vec::new();
        // Alone first, which is cheap and finds most; then together, where only clashes remain.
        if let Some(compiled) = self.sources.lock().unwrap_or_else(|poison| poison.into_inner()).as_ref() {
            registrations.retain(|registration| match compiled.sources.compiles_alone(registration) {
                Ok(()) => true,
                Err(error) => {
                    skipped.push(Skipped { id: registration.descriptor.id.clone(), why: error.to_string() });
                    false
                }
            });
        }
        // Each failed build leaves one entry out, so this ends within as many builds as entries.
        while let Err(error) = self.set_dynamic(owner, registrations.clone()) {
            match registrations.iter().rposition(|registration| &registration.descriptor.id == error.id()) {
                Some(at) => {
                    registrations.remove(at);
                    skipped.push(Skipped { id: error.id().clone(), why: error.to_string() });
                }
                // Not one of the offered entries: nothing offered can be served.
                None => {
                    let why = error.to_string();
                    let ids = registrations.drain(..).map(|registration| registration.descriptor.id.clone());
                    skipped.extend(ids.map(|id| Skipped { id, why: why.clone() }));
                }
            }
        }
        skipped
    }

    /// The configured capabilities the catalogue is compiled from, if it is compiled here.
    pub fn configured(&self) -> Vec<Registration> {
        let sources = self.sources.lock().unwrap_or_else(|poison| poison.into_inner());
        sources.as_ref().map(|compiled| compiled.sources.configured.clone()).unwrap_or_default()
    }

    /// Replaces the configured capabilities and the policy (a configuration reload),
    /// keeping every handler's dynamic ones, then rebuilds and swaps. Nothing changes when
    /// the result does not compile.
    pub fn reconfigure(&self, configured: Vec<Registration>, policy: Policy) -> Result<(), CatalogueError> {
        self.rebuild(
            |sources| {
                let replaced = std::mem::replace(&mut sources.configured, configured);
                Box::new(move |sources: &mut Sources| sources.configured = replaced)
            },
            Some(policy),
        )
    }

    /// Applies `change` to the sources, rebuilds and swaps; when the result does not
    /// compile, the undo `change` returned puts the sources back as they were (nothing is
    /// copied to make that possible, so a rebuild costs what changed).
    fn rebuild(&self, change: impl FnOnce(&mut Sources) -> Undo, policy: Option<Policy>) -> Result<(), CatalogueError> {
        let mut guard = self.sources.lock().unwrap_or_else(|poison| poison.into_inner());
        let Some(Compiled { sources, built }) = guard.as_mut() else {
            return Ok(());
        };
        let undo = change(sources);
        let current = self.snapshot();
        let previous = Arc::ptr_eq(&current, built).then_some(&current.catalogue);
        match sources.build(previous, current.catalogue.version() + 1) {
            Ok(catalogue) => {
                sources.share_descriptors(&catalogue);
                let policy = policy.unwrap_or_else(|| current.policy.clone());
                let mut snapshot = RealmSnapshot::new(&current.realm, catalogue, policy, current.keys.clone());
                snapshot.promised = self.promised.read().unwrap_or_else(|poison| poison.into_inner()).clone();
                snapshot.keep_index_of(&current);
                // Swapped while the sources are held, so rebuilds apply in order.
                *built = Arc::new(snapshot);
                self.swap_in(Arc::clone(built));
                Ok(())
            }
            Err(error) => {
                undo(sources);
                Err(error)
            }
        }
    }

    /// Ranks the owners of dynamic capabilities: their templates match a URI in this
    /// order, after the configured ones; rebuilds and swaps when the order changed.
    pub fn rank_dynamic(&self, owners: Vec<String>) {
        let unchanged = self
            .sources
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .as_ref()
            .is_none_or(|compiled| compiled.sources.ranked == owners);
        if unchanged {
            return;
        }
        // Only the order changes, which no build refuses.
        let _ = self.rebuild(
            |sources| {
                let replaced = std::mem::replace(&mut sources.ranked, owners);
                Box::new(move |sources: &mut Sources| sources.ranked = replaced)
            },
            None,
        );
    }

    /// The snapshot in force now.
    pub fn snapshot(&self) -> Arc<RealmSnapshot> {
        // A poisoned lock only means a writer panicked between two whole-Arc stores,
        // so the value inside is still a complete snapshot.
        Arc::clone(&self.current.read().unwrap_or_else(|poison| poison.into_inner()))
    }

    /// Replaces the snapshot atomically; requests already running keep the old one.
    /// Observers then see both, so adapters can tell each view what changed.
    pub fn swap(&self, snapshot: RealmSnapshot) {
        self.swap_in(Arc::new(snapshot));
    }

    fn swap_in(&self, new: Arc<RealmSnapshot>) {
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|poison| poison.into_inner()),
            Arc::clone(&new),
        );
        for observe in self.observers.read().unwrap_or_else(|poison| poison.into_inner()).iter() {
            observe(&old, &new);
        }
    }

    /// Registers `observer` for every later swap.
    pub fn observe(&self, observer: SwapObserver) {
        self.observers.write().unwrap_or_else(|poison| poison.into_inner()).push(observer);
    }

    /// Announces `kinds` in every snapshot from now on (see [`RealmEvents::promise`]).
    fn promise(&self, kinds: Vec<CapabilityKind>) {
        let mut promised = self.promised.write().unwrap_or_else(|poison| poison.into_inner());
        if *promised == kinds {
            return;
        }
        *promised = kinds;
        drop(promised);
        // A rebuild that changes nothing else: the sources compiled before, so they compile
        // again, taking every entry over as it is.
        let _unchanged = self.rebuild(|_| Box::new(|_: &mut Sources| {}), None);
    }

    /// Registers `observer` for every resource update announced through [`RealmEvents`].
    pub fn observe_updates(&self, observer: UpdateObserver) {
        self.update_observers.write().unwrap_or_else(|poison| poison.into_inner()).push(observer);
    }

    fn resource_updated(&self, uri: &str) {
        for observe in self.update_observers.read().unwrap_or_else(|poison| poison.into_inner()).iter() {
            observe(uri);
        }
    }
}

/// A dynamic capability [`Registry::offer_dynamic`] left out, and why.
#[derive(Debug)]
pub struct Skipped {
    pub id: CapabilityId,
    /// The catalogue's refusal, for the log.
    pub why: String,
}

/// What a backend holds of its realm from wiring time on, to act outside any call: it
/// offers the capabilities it serves and says when a resource changed. Narrower than the
/// registry: a backend cannot reconfigure the realm or swap its snapshot.
#[derive(Clone)]
pub struct RealmEvents {
    registry: Arc<Registry>,
}

impl RealmEvents {
    pub fn new(registry: Arc<Registry>) -> Self {
        Self { registry }
    }

    /// The realm as it is now: what a backend names its capabilities against.
    pub fn snapshot(&self) -> Arc<RealmSnapshot> {
        self.registry.snapshot()
    }

    /// Serves `registrations` as `owner`'s, replacing what it offered before; see
    /// [`Registry::offer_dynamic`].
    pub fn offer(&self, owner: &str, registrations: Vec<Registration>) -> Vec<Skipped> {
        self.registry.offer_dynamic(owner, registrations)
    }

    /// The order in which the realm's backends' templates match a URI, after the
    /// configured ones: `owners` first to last; see [`Registry::rank_dynamic`].
    pub fn rank(&self, owners: Vec<String>) {
        self.registry.rank_dynamic(owners);
    }

    /// The resource at `uri` changed: its subscribers hear of it.
    pub fn resource_updated(&self, uri: &str) {
        self.registry.resource_updated(uri);
    }

    /// The kinds the realm's backends will serve, announced from now on whether listed
    /// yet or not; replaces what was promised before.
    pub fn promise(&self, kinds: Vec<CapabilityKind>) {
        self.registry.promise(kinds);
    }
}

impl fmt::Debug for RealmEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealmEvents").field("realm", &self.registry.snapshot().realm).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Catalogue;
    use crate::schema::SchemaBounds;

    fn snapshot(version: u64) -> RealmSnapshot {
        RealmSnapshot::new(
            "default",
            Catalogue::build(version, Vec::new(), &SchemaBounds::default(), &[]).unwrap(),
            Policy::default(),
            KeySet { active: Key { id: "k1".into(), secret: [7; 32] }, retired: Vec::new() },
        )
    }

    #[test]
    fn a_swap_leaves_snapshots_in_use_untouched() {
        let registry = Registry::new(snapshot(1));
        let in_use = registry.snapshot();
        let seen = Arc::new(RwLock::new(Vec::new()));
        let record = Arc::clone(&seen);
        registry.observe(Box::new(move |old, new| {
            record.write().unwrap().push((old.catalogue.version(), new.catalogue.version()));
        }));
        registry.swap(snapshot(2));
        assert_eq!(*seen.read().unwrap(), [(1, 2)]);
        assert_eq!(in_use.catalogue.version(), 1);
        assert_eq!(registry.snapshot().catalogue.version(), 2);
    }

    #[test]
    fn keys_never_print_their_secret() {
        let printed = format!("{:?}", snapshot(1).keys);
        assert!(printed.contains("k1") && printed.contains("redacted") && !printed.contains("7, 7"), "{printed}");
    }

    struct Nothing;

    impl crate::handler::Handler for Nothing {
        fn call(&self, _: crate::handler::HandlerRequest) -> crate::BoxFuture<'static, crate::handler::Answer> {
            Box::pin(std::future::ready(crate::handler::Answer::Failure { code: "nothing".into(), detail: None }))
        }
    }

    fn tool(id: &str, description: &str, handler: &Arc<dyn crate::handler::Handler>) -> Registration {
        use crate::capability::{Binding, CapabilityId, CapabilityKind, Descriptor};
        let descriptor = Descriptor {
            summary: Some(description.into()),
            ..Descriptor::new(
                CapabilityId::new(id).unwrap(),
                CapabilityKind::Tool,
                serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
                Binding { kind: "builtin".into(), target: "nothing".into() },
            )
        };
        Registration { descriptor: Arc::new(descriptor), handler: Arc::clone(handler) }
    }

    fn entry(registry: &Registry, id: &str) -> Arc<crate::registry::Capability> {
        Arc::clone(registry.snapshot().catalogue.get(id).unwrap())
    }

    #[test]
    fn a_rebuild_takes_over_what_did_not_change() {
        let handler: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let configured = vec![tool("a", "one", &handler), tool("b", "two", &handler), tool("c", "three", &handler)];
        let sources = Sources {
            configured,
            dynamic: BTreeMap::new(),
            ranked: Vec::new(),
            bounds: SchemaBounds::default(),
            lints: Vec::new(),
        };
        let registry = Registry::compiled("default", sources, Policy::default(), snapshot(1).keys).unwrap();
        let (a, b, c) = (entry(&registry, "a"), entry(&registry, "b"), entry(&registry, "c"));

        // One changed descriptor and one new capability: only those are compiled.
        let changed = vec![tool("a", "one", &handler), tool("b", "TWO", &handler), tool("c", "three", &handler)];
        registry.reconfigure(changed, Policy::default()).unwrap();
        registry.set_dynamic("owner", vec![tool("d", "four", &handler)]).unwrap();
        assert!(Arc::ptr_eq(&a, &entry(&registry, "a")) && Arc::ptr_eq(&c, &entry(&registry, "c")));
        assert!(!Arc::ptr_eq(&b, &entry(&registry, "b")));
        assert_eq!(entry(&registry, "b").descriptor.summary.as_deref(), Some("TWO"));
        // Equal copies handed in again (as a reload parses them) are let go: the sources
        // and the catalogue share one descriptor each.
        let copies: Vec<Registration> = registry
            .configured()
            .into_iter()
            .map(|r| Registration { descriptor: Arc::new((*r.descriptor).clone()), handler: r.handler })
            .collect();
        registry.reconfigure(copies, Policy::default()).unwrap();
        assert!(Arc::ptr_eq(&a, &entry(&registry, "a")));
        for registration in registry.configured() {
            let id = registration.descriptor.id.as_str();
            assert!(Arc::ptr_eq(&registration.descriptor, &entry(&registry, id).descriptor), "{id}");
        }

        // Another handler for the same descriptor is another capability.
        let other: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let moved = vec![tool("a", "one", &other), tool("b", "TWO", &handler), tool("c", "three", &handler)];
        registry.reconfigure(moved, Policy::default()).unwrap();
        assert!(!Arc::ptr_eq(&a, &entry(&registry, "a")));

        // After the host swapped in a catalogue of its own, nothing is taken from it.
        let c = entry(&registry, "c");
        let host = Catalogue::build(9, vec![tool("c", "three", &handler)], &SchemaBounds::default(), &[]).unwrap();
        let host_c = Arc::clone(host.get("c").unwrap());
        registry.swap(RealmSnapshot::new("default", host, Policy::default(), snapshot(9).keys));
        registry.set_dynamic("owner", Vec::new()).unwrap();
        assert!(!Arc::ptr_eq(&host_c, &entry(&registry, "c")) && !Arc::ptr_eq(&c, &entry(&registry, "c")));
    }

    #[test]
    fn a_rebuild_keeps_the_search_index_while_the_searched_tools_stay() {
        let handler: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let searched = |id: &str, description: &str| {
            let Registration { descriptor, handler } = tool(id, description, &handler);
            let listing = crate::capability::Listing::Searched;
            Registration {
                descriptor: Arc::new(crate::capability::Descriptor { listing, ..(*descriptor).clone() }),
                handler,
            }
        };
        let sources = Sources {
            configured: vec![searched("a", "one"), tool("b", "two", &handler)],
            dynamic: BTreeMap::new(),
            ranked: Vec::new(),
            bounds: SchemaBounds::default(),
            lints: Vec::new(),
        };
        let registry = Registry::compiled("default", sources, Policy::default(), snapshot(1).keys).unwrap();
        // Held, so the index it made stays where it is.
        let held = registry.snapshot();
        let first: *const Index = held.search_index();
        // A listed tool comes: the searched ones are the same, and so is the index.
        registry.set_dynamic("owner", vec![tool("c", "three", &handler)]).unwrap();
        assert!(std::ptr::eq(first, registry.snapshot().search_index()));
        // A searched one changes: the next search builds the index anew.
        registry.reconfigure(vec![searched("a", "ONE"), tool("b", "two", &handler)], Policy::default()).unwrap();
        assert!(!std::ptr::eq(first, registry.snapshot().search_index()));
        drop(held);
    }

    #[test]
    fn an_offer_serves_what_compiles_and_skips_the_rest() {
        let handler: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let sources = Sources {
            configured: vec![tool("a", "configured", &handler)],
            dynamic: BTreeMap::new(),
            ranked: Vec::new(),
            bounds: SchemaBounds::default(),
            lints: Vec::new(),
        };
        let registry = Arc::new(Registry::compiled("default", sources, Policy::default(), snapshot(1).keys).unwrap());
        let mut not_an_object = tool("c", "", &handler);
        Arc::make_mut(&mut not_an_object.descriptor).input_schema = serde_json::json!({"type": "string"});
        let events = RealmEvents::new(Arc::clone(&registry));
        let skipped =
            events.offer("backend", vec![tool("b", "", &handler), not_an_object, tool("a", "clash", &handler)]);
        let skipped: Vec<&str> = skipped.iter().map(|skipped| skipped.id.as_str()).collect();
        assert_eq!(skipped, ["c", "a"], "the bad schema alone, then the clash with a configured id");
        let snapshot = events.snapshot();
        assert_eq!(snapshot.catalogue.get("a").unwrap().descriptor.summary.as_deref(), Some("configured"));
        assert!(snapshot.catalogue.get("b").is_some() && snapshot.catalogue.get("c").is_none());
        assert!(events.offer("backend", Vec::new()).is_empty());
        assert!(registry.snapshot().catalogue.get("b").is_none(), "offering none withdraws");
    }

    fn template(id: &str, uri_template: &str, handler: &Arc<dyn crate::handler::Handler>) -> Registration {
        use crate::capability::{Binding, CapabilityId, CapabilityKind, Descriptor};
        let descriptor = Descriptor {
            uri: Some(uri_template.into()),
            mime_type: Some("text/plain".into()),
            ..Descriptor::new(
                CapabilityId::new(id).unwrap(),
                CapabilityKind::ResourceTemplate,
                serde_json::json!({"type": "object"}),
                Binding { kind: "builtin".into(), target: "nothing".into() },
            )
        };
        Registration { descriptor: Arc::new(descriptor), handler: Arc::clone(handler) }
    }

    #[test]
    fn a_uri_matches_configured_templates_first_then_each_owners_in_rank_order() {
        use crate::policy::{Grant, Principal, Subject};
        let handler: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let grant = |role: &str, id| Grant::parse(Subject::Role(role.into()), id, "mcp").unwrap();
        let mut grants: Vec<Grant> = ["z.own", "a.later", "b.sooner"].into_iter().map(|id| grant("r", id)).collect();
        grants.push(grant("s", "b.sooner"));
        let policy = Policy::new(grants);
        let sources = Sources {
            configured: vec![template("z.own", "test://own/{id}", &handler)],
            dynamic: BTreeMap::new(),
            ranked: Vec::new(),
            bounds: SchemaBounds::default(),
            lints: Vec::new(),
        };
        let registry = Arc::new(Registry::compiled("default", sources, policy, snapshot(1).keys).unwrap());
        let events = RealmEvents::new(Arc::clone(&registry));
        // Every template matches test://own/1, both backends' test://own/1/2; ids and owner keys
        // sort against the ranking.
        events.offer("a-later", vec![template("a.later", "test://{kind}/{+rest}", &handler)]);
        events.offer("b-sooner", vec![template("b.sooner", "test://own/{+rest}", &handler)]);
        let principal = Principal::anonymous(vec!["r".to_owned()]);
        let served = |uri: &str| match crate::dispatch::resolve_resource(&registry.snapshot(), &principal, "mcp", uri) {
            crate::dispatch::ResourceResolution::Visible { capability, .. } => capability.id().to_string(),
            other => panic!("{uri}: {other:?}"),
        };
        assert_eq!(served("test://own/1"), "z.own", "configured first");
        assert_eq!(served("test://own/1/2"), "a.later", "then the owners in key order, unranked");
        events.rank(vec!["b-sooner".into(), "a-later".into()]);
        assert_eq!(served("test://own/1"), "z.own");
        assert_eq!(served("test://own/1/2"), "b.sooner", "then the owners in rank order");
        assert_eq!(served("test://else/1"), "a.later");

        // A follower is followed where it would read: a template hidden from it is passed over.
        #[derive(Default)]
        struct Counting(Mutex<Vec<String>>);
        impl crate::handler::Handler for Counting {
            fn call(&self, _: crate::handler::HandlerRequest) -> crate::BoxFuture<'static, crate::handler::Answer> {
                Box::pin(std::future::ready(crate::handler::Answer::Failure { code: "nothing".into(), detail: None }))
            }
            fn watch(&self, uri: &str) {
                self.0.lock().unwrap().push(format!("+{uri}"));
            }
            fn unwatch(&self, uri: &str) {
                self.0.lock().unwrap().push(format!("-{uri}"));
            }
        }
        let counting = Arc::new(Counting::default());
        let counted: Arc<dyn crate::handler::Handler> = Arc::clone(&counting) as _;
        events.offer("b-sooner", vec![template("b.sooner", "test://own/{+rest}", &counted)]);
        let only_b = Principal::anonymous(vec!["s".to_owned()]);
        let watching = crate::dispatch::watch(&registry.snapshot(), &only_b, "mcp", "test://own/1");
        assert_eq!(*counting.0.lock().unwrap(), ["+test://own/1"], "not z.own's, which it cannot read");
        drop(watching);
        assert_eq!(*counting.0.lock().unwrap(), ["+test://own/1", "-test://own/1"]);
        assert!(crate::dispatch::watch(&registry.snapshot(), &only_b, "mcp", "test://else/1").is_none());
    }

    #[test]
    fn promised_kinds_are_announced_until_withdrawn() {
        let handler: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let sources = Sources {
            configured: Vec::new(),
            dynamic: BTreeMap::new(),
            ranked: Vec::new(),
            bounds: SchemaBounds::default(),
            lints: Vec::new(),
        };
        let registry = Arc::new(Registry::compiled("default", sources, Policy::default(), snapshot(1).keys).unwrap());
        let events = RealmEvents::new(Arc::clone(&registry));
        assert!(!registry.snapshot().announces(CapabilityKind::Tool));
        events.promise(vec![CapabilityKind::Tool]);
        assert!(registry.snapshot().announces(CapabilityKind::Tool), "announced before anything is listed");
        events.offer("backend", vec![tool("b", "", &handler)]);
        assert!(registry.snapshot().announces(CapabilityKind::Tool), "a rebuild keeps the promise");
        events.promise(Vec::new());
        events.offer("backend", Vec::new());
        assert!(!registry.snapshot().announces(CapabilityKind::Tool));
    }

    #[test]
    fn resource_updates_reach_every_update_observer() {
        let registry = Arc::new(Registry::new(snapshot(1)));
        let heard = Arc::new(RwLock::new(Vec::new()));
        let record = Arc::clone(&heard);
        registry.observe_updates(Box::new(move |uri| record.write().unwrap().push(uri.to_owned())));
        RealmEvents::new(registry).resource_updated("file:///a");
        assert_eq!(*heard.read().unwrap(), ["file:///a"]);
    }

    #[test]
    fn each_kind_is_indexed_in_id_order() {
        use crate::capability::CapabilityKind;
        let handler: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let mut prompt = tool("p", "a prompt", &handler);
        Arc::make_mut(&mut prompt.descriptor).kind = CapabilityKind::Prompt;
        let registrations = vec![tool("b", "", &handler), prompt, tool("a", "", &handler)];
        let catalogue = Catalogue::build(1, registrations, &SchemaBounds::default(), &[]).unwrap();
        let ids = |kind| catalogue.of_kind(kind).map(|entry| entry.id().as_str().to_owned()).collect::<Vec<_>>();
        assert_eq!(ids(CapabilityKind::Tool), ["a", "b"]);
        assert_eq!(ids(CapabilityKind::Prompt), ["p"]);
        assert!(catalogue.has_kind(CapabilityKind::Prompt) && !catalogue.has_kind(CapabilityKind::Resource));
        assert!(ids(CapabilityKind::ResourceTemplate).is_empty());
    }

    #[test]
    fn callers_with_the_same_grants_share_one_view_per_snapshot() {
        use crate::capability::CapabilityKind;
        use crate::policy::{Grant, PrincipalKind, Subject};
        let handler: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let registrations = vec![tool("demo.a", "", &handler), tool("demo.b", "", &handler), tool("x.c", "", &handler)];
        let grants = vec![
            Grant::parse(Subject::Role("demo".into()), "demo.*", "mcp").unwrap(),
            Grant::parse(Subject::Principal("carol".into()), "x.c", "mcp").unwrap(),
        ];
        let sources = Sources {
            configured: registrations,
            dynamic: BTreeMap::new(),
            ranked: Vec::new(),
            bounds: SchemaBounds::default(),
            lints: Vec::new(),
        };
        let registry = Registry::compiled("default", sources, Policy::new(grants.clone()), snapshot(1).keys).unwrap();
        let demo = |id: &str| Principal::new(id, PrincipalKind::User, vec!["demo".to_owned()]);
        let ids = |view: &View| view.entries().iter().map(|entry| entry.id().as_str().to_owned()).collect::<Vec<_>>();
        let snapshot = registry.snapshot();
        let (alice, bob, carol) = (demo("alice"), demo("bob"), demo("carol"));
        let view = snapshot.view(&alice, "mcp", CapabilityKind::Tool);
        assert_eq!(ids(&view), ["demo.a", "demo.b"]);
        assert!(Arc::ptr_eq(&view, &snapshot.view(&bob, "mcp", CapabilityKind::Tool)), "the same grants, one view");
        // Other covering grants, another view; another adapter or kind, another view.
        assert_eq!(ids(&snapshot.view(&carol, "mcp", CapabilityKind::Tool)), ["demo.a", "demo.b", "x.c"]);
        assert!(snapshot.view(&alice, "other", CapabilityKind::Tool).entries().is_empty());
        assert!(snapshot.view(&alice, "mcp", CapabilityKind::Prompt).entries().is_empty());
        // The digest is made once per view.
        assert_eq!(view.digest(|view| view.entries().len().to_string()), "2");
        assert_eq!(view.digest(|_| "again".into()), "2");
        // A swap starts from nothing: a changed catalogue or policy shows at once.
        registry.reconfigure(vec![tool("demo.a", "", &handler)], Policy::new(grants)).unwrap();
        assert_eq!(ids(&registry.snapshot().view(&alice, "mcp", CapabilityKind::Tool)), ["demo.a"]);
        registry.reconfigure(vec![tool("demo.a", "", &handler)], Policy::default()).unwrap();
        assert!(registry.snapshot().view(&alice, "mcp", CapabilityKind::Tool).entries().is_empty());
        assert_eq!(ids(&view), ["demo.a", "demo.b"], "a view in use is left as it was");
    }

    #[test]
    fn capabilities_with_one_schema_share_its_compiled_form() {
        let handler: Arc<dyn crate::handler::Handler> = Arc::new(Nothing);
        let mut other = tool("c", "", &handler);
        Arc::make_mut(&mut other.descriptor).input_schema =
            serde_json::json!({"type": "object", "properties": {"b": {"type": "string"}}});
        let registrations = vec![tool("a", "", &handler), tool("b", "", &handler), other];
        let catalogue = Catalogue::build(1, registrations, &SchemaBounds::default(), &[]).unwrap();
        let source = |id| catalogue.get(id).unwrap().input.source() as *const serde_json::Value;
        assert_eq!(source("a"), source("b"));
        assert_ne!(source("a"), source("c"));
        assert!(catalogue.get("c").unwrap().input.validate(&serde_json::json!({"b": 1})).is_err());
        assert!(catalogue.get("a").unwrap().input.validate(&serde_json::json!({"a": 1})).is_ok());
    }
}
