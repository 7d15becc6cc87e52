//! The catalogue: compiled capabilities of one realm, immutable and sorted by id.
//!
//! Building a catalogue is where every load-time check runs: ids are unique, schemas
//! compile within their bounds, and each adapter's lint accepts the capability. A request
//! only ever reads a finished catalogue.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::capability::{CapabilityId, CapabilityKind, Descriptor, Listing};
use crate::handler::Handler;
use crate::schema::{CompiledSchema, SchemaBounds, SchemaError};
use crate::template::UriTemplate;

/// A capability ready to serve: its descriptor, compiled schemas, handler and whatever
/// each adapter's lint derived from it at load time.
pub struct Capability {
    /// Shared with the registration it was compiled from, so a catalogue and the sources
    /// it was built from hold one copy, and an unchanged registration is known at a glance.
    pub descriptor: Arc<Descriptor>,
    pub input: CompiledSchema,
    pub output: Option<CompiledSchema>,
    /// A resource template's compiled URI template.
    pub template: Option<UriTemplate>,
    pub handler: Arc<dyn Handler>,
    attachments: HashMap<&'static str, Arc<dyn Any + Send + Sync>>,
}

impl Capability {
    pub fn id(&self) -> &CapabilityId {
        &self.descriptor.id
    }

    pub fn kind(&self) -> CapabilityKind {
        self.descriptor.kind
    }

    /// What `adapter`'s lint attached to this capability at load, if it is of type `T`.
    pub fn attachment<T: Any + Send + Sync>(&self, adapter: &str) -> Option<&T> {
        self.attachments.get(adapter)?.downcast_ref()
    }
}

impl fmt::Debug for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capability").field("descriptor", &self.descriptor).finish_non_exhaustive()
    }
}

/// An adapter's load-time check of a capability. It may attach derived data (pre-rendered
/// wire forms, header declarations) that the adapter reads back on the request path.
pub trait Lint: Send + Sync {
    /// The adapter this lint belongs to; attachments are keyed by it.
    fn adapter(&self) -> &'static str;
    fn check(&self, descriptor: &Descriptor) -> Result<Arc<dyn Any + Send + Sync>, String>;
}

/// A capability to be compiled: its descriptor and the handler serving it.
#[derive(Clone)]
pub struct Registration {
    pub descriptor: Arc<Descriptor>,
    pub handler: Arc<dyn Handler>,
}

/// Why a catalogue could not be built. Every variant names the capability.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("capability {0}: the id is used twice")]
    DuplicateId(CapabilityId),
    #[error("capability {id}: {which} schema: {error}")]
    Schema { id: CapabilityId, which: &'static str, error: SchemaError },
    #[error("capability {id}: the input schema must have `\"type\": \"object\"` at its root")]
    InputNotObject { id: CapabilityId },
    #[error("capability {id}: {message}")]
    Lint { id: CapabilityId, message: String },
    /// A field the capability's kind does not have, or a missing or invalid URI.
    #[error("capability {id}: {message}")]
    KindField { id: CapabilityId, message: String },
}

impl CatalogueError {
    /// The capability the error is about: every refusal names one.
    pub fn id(&self) -> &CapabilityId {
        match self {
            Self::DuplicateId(id)
            | Self::Schema { id, .. }
            | Self::InputNotObject { id }
            | Self::Lint { id, .. }
            | Self::KindField { id, .. } => id,
        }
    }
}

/// An immutable, id-sorted set of capabilities with a version tag.
#[derive(Debug)]
pub struct Catalogue {
    version: u64,
    entries: Vec<Arc<Capability>>,
    /// The entries of each kind, in id order (indexed by [`kind_index`]): listing or
    /// asking after one kind costs that kind, not the catalogue.
    by_kind: [Vec<Arc<Capability>>; 4],
    /// Every entry by id: resolving a name costs one lookup, whatever the catalogue holds.
    by_id: HashMap<CapabilityId, Arc<Capability>>,
    /// Static resources by URI.
    resources: HashMap<String, Arc<Capability>>,
    /// The templates in the order they were registered: the order a URI is matched in.
    templates: Vec<Arc<Capability>>,
    /// The tools found by searching instead of listed, in id order.
    searched: Vec<Arc<Capability>>,
}

/// Where `kind`'s entries are in [`Catalogue::by_kind`].
fn kind_index(kind: CapabilityKind) -> usize {
    match kind {
        CapabilityKind::Tool => 0,
        CapabilityKind::Prompt => 1,
        CapabilityKind::Resource => 2,
        CapabilityKind::ResourceTemplate => 3,
    }
}

