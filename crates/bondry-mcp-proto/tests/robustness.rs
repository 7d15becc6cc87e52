//! A deterministic, randomized robustness test of the sans-IO adapter.
//!
//! Valid requests of every method, in both eras, are mutated at the JSON, text and header
//! level and handed to [`Adapter::receive`]. Whatever arrives must be answered cleanly: a
//! reply whose status is in the error table (or 200, 202, 204) and whose body, if any, is a
//! JSON-RPC message; or a step for the runtime. Planned calls are driven through their
//! `Conversation`, with canned outcomes or with what running them through the core
//! gives (schema validation of the arguments, then an echoing handler); every audit record
//! is serialised, as the runtime's sink would. A panic anywhere is a failure: bad input
//! gets an error, never a panic.
//!
//! Nothing here is random at run time: a small xorshift64* drives every choice, over a
//! fixed list of seeds and a bounded number of iterations. A failure names the seed, the
//! iteration, the setting and the exact input; once minimized, the input belongs in
//! `regression_cases_answer_cleanly`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Once};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bondry_core::BoxFuture;
use bondry_core::capability::{Annotations, Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::dispatch::Outcome;
use bondry_core::handler::{
    Answer, Completion, CompletionAnswer, CompletionQuery, ContentBlock, Handler, HandlerRequest, InputKind,
    InputRequest, LogLevel, Message, ResourceBody, ResourceContents, Role,
};
use bondry_core::policy::{Grant, Policy, Principal, PrincipalKind, Subject};
use bondry_core::realm::{Key, KeySet, RealmSnapshot};
use bondry_core::registry::{Catalogue, Lint, Registration};
use bondry_core::schema::{SchemaBounds, Violation, Violations};
use bondry_mcp_proto::envelope::{CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROGRESS_TOKEN, PROTOCOL_VERSION};
use bondry_mcp_proto::lint::McpLint;
use bondry_mcp_proto::{
    Adapter, Call, Csprng, Error, Inbound, ListenerSettings, LiveSession, Received, Reply, Revision, SessionLookup,
    Step, labels, sentinel, session,
};
use bondry_test_sans_io::{Quiet, TestRandom, complete};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------
// The random source.
// ---------------------------------------------------------------------------------------

/// The choices of the test, drawn from the tests' one random source.
struct Prng(TestRandom);

impl Prng {
    fn new(seed: u64) -> Self {
        Self(TestRandom::new(seed))
    }

    fn word(&mut self) -> u64 {
        self.0.word()
    }

    /// A number in `0..n`; `n` must not be zero.
    fn below(&mut self, n: usize) -> usize {
        (self.word() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.word() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut bytes = vec![0; len];
        self.0.fill(&mut bytes);
        bytes
    }

    /// Fewer than `max` random bytes.
    fn some_bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max);
        self.bytes(len)
    }

    /// Any `f64`, NaN and infinities included.
    fn float(&mut self) -> f64 {
        match self.below(4) {
            0 => f64::NAN,
            1 => *self.pick(&[f64::INFINITY, f64::NEG_INFINITY, -0.0, 1e308, 5e-324]),
            2 => self.below(1000) as f64 / 10.0,
            _ => f64::from_bits(self.word()),
        }
    }

    /// A string from the shapes that break parsers: empty, names the realm knows, broken
    /// percent-encodings, control characters, unicode, very long, sentinel-like.
    fn text(&mut self) -> String {
        match self.below(14) {
            0 => String::new(),
            1 => self.pick(NAMES).to_string(),
            2 => self.pick(PERCENT).to_string(),
            3 => (0..1 + self.below(8)).map(|_| char::from(self.below(32) as u8)).collect(),
            4 => self.pick(UNICODE).repeat(1 + self.below(3)),
            5 if self.chance(25) => "x".repeat(1_000 + self.below(20_000)),
            5 => "é🦀".repeat(1 + self.below(300)),
            6 => (0..self.below(40)).map(|_| char::from(b' ' + self.below(95) as u8)).collect(),
            7 => (0..1 + self.below(8)).filter_map(|_| char::from_u32(self.word() as u32 % 0x11_0000)).collect(),
            8 => self.pick(SENTINELS).to_string(),
            9 => self.pick(VERSIONS_AND_LEVELS).to_string(),
            10 => self.pick(NUMERIC_TEXT).to_string(),
            11 => self.uri(),
            12 => self.pick(KEYS).to_string(),
            _ => format!("{}{}", self.pick(NAMES), self.pick(UNICODE)),
        }
    }

    fn number(&mut self) -> Value {
        match self.below(5) {
            0 | 1 => {
                let pick = [
                    json!(0),
                    json!(-0.0),
                    json!(1),
                    json!(-1),
                    json!(0.5),
                    json!(1.5),
                    json!(42.0),
                    json!(1e308),
                    json!(-1e308),
                    json!(5e-324),
                    json!(1e21),
                    json!(1e38),
                    json!(9_007_199_254_740_991_i64),
                    json!(9_007_199_254_740_992_i64),
                    json!(9_007_199_254_740_993_i64),
                    json!(-9_007_199_254_740_992_i64),
                    json!(u64::MAX),
                    json!(i64::MIN),
                    json!(i64::MAX),
                ];
                self.pick(&pick).clone()
            }
            2 => Value::from(self.word() as i64),
            3 => Value::from(self.float()),
            _ => Value::from(self.below(100) as i64 - 50),
        }
    }

    /// A random JSON value, at most `depth` containers deep, now and then nested around
    /// the parser's recursion limit.
    fn value(&mut self, depth: usize) -> Value {
        if depth > 0 && self.chance(12) { self.nested() } else { self.shallow(depth) }
    }

    /// A random JSON value, at most `depth` containers deep: what a handler may answer
    /// (its values are not parsed from a client's body, so they are not depth-bounded).
    fn shallow(&mut self, depth: usize) -> Value {
        match self.below(if depth == 0 { 4 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(50)),
            2 => self.number(),
            3 => Value::String(self.text()),
            4 | 5 => {
                let mut items = Vec::new();
                for _ in 0..self.below(4) {
                    items.push(self.shallow(depth - 1));
                }
                Value::Array(items)
            }
            _ => {
                let mut object = Map::new();
                for _ in 0..self.below(4) {
                    let key = if self.chance(60) { self.pick(KEYS).to_string() } else { self.text() };
                    let value = self.shallow(depth - 1);
                    object.insert(key, value);
                }
                Value::Object(object)
            }
        }
    }

    /// Arrays and objects nested around serde_json's recursion limit of 128.
    fn nested(&mut self) -> Value {
        let depth = *self.pick(&[1, 8, 60, 120, 123, 124, 125, 126, 127, 128, 200]);
        let mut value = self.number();
        for level in 0..depth {
            value = if level % 3 == 0 { json!({ "k": value }) } else { json!([value]) };
        }
        value
    }

    /// A value of another JSON type than `current`.
    fn other_value(&mut self, current: &Value) -> Value {
        let kind = |value: &Value| std::mem::discriminant(value);
        for _ in 0..8 {
            let candidate = self.value(2);
            if kind(&candidate) != kind(current) {
                return candidate;
            }
        }
        Value::Null
    }

    fn id(&mut self) -> Value {
        match self.below(6) {
            0 => json!(self.below(1000)),
            1 => json!("req-1"),
            2 => json!(""),
            3 => json!(-9_007_199_254_740_991_i64),
            4 => json!("🦀"),
            _ => json!(1),
        }
    }

    /// A resource URI: the realm's, its templates' (with good and broken variables), others.
    fn uri(&mut self) -> String {
        match self.below(11) {
            0 => "test://static/one".into(),
            1 => "test://static/caf%C3%A9?x=1#f".into(),
            2 | 3 => format!("test://items/{}", self.pick(ID_TEXTS)),
            4 => format!("test://num/{}/{}", self.pick(NUM_TEXTS), self.pick(FLAG_TEXTS)),
            5 => format!("file:///{}", self.pick(PATHS)),
            6 => format!("x://{}", self.pick(HOSTS)),
            7 => "test://hidden/1".into(),
            8 => format!("test://items/{}", self.pick(PERCENT)),
            9 => format!("test://items/{}", self.pick(UNICODE)),
            _ => self.pick(TEMPLATES).to_string(),
        }
    }

    /// A `requestState` that does not open: garbage, or a well-formed token that was
    /// never sealed under the realm's keys.
    fn state_token(&mut self) -> String {
        let header = |g: &mut Self| {
            let kid = *g.pick(&["k2", "k1", "k0", ""]);
            let alg = *g.pick(&["dir", "dir", "none"]);
            URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}","enc":"A256GCM","kid":"{kid}"}}"#))
        };
        match self.below(8) {
            0 => {
                let len = self.below(200);
                URL_SAFE_NO_PAD.encode(self.bytes(len))
            }
            1 | 2 => {
                let iv_len = *self.pick(&[12, 12, 0, 11, 13]);
                let tag_len = *self.pick(&[16, 16, 0, 15]);
                let ciphertext_len = self.below(300);
                format!(
                    "{}..{}.{}.{}",
                    header(self),
                    URL_SAFE_NO_PAD.encode(self.bytes(iv_len)),
                    URL_SAFE_NO_PAD.encode(self.bytes(ciphertext_len)),
                    URL_SAFE_NO_PAD.encode(self.bytes(tag_len))
                )
            }
            3 => format!("{}.x.{}.{}.{}.", header(self), self.text(), self.text(), self.text()),
            4 => "....".into(),
            5 if self.chance(20) => "A".repeat(70_000),
            5 => STANDARD.encode(self.bytes(64)),
            6 => format!("{}......", header(self)),
            _ => self.text(),
        }
    }

    fn cursor(&mut self, pools: &Pools) -> Value {
        match self.below(8) {
            0 | 1 if !pools.cursors.is_empty() => json!(self.pick(&pools.cursors).clone()),
            2 if !pools.cursors.is_empty() => {
                let mut cursor = self.pick(&pools.cursors).clone().into_bytes();
                let at = self.below(cursor.len().max(1));
                if let Some(byte) = cursor.get_mut(at) {
                    *byte = *self.pick(b"AZaz09-_=+/.");
                }
                json!(String::from_utf8_lossy(&cursor))
            }
            3 => {
                let inner = json!({"v": self.value(1), "after": self.value(1)});
                json!(URL_SAFE_NO_PAD.encode(inner.to_string()))
            }
            4 => {
                let len = self.below(100);
                json!(URL_SAFE_NO_PAD.encode(self.bytes(len)))
            }
            5 => {
                let len = self.below(100);
                json!(STANDARD.encode(self.bytes(len)))
            }
            6 => json!(URL_SAFE_NO_PAD.encode(r#"{"v":"000000000000000000000000","after":"t.echo","v":1}"#)),
            _ => json!(self.text()),
        }
    }
}

const NAMES: &[&str] = &[
    "t.echo",
    "t.ask",
    "t.plain",
    "h.secret",
    "p.greet",
    "p.needs",
    "h.prompt",
    "r.static",
    "r.items",
    "nope",
    "demo.echo",
];
const KEYS: &[&str] = &[
    "_meta",
    "name",
    "uri",
    "arguments",
    "cursor",
    "requestState",
    "inputResponses",
    "ref",
    "argument",
    "context",
    "notifications",
    "resourceSubscriptions",
    "toolsListChanged",
    "level",
    "protocolVersion",
    "capabilities",
    "clientInfo",
    "requestId",
    "id",
    "jsonrpc",
    "method",
    "params",
    "result",
    "error",
    "type",
    "value",
    "region",
    "count",
    "dry",
    "opts",
    "zone",
    "text",
    "style",
    "progressToken",
    "traceparent",
    "_mcp",
    "_mcpX",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/logLevel",
    "elicitation",
    "sampling",
    "roots",
];
const PERCENT: &[&str] = &["%", "%G1", "%FF", "%C3", "%e9%", "%%", "%2", "%C3%A9", "%ED%A0%80", "%00", "%F4%90%80%80"];
const UNICODE: &[&str] =
    &["é", "日本語", "🦀", "\u{feff}", "\u{2028}", "\u{fffd}", "\u{10ffff}", "\u{0}", "\u{7f}", "a\u{301}"];
const SENTINELS: &[&str] = &[
    "=?base64?YQ?=",
    "=?base64?YR==?=",
    "=?base64?/w==?=",
    "=?base64?YQ-_?=",
    "=?base64?Y Q==?=",
    "=?base64?*===?=",
    "=?base64?",
    "=?base64??=",
    "=?base64?=?=",
    "=?BASE64?ZXU=?=",
    "=?base64?ZXU=?=?=",
    "=?base64?wA==?=",
    "=?base64?7aCA?=",
    "=?base64?AA==?=",
    "=?base64?ZXU=?=",
    "=?base64?dC5lY2hv?=",
    " =?base64?ZXU=?= ",
];
const VERSIONS_AND_LEVELS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "1900-01-01",
    "2026-07-28 ",
    "debug",
    "emergency",
    "verbose",
    "ref/prompt",
    "ref/resource",
];
const NUMERIC_TEXT: &[&str] =
    &["42", "-7", "42.0", "42.", "1e3", "+1", "0x2a", "-", "--5", "99999999999999999999999999999999999999999", "-0"];
