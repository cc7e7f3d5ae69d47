//! The daemon end to end: the real binary with a temporary config, three
//! loopback sites, job files dropped into its watched folder, its status API
//! and metrics, the systemd notification protocol (a datagram socket passed
//! as `NOTIFY_SOCKET`), SIGHUP and SIGTERM, and the store it leaves behind.
//!
//! Every wait is bounded: poll `/status` until a condition holds or a
//! deadline passes, then fail with the last report and the daemon's log.

use crate::harness::daemon::DaemonProcess;
use crate::harness::JobFile;
use forager::daemon::{self, jobs::Phase, StatusReport};
use forager::store::{StopReason, Store};
use forager_bench::sites::{Site, SiteRequest, SiteResponse, SiteServer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Pages of the catalogue sites; each links to the next pages and to one CSV.
const PAGES: usize = 12;

/// A small site: `/` and `/page/N` link onwards and to `/data/N.csv`.
struct Catalogue;

impl Site for Catalogue {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let page = |n: usize| {
            let mut links = format!("<a href=\"/data/{n}.csv\">data {n}</a>");
            for next in [n + 1, n + 2] {
                if next < PAGES {
                    links.push_str(&format!("<a href=\"/page/{next}\">page {next}</a>"));
                }
            }
            SiteResponse::html(format!(
                "<html><body><div class=\"c\">{links}</div></body></html>"
            ))
        };
        let path = req.path.as_str();
        if path == "/" {
            return page(0);
        }
        if let Some(n) = path
            .strip_prefix("/page/")
            .and_then(|n| n.parse::<usize>().ok())
        {
            if n < PAGES {
                return page(n);
            }
        }
        if let Some(n) = path
            .strip_prefix("/data/")
            .and_then(|f| f.strip_suffix(".csv"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            if n < PAGES {
                return SiteResponse::ok("text/csv", format!("n,value\n{n},{}\n", n * n));
            }
        }
        SiteResponse::not_found()
    }
}

/// A site without end: every page links to two new ones.
struct Endless;

impl Site for Endless {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let n: u64 = req
            .path
            .strip_prefix("/n/")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        SiteResponse::html(format!(
            "<html><body><a href=\"/n/{}\">a</a><a href=\"/n/{}\">b</a></body></html>",
            n.saturating_mul(2).saturating_add(1),
            n.saturating_mul(2).saturating_add(2)
        ))
    }
}

/// Collects every datagram the daemon sends to its notify socket.
fn listen_notify(path: &Path) -> Arc<Mutex<Vec<String>>> {
    let socket = std::os::unix::net::UnixDatagram::bind(path).expect("binding the notify socket");
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 4096];
        loop {
            match socket.recv(&mut buf) {
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    sink.lock()
                        .unwrap()
                        .extend(text.lines().map(str::to_string));
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    // Stop once the test dropped its end.
                    if Arc::strong_count(&sink) == 1 {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    });
    seen
}

/// Write a file the way editors do: a temporary file renamed over the target.
fn save_atomically(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A job file; `requests` 0 = unlimited.
fn job_file(name: &str, host: &str, port: u16, requests: u64, strategy: &str) -> String {
    // The engine ends a crawl of the endless site as a trap after ~1000 pages: at 50
    // requests/s its jobs are still crawling when the test stops the daemon.
    let delay = if host == "endless.test" { "20ms" } else { "0s" };
    JobFile::new(name)
        .seed(format!("http://{host}:{port}/"))
        .strategy(strategy)
        .set("budget", "requests", requests)
        .no_early_stop()
        .delay(delay)
        .toml()
}

/// Poll `/status` until `done` holds; fail with the last report and the log after `within`.
async fn wait_for(
    admin: SocketAddr,
    daemon: &DaemonProcess,
    what: &str,
    within: Duration,
    done: impl Fn(&StatusReport) -> bool,
) -> StatusReport {
    let deadline = Instant::now() + within;
    let mut last = None;
    while Instant::now() < deadline {
        match daemon::status(admin).await {
            Ok(r) if done(&r) => return r,
            Ok(r) => last = Some(Ok(r)),
            Err(e) => last = Some(Err(format!("{e:#}"))),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "timed out waiting for {what}\nlast status: {}\n--- daemon log ---\n{}",
        match last {
            Some(Ok(r)) => serde_json::to_string_pretty(&r).unwrap(),
            Some(Err(e)) => e,
            None => "none".into(),
        },
        daemon.log()
    );
}

fn job<'a>(r: &'a StatusReport, name: &str) -> Option<&'a daemon::JobStatus> {
    r.jobs.iter().find(|j| j.name == name)
}

fn is(r: &StatusReport, name: &str, phase: Phase, reason: Option<StopReason>) -> bool {
    job(r, name).is_some_and(|j| j.state == phase && j.stop_reason == reason)
}

/// A daemon config for the loopback sites on `port`; `extra` is more top-level keys.
fn write_config(path: &Path, admin: SocketAddr, port: u16, max_jobs: usize, extra: &str) {
    let config = format!(
        "jobs_dir = \"jobs.d\"\n\
         state_dir = \"state\"\n\
         admin_listen = \"{admin}\"\n\
         max_jobs = {max_jobs}\n\
         {extra}\n\
         checkpoint_interval = \"30min\"\n\
         allow_private = true\n\
         [resolve]\n\
         \"site-a.test\" = \"127.0.0.1:{port}\"\n\
         \"site-b.test\" = \"127.0.0.1:{port}\"\n\
         \"endless.test\" = \"127.0.0.1:{port}\"\n"
    );
    std::fs::write(path, config).unwrap();
}

/// How the daemon's process is set up, as systemd would.
#[derive(Clone, Copy, Default)]
struct ProcessLimits {
    /// `LimitNOFILE=`.
    nofile: Option<u64>,
    /// `UMask=`.
    umask: Option<libc::mode_t>,
}

/// Three loopback sites, a temporary config and jobs folder, a notify socket, the daemon.
struct Fixture {
    server: SiteServer,
    dir: tempfile::TempDir,
    jobs_dir: PathBuf,
    config_path: PathBuf,
    admin: SocketAddr,
    notes: Arc<Mutex<Vec<String>>>,
    daemon: DaemonProcess,
}

impl Fixture {
    async fn start(max_jobs: usize) -> Fixture {
        Fixture::start_with(max_jobs, ProcessLimits::default()).await
    }

    /// Like [`Fixture::start`], with the daemon's process set up as `limits` says.
    async fn start_with(max_jobs: usize, limits: ProcessLimits) -> Fixture {
        let sites: Vec<(String, Arc<dyn Site>)> = vec![
            ("site-a.test".into(), Arc::new(Catalogue)),
            ("site-b.test".into(), Arc::new(Catalogue)),
            ("endless.test".into(), Arc::new(Endless)),
        ];
        let server = SiteServer::start(sites).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let jobs_dir = dir.path().join("jobs.d");
        std::fs::create_dir(&jobs_dir).unwrap();
        let admin: SocketAddr = crate::harness::sites::admin_addr();
        let config_path = dir.path().join("forager.toml");
        let notify_path = dir.path().join("notify.sock");
        let notes = listen_notify(&notify_path);
        write_config(&config_path, admin, server.port(), max_jobs, "");
        let log = dir.path().join("daemon.log");
        let mut command = crate::harness::bin::std_command();
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit and umask are async-signal-safe and touch only the child.
            unsafe {
                command.pre_exec(move || {
                    if let Some(limit) = limits.nofile {
                        let l = libc::rlimit {
                            rlim_cur: limit,
                            rlim_max: limit,
                        };
                        if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    if let Some(mask) = limits.umask {
                        libc::umask(mask);
                    }
                    Ok(())
                });
            }
        }
        command
            .arg("daemon")
            .arg("--config")
            .arg(&config_path)
            .env("NOTIFY_SOCKET", &notify_path)
            .env("RUST_LOG", "info");
        let daemon = DaemonProcess::start(&mut command, log);
        Fixture {
            server,
            dir,
            jobs_dir,
            config_path,
            admin,
            notes,
            daemon,
        }
    }

