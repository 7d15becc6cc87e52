//! What every kind of backend that Bondry reaches over HTTP checks the same way: an
//! endpoint's URL, the headers it sends from the environment (`headers_from`), its
//! `ca_file` and `proxy`. Secrets are read from the environment the configuration was
//! loaded in and never repeated in a refusal.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};

use crate::config::Loaded;
use crate::config::diagnostics::Diagnostics;

/// Whether an endpoint may carry a query string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Query {
    Allowed,
    Refused,
}

/// The headers a kind of backend sets itself, which `headers_from` may not (as
/// `HeaderName` spells them, lowercase), and whom they are sent to, as a refusal says.
pub(crate) struct Reserved {
    pub names: &'static [&'static str],
    /// Every header starting with this, too.
    pub prefix: Option<&'static str>,
    pub to: &'static str,
}

/// A backend's endpoint: https, or plain http to a loopback host (or with
/// `allow_plain_http`), no credentials in it, and a query only where `query` allows one.
pub(crate) fn url(text: &str, allow_plain_http: bool, query: Query) -> Result<Url, String> {
    let example = "write it as \"https://api.example.com/path\"";
    let url = Url::parse(text).map_err(|e| format!("{} is not a URL ({e}); {example}", shown(text)))?;
    if has_user_info(&url) {
        return Err(format!(
            "{} holds credentials (left out here); send them in a header instead, e.g. headers_from = {{ Authorization = \"VARIABLE\" }}",
            without_user_info(&url)
        ));
    }
    if query == Query::Refused && url.query().is_some() {
        return Err(format!(
            "{} has a query string, which would be sent to the service on every call unseen; take it out of the URL (a secret belongs in headers_from)",
            shown_without_query(&url)
        ));
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if allow_plain_http || is_loopback(&url) => Ok(url),
        "http" => Err(format!(
            "{:?} is plain http to a host that is not loopback; use https, or set allow_plain_http = true to send requests and their headers unencrypted",
            url.as_str()
        )),
        _ => Err(format!("{:?} is not an http or https URL; {example}", url.as_str())),
    }
}

/// `localhost`, `127.0.0.0/8` or `::1`: a host no network stands between.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback()),
        None => false,
    }
}

fn has_user_info(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

/// `url` as a refusal may show it: a password in it would end up in logs.
fn without_user_info(url: &Url) -> String {
    let mut shown = url.clone();
    // Only URLs that cannot have user info refuse these, and they have none to remove.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    format!("{:?}", shown.as_str())
}

/// Text that is not a URL, as a refusal may show it: not at all when it may hold user
/// info or a query (where a key goes).
fn shown(text: &str) -> String {
    if text.contains(['@', '?']) {
        return "the URL (not repeated here: it may hold credentials)".to_owned();
    }
    format!("{text:?}")
}

/// `headers_from`: each header one Bondry does not set (`reserved`), named once (names
/// are case-insensitive), with the value of the variable it names. The values are marked
/// sensitive, so that HTTP/2 never indexes them.
pub(crate) fn headers(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    stanza: &str,
    raw: Option<&BTreeMap<String, String>>,
    reserved: &Reserved,
) -> Option<Vec<(HeaderName, HeaderValue)>> {
    let mut seen: Vec<HeaderName> = Vec::new();
    let mut headers = Vec::new();
    let mut valid = true;
    for (name, variable) in raw.into_iter().flatten() {
        let key = format!("{stanza}.headers_from.{name}");
        let header = diagnostics.ok(&key, header_name(name, reserved)).and_then(|header| {
            if seen.contains(&header) {
                diagnostics.refuse(&key, format!("{name:?} is given twice (header names are case-insensitive)"));
                return None;
            }
            seen.push(header.clone());
            Some(header)
        });
        let value = diagnostics.ok(&key, header_value(loaded, name, variable));
        match (header, value) {
            (Some(header), Some(value)) => headers.push((header, value)),
            _ => valid = false,
        }
    }
    valid.then_some(headers)
}

pub(crate) fn header_name(name: &str, reserved: &Reserved) -> Result<HeaderName, String> {
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a header name: use letters, digits and ! # $ % & ' * + - . ^ _ ` | ~"))?;
    let prefixed = reserved.prefix.is_some_and(|prefix| header.as_str().starts_with(prefix));
    if reserved.names.contains(&header.as_str()) || prefixed {
        return Err(format!("{name:?} is a header Bondry sets itself on requests to {}; remove it", reserved.to));
    }
    Ok(header)
}

/// The value of `variable`, never repeated in a refusal: it is a secret.
fn header_value(loaded: &Loaded, header: &str, variable: &str) -> Result<HeaderValue, String> {
    let text = loaded.env.get(variable).ok_or_else(|| {
        format!("the environment variable {variable:?} is not set (its value is sent as the {header} header)")
    })?;
    let mut value = HeaderValue::from_str(text).map_err(|_| {
        format!("the value of {variable:?} is not a header value: use visible ASCII, spaces and tabs, no line breaks")
    })?;
    value.set_sensitive(true);
    Ok(value)
}

fn readable_file(path: &Path) -> Result<PathBuf, String> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(format!("{:?} is not a file", path.display())),
        _ => std::fs::File::open(path)
            .map(|_| path.to_path_buf())
            .map_err(|e| format!("cannot read {:?}: {e}", path.display())),
    }
}

