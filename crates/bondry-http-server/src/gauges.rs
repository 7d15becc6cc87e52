//! Gauges of what the runtime holds open: calls running and event streams open. Each is
//! held by a guard that lives exactly as long as the thing it counts, so a call dropped
//! with its client, or a stream closed by either side, can never leave a count behind.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The runtime's gauges, shared by every listener.
#[derive(Debug, Default)]
pub struct Gauges {
    calls: AtomicUsize,
    streams: AtomicUsize,
}

/// A reading of the gauges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Calls whose handler is running or whose outcome is being shaped, in both eras.
    pub calls: usize,
    /// Event-stream responses open: calls answering on a stream, and session GET streams.
    pub streams: usize,
}

/// Which gauge a guard holds.
#[derive(Debug, Clone, Copy)]
pub enum Gauge {
    Calls,
    Streams,
}

impl Gauges {
    pub fn read(&self) -> Reading {
        Reading { calls: self.calls.load(Ordering::Relaxed), streams: self.streams.load(Ordering::Relaxed) }
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
        let streams = [gauges.hold(Gauge::Streams), gauges.hold(Gauge::Streams)];
        assert_eq!(gauges.read(), Reading { calls: 1, streams: 2 });
        drop(call);
        drop(streams);
        assert_eq!(gauges.read(), Reading { calls: 0, streams: 0 });
    }
}