    fn write_config(&self, max_jobs: usize, extra: &str) {
        write_config(
            &self.config_path,
            self.admin,
            self.server.port(),
            max_jobs,
            extra,
        );
    }

    fn job_path(&self, name: &str) -> PathBuf {
        self.jobs_dir.join(format!("{name}.toml"))
    }

    fn job(&self, name: &str, host: &str, requests: u64, strategy: &str) -> String {
        job_file(name, host, self.server.port(), requests, strategy)
    }

    async fn wait_for(&self, what: &str, done: impl Fn(&StatusReport) -> bool) -> StatusReport {
        wait_for(
            self.admin,
            &self.daemon,
            what,
            Duration::from_secs(60),
            done,
        )
        .await
    }

    /// Wait until the daemon sent `line` to the notify socket.
    async fn wait_note(&self, line: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.notes.lock().unwrap().iter().any(|l| l == line) {
            assert!(
                Instant::now() < deadline,
                "no {line} in {:?}\n{}",
                self.notes.lock().unwrap(),
                self.daemon.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGTERM, then the exit status and how long it took.
    fn terminate(&mut self) -> (ExitStatus, Duration) {
        let asked = Instant::now();
        self.daemon.signal("TERM");
        let status = self
            .daemon
            .wait(Duration::from_secs(30))
            .unwrap_or_else(|| panic!("no exit after SIGTERM\n{}", self.daemon.log()));
        (status, asked.elapsed())
    }

    fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_runs_edits_reports_and_stops_cleanly() {
    let mut f = Fixture::start(4).await;

    // Ready: READY=1 arrives once the API listens and the (empty) folder was read.
    let r = f.wait_for("an empty daemon", |r| r.jobs.is_empty()).await;
    assert_eq!(r.max_jobs, 4);
    f.wait_note("READY=1").await;

    // Two jobs: one crawls its whole site, the other stops at its budget.
    std::fs::write(f.job_path("alpha"), f.job("alpha", "site-a.test", 0, "bfs")).unwrap();
    save_atomically(&f.job_path("beta"), &f.job("beta", "site-b.test", 5, "sb"));
    // An editor's swap file is not a job file.
    std::fs::write(f.jobs_dir.join(".alpha.toml.swp"), "not toml [").unwrap();
    let r = f
        .wait_for("both jobs done", |r| {
            is(r, "alpha", Phase::Done, Some(StopReason::FrontierEmpty))
                && is(r, "beta", Phase::Done, Some(StopReason::RequestBudget))
        })
        .await;
    let alpha = job(&r, "alpha").unwrap();
    assert_eq!(alpha.counters.targets, PAGES as u64, "every CSV of site-a");
    assert_eq!(alpha.counters.pages, PAGES as u64);
    assert!(alpha.file.as_ref().unwrap().ends_with("alpha.toml"));
    assert_eq!(alpha.strategy.as_deref(), Some("bfs"));
    assert!(alpha.checkpoints >= 1);
    assert!(alpha.responses.success >= 2 * PAGES as u64);
    let beta = job(&r, "beta").unwrap();
    assert_eq!(beta.counters.requests, 5);
    assert!(r.config_errors.is_empty(), "{:?}", r.config_errors);

    // `forager status` prints them as a table.
    let out = crate::harness::bin::output_blocking(crate::harness::bin::std_command().args([
        "status",
        "--admin",
        &f.admin.to_string(),
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("alpha"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.contains("done") && row.contains("frontier empty"),
        "{table}"
    );

    // Raise beta's budget (an atomic save): it resumes from its checkpoint and finishes its site.
    save_atomically(
        &f.job_path("beta"),
        &f.job("beta", "site-b.test", 1000, "sb"),
    );
    let r = f
        .wait_for("beta resumed and done", |r| {
            is(r, "beta", Phase::Done, Some(StopReason::FrontierEmpty))
        })
        .await;
    let beta = job(&r, "beta").unwrap();
    assert!(beta.counters.requests > 5, "{:?}", beta.counters);
    assert_eq!(beta.counters.targets, PAGES as u64);

    // A broken job file: reported with file:line, and the daemon keeps going.
    std::fs::write(
        f.job_path("broken"),
        "name = \"broken\"\nseeds = [\"http://site-a.test/\"]\nstrategy = \"nope\"\n",
    )
    .unwrap();
    let r = f
        .wait_for("the broken file reported", |r| !r.config_errors.is_empty())
        .await;
    assert_eq!(r.config_errors.len(), 1, "{:?}", r.config_errors);
    let e = &r.config_errors[0];
    assert!(e.file.ends_with("broken.toml"), "{e:?}");
    assert_eq!(e.line, Some(3), "{e:?}");
    assert_eq!(e.field, "strategy");
    assert!(
        e.message.contains("broken.toml:3: strategy:"),
        "{}",
        e.message
    );
    assert!(is(&r, "broken", Phase::Invalid, None));

    // Breaking a running job's file keeps its last valid version running.
    std::fs::write(
        f.job_path("endless"),
        f.job("endless", "endless.test", 0, "bfs"),
    )
    .unwrap();
    f.wait_for("endless crawling", |r| {
        job(r, "endless").is_some_and(|j| j.state == Phase::Running && j.counters.requests > 20)
    })
    .await;
    save_atomically(&f.job_path("endless"), "name = \"endless\"\nseeds = [\n");
    let r = f
        .wait_for("endless's file error", |r| {
            job(r, "endless").is_some_and(|j| j.config_error.is_some())
        })
        .await;
    let endless = job(&r, "endless").unwrap();
    assert_eq!(endless.state, Phase::Running);
    let message = &endless.config_error.as_ref().unwrap().message;
    assert!(message.contains("endless.toml:2:"), "{message}");
    assert_eq!(r.config_errors.len(), 2);

    // Metrics: per-job counters in the Prometheus text format.
    let metrics = reqwest::get(format!("http://{}/metrics", f.admin))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!(
            "forager_job_targets_total{{job=\"alpha\"}} {PAGES}"
        )),
        "{metrics}"
    );
    assert!(metrics.contains("# TYPE forager_job_requests_total counter"));
    assert!(metrics.contains("forager_job_state{job=\"endless\",state=\"running\"} 1"));
    // Latency and checkpoint histograms, fed by the jobs that ran.
    let sample = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no sample {name} in\n{metrics}"))
    };
    assert!(metrics.contains("# TYPE forager_fetch_latency_seconds histogram"));
    let answered = sample("forager_fetch_latency_seconds_count");
    assert!(answered >= (2 * PAGES) as f64, "{answered} timed requests");
    assert_eq!(
        sample("forager_fetch_latency_seconds_bucket{le=\"+Inf\"}"),
        answered
    );
    // Loopback answers: the mean is far under a second.
    assert!(sample("forager_fetch_latency_seconds_sum") / answered < 1.0);
    assert!(sample("forager_checkpoint_duration_seconds_count") >= 2.0);
    assert!(sample("forager_job_checkpoint_duration_seconds_count{job=\"alpha\"}") >= 1.0);
    assert!(sample("forager_job_fetch_latency_seconds_count{job=\"alpha\"}") >= PAGES as f64);
    assert_eq!(sample("forager_job_paused{job=\"endless\"}"), 0.0);

    // A new strategy cannot resume the stored state: failed until purged, then a fresh start.
    save_atomically(
        &f.job_path("alpha"),
        &f.job("alpha", "site-a.test", 0, "sb"),
    );
    let r = f
        .wait_for("alpha failed", |r| {
            job(r, "alpha").is_some_and(|j| j.state == Phase::Failed)
        })
        .await;
    let detail = job(&r, "alpha").unwrap().detail.clone().unwrap();
    assert!(detail.contains("forager purge alpha"), "{detail}");
    daemon::purge_via(f.admin, &f.state_dir(), "alpha")
        .await
        .unwrap();
    let r = f
        .wait_for("alpha done afresh with sb", |r| {
            job(r, "alpha").is_some_and(|j| {
                j.strategy.as_deref() == Some("sb")
                    && j.state == Phase::Done
                    && j.stop_reason == Some(StopReason::FrontierEmpty)
            })
        })
        .await;
    assert_eq!(job(&r, "alpha").unwrap().counters.targets, PAGES as u64);

    // A removed file stops its job; the state stays until purged.
    std::fs::write(
        f.job_path("gamma"),
        f.job("gamma", "endless.test", 0, "bfs"),
    )
    .unwrap();
    std::fs::remove_file(f.job_path("endless")).unwrap();
    let r = f
        .wait_for("endless stopped, gamma running", |r| {
            is(r, "endless", Phase::Stopped, None)
                && job(r, "gamma")
                    .is_some_and(|j| j.state == Phase::Running && j.counters.requests > 0)
        })
        .await;
    let endless = job(&r, "endless").unwrap();
    assert!(endless.file.is_none());
    assert!(
        endless.counters.requests > 20,
        "its counters stay: {:?}",
        endless.counters
    );
    assert!(
        endless.detail.as_deref().unwrap().contains("removed"),
        "{:?}",
        endless.detail
    );
    let refused = format!(
        "{:#}",
        daemon::purge_via(f.admin, &f.state_dir(), "gamma")
            .await
            .unwrap_err()
    );
    assert!(
        refused.contains("409") && refused.contains("running"),
        "{refused}"
    );
    daemon::purge_via(f.admin, &f.state_dir(), "endless")
        .await
        .unwrap();
    let r = f
        .wait_for("endless purged", |r| job(r, "endless").is_none())
        .await;
    assert_eq!(
        r.config_errors.len(),
        1,
        "endless's broken file went with it"
    );

    // SIGHUP: max_jobs applies live.
    f.write_config(7, "");
    f.daemon.signal("HUP");
    f.wait_for("max_jobs reloaded", |r| r.max_jobs == 7).await;

    // SIGTERM with a job mid-crawl: it checkpoints, the daemon exits 0 quickly.
    let r = daemon::status(f.admin).await.unwrap();
    let gamma_seen = job(&r, "gamma").unwrap().counters.requests;
    assert!(gamma_seen > 0);
    let (status, took) = f.terminate();
    assert!(
        status.success(),
        "exit status {status:?}\n{}",
        f.daemon.log()
    );
    assert!(took < Duration::from_secs(10), "stopping took {took:?}");
    let seen = f.notes.lock().unwrap().clone();
    for expected in ["READY=1", "RELOADING=1", "STOPPING=1"] {
        assert!(
            seen.iter().any(|l| l == expected),
            "no {expected} in {seen:?}"
        );
    }
    assert!(
        seen.iter()
            .any(|l| l.starts_with("STATUS=") && l.contains("running")),
        "{seen:?}"
    );

    // The store opens and holds every job's state, including the final checkpoint of the
    // job stopped mid-crawl (the periodic ones are 30 min apart: only the final one ran).
    let store = Store::open(&f.state_dir(), 1 << 20).unwrap();
    let alpha = store.job_record("alpha").unwrap().unwrap();
    assert_eq!(alpha.stop, Some(StopReason::FrontierEmpty));
    assert_eq!(alpha.counters.targets, PAGES as u64);
    let gamma = store.job_record("gamma").unwrap().unwrap();
    assert_eq!(gamma.stop, None, "interrupted, not finished");
    assert!(
        gamma.counters.requests >= gamma_seen,
        "stored {:?}, seen before SIGTERM {gamma_seen}",
        gamma.counters
    );
    assert!(store.job_record("endless").unwrap().is_none(), "purged");
    assert!(store.job_record("broken").unwrap().is_none());
    drop(store);
    let _ = f.server.shutdown().await;
}

/// Issue 39, point 2: a job whose seed answers 404 ends `done` like any
/// other, but `/status` (and `forager status`) carry a warning naming the
/// seed and its status; a job that harvested has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_that_answers_404_is_a_warning_in_status() {
    let f = Fixture::start(2).await;
    f.wait_for("an empty daemon", |r| r.jobs.is_empty()).await;
    let port = f.server.port();
    let missing = JobFile::new("gone")
        .seed(format!("http://site-a.test:{port}/nowhere"))
        .strategy("bfs")
        .delay("0s")
        .toml();
    std::fs::write(f.job_path("gone"), missing).unwrap();
    std::fs::write(f.job_path("alpha"), f.job("alpha", "site-b.test", 0, "bfs")).unwrap();
    let r = f
        .wait_for("both jobs done", |r| {
            is(r, "gone", Phase::Done, Some(StopReason::FrontierEmpty))
                && is(r, "alpha", Phase::Done, Some(StopReason::FrontierEmpty))
        })
        .await;
    let gone = job(&r, "gone").unwrap();
    let warning = gone
        .warning
        .as_deref()
        .unwrap_or_else(|| panic!("{gone:?}"));
    assert!(
        warning.contains(&format!(
            "seed http://site-a.test:{port}/nowhere answered HTTP 404"
        )),
        "{warning}"
    );
    assert!(warning.contains("no target saved"), "{warning}");
    let alpha = job(&r, "alpha").unwrap();
    assert_eq!(alpha.counters.targets, PAGES as u64);
    assert_eq!(alpha.warning, None, "{alpha:?}");
    // The daemon's log says it too, with the seed and status as fields.
    let log = f.daemon.log();
    assert!(
        log.lines()
            .any(|l| l.contains("seed answered an HTTP error") && l.contains("status=404")),
        "{log}"
    );
    // `forager status` shows it in the job's row.
    let out = crate::harness::bin::output_blocking(crate::harness::bin::std_command().args([
        "status",
        "--admin",
        &f.admin.to_string(),
    ]));
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("gone"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("warning: seed"), "{table}");
}

/// Issue 39: an origin whose robots.txt cannot be read is loud in the
/// daemon too. A seed on the https port of a plain http server (its TLS
/// handshake meets an http answer): `/status` says which origin the job
/// waits for and until when, `/metrics` counts every robots.txt failure,
/// and the job ends `unreachable` once the retries are spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_without_robots_txt_is_named_in_status_and_counted_in_metrics() {
    let f = Fixture::start(2).await;
    f.wait_for("an empty daemon", |r| r.jobs.is_empty()).await;
    let port = f.server.port();
    // Back-offs of 1, 2 and 4 s: the job only waits from the second on.
    let dead = JobFile::new("notls")
        .seed(format!("https://site-a.test:{port}/"))
        .strategy("bfs")
        .delay("0s")
        .set("limits", "retries", 3)
        .toml();
    std::fs::write(f.job_path("notls"), dead).unwrap();
    let origin = format!("https://site-a.test:{port}");
    let r = f
        .wait_for("the job saying what it waits for", |r| {
            job(r, "notls")
                .and_then(|j| j.detail.as_deref())
                .is_some_and(|d| d.starts_with(&format!("waiting for {origin} until ")))
        })
        .await;
    let waiting = job(&r, "notls").unwrap();
    assert_eq!(waiting.state, Phase::Running, "{waiting:?}");
    let metrics = reqwest::get(format!("http://{}/metrics", f.admin))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let failures: f64 = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("forager_robots_failures_total ")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no robots.txt failure count in\n{metrics}"));
    assert!(failures >= 2.0, "{metrics}");
    let r = f
        .wait_for("the job ended unreachable", |r| {
            is(r, "notls", Phase::Done, Some(StopReason::Unreachable))
        })
        .await;
    assert!(job(&r, "notls").is_some());
    let log = f.daemon.log();
    assert!(
        log.contains("robots.txt unavailable") && log.contains(&format!("{origin}/robots.txt")),
        "{log}"
    );
    let _ = f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_jobs_bounds_running_jobs_and_reloads_live() {
    let mut f = Fixture::start(1).await;
    f.wait_note("READY=1").await;
    for name in ["one", "two", "three"] {
        std::fs::write(f.job_path(name), f.job(name, "endless.test", 0, "bfs")).unwrap();
    }
    let r = f
        .wait_for("one running, two waiting", |r| {
            r.jobs.len() == 3 && r.running == 1 && r.pending == 2
        })
        .await;
    let waiting = r.jobs.iter().find(|j| j.state == Phase::Pending).unwrap();
    assert!(
        waiting.detail.as_deref().unwrap().contains("max_jobs"),
        "{:?}",
        waiting.detail
    );
    // Still one at a time once the running job has gone on fetching (its
    // progress, not a sleep, says time passed): the slot is not handed out twice.
    let running = r.jobs.iter().find(|j| j.state == Phase::Running).unwrap();
    let (name, requests) = (running.name.clone(), running.counters.requests);
    f.wait_for("the running job fetches on", |r| {
        job(r, &name).is_some_and(|j| j.counters.requests >= requests + 10)
    })
    .await;
    let r = daemon::status(f.admin).await.unwrap();
    assert_eq!((r.running, r.pending), (1, 2));

    // SIGHUP applies log_level before the rest of the reload: the quieter filter hides its info lines.
    f.write_config(3, "log_level = \"warn,forager::daemon::logging=info\"");
    f.daemon.signal("HUP");
    f.wait_for("all three running", |r| r.running == 3 && r.max_jobs == 3)
        .await;
    // A running job reports its frontier, not only once its run ends.
    f.wait_for("frontiers of running jobs", |r| {
        r.jobs.iter().all(|j| {
            j.state == Phase::Running
                && j.counters.requests > 0
                && j.frontier.is_some_and(|n| n > 0)
        })
    })
    .await;
    let log = f.daemon.log();
    assert!(
        log.contains("log filter changed filter=warn,forager::daemon::logging=info"),
        "{log}"
    );
    assert!(!log.contains("max_jobs changed from=1 to=3"), "{log}");
    assert!(!log.contains('\u{1b}'), "no colours in a log file");

    // Fewer slots: the newest running job goes back to wait (see
    // a_lower_max_jobs_sends_the_newest_jobs_back_to_wait); a restarted job waits for a free one.
    // log_level removed: RUST_LOG (info) again.
    f.write_config(2, "");
    f.daemon.signal("HUP");
    f.wait_for("max_jobs 2", |r| r.max_jobs == 2).await;
    let log = f.daemon.log();
    assert!(log.contains("log filter changed filter=info"), "{log}");
    assert!(log.contains("max_jobs changed from=3 to=2"), "{log}");
    std::fs::remove_file(f.job_path("one")).unwrap();
    f.wait_for("one stopped", |r| is(r, "one", Phase::Stopped, None))
        .await;
    std::fs::write(f.job_path("one"), f.job("one", "endless.test", 0, "bfs")).unwrap();
    let r = f
        .wait_for("one waiting for a slot", |r| {
            is(r, "one", Phase::Pending, None)
        })
        .await;
    assert_eq!(r.running, 2);

    let (status, took) = f.terminate();
    assert!(
        status.success(),
        "exit status {status:?}\n{}",
        f.daemon.log()
    );
    assert!(took < Duration::from_secs(10), "stopping took {took:?}");
    // Only the final checkpoints ran (30 min apart): each running job wrote one.
    let store = Store::open(&f.state_dir(), 1 << 20).unwrap();
    for name in ["two", "three"] {
        let record = store.job_record(name).unwrap().unwrap();
        assert!(
            record.counters.requests > 0,
            "{name}: {:?}",
            record.counters
        );
    }
    drop(store);
    let _ = f.server.shutdown().await;
}

/// Wait until the daemon's log holds `line`; fail with the log after 30 s.
fn wait_log(daemon: &DaemonProcess, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !daemon.log().contains(line) {
        assert!(
            Instant::now() < deadline,
            "no {line:?} in the log:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A relative `--config` path (so a relative `jobs_dir`): removing and
/// recreating the jobs folder is noticed at once, not at the 60 s rescan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_config_path_notices_the_jobs_folder_going_and_coming_back() {
    let sites: Vec<(String, Arc<dyn Site>)> = vec![("site-a.test".into(), Arc::new(Catalogue))];
    let server = SiteServer::start(sites).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let jobs_dir = dir.path().join("jobs.d");
    std::fs::create_dir(&jobs_dir).unwrap();
    let admin: SocketAddr = crate::harness::sites::admin_addr();
    write_config(
        &dir.path().join("forager.toml"),
        admin,
        server.port(),
        2,
        "",
    );
    let mut daemon = DaemonProcess::start(
        crate::harness::bin::std_command()
            .current_dir(dir.path())
            .args(["daemon", "--config", "forager.toml"])
            .env("RUST_LOG", "info"),
        dir.path().join("daemon.log"),
    );
    let within = Duration::from_secs(60);
    wait_for(admin, &daemon, "an empty daemon", within, |r| {
        r.jobs.is_empty()
    })
    .await;
    wait_log(&daemon, "watching the jobs folder");

    std::fs::remove_dir_all(&jobs_dir).unwrap();
    wait_log(&daemon, "the jobs folder was removed or moved");
    std::fs::create_dir(&jobs_dir).unwrap();
    wait_log(&daemon, "watching the jobs folder again");
    std::fs::write(
        jobs_dir.join("alpha.toml"),
        job_file("alpha", "site-a.test", server.port(), 0, "bfs"),
    )
    .unwrap();
    let r = wait_for(admin, &daemon, "alpha done", within, |r| {
        is(r, "alpha", Phase::Done, Some(StopReason::FrontierEmpty))
    })
    .await;
    assert_eq!(job(&r, "alpha").unwrap().counters.targets, PAGES as u64);
    daemon.signal("TERM");
    let status = daemon
        .wait(Duration::from_secs(30))
        .expect("no exit after SIGTERM");
    assert!(status.success(), "{status:?}\n{}", daemon.log());
    let _ = server.shutdown().await;
}

/// Connections to the admin API that each send a request line, then one
/// header line every 100 ms and never finish; a closed one reconnects.
struct Flood {
    stop: Arc<std::sync::atomic::AtomicBool>,
    opened: Arc<std::sync::atomic::AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Flood {
    fn start(admin: SocketAddr, clients: usize) -> Flood {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use tokio::io::AsyncWriteExt;
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicUsize::new(0));
        let tasks = (0..clients)
            .map(|_| {
                let stop = stop.clone();
                let opened = opened.clone();
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(mut c) = tokio::net::TcpStream::connect(admin).await {
                            opened.fetch_add(1, Ordering::Relaxed);
                            let mut line: &[u8] = b"GET /status HTTP/1.1\r\n";
                            while !stop.load(Ordering::Relaxed) && c.write_all(line).await.is_ok() {
                                line = b"X-Slow: 1\r\n";
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                })
            })
            .collect();
        Flood {
            stop,
            opened,
            tasks,
        }
    }

    async fn stop(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
        self.opened.load(std::sync::atomic::Ordering::Relaxed)
    }
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The admin API against what a hostile web page or local client can do:
/// cross-site posts, DNS rebinding, no token, and 400 connections trickling
/// header lines at a daemon limited to 256 open files — the crawl must finish,
/// `/status` must answer and the daemon's descriptors stay bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_refuses_foreign_requests_and_outlasts_slow_clients() {
    use std::os::unix::fs::PermissionsExt;
    let mut f = Fixture::start_with(
        2,
        ProcessLimits {
            nofile: Some(256),
            umask: None,
        },
    )
    .await;
    f.wait_note("READY=1").await;
    let token = f.state_dir().join("admin.token");
    let mode = std::fs::metadata(&token).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", token.display());
    std::fs::write(f.job_path("alpha"), f.job("alpha", "site-a.test", 0, "bfs")).unwrap();
    f.wait_for("alpha done", |r| {
        is(r, "alpha", Phase::Done, Some(StopReason::FrontierEmpty))
    })
    .await;

    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let purge = format!("http://{}/jobs/alpha/purge", f.admin);
    // What any web page can make a browser send.
    let r = http
        .post(&purge)
        .header("Origin", "http://evil.example")
        .header("Content-Type", "text/plain")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::FORBIDDEN);
    let r = http.post(&purge).send().await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);
    // A rebinding page reading /status under its own name.
    let r = http
        .get(format!("http://{}/status", f.admin))
        .header("Host", format!("rebind.example:{}", f.admin.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::MISDIRECTED_REQUEST);
    let r = daemon::status(f.admin).await.unwrap();
    assert!(job(&r, "alpha").is_some(), "nothing was purged");

    // Slow clients, more than the daemon has descriptors, while a job crawls.
    let pid = f.daemon.child.id();
    let flood = Flood::start(f.admin, 400);
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(open_fds(pid), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    std::fs::write(f.job_path("beta"), f.job("beta", "site-b.test", 0, "sb")).unwrap();
    let r = f
        .wait_for("beta done under the flood", |r| {
            is(r, "beta", Phase::Done, Some(StopReason::FrontierEmpty))
        })
        .await;
    let beta = job(&r, "beta").unwrap();
    assert_eq!(beta.counters.targets, PAGES as u64, "{:?}", beta.counters);
    assert_eq!(beta.counters.fetch_errors, 0, "{:?}", beta.counters);
    // `forager status` (a fresh connection) answers during the flood too.
    let out = crate::harness::bin::output_blocking(crate::harness::bin::std_command().args([
        "status",
        "--admin",
        &f.admin.to_string(),
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sampler.abort();
    let opened = flood.stop().await;
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("flood: {opened} connections opened; daemon peak open files {peak}");
    assert!(opened >= 400, "the flood opened {opened} connections");
    assert!(
        peak < 64 + 100,
        "the daemon held {peak} files open: the connection cap did not hold"
    );
    let log = f.daemon.log();
    assert!(!log.contains("Too many open files"), "{log}");
    assert!(!log.contains("paused"), "{log}");

    // `forager purge` through the CLI: it reads the token from the state folder.
    let out = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["purge", "alpha", "--config"])
            .arg(&f.config_path),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        f.daemon.log()
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("purged"));
    let (status, _) = f.terminate();
    assert!(status.success(), "{status:?}\n{}", f.daemon.log());
    let _ = f.server.shutdown().await;
}

/// The load harness end to end at a tiny scale: three jobs for a few seconds.
#[test]
fn the_daemon_load_bench_reports_rates_memory_and_a_clean_exit() {
    let out = tempfile::tempdir().unwrap();
    let run = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args([
                "bench",
                "--daemon-load",
                "--jobs",
                "3",
                "--site",
                "synthetic:small",
                "--warmup",
                "1s",
                "--duration",
                "3s",
                "--sample",
                "1s",
                "--out",
            ])
            .arg(out.path())
            .env_remove("RUST_LOG"),
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("daemon load: 3 jobs on synthetic:small"),
        "{stdout}"
    );
    // Three sites at one request per second each: some requests, never more than the delay allows.
    let rate: f64 = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("requests/s (GET + HEAD)"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no request rate in\n{stdout}"));
    assert!(rate > 0.5 && rate <= 3.5, "{rate} requests/s\n{stdout}");
    assert!(stdout.contains("daemon peak RSS (VmHWM)"), "{stdout}");
    assert!(stdout.contains("exit status 0"), "{stdout}");
    assert!(out.path().join("daemon-load-3.txt").is_file());
    // The work folder (jobs, state, logs) is gone.
    assert!(!stderr.contains("could not remove"), "{stderr}");
}

/// The value of `key=` in a systemd unit's text (the last assignment wins, as in systemd).
fn unit_setting(unit: &str, key: &str) -> Option<String> {
    unit.lines()
        .filter_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
        .next_back()
        .map(|v| v.trim().to_string())
}

/// The .deb's unit (debian/forager.service, installed by `cargo deb`) is the
/// repository's unit with the binary where the package puts it: every
/// setting alike but ExecStart, which names /usr/bin instead of /usr/local/bin.
#[test]
fn the_packaged_unit_is_the_repositorys_with_the_binary_in_usr_bin() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let settings = |file: &str| -> Vec<String> {
        std::fs::read_to_string(repo.join(file))
            .unwrap()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    let unit = settings("systemd/forager.service");
    let packaged = settings("debian/forager.service");
    let moved: Vec<String> = unit
        .iter()
        .map(|l| {
            l.replace(
                "ExecStart=/usr/local/bin/forager ",
                "ExecStart=/usr/bin/forager ",
            )
        })
        .collect();
    assert_ne!(
        moved, unit,
        "the unit's ExecStart names /usr/local/bin/forager"
    );
    assert_eq!(packaged, moved);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_units_group_reads_the_harvest_and_nobody_else_does() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let unit = std::fs::read_to_string(repo.join("systemd/forager.service")).unwrap();
    // A dynamic user's state sits in /var/lib/private, which only root may enter.
    assert_eq!(unit_setting(&unit, "DynamicUser"), None);
    assert_eq!(unit_setting(&unit, "User").as_deref(), Some("forager"));
    assert_eq!(unit_setting(&unit, "Group").as_deref(), Some("forager"));
    let sysusers = std::fs::read_to_string(repo.join("systemd/forager.sysusers")).unwrap();
    assert!(
        sysusers.lines().any(|l| l.starts_with("u forager ")),
        "the sysusers file creates user and group forager:\n{sysusers}"
    );
    assert_eq!(
        unit_setting(&unit, "StateDirectoryMode").as_deref(),
        Some("0750")
    );
    let documentation = unit_setting(&unit, "Documentation").unwrap();
    assert!(
        documentation.starts_with("file:/usr/share/doc/forager/"),
        "{documentation}"
    );
    let umask = unit_setting(&unit, "UMask").unwrap();
    let umask = libc::mode_t::from_str_radix(&umask, 8).unwrap();

    let mut f = Fixture::start_with(
        1,
        ProcessLimits {
            nofile: None,
            umask: Some(umask),
        },
    )
    .await;
    f.wait_note("READY=1").await;
    std::fs::write(f.job_path("open"), f.job("open", "site-a.test", 0, "bfs")).unwrap();
    f.wait_for("open done", |r| {
        is(r, "open", Phase::Done, Some(StopReason::FrontierEmpty))
    })
    .await;
    let (status, _) = f.terminate();
    assert!(status.success(), "{}", f.daemon.log());

    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let targets = f.state_dir().join("targets").join("open");
    let mut files = 0;
    let mut stack = vec![targets.clone()];
    while let Some(dir) = stack.pop() {
        // Group members enter and list every folder; others do not.
        assert_eq!(mode(&dir) & 0o057, 0o050, "{}", dir.display());
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                assert_eq!(mode(&path) & 0o077, 0o040, "{}", path.display());
                files += 1;
            }
        }
    }
    assert!(files > PAGES, "{files} files under {}", targets.display());
    assert_eq!(mode(&f.state_dir().join("admin.token")) & 0o077, 0);
    let _ = f.server.shutdown().await;
}

/// `forager ARGS…` against the fixture's config; its exit status, stdout and stderr.
fn cli(f: &Fixture, args: &[&str]) -> (bool, String, String) {
    let out = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(args)
            .arg("--config")
            .arg(&f.config_path)
            .arg("--state-dir")
            .arg(f.state_dir()),
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_and_purge_work_while_the_daemon_holds_the_store() {
    let mut f = Fixture::start(2).await;
    f.wait_note("READY=1").await;
    std::fs::write(f.job_path("learn"), f.job("learn", "site-a.test", 0, "sb")).unwrap();
    f.wait_for("learn done", |r| {
        is(r, "learn", Phase::Done, Some(StopReason::FrontierEmpty))
    })
    .await;

    let (ok, out, err) = cli(&f, &["explain", "learn"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.starts_with("job learn (sb): "), "{out}");
    assert!(out.contains("actions (groups of links"), "{out}");
    let (ok, _, err) = cli(&f, &["explain", "nosuch"]);
    assert!(!ok);
    assert!(err.contains("no stored state for job \"nosuch\""), "{err}");
    assert_eq!(err.matches("Cannot acquire lock").count(), 0, "{err}");

    let (ok, _, err) = cli(&f, &["purge", "nosuch"]);
    assert!(!ok);
    assert!(err.contains("no job named \"nosuch\""), "{err}");
    // Its file is still there: the job starts again from its seeds, and says so.
    let (ok, out, err) = cli(&f, &["purge", "learn"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("purged stored state of job learn"), "{out}");
    assert!(out.contains("starts again from its seeds"), "{out}");
    f.wait_for("learn done again", |r| {
        job(r, "learn").is_some_and(|j| j.checkpoints >= 1)
            && is(r, "learn", Phase::Done, Some(StopReason::FrontierEmpty))
    })
    .await;

    // Without its file, a purged job is gone and nothing restarts.
    std::fs::remove_file(f.job_path("learn")).unwrap();
    f.wait_for("learn stopped", |r| {
        job(r, "learn").is_some_and(|j| j.file.is_none())
    })
    .await;
    let (ok, out, err) = cli(&f, &["purge", "learn"]);
    assert!(ok, "{out}\n{err}");
    assert!(!out.contains("starts again"), "{out}");

    let (status, _) = f.terminate();
    assert!(status.success(), "{}", f.daemon.log());
    // Without a daemon the store answers: an unknown job is an error there too.
    let (ok, _, err) = cli(&f, &["purge", "learn"]);
    assert!(!ok);
    assert!(err.contains("no stored state for job \"learn\""), "{err}");
    let _ = f.server.shutdown().await;
}

/// Debian's headless Chromium. The browser test is compiled only where
/// `build.rs` found one (`have_chromium`) or `FORAGER_REQUIRE_CHROMIUM`
/// demands it (`.ci/run` installs it and sets that): a missing one here fails.
fn chromium() -> PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|dir| Path::new(dir).join(name))
                .find(|p| p.is_file())
        })
        .expect("no chromium on PATH (apt-get install chromium)")
}

/// Run headless Chromium on `url` with `args`; its stdout.
fn browse(bin: &Path, profile: &Path, args: &[&str], url: &str) -> String {
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("running chromium");
    assert!(
        out.status.success(),
        "chromium {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A daemon with two jobs on its dashboard: `catalogue` done, `endless`
/// still running.
async fn dashboard_fixture() -> Fixture {
    let f = Fixture::start(2).await;
    f.wait_note("READY=1").await;
    std::fs::write(
        f.job_path("catalogue"),
        f.job("catalogue", "site-a.test", 0, "sb"),
    )
    .unwrap();
    std::fs::write(
        f.job_path("endless"),
        f.job("endless", "endless.test", 0, "bfs"),
    )
    .unwrap();
    f.wait_for("catalogue done, endless under way", |r| {
        is(r, "catalogue", Phase::Done, Some(StopReason::FrontierEmpty))
            && job(r, "endless").is_some_and(|j| j.counters.requests > 20)
    })
    .await;
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_every_job_and_its_plot() {
    let mut f = dashboard_fixture().await;
    let page = reqwest::get(format!("http://{}/", f.admin)).await.unwrap();
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert!(page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .starts_with("default-src 'none'"));
    let html = page.text().await.unwrap();
    assert_eq!(html.matches("<tr class=\"job\">").count(), 2, "{html}");
    let plot = reqwest::get(format!("http://{}/jobs/catalogue/plot.svg", f.admin))
        .await
        .unwrap();
    assert_eq!(plot.headers()["content-type"], "image/svg+xml");
    let svg = plot.text().await.unwrap();
    assert!(svg.contains("<polyline"), "{svg}");
    let missing = reqwest::get(format!("http://{}/jobs/nosuch/plot.svg", f.admin))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    // The buttons: one form, posted as a browser posts it, with the token a person typed.
    assert!(html.contains("value=\"pause:endless\""), "{html}");
    assert!(html.contains("value=\"rerun:catalogue\""), "{html}");
    assert!(html.contains("name=\"token\""), "{html}");
    let token = std::fs::read_to_string(f.state_dir().join("admin.token")).unwrap();
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let press = |token: String, button: &'static str| {
        http.post(format!("http://{}/dashboard/drive", f.admin))
            .header("Origin", format!("http://{}", f.admin))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("token={}&do={button}", token.trim()))
            .send()
    };
    let r = press("wrong".into(), "pause:endless").await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("Wrong or missing admin token"));
    let r = press(token.clone(), "pause:catalogue").await.unwrap();
    assert_eq!(r.status(), 409);
    let page = r.text().await.unwrap();
    assert!(page.contains("is done, not running"), "{page}");
    assert!(page.contains("href=\"/\""), "a way back: {page}");
    // A cross-site form cannot press it, token or not.
    let r = http
        .post(format!("http://{}/dashboard/drive", f.admin))
        .header("Origin", "http://evil.example")
        .body(format!("token={}&do=pause:endless", token.trim()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = press(token.clone(), "pause:endless").await.unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/");
    f.wait_for("endless paused", |r| {
        job(r, "endless").is_some_and(|j| j.state == Phase::Paused && j.paused_by_user)
    })
    .await;
    let html = reqwest::get(format!("http://{}/", f.admin))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("value=\"resume:endless\""), "{html}");
    let r = press(token.clone(), "resume:endless").await.unwrap();
    assert_eq!(r.status(), 303);
    f.wait_for("endless running again", |r| {
        job(r, "endless").is_some_and(|j| j.state == Phase::Running)
    })
    .await;
    let (status, _) = f.terminate();
    assert!(status.success(), "{}", f.daemon.log());
    let _ = f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs a headless chromium on PATH (apt-get install chromium)"
)]
async fn the_dashboard_shows_every_job_and_its_plot_in_a_browser() {
    let mut f = dashboard_fixture().await;
    {
        let bin = chromium();
        let url = format!("http://{}/", f.admin);
        let profile = f.dir.path().join("chromium-profile");
        let dom = browse(&bin, &profile, &["--dump-dom"], &url);
        assert!(dom.contains("<td class=\"done\">done</td>"), "{dom}");
        assert!(dom.contains("<td class=\"running\">running</td>"), "{dom}");
        assert!(dom.contains("src=\"/jobs/endless/plot.svg\""), "{dom}");
        // A button per job, by state, in the form the browser would post.
        assert!(dom.contains("value=\"pause:endless\""), "{dom}");
        assert!(dom.contains("value=\"rerun:catalogue\""), "{dom}");
        assert!(dom.contains("action=\"/dashboard/drive\""), "{dom}");
        let shot = f.dir.path().join("dashboard.png");
        browse(
            &bin,
            &profile,
            &[
                &format!("--screenshot={}", shot.display()),
                "--window-size=1100,760",
                "--hide-scrollbars",
            ],
            &url,
        );
        let png = std::fs::read(&shot).expect("chromium wrote no screenshot");
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        // A blank page compresses to a few KiB; two tables and plots do not.
        assert!(png.len() > 20_000, "{} bytes: an empty page?", png.len());
        // `FORAGER_DASHBOARD_SCREENSHOT=docs/dashboard.png` refreshes the README's picture.
        if let Some(keep) = std::env::var_os("FORAGER_DASHBOARD_SCREENSHOT") {
            std::fs::write(keep, &png).unwrap();
        }
        // Paused (as the pause button does): the browser shows it with resume and rerun.
        let token = std::fs::read_to_string(f.state_dir().join("admin.token")).unwrap();
        let (status, body) = post_action(&f, "endless", "pause", token.trim()).await;
        assert_eq!(status, 200, "{body}");
        f.wait_for("endless paused", |r| {
            job(r, "endless").is_some_and(|j| j.state == Phase::Paused && j.paused_by_user)
        })
        .await;
        let dom = browse(&bin, &profile, &["--dump-dom"], &url);
        assert!(dom.contains("<td class=\"paused\">paused</td>"), "{dom}");
        assert!(dom.contains("value=\"resume:endless\""), "{dom}");
        assert!(dom.contains("value=\"rerun:endless\""), "{dom}");
        assert!(!dom.contains("value=\"pause:endless\""), "{dom}");
    }
    let (status, _) = f.terminate();
    assert!(status.success(), "{}", f.daemon.log());
    let _ = f.server.shutdown().await;
}

impl Fixture {
    /// Start the daemon again on the same config and state (after [`Fixture::terminate`]);
    /// its output goes to `log`.
    fn restart(&mut self, log: &str) {
        let mut command = crate::harness::bin::std_command();
        command
            .arg("daemon")
            .arg("--config")
            .arg(&self.config_path)
            .env("RUST_LOG", "info");
        self.daemon = DaemonProcess::start(&mut command, self.dir.path().join(log));
    }
}

/// `POST /jobs/NAME/ACTION` with `token`; the status and the body.
async fn post_action(f: &Fixture, name: &str, action: &str, token: &str) -> (u16, String) {
    let r = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("http://{}/jobs/{name}/{action}", f.admin))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// Pause, resume and rerun through the real binary: clear refusals, a pause
/// that stops fetching and holds across a daemon restart, the dashboard's
/// history (plot, accuracy, errors by kind) kept in the store, and no stale
/// stop reason on a job that runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_resume_and_rerun_drive_jobs_and_hold_across_restarts() {
    let mut f = Fixture::start(3).await;
    f.wait_note("READY=1").await;
    let port = f.server.port();
    // A catalogue with a dead seed beside the good one: one HTTP 404 to remember.
    let catalogue = JobFile::new("catalogue")
        .seed(format!("http://site-a.test:{port}/"))
        .seed(format!("http://site-a.test:{port}/missing"))
        .strategy("sb")
        .no_early_stop()
        .toml();
    std::fs::write(f.job_path("catalogue"), catalogue).unwrap();
    std::fs::write(
        f.job_path("endless"),
        f.job("endless", "endless.test", 30, "bfs"),
    )
    .unwrap();
    let r = f
        .wait_for("catalogue done, endless at its budget", |r| {
            is(r, "catalogue", Phase::Done, Some(StopReason::FrontierEmpty))
                && is(r, "endless", Phase::Done, Some(StopReason::RequestBudget))
        })
        .await;
    let before = job(&r, "catalogue").unwrap().clone();
    assert_eq!(
        before.errors_by_kind.get("HTTP 404"),
        Some(&1),
        "{:?}",
        before.errors_by_kind
    );

    // A bigger budget runs it again: while it runs, no stop reason of the run before.
    std::fs::write(
        f.job_path("endless"),
        f.job("endless", "endless.test", 0, "bfs"),
    )
    .unwrap();
    let r = f
        .wait_for("endless running past its old budget", |r| {
            job(r, "endless").is_some_and(|j| j.state == Phase::Running && j.counters.requests > 40)
        })
        .await;
    assert_eq!(job(&r, "endless").unwrap().stop_reason, None);

    // Refusals say why.
    let (ok, _, err) = cli(&f, &["pause", "nosuch"]);
    assert!(!ok);
    assert!(
        err.contains("404") && err.contains("no job named \"nosuch\""),
        "{err}"
    );
    let (ok, _, err) = cli(&f, &["resume", "endless"]);
    assert!(!ok);
    assert!(err.contains("is running, not paused"), "{err}");
    let (ok, _, err) = cli(&f, &["rerun", "endless"]);
    assert!(!ok);
    assert!(err.contains("pause it first"), "{err}");
    let (ok, _, err) = cli(&f, &["pause", "catalogue"]);
    assert!(!ok);
    assert!(err.contains("is done, not running"), "{err}");
    let (status, body) = post_action(&f, "endless", "pause", &"0".repeat(64)).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("admin.token"), "{body}");

    // Pause: it checkpoints and stops fetching.
    let (ok, out, err) = cli(&f, &["pause", "endless"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("job endless pauses"), "{out}");
    let r = f
        .wait_for("endless paused after its checkpoint", |r| {
            job(r, "endless")
                .is_some_and(|j| j.state == Phase::Paused && j.paused_by_user && j.checkpoints >= 1)
        })
        .await;
    let paused = job(&r, "endless").unwrap().clone();
    assert!(
        paused
            .detail
            .as_deref()
            .unwrap()
            .contains("forager resume endless"),
        "{:?}",
        paused.detail
    );
    assert_eq!(paused.request_rate_per_min, 0.0);
    let (ok, _, err) = cli(&f, &["pause", "endless"]);
    assert!(!ok);
    assert!(err.contains("already paused"), "{err}");

    // Rerun the finished catalogue from its seeds: a fresh run, its old manifest kept aside.
    let (ok, out, err) = cli(&f, &["rerun", "catalogue"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("runs again from its seeds"), "{out}");
    let r = f
        .wait_for("catalogue done again", |r| {
            job(r, "catalogue").is_some_and(|j| j.checkpoints >= 1)
                && is(r, "catalogue", Phase::Done, Some(StopReason::FrontierEmpty))
        })
        .await;
    let again = job(&r, "catalogue").unwrap().clone();
    assert_eq!(again.counters.targets, before.counters.targets);
    let targets = f.state_dir().join("targets").join("catalogue");
    let aside = std::fs::read_dir(&targets)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("manifest.superseded-")
        })
        .count();
    assert_eq!(
        aside, 1,
        "the first run's manifest is kept beside the new one"
    );
    // The catalogue's whole second run went by: the paused job fetched nothing meanwhile.
    assert_eq!(
        job(&r, "endless").unwrap().counters.requests,
        paused.counters.requests
    );
    let log = f.daemon.log();
    assert!(log.contains("job paused on request"), "{log}");
    assert!(log.contains("job run again on request"), "{log}");

    // A restart: the pause holds, and the dashboard keeps its history.
    let (status, _) = f.terminate();
    assert!(status.success(), "{}", f.daemon.log());
    f.restart("daemon2.log");
    let r = f
        .wait_for("both jobs back", |r| {
            is(r, "catalogue", Phase::Done, Some(StopReason::FrontierEmpty))
                && job(r, "endless").is_some_and(|j| j.state == Phase::Paused && j.paused_by_user)
        })
        .await;
    let cat = job(&r, "catalogue").unwrap();
    assert_eq!(cat.classifier_accuracy, again.classifier_accuracy);
    assert_eq!(cat.errors_by_kind, again.errors_by_kind);
    assert_eq!(cat.last_error, again.last_error);
    assert!(
        cat.last_error
            .as_deref()
            .unwrap()
            .contains("/missing: HTTP 404"),
        "{:?}",
        cat.last_error
    );
    let svg = reqwest::get(format!("http://{}/jobs/catalogue/plot.svg", f.admin))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        svg.contains("<polyline"),
        "the plot starts from its history: {svg}"
    );
    let html = reqwest::get(format!("http://{}/", f.admin))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("(1 × HTTP 404)"), "{html}");
    assert!(html.contains("value=\"resume:endless\""), "{html}");
    assert_eq!(
        job(&r, "endless").unwrap().counters.requests,
        paused.counters.requests
    );

    // Resume: on from its checkpoint, not from zero.
    let (ok, out, err) = cli(&f, &["resume", "endless"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("resumes from its checkpoint"), "{out}");
    f.wait_for("endless fetching on", |r| {
        job(r, "endless").is_some_and(|j| {
            j.state == Phase::Running && j.counters.requests > paused.counters.requests + 10
        })
    })
    .await;
    let log = f.daemon.log();
    assert!(log.contains("job stays paused"), "{log}");
    assert!(log.contains("job resumed on request"), "{log}");
    let (status, _) = f.terminate();
    assert!(status.success(), "{}", f.daemon.log());
    let _ = f.server.shutdown().await;
}

