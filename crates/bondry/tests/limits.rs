//! Black-box tests of the abuse limits: per client address (through trusted proxies),
//! per address for failed authentications, and per principal.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{Req, TestServer, default_config, ticket_hash};

/// The default test configuration with `listener` lines added to `[listeners.main]` and
/// `realm` stanzas added to `[realms.default]`.
fn config(listener: &str, realm: &str) -> String {
    let ticket = ticket_hash("good-ticket");
    default_config()
        .replace("page_size = 3\n", &format!("page_size = 3\n{listener}\n"))
        .replace(
            "anonymous_roles = [\"demo\"]\n",
            &format!(
                "anonymous_roles = [\"demo\"]\n{realm}\n[[realms.default.principals]]\nid = \"alice\"\nroles = [\"demo\"]\n[[realms.default.tickets]]\nsha256 = \"{ticket}\"\nprincipal = \"alice\"\n"
            ),
        )
}

fn discover() -> Req {
    Req::modern("server/discover", json!({}))
}

#[tokio::test]
async fn requests_per_address_with_trusted_proxies() {
    let listener = "trusted_proxies = [\"127.0.0.0/8\"]\nrate_limits = { per_address = { per_second = 1, burst = 2 } }";
    let server = TestServer::with_config(&config(listener, "")).await;
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
    let server =
        TestServer::with_config(&config("rate_limits = { per_address = { per_second = 1, burst = 1 } }", "")).await;
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
    let realm = "[realms.default.rate_limits]\nauth_failures = { per_second = 0.05, burst = 2 }";
    let server = TestServer::with_config(&config("trusted_proxies = [\"127.0.0.1\"]", realm)).await;
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
    let realm = "[realms.default.rate_limits]\nper_principal = { per_second = 1, burst = 1 }";
    let server = TestServer::with_config(&config("", realm)).await;
    server.send(discover()).await.assert_result();
    server.send(discover()).await.assert_error(429, None, -32000, "Too many requests");
    let alice = || discover().header("authorization", "Bearer good-ticket");
    server.send(alice()).await.assert_result();
    server.send(alice()).await.assert_error(429, None, -32000, "Too many requests");
    server.stop().await;
}
