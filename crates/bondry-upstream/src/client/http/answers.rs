//! Reading what the upstream sends back on a request: a JSON body or an SSE stream, read
//! event by event (resumed with `Last-Event-ID` when it ends early) until the response
//! with the request's id, each message within `max_response_bytes`; on the way, notices
//! go to their watch or the inbox and the upstream's requests are answered.

use std::time::Duration;

use bondry_mcp_proto::{Era, Revision};
use bondry_outbound::Response;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::{EVENT_STREAM, Http, REPLY_WITHIN, RESUMES, RETRY_CAP};
use crate::client::ClientError;
use crate::client::sse::{Data, Event, SseDecoder};
use crate::client::watched::Reply;
use crate::client::wire::{Incoming, id_of_truncated, read};
use crate::warnings;
/// How a stream ended.
pub(super) enum Followed {
    Answer(Result<Value, ClientError>),
    Ended { retry: Option<Duration> },
}

impl Http {
    /// The answer to request `id` in `response`.
    pub(super) async fn answer(&self, response: Response, id: &str) -> Result<Value, ClientError> {
        let status = response.status();
        if !status.is_success() {
            // An error status: its JSON-RPC error when its body has one.
            let body = self.body(response).await.unwrap_or_default();
            let error = serde_json::from_slice::<Value>(&body).ok().and_then(|body| body.get("error").cloned());
            return Err(
                error.map_or(ClientError::Http { status: status.as_u16() }, |error| ClientError::from_rpc(&error))
            );
        }
        match media_type(&response) {
            Some(json) if json.eq_ignore_ascii_case("application/json") => {
                let body = self.body(response).await?;
                match read(&body) {
                    Ok(Incoming::Response { id: answered, answer }) if answered == id => answer,
                    Ok(_) => Err(ClientError::Protocol("the JSON answer is not the response to the request".into())),
                    Err(why) => Err(ClientError::Protocol(format!("the JSON answer is {why}"))),
                }
            }
            // Boxed: the stream's reader is large, and held by every call's future otherwise.
            Some(stream) if stream.eq_ignore_ascii_case(EVENT_STREAM) => {
                Box::pin(self.follow_answer(response, id)).await
            }
            _ => Err(ClientError::Protocol(format!("HTTP {status} without a JSON or event-stream answer"))),
        }
    }

    /// Reads a POST's event stream to the answer to `id`, resuming it if the upstream ends
    /// it first after events with ids.
    pub(super) async fn follow_answer(&self, mut response: Response, id: &str) -> Result<Value, ClientError> {
        let mut last_event_id = None;
        let mut resumes = 0;
        loop {
            let retry = match self.follow(response, Some(id), &mut last_event_id).await {
                Followed::Answer(answer) => return answer,
                Followed::Ended { retry } => retry,
            };
            let session = self.session();
            let resumable = session.revision.is_some_and(|revision| revision.era() == Era::Handshake);
            let Some(last) = last_event_id.clone().filter(|_| resumable && resumes < RESUMES) else {
                return Err(ClientError::Closed);
            };
            resumes += 1;
            tokio::time::sleep(retry.unwrap_or_default().min(RETRY_CAP)).await;
            response = self.get(&session, Some(&last)).await?;
            if response.status() != StatusCode::OK
                || !media_type(&response).is_some_and(|media| media.eq_ignore_ascii_case(EVENT_STREAM))
            {
                return Err(ClientError::Closed);
            }
        }
    }

    /// Reads an event stream until the response to `awaiting` or the stream's end.
    pub(super) async fn follow(
        &self,
        mut response: Response,
        awaiting: Option<&str>,
        last_event_id: &mut Option<String>,
    ) -> Followed {
        let mut decoder = SseDecoder::new(self.limit);
        let mut events = Vec::new();
        while let Ok(Some(chunk)) = bondry_outbound::chunk(response.body_mut()).await {
            decoder.feed(&chunk, &mut events);
            if let Some(last) = decoder.last_event_id() {
                *last_event_id = Some(last.to_owned());
            }
            let mut answered = None;
            // Events the chunk holds after the answer are acted on too: a notice sent right
            // after it is not lost with the stream.
            for event in events.drain(..) {
                let answer = self.event(event, awaiting).await;
                answered = answered.or(answer);
            }
            if let Some(answer) = answered {
                return Followed::Answer(answer);
            }
        }
        Followed::Ended { retry: decoder.retry() }
    }

