//! `tools/list` and `tools/call`: listing a caller's view, the checks a call passes before
//! dispatch, and shaping the outcome into a `CallToolResult`.

use bondry_core::audit::AuditOutcome;
use bondry_core::capability::CapabilityKind;
use bondry_core::dispatch::{self, Outcome, Resolution};
use bondry_core::handler::Answer;
use http::HeaderMap;
use serde_json::{Map, Value, json};

use crate::call::Admitted;
use crate::error::{Error, HeaderFault};
use crate::headers::{self, param_header_display};
use crate::lint::{ParamHeader, ParamType, ToolWire};
use crate::request::Request;
use crate::revision::Era;
use crate::vocabulary::{
    CALL_TOOL, ERROR_CODE_KEY, ERROR_DETAIL_KEY, FAILURE_TEXT, INVOCATION_ID_KEY, MISSING_CLIENT_CAPABILITY,
    RESERVED_TOOL_IDS, RETRYABLE_KEY, SEARCH_TOOL, stable_code,
};
use crate::{ADAPTER, Call, Csprng, Reply, Step, search, shape};

/// A `tools/call`: refused before dispatch, or a [`Call`] to run. `bondry.search` and
/// `bondry.call`, for a caller whose view holds tools found by searching, are answered
/// here and stand for the tool they name.
pub fn call(request: Request<'_>, rng: &mut dyn Csprng) -> Step {
    let name = request.params.get("name").and_then(Value::as_str).unwrap_or_default();
    if !RESERVED_TOOL_IDS.contains(&name) {
        return direct(request, rng);
    }
    let view = request.realm.view(request.principal, ADAPTER, CapabilityKind::Tool);
    let Some(tool) = search::reached(&view, name) else { return direct(request, rng) };
    let arguments = match search::arguments(tool, request.params) {
        Ok(arguments) => arguments,
        Err(None) => {
            let error = Error::InvalidParams { id: request.id.clone(), detail: "params.arguments must be an object" };
            let record = request.audit(tool.id, AuditOutcome::InvalidInput);
            return Step::Reply(request.error(error).audited(record));
        }
        Err(Some(violations)) => {
            let outcome = Outcome::InvalidInput(violations);
            let result = call_result(outcome, None, &request.listener.server_meta(), tool.id, request.era());
            return Step::Reply(request.result(&result).audited(request.audit(tool.id, AuditOutcome::InvalidInput)));
        }
    };
    if tool.id == SEARCH_TOOL {
        let found = search::search(request.realm, &view, &arguments);
        let outcome = Outcome::Answered(Answer::Value(found));
        let result = call_result(outcome, None, &request.listener.server_meta(), tool.id, request.era());
        return Step::Reply(request.result(&result).audited(request.audit(tool.id, AuditOutcome::Succeeded)));
    }
    let inner = search::inner_params(request.params, &arguments);
    direct(Request { params: &inner, via: Some(CALL_TOOL), ..request }, rng)
}

/// A `tools/call` of the tool `params.name` names.
fn direct(request: Request<'_>, rng: &mut dyn Csprng) -> Step {
    match admit(&request) {
        Ok(admitted) => Step::Dispatch(Box::new(Call::new(request, admitted, rng))),
        Err(reply) => Step::Reply(*reply),
    }
}

