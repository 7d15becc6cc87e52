//! The modern `_meta` envelope: the claim that selects the modern era, and its validation.
//!
//! [`validate`] holds `_meta` to the 2026-07-28 schema's `RequestMetaObject`: the required
//! keys, the type of every key it defines, and the shapes inside them: `clientCapabilities`
//! (`ClientCapabilities`), `clientInfo` (`Implementation` and its `Icon`s) and
//! `progressToken`. The schema's objects are open (schema.json never sets
//! `additionalProperties: false`), so members it does not define pass untouched, in
//! `_meta`, in the capabilities and inside each shape. That includes `roots.listChanged`:
//! 2026-07-28 dropped it and declares `roots` as `{}`. `format: uri` (`src`, `websiteUrl`)
//! is an annotation, as it is in tool schemas: the value must be a string, not a parsed
//! URI. Extension ids are not held to the `_meta` key grammar either: schema.json states
//! no pattern for them, and Bondry checks the types of known keys only.
//!
//! A numeric `progressToken` must be an integer a JSON number holds exactly
//! (|n| ≤ 2^53−1), written as one: `1.0` and `1e2` are refused, as they are for ids.
//! JSON Schema 2020-12's `integer` would admit `1.0`, but serde_json reads it as a float,
//! and the token is echoed verbatim in `notifications/progress`, where typed clients read
//! it back as an integer.
//!
//! What is wrong is named in `data.invalid` by JSON Pointers (RFC 6901) rooted at the
//! request message, such as
//! `/params/_meta/io.modelcontextprotocol~1clientInfo/icons/0/theme`. The specification
//! and the conformance suite say nothing of where to root them (the suite checks
//! only the code and the status), and a pointer from the message resolves against what the
//! client sent. An absent member a shape requires (`name`, `version`, an icon's `src`) is
//! named by the pointer where it belongs; `data.missing` keeps naming the absent required
//! `_meta` keys themselves.
//!
//! This runs on every modern request, so checking a valid envelope is one walk that
//! allocates nothing: a value's path is a chain of steps on the stack, rendered to a
//! pointer only when the value is refused. A refusal names at most [`NAMED`] pointers and counts the rest in
//! `data.more`, and each key in a pointer is cut to 64 bytes, so the answer about a bad
//! envelope does not grow with it.

use bondry_core::capability::echoed;
use bondry_core::handler::{LogLevel, TraceContext};
use bondry_core::schema::NAMED;
use serde_json::{Map, Value};

use crate::jsonrpc::MAX_SAFE_INTEGER;

pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const PROGRESS_TOKEN: &str = "progressToken";
/// The W3C trace context and baggage: strings, and the only keys without a prefix.
const TRACE_KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// The modern claim of a message: `params._meta[protocolVersion]`, of any type.
pub fn claim(params: Option<&Map<String, Value>>) -> Option<&Value> {
    params?.get("_meta")?.as_object()?.get(PROTOCOL_VERSION)
}

/// A validated modern envelope.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub version: String,
    pub client_capabilities: Value,
    pub trace: TraceContext,
    /// `_meta.progressToken`: progress notifications are wanted, naming this token.
    pub progress_token: Option<Value>,
    /// The least severe log message the client wants: `_meta[logLevel]` in the modern
    /// era, `logging/setLevel` in a session. `None`: no log messages at all.
    pub log_level: Option<LogLevel>,
}

/// What is wrong with an envelope: required keys missing, and values of the wrong shape.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EnvelopeFault {
    /// The required `_meta` keys that are absent.
    pub missing: Vec<&'static str>,
    /// JSON Pointers, from the request message, to the first [`NAMED`] values refused.
    pub invalid: Vec<String>,
    /// How many more values were refused than `invalid` names.
    pub more: usize,
}

impl EnvelopeFault {
    /// The fault of a modern notification whose claim is not a string, the one check a
    /// notification's envelope gets.
    pub fn claim_not_a_string() -> Self {
        let mut fault = Self::default();
        let params = Path::root("params");
        fault.refuse(&params.key("_meta").key(PROTOCOL_VERSION));
        fault
    }

