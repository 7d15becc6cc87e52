//! Upstream MCP servers through the real binary: a second Bondry over Streamable HTTP
//! and an rmcp server over stdio become capabilities of the gateway, listed and called
//! by clients of either era, and an upstream that dies answers as unavailable.

use bondry_test_support as support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{Binary, TestConfig, table};

/// Writes `config` into `dir` as `name` and returns its path.
fn written(dir: &Path, name: &str, config: &TestConfig) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, config.text()).unwrap();
    path
}

/// A gateway whose anonymous callers may use everything under `up.*`, and that fronts
/// the upstream `stanza` (named `up`).
fn gateway(stanza: toml::Table) -> TestConfig {
    gateway_granting(stanza, &["up.*"])
}

fn gateway_granting(stanza: toml::Table, grants: &[&str]) -> TestConfig {
    TestConfig::bare()
        .set("realms.default.anonymous_roles", vec!["caller"])
        .role("caller", grants)
        .push("realms.default.upstreams", stanza)
}

/// A Bondry to front: the demo tools, open to anyone.
fn demo_upstream() -> TestConfig {
    TestConfig::bare()
        .set("realms.default.anonymous_roles", vec!["demo"])
        .role("demo", &["demo.*"])
        .capability("demo.echo", "tool", "demo.echo", None)
        .capability("demo.add", "tool", "demo.add", None)
}

fn http_upstream(port: u16) -> toml::Table {
    table([("name", "up".into()), ("transport", "http".into()), ("url", format!("http://127.0.0.1:{port}/mcp").into())])
}

async fn body(response: reqwest::Response) -> Value {
    let status = response.status().as_u16();
    let mut body: Value = response.json().await.unwrap();
    body["status"] = json!(status);
    body
}

fn tool_names(listed: &Value) -> Vec<String> {
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("a tool list: {listed}"));
    tools.iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
}

/// A handshake-era session with `server`: its id, after `initialize` and `initialized`.
async fn session(client: &reqwest::Client, server: &Binary) -> String {
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .unwrap();
    let sid = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    in_session(client, server, &sid, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    sid
}

async fn in_session(client: &reqwest::Client, server: &Binary, sid: &str, message: Value) -> Value {
    let response = client
        .post(format!("http://127.0.0.1:{}/mcp", server.port))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&message)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_bondry_over_http_serves_its_tools_through_the_gateway_in_either_era() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = Binary::serve(support::bondry_exe!(), &written(dir.path(), "upstream.toml", &demo_upstream()), &[]);
    let audit = dir.path().join("audit.jsonl");
    let config =
        gateway(http_upstream(upstream.port)).set("audit.sink", "file").set("audit.path", audit.to_str().unwrap());
    let front = Binary::serve(support::bondry_exe!(), &written(dir.path(), "gateway.toml", &config), &[]);
    front.logged("upstream up: ", 1).await;
    let client = reqwest::Client::new();

    // A modern caller: the upstream's tools under the prefix, called under the exposed id.
    let listed = body(front.post(&client, "tools/list", json!({})).await).await;
    let names = tool_names(&listed);
    assert!(names.contains(&"up.demo.echo".to_owned()), "{names:?}");
    let called =
        body(front.post(&client, "tools/call", json!({"name": "up.demo.echo", "arguments": {"text": "hi"}})).await)
            .await;
    let direct =
        body(upstream.post(&client, "tools/call", json!({"name": "demo.echo", "arguments": {"text": "hi"}})).await)
            .await;
    assert_eq!(called["status"], 200, "{called}");
    assert_eq!(called["result"]["content"], direct["result"]["content"], "the upstream's answer, unchanged");
    assert_eq!(called["result"]["resultType"], "complete");
    // Arguments are checked against the upstream's schema before it sees them.
    let refused =
        body(front.post(&client, "tools/call", json!({"name": "up.demo.echo", "arguments": {"text": 5}})).await).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(refused["result"]["_meta"]["dev.bondry/errorCode"], "invalid_input");

    // A session caller sees and calls the same.
    let sid = session(&client, &front).await;
    let listed = in_session(&client, &front, &sid, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert!(tool_names(&listed).contains(&"up.demo.echo".to_owned()), "{listed}");
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "up.demo.echo", "arguments": {"text": "hi"}}});
    let called = in_session(&client, &front, &sid, call).await;
    assert_eq!(called["result"]["content"], direct["result"]["content"], "{called}");
    assert!(called["result"].get("resultType").is_none(), "no modern keys in a session: {called}");

    // One record per caller call, naming the upstream and its share of the duration.
    let mut relayed = Vec::new();
    let complete = support::eventually(|| {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        relayed = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|record| record["capability"] == "up.demo.echo")
            .collect();
        relayed.len() == 3
    })
    .await;
    assert!(complete, "two calls and the refused one: {relayed:?}");
    for record in relayed.iter().filter(|record| record["outcome"] == "succeeded") {
        assert_eq!(record["upstream"], "up", "{record}");
        let upstream_us = record["upstream_duration_us"].as_u64().unwrap();
        assert!(upstream_us > 0 && upstream_us <= record["duration_us"].as_u64().unwrap(), "{record}");
    }
    let refused = relayed.iter().find(|record| record["outcome"] == "invalid_input").unwrap();
    assert!(refused.get("upstream").is_none(), "arguments refused before the upstream saw them: {refused}");
}

