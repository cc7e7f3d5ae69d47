//! WARC 1.1 files (ISO 28500:2017): `DIR/PREFIX-TIMESTAMP-SERIAL.warc.gz`.
//!
//! Owns: the record formats forager writes (warcinfo, request, response,
//! revisit, metadata), their digests, gzip framing, rotation and crash
//! recovery of WARC files. Must not touch: the network, crawl decisions, the
//! store, target files other than reading a body it is handed.
//!
//! Every record is its own gzip member, so a reader can seek to any record
//! and skip a damaged one; a file is never compressed as one stream. Digests
//! are SHA-1 in base32 (`sha1:…`), the form CDX indexes, pywb, Heritrix and
//! warcio all expect; target files keep their SHA-256 names, so the manifest
//! and the WARC name one body by two digests.
//!
//! Crash safety: appends only. [`WarcWriter::open`] resumes the newest file
//! of the prefix after walking its members and cutting a partial last record
//! ([`read::scan`]); [`WarcWriter::sync`] makes every record written so far
//! durable, and must be called before the manifest rows of those exchanges
//! commit, so that no manifest row outlives its response record.
//!
//! Bodies are archived as forager received them: decoded (reqwest strips a
//! Content-Encoding) and possibly cut at the job's size cap. The HTTP head in
//! a response record is rewritten to match: `Transfer-Encoding` and
//! `Content-Encoding` are kept as `X-Archive-Orig-…` fields, Content-Length is
//! the archived length, and a cut body carries `WARC-Truncated: length`. The
//! warcinfo record says so.
//!
//! Each file has its CDXJ index beside it ([`cdx`]), replaced by
//! [`WarcWriter::sync`] after the records it names are durable, and checked
//! (rebuilt from the file when it falls short) when a series is opened.

pub mod cdx;
pub mod read;

use crate::crashpoint::{self, CrashPoint};
use crate::exchange::{ExchangeHead, HttpHead};
use flate2::write::GzEncoder;
use flate2::Compression;
use sha1::{Digest, Sha1};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Default size after which a new file is started (the size Heritrix uses).
pub const DEFAULT_MAX_SIZE: u64 = forager_core::config::DEFAULT_WARC_MAX_SIZE;

/// The revisit profiles of WARC 1.1 §6.7.
pub const PROFILE_IDENTICAL_PAYLOAD: &str =
    "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
pub const PROFILE_NOT_MODIFIED: &str =
    "http://netpreserve.org/warc/1.1/revisit/server-not-modified";

/// Where and how a writer writes.
#[derive(Clone, Debug)]
pub struct WarcConfig {
    pub dir: PathBuf,
    /// File name prefix: `[A-Za-z0-9_-]`, e.g. the job name.
    pub prefix: String,
    /// A new file is started before an exchange once the current one holds this many bytes.
    pub max_size: u64,
    /// The fields of each file's warcinfo record (`software`, `format` and
    /// `conformsTo` are added).
    pub info: Vec<(String, String)>,
}

/// The body of a response: in memory, or a file already on disk (read twice:
/// once for the digests, which precede the block, once to copy it).
#[derive(Clone, Copy, Debug)]
pub enum Payload<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

/// What forager knew about an exchange: a metadata record's fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    /// The page the link was found on.
    pub via: Option<String>,
    /// The link's tag path (its action).
    pub tag_path: Option<String>,
    /// The classifier's label: `target`, `html` or `neither`.
    pub label: Option<String>,
}

/// The record ids of one archived exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeIds {
    pub response: String,
    pub request: String,
    pub metadata: Option<String>,
    /// The response's payload digest (`sha1:…`), for later revisit records.
    pub payload_digest: String,
    /// The file the records are in.
    pub file: PathBuf,
}

