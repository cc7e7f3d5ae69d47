//! Tag-path vectors (ARCHITECTURE.md § Crawl loop, sb-classifier §3.1).
//!
//! A tag path `/html/body/div.c/ul/li/a` becomes the token sequence
//! `[SOS] html body div.c ul li a [EOS]` (empty pieces, such as the one before
//! the leading `/`, are dropped, so the root path `/` is `[SOS] [EOS]`). Its
//! 2-grams, joined by `/`, get vocabulary indices in first-seen order; the
//! term frequency of a 2-gram is its count divided by the number of 2-grams of
//! the path. This reading of "count / number of tokens" is the one of the
//! authors' code (`get_tf_vector` divides by the length of the n-gram list),
//! and it makes every path vector sum to 1.
//!
//! Vocabulary index `i` is projected to bucket
//! `((i * 766245317) mod 2^15) >> (15 - 12)` of a 4096-dimensional space;
//! values of the path's distinct 2-grams that collide in one bucket are
//! averaged. Deviation from the authors' code, on purpose: they average over
//! *every* vocabulary index of the bucket, zeros of 2-grams absent from the
//! path included, which makes a path's vector depend on when it is seen (and
//! costs O(vocabulary) per path); here a path always gets the same vector, so
//! the action index can memoise it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;

/// Start-of-sequence token.
pub const SOS: &str = "[SOS]";
/// End-of-sequence token.
pub const EOS: &str = "[EOS]";
/// Odd multiplier of the multiplicative hash of vocabulary indices (the authors' `a`).
pub const MULTIPLIER: u64 = 766_245_317;
/// Width of the multiplicative hash (the authors' `w`).
pub const HASH_BITS: u32 = 15;
/// log2 of the number of buckets (the authors' `m`).
pub const BUCKET_BITS: u32 = 12;
/// Number of buckets of a path vector.
pub const DIMENSIONS: usize = 1 << BUCKET_BITS;

/// The bucket of vocabulary index `index`.
#[inline]
pub fn bucket_of(index: u32) -> u16 {
    let product = (u64::from(index) * MULTIPLIER) & ((1u64 << HASH_BITS) - 1);
    // Fits: the shift leaves BUCKET_BITS (12) bits.
    (product >> (HASH_BITS - BUCKET_BITS)) as u16
}

/// One non-zero coordinate of a [`SparseVector`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SparseEntry {
    pub bucket: u16,
    pub value: f32,
}

/// A vector of the 4096-dimensional path space: entries sorted by bucket, unique, non-zero.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SparseVector {
    entries: Vec<SparseEntry>,
}

impl SparseVector {
    /// Entries sorted by increasing bucket.
    pub fn entries(&self) -> &[SparseEntry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn norm(&self) -> f64 {
        self.entries
            .iter()
            .map(|e| f64::from(e.value) * f64::from(e.value))
            .sum::<f64>()
            .sqrt()
    }

    pub fn dot(&self, other: &SparseVector) -> f64 {
        let (mut i, mut j, mut sum) = (0, 0, 0.0);
        let (a, b) = (&self.entries, &other.entries);
        while i < a.len() && j < b.len() {
            match a[i].bucket.cmp(&b[j].bucket) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    sum += f64::from(a[i].value) * f64::from(b[j].value);
                    i += 1;
                    j += 1;
                }
            }
        }
        sum
    }

    /// Cosine similarity; 0 when either vector is zero.
    pub fn cosine(&self, other: &SparseVector) -> f64 {
        let n = self.norm() * other.norm();
        if n == 0.0 {
            0.0
        } else {
            self.dot(other) / n
        }
    }
}

/// How often one vocabulary term occurs in a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TermCount {
    pub term: u32,
    pub count: u32,
}

/// Project the term counts of one path (`total` = its number of 2-grams) into
/// the bucket space, averaging the term frequencies of distinct terms that
/// share a bucket.
pub fn project(terms: &[TermCount], total: u32) -> SparseVector {
    if total == 0 {
        return SparseVector::default();
    }
    let mut hits: Vec<(u16, TermCount)> = terms.iter().map(|t| (bucket_of(t.term), *t)).collect();
    hits.sort_unstable_by_key(|(bucket, t)| (*bucket, t.term));
    let mut entries: Vec<SparseEntry> = Vec::with_capacity(hits.len());
    let mut i = 0;
    while i < hits.len() {
        let bucket = hits[i].0;
        let (mut occurrences, mut distinct) = (0u32, 0u32);
        let mut last_term = None;
        while i < hits.len() && hits[i].0 == bucket {
            occurrences += hits[i].1.count;
            if last_term != Some(hits[i].1.term) {
                distinct += 1;
                last_term = Some(hits[i].1.term);
            }
            i += 1;
        }
        let value = f64::from(occurrences) / f64::from(total) / f64::from(distinct);
        entries.push(SparseEntry {
            bucket,
            value: value as f32,
        });
    }
    SparseVector { entries }
}

