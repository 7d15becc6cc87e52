//! Interop: the official Python SDK client (`mcp` from PyPI, pinned with hashes in
//! `interop/py/requirements.txt`) drives the real server, once with the legacy handshake
//! and once in `auto` mode, which must land in the modern era.
//!
//! `scripts/test` installs the client into `interop/py/.venv` and sets
//! `BONDRY_REQUIRE_PY_INTEROP=1`, so CI cannot skip this; a plain `cargo test` without
//! the install says so and passes.

use bondry_test_support as support;

use support::TestServer;

#[tokio::test]
async fn python_sdk_client_connects_lists_and_calls() {
    let server = TestServer::start().await;
    let url = format!("http://localhost:{}/mcp", server.addr.port());
    let Some(stdout) = python(vec!["interop.py".into(), url]).await else { return };
    assert!(stdout.contains("ok legacy handshake: 2025-11-25"), "{stdout}");
    assert!(stdout.contains("ok auto negotiation: 2026-07-28"), "{stdout}");
    let records = server.stop().await;
    assert!(records.iter().filter(|r| r["capability"] == "demo.echo" && r["outcome"] == "succeeded").count() >= 2);
}

#[tokio::test]
async fn python_sdk_client_lists_and_calls_an_upstreams_tools_through_the_gateway() {
    for era in support::UpstreamEra::BOTH {
        let gateway = support::DemoGateway::start(support::bondry_exe!(), era).await;
        let Some(stdout) = python(vec!["interop.py".into(), gateway.url(), "up.".into()]).await else { return };
        assert!(stdout.contains("ok legacy handshake: 2025-11-25"), "{era:?}: {stdout}");
        assert!(stdout.contains("ok auto negotiation: 2026-07-28"), "{era:?}: {stdout}");
    }
}

/// Runs the venv's `python` with `args` in `interop/py`; its stdout.
async fn python(args: Vec<String>) -> Option<String> {
    let install = "create interop/py/.venv and install requirements.txt into it";
    support::interop("interop/py", ".venv/bin/python", args, "BONDRY_REQUIRE_PY_INTEROP", install).await
}
