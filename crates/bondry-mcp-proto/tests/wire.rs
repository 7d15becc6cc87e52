//! Wire rules checked at the sans-IO boundary, from fixtures.
//!
//! Each file under `tests/wire/` is a JSON array of cases. A case states a request
//! (headers, a JSON or raw body), and the listener it reaches (`"all"`: every revision;
//! `"modern"`: 2026-07-28 only). It also states what must come back: the status, and for a
//! JSON-RPC answer its id, error code, message and data, or keys of its result. The request
//! goes through [`Adapter::admit`] and [`Adapter::receive`]; `"audit"` names the one
//! audit outcome the reply must bring (`null`: none), `"meta"` keys of the result's `_meta`. A dispatched call is driven
//! through its [`Conversation`] with an echoing handler. There is no socket, the clock is
//! fixed and randomness is counted, so every run is the same. What needs the runtime
//! (transport, authentication, streams, cancellation, shutdown) stays in the black-box
//! tests of `crates/bondry/tests`.
//!
//! A case with `"session": "<revision>"` runs inside a live handshake session of that
//! revision, opened by an `initialize` first (declaring `session_capabilities`): the
//! request carries its `Mcp-Session-Id` and no modern header or envelope. `"method"`
//! makes it a `GET` or `DELETE`; `"modern": true` sends a modern request in it.
//!
//! Cases reach the realm `default` (tools) unless `"realm": "content"` (resources, a
//! template and prompts) says otherwise.
//!
//! Headers default to what a well-formed modern request carries: the media types,
//! `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method` from the body, and `Mcp-Name` from
//! its `params.name` for `tools/call` and `prompts/get`, `params.uri` for `resources/read` (`"modern_headers": false` sends none of these, nor
//! the envelope). A case changes them with `set` (replace), `add`
//! (repeat), `without` (remove) and `bytes` (a value of raw Latin-1 bytes). A `body`
//! whose `params` lack `_meta` gets the standard envelope unless `"envelope": false`.

use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bondry_core::BoxFuture;
use bondry_core::audit::AuditRecord;
use bondry_core::capability::{Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::handler::{
    Answer, ContentBlock, Handler, HandlerRequest, Message, ResourceBody, ResourceContents, Role,
};
use bondry_core::policy::{Grant, Policy, Principal, PrincipalKind, Subject};
use bondry_core::realm::{Key, KeySet, RealmSnapshot};
use bondry_core::registry::{Catalogue, Lint, Registration};
use bondry_core::schema::SchemaBounds;
use bondry_core::telemetry::RequestOutcome;
use bondry_mcp_proto::lint::McpLint;
use bondry_mcp_proto::{Adapter, Conversation, Effect, Ended, Inbound, ListenerSettings, Next, Revision, Settle, Step};
use bondry_test_sans_io::handlers::{Items, NotePrompt};
use bondry_test_sans_io::{Quiet, SessionTable, TestRandom};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::{Map, Value, json};

/// The wire's fixed clock.
fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_785_000_000)
}

/// `demo.echo`: answers its `text` as structured content.
struct Echo;

impl Handler for Echo {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready(Answer::Value(json!({"text": request.arguments["text"]}))))
    }
}

/// A handler whose answer is fixed.
struct Fixed(Answer);

impl Handler for Fixed {
    fn call(&self, _: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready(self.0.clone()))
    }
}

/// A handler relaying `result` as an upstream answered it.
fn relayed(result: Value, tool_error: bool) -> Arc<dyn Handler> {
    Arc::new(Fixed(Answer::Relayed { result, tool_error }))
}

/// A handler that panics, with a detail that must never reach the caller.
struct Panics;

impl Handler for Panics {
    fn call(&self, _: HandlerRequest) -> BoxFuture<'static, Answer> {
        panic!("the handler's secret detail")
    }
}

