//! A job's checkpoint in the database, so that the node that takes the job
//! over restores it byte for byte.
//!
//! A checkpoint has two parts ([`CheckpointParts`]): the job's rows (its
//! record, frontier, seen set, manifest… encoded by the caller), cut here
//! into content-defined chunks ([`forager_core::chunk`], the store's own
//! cut), and its learned state, which the caller's store already holds in
//! those same chunks: its chunk list is taken as it is, and only the bytes
//! of chunks the database may lack are handed over. A checkpoint is written
//! as the chunks the database lacks for this job, then the head row (both
//! chunk lists, the total length, the SHA-256 of the encoded lists, the
//! writer's epoch and a sequence number), then the removal of chunks the
//! head no longer names, all in one transaction fenced by the lease.
//!
//! The writer keeps [`StoredChunks`] between its checkpoints: the chunk
//! names its last committed write left in the database. With it, a
//! checkpoint asks the database nothing about chunks, sends only the new
//! ones and deletes only the ones that left: what a checkpoint costs the
//! node and the database grows with what changed, plus the head's chunk
//! lists (about 19 bytes per 4 KiB chunk). Without it (the first checkpoint
//! of a lease, or after a write whose outcome is unknown) the database is
//! asked which of the chunks it holds, as every checkpoint did before.
//!
//! Reading checks every chunk against its name (the first 128 bits of its
//! SHA-256) and the chunk lists against the head's SHA-256, so a damaged row
//! is an error, never a wrong state. Heads written before the two parts
//! (format 1: one blob, whose SHA-256 the head holds) are still read.

use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};

use forager_core::chunk::{split, ChunkKey, StateIndex};
use forager_core::codec;

use crate::{Cluster, ClusterError, Lease, Result};

/// The head's `format`: one blob, its SHA-256 in the head (schema 1–4).
const FORMAT_BLOB: i16 = 1;
/// The head's `format`: a [`HeadIndex`] of two parts, its own SHA-256 in the head.
const FORMAT_PARTS: i16 = 2;

/// What [`Cluster::write_checkpoint_parts`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointWrite {
    /// The head's sequence number after this write (1 for the first).
    pub seq: i64,
    /// Chunks the checkpoint names (both parts).
    pub chunks: usize,
    pub chunks_put: usize,
    pub bytes_put: usize,
    pub chunks_removed: u64,
    /// Bytes of the head's chunk lists.
    pub head_bytes: usize,
    /// Whether the database was asked which chunks it holds (no [`StoredChunks`] known).
    pub asked_stored: bool,
}

/// A checkpoint to write (module doc).
#[derive(Clone, Copy, Debug)]
pub struct CheckpointParts<'a> {
    /// Bytes cut into chunks here.
    pub rows: &'a [u8],
    /// A part already in chunks (the learned state, as the store keeps it).
    pub state: &'a StateIndex,
    /// The bytes of `state`'s chunks that the database may lack: at least
    /// every key of `state` that the writer's [`StoredChunks`] does not know
    /// (all of them when it knows none).
    pub state_chunks: &'a HashMap<ChunkKey, Vec<u8>>,
}

/// The chunk names a job's last committed checkpoint left in the database,
/// kept by its writer from one checkpoint to the next (module doc). Only the
/// lease holder writes a job's chunks, so this stays true while the lease
/// holds; a new lease starts with an empty one.
#[derive(Clone, Debug, Default)]
pub struct StoredChunks {
    keys: Option<HashSet<ChunkKey>>,
}

impl StoredChunks {
    /// The database holds this chunk for the job (as far as this writer knows).
    pub fn knows(&self, key: ChunkKey) -> bool {
        self.keys.as_ref().is_some_and(|k| k.contains(&key))
    }

    /// Whether any write was committed since this was made or forgotten.
    pub fn is_known(&self) -> bool {
        self.keys.is_some()
    }

    /// Forget: the next write asks the database.
    pub fn forget(&mut self) {
        self.keys = None;
    }
}

/// The head's chunk lists (format 2): the rows' chunks, then the state's.
#[derive(serde::Deserialize)]
struct HeadIndex {
    rows: StateIndex,
    state: StateIndex,
}

/// [`HeadIndex`] as written, borrowing its lists (the same encoding).
#[derive(serde::Serialize)]
struct HeadIndexRef<'a> {
    rows: &'a StateIndex,
    state: &'a StateIndex,
}

