//! `resources/read`: a static resource by its URI, or a resource template whose URI
//! template the URI matches, with the URI's variables as the handler's arguments.

use bondry_core::audit::AuditOutcome;
use bondry_core::dispatch::{self, Outcome, ResourceResolution, failure};
use bondry_core::handler::{Answer, ResourceContents};
use serde_json::{Map, Value, json};

use crate::call::Admitted;
use crate::error::Error;
use crate::request::Request;
use crate::revision::Era;
use crate::session::{Effect, MAX_SUBSCRIPTIONS};
use crate::vocabulary::{MISSING_CLIENT_CAPABILITY, stable_code};
use crate::{ADAPTER, Call, Csprng, Reply, Step, shape};

pub fn read(request: Request<'_>, rng: &mut dyn Csprng) -> Step {
    let id = || request.id.clone();
    let Some(uri) = request.params.get("uri").and_then(Value::as_str) else {
        return Step::Reply(request.error(Error::InvalidParams { id: id(), detail: "params.uri must be a string" }));
    };
    let in_session = request.era() == Era::Handshake;
    let (capability, arguments) = match dispatch::resolve_resource(request.realm, request.principal, ADAPTER, uri) {
        ResourceResolution::Visible { capability, arguments } => (capability, arguments),
        ResourceResolution::Hidden(reason) => {
            let error = Error::ResourceNotFound { id: id(), uri: uri.to_owned(), in_session };
            return Step::Reply(request.error(error).audited(request.audit(uri, reason.audit_outcome())));
        }
        ResourceResolution::InvalidVariables(capability) => {
            let error = Error::InvalidResourceVariables { id: id(), uri: uri.to_owned() };
            let record = request.audit(capability.id().as_str(), AuditOutcome::InvalidInput);
            return Step::Reply(request.error(error).audited(record));
        }
    };
    let refuse = |error: Error| {
        let record = request.audit(capability.id().as_str(), AuditOutcome::InvalidInput);
        Step::Reply(request.error(error).audited(record))
    };
    if let Some(missing) = request.missing_client_capabilities(&capability) {
        return refuse(match request.era() {
            Era::Modern => Error::MissingClientCapability { id: id(), missing },
            Era::Handshake => {
                Error::CapabilityFailed { id: id(), code: MISSING_CLIENT_CAPABILITY.into(), detail: None }
            }
        });
    }
    let (retry, continuation) = match request.retry(&capability, &arguments) {
        Ok(retry) => retry,
        Err(error) => return refuse(error),
    };
    let admitted = Admitted { retry, continuation, uri: Some(uri.to_owned()), ..Admitted::new(capability, arguments) };
    Step::Dispatch(Box::new(Call::new(request, admitted, rng)))
}

/// `resources/subscribe` in a session: the resource must be in the caller's view, as for
/// a read; the session then hears `notifications/resources/updated` for it.
pub fn subscribe(request: &Request<'_>, subscriptions: usize) -> Reply {
    let Some(uri) = request.params.get("uri").and_then(Value::as_str) else {
        return request.error(Error::InvalidParams { id: request.id.clone(), detail: "params.uri must be a string" });
    };
    if let ResourceResolution::Hidden(reason) =
        dispatch::resolve_resource(request.realm, request.principal, ADAPTER, uri)
    {
        let error = Error::ResourceNotFound { id: request.id.clone(), uri: uri.to_owned(), in_session: true };
        return request.error(error).audited(request.audit(uri, reason.audit_outcome()));
    }
    if subscriptions >= MAX_SUBSCRIPTIONS {
        let detail = "the session is subscribed to as many resources as it may (256)";
        return request.error(Error::InvalidParams { id: request.id.clone(), detail });
    }
    let sid = request.session.as_ref().map(|session| session.sid.clone()).unwrap_or_default();
    request.result(&json!({})).with_effect(Effect::Subscribe { sid, uri: uri.to_owned() })
}

/// `resources/unsubscribe` in a session; unsubscribing from what was never subscribed is
/// not an error.
pub fn unsubscribe(request: &Request<'_>) -> Reply {
    let Some(uri) = request.params.get("uri").and_then(Value::as_str) else {
        return request.error(Error::InvalidParams { id: request.id.clone(), detail: "params.uri must be a string" });
    };
    let sid = request.session.as_ref().map(|session| session.sid.clone()).unwrap_or_default();
    request.result(&json!({})).with_effect(Effect::Unsubscribe { sid, uri: uri.to_owned() })
}

/// `notifications/resources/updated` for `uri`.
pub fn updated_notification(uri: &str) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}).to_string()
}

/// The `ReadResourceResult` for an outcome, or the error it becomes. A handler that
/// answers no contents answers "not found": an empty `contents` is never sent.
pub fn result(outcome: &Outcome, call: &Call, server_meta: &Value, era: Era) -> Result<Value, Error> {
    let id = || call.id.clone();
    let uri = call.uri.clone().unwrap_or_default();
    let failed = |code: &str| Error::CapabilityFailed { id: id(), code: stable_code(code).to_owned(), detail: None };
    if let Some(error) = Error::of_failed_call(outcome, &call.id) {
        return Err(error);
    }
    let items = match outcome {
        Outcome::Answered(Answer::Contents { items }) if !items.is_empty() => items,
        Outcome::Answered(Answer::Relayed { result, .. }) => {
            let own = match era {
                Era::Modern => server_meta.as_object().cloned().unwrap_or_default(),
                Era::Handshake => Map::new(),
            };
            let mut passed =
                shape::relayed(result.clone(), "contents", &own).ok_or_else(|| failed(failure::WRONG_ANSWER_KIND))?;
            if passed.get("contents").and_then(Value::as_array).is_some_and(Vec::is_empty) {
                return Err(Error::ResourceNotFound { id: id(), uri, in_session: era == Era::Handshake });
            }
            if era == Era::Modern {
                passed.insert("resultType".into(), json!("complete"));
                passed.insert("ttlMs".into(), json!(0));
                passed.insert("cacheScope".into(), json!("private"));
            }
            return Ok(Value::Object(passed));
        }
        Outcome::Answered(Answer::Contents { .. }) => {
            return Err(Error::ResourceNotFound { id: id(), uri, in_session: era == Era::Handshake });
        }
        Outcome::InvalidInput(_) => return Err(Error::InvalidResourceVariables { id: id(), uri }),
        _ => return Err(failed(failure::WRONG_ANSWER_KIND)),
    };
    let descriptor = &call.capability.descriptor;
    let contents: Vec<Value> = items
        .iter()
        .map(|item| {
            // A handler may leave out what the capability already knows.
            let filled = ResourceContents {
                uri: if item.uri.is_empty() { uri.clone() } else { item.uri.clone() },
                mime_type: item.mime_type.clone().or_else(|| descriptor.mime_type.clone()),
                body: item.body.clone(),
            };
            shape::resource_contents(&filled)
        })
        .collect();
    let mut result = json!({ "contents": contents });
    if era == Era::Modern {
        result["resultType"] = json!("complete");
        result["ttlMs"] = json!(0);
        result["cacheScope"] = json!("private");
        result["_meta"] = server_meta.clone();
    }
    Ok(result)
}
