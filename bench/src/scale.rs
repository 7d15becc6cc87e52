//! How Bondry's costs grow with the size of what it holds: the catalogue (list and call
//! rates, memory per entry, rebuild time) and the handshake-era sessions (open rate and
//! memory per idle session).
//!
//! Every server runs in this process on loopback from a generated configuration, so the
//! memory figures are growth of this process's resident set, and the rates are ratios to
//! the smallest catalogue, comparable across machines as the side-by-side bench is.
//! Run with `cargo run --release -p bondry-bench -- scale [SECONDS [CONNECTIONS [SESSIONS]]]`;
//! SECONDS is per rate and round.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bondry::assemble::{Overrides, assemble};
use bondry::builtins::Builtins;
use bondry::config;
use bondry_http_server::Running;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::inprocess::{META, load, read_response, request};

/// The catalogue sizes compared; the first is the baseline of every ratio.
const CATALOGUES: [usize; 3] = [100, 1_000, 10_000];
/// The listeners' page size: a tools/list answer lists this many tools at most, so the
/// smallest catalogue's answer is half as long as the others'.
const PAGE_SIZE: usize = 200;
/// Sessions are opened and timed in blocks of this many, to show whether opening slows
/// down as the session table grows.
const SESSION_BLOCK: usize = 10_000;
/// The per-principal session cap of the session server: every session here belongs to
/// one anonymous loopback client, so the default cap of 64 would refuse the rest.
const SESSION_CAP: usize = 200_000;
/// Keep-alive connections that open sessions, each one request at a time.
const SESSION_CONNECTIONS: usize = 4;
/// A block that takes longer than this stops the session scenario: the run stays bounded
/// even if opening degrades badly.
const SESSION_BLOCK_LIMIT: Duration = Duration::from_secs(60);
/// Each rate is measured this many times, interleaved across the catalogues.
const RATE_ROUNDS: usize = 3;
/// Rebuilds are timed this many times each and the median printed, since one rebuild is
/// short enough for a scheduler hiccup to dominate it.
const REBUILD_ROUNDS: usize = 5;

/// What `scale` is asked to measure.
struct Plan {
    duration: Duration,
    connections: usize,
    sessions: usize,
}

impl Plan {
    /// `[SECONDS [CONNECTIONS [SESSIONS]]]`, each optional.
    fn from_args(mut args: impl Iterator<Item = String>) -> Self {
        let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
        let connections = args.next().and_then(|s| s.parse().ok()).unwrap_or(16);
        let sessions = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
        Self { duration: Duration::from_secs(seconds), connections: connections.max(1), sessions }
    }
}

/// A server started for one measurement, with the address it listens on.
struct Served {
    running: Running,
    addr: SocketAddr,
}

pub async fn run(args: impl Iterator<Item = String>) {
    let plan = Plan::from_args(args);
    println!(
        "scale: {} keep-alive connections, {} s per rate, loopback, one process",
        plan.connections,
        plan.duration.as_secs()
    );
    // Memory first, before any load or shutdown has left freed heap for a later server
    // to reuse, so each growth is what the measured server itself holds.
    let small = start_measuring_rss(CATALOGUES[0]).await;
    let large = start_measuring_rss(CATALOGUES[2]).await;
    measure_sessions(plan.sessions).await;
    let middle = start_catalogue(CATALOGUES[1]).await;
    measure_rates(&[&small, &middle, &large], &plan).await;
    measure_rebuilds(&large.running).await;
    for served in [small, middle, large] {
        served.running.shutdown().await;
    }
}

/// Starts a server of `tools` entries and lists them once (so the views a listing builds
/// are counted), printing the resident growth per entry.
async fn start_measuring_rss(tools: usize) -> Served {
    let before = vm_rss_kib();
    let served = start_catalogue(tools).await;
    let list = request("tools/list", None, &list_body());
    send_once(served.addr, &list).await;
    let grown = vm_rss_kib().saturating_sub(before);
    println!(
        "rss per catalogue entry:  {:>8.2} KiB at {tools:>6} tools ({grown} KiB in all, server overhead included)",
        grown as f64 / tools as f64
    );
    served
}

