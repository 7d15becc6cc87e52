//! The load: a closed loop to find saturation, then the soak's paced mix, session churn
//! and listen streams. Every loop ends by itself at its deadline (or when told to stop),
//! and every request sits under its own deadline, so the soak always finishes.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::http::{Conn, request_deadline};
use crate::traffic::{self, Modern};

/// How many error messages are kept to print; the count goes on past them.
const KEPT_ERRORS: usize = 10;
/// How long a failed connection waits before it connects again, so a server that refuses
/// everything is not hammered by a spinning loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);
/// The least lateness a paced connection catches up on rather than skips.
const CATCH_UP: Duration = Duration::from_millis(20);

/// What the load has done so far, shared by every task.
#[derive(Default)]
pub struct Tally {
    /// Modern requests answered correctly.
    pub modern: AtomicU64,
    /// Session cycles completed, and the requests they made.
    pub sessions: AtomicU64,
    pub session_requests: AtomicU64,
    /// Listen streams opened, acknowledged, held and dropped.
    pub listens: AtomicU64,
    /// Paced slots skipped because the connection was behind (no backlog is let build).
    pub missed: AtomicU64,
    pub errors: AtomicU64,
    kept: Mutex<Vec<String>>,
}

impl Tally {
    /// Requests answered correctly, of every kind.
    pub fn requests(&self) -> u64 {
        self.modern.load(Relaxed) + self.session_requests.load(Relaxed) + self.listens.load(Relaxed)
    }

    pub fn error(&self, what: &str, error: String) {
        self.errors.fetch_add(1, Relaxed);
        let mut kept = self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.len() < KEPT_ERRORS {
            kept.push(format!("{what}: {error}"));
        }
    }

