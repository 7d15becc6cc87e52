//! The loop that drives a conversation to its end: it runs the handler, and in a
//! session carries the call's questions to the client and the answers back.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::SystemTime;

use bondry_core::handler::Emitter;
use bondry_mcp_proto::jsonrpc::Id;
use bondry_mcp_proto::{Call, Conversation, Next};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::context::TokenCancellation;
use crate::listener::Endpoint;
use crate::publish::RealmPublisher;
use crate::random::OsRandom;
use crate::session::Sessions;

/// A session call's way to its client: the call's stream, in its session.
#[derive(Clone, Copy)]
pub struct Client<'a> {
    pub queue: &'a mpsc::Sender<String>,
    pub sid: &'a str,
}

/// Drives `conversation` until it is done. Without a `client` (a modern call) every
/// question is unreachable, and the conversation answers with its input request.
pub async fn drive(
    endpoint: &Endpoint,
    conversation: &mut Conversation,
    token: &CancellationToken,
    emitter: Arc<dyn Emitter>,
    client: Option<Client<'_>>,
) {
    let cancellation = Arc::new(TokenCancellation(token.clone()));
    let publisher = publisher(endpoint, conversation.call());
    let mut round: Option<Round> = None;
    loop {
        match conversation.poll() {
            Next::Invoke => {
                round = None;
                let request =
                    conversation.call().handler_request(cancellation.clone(), emitter.clone(), publisher.clone());
                let outcome = CancelOnDrop {
                    token: token.clone(),
                    work: conversation.invoke(request, SystemTime::now()),
                    done: false,
                }
                .await;
                // A handler that noticed its cancellation may still have answered: nothing is sent.
                if token.is_cancelled() {
                    conversation.cancel_after(&outcome, SystemTime::now());
                } else {
                    conversation.handle_outcome(outcome, SystemTime::now(), &mut OsRandom);
                }
            }
            Next::Ask(questions) => {
                let Some(client) = client else {
                    conversation.handle_unreachable(SystemTime::now(), &mut OsRandom);
                    continue;
                };
                // Every id this round waits for is forgotten when the round ends, however
                // it ends (answered, timed out, or the call dropped).
                let asking = round.insert(Round::new(&endpoint.sessions, client.sid));
                for question in questions {
                    let Some((id, answer)) = endpoint.sessions.expect_answer(client.sid) else {
                        conversation.handle_refused(SystemTime::now(), &mut OsRandom);
                        break;
                    };
                    asking.ids.push(id.clone());
                    // The client reads its requests on this call's stream; without it, it cannot answer.
                    if client.queue.send(question.message(&id)).await.is_err() {
                        conversation.handle_unreachable(SystemTime::now(), &mut OsRandom);
                        break;
                    }
                    asking.answers.push_back((question.key, answer));
                }
                conversation.handle_asked(SystemTime::now());
            }
            Next::Wait(deadline) => {
                let Some((key, answer)) = round.as_mut().and_then(|round| round.answers.pop_front()) else {
                    conversation.handle_timeout(SystemTime::now(), &mut OsRandom);
                    continue;
                };
                let left = deadline.duration_since(SystemTime::now()).unwrap_or_default();
                match tokio::time::timeout(left, answer).await {
                    Ok(Ok(answer)) => conversation.handle_answer(&key, answer, SystemTime::now(), &mut OsRandom),
                    // Timed out, or the session ended and nobody can answer any more.
                    Ok(Err(_)) | Err(_) => conversation.handle_timeout(SystemTime::now(), &mut OsRandom),
                }
            }
            Next::Done => return,
        }
    }
}

/// The publisher of `call`'s handler.
fn publisher(endpoint: &Endpoint, call: &Call) -> Arc<RealmPublisher> {
    let capability = call.capability();
    Arc::new(RealmPublisher {
        publications: Arc::clone(&endpoint.publications),
        realm: call.realm().to_owned(),
        binding: capability.descriptor.binding.clone(),
        handler: Arc::clone(&capability.handler),
    })
}

/// One round of a session call's questions: the ids the session waits on, forgotten when
/// dropped, and the answers still to come.
struct Round {
    sessions: Arc<Sessions>,
    sid: String,
    ids: Vec<Id>,
    answers: VecDeque<(String, oneshot::Receiver<Result<Value, Value>>)>,
}

impl Round {
    fn new(sessions: &Arc<Sessions>, sid: &str) -> Self {
        Self { sessions: Arc::clone(sessions), sid: sid.to_owned(), ids: Vec::new(), answers: VecDeque::new() }
    }
}

impl Drop for Round {
    fn drop(&mut self) {
        for id in &self.ids {
            self.sessions.forget_answer(&self.sid, id);
        }
    }
}

/// A handler's future that, dropped before it finished, cancels the call's token first:
/// work the handler spawned hears of the cancellation while its future is torn down.
struct CancelOnDrop<F> {
    token: CancellationToken,
    work: F,
    done: bool,
}

impl<F: Future + Unpin> Future for CancelOnDrop<F> {
    type Output = F::Output;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let output = std::pin::Pin::new(&mut self.work).poll(cx);
        self.done = output.is_ready();
        output
    }
}

impl<F> Drop for CancelOnDrop<F> {
    fn drop(&mut self) {
        if !self.done {
            self.token.cancel();
        }
    }
}
