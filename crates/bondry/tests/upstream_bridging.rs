//! Bridging across the gateway (docs/upstreams.md), through the real binary: every cell of a
//! caller's era × an upstream's era. The upstream is a second Bondry serving
//! `examples/conformance.toml`, on a listener of all three revisions (a modern upstream)
//! or of the handshake revisions only; its tools ask for elicitation and sampling and
//! report progress, and the caller's answers reach it through the gateway.

use bondry_test_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Binary, Events, TestConfig, gateway, http_upstream};

const MODERN: &str = "2026-07-28";
const WAIT: Duration = Duration::from_secs(10);

/// A Bondry serving the conformance fixtures over `revisions`, and a gateway fronting it
/// as `up` with `stanza` keys added; both killed on drop.
struct Deployment {
    dir: tempfile::TempDir,
    _upstream: Binary,
    front: Binary,
    client: reqwest::Client,
}

impl Deployment {
    async fn start(revisions: &[&str], stanza: &[(&str, toml::Value)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("upstream-audit.jsonl");
        let fixtures = TestConfig::example("conformance.toml")
            .set("listeners.main.protocol_versions", revisions.to_vec())
            .set("audit.sink", "file")
            .set("audit.path", audit.to_str().unwrap());
        let upstream = Binary::serve(support::bondry_exe!(), &fixtures.written(dir.path(), "upstream.toml"), &[]);
        let mut up = http_upstream("up", upstream.port);
        up.extend(stanza.iter().map(|(key, value)| (key.to_string(), value.clone())));
        let front =
            Binary::serve(support::bondry_exe!(), &gateway(up, &["up.*"]).written(dir.path(), "gateway.toml"), &[]);
        front.logged("upstream up: ", 1).await;
        let newest = if revisions.contains(&MODERN) { MODERN } else { "2025-11-25" };
        assert_eq!(front.count_logged(&format!("revision={newest}")), 1, "the era the upstream speaks");
        Self { dir, _upstream: upstream, front, client: reqwest::Client::new() }
    }

    /// The upstream's audit records of `capability` so far.
    fn upstream_records(&self, capability: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("upstream-audit.jsonl")).unwrap_or_default();
        let records = text.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok());
        records.filter(|record| record["capability"] == capability).collect()
    }

    /// A session-era `tools/call` of `name` in session `sid`, answered without input.
    async fn call_in_session(&self, sid: &str, name: &str, arguments: Value) -> Value {
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        self.front.in_session(&self.client, sid, call).await
    }

    /// A modern `tools/call` of `name` declaring `capabilities`, with `extra` params.
    async fn call(&self, name: &str, arguments: Value, capabilities: Value, extra: Value) -> reqwest::Response {
        let mut params = json!({"name": name, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }});
        for (key, value) in extra.as_object().into_iter().flatten() {
            if key == "_meta" {
                params["_meta"].as_object_mut().unwrap().extend(value.as_object().unwrap().clone());
            } else {
                params[key] = value.clone();
            }
        }
        self.front.post(&self.client, "tools/call", params).await
    }
}

fn elicited() -> Value {
    json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}})
}

fn sampled() -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "m"})
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result: {result}"))
}

