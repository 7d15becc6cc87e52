//! The configurations the bench serves Bondry with, and the credentials of its realms:
//! one process, three realms with the same catalogue (anonymous, ticket, RS256 JWT), so
//! the cost of authentication is the only difference between them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use sha2::{Digest, Sha256};

/// The ticket the `ticket` realm admits; a bench-only secret, made up here.
pub const TICKET: &str = "bench-ticket-0123456789abcdef0123456789abcdef";
/// The `jwt` realm's issuer and resource.
const ISSUER: &str = "http://127.0.0.1/bench-issuer";
const RESOURCE: &str = "http://127.0.0.1/mcp/realm/jwt";
const KEY_ID: &str = "bench-1";

/// What one tool id is, for the catalogue's `index`-th entry: the echo tool first, then
/// copies of it, so a listing of `tools` entries names the same tools in every server.
pub fn tool_name(index: usize) -> String {
    if index == 0 { "demo.echo".to_owned() } else { format!("demo.e{index:05}") }
}

/// The realms' shared catalogue: `tools` copies of the demo's echo tool.
fn catalogue(text: &mut String, realm: &str, tools: usize) {
    writeln!(text, "\n[[realms.{realm}.roles]]\nname = \"demo\"\ngrants = [\"demo.*\"]").unwrap();
    writeln!(
        text,
        "\n[realms.{realm}.limits]\nsessions_per_principal = 1000000\nlisten_streams_per_principal = 1000000\ninflight_per_session = 1024"
    )
    .unwrap();
    for index in 0..tools {
        writeln!(
            text,
            "\n[[realms.{realm}.capabilities]]\nid = \"{}\"\nkind = \"tool\"\nhandler = \"demo.echo\"",
            tool_name(index)
        )
        .unwrap();
    }
}

fn head() -> String {
    // The listener's address comes from --listen; audit records go to a file, as an
    // operator would have them, so writing them is part of what is measured.
    "shutdown_grace_ms = 1000\npin_store = \"memory\"\n\n[listeners.main]\nbind = \"127.0.0.1:0\"\n\
     page_size = 200\nmax_connections = 100000\n\n[audit]\nsink = \"file\"\npath = \"audit.jsonl\"\n"
        .to_owned()
}

/// Bondry serving `tools` tools in the anonymous realm `default`, and the same in the
/// realms `ticket` and `jwt` when `credentials` are given.
pub fn bondry(tools: usize, credentials: Option<&Credentials>) -> String {
    let mut text = head();
    text.push_str("\n[realms.default]\nanonymous = true\nanonymous_roles = [\"demo\"]\n");
    catalogue(&mut text, "default", tools);
    if let Some(credentials) = credentials {
        let digest = hex(&Sha256::digest(TICKET.as_bytes()));
        write!(
            text,
            "\n[realms.ticket]\nanonymous = false\n\n[[realms.ticket.principals]]\nid = \"bench\"\nroles = [\"demo\"]\n\n\
             [[realms.ticket.tickets]]\nsha256 = \"{digest}\"\nprincipal = \"bench\"\n"
        )
        .unwrap();
        catalogue(&mut text, "ticket", tools);
        write!(
            text,
            "\n[realms.jwt]\nanonymous = false\nresource_url = \"{RESOURCE}\"\n\n[[realms.jwt.oauth]]\nissuer = \"{ISSUER}\"\n\
             algorithms = [\"RS256\"]\nroles = [\"demo\"]\nkeys = [{{ kty = \"RSA\", kid = \"{KEY_ID}\", n = \"{}\", e = \"AQAB\" }}]\n",
            credentials.modulus
        )
        .unwrap();
        catalogue(&mut text, "jwt", tools);
    }
    text
}

/// A Bondry whose one realm is the upstream at `url`, its tools served under their own
/// names: the gateway of the relay workload.
pub fn gateway(url: &str) -> String {
    let mut text = head();
    write!(
        text,
        "\n[realms.default]\nanonymous = true\nanonymous_roles = [\"demo\"]\n\n[[realms.default.roles]]\nname = \"demo\"\n\
         grants = [\"demo.*\"]\n\n[realms.default.limits]\nsessions_per_principal = 1000000\n\n\
         [[realms.default.upstreams]]\nname = \"peer\"\ntransport = \"http\"\nurl = \"{url}\"\nallow_plain_http = true\n\
         prefix = \"\"\nmax_concurrent_calls = 1024\n"
    )
    .unwrap();
    text
}

/// Bondry serving its echo tool from the web service at `url` (`backend = "http"`).
pub fn service(url: &str) -> String {
    let mut text = head();
    write!(
        text,
        "\n[realms.default]\nanonymous = true\nanonymous_roles = [\"demo\"]\n\n[[realms.default.roles]]\nname = \"demo\"\n\
         grants = [\"demo.*\"]\n\n[[realms.default.capabilities]]\nid = \"demo.echo\"\nkind = \"tool\"\nbackend = \"http\"\n\
         url = \"{url}\"\nmax_concurrent_calls = 1024\n\
         input_schema = '{{\"type\": \"object\", \"properties\": {{\"text\": {{\"type\": \"string\"}}}}}}'\n"
    )
    .unwrap();
    text
}

