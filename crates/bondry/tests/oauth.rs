//! Black-box tests of OAuth bearer tokens against a JWKS served on loopback: each
//! algorithm, every way a token can be wrong, key rotation with its refresh limit,
//! static keys and claim mapping, and the protected resource metadata (RFC 9728).

use bondry_test_support as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use support::{Req, TestConfig, TestServer, table};

const ISSUER: &str = "https://issuer.test";
const STATIC_ISSUER: &str = "https://static.test";
const RESOURCE: &str = "https://mcp.example.test/mcp";
const CHALLENGE: &str = "Bearer realm=\"default\", \
    resource_metadata=\"https://mcp.example.test/.well-known/oauth-protected-resource/mcp\"";

/// Test-only key pairs: `kid` → alg, private key (DER, base64) and public JWK.
fn keys() -> Value {
    serde_json::from_str(include_str!("fixtures/oauth-test-keys.json")).unwrap()
}

fn jwk(kid: &str) -> Value {
    keys()[kid]["jwk"].clone()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// Claims that pass: the test issuer, the realm as audience, valid for ten minutes.
fn claims() -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": now() + 600, "roles": ["demo"]})
}

/// A token for `claims`, signed with the test key `kid` and naming it.
fn token(kid: &str, claims: &Value) -> String {
    let entry = &keys()[kid];
    let der = STANDARD.decode(entry["private_der"].as_str().unwrap()).unwrap();
    let (alg, key) = match entry["alg"].as_str().unwrap() {
        "RS256" => (Algorithm::RS256, EncodingKey::from_rsa_der(&der)),
        "ES256" => (Algorithm::ES256, EncodingKey::from_ec_der(&der)),
        "EdDSA" => (Algorithm::EdDSA, EncodingKey::from_ed_der(&der)),
        other => panic!("no such test algorithm {other}"),
    };
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

/// A JWKS endpoint on loopback whose key set the test changes, counting fetches.
struct Jwks {
    url: String,
    keys: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

impl Jwks {
    async fn serve(kids: &[&str]) -> Self {
        let keys = Arc::new(Mutex::new(Value::Null));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (Arc::clone(&keys), Arc::clone(&fetches));
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let (served, counted) = (Arc::clone(&served), Arc::clone(&counted));
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    ([("content-type", "application/json")], served.lock().unwrap().to_string())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let jwks = Self { url, keys, fetches };
        jwks.publish(kids);
        jwks
    }

    fn publish(&self, kids: &[&str]) {
        *self.keys.lock().unwrap() = json!({"keys": kids.iter().map(|kid| jwk(kid)).collect::<Vec<_>>()});
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// A realm that accepts tokens only: from the JWKS issuer, and from an issuer with a
/// static Ed25519 key that grants `demo` to all its principals.
fn config(jwks_url: &str) -> TestConfig {
    let static_key = jwk("ed-1");
    let key = table([
        ("kty", "OKP".into()),
        ("crv", "Ed25519".into()),
        ("kid", "ed-1".into()),
        ("x", static_key["x"].as_str().unwrap().into()),
    ]);
    let fetched =
        table([("issuer", ISSUER.into()), ("jwks_url", jwks_url.into()), ("jwks_refresh_interval_ms", 1500.into())]);
    let fixed = table([
        ("issuer", STATIC_ISSUER.into()),
        ("namespace", "static".into()),
        ("roles_claim", "realm_access.roles".into()),
        ("roles", vec!["demo"].into()),
        ("keys", toml::Value::Array(vec![key.into()])),
    ]);
    TestConfig::bare()
        .set("realms.default.anonymous", false)
        .set("realms.default.resource_url", RESOURCE)
        .role("demo", &["demo.*"])
        .role("admin", &["admin.*"])
        .capability("demo.echo", "tool", "demo.echo", None)
        .capability("admin.reset", "tool", "admin.reset", None)
        .push("realms.default.oauth", fetched)
        .push("realms.default.oauth", fixed)
        .set("realms.other.anonymous_roles", Vec::<String>::new())
}

fn bearer(request: Req, token: &str) -> Req {
    request.header("authorization", &format!("Bearer {token}"))
}

async fn listed(server: &TestServer, token: &str) -> Vec<String> {
    let response = server.send(bearer(Req::modern("tools/list", json!({})), token)).await;
    let result = response.assert_result();
    result["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
}

/// A presented token that fails: the challenge names the error (RFC 6750 §3.1).
#[track_caller]
fn assert_refused(response: &support::Resp, case: &str) {
    assert_challenged(response, &format!("{CHALLENGE}, error=\"invalid_token\""), case);
}

#[track_caller]
fn assert_challenged(response: &support::Resp, challenge: &str, case: &str) {
    assert_eq!(response.status, 401, "{case}: {}", response.text());
    assert!(response.body.is_empty(), "{case}: the body is empty");
    let challenges: Vec<_> = response.headers.get_all("www-authenticate").iter().collect();
    assert_eq!(challenges, [challenge], "{case}");
}

#[tokio::test]
async fn tokens_of_each_algorithm_authenticate_with_their_roles() {
    let jwks = Jwks::serve(&["rsa-1", "ec-1", "ed-1"]).await;
    let server = TestServer::with_config(&config(&jwks.url).text()).await;
    for kid in ["rsa-1", "ec-1", "ed-1"] {
        assert_eq!(listed(&server, &token(kid, &claims())).await, ["demo.echo"], "{kid}");
    }
    let mut admin = claims();
    admin["sub"] = json!("root");
    admin["roles"] = json!("demo admin undefined-role");
    assert_eq!(listed(&server, &token("rsa-1", &admin)).await, ["admin.reset", "demo.echo"]);
    let response = server.send(bearer(Req::call("admin.reset", json!({})), &token("rsa-1", &admin))).await;
    response.assert_result();
    let records = server.stop().await;
    let call = records.iter().find(|record| record["capability"] == "admin.reset").unwrap();
    assert_eq!(call["principal"], "https://issuer.test#root");
    assert_eq!(call["principal_kind"], "oauth");
    assert_eq!(call["outcome"], "succeeded");
}

#[tokio::test]
async fn every_wrong_token_is_refused_with_the_metadata_challenge() {
    let jwks = Jwks::serve(&["rsa-1", "ec-1"]).await;
    let server = TestServer::with_config(&config(&jwks.url).text()).await;
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = claims();
        change(&mut claims);
        token("rsa-1", &claims)
    };
    let valid = token("rsa-1", &claims());
    let (head, rest) = valid.split_once('.').unwrap();
    let (_, signature) = rest.split_once('.').unwrap();
    let mut forged = claims();
    forged["roles"] = json!(["demo", "admin"]);
    let tampered = format!("{head}.{}.{signature}", URL_SAFE_NO_PAD.encode(forged.to_string()));
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT","kid":"rsa-1"}"#),
        URL_SAFE_NO_PAD.encode(claims().to_string())
    );
    // The classic confusion: an HMAC keyed with the issuer's public key.
    let public_pem = keys()["rsa-1"]["public_pem"].as_str().unwrap().to_owned();
    let mut hmac_header = Header::new(Algorithm::HS256);
    hmac_header.kid = Some("rsa-1".into());
    let hmac = jsonwebtoken::encode(&hmac_header, &claims(), &EncodingKey::from_secret(public_pem.as_bytes()).unwrap())
        .unwrap();
    let mut wrong_family = Header::new(Algorithm::ES256);
    wrong_family.kid = Some("rsa-1".into());
    let ec_der = STANDARD.decode(keys()["ec-1"]["private_der"].as_str().unwrap()).unwrap();
    let misnamed = jsonwebtoken::encode(&wrong_family, &claims(), &EncodingKey::from_ec_der(&ec_der)).unwrap();
    let cases = [
        ("expired", with(&|c| c["exp"] = json!(now() - 3600))),
        ("not yet valid", with(&|c| c["nbf"] = json!(now() + 3600))),
        ("no expiry", with(&|c| drop(c.as_object_mut().unwrap().remove("exp")))),
        ("wrong issuer", with(&|c| c["iss"] = json!("https://elsewhere.test"))),
        ("another configured issuer", with(&|c| c["iss"] = json!(STATIC_ISSUER))),
        ("wrong audience", with(&|c| c["aud"] = json!("https://mcp.example.test/mcp/realm/other"))),
        ("no audience", with(&|c| drop(c.as_object_mut().unwrap().remove("aud")))),
        ("empty subject", with(&|c| c["sub"] = json!(""))),
        ("no subject", with(&|c| drop(c.as_object_mut().unwrap().remove("sub")))),
        ("tampered claims", tampered),
        ("tampered signature", {
            let at = valid.len() - 20;
            let flipped = if &valid[at..=at] == "A" { "B" } else { "A" };
            format!("{}{flipped}{}", &valid[..at], &valid[at + 1..])
        }),
        ("alg none", unsigned),
        ("HMAC with the public key", hmac),
        ("kid of another key type", misnamed),
        ("unknown kid", {
            let der = STANDARD.decode(keys()["rsa-2"]["private_der"].as_str().unwrap()).unwrap();
            let mut header = Header::new(Algorithm::RS256);
            header.kid = Some("rsa-2".into());
            jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_rsa_der(&der)).unwrap()
        }),
    ];
    for (case, token) in cases {
        let response = server.send(bearer(Req::modern("tools/list", json!({})), &token)).await;
        assert_refused(&response, case);
    }
    // The valid token still works, so the refusals above are the token's doing.
    assert_eq!(listed(&server, &valid).await, ["demo.echo"]);
    let records = server.stop().await;
    let unauthenticated = records.iter().filter(|record| record["outcome"] == "unauthenticated").count();
    assert_eq!(unauthenticated, 15, "every refusal is audited");
}

#[tokio::test]
async fn a_rotated_key_is_fetched_at_most_once_per_interval() {
    let jwks = Jwks::serve(&["rsa-1"]).await;
    let server = TestServer::with_config(&config(&jwks.url).text()).await;
    let before = token("rsa-1", &claims());
    assert_eq!(listed(&server, &before).await, ["demo.echo"]);
    assert_eq!(listed(&server, &before).await, ["demo.echo"], "accepted again, from memory");
    assert_eq!(jwks.fetches(), 1, "fetched once, then cached");

    // The issuer rotates; once the interval has passed, the unknown kid triggers a fetch.
    jwks.publish(&["rsa-2"]);
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(listed(&server, &token("rsa-2", &claims())).await, ["demo.echo"]);
    assert_eq!(jwks.fetches(), 2);

    // Made-up key ids within the interval fetch nothing more.
    for index in 0..5 {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(format!("made-up-{index}"));
        let der = STANDARD.decode(keys()["rsa-1"]["private_der"].as_str().unwrap()).unwrap();
        let token = jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_rsa_der(&der)).unwrap();
        assert_refused(&server.send(bearer(Req::modern("tools/list", json!({})), &token)).await, "made-up kid");
    }
    assert_eq!(jwks.fetches(), 2, "at most one fetch per interval");
    // The rotated-out key no longer verifies: neither a token accepted before the
    // rotation, which the new key set does not vouch for, nor a new one.
    assert_refused(&server.send(bearer(Req::modern("tools/list", json!({})), &before)).await, "remembered");
    assert_refused(&server.send(bearer(Req::modern("tools/list", json!({})), &token("rsa-1", &claims()))).await, "old");
    server.stop().await;
}

#[tokio::test]
async fn static_keys_namespace_principals_and_map_nested_role_claims() {
    let jwks = Jwks::serve(&["rsa-1"]).await;
    let server = TestServer::with_config(&config(&jwks.url).text()).await;
    let mut claims = claims();
    claims["iss"] = json!(STATIC_ISSUER);
    claims["sub"] = json!("bob");
    claims.as_object_mut().unwrap().remove("roles");
    assert_eq!(listed(&server, &token("ed-1", &claims)).await, ["demo.echo"], "the issuer's own roles");
    claims["realm_access"] = json!({"roles": ["admin"]});
    assert_eq!(listed(&server, &token("ed-1", &claims)).await, ["admin.reset", "demo.echo"]);
    server.send(bearer(Req::call("admin.reset", json!({})), &token("ed-1", &claims))).await.assert_result();
    // The static issuer's key does not verify the JWKS issuer's tokens.
    assert_refused(
        &server.send(bearer(Req::modern("tools/list", json!({})), &token("ed-1", &self::claims()))).await,
        "",
    );
    // Another realm without OAuth treats a JWT like any unknown bearer token.
    let other = bearer(Req::modern("tools/list", json!({})).path("/mcp/realm/other"), &token("ed-1", &claims));
    let response = server.send(other).await;
    assert_eq!(response.status, 401);
    assert_eq!(response.header("www-authenticate"), Some("Bearer realm=\"other\""));
    let records = server.stop().await;
    assert!(records.iter().any(|record| record["principal"] == "static#bob"), "{records:?}");
}

#[tokio::test]
async fn protected_resource_metadata_is_served_where_oauth_is_configured() {
    let jwks = Jwks::serve(&["rsa-1"]).await;
    let server = TestServer::with_config(&config(&jwks.url).text()).await;
    let expected = json!({
        "resource": RESOURCE,
        "authorization_servers": [ISSUER, STATIC_ISSUER],
        "bearer_methods_supported": ["header"],
    });
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let response = server.send(Req::post().method(reqwest::Method::GET).path(path)).await;
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert_eq!(response.header("access-control-allow-origin"), Some("*"));
        assert_eq!(response.json(), expected, "{path}");
    }
    for path in [
        "/.well-known/oauth-protected-resource/mcp/realm/other",
        "/.well-known/oauth-protected-resource/mcp/realm/nowhere",
        "/.well-known/oauth-protected-resource/elsewhere",
        "/.well-known/openid-configuration",
    ] {
        let response = server.send(Req::post().method(reqwest::Method::GET).path(path)).await;
        assert_eq!(response.status, 404, "{path}");
    }
    let posted = server.send(Req::post().path("/.well-known/oauth-protected-resource")).await;
    assert_eq!(posted.status, 405);
    assert_eq!(posted.header("allow"), Some("GET, HEAD, OPTIONS"));
    // Without credentials the realm answers with the challenge that names the metadata,
    // and no error: nothing was wrong with a token.
    assert_challenged(&server.send(Req::modern("tools/list", json!({}))).await, CHALLENGE, "no credentials");
    server.stop().await;

    let plain = TestServer::start().await;
    let response =
        plain.send(Req::post().method(reqwest::Method::GET).path("/.well-known/oauth-protected-resource")).await;
    assert_eq!(response.status, 404, "no OAuth, no metadata");
    plain.stop().await;
}

