//! One relayed call as a state machine, with no socket, clock or task of its own: the
//! driver (`super`) feeds it what the upstream and the caller do (`handle_*`) and the time,
//! and does what [`Bridge::poll`] says, until it says [`Action::Done`].
//!
//! 1. The driver sends [`Bridge::outgoing`] and feeds [`Bridge::handle_started`] (or
//!    [`Bridge::handle_unstarted`]); the call's deadline runs from then.
//! 2. While the upstream works: each progress or log notice ([`Bridge::handle_notice`]),
//!    each request it makes of the caller ([`Bridge::handle_asked`]), its answer
//!    ([`Bridge::handle_settled`]), the caller going away ([`Bridge::handle_cancelled`]),
//!    and, at [`Bridge::poll_timeout`], [`Bridge::handle_timeout`].
//! 3. [`Action::Hold`]: the call waits for its caller's retry, without a deadline; the
//!    driver feeds [`Bridge::handle_resumed`] with the retry's answers, or
//!    [`Bridge::handle_hold_refused`] / [`Bridge::handle_abandoned`].
//!
//! The rules are those of `super`'s documentation: a handshake upstream's requests are
//! gathered until [`QUIET`] after the last; a modern upstream's `input_required` is the
//! caller's but for its roots, answered here for at most [`ROUNDS_ANSWERED_HERE`] rounds;
//! the call timeout stops while the caller is asked.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bondry_core::handler::InputRequest;
use bondry_mcp_proto::error::code as rpc;
use serde_json::Value;

use super::input::{self, Asking, Carried, UpstreamInput};
use crate::client::{Asked, Notice, Outgoing};
use crate::spec::UpstreamSpec;
use crate::upstream::Unrelayed;

/// How long a handshake upstream's requests are gathered after the last one before the
/// caller is asked.
pub const QUIET: Duration = Duration::from_millis(50);
/// Rounds in a row a modern upstream may ask Bondry alone (for its roots) in one call.
pub const ROUNDS_ANSWERED_HERE: usize = 8;

/// How a driven call ended.
#[derive(Debug)]
pub enum Driven {
    /// The upstream's answer (a modern upstream's `input_required` among them), or why
    /// there is none.
    Answered(Result<Value, Unrelayed>),
    /// The caller is to be asked.
    Asking(Asking),
    /// A retry named an exchange that is not (or no longer, or not the caller's) held.
    Lost,
    /// The upstream asked for input Bondry cannot pass on, as it says.
    Unpassable(String),
    /// The caller holds as many exchanges as it may.
    TooManyExchanges,
    /// The caller went away.
    Cancelled,
}

/// What a call may do with the upstream's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A call that may ask its caller for input (a tool, prompt or resource).
    Call,
    /// A request that cannot (a completion): the upstream's requests are refused.
    Completion,
}

