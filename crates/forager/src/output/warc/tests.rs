use super::*;
use crate::exchange::{ExchangeHead, HttpHead};
use proptest::prelude::*;
use std::net::Ipv4Addr;

fn head(body_type: &str) -> ExchangeHead {
    ExchangeHead {
        request: HttpHead {
            start_line: "GET /data/a.csv?x=1 HTTP/1.1".into(),
            headers: vec![
                ("host".into(), b"site.test:8080".to_vec()),
                ("user-agent".into(), b"forager-test".to_vec()),
            ],
        },
        response: HttpHead {
            start_line: "HTTP/1.1 200 OK".into(),
            headers: vec![
                ("content-type".into(), body_type.as_bytes().to_vec()),
                ("transfer-encoding".into(), b"chunked".to_vec()),
                ("etag".into(), b"\"v1\"".to_vec()),
            ],
        },
        remote_ip: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        sent_at: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
    }
}

fn config(dir: &Path, max_size: u64) -> WarcConfig {
    WarcConfig {
        dir: dir.to_path_buf(),
        prefix: "job-1".into(),
        max_size,
        info: vec![("isPartOf".into(), "job-1".into())],
    }
}

#[test]
fn base32_and_sha1_match_the_reference_vectors() {
    // RFC 4648 §10.
    assert_eq!(base32(b""), "");
    assert_eq!(base32(b"f"), "MY======");
    assert_eq!(base32(b"fo"), "MZXQ====");
    assert_eq!(base32(b"foob"), "MZXW6YQ=");
    assert_eq!(base32(b"foobar"), "MZXW6YTBOI======");
    // The payload digest of an empty body, as every CDX shows it.
    assert_eq!(sha1_base32(b""), "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
}

#[test]
fn record_ids_are_version_4_uuids() {
    let id = record_id();
    assert_eq!(id.len(), "<urn:uuid:>".len() + 36);
    let uuid = &id[10..46];
    assert_eq!(&uuid[14..15], "4");
    assert!("89ab".contains(&uuid[19..20]));
    assert_ne!(record_id(), id);
}

#[test]
fn an_exchange_is_archived_as_linked_records_with_correct_digests() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut w, recovery) = WarcWriter::open(config(tmp.path(), DEFAULT_MAX_SIZE)).unwrap();
    assert_eq!(recovery, Recovery::default());
    let body = b"a,b\n1,2\n";
    let meta = Metadata {
        via: Some("http://site.test/".into()),
        tag_path: Some("html/body/ul/li/a".into()),
        label: Some("target".into()),
    };
    let ids = w
        .write_exchange(
            "http://site.test:8080/data/a.csv?x=1",
            &head("text/csv"),
            Payload::Bytes(body),
            false,
            Some(&meta),
        )
        .unwrap();
    w.sync().unwrap();
    let records = read::read_all(w.path()).unwrap();
    let kinds: Vec<&str> = records.iter().map(|r| r.kind()).collect();
    assert_eq!(kinds, ["warcinfo", "response", "request", "metadata"]);
    for r in &records {
        r.check_digests().unwrap();
        assert_eq!(r.version, "WARC/1.1");
    }
    let info = &records[0];
    assert_eq!(info.field("Content-Type"), Some("application/warc-fields"));
    let text = String::from_utf8_lossy(&info.block);
    assert!(text.contains("isPartOf: job-1\r\n"), "{text}");
    let response = &records[1];
    assert_eq!(
        response.field("WARC-Record-ID"),
        Some(ids.response.as_str())
    );
    assert_eq!(
        response.field("WARC-Concurrent-To"),
        Some(ids.request.as_str())
    );
    assert_eq!(response.field("WARC-IP-Address"), Some("127.0.0.1"));
    assert_eq!(
        response.field("WARC-Warcinfo-ID"),
        info.field("WARC-Record-ID")
    );
    assert_eq!(response.http_payload(), Some(&body[..]));
    assert_eq!(
        response.field("WARC-Payload-Digest"),
        Some(sha1_label(body).as_str())
    );
    let http = String::from_utf8_lossy(&response.block);
    assert!(http.starts_with("HTTP/1.1 200 OK\r\n"), "{http}");
    assert!(http.contains("x-archive-orig-transfer-encoding: chunked\r\n"));
    assert!(http.contains("content-length: 8\r\n"));
    assert!(!http.contains("\ntransfer-encoding"));
    let request = &records[2];
    assert_eq!(
        request.field("WARC-Concurrent-To"),
        Some(ids.response.as_str())
    );
    assert!(request
        .block
        .starts_with(b"GET /data/a.csv?x=1 HTTP/1.1\r\nhost: "));
    let metadata = &records[3];
    assert_eq!(
        metadata.field("WARC-Concurrent-To"),
        Some(ids.response.as_str())
    );
    assert_eq!(
        String::from_utf8_lossy(&metadata.block),
        "via: http://site.test/\r\nforager-tag-path: html/body/ul/li/a\r\nforager-label: target\r\n"
    );
}

