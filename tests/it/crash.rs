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
//! A third pair serves content that changes with every answer, once and
//! continuous: work redone after a kill saves a file under a new digest, and
//! the file saved before the kill (named, its row never committed) must not
//! stay behind as an orphan.
//!
//! The soak version (200 kills) runs with `FORAGER_CRASH_KILLS=200 cargo test
//! --release --test it crash:: -- --nocapture`.

use axum::http::StatusCode;
use forager_bench::sites::server::{Body, Site, SiteRequest, SiteResponse, SiteServer};
use forager_bench::sites::synthetic::{Preset, SyntheticSite};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::harness::bin;
use crate::harness::{manifest_by_final_url, serve_small_site, Crawl, JobFile};
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
    let status = bin::status(&mut command(&job, &reference, port)).await;
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
        // Spread the kills over the whole crawl: start-up (before any
        // request), fetches, commits, target writes. A kill follows a seeded
        // random number of requests the server answered, never a clock (on a
        // loaded machine a short sleep ends before the first request); each
        // run gets about twice its share of the crawl on average.
        let share = reference_requests * 2 / kills;
        let more = rng.random_range(0..share.max(1) + 2);
        let since = server.log().len();
        let mut child = bin::spawn(&mut command(&job, &crashed, port));
        if bin::until(&mut child, || server.log().len() >= since + more).await {
            assert!(bin::wait(&mut child).await.success());
            finished = true;
            break;
        }
        bin::stop(&mut child, libc::SIGKILL).await;
        killed += 1;
        if killed == kills {
            break;
        }
    }
    if !finished {
        let status = bin::status(&mut command(&job, &crashed, port)).await;
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
    assert!(bin::status(&mut command(&job, &reference, port))
        .await
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
            let status = bin::status(&mut c).await;
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
        assert!(bin::status(&mut command(&job, &crashed, port))
            .await
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

/// A site whose target bodies change with every answer (a counter is
/// appended to each 200 body that is not HTML): a body fetched again after
/// a kill is another file under another digest.
struct Changing<S> {
    inner: S,
    answers: AtomicU64,
}

impl<S: Site> Site for Changing<S> {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let mut resp = self.inner.respond(req);
        let html = resp
            .content_type()
            .is_some_and(|t| t.starts_with("text/html"));
        if req.is_head() || resp.status != StatusCode::OK || html || req.path == "/robots.txt" {
            return resp;
        }
        if let Body::Bytes(body) = &resp.body {
            let n = self.answers.fetch_add(1, Ordering::Relaxed);
            let mut changed = body.to_vec();
            changed.extend_from_slice(format!("\n# answer {n}\n").as_bytes());
            resp.body = Body::Bytes(changed.into());
        }
        resp
    }

    fn is_trap(&self, path_and_query: &str) -> bool {
        self.inner.is_trap(path_and_query)
    }
}

/// Rows of a job's `manifest.jsonl`: (final URL, sha256, file, change).
fn rows(dir: &Path) -> Vec<(String, String, String, Option<String>)> {
    let text = std::fs::read_to_string(dir.join("manifest.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (
                field("final_url"),
                field("sha256"),
                field("file"),
                v["change"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// Target files of a job folder that no row names.
fn orphan_files(dir: &Path, rows: &[(String, String, String, Option<String>)]) -> Vec<String> {
    let named: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    let mut orphans = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        let ours = name == "manifest.jsonl" || name.starts_with("crawl.log");
        if entry.path().is_file() && !ours && !named.contains(name.as_str()) {
            orphans.push(name);
        }
    }
    orphans
}

/// Every row's file is there with its digest's content, and no
/// (URL, digest) is there twice.
fn assert_rows_sound(dir: &Path, rows: &[(String, String, String, Option<String>)]) {
    use sha2::Digest;
    let mut pairs = std::collections::BTreeSet::new();
    for (url, sha, file, _) in rows {
        let body = std::fs::read(dir.join(file))
            .unwrap_or_else(|e| panic!("{url}: its file {file} is lost: {e}"));
        assert_eq!(&hex::encode(sha2::Sha256::digest(&body)), sha, "{url}");
        assert!(pairs.insert((url, sha)), "duplicate row: {url} {sha}");
    }
}

/// The small synthetic site of `seed` behind [`Changing`] bodies, served
/// under [`HOST`]; and the path a crawl starts from.
async fn serve_changing(seed: u64) -> (SiteServer, String) {
    let site = SyntheticSite::preset(Preset::Small, seed).unwrap();
    let start = site.start_path().to_string();
    let site = Arc::new(Changing {
        inner: site,
        answers: AtomicU64::new(0),
    });
    let server = SiteServer::start(vec![(HOST.to_string(), site as Arc<dyn Site>)])
        .await
        .unwrap();
    (server, start)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_content_killed_ten_times_leaves_no_orphan_files() {
    use std::os::unix::process::ExitStatusExt;
    let (server, start) = serve_changing(6).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = job(tmp.path(), port, &start);

    // Which URLs are targets does not change with the bodies: one run says.
    let reference = tmp.path().join("reference");
    assert!(bin::status(&mut command(&job, &reference, port))
        .await
        .success());
    let expected: std::collections::BTreeSet<String> = manifest(&reference).into_keys().collect();
    assert!(expected.len() > 100, "{} targets", expected.len());

    // Ten kills: every other one right after a target got its name (before
    // its row could commit), the others after a number of requests.
    let crashed = tmp.path().join("crashed");
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    for kill in 0..10 {
        if kill % 2 == 0 {
            let n = rng.random_range(1..=12u64);
            let mut c = command(&job, &crashed, port);
            c.env(forager::crashpoint::ENV, format!("target-saved:{n}"));
            let status = bin::status(&mut c).await;
            assert_eq!(status.signal(), Some(9), "kill {kill}: {status}");
        } else {
            let more = rng.random_range(10..40usize);
            let since = server.log().len();
            let mut child = bin::spawn(&mut command(&job, &crashed, port));
            if bin::until(&mut child, || server.log().len() >= since + more).await {
                panic!("kill {kill}: the crawl ended first");
            }
            bin::stop(&mut child, libc::SIGKILL).await;
        }
    }
    assert!(bin::status(&mut command(&job, &crashed, port))
        .await
        .success());

    let dir = crashed.join("targets/crash");
    let rows = rows(&dir);
    let orphans = orphan_files(&dir, &rows);
    eprintln!(
        "once, 10 kills on changing content: {} rows, {} orphan files",
        rows.len(),
        orphans.len()
    );
    assert!(orphans.is_empty(), "orphan target files: {orphans:?}");
    assert_rows_sound(&dir, &rows);
    let got: std::collections::BTreeSet<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(got.len(), rows.len(), "a URL has two rows");
    assert_eq!(got, expected, "lost or extra targets");
    let _ = server.shutdown().await;
}

/// 5 sections of 10 pages and 2 CSV files each; every answer to a CSV
/// differs from the last, so each revisit saves a changed file.
struct ChangingSection {
    answers: AtomicU64,
}

impl Site for ChangingSection {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let link = |href: String| format!("<li><a href=\"{href}\">{href}</a></li>");
        let path = req.path.as_str();
        if path == "/" {
            let items: String = (0..5).map(|s| link(format!("/s{s}/"))).collect();
            return SiteResponse::html(format!("<html><body><ul>{items}</ul></body></html>"));
        }
        let Some(rest) = path.strip_prefix("/s") else {
            return SiteResponse::not_found();
        };
        let (section, file) = rest.split_once('/').unwrap_or((rest, ""));
        if !matches!(section, "0" | "1" | "2" | "3" | "4") {
            return SiteResponse::not_found();
        }
        if file.is_empty() {
            let mut items: String = (0..10)
                .map(|p| link(format!("/s{section}/p{p}.html")))
                .collect();
            items.extend((0..2).map(|f| link(format!("/s{section}/f{f}.csv"))));
            return SiteResponse::html(format!("<html><body><ul>{items}</ul></body></html>"));
        }
        if file.ends_with(".html") {
            return SiteResponse::html(format!(
                "<html><body><a href=\"/s{section}/\">up</a></body></html>"
            ));
        }
        if file.ends_with(".csv") && !req.is_head() {
            let n = self.answers.fetch_add(1, Ordering::Relaxed);
            return SiteResponse::ok(
                "text/csv",
                format!("section,file,answer\n{section},{file},{n}\n"),
            );
        }
        if file.ends_with(".csv") {
            return SiteResponse::ok("text/csv", "");
        }
        SiteResponse::not_found()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuous_job_on_changing_content_killed_ten_times_leaves_no_orphan_files() {
    use std::os::unix::process::ExitStatusExt;
    let site = Arc::new(ChangingSection {
        answers: AtomicU64::new(0),
    });
    let server = SiteServer::start(vec![(HOST.to_string(), site as Arc<dyn Site>)])
        .await
        .unwrap();
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = JobFile::new("crash")
        .seed(format!("http://{HOST}:{port}/"))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
        .top("mode", "\"continuous\"")
        .set("revisit", "min", "\"1s\"")
        .set("revisit", "max", "\"2s\"")
        .write(tmp.path());
    let state = tmp.path().join("state");
    let csv_gets = |server: &SiteServer| {
        server
            .log()
            .iter()
            .filter(|r| r.path_and_query.ends_with(".csv") && r.method == axum::http::Method::GET)
            .count()
    };

    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    for kill in 0..10 {
        if kill % 2 == 0 {
            // Past the first fetch of the ten files, into the revisits.
            let n = rng.random_range(1..=16u64);
            let mut c = command(&job, &state, port);
            c.env(forager::crashpoint::ENV, format!("target-saved:{n}"))
                .kill_on_drop(true);
            // A continuous job never ends by itself: the harness's deadline
            // guards against a crash point that never comes.
            let status = bin::status(&mut c).await;
            assert_eq!(status.signal(), Some(9), "kill {kill}: {status}");
        } else {
            let more = rng.random_range(3..15usize);
            let since = csv_gets(&server);
            let mut child = bin::spawn(&mut command(&job, &state, port));
            if bin::until(&mut child, || csv_gets(&server) >= since + more).await {
                panic!("kill {kill}: the crawl ended");
            }
            bin::stop(&mut child, libc::SIGKILL).await;
        }
    }
    // A last run, stopped the way a user stops it once it has revisited every file again.
    let since = csv_gets(&server);
    let mut child = bin::spawn(&mut command(&job, &state, port));
    if bin::until(&mut child, || csv_gets(&server) >= since + 12).await {
        panic!("the last run ended by itself");
    }
    let status = bin::stop(&mut child, libc::SIGTERM).await;
    assert!(status.success(), "{status}");

    let dir = state.join("targets/crash");
    let rows = rows(&dir);
    let orphans = orphan_files(&dir, &rows);
    eprintln!(
        "continuous, 10 kills on changing content: {} rows, {} orphan files",
        rows.len(),
        orphans.len()
    );
    assert!(orphans.is_empty(), "orphan target files: {orphans:?}");
    assert_rows_sound(&dir, &rows);
    // Each file was first saved once; every URL has its row.
    let mut new_rows = BTreeMap::new();
    for (url, _, _, change) in &rows {
        if change.as_deref() == Some("new") {
            *new_rows.entry(url.clone()).or_insert(0) += 1;
        }
    }
    assert_eq!(new_rows.len(), 10, "{new_rows:?}");
    assert!(new_rows.values().all(|n| *n == 1), "{new_rows:?}");
    assert!(rows.len() > 10, "no revisit saved a changed file: {rows:?}");
    let _ = server.shutdown().await;
}

/// A first run killed before its first checkpoint leaves no stored state:
/// the files it named are still found and removed at the next start, but a
/// file written before the store existed (a harvest whose store and
/// manifest were both deleted by hand) is not taken for one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_run_killed_before_its_first_checkpoint_leaves_no_orphan_file() {
    use std::os::unix::process::ExitStatusExt;
    let (server, start) = serve_changing(7).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = job(tmp.path(), port, &start);
    let state = tmp.path().join("state");
    let dir = state.join("targets/crash");

    // An old harvest's file, from before this state folder's store.
    std::fs::create_dir_all(&dir).unwrap();
    let old = format!("{}.csv", "ab".repeat(32));
    let file = std::fs::File::create(dir.join(&old)).unwrap();
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(86_400);
    file.set_modified(long_ago).unwrap();
    drop(file);

    let mut first = Crawl::new(&job, &state)
        .allow_private()
        .resolve(HOST, port)
        .checkpoint_interval("1h")
        .command();
    first
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env(forager::crashpoint::ENV, "target-saved:5");
    let status = bin::status(&mut first).await;
    assert_eq!(status.signal(), Some(9), "{status}");
    {
        let store = forager::store::Store::open(&state, 1 << 20).unwrap();
        assert!(
            store.job_record("crash").unwrap().is_none(),
            "the kill came after a checkpoint"
        );
    }
    let named_by_the_killed_run = rows(&dir).len();
    assert_eq!(named_by_the_killed_run, 0);
    let before: Vec<String> = orphan_files(&dir, &[]);
    assert!(before.len() >= 6, "{before:?}");

    assert!(bin::status(&mut command(&job, &state, port))
        .await
        .success());
    let rows = rows(&dir);
    let orphans = orphan_files(&dir, &rows);
    assert_eq!(orphans, vec![old], "only the old harvest's file has no row");
    assert_rows_sound(&dir, &rows);
    let _ = server.shutdown().await;
}
