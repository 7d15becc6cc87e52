//! Where upstream pins are kept: `pins.sqlite3` in `data_dir`, or, with
//! `pin_store = "memory"`, this process only. Nothing ever falls back to trusting
//! everything: a store that cannot be opened stops the start, and so does a missing one
//! beside realm keys that say this data directory served before, unless the operator
//! says a new store is meant.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bondry_upstream::pins::{MemoryStore, PinStore, SqliteStore};

use crate::config::diagnostics::Diagnostics;
use crate::config::{Loaded, PinStoreKind};

/// The store's file name in `data_dir`.
pub const PIN_STORE_FILE: &str = "pins.sqlite3";

/// Refuses upstreams whose pins would have nowhere to survive a restart, unless the
/// configuration says so with `pin_store = "memory"`.
pub(crate) fn check(diagnostics: &mut Diagnostics, loaded: &Loaded) {
    if loaded.raw.has_upstreams() && loaded.raw.pin_store == PinStoreKind::Sqlite && loaded.raw.data_dir.is_none() {
        diagnostics.refuse(
            "pin_store",
            "upstreams need data_dir to keep their pins in pins.sqlite3 across restarts; set data_dir, or pin_store = \"memory\" to trust every upstream anew at each start",
        );
    }
}

/// Opens the pin store of a configuration that passed [`super::assemble`]'s checks,
/// before anything is written to `data_dir`: with `accept_new`
/// (`--accept-new-pin-store`), a missing store beside realm keys is made anew.
pub fn open(loaded: &Loaded, accept_new: bool) -> anyhow::Result<Arc<dyn PinStore>> {
    let has_upstreams = loaded.raw.has_upstreams();
    let data_dir = loaded.data_dir();
    if let Some(data_dir) = &data_dir {
        crate::data_dir::prepare(data_dir)?;
    }
    let (PinStoreKind::Sqlite, Some(data_dir)) = (loaded.raw.pin_store, data_dir) else {
        if has_upstreams {
            tracing::warn!("pin_store = \"memory\": upstream definitions are trusted anew at every start");
        }
        return Ok(Arc::new(MemoryStore::default()));
    };
    let path = data_dir.join(PIN_STORE_FILE);
    if has_upstreams
        && !path.exists()
        && !accept_new
        && let Some(keys) = realm_keys(&data_dir)
    {
        anyhow::bail!(
            "{}: the pin store is missing, but {} holds realm keys, so this data directory served before: a new store would trust every upstream anew and could launder a drift. Restore the file, or start once with --accept-new-pin-store",
            path.display(),
            keys.display()
        );
    }
    let store = SqliteStore::open(&path)?;
    for file in [PIN_STORE_FILE, "pins.sqlite3-wal", "pins.sqlite3-shm"] {
        let file = data_dir.join(file);
        crate::data_dir::keep_private(&file)
            .map_err(|e| anyhow::anyhow!("{}: cannot make it private ({e})", file.display()))?;
    }
    Ok(Arc::new(store))
}

/// The directory of realm key files in `data_dir`, if it holds one.
fn realm_keys(data_dir: &Path) -> Option<PathBuf> {
    let keys = data_dir.join("keys");
    let mut entries = std::fs::read_dir(&keys).ok()?;
    entries
        .any(|entry| entry.is_ok_and(|entry| entry.path().extension().is_some_and(|ext| ext == "json")))
        .then_some(keys)
}