#[test]
fn a_body_on_disk_is_archived_like_one_in_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let body: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
    let file = tmp.path().join("body.bin");
    fs::write(&file, &body).unwrap();
    let (mut w, _) = WarcWriter::open(config(&tmp.path().join("w"), DEFAULT_MAX_SIZE)).unwrap();
    let ids = w
        .write_exchange(
            "http://site.test/big",
            &head("application/zip"),
            Payload::File(&file),
            true,
            None,
        )
        .unwrap();
    assert_eq!(ids.payload_digest, sha1_label(&body));
    let records = read::read_all(w.path()).unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(records[1].http_payload(), Some(&body[..]));
    assert_eq!(records[1].field("WARC-Truncated"), Some("length"));
    records[1].check_digests().unwrap();
}

#[test]
fn revisits_name_the_earlier_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut w, _) = WarcWriter::open(config(tmp.path(), DEFAULT_MAX_SIZE)).unwrap();
    let first = w
        .write_exchange(
            "http://site.test/a.csv",
            &head("text/csv"),
            Payload::Bytes(b"x"),
            false,
            None,
        )
        .unwrap();
    let mut not_modified = head("text/csv");
    not_modified.response.start_line = "HTTP/1.1 304 Not Modified".into();
    let date = warc_date(SystemTime::UNIX_EPOCH);
    let rv = w
        .write_revisit(&Revisit {
            head: &not_modified,
            target_uri: "http://site.test/a.csv",
            profile: PROFILE_NOT_MODIFIED,
            refers_to_uri: "http://site.test/a.csv",
            refers_to_date: &date,
            refers_to_record: Some(&first.response),
            payload_digest: None,
        })
        .unwrap();
    w.write_revisit(&Revisit {
        head: &head("text/csv"),
        target_uri: "http://site.test/copy.csv",
        profile: PROFILE_IDENTICAL_PAYLOAD,
        refers_to_uri: "http://site.test/a.csv",
        refers_to_date: &date,
        refers_to_record: Some(&first.response),
        payload_digest: Some(&first.payload_digest),
    })
    .unwrap();
    let records = read::read_all(w.path()).unwrap();
    let revisits: Vec<&read::Record> = records.iter().filter(|r| r.kind() == "revisit").collect();
    assert_eq!(revisits.len(), 2);
    assert_eq!(
        revisits[0].field("WARC-Record-ID"),
        Some(rv.response.as_str())
    );
    assert_eq!(
        revisits[0].field("WARC-Profile"),
        Some(PROFILE_NOT_MODIFIED)
    );
    assert_eq!(
        revisits[0].field("WARC-Refers-To"),
        Some(first.response.as_str())
    );
    assert_eq!(
        revisits[0].field("WARC-Refers-To-Date"),
        Some(date.as_str())
    );
    assert_eq!(
        revisits[1].field("WARC-Profile"),
        Some(PROFILE_IDENTICAL_PAYLOAD)
    );
    assert_eq!(
        revisits[1].field("WARC-Payload-Digest"),
        Some(first.payload_digest.as_str())
    );
    for r in &records {
        r.check_digests().unwrap();
    }
}

#[test]
fn files_rotate_at_the_size_and_each_starts_with_warcinfo() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut w, _) = WarcWriter::open(config(tmp.path(), 2000)).unwrap();
    let mut x: u32 = 2_463_534_242;
    let body: Vec<u8> = (0..3000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    for i in 0..4 {
        w.write_exchange(
            &format!("http://site.test/{i}"),
            &head("application/octet-stream"),
            Payload::Bytes(&body),
            false,
            None,
        )
        .unwrap();
    }
    let files = series(tmp.path(), "job-1").unwrap();
    let serials: Vec<u32> = files.iter().map(|(s, _)| *s).collect();
    assert_eq!(serials, [0, 1, 2, 3]);
    for (_, path) in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // PREFIX-TIMESTAMP(17)-SERIAL(5).warc.gz
        assert_eq!(
            name.len(),
            "job-1-".len() + 17 + 1 + 5 + ".warc.gz".len(),
            "{name}"
        );
        let records = read::read_all(path).unwrap();
        assert_eq!(records[0].kind(), "warcinfo");
        assert_eq!(
            records[0].field("WARC-Filename"),
            Some(name.as_str()),
            "warcinfo names its file"
        );
        assert_eq!(records.len(), 3);
    }
}

