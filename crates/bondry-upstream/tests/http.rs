//! Bondry's MCP client over Streamable HTTP, against Bondry itself in process: the modern
//! era on a listener of every revision, the handshake era on a listener of 2025-* only.

mod common;

use std::time::{Duration, Instant};

use bondry_mcp_proto::Revision;
use bondry_test_support::{PATIENCE, TestConfig, TestServer};
use bondry_upstream::{ClientError, Connection, Inbox, TransportSpec, UpstreamSpec};
use common::{list_tools, outgoing, spec, tool_names};
use serde_json::json;

fn http(url: &str) -> TransportSpec {
    TransportSpec::Http { url: url.parse().unwrap(), headers: vec![], ca_file: None, proxy: None }
}

/// The default test configuration with a prompt and a resource, served at `versions`.
fn config(versions: &[&str]) -> String {
    TestConfig::new()
        .set("listeners.main.protocol_versions", versions.to_vec())
        .capability("test.note", "prompt", "test.note", None)
        .capability("test.text_resource", "resource", "test.text_resource", None)
        .text()
}

fn handshake_only() -> String {
    config(&["2025-11-25", "2025-06-18"])
}

fn upstream(server: &TestServer) -> UpstreamSpec {
    spec("bondry", http(&server.url()))
}

/// tools/list, tools/call of `demo.echo`, prompts/get and resources/read, whatever the era.
async fn exercise(connection: &Connection) {
    let tools = connection.request(list_tools()).await.unwrap();
    assert!(tool_names(&tools).contains(&"demo.echo".to_owned()), "{tools}");

    let call = outgoing("tools/call", json!({"name": "demo.echo", "arguments": {"text": "héllo"}}), Some("demo.echo"));
    let result = connection.request(call).await.unwrap();
    assert_eq!(result["structuredContent"], json!({"text": "héllo"}), "{result}");

    let prompt =
        outgoing("prompts/get", json!({"name": "test.note", "arguments": {"topic": "rain"}}), Some("test.note"));
    let result = connection.request(prompt).await.unwrap();
    assert_eq!(result["messages"][0]["content"]["text"], "Write a short note about rain", "{result}");

    let read = outgoing("resources/read", json!({"uri": "test://text"}), Some("test://text"));
    let result = connection.request(read).await.unwrap();
    assert_eq!(result["contents"][0]["text"], "hello, world", "{result}");
}

#[tokio::test]
async fn a_listener_of_every_revision_is_reached_in_the_modern_era() {
    let server = TestServer::with_config(&config(&["2026-07-28", "2025-11-25", "2025-06-18"])).await;
    let connection = Connection::open(&upstream(&server), Inbox::discard()).await.unwrap();
    assert_eq!(connection.revision(), Revision::V2026_07_28);
    assert_eq!(connection.session(), None, "a modern connection keeps no session");
    assert_eq!(connection.server_info()["name"], "bondry", "{}", connection.server_info());
    assert!(connection.server_capabilities()["tools"].is_object(), "{}", connection.server_capabilities());
    exercise(&connection).await;

    // An unknown tool is the upstream's JSON-RPC error, typed.
    let missing = outgoing("tools/call", json!({"name": "demo.nothing", "arguments": {}}), Some("demo.nothing"));
    assert!(matches!(connection.request(missing).await, Err(ClientError::Rpc { code: -32602, .. })));
    connection.close().await;
    assert_eq!(connection.request(list_tools()).await, Err(ClientError::Closed));
    server.stop().await;
}

#[tokio::test]
async fn a_handshake_only_listener_is_reached_with_a_session() {
    let server = TestServer::with_config(&handshake_only()).await;
    let connection = Connection::open(&upstream(&server), Inbox::discard()).await.unwrap();
    assert_eq!(connection.revision(), Revision::V2025_11_25);
    let session = connection.session().expect("a session");
    assert_eq!(connection.server_info()["name"], "bondry");
    exercise(&connection).await;
    assert_eq!(connection.session().as_ref(), Some(&session), "the same session throughout");

    // Closing ends the session upstream with DELETE.
    connection.close().await;
    let ping = reqwest::Client::new()
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &session)
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(ping.status(), 404, "the session is gone");
    server.stop().await;
}

#[tokio::test]
async fn an_older_counter_offer_in_the_list_is_accepted() {
    let server = TestServer::with_config(&config(&["2025-06-18"])).await;
    let connection = Connection::open(&upstream(&server), Inbox::discard()).await.unwrap();
    assert_eq!(connection.revision(), Revision::V2025_06_18);
    exercise(&connection).await;
    connection.close().await;

    let offered =
        UpstreamSpec { protocol_versions: vec![Revision::V2026_07_28, Revision::V2025_11_25], ..upstream(&server) };
    assert!(matches!(Connection::open(&offered, Inbox::discard()).await, Err(ClientError::Protocol(_))));
    server.stop().await;
}