const TOOLS: &[&str] = &["t.echo", "t.echo", "t.echo", "t.ask", "t.plain", "h.secret", "nope"];
const PROMPTS: &[&str] = &["p.greet", "p.greet", "p.needs", "h.prompt", "nope"];
const TEMPLATES: &[&str] = &[
    "test://items/{id}",
    "test://num/{n}/{flag}",
    "file:///{+path}",
    "x://{host}{.tld}{/seg}{#frag}",
    "test://hidden/{x}",
    "test://nope/{x}",
];
const ID_TEXTS: &[&str] =
    &["42", "a%20b", "caf%C3%A9", "%", "%G1", "%FF", "%C3", "%e9%", "", "a/b", "%00", "%2F", "~._-", "%ED%A0%80"];
const NUM_TEXTS: &[&str] =
    &["42", "-7", "0", "99999999999999999999", "-9223372036854775809", "1.5", "1e3", "x", "", "%34%32", "NaN"];
const FLAG_TEXTS: &[&str] = &["true", "false", "maybe", "", "TRUE", "%74rue"];
const PATHS: &[&str] = &["a/b/c.txt", "%2e%2e/etc/passwd", "", "%FF%FE", "a?b#c", "[::1]", "%"];
const HOSTS: &[&str] = &["example.org", "example.org/seg#frag", "a.b.c", "%ff.%fe/%zz#%", "h/one/two#x", "", ".", "#"];
const METHODS: &[&str] = &[
    "server/discover",
    "tools/list",
    "tools/call",
    "tools/call",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/read",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "prompts/get",
    "prompts/get",
    "completion/complete",
    "completion/complete",
    "subscriptions/listen",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "initialize",
    "nope/nothing",
];

// ---------------------------------------------------------------------------------------
// The world: realms, principals, adapters and session tables.
// ---------------------------------------------------------------------------------------

/// A handler answering its arguments back in the shape its capability's kind allows.
struct Echo(CapabilityKind);

impl Handler for Echo {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let text = request.arguments.to_string();
        let answer = match self.0 {
            CapabilityKind::Tool => Answer::Value(request.arguments),
            CapabilityKind::Prompt => Answer::Messages {
                description: None,
                messages: vec![Message { role: Role::User, content: ContentBlock::Text { text } }],
            },
            CapabilityKind::Resource | CapabilityKind::ResourceTemplate => Answer::Contents {
                items: vec![ResourceContents { uri: String::new(), mime_type: None, body: ResourceBody::Text(text) }],
            },
        };
        Box::pin(std::future::ready(answer))
    }

    fn complete(&self, _: HandlerRequest, query: CompletionQuery) -> BoxFuture<'static, CompletionAnswer> {
        let values = vec![query.value, query.argument];
        Box::pin(std::future::ready(Ok(Completion { values, total: Some(2), has_more: Some(false) })))
    }
}

/// Runs a planned call through the core as the runtime would: input validation against
/// the capability's schema, then the handler (or completion hook), which answers at once.
fn invoked(call: &Call) -> Outcome {
    let quiet = Arc::new(Quiet);
    let request = call.handler_request(quiet.clone(), quiet.clone(), quiet);
    let mut future = call.invoke(request);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => Outcome::Failed { code: "pending".into() },
    }
}

fn descriptor(id: &str, kind: CapabilityKind, uri: Option<&str>, input_schema: Value) -> Descriptor {
    let resource = matches!(kind, CapabilityKind::Resource | CapabilityKind::ResourceTemplate);
    Descriptor {
        title: Some(format!("Title of {id}")),
        summary: Some("A capability under test".into()),
        uri: uri.map(str::to_owned),
        mime_type: resource.then(|| "text/plain".to_owned()),
        ..Descriptor::new(
            CapabilityId::new(id).unwrap(),
            kind,
            input_schema,
            Binding { kind: "builtin".into(), target: id.into() },
        )
    }
}

