//! One job across many hosts, through the real binary: several requests in
//! flight, never two on one host, never two starts on one host closer than
//! the delay — all read from the loopback server's own log, not a clock.
//! The rate over 1 000 hosts is a benchmark, not a test:
//! `forager bench --site web:1000 --strategies bfs` (README, *Many hosts in one job*).

use crate::harness::bin;
use crate::harness::{manifest_by_final_url, Crawl, JobFile};
use forager_bench::multihost::figures::politeness;
use forager_bench::sites::server::{min_start_gap, RequestRecord, SiteServer};
use forager_bench::sites::web::Web;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const DELAY: Duration = Duration::from_millis(200);

fn job(strategy: &str) -> JobFile {
    JobFile::new(&format!("web-{strategy}"))
        .seed(format!("http://{}/", Web::host_name(0)))
        .scope("any")
        .strategy(strategy)
        .delay("200ms")
        .no_early_stop()
        .set("politeness", "per", "\"host\"")
        .set("politeness", "max_in_flight", 8)
}

/// `host/path` of every row of a job's manifest.
fn harvested(state: &Path, job: &str) -> BTreeSet<String> {
    manifest_by_final_url(&state.join("targets").join(job))
        .into_keys()
        .map(|u| u.trim_start_matches("http://").to_string())
        .collect()
}

fn assert_polite(server: &SiteServer, web: &Web, log: &[RequestRecord]) {
    for i in 0..web.hosts {
        let host = Web::host_name(i);
        assert!(
            server.max_in_flight(&host) <= 1,
            "{host}: {} requests in flight at once",
            server.max_in_flight(&host)
        );
        if let Some(gap) = min_start_gap(log, &host) {
            assert!(gap >= DELAY, "{host}: two requests {gap:?} apart");
        }
    }
}

async fn harvests_every_host_politely(strategy: &str) {
    let web = Web::new(20).with_latency(Duration::from_millis(30));
    let server = crate::harness::sites::serve(web.sites()).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(strategy).write(dir.path());
    let state = dir.path().join("state");
    let out = Crawl::loopback(&job, &state)
        .resolve_all((0..web.hosts).map(Web::host_name), server.port())
        .output()
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = server.log();
    let expected: BTreeSet<String> = web.targets().into_iter().collect();
    assert_eq!(harvested(&state, &format!("web-{strategy}")), expected);
    assert_polite(&server, &web, &log);
    // A sequential engine never has two requests at the server at once.
    let most = politeness(&log).most_at_once;
    assert!(most >= 2, "{strategy}: at most {most} request in flight");
    assert!(
        most <= 8,
        "{strategy}: {most} in flight, over max_in_flight"
    );
    let _ = server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bfs_crawls_many_hosts_at_once_and_politely() {
    harvests_every_host_politely("bfs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sb_crawls_many_hosts_at_once_and_politely() {
    harvests_every_host_politely("sb").await;
}

/// Stops at any moment of a multi-host crawl (SIGINT, then SIGKILL) lose no
/// link in flight and save no target twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_and_kills_mid_crawl_lose_nothing() {
    let web = Web::new(12).with_latency(Duration::from_millis(20));
    let server = crate::harness::sites::serve(web.sites()).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job("sb").write(dir.path());
    let state = dir.path().join("state");
    let run = Crawl::loopback(&job, &state)
        .resolve_all((0..web.hosts).map(Web::host_name), server.port())
        .checkpoint_interval("100ms");
    // Each run is polite on its own (a new process knows nothing of the
    // previous one's last request to a host), so each log is checked apart.
    for round in 0..6u64 {
        server.clear_log();
        let mut child = bin::spawn(&mut run.command());
        // Stop once the server has answered a few more requests each round
        // (the log starts empty every round): at start-up, early, mid-crawl.
        let requests = 8 + 6 * round as usize;
        bin::until(&mut child, || server.log().len() >= requests).await;
        let signal = if round % 2 == 0 {
            libc::SIGINT
        } else {
            libc::SIGKILL
        };
        bin::stop(&mut child, signal).await;
        assert_polite(&server, &web, &server.log());
    }
    server.clear_log();
    let out = run.output().await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: BTreeSet<String> = web.targets().into_iter().collect();
    // manifest_by_final_url panics on a duplicate row.
    assert_eq!(harvested(&state, "web-sb"), expected);
    assert_polite(&server, &web, &server.log());
    let _ = server.shutdown().await;
}

/// A seed added to the file of a finished job is crawled on the next run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_added_to_a_finished_job_are_crawled() {
    let web = Web::new(6);
    let server = crate::harness::sites::serve(web.sites()).await;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let first = JobFile::new("grow")
        .seed(format!("http://{}/", Web::host_name(0)))
        .scope("host")
        .delay("0s")
        .no_early_stop();
    let run = |job: &Path| {
        Crawl::loopback(job, &state).resolve_all((0..web.hosts).map(Web::host_name), server.port())
    };
    let out = run(&first.write(dir.path())).output().await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let host_files = |i: usize| -> BTreeSet<String> {
        web.targets()
            .into_iter()
            .filter(|t| t.starts_with(&Web::host_name(i)))
            .collect()
    };
    assert_eq!(harvested(&state, "grow"), host_files(0));

    let grown = first.seed(format!("http://{}/", Web::host_name(3)));
    let out = run(&grown.write(dir.path())).output().await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let both: BTreeSet<String> = host_files(0).union(&host_files(3)).cloned().collect();
    assert_eq!(harvested(&state, "grow"), both);
    let _ = server.shutdown().await;
}

