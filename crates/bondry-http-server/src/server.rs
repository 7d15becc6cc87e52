//! The server's life: binding every listener, serving its connections, sweeping its
//! tables, and the graceful shutdown.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::any;
use bondry_core::realm::Registry;
use bondry_core::telemetry::Levels;
use bondry_mcp_proto::{Adapter, NoRevision};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::AuthSlot;
use crate::endpoint;
use crate::listener::Endpoint;
use crate::realm::RealmEntry;
use crate::session::Sessions;
use crate::{ConnectionLimits, ServerConfig, gauges, levels, limits, metadata, publish};

/// Where protected resource metadata (RFC 9728) is published.
const METADATA: &str = "/.well-known/oauth-protected-resource";

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("listener {name}: cannot bind {addr}")]
    Bind { name: String, addr: SocketAddr, source: std::io::Error },
    #[error("listener {name}")]
    Settings { name: String, source: NoRevision },
}

/// A bound, serving server.
pub struct Running {
    addrs: Vec<(String, SocketAddr)>,
    realms: Arc<HashMap<String, RealmEntry>>,
    shutdown: CancellationToken,
    hard_stop: CancellationToken,
    tasks: JoinSet<()>,
    /// The calls running inside sessions, which outlive their requests.
    calls: TaskTracker,
    grace: Duration,
    levels: Arc<levels::RuntimeLevels>,
}

/// Binds every listener and starts serving. Returns once all sockets are bound, so
/// [`Running::local_addrs`] is usable at once.
pub async fn start(config: ServerConfig) -> Result<Running, StartError> {
    // jsonwebtoken verifies with aws-lc-rs; installing it names the backend at compile
    // time (a second call, from a host that installed it already, changes nothing).
    let _ = jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER.install_default();
    let realms = Arc::new(config.realms);
    for oauth in realms.values().filter_map(|realm| realm.auth.current().oauth().cloned()) {
        // Detached: a slow issuer must not hold up shutdown, and a failure is logged.
        tokio::spawn(async move { oauth.prefetch().await });
    }
    let shutdown = CancellationToken::new();
    let hard_stop = CancellationToken::new();
    let calls = TaskTracker::new();
    // Every listener's session table exists before what publishes into them.
    let tables: Vec<_> =
        config.listeners.iter().map(|listener| Arc::new(Sessions::new(listener.session_idle))).collect();
    let publications = Arc::new(publish::Publications::new(Arc::clone(&realms), tables.clone()));
    let levels = Arc::new(levels::RuntimeLevels { realms: Arc::clone(&realms), tables: tables.clone() });
    let mut bound = Vec::new();
    for (listener, sessions) in config.listeners.into_iter().zip(tables) {
        let adapter = Adapter::new(listener.settings)
            .map_err(|source| StartError::Settings { name: listener.name.clone(), source })?;
        let socket = TcpListener::bind(listener.bind).await.map_err(|source| StartError::Bind {
            name: listener.name.clone(),
            addr: listener.bind,
            source,
        })?;
        let addr = socket.local_addr().map_err(|source| StartError::Bind {
            name: listener.name.clone(),
            addr: listener.bind,
            source,
        })?;
        let endpoint = Arc::new(Endpoint {
            adapter,
            origins: listener.origins,
            loopback: addr.ip().is_loopback(),
            max_body_bytes: listener.max_body_bytes,
            body_read_timeout: listener.connections.body_read_timeout,
            realms: Arc::clone(&realms),
            audit: Arc::clone(&config.audit),
            shutdown: shutdown.clone(),
            hard_stop: hard_stop.clone(),
            sessions,
            calls: calls.clone(),
            trusted_proxies: listener.trusted_proxies,
            per_address: listener.per_address.and_then(limits::Bucket::new),
            publications: Arc::clone(&publications),
            telemetry: Arc::clone(&config.telemetry),
        });
        let connections = listener.connections;
        bound.push((listener.name, addr, socket, endpoint, connections));
    }
    let mut tasks = JoinSet::new();
    let mut addrs = Vec::new();
    for (name, entry) in realms.iter() {
        // After every swap, the sessions and listen streams whose views changed are told.
        let (realm, swaps) = (name.clone(), Arc::clone(&publications));
        entry.registry.observe(Box::new(move |old, new| swaps.swapped(&realm, old, new)));
        // What a backend says changed outside any call reaches subscribers like a handler's word.
        let (realm, updates) = (name.clone(), Arc::clone(&publications));
        entry.registry.observe_updates(Box::new(move |uri| updates.resource_updated(&realm, uri)));
    }
    for (name, addr, socket, endpoint, connections) in bound {
        tasks.spawn(sweep(Arc::clone(&endpoint), shutdown.clone()));
        let router = Router::new()
            .route("/mcp", any(endpoint::default_realm))
            .route("/mcp/realm/{realm}", any(endpoint::named_realm))
            .route(METADATA, any(metadata::default_realm))
            .route(&format!("{METADATA}/mcp"), any(metadata::default_realm))
            .route(&format!("{METADATA}/mcp/realm/{{realm}}"), any(metadata::named_realm))
            .fallback(endpoint::unrouted)
            .with_state(endpoint);
        tasks.spawn(serve_connections(socket, router, connections, Overflow::Wait, shutdown.clone()));
        addrs.push((name, addr));
    }
    Ok(Running { addrs, realms, shutdown, hard_stop, tasks, calls, grace: config.shutdown_grace, levels })
}

