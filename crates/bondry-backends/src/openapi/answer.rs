//! An operation's HTTP answer as a tool's: a 2xx JSON body as structured content and its
//! text, another 2xx body as text (with an output schema, a body that does not meet it is
//! the tool error `invalid_output` quoting it, as MCP allows no unstructured result
//! there), a 4xx as the tool error `http_<status>` quoting the
//! body's first 4 KiB (every form of every secret Bondry sent replaced by `[redacted]`
//! first, so that no cut can leave part of one), a 5xx as `backend_unavailable`,
//! anything else `backend_invalid`.

use bondry_core::handler::{Answer, ContentBlock};
use serde::de::DeserializeSeed;
use serde_json::Value;

use crate::failure::Failure;

/// How much of a refusal's body the caller is shown.
pub const QUOTED_BYTES: usize = 4096;

/// The tool error of a 2xx answer that is not what the operation's output schema says.
pub const INVALID_OUTPUT: &str = "invalid_output";

/// What replaces the secret in a quoted body.
const REDACTED: &str = "[redacted]";

/// What an answer was, beside the tool's answer: whether a 2xx body failed the operation's
/// output schema (and so was answered as the tool error [`INVALID_OUTPUT`] quoting it).
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub answer: Answer,
    pub violated_output_schema: bool,
}

/// Reads an answer of `status` with `content_type` and `body`. `conforms` tells whether
/// a value meets the operation's output schema (`None`: it has none); `secrets` are the
/// forms of what Bondry sent of its own (see [`secret_forms`]), never to be quoted back.
pub fn read(
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    conforms: Option<&dyn Fn(&Value) -> bool>,
    secrets: &[String],
) -> Result<Read, Failure> {
    let text = |body: &[u8]| -> Result<String, Failure> {
        String::from_utf8(body.to_vec())
            .map_err(|_| Failure::Invalid(format!("a {status} body that is not UTF-8 text")))
    };
    match status {
        200..=299 => {}
        400..=499 => {
            // A secret that reaches into the quoted part lies whole within it and the
            // longest form's length past it: only that much is read and redacted.
            let longest = secrets.iter().map(String::len).max().unwrap_or(0);
            let head = redacted(&String::from_utf8_lossy(cut(body, QUOTED_BYTES + longest)), secrets);
            let quoted = String::from_utf8_lossy(cut(head.as_bytes(), QUOTED_BYTES)).into_owned();
            let content = (!quoted.is_empty()).then(|| vec![ContentBlock::Text { text: quoted }]);
            // Too many requests, or a timeout at the service's door: worth trying again.
            let retryable = matches!(status, 408 | 429);
            let answer = Answer::ToolError { code: format!("http_{status}"), retryable, content, detail: None };
            return Ok(Read { answer, violated_output_schema: false });
        }
        500..=599 => return Err(Failure::Unavailable(format!("status {status}"))),
        other => return Err(Failure::Invalid(format!("status {other}"))),
    }
    // A service may echo a secret in a success too (a next page's link holding the key).
    let text = redacted(&text(body)?, secrets);
    let blocks = if text.is_empty() { Vec::new() } else { vec![ContentBlock::Text { text: text.clone() }] };
    let value = match is_json(content_type) {
        false => None,
        true => {
            let mut deserializer = serde_json::Deserializer::from_str(&text);
            let value = bondry_core::unique::UniqueKeys
                .deserialize(&mut deserializer)
                .and_then(|value| deserializer.end().map(|()| value))
                .map_err(|error| Failure::Invalid(format!("a JSON body that cannot be read: {error}")))?;
            Some(value)
        }
    };
    let answer = match conforms {
        // Structured content is an object; an array or a scalar travels as text alone.
        None => Answer::Content { blocks, structured: value.filter(Value::is_object) },
        Some(conforms) => match value.filter(|value| conforms(value)) {
            Some(value) => Answer::Content { blocks, structured: Some(value) },
            // A tool with an output schema answers structured content that meets it, or
            // errs: the body travels as the error's text.
            None => {
                let content = (!blocks.is_empty()).then_some(blocks);
                let answer = Answer::ToolError { code: INVALID_OUTPUT.into(), retryable: false, content, detail: None };
                return Ok(Read { answer, violated_output_schema: true });
            }
        },
    };
    Ok(Read { answer, violated_output_schema: false })
}

