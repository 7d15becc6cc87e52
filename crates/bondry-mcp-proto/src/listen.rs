//! `subscriptions/listen` (2026-07-28): one event stream per subscription, carrying only
//! the notifications the client opted into and Bondry honours, each tagged with the
//! subscription's id. The first message acknowledges what is honoured; a graceful close
//! answers the listen request itself.

use bondry_core::capability::CapabilityKind;
use bondry_core::dispatch::{self, ResourceResolution};
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use serde_json::{Map, Value, json};

use crate::discover::Announced;
use crate::error::Error;
use crate::jsonrpc::Id;
use crate::request::Request;
use crate::{ADAPTER, listing};

/// `_meta` key naming the subscription a notification belongs to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The most resource URIs one subscription follows.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 256;

/// What one listen stream delivers.
#[derive(Debug, Clone)]
pub struct Subscription {
    id: Id,
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
}

/// Reads a listen request's filter and keeps what this realm honours for this caller:
/// list changes of the features the realm announces, and updates of resources the caller
/// can read now (unknown, unreadable or hidden URIs are left out without error).
pub fn subscribe(request: &Request<'_>) -> Result<Subscription, Error> {
    let invalid = |detail| Error::InvalidParams { id: request.id.clone(), detail };
    let Some(filter) = request.params.get("notifications").and_then(Value::as_object) else {
        return Err(invalid("params.notifications must be an object"));
    };
    let announced = Announced::of(request.realm);
    let wants = |key: &str| filter.get(key) == Some(&Value::Bool(true));
    let uris = match filter.get("resourceSubscriptions") {
        None => Vec::new(),
        Some(Value::Array(uris)) => {
            let mut kept: Vec<String> = Vec::new();
            for uri in uris.iter().filter_map(Value::as_str) {
                let readable = matches!(
                    dispatch::resolve_resource(request.realm, request.principal, ADAPTER, uri),
                    ResourceResolution::Visible { .. }
                );
                if readable && !kept.iter().any(|kept| kept == uri) && kept.len() < MAX_RESOURCE_SUBSCRIPTIONS {
                    kept.push(uri.to_owned());
                }
            }
            kept
        }
        Some(_) => return Err(invalid("params.notifications.resourceSubscriptions must be an array of URIs")),
    };
    Ok(Subscription {
        id: request.id.clone(),
        tools: announced.tools && wants("toolsListChanged"),
        prompts: announced.prompts && wants("promptsListChanged"),
        resources: announced.resources && wants("resourcesListChanged"),
        uris,
    })
}

impl Subscription {
    /// The id of the listen request, which names the subscription.
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// The first message: what is honoured.
    pub fn acknowledged(&self) -> String {
        let mut honoured = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                honoured.insert(key.into(), json!(true));
            }
        }
        if !self.uris.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(self.uris));
        }
        self.notification("notifications/subscriptions/acknowledged", Some(("notifications", Value::Object(honoured))))
    }

    /// The resources whose updates the stream carries.
    pub fn resource_uris(&self) -> &[String] {
        &self.uris
    }

    /// The list-changed notification for `kind`, if this subscription asked for it.
    pub fn list_changed(&self, kind: CapabilityKind) -> Option<String> {
        self.wants_list(kind).then(|| self.notification(listing::list_changed_method(kind), None))
    }

    /// Whether this subscription asked for list changes of `kind`.
    pub fn wants_list(&self, kind: CapabilityKind) -> bool {
        match kind {
            CapabilityKind::Tool => self.tools,
            CapabilityKind::Prompt => self.prompts,
            CapabilityKind::Resource | CapabilityKind::ResourceTemplate => self.resources,
        }
    }

    /// `notifications/resources/updated` for `uri`, if this subscription follows it.
    pub fn resource_updated(&self, uri: &str) -> Option<String> {
        self.uris
            .iter()
            .any(|followed| followed == uri)
            .then(|| self.notification("notifications/resources/updated", Some(("uri", json!(uri)))))
    }

    /// Whether anything this subscription follows is still there for `principal` in
    /// `realm`: a feature the realm announces, or a resource the principal can read.
    pub fn still_honoured(&self, realm: &RealmSnapshot, principal: &Principal) -> bool {
        let announced = Announced::of(realm);
        (self.tools && announced.tools)
            || (self.prompts && announced.prompts)
            || (self.resources && announced.resources)
            || self.uris.iter().any(|uri| {
                matches!(dispatch::resolve_resource(realm, principal, ADAPTER, uri), ResourceResolution::Visible { .. })
            })
    }

    /// The graceful close: the listen request's own (complete) result.
    pub fn closed(&self) -> String {
        json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: self.id}}
        })
        .to_string()
    }

    fn notification(&self, method: &str, field: Option<(&str, Value)>) -> String {
        let mut params = Map::new();
        params.insert("_meta".into(), json!({ SUBSCRIPTION_ID: self.id }));
        if let Some((key, value)) = field {
            params.insert(key.into(), value);
        }
        json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
    }
}
