//! The daemon end to end: the real binary with a temporary config, three
//! loopback sites, job files dropped into its watched folder, its status API
//! and metrics, the systemd notification protocol (a datagram socket passed
//! as `NOTIFY_SOCKET`), SIGHUP and SIGTERM, and the store it leaves behind.
//!
//! Every wait is bounded: poll `/status` until a condition holds or a
//! deadline passes, then fail with the last report and the daemon's log.

use forager::daemon::{self, jobs::Phase, StatusReport};
use forager::sites::{Site, SiteRequest, SiteResponse, SiteServer};
use forager::store::{StopReason, Store};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
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

/// The daemon process; killed if the test ends before it exits.
struct DaemonProcess {
    child: Child,
    log: PathBuf,
}

impl DaemonProcess {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Wait for the exit, at most `within`.
    fn wait(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("waiting for the daemon") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            eprintln!("--- daemon log ---\n{}", self.log());
        }
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

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
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
    format!(
        "name = \"{name}\"\n\
         seeds = [\"http://{host}:{port}/\"]\n\
         strategy = \"{strategy}\"\n\
         [budget]\n\
         requests = {requests}\n\
         early_stop = false\n\
         [politeness]\n\
         delay = \"{delay}\"\n"
    )
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
        let sites: Vec<(String, Arc<dyn Site>)> = vec![
            ("site-a.test".into(), Arc::new(Catalogue)),
            ("site-b.test".into(), Arc::new(Catalogue)),
            ("endless.test".into(), Arc::new(Endless)),
        ];
        let server = SiteServer::start(sites).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let jobs_dir = dir.path().join("jobs.d");
        std::fs::create_dir(&jobs_dir).unwrap();
        let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let config_path = dir.path().join("forager.toml");
        let notify_path = dir.path().join("notify.sock");
        let notes = listen_notify(&notify_path);
        write_config(&config_path, admin, server.port(), max_jobs, "");
        let log = dir.path().join("daemon.log");
        let log_file = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_forager"))
            .arg("daemon")
            .arg("--config")
            .arg(&config_path)
            .env("NOTIFY_SOCKET", &notify_path)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .expect("starting forager daemon");
        Fixture {
            server,
            dir,
            jobs_dir,
            config_path,
            admin,
            notes,
            daemon: DaemonProcess { child, log },
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
    let out = Command::new(env!("CARGO_BIN_EXE_forager"))
        .args(["status", "--admin", &f.admin.to_string()])
        .output()
        .unwrap();
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
    daemon::purge_via(f.admin, "alpha").await.unwrap();
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
        daemon::purge_via(f.admin, "gamma").await.unwrap_err()
    );
    assert!(
        refused.contains("409") && refused.contains("running"),
        "{refused}"
    );
    daemon::purge_via(f.admin, "endless").await.unwrap();
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
    // Still one at a time a little later: the slot is not handed out twice.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = daemon::status(f.admin).await.unwrap();
    assert_eq!((r.running, r.pending), (1, 2));

    // SIGHUP applies log_level before the rest of the reload: the quieter filter hides its info lines.
    f.write_config(3, "log_level = \"warn,forager::daemon::logging=info\"");
    f.daemon.signal("HUP");
    f.wait_for("all three running", |r| r.running == 3 && r.max_jobs == 3)
        .await;
    let log = f.daemon.log();
    assert!(
        log.contains("log filter changed filter=warn,forager::daemon::logging=info"),
        "{log}"
    );
    assert!(!log.contains("max_jobs changed from=1 to=3"), "{log}");
    assert!(!log.contains('\u{1b}'), "no colours in a log file");

    // Fewer slots: running jobs keep theirs; a restarted job waits for a free one.
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

/// The load harness end to end at a tiny scale: three jobs for a few seconds.
#[test]
fn the_daemon_load_bench_reports_rates_memory_and_a_clean_exit() {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_forager"))
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
        .env_remove("RUST_LOG")
        .output()
        .expect("running forager bench --daemon-load");
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
