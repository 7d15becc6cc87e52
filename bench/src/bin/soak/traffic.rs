//! The MCP requests the soak sends, and what counts as a correct answer to each.
//!
//! Every answer is checked fully (status, and for JSON-RPC a `result` of the expected
//! shape), because a server that degrades under load tends to answer wrongly before it
//! answers slowly, and a leak of error paths would be invisible to a status-only check.

use serde_json::Value;

use crate::http::{Head, Response};

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
/// The handshake revision of the session churn.
pub const SESSION_REVISION: &str = "2025-11-25";
/// What `demo.echo` is asked to echo.
const ECHOED: &str = "hello";

/// The modern requests of the paced mix.
#[derive(Clone, Copy, Debug)]
pub enum Modern {
    Call,
    List,
    Discover,
}

impl Modern {
    /// The mix: seven calls, two lists, one discover in every ten requests.
    pub fn nth(n: u64) -> Modern {
        match n % 10 {
            0..=6 => Modern::Call,
            7 | 8 => Modern::List,
            _ => Modern::Discover,
        }
    }

    /// The request as bytes, headers included (written once, sent many times).
    pub fn request(self) -> Vec<u8> {
        match self {
            Modern::Call => modern(
                "tools/call",
                Some("demo.echo"),
                &format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"demo.echo","arguments":{{"text":"{ECHOED}"}},{META}}}}}"#
                ),
            ),
            Modern::List => modern(
                "tools/list",
                None,
                &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#),
            ),
            Modern::Discover => modern(
                "server/discover",
                None,
                &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#),
            ),
        }
    }

    /// Whether `response` is this request's correct answer.
    pub fn check(self, response: &Response) -> Result<(), String> {
        let result = json_result(response, 200)?;
        match self {
            Modern::Call => check_echo(&result),
            Modern::List => match result.get("tools").and_then(Value::as_array) {
                Some(tools) if tools.iter().any(|tool| tool["name"] == "demo.echo") => Ok(()),
                _ => Err(format!("tools/list without demo.echo: {result}")),
            },
            Modern::Discover => match result.get("capabilities") {
                Some(Value::Object(_)) => Ok(()),
                _ => Err(format!("server/discover without capabilities: {result}")),
            },
        }
    }
}

/// The `subscriptions/listen` request of a listen stream: tool list changes.
pub fn listen() -> Vec<u8> {
    modern(
        "subscriptions/listen",
        None,
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},{META}}}}}"#
        ),
    )
}

/// A listen stream's head: 200 and an event stream.
pub fn check_stream_head(head: &Head) -> Result<(), String> {
    let media = head.header("content-type").unwrap_or_default();
    if head.status != 200 || !media.starts_with("text/event-stream") {
        return Err(format!("subscriptions/listen answered {} {media:?}", head.status));
    }
    Ok(())
}

/// Whether the event-stream bytes so far hold the acknowledgement honouring tool list
/// changes: `Ok(false)` means not yet.
pub fn acknowledged(events: &[u8]) -> Result<bool, String> {
    let text = String::from_utf8_lossy(events);
    // The first event is whole once its blank line has arrived.
    let Some((first, _)) = text.split_once("\n\n") else {
        return Ok(false);
    };
    let Some(line) = first.lines().find_map(|line| line.strip_prefix("data:")) else {
        return Err(format!("the first event has no data: {first:?}"));
    };
    let message: Value = serde_json::from_str(line.trim()).map_err(|error| format!("a bad event: {error}"))?;
    let honoured = &message["params"]["notifications"]["toolsListChanged"];
    if message["method"] != "notifications/subscriptions/acknowledged" || honoured != true {
        return Err(format!("the first event is not the acknowledgement: {message}"));
    }
    Ok(true)
}

/// `initialize` at the handshake revision, on no session.
pub fn initialize() -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{SESSION_REVISION}","capabilities":{{}},"clientInfo":{{"name":"bondry-soak","version":"1"}}}}}}"#
    );
    post(&[], &body)
}

/// The session id an `initialize` answer opened.
pub fn check_initialized(response: &Response) -> Result<String, String> {
    let result = json_result(response, 200)?;
    if result["protocolVersion"] != SESSION_REVISION {
        return Err(format!("initialize answered another revision: {result}"));
    }
    response.head.header("mcp-session-id").map(str::to_owned).ok_or_else(|| "initialize without Mcp-Session-Id".into())
}

/// `notifications/initialized` in the session.
pub fn initialized(session: &str) -> Vec<u8> {
    post(&in_session(session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
}

/// A `tools/call` of `demo.echo` in the session.
pub fn session_call(session: &str) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"demo.echo","arguments":{{"text":"{ECHOED}"}}}}}}"#
    );
    post(&in_session(session), &body)
}

/// `DELETE` of the session.
pub fn delete(session: &str) -> Vec<u8> {
    let headers: String = in_session(session).iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
    format!("DELETE /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n{headers}content-length: 0\r\n\r\n").into_bytes()
}

/// The answer must have exactly `status` (202 and 204 have nothing else to check).
pub fn check_status(response: &Response, status: u16) -> Result<(), String> {
    if response.head.status != status {
        return Err(format!(
            "expected {status}, got {}: {}",
            response.head.status,
            String::from_utf8_lossy(&response.body)
        ));
    }
    Ok(())
}

/// A `demo.echo` result: not a tool error, and the text echoed.
pub fn check_echo(result: &Value) -> Result<(), String> {
    if result.get("isError") == Some(&Value::Bool(true)) || result["structuredContent"]["text"] != ECHOED {
        return Err(format!("demo.echo did not echo: {result}"));
    }
    Ok(())
}

/// The `result` of a JSON-RPC answer with `status`; a JSON-RPC error is a failure.
pub fn json_result(response: &Response, status: u16) -> Result<Value, String> {
    check_status(response, status)?;
    let message: Value =
        serde_json::from_slice(&response.body).map_err(|error| format!("the body is not JSON ({error})"))?;
    match message.get("result") {
        Some(result @ Value::Object(_)) if message.get("error").is_none() => Ok(result.clone()),
        _ => Err(format!("not a result: {message}")),
    }
}

fn in_session(session: &str) -> [(&'static str, String); 2] {
    [("mcp-session-id", session.to_owned()), ("mcp-protocol-version", SESSION_REVISION.to_owned())]
}

/// A modern POST, with the routing headers the revision requires.
fn modern(method: &str, name: Option<&str>, body: &str) -> Vec<u8> {
    let mut headers = vec![("mcp-protocol-version", "2026-07-28".to_owned()), ("mcp-method", method.to_owned())];
    headers.extend(name.map(|name| ("mcp-name", name.to_owned())));
    post(&headers, body)
}

fn post(headers: &[(&str, String)], body: &str) -> Vec<u8> {
    let headers: String = headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_mostly_calls() {
        let calls = (0..100).filter(|n| matches!(Modern::nth(*n), Modern::Call)).count();
        assert_eq!(calls, 70);
    }

    #[test]
    fn the_acknowledgement_is_recognised() {
        let ack = br#"event: message
data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true}}}

"#;
        assert_eq!(acknowledged(ack), Ok(true));
        assert_eq!(acknowledged(b"event: message\ndata: {\"json"), Ok(false));
        assert!(acknowledged(b"data: {\"method\":\"notifications/tools/list_changed\"}\n\n").is_err());
    }
}
