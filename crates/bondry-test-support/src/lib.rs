//! What Bondry's tests share: the test configuration and its builder, the real server on
//! an ephemeral loopback port and an HTTP client for it, the real binary, the test
//! handlers, and one seeded random source.

pub use bondry_test_sans_io as sans_io;
pub use bondry_test_sans_io::handlers::{Items, NotePrompt};

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bondry::assemble::{Overrides, assemble};
use bondry::builtins::{Builtin, Builtins, FnHandler};
use bondry::config;
use bondry_core::BoxFuture;
use bondry_core::capability::CapabilityKind;
use bondry_core::handler::{
    Answer, ContentBlock, Handler, HandlerRequest, InputKind, InputRequest, LogLevel, Message, ResourceBody,
    ResourceContents, Role,
};
use bondry_http_server::Running;
use bondry_http_server::audit::AuditWriter;
use serde_json::{Value, json};

pub const PROTOCOL: &str = "2026-07-28";

/// How long a test waits for something that must happen: generous, so a loaded machine
/// does not fail a test, yet a wait that succeeds ends as soon as it can.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Polls `condition` every 20 ms until it holds (`true`) or [`PATIENCE`] has passed (`false`).
pub async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The SHA-256 (hex) of a ticket, as the configuration stores it.
pub fn ticket_hash(ticket: &str) -> String {
    bondry_core::canon::sha256_hex(ticket.as_bytes())
}

/// A running server with its audit file.
pub struct TestServer {
    pub addr: SocketAddr,
    running: Option<Running>,
    audit: Option<Arc<AuditWriter>>,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

/// The default test configuration with the listener serving only the modern revision.
pub fn modern_only_config() -> String {
    TestConfig::new().set("listeners.main.protocol_versions", vec!["2026-07-28"]).text()
}

/// A test configuration built from [`default_config`] key by key, so that no test edits
/// configuration text: `TestConfig::new().set("listeners.main.page_size", 10).text()`.
#[derive(Debug, Clone)]
pub struct TestConfig(toml::Table);

impl Default for TestConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl TestConfig {
    /// The default test configuration.
    pub fn new() -> Self {
        Self(default_config().parse().expect("the default test configuration is TOML"))
    }

    /// A listener on an ephemeral loopback port, the admin listener on another, and an
    /// empty default realm: for tests that build a deployment of their own.
    pub fn bare() -> Self {
        let listener = table([("bind", "127.0.0.1:0".into())]);
        let listeners = table([("main", listener.into())]);
        let realms = table([("default", toml::Table::new().into())]);
        let admin = table([("bind", "127.0.0.1:0".into())]);
        Self(table([("listeners", listeners.into()), ("realms", realms.into()), ("admin", admin.into())]))
    }

    /// The configuration `examples/NAME` of the repository, its listener moved to an
    /// ephemeral loopback port.
    pub fn example(name: &str) -> Self {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Self(text.parse().expect("the example is TOML"))
            .set("listeners.main.bind", "127.0.0.1:0")
            .set("admin.bind", "127.0.0.1:0")
    }

    /// Sets the key at the dotted `path`, making the tables on the way.
    pub fn set(mut self, path: &str, value: impl Into<toml::Value>) -> Self {
        let (table, key) = self.table_of(path);
        table.insert(key.to_owned(), value.into());
        self
    }

    /// Removes the key at the dotted `path`.
    pub fn remove(mut self, path: &str) -> Self {
        let (table, key) = self.table_of(path);
        assert!(table.remove(key).is_some(), "{path} is not set");
        self
    }

    /// Appends `entry` to the array of tables at `path` (`realms.default.roles`).
    pub fn push(mut self, path: &str, entry: toml::Table) -> Self {
        let (table, key) = self.table_of(path);
        let array = table.entry(key).or_insert_with(|| toml::Value::Array(Vec::new()));
        array.as_array_mut().unwrap_or_else(|| panic!("{path} is not an array")).push(entry.into());
        self
    }

    /// Keeps only the entries of the array of tables at `path` for which `keep` holds.
    pub fn retain(mut self, path: &str, keep: impl Fn(&toml::Table) -> bool) -> Self {
        let (table, key) = self.table_of(path);
        let array = table.get_mut(key).and_then(toml::Value::as_array_mut).unwrap_or_else(|| panic!("{path}"));
        array.retain(|entry| entry.as_table().is_some_and(&keep));
        self
    }

