//! What is measured: the servers, and for each workload the same request to each of them.

use crate::configs::TICKET;
use crate::http1::post;
use crate::load::{Handshake, Script};

pub const MODERN: &str = "2026-07-28";
pub const HANDSHAKE: &str = "2025-11-25";
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// The servers a run starts, by key; the gateways' upstream is `rmcp`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Peer {
    /// Bare hyper answering a fixed body.
    Ceiling,
    /// Bondry: 200 tools in each of its realms `default` (anonymous), `ticket` and `jwt`.
    Bondry,
    /// rmcp 3.11, stateless with JSON responses, 200 tools.
    Rmcp,
    /// rmcp 3.11 with sessions.
    RmcpSessions,
    /// The TypeScript SDK v2 server, stateless with JSON responses, the echo tool alone.
    Ts,
    /// The same with 200 tools, for the listing.
    TsCatalogue,
    /// The TypeScript SDK v2 server with sessions.
    TsSessions,
    /// Bondry fronting `Rmcp` as an upstream.
    BondryGateway,
    /// mcp-proxy 0.6.0 fronting `Rmcp`.
    McpProxy,
    /// A web service on hyper answering Bondry's procedure wire (`procedure-service`).
    Service,
    /// Bondry serving its echo tool from `Service` (`backend = "http"`).
    BondryService,
}

impl Peer {
    pub const ALL: [Peer; 11] = [
        Peer::Ceiling,
        Peer::Bondry,
        Peer::Rmcp,
        Peer::RmcpSessions,
        Peer::Ts,
        Peer::TsCatalogue,
        Peer::TsSessions,
        Peer::BondryGateway,
        Peer::McpProxy,
        Peer::Service,
        Peer::BondryService,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Peer::Ceiling => "bare hyper (ceiling)",
            Peer::Bondry => "Bondry",
            Peer::Rmcp => "rmcp 3.11",
            Peer::RmcpSessions => "rmcp 3.11 (sessions)",
            Peer::Ts => "TypeScript SDK 2.4.0",
            Peer::TsCatalogue => "TypeScript SDK 2.4.0 (200 tools)",
            Peer::TsSessions => "TypeScript SDK 2.4.0 (sessions)",
            Peer::BondryGateway => "Bondry → rmcp",
            Peer::McpProxy => "mcp-proxy 0.6.0 → rmcp",
            Peer::Service => "hyper service",
            Peer::BondryService => "Bondry → hyper service",
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Peer::Ceiling => "ceiling",
            Peer::Bondry => "bondry",
            Peer::Rmcp => "rmcp",
            Peer::RmcpSessions => "rmcp-sessions",
            Peer::Ts => "ts",
            Peer::TsCatalogue => "ts-catalogue",
            Peer::TsSessions => "ts-sessions",
            Peer::BondryGateway => "bondry-gateway",
            Peer::McpProxy => "mcp-proxy",
            Peer::Service => "service",
            Peer::BondryService => "bondry-service",
        }
    }
}

/// One row of a workload: a server and what each connection sends it.
pub struct Entry {
    pub peer: Peer,
    pub label: String,
    pub script: Script,
}

pub struct Workload {
    pub id: &'static str,
    pub title: &'static str,
    pub entries: Vec<Entry>,
}

/// The echo tool's argument: 1 KiB of text.
pub fn kib_text() -> String {
    "x".repeat(1024)
}

fn modern_headers(method: &str, name: Option<&str>, extra: &[String]) -> Vec<String> {
    let mut headers = vec![
        "content-type: application/json".to_owned(),
        "accept: application/json, text/event-stream".to_owned(),
        format!("mcp-protocol-version: {MODERN}"),
        format!("mcp-method: {method}"),
    ];
    headers.extend(name.map(|name| format!("mcp-name: {name}")));
    headers.extend_from_slice(extra);
    headers
}

