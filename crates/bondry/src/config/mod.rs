//! The configuration file: its raw shape, the environment overlay, and loading.
//!
//! The raw structs mirror the TOML one to one and refuse unknown keys. Before serde reads
//! the file into them, [`check`] walks it against their [`shape`] so that every unknown
//! key and mistyped value is named at once, each at its line and column ([`locate`]).
//! Semantic checks (ids, schemas, grants, handlers) happen in [`crate::assemble`], which
//! names the key path of anything it refuses; [`Loaded::places`] places those too.

mod check;
pub(crate) mod diagnostics;
mod locate;
mod shape;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

pub use locate::{KeyPath, Place, Places};

/// The embedded default, served by `bondry serve` without `--config`.
pub const EMBEDDED_DEFAULT: &str = include_str!("../default.toml");

/// Prefix of environment overrides: `BONDRY__LISTENERS__MAIN__BIND=...`.
pub const ENV_PREFIX: &str = "BONDRY__";

/// One refusal of a configuration: the file, where in it, the key path, and a message
/// naming the offending value and what is accepted instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file (or `<embedded default>`) the error is about.
    pub origin: String,
    /// The line and column, or the environment variable, the offending value came from;
    /// none for what is not about one spot (a file that cannot be read).
    pub place: Option<Place>,
    /// The dotted key path, as `realms.default.roles[1].grants[0]`; none for what is not
    /// about one key (a file that cannot be read or is not TOML).
    pub key: Option<String>,
    pub message: String,
}

