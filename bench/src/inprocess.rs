//! The in-process load of the scale scenario: keep-alive connections driving a Bondry
//! started in this process, counting completed requests.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// A raw HTTP/1.1 request with the modern routing headers.
pub fn request(method: &str, name: Option<&str>, body: &str) -> Vec<u8> {
    let name = name.map(|name| format!("mcp-name: {name}\r\n")).unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: {method}\r\n{name}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Requests per second over `connections` keep-alive connections for `duration`.
pub async fn load(addr: SocketAddr, request: &[u8], duration: Duration, connections: usize) -> f64 {
    let deadline = Instant::now() + duration;
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let request = request.to_vec();
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.expect("the server accepts");
                stream.set_nodelay(true).expect("nodelay");
                // Room for a full tools/list page of the scale scenario's large catalogues.
                let mut buffer = vec![0; 1024 * 1024];
                let mut done = 0u64;
                while Instant::now() < deadline {
                    stream.write_all(&request).await.expect("the request is sent");
                    read_response(&mut stream, &mut buffer).await;
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await.expect("a worker finishes");
    }
    total as f64 / duration.as_secs_f64()
}

/// Reads one response with a `content-length`, asserting it is a 200.
pub async fn read_response(stream: &mut TcpStream, buffer: &mut [u8]) {
    let mut filled = 0;
    loop {
        let read = stream.read(&mut buffer[filled..]).await.expect("the response arrives");
        assert!(read > 0, "the server closed the connection");
        filled += read;
        let head = &buffer[..filled];
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            let text = std::str::from_utf8(&head[..end]).expect("the head is text");
            assert!(text.starts_with("HTTP/1.1 200"), "{text}");
            let length: usize = text
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap())
                })
                .expect("a content-length");
            while filled < end + 4 + length {
                filled += stream.read(&mut buffer[filled..]).await.expect("the body arrives");
            }
            return;
        }
    }
}
