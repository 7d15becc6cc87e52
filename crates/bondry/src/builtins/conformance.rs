//! The fixture handlers the official MCP conformance suite calls, under the names it
//! calls them by (`examples/conformance.toml` serves them). Each does exactly what its
//! scenario checks, and nothing a production handler would need.

use std::collections::BTreeMap;

use bondry_core::BoxFuture;
use bondry_core::capability::{Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::handler::{
    Answer, Completion, CompletionAnswer, CompletionQuery, ContentBlock, Handler, HandlerRequest, InputKind,
    InputRequest, LogLevel, Message, ResourceBody, ResourceContents, Role,
};
use serde_json::{Value, json};

use super::{Builtin, Builtins, FnHandler};

/// A 1×1 PNG.
const IMAGE_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4n8YAAAPNAWbDbP9aAAAAAElFTkSuQmCC";
/// A few samples of silent 8 kHz WAV.
const AUDIO_WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

fn text(text: &str) -> ContentBlock {
    ContentBlock::Text { text: text.to_owned() }
}

fn image() -> ContentBlock {
    ContentBlock::Image { data: IMAGE_PNG.to_owned(), mime_type: "image/png".to_owned() }
}

fn embedded(uri: &str, mime_type: &str, body: &str) -> ContentBlock {
    ContentBlock::Resource(ResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(mime_type.to_owned()),
        body: ResourceBody::Text(body.to_owned()),
    })
}

fn blocks(blocks: Vec<ContentBlock>) -> Answer {
    Answer::Content { blocks, structured: None }
}

fn user(content: ContentBlock) -> Message {
    Message { role: Role::User, content }
}

/// A handler whose answer is fixed.
fn fixed(answer: Answer) -> FnHandler<impl Fn(&Value) -> Answer + Send + Sync + 'static> {
    FnHandler(move |_: &Value| answer.clone())
}

