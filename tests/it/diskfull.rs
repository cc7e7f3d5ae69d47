//! A full disk pauses a crawl and loses nothing: `forager crawl`, then the
//! daemon, run with their state directory on a small tmpfs (in a user + mount
//! namespace, so no privileges are needed); the test fills the tmpfs
//! mid-crawl, sees the job pause with the system's error (in the log; in
//! `/status` for the daemon), frees the space and sees the job resume and
//! finish with the same manifest as an uninterrupted run, no duplicate rows,
//! no partial files, and a store that opens cleanly.
//!
//! Needs `unshare --user --map-root-user --mount` (unprivileged user
//! namespaces); where the kernel forbids them (`build.rs` probes it: the
//! `have_userns` cfg) the tests are compiled ignored.

use forager::daemon::jobs::Phase;
use forager::store::StopReason;
use forager_bench::sites::server::{Site, SiteRequest, SiteResponse, SiteServer};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::harness::{manifest_by_final_url, serve_small_site, Crawl, JobFile};

const HOST: &str = "full.test";

fn write_job(dir: &Path, port: u16, start: &str) -> std::path::PathBuf {
    JobFile::new("full")
        .seed(format!("http://{HOST}:{port}{start}"))
        .rng_seed(5)
        .delay("5ms")
        .no_early_stop()
        .write(dir)
}

fn crawl_args(job: &Path, state: &Path, port: u16) -> Vec<String> {
    Crawl::new(job, state)
        .allow_private()
        .resolve(HOST, port)
        .checkpoint_interval("200ms")
        .args()
}