/// Tools (one mirroring arguments into `Mcp-Param-*` headers), prompts with arguments, a
/// static resource, resource templates of every operator, and one of each hidden.
fn registrations() -> Vec<Registration> {
    use CapabilityKind::*;
    let echo = Descriptor {
        output_schema: Some(json!({"type": "object"})),
        annotations: Annotations { read_only: Some(true), ..Annotations::default() },
        audit_arguments: true,
        ..descriptor(
            "t.echo",
            Tool,
            None,
            json!({"type": "object", "required": ["text"], "properties": {
                "text": {"type": "string"},
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
                "opts": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}}
            }}),
        )
    };
    let ask = Descriptor {
        requires_client: Some(json!({"elicitation": {"form": {}}, "sampling": {}})),
        ..descriptor("t.ask", Tool, None, json!({"type": "object"}))
    };
    let plain = descriptor("t.plain", Tool, None, json!({"type": "object", "additionalProperties": false}));
    let secret = descriptor("h.secret", Tool, None, json!({"type": "object"}));
    let greet = descriptor(
        "p.greet",
        Prompt,
        None,
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "description": "Who to greet"},
            "style": {"type": "string", "enum": ["short", "long"]}
        }}),
    );
    let needs = Descriptor {
        requires_client: Some(json!({"roots": {}})),
        ..descriptor("p.needs", Prompt, None, json!({"type": "object", "properties": {}}))
    };
    let hidden_prompt = descriptor("h.prompt", Prompt, None, json!({"type": "object"}));
    let resource = descriptor("r.static", Resource, Some("test://static/one"), json!({"type": "object"}));
    let weird = descriptor("r.weird", Resource, Some("test://static/caf%C3%A9?x=1#f"), json!({"type": "object"}));
    let items = descriptor(
        "r.items",
        ResourceTemplate,
        Some("test://items/{id}"),
        json!({"type": "object", "properties": {"id": {"type": "string"}}}),
    );
    let numbers = descriptor(
        "r.num",
        ResourceTemplate,
        Some("test://num/{n}/{flag}"),
        json!({"type": "object", "additionalProperties": false,
               "properties": {"n": {"type": "integer"}, "flag": {"type": "boolean"}}}),
    );
    let files = Descriptor {
        requires_client: Some(json!({"roots": {}})),
        ..descriptor("r.files", ResourceTemplate, Some("file:///{+path}"), json!({"type": "object"}))
    };
    let host = descriptor(
        "r.host",
        ResourceTemplate,
        Some("x://{host}{.tld}{/seg}{#frag}"),
        json!({"type": "object", "properties": {"tld": {"type": "number"}}}),
    );
    let hidden_template = descriptor("h.tmpl", ResourceTemplate, Some("test://hidden/{x}"), json!({"type": "object"}));
    [
        echo,
        ask,
        plain,
        secret,
        greet,
        needs,
        hidden_prompt,
        resource,
        weird,
        items,
        numbers,
        files,
        host,
        hidden_template,
    ]
    .into_iter()
    .map(|descriptor| Registration { handler: Arc::new(Echo(descriptor.kind)), descriptor: Arc::new(descriptor) })
    .collect()
}

fn keys(active: &str) -> KeySet {
    let key = |id: &str, fill| Key { id: id.into(), secret: [fill; 32] };
    KeySet { active: key(active, 2), retired: vec![key("k1", 1)] }
}

fn snapshot(realm: &str, registrations: Vec<Registration>, lint: bool, keys: KeySet) -> RealmSnapshot {
    let mcp = McpLint;
    let lints: Vec<&dyn Lint> = if lint { vec![&mcp] } else { Vec::new() };
    let catalogue = Catalogue::build(1, registrations, &SchemaBounds::default(), &lints).unwrap();
    let grants = ["t.*", "p.*", "r.*"]
        .into_iter()
        .map(|raw| Grant::parse(Subject::Role("user".into()), raw, "mcp").unwrap())
        .collect();
    RealmSnapshot::new(realm, catalogue, Policy::new(grants), keys)
}

/// The runtime's session table: every session id is live with `live`, or none is.
struct Table(Option<LiveSession>);

impl SessionLookup for Table {
    fn find(&self, _sid: &str) -> Option<LiveSession> {
        self.0.clone()
    }
}

/// How many of [`World::tokens`] resolve for alice in the full realm.
const LIVE_TOKENS: usize = 3;

struct World {
    /// The full realm, one with tools only, an empty one, and the full catalogue built
    /// without the MCP lint (no wire attachments).
    realms: Vec<(&'static str, Arc<RealmSnapshot>)>,
    principals: Vec<(&'static str, Principal)>,
    adapters: Vec<(String, Adapter)>,
    now: SystemTime,
    /// Every status the error table answers, and 200, 202 and 204.
    statuses: Vec<StatusCode>,
    /// Session ids minted up front: live ones, and ones that must not resolve.
    tokens: Vec<String>,
}

impl World {
    fn new() -> Self {
        let now = UNIX_EPOCH + Duration::from_secs(1_785_000_000);
        let tools_only = registrations().into_iter().filter(|r| r.descriptor.kind == CapabilityKind::Tool).collect();
        let realms = vec![
            ("full", Arc::new(snapshot("default", registrations(), true, keys("k2")))),
            ("tools-only", Arc::new(snapshot("default", tools_only, true, keys("k2")))),
            ("empty", Arc::new(snapshot("default", Vec::new(), true, keys("k2")))),
            ("unlinted", Arc::new(snapshot("default", registrations(), false, keys("k2")))),
        ];
        let user = || vec!["user".to_owned()];
        let principals = vec![
            ("alice", Principal::new("alice", PrincipalKind::User, user())),
            ("bob", Principal::new("bob", PrincipalKind::OAuth, user())),
            ("anonymous", Principal::anonymous(Vec::new())),
        ];
        let settings = |revisions: &[Revision], page_size, lifetime| ListenerSettings {
            revisions: revisions.to_vec(),
            page_size,
            list_ttl_ms: 60_000,
            server_version: "0.0.0-test".into(),
            session_lifetime: Duration::from_secs(lifetime),
        };
        use Revision::*;
        let configurations = [
            settings(&[V2026_07_28, V2025_11_25, V2025_06_18], 2, 3600),
            settings(&[V2026_07_28], 1, 3600),
            settings(&[V2025_11_25, V2025_06_18], 0, 3600),
            settings(&[V2025_06_18], 3, 60),
            settings(&[V2026_07_28, V2026_07_28, V2025_06_18], usize::MAX, 86_400),
        ];
        let adapters = configurations
            .into_iter()
            .map(|settings| {
                let label = format!("revisions {:?}, page_size {}", settings.revisions, settings.page_size);
                (label, Adapter::new(settings).unwrap())
            })
            .collect();
        let mut statuses: Vec<StatusCode> = Error::examples().iter().map(|error| error.row().status).collect();
        statuses.extend([StatusCode::OK, StatusCode::ACCEPTED, StatusCode::NO_CONTENT]);
        let mut world = Self { realms, principals, adapters, now, statuses, tokens: Vec::new() };
        world.tokens = world.mint_tokens();
        world
    }

    /// The first [`LIVE_TOKENS`] name sessions of alice in the full realm; the rest are
    /// bob's, expired, another realm's, one sealed under a retired key (it still opens)
    /// and one under an unknown key.
    fn mint_tokens(&self) -> Vec<String> {
        let mut rng = TestRandom::new(7);
        let full = &self.realms[0].1;
        let (alice, bob) = (&self.principals[0].1, &self.principals[1].1);
        let hour = Duration::from_secs(3600);
        let mut mint = |realm: &RealmSnapshot, principal: &Principal, revision, now| {
            session::mint(realm, principal, revision, json!({"roots": {}}), hour, now, &mut rng).0
        };
        let other_realm = snapshot("other", Vec::new(), true, keys("k2"));
        let retired_key = snapshot("default", Vec::new(), true, keys("k1"));
        let unknown_key = snapshot("default", Vec::new(), true, keys("k0"));
        vec![
            mint(full, alice, Revision::V2025_11_25, self.now),
            mint(full, alice, Revision::V2025_11_25, self.now),
            mint(full, alice, Revision::V2025_06_18, self.now),
            mint(full, bob, Revision::V2025_11_25, self.now),
            mint(full, alice, Revision::V2025_11_25, self.now - 2 * hour),
            mint(&other_realm, alice, Revision::V2025_11_25, self.now),
            mint(&retired_key, alice, Revision::V2025_06_18, self.now),
            mint(&unknown_key, alice, Revision::V2025_11_25, self.now),
        ]
    }
}

/// Which adapter, realm, principal and session table one input meets.
struct Setting {
    adapter: usize,
    realm: usize,
    principal: usize,
    table: Option<LiveSession>,
}

impl Setting {
    fn random(g: &mut Prng, world: &World) -> Self {
        let realm = match g.below(100) {
            0..85 => 0,
            85..90 => 1,
            90..95 => 2,
            _ => 3,
        };
        let principal = match g.below(100) {
            0..90 => 0,
            90..95 => 1,
            _ => 2,
        };
        let live = |client_capabilities, log_level, subscriptions| {
            Some(LiveSession { client_capabilities, log_level, subscriptions })
        };
        let table = match g.below(10) {
            0 => None,
            1..=6 => live(json!({}), None, 0),
            7 | 8 => live(json!({"elicitation": {}, "sampling": {}, "roots": {}}), Some(LogLevel::Debug), 3),
            _ => live(g.shallow(2), Some(LogLevel::Emergency), session::MAX_SUBSCRIPTIONS),
        };
        // Mostly the listener serving every revision, so that both eras get deep.
        let adapter = if g.chance(50) { 0 } else { g.below(world.adapters.len()) };
        Self { adapter, realm, principal, table }
    }

    fn describe(&self, world: &World) -> String {
        format!(
            "adapter [{}], realm {}, principal {}, session table {:?}",
            world.adapters[self.adapter].0, world.realms[self.realm].0, world.principals[self.principal].0, self.table
        )
    }
}

// ---------------------------------------------------------------------------------------
// Inputs: valid requests, then mutated.
// ---------------------------------------------------------------------------------------

type Header = (Vec<u8>, Vec<u8>);

#[derive(Clone)]
struct Case {
    method: Method,
    headers: Vec<Header>,
    body: Vec<u8>,
}

impl Case {
    fn header_map(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            // What HTTP itself cannot carry never reaches the adapter.
            if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
                map.append(name, value);
            }
        }
        map
    }

