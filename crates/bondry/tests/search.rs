//! Search listing (`listing = "search"`), black-box. First, the evaluation set its
//! ranking is held to: natural queries over GitHub's REST description
//! (`fixtures/search-queries.json`), written before any ranking code, each with the one
//! operation it asks for. This file checks the set is honest: every expected operation
//! exists, and no query borrows three words in a row from its operation's summary or
//! description, so a ranking cannot pass by matching the document's own phrasing.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde_json::Value;

/// The evaluation set, as committed.
fn queries() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search-queries.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// GitHub's REST description from `interop/openapi`, or `None` (having said why) when it is
/// not installed; a failure instead when `BONDRY_REQUIRE_OPENAPI_INTEROP` is set.
fn github() -> Option<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/openapi/node_modules/@octokit/openapi/generated/api.github.com.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).unwrap()),
        Err(error) => {
            assert!(
                std::env::var_os("BONDRY_REQUIRE_OPENAPI_INTEROP").is_none(),
                "{}: {error}: run `npm ci` in interop/openapi",
                path.display()
            );
            eprintln!("skipped: GitHub's description is not installed: run `npm ci` in interop/openapi");
            None
        }
    }
}

/// Lowercase runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every run of three consecutive words of `text`.
fn triples(text: &str) -> BTreeSet<[String; 3]> {
    words(text).windows(3).map(|run| [run[0].clone(), run[1].clone(), run[2].clone()]).collect()
}

#[test]
fn the_evaluation_set_asks_for_real_operations_in_its_own_words() {
    let set = queries();
    let queries = set["queries"].as_array().unwrap();
    assert!(queries.len() >= 30, "at least 30 queries");
    let tags: BTreeSet<&str> = queries.iter().map(|query| query["tag"].as_str().unwrap()).collect();
    assert!(tags.len() >= 10, "at least 10 tags: {tags:?}");
    let Some(document) = github() else { return };
    let mut operations: HashMap<&str, &Value> = HashMap::new();
    for item in document["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            if let Some(id) = operation["operationId"].as_str() {
                operations.insert(id, operation);
            }
        }
    }
    for query in queries {
        let (asked, expected) = (query["query"].as_str().unwrap(), query["expected"].as_str().unwrap());
        let operation = operations.get(expected).unwrap_or_else(|| panic!("{expected} is no operation"));
        assert_eq!(operation["tags"][0], query["tag"], "{expected}");
        let count = words(asked).len();
        assert!((4..=14).contains(&count), "{asked:?}: {count} words");
        for field in ["summary", "description"] {
            let own = triples(operation[field].as_str().unwrap_or_default());
            let shared: Vec<_> = triples(asked).intersection(&own).cloned().collect();
            assert!(shared.is_empty(), "{asked:?} borrows {shared:?} from {expected}'s {field}");
        }
    }
}
