//! Black-box tests of multi-round-trip requests in the modern era: `input_required`
//! results, retries with `inputResponses` and a sealed `requestState`, and everything a
//! `requestState` or `inputResponses` can be refused for.

use bondry_test_support as support;

use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bondry_core::realm::KeySet;
use bondry_mcp_proto::state;
use bondry_test_support::sans_io::TestRandom;
use serde_json::{Value, json};
use support::{Req, Resp, TestConfig, TestServer, open, table};

const CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const INVALID_STATE: &str = "invalid, expired or mismatched requestState";
const INVALID_RESPONSES: &str = "invalid inputResponses";

// ---------------------------------------------------------------------------------------
// Configuration and request helpers
// ---------------------------------------------------------------------------------------

/// The default configuration with room for an oversized `requestState`, two ticket
/// principals (alice and bob, both granted `test.*`), a second tool backed by the
/// `test.asks` handler, the asking prompt and resource, and a realm `other` that serves
/// `test.asks` to anonymous callers.
fn config() -> String {
    let other = |config: TestConfig| {
        config
            .set("realms.other.anonymous_roles", vec!["demo"])
            .push("realms.other.roles", table([("name", "demo".into()), ("grants", vec!["test.*"].into())]))
            .push(
                "realms.other.capabilities",
                table([("id", "test.asks".into()), ("kind", "tool".into()), ("handler", "test.asks".into())]),
            )
    };
    let config = TestConfig::new()
        .set("listeners.main.max_body_bytes", 262_144)
        .capability("test.asks_too", "tool", "test.asks", None)
        .capability("test.asks_prompt", "prompt", "test.asks_prompt", None)
        .capability("test.asks_resource", "resource", "test.asks_resource", None)
        .principal("alice", &["demo"])
        .principal("bob", &["demo"])
        .ticket("alice-ticket", "alice")
        .ticket("bob-ticket", "bob");
    other(config).text()
}

async fn start() -> TestServer {
    TestServer::with_config(&config()).await
}

/// `request` with its `params` changed by `edit`.
fn edit(request: Req, edit: impl FnOnce(&mut Value)) -> Req {
    let mut body: Value = serde_json::from_slice(&request.body).unwrap();
    edit(&mut body["params"]);
    request.json(body)
}

/// `request` declaring the sampling client capability.
fn sampling(request: Req) -> Req {
    edit(request, |params| params["_meta"][CAPABILITIES] = json!({"sampling": {}}))
}

/// A modern `tools/call` of `name` with `arguments`, declaring sampling.
fn call(name: &str, arguments: Value) -> Req {
    sampling(Req::call(name, arguments))
}

/// A modern `prompts/get` of `name` with `arguments`, declaring sampling.
fn get_prompt(name: &str, arguments: Value) -> Req {
    sampling(Req::modern("prompts/get", json!({"name": name, "arguments": arguments})))
}

/// A modern `resources/read` of `uri`, declaring sampling.
fn read(uri: &str) -> Req {
    sampling(Req::modern("resources/read", json!({"uri": uri})).header("Mcp-Name", uri))
}

/// `request` as a retry: with these `inputResponses` and this `requestState` (each left
/// out when `None`).
fn retry(request: Req, responses: Option<Value>, request_state: Option<Value>) -> Req {
    edit(request, |params| {
        if let Some(responses) = responses {
            params["inputResponses"] = responses;
        }
        if let Some(request_state) = request_state {
            params["requestState"] = request_state;
        }
    })
}

/// The client's `CreateMessageResult` for round `n`.
fn answer(n: u32) -> Value {
    json!({
        "role": "assistant",
        "content": {"type": "text", "text": format!("answer {n}")},
        "model": "test-model",
        "stopReason": "endTurn"
    })
}

/// The `sampling/createMessage` request `test.asks` sends in round `n`.
fn asked(n: usize) -> Value {
    json!({"input": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": format!("round {n}")}}],
        "maxTokens": 10
    }}})
}

