//! The adapter target's two ends: reading a request from fuzzer bytes, and checking
//! what the adapter answers.

use std::collections::BTreeMap;

use bondry_core::capability::CapabilityKind;
use bondry_core::dispatch::Outcome;
use bondry_core::handler::{
    Answer, ContentBlock, InputKind, InputRequest, Message, ResourceBody, ResourceContents, Role,
};
use bondry_mcp_proto::{Call, Reply};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::{Value, json};

use crate::world::World;

/// A request as the runtime hands it over.
pub struct Request {
    pub method: Method,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// Reads `METHOD\nName: value\n...\n\nbody`. Header lines HTTP cannot carry are
/// dropped, as they never reach the adapter; `$S0`..`$S5` become the world's session ids.
pub fn request(text: &[u8], tokens: &[String]) -> Option<Request> {
    let (head, body) = match find(text, b"\n\n") {
        Some(at) => (&text[..at], &text[at + 2..]),
        None => (text, &[][..]),
    };
    let mut lines = head.split(|&b| b == b'\n').map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    let method = Method::from_bytes(lines.next()?).ok()?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let value = substitute(line[colon + 1..].trim_ascii_start(), tokens);
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(&value)) {
            headers.append(name, value);
        }
    }
    // The runtime removes credentials before the adapter sees the request.
    for name in [http::header::AUTHORIZATION, http::header::PROXY_AUTHORIZATION, http::header::COOKIE] {
        headers.remove(name);
    }
    Some(Request { method, headers, body: substitute(body, tokens) })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// Replaces each `$S<digit>` naming one of `tokens` by that token.
fn substitute(bytes: &[u8], tokens: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let token = match bytes[at..] {
            [b'$', b'S', digit, ..] if digit.is_ascii_digit() => tokens.get(usize::from(digit - b'0')),
            _ => None,
        };
        match token {
            Some(token) => {
                out.extend_from_slice(token.as_bytes());
                at += 3;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    out
}

/// The outcome `choice` picks for `call`: mostly what running it through the core gives,
/// else a canned one, a multi-round request's among them.
pub fn outcome(choice: u8, call: &Call) -> Outcome {
    let text = |text: &str| ContentBlock::Text { text: text.into() };
    let ask = |kind, params, state| {
        let requests = BTreeMap::from([("q".to_owned(), InputRequest { kind, params })]);
        Outcome::Answered(Answer::InputRequired { requests, state })
    };
    match choice % 8 {
        0..=2 => crate::world::invoked(call),
        3 => Outcome::Failed { code: "upstream_down".into() },
        4 => ask(
            InputKind::Elicitation,
            json!({"message": "Which one?", "requestedSchema": {"type": "object"}}),
            Some(json!({"round": 1})),
        ),
        5 => ask(InputKind::Roots, json!({}), None),
        6 => {
            Outcome::Answered(Answer::ToolError { code: "quota".into(), retryable: true, content: None, detail: None })
        }
        _ => Outcome::Answered(match call.capability().kind() {
            CapabilityKind::Tool => Answer::Content { blocks: vec![text("done")], structured: Some(json!({})) },
            CapabilityKind::Prompt => Answer::Messages {
                description: None,
                messages: vec![Message { role: Role::Assistant, content: text("hi") }],
            },
            CapabilityKind::Resource | CapabilityKind::ResourceTemplate => Answer::Contents {
                items: vec![ResourceContents {
                    uri: "test://static/one".into(),
                    mime_type: Some("text/plain".into()),
                    body: ResourceBody::Blob("AP8=".into()),
                }],
            },
        }),
    }
}

/// Asserts `reply` is one Bondry may send: a status of the error table (or 200, 202,
/// 204); a body that is empty or one JSON-RPC message; an error whose status and code
/// form a row of the table; an audit record that serialises. Returns the body.
pub fn check(reply: &Reply, world: &World) -> Value {
    let status = reply.response().status();
    assert!(world.statuses.contains(&status), "status {status} is not in the error table");
    if let Some(record) = reply.audit() {
        serde_json::to_string(record).expect("the audit record serialises");
    }
    let body = reply.response().body();
    if body.is_empty() {
        return Value::Null;
    }
    let message: Value = serde_json::from_slice(body).expect("the body is JSON");
    assert_eq!(message["jsonrpc"], "2.0", "not a JSON-RPC message: {message}");
    match (message.get("result"), message.get("error")) {
        (Some(_), None) => assert_eq!(status, http::StatusCode::OK, "a result with status {status}"),
        (None, Some(error)) => {
            let code = error["code"].as_i64().expect("an error has an integer code");
            assert!(
                world.error_rows.contains(&(status, code)),
                "status {status} with code {code} is no row of the table"
            );
        }
        _ => panic!("neither a result nor an error: {message}"),
    }
    message
}

/// `body` with `params.requestState` set to `state`: a multi-round request's retry.
pub fn retried(body: &[u8], state: &str) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(body).ok()?;
    message.get_mut("params")?.as_object_mut()?.insert("requestState".into(), json!(state));
    serde_json::to_vec(&message).ok()
}
