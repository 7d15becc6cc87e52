//! Black-box tests of `subscriptions/listen` (2026-07-28): the acknowledgement and what it
//! honours, the subscription id on every message, list changes filtered by kind and by
//! what the principal can see, resource updates of followed URIs, the per-principal cap
//! on open streams, the graceful close at shutdown and after a swap that leaves a stream
//! nothing to follow, and the gauges.

use bondry_test_support as support;

use std::sync::Arc;
use std::time::Duration;

use bondry_core::capability::{CapabilityId, CapabilityKind, Descriptor};
use bondry_core::policy::{Grant, Policy, Subject};
use bondry_core::realm::Registry;
use bondry_core::registry::Registration;
use bondry_http_server::gauges::Reading;
use serde_json::{Value, json};
use support::{Req, TestConfig, TestServer, event_data, meta, table};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
const ALICE: &str = "alice-ticket";
/// How long a stream must stay silent for a test to say nothing was sent.
const QUIET: Duration = Duration::from_millis(300);
/// How long a message or the end of a stream may take to arrive.
const PATIENCE: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

/// The default test configuration (every tool granted to anonymous callers) plus
/// resources, a template and a prompt: `test.*` granted to anonymous callers, the resource
/// `hidden.secret` (`test://secret`) and any `admin.*` only to the `admin` role, which
/// `alice` holds (ticket `alice-ticket`) besides `demo`.
fn config() -> TestConfig {
    TestConfig::new()
        .role("admin", &["admin.*", "hidden.*"])
        .capability("test.text_resource", "resource", "test.text_resource", None)
        .capability("test.blob_resource", "resource", "test.blob_resource", None)
        .capability("test.items", "resource_template", "test.items", None)
        .capability("hidden.secret", "resource", "test.text_resource", Some("test://secret"))
        .capability("test.note", "prompt", "test.note", None)
        .principal("alice", &["demo", "admin"])
        .ticket(ALICE, "alice")
}

/// `text` with a cap on each principal's open streams.
fn capped(config: TestConfig, cap: i64) -> String {
    config.set("realms.default.limits.listen_streams_per_principal", cap).text()
}

// ---------------------------------------------------------------------------------------
// Requests and expected messages
// ---------------------------------------------------------------------------------------

/// A modern `subscriptions/listen` with request id `id` and `params.notifications` =
/// `filter` (left out when `None`).
fn listen_request(id: Value, filter: Option<Value>) -> Req {
    let mut params = json!({"_meta": meta()});
    if let Some(filter) = filter {
        params["notifications"] = filter;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": params});
    Req::modern("subscriptions/listen", json!({})).json(body)
}

fn as_alice(request: Req) -> Req {
    request.header("Authorization", &format!("Bearer {ALICE}"))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap()
}

/// `notifications/subscriptions/acknowledged` honouring exactly `notifications`.
fn ack(id: &Value, notifications: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": {SUBSCRIPTION_ID: id}, "notifications": notifications}
    })
}

/// A list-changed notification `method` on subscription `id`.
fn list_changed(method: &str, id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUBSCRIPTION_ID: id}}})
}

fn tools_changed(id: &Value) -> Value {
    list_changed("notifications/tools/list_changed", id)
}

fn updated(uri: &str, id: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": uri, "_meta": {SUBSCRIPTION_ID: id}}
    })
}

/// The graceful close: the listen request's own result.
fn closed(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}}})
}

/// Publishes `notifications/resources/updated` for `uris` through `test.publish`, as an
/// anonymous caller; returns once the handler has published.
async fn publish(server: &TestServer, uris: &[&str]) {
    let response = server.send(Req::call("test.publish", json!({"uris": uris}))).await;
    assert_eq!(response.assert_result()["structuredContent"], json!({"published": uris.len()}));
}

// ---------------------------------------------------------------------------------------
// Registry changes, as a host program makes them
// ---------------------------------------------------------------------------------------

/// The configured registration `from`, renamed `to` (and moved to `uri` if given).
fn renamed(registry: &Registry, from: &str, to: &str, uri: Option<&str>) -> Registration {
    let source = registry.configured().into_iter().find(|r| r.descriptor.id.as_str() == from).unwrap();
    let uri = uri.map(str::to_owned).or(source.descriptor.uri.clone());
    Registration {
        descriptor: Arc::new(Descriptor { id: CapabilityId::new(to).unwrap(), uri, ..(*source.descriptor).clone() }),
        handler: source.handler,
    }
}

