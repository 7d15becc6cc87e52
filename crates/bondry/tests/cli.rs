//! Tests of the real `bondry` binary: `serve` on an ephemeral port (the embedded default
//! and a file with an environment override), clean exits on SIGTERM and SIGINT, the audit
//! stream on stdout, and `check` accepting a valid file and refusing broken ones with the
//! file and key path named on stderr.
//!
//! Every child process is owned by a guard that kills it if a test fails midway.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

const PROTOCOL: &str = "2026-07-28";
const STARTUP: Duration = Duration::from_secs(20);
const EXIT: Duration = Duration::from_secs(10);
const BANNER_PREFIX: &str = "listening on http://127.0.0.1:";

/// The smallest configuration `check` accepts.
const MINIMAL: &str = r#"[listeners.main]
bind = "127.0.0.1:0"
[realms.default]
anonymous_roles = ["demo"]
[[realms.default.roles]]
name = "demo"
grants = ["demo.*"]
[[realms.default.capabilities]]
id = "demo.echo"
kind = "tool"
handler = "demo.echo"
"#;

/// The binary, with no inherited `BONDRY__*` overrides and no stdin.
fn bondry() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bondry"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("BONDRY__") {
            command.env_remove(name);
        }
    }
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// A child process whose stdout and stderr are drained by threads; killed on drop if it
/// is still running.
struct Guarded {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<()>>,
    /// Every stderr line so far.
    stderr_lines: Arc<Mutex<Vec<String>>>,
    /// Stderr lines as they arrive.
    stderr_feed: Receiver<String>,
}

/// What a finished child left behind.
struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Guarded {
    fn spawn(mut command: Command) -> Self {
        let mut child = command.spawn().expect("the bondry binary starts");
        let mut out = child.stdout.take().expect("stdout is piped");
        let err = child.stderr.take().expect("stderr is piped");
        let stdout = std::thread::spawn(move || {
            let mut text = String::new();
            out.read_to_string(&mut text).expect("stdout is UTF-8");
            text
        });
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        let (sender, stderr_feed) = mpsc::channel();
        let lines = Arc::clone(&stderr_lines);
        let stderr = std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                lines.lock().unwrap().push(line.clone());
                let _ = sender.send(line);
            }
        });
        Self { child, stdout: Some(stdout), stderr: Some(stderr), stderr_lines, stderr_feed }
    }

    fn stderr_so_far(&self) -> String {
        self.stderr_lines.lock().unwrap().join("\n")
    }

    /// Waits for the `listening on http://127.0.0.1:PORT/mcp` banner and returns the port.
    fn wait_for_banner(&mut self) -> u16 {
        let deadline = Instant::now() + STARTUP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_feed.recv_timeout(left) {
                Ok(line) => {
                    if let Some(port) = line.strip_prefix(BANNER_PREFIX).and_then(|rest| rest.strip_suffix("/mcp")) {
                        return port.parse().unwrap_or_else(|_| panic!("banner with a bad port: {line:?}"));
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no banner within {STARTUP:?}; stderr so far:\n{}", self.stderr_so_far())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok();
                    panic!("stderr closed before the banner (exit {status:?}); stderr:\n{}", self.stderr_so_far())
                }
            }
        }
    }

    /// Sends `signal` (`TERM`, `INT`) with the `kill` command.
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("the kill command runs");
        assert!(status.success(), "kill -{signal} failed: {status}");
    }

    /// Waits up to `timeout` for the child to exit, then collects its output.
    fn finish(mut self, timeout: Duration) -> Finished {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("the child can be waited on") {
                break status;
            }
            if Instant::now() >= deadline {
                panic!("the process did not exit within {timeout:?}; stderr so far:\n{}", self.stderr_so_far());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = self.stdout.take().unwrap().join().expect("the stdout reader does not panic");
        self.stderr.take().unwrap().join().expect("the stderr reader does not panic");
        Finished { status, stdout, stderr: self.stderr_so_far() }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `bondry serve` with `args`, waited on until the banner; returns it and the port.
fn serve(args: &[&str], env: &[(&str, &str)]) -> (Guarded, u16) {
    let mut command = bondry();
    command.arg("serve").args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut server = Guarded::spawn(command);
    let port = server.wait_for_banner();
    assert_ne!(port, 0, "the banner names the bound port");
    (server, port)
}

/// Runs a command expected to exit by itself (within `EXIT`).
fn run(args: &[&str]) -> Finished {
    run_with(args, &[])
}

/// `run`, with `env` added to the command's environment.
fn run_with(args: &[&str], env: &[(&str, &str)]) -> Finished {
    let mut command = bondry();
    command.args(args).envs(env.iter().copied());
    Guarded::spawn(command).finish(EXIT)
}

/// A modern POST to `/mcp`; returns the status and the JSON body.
async fn post(port: u16, method: &str, name: Option<&str>, mut params: Value) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let mut request = client
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", PROTOCOL)
        .header("Mcp-Method", method);
    if let Some(name) = name {
        request = request.header("Mcp-Name", name);
    }
    let response = request.body(serde_json::to_vec(&body).unwrap()).send().await.expect("the server answers");
    let status = response.status().as_u16();
    let bytes = response.bytes().await.expect("the body is read");
    let json = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&bytes)));
    (status, json)
}

/// Parses stdout, asserting that every line is a JSON object.
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| {
            let value: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            assert!(value.is_object(), "stdout line is not a JSON object: {line:?}");
            value
        })
        .collect()
}

