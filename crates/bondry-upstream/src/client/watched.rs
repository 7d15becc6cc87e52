//! What reaches one request while it waits: the upstream's progress and log messages
//! about it, and the requests it makes of the request's caller.
//!
//! A message is the call's when it says so or travels with it, never by a guess:
//! - a progress notification names the call by its token, which Bondry makes the
//!   request's own id;
//! - over HTTP, whatever an upstream sends on a request's response stream is that
//!   request's;
//! - over stdio, a message that names no request is a call's only while exactly one
//!   watched call is in flight (every call is watched, a completion too), and otherwise
//!   nobody's: a log message goes to the inbox, a request is refused (`cannot attribute
//!   request`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use bondry_mcp_proto::jsonrpc::Id;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::answer;
use super::owed::{Claim, Owed};
use super::{Inbox, Notice};
use crate::spec::Root;
use crate::warnings;

/// Events queued per watched call before new notices are dropped; a request that finds
/// the queue full is answered as one nobody's (`cannot attribute request`).
pub const CALL_EVENTS: usize = 64;

/// How a request is watched: where its events go and what the caller wants to hear.
#[derive(Debug, Clone)]
pub struct Watch {
    pub events: mpsc::Sender<CallEvent>,
    /// Whether to ask the upstream for progress (`_meta.progressToken`, the request's id).
    pub progress: bool,
    /// The log level to ask a modern upstream for in the request's `_meta`.
    pub log_level: Option<String>,
}

/// One event of a watched call.
#[derive(Debug)]
pub enum CallEvent {
    /// `notifications/progress` or `notifications/message` about the call.
    Notice(Notice),
    /// A request the upstream makes of the call's caller, to be answered with
    /// [`super::Connection::respond`].
    Asked(Asked),
}

/// A request from the upstream: `elicitation/create`, `sampling/createMessage`…
#[derive(Debug, Clone)]
pub struct Asked {
    pub id: Id,
    pub method: String,
    pub params: Map<String, Value>,
    /// Held until the request is answered or given up: it counts against
    /// `max_pending_server_requests` until then.
    pub(crate) _claim: Option<Claim>,
}

/// The watched requests of one connection in flight, by request id.
#[derive(Debug, Default)]
pub(crate) struct Watchers(Arc<Mutex<HashMap<String, mpsc::Sender<CallEvent>>>>);

/// A request watched until this drops.
pub(crate) struct Watched {
    watchers: Arc<Mutex<HashMap<String, mpsc::Sender<CallEvent>>>>,
    id: String,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.watchers.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
    }
}

/// Where a message from the upstream is to go.
#[derive(Debug)]
pub(crate) enum Route {
    Call(mpsc::Sender<CallEvent>),
    /// Nobody's call: a notice goes to the inbox, a request is refused.
    Nobody,
}

/// Where what the upstream sends on its own goes: a watched call's events, else the
/// inbox (notices) or Bondry's own answer (requests).
#[derive(Debug, Clone)]
pub(crate) struct Router {
    pub(crate) inbox: Inbox,
    pub(crate) watchers: Arc<Watchers>,
    /// The requests Bondry owes the upstream an answer.
    pub(crate) owed: Owed,
    /// Bondry's answer to `roots/list`: the stanza's.
    pub(crate) roots: Vec<Root>,
}

/// Bondry's own answer to a request of the upstream, to be written to it: the claim it
/// holds until then, if it was admitted among the owed requests.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) body: Vec<u8>,
    pub(crate) claim: Option<Claim>,
}

impl Router {
    /// Delivers `notice`, which came on the response stream of the request `carrier` if
    /// any; `sole` as in [`Watchers::route_notice`].
    pub(crate) fn notice(&self, upstream: &str, notice: Notice, carrier: Option<&str>, sole: bool) {
        let carrier = carrier.and_then(|id| self.watchers.get(id));
        match self.watchers.route_notice(&notice, carrier.as_ref(), sole) {
            Route::Call(events) => {
                if events.try_send(CallEvent::Notice(notice)).is_err() {
                    tracing::debug!(upstream, "upstream notice dropped: its call reads no faster");
                }
            }
            Route::Nobody => self.inbox.deliver(upstream, notice),
        }
    }

    /// Hands the upstream's request `id` to the call it belongs to (`None`), or answers
    /// it here: `ping` and `roots/list` always, a request that is nobody's (or whose call
    /// cannot take it) with -32603, and so, at once, any request past
    /// `max_pending_server_requests` owed. `carrier` and `sole` as in [`Router::notice`].
    pub(crate) fn request(
        &self,
        upstream: &str,
        id: Id,
        method: String,
        params: Map<String, Value>,
        carrier: Option<&str>,
        sole: bool,
    ) -> Option<Reply> {
        let Some(claim) = self.owed.claim() else {
            if let Some(print) = warnings::hear(upstream, "", "too many requests awaiting an answer") {
                let (limit, suppressed) = (self.owed.limit(), print.suppressed);
                tracing::warn!(
                    upstream,
                    method,
                    limit,
                    suppressed,
                    "upstream request refused: max_pending_server_requests owed"
                );
            }
            return Some(Reply { body: answer::too_many(&id), claim: None });
        };
        if answer::is_local(&method) {
            return Some(Reply { body: answer::answer(&id, &method, &self.roots), claim: Some(claim) });
        }
        let carrier = carrier.and_then(|id| self.watchers.get(id));
        // A call that cannot take the request is as good as none.
        if let Route::Call(events) = self.watchers.route_request(carrier.as_ref(), sole)
            && let Ok(permit) = events.try_reserve()
        {
            permit.send(CallEvent::Asked(Asked { id, method, params, _claim: Some(claim) }));
            return None;
        }
        if let Some(print) = warnings::hear(upstream, "", "cannot attribute request") {
            tracing::warn!(
                upstream,
                method,
                suppressed = print.suppressed,
                "upstream request refused: it is no one call's"
            );
        }
        Some(Reply { body: answer::answer(&id, &method, &self.roots), claim: Some(claim) })
    }
}

