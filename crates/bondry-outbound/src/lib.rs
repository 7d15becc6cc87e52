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

/// Clients by (realm, origin, settings).
#[derive(Default)]
pub struct Pool {
    clients: Mutex<HashMap<(String, String, Settings), Client>>,
}

impl Pool {
    /// The process's pool: every backend of every realm draws from it, across reloads.
    pub fn shared() -> &'static Pool {
        static SHARED: OnceLock<Pool> = OnceLock::new();
        SHARED.get_or_init(Pool::default)
    }

    /// The client for `url`'s origin in `realm` with `settings`, made on first use. A
    /// client is cheap to clone: clones share its connections.
    pub fn client(&self, realm: &str, url: &Url, settings: &Settings) -> Result<Client, SetupError> {
        let key = (realm.to_owned(), url.origin().ascii_serialization(), settings.clone());
        let mut clients = self.clients.lock().unwrap_or_else(|poison| poison.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = build(settings)?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

fn build(settings: &Settings) -> Result<Client, SetupError> {
    let mut builder =
        Client::builder().redirect(reqwest::redirect::Policy::none()).connect_timeout(settings.connect_timeout);
    builder = match &settings.proxy {
        Some(proxy) => {
            builder.proxy(reqwest::Proxy::all(proxy.as_str()).map_err(|e| SetupError::Proxy(e.to_string()))?)
        }
        None => builder.no_proxy(),
    };
    if settings.http2_prior_knowledge {
        builder = builder.http2_prior_knowledge();
    }
    if let Some(path) = &settings.ca_file {
        let refused = |why: String| SetupError::CaFile { path: path.display().to_string(), why };
        // Read once, as the client is made; the file is small and local.
        let pem = std::fs::read(path).map_err(|e| refused(e.to_string()))?;
        let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| refused(e.to_string()))?;
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
    fn an_unreadable_ca_file_is_named() {
        let settings = Settings { ca_file: Some("/no/such/roots.pem".into()), ..Settings::default() };
        let error = Pool::default().client("a", &Url::parse("https://example.com").unwrap(), &settings).unwrap_err();
        assert!(error.to_string().starts_with("ca_file /no/such/roots.pem: "), "{error}");
    }
}
