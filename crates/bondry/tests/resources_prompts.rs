//! Black-box tests of resources, resource templates, prompts and completion in both eras,
//! of progress and log notifications on a call's own event stream, of resource
//! subscriptions, and of what a disconnect means in each era.

use bondry_test_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Events, Req, Resp, TestConfig, TestServer, in_session, meta, open, rpc, saw, sse_messages, wait_for};

const SESSION: &str = "Mcp-Session-Id";
const HASH: &str = "dev.bondry/hash";
const ITEMS: &str = "test://items/{name}/v{version}";
const HIDDEN_ITEMS: &str = "secret://items/{name}/v{version}";

// ---------------------------------------------------------------------------------------
// Configuration and request helpers
// ---------------------------------------------------------------------------------------

/// Pages of the resource list: the granted ones (others are hidden from anonymous callers).
const PAGES: [(&str, bool); 10] = [
    ("page.01", true),
    ("page.02", false),
    ("page.03", true),
    ("page.04", true),
    ("page.05", false),
    ("page.06", true),
    ("page.07", false),
    ("page.08", false),
    ("page.09", true),
    ("page.10", false),
];

/// Extra templates: the granted ones.
const TEMPLATES: [(&str, bool); 6] =
    [("tpl.a", true), ("tpl.b", false), ("tpl.c", true), ("tpl.d", false), ("tpl.e", true), ("tpl.f", false)];

/// The default test configuration plus prompts, resources and templates: `test.*` and
/// some `page.*` and `tpl.*` granted to anonymous callers, `hidden.*` not. Without
/// `hidden`, the `hidden.*` capabilities are not configured at all.
fn config_with(hidden: bool) -> String {
    let granted = PAGES.iter().chain(TEMPLATES.iter()).filter(|(_, granted)| *granted).map(|(id, _)| *id);
    let grants: Vec<&str> = ["demo.*", "test.*"].into_iter().chain(granted).collect();
    let mut config = TestConfig::new().retain("realms.default.roles", |_| false).role("demo", &grants);
    for id in ["test.text_resource", "test.blob_resource", "test.empty_resource", "test.failing_resource"] {
        config = config.capability(id, "resource", id, None);
    }
    for (id, _) in PAGES {
        let uri = format!("test://page/{}", &id[5..]);
        config = config.capability(id, "resource", "test.text_resource", Some(&uri));
    }
    config = config.capability("test.items", "resource_template", "test.items", None);
    for (id, _) in TEMPLATES {
        let uri = format!("tpl://{}/{{name}}/v{{version}}", &id[4..]);
        config = config.capability(id, "resource_template", "test.items", Some(&uri));
    }
    config = config.capability("test.note", "prompt", "test.note", None).capability(
        "test.failing_prompt",
        "prompt",
        "test.failing_prompt",
        None,
    );
    if hidden {
        config = config
            .capability("hidden.secret", "resource", "test.text_resource", Some("test://secret"))
            .capability("hidden.items", "resource_template", "test.items", Some(HIDDEN_ITEMS))
            .capability("hidden.note", "prompt", "test.note", None);
    }
    config.text()
}

fn config() -> String {
    config_with(true)
}

async fn start() -> TestServer {
    TestServer::with_config(&config()).await
}

/// A modern `resources/read` of `uri`, with its `Mcp-Name`.
fn read(uri: &str) -> Req {
    Req::modern("resources/read", json!({"uri": uri})).header("Mcp-Name", uri)
}

/// A modern `prompts/get` of `name` with `arguments`.
fn get_prompt(name: &str, arguments: Value) -> Req {
    Req::modern("prompts/get", json!({"name": name, "arguments": arguments}))
}

fn complete_params(reference: Value, argument: &str, value: &str) -> Value {
    json!({"ref": reference, "argument": {"name": argument, "value": value}})
}

/// A modern `tools/call` whose `_meta` also holds `extra`.
fn call_with_meta(name: &str, arguments: Value, extra: Value) -> Req {
    let mut meta = meta();
    for (key, value) in extra.as_object().unwrap() {
        meta[key] = value.clone();
    }
    let body = rpc("tools/call", json!({"name": name, "arguments": arguments, "_meta": meta}));
    Req::call(name, json!({})).json(body)
}

