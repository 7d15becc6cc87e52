//! What a pin's hash covers, and the names of the kinds pins are kept under.

use bondry_core::canon;
use bondry_core::capability::CapabilityKind;
use serde_json::{Map, Value};

/// The fields of a resource or template that the hash covers: its size and timestamps
/// change with the data, not with what it tells a model.
const RESOURCE_FIELDS: [&str; 6] = ["uri", "uriTemplate", "name", "title", "description", "mimeType"];

/// The `_meta` keys that are Bondry's own, never an upstream's to pin.
const BONDRY_META: &str = "dev.bondry/";

/// `sha256:` and the hex SHA-256 of the RFC 8785 form of what `entry` (an upstream's
/// list entry of `kind`) tells a model: for a tool or prompt the whole definition, its
/// `_meta` included except Bondry's keys and `ignore_meta`; for a resource or template
/// only its URI (or URI template), name, title, description and MIME type.
pub fn definition_hash(kind: CapabilityKind, entry: &Value, ignore_meta: &[String]) -> String {
    format!("sha256:{}", canon::digest(&hashed(kind, entry, ignore_meta)))
}

fn hashed(kind: CapabilityKind, entry: &Value, ignore_meta: &[String]) -> Value {
    let Some(object) = entry.as_object() else { return entry.clone() };
    match kind {
        CapabilityKind::Resource | CapabilityKind::ResourceTemplate => {
            let kept = object.iter().filter(|(field, _)| RESOURCE_FIELDS.contains(&field.as_str()));
            Value::Object(kept.map(|(field, value)| (field.clone(), value.clone())).collect())
        }
        CapabilityKind::Tool | CapabilityKind::Prompt => {
            let mut object: Map<String, Value> = object.clone();
            if let Some(Value::Object(meta)) = object.get_mut("_meta") {
                meta.retain(|key, _| {
                    !key.starts_with(BONDRY_META) && !ignore_meta.iter().any(|ignored| ignored == key)
                });
                // Bondry's keys alone must not make a `_meta` that an upstream without them lacks.
                if meta.is_empty() {
                    object.remove("_meta");
                }
            }
            Value::Object(object)
        }
    }
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

    fn tool_hash(entry: Value) -> String {
        definition_hash(CapabilityKind::Tool, &entry, &["com.example/etag".to_owned()])
    }

    #[test]
    fn every_field_of_a_tool_counts_but_key_order_does_not() {
        let base = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}});
        let reordered = json!({"inputSchema": {"type": "object"}, "description": "d", "name": "t"});
        assert_eq!(tool_hash(base.clone()), tool_hash(reordered));
        for changed in [
            json!({"name": "t", "description": "e", "inputSchema": {"type": "object"}}),
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "required": ["x"]}}),
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "title": "T"}),
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}),
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}),
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "_meta": {"x": 1}}),
        ] {
            assert_ne!(tool_hash(base.clone()), tool_hash(changed.clone()), "{changed}");
        }
        assert!(tool_hash(base).starts_with("sha256:"));
    }

    #[test]
    fn bondry_meta_keys_and_ignored_ones_do_not_count() {
        let base = json!({"name": "t", "inputSchema": {"type": "object"}});
        let with = |meta: Value| json!({"name": "t", "inputSchema": {"type": "object"}, "_meta": meta});
        assert_eq!(tool_hash(base.clone()), tool_hash(with(json!({"dev.bondry/requiresClient": ["sampling"]}))));
        assert_eq!(tool_hash(base.clone()), tool_hash(with(json!({"com.example/etag": "v7"}))));
        assert_ne!(tool_hash(base), tool_hash(with(json!({"com.example/etag": "v7", "other": 1}))));
    }

    #[test]
    fn a_resource_counts_only_what_tells_a_model_what_it_is() {
        let hash = |entry: Value| definition_hash(CapabilityKind::Resource, &entry, &[]);
        let base = json!({"uri": "test://a", "name": "a", "mimeType": "text/plain"});
        assert_eq!(
            hash(base.clone()),
            hash(json!({"uri": "test://a", "name": "a", "mimeType": "text/plain", "size": 9}))
        );
        assert_ne!(
            hash(base),
            hash(json!({"uri": "test://a", "name": "a", "mimeType": "text/plain", "description": "x"}))
        );
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
