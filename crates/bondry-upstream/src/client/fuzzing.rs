//! The fuzz target's door into what a connection does with the messages an upstream
//! sends on its own: bytes split as stdout lines or as SSE events, read, and routed to
//! the calls in flight, the inbox, or Bondry's own answers, with the bounds checked. It
//! drives the connection's own parts (`lines`, `sse`, `wire`, `watched`, `owed`), without
//! a socket or a child.

use std::sync::Arc;

use bondry_mcp_proto::jsonrpc::Id;
use serde_json::Value;
use tokio::sync::mpsc;

use super::lines::{Line, LineSplitter};
use super::owed::Owed;
use super::sse::{Data, SseDecoder};
use super::watched::{CallEvent, Reply, Router, Watchers};
use super::wire::{Incoming, read};
use super::{Inbox, answer};
use crate::spec::Root;

/// What the upstream's messages left held: Bondry's answers not yet written and the
/// requests handed to calls, each keeping its claim.
struct Held {
    replies: Vec<Reply>,
    asked: Vec<CallEvent>,
}

/// Input: a byte choosing the message cap (64 to 4096 bytes), the owed limit (1 to 4),
/// whether a second call is in flight and how long answers are held; the rest is what
/// the upstream sends, read once as stdout lines and once as an event stream.
///
/// Checked: every answer of Bondry's is a JSON-RPC response to the request's own id;
/// an answer without a claim is exactly the refusal past the limit; never more claims
/// live than the limit, and every one comes back once its holder is dropped; the
/// inbox and the calls' queues never hold more than their capacity.
pub fn upstream_messages(data: &[u8]) {
    let [setting, text @ ..] = data else { return };
    let cap = 64 << (setting & 7).min(6);
    let limit = 1 + usize::from(setting >> 3 & 3);
    let (inbox, mut notices) = Inbox::channel(4);
    let watchers = Arc::new(Watchers::default());
    let owed = Owed::new(limit);
    let roots = vec![Root { uri: "file:///work".into(), name: None }];
    let router = Router { inbox, watchers: Arc::clone(&watchers), owed: owed.clone(), roots };
    let (first, mut first_events) = mpsc::channel(2);
    let (second, mut second_events) = mpsc::channel(2);
    let _first = watchers.watch("bondry-1", first);
    let _second = (setting & 0x20 != 0).then(|| watchers.watch("bondry-2", second));
    let keep = usize::from(setting >> 6);
    let mut held = Held { replies: Vec::new(), asked: Vec::new() };

    let mut lines = LineSplitter::new(cap);
    let mut rest = text;
    while !rest.is_empty() {
        let (used, line) = lines.feed(rest);
        assert!(used > 0, "the splitter takes something of every input");
        rest = &rest[used..];
        if let Some(line) = line {
            receive_line(&router, line, None, true, &mut held);
        }
        settle(&mut held, keep, &mut first_events, &mut second_events, limit);
    }
    if let Some(line) = lines.finish() {
        receive_line(&router, line, None, true, &mut held);
    }

    let mut decoder = SseDecoder::new(cap);
    let mut events = Vec::new();
    for (n, chunk) in text.chunks(61).enumerate() {
        decoder.feed(chunk, &mut events);
        // Alternately the GET stream (no carrier) and a call's response stream.
        let carrier = (n % 2 == 1).then_some("bondry-1");
        for event in events.drain(..) {
            if let Data::Whole(bytes) = event.data {
                receive(&router, &bytes, carrier, carrier.is_none(), &mut held);
            }
        }
        settle(&mut held, keep, &mut first_events, &mut second_events, limit);
    }

    let mut drained = 0;
    while notices.try_recv().is_ok() {
        drained += 1;
    }
    assert!(drained <= 4, "the inbox holds at most its capacity");
    drop(held);
    while first_events.try_recv().is_ok() || second_events.try_recv().is_ok() {}
    let claims: Vec<_> = (0..limit).map_while(|_| owed.claim()).collect();
    assert_eq!(claims.len(), limit, "every claim came back");
    assert!(owed.claim().is_none());
}

fn receive_line(router: &Router, line: Line, carrier: Option<&str>, sole: bool, held: &mut Held) {
    if let Line::Whole(bytes) = line {
        receive(router, &bytes, carrier, sole, held);
    }
}

fn receive(router: &Router, bytes: &[u8], carrier: Option<&str>, sole: bool, held: &mut Held) {
    match read(bytes) {
        Ok(Incoming::Request { id, method, params }) => {
            let asked = id.clone();
            if let Some(reply) = router.request("fuzzed", id, method, params, carrier, sole) {
                check_reply(&reply, &asked);
                held.replies.push(reply);
            }
        }
        Ok(Incoming::Notice(notice)) => router.notice("fuzzed", notice, carrier, sole),
        Ok(Incoming::Response { .. }) | Err(_) => {}
    }
}

fn check_reply(reply: &Reply, id: &Id) {
    let body: Value = serde_json::from_slice(&reply.body).expect("Bondry's answer is JSON");
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], serde_json::to_value(id).expect("an id is JSON"), "the request's own id");
    assert!(body.get("result").is_some() != body.get("error").is_some(), "a result or an error: {body}");
    let refused_past_limit = reply.body == answer::too_many(id);
    assert_eq!(reply.claim.is_none(), refused_past_limit, "only the refusal past the limit holds no claim");
}

/// Writes (drops) answers and answers calls' requests beyond the first `keep` held, and
/// checks no more claims are live than the limit.
fn settle(
    held: &mut Held,
    keep: usize,
    first: &mut mpsc::Receiver<CallEvent>,
    second: &mut mpsc::Receiver<CallEvent>,
    limit: usize,
) {
    for events in [first, second] {
        while let Ok(event) = events.try_recv() {
            if matches!(event, CallEvent::Asked(_)) {
                held.asked.push(event);
            }
        }
    }
    let live = held.replies.iter().filter(|reply| reply.claim.is_some()).count() + held.asked.len();
    assert!(live <= limit, "{live} claims live past the limit {limit}");
    held.replies.truncate(keep);
    held.asked.truncate(keep);
}
