//! A passing fault never ends a job: links whose fetch failed for a reason
//! that may pass (503, 429, refused connections) come back after the host's
//! back-off, through the real binary; an origin that never answers ends the
//! job as `unreachable` with a non-zero exit.

use crate::harness::{manifest_by_final_url, Crawl, JobFile};
use forager_bench::sites::server::{Site, SiteRequest, SiteResponse, SiteServer};
use forager_bench::sites::synthetic::{Preset, SyntheticSite};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const HOST: &str = "flaky.test";

/// How a [`Flaky`] site fails.
enum Fault {
    /// The first `tries` requests of each of the first `paths` paths asked
    /// for (robots.txt and the seed among them) get 503 with `Retry-After: 1`.
    FirstTries { tries: u32, paths: usize },
    /// Every `n`-th of the first `until` requests gets 429 with `Retry-After: 1`
    /// (bounded: each costs the crawl a second).
    EveryNth { n: u64, until: u64 },
}

/// A synthetic site behind a failing front.
struct Flaky {
    site: SyntheticSite,
    fault: Fault,
    tries: Mutex<HashMap<String, u32>>,
    requests: AtomicU64,
}

impl Site for Flaky {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let n = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let (fail, status) = match self.fault {
            Fault::FirstTries { tries: k, paths } => {
                let mut tries = self.tries.lock().unwrap_or_else(|p| p.into_inner());
                let path = req.path_and_query();
                let failing = tries.len() < paths || tries.contains_key(&path);
                if failing {
                    let t = tries.entry(path).or_insert(0);
                    *t += 1;
                    (*t <= k, 503)
                } else {
                    (false, 503)
                }
            }
            Fault::EveryNth { n: k, until } => (n <= until && n % k == 0, 429),
        };
        if fail {
            let status = axum::http::StatusCode::from_u16(status).expect("status");
            return SiteResponse::error(status).with_header(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        self.site.respond(req)
    }
}

fn small_site() -> SyntheticSite {
    SyntheticSite::preset(Preset::Small, 7).expect("small site")
}

async fn serve(site: Arc<dyn Site>) -> SiteServer {
    crate::harness::sites::serve_host(HOST, site).await
}

fn job(name: &str, start: &str) -> JobFile {
    JobFile::new(name)
        .seed(format!("http://{HOST}{start}"))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
}

async fn harvest(site: Arc<dyn Site>, name: &str, dir: &Path) -> (BTreeSet<String>, String) {
    let server = serve(site).await;
    let start = small_site().start_path().to_string();
    let job = job(name, &start).write(dir);
    let state = dir.join(name);
    let stdout = Crawl::new(&job, &state)
        .allow_private()
        .resolve(HOST, server.port())
        .succeed()
        .await;
    let _ = server.shutdown().await;
    (harvested(&state, name), stdout)
}

/// The paths (and queries) of a job's harvested targets.
fn harvested(state: &Path, name: &str) -> BTreeSet<String> {
    manifest_by_final_url(&state.join("targets").join(name))
        .into_keys()
        .map(|u| {
            let u = url::Url::parse(&u).expect("manifest URL");
            format!("{}?{}", u.path(), u.query().unwrap_or(""))
        })
        .collect()
}

async fn nothing_lost_to(fault: Fault) {
    let dir = tempfile::tempdir().unwrap();
    let (expected, _) = harvest(Arc::new(small_site()), "steady", dir.path()).await;
    assert!(!expected.is_empty());
    let flaky = Flaky {
        site: small_site(),
        fault,
        tries: Mutex::new(HashMap::new()),
        requests: AtomicU64::new(0),
    };
    let (got, stdout) = harvest(Arc::new(flaky), "flaky", dir.path()).await;
    assert_eq!(got, expected, "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_answering_503_at_first_is_harvested_whole() {
    nothing_lost_to(Fault::FirstTries {
        tries: 2,
        paths: 25,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_to_one_request_in_seven_loses_nothing() {
    nothing_lost_to(Fault::EveryNth { n: 7, until: 210 }).await;
}

/// A port nobody listens on: every connection to it is refused.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_that_never_answers_ends_unreachable() {
    let dead = crate::harness::sites::DeadPort::new();
    let port = dead.port();
    let dir = tempfile::tempdir().unwrap();
    let job = job("dead", "/")
        .set("limits", "retries", 2)
        .write(dir.path());
    let out = Crawl::new(&job, &dir.path().join("state"))
        .allow_private()
        .resolve(HOST, port)
        .output()
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("unreachable"), "{stdout}");
    assert!(stderr.contains("nothing could be fetched"), "{stderr}");
    // Three tries of the seed (the first and two retries), each stopped at
    // its robots.txt, which nobody answers.
    assert!(stdout.contains("3 robots.txt"), "{stdout}");
}

/// The origin was down for the whole first run; once it is back, running the
/// same job again harvests it whole (its seeds were not used up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_found_unreachable_starts_over_when_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let (expected, _) = harvest(Arc::new(small_site()), "steady", dir.path()).await;
    let start = small_site().start_path().to_string();
    let job = job("again", &start)
        .set("limits", "retries", 1)
        .write(dir.path());
    let state = dir.path().join("again");
    let dead = crate::harness::sites::DeadPort::new();
    let down = Crawl::new(&job, &state)
        .allow_private()
        .resolve(HOST, dead.port())
        .output()
        .await;
    assert!(!down.status.success());
    assert!(String::from_utf8_lossy(&down.stdout).contains("unreachable"));

    let server = serve(Arc::new(small_site())).await;
    let up = Crawl::new(&job, &state)
        .allow_private()
        .resolve(HOST, server.port())
        .output()
        .await;
    let stdout = String::from_utf8_lossy(&up.stdout);
    assert!(up.status.success(), "{stdout}");
    assert!(stdout.contains("frontier empty"), "{stdout}");
    let _ = server.shutdown().await;
    assert_eq!(harvested(&state, "again"), expected);
}
