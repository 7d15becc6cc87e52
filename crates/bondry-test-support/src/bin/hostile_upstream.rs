//! `hostile-upstream [--http] FILE`: an MCP server of the 2025-06-18 revision that lists
//! exactly what the JSON file `FILE` says, byte for byte, whatever the protocol allows:
//! repeated names, unknown fields, oversized entries. No SDK stands between the file and
//! the wire, so a test can make an upstream say anything an attacker would.
//!
//! The file: `{"tools": [...], "prompts": [...], "resources": [...],
//! "resourceTemplates": [...], "page": N, "generate": {"kind": "tools", "count": C,
//! "bytes": B}, "errors": {"METHOD": {"code": C, "message": M}}}`, read again at every
//! listing. `page` splits each listing into pages of N entries (one page without it);
//! `generate` appends C tools (or prompts) named `gen-0`... whose descriptions make each
//! about B bytes, without a file of that size; `errors` answers each request of a METHOD
//! it names (`initialize` too) with that JSON-RPC error, read again at every request;
//! `results` (`{"TOOL": "TEXT"}`) answers a call of TOOL with TEXT as its result, byte
//! for byte (so it may repeat keys, which no JSON value can).
//! A call of tool `t` answers the text `called t` (over stdio, of tool `slow`, 500 ms
//! later); a read of `u`, `contents of u`; a
//! prompt `p`, one user message `prompt p`; a completion, the value `alpha` (over stdio
//! after a progress notification, when asked for progress).
//!
//! Over stdio (the default) it says `notifications/tools/list_changed` when the file
//! changes (Bondry lists every kind on it). With `--http` it serves Streamable HTTP on an
//! ephemeral loopback port, printing `listening on PORT` first, with JSON answers only
//! and no GET stream (405):
//! a test relists it through the admin API.
//!
//! Read once at start, these keys of the file make it misbehave:
//! - `"record": PATH`: appends a line per message received: its method, or `answer ID`
//!   with the JSON of a response (`GET` for an HTTP GET);
//! - `"starts": PATH`: appends `start PID` at each start;
//! - `"silent": [METHOD...]`: never answers those;
//! - stdio `"flood": {"method": M, "params": P, "count": N, "done": PATH, "on": ON}`:
//!   once initialized (or, with `"on": "tools/call"`, on each call, left unanswered),
//!   sends N requests of M (ids `flood-0`...) as fast as Bondry reads them, then makes
//!   PATH;
//! - stdio `"deaf": true`: once initialized, never reads stdin again;
//! - HTTP `"session": true`: gives an `Mcp-Session-Id` (`s1`, `s2`...) at each
//!   initialize; `"get": STATUS` answers a GET with that status (405 without it);
//!   `"sse": true` answers each POST as an event stream, a call's answer followed, in
//!   the same write, by `notifications/tools/list_changed`; `"ask_on_get": true` keeps
//!   a GET stream open, and a call of tool `ask` sends, a second later, an
//!   `elicitation/create` on that stream (naming no request, as the TypeScript SDK does)
//!   and answers `answered R` with the JSON of Bondry's response R (or `unanswered`
//!   after 10 s), once every call of `ask` made meanwhile has had its response too.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (http, file) = match args.as_slice() {
        [flag, file] if flag == "--http" => (true, PathBuf::from(file)),
        [file] => (false, PathBuf::from(file)),
        _ => {
            eprintln!("usage: hostile-upstream [--http] FILE");
            std::process::exit(2);
        }
    };
    let behaviour = Behaviour::of(&file);
    if let Some(starts) = &behaviour.starts {
        append(starts, &format!("start {}", std::process::id()));
    }
    if http { serve_http(&file, behaviour) } else { serve_stdio(&file, behaviour) }
}

/// Requests sent to Bondry unasked.
#[derive(Clone)]
struct Flood {
    request: Value,
    count: u64,
    done: Option<PathBuf>,
    on_call: bool,
}

impl Flood {
    fn start(&self, out: &Arc<Mutex<std::io::Stdout>>) {
        let (flood, out) = (self.clone(), Arc::clone(out));
        std::thread::spawn(move || {
            let mut out = out.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut request = flood.request;
            for n in 0..flood.count {
                request["id"] = json!(format!("flood-{n}"));
                let _ = writeln!(out, "{request}");
            }
            let _ = out.flush();
            if let Some(done) = &flood.done {
                append(done, "done");
            }
        });
    }
}

