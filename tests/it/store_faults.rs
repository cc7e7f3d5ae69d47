//! The store and the manifest when state goes away or goes bad, through the
//! real binary: a purge and a lost store never leave duplicate manifest rows,
//! an empty store next to a harvest is refused, and `forager repair` gets a
//! job going again.

use crate::harness::{manifest_by_final_url, serve_small_site, Crawl, JobFile};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

const HOST: &str = "faults.test";
const JOB: &str = "faults";

fn job(dir: &Path, port: u16, start: &str) -> std::path::PathBuf {
    JobFile::new(JOB)
        .seed(format!("http://{HOST}:{port}{start}"))
        .strategy("bfs")
        .rng_seed(3)
        .delay("0s")
        .set("budget", "requests", 400)
        .no_early_stop()
        .write(dir)
}

/// `forager ARGS…` to the end (under the harness's deadline).
async fn forager(args: &[&std::ffi::OsStr]) -> Output {
    crate::harness::bin::output(crate::harness::bin::command().args(args)).await
}

async fn crawl(job: &Path, state: &Path, port: u16) -> Output {
    Crawl::loopback(job, state)
        .resolve(HOST, port)
        .output()
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

/// A job file `NAME.toml` on the small site: 300 requests, then it stops.
fn named_job(dir: &Path, name: &str, port: u16, start: &str, seed: u64) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let text = format!(
        "name = \"{name}\"\nseeds = [\"http://{HOST}:{port}{start}\"]\nstrategy = \"bfs\"\nseed = {seed}\n\n\
         [politeness]\ndelay = \"0s\"\n\n[budget]\nrequests = 300\nearly_stop = false\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A state folder of `jobs` finished jobs (one `forager crawl` each); their job files.
async fn state_of_jobs(
    dir: &Path,
    state: &Path,
    jobs: usize,
    port: u16,
    start: &str,
) -> Vec<(String, std::path::PathBuf)> {
    let mut files = Vec::new();
    for j in 0..jobs {
        let name = format!("job{j}");
        let file = named_job(dir, &name, port, start, j as u64);
        let resolve = format!("{HOST}=127.0.0.1:{port}");
        let out = forager(&[
            "crawl".as_ref(),
            file.as_os_str(),
            "--state-dir".as_ref(),
            state.as_os_str(),
            "--allow-private".as_ref(),
            "--resolve".as_ref(),
            resolve.as_ref(),
            "--no-progress".as_ref(),
        ])
        .await;
        assert!(out.status.success(), "{}", text(&out));
        files.push((name, file));
    }
    files
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// The jobs `forager repair` says it copied.
fn copied_jobs(out: &Output) -> std::collections::BTreeSet<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("job ")?.strip_suffix(": copied"))
        .map(str::to_string)
        .collect()
}

/// Issue #36 item 7: `forager repair` on a store cut short by 1 byte, 4 KiB
/// and 1 MiB keeps every job that still reads: as many as from the same
/// file with those bytes zeroed at its full length (all of them for one
/// byte), and each kept job resumes from its own state and manifest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_keeps_every_job_of_a_store_cut_short() {
    const JOBS: usize = 8;
    let (server, start) = serve_small_site(HOST, 1).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let jobs = state_of_jobs(tmp.path(), &base, JOBS, port, &start).await;
    let len = std::fs::metadata(base.join("forager.redb")).unwrap().len();
    assert!(
        len > 2 << 20,
        "a store of {len} bytes is too small to cut 1 MiB off"
    );
    let manifests: BTreeMap<String, BTreeMap<String, String>> = jobs
        .iter()
        .map(|(name, _)| {
            let rows = manifest_by_final_url(&base.join("targets").join(name));
            assert!(!rows.is_empty(), "{name} harvested nothing");
            (name.clone(), rows)
        })
        .collect();
    let repair = |state: &Path| {
        let state = state.to_path_buf();
        async move { forager(&["repair".as_ref(), "--state-dir".as_ref(), state.as_os_str()]).await }
    };
    for cut in [1u64, 4096, 1 << 20] {
        // What still reads: the same file, its last `cut` bytes zeroed.
        let zeroed = tmp.path().join(format!("zeroed-{cut}"));
        copy_dir(&base, &zeroed);
        let db = std::fs::OpenOptions::new()
            .write(true)
            .open(zeroed.join("forager.redb"))
            .unwrap();
        db.set_len(len - cut).unwrap();
        db.set_len(len).unwrap();
        let out = repair(&zeroed).await;
        let readable = copied_jobs(&out);

        let state = tmp.path().join(format!("cut-{cut}"));
        copy_dir(&base, &state);
        std::fs::OpenOptions::new()
            .write(true)
            .open(state.join("forager.redb"))
            .unwrap()
            .set_len(len - cut)
            .unwrap();
        let out = repair(&state).await;
        let kept = copied_jobs(&out);
        eprintln!(
            "store of {len} bytes cut by {cut}: {} of {JOBS} jobs kept ({} read from the zeroed file)",
            kept.len(),
            readable.len()
        );
        assert!(kept.is_superset(&readable), "cut {cut}: {}", text(&out));
        if cut == 1 {
            assert_eq!(kept.len(), JOBS, "{}", text(&out));
            assert!(out.status.success(), "{}", text(&out));
        }
        // A kept job resumes: its manifest stays where it is, and a rerun
        // (its budget is spent) ends at once with the same rows.
        for (name, file) in &jobs {
            if !kept.contains(name) {
                continue;
            }
            assert_eq!(
                manifest_by_final_url(&state.join("targets").join(name)),
                manifests[name],
                "cut {cut}: {name}"
            );
            let resolve = format!("{HOST}=127.0.0.1:{port}");
            let out = forager(&[
                "crawl".as_ref(),
                file.as_os_str(),
                "--state-dir".as_ref(),
                state.as_os_str(),
                "--allow-private".as_ref(),
                "--resolve".as_ref(),
                resolve.as_ref(),
                "--no-progress".as_ref(),
            ])
            .await;
            assert!(out.status.success(), "cut {cut}: {name}: {}", text(&out));
            assert_eq!(
                manifest_by_final_url(&state.join("targets").join(name)),
                manifests[name],
                "cut {cut}: {name} after its rerun"
            );
        }
    }
    let _ = server.shutdown().await;
}

