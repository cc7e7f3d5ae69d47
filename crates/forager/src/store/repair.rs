//! `forager repair`: rebuild a damaged state database from what can still be read.
//!
//! Owns: moving the damaged file aside and copying, job by job, every job whose
//! rows all read and decode into a new database. Must not touch: target files
//! and manifests (the caller sets aside the manifests of jobs that were lost).
//!
//! A job is copied whole or not at all: a frontier without its seen set, or a
//! manifest without the record that numbers its rows, would resume into
//! duplicates. The shared rows (MIME filters, robots.txt copies) are caches and
//! are copied one by one, as far as they read; so are the daemon's notes (a
//! pause, the dashboard's history), except those of a job that was lost: a
//! pause must not hold a job that will start afresh.
//!
//! The damaged file is opened read-only when redb allows it (it does not
//! for a file a crash left needing recovery): it is then kept unchanged.
//! A file cut short (a copy or a backup that stopped, a full disk while it
//! grew) no longer matches the length its header records, and redb refuses
//! to open it at all. It is read from a copy padded with zeros to that
//! length instead: the pages that were cut off read as damaged, so the jobs
//! with rows there are lost, and every other job is copied as from the
//! whole file.

use super::daemon_notes::DAEMON_NOTES;
use super::poison::{PoisonEntry, POISON};
use super::state::{self, STATE_CHUNKS, STATE_INDEX};
use super::{
    decode_row, guard_panics, open_database, FrontierEntry, JobRecord, ManifestRow, Store,
    StoreError, FILE_NAME, FRONTIER, JOBS, MANIFEST, REVISIT, REVISIT_STATE, SEEN, SHARED,
};
use redb::{Database, ReadableDatabase, ReadableTable};
use std::path::{Path, PathBuf};

/// What a repair did.
#[derive(Debug, Default)]
pub struct RepairReport {
    /// Where the damaged database now is.
    pub moved_to: PathBuf,
    /// Why the damaged database could not be opened at all (then nothing was copied).
    pub unopenable: Option<String>,
    /// Jobs copied whole.
    pub kept: Vec<String>,
    /// Jobs with a row that did not read or decode, and why.
    pub lost: Vec<(String, String)>,
    /// Shared rows copied, and whether some could not be read.
    pub shared_rows: usize,
    pub shared_incomplete: bool,
    /// Daemon notes copied, and whether some could not be read.
    pub notes_rows: usize,
    pub notes_incomplete: bool,
    /// The file was shorter than its header says: this many zero bytes were
    /// added (to a copy) to read it.
    pub padded_bytes: Option<u64>,
}

/// One job's rows, read in full. Also what a cluster node sends to the
/// database at each checkpoint ([`super::transfer`]): serialisable, and in
/// key order, so that unchanged rows encode to unchanged bytes.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct JobRows {
    /// The record, with its learned state (assembled from its chunks, or
    /// the record's own in a database older than schema 6).
    pub(super) record: JobRecord,
    pub(super) frontier: Vec<(u64, Vec<u8>)>,
    pub(super) seen: Vec<u64>,
    pub(super) manifest: Vec<(u64, Vec<u8>)>,
    /// A continuous job's revisit rows and state, copied as they are (the
    /// engine decodes them at resume).
    pub(super) revisit: Vec<(u64, Vec<u8>)>,
    pub(super) revisit_state: Option<Vec<u8>>,
    /// The documents it no longer parses ([`super::poison`]): without them a
    /// repaired job would parse again the document that killed the process.
    pub(super) poison: Vec<(u64, Vec<u8>)>,
}

