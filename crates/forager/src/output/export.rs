//! `forager export`: a job's harvest as a folder a person or an archive can
//! use — files under their URL paths or flat under their own names, or WARC —
//! with an index (CSV and JSON).
//!
//! Reads only `STATE_DIR/targets/<job>/manifest.jsonl` and the target files,
//! never the database: redb admits one process, and the daemon may be running
//! the job. That read path is safe alongside a writer because target files
//! are immutable once named (written to `.partial`, renamed to their digest),
//! the manifest is only appended to or replaced by rename, and a row reaches
//! it after its target is durable. A torn last line (an append in progress)
//! is skipped; a row whose file is gone is reported, not fatal.
//!
//! Owns: the mapping from URLs to safe relative paths. Nothing read from the
//! manifest (written from what servers sent) can place a file outside the
//! destination: every path component is rebuilt from a whitelist of
//! characters, never empty, never `.` or `..`, at most [`MAX_COMPONENT`]
//! bytes; existing symbolic links in the destination are refused, and files
//! are created with `create_new`. Must not touch: the network, the store.
//!
//! A file is copied under a hidden temp name beside its destination
//! (`.NAME.forager-partial`), synced, then linked to its name, which it never
//! replaces: an export killed mid-copy leaves no truncated file at a URL's
//! path (a rerun would take it for someone else's file and write its copy
//! beside it as `name~2`), and the rerun replaces the temp file and sweeps
//! those it does not reach. No exported name starts with a dot, so no temp
//! name (the index's included) can be a harvested file's.

use super::warc::{Metadata, Payload, WarcConfig, WarcWriter};
use crate::crashpoint::{self, CrashPoint};
use crate::exchange::HttpHead;
use crate::store::ManifestRow;
use anyhow::{bail, Context};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;
use url::Url;

/// Longest file or folder name written (NAME_MAX is 255 on common file
/// systems; room is left for a collision suffix).
pub const MAX_COMPONENT: usize = 180;
/// Deepest folder nesting taken from a URL path; deeper segments are joined.
pub const MAX_DEPTH: usize = 24;
/// The index files, reserved names at the destination's top.
pub const INDEX_CSV: &str = "forager-index.csv";
pub const INDEX_JSON: &str = "forager-index.json";
/// The end of a temp file's name (see the module documentation).
const PARTIAL_SUFFIX: &str = ".forager-partial";

/// How exported files are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `host[_port]/path/of/the/file.csv`
    Url,
    /// `file.csv` at the top, named as the URL names it.
    Flat,
}

/// What to export.
#[derive(Clone, Debug)]
pub struct ExportSpec {
    /// `STATE_DIR/targets/<job>`.
    pub job_dir: PathBuf,
    pub job: String,
    pub to: PathBuf,
    pub layout: Layout,
    /// Only rows fetched at or after this time.
    pub since: Option<SystemTime>,
    /// Write a WARC series instead of files.
    pub warc: bool,
    /// WARC rotation size.
    pub warc_max_size: u64,
}

/// One exported target, as listed in the index.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IndexRow {
    /// Relative to the destination (the WARC file for `--warc`).
    pub path: String,
    pub url: String,
    pub final_url: String,
    pub mime: String,
    pub bytes: u64,
    pub sha256: String,
    pub fetched_at: String,
    pub referrer: Option<String>,
    pub tag_path: String,
    pub truncated: bool,
}

/// What an export did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportReport {
    pub exported: u64,
    /// Already in the destination with the same content (a repeated export).
    pub unchanged: u64,
    /// Rows whose target file is missing or does not match its digest.
    pub missing: u64,
    /// Rows before `since`.
    pub skipped_old: u64,
    /// Manifest lines that did not parse (a torn last line while the job writes).
    pub bad_lines: u64,
    pub rows: Vec<IndexRow>,
}