    /// Adds the capability `id` of `kind` served by `handler` (at `uri`, for resources and
    /// templates) to the default realm.
    pub fn capability(self, id: &str, kind: &str, handler: &str, uri: Option<&str>) -> Self {
        self.capability_in("default", id, kind, handler, uri)
    }

    /// [`TestConfig::capability`] in `realm`.
    pub fn capability_in(self, realm: &str, id: &str, kind: &str, handler: &str, uri: Option<&str>) -> Self {
        let mut entry = table([("id", id.into()), ("kind", kind.into()), ("handler", handler.into())]);
        if let Some(uri) = uri {
            entry.insert("uri".into(), uri.into());
        }
        self.push(&format!("realms.{realm}.capabilities"), entry)
    }

    /// Sets `key` of the default realm's capability `id`.
    pub fn set_on_capability(self, id: &str, key: &str, value: impl Into<toml::Value>) -> Self {
        self.set_on_array("realms.default.capabilities", id, key, value)
    }

    /// Sets `key` of the entry whose `id` (or, for an upstream, `name`) is `id` in the
    /// array of tables at `path`.
    pub fn set_on_array(mut self, path: &str, id: &str, key: &str, value: impl Into<toml::Value>) -> Self {
        let (table, name) = self.table_of(path);
        let named = |entry: &toml::Value, field: &str| entry.get(field).and_then(toml::Value::as_str) == Some(id);
        let entry = table
            .get_mut(name)
            .and_then(toml::Value::as_array_mut)
            .and_then(|entries| entries.iter_mut().find(|entry| named(entry, "id") || named(entry, "name")))
            .and_then(toml::Value::as_table_mut)
            .unwrap_or_else(|| panic!("no entry {id} in {path}"));
        entry.insert(key.to_owned(), value.into());
        self
    }

    /// Leaves the default realm's capability `id` out.
    pub fn without_capability(self, id: &str) -> Self {
        self.retain("realms.default.capabilities", |entry| entry.get("id").and_then(toml::Value::as_str) != Some(id))
    }

    /// Adds the role `name` granting `grants` to the default realm.
    pub fn role(self, name: &str, grants: &[&str]) -> Self {
        self.role_in("default", name, grants)
    }

    /// [`TestConfig::role`] in `realm`.
    pub fn role_in(self, realm: &str, name: &str, grants: &[&str]) -> Self {
        let entry = table([("name", name.into()), ("grants", grants.to_vec().into())]);
        self.push(&format!("realms.{realm}.roles"), entry)
    }

    /// Adds the principal `id` with `roles` to the default realm.
    pub fn principal(self, id: &str, roles: &[&str]) -> Self {
        self.push("realms.default.principals", table([("id", id.into()), ("roles", roles.to_vec().into())]))
    }

    /// Adds a ticket of `principal` whose plain text is `ticket` to the default realm.
    pub fn ticket(self, ticket: &str, principal: &str) -> Self {
        self.push(
            "realms.default.tickets",
            table([("sha256", ticket_hash(ticket).into()), ("principal", principal.into())]),
        )
    }

    /// The configuration as the server reads it.
    pub fn text(&self) -> String {
        toml::to_string(&self.0).expect("a table renders as TOML")
    }

    /// Writes the configuration into `dir` as `name`; its path.
    pub fn written(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, self.text()).expect("the configuration is written");
        path
    }

    /// The table holding the last key of `path`, and that key.
    fn table_of<'a>(&mut self, path: &'a str) -> (&mut toml::Table, &'a str) {
        let (tables, key) = path.rsplit_once('.').map_or(("", path), |(tables, key)| (tables, key));
        let mut table = &mut self.0;
        for name in tables.split('.').filter(|name| !name.is_empty()) {
            let next = table.entry(name).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table = next.as_table_mut().unwrap_or_else(|| panic!("{name} in {path} is not a table"));
        }
        (table, key)
    }
}