    /// Acts on one event of the stream answering `awaiting` (none: the GET stream); the
    /// answer when it is the response awaited.
    pub(super) async fn event(&self, event: Event, awaiting: Option<&str>) -> Option<Result<Value, ClientError>> {
        let upstream = self.upstream.as_str();
        if event.kind != "message" {
            tracing::debug!(upstream, kind = event.kind, "upstream event of another type ignored");
            return None;
        }
        let data = match event.data {
            Data::Whole(data) => data,
            Data::Overlong { prefix } => {
                if let Some(print) = warnings::hear(upstream, "", "message over max_response_bytes") {
                    let (limit, suppressed) = (self.limit, print.suppressed);
                    tracing::warn!(upstream, limit, suppressed, "upstream message over max_response_bytes dropped");
                }
                let answered = id_of_truncated(&prefix);
                return (awaiting.is_some() && answered.as_deref() == awaiting)
                    .then_some(Err(ClientError::TooLarge { limit: self.limit }));
            }
        };
        match read(&data) {
            Ok(Incoming::Response { id, answer }) if Some(id.as_str()) == awaiting => return Some(answer),
            Ok(Incoming::Response { id, .. }) => {
                tracing::debug!(upstream, id, "upstream response not awaited here dropped")
            }
            // What comes on a request's stream is that request's; what comes on the GET
            // stream names no call, and is the sole call's in flight, as over stdio.
            Ok(Incoming::Notice(notice)) => self.router.notice(upstream, notice, awaiting, awaiting.is_none()),
            Ok(Incoming::Request { id, method, params }) => {
                if let Some(reply) = self.router.request(upstream, id, method, params, awaiting, awaiting.is_none()) {
                    self.reply(reply).await;
                }
            }
            // A priming event (an id and empty data) carries nothing to read.
            Err(_) if data.is_empty() => {}
            Err(why) => {
                if let Some(print) = warnings::hear(upstream, "", why) {
                    tracing::warn!(upstream, why, suppressed = print.suppressed, "upstream event dropped");
                }
            }
        }
        None
    }

    /// POSTs Bondry's own answer to one of the upstream's requests (`ping`, `roots/list`,
    /// a refusal) within [`REPLY_WITHIN`], holding its claim until then (handshake era
    /// only: a modern upstream sends no requests, and has nowhere to receive an answer).
    pub(super) async fn reply(&self, reply: Reply) {
        let session = self.session();
        if session.revision == Some(Revision::V2026_07_28) {
            tracing::debug!(upstream = self.upstream, "request from a modern upstream dropped");
            return;
        }
        let no_headers = HeaderMap::new();
        let posted = tokio::time::timeout(REPLY_WITHIN, self.post(reply.body.into(), &no_headers, &session));
        match posted.await {
            Ok(Ok(response)) if response.status().is_success() => {}
            Ok(Ok(response)) => {
                tracing::debug!(upstream = self.upstream, status = %response.status(), "answer refused")
            }
            Ok(Err(error)) => tracing::debug!(upstream = self.upstream, %error, "answer not delivered"),
            Err(_) => tracing::debug!(upstream = self.upstream, "answer not delivered in time"),
        }
        drop(reply.claim);
    }

    /// A whole JSON body, at most `max_response_bytes`.
    pub(super) async fn body(&self, mut response: Response) -> Result<Vec<u8>, ClientError> {
        let too_large = || {
            if let Some(print) = warnings::hear(&self.upstream, "", "message over max_response_bytes") {
                let (limit, suppressed) = (self.limit, print.suppressed);
                tracing::warn!(
                    upstream = self.upstream,
                    limit,
                    suppressed,
                    "upstream message over max_response_bytes dropped"
                );
            }
            ClientError::TooLarge { limit: self.limit }
        };
        if declared_length(&response).is_some_and(|length| length > self.limit as u64) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = bondry_outbound::chunk(response.body_mut())
            .await
            .map_err(|error| ClientError::Unreachable(error.to_string()))?
        {
            if body.len() + chunk.len() > self.limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// The media type of a response, without parameters (compared ignoring ASCII case).
pub(super) fn media_type(response: &Response) -> Option<&str> {
    let value = response.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next().unwrap_or_default().trim())
}

/// The body's length as its `Content-Length` declares it.
fn declared_length(response: &Response) -> Option<u64> {
    response.headers().get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}
