//! One listing of one kind, as it arrives page by page, held to the stanza's limits
//! (docs/upstreams.md, Listings). Pure: the connection fetches the pages.
//!
//! A listing past `max_entries_per_kind` or `max_listing_bytes`, or one that repeats a
//! key (a tool's or prompt's name, a resource's URI, a template's URI template), is
//! refused as a whole: the kind's pins stay as they were, so what was pinned before is
//! still served and nothing new is. An entry over `max_definition_bytes` is skipped.

use std::collections::HashSet;
use std::fmt;

use bondry_core::capability::CapabilityKind;
use serde_json::Value;

use crate::definition;
use crate::spec::ListingLimits;

/// An upstream's latest listing: every kind, listed or refused.
pub type Listing = Vec<(CapabilityKind, KindListing)>;

/// What one kind's latest listing came to.
#[derive(Debug, Clone, PartialEq)]
pub enum KindListing {
    /// These entries, in the upstream's order (none when the kind is not served).
    Listed(Vec<Value>),
    /// Refused, for this reason: the kind's pins stay as they were.
    Refused(Refused),
}

/// Why a listing of one kind is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// More entries than `max_entries_per_kind`.
    TooManyEntries { limit: usize },
    /// More bytes than `max_listing_bytes`.
    TooManyBytes { limit: usize },
    /// More pages than entries allowed (and one): an upstream paging without end.
    TooManyPages { limit: usize },
    /// A page larger than `max_response_bytes`, which was dropped unread.
    PageTooLarge { limit: usize },
    /// A page whose answer has no array of entries where the kind's are.
    Malformed { field: &'static str },
    /// A `nextCursor` longer than [`MAX_CURSOR_BYTES`].
    CursorTooLong,
    /// A key listed twice.
    Repeated { key: &'static str, value: String },
    /// The upstream answered the list request with an error.
    Failed { method: &'static str, code: i64, message: String },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyEntries { limit } => write!(f, "it lists more than {limit} entries (max_entries_per_kind)"),
            Self::TooManyBytes { limit } => write!(f, "it lists more than {limit} bytes (max_listing_bytes)"),
            Self::TooManyPages { limit } => write!(f, "it takes more than {limit} pages (max_entries_per_kind)"),
            Self::PageTooLarge { limit } => write!(f, "a page is larger than {limit} bytes (max_response_bytes)"),
            Self::Malformed { field } => write!(f, "a page has no {field} array"),
            Self::CursorTooLong => write!(f, "a nextCursor is longer than {MAX_CURSOR_BYTES} bytes"),
            Self::Repeated { key, value } => write!(f, "it lists the {key} {value:?} more than once"),
            Self::Failed { method, code, message } => write!(f, "{method} answered error {code}: {message:?}"),
        }
    }
}

/// The longest `nextCursor` followed. Cursors are opaque tokens; each one kept (to stop
/// at a repeated one) also counts toward `max_listing_bytes`.
pub const MAX_CURSOR_BYTES: usize = 4096;

/// One kind's listing being collected.
#[derive(Debug)]
pub struct Collect {
    kind: CapabilityKind,
    limits: ListingLimits,
    entries: Vec<Value>,
    listed: usize,
    bytes: usize,
    pages: usize,
    keys: HashSet<String>,
    /// The entries skipped as too large: their key (or position), and their size.
    skipped: Vec<(String, usize)>,
}

impl Collect {
    pub fn new(kind: CapabilityKind, limits: ListingLimits) -> Self {
        Self {
            kind,
            limits,
            entries: Vec::new(),
            listed: 0,
            bytes: 0,
            pages: 0,
            keys: HashSet::new(),
            skipped: Vec::new(),
        }
    }

    /// Takes one page's entries; refused once the listing passes a limit or repeats a key.
    pub fn page(&mut self, entries: Vec<Value>) -> Result<(), Refused> {
        self.pages += 1;
        // One page per entry allowed, and one more for an empty last page.
        let page_limit = self.limits.max_entries.saturating_add(1);
        if self.pages > page_limit {
            return Err(Refused::TooManyPages { limit: page_limit });
        }
        for entry in entries {
            self.listed += 1;
            if self.listed > self.limits.max_entries {
                return Err(Refused::TooManyEntries { limit: self.limits.max_entries });
            }
            let size = compact_size(&entry);
            self.bytes = self.bytes.saturating_add(size);
            if self.bytes > self.limits.max_bytes {
                return Err(Refused::TooManyBytes { limit: self.limits.max_bytes });
            }
            let key = definition::identity(self.kind, &entry).ok().map(|(name, uri)| uri.unwrap_or(name).to_owned());
            if let Some(key) = &key
                && !self.keys.insert(key.clone())
            {
                return Err(Refused::Repeated { key: key_name(self.kind), value: key.clone() });
            }
            if size > self.limits.max_definition_bytes {
                self.skipped.push((key.unwrap_or_else(|| format!("entry {}", self.listed)), size));
                continue;
            }
            self.entries.push(entry);
        }
        Ok(())
    }

