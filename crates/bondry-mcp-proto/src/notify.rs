//! Progress and log notifications about a running request, rendered for the wire.
//!
//! A client asks for them: progress by naming a `progressToken` in the request's
//! `_meta`, log messages with `_meta[logLevel]` (modern) or `logging/setLevel` (in a
//! session). A notification nobody asked for is never rendered, so nothing is sent.

use bondry_core::handler::LogLevel;
use serde_json::{Map, Value, json};

/// What one request asked to hear while it runs.
#[derive(Debug, Clone, Default)]
pub struct Notifier {
    progress_token: Option<Value>,
    log_level: Option<LogLevel>,
}

impl Notifier {
    pub fn new(progress_token: Option<Value>, log_level: Option<LogLevel>) -> Self {
        Self { progress_token, log_level }
    }

    /// Whether the request named a progress token.
    pub fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    /// The least severe level of log messages the request asked for.
    pub fn log_level(&self) -> Option<LogLevel> {
        self.log_level
    }

    /// Whether any notification could be sent.
    pub fn wants_any(&self) -> bool {
        self.progress_token.is_some() || self.log_level.is_some()
    }

    /// `notifications/progress`, when the request named a progress token. A value that is
    /// not a finite number is not sent.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Option<String> {
        let token = self.progress_token.as_ref()?;
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), finite(progress)?);
        if let Some(total) = total.and_then(finite) {
            params.insert("total".into(), total);
        }
        if let Some(message) = message {
            params.insert("message".into(), json!(message));
        }
        Some(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}).to_string())
    }

    /// `notifications/message`, when the client asked for messages of this level.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: &Value) -> Option<String> {
        if level < self.log_level? {
            return None;
        }
        let mut params = Map::new();
        params.insert("level".into(), json!(level.as_str()));
        if let Some(logger) = logger {
            params.insert("logger".into(), json!(logger));
        }
        params.insert("data".into(), data.clone());
        Some(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params}).to_string())
    }
}

fn finite(number: f64) -> Option<Value> {
    serde_json::Number::from_f64(number).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_was_asked_for_is_rendered() {
        let silent = Notifier::default();
        assert!(!silent.wants_any());
        assert_eq!(silent.progress(1.0, None, None), None);
        assert_eq!(silent.log(LogLevel::Emergency, None, &json!("x")), None);

        let asked = Notifier::new(Some(json!("t-1")), Some(LogLevel::Info));
        let progress: Value = serde_json::from_str(&asked.progress(50.0, Some(100.0), Some("half")).unwrap()).unwrap();
        assert_eq!(
            progress["params"],
            json!({"progressToken": "t-1", "progress": 50.0, "total": 100.0, "message": "half"})
        );
        assert_eq!(asked.progress(f64::NAN, None, None), None);
        assert_eq!(asked.log(LogLevel::Debug, None, &json!("quiet")), None);
        let log: Value =
            serde_json::from_str(&asked.log(LogLevel::Warning, Some("db"), &json!({"n": 1})).unwrap()).unwrap();
        assert_eq!(log["params"], json!({"level": "warning", "logger": "db", "data": {"n": 1}}));
    }
}
