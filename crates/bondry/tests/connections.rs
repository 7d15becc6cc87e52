//! Bounds on connections, against clients that hold them open: a deadline on the request
//! head and on the body, and a cap on connections served at once.

use bondry_test_support as support;

use std::time::Duration;

use serde_json::json;
use support::{Req, TestConfig, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The default test configuration with `keys` set on `[listeners.main]`.
fn config(keys: &[(&str, i64)]) -> String {
    keys.iter()
        .fold(TestConfig::new(), |config, (key, value)| config.set(&format!("listeners.main.{key}"), *value))
        .text()
}

/// Reads what the server sends until it closes the connection, within `limit`.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut received = Vec::new();
    tokio::time::timeout(limit, stream.read_to_end(&mut received)).await.ok()?.ok()?;
    Some(String::from_utf8_lossy(&received).into_owned())
}

#[tokio::test]
async fn a_request_head_sent_too_slowly_is_cut_off() {
    let server = TestServer::with_config(&config(&[("header_read_timeout_ms", 300)])).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    let answer =
        read_until_closed(&mut stream, Duration::from_secs(5)).await.expect("the server closes the connection");
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_body_sent_too_slowly_gets_408() {
    let server = TestServer::with_config(&config(&[("body_read_timeout_ms", 300)])).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"";
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut received = vec![0; 4096];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut received)).await.unwrap().unwrap();
    let answer = String::from_utf8_lossy(&received[..read]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":-32600"#) && answer.contains("Request timeout"), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn past_the_cap_a_connection_waits_for_a_slot() {
    let server = TestServer::with_config(&config(&[("max_connections", 2)])).await;
    let first = TcpStream::connect(server.addr).await.unwrap();
    let second = TcpStream::connect(server.addr).await.unwrap();
    // Both slots are held by connections that send nothing.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let url = server.url();
    let waiting = tokio::spawn(async move {
        let client = reqwest::Client::new();
        let request = Req::modern("tools/list", json!({}));
        request.builder(&client, &url).body(request.body.clone()).send().await.map(|response| response.status())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "a third connection is not served while two are held");
    drop(first);
    let status = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("served once a slot frees");
    assert_eq!(status.unwrap().unwrap(), 200);
    drop(second);
    server.stop().await;
}

#[tokio::test]
async fn a_silent_connection_gives_its_slot_back_after_the_head_deadline() {
    let server = TestServer::with_config(&config(&[("max_connections", 1), ("header_read_timeout_ms", 300)])).await;
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let mut one_byte = TcpStream::connect(server.addr).await.unwrap();
    one_byte.write_all(b"P").await.unwrap();
    let client = reqwest::Client::new();
    let request = Req::modern("tools/list", json!({}));
    let served = tokio::time::timeout(
        Duration::from_secs(5),
        request.builder(&client, &server.url()).body(request.body.clone()).send(),
    )
    .await
    .expect("served once the silent connections are cut")
    .unwrap();
    assert_eq!(served.status(), 200);
    assert!(read_until_closed(&mut silent, Duration::from_secs(5)).await.is_some(), "the silent socket is closed");
    assert!(read_until_closed(&mut one_byte, Duration::from_secs(5)).await.is_some(), "so is the one-byte one");
    server.stop().await;
}
