//! The one factory of backends. Each kind Bondry serves capabilities from is one [`Kind`]
//! in [`KINDS`]: how a realm's stanzas of that kind are checked into a [`Plan`], and how a
//! plan starts. `assemble`, `serve`, reload and the admin API go through this table and
//! core's [`Backends`] interface, and never name a kind's own types.

mod builtin;
mod configured;
pub(crate) mod endpoint;
pub(crate) mod http;
mod openapi;
pub mod upstream;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bondry_catalogue::naming::Names;
use bondry_core::backend::{BackendKind, Backends, Plan};
use bondry_core::capability::CapabilityKind;
use bondry_core::handler::Handler;
use bondry_core::realm::{RealmEvents, Registry};
use bondry_core::registry::Registration;

use crate::config::diagnostics::Diagnostics;
use crate::config::{Loaded, RawCapability, RawRealm};

/// One kind of backend: its name, the realm stanzas it reads, and its constructor.
#[derive(Clone, Copy)]
pub struct Kind {
    pub(crate) kind: BackendKind,
    /// Checks the realm's stanzas of this kind (every refusal to `diagnostics`, keyed
    /// under `realms.NAME.`) into a plan; `None` once one is refused. A kind whose stanzas
    /// configure capabilities (an OpenAPI document's operations) adds them to the realm's.
    pub(crate) plan: fn(&mut Diagnostics, &Loaded, &mut Planning) -> Option<Plan>,
    /// Starts a realm's plan. Called within a Tokio runtime, after every listener is bound.
    pub(crate) start: fn(Start) -> anyhow::Result<Arc<dyn Backends>>,
    /// The id prefixes a plan's entries may be named under (`""`: any id), so that `check`
    /// can tell a grant that covers nothing.
    pub(crate) prefixes: fn(&Plan) -> Vec<String>,
    /// What a plan that passed its checks will still not do as meant, as (key path, why),
    /// for the realm named.
    pub(crate) warnings: fn(&Plan, &str) -> Vec<(String, String)>,
    /// What `check` prints of a plan, for the realm named: what each stanza yields.
    pub(crate) report: fn(&Plan, &str) -> Vec<String>,
    /// Checks a capability stanza whose `backend` names this kind into the handler that
    /// serves it (every refusal to `diagnostics`); `None` for a kind that is not bound one
    /// capability at a time here.
    pub(crate) bind: Option<Bind>,
}

/// A realm as its kinds' `plan`s read it.
pub(crate) struct Planning<'a> {
    pub realm: &'a str,
    pub raw: &'a RawRealm,
    /// The ids and resource URIs the realm's capabilities hold so far, the file's own
    /// first: where a kind configuring capabilities claims their ids.
    pub names: &'a mut Names,
    /// The capabilities the kinds configure, served with the file's own.
    pub configured: &'a mut Vec<Registration>,
}

/// Checks one capability stanza into what serves it; see [`Kind::bind`].
pub(crate) type Bind = fn(&mut Diagnostics, &Loaded, &Stanza) -> Option<Bound>;

/// A capability stanza, as a kind's `bind` reads it.
pub(crate) struct Stanza<'a> {
    pub realm: &'a str,
    /// Its key path, `realms.NAME.capabilities[I]`.
    pub path: &'a str,
    pub raw: &'a RawCapability,
    /// Its kind, when that passed its own check.
    pub kind: Option<CapabilityKind>,
}

/// What serves a bound capability, and the target its binding names.
pub(crate) struct Bound {
    pub handler: Arc<dyn Handler>,
    pub target: String,
}

/// What a kind's backends start with in one realm.
pub struct Start<'a> {
    pub realm: &'a str,
    /// Where its capabilities are offered and its resources' updates told.
    pub events: RealmEvents,
    /// The realm's own registry: its configured capabilities and their builtin handlers.
    pub registry: Arc<Registry>,
    pub plan: Plan,
    pub shared: &'a Shared,
}

/// What the backends of every realm share.
pub struct Shared {
    pins: Arc<dyn bondry_upstream::pins::PinStore>,
}