/// Asserts an `input_required` result with exactly its four members, and returns its
/// `inputRequests` and `requestState`.
#[track_caller]
fn input_required(response: &Resp) -> (Value, String) {
    assert_eq!(response.header("content-type"), Some("application/json"));
    let result = response.assert_result();
    let mut keys: Vec<&str> = result.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    // Never cached: no `ttlMs`, no `cacheScope`.
    assert_eq!(keys, ["_meta", "inputRequests", "requestState", "resultType"], "{result}");
    assert_eq!(result["resultType"], "input_required");
    assert!(result["_meta"].is_object());
    let request_state = result["requestState"].as_str().expect("requestState is a string").to_owned();
    (result["inputRequests"].clone(), request_state)
}

/// The key set `realm` seals with right now.
fn keys(server: &TestServer, realm: &str) -> KeySet {
    server.registry(realm).snapshot().keys.clone()
}

/// What the state of a `test.asks` call by `principal` in the default realm is bound to.
fn binding<'a>(principal: &'a str, capability: &'a str, arguments: &'a Value) -> state::Binding<'a> {
    state::Binding { principal, realm: "default", method: "tools/call", capability, arguments }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn three_rounds_of_input_then_a_complete_result() {
    let server = start().await;
    let arguments = json!({"rounds": 3});
    let keys = keys(&server, "default");
    let binding = binding("anonymous", "test.asks", &arguments);

    let mut previous: Option<String> = None;
    let mut continuation: Option<String> = None;
    let mut answers = Vec::new();
    for round in 1..=3 {
        let responses = previous.as_ref().map(|_| json!({"input": answer(round - 1)}));
        let request = retry(call("test.asks", arguments.clone()), responses, previous.clone().map(Value::from));
        let (requests, sealed) = input_required(&server.send(request).await);
        assert_eq!(requests, asked(round as usize), "round {round}");
        assert_ne!(Some(&sealed), previous.as_ref(), "a fresh requestState each round");

        // A compact JWE: dir, A256GCM, the realm's active kid, no encrypted key.
        let parts: Vec<&str> = sealed.split('.').collect();
        assert_eq!(parts.len(), 5, "{sealed}");
        assert_eq!(parts[1], "");
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "dir", "enc": "A256GCM", "kid": keys.active.id}));

        // It carries the handler's state, and one continuation id over the whole exchange.
        let opened = state::open(&keys, &binding, &sealed, SystemTime::now()).expect("the state opens");
        assert_eq!(opened.state, json!({"answers": answers}));
        assert_eq!(opened.continuation.len(), 32);
        assert_eq!(*continuation.get_or_insert_with(|| opened.continuation.clone()), opened.continuation);
        // It opens for at most the state's lifetime.
        let later = SystemTime::now() + state::STATE_LIFETIME + Duration::from_secs(1);
        assert!(state::open(&keys, &binding, &sealed, later).is_none());

        answers.push(answer(round));
        previous = Some(sealed);
    }
    let last =
        retry(call("test.asks", arguments.clone()), Some(json!({"input": answer(3)})), previous.map(Value::from));
    let result = server.send(last).await.assert_result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"], json!({"answers": [answer(1), answer(2), answer(3)]}));
    assert!(result.get("isError").is_none_or(|error| error == false), "{result}");
    assert!(result.get("requestState").is_none() && result.get("inputRequests").is_none());

    // Another exchange gets another continuation id.
    let (_, sealed) = input_required(&server.send(call("test.asks", arguments.clone())).await);
    let second = state::open(&keys, &binding, &sealed, SystemTime::now()).unwrap().continuation;
    assert_ne!(Some(&second), continuation.as_ref());

    // The audit records of one exchange are linked by its continuation id; the rounds are
    // separate calls, each with its own invocation id.
    let records = server.stop().await;
    let asks: Vec<&Value> = records.iter().filter(|record| record["capability"] == "test.asks").collect();
    let outcomes: Vec<&str> = asks.iter().map(|record| record["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["input_required", "input_required", "input_required", "succeeded", "input_required"]);
    let continuations: Vec<&Value> = asks.iter().map(|record| &record["continuation_id"]).collect();
    let first = json!(continuation.unwrap());
    assert_eq!(continuations, [&first, &first, &first, &first, &json!(second)]);
    let invocations: std::collections::HashSet<&str> =
        asks.iter().map(|record| record["invocation_id"].as_str().unwrap()).collect();
    assert_eq!(invocations.len(), 5);
}

#[tokio::test]
async fn every_unusable_request_state_is_refused_the_same_way() {
    let server = start().await;
    let arguments = json!({"rounds": 3});
    let default_keys = keys(&server, "default");
    let other_keys = keys(&server, "other");
    let alice = |request: Req| request.header("authorization", "Bearer alice-ticket");
    let bob = |request: Req| request.header("authorization", "Bearer bob-ticket");

    // Genuine states: alice's, an anonymous caller's, and one of a prompt.
    let (_, of_alice) = input_required(&server.send(alice(call("test.asks", arguments.clone()))).await);
    let (_, of_anonymous) = input_required(&server.send(call("test.asks", arguments.clone())).await);
    let (_, of_prompt) = input_required(&server.send(get_prompt("test.asks_prompt", json!({}))).await);
    let session_id = open(&server).await;

    let mut tampered = of_alice.split('.').map(str::to_owned).collect::<Vec<_>>();
    let flipped = if tampered[3].starts_with('A') { "B" } else { "A" };
    tampered[3].replace_range(..1, flipped);
    let tampered = tampered.join(".");

    // States sealed with the realms' own keys (read through the live registry, as a host
    // program can) by the adapter's public `state::seal`, for a request other than the one
    // that presents them; each differs from a state that opens (see the end) in one
    // respect only. This is how expiry is reached without a clock hook: a state sealed
    // `STATE_LIFETIME` ago.
    let seal = |keys: &KeySet, binding: &state::Binding<'_>, age: u64| {
        let sealed_at = SystemTime::now() - Duration::from_secs(age);
        state::seal(keys, binding, json!({"answers": [answer(1)]}), "forged", sealed_at, &mut TestRandom::new(41))
            .unwrap()
    };
    let anonymous = binding("anonymous", "test.asks", &arguments);
    let expired = seal(&default_keys, &anonymous, state::STATE_LIFETIME.as_secs() + 1);
    let just_expired = seal(&default_keys, &anonymous, state::STATE_LIFETIME.as_secs());
    let for_prompts = seal(&default_keys, &state::Binding { method: "prompts/get", ..anonymous.clone() }, 0);
    // Under realm `other`'s keys, but bound to the default realm.
    let for_default_in_other = seal(&other_keys, &anonymous, 0);

    let oversized = format!("{}..{}", of_alice.split('.').next().unwrap(), "A".repeat(state::MAX_STATE_LEN));
    assert!(oversized.len() > 64 * 1024);

    let responses = || Some(json!({"input": answer(1)}));
    let presenting = |request: Req, token: Value| retry(request, responses(), Some(token));
    let asks = || call("test.asks", arguments.clone());
    let cases: Vec<(&str, Req)> = vec![
        ("tampered", presenting(alice(asks()), json!(tampered))),
        ("garbage", presenting(alice(asks()), json!("abc"))),
        ("empty", presenting(alice(asks()), json!(""))),
        ("a number", presenting(alice(asks()), json!(42))),
        ("null", presenting(alice(asks()), Value::Null)),
        ("an object", presenting(alice(asks()), json!({"token": of_alice}))),
        ("another principal's", presenting(bob(asks()), json!(of_alice))),
        ("a ticket holder's, presented anonymously", presenting(asks(), json!(of_alice))),
        ("an anonymous caller's, presented by a ticket holder", presenting(alice(asks()), json!(of_anonymous))),
        ("other arguments", presenting(alice(call("test.asks", json!({"rounds": 2}))), json!(of_alice))),
        (
            "other arguments, one added",
            presenting(alice(call("test.asks", json!({"rounds": 3, "kind": "sampling"}))), json!(of_alice)),
        ),
        (
            "another capability with the same handler",
            presenting(alice(call("test.asks_too", arguments.clone())), json!(of_alice)),
        ),
        ("another realm", presenting(asks().path("/mcp/realm/other"), json!(of_anonymous))),
        (
            "another realm's claim, that realm's key",
            presenting(asks().path("/mcp/realm/other"), json!(for_default_in_other)),
        ),
        ("another method's", presenting(asks(), json!(for_prompts))),
        ("a prompt's", presenting(asks(), json!(of_prompt))),
        ("a session id", presenting(asks(), json!(session_id))),
        ("oversized", presenting(alice(asks()), json!(oversized))),
        ("expired", presenting(asks(), json!(expired))),
        ("expired this very second", presenting(asks(), json!(just_expired))),
    ];
    let mut first: Option<(String, Resp)> = None;
    for (case, request) in cases {
        let response = server.send(request).await;
        match &first {
            None => {
                let data = response.assert_error(400, Some(json!(1)), -32602, INVALID_STATE);
                assert_eq!(data, Value::Null, "nothing says why");
                first = Some((case.to_owned(), response));
            }
            Some((first_case, first)) => {
                assert_eq!(
                    (response.status, response.text()),
                    (first.status, first.text()),
                    "{case} is answered as {first_case} is"
                );
                assert_eq!(response.header("content-type"), first.header("content-type"), "{case}");
            }
        }
    }

    // Nothing above was spent: each genuine state still opens for its own request, and
    // a state sealed with the realm's keys opens when all it is bound to matches.
    let (requests, _) = input_required(&server.send(presenting(alice(asks()), json!(of_alice))).await);
    assert_eq!(requests, asked(2));
    let (requests, _) = input_required(&server.send(presenting(asks(), json!(of_anonymous))).await);
    assert_eq!(requests, asked(2));
    let fresh = seal(&default_keys, &anonymous, state::STATE_LIFETIME.as_secs() - 60);
    let (requests, _) = input_required(&server.send(presenting(asks(), json!(fresh))).await);
    assert_eq!(requests, asked(3), "the state's one answer and this one");
    let in_other = seal(&other_keys, &state::Binding { realm: "other", ..anonymous.clone() }, 0);
    let (requests, _) =
        input_required(&server.send(presenting(asks().path("/mcp/realm/other"), json!(in_other))).await);
    assert_eq!(requests, asked(3));
    // Key order does not change what the arguments are.
    let reordered = alice(call("test.asks", json!({"kind": "sampling", "rounds": 3})));
    let state_with_kind = {
        let arguments = json!({"rounds": 3, "kind": "sampling"});
        seal(&default_keys, &binding("alice", "test.asks", &arguments), 0)
    };
    input_required(&server.send(presenting(reordered, json!(state_with_kind))).await);

    let records = server.stop().await;
    let refused: Vec<&Value> = records.iter().filter(|record| record["outcome"] == "invalid_input").collect();
    assert_eq!(refused.len(), 20, "every refusal is audited as invalid input: {records:?}");
}