    /// Takes a page's `nextCursor`, counted toward `max_listing_bytes`.
    pub fn cursor(&mut self, cursor: &str) -> Result<(), Refused> {
        if cursor.len() > MAX_CURSOR_BYTES {
            return Err(Refused::CursorTooLong);
        }
        self.bytes = self.bytes.saturating_add(cursor.len());
        if self.bytes > self.limits.max_bytes {
            return Err(Refused::TooManyBytes { limit: self.limits.max_bytes });
        }
        Ok(())
    }

    /// The entries kept, in order, and those skipped as too large (key, bytes).
    pub fn finish(self) -> (Vec<Value>, Vec<(String, usize)>) {
        (self.entries, self.skipped)
    }
}

/// What names an entry of `kind` uniquely in one listing.
fn key_name(kind: CapabilityKind) -> &'static str {
    match kind {
        CapabilityKind::Tool | CapabilityKind::Prompt => "name",
        CapabilityKind::Resource => "URI",
        CapabilityKind::ResourceTemplate => "URI template",
    }
}

/// The length of `value`'s compact JSON, counted without writing it anywhere.
pub fn compact_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(max_entries: usize, max_definition_bytes: usize, max_bytes: usize) -> ListingLimits {
        ListingLimits { max_entries, max_definition_bytes, max_bytes, ..ListingLimits::default() }
    }

    fn tool(name: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object"}})
    }

    #[test]
    fn a_repeated_key_refuses_the_listing() {
        let mut tools = Collect::new(CapabilityKind::Tool, ListingLimits::default());
        tools.page(vec![tool("a")]).unwrap();
        assert_eq!(
            tools.page(vec![tool("b"), json!({"name": "a", "description": "poisoned"})]),
            Err(Refused::Repeated { key: "name", value: "a".into() })
        );
        let resource = |uri: &str, name: &str| json!({"uri": uri, "name": name});
        let mut resources = Collect::new(CapabilityKind::Resource, ListingLimits::default());
        // Two names for one URI repeat the URI; one name for two URIs repeats nothing.
        resources.page(vec![resource("test://a", "n"), resource("test://b", "n")]).unwrap();
        assert_eq!(
            resources.page(vec![resource("test://a", "m")]),
            Err(Refused::Repeated { key: "URI", value: "test://a".into() })
        );
        let mut templates = Collect::new(CapabilityKind::ResourceTemplate, ListingLimits::default());
        let template = json!({"uriTemplate": "test://{x}", "name": "t"});
        assert!(templates.page(vec![template.clone(), template]).is_err());
    }

    #[test]
    fn limits_refuse_the_listing_and_an_oversized_entry_is_skipped() {
        let mut few = Collect::new(CapabilityKind::Tool, limits(2, 1000, 1000));
        few.page(vec![tool("a"), tool("b")]).unwrap();
        assert_eq!(few.page(vec![tool("c")]), Err(Refused::TooManyEntries { limit: 2 }));

        let size = compact_size(&tool("a"));
        assert_eq!(size, serde_json::to_string(&tool("a")).unwrap().len());
        let mut small = Collect::new(CapabilityKind::Tool, limits(10, 1000, 2 * size));
        small.page(vec![tool("a"), tool("b")]).unwrap();
        assert_eq!(small.page(vec![tool("c")]), Err(Refused::TooManyBytes { limit: 2 * size }));

        let big = json!({"name": "big", "description": "x".repeat(100), "inputSchema": {}});
        let mut skipping = Collect::new(CapabilityKind::Tool, limits(10, 50, 1000));
        skipping.page(vec![tool("a"), big.clone()]).unwrap();
        let (entries, skipped) = skipping.finish();
        assert_eq!(entries, [tool("a")]);
        assert_eq!(skipped, [("big".to_owned(), compact_size(&big))]);
    }

    #[test]
    fn cursors_count_toward_the_listing_and_are_bounded() {
        let mut cursors = Collect::new(CapabilityKind::Tool, limits(10, 1000, 5000));
        assert_eq!(cursors.cursor(&"c".repeat(MAX_CURSOR_BYTES + 1)), Err(Refused::CursorTooLong));
        cursors.cursor(&"c".repeat(MAX_CURSOR_BYTES)).unwrap();
        assert_eq!(cursors.cursor(&"c".repeat(1000)), Err(Refused::TooManyBytes { limit: 5000 }));
    }

    #[test]
    fn an_upstream_paging_without_end_is_refused() {
        let mut pages = Collect::new(CapabilityKind::Tool, limits(3, 1000, 1000));
        for _ in 0..4 {
            pages.page(Vec::new()).unwrap();
        }
        assert_eq!(pages.page(Vec::new()), Err(Refused::TooManyPages { limit: 4 }));
        assert_eq!(Refused::TooManyBytes { limit: 8 }.to_string(), "it lists more than 8 bytes (max_listing_bytes)");
    }
}
