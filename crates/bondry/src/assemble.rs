//! From a loaded configuration and the builtin handlers to what the runtime serves.
//!
//! Every refusal names the file, the key path, the offending value and the fix.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use argon2::PasswordHash;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use bondry_core::audit::AuditSink;
use bondry_core::capability::{Annotations, Binding, CapabilityId, CapabilityKind, Descriptor};
use bondry_core::policy::ANONYMOUS;
use bondry_core::policy::{Grant, Policy, Subject};
use bondry_core::realm::{Key, KeySet, Registry, Sources};
use bondry_core::registry::Registration;
use bondry_core::schema::SchemaBounds;
use bondry_http_server::audit::{AuditWriter, NoAudit};
use bondry_http_server::auth::oauth::{IssuerSpec, KeySource, OAuth, OAuthSpec};
use bondry_http_server::limits::{Bucket, Cidr, FailureLimit, Rate, RealmLimits};
use bondry_http_server::{
    AuthSlot, Authenticator, ConnectionLimits, Credentials, ListenerConfig, OriginPolicy, RealmEntry, ServerConfig,
    SessionLimits, Ticket, User,
};
use bondry_mcp_proto::lint::McpLint;
use bondry_mcp_proto::{ADAPTER, ListenerSettings, Revision};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::builtins::Builtins;
use crate::config::{AuditSinkKind, ConfigError, Loaded, RawCapability, RawListener, RawRate, RawRealm};

/// What `assemble` produced: the runtime's config, and the audit writer to close last.
pub struct Assembled {
    pub server: ServerConfig,
    pub audit: Option<Arc<AuditWriter>>,
}

/// Options the command line adds on top of the file.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--listen`: the address of the one configured listener.
    pub listen: Option<SocketAddr>,
}

/// Checks everything and builds the runtime's config. Opens the audit sink only when
/// `open_sinks` is set, so `bondry check` touches no files.
pub fn assemble(
    loaded: &Loaded,
    builtins: &Builtins,
    overrides: &Overrides,
    open_sinks: bool,
) -> Result<Assembled, ConfigError> {
    let raw = &loaded.raw;
    if raw.listeners.is_empty() {
        return Err(
            loaded.error("listeners: no listener is configured; add [listeners.main] with bind = \"127.0.0.1:7373\"")
        );
    }
    if overrides.listen.is_some() && raw.listeners.len() != 1 {
        return Err(loaded.error(format!(
            "--listen needs exactly one configured listener, found {}; set bind in each [listeners.*] instead",
            raw.listeners.len()
        )));
    }
    let mut listeners = Vec::new();
    for (name, listener) in &raw.listeners {
        listeners.push(listener_config(loaded, name, listener, overrides.listen)?);
    }
    if raw.realms.is_empty() {
        return Err(loaded.error("realms: no realm is configured; add [realms.default]"));
    }
    let mut realms = HashMap::new();
    for (name, realm) in &raw.realms {
        if !bondry_core::capability::is_valid_id(name) {
            return Err(loaded.error(format!(
                "realms.{name}: a realm name is 1-64 characters from A-Z a-z 0-9 . _ - (it appears in /mcp/realm/NAME)"
            )));
        }
        let keys = keys(loaded, name, realm, open_sinks)?;
        realms.insert(name.clone(), realm_entry(loaded, name, realm, builtins, keys)?);
    }
    let (audit, writer): (Arc<dyn AuditSink>, _) = match (raw.audit.sink, &raw.audit.path) {
        (AuditSinkKind::File, None) => {
            return Err(
                loaded.error("audit.path: sink = \"file\" needs a path; add path = \"/var/log/bondry/audit.jsonl\"")
            );
        }
        (AuditSinkKind::Stdout | AuditSinkKind::Off, Some(path)) => {
            return Err(loaded.error(format!(
                "audit.path: {:?} is only used with sink = \"file\"; remove it or set sink = \"file\"",
                path.display()
            )));
        }
        _ if !open_sinks => (Arc::new(NoAudit), None),
        (AuditSinkKind::Off, None) => (Arc::new(NoAudit), None),
        (AuditSinkKind::Stdout, None) => {
            let writer = Arc::new(AuditWriter::stdout());
            (writer.clone(), Some(writer))
        }
        (AuditSinkKind::File, Some(path)) => {
            let path = loaded.base_dir.join(path);
            let writer = Arc::new(AuditWriter::file(&path).map_err(|error| {
                loaded.error(format!("audit.path: cannot open {:?} for appending: {error}", path.display()))
            })?);
            (writer.clone(), Some(writer))
        }
    };
    let server =
        ServerConfig { listeners, realms, audit, shutdown_grace: Duration::from_millis(raw.shutdown_grace_ms) };
    Ok(Assembled { server, audit: writer })
}

