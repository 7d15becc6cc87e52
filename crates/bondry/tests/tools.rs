//! Black-box tests of `server/discover`, `tools/list` and `tools/call` on the real server.

mod support;

use serde_json::{Value, json};
use support::{Req, TestServer};

#[tokio::test]
async fn discover_announces_modern_revisions_tools_and_caching() {
    let server = TestServer::start().await;
    let result = server.send(Req::modern("server/discover", json!({}))).await.assert_result();
    assert_eq!(
        result,
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bondry", "version": env!("CARGO_PKG_VERSION")}}
        })
    );
    server.stop().await;
}