/// Registers every fixture under `conformance.<name>`.
pub fn register(builtins: &mut Builtins) {
    let mut add = |name: &str, builtin: Builtin| builtins.register(&format!("conformance.{name}"), builtin);

    add(
        "simple_text",
        Builtin::tool(fixed(blocks(vec![text("This is a simple text response for testing.")])), no_arguments())
            .titled("Simple text", "Tests simple text content response"),
    );
    add(
        "image_content",
        Builtin::tool(fixed(blocks(vec![image()])), no_arguments())
            .titled("Image content", "Tests image content response"),
    );
    add(
        "audio_content",
        Builtin::tool(
            fixed(blocks(vec![ContentBlock::Audio { data: AUDIO_WAV.to_owned(), mime_type: "audio/wav".to_owned() }])),
            no_arguments(),
        )
        .titled("Audio content", "Tests audio content response"),
    );
    add(
        "embedded_resource",
        Builtin::tool(
            fixed(blocks(vec![embedded(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )])),
            no_arguments(),
        )
        .titled("Embedded resource", "Tests embedded resource content response"),
    );
    add(
        "multiple_content_types",
        Builtin::tool(
            fixed(blocks(vec![
                text("Multiple content types test:"),
                image(),
                embedded(
                    "test://mixed-content-resource",
                    "application/json",
                    &json!({"test": "data", "value": 123}).to_string(),
                ),
                ContentBlock::ResourceLink {
                    uri: "test://static-text".to_owned(),
                    name: "static-text".to_owned(),
                    mime_type: Some("text/plain".to_owned()),
                    description: Some("The static text resource".to_owned()),
                },
            ])),
            no_arguments(),
        )
        .titled("Multiple content types", "Tests response with multiple content types (text, image, resource)"),
    );
    add(
        "error_handling",
        Builtin::tool(
            fixed(Answer::ToolError {
                code: "intentional_error".to_owned(),
                retryable: false,
                content: Some(vec![text("This tool intentionally returns an error for testing")]),
                detail: None,
            }),
            no_arguments(),
        )
        .titled("Error handling", "Tests error response handling"),
    );

    add(
        "tool_with_logging",
        Builtin::tool(Talking { logs: true }, no_arguments())
            .titled("Tool with logging", "Tests tool that emits log messages during execution"),
    );
    add(
        "tool_with_progress",
        Builtin::tool(Talking { logs: false }, no_arguments())
            .titled("Tool with progress", "Tests tool that reports progress notifications"),
    );
    add(
        "logging_tool",
        Builtin::tool(LoggingTool, no_arguments())
            .titled("Logging tool", "Logs only to clients that asked for log messages"),
    );
    add(
        "streaming_elicitation",
        Builtin::tool(fixed(blocks(vec![text("Streaming complete")])), no_arguments())
            .titled("Streaming", "Answers on the request's own stream, with no request of its own"),
    );
    add(
        "missing_capability",
        Builtin::tool(fixed(blocks(vec![text("Success")])), no_arguments())
            .titled("Missing capability", "Needs the sampling client capability")
            .requiring(json!({"sampling": {}})),
    );
    add(
        "custom_header",
        Builtin::tool(
            FnHandler(|arguments: &Value| {
                blocks(vec![text(&format!("region={}", arguments["region"].as_str().unwrap_or_default()))])
            }),
            json!({
                "type": "object",
                "properties": {"region": {"type": "string", "description": "Region", "x-mcp-header": "Region"}},
                "required": ["region"]
            }),
        )
        .titled("Custom header", "Mirrors its region argument in the Mcp-Param-Region header"),
    );
    add(
        "json_schema_2020_12",
        Builtin::tool(
            FnHandler(|arguments: &Value| {
                blocks(vec![text(&format!("JSON Schema 2020-12 tool called with: {arguments}"))])
            }),
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
        )
        .titled("JSON Schema 2020-12", "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)"),
    );

    add(
        "sampling",
        Builtin::tool(
            Asking {
                kind: InputKind::Sampling,
                params: |arguments| {
                    json!({
                        "messages": [{"role": "user", "content": {"type": "text", "text": arguments["prompt"]}}],
                        "maxTokens": 100
                    })
                },
                answer: |response| {
                    format!("LLM response: {}", response["content"]["text"].as_str().unwrap_or_default())
                },
            },
            json!({
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
                "required": ["prompt"]
            }),
        )
        .titled("Sampling", "Asks the client's model for a completion of the prompt"),
    );
    add(
        "elicitation",
        Builtin::tool(
            Asking {
                kind: InputKind::Elicitation,
                params: |arguments| {
                    json!({
                        "message": arguments["message"],
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "username": {"type": "string", "description": "User's response"},
                                "email": {"type": "string", "description": "User's email address"}
                            },
                            "required": ["username", "email"]
                        }
                    })
                },
                answer: |response| {
                    format!("User response: action={}, content={}", response["action"], response["content"])
                },
            },
            json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "The message to show the user"}},
                "required": ["message"]
            }),
        )
        .titled("Elicitation", "Asks the user for a name and an email address"),
    );
    add(
        "elicitation_defaults",
        Builtin::tool(
            Asking {
                kind: InputKind::Elicitation,
                params: |_| {
                    json!({
                        "message": "Please review and update the form fields with defaults",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                                "age": {"type": "integer", "description": "User age", "default": 30},
                                "score": {"type": "number", "description": "User score", "default": 95.5},
                                "status": {"type": "string", "description": "User status",
                                    "enum": ["active", "inactive", "pending"], "default": "active"},
                                "verified": {"type": "boolean", "description": "Verification status", "default": true}
                            },
                            "required": []
                        }
                    })
                },
                answer: completed,
            },
            no_arguments(),
        )
        .titled("Elicitation defaults", "Asks for a form whose fields have defaults (SEP-1034)"),
    );
    add(
        "elicitation_enums",
        Builtin::tool(
            Asking {
                kind: InputKind::Elicitation,
                params: |_| {
                    let choices = |titles: [&str; 3]| {
                        ["value1", "value2", "value3"]
                            .iter()
                            .zip(titles)
                            .map(|(value, title)| json!({"const": value, "title": title}))
                            .collect::<Vec<_>>()
                    };
                    json!({
                        "message": "Please select options from the enum fields",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "untitledSingle": {"type": "string", "description": "Select one option",
                                    "enum": ["option1", "option2", "option3"]},
                                "titledSingle": {"type": "string", "description": "Select one option with titles",
                                    "oneOf": choices(["First Option", "Second Option", "Third Option"])},
                                "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                                    "enum": ["opt1", "opt2", "opt3"],
                                    "enumNames": ["Option One", "Option Two", "Option Three"]},
                                "untitledMulti": {"type": "array", "description": "Select multiple options",
                                    "minItems": 1, "maxItems": 3,
                                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                                "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                                    "minItems": 1, "maxItems": 3,
                                    "items": {"anyOf": choices(["First Choice", "Second Choice", "Third Choice"])}}
                            },
                            "required": []
                        }
                    })
                },
                answer: completed,
            },
            no_arguments(),
        )
        .titled("Elicitation enums", "Asks for a form with every kind of enum field (SEP-1330)"),
    );

    for (name, summary, round) in [
        ("input_required_elicitation", "MRTR: asks the user's name", mrtr_elicitation as Round),
        ("input_required_sampling", "MRTR: asks the client's model", mrtr_sampling),
        ("input_required_list_roots", "MRTR: asks the client's roots", mrtr_roots),
        ("input_required_request_state", "MRTR: keeps state between rounds", mrtr_request_state),
        ("input_required_multiple_inputs", "MRTR: asks three things at once", mrtr_multiple),
        ("input_required_multi_round", "MRTR: asks over three rounds", mrtr_multi_round),
        ("input_required_tampered_state", "MRTR: refuses a tampered state", mrtr_request_state),
        ("input_required_capabilities", "MRTR: asks only what the client can answer", mrtr_capabilities),
    ] {
        add(name, Builtin::tool(Rounds(round), no_arguments()).titled(name, summary));
    }
    add(
        "input_required_prompt",
        Builtin::prompt(Rounds(mrtr_prompt), no_arguments())
            .titled("Input-required prompt", "MRTR: prompt that requires elicitation input"),
    );

    add(
        "trigger_tool_change",
        Builtin::tool(Toggle::new(CapabilityKind::Tool, "test_dynamic_tool"), no_arguments())
            .titled("Trigger tool change", "Adds or removes the dynamic tool test_dynamic_tool"),
    );
    add(
        "trigger_prompt_change",
        Builtin::tool(Toggle::new(CapabilityKind::Prompt, "test_dynamic_prompt"), no_arguments())
            .titled("Trigger prompt change", "Adds or removes the dynamic prompt test_dynamic_prompt"),
    );

    add(
        "static_text",
        Builtin::resource(
            fixed(Answer::Contents {
                items: vec![ResourceContents {
                    uri: "test://static-text".to_owned(),
                    mime_type: Some("text/plain".to_owned()),
                    body: ResourceBody::Text("This is the content of the static text resource.".to_owned()),
                }],
            }),
            "test://static-text",
        )
        .titled("Static Text Resource", "A static text resource for testing")
        .mime("text/plain"),
    );
    add(
        "static_binary",
        Builtin::resource(
            fixed(Answer::Contents {
                items: vec![ResourceContents {
                    uri: "test://static-binary".to_owned(),
                    mime_type: Some("image/png".to_owned()),
                    body: ResourceBody::Blob(IMAGE_PNG.to_owned()),
                }],
            }),
            "test://static-binary",
        )
        .titled("Static Binary Resource", "A static binary resource (image) for testing")
        .mime("image/png"),
    );
    add(
        "watched_resource",
        Builtin::resource(
            fixed(Answer::Contents {
                items: vec![ResourceContents {
                    uri: "test://watched-resource".to_owned(),
                    mime_type: Some("text/plain".to_owned()),
                    body: ResourceBody::Text("Watched resource content".to_owned()),
                }],
            }),
            "test://watched-resource",
        )
        .titled("Watched Resource", "A resource whose updates subscribers hear of")
        .mime("text/plain"),
    );
    add(
        "template",
        Builtin::template(
            TemplateData,
            "test://template/{id}/data",
            json!({"type": "object", "properties": {"id": {"type": "string", "minLength": 1}}, "required": ["id"]}),
        )
        .titled("Resource Template", "A resource template with parameter substitution")
        .mime("application/json"),
    );

    add(
        "simple_prompt",
        Builtin::prompt(
            fixed(Answer::Messages {
                description: None,
                messages: vec![user(text("This is a simple prompt for testing."))],
            }),
            no_arguments(),
        )
        .titled("Simple Test Prompt", "A simple prompt without arguments"),
    );
    add(
        "prompt_with_arguments",
        Builtin::prompt(
            PromptWithArguments,
            json!({
                "type": "object",
                "properties": {
                    "arg1": {"type": "string", "description": "First test argument"},
                    "arg2": {"type": "string", "description": "Second test argument"}
                },
                "required": ["arg1", "arg2"]
            }),
        )
        .titled("Prompt With Arguments", "A prompt with required arguments"),
    );
    add(
        "prompt_with_embedded_resource",
        Builtin::prompt(
            FnHandler(|arguments: &Value| {
                let uri = arguments["resourceUri"].as_str().unwrap_or_default();
                Answer::Messages {
                    description: None,
                    messages: vec![
                        user(embedded(uri, "text/plain", "Embedded resource content for testing.")),
                        user(text("Please process the embedded resource above.")),
                    ],
                }
            }),
            json!({
                "type": "object",
                "properties": {"resourceUri": {"type": "string", "description": "URI of the resource to embed"}},
                "required": ["resourceUri"]
            }),
        )
        .titled("Prompt With Embedded Resource", "A prompt that includes an embedded resource"),
    );
    add(
        "prompt_with_image",
        Builtin::prompt(
            fixed(Answer::Messages {
                description: None,
                messages: vec![user(image()), user(text("Please analyze the image above."))],
            }),
            no_arguments(),
        )
        .titled("Prompt With Image", "A prompt that includes image content"),
    );
}

