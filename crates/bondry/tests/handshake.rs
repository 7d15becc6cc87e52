//! Black-box tests of the handshake era (2025-11-25, 2025-06-18) beside 2026-07-28 on one
//! endpoint: `initialize`, sealed sessions and their ends, in-session status rules, the
//! event stream, DELETE and cancellation.

use bondry_test_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{PATIENCE, Req, TestConfig, TestServer, in_session, initialize_request, open_at};

const SESSION: &str = "Mcp-Session-Id";

/// Opens a session at `version`; returns its id.
async fn open(server: &TestServer, version: &str) -> String {
    open_at(server, version, json!({})).await
}

/// A GET opening session `sid`'s event stream.
fn listen(sid: &str) -> Req {
    Req::post()
        .method(reqwest::Method::GET)
        .without("content-type")
        .replace("accept", "text/event-stream")
        .header(SESSION, sid)
}

/// A DELETE ending session `sid`.
fn delete(sid: &str) -> Req {
    Req::post().method(reqwest::Method::DELETE).without("content-type").header(SESSION, sid)
}

/// Asserts that `sid` names no live session.
async fn assert_gone(server: &TestServer, sid: &str) {
    server.send(in_session(sid, request("ping", json!({})))).await.assert_error(
        404,
        Some(json!(1)),
        -32001,
        "Session not found",
    );
}

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

#[tokio::test]
async fn initialize_opens_a_session_named_in_visible_ascii() {
    // Which revision is offered for which request: tests/wire/handshake.json in proto.
    let server = TestServer::start().await;
    let response = server.send(initialize_request("2025-11-25", json!({}))).await;
    let result = response.assert_result();
    assert_eq!(result["serverInfo"], json!({"name": "bondry", "version": env!("CARGO_PKG_VERSION")}));
    let sid = response.header("mcp-session-id").unwrap();
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII");
    server.send(in_session(sid, request("ping", json!({})))).await.assert_result();
    server.stop().await;
}

#[tokio::test]
async fn dead_sessions_answer_404() {
    // Long enough for the requests below to reach the session alive on a loaded machine.
    let lifetime = Duration::from_millis(2000);
    let config = TestConfig::new().set("listeners.main.session_lifetime_ms", lifetime.as_millis() as i64).text();
    let server = TestServer::with_config(&config).await;
    // The session's lifetime runs from its initialize, sent after this instant.
    let opened = tokio::time::Instant::now();
    let sid = open(&server, "2025-11-25").await;
    let mut tampered = sid.clone().into_bytes();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    // Other dead ids: tests/wire/handshake.json in proto.
    server.send(in_session(&tampered, request("ping", json!({})))).await.assert_error(
        404,
        Some(json!(1)),
        -32001,
        "Session not found",
    );
    // Expiry: the session outlives its lifetime.
    server.send(in_session(&sid, request("ping", json!({})))).await.assert_result();
    tokio::time::sleep_until(opened + lifetime + Duration::from_millis(100)).await;
    assert_gone(&server, &sid).await;
    server.stop().await;
}

#[tokio::test]
async fn idle_sessions_end() {
    // Pings 700 ms apart keep a session with 1200 ms of idle time alive past 1200 ms, with
    // room for a loaded machine to be late; 1300 ms without one end it.
    let config = TestConfig::new().set("listeners.main.session_idle_ms", 1200).text();
    let server = TestServer::with_config(&config).await;
    let sid = open(&server, "2025-11-25").await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.send(in_session(&sid, request("ping", json!({})))).await.assert_result();
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.send(in_session(&sid, request("ping", json!({})))).await.assert_result();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_gone(&server, &sid).await;
    server.stop().await;
}

