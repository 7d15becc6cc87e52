//! Black-box tests of the HTTP boundary before the adapter: method, media types, body
//! limit, origin and host, realms and credentials, in the order the checks run.

use bondry_test_support as support;

use serde_json::json;
use support::{Req, TestConfig, TestServer};

fn discover() -> Req {
    Req::modern("server/discover", json!({}))
}

#[tokio::test]
async fn methods_depend_on_the_revisions_served() {
    let modern_only = TestServer::with_config(&support::modern_only_config()).await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE, reqwest::Method::PUT, reqwest::Method::PATCH] {
        let response = modern_only.send(Req::post().method(method.clone()).without("content-type")).await;
        response.assert_error(405, None, -32600, "Method not allowed");
        assert_eq!(response.header("allow"), Some("POST"), "{method}");
    }
    modern_only.stop().await;
    let server = TestServer::start().await;
    for method in [reqwest::Method::PUT, reqwest::Method::PATCH] {
        let response = server.send(Req::post().method(method.clone()).without("content-type")).await;
        response.assert_error(405, None, -32600, "Method not allowed");
        assert_eq!(response.header("allow"), Some("POST, GET, DELETE"), "{method}");
    }
    server.stop().await;
}

#[tokio::test]
async fn content_type_must_be_one_json() {
    let server = TestServer::start().await;
    for request in [
        discover().without("content-type"),
        discover().replace("content-type", "text/plain"),
        discover().replace("content-type", "application/json-seq"),
        discover().header("content-type", "application/json"),
    ] {
        server.send(request).await.assert_error(
            415,
            None,
            -32600,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    server.send(discover().replace("content-type", "application/json; charset=utf-8")).await.assert_result();
    server.stop().await;
}

#[tokio::test]
async fn accept_must_admit_json_and_event_streams() {
    let server = TestServer::start().await;
    let refused = "Not Acceptable: Accept must admit application/json and text/event-stream";
    for accept in ["application/json", "text/event-stream", "*/*, text/event-stream;q=0", "image/*"] {
        server.send(discover().replace("accept", accept)).await.assert_error(406, None, -32600, refused);
    }
    // Without any Accept header (sent raw: HTTP clients add `*/*` by default).
    let (status, body) = server.send_raw(&discover().without("accept")).await;
    assert_eq!(status, 406);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": refused}})
    );
    for accept in ["*/*", "application/*, text/*", "text/event-stream, application/json;q=0.9"] {
        server.send(discover().replace("accept", accept)).await.assert_result();
    }
    // Media types are judged before the body is read.
    server
        .send(discover().replace("accept", "application/json").raw("{"))
        .await
        .assert_error(406, None, -32600, refused);
    server.stop().await;
}

/// A discover request padded with trailing whitespace to exactly `size` bytes.
fn discover_of_size(size: usize) -> Req {
    let mut request = discover();
    let padding = size - request.body.len();
    request.body.extend(std::iter::repeat_n(b' ', padding));
    request
}

#[tokio::test]
async fn body_limit_counts_bytes() {
    let server = TestServer::start().await;
    let limit = 4096;
    server.send(discover_of_size(limit - 1)).await.assert_result();
    server.send(discover_of_size(limit)).await.assert_result();
    server.send(discover_of_size(limit + 1)).await.assert_error(413, None, -32600, "Payload too large");
    server.stop().await;
}

#[tokio::test]
async fn streamed_bodies_are_counted_as_they_arrive() {
    let server = TestServer::start().await;
    let client = reqwest::Client::new();
    for (size, expected) in [(4096, 200), (4097, 413)] {
        let request = discover_of_size(size);
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = request.body.chunks(1000).map(|c| Ok(c.to_vec())).collect();
        let builder = request.builder(&client, &server.url());
        let response =
            builder.body(reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))).send().await.unwrap();
        assert_eq!(response.status().as_u16(), expected, "{size} bytes, chunked");
    }
    server.stop().await;
}

#[tokio::test]
async fn the_default_body_limit_is_4_mib() {
    let config = TestConfig::new().remove("listeners.main.max_body_bytes").text();
    let server = TestServer::with_config(&config).await;
    server.send(discover_of_size(4 << 20)).await.assert_result();
    server.send(discover_of_size((4 << 20) + 1)).await.assert_error(413, None, -32600, "Payload too large");
    server.stop().await;
}

#[tokio::test]
async fn origins_and_hosts() {
    let server = TestServer::start().await;
    for origin in ["http://evil.example", "null", "http://localhost.evil.example"] {
        server.send(discover().header("origin", origin)).await.assert_error(403, None, -32600, "Origin not allowed");
    }
    for origin in ["http://localhost:5173", "https://127.0.0.1", "http://[::1]:1"] {
        server.send(discover().header("origin", origin)).await.assert_result();
    }
    server.send(discover().header("host", "evil.example")).await.assert_error(403, None, -32600, "Host not allowed");
    server.send(discover().header("host", "localhost:1")).await.assert_result();
    // Origin is checked before the realm, the method and the media types.
    let early = discover().header("origin", "http://evil.example").path("/mcp/realm/nope").method(reqwest::Method::GET);
    server.send(early).await.assert_error(403, None, -32600, "Origin not allowed");
    server.stop().await;
}

