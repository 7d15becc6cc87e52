//! Search listing (`listing = "search"`) through the real binary: tools left out of
//! `tools/list`, found with `bondry.search` and called with `bondry.call` in the caller's
//! own view, in both eras, with grants, validation, limits and audit as for a direct call.
//!
//! Then the evaluation set the ranking is held to: natural queries over GitHub's REST
//! description (`fixtures/search-queries.json`), written before any ranking code, each with
//! the one operation it asks for. A test checks the set is honest: every expected
//! operation exists, and no query borrows three words in a row from its operation's
//! summary or description, so a ranking cannot pass by matching the document's own
//! phrasing. A second set (`fixtures/search-queries-holdout.json`), written after the
//! ranking was tuned and never used to tune it, is reported beside it.

use bondry_test_support as support;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Binary, Events, TestConfig, table};

/// The upstream's tools: `reset` is granted to nobody, `search` is also served by the
/// upstream named `bondry`, where it would take a reserved id.
fn tools() -> Vec<Value> {
    let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let city = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    vec![
        json!({"name": "echo", "description": "Repeat the given text back, unchanged.", "inputSchema": text}),
        json!({"name": "forecast", "description": "Tomorrow's weather forecast for a city.", "inputSchema": city}),
        json!({"name": "reset", "description": "Wipe every stored forecast.", "inputSchema": {"type": "object"}}),
        json!({"name": "search", "description": "Find cities by name.", "inputSchema": {"type": "object"}}),
    ]
}

/// The real binary serving, in a realm whose `listing` is `search`, the builtin
/// `demo.echo` and, from `catalogue-upstream` over stdio, the upstream `up` (found by
/// searching) and the upstream `bondry` (`listing = "list"`).
/// Anonymous callers may call `demo.*` and `up.*` but `up.reset`; the principal `plain`
/// (ticket `plain-ticket`) only `demo.*`.
struct Searching {
    dir: tempfile::TempDir,
    front: Binary,
    client: reqwest::Client,
}

impl Searching {
    async fn start(more: impl FnOnce(TestConfig) -> TestConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let catalogue = dir.path().join("catalogue.json");
        std::fs::write(&catalogue, json!({"tools": tools()}).to_string()).unwrap();
        let upstream = |name: &str| {
            table([
                ("name", name.into()),
                ("transport", "stdio".into()),
                ("command", support::catalogue_upstream_exe().to_str().unwrap().into()),
                ("args", vec![catalogue.to_str().unwrap()].into()),
                ("new_capabilities", "trust".into()),
            ])
        };
        // The realm's `listing` reaches `up`; `bondry` says otherwise, and the builtin
        // `demo.echo` is always listed.
        let mut listed = upstream("bondry");
        listed.insert("listing".into(), "list".into());
        let config = TestConfig::bare()
            .set("pin_store", "memory")
            .set("realms.default.listing", "search")
            .set("realms.default.anonymous_roles", vec!["caller"])
            .role("caller", &["demo.*", "up.echo", "up.forecast", "up.search", "up.weather"])
            .role("plain", &["demo.*"])
            .principal("plain", &["plain"])
            .ticket("plain-ticket", "plain")
            .capability("demo.echo", "tool", "demo.echo", None)
            .push("realms.default.upstreams", upstream("up"))
            .push("realms.default.upstreams", listed)
            .set("audit.sink", "file")
            .set("audit.path", "audit.jsonl");
        let path = more(config).written(dir.path(), "bondry.toml");
        let front = Binary::serve(support::bondry_exe!(), &path, &[]);
        front.logged("upstream up: ", 1).await;
        front.logged("upstream bondry: ", 1).await;
        Self { dir, front, client: reqwest::Client::new() }
    }

    /// A modern request's status and body, exactly as sent.
    async fn modern(&self, method: &str, params: Value) -> (u16, String) {
        let response = self.front.post(&self.client, method, params).await;
        (response.status().as_u16(), response.text().await.unwrap())
    }

    async fn result(&self, method: &str, params: Value) -> Value {
        let (status, body) = self.modern(method, params).await;
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["result"].take()
    }

    fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// The audit records, once `count` are written.
    async fn audited(&self, count: usize) -> Vec<Value> {
        support::eventually(|| self.audit().len() >= count).await;
        self.audit()
    }
}

fn names(tools: &Value) -> Vec<&str> {
    tools.as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect()
}

