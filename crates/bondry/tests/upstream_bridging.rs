//! Bridging across the gateway (contract §9.5), through the real binary: every cell of a
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
    _dir: tempfile::TempDir,
    _upstream: Binary,
    front: Binary,
    client: reqwest::Client,
}

impl Deployment {
    async fn start(revisions: &[&str], stanza: &[(&str, toml::Value)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let fixtures =
            TestConfig::example("conformance.toml").set("listeners.main.protocol_versions", revisions.to_vec());
        let upstream = Binary::serve(support::bondry_exe!(), &fixtures.written(dir.path(), "upstream.toml"), &[]);
        let mut up = http_upstream("up", upstream.port);
        up.extend(stanza.iter().map(|(key, value)| (key.to_string(), value.clone())));
        let front =
            Binary::serve(support::bondry_exe!(), &gateway(up, &["up.*"]).written(dir.path(), "gateway.toml"), &[]);
        front.logged("upstream up: ", 1).await;
        let newest = if revisions.contains(&MODERN) { MODERN } else { "2025-11-25" };
        assert_eq!(front.count_logged(&format!("revision={newest}")), 1, "the era the upstream speaks");
        Self { _dir: dir, _upstream: upstream, front, client: reqwest::Client::new() }
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
