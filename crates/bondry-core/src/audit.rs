//! Audit records: one per call, read, denial and failed authentication.
//!
//! Records go to their own sink, never into logs. They carry digests of the arguments and
//! the result, not the values, unless a capability opts in. `docs/audit.md` tables every
//! member from [`AuditRecord::FIELDS`] and every outcome from [`AuditOutcome::ALL`].

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::backend::BackendKind;
use crate::capability::{id_prefix, is_valid_id};
use crate::handler::{InvocationId, TraceContext};
use crate::policy::Principal;

/// How a call ended, as the audit trail names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    Succeeded,
    ToolError,
    InvalidInput,
    Denied,
    NotFound,
    HandlerFailed,
    InputRequired,
    Cancelled,
    Unauthenticated,
    /// An operator approved upstream definitions (the admin API).
    Approved,
    /// The admin API refused an operator's request (a conflict, a bad request).
    Refused,
    /// An operator had an upstream listed now (the admin API).
    Refreshed,
}

impl AuditOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Self; 12] = [
        Self::Succeeded,
        Self::ToolError,
        Self::InvalidInput,
        Self::Denied,
        Self::NotFound,
        Self::HandlerFailed,
        Self::InputRequired,
        Self::Cancelled,
        Self::Unauthenticated,
        Self::Approved,
        Self::Refused,
        Self::Refreshed,
    ];

    /// The name a record carries.
    pub fn as_str(self) -> &'static str {
        self.doc().0
    }

    /// What the outcome means, for `docs/audit.md`.
    pub fn meaning(self) -> &'static str {
        self.doc().1
    }

    fn doc(self) -> (&'static str, &'static str) {
        match self {
            Self::Succeeded => ("succeeded", "The call answered; an admin request was served."),
            Self::ToolError => (
                "tool_error",
                "A tool answered a tool error (its own, an upstream's `isError` result, or input its session's client could not supply).",
            ),
            Self::InvalidInput => (
                "invalid_input",
                "The request was refused for what it carried: arguments against the input schema, reserved argument names, a header that does not match, client capabilities it lacks, a `requestState` that does not open.",
            ),
            Self::Denied => (
                "denied",
                "The caller may not see what it named (answered as if it did not exist), or its token lacks a required scope.",
            ),
            Self::NotFound => (
                "not_found",
                "Nothing by that name or URI, or a resource whose handler found nothing there; for the admin API, an unknown path, upstream or pin.",
            ),
            Self::HandlerFailed => (
                "handler_failed",
                "The handler failed, panicked, answered what its capability may not answer, or broke the output schema; an upstream was unavailable or answered an error; a prompt or resource needed input its session's client could not supply.",
            ),
            Self::InputRequired => ("input_required", "A modern round that asks the client for input."),
            Self::Cancelled => (
                "cancelled",
                "The call ended before its answer: the client cancelled or went away, or the server stopped.",
            ),
            Self::Unauthenticated => ("unauthenticated", "A credential was refused; nobody is named."),
            Self::Approved => ("approved", "An operator approved upstream definitions (admin API)."),
            Self::Refused => ("refused", "The admin API refused an operator's request (a conflict, a bad request)."),
            Self::Refreshed => ("refreshed", "An operator had an upstream listed now (admin API)."),
        }
    }
}

/// One audit record: one per call, read, denial and failed authentication, and one per
/// admin API request (`docs/audit.md`). Members serialise in declaration order, as
/// [`AuditRecord::FIELDS`] lists them.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// Always [`AuditRecord::VERSION`].
    pub record_version: u8,
    #[serde(serialize_with = "rfc3339")]
    pub time: SystemTime,
    pub realm: String,
    pub principal: Option<String>,
    pub principal_kind: Option<&'static str>,
    pub adapter: &'static str,
    pub capability: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_sha256: Option<String>,
    pub invocation_id: Option<String>,
    pub outcome: AuditOutcome,
    pub duration_us: u64,
    pub arguments_sha256: Option<Digest>,
    pub result_sha256: Option<Digest>,
    pub trace_id: Option<String>,
    /// The exchange of input rounds the call belongs to (the continuation id a
    /// `requestState` carries), the same on the record of every round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continuation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The backend a call reached, by kind and name, and the time it took, beside the
    /// whole call's `duration_us`: all three or none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_kind: Option<BackendKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_duration_us: Option<u64>,
    /// The tool the caller called to reach this capability, when not directly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<&'static str>,
}

/// One member of an audit record, as `docs/audit.md` tables it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDoc {
    pub name: &'static str,
    /// Its type, or the values it takes.
    pub values: &'static str,
    /// When a record carries it.
    pub present: &'static str,
    pub meaning: &'static str,
}

const fn field(name: &'static str, values: &'static str, present: &'static str, meaning: &'static str) -> FieldDoc {
    FieldDoc { name, values, present, meaning }
}

/// When the backend members are present.
const REACHED: &str = "A call whose backend was reached";

