//! The session table: the per-instance source of truth for handshake-era sessions.
//!
//! It holds each session's event stream, the messages queued while no stream is open,
//! its calls in flight (so `notifications/cancelled` and DELETE can reach them) and its
//! idle time. A session ends on DELETE, idle or absolute expiry, eviction or shutdown;
//! ending it cancels its calls and closes its stream.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use bondry_core::handler::{LogLevel, Watching};
use bondry_core::policy::{Principal, PrincipalKind};
use bondry_mcp_proto::jsonrpc::Id;
use bondry_mcp_proto::{Effect, Error, LiveSession, NewSession, NotStarted, SessionLookup};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::limits::RetryAfter;

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

    /// `network_key` is the client's ([`crate::limits::network_key`]).
    pub fn of(principal: &Principal, network_key: &str) -> Self {
        match principal.kind() {
            PrincipalKind::Anonymous => Self(format!("{}@{network_key}", principal.id())),
            PrincipalKind::User | PrincipalKind::Ticket | PrincipalKind::OAuth => Self(principal.id().to_owned()),
        }
    }
}

/// How a session's subscription is followed at the handler serving the resource: given
/// the session's realm and principal and the URI, the follow that lasts as long as the
/// subscription (`None` when nothing the principal can read serves it).
pub type Follow<'a> = &'a dyn Fn(&str, &Principal, &str) -> Option<Watching>;

/// Messages kept for a session while it has no open stream; past it the oldest is dropped.
const QUEUE: usize = 256;

struct Entry {
    realm: String,
    principal: Principal,
    owner: Owner,
    client_capabilities: Value,
    log_level: Option<LogLevel>,
    /// URIs of the resources the session subscribed to, each followed at the handler
    /// serving it until the subscription (or the session) ends.
    subscriptions: HashMap<String, Option<Watching>>,
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

/// Why a session's event stream could not open.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamRefused {
    /// The session ended, or never was.
    Gone,
    /// The session's stream is open already.
    Conflict,
    /// The owner has as many streams open as it may.
    TooMany,
}

impl From<StreamRefused> for Error {
    fn from(refused: StreamRefused) -> Self {
        match refused {
            StreamRefused::Gone => Error::SessionNotFound { id: None },
            StreamRefused::Conflict => Error::StreamConflict,
            StreamRefused::TooMany => RetryAfter::SECOND.into(),
        }
    }
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

/// Shards of the table: requests of different sessions rarely wait on one another.
const SHARDS: usize = 32;

/// Whose sessions count together in one realm.
type OwnerKey = (String, Owner);

/// One shard of the index: each owner's session ids.
type OwnerShard = HashMap<OwnerKey, HashSet<String>>;

/// The sessions of one listener, sharded by session id, with an index of each owner's
/// sessions (sharded by owner) for the caps. No lock covers the whole table, and nothing
/// a request does costs more than its own session, or its owner's at most-`cap` sessions
/// when it opens a session or a stream: the cost does not grow with the table.
///
/// Locks are taken owner shard first, then session shard, never the other way: paths
/// that remove a session take it out of its shard, let go, and then drop it from the
/// index, so the index may briefly name a session that is gone (and skips it).
pub struct Sessions {
    idle: Duration,
    shards: Box<[Mutex<HashMap<String, Entry>>]>,
    owners: Box<[Mutex<OwnerShard>]>,
    hasher: RandomState,
}

/// Locks a shard. Every critical section leaves its map consistent, so a panic elsewhere
/// while holding the lock does not make its contents unusable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl Sessions {
    pub fn new(idle: Duration) -> Self {
        Self {
            idle,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            owners: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
        }
    }

