//! A realm's `[[realms.NAME.upstreams]]`: each upstream MCP server checked into the
//! [`UpstreamSpec`] Bondry connects with, its secrets (the child's `env_from`, the HTTP
//! `headers_from`) read from the environment the configuration was loaded in, never the
//! process's own. Nothing here starts or reaches an upstream: `check` runs no child and
//! opens no connection.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bondry_mcp_proto::Revision;
use bondry_upstream::{
    Expose, ListingLimits, NameGlob, NewEntries, Root, TransportSpec, Trust, Tunables, UpstreamSpec,
};
use reqwest::Url;

use crate::backends::endpoint::{self, Query, Reserved};
use crate::config::diagnostics::{Diagnostics, ONE_HOUR_MS, revisions, within};
use crate::config::{Loaded, RawListing, RawRoot, RawUpstream};

/// The longest upstream name, and the longest prefix: short enough that a prefixed id
/// keeps room for the upstream's own name within the 64 bytes of a capability id.
const MAX_NAME_LEN: usize = 32;

/// The longest glob over names: the longest tool name MCP allows.
const MAX_GLOB_LEN: usize = 128;

const ONE_DAY_MS: u64 = 24 * ONE_HOUR_MS;

/// Every child gets these from Bondry's own environment, so a stanza cannot set them.
const GIVEN_TO_EVERY_CHILD: [&str; 3] = ["PATH", "HOME", "LANG"];

/// Headers Bondry sets itself on requests to an upstream (as `HeaderName` spells them,
/// lowercase), besides every `Mcp-Param-*`: a configured value would contradict the
/// transport or the routing headers Bondry mirrors from the request (`Mcp-Method`, `Mcp-Name`).
const SET_BY_BONDRY: [&str; 11] = [
    "host",
    "content-type",
    "content-length",
    "accept",
    "connection",
    "transfer-encoding",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
];
const RESERVED: Reserved = Reserved { names: &SET_BY_BONDRY, prefix: Some("mcp-param-"), to: "an upstream" };

/// Every upstream of the realm `realm`, each checked whole; `None` once any is refused.
pub(crate) fn upstreams(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    realm: &str,
    raw: &[RawUpstream],
    realm_listing: Option<RawListing>,
) -> Option<Vec<UpstreamSpec>> {
    let specs: Vec<_> =
        (0..raw.len()).map(|index| spec(diagnostics, loaded, realm, raw, index, realm_listing)).collect();
    specs.into_iter().collect()
}

/// The stanza `all[index]`: its name, its transport, then every other key in the file's order.
fn spec(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    realm: &str,
    all: &[RawUpstream],
    index: usize,
    realm_listing: Option<RawListing>,
) -> Option<UpstreamSpec> {
    let raw = &all[index];
    let stanza = format!("realms.{realm}.upstreams[{index}]");
    let at = |k: &str| format!("{stanza}.{k}");
    let name = name(diagnostics, &at("name"), realm, all, index);
    let transport = match raw.transport.as_str() {
        "stdio" => stdio(diagnostics, loaded, &stanza, raw),
        "http" => http(diagnostics, loaded, &stanza, raw),
        other => {
            diagnostics.refuse(
                at("transport"),
                format!("{other:?} is not a transport; use \"stdio\" (a child process) or \"http\" (Streamable HTTP)"),
            );
            None
        }
    };
    // Without a prefix of its own, the upstream's name is its prefix (once the name is valid).
    let prefix = match &raw.prefix {
        Some(prefix) => diagnostics.ok(at("prefix"), self::prefix(prefix)),
        None => name.clone(),
    };
    let expose = expose(diagnostics, &at("expose"), &raw.expose);
    let include = globs(diagnostics, &at("include"), &raw.include);
    let exclude = globs(diagnostics, &at("exclude"), &raw.exclude);
    let protocol_versions = offered(diagnostics, &at("protocol_versions"), &raw.protocol_versions);
    let roots = roots(diagnostics, &at("roots"), &raw.roots);
    // A key left out takes its default, checked like any value given.
    let default = Tunables::default();
    let ms = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    let n = |count: usize| u64::try_from(count).unwrap_or(u64::MAX);
    let limits = ListingLimits::default();
    let (hour, day) = ("milliseconds (an hour)", "milliseconds (a second to a day)");
    // Each number a stanza tunes: its key, the value given, its default, its bounds.
    #[rustfmt::skip]
    let numbers = [
        ("connect_timeout_ms", raw.connect_timeout_ms, ms(default.connect_timeout), 1..=ONE_HOUR_MS, hour),
        ("call_timeout_ms", raw.call_timeout_ms, ms(default.call_timeout), 1..=ONE_HOUR_MS, hour),
        ("max_concurrent_calls", raw.max_concurrent_calls, n(default.max_concurrent_calls), 1..=1024, "calls"),
        ("max_response_bytes", raw.max_response_bytes, n(default.max_response_bytes), 1024..=64 << 20, "bytes (64 MiB)"),
        ("max_entries_per_kind", raw.max_entries_per_kind, n(limits.max_entries), 1..=100_000, "entries"),
        ("max_definition_bytes", raw.max_definition_bytes, n(limits.max_definition_bytes), 1024..=16 << 20, "bytes (16 MiB)"),
        ("max_listing_bytes", raw.max_listing_bytes, n(limits.max_bytes), 64 << 10..=1 << 30, "bytes (1 GiB)"),
        ("list_timeout_ms", raw.list_timeout_ms, ms(limits.page_timeout), 1..=ONE_HOUR_MS, hour),
        ("max_pending_server_requests", raw.max_pending_server_requests, n(default.max_pending_server_requests), 1..=4096, "requests"),
        ("stdin_stall_ms", raw.stdin_stall_ms, ms(default.stdin_stall), 100..=ONE_HOUR_MS, hour),
        ("refresh_interval_ms", raw.refresh_interval_ms, ms(default.refresh_interval), 1000..=ONE_DAY_MS, day),
        ("input_wait_ms", raw.input_wait_ms, ms(default.input_wait), 1..=ONE_HOUR_MS, hour),
    ];
    let [
        connect_timeout,
        call_timeout,
        max_concurrent_calls,
        max_response_bytes,
        max_entries,
        max_definition_bytes,
        max_listing_bytes,
        list_timeout,
        max_pending_server_requests,
        stdin_stall,
        refresh_interval,
        input_wait,
    ] = numbers.map(|(k, given, or, range, unit)| diagnostics.ok(at(k), within(given.unwrap_or(or), range, unit)));
    let trust = match &raw.trust {
        Some(text) => diagnostics.ok(at("trust"), trust(text)),
        None => Some(default.trust),
    };
    let mut entries = |k: &str, given: &Option<String>, or: NewEntries| match given {
        Some(text) => diagnostics.ok(at(k), new_entries(text)),
        None => Some(or),
    };
    let new_capabilities = entries("new_capabilities", &raw.new_capabilities, default.new_capabilities);
    let new_resources = entries("new_resources", &raw.new_resources, default.new_resources);
    let pin_ignore_meta = diagnostics.ok(at("pin_ignore_meta"), ignored_meta(&raw.pin_ignore_meta));
    let count = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
    let listing = ListingLimits {
        max_entries: count(max_entries?),
        max_definition_bytes: count(max_definition_bytes?),
        max_bytes: count(max_listing_bytes?),
        page_timeout: Duration::from_millis(list_timeout?),
    };
    Some(UpstreamSpec {
        realm: realm.to_owned(),
        name: name?,
        transport: transport?,
        prefix: prefix?,
        expose: expose?,
        include: include?,
        exclude: exclude?,
        protocol_versions: protocol_versions?,
        roots: roots?,
        tunables: Tunables {
            connect_timeout: Duration::from_millis(connect_timeout?),
            call_timeout: Duration::from_millis(call_timeout?),
            max_concurrent_calls: count(max_concurrent_calls?),
            max_response_bytes: count(max_response_bytes?),
            max_pending_server_requests: count(max_pending_server_requests?),
            stdin_stall: Duration::from_millis(stdin_stall?),
            trust: trust?,
            new_capabilities: new_capabilities?,
            new_resources: new_resources?,
            refresh_interval: Duration::from_millis(refresh_interval?),
            input_wait: Duration::from_millis(input_wait?),
        },
        pin_ignore_meta: pin_ignore_meta?,
        allow_url_elicitation: raw.allow_url_elicitation,
        required: raw.required,
        listing,
        tool_listing: RawListing::of(raw.listing, realm_listing),
    })
}