fn found(result: &Value) -> Vec<&str> {
    result["structuredContent"]["tools"].as_array().unwrap().iter().map(|tool| tool["id"].as_str().unwrap()).collect()
}

/// A call result without its invocation id, which differs between any two calls.
fn without_invocation(mut result: Value) -> Value {
    if let Some(meta) = result["_meta"].as_object_mut() {
        meta.remove("io.modelcontextprotocol/invocationId");
        meta.remove("dev.bondry/invocationId");
    }
    result
}

fn search(query: &str) -> Value {
    json!({"name": "bondry.search", "arguments": {"query": query}})
}

fn call_through(id: &str, arguments: Value) -> Value {
    json!({"name": "bondry.call", "arguments": {"id": id, "arguments": arguments}})
}

#[tokio::test]
async fn searched_tools_are_found_and_called_in_the_callers_own_view_in_the_modern_era() {
    let gateway = Searching::start(|config| config.set("listeners.main.page_size", 1)).await;
    // One entry a page: the two tools merge into the list in id order, behind cursors.
    let mut listed = Vec::new();
    let mut cursor = None;
    loop {
        let params = cursor.map_or_else(|| json!({}), |cursor: String| json!({"cursor": cursor}));
        let page = gateway.result("tools/list", params).await;
        listed.extend(names(&page["tools"]).into_iter().map(str::to_owned));
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(listed, ["bondry.call", "bondry.search", "demo.echo"]);
    // Renamed, not given a reserved id, and logged.
    assert!(
        gateway
            .front
            .log_lines()
            .iter()
            .any(|line| line.contains("an upstream entry is renamed") && line.contains("bondry.search-"))
    );

    let result = gateway.result("tools/call", search("repeat some text back to me")).await;
    assert_eq!(found(&result)[0], "up.echo");
    let echo = &result["structuredContent"]["tools"][0];
    assert_eq!(echo["description"], "Repeat the given text back, unchanged.");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(result["content"][0]["type"], "text");
    // Only the caller's own view: the tool it may not call is never found.
    let result = gateway.result("tools/call", search("wipe every stored forecast")).await;
    assert!(!found(&result).contains(&"up.reset"), "{result}");
    assert_eq!(found(&result), ["up.forecast"]);
    let result = gateway.result("tools/call", search("reset")).await;
    assert_eq!(result["structuredContent"], json!({"tools": []}));
    let limited = json!({"name": "bondry.search", "arguments": {"query": "text forecast city", "limit": 1.0}});
    assert_eq!(found(&gateway.result("tools/call", limited).await).len(), 1);

    // Called through bondry.call as directly.
    let through = gateway.result("tools/call", call_through("up.echo", json!({"text": "hi"}))).await;
    let direct = gateway.result("tools/call", json!({"name": "up.echo", "arguments": {"text": "hi"}})).await;
    assert_eq!(through["content"], json!([{"type": "text", "text": "called echo"}]));
    assert_eq!(without_invocation(through), without_invocation(direct));
    // Arguments are checked against the tool's own schema, as directly.
    let through = gateway.result("tools/call", call_through("up.echo", json!({}))).await;
    let direct = gateway.result("tools/call", json!({"name": "up.echo", "arguments": {}})).await;
    assert_eq!(through["isError"], true);
    assert_eq!(without_invocation(through), without_invocation(direct));
    // A hidden tool and a missing one answer exactly as a direct call of a missing tool.
    for id in ["up.reset", "up.nope"] {
        let through = gateway.modern("tools/call", call_through(id, json!({}))).await;
        let direct = gateway.modern("tools/call", json!({"name": id, "arguments": {}})).await;
        assert_eq!(through, direct, "{id}");
        assert_eq!(through.0, 200);
        assert!(through.1.contains(&format!("Unknown tool: {id}")), "{}", through.1);
    }
    // Neither tool reaches itself or the other through bondry.call.
    for id in ["bondry.call", "bondry.search"] {
        let (status, body) = gateway.modern("tools/call", call_through(id, json!({"query": "echo"}))).await;
        assert_eq!(status, 200);
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["message"], format!("Unknown tool: {id}"));
    }
    // The two tools' own arguments are checked.
    let bad =
        gateway.result("tools/call", json!({"name": "bondry.search", "arguments": {"query": "x", "limit": 21}})).await;
    assert_eq!(bad["isError"], true);
    assert_eq!(bad["_meta"]["dev.bondry/errorCode"], "invalid_input");
    let bad = gateway.result("tools/call", json!({"name": "bondry.call", "arguments": {"arguments": {}}})).await;
    assert_eq!(bad["isError"], true);

    // Audited under the real id, with the tool that reached it.
    let records = gateway.audited(16).await;
    let of = |capability: &str, outcome: &str| {
        records.iter().filter(|r| r["capability"] == capability && r["outcome"] == outcome).collect::<Vec<_>>()
    };
    let succeeded = of("up.echo", "succeeded");
    assert_eq!(succeeded.len(), 2, "{records:#?}");
    assert_eq!(succeeded.iter().filter(|r| r["via"] == "bondry.call").count(), 1);
    assert!(succeeded.iter().any(|r| r.get("via").is_none()));
    assert_eq!(of("up.reset", "denied")[0]["via"], "bondry.call");
    assert_eq!(of("up.reset", "denied")[1].get("via"), None);
    assert_eq!(of("bondry.search", "succeeded").len(), 4);
    assert_eq!(of("bondry.search", "invalid_input").len(), 1);
}

