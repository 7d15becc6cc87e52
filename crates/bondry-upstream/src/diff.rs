//! A structural diff of two JSON definitions: what an operator reviews before approving.

use serde_json::{Value, json};

/// Every difference between `pinned` and `current`, as `{op, path, pinned, current}` with
/// `op` one of `added`, `removed`, `changed` and `path` a JSON Pointer (RFC 6901), in
/// key order; empty when they are equal.
pub fn diff(pinned: &Value, current: &Value) -> Vec<Value> {
    let mut changes = Vec::new();
    walk(String::new(), Some(pinned), Some(current), &mut changes);
    changes
}

fn walk(path: String, pinned: Option<&Value>, current: Option<&Value>, changes: &mut Vec<Value>) {
    match (pinned, current) {
        (Some(Value::Object(before)), Some(Value::Object(after))) => {
            let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                walk(format!("{path}/{}", escape(key)), before.get(key), after.get(key), changes);
            }
        }
        (Some(Value::Array(before)), Some(Value::Array(after))) => {
            for index in 0..before.len().max(after.len()) {
                walk(format!("{path}/{index}"), before.get(index), after.get(index), changes);
            }
        }
        (Some(before), Some(after)) if before == after => {}
        (Some(before), Some(after)) => {
            changes.push(json!({"op": "changed", "path": path, "pinned": before, "current": after}));
        }
        (Some(before), None) => changes.push(json!({"op": "removed", "path": path, "pinned": before})),
        (None, Some(after)) => changes.push(json!({"op": "added", "path": path, "current": after})),
        (None, None) => {}
    }
}

/// A key as a JSON Pointer token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_change_by_its_pointer() {
        let pinned = json!({"name": "t", "description": "a", "inputSchema": {"required": ["x"]}, "a/b": 1});
        let current = json!({"name": "t", "description": "b", "inputSchema": {"required": ["x", "y"]}, "title": "T"});
        assert_eq!(
            diff(&pinned, &current),
            [
                json!({"op": "removed", "path": "/a~1b", "pinned": 1}),
                json!({"op": "changed", "path": "/description", "pinned": "a", "current": "b"}),
                json!({"op": "added", "path": "/inputSchema/required/1", "current": "y"}),
                json!({"op": "added", "path": "/title", "current": "T"}),
            ]
        );
        assert!(diff(&pinned, &pinned).is_empty());
    }
}
