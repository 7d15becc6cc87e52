//! Workload 7, memory: how much a server's resident set grows per idle session, per open
//! event stream and per catalogue entry, each on a fresh process so that nothing freed
//! by an earlier measurement is reused by a later one.

use std::time::Duration;

use tokio::time::sleep;

use crate::http1::{Conn, post};
use crate::load::{self, Script};
use crate::plan::{self, MODERN};
use crate::servers::Server;

/// One growth figure: KiB per unit over `count` units.
pub struct Growth {
    pub what: String,
    pub peer: String,
    pub count: usize,
    pub kib_per_unit: f64,
}

/// Lets the allocator's background threads settle before a reading.
async fn settled_rss(server: &Server) -> Result<u64, String> {
    sleep(Duration::from_millis(300)).await;
    server.rss_kib()
}

/// Opens `count` handshake-era sessions over a few connections and leaves them idle.
pub async fn sessions(server: &Server, peer: &str, count: usize) -> Result<Growth, String> {
    let before = settled_rss(server).await?;
    let script = Script { handshake: Some(plan::handshake("/mcp")), request: String::new(), expect: "" };
    let mut conns = Vec::new();
    for _ in 0..4 {
        conns.push(Conn::connect(server.addr).await?);
    }
    for index in 0..count {
        load::open(&mut conns[index % 4], &script).await?;
    }
    let after = settled_rss(server).await?;
    Ok(growth("idle session", peer, count, before, after))
}

/// Holds `count` event streams open: modern `subscriptions/listen` streams, or with
/// `in_session` a session's GET stream each.
pub async fn streams(server: &Server, peer: &str, count: usize, in_session: bool) -> Result<Growth, String> {
    let before = settled_rss(server).await?;
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        let mut conn = Conn::connect(server.addr).await?;
        let request = if in_session {
            let script =
                Script { handshake: Some(plan::handshake("/mcp")), request: "{SESSION}".to_owned(), expect: "" };
            let session = String::from_utf8(load::open(&mut conn, &script).await?).map_err(|e| e.to_string())?;
            format!(
                "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\n\
                 mcp-protocol-version: {}\r\n\r\n",
                plan::HANDSHAKE
            )
            .into_bytes()
        } else {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
            );
            let headers = [
                "content-type: application/json".to_owned(),
                "accept: application/json, text/event-stream".to_owned(),
                format!("mcp-protocol-version: {MODERN}"),
                "mcp-method: subscriptions/listen".to_owned(),
            ];
            post("/mcp", &headers, &body)
        };
        conn.send(&request).await?;
        let status = conn.read_status().await?;
        if status != 200 {
            return Err(format!("an event stream answered {status}"));
        }
        held.push(conn);
    }
    let after = settled_rss(server).await?;
    drop(held);
    let what = if in_session { "open session GET stream" } else { "open subscriptions/listen stream" };
    Ok(growth(what, peer, count, before, after))
}

/// The growth from the smaller catalogue's server to the larger's, per extra entry.
pub fn catalogue(small: (&Server, usize), large: (&Server, usize)) -> Result<Growth, String> {
    let (small_rss, large_rss) = (small.0.rss_kib()?, large.0.rss_kib()?);
    Ok(growth("catalogue entry (tool)", "Bondry", large.1 - small.1, small_rss, large_rss))
}

fn growth(what: &str, peer: &str, count: usize, before: u64, after: u64) -> Growth {
    Growth {
        what: what.to_owned(),
        peer: peer.to_owned(),
        count,
        kib_per_unit: after.saturating_sub(before) as f64 / count.max(1) as f64,
    }
}
