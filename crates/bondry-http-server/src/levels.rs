//! Every realm's levels as the metrics read them when scraped: its gauges, and its
//! sessions counted across the listeners' session tables.

use std::collections::HashMap;
use std::sync::Arc;

use bondry_core::telemetry::{Levels, RealmLevels};

use crate::gauges::Reading;
use crate::realm::RealmEntry;
use crate::session::Sessions;

/// Every realm's levels, read when metrics are scraped.
pub struct RuntimeLevels {
    pub(crate) realms: Arc<HashMap<String, RealmEntry>>,
    /// Each listener's session table.
    pub(crate) tables: Vec<Arc<Sessions>>,
}

impl Levels for RuntimeLevels {
    fn realms(&self) -> Vec<RealmLevels> {
        let mut sessions = HashMap::new();
        for table in &self.tables {
            table.count_by_realm(&mut sessions);
        }
        let mut levels: Vec<RealmLevels> = self
            .realms
            .iter()
            .map(|(name, realm)| {
                let Reading { calls, streams, listens } = realm.gauges.read();
                RealmLevels {
                    realm: name.clone(),
                    sessions: sessions.get(name).copied().unwrap_or(0),
                    event_streams: streams as u64,
                    listen_streams: listens as u64,
                    calls: calls as u64,
                }
            })
            .collect();
        levels.sort_by(|a, b| a.realm.cmp(&b.realm));
        levels
    }
}
