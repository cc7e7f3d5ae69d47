//! A linked-data job's statements: `targets/<job>/data.nq.gz`, rotated into
//! `data-000001.nq.gz`, `data-000002.nq.gz`… (oldest first) once full.
//!
//! Each document is one gzip member: a comment line naming it
//! (`# forager-document <sha256> <url>`, the key of its manifest row), then
//! its statements as N-Quads. `zcat` reads the files as one N-Quads stream
//! (comments are allowed there).
//!
//! Exactness across a crash: a member is written, then its manifest row is
//! added to the job's delta, both under one lock; a checkpoint takes its
//! delta under the same lock ([`DataFile::with_sealed`]), so the members of
//! uncommitted rows always follow those of committed ones, and a rotation
//! happens only at a take. Members are synced before their rows commit. On
//! resume, [`reconcile`] walks the newest files and drops every member whose
//! row never committed (and a member a crash cut): the document is fetched
//! again and written once.

use flate2::bufread::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The active file's name.
pub const ACTIVE: &str = "data.nq.gz";
/// Size after which the active file is rotated (at the next checkpoint).
pub const DEFAULT_MAX_SIZE: u64 = 256 << 20;
const MARK: &str = "# forager-document ";

/// The key of a document: its manifest row's `sha256` and `final_url`.
pub fn document_key(sha256: &str, final_url: &str) -> String {
    format!("{sha256} {final_url}")
}

/// The data files of one job's folder.
#[derive(Debug)]
pub struct DataFile {
    dir: PathBuf,
    max_size: u64,
    /// The active file, opened at the first append.
    file: Option<File>,
    len: u64,
    unsynced: bool,
}

impl DataFile {
    pub fn new(dir: &Path, max_size: u64) -> DataFile {
        DataFile {
            dir: dir.to_path_buf(),
            max_size,
            file: None,
            len: 0,
            unsynced: false,
        }
    }

    /// Append one document's statements (N-Quads lines) as a gzip member.
    /// Call [`DataFile::sync`] before the document's manifest row commits.
    pub fn append(&mut self, key: &str, nquads: &str) -> io::Result<()> {
        let mut member = GzEncoder::new(
            Vec::with_capacity(nquads.len() / 4 + 64),
            Compression::fast(),
        );
        member.write_all(MARK.as_bytes())?;
        member.write_all(key.replace(['\n', '\r'], " ").as_bytes())?;
        member.write_all(b"\n")?;
        member.write_all(nquads.as_bytes())?;
        let bytes = member.finish()?;
        let file = self.active()?;
        if let Err(e) = file.write_all(&bytes) {
            // A partial member would hide the members after it: cut it off.
            let len = self.len;
            if let Some(f) = self.file.as_mut() {
                let _ = f.set_len(len);
                let _ = f.seek(io::SeekFrom::Start(len));
            }
            return Err(e);
        }
        self.len += bytes.len() as u64;
        self.unsynced = true;
        Ok(())
    }

    /// Make every member written so far durable.
    pub fn sync(&mut self) -> io::Result<()> {
        if let (true, Some(f)) = (self.unsynced, self.file.as_mut()) {
            f.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Rotate the active file when full, then run `take` (a checkpoint's
    /// take of its delta): both under the caller's lock on this writer.
    pub fn with_sealed<R>(&mut self, take: impl FnOnce() -> R) -> io::Result<R> {
        if self.len >= self.max_size {
            self.rotate()?;
        }
        Ok(take())
    }

    fn active(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            fs::create_dir_all(&self.dir)?;
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join(ACTIVE))?;
            self.len = f.metadata()?.len();
            self.file = Some(f);
        }
        match self.file.as_mut() {
            Some(f) => Ok(f),
            None => Err(io::Error::other("data file not open")),
        }
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.sync()?;
        self.file = None;
        let next = series(&self.dir)?.last().map_or(1, |(n, _)| n + 1);
        fs::rename(self.dir.join(ACTIVE), self.dir.join(series_name(next)))?;
        sync_dir(&self.dir)?;
        self.len = 0;
        Ok(())
    }
}

fn series_name(n: u32) -> String {
    format!("data-{n:06}.nq.gz")
}

/// The rotated files, oldest first.
pub fn series(dir: &Path) -> io::Result<Vec<(u32, PathBuf)>> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|n| n.strip_prefix("data-"))
            .and_then(|n| n.strip_suffix(".nq.gz"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        out.push((n, entry.path()));
    }
    out.sort();
    Ok(out)
}

/// Every data file of a folder, oldest first (the active one last).
pub fn files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut all: Vec<PathBuf> = series(dir)?.into_iter().map(|(_, p)| p).collect();
    let active = dir.join(ACTIVE);
    if active.exists() {
        all.push(active);
    }
    Ok(all)
}

/// What [`reconcile`] removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Members of documents whose rows never committed.
    pub dropped: u64,
    /// Bytes of a member a crash cut.
    pub cut_bytes: u64,
}

/// Drop the members whose key is not in `committed`, newest file first,
/// until a file holds none (older ones then hold none either).
pub fn reconcile(dir: &Path, committed: &HashSet<String>) -> io::Result<Reconciled> {
    let mut total = Reconciled::default();
    for path in files(dir)?.into_iter().rev() {
        let found = filter_file(&path, committed)?;
        total.dropped += found.dropped;
        total.cut_bytes += found.cut_bytes;
        if found == Reconciled::default() {
            break;
        }
    }
    Ok(total)
}

