//! Audit sinks: JSON lines to stdout or a file, the writing off the request path.
//!
//! A request writes its own record's line, computing the pending digests, and appends it
//! to a bounded buffer; one thread takes the whole buffer at a time, writes and flushes
//! it, then lets the next lines gather for [`GATHER`]. A request wakes the thread only
//! when it finds it asleep on an empty buffer, so under load lines cross threads in
//! batches, not a hand-off (and a context switch) each. [`AuditWriter::close`] drains and
//! flushes, so every record of an accepted call survives a clean shutdown, those of
//! calls waiting for room included.
//!
//! Why the request formats its own line rather than the thread: a thread that formats
//! whole batches holds a core shared with the runtime's workers for a batch's length
//! (0.4–1 ms at 30,000 calls a second), while every call in flight waits; formatting on
//! the request's own thread spreads the same work evenly, grows with the runtime's
//! workers instead of one thread's speed, and frees each record's values where they were
//! made (bench/README.md, "2026-12-04").

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use bondry_core::audit::{AuditCounts, AuditRecord, AuditSink};

/// Bytes of lines waiting for the writer thread, past which a request waits for it: about
/// 2,000 records of a typical call, 50 ms of them at 40,000 calls a second. Beside them
/// the writer holds the batch it is writing, so the sink holds about twice this, plus
/// the line of each call waiting for room.
const LIMIT: usize = 1024 * 1024;

/// How long the writer lets lines gather after writing a batch: it bounds the writer's
/// wake-ups to a few hundred a second, and how long a line waits to be written.
const GATHER: Duration = Duration::from_millis(2);

/// A line's first allocation: a call's record with both digests, a trace id and its
/// backend fits (about 550 bytes).
const LINE: usize = 640;

/// Writes audit records as JSON lines, the writing from a dedicated thread.
pub struct AuditWriter {
    queue: Arc<Queue>,
    thread: Mutex<Option<JoinHandle<()>>>,
    counted: Arc<Counted>,
}

/// Records written and dropped so far, for the metrics.
#[derive(Default)]
struct Counted {
    written: AtomicU64,
    dropped: AtomicU64,
}

impl Counted {
    fn dropped(&self, records: usize) {
        self.dropped.fetch_add(records as u64, Ordering::Relaxed);
    }
}

/// What requests and the writer share.
struct Queue {
    pending: Mutex<Pending>,
    /// The writer waits here for a first line.
    filled: Condvar,
    /// Requests wait here for room when the writer falls behind.
    drained: Condvar,
}