/// Reloads `registry` with its configured capabilities that `keep` keeps, same policy.
fn reconfigure_keeping(registry: &Registry, keep: impl Fn(&Registration) -> bool) {
    let configured: Vec<Registration> = registry.configured().into_iter().filter(|r| keep(r)).collect();
    let policy = registry.snapshot().policy.clone();
    registry.reconfigure(configured, policy).unwrap();
}

// ---------------------------------------------------------------------------------------
// Reading a listen stream
// ---------------------------------------------------------------------------------------

#[derive(Debug)]
enum Read {
    Message(Value),
    /// The body ended cleanly.
    Ended,
    /// Nothing arrived in time.
    Quiet,
}

/// One open listen stream, read message by message (keep-alive comments skipped).
struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    async fn open(server: &TestServer, client: &reqwest::Client, request: Req) -> Self {
        let response = request.builder(client, &server.url()).body(request.body.clone()).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self { response, buffer: String::new() }
    }

    async fn read(&mut self, limit: Duration) -> Read {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            while let Some(at) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..at + 2).collect();
                if let Some(message) = event_data(&event) {
                    return Read::Message(message);
                }
            }
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return Read::Quiet,
                Ok(Ok(None)) => return Read::Ended,
                Ok(Ok(Some(chunk))) => self.buffer.push_str(std::str::from_utf8(&chunk).unwrap()),
                Ok(Err(error)) => panic!("the stream broke instead of ending: {error}"),
            }
        }
    }

    /// The next message, which must come within [`PATIENCE`].
    async fn message(&mut self) -> Value {
        match self.read(PATIENCE).await {
            Read::Message(message) => message,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// Nothing arrives for [`QUIET`], and the stream stays open.
    async fn quiet(&mut self) {
        match self.read(QUIET).await {
            Read::Quiet => {}
            other => panic!("expected silence, got {other:?}"),
        }
    }

    /// The stream ends cleanly, with no further message.
    async fn ends(&mut self) {
        match self.read(PATIENCE).await {
            Read::Ended => {}
            other => panic!("expected the end of the stream, got {other:?}"),
        }
    }
}

/// Opens a stream with `request` and checks that its first message is `expected_ack`.
async fn subscribed(server: &TestServer, client: &reqwest::Client, request: Req, expected_ack: Value) -> Stream {
    let mut stream = Stream::open(server, client, request).await;
    assert_eq!(stream.message().await, expected_ack);
    stream
}

// ---------------------------------------------------------------------------------------
// 1. The acknowledgement
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn the_acknowledgement_leaves_out_kinds_the_realm_does_not_have() {
    // The default test realm has tools only.
    let server = TestServer::start().await;
    let client = client();
    let id = json!("listen-a");
    let filter = json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourcesListChanged": true,
        "resourceSubscriptions": ["test://text"]
    });
    let mut stream = Stream::open(&server, &client, listen_request(id.clone(), Some(filter))).await;
    assert_eq!(stream.response.headers()["x-accel-buffering"], "no");
    assert_eq!(stream.message().await, ack(&id, json!({"toolsListChanged": true})));
    stream.quiet().await;
}

#[tokio::test]
async fn the_acknowledgement_keeps_only_readable_distinct_uris_and_true_flags() {
    let server = TestServer::with_config(&config().text()).await;
    let client = client();
    let uris = json!([
        "test://text",
        "test://nope",
        "test://secret",
        "test://text",
        7,
        "test://items/apple/v2",
        "test://items/apple/vx",
        "test://blob",
        "test://items/apple/v2"
    ]);
    let filter = json!({
        "toolsListChanged": true,
        "promptsListChanged": false,
        "resourcesListChanged": "yes",
        "resourceSubscriptions": uris
    });

    // An integer id; anonymous callers may not read test://secret.
    let id = json!(42);
    let honoured = json!({
        "toolsListChanged": true,
        "resourceSubscriptions": ["test://text", "test://items/apple/v2", "test://blob"]
    });
    let mut anonymous =
        subscribed(&server, &client, listen_request(id.clone(), Some(filter.clone())), ack(&id, honoured)).await;

    // A string id; alice's grants let her read test://secret.
    let id = json!("alice-1");
    let honoured = json!({
        "toolsListChanged": true,
        "resourceSubscriptions": ["test://text", "test://secret", "test://items/apple/v2", "test://blob"]
    });
    let mut alice =
        subscribed(&server, &client, as_alice(listen_request(id.clone(), Some(filter))), ack(&id, honoured)).await;

    // Every kind of list, every one the realm has.
    let id = json!(0);
    let all = json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true});
    let mut everything =
        subscribed(&server, &client, listen_request(id.clone(), Some(all.clone())), ack(&id, all)).await;

    // An empty filter is honoured as nothing at all.
    let id = json!("empty");
    let mut nothing =
        subscribed(&server, &client, listen_request(id.clone(), Some(json!({}))), ack(&id, json!({}))).await;

    for stream in [&mut anonymous, &mut alice, &mut everything, &mut nothing] {
        stream.quiet().await;
    }
}

