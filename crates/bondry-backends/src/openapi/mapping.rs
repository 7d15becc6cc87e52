//! A document's operations as tools: which become tools, and each one's name, texts,
//! input and output schemas and hints; every operation left out is listed with why.
//!
//! A tool's arguments are the operation's path, query and header parameters by name (a
//! name two locations share: the path's keeps it, a query's gains `_in_query`, a
//! header's `_in_header`), and `body` for a JSON request body. A parameter Bondry sends
//! itself (`auth`'s, a `headers_from` header) is left out of the arguments; one it may
//! never send (a cookie, `Host`, `Content-Length`, `Transfer-Encoding`, `Connection`,
//! `Cookie`, `Authorization` unless `auth` sends it) is left out when optional and makes
//! the operation unservable when required.

use std::collections::HashMap;

use bondry_catalogue::glob::NameGlob;
use bondry_core::capability::Annotations;
use serde_json::{Map, Value, json};

use super::refs;
use super::schema::{Converter, Dialect};

/// The operations of a path item, in the order OpenAPI lists them.
const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Headers no parameter may set: the connection's own, the hop-by-hop ones, and the
/// cookie jar's.
const NEVER_SENT: [&str; 12] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "cookie",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
];

/// Header parameters OpenAPI says are ignored: the request's own media types say them.
const IGNORED: [&str; 2] = ["accept", "content-type"];

/// The most operations one document is served with: GitHub's REST description, among
/// the largest, has 1,223.
pub const MAX_OPERATIONS: usize = 4096;

/// The most the served operations' schemas may come to, written as JSON, each with its
/// own copy of the shared schemas it uses: GitHub's REST description comes to 5.3 MB.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024 * 1024;

/// Where a parameter travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Path,
    Query,
    Header,
}

impl Location {
    fn suffix(self) -> &'static str {
        match self {
            Self::Path => "_in_path",
            Self::Query => "_in_query",
            Self::Header => "_in_header",
        }
    }
}

/// How a parameter's value is written (OpenAPI's `style`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Simple,
    Label,
    Matrix,
    Form,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

/// One parameter of an operation, as a call fills it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// Its name at the service.
    pub name: String,
    /// Its name among the tool's arguments.
    pub argument: String,
    pub location: Location,
    pub style: Style,
    pub explode: bool,
    pub required: bool,
}

/// An operation served as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// What the tool is named from: the `operationId`, else `<method>_<path>`.
    pub name: String,
    /// Uppercase, as sent.
    pub method: String,
    /// The path template, as written in the document.
    pub path: String,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Annotations,
    pub parameters: Vec<Parameter>,
    /// Whether it takes a JSON body, and whether the body is required.
    pub body: Option<bool>,
    /// What was left out of it, and why (for `bondry check`).
    pub left_out: Vec<String>,
}

/// An operation that is not served, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `METHOD path` and its `operationId` when it has one.
    pub operation: String,
    pub why: String,
}

/// What shapes the mapping: which operations are wanted, and what Bondry sends itself.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Globs over operation names; `exclude` wins over `include`. Empty `include`: all.
    pub include: Vec<NameGlob>,
    pub exclude: Vec<NameGlob>,
    /// Headers Bondry sends itself (`headers_from`, `auth`'s), lowercase.
    pub sent_headers: Vec<String>,
    /// The query parameter `auth` sends, if it sends one.
    pub sent_query: Option<String>,
    /// Whether `auth` sends a bearer token: an operation that accepts only OAuth 2 or
    /// OpenID Connect is served with it, as the token they would be given.
    pub bearer: bool,
}

/// A document mapped: its dialect, the operations served, and those that are not.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    pub dialect: Dialect,
    pub operations: Vec<Operation>,
    pub skipped: Vec<Skipped>,
}

