//! A realm's snapshot: the catalogue, the policy and the key set that one request sees.

use std::fmt;
use std::sync::{Arc, RwLock};

use crate::policy::Policy;
use crate::registry::Catalogue;

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

/// The live snapshot of a realm, swapped whole when configuration or the catalogue changes.
pub struct Registry {
    current: RwLock<Arc<RealmSnapshot>>,
    observers: RwLock<Vec<SwapObserver>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("current", &self.current).finish_non_exhaustive()
    }
}

impl Registry {
    pub fn new(snapshot: RealmSnapshot) -> Self {
        Self { current: RwLock::new(Arc::new(snapshot)), observers: RwLock::new(Vec::new()) }
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
