//! Fuzz targets as plain functions, one per target: `fuzz/` runs them under cargo-fuzz,
//! and `tests/corpus.rs` replays their corpora through them under `cargo test`.
//!
//! Each takes arbitrary bytes, exercises the real code, and panics only on a real bug:
//! a panic inside Bondry, or a broken invariant asserted here. Inputs a target cannot
//! use (not UTF-8, not JSON) are skipped, not failures.

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bondry::assemble::{Overrides, assemble};
use bondry::builtins::Builtins;
use bondry_core::capability::CapabilityKind;
use bondry_core::handler::LogLevel;
use bondry_core::policy::{Principal, PrincipalKind};
use bondry_core::realm::RealmSnapshot;
use bondry_core::schema::{CompiledSchema, SchemaBounds};
use bondry_core::template::UriTemplate;
use bondry_mcp_proto::listen::Subscription;
use bondry_mcp_proto::{Call, Inbound, Reply, Revision, Step, headers, seal, sentinel, session, state};
use bondry_test_support::sans_io::{TestRandom, complete};
use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

mod pins;
mod wire;
mod world;

pub use bondry_upstream::client::fuzzing::upstream_messages;
pub use pins::{check_served, upstream_listing};

use world::WORLD;

/// `Adapter::receive` in both eras with arbitrary headers and bodies, then
/// the `Conversation` of any call it plans, and one retry of a multi-round request.
///
/// Input: a byte choosing the listener, session table, principal and realm; a byte
/// choosing how a planned call ends; then the request as `METHOD\nName: value\n...\n\nbody`,
/// where `$S0` to `$S5` stand for session ids (live ones of 2025-11-25 and 2025-06-18,
/// another principal's, an expired one, another realm's, one under an unknown key).
pub fn adapter_receive(data: &[u8]) {
    let [setting, ending, text @ ..] = data else { return };
    let world = &*WORLD;
    let Some(request) = wire::request(text, &world.tokens) else { return };
    let adapter = &world.adapters[usize::from(setting & 3)];
    let table = &world.tables[usize::from(setting >> 2 & 3)];
    let principal = &world.principals[[0, 0, 1, 2][usize::from(setting >> 4 & 3)]];
    let realm = &world.realms[usize::from(setting >> 6 == 3)];
    let mut rng = TestRandom::new(u64::from(*setting));

    // The runtime answers a refused head itself and never reads the body.
    if let Err(error) = adapter.admit(&request.method, &request.headers) {
        wire::check(&Reply::from(error), world);
        return;
    }
    let session_id = request.headers.get(session::HEADER).and_then(|value| value.to_str().ok());
    let _ = adapter.early_context(session_id, realm, table, world.now);

    let receive = |body: &[u8], rng: &mut TestRandom| {
        let inbound = Inbound { method: &request.method, headers: &request.headers, body };
        adapter.receive(inbound, realm, principal, table, world.now, rng).step
    };
    match receive(&request.body, &mut rng) {
        Step::Reply(reply) => {
            wire::check(&reply, world);
        }
        Step::Dispatch(call) => {
            render_notifications(&call);
            let outcome = wire::outcome(*ending, &call);
            let Some(reply) = complete(adapter, *call, outcome, world.now, &mut rng) else {
                return;
            };
            let body = wire::check(&reply, world);
            // The retry a client sends with the state it was given: the state must open.
            let Some(retry) = body["result"]["requestState"].as_str().and_then(|s| wire::retried(&request.body, s))
            else {
                return;
            };
            match receive(&retry, &mut rng) {
                Step::Dispatch(call) => {
                    let outcome = world::invoked(&call);
                    if let Some(reply) = complete(adapter, *call, outcome, world.now, &mut rng) {
                        wire::check(&reply, world);
                    }
                }
                Step::Reply(reply) => {
                    let body = wire::check(&reply, world);
                    assert_ne!(body["error"]["message"], world.state_refusal, "a requestState just sealed was refused");
                }
                Step::Subscribe(_) | Step::Listen(_) => panic!("a retried call became a stream"),
            }
        }
        Step::Subscribe(subscription) => render_subscription(&subscription, realm, principal),
        Step::Listen(_) => {}
    }
}

