//! What the soak prints: a line per sample while it runs, then the summary and the
//! verdict, which is the one place the pass/fail rules live.

use std::process::ExitStatus;
use std::sync::atomic::Ordering::Relaxed;

use crate::Run;
use crate::load::Tally;
use crate::options::Options;
use crate::probe::{Sample, mib};
use crate::trend::{self, Growth};

/// The share of the target rate the soak must reach: a server that can no longer hold the
/// load it carried fresh has degraded, but the machine is shared, so not every missed
/// slot is the server's.
const MIN_ACHIEVED: f64 = 0.80;
/// How many descriptors above its idle count the server may keep once the load has
/// stopped and it has settled: none of the soak's connections outlive it.
const SETTLED_SLACK: u64 = 2;

pub fn sample_line(sample: &Sample, previous: Option<&Sample>) {
    let rate = previous.map_or(0.0, |previous| {
        let seconds = (sample.elapsed - previous.elapsed).as_secs_f64();
        (sample.requests - previous.requests) as f64 / seconds.max(1e-9)
    });
    println!(
        "  t {:>5.0} s  requests {:>9}  rate {:>7.0}/s  errors {:>3}  rss {:>6.1} MiB  fds {:>4}",
        sample.elapsed.as_secs_f64(),
        sample.requests,
        rate,
        sample.errors,
        mib(sample.rss as f64),
        sample.fds
    );
}

/// Prints the summary and the verdict line; true when the soak passed.
pub fn verdict(options: &Options, run: &Run, tally: &Tally, stopped: &Result<ExitStatus, String>) -> bool {
    let mut failures: Vec<String> = run.cut_off.iter().cloned().collect();
    let seconds = run.soaked.as_secs_f64().max(1e-9);
    let modern = tally.modern.load(Relaxed);
    let achieved = modern as f64 / seconds;
    let errors = tally.errors.load(Relaxed);

    println!("summary");
    println!(
        "  saturation   {:.0} req/s (tools/call of demo.echo, {} keep-alive connections, {:?} after {:?} warm-up)",
        run.saturation, options.connections, options.saturation, options.warm_up
    );
    println!(
        "  target       {:.0} req/s modern mix ({:.0} % of saturation; 7 tools/call : 2 tools/list : 1 server/discover), \
         plus {} sessions/s and {} listen streams held {:?}",
        run.target,
        options.fraction * 100.0,
        options.sessions_per_second,
        options.listen_streams,
        options.listen_hold
    );
    println!(
        "  achieved     {achieved:.0} req/s modern ({:.1} % of target), {:.0} req/s in all, {} paced slots missed",
        100.0 * achieved / run.target.max(1e-9),
        tally.requests() as f64 / seconds,
        tally.missed.load(Relaxed)
    );
    println!(
        "  requests     {} over {:.0} s: {modern} modern, {} in {} sessions, {} listen streams",
        tally.requests(),
        seconds,
        tally.session_requests.load(Relaxed),
        tally.sessions.load(Relaxed),
        tally.listens.load(Relaxed)
    );
    println!("  errors       {errors} (warm-up and saturation included)");
    for error in tally.kept_errors() {
        println!("    {error}");
    }
    if let Some(latency) = latency(&run.latencies) {
        println!("  latency      {latency} (paced modern requests)");
    }
    if run.achieved_too_little(achieved) {
        failures.push(format!("achieved {achieved:.0} req/s, under {:.0} % of the target", MIN_ACHIEVED * 100.0));
    }
    if errors > 0 {
        failures.push(format!("{errors} errors"));
    }

    let warm_up = options.trend_warm_up();
    println!("  trend        fitted after the first {warm_up:?}, projected over the {:?} soak", options.duration);
    let rss = trend::growth(&run.samples, warm_up, options.duration, trend::RSS, |s| s.rss as f64);
    let fds = trend::growth(&run.samples, warm_up, options.duration, trend::FDS, |s| s.fds as f64);
    match (&rss, &fds) {
        (Some(rss), Some(fds)) => {
            growth_line("rss MiB", rss, mib, "limit max(10 %, 8 MiB)");
            growth_line("fds", fds, |x| x, "limit 16");
            if !rss.passes() {
                failures.push(format!("RSS grows: {}", growth_text(rss, mib)));
            }
            if !fds.passes() {
                failures.push(format!("fds grow: {}", growth_text(fds, |x| x)));
            }
            sensitivity(rss, tally);
        }
        _ => failures.push("too few samples after the warm-up to judge growth".to_owned()),
    }

    let (idle_rss, idle_fds) = run.idle;
    match run.settled {
        Some((fds, rss)) => {
            println!(
                "  settled      {fds} fds (idle before the load {idle_fds}, allowed +{SETTLED_SLACK}), rss {:.1} MiB (idle {:.1})",
                mib(rss as f64),
                mib(idle_rss as f64)
            );
            if fds > idle_fds + SETTLED_SLACK {
                failures.push(format!("{fds} fds once the load stopped, idle was {idle_fds}"));
            }
        }
        None if run.cut_off.is_none() => failures.push("the server could not be read after the load".to_owned()),
        None => {}
    }
    match stopped {
        Ok(status) => println!("  stop         SIGTERM: {status}"),
        Err(error) => failures.push(error.clone()),
    }
    println!("  load average {} before, {} after (1, 5, 15 min; {} cores)", run.load_before, run.load_after, cores());

    if failures.is_empty() {
        println!(
            "SOAK PASS: {:.0} s at {achieved:.0} req/s ({:.0} % of saturation {:.0}), {} requests, 0 errors, no growth",
            seconds,
            100.0 * achieved / run.saturation.max(1e-9),
            run.saturation,
            tally.requests()
        );
        true
    } else {
        println!("SOAK FAIL: {}", failures.join("; "));
        false
    }
}

