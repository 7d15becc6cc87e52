//! Bondry's MCP client over stdio, against `rmcp-stdio-upstream` (rmcp 3.11) as a child.
//! rmcp 3.11 answers `server/discover` on stdio and then serves each request by its own
//! envelope, so the child is reached at 2026-07-28; offered only the handshake
//! revisions, it is initialized at 2025-11-25.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bondry_mcp_proto::Revision;
use bondry_test_support::{eventually, test_upstream_exe};
use bondry_upstream::{ClientError, Connection, Inbox, TransportSpec, UpstreamSpec};
use common::{list_tools, outgoing, spec, tool_names};
use serde_json::{Value, json};

fn child(env: &[(&str, &str)]) -> UpstreamSpec {
    spec(
        "rmcp",
        TransportSpec::Stdio {
            command: test_upstream_exe().to_str().unwrap().to_owned(),
            args: vec![],
            env: env.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect(),
            cwd: None,
        },
    )
}

async fn call(connection: &Connection, tool: &str, arguments: Value) -> Result<Value, ClientError> {
    connection.request(outgoing("tools/call", json!({"name": tool, "arguments": arguments}), Some(tool))).await
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {result}"))
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// What `tracing` logs on this thread while the returned guard lives.
fn capture_log() -> (Arc<Mutex<Vec<u8>>>, tracing::subscriber::DefaultGuard) {
    #[derive(Clone)]
    struct Capture(Arc<Mutex<Vec<u8>>>);
    impl Write for Capture {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let log = Arc::new(Mutex::new(Vec::new()));
    let capture = Capture(Arc::clone(&log));
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || capture.clone())
        .finish();
    (log, tracing::subscriber::set_default(subscriber))
}

fn logged(log: &Mutex<Vec<u8>>) -> String {
    String::from_utf8(log.lock().unwrap().clone()).unwrap()
}

#[tokio::test]
async fn an_rmcp_child_is_reached_in_the_modern_era_with_exactly_its_environment() {
    let connection = Connection::open(&child(&[("BONDRY_TEST", "1"), ("LANG", "C")]), Inbox::discard()).await.unwrap();
    assert_eq!(connection.revision(), Revision::V2026_07_28);
    assert_eq!(connection.server_info()["name"], "rmcp-stdio-upstream");
    assert!(connection.server_capabilities()["tools"].is_object());

    let tools = connection.request(list_tools()).await.unwrap();
    assert!(tool_names(&tools).contains(&"echo".to_owned()), "{tools}");
    assert_eq!(text_of(&call(&connection, "echo", json!({"text": "héllo"})).await.unwrap()), "héllo");
    let prompt = connection.request(outgoing("prompts/get", json!({"name": "greet"}), Some("greet"))).await.unwrap();
    assert_eq!(prompt["messages"][0]["content"]["text"], "Hello from rmcp", "{prompt}");
    let uri = "test://rmcp/readme";
    let read = connection.request(outgoing("resources/read", json!({"uri": uri}), Some(uri))).await.unwrap();
    assert_eq!(read["contents"][0]["text"], "read me", "{read}");

    let env: Value = serde_json::from_str(text_of(&call(&connection, "env", json!({})).await.unwrap())).unwrap();
    assert_eq!(env, json!({"BONDRY_TEST": "1", "LANG": "C"}), "the child's whole environment is the spec's");
    connection.close().await;
    assert_eq!(connection.request(list_tools()).await, Err(ClientError::Closed));
}

#[tokio::test]
async fn offered_only_handshake_revisions_the_child_is_initialized() {
    let spec = UpstreamSpec { protocol_versions: vec![Revision::V2025_11_25, Revision::V2025_06_18], ..child(&[]) };
    let connection = Connection::open(&spec, Inbox::discard()).await.unwrap();
    assert_eq!(connection.revision(), Revision::V2025_11_25);
    assert_eq!(text_of(&call(&connection, "echo", json!({"text": "old"})).await.unwrap()), "old");
    connection.close().await;
}

#[tokio::test]
async fn a_stderr_line_is_escaped_and_cut_in_the_log() {
    let (log, _guard) = capture_log();
    let connection = Connection::open(&child(&[]), Inbox::discard()).await.unwrap();
    call(&connection, "log_stderr", json!({})).await.unwrap();
    assert!(eventually(|| logged(&log).contains("upstream stderr (cut)")).await, "{}", logged(&log));
    let text = logged(&log);
    let line = text.lines().find(|line| line.contains("upstream stderr (cut)")).unwrap();
    assert!(line.contains(r"\u{1b}[31mred\u{7} and a bell"), "{line}");
    assert!(line.contains("rmcp"), "logged under the upstream's name: {line}");
    assert!(!text.contains(['\x1b', '\x07']), "no control character reaches the log");
    let kept = line.matches('A').count();
    assert!(kept < 4096 && kept > 4000, "cut at 4 KiB: {kept} bytes of the line kept");
    connection.close().await;
}

#[tokio::test]
async fn an_answer_over_max_response_bytes_fails_its_request_and_the_connection_stays_usable() {
    let (log, _guard) = capture_log();
    let mut spec = child(&[]);
    spec.tunables.max_response_bytes = 64 * 1024;
    let connection = Connection::open(&spec, Inbox::discard()).await.unwrap();
    assert_eq!(call(&connection, "huge", json!({})).await, Err(ClientError::TooLarge { limit: 64 * 1024 }));
    assert!(logged(&log).contains("upstream message over max_response_bytes dropped"));
    assert_eq!(text_of(&call(&connection, "echo", json!({"text": "still"})).await.unwrap()), "still");
    connection.close().await;
}

#[tokio::test]
async fn a_line_that_is_not_json_is_dropped_and_the_call_still_answers() {
    let (log, _guard) = capture_log();
    let connection = Connection::open(&child(&[]), Inbox::discard()).await.unwrap();
    assert_eq!(text_of(&call(&connection, "garbage", json!({})).await.unwrap()), "after garbage");
    assert!(logged(&log).contains("upstream stdout line dropped"), "{}", logged(&log));
    connection.close().await;
}

#[tokio::test]
async fn close_ends_the_childs_process_group() {
    let connection = Connection::open(&child(&[]), Inbox::discard()).await.unwrap();
    let pid = connection.process_group().unwrap();
    let grandchild: i32 = text_of(&call(&connection, "spawn_grandchild", json!({})).await.unwrap()).parse().unwrap();
    assert!(alive(pid) && alive(grandchild));
    let started = Instant::now();
    connection.close().await;
    assert!(started.elapsed() < Duration::from_secs(5), "SIGTERM was enough: {:?}", started.elapsed());
    assert!(eventually(|| !alive(pid) && !alive(grandchild)).await, "child {pid} and grandchild {grandchild} are gone");
}

#[tokio::test]
async fn a_child_ignoring_sigterm_is_killed_after_five_seconds() {
    let connection = Connection::open(&child(&[]), Inbox::discard()).await.unwrap();
    let pid = connection.process_group().unwrap();
    assert_eq!(text_of(&call(&connection, "hold_term", json!({})).await.unwrap()), "holding");
    let started = Instant::now();
    connection.close().await;
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(5) && took < Duration::from_secs(8), "{took:?}");
    assert!(eventually(|| !alive(pid)).await);
}

