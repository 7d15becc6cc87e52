//! An OpenAPI document as Bondry reads it: JSON or YAML text of at most
//! [`MAX_DOCUMENT_BYTES`], into one JSON value.
//!
//! JSON is read by `serde_json`; YAML by `saphyr-parser`'s events, built into the same
//! value by a loop that never recurses. Either way a document is refused, with where and
//! why, when it repeats a key in an object, nests deeper than [`MAX_DEPTH`], or (YAML)
//! holds an anchor, an alias, a tag, a key that is not a scalar, a number JSON cannot
//! write, or more than one document. Anchors and aliases are refused rather than expanded:
//! a few lines of aliases can stand for gigabytes.

use std::fmt;

use bondry_core::unique::UniqueKeys;
use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};
use serde::de::DeserializeSeed;
use serde_json::{Map, Value};

/// The largest document read: GitHub's REST description, one of the largest public ones,
/// is 13 MB.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// How deep arrays and objects may nest: `serde_json`'s own limit, held for YAML too.
pub const MAX_DEPTH: usize = 128;

/// Why a document cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentError {
    /// Larger than [`MAX_DOCUMENT_BYTES`].
    TooLarge { bytes: usize },
    /// Not UTF-8 text.
    NotText,
    /// Not a document Bondry reads, at 1-based `line` and `column`.
    At { line: usize, column: usize, why: String },
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { bytes } => write!(
                f,
                "the document is {bytes} bytes; Bondry reads documents of at most {MAX_DOCUMENT_BYTES} bytes (16 MiB)"
            ),
            Self::NotText => f.write_str("the document is not UTF-8 text"),
            Self::At { line, column, why } => write!(f, "line {line}, column {column}: {why}"),
        }
    }
}

impl std::error::Error for DocumentError {}

/// Which syntax a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
}

impl Syntax {
    /// JSON when the text's first visible character opens an object (a JSON document is
    /// also YAML, but `serde_json` reads it many times faster), else YAML.
    pub fn of(text: &str) -> Self {
        match text.trim_start_matches([' ', '\t', '\r', '\n']).starts_with('{') {
            true => Self::Json,
            false => Self::Yaml,
        }
    }
}

/// Reads `bytes`, a document in JSON or YAML, into one value.
pub fn read(bytes: &[u8]) -> Result<Value, DocumentError> {
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(DocumentError::TooLarge { bytes: bytes.len() });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| DocumentError::NotText)?;
    // A byte order mark says nothing JSON or YAML reads.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match Syntax::of(text) {
        Syntax::Json => json(text),
        Syntax::Yaml => yaml(text),
    }
}

fn json(text: &str) -> Result<Value, DocumentError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let at = |error: serde_json::Error| DocumentError::At {
        line: error.line(),
        column: error.column(),
        why: error.to_string().split(" at line ").next().unwrap_or_default().to_owned(),
    };
    let value = UniqueKeys.deserialize(&mut deserializer).map_err(at)?;
    deserializer.end().map_err(at)?;
    Ok(value)
}

/// A collection being built from YAML events.
enum Open {
    Sequence(Vec<Value>),
    /// An object, and the key whose value comes next, once read.
    Mapping(Map<String, Value>, Option<String>),
}

fn yaml(text: &str) -> Result<Value, DocumentError> {
    let mut open: Vec<Open> = Vec::new();
    let mut root = None;
    let mut documents = 0;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(scan_error)?;
        let refuse = |why: &str| Err(at(span, why.to_owned()));
        let value = match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => continue,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return refuse("the file holds more than one YAML document");
                }
                continue;
            }
            Event::Alias(_) => return refuse("YAML aliases are refused: write the value out where it is used"),
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) if anchor != 0 || tag.is_some() => {
                return refuse(if anchor != 0 { ANCHOR } else { TAG });
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if open.len() >= MAX_DEPTH {
                    return Err(at(span, format!("nested deeper than {MAX_DEPTH} levels")));
                }
                if let Some(Open::Mapping(_, None)) = open.last() {
                    return refuse("a key that is a sequence or a mapping; keys are scalars");
                }
                open.push(match event {
                    Event::SequenceStart(..) => Open::Sequence(Vec::new()),
                    _ => Open::Mapping(Map::new(), None),
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match open.pop() {
                Some(Open::Sequence(items)) => Value::Array(items),
                Some(Open::Mapping(object, _)) => Value::Object(object),
                None => return refuse("a collection closed that was never opened"),
            },
            Event::Scalar(_, _, anchor, tag) if anchor != 0 || tag.is_some() => {
                return refuse(if anchor != 0 { ANCHOR } else { TAG });
            }
            Event::Scalar(text, style, ..) => {
                if let Some(Open::Mapping(object, key @ None)) = open.last_mut() {
                    // A key is its text, whatever it would resolve to: `200:` names a status.
                    if object.contains_key(text.as_ref()) {
                        return Err(at(span, format!("the key {:?} is repeated", text.as_ref())));
                    }
                    *key = Some(text.into_owned());
                    continue;
                }
                scalar(&text, style).map_err(|why| at(span, why))?
            }
        };
        match open.last_mut() {
            Some(Open::Sequence(items)) => items.push(value),
            Some(Open::Mapping(object, key)) => {
                let key = key.take().ok_or_else(|| at(span, "a value without a key".to_owned()))?;
                object.insert(key, value);
            }
            None => root = Some(value),
        }
    }
    root.ok_or(DocumentError::At { line: 1, column: 1, why: "the document is empty".into() })
}

const ANCHOR: &str = "YAML anchors are refused: write the value out where it is used";
const TAG: &str = "YAML tags are refused: a document's values are plain JSON values";