/// What the driver is to do next.
#[derive(Debug)]
pub enum Action {
    /// Pass the upstream's progress or log message to the caller.
    Emit(Notice),
    /// Answer the upstream's request.
    Answer { asked: Asked, answer: Result<Value, (i64, String)> },
    /// Refuse the upstream's request, for a reason of Bondry's worth an operator's note.
    Refuse { asked: Asked, code: i64, message: &'static str },
    /// Send [`Bridge::outgoing`] again, a new round carrying answers; then
    /// [`Bridge::handle_started`] or [`Bridge::handle_unstarted`].
    Resend,
    /// The call is past its timeout: settle it as timed out.
    Expire,
    /// Hold the call for its caller's retry and ask the caller these.
    Hold(BTreeMap<String, InputRequest>),
    /// The call is over: answer these of the upstream's requests -32603 with `why`, then
    /// drop the call, which cancels it upstream.
    GiveUp { asked: Vec<Asked>, why: &'static str },
    /// The call is over.
    Done(Driven),
}

/// Where a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// On its way to the upstream, or about to be.
    Running,
    /// Past its deadline, to be settled as timed out.
    Expiring,
    /// Waiting for its caller's retry.
    Held,
    Over,
}

/// One relayed call's rules and state.
#[derive(Debug)]
pub struct Bridge {
    mode: Mode,
    spec: Arc<UpstreamSpec>,
    outgoing: Outgoing,
    stage: Stage,
    /// What is left of the call timeout, which does not run while the caller is asked.
    remaining: Duration,
    deadline: Option<Instant>,
    /// When the gathered requests are asked of the caller.
    quiet: Option<Instant>,
    /// The handshake upstream's requests the caller is to be asked, by key.
    requests: BTreeMap<String, InputRequest>,
    /// The upstream's requests waiting on an answer, by the key the caller answers under
    /// (empty for one nobody is left to ask).
    asked: Vec<(String, Asked)>,
    /// Rounds a modern upstream asked Bondry alone.
    rounds_here: usize,
    actions: VecDeque<Action>,
    /// How it ended, polled after every other action.
    ended: Option<Driven>,
}

impl Bridge {
    /// The call of `outgoing` to an upstream of `spec`; a caller's retry `carried` into it.
    pub fn new(mode: Mode, mut outgoing: Outgoing, carried: Option<Carried>, spec: Arc<UpstreamSpec>) -> Self {
        if let Some(carried) = carried {
            carried.write(&mut outgoing);
        }
        Self {
            mode,
            remaining: spec.tunables.call_timeout,
            spec,
            outgoing,
            stage: Stage::Running,
            deadline: None,
            quiet: None,
            requests: BTreeMap::new(),
            asked: Vec::new(),
            rounds_here: 0,
            actions: VecDeque::new(),
            ended: None,
        }
    }

    /// The request to send the upstream.
    pub fn outgoing(&self) -> &Outgoing {
        &self.outgoing
    }

    /// The next thing to do; `None` while the bridge waits for an event.
    pub fn poll(&mut self) -> Option<Action> {
        self.actions.pop_front().or_else(|| self.ended.take().map(Action::Done))
    }

