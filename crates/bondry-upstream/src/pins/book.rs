//! One upstream's pins and how a listing moves them: only `pinned` is served; `held`,
//! `drifted` and `removed` answer as missing (docs/upstreams.md). Pure: the caller gives
//! the time and stores what changed.

use std::collections::{BTreeMap, HashSet};

use bondry_catalogue::hash::definition_hash;
use bondry_core::capability::CapabilityKind;

use super::hash::{HASH_FORM, form_1_hash, kind_of, newly_covered};
use super::pin::{Approval, Observed, Pin, PinState, Policy, Refusal, Seen};
use crate::spec::Trust;

/// One upstream's pins, by kind and key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PinBook {
    /// Whether the upstream was ever listed: its first listing is trusted as `trust` says.
    listed: bool,
    /// The prefix the pins' ids were named under: ids named under another are named again.
    prefix: Option<String>,
    pins: BTreeMap<(&'static str, String), Pin>,
}

impl PinBook {
    /// The book as stored.
    pub fn restored(listed: bool, prefix: Option<String>, pins: impl IntoIterator<Item = Pin>) -> Self {
        let pins = pins.into_iter().map(|pin| ((kind_of(pin.kind), pin.key.clone()), pin)).collect();
        Self { listed, prefix, pins }
    }

    pub fn listed(&self) -> bool {
        self.listed
    }

    /// The prefix the pins' ids were named under, if they were named.
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// The pins' ids are named under `prefix` from now on: if it is not the one they were
    /// named under, every id is forgotten (to be named again), and the pins that had one
    /// are returned, changed.
    pub fn name_under(&mut self, prefix: &str) -> Vec<Pin> {
        if self.prefix.as_deref() == Some(prefix) {
            return Vec::new();
        }
        self.prefix = Some(prefix.to_owned());
        let named = self.pins.values_mut().filter(|pin| pin.id.is_some());
        named
            .map(|pin| {
                pin.id = None;
                pin.clone()
            })
            .collect()
    }

    /// Names `kind`/`key` `id` (or forgets its id); the pin, if that changed it.
    pub fn set_id(&mut self, kind: CapabilityKind, key: &str, id: Option<String>) -> Option<Pin> {
        let pin = self.pins.get_mut(&(kind_of(kind), key.to_owned()))?;
        (pin.id != id).then(|| {
            pin.id = id;
            pin.clone()
        })
    }

    /// Brings the pins of an older hash form that `listed` (a listing's entries, hashed in
    /// the current form) names to [`HASH_FORM`], before [`PinBook::observe`] takes the
    /// listing: a pin whose old-form hash matches what is listed now is re-pinned on it in
    /// the current form, so an upgrade withdraws nothing; one the current form covers more
    /// of is marked `migrated` (with the fields newly covered) and, under `trust =
    /// "approve"`, held until approved. A pin that does not match keeps what it pinned,
    /// in the current form: the listing finds it drifted. The pins changed.
    pub fn migrate(
        &mut self,
        listed: &[(CapabilityKind, String, Seen)],
        trust: Trust,
        ignore_meta: &[String],
    ) -> Vec<Pin> {
        let mut changed = Vec::new();
        for (kind, key, seen) in listed {
            let Some(pin) = self.pins.get_mut(&(kind_of(*kind), key.clone())).filter(|pin| pin.form < HASH_FORM) else {
                continue;
            };
            pin.form = HASH_FORM;
            pin.seen = Seen { hash: definition_hash(*kind, &pin.seen.definition, ignore_meta), ..pin.seen.clone() };
            let Some(pinned) = &pin.pinned else {
                changed.push(pin.clone());
                continue;
            };
            if form_1_hash(*kind, &seen.definition, ignore_meta) != pinned.hash {
                pin.pinned =
                    Some(Seen { hash: definition_hash(*kind, &pinned.definition, ignore_meta), ..pinned.clone() });
                changed.push(pin.clone());
                continue;
            }
            let covered = newly_covered(*kind, &seen.definition);
            if covered.is_empty() {
                pin.pinned = Some(seen.clone());
            } else {
                pin.migrated = Some(covered);
                pin.pinned = (trust == Trust::FirstUse).then(|| seen.clone());
                if pin.pinned.is_none() && pin.state != PinState::Removed {
                    pin.state = PinState::Held;
                }
            }
            changed.push(pin.clone());
        }
        changed
    }

    /// Every pin, by kind then key.
    pub fn pins(&self) -> impl Iterator<Item = &Pin> {
        self.pins.values()
    }

    pub fn pin(&self, kind: CapabilityKind, key: &str) -> Option<&Pin> {
        self.pins.get(&(kind_of(kind), key.to_owned()))
    }

    /// Whether the key is served: pinned, and listed as pinned.
    pub fn serves(&self, kind: CapabilityKind, key: &str) -> bool {
        self.pin(kind, key).is_some_and(|pin| pin.state == PinState::Pinned)
    }

