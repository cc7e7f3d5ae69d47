//! A job's learned state in content-defined chunks, so that a checkpoint
//! writes only what changed (issue #19).
//!
//! [`forager_core::strategy::Strategy::save`] gives one blob: 80 MiB for an sb job
//! with 100 k actions. Between two checkpoints little of it changes, but what
//! does is scattered (an arm's statistics, an action's link count, classifier
//! coordinates), and the codec's varints make an edit that changes a length
//! shift every byte after it, so fixed-size pieces would all differ.
//! Content-defined chunking (FastCDC) cuts where the content says: an edit
//! changes the chunk around it, and the cuts after it fall in the same places.
//!
//! Two tables, written in the checkpoint's one transaction with the job's record:
//!
//! | table          | key               | value                                   |
//! |----------------|-------------------|-----------------------------------------|
//! | `state_index`  | job               | [`StateIndex`]: the chunk keys in order |
//! | `state_chunks` | (job, chunk key)  | the chunk's bytes                       |
//!
//! A chunk's key is the first 128 bits of its SHA-256: servers shape what
//! the learner holds, and a hash that can be made to collide would let two
//! chunks share a row. Invariant, kept by [`put_state`]: a job's chunk rows
//! are exactly the distinct keys of its index (no orphan, none missing), so
//! a new state is written as the chunks its index has and the stored one
//! lacks, and the stored one's chunks the new one lacks are deleted.
//! The job record itself is stored with an empty `strategy_state`.

use super::{decode_row, JobRecord, StoreError};
use forager_core::codec;
use redb::{ReadableTable, TableDefinition};
use std::collections::HashSet;

pub(super) const STATE_INDEX: TableDefinition<&str, &[u8]> = TableDefinition::new("state_index");
pub(super) const STATE_CHUNKS: TableDefinition<(&str, u128), &[u8]> =
    TableDefinition::new("state_chunks");

pub use forager_core::chunk::{split, ChunkKey, ChunkRef, Chunked, StateIndex};
#[cfg(test)]
use forager_core::chunk::{MAX_CHUNK, MIN_CHUNK};

/// What replacing a stored state by a new one writes: the chunks the stored
/// state lacks (the dirty ones), each once, and the stored chunks the new one
/// no longer uses.
#[derive(Debug, Default, PartialEq)]
pub struct StateDiff<'a> {
    pub put: Vec<(ChunkKey, &'a [u8])>,
    pub remove: Vec<ChunkKey>,
}

pub fn diff<'a>(stored: Option<&StateIndex>, new: &Chunked<'a>) -> StateDiff<'a> {
    let old = stored.map(StateIndex::keys).unwrap_or_default();
    let mut put = Vec::new();
    let mut seen = HashSet::new();
    for (c, piece) in new.index.chunks.iter().zip(new.pieces()) {
        if !old.contains(&c.key) && seen.insert(c.key) {
            put.push((c.key, *piece));
        }
    }
    let kept = new.index.keys();
    let mut remove: Vec<ChunkKey> = old.into_iter().filter(|k| !kept.contains(k)).collect();
    remove.sort_unstable();
    StateDiff { put, remove }
}

/// Rebuild a state from its index; `append(key, out)` appends the chunk's
/// bytes to `out` and says whether it had it. Chunks may be read in any order
/// the reader likes: the index alone decides where each one goes.
pub fn assemble(
    job: &str,
    index: &StateIndex,
    mut append: impl FnMut(ChunkKey, &mut Vec<u8>) -> Result<bool, StoreError>,
) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(index.len());
    for (i, c) in index.chunks.iter().enumerate() {
        let before = out.len();
        if !append(c.key, &mut out)? {
            return Err(damaged(
                job,
                format!("chunk {i} ({:032x}) is missing", c.key.0),
            ));
        }
        if out.len() - before != c.len as usize {
            return Err(damaged(
                job,
                format!(
                    "chunk {i} ({:032x}) holds {} bytes, its index says {}",
                    c.key.0,
                    out.len() - before,
                    c.len
                ),
            ));
        }
    }
    Ok(out)
}

