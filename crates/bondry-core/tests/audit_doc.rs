//! `docs/audit.md` tables every member of an audit record and every outcome from the types
//! themselves ([`AuditRecord::FIELDS`], [`AuditOutcome::ALL`]); these tests keep the three
//! in step. `BONDRY_BLESS=1 cargo test -p bondry-core --test audit_doc` rewrites the
//! tables in the file.

use std::path::Path;
use std::time::{Duration, SystemTime};

use bondry_core::audit::{AuditOutcome, AuditRecord, Digest, FieldDoc};
use bondry_core::backend::BackendKind;
use serde_json::json;

/// A record with every member set: a struct literal, so that a new member must be set here.
fn full() -> AuditRecord {
    AuditRecord {
        record_version: AuditRecord::VERSION,
        time: SystemTime::UNIX_EPOCH + Duration::from_secs(1_785_000_000),
        realm: "default".into(),
        principal: Some("alice".into()),
        principal_kind: Some("user"),
        adapter: "mcp",
        capability: "demo.echo".into(),
        capability_sha256: Some("0".repeat(64)),
        invocation_id: Some("1".repeat(32)),
        outcome: AuditOutcome::Succeeded,
        duration_us: 120,
        arguments_sha256: Some(Digest::Pending(json!({"text": "hi"}))),
        result_sha256: Some(Digest::Computed("2".repeat(64))),
        trace_id: Some("3".repeat(32)),
        continuation_id: Some("c".into()),
        arguments: Some(json!({"text": "hi"})),
        backend_kind: Some(BackendKind::BUILTIN),
        backend: Some("demo.echo".into()),
        backend_duration_us: Some(80),
        via: Some("bondry.call"),
    }
}

#[test]
fn fields_name_every_member_in_the_order_written() {
    let line = serde_json::to_value(full()).unwrap();
    let written: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
    let documented: Vec<&str> = AuditRecord::FIELDS.iter().map(|field| field.name).collect();
    assert_eq!(written, documented);
    assert_eq!(line["record_version"], 2);
    assert_eq!(line["backend_kind"], "builtin");
}

#[test]
fn all_holds_every_outcome_once_in_order() {
    macro_rules! every {
        ($($outcome:ident),* $(,)?) => {{
            // Exhaustive: an outcome added to the enum does not compile until it is named here.
            let _named = |outcome: AuditOutcome| match outcome {
                $(AuditOutcome::$outcome)|* => (),
            };
            [$(AuditOutcome::$outcome),*]
        }};
    }
    let every = every!(
        Succeeded,
        ToolError,
        InvalidInput,
        Denied,
        NotFound,
        HandlerFailed,
        InputRequired,
        Cancelled,
        Unauthenticated,
        Approved,
        Refused,
        Refreshed,
    );
    assert_eq!(AuditOutcome::ALL, every);
    for outcome in AuditOutcome::ALL {
        assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.as_str(), "as a record writes it");
    }
}

fn fields_table() -> String {
    let mut table = String::from("| Member | Type or values | Present | Meaning |\n|---|---|---|---|\n");
    for FieldDoc { name, values, present, meaning } in AuditRecord::FIELDS {
        table.push_str(&format!("| `{name}` | {values} | {present} | {meaning} |\n"));
    }
    table
}

fn outcomes_table() -> String {
    let mut table = String::from("| Outcome | Meaning |\n|---|---|\n");
    for outcome in AuditOutcome::ALL {
        table.push_str(&format!("| `{}` | {} |\n", outcome.as_str(), outcome.meaning()));
    }
    table
}

/// `doc` with the text between `<!-- begin: NAME -->` and `<!-- end: NAME -->` replaced
/// by `rendered`.
fn with_section(doc: &str, name: &str, rendered: &str) -> String {
    let (begin, end) = (format!("<!-- begin: {name} -->\n"), format!("<!-- end: {name} -->"));
    let start = doc.find(&begin).unwrap_or_else(|| panic!("docs/audit.md has no `{begin}`")) + begin.len();
    let stop = start + doc[start..].find(&end).unwrap_or_else(|| panic!("docs/audit.md has no `{end}`"));
    format!("{}{rendered}{}", &doc[..start], &doc[stop..])
}

#[test]
fn docs_audit_md_tables_are_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/audit.md");
    let committed = std::fs::read_to_string(&path).unwrap();
    let sections = [("fields", fields_table()), ("outcomes", outcomes_table())];
    let expected = sections.iter().fold(committed.clone(), |doc, (name, rendered)| with_section(&doc, name, rendered));
    if expected == committed {
        return;
    }
    if std::env::var_os("BONDRY_BLESS").is_some_and(|bless| bless == "1") {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    let shown: Vec<String> = sections.iter().map(|(name, rendered)| format!("[{name}]\n{rendered}")).collect();
    panic!(
        "docs/audit.md is stale; between its markers it should read:\n\n{}\nRun `BONDRY_BLESS=1 cargo test -p bondry-core --test audit_doc` to rewrite it.",
        shown.join("\n")
    );
}
