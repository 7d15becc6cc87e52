//! The handshake era (2025-11-25, 2025-06-18): `initialize`, requests inside a session,
//! session notifications, and GET and DELETE on the session.
//!
//! Inside a session `Mcp-*` routing headers are ignored, `MCP-Protocol-Version` is
//! optional but must name a handshake revision this endpoint accepts, and JSON-RPC errors
//! ride HTTP 200 once a request is attributed to a live session.

use std::sync::Arc;
use std::time::SystemTime;

use bondry_core::handler::LogLevel;
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use crate::discover::Announced;
use crate::envelope::Envelope;
use crate::error::Error;
use crate::headers::{self, PROTOCOL_VERSION};
use crate::jsonrpc::Id;
use crate::request::Request;
use crate::revision::Revision;
use crate::session::{self, Effect, LiveSession, SessionRef};
use crate::settings::Listener;
use crate::{Csprng, Inbound, Reply, Step, methods, resources};

/// Server capabilities announced in the handshake era, computed per realm. List changes
/// and updates of subscribed resources reach sessions on their event stream.
pub fn capabilities(realm: &RealmSnapshot) -> Value {
    let announced = Announced::of(realm);
    let mut capabilities = Map::new();
    if announced.tools {
        capabilities.insert("tools".into(), json!({"listChanged": true}));
    }
    // Handlers' log messages reach a session that asked with `logging/setLevel`.
    capabilities.insert("logging".into(), json!({}));
    if announced.resources {
        // Updates of subscribed resources and list changes reach the session's event stream.
        capabilities.insert("resources".into(), json!({"subscribe": true, "listChanged": true}));
    }
    if announced.prompts {
        capabilities.insert("prompts".into(), json!({"listChanged": true}));
    }
    if announced.completions {
        capabilities.insert("completions".into(), json!({}));
    }
    Value::Object(capabilities)
}

/// The largest client capabilities object a session keeps, serialised.
const MAX_CLIENT_CAPABILITIES: usize = 64 * 1024;

/// The revision a request inside a session speaks: its optional `MCP-Protocol-Version`
/// must name a handshake revision this endpoint accepts. `None` when it does not.
pub fn version(listener: &Listener, headers: &http::HeaderMap, session: &SessionRef) -> Option<Revision> {
    match headers::single(headers, PROTOCOL_VERSION) {
        Ok(None) => Some(session.revision),
        Ok(Some(version)) => version.parse::<Revision>().ok().filter(|r| listener.handshake.contains(r)),
        Err(_) => None,
    }
}

/// `initialize` without a session: echoes a requested handshake revision this endpoint
/// accepts, else offers the newest one, and opens a session.
pub fn initialize(
    listener: &Listener,
    id: Id,
    params: &Map<String, Value>,
    realm: &Arc<RealmSnapshot>,
    principal: &Principal,
    now: SystemTime,
    rng: &mut dyn Csprng,
) -> Step {
    let invalid = |detail| Step::Reply(Reply::from(Error::InvalidParams { id: id.clone(), detail }));
    let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
        return invalid("params.protocolVersion must be a string");
    };
    let Some(client_capabilities) = params.get("capabilities").filter(|c| c.is_object()) else {
        return invalid("params.capabilities must be an object");
    };
    // The session keeps the capabilities for its whole life: they are bounded.
    if serde_json::to_vec(client_capabilities).map_or(true, |bytes| bytes.len() > MAX_CLIENT_CAPABILITIES) {
        return invalid("params.capabilities is larger than 64 KiB");
    }
    let revision = match requested.parse::<Revision>() {
        Ok(revision) if listener.handshake.contains(&revision) => revision,
        _ => listener.handshake[0],
    };
    let client_capabilities = client_capabilities.clone();
    let lifetime = listener.settings.session_lifetime;
    let (token, new) = session::mint(realm, principal, revision, client_capabilities, lifetime, now, rng);
    let result = json!({
        "protocolVersion": revision.as_str(),
        "capabilities": capabilities(realm),
        "serverInfo": {"name": "bondry", "version": listener.settings.server_version},
    });
    let mut reply = Reply::json(StatusCode::OK, crate::jsonrpc::result_body(&id, &result));
    let value = http::HeaderValue::from_str(&token).expect("sealed tokens are visible ASCII");
    reply.headers_mut().insert(session::HEADER, value);
    Step::Reply(reply.with_effect(Effect::OpenSession(new)))
}

