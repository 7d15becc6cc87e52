//! `server/discover`: the revisions and capabilities this endpoint offers a realm.

use bondry_core::capability::CapabilityKind;
use bondry_core::realm::RealmSnapshot;
use serde_json::{Value, json};

use crate::Adapter;

/// Whether the realm announces `tools`: only when it has any, whoever asks.
pub fn announces_tools(realm: &RealmSnapshot) -> bool {
    realm.catalogue.has_kind(CapabilityKind::Tool)
}

/// Server capabilities announced in the modern era, computed per realm, never per principal.
pub fn capabilities(realm: &RealmSnapshot) -> Value {
    let mut capabilities = serde_json::Map::new();
    if announces_tools(realm) {
        capabilities.insert("tools".into(), json!({}));
    }
    Value::Object(capabilities)
}

pub fn result(adapter: &Adapter, realm: &RealmSnapshot) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": adapter.supported,
        "capabilities": capabilities(realm),
        "ttlMs": adapter.settings.list_ttl_ms,
        "cacheScope": "private",
        "_meta": adapter.server_meta(),
    })
}
