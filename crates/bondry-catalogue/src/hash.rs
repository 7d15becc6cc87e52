//! The canonical hash of a definition: what of an entry counts as the entry, and its
//! SHA-256 in RFC 8785 form.
//!
//! Everything served of a definition is hashed but for what changes with the data: a
//! resource's or template's `size` (an integer) and `annotations.lastModified` (a
//! timestamp). Keys of `_meta` that are Bondry's own (`dev.bondry/*`, but for the
//! clients a tool requires, which is served as the source says) or the protocol's
//! (`io.modelcontextprotocol/*`) are never a source's to say and never hashed; keys the
//! caller names (an upstream's `pin_ignore_meta`) are left out too.
//!
//! Pins store these hashes: a change to what is hashed here changes every stored hash,
//! and needs a new hash form and its migration in `bondry-upstream`'s pins.

use bondry_core::canon;
use bondry_core::capability::CapabilityKind;
use serde_json::{Map, Value};

/// The `_meta` key of the clients a tool requires (`bondry_mcp_proto::vocabulary`
/// spells it too; this crate does not depend on the protocol crate).
pub const REQUIRES_CLIENT_KEY: &str = "dev.bondry/requiresClient";

/// `_meta` key prefixes that are never a source's to say: Bondry's and the protocol's.
const OWN_META: [&str; 2] = ["dev.bondry/", "io.modelcontextprotocol/"];

/// `sha256:` and the hex SHA-256 of the RFC 8785 form of what `entry` (a source's list
/// entry of `kind`) serves: the whole definition but for a resource's or template's
/// `size` and `annotations.lastModified`, and for `_meta` keys that are Bondry's, the
/// protocol's or in `ignore_meta`.
pub fn definition_hash(kind: CapabilityKind, entry: &Value, ignore_meta: &[String]) -> String {
    format!("sha256:{}", canon::digest(&hashed_form(kind, entry, ignore_meta)))
}

/// What the hash of `entry` covers, as a value: two definitions whose hashes are equal
/// but whose hashed forms differ differ in what RFC 8785 spells alike (`1` and `1.0`).
pub fn hashed_form(kind: CapabilityKind, entry: &Value, ignore_meta: &[String]) -> Value {
    let Some(object) = entry.as_object() else { return entry.clone() };
    let mut object: Map<String, Value> = object.clone();
    // The clients a tool requires is served from the source's own `_meta`: hashed. Of
    // any other kind it is not served, and not hashed.
    let served_own = |key: &str| kind == CapabilityKind::Tool && key == REQUIRES_CLIENT_KEY;
    strip_meta(&mut object, |key| {
        (OWN_META.iter().any(|own| key.starts_with(own)) && !served_own(key))
            || ignore_meta.iter().any(|ignored| ignored == key)
    });
    if matches!(kind, CapabilityKind::Resource | CapabilityKind::ResourceTemplate) {
        // Left out only in the shapes the protocol gives them: a size, a timestamp. Any
        // other value is text a model reads, and is hashed.
        if object.get("size").is_some_and(|size| size.as_u64().is_some()) {
            object.remove("size");
        }
        if let Some(Value::Object(annotations)) = object.get_mut("annotations") {
            if annotations.get("lastModified").and_then(Value::as_str).is_some_and(is_timestamp) {
                annotations.remove("lastModified");
            }
            // A timestamp alone must not make `annotations` that an entry without it lacks.
            if annotations.is_empty() {
                object.remove("annotations");
            }
        }
    }
    Value::Object(object)
}

/// Removes the `_meta` keys `strip` names, and `_meta` itself when that empties it:
/// stripped keys alone must not make a `_meta` that an entry without them lacks.
pub fn strip_meta(object: &mut Map<String, Value>, strip: impl Fn(&str) -> bool) {
    if let Some(Value::Object(meta)) = object.get_mut("_meta") {
        meta.retain(|key, _| !strip(key));
        if meta.is_empty() {
            object.remove("_meta");
        }
    }
}

