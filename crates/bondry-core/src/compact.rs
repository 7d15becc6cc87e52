//! Compact JSON text, byte for byte what `serde_json` writes, with strings scanned sixteen
//! bytes at a time.
//!
//! `serde_json` looks up every byte of a string on its own to see whether it needs an
//! escape; the calls Bondry answers carry kilobytes of their caller's text, written into
//! each answer more than once, so the scan was a tenth of a relayed call's instructions.
//! The canonical form ([`crate::canon`]) escapes strings the same way and shares the scan.

use serde_json::Value;

/// Where JSON text goes: a buffer, or a hasher that never holds it whole.
pub(crate) trait Sink {
    fn put(&mut self, bytes: &[u8]);

    /// Room for `additional` more bytes, where room is held: a long string is then put
    /// in pieces without the buffer growing under each.
    fn reserve(&mut self, _additional: usize) {}
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }
}

/// Appends the compact JSON text of `value` to `out`: members in their order, numbers as
/// `serde_json` prints them.
pub fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Number(number) => {
            // Numbers are short; serde_json's own printing keeps them exactly its form.
            serde_json::to_writer(&mut *out, number).expect("writing to a Vec cannot fail");
        }
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
            out.put(b"{");
            for (index, (name, item)) in map.iter().enumerate() {
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

/// About how long the text of `value` is (its strings as they are, before any escape),
/// found without reading them: a buffer of that size takes the text without growing, and
/// each growth copies what was written so far.
pub fn estimate(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|item| estimate(item) + 1).sum::<usize>(),
        Value::Object(map) => 2 + map.iter().map(|(name, item)| name.len() + 4 + estimate(item)).sum::<usize>(),
    }
}

/// The compact JSON text of `value`.
pub fn to_string(value: &Value) -> String {
    let mut text = Vec::with_capacity(estimate(value));
    write(value, &mut text);
    // Every byte written is ASCII or comes whole from a `str`.
    String::from_utf8(text).expect("JSON text is UTF-8")
}

/// Appends `text` as a JSON string to `out`.
pub fn write_str(text: &str, out: &mut Vec<u8>) {
    write_string(text, out);
}

/// A string as JSON (and RFC 8785) write it: quotes and backslashes escaped, control
/// characters as their short escape or `\u00xx`, everything else as it is.
pub(crate) fn write_string(text: &str, out: &mut impl Sink) {
    out.reserve(text.len() + 2);
    out.put(b"\"");
    let bytes = text.as_bytes();
    let mut clean = 0;
    let mut at = 0;
    while at < bytes.len() {
        // Sixteen bytes at a time while none needs an escape, as in most text.
        while let Some(Ok(words)) = bytes.get(at..at + 16).map(<[u8; 16]>::try_from)
            && !needs_escape(u128::from_le_bytes(words))
        {
            at += 16;
        }
        let Some(&byte) = bytes.get(at) else { break };
        let unicode;
        let escaped: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => {
                unicode = [b'\\', b'u', b'0', b'0', DIGITS[usize::from(byte >> 4)], DIGITS[usize::from(byte & 0x0f)]];
                &unicode
            }
            _ => {
                at += 1;
                continue;
            }
        };
        out.put(&bytes[clean..at]);
        out.put(escaped);
        at += 1;
        clean = at;
    }
    out.put(&bytes[clean..]);
    out.put(b"\"");
}

/// Lowercase hex digits, for `\u00xx` escapes and digests.
pub(crate) const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Whether any of the sixteen bytes of `words` is a control character, a quote or a
/// backslash (the bit tricks find a byte below a bound, or a zero byte, in a word; the
/// three are tested at once, without a branch between them).
fn needs_escape(words: u128) -> bool {
    const ONES: u128 = u128::MAX / 255;
    const HIGHS: u128 = ONES << 7;
    let quote = words ^ (ONES * u128::from(b'"'));
    let backslash = words ^ (ONES * u128::from(b'\\'));
    let control = words.wrapping_sub(ONES * 0x20) & !words;
    let found = control | (quote.wrapping_sub(ONES) & !quote) | (backslash.wrapping_sub(ONES) & !backslash);
    found & HIGHS != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_written_as_serde_json_writes_them_at_every_offset() {
        // Each character that needs an escape, and some that do not, at every place in
        // and around a sixteen-byte block, and with a second one after it.
        for special in [
            '"', '\\', '\n', '\r', '\t', '\u{8}', '\u{c}', '\u{0}', '\u{1}', '\u{1f}', '\u{7f}', 'é', '世', '😀', ' ',
            '/',
        ] {
            for before in 0..34 {
                for after in [0, 1, 7, 8, 9, 15, 16, 17] {
                    let text = format!("{}{special}{}", "a".repeat(before), "b".repeat(after));
                    assert_eq!(to_string(&json!(text)), serde_json::to_string(&text).unwrap(), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn every_byte_below_0x80_is_written_as_serde_json_writes_it() {
        let text: String = (0u8..0x80).map(char::from).cycle().take(1024).collect();
        assert_eq!(to_string(&json!(text)), serde_json::to_string(&text).unwrap());
    }

    #[test]
    fn the_estimate_covers_text_without_escapes_or_numbers_within_a_few_bytes() {
        let value = json!({"text": "x".repeat(100), "list": [true, null, "ab"]});
        let length = to_string(&value).len();
        assert_eq!(length, 135);
        assert!((length..length + 8).contains(&estimate(&value)), "{}", estimate(&value));
    }

    #[test]
    fn values_keep_their_member_order_and_serde_json_numbers() {
        let value = json!({
            "z": [1, -2, 1.5, 1e21, 0.1, -0.0, u64::MAX, i64::MIN, 3.0],
            "a": {"nested": [null, true, false, {}, [], ""]},
            "\u{1}key\"": "x".repeat(40),
        });
        assert_eq!(to_string(&value), serde_json::to_string(&value).unwrap());
    }
}
