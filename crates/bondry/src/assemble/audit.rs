//! The `[audit]` section: where audit records go, checked first and opened last, so that
//! a refused configuration opens no file.

use std::path::PathBuf;
use std::sync::Arc;

use bondry_core::audit::AuditSink;
use bondry_http_server::audit::{AuditWriter, NoAudit};

use crate::config::diagnostics::Diagnostics;
use crate::config::{AuditSinkKind, Loaded};

/// Where the records go, as checked.
pub(super) enum Destination {
    Off,
    Stdout,
    /// Resolved against the configuration's directory.
    File(PathBuf),
}

/// `sink` and `path`, which come together.
pub(super) fn destination(diagnostics: &mut Diagnostics, loaded: &Loaded) -> Option<Destination> {
    let audit = &loaded.raw.audit;
    match (audit.sink, &audit.path) {
        (AuditSinkKind::File, None) => {
            diagnostics
                .refuse("audit.path", "sink = \"file\" needs a path; add path = \"/var/log/bondry/audit.jsonl\"");
            None
        }
        (AuditSinkKind::Stdout | AuditSinkKind::Off, Some(path)) => {
            diagnostics.refuse(
                "audit.path",
                format!("{:?} is only used with sink = \"file\"; remove it or set sink = \"file\"", path.display()),
            );
            None
        }
        (AuditSinkKind::Off, None) => Some(Destination::Off),
        (AuditSinkKind::Stdout, None) => Some(Destination::Stdout),
        (AuditSinkKind::File, Some(path)) => Some(Destination::File(loaded.base_dir.join(path))),
    }
}

/// What the runtime records to, and the writer to close last (none when nothing was opened).
pub(super) struct Sink {
    pub records: Arc<dyn AuditSink>,
    pub writer: Option<Arc<AuditWriter>>,
}

/// Opens the destination. Nothing is opened unless `open`: `check` and reloads record
/// nowhere.
pub(super) fn open(diagnostics: &mut Diagnostics, destination: Destination, open: bool) -> Option<Sink> {
    let nowhere = || Some(Sink { records: Arc::new(NoAudit), writer: None });
    let writer = match destination {
        _ if !open => return nowhere(),
        Destination::Off => return nowhere(),
        Destination::Stdout => AuditWriter::stdout(),
        Destination::File(path) => match AuditWriter::file(&path) {
            Ok(writer) => writer,
            Err(error) => {
                diagnostics.refuse("audit.path", format!("cannot open {:?} for appending: {error}", path.display()));
                return None;
            }
        },
    };
    let writer = Arc::new(writer);
    Some(Sink { records: writer.clone(), writer: Some(writer) })
}
