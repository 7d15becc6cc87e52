//! Naming and offering: every listing that changes something moves the upstream's pins,
//! names every upstream's entries again, against the realm's own capabilities, and offers
//! each upstream's pinned set to the registry.

use std::collections::HashMap;
use std::sync::Arc;

use bondry_core::registry::Registration;

use super::{Member, Observe, Realm};
use crate::catalogue::{self, Source};
use crate::definition::BINDING_KIND;
use crate::naming::Names;
use crate::pins::{Observed, Pin, PinBook, PinState, Policy, kind_of};
use crate::upstream::{News, Upstream, lock, now_ms, read};
use crate::warnings;

impl News for Realm {
    fn listed(&self, upstream: &Upstream) {
        self.name_and_offer(Observe::Listed(upstream.name()));
    }

    fn resource_updated(&self, uri: &str) {
        self.events.resource_updated(uri);
    }
}

impl Realm {
    /// Moves the pins `observe` names, names every upstream's entries in stanza order and
    /// offers each upstream's pinned set; the log marks the listing of the upstream that
    /// listed, if one did.
    pub(crate) fn name_and_offer(&self, observe: Observe<'_>) {
        let _one_at_a_time = self.naming.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let snapshot = self.events.snapshot();
        // The realm's own capabilities keep their ids and URIs whatever upstreams list.
        let own: Vec<_> =
            snapshot.catalogue.iter().filter(|entry| entry.descriptor.binding.kind != BINDING_KIND).collect();
        // Nor may an entry take the ids of the tools that search and call searched ones.
        let mut names = Names::of_realm(
            own.iter().map(|entry| entry.id().as_str()).chain(bondry_mcp_proto::vocabulary::RESERVED_TOOL_IDS),
            own.iter().filter_map(|entry| entry.descriptor.uri.as_deref()),
        )
        .with_owners(std::mem::take(&mut *lock(&self.owners)));
        let members = read(&self.members);
        for member in members.iter() {
            let listed = matches!(observe, Observe::Listed(name) if name == member.upstream.name());
            if (listed || matches!(observe, Observe::All)) && member.upstream.has_listed() {
                self.observe(member);
            }
        }
        let specs: Vec<_> = members.iter().map(|member| member.upstream.spec()).collect();
        let mut books: Vec<_> = members.iter().map(|member| lock(&member.pins)).collect();
        let mut sources: Vec<Source<'_>> = members
            .iter()
            .zip(&specs)
            .zip(books.iter_mut())
            .map(|((member, spec), book)| Source {
                spec,
                book,
                order: catalogue::order(&member.upstream.listing()),
                listed: member.upstream.has_listed(),
            })
            .collect();
        let catalogues = catalogue::name_and_serve(&mut names, &mut sources);
        drop(sources);
        *lock(&self.owners) = names.into_owners();
        let mut named = Vec::with_capacity(members.len());
        for ((member, book), catalogue) in members.iter().zip(&books).zip(catalogues) {
            let Member { upstream, relay, .. } = member;
            if !catalogue.changed.is_empty() {
                let changed: Vec<&Pin> = catalogue.changed.iter().collect();
                if let Err(error) = self.store.save(&self.name, upstream.name(), book, &changed) {
                    tracing::error!(upstream = upstream.name(), %error, "the upstream's ids are not saved: a restart names them again");
                }
            }
            let listed = matches!(observe, Observe::Listed(name) if name == upstream.name());
            let mut targets = HashMap::new();
            let mut registrations = Vec::with_capacity(catalogue.served.len());
            for served in catalogue.served {
                targets.insert(served.descriptor.id.clone(), served.target);
                registrations
                    .push(Registration { descriptor: Arc::new(served.descriptor), handler: Arc::clone(relay) });
            }
            // The targets first, so a call to a new entry finds what to call upstream.
            upstream.set_targets(targets);
            named.push((member, listed, registrations, catalogue.exposed));
        }
        drop(books);
        // Offered in stanza order. An earlier upstream can claim a name or URI that a later
        // one still holds from its last offer, until that one's new offer gives it up: an
        // offer refused in part is made again once every upstream's new set is in.
        let mut refused: Vec<_> = named
            .iter()
            .map(|(member, _, registrations, _)| self.events.offer(&member.upstream.owner(), registrations.clone()))
            .collect();
        for ((member, _, registrations, _), skipped) in named.iter().zip(refused.iter_mut()) {
            if !skipped.is_empty() {
                *skipped = self.events.offer(&member.upstream.owner(), registrations.clone());
            }
        }
        for ((member, listed, registrations, mut ids), skipped) in named.into_iter().zip(refused) {
            let Member { upstream, pins, exposed, .. } = member;
            for skipped in &skipped {
                if let Some(print) = warnings::hear(upstream.name(), skipped.id.as_str(), &skipped.why) {
                    tracing::warn!(
                        upstream = upstream.name(),
                        entry = %skipped.id,
                        why = skipped.why,
                        suppressed = print.suppressed,
                        "an upstream entry is not served"
                    );
                }
                if let Some(named) = ids.values_mut().find(|named| named.id == skipped.id.as_str()) {
                    named.unserved = Some(skipped.why.to_string());
                }
            }
            *lock(exposed) = ids;
            if listed {
                self.log_listing(upstream, &lock(pins), registrations.len() - skipped.len());
            }
        }
    }