#[tokio::test]
async fn searched_tools_are_found_and_called_in_a_handshake_session() {
    let gateway = Searching::start(|config| config).await;
    let sid = gateway.front.session(&gateway.client).await;
    let rpc = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let listed = gateway.front.in_session(&gateway.client, &sid, rpc("tools/list", json!({}))).await;
    assert_eq!(names(&listed["result"]["tools"]), ["bondry.call", "bondry.search", "demo.echo"]);
    let result =
        gateway.front.in_session(&gateway.client, &sid, rpc("tools/call", search("forecast for a city"))).await;
    assert_eq!(found(&result["result"])[0], "up.forecast");
    let through = rpc("tools/call", call_through("up.forecast", json!({"city": "Oslo"})));
    let result = gateway.front.in_session(&gateway.client, &sid, through).await;
    assert_eq!(result["result"]["content"], json!([{"type": "text", "text": "called forecast"}]));
    let hidden =
        gateway.front.in_session(&gateway.client, &sid, rpc("tools/call", call_through("up.reset", json!({})))).await;
    let direct = gateway.front.in_session(&gateway.client, &sid, rpc("tools/call", json!({"name": "up.reset"}))).await;
    assert_eq!(hidden, direct);
    assert_eq!(hidden["error"]["message"], "Unknown tool: up.reset");
}

#[tokio::test]
async fn a_caller_whose_view_holds_no_searched_tool_lists_neither_tool_and_cannot_call_them() {
    let gateway = Searching::start(|config| config).await;
    let plain = [("authorization", "Bearer plain-ticket")];
    let post = |method: &'static str, params: Value| gateway.front.post_with(&gateway.client, &plain, method, params);
    let listed: Value = post("tools/list", json!({})).await.json().await.unwrap();
    assert_eq!(names(&listed["result"]["tools"]), ["demo.echo"]);
    for (name, arguments) in [("bondry.search", json!({"query": "echo"})), ("bondry.call", json!({"id": "up.echo"}))] {
        let answer: Value =
            post("tools/call", json!({"name": name, "arguments": arguments})).await.json().await.unwrap();
        assert_eq!(answer["error"]["message"], format!("Unknown tool: {name}"));
    }
}

#[tokio::test]
async fn calls_through_bondry_call_count_against_the_callers_rate_limit() {
    let rate = table([("per_second", 0.001.into()), ("burst", 2.into())]);
    let gateway = Searching::start(|config| config.set("realms.default.rate_limits.per_principal", rate)).await;
    assert_eq!(gateway.modern("tools/call", search("echo")).await.0, 200);
    assert_eq!(gateway.modern("tools/call", call_through("up.echo", json!({"text": "a"}))).await.0, 200);
    let (status, body) = gateway.modern("tools/call", call_through("up.echo", json!({"text": "b"}))).await;
    assert_eq!(status, 429, "{body}");
}