/// The capability `id` of `kind` (at `uri`, for resources and templates) served by `handler`.
fn registration(
    id: &str,
    kind: CapabilityKind,
    uri: Option<&str>,
    input_schema: Value,
    handler: Arc<dyn Handler>,
) -> Registration {
    let binding = Binding { kind: "builtin".into(), target: id.into() };
    let descriptor = Descriptor {
        uri: uri.map(str::to_owned),
        ..Descriptor::new(CapabilityId::new(id).unwrap(), kind, input_schema, binding)
    };
    Registration { descriptor: Arc::new(descriptor), handler }
}

/// The realm `content`: resources, a template and prompts under `test.*` granted to every
/// user, and their `hidden.*` twins, granted to nobody.
fn content_realm() -> Arc<RealmSnapshot> {
    let entry = |id, kind, uri: Option<&str>, input_schema, handler| registration(id, kind, uri, input_schema, handler);
    let described = |mut registration: Registration, title: &str, summary: &str, mime_type: Option<&str>| {
        let descriptor = Arc::make_mut(&mut registration.descriptor);
        descriptor.title = Some(title.into());
        descriptor.summary = Some(summary.into());
        descriptor.mime_type = mime_type.map(str::to_owned);
        registration
    };
    let contents = |uri: &str, mime_type: Option<&str>, body: ResourceBody| -> Arc<dyn Handler> {
        let item = ResourceContents { uri: uri.into(), mime_type: mime_type.map(str::to_owned), body };
        Arc::new(Fixed(Answer::Contents { items: vec![item] }))
    };
    let failing =
        || -> Arc<dyn Handler> { Arc::new(Fixed(Answer::Failure { code: "upstream_down".into(), detail: None })) };
    let object = || json!({"type": "object"});
    let note_schema = json!({
        "type": "object",
        "properties": {
            "topic": {"type": "string", "title": "Topic", "description": "What the note is about"},
            "style": {"type": "string", "enum": ["short", "long"], "description": "How long"}
        },
        "required": ["topic"]
    });
    let items_schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1}, "version": {"type": "integer", "minimum": 1}},
        "required": ["name", "version"]
    });
    use CapabilityKind::{Prompt, Resource, ResourceTemplate};
    let text = contents("", None, ResourceBody::Text("hello, world".into()));
    let registrations = vec![
        described(
            entry("test.text_resource", Resource, Some("test://text"), object(), text.clone()),
            "Text",
            "A text resource",
            Some("text/plain"),
        ),
        entry(
            "test.blob_resource",
            Resource,
            Some("test://blob"),
            object(),
            contents("test://blob", Some("application/octet-stream"), ResourceBody::Blob("AAEC/w==".into())),
        ),
        entry(
            "test.empty_resource",
            Resource,
            Some("test://empty"),
            object(),
            Arc::new(Fixed(Answer::Contents { items: vec![] })),
        ),
        entry("test.failing_resource", Resource, Some("test://failing"), object(), failing()),
        described(
            entry(
                "test.items",
                ResourceTemplate,
                Some("test://items/{name}/v{version}"),
                items_schema.clone(),
                Arc::new(Items),
            ),
            "Items",
            "An item at a version",
            Some("application/json"),
        ),
        described(
            entry("test.note", Prompt, None, note_schema.clone(), Arc::new(NotePrompt)),
            "Note",
            "Writes a note",
            None,
        ),
        entry("test.failing_prompt", Prompt, None, json!({"type": "object", "properties": {}}), failing()),
        entry("hidden.secret", Resource, Some("test://secret"), object(), text),
        entry(
            "hidden.items",
            ResourceTemplate,
            Some("secret://items/{name}/v{version}"),
            items_schema,
            Arc::new(Items),
        ),
        described(entry("hidden.note", Prompt, None, note_schema, Arc::new(NotePrompt)), "Note", "Writes a note", None),
        entry(
            "test.relayed_prompt",
            Prompt,
            None,
            json!({"type": "object", "properties": {}}),
            relayed(
                json!({
                    "description": "the upstream's",
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                    "resultType": "incomplete",
                    "_meta": {"vendor.example/k": "v", "dev.bondry/hash": "forged"}
                }),
                false,
            ),
        ),
        entry(
            "test.relayed_resource",
            Resource,
            Some("test://relayed"),
            object(),
            relayed(
                json!({
                    "contents": [{"uri": "test://relayed", "text": "as read upstream", "x-extra": 1}],
                    "ttlMs": 60000,
                    "cacheScope": "public"
                }),
                false,
            ),
        ),
        entry(
            "test.relayed_nothing",
            Resource,
            Some("test://relayed-nothing"),
            object(),
            relayed(
                json!({
                    "contents": []
                }),
                false,
            ),
        ),
    ];
    let lints: [&dyn Lint; 1] = [&McpLint];
    let catalogue = Catalogue::build(1, registrations, &SchemaBounds::default(), &lints).unwrap();
    let grants = vec![Grant::parse(Subject::Role("user".into()), "test.*", "mcp").unwrap()];
    let keys = KeySet { active: Key { id: "k1".into(), secret: [7; 32] }, retired: Vec::new() };
    Arc::new(RealmSnapshot::new("content", catalogue, Policy::new(grants), keys))
}