/// Whether a content type is JSON: `application/json`, or `application/…+json`.
pub fn is_json(content_type: Option<&str>) -> bool {
    let essence = content_type.and_then(|value| value.split(';').next()).unwrap_or_default().trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// At most `limit` bytes of `body`, cut at a character's start when it is UTF-8.
fn cut(body: &[u8], limit: usize) -> &[u8] {
    if body.len() <= limit {
        return body;
    }
    let mut end = limit;
    // Back to the start of the character the limit falls in (at most 3 bytes back).
    while end > limit.saturating_sub(3) && body.get(end).is_some_and(|byte| byte & 0xC0 == 0x80) {
        end -= 1;
    }
    &body[..end]
}

/// The forms a secret can be echoed back in: as sent, percent-encoded as Bondry sends it
/// in a query or with every byte but letters and digits escaped (either case of hex), and
/// escaped in a JSON string (`/` escaped or not). Longest first, so that a form inside
/// another is replaced only where the longer is not.
pub fn secret_forms(secret: &str) -> Vec<String> {
    if secret.is_empty() {
        return Vec::new();
    }
    let encoded = percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC).to_string();
    let component = super::percent::component(secret);
    let lower = [lowercase_escapes(&encoded), lowercase_escapes(&component)];
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json.get(1..json.len().saturating_sub(1)).unwrap_or_default().to_owned();
    let mut forms = vec![secret.to_owned(), encoded, component, json.replace('/', "\\/"), json];
    forms.extend(lower);
    forms.sort_unstable();
    forms.dedup();
    forms.sort_by_key(|form| std::cmp::Reverse(form.len()));
    forms
}

