//! Messages as Bondry writes them to an upstream, and as it reads the upstream's.
//!
//! A modern request carries the `_meta` envelope (protocol version, the caller's client
//! capabilities, Bondry's client info) and, on HTTP, the routing headers; values that
//! cannot travel as plain header text go through proto's sentinel codec. Incoming
//! messages are framed by proto's JSON-RPC parser.

use std::sync::atomic::{AtomicU64, Ordering};

use bondry_core::compact;
use bondry_mcp_proto::jsonrpc::{self, Id, Message};
use bondry_mcp_proto::{Revision, envelope, headers, sentinel};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{ClientError, Notice, Outgoing};

/// Bondry as the upstream sees it: `clientInfo`.
#[derive(Serialize)]
pub(crate) struct ClientInfo {
    name: &'static str,
    version: &'static str,
}

impl ClientInfo {
    pub(crate) const BONDRY: Self = Self { name: "bondry", version: env!("CARGO_PKG_VERSION") };
}

pub(crate) fn client_info() -> Value {
    serde_json::to_value(ClientInfo::BONDRY).expect("two strings serialise")
}

/// Mints the ids of Bondry's requests on one connection: `bondry-1`, `bondry-2`…
#[derive(Debug, Default)]
pub(crate) struct Ids(AtomicU64);

impl Ids {
    pub(crate) fn next(&self) -> String {
        format!("bondry-{}", self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

/// One message to send: a request when it has an id, else a notification; its body, and
/// the headers it needs on HTTP (ignored on stdio).
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub id: Option<String>,
    pub method: String,
    /// Shared, so that a request sent again (after its session expired) is not copied.
    pub body: Bytes,
    pub headers: HeaderMap,
}

impl Frame {
    /// A 2026-07-28 message: the envelope in `params._meta` (beside whatever `_meta` the
    /// caller gave, such as a progress token), and the routing headers.
    pub(crate) fn modern(id: Option<String>, outgoing: &Outgoing) -> Result<Self, ClientError> {
        Self::modern_watched(id, outgoing, &[])
    }

    /// [`Frame::modern`], with `watching` (the progress token, the log level) added to
    /// `params._meta`: written in, never inserted into a copy of the params.
    pub(crate) fn modern_watched(
        id: Option<String>,
        outgoing: &Outgoing,
        watching: &[(&str, &str)],
    ) -> Result<Self, ClientError> {
        let mut headers = HeaderMap::new();
        headers.insert(headers::name::PROTOCOL_VERSION, HeaderValue::from_static(Revision::V2026_07_28.as_str()));
        let method = HeaderValue::from_str(&outgoing.method)
            .map_err(|_| ClientError::Invalid(format!("method {:?} cannot be a header value", outgoing.method)))?;
        headers.insert(headers::name::METHOD, method);
        if let Some(name) = &outgoing.name {
            headers.insert(headers::name::NAME, encoded(name));
        }
        for (suffix, value) in &outgoing.param_headers {
            let name = HeaderName::try_from(format!("{}{suffix}", headers::PARAM_PREFIX))
                .map_err(|_| ClientError::Invalid(format!("Mcp-Param-{suffix} is not a header name")))?;
            headers.append(name, encoded(value));
        }
        let envelope = Some(&outgoing.client_capabilities);
        let body = request_body(id.as_deref(), &outgoing.method, &outgoing.params, watching, envelope);
        Ok(Self { body, id, method: outgoing.method.clone(), headers })
    }

    /// A 2025-11-25 or 2025-06-18 request of Bondry's calls, with `watching` (the progress
    /// token) added to `params._meta`.
    pub(crate) fn handshake_watched(
        id: String,
        outgoing: &Outgoing,
        watching: &[(&str, &str)],
        revision: Revision,
    ) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(headers::name::PROTOCOL_VERSION, HeaderValue::from_static(revision.as_str()));
        let body = request_body(Some(&id), &outgoing.method, &outgoing.params, watching, None);
        Self { body, id: Some(id), method: outgoing.method.clone(), headers }
    }

    /// A 2025-11-25 or 2025-06-18 message; `MCP-Protocol-Version` once one is agreed.
    pub(crate) fn handshake(
        id: Option<String>,
        method: &str,
        params: Map<String, Value>,
        revision: Option<Revision>,
    ) -> Self {
        let mut headers = HeaderMap::new();
        if let Some(revision) = revision {
            headers.insert(headers::name::PROTOCOL_VERSION, HeaderValue::from_static(revision.as_str()));
        }
        Self { body: body(id.as_deref(), method, params), id, method: method.to_owned(), headers }
    }

    /// Bondry's answer `body` to a request the upstream made, in the era of `revision`.
    pub(crate) fn response(revision: Revision, body: Vec<u8>) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(headers::name::PROTOCOL_VERSION, HeaderValue::from_static(revision.as_str()));
        Self { id: None, method: String::new(), body: body.into(), headers }
    }