/// How the file says to misbehave (see the module's documentation).
#[derive(Default)]
struct Behaviour {
    record: Option<PathBuf>,
    starts: Option<PathBuf>,
    silent: Vec<String>,
    flood: Option<Flood>,
    deaf: bool,
    session: bool,
    get: Option<u16>,
    sse: bool,
    ask_on_get: bool,
}

/// The GET stream a call's requests go on, and the answers POSTed to them.
#[derive(Default)]
struct Asker {
    stream: Mutex<Option<TcpStream>>,
    asks: Mutex<Asks>,
    arrived: std::sync::Condvar,
    asked: AtomicU64,
}

/// The answers POSTed so far, by id, and how many calls are asking now.
#[derive(Default)]
struct Asks {
    answers: std::collections::HashMap<String, Value>,
    asking: u64,
}

impl Asker {
    /// Asks on the GET stream; the answer's JSON, or `unanswered`. It waits a second
    /// first, so that calls begun together, even on a loaded machine, are all in flight;
    /// and it returns (its call is answered) only once every call asking with it has had
    /// its answer, so that each is asked while the others are still in flight.
    fn ask(&self) -> String {
        self.asks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).asking += 1;
        std::thread::sleep(Duration::from_secs(1));
        let id = format!("ask-{}", self.asked.fetch_add(1, Ordering::Relaxed));
        let params = json!({"message": "Which?", "requestedSchema": {"type": "object", "properties": {}}});
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": params});
        if let Some(stream) = self.stream.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).as_mut() {
            let _ = write!(stream, "event: message\ndata: {request}\n\n");
            let _ = stream.flush();
        }
        let asks = self.asks.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (mut asks, _) = self
            .arrived
            .wait_timeout_while(asks, Duration::from_secs(10), |asks| !asks.answers.contains_key(&id))
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let answer = asks.answers.remove(&id);
        asks.asking -= 1;
        self.arrived.notify_all();
        let _ = self
            .arrived
            .wait_timeout_while(asks, Duration::from_secs(10), |asks| asks.asking > 0)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        answer.map_or_else(|| "unanswered".to_owned(), |answer| format!("answered {answer}"))
    }

    fn answered(&self, message: &Value) {
        let Some(id) = message["id"].as_str() else { return };
        let answer = message.get("result").or_else(|| message.get("error")).cloned().unwrap_or(Value::Null);
        self.asks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).answers.insert(id.to_owned(), answer);
        self.arrived.notify_all();
    }
}

impl Behaviour {
    fn of(file: &Path) -> Self {
        let Some(file) = std::fs::read(file).ok().and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok()) else {
            return Self::default();
        };
        let path = |value: &Value| value.as_str().map(PathBuf::from);
        let flood = file.get("flood").map(|flood| {
            let mut request = json!({"jsonrpc": "2.0", "method": flood["method"].as_str().unwrap_or("ping")});
            if let Some(params) = flood.get("params") {
                request["params"] = params.clone();
            }
            Flood {
                request,
                count: flood["count"].as_u64().unwrap_or(0),
                done: path(&flood["done"]),
                on_call: flood["on"] == "tools/call",
            }
        });
        Self {
            record: path(&file["record"]),
            starts: path(&file["starts"]),
            silent: file["silent"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            flood,
            deaf: file["deaf"] == true,
            session: file["session"] == true,
            get: file["get"].as_u64().and_then(|status| u16::try_from(status).ok()),
            sse: file["sse"] == true,
            ask_on_get: file["ask_on_get"] == true,
        }
    }

    /// Records `message` if asked to; whether it is to be answered.
    fn heard(&self, message: &Value) -> bool {
        let method = message.get("method").and_then(Value::as_str);
        if let Some(record) = &self.record {
            match method {
                Some(method) => match message.pointer("/params/level").and_then(Value::as_str) {
                    Some(level) => append(record, &format!("{method} {level}")),
                    None => append(record, method),
                },
                None => append(record, &format!("answer {}", message.get("id").unwrap_or(&Value::Null))),
            }
            if method.is_none() {
                append(record, &message.to_string());
            }
        }
        method.is_none_or(|method| !self.silent.iter().any(|silent| silent == method))
    }
}

