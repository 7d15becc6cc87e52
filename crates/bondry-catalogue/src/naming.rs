//! The naming rule (docs/upstreams.md, Names): the capability id each entry of a source
//! (an upstream MCP server today) is served under, and which source serves a URI two of
//! them offer.
//!
//! An entry named `n` of upstream `U` is `prefix.n` (`n` alone with an empty prefix), every
//! byte outside the id alphabet replaced by `_`. An id over 64 bytes, or one another source
//! holds already, is cut and suffixed with `-` and the first 8 hex digits of
//! SHA-256(`U/n`) (for resources and templates `U/` and the URI or URI template), so
//! it stays the same across listings and restarts. Configured ids never change; upstreams
//! take ids in stanza order, then listing order, and only the later entry is renamed. URIs
//! are never rewritten: the source that declares a URI first serves it, and the later one
//! is shadowed.

use std::collections::{HashMap, HashSet};

use bondry_core::canon::sha256_hex;
use bondry_core::capability::{CapabilityKind, MAX_ID_LEN};

/// The hex digits of the suffix that makes a renamed id unique.
const SUFFIX_DIGITS: usize = 8;

/// Whose an id is: the upstream entry it was first named for, by upstream, kind and pin
/// key. An id is never given to another entry of the realm, even once the entry is gone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    pub upstream: String,
    pub kind: CapabilityKind,
    pub key: String,
}

/// The ids and URIs taken so far in a naming of a realm, in the order sources claim them,
/// and the owner of every id ever named in the realm.
#[derive(Debug, Default)]
pub struct Names {
    ids: HashSet<String>,
    uris: HashSet<String>,
    owners: HashMap<String, Owner>,
}