/// A Bondry to front as an upstream: the demo tools `ids`, open to anyone.
pub fn demo_upstream(ids: &[&str]) -> TestConfig {
    let demo = TestConfig::bare().set("realms.default.anonymous_roles", vec!["demo"]).role("demo", &["demo.*"]);
    ids.iter().fold(demo, |config, id| config.capability(id, "tool", id, None))
}

/// Which revisions the Bondry behind a test gateway serves: all three, or only the
/// handshake ones (so the gateway bridges every modern caller to a session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamEra {
    Modern,
    Handshake,
}

impl UpstreamEra {
    pub const BOTH: [UpstreamEra; 2] = [UpstreamEra::Modern, UpstreamEra::Handshake];

    /// The environment that makes a Bondry serve this era's revisions.
    pub fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            UpstreamEra::Modern => &[],
            UpstreamEra::Handshake => {
                &[("BONDRY__LISTENERS__MAIN__PROTOCOL_VERSIONS", r#"["2025-11-25", "2025-06-18"]"#)]
            }
        }
    }
}

/// A gateway fronting, as the upstream `up`, a Bondry serving the demo tools (with
/// `admin.reset` configured but granted to nobody) at the revisions of an
/// [`UpstreamEra`]: what the SDK clients drive through the gateway. Both are killed on drop.
pub struct DemoGateway {
    _dir: tempfile::TempDir,
    _upstream: Binary,
    pub front: Binary,
}

impl DemoGateway {
    /// Both serving, once the gateway listed the upstream.
    pub async fn start(exe: &Path, era: UpstreamEra) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let demo = demo_upstream(&["demo.echo", "demo.add", "demo.forecast", "admin.reset"]);
        let upstream = Binary::serve(exe, &demo.written(dir.path(), "up.toml"), era.env());
        let config = gateway(http_upstream("up", upstream.port), &["up.*"]).written(dir.path(), "gateway.toml");
        let front = Binary::serve(exe, &config, &[]);
        front.logged("upstream up: ", 1).await;
        Self { _dir: dir, _upstream: upstream, front }
    }

    /// The gateway's endpoint, named by `localhost` as SDK clients are given it.
    pub fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.front.port)
    }
}

/// How the conformance fixtures (`examples/conformance.toml`) are served to a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixtures {
    /// By Bondry itself.
    Native,
    /// Through `examples/gateway.toml`, by an upstream Bondry serving this era.
    Gateway(UpstreamEra),
}

impl Fixtures {
    pub const ALL: [Fixtures; 3] =
        [Fixtures::Native, Fixtures::Gateway(UpstreamEra::Modern), Fixtures::Gateway(UpstreamEra::Handshake)];
}

/// The conformance fixtures served as a [`Fixtures`] says; killed on drop.
pub struct FixtureRealm {
    _dir: tempfile::TempDir,
    _upstream: Option<Binary>,
    pub front: Binary,
}

impl FixtureRealm {
    /// Serving, once a gateway has listed its upstream.
    pub async fn start(exe: &Path, fixtures: Fixtures) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let native = TestConfig::example("conformance.toml").written(dir.path(), "conformance.toml");
        let Fixtures::Gateway(era) = fixtures else {
            return Self { _upstream: None, front: Binary::serve(exe, &native, &[]), _dir: dir };
        };
        let upstream = Binary::serve(exe, &native, era.env());
        let url = format!("http://127.0.0.1:{}/mcp", upstream.port);
        let config = TestConfig::example("gateway.toml")
            .set_on_array("realms.default.upstreams", "fixtures", "url", url)
            .written(dir.path(), "gateway.toml");
        let front = Binary::serve(exe, &config, &[]);
        front.logged("upstream fixtures: ", 1).await;
        Self { _dir: dir, _upstream: Some(upstream), front }
    }

    /// The realm's endpoint, named by `localhost` as SDK clients are given it.
    pub fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.front.port)
    }
}

/// The stanza of an upstream named `name` reached over Streamable HTTP on loopback `port`.
pub fn http_upstream(name: &str, port: u16) -> toml::Table {
    table([("name", name.into()), ("transport", "http".into()), ("url", format!("http://127.0.0.1:{port}/mcp").into())])
}