/// `FILE:LINE:COLUMN: KEY: MESSAGE`, the form editors and terminals jump to; a value set
/// by an override names its variable instead of the file.
impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.place {
            Some(Place::File { line, column }) => write!(f, "{}:{line}:{column}: ", self.origin)?,
            Some(Place::Env(name)) => write!(f, "environment variable {name}: ")?,
            None => write!(f, "{}: ", self.origin)?,
        }
        match &self.key {
            Some(key) => write!(f, "{key}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Every refusal of one configuration, in the order the checks found them; never empty.
/// Displayed one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(Vec<ConfigError>);

impl ConfigErrors {
    /// `None` for an empty list: a refusal needs at least one reason.
    pub fn new(errors: Vec<ConfigError>) -> Option<Self> {
        (!errors.is_empty()).then_some(Self(errors))
    }

    pub fn iter(&self) -> impl Iterator<Item = &ConfigError> {
        self.0.iter()
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(error: ConfigError) -> Self {
        Self(vec![error])
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

/// The environment a configuration is loaded in. The `BONDRY__` overlay is applied from
/// it and the secrets the file names (`secret_env`) are read from it, so whoever loads a
/// configuration chooses one environment for both: the process's (`std::env::vars()`)
/// or one a test or an embedder injects.
#[derive(Clone, Default)]
pub struct Environment(BTreeMap<String, String>);

impl Environment {
    /// The value of the variable `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

impl FromIterator<(String, String)> for Environment {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(variables: I) -> Self {
        Self(variables.into_iter().collect())
    }
}

/// The names only: values may be secrets.
impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default = "default_grace")]
    pub shutdown_grace_ms: u64,
    /// Where state that must survive restarts is kept: realms' generated keys, pins.
    pub data_dir: Option<PathBuf>,
    /// Where upstream pins are kept: `pins.sqlite3` in `data_dir`, or this process only.
    #[serde(default)]
    pub pin_store: PinStoreKind,
    /// How the log on stderr is written.
    #[serde(default)]
    pub log_format: LogFormat,
    #[serde(default)]
    pub listeners: BTreeMap<String, RawListener>,
    #[serde(default)]
    pub realms: BTreeMap<String, RawRealm>,
    #[serde(default)]
    pub audit: RawAudit,
    #[serde(default)]
    pub admin: RawAdmin,
}

impl RawConfig {
    /// Whether any realm fronts an upstream: pins and the admin listener matter then.
    pub fn has_upstreams(&self) -> bool {
        self.realms.values().any(|realm| !realm.upstreams.is_empty())
    }

    /// Whether a realm has backends other than builtin handlers: upstreams, OpenAPI
    /// documents or web services.
    pub fn has_backends(&self) -> bool {
        self.has_upstreams()
            || self.realms.values().any(|realm| {
                !realm.openapi.is_empty() || realm.capabilities.iter().any(|capability| capability.backend != "builtin")
            })
    }
}

/// `[admin]`: the admin listener, where operators review and approve pins.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    #[serde(default = "admin_bind")]
    pub bind: String,
    /// A bind that is not loopback.
    #[serde(default)]
    pub allow_remote: bool,
    #[serde(default)]
    pub tokens: Vec<RawAdminToken>,
    /// Failed attempts verified per minute across all addresses.
    #[serde(default = "default_admin_failures")]
    pub max_failed_attempts_per_minute: u64,
    #[serde(default = "default_admin_connections")]
    pub max_connections: u64,
    #[serde(default = "default_header_read_timeout")]
    pub header_read_timeout_ms: u64,
    #[serde(default = "default_body_read_timeout")]
    pub body_read_timeout_ms: u64,
    /// `GET /metrics` answers without a token.
    #[serde(default)]
    pub metrics_public: bool,
    /// Calls are counted per capability id.
    #[serde(default)]
    pub metrics_per_capability: bool,
}

impl Default for RawAdmin {
    fn default() -> Self {
        Self {
            bind: admin_bind(),
            allow_remote: false,
            tokens: Vec::new(),
            max_failed_attempts_per_minute: default_admin_failures(),
            max_connections: default_admin_connections(),
            header_read_timeout_ms: default_header_read_timeout(),
            body_read_timeout_ms: default_body_read_timeout(),
            metrics_public: false,
            metrics_per_capability: false,
        }
    }
}

fn admin_bind() -> String {
    "127.0.0.1:7374".into()
}

fn default_admin_failures() -> u64 {
    100
}

fn default_admin_connections() -> u64 {
    64
}

/// `[[admin.tokens]]`: a token operators present, read from the environment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdminToken {
    pub name: String,
    pub token_env: String,
}

fn default_grace() -> u64 {
    10_000
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawListener {
    pub bind: String,
    #[serde(default = "all_revisions")]
    pub protocol_versions: Vec<String>,
    #[serde(default = "local_origins")]
    pub allowed_origins: Vec<String>,
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    #[serde(default = "default_body_limit")]
    pub max_body_bytes: u64,
    #[serde(default = "default_page_size")]
    pub page_size: u64,
    #[serde(default)]
    pub list_ttl_ms: u64,
    #[serde(default = "default_session_idle")]
    pub session_idle_ms: u64,
    #[serde(default = "default_session_lifetime")]
    pub session_lifetime_ms: u64,
    #[serde(default)]
    pub rate_limits: RawListenerRateLimits,
    #[serde(default = "default_max_connections")]
    pub max_connections: u64,
    #[serde(default = "default_header_read_timeout")]
    pub header_read_timeout_ms: u64,
    #[serde(default = "default_body_read_timeout")]
    pub body_read_timeout_ms: u64,
}

fn default_max_connections() -> u64 {
    1024
}

fn default_header_read_timeout() -> u64 {
    10_000
}

fn default_body_read_timeout() -> u64 {
    30_000
}

/// `[listeners.NAME.rate_limits]`: each limit is off unless given.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of rate limits")]
pub struct RawListenerRateLimits {
    pub per_address: Option<RawRate>,
}

/// `[realms.NAME.rate_limits]`: each limit is off unless given.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of rate limits")]
pub struct RawRealmRateLimits {
    pub auth_failures: Option<RawRate>,
    pub per_principal: Option<RawRate>,
}

/// A sustained rate and the burst allowed above it: `{ per_second = 5, burst = 20 }`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a rate like { per_second = 5, burst = 20 }")]
pub struct RawRate {
    pub per_second: f64,
    pub burst: u32,
}

fn default_session_idle() -> u64 {
    30 * 60 * 1000
}

fn default_session_lifetime() -> u64 {
    24 * 60 * 60 * 1000
}

fn all_revisions() -> Vec<String> {
    ["2026-07-28", "2025-11-25", "2025-06-18"].map(String::from).into()
}

fn local_origins() -> Vec<String> {
    vec!["local".into()]
}

fn default_body_limit() -> u64 {
    4 * 1024 * 1024
}

fn default_page_size() -> u64 {
    200
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRealm {
    #[serde(default = "yes")]
    pub anonymous: bool,
    #[serde(default)]
    pub anonymous_roles: Vec<String>,
    #[serde(default)]
    pub roles: Vec<RawRole>,
    #[serde(default)]
    pub capabilities: Vec<RawCapability>,
    /// The realm's public URL, the audience of its OAuth tokens; only with `oauth`.
    pub resource_url: Option<String>,
    /// Scopes every OAuth token must carry; only with `oauth`.
    #[serde(default)]
    pub required_scopes: Vec<String>,
    #[serde(default)]
    pub rate_limits: RawRealmRateLimits,
    #[serde(default)]
    pub limits: RawLimits,
    #[serde(default)]
    pub principals: Vec<RawPrincipal>,
    #[serde(default)]
    pub tickets: Vec<RawTicket>,
    #[serde(default)]
    pub oauth: Vec<RawOAuth>,
    /// The keys sealing session ids and request states: the first seals, all open.
    #[serde(default)]
    pub keys: Vec<RawKey>,
    /// The upstream MCP servers whose capabilities the realm serves.
    #[serde(default)]
    pub upstreams: Vec<RawUpstream>,
    /// The REST APIs, described by OpenAPI documents, whose operations it serves as tools.
    #[serde(default)]
    pub openapi: Vec<RawOpenApi>,
    /// How callers find the tools of every source but the builtin handlers, unless a
    /// source says otherwise: listed, or found by searching.
    pub listing: Option<RawListing>,
}

/// `listing`: whether a source's tools are listed (`"list"`, the default) or found by
/// searching (`"search"`): left out of `tools/list`, reached through `bondry.search` and
/// `bondry.call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RawListing {
    List,
    Search,
}

impl RawListing {
    /// A source's listing: its own `listing`, else its realm's, else listed.
    pub fn of(own: Option<Self>, realm: Option<Self>) -> bondry_core::capability::Listing {
        match own.or(realm) {
            Some(Self::Search) => bondry_core::capability::Listing::Searched,
            Some(Self::List) | None => bondry_core::capability::Listing::Listed,
        }
    }
}

/// `[[realms.NAME.openapi]]`: a REST API whose OpenAPI document's operations are tools.
/// Optional keys are left `None`, so that the checks name their defaults in one place.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOpenApi {
    pub name: String,
    /// The document, JSON or YAML, read from where the configuration is.
    pub spec_file: PathBuf,
    /// Where the operations' paths are appended; the document's `servers` is never used.
    pub base_url: String,
    /// The name when absent.
    pub prefix: Option<String>,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    pub headers_from: Option<BTreeMap<String, String>>,
    pub auth: Option<RawApiAuth>,
    pub timeout_ms: Option<u64>,
    pub max_concurrent_calls: Option<u64>,
    pub max_response_bytes: Option<u64>,
    pub allow_plain_http: Option<bool>,
    pub ca_file: Option<PathBuf>,
    pub proxy: Option<String>,
    /// Whether its tools are listed or found by searching; the realm's `listing` when absent.
    pub listing: Option<RawListing>,
}

/// An OpenAPI entry's `auth`: how Bondry proves itself to the API.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawApiAuth {
    /// `"bearer"`, `"basic"` or `"api_key"`.
    pub scheme: String,
    /// The environment variable holding the token, `user:password` or the key.
    pub value_env: String,
    /// `api_key`: the header or query parameter it goes in.
    pub name: Option<String>,
    /// `api_key`: `"header"` (the default) or `"query"`.
    #[serde(rename = "in")]
    pub place: Option<String>,
}

