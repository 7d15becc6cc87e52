//! Audit records: one per call, read, denial and failed authentication.
//!
//! Records go to their own sink, never into logs. They carry digests of the arguments and
//! the result, not the values, unless a capability opts in.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

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

/// One audit record: one per call, read, denial, upstream call and failed authentication
/// (docs/configuration.md, `[audit]`).
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
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
    /// The upstream a relayed call went to, and how long it answered in, beside the
    /// whole call's `duration_us`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_duration_us: Option<u64>,
}

impl AuditRecord {
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
            upstream: None,
            upstream_duration_us: None,
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
}
