//! A handshake upstream's GET stream, kept open while the connection lives: opened again
//! with backoff when it ends, resumed with `Last-Event-ID`, and the session renewed once
//! when the upstream says it expired.

use std::sync::Arc;

use http::StatusCode;
use tokio::sync::watch;

use super::{EVENT_STREAM, Http, STREAM_STEADY, media_type};
use crate::backoff::{self, Backoff};
use crate::client::ClientError;
impl Http {
    /// The GET stream of a handshake upstream, while the connection lives.
    pub(super) async fn listen(self: Arc<Self>, mut gone: watch::Receiver<()>) {
        let mut last_event_id = None;
        let mut backoff = Backoff::default();
        loop {
            let session = self.session();
            let attempt = async {
                let response = self.get(&session, last_event_id.as_deref()).await?;
                match response.status() {
                    StatusCode::METHOD_NOT_ALLOWED => Ok(Listening::NotOffered),
                    StatusCode::NOT_FOUND if session.id.is_some() => Ok(Listening::Expired),
                    StatusCode::OK
                        if media_type(&response).is_some_and(|media| media.eq_ignore_ascii_case(EVENT_STREAM)) =>
                    {
                        let opened = tokio::time::Instant::now();
                        self.follow(response, None, &mut last_event_id).await;
                        // Only a stream that lived starts the waits over: one the upstream
                        // ends at once is opened again later each time.
                        if opened.elapsed() >= STREAM_STEADY {
                            backoff.succeed();
                        }
                        Ok(Listening::Ended)
                    }
                    status => Err(ClientError::Http { status: status.as_u16() }),
                }
            };
            let outcome = tokio::select! {
                outcome = attempt => outcome,
                _ = gone.changed() => return,
            };
            match outcome {
                Ok(Listening::NotOffered) => {
                    tracing::debug!(upstream = self.upstream, "upstream offers no GET stream");
                    return;
                }
                Ok(Listening::Expired) => {
                    let stale = session.id.unwrap_or_default();
                    let renewed = tokio::select! {
                        renewed = self.renew(&stale) => renewed,
                        _ = gone.changed() => return,
                    };
                    // Listened to again after the backoff all the same: an upstream that
                    // answers 404 to every GET is not initialized again in a loop.
                    if let Err(error) = renewed {
                        tracing::warn!(upstream = self.upstream, %error, "upstream session not renewed");
                    }
                }
                Ok(Listening::Ended) => tracing::debug!(upstream = self.upstream, "upstream GET stream ended"),
                Err(error) => tracing::debug!(upstream = self.upstream, %error, "upstream GET stream failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(backoff.fail(backoff::jitter())) => {}
                _ = gone.changed() => return,
            }
        }
    }
}

enum Listening {
    NotOffered,
    Expired,
    Ended,
}
