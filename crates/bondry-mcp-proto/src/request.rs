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
use serde_json::{Map, Value};

use crate::envelope::Envelope;
use crate::error::{Context, Error};
use crate::jsonrpc::Id;
use crate::revision::{Era, Revision};
use crate::session::SessionRef;
use crate::{ADAPTER, Adapter, Reply};

/// A request whose era is known: modern (its envelope passed) or handshake (attributed
/// to a live session, whose `initialize` supplied the client capabilities).
pub struct Request<'a> {
    pub adapter: &'a Adapter,
    pub headers: &'a HeaderMap,
    pub body_len: usize,
    pub id: Id,
    pub params: &'a Map<String, Value>,
    pub envelope: Envelope,
    pub realm: &'a Arc<RealmSnapshot>,
    pub principal: &'a Principal,
    pub now: SystemTime,
    /// The handshake session; `None` in the modern era.
    pub session: Option<SessionRef>,
}

impl Request<'_> {
    pub fn era(&self) -> Era {
        if self.session.is_some() { Era::Handshake } else { Era::Modern }
    }

    /// How errors are answered: inside a session they ride 200.
    pub fn context(&self) -> Context {
        self.session.as_ref().map_or_else(Context::default, |session| Context {
            in_session: true,
            null_id: session.revision == Revision::V2025_06_18,
        })
    }

    pub fn error(&self, error: Error) -> Reply {
        Reply::error(error, self.context())
    }

    pub fn result(&self, result: &impl Serialize) -> Reply {
        Reply::json(http::StatusCode::OK, crate::jsonrpc::result_body(&self.id, result))
    }

    /// The client capabilities `capability` always needs that this request (or, in the
    /// handshake era, its session's `initialize`) did not declare; `None` when none lack.
    pub fn missing_client_capabilities(&self, capability: &Capability) -> Option<Value> {
        let required = capability.descriptor.requires_client.as_ref()?;
        let missing = crate::tools::missing_capabilities(required, &self.envelope.client_capabilities);
        missing.as_object().is_some_and(|missing| !missing.is_empty()).then_some(missing)
    }

    /// A modern retry's `inputResponses` and `requestState`; the handshake era has none.
    pub fn retry(&self) -> Result<Option<Retry>, Error> {
        if self.era() == Era::Handshake {
            return Ok(None);
        }
        let retry = match self.params.get("inputResponses") {
            None => None,
            Some(Value::Object(responses)) if responses.values().all(Value::is_object) => {
                Some(Retry { responses: responses.clone().into_iter().collect::<BTreeMap<_, _>>(), state: None })
            }
            Some(_) => return Err(Error::InvalidInputResponses { id: self.id.clone() }),
        };
        // No requestState is ever sealed before multi-round-trip requests land (issue 6), so
        // any presented one cannot open.
        if self.params.contains_key("requestState") {
            return Err(Error::InvalidRequestState { id: self.id.clone() });
        }
        Ok(retry)
    }

    /// An audit record for a refusal of `name` before dispatch.
    pub fn audit(&self, name: &str, outcome: AuditOutcome) -> AuditRecord {
        AuditRecord::new(
            self.now,
            &self.realm.realm,
            self.principal,
            ADAPTER,
            name,
            None,
            outcome,
            &self.envelope.trace,
        )
    }
}
