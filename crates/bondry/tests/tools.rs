//! Black-box tests of `server/discover`, `tools/list` and `tools/call` on the real server.

use bondry_test_support as support;

use serde_json::{Value, json};
use support::{Req, TestConfig, TestServer};

#[tokio::test]
async fn discover_announces_modern_revisions_tools_and_caching() {
    let server = TestServer::start().await;
    let result = server.send(Req::modern("server/discover", json!({}))).await.assert_result();
    assert_eq!(
        result,
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}, "logging": {}},
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bondry", "version": env!("CARGO_PKG_VERSION")}}
        })
    );
    server.stop().await;
}

/// Every page of `tools/list`, following `nextCursor`.
async fn all_tools(server: &TestServer) -> (Vec<Value>, usize) {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = cursor.as_ref().map_or_else(|| json!({}), |cursor| json!({"cursor": cursor}));
        let result = server.send(Req::modern("tools/list", params)).await.assert_result();
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["ttlMs"], 0);
        assert_eq!(result["cacheScope"], "private");
        assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "bondry");
        tools.extend(result["tools"].as_array().unwrap().iter().cloned());
        pages += 1;
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
            None => return (tools, pages),
        }
    }
}

#[tokio::test]
async fn list_pages_through_the_callers_view_in_id_order() {
    let server = TestServer::start().await;
    let (tools, pages) = all_tools(&server).await;
    let names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert!(names.contains(&"demo.echo") && names.contains(&"test.params"));
    assert!(!names.contains(&"admin.reset"), "not granted to anonymous callers");
    assert_eq!(pages, names.len().div_ceil(3));
    for tool in &tools {
        let hash = tool["_meta"]["dev.bondry/hash"].as_str().unwrap();
        assert!(hash.starts_with("sha256:") && hash.len() == 7 + 64, "{hash}");
        assert_eq!(tool["inputSchema"]["type"], "object");
    }
    let echo = tools.iter().find(|tool| tool["name"] == "demo.echo").unwrap();
    assert_eq!(echo["title"], "Echo");
    assert_eq!(
        echo["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    // The content hash is SHA-256 of the RFC 8785 form of the tool's definition (name,
    // schemas, annotations) and its binding.
    let hashed = json!({
        "name": "demo.echo",
        "inputSchema": echo["inputSchema"],
        "outputSchema": echo["outputSchema"],
        "annotations": echo["annotations"],
        "binding": {"kind": "builtin", "target": "demo.echo"},
    });
    assert_eq!(echo["_meta"]["dev.bondry/hash"], format!("sha256:{}", bondry_core::canon::digest(&hashed)));
    let forecast = tools.iter().find(|tool| tool["name"] == "demo.forecast").unwrap();
    assert_eq!(forecast["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region");
    // Listing is deterministic: the same tools in the same order every time.
    assert_eq!(all_tools(&server).await.0, tools);
    server.stop().await;
}

#[tokio::test]
async fn success_shapes() {
    let server = TestServer::start().await;
    let result = server.send(Req::call("demo.echo", json!({"text": "hi"}))).await.assert_result();
    assert_eq!(result["content"], json!([{"type": "text", "text": "{\"text\":\"hi\"}"}]));
    assert_eq!(result["structuredContent"], json!({"text": "hi"}));
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("isError").is_none());
    let invocation = result["_meta"]["dev.bondry/invocationId"].as_str().unwrap().to_owned();
    assert_eq!(invocation.len(), 32);
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "bondry");

    let forecast = Req::call("demo.forecast", json!({"region": "eu", "days": 2})).header("Mcp-Param-Region", "eu");
    let result = server.send(forecast).await.assert_result();
    assert_eq!(result["content"], json!([{"type": "text", "text": "2-day outlook for eu"}]));
    assert_eq!(result["structuredContent"]["region"], "eu");

    let result = server.send(Req::call("test.scalar", json!({}))).await.assert_result();
    assert_eq!(result["structuredContent"], 42, "modern structured content may be any JSON");
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());

    let traced = Req::modern("tools/call", json!({"name": "demo.echo", "arguments": {"text": "t"}}));
    let mut body: Value = serde_json::from_slice(&traced.body).unwrap();
    body["params"]["_meta"]["traceparent"] = json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    server.send(traced.json(body)).await.assert_result();

    let records = server.stop().await;
    let first = &records[0];
    assert_eq!(first["realm"], "default");
    assert_eq!(first["principal"], "anonymous");
    assert_eq!(first["principal_kind"], "anonymous");
    assert_eq!(first["adapter"], "mcp");
    assert_eq!(first["capability"], "demo.echo");
    assert_eq!(first["invocation_id"], invocation);
    assert_eq!(first["outcome"], "succeeded");
    assert!(first["duration_us"].is_u64());
    assert_eq!(
        first["arguments_sha256"],
        bondry_core::canon::digest(&json!({"text": "hi"})),
        "digest of the canonical arguments"
    );
    assert_eq!(first["result_sha256"].as_str().unwrap().len(), 64);
    assert!(first.get("arguments").is_none(), "arguments are not recorded unless opted in");
    assert!(first["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(records[3]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
}

#[tokio::test]
async fn required_client_capabilities() {
    let server = TestServer::start().await;
    let data = server.send(Req::call("test.elicits", json!({}))).await.assert_error(
        400,
        Some(json!(1)),
        -32021,
        "Missing required client capability",
    );
    assert_eq!(data, json!({"requiredCapabilities": {"elicitation": {"form": {}}}}));
    let mut request = Req::call("test.elicits", json!({}));
    let mut body: Value = serde_json::from_slice(&request.body).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    request = request.json(body);
    assert_eq!(server.send(request).await.assert_result()["structuredContent"], json!({"ok": true}));
    // A hidden tool is unknown before its capabilities are looked at.
    server.send(Req::call("admin.reset", json!({}))).await.assert_error(
        200,
        Some(json!(1)),
        -32602,
        "Unknown tool: admin.reset",
    );
    let records = server.stop().await;
    assert_eq!(records[0]["outcome"], "invalid_input");
}

#[tokio::test]
async fn input_responses_and_request_state() {
    let server = TestServer::start().await;
    let with = |key: &str, value: Value| {
        let request = Req::call("demo.echo", json!({"text": "hi"}));
        let mut body: Value = serde_json::from_slice(&request.body).unwrap();
        body["params"][key] = value;
        request.json(body)
    };
    for bad in [json!([]), json!("x"), json!({"a": 1}), json!({"a": {}, "b": null})] {
        server.send(with("inputResponses", bad)).await.assert_error(
            400,
            Some(json!(1)),
            -32602,
            "invalid inputResponses",
        );
    }
    server.send(with("inputResponses", json!({"a": {"action": "accept"}}))).await.assert_result();
    server.send(with("requestState", json!("eyJhbGciOiJkaXIifQ..x.y.z"))).await.assert_error(
        400,
        Some(json!(1)),
        -32602,
        "invalid, expired or mismatched requestState",
    );
    server.stop().await;
}

#[tokio::test]
async fn param_headers_mirror_declared_arguments() {
    let server = TestServer::start().await;
    let params = |arguments: Value| Req::call("test.params", arguments);
    let ok = [
        params(json!({})),
        params(json!({"n": 7})).header("Mcp-Param-N", "7"),
        params(json!({"n": 7})).header("mcp-param-n", "7.0"),
        params(json!({"n": -2, "flag": false})).header("Mcp-Param-N", "-2").header("Mcp-Param-Flag", "false"),
        params(json!({"opts": {"name": "Zoë"}})).header("Mcp-Param-Name", "=?base64?Wm/Dqw==?="),
        params(json!({"n": null})),
        params(json!({})).header("Mcp-Param-Other", "ignored"),
        params(json!({})).header("Mcp-Param-Other", "undeclared").header("Mcp-Param-Other", "repeats are ignored too"),
    ];
    for request in ok {
        server.send(request).await.assert_result();
    }
    let refused = [
        (params(json!({"n": 7})), "Mcp-Param-N", "missing"),
        (params(json!({"n": 7})).header("Mcp-Param-N", "8"), "Mcp-Param-N", "mismatch"),
        (params(json!({})).header("Mcp-Param-N", "8"), "Mcp-Param-N", "mismatch"),
        (params(json!({"n": null})).header("Mcp-Param-N", "8"), "Mcp-Param-N", "mismatch"),
        (params(json!({"flag": true})).header("Mcp-Param-Flag", "TRUE"), "Mcp-Param-Flag", "mismatch"),
        (
            params(json!({"opts": {"name": "Zoë"}})).header("Mcp-Param-Name", "=?base64?Wm/Dqw?="),
            "Mcp-Param-Name",
            "invalid",
        ),
        (params(json!({"n": 7})).header("Mcp-Param-N", "7").header("mcp-param-n", "7"), "Mcp-Param-N", "repeated"),
    ];
    for (request, header, reason) in refused {
        let data =
            server.send(request).await.assert_error(400, Some(json!(1)), -32020, &format!("Header mismatch: {header}"));
        assert_eq!(data, json!({"header": header, "reason": reason}));
    }
    // A wrong argument type skips the comparison and fails validation instead.
    let result = server.send(params(json!({"n": "seven"})).header("Mcp-Param-N", "7")).await.assert_result();
    assert_eq!(result["isError"], true);
    let forecast = Req::call("demo.forecast", json!({"region": "eu"})).header("Mcp-Param-Region", "us");
    server.send(forecast).await.assert_error(400, Some(json!(1)), -32020, "Header mismatch: Mcp-Param-Region");
    server.stop().await;
}

#[tokio::test]
async fn a_caller_that_goes_away_cancels_the_call() {
    let server = TestServer::start().await;
    let request = Req::call("test.slow", json!({"ms": 10_000}));
    server.send_and_leave(&reqwest::Client::new(), &request).await;
    server.audited(1).await;
    let records = server.stop().await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["capability"], "test.slow");
    assert_eq!(records[0]["outcome"], "cancelled");
}

#[tokio::test]
async fn a_hidden_tool_and_an_absent_one_are_byte_identical() {
    let hidden = TestServer::start().await;
    let without_it = TestConfig::new().without_capability("admin.reset").text();
    assert!(!without_it.contains("\"admin.reset\""));
    let absent = TestServer::with_config(&without_it).await;
    let request = || Req::call("admin.reset", json!({}));
    let (from_hidden, from_absent) = (hidden.send(request()).await, absent.send(request()).await);
    assert_eq!(from_hidden.status, from_absent.status);
    assert_eq!(from_hidden.body, from_absent.body);
    assert_eq!(from_hidden.headers.get("content-type"), from_absent.headers.get("content-type"));
    assert_eq!(from_hidden.headers.get("content-length"), from_absent.headers.get("content-length"));
    assert_eq!(hidden.stop().await[0]["outcome"], "denied");
    assert_eq!(absent.stop().await[0]["outcome"], "not_found");
}

#[tokio::test]
async fn every_outcome_is_audited_once_with_its_fields_and_no_raw_arguments() {
    let server = TestServer::start().await;
    let secret = json!({"text": "a secret argument"});
    server.send(Req::call("demo.echo", secret.clone())).await.assert_result();
    server.send(Req::call("test.tool_error", json!({}))).await.assert_result();
    server.send(Req::call("demo.add", json!({"a": "a secret argument"}))).await.assert_result();
    server.send(Req::call("admin.reset", json!({}))).await;
    server.send(Req::call("no.such", json!({}))).await;
    server.send(Req::call("test.fail", json!({}))).await.assert_result();
    let records = server.stop().await;
    let outcomes: Vec<&str> = records.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["succeeded", "tool_error", "invalid_input", "denied", "not_found", "handler_failed"]);
    for record in &records {
        let line = record.to_string();
        assert!(!line.contains("a secret argument"), "raw arguments in {line}");
        for field in ["time", "realm", "principal", "principal_kind", "adapter", "capability", "outcome", "duration_us"]
        {
            assert!(!record[field].is_null(), "{field} in {line}");
        }
        let dispatched = !matches!(record["outcome"].as_str(), Some("denied" | "not_found"));
        assert_eq!(record["invocation_id"].is_string(), dispatched, "{line}");
        assert_eq!(record["arguments_sha256"].is_string(), dispatched, "{line}");
        assert_eq!(record["result_sha256"].is_string(), dispatched, "{line}");
        assert_eq!(record["record_version"], 2, "{line}");
        // The backend is named once the handler ran: not for arguments it never saw.
        let ran = dispatched && record["outcome"] != "invalid_input";
        assert_eq!(record.get("backend_kind").is_some(), ran, "{line}");
        assert_eq!(record.get("backend_duration_us").is_some(), ran, "{line}");
    }
    assert_eq!(records[0]["arguments_sha256"], bondry_core::canon::digest(&secret));
}

