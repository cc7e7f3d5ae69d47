//! Day-to-day use of the command line (issue 17): what a person sees when
//! output goes to a pipe or a file, and what the commands print.
//! Every crawl runs against loopback sites started here.

use forager::bench::fixture::{FixtureSite, FIXTURE_HOST, FIXTURE_MAX_BODY, OUTSIDE_HOST};
use forager::bench::server::SiteServer;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn job_file(dir: &Path, name: &str, port: u16, extra: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let text = format!(
        r#"name = "{name}"
seeds = ["http://{FIXTURE_HOST}:{port}/"]
strategy = "bfs"

[politeness]
delay = "0s"
robots = true

[limits]
max_body = {FIXTURE_MAX_BODY}
{extra}"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `forager crawl JOB` against the loopback server on `port`.
fn crawl_command(job: &Path, state: &Path, port: u16) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_forager"));
    let resolve = |h: &str| format!("{h}=127.0.0.1:{port}");
    c.arg("crawl")
        .arg(job)
        .arg("--state-dir")
        .arg(state)
        .arg("--allow-private")
        .args(["--resolve", &resolve(FIXTURE_HOST)])
        .args(["--resolve", &resolve(OUTSIDE_HOST)]);
    c
}

/// Item 10: `forager crawl … | tee` and Ctrl-C: stdout's reader is gone when
/// the summary is printed. The crawl must end normally, not panic (exit 101).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stdout_does_not_panic_the_summary() {
    let server = SiteServer::start(FixtureSite::new().with_crawl_delay(None).sites())
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let job = job_file(tmp.path(), "pipe", server.port(), "");
    let mut child = crawl_command(&job, &tmp.path().join("state"), server.port())
        .arg("--no-progress")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end of stdout before anything is written to it.
    drop(child.stdout.take());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The crawl itself finished and saved its targets.
    let manifest = tmp.path().join("state/targets/pipe/manifest.jsonl");
    assert!(std::fs::metadata(manifest).unwrap().len() > 0);
    let _ = server.shutdown().await;
}

/// Item 12: log lines written to a file or a pipe carry no ANSI colour codes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_to_a_file_have_no_colour_codes() {
    let server = SiteServer::start(FixtureSite::new().with_crawl_delay(None).sites())
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let job = job_file(tmp.path(), "plain", server.port(), "");
    let out = crawl_command(&job, &tmp.path().join("state"), server.port())
        .args(["--log", "info"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("crawl started"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "escape codes in {stderr:?}");
    let _ = server.shutdown().await;
}
