//! Keyset pagination cursors, bound to the caller's view.
//!
//! A cursor names the last id of the previous page and a hash of the view it was cut
//! from. If the view changed (a grant, a capability) the cursor is refused rather than
//! silently skipping or repeating entries.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The hash of a view: the ids a caller can list, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewHash(pub(crate) String);

impl ViewHash {
    pub fn of<'a>(ids: impl Iterator<Item = &'a str>) -> Self {
        let mut hasher = Sha256::new();
        for id in ids {
            hasher.update(id.as_bytes());
            hasher.update([0]);
        }
        Self(bondry_core::canon::hex(&hasher.finalize()[..12]))
    }
}

#[derive(Serialize, Deserialize)]
struct Cursor<'a> {
    v: &'a str,
    after: &'a str,
}

/// The cursor of the page that starts after `after`.
pub fn encode(view: &ViewHash, after: &str) -> String {
    let json = serde_json::to_vec(&Cursor { v: &view.0, after }).expect("cursors serialise");
    URL_SAFE_NO_PAD.encode(json)
}

/// The id a cursor continues after, if it is well-formed and was cut from `view`.
pub fn decode(view: &ViewHash, cursor: &str) -> Option<String> {
    let json = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let cursor: Cursor<'_> = serde_json::from_slice(&json).ok()?;
    (cursor.v == view.0).then(|| cursor.after.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_within_their_view_only() {
        let view = ViewHash::of(["a", "b"].into_iter());
        let other = ViewHash::of(["a"].into_iter());
        let cursor = encode(&view, "a");
        assert_eq!(decode(&view, &cursor).as_deref(), Some("a"));
        assert_eq!(decode(&other, &cursor), None);
        assert_eq!(decode(&view, "garbage!"), None);
        assert_eq!(decode(&view, ""), None);
    }
}