#[tokio::test]
async fn listed_and_any_origins() {
    let listed = TestConfig::new().set("listeners.main.allowed_origins", vec!["https://app.example"]).text();
    let server = TestServer::with_config(&listed).await;
    server.send(discover().header("origin", "https://APP.example")).await.assert_result();
    server.send(discover().header("origin", "http://localhost")).await.assert_error(
        403,
        None,
        -32600,
        "Origin not allowed",
    );
    server.stop().await;
    let any = TestConfig::new().set("listeners.main.allowed_origins", vec!["any"]).text();
    let server = TestServer::with_config(&any).await;
    server.send(discover().header("origin", "https://anything.example")).await.assert_result();
    server.stop().await;
}

#[tokio::test]
async fn realms_by_path() {
    let server = TestServer::start().await;
    let default = server.send(discover().path("/mcp/realm/default")).await;
    assert_eq!(default.text(), server.send(discover()).await.text());
    for path in ["/mcp/realm/other", "/mcp/realm/Default"] {
        server.send(discover().path(path)).await.assert_error(404, None, -32000, "no_such_realm");
    }
    // The realm is checked before the method.
    server.send(discover().path("/mcp/realm/other").method(reqwest::Method::GET)).await.assert_error(
        404,
        None,
        -32000,
        "no_such_realm",
    );
    server.stop().await;
}

#[tokio::test]
async fn credentials_are_refused_until_authentication_exists() {
    let server = TestServer::start().await;
    for authorization in ["Bearer abc", "Basic YTpi", "Negotiate x"] {
        let response = server.send(discover().header("authorization", authorization)).await;
        assert_eq!(response.status, 401);
        assert!(response.body.is_empty());
        assert_eq!(response.header("www-authenticate"), Some("Bearer realm=\"default\""));
    }
    // Credentials the adapter never needs are removed, not refused.
    server
        .send(discover().header("cookie", "session=1").header("proxy-authorization", "Basic x"))
        .await
        .assert_result();
    // The body limit is checked before authentication.
    let oversized = discover_of_size(5000).header("authorization", "Bearer abc");
    server.send(oversized).await.assert_error(413, None, -32600, "Payload too large");
    let records = server.stop().await;
    assert_eq!(records.len(), 3, "one record per refused credential: {records:?}");
    for record in &records {
        assert_eq!(record["outcome"], "unauthenticated");
        assert_eq!(record["principal"], serde_json::Value::Null);
        assert_eq!(record["realm"], "default");
    }

    let closed = TestConfig::new().set("realms.default.anonymous", false).text();
    let server = TestServer::with_config(&closed).await;
    let response = server.send(discover()).await;
    assert_eq!(response.status, 401);
    assert_eq!(response.header("www-authenticate"), Some("Bearer realm=\"default\""));
    server.stop().await;
}

#[tokio::test]
async fn shutdown_lets_in_flight_calls_finish() {
    let server = TestServer::start().await;
    let url = server.url();
    // Long enough for its start to be seen, short enough to end within the grace period.
    let request = Req::call("test.slow", json!({"ms": 1000}));
    let call = tokio::spawn(async move {
        let builder = request.builder(&reqwest::Client::new(), &url);
        let response = builder.body(request.body).send().await.unwrap();
        response.json::<serde_json::Value>().await.unwrap()
    });
    assert!(server.call_running().await, "the call started before shutdown");
    let records = server.stop().await;
    let body = call.await.unwrap();
    assert_eq!(body["result"]["structuredContent"], json!({"slept": true}));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["outcome"], "succeeded", "the accepted call's record survived shutdown");
}

#[tokio::test]
async fn calls_still_running_after_the_grace_period_are_stopped() {
    let config = TestConfig::new().set("shutdown_grace_ms", 50).text();
    let server = TestServer::with_config(&config).await;
    let url = server.url();
    let request = Req::call("test.slow", json!({"ms": 10_000}));
    let call = tokio::spawn(async move {
        let response = request.builder(&reqwest::Client::new(), &url).body(request.body).send().await.unwrap();
        (response.status().as_u16(), response.json::<serde_json::Value>().await.unwrap())
    });
    assert!(server.call_running().await, "the call started before shutdown");
    let records = server.stop_expecting(false).await;
    let (status, body) = call.await.unwrap();
    assert_eq!(status, 503);
    assert_eq!(body, json!({"jsonrpc": "2.0", "error": {"code": -32603, "message": "Server shutting down"}}));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["outcome"], "cancelled");
}