/// The calls an upstream stanza may run at once, its default when left out.
pub(crate) fn max_concurrent_calls(raw: &RawUpstream) -> u64 {
    let default = Tunables::default().max_concurrent_calls;
    raw.max_concurrent_calls.unwrap_or_else(|| u64::try_from(default).unwrap_or(u64::MAX))
}

/// Used by no earlier stanza of the realm, and by the name rule.
fn name(diagnostics: &mut Diagnostics, key: &str, realm: &str, all: &[RawUpstream], index: usize) -> Option<String> {
    let name = diagnostics.ok(key, name_rule(&all[index].name))?;
    if all[..index].iter().any(|earlier| earlier.name == name) {
        diagnostics.refuse(
            key,
            format!("upstream {name:?} is defined twice; give each [[realms.{realm}.upstreams]] a name of its own"),
        );
        return None;
    }
    Some(name)
}

/// 1-32 bytes of `[a-z0-9_-]`: a backend's name, as audit records, logs, the CLI and the
/// admin API show it.
pub(crate) fn name_rule(name: &str) -> Result<String, String> {
    let valid = (1..=MAX_NAME_LEN).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'));
    valid.then(|| name.to_owned()).ok_or_else(|| {
        format!(
            "{name:?} is not a backend name: use 1-32 characters from a-z 0-9 _ - (it names the backend in logs, audit records and the CLI)"
        )
    })
}

/// Refuses each key of `given` that is present: it belongs to the other transport, and a
/// key that would be ignored is never accepted.
fn refuse_foreign(diagnostics: &mut Diagnostics, stanza: &str, transport: &str, given: &[(&str, bool)]) {
    let other = if transport == "stdio" { "http" } else { "stdio" };
    for (key, _) in given.iter().filter(|(_, present)| *present) {
        diagnostics.refuse(
            format!("{stanza}.{key}"),
            format!("{key} is only for transport = {other:?}; remove it from this {transport} upstream"),
        );
    }
}

/// A child process: its command and arguments, its whole environment, its directory.
fn stdio(diagnostics: &mut Diagnostics, loaded: &Loaded, stanza: &str, raw: &RawUpstream) -> Option<TransportSpec> {
    let at = |k: &str| format!("{stanza}.{k}");
    refuse_foreign(
        diagnostics,
        stanza,
        "stdio",
        &[
            ("url", raw.url.is_some()),
            ("headers_from", raw.headers_from.is_some()),
            ("allow_plain_http", raw.allow_plain_http.is_some()),
            ("ca_file", raw.ca_file.is_some()),
            ("proxy", raw.proxy.is_some()),
        ],
    );
    let command = match raw.command.as_deref() {
        None => {
            diagnostics.refuse(at("command"), "a stdio upstream needs the program to run, e.g. command = \"node\"");
            None
        }
        Some("") => {
            diagnostics
                .refuse(at("command"), "\"\" is not a command; name the program to run (no shell), e.g. \"node\"");
            None
        }
        Some(command) => diagnostics.ok(at("command"), without_nul(command).map(|()| program(loaded, command))),
    };
    let args: Vec<_> = raw
        .args
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, arg)| diagnostics.ok(format!("{stanza}.args[{index}]"), without_nul(arg).map(|()| arg.clone())))
        .collect();
    let env = child_env(diagnostics, loaded, stanza, raw);
    // The configuration's directory unless given: what a relative path in `args` means
    // does not depend on where `bondry serve` was started.
    let cwd = match &raw.cwd {
        None => Some(Some(absolute(&config_dir(loaded)))),
        Some(dir) => diagnostics.ok(at("cwd"), directory(&absolute(&config_dir(loaded).join(dir)))).map(Some),
    };
    Some(TransportSpec::Stdio {
        command: command?,
        args: args.into_iter().collect::<Option<_>>()?,
        env: env?,
        cwd: cwd?,
    })
}

/// The program to run: a command with a `/` is a path, resolved against the
/// configuration's directory; a bare name is looked up on `PATH` when the child starts.
fn program(loaded: &Loaded, command: &str) -> String {
    if command.contains('/') {
        absolute(&config_dir(loaded).join(command)).display().to_string()
    } else {
        command.to_owned()
    }
}

