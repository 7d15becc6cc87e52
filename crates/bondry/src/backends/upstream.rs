//! Upstream MCP servers, `[[realms.NAME.upstreams]]`: checked into `UpstreamSpec`s
//! (`stanza.rs`), started as the realm's `RealmUpstreams`, pins kept in the shared store.

pub(crate) mod pins;
pub(crate) mod stanza;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use bondry_core::backend::{BackendKind, Plan};
use bondry_upstream::{RealmUpstreams, TransportSpec, UpstreamSpec};

use super::{Kind, Start};

pub(super) const KIND: Kind = Kind {
    kind: BackendKind::UPSTREAM,
    plan: |diagnostics, loaded, planning| {
        let specs =
            stanza::upstreams(diagnostics, loaded, planning.realm, &planning.raw.upstreams, planning.raw.listing)?;
        Some(Plan::new(BackendKind::UPSTREAM, specs))
    },
    start: |Start { realm, events, plan, shared, .. }| {
        let specs: Vec<UpstreamSpec> = plan.take(BackendKind::UPSTREAM)?;
        Ok(Arc::new(RealmUpstreams::start(realm, events, specs, Arc::clone(&shared.pins))?))
    },
    prefixes: |plan| specs(plan).iter().map(|spec| spec.prefix.clone()).collect(),
    warnings: commands,
    report: |_, _| Vec::new(),
    // An upstream lists its own capabilities; none is declared one by one.
    bind: None,
};

/// The upstreams of a plan of this kind, in stanza order.
fn specs(plan: &Plan) -> &[UpstreamSpec] {
    plan.stanzas::<Vec<UpstreamSpec>>().map(Vec::as_slice).unwrap_or_default()
}

/// Each stdio upstream whose program cannot be started, keyed by its `command`.
fn commands(plan: &Plan, realm: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (index, upstream) in specs(plan).iter().enumerate() {
        let TransportSpec::Stdio { command, env, .. } = &upstream.transport else { continue };
        let path = env.iter().find(|(name, _)| name == "PATH").map(|(_, value)| value.as_str());
        if let Err(why) = runnable(command, path) {
            found.push((format!("realms.{realm}.upstreams[{index}].command"), why));
        }
    }
    found
}

/// Whether `command` can be started: a path to an executable file, or a name found as one
/// on `path` (the child's `PATH`).
fn runnable(command: &str, path: Option<&str>) -> Result<(), String> {
    let is_executable = |meta: &std::fs::Metadata| meta.is_file() && meta.permissions().mode() & 0o111 != 0;
    let executable = |candidate: &Path| std::fs::metadata(candidate).is_ok_and(|meta| is_executable(&meta));
    if command.contains('/') {
        return match std::fs::metadata(command) {
            Err(error) => Err(format!("{command:?} cannot be started: {error}")),
            Ok(meta) if !is_executable(&meta) => Err(format!(
                "{command:?} is not an executable file: chmod +x it, or name its interpreter as the command"
            )),
            Ok(_) => Ok(()),
        };
    }
    let path = path.unwrap_or_default();
    if std::env::split_paths(path).any(|dir| executable(&dir.join(command))) {
        Ok(())
    } else {
        Err(format!("{command:?} is not found on PATH ({path}): install it, or give its full path"))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_program_is_runnable_when_found_executable() {
        assert_eq!(runnable("sh", Some("/nowhere:/bin:/usr/bin")), Ok(()));
        assert_eq!(
            runnable("no-such-program-here", Some("/bin")),
            Err("\"no-such-program-here\" is not found on PATH (/bin): install it, or give its full path".into())
        );
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("server.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let shown = script.display().to_string();
        assert!(runnable(&shown, None).unwrap_err().contains("is not an executable file"));
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(runnable(&shown, None), Ok(()));
    }
}
