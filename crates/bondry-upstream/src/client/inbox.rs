//! Where the notifications an upstream sends on its own go.

use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// One notification from the upstream: `notifications/tools/list_changed`,
/// `notifications/resources/updated`, `notifications/progress`, `notifications/message`…
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub method: String,
    pub params: Map<String, Value>,
}

/// The bounded channel notices are handed to. A full channel drops the notice (logged at
/// debug): a slow consumer never stalls the connection's reading.
#[derive(Debug, Clone)]
pub struct Inbox {
    sender: Option<mpsc::Sender<Notice>>,
}

impl Inbox {
    /// An inbox holding up to `capacity` notices, and its receiving end.
    pub fn channel(capacity: usize) -> (Self, mpsc::Receiver<Notice>) {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        (Self { sender: Some(sender) }, receiver)
    }

    /// An inbox nobody reads: every notice is dropped.
    pub fn discard() -> Self {
        Self { sender: None }
    }

    pub(crate) fn deliver(&self, upstream: &str, notice: Notice) {
        let Some(sender) = &self.sender else { return };
        if let Err(error) = sender.try_send(notice) {
            let method = match &error {
                mpsc::error::TrySendError::Full(notice) | mpsc::error::TrySendError::Closed(notice) => &notice.method,
            };
            tracing::debug!(upstream, method, "upstream notice dropped: the inbox is full or gone");
        }
    }
}