#[tokio::test]
async fn tools_in_the_handshake_era() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let send = |body: Value| server.send(in_session(&sid, body));
    let result = send(request("tools/list", json!({}))).await.assert_result();
    assert!(result.get("resultType").is_none() && result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    assert_eq!(result["tools"].as_array().unwrap().len(), 3);
    assert!(result["nextCursor"].is_string());

    let result =
        send(request("tools/call", json!({"name": "demo.echo", "arguments": {"text": "hi"}}))).await.assert_result();
    assert_eq!(result["structuredContent"], json!({"text": "hi"}));
    assert!(result.get("resultType").is_none());
    assert!(result["_meta"]["dev.bondry/invocationId"].is_string());
    assert!(result["_meta"].get("io.modelcontextprotocol/serverInfo").is_none());

    let result = send(request("tools/call", json!({"name": "test.scalar", "arguments": {}}))).await.assert_result();
    assert!(result.get("structuredContent").is_none(), "only objects are structured content in this era");
    assert_eq!(result["content"][0]["text"], "42");

    // Client capabilities come from initialize: none were declared here.
    let result = send(request("tools/call", json!({"name": "test.elicits"}))).await.assert_result();
    assert_eq!(result["isError"], true);
    assert_eq!(result["_meta"]["dev.bondry/errorCode"], "missing_client_capability");
    let capable = open_at(&server, "2025-11-25", json!({"elicitation": {}})).await;
    let result =
        server.send(in_session(&capable, request("tools/call", json!({"name": "test.elicits"})))).await.assert_result();
    assert_eq!(result["structuredContent"], json!({"ok": true}));
    server.stop().await;
}

#[tokio::test]
async fn one_event_stream_per_session() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let get = || listen(&sid);
    let client = reqwest::Client::new();
    let first = get().builder(&client, &server.url()).send().await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "text/event-stream");
    let second = server.send(get()).await;
    second.assert_error(409, None, -32600, "Conflict: the session already has a stream");
    // Once the first stream is gone, a GET replaces it.
    drop(first);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut replaced = false;
    while !replaced && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let again = get().builder(&client, &server.url()).send().await.unwrap();
        replaced = again.status() == 200;
    }
    assert!(replaced, "a GET after a dead stream replaces it");
    let refused = server.send(get().replace("accept", "application/json")).await;
    refused.assert_error(406, None, -32600, "Not Acceptable: Accept must admit text/event-stream");
    server.stop().await;
}

#[tokio::test]
async fn delete_ends_the_session_and_its_stream() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let client = reqwest::Client::new();
    let get = listen(&sid);
    let mut stream = get.builder(&client, &server.url()).send().await.unwrap();
    let deleted = server.send(delete(&sid)).await;
    assert_eq!(deleted.status, 204);
    assert!(deleted.body.is_empty());
    let ended =
        tokio::time::timeout(Duration::from_secs(5), async { while stream.chunk().await.unwrap().is_some() {} }).await;
    assert!(ended.is_ok(), "the stream ends with the session");
    assert_gone(&server, &sid).await;
    let again = server.send(delete(&sid)).await;
    again.assert_error(404, None, -32001, "Session not found");
    server.stop().await;
}

#[tokio::test]
async fn notifications_cancelled_reaches_a_slow_handler() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let client = reqwest::Client::new();
    let params = json!({"name": "test.slow", "arguments": {"ms": 10_000}});
    let call = in_session(&sid, json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": params}));
    let url = server.url();
    let pending = tokio::spawn(async move {
        let response = call.builder(&client, &url).body(call.body.clone()).send().await.unwrap();
        (response.status().as_u16(), response.headers().get("content-type").cloned(), response.text().await.unwrap())
    });
    assert!(server.call_running().await, "the call started");
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77, "reason": "test"}});
    assert_eq!(server.send(in_session(&sid, cancel)).await.status, 202);
    let (status, content_type, body) = pending.await.unwrap();
    assert_eq!((status, body.as_str()), (200, ""), "nothing is sent for a cancelled request");
    assert_eq!(content_type.unwrap(), "text/event-stream");
    let records = server.stop().await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["outcome"], "cancelled");
    // The handler ran until it was cancelled: its run time is on the record.
    assert_eq!((&records[0]["backend_kind"], &records[0]["backend"]), (&json!("builtin"), &json!("test.slow")));
    let backend_us = records[0]["backend_duration_us"].as_u64().unwrap();
    assert!(backend_us <= records[0]["duration_us"].as_u64().unwrap(), "{}", records[0]);
}

