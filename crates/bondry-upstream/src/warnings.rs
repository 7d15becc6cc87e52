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

/// The warnings followed at once: past it, the one heard longest ago is forgotten (and
/// prints again as new when next heard).
const CAPACITY: usize = 4096;

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
    hasher: RandomState,
    capacity: usize,
}

struct Heard {
    printed_at: Instant,
    last_at: Instant,
    suppressed: u64,
}

impl Repeats {
    pub(crate) fn new(capacity: usize) -> Self {
        Self { heard: HashMap::new(), hasher: RandomState::new(), capacity }
    }

    /// The warning about `entry` of `upstream` for `cause` was heard at `now`: whether to
    /// print it, and with what count.
    pub(crate) fn hear(&mut self, upstream: &str, entry: &str, cause: &str, now: Instant) -> Option<Print> {
        let key = self.hasher.hash_one((upstream, entry, cause));
        if let Some(heard) = self.heard.get_mut(&key) {
            heard.last_at = now;
            if now.duration_since(heard.printed_at) < QUIET {
                heard.suppressed += 1;
                return None;
            }
            heard.printed_at = now;
            let suppressed = std::mem::take(&mut heard.suppressed);
            return Some(Print { suppressed: (suppressed > 0).then_some(suppressed) });
        }
        if self.heard.len() >= self.capacity {
            let oldest = self.heard.iter().min_by_key(|(_, heard)| heard.last_at).map(|(key, _)| *key);
            if let Some(oldest) = oldest {
                self.heard.remove(&oldest);
            }
        }
        self.heard.insert(key, Heard { printed_at: now, last_at: now, suppressed: 0 });
        Some(Print { suppressed: None })
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
    fn past_its_capacity_the_table_forgets_the_warning_heard_longest_ago() {
        let mut repeats = Repeats::new(2);
        let start = Instant::now();
        assert_eq!(repeats.hear("up", "a", "cause", start), FIRST);
        assert_eq!(repeats.hear("up", "b", "cause", after(start, 1)), FIRST);
        assert_eq!(repeats.hear("up", "a", "cause", after(start, 2)), None);
        // b was heard longest ago: forgotten for c.
        assert_eq!(repeats.hear("up", "c", "cause", after(start, 3)), FIRST);
        assert_eq!(repeats.heard.len(), 2);
        assert_eq!(repeats.hear("up", "a", "cause", after(start, 4)), None);
        assert_eq!(repeats.hear("up", "b", "cause", after(start, 5)), FIRST);
        assert_eq!(repeats.heard.len(), 2);
    }
}