/// Reads `manifest.jsonl`: every complete row, and how many lines did not parse.
pub fn read_manifest(job_dir: &Path) -> anyhow::Result<(Vec<ManifestRow>, u64)> {
    let path = job_dir.join("manifest.jsonl");
    let file = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut rows = Vec::new();
    let mut bad = 0;
    for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<ManifestRow>(&line) {
            Ok(row) => rows.push(row),
            Err(e) => {
                bad += 1;
                tracing::warn!(file = %path.display(), line = i + 1, error = %e, "manifest line skipped");
            }
        }
    }
    Ok((rows, bad))
}

/// Runs an export.
pub fn export(spec: &ExportSpec) -> anyhow::Result<ExportReport> {
    let (rows, bad_lines) = read_manifest(&spec.job_dir)?;
    fs::create_dir_all(&spec.to).with_context(|| format!("cannot create {}", spec.to.display()))?;
    refuse_symlink(&spec.to)?;
    let mut report = ExportReport {
        bad_lines,
        ..ExportReport::default()
    };
    let mut selected = Vec::new();
    for row in rows {
        if let Some(since) = spec.since {
            match humantime::parse_rfc3339_weak(&row.fetched_at) {
                Ok(t) if t < since => {
                    report.skipped_old += 1;
                    continue;
                }
                Ok(_) => {}
                Err(_) => {
                    tracing::warn!(url = %row.final_url, fetched_at = %row.fetched_at, "unreadable fetch time; row exported");
                }
            }
        }
        let source = match target_file(&spec.job_dir, &row) {
            Ok(p) => p,
            Err(e) => {
                report.missing += 1;
                tracing::warn!(url = %row.final_url, error = %e, "target not exported");
                continue;
            }
        };
        selected.push((row, source));
    }
    if spec.warc {
        export_warc(spec, selected, &mut report)?;
    } else {
        export_files(spec, selected, &mut report)?;
    }
    write_index(&spec.to, &report.rows)?;
    Ok(report)
}

