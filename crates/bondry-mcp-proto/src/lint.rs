//! MCP's load-time lint: validates `x-mcp-header` declarations and pre-renders each
//! tool's wire form and content hash, so the request path only copies bytes.

use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;

use bondry_core::canon;
use bondry_core::capability::{Annotations, CapabilityKind, Descriptor};
use bondry_core::registry::Lint;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::ADAPTER;
use crate::revision::Era;
use crate::vocabulary::REQUIRES_CLIENT_KEY;

/// `_meta` key of a tool's content hash.
pub const HASH_KEY: &str = "dev.bondry/hash";

/// The JSON type a mirrored parameter must have for its header to be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Boolean,
}

/// One `x-mcp-header` declaration: the header `Mcp-Param-{name}` mirrors the argument at `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    pub name: String,
    pub path: Vec<String>,
    pub ty: ParamType,
}

/// What the lint attaches to a tool.
#[derive(Debug)]
pub struct ToolWire {
    pub params: Vec<ParamHeader>,
    /// The `Tool` object of the modern era, rendered once.
    pub modern: Box<RawValue>,
    /// The `Tool` object of the handshake era when it differs from the modern one: an
    /// `outputSchema` whose root is not an object is left out, as those revisions allow
    /// only object roots. Kept only then, so a tool holds one rendering per era.
    handshake: Option<Box<RawValue>>,
    pub hash: String,
    /// A digest of everything the tool's list entry shows (its description and title
    /// too, which the content hash leaves out): what tells a caller's list changed.
    pub listed: String,
}

impl ToolWire {
    /// The `Tool` object as `era` lists it.
    pub fn rendered(&self, era: Era) -> &RawValue {
        match (era, &self.handshake) {
            (Era::Handshake, Some(handshake)) => handshake,
            _ => &self.modern,
        }
    }
}

/// What the lint attaches to a prompt, resource or resource template: its list entry,
/// the same in every era, rendered once, and its content hash.
#[derive(Debug)]
pub struct EntryWire {
    pub json: Box<RawValue>,
    pub hash: String,
}

/// The MCP adapter's [`Lint`].
#[derive(Debug, Default)]
pub struct McpLint;

impl Lint for McpLint {
    fn adapter(&self) -> &'static str {
        ADAPTER
    }

    fn check(&self, descriptor: &Descriptor) -> Result<Arc<dyn Any + Send + Sync>, String> {
        // Configuration and upstream naming keep them free; nothing else may take them.
        if crate::vocabulary::RESERVED_TOOL_IDS.contains(&descriptor.id.as_str()) {
            return Err(format!("{:?} is an id Bondry keeps for finding and calling tools by search", descriptor.id));
        }
        if descriptor.kind != CapabilityKind::Tool {
            return entry(descriptor).map(|wire| Arc::new(wire) as Arc<dyn Any + Send + Sync>);
        }
        tool_wire(descriptor).map(|wire| Arc::new(wire) as Arc<dyn Any + Send + Sync>)
    }
}

/// The list entries of a tool in each era, its content hash and its `Mcp-Param-*` headers.
pub(crate) fn tool_wire(descriptor: &Descriptor) -> Result<ToolWire, String> {
    let params = param_headers(&descriptor.input_schema)?;
    let annotations = annotations_json(&descriptor.annotations);
    let mut hashed = Map::new();
    hashed.insert("name".into(), json!(descriptor.id.as_str()));
    hashed.insert("inputSchema".into(), descriptor.input_schema.clone());
    if let Some(output) = &descriptor.output_schema {
        hashed.insert("outputSchema".into(), output.clone());
    }
    if let Some(annotations) = &annotations {
        hashed.insert("annotations".into(), annotations.clone());
    }
    hashed.insert("binding".into(), json!({"kind": descriptor.binding.kind, "target": descriptor.binding.target}));
    hash_source(&mut hashed, descriptor);
    let hash = format!("sha256:{}", canon::digest(&Value::Object(hashed)));

    let mut tool = Map::new();
    tool.insert("name".into(), json!(descriptor.id.as_str()));
    if let Some(title) = &descriptor.title {
        tool.insert("title".into(), json!(title));
    }
    if let Some(summary) = &descriptor.summary {
        tool.insert("description".into(), json!(summary));
    }
    tool.insert("inputSchema".into(), descriptor.input_schema.clone());
    if let Some(output) = &descriptor.output_schema {
        tool.insert("outputSchema".into(), output.clone());
    }
    if let Some(annotations) = annotations {
        tool.insert("annotations".into(), annotations);
    }
    let mut tool = completed(tool, descriptor);
    own_meta(&mut tool).insert(HASH_KEY.into(), json!(hash));
    if let Some(required) = &descriptor.requires_client {
        own_meta(&mut tool).insert(REQUIRES_CLIENT_KEY.into(), required.clone());
    }
    let modern = serde_json::value::to_raw_value(&tool).map_err(|error| error.to_string())?;
    let listed = canon::sha256_hex(modern.get().as_bytes());
    let handshake = match tool.get("outputSchema") {
        Some(schema) if schema.get("type").and_then(Value::as_str) != Some("object") => {
            tool.remove("outputSchema");
            Some(serde_json::value::to_raw_value(&tool).map_err(|error| error.to_string())?)
        }
        _ => None,
    };
    Ok(ToolWire { params, modern, handshake, hash, listed })
}

