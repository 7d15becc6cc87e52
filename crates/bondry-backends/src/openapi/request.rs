//! A tool's arguments as the operation's request: the path template filled, the query
//! written, the header parameters and the JSON body, each by the parameter's `style` and
//! `explode` (OpenAPI's serialisation rules). Every value is percent-encoded where it
//! goes, its own commas and pipes too, so that the delimiters between values stay
//! literal and unambiguous; a path segment that would read `.` or `..` is refused, so
//! that a caller cannot walk the service's paths out of the operation's.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::mapping::{Location, Operation, Parameter, Style};
use super::percent::component;

/// An operation's request, but for the base URL it is sent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The path, filled and encoded, starting with `/`.
    pub path: String,
    /// The query, encoded, without its `?`; empty for none.
    pub query: String,
    /// Header parameters, by name as the service knows them.
    pub headers: Vec<(String, String)>,
    /// The JSON body, when the operation takes one and the caller gave it.
    pub body: Option<Vec<u8>>,
}

/// Builds `operation`'s request from `arguments`, already validated against its input
/// schema; `Err` says why a value cannot be sent as given. `sent_query` is the query
/// parameter Bondry adds itself (`auth`'s key), which no argument may write.
pub fn build(operation: &Operation, arguments: &Map<String, Value>, sent_query: Option<&str>) -> Result<Built, String> {
    // The names an exploded object's members would shadow: the operation's own query
    // parameters, and the key.
    let taken: Vec<&str> = operation
        .parameters
        .iter()
        .filter(|parameter| parameter.location == Location::Query)
        .map(|parameter| parameter.name.as_str())
        .chain(sent_query)
        .collect();
    let mut path = operation.path.clone();
    let mut query = String::new();
    let mut headers = Vec::new();
    for parameter in &operation.parameters {
        let value = match arguments.get(&parameter.argument) {
            None | Some(Value::Null) if parameter.location == Location::Path => {
                return Err(format!("the path parameter {:?} is missing", parameter.argument));
            }
            None | Some(Value::Null) => continue,
            Some(value) => value,
        };
        match parameter.location {
            Location::Path => {
                let filled = path_value(parameter, value)?;
                path = path.replace(&format!("{{{}}}", parameter.name), &filled);
            }
            Location::Query => query_value(parameter, value, &taken, &mut query)?,
            Location::Header => {
                let text = delimited(value, ",", parameter.explode, &|text| text.to_owned())?;
                if text.chars().any(char::is_control) {
                    return Err(format!("the header parameter {:?} holds a control character", parameter.argument));
                }
                headers.push((parameter.name.clone(), text));
            }
        }
    }
    let body = match (operation.body, arguments.get("body")) {
        (Some(_), Some(body)) => Some(serde_json::to_vec(body).map_err(|error| error.to_string())?),
        _ => None,
    };
    Ok(Built { path, query, headers, body })
}

/// A path parameter's text, encoded, by its style.
fn path_value(parameter: &Parameter, value: &Value) -> Result<String, String> {
    let encode = component;
    let explode = parameter.explode;
    let name = encode(&parameter.name);
    let filled = match parameter.style {
        Style::Label => {
            let separator = if explode { "." } else { "," };
            format!(".{}", delimited(value, separator, explode, &encode)?)
        }
        Style::Matrix => match value {
            Value::Array(items) if explode => items
                .iter()
                .map(|item| Ok(format!(";{name}={}", encode(&scalar(item)?))))
                .collect::<Result<String, String>>()?,
            Value::Object(members) if explode => members
                .iter()
                .map(|(key, item)| Ok(format!(";{}={}", encode(key), encode(&scalar(item)?))))
                .collect::<Result<String, String>>()?,
            _ => format!(";{name}={}", delimited(value, ",", false, &encode)?),
        },
        _ => delimited(value, ",", explode, &encode)?,
    };
    // Dots are unreserved, so they reach the service as written: a piece of one or two
    // would climb out of the operation's path, and so would one reading so once a server
    // decodes `%2F` or `%5C` before routing: every raw piece is checked, split there too.
    let climbs = pieces(value).iter().any(|piece| piece.split(['/', '\\']).any(|part| part == "." || part == ".."));
    if climbs || filled.is_empty() || filled == "." || filled == ".." {
        return Err(format!("the path parameter {:?} cannot be empty, \".\" or \"..\"", parameter.argument));
    }
    Ok(filled)
}

