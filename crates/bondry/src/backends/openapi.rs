//! REST APIs described by OpenAPI documents, `[[realms.NAME.openapi]]`: each entry's
//! document read and mapped (`bondry-backends`' `openapi`), its operations configured as
//! the realm's tools, named among the realm's ids and served by handlers that call the API
//! through the realm's pooled client for its origin. The document is read at start and at
//! every reload, so a changed one is a catalogue change like any configured capability's;
//! as backends the entries only report, by name.

use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bondry_backends::openapi::call::{Api, ApiSpec, Auth, OperationHandler};
use bondry_backends::openapi::document::{self, MAX_DOCUMENT_BYTES};
use bondry_backends::openapi::mapping::{self, Options, Skipped};
use bondry_backends::openapi::schema::Dialect;
use bondry_backends::openapi::tools;
use bondry_core::backend::{BackendKind, Plan};
use bondry_core::capability::Descriptor;
use bondry_core::registry::{Lint, Registration};
use bondry_core::schema::SchemaBounds;
use bondry_mcp_proto::lint::McpLint;
use bondry_mcp_proto::vocabulary;
use bondry_outbound::Settings;

use super::configured::Configured;
use super::endpoint::{self, Query, Reserved};
use super::upstream::stanza;
use super::{Kind, Planning, Start};
use crate::config::diagnostics::{Diagnostics, ONE_HOUR_MS, within};
use crate::config::{Loaded, RawApiAuth, RawListing};

pub(super) const KIND: Kind = Kind {
    kind: BackendKind::OPENAPI,
    plan,
    start: |Start { registry, .. }| Ok(Arc::new(Configured::new(BackendKind::OPENAPI, registry, entry_of))),
    // Its tools are configured capabilities, whose ids `check` reads in the registry.
    prefixes: |_| Vec::new(),
    warnings,
    report,
    bind: None,
};

/// Headers Bondry sets itself on an operation's request, which `headers_from` may not.
const RESERVED: Reserved = Reserved {
    names: &["host", "content-type", "content-length", "accept", "transfer-encoding", "connection"],
    prefix: None,
    to: "an API",
};

const MAX_RESPONSE_LIMIT: u64 = 256 * 1024 * 1024;

/// What one entry's document yielded, as `check` reports it and warnings name it.
struct Document {
    /// The entry's index among the realm's `openapi` stanzas, and its name.
    index: usize,
    name: String,
    file: String,
    dialect: Dialect,
    /// Each tool's id and operation (`METHOD path`).
    tools: Vec<(String, String)>,
    skipped: Vec<Skipped>,
    /// What a served operation goes without: (operation, what).
    left_out: Vec<(String, String)>,
    /// `include` is given and picks no operation.
    picks_nothing: bool,
}

/// The entry a tool's binding target (`"<entry> <METHOD> <path>"`) names.
fn entry_of(target: &str) -> String {
    target.split(' ').next().unwrap_or(target).to_owned()
}

/// Every entry of the realm, each checked whole; its tools added to the realm's configured
/// capabilities.
fn plan(diagnostics: &mut Diagnostics, loaded: &Loaded, planning: &mut Planning) -> Option<Plan> {
    let raw = &planning.raw.openapi;
    let documents: Vec<_> = (0..raw.len()).map(|index| entry(diagnostics, loaded, planning, index)).collect();
    let documents: Vec<Document> = documents.into_iter().collect::<Option<_>>()?;
    Some(Plan::new(BackendKind::OPENAPI, documents))
}

fn documents(plan: &Plan) -> &[Document] {
    plan.stanzas::<Vec<Document>>().map(Vec::as_slice).unwrap_or_default()
}

/// Each operation not served, and each part of one left out, keyed by its entry.
fn warnings(plan: &Plan, realm: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for document in documents(plan) {
        let key = format!("realms.{realm}.openapi[{}]", document.index);
        for skipped in &document.skipped {
            found.push((key.clone(), format!("operation {} is not served: {}", skipped.operation, skipped.why)));
        }
        for (operation, what) in &document.left_out {
            found.push((key.clone(), format!("operation {operation} is served without {what}")));
        }
        if document.picks_nothing {
            let why = "matches no operation of the document: its globs match operationIds (\"get*\"), not tool ids";
            found.push((format!("{key}.include"), why.to_owned()));
        }
    }
    found
}