#[tokio::test]
async fn an_rmcp_server_over_stdio_serves_its_tools_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let command = support::test_upstream_exe();
    let stanza =
        table([("name", "up".into()), ("transport", "stdio".into()), ("command", command.to_str().unwrap().into())]);
    let front = Binary::serve(support::bondry_exe!(), &written(dir.path(), "gateway.toml", &gateway(stanza)), &[]);
    front.logged("upstream up: ", 1).await;
    let client = reqwest::Client::new();
    let listed = body(front.post(&client, "tools/list", json!({})).await).await;
    assert!(tool_names(&listed).contains(&"up.echo".to_owned()), "{listed}");
    let called =
        body(front.post(&client, "tools/call", json!({"name": "up.echo", "arguments": {"text": "over stdio"}})).await)
            .await;
    assert_eq!(called["result"]["content"][0]["text"], "over stdio", "{called}");
}

#[tokio::test]
async fn an_upstream_that_died_answers_unavailable_and_the_gateway_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let mut upstream =
        Binary::serve(support::bondry_exe!(), &written(dir.path(), "upstream.toml", &demo_upstream()), &[]);
    let config = gateway_granting(http_upstream(upstream.port), &["up.*", "demo.*"]).capability(
        "demo.echo",
        "tool",
        "demo.echo",
        None,
    );
    let front = Binary::serve(support::bondry_exe!(), &written(dir.path(), "gateway.toml", &config), &[]);
    front.logged("upstream up: ", 1).await;
    upstream.child.kill().unwrap();
    upstream.child.wait().unwrap();
    let client = reqwest::Client::new();
    let called =
        body(front.post(&client, "tools/call", json!({"name": "up.demo.echo", "arguments": {"text": "hi"}})).await)
            .await;
    assert_eq!(called["status"], 200, "{called}");
    assert_eq!(called["result"]["isError"], true, "{called}");
    assert_eq!(called["result"]["_meta"]["dev.bondry/errorCode"], "upstream_unavailable");
    assert_eq!(called["result"]["_meta"]["dev.bondry/retryable"], true);
    // The capability did not vanish, and the gateway's own tool still answers.
    let listed = body(front.post(&client, "tools/list", json!({})).await).await;
    assert!(tool_names(&listed).contains(&"up.demo.echo".to_owned()), "{listed}");
    let own =
        body(front.post(&client, "tools/call", json!({"name": "demo.echo", "arguments": {"text": "mine"}})).await)
            .await;
    assert_eq!(own["result"]["structuredContent"]["text"], "mine", "{own}");
}

#[tokio::test]
async fn a_reload_adds_changes_and_removes_upstreams_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = Binary::serve(support::bondry_exe!(), &written(dir.path(), "upstream.toml", &demo_upstream()), &[]);
    let up = http_upstream(upstream.port);
    let path = written(dir.path(), "gateway.toml", &gateway_granting(up.clone(), &["up.*", "renamed.*", "two.*"]));
    let front = Binary::serve(support::bondry_exe!(), &path, &[]);
    front.logged("upstream up: ", 1).await;
    let client = reqwest::Client::new();
    let names = || async { tool_names(&body(front.post(&client, "tools/list", json!({})).await).await) };

    // A new upstream, and a new prefix for the one that stays: its connection is kept.
    let mut renamed = up.clone();
    renamed.insert("prefix".into(), "renamed".into());
    let two = table([
        ("name", "two".into()),
        ("transport", "stdio".into()),
        ("command", support::test_upstream_exe().to_str().unwrap().into()),
    ]);
    let changed = gateway_granting(renamed, &["up.*", "renamed.*", "two.*"]).push("realms.default.upstreams", two);
    std::fs::write(&path, changed.text()).unwrap();
    front.logged("upstream two: ", 1).await;
    let listed = names().await;
    assert!(listed.contains(&"renamed.demo.echo".to_owned()) && listed.contains(&"two.echo".to_owned()), "{listed:?}");
    assert!(!listed.iter().any(|name| name.starts_with("up.")), "{listed:?}");
    assert_eq!(front.count_logged("upstream connected upstream=\"up\""), 1, "the kept upstream did not reconnect");
    let called = body(
        front.post(&client, "tools/call", json!({"name": "renamed.demo.echo", "arguments": {"text": "hi"}})).await,
    )
    .await;
    assert_eq!(called["result"]["structuredContent"]["text"], "hi", "{called}");

    // Removed: its capabilities are withdrawn, the other upstream's stay.
    std::fs::write(
        &path,
        changed.retain("realms.default.upstreams", |stanza| stanza["name"].as_str() == Some("up")).text(),
    )
    .unwrap();
    front.logged("upstream removed", 1).await;
    let listed = names().await;
    assert!(!listed.iter().any(|name| name.starts_with("two.")), "{listed:?}");
    assert!(listed.contains(&"renamed.demo.echo".to_owned()), "{listed:?}");
}

#[tokio::test]
async fn a_realm_announces_what_its_upstreams_expose_before_any_listing_lands() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing answers there: the upstream never lists, yet its kinds are announced.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut stanza = http_upstream(closed);
    stanza.insert("expose".into(), vec!["tools", "prompts"].into());
    let front = Binary::serve(support::bondry_exe!(), &written(dir.path(), "gateway.toml", &gateway(stanza)), &[]);
    let client = reqwest::Client::new();
    let discovered = body(front.post(&client, "server/discover", json!({})).await).await;
    let capabilities = &discovered["result"]["capabilities"];
    assert!(capabilities.get("tools").is_some() && capabilities.get("prompts").is_some(), "{discovered}");
    assert!(capabilities.get("resources").is_none(), "resources are not exposed: {discovered}");
    let listed = body(front.post(&client, "tools/list", json!({})).await).await;
    assert_eq!(listed["result"]["tools"], json!([]), "{listed}");
}