/// A gateway whose anonymous callers hold `grants`, fronting the upstream `stanza`; its
/// pins live as long as the process.
pub fn gateway(stanza: toml::Table, grants: &[&str]) -> TestConfig {
    TestConfig::bare()
        .set("pin_store", "memory")
        .set("realms.default.anonymous_roles", vec!["caller"])
        .role("caller", grants)
        .push("realms.default.upstreams", stanza)
}

/// A TOML table from key-value pairs, for [`TestConfig::push`].
pub fn table<const N: usize>(pairs: [(&str, toml::Value); N]) -> toml::Table {
    pairs.into_iter().map(|(key, value)| (key.to_owned(), value)).collect()
}

/// The default test configuration: the demo realm plus the test tools, all granted
/// to anonymous callers except `admin.*` and `hidden.*`; all three revisions served.
/// The test prompts and resources are registered as handlers but not configured.
pub fn default_config() -> String {
    let mut text = String::from(
        r#"
shutdown_grace_ms = 2000
[listeners.main]
bind = "127.0.0.1:0"
max_body_bytes = 4096
page_size = 3

[realms.default]
anonymous_roles = ["demo"]

[[realms.default.roles]]
name = "demo"
grants = ["demo.*", "test.*"]
"#,
    );
    let (demo, test) = (Builtins::demo(), test_builtins());
    for handler in demo.names().chain(test.names()) {
        let builtin = demo.get(handler).or_else(|| test.get(handler)).unwrap();
        if builtin.kind != CapabilityKind::Tool {
            continue;
        }
        text.push_str(&format!(
            "\n[[realms.default.capabilities]]\nid = \"{handler}\"\nkind = \"tool\"\nhandler = \"{handler}\"\n"
        ));
    }
    text
}

/// The demo builtins and the test ones.
fn builtins() -> Builtins {
    let mut builtins = Builtins::demo();
    for name in test_builtins().names() {
        builtins.register(name, test_builtins().get(name).unwrap().clone());
    }
    builtins
}

/// The authenticator of `realm` that the configuration `text` makes, as a reload would
/// put it in force.
pub fn authenticator(text: &str, realm: &str) -> Arc<bondry_http_server::Authenticator> {
    let dir = tempfile::tempdir().unwrap();
    let loaded = config::parse("test.toml", text, dir.path().to_owned(), []).unwrap();
    let assembled = assemble(&loaded, &builtins(), &Overrides::default(), false).unwrap();
    assembled.server.realms[realm].auth.current()
}

impl TestServer {
    pub async fn start() -> Self {
        Self::with_config(&default_config()).await
    }

