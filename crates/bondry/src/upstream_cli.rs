//! `bondry upstream …`: a client of the admin API (docs/upstreams.md). Tables for people,
//! `--json` for scripts, and exit codes that tell success, refusal and an unreachable
//! admin listener apart. Everything printed for people passes through [`say`] (and an
//! error through [`Failure::message`]), which escapes what a terminal would act on or hide
//! instead of show: a definition must not drive or deceive the operator's terminal. JSON is
//! printed as the same JSON with those characters as JSON escapes (see [`json_escaped`]).

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use crate::assemble::admin::{ADDRESS_FILE, token_path};
use crate::config;

/// How a command ended, as its exit code says.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments, a missing token, an error answer: exit 1.
    Error(String),
    /// The admin API refused (409): nothing changed. Exit 3.
    Refused(String),
    /// The admin listener could not be reached: exit 4.
    Unreachable(String),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Error(_) => 1,
            Self::Refused(_) => 3,
            Self::Unreachable(_) => 4,
        }
    }

    /// What to print, each line escaped (see [`escaped`]); the fields of an answer it
    /// quotes were escaped whole, so a newline an upstream wrote is not a line here.
    pub fn message(&self) -> String {
        let (Self::Error(message) | Self::Refused(message) | Self::Unreachable(message)) = self;
        message.split('\n').map(escaped).collect::<Vec<_>>().join("\n")
    }
}

/// Where the admin API is and the token to show it.
pub struct Client {
    base: String,
    token: String,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Client {
    /// The admin API at `--admin URL`, else `BONDRY_ADMIN_URL`, else the admin bind of
    /// `--config FILE` (for a bind of port 0, the address the server wrote into its data
    /// directory), with the token of `BONDRY_ADMIN_TOKEN`, else the one generated into the
    /// data directory of `--config`.
    pub fn new(admin: Option<&str>, config_file: Option<&Path>) -> Result<Self, Failure> {
        let Located { base, data_dir } = locate(admin, config_file)?;
        let token = match std::env::var("BONDRY_ADMIN_TOKEN") {
            Ok(token) if !token.is_empty() => token,
            _ => {
                let path = data_dir.as_deref().map(token_path).ok_or_else(|| {
                    Failure::Error(
                        "no token: set BONDRY_ADMIN_TOKEN, or give --config of a server with data_dir".into(),
                    )
                })?;
                std::fs::read_to_string(&path)
                    .map_err(|e| Failure::Error(format!("{}: cannot read the admin token ({e})", path.display())))?
                    .trim()
                    .to_owned()
            }
        };
        let (runtime, http) = client(Duration::from_secs(60))?;
        Ok(Self { base, token, http, runtime })
    }

    fn get(&self, path: &str) -> Result<Value, Failure> {
        self.send(reqwest::Method::GET, path, None)
    }

    fn post(&self, path: &str, body: Value) -> Result<Value, Failure> {
        self.send(reqwest::Method::POST, path, Some(body))
    }

    fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method, &url).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let answered = self.runtime.block_on(async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            Ok::<_, reqwest::Error>((status, response.text().await?))
        });
        let (status, text) = answered.map_err(|error| {
            let why = if error.is_timeout() {
                "no answer within 60 s".to_owned()
            } else {
                format!("{}; is `bondry serve` running, with this admin address?", innermost(&error))
            };
            Failure::Unreachable(format!("cannot reach the admin API at {}: {why}", self.base))
        })?;
        let value: Value = serde_json::from_str(&text).unwrap_or(json!({"error": {"message": text}}));
        let message = || {
            let error = &value["error"];
            let mut message = format!("{status}: {}", escaped(error["message"].as_str().unwrap_or("(no message)")));
            for conflict in error["conflicts"].as_array().into_iter().flatten() {
                message.push_str(&format!(
                    "\n  {} {}: {}",
                    escaped(conflict["kind"].as_str().unwrap_or_default()),
                    escaped(conflict["key"].as_str().unwrap_or_default()),
                    escaped(conflict["why"].as_str().unwrap_or_default())
                ));
            }
            message
        };
        match status {
            200..=299 => Ok(value),
            401 => Err(Failure::Error(format!(
                "the admin token was refused by {}: set BONDRY_ADMIN_TOKEN to one of the server's [[admin.tokens]], or give --config of the server whose data_dir holds its admin-token",
                self.base
            ))),
            409 => Err(Failure::Refused(message())),
            _ => Err(Failure::Error(message())),
        }
    }
}

