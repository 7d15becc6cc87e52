//! An operation as a tool's handler: its request built from the arguments, sent to the
//! document's `base_url` with the entry's headers and `auth` through the realm's pooled
//! client, within the entry's timeout and concurrency, and its answer read back.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bondry_core::BoxFuture;
use bondry_core::backend::BackendKind;
use bondry_core::capability::CapabilityKind;
use bondry_core::handler::{Answer, ContentBlock, Handler, HandlerRequest};
use bytes::Bytes;
use http::Method;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};

use super::mapping::Operation;
use super::{answer, percent, request};
use crate::failure::Failure;

/// The backend kind OpenAPI operations are audited and bound under.
pub const KIND: BackendKind = BackendKind::OPENAPI;

/// The tool error of arguments that pass the input schema yet cannot be sent (a path
/// value `..`, a header value with a line break).
pub const INVALID_ARGUMENTS: &str = "invalid_arguments";

/// The shortest value redacted from what a service says: shorter ones are no secret.
const MIN_REDACTED_BYTES: usize = 4;

/// How `auth` proves Bondry to the service; the secret is the value from the environment.
#[derive(Clone)]
pub enum Auth {
    /// `Authorization: Bearer <secret>`.
    Bearer(String),
    /// `Authorization: Basic <base64 of the secret>`, the secret being `user:password`.
    Basic(String),
    /// The secret in the header `name`.
    HeaderKey { name: HeaderName, secret: String },
    /// The secret in the query parameter `name`.
    QueryKey { name: String, secret: String },
}

impl Auth {
    /// What is sent of the secret: itself, or (basic) its base64.
    fn sent(&self) -> Vec<String> {
        match self {
            Self::Bearer(secret) | Self::HeaderKey { secret, .. } | Self::QueryKey { secret, .. } => {
                vec![secret.clone()]
            }
            Self::Basic(secret) => {
                use base64::Engine as _;
                let encoded = base64::engine::general_purpose::STANDARD.encode(secret);
                // The password alone, too: a service may say which one it refused.
                let password = secret.split_once(':').map(|(_, password)| password.to_owned());
                [secret.clone(), encoded].into_iter().chain(password).collect()
            }
        }
    }
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The scheme and where it goes; never the secret.
        match self {
            Self::Bearer(_) => f.write_str("Bearer"),
            Self::Basic(_) => f.write_str("Basic"),
            Self::HeaderKey { name, .. } => write!(f, "HeaderKey({name})"),
            Self::QueryKey { name, .. } => write!(f, "QueryKey({name})"),
        }
    }
}

/// One `openapi` entry's service: what every operation of its document shares.
#[derive(Debug)]
pub struct ApiSpec {
    /// The entry's name, as audit records name the backend.
    pub name: String,
    /// Where the operations' paths are appended; its path is kept as their prefix.
    pub base_url: bondry_outbound::Url,
    pub timeout: Duration,
    pub max_concurrent_calls: usize,
    /// `headers_from`, sent on every request (values marked sensitive).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub auth: Option<Auth>,
    pub max_response_bytes: usize,
}

/// The service every handler of one entry calls through.
pub struct Api {
    spec: ApiSpec,
    client: bondry_outbound::Client,
    slots: Semaphore,
    headers: HeaderMap,
    /// Every form of every secret sent (`auth`'s, `headers_from`'s), never quoted back.
    secrets: Vec<String>,
    /// The operations whose answers failed their output schema, each logged once.
    violations: Mutex<HashSet<String>>,
}

