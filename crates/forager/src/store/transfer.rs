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
//!
//! A cluster checkpoint ([`Store::export_checkpoint`]) moves the learned
//! state apart from the other rows: as the chunk list the store keeps for
//! it ([`super::state`]), with the bytes of only the chunks the caller does
//! not already know the database holds. The state, by far the largest
//! part of a job (80 MiB for an sb job with 100 k actions), is then neither
//! assembled, nor cut, nor hashed at each checkpoint; what is read of it
//! grows with what changed since the last one.

use super::repair::{read_job_in, read_job_rows_in, write_job, JobRows};
use super::state::{split, ChunkKey, StateIndex, STATE_CHUNKS, STATE_INDEX};
use super::{guard_panics, purge_job, ManifestRow, Store, StoreError, JOBS};
use forager_core::codec;
use redb::ReadableDatabase;
use std::collections::HashMap;

/// A job's state, exported.
pub struct ExportedJob {
    /// The encoded rows ([`Store::import_job`] takes them back).
    pub bytes: Vec<u8>,
    /// Its manifest rows, numbered, for the cluster's manifest table.
    pub manifest: Vec<(u64, ManifestRow)>,
}

/// A job's checkpoint for the cluster database, in its two parts (module doc).
pub struct JobCheckpoint {
    /// Every row of the job but its learned state, encoded
    /// ([`Store::import_checkpoint`] takes them back).
    pub rows: Vec<u8>,
    /// The learned state's chunks in order, as the store keeps them.
    pub state: StateIndex,
    /// The bytes of each of `state`'s chunks the caller did not know.
    pub state_chunks: HashMap<ChunkKey, Vec<u8>>,
    /// The manifest rows numbered above the caller's `manifest_after`.
    pub manifest: Vec<(u64, ManifestRow)>,
}

