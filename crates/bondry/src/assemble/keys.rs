//! A realm's sealing keys: the configured ones (`[[realms.NAME.keys]]`, whose secrets
//! come from the environment the configuration was loaded in, never the process's own),
//! else the realm's key file in `data_dir`, made on first start; else keys of this
//! process alone.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use bondry_core::realm::{Key, KeySet};
use serde::{Deserialize, Serialize};

use crate::config::diagnostics::Diagnostics;
use crate::config::{Loaded, RawKey, RawRealm};

/// The keys that seal a realm's session ids and request states. Configured keys: the
/// first seals, every one opens, so a rotation lists the new key first and keeps the old
/// one until its tokens have expired. Only with `persist` is a missing key file written
/// (`serve`; `check` reads the file when it exists).
pub(super) fn keys(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    name: &str,
    raw: &RawRealm,
    persist: bool,
) -> Option<KeySet> {
    if !raw.keys.is_empty() {
        return configured(diagnostics, loaded, name, &raw.keys);
    }
    let Some(data_dir) = loaded.data_dir() else {
        return Some(generated("k1"));
    };
    let path = data_dir.join("keys").join(format!("{name}.json"));
    let mut unusable = |why: String| {
        diagnostics.refuse("data_dir", format!("the keys of realm {name} in {:?}: {why}", path.display()));
        None
    };
    match read_stored(&path) {
        Ok(keys) => {
            use std::os::unix::fs::PermissionsExt;
            if std::fs::metadata(&path).is_ok_and(|meta| meta.permissions().mode() & 0o077 != 0) {
                tracing::warn!(realm = name, path = %path.display(), "the key file is readable by others than its owner; chmod 600 it");
            }
            Some(keys)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let keys = generated("k1");
            if !persist {
                return Some(keys);
            }
            match store(&path, &keys) {
                Ok(published) => Some(published.unwrap_or(keys)),
                Err(error) => unusable(format!("cannot write ({error})")),
            }
        }
        Err(error) => unusable(error.to_string()),
    }
}

/// `[[realms.NAME.keys]]`, each stanza checked: its id, once, and its secret.
fn configured(diagnostics: &mut Diagnostics, loaded: &Loaded, name: &str, raw: &[RawKey]) -> Option<KeySet> {
    let checked: Vec<_> = raw
        .iter()
        .enumerate()
        .map(|(index, configured)| {
            let at = |k: &str| format!("realms.{name}.keys[{index}].{k}");
            let id = if !bondry_core::capability::is_valid_id(&configured.id) {
                diagnostics.refuse(
                    at("id"),
                    format!("{:?} is not a key id: use 1-64 characters from A-Z a-z 0-9 . _ -", configured.id),
                );
                None
            } else if raw[..index].iter().any(|earlier| earlier.id == configured.id) {
                diagnostics.refuse(at("id"), format!("key id {:?} is used twice", configured.id));
                None
            } else {
                Some(configured.id.clone())
            };
            let secret = diagnostics.ok(at("secret_env"), secret_in(loaded, &configured.secret_env));
            Some(Key { id: id?, secret: secret? })
        })
        .collect();
    let mut keys: Vec<Key> = checked.into_iter().collect::<Option<_>>()?;
    let active = keys.remove(0);
    Some(KeySet { active, retired: keys })
}

/// The secret held by the variable `variable` of the configuration's environment.
fn secret_in(loaded: &Loaded, variable: &str) -> Result<[u8; 32], String> {
    let text = loaded
        .env
        .get(variable)
        .ok_or_else(|| format!("the environment variable {variable:?} is not set (it holds the key's secret)"))?;
    secret_of(text.trim()).ok_or_else(|| {
        format!("{variable:?} must hold 32 random bytes in base64 or base64url, e.g. from `openssl rand -base64 32`")
    })
}

#[derive(Serialize, Deserialize)]
struct StoredKey {
    id: String,
    secret: String,
}

#[derive(Serialize, Deserialize)]
struct StoredKeys {
    active: StoredKey,
    #[serde(default)]
    retired: Vec<StoredKey>,
}

/// Writes a realm's keys readable by the owner only, whole or not at all, and never over
/// keys already there: when another process published its keys first, those are the
/// realm's, and are returned instead.
fn store(path: &Path, keys: &KeySet) -> std::io::Result<Option<KeySet>> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let directory = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(directory)?;
    let encode = |key: &Key| StoredKey { id: key.id.clone(), secret: URL_SAFE_NO_PAD.encode(key.secret) };
    let stored = StoredKeys { active: encode(&keys.active), retired: keys.retired.iter().map(encode).collect() };
    let fresh = path.with_extension(format!("json.{}.new", std::process::id()));
    // A leftover (or planted) file is removed, never written through: `create_new` fails
    // on anything at the path, a symbolic link included.
    match std::fs::remove_file(&fresh) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&fresh)?;
    file.write_all(serde_json::to_string_pretty(&stored).unwrap_or_default().as_bytes())?;
    file.sync_all()?;
    // A hard link publishes the file only where none is: two first starts cannot both win.
    let published = std::fs::hard_link(&fresh, path);
    let _ = std::fs::remove_file(&fresh);
    match published {
        Ok(()) => Ok(None),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(Some(read_stored(path)?)),
        Err(error) => Err(error),
    }
}

/// The keys stored at `path`.
fn read_stored(path: &Path) -> std::io::Result<KeySet> {
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let stored: StoredKeys =
        serde_json::from_str(&std::fs::read_to_string(path)?).map_err(|e| invalid(format!("not a key file ({e})")))?;
    let mut keys = Vec::new();
    for stored in std::iter::once(&stored.active).chain(&stored.retired) {
        let secret = secret_of(&stored.secret).ok_or_else(|| invalid("a secret is not 32 bytes".into()))?;
        keys.push(Key { id: stored.id.clone(), secret });
    }
    let active = keys.remove(0);
    Ok(KeySet { active, retired: keys })
}

/// 32 bytes from base64 (standard or url-safe, padded or not).
fn secret_of(text: &str) -> Option<[u8; 32]> {
    let bytes = URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .or_else(|_| STANDARD_NO_PAD.decode(text.trim_end_matches('=')))
        .ok()?;
    bytes.try_into().ok()
}

/// A key of this process alone.
fn generated(id: &str) -> KeySet {
    let mut secret = [0; 32];
    getrandom::fill(&mut secret).expect("the operating system random source is available");
    KeySet { active: Key { id: id.into(), secret }, retired: Vec::new() }
}