/// Appends a query parameter by its style to `query`.
fn query_value(parameter: &Parameter, value: &Value, taken: &[&str], query: &mut String) -> Result<(), String> {
    let encode = component;
    let name = encode(&parameter.name);
    let mut pair = |key: &str, text: &str| {
        if !query.is_empty() {
            query.push('&');
        }
        let _ = write!(query, "{key}={text}");
    };
    match (parameter.style, value) {
        (Style::DeepObject, Value::Object(members)) => {
            for (key, item) in members {
                pair(&format!("{name}[{}]", encode(key)), &encode(&scalar(item)?));
            }
        }
        (Style::DeepObject, _) => {
            return Err(format!("the deepObject parameter {:?} must be an object", parameter.argument));
        }
        (_, Value::Array(items)) if parameter.explode => {
            for item in items {
                pair(&name, &encode(&scalar(item)?));
            }
        }
        (Style::Form, Value::Object(members)) if parameter.explode => {
            if let Some(key) = members.keys().find(|key| taken.contains(&key.as_str())) {
                let argument = &parameter.argument;
                return Err(format!("the member {key:?} of {argument:?} would be another query parameter"));
            }
            for (key, item) in members {
                pair(&encode(key), &encode(&scalar(item)?));
            }
        }
        (Style::SpaceDelimited, Value::Array(_)) => pair(&name, &delimited(value, "%20", false, &encode)?),
        (Style::PipeDelimited, Value::Array(_)) => pair(&name, &delimited(value, "|", false, &encode)?),
        _ => pair(&name, &delimited(value, ",", false, &encode)?),
    }
    Ok(())
}

/// A value as delimited text: a scalar as itself, an array's items joined by
/// `separator`, an object's members as `key,value` pairs (`key=value` when exploded),
/// each piece passed through `encode`.
fn delimited(value: &Value, separator: &str, explode: bool, encode: &dyn Fn(&str) -> String) -> Result<String, String> {
    Ok(match value {
        Value::Array(items) => {
            items.iter().map(|item| Ok(encode(&scalar(item)?))).collect::<Result<Vec<_>, String>>()?.join(separator)
        }
        Value::Object(members) => {
            let pairs = members.iter().map(|(key, item)| {
                let (key, item) = (encode(key), encode(&scalar(item)?));
                Ok(if explode { format!("{key}={item}") } else { format!("{key}{separator}{item}") })
            });
            pairs.collect::<Result<Vec<_>, String>>()?.join(separator)
        }
        scalar_value => encode(&scalar(scalar_value)?),
    })
}

/// A value's raw pieces as text: a scalar, an array's items, an object's keys and values.
fn pieces(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(|item| scalar(item).ok()).collect(),
        Value::Object(members) => {
            members.iter().flat_map(|(key, item)| [Some(key.clone()), scalar(item).ok()]).flatten().collect()
        }
        scalar_value => scalar(scalar_value).ok().into_iter().collect(),
    }
}

