//! Harvested targets on disk: `STATE_DIR/targets/<job>/<sha256>[.ext]` and `manifest.jsonl`.
//!
//! Owns: target files and the human-readable manifest. Must not touch: the
//! network, crawl decisions, the database (the store's `manifest` table is the
//! source of truth; `manifest.jsonl` is rewritten from it on resume).
//!
//! A body is streamed into a temp file while it is hashed, fsynced, then
//! given its content-hash name; the folder is fsynced (once for all the
//! targets of a checkpoint, [`TargetDir::sync`]) *before* their manifest rows
//! are committed, so a crash can neither lose a committed target nor leave a
//! half-written file under a final name. The temp file is an unnamed inode in
//! the target folder (`O_TMPFILE`, linked under its name once synced: a crash
//! before that leaves nothing to clean up) where the filesystem supports it,
//! else a named file in `.partial` renamed into place. No part of a URL or of a server's headers ever becomes
//! a file name: names are hex digests plus an extension from a fixed table.
//! The extension comes from the served type; when that type says nothing
//! (`application/octet-stream`, `text/plain`, none: [`GENERIC_TYPES`]), from
//! the file's name (`Content-Disposition`, else the URL) when its extension
//! is in the table, else from the body's first bytes
//! ([`forager_core::mime::sniff_extension`]).
//!
//! With `[output] warc = true` each saved target's exchange is also archived
//! in `targets/<job>/warc/` ([`warc`]), written before the target's row
//! commits and synced with the folder; `forager export` ([`export`]) copies a
//! harvest out through the manifest and files alone. A linked-data job's
//! statements go to `data.nq.gz` ([`nquads`]).

pub mod crawl_log;
pub mod export;
pub mod jsonl;
pub mod nquads;
pub mod warc;

use crate::crashpoint::{self, CrashPoint};
use crate::exchange::ExchangeHead;
use crate::store::ManifestRow;
use forager_core::config::OutputSpec;
use forager_core::mime::GENERIC_TYPES;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use warc::WarcWriter;

/// The target folder of one job.
#[derive(Clone, Debug)]
pub struct TargetDir {
    dir: PathBuf,
    job: String,
    /// The job's WARC series, opened at the first archived exchange.
    warc: Arc<Mutex<Option<WarcWriter>>>,
    /// A linked-data job's statements (`data.nq.gz`).
    data: Arc<Mutex<nquads::DataFile>>,
    /// Whether bodies are written as unnamed files here (see [`probe_unnamed`]).
    unnamed: bool,
}

impl TargetDir {
    /// `state_dir/targets/<job>`; the job name is validated by the config (`[a-z0-9_-]`).
    pub fn create(state_dir: &Path, job: &str) -> io::Result<TargetDir> {
        let dir = state_dir.join("targets").join(job);
        fs::create_dir_all(dir.join(".partial"))?;
        let unnamed = probe_unnamed(&dir);
        Ok(TargetDir {
            unnamed,
            data: Arc::new(Mutex::new(nquads::DataFile::new(
                &dir,
                nquads::DEFAULT_MAX_SIZE,
            ))),
            dir,
            job: job.to_string(),
            warc: Arc::new(Mutex::new(None)),
        })
    }

    /// The job's folder, `targets/<job>/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the job's WARC files go: `targets/<job>/warc/`.
    pub fn warc_dir(&self) -> PathBuf {
        self.dir.join("warc")
    }

    /// Archives the exchange of a saved target as WARC (response, request and
    /// metadata records) when the job asks for WARC; call it after
    /// [`TargetFile::finish`] and before the target's manifest row commits.
    /// The first call opens the series, cutting a record a crash left
    /// partial; [`TargetDir::sync`] makes the records durable with the names.
    pub fn archive_target(
        &self,
        output: &OutputSpec,
        final_url: &str,
        head: &ExchangeHead,
        saved: &SavedTarget,
        truncated: bool,
        meta: &warc::Metadata,
    ) -> io::Result<()> {
        if !output.warc {
            return Ok(());
        }
        let mut slot = self.warc_writer(output)?;
        if let Some(writer) = slot.as_mut() {
            writer.write_exchange(
                final_url,
                head,
                warc::Payload::File(&self.dir.join(&saved.file)),
                truncated,
                Some(meta),
            )?;
        }
        Ok(())
    }

