//! The changing site of the revisit benchmark, crawled once by the real
//! binary (a one-shot job, which needs no continuous engine): every file of
//! its history is harvested, the version downloaded of each revised file is
//! its current one, and the bench's figures, read from the server's log and
//! the job's manifest, agree with the crawler's own account.

use crate::harness::{Crawl, JobFile};
use forager_bench::changing::{
    crawler_requests, figures, read_manifest, Policy, SimRequest, Truth, Window,
};
use forager_bench::sites::changing::{ChangingParams, ChangingSite, SimClock, SimTime, DAY, HOST};
use forager_bench::sites::server::SiteServer;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn a_one_shot_crawl_harvests_the_whole_history_and_the_figures_agree() {
    let dir = tempfile::tempdir().unwrap();
    // No publication after time 0 (horizon 0), so the site holds still
    // whatever the crawl's speed: the ground truth is its history.
    let params = ChangingParams::new(3, 1).with_horizon_days(0);
    let clock = SimClock::starting_now(Duration::from_secs(24));
    let site = Arc::new(ChangingSite::new(params, clock));
    let server = SiteServer::start(site.sites()).await.unwrap();
    let job = JobFile::new("once")
        .seed(format!("http://{HOST}/"))
        .delay("5ms")
        .no_early_stop()
        .set("budget", "requests", 0)
        // Only the site's own URLs: no well-known catalog requests.
        .set("targets", "catalogs", false)
        .write(dir.path());
    let state = dir.path().join("state");
    let out = Crawl::new(&job, &state)
        .allow_private()
        .resolve(HOST, server.port())
        .output()
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = SimRequest::of_log(&server.log(), &clock);
    let manifest = read_manifest(&state.join("targets/once/manifest.jsonl")).unwrap();
    let publications = site.publications();
    let revisions = site.revisions();
    let is_file = |p: &str| site.item(p).is_some();
    let truth = Truth {
        publications: &publications,
        revisions: &revisions,
        is_file: &is_file,
    };
    let history = Window {
        from: SimTime(-i64::from(params.history_days) * DAY),
        to: SimTime(1),
    };
    let f = figures(
        Policy::Fixed,
        1,
        &truth,
        &log,
        &manifest,
        history,
        crawler_requests(&stdout).map(|(n, _)| n),
    );
    assert_eq!(f.published, site.items().count());
    assert!(f.published > 50, "{f:?}");
    assert_eq!(f.found, f.published, "{f:?}");
    assert_eq!(manifest.len(), f.published);
    assert_eq!(f.unpublished, 0);
    // One download per file, after its last revision: exactly one revision
    // of each revised file (its last) is caught.
    let revised = site.items().filter(|i| !i.revisions.is_empty()).count();
    assert!(revised > 0);
    assert_eq!(f.revisions, revisions.len());
    assert_eq!(f.revisions_caught, revised, "{f:?}");
    assert_eq!(
        f.crawler_requests,
        Some(f.server_requests as u64),
        "{stdout}"
    );
    // The whole site was walked: every URL it has, once or more, but the
    // logo, whose extension the job's default `block_ext` skips.
    let distinct: std::collections::HashSet<&str> = log.iter().map(|r| r.path.as_str()).collect();
    assert!(!distinct.contains("/img/logo.png"));
    assert_eq!(distinct.len() + 1, site.urls_at(SimTime(0)), "{distinct:?}");
    server.shutdown().await.unwrap();
}