/// A modern caller: each input tool answers `input_required` with the upstream's
/// request, the retry with the caller's answer and the state gets the final result,
/// and progress arrives before the result.
async fn a_modern_caller_crosses(deployment: &Deployment) {
    let asks = [
        (
            "up.test_elicitation",
            json!({"message": "Who are you?"}),
            json!({"elicitation": {}}),
            "elicitation/create",
            elicited(),
        ),
        (
            "up.test_sampling",
            json!({"prompt": "Six times seven?"}),
            json!({"sampling": {}}),
            "sampling/createMessage",
            sampled(),
        ),
    ];
    for (name, arguments, capabilities, method, answer) in asks {
        let first: Value =
            deployment.call(name, arguments.clone(), capabilities.clone(), json!({})).await.json().await.unwrap();
        let result = &first["result"];
        assert_eq!(result["resultType"], "input_required", "{name}: {first}");
        let requests = result["inputRequests"].as_object().unwrap_or_else(|| panic!("{name}: {first}"));
        assert_eq!(requests.len(), 1, "{name}: {first}");
        let (key, request) = requests.iter().next().unwrap();
        assert_eq!(request["method"], method, "{name}: {first}");
        if method == "sampling/createMessage" {
            assert_eq!(request["params"]["includeContext"], "none", "{first}");
            assert_eq!(request["params"]["messages"][0]["content"]["text"], "Six times seven?");
        } else {
            assert_eq!(request["params"]["message"], "Who are you?");
        }
        let retry = json!({"inputResponses": {key: answer}, "requestState": result["requestState"]});
        let last: Value = deployment.call(name, arguments, capabilities, retry).await.json().await.unwrap();
        let text = text_of(&last["result"]);
        match method {
            "sampling/createMessage" => assert_eq!(text, "LLM response: forty-two", "{last}"),
            _ => assert!(text.starts_with("User response: action=\"accept\""), "{last}"),
        }
        assert_eq!(last["result"]["resultType"], "complete", "{last}");
    }

    let progress = json!({"_meta": {"progressToken": "p-1"}});
    let response = deployment.call("up.test_tool_with_progress", json!({}), json!({}), progress).await;
    let mut events = Events::new(response);
    let mut seen = Vec::new();
    let result = loop {
        let message = events.next(WAIT).await.expect("progress, then the result");
        if message.get("method").is_some() {
            seen.push(message);
        } else {
            break message;
        }
    };
    assert!(!seen.is_empty(), "progress before the result: {result}");
    for notification in &seen {
        assert_eq!(notification["method"], "notifications/progress", "{notification}");
        assert_eq!(notification["params"]["progressToken"], "p-1", "the caller's own token: {notification}");
    }
    assert!(result["result"]["content"].is_array(), "{result}");

    // Log messages of the level asked, before the result.
    let logs = json!({"_meta": {"io.modelcontextprotocol/logLevel": "info"}});
    let response = deployment.call("up.test_tool_with_logging", json!({}), json!({}), logs).await;
    let (messages, result) = until_result(Events::new(response)).await;
    assert_eq!(messages.len(), 3, "three log messages: {messages:?}");
    assert!(messages.iter().all(|message| message["method"] == "notifications/message"), "{messages:?}");
    assert_eq!(messages[0]["params"]["data"], "Tool execution started", "{messages:?}");
    assert!(result["result"]["content"].is_array(), "{result}");
}

/// The notifications of an event stream until its response, and the response.
async fn until_result(mut events: Events) -> (Vec<Value>, Value) {
    let mut notifications = Vec::new();
    loop {
        let message = events.next(WAIT).await.expect("notifications, then the result");
        if message.get("method").is_some() {
            notifications.push(message);
        } else {
            return (notifications, message);
        }
    }
}