fn append(path: &Path, line: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(file, "{line}");
    }
}

/// The answer to one JSON-RPC message, if it is a request.
fn answer(file: &Path, message: &Value) -> Option<String> {
    let id = message.get("id")?.clone();
    let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
    let params = message.get("params").cloned().unwrap_or(json!({}));
    let scripted = std::fs::read(file).ok().and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    if let Some(error) = scripted.as_ref().and_then(|file| file.get("errors")?.get(method)) {
        return Some(json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string());
    }
    let called = params.get("name").and_then(Value::as_str).filter(|_| method == "tools/call");
    if let Some(raw) = called.and_then(|name| scripted.as_ref()?.get("results")?.get(name)?.as_str()) {
        return Some(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{raw}}}"#));
    }
    let result = match method {
        "initialize" => Ok(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"listChanged": true},
                "logging": {},
                "completions": {}
            },
            "serverInfo": {"name": "hostile-upstream", "version": "1.0.0"}
        })),
        "ping" => Ok(json!({})),
        "tools/list" => page(file, "tools", &params),
        "prompts/list" => page(file, "prompts", &params),
        "resources/list" => page(file, "resources", &params),
        "resources/templates/list" => page(file, "resourceTemplates", &params),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
            Ok(json!({"content": [{"type": "text", "text": format!("called {name}")}]}))
        }
        "prompts/get" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
            Ok(json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("prompt {name}")}}]}))
        }
        "completion/complete" => Ok(json!({"completion": {"values": ["alpha"], "hasMore": false}})),
        "resources/read" => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or_default();
            Ok(json!({"contents": [{"uri": uri, "text": format!("contents of {uri}")}]}))
        }
        _ => Err((-32601, format!("method not found: {method}"))),
    };
    let message = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    };
    Some(message.to_string())
}

/// One page of the listing `field`: from the cursor (an index) on, `page` entries.
fn page(file: &Path, field: &str, params: &Value) -> Result<Value, (i64, String)> {
    let catalogue: Value = std::fs::read(file)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or((-32603, "the catalogue file is unreadable".to_owned()))?;
    let listed = catalogue.get(field).and_then(Value::as_array).cloned().unwrap_or_default();
    let generate = catalogue.get("generate").filter(|generate| generate["kind"] == field);
    let generated = generate.and_then(|generate| generate["count"].as_u64()).unwrap_or(0) as usize;
    let bytes = generate.and_then(|generate| generate["bytes"].as_u64()).unwrap_or(0) as usize;
    let total = listed.len() + generated;
    let start: usize = params.get("cursor").and_then(Value::as_str).and_then(|c| c.parse().ok()).unwrap_or(0);
    let size = catalogue.get("page").and_then(Value::as_u64).map_or(total, |n| n as usize).max(1);
    let end = start.saturating_add(size).min(total);
    // Generated entries are made for the page asked only: a 200 MB listing costs no 200 MB here.
    let entries: Vec<Value> = (start.min(end)..end)
        .map(|index| match listed.get(index) {
            Some(entry) => entry.clone(),
            None => json!({
                "name": format!("gen-{}", index - listed.len()),
                "description": "x".repeat(bytes),
                "inputSchema": {"type": "object"}
            }),
        })
        .collect();
    let mut result = json!({field: entries});
    if end < total {
        result["nextCursor"] = json!(end.to_string());
    }
    Ok(result)
}

