//! A realm's own keys in `[realms.NAME]`: its name, its roles and what they grant, the
//! roles of anonymous callers, and its session limits and rate limits. Its credentials,
//! capabilities and keys are sections of their own.

use std::time::Duration;

use bondry_core::policy::{Grant, Policy, Subject};
use bondry_http_server::SessionLimits;
use bondry_http_server::limits::{Bucket, FailureLimit, RealmLimits};
use bondry_mcp_proto::ADAPTER;

use super::rates::rate;
use crate::config::diagnostics::Diagnostics;
use crate::config::{RawLimits, RawRate, RawRealm, RawRealmRateLimits};

/// Whether `name` can be a realm's name: it appears in `/mcp/realm/NAME`.
pub(super) fn name(diagnostics: &mut Diagnostics, name: &str) -> Option<()> {
    let valid = bondry_core::capability::is_valid_id(name).then_some(()).ok_or_else(|| {
        format!(
            "{name:?} is not a realm name: use 1-64 characters from A-Z a-z 0-9 . _ - (it appears in /mcp/realm/NAME)"
        )
    });
    diagnostics.ok(format!("realms.{name}"), valid)
}

/// The realm's grants: each role named once, each of its grants a valid pattern, and
/// every role anonymous callers hold defined.
pub(super) fn policy(diagnostics: &mut Diagnostics, name: &str, raw: &RawRealm) -> Option<Policy> {
    let key = |k: &str| format!("realms.{name}.{k}");
    let mut valid = true;
    let mut grants = Vec::new();
    for (index, role) in raw.roles.iter().enumerate() {
        if role.name.is_empty() {
            diagnostics.refuse(key(&format!("roles[{index}].name")), "a role needs a non-empty name");
            valid = false;
        } else if raw.roles[..index].iter().any(|earlier| earlier.name == role.name) {
            diagnostics.refuse(
                key(&format!("roles[{index}].name")),
                format!("role {:?} is defined twice; merge its grants into one [[realms.{name}.roles]]", role.name),
            );
            valid = false;
        }
        for (at, grant) in role.grants.iter().enumerate() {
            let parsed = Grant::parse(Subject::Role(role.name.clone()), grant, ADAPTER).map_err(|e| e.to_string());
            match diagnostics.ok(key(&format!("roles[{index}].grants[{at}]")), parsed) {
                Some(grant) => grants.push(grant),
                None => valid = false,
            }
        }
    }
    for (index, role) in raw.anonymous_roles.iter().enumerate() {
        if !raw.roles.iter().any(|defined| &defined.name == role) {
            diagnostics.refuse(
                key(&format!("anonymous_roles[{index}]")),
                format!("role {role:?} is not defined; add [[realms.{name}.roles]] with name = {role:?}"),
            );
            valid = false;
        }
    }
    valid.then(|| Policy::new(grants))
}

/// `[realms.NAME.limits]`: caps on handshake-era sessions, each positive.
pub(super) fn session_limits(diagnostics: &mut Diagnostics, name: &str, raw: &RawLimits) -> Option<SessionLimits> {
    let mut count = |k: &str, value: u64| {
        let checked =
            usize::try_from(value).ok().filter(|&n| n > 0).ok_or_else(|| format!("{value} must be a positive count"));
        diagnostics.ok(format!("realms.{name}.limits.{k}"), checked)
    };
    let sessions_per_principal = count("sessions_per_principal", raw.sessions_per_principal);
    let inflight_per_session = count("inflight_per_session", raw.inflight_per_session);
    let listen_streams_per_principal = count("listen_streams_per_principal", raw.listen_streams_per_principal);
    let client_response_timeout = diagnostics.ok(
        format!("realms.{name}.limits.client_response_timeout_ms"),
        match raw.client_response_timeout_ms {
            0 => Err("0 must be a positive number of milliseconds, e.g. 60000".to_owned()),
            millis => Ok(Duration::from_millis(millis)),
        },
    );
    Some(SessionLimits {
        sessions_per_principal: sessions_per_principal?,
        inflight_per_session: inflight_per_session?,
        listen_streams_per_principal: listen_streams_per_principal?,
        client_response_timeout: client_response_timeout?,
    })
}

/// `[realms.NAME.rate_limits]`: each limit off unless given.
pub(super) fn rate_limits(diagnostics: &mut Diagnostics, name: &str, raw: &RawRealmRateLimits) -> Option<RealmLimits> {
    let mut bucket = |k: &str, raw: Option<RawRate>| match raw {
        Some(raw) => diagnostics.ok(format!("realms.{name}.rate_limits.{k}"), rate(raw)).map(Some),
        None => Some(None),
    };
    let auth_failures = bucket("auth_failures", raw.auth_failures);
    let per_principal = bucket("per_principal", raw.per_principal);
    Some(RealmLimits {
        auth_failures: auth_failures?.and_then(FailureLimit::new),
        per_principal: per_principal?.and_then(Bucket::new),
    })
}