impl Shared {
    /// Opens what the backends keep across restarts (the upstreams' pin store), for a
    /// configuration that passed `assemble`'s checks, before anything is written to
    /// `data_dir`; see [`upstream::pins::open`].
    pub fn open(loaded: &Loaded, accept_new_pin_store: bool) -> anyhow::Result<Self> {
        Ok(Self { pins: upstream::pins::open(loaded, accept_new_pin_store)? })
    }
}

/// Every kind of backend, in the order a realm starts them.
pub const KINDS: &[Kind] = &[builtin::KIND, http::KIND, openapi::KIND, upstream::KIND];

/// The plans of one realm's every kind, or `None` once any stanza is refused.
pub(crate) fn plans(diagnostics: &mut Diagnostics, loaded: &Loaded, planning: &mut Planning) -> Option<Vec<Plan>> {
    let plans: Vec<_> = KINDS.iter().map(|kind| (kind.plan)(diagnostics, loaded, planning)).collect();
    plans.into_iter().collect()
}

/// How a capability stanza whose `backend` is `name` is bound, when a kind binds so.
pub(crate) fn binder(name: &str) -> Option<Bind> {
    KINDS.iter().find(|kind| kind.kind.as_str() == name)?.bind
}

/// The kind that made `plan`.
fn kind_of(plan: &Plan) -> Option<&'static Kind> {
    KINDS.iter().find(|kind| kind.kind == plan.kind())
}

/// The id prefixes a realm's backends may name entries under.
pub(crate) fn prefixes(plans: &[Plan]) -> Vec<String> {
    plans.iter().filter_map(|plan| Some((kind_of(plan)?.prefixes)(plan))).flatten().collect()
}

/// What a realm's backends warn of, as (key path, why).
pub(crate) fn warnings(realm: &str, plans: &[Plan]) -> Vec<(String, String)> {
    plans.iter().filter_map(|plan| Some((kind_of(plan)?.warnings)(plan, realm))).flatten().collect()
}

/// What `check` prints of a realm's backends.
pub fn report(realm: &str, plans: &[Plan]) -> Vec<String> {
    plans.iter().filter_map(|plan| Some((kind_of(plan)?.report)(plan, realm))).flatten().collect()
}

/// Starts a realm's plans, each by the kind that made it, from `kinds`.
pub fn start(
    kinds: &[Kind],
    realm: &str,
    registry: &Arc<Registry>,
    plans: Vec<Plan>,
    shared: &Shared,
) -> anyhow::Result<Vec<Arc<dyn Backends>>> {
    plans
        .into_iter()
        .map(|plan| {
            let kind = kinds
                .iter()
                .find(|kind| kind.kind == plan.kind())
                .ok_or_else(|| anyhow::anyhow!("no backend kind {} is built into this Bondry", plan.kind()))?;
            let events = RealmEvents::new(Arc::clone(registry));
            (kind.start)(Start { realm, events, registry: Arc::clone(registry), plan, shared })
        })
        .collect()
}

/// Hands each of a reload's plans for `realm` to its running backends of that kind.
pub fn reconfigure(realm: &str, running: &[Arc<dyn Backends>], plans: Vec<Plan>) {
    for plan in plans {
        let kind = plan.kind();
        match running.iter().find(|backends| backends.kind() == kind) {
            Some(backends) => {
                if let Err(error) = backends.reconfigure(plan) {
                    tracing::error!(realm, %error, "backends not reconfigured");
                }
            }
            None => tracing::warn!(realm, kind = %kind, "backends of a kind not started are served after a restart"),
        }
    }
}

/// Stops every realm's backends at once, each within `deadline`.
pub async fn stop(realms: Vec<Vec<Arc<dyn Backends>>>, deadline: Duration) {
    let mut stopping = tokio::task::JoinSet::new();
    for backends in realms.into_iter().flatten() {
        stopping.spawn(async move { backends.stop(deadline).await });
    }
    while stopping.join_next().await.is_some() {}
}

/// The realms' plans by name, as `assemble` hands them to `serve` and reload.
pub type Plans = HashMap<String, Vec<Plan>>;

#[cfg(test)]
mod tests;