#[tokio::test]
async fn input_responses_must_be_an_object_of_objects() {
    let server = start().await;
    let (_, sealed) = input_required(&server.send(call("test.asks", json!({"rounds": 2}))).await);
    let cases = [
        (json!([]), None),
        (json!([answer(1)]), None),
        (json!("x"), None),
        (json!(5), None),
        (json!(true), None),
        (Value::Null, None),
        (json!({"input": 1}), None),
        (json!({"input": "answer"}), None),
        (json!({"input": [answer(1)]}), None),
        (json!({"input": null}), None),
        (json!({"input": answer(1), "other": 1}), None),
        // Checked before the state: a good state does not save bad responses, nor does a
        // bad one change the error.
        (json!({"input": 1}), Some(json!(sealed))),
        (json!([]), Some(json!("abc"))),
    ];
    let mut bodies = Vec::new();
    for (responses, request_state) in cases {
        let request = retry(call("test.asks", json!({"rounds": 2})), Some(responses.clone()), request_state);
        let response = server.send(request).await;
        response.assert_error(400, Some(json!(1)), -32602, INVALID_RESPONSES);
        bodies.push(response.body);
    }
    assert!(bodies.windows(2).all(|pair| pair[0] == pair[1]), "all answered alike");
    // The state is still good for its own retry.
    let good = retry(call("test.asks", json!({"rounds": 2})), Some(json!({"input": answer(1)})), Some(json!(sealed)));
    assert_eq!(input_required(&server.send(good).await).0, asked(2));
    server.stop().await;
}

