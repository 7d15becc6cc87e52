//! `ceiling --listen ADDR`: hyper answering every request with a fixed JSON body, with no
//! routing or parsing: the ceiling of any server on this HTTP stack, against which every
//! figure of the bench is a ratio. Prints `listening on http://ADDR/mcp` on stderr.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

const BODY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#;

#[tokio::main]
async fn main() {
    let listen = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [flag, addr] if flag == "--listen" => addr.clone(),
        _ => "127.0.0.1:0".to_owned(),
    };
    let listener = TcpListener::bind(&listen).await.expect("the listen address binds");
    eprintln!("listening on http://{}/mcp", listener.local_addr().expect("a bound address"));
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(|_request| async {
                Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(BODY))))
            });
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}