/// What the admin listener's `/readyz` answers (escaped for a terminal) when the server is
/// ready; why not otherwise. No token: readiness is not an operator's secret.
pub fn readiness(admin: Option<&str>, config_file: Option<&Path>) -> Result<String, Failure> {
    let loaded = load(config_file)?;
    let explicit = explicit(admin);
    if explicit.is_none()
        && let Some(loaded) = &loaded
        && let Some(why) = crate::assemble::admin::off(loaded)
    {
        // Nothing but the listeners can be unready: bound, they are ready.
        if why == crate::assemble::admin::NOT_ASKED {
            return listeners_accept(loaded).map(|listeners| {
                format!("the admin listener is off ({why}); {listeners} listener(s) accept connections")
            });
        }
        return Err(Failure::Error(format!("the admin listener is off ({why}): nothing reports readiness")));
    }
    let Located { base, .. } = locate_in(explicit.as_deref(), loaded.as_ref())?;
    // A health check runs often and briefly: it waits a few seconds at most.
    let (runtime, http) = client(Duration::from_secs(5))?;
    let url = format!("{base}/readyz");
    let answered = runtime.block_on(async {
        let response = http.get(&url).send().await?;
        let status = response.status();
        Ok::<_, reqwest::Error>((status, response.text().await?))
    });
    let (status, text) =
        answered.map_err(|error| Failure::Unreachable(format!("cannot reach {url}: {}", innermost(&error))))?;
    let shown = text.trim_end().split('\n').map(escaped).collect::<Vec<_>>().join("\n");
    // Bondry's answer, not whatever else may listen there.
    let ready = serde_json::from_str::<Value>(&text).is_ok_and(|answer| answer["ready"] == json!(true));
    if status == reqwest::StatusCode::OK && ready {
        Ok(shown)
    } else {
        Err(Failure::Error(format!("not ready ({}): {shown}", status.as_u16())))
    }
}

/// How many of the configuration's MCP listeners accept a connection now, each within 2 s;
/// a failure names the first that does not.
fn listeners_accept(loaded: &config::Loaded) -> Result<usize, Failure> {
    for (name, listener) in &loaded.raw.listeners {
        let bind: std::net::SocketAddr = listener
            .bind
            .parse()
            .map_err(|_| Failure::Error(format!("listeners.{name}.bind {:?} is not an address", listener.bind)))?;
        if bind.port() == 0 {
            return Err(Failure::Error(format!(
                "listeners.{name}.bind takes a free port: nothing says where it listens, and the admin listener is off"
            )));
        }
        let ip = if bind.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { bind.ip() };
        let addr = std::net::SocketAddr::new(ip, bind.port());
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
            .map_err(|e| Failure::Unreachable(format!("listener {name} at {addr} does not accept connections: {e}")))?;
    }
    Ok(loaded.raw.listeners.len())
}

/// A runtime to wait on the admin API in, and an HTTP client whose requests end within
/// `timeout`. No proxy: the admin API is local, and its token must not pass through one.
fn client(timeout: Duration) -> Result<(tokio::runtime::Runtime, reqwest::Client), Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Error(format!("cannot start the async runtime: {e}")))?;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|e| Failure::Error(format!("cannot make an HTTP client: {e}")))?;
    Ok((runtime, http))
}

