//! What an operator sees of a realm's upstreams and does to them (the admin API's side,
//! docs/upstreams.md): each upstream's state and pins, a pin's definitions, approvals at the
//! hash reviewed, and a listing on demand.

use std::time::Duration;

use bondry_core::capability::CapabilityKind;

use crate::catalogue::Exposed;
use crate::pins::{Pin, PinBook, PinState, Refusal};
use crate::realm::{Member, Observe, RealmUpstreams};
use crate::upstream::{Status, Upstream, lock, now_ms, read};

/// How long an operator's listing may take.
const LIST_WITHIN: Duration = Duration::from_secs(30);

/// One upstream as an operator sees it.
#[derive(Debug, Clone)]
pub struct UpstreamReport {
    pub name: String,
    pub status: Status,
    /// How many of its pins are in each state.
    pub counts: Vec<(PinState, usize)>,
    /// How many of its entries callers can see and call now: pinned, named, and served.
    pub served: usize,
    /// How many of its pins a migration to the current hash form covered more of, not yet
    /// approved since.
    pub migrated: usize,
    /// Every pin, by kind then key, with the id its entry is exposed as while listed.
    pub capabilities: Vec<CapabilityReport>,
}

#[derive(Debug, Clone)]
pub struct CapabilityReport {
    pub exposed: Option<Exposed>,
    pub pin: Pin,
}

/// The operator reviewed `kind`/`key` at `hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approve {
    pub kind: CapabilityKind,
    pub key: String,
    pub hash: String,
}

