//! A service's answer read back into the core's: one JSON object of one answer kind, or
//! the failure the caller is told instead. No service text but a tool error's own content
//! reaches the caller.

use std::collections::BTreeMap;

use bondry_core::capability::CapabilityKind;
use bondry_core::handler::{
    Answer, ContentBlock, InputKind, InputRequest, Message, ResourceBody, ResourceContents, Role,
};
use bondry_mcp_proto::input;
use serde_json::{Map, Value, json};

pub use crate::failure::{Failure, code};

/// What the caller of a procedure may be asked for on its behalf.
#[derive(Debug, Clone, Copy)]
pub struct Asking<'a> {
    /// The client capabilities the caller declared.
    pub declared: &'a Value,
    /// The stanza's `allow_url_elicitation`.
    pub allow_url_elicitation: bool,
}

/// The answer a service gave with `status`, `content_type` and `body`, for a capability of
/// `kind`: its own answer, or a [`Failure`].
pub fn read(
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    kind: CapabilityKind,
    asking: Asking<'_>,
) -> Result<Answer, Failure> {
    match status {
        200 => {}
        400..=499 => return Err(Failure::Refused(status)),
        500..=599 => return Err(Failure::Unavailable(format!("status {status}"))),
        other => return Err(Failure::Invalid(format!("status {other}"))),
    }
    let media_type = content_type.and_then(|value| value.split(';').next()).map(str::trim);
    if !media_type.is_some_and(|media_type| media_type.eq_ignore_ascii_case("application/json")) {
        return Err(Failure::Invalid("a body that is not application/json".into()));
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|error| Failure::Invalid(format!("a body that is not JSON: {error}")))?;
    let answer = answer(value, asking).map_err(Failure::Invalid)?;
    if !answer.allowed_for(kind) {
        return Err(Failure::Invalid(format!("an answer a {} may not give", kind.as_str())));
    }
    Ok(answer)
}

/// The answer kind `value` holds: one object of one kind, with no other member.
fn answer(value: Value, asking: Asking<'_>) -> Result<Answer, String> {
    let Value::Object(mut object) = value else { return Err("an answer that is not an object".into()) };
    let kinds = ["result", "content", "messages", "contents", "error", "input_required"];
    let given: Vec<&str> = kinds.into_iter().filter(|kind| object.contains_key(*kind)).collect();
    let [kind] = given[..] else { return Err(format!("an answer of {} kinds, not one", given.len())) };
    let allowed: &[&str] = match kind {
        "content" => &["content", "structured"],
        "messages" => &["messages", "description"],
        other => &[other][..],
    };
    if let Some(stray) = object.keys().find(|key| !allowed.contains(&key.as_str())) {
        return Err(format!("a {kind:?} answer with a member {:?}", cut(stray)));
    }
    let mut take = |key: &str| object.remove(key);
    match kind {
        "result" => Ok(Answer::Value(take("result").unwrap_or_default())),
        "content" => {
            Ok(Answer::Content { blocks: blocks(take("content").unwrap_or_default())?, structured: take("structured") })
        }
        "messages" => {
            let description = match take("description") {
                None => None,
                Some(Value::String(description)) => Some(description),
                Some(_) => return Err("a description that is not a string".into()),
            };
            Ok(Answer::Messages { description, messages: messages(take("messages").unwrap_or_default())? })
        }
        "contents" => Ok(Answer::Contents { items: list(take("contents").unwrap_or_default(), contents)? }),
        "error" => tool_error(take("error").unwrap_or_default()),
        _ => input_required(take("input_required").unwrap_or_default(), asking),
    }
}

/// A service's own text as a failure's reason may quote it, in the log: no more than its
/// first 64 characters, so that a hostile answer cannot flood the log.
fn cut(text: &str) -> &str {
    text.char_indices().nth(64).map_or(text, |(end, _)| &text[..end])
}

fn list<T>(value: Value, each: fn(Value) -> Result<T, String>) -> Result<Vec<T>, String> {
    let Value::Array(items) = value else { return Err("a list that is not an array".into()) };
    items.into_iter().map(each).collect()
}