#[tokio::test]
async fn a_filter_that_is_not_an_object_is_invalid_params_in_band() {
    let server = TestServer::with_config(&config().text()).await;
    for (filter, reason) in [
        (None, "params.notifications must be an object"),
        (Some(json!(null)), "params.notifications must be an object"),
        (Some(json!([])), "params.notifications must be an object"),
        (Some(json!("toolsListChanged")), "params.notifications must be an object"),
        (Some(json!(true)), "params.notifications must be an object"),
        (
            Some(json!({"resourceSubscriptions": "test://text"})),
            "params.notifications.resourceSubscriptions must be an array of URIs",
        ),
        (
            Some(json!({"toolsListChanged": true, "resourceSubscriptions": {"uri": "test://text"}})),
            "params.notifications.resourceSubscriptions must be an array of URIs",
        ),
    ] {
        // The error table's InvalidParams row: 200, -32602 `Invalid params`, data.reason.
        let response = server.send(listen_request(json!("bad"), filter.clone())).await;
        let data = response.assert_error(200, Some(json!("bad")), -32602, "Invalid params");
        assert_eq!(data, json!({"reason": reason}), "filter {filter:?}");
    }
    assert!(server.settles().await, "a refused listen holds no stream: {:?}", server.gauges());
}

#[tokio::test]
async fn a_realm_with_nothing_to_follow_does_not_serve_listen() {
    let text = TestConfig::new()
        .set("realms.empty.anonymous_roles", vec!["demo"])
        .push("realms.empty.roles", table([("name", "demo".into()), ("grants", vec!["demo.*"].into())]))
        .text();
    let server = TestServer::with_config(&text).await;
    let request = listen_request(json!(3), Some(json!({"toolsListChanged": true}))).path("/mcp/realm/empty");
    let response = server.send(request).await;
    response.assert_error(404, Some(json!(3)), -32601, "Method not found: subscriptions/listen");
}

