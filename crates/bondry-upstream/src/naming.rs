//! The naming rule (docs/upstreams.md, Names): the capability id each upstream entry is
//! served under, and which source serves a URI two of them offer.
//!
//! An entry named `n` of upstream `U` is `prefix.n` (`n` alone with an empty prefix), every
//! byte outside the id alphabet replaced by `_`. An id over 64 bytes, or one another source
//! holds already, is cut and suffixed with `-` and the first 8 hex digits of
//! SHA-256(`U/n`) (for resources and templates `U/` and the URI or URI template), so
//! it stays the same across listings and restarts. Configured ids never change; upstreams
//! take ids in stanza order, then listing order, and only the later entry is renamed. URIs
//! are never rewritten: the source that declares a URI first serves it, and the later one
//! is shadowed.

use std::collections::HashSet;

use bondry_core::canon::sha256_hex;
use bondry_core::capability::MAX_ID_LEN;

/// The hex digits of the suffix that makes a renamed id unique.
const SUFFIX_DIGITS: usize = 8;

/// The ids and URIs taken so far in a realm, in the order sources claim them.
#[derive(Debug, Default)]
pub struct Names {
    ids: HashSet<String>,
    uris: HashSet<String>,
}

impl Names {
    /// What the realm's own (configured and builtin) capabilities hold.
    pub fn of_realm<'a>(ids: impl IntoIterator<Item = &'a str>, uris: impl IntoIterator<Item = &'a str>) -> Self {
        Self { ids: ids.into_iter().map(str::to_owned).collect(), uris: uris.into_iter().map(str::to_owned).collect() }
    }

    /// Takes `id`, an id named before and kept with its pin; false if it is taken.
    pub fn reserve(&mut self, id: &str) -> bool {
        self.ids.insert(id.to_owned())
    }

    /// Takes `uri` for its source; false if a source declared it first (it is shadowed).
    pub fn claim_uri(&mut self, uri: &str) -> bool {
        self.uris.insert(uri.to_owned())
    }

    /// Names the entry `name` (with the URI or URI template `uri`) of the upstream
    /// `upstream` exposed under `prefix`: its plain id if free and short enough, else the
    /// cut and suffixed one; `None` if that is taken too (a 32-bit clash of suffixes).
    pub fn claim_id(&mut self, upstream: &str, prefix: &str, name: &str, uri: Option<&str>) -> Option<String> {
        let plain = plain_id(prefix, name);
        if plain.len() <= MAX_ID_LEN && self.ids.insert(plain.clone()) {
            return Some(plain);
        }
        let keyed = format!("{upstream}/{}", uri.unwrap_or(name));
        let suffix = &sha256_hex(keyed.as_bytes())[..SUFFIX_DIGITS];
        let mut cut = plain;
        cut.truncate(MAX_ID_LEN - SUFFIX_DIGITS - 1);
        let id = format!("{cut}-{suffix}");
        self.ids.insert(id.clone()).then_some(id)
    }
}

/// Whether `id` is the plain id of `name` under `prefix`, not a renamed one.
pub fn is_plain(id: &str, prefix: &str, name: &str) -> bool {
    id == plain_id(prefix, name)
}

/// `prefix.name` with every byte outside the id alphabet replaced by `_`.
fn plain_id(prefix: &str, name: &str) -> String {
    let joined = if prefix.is_empty() { name.to_owned() } else { format!("{prefix}.{name}") };
    // Byte-wise, so a multi-byte character becomes as many `_` as it has bytes: the id
    // stays as long as the name and two names never meet by accident of encoding.
    joined
        .bytes()
        .map(|byte| if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') { byte as char } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_prefixed_and_made_an_id() {
        let mut names = Names::default();
        assert_eq!(names.claim_id("everything", "everything", "echo", None).as_deref(), Some("everything.echo"));
        assert_eq!(names.claim_id("fs", "fs", "read file/now", None).as_deref(), Some("fs.read_file_now"));
        assert_eq!(names.claim_id("fs", "", "plain", None).as_deref(), Some("plain"));
        assert_eq!(names.claim_id("fs", "fs", "café", None).as_deref(), Some("fs.caf__"), "one `_` per byte");
        assert!(is_plain("fs.caf__", "fs", "café") && !is_plain("fs.caf__-1", "fs", "café"));
    }

    #[test]
    fn a_clash_or_a_long_name_is_cut_and_suffixed_stably() {
        let suffix = |key: &str| sha256_hex(key.as_bytes())[..8].to_owned();
        let mut names = Names::of_realm(["demo.echo"], []);
        let renamed = names.claim_id("up", "demo", "echo", None).unwrap();
        assert_eq!(renamed, format!("demo.echo-{}", suffix("up/echo")));
        let long = "x".repeat(70);
        let named = names.claim_id("up", "up", &long, None).unwrap();
        assert_eq!(named.len(), 64);
        assert_eq!(named, format!("up.{}-{}", "x".repeat(52), suffix(&format!("up/{long}"))));
        // The same listing named again in a fresh realm gives the same ids.
        let mut again = Names::of_realm(["demo.echo"], []);
        assert_eq!(again.claim_id("up", "demo", "echo", None), Some(renamed.clone()));
        // Named once more in the same realm, the suffixed id is taken too.
        assert_eq!(again.claim_id("up", "demo", "echo", None), None);
    }

    #[test]
    fn a_kept_id_is_reserved_before_new_names() {
        let mut names = Names::default();
        assert!(names.reserve("up.a_b"));
        assert!(!names.reserve("up.a_b"));
        let later = names.claim_id("up", "up", "a b", None).unwrap();
        assert_eq!(later, format!("up.a_b-{}", &sha256_hex(b"up/a b")[..8]));
    }

    #[test]
    fn the_first_to_declare_a_uri_serves_it() {
        let mut names = Names::of_realm(["docs.readme"], ["file:///readme"]);
        assert!(!names.claim_uri("file:///readme"));
        assert!(names.claim_uri("file:///guide"));
        assert!(!names.claim_uri("file:///guide"));
        // A clash of ids is keyed by the URI, which tells two same-named resources apart.
        assert_eq!(names.claim_id("a", "a", "guide", Some("file:///guide")).as_deref(), Some("a.guide"));
        let named = names.claim_id("c", "a", "guide", Some("file:///other")).unwrap();
        assert_eq!(named, format!("a.guide-{}", &sha256_hex(b"c/file:///other")[..8]));
    }
}
