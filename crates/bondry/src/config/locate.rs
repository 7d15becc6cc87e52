//! Where each key of a configuration was written: a line and column of the file, or the
//! environment variable that overrode it. Errors found later, by the shape check or by
//! the sections' semantic checks, name their key path; these places turn it into a spot
//! the operator can jump to.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// One step of a key path: a table's key or an array's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// A key path, displayed as the messages write it: `realms.default.roles[1].grants[0]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(Vec<Segment>);

impl KeyPath {
    pub fn key(&self, key: &str) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Key(key.to_owned()));
        next
    }

    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Index(index));
        next
    }

    fn parent(&self) -> Option<Self> {
        let (_, parent) = self.0.split_last()?;
        Some(Self(parent.to_vec()))
    }

    /// Reads a path back from its display; keys holding `.` or `[` cannot round-trip and
    /// are found by their longest readable prefix instead.
    fn parse(text: &str) -> Self {
        let mut segments = Vec::new();
        for part in text.split('.').filter(|part| !part.is_empty()) {
            let (key, mut indices) = match part.find('[') {
                Some(at) => (&part[..at], &part[at..]),
                None => (part, ""),
            };
            if !key.is_empty() {
                segments.push(Segment::Key(key.to_owned()));
            }
            while let Some(rest) = indices.strip_prefix('[') {
                let Some((index, after)) = rest.split_once(']') else { break };
                let Ok(index) = index.parse() else { break };
                segments.push(Segment::Index(index));
                indices = after;
            }
        }
        Self(segments)
    }
}

/// Keys as TOML writes them: bare when they can be, else quoted with `"`, `\` and control
/// characters escaped, so a key holding a dot names one key and a key holding an escape
/// sequence cannot drive the terminal an error is printed to.
impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) => {
                    if position > 0 {
                        f.write_str(".")?;
                    }
                    write_key(f, key)?;
                }
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

fn write_key(f: &mut fmt::Formatter<'_>, key: &str) -> fmt::Result {
    let bare = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        return f.write_str(key);
    }
    f.write_str("\"")?;
    for c in key.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            c if c.is_control() => write!(f, "\\u{:04X}", u32::from(c))?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// 1-based line and column (in characters) in the file.
    File { line: usize, column: usize },
    /// The `BONDRY__…` variable that set it.
    Env(String),
}

/// A key's place and its value's: an unknown key is shown where the key is written, a
/// mistyped value where the value is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Spot {
    key: Place,
    value: Place,
}

/// The places of every key path of one configuration.
#[derive(Debug, Clone, Default)]
pub struct Places(BTreeMap<String, Spot>);

impl Places {
    /// The places of the keys in `document`, the file `text` parsed.
    pub fn of_file(text: &str, document: &Spanned<DeTable<'_>>) -> Self {
        let lines = Lines::of(text);
        let mut places = Self::default();
        places.table(&lines, &KeyPath::default(), document.get_ref());
        places
    }

    fn table(&mut self, lines: &Lines<'_>, path: &KeyPath, table: &DeTable<'_>) {
        for (key, value) in table {
            let path = path.key(key.get_ref());
            let spot = Spot { key: lines.place(key.span()), value: lines.place(value.span()) };
            self.0.insert(path.to_string(), spot);
            self.record(lines, &path, value.get_ref());
        }
    }

