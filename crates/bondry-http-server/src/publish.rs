//! Where handlers' publications go: a resource changed, so every session subscribed to
//! it hears of it, on any listener, if its principal can still see the resource.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use bondry_core::capability::Descriptor;
use bondry_core::dispatch::{self, ResourceResolution};
use bondry_core::handler::Publisher;
use bondry_core::policy::Principal;
use bondry_mcp_proto::ADAPTER;

use crate::RealmEntry;
use crate::session::Sessions;

/// Every listener's session table, set once all listeners are bound.
pub struct Publications {
    realms: Arc<HashMap<String, RealmEntry>>,
    tables: OnceLock<Vec<Arc<Sessions>>>,
}

impl Publications {
    pub fn new(realms: Arc<HashMap<String, RealmEntry>>) -> Self {
        Self { realms, tables: OnceLock::new() }
    }

    /// Called once, when every listener's table exists.
    pub fn attach(&self, tables: Vec<Arc<Sessions>>) {
        let _ = self.tables.set(tables);
    }

    fn resource_updated(&self, realm: &str, uri: &str) {
        let (Some(entry), Some(tables)) = (self.realms.get(realm), self.tables.get()) else {
            return;
        };
        let snapshot = entry.registry.snapshot();
        // Nobody hears of a resource they cannot read.
        let sees = |principal: &Principal| {
            matches!(dispatch::resolve_resource(&snapshot, principal, ADAPTER, uri), ResourceResolution::Visible { .. })
        };
        let message = bondry_mcp_proto::resources::updated_notification(uri);
        for table in tables {
            table.notify_subscribed(realm, uri, sees, &message);
        }
    }
}

/// The publisher a handler gets: publications about its own realm.
pub struct RealmPublisher {
    pub publications: Arc<Publications>,
    pub realm: String,
}

impl Publisher for RealmPublisher {
    fn resource_updated(&self, uri: &str) {
        self.publications.resource_updated(&self.realm, uri);
    }

    /// Dynamic capabilities arrive with live catalogue changes (issue 6); until then a
    /// handler's overlay is ignored.
    fn set_dynamic(&self, _capabilities: Vec<Descriptor>) {}
}
