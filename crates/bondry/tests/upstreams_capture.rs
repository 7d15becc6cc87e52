//! No credential of a caller reaches an upstream (docs/upstreams.md): a modern upstream that
//! records every request it gets is fronted by the real binary, and a caller's
//! `Authorization`, `Cookie` and `Mcp-Session-Id` (a modern caller's made-up one, a session
//! caller's real one) never appear among what it recorded, in headers or bodies, while the
//! stanza's `headers_from` header and the routing headers do.

use bondry_test_support as support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use support::{Binary, TestConfig, table};

/// One request the upstream got: its method, headers and JSON body.
#[derive(Debug, Clone)]
struct Recorded {
    method: Method,
    headers: HeaderMap,
    body: Value,
}

type Log = Arc<Mutex<Vec<Recorded>>>;

/// A minimal modern MCP server on an ephemeral loopback port, recording every request:
/// `server/discover` names 2026-07-28 and tools, `tools/list` lists `probe`, and a call of
/// it answers "ok"; every other method is not found, and GET is not offered.
async fn capture_upstream() -> (u16, Log) {
    let log: Log = Arc::default();
    let recorder = Arc::clone(&log);
    let app = axum::Router::new().fallback(move |method: Method, headers: HeaderMap, body: axum::body::Bytes| {
        let recorder = Arc::clone(&recorder);
        async move {
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            recorder.lock().unwrap().push(Recorded { method: method.clone(), headers, body: body.clone() });
            answer(&method, &body)
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, log)
}

fn answer(method: &Method, body: &Value) -> Response {
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let Some(id) = body.get("id").cloned() else { return StatusCode::ACCEPTED.into_response() };
    let server_info = json!({"io.modelcontextprotocol/serverInfo": {"name": "capture", "version": "1"}});
    let result = match body["method"].as_str().unwrap_or_default() {
        "server/discover" => json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "ttlMs": 0, "cacheScope": "private", "_meta": server_info
        }),
        "tools/list" => json!({
            "resultType": "complete", "tools": [{"name": "probe", "inputSchema": {"type": "object"}}],
            "ttlMs": 0, "cacheScope": "private"
        }),
        "tools/call" => json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}),
        other => {
            let error = json!({"code": -32601, "message": format!("Method not found: {other}")});
            return json_response(json!({"jsonrpc": "2.0", "id": id, "error": error}));
        }
    };
    json_response(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn json_response(message: Value) -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], message.to_string()).into_response()
}

/// A handshake-era session with `front` opened with `headers`: its id.
async fn session(client: &reqwest::Client, front: &Binary, headers: &[(&str, &str)]) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut request = client
        .post(format!("http://127.0.0.1:{}/mcp", front.port))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.json(&initialize).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let sid = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(client, front, headers, Some(&sid), initialized).await, Value::Null);
    sid
}

/// Posts `message` with `headers` in the session `sid`; its JSON answer, or `Null`.
async fn post(
    client: &reqwest::Client,
    front: &Binary,
    headers: &[(&str, &str)],
    sid: Option<&str>,
    message: Value,
) -> Value {
    let mut request = client
        .post(format!("http://127.0.0.1:{}/mcp", front.port))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(sid) = sid {
        request = request.header("mcp-session-id", sid);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let text = request.json(&message).send().await.unwrap().text().await.unwrap();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn header<'a>(recorded: &'a Recorded, name: &str) -> Option<&'a str> {
    recorded.headers.get(name).map(|value| value.to_str().unwrap())
}

// The upstream answers on its own threads while the test waits for the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_header_of_the_caller_reaches_the_upstream_but_the_stanzas_own_do() {
    let (port, log) = capture_upstream().await;
    let stanza = table([
        ("name", "up".into()),
        ("transport", "http".into()),
        ("url", format!("http://127.0.0.1:{port}/mcp").into()),
        ("headers_from", table([("X-Api-Key", "UPSTREAM_API_KEY".into())]).into()),
    ]);
    // The caller holds a ticket: a credential Bondry accepts, which must stop at Bondry.
    let config = TestConfig::bare()
        .set("pin_store", "memory")
        .role("caller", &["up.*"])
        .principal("caller", &["caller"])
        .ticket("caller-secret", "caller")
        .push("realms.default.upstreams", stanza);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, config.text()).unwrap();
    let front = Binary::serve(support::bondry_exe!(), &path, &[("UPSTREAM_API_KEY", "upstream-key")]);
    front.logged("upstream up: 1 capabilities listed", 1).await;
    let listed_before_the_call = log.lock().unwrap().len();

    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let caller_headers =
        [("Authorization", "Bearer caller-secret"), ("Cookie", "session=caller"), ("Mcp-Session-Id", "caller-session")];
    let response =
        front.post_with(&client, &caller_headers, "tools/call", json!({"name": "up.probe", "arguments": {}})).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"], json!([{"type": "text", "text": "ok"}]), "{body}");
    assert_eq!(body["result"]["resultType"], "complete");

    // A session caller with the same credentials: its session id, Bondry's, stays at Bondry.
    let sid = session(&client, &front, &caller_headers[..2]).await;
    let call =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "up.probe", "arguments": {}}});
    let called = post(&client, &front, &caller_headers[..2], Some(&sid), call).await;
    assert_eq!(called["result"]["content"], json!([{"type": "text", "text": "ok"}]), "{called}");

    let recorded = log.lock().unwrap().clone();
    let methods: Vec<&str> = recorded.iter().map(|r| r.body["method"].as_str().unwrap_or_default()).collect();
    assert_eq!(methods[..2], ["server/discover", "tools/list"], "{methods:?}");
    let calls: Vec<&Recorded> =
        recorded[listed_before_the_call..].iter().filter(|r| r.body["method"] == "tools/call").collect();
    assert_eq!(calls.len(), 2, "one call relayed for each caller: {methods:?}");
    let call = calls[0];
    assert_eq!(call.body["params"]["name"], "probe", "the upstream's own name: {}", call.body);
    assert_eq!(call.body["params"]["arguments"], json!({}));
    assert_eq!(header(call, "mcp-method"), Some("tools/call"));
    assert_eq!(header(call, "mcp-name"), Some("probe"));
    assert_eq!(header(call, "mcp-protocol-version"), Some("2026-07-28"));

    for request in &recorded {
        let what = &request.body["method"];
        assert_eq!(request.method, Method::POST, "{what}");
        assert_eq!(header(request, "x-api-key"), Some("upstream-key"), "the stanza's header on {what}");
        for name in ["authorization", "cookie", "mcp-session-id"] {
            assert_eq!(header(request, name), None, "{name} on {what}: {:?}", request.headers);
        }
        for (name, value) in &request.headers {
            let value = String::from_utf8_lossy(value.as_bytes());
            for caller in ["caller-secret", "session=caller", "caller-session", &sid] {
                assert!(!value.contains(caller), "the caller's {caller:?} in {name} on {what}");
            }
        }
        let body = request.body.to_string();
        for caller in ["caller-secret", "session=caller", "caller-session", &sid] {
            assert!(!body.contains(caller), "the caller's {caller:?} in the body of {what}: {body}");
        }
    }
}