    /// Archives a continuous job's revisit that saved nothing as a WARC
    /// `revisit` record: `profile` [`warc::PROFILE_NOT_MODIFIED`] for a 304,
    /// [`warc::PROFILE_IDENTICAL_PAYLOAD`] (with the body's `payload_digest`)
    /// for a body identical to the capture of `refers_to` (its URI and time).
    pub fn archive_revisit(
        &self,
        output: &OutputSpec,
        url: &str,
        head: &ExchangeHead,
        profile: &'static str,
        refers_to: (&str, SystemTime),
        payload_digest: Option<&str>,
    ) -> io::Result<()> {
        if !output.warc {
            return Ok(());
        }
        let mut slot = self.warc_writer(output)?;
        if let Some(writer) = slot.as_mut() {
            writer.write_revisit(&warc::Revisit {
                head,
                target_uri: url,
                profile,
                refers_to_uri: refers_to.0,
                refers_to_date: &warc::warc_date(refers_to.1),
                refers_to_record: None,
                payload_digest,
            })?;
        }
        Ok(())
    }

    /// The job's WARC series, opened at the first use (cutting a record a
    /// crash left partial).
    fn warc_writer(
        &self,
        output: &OutputSpec,
    ) -> io::Result<std::sync::MutexGuard<'_, Option<WarcWriter>>> {
        let mut slot = self
            .warc
            .lock()
            .map_err(|_| io::Error::other("WARC writer poisoned by a panic"))?;
        if slot.is_none() {
            let (writer, recovery) = WarcWriter::open(warc::WarcConfig {
                dir: self.warc_dir(),
                prefix: self.job.clone(),
                max_size: output.warc_max_size,
                info: vec![
                    ("isPartOf".to_string(), self.job.clone()),
                    (
                        "description".to_string(),
                        "forager crawl. Payloads are archived as received after HTTP content \
                         decoding (reqwest removes Content-Encoding), so Transfer-Encoding and \
                         Content-Encoding appear as X-Archive-Orig-* fields and Content-Length \
                         is the archived length; a body cut at the job's size cap has \
                         WARC-Truncated: length. Targets only: pages are not archived."
                            .to_string(),
                    ),
                ],
            })?;
            if recovery.truncated_bytes > 0 {
                tracing::warn!(job = %self.job, file = ?recovery.resumed, cut = recovery.truncated_bytes, "WARC resumed after cutting a partial record");
            }
            *slot = Some(writer);
        }
        Ok(slot)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join("manifest.jsonl")
    }

    /// Start writing a target body; `mime` only picks the file extension.
    pub fn begin(&self, mime: &str) -> io::Result<TargetFile> {
        self.begin_named(mime, None)
    }

    /// Start writing a target body whose extension comes from `mime`, or,
    /// when that type is generic, from `name` (the file name the server or
    /// the URL gave, see [`forager_core::mime::file_name`]) or the body's
    /// first bytes: see [`TargetFile::finish`].
    pub fn begin_named(&self, mime: &str, name: Option<&str>) -> io::Result<TargetFile> {
        if self.unnamed {
            let file = unnamed_file_in(&self.dir)?;
            Ok(self.target_file(mime, name, TempName::Unnamed, file))
        } else {
            self.begin_partial(mime, name)
        }
    }

    /// [`TargetDir::begin_named`] with a named temp file in `.partial`.
    fn begin_partial(&self, mime: &str, name: Option<&str>) -> io::Result<TargetFile> {
        let (path, file) = tempfile_in(&self.dir.join(".partial"))?;
        Ok(self.target_file(mime, name, TempName::Partial(path), file))
    }

    fn target_file(&self, mime: &str, name: Option<&str>, tmp: TempName, file: File) -> TargetFile {
        let essence = forager_core::mime::essence(mime);
        let generic = essence.is_empty() || GENERIC_TYPES.contains(&essence.as_str());
        TargetFile {
            final_dir: self.dir.clone(),
            ext: extension_for(mime),
            guess: generic.then(|| ExtensionGuess {
                named: name.and_then(extension_from_name),
                head: Vec::new(),
            }),
            tmp,
            file,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// Whether a file can be written and synced here again (after a full disk):
    /// writes, fsyncs and removes a 64 KiB probe in `.partial`.
    pub fn probe_writable(&self) -> io::Result<()> {
        let (path, mut file) = tempfile_in(&self.dir.join(".partial"))?;
        let result = file
            .write_all(&[0u8; 64 << 10])
            .and_then(|()| file.sync_all());
        drop(file);
        let _ = fs::remove_file(&path);
        result
    }

    /// Make the names of the targets finished so far durable: call it before
    /// committing their manifest rows. One folder fsync per checkpoint, not
    /// per target (it cost a sixth of the CPU of saving a small target).
    pub fn sync(&self) -> io::Result<()> {
        sync_dir(&self.dir)?;
        self.data_file()?.sync()?;
        let mut slot = self
            .warc
            .lock()
            .map_err(|_| io::Error::other("WARC writer poisoned by a panic"))?;
        match slot.as_mut() {
            Some(writer) => writer.sync(),
            None => Ok(()),
        }
    }

    /// Whether WARC records were written since the last [`TargetDir::sync`]
    /// (their index lines wait for it).
    pub fn warc_unsynced(&self) -> bool {
        self.warc
            .lock()
            .is_ok_and(|slot| slot.as_ref().is_some_and(WarcWriter::has_unindexed))
    }

    /// Append a document's statements to `data.nq.gz`, then run `then` (which
    /// adds the document's manifest row to the delta) under the same lock:
    /// see [`nquads`] for why.
    pub fn append_statements(
        &self,
        key: &str,
        nquads: &str,
        then: impl FnOnce(),
    ) -> io::Result<()> {
        let mut data = self.data_file()?;
        data.append(key, nquads)?;
        then();
        Ok(())
    }

    /// Rotate a full data file, then run a checkpoint's `take` under its lock.
    pub fn seal_data<R>(&self, take: impl FnOnce() -> R) -> io::Result<R> {
        self.data_file()?.with_sealed(take)
    }

    /// On resume: drop the statements of documents whose rows never committed.
    pub fn reconcile_data(
        &self,
        committed: &std::collections::HashSet<String>,
    ) -> io::Result<nquads::Reconciled> {
        nquads::reconcile(&self.dir, committed)
    }

    fn data_file(&self) -> io::Result<std::sync::MutexGuard<'_, nquads::DataFile>> {
        self.data
            .lock()
            .map_err(|_| io::Error::other("data file writer poisoned by a panic"))
    }

    /// Append committed rows to `manifest.jsonl` (each with its `found_by`).
    pub fn append_manifest(&self, rows: &[ManifestRow]) -> io::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.manifest_path())?;
        let mut buf = Vec::new();
        for row in rows {
            jsonl::push_line(&mut buf, &ManifestLine::of(row))?;
        }
        f.write_all(&buf)?;
        f.sync_data()
    }

    /// Rewrite `manifest.jsonl` from the committed rows (on resume: drops rows
    /// appended after the last checkpoint, restores rows lost before their append).
    pub fn rewrite_manifest(&self, rows: &[ManifestRow]) -> io::Result<()> {
        let path = self.manifest_path();
        let tmp = self.dir.join(".partial").join("manifest.jsonl.tmp");
        {
            let mut f = File::create(&tmp)?;
            let mut buf = Vec::new();
            for row in rows {
                jsonl::push_line(&mut buf, &ManifestLine::of(row))?;
            }
            f.write_all(&buf)?;
            f.sync_all()?;
        }
        fs::rename(&tmp, &path)?;
        sync_dir(&self.dir)
    }

    /// On resume: remove the target files that no manifest row names. A
    /// target is named before its row commits (§ Invariants), so a crash in
    /// between leaves a file the store never heard of; the step is redone
    /// and, when the content changed meanwhile, saved under another digest,
    /// so the first file would stay forever. `committed`: the file names of
    /// the store's rows. Call it after `manifest.jsonl` was rewritten from
    /// them: files any manifest file here names are kept (a set-aside
    /// `manifest.superseded-*` holds an earlier run's harvest after a purge
    /// or a lost store; a job without stored state may still have its old
    /// `manifest.jsonl`), and only names this module gives targets are
    /// considered: nothing else a user or another tool put here is touched.
    /// `written_since`: only files last written at or after it. Returns the
    /// files removed.
    pub fn remove_orphans(
        &self,
        committed: &HashSet<&str>,
        written_since: Option<SystemTime>,
    ) -> io::Result<Vec<String>> {
        let mut candidates = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if is_target_name(&name) && !committed.contains(name.as_str()) {
                // Not `is_file` through a link: a symlink is not ours.
                let meta = fs::symlink_metadata(entry.path())?;
                let recent = match written_since {
                    Some(since) => meta.modified()? >= since,
                    None => true,
                };
                if meta.is_file() && recent {
                    candidates.push(name);
                }
            }
        }
        if candidates.is_empty() {
            return Ok(candidates);
        }
        let kept_aside = digests_in_manifest_files(&self.dir)?;
        candidates.retain(|name| !kept_aside.contains(&name[..64]));
        for name in &candidates {
            match fs::remove_file(self.dir.join(name)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if !candidates.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(candidates)
    }

    /// Remove temp files left by a crash.
    pub fn clean_partial(&self) -> io::Result<()> {
        for entry in fs::read_dir(self.dir.join(".partial"))? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                fs::remove_file(entry.path())?;
            }
        }
        Ok(())
    }
}

