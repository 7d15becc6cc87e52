//! Upstream MCP servers, `[[realms.NAME.upstreams]]`: checked into `UpstreamSpec`s
//! (`stanza.rs`), started as the realm's `RealmUpstreams`, pins kept in the shared store.

pub(crate) mod pins;
mod stanza;

use std::sync::Arc;

use bondry_core::backend::{BackendKind, Plan};
use bondry_upstream::{RealmUpstreams, UpstreamSpec};

use super::{Kind, Start};

pub(super) const KIND: Kind = Kind {
    kind: BackendKind::UPSTREAM,
    plan: |diagnostics, loaded, realm, raw| {
        let specs = stanza::upstreams(diagnostics, loaded, realm, &raw.upstreams)?;
        Some(Plan::new(BackendKind::UPSTREAM, specs))
    },
    start: |Start { realm, events, plan, shared, .. }| {
        let specs: Vec<UpstreamSpec> = plan.take(BackendKind::UPSTREAM)?;
        Ok(Arc::new(RealmUpstreams::start(realm, events, specs, Arc::clone(&shared.pins))?))
    },
};

/// The upstreams among a realm's plans, in stanza order (for what `check` warns of).
pub fn specs(plans: &[Plan]) -> &[UpstreamSpec] {
    plans.iter().find_map(|plan| plan.stanzas::<Vec<UpstreamSpec>>()).map(Vec::as_slice).unwrap_or_default()
}
