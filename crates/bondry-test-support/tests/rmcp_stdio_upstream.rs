//! The `rmcp-stdio-upstream` binary answers `server/discover` on stdio, so that a
//! workspace test run builds it for the tests that start it as a child.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[test]
fn the_test_upstream_answers_discover_on_stdio() {
    let exe = bondry_test_support::test_upstream_exe();
    assert_eq!(exe, std::path::Path::new(env!("CARGO_BIN_EXE_rmcp-stdio-upstream")));
    let mut child = Command::new(exe).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    writeln!(child.stdin.as_mut().unwrap(), "{discover}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1);
    assert!(answer["result"]["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")), "{answer}");
    assert_eq!(answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "rmcp-stdio-upstream");
    child.kill().unwrap();
    child.wait().unwrap();
}
