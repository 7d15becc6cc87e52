//! Configuration reload through the real binary: rewriting the file (or SIGHUP) swaps the
//! catalogue, grants and credentials in, listen streams hear of changes to what they can
//! see and of nothing else, a change of credentials ends what the old ones opened, and a
//! broken file keeps the running configuration.

use bondry_test_support as support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Binary, Events, TestConfig};

/// The demo realm, with an `admin` role, on an ephemeral port.
fn base() -> TestConfig {
    TestConfig::bare()
        .set("realms.default.anonymous_roles", vec!["demo"])
        .role("demo", &["demo.*"])
        .role("admin", &["admin.*"])
        .capability("demo.echo", "tool", "demo.echo", None)
}

/// Replaces the file the way editors do: a new file renamed over the old one.
fn rewrite(path: &Path, text: &str) {
    let fresh: PathBuf = path.with_extension("toml.new");
    std::fs::write(&fresh, text).unwrap();
    std::fs::rename(&fresh, path).unwrap();
}

#[tokio::test]
async fn a_rewritten_file_reaches_the_streams_that_can_see_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bondry.toml");
    std::fs::write(&path, base().text()).unwrap();
    let server = Binary::serve(support::bondry_exe!(), &path, &[]);
    let client = reqwest::Client::new();
    let mut stream = Events::new(
        server.post(&client, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})).await,
    );
    let ack = stream.next(Duration::from_secs(5)).await.expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}));

    // A tool only admins see: the anonymous stream hears nothing of it.
    let with_admin = base().capability("admin.reset", "tool", "admin.reset", None);
    rewrite(&path, &with_admin.text());
    server.logged("configuration reloaded", 1).await;
    // A tool anonymous callers see: this is the stream's first notification.
    let with_both = with_admin.capability("demo.add", "tool", "demo.add", None);
    rewrite(&path, &with_both.text());
    server.logged("configuration reloaded", 2).await;
    let changed = stream.next(Duration::from_secs(5)).await.expect("a list change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    let listed = server.post(&client, "tools/list", json!({})).await.json::<Value>().await.unwrap();
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["demo.add", "demo.echo"]);

    // A broken file changes nothing; the log says why.
    rewrite(&path, "[listeners.main\n");
    server.logged("configuration not reloaded", 1).await;
    let listed = server.post(&client, "tools/list", json!({})).await.json::<Value>().await.unwrap();
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 2);

    // SIGHUP reloads too: back to the base file, demo.add is gone.
    rewrite(&path, &base().text());
    server.logged("configuration reloaded", 3).await;
    let changed = stream.next(Duration::from_secs(5)).await.expect("a second list change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let status = Command::new("kill").args(["-HUP", &server.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    server.logged("configuration reloaded", 4).await;
}

/// `config` with the principal `ops` holding `roles` and the ticket `ticket`.
fn with_ticket(config: TestConfig, ticket: &str, roles: &[&str]) -> TestConfig {
    config.principal("ops", roles).ticket(ticket, "ops")
}

