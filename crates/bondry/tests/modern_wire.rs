//! Black-box tests of the modern (2026-07-28) request boundary: framing, era choice, the
//! `_meta` envelope, versions and routing headers, each row asserting status, code and body.

mod support;

use serde_json::{Value, json};
use support::{PROTOCOL, Req, TestServer, meta};

const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

fn discover_with_meta(meta: Value) -> Req {
    Req::modern("server/discover", json!({})).json(json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}
    }))
}

#[tokio::test]
async fn framing_errors() {
    let server = TestServer::start().await;
    for body in ["{", "", "nul", "{\"jsonrpc\":\"2.0\"} trailing"] {
        server.send(Req::modern("tools/list", json!({})).raw(body)).await.assert_error(
            400,
            None,
            -32700,
            "Parse error",
        );
    }
    let batch = serde_json::to_string(
        &json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}]),
    )
    .unwrap();
    for body in [batch.as_str(), "[]", "[[]]", "3", "\"x\"", "null"] {
        let data = server.send(Req::modern("tools/list", json!({})).raw(body)).await.assert_error(
            400,
            None,
            -32600,
            "Invalid request",
        );
        assert!(data["reason"].is_string());
    }
    server.stop().await;
}

#[tokio::test]
async fn ids_must_be_strings_or_safe_integers() {
    let server = TestServer::start().await;
    for id in [
        "null",
        "1.5",
        "1.0",
        "1e2",
        "true",
        "9007199254740992",
        "-9007199254740992",
        "-9223372036854775808",
        "18446744073709551615",
        "{}",
    ] {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"server/discover","params":{{"_meta":{}}}}}"#, meta());
        let data = server.send(Req::modern("server/discover", json!({})).raw(&body)).await.assert_error(
            400,
            None,
            -32600,
            "Invalid request",
        );
        assert_eq!(data["reason"], "id must be a string or a safe integer", "{id}");
    }
    for id in [json!("abc"), json!(9007199254740991_i64), json!(-3)] {
        let response = server
            .send(Req::modern("server/discover", json!({})).json(json!({
                "jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {"_meta": meta()}
            })))
            .await;
        assert_eq!(response.status, 200);
        assert_eq!(response.json()["id"], id);
    }
    server.stop().await;
}

#[tokio::test]
async fn duplicate_keys_anywhere_are_invalid_requests() {
    let server = TestServer::start().await;
    let m = meta().to_string();
    let cases = [
        (format!(r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"server/discover","params":{{"_meta":{m}}}}}"#), None),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"demo.echo","arguments":{{"text":"a","text":"b"}},"_meta":{m}}}}}"#
            ),
            Some(json!(1)),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":"k","method":"server/discover","params":{{"_meta":{m},"_meta":{m}}}}}"#),
            Some(json!("k")),
        ),
    ];
    for (body, id) in cases {
        let request = Req::modern("tools/call", json!({"name": "demo.echo"})).raw(&body);
        let data = server.send(request).await.assert_error(400, id, -32600, "Invalid request");
        assert_eq!(data["reason"], "duplicate object key");
    }
    server.stop().await;
}

