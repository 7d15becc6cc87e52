//! An upstream that is a child process speaking newline-delimited JSON-RPC.
//!
//! The command runs without a shell, with exactly the spec's environment (`env_clear`
//! first), in the spec's directory, as the leader of its own process group. Three tasks
//! serve it: one reads stdout (answers to the pending requests, what concerns a watched
//! call to its watch, other notices to the inbox, the child's other requests answered),
//! one logs stderr, one waits for the exit. A line names no stream it came on, so a
//! message that names no call is attributed only while one watched call is in flight. A dead
//! child (stdout ended, or the process exited) fails every pending request with
//! [`ClientError::Closed`] at once, and every later one.
//!
//! A stdout line over `max_response_bytes` is never held whole: it is logged and dropped,
//! and the request it answered (its id read from the part kept) fails with
//! [`ClientError::TooLarge`]; the connection stays usable. A line that is not a JSON-RPC
//! message is logged and dropped.

use std::process::Stdio as Piped;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Mutex, watch};

use super::group::ProcessGroup;
use super::lines::{Line, LineSplitter};
use super::negotiate::Wire;
use super::pending::Pending;
use super::watched::{Asked, Router};
use super::wire::{Frame, Incoming, id_of_truncated, read};
use super::{ClientError, answer, stderr};
use crate::spec::{Root, UpstreamSpec};

/// How long the group has to end after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);
/// How often `close` looks whether the group has ended.
const POLL: Duration = Duration::from_millis(20);

pub(crate) struct Stdio {
    shared: Arc<Shared>,
    group: ProcessGroup,
    exited: watch::Receiver<bool>,
}

/// What the connection and its stdout reader share.
struct Shared {
    upstream: String,
    stdin: Mutex<ChildStdin>,
    pending: Pending,
    router: Router,
    roots: Vec<Root>,
    limit: usize,
}

impl Stdio {
    /// Starts the child of `spec`, which must be a stdio upstream.
    pub(crate) fn start(
        spec: &UpstreamSpec,
        command: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
        router: Router,
    ) -> Result<Self, ClientError> {
        let mut child_command = Command::new(command);
        child_command
            .args(args)
            .env_clear()
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(Piped::piped())
            .stdout(Piped::piped())
            .stderr(Piped::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(cwd) = cwd {
            child_command.current_dir(cwd);
        }
        let mut child = child_command
            .spawn()
            .map_err(|error| ClientError::Unreachable(format!("cannot start {command}: {error}")))?;
        let group = ProcessGroup::of_leader(child.id());
        let not_piped = || ClientError::Unreachable(format!("{command}: its standard streams are not piped"));
        let stdin = child.stdin.take().ok_or_else(not_piped)?;
        let stdout = child.stdout.take().ok_or_else(not_piped)?;
        let stderr = child.stderr.take().ok_or_else(not_piped)?;
        let shared = Arc::new(Shared {
            upstream: spec.name.clone(),
            stdin: Mutex::new(stdin),
            pending: Pending::new(),
            router,
            roots: spec.roots.clone(),
            limit: spec.max_response_bytes,
        });
        let (exit, exited) = watch::channel(false);
        tokio::spawn(Arc::clone(&shared).read_stdout(stdout));
        tokio::spawn(stderr::log_lines(spec.name.clone(), stderr));
        tokio::spawn(Arc::clone(&shared).wait(child, exit));
        tracing::debug!(upstream = spec.name, group = group.id(), "upstream child started");
        Ok(Self { shared, group, exited })
    }

    /// The child's process group id (its pid).
    pub(crate) fn process_group(&self) -> Option<i32> {
        self.group.id()
    }

    /// SIGTERM to the group, SIGKILL after [`TERM_GRACE`] if any of it is left.
    pub(crate) async fn close(&self) {
        self.group.terminate();
        if !self.ended_within(TERM_GRACE).await {
            tracing::warn!(upstream = self.shared.upstream, "upstream child ignored SIGTERM: killing its group");
            self.group.kill();
            self.ended_within(TERM_GRACE).await;
        }
        self.group.mark_ended();
        self.shared.pending.close();
    }

    /// Resolves once the child has exited.
    pub(crate) async fn exited(&self) {
        let mut exited = self.exited.clone();
        // The channel closes only once the exit was sent, so its end counts as an exit.
        let _ = exited.wait_for(|exited| *exited).await;
    }

    /// Whether the child has exited and its group is empty within `limit`.
    async fn ended_within(&self, limit: Duration) -> bool {
        let mut exited = self.exited.clone();
        tokio::time::timeout(limit, async {
            // The channel closes only once the exit was sent, so its end counts as an exit.
            let _ = exited.wait_for(|exited| *exited).await;
            while !self.group.is_empty() {
                tokio::time::sleep(POLL).await;
            }
        })
        .await
        .is_ok()
    }
}

impl Wire for Stdio {
    async fn exchange(&self, frame: Frame) -> Result<serde_json::Value, ClientError> {
        let id = frame.id.as_deref().ok_or_else(|| ClientError::Invalid("a request without an id".into()))?;
        let answer = self.shared.pending.register(id)?;
        // Dropped before its answer (the caller went away), the request stops waiting.
        let _forget = Forget { pending: &self.shared.pending, id };
        self.shared.write(&frame.body).await?;
        answer.await.unwrap_or(Err(ClientError::Closed))
    }

