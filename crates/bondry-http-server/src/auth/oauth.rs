//! OAuth 2.0 bearer tokens: JWTs from the realm's configured issuers, verified against
//! the issuer's keys, and the protected resource metadata (RFC 9728) that tells a client
//! which issuers to ask for one.
//!
//! Keys come from the configuration or from a JWKS URL. A fetched set is kept for
//! `jwks_max_age` and fetched again early when a token names a key it lacks (the issuer
//! rotated), but never more than once per `jwks_refresh_interval`: tokens with made-up
//! key ids cannot turn Bondry into a load generator against the issuer. Only asymmetric
//! algorithms are accepted, and a key is used only with an algorithm of its own family,
//! so neither `alg: none` nor an HMAC signed with a public key gets through.
//!
//! A client sends the same token on every request until it expires, so an accepted token
//! is remembered under its SHA-256 and its signature is checked once, not per request. A
//! remembered token answers only until its `exp` and only while the keys that verified
//! it are still the issuer's: a JWKS fetched again (a rotation) has its tokens verified
//! anew. Refusals are never remembered.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bondry_core::canon::digest;
use bondry_core::policy::{Principal, PrincipalKind};

use super::Authenticated;
use bytes::Bytes;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyOperations, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// What the configuration says about a realm's OAuth. Serialised only to fingerprint it.
#[derive(Debug, Clone, Serialize)]
pub struct OAuthSpec {
    /// The realm's public URL: the audience tokens must name, and the `resource` of the
    /// protected resource metadata.
    pub resource_url: String,
    pub issuers: Vec<IssuerSpec>,
    /// The realm's roles: token roles outside them grant nothing and are dropped.
    pub known_roles: BTreeSet<String>,
    /// Scopes every token must carry (in `scope` or `scp`); published as
    /// `scopes_supported` and named in challenges.
    pub required_scopes: Vec<String>,
}

/// One trusted issuer.
#[derive(Debug, Clone, Serialize)]
pub struct IssuerSpec {
    /// Must equal the tokens' `iss` exactly.
    pub issuer: String,
    pub keys: KeySource,
    /// Accepted `alg` values; empty means every asymmetric algorithm.
    pub algorithms: Vec<String>,
    /// The claim naming the principal (`sub` unless configured).
    pub principal_claim: String,
    /// The claim listing roles: an array of strings or a space-separated string.
    pub roles_claim: String,
    /// Roles every principal of this issuer holds.
    pub roles: Vec<String>,
    /// Prefix of principal ids, `<namespace>#<claim>`; the issuer when `None`.
    pub namespace: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// How long a fetched key set is used before it is fetched again.
    pub jwks_max_age: Duration,
    /// The least time between two fetches of the key set.
    pub jwks_refresh_interval: Duration,
}

/// Where an issuer's keys come from.
#[derive(Debug, Clone, Serialize)]
pub enum KeySource {
    JwksUrl(String),
    /// JWKs written in the configuration.
    Static(Vec<Value>),
}

/// A configuration the OAuth verifier refuses: the key (relative to the issuer's stanza
/// or the realm) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct SpecError {
    /// `resource_url`, or `oauth[i].<key>`.
    pub key: String,
    pub message: String,
}

/// Key sets larger than this are cut (an issuer publishes a handful).
const MAX_KEYS: usize = 64;
/// The largest JWKS document read.
const MAX_JWKS_BYTES: usize = 256 * 1024;
/// Tokens longer than this are not parsed.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Principal claim values longer than this are refused.
const MAX_PRINCIPAL_BYTES: usize = 256;
/// How long one JWKS fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// A realm's OAuth verifier and its published metadata.
pub struct OAuth {
    issuers: Vec<Issuer>,
    known_roles: BTreeSet<String>,
    /// The SHA-256 of the canonical form of the spec: a reload that changes nothing here
    /// leaves the realm's callers undisturbed.
    fingerprint: String,
    required_scopes: Vec<String>,
    metadata_url: String,
    metadata: Bytes,
    /// Accepted tokens by the SHA-256 of the whole token, at most [`REMEMBERED_TOKENS`].
    accepted: Mutex<HashMap<[u8; 32], Accepted>>,
}

/// Accepted tokens remembered, at most; past it the expired are forgotten, and all of
/// them if none had expired: the cost is one verification per token in use.
const REMEMBERED_TOKENS: usize = 4096;

