//! Test support: start the real server on an ephemeral loopback port and speak HTTP to it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bondry::assemble::{Overrides, assemble};
use bondry::builtins::{Builtin, Builtins, FnHandler};
use bondry::config;
use bondry_core::BoxFuture;
use bondry_core::handler::{Answer, ContentBlock, Handler, HandlerRequest, Message, Role};
use bondry_http_server::Running;
use bondry_http_server::audit::AuditWriter;
use serde_json::{Value, json};

pub const PROTOCOL: &str = "2026-07-28";

/// A running server with its audit file.
pub struct TestServer {
    pub addr: SocketAddr,
    running: Option<Running>,
    audit: Option<Arc<AuditWriter>>,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

/// The default test configuration with the listener serving only the modern revision.
pub fn modern_only_config() -> String {
    default_config().replace("page_size = 3\n", "page_size = 3\nprotocol_versions = [\"2026-07-28\"]\n")
}

/// The default test configuration: the demo realm plus the test handlers, all granted
/// to anonymous callers except `admin.*` and `hidden.*`; all three revisions served.
pub fn default_config() -> String {
    let mut text = String::from(
        r#"
shutdown_grace_ms = 2000
[listeners.main]
bind = "127.0.0.1:0"
max_body_bytes = 4096
page_size = 3

[realms.default]
anonymous_roles = ["demo"]

[[realms.default.roles]]
name = "demo"
grants = ["demo.*", "test.*"]
"#,
    );
    for handler in Builtins::demo().names().chain(test_builtins().names()) {
        text.push_str(&format!(
            "\n[[realms.default.capabilities]]\nid = \"{handler}\"\nkind = \"tool\"\nhandler = \"{handler}\"\n"
        ));
    }
    text
}

impl TestServer {
    pub async fn start() -> Self {
        Self::with_config(&default_config()).await
    }

    /// Starts a server from TOML text; the audit sink is a file in a fresh temp dir.
    pub async fn with_config(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("{text}\n[audit]\nsink = \"file\"\npath = \"audit.jsonl\"\n");
        let loaded = config::parse("test.toml", &text, dir.path().to_owned(), []).unwrap();
        let mut builtins = Builtins::demo();
        for name in test_builtins().names() {
            builtins.register(name, test_builtins().get(name).unwrap().clone());
        }
        let assembled = assemble(&loaded, &builtins, &Overrides::default(), true).unwrap();
        let running = bondry_http_server::start(assembled.server).await.unwrap();
        let addr = running.local_addrs()[0].1;
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        Self { addr, running: Some(running), audit: assembled.audit, dir, client }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The live registry of `realm`, as a host program reaches it.
    pub fn registry(&self, realm: &str) -> Arc<bondry_core::realm::Registry> {
        self.running.as_ref().unwrap().registry(realm).unwrap()
    }

    pub fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// Sends a request built by `request` to `path` (default `/mcp`).
    pub async fn send(&self, request: Req) -> Resp {
        let url = format!("http://{}{}", self.addr, request.path);
        let response = request.builder(&self.client, &url).body(request.body.clone()).send().await.unwrap();
        Resp::read(response).await
    }

    /// Stops the server, flushes the audit sink and returns its records.
    pub async fn stop(self) -> Vec<Value> {
        self.stop_expecting(true).await
    }

    /// [`TestServer::stop`], asserting whether in-flight requests drained within the grace period.
    pub async fn stop_expecting(mut self, drained: bool) -> Vec<Value> {
        assert_eq!(self.running.take().unwrap().shutdown().await, drained, "drained within the grace period");
        if let Some(audit) = self.audit.take() {
            audit.close();
        }
        let text = std::fs::read_to_string(self.audit_path()).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }
}

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
    async fn read(response: reqwest::Response) -> Self {
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

/// Handlers only the tests register, through the same API a host program uses.
pub fn test_builtins() -> Builtins {
    let object = || json!({"type": "object"});
    let mut builtins = Builtins::default();
    builtins
        .register("test.fail", Builtin::tool(FnHandler(|_: &Value| Answer::Failure { code: "boom".into() }), object()));
    builtins.register(
        "test.tool_error",
        Builtin::tool(
            FnHandler(|_: &Value| Answer::ToolError { code: "quota_exceeded".into(), retryable: true, content: None }),
            object(),
        ),
    );
    builtins.register(
        "test.bad_output",
        Builtin::tool(FnHandler(|_: &Value| Answer::Value(json!({"n": "seven"}))), object())
            .output(json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
    );
    builtins.register(
        "test.no_structured",
        Builtin::tool(
            FnHandler(|_: &Value| Answer::Content {
                blocks: vec![ContentBlock::Text { text: "t".into() }],
                structured: None,
            }),
            object(),
        )
        .output(object()),
    );
    builtins.register(
        "test.wrong_kind",
        Builtin::tool(
            FnHandler(|_: &Value| Answer::Messages {
                description: None,
                messages: vec![Message { role: Role::User, content: ContentBlock::Text { text: "x".into() } }],
            }),
            object(),
        ),
    );
    builtins.register(
        "test.input_required",
        Builtin::tool(
            FnHandler(|_: &Value| Answer::InputRequired { requests: Default::default(), state: Some(json!(1)) }),
            object(),
        ),
    );
    builtins.register(
        "test.elicits",
        Builtin::tool(FnHandler(|_: &Value| Answer::Value(json!({"ok": true}))), object())
            .requiring(json!({"elicitation": {"form": {}}})),
    );
    builtins.register("test.scalar", Builtin::tool(FnHandler(|_: &Value| Answer::Value(json!(42))), object()));
    builtins.register(
        "test.params",
        Builtin::tool(
            FnHandler(|arguments: &Value| Answer::Value(arguments.clone())),
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "x-mcp-header": "N"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                "opts": {"type": "object", "properties": {"name": {"type": "string", "x-mcp-header": "Name"}}}
            }}),
        ),
    );
    builtins.register("test.slow", Builtin::tool(Slow, object()));
    builtins
        .register("test.panics", Builtin::tool(FnHandler(|_: &Value| panic!("the handler's secret detail")), object()));
    builtins
}

/// Waits until cancelled, or answers after 300 ms.
struct Slow;

impl Handler for Slow {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(async move {
            tokio::select! {
                () = request.cancellation.cancelled() => Answer::Failure { code: "cancelled".into() },
                () = tokio::time::sleep(Duration::from_millis(300)) => Answer::Value(json!({"slept": true})),
            }
        })
    }
}

impl TestServer {
    /// Sends `request` as raw HTTP/1.1 bytes, with exactly the headers it has (no client
    /// adds defaults), and returns the status line's code and the body.
    pub async fn send_raw(&self, request: &Req) -> (u16, Vec<u8>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut head =
            format!("{} {} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n", request.method, request.path, self.addr)
                .into_bytes();
        for (name, value) in &request.headers {
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(format!("content-length: {}\r\n\r\n", request.body.len()).as_bytes());
        head.extend_from_slice(&request.body);
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(&head).await.unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        let text = String::from_utf8_lossy(&response);
        let status = text[9..12].parse().unwrap();
        let body_at = text.find("\r\n\r\n").unwrap() + 4;
        (status, response[body_at..].to_vec())
    }
}
