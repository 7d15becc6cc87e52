//! Black-box tests of input from the client in the handshake era: a handler's input
//! requests reach the client on the call's own event stream, the client POSTs its
//! answers, and the handler is called again; timeouts, refusals and missing client
//! capabilities end the call with a tool error.

use bondry_test_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Events, TestConfig, TestServer, in_session, open_with, rpc};

/// The default test realm, waiting at most `timeout_ms` for the client's answers.
async fn start(timeout_ms: u64) -> TestServer {
    let config = TestConfig::new().set("realms.default.limits.client_response_timeout_ms", timeout_ms as i64).text();
    TestServer::with_config(&config).await
}

/// Starts `test.asks` in session `sid` and returns its event stream.
async fn ask(server: &TestServer, client: &reqwest::Client, sid: &str, arguments: Value) -> Events {
    let call = in_session(sid, rpc("tools/call", json!({"name": "test.asks", "arguments": arguments})));
    Events::new(call.builder(client, &server.url()).body(call.body.clone()).send().await.unwrap())
}

/// POSTs the client's `answer` to the server's request `id` in session `sid`.
async fn respond(server: &TestServer, sid: &str, answer: Value) -> u16 {
    server.send(in_session(sid, answer)).await.status
}

#[tokio::test]
async fn a_handler_asks_twice_and_gets_both_answers() {
    let server = start(5000).await;
    let sid = open_with(&server, json!({"sampling": {}})).await;
    let client = reqwest::Client::new();
    let mut events = ask(&server, &client, &sid, json!({"rounds": 2})).await;
    for round in 1..=2 {
        let request = events.next(Duration::from_secs(5)).await.expect("the server asks");
        assert_eq!(request["method"], "sampling/createMessage", "{request}");
        assert_eq!(request["params"]["messages"][0]["content"]["text"], format!("round {round}"));
        assert_eq!(request["params"]["maxTokens"], 10);
        let id = request["id"].clone();
        assert!(id.as_str().is_some_and(|id| id.starts_with("bondry-")), "{id}");
        let answer =
            json!({"role": "assistant", "content": {"type": "text", "text": format!("answer {round}")}, "model": "m"});
        assert_eq!(respond(&server, &sid, json!({"jsonrpc": "2.0", "id": id, "result": answer})).await, 202);
    }
    let result = events.next(Duration::from_secs(5)).await.expect("then the result");
    assert_eq!(result["id"], 1);
    let answers = &result["result"]["structuredContent"]["answers"];
    assert_eq!(answers[0]["content"]["text"], "answer 1");
    assert_eq!(answers[1]["content"]["text"], "answer 2");
    assert!(events.next(Duration::from_millis(200)).await.is_none(), "the stream ends with the result");
    let records = server.stop().await;
    let asks: Vec<&Value> = records.iter().filter(|r| r["capability"] == "test.asks").collect();
    assert_eq!(asks.len(), 1, "one call, one record: {records:?}");
    assert_eq!(asks[0]["outcome"], "succeeded");
}

#[tokio::test]
async fn a_client_that_never_answers_times_out_into_a_tool_error() {
    let server = start(300).await;
    let sid = open_with(&server, json!({"elicitation": {}})).await;
    let client = reqwest::Client::new();
    let mut events = ask(&server, &client, &sid, json!({"kind": "elicitation"})).await;
    let request = events.next(Duration::from_secs(5)).await.expect("the server asks");
    assert_eq!(request["method"], "elicitation/create");
    let result = events.next(Duration::from_secs(5)).await.expect("the call gives up");
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert_eq!(result["result"]["_meta"]["dev.bondry/errorCode"], "client_timeout");
    assert_eq!(result["result"]["_meta"]["dev.bondry/retryable"], false);
    // A late answer is dropped quietly.
    let late = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}});
    assert_eq!(respond(&server, &sid, late).await, 202);
    let records = server.stop().await;
    assert!(records.iter().any(|r| r["capability"] == "test.asks" && r["outcome"] == "tool_error"), "{records:?}");
}

#[tokio::test]
async fn a_client_error_ends_the_call() {
    let server = start(5000).await;
    let sid = open_with(&server, json!({"roots": {}})).await;
    let client = reqwest::Client::new();
    let mut events = ask(&server, &client, &sid, json!({"kind": "roots"})).await;
    let request = events.next(Duration::from_secs(5)).await.expect("the server asks");
    assert_eq!(request["method"], "roots/list");
    assert_eq!(request["params"], json!({}));
    let refusal = json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": "User rejected"}});
    assert_eq!(respond(&server, &sid, refusal).await, 202);
    let result = events.next(Duration::from_secs(5)).await.expect("the result");
    assert_eq!(result["result"]["_meta"]["dev.bondry/errorCode"], "client_error", "{result}");
    server.stop().await;
}

#[tokio::test]
async fn input_a_session_did_not_declare_is_never_asked_for() {
    let server = start(5000).await;
    let sid = open_with(&server, json!({"elicitation": {}})).await;
    let call = in_session(&sid, rpc("tools/call", json!({"name": "test.asks", "arguments": {"kind": "sampling"}})));
    let response = server.send(call).await;
    assert_eq!(response.header("content-type"), Some("application/json"), "nothing was streamed");
    let result = response.assert_result();
    assert_eq!(result["isError"], true);
    assert_eq!(result["_meta"]["dev.bondry/errorCode"], "missing_client_capability");
    server.stop().await;
}

#[tokio::test]
async fn answers_belong_to_their_session() {
    let server = start(400).await;
    let asking = open_with(&server, json!({"sampling": {}})).await;
    let other = open_with(&server, json!({"sampling": {}})).await;
    let client = reqwest::Client::new();
    let mut events = ask(&server, &client, &asking, json!({})).await;
    let request = events.next(Duration::from_secs(5)).await.expect("the server asks");
    // The same id answered from another session reaches nobody.
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}});
    assert_eq!(respond(&server, &other, answer).await, 202);
    let result = events.next(Duration::from_secs(5)).await.expect("the call gives up");
    assert_eq!(result["result"]["_meta"]["dev.bondry/errorCode"], "client_timeout", "{result}");
    server.stop().await;
}

#[tokio::test]
async fn a_handler_that_never_stops_asking_is_cut_off() {
    let server = start(5000).await;
    let sid = open_with(&server, json!({"sampling": {}})).await;
    let client = reqwest::Client::new();
    let mut events = ask(&server, &client, &sid, json!({"rounds": 20})).await;
    let mut asked = 0;
    let result = loop {
        let message = events.next(Duration::from_secs(5)).await.expect("a message");
        if message.get("method").is_none() {
            break message;
        }
        asked += 1;
        let answer = json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"});
        respond(&server, &sid, json!({"jsonrpc": "2.0", "id": message["id"], "result": answer})).await;
    };
    assert_eq!(asked, 8, "at most eight rounds");
    assert_eq!(result["result"]["_meta"]["dev.bondry/errorCode"], "too_many_input_rounds", "{result}");
    server.stop().await;
}