/// `[[realms.NAME.upstreams]]`: one upstream MCP server. The keys of the other transport
/// are optional here, not defaulted, so that one given for the wrong transport is refused
/// rather than ignored; a tunable key left out stays absent, to take the backend's own
/// default.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUpstream {
    pub name: String,
    /// `"stdio"` or `"http"`.
    pub transport: String,
    /// stdio: the program, run without a shell.
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    /// stdio: the child's variables, given here.
    pub env: Option<BTreeMap<String, String>>,
    /// stdio: the child's variables, each the value of the variable of Bondry's
    /// environment it names.
    pub env_from: Option<BTreeMap<String, String>>,
    /// stdio: the child's working directory.
    pub cwd: Option<PathBuf>,
    /// http: the upstream's MCP endpoint.
    pub url: Option<String>,
    /// http: headers sent on every request, each the value of the environment variable
    /// it names.
    pub headers_from: Option<BTreeMap<String, String>>,
    /// http: plain http to a host that is not loopback; false when absent.
    pub allow_plain_http: Option<bool>,
    /// http: a PEM file of roots trusted besides the system's.
    pub ca_file: Option<PathBuf>,
    /// http: the one proxy used.
    pub proxy: Option<String>,
    /// The upstream's name when absent.
    pub prefix: Option<String>,
    #[serde(default = "all_kinds")]
    pub expose: Vec<String>,
    #[serde(default = "every_name")]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default = "all_revisions")]
    pub protocol_versions: Vec<String>,
    #[serde(default)]
    pub roots: Vec<RawRoot>,
    pub connect_timeout_ms: Option<u64>,
    pub call_timeout_ms: Option<u64>,
    pub max_concurrent_calls: Option<u64>,
    pub max_response_bytes: Option<u64>,
    pub trust: Option<String>,
    pub new_capabilities: Option<String>,
    pub new_resources: Option<String>,
    /// `_meta` keys left out of a pin's hash.
    #[serde(default)]
    pub pin_ignore_meta: Vec<String>,
    pub refresh_interval_ms: Option<u64>,
    pub input_wait_ms: Option<u64>,
    #[serde(default)]
    pub allow_url_elicitation: bool,
    /// Whether the gateway is ready only while the upstream is connected.
    #[serde(default)]
    pub required: bool,
    pub max_entries_per_kind: Option<u64>,
    pub max_definition_bytes: Option<u64>,
    pub max_listing_bytes: Option<u64>,
    pub list_timeout_ms: Option<u64>,
    pub max_pending_server_requests: Option<u64>,
    pub stdin_stall_ms: Option<u64>,
    /// Whether its tools are listed or found by searching; the realm's `listing` when absent.
    pub listing: Option<RawListing>,
}

