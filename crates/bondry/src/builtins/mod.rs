//! Builtin handlers: the demo set, and the registry through which a host program that
//! embeds Bondry adds its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use bondry_core::BoxFuture;
use bondry_core::capability::{Annotations, CapabilityKind};
use bondry_core::handler::{Answer, ContentBlock, Handler, HandlerRequest};
use serde_json::{Value, json};

pub mod conformance;

/// A handler with the defaults of the capability it serves; a config stanza naming the
/// handler may override the title, summary, schemas and annotations.
#[derive(Clone)]
pub struct Builtin {
    pub handler: Arc<dyn Handler>,
    pub kind: CapabilityKind,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Annotations,
    pub requires_client: Option<Value>,
    /// A resource's URI or a resource template's URI template.
    pub uri: Option<String>,
    pub mime_type: Option<String>,
}

impl Builtin {
    fn of(kind: CapabilityKind, handler: impl Handler, input_schema: Value) -> Self {
        Self {
            handler: Arc::new(handler),
            kind,
            title: None,
            summary: None,
            input_schema,
            output_schema: None,
            annotations: Annotations::default(),
            requires_client: None,
            uri: None,
            mime_type: None,
        }
    }

    /// A tool builtin with an input schema and nothing else set.
    pub fn tool(handler: impl Handler, input_schema: Value) -> Self {
        Self::of(CapabilityKind::Tool, handler, input_schema)
    }

    /// A prompt builtin; the schema's properties are its (string) arguments.
    pub fn prompt(handler: impl Handler, arguments_schema: Value) -> Self {
        Self::of(CapabilityKind::Prompt, handler, arguments_schema)
    }

    /// A static resource at `uri`.
    pub fn resource(handler: impl Handler, uri: &str) -> Self {
        Self { uri: Some(uri.to_owned()), ..Self::of(CapabilityKind::Resource, handler, json!({"type": "object"})) }
    }

    /// A resource template; the schema types the variables a matching URI yields.
    pub fn template(handler: impl Handler, uri_template: &str, variables_schema: Value) -> Self {
        Self {
            uri: Some(uri_template.to_owned()),
            ..Self::of(CapabilityKind::ResourceTemplate, handler, variables_schema)
        }
    }

    pub fn mime(mut self, mime_type: &str) -> Self {
        self.mime_type = Some(mime_type.to_owned());
        self
    }

    pub fn titled(mut self, title: &str, summary: &str) -> Self {
        self.title = Some(title.to_owned());
        self.summary = Some(summary.to_owned());
        self
    }

    pub fn output(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    pub fn annotated(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    pub fn requiring(mut self, client_capabilities: Value) -> Self {
        self.requires_client = Some(client_capabilities);
        self
    }
}

/// Builtin handlers by name.
#[derive(Clone, Default)]
pub struct Builtins {
    by_name: BTreeMap<String, Builtin>,
}

impl Builtins {
    /// The demo handlers of the embedded default.
    pub fn demo() -> Self {
        let mut builtins = Self::default();
        builtins.register("demo.echo", echo());
        builtins.register("demo.add", add());
        builtins.register("demo.forecast", forecast());
        builtins.register("admin.reset", reset());
        builtins
    }

    /// What the `bondry` binary serves: the demo handlers, and the fixtures of the
    /// official conformance suite under `conformance.*` (inert unless configured).
    pub fn bundled() -> Self {
        let mut builtins = Self::demo();
        conformance::register(&mut builtins);
        builtins
    }

    /// Adds or replaces the handler called `name`.
    pub fn register(&mut self, name: &str, builtin: Builtin) {
        self.by_name.insert(name.to_owned(), builtin);
    }

    pub fn get(&self, name: &str) -> Option<&Builtin> {
        self.by_name.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

/// A handler from a synchronous function of the arguments.
pub struct FnHandler<F>(pub F);

impl<F> Handler for FnHandler<F>
where
    F: Fn(&Value) -> Answer + Send + Sync + 'static,
{
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready((self.0)(&request.arguments)))
    }
}

const READ_ONLY: Annotations =
    Annotations { read_only: Some(true), destructive: Some(false), idempotent: Some(true), open_world: Some(false) };

fn echo() -> Builtin {
    Builtin::tool(
        FnHandler(|arguments: &Value| Answer::Value(json!({ "text": arguments["text"] }))),
        json!({
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 10000, "description": "Text to echo back"}},
            "required": ["text"],
            "additionalProperties": false
        }),
    )
    .titled("Echo", "Returns the text it is given, as structured content.")
    .output(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
    .annotated(READ_ONLY)
}

fn add() -> Builtin {
    // Bounded to the integers every JSON client represents exactly, so the sum always fits.
    let operand = json!({"type": "integer", "minimum": -9007199254740991_i64, "maximum": 9007199254740991_i64});
    Builtin::tool(
        FnHandler(|arguments: &Value| {
            // JSON Schema counts 2.0 as an integer; within the bounds a double is exact.
            let operand = |name: &str| arguments[name].as_f64().unwrap_or_default() as i64;
            Answer::Value(json!({ "sum": operand("a") + operand("b") }))
        }),
        json!({
            "type": "object",
            "properties": {"a": operand, "b": operand},
            "required": ["a", "b"],
            "additionalProperties": false
        }),
    )
    .titled("Add", "Adds two integers. Send a string to see an input-validation error.")
    .output(json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}))
    .annotated(READ_ONLY)
}

const SKIES: [&str; 3] = ["sunny", "cloudy", "rain"];

fn forecast() -> Builtin {
    Builtin::tool(
        FnHandler(|arguments: &Value| {
            let region = arguments["region"].as_str().unwrap_or_default();
            // Clamped here too: a configuration may replace the schema and its bounds.
            let days = arguments["days"].as_f64().unwrap_or(1.0).clamp(1.0, 7.0) as u64;
            let outlook: Vec<Value> =
                (1..=days).map(|day| json!({"day": day, "sky": SKIES[(day % 3) as usize]})).collect();
            Answer::Content {
                blocks: vec![ContentBlock::Text { text: format!("{days}-day outlook for {region}") }],
                structured: Some(json!({"region": region, "days": outlook})),
            }
        }),
        json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "minLength": 1, "maxLength": 64, "x-mcp-header": "Region"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7, "default": 1}
            },
            "required": ["region"],
            "additionalProperties": false
        }),
    )
    .titled("Forecast", "A made-up weather outlook; the region travels as the Mcp-Param-Region header.")
    .annotated(READ_ONLY)
}

fn reset() -> Builtin {
    Builtin::tool(
        FnHandler(|_: &Value| Answer::Value(json!({"reset": true}))),
        json!({"type": "object", "additionalProperties": false}),
    )
    .titled("Reset", "An administrative tool that anonymous callers are not granted.")
    .annotated(Annotations {
        read_only: Some(false),
        destructive: Some(true),
        idempotent: Some(true),
        open_world: Some(false),
    })
}
