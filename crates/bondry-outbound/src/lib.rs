//! Everything Bondry sends over HTTP to what it fronts (upstream MCP servers, HTTP
//! procedures) goes through one client from here: one pooled client per (realm, origin,
//! client settings), kept for the life of the process, so a reload that keeps a backend
//! keeps its warm connections, and one realm never rides another's.
//!
//! Every client follows no redirect (a backend's answer is its own, never another
//! origin's), ignores the process's proxy variables unless a stanza names a proxy, and
//! trusts the system roots plus a stanza's `ca_file`. What a backend needs per request
//! (its headers, its signature) is set on the request, never on the shared client.
//!
//! The client is hyper's own pooled client, not a wrapper around it: a relayed call is
//! one request and one answer, and a wrapper's per-request work (its URL parsed again,
//! its redirect and retry layers) was a third of what the relay spent on the client
//! (ARCHITECTURE.md). Requests are built by their backend from prepared parts.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
pub use url::Url;

mod connect;

use connect::Connector;

/// An answer's body, read with [`chunk`].
pub type Body = hyper::body::Incoming;

/// An answer: its head, and its body still to read.
pub type Response = http::Response<Body>;

/// How a client connects: part of what tells one pooled client from another.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Settings {
    pub connect_timeout: Duration,
    /// HTTP/2 without TLS's negotiation (h2c), for a service that speaks only that.
    pub http2_prior_knowledge: bool,
    /// Roots trusted besides the system's, PEM.
    pub ca_file: Option<PathBuf>,
    /// The one proxy requests go through; none when `None`, whatever the environment says.
    pub proxy: Option<Url>,
}

impl Default for Settings {
    fn default() -> Self {
        Self { connect_timeout: Duration::from_secs(10), http2_prior_knowledge: false, ca_file: None, proxy: None }
    }
}

/// Why no client could be made; each names the setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("ca_file {path}: {why}")]
    CaFile { path: String, why: String },
    #[error("proxy: {0}")]
    Proxy(String),
    #[error("HTTP client: {0}")]
    Client(String),
}

/// Why a request got no answer, or its answer broke off; each says what failed, then
/// its causes.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("the connection failed: {0}")]
    Connect(String),
    #[error("the request failed: {0}")]
    Request(String),
    #[error("the answer broke off: {0}")]
    Body(String),
}

/// A pooled client: cheap to clone, clones share its connections.
#[derive(Clone)]
pub struct Client {
    inner: legacy::Client<Connector, Full<Bytes>>,
    /// HTTP/2 only: the target's authority travels as `:authority`, never as `Host`.
    http2: bool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// Sends `request`, made by [`Target::request`] (its URI absolute, its `Host` written
    /// on HTTP/1); the answer once its head has arrived. The
    /// request is handed over before the future is made: that future is small, and a
    /// relayed call's holds it (an `async fn` keeping the request grew the relay's by
    /// kilobytes, copied on every call).
    pub fn send(
        &self,
        mut request: http::Request<Bytes>,
    ) -> impl Future<Output = Result<Response, Failure>> + Send + 'static {
        if self.http2 {
            request.headers_mut().remove(http::header::HOST);
        }
        let pending = self.inner.request(request.map(Full::new));
        async move {
            pending.await.map_err(|error| {
                let causes = causes(&error);
                if error.is_connect() { Failure::Connect(causes) } else { Failure::Request(causes) }
            })
        }
    }
}

/// Where a backend's requests go, made once from its URL: the request target, and the
/// `Host` header the client would otherwise format for every request.
#[derive(Debug, Clone)]
pub struct Target {
    uri: http::Uri,
    host: http::HeaderValue,
}

impl Target {
    /// `Err` says why `url` cannot be a request's target.
    pub fn new(url: &Url) -> Result<Self, String> {
        let cannot = |why: String| format!("{:?} cannot be an HTTP request's target: {why}", url.as_str());
        let uri: http::Uri = url.as_str().parse().map_err(|e: http::uri::InvalidUri| cannot(e.to_string()))?;
        let name = url.host_str().ok_or_else(|| cannot("it names no host".into()))?;
        // A URL leaves out its scheme's default port, as `Host` does; never its user info.
        let host = match url.port() {
            Some(port) => format!("{name}:{port}"),
            None => name.to_owned(),
        };
        let host = http::HeaderValue::try_from(host).map_err(|e| cannot(e.to_string()))?;
        Ok(Self { uri, host })
    }

