//! An HTTP client of the test server: requests, responses, sessions opened and SSE read.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{PROTOCOL, TestServer};

/// A request under construction: a modern POST by default.
#[derive(Clone)]
pub struct Req {
    pub method: reqwest::Method,
    pub path: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Req {
    /// A POST with the standard media headers and no body.
    pub fn post() -> Self {
        Self {
            method: reqwest::Method::POST,
            path: "/mcp".into(),
            headers: vec![
                ("content-type".into(), b"application/json".to_vec()),
                ("accept".into(), b"application/json, text/event-stream".to_vec()),
            ],
            body: Vec::new(),
        }
    }

    /// A complete modern request for `method` with `params` (to which `_meta` is added):
    /// media headers, `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` when the
    /// params name a tool.
    pub fn modern(method: &str, params: Value) -> Self {
        let mut params = params;
        params["_meta"] = meta();
        let name = params.get("name").and_then(Value::as_str).map(str::to_owned);

        let mut request = Self::post()
            .header("MCP-Protocol-Version", PROTOCOL)
            .header("Mcp-Method", method)
            .json(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
        if let Some(name) = name {
            request = request.header("Mcp-Name", &name);
        }
        request
    }

    /// A modern `tools/call` of `name` with `arguments`.
    pub fn call(name: &str, arguments: Value) -> Self {
        Self::modern("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// A reqwest builder with this request's method and headers, and no body yet.
    pub fn builder(&self, client: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
        let mut builder = client.request(self.method.clone(), url);
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), reqwest::header::HeaderValue::from_bytes(value).unwrap());
        }
        builder
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.as_bytes().to_vec()));
        self
    }

    pub fn header_bytes(mut self, name: &str, value: &[u8]) -> Self {
        self.headers.push((name.to_owned(), value.to_vec()));
        self
    }

    /// Removes every header called `name` (ignoring case).
    pub fn without(mut self, name: &str) -> Self {
        self.headers.retain(|(have, _)| !have.eq_ignore_ascii_case(name));
        self
    }

    /// Replaces header `name` with `value`.
    pub fn replace(self, name: &str, value: &str) -> Self {
        self.without(name).header(name, value)
    }

    pub fn json(mut self, body: Value) -> Self {
        self.body = serde_json::to_vec(&body).unwrap();
        self
    }

    pub fn raw(mut self, body: &str) -> Self {
        self.body = body.as_bytes().to_vec();
        self
    }

    pub fn method(mut self, method: reqwest::Method) -> Self {
        self.method = method;
        self
    }

    pub fn path(mut self, path: &str) -> Self {
        self.path = path.to_owned();
        self
    }
}

/// The modern `_meta` every request carries.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bondry-tests", "version": "0"}
    })
}

/// A response, read whole.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Resp {
    pub(crate) async fn read(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap().to_vec();
        Self { status, headers, body }
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// Asserts status and the exact JSON-RPC error (and that `id` is as given).
    #[track_caller]
    pub fn assert_error(&self, status: u16, id: Option<Value>, code: i64, message: &str) -> Value {
        assert_eq!(self.status, status, "status of {}", self.text());
        assert_eq!(self.header("content-type"), Some("application/json"));
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body.get("id").cloned(), id, "id of {body}");
        assert_eq!(body["error"]["code"], code, "code of {body}");
        assert_eq!(body["error"]["message"], message, "message of {body}");
        assert!(body.get("result").is_none());
        body["error"].get("data").cloned().unwrap_or(Value::Null)
    }

    /// Asserts a 200 result for id 1 and returns it.
    #[track_caller]
    pub fn assert_result(&self) -> Value {
        assert_eq!(self.status, 200, "status of {}", self.text());
        let body = self.json();
        assert_eq!(body["id"], 1, "{body}");
        assert!(body.get("error").is_none(), "{body}");
        body["result"].clone()
    }
}

/// A JSON-RPC request with id 1.
pub fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// An `initialize` offering `version` and declaring `capabilities`.
pub fn initialize_request(version: &str, capabilities: Value) -> Req {
    Req::post().json(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}
    }))
}

/// Opens a 2025-11-25 session declaring no client capabilities; returns its id.
pub async fn open(server: &TestServer) -> String {
    open_with(server, json!({})).await
}

/// Opens a 2025-11-25 session declaring `capabilities`; returns its id.
pub async fn open_with(server: &TestServer, capabilities: Value) -> String {
    open_at(server, "2025-11-25", capabilities).await
}

/// Opens a session at `version` declaring `capabilities`, and sends
/// `notifications/initialized`; returns its id.
pub async fn open_at(server: &TestServer, version: &str, capabilities: Value) -> String {
    let response = server.send(initialize_request(version, capabilities)).await;
    assert_eq!(response.status, 200, "{}", response.text());
    let sid = response.header("mcp-session-id").expect("a session id").to_owned();
    let initialized =
        server.send(in_session(&sid, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))).await;
    assert_eq!(initialized.status, 202);
    sid
}

/// A POST inside session `sid`.
pub fn in_session(sid: &str, body: Value) -> Req {
    Req::post().header("Mcp-Session-Id", sid).json(body)
}

/// The JSON-RPC messages of an event stream body, in order (comments and empty events skipped).
pub fn sse_messages(body: &str) -> Vec<Value> {
    body.split("\n\n").filter_map(event_data).collect()
}

/// The JSON of one event's `data` lines, if it has any.
pub fn event_data(event: &str) -> Option<Value> {
    let data: Vec<&str> = event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    if data.is_empty() {
        return None;
    }
    Some(serde_json::from_str(&data.join("\n")).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {event:?}")))
}

/// Reads an open event stream one message at a time.
pub struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    pub fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self { response, buffer: String::new() }
    }

    /// The next message, or `None` if none arrives within `limit` or the stream ends.
    pub async fn next(&mut self, limit: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            while let Some(at) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..at + 2).collect();
                if let Some(message) = event_data(&event) {
                    return Some(message);
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk()).await.ok()?.ok()??;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}
