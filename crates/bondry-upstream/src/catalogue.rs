//! What a realm's upstreams serve, and under which ids: decided from their pins alone.
//! Pure: the realm gives the pin books and stores what changed.
//!
//! Two rules hold by construction:
//! - An entry is served only as its pin's last listed definition, and only when the pin
//!   hash recomputed from exactly what is served (the `pin_ignore_meta` keys stripped)
//!   equals the hash that was pinned: nothing an upstream lists reaches a caller unless
//!   that form was trusted.
//! - An id, once named, is kept with the pin and claimed before any new entry is named:
//!   it always maps to the (upstream, kind, key) it was first served under, whatever
//!   order later listings use.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::definition;
use crate::listing::{KindListing, Listing};
use crate::pins::{HASH_FORM, Pin, PinBook, PinState, Seen, kind_of, served};
use crate::spec::UpstreamSpec;
use crate::upstream::Target;
use crate::warnings;
use bondry_catalogue::hash::{definition_hash, hashed_form};
use bondry_catalogue::naming::{self, Names, Owner};
use bondry_core::capability::{CapabilityId, CapabilityKind, Descriptor};
use bondry_mcp_proto::lint;

/// The id an upstream entry is exposed as, whether naming had to rename it, and why it is
/// not served although named (a tool that runs only as a task, say), if it is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposed {
    pub id: String,
    pub renamed: bool,
    pub unserved: Option<String>,
}

/// One upstream as naming sees it.
pub struct Source<'a> {
    pub spec: &'a UpstreamSpec,
    pub book: &'a mut PinBook,
    /// The keys its latest listing holds, in the upstream's order: new ids are named in it.
    pub order: Vec<(CapabilityKind, String)>,
    /// Whether it listed since it started: until then its kept ids are held for it, but
    /// nothing of it is served, as nothing of it is known to be there.
    pub listed: bool,
}

/// One entry served: what the registry serves and what is called upstream.
#[derive(Debug)]
pub struct Served {
    pub descriptor: Descriptor,
    pub target: Target,
}

/// What naming decided for one upstream.
#[derive(Debug, Default)]
pub struct Catalogue {
    pub served: Vec<Served>,
    /// The id of each entry named, served or not, by kind and pin key.
    pub exposed: HashMap<(CapabilityKind, String), Exposed>,
    /// The pins whose id changed, for the store.
    pub changed: Vec<Pin>,
}

