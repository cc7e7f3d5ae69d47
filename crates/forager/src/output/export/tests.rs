use super::*;
use crate::output::warc;
use proptest::prelude::*;

fn row(url: &str, body: &[u8], ext: &str, fetched_at: &str) -> (ManifestRow, Vec<u8>) {
    let sha = hex::encode(Sha256::digest(body));
    (
        ManifestRow {
            url: url.to_string(),
            final_url: url.to_string(),
            mime: "text/csv".to_string(),
            bytes: body.len() as u64,
            sha256: sha.clone(),
            file: format!("{sha}{ext}"),
            referrer: Some("http://site.test/".to_string()),
            tag_path: "html/body/a".to_string(),
            fetched_at: fetched_at.to_string(),
            truncated: false,
            rdf: None,
            structured: None,
            change: None,
        },
        body.to_vec(),
    )
}

/// A job folder as the crawler leaves it: target files and manifest.jsonl.
fn job_dir(rows: &[(ManifestRow, Vec<u8>)], tail: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut manifest = String::new();
    for (r, body) in rows {
        fs::write(dir.path().join(&r.file), body).unwrap();
        manifest.push_str(&serde_json::to_string(r).unwrap());
        manifest.push('\n');
    }
    manifest.push_str(tail);
    fs::write(dir.path().join("manifest.jsonl"), manifest).unwrap();
    dir
}

fn spec(job: &Path, to: &Path, layout: Layout) -> ExportSpec {
    ExportSpec {
        job_dir: job.to_path_buf(),
        job: "job".into(),
        to: to.to_path_buf(),
        layout,
        since: None,
        warc: false,
        warc_max_size: warc::DEFAULT_MAX_SIZE,
    }
}

fn is_safe(parts: &[String]) -> bool {
    parts.iter().all(|p| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && !p.starts_with('.')
            && !p.contains(['/', '\\', '\0'])
            && p.len() <= MAX_COMPONENT
    }) && Path::new(&parts.join("/"))
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
}

#[test]
fn urls_map_to_readable_paths() {
    assert_eq!(
        url_path("https://stats.example.org/data/2024/gdp.csv", "ab.csv"),
        ["stats.example.org", "data", "2024", "gdp.csv"]
    );
    assert_eq!(
        url_path("http://127.0.0.1:8080/a%20b/", "ab.csv"),
        ["127.0.0.1_8080", "a_b", "index.csv"]
    );
    assert_eq!(
        url_path("http://h.test/download", "ab.xlsx"),
        ["h.test", "download.xlsx"]
    );
    let q1 = url_path("http://h.test/get.php?id=1", "x.csv");
    let q2 = url_path("http://h.test/get.php?id=2", "x.csv");
    assert_ne!(q1, q2, "queries give distinct names");
    assert!(
        q1[1].starts_with("get_q") && q1[1].ends_with(".php"),
        "{q1:?}"
    );
    assert_eq!(
        flat_name("http://h.test/a/b/report.pdf", "x.pdf"),
        "report.pdf"
    );
}

#[test]
fn traversal_attempts_stay_inside() {
    for url in [
        "http://h.test/a/../../../etc/passwd",
        "http://h.test/%2e%2e/%2e%2e/etc/passwd",
        "http://h.test/a/%2E%2e%2Fetc%2Fpasswd",
        "http://h.test/..%5c..%5cwindows",
        "http://h.test/.hidden",
        "http://h.test/%00nul",
        "/etc/passwd",
        "file:///etc/passwd",
        "../../x.csv",
        "http://[::1]:81/x",
    ] {
        let parts = url_path(url, "f.csv");
        assert!(is_safe(&parts), "{url}: {parts:?}");
        assert!(is_safe(&[flat_name(url, "f.csv")]), "{url}");
    }
    let long = format!(
        "http://h.test/{}/{}.csv",
        "d".repeat(5000),
        "n".repeat(5000)
    );
    let parts = url_path(&long, "f.csv");
    assert!(is_safe(&parts), "{parts:?}");
    assert!(
        parts[2].ends_with(".csv"),
        "a long name keeps its extension"
    );
    let deep = format!("http://h.test/{}x.csv", "a/".repeat(500));
    assert!(url_path(&deep, "f.csv").len() <= MAX_DEPTH + 2);
}

