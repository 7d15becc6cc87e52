//! Everything Bondry sends over HTTP to what it fronts (upstream MCP servers, HTTP
//! procedures) goes through one client from here: one pooled client per (realm, origin,
//! client settings), kept for the life of the process, so a reload that keeps a backend
//! keeps its warm connections, and one realm never rides another's.
//!
//! Every client follows no redirect (a backend's answer is its own, never another
//! origin's), ignores the process's proxy variables unless a stanza names a proxy, and
//! trusts the system roots plus a stanza's `ca_file`. What a backend needs per request
//! (its headers, its signature) is set on the request, never on the shared client.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

pub use reqwest::{Client, Url};

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

/// A client with `settings`, trusting `roots` (PEM) besides the system's. HTTP/1.1 unless
/// the settings ask for HTTP/2 with prior knowledge: a client shared by several backends
/// of one origin keeps each request on a connection of its own, so that an event stream
/// left unread holds no other request back.
fn build(settings: &Settings, roots: Option<&[u8]>) -> Result<Client, SetupError> {
    let mut builder =
        Client::builder().redirect(reqwest::redirect::Policy::none()).connect_timeout(settings.connect_timeout);
    builder = match &settings.proxy {
        Some(proxy) => {
            builder.proxy(reqwest::Proxy::all(proxy.as_str()).map_err(|e| SetupError::Proxy(e.to_string()))?)
        }
        None => builder.no_proxy(),
    };
    builder = if settings.http2_prior_knowledge { builder.http2_prior_knowledge() } else { builder.http1_only() };
    if let (Some(pem), Some(path)) = (roots, &settings.ca_file) {
        let roots = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| SetupError::CaFile { path: path.display().to_string(), why: e.to_string() })?;
        builder = builder.tls_certs_merge(roots);
    }
    builder.build().map_err(|e| SetupError::Client(e.to_string()))
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

    #[test]
    fn an_unreadable_ca_file_is_named() {
        let settings = Settings { ca_file: Some("/no/such/roots.pem".into()), ..Settings::default() };
        let error = Pool::default().client("a", &Url::parse("https://example.com").unwrap(), &settings).unwrap_err();
        assert!(error.to_string().starts_with("ca_file /no/such/roots.pem: "), "{error}");
    }
}
