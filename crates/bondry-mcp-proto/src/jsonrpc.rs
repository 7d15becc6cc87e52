//! JSON-RPC framing: parsing one message in one pass, ids, and response bodies.
//!
//! The body is parsed once, refusing duplicate object keys at any depth, so every later
//! reader (validation, header comparison, forwarding) sees the same value. The message's
//! own members are read straight into their places: only the values within are trees.

use std::cell::Cell;
use std::fmt;

use bondry_core::compact;
use bondry_core::unique::UniqueKeys;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// The largest integer magnitude a JSON number holds exactly: ids and progress tokens must
/// survive a round trip through an IEEE double.
pub(crate) const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// A JSON-RPC request id: a string or a safe integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    String(String),
    Integer(i64),
}

impl Id {
    /// Reads an id, refusing null, fractions, exponents, booleans and unsafe integers.
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Number(n) => {
                n.as_i64().filter(|i| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(i)).map(Self::Integer)
            }
            _ => None,
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::String(s) => serializer.serialize_str(s),
            Self::Integer(i) => serializer.serialize_i64(*i),
        }
    }
}

/// One well-formed JSON-RPC message.
#[derive(Debug)]
pub enum Message {
    Request {
        id: Id,
        method: String,
        params: Option<Map<String, Value>>,
    },
    Notification {
        method: String,
        params: Option<Map<String, Value>>,
    },
    /// A response posted by the client: inside a session, the answer to a request the
    /// server sent; `Ok` holds its `result`, `Err` its `error`.
    Response {
        id: Id,
        answer: Result<Value, Value>,
    },
}

