//! Bondry's telemetry as operators' tools read it: the core's events and levels as
//! Prometheus metrics, in the OpenMetrics text format. `docs/operations.md` lists every
//! metric, its labels and its buckets.
//!
//! Two halves: what the pipeline pushes as it happens ([`pushed`]: requests, backend
//! times, authentications, rate limits), and what is read when scraped ([`scraped`]:
//! what each realm holds open, each upstream's state, the audit sink's counts), which
//! costs the request path nothing.

mod pushed;
mod scraped;

use std::sync::{Arc, OnceLock};

use bondry_core::telemetry::Telemetry;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

pub use pushed::{BACKEND_BUCKETS, REQUEST_BUCKETS, Settings};
pub use scraped::Sources;

/// The media type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Bondry's metrics: the telemetry the runtime reports into, and their rendering.
pub struct Metrics {
    registry: Registry,
    pushed: Arc<pushed::Pushed>,
    sources: Arc<OnceLock<Sources>>,
}

impl Metrics {
    /// Every metric, with `version` in `bondry_build_info`.
    pub fn new(version: &str, settings: Settings) -> Self {
        let mut registry = Registry::default();
        let pushed = Arc::new(pushed::Pushed::new(settings));
        pushed.register(&mut registry);
        registry.register("bondry_build", "The running build", Info::new(vec![("version", version.to_owned())]));
        let sources = Arc::new(OnceLock::new());
        registry.register_collector(Box::new(scraped::Scraped(Arc::clone(&sources))));
        Self { registry, pushed, sources }
    }

    /// What the runtime reports into.
    pub fn telemetry(&self) -> Arc<dyn Telemetry> {
        self.pushed.clone()
    }

    /// Reads the scraped metrics from `sources` from now on; only the first call counts.
    pub fn read_from(&self, sources: Sources) {
        let _ = self.sources.set(sources);
    }

    /// Every metric now, as OpenMetrics text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail, and every label value is escaped.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}
