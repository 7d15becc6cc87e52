//! Held exchanges: a handshake upstream's call waiting, in memory under the invocation's
//! random id, for its caller's retry, which only that caller takes up, once, within
//! `input_wait_ms`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bondry_core::handler::HandlerRequest;
use serde_json::json;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::input::Asking;
use super::machine::{Action, Driven};
use super::{Held, Ran, give_up, run_timed};
use crate::upstream::Upstream;

/// Held exchanges per principal in a realm at once.
const EXCHANGES_PER_PRINCIPAL: usize = 8;
/// The state key of a held exchange's id.
pub(super) const EXCHANGE: &str = "exchange";

/// The exchanges of one upstream held for their callers' retries, by id.
#[derive(Default)]
pub struct Exchanges(Mutex<HashMap<String, Waiting>>);

/// A held exchange as its retry finds it: whose it is, and where to ask for the call.
struct Waiting {
    principal: String,
    /// The upstream that asked: only a call of its capabilities takes the exchange up.
    upstream: String,
    resume: oneshot::Sender<oneshot::Sender<Held>>,
}

impl Exchanges {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A run's end for its caller: over, or held for the caller's retry (refused when the
/// caller holds enough already).
pub(super) fn held_or_over(
    upstream: &Arc<Upstream>,
    exchanges: &Arc<Exchanges>,
    ran: Ran,
    request: &HandlerRequest,
) -> Driven {
    let (mut held, requests) = match ran {
        Ran::Over(driven) => return driven,
        Ran::Hold(held, requests) => (*held, requests),
    };
    let principal = request.principal.id().to_owned();
    let id = request.invocation.as_str().to_owned();
    let (resume, resumed) = oneshot::channel();
    {
        let mut table = exchanges.table();
        if table.values().filter(|waiting| waiting.principal == principal).count() >= EXCHANGES_PER_PRINCIPAL {
            drop(table);
            held.bridge.handle_hold_refused();
            return finish_off(held).unwrap_or(Driven::TooManyExchanges);
        }
        table.insert(id.clone(), Waiting { principal, upstream: upstream.name().to_owned(), resume });
    }
    let wait = upstream.spec().tunables.input_wait;
    tokio::spawn(wait_for_retry(Arc::clone(exchanges), id.clone(), held, resumed, wait));
    Driven::Asking(Asking { requests, state: json!({ EXCHANGE: id }) })
}

/// Keeps a held call until its retry asks for it, or gives up after `wait`.
async fn wait_for_retry(
    exchanges: Arc<Exchanges>,
    id: String,
    held: Held,
    resumed: oneshot::Receiver<oneshot::Sender<Held>>,
    wait: Duration,
) {
    let (mut held, why) = match tokio::time::timeout(wait, resumed).await {
        Ok(Ok(hand_over)) => match hand_over.send(held) {
            Ok(()) => return,
            Err(held) => (held, "the caller went away"),
        },
        _ => {
            exchanges.table().remove(&id);
            (held, "the caller did not answer in time")
        }
    };
    held.bridge.handle_abandoned(why);
    if let Some(Action::GiveUp { asked, why }) = held.bridge.poll() {
        give_up(held.flight, asked, why).await;
    }
}

/// Gives up what a call that ended while held still owes the upstream, in the background;
/// how the bridge says it ended.
fn finish_off(mut held: Held) -> Option<Driven> {
    let (mut driven, mut gave_up) = (None, None);
    while let Some(action) = held.bridge.poll() {
        match action {
            Action::GiveUp { asked, why } => gave_up = Some((asked, why)),
            Action::Done(ended) => driven = Some(ended),
            _ => {}
        }
    }
    if let Some((asked, why)) = gave_up {
        tokio::spawn(give_up(held.flight, asked, why));
    }
    driven
}

/// Takes up the exchange `id` for the caller's retry: the upstream gets the caller's
/// answers, and the call is driven on.
pub(super) async fn resume(
    upstream: &Arc<Upstream>,
    exchanges: &Arc<Exchanges>,
    id: &str,
    request: &HandlerRequest,
) -> Driven {
    let waiting = {
        let mut table = exchanges.table();
        // Only its own caller takes an exchange up, once.
        match table.get(id) {
            Some(waiting) if waiting.principal == request.principal.id() && waiting.upstream == upstream.name() => {
                table.remove(id)
            }
            _ => None,
        }
    };
    let Some(waiting) = waiting else { return Driven::Lost };
    let (hand_over, handed) = oneshot::channel();
    if waiting.resume.send(hand_over).is_err() {
        return Driven::Lost;
    }
    let Ok(mut held) = handed.await else { return Driven::Lost };
    let responses = request.retry.as_ref().map(|retry| &retry.responses);
    held.bridge.handle_resumed(responses, Instant::now().into_std());
    let ran = run_timed(upstream, held, request).await;
    held_or_over(upstream, exchanges, ran, request)
}
