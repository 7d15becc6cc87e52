//! What every backend that turns someone else's entries into Bondry capabilities shares:
//! the naming rule ([`naming`]: the capability id an entry is served under, and which
//! source serves a URI two of them offer) and the canonical hash of a definition
//! ([`hash`]: SHA-256 of its RFC 8785 form, without what changes with the data or is
//! Bondry's own), and the globs that pick entries ([`glob`]).
//!
//! Upstream MCP servers are the first such backend, and OpenAPI operations will be
//! another: they must be named by the same rule, in the same realm, and hashed alike. So
//! the rule lives here, in a crate of its own that builds on the core alone. It knows no
//! MCP wire format, no transport and no runtime (no `bondry-mcp-proto`, no
//! `bondry-http-server`, no async runtime or HTTP stack), and nothing of pins: what is
//! pinned, reviewed or migrated stays with the backend that pins (`bondry-upstream`).

pub mod glob;
pub mod hash;
pub mod naming;