/// A checkpoint as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The epoch of the node that wrote it.
    pub epoch: i64,
    pub seq: i64,
    /// The rows part (a format-1 head's whole blob).
    pub bytes: Vec<u8>,
    /// The state part; `None` for a head written as one blob (format 1),
    /// whose state is inside `bytes`.
    pub state: Option<Vec<u8>>,
}

/// A chunk's name in the `hash` column: its key, big-endian.
fn chunk_name(key: ChunkKey) -> Vec<u8> {
    key.0.to_be_bytes().to_vec()
}

fn key_of_name(name: &[u8]) -> Option<ChunkKey> {
    let bytes: [u8; 16] = name.try_into().ok()?;
    Some(ChunkKey(u128::from_be_bytes(bytes)))
}

impl Cluster {
    /// Store `blob` as `lease`'s job's checkpoint, all of it cut here (a
    /// checkpoint of one part: no learned state kept apart); see
    /// [`Cluster::write_checkpoint_parts`].
    pub async fn write_checkpoint(&self, lease: &Lease, blob: &[u8]) -> Result<CheckpointWrite> {
        let none = StateIndex::default();
        let no_chunks = HashMap::new();
        let parts = CheckpointParts {
            rows: blob,
            state: &none,
            state_chunks: &no_chunks,
        };
        self.write_checkpoint_parts(lease, parts, &mut StoredChunks::default())
            .await
    }

    /// Store `parts` as `lease`'s job's checkpoint (module doc), `stored`
    /// being what this writer's last checkpoint of the lease left (updated
    /// here); [`ClusterError::Fenced`] when the lease no longer holds.
    pub async fn write_checkpoint_parts(
        &self,
        lease: &Lease,
        parts: CheckpointParts<'_>,
        stored: &mut StoredChunks,
    ) -> Result<CheckpointWrite> {
        // Until this write commits the database holds either the old set or
        // (a commit whose answer was lost) the new one: ask next time.
        let known = stored.keys.take();
        let written = self
            .timed(
                "write_checkpoint",
                self.write_checkpoint_untimed(lease, parts, known.as_ref()),
            )
            .await?;
        stored.keys = Some(written.1);
        Ok(written.0)
    }