/// What a runtime sends the client while a call runs must be JSON.
fn render_notifications(call: &Call) {
    let notifier = call.notifier();
    let rendered = [notifier.progress(0.5, Some(1.0), Some("half")), notifier.log(LogLevel::Error, None, &json!("x"))];
    for text in rendered.into_iter().flatten() {
        serde_json::from_str::<Value>(&text).expect("a notification is JSON");
    }
}

/// Every message of a listen stream must be JSON.
fn render_subscription(subscription: &Subscription, realm: &RealmSnapshot, principal: &Principal) {
    let mut messages = vec![subscription.acknowledged(), subscription.closed()];
    use CapabilityKind::*;
    messages
        .extend([Tool, Prompt, Resource, ResourceTemplate].into_iter().filter_map(|k| subscription.list_changed(k)));
    messages.extend(subscription.resource_updated("test://items/1"));
    for text in messages {
        serde_json::from_str::<Value>(&text).expect("a stream message is JSON");
    }
    let _ = subscription.still_honoured(realm, principal);
}

/// The `=?base64?...?=` header codec: decoding anything never panics and accepts only
/// the canonical spelling; anything encoded travels as a header and decodes back.
pub fn sentinel(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(decoded) = sentinel::decode(text)
        && let Some(payload) = text.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?="))
    {
        assert_eq!(STANDARD.encode(decoded.as_bytes()), payload, "a non-canonical sentinel decoded");
    }
    let encoded = sentinel::encode(text);
    let mut map = HeaderMap::new();
    map.insert(headers::NAME, HeaderValue::from_str(&encoded).expect("an encoded value is a valid header value"));
    // Read back as the adapter reads a header: trimmed, then decoded.
    let read = headers::decoded(&map, headers::NAME).expect("an encoded value decodes");
    assert_eq!(read.as_deref(), Some(text), "{text:?} encoded as {encoded:?}");
}

