//! The `bondry` command: `serve` and `check`.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bondry::assemble::{Overrides, assemble};
use bondry::builtins::Builtins;
use bondry::config::{self, ConfigErrors};
use bondry::reload::{self, LiveRealm, Reloader};
use clap::{Parser, Subcommand};

/// jemalloc with its background thread, which gives freed memory back to the operating
/// system within seconds even while the server is idle: under glibc's malloc what a burst
/// of slow clients or password checks took stayed resident (docs/security.md, "Memory
/// under attack").
///
/// Measured on the debug binary with the attacks of `tests/memory.rs` (RSS in MB,
/// baseline → peak → a minute later): 1,000 slowloris connections, glibc 18.0 → 47.3 →
/// 45.9, mimalloc 0.1.52 27.4 → 62.7 → 66.8, jemalloc 19.4 → 45.6 → 24.3 (back within
/// seconds); sixteen concurrent wrong passwords, all three keep the 76 MiB pool plus
/// 1–7 MB; twenty slow bodies 18–30, flat under all three. The crate's feature sets
/// `background_thread:true` at build time, so no `tikv-jemalloc-ctl` is needed.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Bondry: an MCP gateway.
#[derive(Parser)]
#[command(name = "bondry", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP over Streamable HTTP until SIGINT or SIGTERM.
    #[command(after_help = "Examples:\n  \
        bondry serve                                   # the embedded demo on 127.0.0.1:7373\n  \
        bondry serve --config bondry.toml\n  \
        bondry serve --config bondry.toml --listen 127.0.0.1:8080")]
    Serve {
        /// The configuration file; without it, the embedded demo default is served.
        /// Relative paths in it are resolved against its directory.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Overrides the address of the one configured listener (an IP address and a port).
        #[arg(long, value_name = "ADDR")]
        listen: Option<SocketAddr>,
        /// Overrides the admin listener's address (port 0 takes a free one). Without
        /// --config the demo's admin listener serves there (127.0.0.1:7374 by default), with
        /// a token made for this run and printed once.
        #[arg(long, value_name = "ADDR")]
        admin_listen: Option<SocketAddr>,
        /// Makes a new pin store although `data_dir` served before (its realm keys
        /// remain): every upstream is then trusted anew.
        #[arg(long)]
        accept_new_pin_store: bool,
    },
    /// Validate a configuration file without serving: every error at once, each at its
    /// line and column, and warnings about what will not work as meant.
    ///
    /// Exit codes: 0 valid (warnings included), 1 refused, or warned about with --strict.
    #[command(after_help = "Example:\n  bondry check --config /etc/bondry/bondry.toml --strict")]
    Check {
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Treat warnings as errors.
        #[arg(long)]
        strict: bool,
    },
    /// Hash a password for `password_hash`; the password is read from the terminal
    /// (not echoed) or from standard input, never from the command line.
    #[command(after_help = "Examples:\n  \
        bondry hash-password                           # asks for it\n  \
        printf '%s' \"$PASSWORD\" | bondry hash-password")]
    HashPassword,
    /// Tickets: bearer credentials stored in the configuration only as their hash.
    #[command(subcommand)]
    Ticket(TicketCommand),
    /// Whether the server is ready, from its admin listener's `/readyz` (no token needed):
    /// exit 0 ready, 1 not ready or not reached. For container and service health checks.
    #[command(after_help = "Examples:\n  \
        bondry health --config /etc/bondry/bondry.toml\n  \
        bondry health --admin 127.0.0.1:7374")]
    Health {
        /// The admin listener, as a URL or an address; else the variable BONDRY_ADMIN_URL,
        /// else the `[admin] bind` of --config.
        #[arg(long, value_name = "URL")]
        admin: Option<String>,
        /// The server's configuration, for its admin bind.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Upstreams through the admin API: review and approve their pinned definitions.
    /// Exit codes: 0 done, 1 error, 3 refused (nothing changed), 4 admin unreachable.
    #[command(after_help = "Examples:\n  \
        bondry upstream list --config bondry.toml\n  \
        bondry upstream info default/everything --admin 127.0.0.1:7374\n\n\
        The variables BONDRY_ADMIN_URL and BONDRY_ADMIN_TOKEN are this client's own, not\n\
        configuration overrides (those start with BONDRY__).")]
    Upstream {
        #[command(subcommand)]
        command: UpstreamCommand,
        /// The admin API, as a URL or an address (`127.0.0.1:7374`); else the variable
        /// BONDRY_ADMIN_URL, else the `[admin] bind` of --config (for port 0, the address
        /// the server wrote into its data_dir).
        #[arg(long, value_name = "URL", global = true)]
        admin: Option<String>,
        /// The server's configuration: its admin bind, and its data_dir's generated token
        /// unless BONDRY_ADMIN_TOKEN is set.
        #[arg(long, value_name = "FILE", global = true)]
        config: Option<PathBuf>,
        /// The API's JSON, for scripts.
        #[arg(long, global = true)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum UpstreamCommand {
    /// Every realm's upstreams: transport, revision, how many capabilities are served, and
    /// their pins by state.
    #[command(after_help = "Example:\n  bondry upstream list --config bondry.toml")]
    List,
    /// One upstream and every capability's pin: the id it is exposed as, its state, and
    /// the pinned and current hashes.
    #[command(after_help = "Example:\n  bondry upstream info default/everything --config bondry.toml")]
    Info {
        /// The upstream, as REALM/NAME.
        upstream: String,
    },
    /// A capability's pinned and current definitions and what differs.
    #[command(after_help = "Examples:\n  \
        bondry upstream diff default/everything tool echo --config bondry.toml\n  \
        bondry upstream diff default/files resource file:///srv/notes.md --config bondry.toml")]
    Diff {
        /// The upstream, as REALM/NAME.
        upstream: String,
        /// tool, prompt, resource or template.
        kind: String,
        /// The capability's name upstream (a tool or prompt) or its URI (a resource or template).
        key: String,
    },
    /// Shows each definition's diff, asks, and approves it at the hash shown.
    #[command(after_help = "Examples:\n  \
        bondry upstream approve default/everything tool echo --config bondry.toml\n  \
        bondry upstream approve default/everything --all --yes --config bondry.toml")]
    Approve {
        /// The upstream, as REALM/NAME.
        upstream: String,
        /// tool, prompt, resource or template.
        kind: Option<String>,
        /// The names or URIs of that kind to approve.
        keys: Vec<String>,
        /// Every held and drifted capability, exactly as shown.
        #[arg(long, conflicts_with_all = ["kind", "keys"])]
        all: bool,
        /// Approve without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Lists the upstream now, instead of at its next refresh_interval_ms.
    #[command(after_help = "Example:\n  bondry upstream refresh default/everything --config bondry.toml")]
    Refresh {
        /// The upstream, as REALM/NAME.
        upstream: String,
    },
}

#[derive(Subcommand)]
enum TicketCommand {
    /// Mint a ticket: prints it once, and the configuration stanza holding its hash.
    #[command(after_help = "Example:\n  bondry ticket new --realm default --principal alice --roles reader")]
    New {
        /// The realm the ticket is for.
        #[arg(long)]
        realm: String,
        /// The principal (`[[realms.REALM.principals]]` id) the ticket stands for.
        #[arg(long)]
        principal: String,
        /// Caps the holder's roles to these (comma-separated; a subset of the principal's).
        #[arg(long, value_delimiter = ',')]
        roles: Option<Vec<String>>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let logging = bondry::logging::init();
    let result = match cli.command {
        Command::Serve { config, listen, admin_listen, accept_new_pin_store } => {
            serve(config, listen, admin_listen, accept_new_pin_store, &logging)
        }
        Command::Check { config, strict } => check(config, strict),
        Command::HashPassword => hash_password(),
        Command::Ticket(TicketCommand::New { realm, principal, roles }) => new_ticket(&realm, &principal, roles),
        Command::Upstream { command, admin, config, json } => return upstream(command, admin, config, json),
        Command::Health { admin, config } => return health(admin, config),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // A refused configuration: one line per error, each to be read (or grepped) alone.
            match error.downcast_ref::<ConfigErrors>() {
                Some(errors) => errors.iter().for_each(|error| eprintln!("bondry: {error}")),
                None => eprintln!("bondry: {error:#}"),
            }
            ExitCode::FAILURE
        }
    }
}

/// `bondry health`: what `/readyz` says, on stdout; exit 0 only when ready.
fn health(admin: Option<String>, config: Option<PathBuf>) -> ExitCode {
    match bondry::upstream_cli::readiness(admin.as_deref(), config.as_deref()) {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("bondry: {}", failure.message());
            ExitCode::FAILURE
        }
    }
}

/// `bondry upstream …`, its exit code telling success, refusal and unreachable apart.
fn upstream(command: UpstreamCommand, admin: Option<String>, config: Option<PathBuf>, json: bool) -> ExitCode {
    use bondry::upstream_cli as cli;
    let ran = cli::Client::new(admin.as_deref(), config.as_deref()).and_then(|client| match command {
        UpstreamCommand::List => cli::list(&client, json),
        UpstreamCommand::Info { upstream } => cli::info(&client, &upstream, json),
        UpstreamCommand::Diff { upstream, kind, key } => cli::diff(&client, &upstream, &kind, &key, json),
        UpstreamCommand::Approve { upstream, kind, keys, all, yes } => {
            cli::approve(&client, &upstream, kind.as_deref(), &keys, all, yes, json)
        }
        UpstreamCommand::Refresh { upstream } => cli::refresh(&client, &upstream, json),
    });
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("bondry: {}", failure.message());
            ExitCode::from(failure.exit_code())
        }
    }
}

