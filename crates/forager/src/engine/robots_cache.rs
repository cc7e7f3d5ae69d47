//! Persistence of the robots.txt cache: one `shared` blob per origin,
//! rewritten only when a newer copy was fetched, reloaded at start so a
//! restart does not fetch every robots.txt again (ARCHITECTURE.md § Politeness and safety: once a day).

use crate::fetch::{Fetcher, RobotsRecord};
use crate::store::{JobDelta, Store, StoreError};
use forager_core::codec;
use std::collections::HashMap;
use std::sync::Mutex;

const PREFIX: &str = "robots/";

/// When each origin's stored copy was fetched (what the store already has).
#[derive(Debug, Default)]
pub struct PersistedRobots {
    fetched_at_ms: Mutex<HashMap<String, u64>>,
}

impl PersistedRobots {
    /// Load every stored record into the fetcher's cache.
    pub fn load(store: &Store, fetcher: &Fetcher) -> Result<PersistedRobots, StoreError> {
        let mut seen = HashMap::new();
        for (key, bytes) in store.shared_with_prefix(PREFIX)? {
            match codec::decode::<RobotsRecord>(&bytes) {
                Ok(record) => {
                    seen.insert(record.origin.clone(), record.fetched_at_ms);
                    fetcher.import_robots(record);
                }
                Err(e) => tracing::warn!(key, error = %e, "stored robots.txt skipped"),
            }
        }
        Ok(PersistedRobots {
            fetched_at_ms: Mutex::new(seen),
        })
    }

    /// Put records fetched since they were last stored into `delta`.
    pub fn stage(&self, fetcher: &Fetcher, delta: &mut JobDelta) {
        let mut stored = self.fetched_at_ms.lock().unwrap_or_else(|p| p.into_inner());
        let mut fresh = Vec::new();
        for record in fetcher.robots_records() {
            if stored.get(&record.origin) == Some(&record.fetched_at_ms) {
                continue;
            }
            stored.insert(record.origin.clone(), record.fetched_at_ms);
            fresh.push((format!("{PREFIX}{}", record.origin), codec::encode(&record)));
        }
        delta.stage_shared(fresh);
    }
}