    /// `notifications/cancelled` for the request `id`, in the era of `revision`.
    pub(crate) fn cancelled(revision: Revision, id: &str) -> Self {
        let params = Map::from_iter([
            ("requestId".to_owned(), Value::from(id)),
            ("reason".to_owned(), Value::from("the caller went away")),
        ]);
        match revision {
            Revision::V2026_07_28 => {
                let outgoing = Outgoing::new("notifications/cancelled", params);
                Self::modern(None, &outgoing).expect("the method is a valid header value")
            }
            revision => Self::handshake(None, "notifications/cancelled", params, Some(revision)),
        }
    }
}

/// A header value carrying `text`, sentinel-encoded when plain text cannot carry it.
fn encoded(text: &str) -> HeaderValue {
    HeaderValue::from_str(&sentinel::encode(text)).expect("the sentinel codec yields visible ASCII")
}

/// A request or notification written straight from borrowed parts: the params are
/// never copied into a tree of their own to be serialised.
#[derive(Serialize)]
struct Envelope<'a, P> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    method: &'a str,
    params: P,
}

fn body(id: Option<&str>, method: &str, params: impl Serialize) -> Bytes {
    serde_json::to_vec(&Envelope { jsonrpc: "2.0", id, method, params }).expect("JSON values serialise").into()
}

