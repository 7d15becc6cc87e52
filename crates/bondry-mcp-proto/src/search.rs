//! Search listing: what a caller whose view holds tools found by searching lists instead
//! of them. `bondry.search` ranks the caller's own view; `bondry.call` calls one of its
//! tools by id, through the same checks as a direct `tools/call` (`tools.rs` answers
//! both).
//!
//! Both ids are reserved in every realm (a configured id equal to one is refused, an
//! upstream's suffixed), so a catalogue never holds them; they are listed, and answered,
//! only for a caller whose view holds at least one searched tool: for any other caller
//! they are missing like any unknown name.

use std::sync::{Arc, LazyLock};

use bondry_core::capability::{Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::realm::RealmSnapshot;
use bondry_core::schema::{CompiledSchema, SchemaBounds, Violations};
use bondry_core::search::Hit;
use bondry_core::view::View;
use serde_json::{Map, Value, json};

use crate::lint::{self, ToolWire};
use crate::vocabulary::{CALL_TOOL, SEARCH_TOOL};

/// Matches a search answers when asked for no number.
const DEFAULT_LIMIT: u64 = 5;
/// Matches a search answers at most.
pub const MAX_LIMIT: u64 = 20;

/// One of the two tools: its list entry in each era and its compiled input schema.
pub(crate) struct Reserved {
    pub(crate) id: &'static str,
    pub(crate) wire: Arc<ToolWire>,
    pub(crate) input: CompiledSchema,
}

/// Both tools, in id order, made once.
pub(crate) fn reserved() -> &'static [Reserved; 2] {
    static RESERVED_TOOLS: LazyLock<[Reserved; 2]> = LazyLock::new(|| {
        [
            made(
                CALL_TOOL,
                "Call a tool found by bondry.search",
                "Calls the tool with this id, as found by bondry.search, with these arguments (as its inputSchema says), and answers what the tool answers.",
                json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The tool's id, as bondry.search gave it."},
                        "arguments": {"type": "object", "description": "The tool's arguments, as its inputSchema says."}
                    },
                    "required": ["id"],
                    "additionalProperties": false
                }),
                None,
            ),
            made(
                SEARCH_TOOL,
                "Search the tools",
                "Finds the tools that best match what you want to do, described in a few words, best first: each with its id, title, description and inputSchema. Call one with bondry.call. Most tools here are found only this way.",
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "What you want to do, in a few words."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "How many tools to answer at most (5 when not given)."}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
                Some(json!({
                    "type": "object",
                    "properties": {
                        "tools": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "id": {"type": "string"},
                                    "title": {"type": "string"},
                                    "description": {"type": "string"},
                                    "inputSchema": {"type": "object"}
                                },
                                "required": ["id", "inputSchema"]
                            }
                        }
                    },
                    "required": ["tools"]
                })),
            ),
        ]
    });
    &RESERVED_TOOLS
}

fn made(id: &'static str, title: &str, description: &str, input: Value, output: Option<Value>) -> Reserved {
    let binding = Binding { kind: "builtin".into(), target: id.into() };
    let mut descriptor =
        Descriptor::new(CapabilityId::new(id).expect("a valid id"), CapabilityKind::Tool, input, binding);
    descriptor.title = Some(title.into());
    descriptor.summary = Some(description.into());
    descriptor.output_schema = output;
    let wire = Arc::new(lint::tool_wire(&descriptor).expect("the reserved tools pass the lint"));
    let input = CompiledSchema::compile(&descriptor.input_schema, &SchemaBounds::default()).expect("a valid schema");
    Reserved { id, wire, input }
}

/// The reserved tool `name` is, when the caller's view of tools lets it be called.
pub(crate) fn reached(view: &View, name: &str) -> Option<&'static Reserved> {
    (view.searched().count() > 0).then(|| reserved().iter().find(|tool| tool.id == name)).flatten()
}

/// The arguments `tool` was called with (`params.arguments`), checked against its input
/// schema: `Err(None)` when they are no object, `Err(Some(_))` what they break.
pub(crate) fn arguments(
    tool: &Reserved,
    params: &Map<String, Value>,
) -> Result<Map<String, Value>, Option<Violations>> {
    let arguments = match params.get("arguments") {
        None => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => return Err(None),
    };
    let arguments = Value::Object(arguments);
    tool.input.validate(&arguments).map_err(Some)?;
    match arguments {
        Value::Object(arguments) => Ok(arguments),
        _ => Err(None),
    }
}

/// `bondry.search`'s answer: the best matches for `arguments.query` among the tools found
/// by searching that `view` holds.
pub(crate) fn search(realm: &RealmSnapshot, view: &View, arguments: &Map<String, Value>) -> Value {
    let query = arguments.get("query").and_then(Value::as_str).unwrap_or_default();
    // The schema took it as an integer from 1 to 20, which `2.0` is too.
    let limit =
        arguments.get("limit").and_then(Value::as_f64).map_or(DEFAULT_LIMIT, |limit| limit as u64).min(MAX_LIMIT);
    let hits = realm.search_index().search(query, view.searched(), limit as usize);
    json!({"tools": hits.iter().map(found).collect::<Vec<_>>()})
}

/// A tool found, as `bondry.search` answers it.
fn found(hit: &Hit<'_>) -> Value {
    let descriptor = &hit.capability.descriptor;
    let mut tool = Map::new();
    tool.insert("id".into(), json!(descriptor.id.as_str()));
    if let Some(title) = &descriptor.title {
        tool.insert("title".into(), json!(title));
    }
    if let Some(description) = &descriptor.summary {
        tool.insert("description".into(), json!(description));
    }
    tool.insert("inputSchema".into(), descriptor.input_schema.clone());
    Value::Object(tool)
}

/// `bondry.call`'s request as the direct `tools/call` it stands for: `name` the id it
/// names, `arguments` the tool's own, everything else (`_meta`, `requestState`,
/// `inputResponses`) as it came.
pub(crate) fn inner_params(params: &Map<String, Value>, arguments: &Map<String, Value>) -> Map<String, Value> {
    let mut inner: Map<String, Value> = params
        .iter()
        .filter(|(key, _)| !matches!(key.as_str(), "name" | "arguments"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    inner.insert("name".into(), arguments.get("id").cloned().unwrap_or(Value::Null));
    if let Some(tool_arguments) = arguments.get("arguments") {
        inner.insert("arguments".into(), tool_arguments.clone());
    }
    inner
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::RESERVED_TOOL_IDS;

    #[test]
    fn the_reserved_ids_are_in_id_order_and_their_tools_made() {
        assert!(RESERVED_TOOL_IDS.windows(2).all(|pair| pair[0] < pair[1]));
        let made: Vec<&str> = reserved().iter().map(|tool| tool.id).collect();
        assert_eq!(made, RESERVED_TOOL_IDS);
        assert!(reserved()[1].input.validate(&json!({"query": "x", "limit": 21})).is_err());
        assert!(reserved()[1].input.validate(&json!({"query": "x", "limit": 20})).is_ok());
        assert!(reserved()[0].input.validate(&json!({"id": "a", "arguments": {}, "extra": 1})).is_err());
    }
}