#[tokio::test]
async fn serve_answers_discover_and_echo_audits_to_stdout_and_exits_cleanly_on_sigterm() {
    let (server, port) = serve(&["--listen", "127.0.0.1:0"], &[]);

    let (status, body) = post(port, "server/discover", None, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(body["result"]["supportedVersions"], json!([PROTOCOL]), "{body}");

    let (status, body) =
        post(port, "tools/call", Some("demo.echo"), json!({"name": "demo.echo", "arguments": {"text": "hi"}})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["structuredContent"], json!({"text": "hi"}), "{body}");

    server.signal("TERM");
    let finished = server.finish(EXIT);
    assert_eq!(finished.status.code(), Some(0), "exit status {}; stderr:\n{}", finished.status, finished.stderr);

    let records = json_lines(&finished.stdout);
    let echoes: Vec<&Value> = records.iter().filter(|record| record["capability"] == "demo.echo").collect();
    assert_eq!(echoes.len(), 1, "one audit record for demo.echo in stdout:\n{}", finished.stdout);
    assert_eq!(echoes[0]["outcome"], "succeeded", "{}", echoes[0]);
    assert!(
        finished.stderr.lines().any(|line| line.starts_with(BANNER_PREFIX)),
        "the banner is on stderr:\n{}",
        finished.stderr
    );
}

#[test]
fn serve_exits_cleanly_on_sigint() {
    let (server, _port) = serve(&["--listen", "127.0.0.1:0"], &[]);
    server.signal("INT");
    let finished = server.finish(EXIT);
    assert_eq!(finished.status.code(), Some(0), "exit status {}; stderr:\n{}", finished.status, finished.stderr);
    json_lines(&finished.stdout);
}

#[test]
fn sighup_without_a_file_changes_nothing() {
    let (server, _port) = serve(&["--listen", "127.0.0.1:0"], &[("RUST_LOG", "info")]);
    server.signal("HUP");
    let deadline = Instant::now() + EXIT;
    while !server.stderr_so_far().contains("nothing to reload") {
        assert!(Instant::now() < deadline, "SIGHUP was not acknowledged:\n{}", server.stderr_so_far());
        std::thread::sleep(Duration::from_millis(20));
    }
    server.signal("TERM");
    let finished = server.finish(EXIT);
    assert_eq!(finished.status.code(), Some(0), "exit status {}; stderr:\n{}", finished.status, finished.stderr);
}

#[test]
fn environment_overrides_the_bind_address_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), &MINIMAL.replace("127.0.0.1:0", "127.0.0.1:1"));
    let (server, port) =
        serve(&["--config", path.to_str().unwrap()], &[("BONDRY__LISTENERS__MAIN__BIND", "127.0.0.1:0")]);
    assert_ne!(port, 1, "the environment, not the file, chose the address");
    server.signal("TERM");
    let finished = server.finish(EXIT);
    assert_eq!(finished.status.code(), Some(0), "exit status {}; stderr:\n{}", finished.status, finished.stderr);
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("bondry.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn check_accepts_a_valid_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), MINIMAL);
    let finished = run(&["check", "--config", path.to_str().unwrap()]);
    assert_eq!(finished.status.code(), Some(0), "exit status {}; stderr:\n{}", finished.status, finished.stderr);
    assert_eq!(finished.stdout, format!("{}: ok\n", path.display()));
}

/// Runs `args` (with `{}` replaced by the path of a file holding `config`) and asserts a
/// refusal: exit code 1, nothing on stdout, stderr `bondry: <file>: ...` containing `needles`.
#[track_caller]
fn assert_refused(args: &[&str], config: &str, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), config);
    let file = path.to_str().unwrap();
    let args: Vec<&str> = args.iter().map(|&arg| if arg == "{}" { file } else { arg }).collect();
    let finished = run(&args);
    let context = format!("bondry {}\nconfig:\n{config}\nstderr:\n{}", args.join(" "), finished.stderr);
    assert_eq!(finished.status.code(), Some(1), "exit status {}; {context}", finished.status);
    assert_eq!(finished.stdout, "", "{context}");
    assert!(finished.stderr.starts_with("bondry: "), "{context}");
    assert!(finished.stderr.contains(&format!("{file}:")), "names the file; {context}");
    for needle in needles {
        assert!(finished.stderr.contains(needle), "mentions {needle:?}; {context}");
    }
}

#[track_caller]
fn assert_check_refuses(config: &str, needles: &[&str]) {
    assert_refused(&["check", "--config", "{}"], config, needles);
}

/// `MINIMAL` with `lines` added to `[listeners.main]`.
fn with_listener_keys(lines: &str) -> String {
    MINIMAL.replace("bind = \"127.0.0.1:0\"\n", &format!("bind = \"127.0.0.1:0\"\n{lines}\n"))
}

/// `MINIMAL` with `lines` added to its one capability (the last table of the file).
fn with_capability_keys(lines: &str) -> String {
    format!("{MINIMAL}{lines}\n")
}

#[test]
fn check_refuses_a_wrong_type_naming_the_key_path() {
    assert_check_refuses(
        "[listeners.main]\nbind = 5\n",
        &[":2:8: listeners.main.bind: expected a string, found an integer"],
    );
}

#[test]
fn check_refuses_a_misspelt_key_suggesting_the_one_meant() {
    assert_check_refuses(
        &with_listener_keys("bnid = 1"),
        &[":3:1: listeners.main.bnid: unknown key; did you mean `bind`?"],
    );
}

#[test]
fn check_reports_five_shape_errors_of_five_kinds_each_at_its_line_and_column() {
    let config = r#"shutdown_grace_ms = "soon"
[listeners.main]
bnid = "127.0.0.1:0"

[audit]
sink = "fiel"

[realms.default]
anonymous_roles = "demo"
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), config);
    let file = path.to_str().unwrap();
    let finished = run(&["check", "--config", file]);
    assert_eq!(finished.status.code(), Some(1), "{}", finished.stderr);
    assert_eq!(finished.stdout, "");
    let expected = [
        format!("bondry: {file}:1:21: shutdown_grace_ms: expected a non-negative integer, found a string"),
        format!("bondry: {file}:2:1: listeners.main: missing key `bind`: expected a string"),
        format!("bondry: {file}:3:1: listeners.main.bnid: unknown key; did you mean `bind`?"),
        format!(
            "bondry: {file}:6:8: audit.sink: \"fiel\" is not accepted: expected one of \"stdout\", \"file\", \"off\"; did you mean \"file\"?"
        ),
        format!("bondry: {file}:9:19: realms.default.anonymous_roles: expected an array of strings, found a string"),
    ];
    assert_eq!(finished.stderr.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn an_overrides_error_names_the_variable_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), MINIMAL);
    let file = path.to_str().unwrap();
    let finished = run_with(
        &["check", "--config", file],
        &[("BONDRY__LISTENERS__MAIN__PAGE_SIZE", "many"), ("BONDRY__LISTENERS__MAIN__BIND", "nowhere")],
    );
    assert_eq!(finished.status.code(), Some(1), "{}", finished.stderr);
    assert_eq!(
        finished.stderr,
        "bondry: environment variable BONDRY__LISTENERS__MAIN__PAGE_SIZE: listeners.main.page_size: \
         expected a non-negative integer, found a string"
    );
    let finished = run_with(&["check", "--config", file], &[("BONDRY__LISTENERS__MAIN__BIND", "nowhere")]);
    assert_eq!(finished.status.code(), Some(1), "{}", finished.stderr);
    assert!(
        finished
            .stderr
            .starts_with("bondry: environment variable BONDRY__LISTENERS__MAIN__BIND: listeners.main.bind: "),
        "{}",
        finished.stderr
    );
}