impl Api {
    /// The service of `spec`, sent to through `client` (the realm's, pooled per origin).
    pub fn new(spec: ApiSpec, client: bondry_outbound::Client) -> Result<Arc<Self>, String> {
        let mut headers: HeaderMap = spec.headers.iter().cloned().collect();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json, */*;q=0.5"));
        match &spec.auth {
            Some(Auth::Bearer(secret)) => headers.insert(AUTHORIZATION, sensitive(&format!("Bearer {secret}"))?),
            Some(Auth::Basic(secret)) => {
                use base64::Engine as _;
                let encoded = base64::engine::general_purpose::STANDARD.encode(secret);
                headers.insert(AUTHORIZATION, sensitive(&format!("Basic {encoded}"))?)
            }
            Some(Auth::HeaderKey { name, secret }) => headers.insert(name.clone(), sensitive(secret)?),
            Some(Auth::QueryKey { .. }) | None => None,
        };
        let slots = Semaphore::new(spec.max_concurrent_calls);
        let sent = spec.auth.iter().flat_map(Auth::sent);
        let from_environment = spec.headers.iter().filter_map(|(_, value)| value.to_str().ok().map(str::to_owned));
        let mut secrets: Vec<String> =
            sent.chain(from_environment).flat_map(|secret| answer::secret_forms(&secret)).collect();
        // Longest first across every secret, so that one inside another is replaced only
        // where the longer is not; values too short to be a secret (a version number)
        // would only garble what is quoted.
        secrets.retain(|form| form.len() >= MIN_REDACTED_BYTES);
        secrets.sort_unstable();
        secrets.dedup();
        secrets.sort_by_key(|form| std::cmp::Reverse(form.len()));
        Ok(Arc::new(Self { spec, client, slots, headers, secrets, violations: Mutex::default() }))
    }

    /// The URL of a built request: the base URL's path, the operation's, the query and,
    /// for a query key, the secret.
    fn url(&self, built: &request::Built) -> bondry_outbound::Url {
        let mut url = self.spec.base_url.clone();
        let path = format!("{}{}", self.spec.base_url.path().trim_end_matches('/'), built.path);
        url.set_path(&path);
        let mut query = built.query.clone();
        if let Some(Auth::QueryKey { name, secret }) = &self.spec.auth {
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(&format!("{}={}", percent::component(name), percent::component(secret)));
        }
        url.set_query((!query.is_empty()).then_some(query.as_str()));
        url
    }
}

/// A header value that holds a secret: never shown by `Debug`, and refused with a
/// message that does not quote it.
fn sensitive(text: &str) -> Result<HeaderValue, String> {
    let mut value =
        HeaderValue::try_from(text).map_err(|_| "the auth secret is not a valid header value".to_owned())?;
    value.set_sensitive(true);
    Ok(value)
}

/// The handler of one operation's tool. A 2xx body is checked against the output schema
/// the request carries (the capability's, compiled once by the catalogue).
pub struct OperationHandler {
    api: Arc<Api>,
    operation: Arc<Operation>,
}

impl OperationHandler {
    pub fn new(api: Arc<Api>, operation: Operation) -> Self {
        Self { api, operation: Arc::new(operation) }
    }
}

impl Handler for OperationHandler {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let (api, operation) = (Arc::clone(&self.api), Arc::clone(&self.operation));
        Box::pin(async move {
            // A caller gone drops the request under way: the service sees its connection close.
            let answered = tokio::select! {
                answered = run(&api, &operation, &request) => answered,
                () = request.cancellation.cancelled() => Err(Failure::Unavailable("the caller is gone".into())),
            };
            answered.unwrap_or_else(|failure| {
                tracing::warn!(
                    capability = %request.capability.as_str(),
                    backend = api.spec.name,
                    operation = %format_args!("{} {}", operation.method, operation.path),
                    code = failure.code(),
                    why = ?failure,
                    "an OpenAPI operation gave no answer"
                );
                failure.answer(CapabilityKind::Tool)
            })
        })
    }
}

/// One request of `operation`, within the timeout, waiting for a slot first.
async fn run(api: &Api, operation: &Operation, request: &HandlerRequest) -> Result<Answer, Failure> {
    let deadline = Instant::now() + api.spec.timeout;
    let none = serde_json::Map::new();
    let arguments = request.arguments.as_object().unwrap_or(&none);
    let sent_query = match &api.spec.auth {
        Some(Auth::QueryKey { name, .. }) => Some(name.as_str()),
        _ => None,
    };
    let built = match request::build(operation, arguments, sent_query) {
        Ok(built) => built,
        // The caller's to mend, in Bondry's own words: nothing was sent.
        Err(why) => {
            let content = Some(vec![ContentBlock::Text { text: why }]);
            return Ok(Answer::ToolError { code: INVALID_ARGUMENTS.into(), retryable: false, content, detail: None });
        }
    };
    let _slot = timeout_at(deadline, api.slots.acquire())
        .await
        .map_err(|_| Failure::Unavailable("no free slot within the timeout (max_concurrent_calls)".into()))?
        .map_err(|_| Failure::Unavailable("closed".into()))?;
    let url = api.url(&built);
    // Its error would quote the URL, and with it a query key: said without it.
    let Ok(target) = bondry_outbound::Target::new(&url) else {
        let content = Some(vec![ContentBlock::Text { text: "the request's URL cannot be sent (too long?)".into() }]);
        return Ok(Answer::ToolError { code: INVALID_ARGUMENTS.into(), retryable: false, content, detail: None });
    };
    let method = Method::from_bytes(operation.method.as_bytes()).map_err(|_| Failure::Invalid("a method".into()))?;
    let body = built.body.map(Bytes::from).unwrap_or_default();
    let has_body = !body.is_empty();
    let mut sent = target.request(method, &api.headers, body);
    let headers = sent.headers_mut();
    if has_body {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    for (name, value) in &built.headers {
        let name = HeaderName::try_from(name.as_str()).map_err(|_| Failure::Invalid(format!("header {name:?}")))?;
        let value =
            HeaderValue::try_from(value.as_str()).map_err(|_| Failure::Invalid(format!("header {name} value")))?;
        headers.append(name, value);
    }
    crate::trace::propagate(headers, &request.trace);
    let began = Instant::now();
    let answered = crate::exchange::send(&api.client, sent, deadline, api.spec.max_response_bytes).await;
    request.backend.record(KIND, &api.spec.name, began.elapsed());
    let answered = answered?;
    let conforms = request.output.as_ref().map(|schema| move |value: &Value| schema.validate(value).is_ok());
    let conforms = conforms.as_ref().map(|check| check as &dyn Fn(&Value) -> bool);
    let read = answer::read(answered.status, answered.content_type.as_deref(), &answered.body, conforms, &api.secrets)?;
    if read.violated_output_schema {
        let key = format!("{} {}", operation.method, operation.path);
        let first = api.violations.lock().unwrap_or_else(|poison| poison.into_inner()).insert(key);
        if first {
            tracing::warn!(
                backend = api.spec.name,
                operation = %format_args!("{} {}", operation.method, operation.path),
                "an answer does not meet the operation's output schema; answered as the tool error invalid_output quoting it (logged once per operation)"
            );
        }
    }
    Ok(read.answer)
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use axum::Router;
    use axum::extract::{Path, RawQuery};
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    use axum::routing::get;
    use serde_json::json;

    use super::*;
    use crate::failure::code;
    use crate::openapi::mapping::{self, Options};
    use crate::testing::request;

    const SECRET: &str = "k3y/+";

    async fn service() -> SocketAddr {
        let pet = |Path(id): Path<String>, RawQuery(query): RawQuery, headers: HeaderMap| async move {
            let query = query.unwrap_or_default();
            let trace = headers.get("x-trace").map(|v| v.to_str().unwrap().to_owned());
            let traceparent = headers.get("traceparent").map(|v| v.to_str().unwrap().to_owned());
            match id.as_str() {
                "404" => (StatusCode::NOT_FOUND, format!("no pet; you sent {query}")).into_response(),
                "500" => (StatusCode::INTERNAL_SERVER_ERROR, "x".repeat(100_000)).into_response(),
                "big404" => (StatusCode::NOT_FOUND, "y".repeat(100_000)).into_response(),
                "text" => "plain".into_response(),
                _ => {
                    // The key as it arrived, spelt apart: echoed whole it would be redacted.
                    let sent = query.split_once("&key=").map(|(_, key)| key.replace('%', " %"));
                    let body =
                        json!({"id": id, "query": query, "sent": sent, "trace": trace, "traceparent": traceparent})
                            .to_string();
                    ([("content-type", "application/json")], body).into_response()
                }
            }
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route("/v1/pets/{id}", get(pet));
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        addr
    }

    fn handler(addr: SocketAddr) -> OperationHandler {
        let document = json!({
            "openapi": "3.1.0",
            "paths": {"/pets/{id}": {"get": {
                "operationId": "getPet",
                "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "fields", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}, "explode": false},
                    {"name": "key", "in": "query", "schema": {"type": "string"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}
                ],
                "responses": {"200": {"content": {"application/json": {"schema": {"type": "object"}}}}}
            }}}
        });
        let options = Options { sent_query: Some("key".into()), ..Options::default() };
        let operation = mapping::map(&document, &options).unwrap().operations.remove(0);
        let spec = ApiSpec {
            name: "pets".into(),
            base_url: format!("http://{addr}/v1/").parse().unwrap(),
            timeout: Duration::from_secs(5),
            max_concurrent_calls: 4,
            headers: Vec::new(),
            auth: Some(Auth::QueryKey { name: "key".into(), secret: SECRET.into() }),
            max_response_bytes: 4096,
        };
        let client = bondry_outbound::Pool::default().client("test", &spec.base_url, &Default::default()).unwrap();
        OperationHandler::new(Api::new(spec, client).unwrap(), operation)
    }

    #[tokio::test]
    async fn an_operation_is_called_at_its_path_with_its_query_headers_and_key() {
        let addr = service().await;
        let mut called = request(json!({"id": "7", "fields": ["name", "tag"], "X-Trace": "t-1"}), None);
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        called.trace.traceparent = Some(traceparent.into());
        let note = Arc::clone(&called.backend);
        let Answer::Content { structured: Some(structured), .. } = handler(addr).call(called).await else {
            panic!("structured content")
        };
        assert_eq!(
            structured,
            json!({
                "id": "7", "query": "fields=name,tag&key=[redacted]", "sent": "k3y %2F %2B", "trace": "t-1",
                "traceparent": traceparent
            }),
            "the key sent encoded, and redacted where the answer echoes it; the caller's trace context passed on"
        );
        assert_eq!(note.taken().unwrap().backend, "pets");
    }

    #[tokio::test]
    async fn refusals_failures_and_other_bodies_answer_as_the_rules_say() {
        let addr = service().await;
        let call = |id: &str, output: Option<Value>| {
            let handler = handler(addr);
            let mut called = request(json!({"id": id}), None);
            called.output = output
                .map(|schema| bondry_core::schema::CompiledSchema::compile(&schema, &Default::default()).unwrap());
            async move { handler.call(called).await }
        };
        assert_eq!(
            call("404", None).await,
            Answer::ToolError {
                code: "http_404".into(),
                retryable: false,
                content: Some(vec![ContentBlock::Text { text: "no pet; you sent key=[redacted]".into() }]),
                detail: None
            }
        );
        assert_eq!(
            call("500", None).await,
            Answer::ToolError { code: code::UNAVAILABLE.into(), retryable: true, content: None, detail: None }
        );
        assert_eq!(
            call("text", None).await,
            Answer::Content { blocks: vec![ContentBlock::Text { text: "plain".into() }], structured: None }
        );
        let Answer::ToolError { code, content: Some(blocks), .. } = call("big404", None).await else {
            panic!("a refusal over max_response_bytes is still a refusal")
        };
        assert_eq!((code.as_str(), blocks), ("http_404", vec![ContentBlock::Text { text: "y".repeat(4096) }]));
        let strict = json!({"type": "object", "required": ["never"]});
        let Answer::ToolError { code, content: Some(blocks), .. } = call("8", Some(strict)).await else {
            panic!("a tool error quoting a body that fails the output schema")
        };
        assert_eq!(code, answer::INVALID_OUTPUT);
        assert!(
            matches!(&blocks[..], [ContentBlock::Text { text }] if serde_json::from_str::<Value>(text).unwrap()["id"] == "8"),
            "the body as text: {blocks:?}"
        );
        assert_eq!(
            call("..", None).await,
            Answer::ToolError {
                code: INVALID_ARGUMENTS.into(),
                retryable: false,
                content: Some(vec![ContentBlock::Text {
                    text: "the path parameter \"id\" cannot be empty, \".\" or \"..\"".into()
                }]),
                detail: None
            },
            "a path that would climb is never sent"
        );
    }
}
