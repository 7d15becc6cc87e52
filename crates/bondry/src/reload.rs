//! Configuration reload while serving: when the file changes (a watch on its directory,
//! since editors save by renaming a new file over the old one) or on SIGHUP, the file is
//! parsed and checked whole, then each realm's capabilities, grants and credentials are
//! swapped in at once. A file that does not pass keeps the running configuration, and the
//! log says why.
//!
//! Backends are added, removed and changed as the file says, each kind keeping what it
//! can (an upstream its connection and pins; see `Backends::reconfigure`). What a swap
//! cannot change while serving (listeners, realms added or removed, limits, rate limits,
//! keys, the audit sink) applies at the next start; the log says so. A file whose
//! `[admin]` differs from the running one is refused whole, naming the keys that changed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bondry_core::backend::Backends;
use bondry_core::realm::Registry;
use bondry_http_server::AuthSlot;
use notify::{RecursiveMode, Watcher};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc;

use crate::assemble::admin::{self, AdminStanza};
use crate::assemble::{Overrides, assemble};
use crate::backends;
use crate::builtins::Builtins;
use crate::config;

/// How long a burst of file events is left to settle before the file is read.
const SETTLE: Duration = Duration::from_millis(200);

/// What a reload replaces in one served realm.
pub struct LiveRealm {
    pub registry: Arc<Registry>,
    pub auth: Arc<AuthSlot>,
    /// Its backends, a kind at a time.
    pub backends: Vec<Arc<dyn Backends>>,
}

/// Everything a reload needs: the file, how it was assembled, and the live realms.
pub struct Reloader {
    pub path: PathBuf,
    pub builtins: Builtins,
    pub overrides: Overrides,
    pub realms: HashMap<String, LiveRealm>,
    /// The `[admin]` the admin listener was started with.
    pub admin: AdminStanza,
}

impl Reloader {
    /// Reads, checks and applies the file. Returns the realms whose catalogue, grants and
    /// credentials were swapped in.
    pub fn reload(&self) -> Result<Vec<String>, String> {
        let environment = config::process_environment().map_err(|e| e.to_string())?;
        let loaded = config::load(Some(&self.path), environment).map_err(|e| e.to_string())?;
        let mut assembled = assemble(&loaded, &self.builtins, &self.overrides, false).map_err(|e| e.to_string())?;
        // A changed token is as likely a revocation as anything: applying the rest of the
        // file while the admin listener still admits the old one would mislead.
        let changed = admin::changed(&self.admin, &assembled.admin);
        if !changed.is_empty() {
            let keys: Vec<String> = changed.iter().map(|key| format!("admin.{key}")).collect();
            return Err(format!(
                "[admin] changed ({}): the admin listener reads [admin] only at start; restart Bondry to apply it, or put it back to reload the rest",
                keys.join(", ")
            ));
        }
        let mut applied = Vec::new();
        for (name, entry) in &assembled.server.realms {
            let Some(live) = self.realms.get(name) else {
                tracing::warn!(realm = %name, "a new realm is served after a restart");
                continue;
            };
            // Backends follow the file whatever becomes of the rest: they are served
            // beside the configured capabilities, not compiled with them.
            backends::reconfigure(name, &live.backends, assembled.backends.remove(name).unwrap_or_default());
            // The grants and the credentials whose roles they interpret go in together or
            // not at all: new tickets under old grants could hold what the file no longer
            // gives their roles.
            let policy = entry.registry.snapshot().policy.clone();
            match live.registry.reconfigure(entry.registry.configured(), policy) {
                Ok(()) => {
                    if live.auth.replace(entry.auth.current()) {
                        tracing::info!(realm = %name, "credentials changed: the realm's sessions and listen streams end");
                    }
                    applied.push(name.clone());
                }
                // A handler's dynamic capability may clash with a newly configured id.
                Err(error) => tracing::error!(
                    realm = %name,
                    %error,
                    "configuration not applied to this realm: its capabilities, grants and credentials stay"
                ),
            }
        }
        for name in self.realms.keys().filter(|name| !assembled.server.realms.contains_key(*name)) {
            tracing::warn!(realm = %name, "a removed realm is served until the next start");
        }
        Ok(applied)
    }

    fn apply(&self, why: &str) {
        match self.reload() {
            Ok(realms) => tracing::info!(
                why,
                realms = ?realms,
                "configuration reloaded: capabilities, grants and credentials; listeners, limits and keys apply at the next start"
            ),
            Err(error) => tracing::error!(why, %error, "configuration not reloaded; the running one stays"),
        }
    }
}

/// What triggers a reload: SIGHUP and changes of the file. Installed before readiness is
/// announced (SIGHUP's default action ends the process, and a change made right after the
/// banner must not be missed), then run until the server stops.
pub struct Watch {
    reloader: Option<Reloader>,
    hangup: Option<Signal>,
    changes: mpsc::Receiver<()>,
    /// Kept alive for as long as changes are watched.
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Watch {
    /// Installs the SIGHUP handler and the file watch (if there is a file). A trigger that
    /// cannot be set up is logged and the server goes on serving without it. Needs a
    /// running Tokio runtime.
    pub fn install(reloader: Option<Reloader>) -> Watch {
        let hangup = match signal(SignalKind::hangup()) {
            Ok(hangup) => Some(hangup),
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGHUP; the configuration is not reloaded on it");
                None
            }
        };
        let (changed, changes) = mpsc::channel::<()>(16);
        let watcher = reloader.as_ref().and_then(|reloader| match file_watch(&reloader.path, changed) {
            Ok(watcher) => Some(watcher),
            Err(error) => {
                tracing::error!(%error, "cannot watch the configuration file; send SIGHUP to reload it");
                None
            }
        });
        Watch { reloader, hangup, changes, _watcher: watcher }
    }

    /// Reloads on every change of the file and on SIGHUP, until `stop` resolves. Without a
    /// file (the embedded default) SIGHUP is acknowledged in the log and changes nothing.
    pub async fn run(mut self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            let hangup = async {
                match self.hangup.as_mut() {
                    Some(hangup) => hangup.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = &mut stop => return,
                _ = hangup => match &self.reloader {
                    Some(reloader) => reloader.apply("SIGHUP"),
                    None => tracing::info!("SIGHUP: the embedded default configuration has nothing to reload"),
                },
                Some(()) = self.changes.recv() => {
                    tokio::time::sleep(SETTLE).await;
                    while self.changes.try_recv().is_ok() {}
                    if let Some(reloader) = &self.reloader {
                        reloader.apply("the file changed");
                    }
                }
            }
        }
    }
}

/// A watch on `path`'s directory that signals every event about `path`'s name.
fn file_watch(path: &Path, changed: mpsc::Sender<()>) -> notify::Result<notify::RecommendedWatcher> {
    let name = path.file_name().map(ToOwned::to_owned);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let ours = event.is_ok_and(|event| {
            !event.kind.is_access() && event.paths.iter().any(|path| path.file_name() == name.as_deref())
        });
        if ours {
            let _ = changed.try_send(());
        }
    })?;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    watcher.watch(&directory, RecursiveMode::NonRecursive)?;
    Ok(watcher)
}
