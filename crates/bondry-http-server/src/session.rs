//! The session table: the per-instance source of truth for handshake-era sessions.
//!
//! It holds each session's event stream, the messages queued while no stream is open,
//! its calls in flight (so `notifications/cancelled` and DELETE can reach them) and its
//! idle time. A session ends on DELETE, idle or absolute expiry, eviction or shutdown;
//! ending it cancels its calls and closes its stream.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use bondry_core::handler::LogLevel;
use bondry_core::policy::{Principal, PrincipalKind};
use bondry_mcp_proto::jsonrpc::Id;
use bondry_mcp_proto::{Effect, LiveSession, NewSession, SessionLookup};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Caps on one principal's sessions in one realm, and on each session's activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions per principal; past it the least recently used is evicted.
    pub sessions_per_principal: usize,
    /// Calls in flight per session; past it a call is refused with 429.
    pub inflight_per_session: usize,
    /// Open GET streams per principal; past it a GET is refused with 429.
    pub listen_streams_per_principal: usize,
    /// How long a call waits for the client to answer the input it asked for.
    pub client_response_timeout: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            sessions_per_principal: 64,
            inflight_per_session: 32,
            listen_streams_per_principal: 16,
            client_response_timeout: Duration::from_secs(60),
        }
    }
}

/// Whose sessions count together against the caps: a principal, or for anonymous callers
/// the anonymous principal at one client address (an IPv6 address by its /64), so one
/// anonymous client cannot evict another's sessions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner(String);

impl Owner {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn of(principal: &Principal, address: IpAddr) -> Self {
        match principal.kind() {
            PrincipalKind::Anonymous => Self(format!("{}@{}", principal.id(), crate::limits::network_key(address))),
            PrincipalKind::User | PrincipalKind::Ticket | PrincipalKind::OAuth => Self(principal.id().to_owned()),
        }
    }
}

/// Messages kept for a session while it has no open stream; past it the oldest is dropped.
const QUEUE: usize = 256;

struct Entry {
    realm: String,
    principal: Principal,
    owner: Owner,
    client_capabilities: Value,
    log_level: Option<LogLevel>,
    /// URIs of the resources the session subscribed to.
    subscriptions: HashSet<String>,
    /// Requests the server sent to the client, by the id it sent them as, each with the
    /// call waiting for the answer.
    awaiting: HashMap<Id, oneshot::Sender<Result<Value, Value>>>,
    next_request: u64,
    expires: SystemTime,
    last_used: Instant,
    limits: SessionLimits,
    stream: Option<mpsc::Sender<String>>,
    pending: VecDeque<String>,
    /// Calls in flight by request id; the number tells a call from a later one that reused
    /// its id after it ended.
    inflight: HashMap<Id, (u64, CancellationToken)>,
    next_call: u64,
    /// Cancelled when the session ends.
    ended: CancellationToken,
}

impl Entry {
    fn end(&self) {
        self.ended.cancel();
        for (_, token) in self.inflight.values() {
            token.cancel();
        }
    }

    fn has_live_stream(&self) -> bool {
        self.stream.as_ref().is_some_and(|sender| !sender.is_closed())
    }

    /// In use: recently named by a request, listening, or running a call.
    fn in_use(&self, idle: Duration) -> bool {
        self.last_used.elapsed() < idle || self.has_live_stream() || !self.inflight.is_empty()
    }
}

/// Why a call or stream could not start.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Gone,
    TooMany,
    Conflict,
    /// A call with this request id is already running in the session.
    IdInFlight,
}

/// A call registered in its session; [`Sessions::end_call`] takes it back.
#[derive(Debug)]
pub struct CallSlot {
    sid: String,
    request: Id,
    number: u64,
}

/// Answers a session may wait for at once, over all its calls.
const MAX_AWAITING: usize = 64;

/// An open GET stream: what was queued, the live feed, and the session's end.
pub struct Stream {
    pub pending: Vec<String>,
    pub feed: mpsc::Receiver<String>,
    pub ended: CancellationToken,
    /// The session's absolute end: the stream closes then, sweep or not.
    pub expires: SystemTime,
}