/// sb's warm-up asks a HEAD of every link of the seed page. Those HEADs are
/// requests on their own hosts' lanes, not one long step: while the seed
/// host answers its HEADs one delay apart, other hosts are served. (Before,
/// the seed's step asked them one by one, and no request reached another
/// host until the seed host's last HEAD: 1 request/s over 1 000 hosts.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sb_warm_up_heads_do_not_hold_the_other_hosts() {
    let mut web = Web::new(4);
    web.pages_per_host = 30;
    let server = crate::harness::sites::serve(web.sites()).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job("sb").delay("20ms").write(dir.path());
    let state = dir.path().join("state");
    let out = Crawl::loopback(&job, &state)
        .resolve_all((0..web.hosts).map(Web::host_name), server.port())
        .output()
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut log = server.log();
    log.sort_by_key(|r| r.at);
    let seed_host = Web::host_name(0);
    let seed_page_heads: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.host == seed_host && r.method == "HEAD" && r.path_and_query.starts_with("/p/")
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        seed_page_heads.len(),
        web.pages_per_host,
        "sb warms up with a HEAD for each page the seed links to"
    );
    let last_seed_head = seed_page_heads[seed_page_heads.len() - 1];
    let first_elsewhere = log
        .iter()
        .position(|r| r.host != seed_host && r.path_and_query != "/robots.txt")
        .expect("requests to other hosts");
    assert!(
        first_elsewhere < last_seed_head,
        "the first request to another host (#{first_elsewhere}) waited for the seed host's \
         last warm-up HEAD (#{last_seed_head})"
    );
    // Served meanwhile: more than the few HEADs of the seed's cross-host links.
    let elsewhere_during = log[..last_seed_head]
        .iter()
        .filter(|r| r.host != seed_host && r.path_and_query != "/robots.txt")
        .count();
    assert!(
        elsewhere_during > 2,
        "{elsewhere_during} requests to other hosts during the seed host's warm-up HEADs"
    );
    let expected: BTreeSet<String> = web.targets().into_iter().collect();
    assert_eq!(harvested(&state, "web-sb"), expected);
    for i in 0..web.hosts {
        let host = Web::host_name(i);
        assert!(server.max_in_flight(&host) <= 1, "{host}: two in flight");
        if let Some(gap) = min_start_gap(&log, &host) {
            assert!(gap >= Duration::from_millis(20), "{host}: {gap:?} apart");
        }
    }
    let _ = server.shutdown().await;
}
