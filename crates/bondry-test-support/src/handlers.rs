//! The handlers the tests serve beside the demo: tools that publish, talk, linger and
//! ask; prompts and resources; and the events they record for tests to wait on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bondry::builtins::{Builtin, Builtins, FnHandler};
use bondry_core::BoxFuture;
use bondry_core::capability::CapabilityKind;
use bondry_core::handler::{
    Answer, ContentBlock, Handler, HandlerRequest, InputKind, InputRequest, LogLevel, Message, ResourceBody,
    ResourceContents, Role,
};
use serde_json::{Value, json};

use crate::{Items, NotePrompt};

/// The demo builtins and the test ones.
pub(crate) fn served_builtins() -> Builtins {
    let mut builtins = Builtins::demo();
    for name in test_builtins().names() {
        builtins.register(name, test_builtins().get(name).unwrap().clone());
    }
    builtins
}

/// Handlers only the tests register, through the same API a host program uses.
pub fn test_builtins() -> Builtins {
    let object = || json!({"type": "object"});
    let mut builtins = Builtins::default();
    builtins.register(
        "test.fail",
        Builtin::tool(FnHandler(|_: &Value| Answer::Failure { code: "boom".into(), detail: None }), object()),
    );
    builtins.register(
        "test.tool_error",
        Builtin::tool(
            FnHandler(|_: &Value| Answer::ToolError {
                code: "quota_exceeded".into(),
                retryable: true,
                content: None,
                detail: None,
            }),
            object(),
        ),
    );

    builtins.register(
        "test.bad_output",
        Builtin::tool(FnHandler(|_: &Value| Answer::Value(json!({"n": "seven"}))), object())
            .output(json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
    );
    builtins.register(
        "test.no_structured",
        Builtin::tool(
            FnHandler(|_: &Value| Answer::Content {
                blocks: vec![ContentBlock::Text { text: "t".into() }],
                structured: None,
            }),
            object(),
        )
        .output(object()),
    );
    builtins.register(
        "test.wrong_kind",
        Builtin::tool(
            FnHandler(|_: &Value| Answer::Messages {
                description: None,
                messages: vec![Message { role: Role::User, content: ContentBlock::Text { text: "x".into() } }],
            }),
            object(),
        ),
    );
    builtins.register(
        "test.input_required",
        Builtin::tool(
            FnHandler(|_: &Value| Answer::InputRequired { requests: Default::default(), state: None }),
            object(),
        ),
    );
    builtins.register(
        "test.elicits",
        Builtin::tool(FnHandler(|_: &Value| Answer::Value(json!({"ok": true}))), object())
            .requiring(json!({"elicitation": {"form": {}}})),
    );
    builtins.register("test.scalar", Builtin::tool(FnHandler(|_: &Value| Answer::Value(json!(42))), object()));
    builtins.register(
        "test.params",
        Builtin::tool(
            FnHandler(|arguments: &Value| Answer::Value(arguments.clone())),
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "x-mcp-header": "N"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                "opts": {"type": "object", "properties": {"name": {"type": "string", "x-mcp-header": "Name"}}}
            }}),
        ),
    );
    builtins.register("test.slow", Builtin::tool(Slow, object()));
    builtins.register(
        "test.asks",
        Builtin::tool(
            Asks,
            json!({"type": "object", "properties": {
                "kind": {"enum": ["sampling", "elicitation", "roots"]},
                "rounds": {"type": "integer", "minimum": 1, "maximum": 20}
            }}),
        ),
    );
    builtins
        .register("test.panics", Builtin::tool(FnHandler(|_: &Value| panic!("the handler's secret detail")), object()));
    register_resources_and_prompts(&mut builtins);
    builtins
}

/// The base64 `blob` of `test.blob_resource`: the bytes 00 01 02 FF.
pub const BLOB: &str = "AAEC/w==";

/// A handler whose answer is fixed.
fn fixed(answer: Answer) -> FnHandler<impl Fn(&Value) -> Answer + Send + Sync + 'static> {
    FnHandler(move |_: &Value| answer.clone())
}

