//! The child's stdin, written by one task from three bounded queues (Bondry's answers
//! first, then refusals, then Bondry's own messages); a child that takes nothing for
//! `stdin_stall_ms` breaks the connection.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, watch};

use super::Shared;
use crate::client::ClientError;
use crate::client::owed::Claim;
use crate::client::watched::Reply;

/// How long a refusal waits for room before it is dropped, and the next ones at once
/// while there is none: a child that reads its stdin gets them however fast it asks.
const ROOM_WITHIN: Duration = Duration::from_millis(100);

/// The writer's queues, in the order it takes them.
pub(super) struct Lanes {
    pub(super) answered: mpsc::Receiver<Outbound>,
    pub(super) refused: mpsc::Receiver<Outbound>,
    pub(super) queued: mpsc::Receiver<Outbound>,
}

/// One message for the child's stdin, and the claim of the request it answers, if any:
/// owed until written.
pub(super) struct Outbound {
    line: Bytes,
    _claim: Option<Claim>,
}

impl Shared {
    /// Queues `message` for stdin, waiting for room.
    pub(super) async fn write(&self, message: Bytes) -> Result<(), ClientError> {
        let outbound = Outbound { line: message, _claim: None };
        self.stdin.send(outbound).await.map_err(|_| ClientError::Closed)
    }

    /// Queues Bondry's answer to the child's request without waiting on the child: an
    /// admitted one in its own place; a refusal past the owed limit within [`ROOM_WITHIN`],
    /// or at once while `dropping`. Whether refusals are being dropped now.
    pub(super) async fn reply(&self, reply: Reply, dropping: bool) -> bool {
        let Some(claim) = reply.claim else {
            let refusal = Outbound { line: reply.body.into(), _claim: None };
            let queued = if dropping {
                self.refusals.try_send(refusal).is_ok()
            } else {
                matches!(tokio::time::timeout(ROOM_WITHIN, self.refusals.send(refusal)).await, Ok(Ok(())))
            };
            if !queued && !dropping {
                tracing::debug!(upstream = self.upstream, "refusals to the upstream dropped: its stdin is full");
            }
            return !queued;
        };
        // Never full: it has a place per claim.
        let _ = self.answers.try_send(Outbound { line: reply.body.into(), _claim: Some(claim) });
        dropping
    }

    /// Writes the queues to the child's stdin, answers first, until the child exits; a
    /// child that takes nothing for `stall`, or a failed write, breaks the connection,
    /// failing what waits on it.
    pub(super) async fn write_stdin(
        self: Arc<Self>,
        mut stdin: ChildStdin,
        mut lanes: Lanes,
        stall: Duration,
        mut exited: watch::Receiver<bool>,
    ) {
        let broken = loop {
            let outbound = tokio::select! {
                biased;
                Some(outbound) = lanes.answered.recv() => outbound,
                Some(outbound) = lanes.refused.recv() => outbound,
                Some(outbound) = lanes.queued.recv() => outbound,
                _ = exited.wait_for(|exited| *exited) => return,
            };
            if let Err(broken) = write_draining(&mut stdin, &outbound.line, stall).await {
                break broken;
            }
        };
        tracing::warn!(upstream = self.upstream, why = broken, "upstream child connection broken");
        // Nothing more reaches the child: what waits on it fails now.
        lanes.queued.close();
        lanes.refused.close();
        lanes.answered.close();
        self.pending.close();
        self.broken.send_replace(Some(broken));
    }
}

/// Writes `message` and its line end whole; the child must take some of it within every
/// `stall`: a slow reader of a long message is not a stalled one. Why not, when it fails.
async fn write_draining(stdin: &mut ChildStdin, message: &[u8], stall: Duration) -> Result<(), String> {
    for part in [message, b"\n"] {
        let mut written = 0;
        while written < part.len() {
            match tokio::time::timeout(stall, stdin.write(&part[written..])).await {
                Ok(Ok(0)) => return Err("its stdin is closed".to_owned()),
                Ok(Ok(taken)) => written += taken,
                Ok(Err(error)) => return Err(format!("its stdin failed: {error}")),
                Err(_) => return Err(stalled(stall)),
            }
        }
    }
    match tokio::time::timeout(stall, stdin.flush()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(format!("its stdin failed: {error}")),
        Err(_) => Err(stalled(stall)),
    }
}

fn stalled(stall: Duration) -> String {
    format!("its stdin did not drain for {} ms (stdin_stall_ms): restarted", stall.as_millis())
}
