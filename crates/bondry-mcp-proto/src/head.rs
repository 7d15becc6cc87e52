//! Admission by the request head: HTTP method, `Content-Type` and `Accept`.
//!
//! These run before the body is read, so a client that will be refused anyway is not
//! made to upload its body first.

use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, Method};

use crate::error::Error;

/// Checks the method and media types of a request on the MCP endpoint. GET and DELETE
/// exist only where a handshake revision is served; they carry no body to check.
pub fn admit(method: &Method, headers: &HeaderMap, handshake: bool) -> Result<(), Error> {
    match *method {
        Method::POST => {}
        Method::GET if handshake => {
            return if accepts(headers, "text", "event-stream") { Ok(()) } else { Err(Error::StreamNotAcceptable) };
        }
        Method::DELETE if handshake => return Ok(()),
        _ => return Err(Error::MethodNotAllowed { allow: if handshake { "POST, GET, DELETE" } else { "POST" } }),
    }
    let mut content_types = headers.get_all(CONTENT_TYPE).iter();
    let is_json = match (content_types.next(), content_types.next()) {
        (Some(value), None) => {
            value.to_str().is_ok_and(|value| essence(value).eq_ignore_ascii_case("application/json"))
        }
        _ => false,
    };
    if !is_json {
        return Err(Error::UnsupportedMediaType);
    }
    if !(accepts(headers, "application", "json") && accepts(headers, "text", "event-stream")) {
        return Err(Error::NotAcceptable);
    }
    Ok(())
}

/// The media type without parameters, trimmed.
fn essence(media_type: &str) -> &str {
    media_type.split(';').next().unwrap_or_default().trim()
}

/// Whether the `Accept` headers admit `kind/subtype`: the most specific matching range
/// decides, and `q=0` refuses.
fn accepts(headers: &HeaderMap, kind: &str, subtype: &str) -> bool {
    let mut best: Option<(u8, bool)> = None;
    let ranges =
        headers.get_all(ACCEPT).iter().filter_map(|value| value.to_str().ok()).flat_map(|value| value.split(','));
    for range in ranges {
        let mut parts = range.split(';');
        let Some((range_kind, range_subtype)) = parts.next().unwrap_or_default().trim().split_once('/') else {
            continue;
        };
        let specificity = match (range_kind, range_subtype) {
            ("*", "*") => 0,
            (k, "*") if k.eq_ignore_ascii_case(kind) => 1,
            (k, s) if k.eq_ignore_ascii_case(kind) && s.eq_ignore_ascii_case(subtype) => 2,
            _ => continue,
        };
        let refused = parts.any(|param| {
            param.split_once('=').is_some_and(|(name, q)| {
                name.trim().eq_ignore_ascii_case("q") && q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
            })
        });
        if best.is_none_or(|(seen, _)| specificity > seen) {
            best = Some((specificity, !refused));
        }
    }
    best.is_some_and(|(_, admitted)| admitted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(content_type: &[&str], accept: &[&str]) -> Result<(), Error> {
        let mut headers = HeaderMap::new();
        for value in content_type {
            headers.append(CONTENT_TYPE, value.parse().unwrap());
        }
        for value in accept {
            headers.append(ACCEPT, value.parse().unwrap());
        }
        admit(&Method::POST, &headers, true)
    }

    const BOTH: &[&str] = &["application/json, text/event-stream"];

    #[test]
    fn content_type_is_exactly_one_json() {
        assert_eq!(check(&["application/json"], BOTH), Ok(()));
        assert_eq!(check(&["Application/JSON; charset=utf-8"], BOTH), Ok(()));
        assert_eq!(check(&[], BOTH), Err(Error::UnsupportedMediaType));
        assert_eq!(check(&["text/plain"], BOTH), Err(Error::UnsupportedMediaType));
        assert_eq!(check(&["application/json", "application/json"], BOTH), Err(Error::UnsupportedMediaType));
        assert_eq!(check(&["application/jsonx"], BOTH), Err(Error::UnsupportedMediaType));
    }

    #[test]
    fn accept_must_admit_both_types() {
        let json = &["application/json"];
        for good in [
            &["*/*"][..],
            &["application/*, text/*"],
            &["application/json", "text/event-stream"],
            &["text/event-stream;q=0.5, application/json"],
        ] {
            assert_eq!(check(json, good), Ok(()), "{good:?}");
        }
        for bad in
            [&[][..], &["application/json"], &["text/event-stream"], &["*/*, text/event-stream;q=0"], &["image/*"]]
        {
            assert_eq!(check(json, bad), Err(Error::NotAcceptable), "{bad:?}");
        }
    }

    #[test]
    fn methods_depend_on_the_handshake_era() {
        let none = HeaderMap::new();
        assert_eq!(admit(&Method::GET, &none, false), Err(Error::MethodNotAllowed { allow: "POST" }));
        assert_eq!(admit(&Method::DELETE, &none, false), Err(Error::MethodNotAllowed { allow: "POST" }));
        assert_eq!(admit(&Method::PUT, &none, true), Err(Error::MethodNotAllowed { allow: "POST, GET, DELETE" }));
        assert_eq!(admit(&Method::DELETE, &none, true), Ok(()));
        assert_eq!(admit(&Method::GET, &none, true), Err(Error::StreamNotAcceptable));
        let mut sse = HeaderMap::new();
        sse.insert(ACCEPT, "text/*".parse().unwrap());
        assert_eq!(admit(&Method::GET, &sse, true), Ok(()));
    }
}
