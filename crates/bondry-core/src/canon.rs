//! Canonical JSON (RFC 8785) and SHA-256 digests of it.
//!
//! Content hashes and audit digests must be stable across processes and languages, so
//! they hash the RFC 8785 form (sorted keys, ECMAScript number formatting), never serde's.
//!
//! The form is written straight into the hasher: an audit record digests the arguments
//! and the result of every call, and building the text first (as a general serialiser
//! must, buffering and re-reading every object to sort it) cost more than the call.
//! Numbers other than exact integers take ECMAScript's shortest form from `ryu-js`.

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

use crate::compact::{DIGITS, Sink, write_string};

/// The RFC 8785 canonical text of `value`.
pub fn canonical(value: &Value) -> String {
    let mut text = Vec::new();
    write(value, &mut text);
    // Every byte written is ASCII or comes whole from a `str`.
    String::from_utf8(text).expect("canonical text is UTF-8")
}

/// Lowercase hex of the SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of the SHA-256 of the canonical form of `value`.
pub fn digest(value: &Value) -> String {
    let mut hasher = Sha256::new();
    write(value, &mut hasher);
    hex(&hasher.finalize())
}

/// Lowercase hex encoding.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 0x0f)] as char);
    }
    out
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

fn write(value: &Value, out: &mut impl Sink) {
    match value {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.put(b"[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.put(b",");
                }
                write(item, out);
            }
            out.put(b"]");
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            // RFC 8785 §3.2.3: members sorted by their names' UTF-16 code units.
            entries.sort_unstable_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.put(b"{");
            for (index, (name, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.put(b",");
                }
                write_string(name, out);
                out.put(b":");
                write(item, out);
            }
            out.put(b"}");
        }
    }
}

/// RFC 8785 §3.2.2.3: a number as ECMAScript prints the double it stands for. An integer
/// a double holds exactly prints as its digits; any other goes through the double.
fn write_number(number: &Number, out: &mut impl Sink) {
    const EXACT: u64 = 1 << 53;
    let mut digits = itoa::Buffer::new();
    if let Some(integer) = number.as_u64().filter(|integer| *integer <= EXACT) {
        out.put(digits.format(integer).as_bytes());
    } else if let Some(integer) = number.as_i64().filter(|integer| integer.unsigned_abs() <= EXACT) {
        out.put(digits.format(integer).as_bytes());
    } else if let Some(double) = number.as_f64() {
        // A `Value`'s numbers are finite.
        out.put(ryu_js::Buffer::new().format_finite(double).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_escaped_as_rfc_8785_says_at_every_offset() {
        // RFC 8785 escapes strings as serde_json writes them; each character that needs an
        // escape is tried at every place in and around an eight-byte word.
        for special in ['"', '\\', '\n', '\u{1}', '\u{1f}', '\u{7f}', 'é', '世', ' ', '/'] {
            for before in 0..17 {
                for after in [0, 1, 7, 8, 9] {
                    let text = format!("{}{special}{}", "a".repeat(before), "b".repeat(after));
                    assert_eq!(canonical(&json!(text)), serde_json::to_string(&text).unwrap(), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn keys_are_sorted_and_numbers_use_ecmascript_form() {
        let value = json!({"b": 1.0, "a": [1e21, 0.1, -0.0], "c": "é"});
        assert_eq!(canonical(&value), r#"{"a":[1e+21,0.1,0],"b":1,"c":"é"}"#);
    }

    #[test]
    fn integers_beyond_double_precision_take_their_double_form() {
        assert_eq!(canonical(&json!([u64::MAX, i64::MIN])), "[18446744073709552000,-9223372036854776000]");
    }

    #[test]
    fn strings_escape_what_ecmascript_escapes() {
        let value = json!({"\u{1}\u{1f}\u{7f}": "a\"b\\c\n\r\t\u{8}\u{c}/é😀"});
        assert_eq!(canonical(&value), "{\"\\u0001\\u001f\u{7f}\":\"a\\\"b\\\\c\\n\\r\\t\\b\\f/é😀\"}");
    }

    #[test]
    fn members_sort_by_utf16_code_units() {
        // U+FB01 sorts before U+1F600 in UTF-8 and by code point, after it in UTF-16.
        let value = json!({"\u{1f600}": 1, "\u{fb01}": 2, "b": 3, "a": {"d": 4, "c": 5}, "": 6});
        assert_eq!(canonical(&value), "{\"\":6,\"a\":{\"c\":5,\"d\":4},\"b\":3,\"\u{1f600}\":1,\"\u{fb01}\":2}");
    }

    #[test]
    fn matches_a_general_rfc8785_serialiser() {
        let values = [
            json!({"numbers": [0, -0.0, 1.5, -1e-7, 1e-6, 123456789012345680000.0, 1e21, 9007199254740993u64,
                -9007199254740993i64, 9007199254740992u64, 5e-324, 1.7976931348623157e308, 0.1]}),
            // RFC 8785's own numbers, as text: some have more digits than a double keeps.
            serde_json::from_str("[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001]").unwrap(),
            json!({"nested": [{"z": null, "y": [true, false, {}], "x": []}, "\u{0}\u{2028}"], "": {"": ""}}),
            json!([[[[]]], "text", {"k\u{7}": "v\u{1b}"}]),
        ];
        for value in values {
            let general = serde_json_canonicalizer::to_string(&value).unwrap();
            assert_eq!(canonical(&value), general, "{value}");
            assert_eq!(digest(&value), sha256_hex(general.as_bytes()));
        }
    }

    #[test]
    fn digest_is_sha256_of_canonical_text() {
        assert_eq!(digest(&json!({})), "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    }
}