// ---------------------------------------------------------------------------------------
// 2. List changes: the filter, the principal's view, the subscription id
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn list_changes_reach_only_streams_that_asked_and_can_see_the_change() {
    let server = TestServer::with_config(&config().text()).await;
    let registry = server.registry("default");
    let client = client();
    // Each anonymous stream also follows test://text: a published update is a marker that
    // proves nothing else was queued before it.
    let (tools_id, prompts_id, alice_id) = (json!("tools"), json!(17), json!("alice"));
    let mut tools = subscribed(
        &server,
        &client,
        listen_request(
            tools_id.clone(),
            Some(json!({"toolsListChanged": true, "resourceSubscriptions": ["test://text"]})),
        ),
        ack(&tools_id, json!({"toolsListChanged": true, "resourceSubscriptions": ["test://text"]})),
    )
    .await;
    let mut prompts = subscribed(
        &server,
        &client,
        listen_request(
            prompts_id.clone(),
            Some(json!({"promptsListChanged": true, "resourceSubscriptions": ["test://text"]})),
        ),
        ack(&prompts_id, json!({"promptsListChanged": true, "resourceSubscriptions": ["test://text"]})),
    )
    .await;
    let mut alice = subscribed(
        &server,
        &client,
        as_alice(listen_request(alice_id.clone(), Some(json!({"toolsListChanged": true})))),
        ack(&alice_id, json!({"toolsListChanged": true})),
    )
    .await;

    // A dynamic tool only admins see: alice hears of it, anonymous streams do not.
    registry.set_dynamic("tests", vec![renamed(&registry, "demo.echo", "admin.echo", None)]).unwrap();
    assert_eq!(alice.message().await, tools_changed(&alice_id));
    publish(&server, &["test://text"]).await;
    assert_eq!(tools.message().await, updated("test://text", &tools_id));
    assert_eq!(prompts.message().await, updated("test://text", &prompts_id));

    // A dynamic tool everyone sees: the tools streams hear of it, the prompts one does not.
    registry
        .set_dynamic(
            "tests",
            vec![
                renamed(&registry, "demo.echo", "admin.echo", None),
                renamed(&registry, "demo.echo", "demo.echo2", None),
            ],
        )
        .unwrap();
    assert_eq!(tools.message().await, tools_changed(&tools_id));
    assert_eq!(alice.message().await, tools_changed(&alice_id));
    publish(&server, &["test://text"]).await;
    assert_eq!(tools.message().await, updated("test://text", &tools_id));
    assert_eq!(prompts.message().await, updated("test://text", &prompts_id));

    // A reload that drops a configured tool: the same.
    reconfigure_keeping(&registry, |r| r.descriptor.id.as_str() != "test.scalar");
    assert_eq!(tools.message().await, tools_changed(&tools_id));
    assert_eq!(alice.message().await, tools_changed(&alice_id));

    // A dynamic prompt: only the prompts stream hears of it.
    registry.set_dynamic("prompts", vec![renamed(&registry, "test.note", "test.note2", None)]).unwrap();
    assert_eq!(prompts.message().await, list_changed("notifications/prompts/list_changed", &prompts_id));
    publish(&server, &["test://text"]).await;
    assert_eq!(tools.message().await, updated("test://text", &tools_id));
    assert_eq!(prompts.message().await, updated("test://text", &prompts_id));

    // A swap that changes nothing anyone sees (the same catalogue rebuilt) is not announced.
    reconfigure_keeping(&registry, |_| true);
    alice.quiet().await;
    tools.quiet().await;
    prompts.quiet().await;

    // A policy change alone: anonymous callers are granted admin.*, which Alice already
    // sees, so only the anonymous tools stream hears of it.
    let mut grants: Vec<Grant> = Vec::new();
    for (role, pattern) in
        [("demo", "demo.*"), ("demo", "test.*"), ("demo", "admin.*"), ("admin", "admin.*"), ("admin", "hidden.*")]
    {
        grants.push(Grant::parse(Subject::Role(role.into()), pattern, "mcp").unwrap());
    }
    registry.reconfigure(registry.configured(), Policy::new(grants)).unwrap();
    assert_eq!(tools.message().await, tools_changed(&tools_id));
    alice.quiet().await;
    prompts.quiet().await;
}

#[tokio::test]
async fn resource_list_changes_reach_streams_that_asked_for_them() {
    let server = TestServer::with_config(&config().text()).await;
    let registry = server.registry("default");
    let client = client();
    let (resources_id, tools_id, alice_id) = (json!(5), json!(6), json!(7));
    let mut resources = subscribed(
        &server,
        &client,
        listen_request(resources_id.clone(), Some(json!({"resourcesListChanged": true}))),
        ack(&resources_id, json!({"resourcesListChanged": true})),
    )
    .await;
    let mut tools = subscribed(
        &server,
        &client,
        listen_request(tools_id.clone(), Some(json!({"toolsListChanged": true}))),
        ack(&tools_id, json!({"toolsListChanged": true})),
    )
    .await;
    let mut alice = subscribed(
        &server,
        &client,
        as_alice(listen_request(alice_id.clone(), Some(json!({"resourcesListChanged": true})))),
        ack(&alice_id, json!({"resourcesListChanged": true})),
    )
    .await;

    // A resource only admins see.
    let secret = renamed(&registry, "hidden.secret", "hidden.other", Some("test://other"));
    registry.set_dynamic("tests", vec![secret.clone()]).unwrap();
    assert_eq!(alice.message().await, list_changed("notifications/resources/list_changed", &alice_id));
    resources.quiet().await;

    // A template everyone sees.
    let template = renamed(&registry, "test.items", "test.more_items", Some("test://more/{name}/v{version}"));
    registry.set_dynamic("tests", vec![secret, template]).unwrap();
    assert_eq!(resources.message().await, list_changed("notifications/resources/list_changed", &resources_id));
    assert_eq!(alice.message().await, list_changed("notifications/resources/list_changed", &alice_id));
    tools.quiet().await;
}

