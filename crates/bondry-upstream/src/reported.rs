//! The review of a realm's upstreams as the admin API sends it (docs/upstreams.md): the
//! JSON of each report, pin and approval, and the requests' JSON read back.

use bondry_core::BoxFuture;
use bondry_core::backend::{Refusal, Review};
use serde_json::{Value, json};

use crate::diff::diff;
use crate::pins::{Pin, kind_named, kind_of};
use crate::realm::RealmUpstreams;
use crate::review::{Approve, CapabilityReport, Conflict, ReviewError, UpstreamReport};

/// The most capabilities one approval may name.
const MAX_APPROVALS: usize = 2_000;

impl Review for RealmUpstreams {
    fn report(&self, backend: &str) -> Result<Value, Refusal> {
        let report = RealmUpstreams::report(self, backend).ok_or(Refusal::UnknownBackend)?;
        let mut body = summary(&report);
        body["capabilities"] = report.capabilities.iter().map(capability_row).collect();
        Ok(body)
    }

    fn summaries(&self) -> Vec<Value> {
        self.reports().iter().map(summary).collect()
    }

    fn pin(&self, backend: &str, kind: &str, key: &str) -> Result<Value, Refusal> {
        let kind = kind_named(kind).ok_or(Refusal::UnknownKind)?;
        let pin = RealmUpstreams::pin(self, backend, kind, key).map_err(refusal)?;
        Ok(pin_body(&pin))
    }

    fn approve(&self, backend: &str, request: &Value, by: &str) -> Result<Value, Refusal> {
        let all = request.get("all").and_then(Value::as_bool).unwrap_or(false);
        let field = if all { "expect" } else { "approve" };
        let approvals = approvals(request.get(field), field).map_err(Refusal::BadRequest)?;
        let pins = RealmUpstreams::approve(self, backend, &approvals, all, by).map_err(refusal)?;
        let approved: Vec<Value> =
            pins.iter().map(|pin| json!({"kind": pin.kind_name(), "key": pin.key, "hash": pin.seen.hash})).collect();
        Ok(json!({"approved": approved}))
    }

    fn refresh<'a>(&'a self, backend: &'a str) -> BoxFuture<'a, Result<Value, Refusal>> {
        Box::pin(async move {
            self.list_now(backend).await.map_err(refusal)?;
            let report = RealmUpstreams::report(self, backend).ok_or(Refusal::UnknownBackend)?;
            Ok(summary(&report))
        })
    }
}

fn refusal(error: ReviewError) -> Refusal {
    match error {
        ReviewError::UnknownUpstream => Refusal::UnknownBackend,
        ReviewError::UnknownCapability => Refusal::UnknownCapability,
        ReviewError::Conflicts(conflicts) => Refusal::Conflict(conflicts.iter().map(conflict_row).collect()),
        ReviewError::NotSaved(why) => Refusal::NotSaved(why),
        ReviewError::NotListed(why) => Refusal::NotListed(why.to_owned()),
    }
}

pub(crate) fn summary(report: &UpstreamReport) -> Value {
    let counts: serde_json::Map<String, Value> =
        report.counts.iter().map(|(state, count)| (state.as_str().to_owned(), json!(count))).collect();
    let refused: serde_json::Map<String, Value> =
        report.status.refused.iter().map(|(kind, why)| (kind_of(*kind).to_owned(), json!(why))).collect();
    json!({
        "name": report.name,
        "transport": report.status.transport,
        "connected": report.status.connected,
        "revision": report.status.revision,
        "counts": counts,
        "served": report.served,
        "migrated": report.migrated,
        "last_refresh_ms": report.status.last_refresh_ms,
        "last_error": report.status.last_error,
        "listing_refused": refused,
        "retry": report.status.retry.map(|retry| json!({"failed": retry.failed, "next_at_ms": retry.next_at_ms})),
    })
}

fn capability_row(report: &CapabilityReport) -> Value {
    let pin = &report.pin;
    json!({
        "kind": pin.kind_name(),
        "key": pin.key,
        "upstream_name": pin.seen.definition.get("name"),
        "exposed": report.exposed.as_ref().map(|exposed| &exposed.id),
        "renamed": report.exposed.as_ref().is_some_and(|exposed| exposed.renamed),
        "not_served": report.exposed.as_ref().and_then(|exposed| exposed.unserved.as_ref()),
        "state": pin.state.as_str(),
        "pinned_hash": pin.pinned.as_ref().map(|pinned| &pinned.hash),
        "current_hash": pin.seen.hash,
        "migrated": pin.migrated,
    })
}

fn pin_body(pin: &Pin) -> Value {
    let changes = pin.pinned.as_ref().map(|pinned| diff(&pinned.definition, &pin.seen.definition));
    json!({
        "kind": pin.kind_name(),
        "key": pin.key,
        "state": pin.state.as_str(),
        "pinned_hash": pin.pinned.as_ref().map(|pinned| &pinned.hash),
        "pinned": pin.pinned.as_ref().map(|pinned| &*pinned.definition),
        "current_hash": pin.seen.hash,
        "current": &*pin.seen.definition,
        "diff": changes,
        "first_seen_ms": pin.first_seen_ms,
        "approved_by": pin.approval.as_ref().map(|approval| &approval.by),
        "approved_at_ms": pin.approval.as_ref().map(|approval| approval.at_ms),
        "id": pin.id,
        "migrated": pin.migrated,
    })
}

fn conflict_row(conflict: &Conflict) -> Value {
    json!({
        "kind": kind_of(conflict.kind),
        "key": conflict.key,
        "why": conflict.why,
        "current_hash": conflict.current,
    })
}

/// `[{"kind": "tool", "key": "…", "hash": "sha256:…"}, …]`, at most [`MAX_APPROVALS`].
fn approvals(list: Option<&Value>, field: &str) -> Result<Vec<Approve>, String> {
    let list = list.and_then(Value::as_array).ok_or_else(|| format!("{field} must be an array"))?;
    if list.len() > MAX_APPROVALS {
        return Err(format!("{field} names more than {MAX_APPROVALS} capabilities"));
    }
    list.iter()
        .enumerate()
        .map(|(index, entry)| {
            let text = |key: &str| {
                entry.get(key).and_then(Value::as_str).ok_or_else(|| format!("{field}[{index}].{key} must be a string"))
            };
            let kind = kind_named(text("kind")?)
                .ok_or_else(|| format!("{field}[{index}].kind is not tool, prompt, resource or template"))?;
            Ok(Approve { kind, key: text("key")?.to_owned(), hash: text("hash")?.to_owned() })
        })
        .collect()
}