#[tokio::test]
async fn a_dropped_connection_kills_the_childs_process_group() {
    let connection = Connection::open(&child(&[]), Inbox::discard()).await.unwrap();
    let pid = connection.process_group().unwrap();
    let grandchild: i32 = text_of(&call(&connection, "spawn_grandchild", json!({})).await.unwrap()).parse().unwrap();
    drop(connection);
    assert!(eventually(|| !alive(pid) && !alive(grandchild)).await, "child {pid} and grandchild {grandchild} are gone");
}

#[tokio::test]
async fn a_dead_child_fails_requests_with_closed() {
    let connection = Connection::open(&child(&[]), Inbox::discard()).await.unwrap();
    let pid = rustix::process::Pid::from_raw(connection.process_group().unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    assert!(eventually(|| !alive(pid.as_raw_nonzero().get())).await);
    assert_eq!(connection.request(list_tools()).await, Err(ClientError::Closed));
}

#[tokio::test]
async fn a_command_that_cannot_start_is_unreachable() {
    let spec = spec(
        "missing",
        TransportSpec::Stdio { command: "/nonexistent/upstream".into(), args: vec![], env: vec![], cwd: None },
    );
    assert!(matches!(Connection::open(&spec, Inbox::discard()).await, Err(ClientError::Unreachable(_))));
}
