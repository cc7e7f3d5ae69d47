//! Durable state: one redb database per state directory.
//!
//! Owns: the schema (tables and key layout), encoding of every stored value
//! ([`forager_core::codec`]), and the single writer thread that commits checkpoints. Must not
//! touch: the network, crawl decisions.
//!
//! Every job's state lives under its name in a handful of tables (keys are
//! `(job, u64)` tuples, which redb sorts by job then number):
//!
//! | table      | key                | value                                  |
//! |------------|--------------------|----------------------------------------|
//! | `meta`     | name               | format version of the schema           |
//! | `jobs`     | job                | [`JobRecord`]: counters, small state (the learner's is in the state tables) |
//! | `frontier` | (job, link id)     | [`FrontierEntry`]                      |
//! | `seen`     | (job, url hash)    | nothing                                |
//! | `manifest` | (job, row number)  | [`ManifestRow`]                        |
//! | `shared`   | name               | process-wide blobs (MIME filters)      |
//! | `revisit`  | (job, url hash)    | a continuous job's fetched URL: validators, schedule, action |
//! | `revisit_state` | job           | a continuous job's revisit learner and counts |
//! | `state_index` | job             | the chunks of the job's learned state, in order ([`state`]) |
//! | `state_chunks` | (job, chunk key) | one chunk of it: a checkpoint writes only the chunks that changed |
//! | `poison`   | (job, URL hash)    | a document the job no longer parses ([`poison`]) |
//! | `daemon_notes` | job            | the daemon's pause and dashboard history of the job ([`daemon_notes`]) |
//!
//! Writes go through [`Store::commit`]: a job sends a [`JobDelta`] and awaits
//! the commit; the writer thread drains its queue and commits every pending
//! delta of every job in one transaction (group commit, `Durability::Immediate`),
//! so a checkpoint is atomic and costs one fsync however many jobs run.

use forager_core::codec;
mod crash_backend;
pub mod daemon_notes;
pub mod poison;
pub mod repair;
pub mod state;
pub mod transfer;

pub use forager_core::record::{
    ChangeKind, FrontierEntry, JobCounters, JobDelta, JobRecord, ManifestRow, RdfStatements,
    StopReason, StructuredCounts,
};
pub use poison::{PoisonEntry, PoisonReason};

use crate::crashpoint::{self, CrashPoint};
use forager_core::link::LinkId;
use forager_core::link::QueueKey;
use redb::backends::FileBackend;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const JOBS: TableDefinition<&str, &[u8]> = TableDefinition::new("jobs");
const FRONTIER: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("frontier");
const SEEN: TableDefinition<(&str, u64), ()> = TableDefinition::new("seen");
const MANIFEST: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("manifest");
const SHARED: TableDefinition<&str, &[u8]> = TableDefinition::new("shared");
/// Added with schema 5 (an older store gains it empty at open).
const REVISIT: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("revisit");
const REVISIT_STATE: TableDefinition<&str, &[u8]> = TableDefinition::new("revisit_state");

/// Version of the table layout; stored in `meta` and checked at open.
/// 2: frontier values put the queue key before the link.
/// 3: manifest rows end with an RDF document's statements (migrated from 2).
/// 4: manifest rows end with a structured-data page's counts (migrated from 2 and 3).
/// 5: manifest rows end with what a continuous job's revisit found (migrated
///    from 2 to 4); the `revisit` and `revisit_state` tables.
/// 6: a job's learned state in content-defined chunks (`state_index`,
///    `state_chunks`), out of its record (migrated from 2 to 5).
const SCHEMA_VERSION: u32 = 6;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    // The cause is in the message and not a `#[source]`: `{:#}` would print it twice.
    #[error("state database {path}: {cause}")]
    Open {
        path: PathBuf,
        cause: redb::DatabaseError,
    },
    #[error(
        "state database {path} is in use by another process (a running forager daemon or crawl)"
    )]
    Locked { path: PathBuf },
    #[error(
        "state database {path} has schema version {found}, this forager uses {SCHEMA_VERSION}; \
         move it aside or run `forager purge` to start fresh"
    )]
    Schema { path: PathBuf, found: u32 },
    #[error(
        "state database {path} is empty (0 bytes): its state was lost (a full disk or a copy that \
         failed?). Restore it from a backup, or move it aside to start every job afresh"
    )]
    Empty { path: PathBuf },
    #[error(
        "state database {path} cannot be read ({why}); run `forager repair --state-dir {dir}` \
         to copy what can be read into a new database (the damaged one is kept aside)",
        dir = path.parent().map(|p| p.display().to_string()).unwrap_or_default()
    )]
    Damaged { path: PathBuf, why: String },
    #[error("state database: {0}")]
    Db(#[from] redb::Error),
    #[error("state database: job {job}'s learned state is damaged: {why}")]
    State { job: String, why: String },
    #[error("state database: corrupt value in {table}: {source}")]
    Corrupt {
        table: &'static str,
        #[source]
        source: codec::CodecError,
    },
    #[error("state database writer has stopped")]
    WriterGone,
    #[error("state database {path}: commit failed: {why}")]
    Commit { path: PathBuf, why: String },
    #[error("state database {path} is closed after a failed write ({why}); it reopens at the next commit")]
    Unavailable { path: PathBuf, why: String },
}

/// A commit that did not happen; the delta comes back so that nothing is lost
/// and the caller can retry it (merged with what it learned since).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct CommitFailed {
    pub error: StoreError,
    pub delta: Box<JobDelta>,
}

impl From<CommitFailed> for StoreError {
    fn from(f: CommitFailed) -> Self {
        f.error
    }
}

macro_rules! db_err {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Db(e.into())
            }
        }
    )*};
}
db_err!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

