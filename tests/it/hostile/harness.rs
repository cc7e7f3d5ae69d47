//! Running a crawl for a hostile-input test: either the real `forager crawl`
//! binary (exit code, log lines, peak RSS of its process) or the engine
//! in-process (for cases that need time limits the CLI does not expose).
//! Both give back the job's counters and manifest as the store committed them.

use crate::harness::procfs::vm_hwm_kib;
use crate::harness::{Crawl, JobFile};
use forager::engine::{Engine, EngineConfig, NoObserver, Runner};
use forager::fetch::FetchConfig;
use forager::store::{JobCounters, ManifestRow, StopReason, Store};
use forager_core::config::parse_job;
use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Peak resident memory allowed to a crawler process in these tests. A bomb
/// or an endless body read without a cap would need gigabytes; an idle crawl
/// of a small site peaks near 40 MiB (a debug build), the bombs near 65 MiB.
pub const RSS_LIMIT_KIB: u64 = 200 * 1024;

/// Body cap of the test jobs (the default, 512 MiB, is far above any honest test page).
pub const MAX_BODY_BYTES: u64 = 8 << 20;

/// Retries of the test jobs: a failure that may pass (a reset, a time-out)
/// is tried `1 + RETRIES` times, each counted as a fetch error.
pub const RETRIES: u64 = 1;

/// A job file for `seeds`: breadth-first, no politeness delay, robots on,
/// an 8 MiB body cap, one retry, and `extra` TOML appended (whole tables only).
pub fn job_toml(name: &str, seeds: &[String], scope: &str, extra: &str) -> String {
    job_file(name, seeds, scope, extra).toml()
}

/// [`job_toml`]'s job, for a test that sets more (top-level keys too).
pub fn job_file(name: &str, seeds: &[String], scope: &str, extra: &str) -> JobFile {
    let mut job = JobFile::new(name)
        .scope(scope)
        .strategy("bfs")
        .set("budget", "requests", 5000)
        .no_early_stop()
        .delay("0s")
        .set("politeness", "user_agent", "\"forager-test/1.0\"")
        .set("limits", "max_body", MAX_BODY_BYTES)
        .set("limits", "retries", RETRIES)
        .extra(extra);
    for seed in seeds {
        job = job.seed(seed.clone());
    }
    job
}

/// How to run the binary.
#[derive(Clone, Debug, Default)]
pub struct CliOptions {
    pub allow_private: bool,
    pub resolve: Vec<(String, SocketAddr)>,
    /// Kill the crawler after this long (the test then fails); default 40 s.
    pub kill_after: Option<Duration>,
    /// Send SIGINT after this long; the result then says how long the exit took.
    pub interrupt_after: Option<Duration>,
}

/// What a crawl left behind.
#[derive(Debug)]
pub struct CrawlResult {
    /// `None` for in-process runs.
    pub exit: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    /// VmHWM of the crawler process, KiB (0 for in-process runs).
    pub peak_rss_kib: u64,
    pub counters: JobCounters,
    pub stop: Option<StopReason>,
    pub manifest: Vec<ManifestRow>,
    pub elapsed: Duration,
    /// From SIGINT ([`CliOptions::interrupt_after`]) to the exit.
    pub stop_latency: Option<Duration>,
    /// Keeps the state folder alive while the test looks at it.
    pub state: TempDir,
}

impl CrawlResult {
    /// The crawl ended normally: exit 0 (binary) and a stop reason recorded.
    #[track_caller]
    pub fn assert_completed(&self) {
        if let Some(exit) = self.exit {
            assert!(
                exit.success(),
                "crawler exited with {exit}\nstdout:\n{}\nstderr:\n{}",
                self.stdout,
                self.stderr
            );
        }
        assert!(
            self.stop.is_some(),
            "the job did not finish: {:?}\nstderr:\n{}",
            self.counters,
            self.stderr
        );
    }