#[tokio::test]
async fn a_change_to_the_searched_tools_a_caller_sees_is_announced_and_the_list_stays() {
    let gateway = Searching::start(|config| config).await;
    let mut stream = Events::new(
        gateway
            .front
            .post(&gateway.client, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))
            .await,
    );
    let ack = stream.next(Duration::from_secs(5)).await.expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let mut tools = tools();
    tools.push(
        json!({"name": "weather", "description": "Today's weather in a city.", "inputSchema": {"type": "object"}}),
    );
    std::fs::write(gateway.dir.path().join("catalogue.json"), json!({"tools": tools}).to_string()).unwrap();
    let changed = stream.next(Duration::from_secs(10)).await.expect("a list change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let listed = gateway.result("tools/list", json!({})).await;
    assert_eq!(names(&listed["tools"]), ["bondry.call", "bondry.search", "demo.echo"]);
    let result = gateway.result("tools/call", search("weather today")).await;
    assert_eq!(found(&result)[0], "up.weather");
}

/// `bondry check`'s exit code and standard error for the configuration in `dir`.
fn check(dir: &Path) -> (i32, String) {
    let output = Command::new(support::bondry_exe!())
        .args(["check", "--config", "bondry.toml"])
        .current_dir(dir)
        .output()
        .unwrap();
    (output.status.code().unwrap(), String::from_utf8(output.stderr).unwrap())
}

#[test]
fn check_refuses_a_configured_or_openapi_id_the_search_tools_keep() {
    let dir = tempfile::tempdir().unwrap();
    TestConfig::bare().capability("bondry.search", "tool", "demo.echo", None).written(dir.path(), "bondry.toml");
    let (code, stderr) = check(dir.path());
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("realms.default.capabilities[0].id: \"bondry.search\" is an id Bondry keeps for finding and calling tools by search; choose another"),
        "{stderr}"
    );
    // A realm of builtins only has nothing to search: said, not refused.
    TestConfig::bare().set("realms.default.listing", "search").written(dir.path(), "bondry.toml");
    let (code, stderr) = check(dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("realms.default.listing: \"search\" reaches every source of tools but the builtin handlers, and the realm has none: every tool stays listed"), "{stderr}");
    let document = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "paths": {"/find": {"get": {"operationId": "call", "responses": {"200": {"description": "ok"}}}}}});
    std::fs::write(dir.path().join("api.json"), document.to_string()).unwrap();
    let stanza = table([
        ("name", "bondry".into()),
        ("spec_file", "api.json".into()),
        ("base_url", "https://api.example.com".into()),
    ]);
    TestConfig::bare().push("realms.default.openapi", stanza).written(dir.path(), "bondry.toml");
    let (code, stderr) = check(dir.path());
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("realms.default.openapi[0].name: an operation would be served as \"bondry.call\", an id Bondry keeps for finding and calling tools by search; exclude the operation or give the API another prefix"),
        "{stderr}"
    );
}

/// The evaluation set, as committed.
fn queries() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search-queries.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// GitHub's REST description from `interop/openapi`, or `None` (having said why) when it is
/// not installed; a failure instead when `BONDRY_REQUIRE_OPENAPI_INTEROP` is set.
fn github() -> Option<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/openapi/node_modules/@octokit/openapi/generated/api.github.com.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).unwrap()),
        Err(error) => {
            assert!(
                std::env::var_os("BONDRY_REQUIRE_OPENAPI_INTEROP").is_none(),
                "{}: {error}: run `npm ci` in interop/openapi",
                path.display()
            );
            eprintln!("skipped: GitHub's description is not installed: run `npm ci` in interop/openapi");
            None
        }
    }
}

/// Lowercase runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every run of three consecutive words of `text`.
fn triples(text: &str) -> BTreeSet<[String; 3]> {
    words(text).windows(3).map(|run| [run[0].clone(), run[1].clone(), run[2].clone()]).collect()
}

#[test]
fn the_evaluation_set_asks_for_real_operations_in_its_own_words() {
    let set = queries();
    let queries = set["queries"].as_array().unwrap();
    assert!(queries.len() >= 30, "at least 30 queries");
    let tags: BTreeSet<&str> = queries.iter().map(|query| query["tag"].as_str().unwrap()).collect();
    assert!(tags.len() >= 10, "at least 10 tags: {tags:?}");
    let Some(document) = github() else { return };
    let mut operations: HashMap<&str, &Value> = HashMap::new();
    for item in document["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            if let Some(id) = operation["operationId"].as_str() {
                operations.insert(id, operation);
            }
        }
    }
    for query in queries {
        let (asked, expected) = (query["query"].as_str().unwrap(), query["expected"].as_str().unwrap());
        let operation = operations.get(expected).unwrap_or_else(|| panic!("{expected} is no operation"));
        assert_eq!(operation["tags"][0], query["tag"], "{expected}");
        let count = words(asked).len();
        assert!((4..=14).contains(&count), "{asked:?}: {count} words");
        for field in ["summary", "description"] {
            let own = triples(operation[field].as_str().unwrap_or_default());
            let shared: Vec<_> = triples(asked).intersection(&own).cloned().collect();
            assert!(shared.is_empty(), "{asked:?} borrows {shared:?} from {expected}'s {field}");
        }
    }
}

