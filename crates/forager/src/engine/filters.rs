//! Persistence of the shared MIME Bloom filters: raw 512-byte word chunks in the
//! store's `shared` table, only the chunks that changed since the last commit.

use crate::store::{JobDelta, Store, StoreError};
use forager_core::codec;
use forager_core::learn::{BloomLayout, MimeFilters};
use forager_core::mime::MimeFamily;
use std::collections::BTreeMap;

const PREFIX: &str = "mime/";
const LAYOUT_KEY: &str = "mime/layout";

fn chunk_key(family: MimeFamily, index: u32) -> String {
    format!("{PREFIX}{:02}/{index:08}", family.index())
}

/// Load the stored filters into `filters`; a layout from another build is
/// ignored with a warning (the filters only save HEAD requests).
pub fn load(store: &Store, filters: &mut MimeFilters) -> Result<(), StoreError> {
    let rows = store.shared_with_prefix(PREFIX)?;
    let Some((_, layout)) = rows.iter().find(|(k, _)| k == LAYOUT_KEY) else {
        return Ok(());
    };
    let Ok((seed, hashes, words, chunk_words)) = codec::decode::<(u128, u32, u64, u64)>(layout)
    else {
        tracing::warn!("stored MIME filter layout does not decode; starting with empty filters");
        return Ok(());
    };
    let layout = BloomLayout {
        seed,
        hashes,
        words: words as usize,
        chunk_words: chunk_words as usize,
    };
    let mut per_family: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for (key, bytes) in &rows {
        let Some((fam, index)) = key
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once('/'))
            .and_then(|(f, i)| Some((f.parse::<usize>().ok()?, i.parse::<usize>().ok()?)))
        else {
            continue;
        };
        // A chunk of another layout (left by an older build) is not this layout's.
        if bytes.len() != layout.chunk_words * 8 {
            continue;
        }
        let all = per_family
            .entry(fam)
            .or_insert_with(|| vec![0u64; layout.words]);
        let start = index * layout.chunk_words;
        for (i, w) in bytes.chunks_exact(8).enumerate() {
            if let (Some(slot), Ok(b)) = (all.get_mut(start + i), <[u8; 8]>::try_from(w)) {
                *slot = u64::from_le_bytes(b);
            }
        }
    }
    for (fam, words) in per_family {
        let Some(&family) = MimeFamily::ALL.get(fam) else {
            continue;
        };
        if let Err(e) = filters.restore_family(layout, family, words) {
            tracing::warn!(error = %e, "stored MIME filter not loaded; it will be rebuilt");
        }
    }
    Ok(())
}

/// Move the chunks changed since the last staging into `delta` (whichever
/// job stages them commits them for every job).
pub fn stage(filters: &mut MimeFilters, delta: &mut JobDelta) {
    let chunks = filters.take_dirty_chunks();
    if chunks.is_empty() {
        return;
    }
    let l = filters.layout();
    let layout = (
        LAYOUT_KEY.to_string(),
        codec::encode(&(l.seed, l.hashes, l.words as u64, l.chunk_words as u64)),
    );
    delta.stage_shared(std::iter::once(layout).chain(chunks.iter().map(|c| {
        let bytes: Vec<u8> = c.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        (chunk_key(c.family, c.index), bytes)
    })));
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager_core::learn::MimeFilterConfig;
    use url::Url;

    #[test]
    fn filters_survive_a_restart_and_only_dirty_chunks_are_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let config = MimeFilterConfig {
            expected_items: 10_000,
            false_positive_rate: 0.01,
        };
        let csv = Url::parse("http://a.test/data/x.csv").unwrap();
        let page = Url::parse("http://a.test/about").unwrap();
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            let mut f = MimeFilters::new(config);
            f.insert(&csv, MimeFamily::Csv);
            f.insert(&page, MimeFamily::Html);
            let mut delta = JobDelta::new("j");
            stage(&mut f, &mut delta);
            assert!(!delta.shared.is_empty());
            store.commit_blocking(delta).unwrap();
            let mut again = JobDelta::new("j");
            stage(&mut f, &mut again);
            assert!(again.shared.is_empty(), "nothing changed since");
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let mut f = MimeFilters::new(config);
        load(&store, &mut f).unwrap();
        assert_eq!(f.lookup(&csv), Some(MimeFamily::Csv));
        assert_eq!(f.lookup(&page), Some(MimeFamily::Html));
        assert_eq!(f.lookup(&Url::parse("http://a.test/other").unwrap()), None);
    }

    #[test]
    fn chunks_of_another_chunk_size_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let config = MimeFilterConfig {
            expected_items: 10_000,
            false_positive_rate: 0.01,
        };
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let mut f = MimeFilters::new(config);
        let csv = Url::parse("http://a.test/data/x.csv").unwrap();
        f.insert(&csv, MimeFamily::Csv);
        let mut delta = JobDelta::new("j");
        stage(&mut f, &mut delta);
        // A stale 4 KiB chunk of an older build, all bits set, at index 0 of every family.
        delta.stage_shared(
            MimeFamily::ALL
                .iter()
                .map(|&family| (chunk_key(family, 0), vec![0xff; 4096])),
        );
        store.commit_blocking(delta).unwrap();
        let mut g = MimeFilters::new(config);
        load(&store, &mut g).unwrap();
        assert_eq!(g.lookup(&csv), Some(MimeFamily::Csv));
        for family in MimeFamily::ALL {
            assert_eq!(g.words(family), f.words(family), "stale chunks loaded");
        }
    }
}