/// Per document: its file and version, then each tool it yields.
fn report(plan: &Plan, realm: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for document in documents(plan) {
        let version = match document.dialect {
            Dialect::OpenApi30 => "3.0",
            Dialect::OpenApi31 => "3.1",
        };
        let skipped = match document.skipped.len() {
            0 => String::new(),
            count => format!(", {count} operation(s) not served (each a warning)"),
        };
        lines.push(format!(
            "realms.{realm}.openapi[{}] {:?}: {} (OpenAPI {version}): {} tool(s){skipped}",
            document.index,
            document.name,
            document.file,
            document.tools.len()
        ));
        lines.extend(document.tools.iter().map(|(id, operation)| format!("  {id}  {operation}")));
    }
    lines
}

/// The entry `planning.raw.openapi[index]`: its keys checked, its document read and
/// mapped, its tools named among the realm's and added to its configured capabilities.
fn entry(diagnostics: &mut Diagnostics, loaded: &Loaded, planning: &mut Planning, index: usize) -> Option<Document> {
    let (realm, all) = (planning.realm, &planning.raw.openapi);
    let raw = &all[index];
    let stanza = format!("realms.{realm}.openapi[{index}]");
    let at = |k: &str| format!("{stanza}.{k}");
    let name = name(diagnostics, &at("name"), planning, index);
    let prefix = match &raw.prefix {
        Some(prefix) => diagnostics.ok(at("prefix"), stanza::prefix(prefix)),
        None => name.clone(),
    };
    // An upstream lists its tools while serving: under one prefix, a reload could meet an
    // id the upstream holds, which `check` cannot foresee.
    let upstream = prefix.as_ref().and_then(|prefix| {
        let upstreams = planning.raw.upstreams.iter();
        upstreams
            .filter(|upstream| upstream.prefix.as_ref().unwrap_or(&upstream.name) == prefix)
            .map(|u| &u.name)
            .next()
    });
    if let (Some(prefix), Some(upstream)) = (&prefix, upstream) {
        let key = if raw.prefix.is_some() { "prefix" } else { "name" };
        diagnostics.refuse(
            at(key),
            format!("{prefix:?} is the prefix of the realm's upstream {upstream:?} too, whose tools could take this API's ids; give the API a prefix of its own"),
        );
    }
    let plain = raw.allow_plain_http.unwrap_or(false);
    let base_url = diagnostics.ok(at("base_url"), endpoint::url(&raw.base_url, plain, Query::Refused));
    let include = stanza::globs(diagnostics, &at("include"), &raw.include);
    let exclude = stanza::globs(diagnostics, &at("exclude"), &raw.exclude);
    let timeout = diagnostics
        .ok(at("timeout_ms"), within(raw.timeout_ms.unwrap_or(30_000), 1..=ONE_HOUR_MS, "milliseconds (an hour)"));
    let slots =
        diagnostics.ok(at("max_concurrent_calls"), within(raw.max_concurrent_calls.unwrap_or(64), 1..=10_000, "calls"));
    let limit = diagnostics.ok(
        at("max_response_bytes"),
        within(raw.max_response_bytes.unwrap_or(4 * 1024 * 1024), 1024..=MAX_RESPONSE_LIMIT, "bytes (256 MiB)"),
    );
    let headers = endpoint::headers(diagnostics, loaded, &stanza, raw.headers_from.as_ref(), &RESERVED);
    let auth = raw.auth.as_ref().map_or(Some(None), |auth| self::auth(diagnostics, loaded, &stanza, auth).map(Some));
    let connection = endpoint::connection(diagnostics, loaded, &stanza, raw.ca_file.as_deref(), raw.proxy.as_deref());
    let file = loaded.base_dir.join(&raw.spec_file);
    let document = diagnostics.ok(at("spec_file"), read(&file));
    let (headers, auth) = (headers?, auth?);
    let mut sent_headers: Vec<String> = headers.iter().map(|(name, _)| name.as_str().to_owned()).collect();
    let (auth_header, sent_query) = match &auth {
        Some(Auth::Bearer(_) | Auth::Basic(_)) => (Some("authorization"), None),
        Some(Auth::HeaderKey { name, .. }) => (Some(name.as_str()), None),
        Some(Auth::QueryKey { name, .. }) => (None, Some(name.clone())),
        None => (None, None),
    };
    if let Some(sent) = auth_header {
        if let Some((twice, _)) = headers.iter().find(|(name, _)| name.as_str() == sent) {
            diagnostics.refuse(
                at(&format!("headers_from.{twice}")),
                format!("{twice:?} is the header auth sends; give it once, in auth"),
            );
            return None;
        }
        sent_headers.push(sent.to_owned());
    }
    let bearer = matches!(auth, Some(Auth::Bearer(_)));
    let options = Options { include: include?, exclude: exclude?, sent_headers, sent_query, bearer };
    let mapped = diagnostics.ok(at("spec_file"), mapping::map(&document?, &options))?;
    let dialect = mapped.dialect;
    let (name, prefix, base_url) = (name?, prefix?, base_url?);
    let (ca_file, proxy) = connection?;
    let settings =
        Settings { connect_timeout: Settings::default().connect_timeout, http2_prior_knowledge: false, ca_file, proxy };
    let client = endpoint::client(diagnostics, &stanza, "base_url", realm, &base_url, &settings)?;
    let spec = ApiSpec {
        name: name.clone(),
        base_url,
        timeout: Duration::from_millis(timeout?),
        max_concurrent_calls: usize::try_from(slots?).unwrap_or(usize::MAX),
        headers,
        auth,
        max_response_bytes: usize::try_from(limit?).unwrap_or(usize::MAX),
    };
    let api = diagnostics.ok(at("auth"), Api::new(spec, client))?;
    let reserved = mapped
        .operations
        .iter()
        .map(|operation| plain_id(&prefix, &operation.name))
        .find(|id| vocabulary::RESERVED_TOOL_IDS.contains(&id.as_str()));
    if let Some(id) = reserved {
        let key = if raw.prefix.is_some() { "prefix" } else { "name" };
        diagnostics.refuse(
            at(key),
            format!("an operation would be served as {id:?}, an id Bondry keeps for finding and calling tools by search; exclude the operation or give the API another prefix"),
        );
        return None;
    }
    let listing = RawListing::of(raw.listing, planning.raw.listing);
    let yielded = tools::tools(&name, &prefix, mapped, planning.names, &SchemaBounds::default());
    let mut report = Document {
        index,
        name,
        file: raw.spec_file.display().to_string(),
        dialect,
        tools: Vec::new(),
        picks_nothing: !raw.include.is_empty() && yielded.tools.is_empty() && yielded.skipped.is_empty(),
        skipped: yielded.skipped,
        left_out: Vec::new(),
    };
    for tool in yielded.tools {
        let operation = format!("{} {}", tool.operation.method, tool.operation.path);
        let labelled = format!("{operation} ({})", tool.operation.name);
        // What MCP's own rules refuse of a descriptor (its x-mcp-header declarations) keeps
        // the one operation out, not the realm.
        if let Err(why) = McpLint.check(&tool.descriptor) {
            report.skipped.push(Skipped { operation: labelled, why });
            continue;
        }
        report.left_out.extend(tool.operation.left_out.iter().map(|what| (labelled.clone(), what.clone())));
        report.tools.push((tool.descriptor.id.as_str().to_owned(), operation));
        let handler = OperationHandler::new(Arc::clone(&api), tool.operation);
        let descriptor = Descriptor { listing, ..tool.descriptor };
        planning.configured.push(Registration { descriptor: Arc::new(descriptor), handler: Arc::new(handler) });
    }
    Some(report)
}

