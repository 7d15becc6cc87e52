//! Interop: the official Rust MCP SDK client (rmcp 3.11.0) drives the real server over
//! Streamable HTTP with the `server/discover` lifecycle at protocol 2026-07-28 (no
//! `initialize`). Checks that discovery reports the server as "bondry", that the paginated
//! `tools/list` yields the demo tools and hides `admin.reset`, that `demo.echo` returns
//! structured content and an invocation id in `_meta`, that rmcp promotes the
//! `x-mcp-header` argument of `demo.forecast` to the `Mcp-Param-Region` header the server
//! requires, that invalid input is a tool result with `isError`, that an unknown tool is a
//! JSON-RPC error -32602, and that the audit trail records the echo as succeeded.

use bondry_test_support as support;

use std::future::Future;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::ServiceError;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};
use support::TestServer;

/// Awaits `future`, failing the test if it takes more than 10 seconds.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future).await.unwrap_or_else(|_| panic!("{what} timed out"))
}

/// `tools/call` parameters for `name` with the JSON object `arguments`.
fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    CallToolRequestParams::new(name).with_arguments(arguments)
}

#[tokio::test]
async fn rmcp_client_discovers_lists_and_calls_tools() {
    let server = TestServer::start().await;

    // (1) Discover at 2026-07-28; no initialize.
    let transport =
        StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(server.url()));
    let client_config =
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("bondry-rmcp-interop", "0.0.0"));
    let client = within(
        "server/discover",
        client_config.serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
        ),
    )
    .await
    .expect("discover startup");
    let peer_info = client.peer_info().expect("discover sets the peer info");
    assert_eq!(peer_info.protocol_version, ProtocolVersion::V_2026_07_28);
    let server_info = peer_info.server_info.as_ref().expect("discover reports serverInfo");
    assert_eq!(server_info.name, "bondry", "{peer_info:?}");
    assert!(peer_info.capabilities.tools.is_some(), "{peer_info:?}");

    // (2) Every page of tools/list (3 per page in the test config).
    let tools = within("tools/list", client.list_all_tools()).await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| &*tool.name).collect();
    for expected in ["demo.echo", "demo.add", "demo.forecast"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    assert!(!names.contains(&"admin.reset"), "admin.reset listed to an anonymous caller: {names:?}");
    assert!(names.len() > 3, "expected more than one page of tools: {names:?}");

    // (3) demo.echo returns structured content and an invocation id.
    let echo =
        within("demo.echo", client.call_tool(call("demo.echo", json!({"text": "hi"})))).await.expect("demo.echo");
    assert_ne!(echo.is_error, Some(true), "{echo:?}");
    assert_eq!(echo.structured_content, Some(json!({"text": "hi"})), "{echo:?}");
    let meta = serde_json::to_value(echo.meta.as_ref().expect("demo.echo result has _meta")).unwrap();
    assert!(
        meta.get("dev.bondry/invocationId").and_then(Value::as_str).is_some_and(|id| !id.is_empty()),
        "no invocation id in {meta}"
    );

    // (4) demo.forecast needs Mcp-Param-Region, which rmcp derives from the listed schema.
    let forecast =
        within("demo.forecast", client.call_tool(call("demo.forecast", json!({"region": "eu-west", "days": 2}))))
            .await
            .expect("demo.forecast (rmcp must send Mcp-Param-Region)");
    assert_ne!(forecast.is_error, Some(true), "{forecast:?}");
    let structured = forecast.structured_content.expect("demo.forecast returns structured content");
    assert_eq!(structured["region"], "eu-west", "{structured}");
    assert_eq!(structured["days"].as_array().map(Vec::len), Some(2), "{structured}");

    // (5) Invalid input is a tool result with isError, not a JSON-RPC error.
    let add = within("demo.add", client.call_tool(call("demo.add", json!({"a": "x", "b": 1}))))
        .await
        .expect("invalid input is a result, not an error");
    assert_eq!(add.is_error, Some(true), "{add:?}");

    // (6) An unknown tool is a JSON-RPC error -32602.
    let error =
        within("nope", client.call_tool(call("nope", json!({})))).await.expect_err("an unknown tool is an error");
    match &error {
        ServiceError::McpError(data) => assert_eq!(data.code.0, -32602, "{data:?}"),
        other => panic!("expected an MCP error, got {other:?}"),
    }

    within("client shutdown", client.cancel()).await.expect("client shutdown");

    let records = server.stop().await;
    assert!(
        records.iter().any(|record| record["capability"] == "demo.echo" && record["outcome"] == "succeeded"),
        "no succeeded demo.echo in {records:?}"
    );
}

