//! What a pin's hash covers (its hash form), what is served of a pinned definition, and
//! the names of the kinds pins are kept under.
//!
//! The hash itself is the catalogue's ([`bondry_catalogue::hash`]): this module holds
//! what is the pins' own, the form that names it, the migration from the older form, and
//! the `pin_ignore_meta` keys that are neither pinned nor served.

use bondry_catalogue::hash::{REQUIRES_CLIENT_KEY, definition_hash, hashed_form, strip_meta};
use bondry_core::canon;
use bondry_core::capability::CapabilityKind;
use serde_json::Value;

/// The hash form this Bondry writes: [`definition_hash`]. Form 1 hashed only six fields
/// of a resource or template and the protocol's `_meta` keys; a store's form-1 pins are
/// migrated at start. Anything that changes what `definition_hash` covers is a new form.
pub const HASH_FORM: u32 = 2;

/// The fields of a resource or template that form 1 covered.
const FORM_1_RESOURCE_FIELDS: [&str; 6] = ["uri", "uriTemplate", "name", "title", "description", "mimeType"];

/// The `_meta` key prefix form 1 left out of a tool or prompt: Bondry's own.
const FORM_1_OWN_META: &str = "dev.bondry/";

/// The hash of `entry` in form 1, which a store's older pins hold.
pub fn form_1_hash(kind: CapabilityKind, entry: &Value, ignore_meta: &[String]) -> String {
    let Some(object) = entry.as_object() else { return definition_hash(kind, entry, ignore_meta) };
    let form = match kind {
        CapabilityKind::Resource | CapabilityKind::ResourceTemplate => {
            let kept = object.iter().filter(|(field, _)| FORM_1_RESOURCE_FIELDS.contains(&field.as_str()));
            Value::Object(kept.map(|(field, value)| (field.clone(), value.clone())).collect())
        }
        CapabilityKind::Tool | CapabilityKind::Prompt => {
            let mut object = object.clone();
            strip_meta(&mut object, |key| key.starts_with(FORM_1_OWN_META) || ignore_meta.iter().any(|k| k == key));
            Value::Object(object)
        }
    };
    format!("sha256:{}", canon::digest(&form))
}

/// The fields of `entry` that form 2 covers and form 1 did not: what an operator is shown
/// of a migrated pin.
pub fn newly_covered(kind: CapabilityKind, entry: &Value) -> Vec<String> {
    let Value::Object(hashed) = hashed_form(kind, entry, &[]) else { return Vec::new() };
    match kind {
        CapabilityKind::Resource | CapabilityKind::ResourceTemplate => {
            hashed.keys().filter(|field| !FORM_1_RESOURCE_FIELDS.contains(&field.as_str())).cloned().collect()
        }
        CapabilityKind::Tool | CapabilityKind::Prompt => {
            let required = hashed.get("_meta").and_then(|meta| meta.get(REQUIRES_CLIENT_KEY)).is_some();
            required.then(|| format!("_meta.{REQUIRES_CLIENT_KEY}")).into_iter().collect()
        }
    }
}

/// What is served of `entry`: the definition with the `_meta` keys of `ignore_meta`
/// stripped (they change without changing what the entry is, so they are not pinned and
/// must not reach a caller unpinned).
pub fn served(entry: &Value, ignore_meta: &[String]) -> Value {
    let mut entry = entry.clone();
    if let Some(object) = entry.as_object_mut()
        && !ignore_meta.is_empty()
    {
        strip_meta(object, |key| ignore_meta.iter().any(|ignored| ignored == key));
    }
    entry
}

/// The name a pin's kind has in the store, the admin API and the CLI.
pub fn kind_of(kind: CapabilityKind) -> &'static str {
    match kind {
        CapabilityKind::Tool => "tool",
        CapabilityKind::Prompt => "prompt",
        CapabilityKind::Resource => "resource",
        CapabilityKind::ResourceTemplate => "template",
    }
}

