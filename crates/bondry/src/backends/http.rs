//! Capabilities served by web services, `backend = "http"` on a capability stanza: each
//! checked into a procedure (`bondry-backends`) on the realm's pooled client for its
//! service's origin. Configured like a builtin capability (ids from the file, never
//! pinned), so a reload swaps them with the realm's other configured capabilities; as
//! backends they only report, by service origin.

use std::sync::Arc;
use std::time::Duration;

use bondry_backends::procedure::signing::MIN_KEY_BYTES;
use bondry_backends::procedure::{Procedure, ProcedureSpec};
use bondry_core::backend::{BackendKind, Plan};
use bondry_core::capability::CapabilityKind;
use bondry_outbound::Settings;

use super::configured::Configured;
use super::endpoint::{self, Query, Reserved};
use super::{Bound, Kind, Stanza, Start};
use crate::config::diagnostics::{Diagnostics, ONE_HOUR_MS, within};
use crate::config::{Loaded, RawCapability};

pub(super) const KIND: Kind = Kind {
    kind: BackendKind::HTTP,
    plan: |_, _, _| Some(Plan::new(BackendKind::HTTP, ())),
    start: |Start { registry, .. }| Ok(Arc::new(Configured::new(BackendKind::HTTP, registry, origin))),
    // Its ids are the file's own, which `check` reads in the registry.
    prefixes: |_| Vec::new(),
    warnings: |_, _| Vec::new(),
    report: |_, _| Vec::new(),
    bind: Some(bind),
};

/// Headers Bondry sets itself on a procedure's POST, which `headers_from` may not.
const RESERVED: Reserved = Reserved {
    names: &["host", "content-type", "content-length", "accept", "transfer-encoding", "connection", "bondry-signature"],
    prefix: None,
    to: "a service",
};

const MAX_RESPONSE_LIMIT: u64 = 256 * 1024 * 1024;

