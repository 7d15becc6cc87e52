//! A realm's credentials: its principals and their password hashes, its tickets, and its
//! OAuth issuers with the resource URL they come with, checked against the realm's roles.
//! (What `bondry hash-password` and `bondry ticket new` mint, in [`crate::credentials`],
//! is what this accepts.)

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use argon2::PasswordHash;
use bondry_core::policy::ANONYMOUS;
use bondry_http_server::auth::oauth::{IssuerSpec, KeySource, OAuth, OAuthSpec};
use bondry_http_server::{Credentials, Ticket, User};
use serde_json::Value;

use crate::config::diagnostics::Diagnostics;
use crate::config::{Loaded, RawOAuth, RawPrincipal, RawRealm, RawTicket};

/// The most memory one password check may take, in KiB (256 MiB).
const MAX_ARGON2_MEMORY_KIB: u32 = 256 * 1024;

/// The realm's principals, tickets and OAuth issuers, each checked.
pub(super) fn credentials(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    name: &str,
    raw: &RawRealm,
) -> Option<Credentials> {
    let users = users(diagnostics, name, raw);
    let tickets = tickets(diagnostics, name, raw);
    let oauth = oauth(diagnostics, loaded, name, raw);
    Some(Credentials {
        users: users?,
        tickets: tickets?,
        anonymous_roles: raw.anonymous.then(|| raw.anonymous_roles.clone().into()),
        oauth: oauth?.map(Arc::new),
    })
}

/// Each principal: an id of its own, roles of the realm, and a password hash Bondry can check.
fn users(diagnostics: &mut Diagnostics, name: &str, raw: &RawRealm) -> Option<HashMap<String, User>> {
    let mut users = HashMap::new();
    let mut valid = true;
    for (index, principal) in raw.principals.iter().enumerate() {
        let at = |k: &str| format!("realms.{name}.principals[{index}].{k}");
        let id = if !bondry_core::capability::is_valid_id(&principal.id) || principal.id == ANONYMOUS {
            let message = format!(
                "{:?} is not a principal id: use 1-64 characters from A-Z a-z 0-9 . _ -, and not \"anonymous\"",
                principal.id
            );
            diagnostics.refuse(at("id"), message);
            false
        } else if raw.principals[..index].iter().any(|earlier| earlier.id == principal.id) {
            diagnostics.refuse(at("id"), format!("principal {:?} is defined twice", principal.id));
            false
        } else {
            true
        };
        let roles = roles_defined(diagnostics, name, raw, &at("roles"), &principal.roles);
        let hash = principal
            .password_hash
            .as_deref()
            .is_none_or(|hash| diagnostics.ok(at("password_hash"), password_hash(hash)).is_some());
        valid &= id && roles && hash;
        let user = User { roles: principal.roles.clone().into(), password_hash: principal.password_hash.clone() };
        users.insert(principal.id.clone(), user);
    }
    valid.then_some(users)
}

/// Whether every role in `roles` (at `key`) is one of the realm's.
fn roles_defined(diagnostics: &mut Diagnostics, name: &str, raw: &RawRealm, key: &str, roles: &[String]) -> bool {
    let mut defined = true;
    for (index, role) in roles.iter().enumerate() {
        if !raw.roles.iter().any(|known| &known.name == role) {
            diagnostics.refuse(
                format!("{key}[{index}]"),
                format!("role {role:?} is not defined; add [[realms.{name}.roles]] with name = {role:?}"),
            );
            defined = false;
        }
    }
    defined
}

/// An argon2id PHC string whose check costs a bounded amount of memory and time. Its
/// refusals do not repeat the hash: a password's hash is as good as the password to whoever
/// can try guesses offline, and refusals end up in logs.
fn password_hash(hash: &str) -> Result<(), String> {
    let parsed = PasswordHash::new(hash)
        .map_err(|e| format!("not a PHC string ({e}); create one with `bondry hash-password`"))?;
    let params = argon2::Params::try_from(&parsed).ok().filter(|_| parsed.hash.is_some());
    if params.as_ref().is_none_or(|params| params.m_cost() > MAX_ARGON2_MEMORY_KIB || params.t_cost() > 16) {
        return Err(
            "the hash's parameters are invalid or too costly to check (at most m=262144, t=16); create one with `bondry hash-password`"
                .into(),
        );
    }
    if parsed.algorithm.as_str() != "argon2id" {
        return Err(format!(
            "the hash uses {}; only argon2id is accepted (`bondry hash-password` makes one)",
            parsed.algorithm
        ));
    }
    Ok(())
}

fn tickets(diagnostics: &mut Diagnostics, name: &str, raw: &RawRealm) -> Option<Vec<Ticket>> {
    let listed: Vec<_> = raw
        .tickets
        .iter()
        .enumerate()
        .map(|(index, ticket)| self::ticket(diagnostics, name, raw, index, ticket))
        .collect();
    listed.into_iter().collect()
}

