//! The list methods: `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list`. Each lists the caller's view of one kind in id order,
//! one page at a time, behind keyset cursors bound to a hash of that view.

use std::sync::Arc;

use bondry_core::capability::CapabilityKind;
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use bondry_core::registry::Capability;
use bondry_core::view::View;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::cursor::{self, ViewHash};
use crate::error::Error;
use crate::lint::{EntryWire, ToolWire};
use crate::request::Request;
use crate::revision::Era;
use crate::search::{self, Reserved};
use crate::{ADAPTER, Reply};

/// The result field that holds a kind's entries.
fn field(kind: CapabilityKind) -> &'static str {
    match kind {
        CapabilityKind::Tool => "tools",
        CapabilityKind::Prompt => "prompts",
        CapabilityKind::Resource => "resources",
        CapabilityKind::ResourceTemplate => "resourceTemplates",
    }
}

/// One page of the caller's view of `kind`.
pub fn list(request: &Request<'_>, kind: CapabilityKind) -> Reply {
    let cursor = match request.params.get("cursor") {
        None => None,
        Some(Value::String(cursor)) => Some(cursor.as_str()),
        Some(_) => {
            return request
                .error(Error::InvalidParams { id: request.id.clone(), detail: "params.cursor must be a string" });
        }
    };
    let view = request.realm.view(request.principal, ADAPTER, kind);
    let view_hash = view_hash(request.realm, &view);
    let listed = Listed::of(&view);
    let after = match cursor {
        None => None,
        Some(cursor) => match cursor::decode(&view_hash, cursor) {
            Some(after) => Some(after),
            None => return request.error(Error::InvalidCursor { id: request.id.clone() }),
        },
    };
    let page_size = request.listener.settings.page_size.max(1);
    let (page, more) = listed.page(after.as_deref(), page_size);
    let next_cursor = more.then(|| page.last().map(|last| cursor::encode(&view_hash, last.id()))).flatten();
    let era = request.era();
    let entries: Vec<&RawValue> = page.iter().filter_map(|entry| entry.wire(era)).collect();
    let modern = (era == Era::Modern)
        .then(|| ModernFields { ttl_ms: request.listener.settings.list_ttl_ms, meta: request.listener.server_meta() });
    // The entries are rendered already; what goes around them is short.
    let size = entries.iter().map(|entry| entry.get().len() + 1).sum::<usize>() + PAGE_FRAME;
    request.result_within(&ListResult { field: field(kind), entries, next_cursor, modern }, size)
}

/// What a view lists: its entries, and for a caller whose view holds tools found by
/// searching, the two tools that find and call them, merged in id order.
struct Listed<'a> {
    entries: &'a [Arc<Capability>],
    reserved: &'static [Reserved],
}

/// One entry of a list.
#[derive(Clone, Copy)]
enum Entry<'a> {
    Capability(&'a Capability),
    Reserved(&'static Reserved),
}

impl<'a> Listed<'a> {
    fn of(view: &'a View) -> Self {
        let reserved: &[Reserved] = if view.searched().count() > 0 { search::reserved() } else { &[] };
        Self { entries: view.entries(), reserved }
    }

    /// At most `size` entries after the id `after` (from the first without it), and
    /// whether more follow.
    fn page(&self, after: Option<&str>, size: usize) -> (Vec<Entry<'a>>, bool) {
        let mut entries = after.map_or(0, |after| self.entries.partition_point(|entry| entry.id().as_str() <= after));
        let mut reserved = after.map_or(0, |after| self.reserved.partition_point(|tool| tool.id <= after));
        let mut page = Vec::with_capacity(size.min(self.entries.len() + self.reserved.len()));
        while page.len() < size {
            let next = match (self.entries.get(entries), self.reserved.get(reserved)) {
                (Some(entry), Some(tool)) if entry.id().as_str() < tool.id => Entry::Capability(entry),
                (_, Some(tool)) => Entry::Reserved(tool),
                (Some(entry), None) => Entry::Capability(entry),
                (None, None) => break,
            };
            match next {
                Entry::Capability(_) => entries += 1,
                Entry::Reserved(_) => reserved += 1,
            }
            page.push(next);
        }
        (page, entries < self.entries.len() || reserved < self.reserved.len())
    }
}

impl<'a> Entry<'a> {
    fn id(&self) -> &'a str {
        match self {
            Self::Capability(capability) => capability.id().as_str(),
            Self::Reserved(tool) => tool.id,
        }
    }

    /// The entry as `era` lists it.
    fn wire(&self, era: Era) -> Option<&'a RawValue> {
        match self {
            Self::Capability(capability) => wire(capability, era),
            Self::Reserved(tool) => Some(tool.wire.rendered(era)),
        }
    }
}

