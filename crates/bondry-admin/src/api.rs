//! The JSON API: one entry point that admits, routes, answers and audits each request.
//! Its routes are one table, [`ROUTES`]; a path's segments are percent-decoded (a
//! capability's key may be a URI, which holds slashes).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::{Body, to_bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::response::{IntoResponse, Response};
use bondry_core::BoxFuture;
use bondry_core::audit::{AuditOutcome, AuditRecord, AuditSink};
use bondry_core::backend::{BackendKind, Backends, Refusal, Review};
use http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::gate::{Gate, Refused};

/// How much of a request's path its audit record keeps.
const AUDITED_PATH: usize = 256;

/// The largest request body read: an approval of many capabilities fits.
const MAX_BODY: usize = 1024 * 1024;

#[derive(Clone)]
pub struct Admin {
    /// Each realm's backends, a kind at a time.
    pub realms: BTreeMap<String, Vec<Arc<dyn Backends>>>,
    pub audit: Arc<dyn AuditSink>,
    pub gate: Arc<Gate>,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
    /// What `GET /metrics` serves, when the gateway keeps metrics.
    pub metrics: Option<Arc<Served>>,
}

/// The metrics the admin listener serves, and whether they need a token.
pub struct Served {
    pub metrics: Arc<bondry_telemetry::Metrics>,
    /// `[admin] metrics_public`: a scrape needs no token.
    pub public: bool,
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

pub(crate) async fn handle(
    State(admin): State<Admin>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
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

pub(crate) fn refusal(refused: Refused) -> Response {
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

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, Body::from(format!("{body}\n"))).into_response();
    response.headers_mut().insert(CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// One route: a method, a path whose `*` segments are the request's parameters, in order,
/// and what answers it.
struct Route {
    method: Method,
    path: &'static [&'static str],
    answer: for<'a> fn(&'a Admin, Asked<'a>) -> BoxFuture<'a, Answer>,
}

/// What a route is asked: the path's parameters, the body and the operator's token name.
struct Asked<'a> {
    params: Vec<&'a str>,
    body: &'a [u8],
    token: &'a str,
}

/// Every route of the API.
const ROUTES: &[Route] = &[
    Route { method: Method::GET, path: &["v1", "backends"], answer: |admin, _| now(backends(admin)) },
    Route { method: Method::GET, path: &["v1", "upstreams"], answer: |admin, _| now(upstreams(admin)) },
    Route {
        method: Method::GET,
        path: &["v1", "realms", "*", "capabilities"],
        answer: |admin, asked| now(capabilities(admin, asked.params[0])),
    },
    Route {
        method: Method::GET,
        path: &["v1", "realms", "*", "upstreams", "*"],
        answer: |admin, asked| {
            now(reviewed(admin, &asked, AuditOutcome::Succeeded, |review, [name]| review.report(name)))
        },
    },
    Route {
        method: Method::GET,
        path: &["v1", "realms", "*", "upstreams", "*", "capabilities", "*", "*"],
        answer: |admin, asked| {
            now(reviewed(admin, &asked, AuditOutcome::Succeeded, |review, [name, kind, key]| {
                review.pin(name, kind, key)
            }))
        },
    },
    Route {
        method: Method::POST,
        path: &["v1", "realms", "*", "upstreams", "*", "approve"],
        answer: |admin, asked| {
            now(reviewed(admin, &asked, AuditOutcome::Approved, |review, [name]| {
                let request: Value = serde_json::from_slice(asked.body)
                    .map_err(|error| Refusal::BadRequest(format!("not JSON: {error}")))?;
                review.approve(name, &request, asked.token)
            }))
        },
    },
    Route {
        method: Method::POST,
        path: &["v1", "realms", "*", "upstreams", "*", "refresh"],
        answer: |admin, asked| Box::pin(refresh(admin, asked)),
    },
];

fn now(answer: Answer) -> BoxFuture<'static, Answer> {
    Box::pin(std::future::ready(answer))
}

async fn route(admin: &Admin, method: &Method, path: &str, body: &[u8], token: &str) -> Answer {
    let segments: Vec<String> = match path.strip_prefix('/').unwrap_or(path).split('/').map(decoded).collect() {
        Some(segments) => segments,
        None => return Answer::error(StatusCode::BAD_REQUEST, "bad_path", "the path is not UTF-8 once decoded"),
    };
    let matched = ROUTES.iter().find_map(|route| {
        let params = matches(route.path, &segments)?;
        (route.method == method).then_some((route, params))
    });
    match matched {
        Some((route, params)) => (route.answer)(admin, Asked { params, body, token }).await,
        None => Answer::error(StatusCode::NOT_FOUND, "not_found", format!("no {method} {path}")),
    }
}

/// The parameters `path` takes from `segments`, if it matches them.
fn matches<'a>(path: &[&str], segments: &'a [String]) -> Option<Vec<&'a str>> {
    if path.len() != segments.len() {
        return None;
    }
    let mut params = Vec::new();
    for (pattern, segment) in path.iter().zip(segments) {
        match *pattern {
            "*" => params.push(segment.as_str()),
            literal if literal == segment => {}
            _ => return None,
        }
    }
    Some(params)
}