    /// When [`Bridge::handle_timeout`] is due, while the upstream works.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.stage != Stage::Running {
            return None;
        }
        match (self.quiet, self.deadline) {
            (Some(quiet), Some(deadline)) => Some(quiet.min(deadline)),
            (quiet, deadline) => quiet.or(deadline),
        }
    }

    /// The request went out at `now`: what is left of the call timeout runs.
    pub fn handle_started(&mut self, now: Instant) {
        self.deadline = Some(now.checked_add(self.remaining).unwrap_or(now));
    }

    /// The request could not be sent.
    pub fn handle_unstarted(&mut self, why: Unrelayed) {
        self.end(Driven::Answered(Err(why)));
    }

    /// The upstream's progress or log message about the call.
    pub fn handle_notice(&mut self, notice: Notice) {
        if self.stage != Stage::Over {
            self.actions.push_back(Action::Emit(notice));
        }
    }

    /// The upstream asks the caller, who declared the client capabilities `declared`.
    pub fn handle_asked(&mut self, asked: Asked, declared: &Value, now: Instant) {
        match (self.stage, self.mode) {
            (Stage::Running, Mode::Call) => match input::admit(&asked, declared, self.spec.allow_url_elicitation) {
                Ok(request) => {
                    let key = format!("upstream-{}", self.asked.len() + 1);
                    self.requests.insert(key.clone(), request);
                    self.asked.push((key, asked));
                    self.quiet = Some(now + QUIET);
                }
                Err((code, message)) => self.actions.push_back(Action::Refuse { asked, code, message }),
            },
            (Stage::Running, Mode::Completion) => {
                let answer = Err((rpc::INTERNAL_ERROR, "this request cannot ask for input".to_owned()));
                self.actions.push_back(Action::Answer { asked, answer });
            }
            // Nobody is left to ask: given up with the call.
            _ => self.asked.push((String::new(), asked)),
        }
    }

    /// The upstream asked alongside its answer, read before it: nobody is left to ask, so
    /// it is given up with the round.
    pub fn handle_unasked(&mut self, asked: Asked) {
        self.asked.push((String::new(), asked));
    }

    /// The upstream's answer, as its connection settled it (a timeout among them).
    pub fn handle_settled(&mut self, settled: Result<Value, Unrelayed>) {
        if !matches!(self.stage, Stage::Running | Stage::Expiring) {
            return;
        }
        // The round is over: what it gathered is never asked, in this round or the next.
        self.give_up("the call ended before the caller was asked");
        self.requests.clear();
        self.quiet = None;
        let result = match (self.mode, settled) {
            (Mode::Call, Ok(result)) => result,
            (_, settled) => return self.end(Driven::Answered(settled)),
        };
        match input::upstream_input(&result, &self.spec) {
            None => self.end(Driven::Answered(Ok(result))),
            Some(Err(why)) => self.end(Driven::Unpassable(why)),
            Some(Ok(UpstreamInput { asking: Some(asking), .. })) => self.end(Driven::Asking(asking)),
            Some(Ok(UpstreamInput { asking: None, carried })) => {
                self.rounds_here += 1;
                if self.rounds_here > ROUNDS_ANSWERED_HERE {
                    return self.end(Driven::Unpassable("the upstream asks for its roots over and over".into()));
                }
                // Each round is a request of its own, with a call timeout of its own.
                carried.write(&mut self.outgoing);
                self.remaining = self.spec.tunables.call_timeout;
                self.deadline = None;
                self.stage = Stage::Running;
                self.actions.push_back(Action::Resend);
            }
        }
    }

    /// [`Bridge::poll_timeout`] is reached at `now`: the caller is asked what was
    /// gathered, or the call timed out.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.stage != Stage::Running {
            return;
        }
        if self.quiet.is_some_and(|quiet| quiet <= now) {
            let deadline = self.deadline.unwrap_or(now);
            self.remaining = deadline.saturating_duration_since(now);
            self.quiet = None;
            self.stage = Stage::Held;
            self.actions.push_back(Action::Hold(std::mem::take(&mut self.requests)));
        } else if self.deadline.is_some_and(|deadline| deadline <= now) {
            self.stage = Stage::Expiring;
            self.actions.push_back(Action::Expire);
        }
    }

    /// The caller went away.
    pub fn handle_cancelled(&mut self) {
        if self.stage != Stage::Over {
            self.end(Driven::Cancelled);
        }
    }

    /// The caller's retry at `now` answers the held call with `responses`, by key: the
    /// upstream gets them, and what is left of the call timeout runs again.
    pub fn handle_resumed(&mut self, responses: Option<&BTreeMap<String, Value>>, now: Instant) {
        if self.stage != Stage::Held {
            return;
        }
        for (key, asked) in std::mem::take(&mut self.asked) {
            let answer = responses
                .and_then(|responses| responses.get(&key))
                .cloned()
                .ok_or((rpc::INTERNAL_ERROR, "the caller gave no answer".to_owned()));
            self.actions.push_back(Action::Answer { asked, answer });
        }
        self.stage = Stage::Running;
        self.handle_started(now);
    }

    /// The held call cannot be kept: its caller holds as many as it may.
    pub fn handle_hold_refused(&mut self) {
        if self.stage == Stage::Held {
            self.give_up("the caller holds too many pending inputs");
            self.end(Driven::TooManyExchanges);
        }
    }

    /// The held call is given up (`why`): its caller did not come back for it.
    pub fn handle_abandoned(&mut self, why: &'static str) {
        if self.stage == Stage::Held {
            self.give_up(why);
            self.stage = Stage::Over;
        }
    }

    fn end(&mut self, driven: Driven) {
        // Requests gathered but never asked: the upstream is not left waiting on them.
        self.give_up("the call ended before the caller was asked");
        self.stage = Stage::Over;
        self.ended = Some(driven);
    }

    fn give_up(&mut self, why: &'static str) {
        if !self.asked.is_empty() {
            let asked = self.asked.drain(..).map(|(_, asked)| asked).collect();
            self.actions.push_back(Action::GiveUp { asked, why });
        }
    }
}
