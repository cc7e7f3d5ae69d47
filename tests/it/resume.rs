//! Stopping a job at arbitrary moments and resuming it loses nothing: the
//! harvest equals an uninterrupted run's (same targets, same bytes), and no
//! target is fetched twice.

use forager::engine::{Engine, EngineConfig, NoObserver, Runner};
use forager::fetch::FetchConfig;
use forager_bench::sites::fixture::{FixtureSite, FIXTURE_HOST, FIXTURE_MAX_BODY, OUTSIDE_HOST};
use forager_bench::sites::server::SiteServer;
use forager_core::config::JobSpec;
use forager_core::strategy::StrategyKind;
use std::collections::BTreeMap;

use crate::harness::manifest_by_final_url;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

fn engine(state: &Path, addr: SocketAddr) -> Engine {
    Engine::open(EngineConfig {
        state_dir: state.to_path_buf(),
        fetch: FetchConfig {
            allow_private: true,
            resolve: vec![
                (FIXTURE_HOST.to_string(), addr),
                (OUTSIDE_HOST.to_string(), addr),
            ],
            ..FetchConfig::default()
        },
        checkpoint_interval: Duration::from_millis(50),
        cache_bytes: 4 << 20,
    })
    .unwrap()
}

fn spec(port: u16, strategy: StrategyKind) -> JobSpec {
    let seed = url::Url::parse(&format!("http://{FIXTURE_HOST}:{port}/")).unwrap();
    let mut spec = JobSpec::new(format!("resume-{}", strategy.name()), vec![seed]);
    spec.strategy = strategy;
    spec.politeness.delay = Duration::ZERO;
    spec.limits.max_body = FIXTURE_MAX_BODY;
    spec
}

/// Final URL → sha256 of every manifest row (no duplicates).
fn manifest(state: &Path, job: &str) -> BTreeMap<String, String> {
    manifest_by_final_url(&state.join("targets").join(job))
}

