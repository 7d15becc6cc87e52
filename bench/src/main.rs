//! Side-by-side throughput of Bondry and a bare hyper server answering a fixed body.
//!
//! Both servers run in this process on loopback, and one load generator drives each in
//! turn with the same keep-alive HTTP/1.1 connections, so the printed ratio (Bondry's
//! requests per second over the ceiling's) is comparable across machines even though the
//! absolute numbers are not. Run with `cargo run --release -p bondry-bench [-- SECONDS CONNECTIONS [METHOD]]`.
//!
//! `cargo run --release -p bondry-bench -- scale [SECONDS [CONNECTIONS [SESSIONS]]]` runs the
//! scale scenario instead: see [`scale`].
//!
//! Measured on the 2-core development machine (16 connections, 3 s, three runs):
//! `server/discover` 0.55–0.62 of the ceiling, `tools/list` 0.57–0.68, `tools/call` of
//! `demo.echo` 0.39–0.56. Moving the audit digests to the sink thread took `tools/call`
//! from about 0.35 to those numbers. Over a single connection every scenario is bound by
//! wake-up latency, not CPU (axum with a body read reaches about 17k requests per second
//! there, Bondry about 10k).

mod scale;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bondry::assemble::{Overrides, assemble};
use bondry::builtins::Builtins;
use bondry::config;
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The allocator the `bondry` binary ships with, so what is measured here in process is
/// what it would do.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().is_some_and(|first| first == "scale") {
        scale::run(args.skip(1)).await;
        return;
    }
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let connections: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(16);
    let only = args.next().unwrap_or_default();
    let duration = Duration::from_secs(seconds);

    let ceiling = start_ceiling().await;
    let bondry = start_bondry().await;

    let scenarios = [
        (
            "server/discover",
            None,
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#),
        ),
        ("tools/list", None, format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#)),
        (
            "tools/call",
            Some("demo.echo"),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"demo.echo","arguments":{{"text":"hello"}},{META}}}}}"#
            ),
        ),
    ];
    println!("{connections} keep-alive connections, {seconds} s per run, loopback, one process");
    let baseline = load(ceiling, &request("server/discover", None, "{}"), duration, connections).await;
    println!("{:<28} {:>10.0} req/s  (ceiling)", "bare hyper, fixed body", baseline);
    for (method, name, body) in scenarios.into_iter().filter(|(method, _, _)| method.contains(only.as_str())) {
        let rate = load(bondry, &request(method, name, &body), duration, connections).await;
        println!("{:<28} {:>10.0} req/s  {:>5.2} of ceiling", format!("bondry {method}"), rate, rate / baseline);
    }
}

/// A raw HTTP/1.1 request with the modern routing headers.
fn request(method: &str, name: Option<&str>, body: &str) -> Vec<u8> {
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
async fn load(addr: SocketAddr, request: &[u8], duration: Duration, connections: usize) -> f64 {
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
async fn read_response(stream: &mut TcpStream, buffer: &mut [u8]) {
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

/// The ceiling: hyper answering a fixed JSON body, with no routing or parsing.
async fn start_ceiling() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.expect("accept");
            let body = body.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_request| {
                    let body = body.clone();
                    async move { Ok::<_, Infallible>(hyper::Response::new(Full::new(body))) }
                });
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    addr
}

/// Bondry on its embedded default, audit off, on an ephemeral port.
async fn start_bondry() -> SocketAddr {
    let text = format!("{}\n[audit]\nsink = \"off\"\n", config::EMBEDDED_DEFAULT);
    let loaded =
        config::parse("<bench>", &text, ".".into(), [("BONDRY__LISTENERS__MAIN__BIND".into(), "127.0.0.1:0".into())])
            .expect("the bench config parses");
    let assembled =
        assemble(&loaded, &Builtins::demo(), &Overrides::default(), true).expect("the bench config assembles");
    let running = bondry_http_server::start(assembled.server).await.expect("bondry starts");
    let addr = running.local_addrs()[0].1;
    // The server lives as long as the process.
    std::mem::forget(running);
    addr
}
