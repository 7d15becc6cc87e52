//! Authentication: who is calling, from the `Authorization` header.
//!
//! Basic checks an argon2id hash from the configuration, off the async threads, and
//! remembers a success briefly under a keyed hash (never the password). Any other
//! Bearer token is a ticket, stored only as its SHA-256 and compared in constant time.
//! A Bearer token that is a JWT carrying `sub` goes to the realm's OAuth issuers
//! ([`oauth`]). No credential means the anonymous principal where the realm allows it;
//! a credential that fails never falls back to anonymous.

pub mod oauth;
mod password;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use argon2::PasswordHash;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bondry_core::canon::{digest, hex};
use bondry_core::policy::{Principal, PrincipalKind};
use bondry_core::telemetry::Scheme;
use bondry_mcp_proto::Error;
use http::HeaderMap;
use http::header::AUTHORIZATION;
pub use oauth::OAuth;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use password::{Lease, PasswordPool};

/// A configured principal.
#[derive(Debug, Clone)]
pub struct User {
    pub roles: Arc<[String]>,
    /// An argon2id PHC string; `None` for a principal that only holds tickets.
    pub password_hash: Option<String>,
}

/// A ticket: the SHA-256 of its secret, whose it is, and the roles it carries (the
/// principal's, or a subset when the ticket caps them).
#[derive(Debug, Clone)]
pub struct Ticket {
    pub sha256: [u8; 32],
    pub principal: String,
    pub roles: Arc<[String]>,
}

/// What a realm accepts.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    pub users: HashMap<String, User>,
    pub tickets: Vec<Ticket>,
    /// The roles of anonymous callers, or `None` when the realm refuses them.
    pub anonymous_roles: Option<Arc<[String]>>,
    /// The realm's OAuth issuers and public resource URL, when it has them.
    pub oauth: Option<Arc<OAuth>>,
}

impl Credentials {
    /// The SHA-256 of everything that decides who may call, in canonical form (password
    /// hashes and ticket digests included: they are what a revocation changes).
    fn fingerprint(&self, realm: &str) -> String {
        let users: std::collections::BTreeMap<&String, Value> = self
            .users
            .iter()
            .map(|(id, user)| (id, json!({"roles": *user.roles, "password_hash": user.password_hash})))
            .collect();
        let mut tickets: Vec<Value> = self
            .tickets
            .iter()
            .map(|ticket| json!({"sha256": hex(&ticket.sha256), "principal": ticket.principal, "roles": *ticket.roles}))
            .collect();
        tickets.sort_by_key(|ticket| ticket["sha256"].as_str().map(str::to_owned));
        digest(&json!({
            "realm": realm,
            "users": users,
            "tickets": tickets,
            "anonymous_roles": self.anonymous_roles.as_deref(),
            "oauth": self.oauth.as_ref().map(|oauth| oauth.fingerprint()),
        }))
    }
}

/// Who a request's credential stands for, and until when.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub principal: Principal,
    /// When the credential stops being valid (an OAuth token's `exp` plus the leeway), so
    /// that what outlives the request, like an event stream, ends with it. `None` for
    /// credentials that do not expire.
    pub valid_until: Option<SystemTime>,
}

impl Authenticated {
    fn lasting(principal: Principal) -> Self {
        Self { principal, valid_until: None }
    }
}

/// Why a request's credential is not accepted.
#[derive(Debug)]
pub enum Rejected {
    /// No acceptable credential (401): audited as `unauthenticated` when one was presented,
    /// and counted against the address's failed authentications.
    Unauthenticated(Error),
    /// A valid OAuth token of this principal that lacks a required scope (403): audited as
    /// `denied` to the principal, and not a failed authentication.
    InsufficientScope(Principal, Error),
}

/// A realm's authenticator, replaced whole when the configuration is reloaded, so that a
/// revoked ticket, password or issuer stops working without a restart. A request keeps
/// the authenticator it began with.
///
/// What outlives a request (sessions, their event streams, listen streams) was let in by
/// a credential that cannot be checked again, since none is kept. So when a reload
/// changes who may call, the realm's epoch ends: they all end with it, and each client
/// comes back with its credential. A reload that leaves the credentials as they were
/// disturbs nobody.
pub struct AuthSlot(RwLock<InForce>);

struct InForce {
    authenticator: Arc<Authenticator>,
    /// Cancelled when the credentials change.
    epoch: CancellationToken,
}

