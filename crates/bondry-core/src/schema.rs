//! JSON Schema 2020-12: compiling capability schemas once, within bounds, and validating.
//!
//! Schemas may come from upstream servers we do not trust, so compilation is bounded in
//! size and depth, `pattern` runs on a backtracking engine with a step limit, references
//! stay inside the document, and `format` only annotates.

use std::fmt;
use std::sync::Arc;

use jsonschema::{Draft, PatternOptions, Validator};
use serde_json::Value;

use crate::capability::echoed;

/// Limits every schema is held to, whoever wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaBounds {
    /// Largest serialised schema, in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of objects and arrays.
    pub max_depth: usize,
    /// Backtracking steps one `pattern` match may take; past it the value is invalid.
    pub backtrack_limit: usize,
}

impl Default for SchemaBounds {
    fn default() -> Self {
        Self { max_bytes: 64 * 1024, max_depth: 32, backtrack_limit: 10_000 }
    }
}

/// Why a schema was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("the schema is {size} bytes serialised; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("the schema nests deeper than {limit} levels")]
    TooDeep { limit: usize },
    #[error("only references inside the schema (`#...`) are allowed, found {0:?}")]
    ExternalReference(String),
    #[error("{0}")]
    Invalid(String),
}

/// One way an instance breaks a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer to the offending value (`""` for the root).
    pub pointer: String,
    /// The keyword that failed (`type`, `required`, `pattern`, ...).
    pub rule: String,
    /// A description that does not repeat the offending value.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() { "/" } else { &self.pointer };
        write!(f, "{at}: {}: {}", self.rule, self.message)
    }
}

/// How many violations, and how many keys within one, a refusal names; the rest are
/// counted. An answer about bad input must not grow with the input.
pub const NAMED: usize = 5;

/// Why an instance failed: the first [`NAMED`] violations, and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violations {
    pub named: Vec<Violation>,
    pub more: usize,
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, violation) in self.named.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{violation}")?;
        }
        if self.more > 0 {
            write!(f, " and {} more", self.more)?;
        }
        Ok(())
    }
}

/// A schema compiled once, shared by every request.
#[derive(Clone)]
pub struct CompiledSchema {
    source: Arc<Value>,
    validator: Arc<Validator>,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CompiledSchema").field(&self.source).finish()
    }
}

impl CompiledSchema {
    /// Checks `schema` against `bounds` and compiles it as draft 2020-12.
    pub fn compile(schema: &Value, bounds: &SchemaBounds) -> Result<Self, SchemaError> {
        let size = serde_json::to_vec(schema).map(|bytes| bytes.len()).unwrap_or(usize::MAX);
        if size > bounds.max_bytes {
            return Err(SchemaError::TooLarge { size, limit: bounds.max_bytes });
        }
        check_depth_and_references(schema, bounds.max_depth)?;
        let validator = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .should_validate_formats(false)
            .with_pattern_options(PatternOptions::fancy_regex().backtrack_limit(bounds.backtrack_limit))
            .offline()
            .build(schema)
            .map_err(|error| {
                let at = error.instance_path().as_str();
                SchemaError::Invalid(if at.is_empty() { error.to_string() } else { format!("{error} (at {at})") })
            })?;
        Ok(Self { source: Arc::new(schema.clone()), validator: Arc::new(validator) })
    }

    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Validates `instance`, naming the first [`NAMED`] violations and counting the rest.
    pub fn validate(&self, instance: &Value) -> Result<(), Violations> {
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let mut errors = self.validator.iter_errors(instance);
        let named = errors.by_ref().take(NAMED).map(|error| violation(&error)).collect();
        Err(Violations { named, more: errors.count() })
    }
}

/// One violation, in words that never repeat the offending value, and that name at most
/// [`NAMED`] of the keys a property rule found unexpected.
fn violation(error: &jsonschema::ValidationError<'_>) -> Violation {
    use jsonschema::error::ValidationErrorKind as Kind;
    let message = match error.kind() {
        Kind::AdditionalProperties { unexpected } => {
            unexpected_keys("Additional properties are not allowed", unexpected)
        }
        Kind::UnevaluatedProperties { unexpected } => {
            unexpected_keys("Unevaluated properties are not allowed", unexpected)
        }
        _ => error.masked().to_string(),
    };
    Violation {
        pointer: echoed(error.instance_path().as_str()).into_owned(),
        rule: error.kind().keyword().to_owned(),
        message,
    }
}

fn unexpected_keys(what: &str, keys: &[String]) -> String {
    let named: Vec<String> = keys.iter().take(NAMED).map(|key| format!("'{}'", echoed(key))).collect();
    let more = match keys.len().saturating_sub(NAMED) {
        0 => String::new(),
        more => format!(" and {more} more"),
    };
    let verb = if keys.len() == 1 { "was" } else { "were" };
    format!("{what} ({}{more} {verb} unexpected)", named.join(", "))
}

