//! What a capability is: its id, kind, schemas, hints and the binding to the code behind it.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// The identifier of a capability: 1–64 bytes of `[A-Za-z0-9._-]`.
///
/// Ids order lists, key cursors, match grants and name audit records, so they are
/// restricted to characters every MCP client accepts in a tool name.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CapabilityId(Arc<str>);

/// The longest capability id, in bytes.
pub const MAX_ID_LEN: usize = 64;

impl CapabilityId {
    /// Checks `raw` against the id rules.
    pub fn new(raw: &str) -> Result<Self, InvalidId> {
        if is_valid_id(raw) { Ok(Self(raw.into())) } else { Err(InvalidId(raw.to_owned())) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The longest prefix of `text` of at most [`MAX_ID_LEN`] bytes that ends on a character
/// boundary.
pub fn id_prefix(text: &str) -> &str {
    let end = (0..=text.len().min(MAX_ID_LEN)).rev().find(|&end| text.is_char_boundary(end)).unwrap_or(0);
    &text[..end]
}

/// A caller's name as an answer may repeat it: at most [`MAX_ID_LEN`] bytes, marked `…`
/// when cut. No id is longer, so no real name is ever cut, and an answer never grows with
/// what it repeats.
pub fn echoed(text: &str) -> std::borrow::Cow<'_, str> {
    match id_prefix(text) {
        whole if whole.len() == text.len() => whole.into(),
        cut => format!("{cut}…").into(),
    }
}

/// Whether `raw` satisfies the id rules.
pub fn is_valid_id(raw: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&raw.len()) && raw.bytes().all(is_id_byte)
}

pub(crate) fn is_id_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-')
}

/// Looked up by its text, so a catalogue's id index answers a `&str` name.
impl std::borrow::Borrow<str> for CapabilityId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CapabilityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for CapabilityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid capability id {0:?}: use 1-64 characters from A-Z a-z 0-9 . _ -")]
pub struct InvalidId(pub String);

/// The four kinds of capability an adapter may expose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CapabilityKind {
    Tool,
    Prompt,
    Resource,
    ResourceTemplate,
}

impl CapabilityKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
            Self::ResourceTemplate => "resource_template",
        }
    }
}

/// Behaviour hints. They are untrusted by clients and only describe; `None` means unstated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

/// How callers find a tool: in its kind's list, or by searching (`bondry.search` in the MCP
/// adapter) when a catalogue is too large to list whole. A searched tool is resolved,
/// granted, validated and audited as a listed one; it is only left out of the list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Listing {
    #[default]
    Listed,
    Searched,
}

/// What serves a capability: the backend kind and its target (for `builtin`, the handler name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub kind: String,
    pub target: String,
}

/// Everything known about a capability before it is compiled into a catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor {
    pub id: CapabilityId,
    pub kind: CapabilityKind,
    pub title: Option<String>,
    pub summary: Option<String>,
    /// A resource's URI, or a resource template's RFC 6570 URI template; `None` for
    /// tools and prompts.
    pub uri: Option<String>,
    /// The media type of a resource's or template's contents, when known.
    pub mime_type: Option<String>,
    /// JSON Schema 2020-12 for the arguments; its root must be `type: "object"`. For a
    /// prompt its properties are the prompt's (string) arguments; for a resource
    /// template, the variables a matching URI yields.
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Annotations,
    /// Client capabilities the capability always needs, as adapter-opaque JSON.
    pub requires_client: Option<Value>,
    pub binding: Binding,
    /// Whether audit records may carry the arguments themselves, not only their digest.
    pub audit_arguments: bool,
    /// The definition exactly as the backend received it (an upstream's list entry), in
    /// the adapter's wire form: kept whole so the adapter lists what the core does not
    /// model (icons, `_meta`, fields it does not know) as the source wrote it.
    pub verbatim: Option<Arc<Value>>,
    /// Whether the tool is listed or found by searching; only tools may be searched.
    pub listing: Listing,
}

impl Descriptor {
    /// A capability of `kind` taking `input_schema`, served through `binding`, with
    /// nothing else stated: no title, description, URI, media type, output schema,
    /// annotations or required client capabilities, arguments audited by digest only,
    /// and listed.
    pub fn new(id: CapabilityId, kind: CapabilityKind, input_schema: Value, binding: Binding) -> Self {
        Self {
            id,
            kind,
            title: None,
            summary: None,
            uri: None,
            mime_type: None,
            input_schema,
            output_schema: None,
            annotations: Annotations::default(),
            requires_client: None,
            binding,
            audit_arguments: false,
            verbatim: None,
            listing: Listing::Listed,
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn echoed_names_are_cut_to_the_longest_id_at_a_character_boundary() {
        assert_eq!(echoed("demo.echo"), "demo.echo");
        assert_eq!(echoed(&"a".repeat(64)), "a".repeat(64));
        assert_eq!(echoed(&"a".repeat(65)), format!("{}…", "a".repeat(64)));
        assert_eq!(echoed(&"é".repeat(40)), format!("{}…", "é".repeat(32)));
        assert_eq!(id_prefix(&format!("{}é", "a".repeat(63))), "a".repeat(63));
    }

    use super::*;

    #[test]
    fn ids_follow_the_id_rules() {
        assert!(CapabilityId::new("demo.echo").is_ok());
        assert!(CapabilityId::new("a-b_c.D9").is_ok());
        assert!(CapabilityId::new(&"x".repeat(64)).is_ok());
        assert!(CapabilityId::new(&"x".repeat(65)).is_err());
        assert!(CapabilityId::new("").is_err());
        assert!(CapabilityId::new("demo:echo").is_err());
        assert!(CapabilityId::new("démo").is_err());
    }
}
