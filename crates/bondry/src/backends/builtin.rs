//! Builtin handlers: compiled into Bondry and bound by `[[realms.NAME.capabilities]]`,
//! which `assemble` checks and compiles with the realm's registry, or published by a
//! handler while serving. As backends they only report, by handler name.

use std::sync::Arc;

use bondry_core::backend::{BackendKind, Plan};

use super::configured::Configured;
use super::{Kind, Start};

pub(super) const KIND: Kind = Kind {
    kind: BackendKind::BUILTIN,
    plan: |_, _, _| Some(Plan::new(BackendKind::BUILTIN, ())),
    start: |Start { registry, .. }| Ok(Arc::new(Configured::new(BackendKind::BUILTIN, registry, str::to_owned))),
    // Its ids are the registry's own, which `check` reads there.
    prefixes: |_| Vec::new(),
    warnings: |_, _| Vec::new(),
    report: |_, _| Vec::new(),
    // Bound through the `Builtins` given to `assemble`, which hold the handlers' defaults.
    bind: None,
};