/// The realm every case reaches: `demo.echo`, `demo.add` and the `test.*` tools granted to
/// every user, and `admin.reset`, granted to nobody.
fn realm() -> Arc<RealmSnapshot> {
    let tool = |id, input_schema, handler| registration(id, CapabilityKind::Tool, None, input_schema, handler);
    let with_output = |mut registration: Registration, schema: Value| {
        Arc::make_mut(&mut registration.descriptor).output_schema = Some(schema);
        registration
    };
    let object = || json!({"type": "object"});
    let fixed = |answer: Answer| -> Arc<dyn Handler> { Arc::new(Fixed(answer)) };
    let text = |text: &str| ContentBlock::Text { text: text.into() };
    let registrations = vec![
        tool(
            "demo.echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                   "additionalProperties": false}),
            Arc::new(Echo),
        ),
        tool(
            "demo.add",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]}),
            fixed(Answer::Value(json!({"sum": 0}))),
        ),
        tool("admin.reset", object(), fixed(Answer::Value(json!({"reset": true})))),
        tool("test.fail", object(), fixed(Answer::Failure { code: "boom".into(), detail: None })),
        tool(
            "test.tool_error",
            object(),
            fixed(Answer::ToolError { code: "quota_exceeded".into(), retryable: true, content: None, detail: None }),
        ),
        with_output(
            tool("test.bad_output", object(), fixed(Answer::Value(json!({"n": "seven"})))),
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        ),
        with_output(
            tool("test.no_structured", object(), fixed(Answer::Content { blocks: vec![text("t")], structured: None })),
            object(),
        ),
        tool(
            "test.wrong_kind",
            object(),
            fixed(Answer::Messages {
                description: None,
                messages: vec![Message { role: Role::User, content: text("x") }],
            }),
        ),
        tool(
            "test.input_required",
            object(),
            fixed(Answer::InputRequired { requests: Default::default(), state: None }),
        ),
        tool("test.panics", object(), Arc::new(Panics)),
        tool("test.scalar", object(), fixed(Answer::Value(json!(42)))),
        // As an upstream answered them, foreign keys and Bondry's own forged alike.
        tool(
            "test.relayed",
            object(),
            relayed(
                json!({
                    "content": [{"type": "text", "text": "from upstream", "annotations": {"priority": 1}}],
                    "structuredContent": 7,
                    "x-vendor": true,
                    "resultType": "incomplete",
                    "ttlMs": 5,
                    "_meta": {"dev.bondry/errorCode": "forged", "io.modelcontextprotocol/serverInfo": {"name": "upstream"},
                              "vendor.example/trace": "t-1"}
                }),
                false,
            ),
        ),
        tool(
            "test.relayed_error",
            object(),
            relayed(
                json!({
                    "content": [{"type": "text", "text": "the upstream's own failure"}], "isError": true
                }),
                true,
            ),
        ),
        tool("test.relayed_shapeless", object(), relayed(json!({"messages": []}), false)),
    ];
    let lints: [&dyn Lint; 1] = [&McpLint];
    let catalogue = Catalogue::build(1, registrations, &SchemaBounds::default(), &lints).unwrap();
    let grants =
        ["demo.*", "test.*"].map(|raw| Grant::parse(Subject::Role("user".into()), raw, "mcp").unwrap()).to_vec();
    let keys = KeySet { active: Key { id: "k1".into(), secret: [7; 32] }, retired: Vec::new() };
    Arc::new(RealmSnapshot::new("default", catalogue, Policy::new(grants), keys))
}