/// Bytes a page takes besides its entries (the response's envelope, the cursor, the
/// modern fields), as a rule: a page that takes more grows its buffer once.
const PAGE_FRAME: usize = 512;

/// A capability's list entry in `era`.
fn wire(capability: &Capability, era: Era) -> Option<&RawValue> {
    match capability.kind() {
        CapabilityKind::Tool => Some(capability.attachment::<ToolWire>(ADAPTER)?.rendered(era)),
        _ => Some(&capability.attachment::<EntryWire>(ADAPTER)?.json),
    }
}

/// A digest of what a capability's list entry shows, as the lint computed it: for
/// prompts, resources and templates their content hash covers it all.
fn listed(capability: &Capability) -> &str {
    match capability.kind() {
        CapabilityKind::Tool => capability.attachment::<ToolWire>(ADAPTER).map(|wire| wire.listed.as_str()),
        _ => capability.attachment::<EntryWire>(ADAPTER).map(|wire| wire.hash.as_str()),
    }
    .unwrap_or("")
}

/// A list page; the caching fields, `resultType` and server info are modern only.
struct ListResult<'a> {
    field: &'static str,
    entries: Vec<&'a RawValue>,
    next_cursor: Option<String>,
    modern: Option<ModernFields>,
}

struct ModernFields {
    ttl_ms: u64,
    meta: Value,
}

impl Serialize for ListResult<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.field, &self.entries)?;
        if let Some(next_cursor) = &self.next_cursor {
            map.serialize_entry("nextCursor", next_cursor)?;
        }
        if let Some(modern) = &self.modern {
            map.serialize_entry("resultType", "complete")?;
            map.serialize_entry("ttlMs", &modern.ttl_ms)?;
            map.serialize_entry("cacheScope", "private")?;
            map.serialize_entry("_meta", &modern.meta)?;
        }
        map.end()
    }
}

/// A view's hash: its ids and what each entry shows, and the tools found by searching it
/// holds, so any change to what a caller would list or find (a grant, a capability, a
/// definition, a description) changes it. Computed once per view.
fn view_hash(realm: &RealmSnapshot, view: &View) -> ViewHash {
    let searched = realm.catalogue.searched();
    ViewHash(
        view.digest(|view| {
            fn shown(capability: &Arc<Capability>) -> [&str; 2] {
                [capability.id().as_str(), listed(capability)]
            }
            let found = view.searched().positions().filter_map(|at| searched.get(at)).map(shown);
            // Set apart (no id holds a `#`): a tool moved between listed and searched
            // changes the hash.
            let apart = (view.searched().count() > 0).then_some(["#searched", ""]);
            ViewHash::of(view.entries().iter().map(shown).chain(apart).chain(found).flatten()).0
        })
        .to_owned(),
    )
}

/// The kinds whose list changes are announced: one notification covers resources and
/// resource templates alike.
pub const ANNOUNCED_LISTS: [CapabilityKind; 3] =
    [CapabilityKind::Tool, CapabilityKind::Prompt, CapabilityKind::Resource];

/// The method announcing a change of `kind`'s list.
pub fn list_changed_method(kind: CapabilityKind) -> &'static str {
    match kind {
        CapabilityKind::Tool => "notifications/tools/list_changed",
        CapabilityKind::Prompt => "notifications/prompts/list_changed",
        CapabilityKind::Resource | CapabilityKind::ResourceTemplate => "notifications/resources/list_changed",
    }
}

/// The list-changed notification of `kind`, as a session's stream carries it.
pub fn list_changed_notification(kind: CapabilityKind) -> String {
    serde_json::json!({"jsonrpc": "2.0", "method": list_changed_method(kind)}).to_string()
}

