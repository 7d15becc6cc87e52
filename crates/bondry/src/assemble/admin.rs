//! `[admin]`: where the admin listener binds, the tokens it admits, and its bounds on
//! failed attempts and connections.
//! Whether it runs is decided at start ([`plan`]): only with upstreams to review and a
//! token to admit, configured or generated into `data_dir`. It is read only at start: a
//! reload that changes it is refused ([`changed`]).

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bondry_http_server::ConnectionLimits;

use crate::config::diagnostics::Diagnostics;
use crate::config::{Loaded, RawAdmin};

/// The generated token's file in `data_dir`, read by the CLI given `--config`.
pub const TOKEN_FILE: &str = "admin-token";

/// A token's shortest secret.
const MIN_SECRET: usize = 32;

/// The most `max_failed_attempts_per_minute` may be: the listener remembers the time of
/// each failure of the last minute.
const MAX_FAILURE_BUDGET: u64 = 10_000;

/// The checked `[admin]` stanza: its bind, its configured tokens (name, secret), and its
/// bounds.
#[derive(Clone)]
pub struct AdminStanza {
    pub bind: SocketAddr,
    pub tokens: Vec<(String, String)>,
    pub max_failed_attempts_per_minute: NonZeroU32,
    pub connections: ConnectionLimits,
    pub metrics_public: bool,
    pub metrics_per_capability: bool,
}

/// The names only: the secrets are secrets.
impl std::fmt::Debug for AdminStanza {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tokens.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("AdminStanza")
            .field("bind", &self.bind)
            .field("tokens", &names)
            .field("max_failed_attempts_per_minute", &self.max_failed_attempts_per_minute)
            .field("connections", &self.connections)
            .field("metrics_public", &self.metrics_public)
            .field("metrics_per_capability", &self.metrics_per_capability)
            .finish()
    }
}

/// The keys of `[admin]` whose checked values differ between the `running` stanza and the
/// file's, in the order of the section's table.
pub fn changed(running: &AdminStanza, file: &AdminStanza) -> Vec<&'static str> {
    let (was, now) = (running.connections, file.connections);
    [
        ("bind", running.bind != file.bind),
        ("tokens", running.tokens != file.tokens),
        (
            "max_failed_attempts_per_minute",
            running.max_failed_attempts_per_minute != file.max_failed_attempts_per_minute,
        ),
        ("max_connections", was.max_connections != now.max_connections),
        ("header_read_timeout_ms", was.header_read_timeout != now.header_read_timeout),
        ("body_read_timeout_ms", was.body_read_timeout != now.body_read_timeout),
        ("metrics_public", running.metrics_public != file.metrics_public),
        ("metrics_per_capability", running.metrics_per_capability != file.metrics_per_capability),
    ]
    .into_iter()
    .filter_map(|(key, differs)| differs.then_some(key))
    .collect()
}

pub(super) fn stanza(diagnostics: &mut Diagnostics, loaded: &Loaded) -> Option<AdminStanza> {
    let raw: &RawAdmin = &loaded.raw.admin;
    let bind = match raw.bind.parse::<SocketAddr>() {
        Ok(bind) if bind.ip().is_loopback() || raw.allow_remote => Some(bind),
        Ok(_) => {
            diagnostics.refuse(
                "admin.bind",
                format!("{:?} is not loopback; the admin API approves what models are told, so a remote bind needs allow_remote = true", raw.bind),
            );
            None
        }
        Err(_) => {
            diagnostics.refuse("admin.bind", format!("{:?} is not an address like 127.0.0.1:7374", raw.bind));
            None
        }
    };
    let mut tokens = Vec::new();
    let mut clean = true;
    for (index, token) in raw.tokens.iter().enumerate() {
        let at = |key: &str| format!("admin.tokens[{index}].{key}");
        let valid_name = !token.name.is_empty()
            && token.name.len() <= 32
            && token.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !valid_name {
            diagnostics.refuse(
                at("name"),
                format!("{:?} is not a token name: use 1-32 characters from a-z 0-9 _ -", token.name),
            );
            clean = false;
        } else if raw.tokens[..index].iter().any(|earlier| earlier.name == token.name) {
            diagnostics.refuse(at("name"), format!("token {:?} is defined twice", token.name));
            clean = false;
        }
        match loaded.env.get(&token.token_env) {
            Some(secret) if secret.len() >= MIN_SECRET => tokens.push((token.name.clone(), secret.to_owned())),
            Some(_) => {
                diagnostics
                    .refuse(at("token_env"), format!("{:?} holds fewer than {MIN_SECRET} bytes", token.token_env));
                clean = false;
            }
            None => {
                diagnostics.refuse(at("token_env"), format!("{:?} is not set", token.token_env));
                clean = false;
            }
        }
    }
    let budget = diagnostics.ok(
        "admin.max_failed_attempts_per_minute",
        u32::try_from(raw.max_failed_attempts_per_minute)
            .ok()
            .filter(|_| raw.max_failed_attempts_per_minute <= MAX_FAILURE_BUDGET)
            .and_then(NonZeroU32::new)
            .ok_or_else(|| {
                format!("{} must be between 1 and {MAX_FAILURE_BUDGET}", raw.max_failed_attempts_per_minute)
            }),
    );
    let mut positive = |key: &str, value: u64, unit: &str| {
        let checked = (value > 0).then_some(value).ok_or_else(|| format!("0 must be a positive {unit}"));
        diagnostics.ok(format!("admin.{key}"), checked)
    };
    let max_connections = positive("max_connections", raw.max_connections, "count, e.g. 64");
    let header_read_timeout =
        positive("header_read_timeout_ms", raw.header_read_timeout_ms, "number of milliseconds, e.g. 10000");
    let body_read_timeout =
        positive("body_read_timeout_ms", raw.body_read_timeout_ms, "number of milliseconds, e.g. 30000");
    clean.then_some(())?;
    Some(AdminStanza {
        bind: bind?,
        tokens,
        max_failed_attempts_per_minute: budget?,
        connections: ConnectionLimits {
            max_connections: usize::try_from(max_connections?).unwrap_or(usize::MAX),
            header_read_timeout: Duration::from_millis(header_read_timeout?),
            body_read_timeout: Duration::from_millis(body_read_timeout?),
        },
        metrics_public: raw.metrics_public,
        metrics_per_capability: raw.metrics_per_capability,
    })
}