impl Run {
    fn achieved_too_little(&self, achieved: f64) -> bool {
        self.cut_off.is_none() && achieved < MIN_ACHIEVED * self.target
    }
}

fn growth_line(name: &str, growth: &Growth, unit: fn(f64) -> f64, limit: &str) {
    println!(
        "  {name:<12} first {:.1}, last {:.1}, max {:.1}; {}  {}",
        unit(growth.first),
        unit(growth.last),
        unit(growth.max),
        growth_text(growth, unit),
        if growth.passes() { format!("ok ({limit})") } else { format!("FAIL ({limit})") }
    );
}

fn growth_text(growth: &Growth, unit: fn(f64) -> f64) -> String {
    format!(
        "warm baseline {:.1}, end {:.1} ({:+.2}); slope {:+.3e}/s, projected {:+.2}, limit {:.1}",
        unit(growth.baseline),
        unit(growth.end),
        unit(growth.end - growth.baseline),
        unit(growth.slope),
        unit(growth.projected),
        unit(growth.limit)
    )
}

/// The smallest steady leak that this run's RSS limit would have caught, per session and
/// per request, so the thresholds can be read against what they protect.
fn sensitivity(rss: &Growth, tally: &Tally) {
    let sessions = tally.sessions.load(Relaxed).max(1) as f64;
    let requests = tally.requests().max(1) as f64;
    println!(
        "  sensitivity  the RSS limit catches a steady leak of {:.1} KiB per session or {:.1} bytes per request",
        rss.limit / sessions / 1024.0,
        rss.limit / requests
    );
}

/// p50, p99 and max, in milliseconds.
fn latency(sorted: &[u32]) -> Option<String> {
    let at = |q: f64| f64::from(sorted[((sorted.len() - 1) as f64 * q).round() as usize]) / 1000.0;
    (!sorted.is_empty()).then(|| format!("p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms", at(0.5), at(0.99), at(1.0)))
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(0, usize::from)
}