/// The directory relative paths of the configuration are resolved against.
fn config_dir(loaded: &Loaded) -> PathBuf {
    if loaded.base_dir.as_os_str().is_empty() { PathBuf::from(".") } else { loaded.base_dir.clone() }
}

/// `path` made absolute against the current directory, as the start sees it; unchanged if
/// the current directory cannot be read.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// The child's whole environment: `PATH`, `HOME` and `LANG` as Bondry has them (those
/// it has), then `env` as written, then each of `env_from` read from the configuration's
/// environment. The child is started with exactly these, so the upstream crate never reads
/// Bondry's own environment.
fn child_env(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    stanza: &str,
    raw: &RawUpstream,
) -> Option<Vec<(String, String)>> {
    let given = raw.env.as_ref();
    let mut env: Vec<(String, String)> = GIVEN_TO_EVERY_CHILD
        .iter()
        .filter_map(|name| Some((name.to_string(), loaded.env.get(name)?.to_owned())))
        .collect();
    let mut valid = true;
    for (name, value) in given.into_iter().flatten() {
        let checked = child_variable(name).and_then(|()| without_nul(value));
        match diagnostics.ok(format!("{stanza}.env.{name}"), checked) {
            Some(()) => env.push((name.clone(), value.clone())),
            None => valid = false,
        }
    }
    for (name, variable) in raw.env_from.iter().flatten() {
        let resolved = child_variable(name)
            .and_then(|()| {
                if given.is_some_and(|given| given.contains_key(name)) {
                    return Err(format!("{name} is also given in env; keep one of the two"));
                }
                Ok(())
            })
            .and_then(|()| {
                loaded.env.get(variable).ok_or_else(|| {
                    format!("the environment variable {variable:?} is not set (its value is the child's {name})")
                })
            })
            .and_then(|value| {
                if value.contains('\0') {
                    return Err(format!(
                        "the value of {variable:?} holds a NUL byte, which no variable of a child can"
                    ));
                }
                Ok(value.to_owned())
            });
        match diagnostics.ok(format!("{stanza}.env_from.{name}"), resolved) {
            Some(value) => env.push((name.clone(), value)),
            None => valid = false,
        }
    }
    valid.then_some(env)
}

/// A variable a stanza may give a child: a portable name, and none Bondry always gives.
fn child_variable(name: &str) -> Result<(), String> {
    let portable = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !portable {
        return Err(format!("{name:?} is not a variable name: use A-Z a-z 0-9 _, not starting with a digit"));
    }
    if GIVEN_TO_EVERY_CHILD.contains(&name) {
        return Err(format!(
            "{name} is given to every child by Bondry, from its own environment (as are PATH, HOME and LANG); remove it"
        ));
    }
    Ok(())
}

/// Text passed to a process (its command, an argument, a variable): no C string holds a NUL.
fn without_nul(text: &str) -> Result<(), String> {
    if text.contains('\0') {
        return Err(format!("{text:?} holds a NUL byte, which no command, argument or variable can"));
    }
    Ok(())
}

fn directory(path: &Path) -> Result<PathBuf, String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(path.to_path_buf()),
        Ok(_) => Err(format!("{:?} is not a directory", path.display())),
        Err(e) => Err(format!("cannot use {:?} as the working directory: {e}", path.display())),
    }
}

/// Streamable HTTP: the endpoint, the headers from the environment, the roots trusted
/// besides the system's, the proxy.
fn http(diagnostics: &mut Diagnostics, loaded: &Loaded, stanza: &str, raw: &RawUpstream) -> Option<TransportSpec> {
    let at = |k: &str| format!("{stanza}.{k}");
    refuse_foreign(
        diagnostics,
        stanza,
        "http",
        &[
            ("command", raw.command.is_some()),
            ("args", raw.args.is_some()),
            ("env", raw.env.is_some()),
            ("env_from", raw.env_from.is_some()),
            ("cwd", raw.cwd.is_some()),
        ],
    );
    let url = match &raw.url {
        None => {
            diagnostics.refuse(
                at("url"),
                "an http upstream needs its MCP endpoint, e.g. url = \"https://mcp.example.com/mcp\"",
            );
            None
        }
        Some(url) => {
            diagnostics.ok(at("url"), endpoint::url(url, raw.allow_plain_http.unwrap_or(false), Query::Allowed))
        }
    };
    let headers = endpoint::headers(diagnostics, loaded, stanza, raw.headers_from.as_ref(), &RESERVED);
    let (ca_file, proxy) =
        endpoint::connection(diagnostics, loaded, stanza, raw.ca_file.as_deref(), raw.proxy.as_deref())?;
    Some(TransportSpec::Http { url: url?, headers: headers?, ca_file, proxy })
}

/// `""`, or 1-32 bytes of the capability id alphabet, not ending in the dot put after it.
pub(crate) fn prefix(prefix: &str) -> Result<String, String> {
    let valid = prefix.is_empty()
        || (prefix.len() <= MAX_NAME_LEN && bondry_core::capability::is_valid_id(prefix) && !prefix.ends_with('.'));
    valid.then(|| prefix.to_owned()).ok_or_else(|| {
        format!(
            "{prefix:?} is not a prefix: use \"\" or 1-32 characters from A-Z a-z 0-9 . _ -, not ending in \".\" (an id is the prefix, a dot and the backend's own name)"
        )
    })
}

/// Which kinds are served: at least one, each once.
fn expose(diagnostics: &mut Diagnostics, key: &str, kinds: &[String]) -> Option<Expose> {
    if kinds.is_empty() {
        diagnostics.refuse(key, "the list is empty; expose at least one of \"tools\", \"prompts\", \"resources\"");
        return None;
    }
    let mut expose = Expose { tools: false, prompts: false, resources: false };
    let mut valid = true;
    for (index, kind) in kinds.iter().enumerate() {
        let exposed = match kind.as_str() {
            "tools" => &mut expose.tools,
            "prompts" => &mut expose.prompts,
            "resources" => &mut expose.resources,
            other => {
                let message = format!(
                    "{other:?} is not a kind an upstream exposes; use \"tools\", \"prompts\" or \"resources\" (with resource templates)"
                );
                diagnostics.refuse(format!("{key}[{index}]"), message);
                valid = false;
                continue;
            }
        };
        if *exposed {
            diagnostics.refuse(format!("{key}[{index}]"), format!("{kind:?} is listed twice"));
            valid = false;
        }
        *exposed = true;
    }
    valid.then_some(expose)
}

