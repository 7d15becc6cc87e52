//! The requests sent on a stdio connection that await their answer, by id.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::oneshot;

use super::ClientError;

type Answer = Result<Value, ClientError>;

/// `None` once the connection is dead: nothing more can wait.
#[derive(Debug, Default)]
pub(crate) struct Pending(Mutex<Option<HashMap<String, oneshot::Sender<Answer>>>>);

impl Pending {
    pub(crate) fn new() -> Self {
        Self(Mutex::new(Some(HashMap::new())))
    }

    /// Waits for the answer to `id`; `Closed` at once on a dead connection.
    pub(crate) fn register(&self, id: &str) -> Result<oneshot::Receiver<Answer>, ClientError> {
        let (sender, receiver) = oneshot::channel();
        self.table().as_mut().ok_or(ClientError::Closed)?.insert(id.to_owned(), sender);
        Ok(receiver)
    }

    /// Hands `answer` to the request `id`; `false` when none waits for it.
    pub(crate) fn complete(&self, id: &str, answer: Answer) -> bool {
        let waiting = self.table().as_mut().and_then(|table| table.remove(id));
        waiting.is_some_and(|sender| sender.send(answer).is_ok())
    }

    pub(crate) fn forget(&self, id: &str) {
        if let Some(table) = self.table().as_mut() {
            table.remove(id);
        }
    }

    /// The connection died: every waiting request fails with `Closed`, and so does every later one.
    pub(crate) fn close(&self) {
        for (_, sender) in self.table().take().into_iter().flatten() {
            let _ = sender.send(Err(ClientError::Closed));
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Option<HashMap<String, oneshot::Sender<Answer>>>> {
        self.0.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}
