//! The real server in-process on an ephemeral loopback port, with its audit file.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bondry::assemble::{Overrides, assemble};
use bondry::config;
use bondry_http_server::Running;
use bondry_http_server::audit::AuditWriter;
use serde_json::Value;

use crate::{PATIENCE, Req, Resp, default_config, eventually, served_builtins};

/// A running server with its audit file.
pub struct TestServer {
    pub addr: SocketAddr,
    running: Option<Running>,
    audit: Option<Arc<AuditWriter>>,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

impl TestServer {
    pub async fn start() -> Self {
        Self::with_config(&default_config()).await
    }

    /// Starts a server from TOML text; the audit sink is a file in a fresh temp dir.
    pub async fn with_config(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("{text}\n[audit]\nsink = \"file\"\npath = \"audit.jsonl\"\n");
        let loaded = config::parse("test.toml", &text, dir.path().to_owned(), []).unwrap();
        let assembled = assemble(&loaded, &served_builtins(), &Overrides::default(), true).unwrap();
        let running = bondry_http_server::start(assembled.server).await.unwrap();
        let addr = running.local_addrs()[0].1;
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();

        Self { addr, running: Some(running), audit: assembled.audit, dir, client }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The live registry of `realm`, as a host program reaches it.
    pub fn registry(&self, realm: &str) -> Arc<bondry_core::realm::Registry> {
        self.running.as_ref().unwrap().registry(realm).unwrap()
    }

    /// Swaps in `realm`'s catalogue without the capability `id`, as a host program would:
    /// what makes the server tell its clients that a list changed.
    pub fn swap_without(&self, realm: &str, id: &str) {
        self.registry(realm).swap(self.snapshot_without(realm, id));
    }

    /// `realm`'s snapshot without the capability `id`, as a host program would swap it in.
    pub fn snapshot_without(&self, realm: &str, id: &str) -> bondry_core::realm::RealmSnapshot {
        use bondry_core::registry::{Catalogue, Registration};
        let old = self.registry(realm).snapshot();
        let registrations = old
            .catalogue
            .iter()
            .filter(|capability| capability.id().as_str() != id)
            .map(|capability| Registration {
                descriptor: capability.descriptor.clone(),
                handler: capability.handler.clone(),
            })
            .collect();
        let lint = bondry_mcp_proto::lint::McpLint;
        let catalogue =
            Catalogue::build(old.catalogue.version() + 1, registrations, &Default::default(), &[&lint]).unwrap();
        bondry_core::realm::RealmSnapshot::new(&old.realm, catalogue, old.policy.clone(), old.keys.clone())
    }

    /// Who may call `realm`, as a host program reaches it.
    pub fn auth(&self, realm: &str) -> Arc<bondry_http_server::AuthSlot> {
        self.running.as_ref().unwrap().auth(realm).unwrap()
    }

    /// Calls running and event streams open right now.
    pub fn gauges(&self) -> bondry_http_server::gauges::Reading {
        self.running.as_ref().unwrap().gauges()
    }

    /// Waits up to [`PATIENCE`] for no call to run and no stream to be open.
    pub async fn settles(&self) -> bool {
        let quiet = bondry_http_server::gauges::Reading::default();
        eventually(|| self.gauges() == quiet).await
    }

    /// Waits up to [`PATIENCE`] for a call to be running.
    pub async fn call_running(&self) -> bool {
        eventually(|| self.gauges().calls > 0).await
    }

    pub fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// Waits up to [`PATIENCE`] for the audit file to hold `count` records (the writer
    /// flushes whenever it has nothing more to write); the caller checks them after `stop`.
    pub async fn audited(&self, count: usize) {
        let path = self.audit_path();
        eventually(|| std::fs::read_to_string(&path).is_ok_and(|text| text.matches('\n').count() >= count)).await;
    }

    /// Sends `request` with `client` and goes away (drops it, which closes its connection)
    /// once a call runs on the server. Panics if the answer comes first or no call starts
    /// within [`PATIENCE`]; the handler must run long enough for its start to be seen.
    pub async fn send_and_leave(&self, client: &reqwest::Client, request: &Req) {
        let url = format!("http://{}{}", self.addr, request.path);
        let send = request.builder(client, &url).body(request.body.clone()).send();
        tokio::select! {
            answered = send => panic!("the client gives up first, yet it was answered: {answered:?}"),
            running = self.call_running() => assert!(running, "no call started within {PATIENCE:?}"),
        }
    }

    /// Sends a request built by `request` to `path` (default `/mcp`).
    pub async fn send(&self, request: Req) -> Resp {
        let url = format!("http://{}{}", self.addr, request.path);
        let response = request.builder(&self.client, &url).body(request.body.clone()).send().await.unwrap();
        Resp::read(response).await
    }

    /// Stops the server, flushes the audit sink and returns its records.
    pub async fn stop(self) -> Vec<Value> {
        self.stop_expecting(true).await
    }

    /// [`TestServer::stop`], asserting whether in-flight requests drained within the grace period.
    pub async fn stop_expecting(mut self, drained: bool) -> Vec<Value> {
        assert_eq!(self.running.take().unwrap().shutdown().await, drained, "drained within the grace period");
        if let Some(audit) = self.audit.take() {
            audit.close();
        }
        let text = std::fs::read_to_string(self.audit_path()).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }
}

impl TestServer {
    /// Sends `request` as raw HTTP/1.1 bytes, with exactly the headers it has (no client
    /// adds defaults), and returns the status line's code and the body.
    pub async fn send_raw(&self, request: &Req) -> (u16, Vec<u8>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut head =
            format!("{} {} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n", request.method, request.path, self.addr)
                .into_bytes();
        for (name, value) in &request.headers {
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(format!("content-length: {}\r\n\r\n", request.body.len()).as_bytes());
        head.extend_from_slice(&request.body);
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(&head).await.unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        let text = String::from_utf8_lossy(&response);
        let status = text[9..12].parse().unwrap();
        let body_at = text.find("\r\n\r\n").unwrap() + 4;
        (status, response[body_at..].to_vec())
    }
}