/// What a commit cost, for metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct CommitReport {
    pub duration: Duration,
    /// Deltas committed together in the transaction that carried this one.
    pub deltas: usize,
}

enum WriterMsg {
    Shutdown,
    Commit(
        Box<JobDelta>,
        oneshot::Sender<Result<CommitReport, CommitFailed>>,
    ),
    Purge(String, oneshot::Sender<Result<(), StoreError>>),
}

/// One table's share of the database ([`Store::usage`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableUsage {
    pub name: &'static str,
    pub entries: u64,
    /// B-tree pages (leaves and branches) of the table.
    pub pages: u64,
    /// Keys and values as stored, without the tree's own overhead.
    pub stored_bytes: u64,
    /// Branch keys and other tree metadata.
    pub metadata_bytes: u64,
    /// Unused room in the table's pages.
    pub fragmented_bytes: u64,
}

impl TableUsage {
    /// Bytes of the file the table occupies.
    pub fn total_bytes(&self) -> u64 {
        self.stored_bytes + self.metadata_bytes + self.fragmented_bytes
    }
}

/// A job's state as loaded at start-up.
#[derive(Debug, Default)]
pub struct LoadedJob {
    /// Queue keys of the frontier links, in id order; a link's record is read
    /// with [`Store::frontier_entry`] when it is popped.
    pub frontier: Vec<(LinkId, QueueKey)>,
    pub seen: Vec<u64>,
    pub manifest: Vec<(u64, ManifestRow)>,
    /// A continuous job's revisit rows (URL hash → encoded entry) and state.
    pub revisit: Vec<(u64, Vec<u8>)>,
    pub revisit_state: Option<Vec<u8>>,
}

/// Handle to the state database; cheap to clone. The database closes (the
/// writer drains its queue and stops) when the last handle is dropped.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    db: Arc<DbSlot>,
    tx: mpsc::Sender<WriterMsg>,
    writer: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The open database, or why it is closed. redb latches the first I/O error
/// (a full disk) and refuses every later operation, so after a failed write
/// the writer closes the database and reopens it (quick repair) before the
/// next commit: a job retries its checkpoint until the disk has room again.
struct DbSlot {
    path: PathBuf,
    cache_bytes: usize,
    db: RwLock<Result<Arc<Database>, String>>,
    /// Learned-state bytes (chunks and indexes) committed since open.
    state_bytes: AtomicU64,
}

impl DbSlot {
    /// The database for one read; an error while it waits to be reopened.
    fn get(&self) -> Result<Arc<Database>, StoreError> {
        match &*self.db.read().unwrap_or_else(|p| p.into_inner()) {
            Ok(db) => Ok(db.clone()),
            Err(why) => Err(StoreError::Unavailable {
                path: self.path.clone(),
                why: why.clone(),
            }),
        }
    }

    /// Close the database after a failed write; readers see `why` until it reopens.
    fn close(&self, why: String) {
        let mut slot = self.db.write().unwrap_or_else(|p| p.into_inner());
        if let Ok(db) = std::mem::replace(&mut *slot, Err(why)) {
            wait_for_sole_owner(db);
        }
    }

    /// Reopen a closed database (redb repairs it); a no-op when open.
    fn reopen(&self) -> Result<Arc<Database>, StoreError> {
        let mut slot = self.db.write().unwrap_or_else(|p| p.into_inner());
        if let Ok(db) = &*slot {
            return Ok(db.clone());
        }
        let db = Arc::new(guard_panics(&self.path, || {
            open_database(&self.path, self.cache_bytes)
        })?);
        *slot = Ok(db.clone());
        tracing::info!(path = %self.path.display(), "state database reopened");
        Ok(db)
    }
}

/// Drop the last handle to a database, waiting for readers that still hold one
/// (reads are short), so the file lock is released before it is reopened.
fn wait_for_sole_owner(mut db: Arc<Database>) {
    for _ in 0..10_000 {
        match Arc::try_unwrap(db) {
            Ok(db) => {
                drop(db);
                return;
            }
            Err(shared) => {
                db = shared;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    tracing::warn!("a reader kept the state database open for 10 s; leaking its handle");
    std::mem::forget(db);
}

/// The database's file name in a state folder.
pub const FILE_NAME: &str = "forager.redb";

/// Run `f`, turning a panic inside redb (it panics on some corrupt pages:
/// "range end index out of range", invalid UTF-8) into [`StoreError::Damaged`]
/// naming the file and the way out.
pub(crate) fn guard_panics<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    // What the user reads if a second panic during the unwind makes the
    // runtime abort (see `catch_quietly_or_exit`): the error of a panic.
    let last_word = StoreError::Damaged {
        path: path.to_path_buf(),
        why: "redb stopped on damaged data, and again while unwinding".into(),
    }
    .to_string();
    match crate::panics::catch_quietly_or_exit(last_word, f) {
        Ok(Err(e)) if is_corruption(&e) => Err(StoreError::Damaged {
            path: path.to_path_buf(),
            why: e.to_string(),
        }),
        Ok(result) => result,
        Err(panic) => {
            // What redb met, not that it panicked: the user's way out is the
            // same, and a panic's wording reads like forager's own bug.
            let why =
                crate::panics::panic_message(&*panic).unwrap_or_else(|| "no description".into());
            Err(StoreError::Damaged {
                path: path.to_path_buf(),
                why: format!("redb stopped on damaged data: {why}"),
            })
        }
    }
}

/// Whether an error says the file's content is bad (not that it is busy or unreadable).
fn is_corruption(e: &StoreError) -> bool {
    let storage = |s: &redb::StorageError| match s {
        redb::StorageError::Corrupted(_) => true,
        redb::StorageError::Io(io) => io.kind() == std::io::ErrorKind::InvalidData,
        _ => false,
    };
    match e {
        StoreError::Open {
            cause: redb::DatabaseError::Storage(s),
            ..
        } => storage(s),
        StoreError::Db(redb::Error::Corrupted(_))
        | StoreError::Corrupt { .. }
        | StoreError::State { .. } => true,
        _ => false,
    }
}

fn open_database(path: &Path, cache_bytes: usize) -> Result<Database, StoreError> {
    let open_err = |cause| match cause {
        redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked {
            path: path.to_path_buf(),
        },
        cause => StoreError::Open {
            path: path.to_path_buf(),
            cause,
        },
    };
    let mut builder = Database::builder();
    builder.set_cache_size(cache_bytes);
    if crashpoint::is_armed(CrashPoint::StoreWrite) {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| open_err(e.into()))?;
        let backend = crash_backend::CrashingBackend(FileBackend::new(file).map_err(open_err)?);
        return builder.create_with_backend(backend).map_err(open_err);
    }
    builder.create(path).map_err(open_err)
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.tx.send(WriterMsg::Shutdown);
        if let Some(handle) = self.writer.lock().ok().and_then(|mut h| h.take()) {
            let _ = handle.join();
        }
    }
}

