//! The upstream's requests Bondry owes an answer, counted against
//! `max_pending_server_requests`: whatever an upstream asks, what Bondry holds for it
//! stays bounded.
//!
//! A request is owed from the moment it is read until its answer is written (or given
//! up): the [`Claim`] travels with it, to the stdin queue or to the call it belongs to,
//! and the count falls when the claim (and every clone of it) is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The count of one connection's owed requests, and its limit.
#[derive(Debug, Clone)]
pub(crate) struct Owed {
    count: Arc<AtomicUsize>,
    limit: usize,
}

/// One owed request; its clones are the same request.
#[derive(Debug, Clone)]
pub struct Claim {
    _held: Arc<Held>,
}

#[derive(Debug)]
struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Owed {
    pub(crate) fn new(limit: usize) -> Self {
        Self { count: Arc::new(AtomicUsize::new(0)), limit }
    }

    /// A claim on one more owed request, unless `limit` are owed already.
    pub(crate) fn claim(&self) -> Option<Claim> {
        let limit = self.limit;
        self.count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |owed| (owed < limit).then_some(owed + 1)).ok()?;
        Some(Claim { _held: Arc::new(Held(Arc::clone(&self.count))) })
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    #[cfg(test)]
    fn owed(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_stop_at_the_limit_and_come_back_when_every_clone_is_dropped() {
        let owed = Owed::new(2);
        let first = owed.claim().expect("one of two");
        let second = owed.claim().expect("two of two");
        assert!(owed.claim().is_none(), "a third is refused");
        let copy = first.clone();
        drop(first);
        assert_eq!(owed.owed(), 2, "a clone still holds the request");
        assert!(owed.claim().is_none());
        drop(copy);
        assert_eq!(owed.owed(), 1);
        assert!(owed.claim().is_some());
        drop(second);
    }
}
