//! A job's checkpoint in the database, so that the node that takes the job
//! over restores it byte for byte.
//!
//! The checkpoint is one blob (what the node's store holds for the job); it
//! is cut into content-defined chunks ([`forager_core::chunk`], the store's
//! own cut) and written as: the chunks the database lacks for this job,
//! then the head row (the chunk list, the blob's length and SHA-256, the
//! writer's epoch and a sequence number), then the removal of chunks the
//! head no longer names, all in one transaction fenced by the lease. An
//! edit in one place of a large blob costs about one chunk.
//!
//! Reading checks every chunk against its name and the whole against its
//! SHA-256, so a damaged row is an error, never a wrong state.

use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};

use forager_core::chunk::{split, StateIndex};
use forager_core::codec;

use crate::{Cluster, ClusterError, Lease, Result};

/// What [`Cluster::write_checkpoint`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointWrite {
    /// The head's sequence number after this write (1 for the first).
    pub seq: i64,
    pub chunks: usize,
    pub chunks_put: usize,
    pub bytes_put: usize,
    pub chunks_removed: u64,
}

/// A checkpoint as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The epoch of the node that wrote it.
    pub epoch: i64,
    pub seq: i64,
    pub bytes: Vec<u8>,
}

/// A chunk's name in the `hash` column: its key, big-endian.
fn chunk_name(key: forager_core::chunk::ChunkKey) -> Vec<u8> {
    key.0.to_be_bytes().to_vec()
}

impl Cluster {
    /// Store `blob` as `lease`'s job's checkpoint (module doc);
    /// [`ClusterError::Fenced`] when the lease no longer holds.
    pub async fn write_checkpoint(&self, lease: &Lease, blob: &[u8]) -> Result<CheckpointWrite> {
        let cut = split(blob);
        let names: Vec<Vec<u8>> = cut.index.chunks.iter().map(|c| chunk_name(c.key)).collect();
        let head = codec::encode(&cut.index);
        let sha: Vec<u8> = Sha256::digest(blob).to_vec();
        let len = i64::try_from(blob.len()).unwrap_or(i64::MAX);
        let job = lease.job.as_str();
        let what = |step: &str| format!("job {job} (epoch {}): checkpoint: {step}", lease.epoch);

        let mut client = self.client().await?;
        let txn = client
            .transaction()
            .await
            .map_err(|e| self.query_error(&what("begin"), e))?;
        lease.fence(self, &txn).await?;

        let present: HashSet<Vec<u8>> = txn
            .query(
                "SELECT hash FROM forager_chunks WHERE job = $1 AND hash = ANY($2)",
                &[&job, &names],
            )
            .await
            .map_err(|e| self.query_error(&what("find stored chunks"), e))?
            .iter()
            .map(|r| r.try_get::<_, Vec<u8>>(0))
            .collect::<Result<_, _>>()
            .map_err(|e| self.query_error(&what("find stored chunks"), e))?;
        let mut put_names: Vec<&[u8]> = Vec::new();
        let mut put_bytes: Vec<&[u8]> = Vec::new();
        let mut queued: HashSet<&[u8]> = HashSet::new();
        for (name, piece) in names.iter().zip(cut.pieces()) {
            if !present.contains(name.as_slice()) && queued.insert(name.as_slice()) {
                put_names.push(name.as_slice());
                put_bytes.push(piece);
            }
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
                "INSERT INTO forager_checkpoints AS c (job, epoch, seq, chunks, len, sha256)
                 VALUES ($1, $2, 1, $3, $4, $5)
                 ON CONFLICT (job) DO UPDATE
                     SET epoch = EXCLUDED.epoch, seq = c.seq + 1, chunks = EXCLUDED.chunks,
                         len = EXCLUDED.len, sha256 = EXCLUDED.sha256, written_at = now()
                     WHERE c.epoch <= EXCLUDED.epoch
                 RETURNING seq",
                &[&job, &lease.epoch, &head, &len, &sha],
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
        let removed = txn
            .execute(
                "DELETE FROM forager_chunks WHERE job = $1 AND NOT (hash = ANY($2))",
                &[&job, &names],
            )
            .await
            .map_err(|e| self.query_error(&what("remove unused chunks"), e))?;
        txn.commit()
            .await
            .map_err(|e| self.query_error(&what("commit"), e))?;
        let written = CheckpointWrite {
            seq,
            chunks: names.len(),
            chunks_put: put_names.len(),
            bytes_put: put_bytes.iter().map(|b| b.len()).sum(),
            chunks_removed: removed,
        };
        tracing::debug!(
            node = self.node(),
            job,
            epoch = lease.epoch,
            seq,
            chunks = written.chunks,
            chunks_put = written.chunks_put,
            bytes_put = written.bytes_put,
            "checkpoint written to the cluster database"
        );
        Ok(written)
    }

    /// `job`'s stored checkpoint, checked chunk by chunk and whole; `None` when it has none.
    pub async fn read_checkpoint(&self, job: &str) -> Result<Option<Checkpoint>> {
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
                "SELECT epoch, seq, chunks, len, sha256 FROM forager_checkpoints WHERE job = $1",
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
        let damaged = |why: String| ClusterError::Damaged {
            node: self.node().to_string(),
            job: job.to_string(),
            why,
        };
        let index: StateIndex =
            codec::decode(&encoded).map_err(|e| damaged(format!("chunk list: {e}")))?;
        let names: Vec<Vec<u8>> = index.chunks.iter().map(|c| chunk_name(c.key)).collect();
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
        let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        for (i, (c, name)) in index.chunks.iter().zip(&names).enumerate() {
            let bytes = chunks
                .get(name.as_slice())
                .ok_or_else(|| damaged(format!("chunk {i} ({:032x}) is missing", c.key.0)))?;
            if bytes.len() != c.len as usize || forager_core::chunk::ChunkKey::of(bytes) != c.key {
                return Err(damaged(format!(
                    "chunk {i} ({:032x}) does not match its name",
                    c.key.0
                )));
            }
            out.extend_from_slice(bytes);
        }
        if i64::try_from(out.len()).ok() != Some(len) || Sha256::digest(&out).as_slice() != sha {
            return Err(damaged(
                "the assembled checkpoint does not match its length and SHA-256".into(),
            ));
        }
        Ok(Some(Checkpoint {
            epoch,
            seq,
            bytes: out,
        }))
    }
}
