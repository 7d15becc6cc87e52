//! Audit sinks: JSON lines to stdout or a file, written off the request path.
//!
//! Requests append records to a bounded queue; one thread takes the whole queue at a
//! time, serialises it (computing the pending digests), writes and flushes it, then lets
//! the next records gather for [`GATHER`]. A request wakes the thread only when it finds
//! it asleep on an empty queue, so under load records cross threads in batches, not a
//! hand-off (and a context switch) each. [`AuditWriter::close`] drains and flushes, so
//! every record of an accepted call survives a clean shutdown.

use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use bondry_core::audit::{AuditRecord, AuditSink};

/// Records waiting for the writer thread, at most: with the values of pending digests at
/// most [`bondry_core::audit::Digest::DEFER_LIMIT`] each, the queue's memory is bounded.
const QUEUE: usize = 512;

/// How long the writer lets records gather after writing a batch: it bounds the writer's
/// wake-ups to a few hundred a second, and how long a record waits to be written.
const GATHER: Duration = Duration::from_millis(2);

/// How much of a batch the writer holds before writing it out. A batch at 40,000 calls a
/// second (about 36 KB) fits, so it goes out in one write, not five: each is a system call
/// and an event for every watch on the file's directory.
const BUFFER: usize = 128 * 1024;

/// Writes audit records as JSON lines from a dedicated thread.
pub struct AuditWriter {
    queue: Arc<Queue>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What requests and the writer share.
struct Queue {
    pending: Mutex<Pending>,
    /// The writer waits here for a first record.
    filled: Condvar,
    /// Requests wait here for room when the writer falls behind.
    drained: Condvar,
}

#[derive(Default)]
struct Pending {
    records: Vec<AuditRecord>,
    /// The writer is asleep on an empty queue: the next record must wake it.
    writer_asleep: bool,
    /// Requests waiting for room.
    waiting: usize,
    closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next batch, waiting for one; `None` once closed and drained.
    fn take(&self) -> Option<Vec<AuditRecord>> {
        let mut pending = self.lock();
        while pending.records.is_empty() {
            if pending.closed {
                return None;
            }
            pending.writer_asleep = true;
            pending = self.filled.wait(pending).unwrap_or_else(|poisoned| poisoned.into_inner());
            pending.writer_asleep = false;
        }
        if pending.waiting > 0 {
            self.drained.notify_all();
        }
        Some(std::mem::take(&mut pending.records))
    }
}

impl AuditWriter {
    /// Records go to standard output.
    pub fn stdout() -> Self {
        Self::spawn(Box::new(io::stdout()))
    }

    /// Records are appended to the file at `path`, created if absent.
    pub fn file(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self::spawn(Box::new(file)))
    }

    fn spawn(out: Box<dyn Write + Send>) -> Self {
        let queue = Arc::new(Queue { pending: Mutex::default(), filled: Condvar::new(), drained: Condvar::new() });
        let thread = std::thread::Builder::new()
            .name("bondry-audit".into())
            .spawn({
                let queue = Arc::clone(&queue);
                move || {
                    let mut out = BufWriter::with_capacity(BUFFER, out);
                    while let Some(batch) = queue.take() {
                        for record in batch {
                            write_line(&mut out, &record);
                        }
                        if let Err(error) = out.flush() {
                            tracing::error!(%error, "audit sink: flush failed");
                        }
                        std::thread::sleep(GATHER);
                    }
                }
            })
            .expect("the audit thread starts");
        Self { queue, thread: Mutex::new(Some(thread)) }
    }

    /// Stops accepting records, writes those pending and flushes.
    pub fn close(&self) {
        self.queue.lock().closed = true;
        self.queue.filled.notify_all();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

fn write_line(out: &mut impl Write, record: &AuditRecord) {
    let written = serde_json::to_writer(&mut *out, record).map_err(io::Error::from).and_then(|()| out.write_all(b"\n"));
    if let Err(error) = written {
        tracing::error!(%error, "audit sink: write failed");
    }
}

impl AuditSink for AuditWriter {
    /// Bounded: when the sink falls behind, calls wait for it rather than records piling
    /// up in memory or being dropped.
    fn record(&self, record: AuditRecord) {
        let mut pending = self.queue.lock();
        while pending.records.len() >= QUEUE && !pending.closed {
            pending.waiting += 1;
            pending = self.queue.drained.wait(pending).unwrap_or_else(|poisoned| poisoned.into_inner());
            pending.waiting -= 1;
        }
        if pending.closed {
            drop(pending);
            tracing::warn!("audit record after the sink closed; dropped");
            return;
        }
        pending.records.push(record);
        if pending.writer_asleep {
            pending.writer_asleep = false;
            self.queue.filled.notify_one();
        }
    }
}

impl Drop for AuditWriter {
    fn drop(&mut self) {
        self.close();
    }
}

/// Discards every record (`[audit] sink = "off"`).
pub struct NoAudit;

impl AuditSink for NoAudit {
    fn record(&self, _record: AuditRecord) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    /// A shared buffer the writer thread writes into.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_record_accepted_is_written_by_close_even_past_the_queue() {
        let out = Shared::default();
        let writer = Arc::new(AuditWriter::spawn(Box::new(out.clone())));
        let record = || AuditRecord::unauthenticated(SystemTime::UNIX_EPOCH, "default", "mcp");
        let senders: Vec<_> = (0..4)
            .map(|_| {
                let writer = Arc::clone(&writer);
                std::thread::spawn(move || (0..QUEUE).for_each(|_| writer.record(record())))
            })
            .collect();
        senders.into_iter().for_each(|sender| sender.join().unwrap());
        writer.close();
        writer.record(record());
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 4 * QUEUE, "every record once, none after the close");
        assert!(text.lines().all(|line| line.contains(r#""outcome":"unauthenticated""#)));
    }
}
