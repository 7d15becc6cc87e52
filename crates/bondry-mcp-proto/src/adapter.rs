//! The adapter of one listener: a request through framing, era choice and the method's
//! checks, to the next [`Step`].

use std::sync::Arc;
use std::time::SystemTime;

use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use http::{HeaderMap, Method, StatusCode};
use serde_json::Value;

use crate::envelope::EnvelopeFault;
use crate::error::{self, Error};
use crate::jsonrpc::Id;
use crate::labels::{self, Labels};
use crate::reply::Reply;
use crate::revision::{Era, Revision};
use crate::session::{self, Effect, LiveSession, SessionLookup};
use crate::settings::{Listener, ListenerSettings, NoRevision};
use crate::step::{Inbound, Received, Step};
use crate::vocabulary::Csprng;
use crate::{envelope, handshake, headers, jsonrpc, modern};

/// What a request brings besides its bytes, while the adapter routes it.
#[derive(Clone, Copy)]
struct Arrival<'a> {
    inbound: Inbound<'a>,
    session_id: Option<&'a str>,
    realm: &'a Arc<RealmSnapshot>,
    principal: &'a Principal,
    sessions: &'a dyn SessionLookup,
    now: SystemTime,
}

/// The MCP adapter of one listener.
#[derive(Debug)]
pub struct Adapter {
    listener: Arc<Listener>,
}

impl Adapter {
    pub fn new(settings: ListenerSettings) -> Result<Self, NoRevision> {
        Ok(Self { listener: Arc::new(Listener::new(settings)?) })
    }

    /// What this adapter's listener serves, as its calls read it.
    pub fn listener(&self) -> &Arc<Listener> {
        &self.listener
    }

    /// The conversation of a dispatched `call`, whose session client (if any) has
    /// `answer_within` to answer each round of input.
    pub fn conversation(&self, call: crate::Call, answer_within: std::time::Duration) -> crate::Conversation {
        crate::Conversation::new(call, Arc::clone(&self.listener), answer_within)
    }

    /// Whether this endpoint serves the handshake era.
    pub fn serves_handshake(&self) -> bool {
        self.listener.serves_handshake()
    }

    /// How to answer an error raised before a request reaches [`Adapter::receive`]:
    /// `"id": null` when its session id names a live 2025-06-18 session.
    pub fn early_context(
        &self,
        session_id: Option<&str>,
        realm: &RealmSnapshot,
        sessions: &dyn SessionLookup,
        now: SystemTime,
    ) -> error::Context {
        let token = session_id.filter(|_| self.serves_handshake());
        error::Context::naming(token.and_then(|token| session::peek(token, realm, sessions, now)))
    }

    /// Checks the request head before the body is read.
    pub fn admit(&self, method: &Method, headers: &HeaderMap) -> Result<(), Error> {
        crate::head::admit(method, headers, self.serves_handshake())
    }

    /// Takes one request through framing, era choice and the method's checks, to its
    /// next step and the labels its metrics carry.
    pub fn receive(
        &self,
        inbound: Inbound<'_>,
        realm: &Arc<RealmSnapshot>,
        principal: &Principal,
        sessions: &dyn SessionLookup,
        now: SystemTime,
        rng: &mut dyn Csprng,
    ) -> Received {
        // A session header that is repeated or unreadable names no session.
        let session_id = headers::single(inbound.headers, session::HEADER).unwrap_or(Some(""));
        let arrival = Arrival { inbound, session_id, realm, principal, sessions, now };
        if inbound.method != Method::POST {
            let step = handshake::session_method(&self.listener, inbound, session_id, self.attributed(&arrival));
            let labels = Labels { era: self.era(false, session_id.is_some()), method: labels::OTHER };
            return Received { step, labels };
        }
        match jsonrpc::parse(inbound.body) {
            Ok(message) => {
                let (method, claimed) = labels::of(&message);
                // A notification without a session is the modern era's, claimed or not.
                let sessionless = matches!(message, jsonrpc::Message::Notification { .. }) && session_id.is_none();
                let era = self.era(claimed || sessionless, session_id.is_some() || method == "initialize");
                let labels = Labels { era, method };
                Received { step: self.route(message, &arrival, rng), labels }
            }
            Err(error) => {
                let context = error::Context::naming(self.attributed(&arrival).map(|(session, _)| session.revision));
                let error = match error {
                    jsonrpc::FramingError::Parse => Error::Parse,
                    jsonrpc::FramingError::Invalid { id, reason } => Error::InvalidRequest { id, reason },
                };
                Received { step: Step::Reply(Reply::error(error, context)), labels: Labels::NONE }
            }
        }
    }