/// tools/list and tools/call rates on each server, with their ratios to the first; for
/// tools/list also per tool listed, since a page of the smallest catalogue lists fewer.
/// The servers are measured in turn for [`RATE_ROUNDS`] rounds and each rate is the
/// median of its rounds, so a drift of the machine's speed during the run does not land
/// on one catalogue size.
async fn measure_rates(servers: &[&Served], plan: &Plan) {
    let list = request("tools/list", None, &list_body());
    let call = request("tools/call", Some(&tool_id(0)), &call_body(&tool_id(0)));
    let mut rounds = vec![(Vec::new(), Vec::new()); servers.len()];
    for _ in 0..RATE_ROUNDS {
        for (served, (listed, called)) in servers.iter().zip(&mut rounds) {
            listed.push(load(served.addr, &list, plan.duration, plan.connections).await);
            called.push(load(served.addr, &call, plan.duration, plan.connections).await);
        }
    }
    let mut baseline = None;
    for ((listed, called), tools) in rounds.into_iter().zip(CATALOGUES) {
        let (listed, called) = (median_rate(listed), median_rate(called));
        let entries = listed * tools.min(PAGE_SIZE) as f64;
        let (base_list, base_entries, base_call) = *baseline.get_or_insert((listed, entries, called));
        println!(
            "{tools:>6} tools  tools/list {listed:>8.0} req/s ({:>4.2}, {:>4.2} per tool listed)  tools/call {called:>8.0} req/s ({:>4.2})",
            listed / base_list,
            entries / base_entries,
            called / base_call
        );
    }
}

fn median_rate(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// Times a reconfigure that changes one entry's summary and shares every other
/// descriptor (what a host that keeps its registrations hands over), the same change with
/// every descriptor a fresh copy (a configuration reload, which parses them all again),
/// and one that changes every entry's summary (so every entry is recompiled), on the
/// server's live registry.
async fn measure_rebuilds(running: &Running) {
    let registry = running.registry("default").expect("the default realm exists");
    let (mut one, mut reloaded, mut all) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..REBUILD_ROUNDS {
        // A new text each round, so every reconfigure really changes what it names.
        let mut configured = registry.configured();
        Arc::make_mut(&mut configured[0].descriptor).summary = Some(format!("one changed, round {round}"));
        one.push(time(|| registry.reconfigure(configured, registry.snapshot().policy.clone())));

        let mut configured = registry.configured();
        for registration in &mut configured {
            registration.descriptor = Arc::new((*registration.descriptor).clone());
        }
        Arc::make_mut(&mut configured[0].descriptor).summary = Some(format!("one reloaded, round {round}"));
        reloaded.push(time(|| registry.reconfigure(configured, registry.snapshot().policy.clone())));

        let mut configured = registry.configured();
        for registration in &mut configured {
            Arc::make_mut(&mut registration.descriptor).summary = Some(format!("all changed, round {round}"));
        }
        all.push(time(|| registry.reconfigure(configured, registry.snapshot().policy.clone())));
    }
    let (one, reloaded, all) = (median(one), median(reloaded), median(all));
    let entries = registry.configured().len();
    let ms = |time: Duration| time.as_secs_f64() * 1e3;
    println!(
        "rebuild of {entries}: one entry {:>8.3} ms  one entry, all reparsed {:>8.3} ms  every entry {:>8.3} ms",
        ms(one),
        ms(reloaded),
        ms(all)
    );
    println!(
        "rebuild: every/one {:.1}  every/one reparsed {:.1}",
        all.as_secs_f64() / one.as_secs_f64(),
        all.as_secs_f64() / reloaded.as_secs_f64()
    );
}

/// How long `rebuild` takes; a rebuild that fails stops the bench, since its time would
/// not be a rebuild's.
fn time<E: std::fmt::Debug>(rebuild: impl FnOnce() -> Result<(), E>) -> Duration {
    let started = Instant::now();
    rebuild().expect("the reconfigured catalogue compiles");
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Opens `count` sessions in blocks, printing each block's time, then the resident
/// growth per idle session.
async fn measure_sessions(count: usize) {
    if count == 0 {
        return;
    }
    let served = start(&generate_config(1, Some(SESSION_CAP.max(count)))).await;
    let mut connections = Vec::with_capacity(SESSION_CONNECTIONS);
    for _ in 0..SESSION_CONNECTIONS {
        connections.push(connect(served.addr).await);
    }
    let before = vm_rss_kib();
    let mut blocks = Vec::new();
    let mut opened = 0;
    while opened < count {
        let block = SESSION_BLOCK.min(count - opened);
        let started = Instant::now();
        let Ok(returned) = tokio::time::timeout(SESSION_BLOCK_LIMIT, open_sessions(connections, block)).await else {
            println!("sessions: a block took over {} s; stopped", SESSION_BLOCK_LIMIT.as_secs());
            return;
        };
        connections = returned;
        let took = started.elapsed();
        opened += block;
        println!(
            "sessions {:>7}..{opened:<7} {:>8.1} ms  {:>8.0} initialize/s",
            opened - block,
            took.as_secs_f64() * 1e3,
            block as f64 / took.as_secs_f64()
        );
        blocks.push(took);
    }
    let after = vm_rss_kib();
    if let (Some(first), Some(last)) = (blocks.first(), blocks.last()) {
        println!("sessions: last block / first block {:.2}", last.as_secs_f64() / first.as_secs_f64());
    }
    println!(
        "rss per idle session:     {:>8.2} KiB over {opened}",
        after.saturating_sub(before) as f64 / opened as f64
    );
    served.running.shutdown().await;
}

/// Sends `count` initialize requests spread over the connections, each connection one
/// request at a time, and hands the connections back for the next block.
async fn open_sessions(connections: Vec<TcpStream>, count: usize) -> Vec<TcpStream> {
    let share = count.div_ceil(connections.len());
    let workers: Vec<_> = connections
        .into_iter()
        .enumerate()
        .map(|(index, mut stream)| {
            let mine = share.min(count.saturating_sub(index * share));
            tokio::spawn(async move {
                let initialize = initialize_request();
                let mut buffer = vec![0; 64 * 1024];
                for _ in 0..mine {
                    stream.write_all(&initialize).await.expect("the initialize is sent");
                    read_response(&mut stream, &mut buffer).await;
                }
                stream
            })
        })
        .collect();
    let mut connections = Vec::with_capacity(workers.len());
    for worker in workers {
        connections.push(worker.await.expect("a session opener finishes"));
    }
    connections
}

/// The handshake that opens a 2025-11-25 session; the server answers with its id.
fn initialize_request() -> Vec<u8> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One request on a fresh connection, asserting it is answered 200.
async fn send_once(addr: SocketAddr, request: &[u8]) {
    let mut stream = connect(addr).await;
    stream.write_all(request).await.expect("the request is sent");
    read_response(&mut stream, &mut vec![0; 1024 * 1024]).await;
}

async fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).await.expect("the server accepts");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

fn list_body() -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#)
}

