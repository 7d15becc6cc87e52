//! Builtin handlers: compiled into Bondry and bound by `[[realms.NAME.capabilities]]`,
//! which `assemble` checks and compiles with the realm's registry, or published by a
//! handler while serving. As backends they only report: they hold no connection to start,
//! reload or stop.

use std::sync::Arc;
use std::time::Duration;

use bondry_core::BoxFuture;
use bondry_core::backend::{BackendKind, BackendStatus, Backends, EntryState, Listed, Plan, WrongKind, counted};
use bondry_core::realm::Registry;
use bondry_upstream::pins::kind_of;
use serde_json::json;

use super::{Kind, Start};

pub(super) const KIND: Kind = Kind {
    kind: BackendKind::BUILTIN,
    plan: |_, _, _, _| Some(Plan::new(BackendKind::BUILTIN, ())),
    start: |Start { registry, .. }| Ok(Arc::new(Builtins { registry })),
    // Its ids are the registry's own, which `check` reads there.
    prefixes: |_| Vec::new(),
    warnings: |_, _| Vec::new(),
};

/// The builtin handlers a realm's capabilities name.
struct Builtins {
    registry: Arc<Registry>,
}

impl Backends for Builtins {
    fn kind(&self) -> BackendKind {
        BackendKind::BUILTIN
    }

    /// One per handler, by name.
    fn statuses(&self) -> Vec<BackendStatus> {
        let listed = self.catalogue();
        let mut handlers: Vec<&str> = listed.iter().map(|entry| entry.backend.as_str()).collect();
        handlers.sort_unstable();
        handlers.dedup();
        handlers
            .into_iter()
            .map(|name| BackendStatus {
                kind: BackendKind::BUILTIN,
                name: name.to_owned(),
                state: "serving",
                capabilities: counted(&listed, name),
                detail: json!({}),
            })
            .collect()
    }

    /// What builtin handlers serve, configured or published by a handler while serving:
    /// all served, none pinned.
    fn catalogue(&self) -> Vec<Listed> {
        let snapshot = self.registry.snapshot();
        let builtin = snapshot
            .catalogue
            .iter()
            .map(|capability| &capability.descriptor)
            .filter(|descriptor| descriptor.binding.kind == BackendKind::BUILTIN.as_str());
        builtin
            .map(|descriptor| Listed {
                backend: descriptor.binding.target.clone(),
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
        plan.take::<()>(BackendKind::BUILTIN)
    }

    fn stop(&self, _: Duration) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