    /// Starts a server from TOML text; the audit sink is a file in a fresh temp dir.
    pub async fn with_config(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("{text}\n[audit]\nsink = \"file\"\npath = \"audit.jsonl\"\n");
        let loaded = config::parse("test.toml", &text, dir.path().to_owned(), []).unwrap();
        let assembled = assemble(&loaded, &builtins(), &Overrides::default(), true).unwrap();
        let running = bondry_http_server::start(assembled.server).await.unwrap();
        let addr = running.local_addrs()[0].1;
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        Self { addr, running: Some(running), audit: assembled.audit, dir, client }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The live registry of `realm`, as a host program reaches it.
    pub fn registry(&self, realm: &str) -> Arc<bondry_core::realm::Registry> {
        self.running.as_ref().unwrap().registry(realm).unwrap()
    }

    /// Swaps in `realm`'s catalogue without the capability `id`, as a host program would:
    /// what makes the server tell its clients that a list changed.
    pub fn swap_without(&self, realm: &str, id: &str) {
        use bondry_core::registry::{Catalogue, Registration};
        let registry = self.registry(realm);
        let old = registry.snapshot();
        let registrations = old
            .catalogue
            .iter()
            .filter(|capability| capability.id().as_str() != id)
            .map(|capability| Registration {
                descriptor: capability.descriptor.clone(),
                handler: capability.handler.clone(),
            })
            .collect();
        let lint = bondry_mcp_proto::lint::McpLint;
        let catalogue =
            Catalogue::build(old.catalogue.version() + 1, registrations, &Default::default(), &[&lint]).unwrap();
        registry.swap(bondry_core::realm::RealmSnapshot::new(
            &old.realm,
            catalogue,
            old.policy.clone(),
            old.keys.clone(),
        ));
    }

    /// Who may call `realm`, as a host program reaches it.
    pub fn auth(&self, realm: &str) -> Arc<bondry_http_server::AuthSlot> {
        self.running.as_ref().unwrap().auth(realm).unwrap()
    }

    /// Calls running and event streams open right now.
    pub fn gauges(&self) -> bondry_http_server::gauges::Reading {
        self.running.as_ref().unwrap().gauges()
    }

    /// Waits up to [`PATIENCE`] for no call to run and no stream to be open.
    pub async fn settles(&self) -> bool {
        let quiet = bondry_http_server::gauges::Reading { calls: 0, streams: 0 };
        eventually(|| self.gauges() == quiet).await
    }

    /// Waits up to [`PATIENCE`] for a call to be running.
    pub async fn call_running(&self) -> bool {
        eventually(|| self.gauges().calls > 0).await
    }

    pub fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// Waits up to [`PATIENCE`] for the audit file to hold `count` records (the writer
    /// flushes whenever it has nothing more to write); the caller checks them after `stop`.
    pub async fn audited(&self, count: usize) {
        let path = self.audit_path();
        eventually(|| std::fs::read_to_string(&path).is_ok_and(|text| text.matches('\n').count() >= count)).await;
    }

    /// Sends `request` with `client` and goes away (drops it, which closes its connection)
    /// once a call runs on the server. Panics if the answer comes first or no call starts
    /// within [`PATIENCE`]; the handler must run long enough for its start to be seen.
    pub async fn send_and_leave(&self, client: &reqwest::Client, request: &Req) {
        let url = format!("http://{}{}", self.addr, request.path);
        let send = request.builder(client, &url).body(request.body.clone()).send();
        tokio::select! {
            answered = send => panic!("the client gives up first, yet it was answered: {answered:?}"),
            running = self.call_running() => assert!(running, "no call started within {PATIENCE:?}"),
        }
    }

    /// Sends a request built by `request` to `path` (default `/mcp`).
    pub async fn send(&self, request: Req) -> Resp {
        let url = format!("http://{}{}", self.addr, request.path);
        let response = request.builder(&self.client, &url).body(request.body.clone()).send().await.unwrap();
        Resp::read(response).await
    }

    /// Stops the server, flushes the audit sink and returns its records.
    pub async fn stop(self) -> Vec<Value> {
        self.stop_expecting(true).await
    }

    /// [`TestServer::stop`], asserting whether in-flight requests drained within the grace period.
    pub async fn stop_expecting(mut self, drained: bool) -> Vec<Value> {
        assert_eq!(self.running.take().unwrap().shutdown().await, drained, "drained within the grace period");
        if let Some(audit) = self.audit.take() {
            audit.close();
        }
        let text = std::fs::read_to_string(self.audit_path()).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }
}

/// A request under construction: a modern POST by default.
#[derive(Clone)]
pub struct Req {
    pub method: reqwest::Method,
    pub path: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Req {
    /// A POST with the standard media headers and no body.
    pub fn post() -> Self {
        Self {
            method: reqwest::Method::POST,
            path: "/mcp".into(),
            headers: vec![
                ("content-type".into(), b"application/json".to_vec()),
                ("accept".into(), b"application/json, text/event-stream".to_vec()),
            ],
            body: Vec::new(),
        }
    }

    /// A complete modern request for `method` with `params` (to which `_meta` is added):
    /// media headers, `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` when the
    /// params name a tool.
    pub fn modern(method: &str, params: Value) -> Self {
        let mut params = params;
        params["_meta"] = meta();
        let name = params.get("name").and_then(Value::as_str).map(str::to_owned);
        let mut request = Self::post()
            .header("MCP-Protocol-Version", PROTOCOL)
            .header("Mcp-Method", method)
            .json(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
        if let Some(name) = name {
            request = request.header("Mcp-Name", &name);
        }
        request
    }

    /// A modern `tools/call` of `name` with `arguments`.
    pub fn call(name: &str, arguments: Value) -> Self {
        Self::modern("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// A reqwest builder with this request's method and headers, and no body yet.
    pub fn builder(&self, client: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
        let mut builder = client.request(self.method.clone(), url);
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), reqwest::header::HeaderValue::from_bytes(value).unwrap());
        }
        builder
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.as_bytes().to_vec()));
        self
    }