fn blocks(value: Value) -> Result<Vec<ContentBlock>, String> {
    list(value, block)
}

fn object(value: Value, what: &str) -> Result<Map<String, Value>, String> {
    match value {
        Value::Object(object) => Ok(object),
        _ => Err(format!("{what} that is not an object")),
    }
}

fn text(object: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    match object.remove(key) {
        Some(Value::String(text)) => Ok(text),
        _ => Err(format!("a {key:?} that is not a string")),
    }
}

fn optional_text(object: &mut Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match object.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(format!("a {key:?} that is not a string")),
    }
}

/// One content block in MCP's wire form.
fn block(value: Value) -> Result<ContentBlock, String> {
    let mut block = object(value, "a content block")?;
    match text(&mut block, "type")?.as_str() {
        "text" => Ok(ContentBlock::Text { text: text(&mut block, "text")? }),
        "image" => {
            Ok(ContentBlock::Image { data: text(&mut block, "data")?, mime_type: text(&mut block, "mimeType")? })
        }
        "audio" => {
            Ok(ContentBlock::Audio { data: text(&mut block, "data")?, mime_type: text(&mut block, "mimeType")? })
        }
        "resource" => Ok(ContentBlock::Resource(contents(block.remove("resource").unwrap_or_default())?)),
        "resource_link" => Ok(ContentBlock::ResourceLink {
            uri: text(&mut block, "uri")?,
            name: text(&mut block, "name")?,
            mime_type: optional_text(&mut block, "mimeType")?,
            description: optional_text(&mut block, "description")?,
        }),
        other => Err(format!("a content block of type {:?}", cut(other))),
    }
}

/// One resource's contents: its URI, and its text or its bytes in base64.
fn contents(value: Value) -> Result<ResourceContents, String> {
    let mut contents = object(value, "resource contents")?;
    let uri = text(&mut contents, "uri")?;
    let mime_type = optional_text(&mut contents, "mimeType")?;
    let body = match (optional_text(&mut contents, "text")?, optional_text(&mut contents, "blob")?) {
        (Some(text), None) => ResourceBody::Text(text),
        (None, Some(blob)) => ResourceBody::Blob(blob),
        _ => return Err("resource contents with not exactly one of text and blob".into()),
    };
    Ok(ResourceContents { uri, mime_type, body })
}

fn messages(value: Value) -> Result<Vec<Message>, String> {
    list(value, |value| {
        let mut message = object(value, "a message")?;
        let role = match text(&mut message, "role")?.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => return Err(format!("a message of role {:?}", cut(other))),
        };
        Ok(Message { role, content: block(message.remove("content").unwrap_or_default())? })
    })
}

/// A tool error: a stable code of `[a-z0-9_]{1,64}`, whether a retry may help, and what
/// the model may read.
fn tool_error(value: Value) -> Result<Answer, String> {
    let mut error = object(value, "an error")?;
    let code = text(&mut error, "code")?;
    let valid = (1..=64).contains(&code.len())
        && code.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        return Err("an error code that is not 1 to 64 of [a-z0-9_]".into());
    }
    let retryable = match error.remove("retryable") {
        Some(Value::Bool(retryable)) => retryable,
        _ => return Err("an error whose retryable is not a boolean".into()),
    };
    let content = error.remove("content").map(blocks).transpose()?;
    Ok(Answer::ToolError { code, retryable, content, detail: None })
}

/// Input the service needs from the caller: each request one the caller may be asked on
/// its behalf, and the state the service wants back on the retry.
fn input_required(value: Value, asking: Asking<'_>) -> Result<Answer, String> {
    let mut asked = object(value, "input_required")?;
    let requests = object(asked.remove("requests").unwrap_or_default(), "requests")?;
    if requests.is_empty() {
        return Err("input_required without requests".into());
    }
    let requests = requests
        .into_iter()
        .map(|(key, request)| Ok((key, input_request(request, asking)?)))
        .collect::<Result<BTreeMap<_, _>, String>>()?;
    Ok(Answer::InputRequired { requests, state: asked.remove("state") })
}

