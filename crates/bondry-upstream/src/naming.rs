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
use bondry_core::capability::{CapabilityKind, MAX_ID_LEN};

/// The hex digits of the suffix that makes a renamed id unique.
const SUFFIX_DIGITS: usize = 8;

/// One entry of an upstream's listing, as far as naming it goes.
#[derive(Debug, Clone, Copy)]
pub struct Listed<'a> {
    pub kind: CapabilityKind,
    /// The upstream's own name for it.
    pub name: &'a str,
    /// A resource's URI or a template's URI template.
    pub uri: Option<&'a str>,
}

/// What naming decided for one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// Served under this id; `renamed` when it is not the plain `prefix.n`.
    Id { id: String, renamed: bool },
    /// Not served: another source declared its URI first.
    Shadowed,
}

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

    /// Claims the id and URI of `entry` of the upstream `upstream` exposed under `prefix`.
    pub fn claim(&mut self, upstream: &str, prefix: &str, entry: Listed<'_>) -> Named {
        if let Some(uri) = entry.uri
            && !self.uris.insert(uri.to_owned())
        {
            return Named::Shadowed;
        }
        let plain = plain_id(prefix, entry.name);
        if plain.len() <= MAX_ID_LEN && !self.ids.contains(&plain) {
            self.ids.insert(plain.clone());
            return Named::Id { id: plain, renamed: false };
        }
        let keyed = format!("{upstream}/{}", entry.uri.unwrap_or(entry.name));
        let suffix = &sha256_hex(keyed.as_bytes())[..SUFFIX_DIGITS];
        let mut cut = plain;
        cut.truncate(MAX_ID_LEN - SUFFIX_DIGITS - 1);
        let id = format!("{cut}-{suffix}");
        // Two names that cut and hash alike are the same entry listed twice: the later
        // one is shadowed rather than given a third name.
        if !self.ids.insert(id.clone()) {
            return Named::Shadowed;
        }
        Named::Id { id, renamed: true }
    }
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

    fn tool(name: &str) -> Listed<'_> {
        Listed { kind: CapabilityKind::Tool, name, uri: None }
    }

    fn id(named: Named) -> String {
        match named {
            Named::Id { id, .. } => id,
            Named::Shadowed => panic!("shadowed"),
        }
    }

    #[test]
    fn a_name_is_prefixed_and_made_an_id() {
        let mut names = Names::default();
        assert_eq!(
            names.claim("everything", "everything", tool("echo")),
            Named::Id { id: "everything.echo".into(), renamed: false }
        );
        assert_eq!(id(names.claim("fs", "fs", tool("read file/now"))), "fs.read_file_now");
        assert_eq!(id(names.claim("fs", "", tool("plain"))), "plain");
        assert_eq!(id(names.claim("fs", "fs", tool("café"))), "fs.caf__", "one `_` per byte");
    }

    #[test]
    fn a_clash_or_a_long_name_is_cut_and_suffixed_stably() {
        let suffix = |key: &str| sha256_hex(key.as_bytes())[..8].to_owned();
        let mut names = Names::of_realm(["demo.echo"], []);
        let renamed = names.claim("up", "demo", tool("echo"));
        assert_eq!(renamed, Named::Id { id: format!("demo.echo-{}", suffix("up/echo")), renamed: true });
        let long = "x".repeat(70);
        let named = id(names.claim("up", "up", tool(&long)));
        assert_eq!(named.len(), 64);
        assert_eq!(named, format!("up.{}-{}", "x".repeat(52), suffix(&format!("up/{long}"))));
        // The same listing named again in a fresh realm gives the same ids.
        let mut again = Names::of_realm(["demo.echo"], []);
        assert_eq!(again.claim("up", "demo", tool("echo")), renamed);
    }

    #[test]
    fn the_first_to_declare_a_uri_serves_it() {
        let resource = |name, uri| Listed { kind: CapabilityKind::Resource, name, uri: Some(uri) };
        let mut names = Names::of_realm(["docs.readme"], ["file:///readme"]);
        assert_eq!(names.claim("a", "a", resource("readme", "file:///readme")), Named::Shadowed);
        assert_eq!(id(names.claim("a", "a", resource("guide", "file:///guide"))), "a.guide");
        assert_eq!(names.claim("b", "b", resource("guide", "file:///guide")), Named::Shadowed);
        // A clash of ids is keyed by the URI, which tells two same-named resources apart.
        let named = id(names.claim("c", "a", resource("guide", "file:///other")));
        assert_eq!(named, format!("a.guide-{}", &sha256_hex(b"c/file:///other")[..8]));
    }
}