/// Why a body is not a JSON-RPC message.
#[derive(Debug, PartialEq)]
pub enum FramingError {
    /// Not JSON at all.
    Parse,
    /// JSON, but not a valid message; carries the id when one valid id could be read.
    Invalid { id: Option<Id>, reason: &'static str },
}

/// Parses a body into one message.
pub fn parse(body: &[u8]) -> Result<Message, FramingError> {
    // UTF-8 checked once for the whole body, not again for each string within.
    let text = std::str::from_utf8(body).map_err(|_| FramingError::Parse)?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let id_repeated = Cell::new(false);
    let top = match Top(&id_repeated).deserialize(&mut deserializer).and_then(|top| {
        deserializer.end()?;
        Ok(top)
    }) {
        Ok(top) => top,
        Err(error) if error.is_data() => {
            // The id is still echoed when it was read once and the repeat was elsewhere.
            let id = if id_repeated.get() { None } else { lenient_id(body) };
            return Err(invalid(id, "duplicate object key"));
        }
        Err(_) => return Err(FramingError::Parse),
    };
    let members = match top {
        Ok(members) => members,
        Err(NotObject::Array) => return Err(invalid(None, "batches are not supported")),
        Err(NotObject::Other) => return Err(invalid(None, "the message must be a JSON object")),
    };
    let id = match &members.id {
        None => None,
        Some(raw) => Some(Id::from_value(raw).ok_or_else(|| invalid(None, "id must be a string or a safe integer"))?),
    };
    if members.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    let params = match members.params {
        None => None,
        Some(Value::Object(params)) => Some(params),
        Some(_) => return Err(invalid(id, "params must be an object")),
    };
    match (members.method, id, members.result, members.error) {
        (Some(Value::String(method)), Some(id), _, _) => Ok(Message::Request { id, method, params }),
        (Some(Value::String(method)), None, _, _) => Ok(Message::Notification { method, params }),
        (Some(_), id, _, _) => Err(invalid(id, "method must be a string")),
        (None, Some(id), Some(result), _) => Ok(Message::Response { id, answer: Ok(result) }),
        (None, Some(id), None, Some(error)) => Ok(Message::Response { id, answer: Err(error) }),
        (None, id, _, _) => Err(invalid(id, "a message needs a method")),
    }
}

/// The top-level id of a body already known to be well-formed JSON, read without the
/// duplicate-key rule.
fn lenient_id(body: &[u8]) -> Option<Id> {
    serde_json::from_slice::<Value>(body).ok()?.get("id").and_then(Id::from_value)
}

fn invalid(id: Option<Id>, reason: &'static str) -> FramingError {
    FramingError::Invalid { id, reason }
}

/// A message as parsed: its members, or what else it was.
type Parsed = Result<Members, NotObject>;

/// What a message that is no object was.
enum NotObject {
    /// A batch, checked for repeated keys all the same.
    Array,
    Other,
}

/// The members of a message JSON-RPC defines; any other is checked and dropped.
#[derive(Default)]
struct Members {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Value>,
}

/// Reads the message's members into [`Members`] (each at most once), and the values
/// within with [`UniqueKeys`].
#[derive(Clone, Copy)]
struct Top<'a>(&'a Cell<bool>);

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Parsed;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Parsed, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Parsed;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Parsed, E> {
        Ok(Err(NotObject::Other))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Parsed, E> {
        Ok(Err(NotObject::Other))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Parsed, E> {
        Ok(Err(NotObject::Other))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Parsed, E> {
        Ok(Err(NotObject::Other))
    }

    fn visit_str<E>(self, _: &str) -> Result<Parsed, E> {
        Ok(Err(NotObject::Other))
    }

    fn visit_unit<E>(self) -> Result<Parsed, E> {
        Ok(Err(NotObject::Other))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Parsed, A::Error> {
        UniqueKeys.visit_seq(seq)?;
        Ok(Err(NotObject::Array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parsed, A::Error> {
        let mut members = Members::default();
        // Hashed: a body of a few MiB may hold a hundred thousand names.
        let mut others: std::collections::HashSet<String> = std::collections::HashSet::new();
        let within = UniqueKeys;
        while let Some(name) = map.next_key::<Name>()? {
            let slot = match name {
                Name::Jsonrpc => &mut members.jsonrpc,
                Name::Id => &mut members.id,
                Name::Method => &mut members.method,
                Name::Params => &mut members.params,
                Name::Result => &mut members.result,
                Name::Error => &mut members.error,
                Name::Other(other) => {
                    if !others.insert(other) {
                        return Err(de::Error::custom("duplicate object key"));
                    }
                    map.next_value_seed(within)?;
                    continue;
                }
            };
            if slot.is_some() {
                self.0.set(matches!(name, Name::Id));
                return Err(de::Error::custom("duplicate object key"));
            }
            *slot = Some(map.next_value_seed(within)?);
        }
        Ok(Ok(members))
    }
}

/// A member's name: one of the message's own, read without a copy, or another.
enum Name {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other(String),
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NameVisitor)
    }
}

struct NameVisitor;

impl Visitor<'_> for NameVisitor {
    type Value = Name;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<Name, E> {
        Ok(match name {
            "jsonrpc" => Name::Jsonrpc,
            "id" => Name::Id,
            "method" => Name::Method,
            "params" => Name::Params,
            "result" => Name::Result,
            "error" => Name::Error,
            other => Name::Other(other.to_owned()),
        })
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Serialize)]
pub struct ErrorObject<'a> {
    pub code: i64,
    pub message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<&'a Value>,
}

/// The `id` of an error response.
#[derive(Debug, Clone, Copy)]
pub enum ErrorId<'a> {
    Id(&'a Id),
    /// `"id": null`, which 2025-06-18 sessions require when no id could be read.
    Null,
    /// No `id` member: it could not be read.
    Omitted,
}

impl Serialize for ErrorId<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Id(id) => id.serialize(serializer),
            Self::Null | Self::Omitted => serializer.serialize_none(),
        }
    }
}

/// Serialises an error response.
pub fn error_body(id: ErrorId<'_>, error: &ErrorObject<'_>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Body<'a> {
        jsonrpc: &'static str,
        #[serde(skip_serializing_if = "is_omitted")]
        id: ErrorId<'a>,
        error: &'a ErrorObject<'a>,
    }
    fn is_omitted(id: &ErrorId<'_>) -> bool {
        matches!(id, ErrorId::Omitted)
    }
    serde_json::to_vec(&Body { jsonrpc: "2.0", id, error }).expect("error bodies serialise")
}

/// Serialises a result response.
pub fn result_body(id: &Id, result: &impl Serialize) -> Vec<u8> {
    result_body_within(id, result, 0)
}

/// Serialises a result response into a buffer that starts at `capacity` bytes: a list
/// page knows its size to within a few bytes, and each doubling of a large buffer copies
/// all of it again (a 200-tool page spent a third of its instructions so).
pub fn result_body_within(id: &Id, result: &impl Serialize, capacity: usize) -> Vec<u8> {
    #[derive(Serialize)]
    struct Body<'a, R> {
        jsonrpc: &'static str,
        id: &'a Id,
        result: &'a R,
    }
    let mut body = Vec::with_capacity(capacity);
    serde_json::to_writer(&mut body, &Body { jsonrpc: "2.0", id, result }).expect("results serialise");
    body
}

