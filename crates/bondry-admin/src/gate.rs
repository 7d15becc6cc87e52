//! Who may use the admin API: the `Host` rule of loopback MCP listeners, a bearer token
//! compared in constant time, a limit on failed attempts per client address, and a budget
//! of failed attempts across all addresses.
//!
//! The per-address limit alone gives an attacker who rotates source addresses as many
//! guesses as addresses; the budget bounds the guesses verified in any minute whatever
//! the addresses. While it is spent, an address that has not authenticated lately is
//! refused before its token is looked at, so a spent budget answers no guess; addresses
//! that presented a good token in the last day are still verified, so a flood never locks
//! the operator out. Addresses are keyed as IPv4 /32 and IPv6 /64
//! ([`limits::network_key`]), so one IPv6 allocation is one address.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bondry_http_server::admission::{self, OriginPolicy};
use bondry_http_server::limits;
use http::HeaderMap;
use http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Failed attempts an address may make per window before it is refused outright.
const FAILURES_PER_WINDOW: u32 = 10;
/// The window of both the per-address limit and the budget.
const WINDOW: Duration = Duration::from_secs(60);
/// Addresses whose failures are counted at most; the oldest windows are forgotten first.
/// Past it an address's failures are counted by the budget alone.
const ADDRESSES: usize = 10_000;
/// How long an address that presented a good token is still verified while the budget is
/// spent.
const KNOWN_FOR: Duration = Duration::from_secs(24 * 60 * 60);
/// Addresses remembered as having presented a good token, at most; past it the one that
/// authenticated longest ago is forgotten. Only a token holder adds one.
const KNOWN_ADDRESSES: usize = 1024;

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
    /// The budget of failed attempts across all addresses is spent: for this long.
    Spent(Duration),
}

pub struct Gate {
    tokens: Vec<AdminToken>,
    loopback: bool,
    attempts: Mutex<Attempts>,
}

/// What the gate remembers of past attempts.
struct Attempts {
    /// Failures per address in its current window: when the window began, and how many.
    failures: HashMap<String, (Instant, u32)>,
    /// When each failure of the last window happened, oldest first, across all addresses;
    /// a verification under way from an address not known holds its place in advance.
    recent: VecDeque<Instant>,
    /// Failures allowed in a window across all addresses.
    budget: usize,
    /// When each address known to hold a token last presented a good one.
    known: HashMap<String, Instant>,
    /// Whether the spell of a spent budget has been logged.
    spent_logged: bool,
}

impl Gate {
    /// A gate admitting `tokens`, `budget` failed attempts a minute across all addresses;
    /// `loopback` for a listener on a loopback address.
    pub fn new(tokens: Vec<AdminToken>, loopback: bool, budget: NonZeroU32) -> Self {
        let budget = usize::try_from(budget.get()).unwrap_or(usize::MAX);
        let attempts = Attempts {
            failures: HashMap::new(),
            recent: VecDeque::with_capacity(budget.min(1024)),
            budget,
            known: HashMap::new(),
            spent_logged: false,
        };
        Self { tokens, loopback, attempts: Mutex::new(attempts) }
    }

    /// The name of the token the request presents, once its `Host` passed; `peer` is the
    /// client's address, whose failures are counted.
    pub fn admit(&self, headers: &HeaderMap, authority: Option<&str>, peer: IpAddr) -> Result<&str, Refused> {
        self.admit_at(headers, authority, peer, Instant::now())
    }