/// Rewrite `path` without the uncommitted or cut members (untouched when
/// there is none).
fn filter_file(path: &Path, committed: &HashSet<String>) -> io::Result<Reconciled> {
    let file = File::open(path)?;
    let file_len = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(256 << 10, file);
    let tmp = path.with_extension("gz.tmp");
    let mut out = BufWriter::new(File::create(&tmp)?);
    let mut found = Reconciled::default();
    let mut start = 0u64;
    loop {
        if reader.fill_buf()?.is_empty() {
            break;
        }
        let mut plain = Vec::new();
        let read = GzDecoder::new(&mut reader).read_to_end(&mut plain);
        let end = reader.stream_position()?;
        if read.is_err() {
            found.cut_bytes = file_len - start;
            break;
        }
        let key = plain
            .strip_prefix(MARK.as_bytes())
            .and_then(|rest| rest.split(|&b| b == b'\n').next())
            .map(|k| String::from_utf8_lossy(k).into_owned());
        if key.is_some_and(|k| committed.contains(&k)) {
            copy_range(path, start, end, &mut out)?;
        } else {
            found.dropped += 1;
        }
        start = end;
    }
    out.flush()?;
    let out = out.into_inner().map_err(|e| e.into_error())?;
    if found == Reconciled::default() {
        drop(out);
        fs::remove_file(&tmp)?;
        return Ok(found);
    }
    out.sync_all()?;
    fs::rename(&tmp, path)?;
    if let Some(parent) = path.parent() {
        sync_dir(parent)?;
    }
    Ok(found)
}

fn copy_range(path: &Path, start: u64, end: u64, out: &mut impl Write) -> io::Result<()> {
    let mut f = File::open(path)?;
    f.seek(io::SeekFrom::Start(start))?;
    io::copy(&mut f.take(end - start), out)?;
    Ok(())
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Read every statement line of a folder's data files (comments skipped), oldest first.
pub fn read_statements(dir: &Path) -> io::Result<Vec<String>> {
    let mut lines = Vec::new();
    for path in files(dir)? {
        if fs::metadata(&path)?.len() == 0 {
            continue;
        }
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(File::open(&path)?).read_to_string(&mut text)?;
        lines.extend(
            text.lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .map(str::to_string),
        );
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(keys: &[&str]) -> HashSet<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn members_read_as_one_stream_and_rotate_at_a_take() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = DataFile::new(dir.path(), 1);
        data.append(
            "a http://x/a",
            "<http://x/a> <http://x/p> \"1\" <http://x/a> .\n",
        )
        .unwrap();
        data.append(
            "b http://x/b",
            "<http://x/b> <http://x/p> \"2\" <http://x/b> .\n",
        )
        .unwrap();
        data.sync().unwrap();
        let taken = data.with_sealed(|| 7).unwrap();
        assert_eq!(taken, 7);
        data.append(
            "c http://x/c",
            "<http://x/c> <http://x/p> \"3\" <http://x/c> .\n",
        )
        .unwrap();
        data.sync().unwrap();
        let names: Vec<String> = files(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["data-000001.nq.gz", "data.nq.gz"]);
        let lines = read_statements(dir.path()).unwrap();
        assert_eq!(lines.len(), 3);
        assert!(lines[2].contains("\"3\""));
    }

    #[test]
    fn reconcile_drops_uncommitted_and_cut_members_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = DataFile::new(dir.path(), DEFAULT_MAX_SIZE);
        for k in ["a", "b", "c"] {
            data.append(
                &format!("{k} http://x/{k}"),
                &format!("<http://x/{k}> <http://x/p> \"{k}\" .\n"),
            )
            .unwrap();
        }
        data.sync().unwrap();
        drop(data);
        // A crash mid-append leaves half a member.
        let active = dir.path().join(ACTIVE);
        let whole = fs::read(&active).unwrap();
        let mut f = OpenOptions::new().append(true).open(&active).unwrap();
        f.write_all(&whole[..whole.len() / 5]).unwrap();
        drop(f);

        let all = set(&["a http://x/a", "b http://x/b", "c http://x/c"]);
        let untouched = fs::read(&active).unwrap();
        let found = reconcile(dir.path(), &set(&["a http://x/a", "c http://x/c"])).unwrap();
        assert_eq!(found.dropped, 1);
        assert!(found.cut_bytes > 0);
        let lines = read_statements(dir.path()).unwrap();
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| !l.contains("\"b\"")));
        assert_ne!(fs::read(&active).unwrap(), untouched);
        // Nothing more to drop: the file is left as it is.
        let again = fs::read(&active).unwrap();
        assert_eq!(reconcile(dir.path(), &all).unwrap(), Reconciled::default());
        assert_eq!(fs::read(&active).unwrap(), again);
    }

    #[test]
    fn reconcile_walks_back_through_rotated_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = DataFile::new(dir.path(), 1);
        data.append("a u", "<http://x/a> <http://x/p> \"a\" .\n")
            .unwrap();
        data.with_sealed(|| ()).unwrap();
        data.append("b u", "<http://x/b> <http://x/p> \"b\" .\n")
            .unwrap();
        data.with_sealed(|| ()).unwrap();
        data.append("c u", "<http://x/c> <http://x/p> \"c\" .\n")
            .unwrap();
        data.sync().unwrap();
        let found = reconcile(dir.path(), &set(&["a u"])).unwrap();
        assert_eq!(found.dropped, 2);
        assert_eq!(read_statements(dir.path()).unwrap().len(), 1);
    }
}
