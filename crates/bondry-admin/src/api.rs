//! The JSON API: one entry point that admits, routes, answers and audits each request.
//!
//! - `GET /v1/upstreams`
//! - `GET /v1/realms/{realm}/upstreams/{name}`
//! - `GET /v1/realms/{realm}/upstreams/{name}/capabilities/{kind}/{key}` (`key`
//!   percent-encoded: a URI holds slashes)
//! - `POST /v1/realms/{realm}/upstreams/{name}/approve`
//! - `POST /v1/realms/{realm}/upstreams/{name}/refresh`

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::response::{IntoResponse, Response};
use bondry_core::audit::{AuditOutcome, AuditRecord, AuditSink};
use bondry_core::capability::CapabilityKind;
use bondry_upstream::pins::{Pin, kind_named, kind_of};
use bondry_upstream::{Approve, CapabilityReport, Conflict, RealmUpstreams, ReviewError, UpstreamReport};
use http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::diff::diff;
use crate::gate::{Gate, Refused};

/// How much of a request's path its audit record keeps.
const AUDITED_PATH: usize = 256;

/// The largest request body read: an approval of many capabilities fits.
const MAX_BODY: usize = 1024 * 1024;

#[derive(Clone)]
pub struct Admin {
    pub realms: BTreeMap<String, Arc<RealmUpstreams>>,
    pub audit: Arc<dyn AuditSink>,
    pub gate: Arc<Gate>,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
}

pub fn router(admin: Admin) -> Router {
    Router::new().fallback(handle).with_state(admin)
}

/// An answer and how the audit trail names it.
struct Answer {
    status: StatusCode,
    body: Value,
    outcome: AuditOutcome,
}

impl Answer {
    fn ok(body: Value) -> Self {
        Self { status: StatusCode::OK, body, outcome: AuditOutcome::Succeeded }
    }

    fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        let outcome = if status == StatusCode::NOT_FOUND { AuditOutcome::NotFound } else { AuditOutcome::Refused };
        Self { status, body: json!({"error": {"code": code, "message": message.into()}}), outcome }
    }
}

async fn handle(State(admin): State<Admin>, ConnectInfo(peer): ConnectInfo<SocketAddr>, request: Request) -> Response {
    let started = SystemTime::now();
    let authority = request.uri().authority().map(|authority| authority.as_str().to_owned());
    let token = match admin.gate.admit(request.headers(), authority.as_deref(), peer.ip()) {
        Ok(name) => name.to_owned(),
        Err(refused) => {
            let record = AuditRecord::unauthenticated(started, "", "admin");
            admin.audit.record(AuditRecord { capability: audited(request.uri().path()), ..record });
            return refusal(refused);
        }
    };
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let body = tokio::time::timeout(admin.body_read_timeout, to_bytes(request.into_body(), MAX_BODY)).await;
    let answer = match body {
        Ok(Ok(body)) => route(&admin, &method, &path, &body, &token).await,
        Ok(Err(_)) => Answer::error(StatusCode::PAYLOAD_TOO_LARGE, "too_large", "the body is over 1 MiB"),
        Err(_) => {
            Answer::error(StatusCode::REQUEST_TIMEOUT, "timeout", "the body did not arrive within body_read_timeout_ms")
        }
    };
    let mut record = AuditRecord::unauthenticated(started, "", "admin");
    record.principal = Some(token);
    record.principal_kind = Some("admin_token");
    record.capability = audited(&path);
    record.outcome = answer.outcome;
    admin.audit.record(record.finished_at(SystemTime::now()));
    json_response(answer.status, &answer.body)
}

fn audited(path: &str) -> String {
    path.chars().take(AUDITED_PATH).collect()
}

fn refusal(refused: Refused) -> Response {
    match refused {
        Refused::Host => json_response(
            StatusCode::FORBIDDEN,
            &json!({"error": {"code": "host_not_allowed", "message": "the Host or Origin is not served here"}}),
        ),
        Refused::Token => {
            let mut response = json_response(
                StatusCode::UNAUTHORIZED,
                &json!({"error": {"code": "unauthorized", "message": "an admin token is required"}}),
            );
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer realm=\"bondry-admin\""));
            response
        }
        Refused::TooMany(wait) => too_many(wait, "too many failed attempts from this address"),
        Refused::Spent(wait) => too_many(wait, "too many failed attempts from all addresses"),
    }
}

