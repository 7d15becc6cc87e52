//! One request to a web service and its whole answer, within a deadline and a size: the
//! one way procedures and OpenAPI operations talk to their services.

use http::header::CONTENT_TYPE;
use tokio::time::{Instant, timeout_at};

use crate::failure::Failure;

/// A service's answer, read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// Sends `request` through `client` and reads its answer by `deadline`, no further than
/// `max_bytes`: past it the connection is dropped, and the answer is `backend_invalid`
/// (a refusal, 4xx, keeps what fit). A 5xx is `backend_unavailable`, its body unread.
pub async fn send(
    client: &bondry_outbound::Client,
    request: http::Request<bytes::Bytes>,
    deadline: Instant,
    max_bytes: usize,
) -> Result<Answered, Failure> {
    let mut response = timeout_at(deadline, client.send(request))
        .await
        .map_err(|_| Failure::Unavailable("timed out before an answer began".into()))?
        .map_err(|failure| Failure::Unavailable(failure.to_string()))?;
    let status = response.status().as_u16();
    if (500..=599).contains(&status) {
        // What a failing service says is never read: its page may be large, and the
        // call is worth retrying whatever it says.
        return Err(Failure::Unavailable(format!("status {status}")));
    }
    let content_type = response.headers().get(CONTENT_TYPE).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let mut body = Vec::new();
    loop {
        let chunk = timeout_at(deadline, bondry_outbound::chunk(response.body_mut()))
            .await
            .map_err(|_| Failure::Unavailable("timed out while the answer arrived".into()))?
            .map_err(|failure| Failure::Unavailable(failure.to_string()))?;
        let Some(chunk) = chunk else { break };
        if body.len() + chunk.len() > max_bytes {
            // A refusal is quoted only in part: what fits is enough. Anything else over
            // the limit is no answer. Either way, dropping the response drops its
            // connection: nothing more is read.
            if (400..=499).contains(&status) {
                body.extend_from_slice(&chunk[..max_bytes - body.len()]);
                break;
            }
            return Err(Failure::Invalid(format!("an answer over {max_bytes} bytes (max_response_bytes)")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answered { status, content_type, body })
}
