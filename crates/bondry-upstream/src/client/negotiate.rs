//! Era negotiation, the same over every transport.
//!
//! When 2026-07-28 is offered, `server/discover` is tried first; any answer that is not
//! a discover result naming 2026-07-28 (an error, an HTTP status, a malformed result)
//! falls back to `initialize` with the newest handshake revision offered, accepting a
//! counter-offer that is in the list, then `notifications/initialized`. A transport
//! failure (unreachable, closed) ends negotiation instead: falling back would not help.

use bondry_mcp_proto::{Era, Revision, envelope};
use serde_json::{Map, Value, json};

use super::wire::{Frame, Ids, client_info};
use super::{ClientError, Outgoing};

/// What negotiation settled.
#[derive(Debug, Clone)]
pub(crate) struct Negotiated {
    pub revision: Revision,
    pub capabilities: Value,
    pub server_info: Value,
}

/// A transport negotiation runs over.
pub(crate) trait Wire {
    /// Sends a request frame; resolves to its `result`.
    async fn exchange(&self, frame: Frame) -> Result<Value, ClientError>;
    /// Sends a notification frame.
    async fn send(&self, frame: Frame) -> Result<(), ClientError>;
}

/// What Bondry offers an upstream: the revisions, and whether its callers may be asked
/// to open a URL (URL-mode elicitation, `allow_url_elicitation`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Offer<'a> {
    pub revisions: &'a [Revision],
    pub url_elicitation: bool,
}

pub(crate) async fn negotiate(wire: &impl Wire, offer: Offer<'_>, ids: &Ids) -> Result<Negotiated, ClientError> {
    if offer.revisions.contains(&Revision::V2026_07_28) {
        let discover = Frame::modern(Some(ids.next()), &Outgoing::new("server/discover", Map::new()))?;
        match wire.exchange(discover).await {
            Ok(result) => match discovered(result) {
                Some(negotiated) => return Ok(negotiated),
                None => tracing::debug!("not a discover result naming 2026-07-28: trying initialize"),
            },
            Err(error) if error.is_refusal() => tracing::debug!(%error, "server/discover refused: trying initialize"),
            Err(error) => return Err(error),
        }
    }
    handshake(wire, offer, ids).await
}

/// `initialize` and `notifications/initialized`: also how an expired session is renewed.
pub(crate) async fn handshake(wire: &impl Wire, offer: Offer<'_>, ids: &Ids) -> Result<Negotiated, ClientError> {
    let offered = offer.revisions;
    let newest =
        offered.iter().copied().filter(|revision| revision.era() == Era::Handshake).max().ok_or_else(|| {
            ClientError::Protocol("the upstream does not serve 2026-07-28 and no handshake revision is offered".into())
        })?;
    let params = Map::from_iter([
        ("protocolVersion".to_owned(), Value::from(newest.as_str())),
        ("capabilities".to_owned(), declared_capabilities(offer.url_elicitation)),
        ("clientInfo".to_owned(), client_info()),
    ]);
    let result = wire.exchange(Frame::handshake(Some(ids.next()), "initialize", params, None)).await?;
    let answered = result.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let revision = answered
        .parse::<Revision>()
        .ok()
        .filter(|revision| revision.era() == Era::Handshake && offered.contains(revision))
        .ok_or_else(|| {
            ClientError::Protocol(format!("initialize answered revision {answered:?}, which is not offered"))
        })?;
    wire.send(Frame::handshake(None, "notifications/initialized", Map::new(), Some(revision))).await?;
    Ok(Negotiated {
        revision,
        capabilities: result.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
    })
}

/// What Bondry declares at `initialize`: all three, so that tools offered only to such
/// clients are listed; a request of a kind the call's caller lacks is refused later.
/// Elicitation's URL mode only where the stanza allows it.
fn declared_capabilities(url_elicitation: bool) -> Value {
    let elicitation = if url_elicitation { json!({"form": {}, "url": {}}) } else { json!({}) };
    json!({"elicitation": elicitation, "sampling": {}, "roots": {}})
}