    /// A request to the target with `headers` and `body`.
    pub fn request(&self, method: http::Method, headers: &http::HeaderMap, body: Bytes) -> http::Request<Bytes> {
        let mut request = http::Request::new(body);
        *request.method_mut() = method;
        *request.uri_mut() = self.uri.clone();
        let all = request.headers_mut();
        *all = headers.clone();
        all.insert(http::header::HOST, self.host.clone());
        request
    }
}

/// The next piece of `body`, `None` at its end (trailers are skipped).
pub async fn chunk(body: &mut Body) -> Result<Option<Bytes>, Failure> {
    loop {
        match body.frame().await {
            None => return Ok(None),
            Some(Err(error)) => return Err(Failure::Body(chain(&error))),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

/// What `error` says, then each of its causes.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The causes of `error`: its own words name only the request's step.
fn causes(error: &legacy::Error) -> String {
    match std::error::Error::source(error) {
        Some(cause) => chain(cause),
        None => error.to_string(),
    }
}

/// What tells one pooled client from another: the realm, the origin, the settings, and
/// the roots `ca_file` held when the client was made (a rotated file makes a new client).
type Key = (String, String, Settings, Option<Vec<u8>>);

/// Clients by [`Key`].
#[derive(Default)]
pub struct Pool {
    clients: Mutex<HashMap<Key, Client>>,
}

impl Pool {
    /// The process's pool: every backend of every realm draws from it, across reloads.
    pub fn shared() -> &'static Pool {
        static SHARED: OnceLock<Pool> = OnceLock::new();
        SHARED.get_or_init(Pool::default)
    }

    /// The client for `url`'s origin in `realm` with `settings`, made on first use. The
    /// `ca_file` is read on every call (at a start, a reload or an upstream's connection),
    /// so that a rotated one takes effect. A client is cheap to clone: clones share its
    /// connections.
    pub fn client(&self, realm: &str, url: &Url, settings: &Settings) -> Result<Client, SetupError> {
        let roots = match &settings.ca_file {
            None => None,
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|e| SetupError::CaFile { path: path.display().to_string(), why: e.to_string() })?,
            ),
        };
        let key = (realm.to_owned(), url.origin().ascii_serialization(), settings.clone(), roots);
        let mut clients = self.clients.lock().unwrap_or_else(|poison| poison.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = build(settings, key.3.as_deref())?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// TCP keep-alive's first probe and their interval.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// A client with `settings`, trusting `roots` (PEM) besides the system's. HTTP/1.1 unless
/// the settings ask for HTTP/2 with prior knowledge: a client shared by several backends
/// of one origin keeps each request on a connection of its own, so that an event stream
/// left unread holds no other request back.
fn build(settings: &Settings, roots: Option<&[u8]>) -> Result<Client, SetupError> {
    let mut tcp = HttpConnector::new();
    // Requests and answers are small and awaited: never held back to fill a segment.
    tcp.set_nodelay(true);
    // A peer gone without a word is noticed under a long event stream too.
    tcp.set_keepalive(Some(KEEPALIVE));
    tcp.set_keepalive_interval(Some(KEEPALIVE));
    tcp.set_keepalive_retries(Some(3));
    tcp.set_tcp_user_timeout(Some(2 * KEEPALIVE));
    tcp.enforce_http(false);
    let proxy = match &settings.proxy {
        None => None,
        Some(proxy) => {
            Some(proxy.as_str().parse().map_err(|e: http::uri::InvalidUri| SetupError::Proxy(e.to_string()))?)
        }
    };
    let tls = tls(settings, roots)?;
    let connector = Connector::new(tcp, &tls, settings.http2_prior_knowledge, proxy, settings.connect_timeout);
    let mut builder = legacy::Client::builder(TokioExecutor::new());
    builder.pool_timer(TokioTimer::new()).timer(TokioTimer::new()).http2_only(settings.http2_prior_knowledge);
    // `Target::request` writes `Host` once per target, not hyper once per request.
    builder.set_host(false);
    Ok(Client { inner: builder.build(connector), http2: settings.http2_prior_knowledge })
}

/// TLS as every client speaks it: the system's roots (the platform's verifier) and
/// `roots` besides.
fn tls(settings: &Settings, roots: Option<&[u8]>) -> Result<rustls::ClientConfig, SetupError> {
    let extra = match (roots, &settings.ca_file) {
        (Some(pem), Some(path)) => {
            let fail = |why: String| SetupError::CaFile { path: path.display().to_string(), why };
            CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| fail(format!("not PEM certificates: {e}")))?
        }
        _ => Vec::new(),
    };
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let verifier = if extra.is_empty() {
        rustls_platform_verifier::Verifier::new(Arc::clone(&provider))
    } else {
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, Arc::clone(&provider))
    }
    .map_err(|e| SetupError::Client(format!("the system's roots: {e}")))?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SetupError::Client(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_client_per_realm_origin_and_settings() {
        let pool = Pool::default();
        let url = |text: &str| Url::parse(text).unwrap();
        let plain = Settings::default();
        let h2c = Settings { http2_prior_knowledge: true, ..Settings::default() };
        pool.client("a", &url("http://127.0.0.1:1/x"), &plain).unwrap();
        pool.client("a", &url("http://127.0.0.1:1/y?z"), &plain).unwrap();
        assert_eq!(pool.clients.lock().unwrap().len(), 1, "paths share their origin's client");
        pool.client("b", &url("http://127.0.0.1:1/x"), &plain).unwrap();
        pool.client("a", &url("http://127.0.0.1:2/x"), &plain).unwrap();
        pool.client("a", &url("http://127.0.0.1:1/x"), &h2c).unwrap();
        assert_eq!(pool.clients.lock().unwrap().len(), 4);
    }

    #[test]
    fn a_rotated_ca_file_makes_a_new_client() {
        let dir = std::env::temp_dir().join(format!("bondry-outbound-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("roots.pem");
        let pool = Pool::default();
        let settings = Settings { ca_file: Some(path.clone()), ..Settings::default() };
        let url = Url::parse("https://example.com").unwrap();
        std::fs::write(&path, "").unwrap();
        pool.client("a", &url, &settings).unwrap();
        pool.client("a", &url, &settings).unwrap();
        assert_eq!(pool.clients.lock().unwrap().len(), 1);
        std::fs::write(&path, "\n").unwrap();
        pool.client("a", &url, &settings).unwrap();
        assert_eq!(pool.clients.lock().unwrap().len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A proxy on loopback that answers each connection's first request head with
    /// `answer`, and hands over that head.
    async fn proxy(answer: &'static str) -> (Url, tokio::sync::mpsc::UnboundedReceiver<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let (heads, seen) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut head = Vec::new();
                while !head.ends_with(b"\r\n\r\n") {
                    let mut byte = [0];
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        break;
                    }
                    head.push(byte[0]);
                }
                heads.send(String::from_utf8_lossy(&head).into_owned()).unwrap();
                stream.write_all(answer.as_bytes()).await.unwrap();
            }
        });
        (url, seen)
    }

    fn get(url: &str) -> http::Request<Bytes> {
        http::Request::get(url).body(Bytes::new()).unwrap()
    }

    #[tokio::test]
    async fn an_http_target_is_asked_of_the_proxy_in_absolute_form() {
        let (at, mut seen) = proxy("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
        let settings = Settings { proxy: Some(at), ..Settings::default() };
        let target = "http://service.example:8080/x?y=1";
        let client = Pool::default().client("a", &Url::parse(target).unwrap(), &settings).unwrap();
        let mut response = client.send(get(target)).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(chunk(response.body_mut()).await.unwrap().unwrap(), "ok");
        let head = seen.recv().await.unwrap();
        assert!(head.starts_with("GET http://service.example:8080/x?y=1 HTTP/1.1\r\n"), "{head}");
    }

    #[tokio::test]
    async fn an_https_target_is_tunnelled_through_the_proxy() {
        let (at, mut seen) = proxy("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n").await;
        let settings = Settings { proxy: Some(at), ..Settings::default() };
        let target = "https://service.example/x";
        let client = Pool::default().client("a", &Url::parse(target).unwrap(), &settings).unwrap();
        let failure = client.send(get(target)).await.unwrap_err();
        assert!(matches!(failure, Failure::Connect(_)), "{failure}");
        let head = seen.recv().await.unwrap();
        assert!(head.starts_with("CONNECT service.example:443 HTTP/1.1\r\n"), "{head}");
    }

    #[tokio::test]
    async fn without_a_proxy_the_target_is_asked_itself_and_a_refusal_named() {
        let (at, mut seen) = proxy("HTTP/1.1 204 No Content\r\n\r\n").await;
        let target = format!("{at}x");
        let client = Pool::default().client("a", &at, &Settings::default()).unwrap();
        assert_eq!(client.send(get(&target)).await.unwrap().status(), 204);
        assert!(seen.recv().await.unwrap().starts_with("GET /x HTTP/1.1\r\n"));

        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        let failure = client.send(get(&format!("http://{closed}/"))).await.unwrap_err();
        assert!(failure.to_string().starts_with("the connection failed: "), "{failure}");
        assert!(failure.to_string().contains("Connection refused"), "{failure}");
    }

    /// An HTTPS server on loopback with the test CA's certificate for `127.0.0.1` and
    /// `localhost`, answering each connection's first request `200 ok`.
    async fn tls_server() -> std::net::SocketAddr {
        use rustls_pki_types::PrivateKeyDer;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let testdata = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let chain = CertificateDer::pem_file_iter(testdata.join("server.pem")).unwrap().map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_file(testdata.join("server.key")).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let Ok(mut stream) = acceptor.accept(stream).await else { continue };
                let mut head = [0; 1024];
                let _ = stream.read(&mut head).await;
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
            }
        });
        addr
    }

    #[tokio::test]
    async fn https_is_trusted_through_the_ca_file_and_refused_without_it() {
        let addr = tls_server().await;
        let target = format!("https://localhost:{}/x", addr.port());
        let url = Url::parse(&target).unwrap();
        let ca_file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ca.pem");
        let trusting = Settings { ca_file: Some(ca_file), ..Settings::default() };
        let client = Pool::default().client("a", &url, &trusting).unwrap();
        let mut response = client.send(get(&target)).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(chunk(response.body_mut()).await.unwrap().unwrap(), "ok");

        let client = Pool::default().client("a", &url, &Settings::default()).unwrap();
        let failure = client.send(get(&target)).await.unwrap_err();
        let text = failure.to_string();
        assert!(text.starts_with("the connection failed: ") && text.contains("certificate"), "{text}");
    }

    #[tokio::test]
    async fn a_connection_not_made_within_connect_timeout_fails() {
        // A listener that accepts and says nothing: the TLS handshake never ends.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = format!("https://127.0.0.1:{}/", silent.local_addr().unwrap().port());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = silent.accept().await {
                held.push(stream);
            }
        });
        let settings = Settings { connect_timeout: Duration::from_millis(200), ..Settings::default() };
        let client = Pool::default().client("a", &Url::parse(&target).unwrap(), &settings).unwrap();
        let began = std::time::Instant::now();
        let failure = client.send(get(&target)).await.unwrap_err();
        assert!(began.elapsed() < Duration::from_secs(5), "{:?}", began.elapsed());
        assert_eq!(failure.to_string(), "the connection failed: not connected within connect_timeout (200ms)");
    }

    #[test]
    fn a_target_names_its_host_as_host_does() {
        let host = |url: &str| {
            let request = Target::new(&Url::parse(url).unwrap()).unwrap().request(
                http::Method::GET,
                &http::HeaderMap::new(),
                Bytes::new(),
            );
            (request.uri().to_string(), request.headers()["host"].to_str().unwrap().to_owned())
        };
        assert_eq!(host("https://a.example:443/x?y"), ("https://a.example/x?y".into(), "a.example".into()));
        assert_eq!(host("http://a.example:8080/"), ("http://a.example:8080/".into(), "a.example:8080".into()));
        assert_eq!(host("http://[::1]:9/mcp"), ("http://[::1]:9/mcp".into(), "[::1]:9".into()));
    }

    #[test]
    fn an_unreadable_ca_file_is_named() {
        let settings = Settings { ca_file: Some("/no/such/roots.pem".into()), ..Settings::default() };
        let error = Pool::default().client("a", &Url::parse("https://example.com").unwrap(), &settings).unwrap_err();
        assert!(error.to_string().starts_with("ca_file /no/such/roots.pem: "), "{error}");
    }
}
