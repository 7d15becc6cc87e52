//! Warnings about an upstream that repeat, kept from flooding the log: an upstream that
//! changes its definitions many times a second, or refuses every listing, would otherwise
//! have each listing print its lines again.
//!
//! A warning is known by its upstream, its entry (the capability it is about, or none) and
//! its cause. The first of each prints; those after it are counted, and the first heard
//! [`QUIET`] or more after the last printed one prints with that count (`suppressed`). A
//! new cause is a new warning and prints at once. A cause is Bondry's reason, never words
//! the upstream chose, so an upstream cannot make each occurrence a new warning.
//!
//! One table serves the process: the log names an upstream, not its realm, so two realms'
//! identical warnings are one warning there too.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a warning stays quiet after it printed.
pub(crate) const QUIET: Duration = Duration::from_secs(60);

/// The warnings followed at once (about 1 MiB): room for every entry of two upstreams at
/// the largest listings, and no upstream may hold more than half. Past its share or the
/// table's room, warnings not heard for [`QUIET`] are forgotten (at most once a second),
/// and if that is not enough, a new warning is counted with every other such warning of
/// its upstream, which print together at most once per [`QUIET`]: no upstream can print
/// more than its share of lines a minute, nor crowd another's warnings out.
const CAPACITY: usize = 16_384;
/// How often a full table looks for warnings to forget.
const PURGE_EVERY: Duration = Duration::from_secs(1);

/// A warning to print now, and how many like it were not printed since the last that was
/// (`None` for the first, or when none was held back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Print {
    pub(crate) suppressed: Option<u64>,
}

/// The warnings heard, by their (upstream, entry, cause) hashed: an entry's name and a
/// cause can be long, and the table's memory stays that of its count. A 64-bit hash
/// under a key random per process makes two warnings' counts merge only by a chance not
/// worth a byte.
pub(crate) struct Repeats {
    heard: HashMap<u64, Heard>,
    /// How many of `heard` each upstream holds, by its name hashed.
    held: HashMap<u64, usize>,
    /// By upstream: the warnings that found its share or the table full.
    overflow: HashMap<u64, Heard>,
    hasher: RandomState,
    capacity: usize,
    purged_at: Option<Instant>,
}

struct Heard {
    /// Its upstream's name, hashed.
    upstream: u64,
    printed_at: Instant,
    last_at: Instant,
    suppressed: u64,
}

impl Repeats {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            heard: HashMap::new(),
            held: HashMap::new(),
            overflow: HashMap::new(),
            hasher: RandomState::new(),
            capacity,
            purged_at: None,
        }
    }

    /// The warning about `entry` of `upstream` for `cause` was heard at `now`: whether to
    /// print it, and with what count.
    pub(crate) fn hear(&mut self, upstream: &str, entry: &str, cause: &str, now: Instant) -> Option<Print> {
        let key = self.hasher.hash_one((upstream, entry, cause));
        if let Some(heard) = self.heard.get_mut(&key) {
            return heard.again(now);
        }
        let upstream = self.hasher.hash_one(upstream);
        if self.is_full(upstream) && self.purged_at.is_none_or(|at| now.duration_since(at) >= PURGE_EVERY) {
            self.purged_at = Some(now);
            let held = &mut self.held;
            self.heard.retain(|_, heard| {
                let keep = now.duration_since(heard.last_at) < QUIET;
                if !keep && let Some(count) = held.get_mut(&heard.upstream) {
                    *count -= 1;
                }
                keep
            });
            held.retain(|_, count| *count > 0);
        }
        if self.is_full(upstream) {
            return match self.overflow.get_mut(&upstream) {
                Some(heard) => heard.again(now),
                None => {
                    self.overflow.insert(upstream, Heard::new(upstream, now));
                    Some(Print { suppressed: None })
                }
            };
        }
        self.heard.insert(key, Heard::new(upstream, now));
        *self.held.entry(upstream).or_default() += 1;
        Some(Print { suppressed: None })
    }

    /// Whether a new warning of `upstream` has no room: the table, or its share, is full.
    fn is_full(&self, upstream: u64) -> bool {
        self.heard.len() >= self.capacity || self.held.get(&upstream).is_some_and(|held| *held >= self.capacity / 2)
    }
}

impl Heard {
    fn new(upstream: u64, now: Instant) -> Self {
        Self { upstream, printed_at: now, last_at: now, suppressed: 0 }
    }

    /// Heard again at `now`: printed once [`QUIET`] passed since it last printed.
    fn again(&mut self, now: Instant) -> Option<Print> {
        self.last_at = now;
        if now.duration_since(self.printed_at) < QUIET {
            self.suppressed += 1;
            return None;
        }
        self.printed_at = now;
        let suppressed = std::mem::take(&mut self.suppressed);
        Some(Print { suppressed: (suppressed > 0).then_some(suppressed) })
    }
}

static REPEATS: LazyLock<Mutex<Repeats>> = LazyLock::new(|| Mutex::new(Repeats::new(CAPACITY)));