fn check(path: PathBuf, strict: bool) -> anyhow::Result<()> {
    let loaded = config::load(Some(&path), config::process_environment()?)?;
    let assembled = assemble(&loaded, &Builtins::bundled(), &Overrides::default(), false)?;
    let warnings = bondry::assemble::warnings::warnings(&loaded, &assembled);
    for warning in &warnings {
        eprintln!("bondry: warning: {warning}");
    }
    if strict && !warnings.is_empty() {
        anyhow::bail!("{} warning(s), refused with --strict", warnings.len());
    }
    let mut realms: Vec<_> = assembled.backends.iter().collect();
    realms.sort_by_key(|(realm, _)| realm.as_str());
    for (realm, plans) in realms {
        for line in bondry::backends::report(realm, plans) {
            println!("{line}");
        }
    }
    println!("{}: ok", path.display());
    Ok(())
}

fn hash_password() -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal};
    let password = if std::io::stdin().is_terminal() {
        rpassword::prompt_password("Password: ").context("cannot read the password from the terminal")?
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).context("cannot read the password from standard input")?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    };
    anyhow::ensure!(!password.is_empty(), "the password is empty");
    println!("{}", bondry::credentials::hash_password(&password)?);
    Ok(())
}

fn new_ticket(realm: &str, principal: &str, roles: Option<Vec<String>>) -> anyhow::Result<()> {
    use bondry_core::capability::is_valid_id;
    anyhow::ensure!(is_valid_id(realm), "--realm {realm:?}: use 1-64 characters from A-Z a-z 0-9 . _ -");
    anyhow::ensure!(is_valid_id(principal), "--principal {principal:?}: use 1-64 characters from A-Z a-z 0-9 . _ -");
    if let Some(role) = roles.iter().flatten().find(|role| role.is_empty()) {
        anyhow::bail!("--roles: {role:?} is not a role name");
    }
    let ticket = bondry::credentials::Ticket::mint();
    eprintln!("The ticket is shown once; keep it secret. Add the stanza below to the configuration.");
    print!("{}\n\n{}", ticket.secret(), ticket.stanza(realm, principal, roles.as_deref()));
    Ok(())
}

