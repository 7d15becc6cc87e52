//! `rmcp-stdio-upstream`: a small MCP server on rmcp 3.11 over stdio, the upstream that
//! tests of Bondry's MCP client start as a child. Its `ServerHandler` is written by hand
//! (no macros). Tools: `echo` (its `text`), `env` (its whole environment, as JSON text),
//! `log_stderr` (a long line with control characters on stderr), `huge` (a result over
//! 1 MiB), `garbage` (a non-JSON line on stdout before its answer), `spawn_grandchild`
//! (a process in the server's process group, whose pid it answers) and `hold_term` (from then on it
//! ignores SIGTERM). For failures: `hang` (never answers; says on stderr when cancelled), `fail` (a JSON-RPC error -32000
//! `boom`), `exit` (the process exits mid-call) and `tool_error` (a result with `isError`).
//! Prompts `greet` and `broken` (-32000 `boom`), resources `test://rmcp/readme` and
//! `test://rmcp/broken` (-32000 `boom`).
//!
//! `rmcp-stdio-upstream linger` only sleeps: the grandchild.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    Prompt, PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

const README: &str = "test://rmcp/readme";
const BROKEN: &str = "test://rmcp/broken";

/// The JSON-RPC error of the tools, prompt and resource that fail.
fn boom() -> ErrorData {
    ErrorData::new(rmcp::model::ErrorCode(-32000), "boom", None)
}

struct Upstream;

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else { unreachable!("tool schemas here are objects") };
    Tool::new(name, description, Arc::new(schema))
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

fn text(text: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources().build())
            .with_server_info(Implementation::new("rmcp-stdio-upstream", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("echo", "Returns its text", json!({"type": "object", "properties": {"text": {"type": "string"}}})),
            tool("env", "Returns its environment", no_arguments()),
            tool("log_stderr", "Writes a long line with control characters to stderr", no_arguments()),
            tool("huge", "Answers more than 1 MiB", no_arguments()),
            tool("garbage", "Prints a line that is not JSON before answering", no_arguments()),
            tool("spawn_grandchild", "Starts a process in its process group and answers its pid", no_arguments()),
            tool("hold_term", "Ignores SIGTERM from now on", no_arguments()),
            tool("hang", "Never answers", no_arguments()),
            tool("fail", "Answers a JSON-RPC error -32000 boom", no_arguments()),
            tool("exit", "Exits the process mid-call", no_arguments()),
            tool("exit_soon", "Answers, then exits 100 ms later", no_arguments()),
            tool("tool_error", "Answers a result with isError", no_arguments()),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        match &*request.name {
            "echo" => text(arguments.get("text").and_then(Value::as_str).unwrap_or_default()),
            "env" => text(
                Value::Object(std::env::vars().map(|(name, value)| (name, value.into())).collect::<Map<_, _>>())
                    .to_string(),
            ),
            "log_stderr" => {
                eprintln!("\x1b[31mred\x07 and a bell, then {}", "A".repeat(10_000));
                text("logged")
            }
            "huge" => text("x".repeat(1536 * 1024)),
            "garbage" => {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(b"this line is not JSON\n").and_then(|()| stdout.flush());
                text("after garbage")
            }
            "spawn_grandchild" => {
                let exe = std::env::current_exe().map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let grandchild = std::process::Command::new(exe)
                    .arg("linger")
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                text(grandchild.id().to_string())
            }
            "hold_term" => {
                let mut terms = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                tokio::spawn(async move { while terms.recv().await.is_some() {} });
                text("holding")
            }
            "hang" => {
                // Says on stderr when its caller cancels it, which the gateway's log shows.
                let cancelled = context.ct.clone();
                tokio::spawn(async move {
                    cancelled.cancelled().await;
                    eprintln!("hang: cancelled by the caller");
                });
                std::future::pending().await
            }
            "fail" => Err(boom()),
            "exit" => std::process::exit(3),
            "exit_soon" => {
                std::thread::spawn(|| {
                    std::thread::sleep(Duration::from_millis(100));
                    std::process::exit(3)
                });
                text("exiting")
            }
            "tool_error" => Ok(CallToolResult::error(vec![ContentBlock::text("it went wrong")]).into()),
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new("greet", Some("Greets"), None),
            Prompt::new("broken", Some("Fails"), None),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        match request.name.as_str() {
            "greet" => Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, "Hello from rmcp")]).into()),
            "broken" => Err(boom()),
            other => Err(ErrorData::invalid_params(format!("no prompt {other}"), None)),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(README, "readme"),
            Resource::new(BROKEN, "broken_resource"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match request.uri.as_str() {
            README => Ok(ReadResourceResult::new(vec![ResourceContents::text("read me", README)]).into()),
            BROKEN => Err(boom()),
            other => Err(ErrorData::resource_not_found(format!("no resource {other}"), None)),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("linger") {
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
    Upstream.serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}
