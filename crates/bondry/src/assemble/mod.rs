//! From a loaded configuration and the builtin handlers to what the runtime serves, one
//! section of the file per module. Each section checks everything it holds and reports
//! every refusal to one `Diagnostics` before the next runs, so a refused file is refused
//! with all its errors at once, each naming the file, the key path, the offending value
//! and the fix.

pub mod admin;
mod audit;
mod capabilities;
mod credentials;
mod keys;
mod listener;
mod rates;
mod realm;
pub mod warnings;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bondry_core::backend::Plan;
use bondry_core::telemetry::NoTelemetry;
use bondry_http_server::audit::AuditWriter;
use bondry_http_server::{AuthSlot, Authenticator, RealmEntry, ServerConfig};

use crate::backends::{self, Planning, Plans};
use crate::builtins::Builtins;
use crate::config::diagnostics::Diagnostics;
use crate::config::{ConfigErrors, Loaded, RawRealm};

/// What `assemble` produced: the runtime's config, the audit writer to close last, and
/// the backends to start beside the runtime (which never learns of them).
pub struct Assembled {
    pub server: ServerConfig,
    pub audit: Option<Arc<AuditWriter>>,
    /// Each realm's backends, checked, one plan per kind, by realm name: every realm has
    /// a plan of every kind, most an empty one. `assemble` starts none of them.
    pub backends: Plans,
    /// The checked `[admin]` stanza; whether the listener runs is decided at start.
    pub admin: admin::AdminStanza,
}

/// Options the command line adds on top of the file.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--listen`: the address of the one configured listener.
    pub listen: Option<SocketAddr>,
}

/// Checks everything and builds the runtime's config, or refuses it with every error
/// found. Only with `open_sinks` (`serve`), and only for a configuration with nothing
/// refused, is anything written: the audit sink opened, a realm's key file made; so
/// `bondry check` touches no files.
pub fn assemble(
    loaded: &Loaded,
    builtins: &Builtins,
    overrides: &Overrides,
    open_sinks: bool,
) -> Result<Assembled, ConfigErrors> {
    if open_sinks {
        // A check first, writing nothing: an error found late (a later realm, the
        // capabilities' compile) must not follow a key file already made.
        assemble_once(loaded, builtins, overrides, false)?;
    }
    assemble_once(loaded, builtins, overrides, open_sinks)
}

/// One pass over the configuration, writing only with `open_sinks`.
fn assemble_once(
    loaded: &Loaded,
    builtins: &Builtins,
    overrides: &Overrides,
    open_sinks: bool,
) -> Result<Assembled, ConfigErrors> {
    let mut diagnostics = Diagnostics::new(&loaded.origin, Arc::clone(&loaded.places));
    let listeners = listener::listeners(&mut diagnostics, &loaded.raw.listeners, overrides.listen);
    let destination = audit::destination(&mut diagnostics, loaded);
    backends::upstream::pins::check(&mut diagnostics, loaded);
    let admin = admin::stanza(&mut diagnostics, loaded);
    let realms = realms(&mut diagnostics, loaded, builtins, open_sinks);
    let sink = destination.and_then(|destination| {
        let open = open_sinks && diagnostics.is_clean();
        audit::open(&mut diagnostics, destination, open)
    });
    let assembled = match (listeners, realms, sink, admin) {
        (Some(listeners), Some(Realms { served: realms, backends }), Some(sink), Some(admin)) => {
            let shutdown_grace = Duration::from_millis(loaded.raw.shutdown_grace_ms);
            // No metrics until the admin listener, which serves them, is known to run.
            let telemetry = Arc::new(NoTelemetry);
            let server = ServerConfig { listeners, realms, audit: sink.records, telemetry, shutdown_grace };
            Some(Assembled { server, audit: sink.writer, backends, admin })
        }
        _ => None,
    };
    diagnostics.finish(assembled)
}

/// Every realm, checked, by name: what the runtime serves, and the backends beside it.
struct Realms {
    served: HashMap<String, RealmEntry>,
    backends: Plans,
}

/// Every realm, each checked whole.
fn realms(diagnostics: &mut Diagnostics, loaded: &Loaded, builtins: &Builtins, persist_keys: bool) -> Option<Realms> {
    if loaded.raw.realms.is_empty() {
        diagnostics.refuse("realms", "no realm is configured; add [realms.default]");
        return None;
    }
    let entries: Vec<_> = loaded
        .raw
        .realms
        .iter()
        .map(|(name, raw)| Some((name.clone(), realm(diagnostics, loaded, name, raw, builtins, persist_keys)?)))
        .collect();
    let entries: Vec<_> = entries.into_iter().collect::<Option<_>>()?;
    let (served, backends) =
        entries.into_iter().map(|(name, (entry, plans))| ((name.clone(), entry), (name, plans))).unzip();
    Some(Realms { served, backends })
}

