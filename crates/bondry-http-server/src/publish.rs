//! Where changes go: a resource a handler says changed, and every swap of a realm's
//! catalogue, reach the sessions and `subscriptions/listen` streams that asked for them,
//! on any listener, and only if their principal can see what changed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bondry_core::capability::{Binding, CapabilityKind, Descriptor};
use bondry_core::dispatch::{self, ResourceResolution};
use bondry_core::handler::{Handler, Publisher, Watching};
use bondry_core::policy::Principal;
use bondry_core::realm::RealmSnapshot;
use bondry_core::registry::Registration;
use bondry_mcp_proto::ADAPTER;
use bondry_mcp_proto::listen::Subscription;
use bondry_mcp_proto::listing;
use tokio::sync::mpsc;

use crate::realm::RealmEntry;
use crate::session::{Owner, Sessions};

/// Every listener's session table, and every open listen stream.
pub struct Publications {
    realms: Arc<HashMap<String, RealmEntry>>,
    tables: Vec<Arc<Sessions>>,
    subscribers: Mutex<HashMap<u64, Subscriber>>,
    next_subscriber: AtomicU64,
}

/// One open `subscriptions/listen` stream.
struct Subscriber {
    realm: String,
    owner: Owner,
    principal: Principal,
    subscription: Subscription,
    sender: mpsc::Sender<String>,
    /// The resources the stream follows, each at the handler serving it, while it is open.
    _watching: Vec<Watching>,
}

/// Messages queued per listen stream before new ones are dropped.
const LISTEN_QUEUE: usize = 64;

/// A listen stream's place in the table, given back when the stream's body drops.
pub struct Listening {
    publications: Arc<Publications>,
    key: u64,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.publications.lock().remove(&self.key);
    }
}

impl Publications {
    pub fn new(realms: Arc<HashMap<String, RealmEntry>>, tables: Vec<Arc<Sessions>>) -> Self {
        Self { realms, tables, subscribers: Mutex::new(HashMap::new()), next_subscriber: AtomicU64::new(0) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Subscriber>> {
        self.subscribers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a listen stream; `None` when `owner` already has `cap` open in `realm`.
    pub fn listen(
        self: &Arc<Self>,
        realm: &str,
        owner: &Owner,
        principal: &Principal,
        subscription: Subscription,
        cap: usize,
    ) -> Option<(Listening, mpsc::Receiver<String>)> {
        let (sender, receiver) = mpsc::channel(LISTEN_QUEUE);
        let mut subscribers = self.lock();
        let open = subscribers.values().filter(|s| s.realm == realm && &s.owner == owner).count();
        if open >= cap {
            return None;
        }
        let key = self.next_subscriber.fetch_add(1, Ordering::Relaxed);
        let snapshot = self.realms.get(realm).map(|entry| entry.registry.snapshot());
        let follow = |snapshot: Arc<RealmSnapshot>| {
            let uris = subscription.resource_uris().iter();
            uris.filter_map(|uri| dispatch::watch(&snapshot, principal, ADAPTER, uri)).collect()
        };
        let watching = snapshot.map(follow).unwrap_or_default();
        let subscriber = Subscriber {
            realm: realm.to_owned(),
            owner: owner.clone(),
            principal: principal.clone(),
            subscription,
            sender,
            _watching: watching,
        };
        subscribers.insert(key, subscriber);
        Some((Listening { publications: Arc::clone(self), key }, receiver))
    }

    /// After a swap of `realm`'s catalogue: every session and listen stream whose view of a
    /// kind changed hears of it, each principal's views compared once.
    pub fn swapped(&self, realm: &str, old: &RealmSnapshot, new: &RealmSnapshot) {
        for kind in listing::ANNOUNCED_LISTS {
            let message = listing::list_changed_notification(kind);
            for table in &self.tables {
                table.notify(realm, |principal| listing::list_changed(old, new, principal, kind), &message);
            }
        }
        let mut subscribers = self.lock();
        // A swap that leaves a stream nothing to follow closes it gracefully.
        let emptied: Vec<u64> = subscribers
            .iter()
            .filter(|(_, s)| s.realm == realm && !s.subscription.still_honoured(new, &s.principal))
            .map(|(key, _)| *key)
            .collect();
        // Letting go of its sender ends the stream with its graceful close.
        for key in emptied {
            subscribers.remove(&key);
        }
        let mut verdicts: Vec<(Principal, CapabilityKind, bool)> = Vec::new();
        for subscriber in subscribers.values().filter(|s| s.realm == realm) {
            for kind in listing::ANNOUNCED_LISTS {
                if !subscriber.subscription.wants_list(kind) {
                    continue;
                }
                let known = verdicts.iter().find(|(p, k, _)| p == &subscriber.principal && *k == kind).map(|v| v.2);
                let differs = known.unwrap_or_else(|| {
                    let differs = listing::list_changed(old, new, &subscriber.principal, kind);
                    verdicts.push((subscriber.principal.clone(), kind, differs));
                    differs
                });
                if let Some(message) = differs.then(|| subscriber.subscription.list_changed(kind)).flatten() {
                    let _ = subscriber.sender.try_send(message);
                }
            }
        }
    }

    /// Tells the sessions subscribed to `uri` in `realm`, and the listen streams that
    /// follow it, whose principal can read it now.
    pub fn resource_updated(&self, realm: &str, uri: &str) {
        let Some(entry) = self.realms.get(realm) else {
            return;
        };
        let snapshot = entry.registry.snapshot();
        // Nobody hears of a resource they cannot read.
        let sees = |principal: &Principal| {
            matches!(dispatch::resolve_resource(&snapshot, principal, ADAPTER, uri), ResourceResolution::Visible { .. })
        };
        let message = bondry_mcp_proto::resources::updated_notification(uri);
        for table in &self.tables {
            table.notify_subscribed(realm, uri, sees, &message);
        }
        for subscriber in self.lock().values().filter(|s| s.realm == realm) {
            if let Some(message) = subscriber.subscription.resource_updated(uri).filter(|_| sees(&subscriber.principal))
            {
                let _ = subscriber.sender.try_send(message);
            }
        }
    }
}

/// The publisher a handler gets: publications about its own realm, and dynamic
/// capabilities served by itself only.
pub struct RealmPublisher {
    pub publications: Arc<Publications>,
    pub realm: String,
    /// The binding of the capability whose call holds this publisher.
    pub binding: Binding,
    pub handler: Arc<dyn Handler>,
}

impl Publisher for RealmPublisher {
    fn resource_updated(&self, uri: &str) {
        self.publications.resource_updated(&self.realm, uri);
    }

    /// Replaces this handler's dynamic capabilities in its realm. Each is bound to this
    /// handler whatever its descriptor says, so no handler can publish another's code.
    fn set_dynamic(&self, capabilities: Vec<Descriptor>) {
        let Some(entry) = self.publications.realms.get(&self.realm) else {
            return;
        };
        let registrations = capabilities
            .into_iter()
            .map(|descriptor| Registration {
                descriptor: Arc::new(Descriptor { binding: self.binding.clone(), ..descriptor }),
                handler: Arc::clone(&self.handler),
            })
            .collect();
        if let Err(error) = entry.registry.set_dynamic(&self.binding.target, registrations) {
            tracing::warn!(realm = %self.realm, handler = %self.binding.target, %error, "dynamic capabilities refused");
        }
    }
}
