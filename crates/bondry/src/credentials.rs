//! Making credentials for the configuration: password hashes and tickets.

use argon2::{Argon2, PasswordHasher};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// An argon2id PHC string for `password`, with default parameters and a random salt.
pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let hash = Argon2::default().hash_password(password.as_bytes()).map_err(|e| anyhow::anyhow!("cannot hash: {e}"))?;
    Ok(hash.to_string())
}

/// A fresh ticket: 32 random bytes, base64url, with a recognisable prefix.
pub struct Ticket(String);

impl Ticket {
    pub fn mint() -> Self {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system random source is available");
        Self(format!("bondry_{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The secret itself, to hand to its holder once.
    pub fn secret(&self) -> &str {
        &self.0
    }

    /// The configuration stanza that accepts this ticket, holding only its hash.
    pub fn stanza(&self, realm: &str, principal: &str, roles: Option<&[String]>) -> String {
        let sha256: String = Sha256::digest(self.0.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        // A realm name with a dot is one quoted TOML key.
        let realm = if realm.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            realm.to_owned()
        } else {
            toml_string(realm)
        };
        let mut stanza =
            format!("[[realms.{realm}.tickets]]\nsha256 = \"{sha256}\"\nprincipal = {}\n", toml_string(principal));
        if let Some(roles) = roles {
            let roles: Vec<String> = roles.iter().map(|role| toml_string(role)).collect();
            stanza.push_str(&format!("roles = [{}]\n", roles.join(", ")));
        }
        stanza
    }
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::{PasswordHash, PasswordVerifier};

    #[test]
    fn hashes_verify_and_tickets_come_with_their_stanza() {
        let hash = hash_password("secret").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(Argon2::default().verify_password(b"secret", &PasswordHash::new(&hash).unwrap()).is_ok());
        let ticket = Ticket::mint();
        assert_ne!(ticket.secret(), Ticket::mint().secret());
        let dotted: toml::Table = ticket.stanza("team.a", "alice", None).parse().unwrap();
        assert!(dotted["realms"]["team.a"]["tickets"].is_array(), "a dotted realm name is one quoted key");
        let stanza = ticket.stanza("default", "alice", Some(&["demo".to_owned()]));
        let parsed: toml::Table = stanza.parse().unwrap();
        let entry = &parsed["realms"]["default"]["tickets"][0];
        let expected: String = Sha256::digest(ticket.secret().as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(entry["sha256"].as_str(), Some(expected.as_str()));
        assert_eq!(entry["principal"].as_str(), Some("alice"));
        assert_eq!(entry["roles"][0].as_str(), Some("demo"));
    }
}
