//! kill -9 at random moments: `forager crawl` is SIGKILLed 20 times and
//! restarted; at the end the manifest equals an uninterrupted run's (same
//! target URLs and hashes), has no duplicate rows, and the requests redone
//! stay within what the lost checkpoint intervals can explain.
//!
//! A second test kills it exactly where it hurts, through crash points
//! (`FORAGER_CRASH_AT`): between two writes of a checkpoint commit, in the
//! middle of a target body, and after a target's rename but before its
//! manifest row commits.
//!
//! The soak version (200 kills) runs with `FORAGER_CRASH_KILLS=200 cargo test
//! --release --test crash -- --nocapture`.

use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

mod common;
use common::{manifest_by_final_url, serve_small_site, Crawl, JobFile};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const HOST: &str = "crash.test";

fn job(dir: &Path, port: u16, start: &str) -> std::path::PathBuf {
    JobFile::new("crash")
        .seed(format!("http://{HOST}:{port}{start}"))
        .rng_seed(3)
        .delay("0s")
        .no_early_stop()
        .write(dir)
}

fn command(job: &Path, state: &Path, port: u16) -> tokio::process::Command {
    let mut c = Crawl::new(job, state)
        .allow_private()
        .resolve(HOST, port)
        .checkpoint_interval("100ms")
        .command();
    c.stdout(Stdio::null()).stderr(Stdio::null());
    c
}

/// Final URL → sha256 of every manifest row (no duplicates).
fn manifest(state: &Path) -> BTreeMap<String, String> {
    manifest_by_final_url(&state.join("targets/crash"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_loses_and_duplicates_nothing() {
    let kills: usize = std::env::var("FORAGER_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let (server, start) = serve_small_site(HOST, 1).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = job(tmp.path(), port, &start);

    // The reference: one uninterrupted run.
    let reference = tmp.path().join("reference");
    let began = Instant::now();
    let status = command(&job, &reference, port).status().await.unwrap();
    let reference_time = began.elapsed();
    assert!(status.success());
    let reference_requests = server.log().len();
    let expected = manifest(&reference);
    assert!(expected.len() > 100, "{} targets", expected.len());
    server.clear_log();

    // The same crawl, killed `kills` times at seeded random moments.
    let crashed = tmp.path().join("crashed");
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut killed = 0;
    let mut finished = false;
    for _ in 0..kills * 3 {
        let mut child = command(&job, &crashed, port).spawn().unwrap();
        // Spread the kills over the whole crawl: start-up, fetches, commits, target writes.
        // Each run gets about twice its share of the crawl on average, plus start-up.
        let share = reference_time.as_millis() as u64 * 2 / kills as u64;
        let at = Duration::from_millis(rng.random_range(15..share.max(10) + 40));
        tokio::select! {
            status = child.wait() => {
                assert!(status.unwrap().success());
                finished = true;
                break;
            }
            _ = tokio::time::sleep(at) => {
                child.start_kill().unwrap();
                let _ = child.wait().await;
                killed += 1;
                if killed == kills {
                    break;
                }
            }
        }
    }
    if !finished {
        let status = command(&job, &crashed, port).status().await.unwrap();
        assert!(status.success());
    }
    assert!(killed >= kills.min(5), "only {killed} kills landed");
    assert_eq!(manifest(&crashed), expected);

    // Work redone: each kill loses at most what was done since the last
    // checkpoint (100 ms) plus the start-up of the next run.
    let redone = server.log().len().saturating_sub(reference_requests);
    let per_second = reference_requests as f64 / reference_time.as_secs_f64().max(0.001);
    let bound = killed as f64 * (per_second * 0.1 * 3.0 + 10.0);
    eprintln!(
        "{killed} kills: {redone} requests redone (bound {bound:.0}; reference {reference_requests} requests at {per_second:.0}/s)"
    );
    assert!((redone as f64) <= bound, "{redone} redone > {bound:.0}");
    let _ = server.shutdown().await;
}

/// Every file in a job's target folder is named by a manifest row (a target
/// renamed before a crash is found again, not duplicated).
fn assert_no_orphan_files(state: &Path, rows: &BTreeMap<String, String>) {
    let dir = state.join("targets/crash");
    let hashes: std::collections::BTreeSet<&str> = rows.values().map(String::as_str).collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name == "manifest.jsonl" || name == ".partial" || name.starts_with("crawl.log") {
            continue;
        }
        let hash = name.split('.').next().unwrap();
        assert!(hashes.contains(hash), "orphan target file {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_inside_commits_and_target_writes_lose_nothing() {
    use std::os::unix::process::ExitStatusExt;
    let (server, start) = serve_small_site(HOST, 4).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = job(tmp.path(), port, &start);

    let reference = tmp.path().join("reference");
    assert!(command(&job, &reference, port)
        .status()
        .await
        .unwrap()
        .success());
    let expected = manifest(&reference);
    assert!(expected.len() > 100, "{} targets", expected.len());

    let crashed = tmp.path().join("crashed");
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    // (point, largest N): N is drawn per run, so kills spread over each run.
    let points = [
        ("store-write", 120u64),
        ("target-write", 40),
        ("target-saved", 30),
    ];
    let mut landed = BTreeMap::new();
    let mut finished = false;
    'runs: for round in 0..8 {
        for (point, max) in points {
            let n = rng.random_range(1..=max);
            let mut c = command(&job, &crashed, port);
            c.env(forager::crashpoint::ENV, format!("{point}:{n}"));
            let status = c.status().await.unwrap();
            if status.success() {
                finished = true;
                eprintln!("the crawl finished in round {round}");
                break 'runs;
            }
            assert_eq!(status.signal(), Some(9), "{point}:{n} ended with {status}");
            *landed.entry(point).or_insert(0u32) += 1;
        }
    }
    if !finished {
        assert!(command(&job, &crashed, port)
            .status()
            .await
            .unwrap()
            .success());
    }
    eprintln!("kills landed: {landed:?}");
    for (point, _) in points {
        assert!(
            landed.get(point).copied().unwrap_or(0) >= 3,
            "too few kills at {point}: {landed:?}"
        );
    }
    let got = manifest(&crashed);
    assert_eq!(got, expected);
    assert_no_orphan_files(&crashed, &got);
    let _ = server.shutdown().await;
}