impl Store {
    /// Open (or create) `state_dir/forager.redb` with quick repair and a bounded cache.
    pub fn open(state_dir: &Path, cache_bytes: usize) -> Result<Store, StoreError> {
        let path = state_dir.join(FILE_NAME);
        // redb would take an empty file for a new database: a lost store must not look fresh.
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
            return Err(StoreError::Empty { path });
        }
        let db = guard_panics(&path, || {
            let db = open_database(&path, cache_bytes)?;
            Self::check_schema(&db, &path)?;
            Ok(db)
        })?;
        let slot = Arc::new(DbSlot {
            path,
            cache_bytes,
            db: RwLock::new(Ok(Arc::new(db))),
            state_bytes: AtomicU64::new(0),
        });
        let (tx, rx) = mpsc::channel();
        let writer_slot = slot.clone();
        let writer = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || writer_loop(&writer_slot, rx))
            .map_err(|e| StoreError::Db(redb::StorageError::Io(e).into()))?;
        Ok(Store {
            inner: Arc::new(Inner {
                db: slot,
                tx,
                writer: std::sync::Mutex::new(Some(writer)),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.db.path
    }

    /// Runs a read of the database: a panic inside redb (it has some on
    /// damaged pages: an index out of range, unreachable code) and a damaged
    /// page become [`StoreError::Damaged`], which names `forager repair`.
    fn read<T>(&self, f: impl FnOnce(&Database) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let db = self.inner.db.get()?;
        guard_panics(&self.inner.db.path, || {
            crate::crashpoint::panic_twice_if_reached(crate::crashpoint::CrashPoint::StoreRead);
            f(&db)
        })
    }

    fn check_schema(db: &Database, path: &Path) -> Result<(), StoreError> {
        let mut txn = db.begin_write()?;
        txn.set_durability(redb::Durability::Immediate)?;
        // Every commit keeps redb's quick-repair data, or a crash before the
        // first checkpoint would cost a full repair (seconds per GiB).
        txn.set_quick_repair(true);
        {
            let mut meta = txn.open_table(META)?;
            let found = match meta.get("schema_version")? {
                Some(v) => Some(decode_row::<u32>("meta", v.value())?),
                None => None,
            };
            if let Some(old @ (2..=5)) = found {
                if old <= 4 {
                    Self::migrate_manifest(&txn, old)?;
                }
                let jobs = state::migrate_records(&txn)?;
                meta.insert("schema_version", codec::encode(&SCHEMA_VERSION).as_slice())?;
                tracing::info!(path = %path.display(), from = old, to = SCHEMA_VERSION, jobs, "state database migrated");
            }
            let found = found.map(|v| {
                if (2..=5).contains(&v) {
                    SCHEMA_VERSION
                } else {
                    v
                }
            });
            match found {
                Some(v) if v != SCHEMA_VERSION => {
                    return Err(StoreError::Schema {
                        path: path.to_path_buf(),
                        found: v,
                    })
                }
                Some(_) => {}
                None => {
                    meta.insert("schema_version", codec::encode(&SCHEMA_VERSION).as_slice())?;
                }
            }
            // Create every table so readers never meet a missing one.
            txn.open_table(JOBS)?;
            txn.open_table(FRONTIER)?;
            txn.open_table(SEEN)?;
            txn.open_table(MANIFEST)?;
            txn.open_table(SHARED)?;
            txn.open_table(REVISIT)?;
            txn.open_table(REVISIT_STATE)?;
            txn.open_table(state::STATE_INDEX)?;
            txn.open_table(state::STATE_CHUNKS)?;
            txn.open_table(poison::POISON)?;
            txn.open_table(daemon_notes::DAEMON_NOTES)?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Schema 2, 3 or 4 → 5 (and on to 6): every manifest row gains the fields it lacks, empty.
    fn migrate_manifest(txn: &redb::WriteTransaction, from: u32) -> Result<(), StoreError> {
        let mut manifest = txn.open_table(MANIFEST)?;
        let mut rows = Vec::new();
        for entry in manifest.iter()? {
            let (key, value) = entry?;
            let (job, n) = key.value();
            let row = match from {
                2 => ManifestRow::from(decode_row::<forager_core::record::ManifestRowV2>(
                    "manifest",
                    value.value(),
                )?),
                3 => ManifestRow::from(decode_row::<forager_core::record::ManifestRowV3>(
                    "manifest",
                    value.value(),
                )?),
                _ => ManifestRow::from(decode_row::<forager_core::record::ManifestRowV4>(
                    "manifest",
                    value.value(),
                )?),
            };
            rows.push(((job.to_string(), n), row));
        }
        for ((job, n), row) in rows {
            manifest.insert((job.as_str(), n), codec::encode(&row).as_slice())?;
        }
        Ok(())
    }

    /// Commit a delta (group-committed with other jobs' deltas); resolves when
    /// durable. On failure the delta comes back in the error.
    pub async fn commit(&self, delta: JobDelta) -> Result<CommitReport, CommitFailed> {
        let done = self.send_commit(delta)?;
        done.await.unwrap_or_else(|_| Err(self.writer_gone()))
    }

    /// Blocking variant of [`Store::commit`] for code outside the async runtime.
    pub fn commit_blocking(&self, delta: JobDelta) -> Result<CommitReport, CommitFailed> {
        let done = self.send_commit(delta)?;
        done.blocking_recv()
            .unwrap_or_else(|_| Err(self.writer_gone()))
    }

    fn send_commit(
        &self,
        delta: JobDelta,
    ) -> Result<oneshot::Receiver<Result<CommitReport, CommitFailed>>, CommitFailed> {
        let (ack, done) = oneshot::channel();
        match self.inner.tx.send(WriterMsg::Commit(Box::new(delta), ack)) {
            Ok(()) => Ok(done),
            Err(mpsc::SendError(msg)) => Err(CommitFailed {
                error: StoreError::WriterGone,
                delta: match msg {
                    WriterMsg::Commit(delta, _) => delta,
                    _ => Box::default(),
                },
            }),
        }
    }

    /// The writer dropped an acknowledgement without answering (it panicked):
    /// the delta is gone with it.
    fn writer_gone(&self) -> CommitFailed {
        CommitFailed {
            error: StoreError::WriterGone,
            delta: Box::default(),
        }
    }

    /// Delete everything stored for a job.
    pub async fn purge(&self, job: &str) -> Result<(), StoreError> {
        let (ack, done) = oneshot::channel();
        self.inner
            .tx
            .send(WriterMsg::Purge(job.to_string(), ack))
            .map_err(|_| StoreError::WriterGone)?;
        done.await.unwrap_or(Err(StoreError::WriterGone))
    }

    /// Names of every job with stored state.
    pub fn job_names(&self) -> Result<Vec<String>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let jobs = txn.open_table(JOBS)?;
            let mut names = Vec::new();
            for row in jobs.iter()? {
                let (k, _) = row?;
                names.push(k.value().to_string());
            }
            Ok(names)
        })
    }

    /// A job's record, its learned state assembled from its chunks.
    pub fn job_record(&self, job: &str) -> Result<Option<JobRecord>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let jobs = txn.open_table(JOBS)?;
            let Some(v) = jobs.get(job)? else {
                return Ok(None);
            };
            let mut record: JobRecord = decode_row("jobs", v.value())?;
            let index = txn.open_table(state::STATE_INDEX)?;
            let chunks = txn.open_table(state::STATE_CHUNKS)?;
            if let Some(learned) = state::read_state(&index, &chunks, job)? {
                record.strategy_state = learned;
            }
            Ok(Some(record))
        })
    }

    /// Learned-state bytes (chunks and indexes) this store has committed
    /// since it was opened: what incremental checkpoints write (benchmarks).
    pub fn state_bytes_written(&self) -> u64 {
        self.inner.db.state_bytes.load(Ordering::Relaxed)
    }

    /// A process-wide blob.
    pub fn shared(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let t = txn.open_table(SHARED)?;
            Ok(t.get(name)?.map(|v| v.value().to_vec()))
        })
    }

    /// Every process-wide blob whose name starts with `prefix`, in name order.
    pub fn shared_with_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let t = txn.open_table(SHARED)?;
            let mut out = Vec::new();
            for row in t.range(prefix..)? {
                let (k, v) = row?;
                if !k.value().starts_with(prefix) {
                    break;
                }
                out.push((k.value().to_string(), v.value().to_vec()));
            }
            Ok(out)
        })
    }

    /// What each table holds and costs on disk, for benchmarks and
    /// diagnostics (which table grows with a crawl's size).
    pub fn usage(&self) -> Result<Vec<TableUsage>, StoreError> {
        fn of(
            name: &'static str,
            t: &impl ReadableTableMetadata,
        ) -> Result<TableUsage, StoreError> {
            let stats = t.stats()?;
            Ok(TableUsage {
                name,
                entries: t.len()?,
                pages: stats.leaf_pages() + stats.branch_pages(),
                stored_bytes: stats.stored_bytes(),
                metadata_bytes: stats.metadata_bytes(),
                fragmented_bytes: stats.fragmented_bytes(),
            })
        }
        self.read(|db| {
            let txn = db.begin_read()?;
            Ok(vec![
                of("meta", &txn.open_table(META)?)?,
                of("jobs", &txn.open_table(JOBS)?)?,
                of("frontier", &txn.open_table(FRONTIER)?)?,
                of("seen", &txn.open_table(SEEN)?)?,
                of("manifest", &txn.open_table(MANIFEST)?)?,
                of("shared", &txn.open_table(SHARED)?)?,
                of("revisit", &txn.open_table(REVISIT)?)?,
                of("revisit_state", &txn.open_table(REVISIT_STATE)?)?,
                of("state_index", &txn.open_table(state::STATE_INDEX)?)?,
                of("state_chunks", &txn.open_table(state::STATE_CHUNKS)?)?,
            ])
        })
    }

    /// A job's manifest rows, in row order.
    pub fn manifest_rows(&self, job: &str) -> Result<Vec<ManifestRow>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let manifest = txn.open_table(MANIFEST)?;
            let mut rows = Vec::new();
            for row in manifest.range((job, 0u64)..=(job, u64::MAX))? {
                let (_, v) = row?;
                rows.push(decode_row("manifest", v.value())?);
            }
            Ok(rows)
        })
    }

    /// A job's frontier (keys only), seen set and manifest, to resume it; its
    /// record comes from [`Store::job_record`].
    pub fn load_job(&self, job: &str) -> Result<LoadedJob, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let mut loaded = LoadedJob::default();
            let range = (job, 0u64)..=(job, u64::MAX);
            let frontier = txn.open_table(FRONTIER)?;
            for row in frontier.range(range.clone())? {
                let (k, v) = row?;
                let key = codec::decode_prefix::<QueueKey>(v.value()).map_err(|source| {
                    StoreError::Corrupt {
                        table: "frontier",
                        source,
                    }
                })?;
                loaded.frontier.push((LinkId(k.value().1), key));
            }
            let seen = txn.open_table(SEEN)?;
            for row in seen.range(range.clone())? {
                let (k, _) = row?;
                loaded.seen.push(k.value().1);
            }
            let manifest = txn.open_table(MANIFEST)?;
            for row in manifest.range(range.clone())? {
                let (k, v) = row?;
                let entry = decode_row("manifest", v.value())?;
                loaded.manifest.push((k.value().1, entry));
            }
            let revisit = txn.open_table(REVISIT)?;
            for row in revisit.range(range)? {
                let (k, v) = row?;
                loaded.revisit.push((k.value().1, v.value().to_vec()));
            }
            loaded.revisit_state = txn
                .open_table(REVISIT_STATE)?
                .get(job)?
                .map(|v| v.value().to_vec());
            Ok(loaded)
        })
    }

    /// One committed frontier link of a job.
    pub fn frontier_entry(
        &self,
        job: &str,
        id: LinkId,
    ) -> Result<Option<FrontierEntry>, StoreError> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let frontier = txn.open_table(FRONTIER)?;
            let Some(v) = frontier.get((job, id.0))? else {
                return Ok(None);
            };
            let entry = decode_row("frontier", v.value())?;
            Ok(Some(entry))
        })
    }
}

