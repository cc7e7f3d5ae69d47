//! One job's state as bytes, to move it between stores: what a cluster node
//! writes to the cluster database at each checkpoint, and what the node that
//! takes the job over restores into its own store (issue 38,
//! docs/cluster.md).
//!
//! The bytes are every row of the job ([`super::repair`]'s `JobRows`: the
//! record with its learned state, frontier, seen set, manifest, revisit book
//! and poison list), in key order, so that a checkpoint that changed a few
//! rows encodes to mostly unchanged bytes, and the database's
//! content-defined chunks store only what changed. The shared rows (MIME
//! filters, robots.txt copies) are caches every node rebuilds: not moved.

use super::repair::{read_job_in, write_job, JobRows};
use super::{guard_panics, purge_job, ManifestRow, Store, StoreError, JOBS};
use forager_core::codec;
use redb::ReadableDatabase;

/// A job's state, exported.
pub struct ExportedJob {
    /// The encoded rows ([`Store::import_job`] takes them back).
    pub bytes: Vec<u8>,
    /// Its manifest rows, numbered, for the cluster's manifest table.
    pub manifest: Vec<(u64, ManifestRow)>,
}

impl Store {
    /// Every row of `job`, read in one transaction (a consistent
    /// checkpoint); `None` when the store holds nothing of it. Blocking.
    pub fn export_job(&self, job: &str) -> Result<Option<ExportedJob>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            if txn.open_table(JOBS)?.get(job)?.is_none() {
                return Ok(None);
            }
            let rows = read_job_in(&txn, job)?;
            let manifest = rows
                .manifest
                .iter()
                .map(|(n, v)| Ok((*n, super::decode_row::<ManifestRow>("manifest", v)?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok(Some(ExportedJob {
                bytes: codec::encode(&rows),
                manifest,
            }))
        })
    }

    /// Replace whatever this store holds of `job` with `bytes` from
    /// [`Store::export_job`] (another node's checkpoint): the job's stale
    /// rows go first, so that nothing of an older run here survives into
    /// the restored one. Blocking; no runner of `job` may be open.
    pub fn import_job(&self, job: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let rows: JobRows = codec::decode(bytes).map_err(|e| {
            StoreError::Db(redb::Error::Corrupted(format!(
                "job {job}: the checkpoint to restore does not decode: {e}"
            )))
        })?;
        let db = self.inner.db.get()?;
        guard_panics(&self.inner.db.path, || {
            purge_job(&db, job)?;
            write_job(&db, job, &rows)
        })
    }

    /// Delete every row of `job` (blocking; [`Store::purge`] is the async
    /// one through the writer): a job taken over with no checkpoint in the
    /// cluster starts from nothing, not from an older run on this node.
    pub fn forget_job(&self, job: &str) -> Result<(), StoreError> {
        let db = self.inner.db.get()?;
        guard_panics(&self.inner.db.path, || purge_job(&db, job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{JobDelta, JobRecord};

    fn delta(job: &str, seen: std::ops::Range<u64>, rows: u64) -> JobDelta {
        let mut d = JobDelta::new(job);
        d.seen_added = seen.collect();
        d.manifest_added = (0..rows)
            .map(|n| {
                let url = format!("http://a.test/{job}/{n}.csv");
                let row = ManifestRow {
                    url: url.clone(),
                    final_url: url,
                    mime: "text/csv".into(),
                    bytes: n,
                    sha256: "00".repeat(32),
                    file: format!("{n}.csv"),
                    referrer: None,
                    tag_path: "/html/body/a".into(),
                    fetched_at: "2026-11-27T00:00:00Z".into(),
                    truncated: false,
                    rdf: None,
                    structured: None,
                    change: None,
                };
                (n, row)
            })
            .collect();
        d.record = Some(JobRecord {
            strategy: "bfs".into(),
            next_manifest_row: rows,
            ..Default::default()
        });
        d
    }

    #[test]
    fn a_job_exported_from_one_store_replaces_the_stale_rows_of_another() {
        let a_dir = tempfile::tempdir().unwrap();
        let b_dir = tempfile::tempdir().unwrap();
        let a = Store::open(a_dir.path(), 1 << 20).unwrap();
        let b = Store::open(b_dir.path(), 1 << 20).unwrap();
        a.commit_blocking(delta("j", 0..100, 5)).unwrap();
        // b ran the job earlier and further: its rows must not survive.
        b.commit_blocking(delta("j", 500..900, 9)).unwrap();
        b.commit_blocking(delta("other", 0..3, 1)).unwrap();
        let exported = a.export_job("j").unwrap().unwrap();
        assert_eq!(exported.manifest.len(), 5);
        b.import_job("j", &exported.bytes).unwrap();
        let again = b.export_job("j").unwrap().unwrap();
        assert_eq!(again.bytes, exported.bytes, "restored byte for byte");
        assert_eq!(
            b.manifest_rows("other").unwrap().len(),
            1,
            "other jobs untouched"
        );
        assert!(a.export_job("nothing").unwrap().is_none());
        b.forget_job("j").unwrap();
        assert!(b.export_job("j").unwrap().is_none());
    }
}