/// Whether `principal`'s view of `kind` differs between two snapshots of a realm: what a
/// list-changed notification announces (for resources, templates count too).
pub fn list_changed(old: &RealmSnapshot, new: &RealmSnapshot, principal: &Principal, kind: CapabilityKind) -> bool {
    let hash = |realm: &RealmSnapshot, kind| view_hash(realm, &realm.view(principal, ADAPTER, kind));
    let differs = |kind| hash(old, kind) != hash(new, kind);
    match kind {
        CapabilityKind::Resource | CapabilityKind::ResourceTemplate => {
            differs(CapabilityKind::Resource) || differs(CapabilityKind::ResourceTemplate)
        }
        kind => differs(kind),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bondry_core::BoxFuture;
    use bondry_core::capability::{Binding, CapabilityId, Descriptor};
    use bondry_core::handler::{Answer, Handler, HandlerRequest};
    use bondry_core::policy::{Grant, Policy, PrincipalKind, Subject};
    use bondry_core::realm::{Key, KeySet};
    use bondry_core::registry::{Catalogue, Lint, Registration};
    use bondry_core::schema::SchemaBounds;

    use super::*;
    use crate::lint::McpLint;

    struct Nothing;

    impl Handler for Nothing {
        fn call(&self, _: HandlerRequest) -> BoxFuture<'static, Answer> {
            Box::pin(std::future::ready(Answer::Failure { code: "nothing".into(), detail: None }))
        }
    }

    fn tool(id: &str, summary: &str) -> Registration {
        let descriptor = Descriptor {
            summary: Some(summary.into()),
            ..Descriptor::new(
                CapabilityId::new(id).unwrap(),
                CapabilityKind::Tool,
                serde_json::json!({"type": "object"}),
                Binding { kind: "builtin".into(), target: "nothing".into() },
            )
        };
        Registration { descriptor: Arc::new(descriptor), handler: Arc::new(Nothing) }
    }

    fn snapshot(registrations: Vec<Registration>) -> RealmSnapshot {
        let lints: [&dyn Lint; 1] = [&McpLint];
        let catalogue = Catalogue::build(1, registrations, &SchemaBounds::default(), &lints).unwrap();
        let grants = vec![
            Grant::parse(Subject::Role("demo".into()), "demo.*", ADAPTER).unwrap(),
            Grant::parse(Subject::Principal("carol".into()), "x.*", ADAPTER).unwrap(),
        ];
        let keys = KeySet { active: Key { id: "k1".into(), secret: [7; 32] }, retired: Vec::new() };
        RealmSnapshot::new("default", catalogue, Policy::new(grants), keys)
    }

    fn hash_of(snapshot: &RealmSnapshot, principal: &Principal) -> ViewHash {
        view_hash(snapshot, &snapshot.view(principal, ADAPTER, CapabilityKind::Tool))
    }

    #[test]
    fn a_cursor_holds_only_in_the_view_it_was_cut_from() {
        let catalogue = || vec![tool("demo.a", "a"), tool("demo.b", "b"), tool("x.c", "c")];
        let demo = |id: &str| Principal::new(id, PrincipalKind::User, vec!["demo".to_owned()]);
        let (alice, bob, carol) = (demo("alice"), demo("bob"), demo("carol"));
        let first = snapshot(catalogue());
        let cursor = cursor::encode(&hash_of(&first, &alice), "demo.a");
        // Everyone with alice's grants shares her view, and her cursor.
        assert_eq!(cursor::decode(&hash_of(&first, &bob), &cursor).as_deref(), Some("demo.a"));
        // Other covering grants: another view, and the cursor is refused.
        assert_eq!(cursor::decode(&hash_of(&first, &carol), &cursor), None);
        // A later snapshot in which her view changed (one description, which the content
        // hash leaves out) refuses it too, and her list is announced as changed ...
        let changed = snapshot(vec![tool("demo.a", "a"), tool("demo.b", "B"), tool("x.c", "c")]);
        assert_eq!(cursor::decode(&hash_of(&changed, &alice), &cursor), None);
        assert!(list_changed(&first, &changed, &alice, CapabilityKind::Tool));
        // ... while one that left her view as it was keeps it valid, and announces nothing.
        let rebuilt = snapshot(catalogue());
        assert_eq!(cursor::decode(&hash_of(&rebuilt, &alice), &cursor).as_deref(), Some("demo.a"));
        assert!(!list_changed(&first, &rebuilt, &alice, CapabilityKind::Tool));
        assert!(!list_changed(&first, &rebuilt, &alice, CapabilityKind::Prompt));
    }
}
