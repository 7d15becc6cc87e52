//! The fixed world the adapter is fuzzed in: a realm with every kind of capability,
//! principals, listeners of each era, session tables, minted session ids, a fixed clock
//! and a seeded random source. Built once per process: fuzzing runs millions of inputs.

use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bondry_core::BoxFuture;
use bondry_core::capability::{Annotations, Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::dispatch::Outcome;
use bondry_core::handler::{
    Answer, Completion, CompletionAnswer, CompletionQuery, ContentBlock, Handler, HandlerRequest, LogLevel, Message,
    ResourceBody, ResourceContents, Role,
};
use bondry_core::policy::{Grant, Policy, Principal, PrincipalKind, Subject};
use bondry_core::realm::{Key, KeySet, RealmSnapshot};
use bondry_core::registry::{Catalogue, Lint, Registration};
use bondry_core::schema::SchemaBounds;
use bondry_mcp_proto::jsonrpc::Id;
use bondry_mcp_proto::lint::McpLint;
use bondry_mcp_proto::{Adapter, Call, Error, ListenerSettings, LiveSession, Revision, SessionLookup, session};
use bondry_test_support::sans_io::{Quiet, TestRandom};
use http::StatusCode;
use serde_json::{Value, json};

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

/// Runs a planned call through the core as the runtime would: input validation, then
/// the handler (or completion hook), which answers at once.
pub fn invoked(call: &Call) -> Outcome {
    let quiet = Arc::new(Quiet);
    let request = call.handler_request(quiet.clone(), quiet.clone(), quiet);
    let mut future = call.invoke(request);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => unreachable!("the echo handler answers at once"),
    }
}

fn descriptor(id: &str, kind: CapabilityKind, uri: Option<&str>, input_schema: Value) -> Descriptor {
    let resource = matches!(kind, CapabilityKind::Resource | CapabilityKind::ResourceTemplate);
    Descriptor {
        title: Some(format!("Title of {id}")),
        summary: Some("A capability under fuzzing".into()),
        uri: uri.map(str::to_owned),
        mime_type: resource.then(|| "text/plain".to_owned()),
        ..Descriptor::new(
            CapabilityId::new(id).expect("valid capability id"),
            kind,
            input_schema,
            Binding { kind: "builtin".into(), target: id.into() },
        )
    }
}

/// A tool mirroring arguments into `Mcp-Param-*` headers, one needing client input, a
/// prompt with arguments, a static resource, resource templates of every operator, and a
/// tool no grant covers.
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
    let greet = descriptor(
        "p.greet",
        Prompt,
        None,
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "style": {"type": "string", "enum": ["short", "long"]}
        }}),
    );
    let files = Descriptor {
        requires_client: Some(json!({"roots": {}})),
        ..descriptor("r.files", ResourceTemplate, Some("file:///{+path}"), json!({"type": "object"}))
    };
    [
        echo,
        ask,
        descriptor("h.secret", Tool, None, json!({"type": "object"})),
        greet,
        descriptor("r.static", Resource, Some("test://static/one"), json!({"type": "object"})),
        descriptor(
            "r.items",
            ResourceTemplate,
            Some("test://items/{id}"),
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        ),
        descriptor(
            "r.num",
            ResourceTemplate,
            Some("test://num/{n}/{flag}"),
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"n": {"type": "integer"}, "flag": {"type": "boolean"}}}),
        ),
        files,
        descriptor(
            "r.host",
            ResourceTemplate,
            Some("x://{host}{.tld}{/seg}{#frag}"),
            json!({"type": "object", "properties": {"tld": {"type": "number"}}}),
        ),
    ]
    .into_iter()
    .map(|descriptor| Registration { handler: Arc::new(Echo(descriptor.kind)), descriptor: Arc::new(descriptor) })
    .collect()
}

/// The realm's keys: `k2` active, `k1` retired (tokens sealed under it still open).
pub fn keys(active: &str) -> KeySet {
    let key = |id: &str, fill| Key { id: id.into(), secret: [fill; 32] };
    KeySet { active: key(active, 2), retired: vec![key("k1", 1)] }
}

pub fn snapshot(realm: &str, registrations: Vec<Registration>, keys: KeySet) -> RealmSnapshot {
    let lints: [&dyn Lint; 1] = [&McpLint];
    let catalogue = Catalogue::build(1, registrations, &SchemaBounds::default(), &lints).expect("the catalogue builds");
    let grants = ["t.*", "p.*", "r.*"]
        .into_iter()
        .map(|raw| Grant::parse(Subject::Role("user".into()), raw, "mcp").expect("valid grant"))
        .collect();
    RealmSnapshot::new(realm, catalogue, Policy::new(grants), keys)
}

/// The runtime's session table: every session id is live with `.0`, or none is.
pub struct Table(pub Option<LiveSession>);

impl SessionLookup for Table {
    fn find(&self, _sid: &str) -> Option<LiveSession> {
        self.0.clone()
    }
}