#[tokio::test]
async fn metadata_of_a_named_realm_sits_under_its_path() {
    let key =
        table([("kty", "OKP".into()), ("crv", "Ed25519".into()), ("x", jwk("ed-1")["x"].as_str().unwrap().into())]);
    let issuer = table([
        ("issuer", STATIC_ISSUER.into()),
        ("roles", vec!["ops"].into()),
        ("keys", toml::Value::Array(vec![key.into()])),
    ]);
    let config = TestConfig::bare()
        .set("realms.ops.anonymous", false)
        .set("realms.ops.resource_url", "https://mcp.example.test/mcp/realm/ops")
        .role_in("ops", "ops", &["demo.*"])
        .capability_in("ops", "demo.echo", "tool", "demo.echo", None)
        .push("realms.ops.oauth", issuer)
        .text();
    let server = TestServer::with_config(&config).await;
    let response = server
        .send(Req::post().method(reqwest::Method::GET).path("/.well-known/oauth-protected-resource/mcp/realm/ops"))
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["resource"], "https://mcp.example.test/mcp/realm/ops");
    let refused = server.send(Req::modern("tools/list", json!({})).path("/mcp/realm/ops")).await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.header("www-authenticate"),
        Some(
            "Bearer realm=\"ops\", resource_metadata=\"https://mcp.example.test/.well-known/oauth-protected-resource/mcp/realm/ops\""
        )
    );
    // A kid-less token verifies against the one key there is.
    let der = STANDARD.decode(keys()["ed-1"]["private_der"].as_str().unwrap()).unwrap();
    let mut claims = claims();
    claims["iss"] = json!(STATIC_ISSUER);
    claims["aud"] = json!("https://mcp.example.test/mcp/realm/ops");
    let token = jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), &claims, &EncodingKey::from_ed_der(&der)).unwrap();
    let response = server.send(bearer(Req::modern("tools/list", json!({})).path("/mcp/realm/ops"), &token)).await;
    assert_eq!(response.assert_result()["tools"][0]["name"], "demo.echo");
    server.stop().await;
}