/// Where `@octokit/openapi` keeps GitHub's description, under `interop/openapi`.
const GITHUB: &str = "node_modules/@octokit/openapi/generated/api.github.com.json";

/// Lowercase runs of letters and digits of every text, as plain BM25 reads them.
fn bm25_words<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    texts.into_iter().flat_map(words).collect()
}

/// The ranking mcp-proxy ships: Okapi BM25 (k1 1.2, b 0.75) over one bag of the words of a
/// tool's id, title, description and parameter names, unstemmed.
struct PlainBm25 {
    ids: Vec<String>,
    documents: Vec<HashMap<String, f64>>,
    lengths: Vec<f64>,
    found_in: HashMap<String, f64>,
}

impl PlainBm25 {
    fn new(tools: &[Value]) -> Self {
        let mut index = Self { ids: Vec::new(), documents: Vec::new(), lengths: Vec::new(), found_in: HashMap::new() };
        for tool in tools {
            let parameters =
                tool["inputSchema"]["properties"].as_object().map(|p| p.keys().cloned().collect::<Vec<_>>());
            let parameters = parameters.unwrap_or_default();
            let text = [tool["name"].as_str(), tool["title"].as_str(), tool["description"].as_str()];
            let all = bm25_words(text.into_iter().flatten().chain(parameters.iter().map(String::as_str)));
            let mut counts: HashMap<String, f64> = HashMap::new();
            for word in &all {
                *counts.entry(word.clone()).or_default() += 1.0;
            }
            for word in counts.keys() {
                *index.found_in.entry(word.clone()).or_default() += 1.0;
            }
            index.ids.push(tool["name"].as_str().unwrap().to_owned());
            index.lengths.push(all.len() as f64);
            index.documents.push(counts);
        }
        index
    }

    /// The id ranked first for `query`.
    fn best(&self, query: &str) -> &str {
        let count = self.ids.len() as f64;
        let average = self.lengths.iter().sum::<f64>() / count;
        let terms = bm25_words([query]);
        let score = |at: usize| {
            terms
                .iter()
                .filter_map(|term| {
                    let frequency = *self.documents[at].get(term)?;
                    let found = self.found_in[term];
                    let idf = (1.0 + (count - found + 0.5) / (found + 0.5)).ln();
                    Some(idf * frequency * 2.2 / (frequency + 1.2 * (0.25 + 0.75 * self.lengths[at] / average)))
                })
                .sum::<f64>()
        };
        let best = (0..self.ids.len()).max_by(|&a, &b| score(a).total_cmp(&score(b)).then(b.cmp(&a))).unwrap();
        &self.ids[best]
    }
}

/// A modern request to `front`: its body's bytes.
async fn posted(client: &reqwest::Client, front: &Binary, method: &str, params: Value) -> Vec<u8> {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": support::PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {}});
    let mut request = client
        .post(format!("http://127.0.0.1:{}/mcp", front.port))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", support::PROTOCOL)
        .header("Mcp-Method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        request = request.header("Mcp-Name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let response = request.body(body).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    response.bytes().await.unwrap().to_vec()
}

/// The tool id the operation `operation` is served as, among the `listed` tools.
fn tool_of<'a>(listed: &'a [Value], document: &Value, operation: &str) -> &'a str {
    let plain = format!("github.{}", operation.replace('/', "_"));
    let summary = document["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .find(|candidate| candidate["operationId"] == operation)
        .map(|candidate| &candidate["summary"])
        .unwrap();
    // A long operationId is cut and suffixed (docs/upstreams.md, Names).
    let cut = &plain[..plain.len().min(55)];
    let tool = listed.iter().find(|tool| {
        tool["name"] == plain.as_str()
            || (plain.len() > 64 && tool["name"].as_str().unwrap().starts_with(cut) && &tool["title"] == summary)
    });
    tool.unwrap_or_else(|| panic!("{operation} is served"))["name"].as_str().unwrap()
}

