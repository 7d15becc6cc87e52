//! Black-box tests of authentication: Basic against argon2id hashes, tickets with and
//! without role caps, anonymous callers, refusals and their challenges, and sessions
//! that belong to another principal or realm.

use bondry_test_support as support;

use std::time::Duration;

use argon2::{Algorithm, Argon2, Params, PasswordHasher, Version};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use support::{Req, TestConfig, TestServer, table, ticket_hash};

/// An argon2id hash with small parameters, so the tests stay fast.
fn hash(password: &str) -> String {
    let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::new(64, 1, 1, None).unwrap());
    argon2.hash_password_with_salt(password.as_bytes(), b"saltsaltsaltsalt").unwrap().to_string()
}

fn config() -> TestConfig {
    let password = |config: TestConfig, hash: String| {
        config.set_on_array("realms.default.principals", "alice", "password_hash", hash)
    };
    let capped = table([
        ("sha256", ticket_hash("alice-capped").into()),
        ("principal", "alice".into()),
        ("roles", vec!["demo"].into()),
    ]);
    let config = TestConfig::new()
        .role("admin", &["admin.*"])
        .principal("alice", &["demo", "admin"])
        .principal("bob", &["demo"])
        .principal("carol", &["admin"])
        .ticket("alice-ticket", "alice")
        .push("realms.default.tickets", capped)
        .ticket("bob-ticket", "bob")
        .ticket("carol-ticket", "carol")
        .set("realms.other.anonymous_roles", vec!["demo"])
        .push("realms.other.roles", table([("name", "demo".into()), ("grants", vec!["demo.*"].into())]))
        .push(
            "realms.other.capabilities",
            table([("id", "demo.echo".into()), ("kind", "tool".into()), ("handler", "demo.echo".into())]),
        );
    password(config, hash("wonderland"))
}

fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", STANDARD.encode(format!("{user}:{password}")))
}

async fn tool_names(server: &TestServer, authorization: Option<&str>) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let mut request = Req::modern("tools/list", params);
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        let result = server.send(request).await.assert_result();
        names.extend(result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
            None => return names,
        }
    }
}

#[tokio::test]
async fn each_principal_sees_its_own_view() {
    let server = TestServer::with_config(&config().text()).await;
    let alice = tool_names(&server, Some(&basic("alice", "wonderland"))).await;
    let by_ticket = tool_names(&server, Some("Bearer alice-ticket")).await;
    let capped = tool_names(&server, Some("Bearer alice-capped")).await;
    let anonymous = tool_names(&server, None).await;
    assert!(alice.contains(&"admin.reset".to_owned()), "{alice:?}");
    assert_eq!(by_ticket, alice);
    assert!(!capped.contains(&"admin.reset".to_owned()), "a capped ticket narrows the roles");
    assert_eq!(capped, anonymous, "no gaps or duplicates across pages of a filtered catalogue");
    let mut sorted = alice.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), alice.len());

    let call = Req::call("admin.reset", json!({})).header("authorization", &basic("alice", "wonderland"));
    assert_eq!(server.send(call).await.assert_result()["structuredContent"], json!({"reset": true}));
    let hidden = Req::call("admin.reset", json!({})).header("authorization", "Bearer alice-capped");
    server.send(hidden).await.assert_error(200, Some(json!(1)), -32602, "Unknown tool: admin.reset");
    let records = server.stop().await;
    assert_eq!(
        (records[0]["principal"].clone(), records[0]["principal_kind"].clone()),
        (json!("alice"), json!("user"))
    );
    assert_eq!((records[1]["principal"].clone(), records[1]["outcome"].clone()), (json!("alice"), json!("denied")));
    assert_eq!(records[1]["principal_kind"], "ticket");
}

#[tokio::test]
async fn refused_credentials_never_fall_back_to_anonymous() {
    let server = TestServer::with_config(&config().text()).await;
    let refused = [
        basic("alice", "wrong"),
        basic("carol", "wonderland"),
        basic("bob", ""),
        "Basic !!!".to_owned(),
        format!("Basic {}", STANDARD.encode("no-colon")),
        "Bearer not-a-ticket".to_owned(),
        "Bearer".to_owned(),
        "Digest username=\"alice\"".to_owned(),
        "Negotiate abc".to_owned(),
    ];
    for authorization in &refused {
        let response =
            server.send(Req::modern("server/discover", json!({})).header("authorization", authorization)).await;
        assert_eq!(response.status, 401, "{authorization}");
        assert!(response.body.is_empty());
        let challenges: Vec<&str> =
            response.headers.get_all("www-authenticate").iter().map(|v| v.to_str().unwrap()).collect();
        // Only a presented token that fails names the error (RFC 6750 §3.1).
        let bearer = match authorization.starts_with("Bearer ") {
            true => "Bearer realm=\"default\", error=\"invalid_token\"",
            false => "Bearer realm=\"default\"",
        };
        assert_eq!(challenges, [bearer, "Basic realm=\"default\", charset=\"UTF-8\""], "{authorization}");
    }
    let twice = Req::modern("server/discover", json!({}))
        .header("authorization", "Bearer alice-ticket")
        .header("authorization", "Bearer alice-ticket");
    assert_eq!(server.send(twice).await.status, 401);
    let records = server.stop().await;
    assert_eq!(records.len(), refused.len() + 1);
    assert!(records.iter().all(|r| r["outcome"] == "unauthenticated" && r["principal"] == Value::Null));
}