/// Move a job's `manifest.jsonl` aside (to `manifest.superseded-<unix secs>.jsonl`)
/// when its stored state is gone (purged, or a lost store): the next run starts
/// afresh and appends its own rows, which would otherwise follow the old run's
/// rows for the same URLs. Returns where it went; `None` when there was
/// nothing to move (no file, or an empty one).
pub fn set_aside_manifest(state_dir: &Path, job: &str) -> io::Result<Option<PathBuf>> {
    let dir = state_dir.join("targets").join(job);
    let path = dir.join("manifest.jsonl");
    match fs::metadata(&path) {
        Ok(m) if m.len() > 0 => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for n in 0..1000u32 {
        let name = if n == 0 {
            format!("manifest.superseded-{secs}.jsonl")
        } else {
            format!("manifest.superseded-{secs}-{n}.jsonl")
        };
        let aside = dir.join(name);
        if aside.exists() {
            continue;
        }
        // A linked-data job's statements belong to the same run: beside it.
        let data = nquads::files(&dir)?;
        if !data.is_empty() {
            let data_aside = dir.join(format!("data.superseded-{secs}-{n}"));
            fs::create_dir_all(&data_aside)?;
            for file in data {
                if let Some(name) = file.file_name() {
                    fs::rename(&file, data_aside.join(name))?;
                }
            }
        }
        fs::rename(&path, &aside)?;
        sync_dir(&dir)?;
        return Ok(Some(aside));
    }
    Err(io::Error::other(format!(
        "no free name to move {} aside",
        path.display()
    )))
}

/// Whether `name` is one [`TargetFile::finish`] gives: 64 lower-case hex
/// digits, then nothing or an extension of [`extension_for`]'s table or of
/// [`NAME_EXTENSIONS`].
fn is_target_name(name: &str) -> bool {
    let Some(digest) = name.get(..64) else {
        return false;
    };
    let ext = &name[64..];
    digest
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && (ext.is_empty()
            || forager_core::mime::TYPE_EXTENSIONS
                .iter()
                .any(|&(_, e)| e == ext)
            || NAME_EXTENSIONS.contains(&ext))
}

/// Every 64-hex-digit run in the job's manifest files (`manifest.jsonl`, and
/// those set aside): whatever their rows name is kept, even from a torn line
/// that no longer parses.
fn digests_in_manifest_files(dir: &Path) -> io::Result<HashSet<String>> {
    let mut digests = HashSet::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("manifest.") && name.ends_with(".jsonl")) {
            continue;
        }
        let text = fs::read(entry.path())?;
        for run in text.split(|b| !b.is_ascii_hexdigit()) {
            if run.len() == 64 {
                digests.insert(String::from_utf8_lossy(run).to_ascii_lowercase());
            }
        }
    }
    Ok(digests)
}

