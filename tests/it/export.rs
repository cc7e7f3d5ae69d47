//! `forager export` (files, not WARC) through the real binary, on harvests
//! written by hand (a manifest and its target files): an export SIGKILLed
//! in the middle of copying files leaves nothing a rerun trips over, and
//! the index's own temp file never takes a harvested file's place.

use forager::output::export::list_files;
use forager::store::ManifestRow;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

const JOB: &str = "harvest";

fn row(url: &str, body: &[u8], mime: &str, ext: &str) -> ManifestRow {
    let sha = hex::encode(Sha256::digest(body));
    ManifestRow {
        url: url.to_string(),
        final_url: url.to_string(),
        mime: mime.to_string(),
        bytes: body.len() as u64,
        sha256: sha.clone(),
        file: format!("{sha}{ext}"),
        referrer: None,
        tag_path: "/html/body/a".to_string(),
        fetched_at: "2026-11-20T10:00:00Z".to_string(),
        truncated: false,
        rdf: None,
        structured: None,
        change: None,
    }
}

/// A state folder holding `files` (URL, body) as a job's harvest.
fn harvest(state: &Path, files: &[(String, Vec<u8>)]) {
    let dir = state.join("targets").join(JOB);
    std::fs::create_dir_all(&dir).unwrap();
    let mut manifest = String::new();
    for (url, body) in files {
        let row = row(url, body, "text/csv", ".csv");
        std::fs::write(dir.join(&row.file), body).unwrap();
        manifest.push_str(&serde_json::to_string(&row).unwrap());
        manifest.push('\n');
    }
    std::fs::write(dir.join("manifest.jsonl"), manifest).unwrap();
}

fn export(state: &Path, to: &Path, layout: &str, crash_at: Option<u32>) -> std::process::Output {
    let mut c = crate::harness::bin::std_command();
    c.args(["export", JOB, "--layout", layout, "--state-dir"])
        .arg(state)
        .arg("--to")
        .arg(to)
        .env_remove(forager::crashpoint::ENV);
    if let Some(n) = crash_at {
        c.env(forager::crashpoint::ENV, format!("export-write:{n}"));
    }
    crate::harness::bin::output_blocking(&mut c)
}

/// Every file under `dir` (relative path → content).
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    list_files(dir)
        .unwrap()
        .into_iter()
        .map(|p| {
            let body = std::fs::read(dir.join(&p)).unwrap();
            (p, body)
        })
        .collect()
}

/// Incompressible bytes, so that a copy takes many chunks.
fn noise(len: usize, mut x: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// `forager export` killed ten times in the middle of copying a file (a
/// crash point after each 64 KiB chunk), then run to the end: the
/// destination holds exactly what one uninterrupted export writes — every
/// file whole at its URL's path, no `name~2` copy beside a truncated one,
/// no temp file left.
#[test]
fn an_export_killed_mid_copy_leaves_what_an_uninterrupted_one_does() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let files: Vec<(String, Vec<u8>)> = (0..10)
        .map(|i| {
            (
                format!("http://data.test/tables/t{i}.csv"),
                noise(700_000 + i * 1000, 0x9E37_79B9_7F4A_7C15 + i as u64),
            )
        })
        .collect();
    harvest(&state, &files);

    let clean = tmp.path().join("clean");
    let out = export(&state, &clean, "url", None);
    assert!(out.status.success(), "{out:?}");
    let want = contents(&clean);
    assert_eq!(want.len(), files.len() + 2, "{:?}", want.keys());

    // Each file is 11 chunks, and a rerun copies the file it was killed in
    // again: each of these kills lands inside a file, the later ones further
    // on (the 10th in the last file).
    let to = tmp.path().join("killed");
    for n in [3u32, 9, 14, 2, 25, 7, 30, 5, 40, 12] {
        let out = export(&state, &to, "url", Some(n));
        assert_eq!(out.status.signal(), Some(9), "export-write:{n}: {out:?}");
    }
    let out = export(&state, &to, "url", None);
    assert!(out.status.success(), "{out:?}");
    let got = contents(&to);
    let extra: Vec<_> = got.keys().filter(|p| !want.contains_key(*p)).collect();
    assert!(
        extra.is_empty(),
        "files an uninterrupted export does not write: {extra:?}"
    );
    for (path, body) in &want {
        // The index lists the same rows; only its file contents are compared.
        if path.to_string_lossy().starts_with("forager-index") {
            assert!(got.contains_key(path), "{path:?} missing");
            continue;
        }
        let Some(have) = got.get(path) else {
            panic!("{path:?} missing")
        };
        assert!(
            have == body,
            "{path:?}: {} bytes, {} wanted",
            have.len(),
            body.len()
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(" 0 missing"), "{stdout}");
}

/// A harvested file the URL names `forager-index.tmp` (the index's temp
/// name once) survives a flat export beside the index.
#[test]
fn a_flat_export_keeps_a_file_named_like_the_index_temp() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let files = vec![
        (
            "http://data.test/forager-index.tmp".to_string(),
            b"a,b\n1,2\n".to_vec(),
        ),
        (
            "http://data.test/other.csv".to_string(),
            b"c,d\n3,4\n".to_vec(),
        ),
    ];
    harvest(&state, &files);
    let to = tmp.path().join("flat");
    for run in 0..2 {
        let out = export(&state, &to, "flat", None);
        assert!(out.status.success(), "run {run}: {out:?}");
        let got = contents(&to);
        assert_eq!(
            got.get(Path::new("forager-index.tmp")).map(Vec::as_slice),
            Some(&b"a,b\n1,2\n"[..]),
            "run {run}: {:?}",
            got.keys()
        );
        assert_eq!(
            got.get(Path::new("other.csv")).map(Vec::as_slice),
            Some(&b"c,d\n3,4\n"[..])
        );
        let index = String::from_utf8_lossy(&got[Path::new("forager-index.csv")]).into_owned();
        assert!(index.contains("\r\nforager-index.tmp,"), "{index}");
        assert_eq!(got.len(), 4, "run {run}: {:?}", got.keys());
    }
}
