//! The load: keep-alive connections that each repeat one request, closed-loop (the next
//! request as soon as the last response is in) or open-loop at a fixed offered rate.
//!
//! Every latency is recorded, not sampled, and the percentiles are read off the sorted
//! whole. The open loop corrects for coordinated omission as wrk2 does: a request whose
//! connection was still waiting on a slow response when it was due counts from when it
//! was due, so a stall is charged to every request it delayed.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::http1::{Conn, find};

/// What each connection sends: optionally a handshake first, then one request repeated.
#[derive(Clone)]
pub struct Script {
    pub handshake: Option<Handshake>,
    /// The request, as bytes; `{SESSION}` in it is replaced by the handshake's session id.
    pub request: String,
    /// A fragment every answer's body holds; checked on the first and every 1024th.
    pub expect: &'static str,
}

/// A handshake-era session: `initialize`, then `notifications/initialized`.
#[derive(Clone)]
pub struct Handshake {
    pub initialize: Vec<u8>,
    /// With `{SESSION}`, as [`Script::request`].
    pub initialized: String,
}

/// How the load is offered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Offer {
    /// Closed-loop over this many connections.
    Connections(usize),
    /// Open-loop at this many requests per second, over 16 connections.
    Rate(u32),
}

/// Connections an open-loop offer is spread over.
const OPEN_CONNECTIONS: usize = 16;

impl Offer {
    pub fn label(self) -> String {
        match self {
            Offer::Connections(count) => format!("{count} conns"),
            Offer::Rate(rate) => format!("{rate} req/s"),
        }
    }
}

/// One measurement: how many requests completed in the window, and each one's latency.
pub struct Sample {
    pub completed: u64,
    pub window: Duration,
    pub latencies: Vec<Duration>,
}

/// A sample reduced to what the report prints.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    pub rate: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub p999: Duration,
}

impl Sample {
    pub fn stats(mut self) -> Stats {
        self.latencies.sort_unstable();
        let at = |quantile: f64| -> Duration {
            if self.latencies.is_empty() {
                return Duration::ZERO;
            }
            let index = ((self.latencies.len() as f64) * quantile).ceil() as usize;
            self.latencies[index.clamp(1, self.latencies.len()) - 1]
        };
        Stats { rate: self.completed as f64 / self.window.as_secs_f64(), p50: at(0.50), p99: at(0.99), p999: at(0.999) }
    }
}

/// Drives `addr` with `script` as `offer` says: `warmup` unrecorded, then `window` recorded.
pub async fn run(
    addr: SocketAddr,
    script: &Script,
    offer: Offer,
    warmup: Duration,
    window: Duration,
) -> Result<Sample, String> {
    let start = Instant::now() + Duration::from_millis(50);
    let recorded = start + warmup;
    let end = recorded + window;
    let (connections, rate) = match offer {
        Offer::Connections(count) => (count, None),
        Offer::Rate(rate) => (OPEN_CONNECTIONS, Some(f64::from(rate))),
    };
    let workers: Vec<_> = (0..connections)
        .map(|index| {
            let script = script.clone();
            tokio::spawn(async move {
                let mut conn = Conn::connect(addr).await?;
                let request = open(&mut conn, &script).await?;
                match rate {
                    None => closed_loop(&mut conn, &request, script.expect, start, recorded, end).await,
                    Some(rate) => {
                        let schedule = Schedule { first: index, step: connections, rate, start };
                        open_loop(&mut conn, &request, script.expect, schedule, recorded, end).await
                    }
                }
            })
        })
        .collect();
    let mut sample = Sample { completed: 0, window, latencies: Vec::new() };
    let mut failure = None;
    for worker in workers {
        match worker.await.map_err(|error| format!("a load task failed: {error}"))? {
            Ok(latencies) => {
                sample.completed += latencies.len() as u64;
                sample.latencies.extend(latencies);
            }
            Err(error) => failure = Some(error),
        }
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(sample),
    }
}

