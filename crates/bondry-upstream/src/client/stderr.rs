//! A stdio child's stderr in Bondry's log: each line escaped (no control character
//! reaches the log), cut at [`LINE_CAP`], at most [`LINES_PER_SECOND`] a second with a
//! count of the lines dropped, under the upstream's name.

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use super::lines::{Line, LineSplitter};

pub(crate) const LINE_CAP: usize = 4096;
pub(crate) const LINES_PER_SECOND: u32 = 20;

/// Logs the lines of `stderr` until it ends.
pub(crate) async fn log_lines(upstream: String, stderr: impl AsyncRead + Unpin) {
    let mut reader = BufReader::new(stderr);
    let mut lines = LineSplitter::new(LINE_CAP);
    let mut limit = RateLimit::new(LINES_PER_SECOND, Duration::from_secs(1));
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(chunk) => chunk,
        };
        let (used, line) = lines.feed(chunk);
        reader.consume(used);
        if let Some(line) = line {
            log(&upstream, line, &mut limit, Instant::now());
        }
    }
    if let Some(line) = lines.finish() {
        log(&upstream, line, &mut limit, Instant::now());
    }
    if limit.dropped > 0 {
        tracing::warn!(upstream, dropped = limit.dropped, "upstream stderr: lines dropped (over the rate)");
    }
}

fn log(upstream: &str, line: Line, limit: &mut RateLimit, now: Instant) {
    match limit.admit(now) {
        Admit::No => {}
        Admit::Yes { dropped_before } => {
            if dropped_before > 0 {
                tracing::warn!(upstream, dropped = dropped_before, "upstream stderr: lines dropped (over the rate)");
            }
            match line {
                Line::Whole(line) => tracing::info!(upstream, "upstream stderr: {}", escape(&line)),
                Line::Overlong { prefix, length } => {
                    tracing::info!(upstream, length, "upstream stderr (cut): {}", escape(&prefix))
                }
            }
        }
    }
}

/// `line` as text with every control character written as an escape (`\u{1b}`, `\n`).
pub(crate) fn escape(line: &[u8]) -> String {
    let mut escaped = String::with_capacity(line.len());
    for c in String::from_utf8_lossy(line).chars() {
        if c.is_control() {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// At most `per_window` admissions in each window, counting the refused ones.
#[derive(Debug)]
struct RateLimit {
    per_window: u32,
    window: Duration,
    started: Option<Instant>,
    admitted: u32,
    dropped: u64,
}

#[derive(Debug, PartialEq, Eq)]
enum Admit {
    /// Admitted; `dropped_before` lines were refused since the last admission.
    Yes {
        dropped_before: u64,
    },
    No,
}

impl RateLimit {
    fn new(per_window: u32, window: Duration) -> Self {
        Self { per_window, window, started: None, admitted: 0, dropped: 0 }
    }

    fn admit(&mut self, now: Instant) -> Admit {
        if self.started.is_none_or(|started| now.duration_since(started) >= self.window) {
            self.started = Some(now);
            self.admitted = 0;
        }
        if self.admitted >= self.per_window {
            self.dropped += 1;
            return Admit::No;
        }
        self.admitted += 1;
        Admit::Yes { dropped_before: std::mem::take(&mut self.dropped) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_control_character() {
        assert_eq!(escape(b"plain text"), "plain text");
        assert_eq!(escape(b"\x1b[31mred\x1b[0m\tand\r\x07"), "\\u{1b}[31mred\\u{1b}[0m\\tand\\r\\u{7}");
        assert_eq!(escape("é \u{85}".as_bytes()), "é \\u{85}");
        assert_eq!(escape(b"\xff ok"), "\u{fffd} ok");
        assert!(escape(&(0u8..=255).collect::<Vec<_>>()).chars().all(|c| !c.is_control()));
    }

    #[test]
    fn admits_a_burst_then_counts_what_it_drops() {
        let mut limit = RateLimit::new(3, Duration::from_secs(1));
        let start = Instant::now();
        let admitted: Vec<Admit> = (0..5).map(|_| limit.admit(start)).collect();
        assert_eq!(
            admitted[..3],
            [Admit::Yes { dropped_before: 0 }, Admit::Yes { dropped_before: 0 }, Admit::Yes { dropped_before: 0 }]
        );
        assert_eq!(admitted[3..], [Admit::No, Admit::No]);
        assert_eq!(limit.admit(start + Duration::from_millis(1000)), Admit::Yes { dropped_before: 2 });
    }
}
