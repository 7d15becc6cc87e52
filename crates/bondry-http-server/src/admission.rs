//! Admission before the adapter: `Origin` and, on loopback listeners, `Host`.
//!
//! Browsers attach `Origin` to cross-site requests; refusing unknown origins (and
//! non-loopback `Host` names on a loopback listener) is what stops DNS rebinding.

use http::HeaderMap;
use http::header::{HOST, ORIGIN};

use bondry_mcp_proto::Error;

/// Which `Origin` values a listener serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPolicy {
    /// Any origin.
    Any,
    /// Loopback origins (localhost, 127.0.0.1, [::1], any scheme and port) and the listed
    /// exact origins, compared ignoring case.
    Listed { local: bool, exact: Vec<String> },
}

impl OriginPolicy {
    pub(crate) fn allows(&self, origin: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Listed { local, exact } => {
                (*local && origin_is_loopback(origin))
                    || exact.iter().any(|allowed| allowed.eq_ignore_ascii_case(origin))
            }
        }
    }
}

/// Checks `Origin`, then that `Host` is present, then, when the listener is bound to
/// loopback, that it and the URI's authority (if the request line has one) are loopback
/// names.
pub fn check(
    headers: &HeaderMap,
    authority: Option<&str>,
    origins: &OriginPolicy,
    loopback_listener: bool,
) -> Result<(), Error> {
    // More than one value of either header is refused: there is no telling which one a
    // browser or a proxy meant.
    let mut origin_values = headers.get_all(ORIGIN).iter();
    if let Some(origin) = origin_values.next() {
        let allowed =
            origin_values.next().is_none() && origin.to_str().is_ok_and(|origin| origins.allows(origin.trim()));
        if !allowed {
            return Err(Error::OriginNotAllowed);
        }
    }
    // Without `Host` there is nothing to check a loopback listener's name against, and
    // HTTP/1.1 requires one anyway (RFC 9112 §3.2).
    if !headers.contains_key(HOST) {
        return Err(Error::HostMissing);
    }
    if loopback_listener {
        if headers.get_all(HOST).iter().nth(1).is_some() {
            return Err(Error::HostNotAllowed);
        }
        let host_header = headers.get(HOST).map(|host| host.to_str().map_err(|_| Error::HostNotAllowed)).transpose()?;
        for host in host_header.into_iter().chain(authority) {
            if !host_is_loopback(strip_port(host.trim())) {
                return Err(Error::HostNotAllowed);
            }
        }
    }
    Ok(())
}

fn origin_is_loopback(origin: &str) -> bool {
    let Some((_scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    !authority.contains(['/', '@']) && host_is_loopback(strip_port(authority))
}

/// The host of an authority, without its port.
fn strip_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_once(']').map_or(authority, |(host, _)| &authority[..host.len() + 1]);
    }
    authority.rsplit_once(':').map_or(authority, |(host, _)| host)
}

fn host_is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>, host: Option<&str>) -> HeaderMap {
        let mut map = HeaderMap::new();
        if let Some(origin) = origin {
            map.insert(ORIGIN, origin.parse().unwrap());
        }
        if let Some(host) = host {
            map.insert(HOST, host.parse().unwrap());
        }
        map
    }

    #[test]
    fn local_origins() {
        let local = OriginPolicy::Listed { local: true, exact: vec![] };
        for good in ["http://localhost:3000", "https://127.0.0.1", "http://[::1]:8080", "HTTP://LOCALHOST"] {
            assert_eq!(check(&headers(Some(good), Some("localhost")), None, &local, false), Ok(()), "{good}");
        }
        for bad in ["http://evil.example", "http://localhost.evil.example", "null", "http://user@evil:1", "localhost"] {
            assert_eq!(
                check(&headers(Some(bad), Some("localhost")), None, &local, false),
                Err(Error::OriginNotAllowed),
                "{bad}"
            );
        }
        assert_eq!(check(&headers(None, Some("example.com")), None, &local, false), Ok(()));
    }

    #[test]
    fn exact_and_any_origins() {
        let exact = OriginPolicy::Listed { local: false, exact: vec!["https://app.example".into()] };
        assert_eq!(check(&headers(Some("HTTPS://APP.EXAMPLE"), Some("localhost")), None, &exact, false), Ok(()));
        assert_eq!(
            check(&headers(Some("http://localhost"), Some("localhost")), None, &exact, false),
            Err(Error::OriginNotAllowed)
        );
        assert_eq!(
            check(&headers(Some("http://anything"), Some("localhost")), None, &OriginPolicy::Any, false),
            Ok(())
        );
        let mut twice = headers(Some("http://localhost"), Some("localhost"));
        twice.append(ORIGIN, "http://localhost".parse().unwrap());
        assert_eq!(check(&twice, None, &OriginPolicy::Any, false), Err(Error::OriginNotAllowed));
    }

    #[test]
    fn loopback_listeners_refuse_foreign_hosts() {
        let any = OriginPolicy::Any;
        for good in ["localhost:7373", "127.0.0.1:7373", "[::1]:7373", "localhost"] {
            assert_eq!(check(&headers(None, Some(good)), None, &any, true), Ok(()), "{good}");
        }
        assert_eq!(check(&headers(None, Some("evil.example:7373")), None, &any, true), Err(Error::HostNotAllowed));
        assert_eq!(check(&headers(None, Some("evil.example")), None, &any, false), Ok(()));
        assert_eq!(
            check(&headers(None, Some("localhost")), Some("evil.example:7373"), &any, true),
            Err(Error::HostNotAllowed)
        );
        assert_eq!(check(&headers(None, Some("localhost")), Some("[::1]:7373"), &any, true), Ok(()));
    }

    #[test]
    fn a_request_without_host_is_refused_on_every_listener() {
        for loopback in [true, false] {
            assert_eq!(check(&headers(None, None), None, &OriginPolicy::Any, loopback), Err(Error::HostMissing));
            // An authority in the request line does not stand in for the header.
            assert_eq!(
                check(&headers(None, None), Some("localhost"), &OriginPolicy::Any, loopback),
                Err(Error::HostMissing)
            );
        }
    }
}