/// The checks of a `tools/call` before dispatch, in this order: `name` (hidden answers as
/// missing), `arguments` and its `_mcp*` names, client capabilities, `Mcp-Param-*`.
fn admit(request: &Request<'_>) -> Result<Admitted, Box<Reply>> {
    let id = || request.id.clone();
    let Some(name) = request.params.get("name").and_then(Value::as_str) else {
        return Err(Box::new(request.error(Error::InvalidParams { id: id(), detail: "params.name must be a string" })));
    };
    let capability = match dispatch::resolve(request.realm, request.principal, ADAPTER, CapabilityKind::Tool, name) {
        Resolution::Visible(capability) => capability,
        Resolution::Hidden(reason) => {
            let reply = request.error(Error::UnknownTool { id: id(), name: name.to_owned() });
            return Err(Box::new(reply.audited(request.audit(name, reason.audit_outcome()))));
        }
    };
    let refuse = |error: Error| {
        let record = request.audit(name, AuditOutcome::InvalidInput);
        Box::new(request.error(error).audited(record))
    };
    let arguments = match request.params.get("arguments") {
        None => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => return Err(refuse(Error::InvalidParams { id: id(), detail: "params.arguments must be an object" })),
    };
    if arguments.keys().any(|key| key.starts_with("_mcp")) {
        return Err(refuse(Error::InvalidParams {
            id: id(),
            detail: "argument names starting with _mcp are reserved",
        }));
    }
    if let Some(missing) = request.missing_client_capabilities(&capability) {
        if request.era() == Era::Handshake {
            // The capabilities were fixed at `initialize`: a tool error the model can read.
            let refused = Outcome::Answered(Answer::ToolError {
                code: MISSING_CLIENT_CAPABILITY.into(),
                retryable: false,
                content: None,
                detail: None,
            });
            let result = call_result(refused, None, &request.listener.server_meta(), name, Era::Handshake);
            let record = request.audit(name, AuditOutcome::InvalidInput);
            return Err(Box::new(request.result(&result).audited(record)));
        }
        return Err(refuse(Error::MissingClientCapability { id: id(), missing }));
    }
    if request.era() == Era::Handshake {
        // Routing headers and multi-round-trip fields belong to the modern era.
        return Ok(Admitted::new(capability, Value::Object(arguments)));
    }
    // Through `bondry.call` the headers name `bondry.call`, not this tool: its own
    // `Mcp-Param-*` are neither required nor compared.
    if request.via.is_none()
        && let Some(wire) = capability.attachment::<ToolWire>(ADAPTER)
        && let Err((header, fault)) = check_param_headers(request.headers, &wire.params, &arguments)
    {
        return Err(refuse(Error::HeaderMismatch { id: Some(id()), header, fault }));
    }
    let arguments = Value::Object(arguments);
    let (retry, continuation) = request.retry(&capability, &arguments).map_err(refuse)?;
    Ok(Admitted { retry, continuation, ..Admitted::new(capability, arguments) })
}

/// Compares every declared `Mcp-Param-*` header with the argument it mirrors.
fn check_param_headers(
    headers: &HeaderMap,
    params: &[ParamHeader],
    arguments: &Map<String, Value>,
) -> Result<(), (String, HeaderFault)> {
    for param in params {
        let display = param_header_display(&param.name);
        let header_name = format!("{}{}", headers::PARAM_PREFIX, param.name.to_ascii_lowercase());
        let fail = |fault| Err((display.clone(), fault));
        let header = headers::decoded(headers, &header_name).map_err(|fault| (display.clone(), fault))?;
        let value = param
            .path
            .split_first()
            .and_then(|(first, rest)| rest.iter().try_fold(arguments.get(first)?, |value, segment| value.get(segment)));
        let value = match value {
            None | Some(Value::Null) => {
                if header.is_some() {
                    return fail(HeaderFault::Mismatch);
                }
                continue;
            }
            Some(value) => value,
        };
        let expected = match (param.ty, value) {
            (ParamType::String, Value::String(text)) => Mirrored::Text(text),
            (ParamType::Integer, Value::Number(number)) => match exact_integer(number) {
                Some(integer) => Mirrored::Integer(integer),
                None => continue,
            },
            (ParamType::Boolean, Value::Bool(flag)) => Mirrored::Text(if *flag { "true" } else { "false" }),
            // A value of the wrong type fails argument validation instead.
            _ => continue,
        };
        let matches = |header: &str| match expected {
            Mirrored::Text(text) => header == text,
            Mirrored::Integer(integer) => parse_integer(header) == Some(integer),
        };
        match header {
            None => return fail(HeaderFault::Missing),
            Some(header) if !matches(&header) => return fail(HeaderFault::Mismatch),
            Some(_) => {}
        }
    }
    Ok(())
}

/// What a mirrored header must say.
enum Mirrored<'a> {
    Text(&'a str),
    Integer(i128),
}

/// The exact integer a JSON number denotes, if it denotes one (`42` and `42.0` alike).
fn exact_integer(number: &serde_json::Number) -> Option<i128> {
    if let Some(integer) = number.as_i64() {
        return Some(integer.into());
    }
    if let Some(integer) = number.as_u64() {
        return Some(integer.into());
    }
    number.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e38).map(|f| f as i128)
}