/// Asks the client for one input, then answers with what the client said.
struct Asking {
    kind: InputKind,
    params: fn(&Value) -> Value,
    answer: fn(&Value) -> String,
}

impl Handler for Asking {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let answer = match request.retry.as_ref().and_then(|retry| retry.responses.get("input")) {
            Some(response) => blocks(vec![text(&(self.answer)(response))]),
            None => {
                let input = InputRequest { kind: self.kind, params: (self.params)(&request.arguments) };
                Answer::InputRequired { requests: BTreeMap::from([("input".to_owned(), input)]), state: None }
            }
        };
        Box::pin(std::future::ready(answer))
    }
}

fn completed(response: &Value) -> String {
    format!("Elicitation completed: action={}, content={}", response["action"], response["content"])
}

/// One round of a multi-round-trip fixture: what to answer, given the request so far.
type Round = fn(&HandlerRequest) -> Answer;

/// A fixture answered round by round.
struct Rounds(Round);

impl Handler for Rounds {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready((self.0)(&request)))
    }
}

/// The client's answer to the request keyed `key`, when the retry carries one.
fn response<'r>(request: &'r HandlerRequest, key: &str) -> Option<&'r Value> {
    request.retry.as_ref()?.responses.get(key)
}

fn state_of(request: &HandlerRequest) -> Option<&Value> {
    request.retry.as_ref()?.state.as_ref()
}