fn adapter(listener: &str) -> Adapter {
    let revisions = match listener {
        "all" => Revision::ALL.to_vec(),
        "modern" => vec![Revision::V2026_07_28],
        "2025-06-18" => vec![Revision::V2025_06_18],
        other => panic!("unknown listener {other:?}: use \"all\" or \"modern\""),
    };
    let settings = ListenerSettings {
        revisions,
        page_size: 200,
        list_ttl_ms: 60_000,
        server_version: "0.0.0-test".into(),
        session_lifetime: Duration::from_secs(3600),
    };
    Adapter::new(settings).unwrap()
}

/// The envelope of a well-formed modern request.
fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "wire-tests", "version": "0"}
    })
}

/// Opens a session for `case` (of its `session` revision, declaring its
/// `session_capabilities`) in `sessions`; its `Mcp-Session-Id`.
fn open_session(
    adapter: &Adapter,
    realm: &Arc<RealmSnapshot>,
    principal: &Principal,
    sessions: &SessionTable,
    case: &Value,
) -> String {
    let revision = case["session"].as_str().unwrap();
    let capabilities = case.get("session_capabilities").cloned().unwrap_or(json!({}));
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": revision, "capabilities": capabilities, "clientInfo": {"name": "w", "version": "0"}}});
    let body = serde_json::to_vec(&body).unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    let inbound = Inbound { method: &Method::POST, headers: &headers, body: &body };
    let Step::Reply(reply) =
        adapter.receive(inbound, realm, principal, sessions, now(), &mut TestRandom::new(200)).step
    else {
        panic!("initialize replies at once");
    };
    sessions.apply(reply.effect().unwrap_or_else(|| panic!("initialize opens a session: {case}")));
    reply.response().headers()["mcp-session-id"].to_str().unwrap().to_owned()
}

/// One case's request: its body and headers; `session` is the session it runs in.
fn request(case: &Value, session: Option<&str>) -> (Vec<u8>, HeaderMap) {
    let modern = match session {
        Some(_) => case.get("modern") == Some(&Value::Bool(true)),
        None => case.get("modern_headers") != Some(&Value::Bool(false)),
    };
    let mut body = case.get("body").cloned();
    if let Some(Value::Object(message)) = &mut body
        && modern
        && case.get("envelope") != Some(&Value::Bool(false))
        && let Some(Value::Object(params)) = message.get_mut("params")
        && !params.contains_key("_meta")
    {
        params.insert("_meta".into(), envelope());
    }
    let bytes = match (&body, case.get("raw")) {
        (Some(body), None) => serde_json::to_vec(body).unwrap(),
        (None, Some(Value::String(raw))) => raw.clone().into_bytes(),
        (None, None) if case.get("method").is_some() => Vec::new(),
        _ => panic!("a case has a `body` or a `raw` string: {case}"),
    };
    let mut headers = HeaderMap::new();
    let mut put = |name: &str, value: &str| {
        headers.insert(HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap());
    };
    put("content-type", "application/json");
    put("accept", "application/json, text/event-stream");
    if let Some(sid) = session {
        put("mcp-session-id", sid);
    }
    if modern {
        put("mcp-protocol-version", "2026-07-28");
        let method = body.as_ref().and_then(|b| b.get("method")).and_then(Value::as_str);
        if let Some(method) = method {
            put("mcp-method", method);
        }
        let param = |key: &str| body.as_ref().and_then(|b| b["params"].get(key)).and_then(Value::as_str);
        let name = match method {
            Some("tools/call" | "prompts/get") => param("name"),
            Some("resources/read") => param("uri"),
            _ => None,
        };
        if let Some(name) = name {
            put("mcp-name", name);
        }
    }
    let strings = |key: &str| case.get(key).and_then(Value::as_object).cloned().unwrap_or_default();
    let header = |name: &String| HeaderName::from_bytes(name.as_bytes()).unwrap();
    for (name, value) in strings("set") {
        headers.insert(header(&name), HeaderValue::from_str(value.as_str().unwrap()).unwrap());
    }
    for (name, value) in strings("add") {
        headers.append(header(&name), HeaderValue::from_str(value.as_str().unwrap()).unwrap());
    }
    for (name, value) in strings("bytes") {
        let latin1: Vec<u8> = value.as_str().unwrap().chars().map(|c| u8::try_from(u32::from(c)).unwrap()).collect();
        headers.insert(header(&name), HeaderValue::from_bytes(&latin1).unwrap());
    }
    for name in case.get("without").and_then(Value::as_array).into_iter().flatten() {
        headers.remove(name.as_str().unwrap());
    }
    (bytes, headers)
}