/// Decode a stored value of `table`; a value that does not decode is corruption.
fn decode_row<T: serde::de::DeserializeOwned>(
    table: &'static str,
    bytes: &[u8],
) -> Result<T, StoreError> {
    codec::decode(bytes).map_err(|source| StoreError::Corrupt { table, source })
}

fn writer_loop(slot: &DbSlot, rx: mpsc::Receiver<WriterMsg>) {
    let mut open = true;
    while open {
        let Ok(first) = rx.recv() else { break };
        let mut commits = Vec::new();
        let mut msg = Some(first);
        // Group commit: take everything already queued into this transaction.
        while let Some(m) = msg.take() {
            match m {
                WriterMsg::Shutdown => open = false,
                WriterMsg::Commit(delta, ack) => commits.push((delta, ack)),
                WriterMsg::Purge(job, ack) => {
                    let _ = ack.send(with_db(slot, |db| purge_job(db, &job)));
                }
            }
            msg = rx.try_recv().ok();
        }
        if commits.is_empty() {
            continue;
        }
        let started = Instant::now();
        let result = {
            let deltas: Vec<&JobDelta> = commits.iter().map(|(d, _)| d.as_ref()).collect();
            with_db(slot, |db| {
                let written = write_deltas(db, &deltas)?;
                slot.state_bytes.fetch_add(written.bytes, Ordering::Relaxed);
                tracing::debug!(
                    state_bytes = written.bytes,
                    chunks_put = written.chunks_put,
                    chunks_removed = written.chunks_removed,
                    "learned state committed"
                );
                Ok(())
            })
        };
        let report = CommitReport {
            duration: started.elapsed(),
            deltas: commits.len(),
        };
        for (delta, ack) in commits {
            let _ = ack.send(match &result {
                Ok(()) => Ok(report),
                Err(e) => Err(CommitFailed {
                    // Kept as what it is: a job pauses on a failed write and
                    // retries it, but stops on a damaged store with the advice to repair it.
                    error: match e {
                        StoreError::Damaged { path, why } => StoreError::Damaged {
                            path: path.clone(),
                            why: why.clone(),
                        },
                        e => StoreError::Commit {
                            path: slot.path.clone(),
                            why: e.to_string(),
                        },
                    },
                    delta,
                }),
            });
        }
    }
}

