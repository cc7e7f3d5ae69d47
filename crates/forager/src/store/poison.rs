//! The poison list: documents a job no longer parses (issue #36). A
//! document that was being parsed when the process died, twice, or that
//! blew its byte budget once, is recorded here under its job and URL, so
//! that no restart fetches it into the same crash again (a daemon served a
//! hostile seed aborted on every restart while the seed stayed in the
//! frontier).
//!
//! | table    | key             | value           |
//! |----------|-----------------|-----------------|
//! | `poison` | (job, URL hash) | [`PoisonEntry`] |
//!
//! An entry is written in its own durable transaction when it is found, not
//! with the next checkpoint: the process it guards against may not live to
//! that checkpoint. Entries are few (one per hostile document), so the table
//! is read whole when a job starts. A store without the table (made before
//! it existed) reads as an empty list; `purge` removes a job's entries.

use super::{decode_row, Store, StoreError};
use forager_core::codec;
use redb::{ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub(super) const POISON: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("poison");

/// Why a document is on the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoisonReason {
    /// The process died while parsing it ([`PoisonEntry::strikes`] times).
    Crashed,
    /// Parsing it went over the document's byte budget, or its DTD entities would have.
    OverBudget,
}

impl PoisonReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PoisonReason::Crashed => "crashed",
            PoisonReason::OverBudget => "over_budget",
        }
    }
}

/// One document of the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoisonEntry {
    pub url: String,
    pub reason: PoisonReason,
    /// Times the process died while parsing it (0 for [`PoisonReason::OverBudget`]).
    pub strikes: u32,
    /// What was seen (the cut, the entity refused), for a person.
    pub detail: String,
    /// Unix seconds of the last event.
    pub at: u64,
}

/// The key of a URL in the table.
pub fn url_key(url: &str) -> u64 {
    let digest = Sha256::digest(url.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

impl Store {
    /// A job's poison list.
    pub fn poison_list(&self, job: &str) -> Result<Vec<PoisonEntry>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let table = match txn.open_table(POISON) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(e) => return Err(StoreError::Db(e.into())),
            };
            let mut entries = Vec::new();
            for row in table.range((job, 0u64)..=(job, u64::MAX))? {
                let (_, v) = row?;
                entries.push(decode_row("poison", v.value())?);
            }
            Ok(entries)
        })
    }

    /// Adds (or replaces) entries of a job's list, durably, in one
    /// transaction of its own. Blocking: call it off the async workers.
    pub fn record_poison(&self, job: &str, entries: &[PoisonEntry]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let db = self.inner.db.get()?;
        super::guard_panics(&self.inner.db.path, || {
            let mut txn = db.begin_write()?;
            txn.set_durability(redb::Durability::Immediate)?;
            txn.set_quick_repair(true);
            {
                let mut table = txn.open_table(POISON)?;
                for entry in entries {
                    table.insert((job, url_key(&entry.url)), codec::encode(entry).as_slice())?;
                }
            }
            txn.commit()?;
            Ok(())
        })
    }
}

/// Drops a job's entries (inside `purge`'s transaction).
pub(super) fn purge(txn: &redb::WriteTransaction, job: &str) -> Result<(), StoreError> {
    txn.open_table(POISON)?
        .retain_in((job, 0u64)..=(job, u64::MAX), |_, _| false)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str, reason: PoisonReason) -> PoisonEntry {
        PoisonEntry {
            url: url.to_string(),
            reason,
            strikes: 1,
            detail: "test".into(),
            at: 1,
        }
    }

    #[test]
    fn entries_survive_a_reopen_and_a_purge_removes_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = Store::open(dir.path(), 1 << 20).expect("open");
            assert!(store.poison_list("a").expect("list").is_empty());
            store
                .record_poison(
                    "a",
                    &[
                        entry("http://x.test/bomb.rdf", PoisonReason::OverBudget),
                        entry("http://x.test/crash.ttl", PoisonReason::Crashed),
                    ],
                )
                .expect("record");
            let mut again = entry("http://x.test/crash.ttl", PoisonReason::Crashed);
            again.strikes = 2;
            store.record_poison("a", &[again]).expect("record");
            store
                .record_poison("b", &[entry("http://y.test/", PoisonReason::Crashed)])
                .expect("record");
        }
        let store = Store::open(dir.path(), 1 << 20).expect("reopen");
        let mut list = store.poison_list("a").expect("list");
        list.sort_by(|x, y| x.url.cmp(&y.url));
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].strikes, 2);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(store.purge("a")).expect("purge");
        assert!(store.poison_list("a").expect("list").is_empty());
        assert_eq!(store.poison_list("b").expect("list").len(), 1);
    }
}