/// Opens session `sid`'s GET stream.
async fn listen(server: &TestServer, client: &reqwest::Client, sid: &str) -> Events {
    let get = Req::post()
        .method(reqwest::Method::GET)
        .without("content-type")
        .replace("accept", "text/event-stream")
        .header(SESSION, sid);
    Events::new(get.builder(client, &server.url()).send().await.unwrap())
}

/// The modern fields every complete result carries.
fn assert_modern_fields(result: &Value, caching: bool) {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "bondry", "{result}");
    if caching {
        assert_eq!(result["ttlMs"], 0, "{result}");
        assert_eq!(result["cacheScope"], "private", "{result}");
    } else {
        assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none(), "{result}");
    }
}

/// A handshake-era result carries none of the modern fields.
fn assert_no_modern_fields(result: &Value) {
    for key in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        assert!(result.get(key).is_none(), "{key} in {result}");
    }
}

/// An audit record without the fields that vary from run to run.
fn comparable(record: &Value) -> Value {
    let mut record = record.clone();
    let object = record.as_object_mut().unwrap();
    object.remove("time");
    object.remove("duration_us");
    record
}

/// Asserts two responses carry the same status, media type, length and body bytes.
#[track_caller]
fn assert_same_bytes(left: &Resp, right: &Resp) {
    assert_eq!(left.status, right.status);
    assert_eq!(left.text(), right.text());
    assert_eq!(left.body, right.body);
    assert_eq!(left.headers.get("content-type"), right.headers.get("content-type"));
    assert_eq!(left.headers.get("content-length"), right.headers.get("content-length"));
}

// ---------------------------------------------------------------------------------------
// 1. Lists
// ---------------------------------------------------------------------------------------

/// Every page of a list method, modern (`sid` = None) or in a session; asserts the era's
/// fields on each page.
async fn all_pages(server: &TestServer, sid: Option<&str>, method: &str, field: &str) -> (Vec<Value>, usize) {
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = cursor.as_ref().map_or_else(|| json!({}), |cursor| json!({"cursor": cursor}));
        let request = match sid {
            None => Req::modern(method, params),
            Some(sid) => in_session(sid, rpc(method, params)),
        };
        let result = server.send(request).await.assert_result();
        match sid {
            None => assert_modern_fields(&result, true),
            Some(_) => assert_no_modern_fields(&result),
        }
        let page = result[field].as_array().unwrap_or_else(|| panic!("{field} in {result}"));
        assert!(page.len() <= 3, "page_size is 3: {result}");
        entries.extend(page.iter().cloned());
        pages += 1;
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
            None => return (entries, pages),
        }
    }
}

