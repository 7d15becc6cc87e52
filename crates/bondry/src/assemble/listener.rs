//! The `[listeners.NAME]` section: each listener's socket address, protocol revisions,
//! origins, proxies, sizes, timeouts and per-address rate, checked into the runtime's
//! listener settings.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bondry_http_server::limits::Cidr;
use bondry_http_server::{ConnectionLimits, ListenerConfig, OriginPolicy};
use bondry_mcp_proto::ListenerSettings;

use super::rates::rate;
use crate::config::RawListener;
use crate::config::diagnostics::{Diagnostics, revisions};

/// Every configured listener; `listen` (the command line's `--listen`) replaces the bind
/// address of the one there must then be.
pub(super) fn listeners(
    diagnostics: &mut Diagnostics,
    raw: &BTreeMap<String, RawListener>,
    listen: Option<SocketAddr>,
) -> Option<Vec<ListenerConfig>> {
    if raw.is_empty() {
        diagnostics
            .refuse("listeners", "no listener is configured; add [listeners.main] with bind = \"127.0.0.1:7373\"");
        return None;
    }
    if listen.is_some() && raw.len() != 1 {
        diagnostics.refuse(
            "--listen",
            format!(
                "needs exactly one configured listener, found {}; set bind in each [listeners.*] instead",
                raw.len()
            ),
        );
    }
    // Every listener is checked before any refusal ends the section.
    let listeners: Vec<_> =
        raw.iter().map(|(name, listener)| listener_config(diagnostics, name, listener, listen)).collect();
    listeners.into_iter().collect()
}

fn listener_config(
    diagnostics: &mut Diagnostics,
    name: &str,
    raw: &RawListener,
    listen: Option<SocketAddr>,
) -> Option<ListenerConfig> {
    let key = |k: &str| format!("listeners.{name}.{k}");
    // `--listen` replaces a bind that is still checked: the file must serve without it too.
    let bind = diagnostics.ok(
        key("bind"),
        raw.bind
            .parse::<SocketAddr>()
            .map_err(|_| format!("{:?} is not an address; write it as \"127.0.0.1:7373\" or \"[::1]:7373\"", raw.bind)),
    );
    let revisions = revisions(diagnostics, &key("protocol_versions"), &raw.protocol_versions);
    let mut positive_ms = |k: &str, value: u64| {
        let checked = (value > 0)
            .then(|| Duration::from_millis(value))
            .ok_or_else(|| format!("{value} must be a positive number of milliseconds"));
        diagnostics.ok(key(k), checked)
    };
    let session_idle = positive_ms("session_idle_ms", raw.session_idle_ms);
    let session_lifetime = positive_ms("session_lifetime_ms", raw.session_lifetime_ms);
    let origins = origin_policy(diagnostics, &key("allowed_origins"), &raw.allowed_origins);
    let trusted_proxies = trusted_proxies(diagnostics, &key("trusted_proxies"), &raw.trusted_proxies);
    let per_address = match raw.rate_limits.per_address {
        Some(raw) => diagnostics.ok(key("rate_limits.per_address"), rate(raw)).map(Some),
        None => Some(None),
    };
    let max_body_bytes = diagnostics.ok(
        key("max_body_bytes"),
        usize::try_from(raw.max_body_bytes)
            .ok()
            .filter(|&limit| limit > 0)
            .ok_or_else(|| format!("{} must be a positive number of bytes, e.g. 4194304", raw.max_body_bytes)),
    );
    let page_size = diagnostics.ok(
        key("page_size"),
        usize::try_from(raw.page_size)
            .ok()
            .filter(|size| (1..=10_000).contains(size))
            .ok_or_else(|| format!("{} must be between 1 and 10000", raw.page_size)),
    );
    let mut positive = |k: &str, value: u64, unit: &str| {
        diagnostics.ok(key(k), (value > 0).then_some(value).ok_or_else(|| format!("0 must be a positive {unit}")))
    };
    let max_connections = positive("max_connections", raw.max_connections, "count, e.g. 1024");
    let header_read_timeout =
        positive("header_read_timeout_ms", raw.header_read_timeout_ms, "number of milliseconds, e.g. 10000");
    let body_read_timeout =
        positive("body_read_timeout_ms", raw.body_read_timeout_ms, "number of milliseconds, e.g. 30000");
    Some(ListenerConfig {
        connections: ConnectionLimits {
            max_connections: usize::try_from(max_connections?).unwrap_or(usize::MAX),
            header_read_timeout: Duration::from_millis(header_read_timeout?),
            body_read_timeout: Duration::from_millis(body_read_timeout?),
        },
        name: name.to_owned(),
        bind: listen.unwrap_or(bind?),
        settings: ListenerSettings {
            revisions: revisions?,
            page_size: page_size?,
            list_ttl_ms: raw.list_ttl_ms,
            server_version: env!("CARGO_PKG_VERSION").to_owned(),
            session_lifetime: session_lifetime?,
        },
        origins: origins?,
        max_body_bytes: max_body_bytes?,
        session_idle: session_idle?,
        trusted_proxies: trusted_proxies?,
        per_address: per_address?,
    })
}

