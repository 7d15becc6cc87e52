//! The metrics read when scraped: what each realm holds open, each upstream's state and
//! the audit sink's counts. Reading them costs the scrape, never a request.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bondry_core::audit::AuditSink;
use bondry_core::backend::{BackendKind, Backends};
use bondry_core::telemetry::Levels;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// What the scraped metrics are read from, once the runtime and the backends run.
pub struct Sources {
    pub levels: Arc<dyn Levels>,
    /// Each realm's backends, a kind at a time, by realm name.
    pub backends: BTreeMap<String, Vec<Arc<dyn Backends>>>,
    pub audit: Arc<dyn AuditSink>,
}

/// Reads [`Sources`] at each scrape, once they are set.
#[derive(Debug)]
pub struct Scraped(pub Arc<OnceLock<Sources>>);

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources").finish_non_exhaustive()
    }
}

/// A realm's gauge: its name, help, and how to read it off a realm's levels.
type RealmGauge = (&'static str, &'static str, fn(&bondry_core::telemetry::RealmLevels) -> u64);

const REALM_GAUGES: [RealmGauge; 4] = [
    ("bondry_sessions", "Handshake-era sessions open.", |levels| levels.sessions),
    (
        "bondry_event_streams",
        "Event-stream responses open: calls answering on a stream, and sessions' GET streams.",
        |levels| levels.event_streams,
    ),
    ("bondry_listen_streams", "subscriptions/listen streams open.", |levels| levels.listen_streams),
    ("bondry_calls_in_flight", "Calls whose backend runs or whose answer is being shaped.", |levels| levels.calls),
];

impl Collector for Scraped {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(sources) = self.0.get() else { return Ok(()) };
        let realms = sources.levels.realms();
        for (name, help, read) in REALM_GAUGES {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for levels in &realms {
                let labels = [("realm", levels.realm.as_str())];
                ConstGauge::new(read(levels) as i64).encode(metric.encode_family(&labels)?)?;
            }
        }
        let upstreams: Vec<(&str, bondry_core::backend::BackendStatus)> = sources
            .backends
            .iter()
            .flat_map(|(realm, kinds)| kinds.iter().map(move |kind| (realm, kind)))
            .filter(|(_, kind)| kind.kind() == BackendKind::UPSTREAM)
            .flat_map(|(realm, kind)| kind.statuses().into_iter().map(move |status| (realm.as_str(), status)))
            .collect();
        let mut up = encoder.encode_descriptor(
            "bondry_upstream_up",
            "1 while an upstream is connected, else 0.",
            None,
            MetricType::Gauge,
        )?;
        for (realm, status) in &upstreams {
            let labels = [("realm", *realm), ("upstream", status.name.as_str())];
            ConstGauge::new(i64::from(status.state == "serving")).encode(up.encode_family(&labels)?)?;
        }
        let mut restarts = encoder.encode_descriptor(
            "bondry_upstream_restarts",
            "Times the supervisor set out to connect an upstream again after an attempt failed or its connection ended.",
            None,
            MetricType::Counter,
        )?;
        for (realm, status) in &upstreams {
            let labels = [("realm", *realm), ("upstream", status.name.as_str())];
            ConstCounter::new(status.restarts).encode(restarts.encode_family(&labels)?)?;
        }
        let mut capabilities = encoder.encode_descriptor(
            "bondry_upstream_capabilities",
            "An upstream's listed entries, by state: served, withheld until approved, or refused.",
            None,
            MetricType::Gauge,
        )?;
        for (realm, status) in &upstreams {
            for (state, count) in &status.capabilities {
                let labels = [("realm", *realm), ("upstream", status.name.as_str()), ("state", state)];
                ConstGauge::new(*count as i64).encode(capabilities.encode_family(&labels)?)?;
            }
        }
        let mut audit = encoder.encode_descriptor(
            "bondry_audit_records",
            "Audit records written, and dropped (never encoded, after the sink closed, or a failed write).",
            None,
            MetricType::Counter,
        )?;
        // A sink that discards everything (`sink = "off"`) counts nothing.
        if let Some(counts) = sources.audit.counts() {
            for (result, count) in [("written", counts.written), ("dropped", counts.dropped)] {
                ConstCounter::new(count).encode(audit.encode_family(&[("result", result)])?)?;
            }
        }
        Ok(())
    }
}
