//! The process's file descriptors against what its listeners may hold.
//!
//! Each listener bounds its own connections (`max_connections`), but all of them, the
//! upstreams' sockets and pipes and the stores share one limit, `RLIMIT_NOFILE`. At start
//! the soft limit is raised to the hard one, as servers do, and a configuration whose
//! listeners together could hold more than that is warned about: past the limit an
//! `accept` fails, whichever listener it is on, and the admin listener would be starved
//! by the MCP listeners' clients.

use rustix::process::{Resource, getrlimit, setrlimit};

use crate::config::Loaded;

/// Descriptors counted for each upstream (its connections, or a child's three pipes and
/// its pidfd) and for the process itself (stores, audit file, runtime).
const PER_UPSTREAM: u64 = 8;
const BASE: u64 = 64;

/// Raises the soft limit on open files to the hard one; the limit now, if known.
pub fn raise_limit() -> Option<u64> {
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum)
        && current < maximum
    {
        limit.current = limit.maximum;
        if let Err(error) = setrlimit(Resource::Nofile, limit) {
            tracing::debug!(%error, "the open files limit is not raised");
        }
    }
    getrlimit(Resource::Nofile).current
}

/// The descriptors the configuration's listeners and upstreams may hold at once.
pub fn needed(loaded: &Loaded) -> u64 {
    let raw = &loaded.raw;
    let listeners: u64 = raw.listeners.values().map(|listener| listener.max_connections).sum();
    let upstreams = raw.realms.values().map(|realm| realm.upstreams.len() as u64).sum::<u64>();
    listeners.saturating_add(raw.admin.max_connections).saturating_add(upstreams * PER_UPSTREAM).saturating_add(BASE)
}
