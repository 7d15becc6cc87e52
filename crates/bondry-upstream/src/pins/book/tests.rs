use super::*;
use std::sync::Arc;

use serde_json::json;

use crate::spec::NewEntries;

const ALL: &[CapabilityKind] =
    &[CapabilityKind::Tool, CapabilityKind::Prompt, CapabilityKind::Resource, CapabilityKind::ResourceTemplate];

const FIRST_USE: Policy = Policy {
    trust: Trust::FirstUse,
    new_capabilities: NewEntries::Hold,
    new_resources: NewEntries::Trust,
    kept_removed: 2000,
};

fn seen(text: &str) -> Seen {
    Seen { hash: format!("sha256:{text}"), definition: Arc::new(json!({"description": text})) }
}

fn tool(key: &str, text: &str) -> (CapabilityKind, String, Seen) {
    (CapabilityKind::Tool, key.to_owned(), seen(text))
}

fn states(book: &PinBook) -> Vec<(String, PinState)> {
    book.pins().map(|pin| (pin.key.clone(), pin.state)).collect()
}

#[test]
fn the_first_listing_is_pinned_on_first_use_and_later_new_tools_are_held() {
    let mut book = PinBook::default();
    let first = book.observe(ALL, [tool("a", "1"), tool("b", "1")], &FIRST_USE, 10);
    assert!(first.first && first.changed.iter().all(|(before, _)| before.is_none()));
    assert!(book.serves(CapabilityKind::Tool, "a") && book.serves(CapabilityKind::Tool, "b"));
    let later = book.observe(ALL, [tool("a", "1"), tool("b", "1"), tool("c", "1")], &FIRST_USE, 20);
    assert!(!later.first);
    assert_eq!(later.changed.len(), 1);
    assert_eq!(book.pin(CapabilityKind::Tool, "c").unwrap().state, PinState::Held);
    assert_eq!(book.pin(CapabilityKind::Tool, "c").unwrap().pinned, None);
    assert!(!book.serves(CapabilityKind::Tool, "c"));
}

#[test]
fn an_empty_first_listing_is_still_the_first() {
    let mut book = PinBook::default();
    assert!(book.observe(ALL, [], &FIRST_USE, 1).first);
    book.observe(ALL, [tool("a", "1")], &FIRST_USE, 2);
    assert_eq!(states(&book), [("a".to_owned(), PinState::Held)]);
}

#[test]
fn approve_holds_everything_of_the_first_listing() {
    let policy = Policy { trust: Trust::Approve, ..FIRST_USE };
    let mut book = PinBook::default();
    book.observe(ALL, [tool("a", "1")], &policy, 1);
    assert_eq!(states(&book), [("a".to_owned(), PinState::Held)]);
}

#[test]
fn new_resources_follow_their_own_rule() {
    let mut book = PinBook::default();
    book.observe(ALL, [], &FIRST_USE, 1);
    let resource = (CapabilityKind::Resource, "test://r".to_owned(), seen("1"));
    book.observe(ALL, [resource.clone()], &FIRST_USE, 2);
    assert!(book.serves(CapabilityKind::Resource, "test://r"));
    let mut held = PinBook::default();
    held.observe(ALL, [], &FIRST_USE, 1);
    held.observe(ALL, [resource], &Policy { new_resources: NewEntries::Hold, ..FIRST_USE }, 2);
    assert!(!held.serves(CapabilityKind::Resource, "test://r"));
}

#[test]
fn a_changed_definition_drifts_and_its_pin_returns_when_the_upstream_reverts() {
    let mut book = PinBook::default();
    book.observe(ALL, [tool("a", "1")], &FIRST_USE, 1);
    let drift = book.observe(ALL, [tool("a", "2")], &FIRST_USE, 2);
    assert_eq!(drift.changed[0].0, Some(PinState::Pinned));
    let pin = book.pin(CapabilityKind::Tool, "a").unwrap();
    assert_eq!((pin.state, pin.pinned.as_ref().unwrap().hash.as_str()), (PinState::Drifted, "sha256:1"));
    assert_eq!(pin.seen.hash, "sha256:2");
    assert!(!book.serves(CapabilityKind::Tool, "a"));
    // The same drift listed again changes nothing.
    assert!(book.observe(ALL, [tool("a", "2")], &FIRST_USE, 3).changed.is_empty());
    book.observe(ALL, [tool("a", "1")], &FIRST_USE, 4);
    assert!(book.serves(CapabilityKind::Tool, "a"));
}

