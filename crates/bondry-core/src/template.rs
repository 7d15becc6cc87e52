//! URI templates (RFC 6570), matched in reverse: which template a concrete URI was
//! expanded from, and the values of its variables.
//!
//! One variable per expression, with the operators that expand to a recognisable shape:
//! `{var}` (simple: unreserved characters, the rest percent-encoded), `{+var}`
//! (reserved: URI delimiters kept), `{#var}` (fragment), `{/var}` (path segment) and
//! `{.var}` (label). Lists, explode and prefix modifiers, and the query operators are
//! refused when the template is loaded. Matching compiles to an anchored regular
//! expression, so it takes time linear in the URI whatever the template. Where a URI
//! could split more than one way, earlier variables take as little as they can.

use std::fmt;

use regex::Regex;

/// A compiled URI template.
#[derive(Clone)]
pub struct UriTemplate {
    text: String,
    variables: Vec<String>,
    matcher: Regex,
}

/// Why a template was refused, or why a URI's variable could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("{0}")]
    Invalid(String),
    /// A captured value is not percent-encoded UTF-8.
    #[error("the value of {0} is not percent-encoded UTF-8")]
    Undecodable(String),
}

/// The longest template accepted, in bytes.
const MAX_TEMPLATE_LEN: usize = 1024;
/// The most variables one template may have.
const MAX_VARIABLES: usize = 16;

/// Unreserved characters or a percent-encoded octet: what a simple expansion produces.
const UNRESERVED: &str = r"(?:[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2})";
/// Unreserved and reserved characters, or a percent-encoded octet: `{+var}` and `{#var}`.
const RESERVED: &str = r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})";
/// A label's value cannot hold the `.` that separates labels.
const LABEL: &str = r"(?:[A-Za-z0-9\-_~]|%[0-9A-Fa-f]{2})";

impl UriTemplate {
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let invalid = |why: String| Err(TemplateError::Invalid(why));
        if text.is_empty() || text.len() > MAX_TEMPLATE_LEN {
            return invalid(format!("a URI template is 1 to {MAX_TEMPLATE_LEN} bytes long"));
        }
        let mut pattern = String::from("^");
        let mut variables: Vec<String> = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let Some(open) = rest.find(['{', '}']) else {
                literal(rest, &mut pattern)?;
                break;
            };
            if rest.as_bytes()[open] == b'}' {
                return invalid(format!("unbalanced `}}` in {text:?}"));
            }
            literal(&rest[..open], &mut pattern)?;
            let Some(close) = rest[open..].find('}') else {
                return invalid(format!("unclosed `{{` in {text:?}"));
            };
            let expression = &rest[open + 1..open + close];
            rest = &rest[open + close + 1..];
            let (operator, name) = match expression.chars().next() {
                Some(op @ ('+' | '#' | '/' | '.')) => (Some(op), &expression[1..]),
                _ => (None, expression),
            };
            let valid_name = !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
                && !name.starts_with('.');
            if !valid_name {
                return invalid(format!(
                    "{{{expression}}} is not supported: use one variable of A-Z a-z 0-9 _ . per expression, \
                     optionally after +, #, / or ."
                ));
            }
            if variables.iter().any(|seen| seen == name) {
                return invalid(format!("variable {name:?} appears twice"));
            }
            variables.push(name.to_owned());
            if variables.len() > MAX_VARIABLES {
                return invalid(format!("a URI template has at most {MAX_VARIABLES} variables"));
            }
            pattern.push_str(&match operator {
                None => format!("({UNRESERVED}*?)"),
                Some('+') => format!("({RESERVED}*?)"),
                Some('#') => format!("(?:#({RESERVED}*?))?"),
                Some('/') => format!("(?:/({UNRESERVED}*?))?"),
                _ => format!(r"(?:\.({LABEL}*?))?"),
            });
        }
        pattern.push('$');
        let matcher = Regex::new(&pattern).map_err(|e| TemplateError::Invalid(e.to_string()))?;
        Ok(Self { text: text.to_owned(), variables, matcher })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The variable names, in template order.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// The variables `uri` was expanded with, percent-decoded, or `None` when this
    /// template cannot produce `uri`. An empty or absent capture leaves its variable
    /// out: RFC 6570 expands an undefined variable to nothing.
    pub fn matches(&self, uri: &str) -> Option<Result<Vec<(&str, String)>, TemplateError>> {
        let captures = self.matcher.captures(uri)?;
        let mut values = Vec::new();
        for (index, name) in self.variables.iter().enumerate() {
            let Some(raw) = captures.get(index + 1).map(|m| m.as_str()).filter(|raw| !raw.is_empty()) else {
                continue;
            };
            match percent_decode(raw) {
                Some(value) => values.push((name.as_str(), value)),
                None => return Some(Err(TemplateError::Undecodable(name.clone()))),
            }
        }
        Some(Ok(values))
    }
}

