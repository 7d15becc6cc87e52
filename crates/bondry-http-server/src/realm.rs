//! A realm as the runtime serves it: its registry, who may call, and its limits.

use std::sync::Arc;

use bondry_core::realm::Registry;

use crate::auth::AuthSlot;
use crate::gauges::Gauges;
use crate::limits;
use crate::session::SessionLimits;

/// The realm `/mcp` serves; `/mcp/realm/default` is the same realm.
pub const DEFAULT_REALM: &str = "default";

/// One realm as the runtime serves it.
pub struct RealmEntry {
    /// Its name, as its requests' metrics are labelled.
    pub label: Arc<str>,
    pub registry: Arc<Registry>,
    /// Who may call: replaced whole on a reload.
    pub auth: Arc<AuthSlot>,
    /// Failed-authentication and per-principal rate limits.
    pub rate_limits: limits::RealmLimits,
    /// Caps on handshake-era sessions in this realm.
    pub limits: SessionLimits,
    /// What it holds open, across listeners.
    pub gauges: Arc<Gauges>,
}