pub struct World {
    /// The full realm, and one with nothing in it.
    pub realms: [Arc<RealmSnapshot>; 2],
    /// alice (who owns the live session ids), bob, and the anonymous principal.
    pub principals: [Principal; 3],
    /// Every revision; modern only; handshake only; 2025-06-18 only with one-entry pages.
    pub adapters: [Adapter; 4],
    /// No session is live; a plain one; one with every client capability and a log
    /// level; one at the subscription cap.
    pub tables: [Table; 4],
    pub now: SystemTime,
    /// Session ids an input names as `$S0` to `$S5`, see [`World::mint_tokens`].
    pub tokens: Vec<String>,
    /// A realm of its own for the sealing round trips, so that nothing they mint is ever
    /// valid in the realms above.
    pub sealing_realm: RealmSnapshot,
    /// Every status the error table answers, and 200, 202 and 204.
    pub statuses: Vec<StatusCode>,
    /// Every (status, code) pair the error table answers, and 200 with the codes of the
    /// 400 and 404 rows, which ride 200 inside a session.
    pub error_rows: Vec<(StatusCode, i64)>,
    /// The message refusing a `requestState` that does not open.
    pub state_refusal: String,
}

pub static WORLD: LazyLock<World> = LazyLock::new(World::new);

impl World {
    fn new() -> Self {
        let now = UNIX_EPOCH + Duration::from_secs(1_785_000_000);
        let user = || vec!["user".to_owned()];
        let settings = |revisions: &[Revision], page_size| ListenerSettings {
            revisions: revisions.to_vec(),
            page_size,
            list_ttl_ms: 60_000,
            server_version: "0.0.0-fuzz".into(),
            session_lifetime: Duration::from_secs(3600),
        };
        use Revision::*;
        let adapter = |settings| Adapter::new(settings).expect("a revision is enabled");
        let live = |client_capabilities, log_level, subscriptions| {
            Table(Some(LiveSession { client_capabilities, log_level, subscriptions }))
        };
        let mut statuses = Vec::new();
        let mut error_rows = Vec::new();
        // `Error::examples` (what docs/errors.md renders) leaves out the handshake era's
        // session errors and 429, which the adapter answers too.
        let mut errors = Error::examples();
        errors.extend([
            Error::SessionRequired { id: None },
            Error::SessionNotFound { id: None },
            Error::InvalidSessionVersion { id: None },
            Error::AlreadyInitialized { id: Id::Integer(1) },
            Error::StreamConflict,
            Error::TooManyRequests { id: None, retry_after_secs: 1 },
        ]);
        for row in errors.iter().map(Error::row) {
            statuses.push(row.status);
            if let Some(code) = row.code {
                error_rows.push((row.status, code));
                if matches!(row.status, StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND) {
                    error_rows.push((StatusCode::OK, code));
                }
            }
        }
        statuses.extend([StatusCode::OK, StatusCode::ACCEPTED, StatusCode::NO_CONTENT]);
        let mut world = Self {
            realms: [
                Arc::new(snapshot("default", registrations(), keys("k2"))),
                Arc::new(snapshot("default", Vec::new(), keys("k2"))),
            ],
            principals: [
                Principal::new("alice", PrincipalKind::User, user()),
                Principal::new("bob", PrincipalKind::OAuth, user()),
                Principal::anonymous(Vec::new()),
            ],
            adapters: [
                adapter(settings(&[V2026_07_28, V2025_11_25, V2025_06_18], 2)),
                adapter(settings(&[V2026_07_28], 2)),
                adapter(settings(&[V2025_11_25, V2025_06_18], 2)),
                adapter(settings(&[V2025_06_18], 1)),
            ],
            tables: [
                Table(None),
                live(json!({}), None, 0),
                live(json!({"elicitation": {}, "sampling": {}, "roots": {}}), Some(LogLevel::Debug), 3),
                live(json!({}), Some(LogLevel::Emergency), session::MAX_SUBSCRIPTIONS),
            ],
            now,
            tokens: Vec::new(),
            sealing_realm: snapshot("fuzz", Vec::new(), keys("k2")),
            state_refusal: Error::InvalidRequestState { id: Id::Integer(1) }.row().message,
            statuses,
            error_rows,
        };
        world.tokens = world.mint_tokens();
        world
    }

    /// alice's sessions of 2025-11-25 and 2025-06-18 in the full realm; then ones that
    /// must not resolve for her: bob's, an expired one, another realm's, and one sealed
    /// under a key the realm does not hold.
    fn mint_tokens(&self) -> Vec<String> {
        let mut rng = TestRandom::new(7);
        let [alice, bob, _] = &self.principals;
        let hour = Duration::from_secs(3600);
        let mut mint = |realm: &RealmSnapshot, principal: &Principal, revision, now| {
            session::mint(realm, principal, revision, json!({"roots": {}}), hour, now, &mut rng).0
        };
        let full = &self.realms[0];
        vec![
            mint(full, alice, Revision::V2025_11_25, self.now),
            mint(full, alice, Revision::V2025_06_18, self.now),
            mint(full, bob, Revision::V2025_11_25, self.now),
            mint(full, alice, Revision::V2025_11_25, self.now - 2 * hour),
            mint(&snapshot("other", Vec::new(), keys("k2")), alice, Revision::V2025_11_25, self.now),
            mint(&snapshot("default", Vec::new(), keys("k0")), alice, Revision::V2025_11_25, self.now),
        ]
    }
}
