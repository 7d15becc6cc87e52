//! A realm's `[[realms.NAME.capabilities]]`: each registration (kind, backend, handler,
//! schemas, annotations), then the realm's catalogue compiled from them under its policy
//! and keys. What does not compile is reported capability by capability.

use std::path::Path;
use std::sync::Arc;

use bondry_catalogue::naming::Names;
use bondry_core::backend::BackendKind;
use bondry_core::capability::{Annotations, Binding, CapabilityId, CapabilityKind, Descriptor, Listing};
use bondry_core::handler::Handler;
use bondry_core::policy::Policy;
use bondry_core::realm::{KeySet, Registry, Sources};
use bondry_core::registry::{Catalogue, CatalogueError, Registration};
use bondry_core::schema::SchemaBounds;
use bondry_mcp_proto::lint::McpLint;
use bondry_mcp_proto::vocabulary;
use serde_json::{Value, json};

use crate::backends::{self, Stanza};
use crate::builtins::{Builtin, Builtins};
use crate::config::diagnostics::Diagnostics;
use crate::config::{Loaded, RawCapability, RawListing};

/// Every configured capability, in the file's order: `None` for one that was refused.
pub(super) fn registrations(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    name: &str,
    raw: &[RawCapability],
    builtins: &Builtins,
    realm_listing: Option<RawListing>,
) -> Vec<Option<Registration>> {
    raw.iter()
        .enumerate()
        .map(|(index, capability)| {
            let path = format!("realms.{name}.capabilities[{index}]");
            registration(diagnostics, loaded, name, &path, capability, builtins, realm_listing)
        })
        .collect()
}

/// The ids and resource URIs of the registrations that passed their checks: what a
/// backend configuring capabilities of its own names them among.
pub(super) fn names(listed: &[Option<Registration>]) -> Names {
    let descriptors = || listed.iter().flatten().map(|registration| &registration.descriptor);
    Names::of_realm(descriptors().map(|d| d.id.as_str()), descriptors().filter_map(|d| d.uri.as_deref()))
}

/// The realm's registry: the file's capabilities (`listed`), then those its backends
/// configure (`derived`, already held to the catalogue's rules one by one). When any part
/// of it was refused elsewhere (a registration, the policy, the keys), its capabilities are
/// still compiled, to report what is wrong with them too.
pub(super) fn registry(
    diagnostics: &mut Diagnostics,
    realm: &str,
    listed: &[Option<Registration>],
    derived: Vec<Registration>,
    policy: Option<Policy>,
    keys: Option<KeySet>,
) -> Option<Registry> {
    let configured: Option<Vec<Registration>> = listed.iter().cloned().chain(derived.into_iter().map(Some)).collect();
    let (Some(configured), Some(policy), Some(keys)) = (configured, policy, keys) else {
        refuse_uncompiled(diagnostics, realm, listed);
        return None;
    };
    let sources = Sources {
        configured,
        dynamic: Default::default(),
        ranked: Vec::new(),
        bounds: SchemaBounds::default(),
        lints: vec![Arc::new(McpLint)],
    };
    match Registry::compiled(realm, sources, policy, keys) {
        Ok(registry) => Some(registry),
        Err(error) => {
            if !refuse_uncompiled(diagnostics, realm, listed) {
                diagnostics.refuse(format!("realms.{realm}.capabilities"), error.to_string());
            }
            None
        }
    }
}

/// Compiles each capability alone, then those that compiled together (where an id or a
/// resource URI given twice shows); refuses each that fails at its own key path. Whether
/// anything was refused.
fn refuse_uncompiled(diagnostics: &mut Diagnostics, realm: &str, listed: &[Option<Registration>]) -> bool {
    let bounds = SchemaBounds::default();
    let lints = [&McpLint as &dyn bondry_core::registry::Lint];
    let key = |index: usize| format!("realms.{realm}.capabilities[{index}]");
    let mut refused = false;
    let mut compiled = Vec::new();
    for (index, registration) in listed.iter().enumerate() {
        let Some(registration) = registration else { continue };
        match Catalogue::build(0, vec![registration.clone()], &bounds, &lints) {
            Ok(_) => compiled.push((index, registration.clone())),
            Err(error) => {
                diagnostics.refuse(key(index), error.to_string());
                refused = true;
            }
        }
    }
    let together = compiled.iter().map(|(_, registration)| registration.clone()).collect();
    if let Err(error) = Catalogue::build(0, together, &bounds, &lints) {
        // The later of the two capabilities that clash is the one refused.
        let clashing = compiled.iter().rev().find(|(_, registration)| &registration.descriptor.id == id_of(&error));
        let at = clashing.map_or_else(|| format!("realms.{realm}.capabilities"), |(index, _)| key(*index));
        diagnostics.refuse(at, error.to_string());
        refused = true;
    }
    refused
}

