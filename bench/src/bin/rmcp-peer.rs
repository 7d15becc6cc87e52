//! `rmcp-peer --listen ADDR [--stateful] [--tools N]`: the official Rust SDK's Streamable
//! HTTP server (rmcp 3.11), serving the bench's echo tool, as a peer measured beside Bondry.
//!
//! Stateless with JSON responses by default, the fastest mode rmcp offers; `--stateful`
//! keeps handshake-era sessions, for the session workload. It runs on rmcp's own types
//! and its tower service under axum, as rmcp documents, with the system allocator, as a
//! user of rmcp would run it. Prints `listening on http://ADDR/mcp` on stderr when ready.

use std::sync::Arc;

use axum::serve::ListenerExt;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

/// The echo tool and its copies, listed whole in one page.
#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
}

impl Echo {
    fn new(count: usize) -> Self {
        let tools = (0..count.max(1))
            .map(|index| {
                let name = if index == 0 { "demo.echo".to_owned() } else { format!("demo.e{index:05}") };
                serde_json::from_value(tool_definition(&name)).expect("the tool definition is rmcp's shape")
            })
            .collect();
        Self { tools: Arc::new(tools) }
    }
}

/// The same definition Bondry's `demo.echo` lists.
fn tool_definition(name: &str) -> Value {
    json!({
        "name": name,
        "title": "Echo",
        "description": "Returns the text it is given, as structured content.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 10000, "description": "Text to echo back"}},
            "required": ["text"],
            "additionalProperties": false
        },
        "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    })
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-peer", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tools.iter().any(|tool| tool.name == request.name) {
            return Err(ErrorData::invalid_params(format!("unknown tool {}", request.name), None));
        }
        let text = request.arguments.as_ref().and_then(|arguments| arguments.get("text")).cloned();
        match text {
            Some(text @ Value::String(_)) => Ok(CallToolResult::structured(json!({ "text": text })).into()),
            _ => Err(ErrorData::invalid_params("text must be a string", None)),
        }
    }
}

#[tokio::main]
async fn main() {
    let mut listen = "127.0.0.1:0".to_owned();
    let mut stateful = false;
    let mut tools = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next().expect("--listen ADDR"),
            "--stateful" => stateful = true,
            "--tools" => tools = args.next().and_then(|n| n.parse().ok()).expect("--tools N"),
            other => panic!("unknown argument {other}; usage: rmcp-peer --listen ADDR [--stateful] [--tools N]"),
        }
    }
    let echo = Echo::new(tools);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(stateful)
        .with_json_response(!stateful)
        .with_sse_keep_alive(None);
    let service =
        StreamableHttpService::new(move || Ok(echo.clone()), Arc::new(LocalSessionManager::default()), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(&listen).await.expect("the listen address binds");
    let addr = listener.local_addr().expect("a bound address");
    eprintln!("listening on http://{addr}/mcp");
    // As Bondry and the ceiling do: answers are small and one at a time.
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    axum::serve(listener, router).await.expect("the server runs");
}