/// The saved file of a row: its name must be a plain file name in the job folder.
fn target_file(job_dir: &Path, row: &ManifestRow) -> anyhow::Result<PathBuf> {
    let name = Path::new(&row.file);
    let plain = name.components().count() == 1
        && matches!(name.components().next(), Some(Component::Normal(_)));
    if !plain || row.file.starts_with('.') {
        bail!("manifest names {:?}, not a target file name", row.file);
    }
    let path = job_dir.join(name);
    let meta = fs::symlink_metadata(&path)
        .with_context(|| format!("target file {} is missing", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    Ok(path)
}

fn export_files(
    spec: &ExportSpec,
    rows: Vec<(ManifestRow, PathBuf)>,
    report: &mut ExportReport,
) -> anyhow::Result<()> {
    let mut planner = Planner::default();
    let mut seen = HashSet::new();
    // Folders files went to: where a killed run may have left temp files.
    let mut folders = BTreeSet::from([spec.to.clone()]);
    for (row, source) in rows {
        // A URL fetched again with the same content is the same file.
        if !seen.insert((row.final_url.clone(), row.sha256.clone())) {
            continue;
        }
        let wanted = match spec.layout {
            Layout::Url => url_path(&row.final_url, &row.file),
            Layout::Flat => vec![flat_name(&row.final_url, &row.file)],
        };
        let mut attempts = 0;
        let rel = loop {
            attempts += 1;
            if attempts > MAX_ATTEMPTS {
                bail!(
                    "no free name for {} in {}",
                    row.final_url,
                    spec.to.display()
                );
            }
            let candidate = planner.place(&wanted);
            match place_file(&spec.to, &candidate, &source, &row.sha256)? {
                Placed::Written => {
                    report.exported += 1;
                    break candidate;
                }
                Placed::Same => {
                    report.unchanged += 1;
                    break candidate;
                }
                // Something else is there (an earlier export's different file): next suffix.
                Placed::Taken(depth) => planner.taken(&candidate[..=depth]),
            }
        };
        let mut folder = spec.to.clone();
        for part in &rel[..rel.len() - 1] {
            folder.push(part);
            folders.insert(folder.clone());
        }
        report.rows.push(index_row(&row, rel.join("/")));
    }
    for folder in &folders {
        remove_stale_partials(folder)?;
    }
    Ok(())
}

/// The hidden name a file is copied under before it is linked to `name`.
fn partial_name(name: &str) -> String {
    format!(".{name}{PARTIAL_SUFFIX}")
}

/// Removes the temp files a killed export left in `folder` (the rerun
/// rewrote those of the files it exported; these are of files it did not).
fn remove_stale_partials(folder: &Path) -> anyhow::Result<()> {
    let entries =
        fs::read_dir(folder).with_context(|| format!("cannot list {}", folder.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", folder.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(PARTIAL_SUFFIX) {
            let path = entry.path();
            if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
                tracing::info!(path = %path.display(), "temp file of an interrupted export removed");
            }
        }
    }
    Ok(())
}

fn index_row(row: &ManifestRow, path: String) -> IndexRow {
    IndexRow {
        path,
        url: row.url.clone(),
        final_url: row.final_url.clone(),
        mime: row.mime.clone(),
        bytes: row.bytes,
        sha256: row.sha256.clone(),
        fetched_at: row.fetched_at.clone(),
        referrer: row.referrer.clone(),
        tag_path: row.tag_path.clone(),
        truncated: row.truncated,
    }
}

enum Placed {
    Written,
    Same,
    /// The component at this depth is occupied by something else.
    Taken(usize),
}

/// Names tried for one file before giving up (each clash costs one).
const MAX_ATTEMPTS: u32 = 10_000;

/// Copies `source` to `to/rel…`, creating folders; never through a symlink.
fn place_file(to: &Path, rel: &[String], source: &Path, sha256: &str) -> anyhow::Result<Placed> {
    let mut dir = to.to_path_buf();
    let last = rel.len() - 1;
    for (depth, part) in rel[..last].iter().enumerate() {
        dir.push(part);
        match fs::symlink_metadata(&dir) {
            // Not a symlink (symlink_metadata does not follow one).
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Ok(Placed::Taken(depth)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            }
            Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", dir.display())),
        }
    }
    let dest = dir.join(&rel[rel.len() - 1]);
    match fs::symlink_metadata(&dest) {
        Ok(m) if m.is_file() => {
            return Ok(if file_sha256(&dest)? == sha256 {
                Placed::Same
            } else {
                Placed::Taken(last)
            });
        }
        Ok(_) => return Ok(Placed::Taken(last)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", dest.display())),
    }
    let tmp = dir.join(partial_name(&rel[last]));
    copy_to_temp(source, &tmp)?;
    match link_into_place(&tmp, &dest) {
        Ok(true) => {
            File::open(&dir)
                .and_then(|d| d.sync_all())
                .with_context(|| format!("cannot sync {}", dir.display()))?;
            Ok(Placed::Written)
        }
        // Something appeared at the name meanwhile: never replaced.
        Ok(false) => Ok(Placed::Taken(last)),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e).with_context(|| format!("cannot write {}", dest.display()))
        }
    }
}

/// Copies `source` to the temp file `tmp` and syncs it; a temp file a
/// killed run left there is replaced (removed first: never written through,
/// in case it is a link).
fn copy_to_temp(source: &Path, tmp: &Path) -> anyhow::Result<()> {
    match fs::remove_file(tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove {}", tmp.display())),
    }
    let mut input =
        File::open(source).with_context(|| format!("cannot read {}", source.display()))?;
    let mut output = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = input
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", source.display()))?;
        if n == 0 {
            break;
        }
        output
            .write_all(&buf[..n])
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        crashpoint::reached(CrashPoint::ExportWrite);
    }
    output
        .sync_all()
        .with_context(|| format!("cannot write {}", tmp.display()))
}

