//! What Bondry's tests share, by job: the test configuration and its builder
//! (`configuration.rs`), the real server on an ephemeral loopback port (`server.rs`) and
//! an HTTP client for it (`client.rs`), the real binaries (`binary.rs`), the test
//! handlers (`handlers.rs`), a strict reader of the metrics' text (`exposition.rs`), and, from `bondry-test-sans-io`, what the protocol crate's
//! tests share (the seeded random source among it).

use std::time::Duration;

pub use bondry_test_sans_io as sans_io;
pub use bondry_test_sans_io::handlers::{Items, NotePrompt};

mod binary;
mod client;
mod configuration;
mod exposition;
mod handlers;
mod server;

pub use binary::*;
pub use client::*;
pub use configuration::*;
pub use exposition::{Exposition, Family, Sample};
pub use handlers::*;
pub use server::*;

pub const PROTOCOL: &str = "2026-07-28";

/// How long a test waits for something that must happen: generous, so a loaded machine
/// does not fail a test, yet a wait that succeeds ends as soon as it can.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Polls `condition` every 20 ms until it holds (`true`) or [`PATIENCE`] has passed (`false`).
pub async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The SHA-256 (hex) of a ticket, as the configuration stores it.
pub fn ticket_hash(ticket: &str) -> String {
    bondry_core::canon::sha256_hex(ticket.as_bytes())
}