/// Jobs with a non-empty `manifest.jsonl` under `state_dir/targets/`.
pub fn jobs_with_manifests(state_dir: &Path) -> io::Result<Vec<String>> {
    let mut jobs = Vec::new();
    let entries = match fs::read_dir(state_dir.join("targets")) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(jobs),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if fs::metadata(entry.path().join("manifest.jsonl")).is_ok_and(|m| m.len() > 0) {
            jobs.push(name);
        }
    }
    jobs.sort();
    Ok(jobs)
}

/// A target body being written.
pub struct TargetFile {
    final_dir: PathBuf,
    /// The extension of the served type ([`extension_for`]).
    ext: &'static str,
    /// When the served type is generic: what else may name the file.
    guess: Option<ExtensionGuess>,
    tmp: TempName,
    file: File,
    hasher: Sha256,
    bytes: u64,
}

/// A target body safely on disk under its final name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedTarget {
    pub sha256: String,
    pub file: String,
    pub bytes: u64,
}

/// What names a file served under a generic type.
struct ExtensionGuess {
    /// The extension of its name, when the table knows it.
    named: Option<&'static str>,
    /// Its first [`SNIFF_BYTES`] bytes.
    head: Vec<u8>,
}

/// Bytes of a body kept to sniff its type (the longest magic number is 16).
const SNIFF_BYTES: usize = 64;