/// Gives the complete temp file `tmp` the name `dest` unless that name is
/// taken (then `tmp` is removed and the answer is false). A hard link
/// cannot replace a file; where the file system has none, a rename after
/// checking the name is free.
fn link_into_place(tmp: &Path, dest: &Path) -> io::Result<bool> {
    match fs::hard_link(tmp, dest) {
        Ok(()) => {
            fs::remove_file(tmp)?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(tmp)?;
            Ok(false)
        }
        Err(e) => match fs::symlink_metadata(dest) {
            Err(missing) if missing.kind() == io::ErrorKind::NotFound => {
                tracing::debug!(path = %dest.display(), error = %e, "no hard link here; renaming");
                fs::rename(tmp, dest)?;
                Ok(true)
            }
            _ => {
                fs::remove_file(tmp)?;
                Ok(false)
            }
        },
    }
}

fn file_sha256(path: &Path) -> anyhow::Result<String> {
    let mut f = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut h = Sha256::new();
    io::copy(&mut f, &mut h).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(hex::encode(h.finalize()))
}

fn refuse_symlink(path: &Path) -> anyhow::Result<()> {
    let m =
        fs::symlink_metadata(path).with_context(|| format!("cannot inspect {}", path.display()))?;
    if !m.is_dir() {
        bail!("{} is not a folder", path.display());
    }
    Ok(())
}

/// Chooses unique relative paths: no file twice, no file where a folder is
/// needed and no folder where a file is, never an index name at the top.
#[derive(Default)]
struct Planner {
    files: HashSet<Vec<String>>,
    dirs: HashSet<Vec<String>>,
}

impl Planner {
    fn free(&self, path: &[String]) -> bool {
        let top_reserved = path.len() == 1 && (path[0] == INDEX_CSV || path[0] == INDEX_JSON);
        !top_reserved
            && !self.files.contains(path)
            && !self.dirs.contains(path)
            && (1..path.len()).all(|i| !self.files.contains(&path[..i]))
    }

    /// The first free variant of `wanted` (`name~2.ext`, `name~3.ext`, … on
    /// the last component, or on the folder that clashes), now reserved.
    fn place(&mut self, wanted: &[String]) -> Vec<String> {
        let mut path = wanted.to_vec();
        // A folder of the path that is already a file: rename that folder.
        for i in 1..path.len() {
            let mut n = 2;
            while self.files.contains(&path[..i]) {
                // A folder (`h.test`) has no extension: the suffix goes at its end.
                let stem = truncate_at_char(&wanted[i - 1], MAX_COMPONENT - 8);
                path[i - 1] = format!("{stem}~{n}");
                n += 1;
            }
        }
        let last = path.len() - 1;
        let mut n = 2;
        while !self.free(&path) {
            path[last] = with_suffix(&wanted[last], n);
            n += 1;
        }
        self.reserve(&path);
        path
    }

    fn reserve(&mut self, path: &[String]) {
        for i in 1..path.len() {
            self.dirs.insert(path[..i].to_vec());
        }
        self.files.insert(path.to_vec());
    }

    /// `path` (a file or a folder) turned out to be occupied on disk: never offer it again.
    fn taken(&mut self, path: &[String]) {
        self.files.insert(path.to_vec());
    }
}

/// `name~N.ext` (the suffix before the extension), within [`MAX_COMPONENT`].
fn with_suffix(name: &str, n: u32) -> String {
    let (stem, ext) = split_ext(name);
    let suffix = format!("~{n}");
    let stem = truncate_at_char(stem, MAX_COMPONENT - suffix.len() - ext.len());
    format!("{stem}{suffix}{ext}")
}

/// Splits `a.tar.gz` into (`a.tar`, `.gz`); an extension is short and alphanumeric.
fn split_ext(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i)
            if i > 0
                && name.len() - i <= 12
                && name[i + 1..].bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            (&name[..i], &name[i..])
        }
        _ => (name, ""),
    }
}

