//! Builtin handlers: compiled into Bondry and bound by `[[realms.NAME.capabilities]]`,
//! which `assemble` checks and compiles with the realm's registry. As backends they only
//! report: they hold no connection to start, reload or stop.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bondry_core::BoxFuture;
use bondry_core::backend::{BackendKind, BackendStatus, Backends, Plan, WrongKind};
use bondry_core::realm::Registry;
use serde_json::json;

use super::{Kind, Start};

pub(super) const KIND: Kind = Kind {
    kind: BackendKind::BUILTIN,
    plan: |_, _, _, _| Some(Plan::new(BackendKind::BUILTIN, ())),
    start: |Start { registry, .. }| Ok(Arc::new(Builtins { registry })),
};

/// The builtin handlers a realm's configured capabilities name.
struct Builtins {
    registry: Arc<Registry>,
}

impl Backends for Builtins {
    fn kind(&self) -> BackendKind {
        BackendKind::BUILTIN
    }

    /// One per handler, by name, with how many configured capabilities it serves.
    fn statuses(&self) -> Vec<BackendStatus> {
        let mut served: BTreeMap<String, usize> = BTreeMap::new();
        for registration in self.registry.configured() {
            let binding = &registration.descriptor.binding;
            if binding.kind == BackendKind::BUILTIN.as_str() {
                *served.entry(binding.target.clone()).or_default() += 1;
            }
        }
        served
            .into_iter()
            .map(|(name, count)| BackendStatus {
                kind: BackendKind::BUILTIN,
                name,
                state: "serving",
                capabilities: BTreeMap::from([("served", count)]),
                detail: json!({}),
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