fn serve(
    path: Option<PathBuf>,
    listen: Option<SocketAddr>,
    admin_listen: Option<SocketAddr>,
    accept_new_pin_store: bool,
    logging: &bondry::logging::Logging,
) -> anyhow::Result<()> {
    let loaded = config::load(path.as_deref(), config::process_environment()?)?;
    logging.use_format(loaded.raw.log_format);
    // One set of handler objects for the start and every reload: a handler's state (and
    // the dynamic capabilities it published) stays with the one instance.
    let builtins = Builtins::bundled();
    // Checked before the pin store is opened, and the store opened before the realms'
    // key files are made: a missing store is judged by the data directory as it was.
    assemble(&loaded, &builtins, &Overrides { listen }, false)?;
    let shared = bondry::backends::Shared::open(&loaded, accept_new_pin_store)?;
    let mut assembled = assemble(&loaded, &builtins, &Overrides { listen }, true)?;
    // The operator's file only: the embedded demo's unheld `admin` role is its point.
    if path.is_some() {
        for warning in bondry::assemble::warnings::warnings(&loaded, &assembled) {
            tracing::warn!("{warning}");
        }
    }
    let needed = bondry::descriptors::needed(&loaded);
    match bondry::descriptors::raise_limit(needed) {
        Some(limit) if limit < needed => tracing::warn!(
            limit,
            needed,
            "the open files limit (ulimit -n) is below what the listeners' max_connections and the upstreams may hold: raise it, or lower max_connections"
        ),
        _ => {}
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        // Listen for signals before anything is announced: a signal sent right after the
        // banner must start a graceful shutdown, not kill the process.
        let signal = shutdown_signal()?;
        let audit = Arc::clone(&assembled.server.audit);
        let realm_parts: Vec<_> = assembled
            .server
            .realms
            .iter()
            .map(|(name, entry)| (name.clone(), Arc::clone(&entry.registry), Arc::clone(&entry.auth)))
            .collect();
        // Every listener binds before any upstream starts: a port in use stops the start
        // with its address named, before a child process is spawned. The admin listener
        // first: a port in use there stops the start before the MCP listeners serve.
        let start = bondry::assemble::admin::Start { demo: path.is_none(), bind: admin_listen };
        let (admin, shown_token) = match bind_admin(&loaded, &assembled.admin, start).await? {
            Some((bound, shown)) => (Some(bound), shown),
            None => (None, None),
        };
        // Metrics are kept only where the admin listener serves them.
        let metrics = admin.as_ref().map(|_| {
            let settings = bondry_telemetry::Settings { per_capability: assembled.admin.metrics_per_capability };
            Arc::new(bondry_telemetry::Metrics::new(env!("CARGO_PKG_VERSION"), settings))
        });
        if let Some(metrics) = &metrics {
            assembled.server.telemetry = metrics.telemetry();
        }
        let running = bondry_http_server::start(assembled.server).await?;
        // Where `bondry upstream --config` finds the admin listener, written before anything
        // is announced, so no one reads the last start's.
        let data_dir = loaded.data_dir();
        let address_file = match (&admin, &data_dir) {
            (Some(bound), Some(data_dir)) => {
                let addr = bound.addr().context("the admin listener has no address")?;
                Some(bondry::assemble::admin::write_address(data_dir, addr).with_context(|| {
                    let path = data_dir.join(bondry::assemble::admin::ADDRESS_FILE);
                    format!("{}: cannot write the admin address", path.display())
                })?)
            }
            _ => None,
        };
        // Then every realm's backends start (upstreams connect in the background): the
        // realm serves at once, and their capabilities appear as their listings land.
        let mut realms: HashMap<String, LiveRealm> = HashMap::new();
        for (name, registry, auth) in realm_parts {
            let plans = assembled.backends.remove(&name).unwrap_or_default();
            let backends = bondry::backends::start(bondry::backends::KINDS, &name, &registry, plans, &shared)?;
            realms.insert(name, LiveRealm { registry, auth, backends });
        }
        let backends: Vec<_> = realms.values().map(|live| live.backends.clone()).collect();
        let backends_by_realm: BTreeMap<_, _> =
            realms.iter().map(|(name, live)| (name.clone(), live.backends.clone())).collect();
        if let Some(metrics) = &metrics {
            let levels = running.levels();
            let sources =
                bondry_telemetry::Sources { levels, backends: backends_by_realm.clone(), audit: audit.clone() };
            metrics.read_from(sources);
        }
        let admin = admin.map(|bound| bound.serve(backends_by_realm, audit, metrics)).transpose()?;
        // Watch the file before announcing readiness: a change made right after the banner
        // must not be missed.
        let reloader = path.map(|path| Reloader {
            path,
            builtins: builtins.clone(),
            overrides: Overrides { listen },
            realms,
            admin: assembled.admin.clone(),
        });
        let watch = reload::Watch::install(reloader);
        for (_, addr) in running.local_addrs() {
            eprintln!("listening on http://{addr}/mcp");
        }
        if let Some(admin) = &admin {
            eprintln!("admin listening on http://{}", admin.addr);
        }
        // The demo's token, once, straight to stderr: never through the logger, which may
        // ship its lines elsewhere.
        if let Some(token) = &shown_token {
            eprintln!("admin token for this run: {token}");
        }
        // Serves until SIGINT or SIGTERM, reloading the file (if there is one) meanwhile.
        watch.run(signal).await;
        tracing::info!("shutting down");
        let grace = std::time::Duration::from_millis(loaded.raw.shutdown_grace_ms);
        // Whatever callers, upstreams and admin clients do, the process ends within
        // shutdown_grace_ms + 6 s: the orderly steps get the grace and 5 s more (a child's
        // SIGTERM and SIGKILL), then whatever is left is dropped, children's process
        // groups killed, within the runtime's last second.
        let orderly_for = grace + std::time::Duration::from_secs(5);
        let stopping = std::time::Instant::now();
        let orderly = async {
            let admin_stopped = async {
                if let Some(admin) = admin
                    && tokio::time::timeout(grace, admin.shutdown()).await.is_err()
                {
                    tracing::warn!("admin connections still open after shutdown_grace_ms: dropped");
                }
            };
            let (drained, ()) = tokio::join!(running.shutdown(), admin_stopped);
            if !drained {
                tracing::warn!("some requests did not finish within shutdown_grace_ms");
            }
            // A stopped server's address must not send a later `bondry upstream` (and its
            // token) to whatever takes the port next.
            if let Some(path) = &address_file {
                let _ = std::fs::remove_file(path);
            }
            // After the calls drained: none is left to need a backend, and every child
            // ends, every realm's at once, within what is left of the orderly time.
            bondry::backends::stop(backends, orderly_for.saturating_sub(stopping.elapsed())).await;
        };
        if tokio::time::timeout(orderly_for, orderly).await.is_err() {
            tracing::warn!("shutdown took shutdown_grace_ms + 5 s: ending what is left now");
            if let Some(path) = &address_file {
                let _ = std::fs::remove_file(path);
            }
        }
        anyhow::Ok(())
    })?;
    // Whatever outlived the grace period is dropped now, so that its `cancelled` audit
    // records reach the sink before it closes.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    if let Some(audit) = assembled.audit {
        audit.close();
    }
    Ok(())
}

