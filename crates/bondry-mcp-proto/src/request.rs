//! A request the adapter has attributed to an era, with everything a method needs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use bondry_core::audit::{AuditOutcome, AuditRecord};
use bondry_core::handler::Retry;
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use bondry_core::registry::Capability;
use http::HeaderMap;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::envelope::Envelope;
use crate::error::{Context, Error};
use crate::jsonrpc::Id;
use crate::revision::Era;
use crate::session::SessionRef;
use crate::settings::Listener;
use crate::{ADAPTER, Reply, state};

/// A request whose era is known: modern (its envelope passed) or handshake (attributed
/// to a live session, whose `initialize` supplied the client capabilities).
pub struct Request<'a> {
    pub listener: &'a Listener,
    pub headers: &'a HeaderMap,
    pub body_len: usize,
    pub id: Id,
    pub method: &'a str,
    pub params: &'a Map<String, Value>,
    pub envelope: Envelope,
    pub realm: &'a Arc<RealmSnapshot>,
    pub principal: &'a Principal,
    pub now: SystemTime,
    /// The handshake session; `None` in the modern era.
    pub session: Option<SessionRef>,
    /// The tool the caller called to reach this one (`bondry.call`), when not directly.
    pub via: Option<&'static str>,
}

impl Request<'_> {
    pub fn era(&self) -> Era {
        if self.session.is_some() { Era::Handshake } else { Era::Modern }
    }

    /// How errors are answered: inside a session they ride 200.
    pub fn context(&self) -> Context {
        Context::of(self.session.as_ref().map(|session| session.revision))
    }

    pub fn error(&self, error: Error) -> Reply {
        Reply::error(error, self.context())
    }

    pub fn result(&self, result: &impl Serialize) -> Reply {
        self.result_within(result, 0)
    }

    /// [`Request::result`], its body's buffer starting at `capacity` bytes.
    pub fn result_within(&self, result: &impl Serialize, capacity: usize) -> Reply {
        Reply::json(http::StatusCode::OK, crate::jsonrpc::result_body_within(&self.id, result, capacity))
    }

    /// The client capabilities `capability` always needs that this request (or, in the
    /// handshake era, its session's `initialize`) did not declare; `None` when none lack.
    pub fn missing_client_capabilities(&self, capability: &Capability) -> Option<Value> {
        let required = capability.descriptor.requires_client.as_ref()?;
        let missing = missing_capabilities(required, &self.envelope.client_capabilities);
        missing.as_object().is_some_and(|missing| !missing.is_empty()).then_some(missing)
    }

    /// What a modern retry of `capability` with `arguments` carries: its `inputResponses`
    /// and its opened `requestState`, with the exchange the state continues. The
    /// handshake era has none (its input travels on the call's own stream).
    pub fn retry(&self, capability: &Capability, arguments: &Value) -> Result<(Option<Retry>, Option<String>), Error> {
        if self.era() == Era::Handshake {
            return Ok((None, None));
        }
        let responses = match self.params.get("inputResponses") {
            None => None,
            Some(Value::Object(responses)) if responses.values().all(Value::is_object) => {
                Some(responses.clone().into_iter().collect::<BTreeMap<_, _>>())
            }
            Some(_) => return Err(Error::InvalidInputResponses { id: self.id.clone() }),
        };
        let opened = match self.params.get("requestState") {
            None => None,
            Some(Value::String(token)) => {
                let binding = self.binding(capability, arguments);
                let opened = state::open(&self.realm.keys, &binding, token, self.now);
                Some(opened.ok_or_else(|| Error::InvalidRequestState { id: self.id.clone() })?)
            }
            Some(_) => return Err(Error::InvalidRequestState { id: self.id.clone() }),
        };
        if responses.is_none() && opened.is_none() {
            return Ok((None, None));
        }
        let (state, continuation) =
            opened.map_or((None, None), |opened| (Some(opened.state), Some(opened.continuation)));
        let retry = Retry { responses: responses.unwrap_or_default(), state, continuation: continuation.clone() };
        Ok((Some(retry), continuation))
    }

    /// What a `requestState` for this request is bound to.
    pub fn binding<'b>(&'b self, capability: &'b Capability, arguments: &'b Value) -> state::Binding<'b> {
        state::Binding {
            principal: self.principal.id(),
            realm: &self.realm.realm,
            method: self.method,
            capability: capability.id().as_str(),
            arguments,
        }
    }

    /// An audit record for a refusal of `name` before dispatch.
    pub fn audit(&self, name: &str, outcome: AuditOutcome) -> AuditRecord {
        let mut record = AuditRecord::new(
            self.now,
            &self.realm.realm,
            self.principal,
            ADAPTER,
            name,
            None,
            outcome,
            &self.envelope.trace,
        );
        record.via = self.via;
        record
    }
}

/// The parts of `required` that `declared` lacks, recursively through objects. A declared
/// value that is not an object declares nothing, and an empty `elicitation` declares form
/// mode, as the revision defines it.
pub(crate) fn missing_capabilities(required: &Value, declared: &Value) -> Value {
    let mut missing = Map::new();
    if let Value::Object(required) = required {
        for (key, needed) in required {
            let have = match declared.get(key) {
                Some(Value::Object(have)) if key == "elicitation" && have.is_empty() => &json!({"form": {}}),
                Some(have @ Value::Object(_)) => have,
                _ => {
                    missing.insert(key.clone(), needed.clone());
                    continue;
                }
            };
            let deeper = missing_capabilities(needed, have);
            if deeper.as_object().is_some_and(|deeper| !deeper.is_empty()) {
                missing.insert(key.clone(), deeper);
            }
        }
    }
    Value::Object(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_capabilities_lists_only_what_is_absent() {
        let required = json!({"elicitation": {"form": {}}, "sampling": {}});
        assert_eq!(missing_capabilities(&required, &json!({"sampling": {}})), json!({"elicitation": {"form": {}}}));
        assert_eq!(missing_capabilities(&required, &json!({"elicitation": {}, "sampling": {}})), json!({}));
        assert_eq!(
            missing_capabilities(&required, &json!({"elicitation": {"url": {}}, "sampling": {}})),
            json!({"elicitation": {"form": {}}})
        );
        assert_eq!(
            missing_capabilities(&json!({"elicitation": {"url": {}}}), &json!({"elicitation": {}})),
            json!({"elicitation": {"url": {}}})
        );
        assert_eq!(missing_capabilities(&required, &json!({"elicitation": true, "sampling": 1})), required);
        assert_eq!(missing_capabilities(&required, &json!({"elicitation": {"form": {}}, "sampling": {}})), json!({}));
    }
}