/// Serialises a result response whose result is a JSON value, as [`result_body`] would,
/// with the value's strings written by [`compact`]: a call's result carries its caller's
/// text, often kilobytes of it.
pub fn value_result_body(id: &Id, result: &Value) -> Vec<u8> {
    // The envelope and the id, then the result.
    let mut body = Vec::with_capacity(64 + compact::estimate(result));
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut body, id).expect("ids serialise");
    body.extend_from_slice(br#","result":"#);
    compact::write(result, &mut body);
    body.push(b'}');
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(body: &str) -> FramingError {
        parse(body.as_bytes()).unwrap_err()
    }

    #[test]
    fn ids_are_strings_or_safe_integers() {
        for good in [r#""a""#, "0", "-9007199254740991", "9007199254740991"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{good},"method":"m"}}"#);
            assert!(matches!(parse(body.as_bytes()), Ok(Message::Request { .. })), "{good}");
        }
        for bad in ["null", "1.0", "1e2", "1.5", "true", "9007199254740992", "-9223372036854775808", "[1]", "{}"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"m"}}"#);
            assert!(matches!(reason(&body), FramingError::Invalid { id: None, .. }), "{bad}");
        }
    }

    #[test]
    fn duplicate_keys_at_any_depth_are_invalid() {
        let duplicate = |id| invalid(id, "duplicate object key");
        assert_eq!(reason(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#), duplicate(None));
        assert_eq!(
            reason(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[{"b":1,"b":1}]}}"#),
            duplicate(Some(Id::Integer(1)))
        );
        assert_eq!(
            reason(r#"{"jsonrpc":"2.0","id":"x","method":"m","method":"n"}"#),
            duplicate(Some(Id::String("x".into())))
        );
        assert_eq!(
            reason(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"id":1,"id":2}}"#),
            duplicate(Some(Id::Integer(1)))
        );
        assert_eq!(reason(r#"{"jsonrpc":"2.0","id":1,"method":"m","x":1,"x":{}}"#), duplicate(Some(Id::Integer(1))));
        assert_eq!(
            reason(r#"{"jsonrpc":"2.0","id":1,"method":"m","x":[{"y":1,"y":1}]}"#),
            duplicate(Some(Id::Integer(1)))
        );
        assert_eq!(reason(r#"[{"jsonrpc":"2.0","id":1,"id":1}]"#), duplicate(None), "within a batch too");
    }

    #[test]
    fn members_are_known_by_their_names_however_escaped() {
        let escaped = parse(br#"{"jsonrpc":"2.0","\u0069d":1,"meth\u006fd":"m","other":{"a":1}}"#).unwrap();
        assert!(matches!(escaped, Message::Request { id: Id::Integer(1), method, params: None } if method == "m"));
        assert_eq!(
            reason(r#"{"jsonrpc":"2.0","id":1,"\u0069d":2,"method":"m"}"#),
            invalid(None, "duplicate object key")
        );
    }

    #[test]
    fn syntax_errors_are_parse_errors() {
        for bad in ["", "{", "{\"a\":1} x", "nul", "\u{feff}{}"] {
            assert_eq!(reason(bad), FramingError::Parse, "{bad:?}");
        }
        for bad in [&b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}"[..], b"{\"a\":1}\xc3"] {
            assert_eq!(parse(bad).unwrap_err(), FramingError::Parse, "{bad:?}");
        }
    }

    #[test]
    fn shapes() {
        assert!(matches!(reason("[]"), FramingError::Invalid { id: None, .. }));
        assert!(matches!(reason("[[]]"), FramingError::Invalid { id: None, .. }));
        assert!(matches!(reason("3"), FramingError::Invalid { id: None, .. }));
        assert_eq!(
            reason(r#"{"jsonrpc":"1.0","id":7,"method":"m"}"#),
            invalid(Some(Id::Integer(7)), "jsonrpc must be \"2.0\"")
        );
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","method":"n"}"#), Ok(Message::Notification { .. })));
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), Ok(Message::Response { .. })));
        assert!(matches!(
            reason(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[]}"#),
            FramingError::Invalid { id: Some(_), .. }
        ));
    }
}
