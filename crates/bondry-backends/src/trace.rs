//! W3C trace context on a backend request: a caller's well-formed `traceparent` (and its
//! `tracestate`) as headers, so the service's spans join the caller's trace. Nothing else
//! of the caller's goes with it.

use bondry_core::handler::TraceContext;
use http::header::{HeaderMap, HeaderName, HeaderValue};

/// Sets `traceparent` and `tracestate` on `headers` from `trace`, unless a header of that
/// name is already set (an operation that asks for one as a parameter).
pub fn propagate(headers: &mut HeaderMap, trace: &TraceContext) {
    for (name, value) in [("traceparent", trace.traceparent()), ("tracestate", trace.tracestate())] {
        if let Some(value) = value.and_then(|value| HeaderValue::from_str(value).ok()) {
            headers.entry(HeaderName::from_static(name)).or_insert(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn propagated(traceparent: &str, tracestate: Option<&str>) -> HeaderMap {
        let trace = TraceContext {
            traceparent: Some(traceparent.into()),
            tracestate: tracestate.map(Into::into),
            baggage: Some("user=ada".into()),
        };
        let mut headers = HeaderMap::new();
        propagate(&mut headers, &trace);
        headers
    }

    #[test]
    fn only_a_well_formed_traceparent_and_its_tracestate_go_on() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let headers = propagated(good, Some("congo=t61rcWkgMzE"));
        assert_eq!(headers["traceparent"], good);
        assert_eq!(headers["tracestate"], "congo=t61rcWkgMzE");
        assert_eq!(headers.len(), 2, "baggage is the caller's, never passed on");
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next";
        assert_eq!(propagated(later, None)["traceparent"], later);
        for bad in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "garbage",
            "",
        ] {
            assert!(propagated(bad, Some("congo=1")).is_empty(), "{bad}");
        }
        assert!(!propagated(good, Some(&"x".repeat(513))).contains_key("tracestate"));
        assert!(!propagated(good, Some("a=\u{7f}")).contains_key("tracestate"));
    }

    #[test]
    fn a_header_the_request_already_has_is_kept() {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", HeaderValue::from_static("set-by-the-operation"));
        let trace = TraceContext {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            ..TraceContext::default()
        };
        propagate(&mut headers, &trace);
        assert_eq!(headers["traceparent"], "set-by-the-operation");
    }
}