#[tokio::test]
async fn responses_without_a_state_reach_the_handler_without_one() {
    let server = start().await;
    let keys = keys(&server, "default");

    // The handler counts the answer it was given, from nothing.
    let arguments = json!({"rounds": 2});
    let request = retry(call("test.asks", arguments.clone()), Some(json!({"input": answer(7)})), None);
    let (requests, sealed) = input_required(&server.send(request).await);
    assert_eq!(requests, asked(2));
    let opened = state::open(&keys, &binding("anonymous", "test.asks", &arguments), &sealed, SystemTime::now());
    assert_eq!(opened.unwrap().state, json!({"answers": [answer(7)]}));

    // Keys the handler did not ask for are ignored: they are no answer.
    let arguments = json!({"rounds": 1});
    let extra = json!({"input": answer(1), "unasked": {"role": "assistant"}, "also": {}});
    let result = server.send(retry(call("test.asks", arguments.clone()), Some(extra), None)).await.assert_result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"], json!({"answers": [answer(1)]}));
    let only_unasked = json!({"unasked": answer(1)});
    let (requests, _) =
        input_required(&server.send(retry(call("test.asks", arguments.clone()), Some(only_unasked), None)).await);
    assert_eq!(requests, asked(1));
    // Empty responses are a retry with nothing in it.
    let (requests, _) =
        input_required(&server.send(retry(call("test.asks", arguments.clone()), Some(json!({})), None)).await);
    assert_eq!(requests, asked(1));

    // A state sealed with unasked keys in the responses continues as usual.
    let (_, sealed) = input_required(&server.send(call("test.asks", arguments.clone())).await);
    let responses = json!({"input": answer(2), "unasked": {}});
    let result =
        server.send(retry(call("test.asks", arguments), Some(responses), Some(json!(sealed)))).await.assert_result();
    assert_eq!(result["structuredContent"], json!({"answers": [answer(2)]}));
    server.stop().await;
}

