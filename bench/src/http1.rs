//! The load generator's HTTP/1.1 client: one keep-alive connection, requests written as
//! prepared bytes, responses framed by `content-length` or chunks and read into one
//! reused buffer.
//!
//! Hand-rolled because the generator must cost as little per request as the servers it
//! drives: no header map, no body type, no allocation on the steady path.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response head plus body accepted; a 200-tool page is about 100 KiB.
const MAX_RESPONSE: usize = 4 << 20;

/// One response, as offsets into the connection's buffer.
pub struct Response<'a> {
    pub status: u16,
    pub head: &'a str,
    pub body: &'a [u8],
}

impl Response<'_> {
    /// The value of header `name` (lower case), if the head has it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

pub struct Conn {
    stream: TcpStream,
    buffer: Vec<u8>,
    /// Bytes of `buffer` that belong to the current response, then to what follows it.
    filled: usize,
    /// Where the current response ended in `buffer`: the next one starts there.
    consumed: usize,
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> Result<Conn, String> {
        let stream = TcpStream::connect(addr).await.map_err(|error| format!("connect to {addr}: {error}"))?;
        stream.set_nodelay(true).map_err(|error| format!("nodelay: {error}"))?;
        Ok(Conn { stream, buffer: vec![0; 64 * 1024], filled: 0, consumed: 0 })
    }

    /// Writes `request` whole and reads one whole response.
    pub async fn exchange(&mut self, request: &[u8]) -> Result<Response<'_>, String> {
        self.stream.write_all(request).await.map_err(|error| format!("send: {error}"))?;
        self.read().await
    }

    /// Writes `request` and returns at once: for a stream whose response never ends.
    pub async fn send(&mut self, request: &[u8]) -> Result<(), String> {
        self.stream.write_all(request).await.map_err(|error| format!("send: {error}"))
    }

    /// Reads until a response head has arrived and returns its status, leaving the
    /// body unread: for an event stream held open.
    pub async fn read_status(&mut self) -> Result<u16, String> {
        self.shift();
        loop {
            if let Some(end) = find(&self.buffer[..self.filled], b"\r\n\r\n") {
                return status(&self.buffer[..end]);
            }
            self.fill().await?;
        }
    }

    async fn read(&mut self) -> Result<Response<'_>, String> {
        self.shift();
        let head_end = loop {
            if let Some(end) = find(&self.buffer[..self.filled], b"\r\n\r\n") {
                break end + 4;
            }
            self.fill().await?;
        };
        let head = std::str::from_utf8(&self.buffer[..head_end]).map_err(|_| "the head is not UTF-8".to_owned())?;
        let status = status(head.as_bytes())?;
        let framing = framing(head)?;
        let (body_start, body_end) = match framing {
            Framing::Length(length) => {
                while self.filled < head_end + length {
                    self.fill().await?;
                }
                self.consumed = head_end + length;
                (head_end, head_end + length)
            }
            Framing::Chunked => {
                // Chunks are joined in place, so the body is contiguous like any other.
                let mut read_at = head_end;
                let mut write_at = head_end;
                loop {
                    let line_end = loop {
                        if let Some(end) = find(&self.buffer[read_at..self.filled], b"\r\n") {
                            break read_at + end;
                        }
                        self.fill().await?;
                    };
                    let size_text = std::str::from_utf8(&self.buffer[read_at..line_end]).unwrap_or("");
                    let size_text = size_text.split(';').next().unwrap_or("").trim();
                    let size =
                        usize::from_str_radix(size_text, 16).map_err(|_| format!("bad chunk size {size_text:?}"))?;
                    while self.filled < line_end + 2 + size + 2 {
                        self.fill().await?;
                    }
                    self.buffer.copy_within(line_end + 2..line_end + 2 + size, write_at);
                    write_at += size;
                    read_at = line_end + 2 + size + 2;
                    if size == 0 {
                        break;
                    }
                }
                // What follows the last chunk moves down behind the joined body.
                self.buffer.copy_within(read_at..self.filled, write_at);
                self.filled -= read_at - write_at;
                self.consumed = write_at;
                (head_end, write_at)
            }
        };
        let head = std::str::from_utf8(&self.buffer[..head_end]).expect("checked above");
        Ok(Response { status, head, body: &self.buffer[body_start..body_end] })
    }

    /// Drops the previous response, keeping any bytes already read past it.
    fn shift(&mut self) {
        if self.consumed > 0 {
            self.buffer.copy_within(self.consumed..self.filled, 0);
            self.filled -= self.consumed;
            self.consumed = 0;
        }
    }

    async fn fill(&mut self) -> Result<(), String> {
        if self.filled == self.buffer.len() {
            if self.buffer.len() >= MAX_RESPONSE {
                return Err(format!("a response over {MAX_RESPONSE} bytes"));
            }
            self.buffer.resize(self.buffer.len() * 2, 0);
        }
        let read = self.stream.read(&mut self.buffer[self.filled..]).await.map_err(|error| format!("read: {error}"))?;
        if read == 0 {
            return Err("the server closed the connection".to_owned());
        }
        self.filled += read;
        Ok(())
    }
}

enum Framing {
    Length(usize),
    Chunked,
}

fn framing(head: &str) -> Result<Framing, String> {
    for line in head.lines().skip(1) {
        let Some((key, value)) = line.split_once(':') else { continue };
        if key.eq_ignore_ascii_case("content-length") {
            return value.trim().parse().map(Framing::Length).map_err(|_| format!("bad content-length {value:?}"));
        }
        if key.eq_ignore_ascii_case("transfer-encoding") && value.trim().eq_ignore_ascii_case("chunked") {
            return Ok(Framing::Chunked);
        }
    }
    Err(format!("a response without a length: {}", head.lines().next().unwrap_or("")))
}

fn status(head: &[u8]) -> Result<u16, String> {
    head.get(9..12)
        .and_then(|code| std::str::from_utf8(code).ok())
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {:?}", String::from_utf8_lossy(&head[..head.len().min(40)])))
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// A POST to `path` with `headers` (each `name: value`) and `body`, ready to write.
pub fn post(path: &str, headers: &[String], body: &str) -> Vec<u8> {
    let mut request = format!("POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    request.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_reads_length_or_chunks_and_refuses_neither() {
        assert!(matches!(framing("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n"), Ok(Framing::Length(12))));
        assert!(matches!(framing("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"), Ok(Framing::Chunked)));
        assert!(framing("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n").is_err());
        assert_eq!(status(b"HTTP/1.1 202 Accepted").unwrap(), 202);
    }
}
