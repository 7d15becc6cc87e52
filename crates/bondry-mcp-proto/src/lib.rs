//! Bondry's MCP adapter, sans IO.
//!
//! A pure function from a request (head, body, principal, realm snapshot, time and a
//! random source) to a [`Step`]: a finished [`Reply`], or a [`Call`] for the runtime to run
//! through the core's dispatcher and hand back to [`Adapter::complete`]. No sockets, no
//! runtime, no clock and no randomness of its own: everything is injected, so every rule
//! here is testable without a server.
//!
//! The pipeline follows the contract's order of checks: [`head`] (method, media types),
//! then [`jsonrpc`] framing, era choice, the [`envelope`], the version and [`headers`],
//! then the method ([`discover`], [`tools`]). Every refusal is an [`error::Error`], and
//! that one table decides its status, code and message.

mod adapter;
mod call;
pub mod completion;
pub mod conversation;
pub mod cursor;
pub mod discover;
pub mod envelope;
pub mod error;
mod handshake;
pub mod head;
pub mod headers;
mod input;
pub mod jsonrpc;
pub mod lint;
pub mod listen;
pub mod listing;
mod methods;
mod modern;
pub mod notify;
pub mod prompts;
mod reply;
mod request;
pub mod resources;
pub mod revision;
pub mod seal;
pub mod sentinel;
pub mod session;
mod settings;
pub mod shape;
pub mod state;
mod step;
pub mod tools;
pub mod vocabulary;

pub use adapter::Adapter;
pub use call::{Call, NotStarted};
pub use conversation::{Conversation, Ended, Next, Question};
pub use error::Error;
pub use reply::{Reply, Settle};
pub use revision::{Era, Revision};
pub use session::{Effect, LiveSession, NewSession, NoSessions, SessionLookup, SessionRef};
pub use settings::{Listener, ListenerSettings, NoRevision};
pub use step::{Inbound, Step};
pub use vocabulary::{ADAPTER, Csprng, VERSION};
