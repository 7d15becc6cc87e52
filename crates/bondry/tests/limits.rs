//! Black-box tests of the abuse limits: per client address (through trusted proxies),
//! per address for failed authentications, and per principal; and the admin listener's,
//! through the real binary: its budget of failed attempts across addresses, and its
//! connections, counted apart from the MCP listener's.

use bondry_test_support as support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use support::{Binary, Req, TestConfig, TestServer, table};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

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

/// The admin token of [`AdminGateway`].
const ADMIN_TOKEN: &str = "the-operators-admin-token-of-32-bytes";

/// The real binary fronting `catalogue-upstream` over stdio, listing one tool `a` held
/// until an operator approves it, with the admin token [`ADMIN_TOKEN`].
struct AdminGateway {
    _dir: tempfile::TempDir,
    front: Binary,
    admin: SocketAddr,
}

impl AdminGateway {
    /// Serving, with `admin` set on `[admin]`, once it has listed the upstream.
    async fn start(admin: &[(&str, i64)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let catalogue = dir.path().join("catalogue.json");
        let tool = json!({"name": "a", "description": "The a tool", "inputSchema": {"type": "object"}});
        std::fs::write(&catalogue, json!({"tools": [tool]}).to_string()).unwrap();
        let upstream = table([
            ("name", "up".into()),
            ("transport", "stdio".into()),
            ("command", support::catalogue_upstream_exe().to_str().unwrap().into()),
            ("args", vec![catalogue.to_str().unwrap()].into()),
            ("trust", "approve".into()),
        ]);
        let token = table([("name", "ops".into()), ("token_env", "BONDRY_TEST_ADMIN_TOKEN".into())]);
        let config = admin
            .iter()
            .fold(support::gateway(upstream, &["up.*"]), |config, (key, value)| {
                config.set(&format!("admin.{key}"), *value)
            })
            .push("admin.tokens", token)
            .written(dir.path(), "gateway.toml");
        let front = Binary::serve(support::bondry_exe!(), &config, &[("BONDRY_TEST_ADMIN_TOKEN", ADMIN_TOKEN)]);
        front.logged("upstream up: ", 1).await;
        let port = front.admin_port().expect("the admin listener serves");
        Self { _dir: dir, admin: SocketAddr::from((Ipv4Addr::LOCALHOST, port)), front }
    }

    /// An admin request from `source` with `Connection: close`: the whole answer, or
    /// nothing when the server closes the connection without one.
    async fn exchange(&self, source: Ipv4Addr, method: &str, path: &str, token: &str, body: Option<&Value>) -> String {
        let body = body.map(Value::to_string).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.admin,
            body.len()
        );
        let mut stream = connect_from(source, self.admin).await;
        let mut answer = Vec::new();
        // A connection the server closes at once may be reset under the request.
        if stream.write_all(request.as_bytes()).await.is_ok() {
            let _ = tokio::time::timeout(support::PATIENCE, stream.read_to_end(&mut answer)).await;
        }
        String::from_utf8_lossy(&answer).into_owned()
    }

    /// The operator's request from 127.0.0.1: its status and JSON body.
    async fn operator(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let answer = self.exchange(Ipv4Addr::LOCALHOST, method, path, ADMIN_TOKEN, body).await;
        let (_, json) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer: {answer:?}"));
        (status(&answer), serde_json::from_str(json).unwrap_or_else(|_| panic!("{answer}")))
    }

    /// The descriptors the server holds open.
    fn descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.front.child.id())).unwrap().count()
    }
}

/// A connection to `to` from the loopback address `source`.
async fn connect_from(source: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((source, 0))).unwrap();
    socket.connect(to).await.unwrap()
}

/// The status of an HTTP/1.1 answer; 0 for none.
fn status(answer: &str) -> u16 {
    answer.strip_prefix("HTTP/1.1 ").and_then(|rest| rest.get(..3)).and_then(|code| code.parse().ok()).unwrap_or(0)
}