/// Move `state_dir/forager.redb` aside and copy what can be read into a new one.
pub fn repair(state_dir: &Path, cache_bytes: usize) -> Result<RepairReport, StoreError> {
    let path = state_dir.join(FILE_NAME);
    let io = |e: std::io::Error| StoreError::Db(redb::StorageError::Io(e).into());
    if !path.exists() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no state database {}", path.display()),
        )));
    }
    ensure_unused(&path).map_err(io)?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut moved_to = state_dir.join(format!("{FILE_NAME}.damaged-{secs}"));
    let mut n = 1;
    while moved_to.exists() {
        moved_to = state_dir.join(format!("{FILE_NAME}.damaged-{secs}-{n}"));
        n += 1;
    }
    std::fs::rename(&path, &moved_to).map_err(io)?;
    let mut report = RepairReport {
        moved_to: moved_to.clone(),
        ..RepairReport::default()
    };
    let new = open_database(&path, cache_bytes)?;
    Store::check_schema(&new, &path)?;
    let old = if std::fs::metadata(&moved_to).is_ok_and(|m| m.len() == 0) {
        Err(StoreError::Empty {
            path: moved_to.clone(),
        })
    } else {
        open_old(&moved_to, cache_bytes)
    };
    let mut padded_copy = None;
    let old = match old {
        Ok(db) => db,
        Err(e) => match open_padded(&moved_to, cache_bytes) {
            Some((db, copy, added)) => {
                tracing::warn!(path = %moved_to.display(), error = %e, added,
                    "the database is shorter than its header says; reading a copy padded to its length");
                report.padded_bytes = Some(added);
                padded_copy = Some(copy);
                db
            }
            None => {
                report.unopenable = Some(e.to_string());
                return Ok(report);
            }
        },
    };
    let names = guard_panics(&moved_to, || job_names(&old));
    let names = match names {
        Ok(names) => names,
        Err(e) => {
            report.unopenable = Some(format!("its job list does not read: {e}"));
            Vec::new()
        }
    };
    for name in names {
        match guard_panics(&moved_to, || read_job(&old, &name)) {
            Ok(rows) => {
                write_job(&new, &name, &rows)?;
                report.kept.push(name);
            }
            Err(e) => report.lost.push((name, e.to_string())),
        }
    }
    let (shared, complete) = read_rows(&old, &moved_to, SHARED);
    report.shared_incomplete = !complete;
    report.shared_rows = shared.len();
    let (mut notes, complete) = read_rows(&old, &moved_to, DAEMON_NOTES);
    report.notes_incomplete = !complete;
    notes.retain(|(job, _)| !report.lost.iter().any(|(lost, _)| lost == job));
    report.notes_rows = notes.len();
    // redb writes its allocator state when a database closes: on a damaged
    // file that can panic too (seen with flipped bytes in a chunk table).
    if let Err(e) = guard_panics(&moved_to, move || {
        drop(old);
        Ok(())
    }) {
        tracing::warn!(path = %moved_to.display(), error = %e, "the damaged database did not close cleanly");
    }
    if let Some(copy) = padded_copy {
        if let Err(e) = std::fs::remove_file(&copy) {
            tracing::warn!(path = %copy.display(), error = %e, "cannot remove the padded copy");
        }
    }
    let txn = new.begin_write()?;
    {
        let mut t = txn.open_table(SHARED)?;
        for (k, v) in &shared {
            t.insert(k.as_str(), v.as_slice())?;
        }
        let mut t = txn.open_table(DAEMON_NOTES)?;
        for (k, v) in &notes {
            t.insert(k.as_str(), v.as_slice())?;
        }
    }
    txn.commit()?;
    Ok(report)
}

/// The damaged database, as it could be opened.
enum Old {
    ReadOnly(redb::ReadOnlyDatabase),
    Writable(Database),
}

impl Old {
    fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Old::ReadOnly(db) => db.begin_read(),
            Old::Writable(db) => db.begin_read(),
        }
    }
}

/// Opens the damaged database read-only if it can: nothing of it is
/// rewritten, and redb does not load the allocator state a writable open
/// needs (on a file cut short that state is often in the lost pages, and
/// redb panics reading it). A file a crash left needing recovery is refused
/// read-only; it is opened writable, which repairs it first.
fn open_old(path: &Path, cache_bytes: usize) -> Result<Old, StoreError> {
    let read_only = guard_panics(path, || {
        let mut builder = Database::builder();
        builder.set_cache_size(cache_bytes);
        builder
            .open_read_only(path)
            .map_err(|cause| StoreError::Open {
                path: path.to_path_buf(),
                cause,
            })
    });
    match read_only {
        Ok(db) => Ok(Old::ReadOnly(db)),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "no read-only open; opening it writable");
            guard_panics(path, || open_database(path, cache_bytes)).map(Old::Writable)
        }
    }
}