    /// Moves the pins as a listing of `entries` (kind, key, what was seen) says, at
    /// `now_ms`: a new key is pinned or held as `policy` says; a known one is pinned when
    /// it matches its pin, drifted when it does not, held when it never had one; a key
    /// of a kind in `listed` that is not listed is removed; the pins of other kinds (whose
    /// listing was refused) stay as they are. A key listed twice counts once, as first
    /// listed (a listing with a repeated key is refused before it gets here). A listing of
    /// no kind at all is not a listing.
    pub fn observe(
        &mut self,
        listed_kinds: &[CapabilityKind],
        entries: impl IntoIterator<Item = (CapabilityKind, String, Seen)>,
        policy: &Policy,
        now_ms: u64,
    ) -> Observed {
        let first = !self.listed;
        if listed_kinds.is_empty() {
            return Observed::default();
        }
        self.listed = true;
        let mut changed = Vec::new();
        let mut refreshed = Vec::new();
        let mut listed = HashSet::new();
        for (kind, key, seen) in entries {
            let slot = (kind_of(kind), key);
            if !listed.insert(slot.clone()) {
                continue;
            }
            let (before, pin) = match self.pins.get(&slot) {
                None => {
                    let trusted = policy.trusts(kind, first);
                    let state = if trusted { PinState::Pinned } else { PinState::Held };
                    let pinned = trusted.then(|| seen.clone());
                    let key = slot.1.clone();
                    let pin = Pin {
                        kind,
                        key,
                        state,
                        pinned,
                        seen,
                        first_seen_ms: now_ms,
                        approval: None,
                        id: None,
                        form: HASH_FORM,
                        migrated: None,
                    };
                    (None, pin)
                }
                Some(pin) => {
                    let state = match &pin.pinned {
                        Some(pinned) if pinned.hash == seen.hash => PinState::Pinned,
                        Some(_) => PinState::Drifted,
                        None => PinState::Held,
                    };
                    if state == pin.state && seen.hash == pin.seen.hash {
                        if seen.definition != pin.seen.definition {
                            let pin = Pin { seen, ..pin.clone() };
                            self.pins.insert(slot, pin.clone());
                            refreshed.push(pin);
                        }
                        continue;
                    }
                    (Some(pin.state), Pin { state, seen, ..pin.clone() })
                }
            };
            self.pins.insert(slot, pin.clone());
            changed.push((before, pin));
        }
        for (slot, pin) in &mut self.pins {
            if pin.state != PinState::Removed && listed_kinds.contains(&pin.kind) && !listed.contains(slot) {
                let before = pin.state;
                pin.state = PinState::Removed;
                changed.push((Some(before), pin.clone()));
            }
        }
        let forgotten = self.forget(listed_kinds, policy.kept_removed);
        changed.retain(|(_, pin)| !forgotten.contains(&(pin.kind, pin.key.clone())));
        Observed { first, changed, refreshed, forgotten }
    }

    /// Forgets, of `kinds`, the removed pins never pinned and, past `kept` per kind, the
    /// removed ones seen first longest ago: an upstream listing new names on every listing
    /// cannot grow its pins without bound.
    fn forget(&mut self, kinds: &[CapabilityKind], kept: usize) -> Vec<(CapabilityKind, String)> {
        let mut forgotten = Vec::new();
        for kind in kinds {
            let removed = self.pins.values().filter(|pin| pin.kind == *kind && pin.state == PinState::Removed);
            let (mut pinned, never): (Vec<&Pin>, Vec<&Pin>) = removed.partition(|pin| pin.pinned.is_some());
            pinned.sort_by_key(|pin| pin.first_seen_ms);
            let past = pinned.len().saturating_sub(kept);
            forgotten.extend(never.iter().chain(&pinned[..past]).map(|pin| (pin.kind, pin.key.clone())));
        }
        for (kind, key) in &forgotten {
            self.pins.remove(&(kind_of(*kind), key.clone()));
        }
        forgotten
    }

    /// Pins `kind`/`key` at `hash`, the hash the operator `by` reviewed, at `now_ms`:
    /// refused, changing nothing, unless that is the hash of its current definition.
    /// Approving what is pinned already succeeds, and clears a migration's mark.
    pub fn approve(
        &mut self,
        kind: CapabilityKind,
        key: &str,
        hash: &str,
        by: &str,
        now_ms: u64,
    ) -> Result<Pin, Refusal> {
        let pin = self.pins.get_mut(&(kind_of(kind), key.to_owned())).ok_or(Refusal::Unknown)?;
        if pin.state == PinState::Removed {
            return Err(Refusal::Removed);
        }
        if pin.seen.hash != hash {
            return Err(Refusal::Stale { current: pin.seen.hash.clone() });
        }
        // Pinned already, it is pinned again when what it pinned is not what is listed
        // (spelt otherwise, or marked by a migration).
        if pin.state != PinState::Pinned || pin.migrated.is_some() || pin.pinned.as_ref() != Some(&pin.seen) {
            pin.state = PinState::Pinned;
            pin.pinned = Some(pin.seen.clone());
            pin.approval = Some(Approval { by: by.to_owned(), at_ms: now_ms });
            pin.migrated = None;
        }
        Ok(pin.clone())
    }
}

#[cfg(test)]
mod tests;