impl Running {
    /// The registry of `realm`, through which a host program swaps its catalogue.
    pub fn registry(&self, realm: &str) -> Option<Arc<Registry>> {
        self.realms.get(realm).map(|entry| Arc::clone(&entry.registry))
    }

    /// Who may call `realm`, through which a host program replaces its credentials.
    pub fn auth(&self, realm: &str) -> Option<Arc<AuthSlot>> {
        self.realms.get(realm).map(|entry| Arc::clone(&entry.auth))
    }

    /// Calls running and streams open right now, in every realm.
    pub fn gauges(&self) -> gauges::Reading {
        self.realms.values().map(|realm| realm.gauges.read()).fold(gauges::Reading::default(), |sum, one| sum + one)
    }

    /// What every realm holds open, as the metrics read it.
    pub fn levels(&self) -> Arc<dyn Levels> {
        self.levels.clone()
    }

    /// The bound address of each listener, by name.
    pub fn local_addrs(&self) -> &[(String, SocketAddr)] {
        &self.addrs
    }

    /// Stops accepting, lets in-flight requests finish within the grace period, then stops
    /// the rest: each is answered 503 and its call recorded as cancelled. Returns whether
    /// everything drained in time.
    pub async fn shutdown(mut self) -> bool {
        self.shutdown.cancel();
        let drained = self.drain(self.grace).await;
        if !drained {
            tracing::warn!(
                grace_ms = self.grace.as_millis() as u64,
                "shutdown grace elapsed; stopping in-flight requests"
            );
            self.hard_stop.cancel();
            if !self.drain(HARD_STOP_WAIT).await {
                self.tasks.shutdown().await;
            }
        }
        drained
    }

    /// Waits up to `limit` for every listener and every session call to finish; whether they did.
    async fn drain(&mut self, limit: Duration) -> bool {
        self.calls.close();
        let calls = self.calls.clone();
        let tasks = &mut self.tasks;
        tokio::time::timeout(limit, async {
            while tasks.join_next().await.is_some() {}
            calls.wait().await;
        })
        .await
        .is_ok()
    }
}

/// How long stopped requests get to send their 503 before their connections are dropped.
const HARD_STOP_WAIT: Duration = Duration::from_secs(1);

/// What a listener does with a connection that arrives while `max_connections` are served.
#[derive(Clone)]
pub enum Overflow {
    /// It waits in the kernel's backlog until a connection ends: an MCP client is served
    /// late rather than refused.
    Wait,
    /// It is accepted and closed at once, so nothing waits unseen in the backlog, and the
    /// last `kept` slots go only to peers `kept_for` vouches for: strangers holding every
    /// other slot cannot keep those peers out.
    Close { kept: usize, kept_for: Arc<dyn Fn(IpAddr) -> bool + Send + Sync> },
}

impl Overflow {
    /// Whether `peer` may take one of the `free` slots.
    fn admits(&self, free: usize, peer: IpAddr) -> bool {
        match self {
            Overflow::Wait => free > 0,
            Overflow::Close { kept, kept_for } => free > *kept || (free > 0 && kept_for(peer)),
        }
    }
}

/// Serves one listener: HTTP/1.1 connections through hyper with a deadline on every
/// request head (the first included, so a silent socket cannot hold a slot), at most
/// `max_connections` at once, past which `overflow` decides; at shutdown it stops
/// accepting and lets each connection finish its requests. HTTP/2 is not served: clients
/// and the proxies in front speak HTTP/1.1, and its detection phase would be one more
/// place for a slow client to sit without a deadline.
pub async fn serve_connections(
    socket: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    overflow: Overflow,
    shutdown: CancellationToken,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower_service::Service;

    let max_connections = limits.max_connections.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    loop {
        let waited = match overflow {
            Overflow::Wait => tokio::select! {
                slot = Arc::clone(&slots).acquire_owned() => Some(slot.expect("the semaphore is never closed")),
                () = shutdown.cancelled() => break,
            },
            Overflow::Close { .. } => None,
        };
        let (stream, peer) = tokio::select! {
            accepted = socket.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, most likely: back off instead of spinning.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let slot = match waited {
            Some(slot) => slot,
            // This loop alone takes slots, so what is free now stays free until taken.
            None if overflow.admits(slots.available_permits(), peer.ip()) => {
                match Arc::clone(&slots).try_acquire_owned() {
                    Ok(slot) => slot,
                    Err(_) => continue,
                }
            }
            None => {
                tracing::debug!(%peer, max_connections, "connection closed: every slot it may take is taken");
                continue;
            }
        };
        // Responses are written whole; Nagle's algorithm would only hold their last
        // segment back waiting for an acknowledgement.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let router = router.clone();
        let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let mut request = request.map(axum::body::Body::new);
            request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            router.clone().call(request)
        });
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(socket);
    graceful.shutdown().await;
}

/// Ends idle and expired sessions and forgets idle rate-limit buckets, until shutdown.
async fn sweep(endpoint: Arc<Endpoint>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(SWEEP_EVERY) => {
                endpoint.sessions.sweep();
                if let Some(bucket) = &endpoint.per_address {
                    bucket.sweep();
                }
                for realm in endpoint.realms.values() {
                    realm.rate_limits.sweep();
                }
            }
            () = shutdown.cancelled() => return,
        }
    }
}

/// How often the session table and the rate-limit buckets are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(10);