    pub fn header_bytes(mut self, name: &str, value: &[u8]) -> Self {
        self.headers.push((name.to_owned(), value.to_vec()));
        self
    }

    /// Removes every header called `name` (ignoring case).
    pub fn without(mut self, name: &str) -> Self {
        self.headers.retain(|(have, _)| !have.eq_ignore_ascii_case(name));
        self
    }

    /// Replaces header `name` with `value`.
    pub fn replace(self, name: &str, value: &str) -> Self {
        self.without(name).header(name, value)
    }

    pub fn json(mut self, body: Value) -> Self {
        self.body = serde_json::to_vec(&body).unwrap();
        self
    }

    pub fn raw(mut self, body: &str) -> Self {
        self.body = body.as_bytes().to_vec();
        self
    }

    pub fn method(mut self, method: reqwest::Method) -> Self {
        self.method = method;
        self
    }

    pub fn path(mut self, path: &str) -> Self {
        self.path = path.to_owned();
        self
    }
}

/// The modern `_meta` every request carries.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bondry-tests", "version": "0"}
    })
}

/// A response, read whole.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Resp {
    async fn read(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap().to_vec();
        Self { status, headers, body }
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// Asserts status and the exact JSON-RPC error (and that `id` is as given).
    #[track_caller]
    pub fn assert_error(&self, status: u16, id: Option<Value>, code: i64, message: &str) -> Value {
        assert_eq!(self.status, status, "status of {}", self.text());
        assert_eq!(self.header("content-type"), Some("application/json"));
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body.get("id").cloned(), id, "id of {body}");
        assert_eq!(body["error"]["code"], code, "code of {body}");
        assert_eq!(body["error"]["message"], message, "message of {body}");
        assert!(body.get("result").is_none());
        body["error"].get("data").cloned().unwrap_or(Value::Null)
    }

    /// Asserts a 200 result for id 1 and returns it.
    #[track_caller]
    pub fn assert_result(&self) -> Value {
        assert_eq!(self.status, 200, "status of {}", self.text());
        let body = self.json();
        assert_eq!(body["id"], 1, "{body}");
        assert!(body.get("error").is_none(), "{body}");
        body["result"].clone()
    }
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

impl TestServer {
    /// Sends `request` as raw HTTP/1.1 bytes, with exactly the headers it has (no client
    /// adds defaults), and returns the status line's code and the body.
    pub async fn send_raw(&self, request: &Req) -> (u16, Vec<u8>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut head =
            format!("{} {} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n", request.method, request.path, self.addr)
                .into_bytes();
        for (name, value) in &request.headers {
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(format!("content-length: {}\r\n\r\n", request.body.len()).as_bytes());
        head.extend_from_slice(&request.body);
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(&head).await.unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        let text = String::from_utf8_lossy(&response);
        let status = text[9..12].parse().unwrap();
        let body_at = text.find("\r\n\r\n").unwrap() + 4;
        (status, response[body_at..].to_vec())
    }
}

/// A JSON-RPC request with id 1.
pub fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// An `initialize` offering `version` and declaring `capabilities`.
pub fn initialize_request(version: &str, capabilities: Value) -> Req {
    Req::post().json(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}
    }))
}

/// Opens a 2025-11-25 session declaring no client capabilities; returns its id.
pub async fn open(server: &TestServer) -> String {
    open_with(server, json!({})).await
}

/// Opens a 2025-11-25 session declaring `capabilities`; returns its id.
pub async fn open_with(server: &TestServer, capabilities: Value) -> String {
    open_at(server, "2025-11-25", capabilities).await
}

/// Opens a session at `version` declaring `capabilities`, and sends
/// `notifications/initialized`; returns its id.
pub async fn open_at(server: &TestServer, version: &str, capabilities: Value) -> String {
    let response = server.send(initialize_request(version, capabilities)).await;
    assert_eq!(response.status, 200, "{}", response.text());
    let sid = response.header("mcp-session-id").expect("a session id").to_owned();
    let initialized =
        server.send(in_session(&sid, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))).await;
    assert_eq!(initialized.status, 202);
    sid
}

