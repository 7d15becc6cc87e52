//! What operators' tools read, black-box: the real binary's `GET /metrics` after a known
//! mix of requests (successes, a denial, failed and rate-limited authentications, a
//! session opened and closed, a listen stream, an upstream call and a web service call),
//! read by a strict OpenMetrics reader, every counter and gauge exact; and labels that
//! stay bounded whatever realms and methods clients make up.

use bondry_test_support as support;

use std::path::Path;
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};
use support::{Binary, Exposition, TestConfig, table};

/// The operator's admin token.
const ADMIN_TOKEN: &str = "the-operators-admin-token-of-32-bytes";
/// Requests one principal may make before its limit refuses it (none refill meanwhile).
const BURST: usize = 20;

/// A web service on loopback answering every call at `/result` `{"result": "ok"}`, and
/// an API's `GET /v1/ping` `{"ok": true}`.
async fn service() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let json = |body: Value| ([("content-type", "application/json")], body.to_string());
    let app = Router::new()
        .route("/result", post(move || async move { json(json!({"result": "ok"})) }))
        .route("/v1/ping", axum::routing::get(move || async move { json(json!({"ok": true})) }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// The stdio upstream `up`, its tools only.
fn upstream() -> toml::Table {
    table([
        ("name", "up".into()),
        ("transport", "stdio".into()),
        ("command", support::test_upstream_exe().to_str().unwrap().into()),
        ("expose", vec!["tools"].into()),
    ])
}

/// The tool `svc.result`, served by `service` at `/result`.
fn web(service: std::net::SocketAddr) -> toml::Table {
    table([
        ("id", "svc.result".into()),
        ("kind", "tool".into()),
        ("backend", "http".into()),
        ("url", format!("http://{service}/result").into()),
        ("input_schema", r#"{"type": "object"}"#.into()),
    ])
}

/// Anonymous callers may call `demo.*`, `up.*` and `svc.*`; `hidden.echo` is granted to
/// nobody; `ada` holds a ticket; every principal may make `burst` requests, and an
/// address 3 failed authentications.
fn config(service: std::net::SocketAddr, audit: &Path, burst: usize) -> TestConfig {
    let rate = |burst: usize| table([("per_second", 0.0001.into()), ("burst", (burst as i64).into())]);
    TestConfig::bare()
        .set("pin_store", "memory")
        .set("audit.sink", "file")
        .set("audit.path", audit.to_str().unwrap())
        .set("admin.bind", "127.0.0.1:0")
        .push("admin.tokens", table([("name", "ops".into()), ("token_env", "ADMIN_TOKEN".into())]))
        .set("realms.default.anonymous_roles", vec!["caller"])
        .set("realms.default.rate_limits.per_principal", rate(burst))
        // The check precedes the count: the third failure is heard, the fourth is not.
        .set("realms.default.rate_limits.auth_failures", rate(2))
        .role("caller", &["demo.*", "up.*", "svc.*"])
        .principal("ada", &["caller"])
        .ticket("ada-ticket", "ada")
        .capability("demo.echo", "tool", "demo.echo", None)
        .capability("hidden.echo", "tool", "demo.echo", None)
        .push("realms.default.capabilities", web(service))
        .push("realms.default.upstreams", upstream())
}

struct Gateway {
    server: Binary,
    client: reqwest::Client,
    dir: tempfile::TempDir,
}

impl Gateway {
    /// Serving [`config`] with `burst`, once the upstream is listed.
    async fn start(burst: usize) -> Self {
        Self::start_with(burst, |config| config).await
    }

    /// [`Gateway::start`] with `change` made to the configuration.
    async fn start_with(burst: usize, change: impl FnOnce(TestConfig) -> TestConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let config = change(config(service().await, &audit, burst)).written(dir.path(), "bondry.toml");
        let server = Binary::serve(support::bondry_exe!(), &config, &[("ADMIN_TOKEN", ADMIN_TOKEN)]);
        let gateway = Self { server, client: reqwest::Client::new(), dir };
        assert!(support::eventually(|| gateway.server.admin_port().is_some()).await, "the admin listener started");
        gateway.server.logged("upstream up: ", 1).await;
        gateway
    }

    /// How many capabilities the upstream listed, as its listing was logged.
    fn listed(&self) -> f64 {
        let lines = self.server.log_lines();
        let line = lines.iter().find_map(|line| line.split_once("upstream up: ")).expect("listed").1;
        line.split(' ').next().unwrap().parse().unwrap()
    }

    fn audit_lines(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap_or_default().lines().count()
    }

    /// `GET /metrics` with `token`: its status, content type and body.
    async fn scrape_with(&self, token: Option<&str>) -> (u16, String, String) {
        let url = format!("http://127.0.0.1:{}/metrics", self.server.admin_port().unwrap());
        let mut request = self.client.get(url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let kind = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        (response.status().as_u16(), kind, response.text().await.unwrap())
    }

    /// The metrics now, read strictly.
    async fn metrics(&self) -> Exposition {
        let (status, kind, text) = self.scrape_with(Some(ADMIN_TOKEN)).await;
        assert_eq!((status, kind.as_str()), (200, "application/openmetrics-text; version=1.0.0; charset=utf-8"));
        let read = Exposition::parse(&text).unwrap_or_else(|why| panic!("{why}\n{text}"));
        read.check_histograms().unwrap();
        read
    }

    /// A modern tool call of `name`, with `ticket` if given: its status and body.
    async fn call(&self, name: &str, ticket: Option<&str>) -> (u16, Value) {
        let bearer = ticket.map(|ticket| format!("Bearer {ticket}"));
        let headers: Vec<(&str, &str)> = bearer.iter().map(|value| ("authorization", value.as_str())).collect();
        let arguments = json!({"name": name, "arguments": {"text": "hi"}});
        let response = self.server.post_with(&self.client, &headers, "tools/call", arguments).await;
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// `server/discover` with `ticket`: its status.
    async fn discover(&self, ticket: &str) -> u16 {
        let bearer = format!("Bearer {ticket}");
        let response = self
            .server
            .post_with(&self.client, &[("authorization", bearer.as_str())], "server/discover", json!({}))
            .await;
        response.status().as_u16()
    }
}

/// `name` with `labels`: exactly one sample, or 0 when none is there yet.
fn value(metrics: &Exposition, name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<_> = metrics.samples(name, labels).collect();
    assert!(found.len() <= 1, "{name} {labels:?} matches {found:?}");
    found.first().map_or(0.0, |sample| sample.value)
}

#[tokio::test]
async fn a_known_mix_of_requests_reads_back_as_exact_counters_and_gauges() {
    let gateway = Gateway::start(BURST).await;

    // A scrape needs the token, and a refused one is no metric of the MCP endpoints.
    let (status, _, body) = gateway.scrape_with(None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(gateway.scrape_with(Some("not-the-token")).await.0, 401);

    // Successes: three builtin calls, one upstream call, one web service call.
    for _ in 0..3 {
        let (status, body) = gateway.call("demo.echo", None).await;
        assert_eq!((status, &body["result"]["isError"]), (200, &Value::Null), "{body}");
    }
    let (status, body) = gateway.call("up.echo", None).await;
    assert_eq!((status, &body["result"]["content"][0]["text"]), (200, &json!("hi")), "{body}");
    let (status, body) = gateway.call("svc.result", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["structuredContent"], "ok", "{body}");
    // A call its client gives up on: cancelled.
    let arguments = json!({"name": "up.hang", "arguments": {}});
    let abandoned = gateway.server.post(&gateway.client, "tools/call", arguments);
    assert!(tokio::time::timeout(Duration::from_millis(300), abandoned).await.is_err(), "up.hang hangs");
    // A notification without a session is the modern era's.
    let port = gateway.server.port;
    let notified = gateway
        .client
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(notified.status(), 202);
    // Another method on /metrics meets the gate like any unknown route.
    let admin = format!("http://127.0.0.1:{}/metrics", gateway.server.admin_port().unwrap());
    let foreign = gateway.client.post(&admin).header("host", "evil.example").send().await.unwrap();
    assert_eq!(foreign.status(), 403);
    // A denial: hidden, answered as missing.
    let (status, body) = gateway.call("hidden.echo", None).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (200, Some(-32602)), "{body}");

    // A session opened, then a listen stream open while the session is.
    let sid = gateway.server.session(&gateway.client).await;
    let filter = json!({"notifications": {"toolsListChanged": true}});
    let listening = gateway.server.post(&gateway.client, "subscriptions/listen", filter).await;
    assert_eq!(listening.status(), 200);
    assert_eq!(listening.headers()["content-type"], "text/event-stream");
    let metrics = gateway.metrics().await;
    let realm = [("realm", "default")];
    assert_eq!(value(&metrics, "bondry_sessions", &realm), 1.0);
    assert_eq!(value(&metrics, "bondry_listen_streams", &realm), 1.0);
    assert_eq!(value(&metrics, "bondry_calls_in_flight", &realm), 0.0);
    drop(listening);
    let closed = gateway
        .client
        .delete(format!("http://127.0.0.1:{port}/mcp"))
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);

    // ada: her burst, then two refused by her limit.
    for n in 0..BURST + 2 {
        let expected = if n < BURST { 200 } else { 429 };
        assert_eq!(gateway.discover("ada-ticket").await, expected, "request {n}");
    }
    // Three failed authentications, then the address's limit refuses the fourth unheard.
    for n in 0..4 {
        let expected = if n < 3 { 401 } else { 429 };
        assert_eq!(gateway.discover("a-wrong-ticket").await, expected, "attempt {n}");
    }

    // Streams close and the audit trail is written a little after the answers.
    let mut metrics = gateway.metrics().await;
    for _ in 0..500 {
        let settled = value(&metrics, "bondry_listen_streams", &realm) == 0.0
            && value(&metrics, "bondry_audit_records_total", &[("result", "written")]) == gateway.audit_lines() as f64
            && gateway.audit_lines() == 13;
        if settled {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        metrics = gateway.metrics().await;
    }

    let requests = |era: &str, method: &str, outcome: &str| {
        let labels = [("realm", "default"), ("era", era), ("method", method), ("outcome", outcome)];
        value(&metrics, "bondry_requests_total", &labels)
    };
    assert_eq!(requests("modern", "tools/call", "succeeded"), 5.0);
    assert_eq!(requests("modern", "tools/call", "denied"), 1.0);
    assert_eq!(requests("modern", "tools/call", "cancelled"), 1.0);
    assert_eq!(requests("modern", "notifications/cancelled", "succeeded"), 1.0);
    assert_eq!(requests("modern", "subscriptions/listen", "succeeded"), 1.0);
    assert_eq!(requests("modern", "server/discover", "succeeded"), BURST as f64);
    assert_eq!(requests("handshake", "initialize", "succeeded"), 1.0);
    assert_eq!(requests("handshake", "notifications/initialized", "succeeded"), 1.0);
    assert_eq!(requests("handshake", "other", "succeeded"), 1.0, "the DELETE");
    // Refused before the body was read: no era, no method.
    assert_eq!(requests("none", "other", "rate_limited"), 3.0);
    assert_eq!(requests("none", "other", "unauthenticated"), 3.0);
    let total: f64 = metrics.samples("bondry_requests_total", &[]).map(|sample| sample.value).sum();
    assert_eq!(total, 5.0 + 1.0 + 1.0 + 1.0 + 1.0 + BURST as f64 + 3.0 + 3.0 + 3.0);
    let durations: f64 = metrics.samples("bondry_request_duration_seconds_count", &[]).map(|s| s.value).sum();
    assert_eq!(durations, total, "every request is timed once");

    let auth = |scheme: &str, result: &str| {
        value(&metrics, "bondry_auth_total", &[("realm", "default"), ("scheme", scheme), ("result", result)])
    };
    assert_eq!(auth("none", "accepted"), 5.0 + 1.0 + 1.0 + 1.0 + 1.0 + 3.0);
    assert_eq!(auth("bearer", "accepted"), (BURST + 2) as f64);
    assert_eq!(auth("bearer", "refused"), 3.0);
    assert_eq!(value(&metrics, "bondry_rate_limited_total", &[("limit", "principal")]), 2.0);
    assert_eq!(value(&metrics, "bondry_rate_limited_total", &[("limit", "auth_failures")]), 1.0);
    assert_eq!(value(&metrics, "bondry_rate_limited_total", &[("limit", "address")]), 0.0);

    let backend = |kind: &str, name: &str| {
        let labels = [("realm", "default"), ("backend_kind", kind), ("backend", name)];
        value(&metrics, "bondry_backend_duration_seconds_count", &labels)
    };
    assert_eq!(backend("builtin", "demo.echo"), 3.0);
    assert_eq!(backend("upstream", "up"), 1.0, "a cancelled call has no time in its backend");
    assert_eq!(backend("http", "http"), 1.0, "a service is labelled by its kind, not its origin");

    for gauge in ["bondry_sessions", "bondry_event_streams", "bondry_listen_streams", "bondry_calls_in_flight"] {
        assert_eq!(value(&metrics, gauge, &realm), 0.0, "{gauge}");
    }
    let up = [("realm", "default"), ("upstream", "up")];
    assert_eq!(value(&metrics, "bondry_upstream_up", &up), 1.0);
    assert_eq!(value(&metrics, "bondry_upstream_restarts_total", &up), 0.0);
    let served = [("realm", "default"), ("upstream", "up"), ("state", "served")];
    assert_eq!(value(&metrics, "bondry_upstream_capabilities", &served), gateway.listed());
    // Seven calls, three failed authentications, two refused scrapes and the refused
    // POST: a scrape let in is not audited.
    assert_eq!(gateway.audit_lines(), 13);
    assert_eq!(value(&metrics, "bondry_audit_records_total", &[("result", "written")]), 13.0);
    assert_eq!(value(&metrics, "bondry_audit_records_total", &[("result", "dropped")]), 0.0);
    let version = [("version", env!("CARGO_PKG_VERSION"))];
    assert_eq!(value(&metrics, "bondry_build_info", &version), 1.0);
    // No principal is ever a label.
    let text = gateway.scrape_with(Some(ADMIN_TOKEN)).await.2;
    assert!(!text.contains("ada"), "{text}");
}

#[tokio::test]
async fn made_up_realms_and_methods_never_grow_the_series() {
    // No principal's limit is reached: what grows is only what clients make up.
    let gateway = Gateway::start(10_000).await;
    let port = gateway.server.port;
    let bogus = |n: usize, realm: bool| {
        let path = if realm { format!("/mcp/realm/made-up-{n}") } else { "/mcp".to_owned() };
        let method = if realm { "tools/list".to_owned() } else { format!("tools/made-up-{n}") };
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": support::PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        gateway
            .client
            .post(format!("http://127.0.0.1:{port}{path}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", support::PROTOCOL)
            .header("mcp-method", &method)
            .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}).to_string())
            .send()
    };
    for n in 0..10 {
        assert_eq!(bogus(n, true).await.unwrap().status(), 404);
        bogus(n, false).await.unwrap();
    }
    let before = gateway.metrics().await;
    for n in 10..1010 {
        assert_eq!(bogus(n, true).await.unwrap().status(), 404);
        bogus(n, false).await.unwrap();
    }
    let after = gateway.metrics().await;
    assert_eq!(after.series(), before.series(), "1,000 more made-up realms and methods add no series");
    let unknown = [("realm", "unknown"), ("era", "none"), ("method", "other"), ("outcome", "protocol_error")];
    assert_eq!(value(&after, "bondry_requests_total", &unknown), 1010.0);
    let other = [("realm", "default"), ("era", "modern"), ("method", "other")];
    let refused: f64 = after.samples("bondry_requests_total", &other).map(|sample| sample.value).sum();
    assert_eq!(refused, 1010.0);
    assert!(after.samples("bondry_requests_total", &[]).all(|sample| !sample.labels["realm"].starts_with("made-up")));
}

#[tokio::test]
async fn public_metrics_need_no_token_and_count_calls_per_capability_only_when_asked() {
    let asked = |config: TestConfig| config.set("admin.metrics_public", true).set("admin.metrics_per_capability", true);
    let gateway = Gateway::start_with(BURST, asked).await;
    gateway.call("demo.echo", None).await;
    gateway.call("hidden.echo", None).await;
    let (status, body) = gateway.call("made.up", None).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (200, Some(-32602)), "{body}");
    let (status, _, text) = gateway.scrape_with(None).await;
    assert_eq!(status, 200, "{text}");
    let metrics = Exposition::parse(&text).unwrap();
    let calls = |capability: &str, outcome: &str| {
        let labels = [("realm", "default"), ("capability", capability), ("outcome", outcome)];
        value(&metrics, "bondry_capability_calls_total", &labels)
    };
    assert_eq!(calls("demo.echo", "succeeded"), 1.0);
    // Only what was invoked: neither a name the caller made up nor one it may not see.
    assert_eq!(metrics.samples("bondry_capability_calls_total", &[]).count(), 1, "{text}");

    // Off by default: no family at all, and the token is needed.
    let plain = Gateway::start(BURST).await;
    plain.call("demo.echo", None).await;
    assert_eq!(plain.scrape_with(None).await.0, 401);
    assert!(!plain.metrics().await.families.contains_key("bondry_capability_calls"));
}

/// Secrets of every kind the configuration and callers hand Bondry, by what they are.
const SECRETS: [(&str, &str); 8] = [
    ("admin token", ADMIN_TOKEN),
    ("ticket", "a-ticket-nobody-may-log-3141592653"),
    ("password", "a-password-nobody-may-log-2718281828"),
    ("headers_from value", "a-service-key-nobody-may-log-1618033"),
    ("signing key", "a-signing-key-nobody-may-log-of-32-bytes"),
    ("child's env_from value", "a-child-secret-nobody-may-log-1414213"),
    ("OpenAPI auth value", "an-openapi-token-nobody-may-log-173205"),
    ("a wrong ticket", "a-wrong-ticket-nobody-may-log-2236067"),
];

fn secret(what: &str) -> &'static str {
    SECRETS.iter().find(|(name, _)| *name == what).unwrap().1
}

/// A JWT of the test issuer for `sub`, signed with the fixture key `ed-1`.
fn jwt(sub: &str) -> String {
    use base64::Engine;
    let keys: Value = serde_json::from_str(include_str!("fixtures/oauth-test-keys.json")).unwrap();
    let der = base64::engine::general_purpose::STANDARD.decode(keys["ed-1"]["private_der"].as_str().unwrap()).unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some("ed-1".into());
    let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 600;
    let claims =
        json!({"iss": "https://issuer.example.test", "aud": "https://mcp.example.test/mcp", "sub": sub, "exp": exp});
    jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_ed_der(&der)).unwrap()
}

