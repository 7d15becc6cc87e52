//! Bondry's core: capabilities, the registry, policy, the dispatcher and audit.
//!
//! This crate knows nothing of MCP, HTTP or any async runtime. An adapter (MCP is one,
//! id `mcp`) resolves a capability through [`dispatch::resolve`], runs its own protocol
//! checks, then awaits [`dispatch::invoke`]. Everything a handler can touch (cancellation,
//! progress, publishing) is a trait here and is implemented by the runtime.

pub mod audit;
pub mod backend;
pub mod canon;
pub mod capability;
pub mod compact;
pub mod dispatch;
pub mod handler;
pub mod policy;
pub mod realm;
pub mod registry;
pub mod schema;
pub mod search;
pub mod telemetry;
pub mod template;
pub mod unique;
pub mod view;

/// A boxed, sendable future: the one shape every async boundary of the core takes, so
/// that handlers and backends stay object-safe without tying the core to a runtime.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;
