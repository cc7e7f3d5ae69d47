//! The CDXJ index beside each WARC file: `PREFIX-TIMESTAMP-SERIAL.cdxj` next
//! to `PREFIX-TIMESTAMP-SERIAL.warc.gz`, in the format pywb writes and reads
//! (`cdx-indexer --cdxj -a`): one line per record but the warcinfo,
//!
//! ```text
//! SURT-KEY TIMESTAMP {"url": "…", "mime": "…", "status": "200", "digest": "…", "length": "…", "offset": "…", "filename": "…"}
//! ```
//!
//! sorted bytewise (as `LC_ALL=C sort` does), so a replay tool can search it
//! without indexing the WARC again. Fields whose value is unknown (`-`) are
//! left out, as pywb does.
//!
//! Consistency with the WARC: the index of the file being written is
//! replaced whole (written aside, synced, renamed) only by
//! [`super::WarcWriter::sync`] *after* the WARC's records are synced, so a
//! line never names bytes that are not durable: a crash can leave an index
//! that lacks the last records, never one that points past the WARC's valid
//! end. When a writer opens a series it checks every file's index (its last
//! line must end where the file ends) and rebuilds any that falls short from
//! the WARC itself ([`super::read::scan_records`]), with the same function
//! ([`entry`]) the writer uses, so a rebuilt line is the line the writer
//! would have written.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Bytes of a record (WARC header, then the start of its block) an index
/// line is made from: enough for any WARC header and HTTP head forager
/// writes; a longer HTTP head gives a line without status and type.
pub const RECORD_PREFIX: usize = 64 << 10;

/// The index of WARC file `warc`: `X.warc.gz` → `X.cdxj`.
pub fn index_path(warc: &Path) -> PathBuf {
    let name = warc
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".warc.gz").unwrap_or(&name);
    warc.with_file_name(format!("{stem}.cdxj"))
}

/// One index line, before sorting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Where the record's gzip member starts, and its compressed length.
    pub offset: u64,
    pub length: u64,
    pub line: String,
}

/// The index line of the record whose gzip member spans `offset..offset+length`
/// of the file `filename`, from the record's first bytes (`prefix`: its WARC
/// header and the start of its block, up to [`RECORD_PREFIX`]). `None` for a
/// warcinfo record (it names no URL) or a header that does not parse.
pub fn entry(prefix: &[u8], offset: u64, length: u64, filename: &str) -> Option<Entry> {
    let head_end = find(prefix, b"\r\n\r\n")?;
    let head = std::str::from_utf8(&prefix[..head_end]).ok()?;
    let field = |name: &str| {
        head.split("\r\n").skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    };
    let kind = field("WARC-Type")?;
    if kind == "warcinfo" {
        return None;
    }
    let url = field("WARC-Target-URI")?;
    let timestamp: String = field("WARC-Date")?
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect();
    let block = &prefix[head_end + 4..];
    let is_http = field("Content-Type").is_some_and(|t| t.starts_with("application/http"));
    let http = if is_http { http_head(block) } else { None };
    // What pywb's indexer puts in `mime` and `status`, record type by record type.
    let mime = match kind {
        "revisit" => Some("warc/revisit".to_string()),
        "response" | "request" => http
            .as_ref()
            .and_then(|h| h.content_type.as_deref())
            .map(mime_of),
        _ => field("Content-Type").map(mime_of),
    };
    let status = match kind {
        "response" => http.as_ref().and_then(|h| h.status.clone()),
        _ => None,
    };
    let digest = field("WARC-Payload-Digest").map(|d| d.strip_prefix("sha1:").unwrap_or(d));
    let mut json = vec![("url", url.to_string())];
    if let Some(m) = mime.filter(|m| !m.is_empty()) {
        json.push(("mime", m));
    }
    if let Some(s) = status {
        json.push(("status", s));
    }
    if let Some(d) = digest.filter(|d| !d.is_empty()) {
        json.push(("digest", d.to_string()));
    }
    json.push(("length", length.to_string()));
    json.push(("offset", offset.to_string()));
    json.push(("filename", filename.to_string()));
    let fields: Vec<String> = json
        .iter()
        .map(|(k, v)| format!("\"{k}\": {}", json_string(v)))
        .collect();
    Some(Entry {
        offset,
        length,
        line: format!("{} {timestamp} {{{}}}", surt(url), fields.join(", ")),
    })
}

