//! `targets/<job>/crawl.log`: one JSON line per request and per link not
//! followed, with the reason — what Heritrix's `crawl.log` is to its users:
//! the answer to "why was this file not harvested?".
//!
//! ```text
//! {"ts":"2026-11-25T08:45:00.123Z","event":"request","method":"GET","url":"https://a.org/x.csv","status":200,"bytes":5120,"label":"target","saved":true,"ms":41}
//! {"ts":"2026-11-25T08:45:00.130Z","event":"skip","url":"https://b.org/","reason":"scope","from":"https://a.org/"}
//! ```
//!
//! Rotated at [`MAX_LOG_BYTES`]: `crawl.log` becomes `crawl.log.1`, the older
//! ones shift up, and [`KEPT_OLD_LOGS`] are kept. The log is a diagnostic,
//! not state: lines are buffered and flushed at each checkpoint, a crash may
//! lose the last ones, and a write that fails (a full disk) is reported once
//! and never stops the crawl.
//!
//! A line is in the file whole or not at all, so that `jq` and other line
//! readers never meet half a line: a write that fails part-way (a full disk
//! takes what fits in the file's last block, then refuses the rest) is cut
//! back to the last whole line, and opening the log cuts a torn tail a crash
//! or an older forager left. Strings are written with [`super::jsonl`].

use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Size at which the log is rotated.
pub const MAX_LOG_BYTES: u64 = 64 << 20;
/// Rotated logs kept besides the current one.
pub const KEPT_OLD_LOGS: u32 = 4;
/// Skipped URLs remembered so each is logged once; beyond, the memory starts afresh.
const MAX_REMEMBERED_SKIPS: usize = 1 << 20;
/// The log's file name in the job's target folder.
pub const LOG_NAME: &str = "crawl.log";
/// Lines buffered before they are written (besides each checkpoint's flush).
const BUFFER_BYTES: usize = 64 * 1024;

pub use forager_core::record::SkipReason;

/// One line of the log.
#[derive(Debug, Serialize)]
pub struct LogLine<'a> {
    pub event: Event,
    pub url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'a str>,
    /// `None` for a request that failed before a status line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// What the response was: `page`, `target` or `neither`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<&'a str>,
    /// A new target file was saved.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub saved: bool,
    /// From sending the request to its response headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<SkipReason>,
    /// The page the link was found on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<&'a str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    Request,
    Skip,
}

impl<'a> LogLine<'a> {
    /// A line of `event` for `url` with every other field empty.
    pub fn new(event: Event, url: &'a str) -> Self {
        LogLine {
            event,
            url,
            method: None,
            status: None,
            bytes: None,
            label: None,
            saved: false,
            ms: None,
            error: None,
            reason: None,
            from: None,
        }
    }

    /// A link not followed.
    pub fn skip(url: &'a str, reason: SkipReason, from: Option<&'a str>) -> Self {
        LogLine {
            reason: Some(reason),
            from,
            ..LogLine::new(Event::Skip, url)
        }
    }
}

/// The job's crawl log, appended to and rotated.
#[derive(Debug)]
pub struct CrawlLog {
    path: PathBuf,
    /// The open file; `None` after a failed write, until the next write opens it again.
    file: Option<File>,
    /// Whole lines not yet written.
    pending: Vec<u8>,
    /// Bytes in the current file: all of them whole lines.
    size: u64,
    /// A write failed since the last successful one (reported once).
    failing: bool,
    /// Hashes of the URLs logged as skipped in this run: a link every page
    /// repeats (a menu's outside link) is logged once, not once per page.
    skips_logged: std::collections::HashSet<u64>,
}

impl CrawlLog {
    /// Opens (appends to) `dir/crawl.log`.
    pub fn open(dir: &Path) -> io::Result<CrawlLog> {
        let path = dir.join(LOG_NAME);
        let (file, size) = open_whole_lines(&path)?;
        Ok(CrawlLog {
            path,
            file: Some(file),
            pending: Vec::with_capacity(BUFFER_BYTES),
            size,
            failing: false,
            skips_logged: std::collections::HashSet::new(),
        })
    }