impl Catalogue {
    /// Compiles `registrations` into a catalogue tagged `version`.
    pub fn build(
        version: u64,
        registrations: Vec<Registration>,
        bounds: &SchemaBounds,
        lints: &[&dyn Lint],
    ) -> Result<Self, CatalogueError> {
        Self::build_reusing(None, version, &registrations, bounds, lints)
    }

    /// [`Catalogue::build`], taking over from `previous` every capability whose
    /// descriptor and handler did not change: its schemas, template and attachments are
    /// what compiling it again would make, so a rebuild costs what changed, not the whole
    /// catalogue. `bounds` and `lints` must be those `previous` was built with.
    pub fn build_reusing<'a>(
        previous: Option<&Catalogue>,
        version: u64,
        registrations: impl IntoIterator<Item = &'a Registration>,
        bounds: &SchemaBounds,
        lints: &[&dyn Lint],
    ) -> Result<Self, CatalogueError> {
        let mut entries = Vec::new();
        let mut schemas = Schemas::default();
        for registration in registrations {
            let unchanged =
                previous.and_then(|previous| previous.get(registration.descriptor.id.as_str())).filter(|entry| {
                    Arc::ptr_eq(&entry.handler, &registration.handler)
                        && (Arc::ptr_eq(&entry.descriptor, &registration.descriptor)
                            || entry.descriptor == registration.descriptor)
                });
            entries.push(match unchanged {
                Some(entry) => Arc::clone(entry),
                None => Arc::new(compile(registration.clone(), bounds, lints, &mut schemas)?),
            });
        }
        let templates =
            entries.iter().filter(|entry| entry.kind() == CapabilityKind::ResourceTemplate).cloned().collect();
        entries.sort_by(|a, b| a.id().cmp(b.id()));
        if let Some(pair) = entries.windows(2).find(|pair| pair[0].id() == pair[1].id()) {
            return Err(CatalogueError::DuplicateId(pair[0].id().clone()));
        }
        let mut resources = HashMap::new();
        for entry in entries.iter().filter(|entry| entry.kind() == CapabilityKind::Resource) {
            let uri = entry.descriptor.uri.clone().unwrap_or_default();
            if let Some(first) = resources.insert(uri.clone(), Arc::clone(entry)) {
                let message = format!("resource URI {uri:?} is already served by {}", first.id());
                return Err(CatalogueError::KindField { id: entry.id().clone(), message });
            }
        }
        let mut by_kind: [Vec<Arc<Capability>>; 4] = Default::default();
        for entry in &entries {
            by_kind[kind_index(entry.kind())].push(Arc::clone(entry));
        }
        let by_id = entries.iter().map(|entry| (entry.id().clone(), Arc::clone(entry))).collect();
        let searched =
            by_kind[kind_index(CapabilityKind::Tool)].iter().filter(|tool| is_searched(tool)).cloned().collect();
        Ok(Self { version, entries, by_kind, by_id, resources, templates, searched })
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// All capabilities, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Capability>> {
        self.entries.iter()
    }

    pub fn get(&self, id: &str) -> Option<&Arc<Capability>> {
        self.by_id.get(id)
    }

    /// The static resource at `uri`.
    pub fn resource(&self, uri: &str) -> Option<&Arc<Capability>> {
        self.resources.get(uri)
    }

    /// Every capability of `kind`, in id order.
    pub fn of_kind(&self, kind: CapabilityKind) -> impl Iterator<Item = &Arc<Capability>> {
        self.by_kind[kind_index(kind)].iter()
    }

    /// The resource templates in the order they were registered, which is the order a
    /// URI is matched against them.
    pub fn templates_by_precedence(&self) -> impl Iterator<Item = &Arc<Capability>> {
        self.templates.iter()
    }

    /// The tools found by searching, in id order: the order a snapshot's search index and
    /// a view's members number them in.
    pub fn searched(&self) -> &[Arc<Capability>] {
        &self.searched
    }

    /// Whether any capability is of `kind`.
    pub fn has_kind(&self, kind: CapabilityKind) -> bool {
        !self.by_kind[kind_index(kind)].is_empty()
    }
}

/// Whether `capability` is a tool found by searching instead of listed.
pub fn is_searched(capability: &Capability) -> bool {
    capability.descriptor.listing == Listing::Searched
}