#[tokio::test]
async fn a_reload_revokes_and_grants_credentials_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bondry.toml");
    let with_admin = base().capability("admin.reset", "tool", "admin.reset", None);
    std::fs::write(&path, with_ticket(with_admin.clone(), "first-ticket", &["admin", "demo"]).text()).unwrap();
    let server = Binary::serve(support::bondry_exe!(), &path, &[]);
    let client = reqwest::Client::new();
    let names = |listed: Value| -> Vec<String> {
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let as_holder = |ticket: &str| format!("Bearer {ticket}");
    let post_as = |ticket: &'static str, method: &'static str, params: Value| {
        let (server, client) = (&server, &client);
        async move { server.post_with(client, &[("authorization", &as_holder(ticket))], method, params).await }
    };
    let first = post_as("first-ticket", "tools/list", json!({})).await;
    assert_eq!(first.status(), 200);
    assert_eq!(names(first.json().await.unwrap()), ["admin.reset", "demo.echo"]);
    assert_eq!(post_as("second-ticket", "tools/list", json!({})).await.status(), 401, "not issued yet");
    // What the first ticket holds open: a listen stream and a handshake-era session.
    let filter = json!({"notifications": {"toolsListChanged": true}});
    let mut listening = Events::new(post_as("first-ticket", "subscriptions/listen", filter.clone()).await);
    assert_eq!(
        listening.next(Duration::from_secs(5)).await.expect("the acknowledgement")["method"],
        "notifications/subscriptions/acknowledged"
    );
    let session = session_of(&server, &client, &as_holder("first-ticket")).await;

    // The leaked ticket is replaced by a new one with fewer roles: no restart needed.
    rewrite(&path, &with_ticket(with_admin.clone(), "second-ticket", &["demo"]).text());
    server.logged("configuration reloaded", 1).await;
    server.logged("credentials changed", 1).await;
    assert_eq!(post_as("first-ticket", "tools/list", json!({})).await.status(), 401, "revoked by the reload");
    let second = post_as("second-ticket", "tools/list", json!({})).await;
    assert_eq!(second.status(), 200);
    assert_eq!(names(second.json().await.unwrap()), ["demo.echo"]);
    // What the old credentials opened has ended: the listen stream with its result, the
    // session for every credential of its principal.
    let closed = listening.next(Duration::from_secs(5)).await.expect("the graceful close");
    assert_eq!(closed["result"]["resultType"], "complete", "{closed}");
    assert_eq!(listening.next(Duration::from_secs(5)).await, None, "and the stream ends");
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let gone = in_session(&server, &client, &as_holder("second-ticket"), &session, ping).await;
    assert_eq!(gone.status(), 404);

    // A reload that leaves the credentials alone disturbs nobody.
    let mut listening = Events::new(post_as("second-ticket", "subscriptions/listen", filter).await);
    listening.next(Duration::from_secs(5)).await.expect("the acknowledgement");
    let with_add = with_admin.capability("demo.add", "tool", "demo.add", None);
    rewrite(&path, &with_ticket(with_add, "second-ticket", &["demo"]).text());
    server.logged("configuration reloaded", 2).await;
    let changed = listening.next(Duration::from_secs(5)).await.expect("a list change, on the same stream");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(server.count_logged("credentials changed"), 1);
}

/// Opens a 2025-11-25 session with `authorization`; returns its id.
async fn session_of(server: &Binary, client: &reqwest::Client, authorization: &str) -> String {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    });
    let response = client
        .post(format!("http://127.0.0.1:{}/mcp", server.port))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", authorization)
        .body(initialize.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.headers()["mcp-session-id"].to_str().unwrap().to_owned()
}

async fn in_session(
    server: &Binary,
    client: &reqwest::Client,
    authorization: &str,
    session: &str,
    body: Value,
) -> reqwest::Response {
    client
        .post(format!("http://127.0.0.1:{}/mcp", server.port))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", authorization)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_reload_that_changes_admin_is_refused_whole_naming_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bondry.toml");
    std::fs::write(&path, base().text()).unwrap();
    let token = [("BONDRY_TEST_ADMIN_TOKEN", "an-admin-token-of-at-least-32-bytes")];
    let server = Binary::serve(support::bondry_exe!(), &path, &token);
    let client = reqwest::Client::new();
    let tools = || async {
        let listed = server.post(&client, "tools/list", json!({})).await.json::<Value>().await.unwrap();
        let tools = listed["result"]["tools"].as_array().unwrap().iter();
        tools.map(|tool| tool["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };

    // A new capability beside a changed [admin]: nothing is applied.
    let with_add = base().capability("demo.add", "tool", "demo.add", None);
    let admin_token = support::table([("name", "ops".into()), ("token_env", "BONDRY_TEST_ADMIN_TOKEN".into())]);
    let changed = with_add.clone().set("admin.max_connections", 8).push("admin.tokens", admin_token);
    rewrite(&path, &changed.text());
    server.logged("configuration not reloaded; the running one stays", 1).await;
    let refusal = "[admin] changed (admin.tokens, admin.max_connections): the admin listener reads [admin] only at \
                   start; restart Bondry to apply it, or put it back to reload the rest";
    assert_eq!(server.count_logged(refusal), 1, "{:?}", server.log_lines());
    assert_eq!(tools().await, ["demo.echo"]);

    // Put back, the rest of the file is reloaded.
    rewrite(&path, &with_add.text());
    server.logged("configuration reloaded", 1).await;
    assert_eq!(tools().await, ["demo.add", "demo.echo"]);
}
