//! The backend interface: what serves capabilities from outside the core (builtin
//! handlers, upstream MCP servers, HTTP services, OpenAPI operations), started, listed,
//! watched and stopped the same way, so that the pipeline and the binary never name one.
//!
//! A kind's backends in one realm are one [`Backends`]: a kind may decide between its own
//! backends (upstreams are named together, in stanza order). Each capability a backend
//! serves reaches the realm through [`crate::realm::RealmEvents`] bound to a
//! [`crate::handler::Handler`], which calls, reads, gets prompts, completes, watches and
//! may hand back a [`crate::handler::BackendTask`].

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::BoxFuture;

/// A kind of backend, as audit records, logs and the admin API name it. An open set: a
/// new kind is a new constant beside its factory entry, nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BackendKind(&'static str);

impl BackendKind {
    /// A handler compiled into Bondry; the backend is the handler's name.
    pub const BUILTIN: Self = Self("builtin");
    /// An upstream MCP server; the backend is its stanza's name.
    pub const UPSTREAM: Self = Self("upstream");
    /// An HTTP service; the backend is its origin.
    pub const HTTP: Self = Self("http");
    /// An operation of an OpenAPI document; the backend is its entry's name.
    pub const OPENAPI: Self = Self("openapi");

    /// A kind of its own: lowercase ASCII letters, digits and `_`, as a TOML key.
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for BackendKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

/// A realm's backends of one kind, while they serve.
pub trait Backends: Send + Sync + 'static {
    fn kind(&self) -> BackendKind;

    /// Each backend as an operator sees it: in stanza order, or by name for a kind without
    /// stanzas of its own.
    fn statuses(&self) -> Vec<BackendStatus>;

    /// Every entry the backends listed as the realm holds it now: served, withheld until
    /// an operator approves it, or refused; by backend in stanza order.
    fn catalogue(&self) -> Vec<Listed>;

    /// Serves `plan` from now on, as a reload says; what each kind keeps across a reload
    /// (a connection, its pins) is its own. A plan of another kind is refused.
    fn reconfigure(&self, plan: Plan) -> Result<(), WrongKind>;

    /// Stops every backend: connections closed and children ended before this resolves,
    /// within `deadline`; calls still running fail as unavailable.
    fn stop(&self, deadline: Duration) -> BoxFuture<'_, ()>;

    /// The backends the gateway is not ready without (`required = true`) that cannot serve
    /// now, by name, with their state (`connecting`, `listing`, `reconnecting`). Cheap whatever the
    /// catalogue: a readiness probe asks it every few seconds.
    fn unready(&self) -> Vec<(String, &'static str)> {
        Vec::new()
    }

    /// What an operator reviews and approves, for a kind whose definitions are pinned.
    fn review(&self) -> Option<&dyn Review> {
        None
    }
}

/// One backend as an operator sees it.
#[derive(Debug, Clone, Serialize)]
pub struct BackendStatus {
    pub kind: BackendKind,
    pub name: String,
    /// `serving`, `connecting` or `reconnecting`: whether its capabilities can be called
    /// now.
    pub state: &'static str,
    /// How many entries of its catalogue are in each [`EntryState`].
    pub capabilities: BTreeMap<&'static str, usize>,
    /// Times it was started again after it stopped or failed (an upstream's
    /// reconnections); 0 for a kind that keeps nothing running. For the metrics: the
    /// admin API's `detail` says how an upstream stands.
    #[serde(skip)]
    pub restarts: u64,
    /// What the kind adds (a transport, a revision, the last error).
    pub detail: Value,
}

/// One entry of a backend's catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// The backend that listed it.
    pub backend: String,
    /// `tool`, `prompt`, `resource` or `template`, as the admin API names kinds.
    pub kind: &'static str,
    /// The backend's own name for it (an upstream's tool name, a resource's URI).
    pub key: String,
    /// The capability id it is served as, or would be once served.
    pub id: Option<String>,
    pub state: EntryState,
    /// Why a refused entry is not served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The hash of its definition as listed, for a kind that pins them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// Where an entry of a backend's catalogue stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// Callers whose grants cover it can see and call it.
    Served,
    /// New or changed, held until an operator approves it.
    Withheld,
    /// Not served: its id or URI is taken, or its definition did not compile.
    Refused,
}

impl EntryState {
    pub const ALL: [Self; 3] = [Self::Served, Self::Withheld, Self::Refused];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Served => "served",
            Self::Withheld => "withheld",
            Self::Refused => "refused",
        }
    }
}

/// A kind's checked stanzas for one realm, opaque to everyone but that kind's factory
/// entry, which made it and reads it back.
pub struct Plan {
    kind: BackendKind,
    stanzas: Box<dyn Any + Send>,
}

impl Plan {
    pub fn new<T: Send + 'static>(kind: BackendKind, stanzas: T) -> Self {
        Self { kind, stanzas: Box::new(stanzas) }
    }

    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// The stanzas, if they are a `T`, to read.
    pub fn stanzas<T: 'static>(&self) -> Option<&T> {
        self.stanzas.downcast_ref::<T>()
    }

    /// The stanzas, if this is a plan of `kind` and they are a `T`.
    pub fn take<T: 'static>(self, kind: BackendKind) -> Result<T, WrongKind> {
        let planned = self.kind;
        if planned != kind {
            return Err(WrongKind(planned));
        }
        self.stanzas.downcast::<T>().map(|stanzas| *stanzas).map_err(|_| WrongKind(planned))
    }
}

impl fmt::Debug for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plan").field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// A plan handed to backends of another kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a plan for {0} backends was handed to another kind")]
pub struct WrongKind(pub BackendKind);

/// The operator's side of backends whose definitions are pinned: reports, a pin's
/// definitions, approvals and a listing on demand, each answered as the JSON the admin
/// API sends.
pub trait Review: Send + Sync {
    /// One backend, its state and every pin.
    fn report(&self, backend: &str) -> Result<Value, Refusal>;
    /// Every backend, summed up.
    fn summaries(&self) -> Vec<Value>;
    /// One pin: its definitions, pinned and current, and their difference.
    fn pin(&self, backend: &str, kind: &str, key: &str) -> Result<Value, Refusal>;
    /// Approves what `request` names at the hashes it names, as `by`.
    fn approve(&self, backend: &str, request: &Value, by: &str) -> Result<Value, Refusal>;
    /// Lists the backend now, and reports it.
    fn refresh<'a>(&'a self, backend: &'a str) -> BoxFuture<'a, Result<Value, Refusal>>;
}

/// Why an operator's request is refused; the admin API gives each its status.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    UnknownBackend,
    UnknownKind,
    UnknownCapability,
    BadRequest(String),
    /// Nothing was approved: each row says what is there now.
    Conflict(Vec<Value>),
    NotSaved(String),
    NotListed(String),
}

/// How many of `listed` are in each state, for `backend`'s [`BackendStatus`].
pub fn counted(listed: &[Listed], backend: &str) -> BTreeMap<&'static str, usize> {
    let mut counts: BTreeMap<_, _> = EntryState::ALL.iter().map(|state| (state.as_str(), 0)).collect();
    for entry in listed.iter().filter(|entry| entry.backend == backend) {
        *counts.entry(entry.state.as_str()).or_default() += 1;
    }
    counts
}
