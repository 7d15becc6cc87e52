//! Splitting a byte stream into lines without ever holding more than a cap of one.
//!
//! A line longer than the cap keeps its first `cap` bytes (enough to log it, or to read
//! which request it answers) and the rest is counted and discarded as it arrives. Lines
//! end at `\n`; a `\r` before it is removed, so CRLF and LF both work.

/// One line, without its terminator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    Whole(Vec<u8>),
    /// Longer than the cap: its first `cap` bytes, and its whole length.
    Overlong {
        prefix: Vec<u8>,
        length: usize,
    },
}

/// Push-based: [`LineSplitter::feed`] takes bytes up to the end of one line at a time.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    cap: usize,
    line: Vec<u8>,
    length: usize,
}

impl LineSplitter {
    pub(crate) fn new(cap: usize) -> Self {
        Self { cap, line: Vec::new(), length: 0 }
    }

    /// Consumes `input` up to and including its first `\n`: returns how many bytes were
    /// consumed, and the line if one ended.
    pub(crate) fn feed(&mut self, input: &[u8]) -> (usize, Option<Line>) {
        match input.iter().position(|&byte| byte == b'\n') {
            Some(end) => {
                self.keep(&input[..end]);
                (end + 1, Some(self.take()))
            }
            None => {
                self.keep(input);
                (input.len(), None)
            }
        }
    }

    /// The last line of a stream that ended without a terminator, if any.
    pub(crate) fn finish(&mut self) -> Option<Line> {
        (self.length > 0).then(|| self.take())
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.length += bytes.len();
    }

    fn take(&mut self) -> Line {
        let mut line = std::mem::take(&mut self.line);
        let length = std::mem::take(&mut self.length);
        if length > self.cap {
            return Line::Overlong { prefix: line, length };
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Line::Whole(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(cap: usize, chunks: &[&[u8]]) -> Vec<Line> {
        let mut splitter = LineSplitter::new(cap);
        let mut lines = Vec::new();
        for chunk in chunks {
            let mut rest = *chunk;
            while !rest.is_empty() {
                let (used, line) = splitter.feed(rest);
                rest = &rest[used..];
                lines.extend(line);
            }
        }
        lines.extend(splitter.finish());
        lines
    }

    #[test]
    fn splits_on_lf_and_crlf_across_chunks() {
        let lines = split(64, &[b"one\r\ntw", b"o\nthree\r", b"\n\nlast"]);
        let whole = |text: &str| Line::Whole(text.as_bytes().to_vec());
        assert_eq!(lines, [whole("one"), whole("two"), whole("three"), whole(""), whole("last")]);
    }

    #[test]
    fn an_overlong_line_keeps_only_its_prefix_and_the_next_line_is_whole() {
        let lines = split(4, &[b"abcdefgh", b"ij\nok\n"]);
        assert_eq!(lines, [Line::Overlong { prefix: b"abcd".to_vec(), length: 10 }, Line::Whole(b"ok".to_vec())]);
    }

    #[test]
    fn a_line_of_exactly_the_cap_is_whole() {
        assert_eq!(split(4, &[b"abcd\n"]), [Line::Whole(b"abcd".to_vec())]);
        assert_eq!(split(4, &[b"abcd\r\n"]), [Line::Overlong { prefix: b"abcd".to_vec(), length: 5 }]);
    }

    #[test]
    fn never_holds_more_than_the_cap() {
        let mut splitter = LineSplitter::new(8);
        for _ in 0..1000 {
            splitter.feed(&[b'x'; 1024]);
            assert!(splitter.line.len() <= 8);
        }
        assert_eq!(splitter.finish(), Some(Line::Overlong { prefix: vec![b'x'; 8], length: 1024 * 1000 }));
    }
}
