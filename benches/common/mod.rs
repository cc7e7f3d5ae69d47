//! Material shared by the benchmarks.

// Each benchmark uses a part of it.
#![allow(dead_code)]

use forager::store::ManifestRow;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Duration;

const TAGS: &[&str] = &[
    "div", "ul", "li", "span", "p", "section", "table", "tbody", "tr", "td", "nav", "header",
    "footer", "main", "article", "aside", "dl", "dd", "h2", "h3", "ol", "form", "figure",
];

/// A random tag path: `/html/body/...` with 3–10 elements, classes and some
/// ids (distinct enough that they rarely join an existing action).
pub fn random_path(rng: &mut Xoshiro256PlusPlus) -> String {
    let mut s = String::from("/html/body");
    for _ in 0..rng.random_range(3..11) {
        s.push('/');
        s.push_str(TAGS[rng.random_range(0..TAGS.len())]);
        if rng.random_bool(0.6) {
            s.push_str(&format!(".c{}", rng.random_range(0..3000)));
        }
        if rng.random_bool(0.1) {
            s.push_str(&format!("#i{}", rng.random_range(0..100_000)));
        }
    }
    s.push_str("/a");
    s
}

/// CPU time the calling thread has used so far (`CLOCK_THREAD_CPUTIME_ID`):
/// unlike wall-clock time, not inflated by other processes on the machine.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The manifest row of a saved CSV of `bytes` bytes at `url`, stored as `file`:
/// what the checkpoint benchmarks put in a job's manifest (the fields a
/// benchmark does not vary are fixed).
pub fn csv_row(url: String, bytes: u64, file: String) -> ManifestRow {
    ManifestRow {
        final_url: url.clone(),
        url,
        mime: "text/csv".into(),
        bytes,
        sha256: "00".repeat(32),
        file,
        referrer: None,
        tag_path: "/html/body/a".into(),
        fetched_at: "2026-11-22T00:00:00Z".into(),
        truncated: false,
        rdf: None,
        structured: None,
        change: None,
    }
}