/// One realm: its roles and limits, credentials, capabilities, sealing keys and backends'
/// stanzas, each checked, then the registry compiled from them.
fn realm(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    name: &str,
    raw: &RawRealm,
    builtins: &Builtins,
    persist_keys: bool,
) -> Option<(RealmEntry, Vec<Plan>)> {
    let named = realm::name(diagnostics, name);
    let policy = realm::policy(diagnostics, name, raw);
    let limits = realm::session_limits(diagnostics, name, &raw.limits);
    let rate_limits = realm::rate_limits(diagnostics, name, &raw.rate_limits);
    let credentials = credentials::credentials(diagnostics, loaded, name, raw);
    let registrations =
        capabilities::registrations(diagnostics, loaded, name, &raw.capabilities, builtins, raw.listing);
    // The key file is named after the realm, so only a valid name is looked up.
    let keys = named.and_then(|()| keys::keys(diagnostics, loaded, name, raw, persist_keys));
    // The backends' stanzas before the registry: some configure capabilities of their own,
    // named among the file's.
    let mut names = capabilities::names(&registrations);
    let mut configured = Vec::new();
    let plans = backends::plans(
        diagnostics,
        loaded,
        &mut Planning { realm: name, raw, names: &mut names, configured: &mut configured },
    );
    let registry = capabilities::registry(diagnostics, name, &registrations, configured, policy, keys);
    let entry = RealmEntry {
        label: Arc::from(name),
        gauges: Arc::default(),
        limits: limits?,
        registry: Arc::new(registry?),
        auth: Arc::new(AuthSlot::new(Authenticator::new(name, credentials?))),
        rate_limits: rate_limits?,
    };
    Some((entry, plans?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigError, EMBEDDED_DEFAULT, parse};

    fn assemble_in(text: &str, env: &[(&str, &str)]) -> Result<Assembled, ConfigErrors> {
        let env = env.iter().map(|(name, value)| (name.to_string(), value.to_string()));
        let loaded = parse("t.toml", text, ".".into(), env)?;
        assemble(&loaded, &Builtins::demo(), &Overrides::default(), false)
    }

    /// Every refusal of `text`, one line each, without its line and column (the test
    /// `refusals_are_placed_where_their_key_is_written` checks those).
    fn refused(text: &str) -> Vec<String> {
        let errors = assemble_in(text, &[]).err().expect("the configuration is refused");
        errors.iter().map(unplaced).collect()
    }

    fn unplaced(error: &ConfigError) -> String {
        ConfigError { place: None, ..error.clone() }.to_string()
    }

    #[test]
    fn refusals_are_placed_where_their_key_is_written() {
        let text =
            "[listeners.main]\nbind = \"127.0.0.1:1\"\nallowed_origins = [\"local\", \"nope\"]\n[realms.default]\n";
        let errors = assemble_in(text, &[]).err().expect("the configuration is refused");
        let lines: Vec<String> = errors.iter().map(ConfigError::to_string).collect();
        assert_eq!(
            lines,
            [
                "t.toml:3:29: listeners.main.allowed_origins[1]: \"nope\" is not \"local\", \"any\" or an origin like \"https://app.example\""
            ]
        );
    }

    #[track_caller]
    fn assert_refuses(text: &str, expected: &str) {
        let refused = refused(text);
        assert!(refused.iter().any(|line| line.contains(expected)), "{expected:?} not in {refused:#?}");
    }

    #[test]
    fn roles_are_named_once() {
        let twice = format!("{EMBEDDED_DEFAULT}\n[[realms.default.roles]]\nname = \"demo\"\ngrants = []\n");
        assert_refuses(&twice, "t.toml: realms.default.roles[2].name: role \"demo\" is defined twice");
        let unnamed = format!("{EMBEDDED_DEFAULT}\n[[realms.default.roles]]\nname = \"\"\n");
        assert_refuses(&unnamed, "realms.default.roles[2].name: a role needs a non-empty name");
        let undefined = EMBEDDED_DEFAULT.replace("anonymous_roles = [\"demo\"]", "anonymous_roles = [\"ghost\"]");
        assert_refuses(&undefined, "realms.default.anonymous_roles[0]: role \"ghost\" is not defined");
    }

    #[test]
    fn independent_errors_are_all_reported_in_section_order() {
        let text = r#"
            [listeners.main]
            bind = "nowhere"
            allowed_origins = ["local", "bogus"]
            [realms."bad name"]
            [realms.default]
            anonymous_roles = ["ghost"]
            [[realms.default.roles]]
            name = "demo"
            grants = ["demo.*", "no spaces"]
        "#;
        let keys: Vec<String> = refused(text)
            .iter()
            .map(|line| line.strip_prefix("t.toml: ").unwrap().split(": ").next().unwrap().to_owned())
            .collect();
        assert_eq!(
            keys,
            [
                "listeners.main.bind",
                "listeners.main.allowed_origins[1]",
                "realms.bad name",
                "realms.default.roles[0].grants[1]",
                "realms.default.anonymous_roles[0]",
            ],
            "{text}"
        );
    }

    #[test]
    fn the_embedded_default_assembles() {
        let assembled = assemble_in(EMBEDDED_DEFAULT, &[]).unwrap_or_else(|errors| panic!("{errors}"));
        assert_eq!(assembled.server.listeners[0].settings.revisions.len(), 3);
        assert_eq!(assembled.server.listeners[0].bind, "127.0.0.1:7373".parse().unwrap());
    }

    #[test]
    fn listen_overrides_a_valid_bind_only() {
        let loaded = parse("t.toml", EMBEDDED_DEFAULT, ".".into(), []).unwrap();
        let listen = Overrides { listen: Some("127.0.0.1:9".parse().unwrap()) };
        let assembled =
            assemble(&loaded, &Builtins::demo(), &listen, false).unwrap_or_else(|errors| panic!("{errors}"));
        assert_eq!(assembled.server.listeners[0].bind, "127.0.0.1:9".parse().unwrap());
        let broken = parse("t.toml", &EMBEDDED_DEFAULT.replace("127.0.0.1:7373", "nowhere"), ".".into(), []).unwrap();
        assert!(assemble(&broken, &Builtins::demo(), &listen, false).is_err());
    }

    /// The names of the realm's upstreams, in its plan.
    fn upstreams(assembled: &Assembled) -> Vec<String> {
        let plans = &assembled.backends["default"];
        let specs = plans.iter().find_map(|plan| plan.stanzas::<Vec<bondry_upstream::UpstreamSpec>>()).unwrap();
        specs.iter().map(|spec| spec.name.clone()).collect()
    }

    #[test]
    fn each_realm_carries_its_upstreams_in_stanza_order() {
        let assembled = assemble_in(EMBEDDED_DEFAULT, &[]).unwrap_or_else(|errors| panic!("{errors}"));
        assert_eq!(assembled.backends.keys().collect::<Vec<_>>(), ["default"]);
        let kinds: Vec<&str> = assembled.backends["default"].iter().map(|plan| plan.kind().as_str()).collect();
        assert_eq!(kinds, ["builtin", "http", "openapi", "upstream"], "a plan of every kind");
        assert!(upstreams(&assembled).is_empty());
        let stanza = |name: &str| {
            format!("[[realms.default.upstreams]]\nname = \"{name}\"\ntransport = \"stdio\"\ncommand = \"node\"\n")
        };
        let two = format!("pin_store = \"memory\"\n{EMBEDDED_DEFAULT}\n{}{}", stanza("b"), stanza("a"));
        let assembled = assemble_in(&two, &[]).unwrap_or_else(|errors| panic!("{errors}"));
        assert_eq!(upstreams(&assembled), ["b", "a"]);
    }

    #[test]
    fn the_admin_stanza_binds_loopback_unless_told_and_its_tokens_come_from_the_environment() {
        let admin = |stanza: &str| format!("{EMBEDDED_DEFAULT}\n[admin]\n{stanza}");
        assert_refuses(
            &admin("bind = \"0.0.0.0:7374\"\n"),
            "t.toml: admin.bind: \"0.0.0.0:7374\" is not loopback; the admin API approves what models are told, so a remote bind needs allow_remote = true",
        );
        assert!(assemble_in(&admin("bind = \"0.0.0.0:7374\"\nallow_remote = true\n"), &[]).is_ok());
        assert_refuses(
            &admin("bind = \"nowhere\"\n"),
            "t.toml: admin.bind: \"nowhere\" is not an address like 127.0.0.1:7374",
        );
        let tokens = "[[admin.tokens]]\nname = \"ops\"\ntoken_env = \"OPS_TOKEN\"\n[[admin.tokens]]\nname = \"Ops!\"\ntoken_env = \"SHORT\"\n";
        let text = format!("{EMBEDDED_DEFAULT}\n{tokens}");
        let errors: Vec<String> =
            assemble_in(&text, &[("SHORT", "short")]).err().unwrap().iter().map(unplaced).collect();
        assert_eq!(
            errors,
            [
                "t.toml: admin.tokens[0].token_env: \"OPS_TOKEN\" is not set",
                "t.toml: admin.tokens[1].name: \"Ops!\" is not a token name: use 1-32 characters from a-z 0-9 _ -",
                "t.toml: admin.tokens[1].token_env: \"SHORT\" holds fewer than 32 bytes",
            ]
        );
        let secret = "s".repeat(32);
        let one = format!("{EMBEDDED_DEFAULT}\n[[admin.tokens]]\nname = \"ops\"\ntoken_env = \"OPS_TOKEN\"\n");
        let assembled = assemble_in(&one, &[("OPS_TOKEN", &secret)]).unwrap_or_else(|errors| panic!("{errors}"));
        assert_eq!(assembled.admin.tokens, [("ops".to_owned(), secret)]);
        assert!(!format!("{:?}", assembled.admin).contains("sss"), "a secret is never printed");
    }

    #[test]
    fn the_admin_bounds_default_and_refuse_zero_and_a_budget_past_ten_thousand() {
        let assembled = assemble_in(EMBEDDED_DEFAULT, &[]).unwrap_or_else(|errors| panic!("{errors}"));
        let admin = &assembled.admin;
        assert_eq!(admin.max_failed_attempts_per_minute.get(), 100);
        assert_eq!(admin.connections.max_connections, 64);
        assert_eq!(admin.connections.header_read_timeout, Duration::from_secs(10));
        assert_eq!(admin.connections.body_read_timeout, Duration::from_secs(30));
        let zeros = format!(
            "{EMBEDDED_DEFAULT}\n[admin]\nmax_failed_attempts_per_minute = 0\nmax_connections = 0\nheader_read_timeout_ms = 0\nbody_read_timeout_ms = 0\n"
        );
        assert_eq!(
            refused(&zeros),
            [
                "t.toml: admin.max_failed_attempts_per_minute: 0 must be between 1 and 10000",
                "t.toml: admin.max_connections: 0 must be a positive count, e.g. 64",
                "t.toml: admin.header_read_timeout_ms: 0 must be a positive number of milliseconds, e.g. 10000",
                "t.toml: admin.body_read_timeout_ms: 0 must be a positive number of milliseconds, e.g. 30000",
            ]
        );
        assert_eq!(
            refused(&format!("{EMBEDDED_DEFAULT}\n[admin]\nmax_failed_attempts_per_minute = 10001\n")),
            ["t.toml: admin.max_failed_attempts_per_minute: 10001 must be between 1 and 10000"]
        );
        let changed = format!("{EMBEDDED_DEFAULT}\n[admin]\nmax_connections = 8\nbody_read_timeout_ms = 5\n");
        let changed = assemble_in(&changed, &[]).unwrap_or_else(|errors| panic!("{errors}"));
        assert_eq!(admin::changed(admin, &changed.admin), ["max_connections", "body_read_timeout_ms"]);
        assert!(admin::changed(admin, admin).is_empty());
    }

    #[test]
    fn upstreams_need_a_data_dir_for_their_pins_unless_memory_is_chosen() {
        let stanza = "[[realms.default.upstreams]]\nname = \"up\"\ntransport = \"stdio\"\ncommand = \"node\"\n";
        assert_refuses(
            &format!("{EMBEDDED_DEFAULT}\n{stanza}"),
            "t.toml: pin_store: upstreams need data_dir to keep their pins in pins.sqlite3 across restarts; set data_dir, or pin_store = \"memory\" to trust every upstream anew at each start",
        );
        assert!(assemble_in(&format!("data_dir = \"state\"\n{EMBEDDED_DEFAULT}\n{stanza}"), &[]).is_ok());
        assert!(assemble_in(&format!("pin_store = \"memory\"\n{EMBEDDED_DEFAULT}\n{stanza}"), &[]).is_ok());
    }

    #[test]
    fn a_capability_backed_by_an_upstream_points_to_the_upstream_stanza() {
        let backed = EMBEDDED_DEFAULT.replacen("handler = ", "backend = \"upstream\"\nhandler = ", 1);
        assert_refuses(
            &backed,
            "realms.default.capabilities[0].backend: \"upstream\" is not a backend of a capability stanza: an upstream MCP server is configured in [[realms.default.upstreams]]",
        );
    }

    #[test]
    fn key_secrets_come_from_the_environment_the_configuration_was_loaded_in() {
        let keyed = format!("{EMBEDDED_DEFAULT}\n[[realms.default.keys]]\nid = \"k\"\nsecret_env = \"PATH\"\n");
        let secret = "q1Tp9sJ0m6m3Yt8wP4b0x2Ck7o5Vn1Lr3Ge8Hi2Ds6U=";
        let assembled = assemble_in(&keyed, &[("PATH", secret)]).unwrap_or_else(|errors| panic!("{errors}"));
        assert_eq!(assembled.server.realms["default"].registry.snapshot().keys.active.id, "k");
        // The process has a PATH; the injected environment has none.
        assert_refuses(&keyed, "realms.default.keys[0].secret_env: the environment variable \"PATH\" is not set");
    }
}