impl AuthSlot {
    pub fn new(authenticator: Authenticator) -> Self {
        Self(RwLock::new(InForce { authenticator: Arc::new(authenticator), epoch: CancellationToken::new() }))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, InForce> {
        self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The authenticator in force.
    pub fn current(&self) -> Arc<Authenticator> {
        Arc::clone(&self.read().authenticator)
    }

    /// The authenticator in force and its epoch, which is cancelled when it is replaced by
    /// different credentials; read together, so what a request opens after checking its
    /// credential with this authenticator ends when this authenticator goes.
    pub fn in_force(&self) -> (Arc<Authenticator>, CancellationToken) {
        let in_force = self.read();
        (Arc::clone(&in_force.authenticator), in_force.epoch.clone())
    }

    /// Puts `authenticator` in force for the requests that begin from now on, and ends
    /// the epoch if it accepts other credentials than the one it replaces. Its OAuth key
    /// sets are fetched in the background, when there is a runtime to do it on. Returns
    /// whether the credentials changed.
    pub fn replace(&self, authenticator: Arc<Authenticator>) -> bool {
        let mut in_force = self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let changed = in_force.authenticator.fingerprint != authenticator.fingerprint;
        if changed {
            let authenticator = match (in_force.authenticator.oauth(), authenticator.oauth()) {
                // The same issuers as before: keep their fetched keys, so that a change of
                // tickets does not make every token wait on (or fail with) the issuers.
                (Some(kept), Some(new)) if kept.fingerprint() == new.fingerprint() => {
                    let mut credentials = authenticator.credentials.clone();
                    credentials.oauth = Some(Arc::clone(kept));
                    Arc::new(Authenticator::new(&authenticator.realm, credentials))
                }
                (_, Some(new)) => {
                    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                        let new = Arc::clone(new);
                        runtime.spawn(async move { new.prefetch().await });
                    }
                    authenticator
                }
                (_, None) => authenticator,
            };
            in_force.authenticator = authenticator;
            std::mem::replace(&mut in_force.epoch, CancellationToken::new()).cancel();
        }
        changed
    }
}

/// How long a verified password is remembered.
const REMEMBER: Duration = Duration::from_secs(60);
/// Remembered verifications, at most; past it the memory starts over.
const REMEMBERED: usize = 10_000;

/// The authenticator of one realm.
pub struct Authenticator {
    realm: String,
    credentials: Credentials,
    /// Verified against when the principal is unknown, so a refusal takes as long either
    /// way: a hash at the default parameters that no password matches.
    decoy: String,
    challenges: Vec<String>,
    /// The challenges after a Bearer token that failed, in a realm that takes tokens: RFC
    /// 6750 §3.1 names the error (`invalid_token`) only when a token was presented, so a
    /// client knows to get a new one rather than to start authorizing.
    token_challenges: Vec<String>,
    /// The challenge of a 403 for a token that lacks a required scope.
    insufficient_scope: String,
    /// Tells one set of credentials from another: the SHA-256 of their canonical form.
    fingerprint: String,
    /// Keys the verification cache, so its entries reveal nothing outside this process.
    salt: [u8; 32],
    verified: Mutex<HashMap<[u8; 32], Instant>>,
}

impl Authenticator {
    pub fn new(realm: &str, credentials: Credentials) -> Self {
        let mut challenges = Vec::new();
        let accepts_tokens = credentials.oauth.is_some() || !credentials.tickets.is_empty();
        let mut insufficient_scope = String::new();
        if let Some(oauth) = &credentials.oauth {
            let mut bearer = format!("Bearer realm=\"{realm}\", resource_metadata=\"{}\"", oauth.metadata_url());
            // The MCP authorization spec asks for every scope needed in the challenge.
            if let Some(scope) = oauth.required_scope() {
                bearer.push_str(&format!(", scope=\"{scope}\""));
            }
            insufficient_scope = format!("{bearer}, error=\"insufficient_scope\"");
            challenges.push(bearer);
        } else if !credentials.tickets.is_empty() {
            challenges.push(format!("Bearer realm=\"{realm}\""));
        }
        if credentials.users.values().any(|user| user.password_hash.is_some()) {
            challenges.push(format!("Basic realm=\"{realm}\", charset=\"UTF-8\""));
        }
        if challenges.is_empty() {
            challenges.push(format!("Bearer realm=\"{realm}\""));
        }
        let token_challenges = challenges
            .iter()
            .map(|challenge| match accepts_tokens && challenge.starts_with("Bearer ") {
                true => format!("{challenge}, error=\"invalid_token\""),
                false => challenge.clone(),
            })
            .collect();
        let fingerprint = credentials.fingerprint(realm);
        let mut salt = [0; 32];
        getrandom::fill(&mut salt).expect("the operating system random source is available");
        Self {
            realm: realm.to_owned(),
            credentials,
            decoy: password::decoy(),
            challenges,
            token_challenges,
            insufficient_scope,
            fingerprint,
            salt,
            verified: Mutex::new(HashMap::new()),
        }
    }

    /// The realm's OAuth verifier, when it has issuers.
    pub fn oauth(&self) -> Option<&Arc<OAuth>> {
        self.credentials.oauth.as_ref()
    }

    fn refused(&self) -> Error {
        Error::Unauthenticated { challenges: self.challenges.clone() }
    }

    fn refused_token(&self) -> Error {
        Error::Unauthenticated { challenges: self.token_challenges.clone() }
    }

    fn insufficient_scope(&self, principal: Principal) -> Rejected {
        Rejected::InsufficientScope(principal, Error::InsufficientScope { challenge: self.insufficient_scope.clone() })
    }

