//! Backends whose capabilities are configured one by one in the realm's registry
//! (builtin handlers, web services): they hold no connection to start, reload or stop, and
//! report what the registry holds under their binding kind, one status per backend name.

use std::sync::Arc;
use std::time::Duration;

use bondry_core::BoxFuture;
use bondry_core::backend::{BackendKind, BackendStatus, Backends, EntryState, Listed, Plan, WrongKind, counted};
use bondry_core::realm::Registry;
use bondry_upstream::pins::kind_of;
use serde_json::json;

/// A realm's configured capabilities of one kind.
pub(super) struct Configured {
    kind: BackendKind,
    registry: Arc<Registry>,
    /// The backend a capability's binding target names (a handler, a service's origin).
    backend: fn(&str) -> String,
}

impl Configured {
    pub(super) fn new(kind: BackendKind, registry: Arc<Registry>, backend: fn(&str) -> String) -> Self {
        Self { kind, registry, backend }
    }
}

impl Backends for Configured {
    fn kind(&self) -> BackendKind {
        self.kind
    }

    /// One per backend, by name.
    fn statuses(&self) -> Vec<BackendStatus> {
        let listed = self.catalogue();
        let mut names: Vec<&str> = listed.iter().map(|entry| entry.backend.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .map(|name| BackendStatus {
                kind: self.kind,
                name: name.to_owned(),
                state: "serving",
                capabilities: counted(&listed, name),
                restarts: 0,
                detail: json!({}),
            })
            .collect()
    }

    /// What the registry holds of this kind, configured or published by a handler while
    /// serving: all served, none pinned.
    fn catalogue(&self) -> Vec<Listed> {
        let snapshot = self.registry.snapshot();
        let ours = snapshot
            .catalogue
            .iter()
            .map(|capability| &capability.descriptor)
            .filter(|descriptor| descriptor.binding.kind == self.kind.as_str());
        ours.map(|descriptor| Listed {
            backend: (self.backend)(&descriptor.binding.target),
            kind: kind_of(descriptor.kind),
            key: descriptor.uri.clone().unwrap_or_else(|| descriptor.id.as_str().to_owned()),
            id: Some(descriptor.id.as_str().to_owned()),
            state: EntryState::Served,
            why: None,
            hash: None,
        })
        .collect()
    }

    /// The configured capabilities are swapped with the realm's grants, not here.
    fn reconfigure(&self, plan: Plan) -> Result<(), WrongKind> {
        match plan.kind() {
            kind if kind == self.kind => Ok(()),
            other => Err(WrongKind(other)),
        }
    }

    fn stop(&self, _: Duration) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
