//! Upstream MCP servers through the real binary: a second Bondry over Streamable HTTP
//! and an rmcp server over stdio become capabilities of the gateway, listed and called
//! by clients of either era, and an upstream that dies answers as unavailable.

use bondry_test_support as support;

use serde_json::{Value, json};
use support::{Binary, demo_upstream, gateway, http_upstream, table};

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

#[tokio::test]
async fn a_bondry_over_http_serves_its_tools_through_the_gateway_in_either_era() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = Binary::serve(
        support::bondry_exe!(),
        &demo_upstream(&["demo.echo", "demo.add"]).written(dir.path(), "upstream.toml"),
        &[],
    );
    let audit = dir.path().join("audit.jsonl");
    let config = gateway(http_upstream("up", upstream.port), &["up.*"])
        .set("audit.sink", "file")
        .set("audit.path", audit.to_str().unwrap());
    let front = Binary::serve(support::bondry_exe!(), &config.written(dir.path(), "gateway.toml"), &[]);
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
    let sid = front.session(&client).await;
    let listed = front.in_session(&client, &sid, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert!(tool_names(&listed).contains(&"up.demo.echo".to_owned()), "{listed}");
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "up.demo.echo", "arguments": {"text": "hi"}}});
    let called = front.in_session(&client, &sid, call).await;
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
        assert_eq!(record["record_version"], 2, "{record}");
        assert_eq!(record["backend_kind"], "upstream", "{record}");
        assert_eq!(record["backend"], "up", "{record}");
        let upstream_us = record["backend_duration_us"].as_u64().unwrap();
        assert!(upstream_us > 0 && upstream_us <= record["duration_us"].as_u64().unwrap(), "{record}");
    }
    let refused = relayed.iter().find(|record| record["outcome"] == "invalid_input").unwrap();
    assert_eq!(refused["record_version"], 2, "{refused}");
    for member in ["backend_kind", "backend", "backend_duration_us"] {
        assert!(refused.get(member).is_none(), "arguments refused before the upstream saw them: {refused}");
    }
}

#[tokio::test]
async fn an_rmcp_server_over_stdio_serves_its_tools_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let command = support::test_upstream_exe();
    let stanza =
        table([("name", "up".into()), ("transport", "stdio".into()), ("command", command.to_str().unwrap().into())]);
    let front =
        Binary::serve(support::bondry_exe!(), &gateway(stanza, &["up.*"]).written(dir.path(), "gateway.toml"), &[]);
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
    let mut upstream = Binary::serve(
        support::bondry_exe!(),
        &demo_upstream(&["demo.echo", "demo.add"]).written(dir.path(), "upstream.toml"),
        &[],
    );
    let config = gateway(http_upstream("up", upstream.port), &["up.*", "demo.*"]).capability(
        "demo.echo",
        "tool",
        "demo.echo",
        None,
    );
    let front = Binary::serve(support::bondry_exe!(), &config.written(dir.path(), "gateway.toml"), &[]);
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
    let upstream = Binary::serve(
        support::bondry_exe!(),
        &demo_upstream(&["demo.echo", "demo.add"]).written(dir.path(), "upstream.toml"),
        &[],
    );
    let up = http_upstream("up", upstream.port);
    let path = gateway(up.clone(), &["up.*", "renamed.*", "two.*"]).written(dir.path(), "gateway.toml");
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
    let changed = gateway(renamed, &["up.*", "renamed.*", "two.*"]).push("realms.default.upstreams", two);
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
    let mut stanza = http_upstream("up", closed);
    stanza.insert("expose".into(), vec!["tools", "prompts"].into());
    let front =
        Binary::serve(support::bondry_exe!(), &gateway(stanza, &["up.*"]).written(dir.path(), "gateway.toml"), &[]);
    let client = reqwest::Client::new();
    let discovered = body(front.post(&client, "server/discover", json!({})).await).await;
    let capabilities = &discovered["result"]["capabilities"];
    assert!(capabilities.get("tools").is_some() && capabilities.get("prompts").is_some(), "{discovered}");
    assert!(capabilities.get("resources").is_none(), "resources are not exposed: {discovered}");
    let listed = body(front.post(&client, "tools/list", json!({})).await).await;
    assert_eq!(listed["result"]["tools"], json!([]), "{listed}");
}

#[tokio::test]
async fn a_reload_that_raises_max_concurrent_calls_admits_more_calls_at_once_on_the_kept_connection() {
    let dir = tempfile::tempdir().unwrap();
    let stanza = |limit: i64| {
        table([
            ("name", "up".into()),
            ("transport", "stdio".into()),
            ("command", support::test_upstream_exe().to_str().unwrap().into()),
            ("max_concurrent_calls", limit.into()),
            ("call_timeout_ms", 1500.into()),
        ])
    };
    let path = gateway(stanza(1), &["up.*"]).written(dir.path(), "gateway.toml");
    let front = Binary::serve(support::bondry_exe!(), &path, &[]);
    front.logged("upstream up: ", 1).await;
    let client = reqwest::Client::new();
    // `hang` holds a slot until its call times out; how long does `echo` take beside it?
    let echo_beside_a_hang = || async {
        let hang = front.post(&client, "tools/call", json!({"name": "up.hang", "arguments": {}}));
        let echo = async {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let began = std::time::Instant::now();
            let called = body(
                front.post(&client, "tools/call", json!({"name": "up.echo", "arguments": {"text": "beside"}})).await,
            )
            .await;
            (called, began.elapsed())
        };
        let (_, echoed) = tokio::join!(hang, echo);
        echoed
    };
    let (_, waited) = echo_beside_a_hang().await;
    assert!(waited >= std::time::Duration::from_millis(1000), "one slot: echo waited for it ({waited:?})");

    std::fs::write(&path, gateway(stanza(2), &["up.*"]).text()).unwrap();
    front.logged("configuration reloaded", 1).await;
    let (called, waited) = echo_beside_a_hang().await;
    assert_eq!(called["result"]["content"][0]["text"], "beside", "{called}");
    assert!(waited < std::time::Duration::from_millis(1000), "two slots: echo did not wait ({waited:?})");
    assert_eq!(front.count_logged("upstream connected upstream=\"up\""), 1, "the connection was kept");
}