// ---------------------------------------------------------------------------------------
// 3. Resource updates
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn resource_updates_reach_only_streams_that_follow_the_uri() {
    let server = TestServer::with_config(&config().text()).await;
    let client = client();
    let (text_id, blob_id, alice_id) = (json!("text"), json!(2), json!("alice"));
    let mut text = subscribed(
        &server,
        &client,
        listen_request(
            text_id.clone(),
            Some(json!({"resourceSubscriptions": ["test://text", "test://items/apple/v2"]})),
        ),
        ack(&text_id, json!({"resourceSubscriptions": ["test://text", "test://items/apple/v2"]})),
    )
    .await;
    let mut blob = subscribed(
        &server,
        &client,
        listen_request(blob_id.clone(), Some(json!({"resourceSubscriptions": ["test://blob"]}))),
        ack(&blob_id, json!({"resourceSubscriptions": ["test://blob"]})),
    )
    .await;
    let mut alice = subscribed(
        &server,
        &client,
        as_alice(listen_request(alice_id.clone(), Some(json!({"resourceSubscriptions": ["test://secret"]})))),
        ack(&alice_id, json!({"resourceSubscriptions": ["test://secret"]})),
    )
    .await;

    publish(&server, &["test://text"]).await;
    assert_eq!(text.message().await, updated("test://text", &text_id));
    // URIs followed by nobody, or matching a followed one only in part, reach no one.
    publish(&server, &["test://nope", "test://items/apple/v3", "test://items/apple/v2/x"]).await;
    publish(&server, &["test://blob"]).await;
    assert_eq!(blob.message().await, updated("test://blob", &blob_id));
    publish(&server, &["test://items/apple/v2", "test://secret"]).await;
    assert_eq!(text.message().await, updated("test://items/apple/v2", &text_id));
    assert_eq!(alice.message().await, updated("test://secret", &alice_id));
    text.quiet().await;
    blob.quiet().await;
    alice.quiet().await;
}

// ---------------------------------------------------------------------------------------
// 4. The per-principal cap
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn four_streams_from_one_address_fit_under_the_default_cap() {
    let server = TestServer::start().await;
    let client = client();
    let mut streams = Vec::new();
    for n in 0..4 {
        let id = json!(n);
        let request = listen_request(id.clone(), Some(json!({"toolsListChanged": true})));
        streams.push(subscribed(&server, &client, request, ack(&id, json!({"toolsListChanged": true}))).await);
    }
    assert_eq!(server.gauges(), Reading { calls: 0, streams: 0, listens: 4 });
    // Every one of them hears of the same change, under its own id.
    let registry = server.registry("default");
    registry.set_dynamic("tests", vec![renamed(&registry, "demo.echo", "demo.echo2", None)]).unwrap();
    for (n, stream) in streams.iter_mut().enumerate() {
        assert_eq!(stream.message().await, tools_changed(&json!(n)));
    }
}