/// Opening arbitrary session ids and `requestState`s never panics, and only a token the
/// realm sealed opens; what is freshly sealed opens back to what went in, and only for
/// the request, principal and time it was sealed for.
///
/// Input: the first line is opened every way; it is also the principal, capability and
/// continuation sealed with the rest, a JSON state (a string when not JSON).
pub fn sealed(data: &[u8]) {
    let world = &*WORLD;
    let text = String::from_utf8_lossy(data);
    let (token, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let realm = &world.realms[0];
    let [alice, ..] = &world.principals;
    let live = &world.tables[1];
    if session::resolve(token, realm, alice, live, world.now).is_some() {
        assert!(world.tokens[..2].iter().any(|t| t == token), "a session id the realm never sealed for alice opened");
    }
    if session::peek(token, realm, live, world.now).is_some() {
        assert!(world.tokens[..3].iter().any(|t| t == token), "a session id the realm never sealed opened");
    }
    let _ = seal::open::<Value>(&realm.keys, token);

    let state: Value = serde_json::from_str(rest).unwrap_or_else(|_| json!(rest));
    let mut rng = TestRandom::new(data.len() as u64);
    let binding = state::Binding {
        principal: token,
        realm: "default",
        method: "tools/call",
        capability: token,
        arguments: &state,
    };
    let _ = state::open(&realm.keys, &binding, token, world.now);
    match state::seal(&realm.keys, &binding, state.clone(), token, world.now, &mut rng) {
        Ok(sealed) => {
            let opened = state::open(&realm.keys, &binding, &sealed, world.now).expect("a fresh state opens");
            assert_eq!((opened.state, opened.continuation.as_str()), (state.clone(), token));
            let expired = world.now + state::STATE_LIFETIME;
            assert!(state::open(&realm.keys, &binding, &sealed, expired).is_none(), "an expired state opened");
            let other = json!([state]);
            let moved = state::Binding { arguments: &other, ..binding };
            assert!(
                state::open(&realm.keys, &moved, &sealed, world.now).is_none(),
                "a state opened for other arguments"
            );
        }
        // Inputs of libFuzzer's default -max_len (4 KiB) seal far below the 64 KiB cap even
        // with every byte escaped sixfold: only nesting may refuse them.
        Err(state::TooLarge) if data.len() > 4096 => {}
        Err(state::TooLarge) => assert!(nesting(&state) > state::MAX_STATE_DEPTH, "a small, shallow state was refused"),
    }

    // Minted in a realm of its own, so that no id minted here ever resolves above; for a
    // principal id no longer than authentication hands over (a longer one would seal into
    // an id past `seal::MAX_TOKEN_LEN`).
    let elsewhere = &world.sealing_realm;
    let id = &token[..token.floor_char_boundary(LONGEST_PRINCIPAL_ID)];
    let principal = Principal::new(id, PrincipalKind::User, Vec::new());
    let revision = if data.len().is_multiple_of(2) { Revision::V2025_11_25 } else { Revision::V2025_06_18 };
    let hour = Duration::from_secs(3600);
    let (sid, minted) = session::mint(elsewhere, &principal, revision, state, hour, world.now, &mut rng);
    let (found, _) =
        session::resolve(&sid, elsewhere, &principal, live, world.now).expect("a fresh session id resolves");
    assert_eq!((found.sid, found.revision), (minted.sid, revision));
    assert_eq!(session::peek(&sid, elsewhere, live, world.now), Some(revision));
    let someone_else = Principal::new(&format!("{id}-"), PrincipalKind::User, Vec::new());
    assert!(session::resolve(&sid, elsewhere, &someone_else, live, world.now).is_none(), "another principal's id");
    assert!(session::resolve(&sid, elsewhere, &principal, live, world.now + 2 * hour).is_none(), "an expired id");
    assert!(session::resolve(&sid, elsewhere, &principal, &world.tables[0], world.now).is_none(), "a dead session");
}

/// The longest principal id authentication hands over: an OAuth `NAMESPACE#sub`, with a
/// `sub` of at most 256 bytes (`auth/oauth.rs`) and a namespace of at most 64 (unless the
/// issuer's URL stands in for it); ticket and Basic principals are shorter.
const LONGEST_PRINCIPAL_ID: usize = 64 + 1 + 256;

/// How deeply `value` nests arrays and objects; a scalar is 0.
fn nesting(value: &Value) -> usize {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(members) => Box::new(members.values()),
        _ => return 0,
    };
    1 + children.map(nesting).max().unwrap_or(0)
}

/// URI templates: parsing anything never panics; a template matches arbitrary URIs
/// without panicking, naming only its own variables in order; and it matches every URI
/// it expands to.
///
/// Input: the template, a newline, the URI; the URI's alphanumeric words are also the
/// values the template is expanded with.
pub fn uri_template(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(parsed) = UriTemplate::parse(template) else { return };
    if let Some(Ok(values)) = parsed.matches(uri) {
        let mut variables = parsed.variables().iter();
        for (name, _) in &values {
            assert!(variables.any(|variable| variable == name), "{name} is not a later variable of {template}");
        }
    }
    let words: Vec<&str> = uri.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let expanded = expand(template, &words);
    assert!(parsed.matches(&expanded).is_some(), "{template} does not match its expansion {expanded}");
}

