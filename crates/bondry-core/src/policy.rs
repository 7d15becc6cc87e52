//! Who may see and call what: principals, roles, grants and their evaluation.
//!
//! A capability without a grant for the caller is invisible, not forbidden: the adapter
//! answers for it exactly as for one that does not exist.

use std::fmt;
use std::sync::Arc;

use crate::capability::{CapabilityId, is_id_byte, is_valid_id};

/// The reserved id of the anonymous principal.
pub const ANONYMOUS: &str = "anonymous";

/// How a principal was established.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrincipalKind {
    /// No credential was presented; the realm's anonymous roles apply.
    Anonymous,
    /// A configured principal that proved a password.
    User,
    /// The holder of a ticket issued to a configured principal.
    Ticket,
    /// The subject of a token from one of the realm's OAuth issuers.
    OAuth,
}

impl PrincipalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anonymous => "anonymous",
            Self::User => "user",
            Self::Ticket => "ticket",
            Self::OAuth => "oauth",
        }
    }
}

/// The authenticated caller inside a realm.
#[derive(Clone, PartialEq, Eq)]
pub struct Principal {
    id: Arc<str>,
    kind: PrincipalKind,
    roles: Arc<[String]>,
}

impl Principal {
    /// The anonymous caller, holding the realm's anonymous roles.
    pub fn anonymous(roles: impl Into<Arc<[String]>>) -> Self {
        Self { id: ANONYMOUS.into(), kind: PrincipalKind::Anonymous, roles: roles.into() }
    }

    /// An authenticated caller.
    pub fn new(id: &str, kind: PrincipalKind, roles: impl Into<Arc<[String]>>) -> Self {
        Self { id: id.into(), kind, roles: roles.into() }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn kind(&self) -> PrincipalKind {
        self.kind
    }

    pub fn roles(&self) -> &[String] {
        &self.roles
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal").field("id", &self.id).field("kind", &self.kind).field("roles", &self.roles).finish()
    }
}

/// Whom a grant is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    Principal(String),
    Role(String),
}

/// Which capability ids a grant covers: one id, or every id under an explicit `prefix.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapabilityPattern {
    Exact(CapabilityId),
    /// The prefix including its trailing dot: `demo.*` is stored as `demo.`.
    Prefix(String),
}

impl CapabilityPattern {
    pub fn matches(&self, id: &CapabilityId) -> bool {
        match self {
            Self::Exact(exact) => exact == id,
            Self::Prefix(prefix) => id.as_str().len() > prefix.len() && id.as_str().starts_with(prefix.as_str()),
        }
    }
}

/// (subject, adapter, capability pattern): without one, a capability is invisible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub subject: Subject,
    pub adapter: String,
    pub pattern: CapabilityPattern,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid grant {0:?}: write `pattern` or `adapter:pattern`, where pattern is a capability id or `prefix.*`")]
pub struct InvalidGrant(pub String);

impl Grant {
    /// Parses a grant string, `pattern` (for `default_adapter`) or `adapter:pattern`.
    pub fn parse(subject: Subject, raw: &str, default_adapter: &str) -> Result<Self, InvalidGrant> {
        let invalid = || InvalidGrant(raw.to_owned());
        let (adapter, pattern) = match raw.split_once(':') {
            Some((adapter, pattern)) => (adapter, pattern),
            None => (default_adapter, raw),
        };
        if adapter.is_empty() || !adapter.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err(invalid());
        }
        let pattern = match pattern.strip_suffix('*') {
            Some(prefix) => {
                let stem = prefix.strip_suffix('.').ok_or_else(invalid)?;
                if !is_valid_id(stem) || !prefix.bytes().all(is_id_byte) {
                    return Err(invalid());
                }
                CapabilityPattern::Prefix(prefix.to_owned())
            }
            None => CapabilityPattern::Exact(CapabilityId::new(pattern).map_err(|_| invalid())?),
        };
        Ok(Self { subject, adapter: adapter.to_owned(), pattern })
    }

    fn covers(&self, principal: &Principal) -> bool {
        match &self.subject {
            Subject::Principal(id) => id == principal.id(),
            Subject::Role(role) => principal.roles().iter().any(|held| held == role),
        }
    }
}

