//! The relay: the handler behind every capability of one upstream. The core has resolved
//! the capability in the caller's view and validated the arguments before it runs; the
//! relay sends the call to the upstream under the upstream's own name and hands the
//! answer back as the upstream gave it.
//!
//! A failure never makes the capability vanish (docs/upstreams.md): an upstream that
//! cannot be reached, died or timed out is `upstream_unavailable` (retryable), a JSON-RPC
//! error `upstream_error`; an upstream result with `isError` stays a tool error. What the upstream says or asks
//! while it works reaches the caller through [`bridge`].

use std::sync::Arc;
use std::time::Instant;

use bondry_core::BoxFuture;
use bondry_core::backend::BackendKind;
use bondry_core::capability::CapabilityKind;
use bondry_core::handler::{
    Answer, Completion, CompletionAnswer, CompletionFailed, CompletionQuery, Handler, HandlerRequest, TraceContext,
};
use bondry_mcp_proto::lint::{ParamHeader, ParamType};
use serde_json::{Map, Value, json};

use crate::bridge::{self, Asking, Driven, Exchanges};
use crate::client::Outgoing;
use crate::upstream::{Target, Unrelayed, Upstream};
use crate::warnings;

/// Stable codes of relayed calls that did not get an answer.
pub mod code {
    /// Not connected, marked down, failed or timed out: worth trying again.
    pub const UNAVAILABLE: &str = "upstream_unavailable";
    /// The upstream answered a JSON-RPC error.
    pub const ERROR: &str = "upstream_error";
    /// A retry named an input exchange that is no longer held (answered, expired, or
    /// never the caller's): the call must start over.
    pub const EXCHANGE_LOST: &str = "input_exchange_lost";
    /// The caller holds as many input exchanges in the realm as it may.
    pub const TOO_MANY_EXCHANGES: &str = "too_many_pending_inputs";
}

/// The handler of one upstream's capabilities.
pub struct Relay {
    upstream: Arc<Upstream>,
    exchanges: Arc<Exchanges>,
}

impl Relay {
    /// The relay of `upstream`, holding its callers' input exchanges in the realm's `exchanges`.
    pub fn new(upstream: Arc<Upstream>, exchanges: Arc<Exchanges>) -> Self {
        Self { upstream, exchanges }
    }
}

impl Handler for Relay {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        // The call's own future boxed, not one wrapping it: a future moves whole, and
        // a wrapper would hold the request twice.
        Box::pin(call(Arc::clone(&self.upstream), Arc::clone(&self.exchanges), request))
    }

    fn complete(&self, request: HandlerRequest, query: CompletionQuery) -> BoxFuture<'static, CompletionAnswer> {
        Box::pin(complete(Arc::clone(&self.upstream), request, query))
    }

    fn watch(&self, uri: &str) {
        self.upstream.follow(uri);
    }

    fn unwatch(&self, uri: &str) {
        self.upstream.unfollow(uri);
    }
}

