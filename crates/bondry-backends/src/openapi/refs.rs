//! A document's `$ref`s: only JSON pointers into the same document (`#/…`) are followed.
//! A reference to another file, a relative one or a URL would make Bondry read what the
//! operator never configured; each is refused by name, as is one that points nowhere.

use std::fmt;

use serde_json::Value;

/// Why a `$ref` is not followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefError {
    /// The reference as written.
    pub reference: String,
    /// Where it is written, as a JSON pointer into the document.
    pub at: String,
    pub why: &'static str,
}

impl fmt::Display for RefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `#` before the pointer, so that the root reads `#`.
        write!(f, "$ref {:?} at #{}: {}", self.reference, self.at, self.why)
    }
}

impl std::error::Error for RefError {}

const NOT_LOCAL: &str = "only references into the same document (\"#/...\") are followed";
const DANGLING: &str = "it points to nothing in the document";

/// Members whose values are data, never schema or OpenAPI objects: a `$ref` inside them
/// is text, not a reference.
const DATA: [&str; 4] = ["example", "default", "enum", "const"];

/// The value `reference` points to in `document`.
pub fn resolve<'a>(document: &'a Value, reference: &str) -> Result<&'a Value, &'static str> {
    let pointer = reference.strip_prefix('#').filter(|rest| rest.is_empty() || rest.starts_with('/'));
    let pointer = pointer.ok_or(NOT_LOCAL)?;
    let mut here = document;
    for token in pointer.split('/').skip(1) {
        let token = decode(token).ok_or("it is not a valid JSON pointer")?;
        here = match here {
            Value::Object(members) => members.get(&token),
            Value::Array(items) => token.parse::<usize>().ok().and_then(|index| items.get(index)),
            _ => None,
        }
        .ok_or(DANGLING)?;
    }
    Ok(here)
}

