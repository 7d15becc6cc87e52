//! What a configuration that passed every check will still not do as its author meant:
//! a grant that covers nothing, a role no caller can hold, a listener open to the network
//! in plain HTTP, and what each kind of backend warns of (a program that will not start).
//! `check` prints these and exits 0 (1 with `--strict`); `serve` logs them.

use bondry_core::capability::CapabilityId;
use bondry_core::policy::{CapabilityPattern, Grant, Subject};
use bondry_mcp_proto::ADAPTER;

use super::Assembled;
use crate::backends;
use crate::config::{ConfigError, Loaded, RawListing, RawRealm};

/// Every warning of `loaded`, assembled as `assembled`, placed where its key is written.
pub fn warnings(loaded: &Loaded, assembled: &Assembled) -> Vec<ConfigError> {
    let mut found = Vec::new();
    let mut warn = |key: String, message: String| {
        let place = loaded.places.named(&key).cloned();
        found.push(ConfigError { origin: loaded.origin.clone(), place, key: Some(key), message });
    };
    // The addresses as served, `--listen` applied.
    for listener in &assembled.server.listeners {
        if !listener.bind.ip().is_loopback() && listener.trusted_proxies.is_empty() {
            warn(
                format!("listeners.{}.bind", listener.name),
                format!(
                    "\"{}\" is reachable from the network in plain HTTP, with no trusted_proxies: put a TLS-terminating proxy in front and list its address in trusted_proxies",
                    listener.bind
                ),
            );
        }
    }
    let admin = &assembled.admin;
    let metrics_asked =
        [("metrics_public", admin.metrics_public), ("metrics_per_capability", admin.metrics_per_capability)];
    match super::admin::off(loaded) {
        Some(why) => {
            for (key, _) in metrics_asked.iter().filter(|(_, asked)| *asked) {
                warn(
                    format!("admin.{key}"),
                    format!("no metrics are kept: the admin listener, which serves them, is off: {why}"),
                );
            }
        }
        None if admin.metrics_public && !admin.bind.ip().is_loopback() => warn(
            "admin.metrics_public".into(),
            format!(
                "\"{}\" is reachable from the network: anyone who reaches it reads the metrics (realm, upstream and entry names, traffic) without a token",
                admin.bind
            ),
        ),
        None => {}
    }
    for (realm, raw) in &loaded.raw.realms {
        let plans = assembled.backends.get(realm).map(Vec::as_slice).unwrap_or_default();
        let ids: Vec<CapabilityId> = assembled
            .server
            .realms
            .get(realm)
            .map(|entry| entry.registry.snapshot().catalogue.iter().map(|entry| entry.id().clone()).collect())
            .unwrap_or_default();
        let prefixes = backends::prefixes(plans);
        let prefixes: Vec<&str> = prefixes.iter().map(String::as_str).collect();
        let http = raw.capabilities.iter().any(|capability| capability.backend != "builtin");
        if raw.listing == Some(RawListing::Search) && raw.upstreams.is_empty() && raw.openapi.is_empty() && !http {
            warn(
                format!("realms.{realm}.listing"),
                "\"search\" reaches every source of tools but the builtin handlers, and the realm has none: every tool stays listed".into(),
            );
        }
        // Readiness is the admin listener's to report, and it is off without a token.
        let admin_off = super::admin::off(loaded).is_some();
        for (index, _) in raw.upstreams.iter().enumerate().filter(|(_, upstream)| upstream.required && admin_off) {
            warn(
                format!("realms.{realm}.upstreams[{index}].required"),
                "nothing reports readiness: the admin listener, which serves /readyz, is off without [[admin.tokens]] or a data_dir to generate its token in".into(),
            );
        }
        for (index, role) in raw.roles.iter().enumerate() {
            if !can_be_given(raw, &role.name) {
                warn(
                    format!("realms.{realm}.roles[{index}].name"),
                    format!(
                        "no caller can hold role {:?}: no principal, ticket or anonymous_roles gives it, and no OAuth issuer maps claims to roles",
                        role.name
                    ),
                );
            }
            for (at, text) in role.grants.iter().enumerate() {
                let Ok(grant) = Grant::parse(Subject::Role(role.name.clone()), text, ADAPTER) else { continue };
                if grant.adapter == ADAPTER && covers_nothing(&grant.pattern, &ids, &prefixes) {
                    warn(
                        format!("realms.{realm}.roles[{index}].grants[{at}]"),
                        format!(
                            "grant {text:?} matches no capability configured in the realm, nor any an upstream's prefix could list (unless a handler publishes one while serving)"
                        ),
                    );
                }
            }
        }
        for (key, why) in backends::warnings(realm, plans) {
            warn(key, why);
        }
    }
    found
}

/// Whether a caller of `raw` can come to hold `role`.
fn can_be_given(raw: &RawRealm, role: &str) -> bool {
    let named = |roles: &[String]| roles.iter().any(|given| given == role);
    !raw.oauth.is_empty()
        || (raw.anonymous && named(&raw.anonymous_roles))
        || raw.principals.iter().any(|principal| named(&principal.roles))
}

/// Whether `pattern` matches none of `ids` and no entry a backend naming under one of
/// `prefixes` could list: its entries are named `PREFIX.NAME`, and `""` could name any.
fn covers_nothing(pattern: &CapabilityPattern, ids: &[CapabilityId], prefixes: &[&str]) -> bool {
    let text = match pattern {
        CapabilityPattern::Exact(id) => id.as_str(),
        CapabilityPattern::Prefix(prefix) => prefix.as_str(),
    };
    let matches_own = ids.iter().any(|id| pattern.matches(id));
    let could_be_listed = prefixes.iter().any(|prefix| {
        let under = format!("{prefix}.");
        let below = text.len() > under.len() && text.starts_with(&under);
        // `a.*` covers the entries of an upstream prefixed `a.b`; an exact id never does.
        let above = matches!(pattern, CapabilityPattern::Prefix(_)) && under.starts_with(text);
        prefix.is_empty() || below || above
    });
    !matches_own && !could_be_listed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_covers_nothing_unless_an_id_or_an_upstreams_prefix_can_match_it() {
        let pattern = |text: &str| Grant::parse(Subject::Role("r".into()), text, ADAPTER).unwrap().pattern;
        let ids = [CapabilityId::new("demo.echo").unwrap()];
        let upstreams = ["ev"];
        assert!(!covers_nothing(&pattern("demo.echo"), &ids, &upstreams));
        assert!(covers_nothing(&pattern("demo.ehco"), &ids, &upstreams));
        assert!(!covers_nothing(&pattern("ev.echo"), &ids, &upstreams));
        assert!(!covers_nothing(&pattern("ev.*"), &ids, &upstreams));
        assert!(covers_nothing(&pattern("ev"), &ids, &upstreams), "an exact id is not an upstream's entry");
        assert!(covers_nothing(&pattern("e"), &ids, &upstreams));
        assert!(!covers_nothing(&pattern("anything"), &ids, &[""]), "an upstream without a prefix lists any");
    }
}