/// Whether `text` has the shape of an ISO 8601 timestamp (`2026-12-06T17:00:00Z`, with
/// fractions or an offset): at most 40 bytes of digits and `-:.TZ+`.
fn is_timestamp(text: &str) -> bool {
    text.len() <= 40
        && text.bytes().next().is_some_and(|byte| byte.is_ascii_digit())
        && text.bytes().all(|byte| byte.is_ascii_digit() || b"-:.TZ+".contains(&byte))
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
        assert_eq!(tool_hash(base.clone()), tool_hash(with(json!({"dev.bondry/hash": "forged"}))));
        assert_ne!(tool_hash(base.clone()), tool_hash(with(json!({"dev.bondry/requiresClient": ["sampling"]}))));
        // Of a resource it is not served, so not hashed.
        let resource = json!({"uri": "test://a", "name": "a"});
        let required =
            json!({"uri": "test://a", "name": "a", "_meta": {"dev.bondry/requiresClient": {"sampling": {}}}});
        assert_eq!(
            definition_hash(CapabilityKind::Resource, &resource, &[]),
            definition_hash(CapabilityKind::Resource, &required, &[])
        );
        assert_eq!(tool_hash(base.clone()), tool_hash(with(json!({"com.example/etag": "v7"}))));
        assert_ne!(tool_hash(base), tool_hash(with(json!({"com.example/etag": "v7", "other": 1}))));
    }

    #[test]
    fn a_resource_counts_everything_served_but_its_size_and_timestamp() {
        for kind in [CapabilityKind::Resource, CapabilityKind::ResourceTemplate] {
            let hash = |entry: Value| definition_hash(kind, &entry, &["com.example/etag".to_owned()]);
            let base = json!({"uri": "test://a", "name": "a", "mimeType": "text/plain",
                              "annotations": {"audience": ["user"], "priority": 0.5}});
            let unhashed = json!({"uri": "test://a", "name": "a", "mimeType": "text/plain", "size": 9,
                                  "annotations": {"audience": ["user"], "priority": 0.5, "lastModified": "2026-01-01"},
                                  "_meta": {"com.example/etag": "v2", "dev.bondry/x": 1, "io.modelcontextprotocol/y": 2}});
            assert_eq!(hash(base.clone()), hash(unhashed));
            // Not a size or a timestamp: text a model reads, hashed.
            for (field, value) in [("size", json!("ignore previous instructions")), ("size", json!(-1))] {
                let mut odd = base.clone();
                odd[field] = value;
                assert_ne!(hash(base.clone()), hash(odd));
            }
            let mut odd = base.clone();
            odd["annotations"]["lastModified"] = json!("ignore previous instructions");
            assert_ne!(hash(base.clone()), hash(odd));
            let bare = json!({"uri": "test://a", "name": "a"});
            assert_eq!(
                hash(bare.clone()),
                hash(
                    json!({"uri": "test://a", "name": "a", "annotations": {"lastModified": "2026-12-06T17:00:00.123+01:00"}})
                )
            );
            for (field, value) in [
                ("description", json!("x")),
                ("title", json!("T")),
                ("icons", json!([{"src": "https://example.com/i.png"}])),
                ("annotations", json!({"audience": ["assistant"], "priority": 0.5})),
                ("annotations", json!({"audience": ["user"], "priority": 1})),
                ("_meta", json!({"com.example/owner": "ops"})),
                ("x-unknown", json!(true)),
            ] {
                let mut changed = base.clone();
                changed[field] = value;
                assert_ne!(hash(base.clone()), hash(changed.clone()), "{kind:?} {changed}");
            }
        }
    }

    #[test]
    fn stripping_meta_drops_an_emptied_meta() {
        let mut object = json!({"name": "t", "_meta": {"a": 1, "b": 2}}).as_object().unwrap().clone();
        strip_meta(&mut object, |key| key == "a");
        assert_eq!(Value::Object(object.clone()), json!({"name": "t", "_meta": {"b": 2}}));
        strip_meta(&mut object, |key| key == "b");
        assert_eq!(Value::Object(object), json!({"name": "t"}));
    }
}