/// Bondry serving the OpenAPI document `spec` as the tools `api.…` (only the operations
/// `include` names, when given), calling the service at `base_url`; beside the echo tool
/// the start's probe calls. Pages of 100 tools, so that a first page holds as many tools
/// whatever the catalogue's size.
pub fn openapi(spec: &Path, base_url: &str, include: Option<&[String]>) -> String {
    openapi_listed(spec, base_url, include, "list")
}

/// [`openapi`] of several documents, one entry each under the one prefix `api`, their
/// tools found by searching instead of listed.
pub fn openapi_searched(specs: &[PathBuf], base_url: &str) -> String {
    let mut text = openapi_listed(&specs[0], base_url, None, "search")
        .replace("name = \"api\"", "name = \"api0\"\nprefix = \"api\"");
    for (at, spec) in specs.iter().enumerate().skip(1) {
        write!(
            text,
            "\n[[realms.default.openapi]]\nname = \"api{at}\"\nprefix = \"api\"\nspec_file = {:?}\nbase_url = \"{base_url}\"\nlisting = \"search\"\n",
            spec.display().to_string()
        )
        .unwrap();
    }
    text
}

fn openapi_listed(spec: &Path, base_url: &str, include: Option<&[String]>, listing: &str) -> String {
    let mut text = head().replace("page_size = 200", "page_size = 100");
    let include = include.map_or_else(String::new, |ids| format!("include = {ids:?}\n"));
    write!(
        text,
        "\n[realms.default]\nanonymous = true\nanonymous_roles = [\"demo\"]\n\n[[realms.default.roles]]\nname = \"demo\"\n\
         grants = [\"demo.*\", \"api.*\"]\n\n[[realms.default.capabilities]]\nid = \"demo.echo\"\nkind = \"tool\"\nhandler = \"demo.echo\"\n\n\
         [[realms.default.openapi]]\nname = \"api\"\nspec_file = {:?}\nbase_url = \"{base_url}\"\nmax_concurrent_calls = 1024\nlisting = \"{listing}\"\n{include}",
        spec.display().to_string()
    )
    .unwrap();
    text
}

/// An RS256 key made for this run and a token signed with it.
pub struct Credentials {
    /// The public modulus, base64url, for the realm's `keys`.
    modulus: String,
    /// `Authorization: Bearer` of the `jwt` realm.
    pub token: String,
}

impl Credentials {
    /// Makes a 2048-bit RSA key with `openssl` in `dir` and signs a token valid for a day.
    pub fn make(dir: &Path) -> Result<Credentials, String> {
        let key = dir.join("issuer-key.pem");
        run(Command::new("openssl")
            .args(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out"])
            .arg(&key))?;
        let modulus = run(Command::new("openssl").args(["rsa", "-noout", "-modulus", "-in"]).arg(&key))?;
        let modulus = modulus.trim().strip_prefix("Modulus=").ok_or("openssl printed no modulus")?;
        let modulus = URL_SAFE_NO_PAD.encode(unhex(modulus)?);
        // PKCS#1 DER, which jsonwebtoken reads without its PEM feature.
        let der = dir.join("issuer-key.der");
        run(Command::new("openssl")
            .args(["rsa", "-traditional", "-outform", "DER", "-in"])
            .arg(&key)
            .arg("-out")
            .arg(&der))?;
        let der = std::fs::read(&der).map_err(|error| format!("{}: {error}", der.display()))?;
        let signing = jsonwebtoken::EncodingKey::from_rsa_der(&der);
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(KEY_ID.to_owned());
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
        let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "bench", "iat": now, "exp": now + 86_400});
        let _ = jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER.install_default();
        let token = jsonwebtoken::encode(&header, &claims, &signing).map_err(|error| format!("signing: {error}"))?;
        Ok(Credentials { modulus, token })
    }
}

fn run(command: &mut Command) -> Result<String, String> {
    let output = command.output().map_err(|error| format!("openssl: {error}"))?;
    if !output.status.success() {
        return Err(format!("openssl failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    String::from_utf8(output.stdout).map_err(|_| "openssl printed non-UTF-8".to_owned())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

fn unhex(text: &str) -> Result<Vec<u8>, String> {
    (0..text.len())
        .step_by(2)
        .map(|at| {
            u8::from_str_radix(text.get(at..at + 2).unwrap_or("x"), 16).map_err(|_| "a modulus not in hex".to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        assert_eq!(hex(&unhex("00ff10").unwrap()), "00ff10");
        assert!(unhex("0g").is_err());
    }
}
