//! The Base64 sentinel codec for header values: `=?base64?{standard padded Base64}?=`.
//!
//! Values that cannot travel as a plain header (non-ASCII, control characters, leading or
//! trailing whitespace, or text that itself looks like a sentinel) are sent encoded.
//! Decoding is strict: only canonical padded standard Base64 of valid UTF-8 is accepted,
//! so two different header values never decode to the same name.

use std::borrow::Cow;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// Why a header value could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentinelError {
    /// The payload is not canonical padded standard Base64.
    NotBase64,
    /// The decoded bytes are not UTF-8.
    NotUtf8,
}

/// Decodes a header value that has already been trimmed of SP/HTAB: a sentinel is
/// decoded, anything else is returned as is.
pub fn decode(value: &str) -> Result<Cow<'_, str>, SentinelError> {
    let Some(payload) = value.strip_prefix(PREFIX).and_then(|rest| rest.strip_suffix(SUFFIX)) else {
        return Ok(Cow::Borrowed(value));
    };
    // The engine rejects missing padding and non-zero trailing bits, which keeps the
    // encoding canonical: one value, one spelling.
    let bytes = STANDARD.decode(payload).map_err(|_| SentinelError::NotBase64)?;
    String::from_utf8(bytes).map(Cow::Owned).map_err(|_| SentinelError::NotUtf8)
}

/// Encodes `value` for a header, using the sentinel only when the plain form cannot carry it.
pub fn encode(value: &str) -> Cow<'_, str> {
    let needs_sentinel = !value.bytes().all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
        || value.starts_with([' ', '\t'])
        || value.ends_with([' ', '\t'])
        || (value.starts_with(PREFIX) && value.ends_with(SUFFIX));
    if needs_sentinel {
        Cow::Owned(format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(value)))
    } else {
        Cow::Borrowed(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for value in ["", " echo ", "Hello, 世界", "=?base64?YQ==?=", "line\nbreak", "plain.name"] {
            let encoded = encode(value);
            assert_eq!(decode(&encoded).unwrap(), value, "{value:?} via {encoded:?}");
        }
    }

    #[test]
    fn encodes_only_what_needs_it() {
        assert_eq!(encode("demo.echo"), "demo.echo");
        assert_eq!(encode(""), "");
        assert_eq!(encode(" echo "), "=?base64?IGVjaG8g?=");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    }

    #[test]
    fn decodes_spec_vectors() {
        assert_eq!(decode("=?base64?IHBhZGRlZCA=?=").unwrap(), " padded ");
        assert_eq!(decode("=?base64??=").unwrap(), "");
    }

    #[test]
    fn rejects_non_canonical_payloads() {
        assert_eq!(decode("=?base64?YQ?="), Err(SentinelError::NotBase64), "unpadded");
        assert_eq!(decode("=?base64?YR==?="), Err(SentinelError::NotBase64), "non-zero trailing bits");
        assert_eq!(decode("=?base64?/w==?="), Err(SentinelError::NotUtf8), "invalid UTF-8");
        assert_eq!(decode("=?base64?YQ-_?="), Err(SentinelError::NotBase64), "URL-safe alphabet");
        assert_eq!(decode("=?base64?Y Q==?="), Err(SentinelError::NotBase64), "space inside");
        assert_eq!(decode("=?base64?*===?="), Err(SentinelError::NotBase64), "non-alphabet");
    }

    #[test]
    fn sentinel_markers_are_case_sensitive() {
        assert_eq!(decode("=?BASE64?YQ==?=").unwrap(), "=?BASE64?YQ==?=");
    }
}
