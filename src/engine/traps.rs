//! Infinite spaces (calendars, endless pagination of nothing): a budget per URL
//! pattern for pages that yield no target.
//!
//! A pattern is the host plus the path with every run of digits folded, plus
//! the sorted query keys: `/calendar/2024/05?view=m` and
//! `/calendar/1999/12?view=m` are one pattern. Once `cap` pages of one pattern
//! were fetched without any target found on or through them, new links of that
//! pattern are refused. A pattern that yields targets is never capped.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use url::Url;

/// Pages per pattern without reward before the pattern is closed.
pub const DEFAULT_PATTERN_CAP: u32 = 500;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct PatternStats {
    pages: u32,
    rewarded: bool,
}

/// Per-pattern page counts of one job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrapGuard {
    cap: u32,
    patterns: HashMap<u64, PatternStats>,
}

impl TrapGuard {
    pub fn new(cap: u32) -> Self {
        TrapGuard {
            cap,
            patterns: HashMap::new(),
        }
    }

    /// Whether a new link may still enter the frontier.
    pub fn admits(&self, url: &Url) -> bool {
        match self.patterns.get(&pattern_key(url)) {
            Some(s) => s.rewarded || s.pages < self.cap,
            None => true,
        }
    }

    /// A page of this URL was fetched and yielded `reward` targets.
    pub fn record_page(&mut self, url: &Url, reward: u32) {
        let s = self.patterns.entry(pattern_key(url)).or_default();
        s.pages = s.pages.saturating_add(1);
        s.rewarded |= reward > 0;
    }

    /// A page linked from `referrer` yielded targets: the referrer's pattern
    /// leads somewhere (pagination of a data listing is not a calendar).
    pub fn credit_referrer(&mut self, referrer: &Url) {
        self.patterns
            .entry(pattern_key(referrer))
            .or_default()
            .rewarded = true;
    }

    /// Patterns currently closed.
    pub fn closed(&self) -> usize {
        self.patterns
            .values()
            .filter(|s| !s.rewarded && s.pages >= self.cap)
            .count()
    }
}

/// Hash of the URL's pattern (host, digit-folded path, sorted query keys).
pub fn pattern_key(url: &Url) -> u64 {
    let mut shape = String::with_capacity(url.as_str().len());
    shape.push_str(url.host_str().unwrap_or(""));
    let mut in_digits = false;
    for c in url.path().chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                shape.push('0');
            }
            in_digits = true;
        } else {
            in_digits = false;
            shape.push(c);
        }
    }
    let mut keys: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        shape.push('&');
        shape.push_str(&k);
    }
    let mut cursor = std::io::Cursor::new(shape.as_bytes());
    murmur3::murmur3_x64_128(&mut cursor, 0x7472_6170).map_or(0, |h| h as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn digits_and_query_values_fold_into_one_pattern() {
        assert_eq!(
            pattern_key(&u("http://a.test/calendar/2024/05?view=m")),
            pattern_key(&u("http://a.test/calendar/1999/12?view=w"))
        );
        assert_ne!(
            pattern_key(&u("http://a.test/calendar/2024/05")),
            pattern_key(&u("http://a.test/archive/2024/05"))
        );
        assert_ne!(
            pattern_key(&u("http://a.test/c/1?page=2")),
            pattern_key(&u("http://a.test/c/1?sort=2"))
        );
    }

    #[test]
    fn an_unrewarded_pattern_closes_at_the_cap_and_a_rewarded_one_never() {
        let mut g = TrapGuard::new(3);
        for m in 1..=3 {
            assert!(g.admits(&u(&format!("http://a.test/cal/2024/{m}"))));
            g.record_page(&u(&format!("http://a.test/cal/2024/{m}")), 0);
        }
        assert!(!g.admits(&u("http://a.test/cal/2031/7")));
        assert_eq!(g.closed(), 1);
        for p in 1..=10 {
            g.record_page(
                &u(&format!("http://a.test/data?page={p}")),
                u32::from(p == 1),
            );
        }
        assert!(g.admits(&u("http://a.test/data?page=11")));
        // Listing pages that only lead to rewarding pages stay open too.
        for p in 1..=3 {
            g.record_page(&u(&format!("http://a.test/list/{p}")), 0);
        }
        assert!(!g.admits(&u("http://a.test/list/4")));
        g.credit_referrer(&u("http://a.test/list/2"));
        assert!(g.admits(&u("http://a.test/list/4")));
    }
}