    fn describe(&self) -> String {
        let escape = |bytes: &[u8]| bytes.escape_ascii().to_string();
        let mut text = format!("method: {}\nheaders:\n", self.method);
        for (name, value) in &self.headers {
            let value = if value.len() > 300 { format!("<{} bytes>", value.len()) } else { escape(value) };
            text.push_str(&format!("  {}: {value}\n", escape(name)));
        }
        let body = if self.body.len() > 6000 {
            format!("{}... <{} bytes in all>", escape(&self.body[..6000]), self.body.len())
        } else {
            escape(&self.body)
        };
        text.push_str(&format!("body: b\"{body}\""));
        text
    }
}

/// What one run keeps learning from the adapter's answers, to build deeper inputs.
#[derive(Default)]
struct Pools {
    sessions: Vec<String>,
    cursors: Vec<String>,
    /// A valid modern call, its headers, and a `requestState` sealed for it.
    retries: Vec<(Value, Vec<Header>, String)>,
}

fn remember<T>(g: &mut Prng, pool: &mut Vec<T>, item: T) {
    if pool.len() < 48 {
        pool.push(item);
    } else {
        let at = g.below(pool.len());
        pool[at] = item;
    }
}

fn header(name: &str, value: &str) -> Header {
    (name.as_bytes().to_vec(), value.as_bytes().to_vec())
}

/// Valid `params` for `method`, the `Mcp-Name` it addresses, and `Mcp-Param-*` headers.
fn params(g: &mut Prng, method: &str, pools: &Pools) -> (Map<String, Value>, Option<String>, Vec<Header>) {
    let mut params = Map::new();
    let mut name = None;
    let mut mirrored = Vec::new();
    match method {
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" if g.chance(50) => {
            params.insert("cursor".into(), g.cursor(pools));
        }
        "tools/call" => {
            let tool = if g.chance(92) { g.pick(TOOLS).to_string() } else { g.text() };
            let mut arguments = Map::new();
            if tool == "t.echo" {
                echo_arguments(g, &mut arguments, &mut mirrored);
            } else if g.chance(30) {
                arguments.insert(g.text(), g.value(2));
            }
            params.insert("name".into(), json!(tool));
            if g.chance(90) {
                params.insert("arguments".into(), Value::Object(arguments));
            }
            if g.chance(10) {
                params.insert("inputResponses".into(), json!({"q": {"action": "accept", "content": {"x": 1}}}));
            }
            if g.chance(10) {
                params.insert("requestState".into(), json!(g.state_token()));
            }
            name = Some(tool);
        }
        "prompts/get" => {
            let prompt = if g.chance(92) { g.pick(PROMPTS).to_string() } else { g.text() };
            let mut arguments = Map::new();
            if g.chance(85) {
                arguments.insert("name".into(), json!(if g.chance(70) { "Ada".into() } else { g.text() }));
            }
            if g.chance(50) {
                arguments.insert("style".into(), json!(*g.pick(&["short", "long", "medium"])));
            }
            params.insert("name".into(), json!(prompt));
            if g.chance(90) {
                params.insert("arguments".into(), Value::Object(arguments));
            }
            name = Some(prompt);
        }
        "resources/read" => {
            let uri = g.uri();
            params.insert("uri".into(), json!(uri));
            name = Some(uri);
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            params.insert("uri".into(), json!(g.uri()));
        }
        "completion/complete" => {
            let reference = if g.chance(50) {
                json!({"type": "ref/prompt", "name": *g.pick(PROMPTS)})
            } else {
                json!({"type": "ref/resource", "uri": *g.pick(TEMPLATES)})
            };
            params.insert("ref".into(), reference);
            let argument = *g.pick(&["style", "name", "id", "path"]);
            params.insert("argument".into(), json!({"name": argument, "value": g.text()}));
            if g.chance(50) {
                params.insert("context".into(), json!({"arguments": {"name": "Ada"}}));
            }
        }
        "subscriptions/listen" => {
            let mut uris = Vec::new();
            for _ in 0..g.below(4) {
                uris.push(json!(g.uri()));
            }
            params.insert(
                "notifications".into(),
                json!({
                    "toolsListChanged": g.chance(50),
                    "promptsListChanged": g.chance(50),
                    "resourcesListChanged": g.chance(50),
                    "resourceSubscriptions": uris,
                }),
            );
        }
        "logging/setLevel" => {
            params.insert("level".into(), json!(*g.pick(&["debug", "info", "error", "emergency"])));
        }
        "initialize" => {
            let version = *g.pick(&["2025-11-25", "2025-11-25", "2025-06-18", "2026-07-28", "2024-11-05"]);
            params.insert("protocolVersion".into(), json!(version));
            params.insert("capabilities".into(), json!({"elicitation": {}, "roots": {"listChanged": true}}));
            params.insert("clientInfo".into(), json!({"name": "fuzz", "version": "1"}));
        }
        "notifications/cancelled" => {
            params.insert("requestId".into(), g.id());
        }
        _ => {}
    }
    (params, name, mirrored)
}

/// Arguments of `t.echo`, whose schema mirrors four of them into `Mcp-Param-*` headers,
/// with the headers a conforming client sends.
fn echo_arguments(g: &mut Prng, arguments: &mut Map<String, Value>, mirrored: &mut Vec<Header>) {
    let mut mirror = |g: &mut Prng, name: &str, value: String| {
        if g.chance(95) {
            mirrored.push(header(&format!("Mcp-Param-{name}"), &sentinel::encode(&value)));
        }
    };
    if g.chance(90) {
        arguments.insert("text".into(), json!(if g.chance(80) { "hello".into() } else { g.text() }));
    }
    if g.chance(70) {
        let region = if g.chance(70) {
            g.pick(&["eu", "us-east-1", " padded ", "Hello, 世界", "=?base64?YQ==?=", "line\nbreak"]).to_string()
        } else {
            g.text()
        };
        arguments.insert("region".into(), json!(region));
        mirror(g, "Region", region);
    }
    if g.chance(60) {
        let (count, text) = match g.below(6) {
            0 => (json!(42), "42".to_owned()),
            1 => (json!(42.0), "42.0".to_owned()),
            2 => (json!(-7), "-7".to_owned()),
            3 => (json!(9_007_199_254_740_993_i64), "9007199254740993".to_owned()),
            4 => (json!(u64::MAX), u64::MAX.to_string()),
            _ => (json!(1e37), format!("1{}", "0".repeat(37))),
        };
        arguments.insert("count".into(), count);
        mirror(g, "Count", text);
    }
    if g.chance(50) {
        let dry = g.chance(50);
        arguments.insert("dry".into(), json!(dry));
        mirror(g, "Dry-Run", dry.to_string());
    }
    if g.chance(40) {
        let zone = if g.chance(70) { "zone-a".to_owned() } else { g.text() };
        arguments.insert("opts".into(), json!({ "zone": zone }));
        mirror(g, "Zone", zone);
    }
}