fn listener_config(
    loaded: &Loaded,
    name: &str,
    raw: &RawListener,
    listen: Option<SocketAddr>,
) -> Result<ListenerConfig, ConfigError> {
    let key = |k: &str| format!("listeners.{name}.{k}");
    let bind: SocketAddr = raw.bind.parse().map_err(|_| {
        loaded.error(format!(
            "{}: {:?} is not an address; write it as \"127.0.0.1:7373\" or \"[::1]:7373\"",
            key("bind"),
            raw.bind
        ))
    })?;
    let bind = listen.unwrap_or(bind);
    let mut revisions = Vec::new();
    for version in &raw.protocol_versions {
        let revision: Revision =
            version.parse().map_err(|e| loaded.error(format!("{}: {e}", key("protocol_versions"))))?;
        revisions.push(revision);
    }
    if revisions.is_empty() {
        return Err(loaded.error(format!(
            "{}: the list is empty; serve at least one of \"2026-07-28\", \"2025-11-25\", \"2025-06-18\"",
            key("protocol_versions")
        )));
    }
    let positive_ms = |k: &str, value: u64| {
        (value > 0)
            .then(|| Duration::from_millis(value))
            .ok_or_else(|| loaded.error(format!("{}: {value} must be a positive number of milliseconds", key(k))))
    };
    let session_idle = positive_ms("session_idle_ms", raw.session_idle_ms)?;
    let session_lifetime = positive_ms("session_lifetime_ms", raw.session_lifetime_ms)?;
    let origins = origin_policy(&raw.allowed_origins).map_err(|bad| {
        loaded.error(format!(
            "{}: {bad:?} is not \"local\", \"any\" or an origin like \"https://app.example\"",
            key("allowed_origins")
        ))
    })?;
    let mut trusted_proxies = Vec::new();
    for entry in &raw.trusted_proxies {
        trusted_proxies.push(Cidr::parse(entry).ok_or_else(|| {
            loaded.error(format!(
                "{}: {entry:?} is not a CIDR; write it as \"10.0.0.0/8\" or \"::1/128\"",
                key("trusted_proxies")
            ))
        })?);
    }
    let per_address =
        raw.rate_limits.per_address.map(|rate| rate_of(loaded, &key("rate_limits.per_address"), rate)).transpose()?;
    let max_body_bytes = usize::try_from(raw.max_body_bytes).ok().filter(|&limit| limit > 0).ok_or_else(|| {
        loaded.error(format!(
            "{}: {} must be a positive number of bytes, e.g. 4194304",
            key("max_body_bytes"),
            raw.max_body_bytes
        ))
    })?;
    let page_size = usize::try_from(raw.page_size)
        .ok()
        .filter(|size| (1..=10_000).contains(size))
        .ok_or_else(|| loaded.error(format!("{}: {} must be between 1 and 10000", key("page_size"), raw.page_size)))?;
    let positive = |k: &str, value: u64, unit: &str| {
        (value > 0).then_some(value).ok_or_else(|| loaded.error(format!("{}: 0 must be a positive {unit}", key(k))))
    };
    let connections = ConnectionLimits {
        max_connections: usize::try_from(positive("max_connections", raw.max_connections, "count, e.g. 1024")?)
            .unwrap_or(usize::MAX),
        header_read_timeout: Duration::from_millis(positive(
            "header_read_timeout_ms",
            raw.header_read_timeout_ms,
            "number of milliseconds, e.g. 10000",
        )?),
        body_read_timeout: Duration::from_millis(positive(
            "body_read_timeout_ms",
            raw.body_read_timeout_ms,
            "number of milliseconds, e.g. 30000",
        )?),
    };
    Ok(ListenerConfig {
        connections,
        name: name.to_owned(),
        bind,
        settings: ListenerSettings {
            revisions,
            page_size,
            list_ttl_ms: raw.list_ttl_ms,
            server_version: env!("CARGO_PKG_VERSION").to_owned(),
            session_lifetime,
        },
        origins,
        max_body_bytes,
        session_idle,
        trusted_proxies,
        per_address,
    })
}

