//! A stdio child's process group, and the signals that end it.
//!
//! Signals go through `rustix::process::kill_process_group` (safe `kill(-pgid, sig)`),
//! since the workspace forbids `unsafe`. The group is the child's own: it was started as
//! its leader (`process_group(0)`), so its pid is the group id.

use std::sync::atomic::{AtomicBool, Ordering};

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

/// Owned by the connection: dropped before being ended, it kills the whole group, so a
/// connection dropped without `close` leaves no grandchild behind.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    id: Option<Pid>,
    ended: AtomicBool,
}

impl ProcessGroup {
    pub(crate) fn of_leader(pid: Option<u32>) -> Self {
        let id = pid.and_then(|pid| i32::try_from(pid).ok()).and_then(Pid::from_raw);
        Self { id, ended: AtomicBool::new(false) }
    }

    pub(crate) fn id(&self) -> Option<i32> {
        self.id.map(Pid::as_raw_nonzero).map(i32::from)
    }

    pub(crate) fn terminate(&self) {
        self.signal(Signal::TERM);
    }

    pub(crate) fn kill(&self) {
        self.signal(Signal::KILL);
    }

    /// Whether no process of the group is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.id.is_none_or(|id| test_kill_process_group(id).is_err())
    }

    /// The group is gone: its id may be reused, so it is never signalled again.
    pub(crate) fn mark_ended(&self) {
        self.ended.store(true, Ordering::Release);
    }

    fn signal(&self, signal: Signal) {
        if let Some(id) = self.id.filter(|_| !self.ended.load(Ordering::Acquire)) {
            // ESRCH: the group is already gone, which is what ending it wants.
            let _ = kill_process_group(id, signal);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