/// A token accepted: by which issuer (an index into `OAuth::issuers`), with which key set.
#[derive(Clone)]
struct Accepted {
    issuer: usize,
    keys: Arc<[VerifyKey]>,
    authenticated: Authenticated,
}

struct Issuer {
    issuer: String,
    namespace: String,
    principal_claim: String,
    roles_claim: String,
    roles: Vec<String>,
    /// One prepared validation per accepted algorithm.
    validations: Vec<(Algorithm, Validation)>,
    keys: Keys,
}

enum Keys {
    Static(Arc<[VerifyKey]>),
    Fetched(Arc<Jwks>),
}

struct VerifyKey {
    kid: Option<String>,
    /// The key's own `alg`, which then is the only algorithm it verifies.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

/// A JWKS URL and what was last fetched from it.
struct Jwks {
    url: Url,
    client: reqwest::Client,
    max_age: Duration,
    refresh_interval: Duration,
    state: RwLock<Fetched>,
    /// One fetch at a time; the others wait and use its result.
    fetching: tokio::sync::Mutex<()>,
    /// Whether a background refresh of stale keys is under way.
    refreshing: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Fetched {
    keys: Option<Arc<[VerifyKey]>>,
    fetched_at: Option<Instant>,
    attempted_at: Option<Instant>,
}

/// Why a token was refused: logged at debug level, never told to the client.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("the token names no configured issuer")]
    UnknownIssuer,
    #[error("the token's header is malformed or its alg is not supported")]
    Header,
    #[error("alg {0:?} is not accepted for this issuer")]
    Algorithm(Algorithm),
    #[error("no key of the issuer matches the token's kid and alg")]
    NoKey,
    /// What failed, by kind only: the library's messages may quote claim values.
    #[error("{0}")]
    Invalid(&'static str),
    #[error("the principal claim is missing, empty, not a string or too long")]
    Principal,
    #[error("the token lacks a required scope")]
    Scope(Principal),
}

/// Why a JWT was not accepted, as far as the client is told.
pub(crate) enum Refused {
    /// Not a valid token of this realm: 401.
    Invalid,
    /// A valid token of `principal` that lacks a required scope: 403.
    InsufficientScope(Principal),
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let issuers: Vec<&str> = self.issuers.iter().map(|issuer| issuer.issuer.as_str()).collect();
        f.debug_struct("OAuth").field("issuers", &issuers).field("metadata_url", &self.metadata_url).finish()
    }
}

impl OAuth {
    /// Checks the configuration and prepares verification; fetches nothing yet.
    pub fn new(spec: OAuthSpec) -> Result<Self, SpecError> {
        let fingerprint = serde_json::to_value(&spec).map(|value| digest(&value)).unwrap_or_default();
        let resource = public_url(&spec.resource_url, false)
            .map_err(|message| SpecError { key: "resource_url".into(), message })?;
        let mut issuers = Vec::new();
        let mut client = None;
        for (index, issuer_spec) in spec.issuers.iter().enumerate() {
            let error = |key: &str, message: String| SpecError { key: format!("oauth[{index}].{key}"), message };
            if spec.issuers[..index].iter().any(|earlier| earlier.issuer == issuer_spec.issuer) {
                return Err(error("issuer", format!("{:?} is configured twice", issuer_spec.issuer)));
            }
            // Two issuers under one namespace would mint the same principal ids.
            if let Some(namespace) = &issuer_spec.namespace
                && spec.issuers[..index].iter().any(|earlier| earlier.namespace.as_ref() == Some(namespace))
            {
                return Err(error("namespace", format!("{namespace:?} is already another issuer's namespace")));
            }
            issuers.push(Issuer::new(issuer_spec, &spec, &mut client, &error)?);
        }
        if let Some(scope) = spec.required_scopes.iter().find(|scope| !is_scope_token(scope)) {
            return Err(SpecError {
                key: "required_scopes".into(),
                message: format!("{scope:?} is not a scope: use printable ASCII without spaces, quotes or backslashes"),
            });
        }
        let authorization_servers: Vec<&str> = issuers.iter().map(|issuer| issuer.issuer.as_str()).collect();
        let mut metadata = json!({
            "resource": spec.resource_url,
            "authorization_servers": authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !spec.required_scopes.is_empty() {
            metadata["scopes_supported"] = json!(spec.required_scopes);
        }
        let mut metadata_url = resource.clone();
        let path = resource.path().trim_end_matches('/');
        metadata_url.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
        Ok(Self {
            issuers,
            known_roles: spec.known_roles,
            fingerprint,
            required_scopes: spec.required_scopes,
            metadata_url: metadata_url.to_string(),
            metadata: Bytes::from(metadata.to_string()),
            accepted: Mutex::new(HashMap::new()),
        })
    }

    /// Tells one configuration from another (see [`super::Authenticator::fingerprint`]).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Where the protected resource metadata is published (named in 401 challenges).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The scopes every token must carry, space-separated as a challenge's `scope` names
    /// them; `None` when none are required.
    pub fn required_scope(&self) -> Option<String> {
        (!self.required_scopes.is_empty()).then(|| self.required_scopes.join(" "))
    }

    /// The protected resource metadata document.
    pub fn metadata(&self) -> &Bytes {
        &self.metadata
    }

    /// Fetches every JWKS once, so the first caller does not wait for it.
    pub async fn prefetch(&self) {
        for issuer in &self.issuers {
            if let Keys::Fetched(jwks) = &issuer.keys {
                jwks.current().await;
            }
        }
    }

    /// The principal a JWT stands for, or why it is not accepted; `None` when the token
    /// is not a JWT for OAuth at all (a ticket). `digest` is the token's SHA-256.
    pub(crate) async fn authenticate(
        &self,
        token: &str,
        digest: [u8; 32],
        realm: &str,
    ) -> Option<Result<Authenticated, Refused>> {
        if let Some(authenticated) = self.recall(&digest).await {
            return Some(Ok(authenticated));
        }
        let claimed = peek(token)?.iss;
        Some(match self.verify(token, claimed).await {
            Ok(accepted) => Ok(self.remember(digest, accepted)),
            Err(refusal) => {
                tracing::debug!(realm, %refusal, "bearer JWT refused");
                Err(match refusal {
                    Refusal::Scope(principal) => Refused::InsufficientScope(principal),
                    _ => Refused::Invalid,
                })
            }
        })
    }

    /// The token of `digest` if it was accepted before and still would be: not expired,
    /// and its issuer's keys the ones it was verified with.
    async fn recall(&self, digest: &[u8; 32]) -> Option<Authenticated> {
        let Accepted { issuer, keys, authenticated } = self.remembered().get(digest)?.clone();
        let expired = authenticated.valid_until.is_some_and(|valid_until| valid_until <= SystemTime::now());
        if expired || !self.issuers[issuer].keys.still_in_use(&keys).await {
            self.remembered().remove(digest);
            return None;
        }
        Some(authenticated)
    }

    fn remember(&self, digest: [u8; 32], accepted: Accepted) -> Authenticated {
        let authenticated = accepted.authenticated.clone();
        let mut remembered = self.remembered();
        if remembered.len() >= REMEMBERED_TOKENS {
            let now = SystemTime::now();
            remembered.retain(|_, accepted| accepted.authenticated.valid_until.is_none_or(|until| until > now));
            if remembered.len() >= REMEMBERED_TOKENS {
                remembered.clear();
            }
        }
        remembered.insert(digest, accepted);
        authenticated
    }

    fn remembered(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Accepted>> {
        self.accepted.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn verify(&self, token: &str, claimed: Option<String>) -> Result<Accepted, Refusal> {
        let claimed = claimed.ok_or(Refusal::UnknownIssuer)?;
        let (index, issuer) = self
            .issuers
            .iter()
            .enumerate()
            .find(|(_, issuer)| issuer.issuer == claimed)
            .ok_or(Refusal::UnknownIssuer)?;
        // Never the token's own `jwk`, `jku` or `x5u`: keys come from the configuration only.
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Header)?;
        let validation = issuer
            .validations
            .iter()
            .find_map(|(alg, validation)| (*alg == header.alg).then_some(validation))
            .ok_or(Refusal::Algorithm(header.alg))?;
        let keys = issuer.keys.for_header(&header).await.ok_or(Refusal::NoKey)?;
        let key = select(&keys, &header).ok_or(Refusal::NoKey)?;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, validation).map_err(invalid)?.claims;
        let subject = claim(&claims, &issuer.principal_claim)
            .and_then(Value::as_str)
            .filter(|subject| !subject.is_empty() && subject.len() <= MAX_PRINCIPAL_BYTES)
            .ok_or(Refusal::Principal)?;
        let mut roles = issuer.roles.clone();
        let named: Vec<&str> = match claim(&claims, &issuer.roles_claim) {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(text)) => text.split_whitespace().collect(),
            _ => Vec::new(),
        };
        for role in named {
            if self.known_roles.contains(role) && !roles.iter().any(|held| held == role) {
                roles.push(role.to_owned());
            }
        }
        let id = format!("{}#{subject}", issuer.namespace);
        // `exp` is required and was checked to lie ahead within the leeway. The library
        // accepts a token during the second `exp` names (and rounds a fractional one);
        // RFC 7519 §4.1.4 does not ("on or after"), and neither does a stream opened with
        // it, which ends at `valid_until`. One too large for the clock bounds nothing.
        let valid_until = match claims.get("exp").and_then(Value::as_f64) {
            Some(exp) if exp.is_finite() && exp >= 0.0 => Duration::try_from_secs_f64(exp)
                .ok()
                .and_then(|exp| UNIX_EPOCH.checked_add(exp)?.checked_add(Duration::from_secs(validation.leeway))),
            _ => return Err(Refusal::Invalid("exp is not a number of seconds")),
        };
        if valid_until.is_some_and(|valid_until| valid_until <= SystemTime::now()) {
            return Err(Refusal::Invalid("the token has expired"));
        }
        let principal = Principal::new(&id, PrincipalKind::OAuth, roles);
        if !self.required_scopes.is_empty() {
            let granted = scopes(&claims);
            if !self.required_scopes.iter().all(|required| granted.contains(&required.as_str())) {
                return Err(Refusal::Scope(principal));
            }
        }
        let authenticated = Authenticated { principal, valid_until };
        Ok(Accepted { issuer: index, keys: Arc::clone(&keys), authenticated })
    }
}

fn invalid(error: jsonwebtoken::errors::Error) -> Refusal {
    use jsonwebtoken::errors::ErrorKind;
    Refusal::Invalid(match error.kind() {
        ErrorKind::InvalidSignature => "the signature does not verify",
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
        ErrorKind::InvalidIssuer => "the issuer does not match",
        ErrorKind::InvalidAudience => "the audience is not this realm's resource URL",
        ErrorKind::MissingRequiredClaim(_) => "exp, iss or aud is missing",
        ErrorKind::InvalidAlgorithm => "the algorithm does not fit the key",
        _ => "the token is malformed",
    })
}

impl Issuer {
    fn new(
        spec: &IssuerSpec,
        realm: &OAuthSpec,
        client: &mut Option<reqwest::Client>,
        error: &dyn Fn(&str, String) -> SpecError,
    ) -> Result<Self, SpecError> {
        public_url(&spec.issuer, false).map_err(|message| error("issuer", message))?;
        let namespace = match &spec.namespace {
            None => spec.issuer.clone(),
            Some(namespace) if bondry_core::capability::is_valid_id(namespace) => namespace.clone(),
            Some(namespace) => {
                return Err(error(
                    "namespace",
                    format!("{namespace:?} is not a namespace: use 1-64 characters from A-Z a-z 0-9 . _ -"),
                ));
            }
        };
        if let Some(role) = spec.roles.iter().find(|role| !realm.known_roles.contains(*role)) {
            return Err(error("roles", format!("role {role:?} is not defined in this realm")));
        }
        for (key, value) in [("principal_claim", &spec.principal_claim), ("roles_claim", &spec.roles_claim)] {
            if value.is_empty() {
                return Err(error(key, "a claim name cannot be empty".into()));
            }
        }
        let mut algorithms = Vec::new();
        for name in &spec.algorithms {
            let alg = Algorithm::from_str(name)
                .ok()
                .filter(|alg| ASYMMETRIC.contains(alg))
                .ok_or_else(|| error("algorithms", format!("{name:?} is not accepted; use any of {ASYMMETRIC:?}")))?;
            if !algorithms.contains(&alg) {
                algorithms.push(alg);
            }
        }
        if algorithms.is_empty() {
            algorithms = ASYMMETRIC.to_vec();
        }
        let validations = algorithms
            .into_iter()
            .map(|alg| {
                let mut validation = Validation::new(alg);
                validation.set_issuer(&[&spec.issuer]);
                validation.set_audience(&[&realm.resource_url]);
                validation.set_required_spec_claims(&["exp", "iss", "aud"]);
                validation.validate_nbf = true;
                validation.leeway = spec.leeway.as_secs() + u64::from(spec.leeway.subsec_nanos() > 0);
                (alg, validation)
            })
            .collect();
        let keys = match &spec.keys {
            KeySource::Static(values) => {
                if values.is_empty() {
                    return Err(error("keys", "no keys given; add at least one JWK or use jwks_url".into()));
                }
                let mut keys = Vec::new();
                for (index, value) in values.iter().enumerate() {
                    let key = verify_key(value).map_err(|message| error(&format!("keys[{index}]"), message))?;
                    keys.push(key.ok_or_else(|| {
                        error(&format!("keys[{index}]"), "the key is not for verifying signatures".into())
                    })?);
                }
                Keys::Static(keys.into())
            }
            KeySource::JwksUrl(url) => {
                let url = public_url(url, true).map_err(|message| error("jwks_url", message))?;
                if spec.jwks_refresh_interval.is_zero() || spec.jwks_max_age < spec.jwks_refresh_interval {
                    return Err(error(
                        "jwks_refresh_interval_ms",
                        "must be positive and at most jwks_max_age_ms".into(),
                    ));
                }
                let client = match client {
                    Some(client) => client.clone(),
                    None => {
                        let built = reqwest::Client::builder()
                            .timeout(FETCH_TIMEOUT)
                            .redirect(reqwest::redirect::Policy::none())
                            .user_agent(concat!("bondry/", env!("CARGO_PKG_VERSION")))
                            .build()
                            .map_err(|e| error("jwks_url", format!("no HTTP client for fetching keys: {e}")))?;
                        client.insert(built).clone()
                    }
                };
                Keys::Fetched(Arc::new(Jwks {
                    url,
                    client,
                    max_age: spec.jwks_max_age,
                    refresh_interval: spec.jwks_refresh_interval,
                    state: RwLock::new(Fetched::default()),
                    fetching: tokio::sync::Mutex::new(()),
                    refreshing: std::sync::atomic::AtomicBool::new(false),
                }))
            }
        };
        Ok(Self {
            issuer: spec.issuer.clone(),
            namespace,
            principal_claim: spec.principal_claim.clone(),
            roles_claim: spec.roles_claim.clone(),
            roles: spec.roles.clone(),
            validations,
            keys,
        })
    }
}

impl Keys {
    /// Whether `keys` is still the set in use: a fetched set is replaced whole by each
    /// fetch. Asking may start the background fetch of a stale set, as a verification would.
    async fn still_in_use(&self, keys: &Arc<[VerifyKey]>) -> bool {
        match self {
            Self::Static(_) => true,
            Self::Fetched(jwks) => jwks.current().await.is_some_and(|current| Arc::ptr_eq(&current, keys)),
        }
    }

