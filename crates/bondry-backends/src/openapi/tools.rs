//! A mapped document's operations as the realm's tools: each named by the naming rule
//! (`prefix.name`, every byte outside the id alphabet `_`, a long or clashing id cut and
//! hash-suffixed), described from its summary and description, bound to
//! `{kind: "openapi", target: "<entry> <METHOD> <path>"}`, and held to the schema bounds:
//! an input schema over them leaves the operation out, an output schema over them is
//! dropped.

use bondry_catalogue::naming::{Names, Owner};
use bondry_core::capability::{Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::schema::{CompiledSchema, SchemaBounds};

use super::call::KIND;
use super::mapping::{Mapped, Operation, Skipped};

/// The longest description a tool is given, in bytes; a longer one is cut.
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;

/// One operation as a tool.
#[derive(Debug)]
pub struct Tool {
    pub descriptor: Descriptor,
    /// The operation, what its handler sends by; its schemas are the descriptor's.
    pub operation: Operation,
}

/// An entry's tools, and the operations left out.
#[derive(Debug)]
pub struct Tools {
    pub tools: Vec<Tool>,
    pub skipped: Vec<Skipped>,
}

/// The tools of `mapped`, the document of the entry `entry`, named under `prefix` among
/// the ids `names` holds.
pub fn tools(entry: &str, prefix: &str, mapped: Mapped, names: &mut Names, bounds: &SchemaBounds) -> Tools {
    let mut tools = Vec::new();
    let mut skipped = mapped.skipped;
    for mut operation in mapped.operations {
        let target = format!("{entry} {} {}", operation.method, operation.path);
        let label = format!("{} {} ({})", operation.method, operation.path, operation.name);
        let skip = |why: String| Skipped { operation: label.clone(), why };
        if let Err(error) = CompiledSchema::compile(&operation.input_schema, bounds) {
            skipped.push(skip(format!("its input schema cannot be served: {error}")));
            continue;
        }
        // Compiled here only to be checked: the catalogue compiles the one it serves, and
        // hands it to the handler with each call.
        if let Some(Err(error)) = operation.output_schema.as_ref().map(|schema| CompiledSchema::compile(schema, bounds))
        {
            operation.left_out.push(format!("its output schema: {error}"));
            operation.output_schema = None;
        }
        let owner = Owner { upstream: entry.to_owned(), kind: CapabilityKind::Tool, key: target.clone() };
        let Some(id) = names.claim_id(&owner, prefix, &operation.name, None) else {
            skipped.push(skip("its id is taken by another capability, and so is its hash-suffixed one".into()));
            continue;
        };
        let id = match CapabilityId::new(&id) {
            Ok(id) => id,
            Err(error) => {
                skipped.push(skip(format!("its id {id:?} is not one: {error}")));
                continue;
            }
        };
        let binding = Binding { kind: KIND.as_str().to_owned(), target };
        // The schemas move to the descriptor: the handler needs neither, and a large
        // document's are most of what it holds.
        let input_schema = std::mem::take(&mut operation.input_schema);
        let mut descriptor = Descriptor::new(id, CapabilityKind::Tool, input_schema, binding);
        descriptor.title = operation.summary.clone();
        descriptor.summary = description(&mut operation);
        descriptor.output_schema = operation.output_schema.take();
        descriptor.annotations = operation.annotations.clone();
        tools.push(Tool { descriptor, operation });
    }
    Tools { tools, skipped }
}

/// The summary and the description, a blank line between; cut at
/// [`MAX_DESCRIPTION_BYTES`] (noted in what was left out).
fn description(operation: &mut Operation) -> Option<String> {
    let parts: Vec<&str> =
        [&operation.summary, &operation.description].into_iter().flatten().map(String::as_str).collect();
    if parts.is_empty() {
        return None;
    }
    let mut text = parts.join("\n\n");
    if text.len() > MAX_DESCRIPTION_BYTES {
        let mut end = MAX_DESCRIPTION_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
        operation.left_out.push(format!("its description past {MAX_DESCRIPTION_BYTES} bytes"));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::openapi::mapping::{self, Options};

    fn mapped(operations: Value) -> Mapped {
        mapping::map(&json!({"openapi": "3.1.0", "paths": operations}), &Options::default()).unwrap()
    }

    #[test]
    fn operations_are_named_described_and_bound() {
        let paths = json!({
            "/pets/{id}": {"get": {
                "operationId": "get pet",
                "summary": "One pet",
                "description": "By its id.",
                "parameters": [{"name": "id", "in": "path", "required": true}],
                "responses": {}
            }},
            "/pets": {"post": {"summary": "Add", "responses": {}}}
        });
        let mut names = Names::of_realm(["pets.get_pet"], []);
        let made = tools("petstore", "pets", mapped(paths), &mut names, &SchemaBounds::default());
        assert!(made.skipped.is_empty());
        let [get, post] = &made.tools[..] else { panic!("two tools") };
        assert!(
            get.descriptor.id.as_str().starts_with("pets.get_pet-"),
            "a clash is suffixed: {}",
            get.descriptor.id.as_str()
        );
        assert_eq!(get.descriptor.title.as_deref(), Some("One pet"));
        assert_eq!(get.descriptor.summary.as_deref(), Some("One pet\n\nBy its id."));
        assert_eq!(
            get.descriptor.binding,
            Binding { kind: "openapi".into(), target: "petstore GET /pets/{id}".into() }
        );
        assert_eq!(get.descriptor.annotations.read_only, Some(true));
        assert_eq!(post.descriptor.id.as_str(), "pets.post__pets");
    }

    #[test]
    fn schemas_past_the_bounds_and_long_descriptions_are_held_back() {
        let deep = (0..40).fold(json!({"type": "string"}), |inner, _| json!({"type": "array", "items": inner}));
        let paths = json!({
            "/deep": {"post": {"operationId": "deep", "parameters": [{"name": "q", "in": "query", "schema": deep}], "responses": {}}},
            "/long": {"get": {
                "operationId": "long",
                "description": "é".repeat(MAX_DESCRIPTION_BYTES),
                "responses": {"200": {"content": {"application/json": {"schema": {"type": "object", "properties": {"a": deep}}}}}}
            }}
        });
        let made = tools("api", "api", mapped(paths), &mut Names::default(), &SchemaBounds::default());
        assert_eq!(made.skipped.len(), 1);
        assert_eq!(made.skipped[0].operation, "POST /deep (deep)");
        assert!(made.skipped[0].why.starts_with("its input schema cannot be served: "), "{}", made.skipped[0].why);
        let long = &made.tools[0];
        let summary = long.descriptor.summary.as_deref().unwrap();
        assert!(summary.len() <= MAX_DESCRIPTION_BYTES + 3 && summary.ends_with('…'));
        assert_eq!(long.descriptor.output_schema.as_ref(), None);
        assert_eq!(long.operation.left_out.len(), 2, "{:?}", long.operation.left_out);
    }
}