    fn refuse(&mut self, at: &Path<'_>) {
        if self.invalid.len() < NAMED {
            self.invalid.push(at.pointer());
        } else {
            self.more += 1;
        }
    }

    fn expect(&mut self, holds: bool, at: &Path<'_>) {
        if !holds {
            self.refuse(at);
        }
    }

    fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.invalid.is_empty()
    }
}

/// Validates the `_meta` of a modern request.
pub fn validate(params: Option<&Map<String, Value>>) -> Result<Envelope, EnvelopeFault> {
    let empty = Map::new();
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object).unwrap_or(&empty);
    let mut fault = EnvelopeFault::default();
    let params_path = Path::root("params");
    request_meta(meta, &params_path.key("_meta"), &mut fault);
    if !fault.is_empty() {
        return Err(fault);
    }
    Ok(Envelope {
        version: meta.get(PROTOCOL_VERSION).and_then(Value::as_str).unwrap_or_default().to_owned(),
        client_capabilities: meta.get(CLIENT_CAPABILITIES).cloned().unwrap_or_default(),
        trace: trace_context(meta),
        progress_token: meta.get(PROGRESS_TOKEN).cloned(),
        log_level: meta.get(LOG_LEVEL).and_then(Value::as_str).and_then(LogLevel::parse),
    })
}

/// The W3C trace context in a `_meta` object; values that are not strings are ignored.
pub fn trace_context(meta: &Map<String, Value>) -> TraceContext {
    let text = |key: &str| meta.get(key).and_then(Value::as_str).map(str::to_owned);
    TraceContext { traceparent: text("traceparent"), tracestate: text("tracestate"), baggage: text("baggage") }
}

/// The required keys absent from a request's `_meta`, for a request that sent a modern
/// version header but no claim.
pub fn missing_keys(params: Option<&Map<String, Value>>) -> Vec<&'static str> {
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    [PROTOCOL_VERSION, CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|key| !meta.is_some_and(|meta| meta.contains_key(*key)))
        .collect()
}

/// Where a value sits in the request message: a chain of steps from the message, kept on
/// the stack and rendered as a JSON Pointer only for a value that is refused.
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    step: Step<'a>,
}

enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

impl<'a> Path<'a> {
    fn root(key: &'a str) -> Self {
        Self { parent: None, step: Step::Key(key) }
    }

    fn key(&'a self, key: &'a str) -> Self {
        Self { parent: Some(self), step: Step::Key(key) }
    }

    fn index(&'a self, index: usize) -> Self {
        Self { parent: Some(self), step: Step::Index(index) }
    }

    fn pointer(&self) -> String {
        let mut pointer = String::new();
        self.write(&mut pointer);
        pointer
    }

    fn write(&self, pointer: &mut String) {
        if let Some(parent) = self.parent {
            parent.write(pointer);
        }
        pointer.push('/');
        match self.step {
            Step::Key(key) => push_token(pointer, &echoed(key)),
            Step::Index(index) => pointer.push_str(&index.to_string()),
        }
    }
}

