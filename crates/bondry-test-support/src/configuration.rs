//! The test configuration: a builder over the embedded default, upstream stanzas and
//! gateways of fixtures, and the authenticator a configuration makes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bondry::assemble::{Overrides, assemble};
use bondry::builtins::Builtins;
use bondry::config;
use bondry_core::capability::CapabilityKind;

use crate::{Binary, served_builtins, test_builtins, ticket_hash};

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

/// The authenticator of `realm` that the configuration `text` makes, as a reload would
/// put it in force.
pub fn authenticator(text: &str, realm: &str) -> Arc<bondry_http_server::Authenticator> {
    let dir = tempfile::tempdir().unwrap();
    let loaded = config::parse("test.toml", text, dir.path().to_owned(), []).unwrap();
    let assembled = assemble(&loaded, &served_builtins(), &Overrides::default(), false).unwrap();
    assembled.server.realms[realm].auth.current()
}