#[tokio::test]
async fn input_the_client_did_not_declare_is_refused() {
    let server = start().await;
    let cases = [
        (json!({"rounds": 1}), json!({}), json!({"sampling": {}})),
        (json!({"kind": "sampling"}), json!({"elicitation": {}, "roots": {}}), json!({"sampling": {}})),
        (json!({"kind": "elicitation"}), json!({"sampling": {}}), json!({"elicitation": {"form": {}}})),
        (json!({"kind": "elicitation"}), json!({"elicitation": {"url": {}}}), json!({"elicitation": {"form": {}}})),
        (json!({"kind": "roots"}), json!({"sampling": {}}), json!({"roots": {}})),
    ];
    for (arguments, declared, required) in cases {
        let request = edit(Req::call("test.asks", arguments.clone()), |params| {
            params["_meta"][CAPABILITIES] = declared.clone();
        });
        let response = server.send(request).await;
        let data = response.assert_error(400, Some(json!(1)), -32021, "Missing required client capability");
        assert_eq!(data, json!({"requiredCapabilities": required}), "{arguments} declaring {declared}");
    }
    // Declared with a value that is not an object: the envelope breaks the schema, and
    // the request is refused before any capability is weighed.
    let request = edit(Req::call("test.asks", json!({})), |params| {
        params["_meta"][CAPABILITIES] = json!({"sampling": true});
    });
    let data = server.send(request).await.assert_error(400, Some(json!(1)), -32602, "Invalid params");
    assert_eq!(data, json!({"invalid": ["/params/_meta/io.modelcontextprotocol~1clientCapabilities/sampling"]}));
    // Declared, the same calls ask.
    for (arguments, declared) in [
        (json!({"kind": "elicitation"}), json!({"elicitation": {}})),
        (json!({"kind": "elicitation"}), json!({"elicitation": {"form": {}}})),
        (json!({"kind": "roots"}), json!({"roots": {"listChanged": true}})),
    ] {
        let request = edit(Req::call("test.asks", arguments.clone()), |params| {
            params["_meta"][CAPABILITIES] = declared.clone();
        });
        let (requests, _) = input_required(&server.send(request).await);
        let method = if arguments["kind"] == "roots" { "roots/list" } else { "elicitation/create" };
        assert_eq!(requests["input"]["method"], method, "{arguments} declaring {declared}");
    }
    // A refusal is the caller's, as one before dispatch would be; asking is recorded as
    // such. The broken envelope was refused before any call, so it has no record.
    let outcomes: Vec<String> =
        server.stop().await.iter().map(|record| record["outcome"].as_str().unwrap().to_owned()).collect();
    assert_eq!(outcomes[..5], ["invalid_input"; 5]);
    assert_eq!(outcomes[5..], ["input_required"; 3]);
}

