//! What the connection tests share: an upstream spec with the defaults of the stanza.

use std::time::Duration;

use bondry_mcp_proto::Revision;
use bondry_upstream::{Expose, NameGlob, NewEntries, Outgoing, TransportSpec, Trust, UpstreamSpec};
use serde_json::{Map, Value};

/// The stanza's defaults for an upstream named `name` reached through `transport`.
pub fn spec(name: &str, transport: TransportSpec) -> UpstreamSpec {
    UpstreamSpec {
        name: name.into(),
        transport,
        prefix: name.into(),
        expose: Expose::default(),
        include: vec![NameGlob::new("*")],
        exclude: vec![],
        protocol_versions: Revision::ALL.to_vec(),
        roots: vec![],
        connect_timeout: Duration::from_secs(10),
        call_timeout: Duration::from_secs(60),
        max_concurrent_calls: 64,
        max_response_bytes: 4 * 1024 * 1024,
        trust: Trust::FirstUse,
        new_capabilities: NewEntries::Hold,
        new_resources: NewEntries::Trust,
        pin_ignore_meta: vec![],
        refresh_interval: Duration::from_secs(300),
        input_wait: Duration::from_secs(60),
        allow_url_elicitation: false,
    }
}

/// A request of `method` with `params` (a JSON object), named `name` for the routing headers.
pub fn outgoing(method: &str, params: Value, name: Option<&str>) -> Outgoing {
    let Value::Object(params) = params else { panic!("params must be an object: {params}") };
    let mut outgoing = Outgoing::new(method, params);
    outgoing.name = name.map(str::to_owned);
    outgoing
}

/// `tools/list` with no params.
pub fn list_tools() -> Outgoing {
    Outgoing::new("tools/list", Map::new())
}

/// The names in a `tools/list` result.
pub fn tool_names(result: &Value) -> Vec<String> {
    result["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
}
