//! The real binaries: `bondry` serving a configuration file, the test upstreams beside
//! it, and interoperability runs of other programs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{PROTOCOL, sse_messages};

/// The `rmcp-stdio-upstream` binary of this crate (an rmcp 3.11 server over stdio).
pub fn test_upstream_exe() -> PathBuf {
    sibling_exe("rmcp-stdio-upstream")
}

/// The `catalogue-upstream` binary of this crate: an rmcp 3.11 server over stdio serving
/// the definitions of a JSON file, verbatim, and saying when the file changes.
pub fn catalogue_upstream_exe() -> PathBuf {
    sibling_exe("catalogue-upstream")
}

/// The `hostile-upstream` binary of this crate: an MCP server that lists what a JSON
/// file says byte for byte (repeated names, unknown fields, oversized entries), over
/// stdio or, with `--http`, Streamable HTTP.
pub fn hostile_upstream_exe() -> PathBuf {
    sibling_exe("hostile-upstream")
}

/// The binary `name` of this crate, found beside the running executable: an integration
/// test runs from `target/<profile>/deps`, the `bondry` binary from `target/<profile>`.
fn sibling_exe(name: &str) -> PathBuf {
    let name = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let exe = std::env::current_exe().expect("the running executable has a path");
    exe.ancestors().skip(1).take(2).map(|dir| dir.join(&name)).find(|candidate| candidate.is_file()).unwrap_or_else(
        || panic!("no {name} beside {}: build it: cargo build -p bondry-test-support --bins", exe.display()),
    )
}

/// An interop client: `program` run with `args` in `dir` of the repository, within a
/// minute, with a throwaway `HOME` (nothing it caches leaks between runs or into the
/// user's); its stdout, once it exited with success. When `program` is not installed
/// the test passes, saying so, unless the environment variable `required` is set (as
/// `scripts/test` sets it), which fails it with `install`, the way to install it.
pub async fn interop(dir: &str, program: &str, args: Vec<String>, required: &str, install: &str) -> Option<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);

    let program = dir.join(program);
    if !program.exists() {
        assert!(std::env::var_os(required).is_none(), "{} is missing: {install}", program.display());
        eprintln!("skipped: {install} (scripts/test does)");
        return None;
    }
    let home = tempfile::tempdir().unwrap();
    let shown = program.display().to_string();
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || {
            Command::new(program).args(args).current_dir(dir).env("HOME", home.path()).output()
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("{shown} finishes within a minute"))
    .unwrap()
    .unwrap_or_else(|e| panic!("{shown} starts: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{shown} {:?} failed:\n{stdout}\n{stderr}", output.status);
    Some(stdout)
}

/// The `bondry` binary cargo built for the calling integration test of the `bondry` crate.
#[macro_export]
macro_rules! bondry_exe {
    () => {
        ::std::path::Path::new(env!("CARGO_BIN_EXE_bondry"))
    };
}

/// The real `bondry` binary serving a configuration file: its port and its log so far.
pub struct Binary {
    pub child: Child,
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Binary {
    /// `EXE serve --config CONFIG` with `env` added (`RUST_LOG=info` unless it says), once
    /// it has printed its banner; `EXE` is the binary cargo built for the test
    /// ([`bondry_exe!`]).
    pub fn serve(exe: &Path, config: &Path, env: &[(&str, &str)]) -> Self {
        Self::serve_with(exe, config, &[], env)
    }

    /// [`Binary::serve`] with `args` after `--config CONFIG`.
    pub fn serve_with(exe: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(exe)
            .args(["serve", "--config", config.to_str().unwrap()])
            .args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
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
        // A debug binary on a loaded machine may take a while to start (as in `tests/cli.rs`).
        let deadline = Instant::now() + Duration::from_secs(20);
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

    /// Ends it with SIGTERM and waits (at most 20 s) until it has exited and its last
    /// lines are in its log.
    pub fn terminate(&mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "bondry did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The thread reading its stderr takes the last lines once the pipe closes.
        std::thread::sleep(Duration::from_millis(100));
    }

    /// The port of its admin listener, once it has said where it listens.
    pub fn admin_port(&self) -> Option<u16> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .find_map(|line| line.strip_prefix("admin listening on http://127.0.0.1:")?.parse().ok())
    }

    /// Every line logged so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// How many lines logged so far contain `text`.
    pub fn count_logged(&self, text: &str) -> usize {
        self.log.lock().unwrap().iter().filter(|line| line.contains(text)).count()
    }

    /// Waits until the log holds `count` lines containing `text`, within 30 s: long
    /// enough for an upstream whose first start timed out (`connect_timeout_ms`, 10 s) to
    /// be connected again, as a slow child on a loaded machine sometimes is.
    pub async fn logged(&self, text: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.count_logged(text) >= count {
                return;
            }
            assert!(Instant::now() < deadline, "{count} × {text:?} not logged: {:?}", self.log.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A modern POST of `method` with `params` (`_meta` added unless given), id 7.
    pub async fn post(&self, client: &reqwest::Client, method: &str, params: Value) -> reqwest::Response {
        self.post_with(client, &[], method, params).await
    }

    /// [`Binary::post`] with `headers` added.
    pub async fn post_with(
        &self,
        client: &reqwest::Client,
        headers: &[(&str, &str)],
        method: &str,
        params: Value,
    ) -> reqwest::Response {
        let mut params = params;
        if params.get("_meta").is_none() {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        let mut request = client
            .post(format!("http://127.0.0.1:{}/mcp", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL)
            .header("Mcp-Method", method);
        if let Some(name) = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str) {
            request = request.header("Mcp-Name", name);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
            .body(json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string())
            .send()
            .await
            .unwrap()
    }
}

impl Binary {
    /// A handshake-era session with this server: its id, after `initialize` (offering
    /// 2025-11-25, no client capabilities) and `notifications/initialized`.
    pub async fn session(&self, client: &reqwest::Client) -> String {
        self.session_with(client, json!({})).await
    }

    /// [`Binary::session`] declaring the client `capabilities`.
    pub async fn session_with(&self, client: &reqwest::Client, capabilities: Value) -> String {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "bondry-tests", "version": "0"}}});
        let response = client
            .post(format!("http://127.0.0.1:{}/mcp", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "initialize: {:?}", response.text().await);
        let sid = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized =
            self.in_session(client, &sid, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(initialized.await, Value::Null, "a notification has no answer");
        sid
    }

    /// Posts `message` in the session `sid`; the raw response.
    pub async fn post_in_session(&self, client: &reqwest::Client, sid: &str, message: Value) -> reqwest::Response {
        client
            .post(format!("http://127.0.0.1:{}/mcp", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&message)
            .send()
            .await
            .unwrap()
    }

    /// Posts `message` in the session `sid`; its answer (on an event stream, the response
    /// among its messages), or `Null` when there is none.
    pub async fn in_session(&self, client: &reqwest::Client, sid: &str, message: Value) -> Value {
        let response = self.post_in_session(client, sid, message).await;
        let stream = response
            .headers()
            .get("content-type")
            .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
        let text = response.text().await.unwrap();
        if stream {
            let response = |message: &Value| message.get("id").is_some() && message.get("method").is_none();
            return sse_messages(&text).into_iter().find(response).unwrap_or(Value::Null);
        }
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