/// One input request, held to what a backend may ask: elicitation, sampling without any
/// other server's context, roots; URL-mode elicitation only where the stanza allows it;
/// only of kinds the caller declared.
fn input_request(value: Value, asking: Asking<'_>) -> Result<InputRequest, String> {
    let mut request = object(value, "an input request")?;
    let method = text(&mut request, "method")?;
    let kind = input::kind(&method).ok_or_else(|| format!("an input request of method {:?}", cut(&method)))?;
    let mut params = object(request.remove("params").unwrap_or_else(|| json!({})), "params")?;
    params.remove("_meta");
    match kind {
        InputKind::Sampling => {
            params.insert("includeContext".into(), json!("none"));
        }
        InputKind::Elicitation
            if params.get("mode").and_then(Value::as_str) == Some("url") && !asking.allow_url_elicitation =>
        {
            return Err("a URL-mode elicitation, which the stanza does not allow".into());
        }
        _ => {}
    }
    let request = InputRequest { kind, params: Value::Object(params) };
    if !input::declared(&request, asking.declared) {
        return Err(format!("a {method} request the caller did not declare"));
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: Option<&str> = Some("application/json; charset=utf-8");

    fn asking(declared: &Value) -> Asking<'_> {
        Asking { declared, allow_url_elicitation: false }
    }

    fn read_tool(body: Value) -> Result<Answer, Failure> {
        read(200, JSON, body.to_string().as_bytes(), CapabilityKind::Tool, asking(&json!({})))
    }

    #[test]
    fn a_reason_quotes_no_more_than_64_characters_of_the_services_text() {
        let long = "é".repeat(10_000);
        let Err(Failure::Invalid(reason)) = read_tool(json!({"result": 1, long.clone(): 2})) else {
            panic!("a stray member is invalid")
        };
        assert_eq!(reason, format!("a \"result\" answer with a member {:?}", "é".repeat(64)));
        let Err(Failure::Invalid(reason)) = read_tool(json!({"content": [{"type": long}]})) else { panic!() };
        assert!(reason.chars().count() < 100, "{reason}");
    }

    #[test]
    fn each_answer_kind_is_read_as_the_cores() {
        assert_eq!(read_tool(json!({"result": {"n": 1}})), Ok(Answer::Value(json!({"n": 1}))));
        assert_eq!(
            read_tool(json!({"content": [{"type": "text", "text": "hi"}], "structured": {"n": 1}})),
            Ok(Answer::Content {
                blocks: vec![ContentBlock::Text { text: "hi".into() }],
                structured: Some(json!({"n": 1}))
            })
        );
        assert_eq!(
            read_tool(
                json!({"error": {"code": "not_found", "retryable": false, "content": [{"type": "text", "text": "no"}]}})
            ),
            Ok(Answer::ToolError {
                code: "not_found".into(),
                retryable: false,
                content: Some(vec![ContentBlock::Text { text: "no".into() }]),
                detail: None
            })
        );
        let prompt =
            json!({"description": "d", "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}]});
        assert_eq!(
            read(200, JSON, prompt.to_string().as_bytes(), CapabilityKind::Prompt, asking(&json!({}))),
            Ok(Answer::Messages {
                description: Some("d".into()),
                messages: vec![Message { role: Role::User, content: ContentBlock::Text { text: "q".into() } }]
            })
        );
        let read_body = json!({"contents": [{"uri": "x://a", "mimeType": "text/plain", "text": "a"}, {"uri": "x://b", "blob": "AA=="}]});
        let Ok(Answer::Contents { items }) =
            read(200, JSON, read_body.to_string().as_bytes(), CapabilityKind::Resource, asking(&json!({})))
        else {
            panic!("not contents")
        };
        assert_eq!(
            items[1],
            ResourceContents { uri: "x://b".into(), mime_type: None, body: ResourceBody::Blob("AA==".into()) }
        );
    }

    #[test]
    fn input_requests_are_held_to_what_a_backend_may_ask() {
        let declared = json!({"elicitation": {}, "sampling": {}});
        let asked = |requests: Value| {
            let body = json!({"input_required": {"requests": requests, "state": {"round": 1}}});
            read(200, JSON, body.to_string().as_bytes(), CapabilityKind::Tool, asking(&declared))
        };
        let Ok(Answer::InputRequired { requests, state }) = asked(json!({
            "name": {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {"type": "object"}}},
            "llm": {"method": "sampling/createMessage", "params": {"messages": [], "includeContext": "allServers", "_meta": {"k": 1}}},
        })) else {
            panic!("not input_required")
        };
        assert_eq!(state, Some(json!({"round": 1})));
        assert_eq!(
            requests["llm"].params,
            json!({"messages": [], "includeContext": "none"}),
            "no other server's context"
        );
        assert_eq!(requests["name"].kind, InputKind::Elicitation);
        let invalid = |requests| asked(requests).unwrap_err();
        assert_eq!(invalid(json!({"r": {"method": "roots/list"}})).code(), code::INVALID, "roots undeclared");
        assert_eq!(invalid(json!({"t": {"method": "tools/call", "params": {}}})).code(), code::INVALID);
        let url = json!({"u": {"method": "elicitation/create", "params": {"mode": "url", "url": "https://x", "message": "m"}}});
        assert_eq!(invalid(url).code(), code::INVALID, "URL mode only where allowed");
        assert_eq!(invalid(json!({})).code(), code::INVALID, "no requests");
    }

    #[test]
    fn anything_else_is_a_failure_with_its_code() {
        let tool = |status, content_type, body: &str| {
            read(status, content_type, body.as_bytes(), CapabilityKind::Tool, asking(&json!({})))
        };
        assert_eq!(tool(404, JSON, "{}"), Err(Failure::Refused(404)));
        assert_eq!(tool(503, JSON, "{}").unwrap_err().code(), code::UNAVAILABLE);
        assert_eq!(tool(302, JSON, "{}").unwrap_err().code(), code::INVALID);
        assert_eq!(tool(200, Some("text/plain"), "{\"result\": 1}").unwrap_err().code(), code::INVALID);
        assert_eq!(tool(200, None, "{\"result\": 1}").unwrap_err().code(), code::INVALID);
        assert_eq!(tool(200, JSON, "not json").unwrap_err().code(), code::INVALID);
        assert_eq!(tool(200, JSON, "{\"result\": 1, \"content\": []}").unwrap_err().code(), code::INVALID);
        assert_eq!(tool(200, JSON, "{\"answer\": 1}").unwrap_err().code(), code::INVALID);
        assert_eq!(tool(200, JSON, "{\"result\": 1, \"extra\": 2}").unwrap_err().code(), code::INVALID);
        assert_eq!(
            tool(200, JSON, r#"{"error": {"code": "Bad Code", "retryable": false}}"#).unwrap_err().code(),
            code::INVALID
        );
        assert_eq!(
            tool(200, JSON, r#"{"messages": []}"#).unwrap_err().code(),
            code::INVALID,
            "a tool gives no messages"
        );
        assert_eq!(tool(200, JSON, r#"{"content": [{"type": "video"}]}"#).unwrap_err().code(), code::INVALID);
    }

    #[test]
    fn an_unavailable_service_is_a_retryable_tool_error_for_a_tool_and_a_failure_elsewhere() {
        let failure = Failure::Unavailable("refused".into());
        assert_eq!(
            failure.answer(CapabilityKind::Tool),
            Answer::ToolError { code: code::UNAVAILABLE.into(), retryable: true, content: None, detail: None }
        );
        assert_eq!(
            failure.answer(CapabilityKind::Prompt),
            Answer::Failure { code: code::UNAVAILABLE.into(), detail: None }
        );
        assert_eq!(
            Failure::Refused(403).answer(CapabilityKind::Tool),
            Answer::Failure { code: code::REFUSED.into(), detail: None }
        );
    }
}