/// The capability a catalogue error is about.
fn id_of(error: &CatalogueError) -> &CapabilityId {
    match error {
        CatalogueError::DuplicateId(id)
        | CatalogueError::Schema { id, .. }
        | CatalogueError::InputNotObject { id }
        | CatalogueError::Lint { id, .. }
        | CatalogueError::KindField { id, .. } => id,
    }
}

/// One capability: its id, kind and backend, the builtin handler it names, and what the
/// file adds to or overrides of the handler's descriptor.
fn registration(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    realm: &str,
    path: &str,
    raw: &RawCapability,
    builtins: &Builtins,
    realm_listing: Option<RawListing>,
) -> Option<Registration> {
    let at = |k: &str| format!("{path}.{k}");
    let id = diagnostics.ok(
        at("id"),
        CapabilityId::new(&raw.id).map_err(|e| e.to_string()).and_then(|id| {
            match vocabulary::RESERVED_TOOL_IDS.contains(&id.as_str()) {
                true => {
                    Err(format!("{id:?} is an id Bondry keeps for finding and calling tools by search; choose another"))
                }
                false => Ok(id),
            }
        }),
    );
    let kind = match raw.kind.as_str() {
        "tool" => Some(CapabilityKind::Tool),
        "prompt" => Some(CapabilityKind::Prompt),
        "resource" => Some(CapabilityKind::Resource),
        "resource_template" => Some(CapabilityKind::ResourceTemplate),
        other => {
            diagnostics.refuse(
                at("kind"),
                format!("{other:?} is not a kind; use \"tool\", \"prompt\", \"resource\" or \"resource_template\""),
            );
            None
        }
    };
    let served = served(diagnostics, loaded, realm, path, raw, kind, builtins);
    let input_schema =
        schema(diagnostics, loaded, &at("input_schema"), raw.input_schema.as_deref(), raw.input_schema_file.as_deref());
    let output_schema = schema(
        diagnostics,
        loaded,
        &at("output_schema"),
        raw.output_schema.as_deref(),
        raw.output_schema_file.as_deref(),
    );
    let requires_client = match &raw.requires_client {
        Some(text) => diagnostics
            .ok(
                at("requires_client"),
                json_object(text, "write the JSON inside a TOML string, e.g. '{\"elicitation\": {}}'"),
            )
            .map(Some),
        None => Some(None),
    };
    let (id, kind, served) = (id?, kind?, served?);
    let defaults = served.defaults;
    let annotations = match (&raw.annotations, defaults) {
        (Some(a), Some(builtin)) => Annotations {
            read_only: a.read_only.or(builtin.annotations.read_only),
            destructive: a.destructive.or(builtin.annotations.destructive),
            idempotent: a.idempotent.or(builtin.annotations.idempotent),
            open_world: a.open_world.or(builtin.annotations.open_world),
        },
        (Some(a), None) => Annotations {
            read_only: a.read_only,
            destructive: a.destructive,
            idempotent: a.idempotent,
            open_world: a.open_world,
        },
        (None, Some(builtin)) => builtin.annotations.clone(),
        (None, None) => Annotations::default(),
    };
    let default = |field: fn(&Builtin) -> Option<String>| defaults.and_then(field);
    Some(Registration {
        descriptor: Arc::new(Descriptor {
            id,
            kind,
            title: raw.title.clone().or_else(|| default(|b| b.title.clone())),
            summary: raw.summary.clone().or_else(|| default(|b| b.summary.clone())),
            uri: raw.uri.clone().or_else(|| default(|b| b.uri.clone())),
            mime_type: raw.mime_type.clone().or_else(|| default(|b| b.mime_type.clone())),
            input_schema: input_schema?
                .or_else(|| defaults.map(|b| b.input_schema.clone()))
                .unwrap_or_else(|| json!({"type": "object"})),
            output_schema: output_schema?.or_else(|| defaults.and_then(|b| b.output_schema.clone())),
            annotations,
            requires_client: requires_client?.or_else(|| defaults.and_then(|b| b.requires_client.clone())),
            binding: Binding { kind: raw.backend.clone(), target: served.target },
            audit_arguments: raw.audit_arguments,
            verbatim: None,
            // The realm's `listing` reaches every source of tools but the builtin handlers.
            listing: match kind == CapabilityKind::Tool && raw.backend != BackendKind::BUILTIN.as_str() {
                true => RawListing::of(None, realm_listing),
                false => Listing::Listed,
            },
        }),
        handler: served.handler,
    })
}