impl AuditRecord {
    /// The version of the record's format, carried by every record. Version 2 names the
    /// backend of a call with `backend_kind`, `backend` and `backend_duration_us`.
    pub const VERSION: u8 = 2;

    /// Every member a record may carry, in the order it is written.
    pub const FIELDS: &[FieldDoc] = &[
        field("record_version", "`2`", "Always", "The version of this format."),
        field("time", "RFC 3339 UTC, microseconds", "Always", "When the request was received."),
        field("realm", "string", "Always; empty for the admin API", "The realm the request was for."),
        field(
            "principal",
            "string or `null`",
            "Always; `null` when unauthenticated",
            "Who asked: the principal's id, `anonymous`, or an admin token's name.",
        ),
        field(
            "principal_kind",
            "`anonymous`, `user`, `ticket`, `oauth`, `admin_token` or `null`",
            "Always; `null` when unauthenticated",
            "How the caller was known: no credential, a password, a ticket, an OAuth token, an admin token.",
        ),
        field("adapter", "`mcp` or `admin`", "Always", "The interface the request came through."),
        field(
            "capability",
            "string",
            "Always; empty when no capability was named",
            "The capability's id; a name or URI that is not an id, its first 64 bytes; for the admin API, the path.",
        ),
        field(
            "capability_sha256",
            "64 hex digits",
            "When `capability` was cut from a name or URI that is not an id",
            "The SHA-256 of the whole name or URI.",
        ),
        field(
            "invocation_id",
            "32 hex digits or `null`",
            "Always; `null` unless the call was dispatched",
            "The call's id, as its result's `_meta` names it.",
        ),
        field("outcome", "see [Outcomes](#outcomes)", "Always", "How the request ended."),
        field(
            "duration_us",
            "integer",
            "Always; `0` for a refusal before dispatch",
            "Microseconds from `time` to the answer: the whole request, Bondry's share and the backend's.",
        ),
        field(
            "arguments_sha256",
            "64 hex digits or `null`",
            "Always; `null` unless the call was dispatched",
            "The SHA-256 of the arguments' RFC 8785 canonical form.",
        ),
        field(
            "result_sha256",
            "64 hex digits or `null`",
            "Always; `null` unless a dispatched call answered a result",
            "The SHA-256 of the result's RFC 8785 canonical form, as sent.",
        ),
        field(
            "trace_id",
            "32 hex digits or `null`",
            "Always; `null` without a well-formed `traceparent`",
            "The W3C trace id the request carried.",
        ),
        field(
            "continuation_id",
            "string",
            "On each round of a modern exchange that keeps a state",
            "The exchange the round belongs to, the same on all its rounds.",
        ),
        field(
            "arguments",
            "JSON",
            "On a dispatched call of a capability with `audit_arguments = true`",
            "The arguments themselves.",
        ),
        field(
            "backend_kind",
            "`builtin`, `upstream`, `http` or `openapi`",
            REACHED,
            "The kind of backend that served the call.",
        ),
        field(
            "backend",
            "string",
            REACHED,
            "Which one: a builtin's handler name, an upstream's name, an HTTP service's origin, an OpenAPI entry's name.",
        ),
        field(
            "backend_duration_us",
            "integer",
            REACHED,
            "Microseconds the backend took, over every round of the call: a builtin handler's own run time; for an upstream, the time spent waiting on its answers.",
        ),
        field(
            "via",
            "`bondry.call`",
            "On a call made through `bondry.call`",
            "The tool the caller called to reach `capability`, which is the tool called.",
        ),
    ];

    /// A record for `capability` as named by the caller. A name that is not a valid id is
    /// recorded truncated to 64 bytes, with the SHA-256 of the whole name beside it.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        time: SystemTime,
        realm: &str,
        principal: &Principal,
        adapter: &'static str,
        capability: &str,
        invocation: Option<&InvocationId>,
        outcome: AuditOutcome,
        trace: &TraceContext,
    ) -> Self {
        let (capability, capability_sha256) = if is_valid_id(capability) {
            (capability.to_owned(), None)
        } else {
            (id_prefix(capability).to_owned(), Some(crate::canon::sha256_hex(capability.as_bytes())))
        };
        Self {
            principal: Some(principal.id().to_owned()),
            principal_kind: Some(principal.kind().as_str()),
            capability,
            capability_sha256,
            invocation_id: invocation.map(|id| id.as_str().to_owned()),
            trace_id: trace.trace_id().map(str::to_owned),
            ..Self::unauthenticated(time, realm, adapter)
        }
        .with_outcome(outcome)
    }

    /// A failed authentication: no principal and no capability yet.
    pub fn unauthenticated(time: SystemTime, realm: &str, adapter: &'static str) -> Self {
        Self {
            record_version: Self::VERSION,
            time,
            realm: realm.to_owned(),
            principal: None,
            principal_kind: None,
            adapter,
            capability: String::new(),
            capability_sha256: None,
            invocation_id: None,
            outcome: AuditOutcome::Unauthenticated,
            duration_us: 0,
            arguments_sha256: None,
            result_sha256: None,
            trace_id: None,
            continuation_id: None,
            arguments: None,
            backend_kind: None,
            backend: None,
            backend_duration_us: None,
            via: None,
        }
    }

    /// A principal refused before any capability was named (a token without a required
    /// scope): `denied`, with no capability.
    pub fn refused(time: SystemTime, realm: &str, principal: &Principal, adapter: &'static str) -> Self {
        Self {
            principal: Some(principal.id().to_owned()),
            principal_kind: Some(principal.kind().as_str()),
            ..Self::unauthenticated(time, realm, adapter)
        }
        .with_outcome(AuditOutcome::Denied)
    }

    fn with_outcome(mut self, outcome: AuditOutcome) -> Self {
        self.outcome = outcome;
        self
    }

    /// Sets the duration from the record's start to `end` (zero if the clock went back).
    pub fn finished_at(mut self, end: SystemTime) -> Self {
        self.duration_us = end.duration_since(self.time).unwrap_or(Duration::ZERO).as_micros() as u64;
        self
    }
}

