//! Routing headers of the modern era: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
//! and `Mcp-Param-*`, read strictly.
//!
//! A repeated header is refused rather than resolved, so that an intermediary and Bondry
//! can never read two different values from one request.

use std::borrow::Cow;

use http::HeaderMap;

use crate::error::HeaderFault;
use crate::sentinel;

pub const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
pub const METHOD: &str = "Mcp-Method";
pub const NAME: &str = "Mcp-Name";
pub const PARAM_PREFIX: &str = "mcp-param-";

/// The same names as [`http::HeaderName`]s, for writing headers: inserting by `&str`
/// parses the name and allocates it again on every request.
pub mod name {
    use http::HeaderName;

    pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
    pub const METHOD: HeaderName = HeaderName::from_static("mcp-method");
    pub const NAME: HeaderName = HeaderName::from_static("mcp-name");
}

/// The one value of header `name`, trimmed of SP and HTAB only.
pub fn single<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, HeaderFault> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(HeaderFault::Repeated);
    }
    let value = value.to_str().map_err(|_| HeaderFault::Invalid)?;
    Ok(Some(value.trim_matches([' ', '\t'])))
}

/// The decoded value of a header that may carry the Base64 sentinel.
pub fn decoded<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<Cow<'h, str>>, HeaderFault> {
    match single(headers, name)? {
        None => Ok(None),
        Some(raw) => sentinel::decode(raw).map(Some).map_err(|_| HeaderFault::Invalid),
    }
}

/// The first standard routing header that appears more than once. Repeats of
/// `Mcp-Param-*` are found only for the names the called tool declares, with the others.
pub fn first_repeated(headers: &HeaderMap) -> Option<&'static str> {
    [PROTOCOL_VERSION, METHOD, NAME].into_iter().find(|name| headers.get_all(*name).iter().nth(1).is_some())
}

/// How an `Mcp-Param-{name}` header is named in errors.
pub fn param_header_display(name: &str) -> String {
    format!("Mcp-Param-{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_are_the_routing_headers() {
        assert_eq!(name::PROTOCOL_VERSION, PROTOCOL_VERSION);
        assert_eq!(name::METHOD, METHOD);
        assert_eq!(name::NAME, NAME);
    }
}