/// Runs the handshake, if any, and returns the request this connection repeats.
pub async fn open(conn: &mut Conn, script: &Script) -> Result<Vec<u8>, String> {
    let Some(handshake) = &script.handshake else { return Ok(script.request.clone().into_bytes()) };
    let response = conn.exchange(&handshake.initialize).await?;
    if response.status != 200 {
        return Err(format!("initialize answered {}: {}", response.status, String::from_utf8_lossy(response.body)));
    }
    let session = response.header("mcp-session-id").ok_or("initialize answered no mcp-session-id")?.to_owned();
    let initialized = conn.exchange(handshake.initialized.replace("{SESSION}", &session).as_bytes()).await?;
    if !(200..300).contains(&initialized.status) {
        return Err(format!("notifications/initialized answered {}", initialized.status));
    }
    Ok(script.request.replace("{SESSION}", &session).into_bytes())
}

/// One exchange, checked: a 200, and now and then the expected fragment in the body.
pub async fn exchange(conn: &mut Conn, request: &[u8], expect: &str, check_body: bool) -> Result<(), String> {
    let response = conn.exchange(request).await?;
    if response.status != 200 || (check_body && find(response.body, expect.as_bytes()).is_none()) {
        let body = String::from_utf8_lossy(&response.body[..response.body.len().min(600)]);
        return Err(format!("answered {} without {expect:?}: {body}", response.status));
    }
    Ok(())
}

async fn closed_loop(
    conn: &mut Conn,
    request: &[u8],
    expect: &str,
    start: Instant,
    recorded: Instant,
    end: Instant,
) -> Result<Vec<Duration>, String> {
    let mut latencies = Vec::with_capacity(64 * 1024);
    sleep_until(start).await;
    let mut sent = 0u64;
    loop {
        let began = Instant::now();
        if began >= end {
            return Ok(latencies);
        }
        exchange(conn, request, expect, sent.is_multiple_of(1024)).await?;
        sent += 1;
        if began >= recorded {
            latencies.push(began.elapsed());
        }
    }
}

/// When each of one connection's requests is due: requests `first`, `first + step`, ...
/// of a stream offered at `rate` from `start`.
struct Schedule {
    first: usize,
    step: usize,
    rate: f64,
    start: Instant,
}

impl Schedule {
    fn due(&self, nth: usize) -> Instant {
        self.start + Duration::from_secs_f64((self.first + nth * self.step) as f64 / self.rate)
    }
}

async fn open_loop(
    conn: &mut Conn,
    request: &[u8],
    expect: &str,
    schedule: Schedule,
    recorded: Instant,
    end: Instant,
) -> Result<Vec<Duration>, String> {
    let mut latencies = Vec::new();
    let mut free_since = Instant::now();
    for nth in 0.. {
        let due = schedule.due(nth);
        if due >= end {
            break;
        }
        // A connection still busy when the request was due was held up by the server:
        // that wait is latency. A timer that woke late is the generator's, not counted.
        let began = if free_since > due {
            due
        } else {
            sleep_until(due).await;
            Instant::now()
        };
        exchange(conn, request, expect, nth.is_multiple_of(1024)).await?;
        free_since = Instant::now();
        if due >= recorded {
            latencies.push(free_since - began);
        }
    }
    Ok(latencies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_read_off_the_sorted_whole() {
        let latencies = (1..=1000).rev().map(Duration::from_micros).collect();
        let stats = Sample { completed: 1000, window: Duration::from_secs(2), latencies }.stats();
        assert_eq!(stats.rate, 500.0);
        assert_eq!(stats.p50, Duration::from_micros(500));
        assert_eq!(stats.p99, Duration::from_micros(990));
        assert_eq!(stats.p999, Duration::from_micros(999));
    }

    #[test]
    fn a_schedule_interleaves_its_connections() {
        let start = Instant::now();
        let schedule = Schedule { first: 3, step: 16, rate: 1000.0, start };
        assert_eq!(schedule.due(0) - start, Duration::from_millis(3));
        assert_eq!(schedule.due(2) - start, Duration::from_millis(35));
    }
}