/// Appends `key` as a pointer's reference token: `~` as `~0`, `/` as `~1` (RFC 6901 §3).
fn push_token(pointer: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// A value's check: it refuses, into the fault, what is wrong at or below `at`.
type Check = fn(&Value, &Path<'_>, &mut EnvelopeFault);

/// Checks `object[key]` with `check`, when it is present.
fn optional(object: &Map<String, Value>, key: &str, check: Check, at: &Path<'_>, fault: &mut EnvelopeFault) {
    if let Some(value) = object.get(key) {
        check(value, &at.key(key), fault);
    }
}

/// Checks `object[key]` with `check`; its absence is refused at the pointer where it belongs.
fn required(object: &Map<String, Value>, key: &str, check: Check, at: &Path<'_>, fault: &mut EnvelopeFault) {
    match object.get(key) {
        Some(value) => check(value, &at.key(key), fault),
        None => fault.refuse(&at.key(key)),
    }
}

/// `RequestMetaObject`, with the trace keys the transport carries beside it.
fn request_meta(meta: &Map<String, Value>, at: &Path<'_>, fault: &mut EnvelopeFault) {
    for (key, check) in [(PROTOCOL_VERSION, string as Check), (CLIENT_CAPABILITIES, client_capabilities)] {
        match meta.get(key) {
            Some(value) => check(value, &at.key(key), fault),
            None => fault.missing.push(key),
        }
    }
    optional(meta, CLIENT_INFO, implementation, at, fault);
    optional(meta, LOG_LEVEL, log_level, at, fault);
    optional(meta, PROGRESS_TOKEN, progress_token, at, fault);
    for key in TRACE_KEYS {
        optional(meta, key, string, at, fault);
    }
}

/// `ClientCapabilities`: every member the schema defines, each in its shape.
fn client_capabilities(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    let Some(capabilities) = value.as_object() else {
        return fault.refuse(at);
    };
    optional(capabilities, "experimental", json_objects, at, fault);
    optional(capabilities, "roots", json_object, at, fault);
    optional(capabilities, "sampling", sampling, at, fault);
    optional(capabilities, "elicitation", elicitation, at, fault);
    optional(capabilities, "extensions", json_objects, at, fault);
}

/// `sampling: {context?: JSONObject, tools?: JSONObject}`.
fn sampling(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    object_members(value, &["context", "tools"], at, fault);
}

/// `elicitation: {form?: JSONObject, url?: JSONObject}`.
fn elicitation(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    object_members(value, &["form", "url"], at, fault);
}

/// An object whose `members`, where present, are objects.
fn object_members(value: &Value, members: &[&str], at: &Path<'_>, fault: &mut EnvelopeFault) {
    let Some(object) = value.as_object() else {
        return fault.refuse(at);
    };
    for member in members {
        optional(object, member, json_object, at, fault);
    }
}

/// `{[key: string]: JSONObject}`: `experimental` and `extensions`, keyed by the client.
fn json_objects(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    let Some(entries) = value.as_object() else {
        return fault.refuse(at);
    };
    for (key, entry) in entries {
        json_object(entry, &at.key(key), fault);
    }
}

/// `Implementation`: `BaseMetadata` (`name`, `title?`), `Icons`, `version`,
/// `description?` and `websiteUrl?`.
fn implementation(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    let Some(info) = value.as_object() else {
        return fault.refuse(at);
    };
    required(info, "name", string, at, fault);
    required(info, "version", string, at, fault);
    optional(info, "title", string, at, fault);
    optional(info, "description", string, at, fault);
    optional(info, "websiteUrl", string, at, fault);
    optional(info, "icons", icons, at, fault);
}

fn icons(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    array_of(value, icon, at, fault);
}

/// `Icon`: `src`, `mimeType?`, `sizes?: string[]` and `theme?: "light" | "dark"`.
fn icon(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    let Some(icon) = value.as_object() else {
        return fault.refuse(at);
    };
    required(icon, "src", string, at, fault);
    optional(icon, "mimeType", string, at, fault);
    optional(icon, "sizes", strings, at, fault);
    optional(icon, "theme", theme, at, fault);
}

fn strings(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    array_of(value, string, at, fault);
}

/// An array whose every item passes `item`.
fn array_of(value: &Value, item: Check, at: &Path<'_>, fault: &mut EnvelopeFault) {
    let Some(items) = value.as_array() else {
        return fault.refuse(at);
    };
    for (index, entry) in items.iter().enumerate() {
        item(entry, &at.index(index), fault);
    }
}

fn theme(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    fault.expect(matches!(value.as_str(), Some("light" | "dark")), at);
}

fn log_level(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    fault.expect(value.as_str().and_then(LogLevel::parse).is_some(), at);
}

fn progress_token(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    let safe_integer = value.as_i64().is_some_and(|n| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&n));
    fault.expect(value.is_string() || safe_integer, at);
}

fn string(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    fault.expect(value.is_string(), at);
}

/// `JSONObject`: any object.
fn json_object(value: &Value, at: &Path<'_>, fault: &mut EnvelopeFault) {
    fault.expect(value.is_object(), at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CAPABILITIES_POINTER: &str = "/params/_meta/io.modelcontextprotocol~1clientCapabilities";

    /// A valid `_meta` with `key` set to `value`.
    fn meta_with(key: &str, value: Value) -> Value {
        let mut meta = json!({PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}});
        meta[key] = value;
        meta
    }

    fn check(meta: Value) -> Result<Envelope, EnvelopeFault> {
        let params = json!({ "_meta": meta });
        validate(params.as_object())
    }

    fn fault(meta: Value) -> EnvelopeFault {
        check(meta).unwrap_err()
    }

    #[test]
    fn required_keys_and_types() {
        let ok = json!({PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}, "x.example/extra": 1});
        assert_eq!(check(ok).unwrap().version, "2026-07-28");
        assert_eq!(fault(json!({PROTOCOL_VERSION: "2026-07-28"})).missing, [CLIENT_CAPABILITIES]);
        assert_eq!(
            fault(json!({PROTOCOL_VERSION: 1, CLIENT_CAPABILITIES: []})).invalid,
            ["/params/_meta/io.modelcontextprotocol~1protocolVersion", CAPABILITIES_POINTER]
        );
        let invalid = |key: &str, value: Value| fault(meta_with(key, value)).invalid;
        assert_eq!(invalid(LOG_LEVEL, json!("verbose")), ["/params/_meta/io.modelcontextprotocol~1logLevel"]);
        assert_eq!(invalid("traceparent", json!(7)), ["/params/_meta/traceparent"]);
        assert_eq!(
            invalid(CLIENT_INFO, json!({"name": "x"})),
            ["/params/_meta/io.modelcontextprotocol~1clientInfo/version"]
        );
    }

    #[test]
    fn pointers_escape_tilde_and_slash() {
        let params = Path::root("params");
        let meta = params.key("_meta");
        assert_eq!(meta.key("a/b~c").index(0).pointer(), "/params/_meta/a~1b~0c/0");
        assert_eq!(meta.key("~1").pointer(), "/params/_meta/~01", "a literal ~1 is not read back as /");
        let refused = fault(meta_with(CLIENT_CAPABILITIES, json!({"extensions": {"com.example/a~b": 1}})));
        assert_eq!(refused.invalid, [format!("{CAPABILITIES_POINTER}/extensions/com.example~1a~0b")]);
    }

    #[test]
    fn progress_tokens_are_strings_or_safe_integers() {
        let safe = MAX_SAFE_INTEGER;
        for token in [json!("t"), json!(""), json!(0), json!(safe), json!(-safe)] {
            assert!(check(meta_with(PROGRESS_TOKEN, token.clone())).is_ok(), "{token} is a progress token");
        }
        let written = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        for token in [
            json!(safe + 1),
            json!(-safe - 1),
            json!(u64::MAX),
            json!(1.5),
            written("1.0"),
            written("1e2"),
            written("100000000000000000000"),
            json!(true),
            json!(null),
            json!({}),
        ] {
            assert_eq!(
                fault(meta_with(PROGRESS_TOKEN, token.clone())).invalid,
                ["/params/_meta/progressToken"],
                "{token}"
            );
        }
    }

    #[test]
    fn a_refusal_names_the_first_pointers_and_counts_the_rest() {
        let info = json!({"name": "c", "version": "1", "icons": [1, 2, 3, 4, 5, 6, 7, 8]});
        let refused = fault(meta_with(CLIENT_INFO, info));
        let pointers: Vec<String> = (0..NAMED)
            .map(|index| format!("/params/_meta/io.modelcontextprotocol~1clientInfo/icons/{index}"))
            .collect();
        assert_eq!(refused.invalid, pointers);
        assert_eq!(refused.more, 8 - NAMED);
    }

    #[test]
    fn keys_are_cut_in_pointers() {
        let long = "x".repeat(100);
        let refused = fault(meta_with(CLIENT_CAPABILITIES, json!({"experimental": {long: true}})));
        assert_eq!(refused.invalid, [format!("{CAPABILITIES_POINTER}/experimental/{}…", "x".repeat(64))]);
    }
}
