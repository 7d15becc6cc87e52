//! An upstream that is a child process speaking newline-delimited JSON-RPC.
//!
//! The command runs without a shell, with exactly the spec's environment (`env_clear`
//! first), in the spec's directory, as the leader of its own process group. Four tasks
//! serve it: one reads stdout (answers to the pending requests, what concerns a watched
//! call to its watch, other notices to the inbox, the child's other requests answered),
//! one writes stdin, one logs stderr, one waits for the exit. A line names no stream it
//! came on, so a message that names no call is attributed only while one watched call is
//! in flight. A dead child (stdout ended, or the process exited) fails every pending
//! request with [`ClientError::Closed`] at once, and every later one.
//!
//! One task writes stdin, from three bounded queues, in this order: Bondry's answers to
//! the child's own requests (one place per request owed, so an admitted answer always has
//! room and never waits), its refusals past `max_pending_server_requests` (queued by the
//! stdout reader alone, waiting for room at most `ROOM_WITHIN` (`stdin.rs`): a child that floods
//! requests while reading nothing has them dropped, not held), then Bondry's requests,
//! which wait for room. A child that takes none of what Bondry writes for
//! `stdin_stall_ms` ends the connection, and the supervisor restarts it.
//!
//! A stdout line over `max_response_bytes` is never held whole: it is logged and dropped,
//! and the request it answered (its id read from the part kept) fails with
//! [`ClientError::TooLarge`]; the connection stays usable. A line that is not a JSON-RPC
//! message is logged and dropped.

use std::process::Stdio as Piped;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::{mpsc, watch};

use super::group::ProcessGroup;
use super::lines::{Line, LineSplitter};
use super::negotiate::Wire;
use super::pending::Pending;
use super::watched::{Reply, Router};
use super::wire::{Frame, Incoming, id_of_truncated, read};
use super::{ClientError, stderr};
use crate::spec::UpstreamSpec;
use crate::warnings;

mod stdin;

use stdin::{Lanes, Outbound};

/// How long the group has to end after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);
/// How often `close` looks whether the group has ended.
const POLL: Duration = Duration::from_millis(20);
/// Messages of Bondry's own (requests, notifications), and refusals, queued for stdin at
/// most, each.
const QUEUED: usize = 64;

pub(crate) struct Stdio {
    shared: Arc<Shared>,
    group: ProcessGroup,
    exited: watch::Receiver<bool>,
}

/// What the connection and its tasks share.
struct Shared {
    upstream: String,
    stdin: mpsc::Sender<Outbound>,
    /// Bondry's answers to the child's requests, each holding its claim: as many places as
    /// claims, so one always has room.
    answers: mpsc::Sender<Outbound>,
    /// Refusals past the owed limit, sent by the stdout reader only.
    refusals: mpsc::Sender<Outbound>,
    pending: Pending,
    router: Router,
    limit: usize,
    /// Why the connection ended before the child exited: its stdin stalled or failed.
    broken: watch::Sender<Option<String>>,
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
        let (queue, queued) = mpsc::channel(QUEUED);
        let (answers, answered) = mpsc::channel(spec.tunables.max_pending_server_requests.max(1));
        let (refusals, refused) = mpsc::channel(QUEUED);
        let shared = Arc::new(Shared {
            upstream: spec.name.clone(),
            stdin: queue,
            answers,
            refusals,
            pending: Pending::new(),
            router,
            limit: spec.tunables.max_response_bytes,
            broken: watch::Sender::new(None),
        });
        let (exit, exited) = watch::channel(false);
        tokio::spawn(Arc::clone(&shared).read_stdout(stdout));
        let lanes = Lanes { answered, refused, queued };
        tokio::spawn(Arc::clone(&shared).write_stdin(stdin, lanes, spec.tunables.stdin_stall, exited.clone()));
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

    /// Why the connection broke before the child exited, if it did.
    pub(crate) fn broken(&self) -> Option<String> {
        self.shared.broken.borrow().clone()
    }

    /// Resolves, with why, once the child has exited or its stdin broke.
    pub(crate) async fn ended(&self) -> String {
        let mut exited = self.exited.clone();
        let mut broken = self.shared.broken.subscribe();
        tokio::select! {
            // The channel closes only once the exit was sent, so its end counts as an exit.
            _ = exited.wait_for(|exited| *exited) => "the child exited".to_owned(),
            Ok(why) = broken.wait_for(Option::is_some) => why.clone().unwrap_or_default(),
        }
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
        self.shared.write(frame.body).await?;
        answer.await.unwrap_or(Err(ClientError::Closed))
    }

    async fn send(&self, frame: Frame) -> Result<(), ClientError> {
        self.shared.write(frame.body).await
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
    async fn read_stdout(self: Arc<Self>, stdout: ChildStdout) {
        let mut reader = BufReader::new(stdout);
        let mut lines = LineSplitter::new(self.limit);
        let mut dropping = false;
        loop {
            let (used, line) = match reader.fill_buf().await {
                Ok(chunk) if !chunk.is_empty() => lines.feed(chunk),
                _ => break,
            };
            reader.consume(used);
            if let Some(reply) = line.and_then(|line| self.receive(line)) {
                dropping = self.reply(reply, dropping).await;
            }
        }
        tracing::debug!(upstream = self.upstream, "upstream stdout ended");
        self.pending.close();
    }

    /// Acts on one line of stdout; Bondry's answer, when the line is a request it answers.
    fn receive(self: &Arc<Self>, line: Line) -> Option<Reply> {
        let upstream = self.upstream.as_str();
        let bytes = match line {
            Line::Whole(bytes) => bytes,
            Line::Overlong { prefix, length } => {
                if let Some(print) = warnings::hear(upstream, "", "message over max_response_bytes") {
                    tracing::warn!(
                        upstream,
                        length,
                        limit = self.limit,
                        suppressed = print.suppressed,
                        "upstream message over max_response_bytes dropped"
                    );
                }
                if let Some(id) = id_of_truncated(&prefix) {
                    self.pending.complete(&id, Err(ClientError::TooLarge { limit: self.limit }));
                }
                return None;
            }
        };
        if bytes.is_empty() {
            return None;
        }
        match read(&bytes) {
            Ok(Incoming::Response { id, answer }) => {
                if !self.pending.complete(&id, answer) {
                    tracing::debug!(upstream, id, "upstream response to no pending request dropped");
                }
            }
            // A line names no stream: only the sole call in flight may own what names no call.
            Ok(Incoming::Notice(notice)) => self.router.notice(upstream, notice, None, true),
            // Queued without waiting on the child, so a child that does not read its stdin
            // cannot stall its own stdout.
            Ok(Incoming::Request { id, method, params }) => {
                return self.router.request(upstream, id, method, params, None, true);
            }
            Err(why) => {
                if let Some(print) = warnings::hear(upstream, "", why) {
                    let (length, suppressed) = (bytes.len(), print.suppressed);
                    tracing::warn!(upstream, why, length, suppressed, "upstream stdout line dropped");
                }
            }
        }
        None
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
