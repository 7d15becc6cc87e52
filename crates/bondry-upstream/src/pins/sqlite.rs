//! Pins in SQLite: `pins.sqlite3` in `data_dir`, its schema moved forward one step at a
//! time, each save one transaction.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bondry_catalogue::naming::Owner;
use bondry_core::capability::CapabilityKind;
use rusqlite::{Connection, OptionalExtension, params};

use super::book::PinBook;
use super::hash::{kind_named, kind_of};
use super::pin::{Approval, Pin, PinState, Seen};
use super::store::{PinStore, StoreError};
use crate::upstream::{lock, now_ms};

/// Each step from one schema version to the next; a store is at the version of the
/// number of steps it has taken.
const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE upstreams (
        realm TEXT NOT NULL,
        upstream TEXT NOT NULL,
        first_listed_ms INTEGER NOT NULL,
        PRIMARY KEY (realm, upstream)
    ) WITHOUT ROWID;
    CREATE TABLE pins (
        realm TEXT NOT NULL,
        upstream TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        state TEXT NOT NULL,
        pinned_hash TEXT,
        pinned_definition TEXT,
        seen_hash TEXT NOT NULL,
        seen_definition TEXT NOT NULL,
        first_seen_ms INTEGER NOT NULL,
        approved_by TEXT,
        approved_at_ms INTEGER,
        PRIMARY KEY (realm, upstream, kind, key)
    ) WITHOUT ROWID;
",
    "
    ALTER TABLE upstreams ADD COLUMN prefix TEXT;
    ALTER TABLE pins ADD COLUMN exposed_id TEXT;
    ALTER TABLE pins ADD COLUMN hash_form INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE pins ADD COLUMN migrated TEXT;
    CREATE TABLE ids (
        realm TEXT NOT NULL,
        id TEXT NOT NULL,
        upstream TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        PRIMARY KEY (realm, id)
    ) WITHOUT ROWID;
",
];

/// Pins in an SQLite file (WAL), with a schema version and migrations.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SqliteStore {
    /// The store at `path`, made if absent, migrated to this Bondry's schema; refused,
    /// naming the file, if it cannot be opened, is not an intact pin store, or was made by
    /// a newer Bondry.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let fail = |why: String| StoreError { path: path.to_owned(), why };
        // Made private before SQLite opens it: SQLite makes its own files 0644, and gives
        // the `-wal` and `-shm` files the mode of the database's.
        {
            use std::os::unix::fs::OpenOptionsExt;
            let made = std::fs::OpenOptions::new().write(true).create(true).truncate(false).mode(0o600).open(path);
            made.map_err(|e| fail(e.to_string()))?;
        }
        let connection = Connection::open(path).map_err(|e| fail(e.to_string()))?;
        let store = Self { path: path.to_owned(), connection: Mutex::new(connection) };
        store.prepare().map_err(fail)?;
        Ok(store)
    }

    fn prepare(&self) -> Result<(), String> {
        let mut connection = lock(&self.connection);
        connection.busy_timeout(std::time::Duration::from_secs(5)).map_err(|e| e.to_string())?;
        let integrity: String = connection.query_row("PRAGMA quick_check", [], |row| row.get(0)).map_err(unreadable)?;
        if integrity != "ok" {
            return Err(format!("it is damaged ({integrity})"));
        }
        let mode: String =
            connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(unreadable)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!("it cannot be put in WAL mode (it is in {mode} mode)"));
        }
        let migrate = connection.transaction().map_err(unreadable)?;
        migrate
            .execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", [])
            .map_err(unreadable)?;
        let version: Option<i64> = migrate
            .query_row("SELECT version FROM schema_version", [], |row| row.get(0))
            .optional()
            .map_err(unreadable)?;
        let version = usize::try_from(version.unwrap_or(0)).map_err(|_| "its schema version is negative".to_owned())?;
        if version > MIGRATIONS.len() {
            return Err(format!(
                "its schema is version {version}, made by a newer Bondry; this one knows up to {}",
                MIGRATIONS.len()
            ));
        }
        for step in &MIGRATIONS[version..] {
            migrate.execute_batch(step).map_err(unreadable)?;
        }
        let latest = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
        migrate.execute("DELETE FROM schema_version", []).map_err(unreadable)?;
        migrate.execute("INSERT INTO schema_version (version) VALUES (?1)", [latest]).map_err(unreadable)?;
        migrate.commit().map_err(unreadable)
    }

    fn fail(&self, why: impl ToString) -> StoreError {
        StoreError { path: self.path.clone(), why: why.to_string() }
    }
}