/// The handlers behind `tests/resources_prompts.rs`: tools that publish, talk and linger;
/// prompts and resources, which `default_config` leaves out (they change what a realm
/// announces), so a test configures them itself.
fn register_resources_and_prompts(builtins: &mut Builtins) {
    let object = || json!({"type": "object"});
    builtins.register(
        "test.publish",
        Builtin::tool(
            Publish,
            json!({"type": "object", "properties": {"uris": {"type": "array", "items": {"type": "string"}}}}),
        ),
    );
    builtins.register("test.talk", Builtin::tool(Talk, object()));
    builtins.register(
        "test.linger",
        Builtin::tool(
            Linger,
            json!({"type": "object", "properties": {"key": {"type": "string"}, "ms": {"type": "integer"}},
                "required": ["key", "ms"]}),
        ),
    );
    builtins.register(
        "test.note",
        Builtin::prompt(
            NotePrompt,
            json!({
                "type": "object",
                "properties": {
                    "topic": {"type": "string", "title": "Topic", "description": "What the note is about"},
                    "style": {"type": "string", "enum": ["short", "long"], "description": "How long"}
                },
                "required": ["topic"]
            }),
        )
        .titled("Note", "Writes a note"),
    );
    builtins.register("test.failing_prompt", Builtin::prompt(SlowFailure, json!({"type": "object", "properties": {}})));
    builtins.register(
        "test.text_resource",
        Builtin::resource(
            fixed(Answer::Contents {
                items: vec![ResourceContents {
                    uri: String::new(),
                    mime_type: None,
                    body: ResourceBody::Text("hello, world".into()),
                }],
            }),
            "test://text",
        )
        .titled("Text", "A text resource")
        .mime("text/plain"),
    );
    builtins.register(
        "test.blob_resource",
        Builtin::resource(
            fixed(Answer::Contents {
                items: vec![ResourceContents {
                    uri: "test://blob".into(),
                    mime_type: Some("application/octet-stream".into()),
                    body: ResourceBody::Blob(BLOB.into()),
                }],
            }),
            "test://blob",
        ),
    );
    builtins
        .register("test.empty_resource", Builtin::resource(fixed(Answer::Contents { items: vec![] }), "test://empty"));
    builtins.register("test.failing_resource", Builtin::resource(SlowFailure, "test://failing"));
    builtins.register(
        "test.items",
        Builtin::template(
            Items,
            "test://items/{name}/v{version}",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}, "version": {"type": "integer", "minimum": 1}},
                "required": ["name", "version"]
            }),
        )
        .titled("Items", "An item at a version")
        .mime("application/json"),
    );
    register_asking_prompt_and_resource(builtins);
}

/// Things the handlers below saw, for tests to wait on: `cancelled:<key>`, `finished:<key>`.
static EVENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn record_event(event: String) {
    EVENTS.lock().unwrap_or_else(|poison| poison.into_inner()).push(event);
}

/// Whether a handler recorded `event`.
pub fn saw(event: &str) -> bool {
    EVENTS.lock().unwrap_or_else(|poison| poison.into_inner()).iter().any(|seen| seen == event)
}

/// Waits up to `limit` for a handler to record `event`.
pub async fn wait_for(event: &str, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while !saw(event) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Publishes `resource_updated` for each of `arguments.uris`, in order.
struct Publish;

impl Handler for Publish {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let uris: Vec<&str> =
            request.arguments["uris"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        for uri in &uris {
            request.publisher.resource_updated(uri);
        }
        let answer = Answer::Value(json!({"published": uris.len()}));
        Box::pin(std::future::ready(answer))
    }
}

/// Talks while it works, a few milliseconds apart: progress 1, 2, 3 of 3 and a log
/// message of each level from debug to error, then answers `{"talked": true}`.
struct Talk;

impl Handler for Talk {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(async move {
            let pause = || tokio::time::sleep(Duration::from_millis(5));
            let emitter = &request.emitter;
            emitter.progress(1.0, Some(3.0), Some("one".into()));
            emitter.log(LogLevel::Debug, None, json!("debug detail"));
            pause().await;
            emitter.log(LogLevel::Info, Some("talk".into()), json!("info note"));
            emitter.progress(2.0, Some(3.0), Some("two".into()));
            pause().await;
            emitter.log(LogLevel::Warning, Some("talk".into()), json!("careful"));
            emitter.log(LogLevel::Error, None, json!({"code": 7}));
            pause().await;
            emitter.progress(3.0, Some(3.0), None);
            Answer::Value(json!({"talked": true}))
        })
    }
}

/// Runs for `arguments.ms` milliseconds, reporting progress every 20 ms, then records
/// `finished:<key>` and answers. A watcher records `cancelled:<key>` if the call's
/// cancellation fires (within 10 s).
struct Linger;

impl Handler for Linger {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let key = request.arguments["key"].as_str().unwrap_or_default().to_owned();
        let ms = request.arguments["ms"].as_u64().unwrap_or_default();
        let cancellation = Arc::clone(&request.cancellation);
        let watched = key.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = cancellation.cancelled() => record_event(format!("cancelled:{watched}")),
                () = tokio::time::sleep(Duration::from_secs(10)) => {}
            }
        });
        Box::pin(async move {
            let started = tokio::time::Instant::now();
            let mut step = 0.0;
            while started.elapsed() < Duration::from_millis(ms) {
                request.emitter.progress(step, None, None);
                step += 1.0;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            record_event(format!("finished:{key}"));
            Answer::Value(json!({"lingered": ms}))
        })
    }
}

