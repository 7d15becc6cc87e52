//! What the tests of the backends' handlers call with: a request as the pipeline makes one, from a
//! runtime that neither cancels nor listens (`Quiet`).

use std::sync::Arc;

use bondry_core::capability::CapabilityId;
use bondry_core::handler::{HandlerRequest, InvocationId, Retry, TraceContext};
use bondry_core::policy::{Principal, PrincipalKind};
use bondry_test_support::sans_io::Quiet;
use serde_json::{Value, json};

/// A call of `weather.forecast` by the user `ada` with `arguments`.
pub(crate) fn request(arguments: Value, retry: Option<Retry>) -> HandlerRequest {
    HandlerRequest {
        capability: CapabilityId::new("weather.forecast").unwrap(),
        output: None,
        arguments,
        uri: None,
        realm: "default".into(),
        principal: Principal::new("ada", PrincipalKind::User, vec!["ops".to_owned()]),
        invocation: InvocationId::from_random([1; 16]),
        trace: TraceContext { traceparent: Some("00-t-s-01".into()), ..TraceContext::default() },
        client_capabilities: json!({"elicitation": {}}),
        cancellation: Arc::new(Quiet),
        emitter: Arc::new(Quiet),
        publisher: Arc::new(Quiet),
        retry,
        backend: Arc::default(),
    }
}