/// What the admin listener does at this start: serve with these tokens, or stay off
/// and say why.
pub enum Plan {
    Serve { bind: SocketAddr, tokens: Vec<(String, String)>, demo: bool },
    Off(&'static str),
}

/// Why a configured admin listener is off: nothing asks for it.
pub const NOT_ASKED: &str = "no [admin], and no realm has upstreams, OpenAPI or HTTP backends";
/// Why a configured admin listener is off: no token can be had.
const NO_TOKEN: &str = "no [[admin.tokens]], and no data_dir to keep a generated token in";

/// Why the admin listener of the configuration `loaded` does not run, if it does not.
pub fn off(loaded: &Loaded) -> Option<&'static str> {
    if loaded.places.named("admin").is_none() && !loaded.raw.has_backends() {
        return Some(NOT_ASKED);
    }
    (loaded.raw.admin.tokens.is_empty() && loaded.data_dir().is_none()).then_some(NO_TOKEN)
}

/// How this start was asked for: the embedded demo or a configuration file, and
/// `--admin-listen`.
#[derive(Debug, Clone, Copy)]
pub struct Start {
    pub demo: bool,
    pub bind: Option<SocketAddr>,
}

/// Decides at start whether the admin listener runs: for the embedded demo always, with a
/// token made for this run and kept nowhere; otherwise when the file has an `[admin]` table
/// or a realm has backends other than builtin handlers, with the configured tokens, else
/// the token generated into `data_dir` (made, 0600, at its first start), else not at all.
/// `--admin-listen` replaces the bind, held to the same rule.
pub fn plan(loaded: &Loaded, stanza: &AdminStanza, start: Start) -> anyhow::Result<Plan> {
    let bind = match start.bind {
        Some(bind) if !bind.ip().is_loopback() && !loaded.raw.admin.allow_remote => anyhow::bail!(
            "--admin-listen {bind} is not loopback; the admin API approves what models are told, so a remote bind needs [admin] allow_remote = true"
        ),
        Some(bind) => bind,
        None => stanza.bind,
    };
    if start.demo {
        let secret = fresh_secret().map_err(|e| anyhow::anyhow!("cannot make the demo's admin token ({e})"))?;
        return Ok(Plan::Serve { bind, tokens: vec![("demo".into(), secret)], demo: true });
    }
    if let Some(why) = off(loaded) {
        return Ok(Plan::Off(why));
    }
    if !stanza.tokens.is_empty() {
        return Ok(Plan::Serve { bind, tokens: stanza.tokens.clone(), demo: false });
    }
    let Some(data_dir) = loaded.data_dir() else {
        return Ok(Plan::Off(NO_TOKEN));
    };
    let path = token_path(&data_dir);
    let secret =
        generated(&path).map_err(|e| anyhow::anyhow!("{}: cannot make the admin token ({e})", path.display()))?;
    Ok(Plan::Serve { bind, tokens: vec![("generated".into(), secret)], demo: false })
}

/// Where the admin listener's bound address is written at each start, for `bondry
/// upstream --config` to find a listener that bound port 0.
pub const ADDRESS_FILE: &str = "admin-address";

/// Writes `addr` to the address file of `data_dir` (0600), replacing the last start's, and
/// returns its path. Written beside it first and renamed, so a reader sees a whole address;
/// the temporary name holds the process id, as instances may share a data directory.
pub fn write_address(data_dir: &Path, addr: SocketAddr) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = data_dir.join(ADDRESS_FILE);
    let fresh = data_dir.join(format!(".{ADDRESS_FILE}.{}", std::process::id()));
    let _ = std::fs::remove_file(&fresh);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&fresh)?;
        file.write_all(format!("{addr}\n").as_bytes())?;
        std::fs::rename(&fresh, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&fresh);
    }
    written.map(|()| path)
}

/// Where the generated token of the data directory `data_dir` is kept.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join(TOKEN_FILE)
}

/// A new token: 32 random bytes, in hex.
fn fresh_secret() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// The token in `path`, made there (0600) if there is none.
fn generated(path: &Path) -> std::io::Result<String> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    match std::fs::read_to_string(path) {
        Ok(secret) if secret.trim().len() >= MIN_SECRET => {
            crate::data_dir::keep_private(path)?;
            return Ok(secret.trim().to_owned());
        }
        Ok(_) => return Err(std::io::Error::other(format!("it holds fewer than {MIN_SECRET} bytes"))),
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        Err(_) => {}
    }
    let directory = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(directory)?;
    let secret = fresh_secret()?;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(format!("{secret}\n").as_bytes())?;
    file.sync_all()?;
    Ok(secret)
}