/// The kind named `name` by [`kind_of`].
pub fn kind_named(name: &str) -> Option<CapabilityKind> {
    match name {
        "tool" => Some(CapabilityKind::Tool),
        "prompt" => Some(CapabilityKind::Prompt),
        "resource" => Some(CapabilityKind::Resource),
        "template" => Some(CapabilityKind::ResourceTemplate),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn form_1_covered_six_fields_of_a_resource_and_the_protocols_meta_of_a_tool() {
        let resource = json!({"uri": "test://a", "name": "a", "icons": [], "size": 3});
        let six = json!({"uri": "test://a", "name": "a"});
        assert_eq!(
            form_1_hash(CapabilityKind::Resource, &resource, &[]),
            definition_hash(CapabilityKind::Resource, &six, &[])
        );
        assert_eq!(newly_covered(CapabilityKind::Resource, &resource), ["icons"]);
        assert!(newly_covered(CapabilityKind::Resource, &six).is_empty());
        let tool = json!({"name": "t", "inputSchema": {"type": "object"}});
        assert_eq!(form_1_hash(CapabilityKind::Tool, &tool, &[]), definition_hash(CapabilityKind::Tool, &tool, &[]));
        let protocol =
            json!({"name": "t", "inputSchema": {"type": "object"}, "_meta": {"io.modelcontextprotocol/x": 1}});
        assert_ne!(
            form_1_hash(CapabilityKind::Tool, &protocol, &[]),
            definition_hash(CapabilityKind::Tool, &protocol, &[])
        );
    }

    #[test]
    fn ignored_meta_keys_are_not_served() {
        let ignore = ["com.example/etag".to_owned()];
        let entry = json!({"name": "t", "_meta": {"com.example/etag": "v1", "other": 1}});
        assert_eq!(served(&entry, &ignore), json!({"name": "t", "_meta": {"other": 1}}));
        assert_eq!(served(&json!({"name": "t", "_meta": {"com.example/etag": "v1"}}), &ignore), json!({"name": "t"}));
    }

    #[test]
    fn what_is_served_hashes_as_what_was_listed() {
        let ignore = ["com.example/etag".to_owned()];
        let entry = json!({"name": "t", "inputSchema": {"type": "object"},
                           "_meta": {"com.example/etag": "v1", "dev.bondry/x": 1, "other": 1}});
        let hash = |entry: &Value| definition_hash(CapabilityKind::Tool, entry, &ignore);
        assert_eq!(hash(&served(&entry, &ignore)), hash(&entry));
    }

    #[test]
    fn form_2_is_the_catalogues_hash_as_stores_hold_it() {
        // Stores hold these: a change to the catalogue's hash that moves them needs a new
        // `HASH_FORM` and its migration, not a new expected value here.
        assert_eq!(HASH_FORM, 2);
        let tool = json!({"name": "t", "inputSchema": {"type": "object"},
                          "_meta": {"dev.bondry/requiresClient": {"sampling": {}}, "dev.bondry/x": 1}});
        let resource = json!({"uri": "test://a", "name": "a", "size": 3, "icons": [],
                              "annotations": {"lastModified": "2026-01-01T00:00:00Z"}});
        assert_eq!(
            definition_hash(CapabilityKind::Tool, &tool, &[]),
            "sha256:a838f21997beacf536c3b29c0f49409b6b0797f1ffd6aa7b363b3cc7f12166fc"
        );
        assert_eq!(
            definition_hash(CapabilityKind::Resource, &resource, &[]),
            "sha256:8122266c9702b97402138b4832a989503aaf4e6e933481ef6e8bf58af62a0feb"
        );
    }

    #[test]
    fn the_requires_client_key_is_the_protocols() {
        assert_eq!(REQUIRES_CLIENT_KEY, bondry_mcp_proto::vocabulary::REQUIRES_CLIENT_KEY);
    }

    #[test]
    fn kind_names_round_trip() {
        for kind in
            [CapabilityKind::Tool, CapabilityKind::Prompt, CapabilityKind::Resource, CapabilityKind::ResourceTemplate]
        {
            assert_eq!(kind_named(kind_of(kind)), Some(kind));
        }
        assert_eq!(kind_named("resource_template"), None);
    }
}
