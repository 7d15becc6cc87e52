//! How a client reaches an origin: straight, or through the one proxy a stanza names
//! (a CONNECT tunnel for `https` targets; for `http` ones the request goes to the proxy
//! in absolute form, as HTTP proxies expect). TLS, to the target or to an `https` proxy,
//! is rustls.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use rustls::ClientConfig;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Makes a client's connections.
#[derive(Clone)]
pub(crate) struct Connector {
    /// To the target itself.
    direct: HttpsConnector<HttpConnector>,
    proxy: Option<Proxy>,
    /// How long a connection may take to make: the name resolved, TCP, the proxy's
    /// tunnel and TLS, all together.
    within: Duration,
}

#[derive(Clone)]
struct Proxy {
    at: Uri,
    /// To the proxy, for an `http` target's requests in absolute form.
    to_proxy: HttpsConnector<HttpConnector>,
    /// TLS to the target inside a CONNECT tunnel through the proxy.
    tunnel: HttpsConnector<Tunnel<HttpsConnector<HttpConnector>>>,
}

impl Connector {
    /// Over `tcp`, straight to each target or through `proxy` when given; TLS (the
    /// target's, and an `https` proxy's) as `tls` says, offering HTTP/2 alone when `http2`.
    pub(crate) fn new(
        tcp: HttpConnector,
        tls: &ClientConfig,
        http2: bool,
        proxy: Option<Uri>,
        within: Duration,
    ) -> Self {
        let direct = secured(tls, http2, tcp.clone());
        let proxy = proxy.map(|at| {
            // The proxy itself speaks HTTP/1.1: CONNECT, or requests in absolute form.
            let to_proxy = secured(tls, false, tcp);
            Proxy { tunnel: secured(tls, http2, Tunnel::new(at.clone(), to_proxy.clone())), to_proxy, at }
        });
        Self { direct, proxy, within }
    }
}

/// `inner` with TLS for `https` targets; `http` ones pass through.
fn secured<C>(tls: &ClientConfig, http2: bool, inner: C) -> HttpsConnector<C> {
    let builder = HttpsConnectorBuilder::new().with_tls_config(tls.clone()).https_or_http();
    if http2 { builder.enable_http2().wrap_connector(inner) } else { builder.enable_http1().wrap_connector(inner) }
}

impl Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Each call readies the connector it uses.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, target: Uri) -> Self::Future {
        let within = self.within;
        match &self.proxy {
            None => Box::pin(open(self.direct.clone(), target, false, within)),
            Some(proxy) if target.scheme() == Some(&http::uri::Scheme::HTTPS) => {
                Box::pin(open(proxy.tunnel.clone(), target, false, within))
            }
            Some(proxy) => Box::pin(open(proxy.to_proxy.clone(), proxy.at.clone(), true, within)),
        }
    }
}

/// A connection not made within `connect_timeout`.
#[derive(Debug, thiserror::Error)]
#[error("not connected within connect_timeout ({0:?})")]
struct TimedOut(Duration);

async fn open<C>(mut connector: C, to: Uri, forwarded: bool, within: Duration) -> Result<Stream, BoxError>
where
    C: Service<Uri>,
    C::Response: Io + 'static,
    C::Error: Into<BoxError>,
{
    let connecting = async {
        poll_fn(|cx| connector.poll_ready(cx)).await.map_err(Into::into)?;
        connector.call(to).await.map_err(Into::into)
    };
    let io = tokio::time::timeout(within, connecting).await.map_err(|_| TimedOut(within))??;
    Ok(Stream { io: Box::new(io), forwarded })
}

/// What a connection is read and written through, whichever way it was made.
pub(crate) trait Io: Read + Write + Connection + Unpin + Send {}

impl<T: Read + Write + Connection + Unpin + Send> Io for T {}

/// One connection. A connection to the proxy for an `http` target says so, which makes
/// the client write its requests' targets in absolute form.
pub struct Stream {
    io: Box<dyn Io>,
    forwarded: bool,
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        let connected = self.io.connected();
        if self.forwarded { connected.proxy(true) } else { connected }
    }
}

impl Read for Stream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_read(cx, buf)
    }
}

impl Write for Stream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.io).poll_write_vectored(cx, bufs)
    }
}