/// A POST inside session `sid`.
pub fn in_session(sid: &str, body: Value) -> Req {
    Req::post().header("Mcp-Session-Id", sid).json(body)
}

/// The JSON-RPC messages of an event stream body, in order (comments and empty events skipped).
pub fn sse_messages(body: &str) -> Vec<Value> {
    body.split("\n\n").filter_map(event_data).collect()
}

/// The JSON of one event's `data` lines, if it has any.
pub fn event_data(event: &str) -> Option<Value> {
    let data: Vec<&str> = event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    if data.is_empty() {
        return None;
    }
    Some(serde_json::from_str(&data.join("\n")).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {event:?}")))
}

/// Reads an open event stream one message at a time.
pub struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    pub fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self { response, buffer: String::new() }
    }

    /// The next message, or `None` if none arrives within `limit` or the stream ends.
    pub async fn next(&mut self, limit: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            while let Some(at) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..at + 2).collect();
                if let Some(message) = event_data(&event) {
                    return Some(message);
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk()).await.ok()?.ok()??;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
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

/// The `rmcp-stdio-upstream` binary of this crate (an rmcp 3.11 server over stdio).
pub fn test_upstream_exe() -> PathBuf {
    sibling_exe("rmcp-stdio-upstream")
}

/// The `catalogue-upstream` binary of this crate: an rmcp 3.11 server over stdio serving
/// the definitions of a JSON file, verbatim, and saying when the file changes.
pub fn catalogue_upstream_exe() -> PathBuf {
    sibling_exe("catalogue-upstream")
}

/// The `hostile-upstream` binary of this crate: an MCP server that lists what a JSON
/// file says byte for byte (repeated names, unknown fields, oversized entries), over
/// stdio or, with `--http`, Streamable HTTP.
pub fn hostile_upstream_exe() -> PathBuf {
    sibling_exe("hostile-upstream")
}

/// The binary `name` of this crate, found beside the running executable: an integration
/// test runs from `target/<profile>/deps`, the `bondry` binary from `target/<profile>`.
fn sibling_exe(name: &str) -> PathBuf {
    let name = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let exe = std::env::current_exe().expect("the running executable has a path");
    exe.ancestors().skip(1).take(2).map(|dir| dir.join(&name)).find(|candidate| candidate.is_file()).unwrap_or_else(
        || panic!("no {name} beside {}: build it: cargo build -p bondry-test-support --bins", exe.display()),
    )
}

/// An interop client: `program` run with `args` in `dir` of the repository, within a
/// minute, with a throwaway `HOME` (nothing it caches leaks between runs or into the
/// user's); its stdout, once it exited with success. When `program` is not installed
/// the test passes, saying so, unless the environment variable `required` is set (as
/// `scripts/test` sets it), which fails it with `install`, the way to install it.
pub async fn interop(dir: &str, program: &str, args: Vec<String>, required: &str, install: &str) -> Option<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
    let program = dir.join(program);
    if !program.exists() {
        assert!(std::env::var_os(required).is_none(), "{} is missing: {install}", program.display());
        eprintln!("skipped: {install} (scripts/test does)");
        return None;
    }
    let home = tempfile::tempdir().unwrap();
    let shown = program.display().to_string();
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || {
            Command::new(program).args(args).current_dir(dir).env("HOME", home.path()).output()
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("{shown} finishes within a minute"))
    .unwrap()
    .unwrap_or_else(|e| panic!("{shown} starts: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{shown} {:?} failed:\n{stdout}\n{stderr}", output.status);
    Some(stdout)
}

/// The `bondry` binary cargo built for the calling integration test of the `bondry` crate.
#[macro_export]
macro_rules! bondry_exe {
    () => {
        ::std::path::Path::new(env!("CARGO_BIN_EXE_bondry"))
    };
}