async fn interrupted_equals_uninterrupted(strategy: StrategyKind) {
    // No Crawl-delay, and each response slowed a little, so stops land mid-step.
    let fixture = FixtureSite::new().with_crawl_delay(None);
    let server = SiteServer::start(fixture.sites()).await.unwrap();
    let spec = spec(server.port(), strategy);

    let whole = tempfile::tempdir().unwrap();
    {
        let engine = engine(whole.path(), server.addr());
        let (_tx, rx) = watch::channel(false);
        let out = Runner::new(&engine, &spec, &mut NoObserver)
            .unwrap()
            .run(rx)
            .await
            .unwrap();
        assert!(out.stop.is_some());
    }
    let expected = manifest(whole.path(), &spec.name);
    assert!(!expected.is_empty());

    let cut = tempfile::tempdir().unwrap();
    let mut interruptions = 0;
    for round in 0..400u64 {
        let engine = engine(cut.path(), server.addr());
        let (tx, rx) = watch::channel(false);
        let mut observer = NoObserver;
        let runner = Runner::new(&engine, &spec, &mut observer).unwrap();
        // Stop once the server has answered a number of this run's requests
        // that grows every fourth round (0, 0, 0, 0, 1, …): at start-up, then
        // mid-crawl, and runs get long enough to finish steps. A count the
        // server saw, not a clock: a whole crawl of the fixture takes ~20 ms,
        // and where a sleep of microseconds lands depends on the machine's load
        // (a schedule of sleeps once left only 4 interruptions in 2 of 6 runs).
        // (Every other round left only 4 interruptions in 1 of 3 idle runs:
        // a stop lets the requests in flight finish, so a run often gets
        // further than its count.)
        let stop_after = server.log().len() + round as usize / 4;
        let ended = AtomicBool::new(false);
        let run = async {
            let out = runner.run(rx).await;
            ended.store(true, Ordering::SeqCst);
            out
        };
        let stopper = async {
            while !ended.load(Ordering::SeqCst) && server.log().len() < stop_after {
                // How often the log is read; it orders nothing.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let _ = tx.send(true);
        };
        let (out, ()) = tokio::join!(run, stopper);
        let out = out.unwrap();
        drop(engine);
        if out.stop.is_some() {
            break;
        }
        interruptions += 1;
    }
    eprintln!("{strategy:?}: {interruptions} interruptions");
    assert!(interruptions >= 5, "only {interruptions} interruptions");
    assert_eq!(manifest(cut.path(), &spec.name), expected, "{strategy:?}");
    let _ = server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bfs_survives_stops_at_any_moment() {
    interrupted_equals_uninterrupted(StrategyKind::Bfs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sb_survives_stops_at_any_moment() {
    interrupted_equals_uninterrupted(StrategyKind::Sb).await;
}

/// A made-up site for [`a_job_killed_between_checkpoints_resumes_its_last_learned_state`]:
/// page `n` links to twelve pages and three CSV files, under tag paths drawn
/// from thousands, so the learner grows many actions and changes in many
/// places between two checkpoints.
struct ManyPaths;

impl ManyPaths {
    const TAGS: [&'static str; 10] = [
        "div", "section", "ul", "li", "span", "nav", "table", "tr", "td", "article",
    ];

    fn number(url: &url::Url) -> u64 {
        url.path()
            .trim_start_matches('/')
            .trim_end_matches(".csv")
            .parse()
            .unwrap_or(0)
    }

    fn path(mut k: u64) -> forager_core::link::TagPath {
        let mut path = String::from("/html/body");
        for _ in 0..5 {
            path.push('/');
            path.push_str(Self::TAGS[(k % 10) as usize]);
            k /= 10;
        }
        path.push_str("/a");
        forager_core::link::TagPath::new(path)
    }
}

impl forager_core::job::replay::Answers for ManyPaths {
    fn label(&mut self, url: &url::Url) -> Option<forager_core::mime::Label> {
        Some(if url.path().ends_with(".csv") {
            forager_core::mime::Label::Target
        } else {
            forager_core::mime::Label::Html
        })
    }

    fn links(&mut self, page: &forager_core::link::Link) -> forager_core::extract::PageLinks {
        let n = Self::number(&page.url);
        let links = (0..15u64)
            .map(|k| {
                let (child, ext) = if k < 12 {
                    (n * 12 + k + 1, "")
                } else {
                    (n * 3 + k, ".csv")
                };
                forager_core::extract::ExtractedLink {
                    url: page.url.join(&format!("/{child}{ext}")).unwrap(),
                    // Targets sit under a few paths, pages under many.
                    tag_path: Self::path(if ext.is_empty() {
                        (n * 7919 + k * 104_729) % 20_000
                    } else {
                        k
                    }),
                    anchor: String::new(),
                }
            })
            .collect();
        forager_core::job::replay::page_links(&page.url, links)
    }

    fn target(&mut self, _link: &forager_core::link::Link, _requests: u64) -> bool {
        true
    }
}

/// A job killed between checkpoints resumes to its last checkpoint's learned
/// state, byte for byte, although each checkpoint wrote only the chunks of
/// it that changed: the store is closed after every few checkpoints with
/// steps taken since the last one (lost, as a kill loses them), reopened,
/// and what it gives back is the record, learned state included, that the
/// last commit carried; a fresh learner restored from it saves it unchanged.
#[test]
fn a_job_killed_between_checkpoints_resumes_its_last_learned_state() {
    use forager::store::Store;
    use forager_core::job::replay::Replay;
    use forager_core::strategy::{SleepingBandit, Strategy};

    let dir = tempfile::tempdir().unwrap();
    let seed = url::Url::parse("http://many.test/0").unwrap();
    let spec = JobSpec::new("killed".to_string(), vec![seed]);
    let mut job = Replay::new(spec, Box::new(SleepingBandit::new(7)));
    let mut site = ManyPaths;
    let (mut written, mut whole) = (0u64, 0u64);
    for life in 0..4u64 {
        let store = Store::open(dir.path(), 4 << 20).unwrap();
        if life > 0 {
            let record = store.job_record("killed").unwrap().unwrap();
            assert_eq!(
                &record,
                job.record(),
                "life {life}: the last checkpoint's record"
            );
            let mut learner = SleepingBandit::new(7);
            learner.restore(&record.strategy_state).unwrap();
            assert_eq!(learner.save(), record.strategy_state);
            let frontier: Vec<_> = job.stored_frontier().collect();
            assert_eq!(store.load_job("killed").unwrap().frontier, frontier);
        }
        for round in 0..6 {
            for _ in 0..8 {
                assert!(job.step(&mut site).is_some(), "the site never runs dry");
            }
            let taken = job.take_checkpoint(life * 10 + round);
            whole += taken
                .delta
                .record
                .as_ref()
                .map_or(0, |r| r.strategy_state.len() as u64);
            let before = store.state_bytes_written();
            job.commit_with(taken, |delta| store.commit_blocking(delta))
                .unwrap();
            written += store.state_bytes_written() - before;
        }
        // Steps after the last checkpoint: the kill loses them.
        for _ in 0..5 {
            job.step(&mut site);
        }
    }
    assert!(job.record().strategy_state.len() > 10_000);
    eprintln!("learned state: {written} bytes written over 24 checkpoints of {whole} bytes in all");
}
