//! What passes between the runtime and the adapter: one request in, the next step out.

use http::{HeaderMap, Method};

use crate::call::Call;
use crate::error::Error;
use crate::listen;
use crate::reply::Reply;
use crate::session::SessionRef;

/// One request as the adapter sees it: credentials already removed by the runtime.
#[derive(Debug, Clone, Copy)]
pub struct Inbound<'a> {
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

/// The endpoint's next move for one request.
#[must_use]
#[derive(Debug)]
pub enum Step {
    /// Answer now.
    Reply(Reply),
    /// Run the call through its [`Conversation`](crate::Conversation) ([`Adapter::conversation`](crate::Adapter::conversation)).
    Dispatch(Box<Call>),
    /// Open the session's standalone event stream (a handshake-era GET).
    Listen(SessionRef),
    /// Open a `subscriptions/listen` stream (modern).
    Subscribe(Box<listen::Subscription>),
}

impl From<Error> for Step {
    fn from(error: Error) -> Self {
        Self::Reply(error.into())
    }
}

/// What [`Adapter::receive`](crate::Adapter::receive) makes of one request: the next
/// step, and the labels its metrics carry.
#[must_use]
#[derive(Debug)]
pub struct Received {
    pub step: Step,
    pub labels: crate::labels::Labels,
}