/// A scalar as text: a string as itself, a number or boolean as JSON writes it.
fn scalar(value: &Value) -> Result<String, String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        Value::Null => Ok(String::new()),
        Value::Array(_) | Value::Object(_) => Err("a parameter's items and members must be scalars".into()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::openapi::mapping::{self, Options};

    /// The one operation of a document with `parameters` on `GET path`.
    fn operation(path: &str, parameters: Value, body: bool) -> Operation {
        let mut get = json!({"operationId": "op", "parameters": parameters, "responses": {}});
        if body {
            get["requestBody"] = json!({"content": {"application/json": {"schema": {"type": "object"}}}});
        }
        let document = json!({"openapi": "3.1.0", "paths": {path: {"post": get}}});
        mapping::map(&document, &Options::default()).unwrap().operations.remove(0)
    }

    fn query(style: &str, explode: bool, value: Value) -> String {
        let parameters = json!([{"name": "color", "in": "query", "style": style, "explode": explode}]);
        let arguments = Map::from_iter([("color".to_owned(), value)]);
        build(&operation("/p", parameters, false), &arguments, None).unwrap().query
    }

    #[test]
    fn query_parameters_are_written_by_style_and_explode() {
        let blue = json!("blue");
        let colors = json!(["blue", "black", "brown"]);
        let rgb = json!({"R": 100, "G": 200, "B": 150});
        let cases = [
            ("form", true, blue.clone(), "color=blue"),
            ("form", false, blue, "color=blue"),
            ("form", true, colors.clone(), "color=blue&color=black&color=brown"),
            ("form", false, colors.clone(), "color=blue,black,brown"),
            ("form", true, rgb.clone(), "R=100&G=200&B=150"),
            ("form", false, rgb.clone(), "color=R,100,G,200,B,150"),
            ("spaceDelimited", false, colors.clone(), "color=blue%20black%20brown"),
            ("spaceDelimited", true, colors.clone(), "color=blue&color=black&color=brown"),
            ("pipeDelimited", false, colors.clone(), "color=blue|black|brown"),
            ("pipeDelimited", true, colors, "color=blue&color=black&color=brown"),
            ("deepObject", true, rgb, "color[R]=100&color[G]=200&color[B]=150"),
            ("form", false, json!(["a,b", "c"]), "color=a%2Cb,c"),
            ("form", true, json!("a b&c=d/é"), "color=a%20b%26c%3Dd%2F%C3%A9"),
            ("form", true, json!(true), "color=true"),
        ];
        for (style, explode, value, expected) in cases {
            assert_eq!(query(style, explode, value.clone()), expected, "{style} explode={explode} {value}");
        }
    }

    #[test]
    fn an_exploded_object_never_writes_another_query_parameter() {
        let parameters = json!([{"name": "filter", "in": "query", "style": "form", "explode": true}, {"name": "page", "in": "query"}]);
        let operation = operation("/p", parameters, false);
        for shadow in ["key", "page"] {
            let arguments = Map::from_iter([("filter".to_owned(), json!({shadow: "x"}))]);
            assert_eq!(
                build(&operation, &arguments, Some("key")),
                Err(format!("the member {shadow:?} of \"filter\" would be another query parameter"))
            );
        }
    }

    #[test]
    fn path_parameters_are_filled_encoded_and_never_climb() {
        let path = |style: &str, explode: bool, value: Value| {
            let parameters = json!([{"name": "id", "in": "path", "style": style, "explode": explode}]);
            let arguments = Map::from_iter([("id".to_owned(), value)]);
            build(&operation("/pets/{id}/tags", parameters, false), &arguments, None).map(|built| built.path)
        };
        assert_eq!(path("simple", false, json!(5)), Ok("/pets/5/tags".into()));
        assert_eq!(path("simple", false, json!("a/b?c#d%")), Ok("/pets/a%2Fb%3Fc%23d%25/tags".into()));
        assert_eq!(path("simple", false, json!([3, 4, 5])), Ok("/pets/3,4,5/tags".into()));
        assert_eq!(
            path("simple", true, json!({"role": "admin", "name": "alex"})),
            Ok("/pets/role=admin,name=alex/tags".into())
        );
        assert_eq!(path("label", false, json!([3, 4])), Ok("/pets/.3,4/tags".into()));
        assert_eq!(path("label", true, json!([3, 4])), Ok("/pets/.3.4/tags".into()));
        assert_eq!(path("matrix", false, json!(5)), Ok("/pets/;id=5/tags".into()));
        assert_eq!(path("matrix", true, json!([3, 4])), Ok("/pets/;id=3;id=4/tags".into()));
        for climbing in [
            json!(".."),
            json!("."),
            json!(""),
            json!(["a", ".."]),
            json!("../../admin"),
            json!("..\\x"),
            json!({"..": "a"}),
        ] {
            assert_eq!(
                path("simple", false, climbing.clone()),
                Err("the path parameter \"id\" cannot be empty, \".\" or \"..\"".into()),
                "{climbing}"
            );
        }
        assert_eq!(path("simple", false, json!("...")), Ok("/pets/.../tags".into()), "three dots climb nothing");
    }

    #[test]
    fn headers_and_the_body_travel_as_given() {
        let parameters = json!([
            {"name": "X-Ids", "in": "header"},
            {"name": "X-Skip", "in": "header"},
            {"name": "X-Bad", "in": "header"}
        ]);
        let operation = operation("/p", parameters, true);
        let arguments =
            Map::from_iter([("X-Ids".to_owned(), json!([1, 2])), ("body".to_owned(), json!({"name": "Rex"}))]);
        let built = build(&operation, &arguments, None).unwrap();
        assert_eq!(built.headers, [("X-Ids".to_owned(), "1,2".to_owned())]);
        assert_eq!(built.body.as_deref(), Some(br#"{"name":"Rex"}"#.as_slice()));
        assert_eq!(built.query, "");
        let arguments = Map::from_iter([("X-Bad".to_owned(), json!("a\r\nInjected: 1"))]);
        assert_eq!(
            build(&operation, &arguments, None),
            Err("the header parameter \"X-Bad\" holds a control character".into())
        );
    }
}
