//! What one listener serves: its settings as configured, and what the methods read of them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::envelope;
use crate::revision::{Era, Revision};

/// What one listener serves.
#[derive(Debug, Clone)]
pub struct ListenerSettings {
    /// Protocol revisions accepted on this listener.
    pub revisions: Vec<Revision>,
    /// Entries per list page.
    pub page_size: usize,
    /// `ttlMs` of discover and list results.
    pub list_ttl_ms: u64,
    /// The version `serverInfo` reports.
    pub server_version: String,
    /// How long a handshake session may live, however active.
    pub session_lifetime: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no protocol revision is enabled; enable 2026-07-28, 2025-11-25 or 2025-06-18")]
pub struct NoRevision;

/// A listener's settings and what follows from them, as the methods read them.
#[derive(Debug)]
pub struct Listener {
    pub settings: ListenerSettings,
    /// The modern revisions accepted, newest first, as `supportedVersions` lists them.
    pub supported: Vec<&'static str>,
    /// The handshake revisions accepted, newest first.
    pub handshake: Vec<Revision>,
    server_meta: Value,
}

impl Listener {
    pub fn new(settings: ListenerSettings) -> Result<Self, NoRevision> {
        let newest_first = |era: Era| {
            let mut revisions: Vec<Revision> = settings.revisions.iter().copied().filter(|r| r.era() == era).collect();
            revisions.sort_unstable_by(|a, b| b.cmp(a));
            revisions.dedup();
            revisions
        };
        let (modern, handshake) = (newest_first(Era::Modern), newest_first(Era::Handshake));
        if modern.is_empty() && handshake.is_empty() {
            return Err(NoRevision);
        }
        let server_meta = json!({ envelope::SERVER_INFO: { "name": "bondry", "version": settings.server_version } });
        Ok(Self { supported: modern.into_iter().map(Revision::as_str).collect(), handshake, settings, server_meta })
    }

    /// Whether this listener serves the handshake era.
    pub fn serves_handshake(&self) -> bool {
        !self.handshake.is_empty()
    }

    /// `_meta` every modern result carries.
    pub fn server_meta(&self) -> Value {
        self.server_meta.clone()
    }

    /// [`Listener::server_meta`], borrowed.
    pub fn server_meta_ref(&self) -> &Value {
        &self.server_meta
    }
}
