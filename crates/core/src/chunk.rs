//! Content-defined chunks of a stored blob (FastCDC, ~4 KiB, each named by
//! the first 128 bits of its SHA-256): how a job's learned state is cut for
//! the store's incremental checkpoints (`forager`'s `store/state.rs`, issue
//! #19) and for the cluster's checkpoints in PostgreSQL (`forager-cluster`,
//! issue 38). Both name a chunk the same way, so the one definition lives
//! here, with no I/O.
//!
//! A chunk's key is a collision-resistant hash because servers shape what
//! the learner holds: a hash that can be made to collide would let two
//! chunks share a row.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashSet;

/// Chunk sizes (bytes). The bytes a checkpoint writes grow with the average
/// (each scattered edit rewrites about one chunk), the index with its
/// inverse (~19 bytes per chunk): 4 KiB keeps both small for an 80 MiB state
/// edited in a few hundred places per checkpoint (benches/checkpoint.rs).
pub const MIN_CHUNK: usize = 1024;
pub const AVG_CHUNK: usize = 4096;
pub const MAX_CHUNK: usize = 16384;

/// A chunk's name: the first 128 bits of the SHA-256 of its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ChunkKey(pub u128);

impl ChunkKey {
    pub fn of(bytes: &[u8]) -> ChunkKey {
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest[..16]);
        ChunkKey(u128::from_be_bytes(first))
    }
}

/// One chunk of a state, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRef {
    pub key: ChunkKey,
    pub len: u32,
}

/// A job's stored state: its chunks in order (a key may repeat).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateIndex {
    pub chunks: Vec<ChunkRef>,
}

impl StateIndex {
    /// Bytes of the whole state.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(|c| c.len as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The distinct chunk keys.
    pub fn keys(&self) -> HashSet<ChunkKey> {
        self.chunks.iter().map(|c| c.key).collect()
    }
}

/// A state cut into chunks: its index and each chunk's bytes, in order.
#[derive(Debug)]
pub struct Chunked<'a> {
    pub index: StateIndex,
    pieces: Vec<&'a [u8]>,
}

impl<'a> Chunked<'a> {
    /// Each chunk's bytes, in the index's order.
    pub fn pieces(&self) -> &[&'a [u8]] {
        &self.pieces
    }
}

/// Cut `bytes` where their content says (the same bytes always give the same cuts).
pub fn split(bytes: &[u8]) -> Chunked<'_> {
    let pieces: Vec<&[u8]> = if bytes.is_empty() {
        Vec::new()
    } else {
        fastcdc::v2020::FastCDC::new(bytes, MIN_CHUNK, AVG_CHUNK, MAX_CHUNK)
            .map(|c| &bytes[c.offset..c.offset + c.length])
            .collect()
    };
    let chunks = pieces
        .iter()
        .map(|p| ChunkRef {
            key: ChunkKey::of(p),
            // A chunk is at most MAX_CHUNK bytes: no truncation.
            len: p.len() as u32,
        })
        .collect();
    debug_assert_eq!(pieces.iter().map(|p| p.len()).sum::<usize>(), bytes.len());
    Chunked {
        index: StateIndex { chunks },
        pieces,
    }
}
