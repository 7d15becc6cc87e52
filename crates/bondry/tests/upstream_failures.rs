//! Every failure of an upstream that docs/upstreams.md names, through the real binary: what
//! the caller is answered, exactly, and that meanwhile a healthy upstream and a builtin
//! tool of the same gateway keep answering.
//!
//! Each gateway fronts the rmcp stdio test upstream twice: as `bad` (the one that fails,
//! with small limits where a test needs them) and as `good`, beside the builtin
//! `demo.echo` (`good` without resources, whose URIs would be `bad`'s). Anonymous callers may use all three; the ticket `limited-ticket` is a
//! principal granted `good.*` and `demo.*` only.

use bondry_test_support as support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Binary, TestConfig, table};

/// How long a test waits for something that must happen on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(30);
const LIMITED: &str = "Bearer limited-ticket";

fn stdio(name: &str) -> toml::Table {
    let command = support::test_upstream_exe();
    table([("name", name.into()), ("transport", "stdio".into()), ("command", command.to_str().unwrap().into())])
}

/// `stanza` with `key = value` (an integer limit).
fn limited(mut stanza: toml::Table, key: &str, value: i64) -> toml::Table {
    stanza.insert(key.into(), toml::Value::Integer(value));
    stanza
}

/// A gateway fronting `bad` and a healthy `good` (in that stanza order), with the builtin
/// `demo.echo`. `good` exposes no resources: the URIs of both are the same, and only
/// `bad`'s are under test.
fn gateway(bad: toml::Table) -> TestConfig {
    let mut good = stdio("good");
    good.insert("expose".into(), vec!["tools", "prompts"].into());
    TestConfig::bare()
        .set("pin_store", "memory")
        .set("realms.default.anonymous_roles", vec!["caller"])
        .role("caller", &["bad.*", "good.*", "demo.*"])
        .role("good_only", &["good.*", "demo.*"])
        .principal("limited", &["good_only"])
        .ticket("limited-ticket", "limited")
        .capability("demo.echo", "tool", "demo.echo", None)
        .push("realms.default.upstreams", bad)
        .push("realms.default.upstreams", good)
}

