//! The log on stderr: text for a terminal, or one JSON object per line for a log shipper
//! (`log_format = "json"`), `RUST_LOG` filtering both. The format is chosen once the
//! configuration is read, so the log starts as text and is switched before anything the
//! configuration causes is logged.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry, reload};

use crate::config::LogFormat;

type Filtered = tracing_subscriber::layer::Layered<EnvFilter, Registry>;
type Format = Box<dyn Layer<Filtered> + Send + Sync>;

/// The process's log, whose format can be chosen once.
pub struct Logging {
    format: reload::Handle<Format, Filtered>,
}

/// Starts the log: text on stderr, filtered by `RUST_LOG` (`info` without it).
pub fn init() -> Logging {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let (format, handle) = reload::Layer::new(layer(LogFormat::Text));
    tracing_subscriber::registry().with(filter).with(format).init();
    Logging { format: handle }
}

impl Logging {
    /// Writes every later line in `format`. In JSON, a panic (a handler's, which the
    /// call survives) is logged as one line too, not as the default hook's text.
    pub fn use_format(&self, format: LogFormat) {
        if format != LogFormat::Text {
            // The layer is ours and lives as long as the process: a swap cannot fail.
            let _ = self.format.reload(layer(format));
            std::panic::set_hook(Box::new(|panic| tracing::error!(panic = %panic, "panicked")));
        }
    }
}

fn layer(format: LogFormat) -> Format {
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    match format {
        LogFormat::Text => Box::new(layer.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))),
        LogFormat::Json => Box::new(layer.with_ansi(false).event_format(JsonLines)),
    }
}

/// One JSON object per event: `time`, `level`, `target`, `message`, then the event's
/// fields by name (an upstream's name as `backend`, like every backend's).
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> std::fmt::Result {
        let metadata = event.metadata();
        let mut line = Map::new();
        line.insert("time".into(), humantime::format_rfc3339_millis(SystemTime::now()).to_string().into());
        line.insert("level".into(), metadata.level().as_str().into());
        line.insert("target".into(), metadata.target().into());
        line.insert("message".into(), Value::Null);
        event.record(&mut Fields(&mut line));
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// Records an event's fields into its line.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Fields<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        let name = match field.name() {
            "upstream" => "backend",
            // The line's own members keep their meaning.
            name @ ("time" | "level" | "target") => return drop(self.0.insert(format!("field.{name}"), value)),
            name => name,
        };
        self.0.insert(name.to_owned(), value);
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.put(field, text.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What the test's log wrote.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Kept {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn each_event_is_one_object_with_its_fields_and_the_backend_named_so() {
        let kept = Kept::default();
        let writer = kept.clone();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_writer(move || writer.clone()).event_format(JsonLines));
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(upstream = "everything", realm = "default", retry_ms = 500_u64, "connecting\nagain");
            tracing::info!(level = "a field", error = ?"quoted \"words\"", "second");
        });
        let text = String::from_utf8(kept.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["level"], "WARN");
        assert_eq!(lines[0]["target"], module_path!());
        assert_eq!(lines[0]["message"], "connecting\nagain");
        assert_eq!(
            (&lines[0]["backend"], &lines[0]["realm"], &lines[0]["retry_ms"]),
            (&json!("everything"), &json!("default"), &json!(500))
        );
        assert!(lines[0].get("upstream").is_none());
        assert!(humantime::parse_rfc3339(lines[0]["time"].as_str().unwrap()).is_ok());
        assert_eq!((&lines[1]["level"], &lines[1]["field.level"]), (&json!("INFO"), &json!("a field")));
        assert_eq!(lines[1]["error"], "\"quoted \\\"words\\\"\"");
    }

    use serde_json::json;
}