    /// The scheme of the request's credential, as metrics name it.
    pub fn scheme(headers: &HeaderMap) -> Scheme {
        let Some(value) = headers.get(AUTHORIZATION) else { return Scheme::None };
        let scheme = value.as_bytes().split(|&byte| byte == b' ').next().unwrap_or_default();
        if scheme.eq_ignore_ascii_case(b"bearer") {
            Scheme::Bearer
        } else if scheme.eq_ignore_ascii_case(b"basic") {
            Scheme::Basic
        } else {
            Scheme::Other
        }
    }

    /// Whether the request presents a credential at all (a failed one is audited).
    pub fn presents_credential(headers: &HeaderMap) -> bool {
        headers.contains_key(AUTHORIZATION)
    }

    /// The principal of a request, or why not.
    pub async fn authenticate(self: &Arc<Self>, headers: &HeaderMap) -> Result<Authenticated, Rejected> {
        let mut values = headers.get_all(AUTHORIZATION).iter();
        let Some(value) = values.next() else {
            return match &self.credentials.anonymous_roles {
                Some(roles) => Ok(Authenticated::lasting(Principal::anonymous(Arc::clone(roles)))),
                None => Err(Rejected::Unauthenticated(self.refused())),
            };
        };
        if values.next().is_some() {
            return Err(Rejected::Unauthenticated(self.refused()));
        }
        let value = value.to_str().map_err(|_| Rejected::Unauthenticated(self.refused()))?;
        let (scheme, credential) = value.split_once(' ').ok_or_else(|| Rejected::Unauthenticated(self.refused()))?;
        let credential = credential.trim();
        let verified = if scheme.eq_ignore_ascii_case("bearer") {
            let digest: [u8; 32] = Sha256::digest(credential.as_bytes()).into();
            let verified = match &self.credentials.oauth {
                Some(oauth) => oauth.authenticate(credential, digest, &self.realm).await,
                None => None,
            };
            match verified {
                Some(verified) => {
                    return verified.map_err(|refused| match refused {
                        oauth::Refused::Invalid => Rejected::Unauthenticated(self.refused_token()),
                        oauth::Refused::InsufficientScope(principal) => self.insufficient_scope(principal),
                    });
                }
                None => self.ticket(&digest),
            }
        } else if scheme.eq_ignore_ascii_case("basic") {
            self.basic_off_thread(credential).await
        } else {
            Err(self.refused())
        };
        verified.map(Authenticated::lasting).map_err(Rejected::Unauthenticated)
    }

    /// Checks Basic on the blocking pool: argon2 takes tens of milliseconds, never on the
    /// async threads, and at most [`password::CONCURRENT_CHECKS`] run at once in the process, each
    /// in memory of the process's password pool.
    async fn basic_off_thread(self: &Arc<Self>, credential: &str) -> Result<Principal, Error> {
        let this = Arc::clone(self);
        let credential = credential.to_owned();
        let mut lease = PasswordPool::process().lease().await;
        tokio::task::spawn_blocking(move || this.basic(&credential, &mut lease)).await.map_err(|_| self.refused())?
    }

    /// The ticket whose secret has the SHA-256 `presented`.
    fn ticket(&self, presented: &[u8; 32]) -> Result<Principal, Error> {
        // Every ticket is compared, in constant time, so timing tells nothing of which matched.
        let mut found = None;
        for ticket in &self.credentials.tickets {
            if bool::from(ticket.sha256.ct_eq(presented)) {
                found = Some(ticket);
            }
        }
        let ticket = found.ok_or_else(|| self.refused_token())?;
        Ok(Principal::new(&ticket.principal, PrincipalKind::Ticket, Arc::clone(&ticket.roles)))
    }

    fn basic(&self, credential: &str, lease: &mut Lease) -> Result<Principal, Error> {
        let decoded = STANDARD.decode(credential).map_err(|_| self.refused())?;
        let decoded = String::from_utf8(decoded).map_err(|_| self.refused())?;
        let (id, password) = decoded.split_once(':').ok_or_else(|| self.refused())?;
        let user = self.credentials.users.get(id).filter(|user| user.password_hash.is_some());
        let Some((user, hash)) = user.and_then(|user| Some((user, user.password_hash.as_deref()?))) else {
            // Spend the same work on an unknown principal as on a wrong password.
            if let Ok(decoy) = PasswordHash::new(&self.decoy) {
                lease.verify(password.as_bytes(), &decoy);
            }
            return Err(self.refused());
        };
        let key = self.cache_key(id, password);
        let remembered =
            self.verified.lock().unwrap_or_else(|p| p.into_inner()).get(&key).is_some_and(|t| t.elapsed() < REMEMBER);
        if !remembered {
            let parsed = PasswordHash::new(hash).map_err(|_| self.refused())?;
            if !lease.verify(password.as_bytes(), &parsed) {
                return Err(self.refused());
            }
            let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
            if verified.len() >= REMEMBERED {
                verified.clear();
            }
            verified.insert(key, Instant::now());
        }
        Ok(Principal::new(id, PrincipalKind::User, Arc::clone(&user.roles)))
    }

    fn cache_key(&self, id: &str, password: &str) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(self.salt);
        hasher.update((id.len() as u64).to_be_bytes());
        hasher.update(id.as_bytes());
        hasher.update(password.as_bytes());
        hasher.finalize().into()
    }
}