/// SQLite's own words, which say what is wrong with the file ("file is not a database").
fn unreadable(error: rusqlite::Error) -> String {
    error.to_string()
}

impl PinStore for SqliteStore {
    fn load(&self, realm: &str, upstream: &str) -> Result<PinBook, StoreError> {
        let connection = lock(&self.connection);
        let upstream_row = connection
            .query_row(
                "SELECT prefix FROM upstreams WHERE realm = ?1 AND upstream = ?2",
                params![realm, upstream],
                |row| row.get::<_, Option<String>>(0),
            )
            .optional()
            .map_err(|e| self.fail(e))?;
        let listed = upstream_row.is_some();
        let prefix = upstream_row.flatten();
        let mut query = connection
            .prepare(
                "SELECT kind, key, state, pinned_hash, pinned_definition, seen_hash, seen_definition,
                        first_seen_ms, approved_by, approved_at_ms, exposed_id, hash_form, migrated
                 FROM pins WHERE realm = ?1 AND upstream = ?2",
            )
            .map_err(|e| self.fail(e))?;
        let rows = query
            .query_map(params![realm, upstream], |row| {
                Ok(Row {
                    kind: row.get(0)?,
                    key: row.get(1)?,
                    state: row.get(2)?,
                    pinned_hash: row.get(3)?,
                    pinned_definition: row.get(4)?,
                    seen_hash: row.get(5)?,
                    seen_definition: row.get(6)?,
                    first_seen_ms: row.get(7)?,
                    approved_by: row.get(8)?,
                    approved_at_ms: row.get(9)?,
                    exposed_id: row.get(10)?,
                    hash_form: row.get(11)?,
                    migrated: row.get(12)?,
                })
            })
            .map_err(|e| self.fail(e))?;
        let mut pins = Vec::new();
        for row in rows {
            let row = row.map_err(|e| self.fail(e))?;
            let what = format!("the pin of {realm}/{upstream} {} {:?}", row.kind, row.key);
            pins.push(row.pin().map_err(|why| self.fail(format!("{what} is unreadable: {why}")))?);
        }
        Ok(PinBook::restored(listed, prefix, pins))
    }

    fn save(&self, realm: &str, upstream: &str, book: &PinBook, changed: &[&Pin]) -> Result<(), StoreError> {
        let mut connection = lock(&self.connection);
        let save = connection.transaction().map_err(|e| self.fail(e))?;
        if book.listed() {
            save.execute(
                "INSERT INTO upstreams (realm, upstream, first_listed_ms, prefix) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (realm, upstream) DO UPDATE SET prefix = excluded.prefix",
                params![realm, upstream, to_sql(now_ms()), book.prefix()],
            )
            .map_err(|e| self.fail(e))?;
        }
        for pin in changed {
            save.execute(
                "INSERT INTO pins (realm, upstream, kind, key, state, pinned_hash, pinned_definition,
                                   seen_hash, seen_definition, first_seen_ms, approved_by, approved_at_ms,
                                   exposed_id, hash_form, migrated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
                 ON CONFLICT (realm, upstream, kind, key) DO UPDATE SET
                     state = excluded.state,
                     pinned_hash = excluded.pinned_hash,
                     pinned_definition = excluded.pinned_definition,
                     seen_hash = excluded.seen_hash,
                     seen_definition = excluded.seen_definition,
                     approved_by = excluded.approved_by,
                     approved_at_ms = excluded.approved_at_ms,
                     exposed_id = excluded.exposed_id,
                     hash_form = excluded.hash_form,
                     migrated = excluded.migrated",
                params![
                    realm,
                    upstream,
                    kind_of(pin.kind),
                    pin.key,
                    pin.state.as_str(),
                    pin.pinned.as_ref().map(|seen| &seen.hash),
                    pin.pinned.as_ref().map(|seen| seen.definition.to_string()),
                    pin.seen.hash,
                    pin.seen.definition.to_string(),
                    to_sql(pin.first_seen_ms),
                    pin.approval.as_ref().map(|approval| &approval.by),
                    pin.approval.as_ref().map(|approval| to_sql(approval.at_ms)),
                    pin.id,
                    pin.form,
                    pin.migrated.as_ref().map(|fields| serde_json::Value::from(fields.clone()).to_string()),
                ],
            )
            .map_err(|e| self.fail(e))?;
            if let Some(id) = &pin.id {
                save.execute(
                    "INSERT OR IGNORE INTO ids (realm, id, upstream, kind, key) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![realm, id, upstream, kind_of(pin.kind), pin.key],
                )
                .map_err(|e| self.fail(e))?;
            }
        }
        save.commit().map_err(|e| self.fail(e))
    }

