//! `completion/complete`: values a prompt argument or a resource template variable may
//! take, from the capability's completion hook. A reference to a hidden or unknown
//! prompt or template answers exactly as `prompts/get` or `resources/read` would.

use std::collections::BTreeMap;

use bondry_core::audit::AuditOutcome;
use bondry_core::capability::CapabilityKind;
use bondry_core::dispatch::{self, Outcome, Resolution};
use bondry_core::handler::CompletionQuery;
use serde_json::{Map, Value, json};

use crate::call::Admitted;
use crate::error::Error;
use crate::request::Request;
use crate::revision::Era;
use crate::vocabulary::stable_code;
use crate::{ADAPTER, Call, Csprng, Step};

pub fn complete(request: Request<'_>, rng: &mut dyn Csprng) -> Step {
    let id = || request.id.clone();
    let invalid = |detail| Step::Reply(request.error(Error::InvalidParams { id: id(), detail }));
    let Some(reference) = request.params.get("ref").and_then(Value::as_object) else {
        return invalid("params.ref must be an object");
    };
    let argument = request.params.get("argument").and_then(Value::as_object);
    let (Some(argument_name), Some(value)) = (
        argument.and_then(|a| a.get("name")).and_then(Value::as_str),
        argument.and_then(|a| a.get("value")).and_then(Value::as_str),
    ) else {
        return invalid("params.argument must hold the strings name and value");
    };
    let context = match request.params.get("context").and_then(|c| c.get("arguments")) {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(chosen)) if chosen.values().all(Value::is_string) => {
            chosen.iter().map(|(name, value)| (name.clone(), value.as_str().unwrap_or_default().to_owned())).collect()
        }
        Some(_) => return invalid("params.context.arguments must be an object of strings"),
    };
    let in_session = request.era() == Era::Handshake;
    let capability = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let Some(name) = reference.get("name").and_then(Value::as_str) else {
                return invalid("params.ref.name must be a string");
            };
            match dispatch::resolve(request.realm, request.principal, ADAPTER, CapabilityKind::Prompt, name) {
                Resolution::Visible(capability) => capability,
                Resolution::Hidden(reason) => {
                    let error = Error::UnknownPrompt { id: id(), name: name.to_owned() };
                    return Step::Reply(request.error(error).audited(request.audit(name, reason.audit_outcome())));
                }
            }
        }
        Some("ref/resource") => {
            let Some(uri) = reference.get("uri").and_then(Value::as_str) else {
                return invalid("params.ref.uri must be a string");
            };
            let mut named = request
                .realm
                .catalogue
                .of_kind(CapabilityKind::ResourceTemplate)
                .filter(|template| template.descriptor.uri.as_deref() == Some(uri))
                .peekable();
            let exists = named.peek().is_some();
            match named.find(|template| dispatch::visible(request.realm, request.principal, ADAPTER, template)) {
                Some(template) => std::sync::Arc::clone(template),
                None => {
                    // The caller learns the same either way; only the audit record tells.
                    let outcome = if exists { AuditOutcome::Denied } else { AuditOutcome::NotFound };
                    let error = Error::ResourceNotFound { id: id(), uri: uri.to_owned(), in_session };
                    return Step::Reply(request.error(error).audited(request.audit(uri, outcome)));
                }
            }
        }
        _ => return invalid("params.ref.type must be \"ref/prompt\" or \"ref/resource\""),
    };
    let query = CompletionQuery {
        capability: capability.id().clone(),
        argument: argument_name.to_owned(),
        value: value.to_owned(),
        context,
    };
    let arguments = json!({"argument": {"name": argument_name, "value": value}});
    let admitted = Admitted { completion: Some(query), ..Admitted::new(capability, arguments) };
    Step::Dispatch(Box::new(Call::new(request, admitted, rng)))
}

/// The `CompleteResult` for a hook's outcome, or the error it becomes.
pub fn result(outcome: &Outcome, call: &Call, server_meta: &Value, era: Era) -> Result<Value, Error> {
    let Outcome::Completed(completion) = outcome else {
        let code = match outcome {
            Outcome::Failed { code } => stable_code(code),
            _ => dispatch::failure::WRONG_ANSWER_KIND,
        };
        return Err(Error::CapabilityFailed { id: call.id.clone(), code: code.to_owned(), detail: None });
    };
    let mut inner = Map::new();
    inner.insert("values".into(), json!(completion.values));
    if let Some(total) = completion.total {
        inner.insert("total".into(), json!(total));
    }
    if let Some(has_more) = completion.has_more {
        inner.insert("hasMore".into(), json!(has_more));
    }
    let mut result = json!({ "completion": inner });
    if era == Era::Modern {
        result["resultType"] = json!("complete");
        result["_meta"] = server_meta.clone();
    }
    Ok(result)
}