/// The list entry of a prompt, resource or resource template.
fn entry(descriptor: &Descriptor) -> Result<EntryWire, String> {
    let mut entry = Map::new();
    match descriptor.kind {
        CapabilityKind::Resource => {
            entry.insert("uri".into(), json!(descriptor.uri));
        }
        CapabilityKind::ResourceTemplate => {
            entry.insert("uriTemplate".into(), json!(descriptor.uri));
        }
        _ => {}
    }
    entry.insert("name".into(), json!(descriptor.id.as_str()));
    if let Some(title) = &descriptor.title {
        entry.insert("title".into(), json!(title));
    }
    if let Some(summary) = &descriptor.summary {
        entry.insert("description".into(), json!(summary));
    }
    if let Some(mime_type) = &descriptor.mime_type {
        entry.insert("mimeType".into(), json!(mime_type));
    }
    // A relayed prompt lists its source's arguments as written (completed below), in
    // its order and with its fields: arguments made from the schema would differ.
    if descriptor.kind == CapabilityKind::Prompt && descriptor.verbatim.is_none() {
        entry.insert("arguments".into(), Value::Array(prompt_arguments(&descriptor.input_schema)?));
    }
    let mut hashed = entry.clone();
    hashed.insert("inputSchema".into(), descriptor.input_schema.clone());
    hashed.insert("binding".into(), json!({"kind": descriptor.binding.kind, "target": descriptor.binding.target}));
    hash_source(&mut hashed, descriptor);
    let hash = format!("sha256:{}", canon::digest(&Value::Object(hashed)));
    let mut entry = completed(entry, descriptor);
    own_meta(&mut entry).insert(HASH_KEY.into(), json!(hash));
    let json = serde_json::value::to_raw_value(&entry).map_err(|error| error.to_string())?;
    Ok(EntryWire { json, hash })
}

/// Fields of a source's definition that are not the capability's content: its display
/// text and its `_meta`, which the content hash leaves out as it does Bondry's own.
const NOT_CONTENT: [&str; 3] = ["title", "description", "_meta"];

/// Adds to a content hash what the source's definition holds beyond what Bondry models.
fn hash_source(hashed: &mut Map<String, Value>, descriptor: &Descriptor) {
    let Some(source) = descriptor.verbatim.as_deref().and_then(Value::as_object) else { return };
    let content: Map<String, Value> = source
        .iter()
        .filter(|(key, _)| !NOT_CONTENT.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    hashed.insert("source".into(), Value::Object(content));
}

/// Bondry's list entry `own`, completed from the definition its source wrote
/// ([`Descriptor::verbatim`]): every field Bondry does not decide is kept as written (icons,
/// `execution`, fields of later revisions), the source's `annotations` whole (their title
/// and hints Bondry does not model), and its `_meta` but for Bondry's and the protocol's
/// own keys. What Bondry decides (the name, schemas, URI, arguments) stays its own.
fn completed(mut own: Map<String, Value>, descriptor: &Descriptor) -> Map<String, Value> {
    let Some(source) = descriptor.verbatim.as_deref().and_then(Value::as_object) else { return own };
    for (key, value) in source {
        match key.as_str() {
            "_meta" => {
                let kept =
                    value.as_object().into_iter().flatten().filter(|(key, _)| {
                        !key.starts_with("dev.bondry/") && !key.starts_with("io.modelcontextprotocol/")
                    });
                own_meta(&mut own).extend(kept.map(|(key, value)| (key.clone(), value.clone())));
            }
            "annotations" if value.is_object() => {
                own.insert(key.clone(), value.clone());
            }
            decided if own.contains_key(decided) => {}
            _ => {
                own.insert(key.clone(), value.clone());
            }
        }
    }
    own
}

/// The entry's `_meta` object, made if absent.
fn own_meta(entry: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let meta = entry.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("made an object above")
}

/// A prompt's arguments, from its input schema: every property is one (a string, as
/// prompt arguments are), required when the schema requires it.
pub fn prompt_arguments(schema: &Value) -> Result<Vec<Value>, String> {
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut arguments = Vec::new();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let declared = property.get("type");
        if declared.is_some_and(|ty| ty != "string") {
            return Err(format!("prompt argument {name:?} must be a string (prompt arguments are strings)"));
        }
        let mut argument = Map::new();
        argument.insert("name".into(), json!(name));
        for key in ["title", "description"] {
            if let Some(text) = property.get(key).and_then(Value::as_str) {
                argument.insert(key.into(), json!(text));
            }
        }
        argument.insert("required".into(), json!(required.contains(&name.as_str())));
        arguments.push(Value::Object(argument));
    }
    Ok(arguments)
}

