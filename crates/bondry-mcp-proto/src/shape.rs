//! Shaping the core's neutral answers into MCP wire JSON.

use bondry_core::compact;
use bondry_core::handler::{ContentBlock, ResourceBody, ResourceContents};
use serde_json::{Map, Value, json};

/// The wire form of one content block.
pub fn content_block(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text } => text_block(text.clone()),
        ContentBlock::Image { data, mime_type } => json!({"type": "image", "data": data, "mimeType": mime_type}),
        ContentBlock::Audio { data, mime_type } => json!({"type": "audio", "data": data, "mimeType": mime_type}),
        ContentBlock::Resource(contents) => json!({"type": "resource", "resource": resource_contents(contents)}),
        ContentBlock::ResourceLink { uri, name, mime_type, description } => {
            let mut link = Map::new();
            link.insert("type".into(), json!("resource_link"));
            link.insert("uri".into(), json!(uri));
            link.insert("name".into(), json!(name));
            if let Some(mime_type) = mime_type {
                link.insert("mimeType".into(), json!(mime_type));
            }
            if let Some(description) = description {
                link.insert("description".into(), json!(description));
            }
            Value::Object(link)
        }
    }
}

/// The wire form of a resource's contents.
pub fn resource_contents(contents: &ResourceContents) -> Value {
    let mut object = Map::new();
    object.insert("uri".into(), json!(contents.uri));
    if let Some(mime_type) = &contents.mime_type {
        object.insert("mimeType".into(), json!(mime_type));
    }
    match &contents.body {
        ResourceBody::Text(text) => object.insert("text".into(), json!(text)),
        ResourceBody::Blob(blob) => object.insert("blob".into(), json!(blob)),
    };
    Value::Object(object)
}

/// A text block holding the compact JSON of `value`.
pub fn json_text(value: &Value) -> Value {
    text_block(compact::to_string(value))
}

/// A text block holding `text`, moved in (`json!` would copy it once more).
fn text_block(text: String) -> Value {
    Value::Object(Map::from_iter([("type".to_owned(), Value::from("text")), ("text".to_owned(), Value::String(text))]))
}

/// Top-level result keys that are Bondry's to set for its caller, never an upstream's.
const OWN_RESULT_KEYS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// Whether a `_meta` key of an upstream's result is Bondry's own namespace or the
/// protocol's, which Bondry sets for its caller.
fn own_meta_key(key: &str) -> bool {
    key.starts_with("dev.bondry/") || key.starts_with("io.modelcontextprotocol/")
}

/// A relayed result, passed through: `result` as the upstream answered it, holding the
/// array `items` its kind must have (`content`, `messages`, `contents`), with the keys
/// that are Bondry's own replaced: `resultType`, `ttlMs`, `cacheScope` and the
/// `dev.bondry/*` and `io.modelcontextprotocol/*` keys of `_meta` are dropped, and
/// Bondry's `meta` (its own keys for this caller) added. `None` when the result is not
/// such an object. The caller's era then adds what it requires, like for any result.
pub fn relayed(result: Value, items: &str, meta: &Map<String, Value>) -> Option<Map<String, Value>> {
    let Value::Object(mut passed) = result else { return None };
    if !passed.get(items).is_some_and(Value::is_array) {
        return None;
    }
    let theirs = passed.shift_remove("_meta");
    passed.retain(|key, _| !OWN_RESULT_KEYS.contains(&key.as_str()));
    let mut merged: Map<String, Value> = match theirs {
        Some(Value::Object(mut theirs)) => {
            theirs.retain(|key, _| !own_meta_key(key));
            theirs
        }
        _ => Map::new(),
    };
    merged.extend(meta.iter().map(|(key, value)| (key.clone(), value.clone())));
    if !merged.is_empty() {
        passed.insert("_meta".into(), Value::Object(merged));
    }
    Some(passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relayed_result_keeps_all_but_bondrys_own_keys() {
        let upstream = json!({
            "content": [{"type": "text", "text": "hi", "annotations": {"audience": ["user"]}}],
            "structuredContent": {"n": 1},
            "x-unknown": true,
            "resultType": "complete",
            "ttlMs": 5,
            "cacheScope": "public",
            "_meta": {
                "dev.bondry/invocationId": "forged",
                "io.modelcontextprotocol/serverInfo": {"name": "upstream"},
                "vendor.example/trace": "t-1"
            }
        });
        let meta = Map::from_iter([("dev.bondry/invocationId".to_owned(), json!("real"))]);
        let passed = relayed(upstream, "content", &meta).unwrap();
        assert_eq!(
            Value::Object(passed),
            json!({
                "content": [{"type": "text", "text": "hi", "annotations": {"audience": ["user"]}}],
                "structuredContent": {"n": 1},
                "x-unknown": true,
                "_meta": {"vendor.example/trace": "t-1", "dev.bondry/invocationId": "real"}
            })
        );
    }

    #[test]
    fn a_relayed_result_without_its_kinds_items_is_refused() {
        let none = Map::new();
        assert!(relayed(json!({"messages": []}), "content", &none).is_none());
        assert!(relayed(json!({"content": "text"}), "content", &none).is_none());
        assert!(relayed(json!([1]), "content", &none).is_none());
        let bare = relayed(json!({"contents": [], "_meta": {"dev.bondry/x": 1}}), "contents", &none).unwrap();
        assert_eq!(Value::Object(bare), json!({"contents": []}), "an emptied _meta is left out");
    }
}