/// A session caller: each input tool's request reaches the caller on the call's stream,
/// its answer goes back, and the result follows; progress arrives before the result.
async fn a_session_caller_crosses(deployment: &Deployment) {
    let front = &deployment.front;
    let client = &deployment.client;
    let sid = front.session_with(client, json!({"elicitation": {}, "sampling": {}})).await;
    let asks = [
        ("up.test_elicitation", json!({"message": "Who are you?"}), "elicitation/create", elicited()),
        ("up.test_sampling", json!({"prompt": "Six times seven?"}), "sampling/createMessage", sampled()),
    ];
    for (id, (name, arguments, method, answer)) in (10..).zip(asks) {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        let mut events = Events::new(front.post_in_session(client, &sid, call).await);
        let request = events.next(WAIT).await.unwrap_or_else(|| panic!("{name}: the upstream's request"));
        assert_eq!(request["method"], method, "{name}: {request}");
        let answered = json!({"jsonrpc": "2.0", "id": request["id"], "result": answer});
        assert_eq!(front.post_in_session(client, &sid, answered).await.status(), 202);
        let result = events.next(WAIT).await.unwrap_or_else(|| panic!("{name}: the result"));
        assert_eq!(result["id"], id, "{result}");
        let text = text_of(&result["result"]);
        match method {
            "sampling/createMessage" => assert_eq!(text, "LLM response: forty-two", "{result}"),
            _ => assert!(text.starts_with("User response: action=\"accept\""), "{result}"),
        }
    }

    let call = json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
        "params": {"name": "up.test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 5}}});
    let mut events = Events::new(front.post_in_session(client, &sid, call).await);
    let first = events.next(WAIT).await.expect("progress first");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progressToken"], 5, "{first}");
    let result = loop {
        let message = events.next(WAIT).await.expect("then the result");
        if message["id"] == 20 {
            break message;
        }
    };
    assert!(result["result"]["content"].is_array(), "{result}");

    // Log messages of the level the session set, before the result.
    let level = json!({"jsonrpc": "2.0", "id": 21, "method": "logging/setLevel", "params": {"level": "info"}});
    assert!(front.in_session(client, &sid, level).await.get("result").is_some());
    let call = json!({"jsonrpc": "2.0", "id": 22, "method": "tools/call",
        "params": {"name": "up.test_tool_with_logging", "arguments": {}}});
    let (messages, result) = until_result(Events::new(front.post_in_session(client, &sid, call).await)).await;
    let data: Vec<&Value> = messages.iter().map(|message| &message["params"]["data"]).collect();
    assert_eq!(data, ["Tool execution started", "Tool processing data", "Tool execution completed"], "{messages:?}");
    assert_eq!(result["id"], 22, "{result}");
}

#[tokio::test]
async fn a_modern_caller_of_a_modern_upstream() {
    a_modern_caller_crosses(&Deployment::start(&[MODERN, "2025-11-25", "2025-06-18"], &[]).await).await;
}

#[tokio::test]
async fn a_modern_caller_of_a_handshake_upstream() {
    a_modern_caller_crosses(&Deployment::start(&["2025-11-25", "2025-06-18"], &[]).await).await;
}

#[tokio::test]
async fn a_session_caller_of_a_modern_upstream() {
    a_session_caller_crosses(&Deployment::start(&[MODERN, "2025-11-25", "2025-06-18"], &[]).await).await;
}

#[tokio::test]
async fn a_session_caller_of_a_handshake_upstream() {
    a_session_caller_crosses(&Deployment::start(&["2025-11-25", "2025-06-18"], &[]).await).await;
}

const BOTH_ERAS: [&str; 3] = [MODERN, "2025-11-25", "2025-06-18"];
const HANDSHAKE: [&str; 2] = ["2025-11-25", "2025-06-18"];

async fn json(response: reqwest::Response) -> Value {
    let status = response.status().as_u16();
    let mut body: Value = response.json().await.unwrap();
    body["status"] = json!(status);
    body
}

#[tokio::test]
async fn a_tool_that_requires_a_client_capability_is_listed_so_and_checked_at_the_gateway() {
    let deployment = Deployment::start(&HANDSHAKE, &[]).await;
    let listed = json(deployment.front.post(&deployment.client, "tools/list", json!({})).await).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let tool = tools.iter().find(|tool| tool["name"] == "up.test_missing_capability").expect("listed");
    assert_eq!(tool["_meta"]["dev.bondry/requiresClient"], json!({"sampling": {}}), "{tool}");

    // Bondry's own check answers for the upstream, which saw Bondry's declaration only.
    let refused = json(deployment.call("up.test_missing_capability", json!({}), json!({}), json!({})).await).await;
    assert_eq!(refused["status"], 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}), "{refused}");
    let sid = deployment.front.session(&deployment.client).await;
    let called = deployment.call_in_session(&sid, "up.test_missing_capability", json!({})).await;
    assert_eq!(called["result"]["isError"], true, "{called}");
    assert_eq!(called["result"]["_meta"]["dev.bondry/errorCode"], "missing_client_capability", "{called}");
    assert!(deployment.upstream_records("test_missing_capability").is_empty(), "never relayed");
}

