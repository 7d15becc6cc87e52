//! Configuration reload through the real binary: rewriting the file (or SIGHUP) swaps the
//! catalogue and grants in, listen streams hear of changes to what they can see and of
//! nothing else, and a broken file keeps the running configuration.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Events, PROTOCOL};

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

/// `bondry serve --config PATH`, its port, and its stderr lines so far.
struct Server {
    child: Child,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(config: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bondry"))
            .args(["serve", "--config", config.to_str().unwrap()])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bondry starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (lines, feed) = (BufReader::new(child.stderr.take().unwrap()).lines(), Arc::clone(&log));
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                feed.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = loop {
            let banner = log.lock().unwrap().iter().find_map(|line| {
                line.strip_prefix("listening on http://127.0.0.1:")?.strip_suffix("/mcp")?.parse().ok()
            });
            if let Some(port) = banner {
                break port;
            }
            assert!(Instant::now() < deadline, "no banner: {:?}", log.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        };
        Self { child, port, log }
    }

    /// Waits until the log holds `count` lines containing `text`.
    async fn logged(&self, text: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let seen = self.log.lock().unwrap().iter().filter(|line| line.contains(text)).count();
            if seen >= count {
                return;
            }
            assert!(Instant::now() < deadline, "{count} × {text:?} not logged: {:?}", self.log.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn post(&self, client: &reqwest::Client, method: &str, params: Value) -> reqwest::Response {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        client
            .post(format!("http://127.0.0.1:{}/mcp", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL)
            .header("Mcp-Method", method)
            .body(json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string())
            .send()
            .await
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let server = Server::start(&path);
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