/// Compiles one registration: its schemas, its kind's fields and every adapter's lint.
fn compile(
    registration: Registration,
    bounds: &SchemaBounds,
    lints: &[&dyn Lint],
    schemas: &mut Schemas,
) -> Result<Capability, CatalogueError> {
    let Registration { descriptor, handler } = registration;
    let id = descriptor.id.clone();
    if descriptor.input_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(CatalogueError::InputNotObject { id });
    }
    let schema_error = |which| {
        let id = id.clone();
        move |error| CatalogueError::Schema { id, which, error }
    };
    let input = schemas.compile(&descriptor.input_schema, bounds).map_err(schema_error("input"))?;
    let output = descriptor
        .output_schema
        .as_ref()
        .map(|schema| schemas.compile(schema, bounds))
        .transpose()
        .map_err(schema_error("output"))?;
    let template = kind_fields(&descriptor).map_err(|message| CatalogueError::KindField { id: id.clone(), message })?;
    let mut attachments = HashMap::new();
    for lint in lints {
        let attachment =
            lint.check(&descriptor).map_err(|message| CatalogueError::Lint { id: descriptor.id.clone(), message })?;
        attachments.insert(lint.adapter(), attachment);
    }
    Ok(Capability { descriptor, input, output, template, handler, attachments })
}

/// The schemas one build compiled, by their text: capabilities with the same schema (a
/// server's many tools taking one argument shape, many copies of one handler) share one
/// compiled validator instead of holding a copy each.
#[derive(Default)]
struct Schemas {
    compiled: HashMap<String, CompiledSchema>,
}

impl Schemas {
    fn compile(&mut self, schema: &serde_json::Value, bounds: &SchemaBounds) -> Result<CompiledSchema, SchemaError> {
        let text = schema.to_string();
        if let Some(compiled) = self.compiled.get(&text) {
            return Ok(compiled.clone());
        }
        let compiled = CompiledSchema::compile(schema, bounds)?;
        self.compiled.insert(text, compiled.clone());
        Ok(compiled)
    }
}

/// Checks a descriptor's fields against its kind, so nothing configured is silently
/// ignored: only tools have an output schema and annotations, only resources and
/// templates a media type; a resource has an absolute URI, a template a URI template
/// (compiled here), tools and prompts none.
fn kind_fields(descriptor: &Descriptor) -> Result<Option<UriTemplate>, String> {
    let kind = descriptor.kind.as_str();
    let tool = descriptor.kind == CapabilityKind::Tool;
    if !tool && descriptor.output_schema.is_some() {
        return Err(format!("a {kind} has no output schema; only tools do"));
    }
    if !tool && descriptor.annotations != crate::capability::Annotations::default() {
        return Err(format!("a {kind} has no annotations; only tools do"));
    }
    if !tool && descriptor.listing == Listing::Searched {
        return Err(format!("a {kind} is always listed; only tools may be found by searching"));
    }
    if descriptor.mime_type.is_some() && matches!(descriptor.kind, CapabilityKind::Tool | CapabilityKind::Prompt) {
        return Err(format!("a {kind} has no media type; only resources and resource templates do"));
    }
    let uri = descriptor.uri.as_deref();
    match (descriptor.kind, uri) {
        (CapabilityKind::Tool | CapabilityKind::Prompt, None) => Ok(None),
        (CapabilityKind::Tool | CapabilityKind::Prompt, Some(_)) => {
            Err(format!("a {} has no URI; only resources and resource templates do", descriptor.kind.as_str()))
        }
        (_, None) => Err(format!("a {} needs a URI", descriptor.kind.as_str())),
        (CapabilityKind::Resource, Some(uri)) => {
            let scheme = uri.split_once(':').map(|(scheme, _)| scheme).unwrap_or_default();
            let valid = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                && uri.len() <= 2048
                && !uri.chars().any(|c| c.is_whitespace() || c.is_control());
            if valid {
                Ok(None)
            } else {
                Err(format!("{uri:?} is not an absolute URI (scheme:rest, at most 2048 bytes)"))
            }
        }
        (CapabilityKind::ResourceTemplate, Some(text)) => {
            let template = UriTemplate::parse(text).map_err(|e| format!("URI template {text:?}: {e}"))?;
            if let Some(unknown) = template.variables().iter().find(|name| {
                descriptor.input_schema.get("properties").and_then(|p| p.get(name.as_str())).is_none()
                    && descriptor.input_schema.get("additionalProperties") == Some(&serde_json::Value::Bool(false))
            }) {
                return Err(format!("variable {unknown:?} is not allowed by the input schema"));
            }
            Ok(Some(template))
        }
    }
}