/// A request attributed to a live session.
pub struct Attributed<'a> {
    pub session: SessionRef,
    pub live: LiveSession,
    pub id: Id,
    pub method: &'a str,
    pub params: &'a Map<String, Value>,
}

/// A request inside a live session.
pub fn receive(
    listener: &Listener,
    inbound: Inbound<'_>,
    attributed: Attributed<'_>,
    realm: &Arc<RealmSnapshot>,
    principal: &Principal,
    now: SystemTime,
    rng: &mut dyn Csprng,
) -> Step {
    let Attributed { session, live, id, method, params } = attributed;
    let subscriptions = live.subscriptions;
    let Some(version) = version(listener, inbound.headers, &session) else {
        // A header the session cannot use is a transport error: it keeps its 400.
        return Error::InvalidSessionVersion { id: Some(id) }.into();
    };
    let meta = params.get("_meta").and_then(Value::as_object);
    let trace = meta.map(crate::envelope::trace_context).unwrap_or_default();
    let progress_token = meta
        .and_then(|meta| meta.get(crate::envelope::PROGRESS_TOKEN))
        .filter(|token| token.is_string() || token.is_i64() || token.is_u64())
        .cloned();
    let envelope = Envelope {
        version: version.as_str().into(),
        client_capabilities: live.client_capabilities,
        trace,
        progress_token,
        log_level: live.log_level,
    };
    let request = Request {
        listener,
        headers: inbound.headers,
        body_len: inbound.body.len(),
        id,
        method,
        params,
        envelope,
        realm,
        principal,
        now,
        session: Some(session),
        via: None,
    };
    let announced = Announced::of(realm);
    if methods::is_shared(method, &announced) {
        return methods::shared(request, rng);
    }
    match method {
        "initialize" => Step::Reply(request.error(Error::AlreadyInitialized { id: request.id.clone() })),
        "ping" => Step::Reply(request.result(&json!({}))),
        "logging/setLevel" => match request.params.get("level").and_then(Value::as_str).and_then(LogLevel::parse) {
            Some(level) => {
                let sid = request.session.as_ref().map(|session| session.sid.clone()).unwrap_or_default();
                Step::Reply(request.result(&json!({})).with_effect(Effect::SetLogLevel { sid, level }))
            }
            None => Step::Reply(request.error(Error::InvalidParams {
                id: request.id.clone(),
                detail: "params.level must be a log level: debug, info, notice, warning, error, critical, alert or emergency",
            })),
        },
        "resources/subscribe" if announced.resources => Step::Reply(resources::subscribe(&request, subscriptions)),
        "resources/unsubscribe" if announced.resources => Step::Reply(resources::unsubscribe(&request)),
        _ => Step::Reply(request.error(Error::MethodNotFound { id: request.id.clone(), method: method.to_owned() })),
    }
}

/// A notification inside a live session: accepted; `notifications/cancelled` names a
/// call for the runtime to cancel.
pub fn notification(
    listener: &Listener,
    headers: &http::HeaderMap,
    method: &str,
    params: Option<&Map<String, Value>>,
    session: SessionRef,
) -> Step {
    if version(listener, headers, &session).is_none() {
        return Error::InvalidSessionVersion { id: None }.into();
    }
    let reply = Reply::empty(StatusCode::ACCEPTED);
    let cancelled =
        (method == "notifications/cancelled").then(|| params?.get("requestId").and_then(Id::from_value)).flatten();
    Step::Reply(match cancelled {
        Some(request) => reply.with_effect(Effect::Cancel { sid: session.sid, request }),
        None => reply,
    })
}

/// GET and DELETE, which exist only for sessions.
pub fn session_method(
    listener: &Listener,
    inbound: Inbound<'_>,
    session_id: Option<&str>,
    attributed: Option<(SessionRef, LiveSession)>,
) -> Step {
    if session_id.is_none() {
        return Error::SessionRequired { id: None }.into();
    }
    let Some((session, _)) = attributed else {
        return Error::SessionNotFound { id: None }.into();
    };
    if version(listener, inbound.headers, &session).is_none() {
        return Error::InvalidSessionVersion { id: None }.into();
    }
    let method = inbound.method;
    if *method == Method::GET {
        Step::Listen(session)
    } else {
        Step::Reply(Reply::empty(StatusCode::NO_CONTENT).with_effect(Effect::CloseSession { sid: session.sid }))
    }
}