/// A modern `_meta`: the claim and client capabilities, and now and then the optional keys.
fn modern_meta(g: &mut Prng) -> Value {
    let mut capabilities = Map::new();
    for (key, value) in [("elicitation", json!({})), ("sampling", json!({})), ("roots", json!({}))] {
        if g.chance(50) {
            capabilities.insert(key.into(), value);
        }
    }
    let mut meta = Map::new();
    meta.insert(PROTOCOL_VERSION.into(), json!("2026-07-28"));
    meta.insert(CLIENT_CAPABILITIES.into(), Value::Object(capabilities));
    if g.chance(40) {
        meta.insert(CLIENT_INFO.into(), json!({"name": "fuzz", "version": "1"}));
    }
    if g.chance(30) {
        meta.insert(LOG_LEVEL.into(), json!(*g.pick(&["debug", "warning"])));
    }
    if g.chance(30) {
        meta.insert(PROGRESS_TOKEN.into(), if g.chance(50) { json!("p-1") } else { json!(7) });
    }
    if g.chance(30) {
        meta.insert("traceparent".into(), json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
        meta.insert("tracestate".into(), json!("a=b"));
        meta.insert("baggage".into(), json!("k=v"));
    }
    Value::Object(meta)
}

const JSON_HEADERS: [(&str, &str); 2] =
    [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];

/// A valid modern request for `method`.
fn modern_request(g: &mut Prng, method: &str, pools: &Pools) -> (Value, Vec<Header>) {
    let (mut params, name, mirrored) = params(g, method, pools);
    params.insert("_meta".into(), modern_meta(g));
    let body = json!({"jsonrpc": "2.0", "id": g.id(), "method": method, "params": params});
    let mut headers: Vec<Header> = JSON_HEADERS.iter().map(|(n, v)| header(n, v)).collect();
    headers.push(header("MCP-Protocol-Version", "2026-07-28"));
    headers.push(header("Mcp-Method", method));
    if let Some(name) = name {
        headers.push(header("Mcp-Name", &sentinel::encode(&name)));
    }
    headers.extend(mirrored);
    (body, headers)
}

/// A valid handshake-era request for `method`: `initialize`, or a request in a session.
fn handshake_request(g: &mut Prng, method: &str, world: &World, pools: &Pools) -> (Method, Value, Vec<Header>) {
    let mut headers: Vec<Header> = JSON_HEADERS.iter().map(|(n, v)| header(n, v)).collect();
    let token = |g: &mut Prng| match g.below(10) {
        0..=3 if !pools.sessions.is_empty() => g.pick(&pools.sessions).clone(),
        0..=7 => g.pick(&world.tokens[..LIVE_TOKENS]).clone(),
        _ => g.pick(&world.tokens).clone(),
    };
    if method != "initialize" || g.chance(10) {
        headers.push(header(session::HEADER, &token(g)));
    }
    if g.chance(40) {
        let version = *g.pick(&["2025-11-25", "2025-06-18", "2026-07-28", "junk"]);
        headers.push(header("MCP-Protocol-Version", version));
    }
    match g.below(20) {
        // The client answers a request the server sent.
        0 => {
            let mut body = json!({"jsonrpc": "2.0", "id": g.id()});
            if g.chance(50) {
                body["result"] = json!({"action": "accept"});
            } else {
                body["error"] = json!({"code": -1, "message": "no"});
            }
            (Method::POST, body, headers)
        }
        1 | 2 => {
            let method = *g.pick(&["notifications/cancelled", "notifications/initialized", "notifications/progress"]);
            let (params, _, _) = params(g, method, pools);
            (Method::POST, json!({"jsonrpc": "2.0", "method": method, "params": params}), headers)
        }
        3 => {
            headers.retain(|(name, _)| name != b"Content-Type");
            let verb = if g.chance(50) { Method::GET } else { Method::DELETE };
            headers.push(header("Accept", "text/event-stream"));
            (verb, Value::Null, headers)
        }
        _ => {
            let (mut params, _, _) = params(g, method, pools);
            if g.chance(20) {
                params.insert("_meta".into(), json!({"progressToken": g.id(), "traceparent": "00-x-y-01"}));
            }
            (Method::POST, json!({"jsonrpc": "2.0", "id": g.id(), "method": method, "params": params}), headers)
        }
    }
}

/// A body that is not much of a request at all.
fn raw_body(g: &mut Prng) -> Vec<u8> {
    match g.below(10) {
        0 => Vec::new(),
        1 => g.pick(&[&b"{"[..], b"[]", b"[[]]", b"null", b"3", b"\"x\"", b"{}", b"\xef\xbb\xbf{}", b" \t\n"]).to_vec(),
        2 => "[".repeat(*g.pick(&[127, 128, 129, 5000])).into_bytes(),
        3 => {
            let depth = *g.pick(&[125, 126, 127, 128]);
            format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()
        }
        4 => {
            let len = g.below(200);
            g.bytes(len)
        }
        5 => br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t.echo","name":"t.echo"}}"#.to_vec(),
        6 => br#"{"jsonrpc":"2.0","id":"\ud800","method":"x"}"#.to_vec(),
        7 => br#"{"jsonrpc":"2.0","id":1e400,"method":"x"}"#.to_vec(),
        8 => serde_json::to_vec(&g.value(3)).unwrap(),
        _ => br#"{"jsonrpc":"2.0","id":1,"id":1,"method":"ping"}"#.to_vec(),
    }
}

/// One structural mutation somewhere in `value`: a key deleted or added, an element
/// dropped or added, or a node replaced by a value of another type.
fn mutate_value(g: &mut Prng, value: &mut Value, depth: usize) {
    // The framing fields are mutated too, but most mutations go where the methods look.
    if depth == 0
        && g.chance(85)
        && let Some(params) = value.get_mut("params").filter(|params| params.is_object())
    {
        return mutate_value(g, params, 1);
    }
    if depth < 8 && g.chance(70) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                let at = g.below(map.len());
                if let Some(child) = map.values_mut().nth(at) {
                    return mutate_value(g, child, depth + 1);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                let at = g.below(items.len());
                return mutate_value(g, &mut items[at], depth + 1);
            }
            _ => {}
        }
    }
    match value {
        Value::Object(map) if g.chance(60) => {
            if !map.is_empty() && g.chance(50) {
                let at = g.below(map.len());
                let key = map.keys().nth(at).cloned().unwrap_or_default();
                map.remove(&key);
            } else {
                let key = if g.chance(70) { g.pick(KEYS).to_string() } else { g.text() };
                let inserted = g.value(3);
                map.insert(key, inserted);
            }
        }
        Value::Array(items) if g.chance(60) => {
            if !items.is_empty() && g.chance(50) {
                let at = g.below(items.len());
                items.remove(at);
            } else {
                items.push(g.value(3));
            }
        }
        _ => *value = g.other_value(value),
    }
}

/// Where `byte` occurs in `body`.
fn positions(body: &[u8], byte: u8) -> Vec<usize> {
    body.iter().enumerate().filter(|(_, b)| **b == byte).map(|(at, _)| at).collect()
}

/// One mutation of the serialised body: truncation, stray or invalid bytes, duplicate
/// keys, lone surrogates, out-of-range numbers, batches, nesting past the limit.
fn mutate_text(g: &mut Prng, body: &mut Vec<u8>) {
    match g.below(12) {
        0 => body.truncate(g.below(body.len() + 1)),
        1 => {
            let at = g.below(body.len() + 1);
            let byte = g.word() as u8;
            body.insert(at, byte);
        }
        2 if !body.is_empty() => {
            let at = g.below(body.len());
            body[at] ^= 1 << g.below(8);
        }
        3 => {
            // Repeats the first key of a random object: `{"k":…}` becomes `{"k":0,"k":…}`.
            let opens: Vec<usize> =
                positions(body, b'{').into_iter().filter(|&i| body.get(i + 1) == Some(&b'"')).collect();
            if opens.is_empty() {
                return;
            }
            let open = *g.pick(&opens);
            let Some(close) = body[open + 2..].iter().position(|&b| b == b'"').map(|i| open + 2 + i) else {
                return;
            };
            let mut repeated = body[open + 1..=close].to_vec();
            repeated.extend_from_slice(b":0,");
            body.splice(open + 1..open + 1, repeated);
        }
        4 | 5 => {
            let quotes = positions(body, b'"');
            if quotes.is_empty() {
                return;
            }
            let at = *g.pick(&quotes) + 1;
            let escape = *g.pick(&[&br"\ud800"[..], br"\udc00\ud800", br"\ud800\u0041", br"\u0000", br"\uDBFF\uDFFF"]);
            body.splice(at..at, escape.iter().copied());
        }
        6 => {
            let digits: Vec<usize> = (0..body.len())
                .filter(|&i| body[i].is_ascii_digit() && (i == 0 || !body[i - 1].is_ascii_digit()))
                .collect();
            if digits.is_empty() {
                return;
            }
            let start = *g.pick(&digits);
            let end = (start..body.len()).find(|&i| !body[i].is_ascii_digit()).unwrap_or(body.len());
            let number =
                *g.pick(&["1e400", "-1e400", "1e308", "-0", "123456789012345678901234567890", "1E+2", "0.5e-400"]);
            body.splice(start..end, number.bytes());
        }
        7 => {
            body.insert(0, b'[');
            body.push(b']');
        }
        8 => {
            let junk = *g.pick(&[&b"\xef\xbb\xbf"[..], b" ", b"\x00"]);
            if g.chance(50) {
                body.splice(0..0, junk.iter().copied());
            } else {
                body.extend_from_slice(junk);
                body.extend_from_slice(b"{}");
            }
        }
        9 => {
            let quotes = positions(body, b'"');
            if let Some(&at) = quotes.get(g.below(quotes.len().max(1))) {
                let bytes = *g.pick(&[&b"\xff"[..], b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]);
                body.splice(at + 1..at + 1, bytes.iter().copied());
            }
        }
        10 => {
            let depth = *g.pick(&[120, 122, 123, 124, 125, 126, 127, 5000]);
            *body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t.echo","arguments":{{"text":{}1{}}}}}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            )
            .into_bytes();
        }
        _ => body.clear(),
    }
}