/// A revisit: the server said 304, or sent a body identical to one archived before.
#[derive(Clone, Debug)]
pub struct Revisit<'a> {
    pub head: &'a ExchangeHead,
    pub target_uri: &'a str,
    /// [`PROFILE_NOT_MODIFIED`] or [`PROFILE_IDENTICAL_PAYLOAD`].
    pub profile: &'static str,
    /// The earlier capture: its URI, its WARC-Date, its record id when known.
    pub refers_to_uri: &'a str,
    pub refers_to_date: &'a str,
    pub refers_to_record: Option<&'a str>,
    /// The payload digest of the earlier capture (required for identical-payload-digest).
    pub payload_digest: Option<&'a str>,
}

/// An open WARC series: the current file, rotated at a size.
pub struct WarcWriter {
    cfg: WarcConfig,
    file: File,
    path: PathBuf,
    size: u64,
    serial: u32,
    warcinfo_id: String,
    /// Index lines of the records written to this file since its index was
    /// last replaced ([`WarcWriter::sync`]).
    pending: Vec<cdx::Entry>,
}

impl std::fmt::Debug for WarcWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarcWriter")
            .field("path", &self.path())
            .field("size", &self.size())
            .finish_non_exhaustive()
    }
}

/// What opening found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The file resumed, if any.
    pub resumed: Option<PathBuf>,
    /// Bytes cut from its tail (a record a crash interrupted).
    pub truncated_bytes: u64,
    /// Complete records kept in it.
    pub records_kept: u64,
}

impl WarcWriter {
    /// Opens the series `cfg.prefix` in `cfg.dir`: resumes its newest file
    /// (cutting a partial last record) or starts one. Files are never rewritten.
    pub fn open(cfg: WarcConfig) -> io::Result<(WarcWriter, Recovery)> {
        check_prefix(&cfg.prefix)?;
        fs::create_dir_all(&cfg.dir)?;
        let mut recovery = Recovery::default();
        let newest = series(&cfg.dir, &cfg.prefix)?.pop();
        if let Some((serial, path)) = newest {
            let mut file = OpenOptions::new().read(true).write(true).open(&path)?;
            let scan = read::scan(&file)?;
            if scan.valid_len < scan.file_len {
                tracing::warn!(file = %path.display(), kept = scan.valid_len, cut = scan.file_len - scan.valid_len,
                    "WARC file ends in a partial record (interrupted write); cutting it");
                file.set_len(scan.valid_len)?;
                file.sync_all()?;
            }
            file.seek(SeekFrom::End(0))?;
            recovery = Recovery {
                resumed: Some(path.clone()),
                truncated_bytes: scan.file_len - scan.valid_len,
                records_kept: scan.records,
            };
            if scan.records == 0 || scan.valid_len < cfg.max_size {
                let mut w = WarcWriter {
                    cfg,
                    file,
                    path,
                    size: scan.valid_len,
                    serial,
                    warcinfo_id: String::new(),
                    pending: Vec::new(),
                };
                reindex_series(&w.cfg.dir, &w.cfg.prefix)?;
                if scan.records == 0 {
                    w.write_warcinfo()?;
                } else {
                    // Later records of the file keep pointing at its own warcinfo.
                    w.warcinfo_id = first_record_id(&w.path)?.unwrap_or_default();
                }
                return Ok((w, recovery));
            }
            reindex_series(&cfg.dir, &cfg.prefix)?;
            let mut w = WarcWriter::create(cfg, serial + 1)?;
            w.write_warcinfo()?;
            return Ok((w, recovery));
        }
        let mut w = WarcWriter::create(cfg, 0)?;
        w.write_warcinfo()?;
        Ok((w, recovery))
    }