    /// The keys to verify a token with this header: for a fetched set, fetched again
    /// first when the header names a key the set lacks and the interval allows it.
    async fn for_header(&self, header: &Header) -> Option<Arc<[VerifyKey]>> {
        match self {
            Self::Static(keys) => Some(Arc::clone(keys)),
            Self::Fetched(jwks) => {
                let keys = jwks.current().await;
                if keys.as_ref().is_some_and(|keys| select(keys, header).is_some()) || header.kid.is_none() {
                    return keys;
                }
                jwks.refresh().await.or(keys)
            }
        }
    }
}

impl Jwks {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Fetched> {
        self.state.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The keys in use. Fetched first only when there are none yet; stale ones keep
    /// serving while one background fetch replaces them, so a slow issuer never holds up
    /// tokens signed with keys already known.
    async fn current(self: &Arc<Self>) -> Option<Arc<[VerifyKey]>> {
        use std::sync::atomic::Ordering;
        let (keys, fresh) = {
            let state = self.read();
            (state.keys.clone(), state.fetched_at.is_some_and(|at| at.elapsed() < self.max_age))
        };
        match keys {
            Some(keys) if fresh => Some(keys),
            Some(stale) => {
                if !self.refreshing.swap(true, Ordering::AcqRel) {
                    let jwks = Arc::clone(self);
                    tokio::spawn(async move {
                        jwks.refresh().await;
                        jwks.refreshing.store(false, Ordering::Release);
                    });
                }
                Some(stale)
            }
            None => self.refresh().await.or_else(|| self.read().keys.clone()),
        }
    }

