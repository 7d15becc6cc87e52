//! Renders the error table to `docs/errors.md` and fails when the committed file is stale,
//! so a changed status, code or message always shows up in review.
//! Run with `UPDATE_DOCS=1` to rewrite the file.

use bondry_mcp_proto::Error;

fn render() -> String {
    let mut doc = String::from(
        "# Errors\n\n\
         Every refusal Bondry's MCP endpoint answers, in the order the checks run.\n\
         Generated from the error table in `bondry-mcp-proto` by `cargo test -p bondry-mcp-proto --test error_table`; do not edit by hand.\n\n\
         JSON-RPC errors that arise after dispatch (unknown tool, invalid params, invalid cursor) ride HTTP 200.\n\
         Errors that cannot name a request id omit `id`.\n\
         Tool failures and invalid tool arguments are not errors: they are `tools/call` results with `isError: true`.\n\n\
         | Situation | HTTP | Code | Message | Data | Extra headers |\n\
         |---|---|---|---|---|---|\n",
    );
    for error in Error::examples() {
        let row = error.row();
        let response = error.to_http();
        let situation = error.variant();
        let code = row.code.map_or_else(|| "(empty body)".to_owned(), |code| code.to_string());
        let data = row.data.map_or_else(String::new, |data| format!("`{data}`"));
        let headers: Vec<String> = response
            .headers()
            .iter()
            .filter(|(name, _)| *name != http::header::CONTENT_TYPE)
            .map(|(name, value)| format!("`{name}: {}`", value.to_str().unwrap_or_default()))
            .collect();
        let message = if row.message.is_empty() { String::new() } else { format!("`{}`", row.message) };
        doc.push_str(&format!(
            "| {situation} | {} | {code} | {message} | {data} | {} |\n",
            row.status.as_u16(),
            headers.join(" ")
        ));
    }
    doc.push_str(DEPARTURES);
    doc
}

/// What the table cannot cover: requests hyper refuses before Bondry sees them.
const DEPARTURES: &str = "\n## Departures\n\n\
    Framing errors that hyper refuses while reading a request head, before Bondry sees a request, keep hyper's status and have an empty body, since there is no request to answer in JSON-RPC:\n\n\
    | Situation | HTTP |\n\
    |---|---|\n\
    | `Content-Length` that is not a number, or repeated with different values | 400 |\n\
    | More than 100 headers, or a head larger than hyper's read buffer | 431 |\n\
    | A header folded over lines (obs-fold) | 400 |\n\
    | A NUL or other byte not allowed in a header | 400 |\n\
    | A request line that is not HTTP/1.x | 400 |\n\n\
    `crates/bondry/tests/transport.rs` (`framing_errors_keep_hypers_answer`) checks these.\n";

#[test]
fn every_variant_has_an_example_in_table_order() {
    let examples: Vec<&str> = Error::examples().iter().map(Error::variant).collect();
    let mut seen = examples.clone();
    seen.dedup();
    assert_eq!(seen, Error::VARIANTS, "one example or more of each variant, in declaration order");
}

#[test]
fn docs_errors_md_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/errors.md");
    let rendered = render();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/errors.md is stale; run `UPDATE_DOCS=1 cargo test -p bondry-mcp-proto --test error_table`"
    );
}

#[test]
fn every_json_rpc_error_body_has_the_tables_code_and_message() {
    for error in Error::examples() {
        let row = error.row();
        let response = error.to_http();
        assert_eq!(response.status(), row.status);
        match row.code {
            None => assert!(response.body().is_empty()),
            Some(code) => {
                let body: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
                assert_eq!(body["error"]["code"], code);
                assert_eq!(body["error"]["message"], row.message.as_str());
                assert_eq!(body.get("id").is_some(), error.id().is_some(), "{error:?}");
            }
        }
    }
}