/// Mount a 32 MiB tmpfs on $CTL/state and run the command on it; once 12
/// targets are saved fill the tmpfs to the last byte; free it when the test
/// creates $CTL/release; SIGTERM the command when it creates $CTL/stop; copy
/// the state to $CTL/final before the namespace (and its tmpfs) goes away.
const SCRIPT: &str = r#"
set -u
STATE="$CTL/state"
mount -t tmpfs -o size=32m tmpfs "$STATE" || exit 90
"$@" &
pid=$!
( while [ ! -e "$CTL/stop" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
  kill -TERM $pid 2>/dev/null ) &
while [ "$(ls "$STATE/targets/full" 2>/dev/null | wc -l)" -lt 12 ]; do
    kill -0 $pid 2>/dev/null || { echo "crawl ended before the disk filled" >&2; exit 91; }
    sleep 0.02
done
dd if=/dev/zero of="$STATE/ballast" bs=64k 2>/dev/null
echo "FILLED $(df -k "$STATE" | tail -1)" >&2
while [ ! -e "$CTL/release" ]; do sleep 0.05; done
rm -f "$STATE/ballast"
wait $pid
code=$?
mkdir -p "$CTL/final"
cp -a "$STATE/." "$CTL/final/"
exit $code
"#;

/// The command under `SCRIPT`, its log collected as it comes.
struct OnTmpfs {
    ctl: PathBuf,
    child: tokio::process::Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl OnTmpfs {
    fn start(ctl: PathBuf, command: Vec<String>) -> OnTmpfs {
        std::fs::create_dir_all(ctl.join("state")).unwrap();
        let mut child = tokio::process::Command::new("unshare")
            .args([
                "--user",
                "--map-root-user",
                "--mount",
                "sh",
                "-c",
                SCRIPT,
                "sh",
            ])
            .args(command)
            .env("CTL", &ctl)
            .env("RUST_LOG", "forager::engine=info,forager::store=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        OnTmpfs { ctl, child, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    fn log_line(&self, needle: &str) -> Option<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.contains(needle))
            .cloned()
    }

    /// Poll `check` every 50 ms; panic with the log after `within`.
    async fn wait_for<T>(
        &self,
        what: &str,
        within: Duration,
        mut check: impl FnMut() -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(v) = check() {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting for {what}; log:\n{}", self.log());
    }

    fn release(&self) {
        std::fs::write(self.ctl.join("release"), b"").unwrap();
    }

    fn stop(&self) {
        std::fs::write(self.ctl.join("stop"), b"").unwrap();
    }

    /// Wait for the command to exit 0; returns the state copied out of the tmpfs.
    async fn finish(mut self) -> PathBuf {
        let Ok(status) = tokio::time::timeout(Duration::from_secs(120), self.child.wait()).await
        else {
            panic!("did not exit after space returned; log:\n{}", self.log());
        };
        let status = status.unwrap();
        assert!(status.success(), "exit {status}; log:\n{}", self.log());
        self.ctl.join("final")
    }
}

/// While paused the job fetches (almost) nothing: at most one retried step.
async fn assert_idle_while_paused(server: &SiteServer) {
    let before = server.log().len();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let during = server.log().len() - before;
    assert!(during <= 3, "{during} requests while paused");
}

/// Nothing lost or duplicated, no partial files, and the store opens.
fn assert_complete(state: &Path, expected: &BTreeMap<String, String>) {
    let got = manifest_by_final_url(&state.join("targets/full"));
    let missing: Vec<_> = expected.keys().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<_> = got.keys().filter(|k| !expected.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} targets, {} expected; missing {missing:?}; extra {extra:?}",
        got.len(),
        expected.len()
    );
    assert_eq!(&got, expected, "same URLs, different content");
    let partial = std::fs::read_dir(state.join("targets/full/.partial"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(partial, 0, "partial target files left");
    let store = forager::store::Store::open(state, 1 << 20).unwrap();
    assert_eq!(store.manifest_rows("full").unwrap().len(), expected.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_userns),
    ignore = "needs unprivileged user and mount namespaces (unshare)"
)]
async fn a_full_disk_pauses_the_job_and_it_resumes_losing_nothing() {
    let (server, start) = serve_small_site(HOST, 2).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let job = write_job(work, port, &start);
    let bin = crate::harness::bin::forager().to_string();

    // The reference: one uninterrupted run on the normal disk.
    let reference = work.join("reference");
    let status = crate::harness::bin::status(
        crate::harness::bin::command().args(crawl_args(&job, &reference, port)),
    )
    .await;
    assert!(status.success());
    let expected = manifest_by_final_url(&reference.join("targets/full"));
    assert!(expected.len() > 100, "{} targets", expected.len());

    // `forager crawl`: the pause and the resume are in the log.
    let ctl = work.join("crawl");
    let mut command = vec![bin.clone()];
    command.extend(crawl_args(&job, &ctl.join("state"), port));
    let run = OnTmpfs::start(ctl, command);
    let paused = run
        .wait_for("the pause", Duration::from_secs(60), || {
            run.log_line("job paused")
        })
        .await;
    assert!(
        paused.contains("No space left on device"),
        "the pause should say why: {paused}"
    );
    assert_idle_while_paused(&server).await;
    run.release();
    run.wait_for("the resume", Duration::from_secs(60), || {
        run.log_line("job resumed")
    })
    .await;
    assert_complete(&run.finish().await, &expected);

    // The daemon: the pause and its cause are in /status, and the job finishes.
    let ctl = work.join("daemon");
    let jobs_dir = ctl.join("jobs.d");
    std::fs::create_dir_all(&jobs_dir).unwrap();
    std::fs::copy(&job, jobs_dir.join("full.toml")).unwrap();
    let admin: SocketAddr = crate::harness::sites::admin_addr();
    let config = ctl.join("forager.toml");
    std::fs::write(
        &config,
        format!(
            "jobs_dir = \"jobs.d\"\nstate_dir = \"state\"\nadmin_listen = \"{admin}\"\n\
             checkpoint_interval = \"200ms\"\nallow_private = true\n\
             [resolve]\n\"{HOST}\" = \"127.0.0.1:{port}\"\n"
        ),
    )
    .unwrap();
    let run = OnTmpfs::start(
        ctl,
        vec![
            bin,
            "daemon".into(),
            "--config".into(),
            config.display().to_string(),
        ],
    );
    let status = |phase: Phase| {
        let rt = tokio::runtime::Handle::current();
        move || {
            let report =
                tokio::task::block_in_place(|| rt.block_on(forager::daemon::status(admin))).ok()?;
            let job = report.jobs.into_iter().find(|j| j.name == "full")?;
            (job.state == phase).then_some(job)
        }
    };
    let paused = run
        .wait_for(
            "paused in /status",
            Duration::from_secs(60),
            status(Phase::Paused),
        )
        .await;
    let error = paused.last_error.unwrap_or_default();
    assert!(
        error.contains("No space left on device"),
        "status error: {error}"
    );
    assert_idle_while_paused(&server).await;
    run.release();
    let done = run
        .wait_for(
            "done in /status",
            Duration::from_secs(120),
            status(Phase::Done),
        )
        .await;
    assert_eq!(done.stop_reason, Some(StopReason::FrontierEmpty));
    run.stop();
    assert_complete(&run.finish().await, &expected);
    let _ = server.shutdown().await;
}

/// Ten CSV files linked from the home page, then a tree of `pages` HTML
/// pages. `SCRIPT` fills the disk at 12 names in the job's folder: the ten
/// files, `crawl.log` and `manifest.jsonl` (written at the checkpoint after
/// them). The crawl then writes nothing but its log until the next
/// checkpoint, so lines pile up for the log's next write.
struct PagesAfterFiles {
    pages: usize,
}

impl Site for PagesAfterFiles {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        if path == "/" {
            let files: String = (0..10)
                .map(|f| format!("<a href=\"/f{f}.csv\">file {f}</a>"))
                .collect();
            return SiteResponse::html(format!(
                "<html><body>{files}<a href=\"/p/0\">pages</a></body></html>"
            ));
        }
        if let Some(f) = path.strip_prefix("/f").and_then(|f| f.strip_suffix(".csv")) {
            return SiteResponse::ok("text/csv", format!("file,value\n{f},1\n"));
        }
        let Some(n) = path
            .strip_prefix("/p/")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n < self.pages)
        else {
            return SiteResponse::not_found();
        };
        let links: String = [2 * n + 1, 2 * n + 2]
            .into_iter()
            .filter(|c| *c < self.pages)
            .map(|c| format!("<a href=\"/p/{c}\">page {c}</a>"))
            .collect();
        SiteResponse::html(format!(
            "<html><body><h1>page {n}</h1>{links}</body></html>"
        ))
    }
}

/// Issue #36 item 8: the disk fills while `crawl.log` has lines to write
/// (tmpfs takes what fits in the file's last page and refuses the rest);
/// after the space returns and the crawl ends, every line of the log is
/// whole JSON, which is what `jq` and the README's examples need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_userns),
    ignore = "needs unprivileged user and mount namespaces (unshare)"
)]
async fn a_full_disk_never_tears_a_crawl_log_line() {
    let host = "pages.test";
    let site: Arc<dyn Site> = Arc::new(PagesAfterFiles { pages: 1500 });
    let server = SiteServer::start(vec![(host.to_string(), site)])
        .await
        .unwrap();
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = JobFile::new("full")
        .seed(format!("http://{host}:{port}/"))
        .strategy("bfs")
        .delay("2ms")
        .no_early_stop()
        .set("output", "crawl_log", true)
        .write(tmp.path());
    let ctl = tmp.path().join("crawl");
    let mut command = vec![crate::harness::bin::forager().to_string()];
    command.extend(
        Crawl::new(&job, &ctl.join("state"))
            .allow_private()
            .resolve(host, port)
            // A second of pages between two flushes of the log: more lines
            // than the room left in its last page.
            .checkpoint_interval("1s")
            .args(),
    );
    let run = OnTmpfs::start(ctl, command);
    run.wait_for("the pause", Duration::from_secs(60), || {
        run.log_line("job paused")
    })
    .await;
    run.release();
    let state = run.finish().await;
    let dir = state.join("targets/full");
    let mut lines = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !name.starts_with("crawl.log") {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{name} ends mid-line"
        );
        for (i, line) in text.lines().enumerate() {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(line) {
                panic!("{name}:{}: torn line ({e}): {line:?}", i + 1);
            }
            lines += 1;
        }
    }
    // Lines written before the disk filled and after it emptied are there.
    let requests = server.log().len();
    assert!(
        lines > requests / 2,
        "{lines} log lines for {requests} requests"
    );
    assert_eq!(manifest_by_final_url(&dir).len(), 10);
    let _ = server.shutdown().await;
}
