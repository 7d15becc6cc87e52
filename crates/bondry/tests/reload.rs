//! Configuration reload through the real binary: rewriting the file (or SIGHUP) swaps the
//! catalogue and grants in, listen streams hear of changes to what they can see and of
//! nothing else, and a broken file keeps the running configuration.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Binary, Events};

const BASE: &str = r#"
[listeners.main]
bind = "127.0.0.1:0"

[realms.default]
anonymous_roles = ["demo"]

[[realms.default.roles]]
name = "demo"
grants = ["demo.*"]

[[realms.default.roles]]
name = "admin"
grants = ["admin.*"]

[[realms.default.capabilities]]
id = "demo.echo"
kind = "tool"
handler = "demo.echo"
"#;

fn with_tool(text: &str, id: &str, handler: &str) -> String {
    format!("{text}\n[[realms.default.capabilities]]\nid = \"{id}\"\nkind = \"tool\"\nhandler = \"{handler}\"\n")
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
    std::fs::write(&path, BASE).unwrap();
    let server = Binary::serve(&path, &[]);
    let client = reqwest::Client::new();
    let mut stream = Events::new(
        server.post(&client, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})).await,
    );
    let ack = stream.next(Duration::from_secs(5)).await.expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}));

    // A tool only admins see: the anonymous stream hears nothing of it.
    let with_admin = with_tool(BASE, "admin.reset", "admin.reset");
    rewrite(&path, &with_admin);
    server.logged("configuration reloaded", 1).await;
    // A tool anonymous callers see: this is the stream's first notification.
    let with_both = with_tool(&with_admin, "demo.add", "demo.add");
    rewrite(&path, &with_both);
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
    rewrite(&path, BASE);
    server.logged("configuration reloaded", 3).await;
    let changed = stream.next(Duration::from_secs(5)).await.expect("a second list change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let status = Command::new("kill").args(["-HUP", &server.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    server.logged("configuration reloaded", 4).await;
}