/// Checks every `$ref` of `document`: each must point into it; the first that does not
/// is the error. Walks with a stack of its own (a document's depth is bounded when read,
/// but not by this function's callers), each entry naming only its parent and its own
/// step: where a `$ref` stands is spelt out only for the one refused.
pub fn check(document: &Value) -> Result<(), RefError> {
    // (value, index of its parent's entry, its step from the parent)
    let mut walked: Vec<(&Value, usize, Step<'_>)> = Vec::new();
    let mut pending: Vec<(&Value, usize, Step<'_>)> = vec![(document, usize::MAX, Step::Root)];
    // Only objects and arrays are walked: a scalar holds no `$ref`.
    let nested = |value: &&Value| matches!(value, Value::Object(_) | Value::Array(_));
    while let Some(entry) = pending.pop() {
        let (value, ..) = entry;
        let here = walked.len();
        walked.push(entry);
        match value {
            Value::Object(members) => {
                if let Some(Value::String(reference)) = members.get("$ref") {
                    resolve(document, reference).map_err(|why| RefError {
                        reference: reference.clone(),
                        at: pointer(&walked, here),
                        why,
                    })?;
                }
                // A response named `default` is an OpenAPI object, not data.
                let in_responses = matches!(walked[here].2, Step::Member("responses"));
                for (name, member) in members.iter().rev() {
                    if nested(&member) && (!DATA.contains(&name.as_str()) || (in_responses && name == "default")) {
                        pending.push((member, here, Step::Member(name)));
                    }
                }
            }
            Value::Array(items) => {
                let items = items.iter().enumerate().rev().filter(|(_, item)| nested(item));
                pending.extend(items.map(|(index, item)| (item, here, Step::Item(index))));
            }
            _ => {}
        }
    }
    Ok(())
}

/// One step down a document.
#[derive(Clone, Copy)]
enum Step<'a> {
    Root,
    Member(&'a str),
    Item(usize),
}

/// The JSON pointer of the walked entry `at`, from its steps back to the root.
fn pointer(walked: &[(&Value, usize, Step<'_>)], mut at: usize) -> String {
    let mut steps = Vec::new();
    while let Some((_, parent, step)) = walked.get(at) {
        match step {
            Step::Root => break,
            Step::Member(name) => steps.push(escape(name)),
            Step::Item(index) => steps.push(index.to_string()),
        }
        at = *parent;
    }
    steps.iter().rev().map(|step| format!("/{step}")).collect()
}

/// A pointer token as written in a URI fragment: percent-decoded, then `~1` and `~0`.
pub(crate) fn decode(token: &str) -> Option<String> {
    let text = percent_encoding::percent_decode_str(token).decode_utf8().ok()?;
    if text.replace("~0", "").replace("~1", "").contains('~') {
        return None;
    }
    Some(text.replace("~1", "/").replace("~0", "~"))
}

/// A member name as a pointer token.
pub(crate) fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn document() -> Value {
        json!({
            "paths": {"/pets/{id}": {"get": {"responses": {"200": {"$ref": "#/components/responses/Pet"}}}}},
            "components": {
                "responses": {"Pet": {"description": "a pet"}},
                "schemas": {"a/b~c": {"type": "string"}, "Tree": {"items": {"$ref": "#/components/schemas/Tree"}}}
            },
            "tags": [{"name": "x"}]
        })
    }

    #[test]
    fn same_document_pointers_resolve_with_their_escapes() {
        let document = document();
        assert_eq!(resolve(&document, "#/components/responses/Pet").unwrap(), &json!({"description": "a pet"}));
        assert_eq!(resolve(&document, "#/components/schemas/a~1b~0c").unwrap(), &json!({"type": "string"}));
        assert_eq!(
            resolve(&document, "#/paths/~1pets~1%7Bid%7D/get/responses/200/$ref").unwrap(),
            &json!("#/components/responses/Pet")
        );
        assert_eq!(resolve(&document, "#/tags/0/name").unwrap(), &json!("x"));
        assert_eq!(resolve(&document, "#").unwrap(), &document);
        assert_eq!(resolve(&document, "#/components/schemas/Nope"), Err(DANGLING));
        assert_eq!(resolve(&document, "#/tags/1"), Err(DANGLING));
        assert_eq!(resolve(&document, "#/components/schemas/a~2b"), Err("it is not a valid JSON pointer"));
        assert_eq!(check(&document), Ok(()), "a cycle is a reference like another");
    }

    #[test]
    fn references_to_other_files_or_urls_are_refused_by_name_and_place() {
        for reference in
            ["pets.yaml#/Pet", "./pets.yaml", "file:///etc/passwd", "https://example.com/s.json#/a", "#components"]
        {
            let mut document = document();
            document["paths"]["/pets/{id}"]["get"]["responses"]["200"]["$ref"] = json!(reference);
            let error = check(&document).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "$ref {reference:?} at #/paths/~1pets~1{{id}}/get/responses/200: only references into the same document (\"#/...\") are followed"
                )
            );
        }
        let mut document = document();
        document["components"]["schemas"]["Tree"]["items"]["$ref"] = json!("#/components/schemas/Forest");
        assert_eq!(
            check(&document).unwrap_err().to_string(),
            "$ref \"#/components/schemas/Forest\" at #/components/schemas/Tree/items: it points to nothing in the document"
        );
    }

    #[test]
    fn a_ref_inside_data_is_text() {
        let mut document = document();
        document["paths"]["/pets/{id}"]["get"]["responses"]["default"] = json!({"$ref": "https://example.com/r"});
        assert_eq!(
            check(&document).unwrap_err().at,
            "/paths/~1pets~1{id}/get/responses/default",
            "a response named default is no data"
        );
        let mut document = self::document();
        document["components"]["schemas"]["Tree"]["example"] = json!({"$ref": "https://example.com"});
        document["components"]["schemas"]["Tree"]["enum"] = json!([{"$ref": "elsewhere"}]);
        assert_eq!(check(&document), Ok(()));
    }
}
