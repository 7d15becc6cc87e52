//! Callers' views of a snapshot: what one set of grants may list of one kind.
//!
//! Whether a capability is visible depends only on the grants that cover the caller, so
//! every caller covered by the same grants sees the same capabilities. A view is computed
//! once per (snapshot, adapter, kind, covering grants) and shared: a list request then
//! costs its page, not the catalogue. The cache lives in the snapshot, so a swap (a new
//! catalogue or new grants) starts from an empty one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::capability::CapabilityKind;
use crate::policy::{Policy, Principal};
use crate::registry::{Capability, Catalogue, is_searched};
use crate::search::Members;

/// What one set of grants may list of one kind, in id order, and, of tools, which of
/// those found by searching it holds.
#[derive(Debug)]
pub struct View {
    entries: Vec<Arc<Capability>>,
    searched: Members,
    digest: OnceLock<String>,
}

impl View {
    /// The capabilities listed, in id order.
    pub fn entries(&self) -> &[Arc<Capability>] {
        &self.entries
    }

    /// The tools found by searching that this view holds, as members of its catalogue's
    /// [`crate::search::Index`]; none for other kinds.
    pub fn searched(&self) -> &Members {
        &self.searched
    }

    /// The adapter's digest of this view (what its cursors are bound to), made by `make`
    /// the first time it is asked for and kept with the view.
    pub fn digest(&self, make: impl FnOnce(&View) -> String) -> &str {
        self.digest.get_or_init(|| make(self))
    }
}

/// Views kept per snapshot, at most; past it the cache starts over. Callers holding
/// grants of their own each have a view, so this bounds what they can make a snapshot
/// hold.
const MAX_VIEWS: usize = 256;

#[derive(Debug, PartialEq, Eq, Hash)]
struct Key {
    adapter: String,
    kind: CapabilityKind,
    /// The indices in the policy of the grants that cover the caller.
    covering: Vec<usize>,
}

/// The views of one snapshot computed so far.
#[derive(Debug, Default)]
pub(crate) struct Views {
    made: Mutex<HashMap<Key, Arc<View>>>,
}

impl Views {
    pub(crate) fn get(
        &self,
        catalogue: &Catalogue,
        policy: &Policy,
        principal: &Principal,
        adapter: &str,
        kind: CapabilityKind,
    ) -> Arc<View> {
        let key = Key { adapter: adapter.to_owned(), kind, covering: policy.covering(principal, adapter) };
        if let Some(view) = self.lock().get(&key) {
            return Arc::clone(view);
        }
        // Computed outside the lock: callers of other views do not wait on this one.
        let permitted = |capability: &Arc<Capability>| policy.permits_covered(&key.covering, capability.id());
        let entries = catalogue.of_kind(kind).filter(|capability| !is_searched(capability) && permitted(capability));
        let searched = match kind {
            CapabilityKind::Tool => Members::from_flags(catalogue.searched().iter().map(permitted)),
            _ => Members::default(),
        };
        let view = Arc::new(View { entries: entries.cloned().collect(), searched, digest: OnceLock::new() });
        let mut made = self.lock();
        if made.len() >= MAX_VIEWS {
            made.clear();
        }
        Arc::clone(made.entry(key).or_insert(view))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<View>>> {
        // Each critical section leaves the map whole.
        self.made.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}