    fn owners(&self, realm: &str) -> Result<HashMap<String, Owner>, StoreError> {
        let connection = lock(&self.connection);
        let mut query =
            connection.prepare("SELECT id, upstream, kind, key FROM ids WHERE realm = ?1").map_err(|e| self.fail(e))?;
        let rows = query
            .query_map(params![realm], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, String>(2)?, row.get(3)?))
            })
            .map_err(|e| self.fail(e))?;
        let mut owners = HashMap::new();
        for row in rows {
            let (id, upstream, kind, key) = row.map_err(|e| self.fail(e))?;
            let kind = kind_named(&kind).ok_or_else(|| self.fail(format!("the id {id:?} names no kind ({kind:?})")))?;
            owners.insert(id, Owner { upstream, kind, key });
        }
        Ok(owners)
    }

    fn forget(
        &self,
        realm: &str,
        upstream: &str,
        _book: &PinBook,
        forgotten: &[(CapabilityKind, String)],
    ) -> Result<(), StoreError> {
        let mut connection = lock(&self.connection);
        let forget = connection.transaction().map_err(|e| self.fail(e))?;
        for (kind, key) in forgotten {
            forget
                .execute(
                    "DELETE FROM pins WHERE realm = ?1 AND upstream = ?2 AND kind = ?3 AND key = ?4",
                    params![realm, upstream, kind_of(*kind), key],
                )
                .map_err(|e| self.fail(e))?;
        }
        forget.commit().map_err(|e| self.fail(e))
    }
}

/// Milliseconds as SQLite stores integers.
fn to_sql(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// One row of `pins`, as read.
struct Row {
    kind: String,
    key: String,
    state: String,
    pinned_hash: Option<String>,
    pinned_definition: Option<String>,
    seen_hash: String,
    seen_definition: String,
    first_seen_ms: i64,
    approved_by: Option<String>,
    approved_at_ms: Option<i64>,
    exposed_id: Option<String>,
    hash_form: u32,
    migrated: Option<String>,
}

impl Row {
    fn pin(self) -> Result<Pin, String> {
        let definition = |text: &str| {
            serde_json::from_str(text).map(Arc::new).map_err(|e| format!("a definition is not JSON ({e})"))
        };
        let pinned = match (self.pinned_hash, self.pinned_definition) {
            (Some(hash), Some(text)) => Some(Seen { hash, definition: definition(&text)? }),
            (None, None) => None,
            _ => return Err("its pinned hash and definition disagree".into()),
        };
        let approval = match (self.approved_by, self.approved_at_ms) {
            (Some(by), Some(at)) => Some(Approval { by, at_ms: u64::try_from(at).unwrap_or_default() }),
            _ => None,
        };
        Ok(Pin {
            kind: kind_named(&self.kind).ok_or_else(|| format!("{:?} is not a kind", self.kind))?,
            key: self.key,
            state: PinState::named(&self.state).ok_or_else(|| format!("{:?} is not a state", self.state))?,
            pinned,
            seen: Seen { hash: self.seen_hash, definition: definition(&self.seen_definition)? },
            first_seen_ms: u64::try_from(self.first_seen_ms).unwrap_or_default(),
            approval,
            id: self.exposed_id,
            form: self.hash_form,
            migrated: match self.migrated {
                Some(text) => {
                    Some(serde_json::from_str(&text).map_err(|e| format!("its migration mark is not a list ({e})"))?)
                }
                None => None,
            },
        })
    }
}

#[cfg(test)]
mod tests;