/// A header's decimal integer, compared numerically: `42`, `-7`, `42.0`.
fn parse_integer(header: &str) -> Option<i128> {
    let (whole, fraction) = match header.split_once('.') {
        Some((_, "")) => return None,
        Some((whole, fraction)) => (whole, fraction),
        None => (header, ""),
    };
    let digits = whole.strip_prefix('-').unwrap_or(whole);
    let well_formed =
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && fraction.bytes().all(|b| b == b'0');
    if well_formed { whole.parse().ok() } else { None }
}

/// The `CallToolResult` for an outcome in `era`. Handshake-era results carry no
/// `resultType` and no server info, and structured content only when it is an object.
pub fn call_result(
    outcome: Outcome,
    invocation: Option<&str>,
    server_meta: &Value,
    capability: &str,
    era: Era,
) -> Value {
    let meta = |error: Option<(&str, bool)>| {
        let mut meta = match era {
            Era::Modern => server_meta.clone(),
            Era::Handshake => json!({}),
        };
        if let Some(invocation) = invocation {
            meta[INVOCATION_ID_KEY] = json!(invocation);
        }
        if let Some((code, retryable)) = error {
            meta[ERROR_CODE_KEY] = json!(stable_code(code));
            meta[RETRYABLE_KEY] = json!(retryable);
        }
        meta
    };
    // Built by moving each part in: `json!` would serialise each into a copy.
    let answered = |content: Vec<Value>, structured: Option<Value>| {
        let mut result =
            Map::from_iter([("content".to_owned(), Value::Array(content)), ("_meta".to_owned(), meta(None))]);
        if let Some(structured) = structured.filter(|value| era == Era::Modern || value.is_object()) {
            result.insert("structuredContent".into(), structured);
        }
        Value::Object(result)
    };
    let failure = |code: &str, retryable: bool, content: Vec<Value>| {
        Value::Object(Map::from_iter([
            ("content".to_owned(), Value::Array(content)),
            ("isError".to_owned(), Value::Bool(true)),
            ("_meta".to_owned(), meta(Some((code, retryable)))),
        ]))
    };
    let generic = || vec![json!({"type": "text", "text": FAILURE_TEXT})];
    let mut result = match outcome {
        Outcome::Answered(Answer::Value(value)) => answered(vec![shape::json_text(&value)], Some(value)),
        Outcome::Answered(Answer::Content { blocks, structured }) => {
            answered(blocks.iter().map(shape::content_block).collect(), structured)
        }
        Outcome::Answered(Answer::Relayed { result, .. }) => {
            let own = match meta(None) {
                Value::Object(own) => own,
                _ => Map::new(),
            };
            match shape::relayed(result, "content", &own) {
                Some(mut passed) => {
                    // Those revisions allow only an object as structured content.
                    if era == Era::Handshake && passed.get("structuredContent").is_some_and(|value| !value.is_object())
                    {
                        passed.remove("structuredContent");
                    }
                    Value::Object(passed)
                }
                None => failure(dispatch::failure::WRONG_ANSWER_KIND, false, generic()),
            }
        }
        Outcome::Answered(Answer::ToolError { code, retryable, content, detail }) => {
            let content =
                content.as_ref().map_or_else(generic, |blocks| blocks.iter().map(shape::content_block).collect());
            with_detail(failure(&code, retryable, content), detail)
        }
        Outcome::InvalidInput(violations) => {
            let text = format!("Invalid arguments for tool {capability}: {violations}");
            failure("invalid_input", false, vec![json!({"type": "text", "text": text})])
        }
        Outcome::Answered(Answer::Failure { code, detail }) => with_detail(failure(&code, false, generic()), detail),
        Outcome::Failed { code } => failure(&code, false, generic()),
        // Input requests are answered before a result is shaped (the `Conversation`'s
        // `input_required` in the modern era, the runtime's rounds in a session); and the core only answers a tool
        // with the kinds above.
        // Refused before a result is shaped in the modern era; in a session a tool error.
        Outcome::Answered(Answer::MissingClientCapability { .. }) => {
            failure(MISSING_CLIENT_CAPABILITY, false, generic())
        }
        Outcome::Answered(Answer::InputRequired { .. } | Answer::Messages { .. } | Answer::Contents { .. })
        | Outcome::Completed(_) => failure(dispatch::failure::WRONG_ANSWER_KIND, false, generic()),
    };
    if era == Era::Modern {
        result["resultType"] = json!("complete");
    }
    result
}