/// Opens a copy of `damaged` padded with zeros to the length its header
/// records, when the file is shorter than that: the copy, its path and the
/// bytes added; `None` when the file is not short or the copy does not open
/// either (the copy is then removed).
fn open_padded(damaged: &Path, cache_bytes: usize) -> Option<(Old, PathBuf, u64)> {
    let len = std::fs::metadata(damaged).ok()?.len();
    let want = recorded_len(damaged).ok().flatten()?;
    if want <= len {
        return None;
    }
    let mut name = damaged.file_name()?.to_os_string();
    name.push(".padded");
    let copy = damaged.with_file_name(name);
    let made = std::fs::copy(damaged, &copy).and_then(|_| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&copy)?
            .set_len(want)
    });
    if let Err(e) = made {
        tracing::warn!(path = %copy.display(), error = %e, "cannot make a padded copy of the database");
        let _ = std::fs::remove_file(&copy);
        return None;
    }
    match open_old(&copy, cache_bytes) {
        Ok(db) => Some((db, copy, want - len)),
        Err(e) => {
            tracing::warn!(path = %copy.display(), error = %e, "the padded copy does not open either");
            let _ = std::fs::remove_file(&copy);
            None
        }
    }
}

/// The file length a redb database's header records (redb 4's file format:
/// the page size and region geometry, then the count of full regions and the
/// pages of the trailing one), or `None` when the header is not redb's or is
/// out of range. The layout is one header page, then each region's header
/// pages and data pages.
fn recorded_len(path: &Path) -> std::io::Result<Option<u64>> {
    use std::io::Read;
    const MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];
    let mut header = [0u8; 32];
    let mut f = std::fs::File::open(path)?;
    if f.read_exact(&mut header).is_err() || header[..9] != MAGIC {
        return Ok(None);
    }
    let field = |at: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&header[at..at + 4]);
        u64::from(u32::from_le_bytes(b))
    };
    let (page, region_header, region_data, full, trailing) =
        (field(12), field(16), field(20), field(24), field(28));
    // Bounds redb itself checks: pages of 512 B to 64 KiB, at most 2^20
    // pages and regions; anything else is a damaged header, not a short file.
    let sane = page.is_power_of_two()
        && (512..=65536).contains(&page)
        && (1..=1 << 20).contains(&region_data)
        && region_header <= 1 << 20
        && trailing <= region_data
        && full + u64::from(trailing > 0) >= 1
        && full <= 1 << 20;
    if !sane {
        return Ok(None);
    }
    let trailing_len = if trailing > 0 {
        (region_header + trailing) * page
    } else {
        0
    };
    Ok(Some(
        page + full * (region_header + region_data) * page + trailing_len,
    ))
}

/// Refuse while another process (a daemon, a crawl) holds the database: redb
/// holds an exclusive `flock` on it while open.
fn ensure_unused(path: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path)?;
    // SAFETY: flock on a descriptor this function owns.
    let locked = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked != 0 {
        return Err(std::io::Error::other(format!(
            "{} is in use (a running daemon or crawl): stop it first",
            path.display()
        )));
    }
    // Closing the file releases the lock.
    Ok(())
}

fn job_names(db: &Old) -> Result<Vec<String>, StoreError> {
    let txn = db.begin_read()?;
    let jobs = txn.open_table(JOBS)?;
    let mut names = Vec::new();
    for row in jobs.iter()? {
        let (k, _) = row?;
        names.push(k.value().to_string());
    }
    Ok(names)
}

fn read_job(db: &Old, job: &str) -> Result<JobRows, StoreError> {
    read_job_in(&db.begin_read()?, job)
}

/// Every row of `job` in one read transaction.
pub(super) fn read_job_in(txn: &redb::ReadTransaction, job: &str) -> Result<JobRows, StoreError> {
    read_job_rows_in(txn, job, true)
}

