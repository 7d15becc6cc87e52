//! `catalogue-upstream FILE`: an MCP server on rmcp 3.11 over stdio whose tools, prompts
//! and resources are what the JSON file `FILE` says, verbatim, read again at every
//! listing: `{"tools": [...], "prompts": [...], "resources": [...]}`. When the file
//! changes it says so (`notifications/*/list_changed`), so a test drives an upstream's
//! drift by rewriting a file. A call of tool `t` answers the text `called t`; a read of
//! `u`, `contents of u`.

use std::path::PathBuf;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::Value;

struct Catalogue(PathBuf);

impl Catalogue {
    /// The entries of `kind` in the file, as rmcp's types read them.
    fn entries<T: DeserializeOwned>(&self, kind: &str) -> Result<Vec<T>, ErrorData> {
        let text = std::fs::read_to_string(&self.0).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let file: Value = serde_json::from_str(&text).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let entries = file.get(kind).cloned().unwrap_or(Value::Array(Vec::new()));
        serde_json::from_value(entries).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

impl ServerHandler for Catalogue {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .build();
        ServerConfig::new(capabilities).with_server_info(Implementation::new("catalogue-upstream", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.entries("tools")?))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("called {}", request.name))]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.entries("prompts")?))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(self.entries("resources")?))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let text = format!("contents of {}", request.uri);
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri)]).into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = PathBuf::from(std::env::args().nth(1).ok_or("usage: catalogue-upstream FILE")?);
    let service = Catalogue(path.clone()).serve(rmcp::transport::stdio()).await?;
    let peer = service.peer().clone();
    tokio::spawn(async move {
        // A poll, not a watcher: the file is small and the test waits on the gateway anyway.
        let mut last = std::fs::read(&path).ok();
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let now = std::fs::read(&path).ok();
            if now != last {
                last = now;
                let _ = peer.notify_tool_list_changed().await;
                let _ = peer.notify_prompt_list_changed().await;
                let _ = peer.notify_resource_list_changed().await;
            }
        }
    });
    service.waiting().await?;
    Ok(())
}