/// One ticket: its hash, given once, for a principal of the realm, with at most that
/// principal's roles. The principal is looked up as configured, so that a ticket is not
/// also refused for what is wrong with its principal.
fn ticket(
    diagnostics: &mut Diagnostics,
    name: &str,
    raw: &RawRealm,
    index: usize,
    ticket: &RawTicket,
) -> Option<Ticket> {
    let at = |k: &str| format!("realms.{name}.tickets[{index}].{k}");
    let sha256 = parse_sha256(&ticket.sha256);
    let sha256 = match sha256 {
        None => {
            let message =
                format!("{:?} is not 64 lowercase hex digits; `bondry ticket new` prints the stanza", ticket.sha256);
            diagnostics.refuse(at("sha256"), message);
            None
        }
        Some(_) if raw.tickets[..index].iter().any(|earlier| earlier.sha256 == ticket.sha256) => {
            diagnostics.refuse(at("sha256"), format!("{:?}: the same ticket is configured twice", ticket.sha256));
            None
        }
        Some(sha256) => Some(sha256),
    };
    let holder: Option<&RawPrincipal> = raw.principals.iter().find(|principal| principal.id == ticket.principal);
    let Some(holder) = holder else {
        diagnostics.refuse(
            at("principal"),
            format!("principal {:?} is not defined in [[realms.{name}.principals]]", ticket.principal),
        );
        return None;
    };
    let roles: Arc<[String]> = match &ticket.roles {
        None => holder.roles.clone().into(),
        Some(cap) => {
            let mut narrowed = true;
            for (at_role, role) in cap.iter().enumerate() {
                if !holder.roles.contains(role) {
                    diagnostics.refuse(
                        at(&format!("roles[{at_role}]")),
                        format!(
                            "role {role:?} is not one of {:?}'s; a ticket can only narrow its principal's roles",
                            ticket.principal
                        ),
                    );
                    narrowed = false;
                }
            }
            if !narrowed {
                return None;
            }
            cap.clone().into()
        }
    };
    Some(Ticket { sha256: sha256?, principal: ticket.principal.clone(), roles })
}

fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (index, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[index * 2..index * 2 + 2], 16).ok()?;
    }
    Some(bytes)
}

/// The realm's OAuth issuers and public resource URL, which come together. `Some(None)`
/// is a realm without OAuth.
fn oauth(diagnostics: &mut Diagnostics, loaded: &Loaded, name: &str, raw: &RawRealm) -> Option<Option<OAuth>> {
    let key = |k: &str| format!("realms.{name}.{k}");
    let without_oauth = raw.oauth.is_empty();
    if without_oauth && !raw.required_scopes.is_empty() {
        diagnostics.refuse(
            key("required_scopes"),
            format!("scopes are only checked on OAuth tokens; add [[realms.{name}.oauth]] or remove the key"),
        );
    }
    let resource_url = match (&raw.resource_url, without_oauth) {
        (None, true) => return raw.required_scopes.is_empty().then_some(None),
        (Some(_), true) => {
            diagnostics.refuse(
                key("resource_url"),
                format!("a resource URL is only used with OAuth; add [[realms.{name}.oauth]] or remove the key"),
            );
            return None;
        }
        (None, false) => {
            let path = if name == bondry_http_server::DEFAULT_REALM {
                "/mcp".to_owned()
            } else {
                format!("/mcp/realm/{name}")
            };
            diagnostics.refuse(
                key("resource_url"),
                format!(
                    "OAuth needs the realm's public URL, the audience of its tokens, e.g. \"https://mcp.example.com{path}\""
                ),
            );
            None
        }
        (Some(url), false) => Some(url.clone()),
    };
    let issuers: Vec<_> = raw
        .oauth
        .iter()
        .enumerate()
        .map(|(index, issuer)| issuer_spec(diagnostics, loaded, &key(&format!("oauth[{index}]")), issuer))
        .collect();
    // The issuers are checked together (their namespaces, roles and keys) only when each
    // could be read: the indices of its findings are those of the whole list.
    let issuers: Vec<IssuerSpec> = issuers.into_iter().collect::<Option<_>>()?;
    let known_roles = raw.roles.iter().map(|role| role.name.clone()).collect();
    let spec =
        OAuthSpec { resource_url: resource_url?, issuers, known_roles, required_scopes: raw.required_scopes.clone() };
    match OAuth::new(spec) {
        Ok(oauth) => Some(Some(oauth)),
        Err(error) => {
            diagnostics.refuse(key(&error.key), error.message);
            None
        }
    }
}

/// One issuer's keys: exactly one of a JWKS URL, a JWKS file or inline keys.
fn issuer_spec(diagnostics: &mut Diagnostics, loaded: &Loaded, key: &str, issuer: &RawOAuth) -> Option<IssuerSpec> {
    let at = |k: &str| format!("{key}.{k}");
    let keys = match (&issuer.jwks_url, &issuer.jwks_file, &issuer.keys) {
        (Some(url), None, None) => KeySource::JwksUrl(url.clone()),
        (None, Some(path), None) => {
            let path = loaded.base_dir.join(path);
            let read = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {:?}: {e}", path.display()))
                .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| format!("not JSON: {e}")))
                .and_then(|document| {
                    document
                        .get("keys")
                        .and_then(Value::as_array)
                        .cloned()
                        .ok_or_else(|| "not a JWK set: it needs a \"keys\" array".to_owned())
                });
            KeySource::Static(diagnostics.ok(at("jwks_file"), read)?)
        }
        (None, None, Some(tables)) => {
            KeySource::Static(tables.iter().map(|table| serde_json::to_value(table).unwrap_or(Value::Null)).collect())
        }
        _ => {
            diagnostics.refuse(key, "give exactly one of jwks_url, jwks_file or keys");
            return None;
        }
    };
    let millis = Duration::from_millis;
    Some(IssuerSpec {
        issuer: issuer.issuer.clone(),
        keys,
        algorithms: issuer.algorithms.clone(),
        principal_claim: issuer.principal_claim.clone(),
        roles_claim: issuer.roles_claim.clone(),
        roles: issuer.roles.clone(),
        namespace: issuer.namespace.clone(),
        leeway: millis(issuer.leeway_ms),
        jwks_max_age: millis(issuer.jwks_max_age_ms),
        jwks_refresh_interval: millis(issuer.jwks_refresh_interval_ms),
    })
}
