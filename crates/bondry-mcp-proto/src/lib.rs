//! Bondry's MCP adapter, sans IO.
//!
//! [`Adapter::receive`] takes a request (head, body, principal, realm snapshot, the
//! session table's answers, time and a random source) to a [`Step`]: a [`Reply`] to
//! settle, a [`Call`] to dispatch, a session's event stream to open, or a
//! `subscriptions/listen` subscription. [`Adapter::conversation`] turns a call into a
//! [`Conversation`], the state machine the runtime drives with the handler's outcome,
//! the client's answers and the time. No sockets, no runtime, no clock and no randomness
//! of its own: everything is injected, so every rule here is testable without a server.
//! The only state it consults between requests is the session table, through
//! [`SessionLookup`], which the runtime owns.
//!
//! The order of checks is the path of a request in ARCHITECTURE.md; the design notes
//! are in the crate's README.md.

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
pub mod input;
pub mod jsonrpc;
pub mod labels;
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
pub mod search;
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
pub use step::{Inbound, Received, Step};
pub use vocabulary::{ADAPTER, Csprng, VERSION};
