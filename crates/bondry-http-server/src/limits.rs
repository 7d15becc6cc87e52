//! Abuse limits: who the client is (through trusted proxies), and GCRA buckets per client
//! address, per address for failed authentications, and per principal.
//!
//! Addresses are keyed by IPv4 address or IPv6 /64, so rotating through one allocation
//! buys nothing. Idle buckets are swept so memory stays bounded under address rotation.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bondry_mcp_proto::Error;
use bondry_mcp_proto::jsonrpc::Id;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use http::HeaderMap;

/// A sustained rate and the burst allowed above it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_second: f64,
    pub burst: u32,
}

/// A network given as a CIDR, e.g. `10.0.0.0/8` or `::1/128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `ADDRESS/PREFIX`, or a bare address as a single host.
    pub fn parse(text: &str) -> Option<Self> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address.parse::<IpAddr>().ok()?, prefix.parse::<u8>().ok()?),
            None => {
                let address = text.parse::<IpAddr>().ok()?;
                (address, if address.is_ipv4() { 32 } else { 128 })
            }
        };
        let max = if address.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(Self { network: address, prefix })
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(network) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(network) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }
}

/// The client's address: the socket peer, unless the peer is a trusted proxy; then the
/// right-most hop of `X-Forwarded-For` that is not itself trusted.
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[Cidr]) -> IpAddr {
    // A dual-stack listener sees IPv4 clients as `::ffff:a.b.c.d`: key them as IPv4.
    let peer = peer.to_canonical();
    let is_trusted = |address: IpAddr| trusted.iter().any(|cidr| cidr.contains(address));
    if !is_trusted(peer) {
        return peer;
    }
    let hops = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    let mut client = peer;
    for hop in hops.iter().rev() {
        match hop.parse::<IpAddr>().map(|address| address.to_canonical()) {
            Ok(address) if is_trusted(address) => client = address,
            Ok(address) => return address,
            // A hop that is not an address ends what can be believed.
            Err(_) => return client,
        }
    }
    client
}

/// How an address is keyed: an IPv4 address, or the /64 of an IPv6 one.
pub fn network_key(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

/// A request over a limit: the whole seconds before it may be tried again (never 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter(pub u64);

impl RetryAfter {
    /// For caps on what is open at once, which free up when something closes.
    pub const SECOND: Self = Self(1);

    /// The refusal of request `id`.
    pub fn refusing(self, id: Option<Id>) -> Error {
        Error::TooManyRequests { id, retry_after_secs: self.0 }
    }
}

/// Every refusal over a limit is a 429 from the error table.
impl From<RetryAfter> for Error {
    fn from(retry: RetryAfter) -> Self {
        retry.refusing(None)
    }
}

/// One GCRA bucket per key.
pub struct Bucket {
    limiter: DefaultKeyedRateLimiter<String>,
    clock: DefaultClock,
}

impl Bucket {
    /// `None` for a rate that admits nothing (zero or negative).
    pub fn new(rate: Rate) -> Option<Self> {
        let period = Duration::try_from_secs_f64(1.0 / rate.per_second).ok()?;
        let quota = Quota::with_period(period)?.allow_burst(NonZeroU32::new(rate.burst)?);
        Some(Self { limiter: DefaultKeyedRateLimiter::dashmap(quota), clock: DefaultClock::default() })
    }

    /// Takes one cell for `key`; when the bucket is empty, how long to wait.
    pub fn take(&self, key: &str) -> Result<(), RetryAfter> {
        self.limiter
            .check_key(&key.to_owned())
            .map_err(|not_until| RetryAfter(whole_seconds(not_until.wait_time_from(self.clock.now()))))
    }

    /// Forgets buckets that are full again.
    pub fn sweep(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

fn whole_seconds(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

/// Failed authentications per address. Failures take from the bucket; once it is empty
/// the address is refused before any credential is verified, so no hashing work is spent.
pub struct FailureLimit {
    bucket: Bucket,
    blocked: Mutex<HashMap<String, Instant>>,
}

impl FailureLimit {
    pub fn new(rate: Rate) -> Option<Self> {
        Some(Self { bucket: Bucket::new(rate)?, blocked: Mutex::new(HashMap::new()) })
    }

    /// Whether `key` may try to authenticate now; else how long to wait.
    pub fn check(&self, key: &str) -> Result<(), RetryAfter> {
        let blocked = self.blocked.lock().unwrap_or_else(|p| p.into_inner());
        match blocked.get(key) {
            Some(until) if *until > Instant::now() => Err(RetryAfter(whole_seconds(*until - Instant::now()))),
            _ => Ok(()),
        }
    }

    /// Records a failed authentication from `key`.
    pub fn failed(&self, key: &str) {
        if let Err(RetryAfter(seconds)) = self.bucket.take(key) {
            let until = Instant::now() + Duration::from_secs(seconds);
            self.blocked.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_owned(), until);
        }
    }

    pub fn sweep(&self) {
        self.bucket.sweep();
        let now = Instant::now();
        self.blocked.lock().unwrap_or_else(|p| p.into_inner()).retain(|_, until| *until > now);
    }
}

/// A realm's limits; each is off when not configured.
#[derive(Default)]
pub struct RealmLimits {
    pub auth_failures: Option<FailureLimit>,
    pub per_principal: Option<Bucket>,
}

impl RealmLimits {
    pub fn sweep(&self) {
        if let Some(limit) = &self.auth_failures {
            limit.sweep();
        }
        if let Some(bucket) = &self.per_principal {
            bucket.sweep();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs() {
        let net = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(net.contains("10.1.200.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        assert!(Cidr::parse("::1").unwrap().contains("::1".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains("192.0.2.1".parse().unwrap()));
        for bad in ["10.0.0.0/33", "nope", "10.0.0.0/", "::/129"] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "198.51.100.7, 203.0.113.9, 10.0.0.2".parse().unwrap());
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        let peer = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(client_address(peer("10.0.0.1"), &headers, &trusted), peer("203.0.113.9"));
        assert_eq!(client_address(peer("192.0.2.1"), &headers, &trusted), peer("192.0.2.1"), "untrusted peer");
        assert_eq!(client_address(peer("10.0.0.1"), &HeaderMap::new(), &trusted), peer("10.0.0.1"));
        assert_eq!(client_address(peer("::ffff:10.0.0.1"), &headers, &trusted), peer("203.0.113.9"), "mapped IPv4");
        assert_eq!(network_key(client_address(peer("::ffff:192.0.2.1"), &headers, &[])), "192.0.2.1");
    }

    #[test]
    fn buckets_refuse_past_the_burst_with_whole_seconds() {
        let bucket = Bucket::new(Rate { per_second: 0.5, burst: 2 }).unwrap();
        assert_eq!(bucket.take("a"), Ok(()));
        assert_eq!(bucket.take("a"), Ok(()));
        assert_eq!(bucket.take("a"), Err(RetryAfter(2)));
        assert_eq!(bucket.take("b"), Ok(()), "keys are independent");
        assert!(Bucket::new(Rate { per_second: 0.0, burst: 1 }).is_none());
    }
}
