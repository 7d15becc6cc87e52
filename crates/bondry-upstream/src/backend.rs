//! A realm's upstreams behind core's backend interface: the binary starts, reloads, reports
//! and stops them as it does every kind of backend.

use std::collections::BTreeMap;
use std::time::Duration;

use bondry_core::BoxFuture;
use bondry_core::backend::{BackendKind, BackendStatus, Backends, Plan, Review, WrongKind};

use crate::pins::PinState;
use crate::realm::RealmUpstreams;
use crate::reported;
use crate::spec::UpstreamSpec;

impl Backends for RealmUpstreams {
    fn kind(&self) -> BackendKind {
        BackendKind::UPSTREAM
    }

    fn statuses(&self) -> Vec<BackendStatus> {
        self.reports()
            .iter()
            .map(|report| {
                let count = |states: &[PinState]| -> usize {
                    report.counts.iter().filter(|(state, _)| states.contains(state)).map(|(_, count)| count).sum()
                };
                let pinned = count(&[PinState::Pinned]);
                let capabilities = BTreeMap::from([
                    ("served", report.served),
                    ("withheld", count(&[PinState::Held, PinState::Drifted])),
                    // Pinned, yet not served: its name or URI taken, or its definition refused.
                    ("refused", pinned.saturating_sub(report.served)),
                ]);
                let state = match (report.status.connected, report.status.retry) {
                    (true, _) => "serving",
                    (false, Some(_)) => "reconnecting",
                    (false, None) => "connecting",
                };
                BackendStatus {
                    kind: BackendKind::UPSTREAM,
                    name: report.name.clone(),
                    state,
                    capabilities,
                    detail: reported::summary(report),
                }
            })
            .collect()
    }

    fn reconfigure(&self, plan: Plan) -> Result<(), WrongKind> {
        RealmUpstreams::reconfigure(self, plan.take::<Vec<UpstreamSpec>>(BackendKind::UPSTREAM)?);
        Ok(())
    }

    fn stop(&self, deadline: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if tokio::time::timeout(deadline, self.shutdown()).await.is_err() {
                tracing::warn!(
                    realm = self.realm.name,
                    "upstreams still closing at the deadline: left to the runtime's end"
                );
            }
        })
    }

    fn review(&self) -> Option<&dyn Review> {
        Some(self)
    }
}