    async fn write_checkpoint_untimed(
        &self,
        lease: &Lease,
        parts: CheckpointParts<'_>,
        known: Option<&HashSet<ChunkKey>>,
    ) -> Result<(CheckpointWrite, HashSet<ChunkKey>)> {
        let cut = split(parts.rows);
        let head_index = HeadIndexRef {
            rows: &cut.index,
            state: parts.state,
        };
        let head = codec::encode(&head_index);
        let sha: Vec<u8> = Sha256::digest(&head).to_vec();
        let total = head_index.rows.len() + head_index.state.len();
        let len = i64::try_from(total).unwrap_or(i64::MAX);
        let job = lease.job.as_str();
        let what = |step: &str| format!("job {job} (epoch {}): checkpoint: {step}", lease.epoch);

        // Every chunk the head names, each once, with where its bytes are
        // (the state's may be absent: the database has them).
        let mut wanted: HashSet<ChunkKey> =
            HashSet::with_capacity(head_index.rows.chunks.len() + head_index.state.chunks.len());
        let mut rows_bytes: HashMap<ChunkKey, &[u8]> = HashMap::new();
        for (c, piece) in head_index.rows.chunks.iter().zip(cut.pieces()) {
            wanted.insert(c.key);
            rows_bytes.insert(c.key, piece);
        }
        for c in &head_index.state.chunks {
            wanted.insert(c.key);
        }
        let chunks = head_index.rows.chunks.len() + head_index.state.chunks.len();

        let mut client = self.client().await?;
        let txn = client
            .transaction()
            .await
            .map_err(|e| self.query_error(&what("begin"), e))?;
        lease.fence(self, &txn).await?;

        let present: HashSet<ChunkKey> = match known {
            Some(k) => wanted
                .iter()
                .filter(|key| k.contains(key))
                .copied()
                .collect(),
            None => {
                let names: Vec<Vec<u8>> = wanted.iter().map(|k| chunk_name(*k)).collect();
                txn.query(
                    "SELECT hash FROM forager_chunks WHERE job = $1 AND hash = ANY($2)",
                    &[&job, &names],
                )
                .await
                .map_err(|e| self.query_error(&what("find stored chunks"), e))?
                .iter()
                .map(|r| r.try_get::<_, Vec<u8>>(0))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.query_error(&what("find stored chunks"), e))?
                .iter()
                .filter_map(|n| key_of_name(n))
                .collect()
            }
        };
        let mut put_names: Vec<Vec<u8>> = Vec::new();
        let mut put_bytes: Vec<&[u8]> = Vec::new();
        // In head order, so that a write's chunks go in a stable order.
        let order = head_index
            .rows
            .chunks
            .iter()
            .chain(&head_index.state.chunks);
        let mut queued: HashSet<ChunkKey> = HashSet::new();
        for c in order {
            if present.contains(&c.key) || !queued.insert(c.key) {
                continue;
            }
            let bytes = match rows_bytes.get(&c.key) {
                Some(b) => *b,
                None => parts
                    .state_chunks
                    .get(&c.key)
                    .map(Vec::as_slice)
                    .ok_or_else(|| ClusterError::Incomplete {
                        node: self.node().to_string(),
                        job: job.to_string(),
                        why: format!(
                            "the checkpoint to write lacks the bytes of state chunk {:032x}, \
                             which the database does not hold",
                            c.key.0
                        ),
                    })?,
            };
            put_names.push(chunk_name(c.key));
            put_bytes.push(bytes);
        }
        if !put_names.is_empty() {
            // One statement for all new chunks: one round trip however many.
            txn.execute(
                "INSERT INTO forager_chunks (job, hash, bytes)
                 SELECT $1, h, b FROM unnest($2::bytea[], $3::bytea[]) AS c(h, b)
                 ON CONFLICT (job, hash) DO NOTHING",
                &[&job, &put_names, &put_bytes],
            )
            .await
            .map_err(|e| self.query_error(&what("write chunks"), e))?;
        }
        let seq: Option<i64> = txn
            .query_opt(
                "INSERT INTO forager_checkpoints AS c (job, epoch, seq, chunks, len, sha256, format)
                 VALUES ($1, $2, 1, $3, $4, $5, $6)
                 ON CONFLICT (job) DO UPDATE
                     SET epoch = EXCLUDED.epoch, seq = c.seq + 1, chunks = EXCLUDED.chunks,
                         len = EXCLUDED.len, sha256 = EXCLUDED.sha256, format = EXCLUDED.format,
                         written_at = now()
                     WHERE c.epoch <= EXCLUDED.epoch
                 RETURNING seq",
                &[&job, &lease.epoch, &head, &len, &sha, &FORMAT_PARTS],
            )
            .await
            .map_err(|e| self.query_error(&what("write the head"), e))?
            .map(|r| r.try_get(0))
            .transpose()
            .map_err(|e| self.query_error(&what("write the head"), e))?;
        let Some(seq) = seq else {
            // The fence above holds the row, so only a head written under a
            // newer epoch by hand (or a bug) gets here: refuse all the same.
            return Err(self.fenced(job, lease.epoch, "a newer epoch wrote the checkpoint"));
        };
        let removed = match known {
            // Only the chunks that left since the last write: no list of
            // every chunk sent, nothing scanned but those rows.
            Some(k) => {
                let gone: Vec<Vec<u8>> = k
                    .iter()
                    .filter(|key| !wanted.contains(key))
                    .map(|key| chunk_name(*key))
                    .collect();
                if gone.is_empty() {
                    0
                } else {
                    txn.execute(
                        "DELETE FROM forager_chunks WHERE job = $1 AND hash = ANY($2)",
                        &[&job, &gone],
                    )
                    .await
                    .map_err(|e| self.query_error(&what("remove unused chunks"), e))?
                }
            }
            None => {
                let names: Vec<Vec<u8>> = wanted.iter().map(|k| chunk_name(*k)).collect();
                txn.execute(
                    "DELETE FROM forager_chunks WHERE job = $1 AND NOT (hash = ANY($2))",
                    &[&job, &names],
                )
                .await
                .map_err(|e| self.query_error(&what("remove unused chunks"), e))?
            }
        };
        txn.commit()
            .await
            .map_err(|e| self.query_error(&what("commit"), e))?;
        let written = CheckpointWrite {
            seq,
            chunks,
            chunks_put: put_names.len(),
            bytes_put: put_bytes.iter().map(|b| b.len()).sum(),
            chunks_removed: removed,
            head_bytes: head.len(),
            asked_stored: known.is_none(),
        };
        tracing::debug!(
            node = self.node(),
            job,
            epoch = lease.epoch,
            seq,
            chunks = written.chunks,
            chunks_put = written.chunks_put,
            bytes_put = written.bytes_put,
            chunks_removed = written.chunks_removed,
            head_bytes = written.head_bytes,
            asked_stored = written.asked_stored,
            "checkpoint written to the cluster database"
        );
        Ok((written, wanted))
    }

    /// `job`'s stored checkpoint, checked chunk by chunk and whole; `None` when it has none.
    pub async fn read_checkpoint(&self, job: &str) -> Result<Option<Checkpoint>> {
        self.timed("read_checkpoint", self.read_checkpoint_untimed(job))
            .await
    }

    async fn read_checkpoint_untimed(&self, job: &str) -> Result<Option<Checkpoint>> {
        let what = |step: &str| format!("job {job}: read checkpoint: {step}");
        let mut client = self.client().await?;
        // One snapshot for the head and its chunks: a writer committing in
        // between cannot hand us a head whose chunks it just removed.
        let txn = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(|e| self.query_error(&what("begin"), e))?;
        let Some(head) = txn
            .query_opt(
                "SELECT epoch, seq, chunks, len, sha256, format FROM forager_checkpoints WHERE job = $1",
                &[&job],
            )
            .await
            .map_err(|e| self.query_error(&what("head"), e))?
        else {
            return Ok(None);
        };
        let get = |e| self.query_error(&what("head"), e);
        let epoch: i64 = head.try_get(0).map_err(get)?;
        let seq: i64 = head.try_get(1).map_err(get)?;
        let encoded: Vec<u8> = head.try_get(2).map_err(get)?;
        let len: i64 = head.try_get(3).map_err(get)?;
        let sha: Vec<u8> = head.try_get(4).map_err(get)?;
        let format: i16 = head.try_get(5).map_err(get)?;
        let damaged = |why: String| ClusterError::Damaged {
            node: self.node().to_string(),
            job: job.to_string(),
            why,
        };
        let (rows_index, state_index) = match format {
            FORMAT_BLOB => {
                let index: StateIndex =
                    codec::decode(&encoded).map_err(|e| damaged(format!("chunk list: {e}")))?;
                (index, None)
            }
            FORMAT_PARTS => {
                if Sha256::digest(&encoded).as_slice() != sha {
                    return Err(damaged("the chunk lists do not match their SHA-256".into()));
                }
                let index: HeadIndex =
                    codec::decode(&encoded).map_err(|e| damaged(format!("chunk lists: {e}")))?;
                (index.rows, Some(index.state))
            }
            other => return Err(damaged(format!("unknown head format {other}"))),
        };
        let names: Vec<Vec<u8>> = rows_index
            .chunks
            .iter()
            .chain(state_index.iter().flat_map(|s| &s.chunks))
            .map(|c| chunk_name(c.key))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let mut chunks: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        for row in txn
            .query(
                "SELECT hash, bytes FROM forager_chunks WHERE job = $1 AND hash = ANY($2)",
                &[&job, &names],
            )
            .await
            .map_err(|e| self.query_error(&what("chunks"), e))?
        {
            let hash: Vec<u8> = row
                .try_get(0)
                .map_err(|e| self.query_error(&what("chunks"), e))?;
            let bytes: Vec<u8> = row
                .try_get(1)
                .map_err(|e| self.query_error(&what("chunks"), e))?;
            chunks.insert(hash, bytes);
        }
        txn.commit()
            .await
            .map_err(|e| self.query_error(&what("end"), e))?;
        let assemble = |index: &StateIndex, part: &str| -> Result<Vec<u8>> {
            let mut out = Vec::with_capacity(index.len());
            for (i, c) in index.chunks.iter().enumerate() {
                let bytes = chunks.get(&chunk_name(c.key)).ok_or_else(|| {
                    damaged(format!("{part} chunk {i} ({:032x}) is missing", c.key.0))
                })?;
                if bytes.len() != c.len as usize || ChunkKey::of(bytes) != c.key {
                    return Err(damaged(format!(
                        "{part} chunk {i} ({:032x}) does not match its name",
                        c.key.0
                    )));
                }
                out.extend_from_slice(bytes);
            }
            Ok(out)
        };
        let bytes = assemble(&rows_index, "rows")?;
        let state = match &state_index {
            Some(s) => Some(assemble(s, "state")?),
            None => None,
        };
        let total = bytes.len() + state.as_ref().map_or(0, Vec::len);
        if i64::try_from(total).ok() != Some(len) {
            return Err(damaged(
                "the assembled checkpoint does not match its length".into(),
            ));
        }
        // A format-1 head names the blob's SHA-256; a format-2 one was
        // checked above (its chunks by their names).
        if state.is_none() && Sha256::digest(&bytes).as_slice() != sha {
            return Err(damaged(
                "the assembled checkpoint does not match its length and SHA-256".into(),
            ));
        }
        Ok(Some(Checkpoint {
            epoch,
            seq,
            bytes,
            state,
        }))
    }
}