/// One mutation of the headers: gone, repeated, emptied, huge, non-ASCII, malformed
/// sentinels, odd name case, stray `Mcp-Param-*`.
fn mutate_headers(g: &mut Prng, headers: &mut Vec<Header>) {
    let any = |g: &mut Prng, headers: &[Header]| (!headers.is_empty()).then(|| g.below(headers.len()));
    match g.below(10) {
        0 => {
            if let Some(at) = any(g, headers) {
                headers.remove(at);
            }
        }
        1 => {
            if let Some(at) = any(g, headers) {
                let (name, mut value) = headers[at].clone();
                if g.chance(50) {
                    value = g.text().into_bytes();
                }
                headers.push((name, value));
            }
        }
        2 => {
            if let Some(at) = any(g, headers) {
                let len = g.below(40);
                headers[at].1 =
                    (0..len).map(|_| if g.chance(50) { 0x80 | g.word() as u8 } else { g.word() as u8 }).collect();
            }
        }
        3 => {
            if let Some(at) = any(g, headers) {
                headers[at].1 = if g.chance(50) { Vec::new() } else { b"  \t ".to_vec() };
            }
        }
        4 => {
            if let Some(at) = any(g, headers) {
                headers[at].1 = vec![b'a'; 8_000 + g.below(8_000)];
            }
        }
        5 => {
            let name = *g.pick(&["Region", "Count", "Dry-Run", "Zone", "region", "Other", "Ünïcode"]);
            let value = *g.pick(SENTINELS);
            headers.push(header(&format!("Mcp-Param-{name}"), value));
        }
        6 => {
            if let Some(at) = any(g, headers) {
                headers[at].1 = match g.below(3) {
                    0 => g.pick(SENTINELS).as_bytes().to_vec(),
                    1 => format!("=?base64?{}?=", STANDARD.encode(g.some_bytes(30))).into_bytes(),
                    _ => format!("=?base64?{}?=", URL_SAFE_NO_PAD.encode(g.some_bytes(30))).into_bytes(),
                };
            }
        }
        7 => {
            if let Some(at) = any(g, headers) {
                headers[at].0 = headers[at].0.to_ascii_uppercase();
                let mut padded = b" \t".to_vec();
                padded.extend_from_slice(&headers[at].1);
                padded.extend_from_slice(b"\t ");
                headers[at].1 = padded;
            }
        }
        8 => {
            let name = *g.pick(&["Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Accept"]);
            let value = g.text().into_bytes();
            headers.push((name.as_bytes().to_vec(), value));
        }
        _ => {
            let name = format!("Mcp-Param-{}", g.text());
            headers.push((name.into_bytes(), g.text().into_bytes()));
        }
    }
}

/// One input: a valid request of a random method in a random era, mutated or not. The
/// valid body comes along when the request is unmutated and modern, to seal states for.
fn generate(g: &mut Prng, world: &World, pools: &Pools) -> (Case, Option<Value>) {
    let method = *g.pick(METHODS);
    let roll = g.below(100);
    let (verb, value, mut headers) = if roll < 8 && !pools.retries.is_empty() {
        // A retry carrying a `requestState` sealed for exactly this call.
        let (mut body, headers, state) = g.pick(&pools.retries).clone();
        body["params"]["requestState"] = json!(state);
        if g.chance(60) {
            body["params"]["inputResponses"] = json!({"q": {"action": "accept", "content": {"answer": g.text()}}});
        }
        (Method::POST, Some(body), headers)
    } else if roll < 50 {
        let (body, headers) = modern_request(g, method, pools);
        (Method::POST, Some(body), headers)
    } else if roll < 92 {
        let (verb, body, headers) = handshake_request(g, method, world, pools);
        (verb, Some(body), headers)
    } else {
        let verb =
            g.pick(&[Method::POST, Method::POST, Method::GET, Method::DELETE, Method::PUT, Method::OPTIONS]).clone();
        let mut headers: Vec<Header> = JSON_HEADERS.iter().map(|(n, v)| header(n, v)).collect();
        if g.chance(50) {
            headers.push(header(session::HEADER, &g.pick(&world.tokens).clone()));
        }
        return (Case { method: verb, headers, body: raw_body(g) }, None);
    };
    let mut value = value.unwrap_or(Value::Null);
    let mutations = if g.chance(40) { 0 } else { 1 + g.below(3) };
    let mut text_mutation = false;
    for _ in 0..mutations {
        match g.below(10) {
            0..=5 => mutate_value(g, &mut value, 0),
            6..=8 => mutate_headers(g, &mut headers),
            _ => text_mutation = true,
        }
    }
    let mut body =
        if value.is_null() && verb != Method::POST { Vec::new() } else { serde_json::to_vec(&value).unwrap() };
    if text_mutation {
        mutate_text(g, &mut body);
    }
    let valid = (mutations == 0 && verb == Method::POST).then_some(value);
    (Case { method: verb, headers, body }, valid)
}

// ---------------------------------------------------------------------------------------
// Canned outcomes for dispatched calls.
// ---------------------------------------------------------------------------------------

fn content_block(g: &mut Prng) -> ContentBlock {
    match g.below(5) {
        0 => ContentBlock::Text { text: g.text() },
        1 => ContentBlock::Image { data: g.text(), mime_type: "image/png".into() },
        2 => ContentBlock::Audio { data: g.text(), mime_type: g.text() },
        3 => ContentBlock::Resource(resource_contents(g)),
        _ => ContentBlock::ResourceLink {
            uri: g.uri(),
            name: g.text(),
            mime_type: g.chance(50).then(|| g.text()),
            description: g.chance(50).then(|| g.text()),
        },
    }
}

fn resource_contents(g: &mut Prng) -> ResourceContents {
    ResourceContents {
        uri: if g.chance(50) { String::new() } else { g.uri() },
        mime_type: g.chance(50).then(|| g.text()),
        body: if g.chance(50) { ResourceBody::Text(g.text()) } else { ResourceBody::Blob(g.text()) },
    }
}

fn input_request(g: &mut Prng) -> InputRequest {
    let kind = *g.pick(&[InputKind::Elicitation, InputKind::Elicitation, InputKind::Sampling, InputKind::Roots]);
    let params = match g.below(4) {
        0 => json!({"message": "Which one?", "requestedSchema": {"type": "object"}}),
        1 => json!({"mode": "url", "url": "https://example.com"}),
        2 => json!({"mode": g.shallow(1)}),
        _ => g.shallow(2),
    };
    InputRequest { kind, params }
}

/// An outcome the core could hand back for a call: mostly of the capability's kind,
/// sometimes of any kind.
fn canned_outcome(g: &mut Prng) -> Outcome {
    match g.below(14) {
        0 => Outcome::Answered(Answer::Value(g.shallow(3))),
        1 => {
            let blocks = (0..g.below(4)).map(|_| content_block(g)).collect();
            let structured = g.chance(50).then(|| g.shallow(2));
            Outcome::Answered(Answer::Content { blocks, structured })
        }
        2 => {
            let messages = (0..g.below(3))
                .map(|_| Message {
                    role: if g.chance(50) { Role::User } else { Role::Assistant },
                    content: content_block(g),
                })
                .collect();
            Outcome::Answered(Answer::Messages { description: g.chance(50).then(|| g.text()), messages })
        }
        3 | 4 => {
            let items = (0..g.below(3)).map(|_| resource_contents(g)).collect();
            Outcome::Answered(Answer::Contents { items })
        }
        5 => {
            let content = g.chance(50).then(|| (0..g.below(3)).map(|_| content_block(g)).collect());
            Outcome::Answered(Answer::ToolError { code: g.text(), retryable: g.chance(50), content, detail: None })
        }
        6..=8 => {
            let mut requests = BTreeMap::new();
            for _ in 0..g.below(3) {
                let key = if g.chance(50) { "q".to_owned() } else { g.text() };
                requests.insert(key, input_request(g));
            }
            let state = match g.below(5) {
                0 => None,
                1 if g.chance(15) => Some(json!("s".repeat(70_000))),
                _ => Some(g.shallow(2)),
            };
            Outcome::Answered(Answer::InputRequired { requests, state })
        }
        9 if g.chance(20) => Outcome::Answered(Answer::MissingClientCapability { required: g.shallow(2) }),
        9 => Outcome::Answered(Answer::Failure { code: g.text(), detail: g.chance(30).then(|| g.shallow(2)) }),
        10 => {
            let named =
                (0..g.below(3)).map(|_| Violation { pointer: g.text(), rule: g.text(), message: g.text() }).collect();
            Outcome::InvalidInput(Violations { named, more: g.below(3) })
        }
        11 => Outcome::Failed { code: g.text() },
        _ => Outcome::Completed(Completion {
            values: (0..g.below(120)).map(|_| g.text()).collect(),
            total: g.chance(50).then(|| g.word()),
            has_more: g.chance(50).then(|| g.chance(50)),
        }),
    }
}