pub(crate) fn globs(diagnostics: &mut Diagnostics, key: &str, patterns: &[String]) -> Option<Vec<NameGlob>> {
    let globs: Vec<_> = patterns
        .iter()
        .enumerate()
        .map(|(index, pattern)| diagnostics.ok(format!("{key}[{index}]"), glob(pattern)))
        .collect();
    globs.into_iter().collect()
}

fn glob(pattern: &str) -> Result<NameGlob, String> {
    let printable = pattern.bytes().all(|b| (b' '..=b'~').contains(&b));
    if !(1..=MAX_GLOB_LEN).contains(&pattern.len()) || !printable {
        return Err(format!(
            "{pattern:?} is not a glob over names: use 1-128 printable ASCII characters, * for any run of them and ? for any one"
        ));
    }
    Ok(NameGlob::new(pattern))
}

/// The revisions offered to the upstream: at least one, each known and listed once, kept
/// newest first whatever the file's order.
fn offered(diagnostics: &mut Diagnostics, key: &str, versions: &[String]) -> Option<Vec<Revision>> {
    if versions.is_empty() {
        diagnostics.refuse(
            key,
            "the list is empty; offer the upstream at least one of \"2026-07-28\", \"2025-11-25\", \"2025-06-18\"",
        );
        return None;
    }
    let mut revisions = revisions(diagnostics, key, versions)?;
    let mut valid = true;
    for (index, revision) in revisions.iter().enumerate() {
        if revisions[..index].contains(revision) {
            diagnostics.refuse(format!("{key}[{index}]"), format!("\"{revision}\" is listed twice"));
            valid = false;
        }
    }
    revisions.sort_unstable_by(|a, b| b.cmp(a));
    valid.then_some(revisions)
}

/// Bondry's answer to the upstream's `roots/list`: each root a `file://` URI.
fn roots(diagnostics: &mut Diagnostics, key: &str, raw: &[RawRoot]) -> Option<Vec<Root>> {
    let roots: Vec<_> = raw
        .iter()
        .enumerate()
        .map(|(index, root)| {
            let file_uri = root.uri.starts_with("file://") && Url::parse(&root.uri).is_ok();
            let checked = file_uri.then(|| Root { uri: root.uri.clone(), name: root.name.clone() }).ok_or_else(|| {
                format!("{:?} is not a file:// URI; a root names a directory, e.g. \"file:///srv/project\"", root.uri)
            });
            diagnostics.ok(format!("{key}[{index}].uri"), checked)
        })
        .collect();
    roots.into_iter().collect()
}

fn trust(text: &str) -> Result<Trust, String> {
    match text {
        "first_use" => Ok(Trust::FirstUse),
        "approve" => Ok(Trust::Approve),
        other => Err(format!("{other:?} is neither \"first_use\" nor \"approve\"")),
    }
}

/// At most 64 `_meta` keys, each 1-256 bytes: what an upstream changes on every listing
/// (an etag, a timestamp) and that must not drift its pins.
fn ignored_meta(keys: &[String]) -> Result<Vec<String>, String> {
    if keys.len() > 64 {
        return Err(format!("{} keys; at most 64", keys.len()));
    }
    match keys.iter().find(|key| key.is_empty() || key.len() > 256) {
        Some(key) => Err(format!("{key:?} is not a _meta key: use 1-256 bytes")),
        None => Ok(keys.to_vec()),
    }
}