    /// [`Gate::admit`] at `now`.
    fn admit_at(
        &self,
        headers: &HeaderMap,
        authority: Option<&str>,
        peer: IpAddr,
        now: Instant,
    ) -> Result<&str, Refused> {
        if !self.host_allowed(headers, authority) {
            return Err(Refused::Host);
        }
        let address = limits::network_key(peer.to_canonical());
        // Decided and its place in the budget taken at once, so concurrent guesses cannot
        // all pass a budget with one place left.
        let (reserved, over) = {
            let mut attempts = self.attempts();
            let known = attempts.is_known(&address, now);
            // A known address is verified even past its own limit: on a loopback bind every
            // local client shares it, and none of them may lock the operator out.
            let over = attempts.blocked(&address, now);
            if let Some(wait) = over.filter(|_| !known) {
                return Err(Refused::TooMany(wait));
            }
            if !known {
                attempts.take(now).map_err(Refused::Spent)?;
            }
            (!known, over)
        };
        let matched = self.verify(headers);
        let mut attempts = self.attempts();
        let Some(name) = matched else {
            attempts.failed(address, now);
            // A known address's failure is counted now, within its own limit: past it, the
            // address's failures spend no one else's budget. While the budget is spent, or
            // past its own limit, it is answered as a stranger's would be, and tells no more.
            if !reserved && over.is_none() {
                attempts.take(now).map_err(Refused::Spent)?;
            }
            return Err(over.map_or(Refused::Token, Refused::TooMany));
        };
        if reserved {
            attempts.give_back(now);
        }
        attempts.remember(address, now);
        Ok(name)
    }

    /// Whether the request's `Host` and `Origin` are the listener's own.
    pub fn host_allowed(&self, headers: &HeaderMap, authority: Option<&str>) -> bool {
        let local = OriginPolicy::Listed { local: true, exact: Vec::new() };
        admission::check(headers, authority, &local, self.loopback).is_ok()
    }

    /// Whether `peer` presented a good token within the last day.
    pub fn knows(&self, peer: IpAddr) -> bool {
        self.attempts().is_known(&limits::network_key(peer.to_canonical()), Instant::now())
    }

    /// The name of the token the request presents, if it is one of ours.
    fn verify(&self, headers: &HeaderMap) -> Option<&str> {
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(|token| -> [u8; 32] { Sha256::digest(token.trim().as_bytes()).into() })?;
        // Every token is compared, whichever matches: the time taken tells nothing.
        self.tokens.iter().fold(None, |found, token| {
            let equal: bool = token.digest.ct_eq(&presented).into();
            found.or(equal.then_some(token.name.as_str()))
        })
    }