/// A handler's future, run to its end; the wire's handlers answer at once.
fn ready<T>(mut future: BoxFuture<'static, T>) -> T {
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("the wire's handlers answer at once"),
    }
}

/// What the adapter answers `case` with: the reply, or the call's reply once run.
fn answer(
    case: &Value,
    realm: &Arc<RealmSnapshot>,
    principal: &Principal,
) -> (http::Response<Bytes>, Vec<AuditRecord>) {
    let adapter = adapter(case.get("listener").and_then(Value::as_str).unwrap_or("all"));
    let sessions = SessionTable::default();
    let session = case.get("session").map(|_| open_session(&adapter, realm, principal, &sessions, case));
    let (body, headers) = request(case, session.as_deref());
    let method = match case.get("method").and_then(Value::as_str) {
        Some(method) => Method::from_bytes(method.as_bytes()).unwrap(),
        None => Method::POST,
    };
    if let Err(error) = adapter.admit(&method, &headers) {
        return (error.to_http_in(adapter.early_context(session.as_deref(), realm, &sessions, now())), Vec::new());
    }
    let rng = &mut TestRandom::new(0);
    let inbound = Inbound { method: &method, headers: &headers, body: &body };
    let reply = match adapter.receive(inbound, realm, principal, &sessions, now(), rng).step {
        Step::Reply(reply) => reply,
        Step::Dispatch(call) => {
            let mut conversation: Conversation = adapter.conversation(*call, Duration::from_secs(60));
            while let Next::Invoke = conversation.poll() {
                let quiet = Arc::new(Quiet);
                let request = conversation.call().handler_request(quiet.clone(), quiet.clone(), quiet);
                let outcome = ready(conversation.invoke(request, now()));
                conversation.handle_outcome(outcome, now(), rng);
            }
            match conversation.finish(now()) {
                Ended::Replied(reply) => reply,
                Ended::Cancelled(_) => panic!("a wire call is never cancelled: {case}"),
            }
        }
        Step::Listen(_) | Step::Subscribe(_) => panic!("a wire case opens no stream: {case}"),
    };
    let mut kept = Kept::default();
    (reply.settle(&mut kept), kept.records)
}

/// A reply's audit records, kept for the case to look at; its effect, let go.
#[derive(Default)]
struct Kept {
    records: Vec<AuditRecord>,
}

impl Settle for Kept {
    fn settled(&mut self, _: RequestOutcome) {}

    fn record(&mut self, record: AuditRecord) {
        self.records.push(record);
    }

    fn apply(&mut self, _: Effect) {}
}