/// Walks the schema once: refuses nesting past `max_depth` and any `$ref`/`$dynamicRef`
/// that leaves the document.
fn check_depth_and_references(schema: &Value, max_depth: usize) -> Result<(), SchemaError> {
    let mut pending = vec![(schema, 1usize)];
    while let Some((value, depth)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Object(object) => {
                for keyword in ["$ref", "$dynamicRef"] {
                    if let Some(Value::String(target)) = object.get(keyword)
                        && !target.starts_with('#')
                    {
                        return Err(SchemaError::ExternalReference(target.clone()));
                    }
                }
                Box::new(object.values())
            }
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        if depth > max_depth {
            return Err(SchemaError::TooDeep { limit: max_depth });
        }
        pending.extend(children.map(|child| (child, depth + 1)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(schema: Value) -> Result<CompiledSchema, SchemaError> {
        CompiledSchema::compile(&schema, &SchemaBounds::default())
    }

    #[test]
    fn reports_each_failing_pointer_and_rule() {
        let schema = compile(json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 2}},
            "required": ["a", "c"]
        }))
        .unwrap();
        assert!(schema.validate(&json!({"a": 1, "c": 0})).is_ok());
        let mut violations = schema.validate(&json!({"a": "x", "b": "long"})).unwrap_err().named;
        violations.sort_by(|x, y| (&x.pointer, &x.rule).cmp(&(&y.pointer, &y.rule)));
        let found: Vec<_> = violations.iter().map(|v| (v.pointer.as_str(), v.rule.as_str())).collect();
        assert_eq!(found, [("", "required"), ("/a", "type"), ("/b", "maxLength")]);
    }

    #[test]
    fn bounds_are_enforced() {
        let mut deep = json!({"type": "object"});
        for _ in 0..40 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        assert!(matches!(compile(deep), Err(SchemaError::TooDeep { limit: 32 })));
        let big = json!({"type": "object", "description": "x".repeat(70_000)});
        assert!(matches!(compile(big), Err(SchemaError::TooLarge { .. })));
        let remote = json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}});
        assert!(matches!(compile(remote), Err(SchemaError::ExternalReference(_))));
        assert!(compile(json!({"$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}})).is_ok());
        assert!(matches!(compile(json!({"type": "nope"})), Err(SchemaError::Invalid(_))));
    }

    #[test]
    fn catastrophic_patterns_fail_validation_instead_of_hanging() {
        let schema =
            compile(json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}})).unwrap();
        let violations = schema.validate(&json!({"s": format!("{}b", "a".repeat(40))})).unwrap_err();
        assert_eq!(violations.named[0].rule, "pattern");
    }

    #[test]
    fn format_is_an_annotation() {
        let schema =
            compile(json!({"type": "object", "properties": {"e": {"type": "string", "format": "email"}}})).unwrap();
        assert!(schema.validate(&json!({"e": "not an email"})).is_ok());
    }

    #[test]
    fn a_refusal_names_five_violations_and_counts_the_rest() {
        let schema = compile(json!({"type": "object", "additionalProperties": {"type": "integer"}})).unwrap();
        let instance: serde_json::Map<String, Value> = (0..12).map(|i| (format!("k{i:02}"), json!("secret"))).collect();
        let violations = schema.validate(&Value::Object(instance)).unwrap_err();
        assert_eq!(violations.named.len(), NAMED);
        assert_eq!(violations.more, 7);
        let text = violations.to_string();
        assert!(text.ends_with(" and 7 more"), "{text}");
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn unexpected_keys_are_named_five_at_most_and_cut_short() {
        let schema = compile(json!({"type": "object", "properties": {}, "additionalProperties": false})).unwrap();
        let mut instance: serde_json::Map<String, Value> =
            (0..60_000).map(|i| (format!("k{i}"), json!("secret"))).collect();
        instance.insert("x".repeat(10_000), json!(1));
        let violations = schema.validate(&Value::Object(instance)).unwrap_err();
        let text = violations.to_string();
        assert!(text.len() < 1024, "{} bytes: {text}", text.len());
        assert!(text.contains("'k0', 'k1', 'k2', 'k3', 'k4' and 59996 more were unexpected"), "{text}");
        let long = compile(json!({"type": "object", "properties": {}, "additionalProperties": false})).unwrap();
        let text = long.validate(&json!({"é".repeat(100): 1})).unwrap_err().to_string();
        assert!(text.contains(&format!("'{}…' was unexpected", "é".repeat(32))), "{text}");
    }
}
