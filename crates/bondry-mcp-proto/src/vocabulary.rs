//! The words the crate and its hosts share: the adapter's name, the random source, the
//! stable failure codes a call can end with and the `_meta` keys Bondry adds.

/// The adapter id grants name: `mcp:demo.*`, or `demo.*` for short.
pub const ADAPTER: &str = "mcp";

/// Version `serverInfo` reports unless the host says otherwise.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A cryptographically secure random source, injected so tests can seed it and so
/// instances sharing keys never derive nonces from time or counters.
pub trait Csprng {
    fn fill(&mut self, dest: &mut [u8]);
}

/// `_meta` keys Bondry adds to call results.
pub const INVOCATION_ID_KEY: &str = "dev.bondry/invocationId";
pub const RETRYABLE_KEY: &str = "dev.bondry/retryable";
/// A handshake-era call of a tool needing client capabilities `initialize` did not declare.
pub const MISSING_CLIENT_CAPABILITY: &str = "missing_client_capability";
/// A session call whose client did not answer its input requests in time.
pub const CLIENT_TIMEOUT: &str = "client_timeout";
/// A session call whose client answered an input request with an error.
pub const CLIENT_ERROR: &str = "client_error";
/// A session call whose session already waits for as many answers as it may.
pub const TOO_MANY_PENDING_INPUTS: &str = "too_many_pending_inputs";
/// A handler that asked for input with neither requests nor state.
pub const EMPTY_INPUT_REQUIRED: &str = "empty_input_required";
/// A session call that kept asking for input past the allowed rounds.
pub const TOO_MANY_ROUNDS: &str = "too_many_input_rounds";

/// The code of a failure whose own code could not be shown.
pub const HANDLER_FAILED: &str = "handler_failed";

/// Where a failure's stable code travels: a tool result's `_meta`, an error's `data`.
pub const ERROR_CODE_KEY: &str = "dev.bondry/errorCode";
/// `_meta` key of what a tool error tells beside its code: a relayed upstream's own error.
pub const ERROR_DETAIL_KEY: &str = "dev.bondry/errorDetail";
/// `_meta` key under which a listed tool names the client capabilities it needs, so that a
/// gateway fronting Bondry checks them for its own callers (docs/upstreams.md).
pub const REQUIRES_CLIENT_KEY: &str = "dev.bondry/requiresClient";
/// The text of every failure whose detail must not leak.
pub const FAILURE_TEXT: &str = "Capability execution failed";

/// A state that seals larger than `requestState` may be.
pub const STATE_TOO_LARGE: &str = "state_too_large";

/// Error codes are identifiers, never messages: a code that does not look like one (it
/// could carry a backend's detail, a host name or a URI) is replaced by a generic code.
pub(crate) fn stable_code(code: &str) -> &str {
    let is_identifier = (1..=64).contains(&code.len())
        && code.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-'));
    if is_identifier { code } else { HANDLER_FAILED }
}

/// The tool that finds a caller's tools listed for search (`listing = "search"`).
pub const SEARCH_TOOL: &str = "bondry.search";
/// The tool that calls one of them by id.
pub const CALL_TOOL: &str = "bondry.call";
/// The ids no capability may take, in id order: the two tools above.
pub const RESERVED_TOOL_IDS: [&str; 2] = [CALL_TOOL, SEARCH_TOOL];