fn decoded(segment: &str) -> Option<String> {
    percent_encoding::percent_decode_str(segment).decode_utf8().ok().map(|text| text.into_owned())
}

fn no_realm() -> Answer {
    Answer::error(StatusCode::NOT_FOUND, "unknown_realm", "no such realm")
}

fn no_upstream() -> Answer {
    Answer::error(StatusCode::NOT_FOUND, "unknown_upstream", "no such upstream in the realm")
}

/// Every backend of every kind, by realm.
fn backends(admin: &Admin) -> Answer {
    let realms: Vec<Value> = admin
        .realms
        .iter()
        .map(|(realm, kinds)| {
            let backends: Vec<Value> =
                kinds.iter().flat_map(|kind| kind.statuses()).map(|status| json!(status)).collect();
            json!({"realm": realm, "backends": backends})
        })
        .collect();
    Answer::ok(json!({"realms": realms}))
}

/// Every entry the realm's backends listed, served or not, each with its backend.
fn capabilities(admin: &Admin, realm: &str) -> Answer {
    let Some(kinds) = admin.realms.get(realm) else { return no_realm() };
    let entries: Vec<Value> = kinds
        .iter()
        .flat_map(|backends| {
            let kind = backends.kind();
            backends.catalogue().into_iter().map(move |listed| {
                let mut entry = json!(listed);
                entry["backend_kind"] = json!(kind);
                entry
            })
        })
        .collect();
    Answer::ok(json!({"realm": realm, "capabilities": entries}))
}

/// Every realm's upstreams, summed up.
fn upstreams(admin: &Admin) -> Answer {
    let realms: Vec<Value> = admin
        .realms
        .iter()
        .map(|(realm, kinds)| {
            let reports = upstream_review(kinds).map(Review::summaries).unwrap_or_default();
            json!({"realm": realm, "upstreams": reports})
        })
        .collect();
    Answer::ok(json!({"realms": realms}))
}

/// The review of a realm's upstreams.
fn upstream_review(kinds: &[Arc<dyn Backends>]) -> Option<&dyn Review> {
    kinds.iter().find(|backends| backends.kind() == BackendKind::UPSTREAM).and_then(|backends| backends.review())
}

/// Answers with what `answer` makes of the realm's review and the route's parameters
/// after the realm, audited as `outcome` when it succeeds.
fn reviewed<const N: usize>(
    admin: &Admin,
    asked: &Asked<'_>,
    outcome: AuditOutcome,
    answer: impl FnOnce(&dyn Review, [&str; N]) -> Result<Value, Refusal>,
) -> Answer {
    match review_of(admin, asked) {
        Ok((review, params)) => settled(answer(review, params), outcome),
        Err(refused) => refused,
    }
}

async fn refresh<'a>(admin: &'a Admin, asked: Asked<'a>) -> Answer {
    match review_of(admin, &asked) {
        Ok((review, [name])) => settled(review.refresh(name).await, AuditOutcome::Refreshed),
        Err(refused) => refused,
    }
}

/// The review of the realm the route names, and the `N` parameters after the realm.
fn review_of<'a, const N: usize>(
    admin: &'a Admin,
    asked: &'a Asked<'_>,
) -> Result<(&'a dyn Review, [&'a str; N]), Answer> {
    let (realm, rest) = asked.params.split_first().ok_or_else(no_realm)?;
    let kinds = admin.realms.get(*realm).ok_or_else(no_realm)?;
    let review = upstream_review(kinds).ok_or_else(no_upstream)?;
    // The routes' patterns fix how many parameters each has.
    let params = <[&str; N]>::try_from(rest).map_err(|_| no_upstream())?;
    Ok((review, params))
}

/// The answer to a review's result: `outcome` when it succeeded.
fn settled(result: Result<Value, Refusal>, outcome: AuditOutcome) -> Answer {
    match result {
        Ok(body) => Answer { outcome, ..Answer::ok(body) },
        Err(Refusal::UnknownBackend) => no_upstream(),
        Err(Refusal::UnknownKind) => {
            Answer::error(StatusCode::NOT_FOUND, "unknown_kind", "the kind is tool, prompt, resource or template")
        }
        Err(Refusal::UnknownCapability) => {
            Answer::error(StatusCode::NOT_FOUND, "unknown_capability", "the upstream never listed it")
        }
        Err(Refusal::BadRequest(message)) => Answer::error(StatusCode::BAD_REQUEST, "bad_request", message),
        Err(Refusal::Conflict(rows)) => Answer {
            body: json!({"error": {"code": "conflict", "message": "nothing was approved", "conflicts": rows}}),
            ..Answer::error(StatusCode::CONFLICT, "conflict", "")
        },
        Err(Refusal::NotSaved(why)) => Answer::error(StatusCode::INTERNAL_SERVER_ERROR, "not_saved", why),
        Err(Refusal::NotListed(why)) => Answer::error(StatusCode::BAD_GATEWAY, "not_listed", why),
    }
}