    /// The line an operator reads when an upstream lists: what it serves, and what waits
    /// for their review and the command that reviews it.
    fn log_listing(&self, upstream: &Upstream, pins: &PinBook, served: usize) {
        let withheld = pins.pins().filter(|pin| matches!(pin.state, PinState::Held | PinState::Drifted)).count();
        let status = upstream.status();
        let revision = status.revision.as_deref().unwrap_or("not connected");
        let review = match withheld {
            0 => "none withheld".to_owned(),
            count => format!("{count} withheld pending review: bondry upstream info {}/{}", self.name, upstream.name()),
        };
        tracing::info!(
            "upstream {}: {served} capabilities listed ({}, {revision}); {review}",
            upstream.name(),
            status.transport
        );
    }

    /// Moves `member`'s pins as its latest listing says, logs what moved and stores it.
    fn observe(&self, Member { upstream, pins, .. }: &Member) {
        let spec = upstream.spec();
        let (listed_kinds, entries) = catalogue::observation(&spec, &upstream.listing());
        let policy = Policy {
            trust: spec.tunables.trust,
            new_capabilities: spec.tunables.new_capabilities,
            new_resources: spec.tunables.new_resources,
            kept_removed: spec.listing.max_entries,
        };
        let mut book = lock(pins);
        let migrated = book.migrate(&entries, spec.tunables.trust, &spec.pin_ignore_meta);
        if !migrated.is_empty() {
            let marked = migrated.iter().filter(|pin| pin.migrated.is_some()).count();
            tracing::warn!(
                upstream = spec.name,
                pins = migrated.len(),
                marked,
                "pins migrated to the current hash form: those it covers more of are marked migrated (bondry upstream info)"
            );
        }
        let observed = book.observe(&listed_kinds, entries, &policy, now_ms());
        if !observed.forgotten.is_empty()
            && let Err(error) = self.store.forget(&self.name, &spec.name, &book, &observed.forgotten)
        {
            tracing::error!(upstream = spec.name, %error, "the upstream's pins no longer listed are not forgotten");
        }
        if observed.changed.is_empty() && observed.refreshed.is_empty() && migrated.is_empty() && !observed.first {
            return;
        }
        log_moves(&spec.name, &observed);
        let changed: Vec<&Pin> =
            migrated.iter().chain(observed.changed.iter().map(|(_, pin)| pin)).chain(&observed.refreshed).collect();
        if let Err(error) = self.store.save(&self.name, &spec.name, &book, &changed) {
            tracing::error!(upstream = spec.name, %error, "the upstream's pins are not saved: a restart forgets what moved");
        }
    }
}

/// Logs each pin a listing of `upstream` moved: a warning for what is withheld. An entry
/// that keeps moving the same way (drifting from one pin, changing while held) is logged
/// as [`warnings`] says; a drift from another pin, after an approval, is a new cause.
fn log_moves(upstream: &str, observed: &Observed) {
    let pinned = observed.changed.iter().filter(|(before, pin)| before.is_none() && pin.state == PinState::Pinned);
    let pinned = pinned.count();
    if pinned > 0 {
        tracing::info!(upstream, pinned, "upstream definitions pinned as first listed");
    }
    for (before, pin) in &observed.changed {
        let (kind, key, hash) = (kind_of(pin.kind), pin.key.as_str(), pin.seen.hash.as_str());
        let pinned_hash = pin.pinned.as_ref().map(|pinned| pinned.hash.as_str());
        let entry = format!("{kind} {key}");
        let heard = |cause: &str| warnings::hear(upstream, &entry, cause).map(|print| print.suppressed);
        match (before, pin.state) {
            (None, PinState::Pinned) => {}
            (None | Some(PinState::Removed), PinState::Held) => {
                if let Some(suppressed) = heard("new") {
                    tracing::warn!(
                        upstream,
                        kind,
                        key,
                        hash,
                        suppressed,
                        "an upstream definition is new: held until approved"
                    )
                }
            }
            (_, PinState::Drifted) => {
                if let Some(suppressed) = heard(&format!("drifted from {}", pinned_hash.unwrap_or_default())) {
                    tracing::warn!(
                        upstream,
                        kind,
                        key,
                        pinned = pinned_hash,
                        hash,
                        suppressed,
                        "an upstream definition drifted from its pin: withheld until approved"
                    )
                }
            }
            (_, PinState::Removed) => {
                if let Some(suppressed) = heard("removed") {
                    tracing::info!(upstream, kind, key, suppressed, "an upstream definition is no longer listed")
                }
            }
            (Some(_), PinState::Pinned | PinState::Held) => {
                let (cause, what) = if pin.state == PinState::Pinned {
                    ("pinned", "an upstream definition is listed as pinned: served")
                } else {
                    ("changed while held", "a held upstream definition changed: still held")
                };
                if let Some(suppressed) = heard(cause) {
                    tracing::info!(upstream, kind, key, hash, suppressed, "{what}")
                }
            }
        }
    }
}
