//! How Bondry percent-encodes what it writes into an operation's URL: a path segment's
//! or a query value's part, and the query key `auth` sends.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Every byte but letters, digits and `-._~` (RFC 3986's unreserved characters), so
/// that no value can end a segment, start a query or add a parameter.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `text` percent-encoded as a path segment's or a query value's part.
pub(crate) fn component(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}
