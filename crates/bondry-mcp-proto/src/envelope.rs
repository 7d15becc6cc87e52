//! The modern `_meta` envelope: the claim that selects the modern era, and its validation.
//!
//! Only known keys are type-checked; unknown keys in `_meta` and in the client
//! capabilities pass untouched, as the revision allows extensions there.

use bondry_core::handler::{LogLevel, TraceContext};
use serde_json::{Map, Value};

pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const PROGRESS_TOKEN: &str = "progressToken";

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

/// What is wrong with an envelope: keys missing and keys of the wrong type.
#[derive(Debug, Default, PartialEq)]
pub struct EnvelopeFault {
    pub missing: Vec<&'static str>,
    pub invalid: Vec<&'static str>,
}

/// Validates the `_meta` of a modern request.
pub fn validate(params: Option<&Map<String, Value>>) -> Result<Envelope, EnvelopeFault> {
    let empty = Map::new();
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object).unwrap_or(&empty);
    let mut fault = EnvelopeFault::default();
    let mut check = |key: &'static str, required: bool, valid: fn(&Value) -> bool| match meta.get(key) {
        None if required => fault.missing.push(key),
        Some(value) if !valid(value) => fault.invalid.push(key),
        _ => {}
    };
    check(PROTOCOL_VERSION, true, Value::is_string);
    check(CLIENT_CAPABILITIES, true, Value::is_object);
    check(CLIENT_INFO, false, |info| {
        info.get("name").is_some_and(Value::is_string) && info.get("version").is_some_and(Value::is_string)
    });
    check(LOG_LEVEL, false, |level| level.as_str().and_then(LogLevel::parse).is_some());
    check(PROGRESS_TOKEN, false, |token| token.is_string() || token.is_i64() || token.is_u64());
    for key in ["traceparent", "tracestate", "baggage"] {
        check(key, false, Value::is_string);
    }
    if !fault.missing.is_empty() || !fault.invalid.is_empty() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fault(meta: Value) -> EnvelopeFault {
        let params = json!({ "_meta": meta });
        validate(params.as_object()).unwrap_err()
    }

    #[test]
    fn required_keys_and_types() {
        let ok = json!({"_meta": {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}, "x.example/extra": 1}});
        assert_eq!(validate(ok.as_object()).unwrap().version, "2026-07-28");
        assert_eq!(fault(json!({PROTOCOL_VERSION: "2026-07-28"})).missing, [CLIENT_CAPABILITIES]);
        assert_eq!(
            fault(json!({PROTOCOL_VERSION: 1, CLIENT_CAPABILITIES: []})).invalid,
            [PROTOCOL_VERSION, CLIENT_CAPABILITIES]
        );
        let base = |key: &str, value: Value| {
            let mut meta = json!({PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}});
            meta[key] = value;
            fault(meta).invalid
        };
        assert_eq!(base(CLIENT_INFO, json!({"name": "x"})), [CLIENT_INFO]);
        assert_eq!(base(LOG_LEVEL, json!("verbose")), [LOG_LEVEL]);
        assert_eq!(base(PROGRESS_TOKEN, json!(1.5)), [PROGRESS_TOKEN]);
        assert_eq!(base("traceparent", json!(7)), ["traceparent"]);
    }
}
