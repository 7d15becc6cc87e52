//! The admin listener (docs/upstreams.md): an authenticated JSON API, on its own socket and
//! never on an MCP listener, through which operators see every realm's backends, and for
//! upstreams review a definition against its pin, approve it at the hash they reviewed,
//! and have one listed now. Every request is audited (`adapter = "admin"`, the token's name
//! as principal).

mod api;
mod gate;
mod health;
mod metrics;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

use bondry_core::audit::AuditSink;
use bondry_core::backend::Backends;
use bondry_http_server::{ConnectionLimits, Overflow};
use bondry_telemetry::Metrics;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use gate::AdminToken;

/// What the admin listener serves and whom it lets in.
pub struct AdminConfig {
    pub bind: SocketAddr,
    /// At least one: the listener is off without a token.
    pub tokens: Vec<AdminToken>,
    /// Failed attempts verified per minute across all addresses.
    pub max_failed_attempts_per_minute: NonZeroU32,
    /// Its own connections, counted apart from every MCP listener's.
    pub connections: ConnectionLimits,
    /// `GET /metrics` needs no token.
    pub metrics_public: bool,
}

/// The admin listener while it serves.
pub struct RunningAdmin {
    pub addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl RunningAdmin {
    /// Stops accepting and ends the connections it serves.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// The admin listener bound, not yet serving: the gateway binds every listener before it
/// starts any upstream, and serves the API once the upstreams it reports on exist.
pub struct BoundAdmin {
    listener: TcpListener,
    config: AdminConfig,
}

impl BoundAdmin {
    /// The address it listens on (the port chosen when `bind` asked for port 0).
    pub fn addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves the API over each realm's backends (by realm name), auditing to `audit`. Must be called
    /// within a Tokio runtime.
    ///
    /// Past `max_connections` a new connection is closed at once rather than left in the
    /// backlog, and a quarter of the slots is kept for addresses that presented a good
    /// token in the last day: strangers holding connections open cannot lock the operator out.
    pub fn serve(
        self,
        realms: BTreeMap<String, Vec<Arc<dyn Backends>>>,
        audit: Arc<dyn AuditSink>,
        metrics: Option<Arc<Metrics>>,
    ) -> std::io::Result<RunningAdmin> {
        let addr = self.listener.local_addr()?;
        let AdminConfig { tokens, max_failed_attempts_per_minute, connections, metrics_public, .. } = self.config;
        let metrics = metrics.map(|metrics| Arc::new(api::Served { metrics, public: metrics_public }));
        let gate = Arc::new(gate::Gate::new(tokens, addr.ip().is_loopback(), max_failed_attempts_per_minute));
        let known = Arc::clone(&gate);
        let overflow = Overflow::Close {
            kept: connections.max_connections / 4,
            kept_for: Arc::new(move |peer| known.knows(peer)),
        };
        let admin = api::Admin { realms, audit, gate, body_read_timeout: connections.body_read_timeout, metrics };
        let stop = CancellationToken::new();
        let serving =
            bondry_http_server::serve_connections(self.listener, router(admin), connections, overflow, stop.clone());
        Ok(RunningAdmin { addr, stop, task: tokio::spawn(serving) })
    }
}

/// Health without a token, and every other path through the gate to the API.
fn router(admin: api::Admin) -> axum::Router {
    axum::Router::new()
        // Another method on these paths meets the gate like any unknown route.
        .route("/healthz", axum::routing::get(health::healthz).fallback(api::handle))
        .route("/readyz", axum::routing::get(health::readyz).fallback(api::handle))
        .route("/metrics", axum::routing::get(metrics::metrics).fallback(api::handle))
        .fallback(api::handle)
        .with_state(admin)
}

/// Binds `config.bind`. Must be called within a Tokio runtime.
pub async fn bind(config: AdminConfig) -> std::io::Result<BoundAdmin> {
    let listener = TcpListener::bind(config.bind).await?;
    Ok(BoundAdmin { listener, config })
}