/// Why an approval names something it cannot approve: what is there now, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub kind: CapabilityKind,
    pub key: String,
    pub why: &'static str,
    /// The hash of its current definition.
    pub current: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewError {
    UnknownUpstream,
    UnknownCapability,
    /// Nothing was approved: each conflict says why.
    Conflicts(Vec<Conflict>),
    /// The store could not keep the approval: nothing was approved.
    NotSaved(String),
    /// A listing on demand failed.
    NotListed(&'static str),
}

impl RealmUpstreams {
    /// The upstreams marked `required` that are not connected now, with their state.
    pub fn required_down(&self) -> Vec<(String, &'static str)> {
        let members = read(&self.realm.members);
        let required = members.iter().map(|member| &member.upstream).filter(|upstream| upstream.spec().required);
        // Connected is not yet serving: its capabilities arrive with its first listing.
        let state = |upstream: &Upstream| match upstream.state() {
            "serving" if !upstream.has_listed() => "listing",
            state => state,
        };
        required
            .map(|upstream| (upstream.name().to_owned(), state(upstream)))
            .filter(|(_, state)| *state != "serving")
            .collect()
    }

    /// Every upstream of the realm, in stanza order, without their capabilities.
    pub fn reports(&self) -> Vec<UpstreamReport> {
        read(&self.realm.members).iter().map(|member| report(member, false)).collect()
    }

    /// Every upstream of the realm, in stanza order, with every capability.
    pub fn full_reports(&self) -> Vec<UpstreamReport> {
        read(&self.realm.members).iter().map(|member| report(member, true)).collect()
    }

    /// The upstream `name` with every capability.
    pub fn report(&self, name: &str) -> Option<UpstreamReport> {
        self.member(name).map(|member| report(&member, true))
    }

    /// The pin of `kind`/`key` of the upstream `name`, with both its definitions.
    pub fn pin(&self, name: &str, kind: CapabilityKind, key: &str) -> Result<Pin, ReviewError> {
        let member = self.member(name).ok_or(ReviewError::UnknownUpstream)?;
        let book = lock(&member.pins);
        book.pin(kind, key).cloned().ok_or(ReviewError::UnknownCapability)
    }

    /// Pins each of `approvals` at the hash the operator `by` reviewed, or, with `all`,
    /// exactly the held and drifted capabilities `approvals` names, as they are: all or
    /// nothing. Approved capabilities are served at once.
    pub fn approve(&self, name: &str, approvals: &[Approve], all: bool, by: &str) -> Result<Vec<Pin>, ReviewError> {
        let member = self.member(name).ok_or(ReviewError::UnknownUpstream)?;
        let approved = {
            let mut book = lock(&member.pins);
            let mut trial = book.clone();
            let mut conflicts = if all { unexpected(&trial, approvals) } else { Vec::new() };
            let now = now_ms();
            let mut approved = Vec::new();
            for wanted in approvals {
                match trial.approve(wanted.kind, &wanted.key, &wanted.hash, by, now) {
                    Ok(pin) => approved.push(pin),
                    Err(refusal) => conflicts.push(conflict(wanted, refusal)),
                }
            }
            if !conflicts.is_empty() {
                return Err(ReviewError::Conflicts(conflicts));
            }
            let changed: Vec<&Pin> = approved.iter().collect();
            self.realm
                .store
                .save(&self.realm.name, name, &trial, &changed)
                .map_err(|error| ReviewError::NotSaved(error.to_string()))?;
            *book = trial;
            approved
        };
        for pin in &approved {
            tracing::info!(
                upstream = name,
                kind = pin.kind_name(),
                key = pin.key,
                hash = pin.seen.hash,
                by,
                "an upstream definition is approved: served"
            );
        }
        self.realm.name_and_offer(Observe::Nothing);
        Ok(approved)
    }

    /// Lists the upstream `name` now; once the listing has landed.
    pub async fn list_now(&self, name: &str) -> Result<(), ReviewError> {
        let member = self.member(name).ok_or(ReviewError::UnknownUpstream)?;
        member.upstream.list_now(LIST_WITHIN).await.map_err(ReviewError::NotListed)
    }

    fn member(&self, name: &str) -> Option<Member> {
        read(&self.realm.members).iter().find(|member| member.upstream.name() == name).cloned()
    }
}

fn report(member: &Member, with_capabilities: bool) -> UpstreamReport {
    let book = lock(&member.pins);
    let states = [PinState::Pinned, PinState::Held, PinState::Drifted, PinState::Removed];
    let counts = states.map(|state| (state, book.pins().filter(|pin| pin.state == state).count())).to_vec();
    let exposed = lock(&member.exposed);
    let listed = |pin: &Pin| exposed.get(&(pin.kind, pin.key.clone())).filter(|_| pin.state != PinState::Removed);
    let served = book
        .pins()
        .filter(|pin| pin.state == PinState::Pinned && listed(pin).is_some_and(|named| named.unserved.is_none()))
        .count();
    let migrated = book.pins().filter(|pin| pin.migrated.is_some()).count();
    let capabilities = if with_capabilities {
        book.pins().map(|pin| CapabilityReport { exposed: listed(pin).cloned(), pin: pin.clone() }).collect()
    } else {
        Vec::new()
    };
    let (name, status) = (member.upstream.name().to_owned(), member.upstream.status());
    UpstreamReport { name, status, counts, served, migrated, capabilities }
}

/// What `approve all` finds held or drifted that `expect` does not name as it is now.
fn unexpected(book: &PinBook, expect: &[Approve]) -> Vec<Conflict> {
    let waiting = book.pins().filter(|pin| matches!(pin.state, PinState::Held | PinState::Drifted));
    waiting
        .filter(|pin| !expect.iter().any(|named| named.kind == pin.kind && named.key == pin.key))
        .map(|pin| Conflict {
            kind: pin.kind,
            key: pin.key.clone(),
            why: "awaits approval but is not expected",
            current: Some(pin.seen.hash.clone()),
        })
        .collect()
}

fn conflict(wanted: &Approve, refusal: Refusal) -> Conflict {
    let (why, current) = match refusal {
        Refusal::Unknown => ("is not listed by the upstream", None),
        Refusal::Removed => ("is no longer listed", None),
        Refusal::Stale { current } => ("changed since it was reviewed", Some(current)),
    };
    Conflict { kind: wanted.kind, key: wanted.key.clone(), why, current }
}