/// Reads `allowed_origins`: every entry must be `local`, `any` or an origin
/// (`scheme://host[:port]`, as browsers send it: no path, user info, query or fragment).
fn origin_policy(entries: &[String]) -> Result<OriginPolicy, String> {
    let mut any = false;
    let mut local = false;
    let mut exact = Vec::new();
    for entry in entries {
        match entry.as_str() {
            "any" => any = true,
            "local" => local = true,
            origin if is_origin(origin) => exact.push(origin.to_owned()),
            other => return Err(other.to_owned()),
        }
    }
    Ok(if any { OriginPolicy::Any } else { OriginPolicy::Listed { local, exact } })
}

fn is_origin(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, authority)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !authority.is_empty()
            && authority.bytes().all(|b| b.is_ascii_graphic() && !b"/@?#".contains(&b))
    })
}

fn realm_entry(
    loaded: &Loaded,
    name: &str,
    raw: &RawRealm,
    builtins: &Builtins,
    keys: KeySet,
) -> Result<RealmEntry, ConfigError> {
    let key = |k: &str| format!("realms.{name}.{k}");
    for (index, role) in raw.roles.iter().enumerate() {
        let at = key(&format!("roles[{index}].name"));
        if role.name.is_empty() {
            return Err(loaded.error(format!("{at}: a role needs a non-empty name")));
        }
        if raw.roles[..index].iter().any(|earlier| earlier.name == role.name) {
            return Err(loaded.error(format!(
                "{at}: role {:?} is defined twice; merge its grants into one [[realms.{name}.roles]]",
                role.name
            )));
        }
    }
    let mut grants = Vec::new();
    for (index, role) in raw.roles.iter().enumerate() {
        for grant in &role.grants {
            let grant = Grant::parse(Subject::Role(role.name.clone()), grant, ADAPTER)
                .map_err(|e| loaded.error(format!("{}: {e}", key(&format!("roles[{index}].grants")))))?;
            grants.push(grant);
        }
    }
    for role in &raw.anonymous_roles {
        if !raw.roles.iter().any(|defined| &defined.name == role) {
            return Err(loaded.error(format!(
                "{}: role {role:?} is not defined; add [[realms.{name}.roles]] with name = {role:?}",
                key("anonymous_roles")
            )));
        }
    }
    let mut registrations = Vec::new();
    for (index, capability) in raw.capabilities.iter().enumerate() {
        let path = key(&format!("capabilities[{index}]"));
        registrations.push(registration(loaded, &path, capability, builtins)?);
    }
    let sources = Sources {
        configured: registrations,
        dynamic: Default::default(),
        bounds: SchemaBounds::default(),
        lints: vec![Arc::new(McpLint)],
    };
    let registry = Registry::compiled(name, sources, Policy::new(grants), keys)
        .map_err(|e| loaded.error(format!("{}: {e}", key("capabilities"))))?;
    let limit = |k: &str, value: u64| {
        usize::try_from(value)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| loaded.error(format!("{}: {value} must be a positive count", key(&format!("limits.{k}")))))
    };
    let limits = SessionLimits {
        sessions_per_principal: limit("sessions_per_principal", raw.limits.sessions_per_principal)?,
        inflight_per_session: limit("inflight_per_session", raw.limits.inflight_per_session)?,
        listen_streams_per_principal: limit("listen_streams_per_principal", raw.limits.listen_streams_per_principal)?,
        client_response_timeout: match raw.limits.client_response_timeout_ms {
            0 => {
                return Err(loaded.error(format!(
                    "{}: 0 must be a positive number of milliseconds, e.g. 60000",
                    key("limits.client_response_timeout_ms")
                )));
            }
            millis => Duration::from_millis(millis),
        },
    };
    let credentials = credentials(loaded, name, raw)?;
    let bucket = |k: &str, rate: Option<RawRate>| {
        rate.map(|rate| rate_of(loaded, &key(&format!("rate_limits.{k}")), rate)).transpose()
    };
    let rate_limits = RealmLimits {
        auth_failures: bucket("auth_failures", raw.rate_limits.auth_failures)?.and_then(FailureLimit::new),
        per_principal: bucket("per_principal", raw.rate_limits.per_principal)?.and_then(Bucket::new),
    };
    Ok(RealmEntry {
        limits,
        registry: Arc::new(registry),
        auth: Arc::new(AuthSlot::new(Authenticator::new(name, credentials))),
        rate_limits,
    })
}