fn call_body(tool: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"hello"}},{META}}}}}"#
    )
}

/// The id of the `index`th generated entry: zero-padded, so id order is index order.
fn tool_id(index: usize) -> String {
    format!("demo.e{index:05}")
}

async fn start_catalogue(tools: usize) -> Served {
    start(&generate_config(tools, None)).await
}

/// The demo realm with `tools` copies of the echo tool, all granted to anonymous callers,
/// audit off so disk writes do not set the pace; `sessions` raises the per-principal cap
/// (every session here is one anonymous loopback client's).
fn generate_config(tools: usize, sessions: Option<usize>) -> String {
    let mut text = format!(
        "shutdown_grace_ms = 1000\n\n\
         [listeners.main]\nbind = \"127.0.0.1:0\"\npage_size = {PAGE_SIZE}\n\
         protocol_versions = [\"2026-07-28\", \"2025-11-25\"]\nallowed_origins = [\"local\"]\n\n\
         [audit]\nsink = \"off\"\n\n\
         [realms.default]\nanonymous = true\nanonymous_roles = [\"demo\"]\n\n\
         [[realms.default.roles]]\nname = \"demo\"\ngrants = [\"demo.*\"]\n"
    );
    if let Some(sessions) = sessions {
        let _ = write!(text, "\n[realms.default.limits]\nsessions_per_principal = {sessions}\n");
    }
    for index in 0..tools {
        let _ = write!(
            text,
            "\n[[realms.default.capabilities]]\nid = \"{}\"\nkind = \"tool\"\nhandler = \"demo.echo\"\n",
            tool_id(index)
        );
    }
    text
}

/// A Bondry serving `text`, started as `bondry serve` would but in this process.
async fn start(text: &str) -> Served {
    let loaded = config::parse("<bench scale>", text, ".".into(), []).expect("the generated config parses");
    let assembled =
        assemble(&loaded, &Builtins::demo(), &Overrides::default(), true).expect("the generated config assembles");
    let running = bondry_http_server::start(assembled.server).await.expect("bondry starts");
    let addr = running.local_addrs()[0].1;
    Served { running, addr }
}

/// This process's resident set in KiB, from the kernel's own accounting.
fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status is readable");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS is reported")
}