async fn call(upstream: Arc<Upstream>, exchanges: Arc<Exchanges>, mut request: HandlerRequest) -> Answer {
    let (upstream, exchanges) = (&upstream, &exchanges);
    // Every capability of the upstream has a target; one without is a listing that was
    // just replaced, and nothing is left to call.
    let Some(target) = upstream.target(&request.capability) else {
        return unavailable(CapabilityKind::Tool);
    };
    let kind = target.kind;
    // The arguments are the upstream's now: nothing after this reads them.
    let arguments = std::mem::take(&mut request.arguments);
    let outgoing = match kind {
        CapabilityKind::Tool => {
            let headers = param_headers(&target.params, &arguments);
            Outgoing { param_headers: headers, ..named("tools/call", &target, arguments, &request.trace) }
        }
        CapabilityKind::Prompt => named("prompts/get", &target, arguments, &request.trace),
        CapabilityKind::Resource | CapabilityKind::ResourceTemplate => {
            // A static resource is read at its own URI; a template at the one the caller named.
            let Some(uri) = request.uri.clone().or_else(|| target.uri.clone()) else { return unavailable(kind) };
            let mut params = Map::from_iter([("uri".to_owned(), json!(uri))]);
            with_trace(&mut params, &request.trace);
            Outgoing { name: Some(uri), ..Outgoing::new("resources/read", params) }
        }
    };
    let client_capabilities = bridge::offered(&request.client_capabilities, &upstream.spec());
    let outgoing = Outgoing { client_capabilities, ..outgoing };
    let answered = match bridge::drive(upstream, exchanges, outgoing, &request).await {
        Driven::Answered(answered) => answered,
        Driven::Asking(Asking { requests, state }) => return Answer::InputRequired { requests, state: Some(state) },
        Driven::Lost => return failed(kind, code::EXCHANGE_LOST, false),
        Driven::Unpassable(why) => {
            tracing::warn!(upstream = upstream.name(), why, "an upstream answer cannot be passed on");
            return failed(kind, code::ERROR, false);
        }
        Driven::TooManyExchanges => return failed(kind, code::TOO_MANY_EXCHANGES, true),
        // Dropping the relayed request cancelled it upstream.
        Driven::Cancelled => return unavailable(kind),
    };
    match answered {
        Ok(result) => {
            let tool_error = kind == CapabilityKind::Tool && result.get("isError") == Some(&Value::Bool(true));
            Answer::Relayed { result, tool_error }
        }
        Err(Unrelayed::Unavailable) => unavailable(kind),
        Err(Unrelayed::ClientLacks { required }) => Answer::MissingClientCapability { required },
        Err(Unrelayed::Refused { code, message }) => {
            // The upstream's own words, quoted and escaped: they may hold line breaks.
            if let Some(print) = warnings::hear(upstream.name(), "", &format!("answered error {code}")) {
                let suppressed = print.suppressed;
                tracing::info!(upstream = upstream.name(), code, text = ?message, suppressed, "the upstream answered an error");
            }
            let detail = Some(error_detail(code, &message));
            match kind {
                CapabilityKind::Tool => {
                    Answer::ToolError { code: code::ERROR.into(), retryable: false, content: None, detail }
                }
                _ => Answer::Failure { code: code::ERROR.into(), detail },
            }
        }
    }
}

async fn complete(upstream: Arc<Upstream>, request: HandlerRequest, query: CompletionQuery) -> CompletionAnswer {
    let Some(target) = upstream.target(&query.capability) else {
        return Err(CompletionFailed { code: code::UNAVAILABLE.into() });
    };
    let reference = match (target.kind, &target.uri) {
        (CapabilityKind::Prompt, _) => json!({"type": "ref/prompt", "name": target.name}),
        (_, Some(uri)) => json!({"type": "ref/resource", "uri": uri}),
        (_, None) => return Err(CompletionFailed { code: code::UNAVAILABLE.into() }),
    };
    let mut params = Map::from_iter([
        ("ref".to_owned(), reference),
        ("argument".to_owned(), json!({"name": query.argument, "value": query.value})),
    ]);
    if !query.context.is_empty() {
        params.insert("context".into(), json!({"arguments": query.context}));
    }
    with_trace(&mut params, &request.trace);
    let outgoing = Outgoing {
        client_capabilities: bridge::offered(&request.client_capabilities, &upstream.spec()),
        ..Outgoing::new("completion/complete", params)
    };
    let began = Instant::now();
    let answered = tokio::select! {
        answered = bridge::relay_watched(&upstream, outgoing, &request) => answered,
        () = request.cancellation.cancelled() => return Err(CompletionFailed { code: code::UNAVAILABLE.into() }),
    };
    request.backend.record(BackendKind::UPSTREAM, upstream.name(), began.elapsed());
    let result = answered.map_err(|why| CompletionFailed {
        code: match why {
            Unrelayed::Unavailable => code::UNAVAILABLE.into(),
            Unrelayed::Refused { .. } | Unrelayed::ClientLacks { .. } => code::ERROR.into(),
        },
    })?;
    let completion = result.get("completion").unwrap_or(&Value::Null);
    Ok(Completion {
        values: completion
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|value| value.as_str().map(str::to_owned))
            .collect(),
        total: completion.get("total").and_then(Value::as_u64),
        has_more: completion.get("hasMore").and_then(Value::as_bool),
    })
}

