//! Handshake-era sessions as the adapter sees them: sealed ids, the lookup the runtime's
//! session table answers, and the effects a reply asks the runtime to apply.
//!
//! The id names realm, principal, revision and expiry inside a sealed token, so it cannot
//! be forged or carried to another realm or principal; the runtime's table says whether it
//! is still live on this instance. The id is never a credential: every request is still
//! authenticated, and its principal must match the sealed one.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bondry_core::handler::LogLevel;
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jsonrpc::Id;
use crate::revision::Revision;
use crate::{Csprng, seal};

/// The header that carries a session id (`MCP-Session-Id` in 2025-11-25; names ignore case).
pub const HEADER: &str = "Mcp-Session-Id";

/// What the runtime's session table knows about a live session.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSession {
    /// The client capabilities declared at `initialize`.
    pub client_capabilities: Value,
    /// The level `logging/setLevel` chose; `None` until the client asks for log messages.
    pub log_level: Option<LogLevel>,
    /// How many resources the session is subscribed to.
    pub subscriptions: usize,
}

/// The most resources one session may subscribe to.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// The runtime's session table, as the adapter queries it.
pub trait SessionLookup {
    /// The live session `sid` on this instance; `None` when unknown, idle too long,
    /// deleted or evicted.
    fn find(&self, sid: &str) -> Option<LiveSession>;
}

/// A lookup with no sessions: every session id is dead.
pub struct NoSessions;

impl SessionLookup for NoSessions {
    fn find(&self, _sid: &str) -> Option<LiveSession> {
        None
    }
}

/// A session a request was attributed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    /// The table key: random, unique per session.
    pub sid: String,
    pub revision: Revision,
}

/// A session for the runtime to create.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub sid: String,
    pub realm: String,
    pub principal: Principal,
    pub revision: Revision,
    pub client_capabilities: Value,
    /// The absolute end of the session, whatever its activity.
    pub expires: SystemTime,
}

/// What a reply asks the runtime to do besides answering.
#[derive(Debug, Clone)]
pub enum Effect {
    OpenSession(NewSession),
    CloseSession {
        sid: String,
    },
    /// `notifications/cancelled` for a call in flight in the session.
    Cancel {
        sid: String,
        request: Id,
    },
    /// `logging/setLevel`: the session's calls send log messages from `level` up.
    SetLogLevel {
        sid: String,
        level: LogLevel,
    },
    /// `resources/subscribe`: tell the session when the resource at `uri` changes.
    Subscribe {
        sid: String,
        uri: String,
    },
    /// `resources/unsubscribe`.
    Unsubscribe {
        sid: String,
        uri: String,
    },
    /// The client answered request `id` the server sent on one of the session's streams.
    Respond {
        sid: String,
        id: Id,
        answer: Result<Value, Value>,
    },
}

#[derive(Serialize, Deserialize)]
struct Claims {
    /// The token's purpose, so no other sealed token passes for a session id.
    t: String,
    realm: String,
    sub: String,
    rev: String,
    exp: u64,
    sid: String,
}

const PURPOSE: &str = "session";

/// Mints a session id and the session it names.
pub fn mint(
    realm: &RealmSnapshot,
    principal: &Principal,
    revision: Revision,
    client_capabilities: Value,
    lifetime: Duration,
    now: SystemTime,
    rng: &mut dyn Csprng,
) -> (String, NewSession) {
    let mut sid = [0u8; 16];
    rng.fill(&mut sid);
    let sid = bondry_core::canon::hex(&sid);
    let expires = now + lifetime;
    let claims = Claims {
        t: PURPOSE.into(),
        realm: realm.realm.clone(),
        sub: principal.id().to_owned(),
        rev: revision.as_str().into(),
        // Rounded up: the table holds the precise end; the token must not end sooner.
        exp: expires.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64().ceil() as u64,
        sid: sid.clone(),
    };
    let token = seal::seal(&realm.keys, &claims, rng);
    let session = NewSession {
        sid,
        realm: realm.realm.clone(),
        principal: principal.clone(),
        revision,
        client_capabilities,
        expires,
    };
    (token, session)
}

/// The live session a presented id names for this realm and principal, if any.
pub fn resolve(
    token: &str,
    realm: &RealmSnapshot,
    principal: &Principal,
    sessions: &dyn SessionLookup,
    now: SystemTime,
) -> Option<(SessionRef, LiveSession)> {
    let claims: Claims = seal::open(&realm.keys, token)?;
    let unexpired = UNIX_EPOCH + Duration::from_secs(claims.exp) > now;
    if claims.t != PURPOSE || claims.realm != realm.realm || claims.sub != principal.id() || !unexpired {
        return None;
    }
    let revision = claims.rev.parse().ok()?;
    let live = sessions.find(&claims.sid)?;
    Some((SessionRef { sid: claims.sid, revision }, live))
}

/// The revision of the live session a presented id names in this realm, whoever asks:
/// for shaping errors answered before the caller is known.
pub fn peek(token: &str, realm: &RealmSnapshot, sessions: &dyn SessionLookup, now: SystemTime) -> Option<Revision> {
    let claims: Claims = seal::open(&realm.keys, token)?;
    let unexpired = UNIX_EPOCH + Duration::from_secs(claims.exp) > now;
    if claims.t != PURPOSE || claims.realm != realm.realm || !unexpired {
        return None;
    }
    sessions.find(&claims.sid)?;
    claims.rev.parse().ok()
}
