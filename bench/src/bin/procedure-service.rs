//! `procedure-service --listen ADDR`: a web service answering Bondry's procedure wire
//! (`docs/backends.md`) on hyper: each POST's JSON is parsed and its `arguments` answered
//! back as `{"result": …}`, the least work a real service does. The bench calls it
//! directly and through Bondry (`backend = "http"`), so their difference is the hop.
//! Prints `listening on http://ADDR/call` on stderr.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() {
    let listen = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [flag, addr] if flag == "--listen" => addr.clone(),
        _ => "127.0.0.1:0".to_owned(),
    };
    let listener = TcpListener::bind(&listen).await.expect("the listen address binds");
    eprintln!("listening on http://{}/call", listener.local_addr().expect("a bound address"));
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(|request: hyper::Request<hyper::body::Incoming>| async move {
                let body = request.into_body().collect().await.map(|body| body.to_bytes()).unwrap_or_default();
                let answer = match serde_json::from_slice::<Value>(&body) {
                    Ok(mut call) => json!({"result": call["arguments"].take()}),
                    Err(_) => json!({"error": {"code": "not_json", "retryable": false}}),
                };
                let mut response = hyper::Response::new(Full::new(Bytes::from(answer.to_string())));
                response
                    .headers_mut()
                    .insert(hyper::header::CONTENT_TYPE, "application/json".parse().expect("a header"));
                Ok::<_, Infallible>(response)
            });
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}
