//! Reading `.warc.gz` files back: one gzip member per record.
//!
//! Used by the writer's crash recovery ([`scan`]: where the last complete
//! record ends) and by tests and tools that check what was written
//! ([`read_all`], [`Record::check_digests`]). Must not touch: anything but
//! the file it is given.

use flate2::bufread::GzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, Write};
use std::path::Path;

/// Largest WARC header block accepted (field lines before the block).
const MAX_WARC_HEADER: usize = 1 << 20;

/// One record, fully in memory (for tests and small files).
#[derive(Clone, Debug)]
pub struct Record {
    /// Offset of its gzip member in the file.
    pub offset: u64,
    /// `WARC/1.1`.
    pub version: String,
    /// Named fields in file order.
    pub fields: Vec<(String, String)>,
    pub block: Vec<u8>,
}

impl Record {
    /// The first value of field `name` (case-insensitive).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `WARC-Type`.
    pub fn kind(&self) -> &str {
        self.field("WARC-Type").unwrap_or_default()
    }

    /// The HTTP payload of an `application/http` block: what follows the HTTP head.
    pub fn http_payload(&self) -> Option<&[u8]> {
        let end = find(&self.block, b"\r\n\r\n")?;
        Some(&self.block[end + 4..])
    }

    /// Whether the block and payload digests (when present) match the bytes.
    pub fn check_digests(&self) -> Result<(), String> {
        if let Some(d) = self.field("WARC-Block-Digest") {
            check_labelled(d, &self.block).map_err(|e| format!("block digest: {e}"))?;
        }
        // A revisit's payload is elsewhere: its payload digest names that one.
        if self.kind() != "revisit" {
            if let Some(d) = self.field("WARC-Payload-Digest") {
                let payload = self
                    .http_payload()
                    .ok_or("payload digest on a block without an HTTP head")?;
                check_labelled(d, payload).map_err(|e| format!("payload digest: {e}"))?;
            }
        }
        Ok(())
    }
}

fn check_labelled(labelled: &str, bytes: &[u8]) -> Result<(), String> {
    let want = match labelled.split_once(':') {
        Some(("sha1", v)) => v,
        _ => return Err(format!("unsupported digest {labelled:?}")),
    };
    let got = super::sha1_base32(bytes);
    if got == want {
        Ok(())
    } else {
        Err(format!("recorded {want}, computed {got}"))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Parse one decompressed record.
pub fn parse_record(bytes: &[u8], offset: u64) -> Result<Record, String> {
    let head_end = find(bytes, b"\r\n\r\n").ok_or("no end of the WARC header")?;
    let head = std::str::from_utf8(&bytes[..head_end]).map_err(|_| "WARC header is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let version = lines.next().unwrap_or_default().to_string();
    if !version.starts_with("WARC/1.") {
        return Err(format!("not a WARC record: {version:?}"));
    }
    let mut fields = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("malformed field line {line:?}"))?;
        fields.push((name.trim().to_string(), value.trim().to_string()));
    }
    let length: usize = fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
        .and_then(|(_, v)| v.parse().ok())
        .ok_or("no Content-Length")?;
    let block_start = head_end + 4;
    let block_end = block_start + length;
    if bytes.len() != block_end + 4 || &bytes[block_end..] != b"\r\n\r\n" {
        return Err(format!(
            "record is {} bytes, its header announces {}",
            bytes.len(),
            block_end + 4
        ));
    }
    Ok(Record {
        offset,
        version,
        fields,
        block: bytes[block_start..block_end].to_vec(),
    })
}

/// Every record of a file, each checked to be one complete gzip member holding one record.
pub fn read_all(path: &Path) -> Result<Vec<Record>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = BufReader::new(file);
    let mut records = Vec::new();
    loop {
        let offset = reader
            .stream_position()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if reader.fill_buf().map_err(|e| e.to_string())?.is_empty() {
            return Ok(records);
        }
        let mut bytes = Vec::new();
        GzDecoder::new(&mut reader)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{} at {offset}: {e}", path.display()))?;
        records.push(parse_record(&bytes, offset).map_err(|e| format!("at {offset}: {e}"))?);
    }
}