#[test]
fn check_refuses_an_unknown_handler() {
    assert_check_refuses(
        &MINIMAL.replace("handler = \"demo.echo\"", "handler = \"nope\""),
        &["realms.default.capabilities[0].handler", "\"nope\"", "demo.echo"],
    );
}

#[test]
fn check_refuses_an_invalid_input_schema_naming_the_capability() {
    assert_check_refuses(
        &with_capability_keys(r#"input_schema = '{"type":"object","properties":{"a":{"type":"nope"}}}'"#),
        &["realms.default.capabilities", "demo.echo", "input schema"],
    );
}

#[test]
fn check_refuses_an_invalid_x_mcp_header() {
    assert_check_refuses(
        &with_capability_keys(
            r#"input_schema = '{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}'"#,
        ),
        &["demo.echo", "x-mcp-header", "/properties/a"],
    );
}

#[test]
fn check_refuses_oauth_it_cannot_serve_safely() {
    let with_resource =
        MINIMAL.replace("[realms.default]\n", "[realms.default]\nresource_url = \"https://mcp.example.com/mcp\"\n");
    let issuer =
        |keys: &str| format!("{with_resource}[[realms.default.oauth]]\nissuer = \"https://issuer.example\"\n{keys}\n");
    let ed25519 = r#"keys = [{ kty = "OKP", crv = "Ed25519", x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" }]"#;
    assert_check_refuses(
        &format!("{MINIMAL}[[realms.default.oauth]]\nissuer = \"https://issuer.example\"\n{ed25519}\n"),
        &["realms.default.resource_url", "OAuth needs the realm's public URL"],
    );
    assert_check_refuses(&with_resource, &["realms.default.resource_url", "only used with OAuth"]);
    assert_check_refuses(&issuer(""), &["realms.default.oauth[0]", "exactly one of jwks_url, jwks_file or keys"]);
    assert_check_refuses(
        &issuer("jwks_url = \"http://issuer.example/jwks\""),
        &["realms.default.oauth[0].jwks_url", "https"],
    );
    assert_check_refuses(
        &issuer(r#"keys = [{ kty = "oct", k = "c2VjcmV0" }]"#),
        &["realms.default.oauth[0].keys[0]", "symmetric"],
    );
    assert_check_refuses(
        &issuer(&format!("{ed25519}\nalgorithms = [\"HS256\"]")),
        &["realms.default.oauth[0].algorithms", "\"HS256\" is not accepted"],
    );
    assert_check_refuses(
        &issuer(&format!("{ed25519}\nroles = [\"root\"]")),
        &["realms.default.oauth[0].roles", "\"root\" is not defined"],
    );
    let twin = format!(
        "{}namespace = \"corp\"\n[[realms.default.oauth]]\nissuer = \"https://other.example\"\n{ed25519}\nnamespace = \"corp\"\n",
        issuer(ed25519)
    );
    assert_check_refuses(
        &twin,
        &["realms.default.oauth[1].namespace", "\"corp\" is already another issuer's namespace"],
    );
    let scoped = |scopes: &str| {
        issuer(ed25519).replace("[realms.default]\n", &format!("[realms.default]\nrequired_scopes = {scopes}\n"))
    };
    assert_check_refuses(
        &MINIMAL.replace("[realms.default]\n", "[realms.default]\nrequired_scopes = [\"mcp\"]\n"),
        &["realms.default.required_scopes", "only checked on OAuth tokens"],
    );
    assert_check_refuses(
        &scoped(r#"["mcp read"]"#),
        &["realms.default.required_scopes", "\"mcp read\" is not a scope"],
    );
    assert_check_refuses(&scoped(r#"["say\"hi"]"#), &["realms.default.required_scopes", "is not a scope"]);
    let accepted = issuer(ed25519);
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), &accepted);
    let finished = run(&["check", "--config", path.to_str().unwrap()]);
    assert_eq!(finished.status.code(), Some(0), "{}\n{accepted}", finished.stderr);
}

#[test]
fn check_refuses_protocol_versions_without_a_served_revision() {
    assert_check_refuses(&with_listener_keys("protocol_versions = []"), &["listeners.main.protocol_versions", "empty"]);
    assert_check_refuses(
        &with_listener_keys(r#"protocol_versions = ["2025-03-26"]"#),
        &["listeners.main.protocol_versions", "unknown protocol revision \"2025-03-26\""],
    );
}

#[test]
fn serve_refuses_listen_with_two_listeners() {
    assert_refused(
        &["serve", "--config", "{}", "--listen", "127.0.0.1:0"],
        &format!("{MINIMAL}[listeners.second]\nbind = \"127.0.0.1:0\"\n"),
        &["--listen", "exactly one", "found 2"],
    );
}

#[test]
fn hash_password_and_ticket_new_make_stanzas_check_accepts() {
    let mut hashing = bondry();
    hashing.arg("hash-password").stdin(Stdio::piped());
    let mut child = hashing.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"correct horse\n").unwrap();
    let hashed = child.wait_with_output().unwrap();
    assert_eq!(hashed.status.code(), Some(0), "{}", String::from_utf8_lossy(&hashed.stderr));
    let hash = String::from_utf8(hashed.stdout).unwrap().trim().to_owned();
    assert!(hash.starts_with("$argon2id$"), "{hash}");

    let minted = run(&["ticket", "new", "--realm", "default", "--principal", "alice", "--roles", "demo"]);
    assert_eq!(minted.status.code(), Some(0), "{}", minted.stderr);
    let (ticket, stanza) = minted.stdout.split_once("\n\n").expect("the ticket, then the stanza");
    assert!(ticket.starts_with("bondry_") && !stanza.contains(ticket), "the stanza holds only the hash");

    let config = format!(
        "{MINIMAL}[[realms.default.principals]]\nid = \"alice\"\nroles = [\"demo\"]\npassword_hash = \"{hash}\"\n{stanza}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), &config);
    let finished = run(&["check", "--config", path.to_str().unwrap()]);
    assert_eq!(finished.status.code(), Some(0), "{}\n{config}", finished.stderr);

    let mut empty = bondry();
    empty.arg("hash-password").stdin(Stdio::piped());
    let mut child = empty.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"\n").unwrap();
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(1), "an empty password is refused");
}

#[test]
fn check_refuses_bad_credentials() {
    let with = |stanza: &str| format!("{MINIMAL}{stanza}");
    assert_check_refuses(
        &with("[[realms.default.principals]]\nid = \"alice\"\npassword_hash = \"plain\"\n"),
        &["realms.default.principals[0].password_hash", "bondry hash-password"],
    );
    for weak in [
        "$argon2id$v=19$m=1,t=1,p=1$c2FsdHNhbHRzYWx0$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHRzYWx0$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0",
    ] {
        assert_check_refuses(
            &with(&format!("[[realms.default.principals]]\nid = \"alice\"\npassword_hash = \"{weak}\"\n")),
            &["realms.default.principals[0].password_hash", "invalid or too costly"],
        );
    }
    assert_check_refuses(
        &with("[[realms.default.principals]]\nid = \"anonymous\"\n"),
        &["realms.default.principals[0].id", "anonymous"],
    );
    assert_check_refuses(
        &with("[[realms.default.tickets]]\nsha256 = \"abc\"\nprincipal = \"alice\"\n"),
        &["realms.default.tickets[0].sha256", "64 lowercase hex"],
    );
    let ticket = format!("[[realms.default.tickets]]\nsha256 = \"{}\"\nprincipal = \"ghost\"\n", "a".repeat(64));
    assert_check_refuses(&with(&ticket), &["realms.default.tickets[0].principal", "ghost"]);
    let widening = format!(
        "[[realms.default.principals]]\nid = \"bob\"\nroles = [\"demo\"]\n[[realms.default.tickets]]\nsha256 = \"{}\"\nprincipal = \"bob\"\nroles = [\"admin\"]\n",
        "b".repeat(64)
    );
    assert_check_refuses(&with(&widening), &["realms.default.tickets[0].roles", "only narrow"]);
}

#[tokio::test]
async fn credentials_never_reach_logs_or_the_audit_trail() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}[[realms.default.principals]]\nid = \"alice\"\nroles = [\"demo\"]\n[[realms.default.tickets]]\nsha256 = \"{}\"\nprincipal = \"alice\"\n\
        [[realms.default.oauth]]\nissuer = \"https://issuer.example\"\n\
        keys = [{{ kty = \"OKP\", crv = \"Ed25519\", x = \"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\" }}]\n",
        MINIMAL.replace("[realms.default]\n", "[realms.default]\nresource_url = \"https://mcp.example.com/mcp\"\n"),
        "c".repeat(64)
    );
    let path = write_config(dir.path(), &config);
    let part = |json: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
    let claims = r#"{"iss":"https://issuer.example","aud":"https://mcp.example.com/mcp","sub":"topsecret-sub","exp":"topsecret-exp"}"#;
    let jwt = format!("Bearer {}.{}.{}", part(r#"{"alg":"EdDSA"}"#), part(claims), part("topsecret-signature"));
    let (server, port) = serve(&["--config", path.to_str().unwrap()], &[("RUST_LOG", "trace")]);
    let client = reqwest::Client::new();
    for (name, value) in [
        ("authorization", "Bearer topsecret-ticket"),
        ("authorization", jwt.as_str()),
        ("authorization", "Basic dG9wc2VjcmV0LXVzZXI6dG9wc2VjcmV0LXBhc3M="),
        ("proxy-authorization", "Basic topsecret-proxy"),
        ("cookie", "session=topsecret-cookie"),
    ] {
        let response = client
            .post(format!("http://127.0.0.1:{port}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header(name, value)
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .send()
            .await
            .unwrap();
        assert_ne!(response.status().as_u16(), 200);
    }
    server.signal("TERM");
    let finished = server.finish(EXIT);
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(!finished.stderr.contains("topsecret"), "a credential reached the logs:\n{}", finished.stderr);
    assert!(!finished.stderr.contains(&jwt[7..]), "a token reached the logs");
    assert!(finished.stderr.contains("bearer JWT refused"), "the refusal is logged:\n{}", finished.stderr);
    assert!(!finished.stdout.contains("topsecret"), "a credential reached the audit trail");
    assert!(finished.stdout.contains("unauthenticated"), "the refusals were audited");
}

#[test]
fn check_refuses_fields_a_kind_does_not_have() {
    assert_check_refuses(
        &with_capability_keys("mime_type = \"text/plain\""),
        &["realms.default.capabilities", "demo.echo", "a tool has no media type"],
    );
    let resource = format!(
        "{MINIMAL}[[realms.default.capabilities]]\nid = \"static\"\nkind = \"resource\"\nhandler = \"conformance.static_text\"\n"
    );
    assert_check_refuses(
        &resource.replace(
            "\"conformance.static_text\"\n",
            "\"conformance.static_text\"\noutput_schema = '{\"type\": \"object\"}'\n",
        ),
        &["static", "a resource has no output schema"],
    );
    assert_check_refuses(
        &resource.replace(
            "\"conformance.static_text\"\n",
            "\"conformance.static_text\"\nannotations = { read_only = true }\n",
        ),
        &["static", "a resource has no annotations"],
    );
    assert_check_refuses(
        &format!("{MINIMAL}[realms.default.limits]\nclient_response_timeout_ms = 0\n"),
        &["realms.default.limits.client_response_timeout_ms", "positive number of milliseconds"],
    );
}

#[test]
fn check_refuses_keys_it_cannot_use() {
    let with_keys =
        |stanzas: &str| MINIMAL.replace("[[realms.default.roles]]", &format!("{stanzas}[[realms.default.roles]]"));
    assert_check_refuses(
        &with_keys("[[realms.default.keys]]\nid = \"k\"\nsecret_env = \"BONDRY_TEST_UNSET_KEY\"\n"),
        &["realms.default.keys[0].secret_env", "\"BONDRY_TEST_UNSET_KEY\" is not set"],
    );
    assert_check_refuses(
        &with_keys("[[realms.default.keys]]\nid = \"k\"\nsecret_env = \"PATH\"\n"),
        &["realms.default.keys[0].secret_env", "32 random bytes"],
    );
    assert_check_refuses(
        &with_keys(
            "[[realms.default.keys]]\nid = \"k\"\nsecret_env = \"PATH\"\n[[realms.default.keys]]\nid = \"k\"\nsecret_env = \"PATH\"\n",
        ),
        &["realms.default.keys[0].secret_env"],
    );
    assert_check_refuses(
        &with_keys("[[realms.default.keys]]\nid = \"no spaces\"\nsecret_env = \"PATH\"\n"),
        &["realms.default.keys[0].id", "not a key id"],
    );
}

#[test]
fn serve_makes_no_key_file_for_a_file_it_refuses() {
    // The keys are checked before the capabilities, whose compile refuses the file: a
    // key file made on the way would outlive a server that never started.
    let broken = with_capability_keys(r#"input_schema = '{"type":"object","properties":{"a":{"type":"nope"}}}'"#);
    let config = format!("data_dir = \"state\"\n{broken}");
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), &config);
    let finished = run(&["serve", "--config", path.to_str().unwrap()]);
    assert_eq!(finished.status.code(), Some(1), "stderr:\n{}", finished.stderr);
    assert!(finished.stderr.contains("input schema"), "stderr:\n{}", finished.stderr);
    assert!(!dir.path().join("state").exists(), "nothing is written for a refused file");
}

#[test]
fn check_reports_every_error_of_a_file_in_one_run() {
    let config = r#"[listeners.main]
bind = "127.0.0.1:0"
allowed_origins = ["local", "https://app.example/path"]

[realms.default]
anonymous_roles = ["demo"]

[[realms.default.keys]]
id = "k"
secret_env = "BONDRY_TEST_UNSET_KEY"

[[realms.default.roles]]
name = "demo"
grants = ["demo.*", "not a pattern"]

[[realms.default.capabilities]]
id = "demo.echo"
kind = "tool"
handler = "demo.echo"
input_schema = '{"type":"object","properties":{"a":{"type":"nope"}}}'

[[realms.default.principals]]
id = "alice"
roles = ["demo"]
password_hash = "plain"

[[realms.default.tickets]]
sha256 = "ABC"
principal = "alice"
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), config);
    let file = path.to_str().unwrap();
    let finished = run(&["check", "--config", file]);
    let context = format!("stderr:\n{}", finished.stderr);
    assert_eq!(finished.status.code(), Some(1), "{context}");
    assert_eq!(finished.stdout, "", "{context}");
    // Each error on a line of its own: the file, the key path, the offending value.
    let expected = [
        ("listeners.main.allowed_origins[1]", "\"https://app.example/path\""),
        ("realms.default.roles[0].grants[1]", "\"not a pattern\""),
        ("realms.default.principals[0].password_hash", "not a PHC string"),
        ("realms.default.tickets[0].sha256", "\"ABC\""),
        ("realms.default.keys[0].secret_env", "\"BONDRY_TEST_UNSET_KEY\" is not set"),
        ("realms.default.capabilities[0]", "demo.echo: input schema"),
    ];
    let lines: Vec<&str> = finished.stderr.lines().collect();
    assert_eq!(lines.len(), expected.len(), "one line per error; {context}");
    for (key, value) in expected {
        assert!(
            lines.iter().any(|line| is_located(line, file, key) && line.contains(value)),
            "no line names {file}:LINE:COLUMN: {key} and mentions {value:?}; {context}"
        );
    }
}

