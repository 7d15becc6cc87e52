//! Bondry's MCP client: one live connection to one upstream MCP server, over Streamable
//! HTTP or stdio: the connection layer.
//!
//! ```text
//! Connection::open(&UpstreamSpec, Inbox) -> Result<Connection, ClientError>
//! Connection::revision(&self) -> Revision
//! Connection::server_capabilities(&self) -> &Value
//! Connection::server_info(&self) -> &Value
//! Connection::session(&self) -> Option<String>          // a handshake HTTP upstream's
//! Connection::renewals(&self) -> watch::Receiver<u64>   // its session initialized again
//! Connection::process_group(&self) -> Option<i32>       // a stdio child's
//! Connection::request(&self, Outgoing) -> Result<Value, ClientError>
//! Connection::prepare(&self, &Outgoing, Option<Watch>) -> Result<Prepared, ClientError>
//! Connection::send(&self, Prepared) -> Result<Value, ClientError>
//! Connection::respond(&self, &Id, Result<Value, (i64, String)>) -> Result<(), ClientError>
//! Connection::ended(&self) -> String                    // a stdio child exited or stalled
//! Connection::broken(&self) -> Option<String>           // why its stdin broke
//! Connection::notify(&self, &str, Value) -> Result<(), ClientError>
//! Connection::close(&self)
//! Inbox::channel(capacity) -> (Inbox, mpsc::Receiver<Notice>); Inbox::discard()
//! ```
//!
//! - [`Connection::open`] negotiates the era within `connect_timeout` ([`negotiate`]):
//!   `server/discover` at 2026-07-28 when offered, else or on any other answer
//!   `initialize` with the newest handshake revision offered.
//! - [`Connection::request`] resolves to the JSON-RPC `result` object; a JSON-RPC error
//!   is [`ClientError::Rpc`]. It has no timeout of its own (the caller applies
//!   `call_timeout`); a dead transport fails it at once. Dropping its future cancels it:
//!   `notifications/cancelled` to a handshake or stdio upstream, and the dropped response
//!   stream to a modern HTTP one.
//! - To a modern upstream every request carries the `_meta` envelope (with the
//!   [`Outgoing::client_capabilities`] of the caller) and, on HTTP, the routing headers.
//! - [`Connection::prepare`] writes a request at once (its id minted) and hands what the
//!   upstream says about it to its [`Watch`] ([`watched`] says which messages are a request's): progress and log
//!   messages, and the requests it makes of the caller, which [`Connection::respond`]
//!   answers.
//! - What the upstream sends on its own goes to the [`Inbox`]; its `ping` and
//!   `roots/list` are answered from the spec, any other request that is no watched
//!   call's is refused (-32603 `cannot attribute request`). At most
//!   `max_pending_server_requests` of its requests await Bondry's answer at once; past
//!   that one is refused at once (-32603, [`owed`]).
//! - A stdio child's stdin is written from a bounded queue by one task; a child that
//!   leaves it undrained for `stdin_stall_ms` ends the connection ([`Connection::ended`]).
//! - A message over `max_response_bytes` is logged and dropped; the request it answered
//!   fails with [`ClientError::TooLarge`] and the connection stays usable.
//! - [`Connection::close`] ends the connection (the HTTP session's DELETE; SIGTERM to a
//!   stdio child's process group, SIGKILL after 5 s); dropping the last clone of a
//!   connection ends its background tasks and kills a stdio child's group.
//!
//! Only the spec's headers reach an upstream: no credential of a caller enters here.
//!
//! Modules: `connection` (the [`Connection`] above), `wire` (frames out, messages in), `negotiate` (the era), `http` and `stdio`
//! (the transports), `group` (a child's process group), `pending` (stdio requests
//! awaiting answers), `owed` (the upstream's requests awaiting Bondry's), `watched` (a request's own messages), `answer` (Bondry's answers to
//! the upstream's requests), `sse` and `lines` (bounded readers), `stderr` (a child's
//! stderr in the log), `inbox`, `error`.

mod answer;
mod connection;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod group;
mod http;
mod inbox;
mod lines;
mod negotiate;
mod owed;
mod pending;
mod sse;
mod stderr;
mod stdio;
mod watched;
mod wire;

use serde_json::{Map, Value};

pub(crate) use answer::roots_result;
pub use connection::{Connection, Prepared};
pub use error::ClientError;
pub use inbox::{Inbox, Notice};
pub use watched::{Asked, CALL_EVENTS, CallEvent, Watch};

/// One request to an upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub method: String,
    pub params: Map<String, Value>,
    /// `Mcp-Name` to a modern upstream (the `tools/call` and `prompts/get` name, the
    /// `resources/read` uri).
    pub name: Option<String>,
    /// `Mcp-Param-{suffix}` headers for a modern `tools/call`: (suffix, value), chosen by
    /// the caller from the tool's `x-mcp-header` annotations; sentinel-encoded here.
    pub param_headers: Vec<(String, String)>,
    /// The caller's client capabilities, sent in a modern request's envelope (a handshake
    /// upstream was given Bondry's own at `initialize`).
    pub client_capabilities: Value,
}

impl Outgoing {
    /// A request of `method` with `params`, no routing name, no parameter headers and no
    /// client capabilities.
    pub fn new(method: impl Into<String>, params: Map<String, Value>) -> Self {
        Self {
            method: method.into(),
            params,
            name: None,
            param_headers: Vec::new(),
            client_capabilities: Value::Object(Map::new()),
        }
    }
}