impl fmt::Debug for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

/// Appends a literal part; it must be characters a URI may hold.
fn literal(text: &str, pattern: &mut String) -> Result<(), TemplateError> {
    if let Some(bad) = text.chars().find(|c| c.is_ascii_control() || *c == ' ' || matches!(c, '<' | '>' | '"')) {
        return Err(TemplateError::Invalid(format!("{bad:?} cannot appear in a URI template")));
    }
    pattern.push_str(&regex::escape(text));
    Ok(())
}

/// Decodes `%XX` escapes; `None` unless the result is UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            decoded.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matched(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        let template = UriTemplate::parse(template).unwrap();
        let values = template.matches(uri)?.unwrap();
        Some(values.into_iter().map(|(name, value)| (name.to_owned(), value)).collect())
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect()
    }

    #[test]
    fn simple_variables_match_one_segment_and_decode() {
        let template = "test://template/{id}/data";
        assert_eq!(matched(template, "test://template/42/data"), Some(pairs(&[("id", "42")])));
        assert_eq!(matched(template, "test://template/a%20b/data"), Some(pairs(&[("id", "a b")])));
        assert_eq!(matched(template, "test://template/caf%C3%A9/data"), Some(pairs(&[("id", "café")])));
        assert_eq!(matched(template, "test://template/a/b/data"), None, "a simple value holds no /");
        assert_eq!(matched(template, "test://template/42/data/more"), None);
        assert_eq!(matched(template, "test://template//data"), Some(vec![]), "empty: the variable is undefined");
        let bad = UriTemplate::parse(template).unwrap();
        assert_eq!(bad.matches("test://template/%FF/data"), Some(Err(TemplateError::Undecodable("id".into()))));
    }

    #[test]
    fn reserved_and_prefixed_operators() {
        assert_eq!(matched("file:///{+path}", "file:///a/b/c.txt"), Some(pairs(&[("path", "a/b/c.txt")])));
        assert_eq!(matched("docs://{+path}/raw", "docs://a/b/raw"), Some(pairs(&[("path", "a/b")])));
        assert_eq!(matched("x://h{/seg}{#frag}", "x://h/one#two"), Some(pairs(&[("seg", "one"), ("frag", "two")])));
        assert_eq!(matched("x://h{/seg}", "x://h"), Some(vec![]));
        assert_eq!(matched("x://{host}{.tld}", "x://example.org"), Some(pairs(&[("host", "example"), ("tld", "org")])));
        assert_eq!(matched("x://{a}-{b}", "x://1-2"), Some(pairs(&[("a", "1"), ("b", "2")])));
    }

    #[test]
    fn literals_are_not_patterns() {
        assert_eq!(matched("a.b://{x}", "aXb://1"), None);
        assert_eq!(matched("x://(y)/{v}", "x://(y)/1"), Some(pairs(&[("v", "1")])));
    }

    #[test]
    fn unsupported_or_malformed_templates_are_refused() {
        for bad in [
            "",
            "x://{a,b}",
            "x://{?q}",
            "x://{a*}",
            "x://{a:3}",
            "x://{}",
            "x://{a",
            "x://a}",
            "x://{a}/{a}",
            "x://{ a}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad:?}");
        }
        let many: String = (0..=MAX_VARIABLES).map(|i| format!("{{v{i}}}/")).collect();
        assert!(UriTemplate::parse(&many).is_err());
    }
}