/// The realm's principals and tickets, checked against its roles.
fn credentials(loaded: &Loaded, name: &str, raw: &RawRealm) -> Result<Credentials, ConfigError> {
    let key = |k: &str| format!("realms.{name}.{k}");
    let role_defined = |role: &String| raw.roles.iter().any(|defined| &defined.name == role);
    let mut users = HashMap::new();
    for (index, principal) in raw.principals.iter().enumerate() {
        let at = |k: &str| key(&format!("principals[{index}].{k}"));
        if !bondry_core::capability::is_valid_id(&principal.id) || principal.id == ANONYMOUS {
            return Err(loaded.error(format!(
                "{}: {:?} is not a principal id: use 1-64 characters from A-Z a-z 0-9 . _ -, and not \"anonymous\"",
                at("id"),
                principal.id
            )));
        }
        if let Some(role) = principal.roles.iter().find(|role| !role_defined(role)) {
            return Err(loaded.error(format!(
                "{}: role {role:?} is not defined; add [[realms.{name}.roles]] with name = {role:?}",
                at("roles")
            )));
        }
        if let Some(hash) = &principal.password_hash {
            let parsed = PasswordHash::new(hash).map_err(|e| {
                loaded.error(format!(
                    "{}: not a PHC string ({e}); create one with `bondry hash-password`",
                    at("password_hash")
                ))
            })?;
            let params = argon2::Params::try_from(&parsed).ok().filter(|_| parsed.hash.is_some());
            if params.as_ref().is_none_or(|params| params.m_cost() > MAX_ARGON2_MEMORY_KIB || params.t_cost() > 16) {
                return Err(loaded.error(format!(
                    "{}: the hash's parameters are invalid or too costly to check (at most m=262144, t=16); create one with `bondry hash-password`",
                    at("password_hash")
                )));
            }
            if parsed.algorithm.as_str() != "argon2id" {
                return Err(loaded.error(format!(
                    "{}: the hash uses {}; only argon2id is accepted (`bondry hash-password` makes one)",
                    at("password_hash"),
                    parsed.algorithm
                )));
            }
        }
        let user = User { roles: principal.roles.clone().into(), password_hash: principal.password_hash.clone() };
        if users.insert(principal.id.clone(), user).is_some() {
            return Err(loaded.error(format!("{}: principal {:?} is defined twice", at("id"), principal.id)));
        }
    }
    let mut tickets: Vec<Ticket> = Vec::new();
    for (index, ticket) in raw.tickets.iter().enumerate() {
        let at = |k: &str| key(&format!("tickets[{index}].{k}"));
        let sha256 = parse_sha256(&ticket.sha256).ok_or_else(|| {
            loaded.error(format!(
                "{}: {:?} is not 64 lowercase hex digits; `bondry ticket new` prints the stanza",
                at("sha256"),
                ticket.sha256
            ))
        })?;
        if tickets.iter().any(|other| other.sha256 == sha256) {
            return Err(loaded.error(format!("{}: the same ticket is configured twice", at("sha256"))));
        }
        let holder = users.get(&ticket.principal).ok_or_else(|| {
            loaded.error(format!(
                "{}: principal {:?} is not defined in [[realms.{name}.principals]]",
                at("principal"),
                ticket.principal
            ))
        })?;
        let roles: Arc<[String]> = match &ticket.roles {
            None => Arc::clone(&holder.roles),
            Some(cap) => {
                if let Some(role) = cap.iter().find(|role| !holder.roles.contains(role)) {
                    return Err(loaded.error(format!(
                        "{}: role {role:?} is not one of {:?}'s; a ticket can only narrow its principal's roles",
                        at("roles"),
                        ticket.principal
                    )));
                }
                cap.clone().into()
            }
        };
        tickets.push(Ticket { sha256, principal: ticket.principal.clone(), roles });
    }
    Ok(Credentials {
        users,
        tickets,
        anonymous_roles: raw.anonymous.then(|| raw.anonymous_roles.clone().into()),
        oauth: oauth(loaded, name, raw)?.map(Arc::new),
    })
}

