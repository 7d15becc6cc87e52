//! A finished response, and what the runtime must do besides sending it.
//!
//! A reply may carry an audit record to write and an effect for the session table. The
//! response only comes out through [`Reply::settle`], which hands both to the runtime
//! first, so neither can be forgotten on any path.

use bondry_core::audit::{AuditOutcome, AuditRecord};
use bondry_core::telemetry::RequestOutcome;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};

use crate::error::{self, Error};
use crate::session::Effect;

/// Where a reply's side effects go: the runtime's audit sink, session table and
/// telemetry.
pub trait Settle {
    /// How the request ended, as its metrics name it: told first, for every reply.
    fn settled(&mut self, outcome: RequestOutcome);
    fn record(&mut self, record: AuditRecord);
    fn apply(&mut self, effect: Effect);
}

/// A finished response, with the audit record and the session effect it brings.
#[must_use]
#[derive(Debug)]
pub struct Reply {
    response: http::Response<Bytes>,
    /// Boxed: most replies carry none, and replies travel by value through every step.
    audit: Option<Box<AuditRecord>>,
    /// What the runtime's session table must do besides answering (boxed, like `audit`).
    effect: Option<Box<Effect>>,
    /// How an error reply's request ended, when no audit record says.
    refused: Option<RequestOutcome>,
}

impl Reply {
    pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Self {
        let mut response = http::Response::new(Bytes::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Self { response, audit: None, effect: None, refused: None }
    }

    /// An empty body with `status`: 202 for an accepted notification, 204 for a DELETE.
    pub(crate) fn empty(status: StatusCode) -> Self {
        let mut response = http::Response::new(Bytes::new());
        *response.status_mut() = status;
        Self { response, audit: None, effect: None, refused: None }
    }

    pub(crate) fn error(error: Error, context: error::Context) -> Self {
        let refused = error.outcome();
        Self { response: error.to_http_in(context), audit: None, effect: None, refused: Some(refused) }
    }

    pub(crate) fn audited(mut self, record: AuditRecord) -> Self {
        self.audit = Some(Box::new(record));
        self
    }

    pub(crate) fn with_effect(mut self, effect: Effect) -> Self {
        self.effect = Some(Box::new(effect));
        self
    }

    pub(crate) fn headers_mut(&mut self) -> &mut http::HeaderMap {
        self.response.headers_mut()
    }

    /// The response as it will be sent.
    pub fn response(&self) -> &http::Response<Bytes> {
        &self.response
    }

    /// The audit record the reply brings, if any.
    pub fn audit(&self) -> Option<&AuditRecord> {
        self.audit.as_deref()
    }

    /// The effect the reply brings, if any.
    pub fn effect(&self) -> Option<&Effect> {
        self.effect.as_deref()
    }

    /// How the request ended: its audit record's outcome, a refusal's, else succeeded.
    pub fn outcome(&self) -> RequestOutcome {
        match (&self.audit, self.refused) {
            (Some(record), _) => RequestOutcome::Audited(record.outcome),
            (None, Some(refused)) => refused,
            (None, None) => RequestOutcome::Audited(AuditOutcome::Succeeded),
        }
    }

    /// Hands the outcome, the audit record and the effect to `to`, then gives the
    /// response to send.
    pub fn settle(self, to: &mut dyn Settle) -> http::Response<Bytes> {
        to.settled(self.outcome());
        if let Some(record) = self.audit {
            to.record(*record);
        }
        if let Some(effect) = self.effect {
            to.apply(*effect);
        }
        self.response
    }
}

impl From<Error> for Reply {
    fn from(error: Error) -> Self {
        Self::error(error, error::Context::default())
    }
}
