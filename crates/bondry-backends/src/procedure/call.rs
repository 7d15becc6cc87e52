//! A procedure as a capability's handler: one POST per run of a call, through the
//! realm's pooled client, within the capability's timeout and concurrency, its answer
//! read no further than `max_response_bytes`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bondry_core::BoxFuture;
use bondry_core::backend::BackendKind;
use bondry_core::capability::CapabilityKind;
use bondry_core::handler::{Answer, Handler, HandlerRequest};
use bytes::Bytes;
use http::Method;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};

use super::answer::{self, Asking, Failure};
use super::{request, signing};

/// A procedure's stanza, checked. `Debug` shows no secret: header values are marked
/// sensitive, and the signing key is left out.
#[derive(Clone)]
pub struct ProcedureSpec {
    /// The kind of the capability it serves.
    pub kind: CapabilityKind,
    pub url: bondry_outbound::Url,
    /// How long a run may take, waiting for a free slot included.
    pub timeout: Duration,
    /// Runs at the service at once; more wait for a slot up to their timeout.
    pub max_concurrent_calls: usize,
    /// Headers from the environment (`headers_from`), sent on every request.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub disclose_principal: bool,
    /// The key of `Bondry-Signature`, at least [`signing::MIN_KEY_BYTES`].
    pub signing_key: Option<Arc<[u8]>>,
    pub max_response_bytes: usize,
    pub allow_url_elicitation: bool,
}

impl std::fmt::Debug for ProcedureSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcedureSpec")
            .field("kind", &self.kind)
            .field("url", &self.url.as_str())
            .field("timeout", &self.timeout)
            .field("max_concurrent_calls", &self.max_concurrent_calls)
            .field("headers", &self.headers)
            .field("disclose_principal", &self.disclose_principal)
            .field("signed", &self.signing_key.is_some())
            .field("max_response_bytes", &self.max_response_bytes)
            .field("allow_url_elicitation", &self.allow_url_elicitation)
            .finish()
    }
}

/// The handler of one procedure's capability.
pub struct Procedure {
    inner: Arc<Inner>,
}

struct Inner {
    spec: ProcedureSpec,
    /// `scheme://host:port`, as audit records name the backend.
    origin: String,
    target: bondry_outbound::Target,
    /// `headers_from`, as every request starts with them.
    headers: HeaderMap,
    client: bondry_outbound::Client,
    slots: Semaphore,
}

impl Procedure {
    /// The handler of `spec`, sending through `client` (the realm's, pooled per origin);
    /// `Err` says why its URL cannot be a request's target.
    pub fn new(spec: ProcedureSpec, client: bondry_outbound::Client) -> Result<Self, String> {
        let target = bondry_outbound::Target::new(&spec.url)?;
        let origin = spec.url.origin().ascii_serialization();
        let slots = Semaphore::new(spec.max_concurrent_calls);
        let mut headers: HeaderMap = spec.headers.iter().cloned().collect();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        Ok(Self { inner: Arc::new(Inner { spec, origin, target, headers, client, slots }) })
    }
}

impl Handler for Procedure {
    fn call(&self, request: HandlerRequest) -> BoxFuture<'static, Answer> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let kind = inner.spec.kind;
            // A caller gone drops the POST under way: the service sees its connection close.
            let answered = tokio::select! {
                answered = inner.run(&request) => answered,
                () = request.cancellation.cancelled() => Err(Failure::Unavailable("the caller is gone".into())),
            };
            answered.unwrap_or_else(|failure| {
                tracing::warn!(
                    capability = %request.capability.as_str(),
                    backend = inner.origin,
                    code = failure.code(),
                    why = ?failure,
                    "a procedure gave no answer"
                );
                failure.answer(kind)
            })
        })
    }
}

impl Inner {
    /// One POST of `request`, within the timeout, waiting for a slot first.
    async fn run(&self, request: &HandlerRequest) -> Result<Answer, Failure> {
        let deadline = Instant::now() + self.spec.timeout;
        let _slot = timeout_at(deadline, self.slots.acquire())
            .await
            .map_err(|_| Failure::Unavailable("no free slot within the timeout (max_concurrent_calls)".into()))?
            .map_err(|_| Failure::Unavailable("closed".into()))?;
        let began = Instant::now();
        let answered = self.post(request, deadline).await;
        request.backend.record(BackendKind::HTTP, &self.origin, began.elapsed());
        answered
    }

    async fn post(&self, request: &HandlerRequest, deadline: Instant) -> Result<Answer, Failure> {
        let spec = &self.spec;
        let request_id = request_id();
        let body = Bytes::from(request::body(request, spec.kind, &request_id, spec.disclose_principal));
        let signature = spec.signing_key.as_ref().map(|key| {
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
            signing::signature(key, now, &request_id, &body)
        });
        let mut post = self.target.request(Method::POST, &self.headers, body);
        crate::trace::propagate(post.headers_mut(), &request.trace);
        if let Some(signature) = signature {
            let value = HeaderValue::try_from(signature)
                .map_err(|_| Failure::Invalid("the signature is not a header value".into()))?;
            post.headers_mut().insert(HeaderName::from_static(signing::HEADER), value);
        }
        let answered = crate::exchange::send(&self.client, post, deadline, spec.max_response_bytes).await?;
        let asking =
            Asking { declared: &request.client_capabilities, allow_url_elicitation: spec.allow_url_elicitation };
        answer::read(answered.status, answered.content_type.as_deref(), &answered.body, spec.kind, asking)
    }
}