/// The realm's OAuth issuers and public resource URL, which come together.
fn oauth(loaded: &Loaded, name: &str, raw: &RawRealm) -> Result<Option<OAuth>, ConfigError> {
    let key = |k: &str| format!("realms.{name}.{k}");
    if raw.oauth.is_empty() && !raw.required_scopes.is_empty() {
        return Err(loaded.error(format!(
            "{}: scopes are only checked on OAuth tokens; add [[realms.{name}.oauth]] or remove the key",
            key("required_scopes")
        )));
    }
    let resource_url = match (&raw.resource_url, raw.oauth.is_empty()) {
        (None, true) => return Ok(None),
        (Some(_), true) => {
            return Err(loaded.error(format!(
                "{}: a resource URL is only used with OAuth; add [[realms.{name}.oauth]] or remove the key",
                key("resource_url")
            )));
        }
        (None, false) => {
            return Err(loaded.error(format!(
                "{}: OAuth needs the realm's public URL, the audience of its tokens, e.g. \"https://mcp.example.com{}\"",
                key("resource_url"),
                if name == bondry_http_server::DEFAULT_REALM { "/mcp".to_owned() } else { format!("/mcp/realm/{name}") }
            )));
        }
        (Some(url), false) => url.clone(),
    };
    let millis = Duration::from_millis;
    let mut issuers = Vec::new();
    for (index, issuer) in raw.oauth.iter().enumerate() {
        let at = |k: &str| key(&format!("oauth[{index}].{k}"));
        let keys = match (&issuer.jwks_url, &issuer.jwks_file, &issuer.keys) {
            (Some(url), None, None) => KeySource::JwksUrl(url.clone()),
            (None, Some(path), None) => {
                let path = loaded.base_dir.join(path);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| loaded.error(format!("{}: cannot read {:?}: {e}", at("jwks_file"), path.display())))?;
                let document: Value = serde_json::from_str(&text)
                    .map_err(|e| loaded.error(format!("{}: not JSON: {e}", at("jwks_file"))))?;
                let keys = document.get("keys").and_then(Value::as_array).cloned().ok_or_else(|| {
                    loaded.error(format!("{}: not a JWK set: it needs a \"keys\" array", at("jwks_file")))
                })?;
                KeySource::Static(keys)
            }
            (None, None, Some(tables)) => KeySource::Static(
                tables.iter().map(|table| serde_json::to_value(table).unwrap_or(Value::Null)).collect(),
            ),
            _ => {
                return Err(loaded.error(format!(
                    "{}: give exactly one of jwks_url, jwks_file or keys",
                    key(&format!("oauth[{index}]"))
                )));
            }
        };
        issuers.push(IssuerSpec {
            issuer: issuer.issuer.clone(),
            keys,
            algorithms: issuer.algorithms.clone(),
            principal_claim: issuer.principal_claim.clone(),
            roles_claim: issuer.roles_claim.clone(),
            roles: issuer.roles.clone(),
            namespace: issuer.namespace.clone(),
            leeway: millis(issuer.leeway_ms),
            jwks_max_age: millis(issuer.jwks_max_age_ms),
            jwks_refresh_interval: millis(issuer.jwks_refresh_interval_ms),
        });
    }
    let known_roles = raw.roles.iter().map(|role| role.name.clone()).collect();
    let required_scopes = raw.required_scopes.clone();
    OAuth::new(OAuthSpec { resource_url, issuers, known_roles, required_scopes })
        .map(Some)
        .map_err(|e| loaded.error(format!("{}: {}", key(&e.key), e.message)))
}

/// A configured rate, checked: a positive finite rate and a burst of at least one.
fn rate_of(loaded: &Loaded, key: &str, rate: RawRate) -> Result<Rate, ConfigError> {
    let valid = (1e-4..=1e6).contains(&rate.per_second) && rate.burst >= 1;
    valid.then_some(Rate { per_second: rate.per_second, burst: rate.burst }).ok_or_else(|| {
        loaded.error(format!(
            "{key}: per_second must be between 0.0001 and 1000000 and burst at least 1, e.g. {{ per_second = 5, burst = 20 }}"
        ))
    })
}

/// The most memory one password check may take, in KiB (256 MiB).
const MAX_ARGON2_MEMORY_KIB: u32 = 256 * 1024;

fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (index, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[index * 2..index * 2 + 2], 16).ok()?;
    }
    Some(bytes)
}