/// The innermost cause of `error`, which says it plainly: "Connection refused", a name that
/// does not resolve, a TLS failure.
fn innermost(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// Where the admin API is, and the data directory of the configuration that said so.
pub(crate) struct Located {
    pub base: String,
    pub data_dir: Option<std::path::PathBuf>,
}

/// The admin API at `admin`, else `BONDRY_ADMIN_URL`, else the admin bind of
/// `config_file` (for a bind of port 0, the address the server wrote into its data
/// directory).
pub(crate) fn locate(admin: Option<&str>, config_file: Option<&Path>) -> Result<Located, Failure> {
    let loaded = load(config_file)?;
    locate_in(explicit(admin).as_deref(), loaded.as_ref())
}

/// The configuration in `config_file`, if one is given.
fn load(config_file: Option<&Path>) -> Result<Option<config::Loaded>, Failure> {
    config_file
        .map(|path| config::process_environment().and_then(|environment| config::load(Some(path), environment)))
        .transpose()
        .map_err(|errors| {
            // One `bondry: ` line per error, as `check` prints them.
            let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
            Failure::Error(lines.join("\nbondry: "))
        })
}

/// The admin API's address given by `--admin`, else by `BONDRY_ADMIN_URL`.
fn explicit(admin: Option<&str>) -> Option<String> {
    let from_env = std::env::var("BONDRY_ADMIN_URL").ok().filter(|url| !url.is_empty());
    admin.map(str::to_owned).or(from_env)
}

/// [`locate`] with the address given (`explicit`) and the configuration loaded.
fn locate_in(explicit: Option<&str>, loaded: Option<&config::Loaded>) -> Result<Located, Failure> {
    let data_dir = loaded.and_then(config::Loaded::data_dir);
    let base = match (explicit, loaded) {
        (Some(url), _) => with_scheme(url),
        (None, Some(loaded)) => admin_url(&loaded.raw.admin.bind, data_dir.as_deref())?,
        (None, None) => {
            return Err(Failure::Error(
                "where is the admin API? give --config FILE (the server's), --admin ADDRESS, or set BONDRY_ADMIN_URL"
                    .into(),
            ));
        }
    };
    Ok(Located { base, data_dir })
}

/// `http://` before an address given without a scheme (`127.0.0.1:7374`).
fn with_scheme(url: &str) -> String {
    let url = url.trim_end_matches('/');
    if url.contains("://") { url.to_owned() } else { format!("http://{url}") }
}

/// The admin API's URL for the bind `bind` of a configuration: where the running server
/// wrote that it listens (in `data_dir`, while it serves: `--admin-listen` may have moved
/// it), else the bind, a wildcard reached on loopback; a port 0 needs the written address.
fn admin_url(bind: &str, data_dir: Option<&Path>) -> Result<String, Failure> {
    let bind: std::net::SocketAddr =
        bind.parse().map_err(|_| Failure::Error(format!("admin.bind {bind:?} is not an address")))?;
    let address_file = data_dir.map(|dir| dir.join(ADDRESS_FILE)).filter(|path| path.exists());
    if bind.port() != 0 && address_file.is_none() {
        let ip = if bind.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { bind.ip() };
        return Ok(format!("http://{}", std::net::SocketAddr::new(ip, bind.port())));
    }
    let Some(data_dir) = data_dir else {
        return Err(Failure::Error(
            "admin.bind takes a free port and there is no data_dir where the server writes it: give the address the server printed with --admin".into(),
        ));
    };
    let path = data_dir.join(ADDRESS_FILE);
    let written = std::fs::read_to_string(&path).map_err(|e| {
        Failure::Unreachable(format!(
            "{}: cannot read the admin address the server writes at start ({e}); is it running?",
            path.display()
        ))
    })?;
    let addr: std::net::SocketAddr = written
        .trim()
        .parse()
        .map_err(|_| Failure::Error(format!("{}: {:?} is not an address", path.display(), written.trim())))?;
    Ok(format!("http://{addr}"))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
}

/// Columns as wide as their widest cell, measured in the columns a terminal gives each
/// character once escaped, so a name in CJK or with an emoji keeps the next column in line.
struct Table {
    columns: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(columns: &[(&'static str, Align)]) -> Self {
        Self { columns: columns.to_vec(), rows: Vec::new() }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The header and every row, two spaces between columns, no space after the last.
    fn render(&self) -> Vec<String> {
        use unicode_width::UnicodeWidthStr;
        let header: Vec<String> = self.columns.iter().map(|(name, _)| (*name).to_owned()).collect();
        let escape = |row: &Vec<String>| row.iter().map(|cell| escaped(cell)).collect::<Vec<_>>();
        let lines: Vec<Vec<String>> = std::iter::once(&header).chain(&self.rows).map(escape).collect();
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|column| lines.iter().filter_map(|line| line.get(column)).map(|cell| cell.width()).max().unwrap_or(0))
            .collect();
        let mut out = Vec::with_capacity(lines.len());
        for line in lines {
            let mut rendered = String::new();
            for (column, cell) in line.iter().enumerate() {
                let pad = " ".repeat(widths[column].saturating_sub(cell.width()));
                let last = column + 1 == line.len();
                match self.columns[column].1 {
                    Align::Right => rendered.push_str(&format!("{pad}{cell}")),
                    Align::Left if last => rendered.push_str(cell),
                    Align::Left => rendered.push_str(&format!("{cell}{pad}")),
                }
                if !last {
                    rendered.push_str("  ");
                }
            }
            out.push(rendered.trim_end().to_owned());
        }
        out
    }
}

/// `REALM/NAME` as the API's path to that upstream.
fn upstream_path(target: &str) -> Result<String, Failure> {
    let (realm, name) = target
        .split_once('/')
        .filter(|(realm, name)| !realm.is_empty() && !name.is_empty())
        .ok_or_else(|| Failure::Error(format!("{target:?} is not REALM/NAME")))?;
    Ok(format!("/v1/realms/{}/upstreams/{}", encode(realm), encode(name)))
}

fn encode(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

/// Whether a terminal would act on `c`, or show nothing of it, rather than show it: an
/// upstream's text holding one could move the cursor or rewrite the screen (C0 and C1
/// controls, DEL), show itself in another order than it is read (the bidirectional
/// controls, U+202E above all), hide text or make two names look alike (zero-width and
/// other default-ignorable characters, tags, interlinear annotations), or break a line
/// where the terminal does (U+2028, U+2029). The variation selectors U+FE00–U+FE0F are
/// shown: they only pick the glyph of the character before, as every emoji with U+FE0F
/// does, and escaping them would clutter every such name.
fn is_hazard(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// `text` with every hazard (see [`is_hazard`]) written as Rust writes it escaped, `\u{202e}`
/// (`\t`, `\n` and `\r` for those): visible, and told apart from the characters around
/// it. Nothing else changes, so escaping escaped text changes nothing.
fn escaped(text: &str) -> String {
    text.chars().map(|c| if is_hazard(c) { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// Prints `line` for people, escaped: the one way this module writes to standard output
/// but for JSON and the approval prompt, which holds nothing an upstream wrote.
fn say(line: &str) {
    println!("{}", escaped(line));
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or("-")
}

/// The first 19 characters of a hash (`sha256:` and 12 hex digits), enough to tell two apart.
fn short(hash: &Value) -> String {
    hash.as_str().map_or_else(|| "-".to_owned(), |hash| hash.chars().take(19).collect())
}

fn print_json(value: &Value) {
    println!("{}", json_escaped(&serde_json::to_string_pretty(value).unwrap_or_default()));
}

/// `json` with each hazard but C0 written as a JSON escape (`\u202e`, a surrogate pair past
/// U+FFFF): the same JSON to any parser, so a script reads exactly what the API answered,
/// and nothing a terminal acts on when a person reads it. A hazard can only be inside a
/// string, which serde_json writes with C0 escaped already; outside strings its newlines are
/// the layout.
fn json_escaped(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c > '\u{1f}' && is_hazard(c) {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub fn list(client: &Client, as_json: bool) -> Result<(), Failure> {
    let all = client.get("/v1/upstreams")?;
    if as_json {
        print_json(&all);
        return Ok(());
    }
    let mut table = Table::new(&[
        ("UPSTREAM", Align::Left),
        ("TRANSPORT", Align::Left),
        ("CONNECTED", Align::Left),
        ("REVISION", Align::Left),
        ("SERVED", Align::Right),
        ("PINNED", Align::Right),
        ("HELD", Align::Right),
        ("DRIFTED", Align::Right),
        ("REMOVED", Align::Right),
        ("MIGRATED", Align::Right),
        ("LAST ERROR", Align::Left),
    ]);
    for realm in all["realms"].as_array().into_iter().flatten() {
        for upstream in realm["upstreams"].as_array().into_iter().flatten() {
            let counts = &upstream["counts"];
            table.row(vec![
                format!("{}/{}", text(realm, "realm"), text(upstream, "name")),
                text(upstream, "transport").to_owned(),
                upstream["connected"].as_bool().unwrap_or(false).to_string(),
                text(upstream, "revision").to_owned(),
                upstream["served"].to_string(),
                counts["pinned"].to_string(),
                counts["held"].to_string(),
                counts["drifted"].to_string(),
                counts["removed"].to_string(),
                upstream["migrated"].to_string(),
                text(upstream, "last_error").to_owned(),
            ]);
        }
    }
    table.render().iter().for_each(|line| say(line));
    Ok(())
}

pub fn info(client: &Client, target: &str, as_json: bool) -> Result<(), Failure> {
    let info = client.get(&upstream_path(target)?)?;
    if as_json {
        print_json(&info);
        return Ok(());
    }
    say(&format!(
        "{target}: {}, {}, revision {}, {} served",
        text(&info, "transport"),
        if info["connected"].as_bool() == Some(true) { "connected" } else { "not connected" },
        text(&info, "revision"),
        info["served"]
    ));
    if let Some(error) = info["last_error"].as_str() {
        say(&format!("last error: {error}"));
    }
    if let (Some(failed), Some(next_at_ms)) = (info["retry"]["failed"].as_u64(), info["retry"]["next_at_ms"].as_u64()) {
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
        let wait_ms = u128::from(next_at_ms).saturating_sub(now_ms);
        say(&format!("reconnecting: {failed} attempts failed in a row, the next in {:.1} s", wait_ms as f64 / 1000.0));
    }
    for (kind, why) in info["listing_refused"].as_object().into_iter().flatten() {
        let why = why.as_str().unwrap_or_default();
        say(&format!("{kind} listing refused, what was pinned before stays served: {why}"));
    }
    let mut table = Table::new(&[
        ("KIND", Align::Left),
        ("KEY", Align::Left),
        ("EXPOSED AS", Align::Left),
        ("STATE", Align::Left),
        ("PINNED", Align::Left),
        ("CURRENT", Align::Left),
    ]);
    for row in info["capabilities"].as_array().into_iter().flatten() {
        let exposed = match (row["exposed"].as_str(), row["renamed"].as_bool(), row["not_served"].as_str()) {
            (Some(_), _, Some(why)) => format!("- (not served: {why})"),
            (Some(id), Some(true), _) => format!("{id} (renamed)"),
            (Some(id), _, _) => id.to_owned(),
            (None, _, _) => "-".to_owned(),
        };
        let state = match row["migrated"].as_array() {
            Some(fields) if fields.is_empty() => format!("{} (migrated)", text(row, "state")),
            Some(fields) => {
                let fields: Vec<&str> = fields.iter().filter_map(Value::as_str).collect();
                format!("{} (migrated, now covers {})", text(row, "state"), fields.join(", "))
            }
            None => text(row, "state").to_owned(),
        };
        table.row(vec![
            text(row, "kind").to_owned(),
            text(row, "key").to_owned(),
            exposed,
            state,
            short(&row["pinned_hash"]),
            short(&row["current_hash"]),
        ]);
    }
    table.render().iter().for_each(|line| say(line));
    Ok(())
}

fn capability_path(target: &str, kind: &str, key: &str) -> Result<String, Failure> {
    Ok(format!("{}/capabilities/{}/{}", upstream_path(target)?, encode(kind), encode(key)))
}

pub fn diff(client: &Client, target: &str, kind: &str, key: &str, as_json: bool) -> Result<(), Failure> {
    let reviewed = client.get(&capability_path(target, kind, key)?)?;
    if as_json {
        print_json(&reviewed);
    } else {
        show_review(&reviewed);
    }
    Ok(())
}

/// A capability under review: its state, hashes and every difference from its pin.
fn show_review(reviewed: &Value) {
    say(&format!("{} {}: {}", text(reviewed, "kind"), text(reviewed, "key"), text(reviewed, "state")));
    say(&format!("  pinned  {}", text(reviewed, "pinned_hash")));
    say(&format!("  current {}", text(reviewed, "current_hash")));
    match reviewed["diff"].as_array() {
        None => {
            say("  never pinned; its definition:");
            say(&format!("    {}", reviewed["current"]));
        }
        Some(changes) if changes.is_empty() => say("  no difference"),
        Some(changes) => {
            for change in changes {
                // Paths and values as JSON text, quoted, so a value reads apart from its path.
                let path = serde_json::to_string(&change["path"]).unwrap_or_default();
                match text(change, "op") {
                    "added" => say(&format!("  + {path}: {}", change["current"])),
                    "removed" => say(&format!("  - {path}: {}", change["pinned"])),
                    _ => say(&format!("  ~ {path}: {} -> {}", change["pinned"], change["current"])),
                }
            }
        }
    }
}

/// Approves `keys` of `kind` (or, with `all`, every held and drifted capability) of
/// `target` at the hashes shown, once the operator said yes (or `--yes`).
pub fn approve(
    client: &Client,
    target: &str,
    kind: Option<&str>,
    keys: &[String],
    all: bool,
    yes: bool,
    as_json: bool,
) -> Result<(), Failure> {
    let reviews: Vec<Value> = if all {
        let info = client.get(&upstream_path(target)?)?;
        let waiting = info["capabilities"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|row| matches!(row["state"].as_str(), Some("held" | "drifted")));
        waiting
            .map(|row| client.get(&capability_path(target, text(row, "kind"), text(row, "key"))?))
            .collect::<Result<_, _>>()?
    } else {
        let kind = kind.ok_or_else(|| Failure::Error("give KIND and KEY, or --all".into()))?;
        if keys.is_empty() {
            return Err(Failure::Error("give at least one KEY, or --all".into()));
        }
        keys.iter().map(|key| client.get(&capability_path(target, kind, key)?)).collect::<Result<_, _>>()?
    };
    if reviews.is_empty() {
        if as_json {
            print_json(&json!({"approved": []}));
        } else {
            say("nothing awaits approval");
        }
        return Ok(());
    }
    for review in &reviews {
        show_review(review);
    }
    if !yes && !confirmed(reviews.len())? {
        return Err(Failure::Error("not approved".into()));
    }
    let shown_hashes: Vec<Value> = reviews
        .iter()
        .map(|review| json!({"kind": review["kind"], "key": review["key"], "hash": review["current_hash"]}))
        .collect();
    let body = if all { json!({"all": true, "expect": shown_hashes}) } else { json!({"approve": shown_hashes}) };
    let approved = client.post(&format!("{}/approve", upstream_path(target)?), body)?;
    if as_json {
        print_json(&approved);
    } else {
        for pin in approved["approved"].as_array().into_iter().flatten() {
            say(&format!("approved {} {} at {}", text(pin, "kind"), text(pin, "key"), text(pin, "hash")));
        }
    }
    Ok(())
}

/// Asks on the terminal; refuses when there is none to ask on.
fn confirmed(count: usize) -> Result<bool, Failure> {
    if !std::io::stdin().is_terminal() {
        return Err(Failure::Error("standard input is not a terminal: pass --yes to approve what was shown".into()));
    }
    print!("Approve {count} definition(s) as shown? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).map_err(|e| Failure::Error(e.to_string()))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

pub fn refresh(client: &Client, target: &str, as_json: bool) -> Result<(), Failure> {
    let summary = client.post(&format!("{}/refresh", upstream_path(target)?), json!({}))?;
    if as_json {
        print_json(&summary);
    } else {
        let counts = &summary["counts"];
        say(&format!(
            "{target}: listed; {} pinned, {} held, {} drifted, {} removed",
            counts["pinned"], counts["held"], counts["drifted"], counts["removed"]
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_by_display_width_with_wide_characters() {
        let mut table = Table::new(&[("UPSTREAM", Align::Left), ("PINNED", Align::Right), ("STATE", Align::Left)]);
        table.row(vec!["default/工具箱".into(), "12".into(), "pinned".into()]);
        table.row(vec!["default/up".into(), "3".into(), "drifted".into()]);
        assert_eq!(
            table.render(),
            ["UPSTREAM        PINNED  STATE", "default/工具箱      12  pinned", "default/up           3  drifted"]
        );
    }

    #[test]
    fn columns_line_up_by_the_width_of_escaped_cells() {
        let mut table = Table::new(&[("KEY", Align::Left), ("STATE", Align::Left)]);
        table.row(vec!["a\u{202e}b".into(), "drifted".into()]);
        table.row(vec!["c".into(), "pinned".into()]);
        assert_eq!(table.render(), ["KEY         STATE", "a\\u{202e}b  drifted", "c           pinned"]);
    }

    #[test]
    fn every_hazard_is_escaped_visibly_and_the_rest_is_kept() {
        let hazards = "\u{0}\u{7}\t\n\r\u{1b}\u{7f}\u{85}\u{9b}\u{ad}\u{61c}\u{200b}\u{200c}\u{200d}\u{200e}\u{200f}\u{2028}\u{2029}\u{202a}\u{202e}\u{2060}\u{2066}\u{2069}\u{feff}\u{e0041}";
        assert_eq!(
            escaped(hazards),
            r"\u{0}\u{7}\t\n\r\u{1b}\u{7f}\u{85}\u{9b}\u{ad}\u{61c}\u{200b}\u{200c}\u{200d}\u{200e}\u{200f}\u{2028}\u{2029}\u{202a}\u{202e}\u{2060}\u{2066}\u{2069}\u{feff}\u{e0041}"
        );
        let plain = "echo 工具箱 café ⚠\u{fe0f} \\u{202e} \"quoted\" ~/.ssh";
        assert_eq!(escaped(plain), plain);
        assert_eq!(escaped(&escaped(hazards)), escaped(hazards));
    }

    #[test]
    fn a_newline_in_an_answer_is_no_line_of_the_message() {
        let failure = Failure::Refused(format!("409: nothing\n  tool {}: why", escaped("a\nb\u{1b}[2J")));
        assert_eq!(failure.message(), "409: nothing\n  tool a\\nb\\u{1b}[2J: why");
        assert_eq!(Failure::Error("\u{9b}31m".into()).message(), r"\u{9b}31m");
    }

    #[test]
    fn json_keeps_its_data_and_writes_hazards_as_json_escapes() {
        let value = json!({"name": "a\u{1b}\u{7f}\u{9b}\u{202e}\u{200b}\u{e0041}b", "plain": "工具箱 ⚠\u{fe0f}"});
        let printed = json_escaped(&serde_json::to_string_pretty(&value).unwrap());
        assert_eq!(
            printed,
            "{\n  \"name\": \"a\\u001b\\u007f\\u009b\\u202e\\u200b\\udb40\\udc41b\",\n  \"plain\": \"工具箱 ⚠\u{fe0f}\"\n}"
        );
        assert_eq!(serde_json::from_str::<Value>(&printed).unwrap(), value);
    }
}
