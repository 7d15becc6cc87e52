//! Listing an upstream: every kind it serves and the stanza exposes, page after page within
//! the stanza's limits, into the listing its realm pins and serves.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bondry_core::capability::CapabilityKind;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::{News, Refreshed, Stop, Upstream, lock, now_ms, read, write};
use crate::client::{ClientError, Connection, Outgoing};
use crate::listing::{Collect, KindListing, Listing, Refused};
use crate::warnings;

impl Upstream {
    /// Lists the upstream now, as an operator asks; whether it listed within `within`.
    /// Refused at once when it is not connected.
    pub async fn list_now(&self, within: Duration) -> Result<(), &'static str> {
        if read(&self.connection).is_none() {
            return Err("the upstream is not connected");
        }
        // A new receiver has seen the current value: only the next listing wakes it.
        let mut refreshed = self.refreshed.subscribe();
        self.asked_to_list.notify_one();
        match tokio::time::timeout(within, refreshed.changed()).await {
            Ok(Ok(())) if refreshed.borrow().listed => Ok(()),
            Ok(_) => Err("the upstream could not be listed"),
            Err(_) => Err("the upstream did not answer its listing in time"),
        }
    }

    /// [`Upstream::refresh`], unless `stop` says to end first: a listing in progress does
    /// not hold a shutdown. `Err` with how the connection ends (`None`: it was lost).
    pub(super) async fn refresh_unless(
        &self,
        stop: &mut watch::Receiver<Stop>,
        connection: &Connection,
        news: &dyn News,
    ) -> Result<(), Option<Stop>> {
        tokio::select! {
            listed = self.refresh(connection, news) => if listed { Ok(()) } else { Err(None) },
            _ = stop.changed() => Err(Some(*stop.borrow())),
        }
    }

    /// Lists every kind the upstream serves and the stanza exposes; whether the connection
    /// is still good. A kind whose listing fails keeps what it listed before.
    async fn refresh(&self, connection: &Connection, news: &dyn News) -> bool {
        let listed = self.list(connection, news).await;
        if listed {
            *lock(&self.last_error) = None;
        }
        self.refreshed.send_replace(Refreshed { at_ms: Some(now_ms()), listed });
        listed
    }

    async fn list(&self, connection: &Connection, news: &dyn News) -> bool {
        let announced = connection.server_capabilities();
        let spec = self.spec();
        let expose = spec.expose;
        let kinds = [
            (CapabilityKind::Tool, expose.tools && announced.get("tools").is_some(), "tools/list", "tools"),
            (CapabilityKind::Prompt, expose.prompts && announced.get("prompts").is_some(), "prompts/list", "prompts"),
            (
                CapabilityKind::Resource,
                expose.resources && announced.get("resources").is_some(),
                "resources/list",
                "resources",
            ),
            (
                CapabilityKind::ResourceTemplate,
                expose.resources && announced.get("resources").is_some(),
                "resources/templates/list",
                "resourceTemplates",
            ),
        ];
        let mut listing = Listing::new();
        for (kind, served, method, field) in kinds {
            if !served {
                listing.push((kind, KindListing::Listed(Vec::new())));
                continue;
            }
            let collect = Collect::new(kind, spec.listing);
            match list(connection, method, field, collect, spec.listing.page_timeout).await {
                Ok(Ok((entries, skipped))) => {
                    for (key, bytes) in skipped {
                        let entry = format!("{method} {key}");
                        let Some(print) = warnings::hear(&self.name, &entry, "over max_definition_bytes") else {
                            continue;
                        };
                        tracing::warn!(
                            upstream = self.name,
                            method,
                            entry = key,
                            bytes,
                            limit = spec.listing.max_definition_bytes,
                            suppressed = print.suppressed,
                            "an upstream entry is over max_definition_bytes: skipped, neither stored nor pinned"
                        );
                    }
                    listing.push((kind, KindListing::Listed(entries)));
                }
                Ok(Err(refused)) => {
                    // The upstream's own message or repeated name is no new cause.
                    let cause = match &refused {
                        Refused::Failed { .. } => "answered an error".to_owned(),
                        Refused::Repeated { key, .. } => format!("a {key} listed twice"),
                        limit => limit.to_string(),
                    };
                    if let Some(print) = warnings::hear(&self.name, method, &cause) {
                        tracing::warn!(
                            upstream = self.name,
                            method,
                            why = %refused,
                            suppressed = print.suppressed,
                            "an upstream listing is refused: what was pinned before stays served"
                        );
                    }
                    listing.push((kind, KindListing::Refused(refused)));
                }
                Err(error) => {
                    if let Some(print) = warnings::hear(&self.name, method, &error.to_string()) {
                        tracing::warn!(upstream = self.name, method, error = ?error.to_string(), suppressed = print.suppressed, "cannot list the upstream");
                    }
                    self.remember_failure(format!("cannot list ({method}): {error}"));
                    return false;
                }
            }
        }
        if listing != self.listing() || !self.has_listed() {
            *write(&self.listing) = listing;
            self.listed.store(true, Ordering::Release);
            news.listed(self);
        }
        true
    }
}

/// Every entry of one list method, following `nextCursor` page after page into
/// `collect` (which refuses the listing past its limits) and stopping at a cursor seen
/// before; each page within `page_timeout`. A JSON-RPC error refuses the listing; a
/// failed or timed-out transport fails it.
async fn list(
    connection: &Connection,
    method: &'static str,
    field: &'static str,
    mut collect: Collect,
    page_timeout: Duration,
) -> Result<Result<(Vec<Value>, Vec<(String, usize)>), Refused>, ClientError> {
    let mut cursors = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = Map::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".into(), json!(cursor));
        }
        let mut page = match tokio::time::timeout(page_timeout, connection.request(Outgoing::new(method, params))).await
        {
            Ok(Ok(page)) => page,
            Ok(Err(ClientError::Rpc { code, message, .. })) => {
                return Ok(Err(Refused::Failed { method, code, message }));
            }
            // The page was dropped unread, and the connection is still good.
            Ok(Err(ClientError::TooLarge { limit })) => return Ok(Err(Refused::PageTooLarge { limit })),
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(ClientError::TimedOut("list_timeout_ms")),
        };
        // A page without its kind's array is not an empty listing: taken as one, it
        // would remove every pin of the kind.
        let Some(Value::Array(entries)) = page.get_mut(field).map(Value::take) else {
            return Ok(Err(Refused::Malformed { field }));
        };
        if let Err(refused) = collect.page(entries) {
            return Ok(Err(refused));
        }
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        match &cursor {
            Some(next) if !cursors.contains(next) => {
                if let Err(refused) = collect.cursor(next) {
                    return Ok(Err(refused));
                }
                cursors.insert(next.clone());
            }
            _ => return Ok(Ok(collect.finish())),
        }
    }
}
