//! Waits between attempts that keep failing: exponential, with jitter, to a cap.
//!
//! Every path that connects or initializes again uses one (the supervisor's reconnect, a
//! handshake upstream's session renewal and its GET stream, a resource listen stream),
//! so an upstream that fails at once every time is tried at most once per `cap` once the
//! waits have grown, never in a loop. The jitter (each wait drawn from its upper half)
//! keeps many upstreams lost together from coming back together.

use std::time::Duration;

/// The first wait; each failure doubles it up to the cap.
pub(crate) const FIRST: Duration = Duration::from_secs(1);
/// The longest wait.
pub(crate) const CAP: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Backoff {
    next: Duration,
    /// Attempts failed in a row since the last success.
    failed: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: FIRST, failed: 0 }
    }
}

impl Backoff {
    /// The wait before the next attempt, after one more failure: between half the current
    /// step and the step itself, chosen by `jitter` (0 to `u32::MAX`); the step doubles.
    pub(crate) fn fail(&mut self, jitter: u32) -> Duration {
        let step = self.next;
        self.next = (self.next * 2).min(CAP);
        self.failed = self.failed.saturating_add(1);
        let half = step / 2;
        half + half.mul_f64(f64::from(jitter) / f64::from(u32::MAX))
    }

    /// The attempt succeeded: the next failure waits [`FIRST`] again.
    pub(crate) fn succeed(&mut self) {
        *self = Self::default();
    }

    /// Attempts failed in a row.
    pub(crate) fn failed(&self) -> u32 {
        self.failed
    }
}

/// A jitter for [`Backoff::fail`] from the system's randomness; the middle without it.
pub(crate) fn jitter() -> u32 {
    getrandom::u32().unwrap_or(u32::MAX / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_to_the_cap_within_their_upper_half_and_a_success_starts_over() {
        let mut backoff = Backoff::default();
        let steps: Vec<Duration> = (0..9).map(|_| backoff.fail(u32::MAX)).collect();
        let seconds = |s: &[u64]| s.iter().map(|s| Duration::from_secs(*s)).collect::<Vec<_>>();
        assert_eq!(steps, seconds(&[1, 2, 4, 8, 16, 32, 60, 60, 60]));
        assert_eq!(backoff.failed(), 9);
        assert_eq!(backoff.fail(0), Duration::from_secs(30), "the least of the capped step");
        backoff.succeed();
        assert_eq!(backoff.failed(), 0);
        assert_eq!(backoff.fail(0), Duration::from_millis(500));
    }
}