fn damaged(job: &str, why: String) -> StoreError {
    StoreError::State {
        job: job.to_string(),
        why,
    }
}

/// What [`put_state`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateWrite {
    /// Chunk and index bytes written.
    pub bytes: u64,
    pub chunks_put: u64,
    pub chunks_removed: u64,
}

/// Replace `job`'s stored state by `bytes`, writing only the chunks it did
/// not have (inside the caller's transaction).
pub(super) fn put_state(
    index_table: &mut redb::Table<'_, &'static str, &'static [u8]>,
    chunk_table: &mut redb::Table<'_, (&'static str, u128), &'static [u8]>,
    job: &str,
    bytes: &[u8],
) -> Result<StateWrite, StoreError> {
    let stored: Option<StateIndex> = match index_table.get(job)? {
        Some(v) => Some(decode_row("state_index", v.value())?),
        None => None,
    };
    let new = split(bytes);
    if stored.as_ref() == Some(&new.index) {
        return Ok(StateWrite::default());
    }
    let change = diff(stored.as_ref(), &new);
    let mut written = StateWrite {
        chunks_put: change.put.len() as u64,
        chunks_removed: change.remove.len() as u64,
        ..StateWrite::default()
    };
    for (key, piece) in &change.put {
        chunk_table.insert((job, key.0), *piece)?;
        written.bytes += piece.len() as u64;
    }
    for key in &change.remove {
        chunk_table.remove((job, key.0))?;
    }
    let index = codec::encode(&new.index);
    index_table.insert(job, index.as_slice())?;
    written.bytes += index.len() as u64;
    Ok(written)
}

