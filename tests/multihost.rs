//! One job across many hosts, through the real binary: several requests in
//! flight, never two on one host, never two starts on one host closer than
//! the delay — all read from the loopback server's own log, not a clock.

mod common;

use common::{manifest_by_final_url, Crawl, JobFile};
use forager::sites::server::{min_start_gap, RequestRecord, SiteServer};
use forager::sites::web::Web;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const DELAY: Duration = Duration::from_millis(200);

async fn serve(web: &Web) -> SiteServer {
    SiteServer::start(web.sites()).await.expect("start the web")
}

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

fn crawl(job: &Path, state: &Path, web: &Web, port: u16) -> Crawl {
    let mut c = Crawl::new(job, state).allow_private();
    for i in 0..web.hosts {
        c = c.resolve(&Web::host_name(i), port);
    }
    c
}

/// `host/path` of every row of a job's manifest.
fn harvested(state: &Path, job: &str) -> BTreeSet<String> {
    manifest_by_final_url(&state.join("targets").join(job))
        .into_keys()
        .map(|u| u.trim_start_matches("http://").to_string())
        .collect()
}

/// The most requests the server was answering at one moment, all hosts together.
fn most_at_once(log: &[RequestRecord]) -> usize {
    let mut edges: Vec<(std::time::Instant, i32)> = Vec::new();
    for r in log {
        edges.push((r.at, 1));
        edges.push((r.done.unwrap_or(r.at), -1));
    }
    // At equal instants an end comes before a start: touching is not overlapping.
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
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
    let server = serve(&web).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job(strategy).write(dir.path());
    let state = dir.path().join("state");
    let out = crawl(&job, &state, &web, server.port()).output().await;
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
    let most = most_at_once(&log);
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
    let server = serve(&web).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job("sb").write(dir.path());
    let state = dir.path().join("state");
    let run = crawl(&job, &state, &web, server.port()).checkpoint_interval("100ms");
    // Each run is polite on its own (a new process knows nothing of the
    // previous one's last request to a host), so each log is checked apart.
    for round in 0..6u64 {
        server.clear_log();
        let mut child = run.command().spawn().expect("spawn forager");
        tokio::time::sleep(Duration::from_millis(300 + 150 * round)).await;
        let pid = child.id().expect("running") as i32;
        let signal = if round % 2 == 0 {
            libc::SIGINT
        } else {
            libc::SIGKILL
        };
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(pid, signal) };
        let _ = child.wait().await;
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
    let server = serve(&web).await;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let first = JobFile::new("grow")
        .seed(format!("http://{}/", Web::host_name(0)))
        .scope("host")
        .delay("0s")
        .no_early_stop();
    let run = |job: &Path| crawl(job, &state, &web, server.port());
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

/// The measurement of the multi-host engine (not in CI: it takes a minute):
/// one job over a web of `FORAGER_WEB_HOSTS` hosts (default 1 000) at
/// `delay = "1s"` for `FORAGER_WEB_SECS` seconds (default 60). It prints the
/// request rate over the second half of the run, the most requests in flight
/// on one host, the smallest gap between two starts on one host (all from
/// the server's log), the crawler's CPU per request and its peak RSS.
///
/// `FORAGER_WEB_SECS=60 cargo test --release --test multihost -- --ignored --nocapture measure`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_a_thousand_hosts() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let hosts = env("FORAGER_WEB_HOSTS", 1000) as usize;
    let secs = env("FORAGER_WEB_SECS", 60);
    let mut web = Web::new(hosts);
    web.pages_per_host = 200;
    let server = serve(&web).await;
    let dir = tempfile::tempdir().unwrap();
    let job = JobFile::new("thousand")
        .seed(format!("http://{}/", Web::host_name(0)))
        .scope("any")
        .strategy("bfs")
        .delay("1s")
        .no_early_stop()
        .set("politeness", "per", "\"host\"")
        .write(dir.path());
    let run = crawl(&job, &dir.path().join("state"), &web, server.port());
    let mut child = run.command().spawn().expect("spawn forager");
    let pid = child.id().expect("running");
    let started = std::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(secs / 2)).await;
    let (half_at, half_cpu, half_log) = (
        std::time::Instant::now(),
        common::procfs::cpu_time(pid),
        server.log().len(),
    );
    tokio::time::sleep(Duration::from_secs(secs - secs / 2)).await;
    let (end_at, end_cpu, log) = (
        std::time::Instant::now(),
        common::procfs::cpu_time(pid),
        server.log(),
    );
    let rss = common::procfs::vm_hwm_kib(pid);
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let _ = child.wait().await;
    let window = end_at - half_at;
    let requests = log.len() - half_log;
    let rate = requests as f64 / window.as_secs_f64();
    let cpu = end_cpu.zip(half_cpu).map(|(e, h)| e.saturating_sub(h));
    let most_on_a_host = (0..hosts)
        .map(|i| server.max_in_flight(&Web::host_name(i)))
        .max()
        .unwrap_or(0);
    let smallest_gap = (0..hosts)
        .filter_map(|i| min_start_gap(&log, &Web::host_name(i)))
        .min();
    let cpu_per_request = cpu.map(|c| c / requests.max(1) as u32);
    println!(
        "{hosts} hosts, delay 1 s, {:.0} s run: {requests} requests in the last {:.1} s = {rate:.1} req/s; \
         most in flight on one host {most_on_a_host}; smallest gap on one host {smallest_gap:?}; \
         CPU per request {cpu_per_request:?}; peak RSS {:?} MiB; {} requests in all",
        started.elapsed().as_secs_f64(),
        window.as_secs_f64(),
        rss.map(|k| k / 1024),
        log.len()
    );
    assert!(most_on_a_host <= 1);
    assert!(smallest_gap.is_none_or(|g| g >= Duration::from_secs(1)));
    let _ = server.shutdown().await;
}
