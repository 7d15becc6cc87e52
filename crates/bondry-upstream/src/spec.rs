//! An upstream as the configuration states it, checked: what `[[realms.NAME.upstreams]]`
//! becomes once every key has been validated and every secret read from the environment
//! the configuration was loaded in.
//!
//! Secrets (header values, the child's variables from `env_from`) live here resolved;
//! `Debug` names them but never shows their values.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use bondry_catalogue::glob::NameGlob;
use bondry_core::capability::Listing;
use bondry_mcp_proto::Revision;
use http::{HeaderName, HeaderValue};

/// One upstream MCP server of a realm.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamSpec {
    /// The realm it serves: its HTTP client is the realm's own.
    pub realm: String,
    /// 1-32 bytes of `[a-z0-9_-]`, unique in its realm; names it in audit, logs and the CLI.
    pub name: String,
    pub transport: TransportSpec,
    /// Put before each upstream name, with a dot, to make its capability id; `""` exposes
    /// upstream names unchanged.
    pub prefix: String,
    pub expose: Expose,
    /// Globs over upstream names; `exclude` wins over `include`.
    pub include: Vec<NameGlob>,
    pub exclude: Vec<NameGlob>,
    /// Offered to the upstream, newest first.
    pub protocol_versions: Vec<Revision>,
    /// Bondry's answer to the upstream's `roots/list`, whoever the caller.
    pub roots: Vec<Root>,
    /// Its timeouts, limits and trust: the keys a stanza may leave at their defaults.
    pub tunables: Tunables,
    /// `_meta` keys a pin's hash leaves out, besides Bondry's own.
    pub pin_ignore_meta: Vec<String>,
    /// Whether the upstream may ask a caller to open a URL (URL-mode elicitation).
    pub allow_url_elicitation: bool,
    /// Whether the gateway is ready (`/readyz`) only while the upstream is connected.
    pub required: bool,
    /// How much one listing of one kind may hold.
    pub listing: ListingLimits,
    /// Whether its tools are listed or found by searching.
    pub tool_listing: Listing,
}

/// How much one listing of one kind (its tools, say) may hold: past `max_entries` or
/// `max_bytes` the listing is refused as a whole and what was pinned before stays
/// served; an entry over `max_definition_bytes` is skipped, neither stored nor pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingLimits {
    /// `max_entries_per_kind`.
    pub max_entries: usize,
    /// `max_definition_bytes`: one entry's compact JSON.
    pub max_definition_bytes: usize,
    /// `max_listing_bytes`: the compact JSON of every entry of the listing together.
    pub max_bytes: usize,
    /// `list_timeout_ms`: each page's deadline.
    pub page_timeout: Duration,
}

impl Default for ListingLimits {
    fn default() -> Self {
        Self {
            max_entries: 2000,
            max_definition_bytes: 64 * 1024,
            max_bytes: 8 * 1024 * 1024,
            page_timeout: Duration::from_secs(30),
        }
    }
}

/// An upstream's timeouts, limits and trust, each with the default a stanza that leaves
/// its key out takes: written here once, for [`UpstreamSpec::new`] and the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunables {
    pub connect_timeout: Duration,
    /// Paused while Bondry waits for the caller's input.
    pub call_timeout: Duration,
    pub max_concurrent_calls: usize,
    /// The largest upstream message read; a larger one is logged and dropped.
    pub max_response_bytes: usize,
    /// The upstream's requests Bondry may owe an answer at once; past it the upstream's
    /// request gets -32603 at once.
    pub max_pending_server_requests: usize,
    /// How long a stdio child may leave its stdin undrained before it is restarted.
    pub stdin_stall: Duration,
    pub trust: Trust,
    /// What a later listing's new tools and prompts become.
    pub new_capabilities: NewEntries,
    /// What a later listing's new resources and templates become.
    pub new_resources: NewEntries,
    /// How often the upstream is listed again without a `list_changed`.
    pub refresh_interval: Duration,
    /// How long a handshake upstream's request waits for the caller's answer (`input_wait_ms`);
    /// past it the request gets -32603 and the upstream call is cancelled.
    pub input_wait: Duration,
}

impl Default for Tunables {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            call_timeout: Duration::from_secs(60),
            max_concurrent_calls: 64,
            max_response_bytes: 4 * 1024 * 1024,
            max_pending_server_requests: 64,
            stdin_stall: Duration::from_secs(10),
            trust: Trust::FirstUse,
            new_capabilities: NewEntries::Hold,
            new_resources: NewEntries::Trust,
            refresh_interval: Duration::from_secs(300),
            input_wait: Duration::from_secs(60),
        }
    }
}