#[tokio::test]
async fn json_logs_at_trace_are_one_object_per_line_and_hold_no_secret() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let service = service().await;
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": "ping", "version": "1"},
        "paths": {"/ping": {"get": {"operationId": "ping", "responses": {"200": {"description": "ok",
            "content": {"application/json": {"schema": {"type": "object"}}}}}}}}
    });
    std::fs::write(dir.path().join("api.json"), document.to_string()).unwrap();
    let keys: Value = serde_json::from_str(include_str!("fixtures/oauth-test-keys.json")).unwrap();
    let public = &keys["ed-1"]["jwk"];
    let key = table([
        ("kty", "OKP".into()),
        ("crv", "Ed25519".into()),
        ("kid", "ed-1".into()),
        ("x", public["x"].as_str().unwrap().into()),
    ]);
    let issuer = table([
        ("issuer", "https://issuer.example.test".into()),
        ("roles", vec!["caller"].into()),
        ("keys", toml::Value::Array(vec![key.into()])),
    ]);
    let argon2 = argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        argon2::Params::new(64, 1, 1, None).unwrap(),
    );
    use argon2::PasswordHasher;
    let hash = argon2.hash_password_with_salt(secret("password").as_bytes(), b"saltsaltsaltsalt").unwrap().to_string();
    let mut upstream = upstream();
    upstream.insert("env_from".into(), table([("UPSTREAM_TOKEN", "CHILD_SECRET".into())]).into());
    let mut web = web(service);
    web.insert("headers_from".into(), table([("X-Api-Key", "SERVICE_KEY".into())]).into());
    web.insert("signing_key_env".into(), "SIGNING_KEY".into());
    let api = table([
        ("name", "api".into()),
        ("spec_file", "api.json".into()),
        ("base_url", format!("http://{service}/v1").into()),
        ("auth", table([("scheme", "bearer".into()), ("value_env", "OPENAPI_TOKEN".into())]).into()),
    ]);
    let config = TestConfig::bare()
        .set("log_format", "json")
        .set("pin_store", "memory")
        .set("audit.sink", "file")
        .set("audit.path", dir.path().join("audit.jsonl").to_str().unwrap())
        .set("admin.bind", "127.0.0.1:0")
        .push("admin.tokens", table([("name", "ops".into()), ("token_env", "ADMIN_TOKEN".into())]))
        .set("realms.default.anonymous_roles", vec!["caller"])
        .set("realms.default.resource_url", "https://mcp.example.test/mcp")
        .role("caller", &["demo.*", "up.*", "svc.*", "api.*"])
        .principal("ada", &["caller"])
        .set_on_array("realms.default.principals", "ada", "password_hash", hash)
        .ticket(secret("ticket"), "ada")
        .push("realms.default.oauth", issuer)
        .capability("demo.echo", "tool", "demo.echo", None)
        .push("realms.default.capabilities", web)
        .push("realms.default.openapi", api)
        .push("realms.default.upstreams", upstream)
        .written(dir.path(), "bondry.toml");
    let env = [
        ("RUST_LOG", "trace"),
        ("ADMIN_TOKEN", secret("admin token")),
        ("SERVICE_KEY", secret("headers_from value")),
        ("SIGNING_KEY", secret("signing key")),
        ("CHILD_SECRET", secret("child's env_from value")),
        ("OPENAPI_TOKEN", secret("OpenAPI auth value")),
    ];
    let mut server = Binary::serve(support::bondry_exe!(), &config, &env);
    server.logged("upstream up: ", 1).await;
    let client = reqwest::Client::new();
    let basic = |password: &str| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("ada:{password}"));
        format!("Basic {encoded}")
    };
    let token = jwt("jwt-user");
    let credentials = [
        (format!("Bearer {}", secret("ticket")), 200),
        (format!("Bearer {}", secret("a wrong ticket")), 401),
        (basic(secret("password")), 200),
        (basic("a-wrong-password-nobody-may-log"), 401),
        (format!("Bearer {token}"), 200),
    ];
    for (credential, expected) in &credentials {
        let response = server.post_with(&client, &[("authorization", credential)], "tools/list", json!({})).await;
        assert_eq!(response.status().as_u16(), *expected, "{credential}");
    }
    for (name, arguments) in [("svc.result", json!({})), ("api.ping", json!({})), ("up.echo", json!({"text": "hi"}))] {
        let response = server.post(&client, "tools/call", json!({"name": name, "arguments": arguments})).await;
        let body: Value = response.json().await.unwrap();
        assert_ne!(body["result"]["isError"], true, "{name}: {body}");
    }
    let admin = format!("http://127.0.0.1:{}/v1/backends", server.admin_port().unwrap());
    for (token, expected) in [(ADMIN_TOKEN, 200), ("not-the-operators-token-of-32-bytes", 401)] {
        assert_eq!(client.get(&admin).bearer_auth(token).send().await.unwrap().status().as_u16(), expected);
    }
    // Everything logged so far, and what the shutdown logs.
    server.terminate();
    let lines = server.log_lines();
    let logged: Vec<&String> = lines.iter().filter(|line| line.starts_with('{')).collect();
    assert!(logged.len() > 10, "{lines:#?}");
    for line in &logged {
        let object: Value = serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}"));
        for member in ["time", "level", "target", "message"] {
            assert!(object.get(member).is_some(), "{member} missing: {line}");
        }
    }
    let levels: std::collections::BTreeSet<String> = logged
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["level"].as_str().unwrap().to_owned())
        .collect();
    assert!(levels.contains("TRACE") && levels.contains("DEBUG"), "RUST_LOG=trace logs at every level: {levels:?}");
    let upstream_line =
        logged.iter().find(|line| line.contains("upstream connected")).expect("the upstream's connection");
    assert_eq!(serde_json::from_str::<Value>(upstream_line).unwrap()["backend"], "up", "{upstream_line}");
    let text = lines.join("\n");
    let mut forms: Vec<(String, String)> =
        SECRETS.iter().map(|(what, secret)| (what.to_string(), secret.to_string())).collect();
    forms.push(("a JWT".into(), token.clone()));
    forms.push(("a JWT's signature".into(), token.rsplit('.').next().unwrap().to_owned()));
    forms.push(("a Basic credential".into(), basic(secret("password"))));
    forms.push(("a wrong password".into(), "a-wrong-password-nobody-may-log".into()));
    for (what, form) in &forms {
        assert!(!text.contains(form.as_str()), "the log holds {what}");
    }
    let trail = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    assert!(trail.lines().count() >= 6, "{trail}");
    for (what, form) in &forms {
        assert!(!trail.contains(form.as_str()), "the audit trail holds {what}");
    }
}