/// SIGHUP lowering `max_jobs` below the running jobs: the newest go back to
/// waiting from a checkpoint, say so, and resume there when slots come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lower_max_jobs_sends_the_newest_jobs_back_to_wait() {
    let mut f = Fixture::start(2).await;
    f.wait_note("READY=1").await;
    std::fs::write(
        f.job_path("first"),
        f.job("first", "endless.test", 0, "bfs"),
    )
    .unwrap();
    f.wait_for("first running", |r| {
        job(r, "first").is_some_and(|j| j.state == Phase::Running && j.counters.requests > 0)
    })
    .await;
    std::fs::write(
        f.job_path("second"),
        f.job("second", "endless.test", 0, "bfs"),
    )
    .unwrap();
    f.wait_for("both fetching", |r| {
        r.running == 2 && r.jobs.iter().all(|j| j.counters.requests > 5)
    })
    .await;
    f.write_config(1, "");
    f.daemon.signal("HUP");
    let r = f
        .wait_for("second back to waiting", |r| {
            r.max_jobs == 1 && r.running == 1 && is(r, "second", Phase::Pending, None)
        })
        .await;
    let waiting = job(&r, "second").unwrap().clone();
    assert!(
        waiting
            .detail
            .as_deref()
            .unwrap()
            .contains("max_jobs was lowered"),
        "{:?}",
        waiting.detail
    );
    assert_eq!(job(&r, "first").unwrap().state, Phase::Running);
    wait_log(&f.daemon, "max_jobs is below the running jobs");
    assert!(f.daemon.log().contains("job=second"), "{}", f.daemon.log());
    // The running job goes on; the waiting one does not fetch.
    let first = job(&r, "first").unwrap().counters.requests;
    let r = f
        .wait_for("first fetching on", |r| {
            job(r, "first").is_some_and(|j| j.counters.requests > first + 20)
        })
        .await;
    assert_eq!(job(&r, "second").unwrap().state, Phase::Pending);
    let held = job(&r, "second").unwrap().counters.requests;
    assert!(held >= waiting.counters.requests, "{held}");
    // Slots back: it resumes from its checkpoint.
    f.write_config(2, "");
    f.daemon.signal("HUP");
    f.wait_for("second fetching again", |r| {
        job(r, "second")
            .is_some_and(|j| j.state == Phase::Running && j.counters.requests > held + 5)
    })
    .await;
    let (status, _) = f.terminate();
    assert!(status.success(), "{}", f.daemon.log());
    let _ = f.server.shutdown().await;
}
