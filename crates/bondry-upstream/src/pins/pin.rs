//! A pin and what moves it: the states a pinned key can be in, what a listing saw, the
//! stanza's trust policy, and what a listing or an approval changed.

use std::sync::Arc;

use bondry_core::capability::CapabilityKind;
use serde_json::Value;

use super::hash::kind_of;
use crate::spec::{NewEntries, Trust};

/// Where a pinned key stands. Only `Pinned` is served; the rest answer as missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinState {
    /// Listed as it was pinned: served.
    Pinned,
    /// New and not yet approved.
    Held,
    /// Listed with a definition other than its pin.
    Drifted,
    /// No longer listed.
    Removed,
}

impl PinState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pinned => "pinned",
            Self::Held => "held",
            Self::Drifted => "drifted",
            Self::Removed => "removed",
        }
    }

    pub fn named(name: &str) -> Option<Self> {
        [Self::Pinned, Self::Held, Self::Drifted, Self::Removed].into_iter().find(|state| state.as_str() == name)
    }
}

/// A definition and its hash.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub hash: String,
    pub definition: Arc<Value>,
}

/// Who approved a pin (the admin token's name), and when (Unix milliseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub by: String,
    pub at_ms: u64,
}

/// The pin of one key of one upstream: the upstream name of a tool or prompt, the URI of
/// a resource, the URI template of a template.
#[derive(Debug, Clone, PartialEq)]
pub struct Pin {
    pub kind: CapabilityKind,
    pub key: String,
    pub state: PinState,
    /// What was trusted; none for a key held since it was first seen.
    pub pinned: Option<Seen>,
    /// What the upstream listed last.
    pub seen: Seen,
    pub first_seen_ms: u64,
    pub approval: Option<Approval>,
    /// The capability id its entry was first named, kept while the pin exists: no later
    /// listing moves it to another entry.
    pub id: Option<String>,
    /// The hash form its hashes are in ([`HASH_FORM`] once migrated).
    pub form: u32,
    /// Set when a migration to the current hash form covered more of it than its pin
    /// did: the fields newly covered. Cleared by an approval.
    pub migrated: Option<Vec<String>>,
}

impl Pin {
    /// Its kind's name: `tool`, `prompt`, `resource` or `template`.
    pub fn kind_name(&self) -> &'static str {
        kind_of(self.kind)
    }
}

/// How a stanza trusts what it has not seen before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The upstream's first listing.
    pub trust: Trust,
    /// A later listing's new tools and prompts.
    pub new_capabilities: NewEntries,
    /// A later listing's new resources and templates.
    pub new_resources: NewEntries,
    /// The pins of one kind kept once no longer listed: past it the oldest are forgotten.
    /// One never pinned is forgotten at once: it held no trust, and its id stays its own.
    pub kept_removed: usize,
}

impl Policy {
    pub(super) fn trusts(&self, kind: CapabilityKind, first_listing: bool) -> bool {
        if first_listing {
            return self.trust == Trust::FirstUse;
        }
        let new = match kind {
            CapabilityKind::Tool | CapabilityKind::Prompt => self.new_capabilities,
            CapabilityKind::Resource | CapabilityKind::ResourceTemplate => self.new_resources,
        };
        new == NewEntries::Trust
    }
}

/// What one listing changed.
#[derive(Debug, Default)]
pub struct Observed {
    /// Whether it was the upstream's first listing ever.
    pub first: bool,
    /// The pins it changed, as they are now, with the state each had before (none: new).
    pub changed: Vec<(Option<PinState>, Pin)>,
    /// The pins whose definition changed only in what the hash leaves out (a resource's
    /// size): the same state and hash, stored so that what is served is what was listed.
    pub refreshed: Vec<Pin>,
    /// The pins forgotten, by kind and key: no longer listed, and never pinned or past
    /// [`Policy::kept_removed`].
    pub forgotten: Vec<(CapabilityKind, String)>,
}

/// Why an approval changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The upstream never listed that key.
    Unknown,
    /// It is no longer listed: there is nothing to serve.
    Removed,
    /// Its current definition no longer has the hash reviewed; this is the current one.
    Stale { current: String },
}