/// The id an operation named `name` takes under `prefix` when nothing else holds it.
fn plain_id(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_owned() } else { format!("{prefix}.{name}") }
}

/// An upstream's name rule, and none given twice among the realm's entries and upstreams:
/// it names the backend in audit records, logs and the admin API.
fn name(diagnostics: &mut Diagnostics, key: &str, planning: &Planning, index: usize) -> Option<String> {
    let (realm, raw) = (planning.realm, planning.raw);
    let name = &raw.openapi[index].name;
    let named = diagnostics.ok(key, stanza::name_rule(name))?;
    if raw.openapi[..index].iter().any(|earlier| &earlier.name == name) {
        diagnostics
            .refuse(key, format!("{name:?} is defined twice; give each [[realms.{realm}.openapi]] a name of its own"));
        return None;
    }
    if raw.upstreams.iter().any(|upstream| &upstream.name == name) {
        diagnostics.refuse(
            key,
            format!("{name:?} names an upstream of the realm too; give the API a name of its own (it names the backend in audit records)"),
        );
        return None;
    }
    Some(named)
}

/// `auth`: its scheme, the secret from the environment (never repeated in a refusal), and
/// for an API key where it goes.
fn auth(diagnostics: &mut Diagnostics, loaded: &Loaded, stanza: &str, raw: &RawApiAuth) -> Option<Auth> {
    let at = |k: &str| format!("{stanza}.auth.{k}");
    let secret = match loaded.env.get(&raw.value_env) {
        Some(secret) if !secret.is_empty() => Some(secret.to_owned()),
        Some(_) => {
            diagnostics.refuse(at("value_env"), format!("the environment variable {:?} is empty", raw.value_env));
            None
        }
        None => {
            let why =
                format!("the environment variable {:?} is not set (it holds the secret auth sends)", raw.value_env);
            diagnostics.refuse(at("value_env"), why);
            None
        }
    };
    let api_key_only = |diagnostics: &mut Diagnostics, key: &str, given: bool| {
        if given {
            diagnostics.refuse(at(key), format!("{key} is only for scheme = \"api_key\"; remove it"));
        }
        !given
    };
    match raw.scheme.as_str() {
        "bearer" | "basic" => {
            let alone = api_key_only(diagnostics, "name", raw.name.is_some())
                & api_key_only(diagnostics, "in", raw.place.is_some());
            let secret = secret?;
            if raw.scheme == "basic" && !secret.contains(':') {
                let why = format!("the value of {:?} must be user:password (it is sent base64-encoded)", raw.value_env);
                diagnostics.refuse(at("value_env"), why);
                return None;
            }
            alone.then(|| if raw.scheme == "bearer" { Auth::Bearer(secret) } else { Auth::Basic(secret) })
        }
        "api_key" => {
            let Some(name) = &raw.name else {
                diagnostics.refuse(
                    at("name"),
                    "an API key needs the name of the header or query parameter it goes in, e.g. name = \"X-Api-Key\"",
                );
                return None;
            };
            match raw.place.as_deref().unwrap_or("header") {
                "header" => {
                    let header = diagnostics.ok(at("name"), endpoint::header_name(name, &RESERVED))?;
                    Some(Auth::HeaderKey { name: header, secret: secret? })
                }
                "query" => {
                    let printable = !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic());
                    if !printable {
                        diagnostics.refuse(
                            at("name"),
                            format!("{name:?} is not a query parameter name: use printable ASCII, no spaces"),
                        );
                        return None;
                    }
                    Some(Auth::QueryKey { name: name.clone(), secret: secret? })
                }
                other => {
                    diagnostics.refuse(
                        at("in"),
                        format!("{other:?} is not where an API key goes; use \"header\" or \"query\""),
                    );
                    None
                }
            }
        }
        other => {
            diagnostics.refuse(
                at("scheme"),
                format!("{other:?} is not an auth scheme; use \"bearer\", \"basic\" or \"api_key\""),
            );
            None
        }
    }
}