/// [`read_job_in`], with the learned state assembled from its chunks only
/// when `with_state` (a cluster checkpoint sends those chunks apart, as the
/// store keeps them: [`super::transfer`]); without it the record's state is
/// what the record row holds (empty from schema 6 on).
pub(super) fn read_job_rows_in(
    txn: &redb::ReadTransaction,
    job: &str,
    with_state: bool,
) -> Result<JobRows, StoreError> {
    let jobs = txn.open_table(JOBS)?;
    let mut record: JobRecord = decode_row(
        "jobs",
        jobs.get(job)?
            .ok_or_else(|| StoreError::Db(redb::Error::Corrupted(format!("job {job} vanished"))))?
            .value(),
    )?;
    // A database older than schema 6 has no state tables: the record holds the state.
    match (txn.open_table(STATE_INDEX), txn.open_table(STATE_CHUNKS)) {
        (Ok(_), Ok(_)) if !with_state => {}
        (Ok(index), Ok(chunks)) => {
            if let Some(learned) = state::read_state(&index, &chunks, job)? {
                record.strategy_state = learned;
            }
        }
        (Err(redb::TableError::TableDoesNotExist(_)), _)
        | (_, Err(redb::TableError::TableDoesNotExist(_))) => {}
        (Err(e), _) | (_, Err(e)) => return Err(e.into()),
    }
    let range = (job, 0u64)..=(job, u64::MAX);
    let mut rows = JobRows {
        record,
        frontier: Vec::new(),
        seen: Vec::new(),
        manifest: Vec::new(),
        revisit: Vec::new(),
        revisit_state: None,
        poison: Vec::new(),
    };
    for row in txn.open_table(FRONTIER)?.range(range.clone())? {
        let (k, v) = row?;
        decode_row::<FrontierEntry>("frontier", v.value())?;
        rows.frontier.push((k.value().1, v.value().to_vec()));
    }
    for row in txn.open_table(SEEN)?.range(range.clone())? {
        let (k, _) = row?;
        rows.seen.push(k.value().1);
    }
    for row in txn.open_table(MANIFEST)?.range(range.clone())? {
        let (k, v) = row?;
        decode_row::<ManifestRow>("manifest", v.value())?;
        rows.manifest.push((k.value().1, v.value().to_vec()));
    }
    // A database older than schema 5 has no revisit tables: nothing to copy.
    match txn.open_table(REVISIT) {
        Ok(t) => {
            for row in t.range(range)? {
                let (k, v) = row?;
                rows.revisit.push((k.value().1, v.value().to_vec()));
            }
        }
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(e.into()),
    }
    match txn.open_table(REVISIT_STATE) {
        Ok(t) => rows.revisit_state = t.get(job)?.map(|v| v.value().to_vec()),
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(e.into()),
    }
    // A database from before the poison list, or whose jobs never listed a
    // document, has no poison table.
    match txn.open_table(POISON) {
        Ok(t) => {
            for row in t.range((job, 0u64)..=(job, u64::MAX))? {
                let (k, v) = row?;
                decode_row::<PoisonEntry>("poison", v.value())?;
                rows.poison.push((k.value().1, v.value().to_vec()));
            }
        }
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(rows)
}

pub(super) fn write_job(db: &Database, job: &str, rows: &JobRows) -> Result<(), StoreError> {
    let mut txn = db.begin_write()?;
    txn.set_durability(redb::Durability::Immediate)?;
    {
        state::put_state(
            &mut txn.open_table(STATE_INDEX)?,
            &mut txn.open_table(STATE_CHUNKS)?,
            job,
            &rows.record.strategy_state,
        )?;
        txn.open_table(JOBS)?
            .insert(job, state::stored_record(&rows.record).as_slice())?;
        let mut frontier = txn.open_table(FRONTIER)?;
        for (id, v) in &rows.frontier {
            frontier.insert((job, *id), v.as_slice())?;
        }
        let mut seen = txn.open_table(SEEN)?;
        for h in &rows.seen {
            seen.insert((job, *h), ())?;
        }
        let mut manifest = txn.open_table(MANIFEST)?;
        for (n, v) in &rows.manifest {
            manifest.insert((job, *n), v.as_slice())?;
        }
        let mut revisit = txn.open_table(REVISIT)?;
        for (h, v) in &rows.revisit {
            revisit.insert((job, *h), v.as_slice())?;
        }
        if let Some(state) = &rows.revisit_state {
            txn.open_table(REVISIT_STATE)?
                .insert(job, state.as_slice())?;
        }
        if !rows.poison.is_empty() {
            let mut poison = txn.open_table(POISON)?;
            for (k, v) in &rows.poison {
                poison.insert((job, *k), v.as_slice())?;
            }
        }
    }
    txn.commit()?;
    Ok(())
}

/// The rows of a table keyed by name that read, in order, up to the first
/// that does not; and whether all of them did. A table the old database
/// never created reads as empty and complete.
fn read_rows(
    db: &Old,
    path: &Path,
    table: redb::TableDefinition<&str, &[u8]>,
) -> (Vec<(String, Vec<u8>)>, bool) {
    let mut out = Vec::new();
    let result = guard_panics(path, || {
        let txn = db.begin_read()?;
        let t = match txn.open_table(table) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for row in t.iter()? {
            let (k, v) = row?;
            out.push((k.value().to_string(), v.value().to_vec()));
        }
        Ok(())
    });
    (out, result.is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{JobDelta, JobRecord};
    use forager_core::link::QueueKey;
    use forager_core::link::{Link, LinkId};

    /// A store with `jobs` jobs of 200 frontier links, seen hashes and manifest rows each.
    fn pristine(dir: &Path, jobs: usize) {
        let store = Store::open(dir, 1 << 20).unwrap();
        for j in 0..jobs {
            let job = format!("job{j}");
            let mut d = JobDelta::new(&job);
            d.frontier_added = (0..200u64)
                .map(|i| {
                    let url = url::Url::parse(&format!("http://a.test/{job}/{i}")).unwrap();
                    let entry = FrontierEntry {
                        link: Link::seed(url),
                        key: QueueKey {
                            slot: i as u32,
                            score: 0.5,
                        },
                    };
                    (LinkId(i), std::sync::Arc::new(entry))
                })
                .collect();
            d.seen_added = (0..500).collect();
            d.manifest_added = (0..50u64)
                .map(|n| {
                    let url = format!("http://a.test/{job}/{n}.csv");
                    (n, crate::store::tests::csv_row(url, n))
                })
                .collect();
            d.record = Some(JobRecord {
                strategy: "bfs".into(),
                next_link_id: 200,
                next_manifest_row: 50,
                ..Default::default()
            });
            d.shared = vec![(format!("blob/{j}"), vec![j as u8; 300])];
            store.commit_blocking(d).unwrap();
        }
    }

    #[test]
    fn a_sound_store_is_copied_whole() {
        let dir = tempfile::tempdir().unwrap();
        pristine(dir.path(), 3);
        let report = repair(dir.path(), 1 << 20).unwrap();
        assert_eq!(report.kept, vec!["job0", "job1", "job2"]);
        assert!(report.lost.is_empty() && report.unopenable.is_none());
        assert_eq!(report.shared_rows, 3);
        assert!(report.moved_to.exists());
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let loaded = store.load_job("job1").unwrap();
        assert_eq!(
            (
                loaded.frontier.len(),
                loaded.seen.len(),
                loaded.manifest.len()
            ),
            (200, 500, 50)
        );
        assert_eq!(store.shared("blob/2").unwrap(), Some(vec![2u8; 300]));
    }

    #[test]
    fn a_kept_job_keeps_its_poison_list() {
        let dir = tempfile::tempdir().unwrap();
        pristine(dir.path(), 2);
        let entry = PoisonEntry {
            url: "http://a.test/job1/bomb.rdf".into(),
            reason: crate::store::PoisonReason::Crashed,
            strikes: 2,
            detail: "the process died parsing it".into(),
            at: 1_764_000_000,
        };
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            store
                .record_poison("job1", std::slice::from_ref(&entry))
                .unwrap();
        }
        let report = repair(dir.path(), 1 << 20).unwrap();
        assert_eq!(report.kept, vec!["job0", "job1"]);
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.poison_list("job1").unwrap(), vec![entry]);
        assert!(store.poison_list("job0").unwrap().is_empty());
    }

    #[test]
    fn the_daemon_notes_of_kept_jobs_are_copied() {
        let dir = tempfile::tempdir().unwrap();
        pristine(dir.path(), 2);
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            store
                .put_daemon_notes(&[
                    ("job1".into(), Some(b"paused".to_vec())),
                    ("queued".into(), Some(b"history".to_vec())),
                ])
                .unwrap();
        }
        let report = repair(dir.path(), 1 << 20).unwrap();
        assert_eq!(report.notes_rows, 2);
        assert!(!report.notes_incomplete);
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let mut notes = store.daemon_notes().unwrap();
        notes.sort();
        assert_eq!(
            notes,
            vec![
                ("job1".to_string(), b"paused".to_vec()),
                ("queued".to_string(), b"history".to_vec()),
            ]
        );
    }

    /// Flipped bytes anywhere in the file: opening never panics (it is
    /// `Damaged`, naming the file and `forager repair`, or it opens), and a
    /// repair always leaves a store that opens.
    #[test]
    fn flipped_bytes_never_panic_at_open_and_repair_always_yields_a_store() {
        let base = tempfile::tempdir().unwrap();
        pristine(base.path(), 3);
        let bytes = std::fs::read(base.path().join(FILE_NAME)).unwrap();
        let mut damaged = 0;
        let steps = 24;
        for step in 0..steps {
            let at = bytes.len() * step / steps;
            let dir = tempfile::tempdir().unwrap();
            let mut b = bytes.clone();
            for x in b.iter_mut().skip(at).take(512) {
                *x ^= 0xa5;
            }
            std::fs::write(dir.path().join(FILE_NAME), &b).unwrap();
            let opened = std::panic::catch_unwind(|| Store::open(dir.path(), 1 << 20))
                .unwrap_or_else(|_| panic!("Store::open panicked on bytes flipped at {at}"));
            match opened {
                Ok(store) => drop(store),
                Err(e) => {
                    let text = e.to_string();
                    assert!(text.contains(FILE_NAME), "{text}");
                    if matches!(e, StoreError::Damaged { .. }) {
                        assert!(text.contains("forager repair --state-dir"), "{text}");
                        damaged += 1;
                    }
                }
            }
            let report = repair(dir.path(), 1 << 20)
                .unwrap_or_else(|e| panic!("repair failed on bytes flipped at {at}: {e}"));
            if report.unopenable.is_none() {
                assert_eq!(report.kept.len() + report.lost.len(), 3, "{report:?}");
            }
            let store = Store::open(dir.path(), 1 << 20)
                .unwrap_or_else(|e| panic!("no store after repairing bytes flipped at {at}: {e}"));
            for job in &report.kept {
                let loaded = store.load_job(job).unwrap();
                assert_eq!(loaded.manifest.len(), 50, "{job} copied whole");
            }
            assert!(report.moved_to.exists());
        }
        eprintln!("{damaged} of {steps} corruptions were reported as damaged");
    }

    #[test]
    fn the_recorded_length_is_the_file_length_of_a_sound_store() {
        let dir = tempfile::tempdir().unwrap();
        pristine(dir.path(), 3);
        let path = dir.path().join(FILE_NAME);
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(recorded_len(&path).unwrap(), Some(len));
        std::fs::write(dir.path().join("other"), b"not a database at all, no").unwrap();
        assert_eq!(recorded_len(&dir.path().join("other")).unwrap(), None);
    }

    #[test]
    fn a_store_cut_short_is_read_from_a_padded_copy() {
        let base = tempfile::tempdir().unwrap();
        pristine(base.path(), 3);
        let bytes = std::fs::read(base.path().join(FILE_NAME)).unwrap();
        for cut in [1usize, 4096] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(FILE_NAME), &bytes[..bytes.len() - cut]).unwrap();
            let report = repair(dir.path(), 1 << 20).unwrap();
            assert!(report.unopenable.is_none(), "cut {cut}: {report:?}");
            assert_eq!(report.padded_bytes, Some(cut as u64));
            assert_eq!(report.kept.len() + report.lost.len(), 3, "{report:?}");
            // The damaged file is kept as it was; the padded copy is gone.
            assert_eq!(
                std::fs::metadata(&report.moved_to).unwrap().len(),
                (bytes.len() - cut) as u64
            );
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert!(!names.iter().any(|n| n.ends_with(".padded")), "{names:?}");
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            for job in &report.kept {
                assert_eq!(store.load_job(job).unwrap().manifest.len(), 50);
            }
        }
    }

    #[test]
    fn an_empty_file_is_refused_at_open_and_repair_starts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), b"").unwrap();
        let e = Store::open(dir.path(), 1 << 20).err().unwrap();
        assert!(matches!(e, StoreError::Empty { .. }), "{e}");
        assert!(e.to_string().contains("is empty (0 bytes)"), "{e}");
        let report = repair(dir.path(), 1 << 20).unwrap();
        assert!(report.unopenable.is_some());
        Store::open(dir.path(), 1 << 20).unwrap();
    }

    #[test]
    fn a_store_in_use_is_not_moved() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let e = repair(dir.path(), 1 << 20).unwrap_err().to_string();
        assert!(e.contains("in use"), "{e}");
        assert!(dir.path().join(FILE_NAME).exists());
        drop(store);
    }
}