// ---------------------------------------------------------------------------------------
// Running one input and checking what comes back.
// ---------------------------------------------------------------------------------------

fn parse_json(bytes: &[u8], what: &str) -> Result<Value, String> {
    serde_json::from_slice(bytes)
        .map_err(|error| format!("{what} is not JSON ({error}): {}", String::from_utf8_lossy(bytes)))
}

/// A reply's status is one the error table answers, or 200, 202 or 204; its body, when
/// present, is a JSON-RPC message; its audit record serialises.
fn check_reply(reply: &Reply, world: &World, what: &str) -> Result<Value, String> {
    let status = reply.response().status();
    if !world.statuses.contains(&status) {
        return Err(format!("{what}: status {status} is neither in the error table nor 200, 202 or 204"));
    }
    let body = reply.response().body();
    let value = if body.is_empty() {
        Value::Null
    } else {
        let value = parse_json(body, &format!("{what} body"))?;
        if value.get("jsonrpc") != Some(&json!("2.0")) {
            return Err(format!("{what}: body is not a JSON-RPC message: {value}"));
        }
        value
    };
    if let Some(record) = reply.audit() {
        serde_json::to_string(record).map_err(|error| format!("{what}: audit record does not serialise: {error}"))?;
    }
    Ok(value)
}

/// Everything a runtime reads from a planned call, before running it.
fn touch_call(g: &mut Prng, call: &Call) -> Result<(), String> {
    let _ = (call.capability().id(), call.realm(), call.session(), call.request_id(), call.invocation());
    let notifier = call.notifier();
    let _ = notifier.wants_any();
    let message = g.text();
    if let Some(text) = notifier.progress(g.float(), g.chance(50).then(|| g.float()), Some(&message)) {
        parse_json(text.as_bytes(), "progress notification")?;
    }
    let data = g.shallow(2);
    if let Some(text) = notifier.log(*g.pick(&LogLevel::ALL), Some(&message), &data) {
        parse_json(text.as_bytes(), "log notification")?;
    }
    Ok(())
}

/// How far the inputs got: the test proves little unless they reach the deep paths.
#[derive(Debug, Default)]
struct Reached {
    /// Replies carrying a result, not an error.
    results: usize,
    errors: usize,
    empty: usize,
    dispatched: usize,
    /// Calls planned inside a handshake session.
    dispatched_in_session: usize,
    /// Modern calls planned with a `requestState` that opened.
    dispatched_with_state: usize,
    completions: usize,
    input_required: usize,
    subscriptions: usize,
    listens: usize,
}

impl Reached {
    fn count(&mut self, step: &Step, case: &Case) {
        match step {
            Step::Reply(reply) => {
                let body = reply.response().body();
                let result = serde_json::from_slice::<Value>(body).is_ok_and(|body| body.get("result").is_some());
                match (body.is_empty(), result) {
                    (true, _) => self.empty += 1,
                    (false, true) => self.results += 1,
                    (false, false) => self.errors += 1,
                }
            }
            Step::Dispatch(call) => {
                self.dispatched += 1;
                if call.session().is_some() {
                    self.dispatched_in_session += 1;
                } else if serde_json::from_slice::<Value>(&case.body)
                    .is_ok_and(|body| body["params"]["requestState"].is_string())
                {
                    self.dispatched_with_state += 1;
                }
            }
            Step::Subscribe(_) => self.subscriptions += 1,
            Step::Listen(_) => self.listens += 1,
        }
    }

    fn everywhere(&self) -> bool {
        [
            self.results,
            self.errors,
            self.empty,
            self.dispatched,
            self.dispatched_in_session,
            self.dispatched_with_state,
            self.completions,
            self.input_required,
            self.subscriptions,
            self.listens,
        ]
        .iter()
        .all(|&count| count > 0)
    }
}