/// The keys that seal a realm's session ids and request states: the configured ones
/// (the first seals, every one opens, so a rotation lists the new key first and keeps the
/// old one until its tokens have expired); else the realm's file in `data_dir`, made on
/// first start; else keys of this process alone, so its tokens die with it. Only `serve`
/// (`persist`) writes the file; `check` reads it when it exists.
fn keys(loaded: &Loaded, name: &str, raw: &RawRealm, persist: bool) -> Result<KeySet, ConfigError> {
    let key = |k: &str| format!("realms.{name}.{k}");
    if !raw.keys.is_empty() {
        let mut keys = Vec::new();
        for (index, configured) in raw.keys.iter().enumerate() {
            let at = |k: &str| key(&format!("keys[{index}].{k}"));
            if !bondry_core::capability::is_valid_id(&configured.id) {
                return Err(loaded.error(format!(
                    "{}: {:?} is not a key id: use 1-64 characters from A-Z a-z 0-9 . _ -",
                    at("id"),
                    configured.id
                )));
            }
            if raw.keys[..index].iter().any(|earlier| earlier.id == configured.id) {
                return Err(loaded.error(format!("{}: key id {:?} is used twice", at("id"), configured.id)));
            }
            let text = std::env::var(&configured.secret_env).map_err(|_| {
                loaded.error(format!(
                    "{}: the environment variable {:?} is not set (it holds the key's secret)",
                    at("secret_env"),
                    configured.secret_env
                ))
            })?;
            let secret = secret_of(text.trim()).ok_or_else(|| {
                loaded.error(format!(
                    "{}: {:?} must hold 32 random bytes in base64 or base64url, e.g. from `openssl rand -base64 32`",
                    at("secret_env"),
                    configured.secret_env
                ))
            })?;
            keys.push(Key { id: configured.id.clone(), secret });
        }
        let active = keys.remove(0);
        return Ok(KeySet { active, retired: keys });
    }
    let Some(data_dir) = &loaded.raw.data_dir else {
        return Ok(generated("k1"));
    };
    let path = loaded.base_dir.join(data_dir).join("keys").join(format!("{name}.json"));
    let unreadable =
        |why: String| loaded.error(format!("data_dir: the keys of realm {name} in {:?}: {why}", path.display()));
    match read_stored(&path) {
        Ok(keys) => {
            use std::os::unix::fs::PermissionsExt;
            if std::fs::metadata(&path).is_ok_and(|meta| meta.permissions().mode() & 0o077 != 0) {
                tracing::warn!(realm = name, path = %path.display(), "the key file is readable by others than its owner; chmod 600 it");
            }
            Ok(keys)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let keys = generated("k1");
            if !persist {
                return Ok(keys);
            }
            match store(&path, &keys).map_err(|e| unreadable(format!("cannot write ({e})")))? {
                Some(published) => Ok(published),
                None => Ok(keys),
            }
        }
        Err(error) => Err(unreadable(error.to_string())),
    }
}

#[derive(Serialize, Deserialize)]
struct StoredKey {
    id: String,
    secret: String,
}

#[derive(Serialize, Deserialize)]
struct StoredKeys {
    active: StoredKey,
    #[serde(default)]
    retired: Vec<StoredKey>,
}

/// Writes a realm's keys readable by the owner only, whole or not at all, and never over
/// keys already there: when another process published its keys first, those are the
/// realm's, and are returned instead.
fn store(path: &Path, keys: &KeySet) -> std::io::Result<Option<KeySet>> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let directory = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(directory)?;
    let encode = |key: &Key| StoredKey { id: key.id.clone(), secret: URL_SAFE_NO_PAD.encode(key.secret) };
    let stored = StoredKeys { active: encode(&keys.active), retired: keys.retired.iter().map(encode).collect() };
    let fresh = path.with_extension(format!("json.{}.new", std::process::id()));
    // A leftover (or planted) file is removed, never written through: `create_new` fails
    // on anything at the path, a symbolic link included.
    match std::fs::remove_file(&fresh) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&fresh)?;
    file.write_all(serde_json::to_string_pretty(&stored).unwrap_or_default().as_bytes())?;
    file.sync_all()?;
    // A hard link publishes the file only where none is: two first starts cannot both win.
    let published = std::fs::hard_link(&fresh, path);
    let _ = std::fs::remove_file(&fresh);
    match published {
        Ok(()) => Ok(None),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(Some(read_stored(path)?)),
        Err(error) => Err(error),
    }
}

/// The keys stored at `path`.
fn read_stored(path: &Path) -> std::io::Result<KeySet> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let stored: StoredKeys =
        serde_json::from_str(&std::fs::read_to_string(path)?).map_err(|e| invalid(format!("not a key file ({e})")))?;
    let mut keys = Vec::new();
    for stored in std::iter::once(&stored.active).chain(&stored.retired) {
        let secret = secret_of(&stored.secret).ok_or_else(|| invalid("a secret is not 32 bytes".into()))?;
        keys.push(Key { id: stored.id.clone(), secret });
    }
    let active = keys.remove(0);
    Ok(KeySet { active, retired: keys })
}

