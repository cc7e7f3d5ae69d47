//! Continuous jobs (`mode = "continuous"`): revisits are conditional, an
//! unchanged site costs no disk and little state, a file changed in place
//! gets a new row (the old file stays), a target added to a listing page is
//! found on a revisit, and a kill -9 loses nothing of the schedule. Every
//! assertion is on the loopback server's log and on what is on disk.

use forager::engine::{Engine, EngineConfig, NoObserver, Runner};
use forager::fetch::FetchConfig;
use forager::output::warc::read;
use forager_bench::sites::server::{RequestRecord, Site, SiteRequest, SiteResponse, SiteServer};
use forager_core::config::{JobMode, JobSpec, RevisitSpec};
use forager_core::revisit::{RevisitPolicy, ScheduleConfig};
use forager_core::strategy::StrategyKind;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

use crate::harness::{Crawl, JobFile};

const HOST: &str = "changing.test";

/// One resource of [`Mutable`].
#[derive(Clone)]
struct Resource {
    content_type: &'static str,
    body: String,
    /// Send a new ETag with every answer (a server that cannot tell): the
    /// body then comes back whole, and only its digest says it is the same.
    volatile_etag: bool,
}

/// A site whose pages and files a test changes while it is served.
#[derive(Default)]
struct Mutable {
    resources: Mutex<BTreeMap<String, Resource>>,
    answers: Mutex<u64>,
}

impl Mutable {
    fn put(&self, path: &str, content_type: &'static str, body: impl Into<String>) {
        self.resources.lock().unwrap().insert(
            path.to_string(),
            Resource {
                content_type,
                body: body.into(),
                volatile_etag: false,
            },
        );
    }

    fn page(&self, path: &str, links: &[String]) {
        let items: String = links
            .iter()
            .map(|l| format!("<li><a href=\"{l}\">{l}</a></li>"))
            .collect();
        self.put(
            path,
            "text/html",
            format!("<html><body><ul>{items}</ul></body></html>"),
        );
    }

    fn paths(&self) -> Vec<String> {
        self.resources.lock().unwrap().keys().cloned().collect()
    }
}

impl Site for Mutable {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let Some(r) = self.resources.lock().unwrap().get(&req.path).cloned() else {
            return SiteResponse::not_found();
        };
        let resp = SiteResponse::ok(r.content_type, r.body);
        if !r.volatile_etag {
            return resp;
        }
        let mut n = self.answers.lock().unwrap();
        *n += 1;
        let etag = format!("\"v{n}\"");
        resp.with_header(
            axum::http::header::ETAG,
            axum::http::HeaderValue::from_str(&etag).unwrap(),
        )
    }
}

fn engine(state: &Path, addr: SocketAddr) -> Engine {
    Engine::open(EngineConfig {
        state_dir: state.to_path_buf(),
        fetch: FetchConfig {
            allow_private: true,
            resolve: vec![(HOST.to_string(), addr)],
            ..FetchConfig::default()
        },
        checkpoint_interval: Duration::from_millis(50),
        cache_bytes: 4 << 20,
    })
    .unwrap()
}

fn continuous_spec(name: &str, port: u16, policy: RevisitPolicy) -> JobSpec {
    let seed = url::Url::parse(&format!("http://{HOST}:{port}/")).unwrap();
    let mut spec = JobSpec::new(name, vec![seed]);
    spec.strategy = StrategyKind::Bfs;
    spec.politeness.delay = Duration::ZERO;
    spec.budget.early_stop = false;
    spec.mode = JobMode::Continuous(RevisitSpec {
        schedule: ScheduleConfig::new(Duration::from_secs(1), Duration::from_secs(4)).unwrap(),
        policy,
    });
    spec
}

/// Requests for site paths (robots.txt left out), in order.
fn site_log(server: &SiteServer) -> Vec<RequestRecord> {
    server
        .log()
        .into_iter()
        .filter(|r| r.path_and_query != "/robots.txt")
        .collect()
}