/// A request as sent: the caller's params, with `watching` and, for a modern request,
/// the `envelope` (the client capabilities beside the protocol version and Bondry's
/// client info) written into `params._meta` beside whatever `_meta` the caller gave (the
/// trace context). A `_meta` that is not an object is dropped; the keys Bondry writes are
/// its own and replace any the caller gave, and an empty `_meta` is left out. Written
/// straight from borrowed parts, its strings by [`compact`]: the caller's arguments are
/// often kilobytes of text.
fn request_body(
    id: Option<&str>,
    method: &str,
    params: &Map<String, Value>,
    watching: &[(&str, &str)],
    envelope: Option<&Value>,
) -> Bytes {
    const ENVELOPE: [&str; 3] = [envelope::PROTOCOL_VERSION, envelope::CLIENT_CAPABILITIES, envelope::CLIENT_INFO];
    let own =
        |key: &str| watching.iter().any(|(own, _)| *own == key) || (envelope.is_some() && ENVELOPE.contains(&key));
    let size = 256
        + params.iter().map(|(key, value)| key.len() + 4 + compact::estimate(value)).sum::<usize>()
        + envelope.map_or(0, compact::estimate);
    let mut out = Vec::with_capacity(size);
    fn member(out: &mut Vec<u8>, key: &str) {
        compact::write_str(key, out);
        out.push(b':');
    }
    out.extend_from_slice(br#"{"jsonrpc":"2.0","#);
    if let Some(id) = id {
        member(&mut out, "id");
        compact::write_str(id, &mut out);
        out.push(b',');
    }
    member(&mut out, "method");
    compact::write_str(method, &mut out);
    out.extend_from_slice(br#","params":{"#);
    for (key, value) in params.iter().filter(|(key, _)| *key != "_meta") {
        member(&mut out, key);
        compact::write(value, &mut out);
        out.push(b',');
    }
    let meta_at = out.len();
    out.extend_from_slice(br#""_meta":{"#);
    let opened = out.len();
    if let Some(Value::Object(caller)) = params.get("_meta") {
        for (key, value) in caller.iter().filter(|(key, _)| !own(key)) {
            member(&mut out, key);
            compact::write(value, &mut out);
            out.push(b',');
        }
    }
    for (key, value) in watching {
        member(&mut out, key);
        compact::write_str(value, &mut out);
        out.push(b',');
    }
    if let Some(capabilities) = envelope {
        member(&mut out, envelope::PROTOCOL_VERSION);
        compact::write_str(Revision::V2026_07_28.as_str(), &mut out);
        out.push(b',');
        member(&mut out, envelope::CLIENT_CAPABILITIES);
        compact::write(capabilities, &mut out);
        out.push(b',');
        member(&mut out, envelope::CLIENT_INFO);
        serde_json::to_writer(&mut out, &ClientInfo::BONDRY).expect("two strings serialise");
        out.push(b',');
    }
    if out.len() == opened {
        // Nothing in `_meta`: neither it nor the comma before it.
        out.truncate(meta_at);
    } else {
        out.truncate(out.len() - 1);
        out.push(b'}');
    }
    match out.last() {
        Some(b',') => *out.last_mut().expect("a comma") = b'}',
        _ => out.push(b'}'),
    }
    out.push(b'}');
    out.into()
}

/// A message from the upstream, as Bondry acts on it.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// The answer to the request Bondry sent with `id`: its `result`, or its error.
    Response {
        id: String,
        answer: Result<Value, ClientError>,
    },
    /// A request of the upstream's own, to be answered.
    Request {
        id: Id,
        method: String,
        params: Map<String, Value>,
    },
    Notice(Notice),
}

/// Why a message with a method is invalid: it is a request, not an answer.
const REQUEST_FAULTS: [&str; 2] = ["method must be a string", "params must be an object"];

/// Reads one message; `Err` says why it is dropped.
pub(crate) fn read(bytes: &[u8]) -> Result<Incoming, &'static str> {
    match jsonrpc::parse(bytes) {
        Ok(Message::Response { id: Id::String(id), answer }) => {
            let answer = match answer {
                Ok(Value::Object(result)) => Ok(Value::Object(result)),
                Ok(_) => Err(ClientError::Protocol("a result that is not an object".into())),
                Err(error) => Err(ClientError::from_rpc(&error)),
            };
            Ok(Incoming::Response { id, answer })
        }
        Ok(Message::Response { id: Id::Integer(_), .. }) => Err("a response to an id Bondry never sends"),
        Ok(Message::Request { id, method, params }) => {
            Ok(Incoming::Request { id, method, params: params.unwrap_or_default() })
        }
        Ok(Message::Notification { method, params }) => {
            Ok(Incoming::Notice(Notice { method, params: params.unwrap_or_default() }))
        }
        // Unreadable (a key repeated at any depth, a member of the wrong type), yet naming
        // the request it answers: that request fails now, not at its timeout. A request of
        // the upstream's own (its method there, or its params wrong) answers nothing.
        Err(jsonrpc::FramingError::Invalid { id: Some(Id::String(id)), reason })
            if !REQUEST_FAULTS.contains(&reason) =>
        {
            Ok(Incoming::Response { id, answer: Err(ClientError::Protocol(format!("an unreadable answer: {reason}"))) })
        }
        Err(jsonrpc::FramingError::Parse) => Err("not JSON"),
        Err(jsonrpc::FramingError::Invalid { .. }) => Err("not a JSON-RPC message"),
    }
}

/// The string `id` of a message cut short: its top-level `id` member when it comes before
/// the cut, which is where SDKs write it. Used to fail the request a message too large to
/// read was answering; a message whose id cannot be read this way fails nothing.
pub(crate) fn id_of_truncated(prefix: &[u8]) -> Option<String> {
    let mut id = None;
    let mut deserializer = serde_json::Deserializer::from_slice(prefix);
    // The cut makes the whole parse fail; the id was captured before it, if it was there.
    let _ = TopLevelId(&mut id).deserialize(&mut deserializer);
    id
}

struct TopLevelId<'a>(&'a mut Option<String>);

impl<'de> DeserializeSeed<'de> for TopLevelId<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevelId<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                if let Value::String(id) = map.next_value()? {
                    *self.0 = Some(id);
                }
                return Ok(());
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
