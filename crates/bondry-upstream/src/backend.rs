//! A realm's upstreams behind core's backend interface: the binary starts, reloads, reports
//! and stops them as it does every kind of backend.

use std::time::Duration;

use bondry_core::BoxFuture;
use bondry_core::backend::{
    BackendKind, BackendStatus, Backends, EntryState, Listed, Plan, Review, WrongKind, counted,
};

use crate::catalogue::Exposed;
use crate::pins::{PinState, kind_of};
use crate::realm::RealmUpstreams;
use crate::reported;
use crate::review::{CapabilityReport, UpstreamReport};
use crate::spec::UpstreamSpec;

impl Backends for RealmUpstreams {
    fn kind(&self) -> BackendKind {
        BackendKind::UPSTREAM
    }

    fn statuses(&self) -> Vec<BackendStatus> {
        let reports = self.full_reports();
        let listed = catalogue(&reports);
        reports
            .iter()
            .map(|report| {
                let state = report.status.state();
                BackendStatus {
                    kind: BackendKind::UPSTREAM,
                    name: report.name.clone(),
                    state,
                    capabilities: counted(&listed, &report.name),
                    restarts: report.status.restarts,
                    detail: reported::summary(report),
                }
            })
            .collect()
    }

    fn unready(&self) -> Vec<(String, &'static str)> {
        self.required_down()
    }

    fn catalogue(&self) -> Vec<Listed> {
        catalogue(&self.full_reports())
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
                    "upstreams still closing at the deadline: their connections are dropped and their children's process groups killed"
                );
            }
        })
    }

    fn review(&self) -> Option<&dyn Review> {
        Some(self)
    }
}

/// Every pin still listed, as the realm holds it: withheld while held or drifted; pinned,
/// served unless naming or the registry refused it.
fn catalogue(reports: &[UpstreamReport]) -> Vec<Listed> {
    let mut listed = Vec::new();
    for report in reports {
        for CapabilityReport { exposed, pin } in &report.capabilities {
            let (state, why) = match (pin.state, exposed) {
                (PinState::Removed, _) => continue,
                (PinState::Held | PinState::Drifted, _) => (EntryState::Withheld, None),
                (PinState::Pinned, Some(Exposed { unserved: None, .. })) => (EntryState::Served, None),
                (PinState::Pinned, Some(Exposed { unserved: Some(why), .. })) => {
                    (EntryState::Refused, Some(why.clone()))
                }
                (PinState::Pinned, None) => (EntryState::Refused, Some("not named".to_owned())),
            };
            listed.push(Listed {
                backend: report.name.clone(),
                kind: kind_of(pin.kind),
                key: pin.key.clone(),
                id: exposed.as_ref().map(|exposed| exposed.id.clone()),
                state,
                why,
                hash: Some(pin.seen.hash.clone()),
            });
        }
    }
    listed
}