fn counts(log: &[RequestRecord]) -> HashMap<String, usize> {
    let mut c = HashMap::new();
    for r in log {
        *c.entry(r.path_and_query.clone()).or_insert(0) += 1;
    }
    c
}

/// Poll the server's log until `done` says so; a guard against a hang, not a timing.
async fn wait_for(server: &SiteServer, what: &str, done: impl Fn(&[RequestRecord]) -> bool) {
    for _ in 0..6000 {
        if done(&site_log(server)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never happened: {what}");
}

/// Manifest rows as JSON values, in order.
fn manifest(state: &Path, job: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(state.join("targets").join(job).join("manifest.jsonl"))
        .unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Target files in a job's folder (its manifest, log and WARC folder left out).
fn target_files(state: &Path, job: &str) -> usize {
    std::fs::read_dir(state.join("targets").join(job))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            e.path().is_file()
                && !name.ends_with(".jsonl")
                && !name.ends_with(".log")
                && !name.ends_with(".gz")
        })
        .count()
}

/// A site of 1 000 pages and 20 files: a home page, 10 sections, 100 pages
/// and 2 CSV files per section.
fn thousand_pages(site: &Mutable) -> usize {
    let sections: Vec<String> = (0..10).map(|s| format!("/s{s}/")).collect();
    site.page("/", &sections);
    for s in 0..10 {
        let mut links: Vec<String> = (0..98).map(|p| format!("/s{s}/p{p}.html")).collect();
        links.extend((0..2).map(|f| format!("/s{s}/f{f}.csv")));
        site.page(&format!("/s{s}/"), &links);
        for p in 0..98 {
            site.page(&format!("/s{s}/p{p}.html"), &[format!("/s{s}/")]);
        }
        for f in 0..2 {
            site.put(
                &format!("/s{s}/f{f}.csv"),
                "text/csv",
                format!("a,b\n{s},{f}\n"),
            );
        }
    }
    site.paths().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_site_is_revisited_conditionally_at_no_disk_cost() {
    let site = Arc::new(Mutable::default());
    let urls = thousand_pages(&site);
    assert_eq!(urls, 1 + 10 + 980 + 20);
    let server = SiteServer::start(vec![(HOST.to_string(), site.clone() as Arc<dyn Site>)])
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let spec = continuous_spec("unchanged", server.port(), RevisitPolicy::Learned);
    let engine = engine(state.path(), server.addr());
    let (tx, rx) = watch::channel(false);
    let run = {
        let (engine, spec) = (engine.clone(), spec.clone());
        tokio::spawn(async move {
            let mut obs = NoObserver;
            Runner::new(&engine, &spec, &mut obs).unwrap().run(rx).await
        })
    };
    // Every URL fetched, then revisited once.
    wait_for(&server, "every URL revisited", |log| {
        let c = counts(log);
        c.len() == urls && c.values().all(|n| *n >= 2)
    })
    .await;
    tx.send(true).unwrap();
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.stop, None, "a continuous job never finishes");

    let log = site_log(&server);
    let mut first = HashMap::new();
    let (mut revisits, mut not_modified) = (0, 0);
    for r in &log {
        if first.insert(r.path_and_query.clone(), ()).is_none() {
            assert!(
                r.if_none_match.is_none(),
                "first fetch of {} was conditional",
                r.path_and_query
            );
            continue;
        }
        revisits += 1;
        assert!(
            r.if_none_match.is_some(),
            "revisit of {} without If-None-Match",
            r.path_and_query
        );
        not_modified += usize::from(r.status == 304);
    }
    assert!(revisits >= urls, "{revisits} revisits");
    assert_eq!(
        not_modified, revisits,
        "an unchanged site answers 304 every time"
    );

    // No target file and no manifest row beyond the first pass's 20.
    assert_eq!(target_files(state.path(), "unchanged"), 20);
    let rows = manifest(state.path(), "unchanged");
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().all(|r| r["change"] == "new"), "{:?}", rows[0]);

    // The state a continuous job adds: its revisit rows (key: job name +
    // URL hash) and its state row, as stored.
    drop(engine);
    let store = forager::store::Store::open(state.path(), 1 << 20).unwrap();
    let loaded = store.load_job("unchanged").unwrap();
    assert_eq!(loaded.revisit.len(), urls, "every fetched URL has its row");
    let key = "unchanged".len() as u64 + 8;
    let rows_bytes: u64 = loaded
        .revisit
        .iter()
        .map(|(_, v)| key + v.len() as u64)
        .sum::<u64>()
        + loaded.revisit_state.as_ref().map_or(0, |s| s.len() as u64);
    let per_page = rows_bytes / urls as u64;
    eprintln!(
        "revisit state: {rows_bytes} bytes for {urls} URLs = {per_page} B/URL; \
         {revisits} revisits, {not_modified} answered 304"
    );
    assert!(per_page <= 1024, "{per_page} B of revisit state per page");
    let _ = server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_files_get_new_rows_and_new_targets_are_found_on_revisits() {
    let site = Arc::new(Mutable::default());
    site.page("/", &["/list.html".into()]);
    site.page("/list.html", &["/a.csv".into(), "/same.csv".into()]);
    site.put("/a.csv", "text/csv", "x,y\n1,2\n");
    site.put("/same.csv", "text/csv", "same\n");
    site.resources
        .lock()
        .unwrap()
        .get_mut("/same.csv")
        .unwrap()
        .volatile_etag = true;
    let server = SiteServer::start(vec![(HOST.to_string(), site.clone() as Arc<dyn Site>)])
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut spec = continuous_spec("changing", server.port(), RevisitPolicy::Adaptive);
    spec.output.warc = true;
    let engine = engine(state.path(), server.addr());
    let (tx, rx) = watch::channel(false);
    let run = {
        let (engine, spec) = (engine.clone(), spec.clone());
        tokio::spawn(async move {
            let mut obs = NoObserver;
            Runner::new(&engine, &spec, &mut obs).unwrap().run(rx).await
        })
    };
    // The first pass and one revisit of each file: a 304, and a whole body
    // that only its digest says is the same.
    wait_for(&server, "a.csv answered 304, same.csv refetched", |log| {
        let c = counts(log);
        log.iter()
            .any(|r| r.path_and_query == "/a.csv" && r.status == 304)
            && c.get("/same.csv").copied().unwrap_or(0) >= 2
    })
    .await;
    assert_eq!(manifest(state.path(), "changing").len(), 2);
    // Changed in place, and a new file on the listing page.
    site.put("/a.csv", "text/csv", "x,y\n1,3\n");
    site.put("/b.csv", "text/csv", "new,file\n");
    site.page(
        "/list.html",
        &["/a.csv".into(), "/same.csv".into(), "/b.csv".into()],
    );
    wait_for(&server, "b.csv found and a.csv refetched", |log| {
        let a_again = log
            .iter()
            .filter(|r| r.path_and_query == "/a.csv" && r.status == 200)
            .count()
            >= 2;
        let b_found = log
            .iter()
            .any(|r| r.path_and_query == "/b.csv" && r.status == 200);
        b_found && a_again
    })
    .await;
    // Until the checkpoint that carries their rows commits, then stop.
    for _ in 0..6000 {
        if manifest(state.path(), "changing").len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tx.send(true).unwrap();
    run.await.unwrap().unwrap();

    let rows = manifest(state.path(), "changing");
    let summary: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            let url = r["final_url"].as_str().unwrap();
            let path = url::Url::parse(url).unwrap().path().to_string();
            (path, r["change"].as_str().unwrap().to_string())
        })
        .collect();
    let count = |path: &str, change: &str| {
        summary
            .iter()
            .filter(|(p, c)| p == path && c == change)
            .count()
    };
    assert_eq!(count("/a.csv", "new"), 1, "{summary:?}");
    assert_eq!(count("/a.csv", "changed"), 1, "{summary:?}");
    assert_eq!(count("/b.csv", "new"), 1, "{summary:?}");
    assert_eq!(count("/same.csv", "new"), 1, "{summary:?}");
    assert_eq!(rows.len(), 4, "{summary:?}");
    // Both versions of a.csv are on disk, each under its own name.
    let dir = state.path().join("targets").join("changing");
    let a_files: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["final_url"].as_str().unwrap().ends_with("/a.csv"))
        .collect();
    assert_ne!(a_files[0]["file"], a_files[1]["file"]);
    for r in &a_files {
        let body = std::fs::read(dir.join(r["file"].as_str().unwrap())).unwrap();
        assert_eq!(body.len() as u64, r["bytes"].as_u64().unwrap());
    }
    assert_eq!(target_files(state.path(), "changing"), 4);

    // The WARC: both revisit profiles, naming the earlier capture.
    let mut profiles = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("warc")).unwrap() {
        let path = entry.unwrap().path();
        // The CDXJ index beside each WARC file is text.
        if path.extension().is_some_and(|e| e == "cdxj") {
            continue;
        }
        for rec in read::read_all(&path).unwrap() {
            if rec.kind() == "revisit" {
                let profile = rec.field("WARC-Profile").unwrap().to_string();
                assert!(rec.field("WARC-Refers-To-Target-URI").is_some());
                assert!(rec.field("WARC-Refers-To-Date").is_some());
                if profile.ends_with("identical-payload-digest") {
                    assert!(rec
                        .field("WARC-Payload-Digest")
                        .unwrap()
                        .starts_with("sha1:"));
                }
                *profiles.entry(profile).or_insert(0) += 1;
            }
        }
    }
    assert!(
        profiles.keys().any(|p| p.ends_with("/server-not-modified")),
        "{profiles:?}"
    );
    assert!(
        profiles
            .keys()
            .any(|p| p.ends_with("/identical-payload-digest")),
        "{profiles:?}"
    );
    let _ = server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_continuous_job_resumes_its_schedule() {
    let site = Arc::new(Mutable::default());
    let sections: Vec<String> = (0..5).map(|s| format!("/s{s}/")).collect();
    site.page("/", &sections);
    for s in 0..5 {
        let mut links: Vec<String> = (0..30).map(|p| format!("/s{s}/p{p}.html")).collect();
        links.push(format!("/s{s}/data.csv"));
        site.page(&format!("/s{s}/"), &links);
        for p in 0..30 {
            site.page(&format!("/s{s}/p{p}.html"), &[]);
        }
        site.put(&format!("/s{s}/data.csv"), "text/csv", format!("s,{s}\n"));
    }
    let urls = site.paths().len();
    let server = SiteServer::start(vec![(HOST.to_string(), site.clone() as Arc<dyn Site>)])
        .await
        .unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let job = JobFile::new("killed")
        .seed(format!("http://{HOST}:{}/", server.port()))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
        .top("mode", "\"continuous\"")
        .set("revisit", "min", "\"1s\"")
        .set("revisit", "max", "\"3s\"")
        .write(jobs.path());
    let crawl = Crawl::new(&job, state.path())
        .allow_private()
        .resolve(HOST, server.port())
        .checkpoint_interval("50ms");

    let mut before_kill = 0;
    for round in 0..3 {
        let mut child = crate::harness::bin::spawn(&mut crawl.command());
        // Well into the revisits: every URL fetched twice since this run began.
        let seen_before = before_kill;
        wait_for(&server, "every URL fetched twice in this run", |log| {
            let c = counts(&log[seen_before..]);
            c.len() == urls && c.values().all(|n| *n >= 2)
        })
        .await;
        crate::harness::bin::stop(&mut child, libc::SIGKILL).await;
        let log = site_log(&server);
        if round > 0 {
            // After a kill, no URL was fetched without its validators: the
            // schedule and the validators of every URL survived.
            for r in &log[before_kill..] {
                assert!(
                    r.if_none_match.is_some(),
                    "round {round}: {} fetched unconditionally after the kill",
                    r.path_and_query
                );
            }
        }
        before_kill = log.len();
    }
    // Nothing twice: one row and one file per target, whatever the kills.
    let rows = manifest(state.path(), "killed");
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert_eq!(target_files(state.path(), "killed"), 5);
    let _ = server.shutdown().await;
}