/// Run one write transaction on the database, reopening it first if an earlier
/// write failed, and closing it if this one fails (redb latches I/O errors).
fn with_db(
    slot: &DbSlot,
    write: impl FnOnce(&Database) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let db = slot.reopen()?;
    let result = guard_panics(&slot.path, || write(&db));
    drop(db);
    if let Err(e) = &result {
        tracing::warn!(path = %slot.path.display(), error = %e, "state database write failed; closing it until the next commit");
        slot.close(e.to_string());
    }
    result
}

/// Commit `deltas` in one transaction; what the learned states wrote.
fn write_deltas(db: &Database, deltas: &[&JobDelta]) -> Result<state::StateWrite, StoreError> {
    let mut written = state::StateWrite::default();
    let mut txn = db.begin_write()?;
    txn.set_durability(redb::Durability::Immediate)?;
    txn.set_quick_repair(true);
    {
        let mut jobs = txn.open_table(JOBS)?;
        let mut frontier = txn.open_table(FRONTIER)?;
        let mut seen = txn.open_table(SEEN)?;
        let mut manifest = txn.open_table(MANIFEST)?;
        let mut shared = txn.open_table(SHARED)?;
        let mut revisit = txn.open_table(REVISIT)?;
        let mut revisit_state = txn.open_table(REVISIT_STATE)?;
        let mut state_index = txn.open_table(state::STATE_INDEX)?;
        let mut state_chunks = txn.open_table(state::STATE_CHUNKS)?;
        for d in deltas {
            let job = d.job.as_str();
            for (id, entry) in &d.frontier_added {
                frontier.insert((job, id.0), codec::encode(entry.as_ref()).as_slice())?;
            }
            for id in &d.frontier_removed {
                frontier.remove((job, id.0))?;
            }
            for h in &d.seen_added {
                seen.insert((job, *h), ())?;
            }
            for (n, row) in &d.manifest_added {
                manifest.insert((job, *n), codec::encode(row).as_slice())?;
            }
            for (name, bytes) in &d.shared {
                shared.insert(name.as_str(), bytes.as_slice())?;
            }
            for (h, bytes) in &d.revisit_put {
                revisit.insert((job, *h), bytes.as_slice())?;
            }
            if let Some(state) = &d.revisit_state {
                revisit_state.insert(job, state.as_slice())?;
            }
            if let Some(record) = &d.record {
                let w = state::put_state(
                    &mut state_index,
                    &mut state_chunks,
                    job,
                    &record.strategy_state,
                )?;
                written.bytes += w.bytes;
                written.chunks_put += w.chunks_put;
                written.chunks_removed += w.chunks_removed;
                jobs.insert(job, state::stored_record(record).as_slice())?;
            }
        }
    }
    txn.commit()?;
    Ok(written)
}