/// A modern `tools/call` of the echo tool with `text`, on `path`.
pub fn modern_call(path: &str, text: &str, extra: &[String]) -> Script {
    modern_call_of(path, "demo.echo", text, extra)
}

/// As [`modern_call`], of the echo tool under the name `tool`.
pub fn modern_call_of(path: &str, tool: &str, text: &str, extra: &[String]) -> Script {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"{text}"}},{META}}}}}"#
    );
    let request = post(path, &modern_headers("tools/call", Some(tool), extra), &body);
    Script { handshake: None, request: String::from_utf8(request).expect("ASCII"), expect: "structuredContent" }
}

/// A modern `tools/call` of `tool` with no arguments, answered by anything with a result.
pub fn modern_call_bare(path: &str, tool: &str) -> Script {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{}},{META}}}}}"#
    );
    let request = post(path, &modern_headers("tools/call", Some(tool), &[]), &body);
    Script { handshake: None, request: String::from_utf8(request).expect("ASCII"), expect: "\"result\"" }
}

/// A modern `tools/call` of `bondry.search` asking `query` (plain words, no quotes).
pub fn modern_search(path: &str, query: &str) -> Script {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"bondry.search","arguments":{{"query":"{query}"}},{META}}}}}"#
    );
    let request = post(path, &modern_headers("tools/call", Some("bondry.search"), &[]), &body);
    Script { handshake: None, request: String::from_utf8(request).expect("ASCII"), expect: "structuredContent" }
}

/// A modern `tools/list`'s first page, however long the catalogue.
pub fn modern_first_page(path: &str) -> Script {
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
    let request = post(path, &modern_headers("tools/list", None, &[]), &body);
    Script { handshake: None, request: String::from_utf8(request).expect("ASCII"), expect: "\"tools\"" }
}

/// A modern `tools/list`: one page, whose last entry is the 200th tool.
pub fn modern_list(path: &str) -> Script {
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
    let request = post(path, &modern_headers("tools/list", None, &[]), &body);
    Script { handshake: None, request: String::from_utf8(request).expect("ASCII"), expect: "demo.e00199" }
}

fn session_headers(extra: &str) -> Vec<String> {
    let mut headers =
        vec!["content-type: application/json".to_owned(), "accept: application/json, text/event-stream".to_owned()];
    if !extra.is_empty() {
        headers.push(extra.to_owned());
    }
    headers
}

/// `initialize` at the handshake revision, then `notifications/initialized`.
pub fn handshake(path: &str) -> Handshake {
    let initialize = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{HANDSHAKE}","capabilities":{{}},"clientInfo":{{"name":"bondry-bench","version":"1"}}}}}}"#
    );
    let in_session = format!("mcp-session-id: {{SESSION}}\r\nmcp-protocol-version: {HANDSHAKE}");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    Handshake {
        initialize: post(path, &session_headers(""), &initialize),
        initialized: String::from_utf8(post(path, &session_headers(&in_session), initialized)).expect("ASCII"),
    }
}

/// A handshake-era `tools/call` of the echo tool inside the connection's own session.
pub fn session_call(path: &str, text: &str) -> Script {
    let in_session = format!("mcp-session-id: {{SESSION}}\r\nmcp-protocol-version: {HANDSHAKE}");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"demo.echo","arguments":{{"text":"{text}"}}}}}}"#
    );
    let request = post(path, &session_headers(&in_session), &body);
    Script {
        handshake: Some(handshake(path)),
        request: String::from_utf8(request).expect("ASCII"),
        expect: "structuredContent",
    }
}