/// 429 with `Retry-After` in whole seconds, never 0.
fn too_many(wait: Duration, message: &str) -> Response {
    let mut response = json_response(
        StatusCode::TOO_MANY_REQUESTS,
        &json!({"error": {"code": "too_many_failures", "message": message}}),
    );
    let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    response.headers_mut().insert(RETRY_AFTER, http::HeaderValue::from(seconds));
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, Body::from(format!("{body}\n"))).into_response();
    response.headers_mut().insert(CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

async fn route(admin: &Admin, method: &Method, path: &str, body: &[u8], token: &str) -> Answer {
    let segments: Vec<String> = match path.strip_prefix('/').unwrap_or(path).split('/').map(decoded).collect() {
        Some(segments) => segments,
        None => return Answer::error(StatusCode::BAD_REQUEST, "bad_path", "the path is not UTF-8 once decoded"),
    };
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let (get, post) = (method == Method::GET, method == Method::POST);
    match segments.as_slice() {
        ["v1", "upstreams"] if get => upstreams(admin),
        ["v1", "realms", realm, "upstreams", name] if get => with_realm(admin, realm, |realm| info(realm, name)),
        ["v1", "realms", realm, "upstreams", name, "capabilities", kind, key] if get => {
            with_realm(admin, realm, |realm| capability(realm, name, kind, key))
        }
        ["v1", "realms", realm, "upstreams", name, "approve"] if post => {
            with_realm(admin, realm, |realm| approve(realm, name, body, token))
        }
        ["v1", "realms", realm, "upstreams", name, "refresh"] if post => match admin.realms.get(*realm) {
            Some(realm) => refresh(realm, name).await,
            None => no_realm(),
        },
        _ => Answer::error(StatusCode::NOT_FOUND, "not_found", format!("no {method} {path}")),
    }
}

fn decoded(segment: &str) -> Option<String> {
    percent_encoding::percent_decode_str(segment).decode_utf8().ok().map(|text| text.into_owned())
}

fn with_realm(admin: &Admin, realm: &str, answer: impl FnOnce(&RealmUpstreams) -> Answer) -> Answer {
    admin.realms.get(realm).map_or_else(no_realm, |upstreams| answer(upstreams))
}

fn no_realm() -> Answer {
    Answer::error(StatusCode::NOT_FOUND, "unknown_realm", "no such realm")
}

fn no_upstream() -> Answer {
    Answer::error(StatusCode::NOT_FOUND, "unknown_upstream", "no such upstream in the realm")
}

fn upstreams(admin: &Admin) -> Answer {
    let realms: Vec<Value> = admin
        .realms
        .iter()
        .map(|(realm, upstreams)| {
            let reports: Vec<Value> = upstreams.reports().iter().map(summary).collect();
            json!({"realm": realm, "upstreams": reports})
        })
        .collect();
    Answer::ok(json!({"realms": realms}))
}

fn summary(report: &UpstreamReport) -> Value {
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

fn info(realm: &RealmUpstreams, name: &str) -> Answer {
    let Some(report) = realm.report(name) else { return no_upstream() };
    let mut body = summary(&report);
    body["capabilities"] = report.capabilities.iter().map(capability_row).collect();
    Answer::ok(body)
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

fn kind(name: &str) -> Result<CapabilityKind, Answer> {
    kind_named(name).ok_or_else(|| {
        Answer::error(StatusCode::NOT_FOUND, "unknown_kind", "the kind is tool, prompt, resource or template")
    })
}

fn capability(realm: &RealmUpstreams, name: &str, kind_name: &str, key: &str) -> Answer {
    let kind = match kind(kind_name) {
        Ok(kind) => kind,
        Err(answer) => return answer,
    };
    match realm.pin(name, kind, key) {
        Ok(pin) => Answer::ok(pin_body(&pin)),
        Err(ReviewError::UnknownUpstream) => no_upstream(),
        Err(_) => Answer::error(StatusCode::NOT_FOUND, "unknown_capability", "the upstream never listed it"),
    }
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

fn approve(realm: &RealmUpstreams, name: &str, body: &[u8], token: &str) -> Answer {
    let request: Value = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(error) => return Answer::error(StatusCode::BAD_REQUEST, "bad_request", format!("not JSON: {error}")),
    };
    let all = request.get("all").and_then(Value::as_bool).unwrap_or(false);
    let field = if all { "expect" } else { "approve" };
    let approvals = match approvals(request.get(field), field) {
        Ok(approvals) => approvals,
        Err(message) => return Answer::error(StatusCode::BAD_REQUEST, "bad_request", message),
    };
    match realm.approve(name, &approvals, all, token) {
        Ok(pins) => {
            let approved: Vec<Value> = pins
                .iter()
                .map(|pin| json!({"kind": pin.kind_name(), "key": pin.key, "hash": pin.seen.hash}))
                .collect();
            Answer { outcome: AuditOutcome::Approved, ..Answer::ok(json!({"approved": approved})) }
        }
        Err(ReviewError::UnknownUpstream) => no_upstream(),
        Err(ReviewError::Conflicts(conflicts)) => {
            let rows: Vec<Value> = conflicts.iter().map(conflict_row).collect();
            Answer {
                body: json!({"error": {"code": "conflict", "message": "nothing was approved", "conflicts": rows}}),
                ..Answer::error(StatusCode::CONFLICT, "conflict", "")
            }
        }
        Err(ReviewError::NotSaved(why)) => Answer::error(StatusCode::INTERNAL_SERVER_ERROR, "not_saved", why),
        Err(_) => Answer::error(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the approval failed"),
    }
}

fn conflict_row(conflict: &Conflict) -> Value {
    json!({
        "kind": kind_of(conflict.kind),
        "key": conflict.key,
        "why": conflict.why,
        "current_hash": conflict.current,
    })
}

/// `[{"kind": "tool", "key": "…", "hash": "sha256:…"}, …]`, at most 2,000.
fn approvals(list: Option<&Value>, field: &str) -> Result<Vec<Approve>, String> {
    let list = list.and_then(Value::as_array).ok_or_else(|| format!("{field} must be an array"))?;
    if list.len() > 2_000 {
        return Err(format!("{field} names more than 2000 capabilities"));
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

async fn refresh(realm: &RealmUpstreams, name: &str) -> Answer {
    match realm.list_now(name).await {
        Ok(()) => match realm.report(name) {
            Some(report) => Answer { outcome: AuditOutcome::Refreshed, ..Answer::ok(summary(&report)) },
            None => no_upstream(),
        },
        Err(ReviewError::UnknownUpstream) => no_upstream(),
        Err(ReviewError::NotListed(why)) => Answer::error(StatusCode::BAD_GATEWAY, "not_listed", why),
        Err(_) => Answer::error(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the listing failed"),
    }
}