/// Whether `line` is an error of `file` at a line and column, about `key`.
fn is_located(line: &str, file: &str, key: &str) -> bool {
    let Some(rest) = line.strip_prefix(&format!("bondry: {file}:")) else { return false };
    let mut parts = rest.splitn(3, ':');
    let numbers = parts.next().is_some_and(|line| line.parse::<usize>().is_ok())
        && parts.next().is_some_and(|column| column.parse::<usize>().is_ok());
    numbers && parts.next().is_some_and(|after| after.starts_with(&format!(" {key}: ")))
}

/// A stdio upstream and an http one, as docs/configuration.md writes them; `check` reads
/// their secrets from its environment and reaches neither.
const UPSTREAMS: &str = r#"
[[realms.default.upstreams]]
name = "everything"
transport = "stdio"
command = "node"
args = ["dist/index.js", "stdio"]
env = { LOG_LEVEL = "info" }
env_from = { API_KEY = "BONDRY_TEST_EVERYTHING_API_KEY" }
cwd = "."

[[realms.default.upstreams]]
name = "remote"
transport = "http"
url = "https://mcp.example.com/mcp"
headers_from = { Authorization = "BONDRY_TEST_REMOTE_AUTH" }
prefix = ""
expose = ["tools"]
exclude = ["admin-*"]
protocol_versions = ["2025-06-18", "2026-07-28"]
trust = "first_use"
"#;