    pub fn kept_errors(&self) -> Vec<String> {
        self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

/// When a task must end: at `deadline`, or earlier once `stop` turns true.
#[derive(Clone)]
pub struct Until {
    pub deadline: Instant,
    stop: watch::Receiver<bool>,
}

impl Until {
    pub fn new(deadline: Instant, stop: watch::Receiver<bool>) -> Until {
        Until { deadline, stop }
    }

    pub fn over(&self) -> bool {
        Instant::now() >= self.deadline || *self.stop.borrow()
    }

    /// Sleeps until `at` (or the end); false if the task should end.
    async fn sleep_until(&mut self, at: Instant) -> bool {
        let stop = &mut self.stop;
        tokio::select! {
            () = sleep_until(at.min(self.deadline)) => {}
            Ok(()) = stop.changed() => {}
        }
        !self.over()
    }
}

/// Closed-loop `tools/call` over `connections` connections until `until`: requests per
/// second answered correctly.
pub async fn saturate(addr: SocketAddr, connections: usize, until: Until, tally: &'static Tally) -> f64 {
    let started = Instant::now();
    let request = Modern::Call.request();
    let workers: Vec<JoinHandle<u64>> = (0..connections)
        .map(|_| {
            let (until, request) = (until.clone(), request.clone());
            tokio::spawn(async move {
                let mut done = 0;
                let mut conn = None;
                while !until.over() {
                    match exchange_modern(addr, &mut conn, &request, Modern::Call).await {
                        Ok(()) => done += 1,
                        Err(error) => failed(tally, "saturation tools/call", error, &mut conn).await,
                    }
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await.unwrap_or(0);
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// The soak's modern mix at `rate` requests per second in all, spread evenly over
/// `connections` kept-alive connections, each on a fixed schedule. A connection that falls
/// more than a few slots behind skips the slots it missed instead of catching up in a
/// burst, and counts them. The tasks return the latency of every request, in microseconds.
pub fn paced(
    addr: SocketAddr,
    connections: usize,
    rate: f64,
    until: &Until,
    tally: &'static Tally,
) -> Vec<JoinHandle<Vec<u32>>> {
    let period = Duration::from_secs_f64(connections as f64 / rate);
    // A connection late by a few slots (one slow answer, a descheduled driver) catches up
    // back to back; later than this it skips, so the backlog never exceeds this much.
    let catch_up = (period * 4).max(CATCH_UP);
    let start = Instant::now();
    let requests: Vec<Vec<u8>> = (0..10).map(|n| Modern::nth(n).request()).collect();
    (0..connections)
        .map(|index| {
            let (mut until, requests) = (until.clone(), requests.clone());
            // Staggered, so the connections do not all send in the same instant.
            let first = start + period.mul_f64(index as f64 / connections as f64);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut conn = None;
                let mut slot = first;
                let mut n = 0u64;
                while until.sleep_until(slot).await {
                    let kind = Modern::nth(n);
                    let sent = Instant::now();
                    match exchange_modern(addr, &mut conn, &requests[(n % 10) as usize], kind).await {
                        Ok(()) => {
                            tally.modern.fetch_add(1, Relaxed);
                            latencies.push(sent.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                        }
                        Err(error) => failed(tally, &format!("{kind:?}"), error, &mut conn).await,
                    }
                    n += 1;
                    slot += period;
                    let behind = Instant::now().saturating_duration_since(slot);
                    if behind > catch_up {
                        let skipped = (behind.as_secs_f64() / period.as_secs_f64()) as u32;
                        tally.missed.fetch_add(u64::from(skipped), Relaxed);
                        slot += period * skipped;
                    }
                }
                latencies
            })
        })
        .collect()
}

/// Handshake-era sessions at `per_second`, one after the other, each on a connection of
/// its own: `initialize`, `notifications/initialized`, a `tools/call`, `DELETE`.
pub fn churn(addr: SocketAddr, per_second: f64, until: &Until, tally: &'static Tally) -> JoinHandle<()> {
    let mut until = until.clone();
    let period = Duration::from_secs_f64(1.0 / per_second);
    tokio::spawn(async move {
        let mut slot = Instant::now();
        while until.sleep_until(slot).await {
            match session(addr, tally).await {
                Ok(()) => {
                    tally.sessions.fetch_add(1, Relaxed);
                }
                Err(error) => tally.error("session", error),
            }
            slot += period;
            let behind = Instant::now().saturating_duration_since(slot);
            if behind > period {
                slot = Instant::now();
            }
        }
    })
}

/// One session's life.
async fn session(addr: SocketAddr, tally: &Tally) -> Result<(), String> {
    let mut conn = Conn::connect(addr, request_deadline()).await?;
    let opened = conn.exchange(&traffic::initialize(), request_deadline()).await?;
    let session = traffic::check_initialized(&opened).map_err(|error| format!("initialize: {error}"))?;
    tally.session_requests.fetch_add(1, Relaxed);
    let response = conn.exchange(&traffic::initialized(&session), request_deadline()).await?;
    traffic::check_status(&response, 202).map_err(|error| format!("notifications/initialized: {error}"))?;
    tally.session_requests.fetch_add(1, Relaxed);
    let response = conn.exchange(&traffic::session_call(&session), request_deadline()).await?;
    traffic::json_result(&response, 200)
        .and_then(|result| traffic::check_echo(&result))
        .map_err(|error| format!("tools/call in a session: {error}"))?;
    tally.session_requests.fetch_add(1, Relaxed);
    let response = conn.exchange(&traffic::delete(&session), request_deadline()).await?;
    traffic::check_status(&response, 204).map_err(|error| format!("DELETE: {error}"))?;
    tally.session_requests.fetch_add(1, Relaxed);
    Ok(())
}

/// `streams` listen streams open at any time (their cycles staggered), each held for
/// `hold` after its acknowledgement and then dropped by closing its connection.
pub fn listens(
    addr: SocketAddr,
    streams: usize,
    hold: Duration,
    until: &Until,
    tally: &'static Tally,
) -> Vec<JoinHandle<()>> {
    let start = Instant::now();
    (0..streams)
        .map(|index| {
            let mut until = until.clone();
            let first = start + hold.mul_f64(index as f64 / streams as f64);
            tokio::spawn(async move {
                let mut at = first;
                while until.sleep_until(at).await {
                    match listen(addr, hold.min(until.deadline.saturating_duration_since(Instant::now()))).await {
                        Ok(()) => {
                            tally.listens.fetch_add(1, Relaxed);
                        }
                        Err(error) => {
                            tally.error("subscriptions/listen", error);
                            // Not straight back: a refused stream would otherwise spin.
                            at = Instant::now() + RECONNECT_PAUSE;
                            continue;
                        }
                    }
                    at = Instant::now();
                }
            })
        })
        .collect()
}

/// One listen stream: opened, acknowledged, held open for `hold`, dropped.
async fn listen(addr: SocketAddr, hold: Duration) -> Result<(), String> {
    let mut conn = Conn::connect(addr, request_deadline()).await?;
    let deadline = request_deadline();
    conn.send(&traffic::listen(), deadline).await?;
    traffic::check_stream_head(&conn.read_head(deadline).await?)?;
    let mut events = Vec::new();
    while !traffic::acknowledged(&events)? {
        match conn.read_chunk(deadline).await? {
            Some(chunk) => events.extend_from_slice(&chunk),
            None => return Err("the stream ended before its acknowledgement".to_owned()),
        }
    }
    // The server never closes a listen stream by itself while serving.
    if conn.closed_before(Instant::now() + hold).await? {
        return Err("the server closed a listen stream".to_owned());
    }
    Ok(())
}

/// One modern request on the connection in `conn` (connecting first if there is none).
async fn exchange_modern(
    addr: SocketAddr,
    conn: &mut Option<Conn>,
    request: &[u8],
    kind: Modern,
) -> Result<(), String> {
    let deadline = request_deadline();
    if conn.is_none() {
        *conn = Some(Conn::connect(addr, deadline).await?);
    }
    let connection = conn.as_mut().expect("connected above");
    let response = connection.exchange(request, deadline).await?;
    kind.check(&response)
}

/// Counts an error and drops the connection, which may be mid-response; the next request
/// connects afresh, after a pause.
async fn failed(tally: &Tally, what: &str, error: String, conn: &mut Option<Conn>) {
    tally.error(what, error);
    *conn = None;
    tokio::time::sleep(RECONNECT_PAUSE).await;
}
