//! `prompts/get`: a prompt's messages for the caller's arguments, which are strings and
//! checked against the prompt's schema (required ones first, by name).

use bondry_core::audit::AuditOutcome;
use bondry_core::capability::CapabilityKind;
use bondry_core::dispatch::{self, Outcome, Resolution, failure};
use bondry_core::handler::{Answer, Role};
use serde_json::{Map, Value, json};

use crate::call::Admitted;
use crate::error::Error;
use crate::request::Request;
use crate::revision::Era;
use crate::vocabulary::{MISSING_CLIENT_CAPABILITY, stable_code};
use crate::{ADAPTER, Call, Csprng, Step, shape};

pub fn get(request: Request<'_>, rng: &mut dyn Csprng) -> Step {
    let id = || request.id.clone();
    let Some(name) = request.params.get("name").and_then(Value::as_str) else {
        return Step::Reply(request.error(Error::InvalidParams { id: id(), detail: "params.name must be a string" }));
    };
    let capability = match dispatch::resolve(request.realm, request.principal, ADAPTER, CapabilityKind::Prompt, name) {
        Resolution::Visible(capability) => capability,
        Resolution::Hidden(reason) => {
            let error = Error::UnknownPrompt { id: id(), name: name.to_owned() };
            return Step::Reply(request.error(error).audited(request.audit(name, reason.audit_outcome())));
        }
    };
    let refuse = |error: Error| {
        let record = request.audit(name, AuditOutcome::InvalidInput);
        Step::Reply(request.error(error).audited(record))
    };
    let arguments = match request.params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) if arguments.values().all(Value::is_string) => arguments.clone(),
        Some(_) => {
            return refuse(Error::InvalidParams { id: id(), detail: "params.arguments must be an object of strings" });
        }
    };
    let required = capability.descriptor.input_schema.get("required").and_then(Value::as_array);
    if let Some(missing) =
        required.into_iter().flatten().filter_map(Value::as_str).find(|n| !arguments.contains_key(*n))
    {
        return refuse(Error::MissingPromptArgument { id: id(), name: missing.to_owned() });
    }
    if let Some(missing) = request.missing_client_capabilities(&capability) {
        return refuse(match request.era() {
            Era::Modern => Error::MissingClientCapability { id: id(), missing },
            Era::Handshake => {
                Error::CapabilityFailed { id: id(), code: MISSING_CLIENT_CAPABILITY.into(), detail: None }
            }
        });
    }
    let arguments = Value::Object(arguments);
    let (retry, continuation) = match request.retry(&capability, &arguments) {
        Ok(retry) => retry,
        Err(error) => return refuse(error),
    };
    let admitted = Admitted { retry, continuation, ..Admitted::new(capability, arguments) };
    Step::Dispatch(Box::new(Call::new(request, admitted, rng)))
}

/// The `GetPromptResult` for an outcome, or the error it becomes.
pub fn result(outcome: &Outcome, call: &Call, server_meta: &Value, era: Era) -> Result<Value, Error> {
    let id = || call.id.clone();
    let failed = |code: &str| Error::CapabilityFailed { id: id(), code: stable_code(code).to_owned(), detail: None };
    if let Some(error) = Error::of_failed_call(outcome, &call.id) {
        return Err(error);
    }
    let (description, messages) = match outcome {
        Outcome::Answered(Answer::Messages { description, messages }) => (description, messages),
        Outcome::Answered(Answer::Relayed { result, .. }) => {
            let own = match era {
                Era::Modern => server_meta.as_object().cloned().unwrap_or_default(),
                Era::Handshake => Map::new(),
            };
            let mut passed =
                shape::relayed(result.clone(), "messages", &own).ok_or_else(|| failed(failure::WRONG_ANSWER_KIND))?;
            if era == Era::Modern {
                passed.insert("resultType".into(), json!("complete"));
            }
            return Ok(Value::Object(passed));
        }
        Outcome::InvalidInput(violations) => {
            let named = violations.named.iter().map(ToString::to_string).collect();
            return Err(Error::InvalidPromptArguments { id: id(), violations: named, more: violations.more });
        }
        _ => return Err(failed(failure::WRONG_ANSWER_KIND)),
    };
    let messages: Vec<Value> = messages
        .iter()
        .map(|message| {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({"role": role, "content": shape::content_block(&message.content)})
        })
        .collect();
    let mut result = json!({ "messages": messages });
    if let Some(description) = description.as_ref().or(call.capability.descriptor.summary.as_ref()) {
        result["description"] = json!(description);
    }
    if era == Era::Modern {
        result["resultType"] = json!("complete");
        result["_meta"] = server_meta.clone();
    }
    Ok(result)
}