/// Expands a template the parser accepted, with `values` in order (missing ones
/// undefined). Alphanumeric values need no encoding under any operator.
fn expand(template: &str, values: &[&str]) -> String {
    let mut out = String::new();
    let mut values = values.iter();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('}').expect("a parsed template closes its braces");
        let operator = rest[open + 1..].chars().next();
        // RFC 6570: an undefined variable expands to nothing, its prefix included.
        if let Some(value) = values.next() {
            out.push_str(match operator {
                Some('#') => "#",
                Some('/') => "/",
                Some('.') => ".",
                _ => "",
            });
            out.push_str(value);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Compiling an arbitrary schema within the default bounds never panics, and validating
/// with it reports at least one violation whenever it refuses an instance.
///
/// Input: JSON values one after another: the schema, then optionally an instance. The
/// schema itself and `{}` are validated too.
pub fn schema_compile(data: &[u8]) {
    let mut values = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
    let Some(Ok(schema)) = values.next() else { return };
    let Ok(compiled) = CompiledSchema::compile(&schema, &SchemaBounds::default()) else { return };
    let instance = values.next().and_then(Result::ok);
    for instance in [Some(&schema), Some(&json!({})), instance.as_ref()].into_iter().flatten() {
        if let Err(violations) = compiled.validate(instance) {
            assert!(!violations.named.is_empty(), "an instance was refused without a violation");
            for violation in &violations.named {
                assert!(violation.pointer.is_empty() || violation.pointer.starts_with('/'), "{violation}");
            }
        }
    }
}

/// The builtin handlers `bondry check` assembles against.
static BUILTINS: LazyLock<Builtins> = LazyLock::new(Builtins::bundled);

/// Configuration parsing and checking as `bondry check` does it: parsing arbitrary TOML,
/// then assembling the runtime's configuration without opening any sink, never panics.
///
/// Relative paths resolve under a directory that does not exist; configurations naming
/// an absolute path or `..` are skipped, since reading a device or a FIFO could block
/// and that would be no fault of the checks.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(table) = text.parse::<toml::Table>() else { return };
    if names_a_path_outside(&toml::Value::Table(table)) {
        return;
    }
    let Ok(loaded) = bondry::config::parse("fuzz.toml", text, PathBuf::from("/nonexistent/bondry-fuzz"), []) else {
        return;
    };
    let _ = assemble(&loaded, &BUILTINS, &Overrides::default(), false);
}

fn names_a_path_outside(value: &toml::Value) -> bool {
    match value {
        toml::Value::String(text) => text.starts_with('/') || text.contains(".."),
        toml::Value::Array(items) => items.iter().any(names_a_path_outside),
        toml::Value::Table(table) => table.values().any(names_a_path_outside),
        _ => false,
    }
}

/// An OpenAPI document read and mapped as `bondry check` does it (JSON or YAML; any
/// refusal is fine), its operations named as tools among the realm's, and each one's
/// request built from tricky arguments. Input: the document.
///
/// Asserts: no two tools share an id, and each id is a valid capability id; every input
/// and output schema is an object schema; a built request's path starts with `/` and
/// never has a `.` or `..` segment, nor a character a path may not hold raw; its query
/// and header values hold no line break.
pub fn openapi(data: &[u8]) {
    use bondry_backends::openapi::{document, mapping, request, tools};
    let Ok(document) = document::read(data) else { return };
    let Ok(mapped) = mapping::map(&document, &mapping::Options::default()) else { return };
    let mut names = bondry_catalogue::naming::Names::of_realm(["x.own"], []);
    let served = tools::tools("x", "x", mapped, &mut names, &SchemaBounds::default());
    let mut ids = std::collections::HashSet::new();
    let tricky =
        [json!(".."), json!("a/../b"), json!(["..", "%2e%2e", "a b#c"]), json!({"a": "\r\n", "..": 1}), json!(7)];
    for tool in &served.tools {
        let id = tool.descriptor.id.as_str();
        assert!(ids.insert(id.to_owned()), "the id {id} is given twice");
        assert!(bondry_core::capability::is_valid_id(id), "{id}");
        assert_eq!(tool.descriptor.input_schema["type"], "object", "{id}");
        if let Some(output) = &tool.descriptor.output_schema {
            assert_eq!(output["type"], "object", "{id}");
        }
        for value in &tricky {
            let arguments = tool.operation.parameters.iter().map(|p| (p.argument.clone(), value.clone())).collect();
            let Ok(built) = request::build(&tool.operation, &arguments, None) else { continue };
            assert!(built.path.starts_with('/'), "{}", built.path);
            for segment in built.path.split('/') {
                assert!(segment != "." && segment != "..", "{} climbs", built.path);
            }
            assert!(!built.path.contains([' ', '#', '?', '\r', '\n']), "{}", built.path);
            assert!(!built.query.contains([' ', '#', '\r', '\n']), "{}", built.query);
            for (_, header) in &built.headers {
                assert!(!header.contains(['\r', '\n']), "{header:?}");
            }
        }
    }
}