/// The `index`th of the loopback addresses 127.10.1.1 to 127.10.254.254.
fn rotated(index: usize) -> Ipv4Addr {
    let (third, fourth) = (1 + index / 254 % 254, 1 + index % 254);
    Ipv4Addr::new(127, 10, u8::try_from(third).unwrap(), u8::try_from(fourth).unwrap())
}

#[tokio::test]
async fn admin_guesses_from_rotated_addresses_are_verified_within_the_budget_and_the_operator_is_served() {
    const GUESSES: usize = 20_000;
    let gateway = Arc::new(AdminGateway::start(&[]).await);
    // The operator authenticated before the flood, so its address is known.
    let (reviewed, info) = gateway.operator("GET", "/v1/realms/default/upstreams/up", None).await;
    assert_eq!(reviewed, 200, "{info}");
    let hash = info["capabilities"][0]["current_hash"].as_str().unwrap().to_owned();

    let (answered, spent) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let started = Instant::now();
    let flood = tokio::spawn({
        let (gateway, answered, spent) = (Arc::clone(&gateway), Arc::clone(&answered), Arc::clone(&spent));
        async move {
            let guesses = futures_util::stream::iter(0..GUESSES).map(|index| {
                let (gateway, answered, spent) = (&gateway, &answered, &spent);
                async move {
                    let token = format!("guess-{index:05}-of-the-admin-token-xxxxxxxxxxxx");
                    let answer = gateway.exchange(rotated(index), "GET", "/v1/upstreams", &token, None).await;
                    answered.fetch_add(1, Ordering::Relaxed);
                    if status(&answer) == 429 {
                        spent.fetch_add(1, Ordering::Relaxed);
                    }
                    answer
                }
            });
            guesses.buffer_unordered(32).collect::<Vec<String>>().await
        }
    });
    // Once the budget is spent, the operator reviews and approves while the flood goes on.
    assert!(support::eventually(|| spent.load(Ordering::Relaxed) > 0).await, "the budget is never spent");
    let mut operator = Vec::new();
    for _ in 0..3 {
        operator.push(gateway.operator("GET", "/v1/upstreams", None).await.0);
    }
    let approve = json!({"approve": [{"kind": "tool", "key": "a", "hash": hash}]});
    let (status_of_approval, approved) =
        gateway.operator("POST", "/v1/realms/default/upstreams/up/approve", Some(&approve)).await;
    operator.push(status_of_approval);
    operator.push(gateway.operator("GET", "/v1/realms/default/upstreams/up", None).await.0);
    let during = answered.load(Ordering::Relaxed);
    assert!(during < GUESSES, "the operator's requests ran during the flood ({during} answered)");

    let answers = flood.await.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(60), "the flood fits in the budget's minute: {elapsed:?}");
    let count = |code: u16| answers.iter().filter(|answer| status(answer) == code).count();
    let retry_after = answers.iter().filter(|answer| answer.contains("\r\nretry-after: ")).count();
    eprintln!(
        "{GUESSES} guesses in {elapsed:?}: {} answered 401, {} answered 429; the operator's {} requests answered {operator:?}",
        count(401),
        count(429),
        operator.len()
    );
    assert_eq!(count(401), 100, "guesses verified: the default budget of the minute");
    assert_eq!(count(429), GUESSES - 100, "every other guess is refused before any comparison");
    assert_eq!(retry_after, GUESSES - 100, "every 429 says when to come back");
    assert_eq!(operator, [200; 5]);
    assert_eq!(approved["approved"][0]["key"], "a", "{approved}");
    let listed = gateway.front.post(&reqwest::Client::new(), "tools/list", json!({})).await;
    let listed: Value = listed.json().await.unwrap();
    assert_eq!(listed["result"]["tools"][0]["name"], "up.a", "{listed}");

    // Anyone sharing the operator's address (every local process, on loopback) spends its
    // 10 failures a minute, and more: the operator is still served, the guesser gets 429.
    let guesses: Vec<u16> = futures_util::stream::iter(0..12)
        .then(|_| gateway.exchange(Ipv4Addr::LOCALHOST, "GET", "/v1/upstreams", "not-the-admin-token", None))
        .map(|answer| status(&answer))
        .collect()
        .await;
    assert!(guesses[10..].iter().all(|status| *status == 429), "{guesses:?}");
    assert_eq!(gateway.operator("GET", "/v1/upstreams", None).await.0, 200);
}

