//! Small, fixed hash functions the learners rely on.
//!
//! Everything here is deterministic across processes and platforms: learned
//! state is persisted and must mean the same thing after a restart, so nothing
//! may depend on `RandomState` or on `usize` width.

use std::hash::{BuildHasher, Hasher};

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

/// MurmurHash3, x86 32-bit variant (Austin Appleby's reference `MurmurHash3_x86_32`).
///
/// Hand-written because the `murmur3` crate reads through `io::Read` and
/// returns `io::Result`, which costs more than the hash itself on 2-byte keys.
/// The tests check it against the crate.
pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
    let mut h = seed;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        h ^= mix_k(k);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, &b) in tail.iter().enumerate() {
            k |= u32::from(b) << (8 * i);
        }
        h ^= mix_k(k);
    }
    // The reference mixes in the length as a 32-bit value (it truncates longer inputs the same way).
    h ^= data.len() as u32;
    fmix32(h)
}

#[inline]
fn mix_k(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

#[inline]
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// A 64-bit fingerprint of a string (two independent MurmurHash3 runs), used as
/// a compact key for URLs in bounded memories where a rare collision only
/// costs one accuracy sample.
pub fn fingerprint64(data: &[u8]) -> u64 {
    let hi = murmur3_32(data, 0x9e37_79b9);
    let lo = murmur3_32(data, 0x85eb_ca6b);
    (u64::from(hi) << 32) | u64::from(lo)
}

/// SplitMix64 finaliser: a full-avalanche mix of a 64-bit word.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// `BuildHasher` for maps keyed by already-hashed integers (feature ids).
///
/// SipHash costs ~20 ns per lookup, which at ~100 features per URL and 200
/// links per page would eat the whole CPU budget of a page; a SplitMix64 mix
/// costs ~1 ns. Keys are MurmurHash3 outputs of server-controlled strings, so
/// a collision attack is conceivable but can only slow down the job whose
/// site mounts it.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntHashBuilder;

impl BuildHasher for IntHashBuilder {
    type Hasher = IntHasher;
    fn build_hasher(&self) -> IntHasher {
        IntHasher(0)
    }
}

/// The hasher built by [`IntHashBuilder`].
#[derive(Clone, Copy, Debug, Default)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by integer keys; a correct (if slow) fallback for anything else.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = mix64(self.0 ^ u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, i: u32) {
        self.0 = mix64(self.0 ^ u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = mix64(self.0 ^ i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn reference(data: &[u8], seed: u32) -> u32 {
        murmur3::murmur3_32(&mut std::io::Cursor::new(data), seed).unwrap()
    }

    #[test]
    fn murmur3_known_vectors() {
        // Published test vectors of MurmurHash3_x86_32.
        assert_eq!(murmur3_32(b"", 0), 0);
        assert_eq!(murmur3_32(b"", 1), 0x514e_28b7);
        assert_eq!(murmur3_32(b"", 0xffff_ffff), 0x81f1_6f39);
        assert_eq!(murmur3_32(b"\0\0\0\0", 0), 0x2362_f9de);
        assert_eq!(murmur3_32(b"aaaa", 0x9747_b28c), 0x5a97_808a);
        assert_eq!(murmur3_32(b"Hello, world!", 0x9747_b28c), 0x2488_4cba);
    }

    proptest! {
        #[test]
        fn murmur3_matches_the_crate(data in proptest::collection::vec(any::<u8>(), 0..64), seed in any::<u32>()) {
            prop_assert_eq!(murmur3_32(&data, seed), reference(&data, seed));
        }
    }

    #[test]
    fn int_hasher_spreads_small_keys() {
        let mut m: HashMap<u32, u32, IntHashBuilder> = HashMap::default();
        for i in 0..10_000 {
            m.insert(i, i * 2);
        }
        assert_eq!(m.get(&4321), Some(&8642));
        let buckets: std::collections::HashSet<u64> = (0..1024u32)
            .map(|i| IntHashBuilder.hash_one(i) & 1023)
            .collect();
        // A poor mix of consecutive keys would leave most low-bit buckets empty.
        assert!(buckets.len() > 550, "{}", buckets.len());
    }

    #[test]
    fn fingerprints_differ_for_close_strings() {
        assert_ne!(fingerprint64(b"https://a/1"), fingerprint64(b"https://a/2"));
        assert_eq!(fingerprint64(b"x"), fingerprint64(b"x"));
    }
}