    fn record(&mut self, lines: &Lines<'_>, path: &KeyPath, value: &DeValue<'_>) {
        match value {
            DeValue::Table(table) => self.table(lines, path, table),
            DeValue::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let path = path.index(index);
                    let place = lines.place(item.span());
                    self.0.insert(path.to_string(), Spot { key: place.clone(), value: place });
                    self.record(lines, &path, item.get_ref());
                }
            }
            _ => {}
        }
    }

    /// Records that the variable `name` set the value at `path`: it and everything below
    /// it now come from there.
    pub fn overridden(&mut self, path: &KeyPath, name: &str) {
        let text = path.to_string();
        let below = |key: &String| key.starts_with(&format!("{text}.")) || key.starts_with(&format!("{text}["));
        self.0.retain(|key, _| key != &text && !below(key));
        let place = Place::Env(name.to_owned());
        self.0.insert(text, Spot { key: place.clone(), value: place });
    }

    /// Where the key at `path` is written: its own place, or its nearest enclosing
    /// table's for a key the file lacks.
    pub fn key(&self, path: &KeyPath) -> Option<&Place> {
        self.nearest(path).map(|spot| &spot.key)
    }

    /// Where the value at `path` is written.
    pub fn value(&self, path: &KeyPath) -> Option<&Place> {
        self.nearest(path).map(|spot| &spot.value)
    }

    /// The place of the key path a section's message names (as text).
    pub fn named(&self, path: &str) -> Option<&Place> {
        self.value(&KeyPath::parse(path))
    }

    /// The spot of `path` or of its nearest enclosing key; never the file's start, which
    /// would place a refusal about no key of the file (`--listen`, a default) at line 1.
    fn nearest(&self, path: &KeyPath) -> Option<&Spot> {
        let mut current = Some(path.clone());
        while let Some(path) = current.filter(|path| !path.0.is_empty()) {
            if let Some(spot) = self.0.get(&path.to_string()) {
                return Some(spot);
            }
            current = path.parent();
        }
        None
    }
}

/// The place of the byte `offset` of `text`.
pub fn place_in(text: &str, offset: usize) -> Place {
    Lines::of(text).place(offset..offset)
}

/// Byte offsets to lines and columns.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn of(text: &'a str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(at, _)| at + 1)).collect();
        Self { text, starts }
    }

    fn place(&self, span: Range<usize>) -> Place {
        let at = span.start.min(self.text.len());
        let line = self.starts.partition_point(|start| *start <= at);
        let start = self.starts[line - 1];
        // A byte-order mark is no column an editor shows.
        let column =
            self.text.get(start..at).map_or(1, |before| before.trim_start_matches('\u{feff}').chars().count() + 1);
        Place::File { line, column }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(text: &str) -> Places {
        Places::of_file(text, &DeTable::parse(text).unwrap())
    }

    fn at(line: usize, column: usize) -> Option<Place> {
        Some(Place::File { line, column })
    }

    #[test]
    fn keys_and_values_are_placed_by_line_and_column() {
        let text =
            "[listeners.main]\nbind = 5\n\n[[realms.d.roles]]\nname = \"a\"\n[[realms.d.roles]]\n  \"ñame\" = \"b\"\n";
        let places = places(text);
        let bind = KeyPath::default().key("listeners").key("main").key("bind");
        assert_eq!(places.key(&bind).cloned(), at(2, 1));
        assert_eq!(places.value(&bind).cloned(), at(2, 8));
        assert_eq!(places.named("realms.d.roles[1].ñame").cloned(), at(7, 12));
        assert_eq!(places.key(&KeyPath::parse("realms.d.roles[1].ñame")).cloned(), at(7, 3));
        // A key the file lacks is placed at its table.
        assert_eq!(places.named("listeners.main.page_size"), places.named("listeners.main"));
        assert_eq!(places.named("nothing.here"), None, "what the file does not write is not placed at its start");
    }

    #[test]
    fn an_override_places_its_key_and_everything_below_at_the_variable() {
        let mut places = places("[listeners.main]\nbind = 5\n");
        places.overridden(&KeyPath::parse("listeners.main"), "BONDRY__LISTENERS__MAIN");
        let env = Some(Place::Env("BONDRY__LISTENERS__MAIN".into()));
        assert_eq!(places.named("listeners.main.bind").cloned(), env);
        assert_eq!(places.named("listeners").cloned(), at(1, 2));
    }

    #[test]
    fn paths_print_and_read_back_as_messages_write_them() {
        let path = KeyPath::default().key("realms").key("default").key("roles").index(1).key("grants").index(0);
        assert_eq!(path.to_string(), "realms.default.roles[1].grants[0]");
        assert_eq!(KeyPath::parse("realms.default.roles[1].grants[0]"), path);
        assert_eq!(KeyPath::parse("a[1][2]").to_string(), "a[1][2]");
        let odd = KeyPath::default().key("listeners").key("a.b").key("say \"\u{1b}[31m\"");
        assert_eq!(odd.to_string(), "listeners.\"a.b\".\"say \\\"\\u001B[31m\\\"\"");
    }
}