/// The keys only a service's capability takes, and whether `raw` gives each.
pub(crate) fn service_keys(raw: &RawCapability) -> [(&'static str, bool); 12] {
    [
        ("url", raw.url.is_some()),
        ("timeout_ms", raw.timeout_ms.is_some()),
        ("max_concurrent_calls", raw.max_concurrent_calls.is_some()),
        ("headers_from", raw.headers_from.is_some()),
        ("disclose_principal", raw.disclose_principal.is_some()),
        ("signing_key_env", raw.signing_key_env.is_some()),
        ("http2", raw.http2.is_some()),
        ("max_response_bytes", raw.max_response_bytes.is_some()),
        ("allow_plain_http", raw.allow_plain_http.is_some()),
        ("allow_url_elicitation", raw.allow_url_elicitation.is_some()),
        ("ca_file", raw.ca_file.is_some()),
        ("proxy", raw.proxy.is_some()),
    ]
}

/// The service's origin, as its backend is named: `target` is the procedure's URL.
fn origin(target: &str) -> String {
    reqwest::Url::parse(target).map_or_else(|_| target.to_owned(), |url| url.origin().ascii_serialization())
}

/// A capability stanza with `backend = "http"`, checked into its procedure.
fn bind(diagnostics: &mut Diagnostics, loaded: &Loaded, stanza: &Stanza) -> Option<Bound> {
    let (raw, at) = (stanza.raw, |key: &str| format!("{}.{key}", stanza.path));
    if raw.handler.is_some() {
        diagnostics.refuse(at("handler"), "a service's capability names no builtin handler: its url serves it");
    }
    if stanza.kind == Some(CapabilityKind::Tool) && raw.input_schema.is_none() && raw.input_schema_file.is_none() {
        diagnostics.refuse(
            at("input_schema"),
            "a tool served over HTTP needs its input_schema: arguments are checked against it before the service is called",
        );
    }
    let plain = raw.allow_plain_http.unwrap_or(false);
    let url = match &raw.url {
        None => {
            diagnostics.refuse(
                at("url"),
                "a service's capability needs the URL Bondry POSTs to, e.g. url = \"https://tools.example.com/lookup\"",
            );
            None
        }
        Some(url) => diagnostics.ok(at("url"), endpoint::url(url, plain, Query::Refused)),
    };
    let timeout = diagnostics
        .ok(at("timeout_ms"), within(raw.timeout_ms.unwrap_or(30_000), 1..=ONE_HOUR_MS, "milliseconds (an hour)"));
    let slots =
        diagnostics.ok(at("max_concurrent_calls"), within(raw.max_concurrent_calls.unwrap_or(64), 1..=10_000, "calls"));
    let limit = diagnostics.ok(
        at("max_response_bytes"),
        within(raw.max_response_bytes.unwrap_or(4 * 1024 * 1024), 1024..=MAX_RESPONSE_LIMIT, "bytes (256 MiB)"),
    );
    let headers = endpoint::headers(diagnostics, loaded, stanza.path, raw.headers_from.as_ref(), &RESERVED);
    let signing_key = match &raw.signing_key_env {
        None => Some(None),
        Some(variable) => diagnostics.ok(at("signing_key_env"), signing_key(loaded, variable)).map(Some),
    };
    let http2 = match raw.http2.as_deref() {
        None => Some(false),
        Some("prior_knowledge") => Some(true),
        Some(other) => {
            let why = "use \"prior_knowledge\" for a service that speaks HTTP/2 without TLS (h2c), or leave it out";
            diagnostics.refuse(at("http2"), format!("{other:?} is not an HTTP/2 mode; {why}"));
            None
        }
    };
    let connection =
        endpoint::connection(diagnostics, loaded, stanza.path, raw.ca_file.as_deref(), raw.proxy.as_deref());
    let ((ca_file, proxy), http2) = (connection?, http2?);
    if http2 && proxy.is_some() {
        let why = "h2c (http2 = \"prior_knowledge\") is spoken to the service itself, never through a proxy; leave one of them out";
        diagnostics.refuse(at("proxy"), why.to_owned());
        return None;
    }
    let settings =
        Settings { connect_timeout: Settings::default().connect_timeout, http2_prior_knowledge: http2, ca_file, proxy };
    let url = url?;
    let client = endpoint::client(diagnostics, stanza.path, "url", stanza.realm, &url, &settings)?;
    let spec = ProcedureSpec {
        kind: stanza.kind?,
        url: url.clone(),
        timeout: Duration::from_millis(timeout?),
        max_concurrent_calls: usize::try_from(slots?).unwrap_or(usize::MAX),
        headers: headers?,
        disclose_principal: raw.disclose_principal.unwrap_or(false),
        signing_key: signing_key?,
        max_response_bytes: usize::try_from(limit?).unwrap_or(usize::MAX),
        allow_url_elicitation: raw.allow_url_elicitation.unwrap_or(false),
    };
    let procedure = diagnostics.ok(at("url"), Procedure::new(spec, client))?;
    Some(Bound { handler: Arc::new(procedure), target: url.to_string() })
}

/// The key in `variable`, at least [`MIN_KEY_BYTES`]; never repeated in a refusal.
fn signing_key(loaded: &Loaded, variable: &str) -> Result<Arc<[u8]>, String> {
    let key = loaded.env.get(variable).ok_or_else(|| {
        format!("the environment variable {variable:?} is not set (it holds the key that signs each request)")
    })?;
    if key.len() < MIN_KEY_BYTES {
        return Err(format!(
            "the key in {variable:?} is {} bytes; a signing key needs at least {MIN_KEY_BYTES} (e.g. `openssl rand -hex 32`)",
            key.len()
        ));
    }
    Ok(Arc::from(key.as_bytes()))
}

#[cfg(test)]
mod tests {
    use crate::assemble::{Overrides, assemble};
    use crate::builtins::Builtins;
    use crate::config::{ConfigError, EMBEDDED_DEFAULT, parse};

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    /// Environment variables, as (name, value).
    type Env<'a> = &'a [(&'a str, &'a str)];

    /// The embedded default with one more capability, `stanza` its keys after id and kind.
    fn with(stanza: &str) -> String {
        format!("{EMBEDDED_DEFAULT}\n[[realms.default.capabilities]]\nid = \"svc.lookup\"\nkind = \"tool\"\n{stanza}\n")
    }

    /// Each refusal as "key: why", in the order found.
    fn refused(text: &str, env: &[(&str, &str)]) -> Vec<String> {
        let env = env.iter().map(|(name, value)| (name.to_string(), value.to_string()));
        let loaded = parse("t.toml", text, ".".into(), env).unwrap();
        match assemble(&loaded, &Builtins::demo(), &Overrides::default(), false) {
            Ok(_) => Vec::new(),
            Err(errors) => {
                errors.iter().map(|error| ConfigError { place: None, ..error.clone() }.to_string()).collect()
            }
        }
    }

    const OK: &str = "backend = \"http\"\nurl = \"http://127.0.0.1:9/lookup\"\ninput_schema = '{\"type\": \"object\"}'";

    #[test]
    fn a_service_capability_with_every_key_is_accepted() {
        let every = format!(
            "{OK}\ntimeout_ms = 5000\nmax_concurrent_calls = 4\nheaders_from = {{ X-Api-Key = \"API_KEY\" }}\ndisclose_principal = true\nsigning_key_env = \"SIGNING\"\nhttp2 = \"prior_knowledge\"\nmax_response_bytes = 65536\nallow_plain_http = false\nallow_url_elicitation = true"
        );
        assert_eq!(refused(&with(&every), &[("API_KEY", "k"), ("SIGNING", KEY)]), Vec::<String>::new());
    }

    #[test]
    fn each_refusal_names_its_key() {
        let cases: &[(&str, Env, &str)] = &[
            (
                "backend = \"http\"\nurl = \"http://tools.example.com/x\"\ninput_schema = '{}'",
                &[],
                "t.toml: realms.default.capabilities[4].url: \"http://tools.example.com/x\" is plain http to a host that is not loopback; use https, or set allow_plain_http = true to send requests and their headers unencrypted",
            ),
            (
                "backend = \"http\"\nurl = \"https://me:pw@tools.example.com/x\"\ninput_schema = '{}'",
                &[],
                "t.toml: realms.default.capabilities[4].url: \"https://tools.example.com/x\" holds credentials (left out here); send them in a header instead, e.g. headers_from = { Authorization = \"VARIABLE\" }",
            ),
            (
                "backend = \"http\"\nurl = \"https://tools.example.com/x?key=s3cret\"\ninput_schema = '{}'",
                &[],
                "t.toml: realms.default.capabilities[4].url: \"https://tools.example.com/x\" has a query string, which would be sent to the service on every call unseen; take it out of the URL (a secret belongs in headers_from)",
            ),
            (
                &format!("{OK}\nsigning_key_env = \"SIGNING\""),
                &[],
                "t.toml: realms.default.capabilities[4].signing_key_env: the environment variable \"SIGNING\" is not set (it holds the key that signs each request)",
            ),
            (
                &format!("{OK}\nsigning_key_env = \"SIGNING\""),
                &[("SIGNING", "short")],
                "t.toml: realms.default.capabilities[4].signing_key_env: the key in \"SIGNING\" is 5 bytes; a signing key needs at least 32 (e.g. `openssl rand -hex 32`)",
            ),
            (
                &format!("{OK}\nheaders_from = {{ Bondry-Signature = \"V\" }}"),
                &[("V", "x")],
                "t.toml: realms.default.capabilities[4].headers_from.Bondry-Signature: \"Bondry-Signature\" is a header Bondry sets itself on requests to a service; remove it",
            ),
            (
                "backend = \"http\"\nurl = \"http://127.0.0.1:9/x\"",
                &[],
                "t.toml: realms.default.capabilities[4].input_schema: a tool served over HTTP needs its input_schema: arguments are checked against it before the service is called",
            ),
            (
                &format!("{OK}\nhttp2 = \"yes\""),
                &[],
                "t.toml: realms.default.capabilities[4].http2: \"yes\" is not an HTTP/2 mode; use \"prior_knowledge\" for a service that speaks HTTP/2 without TLS (h2c), or leave it out",
            ),
            (
                &format!("{OK}\nhttp2 = \"prior_knowledge\"\nproxy = \"http://proxy.example:3128\""),
                &[],
                "t.toml: realms.default.capabilities[4].proxy: h2c (http2 = \"prior_knowledge\") is spoken to the service itself, never through a proxy; leave one of them out",
            ),
            (
                &format!("{OK}\nhandler = \"demo.echo\""),
                &[],
                "t.toml: realms.default.capabilities[4].handler: a service's capability names no builtin handler: its url serves it",
            ),
            (
                "backend = \"builtin\"\nhandler = \"demo.echo\"\nurl = \"http://127.0.0.1:9/x\"",
                &[],
                "t.toml: realms.default.capabilities[4].url: url is a key of a service's capability (backend = \"http\"); a builtin handler takes none",
            ),
            (
                "backend = \"grpc\"",
                &[],
                "t.toml: realms.default.capabilities[4].backend: \"grpc\" is not a backend of a capability stanza; use \"builtin\" or \"http\"",
            ),
        ];
        for (stanza, env, expected) in cases {
            assert_eq!(refused(&with(stanza), env), [*expected], "{stanza}");
        }
        let three =
            format!("{OK}\nheaders_from = {{ Host = \"V\", Content-Length = \"V\", transfer-encoding = \"V\" }}");
        assert_eq!(refused(&with(&three), &[("V", "x")]).len(), 3);
    }
}