/// `%2F` as `%2f`: the hex digits of percent-escapes in lowercase.
fn lowercase_escapes(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut digits = 0;
    for c in encoded.chars() {
        if c == '%' {
            digits = 2;
            out.push(c);
        } else if digits > 0 {
            digits -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with every form in `secrets` replaced.
/// `text` with every form in `secrets` (longest first) replaced by `[redacted]`.
fn redacted(text: &str, secrets: &[String]) -> String {
    let mut forms = secrets.iter().filter(|form| !form.is_empty() && text.contains(form.as_str())).peekable();
    if forms.peek().is_none() {
        return text.to_owned();
    }
    forms.fold(text.to_owned(), |text, form| text.replace(form.as_str(), REDACTED))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(
        status: u16,
        content_type: &str,
        body: &str,
        conforms: Option<&dyn Fn(&Value) -> bool>,
    ) -> Result<Read, Failure> {
        read(status, Some(content_type), body.as_bytes(), conforms, &secret_forms("s3cr3t/+\""))
    }

    #[test]
    fn a_2xx_json_body_is_structured_content_and_its_text() {
        let read = answer(200, "application/json; charset=utf-8", r#"{"id": 7}"#, None).unwrap();
        assert_eq!(
            read.answer,
            Answer::Content {
                blocks: vec![ContentBlock::Text { text: r#"{"id": 7}"#.into() }],
                structured: Some(json!({"id": 7}))
            }
        );
        let array = answer(201, "application/problem+json", "[1]", None).unwrap();
        assert_eq!(
            array.answer,
            Answer::Content { blocks: vec![ContentBlock::Text { text: "[1]".into() }], structured: None }
        );
        let plain = answer(200, "text/plain", "ok", None).unwrap();
        assert_eq!(
            plain.answer,
            Answer::Content { blocks: vec![ContentBlock::Text { text: "ok".into() }], structured: None }
        );
        assert_eq!(
            answer(204, "text/plain", "", None).unwrap().answer,
            Answer::Content { blocks: vec![], structured: None }
        );
    }

    #[test]
    fn a_success_echoing_the_secret_has_it_redacted_in_its_text_and_its_value() {
        let echoed = r#"{"next": "https://api.example/pets?page=2&key=s3cr3t%2F%2B%22"}"#;
        let read = answer(200, "application/json", echoed, None).unwrap();
        let redacted = r#"{"next": "https://api.example/pets?page=2&key=[redacted]"}"#;
        assert_eq!(
            read.answer,
            Answer::Content {
                blocks: vec![ContentBlock::Text { text: redacted.into() }],
                structured: Some(json!({"next": "https://api.example/pets?page=2&key=[redacted]"}))
            }
        );
    }

    #[test]
    fn a_body_that_fails_the_output_schema_is_a_tool_error_quoting_it_and_says_so() {
        let never: &dyn Fn(&Value) -> bool = &|_| false;
        let always: &dyn Fn(&Value) -> bool = &|_| true;
        let quoting = |text: &str| Answer::ToolError {
            code: INVALID_OUTPUT.into(),
            retryable: false,
            content: Some(vec![ContentBlock::Text { text: text.into() }]),
            detail: None,
        };
        let read = answer(200, "application/json", r#"{"id": "x"}"#, Some(never)).unwrap();
        assert!(read.violated_output_schema);
        assert_eq!(read.answer, quoting(r#"{"id": "x"}"#));
        let plain = answer(200, "text/plain", "fine", Some(always)).unwrap();
        assert_eq!((plain.answer, plain.violated_output_schema), (quoting("fine"), true));
        let met = answer(200, "application/json", r#"{"id": 7}"#, Some(always)).unwrap();
        assert!(!met.violated_output_schema);
        assert_eq!(
            met.answer,
            Answer::Content {
                blocks: vec![ContentBlock::Text { text: r#"{"id": 7}"#.into() }],
                structured: Some(json!({"id": 7}))
            }
        );
    }

    #[test]
    fn a_4xx_is_a_tool_error_quoting_the_body_without_the_secret() {
        let echoed = r#"no pet for key s3cr3t/+" (s3cr3t%2F%2B%22, s3cr3t%2f%2b%22, "s3cr3t\/+\"", "s3cr3t/+\"")"#;
        let read = answer(404, "text/plain", echoed, None).unwrap();
        assert_eq!(
            read.answer,
            Answer::ToolError {
                code: "http_404".into(),
                retryable: false,
                content: Some(vec![ContentBlock::Text {
                    text: r#"no pet for key [redacted] ([redacted], [redacted], "[redacted]", "[redacted]")"#.into()
                }]),
                detail: None
            }
        );
        let long = format!("{}é{}", "a".repeat(QUOTED_BYTES - 1), "b".repeat(100));
        let Answer::ToolError { content: Some(blocks), retryable: true, .. } =
            answer(429, "text/plain", &long, None).unwrap().answer
        else {
            panic!("a retryable tool error")
        };
        assert_eq!(
            blocks,
            [ContentBlock::Text { text: "a".repeat(QUOTED_BYTES - 1) }],
            "cut before the character the limit splits"
        );
        let straddling = format!("{}s3cr3t/+\"", "a".repeat(QUOTED_BYTES - 4));
        let Answer::ToolError { content: Some(blocks), .. } =
            answer(400, "text/plain", &straddling, None).unwrap().answer
        else {
            panic!("a tool error")
        };
        let cut = format!("{}[red", "a".repeat(QUOTED_BYTES - 4));
        assert_eq!(blocks, [ContentBlock::Text { text: cut }], "no part of the secret");
    }

    #[test]
    fn other_statuses_and_unreadable_bodies_fail_with_codes_only() {
        assert_eq!(answer(503, "text/plain", "down", None), Err(Failure::Unavailable("status 503".into())));
        assert_eq!(answer(302, "text/plain", "", None), Err(Failure::Invalid("status 302".into())));
        assert_eq!(
            answer(200, "application/json", r#"{"a": 1, "a": 2}"#, None),
            Err(Failure::Invalid(
                "a JSON body that cannot be read: the key \"a\" is repeated at line 1 column 12".into()
            ))
        );
        assert_eq!(
            read(200, None, b"\xff", None, &[]),
            Err(Failure::Invalid("a 200 body that is not UTF-8 text".into()))
        );
    }
}
