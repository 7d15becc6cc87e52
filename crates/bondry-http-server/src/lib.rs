//! Bondry's HTTP runtime: binds listeners, admits requests (origin, host, media types,
//! body limit, credentials), drives the sans-IO MCP adapter and the core's dispatcher,
//! writes audit records and shuts down gracefully.
//!
//! Choices the runtime makes where the protocol leaves one open:
//! - Streaming a call is the runtime's choice, not the adapter's: a POST's response
//!   becomes an event stream only once something is sent before the result (progress,
//!   log messages, requests for input); otherwise it is one JSON body. A cancelled
//!   session call answers an event stream that ends empty ("nothing is sent").
//! - Progress and log messages are best effort: a call queues at most
//!   `EMITTED_QUEUE` (64, in `context.rs`) and a message that finds the queue full is dropped, as is
//!   one for a full listen stream. Requests for client input wait for room instead.
//! - `listen_streams_per_principal` is counted per owner and realm over all listeners
//!   for `subscriptions/listen`, and per listener for session GET streams.

pub mod admission;
pub mod audit;
pub mod auth;
mod call;
mod context;
mod cors;
mod endpoint;
pub mod gauges;
mod levels;
pub mod limits;
mod listener;
mod measure;
mod metadata;
mod publish;
mod random;
mod realm;
mod respond;
mod server;
pub mod session;
mod sse;
mod streams;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bondry_core::audit::AuditSink;
use bondry_core::telemetry::Telemetry;
use bondry_mcp_proto::ListenerSettings;

pub use admission::OriginPolicy;
pub use auth::{AuthSlot, Authenticator, Credentials, Ticket, User};
pub use realm::{DEFAULT_REALM, RealmEntry};
pub use server::{Overflow, Running, StartError, serve_connections, start};
pub use session::SessionLimits;

/// Bounds on one listener's connections, against clients that hold them open.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Connections served at once; past it, the listener's [`Overflow`] decides (an MCP
    /// listener's new connections wait in the kernel's backlog).
    pub max_connections: usize,
    /// How long a client may take to send a request's head (line and headers).
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
        }
    }
}

/// One listener to bind.
pub struct ListenerConfig {
    pub name: String,
    pub bind: SocketAddr,
    pub settings: ListenerSettings,
    pub origins: OriginPolicy,
    pub max_body_bytes: usize,
    /// How long a handshake session may go unused before it ends.
    pub session_idle: Duration,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<limits::Cidr>,
    /// Requests per client address; `None` when off.
    pub per_address: Option<limits::Rate>,
    pub connections: ConnectionLimits,
}

/// Everything the runtime serves.
pub struct ServerConfig {
    pub listeners: Vec<ListenerConfig>,
    pub realms: HashMap<String, RealmEntry>,
    pub audit: Arc<dyn AuditSink>,
    /// Where requests, authentications and rate limits are reported.
    pub telemetry: Arc<dyn Telemetry>,
    /// How long in-flight requests may run after shutdown begins.
    pub shutdown_grace: Duration,
}