#[test]
fn files_are_exported_under_url_paths_with_collisions_resolved() {
    let rows = vec![
        row("http://h.test/a/b", b"file b\n", "", "2026-01-01T00:00:00Z"),
        row(
            "http://h.test/a/b/c.csv",
            b"under b\n",
            ".csv",
            "2026-01-02T00:00:00Z",
        ),
        row(
            "http://h.test/x.csv",
            b"v1\n",
            ".csv",
            "2026-01-03T00:00:00Z",
        ),
        row(
            "http://h.test/x.csv",
            b"v2\n",
            ".csv",
            "2026-01-04T00:00:00Z",
        ),
        row(
            "http://h.test/x.csv",
            b"v2\n",
            ".csv",
            "2026-01-05T00:00:00Z",
        ),
    ];
    // The daemon was appending when the export read: a torn last line.
    let job = job_dir(&rows, "{\"url\":\"http://h.te");
    let out = tempfile::tempdir().unwrap();
    let report = export(&spec(job.path(), out.path(), Layout::Url)).unwrap();
    assert_eq!(report.exported, 4);
    assert_eq!(report.bad_lines, 1);
    let files = list_files(out.path()).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            INDEX_CSV,
            INDEX_JSON,
            "h.test/a/b",
            "h.test/a/b~2/c.csv",
            "h.test/x.csv",
            "h.test/x~2.csv",
        ]
    );
    assert_eq!(
        fs::read(out.path().join("h.test/x~2.csv")).unwrap(),
        b"v2\n"
    );
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(out.path().join(INDEX_JSON)).unwrap()).unwrap();
    assert_eq!(index.as_array().unwrap().len(), 4);
    assert_eq!(index[3]["path"], "h.test/x~2.csv");
    let csv = fs::read_to_string(out.path().join(INDEX_CSV)).unwrap();
    assert_eq!(csv.lines().count(), 5);
    assert!(csv
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("h.test/a/b,http://h.test/a/b,"));

    // Exporting again changes nothing and says so.
    let again = export(&spec(job.path(), out.path(), Layout::Url)).unwrap();
    assert_eq!((again.exported, again.unchanged), (0, 4));
    assert_eq!(list_files(out.path()).unwrap(), files);
}

#[test]
fn the_flat_layout_keeps_original_names() {
    let rows = vec![
        row(
            "http://h.test/2024/data.csv",
            b"1\n",
            ".csv",
            "2026-01-01T00:00:00Z",
        ),
        row(
            "http://h.test/2025/data.csv",
            b"2\n",
            ".csv",
            "2026-01-01T00:00:00Z",
        ),
        row(
            "http://h.test/forager-index.csv",
            b"3\n",
            ".csv",
            "2026-01-01T00:00:00Z",
        ),
    ];
    let job = job_dir(&rows, "");
    let out = tempfile::tempdir().unwrap();
    export(&spec(job.path(), out.path(), Layout::Flat)).unwrap();
    let names: Vec<String> = list_files(out.path())
        .unwrap()
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "data.csv",
            "data~2.csv",
            INDEX_CSV,
            INDEX_JSON,
            "forager-index~2.csv"
        ]
    );
}

#[test]
fn since_filters_by_fetch_time() {
    let rows = vec![
        row(
            "http://h.test/old.csv",
            b"o\n",
            ".csv",
            "2026-01-01T00:00:00Z",
        ),
        row(
            "http://h.test/new.csv",
            b"n\n",
            ".csv",
            "2026-03-01T00:00:00Z",
        ),
    ];
    let job = job_dir(&rows, "");
    let out = tempfile::tempdir().unwrap();
    let mut s = spec(job.path(), out.path(), Layout::Flat);
    s.since = Some(parse_since("2026-02-01", SystemTime::now()).unwrap());
    let report = export(&s).unwrap();
    assert_eq!((report.exported, report.skipped_old), (1, 1));
    assert!(out.path().join("new.csv").exists() && !out.path().join("old.csv").exists());
    assert!(parse_since("7d", SystemTime::now()).is_ok());
    assert!(parse_since("2026-02-01T10:00:00Z", SystemTime::now()).is_ok());
    assert!(parse_since("last week", SystemTime::now()).is_err());
}

