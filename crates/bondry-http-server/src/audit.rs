//! Audit sinks: JSON lines to stdout or a file, written off the request path.
//!
//! Requests hand records to a bounded channel; one thread serialises them (computing the
//! pending digests) and flushes whenever the channel runs dry. [`AuditWriter::close`] drains and flushes, so every record of an
//! accepted call survives a clean shutdown.

use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::mpsc::{self, SyncSender};
use std::thread::JoinHandle;

use bondry_core::audit::{AuditRecord, AuditSink};

/// Records waiting for the writer thread, at most.
const QUEUE: usize = 512;

/// Writes audit records as JSON lines from a dedicated thread.
pub struct AuditWriter {
    sender: Mutex<Option<SyncSender<AuditRecord>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
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
        // Bounded: when the sink falls behind, calls wait for it rather than records piling
        // up in memory or being dropped.
        let (sender, receiver) = mpsc::sync_channel::<AuditRecord>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("bondry-audit".into())
            .spawn(move || {
                let mut out = BufWriter::new(out);
                while let Ok(record) = receiver.recv() {
                    write_line(&mut out, &record);
                    while let Ok(record) = receiver.try_recv() {
                        write_line(&mut out, &record);
                    }
                    if let Err(error) = out.flush() {
                        tracing::error!(%error, "audit sink: flush failed");
                    }
                }
            })
            .expect("the audit thread starts");
        Self { sender: Mutex::new(Some(sender)), thread: Mutex::new(Some(thread)) }
    }

    /// Stops accepting records, writes those pending and flushes.
    pub fn close(&self) {
        drop(self.sender.lock().unwrap_or_else(|p| p.into_inner()).take());
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
    fn record(&self, record: AuditRecord) {
        let sender = self.sender.lock().unwrap_or_else(|p| p.into_inner());
        let sent = match sender.as_ref() {
            Some(sender) => sender.send(record).is_ok(),
            None => false,
        };
        if !sent {
            tracing::warn!("audit record after the sink closed; dropped");
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
