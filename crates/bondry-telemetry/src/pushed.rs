//! The metrics the pipeline pushes as things happen: one family per metric, keyed by
//! labels from closed sets or the configuration.

use std::sync::Arc;

use bondry_core::audit::{AuditOutcome, AuditRecord};
use bondry_core::backend::BackendKind;
use bondry_core::telemetry::{AuthResult, Limit, Request, Scheme, Telemetry};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// A request's duration, in seconds: from a millisecond to a minute (a call's input
/// rounds and slow backends reach the top).
pub const REQUEST_BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 60.0];

/// A backend's answer time, in seconds.
pub const BACKEND_BUCKETS: [f64; 14] = REQUEST_BUCKETS;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    realm: Arc<str>,
    era: &'static str,
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TimedLabels {
    realm: Arc<str>,
    era: &'static str,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabels {
    realm: String,
    backend_kind: &'static str,
    backend: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AuthLabels {
    realm: Arc<str>,
    scheme: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CapabilityLabels {
    realm: String,
    capability: String,
    outcome: &'static str,
}

/// Which metrics to keep.
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings {
    /// Count calls per capability id (`bondry_capability_calls_total`): as many series
    /// as the realms serve capabilities, so only when asked.
    pub per_capability: bool,
}

type Timed<L> = Family<L, Histogram, fn() -> Histogram>;

/// The pushed families.
pub struct Pushed {
    settings: Settings,
    requests: Family<RequestLabels, Counter>,
    request_duration: Timed<TimedLabels>,
    backend_duration: Timed<BackendLabels>,
    auth: Family<AuthLabels, Counter>,
    rate_limited: Family<LimitLabels, Counter>,
    capability_calls: Family<CapabilityLabels, Counter>,
}

impl Pushed {
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            requests: Family::default(),
            request_duration: Family::new_with_constructor(|| Histogram::new(REQUEST_BUCKETS)),
            backend_duration: Family::new_with_constructor(|| Histogram::new(BACKEND_BUCKETS)),
            auth: Family::default(),
            rate_limited: Family::default(),
            capability_calls: Family::default(),
        }
    }

    pub fn register(&self, registry: &mut Registry) {
        registry.register("bondry_requests", "Requests to the MCP endpoints, by how they ended", self.requests.clone());
        registry.register_with_unit(
            "bondry_request_duration",
            "Time from a request's arrival to its outcome (a call's settling)",
            Unit::Seconds,
            self.request_duration.clone(),
        );
        registry.register_with_unit(
            "bondry_backend_duration",
            "Time a call spent in its backend",
            Unit::Seconds,
            self.backend_duration.clone(),
        );
        registry.register("bondry_auth", "Credentials checked, by scheme and result", self.auth.clone());
        registry.register("bondry_rate_limited", "Requests refused by a rate limit", self.rate_limited.clone());
        if self.settings.per_capability {
            registry.register(
                "bondry_capability_calls",
                "Calls, reads and gets of each capability, by outcome",
                self.capability_calls.clone(),
            );
        }
    }
}

impl Telemetry for Pushed {
    fn request(&self, request: &Request<'_>) {
        let Request { realm, era, method, outcome, took } = *request;
        let realm = Arc::clone(realm);
        let timed = TimedLabels { realm, era, method };
        self.request_duration.get_or_create(&timed).observe(took.as_secs_f64());
        let TimedLabels { realm, era, method } = timed;
        self.requests.get_or_create(&RequestLabels { realm, era, method, outcome: outcome.as_str() }).inc();
    }

    fn audited(&self, record: &AuditRecord) {
        if let (Some(kind), Some(backend), Some(took_us)) =
            (record.backend_kind, &record.backend, record.backend_duration_us)
        {
            // An HTTP backend is named by its origin, one per service: the label is the kind.
            let backend = if kind == BackendKind::HTTP { kind.as_str().to_owned() } else { backend.clone() };
            let labels = BackendLabels { realm: record.realm.clone(), backend_kind: kind.as_str(), backend };
            self.backend_duration.get_or_create(&labels).observe(took_us as f64 / 1e6);
        }
        // Only a capability that resolved has an invocation: a name a client made up
        // never becomes a series.
        if self.settings.per_capability && record.invocation_id.is_some() && record.outcome != AuditOutcome::NotFound {
            let labels = CapabilityLabels {
                realm: record.realm.clone(),
                capability: record.capability.clone(),
                outcome: record.outcome.as_str(),
            };
            self.capability_calls.get_or_create(&labels).inc();
        }
    }

    fn authentication(&self, realm: &Arc<str>, scheme: Scheme, result: AuthResult) {
        let labels = AuthLabels { realm: Arc::clone(realm), scheme: scheme.as_str(), result: result.as_str() };
        self.auth.get_or_create(&labels).inc();
    }

    fn rate_limited(&self, limit: Limit) {
        self.rate_limited.get_or_create(&LimitLabels { limit: limit.as_str() }).inc();
    }
}
