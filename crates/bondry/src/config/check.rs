//! The shape check: every unknown key, missing key and mistyped value of a configuration,
//! found in one walk, each placed where it is written and, for a misspelt key, with the
//! key it most likely meant.

use super::locate::{KeyPath, Place, Places};
use super::shape::{Field, Shape};

/// One finding of the walk: where, which key, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub place: Option<Place>,
    pub key: String,
    pub message: String,
}

/// Walks `value` against `shape`, in the file's order of places.
pub fn check(value: &toml::Value, shape: &Shape, places: &Places) -> Vec<Finding> {
    let mut walk = Walk { places, findings: Vec::new() };
    walk.value(&KeyPath::default(), value, shape);
    let mut findings = walk.findings;
    findings.sort_by_key(|finding| match &finding.place {
        Some(Place::File { line, column }) => (0, *line, *column),
        Some(Place::Env(_)) | None => (1, 0, 0),
    });
    findings
}

struct Walk<'a> {
    places: &'a Places,
    findings: Vec<Finding>,
}

impl Walk<'_> {
    fn find(&mut self, place: Option<&Place>, path: &KeyPath, message: String) {
        self.findings.push(Finding { place: place.cloned(), key: path.to_string(), message });
    }

    fn value(&mut self, path: &KeyPath, value: &toml::Value, shape: &Shape) {
        use toml::Value;
        match (shape, value) {
            (Shape::Any, _) | (Shape::Bool, Value::Boolean(_)) | (Shape::String, Value::String(_)) => {}
            (Shape::Float, Value::Float(_) | Value::Integer(_)) => {}
            (Shape::Integer { min, max }, Value::Integer(number)) => {
                if !(*min..=*max).contains(&i128::from(*number)) {
                    let message = format!("{number} is out of range: expected {}", shape.expected());
                    self.find(self.places.value(path), path, message);
                }
            }
            (Shape::Choice(options), Value::String(chosen)) => {
                if !options.contains(&chosen.as_str()) {
                    let hint = suggestion(chosen, options.iter().copied())
                        .map(|near| format!("; did you mean \"{near}\"?"))
                        .unwrap_or_default();
                    let message = format!("{chosen:?} is not accepted: expected {}{hint}", shape.expected());
                    self.find(self.places.value(path), path, message);
                }
            }
            (Shape::Array(element), Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    self.value(&path.index(index), item, element);
                }
            }
            (Shape::Map(entry), Value::Table(table)) => {
                for (key, value) in table {
                    self.value(&path.key(key), value, entry);
                }
            }
            (Shape::Table(fields), Value::Table(table)) => self.table(path, table, fields),
            (expected, found) => {
                let message = format!("expected {}, found {}", expected.expected(), kind(found));
                self.find(self.places.value(path), path, message);
            }
        }
    }

    fn table(&mut self, path: &KeyPath, table: &toml::Table, fields: &[Field]) {
        for (key, value) in table {
            let at = path.key(key);
            match fields.iter().find(|field| field.name == key) {
                Some(field) => self.value(&at, value, &field.shape),
                None => {
                    let names = fields.iter().map(|field| field.name);
                    let message = match suggestion(key, names.clone()) {
                        Some(near) => format!("unknown key; did you mean `{near}`?"),
                        None => format!("unknown key; this table takes {}", names.collect::<Vec<_>>().join(", ")),
                    };
                    self.find(self.places.key(&at), &at, message);
                }
            }
        }
        for field in fields.iter().filter(|field| field.required && !table.contains_key(field.name)) {
            let message = format!("missing key `{}`: expected {}", field.name, field.shape.expected());
            self.find(self.places.value(path), path, message);
        }
    }
}

/// "a string", "an integer": how a message names what was found.
fn kind(value: &toml::Value) -> &'static str {
    match value {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date-time",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// The candidate nearest `typed` by edit distance, if near enough to be a slip of the
/// keyboard: at most a third of its length, and at least one edit, away.
fn suggestion<'a>(typed: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let allowed = (typed.chars().count() / 3).max(1);
    candidates
        .map(|candidate| (distance(typed, candidate), candidate))
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Damerau–Levenshtein distance (optimal string alignment): insertions, deletions,
/// substitutions and swaps of neighbours each cost one, so `bnid` is one from `bind`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use toml::de::DeTable;

    use super::*;
    use crate::config::RawConfig;
    use crate::config::shape::shape_of;

    fn findings(text: &str) -> Vec<String> {
        let value = toml::Value::Table(text.parse().unwrap());
        let places = Places::of_file(text, &DeTable::parse(text).unwrap());
        check(&value, &shape_of::<RawConfig>().unwrap(), &places)
            .into_iter()
            .map(|finding| match finding.place {
                Some(Place::File { line, column }) => format!("{line}:{column}: {}: {}", finding.key, finding.message),
                other => format!("{other:?}: {}: {}", finding.key, finding.message),
            })
            .collect()
    }

    #[test]
    fn every_error_of_a_file_is_found_in_one_walk_in_the_files_order() {
        let text = "\
shutdown_grace_ms = \"soon\"
[listeners.main]
bnid = \"127.0.0.1:7373\"
page_size = -1

[audit]
sink = \"fiel\"

[realms.default]
anonymous_roles = \"demo\"
[[realms.default.roles]]
grants = [\"demo.*\"]
[[realms.default.capabilities]]
id = \"x\"
kind = \"tool\"
handler = \"demo.echo\"
colour = \"blue\"
";
        assert_eq!(
            findings(text),
            [
                "1:21: shutdown_grace_ms: expected a non-negative integer, found a string",
                "2:1: listeners.main: missing key `bind`: expected a string",
                "3:1: listeners.main.bnid: unknown key; did you mean `bind`?",
                "4:13: listeners.main.page_size: -1 is out of range: expected a non-negative integer",
                "7:8: audit.sink: \"fiel\" is not accepted: expected one of \"stdout\", \"file\", \"off\"; did you mean \"file\"?",
                "10:19: realms.default.anonymous_roles: expected an array of strings, found a string",
                "11:1: realms.default.roles[0]: missing key `name`: expected a string",
                "17:1: realms.default.capabilities[0].colour: unknown key; this table takes id, kind, backend, handler, uri, mime_type, title, summary, input_schema, input_schema_file, output_schema, output_schema_file, annotations, requires_client, audit_arguments, url, timeout_ms, max_concurrent_calls, headers_from, disclose_principal, signing_key_env, http2, max_response_bytes, allow_plain_http, allow_url_elicitation, ca_file, proxy",
            ]
        );
    }

    #[test]
    fn a_clean_file_has_no_findings() {
        assert!(findings(crate::config::EMBEDDED_DEFAULT).is_empty());
    }

    #[test]
    fn suggestions_are_near_misses_only() {
        let keys = ["bind", "page_size", "max_body_bytes", "allowed_origins"];
        assert_eq!(suggestion("bnid", keys.into_iter()), Some("bind"));
        assert_eq!(suggestion("pagesize", keys.into_iter()), Some("page_size"));
        assert_eq!(suggestion("allowed_origin", keys.into_iter()), Some("allowed_origins"));
        assert_eq!(suggestion("colour", keys.into_iter()), None);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("ab", "ba"), 1);
    }
}
