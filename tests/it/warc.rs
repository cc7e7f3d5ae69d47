//! WARC output end to end: real exchanges with a loopback server archived by
//! the writer; `forager export --warc` SIGKILLed inside records and resumed.
//! Every file is checked by forager's own reader (always) and by Python's
//! `warcio check` / `warcio index` when python3 can import `warcio` (the
//! `have_warcio` cfg of `build.rs`; forced by FORAGER_REQUIRE_WARCIO=1, as
//! .ci/run sets it after installing warcio). Without warcio,
//! [`warcio_the_oracle_is_there`] is ignored: the run says it lacked the oracle.
//!
//! Each file's CDXJ index ([`warc::cdx`]) is checked against the file
//! ([`index_matches`]): one line per record but the warcinfo, whose offset
//! and length delimit exactly that record, and, with warcio, the offsets and
//! lengths its `ArchiveIterator` reports (through `warcio index`).

use bytes::Bytes;
use forager::fetch::{FetchConfig, Fetcher, Method, Politeness};
use forager::output::warc::{
    self, read, Metadata, Payload, Revisit, WarcConfig, WarcWriter, PROFILE_IDENTICAL_PAYLOAD,
    PROFILE_NOT_MODIFIED,
};
use forager::store::ManifestRow;
use forager_bench::sites::server::{
    Body, Chunk, ChunkSource, Site, SiteRequest, SiteResponse, SiteServer,
};
use hyper::header::{self, HeaderValue};
use hyper::StatusCode;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const CSV: &[u8] = b"year,value\n2024,1\n2025,2\n";

struct Archive;

struct Chunks(u8);

impl ChunkSource for Chunks {
    fn next_chunk(&mut self) -> Option<Chunk> {
        self.0 += 1;
        (self.0 <= 3).then(|| Chunk::Data(Bytes::from(format!("part {}\n", self.0))))
    }
}

impl Site for Archive {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        match req.path.as_str() {
            "/" => SiteResponse::html("<a href=/data.csv>data</a>"),
            "/data.csv" => SiteResponse::ok("text/csv", CSV)
                .with_header(header::ETAG, HeaderValue::from_static("\"v1\""))
                .with_header(
                    header::LAST_MODIFIED,
                    HeaderValue::from_static("Tue, 14 Nov 2023 22:13:20 GMT"),
                ),
            "/gz.csv" => {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(CSV).unwrap();
                SiteResponse::ok("text/csv", gz.finish().unwrap())
                    .with_header(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"))
            }
            "/chunked.txt" => SiteResponse::new(StatusCode::OK)
                .with_header(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"))
                .with_body(Body::stream(None, Chunks(0))),
            "/not-modified" => SiteResponse::new(StatusCode::NOT_MODIFIED),
            _ => SiteResponse::not_found(),
        }
    }
}

/// Python's warcio command line, run as `python3 -c … ARGS` so that it need
/// not be on PATH (a `pip install --user` puts its script elsewhere).
const WARCIO: &str = "import sys; from warcio.cli import main; main()";

/// Whether the Python checks run: where `build.rs` found warcio or
/// FORAGER_REQUIRE_WARCIO demands it; then warcio must import.
fn have_warcio() -> bool {
    if !cfg!(have_warcio) {
        return false;
    }
    let found = Command::new("python3")
        .args(["-c", "import warcio"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "python3 cannot import warcio, which build.rs found (or FORAGER_REQUIRE_WARCIO \
         demands): pip install warcio"
    );
    true
}

/// The oracle of this module. Without warcio the tests here check every file
/// with forager's own reader only, and this one is ignored: a run without the
/// oracle does not read as a run with it.
#[test]
#[cfg_attr(
    not(have_warcio),
    ignore = "needs python3 with warcio (pip install warcio): the WARC tests ran without it"
)]
fn warcio_the_oracle_is_there() {
    assert!(have_warcio());
}