#[tokio::test]
async fn prompts_and_resources_ask_too() {
    let server = start().await;
    let keys = keys(&server, "default");

    // prompts/get: the state is bound to the method, the prompt and its arguments.
    let arguments = json!({"topic": "rust"});
    let (requests, sealed) = input_required(&server.send(get_prompt("test.asks_prompt", arguments.clone())).await);
    assert_eq!(requests["input"]["method"], "sampling/createMessage");
    let binding = state::Binding {
        principal: "anonymous",
        realm: "default",
        method: "prompts/get",
        capability: "test.asks_prompt",
        arguments: &arguments,
    };
    assert_eq!(state::open(&keys, &binding, &sealed, SystemTime::now()).unwrap().state, json!({"asked": true}));
    let again = retry(
        get_prompt("test.asks_prompt", arguments.clone()),
        Some(json!({"input": answer(1)})),
        Some(json!(sealed)),
    );
    let result = server.send(again).await.assert_result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["messages"], json!([{"role": "user", "content": {"type": "text", "text": "answer 1"}}]));
    // Another topic is another request.
    let other_topic = retry(
        get_prompt("test.asks_prompt", json!({"topic": "go"})),
        Some(json!({"input": answer(1)})),
        Some(json!(sealed)),
    );
    server.send(other_topic).await.assert_error(400, Some(json!(1)), -32602, INVALID_STATE);
    // Without its state the prompt asks again.
    let stateless = retry(get_prompt("test.asks_prompt", arguments.clone()), Some(json!({"input": answer(1)})), None);
    input_required(&server.send(stateless).await);

    // resources/read
    let (requests, sealed) = input_required(&server.send(read("test://asks")).await);
    assert_eq!(requests["input"]["method"], "sampling/createMessage");
    let result = server
        .send(retry(read("test://asks"), Some(json!({"input": answer(2)})), Some(json!(sealed.clone()))))
        .await
        .assert_result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["contents"], json!([{"uri": "test://asks", "text": "answer 2"}]));
    assert_eq!(result["ttlMs"], 0, "a complete read is cacheable, unlike input_required");
    // The resource's state is no prompt's, and no tool's.
    let misplaced = [
        retry(
            get_prompt("test.asks_prompt", json!({})),
            Some(json!({"input": answer(2)})),
            Some(json!(sealed.clone())),
        ),
        retry(call("test.asks", json!({})), Some(json!({"input": answer(2)})), Some(json!(sealed))),
    ];
    for request in misplaced {
        server.send(request).await.assert_error(400, Some(json!(1)), -32602, INVALID_STATE);
    }

    // Undeclared input is refused for prompts and resources as for tools.
    for request in [
        Req::modern("prompts/get", json!({"name": "test.asks_prompt", "arguments": {}})),
        Req::modern("resources/read", json!({"uri": "test://asks"})).header("Mcp-Name", "test://asks"),
    ] {
        let data =
            server.send(request).await.assert_error(400, Some(json!(1)), -32021, "Missing required client capability");
        assert_eq!(data, json!({"requiredCapabilities": {"sampling": {}}}));
    }

    let records = server.stop().await;
    let outcomes: Vec<(&str, &str)> = records
        .iter()
        .filter(|record| record["outcome"] != "invalid_input")
        .map(|record| (record["capability"].as_str().unwrap(), record["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        &outcomes[..5],
        [
            ("test.asks_prompt", "input_required"),
            ("test.asks_prompt", "succeeded"),
            ("test.asks_prompt", "input_required"),
            ("test.asks_resource", "input_required"),
            ("test.asks_resource", "succeeded"),
        ]
    );
}