/// [`Repeats::hear`] in the process's table, now.
pub(crate) fn hear(upstream: &str, entry: &str, cause: &str) -> Option<Print> {
    REPEATS.lock().unwrap_or_else(PoisonError::into_inner).hear(upstream, entry, cause, Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Option<Print> = Some(Print { suppressed: None });

    fn after(start: Instant, seconds: u64) -> Instant {
        start + Duration::from_secs(seconds)
    }

    #[test]
    fn the_first_prints_then_one_line_a_minute_with_the_count_held_back() {
        let mut repeats = Repeats::new(8);
        let start = Instant::now();
        assert_eq!(repeats.hear("up", "tool a", "drifted", start), FIRST);
        for second in 1..60 {
            assert_eq!(repeats.hear("up", "tool a", "drifted", after(start, second)), None, "{second} s");
        }
        let summary = Some(Print { suppressed: Some(59) });
        assert_eq!(repeats.hear("up", "tool a", "drifted", after(start, 60)), summary);
        assert_eq!(repeats.hear("up", "tool a", "drifted", after(start, 61)), None);
        assert_eq!(repeats.hear("up", "tool a", "drifted", after(start, 119)), None);
        assert_eq!(repeats.hear("up", "tool a", "drifted", after(start, 120)), Some(Print { suppressed: Some(2) }));
    }

    #[test]
    fn heard_again_after_a_quiet_minute_it_prints_without_a_count() {
        let mut repeats = Repeats::new(8);
        let start = Instant::now();
        assert_eq!(repeats.hear("up", "", "call timed out", start), FIRST);
        assert_eq!(repeats.hear("up", "", "call timed out", after(start, 300)), FIRST);
    }

    #[test]
    fn another_cause_entry_or_upstream_prints_at_once() {
        let mut repeats = Repeats::new(8);
        let start = Instant::now();
        assert_eq!(repeats.hear("up", "tool a", "drifted from sha256:1", start), FIRST);
        assert_eq!(repeats.hear("up", "tool a", "drifted from sha256:2", after(start, 1)), FIRST);
        assert_eq!(repeats.hear("up", "tool b", "drifted from sha256:1", after(start, 1)), FIRST);
        assert_eq!(repeats.hear("other", "tool a", "drifted from sha256:1", after(start, 1)), FIRST);
        // The parts are told apart where they meet.
        assert_eq!(repeats.hear("u", "ptool a", "drifted from sha256:1", after(start, 1)), FIRST);
        assert_eq!(repeats.hear("up", "tool a", "drifted from sha256:1", after(start, 2)), None);
        assert_eq!(repeats.hear("up", "tool a", "drifted from sha256:2", after(start, 2)), None);
    }

    #[test]
    fn no_upstream_takes_more_than_half_the_table() {
        let mut repeats = Repeats::new(4);
        let start = Instant::now();
        assert_eq!(repeats.hear("loud", "a", "cause", start), FIRST);
        assert_eq!(repeats.hear("loud", "b", "cause", start), FIRST);
        // Its share is full: the rest of its new warnings share one line.
        assert_eq!(repeats.hear("loud", "c", "cause", start), FIRST);
        assert_eq!(repeats.hear("loud", "d", "cause", start), None);
        assert_eq!(repeats.hear("loud", "e", "cause", start), None);
        // Another upstream's warnings still print each on its own.
        assert_eq!(repeats.hear("quiet", "a", "drifted", start), FIRST);
        assert_eq!(repeats.hear("quiet", "b", "drifted", start), FIRST);
        assert_eq!(repeats.heard.len(), 4);
    }

    #[test]
    fn past_its_capacity_an_upstreams_new_warnings_print_together_until_old_ones_are_forgotten() {
        // Room for four, two of them an upstream's.
        let mut repeats = Repeats::new(4);
        let start = Instant::now();
        assert_eq!(repeats.hear("up", "a", "cause", start), FIRST);
        assert_eq!(repeats.hear("up", "b", "cause", after(start, 1)), FIRST);
        // Its share is full: c and d share the upstream's line, which printed for c.
        assert_eq!(repeats.hear("up", "c", "cause", after(start, 2)), FIRST);
        assert_eq!(repeats.hear("up", "d", "cause", after(start, 3)), None);
        assert_eq!(repeats.hear("other", "e", "cause", after(start, 3)), FIRST, "another upstream's own line");
        assert_eq!(repeats.hear("up", "a", "cause", after(start, 4)), None, "a is still followed");
        // b was last heard over a minute ago: forgotten, it makes room for f.
        assert_eq!(repeats.hear("up", "f", "cause", after(start, 62)), FIRST);
        // Full again, and looked through a second ago: g counts with c and d, whose line
        // printed a minute ago and prints again, with d's count.
        assert_eq!(repeats.hear("up", "g", "cause", after(start, 63)), Some(Print { suppressed: Some(1) }));
        // A second later, a (last heard at 4 s) is forgotten in turn: h is followed alone.
        assert_eq!(repeats.hear("up", "h", "cause", after(start, 64)), FIRST);
        assert_eq!(repeats.hear("up", "h", "cause", after(start, 65)), None);
        assert_eq!(repeats.heard.len(), 2, "f and h: the other upstream's e, quiet for a minute, went with a");
    }
}
