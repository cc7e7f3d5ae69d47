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
        h = round(
            h,
            u32::from_le_bytes([block[0], block[1], block[2], block[3]]),
        );
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

/// One 4-byte block folded into the state.
#[inline]
fn round(h: u32, k: u32) -> u32 {
    (h ^ mix_k(k))
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
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

/// MurmurHash3, x64 128-bit variant (`MurmurHash3_x64_128`), of a byte
/// slice: the same value as the `murmur3` crate's `murmur3_x64_128` (which
/// the tests check), without its `io::Read` plumbing — on a URL the crate
/// spends more in `read` calls and a 16-byte staging copy than in the hash.
/// URL hashes of the seen set and trap patterns are stored, so the value
/// must never change.
pub fn murmur3_x64_128(data: &[u8], seed: u32) -> u128 {
    let mut h = Murmur3x64::new(seed);
    h.write(data);
    h.finish()
}

const X64_C1: u64 = 0x87c3_7b91_1142_53d5;
const X64_C2: u64 = 0x4cf5_ad43_2745_937f;

/// [`murmur3_x64_128`] over bytes given in pieces: hashing `a` then `b` is
/// hashing their concatenation, so a key made of parts (a URL pattern)
/// needs no buffer to assemble it.
#[derive(Clone, Debug)]
pub struct Murmur3x64 {
    h1: u64,
    h2: u64,
    /// Bytes not yet forming a 16-byte block (`pending_len` of them).
    pending: [u8; 16],
    pending_len: usize,
    total: u64,
}

impl Murmur3x64 {
    pub fn new(seed: u32) -> Self {
        Murmur3x64 {
            h1: u64::from(seed),
            h2: u64::from(seed),
            pending: [0; 16],
            pending_len: 0,
            total: 0,
        }
    }

    #[inline]
    fn block(&mut self, block: &[u8; 16]) {
        let mut k1 = [0u8; 8];
        let mut k2 = [0u8; 8];
        k1.copy_from_slice(&block[..8]);
        k2.copy_from_slice(&block[8..]);
        let (k1, k2) = (u64::from_le_bytes(k1), u64::from_le_bytes(k2));
        self.h1 ^= k1.wrapping_mul(X64_C1).rotate_left(31).wrapping_mul(X64_C2);
        self.h1 = self
            .h1
            .rotate_left(27)
            .wrapping_add(self.h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        self.h2 ^= k2.wrapping_mul(X64_C2).rotate_left(33).wrapping_mul(X64_C1);
        self.h2 = self
            .h2
            .rotate_left(31)
            .wrapping_add(self.h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }

    pub fn write(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.pending_len > 0 {
            let take = (16 - self.pending_len).min(data.len());
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&data[..take]);
            self.pending_len += take;
            data = &data[take..];
            if self.pending_len < 16 {
                return;
            }
            let block = self.pending;
            self.block(&block);
            self.pending_len = 0;
        }
        let mut blocks = data.chunks_exact(16);
        for b in &mut blocks {
            let mut block = [0u8; 16];
            block.copy_from_slice(b);
            self.block(&block);
        }
        let tail = blocks.remainder();
        self.pending[..tail.len()].copy_from_slice(tail);
        self.pending_len = tail.len();
    }

    pub fn finish(&self) -> u128 {
        let (mut h1, mut h2) = (self.h1, self.h2);
        let tail = &self.pending[..self.pending_len];
        if tail.len() > 8 {
            let mut k2 = 0u64;
            for (i, &b) in tail[8..].iter().enumerate() {
                k2 |= u64::from(b) << (8 * i);
            }
            h2 ^= k2.wrapping_mul(X64_C2).rotate_left(33).wrapping_mul(X64_C1);
        }
        if !tail.is_empty() {
            let mut k1 = 0u64;
            for (i, &b) in tail[..tail.len().min(8)].iter().enumerate() {
                k1 |= u64::from(b) << (8 * i);
            }
            h1 ^= k1.wrapping_mul(X64_C1).rotate_left(31).wrapping_mul(X64_C2);
        }
        h1 ^= self.total;
        h2 ^= self.total;
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        h1 = fmix64(h1);
        h2 = fmix64(h2);
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        (u128::from(h2) << 64) | u128::from(h1)
    }
}

#[inline]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// Seeds of [`fingerprint64`]'s two runs (stored fingerprints depend on them).
const FINGERPRINT_SEEDS: (u32, u32) = (0x9e37_79b9, 0x85eb_ca6b);

/// A 64-bit fingerprint of a string (two independent MurmurHash3 runs), used as
/// a compact key for URLs in bounded memories where a rare collision only
/// costs one accuracy sample.
pub fn fingerprint64(data: &[u8]) -> u64 {
    let hi = murmur3_32(data, FINGERPRINT_SEEDS.0);
    let lo = murmur3_32(data, FINGERPRINT_SEEDS.1);
    (u64::from(hi) << 32) | u64::from(lo)
}

/// [`murmur3_32`] over bytes given in pieces (same value as of their concatenation).
#[derive(Clone, Copy, Debug)]
struct Murmur3x86 {
    h: u32,
    /// Bytes not yet forming a 4-byte block, little-endian, `pending_len` of them.
    pending: u32,
    pending_len: u32,
    /// Length so far, truncated to 32 bits as the reference does.
    total: u32,
}

impl Murmur3x86 {
    fn new(seed: u32) -> Self {
        Murmur3x86 {
            h: seed,
            pending: 0,
            pending_len: 0,
            total: 0,
        }
    }

    #[inline]
    fn block(&mut self, k: u32) {
        self.h = round(self.h, k);
    }

    fn write(&mut self, mut data: &[u8]) {
        self.total = self.total.wrapping_add(data.len() as u32);
        while self.pending_len > 0 {
            let Some((&b, rest)) = data.split_first() else {
                return;
            };
            self.pending |= u32::from(b) << (8 * self.pending_len);
            self.pending_len += 1;
            data = rest;
            if self.pending_len == 4 {
                self.block(self.pending);
                self.pending = 0;
                self.pending_len = 0;
            }
        }
        let mut blocks = data.chunks_exact(4);
        for block in &mut blocks {
            self.block(u32::from_le_bytes([block[0], block[1], block[2], block[3]]));
        }
        for (i, &b) in blocks.remainder().iter().enumerate() {
            self.pending |= u32::from(b) << (8 * i);
        }
        self.pending_len = blocks.remainder().len() as u32;
    }

    fn finish(&self) -> u32 {
        let mut h = self.h;
        if self.pending_len > 0 {
            h ^= mix_k(self.pending);
        }
        h ^= self.total;
        fmix32(h)
    }
}

/// [`fingerprint64`] over bytes given in pieces: fingerprinting `a` then `b`
/// is fingerprinting their concatenation, so a key made of parts (a URL
/// pattern) needs no buffer to assemble it.
#[derive(Clone, Copy, Debug)]
pub struct Fingerprint64 {
    hi: Murmur3x86,
    lo: Murmur3x86,
}

impl Default for Fingerprint64 {
    fn default() -> Self {
        Fingerprint64 {
            hi: Murmur3x86::new(FINGERPRINT_SEEDS.0),
            lo: Murmur3x86::new(FINGERPRINT_SEEDS.1),
        }
    }
}

impl Fingerprint64 {
    pub fn write(&mut self, data: &[u8]) {
        self.hi.write(data);
        self.lo.write(data);
    }

    pub fn finish(&self) -> u64 {
        (u64::from(self.hi.finish()) << 32) | u64::from(self.lo.finish())
    }
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

    fn reference_x64(data: &[u8], seed: u32) -> u128 {
        murmur3::murmur3_x64_128(&mut std::io::Cursor::new(data), seed).unwrap()
    }

    proptest! {
        #[test]
        fn murmur3_x64_matches_the_crate(data in proptest::collection::vec(any::<u8>(), 0..80), seed in any::<u32>()) {
            prop_assert_eq!(murmur3_x64_128(&data, seed), reference_x64(&data, seed));
        }

        #[test]
        fn murmur3_x64_in_pieces_is_murmur3_x64_of_the_whole(
            data in proptest::collection::vec(any::<u8>(), 0..80),
            cuts in proptest::collection::vec(0usize..80, 0..6),
            seed in any::<u32>(),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort_unstable();
            let mut h = Murmur3x64::new(seed);
            let mut from = 0;
            for c in cuts {
                h.write(&data[from..c]);
                from = c;
            }
            h.write(&data[from..]);
            prop_assert_eq!(h.finish(), reference_x64(&data, seed));
        }
    }

    proptest! {
        #[test]
        fn fingerprint64_in_pieces_is_fingerprint64_of_the_whole(
            data in proptest::collection::vec(any::<u8>(), 0..80),
            cuts in proptest::collection::vec(0usize..80, 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort_unstable();
            let mut h = Fingerprint64::default();
            let mut from = 0;
            for c in cuts {
                h.write(&data[from..c]);
                from = c;
            }
            h.write(&data[from..]);
            prop_assert_eq!(h.finish(), fingerprint64(&data));
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