/// `job`'s state as stored, or `None` when it has no index (nothing saved).
pub(super) fn read_state(
    index_table: &impl ReadableTable<&'static str, &'static [u8]>,
    chunk_table: &impl ReadableTable<(&'static str, u128), &'static [u8]>,
    job: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    let Some(v) = index_table.get(job)? else {
        return Ok(None);
    };
    let index: StateIndex = decode_row("state_index", v.value())?;
    let state = assemble(job, &index, |key, out| {
        Ok(match chunk_table.get((job, key.0))? {
            Some(chunk) => {
                out.extend_from_slice(chunk.value());
                true
            }
            None => false,
        })
    })?;
    Ok(Some(state))
}

/// The record as stored: its learned state lives in the chunk tables.
pub(super) fn stored_record(record: &JobRecord) -> Vec<u8> {
    let without_state = JobRecord {
        strategy: record.strategy.clone(),
        seed: record.seed,
        counters: record.counters.clone(),
        strategy_state: Vec::new(),
        early_stop_state: record.early_stop_state.clone(),
        trap_state: record.trap_state.clone(),
        next_link_id: record.next_link_id,
        next_manifest_row: record.next_manifest_row,
        stop: record.stop,
        updated_at: record.updated_at,
    };
    codec::encode(&without_state)
}

/// Schema 5 and older → 6: each job's learned state moves from its record
/// into chunks, one job at a time (a daemon's store may hold many large ones).
pub(super) fn migrate_records(txn: &redb::WriteTransaction) -> Result<u64, StoreError> {
    let mut jobs = txn.open_table(super::JOBS)?;
    let mut index_table = txn.open_table(STATE_INDEX)?;
    let mut chunk_table = txn.open_table(STATE_CHUNKS)?;
    let mut names = Vec::new();
    for row in jobs.iter()? {
        let (k, _) = row?;
        names.push(k.value().to_string());
    }
    let mut moved = 0;
    for name in names {
        let record: JobRecord = match jobs.get(name.as_str())? {
            Some(v) => decode_row("jobs", v.value())?,
            None => continue,
        };
        put_state(
            &mut index_table,
            &mut chunk_table,
            &name,
            &record.strategy_state,
        )?;
        jobs.insert(name.as_str(), stored_record(&record).as_slice())?;
        moved += 1;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use std::collections::HashMap;

    fn noise(len: usize, seed: u64) -> Vec<u8> {
        let mut bytes = vec![0u8; len];
        Xoshiro256PlusPlus::seed_from_u64(seed).fill_bytes(&mut bytes);
        bytes
    }

    fn chunk_map(bytes: &[u8]) -> HashMap<ChunkKey, Vec<u8>> {
        let c = split(bytes);
        c.index
            .chunks
            .iter()
            .zip(c.pieces())
            .map(|(r, p)| (r.key, p.to_vec()))
            .collect()
    }

    #[test]
    fn chunks_cover_the_state_in_order_within_their_bounds() {
        let bytes = noise(1 << 20, 1);
        let c = split(&bytes);
        assert_eq!(c.pieces().concat(), bytes);
        assert_eq!(c.index.len(), bytes.len());
        let (last, rest) = c.index.chunks.split_last().unwrap();
        assert!(rest
            .iter()
            .all(|r| (MIN_CHUNK..=MAX_CHUNK).contains(&(r.len as usize))));
        assert!(last.len as usize <= MAX_CHUNK);
        // About the average size, and the same cuts every time.
        let n = c.index.chunks.len();
        assert!((64..=1024).contains(&n), "{n} chunks of 1 MiB");
        assert_eq!(split(&bytes).index, c.index);
        assert!(split(&[]).index.is_empty());
    }

    #[test]
    fn scattered_edits_dirty_only_the_chunks_around_them() {
        let old = noise(4 << 20, 2);
        let stored = split(&old).index;
        let mut new = old.clone();
        // Three edits in place and one that shifts everything after it (a
        // varint that grew), as a checkpoint's learner changes look.
        for at in [100_000, 1_500_000, 3_000_000] {
            new[at] ^= 0xff;
        }
        new.splice(2_000_000..2_000_000, [7u8, 7, 7]);
        let c = split(&new);
        let d = diff(Some(&stored), &c);
        // Each edit dirties its chunk, sometimes the next one too (a cut moved).
        assert!(
            (4..=8).contains(&d.put.len()),
            "{} chunks dirty of {}",
            d.put.len(),
            c.index.chunks.len()
        );
        assert!(d.remove.len() <= 8, "{} removed", d.remove.len());
        let dirty: usize = d.put.iter().map(|(_, p)| p.len()).sum();
        assert!(
            dirty < new.len() / 50,
            "{dirty} of {} bytes dirty",
            new.len()
        );
        // Nothing changed, nothing written; no state stored, everything written.
        assert_eq!(diff(Some(&c.index), &c), StateDiff::default());
        let fresh = diff(None, &c);
        assert_eq!(fresh.put.len(), c.index.keys().len());
        assert!(fresh.remove.is_empty());
    }

    #[test]
    fn a_repeated_chunk_is_put_once_and_kept_while_used() {
        let block = noise(64 << 10, 3);
        // Zeros cut at the maximum size: many chunks with one key.
        let bytes = [block.clone(), vec![0u8; 200_000], block].concat();
        let c = split(&bytes);
        let d = diff(None, &c);
        let keys: HashSet<ChunkKey> = d.put.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys.len(), d.put.len(), "each key put once");
        assert!(d.put.len() < c.index.chunks.len());
        let map = chunk_map(&bytes);
        let back = assemble("j", &c.index, |k, out| {
            Ok(map.get(&k).map(|b| out.extend_from_slice(b)).is_some())
        })
        .unwrap();
        assert_eq!(back, bytes);
    }

    #[test]
    fn a_state_assembles_from_chunks_read_in_any_order() {
        let bytes = noise(300_000, 4);
        let index = split(&bytes).index;
        let mut chunks: Vec<(ChunkKey, Vec<u8>)> = chunk_map(&bytes).into_iter().collect();
        for seed in 0..4u64 {
            // Reverse, then rotate: the order chunks arrive in never matters.
            chunks.reverse();
            let n = chunks.len();
            chunks.rotate_left(seed as usize % n);
            let back = assemble("j", &index, |k, out| {
                let found = chunks.iter().find(|(key, _)| *key == k);
                if let Some((_, b)) = found {
                    out.extend_from_slice(b);
                }
                Ok(found.is_some())
            })
            .unwrap();
            assert_eq!(back, bytes);
        }
        // A missing chunk or one of the wrong length is damage, named.
        let e = assemble("j", &index, |_, _| Ok(false)).unwrap_err();
        assert!(e.to_string().contains("chunk 0"), "{e}");
        let e = assemble("j", &index, |_, out| {
            out.push(1);
            Ok(true)
        })
        .unwrap_err();
        assert!(e.to_string().contains("its index says"), "{e}");
    }

    /// The chunk rows of `job` equal the distinct keys of its index.
    fn assert_rows_match_index(db: &redb::Database, job: &str) -> StateIndex {
        use redb::ReadableDatabase;
        let txn = db.begin_read().unwrap();
        let index: StateIndex = codec::decode(
            txn.open_table(STATE_INDEX)
                .unwrap()
                .get(job)
                .unwrap()
                .unwrap()
                .value(),
        )
        .unwrap();
        let rows: HashSet<ChunkKey> = txn
            .open_table(STATE_CHUNKS)
            .unwrap()
            .range((job, 0u128)..=(job, u128::MAX))
            .unwrap()
            .map(|r| ChunkKey(r.unwrap().0.value().1))
            .collect();
        assert_eq!(rows, index.keys());
        index
    }

    #[test]
    fn put_state_writes_the_dirty_chunks_and_drops_the_unused_ones() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("s.redb")).unwrap();
        let put = |job: &str, bytes: &[u8]| {
            let txn = db.begin_write().unwrap();
            let w = {
                let mut index = txn.open_table(STATE_INDEX).unwrap();
                let mut chunks = txn.open_table(STATE_CHUNKS).unwrap();
                put_state(&mut index, &mut chunks, job, bytes).unwrap()
            };
            txn.commit().unwrap();
            w
        };
        let read = |job: &str| {
            use redb::ReadableDatabase;
            let txn = db.begin_read().unwrap();
            let index = txn.open_table(STATE_INDEX).unwrap();
            let chunks = txn.open_table(STATE_CHUNKS).unwrap();
            read_state(&index, &chunks, job).unwrap()
        };
        put("b", &noise(100_000, 6));
        assert_eq!(read("a"), None);
        let first = noise(2 << 20, 5);
        let w = put("a", &first);
        assert!(w.bytes > first.len() as u64 && w.chunks_removed == 0);
        assert_eq!(read("a").as_deref(), Some(first.as_slice()));
        assert_rows_match_index(&db, "a");

        let mut second = first.clone();
        second[1 << 20] ^= 1;
        second.truncate(first.len() - 50_000);
        let w = put("a", &second);
        assert!(w.chunks_put <= 3 && w.chunks_removed >= 1, "{w:?}");
        assert!(w.bytes < 96 << 10, "{w:?}");
        assert_eq!(read("a").as_deref(), Some(second.as_slice()));
        assert_rows_match_index(&db, "a");
        // The same state again writes nothing, not even the index.
        assert_eq!(put("a", &second), StateWrite::default());
        // An empty state keeps an empty index and no chunk.
        put("a", &[]);
        assert!(assert_rows_match_index(&db, "a").is_empty());
        assert_eq!(read("a").as_deref(), Some(&[][..]));
        assert_eq!(read("b").map(|b| b.len()), Some(100_000));
    }
}