#[tokio::test]
async fn an_upstreams_missing_capability_refusal_reaches_each_caller_in_its_eras_shape() {
    let deployment = Deployment::start(&BOTH_ERAS, &[]).await;
    // A modern upstream is given the caller's own capabilities, and refuses: -32021.
    let refused =
        json(deployment.call("up.test_elicitation", json!({"message": "Who?"}), json!({}), json!({})).await).await;
    assert_eq!(refused["status"], 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(refused["error"]["data"]["requiredCapabilities"].get("elicitation").is_some(), "{refused}");
    let sid = deployment.front.session(&deployment.client).await;
    let called = deployment.call_in_session(&sid, "up.test_elicitation", json!({"message": "Who?"})).await;
    assert_eq!(called["result"]["isError"], true, "{called}");
    assert_eq!(called["result"]["_meta"]["dev.bondry/errorCode"], "missing_client_capability", "{called}");
}

#[tokio::test]
async fn a_handshake_upstreams_request_the_caller_did_not_declare_is_refused_to_it() {
    let deployment = Deployment::start(&HANDSHAKE, &[]).await;
    // Refused -32602 to the upstream, whose own answer to that reaches the caller unchanged.
    let called =
        json(deployment.call("up.test_elicitation", json!({"message": "Who?"}), json!({}), json!({})).await).await;
    assert_eq!(called["status"], 200, "{called}");
    assert_eq!(called["result"]["isError"], true, "{called}");
    assert_eq!(called["result"]["content"][0]["text"], "Capability execution failed", "{called}");
    // The upstream's own `dev.bondry/*` keys never pass for the gateway's.
    assert!(called["result"]["_meta"].get("dev.bondry/errorCode").is_none(), "{called}");
    // The upstream's audit thread writes its record after its answer left.
    support::eventually(|| !deployment.upstream_records("test_elicitation").is_empty()).await;
    let records = deployment.upstream_records("test_elicitation");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["outcome"], "tool_error", "the upstream's client refused: {records:?}");
}

#[tokio::test]
async fn a_held_exchange_is_taken_up_once_and_given_up_after_input_wait() {
    let deployment = Deployment::start(&HANDSHAKE, &[("input_wait_ms", 400.into())]).await;
    let elicit = |extra: Value| {
        deployment.call("up.test_elicitation", json!({"message": "Who?"}), json!({"elicitation": {}}), extra)
    };
    let retry = |first: &Value| {
        let (key, _) = first["result"]["inputRequests"].as_object().unwrap().iter().next().unwrap();
        json!({"inputResponses": {key.clone(): elicited()}, "requestState": first["result"]["requestState"]})
    };
    let first = json(elicit(json!({})).await).await;
    let done = json(elicit(retry(&first)).await).await;
    assert!(text_of(&done["result"]).starts_with("User response"), "{done}");
    let replayed = json(elicit(retry(&first)).await).await;
    assert_eq!(replayed["result"]["isError"], true, "{replayed}");
    assert_eq!(replayed["result"]["_meta"]["dev.bondry/errorCode"], "input_exchange_lost", "{replayed}");
    assert_eq!(replayed["result"]["_meta"]["dev.bondry/retryable"], false, "{replayed}");

    // Nobody retries: after input_wait_ms the upstream's request is answered -32603 and
    // its call ends there; a late retry finds nothing.
    let abandoned = json(elicit(json!({})).await).await;
    assert_eq!(abandoned["result"]["resultType"], "input_required", "{abandoned}");
    let ended = support::eventually(|| deployment.upstream_records("test_elicitation").len() >= 2).await;
    assert!(ended, "the upstream's call ended: {:?}", deployment.upstream_records("test_elicitation"));
    let records = deployment.upstream_records("test_elicitation");
    assert_ne!(records.last().unwrap()["outcome"], "succeeded", "{records:?}");
    let late = json(elicit(retry(&abandoned)).await).await;
    assert_eq!(late["result"]["_meta"]["dev.bondry/errorCode"], "input_exchange_lost", "{late}");
}

