//! What the connection tests share: an upstream spec with the defaults of the stanza.

use bondry_upstream::{Outgoing, TransportSpec, UpstreamSpec};
use serde_json::{Map, Value};

/// The stanza's defaults for an upstream named `name` reached through `transport`.
pub fn spec(name: &str, transport: TransportSpec) -> UpstreamSpec {
    UpstreamSpec::new(name, transport)
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
