//! Where replies settle: the audit sink, and the session table with what opening a
//! session needs (the caller, its realm's limits and the credentials' epoch).

use std::sync::Arc;

use bondry_core::audit::AuditRecord;
use bondry_core::dispatch;
use bondry_core::policy::Principal;
use bondry_core::telemetry::RequestOutcome;
use bondry_mcp_proto::{ADAPTER, Effect, Settle};
use tokio_util::sync::CancellationToken;

use crate::gauges::Gauges;
use crate::listener::Endpoint;
use crate::measure::Measure;
use crate::session::{Owner, SessionLimits};

/// The runtime's side of settling a reply.
pub struct Settling<'a> {
    endpoint: &'a Endpoint,
    opener: Opener<'a>,
    /// The request's measure, reported when it settles (a call's first settling, for one
    /// whose cancellation settles again).
    measure: Option<Measure>,
}

impl<'a> Settling<'a> {
    pub fn new(endpoint: &'a Endpoint, opener: Opener<'a>, measure: Option<Measure>) -> Self {
        Self { endpoint, opener, measure }
    }
}

/// Who a reply's effect acts for.
#[derive(Clone, Copy)]
pub struct Opener<'a> {
    pub limits: &'a SessionLimits,
    pub epoch: &'a CancellationToken,
    pub owner: &'a Owner,
    /// The realm's gauges, which count the call and its stream.
    pub gauges: &'a Arc<Gauges>,
}

/// An [`Opener`] a call that outlives its request keeps.
pub struct OwnedOpener {
    limits: SessionLimits,
    epoch: CancellationToken,
    owner: Owner,
    gauges: Arc<Gauges>,
}

impl OwnedOpener {
    pub fn of(opener: Opener<'_>) -> Self {
        Self {
            limits: opener.limits.clone(),
            epoch: opener.epoch.clone(),
            owner: opener.owner.clone(),
            gauges: Arc::clone(opener.gauges),
        }
    }

    pub fn borrow(&self) -> Opener<'_> {
        Opener { limits: &self.limits, epoch: &self.epoch, owner: &self.owner, gauges: &self.gauges }
    }
}

impl Settle for Settling<'_> {
    fn settled(&mut self, outcome: RequestOutcome) {
        if let Some(measure) = self.measure.take() {
            measure.end(outcome);
        }
    }

    fn record(&mut self, record: AuditRecord) {
        self.endpoint.telemetry.audited(&record);
        self.endpoint.audit.record(record);
    }

    fn apply(&mut self, effect: Effect) {
        let Opener { limits, epoch, owner, .. } = self.opener;
        // The handler serving a subscribed resource hears that the session follows it.
        let realms = &self.endpoint.realms;
        let follow = |realm: &str, principal: &Principal, uri: &str| {
            dispatch::watch(&realms.get(realm)?.registry.snapshot(), principal, ADAPTER, uri)
        };
        self.endpoint.sessions.apply(effect, limits, epoch, owner, &follow);
    }
}
