//! Realm keys that outlive a process: configured (secrets from the environment) or kept
//! in the data directory. A `requestState` sealed by one process opens in the next only
//! then; with per-process keys it is refused.

use bondry_test_support as support;

use std::path::Path;

use serde_json::{Value, json};
use support::{Binary, TestConfig, table};

/// A realm serving the conformance fixture that keeps state between rounds.
fn config() -> TestConfig {
    TestConfig::bare().set("realms.default.anonymous_roles", vec!["r"]).role("r", &["stateful"]).capability(
        "stateful",
        "tool",
        "conformance.input_required_request_state",
        None,
    )
}

async fn call(server: &Binary, params: Value) -> Value {
    let client = reqwest::Client::new();
    let mut params = params;
    params["name"] = json!("stateful");
    params["arguments"] = json!({});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": support::PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    let response = server.post(&client, "tools/call", params).await;
    let status = response.status().as_u16();
    let mut body: Value = response.json().await.unwrap();
    body["status"] = json!(status);
    body
}

/// Runs round one on a first process and the retry on a second one, started after the
/// first stopped; returns the retry's answer.
async fn across_restarts(path: &Path, env: &[(&str, &str)]) -> Value {
    let first = Binary::serve(support::bondry_exe!(), path, env);
    let round = call(&first, json!({})).await;
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let state = round["result"]["requestState"].clone();
    drop(first);
    let second = Binary::serve(support::bondry_exe!(), path, env);
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    call(&second, json!({"inputResponses": answer, "requestState": state})).await
}

#[tokio::test]
async fn configured_keys_open_what_an_earlier_process_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bondry.toml");
    let key = table([("id", "2026-11".into()), ("secret_env", "BONDRY_TEST_KEY".into())]);
    std::fs::write(&path, config().push("realms.default.keys", key).text()).unwrap();
    let secret = ("BONDRY_TEST_KEY", "q1Tp9sJ0m6m3Yt8wP4b0x2Ck7o5Vn1Lr3Ge8Hi2Ds6U=");
    let retry = across_restarts(&path, &[secret]).await;
    assert_eq!(retry["result"]["content"][0]["text"], "state-ok: requestState validated", "{retry}");
}

#[tokio::test]
async fn generated_keys_are_kept_in_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bondry.toml");
    std::fs::write(&path, config().set("data_dir", "state").text()).unwrap();
    let retry = across_restarts(&path, &[]).await;
    assert_eq!(retry["result"]["content"][0]["text"], "state-ok: requestState validated", "{retry}");
    let file = dir.path().join("state/keys/default.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "only the owner reads the keys");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["active"]["id"], "k1");
}

#[tokio::test]
async fn keys_of_one_process_die_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bondry.toml");
    std::fs::write(&path, config().text()).unwrap();
    let retry = across_restarts(&path, &[]).await;
    assert_eq!(retry["status"], 400, "{retry}");
    assert_eq!(retry["error"]["code"], -32602);
    assert_eq!(retry["error"]["message"], "invalid, expired or mismatched requestState");
}