struct Front {
    server: Binary,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// Starts the gateway of `config` and waits until each of `listed` logged its listing.
async fn start(config: &TestConfig, listed: &[&str]) -> Front {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("gateway.toml");
    std::fs::write(&path, config.text()).unwrap();
    let server = Binary::serve(support::bondry_exe!(), Path::new(&path), &[]);
    let front = Front { server, client: reqwest::Client::new(), _dir: dir };
    for name in listed {
        front.listed(name).await;
    }
    front
}

impl Front {
    /// Waits (bounded) until the log holds `count` lines containing `text`.
    async fn logged(&self, text: &str, count: usize) {
        let deadline = Instant::now() + PATIENCE;
        while self.server.count_logged(text) < count {
            assert!(Instant::now() < deadline, "{count} × {text:?} not logged");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (bounded) until upstream `name` has listed some capabilities. Each naming logs
    /// every upstream of the realm, so the one that has not listed yet logs 0.
    async fn listed(&self, name: &str) {
        let (listed, none) = (format!("upstream {name}: "), format!("upstream {name}: 0 capabilities"));
        let deadline = Instant::now() + PATIENCE;
        while !self.server.log_lines().iter().any(|line| line.contains(&listed) && !line.contains(&none)) {
            assert!(Instant::now() < deadline, "{name} never listed: {:#?}", self.server.log_lines());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A modern request of `method`: its status and body, and how long it took.
    async fn send(&self, headers: &[(&str, &str)], method: &str, params: Value) -> (Value, Duration) {
        let began = Instant::now();
        let response = self.server.post_with(&self.client, headers, method, params).await;
        let status = response.status().as_u16();
        let mut body: Value = response.json().await.unwrap();
        let took = began.elapsed();
        body["status"] = json!(status);
        (body, took)
    }

    /// The status, content type and body bytes of a modern request.
    async fn raw(&self, headers: &[(&str, &str)], method: &str, params: Value) -> (u16, String, String) {
        let response = self.server.post_with(&self.client, headers, method, params).await;
        let status = response.status().as_u16();
        let media = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        (status, media, response.text().await.unwrap())
    }

    /// `tools/call` of `name` with `arguments` by an anonymous caller: the result and its time.
    async fn call(&self, name: &str, arguments: Value) -> (Value, Duration) {
        let (body, took) = self.send(&[], "tools/call", json!({"name": name, "arguments": arguments})).await;
        assert_eq!(body["status"], 200, "{body}");
        let result = body.get("result").unwrap_or_else(|| panic!("a result: {body}")).clone();
        (result, took)
    }

    /// Every name of a list method's entries (`field`, named by `key`), across pages.
    async fn names(&self, headers: &[(&str, &str)], method: &str, field: &str, key: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..20 {
            let params = cursor.as_ref().map_or_else(|| json!({}), |cursor| json!({"cursor": cursor}));
            let (body, _) = self.send(headers, method, params).await;
            let entries = body["result"][field].as_array().unwrap_or_else(|| panic!("a list: {body}"));
            names.extend(entries.iter().map(|entry| entry[key].as_str().unwrap().to_owned()));
            match body["result"].get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return names,
            }
        }
        panic!("more than 20 pages of {method}");
    }

    /// The healthy upstream and the builtin tool answer, exactly as ever.
    async fn still_healthy(&self) {
        let (good, _) = self.call("good.echo", json!({"text": "still here"})).await;
        assert_eq!(good["content"], json!([{"type": "text", "text": "still here"}]), "{good}");
        assert_ne!(good["isError"], true, "{good}");
        let (own, _) = self.call("demo.echo", json!({"text": "mine"})).await;
        assert_eq!(own["structuredContent"], json!({"text": "mine"}), "{own}");
        assert_ne!(own["isError"], true, "{own}");
    }

    /// Calls `bad.echo` until it answers its text (every 100 ms, bounded); how long it took.
    async fn until_bad_echoes(&self) -> Duration {
        let began = Instant::now();
        loop {
            let (result, _) = self.call("bad.echo", json!({"text": "back"})).await;
            if result["content"] == json!([{"type": "text", "text": "back"}]) {
                return began.elapsed();
            }
            assert_eq!(result["_meta"]["dev.bondry/errorCode"], "upstream_unavailable", "{result}");
            assert!(began.elapsed() < PATIENCE, "bad.echo never answered again: {result}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Asserts `result` is the tool error Bondry answers with `code`: the generic text, no
/// detail of the upstream's.
#[track_caller]
fn assert_tool_error(result: &Value, code: &str, retryable: bool) {
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["content"], json!([{"type": "text", "text": "Capability execution failed"}]), "{result}");
    assert_eq!(result["_meta"]["dev.bondry/errorCode"], code, "{result}");
    assert_eq!(result["_meta"]["dev.bondry/retryable"], retryable, "{result}");
    assert_eq!(result["resultType"], "complete", "{result}");
}

/// The exact body of a prompt or read that failed with `code` (request id 7, as sent).
fn capability_failed(code: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": "Capability execution failed", "data": {"dev.bondry/errorCode": code}},
        "status": 200
    })
}

/// A port on loopback that nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

// ---------------------------------------------------------------------------------------
// 1. Unreachable at start
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn upstreams_unreachable_at_start_leave_the_gateway_serving_and_their_names_missing() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let http = table([("name", "bad".into()), ("transport", "http".into()), ("url", url.into())]);
    let missing_command = table([
        ("name", "gone".into()),
        ("transport", "stdio".into()),
        ("command", "/nonexistent/bondry-no-such-upstream".into()),
    ]);
    let config = gateway(http)
        .role("more", &["gone.*"])
        .push("realms.default.upstreams", missing_command)
        .set("realms.default.anonymous_roles", vec!["caller", "more"]);
    let front = start(&config, &["good"]).await;
    // Both failed to connect, and the gateway serves anyway.
    for name in ["bad", "gone"] {
        front.logged(&format!("cannot connect to the upstream upstream=\"{name}\""), 1).await;
    }
    front.still_healthy().await;

    let tools = front.names(&[], "tools/list", "tools", "name").await;
    assert!(tools.contains(&"good.echo".to_owned()) && tools.contains(&"demo.echo".to_owned()), "{tools:?}");
    assert!(!tools.iter().any(|name| name.starts_with("bad.") || name.starts_with("gone.")), "{tools:?}");
    // A name either would have served answers exactly as one nobody ever served.
    let never = front.raw(&[], "tools/call", json!({"name": "nope.never", "arguments": {}})).await;
    assert_eq!(never.0, 200);
    assert!(never.2.contains(r#""message":"Unknown tool: nope.never""#), "{never:?}");
    for name in ["bad.echo", "gone.echo"] {
        let (status, media, body) = front.raw(&[], "tools/call", json!({"name": name, "arguments": {}})).await;
        assert_eq!((status, media, body.replace(name, "nope.never")), never, "{name}");
    }
    let read = front.raw(&[], "resources/read", json!({"uri": "test://rmcp/readme"})).await;
    let nothing = front.raw(&[], "resources/read", json!({"uri": "test://rmcp/nothing"})).await;
    assert_eq!((read.0, read.1, read.2.replace("readme", "nothing")), nothing);
}

// ---------------------------------------------------------------------------------------
// 2. Dying mid-call
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_child_that_dies_mid_call_answers_unavailable_and_is_restarted_with_backoff() {
    let front = start(&gateway(stdio("bad")), &["bad", "good"]).await;
    let (result, _) = front.call("bad.exit", json!({})).await;
    let died = Instant::now();
    assert_tool_error(&result, "upstream_unavailable", true);
    front.still_healthy().await;
    // The capabilities did not vanish while the child is down.
    let tools = front.names(&[], "tools/list", "tools", "name").await;
    assert!(tools.contains(&"bad.echo".to_owned()), "{tools:?}");
    // Restarted after the first backoff (0.5 to 1 s, jittered), the child answers again.
    front.until_bad_echoes().await;
    assert!(died.elapsed() >= Duration::from_millis(450), "restarted before the backoff: {:?}", died.elapsed());
    assert!(front.server.count_logged("upstream child exited") >= 1);
    front.still_healthy().await;
}

#[tokio::test]
async fn a_child_that_dies_with_calls_in_flight_fails_them_all_and_is_restarted_once() {
    let front = start(&gateway(stdio("bad")), &["bad", "good"]).await;
    let hangs: Vec<_> = (0..3).map(|_| front.call("bad.hang", json!({}))).collect();
    let exit = async {
        // The hangs are in flight before the child exits.
        tokio::time::sleep(Duration::from_millis(300)).await;
        front.call("bad.exit", json!({})).await
    };
    let (hangs, (exited, _)) = tokio::join!(futures_util::future::join_all(hangs), exit);
    assert_tool_error(&exited, "upstream_unavailable", true);
    for (result, _) in hangs {
        assert_tool_error(&result, "upstream_unavailable", true);
    }
    front.until_bad_echoes().await;
    // The new child stays: a second loss is not read into the first.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (echo, _) = front.call("bad.echo", json!({"text": "stayed"})).await;
    assert_eq!(echo["content"], json!([{"type": "text", "text": "stayed"}]), "{echo}");
    let connected = front.server.count_logged("upstream connected upstream=\"bad\"");
    assert_eq!(connected, 2, "one restart: {:#?}", front.server.log_lines());
    front.still_healthy().await;
}

#[tokio::test]
async fn a_child_that_dies_between_calls_is_restarted_without_a_call_failing() {
    let front = start(&gateway(stdio("bad")), &["bad", "good"]).await;
    let (result, _) = front.call("bad.exit_soon", json!({})).await;
    assert_eq!(result["content"], json!([{"type": "text", "text": "exiting"}]), "{result}");
    front.logged("upstream child exited upstream=\"bad\"", 1).await;
    // Restarted after the first backoff, before anyone calls it.
    front.logged("upstream connected upstream=\"bad\"", 2).await;
    let (echo, _) = front.call("bad.echo", json!({"text": "restarted"})).await;
    assert_eq!(echo["content"], json!([{"type": "text", "text": "restarted"}]), "{echo}");
    front.still_healthy().await;
}

// ---------------------------------------------------------------------------------------
// 3. Hanging past call_timeout_ms
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_call_past_the_timeout_answers_unavailable_within_about_the_timeout() {
    let front = start(&gateway(limited(stdio("bad"), "call_timeout_ms", 500)), &["bad", "good"]).await;
    let (result, took) = front.call("bad.hang", json!({})).await;
    assert_tool_error(&result, "upstream_unavailable", true);
    assert!(took >= Duration::from_millis(450), "answered before the timeout: {took:?}");
    assert!(took < Duration::from_secs(5), "long after the timeout: {took:?}");
    front.still_healthy().await;
    // The upstream itself is fine: one timeout does not mark it down.
    let (echo, _) = front.call("bad.echo", json!({"text": "after"})).await;
    assert_eq!(echo["content"], json!([{"type": "text", "text": "after"}]), "{echo}");
}

// ---------------------------------------------------------------------------------------
// 4. A JSON-RPC error from the upstream
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn an_upstream_json_rpc_error_answers_upstream_error() {
    let front = start(&gateway(stdio("bad")), &["bad", "good"]).await;
    let (result, _) = front.call("bad.fail", json!({})).await;
    assert_tool_error(&result, "upstream_error", false);
    // The upstream's own code and message travel beside Bondry's code, in `_meta`.
    assert_eq!(result["_meta"]["dev.bondry/errorDetail"], json!({"code": -32000, "message": "boom"}), "{result}");
    front.still_healthy().await;

    // A prompt's and a read's error data carry the same detail beside the code.
    let mut refused = capability_failed("upstream_error");
    refused["error"]["data"]["dev.bondry/errorDetail"] = json!({"code": -32000, "message": "boom"});
    let (prompt, _) = front.send(&[], "prompts/get", json!({"name": "bad.broken", "arguments": {}})).await;
    assert_eq!(prompt, refused);
    let (read, _) = front.send(&[], "resources/read", json!({"uri": "test://rmcp/broken"})).await;
    assert_eq!(read, refused);
    front.still_healthy().await;
    // A refusal is the upstream alive: its other capabilities answer.
    let (prompt, _) = front.send(&[], "prompts/get", json!({"name": "bad.greet", "arguments": {}})).await;
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "Hello from rmcp", "{prompt}");
}

// ---------------------------------------------------------------------------------------
// 5. isError
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn an_upstream_tool_error_stays_a_tool_error_with_its_content() {
    let front = start(&gateway(stdio("bad")), &["bad", "good"]).await;
    let (result, _) = front.call("bad.tool_error", json!({})).await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["content"], json!([{"type": "text", "text": "it went wrong"}]), "{result}");
    // The upstream's own error: Bondry adds no error code of its own.
    assert!(result["_meta"].get("dev.bondry/errorCode").is_none(), "{result}");
    assert_eq!(result["resultType"], "complete", "{result}");
    front.still_healthy().await;
}

// ---------------------------------------------------------------------------------------
// 6. Garbage and oversized lines on a child's stdout
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn garbage_lines_are_dropped_and_an_oversized_answer_fails_only_its_call() {
    let stanza = limited(limited(stdio("bad"), "max_response_bytes", 65_536), "call_timeout_ms", 10_000);
    let front = start(&gateway(stanza), &["bad", "good"]).await;
    let (result, _) = front.call("bad.garbage", json!({})).await;
    assert_eq!(result["content"], json!([{"type": "text", "text": "after garbage"}]), "{result}");
    front.logged("upstream stdout line dropped", 1).await;
    front.still_healthy().await;

    let (result, took) = front.call("bad.huge", json!({})).await;
    assert_tool_error(&result, "upstream_unavailable", true);
    assert!(took < Duration::from_secs(9), "the oversized answer failed its call at once, not by timeout: {took:?}");
    front.logged("upstream message over max_response_bytes dropped", 1).await;
    let (echo, _) = front.call("bad.echo", json!({"text": "next"})).await;
    assert_eq!(echo["content"], json!([{"type": "text", "text": "next"}]), "{echo}");
    front.still_healthy().await;
}

// ---------------------------------------------------------------------------------------
// 7. Five failures in a row
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn five_failures_in_a_row_mark_the_upstream_down_and_it_answers_at_once() {
    let front = start(&gateway(limited(stdio("bad"), "call_timeout_ms", 2_000)), &["bad", "good"]).await;
    // Five calls time out together.
    let hangs = (0..5).map(|_| front.call("bad.hang", json!({})));
    for (result, took) in futures_util::future::join_all(hangs).await {
        assert_tool_error(&result, "upstream_unavailable", true);
        assert!(took >= Duration::from_millis(1_900), "{took:?}");
    }
    // Marked down for its backoff (1 s): the sixth answers at once, not after the timeout.
    let (result, took) = front.call("bad.hang", json!({})).await;
    assert_tool_error(&result, "upstream_unavailable", true);
    assert!(took < Duration::from_millis(1_000), "not answered at once: {took:?}");
    front.logged("upstream marked down", 1).await;
    front.still_healthy().await;
    // After the backoff it is called again.
    front.until_bad_echoes().await;
    front.still_healthy().await;
}

// ---------------------------------------------------------------------------------------
// 8. Hidden is missing
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn an_ungranted_upstream_capability_answers_exactly_as_a_missing_one() {
    let front = start(&gateway(stdio("bad")), &["bad", "good"]).await;
    let auth = [("authorization", LIMITED)];

    // Listing: the limited caller sees good.* and demo.* only; an anonymous one sees bad.* too.
    for (method, field, key) in
        [("tools/list", "tools", "name"), ("prompts/list", "prompts", "name"), ("resources/list", "resources", "uri")]
    {
        let everything = front.names(&[], method, field, key).await;
        let granted = front.names(&auth, method, field, key).await;
        let bad = |name: &String| name.starts_with("bad.") || name == "test://rmcp/readme";
        assert!(everything.iter().any(bad), "{method}: {everything:?}");
        assert!(!granted.iter().any(bad), "{method}: {granted:?}");
        if method == "tools/list" {
            assert!(granted.contains(&"good.echo".to_owned()) && granted.contains(&"demo.echo".to_owned()));
        }
    }

    // The same bytes for a hidden name as for one that never existed, once the name is swapped.
    let same = async |method: &str, hidden: &str, missing: &str, params: &dyn Fn(&str) -> Value| {
        let (status, media, body) = front.raw(&auth, method, params(hidden)).await;
        let never = front.raw(&auth, method, params(missing)).await;
        assert_eq!((status, media, body.replace(hidden, missing)), never, "{method} {hidden}");
        assert_eq!(never.0, 200, "{never:?}");
        never.2
    };
    let call = same("tools/call", "bad.echo", "bad.nope_xyz", &|name| json!({"name": name, "arguments": {}})).await;
    assert!(call.contains(r#""message":"Unknown tool: bad.nope_xyz""#), "{call}");
    let get = same("prompts/get", "bad.greet", "bad.nope_xyz", &|name| json!({"name": name, "arguments": {}})).await;
    assert!(get.contains(r#""message":"Unknown prompt: bad.nope_xyz""#), "{get}");
    let read = same("resources/read", "test://rmcp/readme", "test://rmcp/nope_xyz", &|uri| json!({"uri": uri})).await;
    assert!(read.contains(r#""message":"Resource not found""#), "{read}");
    let complete = same(
        "completion/complete",
        "bad.greet",
        "bad.nope_xyz",
        &|name| json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "who", "value": "a"}}),
    )
    .await;
    assert!(complete.contains(r#""message":"Unknown prompt: bad.nope_xyz""#), "{complete}");

    // Granted, the same names answer.
    let (echo, _) = front.call("bad.echo", json!({"text": "granted"})).await;
    assert_eq!(echo["content"], json!([{"type": "text", "text": "granted"}]), "{echo}");
    front.still_healthy().await;
}

// ---------------------------------------------------------------------------------------
// Readiness
// ---------------------------------------------------------------------------------------

/// A GET of the front's admin listener, with `host` as its `Host` when given: the status
/// and the JSON body.
async fn admin_get(front: &Front, path: &str, host: Option<&str>) -> (u16, Value) {
    assert!(support::eventually(|| front.server.admin_port().is_some()).await, "the admin listener started");
    let url = format!("http://127.0.0.1:{}{path}", front.server.admin_port().unwrap());
    let mut request = front.client.get(url);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// `bondry health` against the admin listener at `admin`: its exit code, stdout and stderr.
fn health(admin: &str) -> (Option<i32>, String, String) {
    let output =
        std::process::Command::new(support::bondry_exe!()).args(["health", "--admin", admin]).output().unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (output.status.code(), text(output.stdout), text(output.stderr))
}

#[tokio::test]
async fn readiness_follows_a_required_upstream_down_and_back_while_health_stays_up() {
    let mut bad = stdio("bad");
    bad.insert("required".into(), true.into());
    // A data directory, where the admin listener's token is generated.
    let front = start(&gateway(bad).set("data_dir", "state"), &["bad", "good"]).await;
    assert_eq!(admin_get(&front, "/readyz", None).await, (200, json!({"ready": true})));
    assert_eq!(admin_get(&front, "/healthz", None).await, (200, json!({"status": "serving"})));
    let admin = format!("127.0.0.1:{}", front.server.admin_port().unwrap());
    assert_eq!(health(&admin), (Some(0), "{\"ready\":true}\n".to_owned(), String::new()));
    // No token needed, but the Host is checked as on every route.
    let foreign =
        (403, json!({"error": {"code": "host_not_allowed", "message": "the Host or Origin is not served here"}}));
    assert_eq!(admin_get(&front, "/readyz", Some("evil.example")).await, foreign);

    // The required upstream dies: not ready until the supervisor has it back (after its
    // first backoff, 0.5 to 1 s); alive all along.
    let (result, _) = front.call("bad.exit", json!({})).await;
    assert_tool_error(&result, "upstream_unavailable", true);
    let deadline = Instant::now() + PATIENCE;
    let (status, waiting) = loop {
        let (status, body) = admin_get(&front, "/readyz", None).await;
        if status == 503 {
            break (status, body);
        }
        assert!(Instant::now() < deadline, "never unready: {body}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(status, 503);
    let state = waiting["waiting_for"][0]["state"].clone();
    assert!(["connecting", "listing", "reconnecting"].contains(&state.as_str().unwrap()), "{waiting}");
    let expected = json!({"ready": false, "waiting_for": [
        {"realm": "default", "kind": "upstream", "backend": "bad", "state": state}]});
    assert_eq!(waiting, expected);
    assert_eq!(admin_get(&front, "/healthz", None).await, (200, json!({"status": "serving"})));
    front.until_bad_echoes().await;
    assert_eq!(admin_get(&front, "/readyz", None).await, (200, json!({"ready": true})));

    // Not reached: not healthy, and said why.
    let (code, stdout, stderr) = health(&format!("127.0.0.1:{}", closed_port()));
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert!(stderr.starts_with("bondry: cannot reach http://127.0.0.1:"), "{stderr}");
}

#[test]
fn check_warns_of_a_required_upstream_when_nothing_reports_readiness() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = stdio("bad");
    bad.insert("required".into(), true.into());
    let check = |config: TestConfig| {
        config.written(dir.path(), "bondry.toml");
        let output = std::process::Command::new(support::bondry_exe!())
            .args(["check", "--config"])
            .arg(dir.path().join("bondry.toml"))
            .output()
            .unwrap();
        (output.status.code().unwrap(), String::from_utf8(output.stderr).unwrap())
    };
    let warning = "realms.default.upstreams[0].required: nothing reports readiness: the admin listener, which serves /readyz, is off without [[admin.tokens]] or a data_dir to generate its token in";
    let (code, stderr) = check(gateway(bad.clone()));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(warning), "{stderr}");
    let (code, stderr) = check(gateway(bad).set("data_dir", "state"));
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("required"), "{stderr}");
}