fn ask(requests: Vec<(&str, InputKind, Value)>, state: Option<Value>) -> Answer {
    let requests =
        requests.into_iter().map(|(key, kind, params)| (key.to_owned(), InputRequest { kind, params })).collect();
    Answer::InputRequired { requests, state }
}

fn elicit(message: &str, field: &str, ty: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": ty}}, "required": [field]}
    })
}

fn sample(text: &str, max_tokens: u32) -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens})
}

/// The accepted content of an elicitation answer's `field`, as text.
fn accepted(answer: &Value, field: &str) -> String {
    match &answer["content"][field] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn mrtr_elicitation(request: &HandlerRequest) -> Answer {
    match response(request, "user_name") {
        Some(answer) => blocks(vec![text(&format!("Hello, {}!", accepted(answer, "name")))]),
        // Asked again when the answer is missing, as the pattern asks.
        None => ask(vec![("user_name", InputKind::Elicitation, elicit("What is your name?", "name", "string"))], None),
    }
}

fn mrtr_sampling(request: &HandlerRequest) -> Answer {
    match response(request, "sample_request") {
        Some(answer) => blocks(vec![text(&format!(
            "Sampling result: {}",
            answer["content"]["text"].as_str().unwrap_or("no response")
        ))]),
        None => ask(vec![("sample_request", InputKind::Sampling, sample("What is the capital of France?", 100))], None),
    }
}

fn mrtr_roots(request: &HandlerRequest) -> Answer {
    match response(request, "roots_request") {
        Some(answer) => {
            let roots = answer["roots"].as_array().map_or(0, Vec::len);
            blocks(vec![text(&format!("Found {roots} root(s)"))])
        }
        None => ask(vec![("roots_request", InputKind::Roots, json!({}))], None),
    }
}

fn mrtr_request_state(request: &HandlerRequest) -> Answer {
    match (response(request, "confirm"), state_of(request)) {
        (Some(_), Some(state)) if state["issued"] == true => blocks(vec![text("state-ok: requestState validated")]),
        _ => ask(
            vec![("confirm", InputKind::Elicitation, elicit("Please confirm", "ok", "boolean"))],
            Some(json!({"issued": true})),
        ),
    }
}

fn mrtr_multiple(request: &HandlerRequest) -> Answer {
    match (response(request, "user_name"), response(request, "greeting"), response(request, "client_roots")) {
        (Some(name), Some(greeting), Some(roots)) => blocks(vec![text(&format!(
            "Name: {}; Greeting: {}; Roots: {}",
            accepted(name, "name"),
            greeting["content"]["text"].as_str().unwrap_or_default(),
            roots["roots"].as_array().map_or(0, Vec::len)
        ))]),
        _ => ask(
            vec![
                ("user_name", InputKind::Elicitation, elicit("What is your name?", "name", "string")),
                ("greeting", InputKind::Sampling, sample("Generate a greeting", 50)),
                ("client_roots", InputKind::Roots, json!({})),
            ],
            Some(json!({"round": 1})),
        ),
    }
}

fn mrtr_multi_round(request: &HandlerRequest) -> Answer {
    let step = state_of(request).and_then(|state| state["step"].as_u64()).unwrap_or(0);
    match (step, response(request, "step1"), response(request, "step2")) {
        (1, Some(name), _) => ask(
            vec![("step2", InputKind::Elicitation, elicit("Step 2: What is your favorite color?", "color", "string"))],
            Some(json!({"step": 2, "name": accepted(name, "name")})),
        ),
        (2, _, Some(color)) => {
            let name = state_of(request).and_then(|state| state["name"].as_str()).unwrap_or_default();
            blocks(vec![text(&format!("Multi-round complete for {name} who likes {}", accepted(color, "color")))])
        }
        _ => ask(
            vec![("step1", InputKind::Elicitation, elicit("Step 1: What is your name?", "name", "string"))],
            Some(json!({"step": 1})),
        ),
    }
}

/// Asks only for what the request's client capabilities say the client can answer.
fn mrtr_capabilities(request: &HandlerRequest) -> Answer {
    if let Some(retry) = &request.retry {
        let keys: Vec<&str> = retry.responses.keys().map(String::as_str).collect();
        return blocks(vec![text(&format!("capabilities-ok: received {}", keys.join(",")))]);
    }
    let declared = |name: &str| request.client_capabilities.get(name).is_some_and(Value::is_object);
    let mut requests = Vec::new();
    if declared("elicitation") {
        requests.push(("elicit_input", InputKind::Elicitation, elicit("What is your name?", "name", "string")));
    }
    if declared("sampling") {
        requests.push(("sample_input", InputKind::Sampling, sample("Say hello", 50)));
    }
    if requests.is_empty() {
        return blocks(vec![text("No supported capabilities declared")]);
    }
    ask(requests, None)
}

fn mrtr_prompt(request: &HandlerRequest) -> Answer {
    match response(request, "user_context") {
        Some(answer) => Answer::Messages {
            description: None,
            messages: vec![user(text(&format!("Prompt with context: {}", accepted(answer, "context"))))],
        },
        None => ask(
            vec![(
                "user_context",
                InputKind::Elicitation,
                elicit("What context should the prompt use?", "context", "string"),
            )],
            None,
        ),
    }
}

/// Adds its dynamic capability when it is absent and removes it when present, through
/// the publisher: the list change reaches every stream that follows that kind.
struct Toggle {
    kind: CapabilityKind,
    id: &'static str,
    present: std::sync::atomic::AtomicBool,
}

impl Toggle {
    fn new(kind: CapabilityKind, id: &'static str) -> Self {
        Self { kind, id, present: std::sync::atomic::AtomicBool::new(false) }
    }
}

impl Handler for Toggle {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        // Called as the dynamic capability it published: it answers as one, changing nothing.
        if request.capability.as_str() == self.id {
            let answer = match self.kind {
                CapabilityKind::Prompt => {
                    Answer::Messages { description: None, messages: vec![user(text("A dynamic prompt"))] }
                }
                _ => blocks(vec![text("A dynamic tool")]),
            };
            return Box::pin(std::future::ready(answer));
        }
        let present = !self.present.fetch_xor(true, std::sync::atomic::Ordering::SeqCst);
        let dynamic = present.then(|| Descriptor {
            title: Some("Dynamic".into()),
            summary: Some("Added and removed by a trigger tool".into()),
            ..Descriptor::new(
                CapabilityId::new(self.id).expect("a valid id"),
                self.kind,
                no_arguments(),
                Binding { kind: "builtin".into(), target: String::new() },
            )
        });
        request.publisher.set_dynamic(dynamic.into_iter().collect());
        Box::pin(std::future::ready(blocks(vec![text("Mutation triggered")])))
    }
}