/// Names every source's entries, in stanza order, against `names` (the realm's own ids
/// and URIs), and decides what each one serves.
pub fn name_and_serve(names: &mut Names, sources: &mut [Source<'_>]) -> Vec<Catalogue> {
    let mut catalogues: Vec<Catalogue> = sources.iter().map(|_| Catalogue::default()).collect();
    for (source, catalogue) in sources.iter_mut().zip(&mut catalogues) {
        catalogue.changed.extend(source.book.name_under(&source.spec.prefix));
    }
    // Kept ids first, in stanza order: a later listing's new entry never takes one.
    for (source, catalogue) in sources.iter_mut().zip(&mut catalogues) {
        let kept: Vec<(CapabilityKind, String, String)> =
            source.book.pins().filter_map(|pin| Some((pin.kind, pin.key.clone(), pin.id.clone()?))).collect();
        for (kind, key, id) in kept {
            let owner = Owner { upstream: source.spec.name.clone(), kind, key: key.clone() };
            if !names.reserve(&id, &owner) {
                tracing::warn!(
                    upstream = source.spec.name,
                    kind = kind_of(kind),
                    key,
                    id,
                    "an upstream entry's id is taken by a configured capability: it is named again"
                );
                catalogue.changed.extend(source.book.set_id(kind, &key, None));
            }
        }
    }
    for (source, catalogue) in sources.iter_mut().zip(&mut catalogues).filter(|(source, _)| source.listed) {
        name_source(source, names, catalogue);
    }
    catalogues
}

/// Names and serves one source's entries: its listing's keys in order, then the pins its
/// listing did not hold (of a kind whose listing was refused).
fn name_source(source: &mut Source<'_>, names: &mut Names, catalogue: &mut Catalogue) {
    let spec = source.spec;
    let listed: HashSet<&(CapabilityKind, String)> = source.order.iter().collect();
    let unlisted = source
        .book
        .pins()
        .filter(|pin| pin.state != PinState::Removed && !listed.contains(&(pin.kind, pin.key.clone())))
        .map(|pin| (pin.kind, pin.key.clone()));
    let keys: Vec<(CapabilityKind, String)> =
        source.order.iter().cloned().chain(unlisted.collect::<Vec<_>>()).collect();
    for (kind, key) in keys {
        let Some(pin) = source.book.pin(kind, &key) else { continue };
        if pin.state == PinState::Removed {
            continue;
        }
        let definition = Arc::clone(&pin.seen.definition);
        let Ok((name, uri)) = definition::identity(kind, &definition) else { continue };
        // A reload that narrows `expose`, `include` or `exclude` withdraws at once.
        if !spec.expose.covers(kind) || !spec.admits(name) {
            continue;
        }
        let id = match pin.id.clone() {
            Some(id) => id,
            None => {
                let owner = Owner { upstream: spec.name.clone(), kind, key: key.clone() };
                let Some(id) = names.claim_id(&owner, &spec.prefix, name, uri) else {
                    if let Some(print) = warnings::hear(&spec.name, &format!("{} {key}", kind_of(kind)), "id clashes") {
                        tracing::warn!(
                            upstream = spec.name,
                            entry = name,
                            suppressed = print.suppressed,
                            "an upstream entry is not served: its id clashes"
                        );
                    }
                    continue;
                };
                if !naming::is_plain(&id, &spec.prefix, name) {
                    tracing::info!(
                        upstream = spec.name,
                        entry = name,
                        id,
                        "an upstream entry is renamed: its name is taken or too long"
                    );
                }
                catalogue.changed.extend(source.book.set_id(kind, &key, Some(id.clone())));
                id
            }
        };
        let renamed = !naming::is_plain(&id, &spec.prefix, name);
        let pin = source.book.pin(kind, &key).expect("named above");
        let unserved = match serve(spec, pin, &id, name, uri) {
            // Only what is served claims its URI: a held entry shadows nothing.
            Ok(Some(_)) if uri.is_some_and(|uri| !names.claim_uri(uri)) => {
                Some("shadowed: another source serves its URI".to_owned())
            }
            Ok(Some(entry)) => {
                catalogue.served.push(entry);
                None
            }
            Ok(None) => None,
            Err(why) => Some(why),
        };
        if let Some(why) = &unserved
            && let Some(print) = warnings::hear(&spec.name, &format!("{} {key}", kind_of(kind)), why)
        {
            let suppressed = print.suppressed;
            tracing::warn!(upstream = spec.name, entry = name, uri, why, suppressed, "an upstream entry is not served");
        }
        catalogue.exposed.insert((kind, key), Exposed { id, renamed, unserved });
    }
}

/// What `pin`, named `id`, serves: nothing unless it is pinned, and then exactly its last
/// listed definition, checked against its pin; why not when Bondry cannot serve it.
fn serve(spec: &UpstreamSpec, pin: &Pin, id: &str, name: &str, uri: Option<&str>) -> Result<Option<Served>, String> {
    let Some(pinned) = pin.pinned.as_ref().filter(|_| pin.state == PinState::Pinned) else { return Ok(None) };
    let entry = served(&pin.seen.definition, &spec.pin_ignore_meta);
    if pin.form < HASH_FORM {
        return Err("its pin is of an earlier hash form: it is served once listed again".into());
    }
    if definition_hash(pin.kind, &entry, &spec.pin_ignore_meta) != pinned.hash {
        return Err("it differs from its pin under this pin_ignore_meta: it is served once listed again".into());
    }
    // Equal hashes, and yet what would be served is not what was pinned: a number spelt
    // otherwise (`1.0` for `1`), which RFC 8785 hashes alike.
    if hashed_form(pin.kind, &entry, &spec.pin_ignore_meta)
        != hashed_form(pin.kind, &pinned.definition, &spec.pin_ignore_meta)
    {
        return Err("it differs from its pin in a way its hash does not show: approve it to serve it".into());
    }
    let id = CapabilityId::new(id).map_err(|error| error.to_string())?;
    let mut descriptor = definition::descriptor(pin.kind, id, &spec.name, &entry)?;
    if pin.kind == CapabilityKind::Tool {
        descriptor.listing = spec.tool_listing;
    }
    let params = match pin.kind {
        CapabilityKind::Tool => lint::param_headers(&descriptor.input_schema)?,
        _ => Vec::new(),
    };
    let target = Target { kind: pin.kind, name: name.to_owned(), uri: uri.map(str::to_owned), params };
    Ok(Some(Served { descriptor, target }))
}

/// What a listing shows the pin book: the kinds it listed (a refused kind's pins stay as
/// they are) and each admitted entry of those with its key and hash.
pub fn observation(
    spec: &UpstreamSpec,
    listing: &Listing,
) -> (Vec<CapabilityKind>, Vec<(CapabilityKind, String, Seen)>) {
    let mut kinds = Vec::new();
    let mut entries = Vec::new();
    for (kind, listed) in listing {
        let KindListing::Listed(listed) = listed else { continue };
        kinds.push(*kind);
        entries.extend(listed.iter().filter_map(|entry| {
            let (name, uri) = definition::identity(*kind, entry).ok()?;
            let key = spec.admits(name).then(|| uri.unwrap_or(name).to_owned())?;
            let hash = definition_hash(*kind, entry, &spec.pin_ignore_meta);
            Some((*kind, key, Seen { hash, definition: Arc::new(entry.clone()) }))
        }));
    }
    (kinds, entries)
}

/// The keys `listing` holds, in the upstream's order: what new ids are named in.
pub fn order(listing: &Listing) -> Vec<(CapabilityKind, String)> {
    let mut keys = Vec::new();
    for (kind, listed) in listing {
        if let KindListing::Listed(entries) = listed {
            keys.extend(entries.iter().filter_map(|entry| {
                definition::identity(*kind, entry).ok().map(|(name, uri)| (*kind, uri.unwrap_or(name).to_owned()))
            }));
        }
    }
    keys
}

#[cfg(test)]
mod tests;