#[tokio::test]
async fn malformed_messages_echo_a_readable_id() {
    let server = TestServer::start().await;
    let cases = [
        (json!({"jsonrpc": "1.0", "id": 5, "method": "server/discover"}), "jsonrpc must be \"2.0\""),
        (json!({"jsonrpc": "2.0", "id": 5, "method": 7}), "method must be a string"),
        (json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": [1]}), "params must be an object"),
    ];
    for (body, reason) in cases {
        let data = server.send(Req::modern("tools/list", json!({})).json(body)).await.assert_error(
            400,
            Some(json!(5)),
            -32600,
            "Invalid request",
        );
        assert_eq!(data["reason"], reason);
    }
    let response = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
    server.send(Req::modern("tools/list", json!({})).json(response)).await.assert_error(
        400,
        None,
        -32600,
        "Invalid request",
    );
    server.stop().await;
}

#[tokio::test]
async fn notifications_are_accepted_with_202_and_no_headers() {
    let server = TestServer::start().await;
    for body in [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": meta()}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "anything", "params": {"_meta": {PV: "1900-01-01"}}}),
    ] {
        let response = server.send(Req::post().json(body)).await;
        assert_eq!(response.status, 202);
        assert!(response.body.is_empty());
    }
    let bad_claim = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": {PV: 2026}}});
    let data = server.send(Req::post().json(bad_claim)).await.assert_error(400, None, -32602, "Invalid params");
    assert_eq!(data, json!({"invalid": [PV]}));
    server.stop().await;
}

#[tokio::test]
async fn envelope_requires_version_and_capabilities() {
    let server = TestServer::start().await;
    let data = server.send(discover_with_meta(json!({PV: PROTOCOL}))).await.assert_error(
        400,
        Some(json!(1)),
        -32602,
        "Invalid params",
    );
    assert_eq!(data, json!({"missing": [CAPS]}));
    // Empty capabilities are valid; unknown keys in _meta and capabilities pass.
    let ok = discover_with_meta(json!({PV: PROTOCOL, CAPS: {"x.example/ext": {}}, "com.example/trace": [1]}));
    server.send(ok).await.assert_result();
    server.stop().await;
}

#[tokio::test]
async fn envelope_type_errors_name_the_key() {
    let server = TestServer::start().await;
    let cases = [
        (PV, json!(2026)),
        (CAPS, json!([])),
        (CAPS, json!(null)),
        ("io.modelcontextprotocol/clientInfo", json!({"name": "x"})),
        ("io.modelcontextprotocol/clientInfo", json!("x")),
        ("io.modelcontextprotocol/logLevel", json!("verbose")),
        ("progressToken", json!(1.5)),
        ("progressToken", json!(true)),
        ("traceparent", json!(1)),
        ("tracestate", json!({})),
        ("baggage", json!([])),
    ];
    for (key, value) in cases {
        let mut meta = json!({PV: PROTOCOL, CAPS: {}});
        meta[key] = value;
        let data =
            server.send(discover_with_meta(meta)).await.assert_error(400, Some(json!(1)), -32602, "Invalid params");
        assert_eq!(data, json!({"invalid": [key]}), "{key}");
    }
    for (key, value) in [
        ("io.modelcontextprotocol/logLevel", json!("debug")),
        ("progressToken", json!("t")),
        ("progressToken", json!(3)),
    ] {
        let mut meta = json!({PV: PROTOCOL, CAPS: {}});
        meta[key] = value;
        server.send(discover_with_meta(meta)).await.assert_result();
    }
    server.stop().await;
}

#[tokio::test]
async fn versions_mismatched_and_unsupported() {
    let server = TestServer::start().await;
    let data = server.send(discover_with_meta(json!({PV: "2025-11-25", CAPS: {}}))).await.assert_error(
        400,
        Some(json!(1)),
        -32020,
        "Header mismatch: MCP-Protocol-Version",
    );
    assert_eq!(data, json!({"header": "MCP-Protocol-Version", "reason": "mismatch"}));
    let unsupported =
        discover_with_meta(json!({PV: "1900-01-01", CAPS: {}})).replace("MCP-Protocol-Version", "1900-01-01");
    let data = server.send(unsupported.clone()).await.assert_error(
        400,
        Some(json!(1)),
        -32022,
        "Unsupported protocol version",
    );
    assert_eq!(data, json!({"supported": ["2026-07-28"], "requested": "1900-01-01"}));
    // The body's version is judged before the header's absence.
    let data = server.send(unsupported.without("MCP-Protocol-Version")).await.assert_error(
        400,
        Some(json!(1)),
        -32022,
        "Unsupported protocol version",
    );
    assert_eq!(data["requested"], "1900-01-01");
    server.stop().await;
}

#[tokio::test]
async fn routing_header_failures() {
    let server = TestServer::start().await;
    let echo = || Req::call("demo.echo", json!({"text": "hi"}));
    let cases = [
        (echo().without("MCP-Protocol-Version"), "MCP-Protocol-Version", "missing"),
        (echo().header("mcp-protocol-version", PROTOCOL), "MCP-Protocol-Version", "repeated"),
        (echo().without("Mcp-Method"), "Mcp-Method", "missing"),
        (echo().replace("Mcp-Method", "tools/list"), "Mcp-Method", "mismatch"),
        (echo().header("Mcp-Method", "tools/call"), "Mcp-Method", "repeated"),
        (echo().without("Mcp-Name"), "Mcp-Name", "missing"),
        (echo().replace("Mcp-Name", "demo.add"), "Mcp-Name", "mismatch"),
        (echo().replace("Mcp-Name", "Demo.Echo"), "Mcp-Name", "mismatch"),
        (echo().header("Mcp-Name", "demo.echo"), "Mcp-Name", "repeated"),
        (echo().replace("Mcp-Name", "=?base64?ZGVtby5lY2g?="), "Mcp-Name", "invalid"),
        (echo().replace("Mcp-Name", "=?base64?ZGVtby5lY2h=?="), "Mcp-Name", "invalid"),
        (echo().replace("Mcp-Name", "=?base64?/w==?="), "Mcp-Name", "invalid"),
        (echo().replace("Mcp-Name", "=?base64?ZGVt*b==?="), "Mcp-Name", "invalid"),
        (echo().without("Mcp-Name").header_bytes("Mcp-Name", b"demo.\xe9cho"), "Mcp-Name", "invalid"),
        (echo().replace("Mcp-Name", "=?base64?ZGVtby5hZGQ=?="), "Mcp-Name", "mismatch"),
    ];
    for (request, header, reason) in cases {
        let data =
            server.send(request).await.assert_error(400, Some(json!(1)), -32020, &format!("Header mismatch: {header}"));
        assert_eq!(data, json!({"header": header, "reason": reason}));
    }
    server.stop().await;
}

#[tokio::test]
async fn mcp_name_may_be_padded_or_encoded() {
    let server = TestServer::start().await;
    for name in ["  demo.echo\t", "=?base64?ZGVtby5lY2hv?=", " =?base64?ZGVtby5lY2hv?= "] {
        let result =
            server.send(Req::call("demo.echo", json!({"text": "hi"})).replace("Mcp-Name", name)).await.assert_result();
        assert_eq!(result["structuredContent"], json!({"text": "hi"}), "{name:?}");
    }
    // Names that need the sentinel round-trip through it.
    let odd = " spaced ";
    let result =
        server.send(Req::call(odd, json!({})).replace("Mcp-Name", &bondry_mcp_proto::sentinel::encode(odd))).await;
    assert_eq!(result.json()["error"]["message"], "Unknown tool:  spaced ");
    server.stop().await;
}

#[tokio::test]
async fn era_choice_without_a_claim() {
    // An endpoint with no handshake revision (handshake endpoints: see handshake.rs).
    let server = TestServer::with_config(&support::modern_only_config()).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    let data = server.send(Req::post().json(initialize)).await.assert_error(
        400,
        Some(json!(1)),
        -32022,
        "Unsupported protocol version",
    );
    assert_eq!(data, json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}));

    let unclaimed = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let data = server
        .send(Req::post().header("MCP-Protocol-Version", PROTOCOL).json(unclaimed.clone()))
        .await
        .assert_error(400, Some(json!(1)), -32602, "Invalid params");
    assert_eq!(data, json!({"missing": [PV, CAPS]}));
    let data = server.send(Req::post().json(unclaimed.clone())).await.assert_error(
        400,
        Some(json!(1)),
        -32022,
        "Unsupported protocol version",
    );
    assert_eq!(data, json!({"supported": ["2026-07-28"], "requested": "2025-03-26"}));
    let data = server
        .send(Req::post().header("MCP-Protocol-Version", "2025-11-25").json(unclaimed))
        .await
        .assert_error(400, Some(json!(1)), -32022, "Unsupported protocol version");
    assert_eq!(data["requested"], "2025-11-25");

    // A claimed initialize is a modern request for a method this era does not have.
    server.send(Req::modern("initialize", json!({}))).await.assert_error(
        404,
        Some(json!(1)),
        -32601,
        "Method not found: initialize",
    );
    // A stray session id on a modern request is ignored.
    server.send(Req::modern("server/discover", json!({})).header("Mcp-Session-Id", "abc")).await.assert_result();
    server.stop().await;
}

#[tokio::test]
async fn unknown_methods_are_404() {
    let server = TestServer::start().await;
    for method in ["ping", "prompts/list", "resources/list", "logging/setLevel", "nope"] {
        server.send(Req::modern(method, json!({}))).await.assert_error(
            404,
            Some(json!(1)),
            -32601,
            &format!("Method not found: {method}"),
        );
    }
    let read = Req::modern("resources/read", json!({"uri": "file:///x"})).header("Mcp-Name", "file:///x");
    server.send(read).await.assert_error(404, Some(json!(1)), -32601, "Method not found: resources/read");
    server.stop().await;
}