/// A fresh id for one POST: 128 random bits in hex.
fn request_id() -> String {
    let mut bytes = [0; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    bondry_core::canon::hex(&bytes)
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::body::Bytes;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    use axum::routing::post;
    use serde_json::{Value, json};

    use super::*;
    use crate::procedure::answer::code;
    use crate::testing::request;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    /// A service on loopback answering as `router` says.
    async fn service(router: Router) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        addr
    }

    fn procedure(addr: SocketAddr, path: &str, timeout: Duration) -> Procedure {
        let spec = ProcedureSpec {
            kind: CapabilityKind::Tool,
            url: format!("http://{addr}{path}").parse().unwrap(),
            timeout,
            max_concurrent_calls: 4,
            headers: vec![(HeaderName::from_static("x-service-key"), HeaderValue::from_static("k"))],
            disclose_principal: false,
            signing_key: Some(KEY.into()),
            max_response_bytes: 1024,
            allow_url_elicitation: false,
        };
        let client = bondry_outbound::Pool::default().client("test", &spec.url, &Default::default()).unwrap();
        Procedure::new(spec, client).unwrap()
    }

    fn json_answer(value: Value) -> axum::response::Response {
        ([("content-type", "application/json")], value.to_string()).into_response()
    }

    #[tokio::test]
    async fn a_signed_post_is_answered_and_its_backend_noted() {
        let seen: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
        let record = Arc::clone(&seen);
        let addr = service(Router::new().route(
            "/call",
            post(move |headers: HeaderMap, body: Bytes| {
                let record = Arc::clone(&record);
                async move {
                    let sent: Value = serde_json::from_slice(&body).unwrap();
                    let signed = headers["bondry-signature"].to_str().unwrap().to_owned();
                    let t: u64 = signed.trim_start_matches("t=").split(',').next().unwrap().parse().unwrap();
                    let expected = signing::signature(KEY, t, sent["request_id"].as_str().unwrap(), &body);
                    record.lock().unwrap().push(headers);
                    json_answer(json!({"result": {"echo": sent["arguments"], "verified": signed == expected}}))
                }
            }),
        ))
        .await;
        let called = request(json!({"city": "Lyon"}), None);
        let note = Arc::clone(&called.backend);
        let answer = procedure(addr, "/call", Duration::from_secs(5)).call(called).await;
        assert_eq!(answer, Answer::Value(json!({"echo": {"city": "Lyon"}, "verified": true})));
        let taken = note.taken().unwrap();
        assert_eq!((taken.kind, taken.backend.as_str()), (BackendKind::HTTP, format!("http://{addr}").as_str()));
        let headers = &seen.lock().unwrap()[0];
        let mut names: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["accept", "bondry-signature", "content-length", "content-type", "host", "x-service-key"],
            "only Bondry's own headers and the stanza's"
        );
    }

    #[tokio::test]
    async fn a_service_that_fails_refuses_is_slow_or_says_too_much_gives_its_code() {
        let slow = || async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            json_answer(json!({"result": 1}))
        };
        let addr = service(
            Router::new()
                .route("/fail", post(|| async { StatusCode::INTERNAL_SERVER_ERROR }))
                .route("/missing", post(|| async { StatusCode::NOT_FOUND }))
                .route("/slow", post(slow))
                .route("/big", post(|| async { json_answer(json!({"result": "x".repeat(1024)})) })),
        )
        .await;
        let unavailable =
            Answer::ToolError { code: code::UNAVAILABLE.into(), retryable: true, content: None, detail: None };
        let call = |path: &'static str| async move {
            procedure(addr, path, Duration::from_millis(300)).call(request(json!({}), None)).await
        };
        assert_eq!(call("/fail").await, unavailable);
        assert_eq!(call("/missing").await, Answer::Failure { code: code::REFUSED.into(), detail: None });
        let started = std::time::Instant::now();
        assert_eq!(call("/slow").await, unavailable);
        assert!(started.elapsed() < Duration::from_secs(2), "given up at the timeout: {:?}", started.elapsed());
        assert_eq!(call("/big").await, Answer::Failure { code: code::INVALID.into(), detail: None });

        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        let refused = procedure(closed, "/", Duration::from_secs(5)).call(request(json!({}), None)).await;
        assert_eq!(refused, unavailable);
    }

    #[tokio::test]
    async fn no_more_than_max_concurrent_calls_reach_the_service_and_every_call_is_answered() {
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (now, peak) = (Arc::clone(&running), Arc::clone(&most));
        let addr = service(Router::new().route(
            "/busy",
            post(move || {
                let (now, peak) = (Arc::clone(&now), Arc::clone(&peak));
                async move {
                    peak.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    now.fetch_sub(1, Ordering::SeqCst);
                    json_answer(json!({"result": "done"}))
                }
            }),
        ))
        .await;
        let procedure = procedure(addr, "/busy", Duration::from_secs(10));
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..64 {
            calls.spawn(procedure.call(request(json!({}), None)));
        }
        let mut answered = 0;
        while let Some(answer) = calls.join_next().await {
            assert_eq!(answer.unwrap(), Answer::Value(json!("done")));
            answered += 1;
        }
        assert_eq!((answered, most.load(Ordering::SeqCst)), (64, 4), "every call answered, four at a time");
    }
}