/// Turns tag paths into [`SparseVector`]s, growing its 2-gram vocabulary.
#[derive(Clone, Debug, Default)]
pub struct PathVectorizer {
    /// Terms in first-seen order: index = vocabulary index.
    terms: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
    /// Bytes of the strings in `terms` (derived).
    term_bytes: usize,
    /// Reused buffer for building 2-grams without allocating per lookup.
    scratch: String,
}

impl PathVectorizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of distinct 2-grams seen so far.
    pub fn vocabulary_len(&self) -> usize {
        self.terms.len()
    }

    /// The 2-gram with vocabulary index `index`.
    pub fn term(&self, index: u32) -> Option<&str> {
        self.terms.get(index as usize).map(|t| &**t)
    }

    /// Whether a new 2-gram of `len` bytes gets its own term, after `terms`
    /// more terms of `bytes` more bytes than the vocabulary holds.
    fn has_room(&self, terms: usize, bytes: usize, len: usize) -> bool {
        self.terms.len() + terms < MAX_VOCABULARY
            && self.term_bytes + bytes + len <= MAX_VOCABULARY_BYTES
    }

    /// The vector of `path`, adding its unseen 2-grams to the vocabulary.
    pub fn vectorize(&mut self, path: &str) -> SparseVector {
        let (counts, total) = self.count_terms(path);
        project(&counts, total)
    }

    /// The vector of `path` without touching the vocabulary; `None` when one of
    /// its 2-grams was never seen.
    pub fn vectorize_known(&self, path: &str) -> Option<SparseVector> {
        let mut scratch = String::new();
        let mut counts = Vec::new();
        let mut total = 0;
        let mut missing = false;
        for_each_bigram(path, &mut scratch, |gram| {
            total += 1;
            match self.index.get(gram) {
                Some(&term) => add_count(&mut counts, term),
                None if !self.has_room(0, 0, gram.len()) => {
                    add_count(&mut counts, overflow_term(gram))
                }
                None => missing = true,
            }
        });
        (!missing).then(|| project(&counts, total))
    }

    /// The vector `path` would get from [`Self::vectorize`], without touching
    /// the vocabulary (unseen 2-grams get the indices they would be given).
    pub fn vectorize_preview(&self, path: &str) -> SparseVector {
        let mut scratch = String::new();
        let mut counts = Vec::new();
        let mut unseen: HashMap<Box<str>, u32> = HashMap::new();
        let mut unseen_bytes = 0;
        let mut total = 0;
        for_each_bigram(path, &mut scratch, |gram| {
            total += 1;
            let term = match self.index.get(gram) {
                Some(&t) => t,
                None => {
                    if let Some(&t) = unseen.get(gram) {
                        t
                    } else if !self.has_room(unseen.len(), unseen_bytes, gram.len()) {
                        overflow_term(gram)
                    } else {
                        let next =
                            u32::try_from(self.terms.len() + unseen.len()).unwrap_or(u32::MAX);
                        unseen.insert(gram.into(), next);
                        unseen_bytes += gram.len();
                        next
                    }
                }
            };
            add_count(&mut counts, term);
        });
        project(&counts, total)
    }

    fn count_terms(&mut self, path: &str) -> (Vec<TermCount>, u32) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut counts = Vec::with_capacity(16);
        let mut total = 0;
        for_each_bigram(path, &mut scratch, |gram| {
            total += 1;
            let term = match self.index.get(gram) {
                Some(&t) => t,
                None if !self.has_room(0, 0, gram.len()) => overflow_term(gram),
                None => {
                    let t = u32::try_from(self.terms.len()).unwrap_or(u32::MAX);
                    self.term_bytes += gram.len();
                    self.terms.push(gram.into());
                    self.index.insert(gram.into(), t);
                    t
                }
            };
            add_count(&mut counts, term);
        });
        self.scratch = scratch;
        (counts, total)
    }
}

/// Record one occurrence; [`project`] merges repeated terms after sorting, so
/// a hostile path with thousands of elements costs O(n log n), not O(n²).
fn add_count(counts: &mut Vec<TermCount>, term: u32) {
    counts.push(TermCount { term, count: 1 });
}

