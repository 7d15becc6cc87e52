use super::*;
use crate::pins::{MemoryStore, Policy};
use crate::spec::{NewEntries, Trust};
use bondry_core::capability::CapabilityKind;
use serde_json::json;

const POLICY: Policy = Policy {
    trust: Trust::FirstUse,
    new_capabilities: NewEntries::Hold,
    new_resources: NewEntries::Trust,
    kept_removed: 2000,
};

fn listing(description: &str) -> Vec<(CapabilityKind, String, Seen)> {
    let definition = Arc::new(json!({"name": "a", "description": description}));
    let hash = format!("sha256:{description}");
    vec![(CapabilityKind::Tool, "a".to_owned(), Seen { hash, definition })]
}

fn observe_and_save(store: &dyn PinStore, book: &mut PinBook, description: &str, now: u64) {
    let observed = book.observe(&[CapabilityKind::Tool], listing(description), &POLICY, now);
    let changed: Vec<&Pin> = observed.changed.iter().map(|(_, pin)| pin).collect();
    store.save("default", "up", book, &changed).unwrap();
}

#[test]
fn a_book_survives_a_reopening_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite3");
    let mut book = PinBook::default();
    {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.load("default", "up").unwrap(), PinBook::default());
        observe_and_save(&store, &mut book, "one", 1);
        observe_and_save(&store, &mut book, "two", 2);
        let approved = book.approve(CapabilityKind::Tool, "a", "sha256:two", "ops", 3).unwrap();
        store.save("default", "up", &book, &[&approved]).unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.load("default", "up").unwrap(), book);
    assert_eq!(store.load("default", "other").unwrap(), PinBook::default());
    assert_eq!(store.load("other", "up").unwrap(), PinBook::default());
}

#[test]
fn every_id_named_is_remembered_with_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    let memory = MemoryStore::default();
    let mut book = PinBook::default();
    book.observe(&[CapabilityKind::Tool], listing("one"), &POLICY, 1);
    let named = book.set_id(CapabilityKind::Tool, "a", Some("up.a".into())).unwrap();
    let renamed = {
        let mut again = book.clone();
        again.set_id(CapabilityKind::Tool, "a", Some("x.a".into())).unwrap()
    };
    let owner = Owner { upstream: "up".into(), kind: CapabilityKind::Tool, key: "a".into() };
    for store in [&store as &dyn PinStore, &memory] {
        store.save("default", "up", &book, &[&named]).unwrap();
        store.save("default", "up", &book, &[&renamed]).unwrap();
        let owners = store.owners("default").unwrap();
        assert_eq!(owners, HashMap::from([("up.a".into(), owner.clone()), ("x.a".into(), owner.clone())]));
        assert!(store.owners("other").unwrap().is_empty());
    }
    // Forgotten, a pin is gone from the store; its id stays its entry's.
    let mut forgetting = book.clone();
    let forgotten = forgetting.observe(&[CapabilityKind::Tool], [], &Policy { kept_removed: 0, ..POLICY }, 2).forgotten;
    assert_eq!(forgotten, [(CapabilityKind::Tool, "a".to_owned())]);
    for store in [&store as &dyn PinStore, &memory] {
        store.forget("default", "up", &forgetting, &forgotten).unwrap();
        assert_eq!(store.load("default", "up").unwrap().pins().count(), 0);
        assert_eq!(store.owners("default").unwrap().len(), 2);
    }
}

#[test]
fn an_empty_first_listing_is_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite3");
    let mut book = PinBook::default();
    book.observe(&[CapabilityKind::Tool], [], &POLICY, 1);
    SqliteStore::open(&path).unwrap().save("default", "up", &book, &[]).unwrap();
    assert!(SqliteStore::open(&path).unwrap().load("default", "up").unwrap().listed());
}

#[test]
fn a_file_that_is_not_a_pin_store_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite3");
    std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();
    let error = SqliteStore::open(&path).unwrap_err();
    assert_eq!(error.path, path);
    assert!(error.to_string().contains("pins.sqlite3") && error.to_string().contains("not a database"), "{error}");
}

#[test]
fn a_store_of_a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite3");
    drop(SqliteStore::open(&path).unwrap());
    Connection::open(&path).unwrap().execute("UPDATE schema_version SET version = 99", []).unwrap();
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(error.contains("version 99"), "{error}");
}

#[test]
fn an_unreadable_row_is_refused_naming_the_pin() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    let mut book = PinBook::default();
    observe_and_save(&store, &mut book, "one", 1);
    Connection::open(&path).unwrap().execute("UPDATE pins SET seen_definition = '{'", []).unwrap();
    let error = store.load("default", "up").unwrap_err().to_string();
    assert!(error.contains("default/up tool \"a\"") && error.contains("not JSON"), "{error}");
}

#[test]
fn a_store_of_the_previous_schema_opens_with_its_pins_in_their_old_hash_form() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite3");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../bondry/tests/fixtures/pins-v1/pins.sqlite3");
    std::fs::copy(fixture, &path).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let mut book = store.load("default", "up").unwrap();
    assert!(book.listed());
    assert_eq!(book.prefix(), None);
    assert_eq!(book.pins().count(), 8);
    assert!(book.pins().all(|pin| pin.form == 1 && pin.id.is_none() && pin.state == PinState::Pinned));
    // The upstream lists again what it listed before the upgrade.
    let listed: Vec<(CapabilityKind, String, Seen)> = book
        .pins()
        .map(|pin| {
            let hash = bondry_catalogue::hash::definition_hash(pin.kind, &pin.seen.definition, &[]);
            (pin.kind, pin.key.clone(), Seen { hash, definition: Arc::clone(&pin.seen.definition) })
        })
        .collect();
    let migrated = book.migrate(&listed, Trust::FirstUse, &[]);
    assert_eq!(migrated.len(), 8);
    let changed: Vec<&Pin> = migrated.iter().collect();
    store.save("default", "up", &book, &changed).unwrap();
    assert_eq!(SqliteStore::open(&path).unwrap().load("default", "up").unwrap(), book);
    let marked: Vec<&str> = book.pins().filter(|pin| pin.migrated.is_some()).map(|pin| pin.key.as_str()).collect();
    assert_eq!(marked, ["test://annotated", "test://iconic", "test://meta", "test://files/{path}"]);
    assert!(book.pins().all(|pin| pin.state == PinState::Pinned && pin.form == super::super::HASH_FORM));
}

#[test]
fn the_memory_store_keeps_books_for_the_process() {
    let store = MemoryStore::default();
    let mut book = PinBook::default();
    observe_and_save(&store, &mut book, "one", 1);
    assert_eq!(store.load("default", "up").unwrap(), book);
}