impl TargetFile {
    pub fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        if let Some(guess) = &mut self.guess {
            let room = SNIFF_BYTES.saturating_sub(guess.head.len());
            guess
                .head
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        self.hasher.update(chunk);
        self.bytes += chunk.len() as u64;
        self.file.write_all(chunk)?;
        crashpoint::reached(CrashPoint::TargetWrite);
        Ok(())
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// SHA-256 of what was written so far (a revisit compares it with the
    /// last body's before keeping the file).
    pub fn sha256_so_far(&self) -> [u8; 32] {
        self.hasher.clone().finalize().into()
    }

    /// The extension the file gets: the served type's, unless that type is
    /// generic; then its name's, else its sniffed type's, else the generic
    /// type's own (`.txt` for `text/plain`, none for the others).
    fn extension(&self) -> &'static str {
        let Some(guess) = &self.guess else {
            return self.ext;
        };
        guess
            .named
            .or_else(|| forager_core::mime::sniff_extension(&guess.head).and_then(table_extension))
            .unwrap_or(self.ext)
    }

    /// fsync, then name it `<sha256><ext>`; identical content lands on the
    /// same name. The name is durable after [`TargetDir::sync`].
    pub fn finish(self) -> io::Result<SavedTarget> {
        if let Err(e) = self.file.sync_all() {
            self.tmp.remove();
            return Err(e);
        }
        let ext = self.extension();
        let sha256 = hex::encode(self.hasher.finalize());
        let name = format!("{sha256}{ext}");
        let dest = self.final_dir.join(&name);
        match &self.tmp {
            TempName::Unnamed => match link_unnamed(&self.file, &dest) {
                // The name is the content's hash: the file there holds these bytes already.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                // Dropping the unnamed file frees it.
                other => other?,
            },
            TempName::Partial(path) => {
                if let Err(e) = fs::rename(path, &dest) {
                    self.tmp.remove();
                    return Err(e);
                }
            }
        }
        drop(self.file);
        crashpoint::reached(CrashPoint::TargetSaved);
        Ok(SavedTarget {
            sha256,
            file: name,
            bytes: self.bytes,
        })
    }

    /// Give up on this body (e.g. the connection broke): remove the temp file.
    pub fn abandon(self) {
        drop(self.file);
        self.tmp.remove();
    }
}

/// Where a target body is written before it gets its name.
enum TempName {
    /// An `O_TMPFILE` inode in the target folder: no name until it is linked.
    Unnamed,
    /// A named file in `.partial` (a filesystem without `O_TMPFILE`).
    Partial(PathBuf),
}

impl TempName {
    /// Remove what is left of an unfinished body (an unnamed one goes with its descriptor).
    fn remove(&self) {
        if let TempName::Partial(path) = self {
            let _ = fs::remove_file(path);
        }
    }
}

/// Whether `dir` takes unnamed files: one is created and linked under a
/// probe name, then removed. Asked once per target folder, when its job
/// starts: a filesystem without `O_TMPFILE`, an old kernel or a `/proc` that
/// hides descriptors (the link goes through it) all answer no, and that job
/// writes its bodies to `.partial` instead.
fn probe_unnamed(dir: &Path) -> bool {
    let probe = dir
        .join(".partial")
        .join(format!("probe-{}", std::process::id()));
    let linked = unnamed_file_in(dir).and_then(|file| link_unnamed(&file, &probe));
    let _ = fs::remove_file(&probe);
    if let Err(e) = &linked {
        tracing::debug!(dir = %dir.display(), error = %e, "no unnamed files here: target bodies go to .partial");
    }
    linked.is_ok()
}

/// An unnamed file in `dir` (`O_TMPFILE`). Half a target never has a name:
/// it only gets one, by [`link_unnamed`], once it is complete and synced, and
/// a crash before that leaves an orphan inode the filesystem frees itself.
/// Cheaper than a named temp file: no `.partial` entry to create and remove.
fn unnamed_file_in(dir: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
}