/// A scalar's value by YAML 1.2's core schema: a plain scalar may be null, a boolean or
/// a number; a quoted or block one is always a string.
fn scalar(text: &str, style: ScalarStyle) -> Result<Value, String> {
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.to_owned()));
    }
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF" | ".nan" | ".NaN"
        | ".NAN" => return Err(format!("{text} is a number JSON cannot write")),
        _ => number(text).unwrap_or_else(|| Value::String(text.to_owned())),
    })
}

/// A plain scalar that is a number by YAML 1.2's core schema: decimal, `0o` octal or
/// `0x` hexadecimal integers, and decimal floats.
fn number(text: &str) -> Option<Value> {
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    if let Some(octal) = text.strip_prefix("0o") {
        return digits(octal, 8).then(|| u64::from_str_radix(octal, 8).ok().map(Value::from)).flatten();
    }
    if let Some(hex) = text.strip_prefix("0x") {
        return digits(hex, 16).then(|| u64::from_str_radix(hex, 16).ok().map(Value::from)).flatten();
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits(unsigned, 10) {
        return match text.parse::<i64>() {
            Ok(integer) => Some(Value::from(integer)),
            Err(_) => text.trim_start_matches('+').parse::<u64>().ok().map(Value::from),
        };
    }
    // `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, Some(exponent)),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            (whole.is_empty() && digits(fraction, 10))
                || (digits(whole, 10) && (fraction.is_empty() || digits(fraction, 10)))
        }
        None => digits(mantissa, 10),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e), 10));
    if !(mantissa_ok && exponent_ok) {
        return None;
    }
    text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number)
}

fn scan_error(error: ScanError) -> DocumentError {
    let marker = error.marker();
    DocumentError::At { line: marker.line(), column: marker.col() + 1, why: error.info().to_owned() }
}

fn at(span: Span, why: String) -> DocumentError {
    DocumentError::At { line: span.start.line(), column: span.start.col() + 1, why }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn why(text: &str) -> String {
        read(text.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn json_and_yaml_read_into_the_same_value() {
        let json_text = r#"{"openapi": "3.1.0", "paths": {"/pets": {"get": {"responses": {"200": {"description": "ok"}}}}}, "n": [1, -2, 2.5, true, null]}"#;
        let yaml_text = "openapi: 3.1.0\npaths:\n  /pets:\n    get:\n      responses:\n        200:\n          description: ok\nn: [1, -2, 2.5, true, ~]\n";
        assert_eq!(Syntax::of(json_text), Syntax::Json);
        assert_eq!(Syntax::of(yaml_text), Syntax::Yaml);
        let expected = json!({"openapi": "3.1.0", "paths": {"/pets": {"get": {"responses": {"200": {"description": "ok"}}}}}, "n": [1, -2, 2.5, true, null]});
        assert_eq!(read(json_text.as_bytes()).unwrap(), expected);
        assert_eq!(read(format!("\u{feff}{json_text}").as_bytes()).unwrap(), expected, "after a byte order mark");
        assert_eq!(read(yaml_text.as_bytes()).unwrap(), expected);
    }

    #[test]
    fn yaml_scalars_resolve_by_the_core_schema() {
        let text = "a: '1'\nb: \"true\"\nc: 0x1F\nd: 0o17\ne: 1e3\nf: .5\ng: +12\nh: 1.2.3\ni: yes\nj: |\n  text\n";
        assert_eq!(
            read(text.as_bytes()).unwrap(),
            json!({"a": "1", "b": "true", "c": 31, "d": 15, "e": 1000.0, "f": 0.5, "g": 12, "h": "1.2.3", "i": "yes", "j": "text\n"})
        );
    }

    #[test]
    fn anchors_aliases_tags_and_repeated_keys_are_refused_with_where() {
        assert_eq!(
            why("a: &x {b: 1}\nc: *x\n"),
            "line 1, column 4: YAML anchors are refused: write the value out where it is used"
        );
        assert_eq!(
            why("a: !custom 1\n"),
            "line 1, column 4: YAML tags are refused: a document's values are plain JSON values"
        );
        assert_eq!(why("a: 1\na: 2\n"), "line 2, column 1: the key \"a\" is repeated");
        assert_eq!(why(r#"{"a": 1, "a": 2}"#), "line 1, column 12: the key \"a\" is repeated");
        assert_eq!(why("? [a]\n: 1\n"), "line 1, column 3: a key that is a sequence or a mapping; keys are scalars");
        assert_eq!(why("a: .nan\n"), "line 1, column 4: .nan is a number JSON cannot write");
        assert_eq!(why("a: 1\n---\nb: 2\n"), "line 2, column 1: the file holds more than one YAML document");
        assert!(why("a: [1, 2\n").starts_with("line "), "{}", why("a: [1, 2\n"));
        assert_eq!(why(""), "line 1, column 1: the document is empty");
    }

    #[test]
    fn a_document_too_large_too_deep_or_not_text_is_refused() {
        let large = vec![b' '; MAX_DOCUMENT_BYTES + 1];
        assert_eq!(read(&large).unwrap_err(), DocumentError::TooLarge { bytes: MAX_DOCUMENT_BYTES + 1 });
        assert_eq!(read(b"a: \xff\n").unwrap_err(), DocumentError::NotText);
        let deep_yaml = format!("{}1{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(why(&deep_yaml).ends_with(&format!("nested deeper than {MAX_DEPTH} levels")), "{}", why(&deep_yaml));
        let deep_json = format!("{{\"a\": {}1{}}}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(why(&deep_json).contains("recursion limit exceeded"), "{}", why(&deep_json));
    }
}
