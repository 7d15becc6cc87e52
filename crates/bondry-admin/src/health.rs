//! Health for orchestrators and balancers, with no token and no audit record (a probe
//! every few seconds is no operator's action): `/healthz` answers while the process
//! serves; `/readyz` while every backend marked `required` serves too. By the time the
//! admin listener serves, every listener is bound and the pin store is open.

use axum::extract::{Request, State};
use axum::response::Response;
use bondry_core::backend::BackendKind;
use http::StatusCode;
use serde_json::{Value, json};

use crate::api::{Admin, json_response, refusal};
use crate::gate::Refused;

/// `GET /healthz`: 200 while the process serves.
pub async fn healthz(State(admin): State<Admin>, request: Request) -> Response {
    if !admitted(&admin, &request) {
        return refusal(Refused::Host);
    }
    json_response(StatusCode::OK, &json!({"status": "serving"}))
}

/// `GET /readyz`: 200 when every required backend serves, else 503 naming each that does
/// not, and how it stands.
pub async fn readyz(State(admin): State<Admin>, request: Request) -> Response {
    if !admitted(&admin, &request) {
        return refusal(Refused::Host);
    }
    let waiting: Vec<Value> = admin
        .realms
        .iter()
        .flat_map(|(realm, kinds)| kinds.iter().map(move |kind| (realm, kind)))
        .flat_map(|(realm, kind)| {
            let backend_kind: BackendKind = kind.kind();
            kind.unready().into_iter().map(move |(backend, state)| {
                json!({"realm": realm, "kind": backend_kind.as_str(), "backend": backend, "state": state})
            })
        })
        .collect();
    if waiting.is_empty() {
        json_response(StatusCode::OK, &json!({"ready": true}))
    } else {
        json_response(StatusCode::SERVICE_UNAVAILABLE, &json!({"ready": false, "waiting_for": waiting}))
    }
}

/// Whether the request's `Host` (and `Origin`) are the listener's own, as for any route.
fn admitted(admin: &Admin, request: &Request) -> bool {
    let authority = request.uri().authority().map(|authority| authority.as_str());
    admin.gate.host_allowed(request.headers(), authority)
}