#[tokio::test]
async fn event_streams_end_when_the_token_that_opened_them_expires() {
    let jwks = Jwks::serve(&["rsa-1"]).await;
    let config = config(&jwks.url).retain("realms.default.oauth", |issuer| issuer.get("jwks_url").is_none());
    let fetched = table([
        ("issuer", ISSUER.into()),
        ("jwks_url", jwks.url.as_str().into()),
        ("jwks_refresh_interval_ms", 1500.into()),
        ("leeway_ms", 0.into()),
    ]);
    let server = TestServer::with_config(&config.push("realms.default.oauth", fetched).text()).await;
    // Expiring at least three seconds from now (`exp` is in whole seconds): time enough for
    // the streams below to open before it, on a loaded machine too.
    let mut short = claims();
    short["exp"] = json!(now() + 4);
    let short = token("rsa-1", &short);
    // A fractional `exp`, which the JWT library accepts, bounds a stream as well.
    let mut fractional = claims();
    fractional["exp"] = json!(now() as f64 + 4.5);
    let fractional = token("rsa-1", &fractional);
    let lasting = token("rsa-1", &claims());
    // Both streams are read whole: each must end on its own once the short token expires.
    let patience = Duration::from_secs(20);

    let body = json!({
        "jsonrpc": "2.0", "id": "watch", "method": "subscriptions/listen",
        "params": {"_meta": support::meta(), "notifications": {"toolsListChanged": true}}
    });
    let listen = |token: &str| bearer(Req::modern("subscriptions/listen", json!({})).json(body.clone()), token);
    let sid = {
        let response = server.send(bearer(support::initialize_request("2025-11-25", json!({})), &short)).await;
        assert_eq!(response.status, 200, "{}", response.text());
        response.header("mcp-session-id").expect("a session id").to_owned()
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(server.send(bearer(support::in_session(&sid, initialized), &short)).await.status, 202);
    let session_stream = bearer(
        Req::post()
            .method(reqwest::Method::GET)
            .without("content-type")
            .replace("accept", "text/event-stream")
            .header("Mcp-Session-Id", &sid),
        &short,
    );
    let (listened, session, listened_fractional) = tokio::join!(
        tokio::time::timeout(patience, server.send(listen(&short))),
        tokio::time::timeout(patience, server.send(session_stream)),
        tokio::time::timeout(patience, server.send(listen(&fractional))),
    );

    let listened = listened.expect("the listen stream ends when its token expires");
    assert_eq!(listened.status, 200);
    let messages = support::sse_messages(&listened.text());
    assert_eq!(messages.len(), 2, "the acknowledgement, then the graceful close: {messages:?}");
    assert_eq!(messages[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        messages[1],
        json!({"jsonrpc": "2.0", "id": "watch", "result": {"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "watch"}}})
    );
    let session = session.expect("the session's stream ends when its token expires");
    assert_eq!(session.status, 200);
    let listened_fractional = listened_fractional.expect("a fractional exp ends the stream too");
    assert_eq!(support::sse_messages(&listened_fractional.text()).len(), 2);

    // The client listens again: the expired token is refused, a fresh one is served.
    assert_refused(&server.send(listen(&short)).await, "expired");
    let again = tokio::time::timeout(Duration::from_millis(500), server.send(listen(&lasting))).await;
    assert!(again.is_err(), "a stream opened with a lasting token stays open");
    server.stop().await;
}

#[tokio::test]
async fn a_token_without_the_required_scopes_is_forbidden_with_a_step_up_challenge() {
    let jwks = Jwks::serve(&["rsa-1"]).await;
    let config = config(&jwks.url).set("realms.default.required_scopes", vec!["mcp:tools", "mcp:read"]);
    let server = TestServer::with_config(&config.text()).await;
    let scoped = format!("{CHALLENGE}, scope=\"mcp:tools mcp:read\"");
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = claims();
        change(&mut claims);
        token("rsa-1", &claims)
    };

    // Every required scope, in `scope` or in `scp`, however many others come along.
    assert_eq!(listed(&server, &with(&|c| c["scope"] = json!("openid mcp:read mcp:tools"))).await, ["demo.echo"]);
    assert_eq!(listed(&server, &with(&|c| c["scp"] = json!(["mcp:tools", "mcp:read"]))).await, ["demo.echo"]);
    assert_eq!(
        listed(&server, &with(&|c| (c["scope"], c["scp"]) = (json!("mcp:tools"), json!("mcp:read")))).await,
        ["demo.echo"]
    );

    // A valid token short of a scope: 403, empty body, one challenge naming every scope needed.
    for (case, token) in [
        ("one scope of two", with(&|c| c["scope"] = json!("mcp:tools"))),
        ("no scope claim", token("rsa-1", &claims())),
        ("a longer scope is not the scope", with(&|c| c["scope"] = json!("mcp:tools mcp:read:all"))),
    ] {
        let response = server.send(bearer(Req::modern("tools/list", json!({})), &token)).await;
        assert_eq!(response.status, 403, "{case}: {}", response.text());
        assert!(response.body.is_empty(), "{case}: the body is empty");
        let challenges: Vec<_> = response.headers.get_all("www-authenticate").iter().collect();
        assert_eq!(challenges, [format!("{scoped}, error=\"insufficient_scope\"").as_str()], "{case}");
    }
    // An invalid token is still 401; no credential gets the challenge with the scopes.
    let expired = with(&|c| (c["exp"], c["scope"]) = (json!(now() - 3600), json!("mcp:tools mcp:read")));
    let response = server.send(bearer(Req::modern("tools/list", json!({})), &expired)).await;
    assert_challenged(&response, &format!("{scoped}, error=\"invalid_token\""), "expired");
    assert_challenged(&server.send(Req::modern("tools/list", json!({}))).await, &scoped, "no credentials");

    // The metadata lists the scopes.
    let metadata =
        server.send(Req::post().method(reqwest::Method::GET).path("/.well-known/oauth-protected-resource/mcp")).await;
    assert_eq!(metadata.json()["scopes_supported"], json!(["mcp:tools", "mcp:read"]));

    // Refused for want of a scope is `denied` to the principal, not a failed authentication.
    let records = server.stop().await;
    let denied: Vec<&Value> = records.iter().filter(|record| record["outcome"] == "denied").collect();
    assert_eq!(denied.len(), 3, "{records:?}");
    for record in denied {
        assert_eq!(record["principal"], format!("{ISSUER}#alice"));
        assert_eq!(record["principal_kind"], "oauth");
        assert_eq!(record["capability"], "");
    }
    assert_eq!(records.iter().filter(|record| record["outcome"] == "unauthenticated").count(), 1);
}

#[tokio::test]
async fn new_credentials_keep_the_keys_of_unchanged_issuers() {
    let jwks = Jwks::serve(&["rsa-1"]).await;
    let config = config(&jwks.url);
    let server = TestServer::with_config(&config.text()).await;
    let valid = token("rsa-1", &claims());
    assert_eq!(listed(&server, &valid).await, ["demo.echo"]);
    assert_eq!(jwks.fetches(), 1);

    // A ticket added: the credentials change, the issuers do not, and their keys stay as
    // fetched (an issuer down at that moment locks nobody out).
    let slot = server.auth("default");
    let with_ticket = config.principal("ci", &["demo"]).ticket("ci-ticket", "ci");
    assert!(slot.replace(support::authenticator(&with_ticket.text(), "default")));
    assert_eq!(listed(&server, &valid).await, ["demo.echo"]);
    assert_eq!(jwks.fetches(), 1, "the kept issuers' keys were not fetched again");

    // Required scopes added: the issuers' verifier is new, its keys fetched anew, and the
    // metadata and challenges say so at once.
    let scoped = with_ticket.set("realms.default.required_scopes", vec!["mcp"]);
    assert!(slot.replace(support::authenticator(&scoped.text(), "default")));
    let response = server.send(bearer(Req::modern("tools/list", json!({})), &valid)).await;
    assert_eq!(response.status, 403, "the token has no scope");
    assert!(jwks.fetches() >= 2, "the new verifier fetched its keys");
    let metadata =
        server.send(Req::post().method(reqwest::Method::GET).path("/.well-known/oauth-protected-resource/mcp")).await;
    assert_eq!(metadata.json()["scopes_supported"], json!(["mcp"]));
    server.stop().await;
}
