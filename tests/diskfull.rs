//! A full disk pauses a crawl and loses nothing: `forager crawl` runs with
//! its state directory on a small tmpfs (in a user + mount namespace, so no
//! privileges are needed); the test fills the tmpfs mid-crawl, sees the job
//! pause with the system's error, frees the space and sees the job resume and
//! finish with the same manifest as an uninterrupted run, no duplicate rows,
//! and a store that opens cleanly.
//!
//! Needs `unshare --user --map-root-user --mount` (unprivileged user
//! namespaces); where the kernel forbids them the test says so and skips.

use forager::bench::server::{Site, SiteServer};
use forager::bench::synthetic::{Preset, SyntheticSite};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

mod common;
use common::manifest_by_final_url;

const HOST: &str = "full.test";

fn namespaces_available() -> bool {
    std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg("d=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs \"$d\"")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn write_job(dir: &Path, port: u16, start: &str) -> std::path::PathBuf {
    let path = dir.join("full.toml");
    let text = format!(
        "name = \"full\"\nseeds = [\"http://{HOST}:{port}{start}\"]\nseed = 5\n\n\
         [politeness]\ndelay = \"5ms\"\n\n[budget]\nearly_stop = false\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn crawl_args(job: &Path, state: &Path, port: u16) -> Vec<String> {
    vec![
        "crawl".into(),
        job.display().to_string(),
        "--state-dir".into(),
        state.display().to_string(),
        "--allow-private".into(),
        "--resolve".into(),
        format!("{HOST}=127.0.0.1:{port}"),
        "--checkpoint-interval".into(),
        "200ms".into(),
        "--no-progress".into(),
    ]
}

/// Mount a 32 MiB tmpfs on $STATE, crawl into it; once 10 targets are saved
/// fill it to the last byte; free it when the test creates $WORK/release;
/// copy the state out before the namespace (and its tmpfs) goes away.
const SCRIPT: &str = r#"
set -u
mount -t tmpfs -o size=32m tmpfs "$STATE" || exit 90
"$@" &
pid=$!
while [ "$(ls "$STATE/targets/full" 2>/dev/null | wc -l)" -lt 12 ]; do
    kill -0 $pid 2>/dev/null || { echo "crawl ended before the disk filled" >&2; exit 91; }
    sleep 0.02
done
dd if=/dev/zero of="$STATE/ballast" bs=64k 2>/dev/null
echo "FILLED $(df -k "$STATE" | tail -1)" >&2
while [ ! -e "$WORK/release" ]; do sleep 0.05; done
rm -f "$STATE/ballast"
wait $pid
code=$?
mkdir -p "$WORK/final"
rm -f "$STATE/ballast"
cp -a "$STATE/." "$WORK/final/"
exit $code
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_pauses_the_job_and_it_resumes_losing_nothing() {
    if !namespaces_available() {
        eprintln!("SKIPPED: unprivileged user and mount namespaces are not available here");
        return;
    }
    let site = SyntheticSite::preset(Preset::Small, 2).unwrap();
    let start = site.start_path().to_string();
    let sites: Vec<(String, Arc<dyn Site>)> = vec![(HOST.to_string(), Arc::new(site))];
    let server = SiteServer::start(sites).await.unwrap();
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let job = write_job(work, port, &start);
    let bin = env!("CARGO_BIN_EXE_forager");

    // The reference: one uninterrupted run on the normal disk.
    let reference = work.join("reference");
    let status = tokio::process::Command::new(bin)
        .args(crawl_args(&job, &reference, port))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let expected = manifest_by_final_url(&reference.join("targets/full"));
    assert!(expected.len() > 100, "{} targets", expected.len());

    // The same crawl on a tmpfs that fills up mid-crawl.
    let state = work.join("state");
    std::fs::create_dir_all(&state).unwrap();
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
        .arg(bin)
        .args(crawl_args(&job, &state, port))
        .env("STATE", &state)
        .env("RUST_LOG", "forager::engine=info,forager::store=info")
        .env("WORK", work)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = Vec::new();

    // Wait for the pause; the error must name the cause.
    let paused = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            log.push(line.clone());
            if line.contains("job paused") {
                return Some(line);
            }
        }
        None
    })
    .await;
    let paused = match paused {
        Ok(Some(line)) => line,
        _ => panic!("the job never paused; log:\n{}", log.join("\n")),
    };
    assert!(
        paused.contains("No space left on device"),
        "the pause should say why: {paused}"
    );

    // While paused the job fetches (almost) nothing: at most one retried step.
    let before = server.log().len();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let during = server.log().len() - before;
    assert!(during <= 3, "{during} requests while paused");

    // Space returns: the job resumes and finishes.
    std::fs::write(work.join("release"), b"").unwrap();
    let rest = tokio::spawn(async move {
        let mut rest = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push(line);
        }
        rest
    });
    let status = tokio::time::timeout(Duration::from_secs(120), child.wait())
        .await
        .expect("the crawl did not finish after space returned")
        .unwrap();
    let rest = rest.await.unwrap();
    log.extend(rest);
    assert!(status.success(), "exit {status}; log:\n{}", log.join("\n"));
    assert!(
        log.iter().any(|l| l.contains("job resumed")),
        "no resume in the log:\n{}",
        log.join("\n")
    );

    // Nothing lost, nothing duplicated (manifest_by_final_url rejects duplicates).
    if let Ok(p) = std::env::var("DISKFULL_LOG") {
        std::fs::write(p, log.join("\n")).unwrap();
    }
    let final_state = work.join("final");
    let got = manifest_by_final_url(&final_state.join("targets/full"));
    let missing: Vec<_> = expected.keys().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<_> = got.keys().filter(|k| !expected.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} targets, {} expected; missing {missing:?}; extra {extra:?}",
        got.len(),
        expected.len()
    );
    assert_eq!(got, expected, "same URLs, different content");
    // No partial files left behind, and the store opens and holds the same rows.
    let partial = std::fs::read_dir(final_state.join("targets/full/.partial"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(partial, 0, "partial target files left");
    let store = forager::store::Store::open(&final_state, 1 << 20).unwrap();
    assert_eq!(store.manifest_rows("full").unwrap().len(), expected.len());
    let _ = server.shutdown().await;
}