impl Names {
    /// What the realm's own (configured and builtin) capabilities hold.
    pub fn of_realm<'a>(ids: impl IntoIterator<Item = &'a str>, uris: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            ids: ids.into_iter().map(str::to_owned).collect(),
            uris: uris.into_iter().map(str::to_owned).collect(),
            owners: HashMap::new(),
        }
    }

    /// With `owners`, the owner of every id named in the realm before.
    pub fn with_owners(mut self, owners: HashMap<String, Owner>) -> Self {
        self.owners = owners;
        self
    }

    /// The owner of every id named in the realm, this naming's included.
    pub fn into_owners(self) -> HashMap<String, Owner> {
        self.owners
    }

    /// Takes `id`, named before for `owner` and kept with its pin; false if it is taken.
    pub fn reserve(&mut self, id: &str, owner: &Owner) -> bool {
        self.free(id, owner) && self.take(id, owner)
    }

    /// Takes `uri` for its source; false if a source declared it first (it is shadowed).
    pub fn claim_uri(&mut self, uri: &str) -> bool {
        self.uris.insert(uri.to_owned())
    }

    /// Names the entry of `owner`, called `name` (with the URI or URI template `uri`) by
    /// the upstream and exposed under `prefix`: its plain id if free and short enough,
    /// else the cut and suffixed one; `None` if that is taken too (a 32-bit clash of
    /// suffixes, or an id another entry was named before).
    pub fn claim_id(&mut self, owner: &Owner, prefix: &str, name: &str, uri: Option<&str>) -> Option<String> {
        let plain = plain_id(prefix, name);
        if plain.len() <= MAX_ID_LEN && self.free(&plain, owner) {
            self.take(&plain, owner);
            return Some(plain);
        }
        let keyed = format!("{}/{}", owner.upstream, uri.unwrap_or(name));
        let suffix = &sha256_hex(keyed.as_bytes())[..SUFFIX_DIGITS];
        let mut cut = plain;
        cut.truncate(MAX_ID_LEN - SUFFIX_DIGITS - 1);
        let id = format!("{cut}-{suffix}");
        (self.free(&id, owner) && self.take(&id, owner)).then_some(id)
    }

    /// Whether `id` is untaken in this naming and never named for another entry.
    fn free(&self, id: &str, owner: &Owner) -> bool {
        !self.ids.contains(id) && self.owners.get(id).is_none_or(|named| named == owner)
    }

    fn take(&mut self, id: &str, owner: &Owner) -> bool {
        self.owners.entry(id.to_owned()).or_insert_with(|| owner.clone());
        self.ids.insert(id.to_owned())
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

    fn tool(upstream: &str, name: &str) -> Owner {
        Owner { upstream: upstream.into(), kind: CapabilityKind::Tool, key: name.into() }
    }

    fn claim(names: &mut Names, upstream: &str, prefix: &str, name: &str) -> Option<String> {
        names.claim_id(&tool(upstream, name), prefix, name, None)
    }

    #[test]
    fn a_name_is_prefixed_and_made_an_id() {
        let mut names = Names::default();
        assert_eq!(claim(&mut names, "everything", "everything", "echo").as_deref(), Some("everything.echo"));
        assert_eq!(claim(&mut names, "fs", "fs", "read file/now").as_deref(), Some("fs.read_file_now"));
        assert_eq!(claim(&mut names, "fs", "", "plain").as_deref(), Some("plain"));
        assert_eq!(claim(&mut names, "fs", "fs", "café").as_deref(), Some("fs.caf__"), "one `_` per byte");
        assert!(is_plain("fs.caf__", "fs", "café") && !is_plain("fs.caf__-1", "fs", "café"));
    }

    #[test]
    fn a_clash_or_a_long_name_is_cut_and_suffixed_stably() {
        let suffix = |key: &str| sha256_hex(key.as_bytes())[..8].to_owned();
        let mut names = Names::of_realm(["demo.echo"], []);
        let renamed = claim(&mut names, "up", "demo", "echo").unwrap();
        assert_eq!(renamed, format!("demo.echo-{}", suffix("up/echo")));
        let long = "x".repeat(70);
        let named = claim(&mut names, "up", "up", &long).unwrap();
        assert_eq!(named.len(), 64);
        assert_eq!(named, format!("up.{}-{}", "x".repeat(52), suffix(&format!("up/{long}"))));
        // The same listing named again in a fresh realm gives the same ids.
        let mut again = Names::of_realm(["demo.echo"], []);
        assert_eq!(claim(&mut again, "up", "demo", "echo"), Some(renamed.clone()));
        // Named once more in the same naming, the suffixed id is taken too.
        assert_eq!(claim(&mut again, "up", "demo", "echo"), None);
    }

    #[test]
    fn a_kept_id_is_reserved_before_new_names() {
        let mut names = Names::default();
        assert!(names.reserve("up.a_b", &tool("up", "a_b")));
        assert!(!names.reserve("up.a_b", &tool("up", "a_b")));
        let later = claim(&mut names, "up", "up", "a b").unwrap();
        assert_eq!(later, format!("up.a_b-{}", &sha256_hex(b"up/a b")[..8]));
    }

    #[test]
    fn an_id_named_once_is_never_given_to_another_entry() {
        let mut first = Names::default();
        assert_eq!(claim(&mut first, "a", "x", "t").as_deref(), Some("x.t"));
        // A later naming, in which a's entry is gone (its prefix changed, or a removed):
        // b's entry of the same name is suffixed; a's gets its id back.
        let mut later = Names::default().with_owners(first.into_owners());
        let suffixed = claim(&mut later, "b", "x", "t").unwrap();
        assert_eq!(suffixed, format!("x.t-{}", &sha256_hex(b"b/t")[..8]));
        assert!(!later.reserve("x.t", &tool("b", "t")));
        let mut back = Names::default().with_owners(later.into_owners());
        assert_eq!(claim(&mut back, "a", "x", "t").as_deref(), Some("x.t"));
    }

    #[test]
    fn the_first_to_declare_a_uri_serves_it() {
        let mut names = Names::of_realm(["docs.readme"], ["file:///readme"]);
        assert!(!names.claim_uri("file:///readme"));
        assert!(names.claim_uri("file:///guide"));
        assert!(!names.claim_uri("file:///guide"));
        // A clash of ids is keyed by the URI, which tells two same-named resources apart.
        let resource = |upstream: &str, uri: &str| Owner {
            upstream: upstream.into(),
            kind: CapabilityKind::Resource,
            key: uri.into(),
        };
        let guide = names.claim_id(&resource("a", "file:///guide"), "a", "guide", Some("file:///guide"));
        assert_eq!(guide.as_deref(), Some("a.guide"));
        let named = names.claim_id(&resource("c", "file:///other"), "a", "guide", Some("file:///other")).unwrap();
        assert_eq!(named, format!("a.guide-{}", &sha256_hex(b"c/file:///other")[..8]));
    }
}