/// Why `reply` is not what `case` expects, if it is not.
fn mismatch(case: &Value, (response, records): &(http::Response<Bytes>, Vec<AuditRecord>)) -> Option<String> {
    let expect = &case["expect"];
    if let Some(wanted) = expect.get("audit") {
        let outcomes: Vec<Value> = records.iter().map(|record| serde_json::to_value(record.outcome).unwrap()).collect();
        let expected: Vec<Value> = if wanted.is_null() { Vec::new() } else { vec![wanted.clone()] };
        if outcomes != expected {
            return Some(format!("audit outcomes {outcomes:?}, expected [{wanted}]"));
        }
    }
    let status = response.status().as_u16();
    if expect["status"] != json!(status) {
        return Some(format!("status {status}, expected {}", expect["status"]));
    }
    let body = response.body();
    if expect.get("empty") == Some(&Value::Bool(true)) {
        return (!body.is_empty()).then(|| format!("a body, expected none: {}", String::from_utf8_lossy(body)));
    }
    let message: Value = match serde_json::from_slice(body) {
        Ok(message) => message,
        Err(error) => return Some(format!("the body is not JSON ({error}): {}", String::from_utf8_lossy(body))),
    };
    if let Some(present) = expect.get("id_present").and_then(Value::as_bool)
        && message.get("id").is_some() != present
    {
        return Some(format!("an id present: {}, expected {present}; the answer: {message}", !present));
    }
    let check = |key: &str, got: &Value| {
        let wanted = expect.get(key)?;
        (wanted != got).then(|| format!("{key} {got}, expected {wanted}; the answer: {message}"))
    };
    let error = &message["error"];
    let found = [
        expect.get("id").and_then(|id| (id != &message["id"]).then(|| format!("id {}, expected {id}", message["id"]))),
        check("code", &error["code"]),
        check("message", &error["message"]),
        check("data", &error["data"]),
        check("reason", &error["data"]["reason"]),
    ];
    if let Some(found) = found.into_iter().flatten().next() {
        return Some(found);
    }
    if let Some(wanted) = expect.get("result_is")
        && wanted != &message["result"]
    {
        return Some(format!("result {}, expected {wanted}", message["result"]));
    }
    if let Some(wanted) = expect.get("body")
        && wanted != &message
    {
        return Some(format!("body {message}, expected {wanted}"));
    }
    for key in expect.get("result_absent").and_then(Value::as_array).into_iter().flatten() {
        let key = key.as_str().unwrap();
        if message["result"].get(key).is_some() {
            return Some(format!("result.{key} present, expected absent; the answer: {message}"));
        }
    }
    for part in expect.get("text_contains").and_then(Value::as_array).into_iter().flatten() {
        let text = message["result"]["content"][0]["text"].as_str().unwrap_or_default();
        if !text.contains(part.as_str().unwrap()) {
            return Some(format!("result text {text:?} does not contain {part}"));
        }
    }
    for (key, wanted) in expect.get("meta").and_then(Value::as_object).unwrap_or(&Map::new()) {
        let got = &message["result"]["_meta"][key];
        if got != wanted {
            return Some(format!("result._meta.{key} {got}, expected {wanted}; the answer: {message}"));
        }
    }
    for (key, wanted) in expect.get("result").and_then(Value::as_object).unwrap_or(&Map::new()) {
        let got = &message["result"][key];
        if got != wanted {
            return Some(format!("result.{key} {got}, expected {wanted}; the answer: {message}"));
        }
    }
    None
}

#[test]
fn every_fixture_is_answered_as_it_states() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire");
    let realms = [("default", realm()), ("content", content_realm())];
    let principal = Principal::new("alice", PrincipalKind::User, vec!["user".to_owned()]);
    let (mut cases, mut failures) = (0, Vec::new());
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|entry| entry.path()).collect();
    files.sort();
    for file in files.iter().filter(|file| file.extension().is_some_and(|ext| ext == "json")) {
        let text = std::fs::read_to_string(file).unwrap();
        let fixture: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for case in &fixture {
            cases += 1;
            let name = case["name"].as_str().unwrap_or("(unnamed)");
            let wanted = case.get("realm").and_then(Value::as_str).unwrap_or("default");
            let Some((_, realm)) = realms.iter().find(|(name, _)| *name == wanted) else {
                panic!("unknown realm {wanted:?} in {name}: use \"default\" or \"content\"");
            };
            if let Some(why) = mismatch(case, &answer(case, realm, &principal)) {
                failures.push(format!("{} / {name}: {why}", file.file_name().unwrap().to_string_lossy()));
            }
        }
    }
    assert!(cases >= 50, "the fixtures are read: {cases} cases");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases answered otherwise:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}
