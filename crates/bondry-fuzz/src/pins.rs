//! Listings from two hostile upstreams through listing limits, pins, naming and serving,
//! with the two rules of pins asserted after every step:
//! - every served entry has a pin whose stored hash equals the pin hash recomputed from
//!   what each caller receives (each era's list entry), after exactly four adjustments:
//!   the upstream's name or URI restored, `dev.bondry/*` keys removed, only the unhashed
//!   fields removed (the hash leaves them out), and fields Bondry omits for an era taken
//!   from the pin;
//! - a served id always maps to the (upstream, kind, key) it was first served under.

use std::collections::HashMap;
use std::time::Duration;

use bondry_catalogue::hash::definition_hash;
use bondry_catalogue::naming::Names;
use bondry_core::capability::CapabilityKind;
use bondry_core::registry::Lint;
use bondry_mcp_proto::Era;
use bondry_mcp_proto::lint::{EntryWire, McpLint, ToolWire};
use bondry_upstream::catalogue::{self, Served, Source};
use bondry_upstream::listing::{Collect, KindListing, Listing, Refused};
use bondry_upstream::pins::{PinBook, PinState, Policy};
use bondry_upstream::{ListingLimits, NewEntries, TransportSpec, Trust, UpstreamSpec};
use serde_json::Value;

/// The kinds and the field each one's listing is read from.
const KINDS: [(CapabilityKind, &str); 4] = [
    (CapabilityKind::Tool, "tools"),
    (CapabilityKind::Prompt, "prompts"),
    (CapabilityKind::Resource, "resources"),
    (CapabilityKind::ResourceTemplate, "resourceTemplates"),
];

/// Small limits, so that inputs reach them.
const LIMITS: ListingLimits = ListingLimits {
    max_entries: 12,
    max_definition_bytes: 1024,
    max_bytes: 8 * 1024,
    page_timeout: Duration::from_secs(1),
};

/// The two upstreams: one trusting on first use, one holding everything for approval,
/// both under the prefix `x` so their names collide.
fn specs() -> [UpstreamSpec; 2] {
    let spec = |name: &str, trust| {
        let stdio = TransportSpec::Stdio { command: "true".into(), args: vec![], env: vec![], cwd: None };
        let mut spec = UpstreamSpec::new(name, stdio);
        spec.prefix = "x".into();
        spec.tunables.trust = trust;
        spec.tunables.new_capabilities = NewEntries::Trust;
        spec.pin_ignore_meta = vec!["com.example/etag".into()];
        spec.listing = LIMITS;
        spec
    };
    [spec("a", Trust::FirstUse), spec("b", Trust::Approve)]
}

/// One step: upstream `up` (0 or 1) lists these kinds (a kind given `null` answers an
/// error; an absent kind lists nothing), in pages of `page` entries; then, with
/// `approve`, everything waiting is approved as it is.
pub fn upstream_listing(data: &[u8]) {
    let Ok(Value::Array(steps)) = serde_json::from_slice::<Value>(data) else { return };
    let specs = specs();
    let mut books = [PinBook::default(), PinBook::default()];
    let mut listings: [Listing; 2] = [Vec::new(), Vec::new()];
    let mut first_served: HashMap<String, (usize, CapabilityKind, String)> = HashMap::new();
    let mut owners = HashMap::new();
    for (now, step) in steps.iter().take(16).enumerate() {
        let up = usize::from(step.get("up").and_then(Value::as_u64) == Some(1));
        let spec = &specs[up];
        listings[up] = listing(step);
        let (kinds, entries) = catalogue::observation(spec, &listings[up]);
        let policy = Policy {
            trust: spec.tunables.trust,
            new_capabilities: spec.tunables.new_capabilities,
            new_resources: spec.tunables.new_resources,
            kept_removed: 4,
        };
        let before = books[up].clone();
        let accepted = entries.len();
        books[up].observe(&kinds, entries, &policy, now as u64);
        // The book never grows by more than the accepted listing.
        assert!(books[up].pins().count() <= before.pins().count() + accepted, "the book grew past the listing");
        if step.get("approve") == Some(&Value::Bool(true)) {
            let waiting: Vec<_> = books[up]
                .pins()
                .filter(|pin| matches!(pin.state, PinState::Held | PinState::Drifted))
                .map(|pin| (pin.kind, pin.key.clone(), pin.seen.hash.clone()))
                .collect();
            for (kind, key, hash) in waiting {
                books[up].approve(kind, &key, &hash, "fuzz", now as u64).expect("what waits is approvable");
            }
        }
        let mut names = Names::of_realm(["x.own"], ["test://own"]).with_owners(std::mem::take(&mut owners));
        let [book_a, book_b] = &mut books;
        let mut sources = [
            Source { spec: &specs[0], book: book_a, order: catalogue::order(&listings[0]), listed: true },
            Source { spec: &specs[1], book: book_b, order: catalogue::order(&listings[1]), listed: true },
        ];
        let catalogues = catalogue::name_and_serve(&mut names, &mut sources);
        owners = names.into_owners();
        let approved = step.get("approve") == Some(&Value::Bool(true));
        for served in catalogues[up].served.iter().filter(|served| !kinds.contains(&served.target.kind) && !approved) {
            // A refused kind serves nothing that was not pinned as it is before the listing.
            let key = served.target.uri.as_deref().unwrap_or(&served.target.name);
            let was = before.pin(served.target.kind, key).and_then(|pin| pin.pinned.as_ref()).map(|seen| &seen.hash);
            let now = books[up].pin(served.target.kind, key).and_then(|pin| pin.pinned.as_ref()).map(|seen| &seen.hash);
            assert_eq!(was, now, "{key} of a refused listing is served under a new pin");
        }
        for (up, catalogue) in catalogues.iter().enumerate() {
            for served in &catalogue.served {
                check_served(&specs[up], &books[up], served);
                let key = served.target.uri.clone().unwrap_or_else(|| served.target.name.clone());
                let at = (up, served.target.kind, key);
                let first = first_served.entry(served.descriptor.id.as_str().to_owned()).or_insert_with(|| at.clone());
                assert_eq!(*first, at, "the id {} moved to another entry", served.descriptor.id);
            }
        }
    }
}

