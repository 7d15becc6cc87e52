//! Canonical JSON (RFC 8785) and SHA-256 digests of it.
//!
//! Content hashes and audit digests must be stable across processes and languages, so
//! they hash the RFC 8785 form (sorted keys, ECMAScript number formatting), never serde's.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The RFC 8785 canonical text of `value`.
pub fn canonical(value: &Value) -> String {
    // Serialising a `Value` cannot fail: its keys are strings and its numbers finite.
    serde_json_canonicalizer::to_string(value).expect("a serde_json::Value always canonicalises")
}

/// Lowercase hex of the SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of the SHA-256 of the canonical form of `value`.
pub fn digest(value: &Value) -> String {
    sha256_hex(canonical(value).as_bytes())
}

/// Lowercase hex encoding.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 0x0f)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn digest_is_sha256_of_canonical_text() {
        assert_eq!(digest(&json!({})), "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    }
}
