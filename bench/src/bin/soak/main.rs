//! A bounded soak of the release `bondry` binary: measure its saturation on loopback,
//! hold a mixed load at a fraction of it for a fixed time while sampling the server's RSS
//! and descriptors, and fail on any wrong answer, on the server exiting, or on growth.
//!
//! Run through `scripts/soak`, which builds both binaries first; `soak --help` lists the
//! options. Exit status: 0 pass, 1 fail, 2 bad options.

mod http;
mod load;
mod options;
mod probe;
mod report;
mod server;
mod traffic;
mod trend;

use std::process::ExitCode;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep, sleep_until};

use crate::load::{Tally, Until};
use crate::options::Options;
use crate::probe::Sample;
use crate::server::Server;

/// How long the server gets, once the load stops, to close what the clients closed
/// before its descriptors are compared with the idle count.
const SETTLE: Duration = Duration::from_secs(20);
/// How long past the soak's duration the load would run if the stop were never sent.
const BACKSTOP: Duration = Duration::from_secs(5);

/// Everything a soak run measured; `report` judges and prints it.
pub struct Run {
    pub saturation: f64,
    pub target: f64,
    /// RSS and descriptors of the idle server, before any load.
    pub idle: (u64, u64),
    pub samples: Vec<Sample>,
    /// How long the soak phase really ran (shorter if it was cut off).
    pub soaked: Duration,
    /// Descriptors and RSS once the load had stopped and the server had settled.
    pub settled: Option<(u64, u64)>,
    /// Latencies of the paced modern requests, in microseconds, sorted.
    pub latencies: Vec<u32>,
    /// Why the soak stopped early, if it did.
    pub cut_off: Option<String>,
    pub load_before: String,
    pub load_after: String,
}

fn main() -> ExitCode {
    let options = match options::parse(std::env::args().skip(1).collect(), |name| std::env::var(name).ok()) {
        Ok(options) => options,
        Err(usage) if usage == options::USAGE => {
            println!("{usage}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    // Leaked once: every load task holds it for the life of the process.
    let tally: &'static Tally = Box::leak(Box::default());
    let mut server = match Server::start(&options.bondry) {
        Ok(server) => server,
        Err(error) => {
            println!("SOAK FAIL: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("bondry pid {} listening on {}", server.pid(), server.addr);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            println!("SOAK FAIL: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let run = runtime.block_on(soak(&options, &mut server, tally));
    drop(runtime);
    // Stopped whatever happened: the Drop of `server` kills it if `stop` could not.
    let stopped = server.stop();
    if report::verdict(&options, &run, tally, &stopped) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The phases, in order: idle reading, warm-up, saturation, the soak itself, settling.
async fn soak(options: &Options, server: &mut Server, tally: &'static Tally) -> Run {
    let pid = server.pid();
    let load_before = probe::load_average();
    let idle = probe::read(pid).unwrap_or_default();
    println!("idle: rss {:.1} MiB, {} fds; load average {load_before}", probe::mib(idle.0 as f64), idle.1);

    // Kept alive until the end, so no `Until` sees its channel closed.
    let (stop, stopped) = watch::channel(false);
    let closed_loop = |seconds: Duration| Until::new(Instant::now() + seconds, stopped.clone());
    let warm = load::saturate(server.addr, options.connections, closed_loop(options.warm_up), tally).await;
    println!("warm-up: {warm:.0} req/s over {:?}", options.warm_up);
    let saturation = load::saturate(server.addr, options.connections, closed_loop(options.saturation), tally).await;
    let target = saturation * options.fraction;
    println!(
        "saturation: {saturation:.0} req/s (tools/call of demo.echo, {} connections, {:?}); soaking at {target:.0} req/s \
         ({:.0} %) for {:?}",
        options.connections,
        options.saturation,
        options.fraction * 100.0,
        options.duration
    );
    if saturation < 1.0 {
        let _ = stop.send(true);
        return Run::cut_short(saturation, idle, load_before, "no request succeeded while measuring saturation");
    }

    let started = Instant::now();
    // The load runs until told to stop, right after the last sample, so that sample sees
    // the load as every other did; the deadline is only a backstop.
    let until = Until::new(started + options.duration + BACKSTOP, stopped.clone());
    let paced = load::paced(server.addr, options.connections, target, &until, tally);
    let churn = load::churn(server.addr, options.sessions_per_second, &until, tally);
    let listens = load::listens(server.addr, options.listen_streams, options.listen_hold, &until, tally);
    let (samples, cut_off) = sample(options, server, started, tally).await;
    let _ = stop.send(true);
    let soaked = started.elapsed().min(options.duration);

    let mut latencies = Vec::new();
    for task in paced {
        latencies.extend(task.await.unwrap_or_default());
    }
    let _ = churn.await;
    for task in listens {
        let _ = task.await;
    }
    latencies.sort_unstable();
    let settled = if cut_off.is_none() { settle(pid, idle.1).await } else { None };
    Run {
        saturation,
        target,
        idle,
        samples,
        soaked,
        settled,
        latencies,
        cut_off,
        load_before,
        load_after: probe::load_average(),
    }
}

/// Samples the server every interval until the soak's end; stops early (with the reason)
/// if the server exits or cannot be read.
async fn sample(
    options: &Options,
    server: &mut Server,
    started: Instant,
    tally: &Tally,
) -> (Vec<Sample>, Option<String>) {
    let mut samples: Vec<Sample> = Vec::new();
    let mut at = started;
    // Ctrl-C ends the soak as a failure, but through the summary and the server's stop.
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    while at <= started + options.duration {
        tokio::select! {
            () = sleep_until(at) => {}
            _ = &mut interrupted => return (samples, Some("interrupted".to_owned())),
        }
        if let Some(status) = server.exited() {
            return (samples, Some(format!("the server exited during the soak: {status}")));
        }
        let (rss, fds) = match probe::read(server.pid()) {
            Ok(reading) => reading,
            Err(error) => return (samples, Some(error)),
        };
        let sample =
            Sample { elapsed: at - started, requests: tally.requests(), errors: tally.errors.load(Relaxed), rss, fds };
        report::sample_line(&sample, samples.last());
        samples.push(sample);
        at += options.interval;
    }
    (samples, None)
}

/// Waits (bounded) for the server's descriptors to fall back to `idle`, and reads it then.
async fn settle(pid: u32, idle: u64) -> Option<(u64, u64)> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let (rss, fds) = probe::read(pid).ok()?;
        if fds <= idle || Instant::now() >= deadline {
            return Some((fds, rss));
        }
        sleep(Duration::from_millis(500)).await;
    }
}

impl Run {
    fn cut_short(saturation: f64, idle: (u64, u64), load_before: String, why: &str) -> Run {
        Run {
            saturation,
            target: 0.0,
            idle,
            samples: Vec::new(),
            soaked: Duration::ZERO,
            settled: None,
            latencies: Vec::new(),
            cut_off: Some(why.to_owned()),
            load_before,
            load_after: probe::load_average(),
        }
    }
}