/// `warcio check -v` and `warcio index` accept the file; returns the index lines.
fn warcio_accepts(path: &Path) -> Option<Vec<String>> {
    if !have_warcio() {
        return None;
    }
    let check = Command::new("python3")
        .args(["-c", WARCIO, "check", "-v"])
        .arg(path)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout).into_owned()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(
        check.status.success(),
        "warcio check failed on {}:\n{out}",
        path.display()
    );
    assert!(!out.contains("invalid"), "warcio check complains:\n{out}");
    let index = Command::new("python3")
        .args([
            "-c",
            WARCIO,
            "index",
            "-f",
            "warc-type,warc-target-uri,length,offset",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        index.status.success(),
        "warcio index failed: {}",
        String::from_utf8_lossy(&index.stderr)
    );
    Some(
        String::from_utf8_lossy(&index.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// The CDXJ index beside `path` names every record of the file but its
/// warcinfo, once, sorted, each line's `offset`/`length` being exactly the
/// record's gzip member (read back there: one whole record of that URL), and,
/// when `warcio` (its `warcio index` lines) is given, the offsets and lengths
/// warcio's `ArchiveIterator` reports. Returns the number of lines.
fn index_matches(path: &Path, warcio: Option<&[String]>) -> usize {
    use std::io::{Read, Seek, SeekFrom};
    let records = read::read_all(path).unwrap_or_else(|e| panic!("{e}"));
    let len = std::fs::metadata(path).unwrap().len();
    let index = warc::cdx::index_path(path);
    let text =
        std::fs::read_to_string(&index).unwrap_or_else(|e| panic!("{}: {e}", index.display()));
    let lines: Vec<&str> = text.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted, "{} is not sorted", index.display());
    let name = path.file_name().unwrap().to_str().unwrap();
    // offset → (length, url, line)
    let mut by_offset = BTreeMap::new();
    for line in &lines {
        let mut parts = line.splitn(3, ' ');
        let (key, stamp, json) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(stamp.len(), 14, "{line}");
        assert_eq!(v["filename"], name, "{line}");
        let url = v["url"].as_str().unwrap().to_string();
        assert_eq!(key, warc::cdx::surt(&url), "{line}");
        let num = |k: &str| v[k].as_str().unwrap().parse::<u64>().unwrap();
        let prev = by_offset.insert(num("offset"), (num("length"), url, line.to_string()));
        assert!(prev.is_none(), "two lines for one offset: {line}");
    }
    let mut file = std::fs::File::open(path).unwrap();
    for (i, r) in records.iter().enumerate() {
        let end = records.get(i + 1).map_or(len, |n| n.offset);
        if r.kind() == "warcinfo" {
            assert!(
                !by_offset.contains_key(&r.offset),
                "a line for the warcinfo"
            );
            continue;
        }
        let (length, url, line) = by_offset
            .get(&r.offset)
            .unwrap_or_else(|| panic!("{} record at {} has no index line", r.kind(), r.offset));
        assert_eq!(*length, end - r.offset, "{line}");
        assert_eq!(Some(url.as_str()), r.field("WARC-Target-URI"), "{line}");
        // What the line points at is one whole record, of that URL.
        let mut member = vec![0u8; *length as usize];
        file.seek(SeekFrom::Start(r.offset)).unwrap();
        file.read_exact(&mut member).unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(&member[..])
            .read_to_end(&mut bytes)
            .unwrap();
        let at = read::parse_record(&bytes, r.offset).unwrap();
        assert_eq!(at.field("WARC-Record-ID"), r.field("WARC-Record-ID"));
        if r.kind() == "response" {
            assert!(line.contains("\"status\": \""), "{line}");
        }
    }
    let indexed = records.iter().filter(|r| r.kind() != "warcinfo").count();
    assert_eq!(by_offset.len(), indexed, "{}", index.display());
    if let Some(warcio) = warcio {
        let mut theirs = BTreeMap::new();
        for l in warcio {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["warc-type"] == "warcinfo" {
                continue;
            }
            let num = |k: &str| v[k].as_str().unwrap().parse::<u64>().unwrap();
            theirs.insert(num("offset"), num("length"));
        }
        let ours: BTreeMap<u64, u64> = by_offset.iter().map(|(o, (l, _, _))| (*o, *l)).collect();
        assert_eq!(ours, theirs, "index of {} against warcio's", path.display());
    }
    by_offset.len()
}

/// No line of the index beside `path` points past the file's valid end (the
/// end of its last complete record): what a crash may leave.
fn index_within_valid_end(path: &Path) {
    let valid = read::scan(&std::fs::File::open(path).unwrap())
        .unwrap()
        .valid_len;
    for line in warc::cdx::read_lines(&warc::cdx::index_path(path)).unwrap() {
        let end = warc::cdx::line_end(&line).unwrap_or_else(|| panic!("{line}"));
        assert!(end <= valid, "{} ends at {valid}: {line}", path.display());
    }
}

#[tokio::test]
async fn live_exchanges_become_valid_warc() {
    let server = SiteServer::start(vec![(
        "site.test".to_string(),
        Arc::new(Archive) as Arc<dyn Site>,
    )])
    .await
    .unwrap();
    let fetcher = Fetcher::new(FetchConfig {
        allow_private: true,
        resolve: vec![("site.test".to_string(), server.addr())],
        ..FetchConfig::default()
    })
    .unwrap();
    let politeness = Politeness {
        run: 0,
        delay: Duration::ZERO,
        robots: false,
        user_agent: "forager-warc-test/1".to_string(),
        ..Politeness::default()
    };
    let tmp = tempfile::tempdir().unwrap();
    let (mut w, _) = WarcWriter::open(WarcConfig {
        dir: tmp.path().to_path_buf(),
        prefix: "live".into(),
        max_size: warc::DEFAULT_MAX_SIZE,
        info: vec![("isPartOf".into(), "live".into())],
    })
    .unwrap();
    let base = format!("http://site.test:{}", server.port());
    let mut first_csv = None;
    for path in [
        "/",
        "/data.csv",
        "/gz.csv",
        "/chunked.txt",
        "/data.csv",
        "/not-modified",
    ] {
        let url = url::Url::parse(&format!("{base}{path}")).unwrap();
        let resp = fetcher
            .send(Method::Get, &url, &politeness, "site.test")
            .await
            .unwrap();
        let head = resp.exchange_head();
        assert_eq!(head.remote_ip, Some(std::net::Ipv4Addr::LOCALHOST.into()));
        assert_eq!(head.request.start_line, format!("GET {path} HTTP/1.1"));
        let host = format!("site.test:{}", server.port());
        assert_eq!(head.request.get("host"), Some(host.as_bytes()));
        assert_eq!(
            head.request.get("user-agent"),
            Some(&b"forager-warc-test/1"[..])
        );
        assert!(head.request.get("accept-encoding").is_some());
        let status = resp.status;
        let body = resp.read_capped(1 << 20).await.unwrap();
        if path == "/gz.csv" {
            assert_eq!(body.bytes, CSV, "archived decoded");
        }
        match (path, status) {
            ("/not-modified", 304) => {
                let date = warc::warc_date(std::time::SystemTime::now());
                w.write_revisit(&Revisit {
                    head: &head,
                    target_uri: url.as_str(),
                    profile: PROFILE_NOT_MODIFIED,
                    refers_to_uri: url.as_str(),
                    refers_to_date: &date,
                    refers_to_record: None,
                    payload_digest: None,
                })
                .unwrap();
            }
            ("/data.csv", 200) if first_csv.is_some() => {
                let (ids, date): &(warc::ExchangeIds, String) = first_csv.as_ref().unwrap();
                assert_eq!(warc::sha1_label(&body.bytes), ids.payload_digest);
                w.write_revisit(&Revisit {
                    head: &head,
                    target_uri: url.as_str(),
                    profile: PROFILE_IDENTICAL_PAYLOAD,
                    refers_to_uri: url.as_str(),
                    refers_to_date: date,
                    refers_to_record: Some(&ids.response),
                    payload_digest: Some(&ids.payload_digest),
                })
                .unwrap();
            }
            (_, 200) => {
                let meta = Metadata {
                    via: (path != "/").then(|| format!("{base}/")),
                    tag_path: Some("html/body/a".into()),
                    label: Some(if path == "/" { "html" } else { "target" }.into()),
                };
                let ids = w
                    .write_exchange(
                        url.as_str(),
                        &head,
                        Payload::Bytes(&body.bytes),
                        false,
                        Some(&meta),
                    )
                    .unwrap();
                if path == "/data.csv" {
                    first_csv = Some((ids, warc::warc_date(head.sent_at)));
                }
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    w.sync().unwrap();
    let records = read::read_all(w.path()).unwrap();
    let kinds: Vec<&str> = records.iter().map(|r| r.kind()).collect();
    assert_eq!(
        kinds,
        [
            "warcinfo", "response", "request", "metadata", "response", "request", "metadata",
            "response", "request", "metadata", "response", "request", "metadata", "revisit",
            "request", "revisit", "request",
        ]
    );
    for r in &records {
        r.check_digests()
            .unwrap_or_else(|e| panic!("{}: {e}", r.kind()));
    }
    let chunked = &records[10];
    assert_eq!(
        chunked.http_payload(),
        Some(&b"part 1\npart 2\npart 3\n"[..])
    );
    let http = String::from_utf8_lossy(&chunked.block);
    assert!(
        http.contains("x-archive-orig-transfer-encoding: chunked"),
        "{http}"
    );
    let theirs = warcio_accepts(w.path());
    if let Some(index) = &theirs {
        assert_eq!(index.len(), records.len(), "{index:?}");
    }
    // Responses, requests, metadata and revisits: every record but the warcinfo.
    assert_eq!(
        index_matches(w.path(), theirs.as_deref()),
        records.len() - 1
    );
    let index = std::fs::read_to_string(warc::cdx::index_path(w.path())).unwrap();
    let revisit = index.lines().find(|l| l.contains("warc/revisit")).unwrap();
    assert!(
        revisit.contains("/not-modified") || revisit.contains("/data.csv"),
        "{revisit}"
    );
    let csv = index
        .lines()
        .find(|l| l.contains("\"mime\": \"text/csv\""))
        .unwrap_or_else(|| panic!("{index}"));
    assert!(csv.contains("\"status\": \"200\""), "{csv}");
    assert!(csv.starts_with("test,site:"), "{csv}");
}

/// A series rotated at a small size: every file has its index, each line
/// names its own file; an index deleted, truncated or left behind by a
/// crash is rebuilt when the series is opened again.
#[test]
fn every_file_of_a_rotated_series_has_its_index_and_a_lost_one_comes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = WarcConfig {
        dir: tmp.path().to_path_buf(),
        prefix: "rot".into(),
        max_size: 4096,
        info: vec![],
    };
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut write = |from: usize, to: usize| {
        let (mut w, _) = WarcWriter::open(cfg.clone()).unwrap();
        for i in from..to {
            // Digits that do not compress away: files fill up and rotate.
            let body: String = (0..200)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!("{i},{x}\n")
                })
                .collect();
            let head = forager::exchange::HttpHead {
                start_line: "HTTP/1.1 200 OK".into(),
                headers: vec![("content-type".into(), b"text/csv".to_vec())],
            };
            w.write_reconstructed(
                &format!("http://www.rot.test/d{i}.csv"),
                &head,
                std::time::SystemTime::now(),
                Payload::Bytes(body.as_bytes()),
                false,
                &Metadata::default(),
            )
            .unwrap();
        }
        w.sync().unwrap();
    };
    write(0, 12);
    let files = warc::series(tmp.path(), "rot").unwrap();
    assert!(files.len() >= 3, "{files:?}");
    for (_, path) in &files {
        assert!(index_matches(path, warcio_accepts(path).as_deref()) >= 2);
    }
    // Lost: one index deleted, one cut to its first line (as if an older
    // forager, or a crash between a rotation and its index, had left it).
    let first = warc::cdx::index_path(&files[0].1);
    std::fs::remove_file(&first).unwrap();
    let second = warc::cdx::index_path(&files[1].1);
    let kept = std::fs::read_to_string(&second).unwrap();
    std::fs::write(&second, format!("{}\n", kept.lines().next().unwrap())).unwrap();
    write(12, 14);
    for (_, path) in warc::series(tmp.path(), "rot").unwrap() {
        index_matches(&path, None);
    }
    assert_eq!(std::fs::read_to_string(&second).unwrap(), kept);
}

fn manifest_row(url: &str, body: &[u8]) -> ManifestRow {
    let sha = hex::encode(Sha256::digest(body));
    ManifestRow {
        url: url.to_string(),
        final_url: url.to_string(),
        mime: "application/octet-stream".to_string(),
        bytes: body.len() as u64,
        sha256: sha.clone(),
        file: sha,
        referrer: None,
        tag_path: "html/body/a".to_string(),
        fetched_at: "2026-11-20T10:00:00Z".to_string(),
        truncated: false,
        rdf: None,
        structured: None,
        change: None,
    }
}

fn export_warc(state: &Path, out: &Path, crash_at: Option<u32>) -> std::process::ExitStatus {
    let mut c = crate::harness::bin::std_command();
    c.args(["export", "crashy", "--warc", "--state-dir"])
        .arg(state)
        .arg("--to")
        .arg(out)
        .env_remove(forager::crashpoint::ENV);
    if let Some(n) = crash_at {
        c.env(forager::crashpoint::ENV, format!("warc-write:{n}"));
    }
    crate::harness::bin::status_blocking(&mut c)
}

/// `forager export --warc` is SIGKILLed inside a record again and again;
/// each rerun cuts the partial record and goes on, and the end result is a
/// valid WARC holding every manifest target with its payload digest.
#[test]
fn a_writer_killed_inside_records_leaves_valid_warc() {
    let state = tempfile::tempdir().unwrap();
    let job = state.path().join("targets").join("crashy");
    std::fs::create_dir_all(&job).unwrap();
    let mut manifest = String::new();
    let mut rows = Vec::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..6 {
        // Incompressible and larger than the writer's buffer: a kill leaves a member's start on disk.
        let body: Vec<u8> = (0..(300_000 + i * 1000))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let row = manifest_row(&format!("http://crashy.test/file{i}.bin"), &body);
        std::fs::write(job.join(&row.file), &body).unwrap();
        manifest.push_str(&serde_json::to_string(&row).unwrap());
        manifest.push('\n');
        rows.push((row, body));
    }
    std::fs::write(job.join("manifest.jsonl"), manifest).unwrap();
    let out = state.path().join("out");

    let mut cut_tails = 0;
    // Record numbers counted from each run's start (warcinfo first on the first run).
    for n in [2u32, 4, 7, 3, 12, 5] {
        let status = export_warc(state.path(), &out, Some(n));
        assert_eq!(
            status.signal(),
            Some(9),
            "warc-write:{n} ended with {status}"
        );
        let newest: PathBuf = warc::series(&out, "crashy-export")
            .unwrap()
            .pop()
            .unwrap()
            .1;
        if read::read_all(&newest).is_err() {
            cut_tails += 1;
        }
    }
    assert!(
        cut_tails >= 3,
        "the kills landed inside records ({cut_tails})"
    );
    let status = export_warc(state.path(), &out, None);
    assert!(status.success(), "{status}");

    let files = warc::series(&out, "crashy-export").unwrap();
    assert_eq!(files.len(), 1);
    let records = read::read_all(&files[0].1).unwrap();
    for r in &records {
        r.check_digests().unwrap();
    }
    for (row, body) in &rows {
        let digest = warc::sha1_label(body);
        assert!(
            records.iter().any(|r| r.kind() == "response"
                && r.field("WARC-Target-URI") == Some(row.final_url.as_str())
                && r.field("WARC-Payload-Digest") == Some(digest.as_str())
                && r.http_payload() == Some(&body[..])),
            "{} has its response record",
            row.final_url
        );
    }
    assert_eq!(records.iter().filter(|r| r.kind() == "warcinfo").count(), 1);
    let theirs = warcio_accepts(&files[0].1);
    if let Some(index) = &theirs {
        assert_eq!(index.len(), records.len());
    }
    // Every kill left an index that lacked records; the last run rebuilt it.
    assert_eq!(
        index_matches(&files[0].1, theirs.as_deref()),
        records.len() - 1
    );
}

fn crawl_job(dir: &Path, port: u16) -> PathBuf {
    crate::harness::sites::fixture_job("warcjob", port)
        .rng_seed(7)
        .delay("0s")
        .set("output", "warc", true)
        .set("output", "warc_max_size", "\"1 MiB\"")
        .write(dir)
}

fn crawl(job: &Path, state: &Path, port: u16, crash_at: Option<u32>) -> std::process::ExitStatus {
    let mut c = crate::harness::Crawl::fixture(job, state, port).std_command();
    c.env_remove(forager::crashpoint::ENV);
    if let Some(n) = crash_at {
        c.env(forager::crashpoint::ENV, format!("warc-write:{n}"));
    }
    crate::harness::bin::status_blocking(&mut c)
}

/// A crawl with `[output] warc = true`, SIGKILLed inside WARC records and
/// resumed: every target in the manifest has its response record, whose
/// payload digest is the SHA-1 of the saved file, and every file is valid.
#[tokio::test(flavor = "multi_thread")]
async fn a_crawl_archives_every_manifest_target() {
    use forager_bench::sites::fixture::FixtureSite;
    let fixture = FixtureSite::new().with_crawl_delay(None);
    let server = SiteServer::start(fixture.sites()).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let job = crawl_job(tmp.path(), server.port());
    let state = tmp.path().join("state");
    let port = server.port();
    let (job2, state2) = (job.clone(), state.clone());
    let statuses = tokio::task::spawn_blocking(move || {
        let mut s: Vec<_> = [5u32, 2, 9]
            .into_iter()
            .map(|n| crawl(&job2, &state2, port, Some(n)))
            .collect();
        s.push(crawl(&job2, &state2, port, None));
        s
    })
    .await
    .unwrap();
    let killed = statuses.iter().filter(|s| s.signal() == Some(9)).count();
    assert!(killed >= 2, "{statuses:?}");
    assert!(statuses.last().unwrap().success(), "{statuses:?}");

    let targets = state.join("targets").join("warcjob");
    let manifest = crate::harness::manifest_by_final_url(&targets);
    assert!(manifest.len() >= 5, "{manifest:?}");
    let files = warc::series(&targets.join("warc"), "warcjob").unwrap();
    assert!(!files.is_empty());
    let mut responses = Vec::new();
    for (_, path) in &files {
        let records = read::read_all(path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(records[0].kind(), "warcinfo");
        for r in &records {
            r.check_digests().unwrap();
        }
        responses.extend(records.into_iter().filter(|r| r.kind() == "response"));
        let theirs = warcio_accepts(path);
        index_matches(path, theirs.as_deref());
    }
    let rows = std::fs::read_to_string(targets.join("manifest.jsonl")).unwrap();
    for line in rows.lines() {
        let row: ManifestRow = serde_json::from_str(line).unwrap();
        let body = std::fs::read(targets.join(&row.file)).unwrap();
        let digest = warc::sha1_label(&body);
        assert!(
            responses.iter().any(
                |r| r.field("WARC-Target-URI") == Some(row.final_url.as_str())
                    && r.field("WARC-Payload-Digest") == Some(digest.as_str())
                    && r.field("WARC-IP-Address") == Some("127.0.0.1")
            ),
            "{} has no response record with its payload",
            row.final_url
        );
    }
}

/// A site that changes while a continuous job harvests it: 30 pages and
/// four stable files (revisits answered 304: `server-not-modified`), one
/// file the test edits in place (`changed` rows), and one whose server
/// sends a new ETag with every answer, so only its digest says it is the
/// same (`identical-payload-digest`).
#[derive(Default)]
struct Changing {
    version: std::sync::atomic::AtomicU64,
    answers: std::sync::atomic::AtomicU64,
}

const CHANGING_PAGES: usize = 30;

impl Site for Changing {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        use std::sync::atomic::Ordering;
        let path = req.path.as_str();
        if path == "/" {
            let mut links: Vec<String> =
                (0..CHANGING_PAGES).map(|p| format!("/p{p}.html")).collect();
            links.extend((0..4).map(|f| format!("/f{f}.csv")));
            links.extend(["/edited.csv".to_string(), "/volatile.csv".to_string()]);
            let items: String = links
                .iter()
                .map(|l| format!("<a href=\"{l}\">{l}</a> "))
                .collect();
            return SiteResponse::html(format!("<html><body>{items}</body></html>"));
        }
        if path == "/edited.csv" {
            let v = self.version.load(Ordering::SeqCst);
            return SiteResponse::ok("text/csv", format!("edition,value\n{v},{}\n", v * 7));
        }
        if path == "/volatile.csv" {
            let n = self.answers.fetch_add(1, Ordering::SeqCst);
            let etag = HeaderValue::from_str(&format!("\"n{n}\"")).unwrap();
            return SiteResponse::ok("text/csv", "same,always\n").with_header(header::ETAG, etag);
        }
        if let Some(f) = path.strip_prefix("/f").and_then(|p| p.strip_suffix(".csv")) {
            return SiteResponse::ok("text/csv", format!("file,{f}\n"));
        }
        if path.starts_with("/p") && path.ends_with(".html") {
            return SiteResponse::html("<html><body><a href=\"/\">home</a></body></html>");
        }
        SiteResponse::not_found()
    }
}

/// The WARC-Type of the partial last record a kill left in `path`, if the
/// file ends inside a record (read as far as the gzip stream goes).
fn partial_tail_kind(path: &Path) -> Option<String> {
    use std::io::Read;
    if read::read_all(path).is_ok() {
        return None;
    }
    let mut gz = flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap());
    let mut text = Vec::new();
    let mut buf = [0u8; 8192];
    // A truncated member ends the stream with an error: keep what came before.
    while let Ok(n) = gz.read(&mut buf) {
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&text);
    let last = text.rfind("WARC/1.1\r\n")?;
    let kind = text[last..]
        .lines()
        .find_map(|l| l.strip_prefix("WARC-Type: "))?;
    Some(kind.trim().to_string())
}

/// The quality bar's crash case for continuous jobs: a harvest with
/// `[output] warc = true` is SIGKILLed 20 times at WARC crash points (inside
/// response, request, metadata and revisit records), while a file changes in
/// place between kills; then it runs undisturbed until every URL has been
/// revisited and is stopped with SIGTERM. Every file is valid, every manifest
/// row (`new` and `changed`) has its response record with the saved file's
/// payload digest, and revisit records of both profiles name their capture.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuous_harvest_killed_20_times_leaves_valid_warc() {
    use crate::harness::{Crawl, JobFile};
    use std::sync::atomic::Ordering;
    const HOST: &str = "changing.test";
    let site = Arc::new(Changing::default());
    let server = SiteServer::start(vec![(HOST.to_string(), site.clone() as Arc<dyn Site>)])
        .await
        .unwrap();
    let urls = 1 + CHANGING_PAGES + 4 + 2;
    let jobs = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let job = JobFile::new("harvest")
        .seed(format!("http://{HOST}:{}/", server.port()))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
        .top("mode", "\"continuous\"")
        .set("revisit", "min", "\"1s\"")
        .set("revisit", "max", "\"2s\"")
        .set("output", "warc", true)
        .write(jobs.path());
    let crawl = Crawl::new(&job, state.path())
        .allow_private()
        .resolve(HOST, server.port())
        .checkpoint_interval("50ms");
    let targets = state.path().join("targets").join("harvest");
    let warc_dir = targets.join("warc");

    // Record numbers counted from each run's start: small ones die in the
    // resumed work, larger ones in the revisits that follow it.
    let kill_at = [
        2u32, 9, 14, 5, 20, 8, 3, 25, 6, 12, 7, 22, 10, 4, 28, 9, 15, 5, 18, 6,
    ];
    let mut tails: BTreeMap<String, usize> = BTreeMap::new();
    for (round, n) in kill_at.into_iter().enumerate() {
        if round % 5 == 4 {
            // Edited in place: its next fetch is a new capture and a `changed` row.
            site.version.fetch_add(1, Ordering::SeqCst);
        }
        let started = std::time::Instant::now();
        let mut cmd = crawl.command();
        cmd.env(forager::crashpoint::ENV, format!("warc-write:{n}"));
        // The crash point is reached whenever the N-th record is written; the
        // harness's deadline only guards against a hang.
        let out = crate::harness::bin::output(&mut cmd).await;
        assert_eq!(
            out.status.signal(),
            Some(9),
            "round {round}: warc-write:{n} ended with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "round {round}: warc-write:{n} after {:?}",
            started.elapsed()
        );
        let series = warc::series(&warc_dir, "harvest").unwrap();
        for (_, path) in &series {
            index_within_valid_end(path);
        }
        let newest = series.last().unwrap().1.clone();
        if let Some(kind) = partial_tail_kind(&newest) {
            *tails.entry(kind).or_insert(0) += 1;
        }
    }
    let cut: usize = tails.values().sum();
    // The crash point sync-flushes the member's start: every kill cuts a record.
    assert_eq!(cut, kill_at.len(), "kills inside records: {tails:?}");
    assert!(
        tails.contains_key("revisit"),
        "no kill inside a revisit record: {tails:?}"
    );

    // Undisturbed: until every URL was fetched twice in this run (a full
    // resumed pass and a revisit of each), with the last edition of the
    // edited file served whole, then a clean stop.
    site.version.fetch_add(1, Ordering::SeqCst);
    let edition = format!("{}", site.version.load(Ordering::SeqCst));
    let seen_before = server.log().len();
    let mut child = crate::harness::bin::spawn(&mut crawl.command());
    let mut done = false;
    for _ in 0..15_000 {
        let log = server.log();
        let run = &log[seen_before..];
        let mut per_path: BTreeMap<&str, usize> = BTreeMap::new();
        for r in run.iter().filter(|r| r.path_and_query != "/robots.txt") {
            *per_path.entry(r.path_and_query.as_str()).or_insert(0) += 1;
        }
        let rows = std::fs::read_to_string(targets.join("manifest.jsonl")).unwrap_or_default();
        let latest_saved = rows.lines().any(|l| {
            let row: ManifestRow = serde_json::from_str(l).unwrap();
            row.final_url.ends_with("/edited.csv")
                && std::fs::read_to_string(targets.join(&row.file))
                    .is_ok_and(|b| b.starts_with(&format!("edition,value\n{edition},")))
        });
        if per_path.len() == urls && per_path.values().all(|c| *c >= 2) && latest_saved {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(done, "the undisturbed run never revisited everything");
    let status = crate::harness::bin::stop(&mut child, libc::SIGTERM).await;
    assert!(status.success(), "SIGTERM stop ended with {status}");

    let files = warc::series(&warc_dir, "harvest").unwrap();
    let mut responses = Vec::new();
    let mut profiles: BTreeMap<String, usize> = BTreeMap::new();
    for (_, path) in &files {
        let records = read::read_all(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(records[0].kind(), "warcinfo");
        for r in &records {
            r.check_digests()
                .unwrap_or_else(|e| panic!("{} in {}: {e}", r.kind(), path.display()));
            if r.kind() == "revisit" {
                assert!(r.field("WARC-Refers-To-Target-URI").is_some());
                assert!(r.field("WARC-Refers-To-Date").is_some());
                let profile = r.field("WARC-Profile").unwrap().to_string();
                if profile.ends_with("/identical-payload-digest") {
                    assert!(r.field("WARC-Payload-Digest").unwrap().starts_with("sha1:"));
                }
                *profiles.entry(profile).or_insert(0) += 1;
            }
        }
        let theirs = warcio_accepts(path);
        if let Some(index) = &theirs {
            assert_eq!(index.len(), records.len(), "{}", path.display());
        }
        index_matches(path, theirs.as_deref());
        responses.extend(records.into_iter().filter(|r| r.kind() == "response"));
    }
    assert!(
        profiles.keys().any(|p| p == PROFILE_NOT_MODIFIED),
        "{profiles:?}"
    );
    assert!(
        profiles.keys().any(|p| p == PROFILE_IDENTICAL_PAYLOAD),
        "{profiles:?}"
    );
    let rows = std::fs::read_to_string(targets.join("manifest.jsonl")).unwrap();
    let mut changed = 0;
    for line in rows.lines() {
        let row: ManifestRow = serde_json::from_str(line).unwrap();
        changed += usize::from(row.change == Some(forager::store::ChangeKind::Changed));
        let body = std::fs::read(targets.join(&row.file)).unwrap();
        let digest = warc::sha1_label(&body);
        assert!(
            responses.iter().any(
                |r| r.field("WARC-Target-URI") == Some(row.final_url.as_str())
                    && r.field("WARC-Payload-Digest") == Some(digest.as_str())
            ),
            "{} ({:?}) has no response record with its payload",
            row.final_url,
            row.change
        );
    }
    assert!(changed >= 1, "no changed row:\n{rows}");
    eprintln!(
        "{} kills, tails cut {tails:?}; {} files; revisit profiles {profiles:?}; \
         {} manifest rows ({changed} changed)",
        kill_at.len(),
        files.len(),
        rows.lines().count()
    );
    let _ = server.shutdown().await;
}
