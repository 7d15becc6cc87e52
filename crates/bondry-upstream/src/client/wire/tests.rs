use serde_json::json;

use super::*;

#[test]
fn a_modern_frame_carries_the_envelope_and_the_routing_headers() {
    let mut outgoing = Outgoing::new("tools/call", Map::new());
    outgoing.params.insert("name".into(), "echo".into());
    outgoing.params.insert("_meta".into(), json!({"progressToken": 3}));
    outgoing.name = Some("Hello, 世界".into());
    outgoing.param_headers = vec![("Region".into(), "us-west1".into())];
    outgoing.client_capabilities = json!({"sampling": {}});
    let frame = Frame::modern(Some("bondry-1".into()), &outgoing).unwrap();
    let body: Value = serde_json::from_slice(&frame.body).unwrap();
    assert_eq!(body["id"], "bondry-1");
    assert_eq!(body["params"]["_meta"]["progressToken"], 3);
    assert_eq!(body["params"]["_meta"][envelope::PROTOCOL_VERSION], "2026-07-28");
    assert_eq!(body["params"]["_meta"][envelope::CLIENT_CAPABILITIES], json!({"sampling": {}}));
    assert_eq!(body["params"]["_meta"][envelope::CLIENT_INFO]["name"], "bondry");
    assert_eq!(frame.headers["mcp-protocol-version"], "2026-07-28");
    assert_eq!(frame.headers["mcp-method"], "tools/call");
    assert_eq!(frame.headers["mcp-name"], "=?base64?SGVsbG8sIOS4lueVjA==?=");
    assert_eq!(frame.headers["mcp-param-region"], "us-west1");
}

#[test]
fn the_envelope_replaces_the_callers_own_keys_and_a_meta_that_is_not_an_object() {
    let mut outgoing = Outgoing::new("tools/call", Map::new());
    outgoing.params.insert("_meta".into(), json!({envelope::PROTOCOL_VERSION: "1999-01-01", "k": 1}));
    let frame = Frame::modern(Some("bondry-1".into()), &outgoing).unwrap();
    let text = std::str::from_utf8(&frame.body).unwrap();
    assert_eq!(text.matches(envelope::PROTOCOL_VERSION).count(), 1, "one key on the wire: {text}");
    let body: Value = serde_json::from_slice(&frame.body).unwrap();
    assert_eq!(body["params"]["_meta"][envelope::PROTOCOL_VERSION], "2026-07-28");
    assert_eq!(body["params"]["_meta"]["k"], 1);

    outgoing.params.insert("_meta".into(), json!("not an object"));
    let frame = Frame::modern(None, &outgoing).unwrap();
    let body: Value = serde_json::from_slice(&frame.body).unwrap();
    assert_eq!(body.get("id"), None);
    assert_eq!(body["params"]["_meta"].as_object().unwrap().len(), 3, "the envelope alone: {body}");
}

#[test]
fn a_watched_request_carries_its_progress_token_and_log_level_in_its_meta() {
    let mut outgoing = Outgoing::new("tools/call", Map::new());
    outgoing.params.insert("name".into(), "echo".into());
    outgoing.params.insert("_meta".into(), json!({"traceparent": "00-1-2-01", "progressToken": "theirs"}));
    let watching = [(envelope::PROGRESS_TOKEN, "bondry-4"), (envelope::LOG_LEVEL, "debug")];
    let frame = Frame::modern_watched(Some("bondry-4".into()), &outgoing, &watching).unwrap();
    let body: Value = serde_json::from_slice(&frame.body).unwrap();
    let meta = &body["params"]["_meta"];
    assert_eq!(
        (&meta["traceparent"], &meta["progressToken"], &meta[envelope::LOG_LEVEL]),
        (&json!("00-1-2-01"), &json!("bondry-4"), &json!("debug"))
    );
    assert_eq!(meta.as_object().unwrap().len(), 6, "{meta}");

    let watching = [(envelope::PROGRESS_TOKEN, "bondry-5")];
    let frame = Frame::handshake_watched("bondry-5".into(), &outgoing, &watching, Revision::V2025_11_25);
    assert_eq!(
        std::str::from_utf8(&frame.body).unwrap(),
        r#"{"jsonrpc":"2.0","id":"bondry-5","method":"tools/call","params":{"name":"echo","_meta":{"traceparent":"00-1-2-01","progressToken":"bondry-5"}}}"#
    );
    assert_eq!(frame.headers["mcp-protocol-version"], "2025-11-25");
}

#[test]
fn a_handshake_request_with_nothing_in_its_meta_has_none() {
    let outgoing = Outgoing::new("tools/list", Map::new());
    let frame = Frame::handshake_watched("bondry-1".into(), &outgoing, &[], Revision::V2025_06_18);
    assert_eq!(
        std::str::from_utf8(&frame.body).unwrap(),
        r#"{"jsonrpc":"2.0","id":"bondry-1","method":"tools/list","params":{}}"#
    );
    let mut outgoing = Outgoing::new("tools/call", Map::from_iter([("name".to_owned(), json!("a"))]));
    outgoing.params.insert("_meta".into(), json!({}));
    let frame = Frame::handshake_watched("bondry-2".into(), &outgoing, &[], Revision::V2025_06_18);
    assert_eq!(
        std::str::from_utf8(&frame.body).unwrap(),
        r#"{"jsonrpc":"2.0","id":"bondry-2","method":"tools/call","params":{"name":"a"}}"#
    );
}

#[test]
fn an_unreadable_message_naming_a_request_fails_that_request() {
    let repeated = br#"{"jsonrpc":"2.0","id":"bondry-3","result":{"content":[{"text":"a","text":"b"}]}}"#;
    let Ok(Incoming::Response { id, answer: Err(ClientError::Protocol(why)) }) = read(repeated) else {
        panic!("a failed response")
    };
    assert_eq!((id.as_str(), why.as_str()), ("bondry-3", "an unreadable answer: duplicate object key"));
    assert!(read(br#"{"jsonrpc":"2.0","id":"bondry-3","id":"bondry-4","result":{}}"#).is_err(), "whose id is unsure");
    assert!(read(br#"{"jsonrpc":"2.0","result":{"a":1,"a":2}}"#).is_err(), "naming no request");
    assert!(read(br#"{"jsonrpc":"2.0","id":"bondry-3","method":"m","params":[]}"#).is_err(), "a request");
}

#[test]
fn reads_the_id_of_a_message_cut_short() {
    let message = br#"{"jsonrpc":"2.0","id":"bondry-7","result":{"content":[{"text":"aaaa"#;
    assert_eq!(id_of_truncated(message), Some("bondry-7".into()));
    let late = br#"{"jsonrpc":"2.0","result":{"text":"id bondry-1"},"id":"bondry-2"}"#;
    assert_eq!(id_of_truncated(&late[..40]), None, "an id inside the result is never taken");
    assert_eq!(id_of_truncated(late), Some("bondry-2".into()));
    assert_eq!(id_of_truncated(b"not json"), None);
}