#[tokio::test]
async fn a_disconnect_is_not_a_cancellation_in_this_era() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let call = in_session(&sid, request("tools/call", json!({"name": "test.slow", "arguments": {"ms": 1000}})));
    server.send_and_leave(&reqwest::Client::new(), &call).await;
    server.audited(1).await;
    let records = server.stop().await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["outcome"], "succeeded", "the call ran to its end");
}

#[tokio::test]
async fn caps_on_calls_and_sessions() {
    let config = TestConfig::new()
        .set("realms.default.limits.inflight_per_session", 1)
        .set("realms.default.limits.sessions_per_principal", 2)
        .text();
    let server = TestServer::with_config(&config).await;
    let sid = open(&server, "2025-11-25").await;
    // Long enough to be still running when the second call comes, on a loaded machine too.
    let slow = in_session(&sid, request("tools/call", json!({"name": "test.slow", "arguments": {"ms": 2000}})));
    let url = server.url();
    let first = tokio::spawn(async move {
        slow.builder(&reqwest::Client::new(), &url).body(slow.body.clone()).send().await.unwrap().status()
    });
    assert!(server.call_running().await, "the first call started");
    let other_id = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test.slow"}});
    let second = server.send(in_session(&sid, other_id)).await;
    second.assert_error(429, Some(json!(2)), -32000, "Too many requests");
    assert_eq!(second.header("retry-after"), Some("1"));
    assert_eq!(first.await.unwrap(), 200);

    // A third session evicts the least recently used of the principal's two.
    let other = open(&server, "2025-11-25").await;
    server.send(in_session(&sid, request("ping", json!({})))).await.assert_result();
    let third = open(&server, "2025-11-25").await;
    assert_gone(&server, &other).await;
    server.send(in_session(&sid, request("ping", json!({})))).await.assert_result();
    server.send(in_session(&third, request("ping", json!({})))).await.assert_result();
    server.stop().await;
}

/// The next chunk of an event stream as text: `None` if none arrives within `limit`.
async fn next_chunk(stream: &mut reqwest::Response, limit: Duration) -> Option<String> {
    let chunk = tokio::time::timeout(limit, stream.chunk()).await.ok()?;
    Some(String::from_utf8(chunk.unwrap().expect("the stream is open").to_vec()).unwrap())
}

#[tokio::test]
async fn a_registry_swap_tells_sessions_whose_tool_list_changed() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let client = reqwest::Client::new();
    let get = listen(&sid);
    let mut stream = get.builder(&client, &server.url()).send().await.unwrap();
    assert_eq!(stream.status(), 200);

    // Removing a tool the session cannot see changes nothing it lists.
    let registry = server.registry("default");
    registry.swap(server.snapshot_without("default", "admin.reset"));
    let quiet = Duration::from_millis(300);
    assert_eq!(next_chunk(&mut stream, quiet).await, None, "no notification for an invisible change");

    registry.swap(server.snapshot_without("default", "demo.add"));
    let text = next_chunk(&mut stream, PATIENCE).await.expect("a notification");
    assert_eq!(text, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n");
    let tools = server.send(in_session(&sid, request("tools/list", json!({"cursor": null})))).await;
    assert_eq!(tools.status, 200);

    // Without an open stream the notification waits in the session's queue.
    drop(stream);
    assert!(server.settles().await, "the server let go of the stream: {:?}", server.gauges());
    registry.swap(server.snapshot_without("default", "demo.echo"));
    let mut stream = get.builder(&client, &server.url()).send().await.unwrap();
    let text = next_chunk(&mut stream, PATIENCE).await.expect("the queued notification");
    assert!(text.contains("notifications/tools/list_changed"), "{text}");
    server.stop().await;
}

