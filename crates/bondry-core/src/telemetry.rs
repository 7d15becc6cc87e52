//! What Bondry reports to operators' tools, beside the audit trail: events the pipeline
//! and the runtime push as they happen, and levels read when asked.
//!
//! Every label comes from a closed set here or from the configuration (a realm, a
//! backend's name), never from what a client sends: a client cannot grow the number of
//! series. Principal ids never appear. The Prometheus implementation lives in its own
//! crate; [`NoTelemetry`] is what runs when nothing reads them.

use std::sync::Arc;
use std::time::Duration;

use crate::audit::{AuditOutcome, AuditRecord};

/// Where the gateway reports what it does. Called on the request path: an
/// implementation records and returns, never waits.
pub trait Telemetry: Send + Sync + 'static {
    /// A request to an MCP endpoint ended: answered, refused, or (a call) settled.
    fn request(&self, request: &Request<'_>);

    /// An audit record was made: what it says of the call's backend and capability.
    fn audited(&self, record: &AuditRecord);

    /// A request's credential was checked.
    fn authentication(&self, realm: &Arc<str>, scheme: Scheme, result: AuthResult);

    /// A request was refused by a rate limit.
    fn rate_limited(&self, limit: Limit);
}

/// Reports nothing: the telemetry of a gateway whose metrics nobody reads.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoTelemetry;

impl Telemetry for NoTelemetry {
    fn request(&self, _request: &Request<'_>) {}
    fn audited(&self, _record: &AuditRecord) {}
    fn authentication(&self, _realm: &Arc<str>, _scheme: Scheme, _result: AuthResult) {}
    fn rate_limited(&self, _limit: Limit) {}
}

/// The realm label of a request whose path names no configured realm.
pub const UNKNOWN_REALM: &str = "unknown";

/// One request to an MCP endpoint, as it ended.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// A configured realm, or [`UNKNOWN_REALM`].
    pub realm: &'a Arc<str>,
    /// `modern`, `handshake`, or `none` for a request refused before its era was known.
    pub era: &'static str,
    /// A method of the specification's, or `other`.
    pub method: &'static str,
    pub outcome: RequestOutcome,
    pub took: Duration,
}

/// How a request ended, as metrics name it: a call's audit outcome, or why the request
/// was refused before anything was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOutcome {
    /// The outcome its audit record carries, or `succeeded` for an answer without one.
    Audited(AuditOutcome),
    /// Refused for what the request is (its framing, headers, envelope, session, method).
    ProtocolError,
    /// Refused by a rate limit.
    RateLimited,
}

impl RequestOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Audited(outcome) => outcome.as_str(),
            Self::ProtocolError => "protocol_error",
            Self::RateLimited => "rate_limited",
        }
    }
}

/// The scheme of a request's credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// No `Authorization` header.
    None,
    Basic,
    /// A ticket or an OAuth token.
    Bearer,
    /// Any other scheme, or a header that cannot be read.
    Other,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Basic => "basic",
            Self::Bearer => "bearer",
            Self::Other => "other",
        }
    }
}

/// What came of checking a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthResult {
    /// A principal is known (anonymous included, where the realm lets it in).
    Accepted,
    /// No acceptable credential (401).
    Refused,
    /// A valid token short of a required scope (403).
    InsufficientScope,
}

impl AuthResult {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Refused => "refused",
            Self::InsufficientScope => "insufficient_scope",
        }
    }
}

/// Which rate limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// A client address's requests, on a listener.
    Address,
    /// A principal's requests, in a realm.
    Principal,
    /// A client address's failed authentications, in a realm.
    AuthFailures,
}

impl Limit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Address => "address",
            Self::Principal => "principal",
            Self::AuthFailures => "auth_failures",
        }
    }
}

/// What the runtime holds open, read when metrics are scraped rather than pushed at
/// every change.
pub trait Levels: Send + Sync + 'static {
    /// Each configured realm's levels, in name order.
    fn realms(&self) -> Vec<RealmLevels>;
}

/// What one realm holds open now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RealmLevels {
    pub realm: String,
    /// Handshake-era sessions.
    pub sessions: u64,
    /// Event-stream responses open: calls answering on a stream, and sessions' GET streams.
    pub event_streams: u64,
    /// `subscriptions/listen` streams.
    pub listen_streams: u64,
    /// Calls whose handler runs or whose outcome is being shaped.
    pub calls: u64,
}