/// One root Bondry answers an upstream's `roots/list` with.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoot {
    pub uri: String,
    pub name: Option<String>,
}

fn all_kinds() -> Vec<String> {
    ["tools", "prompts", "resources"].map(String::from).into()
}

fn every_name() -> Vec<String> {
    vec!["*".into()]
}

/// `[[realms.NAME.keys]]`: a sealing key whose secret is read from the environment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKey {
    pub id: String,
    /// The environment variable holding the secret: 32 bytes, base64 or base64url.
    pub secret_env: String,
}

/// `[[realms.NAME.oauth]]`: one trusted token issuer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOAuth {
    pub issuer: String,
    pub jwks_url: Option<String>,
    /// A JWKS document on disk.
    pub jwks_file: Option<PathBuf>,
    /// JWKs written inline, one table each.
    pub keys: Option<Vec<toml::Table>>,
    #[serde(default)]
    pub algorithms: Vec<String>,
    #[serde(default = "sub")]
    pub principal_claim: String,
    #[serde(default = "roles")]
    pub roles_claim: String,
    #[serde(default)]
    pub roles: Vec<String>,
    pub namespace: Option<String>,
    #[serde(default = "default_leeway")]
    pub leeway_ms: u64,
    #[serde(default = "default_jwks_max_age")]
    pub jwks_max_age_ms: u64,
    #[serde(default = "default_jwks_refresh_interval")]
    pub jwks_refresh_interval_ms: u64,
}

