//! Where replies settle: the audit sink, and the session table with what opening a
//! session needs (the caller, its realm's limits and the credentials' epoch).

use bondry_core::audit::AuditRecord;
use bondry_core::dispatch;
use bondry_core::policy::Principal;
use bondry_mcp_proto::{ADAPTER, Effect, Settle};
use tokio_util::sync::CancellationToken;

use crate::listener::Endpoint;
use crate::session::{Owner, SessionLimits};

/// The runtime's side of settling a reply.
pub struct Settling<'a> {
    endpoint: &'a Endpoint,
    opener: Opener<'a>,
}

impl<'a> Settling<'a> {
    pub fn new(endpoint: &'a Endpoint, opener: Opener<'a>) -> Self {
        Self { endpoint, opener }
    }
}

/// Who a reply's effect acts for.
#[derive(Clone, Copy)]
pub struct Opener<'a> {
    pub limits: &'a SessionLimits,
    pub epoch: &'a CancellationToken,
    pub owner: &'a Owner,
}

/// An [`Opener`] a call that outlives its request keeps.
pub struct OwnedOpener {
    limits: SessionLimits,
    epoch: CancellationToken,
    owner: Owner,
}

impl OwnedOpener {
    pub fn of(opener: Opener<'_>) -> Self {
        Self { limits: opener.limits.clone(), epoch: opener.epoch.clone(), owner: opener.owner.clone() }
    }

    pub fn borrow(&self) -> Opener<'_> {
        Opener { limits: &self.limits, epoch: &self.epoch, owner: &self.owner }
    }
}

impl Settle for Settling<'_> {
    fn record(&mut self, record: AuditRecord) {
        self.endpoint.audit.record(record);
    }

    fn apply(&mut self, effect: Effect) {
        let Opener { limits, epoch, owner } = self.opener;
        // The handler serving a subscribed resource hears that the session follows it.
        let realms = &self.endpoint.realms;
        let follow = |realm: &str, principal: &Principal, uri: &str| {
            dispatch::watch(&realms.get(realm)?.registry.snapshot(), principal, ADAPTER, uri)
        };
        self.endpoint.sessions.apply(effect, limits, epoch, owner, &follow);
    }
}
