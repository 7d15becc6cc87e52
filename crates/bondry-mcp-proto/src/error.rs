//! The error table: every way a request is refused, and how each is written on the wire.
//!
//! Variants are declared in the order the checks run (docs/errors.md), so this file reads like the
//! request pipeline. [`Error::row`] is the one place that maps an error to its HTTP status,
//! JSON-RPC code, message and data; `docs/errors.md` is rendered from it by a test.

use bondry_core::audit::AuditOutcome;
use bondry_core::capability::echoed;
use bondry_core::dispatch::Outcome;
use bondry_core::handler::Answer;
use bondry_core::telemetry::RequestOutcome;
use http::header::{ALLOW, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};

use crate::envelope::EnvelopeFault;
use crate::jsonrpc::{ErrorId, ErrorObject, Id, error_body};
use crate::revision::Revision;
use crate::vocabulary::{
    ERROR_CODE_KEY, ERROR_DETAIL_KEY, FAILURE_TEXT, MISSING_CLIENT_CAPABILITY as MISSING_CLIENT_CAPABILITY_CODE,
    stable_code,
};

/// JSON-RPC and MCP error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Implementation-defined, in the range to avoid; kept for compatibility with the SDKs.
    pub const SERVER_ERROR: i64 = -32000;
    /// Implementation-defined; what the official SDKs answer for a dead session.
    pub const SESSION_NOT_FOUND: i64 = -32001;
    pub const HEADER_MISMATCH: i64 = -32020;
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// What the handshake revisions answer for a resource that is not there.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// What is wrong with a routing header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderFault {
    Missing,
    Repeated,
    Invalid,
    Mismatch,
}

impl HeaderFault {
    fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Repeated => "repeated",
            Self::Invalid => "invalid",
            Self::Mismatch => "mismatch",
        }
    }
}

