//! The sealing codec (`bondry_mcp_proto::seal`, compact JWE with `alg: dir`,
//! `enc: A256GCM` and a `kid`) against an independent JOSE implementation, and key
//! rotation through a realm's key set.
//!
//! The fixed tokens below were made once, by hand, with the Python library `joserfc`
//! 1.6.5 (`jwe.encrypt_compact(protected, plaintext, OctKey.import_key(bytes(range(32))))`),
//! and `BONDRY_SEALED` (what Bondry seals with the IV 01 02 … 0c) was opened by the same
//! library (`jwe.decrypt_compact(token, key)`), which gave back the header
//! `{"alg":"dir","enc":"A256GCM","kid":"vector-key"}` and the plaintext
//! `{"list":[1,"two",null],"n":7,"sub":"alice","text":"héllo ✓"}`. CI has no Python, so the vectors are
//! pinned here rather than produced at test time.

use bondry_core::realm::{Key, KeySet};
use bondry_mcp_proto::{Csprng, seal, state};
use serde_json::{Value, json};

/// The key of every vector: the bytes 00 01 … 1f.
fn vector_key(id: &str) -> Key {
    let mut secret = [0u8; 32];
    for (i, byte) in secret.iter_mut().enumerate() {
        *byte = i as u8;
    }
    Key { id: id.into(), secret }
}

fn only(key: Key) -> KeySet {
    KeySet { active: key, retired: Vec::new() }
}

fn other_key(id: &str, fill: u8) -> Key {
    Key { id: id.into(), secret: [fill; 32] }
}

/// The claims of `FROM_JOSERFC` and `BONDRY_SEALED`, in the order Bondry serialises them
/// for `BONDRY_SEALED` (serde_json keeps the order members were written in).
fn vector_claims() -> Value {
    json!({"list": [1, "two", null], "n": 7, "sub": "alice", "text": "héllo ✓"})
}

/// `joserfc`: `{"alg":"dir","enc":"A256GCM","kid":"vector-key"}` over the UTF-8 of
/// `json.dumps(claims, separators=(",", ":"), ensure_ascii=False)`, where `claims` holds
/// the members of `vector_claims` in the order sub, n, list, text (member order does not
/// matter to opening).
const FROM_JOSERFC: &str = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoidmVjdG9yLWtleSJ9..G8ncruVp2_ZvToWJ.\
     WWMQZn7qYWVQF_RcqO3mtEhcM0prhqwx75yDPqJ2QT2ORkwiCqUkaEJacaG8mYE4wL6OSRhwJH8GuiTO-kfN.\
     1GD3KK2NICyq9Gj_LGwITQ";

/// `joserfc`: `{"sub":"alice","n":7,"list":[1,"two",null],"text":"h\u00e9llo"}` (Python's
/// `json.dumps` with `ensure_ascii=True`: the plaintext escapes `é`).
const FROM_JOSERFC_ASCII: &str = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoidmVjdG9yLWtleSJ9..ny4zS1D8uNayNpKP.\
     od32D_r2Eq_WaAIRR3N8F59MIApXEXBx9BmiRZMWBIrND7gEf-E96pyrK60-9ZSCHabEexNR4lx5kEu2CJrf.\
     UtEeUqFmZj6Hto7p_25Tqg";

/// `joserfc`: `{"sub":"alice"}` with `typ` and `cty` in the protected header as well.
const FROM_JOSERFC_TYP: &str = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoidmVjdG9yLWtleSIs\
     InR5cCI6IkpPU0UiLCJjdHkiOiJqc29uIn0..\
     MpS6-rQnWETw8yub.cCd6rsQ0fd-_6TaKjWH-.exWw6n0pNIoFq6mQkD4g_g";

/// `joserfc`: `{"sub":"alice"}` under the same key, wrapped with `A256KW` instead of used
/// directly, so the token carries an encrypted key: not one Bondry seals.
const FROM_JOSERFC_KEY_WRAPPED: &str = "eyJhbGciOiJBMjU2S1ciLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoidmVjdG9yLWtleSJ9.\
     _Hl0TjS7iFZOlvEMtisGtI-88-lwZOilOGeYMjudl-emrF1_BhcWMA.AxiunLi_NgzApMeO.mZgRmuXY7nlhm8dw7Q3Y.\
     fNnfourMSJ6X-YrlAo4Nbw";

/// `joserfc`: `{"sub":"alice"}` with kid `clé`, which its header escapes as `"cl\u00e9"`.
const FROM_JOSERFC_ESCAPED_KID: &str = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoiY2xcdTAwZTkifQ..\
     zIQGiQsfrCRxLVZZ.40DPvQTyS1AaJu9m8pTT.0NU_L1Z1xXZBFghkPl2rvA";

/// What Bondry seals for `vector_claims` under `vector_key("vector-key")` with the IV
/// 01 02 … 0c; `joserfc` opened it (see the module comment).
const BONDRY_SEALED: &str = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoidmVjdG9yLWtleSJ9..AQIDBAUGBwgJCgsM.\
     fsg2vJ_g0rwXk09lZGSFCm4tlJL7MHznz33DE7KUBbDmxqH9D9mF_NWOlsexvoApvMxtiBcwWh1ZXe5R_CNJ.\
     4M3dqAmuC0sgbAv3QHSBYw";

/// A deterministic IV source: 1, 2, 3, … from `start + 1`.
struct Counter(u8);