fn truncate_at_char(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A safe path component from arbitrary text: percent-decoded, characters
/// outside letters, digits and `-_.+,=@~()` replaced by `_`, no leading dot
/// (no hidden files, no `.`/`..`), never empty, at most [`MAX_COMPONENT`]
/// bytes (a long name keeps its start, a hash of the whole and its extension).
pub fn safe_component(raw: &str) -> String {
    let decoded = percent_decode(raw);
    let mut s: String = decoded
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.+,=@~()".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.starts_with('.') {
        s.insert(0, '_');
    }
    if s.is_empty() {
        s.push('_');
    }
    if s.len() > MAX_COMPONENT {
        let hash = &hex::encode(Sha256::digest(decoded.as_bytes()))[..12];
        let (stem, ext) = split_ext(&s);
        let keep = MAX_COMPONENT - ext.len() - hash.len() - 1;
        s = format!("{}-{hash}{ext}", truncate_at_char(stem, keep));
    }
    s
}

fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The extension of the saved file (from the fixed MIME table), e.g. `.csv`.
fn saved_ext(file: &str) -> &str {
    split_ext(file).1
}

/// `host[_port]/seg/…/name` for a URL; unparsable URLs go under `_unparsable/`.
pub fn url_path(final_url: &str, saved_file: &str) -> Vec<String> {
    let Ok(url) = Url::parse(final_url) else {
        return vec!["_unparsable".to_string(), flat_name(final_url, saved_file)];
    };
    let host = url.host_str().unwrap_or("_nohost");
    let host = match url.port() {
        Some(p) => format!("{host}_{p}"),
        None => host.to_string(),
    };
    let mut parts = vec![safe_component(&host)];
    let segments: Vec<&str> = url.path_segments().map(|s| s.collect()).unwrap_or_default();
    let (dirs, last) = match segments.split_last() {
        Some((last, dirs)) => (dirs, *last),
        None => (&[][..], ""),
    };
    let dirs: Vec<&str> = dirs.iter().copied().filter(|s| !s.is_empty()).collect();
    if dirs.len() > MAX_DEPTH {
        parts.extend(dirs[..MAX_DEPTH - 1].iter().map(|s| safe_component(s)));
        parts.push(safe_component(&dirs[MAX_DEPTH - 1..].join("_")));
    } else {
        parts.extend(dirs.iter().map(|s| safe_component(s)));
    }
    parts.push(file_name(last, url.query(), saved_file));
    parts
}

/// The file name a URL gives its body, for the flat layout.
pub fn flat_name(final_url: &str, saved_file: &str) -> String {
    match Url::parse(final_url) {
        Ok(url) => {
            let last = url
                .path_segments()
                .and_then(|mut s| s.next_back())
                .unwrap_or("");
            file_name(last, url.query(), saved_file)
        }
        Err(_) => file_name("", None, saved_file),
    }
}

/// The last path segment as a file name: `index` when empty, the query's
/// hash appended when there is one (`report.php?id=3` and `?id=4` differ),
/// the saved file's extension added when the name has none.
fn file_name(last: &str, query: Option<&str>, saved_file: &str) -> String {
    let base = if last.is_empty() { "index" } else { last };
    let mut name = safe_component(base);
    if let Some(q) = query {
        let h = &hex::encode(Sha256::digest(q.as_bytes()))[..8];
        let (stem, ext) = split_ext(&name);
        name = format!("{stem}_q{h}{ext}");
    }
    let ext = saved_ext(saved_file);
    if split_ext(&name).1.is_empty() && !ext.is_empty() {
        name.push_str(ext);
    }
    safe_component(&name)
}