    async fn send(&self, frame: Frame) -> Result<(), ClientError> {
        self.shared.write(&frame.body).await
    }
}

struct Forget<'a> {
    pending: &'a Pending,
    id: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.pending.forget(self.id);
    }
}

impl Shared {
    async fn write(&self, message: &[u8]) -> Result<(), ClientError> {
        let mut stdin = self.stdin.lock().await;
        let written = async {
            stdin.write_all(message).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        written.await.map_err(|_| ClientError::Closed)
    }

    async fn read_stdout(self: Arc<Self>, stdout: ChildStdout) {
        let mut reader = BufReader::new(stdout);
        let mut lines = LineSplitter::new(self.limit);
        loop {
            let (used, line) = match reader.fill_buf().await {
                Ok(chunk) if !chunk.is_empty() => lines.feed(chunk),
                _ => break,
            };
            reader.consume(used);
            if let Some(line) = line {
                self.receive(line);
            }
        }
        tracing::debug!(upstream = self.upstream, "upstream stdout ended");
        self.pending.close();
    }

    fn receive(self: &Arc<Self>, line: Line) {
        let upstream = self.upstream.as_str();
        let bytes = match line {
            Line::Whole(bytes) => bytes,
            Line::Overlong { prefix, length } => {
                tracing::warn!(
                    upstream,
                    length,
                    limit = self.limit,
                    "upstream message over max_response_bytes dropped"
                );
                if let Some(id) = id_of_truncated(&prefix) {
                    self.pending.complete(&id, Err(ClientError::TooLarge { limit: self.limit }));
                }
                return;
            }
        };
        if bytes.is_empty() {
            return;
        }
        match read(&bytes) {
            Ok(Incoming::Response { id, answer }) => {
                if !self.pending.complete(&id, answer) {
                    tracing::debug!(upstream, id, "upstream response to no pending request dropped");
                }
            }
            // A line names no stream: only the sole call in flight may own what names no call.
            Ok(Incoming::Notice(notice)) => self.router.notice(upstream, notice, None, true),
            Ok(Incoming::Request { id, method, params }) => {
                let Err(Asked { id, method, .. }) = self.router.request(Asked { id, method, params }, None, true)
                else {
                    return;
                };
                let body = answer::answer(&id, &method, &self.roots);
                // Answered beside the reading, so a child that does not read its stdin
                // cannot stall its own stdout.
                let shared = Arc::clone(self);
                tokio::spawn(async move { shared.write(&body).await });
            }
            Err(why) => tracing::warn!(upstream, why, length = bytes.len(), "upstream stdout line dropped"),
        }
    }

    async fn wait(self: Arc<Self>, mut child: Child, exit: watch::Sender<bool>) {
        match child.wait().await {
            Ok(status) => tracing::info!(upstream = self.upstream, %status, "upstream child exited"),
            Err(error) => tracing::warn!(upstream = self.upstream, %error, "upstream child lost"),
        }
        self.pending.close();
        exit.send_replace(true);
    }
}
