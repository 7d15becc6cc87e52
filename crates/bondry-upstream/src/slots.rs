//! An upstream's call slots: at most `max_concurrent_calls` calls at once, the others
//! waiting their turn, and a count of the calls running, which a connection being
//! replaced waits on before it closes.
//!
//! A reload that changes the limit keeps the connection (only a new way to reach the
//! upstream opens a new one), so the new limit takes effect for the calls that start
//! after it: they wait on a semaphore of the new size, while calls
//! already admitted finish on the old one. The count of running calls spans both, so a
//! stop after the calls waits for every call, whichever limit admitted it.

use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

pub struct CallSlots {
    /// The limit in force and the semaphore that holds it; replaced whole when it changes.
    limit: RwLock<(usize, Arc<Semaphore>)>,
    /// Calls between entering [`CallSlots::enter`] and dropping their [`Running`].
    running: Arc<watch::Sender<usize>>,
}

/// A call counted as running; holds a slot once [`Running::admitted`] returned.
pub struct Running {
    running: Arc<watch::Sender<usize>>,
    permit: Option<OwnedSemaphorePermit>,
}

impl CallSlots {
    pub fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        Self { limit: RwLock::new((limit, Arc::new(Semaphore::new(limit)))), running: Arc::new(watch::Sender::new(0)) }
    }

    /// Takes `limit` for the calls that start from now on.
    pub fn resize(&self, limit: usize) {
        let limit = limit.max(1);
        // A poisoned lock only means a writer panicked between two whole stores.
        let mut current = self.limit.write().unwrap_or_else(PoisonError::into_inner);
        if current.0 != limit {
            *current = (limit, Arc::new(Semaphore::new(limit)));
        }
    }

    /// Counts a call as running from now until the returned guard drops.
    pub fn enter(&self) -> Running {
        self.running.send_modify(|running| *running += 1);
        Running { running: Arc::clone(&self.running), permit: None }
    }

    /// Resolves once no call is running.
    pub async fn idle(&self) {
        let mut running = self.running.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = running.wait_for(|running| *running == 0).await;
    }

    fn semaphore(&self) -> Arc<Semaphore> {
        Arc::clone(&self.limit.read().unwrap_or_else(PoisonError::into_inner).1)
    }

    #[cfg(test)]
    fn running(&self) -> usize {
        *self.running.borrow()
    }
}

impl Running {
    /// Waits for a slot under the limit in force when the wait began.
    pub async fn admitted(&mut self, slots: &CallSlots) {
        // A semaphore is never closed, so acquiring cannot fail.
        if let Ok(permit) = slots.semaphore().acquire_owned().await {
            self.permit = Some(permit);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.permit.take();
        self.running.send_modify(|running| *running -= 1);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn admitted(slots: &CallSlots) -> Running {
        let mut running = slots.enter();
        running.admitted(slots).await;
        running
    }

    async fn waits(slots: &CallSlots) -> bool {
        tokio::time::timeout(Duration::from_millis(20), admitted(slots)).await.is_err()
    }

    #[tokio::test]
    async fn a_full_limit_makes_the_next_call_wait_until_a_slot_frees() {
        let slots = CallSlots::new(1);
        let first = admitted(&slots).await;
        assert!(waits(&slots).await);
        drop(first);
        let _second = admitted(&slots).await;
    }

    #[tokio::test]
    async fn a_new_limit_admits_the_calls_that_start_after_it() {
        let slots = CallSlots::new(1);
        let _first = admitted(&slots).await;
        slots.resize(2);
        let _second = admitted(&slots).await;
        let _third = admitted(&slots).await;
        assert!(waits(&slots).await, "two under the new limit, whatever the old one holds");
        slots.resize(1);
        let fourth = admitted(&slots).await;
        assert!(waits(&slots).await);
        drop(fourth);
        let _fifth = admitted(&slots).await;
    }

    #[tokio::test]
    async fn idle_waits_for_every_call_whichever_limit_admitted_it() {
        let slots = CallSlots::new(1);
        let old = admitted(&slots).await;
        slots.resize(3);
        let new = admitted(&slots).await;
        let waiting = slots.enter();
        assert_eq!(slots.running(), 3);
        assert!(tokio::time::timeout(Duration::from_millis(20), slots.idle()).await.is_err());
        drop((old, new, waiting));
        tokio::time::timeout(Duration::from_secs(1), slots.idle()).await.expect("idle once every call ended");
    }
}
