//! An OpenAPI schema as a JSON Schema 2020-12 one, the dialect of tools' schemas.
//!
//! OpenAPI 3.1's schemas are 2020-12 already but for its own annotations; 3.0's are an
//! older dialect of their own. Both are rewritten:
//!
//! | OpenAPI | 2020-12 |
//! |---|---|
//! | `$ref: "#/components/schemas/X"` | `$ref: "#/$defs/X"`, `X` copied into `$defs` once |
//! | 3.0: `nullable: true` | `"null"` added to `type` (or to `enum`), else `anyOf` with `{"type": "null"}` |
//! | 3.0: `exclusiveMinimum: true` beside `minimum: n` | `exclusiveMinimum: n` (and the same for maximum) |
//! | 3.0: siblings of `$ref` | dropped, as 3.0 ignores them |
//! | `example: v` | `examples: [v]` |
//! | `discriminator`, `xml`, `externalDocs` | dropped |
//!
//! References between schemas stay references, so a recursive schema keeps its cycle and
//! no schema is copied more than once. Any other `$ref` in a schema is refused.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::refs;

/// Which dialect a document's schemas are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAPI 3.0.x.
    OpenApi30,
    /// OpenAPI 3.1.x: JSON Schema 2020-12 with OpenAPI's annotations.
    OpenApi31,
}

/// Where a document keeps its shared schemas.
const COMPONENTS: &str = "#/components/schemas/";
/// Where a tool's schema keeps them.
const DEFS: &str = "#/$defs/";

/// OpenAPI's own annotations, which say nothing a tool's caller can check.
const DROPPED: [&str; 3] = ["discriminator", "xml", "externalDocs"];

/// Converts schemas of one document into one tool's schema, gathering the shared schemas
/// they refer to.
pub struct Converter<'a> {
    document: &'a Value,
    dialect: Dialect,
    /// The shared schemas referred to so far, by name.
    referred: BTreeSet<String>,
}

impl<'a> Converter<'a> {
    pub fn new(document: &'a Value, dialect: Dialect) -> Self {
        Self { document, dialect, referred: BTreeSet::new() }
    }

    /// `schema` in 2020-12; the shared schemas it refers to are gathered for [`Self::defs`].
    pub fn convert(&mut self, schema: &Value) -> Result<Value, String> {
        match schema {
            Value::Object(members) => self.object(members),
            // `true` and `false` are schemas in 2020-12 (and in 3.1).
            Value::Bool(_) => Ok(schema.clone()),
            other => {
                let shown = other.to_string();
                let shown: String = shown.chars().take(64).collect();
                Err(format!("a schema must be an object, not {shown}"))
            }
        }
    }

    /// The shared schemas every converted schema referred to, each converted once, as a
    /// `$defs` member; `None` when none was referred to.
    pub fn defs(mut self) -> Result<Option<Value>, String> {
        let mut defs = Map::new();
        let mut done = BTreeSet::new();
        // Converting a shared schema can refer to more: until none is left undone.
        while let Some(name) = self.referred.pop_first() {
            if !done.insert(name.clone()) {
                continue;
            }
            let reference = format!("{COMPONENTS}{}", refs::escape(&name));
            let schema =
                refs::resolve(self.document, &reference).map_err(|why| format!("$ref {reference:?}: {why}"))?;
            let converted = self.convert(schema)?;
            defs.insert(name, converted);
        }
        Ok((!defs.is_empty()).then_some(Value::Object(defs)))
    }

    fn object(&mut self, members: &Map<String, Value>) -> Result<Value, String> {
        if let Some(reference) = members.get("$ref") {
            let reference = reference.as_str().ok_or("a $ref must be a string")?;
            let name = reference
                .strip_prefix(COMPONENTS)
                .filter(|name| !name.contains('/'))
                .and_then(refs::decode)
                .ok_or_else(|| format!("$ref {reference:?}: a schema may refer only to {COMPONENTS}<name>"))?;
            let pointer = format!("{DEFS}{}", refs::escape(&name));
            self.referred.insert(name);
            if self.dialect == Dialect::OpenApi30 {
                return Ok(json!({"$ref": pointer}));
            }
            let mut converted = self.members(members)?;
            converted.insert("$ref".into(), Value::String(pointer));
            return Ok(Value::Object(converted));
        }
        let mut converted = self.members(members)?;
        if self.dialect == Dialect::OpenApi30 {
            exclusive_bounds(&mut converted);
            if converted.remove("nullable") == Some(Value::Bool(true)) {
                return Ok(nullable(converted));
            }
        }
        Ok(Value::Object(converted))
    }

    /// The members of a schema object but `$ref`, each subschema converted.
    fn members(&mut self, members: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        let mut converted = Map::new();
        for (name, value) in members {
            let value = match name.as_str() {
                "$ref" => continue,
                dropped if DROPPED.contains(&dropped) => continue,
                "example" => {
                    // `examples` given beside it wins: it is the 2020-12 member.
                    if !members.contains_key("examples") {
                        converted.insert("examples".into(), Value::Array(vec![value.clone()]));
                    }
                    continue;
                }
                // One subschema.
                "items"
                | "additionalProperties"
                | "not"
                | "contains"
                | "propertyNames"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "additionalItems" => match value {
                    // 3.0's `items` may be an array only in older drafts: kept as written.
                    Value::Array(_) => value.clone(),
                    _ => self.convert(value)?,
                },
                // A list of subschemas.
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    let items = value.as_array().ok_or_else(|| format!("{name} must be an array of schemas"))?;
                    Value::Array(items.iter().map(|item| self.convert(item)).collect::<Result<_, _>>()?)
                }
                // Subschemas by name.
                "properties" | "patternProperties" | "dependentSchemas" | "$defs" => {
                    let named = value.as_object().ok_or_else(|| format!("{name} must be an object of schemas"))?;
                    let mut out = Map::new();
                    for (key, schema) in named {
                        out.insert(key.clone(), self.convert(schema)?);
                    }
                    Value::Object(out)
                }
                _ => value.clone(),
            };
            converted.insert(name.clone(), value);
        }
        Ok(converted)
    }
}