/// Declares [`Error`] and, from the same list of variants, [`Error::VARIANTS`] and
/// [`Error::variant`]: the table's tests find every variant by name, so none can go
/// without a row in `docs/errors.md`.
macro_rules! refusals {
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            $( $(#[$doc:meta])* $variant:ident $({ $($field:ident : $ty:ty),* $(,)? })? ),* $(,)?
        }
    ) => {
        $(#[$attr])*
        pub enum $name {
            $( $(#[$doc])* $variant $({ $($field: $ty),* })? ),*
        }

        impl $name {
            /// The name of every variant, in the order the checks run.
            pub const VARIANTS: &'static [&'static str] = &[$(stringify!($variant)),*];

            /// The name of this error's variant.
            pub fn variant(&self) -> &'static str {
                match self {
                    $(Self::$variant { .. } => stringify!($variant)),*
                }
            }
        }
    };
}

refusals! {
    /// Every refusal, in the order the checks run.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Error {
        /// `Origin` is present and not in the listener's list.
        OriginNotAllowed,
        /// A loopback listener was reached under a non-loopback `Host`.
        HostNotAllowed,
        /// The request has no `Host` header (RFC 9112 §3.2: a server must refuse it).
        HostMissing,
        /// The path is not one the server serves (`/mcp`, `/mcp/realm/{realm}`, metadata).
        NotFound,
        /// The path names a realm that does not exist.
        NoSuchRealm,
        /// The HTTP method is not served on this endpoint.
        MethodNotAllowed { allow: &'static str },
        /// A GET whose `Accept` does not admit `text/event-stream`.
        StreamNotAcceptable,
        /// `Content-Type` is not exactly one `application/json`.
        UnsupportedMediaType,
        /// `Accept` does not admit both `application/json` and `text/event-stream`.
        NotAcceptable,
        /// The body exceeds the listener's limit.
        PayloadTooLarge,
        /// The client did not finish sending the body in time.
        BodyTimeout,
        /// A credential was presented and not accepted, or one is required.
        Unauthenticated { challenges: Vec<String> },
        /// A valid OAuth token that lacks a scope the realm requires (RFC 6750 §3.1).
        InsufficientScope { challenge: String },
        /// The body is not JSON.
        Parse,
        /// The body is JSON but not one valid JSON-RPC message.
        InvalidRequest { id: Option<Id>, reason: &'static str },
        /// The `_meta` envelope lacks required keys or has values of the wrong shape.
        InvalidEnvelope { id: Option<Id>, fault: EnvelopeFault },
        /// A routing header is missing, repeated, malformed or disagrees with the body.
        HeaderMismatch { id: Option<Id>, header: String, fault: HeaderFault },
        /// The requested revision is not served by this endpoint.
        UnsupportedVersion { id: Option<Id>, supported: Vec<&'static str>, requested: String },
        /// A request outside `initialize` without a session, on an endpoint that needs one.
        SessionRequired { id: Option<Id> },
        /// The session id is unknown, expired, revoked or another principal's.
        SessionNotFound { id: Option<Id> },
        /// `MCP-Protocol-Version` inside a session is repeated or not a handshake revision
        /// this endpoint accepts.
        InvalidSessionVersion { id: Option<Id> },
        /// `initialize` inside a live session.
        AlreadyInitialized { id: Id },
        /// A second GET stream while the session's first is alive.
        StreamConflict,
        /// A session has as many calls in flight as it may.
        TooManyRequests { id: Option<Id>, retry_after_secs: u64 },
        /// The capability needs client capabilities the request did not declare.
        MissingClientCapability { id: Id, missing: Value },
        /// `inputResponses` is not an object of objects.
        InvalidInputResponses { id: Id },
        /// `requestState` does not open, has expired, or belongs to another request.
        InvalidRequestState { id: Id },
        /// The method is not served in this era.
        MethodNotFound { id: Id, method: String },
        /// Params failed validation after dispatch (in band).
        InvalidParams { id: Id, detail: &'static str },
        /// The tool does not exist or the caller may not see it: the same bytes either way.
        /// The name is repeated cut to the longest id, so the answer does not grow with it.
        UnknownTool { id: Id, name: String },
        /// The resource does not exist or the caller may not see it: -32602 in the modern
        /// era, -32002 inside a session, the same bytes either way.
        ResourceNotFound { id: Id, uri: String, in_session: bool },
        /// The URI matches a template, but its variables fail the template's schema.
        InvalidResourceVariables { id: Id, uri: String },
        /// The prompt does not exist or the caller may not see it.
        UnknownPrompt { id: Id, name: String },
        /// A prompt argument its schema requires is absent.
        MissingPromptArgument { id: Id, name: String },
        /// Prompt arguments that fail the prompt's schema: the first few violations, and how
        /// many more there were.
        InvalidPromptArguments { id: Id, violations: Vec<String>, more: usize },
        /// A prompt, resource or completion handler failed; its reasons never leak, only
        /// the `detail` a handler chose to give (a relayed upstream's own error).
        CapabilityFailed { id: Id, code: String, detail: Option<Value> },
        /// A list cursor is garbage or was issued for another view.
        InvalidCursor { id: Id },
        /// The server stopped waiting for this request at the end of its shutdown grace period.
        ShuttingDown,
    }
}

/// Where an error is answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Context {
    /// The request was attributed to a live handshake session.
    pub in_session: bool,
    /// The request names a live 2025-06-18 session, whose errors carry `"id": null` when
    /// no id could be read.
    pub null_id: bool,
}

impl Context {
    /// Where a request attributed to a session of `revision` (or to none) is answered.
    pub fn of(revision: Option<Revision>) -> Self {
        Self { in_session: revision.is_some(), ..Self::naming(revision) }
    }

    /// Where a request that names a session of `revision` is answered when it is refused
    /// before being attributed to it: only the session's id rule applies (2025-06-18
    /// answers an unreadable id with `"id": null`).
    pub fn naming(revision: Option<Revision>) -> Self {
        Self { in_session: false, null_id: revision == Some(Revision::V2025_06_18) }
    }
}

/// One row of the table.
#[derive(Debug)]
pub struct Row {
    pub status: StatusCode,
    /// `None` for refusals answered with an empty body.
    pub code: Option<i64>,
    pub message: String,
    pub data: Option<Value>,
}

impl Error {
    /// How a request refused with this error ended, as metrics name it.
    pub fn outcome(&self) -> RequestOutcome {
        match self {
            Self::TooManyRequests { .. } => RequestOutcome::RateLimited,
            Self::Unauthenticated { .. } => RequestOutcome::Audited(AuditOutcome::Unauthenticated),
            Self::InsufficientScope { .. } => RequestOutcome::Audited(AuditOutcome::Denied),
            // Stopped by the server, not refused for what it is.
            Self::ShuttingDown => RequestOutcome::Audited(AuditOutcome::Cancelled),
            _ => RequestOutcome::ProtocolError,
        }
    }

    /// The table: status, code, message and data of each error.
    pub fn row(&self) -> Row {
        use StatusCode as S;
        use code::*;
        let (status, code, message, data): (_, _, String, _) = match self {
            Self::OriginNotAllowed => (S::FORBIDDEN, INVALID_REQUEST, "Origin not allowed".into(), None),
            Self::HostNotAllowed => (S::FORBIDDEN, INVALID_REQUEST, "Host not allowed".into(), None),
            Self::HostMissing => (S::BAD_REQUEST, INVALID_REQUEST, "Bad request: Host header required".into(), None),
            Self::NotFound => (S::NOT_FOUND, INVALID_REQUEST, "Not found".into(), None),
            Self::NoSuchRealm => (S::NOT_FOUND, SERVER_ERROR, "no_such_realm".into(), None),
            Self::MethodNotAllowed { .. } => {
                (S::METHOD_NOT_ALLOWED, INVALID_REQUEST, "Method not allowed".into(), None)
            }
            Self::UnsupportedMediaType => (
                S::UNSUPPORTED_MEDIA_TYPE,
                INVALID_REQUEST,
                "Unsupported Media Type: Content-Type must be application/json".into(),
                None,
            ),
            Self::StreamNotAcceptable => {
                (S::NOT_ACCEPTABLE, INVALID_REQUEST, "Not Acceptable: Accept must admit text/event-stream".into(), None)
            }
            Self::NotAcceptable => (
                S::NOT_ACCEPTABLE,
                INVALID_REQUEST,
                "Not Acceptable: Accept must admit application/json and text/event-stream".into(),
                None,
            ),
            Self::PayloadTooLarge => (S::PAYLOAD_TOO_LARGE, INVALID_REQUEST, "Payload too large".into(), None),
            Self::BodyTimeout => (S::REQUEST_TIMEOUT, INVALID_REQUEST, "Request timeout".into(), None),
            Self::Unauthenticated { .. } => {
                return Row { status: S::UNAUTHORIZED, code: None, message: String::new(), data: None };
            }
            Self::InsufficientScope { .. } => {
                return Row { status: S::FORBIDDEN, code: None, message: String::new(), data: None };
            }
            Self::Parse => (S::BAD_REQUEST, PARSE_ERROR, "Parse error".into(), None),
            Self::InvalidRequest { reason, .. } => {
                (S::BAD_REQUEST, INVALID_REQUEST, "Invalid request".into(), Some(json!({ "reason": reason })))
            }
            Self::InvalidEnvelope { fault, .. } => {
                let mut data = serde_json::Map::new();
                if !fault.missing.is_empty() {
                    data.insert("missing".into(), json!(fault.missing));
                }
                if !fault.invalid.is_empty() {
                    data.insert("invalid".into(), json!(fault.invalid));
                }
                if fault.more > 0 {
                    data.insert("more".into(), json!(fault.more));
                }
                (S::BAD_REQUEST, INVALID_PARAMS, "Invalid params".into(), Some(Value::Object(data)))
            }
            Self::HeaderMismatch { header, fault, .. } => (
                S::BAD_REQUEST,
                HEADER_MISMATCH,
                format!("Header mismatch: {header}"),
                Some(json!({ "header": header, "reason": fault.as_str() })),
            ),
            Self::UnsupportedVersion { supported, requested, .. } => (
                S::BAD_REQUEST,
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version".into(),
                Some(json!({ "supported": supported, "requested": requested })),
            ),
            Self::SessionRequired { .. } => {
                (S::BAD_REQUEST, INVALID_REQUEST, "Mcp-Session-Id header required".into(), None)
            }
            Self::SessionNotFound { .. } => (S::NOT_FOUND, SESSION_NOT_FOUND, "Session not found".into(), None),
            Self::InvalidSessionVersion { .. } => {
                (S::BAD_REQUEST, INVALID_REQUEST, "Invalid MCP-Protocol-Version header".into(), None)
            }
            Self::AlreadyInitialized { .. } => {
                (S::BAD_REQUEST, INVALID_REQUEST, "Session already initialized".into(), None)
            }
            Self::StreamConflict => {
                (S::CONFLICT, INVALID_REQUEST, "Conflict: the session already has a stream".into(), None)
            }
            Self::TooManyRequests { .. } => (S::TOO_MANY_REQUESTS, SERVER_ERROR, "Too many requests".into(), None),
            Self::MissingClientCapability { missing, .. } => (
                S::BAD_REQUEST,
                MISSING_CLIENT_CAPABILITY,
                "Missing required client capability".into(),
                Some(json!({ "requiredCapabilities": missing })),
            ),
            Self::InvalidInputResponses { .. } => {
                (S::BAD_REQUEST, INVALID_PARAMS, "invalid inputResponses".into(), None)
            }
            Self::InvalidRequestState { .. } => {
                (S::BAD_REQUEST, INVALID_PARAMS, "invalid, expired or mismatched requestState".into(), None)
            }
            Self::MethodNotFound { method, .. } => {
                (S::NOT_FOUND, METHOD_NOT_FOUND, format!("Method not found: {method}"), None)
            }
            Self::InvalidParams { detail, .. } => {
                (S::OK, INVALID_PARAMS, "Invalid params".into(), Some(json!({ "reason": detail })))
            }
            Self::UnknownTool { name, .. } => (S::OK, INVALID_PARAMS, format!("Unknown tool: {}", echoed(name)), None),
            Self::ResourceNotFound { uri, in_session, .. } => (
                S::OK,
                if *in_session { RESOURCE_NOT_FOUND } else { INVALID_PARAMS },
                "Resource not found".into(),
                Some(json!({ "uri": uri })),
            ),
            Self::InvalidResourceVariables { uri, .. } => {
                (S::OK, INVALID_PARAMS, "Invalid params".into(), Some(json!({ "uri": uri })))
            }
            Self::UnknownPrompt { name, .. } => {
                (S::OK, INVALID_PARAMS, format!("Unknown prompt: {}", echoed(name)), None)
            }
            Self::MissingPromptArgument { name, .. } => {
                (S::OK, INVALID_PARAMS, format!("Missing required argument: {name}"), None)
            }
            Self::InvalidPromptArguments { violations, more, .. } => {
                let mut data = json!({ "violations": violations });
                if *more > 0 {
                    data["more"] = json!(more);
                }
                (S::OK, INVALID_PARAMS, "Invalid params".into(), Some(data))
            }
            Self::CapabilityFailed { code, detail, .. } => {
                let mut data = json!({ ERROR_CODE_KEY: code });
                if let Some(detail) = detail {
                    data[ERROR_DETAIL_KEY] = detail.clone();
                }
                (S::OK, INTERNAL_ERROR, FAILURE_TEXT.into(), Some(data))
            }
            Self::InvalidCursor { .. } => (S::OK, INVALID_PARAMS, "Invalid cursor".into(), None),
            Self::ShuttingDown => (S::SERVICE_UNAVAILABLE, INTERNAL_ERROR, "Server shutting down".into(), None),
        };
        Row { status, code: Some(code), message, data }
    }

    /// What a prompt or a read answers when its call ended without a result: the
    /// handler's failure (its stable code, and the detail it chose to give), or a client
    /// capability the caller lacks, which reaches here only in a session (the modern era
    /// refuses it before a result is shaped).
    pub(crate) fn of_failed_call(outcome: &Outcome, id: &Id) -> Option<Self> {
        let (code, detail) = match outcome {
            Outcome::Answered(Answer::Failure { code, detail }) => (code.as_str(), detail.clone()),
            Outcome::Failed { code } => (code.as_str(), None),
            Outcome::Answered(Answer::MissingClientCapability { .. }) => (MISSING_CLIENT_CAPABILITY_CODE, None),
            _ => return None,
        };
        Some(Self::CapabilityFailed { id: id.clone(), code: stable_code(code).to_owned(), detail })
    }

    /// The request id the error answers, when one valid id was read.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Self::InvalidRequest { id, .. }
            | Self::InvalidEnvelope { id, .. }
            | Self::HeaderMismatch { id, .. }
            | Self::UnsupportedVersion { id, .. }
            | Self::SessionRequired { id }
            | Self::SessionNotFound { id }
            | Self::InvalidSessionVersion { id }
            | Self::TooManyRequests { id, .. } => id.as_ref(),
            Self::AlreadyInitialized { id } => Some(id),
            Self::MissingClientCapability { id, .. }
            | Self::InvalidInputResponses { id }
            | Self::InvalidRequestState { id }
            | Self::MethodNotFound { id, .. }
            | Self::InvalidParams { id, .. }
            | Self::UnknownTool { id, .. }
            | Self::ResourceNotFound { id, .. }
            | Self::InvalidResourceVariables { id, .. }
            | Self::UnknownPrompt { id, .. }
            | Self::MissingPromptArgument { id, .. }
            | Self::InvalidPromptArguments { id, .. }
            | Self::CapabilityFailed { id, .. }
            | Self::InvalidCursor { id } => Some(id),
            Self::OriginNotAllowed
            | Self::HostNotAllowed
            | Self::HostMissing
            | Self::NotFound
            | Self::NoSuchRealm
            | Self::MethodNotAllowed { .. }
            | Self::StreamNotAcceptable
            | Self::UnsupportedMediaType
            | Self::NotAcceptable
            | Self::PayloadTooLarge
            | Self::BodyTimeout
            | Self::Unauthenticated { .. }
            | Self::InsufficientScope { .. }
            | Self::Parse
            | Self::StreamConflict
            | Self::ShuttingDown => None,
        }
    }

    /// Headers the error adds to its response.
    fn headers(&self) -> Vec<(http::HeaderName, HeaderValue)> {
        match self {
            Self::MethodNotAllowed { allow } => vec![(ALLOW, HeaderValue::from_static(allow))],
            Self::TooManyRequests { retry_after_secs, .. } => {
                vec![(RETRY_AFTER, HeaderValue::from(*retry_after_secs.max(&1)))]
            }
            Self::Unauthenticated { challenges } => challenges
                .iter()
                .filter_map(|challenge| HeaderValue::from_str(challenge).ok())
                .map(|value| (WWW_AUTHENTICATE, value))
                .collect(),
            Self::InsufficientScope { challenge } => {
                HeaderValue::from_str(challenge).map(|value| vec![(WWW_AUTHENTICATE, value)]).unwrap_or_default()
            }
            Self::OriginNotAllowed
            | Self::HostNotAllowed
            | Self::HostMissing
            | Self::NotFound
            | Self::NoSuchRealm
            | Self::StreamNotAcceptable
            | Self::UnsupportedMediaType
            | Self::NotAcceptable
            | Self::PayloadTooLarge
            | Self::BodyTimeout
            | Self::Parse
            | Self::InvalidRequest { .. }
            | Self::InvalidEnvelope { .. }
            | Self::HeaderMismatch { .. }
            | Self::UnsupportedVersion { .. }
            | Self::SessionRequired { .. }
            | Self::SessionNotFound { .. }
            | Self::InvalidSessionVersion { .. }
            | Self::AlreadyInitialized { .. }
            | Self::StreamConflict
            | Self::MissingClientCapability { .. }
            | Self::InvalidInputResponses { .. }
            | Self::InvalidRequestState { .. }
            | Self::MethodNotFound { .. }
            | Self::InvalidParams { .. }
            | Self::UnknownTool { .. }
            | Self::ResourceNotFound { .. }
            | Self::InvalidResourceVariables { .. }
            | Self::UnknownPrompt { .. }
            | Self::MissingPromptArgument { .. }
            | Self::InvalidPromptArguments { .. }
            | Self::CapabilityFailed { .. }
            | Self::InvalidCursor { .. }
            | Self::ShuttingDown => Vec::new(),
        }
    }

    /// The whole response, outside any session.
    pub fn to_http(&self) -> http::Response<bytes::Bytes> {
        self.to_http_in(Context::default())
    }

    /// The whole response in `context`: inside a session, JSON-RPC errors ride 200 while
    /// 401, 403, 409, 413 and 429 keep their status.
    pub fn to_http_in(&self, context: Context) -> http::Response<bytes::Bytes> {
        let row = self.row();
        let mut headers = HeaderMap::new();
        let body = match row.code {
            Some(code) => {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                let error = ErrorObject { code, message: &row.message, data: row.data.as_ref() };
                let id = match self.id() {
                    Some(id) => ErrorId::Id(id),
                    None if context.null_id => ErrorId::Null,
                    None => ErrorId::Omitted,
                };
                error_body(id, &error)
            }
            None => Vec::new(),
        };
        for (name, value) in self.headers() {
            headers.append(name, value);
        }
        let rides_200 = context.in_session && matches!(row.status, StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND);
        let mut response = http::Response::new(bytes::Bytes::from(body));
        *response.status_mut() = if rides_200 { StatusCode::OK } else { row.status };
        *response.headers_mut() = headers;
        response
    }

    /// At least one example of every variant ([`Error::VARIANTS`]), in table order, for
    /// rendering `docs/errors.md`.
    pub fn examples() -> Vec<Error> {
        let id = || Id::Integer(1);
        vec![
            Self::OriginNotAllowed,
            Self::HostNotAllowed,
            Self::HostMissing,
            Self::NotFound,
            Self::NoSuchRealm,
            Self::MethodNotAllowed { allow: "POST" },
            Self::StreamNotAcceptable,
            Self::UnsupportedMediaType,
            Self::NotAcceptable,
            Self::PayloadTooLarge,
            Self::BodyTimeout,
            Self::Unauthenticated { challenges: vec!["Bearer realm=\"default\"".into()] },
            Self::InsufficientScope {
                challenge: "Bearer realm=\"default\", scope=\"mcp\", error=\"insufficient_scope\"".into(),
            },
            Self::Parse,
            Self::InvalidRequest { id: None, reason: "batches are not supported" },
            Self::InvalidEnvelope {
                id: Some(id()),
                fault: EnvelopeFault {
                    missing: vec!["io.modelcontextprotocol/clientCapabilities"],
                    ..Default::default()
                },
            },
            Self::InvalidEnvelope {
                id: Some(id()),
                fault: EnvelopeFault {
                    invalid: vec!["/params/_meta/io.modelcontextprotocol~1clientInfo/icons/0/theme".into()],
                    ..Default::default()
                },
            },
            Self::HeaderMismatch { id: Some(id()), header: "Mcp-Name".into(), fault: HeaderFault::Mismatch },
            Self::UnsupportedVersion { id: Some(id()), supported: vec!["2026-07-28"], requested: "1900-01-01".into() },
            Self::SessionRequired { id: Some(id()) },
            Self::SessionNotFound { id: Some(id()) },
            Self::InvalidSessionVersion { id: Some(id()) },
            Self::AlreadyInitialized { id: id() },
            Self::StreamConflict,
            Self::TooManyRequests { id: None, retry_after_secs: 1 },
            Self::MissingClientCapability { id: id(), missing: json!({"elicitation": {}}) },
            Self::InvalidInputResponses { id: id() },
            Self::InvalidRequestState { id: id() },
            Self::MethodNotFound { id: id(), method: "ping".into() },
            Self::InvalidParams { id: id(), detail: "params.name must be a string" },
            Self::UnknownTool { id: id(), name: "nope".into() },
            Self::ResourceNotFound { id: id(), uri: "test://nope".into(), in_session: false },
            Self::ResourceNotFound { id: id(), uri: "test://nope".into(), in_session: true },
            Self::InvalidResourceVariables { id: id(), uri: "test://template/x/data".into() },
            Self::UnknownPrompt { id: id(), name: "nope".into() },
            Self::MissingPromptArgument { id: id(), name: "topic".into() },
            Self::InvalidPromptArguments {
                id: id(),
                violations: vec!["/style: must be one of [\"short\"]".into()],
                more: 0,
            },
            Self::CapabilityFailed { id: id(), code: "handler_failed".into(), detail: None },
            Self::InvalidCursor { id: id() },
            Self::ShuttingDown,
        ]
    }
}