    /// Logs a link not followed, unless it was logged in this run already.
    pub fn skip(&mut self, url: &str, reason: SkipReason, from: Option<&str>) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        url.hash(&mut h);
        if self.skips_logged.len() >= MAX_REMEMBERED_SKIPS {
            self.skips_logged.clear();
        }
        if self.skips_logged.insert(h.finish()) {
            self.write(&LogLine::skip(url, reason, from));
        }
    }

    /// Appends one line; rotates first when the file is full.
    pub fn write(&mut self, line: &LogLine<'_>) {
        let result = self.try_write(line);
        self.note(result);
    }

    fn try_write(&mut self, line: &LogLine<'_>) -> io::Result<()> {
        #[derive(Serialize)]
        struct Stamped<'l, 'a> {
            ts: String,
            #[serde(flatten)]
            line: &'l LogLine<'a>,
        }
        let before = self.pending.len();
        super::jsonl::push_line(
            &mut self.pending,
            &Stamped {
                ts: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
                line,
            },
        )
        .inspect_err(|_| self.pending.truncate(before))?;
        let full = self.size + self.pending.len() as u64 > MAX_LOG_BYTES;
        if full && (self.size > 0 || before > 0) {
            // The new line opens the next file: write the lines before it here.
            let line = self.pending.split_off(before);
            let written = self.write_pending();
            self.pending = line;
            written?;
            self.rotate()?;
        }
        if self.pending.len() >= BUFFER_BYTES {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes buffered lines to the file (at checkpoints and at the end).
    pub fn flush(&mut self) {
        let result = self.write_pending();
        self.note(result);
    }

    /// Writes the pending lines in one append. On failure the file is cut
    /// back to its last whole line and the lines are dropped (the log is a
    /// diagnostic: a full disk must not make it hold ever more in memory).
    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let result = self.append_pending();
        self.pending.clear();
        result
    }

    fn append_pending(&mut self) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                let (file, size) = open_whole_lines(&self.path)?;
                self.size = size;
                self.file.insert(file)
            }
        };
        match file.write_all(&self.pending) {
            Ok(()) => {
                self.size += self.pending.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Freeing blocks needs no room: this works on a full disk.
                if let Err(cut) = file.set_len(self.size) {
                    tracing::warn!(path = %self.path.display(), error = %cut,
                        "cannot cut a torn crawl log line; it is cut when the log is opened again");
                    self.file = None;
                }
                Err(e)
            }
        }
    }

    fn note(&mut self, result: io::Result<()>) {
        match result {
            Ok(()) => self.failing = false,
            Err(e) if !self.failing => {
                self.failing = true;
                tracing::warn!(path = %self.path.display(), error = %e, "crawl log write failed; lines are lost until it works again");
            }
            Err(_) => {}
        }
    }

    /// `crawl.log` → `crawl.log.1` → … → `crawl.log.KEPT_OLD_LOGS` (the oldest goes).
    fn rotate(&mut self) -> io::Result<()> {
        self.file = None;
        let numbered = |n: u32| self.path.with_file_name(format!("{LOG_NAME}.{n}"));
        let _ = fs::remove_file(numbered(KEPT_OLD_LOGS));
        for n in (1..KEPT_OLD_LOGS).rev() {
            let from = numbered(n);
            if from.exists() {
                fs::rename(&from, numbered(n + 1))?;
            }
        }
        fs::rename(&self.path, numbered(1))?;
        let (file, size) = open_whole_lines(&self.path)?;
        self.file = Some(file);
        self.size = size;
        Ok(())
    }
}

/// Opens `path` for appending, first cutting whatever follows its last
/// newline (half a line a crash or a failed write left); returns the file
/// and its length.
fn open_whole_lines(path: &Path) -> io::Result<(File, u64)> {
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    let len = file.metadata()?.len();
    let whole = whole_lines_len(&mut file, len)?;
    if whole < len {
        file.set_len(whole)?;
        tracing::warn!(path = %path.display(), cut = len - whole, "crawl log ended in a torn line; cut");
    }
    Ok((file, whole))
}

/// The length of `file` up to and including its last newline.
fn whole_lines_len(file: &mut File, len: u64) -> io::Result<u64> {
    let mut end = len;
    let mut block = vec![0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block[..n])?;
        if let Some(i) = block[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

impl Drop for CrawlLog {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_json_with_only_what_they_know() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = CrawlLog::open(dir.path()).unwrap();
        log.write(&LogLine {
            method: Some("GET"),
            status: Some(200),
            bytes: Some(12),
            label: Some("target"),
            saved: true,
            ms: Some(3),
            ..LogLine::new(Event::Request, "http://a.test/x.csv")
        });
        for _ in 0..3 {
            log.skip("http://b.test/", SkipReason::Scope, Some("http://a.test/"));
        }
        log.flush();
        let text = fs::read_to_string(dir.path().join(LOG_NAME)).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["event"], "request");
        assert_eq!(lines[0]["status"], 200);
        assert_eq!(lines[0]["saved"], true);
        assert!(lines[0]["ts"].as_str().unwrap().ends_with('Z'));
        assert_eq!(lines[1]["event"], "skip");
        assert_eq!(lines[1]["reason"], "scope");
        assert_eq!(lines[1]["from"], "http://a.test/");
        assert!(lines[1].get("status").is_none());
        assert!(lines[1].get("saved").is_none());
        assert_eq!(lines.len(), 2, "a link met again is not logged again");
    }

    #[test]
    fn a_torn_last_line_is_cut_when_the_log_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_NAME);
        // A whole line, then half of one (a write cut short by a full disk or a kill).
        let whole = "{\"event\":\"skip\",\"url\":\"http://a.test/\"}\n";
        fs::write(&path, format!("{whole}{{\"event\":\"req")).unwrap();
        let mut log = CrawlLog::open(dir.path()).unwrap();
        log.write(&LogLine::skip("http://b.test/", SkipReason::Scope, None));
        log.flush();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(whole), "{text}");
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("{e}: {line:?}"));
        }
        assert_eq!(text.lines().count(), 2);
        // A file of only half a line is emptied.
        fs::write(&path, "{\"ev").unwrap();
        drop(log);
        let log = CrawlLog::open(dir.path()).unwrap();
        assert_eq!(log.size, 0);
        assert_eq!(fs::metadata(&path).unwrap().len(), 0);
    }

    #[test]
    fn a_full_log_rotates_and_keeps_four_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = CrawlLog::open(dir.path()).unwrap();
        // Pretend the file is nearly full each time: every write rotates.
        for i in 0..7 {
            log.flush();
            log.size = MAX_LOG_BYTES;
            log.write(&LogLine::skip(
                &format!("http://a.test/{i}"),
                SkipReason::Robots,
                None,
            ));
        }
        log.flush();
        let current = fs::read_to_string(dir.path().join(LOG_NAME)).unwrap();
        assert!(current.contains("http://a.test/6"), "{current}");
        for n in 1..=KEPT_OLD_LOGS {
            let old = fs::read_to_string(dir.path().join(format!("{LOG_NAME}.{n}"))).unwrap();
            assert!(
                old.contains(&format!("http://a.test/{}", 6 - n)),
                "{n}: {old}"
            );
        }
        assert!(!dir.path().join(format!("{LOG_NAME}.5")).exists());
    }
}