/// What a scan of a file found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// Complete records.
    pub records: u64,
    /// Where the last complete record ends: the length the file should have.
    pub valid_len: u64,
    /// The file's length.
    pub file_len: u64,
}

/// Walks the members of `file` without holding a record in memory, and stops
/// at the first one that is cut, corrupt, or not one well-formed record.
/// Appends only ever damage a file's tail, so everything before is kept.
pub fn scan(file: &File) -> io::Result<Scan> {
    scan_records(file, 0, |_, _, _| {})
}

/// [`scan`], calling `each(offset, length, prefix)` for every complete
/// record: where its gzip member starts, its compressed length, and its
/// first `prefix_len` decompressed bytes (WARC header, then the start of its
/// block), from which the WARC index is rebuilt ([`super::cdx`]).
pub fn scan_records(
    file: &File,
    prefix_len: usize,
    mut each: impl FnMut(u64, u64, &[u8]),
) -> io::Result<Scan> {
    let file_len = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(256 << 10, file);
    reader.rewind()?;
    let mut scan = Scan {
        records: 0,
        valid_len: 0,
        file_len,
    };
    loop {
        if reader.fill_buf()?.is_empty() {
            return Ok(scan);
        }
        let mut check = RecordCheck {
            prefix_len,
            ..RecordCheck::default()
        };
        let copied = io::copy(&mut GzDecoder::new(&mut reader), &mut check);
        if copied.is_err() || !check.complete() {
            return Ok(scan);
        }
        let end = reader.stream_position()?;
        each(scan.valid_len, end - scan.valid_len, &check.prefix);
        scan.records += 1;
        scan.valid_len = end;
    }
}

/// Checks a decompressed record as it streams by: a WARC header whose
/// Content-Length matches the bytes that follow, ending in CRLF CRLF.
#[derive(Default)]
struct RecordCheck {
    head: Vec<u8>,
    /// Header length (up to and including its blank line) and Content-Length, once known.
    expected: Option<(usize, u64)>,
    bad: bool,
    total: u64,
    tail: [u8; 4],
    /// The record's first bytes, kept up to `prefix_len`.
    prefix: Vec<u8>,
    prefix_len: usize,
}

impl RecordCheck {
    fn complete(&self) -> bool {
        match self.expected {
            Some((head, length)) => {
                !self.bad && self.total == head as u64 + length + 4 && &self.tail == b"\r\n\r\n"
            }
            None => false,
        }
    }
}

impl Write for RecordCheck {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.total += buf.len() as u64;
        let room = self.prefix_len.saturating_sub(self.prefix.len());
        self.prefix.extend_from_slice(&buf[..buf.len().min(room)]);
        for &b in buf.iter().rev().take(4).rev() {
            self.tail.rotate_left(1);
            self.tail[3] = b;
        }
        if self.expected.is_none() && !self.bad {
            let room = MAX_WARC_HEADER.saturating_sub(self.head.len());
            self.head.extend_from_slice(&buf[..buf.len().min(room)]);
            if let Some(end) = find(&self.head, b"\r\n\r\n") {
                let parsed = std::str::from_utf8(&self.head[..end])
                    .ok()
                    .filter(|h| h.starts_with("WARC/1."))
                    .and_then(|h| {
                        h.split("\r\n").find_map(|l| {
                            let (n, v) = l.split_once(':')?;
                            n.trim()
                                .eq_ignore_ascii_case("Content-Length")
                                .then(|| v.trim().parse::<u64>().ok())?
                        })
                    });
                match parsed {
                    Some(length) => self.expected = Some((end + 4, length)),
                    None => self.bad = true,
                }
                self.head = Vec::new();
            } else if self.head.len() >= MAX_WARC_HEADER {
                self.bad = true;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
