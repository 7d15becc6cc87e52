//! The growth verdict: does memory or the descriptor count trend upwards once warm?
//!
//! A leak shows as a steady slope, allocator noise as steps that level off, so the check
//! is a least-squares slope over the samples after the warm-up, projected over the whole
//! soak, besides the plain difference between the warm start and the end.

use std::time::Duration;

use crate::probe::Sample;

/// How many samples are averaged for the warm baseline and for the end, so that one
/// reading taken while a burst of connections was open does not decide either.
const EDGE: usize = 3;

/// The most a measure may grow over the soak.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    /// Allowed growth as a fraction of the warm baseline...
    pub fraction: f64,
    /// ...but never less than this, in the measure's unit.
    pub floor: f64,
}

impl Limit {
    pub fn of(&self, baseline: f64) -> f64 {
        (baseline * self.fraction).max(self.floor)
    }
}

/// RSS may grow by max(10 %, 8 MiB): the allocator's arenas and hyper's and Tokio's
/// buffers settle within the warm-up, and a few MiB of later steps are fragmentation, not
/// a leak, while a leak of ~2 KiB per session or a few bytes per request over a
/// ten-minute soak is well past 8 MiB.
pub const RSS: Limit = Limit { fraction: 0.10, floor: 8.0 * 1024.0 * 1024.0 };
/// Descriptors may end 16 above the warm baseline: the load holds a fixed number of
/// connections, and what varies between samples is the few session connections and
/// listen streams caught opening or closing; one leaked socket per few hundred sessions
/// passes 16 long before the end.
pub const FDS: Limit = Limit { fraction: 0.0, floor: 16.0 };

/// The verdict on one measure.
#[derive(Debug)]
pub struct Growth {
    pub first: f64,
    pub last: f64,
    pub max: f64,
    /// Mean of the first samples after the warm-up, and of the last samples.
    pub baseline: f64,
    pub end: f64,
    /// Least-squares slope after the warm-up, per second.
    pub slope: f64,
    /// `slope` times the whole soak.
    pub projected: f64,
    pub limit: f64,
}

impl Growth {
    pub fn passes(&self) -> bool {
        self.projected <= self.limit && self.end - self.baseline <= self.limit
    }
}

/// Judges `measure` of `samples` (the warm ones being those at or after `warm_up`).
/// `None` when fewer than `EDGE` warm samples exist, too few to judge.
pub fn growth(
    samples: &[Sample],
    warm_up: Duration,
    soak: Duration,
    limit: Limit,
    measure: fn(&Sample) -> f64,
) -> Option<Growth> {
    let warm: Vec<(f64, f64)> =
        samples.iter().filter(|s| s.elapsed >= warm_up).map(|s| (s.elapsed.as_secs_f64(), measure(s))).collect();
    if warm.len() < EDGE {
        return None;
    }
    let mean = |points: &[(f64, f64)]| points.iter().map(|(_, y)| y).sum::<f64>() / points.len() as f64;
    let baseline = mean(&warm[..EDGE]);
    let values = samples.iter().map(measure);
    let slope = slope(&warm);
    Some(Growth {
        first: measure(&samples[0]),
        last: measure(&samples[samples.len() - 1]),
        max: values.fold(f64::MIN, f64::max),
        baseline,
        end: mean(&warm[warm.len() - EDGE..]),
        slope,
        projected: slope * soak.as_secs_f64(),
        limit: limit.of(baseline),
    })
}

/// The least-squares slope of `y` over `x`; 0 for fewer than two distinct `x`.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    if sxx > 0.0 { sxy / sxx } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    /// Ten minutes sampled every 10 s, RSS given per second of the soak.
    fn soak(rss: impl Fn(f64) -> f64) -> Vec<Sample> {
        (0..=60)
            .map(|i| {
                let t = i as f64 * 10.0;
                Sample { elapsed: Duration::from_secs(i * 10), requests: 0, errors: 0, rss: rss(t) as u64, fds: 30 }
            })
            .collect()
    }

    fn judge(samples: &[Sample]) -> Growth {
        let rss = |s: &Sample| s.rss as f64;
        growth(samples, Duration::from_secs(120), Duration::from_secs(600), RSS, rss).unwrap()
    }

    #[test]
    fn the_slope_of_a_line_is_exact() {
        assert!((slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) - 2.0).abs() < 1e-12);
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 3.0)]), 0.0);
    }

    #[test]
    fn a_plateau_with_noise_and_one_step_passes() {
        let samples = soak(|t| 20.0 * MIB + if t > 300.0 { 1.5 * MIB } else { 0.0 } + (t * 7.0).sin() * 0.3 * MIB);
        assert!(judge(&samples).passes(), "{:?}", judge(&samples));
    }

    #[test]
    fn two_kib_per_session_at_eight_sessions_a_second_fails() {
        let samples = soak(|t| 20.0 * MIB + t * 8.0 * 2048.0);
        assert!(!judge(&samples).passes(), "{:?}", judge(&samples));
    }

    #[test]
    fn four_bytes_per_request_at_four_thousand_a_second_fails() {
        let samples = soak(|t| 20.0 * MIB + t * 4000.0 * 4.0);
        assert!(!judge(&samples).passes());
    }

    #[test]
    fn too_few_warm_samples_are_no_verdict() {
        let samples = soak(|_| 20.0 * MIB);
        let rss = |s: &Sample| s.rss as f64;
        assert!(growth(&samples[..13], Duration::from_secs(120), Duration::from_secs(600), RSS, rss).is_none());
    }
}
