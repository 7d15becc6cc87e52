//! A configured rate limit, checked: listeners limit by address, realms by principal and
//! by failed authentication, all with the one shape `{ per_second, burst }`.

use bondry_http_server::limits::Rate;

use crate::config::RawRate;

/// A positive finite rate and a burst of at least one.
pub(super) fn rate(raw: RawRate) -> Result<Rate, String> {
    let valid = (1e-4..=1e6).contains(&raw.per_second) && raw.burst >= 1;
    valid.then_some(Rate { per_second: raw.per_second, burst: raw.burst }).ok_or_else(|| {
        format!(
            "{{ per_second = {}, burst = {} }}: per_second must be between 0.0001 and 1000000 and burst at least 1, e.g. {{ per_second = 5, burst = 20 }}",
            raw.per_second, raw.burst
        )
    })
}