/// One step's listing, each kind held to [`LIMITS`] in pages of the step's `page`.
fn listing(step: &Value) -> Listing {
    let page = step.get("page").and_then(Value::as_u64).map_or(4, |n| n.clamp(1, 64) as usize);
    KINDS
        .iter()
        .map(|(kind, field)| {
            let listed = match step.get(*field) {
                Some(Value::Null) => {
                    KindListing::Refused(Refused::Failed { method: "list", code: -32603, message: "no".into() })
                }
                entries => {
                    let entries = entries.and_then(Value::as_array).cloned().unwrap_or_default();
                    let mut collect = Collect::new(*kind, LIMITS);
                    match entries.chunks(page).try_for_each(|chunk| collect.page(chunk.to_vec())) {
                        Ok(()) => KindListing::Listed(collect.finish().0),
                        Err(refused) => KindListing::Refused(refused),
                    }
                }
            };
            (*kind, listed)
        })
        .collect()
}

/// Asserts the first rule for `served`, an entry of the upstream of `spec` whose pins
/// are `book`, in every era's list entry: what a caller receives, adjusted exactly as the
/// rule allows, is the pinned definition (compared as JSON values, not only by hash).
pub fn check_served(spec: &UpstreamSpec, book: &PinBook, served: &Served) {
    let target = &served.target;
    let key = target.uri.as_deref().unwrap_or(&target.name);
    let pin = book.pin(target.kind, key).expect("a served entry has a pin");
    assert_eq!(pin.state, PinState::Pinned, "{key} is served but {}", pin.state.as_str());
    assert_eq!(pin.id.as_deref(), Some(served.descriptor.id.as_str()), "{key} is served under an id not its pin's");
    let pinned = pin.pinned.as_ref().expect("a pinned pin has its pinned definition");
    let expected = comparable(target.kind, &pinned.definition, &spec.pin_ignore_meta);
    let wire = McpLint.check(&served.descriptor).expect("a served entry compiles");
    let rendered: Vec<(Era, &str)> = match target.kind {
        CapabilityKind::Tool => {
            let tool = wire.downcast_ref::<ToolWire>().expect("a tool's wire");
            vec![(Era::Modern, tool.rendered(Era::Modern).get()), (Era::Handshake, tool.rendered(Era::Handshake).get())]
        }
        _ => vec![(Era::Modern, wire.downcast_ref::<EntryWire>().expect("an entry's wire").json.get())],
    };
    for (era, text) in rendered {
        let Ok(Value::Object(mut received)) = serde_json::from_str::<Value>(text) else {
            panic!("{key}: a list entry that is not an object: {text}");
        };
        // 1. The upstream's name restored (a URI is never rewritten).
        received.insert("name".into(), Value::String(target.name.clone()));
        // 2. Bondry's own `_meta` key removed (the clients a tool requires is the
        //    upstream's, served as it says).
        if let Some(Value::Object(meta)) = received.get_mut("_meta") {
            meta.remove("dev.bondry/hash");
        }
        // 4. What the handshake era leaves out of a tool, taken from the pin.
        if era == Era::Handshake
            && target.kind == CapabilityKind::Tool
            && let Some(output) = pinned.definition.get("outputSchema")
            && output.get("type").and_then(Value::as_str) != Some("object")
        {
            received.entry("outputSchema").or_insert_with(|| output.clone());
        }
        // 3. The unhashed fields removed, on both sides.
        let received = Value::Object(received);
        assert_eq!(
            comparable(target.kind, &received, &[]),
            expected,
            "{key}: what a caller receives is not what was pinned: {text}"
        );
        let recomputed = definition_hash(target.kind, &received, &spec.pin_ignore_meta);
        assert_eq!(recomputed, pinned.hash, "{key}: what a caller receives does not hash to its pin: {text}");
    }
}

/// `definition` as the rule compares it, written here apart from the code under test:
/// without the `_meta` keys never served (`ignore_meta`, the protocol's, Bondry's but a
/// tool's `dev.bondry/requiresClient`), without a resource's integer `size` and string
/// `annotations.lastModified`, and without a `_meta` or `annotations` left empty.
fn comparable(kind: CapabilityKind, definition: &Value, ignore_meta: &[String]) -> Value {
    let mut definition = definition.clone();
    let Some(object) = definition.as_object_mut() else { return definition };
    if let Some(Value::Object(meta)) = object.get_mut("_meta") {
        meta.retain(|key, _| {
            !ignore_meta.contains(key)
                && !key.starts_with("io.modelcontextprotocol/")
                && (!key.starts_with("dev.bondry/")
                    || (kind == CapabilityKind::Tool && key == "dev.bondry/requiresClient"))
        });
    }
    if matches!(kind, CapabilityKind::Resource | CapabilityKind::ResourceTemplate) {
        if object.get("size").is_some_and(|size| size.as_u64().is_some()) {
            object.remove("size");
        }
        if let Some(Value::Object(annotations)) = object.get_mut("annotations")
            && annotations.get("lastModified").is_some_and(Value::is_string)
        {
            annotations.remove("lastModified");
            if annotations.is_empty() {
                object.remove("annotations");
            }
        }
    }
    if object.get("_meta").is_some_and(|meta| meta.as_object().is_some_and(|meta| meta.is_empty())) {
        object.remove("_meta");
    }
    definition
}
