//! Infinite spaces (calendars, endless "next" links): a limit on runs of
//! pages that share one URL pattern, for patterns that never led to a target.
//!
//! A pattern is the host plus the path with every run of digits folded, plus
//! the sorted query keys: `/calendar/2024/05?view=m` and
//! `/calendar/1999/12?view=m` are one pattern. A link continues its page's run
//! when it has the page's pattern; once a run is longer than the limit, the
//! link is refused — unless pages of that pattern (or pages they link to)
//! yielded targets, as the pagination of a data listing does.

use crate::hash::Murmur3x64;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashSet;
use url::Url;

/// Pages in a row of one unrewarded pattern before further links are refused.
pub const DEFAULT_MAX_PATTERN_RUN: u32 = 100;

/// The patterns of one job that have led to targets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrapGuard {
    max_run: u32,
    rewarded: HashSet<u64>,
}

impl TrapGuard {
    pub fn new(max_run: u32) -> Self {
        TrapGuard {
            max_run,
            rewarded: HashSet::new(),
        }
    }

    /// The run a link found on `page` (whose own run is `page_run`) continues.
    pub fn run_of(link: &Url, page: &Url, page_run: u32) -> u32 {
        if pattern_key(link) == pattern_key(page) {
            page_run.saturating_add(1)
        } else {
            0
        }
    }

    /// Whether a new link with this run may still enter the frontier.
    pub fn admits(&self, url: &Url, run: u32) -> bool {
        run <= self.max_run || self.rewarded.contains(&pattern_key(url))
    }

    /// A page of this URL was fetched and yielded `reward` targets.
    pub fn record_page(&mut self, url: &Url, reward: u32) {
        if reward > 0 {
            self.rewarded.insert(pattern_key(url));
        }
    }

    /// A page linked from `referrer` yielded targets: the referrer's pattern
    /// leads somewhere (pagination of a data listing is not a calendar).
    pub fn credit_referrer(&mut self, referrer: &Url) {
        self.rewarded.insert(pattern_key(referrer));
    }
}

/// Hash of the URL's pattern (host, digit-folded path, sorted query keys).
///
/// The shape is hashed as it is walked, not assembled in a string: this runs
/// for every link of every page, and a URL without a query allocates nothing.
/// The value is stored (the rewarded patterns), so it must stay that of the
/// assembled shape (`shape_of` in the tests).
pub fn pattern_key(url: &Url) -> u64 {
    let mut h = Murmur3x64::new(PATTERN_SEED);
    h.write(url.host_str().unwrap_or("").as_bytes());
    // Path bytes, each run of ASCII digits as one `0` (a multi-byte
    // character never contains an ASCII digit byte, so bytes fold as chars do).
    let mut rest = url.path().as_bytes();
    while !rest.is_empty() {
        let plain = rest
            .iter()
            .position(u8::is_ascii_digit)
            .unwrap_or(rest.len());
        h.write(&rest[..plain]);
        rest = &rest[plain..];
        if !rest.is_empty() {
            h.write(b"0");
            let digits = rest
                .iter()
                .position(|b| !b.is_ascii_digit())
                .unwrap_or(rest.len());
            rest = &rest[digits..];
        }
    }
    if url.query().is_some() {
        // Keys borrow from the URL unless percent-decoding changed them.
        let mut keys: Vec<Cow<'_, str>> = url.query_pairs().map(|(k, _)| k).collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            h.write(b"&");
            h.write(k.as_bytes());
        }
    }
    h.finish() as u64
}

const PATTERN_SEED: u32 = 0x7472_6170;

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// The pattern as one string: what [`pattern_key`] hashes piece by piece.
    fn shape_of(url: &Url) -> String {
        let mut shape = String::new();
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
        shape
    }

    #[test]
    fn the_key_is_the_hash_of_the_assembled_shape() {
        for s in [
            "http://a.test/",
            "http://a.test/calendar/2024/05?view=m&b=1&view=w",
            "http://a.test/1/22/333/x4y55z?%C3%A9t%C3%A9=1&a%20b=2&=3",
            "http://a.test/caf%C3%A9/%E2%82%AC12/p-9.html?q",
            "http://b.test/a-very-long-path-segment/that-spans/several/blocks/0123456789/x",
            "file:///tmp/2024/x",
        ] {
            let url = u(s);
            let mut cursor = std::io::Cursor::new(shape_of(&url).into_bytes());
            let want = murmur3::murmur3_x64_128(&mut cursor, PATTERN_SEED).unwrap() as u64;
            assert_eq!(pattern_key(&url), want, "{s}");
        }
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
    fn long_runs_of_an_unrewarded_pattern_are_refused() {
        let mut g = TrapGuard::new(3);
        let month = |m: u32| u(&format!("http://a.test/cal/2024/{m}"));
        assert_eq!(TrapGuard::run_of(&month(2), &month(1), 3), 4);
        assert_eq!(
            TrapGuard::run_of(&u("http://a.test/about"), &month(1), 3),
            0
        );
        assert!(g.admits(&month(4), 3));
        assert!(!g.admits(&month(5), 4));
        // A pattern that led to targets is never cut.
        g.credit_referrer(&month(1));
        assert!(g.admits(&month(9), 40));
        let list = u("http://a.test/data?page=7");
        assert!(!g.admits(&list, 4));
        g.record_page(&u("http://a.test/data?page=2"), 1);
        assert!(g.admits(&list, 4));
        g.record_page(&u("http://a.test/other/1"), 0);
        assert!(!g.admits(&u("http://a.test/other/9"), 4));
    }
}
