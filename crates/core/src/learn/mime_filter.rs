//! One Bloom filter per MIME family over normalised URLs (LDCOC §5, ARCHITECTURE.md § Crawl loop).
//!
//! Consulted before any HEAD request so that no URL is asked twice, across the
//! jobs of a process and across restarts. The filters remember a job-neutral
//! [`MimeFamily`]; each job maps it back to its own label
//! ([`crate::mime::TargetSet::label_of_family`]).
//!
//! Persistence: the filters are built with a fixed seed (a randomly seeded
//! filter cannot be reloaded) and expose their raw words. The store writes
//! only the 512-byte chunks that changed: [`MimeFilters::take_dirty_chunks`]
//! lists them by comparing with a copy of what was last taken, and updates
//! the copy (the engine stages them once per checkpoint interval for the whole
//! process). fastbloom does not say which words an insert touched; the copy
//! costs as much memory as the filters and one comparison per changed filter
//! at each staging, which is cheap next to the checkpoint itself.
//!
//! A plain struct: the engine shares it between jobs behind a mutex.

use crate::mime::MimeFamily;
use fastbloom::BloomFilter;
use std::hash::{Hash, Hasher};
use url::Url;

/// Seed of every MIME filter ("forager-mime-v01"): changing it orphans stored filters.
pub const BLOOM_SEED: u128 = 0x666f_7261_6765_722d_6d69_6d65_2d76_3031;
/// Words per persisted chunk (512 bytes): a new URL changes one 64-byte
/// block of a filter, and 4 KiB chunks wrote 2–2.4× more per checkpoint.
pub const CHUNK_WORDS: usize = 64;

/// Size of the filters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MimeFilterConfig {
    /// URLs each filter is sized for.
    pub expected_items: usize,
    /// False-positive rate at that load.
    pub false_positive_rate: f64,
}

impl Default for MimeFilterConfig {
    fn default() -> Self {
        MimeFilterConfig {
            expected_items: 1_000_000,
            false_positive_rate: 0.01,
        }
    }
}

/// What the store must keep beside the words to rebuild identical filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BloomLayout {
    pub seed: u128,
    pub hashes: u32,
    /// u64 words per filter.
    pub words: usize,
    pub chunk_words: usize,
}

/// A changed chunk of one family's filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirtyChunk {
    pub family: MimeFamily,
    /// Chunk index: words `index * CHUNK_WORDS ..`.
    pub index: u32,
    pub words: Vec<u64>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MimeFilterError {
    #[error("stored MIME filter layout {stored:?} differs from this build's {expected:?}")]
    Layout {
        stored: BloomLayout,
        expected: BloomLayout,
    },
    #[error("stored MIME filter for {family:?} has {found} words, expected {expected}")]
    Length {
        family: MimeFamily,
        found: usize,
        expected: usize,
    },
}

/// Hashes exactly the URL bytes: `str`'s own `Hash` adds a terminator whose
/// form is up to std, and stored filters must keep meaning the same thing.
struct UrlKey<'a>(&'a [u8]);

impl Hash for UrlKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0);
    }
}

/// The URL as the filters see it: serialised, without fragment.
fn key(url: &Url) -> UrlKey<'_> {
    let s = url.as_str();
    let end = s.find('#').unwrap_or(s.len());
    UrlKey(&s.as_bytes()[..end])
}

#[derive(Clone, Debug)]
struct FamilyFilter {
    bloom: BloomFilter,
    persisted: Vec<u64>,
    /// An insert set new bits since the last comparison with `persisted`.
    changed: bool,
}

/// The process-wide MIME filters.
#[derive(Clone, Debug)]
pub struct MimeFilters {
    layout: BloomLayout,
    filters: Vec<FamilyFilter>,
}

impl MimeFilters {
    pub fn new(config: MimeFilterConfig) -> Self {
        let probe = BloomFilter::with_false_pos(config.false_positive_rate.clamp(1e-9, 0.5))
            .seed(&BLOOM_SEED)
            .expected_items(config.expected_items.max(1));
        let layout = BloomLayout {
            seed: BLOOM_SEED,
            hashes: probe.num_hashes(),
            words: probe.as_slice().len(),
            chunk_words: CHUNK_WORDS,
        };
        let filters = MimeFamily::ALL
            .iter()
            .map(|_| FamilyFilter {
                bloom: probe.clone(),
                persisted: vec![0; layout.words],
                changed: false,
            })
            .collect();
        MimeFilters { layout, filters }
    }

    pub fn layout(&self) -> BloomLayout {
        self.layout
    }

    /// Remember that `url` has a type of `family`.
    pub fn insert(&mut self, url: &Url, family: MimeFamily) {
        let f = &mut self.filters[family.index()];
        if !f.bloom.insert(&key(url)) {
            f.changed = true;
        }
    }

    /// The first family (in [`MimeFamily::ALL`] order) whose filter contains `url`.
    pub fn lookup(&self, url: &Url) -> Option<MimeFamily> {
        let k = key(url);
        MimeFamily::ALL
            .into_iter()
            .find(|fam| self.filters[fam.index()].bloom.contains(&k))
    }

