//! Black-box tests of the abuse limits: per client address (through trusted proxies),
//! per address for failed authentications, and per principal.

use bondry_test_support as support;

use std::time::Duration;

use serde_json::json;
use support::{Req, TestConfig, TestServer, table};

/// The default test configuration, with `alice` holding the ticket `good-ticket`.
fn config() -> TestConfig {
    TestConfig::new().principal("alice", &["demo"]).ticket("good-ticket", "alice")
}

/// A rate of `per_second` with `burst`, as a limit is configured.
fn rate(per_second: f64, burst: i64) -> toml::Table {
    table([("per_second", per_second.into()), ("burst", burst.into())])
}

fn discover() -> Req {
    Req::modern("server/discover", json!({}))
}

#[tokio::test]
async fn requests_per_address_with_trusted_proxies() {
    let config = config()
        .set("listeners.main.trusted_proxies", vec!["127.0.0.0/8"])
        .set("listeners.main.rate_limits.per_address", rate(1.0, 2));
    let server = TestServer::with_config(&config.text()).await;
    let from = |address: &str| discover().header("x-forwarded-for", address);
    server.send(from("203.0.113.5")).await.assert_result();
    server.send(from("203.0.113.5")).await.assert_result();
    let refused = server.send(from("203.0.113.5")).await;
    refused.assert_error(429, None, -32000, "Too many requests");
    assert_eq!(refused.header("retry-after"), Some("1"));
    let from_elsewhere = server.send(from("203.0.113.5").header("origin", "https://evil.example")).await;
    from_elsewhere.assert_error(429, None, -32000, "Too many requests");
    assert_eq!(from_elsewhere.header("access-control-allow-origin"), None, "a refused origin reads nothing");
    // Another client behind the same proxy has its own bucket; a spoofed trusted hop changes nothing.
    server.send(from("198.51.100.9")).await.assert_result();
    server.send(from("203.0.113.5, 127.0.0.9")).await.assert_error(429, None, -32000, "Too many requests");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    server.send(from("203.0.113.5")).await.assert_result();
    server.stop().await;
}

#[tokio::test]
async fn forwarded_addresses_from_untrusted_peers_are_ignored() {
    let config = config().set("listeners.main.rate_limits.per_address", rate(1.0, 1));
    let server = TestServer::with_config(&config.text()).await;
    server.send(discover().header("x-forwarded-for", "203.0.113.5")).await.assert_result();
    server.send(discover().header("x-forwarded-for", "198.51.100.9")).await.assert_error(
        429,
        None,
        -32000,
        "Too many requests",
    );
    server.stop().await;
}

#[tokio::test]
async fn failed_authentications_are_limited_per_address_before_any_verification() {
    let config = config()
        .set("listeners.main.trusted_proxies", vec!["127.0.0.1"])
        .set("realms.default.rate_limits.auth_failures", rate(0.05, 2));
    let server = TestServer::with_config(&config.text()).await;
    let with = |address: &str, ticket: &str| {
        discover().header("x-forwarded-for", address).header("authorization", &format!("Bearer {ticket}"))
    };
    for _ in 0..3 {
        assert_eq!(server.send(with("203.0.113.5", "wrong")).await.status, 401);
    }
    let blocked = server.send(with("203.0.113.5", "good-ticket")).await;
    blocked.assert_error(429, None, -32000, "Too many requests");
    assert!(blocked.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
    // Another address is unaffected, and anonymous requests carry no credential to limit.
    server.send(with("198.51.100.9", "good-ticket")).await.assert_result();
    server.send(discover().header("x-forwarded-for", "203.0.113.5")).await.assert_result();
    server.stop().await;
}

#[tokio::test]
async fn requests_per_principal() {
    let config = config().set("realms.default.rate_limits.per_principal", rate(1.0, 1));
    let server = TestServer::with_config(&config.text()).await;
    server.send(discover()).await.assert_result();
    server.send(discover()).await.assert_error(429, None, -32000, "Too many requests");
    let alice = || discover().header("authorization", "Bearer good-ticket");
    server.send(alice()).await.assert_result();
    server.send(alice()).await.assert_error(429, None, -32000, "Too many requests");
    server.stop().await;
}