fn purge_job(db: &Database, job: &str) -> Result<(), StoreError> {
    let mut txn = db.begin_write()?;
    txn.set_durability(redb::Durability::Immediate)?;
    txn.set_quick_repair(true);
    {
        txn.open_table(JOBS)?.remove(job)?;
        let range = (job, 0u64)..=(job, u64::MAX);
        txn.open_table(FRONTIER)?
            .retain_in(range.clone(), |_, _| false)?;
        txn.open_table(SEEN)?
            .retain_in(range.clone(), |_, _| false)?;
        txn.open_table(MANIFEST)?
            .retain_in(range.clone(), |_, _| false)?;
        txn.open_table(REVISIT)?.retain_in(range, |_, _| false)?;
        txn.open_table(REVISIT_STATE)?.remove(job)?;
        txn.open_table(state::STATE_INDEX)?.remove(job)?;
        txn.open_table(state::STATE_CHUNKS)?
            .retain_in((job, 0u128)..=(job, u128::MAX), |_, _| false)?;
        poison::purge(&txn, job)?;
        daemon_notes::purge(&txn, job)?;
    }
    txn.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager_core::link::Link;

    fn entry(path: &str) -> FrontierEntry {
        FrontierEntry {
            link: Link::seed(url::Url::parse(&format!("http://a.test/{path}")).unwrap()),
            key: QueueKey {
                slot: path.len() as u32,
                score: 0.5,
            },
        }
    }

    fn row(n: u64) -> ManifestRow {
        csv_row(format!("http://a.test/{n}.csv"), n)
    }

    /// A saved CSV of `n` bytes at `url`: the manifest row of the store's tests.
    pub(super) fn csv_row(url: String, n: u64) -> ManifestRow {
        ManifestRow {
            final_url: url.clone(),
            url,
            mime: "text/csv".into(),
            bytes: n,
            sha256: "00".repeat(32),
            file: format!("{n}.csv"),
            referrer: None,
            tag_path: "/html/body/a".into(),
            fetched_at: "2026-11-22T00:00:00Z".into(),
            truncated: false,
            rdf: None,
            structured: None,
            change: None,
        }
    }

    #[tokio::test]
    async fn deltas_accumulate_per_job_and_purge_removes_one_job() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        for job in ["a", "b"] {
            let mut d = JobDelta::new(job);
            d.frontier_added = (0..5)
                .map(|i| (LinkId(i), Arc::new(entry(&format!("{job}{i}")))))
                .collect();
            d.seen_added = vec![1, 2, 3];
            d.manifest_added = vec![(0, row(0))];
            d.record = Some(JobRecord {
                strategy: "bfs".into(),
                next_link_id: 5,
                ..Default::default()
            });
            store.commit(d).await.unwrap();
        }
        let mut d = JobDelta::new("a");
        d.frontier_removed = vec![LinkId(0), LinkId(3)];
        d.seen_added = vec![4];
        store.commit(d).await.unwrap();

        let a = store.load_job("a").unwrap();
        let ids: Vec<u64> = a.frontier.iter().map(|(id, _)| id.0).collect();
        assert_eq!(ids, vec![1, 2, 4]);
        assert_eq!(a.frontier[0].1, entry("a1").key);
        assert_eq!(
            store.frontier_entry("a", LinkId(1)).unwrap(),
            Some(entry("a1"))
        );
        assert_eq!(store.frontier_entry("a", LinkId(0)).unwrap(), None);
        assert_eq!(a.seen, vec![1, 2, 3, 4]);
        assert_eq!(a.manifest, vec![(0, row(0))]);
        assert_eq!(store.job_record("a").unwrap().unwrap().next_link_id, 5);

        store.purge("a").await.unwrap();
        let a = store.load_job("a").unwrap();
        assert!(store.job_record("a").unwrap().is_none());
        assert!(a.frontier.is_empty() && a.seen.is_empty());
        let b = store.load_job("b").unwrap();
        assert_eq!(b.frontier.len(), 5);
        assert_eq!(store.job_names().unwrap(), vec!["b".to_string()]);
    }

    #[tokio::test]
    async fn usage_counts_each_tables_entries_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let mut d = JobDelta::new("j");
        d.seen_added = (0..1000).collect();
        d.frontier_added = vec![(LinkId(0), Arc::new(entry("x")))];
        store.commit(d).await.unwrap();
        let usage = store.usage().unwrap();
        let table = |name: &str| usage.iter().find(|t| t.name == name).unwrap().clone();
        let seen = table("seen");
        assert_eq!((seen.entries, table("frontier").entries), (1000, 1));
        // Each key is the job name ("j", with its length) and a u64.
        assert!(seen.stored_bytes >= 1000 * 9, "{seen:?}");
        assert!(seen.total_bytes() >= seen.stored_bytes && seen.pages >= 1);
        assert_eq!(table("manifest").entries, 0);
        assert_eq!(usage.len(), 10);
    }

    #[test]
    fn staging_many_blobs_replaces_like_staging_one_at_a_time() {
        let blobs = |tag: u8| {
            (0..300u32)
                .map(move |i| (format!("b/{}", i % 200), vec![tag, i as u8]))
                .collect::<Vec<_>>()
        };
        let one_blob = |name: &str, bytes: Vec<u8>| [(name.to_string(), bytes)];
        let mut one = JobDelta::new("j");
        let mut all = JobDelta::new("j");
        for d in [&mut one, &mut all] {
            d.stage_shared(one_blob("b/7", vec![0]));
            d.stage_shared(one_blob("other", vec![0]));
            // An absorbed older delta may hold a name twice.
            d.shared.push(("other".into(), vec![9]));
        }
        for (name, bytes) in blobs(1).into_iter().chain(blobs(2)) {
            one.stage_shared([(name, bytes)]);
        }
        all.stage_shared(blobs(1));
        all.stage_shared(blobs(2));
        all.stage_shared(one_blob("other", vec![3]));
        one.stage_shared(one_blob("other", vec![3]));
        assert_eq!(all.shared, one.shared);
        assert_eq!(all.shared.len(), 3 + 199);
        // The first copy of a duplicated name is the one replaced.
        assert_eq!(
            all.shared
                .iter()
                .filter(|(n, _)| n == "other")
                .map(|(_, b)| b.clone())
                .collect::<Vec<_>>(),
            vec![vec![3], vec![9]]
        );
    }

    #[tokio::test]
    async fn a_failed_delta_absorbed_into_a_newer_one_commits_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let mut older = JobDelta::new("j");
        older.frontier_added = vec![
            (LinkId(1), Arc::new(entry("one"))),
            (LinkId(2), Arc::new(entry("two"))),
        ];
        older.seen_added = vec![1, 2];
        older.manifest_added = vec![(0, row(0))];
        older.stage_shared([("blob".to_string(), vec![1])]);
        let mut newer = JobDelta::new("j");
        // Removes an id only the older delta added: order matters.
        newer.frontier_removed = vec![LinkId(1)];
        newer.seen_added = vec![3];
        newer.manifest_added = vec![(1, row(1))];
        newer.absorb_older(older);
        newer.stage_shared([("blob".to_string(), vec![2])]);
        assert_eq!(newer.shared, vec![("blob".to_string(), vec![2])]);
        store.commit(newer).await.unwrap();
        let j = store.load_job("j").unwrap();
        assert_eq!(j.frontier, vec![(LinkId(2), entry("two").key)]);
        assert_eq!(j.seen, vec![1, 2, 3]);
        assert_eq!(j.manifest, vec![(0, row(0)), (1, row(1))]);
        assert_eq!(store.manifest_rows("j").unwrap(), vec![row(0), row(1)]);
        assert_eq!(store.shared("blob").unwrap(), Some(vec![2]));
    }

    #[tokio::test]
    async fn state_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            let mut d = JobDelta::new("j");
            d.seen_added = vec![42];
            store.commit(d).await.unwrap();
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.load_job("j").unwrap().seen, vec![42]);
    }

    /// A schema-3 manifest row (before `structured`), as version 3 encoded it.
    #[derive(serde::Serialize)]
    struct RowV3 {
        url: String,
        final_url: String,
        mime: String,
        bytes: u64,
        sha256: String,
        file: String,
        referrer: Option<String>,
        tag_path: String,
        fetched_at: String,
        truncated: bool,
        rdf: Option<RdfStatements>,
    }

    #[test]
    fn schema_3_rows_are_migrated_with_their_rdf_counts() {
        let dir = tempfile::tempdir().unwrap();
        let rdf = RdfStatements {
            syntax: "turtle".into(),
            statements: 15,
            errors: 1,
        };
        {
            let db = Database::create(dir.path().join("forager.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META)
                .unwrap()
                .insert("schema_version", codec::encode(&3u32).as_slice())
                .unwrap();
            let row = RowV3 {
                url: "http://a.test/x.ttl".into(),
                final_url: "http://a.test/x.ttl".into(),
                mime: "text/turtle".into(),
                bytes: 10,
                sha256: "ab".into(),
                file: "ab.ttl".into(),
                referrer: None,
                tag_path: "/html".into(),
                fetched_at: "2026-01-01T00:00:00Z".into(),
                truncated: false,
                rdf: Some(rdf.clone()),
            };
            txn.open_table(MANIFEST)
                .unwrap()
                .insert(("j", 0u64), codec::encode(&row).as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let rows = store.manifest_rows("j").unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].rdf, Some(rdf));
        assert_eq!(rows[0].structured, None);
        assert_eq!(rows[0].final_url, "http://a.test/x.ttl");
        drop(store);
        // Migrated once: reopening reads version 4.
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.manifest_rows("j").unwrap().len(), 1);
    }

    #[test]
    fn schema_4_rows_are_migrated_and_revisit_rows_commit_with_the_delta() {
        #[derive(serde::Serialize)]
        struct RowV4 {
            url: String,
            final_url: String,
            mime: String,
            bytes: u64,
            sha256: String,
            file: String,
            referrer: Option<String>,
            tag_path: String,
            fetched_at: String,
            truncated: bool,
            rdf: Option<RdfStatements>,
            structured: Option<StructuredCounts>,
        }
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::create(dir.path().join("forager.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META)
                .unwrap()
                .insert("schema_version", codec::encode(&4u32).as_slice())
                .unwrap();
            let r = row(3);
            let old = RowV4 {
                url: r.url,
                final_url: r.final_url,
                mime: r.mime,
                bytes: r.bytes,
                sha256: r.sha256,
                file: r.file,
                referrer: r.referrer,
                tag_path: r.tag_path,
                fetched_at: r.fetched_at,
                truncated: r.truncated,
                rdf: None,
                structured: Some(StructuredCounts::default()),
            };
            txn.open_table(MANIFEST)
                .unwrap()
                .insert(("j", 0u64), codec::encode(&old).as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let rows = store.manifest_rows("j").unwrap();
        assert_eq!(rows[0].change, None);
        assert_eq!(rows[0].structured, Some(StructuredCounts::default()));
        // The revisit rows and state go in and out with the job's delta, and with its purge.
        let mut d = JobDelta::new("j");
        d.revisit_put = vec![(7, vec![1, 2]), (9, vec![3])];
        d.revisit_state = Some(vec![4]);
        let mut newer = JobDelta::new("j");
        newer.revisit_put = vec![(7, vec![5])];
        newer.absorb_older(d);
        store.commit_blocking(newer).unwrap();
        let loaded = store.load_job("j").unwrap();
        assert_eq!(loaded.revisit, vec![(7, vec![5]), (9, vec![3])]);
        assert_eq!(loaded.revisit_state, Some(vec![4]));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(store.purge("j")).unwrap();
        let loaded = store.load_job("j").unwrap();
        assert!(loaded.revisit.is_empty() && loaded.revisit_state.is_none());
    }

    /// A state database the previous build (schema 5) left: the learned state
    /// inside the job record.
    fn schema_5_store(dir: &Path, record: &JobRecord) {
        let db = Database::create(dir.join("forager.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("schema_version", codec::encode(&5u32).as_slice())
            .unwrap();
        txn.open_table(JOBS)
            .unwrap()
            .insert("j", codec::encode(record).as_slice())
            .unwrap();
        txn.open_table(MANIFEST)
            .unwrap()
            .insert(("j", 0u64), codec::encode(&row(0)).as_slice())
            .unwrap();
        txn.commit().unwrap();
    }

    /// The rows as stored: the record's own blob and the state index's length.
    fn stored_state(store: &Store, job: &str) -> (Vec<u8>, Option<usize>) {
        let db = store.inner.db.get().unwrap();
        let txn = db.begin_read().unwrap();
        let record: JobRecord = codec::decode(
            txn.open_table(JOBS)
                .unwrap()
                .get(job)
                .unwrap()
                .unwrap()
                .value(),
        )
        .unwrap();
        let index = txn
            .open_table(state::STATE_INDEX)
            .unwrap()
            .get(job)
            .unwrap()
            .map(|v| codec::decode::<state::StateIndex>(v.value()).unwrap().len());
        (record.strategy_state, index)
    }

    fn chunk_rows(store: &Store) -> usize {
        let db = store.inner.db.get().unwrap();
        let txn = db.begin_read().unwrap();
        let rows = txn
            .open_table(state::STATE_CHUNKS)
            .unwrap()
            .iter()
            .unwrap()
            .count();
        rows
    }

    #[test]
    fn schema_5_learned_state_moves_into_chunks_and_checkpoints_write_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        // 800 kB that never repeats.
        let mut learned = vec![0u8; 800_000];
        rand::RngCore::fill_bytes(
            &mut <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(9),
            &mut learned,
        );
        let record = JobRecord {
            strategy: "sb".into(),
            seed: 3,
            strategy_state: learned.clone(),
            early_stop_state: vec![1, 2],
            next_link_id: 9,
            ..Default::default()
        };
        schema_5_store(dir.path(), &record);
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.job_record("j").unwrap().as_ref(), Some(&record));
        assert_eq!(store.manifest_rows("j").unwrap(), vec![row(0)]);
        // Out of the record, into chunks.
        assert_eq!(stored_state(&store, "j"), (Vec::new(), Some(learned.len())));
        assert!(chunk_rows(&store) > 20);

        // A checkpoint that changes two places writes a few chunks, not the state.
        let mut next = record.clone();
        next.strategy_state[1_000] ^= 1;
        next.strategy_state[500_000] ^= 1;
        next.next_link_id = 10;
        let mut d = JobDelta::new("j");
        d.record = Some(next.clone());
        let before = store.state_bytes_written();
        store.commit_blocking(d).unwrap();
        let written = store.state_bytes_written() - before;
        assert!(
            written > 0 && written < learned.len() as u64 / 10,
            "{written} bytes written for a state of {}",
            learned.len()
        );
        assert_eq!(store.job_record("j").unwrap().as_ref(), Some(&next));
        drop(store);

        // Migrated once: reopened as schema 6, the same state.
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.job_record("j").unwrap().as_ref(), Some(&next));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(store.purge("j")).unwrap();
        assert_eq!(chunk_rows(&store), 0);
        assert!(store.job_record("j").unwrap().is_none());
    }

    #[test]
    fn a_newer_schema_is_refused_with_a_way_out() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::create(dir.path().join("forager.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META)
                .unwrap()
                .insert("schema_version", codec::encode(&99u32).as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        let err = Store::open(dir.path(), 1 << 20).err().unwrap();
        let msg = err.to_string();
        assert!(
            msg.contains("schema version 99") && msg.contains("forager purge"),
            "{msg}"
        );
    }
}