    fn create(cfg: WarcConfig, serial: u32) -> io::Result<WarcWriter> {
        let name = format!(
            "{}-{}-{serial:05}.warc.gz",
            cfg.prefix,
            file_timestamp(SystemTime::now())
        );
        let path = cfg.dir.join(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        File::open(&cfg.dir)?.sync_all()?;
        Ok(WarcWriter {
            cfg,
            file,
            path,
            size: 0,
            serial,
            warcinfo_id: String::new(),
            pending: Vec::new(),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Makes every record written so far durable, then its index line: the
    /// index is replaced only once the records it names are on disk, so it
    /// never points past the file's valid end, whenever the process dies.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        self.flush_index()
    }

    /// Whether records were written since the last [`WarcWriter::sync`].
    pub fn has_unindexed(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Replaces the current file's index with its lines and the pending
    /// ones. Call it only when the pending records are durable. On failure
    /// the pending lines are kept for the next try.
    fn flush_index(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let path = cdx::index_path(&self.path);
        let mut lines = cdx::read_lines(&path)?;
        lines.extend(self.pending.iter().map(|e| e.line.clone()));
        cdx::replace(&path, lines)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        self.pending.clear();
        Ok(())
    }

    fn write_warcinfo(&mut self) -> io::Result<()> {
        let id = record_id();
        let mut block = Vec::new();
        let mut fields = vec![
            (
                "software".to_string(),
                concat!("forager/", env!("CARGO_PKG_VERSION")).to_string(),
            ),
            ("format".to_string(), "WARC File Format 1.1".to_string()),
            (
                "conformsTo".to_string(),
                "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
                    .to_string(),
            ),
        ];
        fields.extend(self.cfg.info.iter().cloned());
        for (name, value) in &fields {
            block.extend_from_slice(clean_field(name).as_bytes());
            block.extend_from_slice(b": ");
            block.extend_from_slice(clean_field(value).as_bytes());
            block.extend_from_slice(b"\r\n");
        }
        let filename = file_name_of(&self.path);
        let header = Header::new("warcinfo", &id, SystemTime::now())
            .field("WARC-Filename", &filename)
            .field("Content-Type", "application/warc-fields");
        self.write_bytes_record(header, &block)?;
        self.warcinfo_id = id;
        Ok(())
    }

    /// Starts the next file when this one is full (and holds more than its warcinfo).
    fn rotate_if_full(&mut self) -> io::Result<()> {
        if self.size < self.cfg.max_size {
            return Ok(());
        }
        self.file.sync_all()?;
        // The full file's index is complete before the next file exists.
        self.flush_index()?;
        let next = WarcWriter::create(self.cfg.clone(), self.serial + 1)?;
        *self = next;
        self.write_warcinfo()?;
        tracing::info!(file = %self.path.display(), "new WARC file");
        Ok(())
    }

    /// Archives one exchange: response, request (linked by
    /// WARC-Concurrent-To) and, when given, a metadata record — all in one file.
    pub fn write_exchange(
        &mut self,
        target_uri: &str,
        head: &ExchangeHead,
        payload: Payload<'_>,
        truncated: bool,
        meta: Option<&Metadata>,
    ) -> io::Result<ExchangeIds> {
        self.rotate_if_full()?;
        let request_id = record_id();
        let date = head.sent_at;
        let (response_id, payload_digest) = self.write_response(
            target_uri,
            &head.response,
            date,
            head.remote_ip,
            Some(&request_id),
            payload,
            truncated,
        )?;

        let request = head.request.to_bytes();
        let mut header = Header::new("request", &request_id, date)
            .field("WARC-Target-URI", &clean_field(target_uri))
            .field("WARC-Warcinfo-ID", &self.warcinfo_id.clone());
        if let Some(ip) = head.remote_ip {
            header = header.field("WARC-IP-Address", &ip_field(ip));
        }
        let header = header
            .field("WARC-Concurrent-To", &response_id)
            .field("WARC-Block-Digest", &sha1_label(&request))
            .field("Content-Type", "application/http; msgtype=request");
        self.write_bytes_record(header, &request)?;

        let metadata = match meta {
            Some(m) => Some(self.write_metadata(target_uri, &response_id, date, m)?),
            None => None,
        };
        Ok(ExchangeIds {
            response: response_id,
            request: request_id,
            metadata,
            payload_digest,
            file: self.path.clone(),
        })
    }

    /// Archives a response whose exchange was not recorded (`forager export
    /// --warc`): a response record with the head given, and a metadata
    /// record; no request record (inventing one would be fabrication).
    pub fn write_reconstructed(
        &mut self,
        target_uri: &str,
        response: &HttpHead,
        date: SystemTime,
        payload: Payload<'_>,
        truncated: bool,
        meta: &Metadata,
    ) -> io::Result<ExchangeIds> {
        self.rotate_if_full()?;
        let (response_id, payload_digest) =
            self.write_response(target_uri, response, date, None, None, payload, truncated)?;
        let metadata = self.write_metadata(target_uri, &response_id, date, meta)?;
        Ok(ExchangeIds {
            response: response_id,
            request: String::new(),
            metadata: Some(metadata),
            payload_digest,
            file: self.path.clone(),
        })
    }

    /// A response record; returns its id and payload digest.
    #[allow(clippy::too_many_arguments)]
    fn write_response(
        &mut self,
        target_uri: &str,
        response: &HttpHead,
        date: SystemTime,
        ip: Option<IpAddr>,
        concurrent_to: Option<&str>,
        payload: Payload<'_>,
        truncated: bool,
    ) -> io::Result<(String, String)> {
        let response_id = record_id();
        let length = payload_len(payload)?;
        let response_head = archived_response_head(response, length).to_bytes();
        let (block_digest, payload_digest) = digests(&response_head, payload)?;
        let mut header = Header::new("response", &response_id, date)
            .field("WARC-Target-URI", &clean_field(target_uri))
            .field("WARC-Warcinfo-ID", &self.warcinfo_id.clone());
        if let Some(ip) = ip {
            header = header.field("WARC-IP-Address", &ip_field(ip));
        }
        if let Some(c) = concurrent_to {
            header = header.field("WARC-Concurrent-To", c);
        }
        header = header
            .field("WARC-Block-Digest", &block_digest)
            .field("WARC-Payload-Digest", &payload_digest);
        if truncated {
            header = header.field("WARC-Truncated", "length");
        }
        let header = header.field("Content-Type", "application/http; msgtype=response");
        let total = response_head.len() as u64 + length;
        self.write_record(header, total, &response_head, |out| {
            out.write_all(&response_head)?;
            copy_payload(payload, length, out)
        })?;
        Ok((response_id, payload_digest))
    }

    /// A `metadata` record about the capture `concurrent_to`.
    pub fn write_metadata(
        &mut self,
        target_uri: &str,
        concurrent_to: &str,
        date: SystemTime,
        meta: &Metadata,
    ) -> io::Result<String> {
        let id = record_id();
        let mut block = Vec::new();
        let lines = [
            ("via", &meta.via),
            ("forager-tag-path", &meta.tag_path),
            ("forager-label", &meta.label),
        ];
        for (name, value) in lines {
            if let Some(v) = value {
                block.extend_from_slice(format!("{name}: {}\r\n", clean_field(v)).as_bytes());
            }
        }
        let header = Header::new("metadata", &id, date)
            .field("WARC-Target-URI", &clean_field(target_uri))
            .field("WARC-Warcinfo-ID", &self.warcinfo_id.clone())
            .field("WARC-Concurrent-To", concurrent_to)
            .field("Content-Type", "application/warc-fields");
        self.write_bytes_record(header, &block)?;
        Ok(id)
    }

    /// A `revisit` record (and the request that caused it): the block is the
    /// response head only; the payload is the earlier capture's.
    pub fn write_revisit(&mut self, rv: &Revisit<'_>) -> io::Result<ExchangeIds> {
        self.rotate_if_full()?;
        let id = record_id();
        let request_id = record_id();
        let date = rv.head.sent_at;
        let block = rv.head.response.to_bytes();
        let mut header = Header::new("revisit", &id, date)
            .field("WARC-Target-URI", &clean_field(rv.target_uri))
            .field("WARC-Warcinfo-ID", &self.warcinfo_id.clone());
        if let Some(ip) = rv.head.remote_ip {
            header = header.field("WARC-IP-Address", &ip_field(ip));
        }
        header = header
            .field("WARC-Concurrent-To", &request_id)
            .field("WARC-Profile", rv.profile)
            .field("WARC-Refers-To-Target-URI", &clean_field(rv.refers_to_uri))
            .field("WARC-Refers-To-Date", &clean_field(rv.refers_to_date));
        if let Some(r) = rv.refers_to_record {
            header = header.field("WARC-Refers-To", &clean_field(r));
        }
        header = header.field("WARC-Block-Digest", &sha1_label(&block));
        if let Some(d) = rv.payload_digest {
            header = header.field("WARC-Payload-Digest", &clean_field(d));
        }
        // The block stops after the head: a reader must not expect the payload here.
        let header = header
            .field("WARC-Truncated", "length")
            .field("Content-Type", "application/http; msgtype=response");
        self.write_bytes_record(header, &block)?;

        let request = rv.head.request.to_bytes();
        let header = Header::new("request", &request_id, date)
            .field("WARC-Target-URI", &clean_field(rv.target_uri))
            .field("WARC-Warcinfo-ID", &self.warcinfo_id.clone())
            .field("WARC-Concurrent-To", &id)
            .field("WARC-Block-Digest", &sha1_label(&request))
            .field("Content-Type", "application/http; msgtype=request");
        self.write_bytes_record(header, &request)?;
        Ok(ExchangeIds {
            response: id,
            request: request_id,
            metadata: None,
            payload_digest: rv.payload_digest.unwrap_or_default().to_string(),
            file: self.path.clone(),
        })
    }

    fn write_bytes_record(&mut self, header: Header, block: &[u8]) -> io::Result<()> {
        self.write_record(header, block.len() as u64, block, |out| {
            out.write_all(block)
        })
    }

    /// Writes one record as one gzip member, and keeps its index line for
    /// the next [`WarcWriter::sync`] (`block_start`: the first bytes of the
    /// block, where an HTTP head says the status and type). On any error the
    /// file is cut back to where the member began, so a full disk never
    /// leaves a partial record behind a live writer.
    fn write_record(
        &mut self,
        header: Header,
        length: u64,
        block_start: &[u8],
        block: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let start = self.size;
        let head = header.finish(length);
        let result = (|| {
            let buffered = BufWriter::with_capacity(256 << 10, &mut self.file);
            let mut gz = GzEncoder::new(buffered, Compression::default());
            gz.write_all(&head)?;
            block(&mut gz)?;
            if crashpoint::is_armed(CrashPoint::WarcWrite) {
                // The crash test wants the member's start on disk when it
                // dies: a sync flush pushes the header and block out of the
                // compressor (flushing only the buffer below it leaves a
                // small record wholly inside deflate's window, and the
                // partial member on disk a bare gzip header).
                gz.flush()?;
                crashpoint::reached(CrashPoint::WarcWrite);
            }
            gz.write_all(b"\r\n\r\n")?;
            let mut buffered = gz.finish()?;
            buffered.flush()?;
            Ok(())
        })();
        match result {
            Ok(()) => {
                self.size = self.file.stream_position()?;
                // The line is made from the record's first bytes, as a
                // rebuild from the file makes it (`reindex_series`).
                let mut prefix = head;
                let room = cdx::RECORD_PREFIX.saturating_sub(prefix.len());
                prefix.extend_from_slice(&block_start[..block_start.len().min(room)]);
                let filename = file_name_of(&self.path);
                if let Some(entry) = cdx::entry(&prefix, start, self.size - start, &filename) {
                    self.pending.push(entry);
                }
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(start);
                let _ = self.file.seek(SeekFrom::Start(start));
                Err(e)
            }
        }
    }
}

/// A writer dropped with records its index lacks (a run that ended without
/// a last sync) syncs them: the index is then whole without waiting for the
/// series to be opened again. A failure costs nothing but that wait.
impl Drop for WarcWriter {
    fn drop(&mut self) {
        if self.has_unindexed() {
            if let Err(e) = self.sync() {
                tracing::warn!(file = %self.path.display(), error = %e,
                    "WARC index not updated at close; it is rebuilt when the series is opened again");
            }
        }
    }
}

/// A WARC header being built; `WARC-Type`, `WARC-Record-ID` and `WARC-Date` first.
struct Header(String);

impl Header {
    fn new(kind: &str, id: &str, date: SystemTime) -> Header {
        Header(format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: {id}\r\nWARC-Date: {}\r\n",
            warc_date(date)
        ))
    }

    fn field(mut self, name: &str, value: &str) -> Header {
        self.0.push_str(name);
        self.0.push_str(": ");
        self.0.push_str(value);
        self.0.push_str("\r\n");
        self
    }

    fn finish(self, length: u64) -> Vec<u8> {
        let mut s = self.0;
        s.push_str(&format!("Content-Length: {length}\r\n\r\n"));
        s.into_bytes()
    }
}

/// A WARC field value on one line: control characters (CR, LF, …) become spaces.
fn clean_field(value: &str) -> String {
    value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn ip_field(ip: IpAddr) -> String {
    // An IPv4-mapped IPv6 peer is an IPv4 peer.
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(|v4| v4.to_string())
            .unwrap_or_else(|| v6.to_string()),
        IpAddr::V4(v4) => v4.to_string(),
    }
}

/// The response head as archived with a decoded, possibly cut body of `length` bytes.
pub fn archived_response_head(head: &HttpHead, length: u64) -> HttpHead {
    let mut headers = Vec::with_capacity(head.headers.len() + 1);
    for (name, value) in &head.headers {
        if name.eq_ignore_ascii_case("content-length") {
            continue;
        }
        if name.eq_ignore_ascii_case("transfer-encoding")
            || name.eq_ignore_ascii_case("content-encoding")
        {
            headers.push((format!("x-archive-orig-{name}"), value.clone()));
            continue;
        }
        headers.push((name.clone(), value.clone()));
    }
    headers.push((
        "content-length".to_string(),
        length.to_string().into_bytes(),
    ));
    HttpHead {
        start_line: head.start_line.clone(),
        headers,
    }
}

fn payload_len(payload: Payload<'_>) -> io::Result<u64> {
    match payload {
        Payload::Bytes(b) => Ok(b.len() as u64),
        Payload::File(p) => Ok(fs::metadata(p)?.len()),
    }
}

/// Block digest (head + payload) and payload digest, both `sha1:BASE32`.
fn digests(head: &[u8], payload: Payload<'_>) -> io::Result<(String, String)> {
    let mut block = Sha1::new();
    let mut body = Sha1::new();
    block.update(head);
    match payload {
        Payload::Bytes(b) => {
            block.update(b);
            body.update(b);
        }
        Payload::File(p) => {
            let mut f = File::open(p)?;
            let mut buf = vec![0u8; 256 << 10];
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                block.update(&buf[..n]);
                body.update(&buf[..n]);
            }
        }
    }
    Ok((
        format!("sha1:{}", base32(&block.finalize())),
        format!("sha1:{}", base32(&body.finalize())),
    ))
}

/// Copies exactly `length` payload bytes (a file that changed size in between is an error).
fn copy_payload(payload: Payload<'_>, length: u64, out: &mut dyn Write) -> io::Result<()> {
    match payload {
        Payload::Bytes(b) => out.write_all(b),
        Payload::File(p) => {
            let mut f = File::open(p)?.take(length);
            let copied = io::copy(&mut f, out)?;
            if copied != length {
                return Err(io::Error::other(format!(
                    "{} changed size while being archived",
                    p.display()
                )));
            }
            Ok(())
        }
    }
}

/// `sha1:BASE32` of `bytes`.
pub fn sha1_label(bytes: &[u8]) -> String {
    format!("sha1:{}", sha1_base32(bytes))
}

/// SHA-1 of `bytes` in RFC 4648 base32 (the form of WARC digests and CDX).
pub fn sha1_base32(bytes: &[u8]) -> String {
    base32(&Sha1::digest(bytes))
}

/// RFC 4648 base32, upper case, with padding.
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                let idx = ((bits >> (35 - i * 5)) & 31) as usize;
                out.push(char::from(ALPHABET[idx]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `<urn:uuid:…>`, a random (version 4) UUID.
pub fn record_id() -> String {
    use rand::Rng;
    let mut b: [u8; 16] = rand::rng().random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "<urn:uuid:{}-{}-{}-{}-{}>",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// WARC-Date: W3C date-time in UTC with microseconds (WARC 1.1 allows a fraction).
pub fn warc_date(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// `YYYYMMDDhhmmssSSS`, the 17-digit timestamp of WARC file names.
fn file_timestamp(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t)
        .to_string()
        .chars()
        .filter(char::is_ascii_digit)
        .collect()
}

fn check_prefix(prefix: &str) -> io::Result<()> {
    if prefix.is_empty()
        || prefix.len() > 100
        || !prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid WARC file prefix {prefix:?}: use 1 to 100 of A-Z a-z 0-9 _ -"),
        ));
    }
    Ok(())
}

/// The files of a series, by serial: `PREFIX-<17 digits>-<serial>.warc.gz`.
pub fn series(dir: &Path, prefix: &str) -> io::Result<Vec<(u32, PathBuf)>> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name
            .strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| r.strip_suffix(".warc.gz"))
        else {
            continue;
        };
        let Some((stamp, serial)) = rest.split_once('-') else {
            continue;
        };
        if stamp.len() != 17 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(serial) = serial.parse::<u32>() {
            out.push((serial, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// The last component of a path, as text.
fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Checks the index of every file of a series and rebuilds, from the file,
/// each that does not cover it exactly ([`cdx::covers`]): a crash between a
/// record's sync and its index's, a rotation cut short, or a file written
/// before forager kept indexes. Call it once the newest file's partial tail
/// is cut.
fn reindex_series(dir: &Path, prefix: &str) -> io::Result<()> {
    for (_, path) in series(dir, prefix)? {
        let index = cdx::index_path(&path);
        let file = File::open(&path)?;
        let len = file.metadata()?.len();
        if cdx::covers(&cdx::read_lines(&index)?, len) {
            continue;
        }
        let filename = file_name_of(&path);
        let mut lines = Vec::new();
        read::scan_records(&file, cdx::RECORD_PREFIX, |offset, length, head| {
            if let Some(entry) = cdx::entry(head, offset, length, &filename) {
                lines.push(entry.line);
            }
        })?;
        lines.sort_unstable();
        // A file with only its warcinfo never "covers": its empty index is
        // written once and left alone after that.
        if index.exists() && cdx::read_lines(&index)? == lines {
            continue;
        }
        tracing::info!(file = %path.display(), lines = lines.len(), "WARC index rebuilt from its file");
        cdx::replace(&index, lines)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", index.display())))?;
    }
    Ok(())
}

/// The record id of a file's first record (its warcinfo).
fn first_record_id(path: &Path) -> io::Result<Option<String>> {
    let file = File::open(path)?;
    let mut gz = flate2::read::GzDecoder::new(file);
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while head.len() < (64 << 10) {
        let n = gz.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head);
    Ok(text.split("\r\n").find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case("WARC-Record-ID")
            .then(|| v.trim().to_string())
    }))
}

#[cfg(test)]
mod tests;