#[test]
fn hostile_manifest_rows_and_symlinks_write_nothing_outside() {
    let (mut evil, _) = row(
        "http://h.test/e.csv",
        b"e\n",
        ".csv",
        "2026-01-01T00:00:00Z",
    );
    evil.file = "../../etc/passwd".into();
    let ok = row(
        "http://h.test/sub/ok.csv",
        b"ok\n",
        ".csv",
        "2026-01-01T00:00:00Z",
    );
    let job = tempfile::tempdir().unwrap();
    fs::write(job.path().join(&ok.0.file), &ok.1).unwrap();
    let manifest = format!(
        "{}\n{}\n",
        serde_json::to_string(&evil).unwrap(),
        serde_json::to_string(&ok.0).unwrap()
    );
    fs::write(job.path().join("manifest.jsonl"), manifest).unwrap();
    let out = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    // Someone planted a link where the host folder goes.
    std::os::unix::fs::symlink(outside.path(), out.path().join("h.test")).unwrap();
    let report = export(&spec(job.path(), out.path(), Layout::Url)).unwrap();
    assert_eq!(report.missing, 1);
    assert_eq!(report.exported, 1);
    assert_eq!(
        fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written through the link"
    );
    assert_eq!(report.rows[0].path, "h.test~2/sub/ok.csv");
}

#[test]
fn warc_export_archives_every_target_with_a_reconstruction_note() {
    let rows = vec![
        row(
            "http://h.test/a.csv",
            b"a,b\n1,2\n",
            ".csv",
            "2026-01-01T00:00:00Z",
        ),
        row(
            "http://h.test/b.csv",
            b"c\n",
            ".csv",
            "2026-01-02T00:00:00Z",
        ),
    ];
    let job = job_dir(&rows, "");
    let out = tempfile::tempdir().unwrap();
    let mut s = spec(job.path(), out.path(), Layout::Url);
    s.warc = true;
    let report = export(&s).unwrap();
    assert_eq!(report.exported, 2);
    let series = warc::series(out.path(), "job-export").unwrap();
    assert_eq!(series.len(), 1);
    let records = warc::read::read_all(&series[0].1).unwrap();
    let kinds: Vec<&str> = records.iter().map(|r| r.kind()).collect();
    assert_eq!(
        kinds,
        ["warcinfo", "response", "metadata", "response", "metadata"]
    );
    assert!(String::from_utf8_lossy(&records[0].block).contains("RECONSTRUCTED"));
    for (r, (m, body)) in records.iter().filter(|r| r.kind() == "response").zip(&rows) {
        r.check_digests().unwrap();
        assert_eq!(r.http_payload(), Some(&body[..]));
        assert_eq!(r.field("WARC-Target-URI"), Some(m.final_url.as_str()));
        assert_eq!(
            r.field("WARC-Date"),
            Some(&m.fetched_at.replace('Z', ".000000Z")[..])
        );
    }
}

proptest! {
    #[test]
    fn every_url_maps_to_a_safe_path(url in "(https?://[a-z.]{1,12}(:[0-9]{1,5})?)?(/[%./a-zA-Z0-9\\\\ \u{e9}-]{0,30}){0,6}(\\?[ -~]{0,20})?") {
        let parts = url_path(&url, "f.csv");
        prop_assert!(is_safe(&parts), "{:?}", parts);
        prop_assert!(is_safe(&[flat_name(&url, "f.csv")]));
    }

    #[test]
    fn safe_components_are_safe(raw in "\\PC{0,400}") {
        let c = safe_component(&raw);
        prop_assert!(is_safe(std::slice::from_ref(&c)), "{:?}", c);
    }
}
