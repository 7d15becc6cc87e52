//! Sealed tokens: compact JWE (`alg: dir`, `enc: A256GCM`, `kid`) under a realm's key set.
//!
//! Session ids are sealed so they cannot be forged, read or moved to another realm or
//! principal. The IV comes from the injected CSPRNG only: instances share keys, and a
//! repeated GCM nonce under one key would break confidentiality.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key as AesKey, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bondry_core::realm::{Key, KeySet};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Csprng;

/// Tokens longer than this are refused before any decoding.
pub const MAX_TOKEN_LEN: usize = 4096;

#[derive(Deserialize)]
struct OpenedHeader {
    alg: String,
    enc: String,
    kid: String,
}

#[derive(Serialize)]
struct Header<'a> {
    alg: &'a str,
    enc: &'a str,
    kid: &'a str,
}

/// Seals `claims` under the active key.
pub fn seal(keys: &KeySet, claims: &impl Serialize, rng: &mut dyn Csprng) -> String {
    let header = Header { alg: "dir", enc: "A256GCM", kid: &keys.active.id };
    let protected = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).expect("headers serialise"));
    let plaintext = serde_json::to_vec(claims).expect("claims serialise");
    let mut iv = [0u8; 12];
    rng.fill(&mut iv);
    let sealed = cipher(&keys.active)
        .encrypt(Nonce::from_slice(&iv), Payload { msg: &plaintext, aad: protected.as_bytes() })
        .expect("AES-GCM encrypts any message of this size");
    let (ciphertext, tag) = sealed.split_at(sealed.len() - 16);
    format!(
        "{protected}..{}.{}.{}",
        URL_SAFE_NO_PAD.encode(iv),
        URL_SAFE_NO_PAD.encode(ciphertext),
        URL_SAFE_NO_PAD.encode(tag)
    )
}

/// Opens a token sealed under any key of the set; `None` for anything that does not open.
pub fn open<T: DeserializeOwned>(keys: &KeySet, token: &str) -> Option<T> {
    open_within(keys, token, MAX_TOKEN_LEN)
}

/// [`open`], for tokens of at most `max_len` bytes.
pub fn open_within<T: DeserializeOwned>(keys: &KeySet, token: &str, max_len: usize) -> Option<T> {
    if token.len() > max_len {
        return None;
    }
    let mut parts = token.split('.');
    let (protected, encrypted_key, iv, ciphertext, tag) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !encrypted_key.is_empty() {
        return None;
    }
    let header_json = URL_SAFE_NO_PAD.decode(protected).ok()?;
    // Owned: a header may escape its strings (`"cl\u00e9"`), which borrowing cannot read.
    let header: OpenedHeader = serde_json::from_slice(&header_json).ok()?;
    if header.alg != "dir" || header.enc != "A256GCM" {
        return None;
    }
    let key = std::iter::once(&keys.active).chain(&keys.retired).find(|key| key.id == header.kid)?;
    let iv = URL_SAFE_NO_PAD.decode(iv).ok().filter(|iv| iv.len() == 12)?;
    let mut sealed = URL_SAFE_NO_PAD.decode(ciphertext).ok()?;
    sealed.extend(URL_SAFE_NO_PAD.decode(tag).ok().filter(|tag| tag.len() == 16)?);
    let plaintext =
        cipher(key).decrypt(Nonce::from_slice(&iv), Payload { msg: &sealed, aad: protected.as_bytes() }).ok()?;
    serde_json::from_slice(&plaintext).ok()
}

fn cipher(key: &Key) -> Aes256Gcm {
    Aes256Gcm::new(AesKey::<Aes256Gcm>::from_slice(&key.secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic source for tests only.
    struct Counter(pub u8);

    impl Csprng for Counter {
        fn fill(&mut self, dest: &mut [u8]) {
            for byte in dest {
                self.0 = self.0.wrapping_add(1);
                *byte = self.0;
            }
        }
    }

    fn keys_of(id: &str, fill: u8) -> KeySet {
        KeySet { active: Key { id: id.into(), secret: [fill; 32] }, retired: Vec::new() }
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Claims {
        sub: String,
    }

    #[test]
    fn round_trips_and_rotates() {
        let claims = Claims { sub: "anonymous".into() };
        let old = keys_of("k1", 1);
        let token = seal(&old, &claims, &mut Counter(0));
        assert!(token.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII: {token}");
        assert_eq!(token.split('.').count(), 5);
        assert_eq!(open::<Claims>(&old, &token), Some(Claims { sub: "anonymous".into() }));
        let mut rotated = keys_of("k2", 2);
        assert_eq!(open::<Claims>(&rotated, &token), None, "unknown kid");
        rotated.retired.push(old.active.clone());
        assert_eq!(open::<Claims>(&rotated, &token), Some(claims));
    }

    #[test]
    fn tampering_and_garbage_do_not_open() {
        let keys = keys_of("k1", 1);
        let token = seal(&keys, &Claims { sub: "a".into() }, &mut Counter(0));
        let mut flipped = token.clone().into_bytes();
        let last = flipped.len() - 3;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        for bad in [flipped.as_str(), "", "a.b.c.d.e", "....", &"x".repeat(5000), &token.replacen("..", ".x.", 1)] {
            assert_eq!(open::<Claims>(&keys, bad), None, "{bad}");
        }
        let other = keys_of("k1", 9);
        assert_eq!(open::<Claims>(&other, &token), None, "same kid, other secret");
    }

    #[test]
    fn ivs_come_from_the_random_source() {
        let keys = keys_of("k1", 1);
        let a = seal(&keys, &Claims { sub: "a".into() }, &mut Counter(0));
        let b = seal(&keys, &Claims { sub: "a".into() }, &mut Counter(100));
        assert_ne!(a, b);
    }
}
