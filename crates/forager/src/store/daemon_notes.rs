//! What the daemon keeps of a job beside its crawl state: whether a person
//! paused it (`forager pause`), and the history its dashboard shows (the
//! harvest curve, the learner's last figures, errors by kind). The daemon
//! encodes the value; the store only keeps its bytes, so this layer knows
//! nothing of dashboards.
//!
//! | table          | key | value                         |
//! |----------------|-----|-------------------------------|
//! | `daemon_notes` | job | the daemon's bytes for the job |
//!
//! Written in a durable transaction of its own, not with a checkpoint: a
//! pause must hold across a crash at once, and the history is saved by the
//! daemon's main loop (once a minute and at shutdown), not by each job.
//! A store without the table (made before it existed) reads as empty;
//! `purge` removes a job's value.

use super::{Store, StoreError};
use redb::{ReadableDatabase, TableDefinition};

pub(super) const DAEMON_NOTES: TableDefinition<&str, &[u8]> = TableDefinition::new("daemon_notes");

impl Store {
    /// Every job's daemon notes, by job name.
    pub fn daemon_notes(&self) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let table = match txn.open_table(DAEMON_NOTES) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(e) => return Err(StoreError::Db(e.into())),
            };
            let mut out = Vec::new();
            for row in redb::ReadableTable::iter(&table)? {
                let (k, v) = row?;
                out.push((k.value().to_string(), v.value().to_vec()));
            }
            Ok(out)
        })
    }

    /// Replace the notes of the given jobs (`None` deletes them), durably, in
    /// one transaction. Blocking: call it off the async workers.
    pub fn put_daemon_notes(&self, notes: &[(String, Option<Vec<u8>>)]) -> Result<(), StoreError> {
        if notes.is_empty() {
            return Ok(());
        }
        let db = self.inner.db.get()?;
        super::guard_panics(&self.inner.db.path, || {
            let mut txn = db.begin_write()?;
            txn.set_durability(redb::Durability::Immediate)?;
            txn.set_quick_repair(true);
            {
                let mut table = txn.open_table(DAEMON_NOTES)?;
                for (job, value) in notes {
                    match value {
                        Some(bytes) => {
                            table.insert(job.as_str(), bytes.as_slice())?;
                        }
                        None => {
                            table.remove(job.as_str())?;
                        }
                    }
                }
            }
            txn.commit()?;
            Ok(())
        })
    }
}

/// Drops a job's notes (inside `purge`'s transaction).
pub(super) fn purge(txn: &redb::WriteTransaction, job: &str) -> Result<(), StoreError> {
    txn.open_table(DAEMON_NOTES)?.remove(job)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_survive_a_reopen_and_a_purge_removes_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = Store::open(dir.path(), 1 << 20).expect("open");
            assert!(store.daemon_notes().expect("read").is_empty());
            store
                .put_daemon_notes(&[
                    ("a".into(), Some(b"{\"x\":1}".to_vec())),
                    ("b".into(), Some(b"{}".to_vec())),
                ])
                .expect("write");
            store
                .put_daemon_notes(&[("b".into(), None)])
                .expect("delete");
        }
        let store = Store::open(dir.path(), 1 << 20).expect("reopen");
        assert_eq!(
            store.daemon_notes().expect("read"),
            vec![("a".to_string(), b"{\"x\":1}".to_vec())]
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(store.purge("a")).expect("purge");
        assert!(store.daemon_notes().expect("read").is_empty());
    }
}