#[test]
fn check_accepts_a_stdio_and_an_http_upstream() {
    let dir = tempfile::tempdir().unwrap();
    // `check` writes nothing: the pin store in data_dir is neither made nor opened.
    let path = write_config(dir.path(), &format!("data_dir = \"state\"\n{MINIMAL}{UPSTREAMS}"));
    let env = [("BONDRY_TEST_EVERYTHING_API_KEY", "k3y"), ("BONDRY_TEST_REMOTE_AUTH", "Bearer s3cret")];
    let finished = run_with(&["check", "--config", path.to_str().unwrap()], &env);
    assert_eq!(finished.status.code(), Some(0), "exit status {}; stderr:\n{}", finished.status, finished.stderr);
    assert_eq!(finished.stdout, format!("{}: ok\n", path.display()));
    assert!(!dir.path().join("state").exists());
}

#[test]
fn check_reports_every_upstream_error_of_a_file_in_one_run() {
    let upstreams = r#"
[[realms.default.upstreams]]
name = "Everything"
transport = "stdio"
command = "node"
env_from = { API_KEY = "BONDRY_TEST_UNSET_UPSTREAM_KEY" }
expose = ["tools", "widgets"]

[[realms.default.upstreams]]
name = "remote"
transport = "http"
url = "http://mcp.example.com/mcp"
trust = "approve"
new_capabilities = "trust"
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), &format!("{MINIMAL}{upstreams}"));
    let file = path.to_str().unwrap();
    let finished = run(&["check", "--config", file]);
    let context = format!("stderr:\n{}", finished.stderr);
    assert_eq!(finished.status.code(), Some(1), "{context}");
    assert_eq!(finished.stdout, "", "{context}");
    // Each error on a line of its own: the file, the key path, the offending value.
    let expected = [
        ("realms.default.upstreams[0].name", "\"Everything\" is not a backend name"),
        ("realms.default.upstreams[0].env_from.API_KEY", "\"BONDRY_TEST_UNSET_UPSTREAM_KEY\" is not set"),
        ("realms.default.upstreams[0].expose[1]", "\"widgets\" is not a kind"),
        ("realms.default.upstreams[1].url", "\"http://mcp.example.com/mcp\" is plain http"),
        ("pin_store", "upstreams need data_dir to keep their pins"),
    ];
    let lines: Vec<&str> = finished.stderr.lines().collect();
    assert_eq!(lines.len(), expected.len(), "one line per error; {context}");
    for (key, value) in expected {
        // A key the file does not write (pin_store takes its default) is not placed.
        let unplaced = format!("bondry: {file}: {key}: ");
        assert!(
            lines
                .iter()
                .any(|line| (is_located(line, file, key) || line.starts_with(&unplaced)) && line.contains(value)),
            "no line names {file}: {key} and mentions {value:?}; {context}"
        );
    }
}