    /// The raw words of one family's filter.
    pub fn words(&self, family: MimeFamily) -> &[u64] {
        self.filters[family.index()].bloom.as_slice()
    }

    /// Take the chunks that changed since they were last taken: the caller
    /// commits them (a commit that fails keeps them in its delta and retries).
    pub fn take_dirty_chunks(&mut self) -> Vec<DirtyChunk> {
        let mut out = Vec::new();
        for family in MimeFamily::ALL {
            let f = &mut self.filters[family.index()];
            if !f.changed {
                continue;
            }
            let words = f.bloom.as_slice();
            for (index, (now, then)) in words
                .chunks(CHUNK_WORDS)
                .zip(f.persisted.chunks_mut(CHUNK_WORDS))
                .enumerate()
            {
                if now != then {
                    then.copy_from_slice(now);
                    out.push(DirtyChunk {
                        family,
                        index: index as u32,
                        words: now.to_vec(),
                    });
                }
            }
            f.changed = false;
        }
        out
    }

    /// Load one family's stored words (assembled from its chunks; missing chunks are zeros).
    pub fn restore_family(
        &mut self,
        stored: BloomLayout,
        family: MimeFamily,
        words: Vec<u64>,
    ) -> Result<(), MimeFilterError> {
        if stored != self.layout {
            return Err(MimeFilterError::Layout {
                stored,
                expected: self.layout,
            });
        }
        if words.len() != self.layout.words {
            return Err(MimeFilterError::Length {
                family,
                found: words.len(),
                expected: self.layout.words,
            });
        }
        let bloom = BloomFilter::from_vec(words.clone())
            .seed(&self.layout.seed)
            .hashes(self.layout.hashes);
        self.filters[family.index()] = FamilyFilter {
            bloom,
            persisted: words,
            changed: false,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> MimeFilters {
        MimeFilters::new(MimeFilterConfig {
            expected_items: 10_000,
            false_positive_rate: 0.01,
        })
    }

    fn u(i: usize) -> Url {
        Url::parse(&format!("https://example.org/file/{i}")).unwrap()
    }

    #[test]
    fn lookup_finds_the_family_of_inserted_urls() {
        let mut f = small();
        f.insert(&u(1), MimeFamily::Csv);
        f.insert(&u(2), MimeFamily::Html);
        assert_eq!(f.lookup(&u(1)), Some(MimeFamily::Csv));
        assert_eq!(f.lookup(&u(2)), Some(MimeFamily::Html));
        let with_fragment = Url::parse("https://example.org/file/1#top").unwrap();
        assert_eq!(f.lookup(&with_fragment), Some(MimeFamily::Csv));
        assert_eq!(f.lookup(&u(3)), None);
        // At 1 % FP and a light load, false positives are rare.
        let false_hits = (1000..3000).filter(|&i| f.lookup(&u(i)).is_some()).count();
        assert!(false_hits < 10, "{false_hits}");
    }

    #[test]
    fn dirty_chunks_reload_into_an_identical_filter() {
        let mut a = small();
        assert!(a.take_dirty_chunks().is_empty());
        for i in 0..500 {
            a.insert(
                &u(i),
                if i % 2 == 0 {
                    MimeFamily::Pdf
                } else {
                    MimeFamily::Html
                },
            );
        }
        let dirty = a.take_dirty_chunks();
        assert!(!dirty.is_empty());
        assert!(dirty
            .iter()
            .all(|c| matches!(c.family, MimeFamily::Pdf | MimeFamily::Html)));
        assert!(a.take_dirty_chunks().is_empty(), "taken once");

        // Rebuild from the persisted chunks, as the store would.
        let layout = a.layout();
        let mut b = small();
        for family in [MimeFamily::Pdf, MimeFamily::Html] {
            let mut words = vec![0u64; layout.words];
            for c in dirty.iter().filter(|c| c.family == family) {
                let start = c.index as usize * layout.chunk_words;
                words[start..start + c.words.len()].copy_from_slice(&c.words);
            }
            b.restore_family(layout, family, words).unwrap();
        }
        for i in 0..500 {
            assert_eq!(b.lookup(&u(i)), a.lookup(&u(i)));
        }
        assert_eq!(b.words(MimeFamily::Pdf), a.words(MimeFamily::Pdf));
        // One more insert dirties exactly the chunks of its bits.
        b.insert(&u(10_001), MimeFamily::Csv);
        let d = b.take_dirty_chunks();
        assert!(!d.is_empty() && d.len() <= layout.hashes as usize);
        assert!(d.iter().all(|c| c.family == MimeFamily::Csv));
    }

    #[test]
    fn restore_rejects_other_layouts() {
        let mut f = small();
        let mut layout = f.layout();
        assert_eq!(
            f.restore_family(layout, MimeFamily::Csv, vec![0; 3]),
            Err(MimeFilterError::Length {
                family: MimeFamily::Csv,
                found: 3,
                expected: layout.words
            })
        );
        layout.hashes += 1;
        assert!(matches!(
            f.restore_family(layout, MimeFamily::Csv, vec![0; layout.words]),
            Err(MimeFilterError::Layout { .. })
        ));
    }
}