fn serve_stdio(file: &Path, behaviour: Behaviour) {
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let send = |out: &Mutex<std::io::Stdout>, message: &dyn std::fmt::Display| {
        let mut out = out.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    };
    {
        let (out, file) = (Arc::clone(&out), file.to_owned());
        std::thread::spawn(move || {
            let mut last = std::fs::read(&file).ok();
            loop {
                std::thread::sleep(Duration::from_millis(50));
                let now = std::fs::read(&file).ok();
                // One notice per change: Bondry lists every kind on any, and a second notice
                // could start a listing that reads pages of two versions of the file.
                if now != last {
                    last = now;
                    send(&out, &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
                }
            }
        });
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        if !behaviour.heard(&message) {
            continue;
        }
        let flood = behaviour.flood.as_ref();
        if let Some(flood) = flood.filter(|flood| flood.on_call && message["method"] == "tools/call") {
            flood.start(&out);
            continue;
        }
        if let Some(token) =
            message.pointer("/params/_meta/progressToken").filter(|_| message["method"] == "completion/complete")
        {
            let progress = json!({"progressToken": token, "progress": 1, "total": 2, "message": "halfway"});
            send(&out, &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}));
        }
        if message["method"] == "tools/call" && message["params"]["name"] == "slow" {
            let (out, file, message) = (Arc::clone(&out), file.to_owned(), message.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                if let Some(answer) = answer(&file, &message) {
                    send(&out, &answer);
                }
            });
            continue;
        }
        if let Some(answer) = answer(file, &message) {
            send(&out, &answer);
        }
        if message["method"] == "notifications/initialized" {
            if let Some(flood) = flood.filter(|flood| !flood.on_call) {
                flood.start(&out);
            }
            if behaviour.deaf {
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
        }
    }
}

fn serve_http(file: &Path, behaviour: Behaviour) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    println!("listening on {}", listener.local_addr().expect("a bound address").port());
    let _ = std::io::stdout().flush();
    let behaviour = Arc::new(behaviour);
    let sessions = Arc::new(AtomicU64::new(0));
    let asker = Arc::new(Asker::default());
    for stream in listener.incoming().flatten() {
        let (file, behaviour, sessions, asker) =
            (file.to_owned(), Arc::clone(&behaviour), Arc::clone(&sessions), Arc::clone(&asker));
        std::thread::spawn(move || {
            let _ = serve_connection(stream, &file, &behaviour, &sessions, &asker);
        });
    }
}

/// HTTP/1.1 requests on one connection, one after the other, until it closes.
fn serve_connection(
    stream: TcpStream,
    file: &Path,
    behaviour: &Behaviour,
    sessions: &AtomicU64,
    asker: &Asker,
) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let message = serde_json::from_slice::<Value>(&body).ok();
        let called = message.as_ref().is_some_and(|message| message["method"] == "tools/call");
        if behaviour.ask_on_get {
            let method = request_line.split_whitespace().next();
            if method == Some("GET") {
                write!(
                    writer,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
                )?;
                writer.flush()?;
                *asker.stream.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(writer);
                return Ok(());
            }
            if let Some(message) = message.as_ref().filter(|message| message.get("method").is_none()) {
                asker.answered(message);
            }
            if let Some(message) = message.as_ref().filter(|message| called && message["params"]["name"] == "ask") {
                let text = asker.ask();
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": text}]}});
                let body = answer.to_string();
                write!(
                    writer,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )?;
                writer.flush()?;
                continue;
            }
        }
        let mut session = String::new();
        let answer = match (request_line.split_whitespace().next(), message) {
            (Some("POST"), Some(message)) if behaviour.heard(&message) => {
                if behaviour.session && message["method"] == "initialize" {
                    session = format!("Mcp-Session-Id: s{}\r\n", sessions.fetch_add(1, Ordering::Relaxed) + 1);
                }
                Some(answer(file, &message))
            }
            (Some("POST"), _) => Some(None),
            _ => {
                if let Some(record) = &behaviour.record {
                    append(record, "GET");
                }
                None
            }
        };
        let mut media = "application/json";
        let (status, body) = match (answer, behaviour.get) {
            (Some(Some(answer)), _) if behaviour.sse => {
                media = "text/event-stream";
                let mut stream = format!("event: message\ndata: {answer}\n\n");
                if called {
                    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                    stream.push_str(&format!("event: message\ndata: {changed}\n\n"));
                }
                ("200 OK".to_owned(), stream)
            }
            (Some(Some(answer)), _) => ("200 OK".to_owned(), answer.to_string()),
            (Some(None), _) => ("202 Accepted".to_owned(), String::new()),
            (None, Some(status)) => (format!("{status} Refused"), String::new()),
            (None, None) => ("405 Method Not Allowed".to_owned(), String::new()),
        };
        write!(
            writer,
            "HTTP/1.1 {status}\r\nContent-Type: {media}\r\n{session}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        writer.flush()?;
    }
}