#[test]
fn check_points_a_capability_backed_by_an_upstream_to_the_upstream_stanza() {
    assert_check_refuses(
        &MINIMAL.replace("handler = \"demo.echo\"", "backend = \"upstream\"\nhandler = \"demo.echo\""),
        &["realms.default.capabilities[0].backend", "[[realms.default.upstreams]]"],
    );
}

#[test]
fn every_example_configuration_passes_check() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "toml") {
            // With the secrets the examples' headers say to export, and nothing else.
            let secrets = [("BONDRY_SIGNING_KEY", "4e1f0c9a7b2d8e3f6a5c4b1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f")];
            let finished = run_with(&["check", "--config", path.to_str().unwrap()], &secrets);
            assert!(finished.status.success(), "{}: {}", path.display(), finished.stderr);
            checked += 1;
        }
    }
    assert!(checked >= 4, "bondry.toml, conformance.toml, gateway.toml and http-backend.toml at least");
}

/// A realm fronting one stdio upstream, `command` with `args`; pins kept in memory.
fn with_stdio_upstream(command: &str, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|arg| format!("{arg:?}")).collect();
    format!(
        "pin_store = \"memory\"\n{MINIMAL}\n[[realms.default.upstreams]]\nname = \"up\"\ntransport = \"stdio\"\n\
         command = {command:?}\nargs = [{}]\n",
        args.join(", ")
    )
}

#[test]
fn a_port_in_use_stops_the_start_naming_it_before_any_upstream_starts() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let script = format!("touch '{}'; sleep 30", started.display());
    let config = with_stdio_upstream("/bin/sh", &["-c", &script]).replace("127.0.0.1:0", &addr);
    let path = write_config(dir.path(), &config);
    let finished = run(&["serve", "--config", path.to_str().unwrap()]);
    assert_eq!(finished.status.code(), Some(1), "{}", finished.stderr);
    assert!(
        finished.stderr.contains(&format!("bondry: listener main: cannot bind {addr}: ")),
        "names the address: {}",
        finished.stderr
    );
    assert!(!finished.stderr.contains("listening on"), "{}", finished.stderr);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!started.exists(), "the upstream's child was started before the bind failed");
}

#[test]
fn an_idle_gateway_with_an_upstream_exits_within_a_second_of_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = bondry_test_support::test_upstream_exe();
    let path = write_config(dir.path(), &with_stdio_upstream(upstream.to_str().unwrap(), &[]));
    let (server, _port) = serve(&["--config", path.to_str().unwrap()], &[]);
    let deadline = Instant::now() + STARTUP;
    while !server.stderr_so_far().contains("upstream up: ") {
        assert!(Instant::now() < deadline, "the upstream was not listed:\n{}", server.stderr_so_far());
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Instant::now();
    server.signal("TERM");
    let finished = server.finish(EXIT);
    let took = sent.elapsed();
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(took < Duration::from_secs(1), "SIGTERM to exit took {took:?}:\n{}", finished.stderr);
}