    /// Fetches the set unless a fetch was attempted within the refresh interval; returns
    /// the keys in use afterwards, or `None` when nothing new was fetched.
    async fn refresh(&self) -> Option<Arc<[VerifyKey]>> {
        let started = Instant::now();
        let _turn = self.fetching.lock().await;
        {
            let state = self.read();
            if let Some(attempted) = state.attempted_at {
                if attempted >= started {
                    // Another caller fetched while this one waited: use its result.
                    return state.keys.clone();
                }
                if attempted.elapsed() < self.refresh_interval {
                    return None;
                }
            }
        }
        let fetched = self.fetch().await;
        let mut state = self.state.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.attempted_at = Some(Instant::now());
        match fetched {
            Ok(keys) => {
                tracing::debug!(url = %self.url, keys = keys.len(), "fetched JWKS");
                state.keys = Some(keys.into());
                state.fetched_at = state.attempted_at;
            }
            // The keys fetched before stay in use; an issuer's outage does not lock everyone out.
            Err(reason) => tracing::warn!(url = %self.url, %reason, "cannot fetch JWKS; keeping the keys in use"),
        }
        state.keys.clone()
    }

    async fn fetch(&self) -> Result<Vec<VerifyKey>, String> {
        let mut response = self
            .client
            .get(self.url.clone())
            .header(http::header::ACCEPT, "application/json, application/jwk-set+json")
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("answered {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("larger than {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        #[derive(Deserialize)]
        struct Document {
            keys: Vec<Value>,
        }
        let document: Document = serde_json::from_slice(&body).map_err(|e| format!("not a JWK set: {e}"))?;
        let mut keys = Vec::new();
        for value in document.keys.iter().take(MAX_KEYS) {
            match verify_key(value) {
                Ok(Some(key)) => keys.push(key),
                Ok(None) => {}
                Err(reason) => tracing::debug!(url = %self.url, %reason, "skipping a JWK"),
            }
        }
        if keys.is_empty() {
            return Err("holds no usable signature key".into());
        }
        Ok(keys)
    }
}

/// A JWK as a verification key; `Ok(None)` for a key meant for something else
/// (encryption), an error for a key that cannot be used at all.
fn verify_key(value: &Value) -> Result<Option<VerifyKey>, String> {
    let jwk: Jwk = serde_json::from_value(value.clone()).map_err(|e| format!("not a JWK: {e}"))?;
    if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
        // A shared secret would let anyone who can read it mint tokens; and a public key
        // must never double as an HMAC secret.
        return Err("symmetric (kty \"oct\") keys are refused; use RSA, EC or OKP keys".into());
    }
    let common = &jwk.common;
    if matches!(common.public_key_use, Some(ref usage) if *usage != PublicKeyUse::Signature)
        || common.key_operations.as_ref().is_some_and(|ops| !ops.contains(&KeyOperations::Verify))
    {
        return Ok(None);
    }
    let alg = match &common.key_algorithm {
        None => None,
        Some(alg) => {
            let name = serde_json::to_value(alg).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            match Algorithm::from_str(&name).ok().filter(|alg| ASYMMETRIC.contains(alg)) {
                Some(alg) => Some(alg),
                None => return Ok(None),
            }
        }
    };
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("unusable key: {e}"))?;
    if let Some(alg) = alg.filter(|alg| alg.family() != key.family()) {
        return Err(format!("alg {alg:?} does not fit the key type"));
    }
    Ok(Some(VerifyKey { kid: common.key_id.clone(), alg, key }))
}

/// The one key that fits the header: its `kid` (when the token names one), and an
/// algorithm of the key's family (its own `alg`, when it names one).
fn select<'k>(keys: &'k [VerifyKey], header: &Header) -> Option<&'k VerifyKey> {
    let mut fitting = keys.iter().filter(|key| {
        key.key.family() == header.alg.family()
            && key.alg.is_none_or(|alg| alg == header.alg)
            && header.kid.as_ref().is_none_or(|kid| key.kid.as_ref() == Some(kid))
    });
    let first = fitting.next()?;
    // Without a kid, only an unambiguous key is used.
    (header.kid.is_some() || fitting.next().is_none()).then_some(first)
}

/// A claim by name, or else by a dotted path into nested objects (`realm_access.roles`).
/// The scopes a token carries: `scope` (RFC 9068, space-separated) and `scp` (a string or
/// an array of strings, as some issuers write it), together.
fn scopes(claims: &Map<String, Value>) -> Vec<&str> {
    let mut granted = Vec::new();
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(text)) => granted.extend(text.split(' ').filter(|scope| !scope.is_empty())),
            Some(Value::Array(items)) => granted.extend(items.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    granted
}

/// RFC 6749 §3.3 `scope-token`: printable ASCII but for space, `"` and `\`, so it also
/// fits inside a quoted challenge parameter.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty() && scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

fn claim<'c>(claims: &'c Map<String, Value>, name: &str) -> Option<&'c Value> {
    claims.get(name).or_else(|| {
        let mut parts = name.split('.');
        let mut value = claims.get(parts.next()?)?;
        for part in parts {
            value = value.as_object()?.get(part)?;
        }
        Some(value)
    })
}