/// Maps `document` (read by [`super::document::read`]); `Err` when it is no OpenAPI
/// 3.0 or 3.1 document or a `$ref` in it is not followed.
pub fn map(document: &Value, options: &Options) -> Result<Mapped, String> {
    let dialect = match document.get("openapi").and_then(Value::as_str) {
        Some(version) if version.starts_with("3.0.") => Dialect::OpenApi30,
        Some(version) if version.starts_with("3.1.") => Dialect::OpenApi31,
        Some(version) => return Err(format!("openapi {version:?}: Bondry reads OpenAPI 3.0.x and 3.1.x documents")),
        None => return Err("the document has no \"openapi\" version: is it an OpenAPI document?".into()),
    };
    refs::check(document).map_err(|error| error.to_string())?;
    let mut mapped = Mapped { dialect, operations: Vec::new(), skipped: Vec::new() };
    let mut schema_bytes = 0;
    let Some(paths) = document.get("paths") else { return Ok(mapped) };
    let paths = paths.as_object().ok_or("\"paths\" must be an object")?;
    for (path, item) in paths {
        // `x-` extensions and anything else that is no path.
        if !path.starts_with('/') {
            continue;
        }
        let item = followed(document, item).and_then(|item| item.as_object().ok_or("a path item must be an object"));
        let item = item.map_err(|why| format!("paths.{path:?}: {why}"))?;
        for method in METHODS {
            let Some(operation) = item.get(method) else { continue };
            let upper = method.to_ascii_uppercase();
            let id = operation.get("operationId").and_then(Value::as_str);
            let name = id.map_or_else(|| format!("{method}_{path}"), str::to_owned);
            let label = match id {
                Some(id) => format!("{upper} {path} ({id})"),
                None => format!("{upper} {path}"),
            };
            let wanted = options.include.is_empty() || options.include.iter().any(|glob| glob.matches(&name));
            if !wanted || options.exclude.iter().any(|glob| glob.matches(&name)) {
                continue;
            }
            if mapped.operations.len() + mapped.skipped.len() >= MAX_OPERATIONS {
                return Err(format!("the document has over {MAX_OPERATIONS} operations; serve a part with include"));
            }
            let context = Context { document, dialect, options, item };
            match context.operation(operation, name, upper, path) {
                Ok(operation) => {
                    // Each operation holds its own copy of the shared schemas it reaches:
                    // a document reaching a large one from every operation is refused
                    // before its copies fill the memory.
                    schema_bytes += written_size(&operation.input_schema);
                    schema_bytes += operation.output_schema.as_ref().map_or(0, written_size);
                    if schema_bytes > MAX_SCHEMA_BYTES {
                        return Err(format!(
                            "its operations' schemas, each with the shared schemas it uses, come to over {MAX_SCHEMA_BYTES} bytes (64 MiB); serve a part with include"
                        ));
                    }
                    mapped.operations.push(operation);
                }
                Err(why) => mapped.skipped.push(Skipped { operation: label, why }),
            }
        }
    }
    Ok(mapped)
}

/// Whether the written part of a path template (all but its `{variables}`) is a URL path
/// as it stands: each character one a path may hold (RFC 3986's `pchar`, a `%XX` escape),
/// no segment `.` or `..` (which would climb out of `base_url`'s path), and every `{`
/// closed. A variable's value is encoded when the request is written.
fn literal_path(path: &str) -> Result<(), String> {
    let refused = |why: &str| Err(format!("its path {path:?} {why}"));
    for segment in path.split('/').skip(1) {
        if segment == "." || segment == ".." {
            return refused("has a . or .. segment, which would climb out of base_url's path");
        }
        let mut rest = segment;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('{') {
                let Some((_, after)) = after.split_once('}') else { return refused("has a { never closed") };
                rest = after;
                continue;
            }
            let literal_end = rest.find('{').unwrap_or(rest.len());
            let (literal, after) = rest.split_at(literal_end);
            let bytes = literal.as_bytes();
            let mut at = 0;
            while at < bytes.len() {
                let byte = bytes[at];
                let escape =
                    byte == b'%' && bytes.get(at + 1..at + 3).is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit));
                let plain = byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&byte);
                if !plain && !escape {
                    return refused("holds a character a URL path cannot hold as it stands; write it %-escaped");
                }
                at += if escape { 3 } else { 1 };
            }
            rest = after;
        }
    }
    Ok(())
}