/// 32 bytes from base64 (standard or url-safe, padded or not).
fn secret_of(text: &str) -> Option<[u8; 32]> {
    let bytes = URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .or_else(|_| STANDARD_NO_PAD.decode(text.trim_end_matches('=')))
        .ok()?;
    bytes.try_into().ok()
}

/// A key of this process alone.
fn generated(id: &str) -> KeySet {
    let mut secret = [0; 32];
    getrandom::fill(&mut secret).expect("the operating system random source is available");
    KeySet { active: Key { id: id.into(), secret }, retired: Vec::new() }
}

fn registration(
    loaded: &Loaded,
    path: &str,
    raw: &RawCapability,
    builtins: &Builtins,
) -> Result<Registration, ConfigError> {
    let at = |k: &str| format!("{path}.{k}");
    let id = CapabilityId::new(&raw.id).map_err(|e| loaded.error(format!("{}: {e}", at("id"))))?;
    let kind = match raw.kind.as_str() {
        "tool" => CapabilityKind::Tool,
        "prompt" => CapabilityKind::Prompt,
        "resource" => CapabilityKind::Resource,
        "resource_template" => CapabilityKind::ResourceTemplate,
        other => {
            return Err(loaded.error(format!(
                "{}: {other:?} is not a kind; use \"tool\", \"prompt\", \"resource\" or \"resource_template\"",
                at("kind")
            )));
        }
    };
    if raw.backend != "builtin" {
        return Err(loaded.error(format!(
            "{}: {:?} is not a backend this build serves (http and upstream backends arrive in later issues); use \"builtin\"",
            at("backend"),
            raw.backend
        )));
    }
    let builtin = builtins.get(&raw.handler).ok_or_else(|| {
        let known: Vec<&str> = builtins.names().collect();
        loaded.error(format!(
            "{}: no builtin handler is called {:?}; registered handlers: {}",
            at("handler"),
            raw.handler,
            known.join(", ")
        ))
    })?;
    if builtin.kind != kind {
        return Err(loaded.error(format!(
            "{}: handler {:?} serves a {}, not a {}",
            at("kind"),
            raw.handler,
            builtin.kind.as_str(),
            kind.as_str()
        )));
    }
    let input_schema =
        schema(loaded, &at("input_schema"), raw.input_schema.as_deref(), raw.input_schema_file.as_deref())?
            .unwrap_or_else(|| builtin.input_schema.clone());
    let output_schema =
        schema(loaded, &at("output_schema"), raw.output_schema.as_deref(), raw.output_schema_file.as_deref())?
            .or_else(|| builtin.output_schema.clone());
    let requires_client = match &raw.requires_client {
        Some(text) => Some(json_object(
            loaded,
            &at("requires_client"),
            text,
            "write the JSON inside a TOML string, e.g. '{\"elicitation\": {}}'",
        )?),
        None => builtin.requires_client.clone(),
    };
    let annotations = match &raw.annotations {
        Some(a) => Annotations {
            read_only: a.read_only.or(builtin.annotations.read_only),
            destructive: a.destructive.or(builtin.annotations.destructive),
            idempotent: a.idempotent.or(builtin.annotations.idempotent),
            open_world: a.open_world.or(builtin.annotations.open_world),
        },
        None => builtin.annotations.clone(),
    };
    Ok(Registration {
        descriptor: Arc::new(Descriptor {
            id,
            kind,
            title: raw.title.clone().or_else(|| builtin.title.clone()),
            summary: raw.summary.clone().or_else(|| builtin.summary.clone()),
            uri: raw.uri.clone().or_else(|| builtin.uri.clone()),
            mime_type: raw.mime_type.clone().or_else(|| builtin.mime_type.clone()),
            input_schema,
            output_schema,
            annotations,
            requires_client,
            binding: Binding { kind: raw.backend.clone(), target: raw.handler.clone() },
            audit_arguments: raw.audit_arguments,
        }),
        handler: Arc::clone(&builtin.handler),
    })
}

