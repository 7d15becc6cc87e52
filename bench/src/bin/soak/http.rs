//! A minimal HTTP/1.1 client over one keep-alive TCP connection.
//!
//! Hand-rolled rather than a client crate: the soak needs nothing but loopback requests
//! it writes itself, a response head, and a body framed by `content-length` or chunks
//! (the event streams), and every read must sit under a deadline so that no loop can hang.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};

/// The largest head or body the soak accepts; anything bigger is an error, not a buffer
/// that grows in the driver and skews nothing but its own memory.
const MAX_MESSAGE: usize = 1 << 20;

/// A status line and headers, names lower-cased.
pub struct Head {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The value of the first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

/// One whole response.
pub struct Response {
    pub head: Head,
    pub body: Vec<u8>,
}

/// One connection, and the bytes read past the last message.
pub struct Conn {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Conn {
    pub async fn connect(addr: SocketAddr, deadline: Instant) -> Result<Conn, String> {
        let stream = timeout_at(deadline, TcpStream::connect(addr))
            .await
            .map_err(|_| "connect timed out".to_owned())?
            .map_err(|error| format!("connect: {error}"))?;
        // Requests are small and answered one at a time: Nagle would only add latency.
        stream.set_nodelay(true).map_err(|error| format!("nodelay: {error}"))?;
        Ok(Conn { stream, buffer: Vec::with_capacity(16 * 1024) })
    }

    /// Sends one request and reads its whole response, both before `deadline`.
    pub async fn exchange(&mut self, request: &[u8], deadline: Instant) -> Result<Response, String> {
        self.send(request, deadline).await?;
        let head = self.read_head(deadline).await?;
        let body = self.read_body(&head, deadline).await?;
        Ok(Response { head, body })
    }

    pub async fn send(&mut self, request: &[u8], deadline: Instant) -> Result<(), String> {
        timeout_at(deadline, self.stream.write_all(request))
            .await
            .map_err(|_| "send timed out".to_owned())?
            .map_err(|error| format!("send: {error}"))
    }

    /// Reads up to the blank line that ends the head, and parses it.
    pub async fn read_head(&mut self, deadline: Instant) -> Result<Head, String> {
        let end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end;
            }
            self.fill(deadline).await?;
        };
        let text = std::str::from_utf8(&self.buffer[..end]).map_err(|_| "the head is not text".to_owned())?;
        let head = parse_head(text)?;
        self.buffer.drain(..end + 4);
        Ok(head)
    }

    /// Reads the body the head announces: none, `content-length` bytes, or chunks to the last.
    async fn read_body(&mut self, head: &Head, deadline: Instant) -> Result<Vec<u8>, String> {
        if head.status == 204 || head.status == 304 || (100..200).contains(&head.status) {
            return Ok(Vec::new());
        }
        if head.header("transfer-encoding").is_some_and(|value| value.eq_ignore_ascii_case("chunked")) {
            let mut body = Vec::new();
            while let Some(chunk) = self.read_chunk(deadline).await? {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_MESSAGE {
                    return Err("the body is too large".to_owned());
                }
            }
            return Ok(body);
        }
        let length: usize = match head.header("content-length") {
            Some(value) => value.parse().map_err(|_| format!("bad content-length {value:?}"))?,
            // Neither framing: the response would end with the connection, which
            // Bondry never does on a kept-alive one.
            None => return Err("a response without content-length or chunks".to_owned()),
        };
        if length > MAX_MESSAGE {
            return Err("the body is too large".to_owned());
        }
        self.take(length, deadline).await
    }

    /// The next chunk of a chunked body, or `None` after the last (and its trailer).
    pub async fn read_chunk(&mut self, deadline: Instant) -> Result<Option<Vec<u8>>, String> {
        let line = self.read_line(deadline).await?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| format!("bad chunk size {line:?}"))?;
        if size > MAX_MESSAGE {
            return Err("a chunk is too large".to_owned());
        }
        if size == 0 {
            // The trailer: header lines up to an empty one.
            while !self.read_line(deadline).await?.is_empty() {}
            return Ok(None);
        }
        let chunk = self.take(size, deadline).await?;
        if !self.read_line(deadline).await?.is_empty() {
            return Err("a chunk not followed by CRLF".to_owned());
        }
        Ok(Some(chunk))
    }

    /// Waits until `until` for the peer to close or send; `Ok(true)` means it closed.
    pub async fn closed_before(&mut self, until: Instant) -> Result<bool, String> {
        loop {
            match timeout_at(until, self.read_more()).await {
                Err(_) => return Ok(false),
                Ok(Ok(0)) => return Ok(true),
                Ok(Ok(_)) if self.buffer.len() > MAX_MESSAGE => return Err("too much unread data".to_owned()),
                Ok(Ok(_)) => {}
                Ok(Err(error)) => return Err(error),
            }
        }
    }

    async fn read_line(&mut self, deadline: Instant) -> Result<String, String> {
        let end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n") {
                break end;
            }
            self.fill(deadline).await?;
        };
        let line = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        self.buffer.drain(..end + 2);
        Ok(line)
    }

    async fn take(&mut self, length: usize, deadline: Instant) -> Result<Vec<u8>, String> {
        while self.buffer.len() < length {
            self.fill(deadline).await?;
        }
        Ok(self.buffer.drain(..length).collect())
    }

    /// Reads more bytes before `deadline`; the peer closing is an error here.
    async fn fill(&mut self, deadline: Instant) -> Result<(), String> {
        if self.buffer.len() > MAX_MESSAGE {
            return Err("the message is too large".to_owned());
        }
        match timeout_at(deadline, self.read_more()).await {
            Err(_) => Err("the response timed out".to_owned()),
            Ok(Ok(0)) => Err("the server closed the connection".to_owned()),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(error),
        }
    }

    async fn read_more(&mut self) -> Result<usize, String> {
        let mut chunk = [0u8; 16 * 1024];
        let read = self.stream.read(&mut chunk).await.map_err(|error| format!("read: {error}"))?;
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(read)
    }
}

/// Where `needle` first starts in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

fn parse_head(text: &str) -> Result<Head, String> {
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Ok(Head { status, headers })
}

/// The deadline of one request: generous, since the machine is shared, but finite.
pub fn request_deadline() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_parses_with_lower_case_names() {
        let head = parse_head("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nMcp-Session-Id: abc").unwrap();
        assert_eq!(head.status, 202);
        assert_eq!(head.header("content-length"), Some("0"));
        assert_eq!(head.header("mcp-session-id"), Some("abc"));
        assert!(parse_head("HTTP/1.0 200 OK").is_err());
    }
}