/// Give an unnamed file (from [`unnamed_file_in`]) the name `dest`; fails with
/// `AlreadyExists` when the name is taken (never replaces a file).
fn link_unnamed(file: &File, dest: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let proc_path =
        CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(io::Error::other)?;
    let dest_c = CString::new(dest.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: both arguments are valid NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            proc_path.as_ptr(),
            libc::AT_FDCWD,
            dest_c.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn tempfile_in(dir: &Path) -> io::Result<(PathBuf, File)> {
    use rand::Rng;
    let mut rng = rand::rng();
    for _ in 0..16 {
        let name = format!("{:016x}.part", rng.random::<u64>());
        let path = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("could not create a unique temp file"))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Extensions a file served under a generic type may get from its name or
/// its first bytes: the data, document and archive formats the presets
/// harvest by name, RDF, source and notebooks. A fixed table, so that no
/// server or URL ever chooses a file name's characters.
const NAME_EXTENSIONS: &[&str] = &[
    ".csv",
    ".tsv",
    ".tab",
    ".dat",
    ".json",
    ".ndjson",
    ".jsonl",
    ".geojson",
    ".xml",
    ".xls",
    ".xlsx",
    ".xlsm",
    ".ods",
    ".parquet",
    ".feather",
    ".arrow",
    ".sav",
    ".zsav",
    ".por",
    ".dta",
    ".sas7bdat",
    ".xpt",
    ".rds",
    ".rdata",
    ".rda",
    ".nc",
    ".netcdf",
    ".h5",
    ".hdf5",
    ".hdf",
    ".sdmx",
    ".ipynb",
    ".yaml",
    ".yml",
    ".rdf",
    ".ttl",
    ".nt",
    ".nq",
    ".trig",
    ".owl",
    ".jsonld",
    ".n3",
    ".sqlite",
    ".db",
    ".dbf",
    ".shp",
    ".gpkg",
    ".kml",
    ".kmz",
    ".pdf",
    ".doc",
    ".docx",
    ".odt",
    ".rtf",
    ".ppt",
    ".pptx",
    ".odp",
    ".zip",
    ".gz",
    ".tgz",
    ".tar",
    ".7z",
    ".bz2",
    ".xz",
    ".rar",
    ".zst",
    ".py",
    ".r",
    ".txt",
    ".md",
];

/// The table's entry for an extension (lower-case, no dot), if it has one.
fn table_extension(ext: &str) -> Option<&'static str> {
    NAME_EXTENSIONS
        .iter()
        .find(|known| known[1..] == *ext)
        .copied()
}

/// The table's extension for a file name (`data.CSV` → `.csv`), if any.
fn extension_from_name(name: &str) -> Option<&'static str> {
    table_extension(&forager_core::mime::extension_of(name)?)
}

/// File extension for a MIME type, from the fixed table
/// [`forager_core::mime::TYPE_EXTENSIONS`] (never from the URL); none for a
/// type it does not know.
pub fn extension_for(mime: &str) -> &'static str {
    forager_core::mime::type_extension(&forager_core::mime::essence(mime)).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files in the folder's `.partial`.
    fn in_partial(dir: &TargetDir) -> usize {
        fs::read_dir(dir.path().join(".partial")).unwrap().count()
    }

    #[test]
    fn targets_are_named_by_content_and_deduplicated() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TargetDir::create(tmp.path(), "job").unwrap();
        let mut a = dir.begin("text/csv; charset=utf-8").unwrap();
        a.write(b"a,b\n1,2\n").unwrap();
        let a = a.finish().unwrap();
        let mut b = dir.begin("text/csv").unwrap();
        b.write(b"a,b\n").unwrap();
        b.write(b"1,2\n").unwrap();
        let b = b.finish().unwrap();
        dir.sync().unwrap();
        assert_eq!(a, b);
        assert!(a.file.ends_with(".csv"));
        assert_eq!(
            a.sha256,
            "492d5ea496056f1a6a6592241032fab764c321596317930b4fa0e1e8bc3b7470"
        );
        assert_eq!(fs::read(dir.path().join(&a.file)).unwrap(), b"a,b\n1,2\n");
        // Nothing left behind in the temp folder.
        assert_eq!(in_partial(&dir), 0);
    }

    #[test]
    fn a_body_in_partial_is_named_and_deduplicated_the_same_way() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TargetDir::create(tmp.path(), "job").unwrap();
        let mut a = dir.begin("text/csv").unwrap();
        a.write(b"x,y\n").unwrap();
        let a = a.finish().unwrap();
        let mut b = dir.begin_partial("text/csv", None).unwrap();
        b.write(b"x,y\n").unwrap();
        // Until it is finished the body has a name only in `.partial`.
        assert_eq!(in_partial(&dir), 1);
        let b = b.finish().unwrap();
        assert_eq!(a, b);
        assert_eq!(fs::read(dir.path().join(&b.file)).unwrap(), b"x,y\n");
        assert_eq!(in_partial(&dir), 0);
        let mut c = dir.begin_partial("text/csv", None).unwrap();
        c.write(b"z").unwrap();
        c.abandon();
        assert_eq!(in_partial(&dir), 0);
    }

    #[test]
    fn an_unfinished_body_has_no_name() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TargetDir::create(tmp.path(), "job").unwrap();
        let mut f = dir.begin("text/csv").unwrap();
        f.write(b"half").unwrap();
        // Only the folders: not in the target folder, not in `.partial` (with
        // O_TMPFILE; without it the body is in `.partial`, never in the folder).
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(".partial")]);
        assert_eq!(in_partial(&dir), usize::from(!dir.unnamed));
        let saved = f.finish().unwrap();
        assert_eq!(fs::read(dir.path().join(&saved.file)).unwrap(), b"half");
    }

    #[test]
    fn an_abandoned_body_leaves_no_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TargetDir::create(tmp.path(), "job").unwrap();
        let mut f = dir.begin("application/pdf").unwrap();
        f.write(b"%PDF-").unwrap();
        f.abandon();
        let files: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "only .partial remains");
        assert_eq!(in_partial(&dir), 0);
    }

    #[test]
    fn a_superseded_manifest_is_moved_aside_and_an_empty_one_stays() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(set_aside_manifest(tmp.path(), "job").unwrap(), None);
        let dir = TargetDir::create(tmp.path(), "job").unwrap();
        fs::write(dir.manifest_path(), "").unwrap();
        assert_eq!(set_aside_manifest(tmp.path(), "job").unwrap(), None);
        assert!(jobs_with_manifests(tmp.path()).unwrap().is_empty());
        for round in 0..2 {
            fs::write(dir.manifest_path(), format!("{{\"round\":{round}}}\n")).unwrap();
            assert_eq!(jobs_with_manifests(tmp.path()).unwrap(), vec!["job"]);
            let aside = set_aside_manifest(tmp.path(), "job").unwrap().unwrap();
            assert!(!dir.manifest_path().exists());
            assert_eq!(
                fs::read_to_string(&aside).unwrap(),
                format!("{{\"round\":{round}}}\n"),
                "a second move in the same second keeps the first"
            );
        }
    }

    #[test]
    fn files_without_a_row_are_removed_and_nothing_else_is() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TargetDir::create(tmp.path(), "job").unwrap();
        let save = |body: &[u8], mime: &str| {
            let mut f = dir.begin(mime).unwrap();
            f.write(body).unwrap();
            f.finish().unwrap().file
        };
        let kept = save(b"a,b\n1,2\n", "text/csv");
        let orphan = save(b"a,b\n1,3\n", "text/csv");
        let orphan_plain = save(b"<html></html>", "text/html");
        let aside = save(b"old run", "application/pdf");
        // An earlier run's manifest, set aside with a torn last line: its files stay.
        fs::write(
            dir.path().join("manifest.superseded-1.jsonl"),
            format!("{{\"sha256\":\"x\",\"file\":\"{aside}"),
        )
        .unwrap();
        // Not names forager gives its targets: never touched.
        let foreign: [&str; 6] = [
            "notes.txt",
            "crawl.log",
            "data.nq.gz",
            &format!("{}.exe", &orphan[..64]),
            &format!("{}x", &orphan[..64]),
            &orphan[..63],
        ];
        for name in foreign {
            fs::write(dir.path().join(name), b"mine").unwrap();
        }
        fs::create_dir(dir.path().join("0".repeat(64))).unwrap();
        let committed: HashSet<&str> = [kept.as_str()].into_iter().collect();
        // Files written before a time are kept when asked (all of them here).
        let future = SystemTime::now() + std::time::Duration::from_secs(3600);
        assert!(dir
            .remove_orphans(&committed, Some(future))
            .unwrap()
            .is_empty());
        let mut removed = dir.remove_orphans(&committed, None).unwrap();
        removed.sort();
        let mut want = vec![orphan.clone(), orphan_plain.clone()];
        want.sort();
        assert_eq!(removed, want);
        for name in [&kept, &aside] {
            assert!(dir.path().join(name).exists(), "{name}");
        }
        for name in foreign {
            assert!(dir.path().join(name).exists(), "{name}");
        }
        assert!(dir.path().join("0".repeat(64)).is_dir());
        assert!(dir.remove_orphans(&committed, None).unwrap().is_empty());
    }

    #[test]
    fn every_extension_a_target_gets_is_known_to_the_orphan_sweep() {
        let table = forager_core::mime::TYPE_EXTENSIONS.iter().map(|&(t, _)| t);
        // Parameters, case, and types without a row (no extension at all).
        let others = ["Text/CSV; charset=utf-8", "text/html", "text/turtle", ""];
        for t in table.chain(others) {
            let name = format!("{}{}", "ab".repeat(32), extension_for(t));
            assert!(is_target_name(&name), "{t}: {name}");
        }
        assert_eq!(extension_for("Text/CSV; charset=utf-8"), ".csv");
        assert_eq!(extension_for("text/tab-separated-values"), ".tsv");
        assert_eq!(extension_for("text/turtle"), "");
        assert!(!is_target_name(&format!("{}.exe", "ab".repeat(32))));
    }

    #[test]
    fn generic_types_take_the_name_then_the_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TargetDir::create(tmp.path(), "job").unwrap();
        let save = |mime: &str, name: Option<&str>, body: &[u8]| {
            let mut f = dir.begin_named(mime, name).unwrap();
            // Two writes: the sniffed bytes may span chunks.
            f.write(&body[..1]).unwrap();
            f.write(&body[1..]).unwrap();
            let saved = f.finish().unwrap();
            assert_eq!(fs::read(dir.path().join(&saved.file)).unwrap(), body);
            assert!(is_target_name(&saved.file), "{}", saved.file);
            saved.file[64..].to_string()
        };
        let octet = "application/octet-stream";
        assert_eq!(save(octet, Some("Pop.CSV"), b"a,b\n"), ".csv");
        assert_eq!(save(octet, Some("nb.ipynb"), b"{\"cells\": []}"), ".ipynb");
        assert_eq!(save(octet, Some("run.py"), b"print(1)\n"), ".py");
        assert_eq!(save("text/plain", Some("t.tsv"), b"a\tb\n"), ".tsv");
        // A name the table does not know, or none: the bytes decide.
        assert_eq!(save(octet, Some("download"), b"%PDF-1.4 x"), ".pdf");
        assert_eq!(save(octet, Some("x.exe"), b"PK\x03\x04zz"), ".zip");
        assert_eq!(save("", None, b"<?xml version=\"1.0\"?><a/>"), ".xml");
        // Nothing says: the generic type's own extension, or none.
        assert_eq!(save("text/plain", None, b"hello"), ".txt");
        assert_eq!(save(octet, Some("blob"), b"\x00\x01"), "");
        // A specific type is believed, whatever the name says.
        assert_eq!(save("application/pdf", Some("x.csv"), b"%PDF-"), ".pdf");
        assert_eq!(save("text/csv", Some("x.pdf"), b"%PDF-"), ".csv");
        // A name cannot smuggle anything into the file name.
        assert_eq!(save(octet, Some("../../x.c/sv"), b"q"), "");
    }

    #[test]
    fn server_supplied_types_never_shape_file_names() {
        assert_eq!(extension_for("../../etc/passwd"), "");
        assert_eq!(extension_for("application/pdf; name=../x"), ".pdf");
    }
}

/// A row of `manifest.jsonl`: the stored row and how its file was found
/// (`found_by`: seed, page link, sitemap, rdf link, catalog:KIND), told by
/// the tag path the row keeps, so the stored row needs no field of its own.
#[derive(serde::Serialize)]
struct ManifestLine<'a> {
    #[serde(flatten)]
    row: &'a ManifestRow,
    found_by: &'static str,
}

impl<'a> ManifestLine<'a> {
    fn of(row: &'a ManifestRow) -> Self {
        ManifestLine {
            row,
            found_by: forager_core::catalog::found_by(&row.tag_path),
        }
    }
}
