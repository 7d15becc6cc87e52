//! What tests at the protocol crate's boundary share: the one test random source, a
//! runtime side that does nothing, an in-memory session table, and a call driven to its
//! reply the way the runtime drives it; and the test handlers ([`handlers`]).

pub mod handlers;

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use bondry_core::BoxFuture;
use bondry_core::capability::Descriptor;
use bondry_core::dispatch::Outcome;
use bondry_core::handler::{Cancellation, Emitter, LogLevel, Publisher};
use bondry_mcp_proto::{Adapter, Call, Csprng, Effect, Ended, LiveSession, Next, Reply, SessionLookup};
use serde_json::Value;

/// The tests' random source: xorshift64* from a seed, so every run draws the same bytes.
/// Never a CSPRNG outside tests.
#[derive(Debug, Clone)]
pub struct TestRandom(u64);

impl TestRandom {
    pub fn new(seed: u64) -> Self {
        // Any seed, zero included, gives a non-zero state.
        Self((seed ^ 0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 bits.
    pub fn word(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl Csprng for TestRandom {
    fn fill(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let word = self.word().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

/// The runtime's side of a running call, doing nothing: never cancelled, emitting and
/// publishing into the void.
#[derive(Debug, Clone, Copy)]
pub struct Quiet;

impl Cancellation for Quiet {
    fn is_cancelled(&self) -> bool {
        false
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::pending())
    }
}

impl Emitter for Quiet {
    fn progress(&self, _progress: f64, _total: Option<f64>, _message: Option<String>) {}

    fn log(&self, _level: LogLevel, _logger: Option<String>, _data: Value) {}
}

impl Publisher for Quiet {
    fn resource_updated(&self, _uri: &str) {}

    fn set_dynamic(&self, _capabilities: Vec<Descriptor>) {}
}

/// The runtime's session table, in memory: the sessions the replies handed to
/// [`SessionTable::apply`] opened.
#[derive(Debug, Default)]
pub struct SessionTable(RefCell<HashMap<String, LiveSession>>);

impl SessionLookup for SessionTable {
    fn find(&self, sid: &str) -> Option<LiveSession> {
        self.0.borrow().get(sid).cloned()
    }
}

impl SessionTable {
    /// Applies what a reply asks of the session table: opening and closing sessions, and
    /// the log level; the rest concerns streams and calls, which this table has none of.
    pub fn apply(&self, effect: &Effect) {
        let mut sessions = self.0.borrow_mut();
        match effect {
            Effect::OpenSession(new) => {
                let live = LiveSession {
                    client_capabilities: new.client_capabilities.clone(),
                    log_level: None,
                    subscriptions: 0,
                };
                sessions.insert(new.sid.clone(), live);
            }
            Effect::CloseSession { sid } => {
                sessions.remove(sid);
            }
            Effect::SetLogLevel { sid, level } => {
                if let Some(live) = sessions.get_mut(sid) {
                    live.log_level = Some(*level);
                }
            }
            Effect::Cancel { .. } | Effect::Subscribe { .. } | Effect::Unsubscribe { .. } | Effect::Respond { .. } => {}
        }
    }
}

/// `call` run to its reply with `outcome` as its handler's one answer, the way the runtime
/// drives it: a session's questions go out and the deadline passes unanswered. `None`
/// when the handler would be called again (a session round with only a state).
pub fn complete(
    adapter: &Adapter,
    call: Call,
    outcome: Outcome,
    now: SystemTime,
    rng: &mut dyn Csprng,
) -> Option<Reply> {
    let mut conversation = adapter.conversation(call, Duration::from_secs(60));
    conversation.handle_outcome(outcome, now, rng);
    if let Next::Ask(_) = conversation.poll() {
        conversation.handle_asked(now);
        conversation.handle_timeout(now, rng);
    }
    match conversation.poll() {
        Next::Done => match conversation.finish(now) {
            Ended::Replied(reply) => Some(reply),
            Ended::Cancelled(_) => None,
        },
        _ => None,
    }
}