/// The one proxy used: an http or https URL. Its credentials would sit in the file, where
/// no backend credential belongs, and show in refusals and logs; so it has none.
fn proxy(text: &str) -> Result<Url, String> {
    let example = "write it as \"http://proxy.example:3128\"";
    let url = Url::parse(text).map_err(|e| format!("{} is not a URL ({e}); {example}", shown(text)))?;
    if has_user_info(&url) {
        return Err(format!(
            "{} holds credentials (left out here), which do not belong in the file; use a proxy that needs none",
            without_user_info(&url)
        ));
    }
    match url.scheme() {
        "http" | "https" => Ok(url),
        _ => Err(format!("{:?} is not an http or https proxy; {example}", url.as_str())),
    }
}

/// A stanza's `ca_file` (read from where the configuration is) and `proxy`, each checked
/// at its key under `stanza`; `None` once either is refused.
pub(crate) fn connection(
    diagnostics: &mut Diagnostics,
    loaded: &Loaded,
    stanza: &str,
    ca_file: Option<&Path>,
    proxy: Option<&str>,
) -> Option<(Option<PathBuf>, Option<Url>)> {
    let ca_file = match ca_file {
        None => Some(None),
        Some(file) => diagnostics.ok(format!("{stanza}.ca_file"), readable_file(&loaded.base_dir.join(file))).map(Some),
    };
    let proxy = match proxy {
        None => Some(None),
        Some(proxy) => diagnostics.ok(format!("{stanza}.proxy"), self::proxy(proxy)).map(Some),
    };
    Some((ca_file?, proxy?))
}

/// The realm's pooled client for `url` with `settings`, or a refusal at the stanza's key
/// the setup failed on (`url_key` for the URL's own).
pub(crate) fn client(
    diagnostics: &mut Diagnostics,
    stanza: &str,
    url_key: &str,
    realm: &str,
    url: &Url,
    settings: &bondry_outbound::Settings,
) -> Option<bondry_outbound::Client> {
    use bondry_outbound::SetupError;
    bondry_outbound::Pool::shared()
        .client(realm, url, settings)
        .map_err(|error| {
            let key = match &error {
                SetupError::CaFile { .. } => "ca_file",
                SetupError::Proxy(_) => "proxy",
                SetupError::Client(_) => url_key,
            };
            diagnostics.refuse(format!("{stanza}.{key}"), error.to_string());
        })
        .ok()
}

/// `url` without its query, as a refusal may show it: the query may hold a secret.
fn shown_without_query(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    format!("{:?}", shown.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_https_or_loopback_http_without_credentials_or_a_refused_query() {
        assert!(url("https://api.example.com/run", false, Query::Refused).is_ok());
        assert!(url("http://127.0.0.1:9/run", false, Query::Refused).is_ok());
        assert!(url("http://[::1]:9/run", false, Query::Refused).is_ok());
        let plain = url("http://api.example.com/run", false, Query::Refused).unwrap_err();
        assert!(plain.contains("plain http to a host that is not loopback"), "{plain}");
        assert!(url("http://api.example.com/run", true, Query::Refused).is_ok());
        let query = url("https://api.example.com/run?key=s3cret", false, Query::Refused).unwrap_err();
        assert!(query.starts_with("\"https://api.example.com/run\" has a query string"), "{query}");
        assert!(!query.contains("s3cret"));
        assert!(url("https://api.example.com/run?v=1", false, Query::Allowed).is_ok());
        let broken = url("https://api.example.com:99999/run?key=s3cret", false, Query::Refused).unwrap_err();
        assert!(broken.starts_with("the URL (not repeated here: it may hold credentials) is not a URL"), "{broken}");
        let userinfo = url("https://me:s3cret@api.example.com/run", false, Query::Refused).unwrap_err();
        assert!(userinfo.contains("holds credentials") && !userinfo.contains("s3cret"), "{userinfo}");
    }

    #[test]
    fn a_reserved_header_or_prefix_is_refused_whatever_its_case() {
        let reserved = Reserved { names: &["host", "bondry-signature"], prefix: Some("x-bondry-"), to: "a service" };
        assert_eq!(header_name("X-Api-Key", &reserved).unwrap().as_str(), "x-api-key");
        assert_eq!(
            header_name("Bondry-Signature", &reserved).unwrap_err(),
            "\"Bondry-Signature\" is a header Bondry sets itself on requests to a service; remove it"
        );
        assert!(header_name("HOST", &reserved).is_err());
        assert!(header_name("X-Bondry-Anything", &reserved).is_err());
    }
}