/// The document at `path`, read whole when it is at most [`MAX_DOCUMENT_BYTES`].
fn read(path: &Path) -> Result<serde_json::Value, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown:?}: {e}"))?;
    let bytes = file.metadata().map_or(0, |meta| meta.len());
    if bytes > u64::try_from(MAX_DOCUMENT_BYTES).unwrap_or(u64::MAX) {
        return Err(format!("{shown:?} is {bytes} bytes; Bondry reads documents of at most 16 MiB"));
    }
    let mut bytes = Vec::new();
    // One byte past the limit tells a document that is too large, without reading it all.
    let limit = u64::try_from(MAX_DOCUMENT_BYTES).unwrap_or(u64::MAX) + 1;
    file.take(limit).read_to_end(&mut bytes).map_err(|e| format!("cannot read {shown:?}: {e}"))?;
    document::read(&bytes).map_err(|error| format!("{shown:?}: {error}"))
}

#[cfg(test)]
mod tests {
    use crate::assemble::{Overrides, assemble};
    use crate::builtins::Builtins;
    use crate::config::{ConfigError, EMBEDDED_DEFAULT, parse};

    const DOCUMENT: &str = r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {
        "/echo": {"get": {"operationId": "echo", "responses": {"200": {"description": "ok"}}}}}}"#;

    /// The embedded default with `stanzas` added, its document `api.json` in a fresh
    /// directory: each refusal as "key: why", or the realm's tool ids.
    fn assembled(stanzas: &str, env: &[(&str, &str)]) -> Result<Vec<String>, Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("api.json"), DOCUMENT).unwrap();
        let text = format!("pin_store = \"memory\"\n{EMBEDDED_DEFAULT}\n{stanzas}\n");
        let env = env.iter().map(|(name, value)| (name.to_string(), value.to_string()));
        let loaded = parse("t.toml", &text, dir.path().to_path_buf(), env).unwrap();
        match assemble(&loaded, &Builtins::demo(), &Overrides::default(), false) {
            Ok(assembled) => {
                let registry = &assembled.server.realms["default"].registry;
                Ok(registry.snapshot().catalogue.iter().map(|entry| entry.id().as_str().to_owned()).collect())
            }
            Err(errors) => {
                Err(errors.iter().map(|error| ConfigError { place: None, ..error.clone() }.to_string()).collect())
            }
        }
    }

    /// Environment variables, as (name, value).
    type Env<'a> = &'a [(&'a str, &'a str)];

    fn entry(more: &str) -> String {
        format!(
            "[[realms.default.openapi]]\nname = \"api\"\nspec_file = \"api.json\"\nbase_url = \"http://127.0.0.1:9/v1\"\n{more}"
        )
    }

    #[test]
    fn an_entry_with_every_key_is_accepted_and_its_tools_named_among_the_realms() {
        let every = entry(
            "prefix = \"demo\"\ninclude = [\"e*\"]\nexclude = [\"x*\"]\nheaders_from = { X-Extra = \"EXTRA\" }\nauth = { scheme = \"api_key\", value_env = \"KEY\", name = \"X-Key\", in = \"header\" }\ntimeout_ms = 5000\nmax_concurrent_calls = 4\nmax_response_bytes = 65536\nallow_plain_http = false",
        );
        let ids = assembled(&every, &[("EXTRA", "x"), ("KEY", "k")]).unwrap();
        // `demo.echo` is the file's own: the operation's id is cut and hash-suffixed.
        let echoes: Vec<&String> = ids.iter().filter(|id| id.starts_with("demo.echo")).collect();
        assert_eq!(echoes.len(), 2, "{ids:?}");
        assert!(echoes.iter().any(|id| id.starts_with("demo.echo-")), "{ids:?}");
    }

    #[test]
    fn each_refusal_names_its_key() {
        let at = "t.toml: realms.default.openapi[0]";
        let cases: &[(String, Env, String)] = &[
            (
                entry("").replace("name = \"api\"", "name = \"API\""),
                &[],
                format!("{at}.name: \"API\" is not a backend name: use 1-32 characters from a-z 0-9 _ - (it names the backend in logs, audit records and the CLI)"),
            ),
            (
                format!("{}\n{}", entry(""), entry("")),
                &[],
                "t.toml: realms.default.openapi[1].name: \"api\" is defined twice; give each [[realms.default.openapi]] a name of its own".into(),
            ),
            (
                format!("{}\n[[realms.default.upstreams]]\nname = \"api\"\ntransport = \"stdio\"\ncommand = \"sh\"\n", entry("")),
                &[],
                format!("{at}.name: \"api\" names an upstream of the realm too; give the API a name of its own (it names the backend in audit records)"),
            ),
            (
                format!("{}\n[[realms.default.upstreams]]\nname = \"up\"\nprefix = \"gh\"\ntransport = \"stdio\"\ncommand = \"sh\"\n", entry("prefix = \"gh\"")),
                &[],
                format!("{at}.prefix: \"gh\" is the prefix of the realm's upstream \"up\" too, whose tools could take this API's ids; give the API a prefix of its own"),
            ),
            (
                entry("prefix = \"a.\""),
                &[],
                format!("{at}.prefix: \"a.\" is not a prefix: use \"\" or 1-32 characters from A-Z a-z 0-9 . _ -, not ending in \".\" (an id is the prefix, a dot and the backend's own name)"),
            ),
            (
                entry("").replace("http://127.0.0.1:9/v1", "https://api.example.com/v1?key=s3cret"),
                &[],
                format!("{at}.base_url: \"https://api.example.com/v1\" has a query string, which would be sent to the service on every call unseen; take it out of the URL (a secret belongs in headers_from)"),
            ),
            (
                entry("").replace("http://127.0.0.1:9/v1", "http://api.example.com/v1"),
                &[],
                format!("{at}.base_url: \"http://api.example.com/v1\" is plain http to a host that is not loopback; use https, or set allow_plain_http = true to send requests and their headers unencrypted"),
            ),
            (
                entry("").replace("api.json", "missing.json"),
                &[],
                format!("{at}.spec_file: cannot read \"DIR/missing.json\": No such file or directory (os error 2)"),
            ),
            (
                entry("auth = { scheme = \"digest\", value_env = \"KEY\" }"),
                &[("KEY", "k")],
                format!("{at}.auth.scheme: \"digest\" is not an auth scheme; use \"bearer\", \"basic\" or \"api_key\""),
            ),
            (
                entry("auth = { scheme = \"bearer\", value_env = \"KEY\" }"),
                &[],
                format!("{at}.auth.value_env: the environment variable \"KEY\" is not set (it holds the secret auth sends)"),
            ),
            (
                entry("auth = { scheme = \"basic\", value_env = \"KEY\" }"),
                &[("KEY", "no-colon-s3cret")],
                format!("{at}.auth.value_env: the value of \"KEY\" must be user:password (it is sent base64-encoded)"),
            ),
            (
                entry("auth = { scheme = \"bearer\", value_env = \"KEY\", in = \"query\" }"),
                &[("KEY", "k")],
                format!("{at}.auth.in: in is only for scheme = \"api_key\"; remove it"),
            ),
            (
                entry("auth = { scheme = \"api_key\", value_env = \"KEY\" }"),
                &[("KEY", "k")],
                format!("{at}.auth.name: an API key needs the name of the header or query parameter it goes in, e.g. name = \"X-Api-Key\""),
            ),
            (
                entry("auth = { scheme = \"api_key\", value_env = \"KEY\", name = \"k\", in = \"cookie\" }"),
                &[("KEY", "k")],
                format!("{at}.auth.in: \"cookie\" is not where an API key goes; use \"header\" or \"query\""),
            ),
            (
                entry("auth = { scheme = \"api_key\", value_env = \"KEY\", name = \"Host\" }"),
                &[("KEY", "k")],
                format!("{at}.auth.name: \"Host\" is a header Bondry sets itself on requests to an API; remove it"),
            ),
            (
                entry("auth = { scheme = \"bearer\", value_env = \"KEY\" }\nheaders_from = { Authorization = \"KEY\" }"),
                &[("KEY", "k")],
                format!("{at}.headers_from.authorization: \"authorization\" is the header auth sends; give it once, in auth"),
            ),
            (
                entry("max_concurrent_calls = 0"),
                &[],
                format!("{at}.max_concurrent_calls: 0 must be between 1 and 10000 calls"),
            ),
            (
                entry("timeout_ms = 0"),
                &[],
                format!("{at}.timeout_ms: 0 must be between 1 and 3600000 milliseconds (an hour)"),
            ),
        ];
        for (stanzas, env, expected) in cases {
            let refused = assembled(stanzas, env).expect_err(stanzas);
            let refused: Vec<String> =
                refused.iter().map(|line| line.replace(&*tempfile_dir_of(line), "DIR")).collect();
            assert_eq!(refused, std::slice::from_ref(expected), "{stanzas}");
            assert!(refused.iter().all(|line| !line.contains("s3cret")), "{refused:?}");
        }
    }

    #[test]
    fn an_include_that_picks_nothing_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("api.json"), DOCUMENT).unwrap();
        let text = format!("{EMBEDDED_DEFAULT}\n{}", entry("include = [\"api.e*\"]"));
        let loaded = parse("t.toml", &text, dir.path().to_path_buf(), std::iter::empty()).unwrap();
        let assembled = assemble(&loaded, &Builtins::demo(), &Overrides::default(), false).unwrap();
        let warnings: Vec<String> = crate::assemble::warnings::warnings(&loaded, &assembled)
            .iter()
            .map(|warning| ConfigError { place: None, ..warning.clone() }.to_string())
            .filter(|warning| warning.contains("openapi"))
            .collect();
        assert_eq!(
            warnings,
            [
                "t.toml: realms.default.openapi[0].include: matches no operation of the document: its globs match operationIds (\"get*\"), not tool ids"
            ]
        );
    }

    /// The temporary directory a refusal names, if it names one.
    fn tempfile_dir_of(line: &str) -> String {
        line.split('"')
            .find(|part| part.starts_with(std::env::temp_dir().to_str().unwrap()))
            .and_then(|path| std::path::Path::new(path).parent().map(|dir| dir.display().to_string()))
            .unwrap_or_else(|| "\u{0}".into())
    }
}