    /// Peak RSS stayed under [`RSS_LIMIT_KIB`].
    #[track_caller]
    pub fn assert_memory_bounded(&self) {
        assert!(
            self.exit.is_some(),
            "peak RSS is only measured for the binary"
        );
        assert!(self.peak_rss_kib > 0, "peak RSS was not measured");
        assert!(
            self.peak_rss_kib < RSS_LIMIT_KIB,
            "crawler peak RSS {} MiB is over {} MiB",
            self.peak_rss_kib / 1024,
            RSS_LIMIT_KIB / 1024
        );
    }

    /// The final URLs of the saved targets, as paths (`/ok.csv`), sorted.
    pub fn target_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .manifest
            .iter()
            .map(|r| {
                url::Url::parse(&r.final_url)
                    .map(|u| u.path().to_string())
                    .unwrap_or_else(|_| r.final_url.clone())
            })
            .collect();
        paths.sort();
        paths
    }

    /// The bytes of a saved target file.
    pub fn target_bytes(&self, job: &str, row: &ManifestRow) -> Vec<u8> {
        std::fs::read(
            self.state
                .path()
                .join("state/targets")
                .join(job)
                .join(&row.file),
        )
        .expect("target file")
    }

    /// Whether the crawler's log has a line containing every one of `parts`.
    pub fn logged(&self, parts: &[&str]) -> bool {
        self.stderr
            .lines()
            .any(|line| parts.iter().all(|p| line.contains(p)))
    }

    #[track_caller]
    pub fn assert_logged(&self, parts: &[&str]) {
        assert!(
            self.logged(parts),
            "no log line with {parts:?}; log:\n{}",
            self.stderr
        );
    }
}

/// Runs `forager crawl` on a job file and waits for it (on a blocking thread,
/// so servers on the test's runtime keep serving).
pub async fn crawl_cli(job_name: &str, job: String, opts: CliOptions) -> CrawlResult {
    let job_name = job_name.to_string();
    tokio::task::spawn_blocking(move || crawl_cli_blocking(&job_name, &job, &opts))
        .await
        .expect("crawler thread")
}

