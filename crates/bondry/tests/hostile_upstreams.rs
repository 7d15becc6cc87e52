//! Upstreams that try to exhaust or stall Bondry, through the real binary: each bound
//! asserted as a number (memory grown, requests refused, sessions initialized, seconds
//! to exit). The upstream is `hostile-upstream`, misbehaving as its file says.

use bondry_test_support as support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Binary, TestConfig, table};

const MIB: u64 = 1024 * 1024;

/// A gateway fronting one hostile upstream `up`, with its files in a directory of its own.
struct Hostile {
    dir: tempfile::TempDir,
    front: Binary,
    client: reqwest::Client,
    /// `hostile-upstream --http`, while it runs.
    _http: Option<KillOnDrop>,
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How the gateway reaches the hostile upstream.
enum Reach {
    Stdio,
    /// Through `/bin/sh`, which makes the child ignore SIGTERM.
    StdioIgnoringSigterm,
    Http,
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The {name} tool"), "inputSchema": {"type": "object"}})
}

impl Hostile {
    /// Starts the gateway over an upstream serving `file` (paths in it are relative to
    /// the test's directory: `record` and friends name files there), with `stanza` keys.
    fn start(reach: Reach, file: Value, stanza: &[(&str, toml::Value)], grace_ms: i64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = with_paths(file, dir.path());
        let catalogue = dir.path().join("catalogue.json");
        std::fs::write(&catalogue, file.to_string()).unwrap();
        let catalogue = catalogue.to_str().unwrap().to_owned();
        let exe = support::hostile_upstream_exe().to_str().unwrap().to_owned();
        let mut http = None;
        let mut up = match reach {
            Reach::Stdio => table([
                ("name", "up".into()),
                ("transport", "stdio".into()),
                ("command", exe.into()),
                ("args", vec![catalogue].into()),
            ]),
            Reach::StdioIgnoringSigterm => table([
                ("name", "up".into()),
                ("transport", "stdio".into()),
                ("command", "/bin/sh".into()),
                ("args", vec!["-c".to_owned(), format!("trap '' TERM; exec '{exe}' '{catalogue}'")].into()),
            ]),
            Reach::Http => {
                let mut child = Command::new(&exe).args(["--http", &catalogue]).stdout(Stdio::piped()).spawn().unwrap();
                let mut line = String::new();
                std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line)
                    .unwrap();
                let port = line.trim().strip_prefix("listening on ").unwrap().to_owned();
                http = Some(KillOnDrop(child));
                table([
                    ("name", "up".into()),
                    ("transport", "http".into()),
                    ("url", format!("http://127.0.0.1:{port}/mcp").into()),
                    ("allow_plain_http", true.into()),
                ])
            }
        };
        up.extend(stanza.iter().map(|(key, value)| (key.to_string(), value.clone())));
        let config = TestConfig::bare()
            .set("shutdown_grace_ms", grace_ms)
            .set("data_dir", dir.path().join("state").to_str().unwrap())
            .set("realms.default.anonymous_roles", vec!["caller"])
            .role("caller", &["up.*"])
            .push("realms.default.upstreams", up)
            .written(dir.path(), "gateway.toml");
        let front = Binary::serve(support::bondry_exe!(), &config, &[]);
        Self { dir, front, client: reqwest::Client::new(), _http: http }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The lines of the file `name` the upstream writes.
    fn lines(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.path(name)).unwrap_or_default().lines().map(str::to_owned).collect()
    }