/// How many bytes `value` is written as JSON, counted without writing it.
fn written_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The value `value` stands for: itself, or what its `$ref` points to (refs are checked
/// before mapping, so one that does not resolve is a chain of refs gone wrong).
fn followed<'a>(document: &'a Value, mut value: &'a Value) -> Result<&'a Value, &'static str> {
    // A chain of references, bounded: a ref to a ref to itself would never end.
    for _ in 0..16 {
        match value.get("$ref").and_then(Value::as_str) {
            Some(reference) => value = refs::resolve(document, reference)?,
            None => return Ok(value),
        }
    }
    Err("a chain of more than 16 $refs")
}

/// What one operation is mapped within.
struct Context<'a> {
    document: &'a Value,
    dialect: Dialect,
    options: &'a Options,
    /// The path item it belongs to (its shared parameters).
    item: &'a Map<String, Value>,
}

impl Context<'_> {
    fn operation(&self, operation: &Value, name: String, method: String, path: &str) -> Result<Operation, String> {
        let operation = operation.as_object().ok_or("it is not an object")?;
        if operation.get("callbacks").and_then(Value::as_object).is_some_and(|callbacks| !callbacks.is_empty()) {
            return Err("it has callbacks, which a tool cannot receive".into());
        }
        if !self.options.bearer && self.oauth_only(operation) {
            return Err(
                "it accepts only OAuth 2 or OpenID Connect tokens; give the entry auth = { scheme = \"bearer\", value_env = \"…\" } holding one to serve it".into(),
            );
        }
        let mut converter = Converter::new(self.document, self.dialect);
        let mut left_out = Vec::new();
        let mut described_parameters = Vec::new();
        for raw in self.parameters(operation)? {
            if let Some(parameter) = self.parameter(raw, &mut converter, &mut left_out)? {
                described_parameters.push(parameter);
            }
        }
        let body = match operation.get("requestBody") {
            None => None,
            Some(body) => {
                let body = followed(self.document, body)?;
                let is_required = body.get("required").and_then(Value::as_bool).unwrap_or(false);
                let schema = json_schema(body.get("content"))
                    .map_err(|types| format!("its request body is {types}, not JSON"))?;
                let schema = converter.convert(schema.unwrap_or(&Value::Bool(true)))?;
                Some((is_required, described(schema, body.get("description"))))
            }
        };
        arguments_named(&mut described_parameters, body.is_some());
        literal_path(path)?;
        for variable in path.split('{').skip(1).filter_map(|rest| rest.split_once('}').map(|(name, _)| name)) {
            if !described_parameters.iter().any(|(p, _)| p.location == Location::Path && p.name == variable) {
                return Err(format!("its path names {{{variable}}}, which no path parameter fills"));
            }
        }
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut parameters = Vec::with_capacity(described_parameters.len());
        for (parameter, schema) in described_parameters {
            if parameter.required {
                required.push(Value::String(parameter.argument.clone()));
            }
            if properties.insert(parameter.argument.clone(), schema).is_some() {
                return Err(format!("two of its parameters are both the argument {:?}", parameter.argument));
            }
            parameters.push(parameter);
        }
        let body = body.map(|(is_required, schema)| {
            properties.insert("body".into(), schema);
            if is_required {
                required.push(json!("body"));
            }
            is_required
        });
        let output_schema = self.output(operation)?;
        let mut input_schema = json!({"type": "object", "properties": properties, "additionalProperties": false});
        if !required.is_empty() {
            input_schema["required"] = Value::Array(required);
        }
        if let Some(defs) = converter.defs()? {
            input_schema["$defs"] = defs;
        }
        let text =
            |key: &str| operation.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty());
        Ok(Operation {
            annotations: hints(&method),
            name,
            method,
            path: path.to_owned(),
            summary: text("summary").map(str::to_owned),
            description: text("description").map(str::to_owned),
            input_schema,
            output_schema,
            parameters,
            body,
            left_out,
        })
    }

    /// Whether every way the operation accepts is OAuth 2 or OpenID Connect.
    fn oauth_only(&self, operation: &Map<String, Value>) -> bool {
        let requirements = operation.get("security").or_else(|| self.document.get("security"));
        let Some(requirements) = requirements.and_then(Value::as_array).filter(|list| !list.is_empty()) else {
            return false;
        };
        let schemes = self.document.pointer("/components/securitySchemes");
        requirements.iter().all(|requirement| {
            let names = requirement.as_object().map(|names| names.keys().collect::<Vec<_>>()).unwrap_or_default();
            // `{}` makes the operation open to callers without credentials.
            !names.is_empty()
                && names.iter().all(|name| {
                    let scheme = schemes.and_then(|schemes| schemes.get(name.as_str()));
                    let scheme = scheme.and_then(|scheme| followed(self.document, scheme).ok());
                    matches!(
                        scheme.and_then(|s| s.get("type")).and_then(Value::as_str),
                        Some("oauth2" | "openIdConnect")
                    )
                })
        })
    }

    /// The path item's parameters, then the operation's: one of the operation's replaces
    /// the path item's of the same name and location.
    fn parameters<'b>(&'b self, operation: &'b Map<String, Value>) -> Result<Vec<&'b Value>, String> {
        let mut all: Vec<Option<&Value>> = Vec::new();
        let mut at: HashMap<(Option<&str>, Option<&str>), usize> = HashMap::new();
        for list in [self.item.get("parameters"), operation.get("parameters")].into_iter().flatten() {
            let list = list.as_array().ok_or("its parameters must be an array")?;
            for parameter in list {
                let parameter = followed(self.document, parameter)?;
                let key = (parameter.get("name").and_then(Value::as_str), parameter.get("in").and_then(Value::as_str));
                if let Some(earlier) = at.insert(key, all.len()) {
                    all[earlier] = None;
                }
                all.push(Some(parameter));
            }
        }
        Ok(all.into_iter().flatten().collect())
    }

    /// One parameter and its argument's schema; `None` when it is left out.
    fn parameter(
        &self,
        raw: &Value,
        converter: &mut Converter<'_>,
        left_out: &mut Vec<String>,
    ) -> Result<Option<(Parameter, Value)>, String> {
        let name = raw.get("name").and_then(Value::as_str).ok_or("a parameter has no name")?;
        let place = raw.get("in").and_then(Value::as_str).unwrap_or_default();
        let required = raw.get("required").and_then(Value::as_bool).unwrap_or(false) || place == "path";
        let lower = name.to_ascii_lowercase();
        let location = match place {
            "path" => Location::Path,
            "query" if self.options.sent_query.as_deref() == Some(name) => {
                left_out.push(format!("query parameter {name:?}: Bondry sends it (auth)"));
                return Ok(None);
            }
            "query" => Location::Query,
            "header" if IGNORED.contains(&lower.as_str()) => {
                left_out.push(format!("header parameter {name:?}: OpenAPI ignores it"));
                return Ok(None);
            }
            "header" if self.options.sent_headers.contains(&lower) => {
                left_out.push(format!("header parameter {name:?}: Bondry sends it"));
                return Ok(None);
            }
            "header" if NEVER_SENT.contains(&lower.as_str()) || lower == "authorization" => {
                return never_sent(format!("header parameter {name:?}"), required, left_out);
            }
            "header" if http::HeaderName::from_bytes(name.as_bytes()).is_err() => {
                return Err(format!("its header parameter {name:?} is not a valid header name"));
            }
            "header" => Location::Header,
            "cookie" => return never_sent(format!("cookie parameter {name:?}"), required, left_out),
            other => return Err(format!("its parameter {name:?} is in {other:?}, not path, query, header or cookie")),
        };
        let default_style = match location {
            Location::Query => Style::Form,
            Location::Path | Location::Header => Style::Simple,
        };
        let style = match raw.get("style").and_then(Value::as_str) {
            None => default_style,
            Some(style) => match (location, style) {
                (Location::Path | Location::Header, "simple") => Style::Simple,
                (Location::Path, "label") => Style::Label,
                (Location::Path, "matrix") => Style::Matrix,
                (Location::Query, "form") => Style::Form,
                (Location::Query, "spaceDelimited") => Style::SpaceDelimited,
                (Location::Query, "pipeDelimited") => Style::PipeDelimited,
                (Location::Query, "deepObject") => Style::DeepObject,
                _ => {
                    return Err(format!("its parameter {name:?} has style {style:?}, which {place} parameters cannot"));
                }
            },
        };
        let explode = raw.get("explode").and_then(Value::as_bool).unwrap_or(style == Style::Form);
        let schema = match (raw.get("schema"), raw.get("content")) {
            (Some(schema), _) => converter.convert(schema)?,
            (None, Some(_)) => return Err(format!("its parameter {name:?} is described by content, not a schema")),
            (None, None) => Value::Bool(true),
        };
        let mut schema = described(schema, raw.get("description"));
        if raw.get("deprecated") == Some(&Value::Bool(true))
            && let Value::Object(members) = &mut schema
        {
            members.insert("deprecated".into(), Value::Bool(true));
        }
        let parameter =
            Parameter { name: name.to_owned(), argument: name.to_owned(), location, style, explode, required };
        Ok(Some((parameter, schema)))
    }

    /// The schema of the operation's 2xx JSON answer, when it lists one 2xx answer only
    /// and that answer's root is an object: converted with shared schemas of its own
    /// (`$defs` beside it), its root stated an object. With two (201 and 204, say), every
    /// success would be held to the one schema, and a tool with an output schema must
    /// answer structured content that meets it: such an operation has none.
    fn output(&self, operation: &Map<String, Value>) -> Result<Option<Value>, String> {
        let Some(responses) = operation.get("responses").and_then(Value::as_object) else { return Ok(None) };
        let codes: Vec<&String> = responses.keys().filter(|code| code.len() == 3 && code.starts_with('2')).collect();
        if codes.len() != 1 {
            return Ok(None);
        }
        for code in codes {
            let response = followed(self.document, &responses[code.as_str()])?;
            let Ok(Some(schema)) = json_schema(response.get("content")) else { continue };
            let root = followed(self.document, schema)?;
            if root.get("type").and_then(Value::as_str) != Some("object") {
                return Ok(None);
            }
            let mut converter = Converter::new(self.document, self.dialect);
            let Value::Object(mut converted) = converter.convert(schema)? else { return Ok(None) };
            // An object, never null: what a tool's output schema must be.
            converted.insert("type".into(), json!("object"));
            if let Some(defs) = converter.defs()? {
                converted.insert("$defs".into(), defs);
            }
            return Ok(Some(Value::Object(converted)));
        }
        Ok(None)
    }
}