/// A tool error carrying what the handler chose to tell beside its code.
fn with_detail(mut result: Value, detail: Option<Value>) -> Value {
    if let Some(detail) = detail {
        result["_meta"][ERROR_DETAIL_KEY] = detail;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::HANDLER_FAILED;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        }
        map
    }

    fn param(name: &str, path: &[&str], ty: ParamType) -> ParamHeader {
        ParamHeader { name: name.into(), path: path.iter().map(|s| s.to_string()).collect(), ty }
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn param_headers_mirror_arguments() {
        let region = [param("Region", &["region"], ParamType::String)];
        let ok = |h: &[(&str, &str)], a: Value| check_param_headers(&headers(h), &region, &args(a));
        assert_eq!(ok(&[("mcp-param-region", "eu")], json!({"region": "eu"})), Ok(()));
        assert_eq!(ok(&[("Mcp-Param-Region", " =?base64?ZXU=?= ")], json!({"region": "eu"})), Ok(()));
        assert_eq!(ok(&[], json!({})), Ok(()));
        assert_eq!(ok(&[], json!({"region": null})), Ok(()));
        assert_eq!(ok(&[("mcp-param-other", "x")], json!({})), Ok(()));
        assert_eq!(ok(&[], json!({"region": 5})), Ok(()), "wrong type is left to validation");
        let fault = |h: &[(&str, &str)], a: Value| ok(h, a).unwrap_err().1;
        assert_eq!(fault(&[], json!({"region": "eu"})), HeaderFault::Missing);
        assert_eq!(fault(&[("mcp-param-region", "us")], json!({"region": "eu"})), HeaderFault::Mismatch);
        assert_eq!(fault(&[("mcp-param-region", "eu")], json!({})), HeaderFault::Mismatch);
        assert_eq!(fault(&[("mcp-param-region", "eu")], json!({"region": null})), HeaderFault::Mismatch);
        assert_eq!(fault(&[("mcp-param-region", "=?base64?ZXU?=")], json!({"region": "eu"})), HeaderFault::Invalid);
    }

    #[test]
    fn integers_compare_numerically_and_booleans_exactly() {
        let params = [param("N", &["o", "n"], ParamType::Integer), param("B", &["b"], ParamType::Boolean)];
        let check = |h: &[(&str, &str)], a: Value| check_param_headers(&headers(h), &params, &args(a));
        assert_eq!(
            check(&[("mcp-param-n", "42.0"), ("mcp-param-b", "true")], json!({"o": {"n": 42}, "b": true})),
            Ok(())
        );
        assert_eq!(check(&[("mcp-param-n", "-7")], json!({"o": {"n": -7}})), Ok(()));
        assert!(check(&[("mcp-param-n", "43")], json!({"o": {"n": 42}})).is_err());
        assert!(check(&[("mcp-param-b", "True")], json!({"b": true})).is_err());
        assert!(check(&[("mcp-param-n", "9007199254740992")], json!({"o": {"n": 9007199254740993_i64}})).is_err());
        assert_eq!(check(&[("mcp-param-n", "9007199254740993")], json!({"o": {"n": 9007199254740993_i64}})), Ok(()));
        for bad in ["4e1", "42.", "+42", "42.5", "4 2", "0x2a", ""] {
            assert!(check(&[("mcp-param-n", bad)], json!({"o": {"n": 42}})).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn error_codes_that_are_not_identifiers_are_replaced() {
        let meta = json!({});
        let code_of = |code: &str| {
            let result = call_result(Outcome::Failed { code: code.into() }, Some("i"), &meta, "t", Era::Modern);
            result["_meta"][ERROR_CODE_KEY].as_str().unwrap().to_owned()
        };
        assert_eq!(code_of("quota_exceeded"), "quota_exceeded");
        assert_eq!(code_of("upstream.timeout-2"), "upstream.timeout-2");
        for leaky in ["connect to http://10.0.0.7:80 refused", "Boom", "", &"x".repeat(65)] {
            assert_eq!(code_of(leaky), HANDLER_FAILED, "{leaky}");
        }
    }
}
