//! One listener's endpoint: what every request it serves shares, and the first checks
//! every request meets, whatever its path.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bondry_core::audit::AuditSink;
use bondry_core::telemetry::{Limit, Telemetry};
use bondry_mcp_proto::{Adapter, Error};
use http::{HeaderMap, Uri};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admission::{self, OriginPolicy};
use crate::limits::{self, Bucket, Cidr};
use crate::publish::Publications;
use crate::realm::RealmEntry;
use crate::session::Sessions;

/// Everything the endpoint of one listener needs.
pub struct Endpoint {
    pub adapter: Adapter,
    pub origins: OriginPolicy,
    pub loopback: bool,
    pub max_body_bytes: usize,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
    pub realms: Arc<HashMap<String, RealmEntry>>,
    pub audit: Arc<dyn AuditSink>,
    /// Cancelled when shutdown begins: event streams end so connections can drain.
    pub shutdown: CancellationToken,
    /// Cancelled when the shutdown grace period is over: whatever is still running stops.
    pub hard_stop: CancellationToken,
    pub sessions: Arc<Sessions>,
    /// The calls running inside sessions, which outlive their requests: shutdown waits
    /// for them too.
    pub calls: TaskTracker,
    pub trusted_proxies: Vec<Cidr>,
    pub per_address: Option<Bucket>,
    /// Where handlers' publications go.
    pub publications: Arc<Publications>,
    pub telemetry: Arc<dyn Telemetry>,
}

impl Endpoint {
    /// The first checks of every request on this listener, whatever its path: the
    /// client's address within its rate, then `Host` and `Origin` by `origins`. Returns
    /// the client's network key ([`limits::network_key`]), made once per request.
    pub fn front_door(
        &self,
        peer: SocketAddr,
        headers: &HeaderMap,
        uri: &Uri,
        origins: &OriginPolicy,
    ) -> Result<String, Error> {
        let client = limits::network_key(limits::client_address(peer.ip(), headers, &self.trusted_proxies));
        if let Some(bucket) = &self.per_address {
            bucket.take(&client).inspect_err(|_| self.telemetry.rate_limited(Limit::Address))?;
        }
        admission::check(headers, uri.authority().map(|a| a.as_str()), origins, self.loopback)?;
        Ok(client)
    }
}