/// The grants of one realm.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    grants: Vec<Grant>,
}

impl Policy {
    pub fn new(grants: Vec<Grant>) -> Self {
        Self { grants }
    }

    /// Whether `principal` may see and call capability `id` through `adapter`.
    pub fn permits(&self, principal: &Principal, adapter: &str, id: &CapabilityId) -> bool {
        self.grants.iter().any(|grant| grant.adapter == adapter && grant.pattern.matches(id) && grant.covers(principal))
    }

    /// The indices of the grants through `adapter` that cover `principal`: all that
    /// decides what it may see, so callers with the same indices see the same.
    pub fn covering(&self, principal: &Principal, adapter: &str) -> Vec<usize> {
        let covers = |grant: &Grant| grant.adapter == adapter && grant.covers(principal);
        self.grants.iter().enumerate().filter(|(_, grant)| covers(grant)).map(|(index, _)| index).collect()
    }

    /// [`Policy::permits`] for a caller covered by the grants at `covering`.
    pub fn permits_covered(&self, covering: &[usize], id: &CapabilityId) -> bool {
        covering.iter().filter_map(|&index| self.grants.get(index)).any(|grant| grant.pattern.matches(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role_grant(raw: &str) -> Grant {
        Grant::parse(Subject::Role("demo".into()), raw, "mcp").unwrap()
    }

    #[test]
    fn prefix_grants_cover_ids_under_the_prefix_only() {
        let policy = Policy::new(vec![role_grant("demo.*")]);
        let caller = Principal::anonymous(vec!["demo".to_owned()]);
        let id = |s| CapabilityId::new(s).unwrap();
        assert!(policy.permits(&caller, "mcp", &id("demo.echo")));
        assert!(!policy.permits(&caller, "mcp", &id("demo")));
        assert!(!policy.permits(&caller, "mcp", &id("demox.echo")));
        assert!(!policy.permits(&caller, "other", &id("demo.echo")));
        assert!(!policy.permits(&Principal::anonymous(vec![]), "mcp", &id("demo.echo")));
    }

    #[test]
    fn the_covering_grants_decide_as_permits_does() {
        let policy = Policy::new(vec![
            role_grant("demo.*"),
            Grant::parse(Subject::Principal("alice".into()), "admin.reset", "mcp").unwrap(),
            Grant::parse(Subject::Role("demo".into()), "other:demo.x", "mcp").unwrap(),
        ]);
        let id = |s| CapabilityId::new(s).unwrap();
        let alice = Principal::new("alice", PrincipalKind::User, vec!["demo".to_owned()]);
        let bob = Principal::new("bob", PrincipalKind::User, vec!["demo".to_owned()]);
        assert_eq!(policy.covering(&alice, "mcp"), [0, 1]);
        assert_eq!(policy.covering(&bob, "mcp"), [0]);
        assert_eq!(policy.covering(&bob, "other"), [2]);
        for (caller, adapter) in [(&alice, "mcp"), (&bob, "mcp"), (&bob, "other")] {
            for capability in ["demo.echo", "admin.reset", "demo.x", "nope"] {
                assert_eq!(
                    policy.permits_covered(&policy.covering(caller, adapter), &id(capability)),
                    policy.permits(caller, adapter, &id(capability)),
                    "{caller:?} {adapter} {capability}"
                );
            }
        }
    }

    #[test]
    fn grant_strings_name_an_adapter_or_default_to_it() {
        assert_eq!(role_grant("other:a.b").adapter, "other");
        assert_eq!(role_grant("a.b").adapter, "mcp");
        for bad in ["*", ".*", "demo*", "a b", "demo.:*", "", ":x", "x:"] {
            assert!(Grant::parse(Subject::Role("r".into()), bad, "mcp").is_err(), "{bad}");
        }
    }
}
