//! Builtin handlers: compiled into Bondry and bound by `[[realms.NAME.capabilities]]`,
//! which `assemble` checks and compiles with the realm's registry. As backends they only
//! report: they hold no connection to start, reload or stop.

use std::sync::Arc;
use std::time::Duration;

use bondry_core::BoxFuture;
use bondry_core::backend::{BackendKind, BackendStatus, Backends, EntryState, Listed, Plan, WrongKind, counted};
use bondry_core::realm::Registry;
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

/// The builtin handlers a realm's configured capabilities name.
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

    /// The configured capabilities a builtin handler serves: all served, none pinned.
    fn catalogue(&self) -> Vec<Listed> {
        let configured = self.registry.configured();
        let builtin = configured
            .iter()
            .map(|registration| &registration.descriptor)
            .filter(|descriptor| descriptor.binding.kind == BackendKind::BUILTIN.as_str());
        builtin
            .map(|descriptor| Listed {
                backend: descriptor.binding.target.clone(),
                kind: descriptor.kind.as_str(),
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
