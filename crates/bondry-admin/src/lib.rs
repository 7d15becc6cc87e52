//! The admin listener (docs/upstreams.md): an authenticated JSON API, on its own socket and
//! never on an MCP listener, through which operators see every realm's upstreams, review
//! a definition against its pin, approve it at the hash they reviewed, and have an
//! upstream listed now. Every request is audited (`adapter = "admin"`, the token's name
//! as principal).

mod api;
mod diff;
mod gate;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bondry_core::audit::AuditSink;
use bondry_upstream::RealmUpstreams;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use gate::AdminToken;

/// What the admin listener serves and whom it lets in.
pub struct AdminConfig {
    pub bind: SocketAddr,
    /// At least one: the listener is off without a token.
    pub tokens: Vec<AdminToken>,
}

/// The admin listener while it serves.
pub struct RunningAdmin {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningAdmin {
    /// Stops accepting and ends the connections it serves.
    pub async fn shutdown(self) {
        self.stop.send_replace(true);
        let _ = self.task.await;
    }
}

/// The admin listener bound, not yet serving: the gateway binds every listener before it
/// starts any upstream, and serves the API once the upstreams it reports on exist.
pub struct BoundAdmin {
    listener: TcpListener,
    tokens: Vec<AdminToken>,
}

impl BoundAdmin {
    /// The address it listens on (the port chosen when `bind` asked for port 0).
    pub fn addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves the API over `realms` (by realm name), auditing to `audit`. Must be called
    /// within a Tokio runtime.
    pub fn serve(
        self,
        realms: BTreeMap<String, Arc<RealmUpstreams>>,
        audit: Arc<dyn AuditSink>,
    ) -> std::io::Result<RunningAdmin> {
        let addr = self.listener.local_addr()?;
        let gate = gate::Gate::new(self.tokens, addr.ip().is_loopback());
        let router = api::router(api::Admin { realms, audit, gate: Arc::new(gate) });
        let (stop, mut stopping) = watch::channel(false);
        let service = router.into_make_service_with_connect_info::<SocketAddr>();
        let listener = self.listener;
        let task = tokio::spawn(async move {
            let stopped = async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            };
            if let Err(error) = axum::serve(listener, service).with_graceful_shutdown(stopped).await {
                tracing::error!(%error, "the admin listener failed");
            }
        });
        Ok(RunningAdmin { addr, stop, task })
    }
}

/// Binds `config.bind`. Must be called within a Tokio runtime.
pub async fn bind(config: AdminConfig) -> std::io::Result<BoundAdmin> {
    let listener = TcpListener::bind(config.bind).await?;
    Ok(BoundAdmin { listener, tokens: config.tokens })
}
