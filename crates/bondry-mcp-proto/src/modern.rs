//! The modern (2026-07-28) path: envelope, version, routing headers, then the method.

use std::time::SystemTime;

use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use http::HeaderMap;
use serde_json::{Map, Value};

use crate::envelope;
use crate::error::{Error, HeaderFault};
use crate::headers::{self, METHOD, NAME, PROTOCOL_VERSION};
use crate::jsonrpc::Id;
use crate::request::Request;
use crate::settings::Listener;
use crate::{Csprng, Step, discover, listen, methods};

/// The modern pipeline for a request that carries a claim.
#[allow(clippy::too_many_arguments)]
pub fn receive(
    listener: &Listener,
    headers: &HeaderMap,
    body_len: usize,
    id: Id,
    method: &str,
    params: &Map<String, Value>,
    realm: &std::sync::Arc<RealmSnapshot>,
    principal: &Principal,
    now: SystemTime,
    rng: &mut dyn Csprng,
) -> Step {
    let envelope = match envelope::validate(Some(params)) {
        Ok(envelope) => envelope,
        Err(fault) => return Error::InvalidEnvelope { id: Some(id), fault }.into(),
    };
    let header_error =
        |header: &str, fault| Error::HeaderMismatch { id: Some(id.clone()), header: header.to_owned(), fault };
    let version_header = match headers::single(headers, PROTOCOL_VERSION) {
        Ok(version) => version,
        Err(fault) => return header_error(PROTOCOL_VERSION, fault).into(),
    };
    if version_header.is_some_and(|version| version != envelope.version) {
        return header_error(PROTOCOL_VERSION, HeaderFault::Mismatch).into();
    }
    if !listener.supported.contains(&envelope.version.as_str()) {
        return Error::UnsupportedVersion {
            id: Some(id),
            supported: listener.supported.clone(),
            requested: envelope.version,
        }
        .into();
    }
    if let Err((header, fault)) = check_routing_headers(headers, version_header, method, params) {
        return header_error(&header, fault).into();
    }
    let request = Request {
        listener,
        headers,
        body_len,
        id,
        method,
        params,
        envelope,
        realm,
        principal,
        now,
        session: None,
        via: None,
    };
    let announced = discover::Announced::of(realm);
    if methods::is_shared(method, &announced) {
        return methods::shared(request, rng);
    }
    match method {
        "server/discover" => Step::Reply(request.result(&discover::result(listener, realm))),
        "subscriptions/listen" if announced.any() => match listen::subscribe(&request) {
            Ok(subscription) => Step::Subscribe(Box::new(subscription)),
            Err(error) => Step::Reply(request.error(error)),
        },
        _ => Error::MethodNotFound { id: request.id, method: method.to_owned() }.into(),
    }
}

/// `MCP-Protocol-Version` present, `Mcp-Method` equal to the method, `Mcp-Name` equal to
/// the name or URI the method addresses, and no routing header repeated.
fn check_routing_headers(
    headers: &HeaderMap,
    version_header: Option<&str>,
    method: &str,
    params: &Map<String, Value>,
) -> Result<(), (String, HeaderFault)> {
    if let Some(repeated) = headers::first_repeated(headers) {
        return Err((repeated.to_owned(), HeaderFault::Repeated));
    }
    if version_header.is_none() {
        return Err((PROTOCOL_VERSION.to_owned(), HeaderFault::Missing));
    }
    match headers::single(headers, METHOD) {
        Err(fault) => return Err((METHOD.to_owned(), fault)),
        Ok(None) => return Err((METHOD.to_owned(), HeaderFault::Missing)),
        Ok(Some(value)) if value != method => return Err((METHOD.to_owned(), HeaderFault::Mismatch)),
        Ok(Some(_)) => {}
    }
    let named = match method {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        _ => None,
    };
    if let Some(expected) = named.and_then(Value::as_str) {
        match headers::decoded(headers, NAME) {
            Err(fault) => return Err((NAME.to_owned(), fault)),
            Ok(None) => return Err((NAME.to_owned(), HeaderFault::Missing)),
            Ok(Some(value)) if value != expected => return Err((NAME.to_owned(), HeaderFault::Mismatch)),
            Ok(Some(_)) => {}
        }
    }
    Ok(())
}
