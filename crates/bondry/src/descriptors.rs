//! The process's file descriptors against what its listeners may hold.
//!
//! Each listener bounds its own connections (`max_connections`), but all of them, the
//! upstreams' sockets and pipes and the stores share one limit, `RLIMIT_NOFILE`. At start
//! the soft limit is raised toward the hard one, as far as twice what the configuration
//! may hold (stdio children inherit it, and some close every descriptor below it), and a
//! configuration that could hold more than the limit is warned about: past it an `accept`
//! fails, whichever listener it is on, and the admin listener would be starved by the MCP
//! listeners' clients.

use rustix::process::{Resource, getrlimit, setrlimit};

use crate::config::Loaded;

/// Descriptors counted for a stdio upstream (a child's three pipes and its pidfd, with
/// room), besides one per call for an HTTP upstream, and for the process itself (stores,
/// audit file, runtime).
const PER_STDIO_UPSTREAM: u64 = 8;
const BASE: u64 = 64;

/// Raises the soft limit on open files toward the hard one, up to twice `needed`; the
/// limit now, if known.
pub fn raise_limit(needed: u64) -> Option<u64> {
    let mut limit = getrlimit(Resource::Nofile);
    let wanted = needed.saturating_mul(2);
    if let Some(current) = limit.current
        && current < wanted
    {
        limit.current = Some(limit.maximum.map_or(wanted, |maximum| maximum.min(wanted)));
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
    let upstreams: u64 = raw
        .realms
        .values()
        .flat_map(|realm| &realm.upstreams)
        .map(|upstream| match upstream.transport.as_str() {
            "http" => crate::backends::upstream::stanza::max_concurrent_calls(upstream),
            _ => PER_STDIO_UPSTREAM,
        })
        .sum();
    listeners.saturating_add(raw.admin.max_connections).saturating_add(upstreams).saturating_add(BASE)
}