/// Every directory under `dir` (itself included) and every file, with its mode.
fn modes(dir: &Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = vec![(".".to_owned(), std::fs::metadata(dir).unwrap().permissions().mode() & 0o777)];
    let mut pending = vec![dir.to_owned()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            found.push((path.strip_prefix(dir).unwrap().display().to_string(), meta.permissions().mode() & 0o777));
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn the_data_directory_and_every_file_bondry_writes_there_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = bondry_test_support::test_upstream_exe();
    let config = with_stdio_upstream(upstream.to_str().unwrap(), &[])
        .replace("pin_store = \"memory\"\n", "data_dir = \"state\"\n[admin]\nbind = \"127.0.0.1:0\"\n");
    let path = write_config(dir.path(), &config);
    let (server, _port) = serve(&["--config", path.to_str().unwrap()], &[]);
    let deadline = Instant::now() + STARTUP;
    while !server.stderr_so_far().contains("upstream up: ") {
        assert!(Instant::now() < deadline, "the upstream was not listed:\n{}", server.stderr_so_far());
        std::thread::sleep(Duration::from_millis(20));
    }
    let listed_line = server.stderr_so_far();
    assert!(listed_line.contains(" capabilities listed (stdio, "), "{listed_line}");
    assert!(listed_line.contains("); none withheld"), "{listed_line}");
    let state = dir.path().join("state");
    // The CLI finds the listener on port 0 through the file the server wrote there.
    let listed = run_with(&["upstream", "list", "--config", path.to_str().unwrap()], &[("BONDRY_ADMIN_TOKEN", "")]);
    assert_eq!(listed.status.code(), Some(0), "{}", listed.stderr);
    assert!(listed.stdout.contains("default/up"), "{}", listed.stdout);
    let found = modes(&state);
    server.signal("TERM");
    let finished = server.finish(EXIT);
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    for expected in
        ["pins.sqlite3", "pins.sqlite3-wal", "pins.sqlite3-shm", "keys/default.json", "admin-token", "admin-address"]
    {
        assert!(found.iter().any(|(name, _)| name == expected), "no {expected} in {found:?}");
    }
    for (name, mode) in &found {
        let private = if std::fs::metadata(state.join(name)).is_ok_and(|meta| meta.is_dir()) { 0o700 } else { 0o600 };
        assert_eq!(*mode, private, "{name} is {mode:o}: {found:?}");
    }
    assert!(!finished.stderr.contains("chmod"), "{}", finished.stderr);
}

#[test]
fn an_existing_data_directory_open_to_others_gets_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Left by an older Bondry or another umask: made private again.
    for (file, text) in [("pins.sqlite3", String::new()), ("admin-token", "t".repeat(40))] {
        std::fs::write(state.join(file), text).unwrap();
        std::fs::set_permissions(state.join(file), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let upstream = bondry_test_support::test_upstream_exe();
    let config = with_stdio_upstream(upstream.to_str().unwrap(), &[])
        .replace("pin_store = \"memory\"\n", "data_dir = \"state\"\n[admin]\nbind = \"127.0.0.1:0\"\n");
    let path = write_config(dir.path(), &config);
    let (server, _port) = serve(&["--config", path.to_str().unwrap()], &[]);
    let address = state.join("admin-address");
    assert!(address.exists(), "the admin address is written before the banner");
    server.signal("TERM");
    let finished = server.finish(EXIT);
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(
        finished.stderr.contains("data_dir is open to others than its owner, and it holds keys and pins; chmod 700 it"),
        "{}",
        finished.stderr
    );
    for file in ["pins.sqlite3", "admin-token"] {
        let mode = std::fs::metadata(state.join(file)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}");
    }
    assert!(!address.exists(), "a stopped server's admin address is removed");
}

#[test]
fn check_warns_about_what_will_not_work_and_strict_refuses_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("server.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(dir.path().join("server.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = r#"pin_store = "memory"
[listeners.main]
bind = "0.0.0.0:0"
[realms.default]
anonymous_roles = ["demo"]
[[realms.default.roles]]
name = "demo"
grants = ["demo.echo", "demo.ehco"]
[[realms.default.roles]]
name = "ops"
grants = ["demo.*"]
[[realms.default.capabilities]]
id = "demo.echo"
kind = "tool"
handler = "demo.echo"
[[realms.default.upstreams]]
name = "missing"
transport = "stdio"
command = "bondry-no-such-program"
[[realms.default.upstreams]]
name = "script"
transport = "stdio"
command = "./server.sh"
"#;
    let path = write_config(dir.path(), config);
    let file = path.to_str().unwrap();
    let finished = run_with(&["check", "--config", file], &[("PATH", "/usr/bin:/bin")]);
    assert_eq!(finished.status.code(), Some(0), "warnings exit 0: {}", finished.stderr);
    assert_eq!(finished.stdout, format!("{file}: ok\n"));
    let script = dir.path().join("server.sh");
    let expected = [
        format!(
            "bondry: warning: {file}:3:8: listeners.main.bind: \"0.0.0.0:0\" is reachable from the network in plain HTTP, with no trusted_proxies: put a TLS-terminating proxy in front and list its address in trusted_proxies"
        ),
        format!(
            "bondry: warning: {file}:8:24: realms.default.roles[0].grants[1]: grant \"demo.ehco\" matches no capability configured in the realm, nor any an upstream's prefix could list (unless a handler publishes one while serving)"
        ),
        format!(
            "bondry: warning: {file}:10:8: realms.default.roles[1].name: no caller can hold role \"ops\": no principal, ticket or anonymous_roles gives it, and no OAuth issuer maps claims to roles"
        ),
        format!(
            "bondry: warning: {file}:19:11: realms.default.upstreams[0].command: \"bondry-no-such-program\" is not found on PATH (/usr/bin:/bin): install it, or give its full path"
        ),
        format!(
            "bondry: warning: {file}:23:11: realms.default.upstreams[1].command: {:?} is not an executable file: chmod +x it, or name its interpreter as the command",
            script.display().to_string()
        ),
    ];
    assert_eq!(finished.stderr.lines().collect::<Vec<_>>(), expected);
    let strict = run_with(&["check", "--config", file, "--strict"], &[("PATH", "/usr/bin:/bin")]);
    assert_eq!(strict.status.code(), Some(1), "{}", strict.stderr);
    assert_eq!(strict.stdout, "");
    assert!(strict.stderr.ends_with("bondry: 5 warning(s), refused with --strict"), "{}", strict.stderr);
}

#[test]
fn check_warns_of_metrics_nobody_can_scrape_and_of_public_ones_the_network_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let realm = "[listeners.main]\nbind = \"127.0.0.1:0\"\n[realms.default]\nanonymous_roles = []\n";
    let check = |text: String| {
        let path = write_config(dir.path(), &text);
        let finished = run(&["check", "--config", path.to_str().unwrap()]);
        assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
        (path.to_str().unwrap().to_owned(), finished.stderr)
    };
    let (file, stderr) = check(format!("[admin]\nmetrics_public = true\nmetrics_per_capability = true\n{realm}"));
    let off = "no metrics are kept: the admin listener, which serves them, is off: no [[admin.tokens]], and no data_dir to keep a generated token in";
    let expected = [
        format!("bondry: warning: {file}:2:18: admin.metrics_public: {off}"),
        format!("bondry: warning: {file}:3:26: admin.metrics_per_capability: {off}"),
    ];
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected);
    let remote = "data_dir = \"state\"\n[admin]\nbind = \"0.0.0.0:7374\"\nallow_remote = true\nmetrics_public = true\n";
    let (file, stderr) = check(format!("{remote}{realm}"));
    let expected = format!(
        "bondry: warning: {file}:5:18: admin.metrics_public: \"0.0.0.0:7374\" is reachable from the network: anyone who reaches it reads the metrics (realm, upstream and entry names, traffic) without a token"
    );
    assert_eq!(stderr.lines().collect::<Vec<_>>(), [expected]);
    // On loopback, or with a token, nothing to say.
    let (_, stderr) = check(format!("data_dir = \"state\"\n[admin]\nmetrics_public = true\n{realm}"));
    assert_eq!(stderr, "");
}

#[test]
fn every_subcommands_help_shows_an_example() {
    let commands: [&[&str]; 11] = [
        &["serve"],
        &["health"],
        &["check"],
        &["hash-password"],
        &["ticket", "new"],
        &["upstream"],
        &["upstream", "list"],
        &["upstream", "info"],
        &["upstream", "diff"],
        &["upstream", "approve"],
        &["upstream", "refresh"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let finished = run(&args);
        assert_eq!(finished.status.code(), Some(0), "{command:?}: {}", finished.stderr);
        let example = format!("\n  bondry {}", command.join(" "));
        assert!(
            finished.stdout.contains("Example") && finished.stdout.contains(&example),
            "bondry {} --help has no example:\n{}",
            command.join(" "),
            finished.stdout
        );
    }
}

#[test]
fn a_variable_that_is_not_utf8_is_ignored_and_an_override_that_is_not_is_named() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), MINIMAL);
    let not_utf8 = std::ffi::OsStr::from_bytes(b"\xff");
    let mut command = bondry();
    command.args(["check", "--config", path.to_str().unwrap()]).env("BONDRY_TEST_BYTES", not_utf8);
    let finished = Guarded::spawn(command).finish(EXIT);
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    let mut command = bondry();
    command.args(["check", "--config", path.to_str().unwrap()]).env("BONDRY__LISTENERS__MAIN__BIND", not_utf8);
    let finished = Guarded::spawn(command).finish(EXIT);
    assert_eq!(finished.status.code(), Some(1), "{}", finished.stderr);
    assert_eq!(finished.stderr, "bondry: environment variable BONDRY__LISTENERS__MAIN__BIND: the value is not UTF-8");
}

