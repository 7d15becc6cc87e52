//! Upstream MCP servers as Bondry capabilities: Bondry's own MCP client over Streamable
//! HTTP and stdio, the connection to each upstream and its lifecycle, and the relay
//! handler that serves an upstream's capability through core's handler interface.
//!
//! The crate builds on the core and the protocol crate only: the runtime never learns
//! about upstreams, and a relayed capability is resolved, validated and audited by the
//! same path as a builtin one.

mod backend;
mod backoff;
mod bridge;
pub mod catalogue;
pub mod client;
pub mod definition;
mod diff;
pub mod listing;
pub mod pins;
mod realm;
pub mod relay;
mod reported;
mod review;
mod slots;
pub mod spec;
mod subscriptions;
mod upstream;
mod warnings;

// The naming rule is the catalogue's; `crate::naming` keeps naming it for the realm.
use bondry_catalogue::naming;

pub use bondry_catalogue::glob::NameGlob;
pub use catalogue::Exposed;
pub use client::{ClientError, Connection, Inbox, Notice, Outgoing};
pub use realm::RealmUpstreams;
pub use spec::{Expose, ListingLimits, NewEntries, Root, TransportSpec, Trust, Tunables, UpstreamSpec};