impl UpstreamSpec {
    /// The upstream `name` reached through `transport`, every other key at the default
    /// of its stanza.
    pub fn new(name: &str, transport: TransportSpec) -> Self {
        Self {
            realm: String::new(),
            name: name.into(),
            transport,
            prefix: name.into(),
            expose: Expose::default(),
            include: vec![NameGlob::new("*")],
            exclude: vec![],
            protocol_versions: Revision::ALL.to_vec(),
            roots: vec![],
            tunables: Tunables::default(),
            pin_ignore_meta: vec![],
            allow_url_elicitation: false,
            required: false,
            listing: ListingLimits::default(),
            tool_listing: Listing::Listed,
        }
    }

    /// Whether `other` reaches the same server the same way, so a reload from `self` to
    /// `other` keeps the connection: the transport and the versions offered are equal.
    pub fn same_connection(&self, other: &Self) -> bool {
        self.transport == other.transport && self.protocol_versions == other.protocol_versions
    }

    /// Whether an upstream entry named `name` is served: included and not excluded.
    pub fn admits(&self, name: &str) -> bool {
        self.include.iter().any(|glob| glob.matches(name)) && !self.exclude.iter().any(|glob| glob.matches(name))
    }
}

/// How Bondry reaches an upstream.
#[derive(Clone, PartialEq)]
pub enum TransportSpec {
    /// A child process speaking newline-delimited JSON-RPC on stdin and stdout.
    Stdio {
        /// Run without a shell.
        command: String,
        args: Vec<String>,
        /// The child's whole environment: `PATH`, `HOME` and `LANG` as Bondry has them,
        /// the stanza's `env`, then `env_from` resolved. Never anything else of Bondry's own.
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: bondry_outbound::Url,
        /// Sent on every request: `headers_from` resolved.
        headers: Vec<(HeaderName, HeaderValue)>,
        /// Trusted besides the system roots.
        ca_file: Option<PathBuf>,
        /// The only proxy used; the proxy variables of the environment never are.
        proxy: Option<bondry_outbound::Url>,
    },
}

impl fmt::Debug for TransportSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(name, _)| name).collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, headers, ca_file, proxy } => f
                .debug_struct("Http")
                .field("url", &url.as_str())
                .field("headers", &headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
                .field("ca_file", ca_file)
                .field("proxy", &proxy.as_ref().map(bondry_outbound::Url::as_str))
                .finish(),
        }
    }
}

/// Which kinds of an upstream's entries are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expose {
    pub tools: bool,
    pub prompts: bool,
    /// Resources and resource templates.
    pub resources: bool,
}

impl Expose {
    /// Whether entries of `kind` are served.
    pub fn covers(&self, kind: bondry_core::capability::CapabilityKind) -> bool {
        use bondry_core::capability::CapabilityKind;
        match kind {
            CapabilityKind::Tool => self.tools,
            CapabilityKind::Prompt => self.prompts,
            CapabilityKind::Resource | CapabilityKind::ResourceTemplate => self.resources,
        }
    }
}

impl Default for Expose {
    fn default() -> Self {
        Self { tools: true, prompts: true, resources: true }
    }
}

/// One of the roots Bondry answers `roots/list` with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub uri: String,
    pub name: Option<String>,
}

/// How an upstream's first listing is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Pinned as listed.
    FirstUse,
    /// Held until an operator approves it.
    Approve,
}

/// What an entry that appears in a later listing becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewEntries {
    Hold,
    Trust,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn exclude_wins_over_include() {
        let spec = |include: &[&str], exclude: &[&str]| UpstreamSpec {
            include: include.iter().map(|glob| NameGlob::new(*glob)).collect(),
            exclude: exclude.iter().map(|glob| NameGlob::new(*glob)).collect(),
            ..example()
        };
        assert!(spec(&["*"], &[]).admits("echo"));
        assert!(!spec(&["*"], &["ec*"]).admits("echo"));
        assert!(!spec(&["add"], &[]).admits("echo"));
    }

    #[test]
    fn secrets_never_show_in_debug() {
        let spec = UpstreamSpec {
            transport: TransportSpec::Http {
                url: "https://mcp.example/mcp".parse().unwrap(),
                headers: vec![(http::header::AUTHORIZATION, HeaderValue::from_static("Bearer s3cret"))],
                ca_file: None,
                proxy: None,
            },
            ..example()
        };
        let shown = format!("{spec:?}");
        assert!(shown.contains("authorization") && !shown.contains("s3cret"), "{shown}");
        let stdio = TransportSpec::Stdio {
            command: "node".into(),
            args: vec![],
            env: vec![("API_KEY".into(), "s3cret".into())],
            cwd: None,
        };
        let shown = format!("{stdio:?}");
        assert!(shown.contains("API_KEY") && !shown.contains("s3cret"), "{shown}");
    }

    /// A stdio stanza with every key at its default, for tests of the crate.
    pub(crate) fn example() -> UpstreamSpec {
        let stdio = TransportSpec::Stdio { command: "node".into(), args: vec![], env: vec![], cwd: None };
        UpstreamSpec::new("everything", stdio)
    }
}