#[test]
fn reopening_cuts_a_partial_record_and_resumes_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut w, _) = WarcWriter::open(config(tmp.path(), DEFAULT_MAX_SIZE)).unwrap();
    w.write_exchange(
        "http://site.test/a",
        &head("text/csv"),
        Payload::Bytes(b"1,2\n"),
        false,
        None,
    )
    .unwrap();
    let path = w.path().to_path_buf();
    let good_len = w.size();
    drop(w);
    // A crash mid-record: the first half of a complete member.
    let member = {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 4000\r\n\r\n")
            .unwrap();
        gz.write_all(&[b'z'; 4000]).unwrap();
        gz.finish().unwrap()
    };
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(&member[..member.len() / 2]).unwrap();
    drop(f);
    assert!(read::read_all(&path).is_err(), "the tail is unreadable");

    let (mut w, recovery) = WarcWriter::open(config(tmp.path(), DEFAULT_MAX_SIZE)).unwrap();
    assert_eq!(recovery.resumed.as_deref(), Some(path.as_path()));
    assert_eq!(recovery.records_kept, 3);
    assert_eq!(recovery.truncated_bytes, (member.len() / 2) as u64);
    assert_eq!(w.path(), path);
    assert_eq!(w.size(), good_len);
    w.write_exchange(
        "http://site.test/b",
        &head("text/csv"),
        Payload::Bytes(b"3,4\n"),
        false,
        None,
    )
    .unwrap();
    let records = read::read_all(&path).unwrap();
    assert_eq!(records.len(), 5);
    // Records after the resume still point at the file's own warcinfo.
    assert_eq!(
        records[3].field("WARC-Warcinfo-ID"),
        records[0].field("WARC-Record-ID")
    );
}

#[test]
fn a_file_cut_inside_its_warcinfo_gets_a_new_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (w, _) = WarcWriter::open(config(tmp.path(), DEFAULT_MAX_SIZE)).unwrap();
    let path = w.path().to_path_buf();
    drop(w);
    let len = fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let (w, recovery) = WarcWriter::open(config(tmp.path(), DEFAULT_MAX_SIZE)).unwrap();
    assert_eq!(recovery.records_kept, 0);
    drop(w);
    let records = read::read_all(&path).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].kind(), "warcinfo");
}

#[test]
fn prefixes_that_could_leave_the_folder_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for prefix in ["", "../x", "a/b", "a b"] {
        let mut cfg = config(tmp.path(), DEFAULT_MAX_SIZE);
        cfg.prefix = prefix.into();
        assert!(WarcWriter::open(cfg).is_err(), "{prefix:?}");
    }
}

#[test]
fn field_values_stay_on_one_line() {
    assert_eq!(clean_field("a\r\nWARC-Type: x"), "a  WARC-Type: x");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Wherever a crash cuts the file, recovery keeps exactly the records
    /// that were complete, and the file reads cleanly afterwards.
    #[test]
    fn recovery_keeps_every_complete_record(cut_permille in 0u64..1000, bodies in 1usize..5) {
        let tmp = tempfile::tempdir().unwrap();
        let (mut w, _) = WarcWriter::open(config(tmp.path(), DEFAULT_MAX_SIZE)).unwrap();
        let mut ends = vec![w.size()];
        for i in 0..bodies {
            let body = vec![b'a' + i as u8; 100 * (i + 1)];
            w.write_exchange(&format!("http://site.test/{i}"), &head("text/plain"), Payload::Bytes(&body), false, None).unwrap();
            ends.push(w.size());
        }
        let path = w.path().to_path_buf();
        let full = w.size();
        drop(w);
        let cut = full * cut_permille / 1000;
        OpenOptions::new().write(true).open(&path).unwrap().set_len(cut).unwrap();
        let (w, recovery) = WarcWriter::open(config(tmp.path(), DEFAULT_MAX_SIZE)).unwrap();
        drop(w);
        let records = read::read_all(&path).unwrap();
        // Complete exchanges before the cut survive (each is warcinfo + 2 records).
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        if complete == 0 {
            prop_assert_eq!(records.len(), 1);
        } else {
            prop_assert!(records.len() > 2 * (complete - 1));
            prop_assert!(recovery.truncated_bytes < full);
        }
        for r in &records {
            prop_assert!(r.check_digests().is_ok());
        }
    }
}