/// Every workload but memory, which is measured apart (`memory.rs`).
pub fn workloads(jwt: &str) -> Vec<Workload> {
    let text = kib_text();
    let entry = |peer: Peer, label: &str, script: Script| Entry { peer, label: label.to_owned(), script };
    vec![
        Workload {
            id: "1",
            title: "modern tools/call, echo of 1 KiB, anonymous",
            entries: vec![
                entry(Peer::Ceiling, Peer::Ceiling.name(), ceiling_call(&text)),
                entry(Peer::Bondry, "Bondry", modern_call("/mcp", &text, &[])),
                entry(Peer::Rmcp, Peer::Rmcp.name(), modern_call("/mcp", &text, &[])),
                entry(Peer::Ts, Peer::Ts.name(), modern_call("/mcp", &text, &[])),
            ],
        },
        Workload {
            id: "2",
            title: "modern tools/call, echo of 1 KiB, authenticated",
            entries: vec![
                entry(Peer::Bondry, "Bondry, anonymous", modern_call("/mcp", &text, &[])),
                entry(
                    Peer::Bondry,
                    "Bondry, ticket",
                    modern_call("/mcp/realm/ticket", &text, &[format!("authorization: Bearer {TICKET}")]),
                ),
                entry(
                    Peer::Bondry,
                    "Bondry, RS256 JWT",
                    modern_call("/mcp/realm/jwt", &text, &[format!("authorization: Bearer {jwt}")]),
                ),
            ],
        },
        Workload {
            id: "3",
            title: "modern tools/list, one page of 200 tools",
            entries: vec![
                entry(Peer::Bondry, "Bondry", modern_list("/mcp")),
                entry(Peer::Rmcp, Peer::Rmcp.name(), modern_list("/mcp")),
                entry(Peer::TsCatalogue, Peer::Ts.name(), modern_list("/mcp")),
            ],
        },
        Workload {
            id: "4",
            title: "handshake-era tools/call in an established session, echo of 1 KiB",
            entries: vec![
                entry(Peer::Bondry, "Bondry", session_call("/mcp", &text)),
                entry(Peer::RmcpSessions, Peer::RmcpSessions.name(), session_call("/mcp", &text)),
                entry(Peer::TsSessions, Peer::TsSessions.name(), session_call("/mcp", &text)),
            ],
        },
        Workload {
            id: "5",
            title: "modern tools/call relayed to an upstream (rmcp), echo of 1 KiB",
            entries: vec![
                entry(Peer::Rmcp, "rmcp called directly", modern_call("/mcp", &text, &[])),
                entry(Peer::BondryGateway, Peer::BondryGateway.name(), modern_call("/mcp", &text, &[])),
                entry(Peer::McpProxy, Peer::McpProxy.name(), mcp_proxy_call(&text)),
            ],
        },
        Workload {
            id: "6",
            title: "modern tools/call served by a web service (hyper), echo of 1 KiB",
            entries: vec![
                entry(Peer::Service, "hyper service called directly", service_call(&text)),
                entry(Peer::BondryService, Peer::BondryService.name(), modern_call("/mcp", &text, &[])),
            ],
        },
    ]
}

/// The POST Bondry sends the service for the echo tool with `text`, sent directly.
pub fn service_call(text: &str) -> Script {
    let body = format!(
        r#"{{"bondry":1,"capability":{{"id":"demo.echo","kind":"tool"}},"invocation_id":"6783ab7bbbaccf1844250901ab543036","request_id":"cb7db1cc143883cdfdb1717480adbaa7","realm":"default","arguments":{{"text":"{text}"}},"client_capabilities":{{}}}}"#
    );
    let headers = ["content-type: application/json".to_owned(), "accept: application/json".to_owned()];
    let request = post("/call", &headers, &body);
    Script { handshake: None, request: String::from_utf8(request).expect("ASCII"), expect: "\"result\"" }
}

/// mcp-proxy serves at `/` and names an upstream's tools `BACKEND/TOOL`.
pub fn mcp_proxy_call(text: &str) -> Script {
    modern_call_of("/", "up/demo.echo", text, &[])
}

/// The same request to the ceiling, whose fixed answer has a result but no content.
pub fn ceiling_call(text: &str) -> Script {
    Script { expect: "\"result\"", ..modern_call("/mcp", text, &[]) }
}