#[test]
fn a_removed_key_comes_back_pinned_with_its_hash_and_drifted_with_another() {
    let mut book = PinBook::default();
    book.observe(ALL, [tool("a", "1"), tool("b", "1")], &FIRST_USE, 1);
    book.observe(ALL, [], &FIRST_USE, 2);
    assert_eq!(states(&book), [("a".to_owned(), PinState::Removed), ("b".to_owned(), PinState::Removed)]);
    book.observe(ALL, [tool("a", "1"), tool("b", "2")], &FIRST_USE, 3);
    assert_eq!(states(&book), [("a".to_owned(), PinState::Pinned), ("b".to_owned(), PinState::Drifted)]);
    assert_eq!(book.pin(CapabilityKind::Tool, "a").unwrap().first_seen_ms, 1);
}

#[test]
fn what_the_hash_leaves_out_is_refreshed_without_a_move() {
    let mut book = PinBook::default();
    book.observe(ALL, [tool("a", "1")], &FIRST_USE, 1);
    let same_hash = Seen { hash: "sha256:1".into(), definition: Arc::new(json!({"description": "1", "size": 2})) };
    let observed = book.observe(ALL, [(CapabilityKind::Tool, "a".to_owned(), same_hash.clone())], &FIRST_USE, 2);
    assert!(observed.changed.is_empty());
    assert_eq!(observed.refreshed.len(), 1);
    assert_eq!(book.pin(CapabilityKind::Tool, "a").unwrap().seen, same_hash);
    assert!(book.serves(CapabilityKind::Tool, "a"));
}

#[test]
fn a_rename_is_a_removal_and_a_new_name() {
    let mut book = PinBook::default();
    book.observe(ALL, [tool("old", "1")], &FIRST_USE, 1);
    book.observe(ALL, [tool("new", "1")], &FIRST_USE, 2);
    assert_eq!(states(&book), [("new".to_owned(), PinState::Held), ("old".to_owned(), PinState::Removed)]);
}

#[test]
fn removed_pins_never_pinned_are_forgotten_and_the_rest_are_bounded() {
    let keep_two = Policy { new_capabilities: NewEntries::Trust, kept_removed: 2, ..FIRST_USE };
    let mut book = PinBook::default();
    book.observe(ALL, [tool("a", "1")], &keep_two, 1);
    for (now, name) in [(2, "b"), (3, "c"), (4, "d")] {
        book.observe(ALL, [tool(name, "1")], &keep_two, now);
    }
    // a, b and c are removed, pinned: the two seen last are kept.
    assert_eq!(
        states(&book),
        [("b".to_owned(), PinState::Removed), ("c".to_owned(), PinState::Removed), ("d".to_owned(), PinState::Pinned)]
    );
    let mut held = PinBook::default();
    held.observe(ALL, [tool("a", "1")], &FIRST_USE, 1);
    held.observe(ALL, [tool("a", "1"), tool("h", "1")], &FIRST_USE, 2);
    let observed = held.observe(ALL, [tool("a", "1")], &FIRST_USE, 3);
    assert_eq!(observed.forgotten, [(CapabilityKind::Tool, "h".to_owned())]);
    assert!(observed.changed.is_empty(), "a forgotten pin is not stored as removed");
    assert_eq!(states(&held), [("a".to_owned(), PinState::Pinned)]);
}

#[test]
fn approval_names_the_reviewed_hash_and_fails_if_it_changed() {
    let mut book = PinBook::default();
    book.observe(ALL, [tool("a", "1")], &FIRST_USE, 1);
    book.observe(ALL, [tool("a", "2"), tool("b", "1")], &FIRST_USE, 2);
    let before = book.clone();
    assert_eq!(
        book.approve(CapabilityKind::Tool, "a", "sha256:1", "ops", 3),
        Err(Refusal::Stale { current: "sha256:2".into() })
    );
    assert_eq!(book, before);
    assert_eq!(book.approve(CapabilityKind::Tool, "zz", "sha256:1", "ops", 3), Err(Refusal::Unknown));
    let pin = book.approve(CapabilityKind::Tool, "a", "sha256:2", "ops", 3).unwrap();
    assert_eq!((pin.state, pin.approval), (PinState::Pinned, Some(Approval { by: "ops".into(), at_ms: 3 })));
    assert!(book.approve(CapabilityKind::Tool, "b", "sha256:1", "ops", 4).is_ok());
    assert!(book.serves(CapabilityKind::Tool, "a") && book.serves(CapabilityKind::Tool, "b"));
    book.observe(ALL, [], &FIRST_USE, 5);
    assert_eq!(book.approve(CapabilityKind::Tool, "a", "sha256:2", "ops", 6), Err(Refusal::Removed));
}

#[test]
fn a_key_listed_twice_counts_once() {
    let mut book = PinBook::default();
    book.observe(ALL, [tool("a", "1"), tool("a", "2")], &FIRST_USE, 1);
    assert_eq!(book.pin(CapabilityKind::Tool, "a").unwrap().seen.hash, "sha256:1");
}

#[test]
fn state_names_round_trip() {
    for state in [PinState::Pinned, PinState::Held, PinState::Drifted, PinState::Removed] {
        assert_eq!(PinState::named(state.as_str()), Some(state));
    }
}