/// A JSON string literal (serde_json escapes every control character, so a
/// line never breaks inside a value).
fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The MIME type of a Content-Type value, as pywb keeps it: up to the first `;` or space.
fn mime_of(content_type: &str) -> String {
    content_type
        .split([';', ' '])
        .next()
        .unwrap_or_default()
        .to_string()
}

struct HttpHead {
    status: Option<String>,
    content_type: Option<String>,
}

/// Status and Content-Type of the HTTP head a block starts with.
fn http_head(block: &[u8]) -> Option<HttpHead> {
    let end = find(block, b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&block[..end]);
    let mut lines = head.split("\r\n");
    let start = lines.next()?;
    // A response's start line is `HTTP/1.1 200 OK`; a request's has no status.
    let status = start
        .strip_prefix("HTTP/")
        .and_then(|rest| rest.split(' ').nth(1))
        .filter(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_string);
    let content_type = lines.find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case("content-type")
            .then(|| v.trim().to_string())
    });
    Some(HttpHead {
        status,
        content_type,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The SURT key of a URL as pywb computes it (the `surt` package's default
/// canonicalisation): scheme dropped, host lower-cased without a leading
/// `www`/`wwwN.`, its labels reversed and joined by commas (an IPv4 address
/// too), a port other than the scheme's kept, `)`, then the path and the
/// query lower-cased, a trailing slash dropped (except `/` alone), the query's
/// parameters sorted and the fragment dropped. Session-id stripping, which
/// pywb also does, is not: such URLs get a key pywb would not compute.
pub fn surt(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url) else {
        return url.to_ascii_lowercase();
    };
    let Some(host) = parsed.host_str() else {
        return url.to_ascii_lowercase();
    };
    let host = host.to_ascii_lowercase();
    let host = strip_www(&host);
    let mut key: String = host.rsplit('.').collect::<Vec<_>>().join(",");
    if let Some(port) = parsed.port() {
        key.push_str(&format!(":{port}"));
    }
    key.push(')');
    let mut path = parsed.path().to_ascii_lowercase();
    if path.len() > 1 && path.ends_with('/') {
        path.pop();
    }
    if path.is_empty() {
        path.push('/');
    }
    key.push_str(&path);
    if let Some(query) = parsed.query().filter(|q| !q.is_empty()) {
        let lower = query.to_ascii_lowercase();
        let mut params: Vec<&str> = lower.split('&').collect();
        params.sort_unstable();
        key.push('?');
        key.push_str(&params.join("&"));
    }
    key
}

/// `www.` or `www` and digits then `.` off the front of a host (surt's host massage).
fn strip_www(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix("www") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let Some(tail) = rest[digits..].strip_prefix('.') {
            if !tail.is_empty() {
                return tail;
            }
        }
    }
    host
}

/// The lines of an index file (none when it does not exist).
pub fn read_lines(path: &Path) -> io::Result<Vec<String>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    BufReader::new(file).lines().collect()
}

/// Where the member a line names ends (`offset + length`), if it says.
pub fn line_end(line: &str) -> Option<u64> {
    let json = line.splitn(3, ' ').nth(2)?;
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let number = |k: &str| value.get(k)?.as_str()?.parse::<u64>().ok();
    number("offset")?.checked_add(number("length")?)
}

/// Whether an index covers its WARC file exactly: every line ends within
/// `valid_len`, and the last record of the file has its line. A file holding
/// only its warcinfo record has an empty index and reads as not covered (a
/// rebuild of it costs one record).
pub fn covers(lines: &[String], valid_len: u64) -> bool {
    let mut last = 0;
    for line in lines {
        match line_end(line) {
            Some(end) if end <= valid_len => last = last.max(end),
            _ => return false,
        }
    }
    last == valid_len
}

