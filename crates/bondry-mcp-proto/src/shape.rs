//! Shaping the core's neutral answers into MCP wire JSON.

use bondry_core::handler::{ContentBlock, ResourceBody, ResourceContents};
use serde_json::{Map, Value, json};

/// The wire form of one content block.
pub fn content_block(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
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
    json!({"type": "text", "text": value.to_string()})
}