fn sub() -> String {
    "sub".into()
}

fn roles() -> String {
    "roles".into()
}

fn default_leeway() -> u64 {
    60_000
}

fn default_jwks_max_age() -> u64 {
    10 * 60 * 1000
}

fn default_jwks_refresh_interval() -> u64 {
    30_000
}

fn yes() -> bool {
    true
}

/// `[realms.NAME.limits]`: caps on handshake-era sessions.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table of limits")]
pub struct RawLimits {
    pub sessions_per_principal: u64,
    pub inflight_per_session: u64,
    pub listen_streams_per_principal: u64,
    /// How long a session call waits for the client's answers to the input it asked for.
    pub client_response_timeout_ms: u64,
}

impl Default for RawLimits {
    fn default() -> Self {
        Self {
            sessions_per_principal: 64,
            inflight_per_session: 32,
            listen_streams_per_principal: 16,
            client_response_timeout_ms: 60_000,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrincipal {
    pub id: String,
    #[serde(default)]
    pub roles: Vec<String>,
    /// An argon2id PHC string, as `bondry hash-password` prints it.
    pub password_hash: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTicket {
    /// Lowercase hex SHA-256 of the ticket, as `bondry ticket new` prints it.
    pub sha256: String,
    pub principal: String,
    /// Caps the holder's roles to these (a subset of the principal's).
    pub roles: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRole {
    pub name: String,
    #[serde(default)]
    pub grants: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCapability {
    pub id: String,
    pub kind: String,
    #[serde(default = "builtin")]
    pub backend: String,
    /// The builtin handler serving it (`backend = "builtin"`).
    pub handler: Option<String>,
    /// A resource's URI or a resource template's URI template; the handler's when absent.
    pub uri: Option<String>,
    pub mime_type: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub input_schema: Option<String>,
    pub input_schema_file: Option<PathBuf>,
    pub output_schema: Option<String>,
    pub output_schema_file: Option<PathBuf>,
    pub annotations: Option<RawAnnotations>,
    pub requires_client: Option<String>,
    #[serde(default)]
    pub audit_arguments: bool,
    // How Bondry reaches the web service serving it (`backend = "http"`).
    pub url: Option<String>,
    pub timeout_ms: Option<u64>,
    pub max_concurrent_calls: Option<u64>,
    pub headers_from: Option<BTreeMap<String, String>>,
    pub disclose_principal: Option<bool>,
    pub signing_key_env: Option<String>,
    pub http2: Option<String>,
    pub max_response_bytes: Option<u64>,
    pub allow_plain_http: Option<bool>,
    pub allow_url_elicitation: Option<bool>,
    pub ca_file: Option<PathBuf>,
    pub proxy: Option<String>,
}

fn builtin() -> String {
    "builtin".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAnnotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAudit {
    #[serde(default)]
    pub sink: AuditSinkKind,
    pub path: Option<PathBuf>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditSinkKind {
    #[default]
    Stdout,
    File,
    Off,
}

/// How the log on stderr is written: for people, or one JSON object per line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PinStoreKind {
    #[default]
    Sqlite,
    Memory,
}

/// A parsed configuration, where it came from, and the environment it was loaded in.
#[derive(Debug)]
pub struct Loaded {
    pub origin: String,
    /// The directory relative paths (schema files, audit path) are resolved against.
    pub base_dir: PathBuf,
    pub raw: RawConfig,
    pub env: Environment,
    /// Where each key was written, to place the refusals of later checks.
    pub places: Arc<Places>,
}

impl Loaded {
    /// `data_dir` as the process reaches it: resolved against the configuration's directory.
    pub fn data_dir(&self) -> Option<PathBuf> {
        self.raw.data_dir.as_ref().map(|dir| self.base_dir.join(dir))
    }
}

/// Reads the file at `path`, or the embedded default, and applies the environment.
pub fn load(path: Option<&Path>, env: impl IntoIterator<Item = (String, String)>) -> Result<Loaded, ConfigErrors> {
    let (origin, text, base_dir) = match path {
        Some(path) => {
            let origin = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|error| ConfigError {
                origin: origin.clone(),
                place: None,
                key: None,
                message: format!("cannot read the file: {error}"),
            })?;
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            (origin, text, base)
        }
        None => ("<embedded default>".to_owned(), EMBEDDED_DEFAULT.to_owned(), PathBuf::from(".")),
    };
    parse(&origin, &text, base_dir, env)
}

/// The shape of the file, learnt once from [`RawConfig`]'s `Deserialize`.
fn file_shape() -> &'static shape::Shape {
    static SHAPE: OnceLock<shape::Shape> = OnceLock::new();
    // The unit tests drive RawConfig through the probe, so this cannot fail in a build
    // that passed them.
    SHAPE.get_or_init(|| shape::shape_of::<RawConfig>().expect("the configuration's types can be probed"))
}

/// Parses configuration text, applies the environment, checks its shape and reads it
/// into the raw shape. Every shape error is reported, not only the first.
pub fn parse(
    origin: &str,
    text: &str,
    base_dir: PathBuf,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Loaded, ConfigErrors> {
    let env: Environment = env.into_iter().collect();
    let not_toml = |error: toml::de::Error| {
        let place = error.span().map(|span| locate::place_in(text, span.start));
        let message = format!("not valid TOML: {}", error.message().trim_end());
        ConfigError { origin: origin.to_owned(), place, key: None, message }
    };
    let document = toml::de::DeTable::parse(text).map_err(not_toml)?;
    let mut places = Places::of_file(text, &document);
    let mut table: toml::Table = text.parse().map_err(not_toml)?;
    let unapplied = apply_env(&mut table, &env, &mut places);
    let value = toml::Value::Table(table);
    let findings = check::check(&value, file_shape(), &places);
    let refusal = |place: Option<Place>, key: String, message: String| ConfigError {
        origin: origin.to_owned(),
        place,
        key: Some(key),
        message,
    };
    let unapplied = unapplied.into_iter().map(|(name, message)| ConfigError {
        origin: origin.to_owned(),
        place: Some(Place::Env(name)),
        key: None,
        message,
    });
    let refused = findings.into_iter().map(|finding| refusal(finding.place, finding.key, finding.message));
    if let Some(errors) = ConfigErrors::new(refused.chain(unapplied).collect()) {
        return Err(errors);
    }
    // What the shape check does not see (a value serde refuses for its own reasons).
    let raw = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        refusal(places.named(&path).cloned(), path, e.into_inner().to_string())
    })?;
    Ok(Loaded { origin: origin.to_owned(), base_dir, raw, env, places: Arc::new(places) })
}

/// Applies `BONDRY__SECTION__KEY=value` overrides, recording each as the place of what it
/// sets. Names are lowercased; values are read as TOML values, falling back to strings.
/// Returns each variable that cannot apply, by name, with why; the others still apply.
fn apply_env(table: &mut toml::Table, env: &Environment, places: &mut Places) -> Vec<(String, String)> {
    let mut unapplied = Vec::new();
    // In name order (the environment is sorted), so that overlapping variables apply in one
    // order whatever the process environment's.
    for (name, raw) in &env.0 {
        let Some(path) = name.strip_prefix(ENV_PREFIX) else { continue };
        if let Err(why) = apply_one(table, name, path, raw, places) {
            unapplied.push((name.clone(), why));
        }
    }
    unapplied
}

/// Applies the variable `name`, naming the key path `path`, set to `raw`.
fn apply_one(table: &mut toml::Table, name: &str, path: &str, raw: &str, places: &mut Places) -> Result<(), String> {
    let segments: Vec<String> = path.split("__").map(str::to_ascii_lowercase).collect();
    if segments.iter().any(String::is_empty) {
        return Err(format!("empty key segment; write {ENV_PREFIX}SECTION__KEY"));
    }
    let value = env_value(raw)?;
    let (last, parents) = segments.split_last().expect("split yields at least one segment");
    let mut current = &mut *table;
    let mut key_path = KeyPath::default();
    for segment in parents {
        key_path = key_path.key(segment);
        // A table the file lacks is the variable's making: its errors name the variable.
        if !current.contains_key(segment) {
            places.overridden(&key_path, name);
        }
        let entry = current.entry(segment.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        current = match entry {
            toml::Value::Table(table) => table,
            toml::Value::Array(_) => {
                return Err(format!(
                    "`{key_path}` is an array; arrays of tables are not addressable from the environment"
                ));
            }
            _ => return Err(format!("`{key_path}` is not a table")),
        };
    }
    current.insert(last.clone(), value);
    places.overridden(&key_path.key(last), name);
    Ok(())
}

/// A variable's value: a TOML value (`50`, `true`, `["a"]`, `"a string"`), else the text
/// itself as a string. Text that reads as a value followed by more TOML (a newline and a
/// table, say) is refused, not cut short.
fn env_value(raw: &str) -> Result<toml::Value, String> {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(parsed) if parsed.len() == 1 => Ok(parsed.into_iter().next().map(|(_, value)| value).expect("one entry")),
        Ok(_) => Err("the value holds more than one TOML value; quote it as a TOML string".into()),
        Err(_) => Ok(toml::Value::String(raw.to_owned())),
    }
}

/// The process's environment, for [`load`]. A variable whose name or value is not UTF-8
/// is left out, since nothing Bondry reads is named so, unless it is an override
/// (`BONDRY__…`), which is refused by name rather than ignored.
pub fn process_environment() -> Result<Vec<(String, String)>, ConfigErrors> {
    let mut variables = Vec::new();
    let mut refused = Vec::new();
    for (name, value) in std::env::vars_os() {
        match (name.into_string(), value.into_string()) {
            (Ok(name), Ok(value)) => variables.push((name, value)),
            (Ok(name), Err(_)) if name.starts_with(ENV_PREFIX) => refused.push(ConfigError {
                origin: "<environment>".into(),
                place: Some(Place::Env(name)),
                key: None,
                message: "the value is not UTF-8".into(),
            }),
            _ => {}
        }
    }
    match ConfigErrors::new(refused) {
        Some(errors) => Err(errors),
        None => Ok(variables),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_embedded_default_parses() {
        let loaded = load(None, []).unwrap();
        assert_eq!(loaded.raw.listeners["main"].bind, "127.0.0.1:7373");
    }

    #[test]
    fn environment_overrides_keys_as_toml_values_or_strings() {
        let loaded = parse(
            "t.toml",
            "[listeners.main]\nbind = \"127.0.0.1:1\"\n",
            PathBuf::new(),
            env(&[
                ("BONDRY__LISTENERS__MAIN__BIND", "127.0.0.1:2"),
                ("BONDRY__LISTENERS__MAIN__PAGE_SIZE", "7"),
                ("OTHER", "x"),
            ]),
        )
        .unwrap();
        assert_eq!(loaded.raw.listeners["main"].bind, "127.0.0.1:2");
        assert_eq!(loaded.raw.listeners["main"].page_size, 7);
    }

    #[test]
    fn the_environment_shows_its_names_never_its_values() {
        let loaded = parse("t.toml", "", PathBuf::new(), env(&[("BONDRY_KEY", "topsecret")])).unwrap();
        assert_eq!(loaded.env.get("BONDRY_KEY"), Some("topsecret"));
        let shown = format!("{loaded:?}");
        assert!(shown.contains("BONDRY_KEY") && !shown.contains("topsecret"), "{shown}");
    }

    #[test]
    fn errors_name_the_file_line_column_and_key_path() {
        let error = parse("t.toml", "[listeners.main]\nbind = 5\n", PathBuf::new(), []).unwrap_err();
        assert_eq!(error.to_string(), "t.toml:2:8: listeners.main.bind: expected a string, found an integer");
        let error = parse("t.toml", "[listeners", PathBuf::new(), []).unwrap_err();
        assert!(error.to_string().starts_with("t.toml:1:11: not valid TOML: "), "{error}");
        let roles = "[[realms.default.roles]]\nname = \"a\"\n";
        let error =
            parse("t.toml", roles, PathBuf::new(), env(&[("BONDRY__REALMS__DEFAULT__ROLES__NAME", "b")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment variable BONDRY__REALMS__DEFAULT__ROLES__NAME: `realms.default.roles` is an array; \
             arrays of tables are not addressable from the environment"
        );
    }

    #[test]
    fn every_override_that_cannot_apply_is_named_beside_the_files_errors() {
        let variables = env(&[
            ("BONDRY__LISTENERS__MAIN__BIND__X", "1"),
            ("BONDRY__LISTENERS__MAIN__PAGE_SIZE", "\"5\"\n[zzz]"),
            ("BONDRY__ZZ", "1"),
        ]);
        let error =
            parse("t.toml", "[listeners.main]\nbind = \"x\"\nbnid = 1\n", PathBuf::new(), variables).unwrap_err();
        assert_eq!(
            error.to_string(),
            "t.toml:3:1: listeners.main.bnid: unknown key; did you mean `bind`?\n\
             environment variable BONDRY__ZZ: zz: unknown key; this table takes shutdown_grace_ms, data_dir, pin_store, log_format, listeners, realms, audit, admin\n\
             environment variable BONDRY__LISTENERS__MAIN__BIND__X: `listeners.main.bind` is not a table\n\
             environment variable BONDRY__LISTENERS__MAIN__PAGE_SIZE: the value holds more than one TOML value; quote it as a TOML string"
        );
    }

    #[test]
    fn a_table_an_override_makes_is_placed_at_the_variable() {
        let variables = env(&[("BONDRY__REALMS__DEFAULT__ROLES__NAME", "x")]);
        let text = "[listeners.main]\nbind = \"x\"\n[realms.default]\n";
        let error = parse("t.toml", text, PathBuf::new(), variables).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment variable BONDRY__REALMS__DEFAULT__ROLES__NAME: realms.default.roles: \
             expected an array of tables, found a table"
        );
    }

    #[test]
    fn an_overrides_error_names_the_variable_not_the_file() {
        let variables = env(&[("BONDRY__LISTENERS__MAIN__PAGE_SIZE", "many"), ("BONDRY__LISTENERS__MAIN__BNID", "1")]);
        let error = parse("t.toml", "[listeners.main]\nbind = \"x\"\n", PathBuf::new(), variables).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment variable BONDRY__LISTENERS__MAIN__BNID: listeners.main.bnid: unknown key; did you mean `bind`?\n\
             environment variable BONDRY__LISTENERS__MAIN__PAGE_SIZE: listeners.main.page_size: expected a non-negative integer, found a string"
        );
    }
}