/// A schema given inline (a JSON string) or as a file; not both.
fn schema(loaded: &Loaded, key: &str, inline: Option<&str>, file: Option<&Path>) -> Result<Option<Value>, ConfigError> {
    let field = key.rsplit('.').next().unwrap_or(key);
    match (inline, file) {
        (Some(_), Some(_)) => Err(loaded.error(format!("{key}: give {field} or {field}_file, not both"))),
        (Some(text), None) => {
            json_object(loaded, key, text, "write the JSON inside a TOML string, e.g. '{\"type\": \"object\"}'")
                .map(Some)
        }
        (None, Some(file)) => {
            let path = loaded.base_dir.join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| loaded.error(format!("{key}_file: cannot read {:?}: {e}", path.display())))?;
            let hint = format!("the file {:?} must hold one JSON object", path.display());
            json_object(loaded, &format!("{key}_file"), &text, &hint).map(Some)
        }
        (None, None) => Ok(None),
    }
}

/// Parses `text` as a JSON object; `hint` says how to fix invalid JSON.
fn json_object(loaded: &Loaded, key: &str, text: &str, hint: &str) -> Result<Value, ConfigError> {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(loaded.error(format!("{key}: must be a JSON object; {hint}"))),
        Err(e) => Err(loaded.error(format!("{key}: not valid JSON ({e}); {hint}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EMBEDDED_DEFAULT, parse};

    fn assemble_text(text: &str) -> Result<Assembled, ConfigError> {
        let loaded = parse("t.toml", text, ".".into(), [])?;
        assemble(&loaded, &Builtins::demo(), &Overrides::default(), false)
    }

    fn refused(text: &str) -> String {
        assemble_text(text).err().expect("the configuration is refused").to_string()
    }

    #[test]
    fn origins_are_validated_entry_by_entry() {
        let policy = |entries: &[&str]| origin_policy(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>());
        assert_eq!(policy(&["local"]), Ok(OriginPolicy::Listed { local: true, exact: vec![] }));
        assert_eq!(policy(&["local", "any"]), Ok(OriginPolicy::Any));
        assert_eq!(policy(&["any", "bogus"]), Err("bogus".into()));
        assert_eq!(
            policy(&["https://app.example:8443"]),
            Ok(OriginPolicy::Listed { local: false, exact: vec!["https://app.example:8443".into()] })
        );
        for bad in [
            "https://app.example/",
            "x://y@z",
            "://host",
            "https://",
            "1http://a",
            "https://a b",
            "https://a\tb",
            "https://ä",
        ] {
            assert_eq!(policy(&[bad]), Err(bad.to_owned()), "{bad}");
        }
    }

    #[test]
    fn roles_are_named_once() {
        let twice = format!("{EMBEDDED_DEFAULT}\n[[realms.default.roles]]\nname = \"demo\"\ngrants = []\n");
        assert!(
            refused(&twice).contains("realms.default.roles[2].name: role \"demo\" is defined twice"),
            "{}",
            refused(&twice)
        );
        let unnamed = format!("{EMBEDDED_DEFAULT}\n[[realms.default.roles]]\nname = \"\"\n");
        assert!(refused(&unnamed).contains("realms.default.roles[2].name: a role needs a non-empty name"));
        let undefined = EMBEDDED_DEFAULT.replace("anonymous_roles = [\"demo\"]", "anonymous_roles = [\"ghost\"]");
        assert!(refused(&undefined).contains("realms.default.anonymous_roles: role \"ghost\" is not defined"));
    }

    #[test]
    fn the_embedded_default_assembles() {
        let assembled = assemble_text(EMBEDDED_DEFAULT).unwrap();
        assert_eq!(assembled.server.listeners[0].settings.revisions.len(), 3);
        assert_eq!(assembled.server.listeners[0].bind, "127.0.0.1:7373".parse().unwrap());
    }

    #[test]
    fn listen_overrides_a_valid_bind_only() {
        let loaded = parse("t.toml", EMBEDDED_DEFAULT, ".".into(), []).unwrap();
        let listen = Overrides { listen: Some("127.0.0.1:9".parse().unwrap()) };
        let assembled = assemble(&loaded, &Builtins::demo(), &listen, false).unwrap();
        assert_eq!(assembled.server.listeners[0].bind, "127.0.0.1:9".parse().unwrap());
        let broken = parse("t.toml", &EMBEDDED_DEFAULT.replace("127.0.0.1:7373", "nowhere"), ".".into(), []).unwrap();
        assert!(assemble(&broken, &Builtins::demo(), &listen, false).is_err());
    }
}