#[derive(Default)]
struct Pending {
    /// Whole lines, each ending in a newline.
    lines: Vec<u8>,
    /// The writer is asleep on an empty buffer: the next line must wake it.
    writer_asleep: bool,
    /// Requests waiting for room.
    waiting: usize,
    closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Swaps the waiting lines into `batch` (empty, its capacity kept from the last
    /// batch), waiting for some; `false` once closed and drained.
    fn take(&self, batch: &mut Vec<u8>) -> bool {
        let mut pending = self.lock();
        while pending.lines.is_empty() {
            // Calls that waited for room before the close still bring their lines.
            if pending.closed && pending.waiting == 0 {
                return false;
            }
            pending.writer_asleep = true;
            pending = self.filled.wait(pending).unwrap_or_else(|poisoned| poisoned.into_inner());
            pending.writer_asleep = false;
        }
        if pending.waiting > 0 {
            self.drained.notify_all();
        }
        std::mem::swap(&mut pending.lines, batch);
        true
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
        let counted = Arc::new(Counted::default());
        let thread = std::thread::Builder::new()
            .name("bondry-audit".into())
            .spawn({
                let queue = Arc::clone(&queue);
                let counted = Arc::clone(&counted);
                move || {
                    let mut sink = Sink { out, torn: false, failing: false, lost: 0, counted };
                    let mut batch = Vec::new();
                    while queue.take(&mut batch) {
                        sink.write(&batch);
                        batch.clear();
                        std::thread::sleep(GATHER);
                    }
                }
            })
            .expect("the audit thread starts");
        Self { queue, thread: Mutex::new(Some(thread)), counted }
    }

    /// Stops accepting records, writes those pending and flushes.
    pub fn close(&self) {
        self.queue.lock().closed = true;
        self.queue.filled.notify_all();
        self.queue.drained.notify_all();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

/// Where the writer thread writes.
struct Sink {
    out: Box<dyn Write + Send>,
    /// The last write broke off inside a line.
    torn: bool,
    /// The last write failed: the failure is logged once, not per batch.
    failing: bool,
    /// Records lost since the failure, logged when writing recovers.
    lost: usize,
    counted: Arc<Counted>,
}

impl Sink {
    /// Writes a batch of whole lines. A batch that fails is lost, counted in the log; the
    /// next starts on a line of its own, so one torn record never spoils another.
    fn write(&mut self, batch: &[u8]) {
        let mut written = 0;
        let result = self.write_counted(batch, &mut written);
        let records = lines(batch);
        let whole = if written == batch.len() { records } else { lines(&batch[..written]) };
        self.counted.written.fetch_add(whole as u64, Ordering::Relaxed);
        self.counted.dropped(records - whole);
        match result {
            Ok(()) if self.failing => {
                tracing::warn!(lost = self.lost, "audit sink: writing again");
                self.failing = false;
                self.lost = 0;
            }
            Ok(()) => {}
            Err(error) => {
                // Nothing of the batch written: the line before it is as it was.
                if written > 0 {
                    self.torn = batch[written - 1] != b'\n';
                }
                self.lost += lines(&batch[written..]);
                if !self.failing {
                    tracing::error!(%error, "audit sink: write failed; records are lost until it recovers");
                }
                self.failing = true;
            }
        }
    }

    /// `write_all` and `flush`, counting in `written` how much of `batch` went out.
    fn write_counted(&mut self, batch: &[u8], written: &mut usize) -> io::Result<()> {
        if self.torn {
            self.out.write_all(b"\n")?;
            self.torn = false;
        }
        while *written < batch.len() {
            match self.out.write(&batch[*written..]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => *written += n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        self.out.flush()
    }
}

/// How many lines end in `bytes`.
fn lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&byte| byte == b'\n').count()
}

/// The record as one JSON line, its pending digests computed.
fn line(record: &AuditRecord) -> Option<Vec<u8>> {
    let mut line = Vec::with_capacity(LINE);
    match serde_json::to_writer(&mut line, record) {
        Ok(()) => {
            line.push(b'\n');
            Some(line)
        }
        Err(error) => {
            tracing::error!(%error, "audit sink: a record could not be written");
            None
        }
    }
}

impl AuditSink for AuditWriter {
    /// Bounded: when the sink falls behind, calls wait for it rather than lines piling up
    /// in memory or being dropped.
    fn record(&self, record: AuditRecord) {
        let Some(line) = line(&record) else {
            self.counted.dropped(1);
            return;
        };
        // Its values are freed before the lock is taken.
        drop(record);
        let mut pending = self.queue.lock();
        if pending.closed {
            drop(pending);
            self.counted.dropped(1);
            tracing::warn!("audit record after the sink closed; dropped");
            return;
        }
        // The writer drains until no call waits, closed or not.
        while pending.lines.len() >= LIMIT {
            pending.waiting += 1;
            pending = self.queue.drained.wait(pending).unwrap_or_else(|poisoned| poisoned.into_inner());
            pending.waiting -= 1;
        }
        pending.lines.extend_from_slice(&line);
        if pending.writer_asleep {
            pending.writer_asleep = false;
            self.queue.filled.notify_one();
        }
    }

    fn counts(&self) -> Option<AuditCounts> {
        let Counted { written, dropped } = &*self.counted;
        Some(AuditCounts { written: written.load(Ordering::Relaxed), dropped: dropped.load(Ordering::Relaxed) })
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
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::{Instant, SystemTime};

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

    /// Writes into `out` once `open` is sent.
    struct Gate {
        open: Option<mpsc::Receiver<()>>,
        out: Shared,
    }

    impl Write for Gate {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if let Some(open) = self.open.take() {
                open.recv().unwrap();
            }
            self.out.write(bytes)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn record() -> AuditRecord {
        AuditRecord::unauthenticated(SystemTime::UNIX_EPOCH, "default", "mcp")
    }

    /// Whether `condition` holds within ten seconds.
    fn eventually(mut condition: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !condition() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// How many records' lines the buffer holds before requests wait.
    fn records_in_limit() -> usize {
        LIMIT / line(&record()).unwrap().len()
    }

    #[test]
    fn close_writes_the_records_of_calls_waiting_for_room() {
        let (open, gate) = mpsc::channel();
        let out = Shared::default();
        let writer = Arc::new(AuditWriter::spawn(Box::new(Gate { open: Some(gate), out: out.clone() })));
        // The writer takes one record and is stuck writing it.
        writer.record(record());
        assert!(eventually(|| writer.queue.lock().lines.is_empty()), "the writer took the first record");
        let total = 3 * records_in_limit();
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let writer = Arc::clone(&writer);
                std::thread::spawn(move || (0..total / 2).for_each(|_| writer.record(record())))
            })
            .collect();
        assert!(eventually(|| writer.queue.lock().waiting == 2), "both calls wait for room");
        let held = writer.queue.lock().lines.iter().filter(|&&byte| byte == b'\n').count();
        let closing = std::thread::spawn({
            let writer = Arc::clone(&writer);
            move || writer.close()
        });
        assert!(eventually(|| writer.queue.lock().closed), "the sink closed");
        open.send(()).unwrap();
        closing.join().unwrap();
        senders.into_iter().for_each(|sender| sender.join().unwrap());
        writer.record(record());
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        // The first record, those held, and the two waiting at the close; none after it.
        assert_eq!(text.lines().count(), 1 + held + 2);
        assert!(text.lines().all(|line| line.contains(r#""outcome":"unauthenticated""#)));
    }

    /// Takes part of the first write, fails the next `failures`, then writes everything.
    struct Flaky {
        writes: usize,
        failures: usize,
        out: Shared,
    }

    impl Write for Flaky {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            if self.writes == 1 {
                self.out.write(&bytes[..bytes.len().min(20)])
            } else if self.writes <= 1 + self.failures {
                Err(io::Error::other("disk full"))
            } else {
                self.out.write(bytes)
            }
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_never_glues_records_together() {
        // The second failure is the line break owed after the torn record.
        for failures in [1, 2] {
            let out = Shared::default();
            let writer = AuditWriter::spawn(Box::new(Flaky { writes: 0, failures, out: out.clone() }));
            for _ in 0..failures {
                writer.record(record());
                std::thread::sleep(Duration::from_millis(50));
            }
            (0..3).for_each(|_| writer.record(record()));
            writer.close();
            let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 4, "the torn line, then the three after the failures: {text}");
            assert!(serde_json::from_str::<serde_json::Value>(lines[0]).is_err());
            assert!(lines[1..].iter().all(|line| serde_json::from_str::<serde_json::Value>(line).is_ok()), "{text}");
        }
    }

    #[test]
    fn a_stuck_sink_makes_calls_wait_at_the_limit() {
        let (open, gate) = mpsc::channel();
        let out = Shared::default();
        let writer = Arc::new(AuditWriter::spawn(Box::new(Gate { open: Some(gate), out: out.clone() })));
        let accepted = Arc::new(AtomicUsize::new(0));
        let total = 3 * records_in_limit();
        let sender = std::thread::spawn({
            let (writer, accepted) = (Arc::clone(&writer), Arc::clone(&accepted));
            move || {
                for _ in 0..total {
                    writer.record(record());
                    accepted.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        eventually(|| accepted.load(Ordering::SeqCst) >= records_in_limit());
        std::thread::sleep(Duration::from_millis(100));
        // The batch the writer is stuck on, and at most a full buffer beside it.
        let held = accepted.load(Ordering::SeqCst);
        assert!(held >= records_in_limit(), "the buffer filled: {held}");
        assert!(held <= 2 * (records_in_limit() + 1), "calls waited at the limit: {held} accepted");
        open.send(()).unwrap();
        sender.join().unwrap();
        writer.close();
        let written = String::from_utf8(out.0.lock().unwrap().clone()).unwrap().lines().count();
        assert_eq!(written, total, "nothing accepted is lost");
    }
}