#[tokio::test]
async fn a_404_on_an_expired_session_initializes_again_and_retries() {
    let server = TestServer::with_config(&handshake_only()).await;
    let connection = Connection::open(&upstream(&server), Inbox::discard()).await.unwrap();
    let first = connection.session().unwrap();
    let deleted = reqwest::Client::new()
        .delete(server.url())
        .header("Mcp-Session-Id", &first)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());

    let tools = connection.request(list_tools()).await.unwrap();
    assert!(tool_names(&tools).contains(&"demo.echo".to_owned()));
    let second = connection.session().unwrap();
    assert_ne!(first, second, "a new session");
    connection.close().await;
    server.stop().await;
}

#[tokio::test]
async fn list_changed_on_the_get_stream_reaches_the_inbox() {
    let server = TestServer::with_config(&handshake_only()).await;
    let (inbox, mut notices) = Inbox::channel(8);
    let connection = Connection::open(&upstream(&server), inbox).await.unwrap();
    assert!(bondry_test_support::eventually(|| server.gauges().streams > 0).await, "the GET stream is open");

    server.swap_without("default", "demo.add");
    let notice = tokio::time::timeout(PATIENCE, notices.recv()).await.expect("a notice in time").unwrap();
    assert_eq!(notice.method, "notifications/tools/list_changed");
    connection.close().await;
    assert!(server.settles().await, "closing let go of the stream: {:?}", server.gauges());
    server.stop().await;
}

#[tokio::test]
async fn a_response_over_max_response_bytes_fails_with_too_large() {
    let server = TestServer::start().await;
    for versions in [vec![Revision::V2026_07_28], vec![Revision::V2025_11_25]] {
        let mut spec = UpstreamSpec { protocol_versions: versions, ..upstream(&server) };
        spec.tunables.max_response_bytes = 2000;
        let connection = Connection::open(&spec, Inbox::discard()).await.unwrap();
        let big = outgoing(
            "tools/call",
            json!({"name": "demo.echo", "arguments": {"text": "x".repeat(2500)}}),
            Some("demo.echo"),
        );
        assert_eq!(connection.request(big).await, Err(ClientError::TooLarge { limit: 2000 }));
        let small =
            outgoing("tools/call", json!({"name": "demo.echo", "arguments": {"text": "ok"}}), Some("demo.echo"));
        assert!(connection.request(small).await.is_ok(), "the connection stays usable");
        connection.close().await;
    }
    server.stop().await;
}

#[tokio::test]
async fn an_unreachable_url_fails_within_the_connect_timeout() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut gone = spec("gone", http(&format!("http://127.0.0.1:{port}/mcp")));
    gone.tunables.connect_timeout = Duration::from_secs(2);
    let started = Instant::now();
    let error = Connection::open(&gone, Inbox::discard()).await.unwrap_err();
    assert!(matches!(error, ClientError::Unreachable(_)), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());

    // A port that accepts but never answers runs into the timeout instead.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut silent_spec = spec("silent", http(&format!("http://{}/mcp", silent.local_addr().unwrap())));
    silent_spec.tunables.connect_timeout = Duration::from_millis(300);
    assert_eq!(Connection::open(&silent_spec, Inbox::discard()).await.unwrap_err(), ClientError::Timeout);
}

#[tokio::test]
async fn dropping_a_request_cancels_it_upstream_in_either_era() {
    let server = TestServer::start().await;
    for (versions, key) in [(vec![Revision::V2026_07_28], "modern"), (vec![Revision::V2025_11_25], "handshake")] {
        let spec = UpstreamSpec { protocol_versions: versions, ..upstream(&server) };
        let connection = Connection::open(&spec, Inbox::discard()).await.unwrap();
        let linger = outgoing(
            "tools/call",
            json!({"name": "test.linger", "arguments": {"key": key, "ms": 5000}}),
            Some("test.linger"),
        );
        let request = connection.request(linger);
        tokio::select! {
            answered = request => panic!("answered before it was dropped: {answered:?}"),
            running = server.call_running() => assert!(running),
        }
        assert!(
            bondry_test_support::wait_for(&format!("cancelled:{key}"), PATIENCE).await,
            "{key}: the call was cancelled"
        );
        connection.close().await;
        assert!(server.settles().await, "{key}: nothing left running: {:?}", server.gauges());
    }
    server.stop().await;
}