#[tokio::test]
async fn realms_are_routed_and_closed_realms_refuse_anonymous_callers() {
    let closed = config().remove("realms.other.anonymous_roles").set("realms.other.anonymous", false);
    let server = TestServer::with_config(&closed.text()).await;
    let response = server.send(Req::modern("server/discover", json!({})).path("/mcp/realm/other")).await;
    assert_eq!(response.status, 401);
    assert_eq!(response.header("www-authenticate"), Some("Bearer realm=\"other\""));
    server.stop().await;

    let server = TestServer::with_config(&config().text()).await;
    let names = server.send(Req::modern("tools/list", json!({})).path("/mcp/realm/other")).await.assert_result();
    assert_eq!(names["tools"].as_array().unwrap().len(), 1);
    // A credential of one realm means nothing in another.
    let response = server
        .send(
            Req::modern("server/discover", json!({}))
                .path("/mcp/realm/other")
                .header("authorization", "Bearer alice-ticket"),
        )
        .await;
    assert_eq!(response.status, 401);
    server.stop().await;
}

#[tokio::test]
async fn a_session_belongs_to_its_principal_and_realm() {
    let server = TestServer::with_config(&config().text()).await;
    let initialize = Req::post()
        .header("authorization", "Bearer alice-ticket")
        .json(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    let response = server.send(initialize).await;
    let sid = response.header("mcp-session-id").unwrap().to_owned();
    let ping = || Req::post().header("Mcp-Session-Id", &sid).json(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    server.send(ping().header("authorization", "Bearer alice-ticket")).await.assert_result();
    // Alice by password is still alice: the session id is not a credential, the principal is.
    server.send(ping().header("authorization", &basic("alice", "wonderland"))).await.assert_result();
    for (authorization, path) in [(Some("Bearer bob-ticket"), "/mcp"), (None, "/mcp"), (None, "/mcp/realm/other")] {
        let mut request = ping().path(path);
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        server.send(request).await.assert_error(404, Some(json!(1)), -32001, "Session not found");
    }
    server.stop().await;
}

#[tokio::test]
async fn hidden_tools_with_header_or_capability_rules_answer_like_missing_ones() {
    let server = TestServer::with_config(&config().text()).await;
    // carol may not see test.*; realm `other` has no test.* at all.
    let calls = [
        Req::call("test.params", json!({"n": 7})).header("Mcp-Param-N", "8"),
        Req::call("test.params", json!({"n": 7})),
        Req::call("test.elicits", json!({})),
    ];
    for call in calls {
        let hidden = server.send(call.clone().header("authorization", "Bearer carol-ticket")).await;
        let missing = server.send(call.path("/mcp/realm/other")).await;
        assert_eq!((hidden.status, hidden.body.clone()), (missing.status, missing.body.clone()));
        assert_eq!(hidden.headers.get("content-length"), missing.headers.get("content-length"));
        assert_eq!(hidden.status, 200);
    }
    let records = server.stop().await;
    let outcomes: Vec<&str> = records.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["denied", "not_found", "denied", "not_found", "denied", "not_found"]);
}

#[tokio::test]
async fn replaced_credentials_end_at_once_what_the_old_ones_opened() {
    let server = TestServer::with_config(&config().text()).await;
    let bob = "Bearer bob-ticket";
    let opened = server.send(support::initialize_request("2025-11-25", json!({})).header("authorization", bob)).await;
    assert_eq!(opened.status, 200, "{}", opened.text());
    let sid = opened.header("mcp-session-id").unwrap().to_owned();
    let in_session =
        |body: Value, authorization: &str| support::in_session(&sid, body).header("authorization", authorization);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(server.send(in_session(initialized, bob)).await.status, 202);
    let ping = || json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});

    // Credentials that are the same again disturb nothing.
    let slot = server.auth("default");
    assert!(!slot.replace(support::authenticator(&config().text(), "default")), "nothing changed");
    assert_eq!(server.send(in_session(ping(), bob)).await.status, 200);

    // A call of bob's in flight, then his ticket is replaced by another.
    let slow = json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {"name": "test.slow", "arguments": {"ms": 60_000}}});
    let call = in_session(slow, bob);
    let (client, url) = (reqwest::Client::new(), server.url());
    let pending =
        tokio::spawn(
            async move { call.builder(&client, &url).body(call.body.clone()).send().await.unwrap().text().await },
        );
    assert!(server.call_running().await, "the call started");
    let bobs = |ticket: &toml::Table| ticket.get("principal").and_then(toml::Value::as_str) == Some("bob");
    let reissued = config().retain("realms.default.tickets", |ticket| !bobs(ticket)).ticket("bob-new-ticket", "bob");
    assert!(slot.replace(support::authenticator(&reissued.text(), "default")), "the credentials changed");

    // The call is cancelled at once, the session is gone for every credential of bob's,
    // and the old ticket is refused.
    // (Well before the sessions are next swept, every 10 s.)
    tokio::time::timeout(Duration::from_secs(3), pending).await.expect("the call ends at once").unwrap().unwrap();
    assert_eq!(server.send(Req::modern("tools/list", json!({})).header("authorization", bob)).await.status, 401);
    server.send(in_session(ping(), "Bearer bob-new-ticket")).await.assert_error(
        404,
        Some(json!(9)),
        -32001,
        "Session not found",
    );
    assert!(server.settles().await, "nothing left running");
    let records = server.stop().await;
    let slow: Vec<&Value> = records.iter().filter(|record| record["capability"] == "test.slow").collect();
    assert_eq!(slow.len(), 1);
    assert_eq!(slow[0]["outcome"], "cancelled");
}
