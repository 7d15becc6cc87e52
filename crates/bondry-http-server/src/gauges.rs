//! Gauges of what one realm holds open: calls running, event streams and listen streams.
//! Each is held by a guard that lives exactly as long as the thing it counts, so a call
//! dropped with its client, or a stream closed by either side, can never leave a count
//! behind.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One realm's gauges, shared by every listener.
#[derive(Debug, Default)]
pub struct Gauges {
    calls: AtomicUsize,
    streams: AtomicUsize,
    listens: AtomicUsize,
}

/// A reading of the gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Calls whose handler is running or whose outcome is being shaped, in both eras.
    pub calls: usize,
    /// Event-stream responses open: calls answering on a stream, and session GET streams.
    pub streams: usize,
    /// `subscriptions/listen` streams open.
    pub listens: usize,
}

impl std::ops::Add for Reading {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            calls: self.calls + other.calls,
            streams: self.streams + other.streams,
            listens: self.listens + other.listens,
        }
    }
}

/// Which gauge a guard holds.
#[derive(Debug, Clone, Copy)]
pub enum Gauge {
    Calls,
    Streams,
    Listens,
}

impl Gauges {
    pub fn read(&self) -> Reading {
        Reading {
            calls: self.calls.load(Ordering::Relaxed),
            streams: self.streams.load(Ordering::Relaxed),
            listens: self.listens.load(Ordering::Relaxed),
        }
    }

    /// Counts one more until the guard drops.
    pub fn hold(self: &Arc<Self>, gauge: Gauge) -> Held {
        self.counter(gauge).fetch_add(1, Ordering::Relaxed);
        Held { gauges: Arc::clone(self), gauge }
    }

    fn counter(&self, gauge: Gauge) -> &AtomicUsize {
        match gauge {
            Gauge::Calls => &self.calls,
            Gauge::Streams => &self.streams,
            Gauge::Listens => &self.listens,
        }
    }
}

/// One unit of a gauge, given back on drop.
#[derive(Debug)]
pub struct Held {
    gauges: Arc<Gauges>,
    gauge: Gauge,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.gauges.counter(self.gauge).fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_count_while_they_live() {
        let gauges = Arc::new(Gauges::default());
        let call = gauges.hold(Gauge::Calls);
        let streams = [gauges.hold(Gauge::Streams), gauges.hold(Gauge::Streams), gauges.hold(Gauge::Listens)];
        assert_eq!(gauges.read(), Reading { calls: 1, streams: 2, listens: 1 });
        drop(call);
        drop(streams);
        assert_eq!(gauges.read(), Reading::default());
    }
}