    /// Waits (at most `limit`) until `condition` holds of the file `name`'s lines.
    async fn until_lines(&self, name: &str, limit: Duration, condition: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + limit;
        loop {
            let lines = self.lines(name);
            if condition(&lines) {
                return lines;
            }
            assert!(
                Instant::now() < deadline,
                "{name}: {} lines {lines:#?}; log: {:#?}",
                lines.len(),
                self.front.log_lines()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Resident memory of the gateway, in bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.front.child.id())).unwrap();
        let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    /// An admin API GET of `path` with the generated token: the JSON answer.
    async fn admin(&self, path: &str) -> Value {
        assert!(support::eventually(|| self.front.admin_port().is_some()).await);
        let token = std::fs::read_to_string(self.path("state/admin-token")).unwrap();
        let url = format!("http://127.0.0.1:{}{path}", self.front.admin_port().unwrap());
        let response = self.client.get(url).bearer_auth(token.trim()).send().await.unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }
}

/// `file` with each of its path keys made a path in `dir`.
fn with_paths(mut file: Value, dir: &Path) -> Value {
    let at = |value: &mut Value| {
        if let Some(name) = value.as_str() {
            *value = json!(dir.join(name).to_str().unwrap());
        }
    };
    for key in ["record", "starts"] {
        if let Some(value) = file.get_mut(key) {
            at(value);
        }
    }
    if let Some(done) = file.get_mut("flood").and_then(|flood| flood.get_mut("done")) {
        at(done);
    }
    file
}

#[tokio::test]
async fn a_child_flooding_requests_while_reading_nothing_grows_the_gateway_by_less_than_32_mib() {
    const FLOOD: u64 = 2_000_000;
    let file = json!({
        "tools": [tool("echo")],
        "flood": {"method": "roots/list", "count": FLOOD, "done": "flooded"},
        "deaf": true,
    });
    // Neither the stall nor the listing's deadline restarts the child while it floods.
    let stanza = [("stdin_stall_ms", 3_600_000.into()), ("list_timeout_ms", 3_600_000.into())];
    let hostile = Hostile::start(Reach::Stdio, file, &stanza, 1000);
    let before = hostile.rss();
    let began = Instant::now();
    hostile.until_lines("flooded", Duration::from_secs(240), |lines| !lines.is_empty()).await;
    let grown = hostile.rss().saturating_sub(before);
    eprintln!(
        "{FLOOD} requests read in {:.1} s; resident memory grew {} KiB",
        began.elapsed().as_secs_f64(),
        grown / 1024
    );
    assert!(grown <= 32 * MIB, "grew {} MiB", grown / MIB);
    assert_eq!(hostile.front.count_logged("upstream child connection broken"), 0);
}

#[tokio::test]
async fn a_child_that_leaves_its_stdin_undrained_is_restarted_with_the_reason_logged_and_shown() {
    let file = json!({
        "tools": [tool("echo")],
        "flood": {"method": "roots/list", "count": 200_000},
        "deaf": true,
        "starts": "starts",
    });
    let hostile = Hostile::start(Reach::Stdio, file, &[("stdin_stall_ms", 500.into())], 1000);
    let reason = "its stdin did not drain for 500 ms (stdin_stall_ms): restarted";
    hostile.front.logged(reason, 1).await;
    hostile.until_lines("starts", Duration::from_secs(30), |lines| lines.len() >= 2).await;
    let info = hostile.admin("/v1/realms/default/upstreams/up").await;
    assert_eq!(info["last_error"], format!("connection ended: {reason}"), "{info}");
}

#[tokio::test]
async fn requests_past_max_pending_server_requests_are_refused_at_once() {
    const FLOOD: usize = 100;
    const PENDING: usize = 8;
    let file = json!({
        "tools": [tool("ask")],
        "flood": {
            "method": "elicitation/create",
            "params": {"message": "Which?", "requestedSchema": {"type": "object", "properties": {}}},
            "count": FLOOD,
            "on": "tools/call",
        },
        "record": "record",
    });
    let stanza = [("max_pending_server_requests", (PENDING as i64).into())];
    let hostile = Hostile::start(Reach::Stdio, file, &stanza, 1000);
    hostile.front.logged("upstream up: ", 1).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    let response = hostile
        .front
        .post(&hostile.client, "tools/call", json!({"name": "up.ask", "arguments": {}, "_meta": meta}))
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["resultType"], "input_required", "{body}");
    let asked = body["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(asked.len(), PENDING, "{body}");
    let refusal = r#""error":{"code":-32603,"message":"too many requests awaiting an answer"}"#;
    let refused = |lines: &[String]| lines.iter().filter(|line| line.contains(refusal)).count();
    hostile.until_lines("record", Duration::from_secs(30), |lines| refused(lines) >= FLOOD - PENDING).await;
    // Nothing else reached the upstream: the held requests wait for the caller.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let lines = hostile.lines("record");
    assert_eq!(refused(&lines), FLOOD - PENDING);
    assert_eq!(lines.iter().filter(|line| line.starts_with("answer ")).count(), FLOOD - PENDING);
}

#[tokio::test]
async fn an_http_upstream_that_forgets_its_session_at_every_get_is_initialized_again_at_most_once_a_second() {
    let file = json!({"tools": [tool("echo")], "session": true, "get": 404, "record": "record"});
    let hostile = Hostile::start(Reach::Http, file, &[], 1000);
    hostile.front.logged("upstream up: ", 1).await;
    let began = Instant::now();
    let initializes = |lines: &[String]| lines.iter().filter(|line| *line == "initialize").count();
    let at_start = initializes(&hostile.lines("record"));
    tokio::time::sleep(Duration::from_secs(8)).await;
    let seconds = began.elapsed().as_secs_f64();
    let lines = hostile.lines("record");
    let (again, gets) = (initializes(&lines) - at_start, lines.iter().filter(|line| *line == "GET").count());
    eprintln!("{again} initializes and {gets} GETs in {seconds:.1} s");
    assert!((1..=8).contains(&again), "{again} initializes in {seconds:.1} s");
    assert!(gets <= 10, "{gets} GETs in {seconds:.1} s");
}

#[tokio::test]
async fn an_unreachable_upstream_is_retried_with_backoff_shown_by_the_admin_api() {
    let hostile = Hostile::start(Reach::Stdio, json!({}), &[("command", "/nonexistent/upstream".into())], 1000);
    hostile.front.logged("connecting to the upstream again later", 3).await;
    let info = hostile.admin("/v1/realms/default/upstreams/up").await;
    let failed = info["retry"]["failed"].as_u64().unwrap_or_else(|| panic!("{info}"));
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let next_in = info["retry"]["next_at_ms"].as_u64().unwrap().saturating_sub(now_ms);
    assert!(failed >= 3, "{info}");
    assert!(next_in <= 60_000, "{info}");
    // Three attempts take at least the first two waits: 0.5 s and 1 s at the least.
    let attempts = hostile.front.count_logged("cannot connect to the upstream");
    assert!(attempts <= 6, "{attempts} attempts: {:#?}", hostile.front.log_lines());
    // `bondry upstream info` says so too.
    let config = hostile.path("gateway.toml");
    let info = Command::new(support::bondry_exe!())
        .args(["upstream", "info", "default/up", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&info.stdout);
    assert!(info.status.success(), "{shown} {}", String::from_utf8_lossy(&info.stderr));
    let line = shown.lines().find(|line| line.starts_with("reconnecting: ")).unwrap_or_else(|| panic!("{shown}"));
    assert!(line.contains(" attempts failed in a row, the next in "), "{line}");
}

/// Sends SIGTERM to `pid`.
fn terminate(pid: u32) {
    let status = Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn sigterm_ends_the_gateway_within_the_grace_and_6_s_whatever_a_child_and_an_admin_client_do() {
    const GRACE_MS: u64 = 1000;
    // A child that ignores SIGTERM, reads no more of its stdin once initialized, and so
    // leaves its listing unanswered; an admin client that sends half a request head.
    let file = json!({"tools": [tool("echo")], "deaf": true, "starts": "starts"});
    let mut hostile = Hostile::start(Reach::StdioIgnoringSigterm, file, &[], GRACE_MS as i64);
    let starts = hostile.until_lines("starts", Duration::from_secs(30), |lines| !lines.is_empty()).await;
    let child: u32 = starts[0].strip_prefix("start ").unwrap().parse().unwrap();
    hostile.front.logged("upstream connected", 1).await;
    assert!(support::eventually(|| hostile.front.admin_port().is_some()).await);
    let mut half = tokio::net::TcpStream::connect(("127.0.0.1", hostile.front.admin_port().unwrap())).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut half, b"GET /v1/realms HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let began = Instant::now();
    terminate(hostile.front.child.id());
    let limit = Duration::from_millis(GRACE_MS) + Duration::from_secs(6);
    let exited = loop {
        if let Some(status) = hostile.front.child.try_wait().unwrap() {
            break status;
        }
        assert!(began.elapsed() < limit + Duration::from_secs(5), "still running after {:?}", began.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = began.elapsed();
    eprintln!("exited ({exited}) {:.2} s after SIGTERM", took.as_secs_f64());
    assert!(took < limit, "took {took:?}");
    // The child's group is gone with the gateway.
    let gone = support::eventually(|| !Path::new(&format!("/proc/{child}")).exists()).await;
    assert!(gone, "the child {child} outlived the gateway");
    drop(half);
}

#[tokio::test]
async fn an_unanswered_listing_fails_within_list_timeout_ms_is_shown_and_retried() {
    let file = json!({"tools": [tool("echo")], "silent": ["tools/list"], "record": "record"});
    let hostile = Hostile::start(Reach::Stdio, file, &[("list_timeout_ms", 300.into())], 1000);
    let error = "cannot list (tools/list): upstream did not answer within list_timeout_ms";
    hostile.front.logged("cannot list the upstream", 1).await;
    let info = hostile.admin("/v1/realms/default/upstreams/up").await;
    assert_eq!(info["last_error"], error, "{info}");
    let all = hostile.admin("/v1/upstreams").await;
    assert_eq!(all["realms"][0]["upstreams"][0]["last_error"], error, "{all}");
    // Listed again after the backoff, on a new connection.
    let asked = |lines: &[String]| lines.iter().filter(|line| *line == "tools/list").count();
    hostile.until_lines("record", Duration::from_secs(30), |lines| asked(lines) >= 2).await;
}

/// The `_meta` of a modern request with `extra` keys.
fn meta(extra: Value) -> Value {
    let mut meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    meta.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    meta
}

/// The JSON-RPC messages of an event stream's body.
fn messages(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

#[tokio::test]
async fn progress_of_a_relayed_completion_reaches_its_caller_before_the_answer() {
    let prompt = json!({"name": "p", "description": "A prompt", "arguments": [{"name": "a"}]});
    let hostile = Hostile::start(Reach::Stdio, json!({"prompts": [prompt]}), &[], 1000);
    hostile.front.logged("upstream up: ", 1).await;
    let params = json!({
        "ref": {"type": "ref/prompt", "name": "up.p"},
        "argument": {"name": "a", "value": ""},
        "_meta": meta(json!({"progressToken": "c-1"})),
    });
    let response = hostile.front.post(&hostile.client, "completion/complete", params).await;
    assert_eq!(response.status(), 200);
    let messages = messages(&response.text().await.unwrap());
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(
        messages[0],
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "c-1", "progress": 1.0, "total": 2.0, "message": "halfway"}})
    );
    assert_eq!(messages[1]["result"]["completion"]["values"], json!(["alpha"]), "{messages:?}");
}

#[tokio::test]
async fn a_handshake_upstreams_log_level_follows_the_lowest_wanted_by_calls_in_flight_and_is_raised_back() {
    let file = json!({"tools": [tool("echo"), tool("slow")], "record": "record"});
    let hostile = Hostile::start(Reach::Stdio, file, &[], 1000);
    hostile.front.logged("upstream up: ", 1).await;
    let call = |name: &'static str, level: &'static str| {
        let params = json!({"name": format!("up.{name}"), "arguments": {},
            "_meta": meta(json!({"io.modelcontextprotocol/logLevel": level}))});
        let (front, client) = (&hostile.front, &hostile.client);
        async move {
            let response = front.post(client, "tools/call", params).await;
            assert_eq!(response.status(), 200);
            assert!(response.text().await.unwrap().contains(&format!("called {name}")));
        }
    };
    let levels = || -> Vec<String> {
        hostile.lines("record").into_iter().filter(|line| line.starts_with("logging/setLevel")).collect()
    };
    // While a call that wants debug runs, one that wants error leaves the upstream at debug.
    let slow = call("slow", "debug");
    let meanwhile = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        call("echo", "error").await;
        levels()
    };
    let ((), during) = tokio::join!(slow, meanwhile);
    assert_eq!(during, ["logging/setLevel debug"]);
    // Once it ended, the next call raises the level back to what the calls in flight want.
    call("echo", "error").await;
    call("echo", "error").await;
    call("echo", "info").await;
    assert_eq!(levels(), ["logging/setLevel debug", "logging/setLevel error", "logging/setLevel info"]);
}

#[tokio::test]
async fn a_notice_sent_right_after_an_answer_on_its_event_stream_is_acted_on() {
    let file = json!({"tools": [tool("echo")], "sse": true, "record": "record"});
    let hostile = Hostile::start(Reach::Http, file, &[], 1000);
    hostile.front.logged("upstream up: ", 1).await;
    let listings = |lines: &[String]| lines.iter().filter(|line| *line == "tools/list").count();
    let before = listings(&hostile.lines("record"));
    let response = hostile.front.post(&hostile.client, "tools/call", json!({"name": "up.echo", "arguments": {}})).await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("called echo"));
    // The `list_changed` that followed the answer made Bondry list the upstream again.
    hostile.until_lines("record", Duration::from_secs(10), |lines| listings(lines) > before).await;
}

/// The result of calling `tool` of the hostile upstream through the gateway.
async fn relayed(hostile: &Hostile, tool: &str) -> Value {
    let response =
        hostile.front.post(&hostile.client, "tools/call", json!({"name": format!("up.{tool}"), "arguments": {}})).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["result"].clone()
}

#[tokio::test]
async fn an_upstream_result_reaches_its_caller_as_given_but_for_the_keys_that_are_bondrys_to_set() {
    // One line: stdio and event streams frame messages by lines.
    let given = concat!(
        r#"{"content":[{"type":"text","text":"hi","annotations":{"audience":["user"]}}],"isError":true,"#,
        r#""structuredContent":{"n":1},"x-vendor":[1,2],"resultType":"task","ttlMs":5,"cacheScope":"public","#,
        r#""_meta":{"dev.bondry/invocationId":"forged","io.modelcontextprotocol/related":{"taskId":"t"},"vendor.example/k":"v"}}"#
    );
    for (reach, sse) in [(Reach::Http, false), (Reach::Http, true), (Reach::Stdio, false)] {
        let file = json!({"tools": [tool("echo")], "results": {"echo": given}, "sse": sse});
        let hostile = Hostile::start(reach, file, &[], 1000);
        hostile.front.logged("upstream up: ", 1).await;
        let mut result = relayed(&hostile, "echo").await;
        let meta = result.as_object_mut().unwrap().remove("_meta").unwrap();
        assert_eq!(
            result,
            json!({
                "content": [{"type": "text", "text": "hi", "annotations": {"audience": ["user"]}}],
                "isError": true,
                "structuredContent": {"n": 1},
                "x-vendor": [1, 2],
                "resultType": "complete",
            })
        );
        assert_eq!(meta["vendor.example/k"], "v");
        let invocation = meta["dev.bondry/invocationId"].as_str().unwrap();
        assert!(invocation != "forged" && invocation.len() == 32, "{meta}");
        assert!(meta.get("io.modelcontextprotocol/related").is_none(), "{meta}");
    }
}

#[tokio::test]
async fn an_upstream_answer_repeating_a_key_at_any_depth_is_a_failure_not_a_result() {
    let repeated = [
        r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
        r#"{"content":[],"isError":false,"isError":true}"#,
        r#"{"content":[{"type":"text","text":"a"}],"_meta":{"k":{"x":1,"x":2}}}"#,
    ];
    for (reach, sse) in [(Reach::Http, false), (Reach::Http, true), (Reach::Stdio, false)] {
        let results: serde_json::Map<String, Value> =
            repeated.iter().enumerate().map(|(index, raw)| (format!("t{index}"), json!(raw))).collect();
        let tools: Vec<Value> = (0..repeated.len()).map(|index| tool(&format!("t{index}"))).collect();
        let file = json!({"tools": tools, "results": results, "sse": sse});
        let hostile = Hostile::start(reach, file, &[], 1000);
        hostile.front.logged("upstream up: ", 1).await;
        for index in 0..repeated.len() {
            // At once: the answer names its request, which fails then, not at its timeout.
            let began = Instant::now();
            let result = relayed(&hostile, &format!("t{index}")).await;
            assert!(began.elapsed() < Duration::from_secs(10), "{:?}", began.elapsed());
            assert_eq!(result["isError"], true, "{result}");
            assert_eq!(result["content"], json!([{"type": "text", "text": "Capability execution failed"}]));
            assert_eq!(result["_meta"]["dev.bondry/errorCode"], "upstream_unavailable", "{result}");
        }
    }
}

#[tokio::test]
async fn a_request_on_an_http_upstreams_get_stream_goes_to_the_sole_call_in_flight_and_never_across_callers() {
    let file = json!({"tools": [tool("ask")], "ask_on_get": true});
    let hostile = Hostile::start(Reach::Http, file, &[], 1000);
    hostile.front.logged("upstream up: ", 1).await;
    let eliciting = meta(json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}));
    let call = |extra: Value| {
        let mut params = json!({"name": "up.ask", "arguments": {}, "_meta": eliciting.clone()});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let (front, client) = (&hostile.front, &hostile.client);
        async move {
            let response = front.post(client, "tools/call", params).await;
            assert_eq!(response.status(), 200);
            response.json::<Value>().await.unwrap()["result"].clone()
        }
    };
    // One call in flight: the upstream's request is its caller's, and the answer reaches it.
    let asked = call(json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let requests = asked["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["upstream-1"], "{asked}");
    assert_eq!(requests["upstream-1"]["method"], "elicitation/create");
    let answer = json!({"action": "accept", "content": {}});
    let retry = json!({"inputResponses": {"upstream-1": answer}, "requestState": asked["requestState"]});
    let answered = call(retry).await;
    assert_eq!(answered["content"][0]["text"], format!("answered {answer}"), "{answered}");
    // Two calls in flight: nobody's, refused to the upstream, and neither caller is asked.
    let (first, second) = tokio::join!(call(json!({})), call(json!({})));
    let refused = json!({"code": -32603, "message": "cannot attribute request"});
    for result in [first, second] {
        assert_eq!(result["content"][0]["text"], format!("answered {refused}"), "{result}");
    }
}

#[test]
fn serve_warns_when_the_open_files_limit_is_below_what_its_listeners_may_hold() {
    let dir = tempfile::tempdir().unwrap();
    let config = TestConfig::bare().written(dir.path(), "bondry.toml");
    // dash and bash both set the hard limit too: Bondry cannot raise it.
    let mut child = Command::new("/bin/sh")
        .args(["-c", "ulimit -n 200 && exec \"$0\" serve --config \"$1\""])
        .arg(support::bondry_exe!())
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = Vec::new();
    for line in std::io::BufRead::lines(stderr).map_while(Result::ok) {
        let banner = line.starts_with("listening on");
        seen.push(line);
        if banner || seen.len() > 200 {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let warned = seen.iter().find(|line| line.contains("the open files limit (ulimit -n) is below"));
    let warned = warned.unwrap_or_else(|| panic!("no warning: {seen:#?}"));
    assert!(warned.contains("limit=200"), "{warned}");
}
