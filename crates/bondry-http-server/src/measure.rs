//! One request's measure for the metrics: its realm's label, its era and method once the
//! adapter has read them, and when it began; reported once, when its outcome is known
//! (a call's when it settles, which may be long after its response began), or as
//! cancelled when it is dropped first (its client went away, the server stopped).

use std::sync::{Arc, LazyLock};
use std::time::Instant;

use bondry_core::audit::AuditOutcome;
use bondry_core::telemetry::{Request, RequestOutcome, Telemetry, UNKNOWN_REALM};
use bondry_mcp_proto::labels::Labels;

/// The realm label of a path that names no configured realm.
static UNKNOWN: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(UNKNOWN_REALM));

/// A request being measured.
pub struct Measure {
    telemetry: Arc<dyn Telemetry>,
    realm: Arc<str>,
    labels: Labels,
    began: Instant,
    outcome: Option<RequestOutcome>,
}

impl Measure {
    /// Begins measuring a request to `realm`, the label of a configured realm or `None`.
    pub fn begin(telemetry: &Arc<dyn Telemetry>, realm: Option<&Arc<str>>) -> Self {
        let realm = Arc::clone(realm.unwrap_or(&UNKNOWN));
        Self { telemetry: Arc::clone(telemetry), realm, labels: Labels::NONE, began: Instant::now(), outcome: None }
    }

    /// What the adapter read of the request.
    pub fn label(&mut self, labels: Labels) {
        self.labels = labels;
    }

    /// Reports the request as ended with `outcome`.
    pub fn end(mut self, outcome: RequestOutcome) {
        self.outcome = Some(outcome);
    }
}

impl Drop for Measure {
    fn drop(&mut self) {
        self.telemetry.request(&Request {
            realm: &self.realm,
            era: self.labels.era_label(),
            method: self.labels.method,
            outcome: self.outcome.unwrap_or(RequestOutcome::Audited(AuditOutcome::Cancelled)),
            took: self.began.elapsed(),
        });
    }
}