/// The sessions of one listener.
pub struct Sessions {
    idle: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

impl Sessions {
    pub fn new(idle: Duration) -> Self {
        Self { idle, entries: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // Every critical section leaves the map consistent, so a panic elsewhere while
        // holding the lock does not make its contents unusable.
        self.entries.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Applies a reply's effect; `limits` are those of the session's realm, `epoch` its
    /// credentials' (a new session ends with it), and `owner` whose sessions count
    /// together.
    pub fn apply(&self, effect: Effect, limits: &SessionLimits, epoch: &CancellationToken, owner: &Owner) {
        match effect {
            Effect::OpenSession(new) => self.open(new, limits.clone(), epoch, owner.clone()),
            Effect::CloseSession { sid } => {
                if let Some(entry) = self.lock().remove(&sid) {
                    entry.end();
                }
            }
            Effect::Cancel { sid, request } => {
                if let Some((_, token)) = self.lock().get(&sid).and_then(|entry| entry.inflight.get(&request)) {
                    token.cancel();
                }
            }
            Effect::SetLogLevel { sid, level } => {
                if let Some(entry) = self.lock().get_mut(&sid) {
                    entry.log_level = Some(level);
                }
            }
            Effect::Subscribe { sid, uri } => {
                if let Some(entry) = self.lock().get_mut(&sid) {
                    entry.subscriptions.insert(uri);
                }
            }
            Effect::Unsubscribe { sid, uri } => {
                if let Some(entry) = self.lock().get_mut(&sid) {
                    entry.subscriptions.remove(&uri);
                }
            }
            // An answer nobody waits for (late, unknown or repeated) is dropped.
            Effect::Respond { sid, id, answer } => {
                if let Some(waiting) = self.lock().get_mut(&sid).and_then(|entry| entry.awaiting.remove(&id)) {
                    let _ = waiting.send(answer);
                }
            }
        }
    }

    fn open(&self, new: NewSession, limits: SessionLimits, epoch: &CancellationToken, owner: Owner) {
        let mut entries = self.lock();
        let mut owned: Vec<(Instant, String)> = entries
            .iter()
            .filter(|(_, entry)| entry.realm == new.realm && entry.owner == owner)
            .map(|(sid, entry)| (entry.last_used, sid.clone()))
            .collect();
        let cap = limits.sessions_per_principal.max(1);
        if owned.len() >= cap {
            owned.sort();
            for (_, sid) in &owned[..=owned.len() - cap] {
                if let Some(evicted) = entries.remove(sid) {
                    tracing::info!(realm = %evicted.realm, "session evicted: the principal has too many");
                    evicted.end();
                }
            }
        }
        entries.insert(
            new.sid,
            Entry {
                realm: new.realm,
                principal: new.principal,
                owner,
                client_capabilities: new.client_capabilities,
                log_level: None,
                subscriptions: HashSet::new(),
                awaiting: HashMap::new(),
                next_request: 0,
                expires: new.expires,
                last_used: Instant::now(),
                limits,
                stream: None,
                pending: VecDeque::new(),
                inflight: HashMap::new(),
                next_call: 0,
                // A change of the realm's credentials ends the session: the credential
                // that opened it may be revoked, and cannot be checked again.
                ended: epoch.child_token(),
            },
        );
    }

    /// Registers a call in flight and returns its cancellation token, cancelled by
    /// `notifications/cancelled`, DELETE or the session's end (a change of the realm's
    /// credentials included, at once). An id may not be reused while its call runs: the
    /// cap and cancellation both count on ids naming one call.
    pub fn begin_call(&self, sid: &str, request: &Id) -> Result<(CallSlot, CancellationToken), Refused> {
        let mut entries = self.lock();
        let entry = entries.get_mut(sid).filter(|entry| !entry.ended.is_cancelled()).ok_or(Refused::Gone)?;
        if entry.inflight.contains_key(request) {
            return Err(Refused::IdInFlight);
        }
        if entry.inflight.len() >= entry.limits.inflight_per_session {
            return Err(Refused::TooMany);
        }
        entry.next_call += 1;
        let token = entry.ended.child_token();
        entry.inflight.insert(request.clone(), (entry.next_call, token.clone()));
        Ok((CallSlot { sid: sid.to_owned(), request: request.clone(), number: entry.next_call }, token))
    }

    /// Mints the id of a request the server is about to send the client in session
    /// `sid`, and the receiver of its answer; `None` when the session is gone or already
    /// waits for as many answers as it may.
    pub fn expect_answer(&self, sid: &str) -> Option<(Id, oneshot::Receiver<Result<Value, Value>>)> {
        let mut entries = self.lock();
        let entry = entries.get_mut(sid)?;
        if entry.awaiting.len() >= MAX_AWAITING {
            return None;
        }
        entry.next_request += 1;
        let id = Id::String(format!("bondry-{}", entry.next_request));
        let (sender, receiver) = oneshot::channel();
        entry.awaiting.insert(id.clone(), sender);
        Some((id, receiver))
    }

    /// Stops waiting for the answer to `id` (the wait timed out or the call ended).
    pub fn forget_answer(&self, sid: &str, id: &Id) {
        if let Some(entry) = self.lock().get_mut(sid) {
            entry.awaiting.remove(id);
        }
    }

    pub fn end_call(&self, slot: &CallSlot) {
        if let Some(entry) = self.lock().get_mut(&slot.sid)
            && entry.inflight.get(&slot.request).is_some_and(|(number, _)| *number == slot.number)
        {
            entry.inflight.remove(&slot.request);
        }
    }

    /// Opens the session's GET stream: refused while another is alive, replacing a dead one.
    pub fn open_stream(&self, sid: &str) -> Result<Stream, Refused> {
        let mut entries = self.lock();
        let entry = entries.get(sid).ok_or(Refused::Gone)?;
        if entry.has_live_stream() {
            return Err(Refused::Conflict);
        }
        let (realm, owner) = (entry.realm.clone(), entry.owner.clone());
        let open = entries.values().filter(|e| e.realm == realm && e.owner == owner && e.has_live_stream()).count();
        let entry = entries.get_mut(sid).ok_or(Refused::Gone)?;
        if open >= entry.limits.listen_streams_per_principal {
            return Err(Refused::TooMany);
        }
        let (sender, feed) = mpsc::channel(QUEUE);
        entry.stream = Some(sender);
        Ok(Stream {
            pending: entry.pending.drain(..).collect(),
            feed,
            ended: entry.ended.clone(),
            expires: entry.expires,
        })
    }

    /// Sends `message` to every session of `realm` whose principal `wants` it: on its
    /// stream if one is open, else into its bounded queue. `wants` runs once per distinct
    /// principal, outside the table's lock.
    pub fn notify(&self, realm: &str, wants: impl Fn(&Principal) -> bool, message: &str) {
        self.notify_where(realm, |_| true, wants, message);
    }

    /// [`Sessions::notify`], for the sessions of `realm` subscribed to `uri` only.
    pub fn notify_subscribed(&self, realm: &str, uri: &str, wants: impl Fn(&Principal) -> bool, message: &str) {
        self.notify_where(realm, |entry| entry.subscriptions.contains(uri), wants, message);
    }

    fn notify_where(
        &self,
        realm: &str,
        selected: impl Fn(&Entry) -> bool,
        wants: impl Fn(&Principal) -> bool,
        message: &str,
    ) {
        let mut principals: Vec<Principal> = Vec::new();
        for entry in self.lock().values().filter(|entry| entry.realm == realm && selected(entry)) {
            if !principals.contains(&entry.principal) {
                principals.push(entry.principal.clone());
            }
        }
        let wanted: Vec<Principal> = principals.into_iter().filter(|principal| wants(principal)).collect();
        if wanted.is_empty() {
            return;
        }
        for entry in self
            .lock()
            .values_mut()
            .filter(|entry| entry.realm == realm && selected(entry) && wanted.contains(&entry.principal))
        {
            let delivered = entry.stream.as_ref().is_some_and(|sender| sender.try_send(message.to_owned()).is_ok());
            if !delivered {
                if entry.pending.len() == QUEUE {
                    entry.pending.pop_front();
                    tracing::warn!(realm, "session queue full; the oldest notification was dropped");
                }
                entry.pending.push_back(message.to_owned());
            }
        }
    }

    /// Ends sessions that are idle too long or past their lifetime.
    pub fn sweep(&self) {
        let now = SystemTime::now();
        self.lock().retain(|_, entry| {
            let alive = entry.expires > now && entry.in_use(self.idle) && !entry.ended.is_cancelled();
            if !alive {
                entry.end();
            }
            alive
        });
    }
}

impl SessionLookup for Sessions {
    fn find(&self, sid: &str) -> Option<LiveSession> {
        let mut entries = self.lock();
        let entry = entries.get_mut(sid)?;
        if entry.expires <= SystemTime::now() || !entry.in_use(self.idle) || entry.ended.is_cancelled() {
            if let Some(entry) = entries.remove(sid) {
                entry.end();
            }
            return None;
        }
        entry.last_used = Instant::now();
        Some(LiveSession {
            client_capabilities: entry.client_capabilities.clone(),
            log_level: entry.log_level,
            subscriptions: entry.subscriptions.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_callers_are_told_apart_by_address() {
        let anonymous = Principal::anonymous(vec![]);
        let owner = |address: &str| Owner::of(&anonymous, address.parse().unwrap());
        assert_eq!(owner("192.0.2.1"), Owner("anonymous@192.0.2.1".into()));
        assert_ne!(owner("192.0.2.1"), owner("192.0.2.2"));
        assert_eq!(owner("2001:db8:1:2:aaaa::1"), owner("2001:db8:1:2:bbbb::2"), "one /64, one owner");
        assert_ne!(owner("2001:db8:1:2::1"), owner("2001:db8:1:3::1"));
    }
}