#[tokio::test]
async fn a_cursor_goes_stale_when_the_catalogue_changes() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let first = server.send(in_session(&sid, request("tools/list", json!({})))).await.assert_result();
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();
    server.registry("default").swap(server.snapshot_without("default", "demo.add"));
    server.send(in_session(&sid, request("tools/list", json!({"cursor": cursor})))).await.assert_error(
        200,
        Some(json!(1)),
        -32602,
        "Invalid cursor",
    );
    server.stop().await;
}

#[tokio::test]
async fn shutdown_ends_open_event_streams() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let get = listen(&sid);
    let mut stream = get.builder(&reqwest::Client::new(), &server.url()).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    // `stop` asserts that the server drained within its grace period, which an open
    // stream would otherwise prevent.
    server.stop().await;
    let ended = tokio::time::timeout(Duration::from_secs(5), async { while let Ok(Some(_)) = stream.chunk().await {} });
    assert!(ended.await.is_ok(), "the stream ended at shutdown");
}

#[tokio::test]
async fn an_open_stream_keeps_a_quiet_session_alive() {
    // Idle long enough for the stream to open in time on a loaded machine; then quiet longer.
    let config = TestConfig::new().set("listeners.main.session_idle_ms", 1000).text();
    let server = TestServer::with_config(&config).await;
    let sid = open(&server, "2025-11-25").await;
    let get = listen(&sid);
    let stream = get.builder(&reqwest::Client::new(), &server.url()).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    server.send(in_session(&sid, request("ping", json!({})))).await.assert_result();
    drop(stream);
    server.stop().await;
}

#[tokio::test]
async fn a_refused_delete_leaves_the_session_alive() {
    // The other methods refused for the version header: tests/wire/handshake.json in proto.
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let refused = delete(&sid).header("MCP-Protocol-Version", "2026-07-28");
    server.send(refused).await.assert_error(400, None, -32600, "Invalid MCP-Protocol-Version header");
    server.send(in_session(&sid, request("ping", json!({})))).await.assert_result();
    server.stop().await;
}

#[tokio::test]
async fn an_id_in_flight_cannot_be_reused_and_delete_cancels_calls() {
    let server = TestServer::start().await;
    let sid = open(&server, "2025-11-25").await;
    let params = json!({"name": "test.slow", "arguments": {"ms": 10_000}});
    let slow = in_session(&sid, json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}));
    let (url, first) = (server.url(), slow.clone());
    let running = tokio::spawn(async move {
        let response = first.builder(&reqwest::Client::new(), &url).body(first.body.clone()).send().await.unwrap();
        response.text().await.unwrap()
    });
    assert!(server.call_running().await, "the first call started");
    server.send(slow).await.assert_error(200, Some(json!(7)), -32600, "Invalid request");
    let delete = delete(&sid);
    assert_eq!(server.send(delete).await.status, 204);
    assert_eq!(running.await.unwrap(), "", "the cancelled call sends nothing");
    let records = server.stop().await;
    assert_eq!(records.iter().map(|r| r["outcome"].as_str().unwrap()).collect::<Vec<_>>(), ["cancelled"]);
}

#[tokio::test]
async fn initialize_capabilities_are_bounded() {
    // Within a body the listener admits: the bound is the adapter's, not the body limit's.
    let config = TestConfig::new().remove("listeners.main.max_body_bytes").text();
    let server = TestServer::with_config(&config).await;
    let huge = json!({"experimental": {"blob": "x".repeat(70_000)}});
    let data = server.send(initialize_request("2025-11-25", huge)).await.assert_error(
        200,
        Some(json!(1)),
        -32602,
        "Invalid params",
    );
    assert_eq!(data["reason"], "params.capabilities is larger than 64 KiB");
    server.stop().await;
}