/// The unverified claims that decide whether a bearer token is a JWT for OAuth, and
/// which issuer's keys verify it.
#[derive(Debug, Deserialize)]
struct Peeked {
    iss: Option<String>,
}

/// Reads a bearer token as a JWT carrying `sub`, without verifying anything; `None`
/// for anything else (a ticket).
fn peek(token: &str) -> Option<Peeked> {
    if token.len() > MAX_TOKEN_BYTES {
        return None;
    }
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let object: Map<String, Value> = serde_json::from_slice(&payload).ok()?;
    object.contains_key("sub").then(|| Peeked { iss: object.get("iss").and_then(Value::as_str).map(str::to_owned) })
}

/// An absolute `https` URL (or `http` on a loopback host, for local setups), without
/// user info or fragment; a query only where `query` allows it.
fn public_url(text: &str, query: bool) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{text:?} is not an absolute URL ({e})"))?;
    let loopback = url.host_str().is_some_and(|host| {
        host == "localhost"
            || host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    });
    if !(url.scheme() == "https" || url.scheme() == "http" && loopback) {
        return Err(format!("{text:?} must be an https URL (http only on a loopback host)"));
    }
    if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
        return Err(format!("{text:?} must not carry user info or a fragment"));
    }
    if !query && url.query().is_some() {
        return Err(format!("{text:?} must not carry a query"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peeks_only_jwts_with_a_subject() {
        let jwt = |claims: &str| format!("e30.{}.c2ln", URL_SAFE_NO_PAD.encode(claims));
        assert_eq!(peek(&jwt(r#"{"sub":"a","iss":"https://i"}"#)).unwrap().iss.as_deref(), Some("https://i"));
        assert!(peek(&jwt(r#"{"sub":"a"}"#)).unwrap().iss.is_none());
        assert!(peek(&jwt(r#"{"iss":"https://i"}"#)).is_none());
        assert!(peek("bondry_abc").is_none());
        assert!(peek(&format!("{}.x", jwt(r#"{"sub":"a"}"#))).is_none());
    }

    #[test]
    fn claims_by_name_then_by_path() {
        let claims: Map<String, Value> =
            serde_json::from_str(r#"{"https://x.example/roles":["a"],"realm_access":{"roles":["b"]}}"#).unwrap();
        assert_eq!(claim(&claims, "https://x.example/roles"), Some(&json!(["a"])));
        assert_eq!(claim(&claims, "realm_access.roles"), Some(&json!(["b"])));
        assert_eq!(claim(&claims, "realm_access.nope"), None);
    }

    #[test]
    fn urls_must_be_https_except_on_loopback() {
        assert!(public_url("https://auth.example.com", false).is_ok());
        assert!(public_url("http://127.0.0.1:8080/jwks", true).is_ok());
        assert!(public_url("http://localhost/x", false).is_ok());
        assert!(public_url("http://auth.example.com", false).is_err());
        assert!(public_url("https://u:p@auth.example.com", false).is_err());
        assert!(public_url("https://auth.example.com/?a=1", false).is_err());
        assert!(public_url("https://auth.example.com/#f", true).is_err());
        assert!(public_url("auth.example.com", false).is_err());
    }

    #[test]
    fn symmetric_and_encryption_keys_are_not_verification_keys() {
        assert!(verify_key(&json!({"kty": "oct", "k": "c2VjcmV0"})).is_err());
        let encryption = json!({"kty": "OKP", "crv": "Ed25519", "use": "enc",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"});
        assert!(verify_key(&encryption).unwrap().is_none());
        let signing = json!({"kty": "OKP", "crv": "Ed25519", "kid": "k",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"});
        assert_eq!(verify_key(&signing).unwrap().unwrap().kid.as_deref(), Some("k"));
        let misfit = json!({"kty": "OKP", "crv": "Ed25519", "alg": "RS256",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"});
        assert!(verify_key(&misfit).is_err());
    }

    #[test]
    fn remembered_tokens_stay_bounded_and_the_expired_go_first() {
        let oauth = OAuth::new(OAuthSpec {
            resource_url: "https://mcp.example.com/mcp".into(),
            issuers: vec![],
            known_roles: BTreeSet::new(),
            required_scopes: Vec::new(),
        })
        .unwrap();
        let accepted = |valid_until: SystemTime| Accepted {
            issuer: 0,
            keys: Arc::from(Vec::new()),
            authenticated: Authenticated { principal: Principal::anonymous(vec![]), valid_until: Some(valid_until) },
        };
        let digest = |index: usize| -> [u8; 32] {
            let mut digest = [0; 32];
            digest[..8].copy_from_slice(&(index as u64).to_be_bytes());
            digest
        };
        let (past, future) =
            (SystemTime::now() - Duration::from_secs(1), SystemTime::now() + Duration::from_secs(3600));
        oauth.remember(digest(0), accepted(past));
        for index in 1..REMEMBERED_TOKENS {
            oauth.remember(digest(index), accepted(future));
        }
        assert_eq!(oauth.remembered().len(), REMEMBERED_TOKENS);
        // Full: the expired one makes room, and every live one stays.
        oauth.remember(digest(REMEMBERED_TOKENS), accepted(future));
        assert_eq!(oauth.remembered().len(), REMEMBERED_TOKENS);
        assert!(!oauth.remembered().contains_key(&digest(0)));
        // Full of live ones: all are forgotten, to be verified again once each.
        oauth.remember(digest(0), accepted(future));
        assert_eq!(oauth.remembered().len(), 1);
    }

    #[test]
    fn metadata_names_the_resource_and_every_issuer() {
        let issuer = |issuer: &str| IssuerSpec {
            issuer: issuer.into(),
            keys: KeySource::Static(vec![json!({"kty": "OKP", "crv": "Ed25519",
                "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"})]),
            algorithms: vec![],
            principal_claim: "sub".into(),
            roles_claim: "roles".into(),
            roles: vec![],
            namespace: None,
            leeway: Duration::from_secs(60),
            jwks_max_age: Duration::from_secs(600),
            jwks_refresh_interval: Duration::from_secs(30),
        };
        let oauth = OAuth::new(OAuthSpec {
            resource_url: "https://mcp.example.com/mcp/realm/ops".into(),
            issuers: vec![issuer("https://a.example.com"), issuer("https://b.example.com/tenant")],
            known_roles: BTreeSet::new(),
            required_scopes: Vec::new(),
        })
        .unwrap();
        assert_eq!(oauth.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp/realm/ops");
        let metadata: Value = serde_json::from_slice(oauth.metadata()).unwrap();
        assert_eq!(
            metadata,
            json!({"resource": "https://mcp.example.com/mcp/realm/ops",
                "authorization_servers": ["https://a.example.com", "https://b.example.com/tenant"],
                "bearer_methods_supported": ["header"]})
        );
        let twice = OAuth::new(OAuthSpec {
            resource_url: "https://mcp.example.com/mcp".into(),
            issuers: vec![issuer("https://a.example.com"), issuer("https://a.example.com")],
            known_roles: BTreeSet::new(),
            required_scopes: Vec::new(),
        });
        assert_eq!(twice.err().unwrap().key, "oauth[1].issuer");
    }
}