impl Watchers {
    pub(crate) fn watch(&self, id: &str, events: mpsc::Sender<CallEvent>) -> Watched {
        self.table().insert(id.to_owned(), events);
        Watched { watchers: Arc::clone(&self.0), id: id.to_owned() }
    }

    /// The events of the watched request `id`.
    pub(crate) fn get(&self, id: &str) -> Option<mpsc::Sender<CallEvent>> {
        self.table().get(id).cloned()
    }

    /// Where `notice` goes. `carrier` is the call whose response stream carried it;
    /// `sole` lets a message that names no call be the only watched call's (stdio).
    pub(crate) fn route_notice(&self, notice: &Notice, carrier: Option<&mpsc::Sender<CallEvent>>, sole: bool) -> Route {
        match notice.method.as_str() {
            "notifications/progress" => {
                let token = notice.params.get("progressToken").and_then(Value::as_str);
                match token.and_then(|token| self.table().get(token).cloned()) {
                    Some(events) => Route::Call(events),
                    None => Route::Nobody,
                }
            }
            "notifications/message" => self.route_unnamed(carrier, sole),
            _ => Route::Nobody,
        }
    }

    /// Where a request of the upstream's own goes; see [`Watchers::route_notice`].
    pub(crate) fn route_request(&self, carrier: Option<&mpsc::Sender<CallEvent>>, sole: bool) -> Route {
        self.route_unnamed(carrier, sole)
    }

    fn route_unnamed(&self, carrier: Option<&mpsc::Sender<CallEvent>>, sole: bool) -> Route {
        if let Some(carrier) = carrier {
            return Route::Call(carrier.clone());
        }
        let table = self.table();
        match (sole, table.len()) {
            (true, 1) => table.values().next().cloned().map_or(Route::Nobody, Route::Call),
            _ => Route::Nobody,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<CallEvent>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn notice(method: &str, params: Value) -> Notice {
        Notice { method: method.into(), params: params.as_object().cloned().unwrap_or_default() }
    }

    fn is_call(route: Route, events: &mpsc::Sender<CallEvent>) -> bool {
        matches!(route, Route::Call(sender) if sender.same_channel(events))
    }

    #[test]
    fn progress_goes_to_the_call_its_token_names_and_nowhere_else() {
        let watchers = Watchers::default();
        let (first, _a) = mpsc::channel(1);
        let (second, _b) = mpsc::channel(1);
        let _one = watchers.watch("bondry-1", first.clone());
        let _two = watchers.watch("bondry-2", second.clone());
        let progress = |token: Value| notice("notifications/progress", json!({"progressToken": token, "progress": 1}));
        assert!(is_call(watchers.route_notice(&progress(json!("bondry-2")), None, true), &second));
        assert!(is_call(watchers.route_notice(&progress(json!("bondry-1")), Some(&second), false), &first));
        let nobody = |route| matches!(route, Route::Nobody);
        assert!(nobody(watchers.route_notice(&progress(json!("bondry-9")), Some(&second), true)));
        assert!(nobody(watchers.route_notice(&progress(json!(1)), None, true)));
    }

    #[test]
    fn an_unnamed_message_is_its_carriers_or_the_sole_calls_and_never_guessed() {
        let watchers = Watchers::default();
        let (first, _a) = mpsc::channel(1);
        let (second, _b) = mpsc::channel(1);
        let log = notice("notifications/message", json!({"level": "info", "data": "x"}));
        let nobody = |route| matches!(route, Route::Nobody);
        assert!(nobody(watchers.route_notice(&log, None, true)), "no call in flight");
        let one = watchers.watch("bondry-1", first.clone());
        assert!(is_call(watchers.route_notice(&log, None, true), &first), "the only call");
        assert!(nobody(watchers.route_notice(&log, None, false)), "only where allowed");
        let _two = watchers.watch("bondry-2", second.clone());
        assert!(nobody(watchers.route_request(None, true)), "two calls: nobody's");
        assert!(is_call(watchers.route_request(Some(&first), true), &first), "the carrier's");
        drop(one);
        assert!(is_call(watchers.route_request(None, true), &second), "the other ended");
        let other = notice("notifications/tools/list_changed", json!({}));
        assert!(nobody(watchers.route_notice(&other, Some(&second), true)), "the realm's");
    }
}