/// The real `bondry` binary serving a configuration file: its port and its log so far.
pub struct Binary {
    pub child: Child,
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Binary {
    /// `EXE serve --config CONFIG` with `env` added, once it has printed its banner; `EXE`
    /// is the binary cargo built for the test ([`bondry_exe!`]).
    pub fn serve(exe: &Path, config: &Path, env: &[(&str, &str)]) -> Self {
        Self::serve_with(exe, config, &[], env)
    }

    /// [`Binary::serve`] with `args` after `--config CONFIG`.
    pub fn serve_with(exe: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(exe)
            .args(["serve", "--config", config.to_str().unwrap()])
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bondry starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (lines, feed) = (BufReader::new(child.stderr.take().unwrap()).lines(), Arc::clone(&log));
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                feed.lock().unwrap().push(line);
            }
        });
        // A debug binary on a loaded machine may take a while to start (as in `tests/cli.rs`).
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            let banner = log.lock().unwrap().iter().find_map(|line| {
                line.strip_prefix("listening on http://127.0.0.1:")?.strip_suffix("/mcp")?.parse().ok()
            });
            if let Some(port) = banner {
                break port;
            }
            assert!(Instant::now() < deadline, "no banner: {:?}", log.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        };
        Self { child, port, log }
    }

    /// The port of its admin listener, once it has said where it listens.
    pub fn admin_port(&self) -> Option<u16> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .find_map(|line| line.strip_prefix("admin listening on http://127.0.0.1:")?.parse().ok())
    }

    /// Every line logged so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// How many lines logged so far contain `text`.
    pub fn count_logged(&self, text: &str) -> usize {
        self.log.lock().unwrap().iter().filter(|line| line.contains(text)).count()
    }

    /// Waits until the log holds `count` lines containing `text`, within 30 s: long
    /// enough for an upstream whose first start timed out (`connect_timeout_ms`, 10 s) to
    /// be connected again, as a slow child on a loaded machine sometimes is.
    pub async fn logged(&self, text: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.count_logged(text) >= count {
                return;
            }
            assert!(Instant::now() < deadline, "{count} × {text:?} not logged: {:?}", self.log.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A modern POST of `method` with `params` (`_meta` added unless given), id 7.
    pub async fn post(&self, client: &reqwest::Client, method: &str, params: Value) -> reqwest::Response {
        self.post_with(client, &[], method, params).await
    }

    /// [`Binary::post`] with `headers` added.
    pub async fn post_with(
        &self,
        client: &reqwest::Client,
        headers: &[(&str, &str)],
        method: &str,
        params: Value,
    ) -> reqwest::Response {
        let mut params = params;
        if params.get("_meta").is_none() {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        let mut request = client
            .post(format!("http://127.0.0.1:{}/mcp", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL)
            .header("Mcp-Method", method);
        if let Some(name) = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str) {
            request = request.header("Mcp-Name", name);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
            .body(json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string())
            .send()
            .await
            .unwrap()
    }
}

impl Binary {
    /// A handshake-era session with this server: its id, after `initialize` (offering
    /// 2025-11-25, no client capabilities) and `notifications/initialized`.
    pub async fn session(&self, client: &reqwest::Client) -> String {
        self.session_with(client, json!({})).await
    }

    /// [`Binary::session`] declaring the client `capabilities`.
    pub async fn session_with(&self, client: &reqwest::Client, capabilities: Value) -> String {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "bondry-tests", "version": "0"}}});
        let response = client
            .post(format!("http://127.0.0.1:{}/mcp", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "initialize: {:?}", response.text().await);
        let sid = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized =
            self.in_session(client, &sid, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(initialized.await, Value::Null, "a notification has no answer");
        sid
    }

    /// Posts `message` in the session `sid`; the raw response.
    pub async fn post_in_session(&self, client: &reqwest::Client, sid: &str, message: Value) -> reqwest::Response {
        client
            .post(format!("http://127.0.0.1:{}/mcp", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&message)
            .send()
            .await
            .unwrap()
    }

    /// Posts `message` in the session `sid`; its answer (on an event stream, the response
    /// among its messages), or `Null` when there is none.
    pub async fn in_session(&self, client: &reqwest::Client, sid: &str, message: Value) -> Value {
        let response = self.post_in_session(client, sid, message).await;
        let stream = response
            .headers()
            .get("content-type")
            .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
        let text = response.text().await.unwrap();
        if stream {
            let response = |message: &Value| message.get("id").is_some() && message.get("method").is_none();
            return sse_messages(&text).into_iter().find(response).unwrap_or(Value::Null);
        }
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