    /// The era a request is served in, as its labels name it: modern when it claims a
    /// modern revision and the listener serves one, handshake when it names a session
    /// (or opens one) and the listener serves sessions, none when it is refused for want
    /// of either.
    fn era(&self, claimed: bool, in_session: bool) -> Option<Era> {
        if claimed && !self.listener.supported.is_empty() {
            Some(Era::Modern)
        } else if in_session && self.serves_handshake() {
            Some(Era::Handshake)
        } else {
            None
        }
    }

    /// The session a request names, when this listener serves sessions and it is live.
    fn attributed(&self, arrival: &Arrival<'_>) -> Option<(session::SessionRef, LiveSession)> {
        let token = arrival.session_id.filter(|_| self.serves_handshake())?;
        session::resolve(token, arrival.realm, arrival.principal, arrival.sessions, arrival.now)
    }

    /// A framed message to its step: by its kind, its era and its method.
    fn route(&self, message: jsonrpc::Message, arrival: &Arrival<'_>, rng: &mut dyn Csprng) -> Step {
        use jsonrpc::Message;
        let Arrival { inbound, session_id, realm, principal, now, .. } = *arrival;
        match message {
            Message::Response { .. } if session_id.is_none() || !self.serves_handshake() => {
                Error::InvalidRequest { id: None, reason: "clients do not send responses to this endpoint" }.into()
            }
            // A client's answer to a request the server sent inside its session: the
            // runtime hands it to the call waiting for it.
            Message::Response { id, answer } => match self.attributed(arrival) {
                Some((session, _)) if handshake::version(&self.listener, inbound.headers, &session).is_none() => {
                    Error::InvalidSessionVersion { id: None }.into()
                }
                Some((session, _)) => Step::Reply(Reply::empty(StatusCode::ACCEPTED).with_effect(Effect::Respond {
                    sid: session.sid,
                    id,
                    answer,
                })),
                None => Error::SessionNotFound { id: None }.into(),
            },
            Message::Notification { method, params } => {
                let claim = envelope::claim(params.as_ref());
                if claim.is_some() || session_id.is_none() || !self.serves_handshake() {
                    // Modern notifications need no headers; only a claim of the wrong type is
                    // refused. `notifications/cancelled` is accepted and ignored: closing the
                    // stream cancels.
                    return match claim {
                        Some(claim) if !claim.is_string() => {
                            Error::InvalidEnvelope { id: None, fault: EnvelopeFault::claim_not_a_string() }.into()
                        }
                        _ => Step::Reply(Reply::empty(StatusCode::ACCEPTED)),
                    };
                }
                match self.attributed(arrival) {
                    Some((session, _)) => {
                        handshake::notification(&self.listener, inbound.headers, &method, params.as_ref(), session)
                    }
                    None => Error::SessionNotFound { id: None }.into(),
                }
            }
            Message::Request { id, method, params } => {
                let params = params.unwrap_or_default();
                if envelope::claim(Some(&params)).is_some() && !self.listener.supported.is_empty() {
                    return modern::receive(
                        &self.listener,
                        inbound.headers,
                        inbound.body.len(),
                        id,
                        &method,
                        &params,
                        realm,
                        principal,
                        now,
                        rng,
                    );
                }
                let session = match session_id {
                    Some(_) if self.serves_handshake() => match self.attributed(arrival) {
                        Some(session) => Some(session),
                        None => return Error::SessionNotFound { id: Some(id) }.into(),
                    },
                    _ => None,
                };
                match (method.as_str(), session) {
                    ("initialize", None) if self.serves_handshake() => {
                        handshake::initialize(&self.listener, id, &params, realm, principal, now, rng)
                    }
                    (_, Some((session, live))) => {
                        let request = handshake::Attributed { session, live, id, method: &method, params: &params };
                        handshake::receive(&self.listener, inbound, request, realm, principal, now, rng)
                    }
                    _ => self.unclaimed(inbound.headers, id, &method, &params).into(),
                }
            }
        }
    }

    /// A request with no modern claim and no session.
    fn unclaimed(&self, headers: &HeaderMap, id: Id, method: &str, params: &serde_json::Map<String, Value>) -> Error {
        let header = headers::single(headers, headers::PROTOCOL_VERSION).ok().flatten();
        if method != "initialize"
            && header.and_then(|version| version.parse::<Revision>().ok()).is_some_and(|r| r.era() == Era::Modern)
        {
            let fault = EnvelopeFault { missing: envelope::missing_keys(Some(params)), ..Default::default() };
            return Error::InvalidEnvelope { id: Some(id), fault };
        }
        if self.serves_handshake() {
            return Error::SessionRequired { id: Some(id) };
        }
        let offered = (method == "initialize").then(|| params.get("protocolVersion").and_then(Value::as_str)).flatten();
        let requested = offered.or(header).unwrap_or("2025-03-26").to_owned();
        Error::UnsupportedVersion { id: Some(id), supported: self.listener.supported.clone(), requested }
    }
}