/// What serves a capability, and what it says of the capability unless the file says
/// otherwise (a builtin handler's defaults).
struct Served<'a> {
    handler: Arc<dyn Handler>,
    target: String,
    defaults: Option<&'a Builtin>,
}

/// The backend a capability stanza names, bound: a builtin handler, or a kind that binds
/// its capabilities one by one (a web service).
fn served<'a>(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    realm: &str,
    path: &str,
    raw: &RawCapability,
    kind: Option<CapabilityKind>,
    builtins: &'a Builtins,
) -> Option<Served<'a>> {
    let refusal = match raw.backend.as_str() {
        "builtin" => return builtin(diagnostics, path, raw, kind, builtins),
        // An upstream's capabilities are listed from the upstream, never declared one by one.
        "upstream" => format!(
            "\"upstream\" is not a backend of a capability stanza: an upstream MCP server is configured in [[realms.{realm}.upstreams]], which serves all its capabilities; use \"builtin\" or \"http\" here"
        ),
        other => match backends::binder(other) {
            Some(bind) => {
                let bound = bind(diagnostics, loaded, &Stanza { realm, path, raw, kind })?;
                return Some(Served { handler: bound.handler, target: bound.target, defaults: None });
            }
            None => format!("{other:?} is not a backend of a capability stanza; use \"builtin\" or \"http\""),
        },
    };
    diagnostics.refuse(format!("{path}.backend"), refusal);
    None
}

/// The builtin handler a stanza names, of the stanza's kind.
fn builtin<'a>(
    diagnostics: &mut Diagnostics,
    path: &str,
    raw: &RawCapability,
    kind: Option<CapabilityKind>,
    builtins: &'a Builtins,
) -> Option<Served<'a>> {
    let at = |k: &str| format!("{path}.{k}");
    for (key, given) in backends::http::service_keys(raw) {
        if given {
            diagnostics.refuse(
                at(key),
                format!("{key} is a key of a service's capability (backend = \"http\"); a builtin handler takes none"),
            );
        }
    }
    let known = || builtins.names().collect::<Vec<_>>().join(", ");
    let Some(name) = &raw.handler else {
        diagnostics
            .refuse(at("handler"), format!("a builtin capability names its handler; registered handlers: {}", known()));
        return None;
    };
    let builtin = diagnostics.ok(
        at("handler"),
        builtins
            .get(name)
            .ok_or_else(|| format!("no builtin handler is called {name:?}; registered handlers: {}", known())),
    )?;
    // The handler's kind is checked only against a kind there is.
    let kind = kind?;
    let builtin = diagnostics.ok(
        at("kind"),
        (builtin.kind == kind)
            .then_some(builtin)
            .ok_or_else(|| format!("handler {name:?} serves a {}, not a {}", builtin.kind.as_str(), kind.as_str())),
    )?;
    Some(Served { handler: Arc::clone(&builtin.handler), target: name.clone(), defaults: Some(builtin) })
}

/// A schema given inline (a JSON string) or as a file; not both. `Some(None)` when it is
/// not given.
fn schema(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    key: &str,
    inline: Option<&str>,
    file: Option<&Path>,
) -> Option<Option<Value>> {
    let field = key.rsplit('.').next().unwrap_or(key);
    match (inline, file) {
        (Some(_), Some(_)) => {
            diagnostics.refuse(key, format!("give {field} or {field}_file, not both"));
            None
        }
        (Some(text), None) => diagnostics
            .ok(key, json_object(text, "write the JSON inside a TOML string, e.g. '{\"type\": \"object\"}'"))
            .map(Some),
        (None, Some(file)) => {
            let path = loaded.base_dir.join(file);
            let read =
                std::fs::read_to_string(&path).map_err(|e| format!("cannot read {:?}: {e}", path.display())).and_then(
                    |text| json_object(&text, &format!("the file {:?} must hold one JSON object", path.display())),
                );
            diagnostics.ok(format!("{key}_file"), read).map(Some)
        }
        (None, None) => Some(None),
    }
}

/// Parses `text` as a JSON object; `hint` says how to fix invalid JSON.
fn json_object(text: &str, hint: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!("must be a JSON object; {hint}")),
        Err(e) => Err(format!("not valid JSON ({e}); {hint}")),
    }
}