/// `allowed_origins`: every entry must be `local`, `any` or an origin (`scheme://host[:port]`,
/// as browsers send it: no path, user info, query or fragment).
fn origin_policy(diagnostics: &mut Diagnostics, key: &str, entries: &[String]) -> Option<OriginPolicy> {
    let mut any = false;
    let mut local = false;
    let mut exact = Vec::new();
    let mut refused = false;
    for (index, entry) in entries.iter().enumerate() {
        match entry.as_str() {
            "any" => any = true,
            "local" => local = true,
            origin if is_origin(origin) => exact.push(origin.to_owned()),
            other => {
                refused = true;
                diagnostics.refuse(
                    format!("{key}[{index}]"),
                    format!("{other:?} is not \"local\", \"any\" or an origin like \"https://app.example\""),
                );
            }
        }
    }
    (!refused).then_some(if any { OriginPolicy::Any } else { OriginPolicy::Listed { local, exact } })
}

fn is_origin(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, authority)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !authority.is_empty()
            && authority.bytes().all(|b| b.is_ascii_graphic() && !b"/@?#".contains(&b))
    })
}

/// `trusted_proxies`: every entry a CIDR block.
fn trusted_proxies(diagnostics: &mut Diagnostics, key: &str, entries: &[String]) -> Option<Vec<Cidr>> {
    let blocks: Vec<_> = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let parsed = Cidr::parse(entry)
                .ok_or_else(|| format!("{entry:?} is not a CIDR; write it as \"10.0.0.0/8\" or \"::1/128\""));
            diagnostics.ok(format!("{key}[{index}]"), parsed)
        })
        .collect();
    blocks.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(entries: &[&str]) -> Result<OriginPolicy, Vec<String>> {
        let mut diagnostics = Diagnostics::new("t.toml", Default::default());
        let entries: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
        let policy = origin_policy(&mut diagnostics, "allowed_origins", &entries);
        diagnostics.finish(policy).map_err(|errors| errors.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn origins_are_validated_entry_by_entry() {
        assert_eq!(policy(&["local"]), Ok(OriginPolicy::Listed { local: true, exact: vec![] }));
        assert_eq!(policy(&["local", "any"]), Ok(OriginPolicy::Any));
        assert_eq!(
            policy(&["https://app.example:8443"]),
            Ok(OriginPolicy::Listed { local: false, exact: vec!["https://app.example:8443".into()] })
        );
        for bad in [
            "https://app.example/",
            "x://y@z",
            "://host",
            "https://",
            "1http://a",
            "https://a b",
            "https://a\tb",
            "https://ä",
        ] {
            let refused = policy(&[bad]).unwrap_err();
            assert_eq!(refused.len(), 1, "{bad}");
            assert!(refused[0].starts_with(&format!("t.toml: allowed_origins[0]: {bad:?} is not")), "{refused:?}");
        }
    }

    #[test]
    fn every_bad_entry_is_refused_even_beside_any() {
        let refused = policy(&["bogus", "any", "https://ok.example", "ftp://a/b"]).unwrap_err();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused[0].contains("allowed_origins[0]: \"bogus\""), "{refused:?}");
        assert!(refused[1].contains("allowed_origins[3]: \"ftp://a/b\""), "{refused:?}");
    }
}