fn new_entries(text: &str) -> Result<NewEntries, String> {
    match text {
        "hold" => Ok(NewEntries::Hold),
        "trust" => Ok(NewEntries::Trust),
        other => Err(format!("{other:?} is neither \"hold\" nor \"trust\"")),
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::AUTHORIZATION;

    use reqwest::header::HeaderValue;

    use super::*;
    use crate::config::{ConfigError, parse};

    /// A stdio stanza with only the keys it needs; tests add keys after it.
    const STDIO: &str =
        "[[realms.default.upstreams]]\nname = \"everything\"\ntransport = \"stdio\"\ncommand = \"node\"\n";

    /// An http stanza with only the keys it needs; tests add keys after it.
    const HTTP: &str = "[[realms.default.upstreams]]\nname = \"remote\"\ntransport = \"http\"\nurl = \"https://mcp.example.com/mcp\"\n";

    /// The upstreams `stanzas` make, loaded in `env` from a file in `base_dir`, or every
    /// refusal, one line each.
    fn checked_in(base_dir: &Path, stanzas: &str, env: &[(&str, &str)]) -> Result<Vec<UpstreamSpec>, Vec<String>> {
        let env = env.iter().map(|(name, value)| (name.to_string(), value.to_string()));
        let loaded = parse("t.toml", stanzas, base_dir.to_path_buf(), env).unwrap_or_else(|error| panic!("{error}"));
        let mut diagnostics = Diagnostics::new("t.toml", Default::default());
        let specs = upstreams(&mut diagnostics, &loaded, "default", &loaded.raw.realms["default"].upstreams, None);
        diagnostics.finish(specs).map_err(|errors| errors.iter().map(ConfigError::to_string).collect())
    }

    fn checked(stanzas: &str, env: &[(&str, &str)]) -> Result<Vec<UpstreamSpec>, Vec<String>> {
        checked_in(Path::new("."), stanzas, env)
    }

    /// The one upstream `stanza` makes.
    #[track_caller]
    fn accepted(stanza: &str, env: &[(&str, &str)]) -> UpstreamSpec {
        let mut specs = checked(stanza, env).unwrap_or_else(|refused| panic!("{stanza}\n{refused:#?}"));
        assert_eq!(specs.len(), 1);
        specs.remove(0)
    }

    /// Every refusal of `stanzas`, without the file and the first stanza's key path.
    #[track_caller]
    fn refused(stanzas: &str, env: &[(&str, &str)]) -> Vec<String> {
        let refused = checked(stanzas, env).err().unwrap_or_else(|| panic!("accepted:\n{stanzas}"));
        refused.iter().map(|line| line.replace("t.toml: realms.default.upstreams[0].", "")).collect()
    }

    /// `stanzas` are refused exactly `expected`, in this order.
    #[track_caller]
    fn assert_refused(stanzas: &str, expected: &[&str]) {
        assert_eq!(refused(stanzas, &[]), expected, "{stanzas}");
    }

    fn spec_with(name: &str, transport: TransportSpec) -> UpstreamSpec {
        UpstreamSpec { realm: "default".into(), ..UpstreamSpec::new(name, transport) }
    }

    #[test]
    fn a_minimal_stdio_stanza_takes_every_default() {
        let transport = TransportSpec::Stdio {
            command: "node".into(),
            args: vec![],
            env: vec![],
            // The configuration's directory, made absolute.
            cwd: Some(std::env::current_dir().unwrap()),
        };
        assert_eq!(accepted(STDIO, &[]), spec_with("everything", transport));
    }

    #[test]
    fn a_minimal_http_stanza_takes_every_default_and_its_headers_from_the_environment() {
        let stanza = format!("{HTTP}headers_from = {{ Authorization = \"REMOTE_AUTH\" }}\n");
        let spec = accepted(&stanza, &[("REMOTE_AUTH", "Bearer s3cret")]);
        let transport = TransportSpec::Http {
            url: "https://mcp.example.com/mcp".parse().unwrap(),
            headers: vec![(AUTHORIZATION, HeaderValue::from_static("Bearer s3cret"))],
            ca_file: None,
            proxy: None,
        };
        assert_eq!(spec, spec_with("remote", transport));
        let TransportSpec::Http { headers, .. } = &spec.transport else { unreachable!("an http transport") };
        assert!(headers[0].1.is_sensitive(), "a secret header is never indexed");
    }

    #[test]
    fn a_command_with_a_slash_and_a_cwd_mean_paths_in_the_configurations_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        let stanza = STDIO.replace("command = \"node\"", "command = \"bin/server\"\nargs = [\"data/x\"]");
        let spec = checked_in(dir.path(), &stanza, &[]).unwrap().remove(0);
        let TransportSpec::Stdio { command, args, cwd, .. } = spec.transport else { unreachable!("a stdio transport") };
        assert_eq!(command, dir.path().join("bin/server").display().to_string());
        assert_eq!(args, ["data/x"], "arguments are never rewritten");
        assert_eq!(cwd.as_deref(), Some(dir.path()));
        let spec = checked_in(dir.path(), &format!("{STDIO}cwd = \"work\"\n"), &[]).unwrap().remove(0);
        let TransportSpec::Stdio { command, cwd, .. } = spec.transport else { unreachable!("a stdio transport") };
        assert_eq!(
            (command.as_str(), cwd),
            ("node", Some(dir.path().join("work"))),
            "a bare name is looked up on PATH"
        );
    }

    #[test]
    fn every_key_of_a_stanza_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        let stanza = r#"[[realms.default.upstreams]]
name = "everything"
transport = "stdio"
command = "node"
args = ["dist/index.js", "stdio"]
env = { LOG_LEVEL = "info" }
env_from = { API_KEY = "EVERYTHING_API_KEY" }
cwd = "work"
prefix = "ev.all"
expose = ["prompts", "tools"]
include = ["get-*", "echo"]
exclude = ["get-secret"]
protocol_versions = ["2025-06-18", "2026-07-28"]
roots = [{ uri = "file:///srv/project", name = "project" }, { uri = "file:///tmp" }]
connect_timeout_ms = 3600000
call_timeout_ms = 1
max_concurrent_calls = 1024
max_response_bytes = 1024
trust = "approve"
new_capabilities = "trust"
new_resources = "hold"
pin_ignore_meta = ["com.example/etag"]
refresh_interval_ms = 1000
input_wait_ms = 1
allow_url_elicitation = true
required = true
max_entries_per_kind = 100000
max_definition_bytes = 1024
max_listing_bytes = 65536
list_timeout_ms = 3600000
"#;
        let mut specs = checked_in(dir.path(), stanza, &[("EVERYTHING_API_KEY", "k3y")]).unwrap();
        let expected = UpstreamSpec {
            transport: TransportSpec::Stdio {
                command: "node".into(),
                args: vec!["dist/index.js".into(), "stdio".into()],
                // `env` as written, then `env_from` resolved.
                env: vec![("LOG_LEVEL".into(), "info".into()), ("API_KEY".into(), "k3y".into())],
                cwd: Some(dir.path().join("work")),
            },
            prefix: "ev.all".into(),
            expose: Expose { tools: true, prompts: true, resources: false },
            include: vec![NameGlob::new("get-*"), NameGlob::new("echo")],
            exclude: vec![NameGlob::new("get-secret")],
            protocol_versions: vec![Revision::V2026_07_28, Revision::V2025_06_18],
            roots: vec![
                Root { uri: "file:///srv/project".into(), name: Some("project".into()) },
                Root { uri: "file:///tmp".into(), name: None },
            ],
            tunables: Tunables {
                connect_timeout: Duration::from_secs(3600),
                call_timeout: Duration::from_millis(1),
                max_concurrent_calls: 1024,
                max_response_bytes: 1024,
                trust: Trust::Approve,
                new_capabilities: NewEntries::Trust,
                new_resources: NewEntries::Hold,
                refresh_interval: Duration::from_secs(1),
                input_wait: Duration::from_millis(1),
                ..Tunables::default()
            },
            pin_ignore_meta: vec!["com.example/etag".into()],
            allow_url_elicitation: true,
            required: true,
            listing: ListingLimits {
                max_entries: 100_000,
                max_definition_bytes: 1024,
                max_bytes: 65536,
                page_timeout: Duration::from_secs(3600),
            },
            ..spec_with(
                "everything",
                TransportSpec::Stdio { command: String::new(), args: vec![], env: vec![], cwd: None },
            )
        };
        assert_eq!(specs.remove(0), expected);
    }

    #[test]
    fn names_are_lowercase_short_and_unique_in_the_realm() {
        let rule = "is not a backend name: use 1-32 characters from a-z 0-9 _ - (it names the backend in logs, audit records and the CLI)";
        for bad in ["Everything", "", "a.b", "é", &"a".repeat(33)] {
            let stanza = STDIO.replace("name = \"everything\"", &format!("name = {bad:?}"));
            assert_refused(&stanza, &[&format!("name: {bad:?} {rule}")]);
        }
        assert_eq!(accepted(&STDIO.replace("everything", &"a_-9".repeat(8)), &[]).name, "a_-9".repeat(8));
        let twice = format!("{STDIO}{STDIO}");
        assert_eq!(
            checked(&twice, &[]).unwrap_err(),
            [
                "t.toml: realms.default.upstreams[1].name: upstream \"everything\" is defined twice; give each [[realms.default.upstreams]] a name of its own"
            ]
        );
    }

    #[test]
    fn the_transport_is_stdio_or_http() {
        assert_refused(
            &STDIO.replace("\"stdio\"", "\"sse\""),
            &["transport: \"sse\" is not a transport; use \"stdio\" (a child process) or \"http\" (Streamable HTTP)"],
        );
    }

    #[test]
    fn a_key_of_the_other_transport_is_refused_not_ignored() {
        let stdio = format!(
            "{STDIO}url = \"https://a.example/mcp\"\nheaders_from = {{}}\nallow_plain_http = false\nca_file = \"ca.pem\"\nproxy = \"http://p:3128\"\n"
        );
        let only_http =
            |key: &str| format!("{key}: {key} is only for transport = \"http\"; remove it from this stdio upstream");
        let expected = ["url", "headers_from", "allow_plain_http", "ca_file", "proxy"].map(only_http);
        assert_eq!(refused(&stdio, &[]), expected);
        let http = format!("{HTTP}command = \"node\"\nargs = []\nenv = {{}}\nenv_from = {{}}\ncwd = \".\"\n");
        let only_stdio =
            |key: &str| format!("{key}: {key} is only for transport = \"stdio\"; remove it from this http upstream");
        let expected = ["command", "args", "env", "env_from", "cwd"].map(only_stdio);
        assert_eq!(refused(&http, &[]), expected);
    }

    #[test]
    fn a_child_needs_a_command_and_nothing_a_process_cannot_take() {
        let without = STDIO.replace("command = \"node\"\n", "");
        assert_refused(&without, &["command: a stdio upstream needs the program to run, e.g. command = \"node\""]);
        assert_refused(
            &STDIO.replace("\"node\"", "\"\""),
            &["command: \"\" is not a command; name the program to run (no shell), e.g. \"node\""],
        );
        assert_refused(
            &format!("{STDIO}args = [\"ok\", \"a\\u0000b\"]\n"),
            &["args[1]: \"a\\0b\" holds a NUL byte, which no command, argument or variable can"],
        );
    }

    #[test]
    fn the_child_environment_is_env_then_env_from_without_what_bondry_gives() {
        let stanza = format!(
            "{STDIO}env = {{ PATH = \"/opt/bin\", 1X = \"a\", OK = \"b\", BOTH = \"c\" }}\nenv_from = {{ LANG = \"MY_LANG\", BOTH = \"SET\", KEY = \"UNSET\", NUL = \"WITH_NUL\" }}\n"
        );
        let refused = refused(&stanza, &[("MY_LANG", "C"), ("SET", "x"), ("WITH_NUL", "a\0b")]);
        assert_eq!(
            refused,
            [
                "env.1X: \"1X\" is not a variable name: use A-Z a-z 0-9 _, not starting with a digit",
                "env.PATH: PATH is given to every child by Bondry, from its own environment (as are PATH, HOME and LANG); remove it",
                "env_from.BOTH: BOTH is also given in env; keep one of the two",
                "env_from.KEY: the environment variable \"UNSET\" is not set (its value is the child's KEY)",
                "env_from.LANG: LANG is given to every child by Bondry, from its own environment (as are PATH, HOME and LANG); remove it",
                "env_from.NUL: the value of \"WITH_NUL\" holds a NUL byte, which no variable of a child can",
            ]
        );
    }

    #[test]
    fn the_child_gets_path_home_and_lang_as_bondry_has_them_first() {
        let stanza = format!("{STDIO}env = {{ OK = \"b\" }}\nenv_from = {{ KEY = \"SECRET\" }}\n");
        let env = [("PATH", "/usr/bin"), ("LANG", "C.UTF-8"), ("SECRET", "s"), ("OTHER", "never")];
        let TransportSpec::Stdio { env, .. } = accepted(&stanza, &env).transport else { panic!("a stdio upstream") };
        let pairs: Vec<(&str, &str)> = env.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
        assert_eq!(
            pairs,
            [("PATH", "/usr/bin"), ("LANG", "C.UTF-8"), ("OK", "b"), ("KEY", "s")],
            "no HOME: Bondry has none"
        );
    }

    #[test]
    fn a_working_directory_is_an_existing_directory_beside_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        let refused = |cwd: &str| checked_in(dir.path(), &format!("{STDIO}cwd = {cwd:?}\n"), &[]).unwrap_err();
        let missing = refused("missing");
        let at = "t.toml: realms.default.upstreams[0].cwd: ";
        let path = dir.path().join("missing");
        assert_eq!(
            missing,
            [format!(
                "{at}cannot use {:?} as the working directory: No such file or directory (os error 2)",
                path.display()
            )]
        );
        assert_eq!(refused("file"), [format!("{at}{:?} is not a directory", dir.path().join("file").display())]);
    }

    #[test]
    fn an_endpoint_is_https_or_plain_http_to_loopback_only() {
        let with_url = |url: &str| HTTP.replace("https://mcp.example.com/mcp", url);
        for url in ["http://127.0.0.1:8080/mcp", "http://127.5.6.7/mcp", "http://[::1]:9/mcp", "http://localhost/mcp"] {
            accepted(&with_url(url), &[]);
        }
        accepted(&format!("{}allow_plain_http = true\n", with_url("http://mcp.example.com/mcp")), &[]);
        let plain = "is plain http to a host that is not loopback; use https, or set allow_plain_http = true to send requests and their headers unencrypted";
        for url in [
            "http://mcp.example.com/mcp",
            "http://10.0.0.1/mcp",
            "http://localhost.example/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            let shown = Url::parse(url).unwrap();
            assert_refused(&with_url(url), &[&format!("url: {:?} {plain}", shown.as_str())]);
        }
        assert_refused(
            &with_url("ftp://mcp.example.com/"),
            &[
                "url: \"ftp://mcp.example.com/\" is not an http or https URL; write it as \"https://api.example.com/path\"",
            ],
        );
        assert_refused(
            &with_url("mcp.example.com"),
            &[
                "url: \"mcp.example.com\" is not a URL (relative URL without a base); write it as \"https://api.example.com/path\"",
            ],
        );
        assert_refused(
            &HTTP.replace("url = \"https://mcp.example.com/mcp\"\n", ""),
            &["url: an http upstream needs its MCP endpoint, e.g. url = \"https://mcp.example.com/mcp\""],
        );
    }

    #[test]
    fn credentials_in_a_url_are_refused_without_being_repeated() {
        let in_url = refused(&HTTP.replace("https://", "https://alice:pa55@"), &[]);
        assert_eq!(
            in_url,
            [
                "url: \"https://mcp.example.com/mcp\" holds credentials (left out here); send them in a header instead, e.g. headers_from = { Authorization = \"VARIABLE\" }"
            ]
        );
        let unparsed = refused(&HTTP.replace("https://mcp.example.com/mcp", "https://alice:pa55@host:port"), &[]);
        assert_eq!(
            unparsed,
            [
                "url: the URL (not repeated here: it may hold credentials) is not a URL (invalid port number); write it as \"https://api.example.com/path\""
            ]
        );
        let proxy = refused(&format!("{HTTP}proxy = \"http://alice:pa55@proxy.example:3128\"\n"), &[]);
        assert_eq!(
            proxy,
            [
                "proxy: \"http://proxy.example:3128/\" holds credentials (left out here), which do not belong in the file; use a proxy that needs none"
            ]
        );
    }

    #[test]
    fn headers_from_names_headers_bondry_does_not_set_and_variables_that_are_set() {
        let stanza = format!(
            "{HTTP}headers_from = {{ Host = \"V\", content-type = \"V\", Mcp-Param-Region = \"V\", \"Bad Header\" = \"V\", X-Unset = \"UNSET\", X-Broken = \"BROKEN\", Authorization = \"V\", authorization = \"V\" }}\n"
        );
        let refused = refused(&stanza, &[("V", "v"), ("BROKEN", "a\nb")]);
        let set_by_bondry = |name: &str| {
            format!(
                "headers_from.{name}: {name:?} is a header Bondry sets itself on requests to an upstream; remove it"
            )
        };
        assert_eq!(
            refused,
            [
                "headers_from.Bad Header: \"Bad Header\" is not a header name: use letters, digits and ! # $ % & ' * + - . ^ _ ` | ~".to_owned(),
                set_by_bondry("Host"),
                set_by_bondry("Mcp-Param-Region"),
                "headers_from.X-Broken: the value of \"BROKEN\" is not a header value: use visible ASCII, spaces and tabs, no line breaks".to_owned(),
                "headers_from.X-Unset: the environment variable \"UNSET\" is not set (its value is sent as the X-Unset header)".to_owned(),
                "headers_from.authorization: \"authorization\" is given twice (header names are case-insensitive)".to_owned(),
                set_by_bondry("content-type"),
            ]
        );
        for name in SET_BY_BONDRY {
            assert!(endpoint::header_name(name, &RESERVED).is_err(), "{name}");
        }
    }

    #[test]
    fn a_ca_file_is_a_readable_file_beside_the_file_and_a_proxy_an_http_url() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), "").unwrap();
        let stanza = format!("{HTTP}ca_file = \"ca.pem\"\nproxy = \"http://proxy.example:3128\"\n");
        let spec = checked_in(dir.path(), &stanza, &[]).unwrap().remove(0);
        let TransportSpec::Http { ca_file, proxy, .. } = spec.transport else { unreachable!("an http transport") };
        assert_eq!(ca_file, Some(dir.path().join("ca.pem")));
        assert_eq!(proxy.unwrap().as_str(), "http://proxy.example:3128/");
        let refused = |lines: &str| checked_in(dir.path(), &format!("{HTTP}{lines}\n"), &[]).unwrap_err();
        let at = "t.toml: realms.default.upstreams[0].";
        let missing = dir.path().join("missing.pem");
        assert_eq!(
            refused("ca_file = \"missing.pem\""),
            [format!("{at}ca_file: cannot read {:?}: No such file or directory (os error 2)", missing.display())]
        );
        assert_eq!(
            refused("ca_file = \".\""),
            [format!("{at}ca_file: {:?} is not a file", dir.path().join(".").display())]
        );
        assert_eq!(
            refused("proxy = \"socks5://proxy.example:1080\""),
            [format!(
                "{at}proxy: \"socks5://proxy.example:1080\" is not an http or https proxy; write it as \"http://proxy.example:3128\""
            )]
        );
    }

    #[test]
    fn a_prefix_is_empty_or_the_start_of_an_id() {
        let with_prefix = |prefix: &str| format!("{STDIO}prefix = {prefix:?}\n");
        assert_eq!(accepted(&with_prefix(""), &[]).prefix, "");
        assert_eq!(accepted(&with_prefix("Team.ev-1"), &[]).prefix, "Team.ev-1");
        let rule = "is not a prefix: use \"\" or 1-32 characters from A-Z a-z 0-9 . _ -, not ending in \".\" (an id is the prefix, a dot and the backend's own name)";
        for bad in ["ev.", "a b", "é", &"a".repeat(33)] {
            assert_refused(&with_prefix(bad), &[&format!("prefix: {bad:?} {rule}")]);
        }
        // The default prefix is the name, refused once, as the name.
        let refused = refused(&STDIO.replace("name = \"everything\"", "name = \"Ev\""), &[]);
        assert_eq!(refused.len(), 1, "{refused:?}");
    }

    #[test]
    fn expose_names_each_kind_at_most_once() {
        let with_expose = |kinds: &str| format!("{STDIO}expose = {kinds}\n");
        assert_eq!(
            accepted(&with_expose("[\"resources\"]"), &[]).expose,
            Expose { tools: false, prompts: false, resources: true }
        );
        assert_refused(
            &with_expose("[]"),
            &["expose: the list is empty; expose at least one of \"tools\", \"prompts\", \"resources\""],
        );
        assert_refused(
            &with_expose("[\"tools\", \"tool\", \"tools\"]"),
            &[
                "expose[1]: \"tool\" is not a kind an upstream exposes; use \"tools\", \"prompts\" or \"resources\" (with resource templates)",
                "expose[2]: \"tools\" is listed twice",
            ],
        );
    }

    #[test]
    fn globs_are_short_printable_ascii() {
        let rule =
            "is not a glob over names: use 1-128 printable ASCII characters, * for any run of them and ? for any one";
        let long = "a".repeat(129);
        let stanza = format!("{STDIO}include = [\"\", \"get *\", {long:?}]\nexclude = [\"ok?\", \"é\", \"tab\\t\"]\n");
        assert_eq!(
            refused(&stanza, &[]),
            [
                format!("include[0]: \"\" {rule}"),
                format!("include[2]: {long:?} {rule}"),
                format!("exclude[1]: \"é\" {rule}"),
                format!("exclude[2]: \"tab\\t\" {rule}"),
            ]
        );
        assert_eq!(accepted(&format!("{STDIO}include = [{:?}]\n", "a".repeat(128)), &[]).include.len(), 1);
    }

    #[test]
    fn protocol_versions_are_known_listed_once_and_kept_newest_first() {
        let with_versions = |versions: &str| format!("{STDIO}protocol_versions = {versions}\n");
        let spec = accepted(&with_versions("[\"2025-06-18\", \"2025-11-25\"]"), &[]);
        assert_eq!(spec.protocol_versions, [Revision::V2025_11_25, Revision::V2025_06_18]);
        assert_refused(
            &with_versions("[]"),
            &[
                "protocol_versions: the list is empty; offer the upstream at least one of \"2026-07-28\", \"2025-11-25\", \"2025-06-18\"",
            ],
        );
        assert_refused(
            &with_versions("[\"2026-07-28\", \"2099-01-01\"]"),
            &[
                "protocol_versions[1]: unknown protocol revision \"2099-01-01\": use 2026-07-28, 2025-11-25 or 2025-06-18",
            ],
        );
        assert_refused(
            &with_versions("[\"2025-06-18\", \"2025-06-18\"]"),
            &["protocol_versions[1]: \"2025-06-18\" is listed twice"],
        );
    }

    #[test]
    fn roots_are_file_uris() {
        assert_refused(
            &format!(
                "{STDIO}roots = [{{ uri = \"file:///ok\" }}, {{ uri = \"https://a.example/\", name = \"web\" }}]\n"
            ),
            &[
                "roots[1].uri: \"https://a.example/\" is not a file:// URI; a root names a directory, e.g. \"file:///srv/project\"",
            ],
        );
    }

    #[test]
    fn durations_and_sizes_are_bounded() {
        let stanza = format!(
            "{STDIO}connect_timeout_ms = 0\ncall_timeout_ms = 3600001\nmax_concurrent_calls = 1025\nmax_response_bytes = 1023\nmax_entries_per_kind = 0\nmax_definition_bytes = 1023\nmax_listing_bytes = 65535\nlist_timeout_ms = 0\nmax_pending_server_requests = 0\nstdin_stall_ms = 50\nrefresh_interval_ms = 999\ninput_wait_ms = 0\n"
        );
        assert_eq!(
            refused(&stanza, &[]),
            [
                "connect_timeout_ms: 0 must be between 1 and 3600000 milliseconds (an hour)",
                "call_timeout_ms: 3600001 must be between 1 and 3600000 milliseconds (an hour)",
                "max_concurrent_calls: 1025 must be between 1 and 1024 calls",
                "max_response_bytes: 1023 must be between 1024 and 67108864 bytes (64 MiB)",
                "max_entries_per_kind: 0 must be between 1 and 100000 entries",
                "max_definition_bytes: 1023 must be between 1024 and 16777216 bytes (16 MiB)",
                "max_listing_bytes: 65535 must be between 65536 and 1073741824 bytes (1 GiB)",
                "list_timeout_ms: 0 must be between 1 and 3600000 milliseconds (an hour)",
                "max_pending_server_requests: 0 must be between 1 and 4096 requests",
                "stdin_stall_ms: 50 must be between 100 and 3600000 milliseconds (an hour)",
                "refresh_interval_ms: 999 must be between 1000 and 86400000 milliseconds (a second to a day)",
                "input_wait_ms: 0 must be between 1 and 3600000 milliseconds (an hour)",
            ]
        );
        let stanza =
            format!("{STDIO}max_concurrent_calls = 0\nmax_response_bytes = 67108865\nrefresh_interval_ms = 86400001\n");
        assert_eq!(refused(&stanza, &[]).len(), 3);
        let largest = accepted(&format!("{STDIO}max_response_bytes = 67108864\nrefresh_interval_ms = 86400000\n"), &[]);
        assert_eq!(
            (largest.tunables.max_response_bytes, largest.tunables.refresh_interval),
            (64 * 1024 * 1024, Duration::from_secs(86_400))
        );
    }

    #[test]
    fn trust_new_entries_and_ignored_meta_keys_are_checked() {
        assert_refused(
            &format!("{STDIO}trust = \"always\"\nnew_capabilities = \"maybe\"\nnew_resources = \"Hold\"\n"),
            &[
                "trust: \"always\" is neither \"first_use\" nor \"approve\"",
                "new_capabilities: \"maybe\" is neither \"hold\" nor \"trust\"",
                "new_resources: \"Hold\" is neither \"hold\" nor \"trust\"",
            ],
        );
        assert_refused(
            &format!("{STDIO}pin_ignore_meta = [\"\"]\n"),
            &["pin_ignore_meta: \"\" is not a _meta key: use 1-256 bytes"],
        );
        let many: Vec<String> = (0..65).map(|i| format!("\"k{i}\"")).collect();
        assert_refused(
            &format!("{STDIO}pin_ignore_meta = [{}]\n", many.join(", ")),
            &["pin_ignore_meta: 65 keys; at most 64"],
        );
    }

    #[test]
    fn every_stanza_is_checked_and_each_refusal_names_its_own() {
        let stanzas = format!("{}{}", STDIO.replace("\"node\"", "\"\""), HTTP.replace("https://", "http://"));
        let refused = checked(&stanzas, &[]).unwrap_err();
        assert_eq!(refused.len(), 2, "{refused:#?}");
        assert!(refused[0].starts_with("t.toml: realms.default.upstreams[0].command: "), "{refused:#?}");
        assert!(refused[1].starts_with("t.toml: realms.default.upstreams[1].url: "), "{refused:#?}");
    }
}