/// Talks while it works, 50 ms apart: three log messages, or progress 0, 50 and 100 of 100.
struct Talking {
    logs: bool,
}

impl Handler for Talking {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let logs = self.logs;
        Box::pin(async move {
            let steps = ["Tool execution started", "Tool processing data", "Tool execution completed"];
            for (step, message) in steps.into_iter().enumerate() {
                if step > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                if logs {
                    request.emitter.log(LogLevel::Info, None, json!(message));
                } else {
                    let done = 50.0 * step as f64;
                    request.emitter.progress(done, Some(100.0), Some(format!("Completed step {done} of 100")));
                }
            }
            let done = if logs { "Tool with logging executed successfully" } else { "Tool with progress completed" };
            blocks(vec![text(done)])
        })
    }
}

/// Logs once, which only a client that asked for log messages hears.
struct LoggingTool;

impl Handler for LoggingTool {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        request.emitter.log(LogLevel::Info, Some("conformance".into()), json!("Diagnostic trace logging activated"));
        Box::pin(std::future::ready(blocks(vec![text("Logging evaluated")])))
    }
}

/// `test://template/{id}/data`: the id, echoed as JSON; ids complete from a short list.
struct TemplateData;

impl Handler for TemplateData {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let id = request.arguments["id"].as_str().unwrap_or_default().to_owned();
        let body = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
        Box::pin(std::future::ready(Answer::Contents {
            items: vec![ResourceContents {
                uri: String::new(),
                mime_type: Some("application/json".to_owned()),
                body: ResourceBody::Text(body.to_string()),
            }],
        }))
    }

    fn complete(&self, _: HandlerRequest, query: CompletionQuery) -> BoxFuture<'static, CompletionAnswer> {
        Box::pin(std::future::ready(Ok(starting_with(&["1", "2", "3", "42"], &query.value))))
    }
}

/// `test_prompt_with_arguments`: both arguments, quoted back.
struct PromptWithArguments;

impl Handler for PromptWithArguments {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let argument = |name: &str| request.arguments[name].as_str().unwrap_or_default().to_owned();
        let text = format!("Prompt with arguments: arg1='{}', arg2='{}'", argument("arg1"), argument("arg2"));
        Box::pin(std::future::ready(Answer::Messages { description: None, messages: vec![user(self::text(&text))] }))
    }

    fn complete(&self, _: HandlerRequest, query: CompletionQuery) -> BoxFuture<'static, CompletionAnswer> {
        let values: &[&str] = match query.argument.as_str() {
            "arg1" => &["paris", "park", "party"],
            _ => &["alpha", "beta", "gamma"],
        };
        Box::pin(std::future::ready(Ok(starting_with(values, &query.value))))
    }
}

fn starting_with(values: &[&str], prefix: &str) -> Completion {
    let values: Vec<String> = values.iter().filter(|v| v.starts_with(prefix)).map(|v| (*v).to_owned()).collect();
    Completion { total: Some(values.len() as u64), has_more: Some(false), values }
}