fn export_warc(
    spec: &ExportSpec,
    rows: Vec<(ManifestRow, PathBuf)>,
    report: &mut ExportReport,
) -> anyhow::Result<()> {
    let cfg = WarcConfig {
        dir: spec.to.clone(),
        prefix: format!("{}-export", spec.job),
        max_size: spec.warc_max_size,
        info: vec![
            ("isPartOf".to_string(), spec.job.clone()),
            (
                "description".to_string(),
                "Written by forager export from the job's manifest and saved target files, \
                 not during the crawl. Response headers are RECONSTRUCTED (status 200, \
                 Content-Type from the manifest, Content-Length of the saved body); the \
                 request and the server's other headers were not recorded, so there are no \
                 request records and no WARC-IP-Address. WARC-Date is the manifest's fetch time."
                    .to_string(),
            ),
        ],
    };
    let (mut writer, _) = WarcWriter::open(cfg)
        .with_context(|| format!("cannot open a WARC series in {}", spec.to.display()))?;
    for (row, source) in rows {
        let date = humantime::parse_rfc3339_weak(&row.fetched_at).unwrap_or(SystemTime::now());
        let mut headers = Vec::new();
        if !row.mime.is_empty() {
            headers.push(("content-type".to_string(), row.mime.clone().into_bytes()));
        }
        let head = HttpHead {
            start_line: "HTTP/1.1 200 OK".to_string(),
            headers,
        };
        let meta = Metadata {
            via: row.referrer.clone(),
            tag_path: Some(row.tag_path.clone()),
            label: Some("target".to_string()),
        };
        let ids = writer
            .write_reconstructed(
                &row.final_url,
                &head,
                date,
                Payload::File(&source),
                row.truncated,
                &meta,
            )
            .with_context(|| format!("cannot archive {}", source.display()))?;
        report.exported += 1;
        let file = ids
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        report.rows.push(index_row(&row, file));
    }
    writer
        .sync()
        .with_context(|| format!("cannot sync {}", writer.path().display()))?;
    Ok(())
}

/// Writes `forager-index.csv` and `forager-index.json` (each replaced by rename).
fn write_index(to: &Path, rows: &[IndexRow]) -> anyhow::Result<()> {
    let mut csv = Vec::new();
    csv.extend_from_slice(
        b"path,url,final_url,mime,bytes,sha256,fetched_at,referrer,tag_path,truncated\r\n",
    );
    for r in rows {
        let fields = [
            r.path.as_str(),
            &r.url,
            &r.final_url,
            &r.mime,
            &r.bytes.to_string(),
            &r.sha256,
            &r.fetched_at,
            r.referrer.as_deref().unwrap_or(""),
            &r.tag_path,
            if r.truncated { "true" } else { "false" },
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        csv.extend_from_slice(line.join(",").as_bytes());
        csv.extend_from_slice(b"\r\n");
    }
    let json = serde_json::to_vec_pretty(rows).context("cannot encode the index")?;
    replace_file(&to.join(INDEX_CSV), &csv)?;
    replace_file(&to.join(INDEX_JSON), &json)
}

/// RFC 4180 quoting.
fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

fn replace_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Ok(m) = fs::symlink_metadata(path) {
        if !m.is_file() {
            bail!("{} exists and is not a file", path.display());
        }
    }
    // Hidden, like a copied file's temp name: no exported file can have it.
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(partial_name(&name));
    let _ = fs::remove_file(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
}

/// Parses `--since`: RFC 3339 (`2026-11-01T12:00:00Z`), a date (`2026-11-01`,
/// midnight UTC), or a duration meaning that long ago (`7d`, `12h`).
pub fn parse_since(s: &str, now: SystemTime) -> Result<SystemTime, String> {
    let s = s.trim();
    if let Ok(t) = humantime::parse_rfc3339_weak(s) {
        return Ok(t);
    }
    if let Ok(t) = humantime::parse_rfc3339_weak(&format!("{s}T00:00:00Z")) {
        return Ok(t);
    }
    if let Ok(d) = humantime::parse_duration(s) {
        return now
            .checked_sub(d)
            .ok_or_else(|| format!("{s:?} ago is before the epoch"));
    }
    Err(format!(
        "{s:?} is neither a time (2026-11-01T12:00:00Z), a date (2026-11-01) nor a duration (7d)"
    ))
}

/// The relative paths of an export, for tests: every file under `dir`.
pub fn list_files(dir: &Path) -> io::Result<BTreeSet<PathBuf>> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d)? {
            let entry = entry?;
            let t = entry.file_type()?;
            if t.is_dir() {
                stack.push(entry.path());
            } else {
                out.insert(
                    entry
                        .path()
                        .strip_prefix(dir)
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|_| entry.path()),
                );
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