fn annotations_json(annotations: &Annotations) -> Option<Value> {
    let mut hints = Map::new();
    for (key, value) in [
        ("readOnlyHint", annotations.read_only),
        ("destructiveHint", annotations.destructive),
        ("idempotentHint", annotations.idempotent),
        ("openWorldHint", annotations.open_world),
    ] {
        if let Some(value) = value {
            hints.insert(key.into(), Value::Bool(value));
        }
    }
    (!hints.is_empty()).then_some(Value::Object(hints))
}

const ANNOTATION: &str = "x-mcp-header";

/// Collects the `x-mcp-header` declarations of an input schema, refusing any that is not
/// a unique RFC 9110 token on a string, integer or boolean property reached only through
/// `properties`.
pub fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(schema, Some(&mut Vec::new()), "", &mut found)?;
    let mut seen = HashSet::new();
    for param in &found {
        if !seen.insert(param.name.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} is declared twice (names compare ignoring case)", param.name));
        }
    }
    Ok(found)
}

/// Visits one schema node. `path` is `Some` while the node is reached from the root only
/// through `properties`; `pointer` locates the node for error messages.
fn walk(
    node: &Value,
    path: Option<&mut Vec<String>>,
    pointer: &str,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match node {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, None, &format!("{pointer}/{index}"), found)?;
            }
            Ok(())
        }
        Value::Object(object) => {
            let mut path = path;
            if let Some(declared) = object.get(ANNOTATION) {
                let at = if pointer.is_empty() { "/" } else { pointer };
                let name = declared
                    .as_str()
                    .filter(|name| !name.is_empty() && name.bytes().all(is_tchar))
                    .ok_or_else(|| format!("x-mcp-header at {at} must be a non-empty RFC 9110 token"))?;
                let Some(path) = path.as_deref().filter(|path| !path.is_empty()) else {
                    return Err(format!("x-mcp-header at {at} is not on a property reached only through `properties`"));
                };
                let ty = match object.get("type").and_then(Value::as_str) {
                    Some("string") => ParamType::String,
                    Some("integer") => ParamType::Integer,
                    Some("boolean") => ParamType::Boolean,
                    _ => return Err(format!("x-mcp-header at {at} needs `type` string, integer or boolean")),
                };
                found.push(ParamHeader { name: name.to_owned(), path: path.clone(), ty });
            }
            for (key, child) in object {
                let child_pointer = format!("{pointer}/{}", escape(key));
                if key == "properties"
                    && let Value::Object(properties) = child
                {
                    for (name, schema) in properties {
                        let schema_pointer = format!("{child_pointer}/{}", escape(name));
                        match path.as_deref_mut() {
                            Some(path) => {
                                path.push(name.clone());
                                walk(schema, Some(path), &schema_pointer, found)?;
                                path.pop();
                            }
                            None => walk(schema, None, &schema_pointer, found)?,
                        }
                    }
                } else if key != ANNOTATION {
                    walk(child, None, &child_pointer, found)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relayed(kind: CapabilityKind, verbatim: Value) -> Descriptor {
        use bondry_core::capability::{Binding, CapabilityId};
        let binding = Binding { kind: "upstream".into(), target: "everything".into() };
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let mut descriptor = Descriptor::new(CapabilityId::new("everything.echo").unwrap(), kind, schema, binding);
        descriptor.summary = verbatim.get("description").and_then(Value::as_str).map(str::to_owned);
        descriptor.verbatim = Some(Arc::new(verbatim));
        descriptor
    }

    fn rendered_tool(descriptor: &Descriptor) -> Value {
        let wire = McpLint.check(descriptor).unwrap();
        let wire = wire.downcast_ref::<ToolWire>().unwrap();
        serde_json::from_str(wire.rendered(Era::Modern).get()).unwrap()
    }

    #[test]
    fn a_relayed_tool_is_listed_as_its_upstream_wrote_it_under_bondrys_name() {
        let upstream = json!({
            "name": "echo",
            "description": "Echoes",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "sneaky": {}}},
            "icons": [{"src": "https://example.com/echo.png", "sizes": ["48x48"]}],
            "annotations": {"title": "Echo", "readOnlyHint": true, "x-vendorHint": 1},
            "execution": {"taskSupport": "forbidden"},
            "x-later-revision": {"kept": true},
            "_meta": {"dev.bondry/hash": "forged", "io.modelcontextprotocol/x": 1, "vendor.example/k": "v"}
        });
        let tool = rendered_tool(&relayed(CapabilityKind::Tool, upstream));
        assert_eq!(tool["name"], "everything.echo", "the exposed id");
        assert_eq!(tool["description"], "Echoes");
        assert_eq!(
            tool["inputSchema"]["properties"],
            json!({"text": {"type": "string"}}),
            "the schema Bondry checks with"
        );
        assert_eq!(tool["icons"], json!([{"src": "https://example.com/echo.png", "sizes": ["48x48"]}]));
        assert_eq!(tool["annotations"], json!({"title": "Echo", "readOnlyHint": true, "x-vendorHint": 1}));
        assert_eq!(tool["execution"], json!({"taskSupport": "forbidden"}));
        assert_eq!(tool["x-later-revision"], json!({"kept": true}));
        assert_eq!(tool["_meta"]["vendor.example/k"], "v");
        assert!(tool["_meta"].get("io.modelcontextprotocol/x").is_none());
        assert!(
            tool["_meta"][HASH_KEY].as_str().unwrap().starts_with("sha256:"),
            "Bondry's own hash, not the forged one"
        );
    }

    #[test]
    fn a_relayed_prompt_lists_its_sources_arguments_as_written() {
        let arguments = json!([{"name": "zeta", "x-vendor": 1}, {"name": "alpha", "required": true}]);
        let upstream = json!({"name": "greet", "arguments": arguments});
        let wire = McpLint.check(&relayed(CapabilityKind::Prompt, upstream)).unwrap();
        let entry: Value = serde_json::from_str(wire.downcast_ref::<EntryWire>().unwrap().json.get()).unwrap();
        assert_eq!(entry["arguments"], arguments, "in the source's order, with its fields");
        let bare = McpLint.check(&relayed(CapabilityKind::Prompt, json!({"name": "greet"}))).unwrap();
        let entry: Value = serde_json::from_str(bare.downcast_ref::<EntryWire>().unwrap().json.get()).unwrap();
        assert_eq!(entry.get("arguments"), None, "none made up for a source that lists none");
    }

    #[test]
    fn a_relayed_tools_content_is_in_its_hash_and_its_text_is_not() {
        let hash = |verbatim: Value| {
            let wire = McpLint.check(&relayed(CapabilityKind::Tool, verbatim)).unwrap();
            wire.downcast_ref::<ToolWire>().unwrap().hash.clone()
        };
        let base = hash(json!({"name": "echo", "description": "one", "execution": {}}));
        assert_eq!(base, hash(json!({"name": "echo", "description": "two", "execution": {}})), "description left out");
        assert_ne!(base, hash(json!({"name": "echo", "description": "one", "execution": {"taskSupport": "optional"}})));
    }

    #[test]
    fn finds_declarations_on_nested_properties() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}}
        }});
        let params = param_headers(&schema).unwrap();
        assert_eq!(params.len(), 2);
        assert_eq!(
            params[0],
            ParamHeader { name: "Region".into(), path: vec!["region".into()], ty: ParamType::String }
        );
        assert_eq!(params[1].path, ["opts", "n"]);
    }

    #[test]
    fn refuses_invalid_declarations() {
        let refused = |schema: Value| param_headers(&schema).unwrap_err();
        assert!(
            refused(json!({"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}}))
                .contains("type")
        );
        assert!(
            refused(json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}))
                .contains("token")
        );
        assert!(
            refused(json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}}))
                .contains("token")
        );
        assert!(
            refused(json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dup"}
            }}))
            .contains("twice")
        );
        assert!(refused(json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}})).contains("/properties/a/items"));
        assert!(
            refused(
                json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]})
            )
            .contains("anyOf")
        );
        assert!(refused(json!({"type": "object", "x-mcp-header": "Root"})).contains("at /"));
    }

    #[test]
    fn a_property_named_like_the_annotation_is_not_one() {
        let schema = json!({"type": "object", "properties": {"x-mcp-header": {"type": "object"}}});
        assert_eq!(param_headers(&schema).unwrap(), []);
    }
}