fn names(entries: &[Value]) -> Vec<&str> {
    entries.iter().map(|entry| entry["name"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn discover_and_initialize_announce_prompts_resources_and_completions() {
    let server = start().await;
    let result = server.send(Req::modern("server/discover", json!({}))).await.assert_result();
    assert_eq!(
        result["capabilities"],
        json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "completions": {},
            "logging": {}
        })
    );
    let result = server.send(support::initialize_request("2025-11-25", json!({}))).await.assert_result();
    assert_eq!(
        result["capabilities"],
        json!({
            "tools": {"listChanged": true},
            "logging": {},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "completions": {}
        })
    );
    server.stop().await;
}

#[tokio::test]
async fn resource_lists_page_through_the_filtered_view_in_both_eras() {
    let server = start().await;
    let sid = open(&server).await;
    let mut expected: Vec<&str> = PAGES.iter().filter(|(_, granted)| *granted).map(|(id, _)| *id).collect();
    expected.extend(["test.blob_resource", "test.empty_resource", "test.failing_resource", "test.text_resource"]);

    let (modern, modern_pages) = all_pages(&server, None, "resources/list", "resources").await;
    assert_eq!(names(&modern), expected, "every visible resource once, in id order, none hidden");
    assert_eq!(modern_pages, expected.len().div_ceil(3));
    let (handshake, handshake_pages) = all_pages(&server, Some(&sid), "resources/list", "resources").await;
    assert_eq!(handshake, modern, "entries are the same in both eras");
    assert_eq!(handshake_pages, modern_pages);

    let text = modern.iter().find(|entry| entry["name"] == "test.text_resource").unwrap();
    let hash = text["_meta"][HASH].as_str().unwrap();
    assert!(hash.starts_with("sha256:") && hash.len() == 7 + 64, "{hash}");
    assert_eq!(
        text,
        &json!({
            "uri": "test://text",
            "name": "test.text_resource",
            "title": "Text",
            "description": "A text resource",
            "mimeType": "text/plain",
            "_meta": {HASH: hash}
        })
    );
    let page = modern.iter().find(|entry| entry["name"] == "page.03").unwrap();
    assert_eq!(page["uri"], "test://page/03", "the configured URI overrides the handler's");
    let blob = modern.iter().find(|entry| entry["name"] == "test.blob_resource").unwrap();
    assert!(blob.get("mimeType").is_none() && blob.get("title").is_none(), "{blob}");

    let (templates, template_pages) = all_pages(&server, None, "resources/templates/list", "resourceTemplates").await;
    assert_eq!(names(&templates), ["test.items", "tpl.a", "tpl.c", "tpl.e"]);
    assert_eq!(template_pages, 2);
    let (in_session, _) = all_pages(&server, Some(&sid), "resources/templates/list", "resourceTemplates").await;
    assert_eq!(in_session, templates);
    let items = &templates[0];
    assert_eq!(
        items,
        &json!({
            "uriTemplate": ITEMS,
            "name": "test.items",
            "title": "Items",
            "description": "An item at a version",
            "mimeType": "application/json",
            "_meta": {HASH: items["_meta"][HASH]}
        })
    );
    assert_eq!(templates[1]["uriTemplate"], "tpl://a/{name}/v{version}");
    server.stop().await;
}

#[tokio::test]
async fn a_cursor_from_one_list_does_not_open_another() {
    let server = start().await;
    let first = server.send(Req::modern("resources/list", json!({}))).await.assert_result();
    let cursor = first["nextCursor"].as_str().unwrap();
    // A cursor is bound to the view it paged: the template view is another.
    server.send(Req::modern("resources/templates/list", json!({"cursor": cursor}))).await.assert_error(
        200,
        Some(json!(1)),
        -32602,
        "Invalid cursor",
    );
    server.stop().await;
}

// ---------------------------------------------------------------------------------------
// 2. Reads
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// 3. Unknown and hidden: the same bytes, told apart only in the audit trail
// ---------------------------------------------------------------------------------------

/// Sends the same request to a server where the capability exists but is hidden and to one
/// where it does not exist; asserts the same bytes, and returns both servers' audit records
/// of that request.
async fn hidden_vs_absent(request: impl Fn(Option<&str>) -> Req, in_session_era: bool) -> (Value, Value) {
    let hidden = TestServer::with_config(&config_with(true)).await;
    let absent = TestServer::with_config(&config_with(false)).await;
    let (hidden_sid, absent_sid) =
        if in_session_era { (Some(open(&hidden).await), Some(open(&absent).await)) } else { (None, None) };
    let from_hidden = hidden.send(request(hidden_sid.as_deref())).await;
    let from_absent = absent.send(request(absent_sid.as_deref())).await;
    assert_same_bytes(&from_hidden, &from_absent);
    let (mut hidden_records, mut absent_records) = (hidden.stop().await, absent.stop().await);
    assert_eq!((hidden_records.len(), absent_records.len()), (1, 1), "{hidden_records:?} {absent_records:?}");
    (hidden_records.remove(0), absent_records.remove(0))
}

/// Asserts the two records differ only in outcome: `denied` for the hidden one.
#[track_caller]
fn assert_denied_vs_not_found(hidden: &Value, absent: &Value) {
    assert_eq!(hidden["outcome"], "denied", "{hidden}");
    assert_eq!(absent["outcome"], "not_found", "{absent}");
    let (mut hidden, mut absent) = (comparable(hidden), comparable(absent));
    hidden.as_object_mut().unwrap().remove("outcome");
    absent.as_object_mut().unwrap().remove("outcome");
    assert_eq!(hidden, absent);
}

#[tokio::test]
async fn hidden_and_absent_resources_answer_the_same_bytes_modern() {
    for uri in ["test://secret", "secret://items/x/v1"] {
        let (hidden, absent) = hidden_vs_absent(|_| read(uri), false).await;
        assert_denied_vs_not_found(&hidden, &absent);
    }
    // And the answer itself.
    let server = start().await;
    let data = server.send(read("test://secret")).await.assert_error(200, Some(json!(1)), -32602, "Resource not found");
    assert_eq!(data, json!({"uri": "test://secret"}));
    server.stop().await;
}

#[tokio::test]
async fn hidden_and_absent_resources_answer_the_same_bytes_in_a_session() {
    for uri in ["test://secret", "secret://items/x/v1"] {
        let request = |sid: Option<&str>| in_session(sid.unwrap(), rpc("resources/read", json!({"uri": uri})));
        let (hidden, absent) = hidden_vs_absent(request, true).await;
        assert_denied_vs_not_found(&hidden, &absent);
    }
    let server = start().await;
    let sid = open(&server).await;
    let data = server
        .send(in_session(&sid, rpc("resources/read", json!({"uri": "test://secret"}))))
        .await
        .assert_error(200, Some(json!(1)), -32002, "Resource not found");
    assert_eq!(data, json!({"uri": "test://secret"}));
    server.stop().await;
}

#[tokio::test]
async fn hidden_and_absent_prompts_answer_the_same_bytes() {
    let (hidden, absent) = hidden_vs_absent(|_| get_prompt("hidden.note", json!({"topic": "x"})), false).await;
    assert_denied_vs_not_found(&hidden, &absent);
    let request = |sid: Option<&str>| {
        in_session(sid.unwrap(), rpc("prompts/get", json!({"name": "hidden.note", "arguments": {"topic": "x"}})))
    };
    let (hidden, absent) = hidden_vs_absent(request, true).await;
    assert_denied_vs_not_found(&hidden, &absent);

    let server = start().await;
    let get = server.send(get_prompt("hidden.note", json!({"topic": "x"}))).await;
    get.assert_error(200, Some(json!(1)), -32602, "Unknown prompt: hidden.note");
    // Arguments are not looked at before the prompt is found: a missing one changes nothing.
    let bare = server.send(get_prompt("hidden.note", json!({}))).await;
    assert_same_bytes(&get, &bare);
    server.stop().await;
}

#[tokio::test]
async fn completion_on_a_hidden_prompt_answers_as_the_unknown_prompt() {
    let reference = json!({"type": "ref/prompt", "name": "hidden.note"});
    let request = || Req::modern("completion/complete", complete_params(reference.clone(), "topic", "r"));
    let (hidden, absent) = hidden_vs_absent(|_| request(), false).await;
    assert_denied_vs_not_found(&hidden, &absent);
    let server = start().await;
    let completion = server.send(request()).await;
    completion.assert_error(200, Some(json!(1)), -32602, "Unknown prompt: hidden.note");
    assert_same_bytes(&completion, &server.send(get_prompt("hidden.note", json!({"topic": "x"}))).await);
    let sid = open(&server).await;
    let completion =
        server.send(in_session(&sid, rpc("completion/complete", complete_params(reference, "topic", "r")))).await;
    let get = server.send(in_session(&sid, rpc("prompts/get", json!({"name": "hidden.note"})))).await;
    completion.assert_error(200, Some(json!(1)), -32602, "Unknown prompt: hidden.note");
    assert_same_bytes(&completion, &get);
    server.stop().await;
}

#[tokio::test]
async fn completion_on_a_hidden_template_answers_as_the_unknown_resource() {
    let reference = json!({"type": "ref/resource", "uri": HIDDEN_ITEMS});
    let request = || Req::modern("completion/complete", complete_params(reference.clone(), "name", "a"));
    let server = start().await;
    let completion = server.send(request()).await;
    let data = completion.assert_error(200, Some(json!(1)), -32602, "Resource not found");
    assert_eq!(data, json!({"uri": HIDDEN_ITEMS}));
    assert_same_bytes(&completion, &server.send(read(HIDDEN_ITEMS)).await);
    let sid = open(&server).await;
    let completion = server
        .send(in_session(&sid, rpc("completion/complete", complete_params(reference.clone(), "name", "a"))))
        .await;
    let data = completion.assert_error(200, Some(json!(1)), -32002, "Resource not found");
    assert_eq!(data, json!({"uri": HIDDEN_ITEMS}));
    server.stop().await;

    // Against a server without the template at all: the same bytes.
    let hidden = TestServer::with_config(&config_with(true)).await;
    let absent = TestServer::with_config(&config_with(false)).await;
    assert_same_bytes(&hidden.send(request()).await, &absent.send(request()).await);
    hidden.stop().await;
    absent.stop().await;
}

#[tokio::test]
async fn completion_on_a_hidden_template_is_audited_as_denied() {
    let reference = json!({"type": "ref/resource", "uri": HIDDEN_ITEMS});
    let (hidden, absent) = hidden_vs_absent(
        |_| Req::modern("completion/complete", complete_params(reference.clone(), "name", "a")),
        false,
    )
    .await;
    assert_denied_vs_not_found(&hidden, &absent);
}

// ---------------------------------------------------------------------------------------
// 4. Prompts
// ---------------------------------------------------------------------------------------

/// A prompt entry with its arguments sorted by name (Bondry promises no order for them).
#[tokio::test]
async fn prompt_lists_derive_arguments_from_the_schema() {
    let server = start().await;
    let sid = open(&server).await;
    let modern = server.send(Req::modern("prompts/list", json!({}))).await.assert_result();
    assert_modern_fields(&modern, true);
    let handshake = server.send(in_session(&sid, rpc("prompts/list", json!({})))).await.assert_result();
    assert_no_modern_fields(&handshake);
    assert_eq!(handshake["prompts"], modern["prompts"]);
    let prompts = modern["prompts"].as_array().unwrap();
    assert_eq!(names(prompts), ["test.failing_prompt", "test.note"], "hidden.note is not listed");
    let note = &prompts[1];
    // Arguments come in the order the schema declares its properties (topic, then style).
    assert_eq!(
        *note,
        json!({
            "name": "test.note",
            "title": "Note",
            "description": "Writes a note",
            "arguments": [
                {"name": "topic", "title": "Topic", "description": "What the note is about", "required": true},
                {"name": "style", "description": "How long", "required": false}
            ],
            "_meta": {HASH: note["_meta"][HASH]}
        })
    );
    assert!(note["_meta"][HASH].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(prompts[0]["arguments"], json!([]));
    server.stop().await;
}

// ---------------------------------------------------------------------------------------
// 5. Completion
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// 6. Progress and log notifications
// ---------------------------------------------------------------------------------------

fn progress(token: Value, progress: f64, message: Option<&str>) -> Value {
    let mut params = json!({"progressToken": token, "progress": progress, "total": 3.0});
    if let Some(message) = message {
        params["message"] = json!(message);
    }
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
}

fn log(level: &str, logger: Option<&str>, data: Value) -> Value {
    let mut params = json!({"level": level, "data": data});
    if let Some(logger) = logger {
        params["logger"] = json!(logger);
    }
    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
}

/// Asserts an event-stream answer: the notifications in order, then the result for id 1.
#[track_caller]
fn assert_streamed(response: &Resp, notifications: &[Value]) -> Value {
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.header("content-type"), Some("text/event-stream"), "{}", response.text());
    let mut messages = sse_messages(&response.text());
    let last = messages.pop().expect("a result event");
    assert_eq!(messages, notifications, "{}", response.text());
    assert_eq!(last["id"], 1, "{last}");
    assert!(last.get("error").is_none(), "{last}");
    last["result"].clone()
}

#[tokio::test]
async fn a_modern_call_streams_what_it_was_asked_for() {
    let server = start().await;
    let token = json!("tok-1");
    let p1 = progress(token.clone(), 1.0, Some("one"));
    let p2 = progress(token.clone(), 2.0, Some("two"));
    let p3 = progress(token.clone(), 3.0, None);
    let warning = log("warning", Some("talk"), json!("careful"));
    let error = log("error", None, json!({"code": 7}));

    // Nothing asked: plain JSON and no notifications.
    let plain = server.send(Req::call("test.talk", json!({}))).await;
    assert_eq!(plain.header("content-type"), Some("application/json"));
    let result = plain.assert_result();
    assert_eq!(result["structuredContent"], json!({"talked": true}));
    assert_eq!(result["resultType"], "complete");

    // Progress only.
    let response = server.send(call_with_meta("test.talk", json!({}), json!({"progressToken": token}))).await;
    let result = assert_streamed(&response, &[p1.clone(), p2.clone(), p3.clone()]);
    assert_eq!(result["structuredContent"], json!({"talked": true}));
    assert_eq!(result["resultType"], "complete");

    // Log messages of warning and above only.
    let meta = json!({"io.modelcontextprotocol/logLevel": "warning"});
    let response = server.send(call_with_meta("test.talk", json!({}), meta)).await;
    assert_streamed(&response, &[warning.clone(), error.clone()]);

    // Both, interleaved as the handler emitted them; an integer token is echoed as one.
    let meta = json!({"progressToken": 9, "io.modelcontextprotocol/logLevel": "info"});
    let response = server.send(call_with_meta("test.talk", json!({}), meta)).await;
    let info = log("info", Some("talk"), json!("info note"));
    assert_streamed(
        &response,
        &[
            progress(json!(9), 1.0, Some("one")),
            info,
            progress(json!(9), 2.0, Some("two")),
            warning,
            error,
            progress(json!(9), 3.0, None),
        ],
    );

    // Asked, but nothing at that level was emitted: plain JSON.
    let meta = json!({"io.modelcontextprotocol/logLevel": "critical"});
    let quiet = server.send(call_with_meta("test.talk", json!({}), meta)).await;
    assert_eq!(quiet.header("content-type"), Some("application/json"), "{}", quiet.text());
    assert_eq!(quiet.assert_result()["structuredContent"], json!({"talked": true}));

    // A level that is not a level is refused before anything runs.
    let meta = json!({"io.modelcontextprotocol/logLevel": "verbose"});
    let data = server.send(call_with_meta("test.talk", json!({}), meta)).await.assert_error(
        400,
        Some(json!(1)),
        -32602,
        "Invalid params",
    );
    assert_eq!(data, json!({"invalid": ["/params/_meta/io.modelcontextprotocol~1logLevel"]}));
    let records = server.stop().await;
    assert_eq!(records.len(), 5, "one record per call that ran: {records:?}");
    assert!(records.iter().all(|r| r["outcome"] == "succeeded"));
}

#[tokio::test]
async fn a_session_hears_log_messages_only_after_set_level() {
    let server = start().await;
    let sid = open(&server).await;
    let call = || in_session(&sid, rpc("tools/call", json!({"name": "test.talk", "arguments": {}})));

    let before = server.send(call()).await;
    assert_eq!(before.header("content-type"), Some("application/json"), "{}", before.text());
    assert_eq!(before.assert_result()["structuredContent"], json!({"talked": true}));

    let set = server.send(in_session(&sid, rpc("logging/setLevel", json!({"level": "info"})))).await;
    assert_eq!(set.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}), "exactly {{}}");

    let after = server.send(call()).await;
    let result = assert_streamed(
        &after,
        &[
            log("info", Some("talk"), json!("info note")),
            log("warning", Some("talk"), json!("careful")),
            log("error", None, json!({"code": 7})),
        ],
    );
    assert_eq!(result["structuredContent"], json!({"talked": true}));
    for key in ["resultType", "ttlMs", "cacheScope"] {
        assert!(result.get(key).is_none(), "{key} in {result}");
    }

    // A progress token in the request's `_meta` adds progress, in emission order.
    let set = server.send(in_session(&sid, rpc("logging/setLevel", json!({"level": "error"})))).await;
    assert_eq!(set.assert_result(), json!({}));
    let with_token = in_session(
        &sid,
        rpc("tools/call", json!({"name": "test.talk", "arguments": {}, "_meta": {"progressToken": "p"}})),
    );
    let response = server.send(with_token).await;
    assert_streamed(
        &response,
        &[
            progress(json!("p"), 1.0, Some("one")),
            progress(json!("p"), 2.0, Some("two")),
            log("error", None, json!({"code": 7})),
            progress(json!("p"), 3.0, None),
        ],
    );

    let data = server.send(in_session(&sid, rpc("logging/setLevel", json!({"level": "verbose"})))).await.assert_error(
        200,
        Some(json!(1)),
        -32602,
        "Invalid params",
    );
    assert!(data["reason"].as_str().unwrap().starts_with("params.level must be a log level"), "{data}");
    server.stop().await;
}

