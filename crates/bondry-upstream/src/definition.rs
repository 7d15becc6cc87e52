//! An upstream's list entry as a Bondry descriptor: what the core needs to resolve,
//! validate and audit it, with the entry kept verbatim for the adapter to list as the
//! upstream wrote it. An entry Bondry cannot serve is refused with why, for the log.

use std::sync::Arc;

use bondry_core::capability::{Annotations, Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_mcp_proto::vocabulary::REQUIRES_CLIENT_KEY;
use serde_json::{Map, Value, json};

/// The binding kind of every capability an upstream serves.
pub const BINDING_KIND: &str = "upstream";

/// The upstream's own name of a list entry, and its URI or URI template if it has one:
/// what naming needs, read before anything else is checked.
pub fn identity(kind: CapabilityKind, entry: &Value) -> Result<(&str, Option<&str>), String> {
    let name = entry.get("name").and_then(Value::as_str).filter(|name| !name.is_empty());
    let name = name.ok_or("it has no name")?;
    let uri = match kind {
        CapabilityKind::Resource => Some(text(entry, "uri").ok_or("it has no uri")?),
        CapabilityKind::ResourceTemplate => Some(text(entry, "uriTemplate").ok_or("it has no uriTemplate")?),
        CapabilityKind::Tool | CapabilityKind::Prompt => None,
    };
    Ok((name, uri))
}

/// The descriptor of `entry`, an upstream's list entry of `kind`, served as `id` by the
/// upstream named `upstream`.
pub fn descriptor(kind: CapabilityKind, id: CapabilityId, upstream: &str, entry: &Value) -> Result<Descriptor, String> {
    let object = entry.as_object().ok_or("it is not an object")?;
    // Served whole, `_meta` carries Bondry's own keys beside the upstream's: it must be an
    // object to hold both.
    if object.get("_meta").is_some_and(|meta| !meta.is_object()) {
        return Err("its _meta is not an object".into());
    }
    let binding = Binding { kind: BINDING_KIND.into(), target: upstream.into() };
    let (input_schema, uri) = match kind {
        CapabilityKind::Tool => {
            let schema =
                object.get("inputSchema").filter(|schema| schema.is_object()).ok_or("it has no inputSchema")?;
            // A tool that can only run as a task has no answer to give a call.
            if entry.pointer("/execution/taskSupport").and_then(Value::as_str) == Some("required") {
                return Err("it runs only as a task, which Bondry does not relay".into());
            }
            (schema.clone(), None)
        }
        CapabilityKind::Prompt => (prompt_schema(object.get("arguments"))?, None),
        CapabilityKind::Resource | CapabilityKind::ResourceTemplate => {
            let (_, uri) = identity(kind, entry)?;
            (json!({"type": "object"}), uri.map(str::to_owned))
        }
    };
    let mut descriptor = Descriptor::new(id, kind, input_schema, binding);
    // Only its own `title`: a title made from its annotations would be served beside what
    // the upstream wrote, unpinned.
    descriptor.title = text(entry, "title").map(str::to_owned);
    descriptor.summary = text(entry, "description").map(str::to_owned);
    descriptor.uri = uri;
    descriptor.mime_type = text(entry, "mimeType").map(str::to_owned);
    if kind == CapabilityKind::Tool {
        descriptor.output_schema = object.get("outputSchema").cloned();
        descriptor.annotations = annotations(object.get("annotations"));
        descriptor.requires_client =
            entry.pointer(&format!("/_meta/{}", REQUIRES_CLIENT_KEY.replace('/', "~1"))).cloned();
    }
    descriptor.verbatim = Some(Arc::new(entry.clone()));
    Ok(descriptor)
}

fn text<'a>(entry: &'a Value, key: &str) -> Option<&'a str> {
    entry.get(key).and_then(Value::as_str)
}

/// A prompt's arguments as the input schema Bondry checks them with: each a string
/// property, required as the upstream says.
fn prompt_schema(arguments: Option<&Value>) -> Result<Value, String> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for argument in arguments.and_then(Value::as_array).into_iter().flatten() {
        let name = argument.get("name").and_then(Value::as_str).ok_or("an argument has no name")?;
        let mut property = Map::from_iter([("type".to_owned(), json!("string"))]);
        for key in ["title", "description"] {
            if let Some(text) = argument.get(key).and_then(Value::as_str) {
                property.insert(key.to_owned(), json!(text));
            }
        }
        if properties.insert(name.to_owned(), Value::Object(property)).is_some() {
            return Err(format!("the argument {name:?} is listed twice"));
        }
        if argument.get("required").and_then(Value::as_bool) == Some(true) {
            required.push(json!(name));
        }
    }
    Ok(json!({"type": "object", "properties": properties, "required": required}))
}