/// A request that names its capability: `name` as the upstream knows it, and `arguments`.
fn named(method: &str, target: &Target, arguments: Value, trace: &TraceContext) -> Outgoing {
    let mut params = Map::from_iter([("name".to_owned(), json!(target.name)), ("arguments".to_owned(), arguments)]);
    with_trace(&mut params, trace);
    Outgoing { name: Some(target.name.clone()), ..Outgoing::new(method, params) }
}

/// The caller's trace context travels on to the upstream in `_meta`.
fn with_trace(params: &mut Map<String, Value>, trace: &TraceContext) {
    let mut meta = Map::new();
    for (key, value) in
        [("traceparent", &trace.traceparent), ("tracestate", &trace.tracestate), ("baggage", &trace.baggage)]
    {
        if let Some(value) = value {
            meta.insert(key.into(), json!(value));
        }
    }
    if !meta.is_empty() {
        params.insert("_meta".into(), Value::Object(meta));
    }
}

/// The `Mcp-Param-*` headers of a modern `tools/call`: each declared parameter present in
/// the arguments, as its header carries it.
fn param_headers(params: &[ParamHeader], arguments: &Value) -> Vec<(String, String)> {
    params
        .iter()
        .filter_map(|param| {
            let value = param.path.iter().try_fold(arguments, |value, key| value.get(key))?;
            let text = match (param.ty, value) {
                (ParamType::String, Value::String(text)) => text.clone(),
                (ParamType::Integer, Value::Number(number)) => number.to_string(),
                (ParamType::Boolean, Value::Bool(flag)) => flag.to_string(),
                _ => return None,
            };
            Some((param.name.clone(), text))
        })
        .collect()
}

/// What a caller learns of an upstream's JSON-RPC error: its code and message, the
/// message cut to [`MAX_DETAIL_MESSAGE`] bytes, since an upstream may say much more than
/// a caller needs to act on.
fn error_detail(code: i64, message: &str) -> Value {
    let mut end = message.len().min(MAX_DETAIL_MESSAGE);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    json!({"code": code, "message": &message[..end]})
}

/// The most of an upstream's error message a caller is shown.
const MAX_DETAIL_MESSAGE: usize = 1024;

/// The answer of a capability whose upstream cannot be reached now.
fn unavailable(kind: CapabilityKind) -> Answer {
    failed(kind, code::UNAVAILABLE, true)
}

/// A relayed call that ended without the upstream's answer: a tool error for a tool, a
/// failure for a prompt or a read.
fn failed(kind: CapabilityKind, code: &str, retryable: bool) -> Answer {
    match kind {
        CapabilityKind::Tool => Answer::ToolError { code: code.into(), retryable, content: None, detail: None },
        _ => Answer::Failure { code: code.into(), detail: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_parameters_become_headers() {
        let params = vec![
            ParamHeader { name: "Region".into(), path: vec!["region".into()], ty: ParamType::String },
            ParamHeader { name: "N".into(), path: vec!["opts".into(), "n".into()], ty: ParamType::Integer },
            ParamHeader { name: "Missing".into(), path: vec!["absent".into()], ty: ParamType::Boolean },
        ];
        let arguments = json!({"region": "eu-west", "opts": {"n": 3}});
        assert_eq!(param_headers(&params, &arguments), [("Region".into(), "eu-west".into()), ("N".into(), "3".into())]);
    }

    #[test]
    fn an_error_detail_keeps_at_most_its_bound_on_a_character_boundary() {
        assert_eq!(error_detail(-32000, "nope"), json!({"code": -32000, "message": "nope"}));
        let long = "é".repeat(MAX_DETAIL_MESSAGE);
        let cut = error_detail(1, &long);
        let message = cut["message"].as_str().unwrap();
        assert_eq!(message.len(), MAX_DETAIL_MESSAGE);
        assert!(long.starts_with(message));
    }

    #[test]
    fn trace_context_travels_in_meta() {
        let mut params = Map::new();
        with_trace(&mut params, &TraceContext { traceparent: Some("00-ab-cd-01".into()), ..TraceContext::default() });
        assert_eq!(Value::Object(params), json!({"_meta": {"traceparent": "00-ab-cd-01"}}));
        let mut none = Map::new();
        with_trace(&mut none, &TraceContext::default());
        assert!(none.is_empty());
    }
}