impl Csprng for Counter {
    fn fill(&mut self, dest: &mut [u8]) {
        for byte in dest {
            self.0 = self.0.wrapping_add(1);
            *byte = self.0;
        }
    }
}

#[test]
fn opens_what_an_independent_implementation_sealed() {
    let keys = only(vector_key("vector-key"));
    assert_eq!(seal::open::<Value>(&keys, FROM_JOSERFC), Some(vector_claims()));
    let mut ascii = vector_claims();
    ascii["text"] = json!("héllo");
    assert_eq!(seal::open::<Value>(&keys, FROM_JOSERFC_ASCII), Some(ascii));
    // Header members Bondry does not use are ignored.
    assert_eq!(seal::open::<Value>(&keys, FROM_JOSERFC_TYP), Some(json!({"sub": "alice"})));
    // Only `alg: dir` opens: a token with an encrypted key does not, even under the right key.
    assert_eq!(seal::open::<Value>(&keys, FROM_JOSERFC_KEY_WRAPPED), None);
    // The key is found by `kid`: the same secret under another id does not open it, nor
    // another secret under the same id.
    assert_eq!(seal::open::<Value>(&only(vector_key("other-id")), FROM_JOSERFC), None);
    assert_eq!(seal::open::<Value>(&only(other_key("vector-key", 9)), FROM_JOSERFC), None);
}

#[test]
fn opens_a_header_with_escaped_strings() {
    let keys = only(vector_key("clé"));
    assert_eq!(seal::open::<Value>(&keys, FROM_JOSERFC_ESCAPED_KID), Some(json!({"sub": "alice"})));
}

#[test]
fn seals_what_an_independent_implementation_opens() {
    let keys = only(vector_key("vector-key"));
    let token = seal::seal(&keys, &vector_claims(), &mut Counter(0));
    assert_eq!(token, BONDRY_SEALED, "{token}");
    let header = token.split('.').next().unwrap();
    let header: Value = serde_json::from_slice(&base64_url(header)).unwrap();
    assert_eq!(header, json!({"alg": "dir", "enc": "A256GCM", "kid": "vector-key"}));
    assert_eq!(token.split('.').nth(1), Some(""), "no encrypted key with alg dir");
    assert_eq!(seal::open::<Value>(&keys, &token), Some(vector_claims()));
}

#[test]
fn retired_keys_open_and_only_the_active_key_seals() {
    let old = other_key("k-old", 1);
    let new = other_key("k-new", 2);
    let before = seal::seal(&only(old.clone()), &json!({"sub": "alice"}), &mut Counter(0));

    // Rotated without keeping the old key: tokens sealed before no longer open.
    let rotated = only(new.clone());
    assert_eq!(seal::open::<Value>(&rotated, &before), None);

    // Rotated, the old key retired: they open; new tokens are sealed under the new key.
    let rotated = KeySet { active: new.clone(), retired: vec![other_key("k-older", 3), old.clone()] };
    assert_eq!(seal::open::<Value>(&rotated, &before), Some(json!({"sub": "alice"})));
    let after = seal::seal(&rotated, &json!({"sub": "bob"}), &mut Counter(100));
    let header: Value = serde_json::from_slice(&base64_url(after.split('.').next().unwrap())).unwrap();
    assert_eq!(header["kid"], "k-new");
    assert_eq!(seal::open::<Value>(&only(new.clone()), &after), Some(json!({"sub": "bob"})));
    assert_eq!(seal::open::<Value>(&only(old.clone()), &after), None);

    // The independent vector opens from the retired list too.
    let with_vector_retired = KeySet { active: new.clone(), retired: vec![vector_key("vector-key")] };
    assert_eq!(seal::open::<Value>(&with_vector_retired, FROM_JOSERFC), Some(vector_claims()));

    // A retired key whose secret changed under the same id does not open it.
    let tampered = KeySet { active: new, retired: vec![other_key("k-old", 9)] };
    assert_eq!(seal::open::<Value>(&tampered, &before), None);
}

#[test]
fn request_states_survive_a_rotation_that_retires_their_key() {
    let arguments = json!({"rounds": 3});
    let binding = state::Binding {
        principal: "alice",
        realm: "default",
        method: "tools/call",
        capability: "test.asks",
        arguments: &arguments,
    };
    let now = std::time::SystemTime::now();
    let old = other_key("k-old", 1);
    let token =
        state::seal(&only(old.clone()), &binding, json!({"answers": []}), "exchange", now, &mut Counter(0)).unwrap();
    assert!(state::open(&only(other_key("k-new", 2)), &binding, &token, now).is_none());
    let rotated = KeySet { active: other_key("k-new", 2), retired: vec![old] };
    let opened = state::open(&rotated, &binding, &token, now).expect("opens under a retired key");
    assert_eq!(opened.state, json!({"answers": []}));
    // The next round is sealed under the new key and keeps the exchange's continuation id.
    let next =
        state::seal(&rotated, &binding, json!({"answers": [1]}), &opened.continuation, now, &mut Counter(50)).unwrap();
    let header: Value = serde_json::from_slice(&base64_url(next.split('.').next().unwrap())).unwrap();
    assert_eq!(header["kid"], "k-new");
    assert_eq!(state::open(&rotated, &binding, &next, now).unwrap().continuation, opened.continuation);
}

fn base64_url(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).unwrap()
}