/// Connects with `lifecycle` and returns the client with the protocol it settled on.
async fn connect(
    server: &TestServer,
    config: ClientConfig,
    lifecycle: ClientLifecycleMode,
) -> rmcp::service::RunningService<rmcp::RoleClient, ClientConfig> {
    let transport =
        StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(server.url()));
    within("connect", config.serve_with_lifecycle(transport, lifecycle)).await.expect("the client connects")
}

/// Lists every tool and calls `demo.echo` through a connected client.
async fn list_and_call(client: &rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>) {
    let tools = within("tools/list", client.list_all_tools()).await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| &*tool.name).collect();
    assert!(names.contains(&"demo.echo") && !names.contains(&"admin.reset"), "{names:?}");
    let echo = within("demo.echo", client.call_tool(call("demo.echo", json!({"text": "hi"})))).await.expect("call");
    assert_eq!(echo.structured_content, Some(json!({"text": "hi"})), "{echo:?}");
    let add = within("demo.add", client.call_tool(call("demo.add", json!({"a": 2, "b": 3})))).await.expect("call");
    assert_eq!(add.structured_content, Some(json!({"sum": 5})), "{add:?}");
}

#[tokio::test]
async fn rmcp_client_initializes_at_each_handshake_revision() {
    let server = TestServer::start().await;
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2025_06_18] {
        let config = ClientConfig::new(ClientCapabilities::default(), Implementation::new("bondry-rmcp-interop", "0"))
            .with_protocol_version(version.clone());
        let client = connect(&server, config, ClientLifecycleMode::Initialize).await;
        let peer = client.peer_info().expect("initialize sets the peer info");
        assert_eq!(peer.protocol_version, version);
        assert_eq!(peer.server_info.as_ref().map(|info| info.name.as_str()), Some("bondry"));
        list_and_call(&client).await;
        within("client shutdown", client.cancel()).await.expect("client shutdown");
    }
    server.stop().await;
}

#[tokio::test]
async fn rmcp_auto_mode_lands_in_the_modern_era() {
    let server = TestServer::start().await;
    let config = ClientConfig::new(ClientCapabilities::default(), Implementation::new("bondry-rmcp-interop", "0"));
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let client = connect(&server, config, lifecycle).await;
    assert_eq!(client.peer_info().expect("peer info").protocol_version, ProtocolVersion::V_2026_07_28);
    list_and_call(&client).await;
    within("client shutdown", client.cancel()).await.expect("client shutdown");
    server.stop().await;
}

#[tokio::test]
async fn rmcp_client_calls_an_upstreams_tools_through_the_gateway_at_each_revision() {
    for era in support::UpstreamEra::BOTH {
        let gateway = support::DemoGateway::start(support::bondry_exe!(), era).await;
        let lifecycles = [
            (ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }, None),
            (ClientLifecycleMode::Initialize, Some(ProtocolVersion::V_2025_11_25)),
            (ClientLifecycleMode::Initialize, Some(ProtocolVersion::V_2025_06_18)),
        ];
        for (lifecycle, version) in lifecycles {
            let mut config =
                ClientConfig::new(ClientCapabilities::default(), Implementation::new("bondry-rmcp-interop", "0"));
            if let Some(version) = version.clone() {
                config = config.with_protocol_version(version);
            }
            let transport = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(
                gateway.url(),
            ));
            let client = within("connect", config.serve_with_lifecycle(transport, lifecycle)).await.expect("connects");
            let peer = client.peer_info().expect("the gateway's server info");
            let expected = version.unwrap_or(ProtocolVersion::V_2026_07_28);
            assert_eq!(peer.protocol_version, expected, "{era:?}");
            assert_eq!(peer.server_info.as_ref().map(|info| info.name.as_str()), Some("bondry"), "{era:?}");
            let tools = within("tools/list", client.list_all_tools()).await.expect("tools/list");
            let names: Vec<&str> = tools.iter().map(|tool| &*tool.name).collect();
            assert!(
                names.contains(&"up.demo.echo") && !names.contains(&"up.admin.reset"),
                "{era:?} {expected:?}: {names:?}"
            );
            let echo =
                within("echo", client.call_tool(call("up.demo.echo", json!({"text": "hi"})))).await.expect("call");
            assert_eq!(echo.structured_content, Some(json!({"text": "hi"})), "{era:?} {expected:?}: {echo:?}");
            let add =
                within("add", client.call_tool(call("up.demo.add", json!({"a": 2, "b": 3})))).await.expect("call");
            assert_eq!(add.structured_content, Some(json!({"sum": 5})), "{era:?} {expected:?}: {add:?}");
            within("client shutdown", client.cancel()).await.expect("client shutdown");
        }
    }
}
