//! A realm's snapshot: the catalogue, the policy and the key set that one request sees.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};

use crate::policy::Policy;
use crate::registry::{Catalogue, CatalogueError, Lint, Registration};
use crate::schema::SchemaBounds;

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

/// What a realm's catalogue is compiled from: the configured capabilities, plus the
/// dynamic ones each handler owns (keyed by the handler's binding target), which survive
/// every rebuild until their handler replaces them.
pub struct Sources {
    pub configured: Vec<Registration>,
    pub dynamic: BTreeMap<String, Vec<Registration>>,
    pub bounds: SchemaBounds,
    pub lints: Vec<Arc<dyn Lint>>,
}

impl Sources {
    fn build(&self, version: u64) -> Result<Catalogue, CatalogueError> {
        let registrations = self.configured.iter().chain(self.dynamic.values().flatten()).cloned().collect();
        let lints: Vec<&dyn Lint> = self.lints.iter().map(|lint| &**lint).collect();
        Catalogue::build(version, registrations, &self.bounds, &lints)
    }
}

/// The live snapshot of a realm, swapped whole when configuration or the catalogue changes.
pub struct Registry {
    current: RwLock<Arc<RealmSnapshot>>,
    observers: RwLock<Vec<SwapObserver>>,
    /// Present when the registry rebuilds its own catalogue (dynamic capabilities and
    /// reloads); a registry swapped only by its host has none.
    sources: Mutex<Option<Sources>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("current", &self.current).finish_non_exhaustive()
    }
}

impl Registry {
    pub fn new(snapshot: RealmSnapshot) -> Self {
        Self { current: RwLock::new(Arc::new(snapshot)), observers: RwLock::new(Vec::new()), sources: Mutex::new(None) }
    }

    /// A registry whose catalogue is compiled from `sources`, under `policy` and `keys`.
    pub fn compiled(realm: &str, sources: Sources, policy: Policy, keys: KeySet) -> Result<Self, CatalogueError> {
        let catalogue = sources.build(1)?;
        let registry = Self::new(RealmSnapshot { realm: realm.to_owned(), catalogue, policy, keys });
        *registry.sources.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(sources);
        Ok(registry)
    }

    /// Replaces the dynamic capabilities `owner` contributes, then rebuilds and swaps. A
    /// set that does not compile (a clashing id, a bad schema) changes nothing.
    pub fn set_dynamic(&self, owner: &str, registrations: Vec<Registration>) -> Result<(), CatalogueError> {
        self.rebuild(
            |sources| {
                if registrations.is_empty() {
                    sources.dynamic.remove(owner);
                } else {
                    sources.dynamic.insert(owner.to_owned(), registrations);
                }
            },
            None,
        )
    }

    /// The configured capabilities the catalogue is compiled from, if it is compiled here.
    pub fn configured(&self) -> Vec<Registration> {
        let sources = self.sources.lock().unwrap_or_else(|poison| poison.into_inner());
        sources.as_ref().map(|sources| sources.configured.clone()).unwrap_or_default()
    }

    /// Replaces the configured capabilities and the policy (a configuration reload),
    /// keeping every handler's dynamic ones, then rebuilds and swaps. Nothing changes when
    /// the result does not compile.
    pub fn reconfigure(&self, configured: Vec<Registration>, policy: Policy) -> Result<(), CatalogueError> {
        self.rebuild(|sources| sources.configured = configured, Some(policy))
    }

    fn rebuild(&self, change: impl FnOnce(&mut Sources), policy: Option<Policy>) -> Result<(), CatalogueError> {
        let mut guard = self.sources.lock().unwrap_or_else(|poison| poison.into_inner());
        let Some(sources) = guard.as_mut() else {
            return Ok(());
        };
        let (saved_configured, saved_dynamic) = (sources.configured.clone(), sources.dynamic.clone());
        change(sources);
        let current = self.snapshot();
        match sources.build(current.catalogue.version() + 1) {
            Ok(catalogue) => {
                let policy = policy.unwrap_or_else(|| current.policy.clone());
                let snapshot =
                    RealmSnapshot { realm: current.realm.clone(), catalogue, policy, keys: current.keys.clone() };
                // Swapped while the sources are held, so rebuilds apply in order.
                self.swap(snapshot);
                Ok(())
            }
            Err(error) => {
                sources.configured = saved_configured;
                sources.dynamic = saved_dynamic;
                Err(error)
            }
        }
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
        let new = Arc::new(snapshot);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Catalogue;
    use crate::schema::SchemaBounds;

    fn snapshot(version: u64) -> RealmSnapshot {
        RealmSnapshot {
            realm: "default".into(),
            catalogue: Catalogue::build(version, Vec::new(), &SchemaBounds::default(), &[]).unwrap(),
            policy: Policy::default(),
            keys: KeySet { active: Key { id: "k1".into(), secret: [7; 32] }, retired: Vec::new() },
        }
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
}