fn annotations(annotations: Option<&Value>) -> Annotations {
    let hint = |key: &str| annotations.and_then(|hints| hints.get(key)).and_then(Value::as_bool);
    Annotations {
        read_only: hint("readOnlyHint"),
        destructive: hint("destructiveHint"),
        idempotent: hint("idempotentHint"),
        open_world: hint("openWorldHint"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> CapabilityId {
        CapabilityId::new(text).unwrap()
    }

    #[test]
    fn a_tool_keeps_its_upstreams_definition() {
        let entry = json!({
            "name": "echo",
            "description": "Echoes back",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"title": "Echo", "readOnlyHint": true},
            "icons": [{"src": "https://example.com/i.png"}],
            "_meta": {REQUIRES_CLIENT_KEY: {"sampling": {}}}
        });
        let descriptor = descriptor(CapabilityKind::Tool, id("everything.echo"), "everything", &entry).unwrap();
        assert_eq!(descriptor.title, None, "the annotations' title is served in the annotations only");
        assert_eq!(descriptor.summary.as_deref(), Some("Echoes back"));
        assert_eq!(descriptor.input_schema, entry["inputSchema"]);
        assert_eq!(descriptor.output_schema, Some(json!({"type": "object"})));
        assert_eq!(descriptor.annotations.read_only, Some(true));
        assert_eq!(descriptor.requires_client, Some(json!({"sampling": {}})));
        assert_eq!(descriptor.binding, Binding { kind: "upstream".into(), target: "everything".into() });
        assert_eq!(descriptor.verbatim.as_deref(), Some(&entry));
    }

    #[test]
    fn a_prompts_arguments_become_its_input_schema() {
        let entry = json!({"name": "greet", "arguments": [
            {"name": "who", "description": "Whom", "required": true},
            {"name": "tone"}
        ]});
        let descriptor = descriptor(CapabilityKind::Prompt, id("p.greet"), "p", &entry).unwrap();
        assert_eq!(
            descriptor.input_schema,
            json!({"type": "object", "properties": {"who": {"type": "string", "description": "Whom"}, "tone": {"type": "string"}},
                   "required": ["who"]})
        );
    }

    #[test]
    fn resources_keep_their_uris() {
        let entry = json!({"name": "readme", "uri": "file:///readme.md", "mimeType": "text/markdown"});
        let resource = descriptor(CapabilityKind::Resource, id("fs.readme"), "fs", &entry).unwrap();
        assert_eq!(
            (resource.uri.as_deref(), resource.mime_type.as_deref()),
            (Some("file:///readme.md"), Some("text/markdown"))
        );
        let entry = json!({"name": "file", "uriTemplate": "file:///{path}"});
        let template = descriptor(CapabilityKind::ResourceTemplate, id("fs.file"), "fs", &entry).unwrap();
        assert_eq!(template.uri.as_deref(), Some("file:///{path}"));
    }

    #[test]
    fn what_bondry_cannot_serve_is_refused_with_why() {
        let refused = |kind, entry: Value| descriptor(kind, id("u.x"), "u", &entry).unwrap_err();
        assert_eq!(refused(CapabilityKind::Tool, json!({"name": "x"})), "it has no inputSchema");
        assert_eq!(
            refused(
                CapabilityKind::Tool,
                json!({"name": "x", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}})
            ),
            "it runs only as a task, which Bondry does not relay"
        );
        assert_eq!(refused(CapabilityKind::Resource, json!({"name": "x"})), "it has no uri");
        assert_eq!(
            refused(CapabilityKind::Prompt, json!({"name": "x", "arguments": [{"name": "a"}, {"name": "a"}]})),
            "the argument \"a\" is listed twice"
        );
        assert_eq!(
            refused(CapabilityKind::Tool, json!({"name": "x", "inputSchema": {"type": "object"}, "_meta": 1})),
            "its _meta is not an object"
        );
        assert_eq!(identity(CapabilityKind::Tool, &json!({"name": ""})).unwrap_err(), "it has no name");
    }
}