/// Left out when optional; the operation cannot be served when required.
fn never_sent(what: String, required: bool, left_out: &mut Vec<String>) -> Result<Option<(Parameter, Value)>, String> {
    match required {
        true => Err(format!("its required {what} is one Bondry never sends")),
        false => {
            left_out.push(format!("{what}: Bondry never sends it"));
            Ok(None)
        }
    }
}

/// The JSON media type's schema in `content` (`None` for one without a schema); `Err`
/// with the media types there are when none is JSON.
fn json_schema(content: Option<&Value>) -> Result<Option<&Value>, String> {
    let Some(content) = content.and_then(Value::as_object).filter(|content| !content.is_empty()) else {
        return Ok(None);
    };
    let json = content.iter().find(|(media, _)| super::answer::is_json(Some(media)));
    match json {
        Some((_, media)) => Ok(media.get("schema")),
        None => Err(content.keys().map(String::as_str).collect::<Vec<_>>().join(", ")),
    }
}

/// `schema` with `description` when it has none of its own.
fn described(schema: Value, description: Option<&Value>) -> Value {
    match (schema, description.and_then(Value::as_str)) {
        (Value::Object(mut members), Some(text)) if !members.contains_key("description") => {
            members.insert("description".into(), Value::String(text.to_owned()));
            Value::Object(members)
        }
        (schema, _) => schema,
    }
}

