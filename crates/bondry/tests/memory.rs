//! Memory under slow and hostile clients, measured on the real binary through
//! `/proc/PID/status`: a body's memory is bounded by its length whatever the pace of its
//! bytes, password checks stay inside their pool, and an idle server gives back what an
//! attack took.

use bondry_test_support as support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use argon2::PasswordHasher;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use support::{Binary, TestConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const MIB: u64 = 1024 * 1024;
/// The password pool at the default argon2 parameters: four checks of 19 MiB each.
const PASSWORD_POOL: u64 = 4 * 19 * MIB;
/// What a first password check touches besides the pool, and keeps: the code of argon2,
/// the stacks of the blocking threads and the allocator's arenas for them (about 2 MB
/// on a debug build).
const FIRST_CHECK: u64 = 4 * MIB;
/// How long an idle server may take to give memory back after an attack.
const RETURN_WITHIN: Duration = Duration::from_secs(60);

/// The demo realm on an ephemeral port, with the default limits.
fn config() -> TestConfig {
    TestConfig::bare().set("realms.default.anonymous_roles", vec!["demo"]).role("demo", &["demo.*"]).capability(
        "demo.echo",
        "tool",
        "demo.echo",
        None,
    )
}

/// Resident and peak resident memory of a process, in bytes.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server is running");
    let field = |name: &str| {
        let line = status.lines().find(|line| line.starts_with(name)).expect("the field is there");
        line.split_whitespace().nth(1).and_then(|kib| kib.parse::<u64>().ok()).expect("a number of kB") * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct Served {
    binary: Binary,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path: PathBuf = dir.path().join("bondry.toml");
        std::fs::write(&path, config).unwrap();
        Self { binary: Binary::serve(support::bondry_exe!(), &path, &[]), _dir: dir }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.binary.port))
    }

    fn rss(&self) -> u64 {
        memory(self.binary.child.id()).0
    }

    fn peak(&self) -> u64 {
        memory(self.binary.child.id()).1
    }

    /// Resident memory once the server has answered a few ordinary requests and rested.
    async fn baseline(&self) -> u64 {
        let client = reqwest::Client::new();
        for _ in 0..20 {
            let response = self.binary.post(&client, "tools/list", serde_json::json!({})).await;
            assert_eq!(response.status(), 200);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.rss()
    }

    /// Waits until resident memory is within `slack` of `baseline`; the last reading.
    async fn returns_to(&self, baseline: u64, slack: u64) -> u64 {
        let deadline = Instant::now() + RETURN_WITHIN;
        loop {
            let rss = self.rss();
            if rss <= baseline + slack || Instant::now() > deadline {
                return rss;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.binary.child.kill();
        let _ = self.binary.child.wait();
    }
}

/// What an idle server may keep above its baseline after an attack: a quarter of the
/// baseline or 10 MB, whichever is larger.
fn return_slack(baseline: u64) -> u64 {
    (baseline / 4).max(10_000_000)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// A POST that declares a megabyte and then sends one byte per millisecond (one segment
/// each), as a `Content-Length` body or as one-byte chunks, until `until`.
async fn drip(addr: SocketAddr, chunked: bool, until: Instant) {
    let Ok(mut stream) = TcpStream::connect(addr).await else { return };
    stream.set_nodelay(true).unwrap();
    let framing = if chunked { "Transfer-Encoding: chunked" } else { "Content-Length: 1000000" };
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{framing}\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let byte: &[u8] = if chunked { b"1\r\n \r\n" } else { b" " };
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    while Instant::now() < until {
        tick.tick().await;
        if stream.write_all(byte).await.is_err() {
            return;
        }
    }
}

/// A connection that sends a request head one byte every 100 ms until the head deadline
/// cuts it off, then comes back, until `until`.
async fn slowloris(addr: SocketAddr, until: Instant) {
    let head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    while Instant::now() < until {
        let Ok(mut stream) = TcpStream::connect(addr).await else { return };
        for byte in head.iter().chain(std::iter::repeat(&b'a')) {
            if Instant::now() > until || stream.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Runs `clients` copies of an attack at once, sampling the server's peak memory.
async fn attack<F>(served: &Served, clients: usize, one: impl Fn(usize, Instant) -> F, length: Duration) -> u64
where
    F: Future<Output = ()> + Send + 'static,
{
    let until = Instant::now() + length;
    let attackers: Vec<_> = (0..clients).map(|index| tokio::spawn(one(index, until))).collect();
    let mut highest = 0;
    while attackers.iter().any(|attacker| !attacker.is_finished()) {
        highest = highest.max(served.rss());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(Instant::now() < until + Duration::from_secs(30), "the attackers end");
    }
    highest.max(served.peak())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_bodies_hold_memory_bounded_by_their_size_and_give_it_back() {
    let served = Served::start(&config().text());
    let baseline = served.baseline().await;
    let addr = served.addr();
    // Half send a declared length, half one-byte chunks.
    let peak = attack(&served, 20, |index, until| drip(addr, index % 2 == 1, until), Duration::from_secs(10)).await;
    assert!(peak < baseline + 100 * MIB, "20 slow bodies took RSS from {:.1} to {:.1} MB", mb(baseline), mb(peak));
    let after = served.returns_to(baseline, return_slack(baseline)).await;
    eprintln!("slow bodies: baseline {:.1} MB, peak {:.1} MB, after {:.1} MB", mb(baseline), mb(peak), mb(after));
    assert!(
        after <= baseline + return_slack(baseline),
        "RSS {:.1} MB a minute after slow bodies, baseline {:.1} MB",
        mb(after),
        mb(baseline)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_taken_by_slowloris_comes_back() {
    let served = Served::start(&config().set("listeners.main.header_read_timeout_ms", 2000).text());
    let baseline = served.baseline().await;
    let addr = served.addr();
    let peak = attack(&served, 1000, |_, until| slowloris(addr, until), Duration::from_secs(10)).await;
    let after = served.returns_to(baseline, return_slack(baseline)).await;
    eprintln!("slowloris: baseline {:.1} MB, peak {:.1} MB, after {:.1} MB", mb(baseline), mb(peak), mb(after));
    assert!(
        after <= baseline + return_slack(baseline),
        "RSS {:.1} MB a minute after slowloris (peak {:.1} MB), baseline {:.1} MB",
        mb(after),
        mb(peak),
        mb(baseline)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_password_checks_stay_inside_the_pool() {
    // Default parameters, as `bondry hash-password` makes them: 19 MiB per check.
    let hash = argon2::Argon2::default().hash_password(b"right").unwrap().to_string();
    let config = config()
        .principal("alice", &["demo"])
        .set_on_array("realms.default.principals", "alice", "password_hash", hash)
        .text();
    let served = Served::start(&config);
    let baseline = served.baseline().await;
    let url = format!("http://{}/mcp", served.addr());
    let wrong = format!("Basic {}", STANDARD.encode("alice:wrong"));
    let guess = move |_, until: Instant| {
        let (url, wrong) = (url.clone(), wrong.clone());
        async move {
            let client = reqwest::Client::new();
            while Instant::now() < until {
                let response = client
                    .post(&url)
                    .header("Authorization", &wrong)
                    .header("Content-Type", "application/json")
                    .header("Accept", "application/json, text/event-stream")
                    .body("{}")
                    .send()
                    .await;
                assert_eq!(response.map(|response| response.status().as_u16()).ok(), Some(401));
            }
        }
    };
    let peak = attack(&served, 16, guess, Duration::from_secs(9)).await;
    assert!(
        peak <= baseline + PASSWORD_POOL + 50 * MIB,
        "16 concurrent password checks took RSS from {:.1} to {:.1} MB",
        mb(baseline),
        mb(peak)
    );
    let after = served.returns_to(baseline, PASSWORD_POOL + FIRST_CHECK).await;
    eprintln!("passwords: baseline {:.1} MB, peak {:.1} MB, after {:.1} MB", mb(baseline), mb(peak), mb(after));
    assert!(
        after <= baseline + PASSWORD_POOL + FIRST_CHECK,
        "RSS {:.1} MB after the password checks, baseline {:.1} MB",
        mb(after),
        mb(baseline)
    );
}