/// Binds the admin listener if the start's plan says so, or logs why it is off; with it,
/// the demo's token, to be shown once. The demo's listener is a convenience: a port in use
/// there only warns (tests and a second demo run side by side), where a configured one
/// stops the start.
async fn bind_admin(
    loaded: &config::Loaded,
    stanza: &bondry::assemble::admin::AdminStanza,
    start: bondry::assemble::admin::Start,
) -> anyhow::Result<Option<(bondry_admin::BoundAdmin, Option<String>)>> {
    use bondry::assemble::admin::{Plan, plan};
    match plan(loaded, stanza, start)? {
        Plan::Off(why) => {
            match start.bind {
                Some(bind) => tracing::warn!("admin listener off: {why}; --admin-listen {bind} is not used"),
                None => tracing::info!("admin listener off: {why}"),
            }
            Ok(None)
        }
        Plan::Serve { bind, tokens, demo } => {
            let shown = tokens.first().filter(|_| demo).map(|(_, secret)| secret.clone());
            let tokens = tokens.iter().map(|(name, secret)| bondry_admin::AdminToken::new(name, secret)).collect();
            let config = bondry_admin::AdminConfig {
                bind,
                tokens,
                max_failed_attempts_per_minute: stanza.max_failed_attempts_per_minute,
                connections: stanza.connections,
                metrics_public: stanza.metrics_public,
            };
            match bondry_admin::bind(config).await {
                Ok(bound) => Ok(Some((bound, shown))),
                Err(error) if demo => {
                    tracing::warn!(%error, "the demo's admin listener is off: cannot bind {bind}; give --admin-listen");
                    Ok(None)
                }
                Err(error) => Err(error).with_context(|| format!("cannot bind the admin listener to {bind}")),
            }
        }
    }
}

/// Installs SIGINT and SIGTERM handlers now; the returned future resolves on either.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}
