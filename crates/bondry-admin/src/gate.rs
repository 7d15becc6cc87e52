//! Who may use the admin API: the `Host` rule of loopback MCP listeners, a bearer token
//! compared in constant time, and a limit on failed attempts per client address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bondry_http_server::admission::{self, OriginPolicy};
use http::HeaderMap;
use http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Failed attempts an address may make per window before it is refused outright.
const FAILURES_PER_WINDOW: u32 = 10;
const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; the oldest windows are forgotten first.
const ADDRESSES: usize = 10_000;

/// A token operators present as `Authorization: Bearer TOKEN`, known by its name.
pub struct AdminToken {
    pub name: String,
    digest: [u8; 32],
}

impl AdminToken {
    /// The token `secret` named `name`; only its SHA-256 is kept.
    pub fn new(name: impl Into<String>, secret: &str) -> Self {
        Self { name: name.into(), digest: Sha256::digest(secret.as_bytes()).into() }
    }
}

/// Why a request is not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A `Host` or `Origin` a loopback listener does not serve.
    Host,
    /// No token, or not one of ours.
    Token,
    /// Too many failed attempts from this address: for this long.
    TooMany(Duration),
}

pub struct Gate {
    tokens: Vec<AdminToken>,
    loopback: bool,
    failures: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Gate {
    pub fn new(tokens: Vec<AdminToken>, loopback: bool) -> Self {
        Self { tokens, loopback, failures: Mutex::new(HashMap::new()) }
    }

    /// The name of the token the request presents, once its `Host` passed; `peer` is the
    /// client's address, whose failures are counted.
    pub fn admit(&self, headers: &HeaderMap, authority: Option<&str>, peer: IpAddr) -> Result<&str, Refused> {
        let local = OriginPolicy::Listed { local: true, exact: Vec::new() };
        admission::check(headers, authority, &local, self.loopback).map_err(|_| Refused::Host)?;
        if let Some(wait) = self.blocked(peer) {
            return Err(Refused::TooMany(wait));
        }
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(|token| -> [u8; 32] { Sha256::digest(token.trim().as_bytes()).into() });
        // Every token is compared, whichever matches: the time taken tells nothing.
        let matched = presented.and_then(|digest| {
            self.tokens.iter().fold(None, |found, token| {
                let equal: bool = token.digest.ct_eq(&digest).into();
                found.or(equal.then_some(token.name.as_str()))
            })
        });
        matched.ok_or_else(|| {
            self.failed(peer);
            Refused::Token
        })
    }

    fn blocked(&self, peer: IpAddr) -> Option<Duration> {
        let failures = self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (since, count) = failures.get(&peer)?;
        let left = WINDOW.checked_sub(since.elapsed())?;
        (*count >= FAILURES_PER_WINDOW).then_some(left)
    }

    fn failed(&self, peer: IpAddr) {
        let mut failures = self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if failures.len() >= ADDRESSES {
            failures.retain(|_, (since, _)| since.elapsed() < WINDOW);
        }
        if failures.len() >= ADDRESSES {
            return;
        }
        let entry = failures.entry(peer).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use http::header::HOST;

    fn headers(token: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:7374"));
        if let Some(token) = token {
            headers.insert(AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {token}")).unwrap());
        }
        headers
    }

    #[test]
    fn a_token_is_known_by_its_name_and_failures_are_limited_per_address() {
        let gate =
            Gate::new(vec![AdminToken::new("ops", &"s".repeat(32)), AdminToken::new("ci", &"c".repeat(32))], true);
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(gate.admit(&headers(Some(&"c".repeat(32))), None, peer), Ok("ci"));
        assert_eq!(gate.admit(&headers(None), None, peer), Err(Refused::Token));
        for _ in 1..FAILURES_PER_WINDOW {
            assert_eq!(gate.admit(&headers(Some("wrong")), None, peer), Err(Refused::Token));
        }
        // Refused outright now, even with the right token.
        assert!(matches!(gate.admit(&headers(Some(&"s".repeat(32))), None, peer), Err(Refused::TooMany(_))));
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        assert_eq!(gate.admit(&headers(Some(&"s".repeat(32))), None, other), Ok("ops"));
    }

    #[test]
    fn a_foreign_host_is_refused_before_any_token_is_looked_at() {
        let gate = Gate::new(vec![AdminToken::new("ops", &"s".repeat(32))], true);
        let mut foreign = headers(Some(&"s".repeat(32)));
        foreign.insert(HOST, HeaderValue::from_static("evil.example"));
        assert_eq!(gate.admit(&foreign, None, "127.0.0.1".parse().unwrap()), Err(Refused::Host));
    }
}
