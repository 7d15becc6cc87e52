//! Where pins survive restarts: `pins.sqlite3` in `data_dir`, or, with
//! `pin_store = "memory"`, only as long as the process (`sqlite.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use super::book::PinBook;
use super::pin::Pin;
use bondry_catalogue::naming::Owner;
use bondry_core::capability::CapabilityKind;

use crate::upstream::lock;

/// What keeps each upstream's pins.
pub trait PinStore: Send + Sync {
    /// The book of `upstream` in `realm` as last saved: empty if it was never listed.
    fn load(&self, realm: &str, upstream: &str) -> Result<PinBook, StoreError>;

    /// Saves `book`, of `upstream` in `realm`, in which `changed` are what changed since
    /// the last save; the id of each is remembered as its entry's for good.
    fn save(&self, realm: &str, upstream: &str, book: &PinBook, changed: &[&Pin]) -> Result<(), StoreError>;

    /// The owner of every id ever named in `realm`, whether its upstream is still
    /// configured or not.
    fn owners(&self, realm: &str) -> Result<HashMap<String, Owner>, StoreError>;

    /// Forgets the pins `forgotten` (by kind and key) of `upstream` in `realm`, whose book
    /// is now `book`; their ids stay their entries'.
    fn forget(
        &self,
        realm: &str,
        upstream: &str,
        book: &PinBook,
        forgotten: &[(CapabilityKind, String)],
    ) -> Result<(), StoreError>;
}

/// A store that cannot be read or written, naming its file.
#[derive(Debug, thiserror::Error)]
#[error("the pin store {}: {why}", path.display())]
pub struct StoreError {
    pub path: PathBuf,
    pub why: String,
}

/// Pins kept by this process only: every start trusts anew.
#[derive(Debug, Default)]
pub struct MemoryStore {
    books: Mutex<HashMap<(String, String), PinBook>>,
    owners: Mutex<HashMap<String, HashMap<String, Owner>>>,
}

impl PinStore for MemoryStore {
    fn load(&self, realm: &str, upstream: &str) -> Result<PinBook, StoreError> {
        Ok(lock(&self.books).get(&(realm.to_owned(), upstream.to_owned())).cloned().unwrap_or_default())
    }

    fn save(&self, realm: &str, upstream: &str, book: &PinBook, changed: &[&Pin]) -> Result<(), StoreError> {
        lock(&self.books).insert((realm.to_owned(), upstream.to_owned()), book.clone());
        let mut owners = lock(&self.owners);
        let owners = owners.entry(realm.to_owned()).or_default();
        for pin in changed {
            if let Some(id) = &pin.id {
                owners.entry(id.clone()).or_insert_with(|| owner(upstream, pin));
            }
        }
        Ok(())
    }

    fn owners(&self, realm: &str) -> Result<HashMap<String, Owner>, StoreError> {
        Ok(lock(&self.owners).get(realm).cloned().unwrap_or_default())
    }

    fn forget(
        &self,
        realm: &str,
        upstream: &str,
        book: &PinBook,
        _: &[(CapabilityKind, String)],
    ) -> Result<(), StoreError> {
        lock(&self.books).insert((realm.to_owned(), upstream.to_owned()), book.clone());
        Ok(())
    }
}

/// The owner of `pin`'s entry, of `upstream`.
fn owner(upstream: &str, pin: &Pin) -> Owner {
    Owner { upstream: upstream.to_owned(), kind: pin.kind, key: pin.key.clone() }
}