/// Issue #36 item 9: bytes flipped anywhere in a store of three jobs; a
/// crawl of one of them either runs, or stops with an error that names
/// `forager repair` — never a panic's message, never a hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_store_names_repair_and_never_panics() {
    let (server, start) = serve_small_site(HOST, 1).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let jobs = state_of_jobs(tmp.path(), &base, 3, port, &start).await;
    let bytes = std::fs::read(base.join("forager.redb")).unwrap();
    let resolve = format!("{HOST}=127.0.0.1:{port}");
    let steps = 48;
    let mut refused = 0;
    for step in 0..steps {
        let at = bytes.len() * step / steps;
        let state = tmp.path().join(format!("flipped-{step}"));
        copy_dir(&base, &state);
        let mut damaged = bytes.clone();
        for b in damaged.iter_mut().skip(at).take(512) {
            *b ^= 0xa5;
        }
        std::fs::write(state.join("forager.redb"), &damaged).unwrap();
        let args: [&std::ffi::OsStr; 8] = [
            "crawl".as_ref(),
            jobs[1].1.as_os_str(),
            "--state-dir".as_ref(),
            state.as_os_str(),
            "--allow-private".as_ref(),
            "--resolve".as_ref(),
            resolve.as_ref(),
            "--no-progress".as_ref(),
        ];
        let run = forager(&args);
        let Ok(out) = tokio::time::timeout(std::time::Duration::from_secs(120), run).await else {
            panic!("bytes flipped at {at}: the crawl hangs");
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "bytes flipped at {at}: {}",
            text(&out)
        );
        if !out.status.success() {
            refused += 1;
            assert!(
                stderr.contains("forager repair --state-dir"),
                "bytes flipped at {at}: {}",
                text(&out)
            );
        }
        let _ = std::fs::remove_dir_all(&state);
    }
    eprintln!("{refused} of {steps} damaged stores refused, each naming forager repair");
    assert!(refused >= 3, "the damage went unnoticed: {refused} refused");
    let _ = server.shutdown().await;
}

/// Issue #36 item 9, the abort: redb panicked on a damaged page, and a
/// destructor of its (a table's, a transaction's: they unwrap a mutex the
/// first panic poisoned) panicked again during the unwind; the runtime then
/// aborts (`thread caused non-unwinding panic. aborting.`), which no
/// `catch_unwind` stops. Flipped bytes hit that only at some offsets of some
/// layouts, so the crash point `store-read` makes the same double panic in
/// the N-th store read: the crawl must still end on the damaged-store error
/// naming `forager repair`, with its exit code, never on a signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_during_a_store_panic_unwind_names_repair_not_abort() {
    use std::os::unix::process::ExitStatusExt;
    let (server, start) = serve_small_site(HOST, 1).await;
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = job(tmp.path(), port, &start);
    for n in [1u32, 2] {
        let state = tmp.path().join(format!("state-{n}"));
        let mut c = Crawl::loopback(&job, &state).resolve(HOST, port).command();
        c.env(forager::crashpoint::ENV, format!("store-read:{n}"));
        let out = crate::harness::bin::output(&mut c).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), None, "store-read:{n}: {}", text(&out));
        assert!(
            !stderr.contains("non-unwinding"),
            "store-read:{n}: {}",
            text(&out)
        );
        assert_eq!(out.status.code(), Some(1), "store-read:{n}: {}", text(&out));
        assert!(
            stderr.contains("forager repair --state-dir"),
            "store-read:{n}: {}",
            text(&out)
        );
    }
    let _ = server.shutdown().await;
}