/// Distinct 2-grams the vocabulary keeps. Past it, an unseen 2-gram gets
/// one of [`OVERFLOW_TERMS`] shared terms chosen by a hash of its text, so a
/// site inventing new class names on every page cannot grow the vocabulary
/// (and its checkpoint) without bound; real sites use a few thousand.
pub const MAX_VOCABULARY: usize = 1 << 18;
/// …and bytes of 2-gram text it keeps (a 2-gram of two long class names
/// takes half a KiB).
pub const MAX_VOCABULARY_BYTES: usize = 8 << 20;
/// Shared terms for 2-grams past [`MAX_VOCABULARY`].
const OVERFLOW_TERMS: u32 = 1 << 16;

/// The shared term of a 2-gram met once the vocabulary is full.
fn overflow_term(gram: &str) -> u32 {
    MAX_VOCABULARY as u32 + crate::hash::murmur3_32(gram.as_bytes(), 0x2b2b) % OVERFLOW_TERMS
}

/// Elements of a tag path taken into account; deeper ones are ignored, so a
/// hostile page nesting 100 000 elements cannot grow the vocabulary without bound.
pub const MAX_PATH_ELEMENTS: usize = 256;

/// Calls `f` with each 2-gram of the token sequence of `path`.
fn for_each_bigram(path: &str, scratch: &mut String, mut f: impl FnMut(&str)) {
    let mut previous = SOS;
    let pieces = path
        .split('/')
        .filter(|p| !p.is_empty())
        .take(MAX_PATH_ELEMENTS)
        .chain([EOS]);
    for piece in pieces {
        scratch.clear();
        scratch.push_str(previous);
        scratch.push('/');
        scratch.push_str(piece);
        f(scratch);
        previous = piece;
    }
}

/// Stored form: the vocabulary in index order (the lookup map is rebuilt).
#[derive(Serialize, Deserialize)]
struct StoredVocabulary<T> {
    terms: T,
}

