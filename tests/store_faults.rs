//! The store and the manifest when state goes away or goes bad, through the
//! real binary: a purge and a lost store never leave duplicate manifest rows,
//! an empty store next to a harvest is refused, and `forager repair` gets a
//! job going again.

mod common;
use common::{manifest_by_final_url, serve_small_site};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

const HOST: &str = "faults.test";
const JOB: &str = "faults";

fn job(dir: &Path, port: u16, start: &str) -> std::path::PathBuf {
    let path = dir.join("faults.toml");
    let text = format!(
        "name = \"{JOB}\"\nseeds = [\"http://{HOST}:{port}{start}\"]\nstrategy = \"bfs\"\nseed = 3\n\n\
         [politeness]\ndelay = \"0s\"\n\n[budget]\nrequests = 400\nearly_stop = false\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

async fn forager(args: &[&std::ffi::OsStr]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_forager"))
        .args(args)
        .output()
        .await
        .unwrap()
}

async fn crawl(job: &Path, state: &Path, port: u16) -> Output {
    let resolve = format!("{HOST}=127.0.0.1:{port}");
    forager(&[
        "crawl".as_ref(),
        job.as_os_str(),
        "--state-dir".as_ref(),
        state.as_os_str(),
        "--allow-private".as_ref(),
        "--resolve".as_ref(),
        resolve.as_ref(),
        "--no-progress".as_ref(),
    ])
    .await
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Final URL → sha256 of the job's manifest; panics on a duplicate row.
fn manifest(state: &Path) -> BTreeMap<String, String> {
    manifest_by_final_url(&state.join("targets").join(JOB))
}

fn superseded(state: &Path) -> usize {
    std::fs::read_dir(state.join("targets").join(JOB))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("manifest.superseded-")
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_and_a_lost_store_never_duplicate_manifest_rows() {
    let (server, start) = serve_small_site(HOST, 1).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = job(tmp.path(), port, &start);
    let state = tmp.path().join("state");

    let out = crawl(&job, &state, port).await;
    assert!(out.status.success(), "{}", text(&out));
    let first = manifest(&state);
    assert!(!first.is_empty(), "{}", text(&out));

    // `forager purge` (the documented way to change a strategy), then a rerun.
    let out = forager(&[
        "purge".as_ref(),
        JOB.as_ref(),
        "--state-dir".as_ref(),
        state.as_os_str(),
    ])
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("previous manifest moved to"),
        "{}",
        text(&out)
    );
    let out = crawl(&job, &state, port).await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        manifest(&state),
        first,
        "one row per URL after purge + rerun"
    );
    assert_eq!(superseded(&state), 1);

    // A lost store: the rerun starts afresh, the old rows go aside.
    std::fs::remove_file(state.join("forager.redb")).unwrap();
    let out = crawl(&job, &state, port).await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        manifest(&state),
        first,
        "one row per URL after a lost store"
    );
    assert_eq!(superseded(&state), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("moved aside"),
        "{}",
        text(&out)
    );
    let _ = server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_store_is_refused_and_repair_gets_the_job_going() {
    let (server, start) = serve_small_site(HOST, 1).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = job(tmp.path(), port, &start);
    let state = tmp.path().join("state");
    let out = crawl(&job, &state, port).await;
    assert!(out.status.success(), "{}", text(&out));
    let first = manifest(&state);
    assert!(!first.is_empty(), "{}", text(&out));

    // `forager repair` of a sound store copies the job whole: exit 0, nothing moved.
    let repair = |state: &Path| {
        let state = state.to_path_buf();
        async move { forager(&["repair".as_ref(), "--state-dir".as_ref(), state.as_os_str()]).await }
    };
    let out = repair(&state).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("job {JOB}: copied")),
        "{}",
        text(&out)
    );
    assert_eq!(manifest(&state), first);
    assert_eq!(superseded(&state), 0);

    // A zero-byte store next to the harvest is not taken for a new one.
    std::fs::write(state.join("forager.redb"), b"").unwrap();
    let out = crawl(&job, &state, port).await;
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("forager.redb is empty (0 bytes)"),
        "{}",
        text(&out)
    );
    assert_eq!(manifest(&state), first, "nothing written");

    // Repair: nothing to copy (exit 2), the old manifest goes aside, the job starts afresh.
    let out = repair(&state).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("manifest moved to"),
        "{}",
        text(&out)
    );
    let out = crawl(&job, &state, port).await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(manifest(&state), first);
    assert_eq!(superseded(&state), 1);
    let damaged = std::fs::read_dir(&state)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("forager.redb.damaged-")
        })
        .count();
    assert_eq!(damaged, 2, "each repair keeps the old database");
    let _ = server.shutdown().await;
}