/// Runs one input through admission, `receive` and, for a planned call, `complete`.
fn exercise(
    g: &mut Prng,
    world: &World,
    setting: &Setting,
    case: &Case,
    valid: Option<&Value>,
    pools: &mut Pools,
    reached: &mut Reached,
) -> Result<(), String> {
    let (_, adapter) = &world.adapters[setting.adapter];
    let (_, realm) = &world.realms[setting.realm];
    let (_, principal) = &world.principals[setting.principal];
    let table = Table(setting.table.clone());
    let headers = case.header_map();
    let mut rng = TestRandom::new(g.word());

    if let Err(error) = adapter.admit(&case.method, &headers) {
        check_reply(&Reply::from(error), world, "admission refusal")?;
    }
    let session_id = headers.get(session::HEADER).and_then(|value| value.to_str().ok());
    let _ = adapter.early_context(session_id, realm, &table, world.now);

    let receive = |rng: &mut TestRandom| {
        let inbound = Inbound { method: &case.method, headers: &headers, body: &case.body };
        adapter.receive(inbound, realm, principal, &table, world.now, rng)
    };
    let Received { step, labels } = receive(&mut rng);
    if labels.method != labels::OTHER && !labels::METHODS.contains(&labels.method) {
        return Err(format!("an unbounded method label {:?}", labels.method));
    }
    reached.count(&step, case);
    match step {
        Step::Reply(reply) => {
            let body = check_reply(&reply, world, "reply")?;
            if let Some(token) = reply.response().headers().get(session::HEADER).and_then(|v| v.to_str().ok()) {
                remember(g, &mut pools.sessions, token.to_owned());
            }
            if let Some(cursor) = body["result"]["nextCursor"].as_str() {
                remember(g, &mut pools.cursors, cursor.to_owned());
            }
        }
        Step::Dispatch(call) => {
            touch_call(g, &call)?;
            let call = *call;
            let outcome = if g.chance(50) { invoked(&call) } else { canned_outcome(g) };
            let Some(reply) = complete(adapter, call, outcome, world.now, &mut rng) else {
                return Ok(());
            };
            let body = check_reply(&reply, world, "completion")?;
            reached.completions += 1;
            if body["result"]["resultType"] == "input_required" {
                reached.input_required += 1;
            }
            if let (Some(state), Some(valid)) = (body["result"]["requestState"].as_str(), valid) {
                remember(g, &mut pools.retries, (valid.clone(), case.headers.clone(), state.to_owned()));
            }
            // The same call once more, ending another way.
            if g.chance(30)
                && let Step::Dispatch(call) = receive(&mut rng).step
                && let Some(reply) = complete(adapter, *call, canned_outcome(g), world.now, &mut rng)
            {
                check_reply(&reply, world, "second completion")?;
            }
        }
        Step::Subscribe(subscription) => {
            parse_json(subscription.acknowledged().as_bytes(), "acknowledgement")?;
            parse_json(subscription.closed().as_bytes(), "close")?;
            use CapabilityKind::*;
            for kind in [Tool, Prompt, Resource, ResourceTemplate] {
                if let Some(text) = subscription.list_changed(kind) {
                    parse_json(text.as_bytes(), "list change")?;
                }
            }
            if let Some(text) = subscription.resource_updated(&g.uri()) {
                parse_json(text.as_bytes(), "resource update")?;
            }
            let _ = subscription.still_honoured(realm, principal);
        }
        Step::Listen(_) => {}
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Panics, caught and located.
// ---------------------------------------------------------------------------------------

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`, turning a panic into its message and location. Panics elsewhere (and the
/// test's own assertions) still go to the default hook.
fn catching<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CAPTURING.with(Cell::get) {
                return previous(info);
            }
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "<non-text payload>".into());
            let location = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            let caught = format!("panicked at {}: {message}", location.as_deref().unwrap_or("<unknown>"));
            CAUGHT.with(|slot| *slot.borrow_mut() = Some(caught));
        }));
    });
    CAPTURING.with(|flag| flag.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CAPTURING.with(|flag| flag.set(false));
    result.map_err(|_| CAUGHT.with(|slot| slot.borrow_mut().take()).unwrap_or_else(|| "panicked".into()))
}

/// Runs `iterations` inputs for each seed and fails listing every problem found.
fn fuzz(seeds: &[u64], iterations: usize) {
    let world = World::new();
    let mut failures = Vec::new();
    let mut reached = Reached::default();
    for &seed in seeds {
        let mut g = Prng::new(seed);
        let mut pools = Pools::default();
        for iteration in 0..iterations {
            let setting = Setting::random(&mut g, &world);
            let (case, valid) = generate(&mut g, &world, &pools);
            let problem = match catching(|| {
                exercise(&mut g, &world, &setting, &case, valid.as_ref(), &mut pools, &mut reached)
            }) {
                Ok(Ok(())) => continue,
                Ok(Err(problem)) => problem,
                Err(panic) => panic,
            };
            let problem: String = problem.chars().take(2_000).collect();
            failures.push(format!(
                "seed {seed}, iteration {iteration}\n{problem}\nsetting: {}\n{}",
                setting.describe(&world),
                case.describe()
            ));
        }
    }
    let shown: Vec<&str> = failures.iter().take(5).map(String::as_str).collect();
    assert!(
        failures.is_empty(),
        "{} of {} inputs were not answered cleanly; the first ones:\n\n{}",
        failures.len(),
        seeds.len() * iterations,
        shown.join("\n\n")
    );
    assert!(reached.everywhere(), "the inputs missed a path: {reached:?}");
}

const SEEDS: [u64; 6] = [1, 2, 3, 0xB0D_0001, 0xDEAD_BEEF, 0x5EED_CAFE_F00D];
const ITERATIONS: usize = 1000;

#[test]
fn mutated_requests_are_answered_cleanly_first_seeds() {
    fuzz(&SEEDS[..3], ITERATIONS);
}

#[test]
fn mutated_requests_are_answered_cleanly_last_seeds() {
    fuzz(&SEEDS[3..], ITERATIONS);
}

// ---------------------------------------------------------------------------------------
// Named cases: inputs worth keeping whatever the seeds do.
// ---------------------------------------------------------------------------------------

fn modern_case(method: &str, params: Value, extra: &[(&str, &str)]) -> Case {
    let mut params = params;
    params["_meta"] = json!({PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    modern_raw(method, serde_json::to_vec(&body).unwrap(), extra)
}

fn modern_raw(method: &str, body: Vec<u8>, extra: &[(&str, &str)]) -> Case {
    let mut headers: Vec<Header> = JSON_HEADERS.iter().map(|(n, v)| header(n, v)).collect();
    headers.push(header("MCP-Protocol-Version", "2026-07-28"));
    headers.push(header("Mcp-Method", method));
    headers.extend(extra.iter().map(|(n, v)| header(n, v)));
    Case { method: Method::POST, headers, body }
}

fn session_case(token: &str, body: &[u8], extra: &[Header]) -> Case {
    let mut headers: Vec<Header> = JSON_HEADERS.iter().map(|(n, v)| header(n, v)).collect();
    if !token.is_empty() {
        headers.push(header(session::HEADER, token));
    }
    headers.extend(extra.iter().cloned());
    Case { method: Method::POST, headers, body: body.to_vec() }
}

#[test]
fn regression_cases_answer_cleanly() {
    let world = World::new();
    let live = &world.tokens[0];
    let deep = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let cases: Vec<(&str, Case)> = vec![
        ("empty body", modern_raw("ping", Vec::new(), &[])),
        ("nesting at the recursion limit", {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t.echo","arguments":{{"text":"x","deep":{}}},"_meta":{{"{PROTOCOL_VERSION}":"2026-07-28","{CLIENT_CAPABILITIES}":{{}}}}}}}}"#,
                deep(123)
            );
            modern_raw("tools/call", body.into_bytes(), &[("Mcp-Name", "t.echo")])
        }),
        ("nesting far past the recursion limit", modern_raw("ping", "[".repeat(100_000).into_bytes(), &[])),
        ("lone surrogate in the method", modern_raw("x", br#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"#.to_vec(), &[])),
        ("id out of range", modern_raw("x", br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#.to_vec(), &[])),
        ("repeated id", modern_raw("ping", br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#.to_vec(), &[])),
        (
            "repeated key in _meta",
            modern_raw(
                "ping",
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"{PROTOCOL_VERSION}":"2026-07-28","{PROTOCOL_VERSION}":1}}}}}}"#
                )
                .into_bytes(),
                &[],
            ),
        ),
        (
            "malformed sentinel in Mcp-Name",
            modern_case("tools/call", json!({"name": "t.echo", "arguments": {"text": "x"}}), &[("Mcp-Name", "=?base64?dC5lY2hv?")]),
        ),
        (
            "sentinel decoding to invalid UTF-8 in Mcp-Param",
            modern_case(
                "tools/call",
                json!({"name": "t.echo", "arguments": {"text": "x", "region": "eu"}}),
                &[("Mcp-Name", "t.echo"), ("Mcp-Param-Region", "=?base64?7aCA?=")],
            ),
        ),
        (
            "integer argument past i128 mirrored into a header",
            modern_case(
                "tools/call",
                json!({"name": "t.echo", "arguments": {"text": "x", "count": 1e300}}),
                &[("Mcp-Name", "t.echo"), ("Mcp-Param-Count", &format!("1{}", "0".repeat(300)))],
            ),
        ),
        (
            "broken percent-encoding in a template URI",
            modern_case("resources/read", json!({"uri": "test://items/%E9%"}), &[("Mcp-Name", "test://items/%E9%")]),
        ),
        (
            "template integer past i64",
            modern_case(
                "resources/read",
                json!({"uri": "test://num/99999999999999999999/true"}),
                &[("Mcp-Name", "test://num/99999999999999999999/true")],
            ),
        ),
        (
            "requestState with a well-formed header and garbage",
            modern_case(
                "tools/call",
                json!({"name": "t.echo", "arguments": {"text": "x"}, "requestState": format!(
                    "{}..AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA",
                    URL_SAFE_NO_PAD.encode(r#"{"alg":"dir","enc":"A256GCM","kid":"k2"}"#)
                )}),
                &[("Mcp-Name", "t.echo")],
            ),
        ),
        (
            "a session id passed as requestState",
            modern_case(
                "tools/call",
                json!({"name": "t.echo", "arguments": {"text": "x"}, "requestState": live}),
                &[("Mcp-Name", "t.echo")],
            ),
        ),
        (
            "cursor of random base64",
            modern_case("tools/list", json!({"cursor": URL_SAFE_NO_PAD.encode([0xff, 0x00, 0x7b])}), &[]),
        ),
        (
            "cursor naming an id past the view",
            modern_case("tools/list", json!({"cursor": URL_SAFE_NO_PAD.encode(r#"{"v":"x","after":"\uffff"}"#)}), &[]),
        ),
        (
            "non-ASCII session id",
            Case {
                method: Method::POST,
                headers: vec![header("Content-Type", "application/json"), (b"Mcp-Session-Id".to_vec(), b"\xff\xfe".to_vec())],
                body: br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec(),
            },
        ),
        (
            "repeated session id",
            session_case(live, br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, &[header(session::HEADER, live)]),
        ),
        (
            "session request with a modern version header",
            session_case(
                live,
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                &[header("MCP-Protocol-Version", "2026-07-28")],
            ),
        ),
        ("session notification cancelling a null id", session_case(live, br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}"#, &[])),
        ("client response without result or error", session_case(live, br#"{"jsonrpc":"2.0","id":1,"error":null}"#, &[])),
        (
            "initialize with huge capabilities",
            session_case(
                "",
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{"x":"{}"}}}}}}"#,
                    "y".repeat(70_000)
                )
                .as_bytes(),
                &[],
            ),
        ),
        (
            "completion of a template by a URI that is not one",
            modern_case(
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": "test://items/{id"}, "argument": {"name": "id", "value": "\u{0}"}}),
                &[],
            ),
        ),
        (
            "listen with a thousand URIs",
            modern_case(
                "subscriptions/listen",
                json!({"notifications": {"resourceSubscriptions": vec!["test://items/%FF"; 1000]}}),
                &[],
            ),
        ),
    ];
    let setting = Setting {
        adapter: 0,
        realm: 0,
        principal: 0,
        table: Some(LiveSession { client_capabilities: json!({}), log_level: None, subscriptions: 0 }),
    };
    let mut failures = Vec::new();
    for (index, (name, case)) in cases.iter().enumerate() {
        let mut g = Prng::new(index as u64);
        let mut pools = Pools::default();
        let mut reached = Reached::default();
        let problem = match catching(|| exercise(&mut g, &world, &setting, case, None, &mut pools, &mut reached)) {
            Ok(Ok(())) => continue,
            Ok(Err(problem)) => problem,
            Err(panic) => panic,
        };
        failures.push(format!("{name}: {problem}\n{}", case.describe()));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