impl Serialize for PathVectorizer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StoredVocabulary { terms: &self.terms }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for PathVectorizer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let stored = StoredVocabulary::<Vec<Box<str>>>::deserialize(d)?;
        let mut index = HashMap::with_capacity(stored.terms.len());
        for (i, term) in stored.terms.iter().enumerate() {
            let i = u32::try_from(i).map_err(serde::de::Error::custom)?;
            if index.insert(term.clone(), i).is_some() {
                return Err(serde::de::Error::custom(format!(
                    "tag-path vocabulary repeats the term {term:?}"
                )));
            }
        }
        Ok(PathVectorizer {
            term_bytes: stored.terms.iter().map(|t| t.len()).sum(),
            terms: stored.terms,
            index,
            scratch: String::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    #[test]
    fn the_vocabulary_stops_growing_at_its_cap() {
        let mut v = PathVectorizer::new();
        let mut i = 0u64;
        while v.vocabulary_len() < MAX_VOCABULARY {
            let path: String = (0..200).map(|k| format!("/e{i}-{k}")).collect();
            v.vectorize(&path);
            i += 1;
        }
        let full = v.vocabulary_len();
        assert_eq!(full, MAX_VOCABULARY);
        // Long 2-grams meet the byte cap first.
        let mut long = PathVectorizer::new();
        let class = "c".repeat(500);
        for i in 0..40_000 {
            long.vectorize(&format!("/div.{class}{i}"));
        }
        assert!(long.term_bytes <= MAX_VOCABULARY_BYTES);
        assert!(long.vocabulary_len() < 40_000, "{}", long.vocabulary_len());
        let fresh = "/never/seen/before/x";
        let preview = v.vectorize_preview(fresh);
        assert_eq!(v.vectorize_known(fresh), Some(preview.clone()));
        assert_eq!(v.vectorize(fresh), preview, "overflow terms are stable");
        assert_eq!(v.vocabulary_len(), full);
    }

    fn entries(v: &SparseVector) -> Vec<(u16, f32)> {
        v.entries().iter().map(|e| (e.bucket, e.value)).collect()
    }

    #[test]
    fn buckets_follow_the_multiplicative_hash() {
        // ((i * 766245317) mod 32768) >> 3, computed by hand.
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 3896);
        assert_eq!(bucket_of(2), 3697);
        assert_eq!(bucket_of(3), 3497);
        assert_eq!(bucket_of(20), 108);
        // First collision of the sequence: index 3021 shares bucket 3896 with index 1.
        assert_eq!(bucket_of(3021), 3896);
        assert!((0..4096).all(|i| usize::from(bucket_of(i)) < DIMENSIONS));
    }

    #[test]
    fn hand_computed_vector() {
        let mut v = PathVectorizer::new();
        // Tokens [SOS] html body a [EOS]: 4 2-grams, indices 0..4, tf 1/4 each.
        let x = v.vectorize("/html/body/a");
        assert_eq!(v.term(0), Some("[SOS]/html"));
        assert_eq!(v.term(3), Some("a/[EOS]"));
        assert_eq!(
            entries(&x),
            vec![(0, 0.25), (3497, 0.25), (3697, 0.25), (3896, 0.25)]
        );
        // Second path: [SOS]/html (0), html/body (1), body/div.x (4), div.x/a (5), a/[EOS] (3).
        // 5 2-grams → tf 0.2; bucket(4) = 3298, bucket(5) = 3099.
        let y = v.vectorize("/html/body/div.x/a");
        assert_eq!(v.vocabulary_len(), 6);
        assert_eq!(
            entries(&y),
            vec![(0, 0.2), (3099, 0.2), (3298, 0.2), (3497, 0.2), (3896, 0.2)]
        );
        // cos = 3 * 0.25 * 0.2 / (0.5 * sqrt(5 * 0.04))
        let expected = 0.15 / (0.5 * 0.2f64.sqrt());
        assert!((x.cosine(&y) - expected).abs() < 1e-6);
    }

    #[test]
    fn repeated_grams_and_the_root_path() {
        let mut v = PathVectorizer::new();
        let root = v.vectorize("/");
        assert_eq!(v.term(0), Some("[SOS]/[EOS]"));
        assert_eq!(entries(&root), vec![(0, 1.0)]);
        // [SOS]/div (1), div/div (2) twice, div/[EOS] (3): 4 2-grams.
        let x = v.vectorize("/div/div/div");
        assert_eq!(entries(&x), vec![(3497, 0.25), (3697, 0.5), (3896, 0.25)]);
        // The same path always gives the same vector, and the vocabulary is stable.
        assert_eq!(v.vectorize("/div/div/div"), x);
        assert_eq!(v.vocabulary_len(), 4);
        assert_eq!(v.vectorize_known("/div/div/div"), Some(x));
        assert_eq!(v.vectorize_known("/div/span"), None);
        // A preview assigns the indices a real vectorisation would, without growing.
        let preview = v.vectorize_preview("/div/span/span");
        assert_eq!(v.vocabulary_len(), 4);
        assert_eq!(v.vectorize("/div/span/span"), preview);
        assert_eq!(v.vocabulary_len(), 7);
    }

    #[test]
    fn colliding_terms_are_averaged() {
        // Terms 1 and 3021 share bucket 3896: one occurs twice, the other once, in 5 2-grams.
        let counts = [
            TermCount { term: 1, count: 2 },
            TermCount {
                term: 3021,
                count: 1,
            },
            TermCount { term: 2, count: 2 },
        ];
        let v = project(&counts, 5);
        // (2/5 + 1/5) / 2 = 0.3 in bucket 3896; 2/5 in bucket 3697.
        assert_eq!(entries(&v), vec![(3697, 0.4), (3896, 0.3)]);
        assert!(project(&[], 0).is_empty());
    }

    #[test]
    fn deep_paths_are_cut_and_stay_cheap() {
        let mut v = PathVectorizer::new();
        let deep: String = (0..5000).map(|i| format!("/d{i}")).collect();
        let x = v.vectorize(&deep);
        // [SOS]/d0 … d254/d255, then d255/[EOS]: 257 2-grams.
        assert_eq!(v.vocabulary_len(), MAX_PATH_ELEMENTS + 1);
        assert!((x.entries().iter().map(|e| f64::from(e.value)).sum::<f64>() - 1.0).abs() < 1e-3);
        // Repeated elements are merged into one term with its count.
        let mut w = PathVectorizer::new();
        let same: String = "/div".repeat(200);
        let y = w.vectorize(&same);
        assert_eq!(w.vocabulary_len(), 3);
        assert_eq!(y.entries().len(), 3);
    }

    #[test]
    fn vocabulary_round_trips() {
        let mut v = PathVectorizer::new();
        v.vectorize("/html/body/ul/li/a");
        let back: PathVectorizer = codec::decode(&codec::encode(&v)).unwrap();
        assert_eq!(back.vocabulary_len(), v.vocabulary_len());
        assert_eq!(
            back.vectorize_known("/html/body/ul/li/a"),
            v.vectorize_known("/html/body/ul/li/a")
        );
        assert_eq!(codec::encode(&back), codec::encode(&v));
    }
}