    fn attempts(&self) -> std::sync::MutexGuard<'_, Attempts> {
        self.attempts.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Attempts {
    /// How long `address` is still refused for its own failures, if it is.
    fn blocked(&self, address: &str, now: Instant) -> Option<Duration> {
        let (since, count) = self.failures.get(address)?;
        let left = WINDOW.checked_sub(now.saturating_duration_since(*since))?;
        (*count >= FAILURES_PER_WINDOW && !left.is_zero()).then_some(left)
    }

    fn failed(&mut self, address: String, now: Instant) {
        let current = |since: &Instant| now.saturating_duration_since(*since) < WINDOW;
        if self.failures.len() >= ADDRESSES && !self.failures.contains_key(&address) {
            self.failures.retain(|_, (since, _)| current(since));
            if self.failures.len() >= ADDRESSES {
                return;
            }
        }
        let entry = self.failures.entry(address).or_insert((now, 0));
        if !current(&entry.0) {
            *entry = (now, 0);
        }
        entry.1 += 1;
    }

    /// Takes a place in the budget at `now`; when it is spent, how long until a place frees.
    fn take(&mut self, now: Instant) -> Result<(), Duration> {
        while self.recent.front().is_some_and(|at| now.saturating_duration_since(*at) >= WINDOW) {
            self.recent.pop_front();
        }
        if self.recent.len() < self.budget {
            self.recent.push_back(now);
            self.spent_logged = false;
            return Ok(());
        }
        if !self.spent_logged {
            self.spent_logged = true;
            tracing::warn!(
                budget = self.budget,
                "admin: max_failed_attempts_per_minute reached; until it frees, only addresses that authenticated in the last 24 hours are verified"
            );
        }
        let oldest = self.recent.front().copied().unwrap_or(now);
        Err(WINDOW.saturating_sub(now.saturating_duration_since(oldest)))
    }

    /// Gives back the place taken at `now` by a verification that succeeded.
    fn give_back(&mut self, now: Instant) {
        if let Some(index) = self.recent.iter().rposition(|at| *at == now) {
            self.recent.remove(index);
        }
    }

    fn is_known(&self, address: &str, now: Instant) -> bool {
        self.known.get(address).is_some_and(|at| now.saturating_duration_since(*at) < KNOWN_FOR)
    }

    fn remember(&mut self, address: String, now: Instant) {
        if self.known.len() >= KNOWN_ADDRESSES && !self.known.contains_key(&address) {
            self.known.retain(|_, at| now.saturating_duration_since(*at) < KNOWN_FOR);
            if self.known.len() >= KNOWN_ADDRESSES {
                let oldest = self.known.iter().min_by_key(|(_, at)| **at).map(|(address, _)| address.clone());
                if let Some(oldest) = oldest {
                    self.known.remove(&oldest);
                }
            }
        }
        self.known.insert(address, now);
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

    fn budget(attempts: u32) -> NonZeroU32 {
        NonZeroU32::new(attempts).unwrap()
    }

    fn address(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// The `index`th address of 10.0.0.0/8, none of them known.
    fn stranger(index: u32) -> IpAddr {
        IpAddr::V4((u32::from_be_bytes([10, 0, 0, 0]) + index).into())
    }

    const GOOD: &str = "ssssssssssssssssssssssssssssssss";

    fn gate(attempts: u32) -> Gate {
        Gate::new(vec![AdminToken::new("ops", GOOD)], true, budget(attempts))
    }

    #[test]
    fn a_token_is_known_by_its_name_and_failures_are_limited_per_address() {
        let gate = Gate::new(
            vec![AdminToken::new("ops", &"s".repeat(32)), AdminToken::new("ci", &"c".repeat(32))],
            true,
            budget(100),
        );
        let peer = address("127.0.0.1");
        assert_eq!(gate.admit(&headers(Some(&"c".repeat(32))), None, peer), Ok("ci"));
        assert_eq!(gate.admit(&headers(None), None, peer), Err(Refused::Token));
        for _ in 1..FAILURES_PER_WINDOW {
            assert_eq!(gate.admit(&headers(Some("wrong")), None, peer), Err(Refused::Token));
        }
        // The address authenticated: past its limit a wrong token gets 429, the right one
        // is still served (everyone local shares 127.0.0.1 with the operator).
        assert!(matches!(gate.admit(&headers(Some("wrong")), None, peer), Err(Refused::TooMany(_))));
        assert_eq!(gate.admit(&headers(Some(&"s".repeat(32))), None, peer), Ok("ops"));
        // A stranger past its limit is refused outright, even with the right token.
        let stranger = address("127.0.0.2");
        for _ in 0..FAILURES_PER_WINDOW {
            assert_eq!(gate.admit(&headers(Some("wrong")), None, stranger), Err(Refused::Token));
        }
        assert!(matches!(gate.admit(&headers(Some(&"s".repeat(32))), None, stranger), Err(Refused::TooMany(_))));
        assert_eq!(gate.admit(&headers(Some(&"s".repeat(32))), None, address("127.0.0.3")), Ok("ops"));
    }

    #[test]
    fn a_foreign_host_is_refused_before_any_token_is_looked_at() {
        let gate = gate(100);
        let mut foreign = headers(Some(GOOD));
        foreign.insert(HOST, HeaderValue::from_static("evil.example"));
        assert_eq!(gate.admit(&foreign, None, address("127.0.0.1")), Err(Refused::Host));
    }

    #[test]
    fn rotating_addresses_get_the_budget_then_429_before_any_comparison() {
        let gate = gate(100);
        let start = Instant::now();
        for index in 0..100 {
            let at = start + Duration::from_millis(u64::from(index) * 10);
            assert_eq!(gate.admit_at(&headers(Some("guess")), None, stranger(index), at), Err(Refused::Token));
        }
        // Spent: a stranger is refused even with the right token, so a spent budget
        // confirms no guess; it may come back when the first failure is a minute old.
        let at = start + Duration::from_secs(20);
        assert_eq!(
            gate.admit_at(&headers(Some(GOOD)), None, stranger(100), at),
            Err(Refused::Spent(Duration::from_secs(40)))
        );
        assert_eq!(
            gate.admit_at(&headers(Some("guess")), None, stranger(101), at),
            Err(Refused::Spent(Duration::from_secs(40)))
        );
        // A minute after the first failure, one place has freed: one more guess is verified.
        let later = start + WINDOW;
        assert_eq!(gate.admit_at(&headers(Some("guess")), None, stranger(102), later), Err(Refused::Token));
        assert_eq!(
            gate.admit_at(&headers(Some("guess")), None, stranger(103), later),
            Err(Refused::Spent(Duration::from_millis(10)))
        );
        // Once the failures are over a minute old, a stranger with the right token is in.
        let after = start + WINDOW * 2;
        assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, stranger(104), after), Ok("ops"));
    }

    #[test]
    fn an_address_that_authenticated_in_the_last_day_is_served_while_the_budget_is_spent() {
        let gate = gate(3);
        let start = Instant::now();
        let operator = address("127.0.0.1");
        assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, operator, start), Ok("ops"));
        for index in 0..3 {
            assert_eq!(gate.admit_at(&headers(Some("guess")), None, stranger(index), start), Err(Refused::Token));
        }
        assert!(matches!(gate.admit_at(&headers(Some(GOOD)), None, stranger(3), start), Err(Refused::Spent(_))));
        // The operator's token is still verified and served; a wrong one from its address
        // is not told apart from the spent budget.
        let hour = Duration::from_secs(3600);
        assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, operator, start + hour), Ok("ops"));
        let spent = start + hour + Duration::from_secs(1);
        for index in 0..3 {
            assert_eq!(gate.admit_at(&headers(Some("guess")), None, stranger(index), spent), Err(Refused::Token));
        }
        assert!(matches!(gate.admit_at(&headers(Some("typo")), None, operator, spent), Err(Refused::Spent(_))));
        // An IPv6 client is known by its /64, an IPv4 one mapped into IPv6 by its address.
        let v6 = address("2001:db8:1:2::10");
        let fresh = start + KNOWN_FOR;
        assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, v6, fresh), Ok("ops"));
        for index in 0..3 {
            assert_eq!(gate.admit_at(&headers(Some("guess")), None, stranger(index), fresh), Err(Refused::Token));
        }
        assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, address("2001:db8:1:2::99"), fresh), Ok("ops"));
        assert!(matches!(
            gate.admit_at(&headers(Some(GOOD)), None, address("2001:db8:1:3::10"), fresh),
            Err(Refused::Spent(_))
        ));
        assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, address("::ffff:127.0.0.1"), fresh), Ok("ops"));
        // A day after its last good token, an address is a stranger again.
        let fresh = fresh + KNOWN_FOR;
        for index in 10..13 {
            assert_eq!(gate.admit_at(&headers(Some("guess")), None, stranger(index), fresh), Err(Refused::Token));
        }
        assert!(matches!(gate.admit_at(&headers(Some(GOOD)), None, operator, fresh), Err(Refused::Spent(_))));
    }

    #[test]
    fn a_good_token_from_a_stranger_gives_its_place_in_the_budget_back() {
        let gate = gate(2);
        let start = Instant::now();
        for index in 0..5 {
            assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, stranger(index), start), Ok("ops"));
        }
        assert_eq!(gate.admit_at(&headers(Some("guess")), None, address("127.0.0.9"), start), Err(Refused::Token));
        assert_eq!(gate.admit_at(&headers(Some("guess")), None, address("127.0.0.9"), start), Err(Refused::Token));
        assert!(matches!(
            gate.admit_at(&headers(Some("guess")), None, address("127.0.0.9"), start),
            Err(Refused::Spent(_))
        ));
    }

    #[test]
    fn the_known_addresses_are_bounded_forgetting_the_one_seen_longest_ago() {
        let gate = gate(1);
        let start = Instant::now();
        let count = u32::try_from(KNOWN_ADDRESSES).unwrap() + 1;
        for index in 0..count {
            let at = start + Duration::from_millis(u64::from(index));
            assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, stranger(index), at), Ok("ops"));
        }
        assert_eq!(gate.attempts().known.len(), KNOWN_ADDRESSES);
        let at = start + Duration::from_secs(2);
        assert_eq!(gate.admit_at(&headers(Some("guess")), None, address("127.0.0.9"), at), Err(Refused::Token));
        assert!(matches!(gate.admit_at(&headers(Some(GOOD)), None, stranger(0), at), Err(Refused::Spent(_))));
        assert_eq!(gate.admit_at(&headers(Some(GOOD)), None, stranger(1), at), Ok("ops"));
    }
}