fn crawl_cli_blocking(job_name: &str, job: &str, opts: &CliOptions) -> CrawlResult {
    let state = tempfile::tempdir().expect("temp dir");
    let job_path = state.path().join(format!("{job_name}.toml"));
    std::fs::write(&job_path, job).expect("write job file");
    let state_dir = state.path().join("state");
    let out_path = state.path().join("stdout.txt");
    let err_path = state.path().join("stderr.txt");

    let mut crawl = Crawl::new(&job_path, &state_dir).checkpoint_interval("1s");
    // `--resolve` to the loopback test servers needs `--allow-private`, as it would a user.
    if opts.allow_private || !opts.resolve.is_empty() {
        crawl = crawl.allow_private();
    }
    for (host, addr) in &opts.resolve {
        crawl = crawl.resolve_to(host, *addr);
    }
    let mut cmd = crawl.std_command();
    cmd.env("RUST_LOG", "warn")
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"));
    let started = Instant::now();
    // Bounded below by `kill_after`, well within the harness's deadline.
    let mut child = crate::harness::bin::spawn_std(&mut cmd);
    let kill_after = opts.kill_after.unwrap_or(Duration::from_secs(40));
    let mut peak_rss_kib = 0;
    let mut interrupted_at = None;
    let exit = loop {
        if let Some(after) = opts.interrupt_after {
            if interrupted_at.is_none() && started.elapsed() >= after {
                // SAFETY: kill(2) on our own child's pid.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
                interrupted_at = Some(Instant::now());
            }
        }
        // VmHWM is a high-water mark: any read after the peak sees it.
        if let Some(hwm) = vm_hwm_kib(child.id()) {
            peak_rss_kib = peak_rss_kib.max(hwm);
        }
        if let Some(status) = child.try_wait().expect("wait for forager") {
            break status;
        }
        if started.elapsed() > kill_after {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "forager did not finish within {kill_after:?}; stderr:\n{}",
                read_lossy(&err_path)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    let stop_latency = interrupted_at.map(|at| at.elapsed());
    // Shown with --nocapture: the figures behind the bound.
    eprintln!(
        "{job_name}: peak RSS {} KiB, {:.2} s",
        peak_rss_kib,
        elapsed.as_secs_f64()
    );
    let (counters, stop, manifest) = load_job_state(&state_dir, job_name);
    CrawlResult {
        exit: Some(exit),
        stdout: read_lossy(&out_path),
        stderr: read_lossy(&err_path),
        peak_rss_kib,
        counters,
        stop,
        manifest,
        elapsed,
        stop_latency,
        state,
    }
}

/// Runs the job in this process with a custom fetch configuration (small time limits).
pub async fn crawl_in_process(job: &str, fetch: FetchConfig) -> CrawlResult {
    crawl_in_process_until(job, fetch, || false).await
}

/// Runs the job in this process until it ends or `stop_when` holds (asked
/// every 20 ms), then stops it as SIGINT would: how a test ends a
/// continuous job, which never ends by itself.
pub async fn crawl_in_process_until(
    job: &str,
    fetch: FetchConfig,
    stop_when: impl Fn() -> bool,
) -> CrawlResult {
    let state = tempfile::tempdir().expect("temp dir");
    let state_dir = state.path().join("state");
    let spec = parse_job(job, Path::new("hostile.toml")).expect("valid test job");
    let started = Instant::now();
    let outcome = {
        let engine = Engine::open(EngineConfig {
            state_dir: state_dir.clone(),
            fetch,
            checkpoint_interval: Duration::from_secs(1),
            cache_bytes: 4 << 20,
        })
        .expect("open engine");
        let mut observer = NoObserver;
        let runner = Runner::new(&engine, &spec, &mut observer).expect("prepare job");
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let run = runner.run(stop_rx);
        tokio::pin!(run);
        // A guard against a hang (2 min), not a timing.
        let mut polls = 0u32;
        loop {
            tokio::select! {
                outcome = &mut run => break outcome.expect("crawl"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {
                    polls += 1;
                    assert!(polls < 6000, "the stop condition never held");
                    if stop_when() {
                        let _ = stop_tx.send(true);
                    }
                }
            }
        }
    };
    let elapsed = started.elapsed();
    // The engine (and so the store) is dropped: read back what it committed.
    let (counters, stop, manifest) = load_job_state(&state_dir, &spec.name);
    assert_eq!(
        counters, outcome.counters,
        "committed counters differ from the run's"
    );
    CrawlResult {
        exit: None,
        stdout: String::new(),
        stderr: String::new(),
        peak_rss_kib: 0,
        counters,
        stop,
        manifest,
        elapsed,
        stop_latency: None,
        state,
    }
}

/// A fetch configuration with small time limits, for slow-server tests.
pub fn quick_fetch(resolve: Vec<(String, SocketAddr)>) -> FetchConfig {
    FetchConfig {
        allow_private: false,
        resolve,
        connect_timeout: Duration::from_millis(500),
        read_timeout: Duration::from_millis(700),
        total_timeout: Duration::from_secs(2),
        ..FetchConfig::default()
    }
}

fn load_job_state(
    state_dir: &Path,
    job: &str,
) -> (JobCounters, Option<StopReason>, Vec<ManifestRow>) {
    let store = Store::open(state_dir, 1 << 20).expect("open the crawler's store");
    let record = store
        .job_record(job)
        .expect("read the job record")
        .expect("the job committed a checkpoint");
    let manifest = store.manifest_rows(job).expect("read the manifest");
    (record.counters, record.stop, manifest)
}

fn read_lossy(path: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The job with `[politeness] robots` set.
pub fn with_robots(job: String, robots: bool) -> String {
    job.replacen(
        "[politeness]\n",
        &format!("[politeness]\nrobots = {robots}\n"),
        1,
    )
}