/// A JSON value recorded by the SHA-256 of its canonical form.
///
/// Small values are digested when the sink serialises the record, so a sink that discards
/// records never pays for them. Large values are digested at once, so a record a sink holds
/// never holds large values.
#[derive(Debug, Clone, PartialEq)]
pub enum Digest {
    Pending(Value),
    Computed(String),
}

impl Digest {
    /// Values serialised larger than this are digested on the spot.
    pub const DEFER_LIMIT: usize = 32 * 1024;

    /// The digest of `value`, whose serialised form is about `size` bytes.
    pub fn of(value: Value, size: usize) -> Self {
        if size > Self::DEFER_LIMIT { Self::Computed(crate::canon::digest(&value)) } else { Self::Pending(value) }
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Pending(value) => serializer.serialize_str(&crate::canon::digest(value)),
            Self::Computed(digest) => serializer.serialize_str(digest),
        }
    }
}

fn rfc3339<S: serde::Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&humantime::format_rfc3339_micros(*time))
}

/// Where audit records go. Implementations must not block the caller for long.
pub trait AuditSink: Send + Sync {
    fn record(&self, record: AuditRecord);

    /// How many records it has written and dropped so far; `None` for a sink that keeps
    /// no count (one that discards everything).
    fn counts(&self) -> Option<AuditCounts> {
        None
    }
}

/// What became of the records a sink was given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditCounts {
    pub written: u64,
    /// Lost: it could not be encoded, the sink had closed, or writing it failed.
    pub dropped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_names_are_truncated_and_hashed() {
        let name = "é".repeat(40);
        let record = AuditRecord::new(
            SystemTime::UNIX_EPOCH,
            "default",
            &Principal::anonymous(vec![]),
            "mcp",
            &name,
            None,
            AuditOutcome::NotFound,
            &TraceContext::default(),
        );
        assert_eq!(record.capability, "é".repeat(32));
        assert_eq!(record.capability_sha256.as_deref(), Some(crate::canon::sha256_hex(name.as_bytes()).as_str()));
        let line = serde_json::to_value(&record).unwrap();
        assert_eq!(line["time"], "1970-01-01T00:00:00.000000Z");
        assert_eq!(line["outcome"], "not_found");
        assert_eq!(line["principal"], "anonymous");
        assert_eq!(line["arguments_sha256"], Value::Null);
        let mut record = record;
        let expected = crate::canon::sha256_hex(br#"{"a":2,"b":1}"#);
        for size in [10, Digest::DEFER_LIMIT + 1] {
            record.arguments_sha256 = Some(Digest::of(serde_json::json!({"b": 1, "a": 2}), size));
            let line = serde_json::to_value(&record).unwrap();
            assert_eq!(line["arguments_sha256"], expected);
        }
        let failed =
            serde_json::to_value(AuditRecord::unauthenticated(SystemTime::UNIX_EPOCH, "default", "mcp")).unwrap();
        assert_eq!(failed["principal"], Value::Null);
        assert_eq!(failed["outcome"], "unauthenticated");
    }

    #[test]
    fn every_record_carries_its_version_and_no_backend_until_one_is_set() {
        let principal = Principal::anonymous(vec![]);
        let records = [
            AuditRecord::unauthenticated(SystemTime::UNIX_EPOCH, "default", "admin"),
            AuditRecord::refused(SystemTime::UNIX_EPOCH, "default", &principal, "mcp"),
            AuditRecord::new(
                SystemTime::UNIX_EPOCH,
                "default",
                &principal,
                "mcp",
                "demo.echo",
                None,
                AuditOutcome::Denied,
                &TraceContext::default(),
            ),
        ];
        for record in records {
            let line = serde_json::to_value(&record).unwrap();
            assert_eq!(line.as_object().unwrap().keys().next().map(String::as_str), Some("record_version"));
            assert_eq!(line["record_version"], 2, "{line}");
            for member in ["backend_kind", "backend", "backend_duration_us"] {
                assert!(line.get(member).is_none(), "{member} in {line}");
            }
        }
    }
}