/// Replaces the index at `path` with `lines` (sorted here): written to a
/// temporary name beside it, synced, renamed over it, and the folder synced,
/// so the file under its name is always a whole index.
pub fn replace(path: &Path, mut lines: Vec<String>) -> io::Result<()> {
    lines.sort_unstable();
    lines.dedup();
    let tmp = path.with_extension("cdxj.partial");
    {
        let mut out = io::BufWriter::new(File::create(&tmp)?);
        for line in &lines {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surt_keys_are_pywbs() {
        // Values from python's `surt.surt`, pywb's canonicaliser.
        let cases = [
            ("http://www.example.com/", "com,example)/"),
            (
                "https://Example.COM/Data/Pop.CSV",
                "com,example)/data/pop.csv",
            ),
            ("http://www2.example.com/a/", "com,example)/a"),
            (
                "http://example.com:8080/x?b=2&a=1#frag",
                "com,example:8080)/x?a=1&b=2",
            ),
            ("http://127.0.0.1:4000/d.csv", "1,0,0,127:4000)/d.csv"),
            ("http://example.com/?", "com,example)/"),
        ];
        for (url, key) in cases {
            assert_eq!(surt(url), key, "{url}");
        }
    }

    fn record(kind: &str, extra: &str, block: &str) -> Vec<u8> {
        format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:x>\r\n\
             WARC-Date: 2026-11-27T16:32:04.123456Z\r\nWARC-Target-URI: http://a.test/d.csv\r\n\
             {extra}Content-Length: {}\r\n\r\n{block}",
            block.len()
        )
        .into_bytes()
    }

    #[test]
    fn lines_carry_what_pywb_reads() {
        let response = record(
            "response",
            "WARC-Payload-Digest: sha1:ABC\r\nContent-Type: application/http; msgtype=response\r\n",
            "HTTP/1.1 200 OK\r\ncontent-type: text/csv; charset=utf-8\r\n\r\na,b\n",
        );
        let e = entry(&response, 10, 20, "f.warc.gz").unwrap();
        assert_eq!(
            e.line,
            "test,a)/d.csv 20261127163204 {\"url\": \"http://a.test/d.csv\", \"mime\": \"text/csv\", \
             \"status\": \"200\", \"digest\": \"ABC\", \"length\": \"20\", \"offset\": \"10\", \
             \"filename\": \"f.warc.gz\"}"
        );
        assert_eq!(line_end(&e.line), Some(30));
        let request = record(
            "request",
            "Content-Type: application/http; msgtype=request\r\n",
            "GET /d.csv HTTP/1.1\r\nhost: a.test\r\n\r\n",
        );
        let e = entry(&request, 30, 5, "f.warc.gz").unwrap();
        assert!(
            !e.line.contains("status") && !e.line.contains("mime"),
            "{}",
            e.line
        );
        let revisit = record(
            "revisit",
            "Content-Type: application/http; msgtype=response\r\n",
            "HTTP/1.1 304 Not Modified\r\n\r\n",
        );
        let e = entry(&revisit, 35, 5, "f.warc.gz").unwrap();
        assert!(e.line.contains("\"mime\": \"warc/revisit\""), "{}", e.line);
        let metadata = record(
            "metadata",
            "Content-Type: application/warc-fields\r\n",
            "via: x\r\n",
        );
        let e = entry(&metadata, 40, 5, "f.warc.gz").unwrap();
        assert!(
            e.line.contains("\"mime\": \"application/warc-fields\""),
            "{}",
            e.line
        );
        assert_eq!(entry(&record("warcinfo", "", ""), 0, 5, "f"), None);
        assert_eq!(entry(b"WARC/1.1\r\nWARC-Type: resp", 0, 5, "f"), None);
    }

    #[test]
    fn coverage_needs_the_last_record_and_nothing_beyond() {
        let line = |o: u64, l: u64| {
            format!("k 1 {{\"url\": \"u\", \"length\": \"{l}\", \"offset\": \"{o}\"}}")
        };
        assert!(covers(&[line(10, 5), line(15, 5)], 20));
        assert!(!covers(&[line(10, 5)], 20), "last record missing");
        assert!(!covers(&[line(10, 5), line(15, 10)], 20), "past the end");
        assert!(!covers(&[], 20));
        assert!(!covers(&["garbage".to_string()], 20));
    }

    #[test]
    fn an_index_is_replaced_whole_and_sorted() {
        let tmp = tempfile::tempdir().unwrap();
        let path = index_path(&tmp.path().join("a-1-00000.warc.gz"));
        assert_eq!(path.file_name().unwrap(), "a-1-00000.cdxj");
        replace(
            &path,
            vec!["b 2 {}".into(), "a 1 {}".into(), "b 2 {}".into()],
        )
        .unwrap();
        assert_eq!(read_lines(&path).unwrap(), vec!["a 1 {}", "b 2 {}"]);
        assert!(!path.with_extension("cdxj.partial").exists());
        assert!(read_lines(&tmp.path().join("none.cdxj"))
            .unwrap()
            .is_empty());
    }
}
