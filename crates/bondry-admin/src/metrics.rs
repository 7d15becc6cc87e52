//! `GET /metrics`: every metric as OpenMetrics text, for a Prometheus scrape. It needs an
//! admin token unless `metrics_public` says otherwise, and a scrape is not audited (one
//! every few seconds is no operator's action); a refused one is, like any refused
//! request of the admin listener.

use std::net::SocketAddr;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::response::{IntoResponse, Response};
use bondry_core::audit::AuditRecord;
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};

use crate::api::{Admin, refusal};
use crate::gate::Refused;

pub async fn metrics(
    State(admin): State<Admin>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let Some(metrics) = &admin.metrics else {
        return crate::api::handle(State(admin), ConnectInfo(peer), request).await;
    };
    let authority = request.uri().authority().map(|authority| authority.as_str());
    let admitted = if metrics.public {
        match admin.gate.host_allowed(request.headers(), authority) {
            true => Ok(()),
            false => Err(Refused::Host),
        }
    } else {
        admin.gate.admit(request.headers(), authority, peer.ip()).map(drop)
    };
    if let Err(refused) = admitted {
        let record = AuditRecord::unauthenticated(SystemTime::now(), "", "admin");
        admin.audit.record(AuditRecord { capability: "/metrics".into(), ..record });
        return refusal(refused);
    }
    let mut response = (StatusCode::OK, Body::from(metrics.metrics.render())).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, http::HeaderValue::from_static(bondry_telemetry::CONTENT_TYPE));
    headers.insert(CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}
