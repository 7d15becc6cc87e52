//! `hostile-upstream [--http] FILE`: an MCP server of the 2025-06-18 revision that lists
//! exactly what the JSON file `FILE` says, byte for byte, whatever the protocol allows:
//! repeated names, unknown fields, oversized entries. No SDK stands between the file and
//! the wire, so a test can make an upstream say anything an attacker would.
//!
//! The file: `{"tools": [...], "prompts": [...], "resources": [...],
//! "resourceTemplates": [...], "page": N, "generate": {"kind": "tools", "count": C,
//! "bytes": B}}`, read again at every listing. `page` splits each listing into pages of
//! N entries (one page without it); `generate` appends C tools (or prompts) named
//! `gen-0`... whose descriptions make each about B bytes, without a file of that size.
//! A call of tool `t` answers the text `called t`; a read of `u`, `contents of u`; a
//! prompt `p`, one user message `prompt p`.
//!
//! Over stdio (the default) it says `notifications/tools/list_changed` when the file
//! changes (Bondry lists every kind on it). With `--http` it serves Streamable HTTP on an
//! ephemeral loopback port, printing `listening on PORT` first, with JSON answers only
//! and no GET stream (405):
//! a test relists it through the admin API.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
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
    if http { serve_http(&file) } else { serve_stdio(&file) }
}

/// The answer to one JSON-RPC message, if it is a request.
fn answer(file: &Path, message: &Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
    let params = message.get("params").cloned().unwrap_or(json!({}));
    let result = match method {
        "initialize" => Ok(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"listChanged": true}
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
        "resources/read" => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or_default();
            Ok(json!({"contents": [{"uri": uri, "text": format!("contents of {uri}")}]}))
        }
        _ => Err((-32601, format!("method not found: {method}"))),
    };
    Some(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    })
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

fn serve_stdio(file: &Path) {
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let send = |out: &Mutex<std::io::Stdout>, message: &Value| {
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
        if let Some(answer) = answer(file, &message) {
            send(&out, &answer);
        }
    }
}

fn serve_http(file: &Path) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    println!("listening on {}", listener.local_addr().expect("a bound address").port());
    let _ = std::io::stdout().flush();
    for stream in listener.incoming().flatten() {
        let file = file.to_owned();
        std::thread::spawn(move || {
            let _ = serve_connection(stream, &file);
        });
    }
}

/// HTTP/1.1 requests on one connection, one after the other, until it closes.
fn serve_connection(stream: TcpStream, file: &Path) -> std::io::Result<()> {
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
        let answer = match request_line.split_whitespace().next() {
            Some("POST") => serde_json::from_slice::<Value>(&body).ok().map(|message| answer(file, &message)),
            _ => None,
        };
        let (status, body) = match answer {
            Some(Some(answer)) => ("200 OK", answer.to_string()),
            Some(None) => ("202 Accepted", String::new()),
            None => ("405 Method Not Allowed", String::new()),
        };
        write!(
            writer,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        writer.flush()?;
    }
}
