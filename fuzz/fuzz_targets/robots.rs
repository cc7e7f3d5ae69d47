//! robots.txt handling: any body, for any user agent, parses without panic
//! and answers every question (allowed, Crawl-delay, sitemaps) sanely.
#![no_main]

use forager::fetch::{RobotsRecord, RobotsRules, RobotsStatus, ROBOTS_MAX_BYTES};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;
use url::Url;

fuzz_target!(|data: &[u8]| {
    // First line: the user agent and a path to ask about; the rest is the file.
    let (head, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&[][..], data),
    };
    let head = String::from_utf8_lossy(head);
    let (agent, path) = head.split_once(' ').unwrap_or((&head, "/"));
    let body = &body[..body.len().min(ROBOTS_MAX_BYTES as usize)];
    let record = RobotsRecord {
        origin: "http://site.test:80".to_string(),
        status: RobotsStatus::Fetched,
        body: body.to_vec(),
        fetched_at_ms: 0,
    };
    let rules = RobotsRules::from_record(record, agent);
    if let Ok(url) = Url::parse("http://site.test/").and_then(|b| b.join(path)) {
        let _ = rules.allowed(&url);
    }
    let _ = rules.allowed(&Url::parse("http://site.test/robots.txt").expect("static URL"));
    if let Some(delay) = rules.crawl_delay() {
        assert!(delay > Duration::ZERO && delay <= Duration::from_secs(24 * 3600));
    }
    for sitemap in rules.sitemaps() {
        assert!(
            matches!(sitemap.scheme(), "http" | "https"),
            "sitemap {sitemap}"
        );
    }
    assert!(rules.sitemaps().len() <= 1000);
    let _ = rules.unparsable();
});