#[tokio::test]
async fn a_builtin_calls_record_names_its_handler_and_the_time_it_ran() {
    // A capability whose id is not its handler's name: the record names the handler.
    let config = TestConfig::new().capability("test.nap", "tool", "test.slow", None).text();
    let server = TestServer::with_config(&config).await;
    server.send(Req::call("test.nap", json!({"ms": 50}))).await.assert_result();
    let records = server.stop().await;
    let record = &records[0];
    assert_eq!(record["record_version"], 2, "{record}");
    assert_eq!(record["capability"], "test.nap", "{record}");
    assert_eq!(record["backend_kind"], "builtin", "{record}");
    assert_eq!(record["backend"], "test.slow", "{record}");
    let backend_us = record["backend_duration_us"].as_u64().unwrap();
    assert!(backend_us >= 50_000, "the handler slept 50 ms: {record}");
    assert!(backend_us <= record["duration_us"].as_u64().unwrap(), "within the whole call: {record}");
}

#[tokio::test]
async fn schemas_keep_the_order_their_properties_were_written_in() {
    // Clients build forms from a tool's schema in property order: it is kept as configured.
    let schema = r#"{"type":"object","properties":{"text":{"type":"string"},"zeta":{"type":"integer"},"alpha":{"type":"boolean"}},"required":["text"]}"#;
    let config = TestConfig::new().set_on_capability("demo.echo", "input_schema", schema).text();
    let server = TestServer::with_config(&config).await;
    let (tools, _) = all_tools(&server).await;
    let echo = tools.iter().find(|tool| tool["name"] == "demo.echo").expect("demo.echo is listed");
    let properties: Vec<&str> =
        echo["inputSchema"]["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(properties, ["text", "zeta", "alpha"]);
    server.stop().await;
}

#[tokio::test]
async fn an_answer_about_bad_input_does_not_grow_with_the_input() {
    let server =
        TestServer::with_config(&TestConfig::new().set("listeners.main.max_body_bytes", 4_194_304).text()).await;
    let mut arguments: serde_json::Map<String, Value> =
        (0..60_000).map(|n| (format!("key{n}"), json!("do not repeat me"))).collect();
    arguments.insert("text".into(), json!("hello"));
    let result = server.send(Req::call("demo.echo", Value::Object(arguments))).await.assert_result();
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.len() < 1024, "{} bytes: {text}", text.len());
    // A name no id can match is repeated cut to the longest id.
    let long = "x".repeat(100_000);
    let answer = server.send(Req::call(&long, json!({}))).await;
    answer.assert_error(200, Some(json!(1)), -32602, &format!("Unknown tool: {}…", "x".repeat(64)));
    assert_eq!(
        text,
        "Invalid arguments for tool demo.echo: /: additionalProperties: Additional properties are not allowed \
         ('key0', 'key1', 'key2', 'key3', 'key4' and 59995 more were unexpected)"
    );
    server.stop().await;
}