impl Store {
    /// `job`'s rows and learned state for a cluster checkpoint (module
    /// doc), read in one transaction; of the state's chunks only those for
    /// which `known` says false are read, and of the manifest rows only
    /// those numbered above `manifest_after` are decoded. `None` when the
    /// store holds nothing of the job. Blocking.
    pub fn export_checkpoint(
        &self,
        job: &str,
        known: &dyn Fn(ChunkKey) -> bool,
        manifest_after: Option<u64>,
    ) -> Result<Option<JobCheckpoint>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            if txn.open_table(JOBS)?.get(job)?.is_none() {
                return Ok(None);
            }
            let mut rows = read_job_rows_in(&txn, job, false)?;
            let damaged = |why: String| StoreError::State {
                job: job.to_string(),
                why,
            };
            let stored_index = match txn.open_table(STATE_INDEX) {
                Ok(t) => match t.get(job)? {
                    Some(v) => Some(super::decode_row::<StateIndex>("state_index", v.value())?),
                    None => None,
                },
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(e.into()),
            };
            let mut state_chunks = HashMap::new();
            let state = match stored_index {
                Some(index) => {
                    let chunks = txn.open_table(STATE_CHUNKS)?;
                    for (i, c) in index.chunks.iter().enumerate() {
                        if known(c.key) || state_chunks.contains_key(&c.key) {
                            continue;
                        }
                        let bytes = chunks
                            .get((job, c.key.0))?
                            .ok_or_else(|| {
                                damaged(format!("state chunk {i} ({:032x}) is missing", c.key.0))
                            })?
                            .value()
                            .to_vec();
                        if bytes.len() != c.len as usize {
                            return Err(damaged(format!(
                                "state chunk {i} ({:032x}) holds {} bytes, its index says {}",
                                c.key.0,
                                bytes.len(),
                                c.len
                            )));
                        }
                        state_chunks.insert(c.key, bytes);
                    }
                    index
                }
                // No state saved in chunks (none yet, or a store older than
                // schema 6): the record's own, cut here.
                None => {
                    let cut = split(&rows.record.strategy_state);
                    for (c, piece) in cut.index.chunks.iter().zip(cut.pieces()) {
                        if !known(c.key) {
                            state_chunks.insert(c.key, piece.to_vec());
                        }
                    }
                    cut.index
                }
            };
            rows.record.strategy_state = Vec::new();
            let manifest = rows
                .manifest
                .iter()
                .filter(|(n, _)| manifest_after.is_none_or(|after| *n > after))
                .map(|(n, v)| Ok((*n, super::decode_row::<ManifestRow>("manifest", v)?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok(Some(JobCheckpoint {
                rows: codec::encode(&rows),
                state,
                state_chunks,
                manifest,
            }))
        })
    }

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
        self.import_checkpoint(job, bytes, None)
    }

    /// [`Store::import_job`] of a checkpoint in two parts
    /// ([`Store::export_checkpoint`]'s rows, and its learned state
    /// assembled): `state` replaces the rows' own (`None`: the rows hold it,
    /// as [`Store::export_job`] writes them). Blocking.
    pub fn import_checkpoint(
        &self,
        job: &str,
        rows: &[u8],
        state: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        let mut rows: JobRows = codec::decode(rows).map_err(|e| {
            StoreError::Db(redb::Error::Corrupted(format!(
                "job {job}: the checkpoint to restore does not decode: {e}"
            )))
        })?;
        if let Some(state) = state {
            rows.record.strategy_state = state.to_vec();
        }
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
    use std::collections::HashMap;

    fn delta(job: &str, seen: std::ops::Range<u64>, rows: u64) -> JobDelta {
        let mut d = JobDelta::new(job);
        d.seen_added = seen.collect();
        d.manifest_added = (0..rows)
            .map(|n| {
                let url = format!("http://a.test/{job}/{n}.csv");
                (n, crate::store::tests::csv_row(url, n))
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

    /// Bytes that cut into many chunks, each seeded apart.
    fn noise(len: usize, seed: u64) -> Vec<u8> {
        use rand::{RngCore, SeedableRng};
        let mut bytes = vec![0u8; len];
        rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed).fill_bytes(&mut bytes);
        bytes
    }

    /// What a cluster database would hold after writing `c`: its state's
    /// chunks added to `db`, and the state assembled from them.
    fn state_of(c: &JobCheckpoint, db: &mut HashMap<ChunkKey, Vec<u8>>) -> Vec<u8> {
        db.extend(c.state_chunks.iter().map(|(k, v)| (*k, v.clone())));
        c.state
            .chunks
            .iter()
            .flat_map(|r| db[&r.key].iter().copied())
            .collect()
    }

    #[test]
    fn a_checkpoint_reads_only_the_state_chunks_the_database_lacks_and_restores_byte_exactly() {
        let a_dir = tempfile::tempdir().unwrap();
        let b_dir = tempfile::tempdir().unwrap();
        let a = Store::open(a_dir.path(), 1 << 20).unwrap();
        let b = Store::open(b_dir.path(), 1 << 20).unwrap();
        let mut learned = noise(2 << 20, 1);
        let mut d = delta("j", 0..1000, 5);
        if let Some(r) = d.record.as_mut() {
            r.strategy_state = learned.clone();
        }
        a.commit_blocking(d).unwrap();

        // The first checkpoint of a lease knows nothing: every chunk is read.
        let mut db: HashMap<ChunkKey, Vec<u8>> = HashMap::new();
        let first = a.export_checkpoint("j", &|_| false, None).unwrap().unwrap();
        assert_eq!(first.state.len(), learned.len());
        assert_eq!(first.state_chunks.len(), first.state.keys().len());
        assert_eq!(first.manifest.len(), 5);
        assert_eq!(state_of(&first, &mut db), learned);
        // The rows part carries no copy of the state.
        assert!(
            first.rows.len() < 100_000,
            "{} bytes of rows",
            first.rows.len()
        );

        // A few edits of the state, a few rows more: only the dirty chunks
        // are read, only the new manifest rows decoded.
        for at in [10_000, 1_000_000, 2_000_000] {
            learned[at] ^= 0xff;
        }
        let mut d = delta("j", 1000..1010, 7);
        if let Some(r) = d.record.as_mut() {
            r.strategy_state = learned.clone();
        }
        a.commit_blocking(d).unwrap();
        let known = first.state.keys();
        let second = a
            .export_checkpoint("j", &|k| known.contains(&k), Some(4))
            .unwrap()
            .unwrap();
        assert!(
            (3..=6).contains(&second.state_chunks.len()),
            "{} chunks read of {}",
            second.state_chunks.len(),
            second.state.chunks.len()
        );
        assert_eq!(
            second.manifest.iter().map(|m| m.0).collect::<Vec<_>>(),
            [5, 6]
        );
        let assembled = state_of(&second, &mut db);
        assert_eq!(assembled, learned);

        // Restored elsewhere from the two parts: the same job, byte for byte.
        b.commit_blocking(delta("j", 500..900, 9)).unwrap();
        b.import_checkpoint("j", &second.rows, Some(&assembled))
            .unwrap();
        assert!(
            b.export_job("j").unwrap().unwrap().bytes == a.export_job("j").unwrap().unwrap().bytes,
            "restored byte for byte"
        );
        assert!(a
            .export_checkpoint("nothing", &|_| false, None)
            .unwrap()
            .is_none());
    }
}
