//! Reading a `text/event-stream` body: events from bytes, bounded.
//!
//! The fields of the SSE standard that MCP uses: `data` (lines joined with `\n`), `id`
//! (the last one seen is kept for `Last-Event-ID`), `event` (the type; `message` when
//! absent), `retry` (the reconnection delay); lines starting with `:` are comments.
//! An event's data is held up to the cap: a larger one is delivered as
//! [`Data::Overlong`] with its first bytes, so the reader can log it and tell which
//! request it answered. Lines end at LF or CRLF; a lone CR does not end one.

use std::time::Duration;

use super::lines::{Line, LineSplitter};

/// Room a line has beyond the data cap, for its field name (`data: `).
const FIELD_ROOM: usize = 16;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub kind: String,
    pub data: Data,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Data {
    Whole(Vec<u8>),
    /// More than the cap: the first bytes of it.
    Overlong {
        prefix: Vec<u8>,
    },
}

#[derive(Debug)]
pub(crate) struct SseDecoder {
    cap: usize,
    lines: LineSplitter,
    data: Vec<u8>,
    has_data: bool,
    overlong: bool,
    kind: Option<String>,
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

impl SseDecoder {
    /// A decoder holding at most `cap` bytes of one event's data.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            lines: LineSplitter::new(cap.saturating_add(FIELD_ROOM)),
            data: Vec::new(),
            has_data: false,
            overlong: false,
            kind: None,
            last_event_id: None,
            retry: None,
        }
    }

    /// Reads `chunk`, appending every event it completes to `events`.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], events: &mut Vec<Event>) {
        while !chunk.is_empty() {
            let (used, line) = self.lines.feed(chunk);
            chunk = &chunk[used..];
            if let Some(line) = line {
                self.line(line, events);
            }
        }
    }

    /// The `id` of the last event that had one: what a reconnection sends as `Last-Event-ID`.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref().filter(|id| !id.is_empty())
    }

    /// The reconnection delay the server asked for, if it did.
    pub(crate) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    fn line(&mut self, line: Line, events: &mut Vec<Event>) {
        match line {
            Line::Whole(line) if line.is_empty() => self.dispatch(events),
            Line::Whole(line) => self.field(&line),
            Line::Overlong { prefix, .. } => {
                // Only a data line is worth keeping a part of; any other field that long is noise.
                if let Some(value) = prefix.strip_prefix(b"data:") {
                    self.overlong = true;
                    self.append(value.strip_prefix(b" ").unwrap_or(value));
                }
            }
        }
    }

    fn field(&mut self, line: &[u8]) {
        if line.starts_with(b":") {
            return;
        }
        let (name, value) = match line.iter().position(|&byte| byte == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => self.append(value),
            b"id" if !value.contains(&0) => self.last_event_id = Some(String::from_utf8_lossy(value).into_owned()),
            b"event" => self.kind = Some(String::from_utf8_lossy(value).into_owned()),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|ms| ms.parse().ok()).map(Duration::from_millis);
            }
            _ => {}
        }
    }

    fn append(&mut self, value: &[u8]) {
        if self.has_data {
            self.data.push(b'\n');
        }
        self.has_data = true;
        self.data.extend_from_slice(value);
        if self.data.len() > self.cap {
            self.overlong = true;
            self.data.truncate(self.cap);
        }
    }

    fn dispatch(&mut self, events: &mut Vec<Event>) {
        let kind = self.kind.take().filter(|kind| !kind.is_empty()).unwrap_or_else(|| "message".to_owned());
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        let data = std::mem::take(&mut self.data);
        let data = if std::mem::take(&mut self.overlong) { Data::Overlong { prefix: data } } else { Data::Whole(data) };
        events.push(Event { kind, data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(cap: usize, chunks: &[&str]) -> (Vec<Event>, SseDecoder) {
        let mut decoder = SseDecoder::new(cap);
        let mut events = Vec::new();
        for chunk in chunks {
            decoder.feed(chunk.as_bytes(), &mut events);
        }
        (events, decoder)
    }

    fn message(data: &str) -> Event {
        Event { kind: "message".into(), data: Data::Whole(data.as_bytes().to_vec()) }
    }

    #[test]
    fn reads_event_data_and_id_fields() {
        let (events, decoder) = decode(1024, &["event: message\nid: 7\ndata: {\"a\":1}\n\n", "data:{}\n\n"]);
        assert_eq!(events, [message("{\"a\":1}"), message("{}")]);
        assert_eq!(decoder.last_event_id(), Some("7"));
    }

    #[test]
    fn joins_multi_line_data_with_newlines() {
        let (events, _) = decode(1024, &["data: one\ndata:  two\ndata\n\n"]);
        assert_eq!(events, [message("one\n two\n")]);
    }

    #[test]
    fn skips_comments_and_events_without_data() {
        let (events, decoder) =
            decode(1024, &[": keep-alive\n\n", "id: prime\ndata\n", "\n", "id: 9\n\n", ":x\ndata: m\n\n"]);
        assert_eq!(events, [message(""), message("m")]);
        assert_eq!(decoder.last_event_id(), Some("9"), "an id without data still moves the cursor");
    }

    #[test]
    fn handles_crlf_split_anywhere() {
        let text = "event: message\r\nid: 3\r\ndata: {\"b\":2}\r\n\r\n";
        for at in 0..text.len() {
            let (events, decoder) = decode(1024, &[&text[..at], &text[at..]]);
            assert_eq!(events, [message("{\"b\":2}")], "split at {at}");
            assert_eq!(decoder.last_event_id(), Some("3"));
        }
    }

    #[test]
    fn keeps_the_type_and_the_retry() {
        let (events, decoder) = decode(1024, &["retry: 1500\nevent: ping\ndata: x\n\nretry: soon\n"]);
        assert_eq!(events, [Event { kind: "ping".into(), data: Data::Whole(b"x".to_vec()) }]);
        assert_eq!(decoder.retry(), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn an_event_over_the_cap_keeps_its_prefix_and_the_next_is_whole() {
        let big = format!("data: {}\n\n", "y".repeat(100));
        let (events, _) = decode(10, &[&big, "data: small\n\n"]);
        assert_eq!(
            events,
            [
                Event { kind: "message".into(), data: Data::Overlong { prefix: b"yyyyyyyyyy".to_vec() } },
                message("small")
            ]
        );
        let many_lines = "data: 123456\ndata: 123456\n\n";
        let (events, _) = decode(10, &[many_lines]);
        assert_eq!(
            events,
            [Event { kind: "message".into(), data: Data::Overlong { prefix: b"123456\n123".to_vec() } }]
        );
    }
}