/// How a ranking did on a set: at rank 1, within the top 5, of how many.
#[derive(Debug, Default)]
struct Score {
    first: usize,
    top_five: usize,
    plain_first: usize,
    asked: usize,
}

#[tokio::test]
async fn githubs_rest_api_is_found_by_what_users_ask_better_than_plain_bm25() {
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/openapi");
    let Some(document) = github() else { return };
    let dir = tempfile::tempdir().unwrap();
    let entry = |listing: &str| {
        table([
            ("name", "github".into()),
            ("spec_file", interop.join(GITHUB).to_str().unwrap().into()),
            ("base_url", "https://api.github.com".into()),
            ("listing", listing.into()),
        ])
    };
    // The API listed whole, then found by searching: one at a time, each loading it once.
    let serve = |listing: &str| {
        let config = TestConfig::bare()
            .set("realms.default.anonymous_roles", vec!["caller"])
            .role("caller", &["github.*"])
            .push("realms.default.openapi", entry(listing))
            .written(dir.path(), "bondry.toml");
        Binary::serve(support::bondry_exe!(), &config, &[])
    };
    let client = reqwest::Client::new();

    // What a client receives to see the API whole: every page of tools/list.
    let front = serve("list");
    let (mut listed, mut list_bytes, mut cursor) = (Vec::new(), 0, None);
    loop {
        let params = cursor.map_or_else(|| json!({}), |cursor: String| json!({"cursor": cursor}));
        let body = posted(&client, &front, "tools/list", params).await;
        list_bytes += body.len();
        let page: Value = serde_json::from_slice(&body).unwrap();
        listed.extend(page["result"]["tools"].as_array().unwrap().iter().cloned());
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(listed.len(), 1221);
    drop(front);
    let front = serve("search");
    let searching = posted(&client, &front, "tools/list", json!({})).await;
    let searching: Value = serde_json::from_slice(&searching).unwrap();
    assert_eq!(names(&searching["result"]["tools"]), ["bondry.call", "bondry.search"]);

    let plain = PlainBm25::new(&listed);
    let mut search_bytes = Vec::new();
    let mut scores = Vec::new();
    for file in ["search-queries.json", "search-queries-holdout.json"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(file);
        let set: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut score = Score::default();
        for query in set["queries"].as_array().unwrap() {
            let (asked, expected) = (query["query"].as_str().unwrap(), query["expected"].as_str().unwrap());
            let expected = tool_of(&listed, &document, expected);
            let call = json!({"name": "bondry.search", "arguments": {"query": asked, "limit": 5}});
            let body = posted(&client, &front, "tools/call", call).await;
            search_bytes.push(body.len());
            let answer: Value = serde_json::from_slice(&body).unwrap();
            let found = found(&answer["result"]);
            let rank = found.iter().position(|id| *id == expected);
            score.asked += 1;
            score.first += usize::from(rank == Some(0));
            score.top_five += usize::from(rank.is_some());
            score.plain_first += usize::from(plain.best(asked) == expected);
            if rank != Some(0) {
                eprintln!("{file}: {asked:?}: {expected} at {rank:?}, first {:?}", found.first());
            }
        }
        let percent = |count: usize| 100.0 * count as f64 / score.asked as f64;
        eprintln!(
            "{file}: {} queries: rank 1 {} ({:.1} %), top 5 {} ({:.1} %); plain BM25 rank 1 {} ({:.1} %)",
            score.asked,
            score.first,
            percent(score.first),
            score.top_five,
            percent(score.top_five),
            score.plain_first,
            percent(score.plain_first)
        );
        scores.push(score);
    }
    search_bytes.sort_unstable();
    eprintln!(
        "bytes to see the API: tools/list, every page: {list_bytes}; one bondry.search answer of 5: median {}, largest {}",
        search_bytes[search_bytes.len() / 2],
        search_bytes[search_bytes.len() - 1]
    );
    let evaluation = &scores[0];
    assert!(evaluation.first * 10 >= evaluation.asked * 9, "{evaluation:?}: at least 90 % at rank 1");
    assert_eq!(evaluation.top_five, evaluation.asked, "{evaluation:?}: all within the top 5");
    assert!(evaluation.first > evaluation.plain_first, "{evaluation:?}: better than plain BM25 at rank 1");
    let held_out = &scores[1];
    assert!(
        held_out.first > held_out.plain_first,
        "{held_out:?}: better than plain BM25 at rank 1 on queries it was not tuned on"
    );
}