/// A discover result naming 2026-07-28, as negotiated.
fn discovered(result: Value) -> Option<Negotiated> {
    let versions = result.get("supportedVersions")?.as_array()?;
    if !versions.iter().any(|version| version == Revision::V2026_07_28.as_str()) {
        return None;
    }
    let capabilities = result.get("capabilities").filter(|capabilities| capabilities.is_object())?.clone();
    let server_info =
        result.get("_meta").and_then(|meta| meta.get(envelope::SERVER_INFO)).cloned().unwrap_or(Value::Null);
    Some(Negotiated { revision: Revision::V2026_07_28, capabilities, server_info })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Answers each request with the next scripted answer and records what was sent.
    struct Script {
        answers: Mutex<Vec<Result<Value, ClientError>>>,
        sent: Mutex<Vec<Value>>,
    }

    impl Script {
        fn new(answers: Vec<Result<Value, ClientError>>) -> Self {
            Self { answers: Mutex::new(answers), sent: Mutex::new(Vec::new()) }
        }

        fn methods(&self) -> Vec<String> {
            self.sent.lock().unwrap().iter().map(|message| message["method"].as_str().unwrap().to_owned()).collect()
        }
    }

    impl Wire for Script {
        async fn exchange(&self, frame: Frame) -> Result<Value, ClientError> {
            self.sent.lock().unwrap().push(serde_json::from_slice(&frame.body).unwrap());
            self.answers.lock().unwrap().remove(0)
        }

        async fn send(&self, frame: Frame) -> Result<(), ClientError> {
            self.sent.lock().unwrap().push(serde_json::from_slice(&frame.body).unwrap());
            Ok(())
        }
    }

    fn run(script: &Script, offered: &[Revision]) -> Result<Negotiated, ClientError> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(negotiate(script, Offer { revisions: offered, url_elicitation: false }, &Ids::default()))
    }

    fn initialized(version: &str) -> Result<Value, ClientError> {
        Ok(
            json!({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}),
        )
    }

    #[test]
    fn a_discover_result_settles_the_modern_era() {
        let script = Script::new(vec![Ok(json!({
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
        }))]);
        let negotiated = run(&script, &Revision::ALL).unwrap();
        assert_eq!(negotiated.revision, Revision::V2026_07_28);
        assert_eq!(negotiated.server_info["name"], "s");
        assert_eq!(script.methods(), ["server/discover"]);
    }

    #[test]
    fn anything_but_a_discover_result_falls_back_to_initialize() {
        let refusals = [
            Err(ClientError::Rpc { code: -32601, message: "Method not found".into(), data: None }),
            Err(ClientError::Http { status: 400 }),
            Ok(json!({"supportedVersions": ["2025-11-25"], "capabilities": {}})),
            Ok(json!({"capabilities": {}})),
        ];
        for refusal in refusals {
            let script = Script::new(vec![refusal, initialized("2025-11-25")]);
            let negotiated = run(&script, &Revision::ALL).unwrap();
            assert_eq!(negotiated.revision, Revision::V2025_11_25);
            assert_eq!(script.methods(), ["server/discover", "initialize", "notifications/initialized"]);
            let initialize = &script.sent.lock().unwrap()[1];
            assert_eq!(initialize["params"]["protocolVersion"], "2025-11-25");
            assert_eq!(
                initialize["params"]["capabilities"],
                json!({"elicitation": {}, "sampling": {}, "roots": {}}),
                "all three, elicitation in form mode only"
            );
        }
    }

    #[test]
    fn url_elicitation_is_declared_only_where_allowed() {
        let script = Script::new(vec![initialized("2025-11-25")]);
        let offer = Offer { revisions: &[Revision::V2025_11_25], url_elicitation: true };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(negotiate(&script, offer, &Ids::default())).unwrap();
        let initialize = &script.sent.lock().unwrap()[0];
        assert_eq!(initialize["params"]["capabilities"]["elicitation"], json!({"form": {}, "url": {}}));
    }

    #[test]
    fn a_counter_offer_must_be_in_the_list() {
        let offered = [Revision::V2025_11_25, Revision::V2025_06_18];
        let script = Script::new(vec![initialized("2025-06-18")]);
        assert_eq!(run(&script, &offered).unwrap().revision, Revision::V2025_06_18);
        let script = Script::new(vec![initialized("2025-06-18")]);
        assert!(matches!(run(&script, &[Revision::V2025_11_25]), Err(ClientError::Protocol(_))));
        let script = Script::new(vec![initialized("2024-11-05")]);
        assert!(matches!(run(&script, &offered), Err(ClientError::Protocol(_))));
    }

    #[test]
    fn a_transport_failure_does_not_fall_back() {
        let script = Script::new(vec![Err(ClientError::Unreachable("refused".into()))]);
        assert_eq!(run(&script, &Revision::ALL).unwrap_err(), ClientError::Unreachable("refused".into()));
        assert_eq!(script.methods(), ["server/discover"]);
    }
}