/// Fails after a short while with the stable code `upstream_down`.
struct SlowFailure;

impl Handler for SlowFailure {
    fn call(&self, _: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            Answer::Failure { code: "upstream_down".into(), detail: None }
        })
    }
}

/// Waits until cancelled, or answers after `arguments.ms` milliseconds (300 by default).
struct Slow;

impl Handler for Slow {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let ms = request.arguments["ms"].as_u64().unwrap_or(300);
        Box::pin(async move {
            tokio::select! {
                () = request.cancellation.cancelled() => Answer::Failure { code: "cancelled".into(), detail: None },
                () = tokio::time::sleep(Duration::from_millis(ms)) => Answer::Value(json!({"slept": true})),
            }
        })
    }
}

/// `test.asks`: asks the client for input of `kind` (sampling by default), one request per
/// round for `rounds` rounds (one by default), keeping the answers so far in its state;
/// then answers `{"answers": [...]}`.
struct Asks;

impl Handler for Asks {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let kind = match request.arguments["kind"].as_str() {
            Some("elicitation") => InputKind::Elicitation,
            Some("roots") => InputKind::Roots,
            _ => InputKind::Sampling,
        };
        let rounds = request.arguments["rounds"].as_u64().unwrap_or(1) as usize;
        let mut answers: Vec<Value> = match &request.retry {
            Some(retry) => {
                let mut so_far: Vec<Value> =
                    retry.state.as_ref().and_then(|state| state["answers"].as_array().cloned()).unwrap_or_default();
                so_far.extend(retry.responses.get("input").cloned());
                so_far
            }
            None => Vec::new(),
        };
        let answer = if answers.len() >= rounds {
            Answer::Value(json!({"answers": std::mem::take(&mut answers)}))
        } else {
            let params = match kind {
                InputKind::Sampling => json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": format!("round {}", answers.len() + 1)}}],
                    "maxTokens": 10
                }),
                InputKind::Elicitation => json!({
                    "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                }),
                InputKind::Roots => json!({}),
            };
            Answer::InputRequired {
                requests: std::collections::BTreeMap::from([("input".to_owned(), InputRequest { kind, params })]),
                state: Some(json!({"answers": answers})),
            }
        };
        Box::pin(std::future::ready(answer))
    }
}

/// `test.asks_prompt` (a prompt with an optional `topic`) and `test.asks_resource` (a
/// resource at `test://asks`), for `tests/mrtr.rs`; like the other prompts and resources,
/// not configured by `default_config`.
fn register_asking_prompt_and_resource(builtins: &mut Builtins) {
    builtins.register(
        "test.asks_prompt",
        Builtin::prompt(
            AsksOnce(CapabilityKind::Prompt),
            json!({"type": "object", "properties": {"topic": {"type": "string"}}}),
        ),
    );
    builtins.register("test.asks_resource", Builtin::resource(AsksOnce(CapabilityKind::Resource), "test://asks"));
}

/// Asks the client for one sampling message (request key `input`) with the state
/// `{"asked": true}`; called again with both that state and an answer, it answers the
/// answer's text: as one user message for a prompt, as the text contents of a resource.
/// Without the state it asks again.
struct AsksOnce(CapabilityKind);

impl Handler for AsksOnce {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let retry = request.retry.as_ref();
        let asked = retry.and_then(|retry| retry.state.as_ref()).is_some_and(|state| state["asked"] == true);
        let text = retry
            .and_then(|retry| retry.responses.get("input"))
            .and_then(|answer| answer["content"]["text"].as_str())
            .map(str::to_owned);
        let answer = match (asked, text) {
            (true, Some(text)) if self.0 == CapabilityKind::Prompt => Answer::Messages {
                description: None,
                messages: vec![Message { role: Role::User, content: ContentBlock::Text { text } }],
            },
            (true, Some(text)) => Answer::Contents {
                items: vec![ResourceContents { uri: String::new(), mime_type: None, body: ResourceBody::Text(text) }],
            },
            _ => Answer::InputRequired {
                requests: std::collections::BTreeMap::from([(
                    "input".to_owned(),
                    InputRequest {
                        kind: InputKind::Sampling,
                        params: json!({
                            "messages": [{"role": "user", "content": {"type": "text", "text": "which?"}}],
                            "maxTokens": 10
                        }),
                    },
                )]),
                state: Some(json!({"asked": true})),
            },
        };
        Box::pin(std::future::ready(answer))
    }
}
