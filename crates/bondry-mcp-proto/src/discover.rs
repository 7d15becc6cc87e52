//! `server/discover`: the revisions and capabilities this endpoint offers a realm.

use bondry_core::capability::CapabilityKind;
use bondry_core::realm::RealmSnapshot;
use serde_json::{Value, json};

use crate::settings::Listener;

/// Which server features a realm announces: a feature exists when the realm has a
/// capability that needs it, or a backend promised one, whoever asks (never per principal).
#[derive(Debug, Clone, Copy)]
pub struct Announced {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
    /// Prompts and resource templates may complete their arguments.
    pub completions: bool,
}

impl Announced {
    /// Whether the realm has anything a subscription could follow.
    pub fn any(&self) -> bool {
        self.tools || self.prompts || self.resources
    }

    pub fn of(realm: &RealmSnapshot) -> Self {
        let has = |kind| realm.announces(kind);
        let templates = has(CapabilityKind::ResourceTemplate);
        Self {
            tools: has(CapabilityKind::Tool),
            prompts: has(CapabilityKind::Prompt),
            resources: has(CapabilityKind::Resource) || templates,
            completions: has(CapabilityKind::Prompt) || templates,
        }
    }
}

/// Server capabilities announced in the modern era, computed per realm, never per principal.
pub fn capabilities(realm: &RealmSnapshot) -> Value {
    let announced = Announced::of(realm);
    let mut capabilities = serde_json::Map::new();
    // Changes reach `subscriptions/listen` streams, from configuration reloads, catalogue
    // changes and handlers' publications.
    for (feature, on, value) in [
        ("tools", announced.tools, json!({"listChanged": true})),
        ("prompts", announced.prompts, json!({"listChanged": true})),
        ("resources", announced.resources, json!({"subscribe": true, "listChanged": true})),
        ("completions", announced.completions, json!({})),
    ] {
        if on {
            capabilities.insert(feature.into(), value);
        }
    }
    // Handlers' log messages reach a request that names a `logLevel`.
    capabilities.insert("logging".into(), json!({}));
    Value::Object(capabilities)
}

pub fn result(listener: &Listener, realm: &RealmSnapshot) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": listener.supported,
        "capabilities": capabilities(realm),
        "ttlMs": listener.settings.list_ttl_ms,
        "cacheScope": "private",
        "_meta": listener.server_meta(),
    })
}