    fn shard(&self, sid: &str) -> MutexGuard<'_, HashMap<String, Entry>> {
        lock(&self.shards[self.hasher.hash_one(sid) as usize % SHARDS])
    }

    fn owner_shard(&self, key: &OwnerKey) -> MutexGuard<'_, OwnerShard> {
        lock(&self.owners[self.hasher.hash_one(key) as usize % SHARDS])
    }

    /// Adds how many sessions each realm holds to `counts`: a shard at a time, for the
    /// metrics (a scrape's cost, not a request's).
    pub fn count_by_realm(&self, counts: &mut HashMap<String, u64>) {
        for shard in &self.shards {
            for entry in lock(shard).values() {
                match counts.get_mut(&entry.realm) {
                    Some(count) => *count += 1,
                    None => drop(counts.insert(entry.realm.clone(), 1)),
                }
            }
        }
    }

    /// Ends the session `sid` if it is in the table.
    fn remove(&self, sid: &str) {
        let removed = self.shard(sid).remove(sid);
        if let Some(entry) = removed {
            entry.end();
            self.unindex(sid, entry);
        }
    }

    /// Drops a removed session from its owner's index (no session shard is held).
    fn unindex(&self, sid: &str, entry: Entry) {
        let key = (entry.realm, entry.owner);
        let mut owners = self.owner_shard(&key);
        if let Some(sids) = owners.get_mut(&key) {
            sids.remove(sid);
            if sids.is_empty() {
                owners.remove(&key);
            }
        }
    }

    /// Applies a reply's effect; `limits` are those of the session's realm, `epoch` its
    /// credentials' (a new session ends with it), and `owner` whose sessions count
    /// together.
    pub fn apply(
        &self,
        effect: Effect,
        limits: &SessionLimits,
        epoch: &CancellationToken,
        owner: &Owner,
        follow: Follow<'_>,
    ) {
        match effect {
            Effect::OpenSession(new) => self.open(new, limits.clone(), epoch, owner.clone()),
            Effect::CloseSession { sid } => self.remove(&sid),
            Effect::Cancel { sid, request } => {
                if let Some((_, token)) = self.shard(&sid).get(&sid).and_then(|entry| entry.inflight.get(&request)) {
                    token.cancel();
                }
            }
            Effect::SetLogLevel { sid, level } => {
                if let Some(entry) = self.shard(&sid).get_mut(&sid) {
                    entry.log_level = Some(level);
                }
            }
            Effect::Subscribe { sid, uri } => self.subscribe(&sid, uri, follow),
            Effect::Unsubscribe { sid, uri } => {
                if let Some(entry) = self.shard(&sid).get_mut(&sid) {
                    entry.subscriptions.remove(&uri);
                }
            }
            // An answer nobody waits for (late, unknown or repeated) is dropped.
            Effect::Respond { sid, id, answer } => {
                if let Some(waiting) = self.shard(&sid).get_mut(&sid).and_then(|entry| entry.awaiting.remove(&id)) {
                    let _ = waiting.send(answer);
                }
            }
        }
    }

    /// Subscribes session `sid` to `uri`, followed at the handler serving it (once: a
    /// repeated subscription keeps the first follow, or tries again if none was made).
    fn subscribe(&self, sid: &str, uri: String, follow: Follow<'_>) {
        let mut shard = self.shard(sid);
        let Some(entry) = shard.get_mut(sid) else { return };
        if entry.subscriptions.get(&uri).is_none_or(Option::is_none) {
            let watching = follow(&entry.realm, &entry.principal, &uri);
            entry.subscriptions.insert(uri, watching);
        }
    }

    /// Opens a session; past the owner's cap its least recently used sessions end first.
    /// The owner's shard is held throughout, so two opens of one owner cannot both pass.
    fn open(&self, new: NewSession, limits: SessionLimits, epoch: &CancellationToken, owner: Owner) {
        let key = (new.realm.clone(), owner.clone());
        let mut owners = self.owner_shard(&key);
        let owned = owners.entry(key).or_default();
        let cap = limits.sessions_per_principal.max(1);
        if owned.len() >= cap {
            let mut by_use: Vec<(Instant, String)> = Vec::with_capacity(owned.len());
            owned.retain(|sid| match self.shard(sid).get(sid) {
                Some(entry) => {
                    by_use.push((entry.last_used, sid.clone()));
                    true
                }
                None => false,
            });
            by_use.sort();
            for (_, sid) in by_use.iter().take((by_use.len() + 1).saturating_sub(cap)) {
                owned.remove(sid);
                if let Some(evicted) = self.shard(sid).remove(sid) {
                    tracing::info!(realm = %evicted.realm, "session evicted: the principal has too many");
                    evicted.end();
                }
            }
        }
        owned.insert(new.sid.clone());
        let entry = Entry {
            realm: new.realm,
            principal: new.principal,
            owner,
            client_capabilities: new.client_capabilities,
            log_level: None,
            subscriptions: HashMap::new(),
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
        };
        self.shard(&new.sid).insert(new.sid, entry);
    }

    /// Registers a call in flight and returns its cancellation token, cancelled by
    /// `notifications/cancelled`, DELETE or the session's end (a change of the realm's
    /// credentials included, at once). An id may not be reused while its call runs: the
    /// cap and cancellation both count on ids naming one call.
    pub fn begin_call(&self, sid: &str, request: &Id) -> Result<(CallSlot, CancellationToken), NotStarted> {
        let mut shard = self.shard(sid);
        let entry = shard.get_mut(sid).filter(|entry| !entry.ended.is_cancelled()).ok_or(NotStarted::SessionGone)?;
        if entry.inflight.contains_key(request) {
            return Err(NotStarted::IdInFlight);
        }
        if entry.inflight.len() >= entry.limits.inflight_per_session {
            return Err(NotStarted::TooMany);
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
        let mut shard = self.shard(sid);
        let entry = shard.get_mut(sid)?;
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
        if let Some(entry) = self.shard(sid).get_mut(sid) {
            entry.awaiting.remove(id);
        }
    }

    pub fn end_call(&self, slot: &CallSlot) {
        if let Some(entry) = self.shard(&slot.sid).get_mut(&slot.sid)
            && entry.inflight.get(&slot.request).is_some_and(|(number, _)| *number == slot.number)
        {
            entry.inflight.remove(&slot.request);
        }
    }

    /// Opens the session's GET stream: refused while another is alive, replacing a dead
    /// one, and past the owner's cap on open streams. The owner's shard is held while its
    /// streams are counted and this one is set, so the cap holds under concurrent GETs.
    pub fn open_stream(&self, sid: &str) -> Result<Stream, StreamRefused> {
        let key = {
            let shard = self.shard(sid);
            let entry = shard.get(sid).ok_or(StreamRefused::Gone)?;
            (entry.realm.clone(), entry.owner.clone())
        };
        let owners = self.owner_shard(&key);
        let open = owners.get(&key).map_or(0, |sids| {
            sids.iter().filter(|other| self.shard(other).get(*other).is_some_and(Entry::has_live_stream)).count()
        });
        let mut shard = self.shard(sid);
        let entry = shard.get_mut(sid).ok_or(StreamRefused::Gone)?;
        if entry.has_live_stream() {
            return Err(StreamRefused::Conflict);
        }
        if open >= entry.limits.listen_streams_per_principal {
            return Err(StreamRefused::TooMany);
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
        self.notify_where(realm, |entry| entry.subscriptions.contains_key(uri), wants, message);
    }

    fn notify_where(
        &self,
        realm: &str,
        selected: impl Fn(&Entry) -> bool,
        wants: impl Fn(&Principal) -> bool,
        message: &str,
    ) {
        let mut principals: Vec<Principal> = Vec::new();
        for shard in &self.shards {
            for entry in lock(shard).values().filter(|entry| entry.realm == realm && selected(entry)) {
                if !principals.contains(&entry.principal) {
                    principals.push(entry.principal.clone());
                }
            }
        }
        let wanted: Vec<Principal> = principals.into_iter().filter(|principal| wants(principal)).collect();
        if wanted.is_empty() {
            return;
        }
        for shard in &self.shards {
            for entry in lock(shard)
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
    }

    /// Ends sessions that are idle too long or past their lifetime, one shard at a time.
    pub fn sweep(&self) {
        let now = SystemTime::now();
        for shard in &self.shards {
            let mut ended = Vec::new();
            lock(shard).retain(|sid, entry| {
                let alive = entry.expires > now && entry.in_use(self.idle) && !entry.ended.is_cancelled();
                if !alive {
                    entry.end();
                    ended.push((sid.clone(), (entry.realm.clone(), entry.owner.clone())));
                }
                alive
            });
            for (sid, key) in ended {
                let mut owners = self.owner_shard(&key);
                if let Some(sids) = owners.get_mut(&key) {
                    sids.remove(&sid);
                    if sids.is_empty() {
                        owners.remove(&key);
                    }
                }
            }
        }
    }
}

impl SessionLookup for Sessions {
    fn find(&self, sid: &str) -> Option<LiveSession> {
        let mut shard = self.shard(sid);
        let entry = shard.get_mut(sid)?;
        if entry.expires <= SystemTime::now() || !entry.in_use(self.idle) || entry.ended.is_cancelled() {
            drop(shard);
            self.remove(sid);
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
        let owner = |address: &str| Owner::of(&anonymous, &crate::limits::network_key(address.parse().unwrap()));
        assert_eq!(owner("192.0.2.1"), Owner("anonymous@192.0.2.1".into()));
        assert_ne!(owner("192.0.2.1"), owner("192.0.2.2"));
        assert_eq!(owner("2001:db8:1:2:aaaa::1"), owner("2001:db8:1:2:bbbb::2"), "one /64, one owner");
        assert_ne!(owner("2001:db8:1:2::1"), owner("2001:db8:1:3::1"));
    }

    fn alice() -> Principal {
        Principal::new("alice", PrincipalKind::User, Vec::<String>::new())
    }

    fn new_session(sid: &str) -> NewSession {
        NewSession {
            sid: sid.into(),
            realm: "default".into(),
            principal: alice(),
            revision: bondry_mcp_proto::Revision::V2025_11_25,
            client_capabilities: Value::Null,
            expires: SystemTime::now() + Duration::from_secs(3600),
        }
    }

    fn opened(sessions: &Sessions, sid: &str, cap: usize) {
        let limits =
            SessionLimits { sessions_per_principal: cap, listen_streams_per_principal: 1, ..Default::default() };
        let owner = Owner::of(&alice(), "192.0.2.1");
        sessions.apply(
            Effect::OpenSession(new_session(sid)),
            &limits,
            &CancellationToken::new(),
            &owner,
            &|_, _, _| None,
        );
    }

    fn indexed(sessions: &Sessions) -> usize {
        sessions.owners.iter().map(|shard| lock(shard).values().map(HashSet::len).sum::<usize>()).sum()
    }

    #[test]
    fn past_the_cap_the_least_recently_used_session_ends() {
        let sessions = Sessions::new(Duration::from_secs(60));
        for sid in ["a", "b", "c"] {
            opened(&sessions, sid, 3);
            std::thread::sleep(Duration::from_millis(2));
        }
        // "a" is used again, so "b" is now the least recently used.
        assert!(sessions.find("a").is_some());
        opened(&sessions, "d", 3);
        assert!(sessions.find("b").is_none(), "the least recently used one is evicted");
        for sid in ["a", "c", "d"] {
            assert!(sessions.find(sid).is_some(), "{sid} stays");
        }
        assert_eq!(indexed(&sessions), 3);
    }

    #[test]
    fn the_index_forgets_every_session_that_ends() {
        let sessions = Sessions::new(Duration::from_millis(20));
        for sid in ["a", "b", "c"] {
            opened(&sessions, sid, 8);
        }
        sessions.apply(
            Effect::CloseSession { sid: "a".into() },
            &SessionLimits::default(),
            &CancellationToken::new(),
            &Owner::of(&alice(), "192.0.2.1"),
            &|_, _, _| None,
        );
        assert_eq!(indexed(&sessions), 2);
        std::thread::sleep(Duration::from_millis(40));
        assert!(sessions.find("b").is_none(), "idle past its time");
        assert_eq!(indexed(&sessions), 1);
        sessions.sweep();
        assert_eq!(indexed(&sessions), 0);
        assert!(sessions.owners.iter().all(|shard| lock(shard).is_empty()), "no empty owner sets are kept");
    }

    #[test]
    fn an_owners_open_streams_are_capped_across_its_sessions() {
        let sessions = Sessions::new(Duration::from_secs(60));
        opened(&sessions, "a", 8);
        opened(&sessions, "b", 8);
        let stream = sessions.open_stream("a").unwrap();
        assert_eq!(sessions.open_stream("a").err(), Some(StreamRefused::Conflict));
        assert_eq!(sessions.open_stream("b").err(), Some(StreamRefused::TooMany));
        drop(stream);
        assert!(sessions.open_stream("b").is_ok(), "a closed stream no longer counts");
        assert_eq!(sessions.open_stream("nope").err(), Some(StreamRefused::Gone));
    }
}