#[tokio::test]
async fn a_callers_cancellation_reaches_the_upstream_call() {
    let dir = tempfile::tempdir().unwrap();
    let stanza = support::table([
        ("name", "up".into()),
        ("transport", "stdio".into()),
        ("command", support::test_upstream_exe().to_str().unwrap().into()),
    ]);
    let front =
        Binary::serve(support::bondry_exe!(), &gateway(stanza, &["up.*"]).written(dir.path(), "gateway.toml"), &[]);
    front.logged("upstream up: ", 1).await;
    let client = reqwest::Client::new();

    // A session caller cancels its call: the upstream's tool hears of it.
    let sid = front.session(&client).await;
    let call =
        json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "up.hang", "arguments": {}}});
    let hanging = tokio::spawn({
        let (client, sid, port) = (client.clone(), sid.clone(), front.port);
        async move {
            client
                .post(format!("http://127.0.0.1:{port}/mcp"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", sid)
                .header("mcp-protocol-version", "2025-11-25")
                .json(&call)
                .send()
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41}});
    assert_eq!(front.post_in_session(&client, &sid, cancel).await.status(), 202);
    front.logged("hang: cancelled by the caller", 1).await;
    hanging.abort();

    // A modern caller goes away: so does its upstream request.
    let gone = tokio::time::timeout(
        Duration::from_millis(300),
        front.post(&client, "tools/call", json!({"name": "up.hang", "arguments": {}})),
    )
    .await;
    assert!(gone.is_err(), "the call hangs until its caller leaves");
    front.logged("hang: cancelled by the caller", 2).await;
}

#[tokio::test]
async fn an_upstream_subscription_is_renewed_after_the_upstream_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = |bind: &str| {
        TestConfig::example("conformance.toml")
            .set("listeners.main.protocol_versions", HANDSHAKE.to_vec())
            .set("listeners.main.bind", bind)
            .written(dir.path(), "upstream.toml")
    };
    let upstream = Binary::serve(support::bondry_exe!(), &fixtures("127.0.0.1:0"), &[]);
    let port = upstream.port;
    let front = Binary::serve(
        support::bondry_exe!(),
        &gateway(http_upstream("up", port), &["up.*"]).written(dir.path(), "gateway.toml"),
        &[],
    );
    front.logged("upstream up: ", 1).await;
    let client = reqwest::Client::new();
    let sid = front.session(&client).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": {"uri": "test://watched-resource"}});
    assert_eq!(front.in_session(&client, &sid, subscribe).await["result"], json!({}));
    let subscribed = "upstream resource subscriptions upstream=\"up\" resources=1";
    front.logged(subscribed, 1).await;

    drop(upstream);
    let _restarted = Binary::serve(support::bondry_exe!(), &fixtures(&format!("127.0.0.1:{port}")), &[]);
    // The gateway finds the upstream's session gone, begins a new one and subscribes again.
    front.logged("upstream session expired: initialized again", 1).await;
    front.logged(subscribed, 2).await;
}

#[tokio::test]
async fn a_modern_upstream_is_followed_through_one_listen_stream() {
    let deployment = Deployment::start(&BOTH_ERAS, &[]).await;
    let (front, client) = (&deployment.front, &deployment.client);
    let sid = front.session(client).await;
    let subscription = |method: &str| json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {"uri": "test://watched-resource"}});
    assert_eq!(front.in_session(client, &sid, subscription("resources/subscribe")).await["result"], json!({}));
    // The upstream took the listen stream naming the resource, and keeps it open.
    front.logged("upstream resource subscriptions upstream=\"up\" resources=1", 1).await;
    assert_eq!(front.count_logged("upstream listen stream"), 0, "neither refused nor ended");
    assert_eq!(front.in_session(client, &sid, subscription("resources/unsubscribe")).await["result"], json!({}));
    front.logged("upstream resource subscriptions upstream=\"up\" resources=0", 1).await;
}

#[tokio::test]
async fn another_callers_retry_never_takes_up_a_held_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = TestConfig::example("conformance.toml").set("listeners.main.protocol_versions", HANDSHAKE.to_vec());
    let upstream = Binary::serve(support::bondry_exe!(), &fixtures.written(dir.path(), "upstream.toml"), &[]);
    let config = gateway(http_upstream("up", upstream.port), &["up.*"])
        .principal("alice", &["caller"])
        .principal("bob", &["caller"])
        .ticket("alice-ticket-0123456789abcdef0123", "alice")
        .ticket("bob-ticket-0123456789abcdef012345", "bob");
    let front = Binary::serve(support::bondry_exe!(), &config.written(dir.path(), "gateway.toml"), &[]);
    front.logged("upstream up: ", 1).await;
    let client = reqwest::Client::new();
    let call = |ticket: &'static str, extra: Value| {
        let mut params = json!({"name": "up.test_elicitation", "arguments": {"message": "Who?"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        }});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let authorization = format!("Bearer {ticket}");
        let (front, client) = (&front, &client);
        async move { json(front.post_with(client, &[("authorization", &authorization)], "tools/call", params).await).await }
    };
    let asked = call("alice-ticket-0123456789abcdef0123", json!({})).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let (key, _) = asked["result"]["inputRequests"].as_object().unwrap().iter().next().unwrap();
    let retry = json!({"inputResponses": {key.clone(): elicited()}, "requestState": asked["result"]["requestState"]});

    // Bob holds Alice's state: refused before anything reaches the exchange.
    let foreign = call("bob-ticket-0123456789abcdef012345", retry.clone()).await;
    assert_eq!(foreign["status"], 400, "{foreign}");
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    assert_eq!(foreign["error"]["message"], "invalid, expired or mismatched requestState", "{foreign}");
    // Alice's own retry still finds it.
    let done = call("alice-ticket-0123456789abcdef0123", retry).await;
    assert!(text_of(&done["result"]).starts_with("User response"), "{done}");
}