/// Names each parameter's argument: a name two locations share keeps the path's (then
/// the query's), the others gain their location's suffix; `body` is the request body's
/// alone.
fn arguments_named(parameters: &mut [(Parameter, Value)], has_body: bool) {
    let rank = |location: Location| match location {
        Location::Path => 0,
        Location::Query => 1,
        Location::Header => 2,
    };
    // Each name's best-placed location.
    let mut first: HashMap<String, u8> = HashMap::new();
    for (parameter, _) in parameters.iter() {
        let best = first.entry(parameter.name.clone()).or_insert(u8::MAX);
        *best = (*best).min(rank(parameter.location));
    }
    for (parameter, _) in parameters.iter_mut() {
        let outranked = first.get(&parameter.name).is_some_and(|best| *best < rank(parameter.location));
        if outranked || (has_body && parameter.name == "body") {
            parameter.argument = format!("{}{}", parameter.name, parameter.location.suffix());
        }
    }
}

/// What the method says of an operation: reads do not change the service, DELETE
/// destroys, PUT and DELETE may be repeated.
fn hints(method: &str) -> Annotations {
    let read_only = matches!(method, "GET" | "HEAD" | "OPTIONS");
    Annotations {
        read_only: read_only.then_some(true),
        destructive: (method == "DELETE").then_some(true),
        idempotent: matches!(method, "PUT" | "DELETE").then_some(true),
        open_world: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn petstore() -> Value {
        json!({
            "openapi": "3.0.3",
            "security": [{"key": []}],
            "paths": {
                "/pets/{id}": {
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                    "get": {
                        "operationId": "getPet",
                        "summary": "One pet",
                        "parameters": [
                            {"name": "id", "in": "query", "schema": {"type": "string", "nullable": true}, "description": "a query id"},
                            {"name": "fields", "in": "query", "style": "pipeDelimited", "schema": {"type": "array", "items": {"type": "string"}}},
                            {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                            {"name": "session", "in": "cookie", "schema": {"type": "string"}}
                        ],
                        "responses": {"200": {"$ref": "#/components/responses/Pet"}}
                    },
                    "delete": {"responses": {"204": {"description": "gone"}}},
                    "put": {
                        "operationId": "putPet",
                        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                        "responses": {"200": {"content": {"application/json": {"schema": {"type": "array"}}}}}
                    }
                },
                "/pets": {
                    "post": {
                        "operationId": "upload",
                        "requestBody": {"content": {"multipart/form-data": {}}},
                        "responses": {}
                    },
                    "get": {
                        "operationId": "listPets",
                        "security": [{"oauth": []}],
                        "parameters": [{"name": "Host", "in": "header", "required": true, "schema": {"type": "string"}}],
                        "responses": {}
                    },
                    "patch": {
                        "operationId": "signed",
                        "security": [{"oauth": []}, {"openid": []}],
                        "responses": {}
                    }
                }
            },
            "components": {
                "schemas": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}, "tag": {"type": "string", "nullable": true}}}},
                "responses": {"Pet": {"description": "a pet", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}},
                "securitySchemes": {
                    "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
                    "oauth": {"type": "oauth2", "flows": {}},
                    "openid": {"type": "openIdConnect", "openIdConnectUrl": "https://example.com"}
                }
            }
        })
    }

    #[test]
    fn operations_become_tools_with_their_arguments_schemas_and_hints() {
        let mapped = map(&petstore(), &Options::default()).unwrap();
        assert_eq!(mapped.dialect, Dialect::OpenApi30);
        let names: Vec<_> = mapped.operations.iter().map(|o| (o.name.as_str(), o.method.as_str())).collect();
        assert_eq!(names, [("getPet", "GET"), ("putPet", "PUT"), ("delete_/pets/{id}", "DELETE")]);
        let get = &mapped.operations[0];
        assert_eq!(get.summary.as_deref(), Some("One pet"));
        assert_eq!(
            get.input_schema,
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "id_in_query": {"type": ["string", "null"], "description": "a query id"},
                    "fields": {"type": "array", "items": {"type": "string"}},
                    "X-Trace": {"type": "string"}
                },
                "additionalProperties": false,
                "required": ["id"]
            })
        );
        let pet =
            json!({"type": "object", "properties": {"name": {"type": "string"}, "tag": {"type": ["string", "null"]}}});
        assert_eq!(get.output_schema, Some(json!({"$ref": "#/$defs/Pet", "type": "object", "$defs": {"Pet": pet}})));
        let arguments: Vec<_> =
            get.parameters.iter().map(|p| (p.argument.as_str(), p.location, p.style, p.explode)).collect();
        assert_eq!(
            arguments,
            [
                ("id", Location::Path, Style::Simple, false),
                ("id_in_query", Location::Query, Style::Form, true),
                ("fields", Location::Query, Style::PipeDelimited, false),
                ("X-Trace", Location::Header, Style::Simple, false),
            ]
        );
        assert_eq!(get.left_out, ["cookie parameter \"session\": Bondry never sends it"]);
        assert_eq!(get.annotations, Annotations { read_only: Some(true), ..Annotations::default() });
        let put = &mapped.operations[1];
        assert_eq!(put.body, Some(true));
        assert_eq!(put.input_schema["required"], json!(["id", "body"]));
        assert_eq!(put.input_schema["properties"]["body"], json!({"$ref": "#/$defs/Pet"}));
        assert_eq!(put.output_schema, None, "an array root is no output schema");
        assert_eq!(put.annotations, Annotations { idempotent: Some(true), ..Annotations::default() });
        let delete = &mapped.operations[2];
        assert_eq!(
            delete.annotations,
            Annotations { destructive: Some(true), idempotent: Some(true), ..Annotations::default() }
        );
    }

    #[test]
    fn a_document_whose_copies_of_shared_schemas_would_fill_the_memory_is_refused() {
        let big: Map<String, Value> = (0..2000)
            .map(|i| (format!("p{i:04}"), json!({"type": "string", "description": "d".repeat(100)})))
            .collect();
        let reach = json!({"application/json": {"schema": {"$ref": "#/components/schemas/Big"}}});
        let paths: Map<String, Value> = (0..400)
            .map(|i| {
                (
                    format!("/o{i}"),
                    json!({"post": {"requestBody": {"content": reach}, "responses": {"200": {"content": reach}}}}),
                )
            })
            .collect();
        let document = json!({"openapi": "3.1.0", "paths": paths, "components": {"schemas": {"Big": {"type": "object", "properties": big}}}});
        let refused = map(&document, &Options::default()).unwrap_err();
        assert!(
            refused.starts_with("its operations' schemas, each with the shared schemas it uses, come to over"),
            "{refused}"
        );
    }

    #[test]
    fn a_path_is_a_url_path_as_written() {
        assert_eq!(literal_path("/pets/{id}/tags.{format}"), Ok(()));
        assert_eq!(literal_path("/a%20b/{x}{y}/~me@x:1"), Ok(()));
        let refused = |path: &str| literal_path(path).unwrap_err();
        assert_eq!(
            refused("/m  s"),
            "its path \"/m  s\" holds a character a URL path cannot hold as it stands; write it %-escaped"
        );
        assert_eq!(
            refused("/a/../admin"),
            "its path \"/a/../admin\" has a . or .. segment, which would climb out of base_url's path"
        );
        assert_eq!(
            refused("/a/./b"),
            "its path \"/a/./b\" has a . or .. segment, which would climb out of base_url's path"
        );
        assert!(refused("/a?b").contains("cannot hold"));
        assert!(refused("/a#b").contains("cannot hold"));
        assert!(refused("/a%2").contains("cannot hold"));
        assert!(refused("/é").contains("cannot hold"));
        assert_eq!(refused("/a/{id"), "its path \"/a/{id\" has a { never closed");
    }

    #[test]
    fn an_output_schema_only_where_one_success_is_listed() {
        let object = json!({"application/json": {"schema": {"type": "object"}}});
        let document = json!({"openapi": "3.1.0", "paths": {
            "/one": {"post": {"operationId": "one", "responses": {"201": {"content": object}, "400": {}}}},
            "/two": {"post": {"operationId": "two", "responses": {"201": {"content": object}, "204": {}}}}
        }});
        let mapped = map(&document, &Options::default()).unwrap();
        assert_eq!(mapped.operations[0].output_schema, Some(json!({"type": "object"})));
        assert_eq!(mapped.operations[1].output_schema, None, "a 204 would fail the 201's schema");
    }

    #[test]
    fn operations_that_cannot_be_served_are_listed_with_why() {
        let mapped = map(&petstore(), &Options::default()).unwrap();
        let skipped: Vec<_> = mapped.skipped.iter().map(|s| format!("{}: {}", s.operation, s.why)).collect();
        assert_eq!(
            skipped,
            [
                "GET /pets (listPets): it accepts only OAuth 2 or OpenID Connect tokens; give the entry auth = { scheme = \"bearer\", value_env = \"…\" } holding one to serve it",
                "POST /pets (upload): its request body is multipart/form-data, not JSON",
                "PATCH /pets (signed): it accepts only OAuth 2 or OpenID Connect tokens; give the entry auth = { scheme = \"bearer\", value_env = \"…\" } holding one to serve it",
            ]
        );
        let with_token = map(&petstore(), &Options { bearer: true, ..Options::default() }).unwrap();
        let skipped: Vec<_> = with_token.skipped.iter().map(|s| format!("{}: {}", s.operation, s.why)).collect();
        assert_eq!(
            skipped,
            [
                "GET /pets (listPets): its required header parameter \"Host\" is one Bondry never sends",
                "POST /pets (upload): its request body is multipart/form-data, not JSON",
            ],
            "a bearer token is what OAuth 2 gives"
        );
    }

    #[test]
    fn globs_pick_operations_and_what_bondry_sends_is_no_argument() {
        let options = Options {
            include: vec![NameGlob::new("*Pet")],
            exclude: vec![NameGlob::new("put*")],
            sent_headers: vec!["x-trace".into()],
            sent_query: Some("fields".into()),
            bearer: false,
        };
        let mapped = map(&petstore(), &options).unwrap();
        assert_eq!(mapped.operations.len(), 1);
        assert_eq!(
            mapped.operations[0].left_out,
            [
                "query parameter \"fields\": Bondry sends it (auth)",
                "header parameter \"X-Trace\": Bondry sends it",
                "cookie parameter \"session\": Bondry never sends it",
            ]
        );
        assert!(mapped.skipped.is_empty(), "excluded operations are not skipped ones");
    }

    #[test]
    fn headers_openapi_ignores_paths_without_their_parameters_and_extensions() {
        let document = json!({"openapi": "3.1.0", "paths": {
            "x-internal": true,
            "/a": {"get": {"operationId": "a", "parameters": [
                {"name": "Accept", "in": "header"},
                {"name": "Upgrade", "in": "header"}
            ]}},
            "/b/{id}": {"get": {"operationId": "b"}},
            "/c": {"get": {"operationId": "c", "parameters": [{"name": "X Bad", "in": "header"}]}}
        }});
        let mapped = map(&document, &Options::default()).unwrap();
        assert_eq!(
            mapped.operations[0].left_out,
            ["header parameter \"Accept\": OpenAPI ignores it", "header parameter \"Upgrade\": Bondry never sends it",]
        );
        let skipped: Vec<_> = mapped.skipped.iter().map(|s| s.why.as_str()).collect();
        assert_eq!(
            skipped,
            [
                "its path names {id}, which no path parameter fills",
                "its header parameter \"X Bad\" is not a valid header name",
            ]
        );
    }

    #[test]
    fn a_document_bondry_does_not_read_says_why() {
        assert_eq!(
            map(&json!({"swagger": "2.0"}), &Options::default()).unwrap_err(),
            "the document has no \"openapi\" version: is it an OpenAPI document?"
        );
        assert_eq!(
            map(&json!({"openapi": "3.2.0"}), &Options::default()).unwrap_err(),
            "openapi \"3.2.0\": Bondry reads OpenAPI 3.0.x and 3.1.x documents"
        );
        let remote = json!({"openapi": "3.1.0", "paths": {"/a": {"$ref": "https://example.com/a.json"}}});
        assert_eq!(
            map(&remote, &Options::default()).unwrap_err(),
            "$ref \"https://example.com/a.json\" at #/paths/~1a: only references into the same document (\"#/...\") are followed"
        );
        let required_host = json!({"openapi": "3.1.0", "paths": {"/a": {"get": {"parameters": [{"name": "Authorization", "in": "header", "required": true}]}}}});
        let mapped = map(&required_host, &Options::default()).unwrap();
        assert_eq!(mapped.skipped[0].why, "its required header parameter \"Authorization\" is one Bondry never sends");
    }
}