/// Waits (bounded) until a line of `server`'s stderr starts with `prefix`; the rest of it.
fn line_after(server: &Guarded, prefix: &str) -> String {
    let deadline = Instant::now() + STARTUP;
    loop {
        let found =
            server.stderr_lines.lock().unwrap().iter().find_map(|line| line.strip_prefix(prefix).map(str::to_owned));
        if let Some(rest) = found {
            return rest;
        }
        assert!(Instant::now() < deadline, "no {prefix:?} line; stderr:\n{}", server.stderr_so_far());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn the_demo_serves_its_admin_listener_with_a_token_made_for_the_run() {
    let (server, _) = serve(&["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"], &[]);
    let admin = line_after(&server, "admin listening on http://");
    let token = line_after(&server, "admin token for this run: ");
    assert_eq!(token.len(), 64, "32 random bytes in hex: {token}");
    assert!(token.bytes().all(|byte| byte.is_ascii_hexdigit()), "{token}");
    let client = reqwest::Client::new();
    let get = |path: &str, token: Option<&str>| {
        let mut request = client.get(format!("http://{admin}{path}"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    assert_eq!(get("/healthz", None).await, (200, json!({"status": "serving"})));
    assert_eq!(get("/readyz", None).await, (200, json!({"ready": true})));
    assert_eq!(get("/v1/backends", None).await.0, 401);
    let (status, backends) = get("/v1/backends", Some(&token)).await;
    assert_eq!(status, 200, "{backends}");
    assert_eq!(backends["realms"][0]["realm"], "default", "{backends}");
    // The token is shown once, on stderr only.
    assert_eq!(server.stderr_so_far().matches(token.as_str()).count(), 1);
}

#[test]
fn the_demos_admin_listener_only_warns_when_its_port_is_taken() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (server, mcp) = serve(&["--listen", "127.0.0.1:0", "--admin-listen", &format!("127.0.0.1:{port}")], &[]);
    assert_ne!(mcp, 0);
    let deadline = Instant::now() + STARTUP;
    while !server.stderr_so_far().contains("the demo's admin listener is off: cannot bind 127.0.0.1:") {
        assert!(Instant::now() < deadline, "no warning; stderr:\n{}", server.stderr_so_far());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!server.stderr_so_far().contains("admin token for this run"), "{}", server.stderr_so_far());
    // A remote address needs allow_remote, in the demo too.
    let refused = run(&["serve", "--listen", "127.0.0.1:0", "--admin-listen", "0.0.0.0:0"]);
    assert_eq!(refused.status.code(), Some(1), "{}", refused.stderr);
    assert!(refused.stderr.contains("--admin-listen 0.0.0.0:0 is not loopback"), "{}", refused.stderr);
}

#[test]
fn a_configured_admin_listener_runs_with_an_admin_table_or_backends_and_a_token() {
    let dir = tempfile::tempdir().unwrap();
    // Builtin handlers alone, no [admin]: off, and the log says why.
    let path = write_config(dir.path(), MINIMAL);
    let (server, _) = serve(&["--config", path.to_str().unwrap()], &[]);
    let deadline = Instant::now() + STARTUP;
    while !server
        .stderr_so_far()
        .contains("admin listener off: no [admin], and no realm has upstreams, OpenAPI or HTTP backends")
    {
        assert!(Instant::now() < deadline, "{}", server.stderr_so_far());
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server);
    // An [admin] table and a data_dir for its token: on, with no backend but the builtins.
    let text = format!("data_dir = \"state\"\n[admin]\nbind = \"127.0.0.1:0\"\n{MINIMAL}");
    let path = write_config(dir.path(), &text);
    let (server, _) = serve(&["--config", path.to_str().unwrap()], &[]);
    let admin = line_after(&server, "admin listening on http://");
    assert!(admin.starts_with("127.0.0.1:"), "{admin}");
    assert!(!server.stderr_so_far().contains("admin token for this run"), "a configured token is never shown");
    assert!(dir.path().join("state/admin-token").exists());
}

#[test]
fn health_of_a_configuration_without_an_admin_listener_asks_its_listeners() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let text = MINIMAL.replace("127.0.0.1:0", &format!("127.0.0.1:{port}"));
    let path = write_config(dir.path(), &text);
    // Something accepts on the listener's address: ready, as far as such a server can be.
    let ready = run(&["health", "--config", path.to_str().unwrap()]);
    assert_eq!(ready.status.code(), Some(0), "{}", ready.stderr);
    assert_eq!(
        ready.stdout,
        "the admin listener is off (no [admin], and no realm has upstreams, OpenAPI or HTTP backends); 1 listener(s) accept connections\n"
    );
    drop(taken);
    let down = run(&["health", "--config", path.to_str().unwrap()]);
    assert_eq!(down.status.code(), Some(1), "{}", down.stdout);
    assert!(
        down.stderr.starts_with(&format!("bondry: listener main at 127.0.0.1:{port} does not accept connections")),
        "{}",
        down.stderr
    );
    // Off for want of a token: said, and not healthy.
    let path = write_config(dir.path(), &format!("[admin]\nbind = \"127.0.0.1:0\"\n{MINIMAL}"));
    let off = run(&["health", "--config", path.to_str().unwrap()]);
    assert_eq!(off.status.code(), Some(1));
    assert_eq!(
        off.stderr,
        "bondry: the admin listener is off (no [[admin.tokens]], and no data_dir to keep a generated token in): nothing reports readiness"
    );
}

#[test]
fn health_finds_an_admin_listener_moved_by_admin_listen_where_the_server_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    // The configured bind is a port nothing listens on; --admin-listen moves the listener.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let text = format!("data_dir = \"state\"\n[admin]\nbind = \"{closed}\"\n{MINIMAL}");
    let path = write_config(dir.path(), &text);
    let config = path.to_str().unwrap();
    let (server, _) = serve(&["--config", config, "--admin-listen", "127.0.0.1:0"], &[]);
    let admin = line_after(&server, "admin listening on http://");
    assert_ne!(admin, closed.to_string());
    let ready = run(&["health", "--config", config]);
    assert_eq!((ready.status.code(), ready.stdout.as_str()), (Some(0), "{\"ready\":true}\n"), "{}", ready.stderr);
}
