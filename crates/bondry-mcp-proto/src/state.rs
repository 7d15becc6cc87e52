//! `requestState`: a handler's state between the rounds of a multi-round-trip request,
//! sealed so the client can carry it but neither read nor change it.
//!
//! The token is a compact JWE under the realm's key set, binding what the state is for:
//! the principal, the realm, the method, the capability, a digest of the arguments and an
//! expiry, plus a continuation id that stays the same over every round of one exchange.
//! Whatever fails (a tampered or garbage token, another principal's or capability's, other
//! arguments, an expired or oversized one) is refused the same way.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bondry_core::canon;
use bondry_core::realm::KeySet;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Csprng, seal};

/// The largest `requestState` sealed or opened.
pub const MAX_STATE_LEN: usize = 64 * 1024;
/// How long a `requestState` opens after it was sealed.
pub const STATE_LIFETIME: Duration = Duration::from_secs(300);
/// The token's purpose, so no other sealed token passes for a request state.
const PURPOSE: &str = "request-state";

/// What a state is bound to: the request it continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding<'a> {
    pub principal: &'a str,
    pub realm: &'a str,
    pub method: &'a str,
    pub capability: &'a str,
    pub arguments: &'a Value,
}

#[derive(Serialize, Deserialize)]
struct Claims {
    t: String,
    sub: String,
    realm: String,
    method: String,
    cap: String,
    /// SHA-256 of the RFC 8785 form of the arguments.
    args: String,
    exp: u64,
    /// The continuation id, the same over every round of one exchange.
    cont: String,
    state: Value,
}

/// An opened state: the handler's value and the exchange it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub state: Value,
    pub continuation: String,
}

/// Why a state could not be sealed: past the size cap, or nested past [`MAX_STATE_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// How deep a handler's state may nest. Opening parses the claims with serde_json, which
/// stops at 128 levels: a deeper state would seal, then never open.
pub const MAX_STATE_DEPTH: usize = 64;

/// Whether `value` nests arrays and objects more than `limit` levels deep.
fn deeper_than(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(|item| deeper_than(item, limit - 1)),
        Value::Object(members) => limit == 0 || members.values().any(|member| deeper_than(member, limit - 1)),
        _ => false,
    }
}

/// A fresh continuation id: 128 random bits in hex.
pub fn new_continuation(rng: &mut dyn Csprng) -> String {
    let mut bytes = [0u8; 16];
    rng.fill(&mut bytes);
    canon::hex(&bytes)
}

/// Seals `state` for `binding`, continuing exchange `continuation`.
pub fn seal(
    keys: &KeySet,
    binding: &Binding<'_>,
    state: Value,
    continuation: &str,
    now: SystemTime,
    rng: &mut dyn Csprng,
) -> Result<String, TooLarge> {
    if deeper_than(&state, MAX_STATE_DEPTH) {
        return Err(TooLarge);
    }
    let continuation = continuation.to_owned();
    let claims = Claims {
        t: PURPOSE.into(),
        sub: binding.principal.into(),
        realm: binding.realm.into(),
        method: binding.method.into(),
        cap: binding.capability.into(),
        args: canon::digest(binding.arguments),
        exp: (now + STATE_LIFETIME).duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs()),
        cont: continuation,
        state,
    };
    let token = seal::seal(keys, &claims, rng);
    if token.len() > MAX_STATE_LEN { Err(TooLarge) } else { Ok(token) }
}

/// Opens `token` for `binding`; `None` for anything that is not a live state sealed for
/// exactly this request.
pub fn open(keys: &KeySet, binding: &Binding<'_>, token: &str, now: SystemTime) -> Option<Opened> {
    let claims: Claims = seal::open_within(keys, token, MAX_STATE_LEN)?;
    let live = UNIX_EPOCH + Duration::from_secs(claims.exp) > now;
    let bound = claims.t == PURPOSE
        && claims.sub == binding.principal
        && claims.realm == binding.realm
        && claims.method == binding.method
        && claims.cap == binding.capability
        && claims.args == canon::digest(binding.arguments);
    (live && bound).then_some(Opened { state: claims.state, continuation: claims.cont })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bondry_core::realm::Key;
    use serde_json::json;

    struct Counter(u8);

    impl Csprng for Counter {
        fn fill(&mut self, dest: &mut [u8]) {
            for byte in dest {
                self.0 = self.0.wrapping_add(1);
                *byte = self.0;
            }
        }
    }

    fn keys(id: &str, fill: u8) -> KeySet {
        KeySet { active: Key { id: id.into(), secret: [fill; 32] }, retired: Vec::new() }
    }

    #[test]
    fn opens_only_for_the_request_it_was_sealed_for() {
        let keys = keys("k1", 7);
        let arguments = json!({"b": 1, "a": [true]});
        let binding = Binding {
            principal: "alice",
            realm: "default",
            method: "tools/call",
            capability: "t",
            arguments: &arguments,
        };
        let now = SystemTime::now();
        let continuation = new_continuation(&mut Counter(0));
        assert_eq!(continuation.len(), 32);
        let token = seal(&keys, &binding, json!({"step": 1}), &continuation, now, &mut Counter(0)).unwrap();
        let opened = open(&keys, &binding, &token, now).unwrap();
        assert_eq!(opened.state, json!({"step": 1}));
        assert_eq!(opened.continuation, continuation);
        // Key order does not matter to the arguments' digest; their values do.
        let reordered = json!({"a": [true], "b": 1});
        assert!(open(&keys, &Binding { arguments: &reordered, ..binding.clone() }, &token, now).is_some());
        let other_arguments = json!({"a": [false], "b": 1});
        for other in [
            Binding { principal: "bob", ..binding.clone() },
            Binding { realm: "ops", ..binding.clone() },
            Binding { method: "prompts/get", ..binding.clone() },
            Binding { capability: "u", ..binding.clone() },
            Binding { arguments: &other_arguments, ..binding.clone() },
        ] {
            assert!(open(&keys, &other, &token, now).is_none(), "{other:?}");
        }
        assert!(open(&keys, &binding, &token, now + STATE_LIFETIME).is_none(), "expired");
        assert!(open(&keys, &binding, &format!("{token}x"), now).is_none(), "tampered");
        let next = seal(&keys, &binding, json!({"step": 2}), &opened.continuation, now, &mut Counter(50)).unwrap();
        assert_ne!(next, token);
        assert_eq!(open(&keys, &binding, &next, now).unwrap().continuation, opened.continuation);
    }

    #[test]
    fn states_past_the_cap_are_not_sealed() {
        let keys = keys("k1", 7);
        let arguments = json!({});
        let binding =
            Binding { principal: "a", realm: "r", method: "tools/call", capability: "t", arguments: &arguments };
        let big = json!("x".repeat(MAX_STATE_LEN));
        assert_eq!(seal(&keys, &binding, big, "c", SystemTime::now(), &mut Counter(0)), Err(TooLarge));
        // As deep as may be sealed opens again; one level more is refused, not sealed to
        // fail at every retry.
        let nested = |levels: usize| (0..levels).fold(json!(1), |inner, _| json!({"a": [inner]}));
        let now = SystemTime::now();
        let deepest = nested(MAX_STATE_DEPTH / 2);
        let token = seal(&keys, &binding, deepest.clone(), "c", now, &mut Counter(0)).unwrap();
        assert_eq!(open(&keys, &binding, &token, now).unwrap().state, deepest);
        let too_deep = json!([nested(MAX_STATE_DEPTH / 2)]);
        assert_eq!(seal(&keys, &binding, too_deep, "c", now, &mut Counter(0)), Err(TooLarge));
    }
}