/// 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum`, which qualify `minimum` and
/// `maximum`, as 2020-12's numeric ones, which replace them.
fn exclusive_bounds(schema: &mut Map<String, Value>) {
    for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        match schema.get(exclusive) {
            Some(Value::Bool(true)) => match schema.remove(bound) {
                Some(limit) => {
                    schema.insert(exclusive.into(), limit);
                }
                None => {
                    schema.remove(exclusive);
                }
            },
            Some(Value::Bool(false)) => {
                schema.remove(exclusive);
            }
            _ => {}
        }
    }
}

/// A 3.0 schema with `nullable: true`: `null` is one of its values too.
fn nullable(mut schema: Map<String, Value>) -> Value {
    if let Some(Value::Array(values)) = schema.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match schema.get_mut("type") {
        Some(Value::String(single)) => {
            let single = std::mem::take(single);
            schema.insert("type".into(), json!([single, "null"]));
            Value::Object(schema)
        }
        Some(Value::Array(types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
            Value::Object(schema)
        }
        _ => json!({"anyOf": [Value::Object(schema), {"type": "null"}]}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(document: &Value, dialect: Dialect, schema: Value) -> (Value, Option<Value>) {
        let mut converter = Converter::new(document, dialect);
        let converted = converter.convert(&schema).unwrap();
        (converted, converter.defs().unwrap())
    }

    #[test]
    fn openapi_30_schemas_become_2020_12() {
        let none = json!({});
        let cases = [
            (json!({"type": "string", "nullable": true}), json!({"type": ["string", "null"]})),
            (
                json!({"type": "string", "enum": ["a"], "nullable": true}),
                json!({"type": ["string", "null"], "enum": ["a", null]}),
            ),
            (json!({"nullable": true, "description": "x"}), json!({"anyOf": [{"description": "x"}, {"type": "null"}]})),
            (json!({"type": "integer", "nullable": false}), json!({"type": "integer"})),
            (
                json!({"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": false}),
                json!({"type": "number", "exclusiveMinimum": 0, "maximum": 9}),
            ),
            (
                json!({"type": "string", "example": "cat", "xml": {"name": "n"}, "discriminator": {"propertyName": "t"}}),
                json!({"type": "string", "examples": ["cat"]}),
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "nullable": true}}, "additionalProperties": {"type": "integer", "nullable": true}}),
                json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}, "additionalProperties": {"type": ["integer", "null"]}}),
            ),
            (
                json!({"allOf": [{"type": "string", "nullable": true}]}),
                json!({"allOf": [{"type": ["string", "null"]}]}),
            ),
        ];
        for (schema, expected) in cases {
            assert_eq!(convert(&none, Dialect::OpenApi30, schema.clone()), (expected, None), "{schema}");
        }
    }

    #[test]
    fn shared_schemas_become_defs_once_and_cycles_stay_references() {
        let document = json!({"components": {"schemas": {
            "Pet": {"type": "object", "properties": {"owner": {"$ref": "#/components/schemas/Person"}, "tag": {"type": "string", "nullable": true}}},
            "Person": {"type": "object", "properties": {"pets": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}},
            "a/b": {"type": "string"}
        }}});
        let schema =
            json!({"type": "array", "items": {"$ref": "#/components/schemas/Pet", "description": "ignored in 3.0"}});
        let (converted, defs) = convert(&document, Dialect::OpenApi30, schema.clone());
        assert_eq!(converted, json!({"type": "array", "items": {"$ref": "#/$defs/Pet"}}));
        assert_eq!(
            defs,
            Some(json!({
                "Person": {"type": "object", "properties": {"pets": {"type": "array", "items": {"$ref": "#/$defs/Pet"}}}},
                "Pet": {"type": "object", "properties": {"owner": {"$ref": "#/$defs/Person"}, "tag": {"type": ["string", "null"]}}}
            }))
        );
        let (converted, _) = convert(&document, Dialect::OpenApi31, schema);
        assert_eq!(
            converted,
            json!({"type": "array", "items": {"$ref": "#/$defs/Pet", "description": "ignored in 3.0"}})
        );
        let (converted, defs) = convert(&document, Dialect::OpenApi31, json!({"$ref": "#/components/schemas/a~1b"}));
        assert_eq!((converted, defs), (json!({"$ref": "#/$defs/a~1b"}), Some(json!({"a/b": {"type": "string"}}))));
    }

    #[test]
    fn a_schema_may_refer_only_to_shared_schemas_that_exist() {
        let document = json!({"components": {"schemas": {}, "parameters": {"P": {}}}});
        let mut converter = Converter::new(&document, Dialect::OpenApi31);
        assert_eq!(
            converter.convert(&json!({"$ref": "#/components/parameters/P"})).unwrap_err(),
            "$ref \"#/components/parameters/P\": a schema may refer only to #/components/schemas/<name>"
        );
        converter.convert(&json!({"$ref": "#/components/schemas/Gone"})).unwrap();
        assert_eq!(
            converter.defs().unwrap_err(),
            "$ref \"#/components/schemas/Gone\": it points to nothing in the document"
        );
        let mut converter = Converter::new(&document, Dialect::OpenApi31);
        assert_eq!(converter.convert(&json!(3)).unwrap_err(), "a schema must be an object, not 3");
    }
}