// ---------------------------------------------------------------------------------------
// 7. Subscriptions
// ---------------------------------------------------------------------------------------

fn updated(uri: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
}

async fn publish(server: &TestServer, uris: &[&str]) {
    let result = server.send(Req::call("test.publish", json!({"uris": uris}))).await.assert_result();
    assert_eq!(result["structuredContent"], json!({"published": uris.len()}));
}

#[tokio::test]
async fn subscribe_needs_a_visible_resource() {
    let server = start().await;
    let sid = open(&server).await;
    let subscribe = |uri: &str| in_session(&sid, rpc("resources/subscribe", json!({"uri": uri})));
    for uri in ["test://text", "test://items/apple/v1"] {
        assert_eq!(server.send(subscribe(uri)).await.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    }
    let hidden = server.send(subscribe("test://secret")).await;
    let data = hidden.assert_error(200, Some(json!(1)), -32002, "Resource not found");
    assert_eq!(data, json!({"uri": "test://secret"}));
    let hidden_template = server.send(subscribe("secret://items/a/v1")).await;
    hidden_template.assert_error(200, Some(json!(1)), -32002, "Resource not found");
    let absent = server.send(subscribe("test://nope")).await;
    assert_eq!(absent.text(), hidden.text().replace("test://secret", "test://nope"));
    let unsubscribe = in_session(&sid, rpc("resources/unsubscribe", json!({"uri": "test://never"})));
    assert_eq!(server.send(unsubscribe).await.assert_result(), json!({}), "unsubscribing from nothing is fine");
    // Not a method of the modern era.
    server.send(Req::modern("resources/subscribe", json!({"uri": "test://text"}))).await.assert_error(
        404,
        Some(json!(1)),
        -32601,
        "Method not found: resources/subscribe",
    );
    let records = server.stop().await;
    let outcomes: Vec<(&str, &str)> =
        records.iter().map(|r| (r["capability"].as_str().unwrap(), r["outcome"].as_str().unwrap())).collect();
    assert_eq!(outcomes[..2], [("test://secret", "denied"), ("secret://items/a/v1", "denied")]);
    assert_eq!(outcomes[2], ("test://nope", "not_found"));
}

#[tokio::test]
async fn updates_reach_subscribed_sessions_only() {
    let server = start().await;
    let client = reqwest::Client::new();
    let (first, second) = (open(&server).await, open(&server).await);
    let subscribe = |sid: &str, uri: &str| in_session(sid, rpc("resources/subscribe", json!({"uri": uri})));
    server.send(subscribe(&first, "test://text")).await.assert_result();
    // The second session hears of the blob only: a marker published after the text.
    server.send(subscribe(&second, "test://blob")).await.assert_result();
    let mut first_stream = listen(&server, &client, &first).await;
    let mut second_stream = listen(&server, &client, &second).await;

    publish(&server, &["test://text", "test://blob"]).await;
    let limit = Duration::from_secs(5);
    assert_eq!(first_stream.next(limit).await, Some(updated("test://text")));
    assert_eq!(second_stream.next(limit).await, Some(updated("test://blob")), "the text update is not for it");

    // After unsubscribing, the first session hears only its new marker.
    let unsubscribe = in_session(&first, rpc("resources/unsubscribe", json!({"uri": "test://text"})));
    assert_eq!(server.send(unsubscribe).await.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    server.send(subscribe(&first, "test://blob")).await.assert_result();
    publish(&server, &["test://text", "test://blob"]).await;
    assert_eq!(first_stream.next(limit).await, Some(updated("test://blob")), "no update after unsubscribe");
    assert_eq!(second_stream.next(limit).await, Some(updated("test://blob")));

    // A template resource is subscribed to by its concrete URI.
    server.send(subscribe(&second, "test://items/apple/v2")).await.assert_result();
    publish(&server, &["test://items/apple/v3", "test://items/apple/v2"]).await;
    assert_eq!(second_stream.next(limit).await, Some(updated("test://items/apple/v2")));
    assert_eq!(first_stream.next(Duration::from_millis(100)).await, None, "nothing more for the first");
    server.stop().await;
}

#[tokio::test]
async fn updates_wait_in_the_queue_until_a_stream_opens() {
    let server = start().await;
    let client = reqwest::Client::new();
    let sid = open(&server).await;
    server.send(in_session(&sid, rpc("resources/subscribe", json!({"uri": "test://text"})))).await.assert_result();
    publish(&server, &["test://text"]).await;
    let mut stream = listen(&server, &client, &sid).await;
    assert_eq!(stream.next(Duration::from_secs(5)).await, Some(updated("test://text")));
    server.stop().await;
}

// ---------------------------------------------------------------------------------------
// 8. Disconnects
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_modern_client_that_leaves_mid_stream_cancels_the_handler() {
    let server = start().await;
    let key = "modern-leaves";
    let call = call_with_meta("test.linger", json!({"key": key, "ms": 5000}), json!({"progressToken": "t"}));
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let response = call.builder(&client, &server.url()).body(call.body.clone()).send().await.unwrap();
    let mut events = Events::new(response);
    let first = events.next(Duration::from_secs(5)).await.expect("a first progress event");
    assert_eq!(first["method"], "notifications/progress");
    let running = server.gauges();
    assert!(running.calls == 1 && running.streams == 1, "{running:?}");
    drop(events);
    drop(client);
    assert!(wait_for(&format!("cancelled:{key}"), Duration::from_secs(5)).await, "the handler saw its cancellation");
    assert!(!saw(&format!("finished:{key}")));
    assert!(server.settles().await, "nothing leaks: {:?}", server.gauges());
    let records = server.stop().await;
    let linger: Vec<&Value> = records.iter().filter(|r| r["capability"] == "test.linger").collect();
    assert_eq!(linger.len(), 1, "{records:?}");
    assert_eq!(linger[0]["outcome"], "cancelled");
    assert!(linger[0]["invocation_id"].is_string());
}

#[tokio::test]
async fn a_handshake_client_that_leaves_mid_call_does_not_cancel_it() {
    let server = start().await;
    let sid = open(&server).await;
    let key = "handshake-leaves";
    // Long enough for its start to be seen before it ends.
    let call =
        in_session(&sid, rpc("tools/call", json!({"name": "test.linger", "arguments": {"key": key, "ms": 1000}})));
    server.send_and_leave(&reqwest::Client::new(), &call).await;
    assert!(wait_for(&format!("finished:{key}"), Duration::from_secs(10)).await, "the handler ran to its end");
    assert!(!saw(&format!("cancelled:{key}")));
    assert!(server.settles().await, "nothing leaks: {:?}", server.gauges());
    let records = server.stop().await;
    let linger: Vec<&Value> = records.iter().filter(|r| r["capability"] == "test.linger").collect();
    assert_eq!(linger.len(), 1, "{records:?}");
    assert_eq!(linger[0]["outcome"], "succeeded");
}