#[tokio::test]
async fn held_admin_connections_are_capped_apart_from_mcp_and_cut_at_the_head_deadline() {
    const MAX: usize = 16;
    const KEPT: usize = MAX / 4;
    const DEADLINE: Duration = Duration::from_secs(3);
    let gateway = AdminGateway::start(&[
        ("max_connections", 16),
        ("header_read_timeout_ms", 3_000),
        ("body_read_timeout_ms", 300),
    ])
    .await;
    assert_eq!(gateway.operator("GET", "/v1/upstreams", None).await.0, 200, "the operator is known");
    let mut settled = 0;
    assert!(
        support::eventually(|| {
            let before = settled;
            settled = gateway.descriptors();
            before == settled
        })
        .await
    );

    // Strangers: four send half a request head and stall, then twenty-four send nothing.
    let mut stalled = Vec::new();
    for index in 0..4 {
        let mut stream = connect_from(rotated(index), gateway.admin).await;
        stream.write_all(b"GET /v1/upstreams HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
        stalled.push((stream, Instant::now()));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut idle = Vec::new();
    for index in 0..MAX + 8 {
        idle.push(connect_from(rotated(100 + index), gateway.admin).await);
    }
    // Those past the strangers' share are closed at once; the others are held.
    let closed_at_once = futures_util::future::join_all(idle.iter_mut().map(|stream| async move {
        let mut byte = [0; 1];
        matches!(tokio::time::timeout(Duration::from_millis(500), stream.read(&mut byte)).await, Ok(Ok(0) | Err(_)))
    }))
    .await;
    let closed = closed_at_once.iter().filter(|closed| **closed).count();
    let held = gateway.descriptors() - settled;
    // The MCP listener serves on, and the operator gets one of the slots kept for known addresses.
    let client = reqwest::Client::new();
    let mut served = 0;
    for _ in 0..50 {
        if gateway.front.post(&client, "tools/list", json!({})).await.status() == 200 {
            served += 1;
        }
    }
    let (operator, _) = gateway.operator("GET", "/v1/upstreams", None).await;
    let stranger = gateway.exchange(rotated(200), "GET", "/v1/upstreams", ADMIN_TOKEN, None).await;
    let cut = futures_util::future::join_all(stalled.iter_mut().map(|(stream, sent)| async move {
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(DEADLINE * 2, stream.read_to_end(&mut rest)).await;
        sent.elapsed()
    }))
    .await;
    eprintln!(
        "{} stranger connections: {closed} closed at once, {held} descriptors held; {served} of 50 MCP requests served; \
         half heads cut after {cut:?}",
        MAX + 8 + 4
    );
    assert_eq!(closed, MAX + 8 - (MAX - KEPT - 4), "past the strangers' share, closed at once");
    assert_eq!(held, MAX - KEPT, "the connections the server holds for strangers");
    assert_eq!(served, 50);
    assert_eq!(operator, 200, "a known address takes a kept slot");
    assert_eq!(stranger, "", "a stranger finds no slot");
    for elapsed in cut {
        assert!(elapsed >= DEADLINE && elapsed < DEADLINE + Duration::from_millis(1500), "cut after {elapsed:?}");
    }

    // A token holder's body that stops short is answered 408 at the body deadline.
    let mut short = connect_from(Ipv4Addr::LOCALHOST, gateway.admin).await;
    let head = format!(
        "POST /v1/realms/default/upstreams/up/approve HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n\
         Content-Length: 100\r\n\r\n{{\"approve\"",
        gateway.admin
    );
    short.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let read = tokio::time::timeout(support::PATIENCE, short.read(&mut answer)).await.unwrap().unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
    assert_eq!(status(&answer), 408, "{answer}");
    let body = r#"{"error":{"code":"timeout","message":"the body did not arrive within body_read_timeout_ms"}}"#;
    assert!(answer.ends_with(&format!("\r\n\r\n{body}\n")), "{answer}");
}
