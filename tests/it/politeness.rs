//! Politeness through the real binary: the adaptive delay (`[politeness]
//! adaptive_delay`, `max_delay`) against a loopback server that slows down
//! and recovers, and a delay that changes when a site job's requests go,
//! never which ones.
//!
//! The machine running these tests is shared and noisy: a request can only
//! come *later* than the delay says, never sooner (the fetcher enforces the
//! delay), so lower bounds are tight and upper bounds have wide margins,
//! each far from what the code would do if it were wrong.

use crate::harness::sites::{serve_host, serve_small_site};
use crate::harness::{manifest_by_final_url, Crawl, JobFile};
use forager_bench::sites::server::{min_start_gap, RequestRecord, Site, SiteRequest, SiteResponse};
use std::sync::Arc;
use std::time::Duration;

const HOST: &str = "slowing.test";
/// Files linked from the seed, fetched in order (bfs, one request in flight).
const FILES: usize = 14;
/// Files answered slowly: the server is busy while it serves these.
const SLOW: std::ops::Range<usize> = 3..7;
/// How long a busy server takes to answer: far above `max_delay`, so a delay
/// that followed it without the cap would show.
const SLOW_ANSWER: Duration = Duration::from_secs(2);
const MAX_DELAY: Duration = Duration::from_millis(250);

/// A seed listing `FILES` files, the `SLOW` ones answered after `SLOW_ANSWER`.
struct Slowing;

impl Site for Slowing {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path_and_query();
        if path == "/" {
            let links: String = (0..FILES)
                .map(|i| format!("<a href=\"/d/{i}.csv\">{i}</a>\n"))
                .collect();
            return SiteResponse::html(format!("<html><body>\n{links}</body></html>"));
        }
        let Some(i) = file_index(&path) else {
            return SiteResponse::not_found();
        };
        let answer = SiteResponse::ok("text/csv", format!("a,b\n{i},1\n"));
        if SLOW.contains(&i) {
            answer.with_delay(SLOW_ANSWER)
        } else {
            answer
        }
    }
}

fn file_index(path: &str) -> Option<usize> {
    path.strip_prefix("/d/")?.strip_suffix(".csv")?.parse().ok()
}

/// The time the host was left alone before each file's request: from the
/// end of the previous answer to this request's arrival, by file index.
fn idle_before_each_file(log: &[RequestRecord]) -> Vec<(usize, Duration)> {
    log.windows(2)
        .filter_map(|w| {
            let i = file_index(&w[1].path_and_query)?;
            let done = w[0].done?;
            Some((i, w[1].at.saturating_duration_since(done)))
        })
        .collect()
}

/// A host that slows down is asked less often, never less often than
/// `max_delay` allows, and as often as before once it is fast again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_adaptive_delay_grows_with_a_slow_host_within_max_delay_and_comes_back_down() {
    let tmp = tempfile::tempdir().unwrap();
    let server = serve_host(HOST, Arc::new(Slowing)).await;
    let job = JobFile::new("slowing")
        .seed(format!("http://{HOST}/"))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
        .set("politeness", "adaptive_delay", true)
        .set(
            "politeness",
            "max_delay",
            format!("\"{}ms\"", MAX_DELAY.as_millis()),
        )
        .write(tmp.path());
    let state = tmp.path().join("state");
    let out = Crawl::loopback(&job, &state)
        .resolve(HOST, server.port())
        .output()
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let saved = manifest_by_final_url(&state.join("targets/slowing"));
    assert_eq!(saved.len(), FILES, "{saved:?}");
    let log = server.log();
    let _ = server.shutdown().await;
    let idle = idle_before_each_file(&log);
    let order: Vec<usize> = idle.iter().map(|(i, _)| *i).collect();
    assert_eq!(order, (0..FILES).collect::<Vec<_>>(), "{log:#?}");
    let gap = |i: usize| idle[i].1;
    let shown: Vec<String> = idle
        .iter()
        .map(|(i, d)| format!("{i}: {} ms", d.as_millis()))
        .collect();
    let shown = shown.join(", ");
    // For the measurement notes (`--nocapture`).
    eprintln!("idle time before each file: {shown}");

    // Before the server slows down, delay 0: the requests follow each other
    // (the least of two, so that one late request does not count).
    let fast_before = (1..SLOW.start).map(gap).min().unwrap_or_default();
    // Grows: after two slow answers the delay is at least their mean with
    // the earlier one (0.125 s, 0.19 s, 0.22 s… towards 0.25 s): a lower
    // bound, which noise cannot break (a request never comes sooner).
    let grown = gap(SLOW.start + 2);
    assert!(
        grown >= MAX_DELAY * 5 / 8,
        "the delay did not grow with the response time: {shown}"
    );
    assert!(
        fast_before < grown / 2,
        "the host was already paced before it slowed down: {shown}"
    );
    // Never past max_delay: without the cap the delay would follow the
    // 2 s answers (1 s, 1.5 s, 1.75 s…); with it, it stays at 0.25 s, and
    // 0.75 s more is left for a noisy machine.
    let peak = (SLOW.start..=SLOW.end).map(gap).max().unwrap_or_default();
    assert!(
        peak < MAX_DELAY + Duration::from_millis(750),
        "the delay went past max_delay: {shown}"
    );
    // Comes back down: fast answers halve it each time, so the last
    // requests are far closer than at the peak (the least of three, so that
    // one late request on a busy machine does not count).
    let recovered = (FILES - 3..FILES).map(gap).min().unwrap_or_default();
    assert!(
        recovered < peak / 3,
        "the delay did not come back down once the host was fast: {shown}"
    );
}

/// With one request in flight (a site job's default), the politeness delay
/// changes when requests go, not which ones: sb on the same site with the
/// same seed makes the same requests in the same order with no delay and
/// with one. This is why `forager bench`, which measures data-file harvests
/// with no delay to keep runs short, gives the figures of a job with the
/// default `delay = "1s"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_changes_when_a_site_jobs_requests_go_not_which_ones() {
    const PACED: &str = "paced.test";
    const DELAY: Duration = Duration::from_millis(15);
    let (server, start) = serve_small_site(PACED, 1).await;
    let tmp = tempfile::tempdir().unwrap();
    let mut sequences = Vec::new();
    for delay in ["0s", "15ms"] {
        let dir = tmp.path().join(delay);
        std::fs::create_dir_all(&dir).unwrap();
        let job = JobFile::new("paced")
            .seed(format!("http://{PACED}{start}"))
            .strategy("sb")
            .rng_seed(5)
            .delay(delay)
            .set("budget", "requests", 240)
            .write(&dir);
        let state = dir.join("state");
        server.clear_log();
        let out = Crawl::loopback(&job, &state)
            .resolve(PACED, server.port())
            .output()
            .await;
        assert!(
            out.status.success(),
            "delay {delay}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let log = server.log();
        if delay != "0s" {
            let gap = min_start_gap(&log, PACED).unwrap_or_default();
            assert!(gap >= DELAY, "requests {gap:?} apart with delay {delay}");
        }
        let sequence: Vec<String> = log
            .iter()
            .map(|r| format!("{} {}", r.method, r.path_and_query))
            .collect();
        assert!(sequence.len() >= 200, "{} requests", sequence.len());
        sequences.push(sequence);
    }
    let _ = server.shutdown().await;
    let first_difference = sequences[0]
        .iter()
        .zip(&sequences[1])
        .position(|(a, b)| a != b);
    assert_eq!(
        first_difference, None,
        "the crawls part at request {first_difference:?}"
    );
    assert_eq!(sequences[0].len(), sequences[1].len());
}