#[tokio::test]
async fn past_the_cap_a_listen_is_refused_until_a_stream_closes() {
    let server = TestServer::with_config(&capped(config(), 2)).await;
    let client = client();
    let filter = || Some(json!({"toolsListChanged": true}));
    let honoured = json!({"toolsListChanged": true});
    let first =
        subscribed(&server, &client, listen_request(json!(1), filter()), ack(&json!(1), honoured.clone())).await;
    let mut second =
        subscribed(&server, &client, listen_request(json!(2), filter()), ack(&json!(2), honoured.clone())).await;

    for id in [json!(3), json!("three")] {
        let refused = server.send(listen_request(id.clone(), filter())).await;
        refused.assert_error(429, Some(id), -32000, "Too many requests");
        assert_eq!(refused.header("retry-after"), Some("1"));
    }
    assert_eq!(server.gauges(), Reading { calls: 0, streams: 0, listens: 2 }, "a refused listen holds no stream");

    // The cap is per principal: alice may still listen from the same address.
    let alice = subscribed(
        &server,
        &client,
        as_alice(listen_request(json!("alice"), filter())),
        ack(&json!("alice"), honoured.clone()),
    )
    .await;

    // Closing one anonymous stream frees its slot as soon as the server notices.
    drop(first);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut reopened = loop {
        let request = listen_request(json!(4), filter());
        let response = request.builder(&client, &server.url()).body(request.body.clone()).send().await.unwrap();
        if response.status() == 200 {
            break Stream { response, buffer: String::new() };
        }
        assert_eq!(response.status(), 429);
        assert!(tokio::time::Instant::now() < deadline, "the closed stream's slot was not freed within {PATIENCE:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(reopened.message().await, ack(&json!(4), honoured));
    let refused = server.send(listen_request(json!(5), filter())).await;
    refused.assert_error(429, Some(json!(5)), -32000, "Too many requests");
    second.quiet().await;
    drop(alice);
}

// ---------------------------------------------------------------------------------------
// 5. and 6. The graceful close
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn shutdown_closes_every_stream_with_the_listen_result() {
    let server = TestServer::with_config(&config().text()).await;
    let client = client();
    let (string_id, integer_id) = (json!("bye"), json!(99));
    let mut first = subscribed(
        &server,
        &client,
        listen_request(string_id.clone(), Some(json!({"toolsListChanged": true}))),
        ack(&string_id, json!({"toolsListChanged": true})),
    )
    .await;
    let mut second = subscribed(
        &server,
        &client,
        listen_request(integer_id.clone(), Some(json!({"resourceSubscriptions": ["test://text"]}))),
        ack(&integer_id, json!({"resourceSubscriptions": ["test://text"]})),
    )
    .await;
    let read = async {
        let first_closed = first.message().await;
        first.ends().await;
        let second_closed = second.message().await;
        second.ends().await;
        (first_closed, second_closed)
    };
    let (_audit, (first_closed, second_closed)) = tokio::join!(server.stop(), read);
    assert_eq!(
        first_closed,
        json!({"jsonrpc": "2.0", "id": "bye", "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: "bye"}}})
    );
    assert_eq!(
        second_closed,
        json!({"jsonrpc": "2.0", "id": 99, "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: 99}}})
    );
}

#[tokio::test]
async fn a_swap_that_leaves_a_stream_nothing_to_follow_closes_it() {
    let server = TestServer::with_config(&config().text()).await;
    let registry = server.registry("default");
    let client = client();
    let (only_tools, tools_and_text, secret) = (json!("only-tools"), json!(8), json!("secret"));
    let mut emptied = subscribed(
        &server,
        &client,
        listen_request(only_tools.clone(), Some(json!({"toolsListChanged": true}))),
        ack(&only_tools, json!({"toolsListChanged": true})),
    )
    .await;
    let mut kept = subscribed(
        &server,
        &client,
        listen_request(
            tools_and_text.clone(),
            Some(json!({"toolsListChanged": true, "resourceSubscriptions": ["test://text"]})),
        ),
        ack(&tools_and_text, json!({"toolsListChanged": true, "resourceSubscriptions": ["test://text"]})),
    )
    .await;
    let mut alice = subscribed(
        &server,
        &client,
        as_alice(listen_request(secret.clone(), Some(json!({"resourceSubscriptions": ["test://secret"]})))),
        ack(&secret, json!({"resourceSubscriptions": ["test://secret"]})),
    )
    .await;
    assert_eq!(server.gauges(), Reading { calls: 0, streams: 0, listens: 3 });

    // Every tool goes: the stream that followed only tools is closed gracefully; the one
    // that also follows a resource hears of the change and stays.
    let configured = registry.configured();
    reconfigure_keeping(&registry, |r| r.descriptor.kind != CapabilityKind::Tool);
    assert_eq!(emptied.message().await, closed(&only_tools));
    emptied.ends().await;
    assert_eq!(kept.message().await, tools_changed(&tools_and_text));
    alice.quiet().await;

    // The only resource alice follows goes: her stream is closed too.
    reconfigure_keeping(&registry, |r| {
        r.descriptor.kind != CapabilityKind::Tool && r.descriptor.id.as_str() != "hidden.secret"
    });
    assert_eq!(alice.message().await, closed(&secret));
    alice.ends().await;
    kept.quiet().await;

    // The tools come back: the remaining stream hears of it.
    registry.reconfigure(configured, registry.snapshot().policy.clone()).unwrap();
    assert_eq!(kept.message().await, tools_changed(&tools_and_text));
    publish(&server, &["test://text"]).await;
    assert_eq!(kept.message().await, updated("test://text", &tools_and_text));
    assert_eq!(server.gauges(), Reading { calls: 0, streams: 0, listens: 1 });
    drop(kept);
    assert!(server.settles().await, "streams left open: {:?}", server.gauges());
}

#[tokio::test]
async fn a_stream_closed_by_a_swap_frees_its_slot() {
    let server = TestServer::with_config(&capped(config(), 1)).await;
    let registry = server.registry("default");
    let client = client();
    let id = json!(1);
    let mut stream = subscribed(
        &server,
        &client,
        listen_request(id.clone(), Some(json!({"toolsListChanged": true}))),
        ack(&id, json!({"toolsListChanged": true})),
    )
    .await;
    let refused = server.send(listen_request(json!(2), Some(json!({"promptsListChanged": true})))).await;
    refused.assert_error(429, Some(json!(2)), -32000, "Too many requests");
    reconfigure_keeping(&registry, |r| r.descriptor.kind != CapabilityKind::Tool);
    assert_eq!(stream.message().await, closed(&id));
    stream.ends().await;
    let id = json!(3);
    let _next = subscribed(
        &server,
        &client,
        listen_request(id.clone(), Some(json!({"promptsListChanged": true}))),
        ack(&id, json!({"promptsListChanged": true})),
    )
    .await;
}

// ---------------------------------------------------------------------------------------
// 7. Gauges
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn the_gauges_count_open_streams_and_return_to_zero() {
    let server = TestServer::with_config(&config().text()).await;
    let client = client();
    assert_eq!(server.gauges(), Reading { calls: 0, streams: 0, listens: 0 });
    let mut streams = Vec::new();
    for n in 0..3 {
        let id = json!(n);
        let request = listen_request(id.clone(), Some(json!({"toolsListChanged": true})));
        streams.push(subscribed(&server, &client, request, ack(&id, json!({"toolsListChanged": true}))).await);
    }
    assert_eq!(server.gauges(), Reading { calls: 0, streams: 0, listens: 3 });
    streams.pop();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while server.gauges().listens != 2 {
        assert!(tokio::time::Instant::now() < deadline, "a closed stream still counted: {:?}", server.gauges());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    streams.clear();
    assert!(server.settles().await, "streams left open: {:?}", server.gauges());
    assert_eq!(server.gauges(), Reading { calls: 0, streams: 0, listens: 0 });
}

#[tokio::test]
async fn the_gauges_return_to_zero_after_a_graceful_close() {
    let server = TestServer::start().await;
    let registry: Arc<Registry> = server.registry("default");
    let client = client();
    let id = json!("g");
    let mut stream = subscribed(
        &server,
        &client,
        listen_request(id.clone(), Some(json!({"toolsListChanged": true}))),
        ack(&id, json!({"toolsListChanged": true})),
    )
    .await;
    assert_eq!(server.gauges(), Reading { calls: 0, streams: 0, listens: 1 });
    reconfigure_keeping(&registry, |_| false);
    assert_eq!(stream.message().await, closed(&id));
    stream.ends().await;
    assert!(server.settles().await, "streams left open: {:?}", server.gauges());
}

// ---------------------------------------------------------------------------------------
// Edge cases
// ---------------------------------------------------------------------------------------

/// The listen queue holds 64 messages (`LISTEN_QUEUE`); list changes past it are dropped by
/// design (best effort), but the graceful close is the stream's last word.
#[tokio::test]
async fn the_graceful_close_after_a_swap_survives_a_full_queue() {
    let server = TestServer::start().await;
    let registry = server.registry("default");
    let client = client();
    let id = json!("full");
    let mut stream = subscribed(
        &server,
        &client,
        listen_request(id.clone(), Some(json!({"toolsListChanged": true}))),
        ack(&id, json!({"toolsListChanged": true})),
    )
    .await;
    // No await in between: on this single-threaded runtime the stream's body cannot run,
    // so every message stays queued.
    for n in 0..64 {
        let dynamic = if n % 2 == 0 { vec![renamed(&registry, "demo.echo", "demo.flip", None)] } else { Vec::new() };
        registry.set_dynamic("tests", dynamic).unwrap();
    }
    reconfigure_keeping(&registry, |_| false);
    for _ in 0..64 {
        assert_eq!(stream.message().await, tools_changed(&id));
    }
    match stream.read(PATIENCE).await {
        Read::Message(message) => assert_eq!(message, closed(&id)),
        other => panic!("the graceful close was lost: {other:?}"),
    }
    stream.ends().await;
}