/// Roots are the stanza's, whoever calls: an upstream that asks only for them is answered
/// by Bondry, and one that asks for more has the caller asked for the rest alone.
async fn roots_are_answered_from_the_stanza(revisions: &[&str]) {
    let root = |uri: &str| toml::Value::Table(toml::Table::from_iter([("uri".to_owned(), uri.into())]));
    let roots = toml::Value::Array(vec![root("file:///srv/one"), root("file:///srv/two")]);
    let deployment = Deployment::start(revisions, &[("roots", roots)]).await;
    let caller = json!({"roots": {}, "elicitation": {}, "sampling": {}});
    let alone =
        json(deployment.call("up.test_input_required_result_list_roots", json!({}), caller.clone(), json!({})).await)
            .await;
    assert_eq!(text_of(&alone["result"]), "Found 2 root(s)", "never asked: {alone}");

    let name = "up.test_input_required_result_multiple_inputs";
    let first = json(deployment.call(name, json!({}), caller.clone(), json!({})).await).await;
    let requests = first["result"]["inputRequests"].as_object().unwrap_or_else(|| panic!("{first}"));
    let methods: Vec<&str> = requests.values().map(|request| request["method"].as_str().unwrap()).collect();
    assert!(!methods.contains(&"roots/list") && methods.len() == 2, "{first}");
    let answers: serde_json::Map<String, Value> = requests
        .iter()
        .map(|(key, request)| {
            let answer = match request["method"].as_str() {
                Some("sampling/createMessage") => sampled(),
                _ => json!({"action": "accept", "content": {"name": "ada"}}),
            };
            (key.clone(), answer)
        })
        .collect();
    let retry = json!({"inputResponses": answers, "requestState": first["result"]["requestState"]});
    let last = json(deployment.call(name, json!({}), caller, retry).await).await;
    assert_eq!(text_of(&last["result"]), "Name: ada; Greeting: forty-two; Roots: 2", "{last}");
}

#[tokio::test]
async fn a_modern_upstreams_roots_come_from_the_stanza() {
    roots_are_answered_from_the_stanza(&BOTH_ERAS).await;
}

#[tokio::test]
async fn a_handshake_upstreams_roots_come_from_the_stanza() {
    roots_are_answered_from_the_stanza(&HANDSHAKE).await;
}

/// An upstream's list change reaches the gateway at once: on the listen stream Bondry
/// keeps open to a modern upstream, on the session's stream of a handshake one.
async fn a_list_change_upstream_is_heard_at_once(revisions: &[&str]) {
    // New tools trusted: held (the default), the new tool would not be listed at all.
    let deployment = Deployment::start(revisions, &[("new_capabilities", "trust".into())]).await;
    let before = deployment.front.count_logged("upstream up: ");
    let changed = json(deployment.call("up.test_trigger_tool_change", json!({}), json!({}), json!({})).await).await;
    assert!(changed["result"]["content"].is_array(), "{changed}");
    deployment.front.logged("upstream up: ", before + 1).await;
    let listed = json(deployment.front.post(&deployment.client, "tools/list", json!({})).await).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"up.test_dynamic_tool"), "{names:?}");
}

#[tokio::test]
async fn a_modern_upstreams_list_change_is_heard_at_once() {
    a_list_change_upstream_is_heard_at_once(&BOTH_ERAS).await;
}

#[tokio::test]
async fn a_handshake_upstreams_list_change_is_heard_at_once() {
    a_list_change_upstream_is_heard_at_once(&HANDSHAKE).await;
}