#[tokio::test]
async fn browsers_get_cors_preflights_and_readable_responses() {
    let server = TestServer::start().await;
    let requested = "content-type, mcp-protocol-version, mcp-method, mcp-name, mcp-param-region";
    let preflight = Req::post()
        .method(reqwest::Method::OPTIONS)
        .without("content-type")
        .header("origin", "http://localhost:5173")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", requested);
    let response = server.send(preflight.clone()).await;
    assert_eq!(response.status, 204);
    assert!(response.body.is_empty());
    assert_eq!(response.header("access-control-allow-origin"), Some("http://localhost:5173"));
    assert_eq!(response.header("access-control-allow-methods"), Some("POST, GET, DELETE"));
    assert_eq!(response.header("access-control-allow-headers"), Some(requested));
    assert_eq!(response.header("allow"), Some("OPTIONS, POST, GET, DELETE"));

    let refused = preflight.replace("origin", "http://evil.example");
    let response = server.send(refused).await;
    response.assert_error(403, None, -32600, "Origin not allowed");
    assert_eq!(response.header("access-control-allow-origin"), None);

    let response = server.send(discover().header("origin", "http://localhost:5173")).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some("http://localhost:5173"));
    assert_eq!(
        response.header("access-control-expose-headers"),
        Some("Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate")
    );
    // Errors are readable too, so a browser client can tell a modern server from an old one.
    let response = server.send(discover().header("origin", "http://localhost:5173").without("Mcp-Method")).await;
    response.assert_error(400, Some(json!(1)), -32020, "Header mismatch: Mcp-Method");
    assert_eq!(response.header("access-control-allow-origin"), Some("http://localhost:5173"));

    let response = server.send(discover()).await;
    assert_eq!(response.header("access-control-allow-origin"), None, "no Origin, no CORS headers");
    let plain_options = server.send(Req::post().method(reqwest::Method::OPTIONS).without("content-type")).await;
    assert_eq!(plain_options.status, 204);
    assert_eq!(plain_options.header("access-control-allow-origin"), None);
    server.stop().await;
}

/// Sends `head` (a request line and headers, without the blank line) with an empty body
/// on a fresh connection; the status and the body of the answer.
async fn exchange(server: &TestServer, head: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(format!("{head}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n").as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.get(9..12).and_then(|code| code.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn paths_not_served_are_404_with_the_tables_body() {
    let server = TestServer::start().await;
    let not_found = json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Not found"}});
    for path in ["/mcp/", "//mcp", "/MCP", "/", "/mcp/realm/default/tools", "/mcp/realm/", "/.well-known/nope"] {
        for method in ["POST", "GET", "OPTIONS"] {
            let (status, body) = exchange(&server, &format!("{method} {path} HTTP/1.1\r\nhost: localhost")).await;
            assert_eq!(status, 404, "{method} {path}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&body).unwrap(), not_found, "{method} {path}");
        }
    }
    // A realm without OAuth issuers publishes no metadata, and says so the same way.
    let (status, body) =
        exchange(&server, "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nhost: localhost").await;
    assert_eq!((status, serde_json::from_str::<serde_json::Value>(&body).unwrap()), (404, not_found.clone()));
    // Unknown paths are still held to the origin and host rules.
    let (status, _) = exchange(&server, "GET /MCP HTTP/1.1\r\nhost: evil.example").await;
    assert_eq!(status, 403);
    server.stop().await;
}

#[tokio::test]
async fn a_request_without_host_is_400() {
    let server = TestServer::start().await;
    let missing = json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Bad request: Host header required"}});
    for head in [
        "POST /mcp HTTP/1.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream",
        "GET /mcp HTTP/1.1",
        "POST http://localhost/mcp HTTP/1.1\r\ncontent-type: application/json",
        "GET /nope HTTP/1.1",
        "GET /.well-known/oauth-protected-resource HTTP/1.1",
    ] {
        let (status, body) = exchange(&server, head).await;
        assert_eq!(status, 400, "{head}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&body).unwrap(), missing, "{head}");
    }
    server.stop().await;
}

/// Framing hyper refuses before Bondry sees a request keeps hyper's status and an empty
/// body: the departure `docs/errors.md` records.
#[tokio::test]
async fn framing_errors_keep_hypers_answer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start().await;
    let many_headers: String = (0..120).map(|n| format!("x-h{n}: v\r\n")).collect();
    for (request, expected) in [
        ("POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-length: abc\r\n\r\n".to_owned(), 400),
        ("POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n".to_owned(), 400),
        (format!("POST /mcp HTTP/1.1\r\nhost: localhost\r\n{many_headers}\r\n"), 431),
        ("POST /mcp HTTP/1.1\r\nhost: localhost\r\nx-a: 1\r\n folded\r\n\r\n".to_owned(), 400),
        ("POST /mcp HTTP/1.1\r\nhost: localhost\r\nx-a: a\0b\r\n\r\n".to_owned(), 400),
        (format!("POST /mcp HTTP/1.1\r\nhost: localhost\r\nx-big: {}\r\n\r\n", "a".repeat(600_000)), 431),
        ("GET /mcp HTTP/2.0\r\nhost: localhost\r\n\r\n".to_owned(), 400),
        ("GARBAGE\r\n\r\n".to_owned(), 400),
    ] {
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response).await;
        let text = String::from_utf8_lossy(&response);
        assert!(text.starts_with(&format!("HTTP/1.1 {expected} ")), "{request:?} → {text:?}");
        assert!(text.ends_with("\r\n\r\n"), "an empty body: {text:?}");
    }
    server.stop().await;
}
