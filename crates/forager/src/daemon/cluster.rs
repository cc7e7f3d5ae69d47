//! The daemon's side of a cluster (`[cluster]`, issue 38, docs/cluster.md):
//! job files are registered in the shared database, and this node runs the
//! jobs it holds a lease on, not the files of its own folder.
//!
//! - **Registration**: every valid job file a scan of the jobs folder finds
//!   is registered by name and SHA-256 ([`Node::register`]); the same text
//!   registered by several nodes is one job.
//! - **Leases**: each tick, a node beats and, holding fewer than
//!   `max_jobs` leases, takes its fair share of the free jobs
//!   ([`Node::acquire`]: at most free jobs / live nodes a round, so that a
//!   dead node's jobs spread over the survivors). The job table is then fed one *virtual
//!   job file* per held lease, its text the registered one, so that the
//!   table starts and stops runners as it does for the files of one machine.
//! - **A run under a lease** ([`JobLease`]): before the runner opens the
//!   job, its checkpoint in the database replaces the node's local rows of
//!   it ([`restore`]); each local checkpoint is then mirrored to the
//!   database under the lease's epoch, with the new manifest rows
//!   ([`mirror`]): the job's rows, and of its learned state only the
//!   chunks the lease's last mirrored checkpoint did not leave there
//!   (`StoredChunks`), so that a checkpoint's cost follows what changed; the lease keeper's *stop* stops the runner, which
//!   checkpoints locally; at the end the lease is finished (done) or
//!   released ([`settle`]) and the main loop hears of it.
//! - **What a person asks** (`forager pause|resume|rerun` on any node,
//!   [`Node::drive`]) is kept in the job's registry row (forager-cluster's
//!   `control`). Each round the node reads the rows it holds
//!   ([`Node::acquire`]): a job paused, asked to rerun, or whose file
//!   changed ([`Asked`]) vanishes from the view, so the table stops its
//!   run at a checkpoint; [`settle`] then releases the lease (pause, new
//!   text) or sets the manifest aside and wipes the job (rerun).
//!
//! Must not touch: the database's protocol (forager-cluster), the crawl.

use super::admin::{DriveAction, DriveOutcome};
use super::jobs::{Parsed, ScannedFile};
use crate::store::{StopReason, Store};
use forager_cluster::{
    Beat, CheckpointParts, Cluster, Control, Lease, LeaseKeeper, Registration, StoredChunks,
};
use forager_core::config::{self, ClusterConfig, ConfigError};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

/// Why a held job's run is stopped at its node's round, and what its
/// lease becomes then ([`settle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Asked {
    /// A person paused it: released, and no node takes it until resumed.
    Pause,
    /// A person asked for a rerun: its manifest set aside, its state wiped.
    Rerun,
    /// Its file changed: released, and leased again with the new text.
    Changed,
}

/// What a person asked of a held job, shared with its run.
pub(super) type AskedCell = Arc<Mutex<Option<Asked>>>;

fn asked_of(cell: &AskedCell) -> Option<Asked> {
    *cell.lock().unwrap_or_else(|p| p.into_inner())
}

/// One job this node leases.
struct Held {
    lease: Lease,
    /// SHA-256 of the lease's text: another in the registry means the file changed.
    sha: Vec<u8>,
    /// The registered text, parsed.
    parsed: Parsed,
    /// Renews the lease; the job's run takes it (and drops it when it ends).
    keeper: Option<LeaseKeeper>,
    asked: AskedCell,
}

/// This node in the cluster.
pub(super) struct Node {
    cluster: Cluster,
    /// This node's lease numbers in `/metrics`.
    metrics: Option<super::metrics::ClusterMetrics>,
    held: BTreeMap<String, Held>,
    /// SHA-256 of the text last registered from each local job file.
    registered: HashMap<PathBuf, Vec<u8>>,
    /// The state folder: its `targets` is the shared folder (a rerun sets manifests aside there).
    state_dir: PathBuf,
    /// Jobs leased since [`Node::take_fresh`] was last called.
    fresh: Vec<String>,
    /// `forager drain`: the held jobs are stopped and released, and no new
    /// one is taken, until `forager drain --cancel` (or a restart).
    draining: bool,
}

/// What a run of a leased job needs: sent with it to its task.
pub(super) struct JobLease {
    pub cluster: Cluster,
    pub lease: Lease,
    pub keeper: LeaseKeeper,
    /// Told the job's name when the run has settled its lease.
    pub ended: mpsc::UnboundedSender<String>,
    /// What a person asked of the job: how [`settle`] ends the lease.
    pub asked: AskedCell,
}

/// The path a leased job's virtual file shows under (in `status` and in errors).
fn virtual_path(job: &str) -> PathBuf {
    PathBuf::from(format!("cluster:{job}"))
}

impl Node {
    /// Connect as this node and join the cluster's nodes, or a clear
    /// error naming the node and the server.
    pub async fn connect(
        config: &ClusterConfig,
        max_jobs: usize,
        state_dir: &Path,
    ) -> anyhow::Result<Node> {
        let (cluster, probe) = Cluster::connect(config).await?;
        cluster.join(max_jobs).await?;
        info!(
            node = cluster.node(),
            server_version = %probe.server_version,
            lease = ?cluster.lease_duration(),
            "running as a node of the cluster"
        );
        Ok(Node {
            cluster,
            metrics: None,
            held: BTreeMap::new(),
            registered: HashMap::new(),
            state_dir: state_dir.to_path_buf(),
            fresh: Vec::new(),
            draining: false,
        })
    }

    pub fn name(&self) -> &str {
        self.cluster.node()
    }

    /// Count leases into `metrics` from now on.
    pub fn set_metrics(&mut self, metrics: super::metrics::ClusterMetrics) {
        self.metrics = Some(metrics);
    }

    /// The database handle (the fetcher paces through it).
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Register the valid job files of a scan whose text is new (module doc).
    /// A file that cannot be read or registered now is tried again at the next scan.
    pub async fn register(&mut self, files: &[ScannedFile]) {
        let paths: Vec<PathBuf> = files
            .iter()
            .filter(|f| matches!(f.parsed, Parsed::Valid(_)))
            .map(|f| f.path.clone())
            .collect();
        self.registered.retain(|p, _| paths.contains(p));
        let texts = tokio::task::spawn_blocking(move || {
            paths
                .into_iter()
                .map(|p| {
                    let text = config::read_config_file(&p);
                    (p, text)
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        for (path, text) in texts {
            let text = match text {
                Ok(t) => t,
                Err(e) => {
                    warn!(node = self.name(), file = %path.display(), error = %e, "cannot read the job file to register it");
                    continue;
                }
            };
            // The scan parsed an earlier read; parse this one, the text registered.
            let name = match config::parse_job(&text, &path) {
                Ok(spec) => spec.name,
                Err(e) => {
                    debug!(file = %path.display(), error = %e, "job file changed under the scan; next scan");
                    continue;
                }
            };
            let sha = Sha256::digest(text.as_bytes()).to_vec();
            if self.registered.get(&path) == Some(&sha) {
                continue;
            }
            match self.cluster.register(&name, &text).await {
                Ok(outcome) => {
                    if outcome != Registration::Unchanged {
                        info!(node = self.name(), job = %name, file = %path.display(), ?outcome, "job registered in the cluster");
                    }
                    self.registered.insert(path, sha);
                }
                Err(e) => {
                    warn!(node = self.name(), job = %name, error = %e, "cannot register the job; retrying at the next scan")
                }
            }
        }
    }

    /// What the job table is to see of a scan: the refused local files (as
    /// errors of no job: their job is the cluster's), and one virtual file
    /// per held lease.
    pub fn view(&self, files: Vec<ScannedFile>) -> Vec<ScannedFile> {
        let mut out: Vec<ScannedFile> = files
            .into_iter()
            .filter_map(|f| match f.parsed {
                Parsed::Valid(_) => None,
                Parsed::Invalid { error, .. } => Some(ScannedFile {
                    path: f.path,
                    parsed: Parsed::Invalid { error, name: None },
                }),
            })
            .collect();
        // Draining: the held jobs' virtual files vanish, so the table stops
        // their runners as for a removed file; each run then checkpoints,
        // mirrors and releases its lease as on SIGTERM.
        if !self.draining {
            // A job asked to pause or rerun, or whose file changed, vanishes
            // too: its run stops at a checkpoint and settles as asked.
            out.extend(
                self.held
                    .iter()
                    .filter(|(_, h)| asked_of(&h.asked).is_none())
                    .map(|(job, h)| ScannedFile {
                        path: virtual_path(job),
                        parsed: h.parsed.clone(),
                    }),
            );
        }
        out
    }

    /// Start or end draining (module doc); returns the leases held now.
    /// A lease no run took yet (the job waits for a slot) is released here:
    /// no run would settle it.
    pub async fn set_draining(&mut self, on: bool) -> usize {
        self.draining = on;
        if on {
            let idle: Vec<String> = self
                .held
                .iter()
                .filter(|(_, h)| h.keeper.is_some())
                .map(|(job, _)| job.clone())
                .collect();
            for job in idle {
                let Some(h) = self.held.remove(&job) else {
                    continue;
                };
                drop(h.keeper);
                if let Err(e) = self.cluster.release(&h.lease).await {
                    warn!(node = self.name(), job = %job, epoch = h.lease.epoch, error = %e,
                        "cannot release the lease of a job that had not started; it lapses after its length");
                }
            }
            self.count_held();
        }
        self.held.len()
    }

    /// One acquisition round (each tick): beat, then lease this round's
    /// fair share of the free jobs (forager-cluster's `nodes`), within
    /// `max_jobs` held; whether any was taken. A draining node beats and
    /// takes none.
    pub async fn acquire(&mut self, max_jobs: usize) -> bool {
        let draining = self.draining;
        let want = max_jobs.saturating_sub(self.held.len());
        let beat = Beat {
            held: self.held.len(),
            max_jobs,
            draining,
        };
        let want = if draining { 0 } else { want };
        let (leases, census) = match self.cluster.acquire_share(want, beat).await {
            Ok(r) => r,
            Err(e) => {
                warn!(node = self.name(), error = %e, "cannot beat or acquire job leases; retrying");
                return false;
            }
        };
        if !leases.is_empty() {
            debug!(
                node = self.name(),
                taken = leases.len(),
                want,
                free_jobs = census.free_jobs,
                live_peers = census.live_peers,
                "fair share of the free jobs taken"
            );
        }
        if let Some(m) = &self.metrics {
            m.leases_acquired.inc_by(leases.len() as u64);
            m.takeovers
                .inc_by(leases.iter().filter(|l| l.taken_from.is_some()).count() as u64);
        }
        let mut taken = false;
        for lease in leases {
            let path = virtual_path(&lease.job);
            let parsed = match config::parse_job(&lease.spec, &path) {
                Ok(spec) if spec.name == lease.job => Parsed::Valid(Box::new(spec)),
                Ok(spec) => Parsed::Invalid {
                    error: ConfigError::new(
                        &path,
                        None,
                        "name",
                        format!("registered as {:?} but names {:?}", lease.job, spec.name),
                    ),
                    name: None,
                },
                Err(error) => Parsed::Invalid { error, name: None },
            };
            if let Parsed::Invalid { error, .. } = &parsed {
                // Registration parsed it, so only another forager version
                // gets here; finishing it keeps the nodes from passing it round.
                error!(node = self.name(), job = %lease.job, epoch = lease.epoch, error = %error,
                    "the registered job does not parse on this node; marking it done");
                if let Err(e) = self.cluster.finish(&lease).await {
                    warn!(node = self.name(), job = %lease.job, epoch = lease.epoch, error = %e, "cannot mark the job done");
                }
                continue;
            }
            let keeper = self.cluster.keep(&lease);
            let sha = Sha256::digest(lease.spec.as_bytes()).to_vec();
            self.fresh.push(lease.job.clone());
            self.held.insert(
                lease.job.clone(),
                Held {
                    lease,
                    sha,
                    parsed,
                    keeper: Some(keeper),
                    asked: AskedCell::default(),
                },
            );
            taken = true;
        }
        self.count_held();
        let obeyed = self.obey().await;
        taken || obeyed
    }

    /// Read what the registry asks of the jobs this node holds (a pause, a
    /// rerun, a changed file: module doc); whether a run is to stop. A job
    /// asked before its run started is settled here: no run would.
    async fn obey(&mut self) -> bool {
        if self.held.is_empty() {
            return false;
        }
        let owned = match self.cluster.owned().await {
            Ok(o) => o,
            Err(e) => {
                debug!(node = self.name(), error = %e, "cannot read what is asked of the held jobs; next round");
                return false;
            }
        };
        let mut changed = false;
        let mut idle = Vec::new();
        for row in owned {
            let Some(h) = self.held.get(&row.name) else {
                continue;
            };
            // Another epoch: the lease is lost, and its keeper stops the run.
            if row.epoch != h.lease.epoch || asked_of(&h.asked).is_some() {
                continue;
            }
            let asked = if row.requested.as_deref() == Some("rerun") {
                Asked::Rerun
            } else if row.status == "paused" {
                Asked::Pause
            } else if row.spec_sha256 != h.sha {
                Asked::Changed
            } else {
                continue;
            };
            info!(node = self.name(), job = %row.name, epoch = row.epoch, ?asked,
                "stopping the job at a checkpoint, as the cluster registry asks");
            *h.asked.lock().unwrap_or_else(|p| p.into_inner()) = Some(asked);
            changed = true;
            if h.keeper.is_some() {
                idle.push(row.name.clone());
            }
        }
        for job in idle {
            let Some(h) = self.held.remove(&job) else {
                continue;
            };
            settle_asked(&self.cluster, &h.lease, asked_of(&h.asked), &self.state_dir).await;
            drop(h.keeper);
        }
        self.count_held();
        changed
    }

    /// `forager pause|resume|rerun JOB` on this node: asked in the registry,
    /// whichever node runs the job (module doc).
    pub async fn drive(&self, job: &str, action: DriveAction, state_dir: &Path) -> DriveOutcome {
        let node = self.name();
        let outcome = match action {
            DriveAction::Pause => self.cluster.pause(job).await,
            DriveAction::Resume => self.cluster.resume(job).await,
            DriveAction::Rerun => {
                self.cluster
                    .rerun(job, || set_aside(state_dir, job).map(|_| ()))
                    .await
            }
        };
        let owner = match outcome {
            Ok(Control::Done { owner }) => owner,
            Ok(Control::NotFound(m)) => return DriveOutcome::NotFound(format!("node {node}: {m}")),
            Ok(Control::Conflict(m)) => return DriveOutcome::Conflict(format!("node {node}: {m}")),
            Err(e) => return DriveOutcome::Failed(format!("{e}")),
        };
        DriveOutcome::Done(match action {
            DriveAction::Pause => match owner {
                Some(o) => format!(
                    "job {job} pauses: node {o}, which runs it, writes a checkpoint to the cluster database \
                     and releases its lease within a second; no node takes it until `forager resume {job}`"
                ),
                None => format!(
                    "job {job} pauses: no node runs it now, and none takes it until `forager resume {job}`"
                ),
            },
            DriveAction::Resume => format!(
                "job {job} resumes: the next node with a free slot takes it from its checkpoint in the cluster database"
            ),
            DriveAction::Rerun => {
                match owner {
                    Some(o) => format!(
                        "job {job} runs again from its seeds: node {o}, which runs it, stops it within a second, \
                         sets its manifest aside (manifest.superseded-*.jsonl) and deletes its state in the cluster database; \
                         then the next node with a free slot starts it afresh"
                    ),
                    None => format!(
                        "job {job} runs again from its seeds: its state in the cluster database is deleted and \
                         its manifest set aside (manifest.superseded-*.jsonl); the next node with a free slot starts it afresh"
                    ),
                }
            }
        })
    }

    /// The jobs leased since the last call (the table forgets what an
    /// earlier lease of each left: a new lease is a new run).
    pub fn take_fresh(&mut self) -> Vec<String> {
        std::mem::take(&mut self.fresh)
    }

    fn count_held(&self) {
        if let Some(m) = &self.metrics {
            m.leases_held
                .set(i64::try_from(self.held.len()).unwrap_or(i64::MAX));
        }
    }

    /// The lease of `job` for its run, once: `None` when this node does not
    /// hold it, or a run already has it.
    pub fn lease_for_run(
        &mut self,
        job: &str,
        ended: &mpsc::UnboundedSender<String>,
    ) -> Option<JobLease> {
        let held = self.held.get_mut(job)?;
        let keeper = held.keeper.take()?;
        Some(JobLease {
            cluster: self.cluster.clone(),
            lease: held.lease.clone(),
            keeper,
            ended: ended.clone(),
            asked: held.asked.clone(),
        })
    }

    /// A run ended and settled its lease: the job is no longer this node's.
    pub fn ended(&mut self, job: &str) {
        self.held.remove(job);
        self.count_held();
    }

    /// A clean stop: peers stop counting this node at once (a node that
    /// dies is dropped from their count after one lease).
    pub async fn leave(&self) {
        if let Err(e) = self.cluster.leave().await {
            warn!(node = self.name(), error = %e, "cannot tell the cluster this node leaves; peers count it for one more lease");
        }
    }

    /// Leases held, for the log.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

/// Replace the local rows of the leased job with its checkpoint in the
/// database, or delete them when the database has none (a fresh job, or
/// one that never checkpointed: an older run on this node is stale).
///
/// Without a checkpoint in the database, a `manifest.jsonl` in the shared
/// targets folder is a dead run's: a node that checkpointed locally (and
/// appended its rows) but died before its mirror reached the database.
/// The job starts afresh and fetches those targets again, so that manifest
/// is set aside, as for a rerun; left in place, the new run's rows would
/// follow it and name the same URLs twice.
pub(super) async fn restore(
    store: &Store,
    cluster: &Cluster,
    lease: &Lease,
    state_dir: &Path,
) -> Result<(), String> {
    let job = lease.job.clone();
    let node = cluster.node().to_string();
    let epoch = lease.epoch;
    let checkpoint = cluster
        .read_checkpoint(&job)
        .await
        .map_err(|e| format!("restoring from the cluster: {e}"))?;
    let store = store.clone();
    let found = checkpoint.as_ref().map(|c| {
        let state = c.state.as_ref().map_or(0, Vec::len);
        (c.epoch, c.seq, c.bytes.len() + state)
    });
    tokio::task::spawn_blocking(move || match checkpoint {
        Some(c) => store.import_checkpoint(&job, &c.bytes, c.state.as_deref()),
        None => store.forget_job(&job),
    })
    .await
    .map_err(|e| format!("node {node}: job {}: restore task failed: {e}", lease.job))?
    .map_err(|e| {
        format!(
            "node {node}: job {} (epoch {epoch}): restoring into the local store: {e}",
            lease.job
        )
    })?;
    match found {
        Some((from_epoch, seq, bytes)) => {
            info!(node = %node, job = %lease.job, epoch, from_epoch, seq, bytes,
            "job restored from its checkpoint in the cluster database")
        }
        None => {
            let aside = crate::output::set_aside_manifest(state_dir, &lease.job).map_err(|e| {
                format!(
                    "node {node}: job {}: moving a dead run's manifest.jsonl aside: {e}",
                    lease.job
                )
            })?;
            if let Some(aside) = aside {
                warn!(node = %node, job = %lease.job, epoch, moved_to = %aside.display(),
                    "manifest.jsonl of a run that never checkpointed to the cluster database: moved aside; the job starts afresh");
            }
            info!(node = %node, job = %lease.job, epoch, "job starts afresh: no checkpoint in the cluster database")
        }
    }
    Ok(())
}

/// Mirror the job's local checkpoints to the database: the returned sender
/// is bumped at each local checkpoint; the task writes the latest one (a
/// slow database skips intermediate ones, never the last) and ends once the
/// sender is dropped and the last bump is written.
pub(super) fn mirror(
    store: Store,
    cluster: Cluster,
    lease: Lease,
) -> (watch::Sender<u64>, JoinHandle<()>) {
    let (tx, mut rx) = watch::channel(0u64);
    let task = tokio::spawn(async move {
        let mut written = 0u64;
        // Manifest rows up to this number are recorded (under any epoch:
        // a row number keeps its first row).
        let mut recorded: Option<u64> = None;
        // The chunks this lease's last mirrored checkpoint left in the
        // database: the next one sends and reads only what changed.
        let mut stored = StoredChunks::default();
        loop {
            let open = rx.changed().await.is_ok();
            let bump = *rx.borrow_and_update();
            if bump > written {
                match mirror_once(&store, &cluster, &lease, &mut recorded, &mut stored).await {
                    Ok(()) => written = bump,
                    Err(MirrorError::Fenced(e)) => {
                        // The keeper stops the job too; nothing more of it is ours to write.
                        warn!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, error = %e,
                            "checkpoint refused by the cluster: the lease is lost");
                        return;
                    }
                    Err(MirrorError::Other(e)) => {
                        warn!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, error = %e,
                            "cannot write the checkpoint to the cluster database; the next one will");
                    }
                }
            }
            if !open {
                return;
            }
        }
    });
    (tx, task)
}

enum MirrorError {
    Fenced(forager_cluster::ClusterError),
    Other(String),
}

/// Write the job's latest local checkpoint to the database: its rows, the
/// chunks of its learned state that `stored` says the database lacks (the
/// store keeps the state in the same chunks), and the manifest rows above
/// `recorded`.
async fn mirror_once(
    store: &Store,
    cluster: &Cluster,
    lease: &Lease,
    recorded: &mut Option<u64>,
    stored: &mut StoredChunks,
) -> Result<(), MirrorError> {
    let exported = {
        let store = store.clone();
        let job = lease.job.clone();
        let after = *recorded;
        // Moved to the blocking task and back: no copy of the set per checkpoint.
        let known = std::mem::take(stored);
        let (known, exported) = tokio::task::spawn_blocking(move || {
            let exported = store.export_checkpoint(&job, &|k| known.knows(k), after);
            (known, exported)
        })
        .await
        .map_err(|e| MirrorError::Other(format!("export task failed: {e}")))?;
        *stored = known;
        exported.map_err(|e| MirrorError::Other(format!("reading the local checkpoint: {e}")))?
    };
    let Some(exported) = exported else {
        return Ok(());
    };
    let fenced = |e: forager_cluster::ClusterError| match e {
        e @ forager_cluster::ClusterError::Fenced { .. } => MirrorError::Fenced(e),
        e => MirrorError::Other(e.to_string()),
    };
    // The checkpoint first: a manifest row in the database is then always
    // one the stored checkpoint knows, so a take-over never numbers its
    // target again under another row.
    let parts = CheckpointParts {
        rows: &exported.rows,
        state: &exported.state,
        state_chunks: &exported.state_chunks,
    };
    let written = cluster
        .write_checkpoint_parts(lease, parts, stored)
        .await
        .map_err(fenced)?;
    let rows: Vec<(i64, String)> = exported
        .manifest
        .iter()
        .filter_map(|(n, row)| {
            let n = i64::try_from(*n).ok()?;
            serde_json::to_string(row).ok().map(|j| (n, j))
        })
        .collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(n, j)| (*n, j.as_str())).collect();
    let new = cluster
        .record_manifest(lease, &refs)
        .await
        .map_err(fenced)?;
    if let Some(last) = exported.manifest.last() {
        *recorded = Some(last.0);
    }
    debug!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, seq = written.seq,
        chunks = written.chunks, chunks_put = written.chunks_put, bytes_put = written.bytes_put,
        chunks_removed = written.chunks_removed, asked_stored = written.asked_stored, manifest_rows = new,
        "checkpoint mirrored to the cluster database");
    Ok(())
}

/// Stop the runner when the daemon asks (`stop`) or the lease keeper says
/// stop; returns the receiver the runner watches, the sender that tells the
/// forwarder the run is over, and the forwarder, which hands the keeper
/// back: it keeps renewing until the lease is settled.
pub(super) fn stop_on_lease_loss(
    mut stop: watch::Receiver<bool>,
    mut keeper: LeaseKeeper,
    job: String,
    node: String,
) -> (
    watch::Receiver<bool>,
    oneshot::Sender<()>,
    JoinHandle<LeaseKeeper>,
) {
    let (tx, rx) = watch::channel(false);
    let (done_tx, done) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        tokio::select! {
            _ = stop.wait_for(|&s| s) => {}
            why = keeper.stopped() => {
                warn!(node = %node, job = %job, reason = %why, "stopping the job: its lease cannot be kept");
            }
            _ = done => return keeper,
        }
        let _ = tx.send(true);
        keeper
    });
    (rx, done_tx, task)
}

/// Move the job's manifest (in the shared targets folder) aside for a rerun.
fn set_aside(state_dir: &Path, job: &str) -> Result<Option<PathBuf>, String> {
    crate::output::set_aside_manifest(state_dir, job)
        .map_err(|e| format!("moving {job}'s manifest.jsonl aside: {e}"))
        .inspect(|aside| {
            if let Some(aside) = aside {
                info!(job, moved_to = %aside.display(), "manifest.jsonl moved aside for a rerun");
            }
        })
}

/// After a run: a finished job is marked done in the registry, a failed
/// one failed (with the reason, until its file changes); a stopped one
/// gives the lease back, so another node (or this one) takes the job on
/// from its last checkpoint. A job asked to rerun has its manifest set
/// aside (`state_dir`) and its state wiped instead, whatever its run did.
/// A lease already lost needs nothing.
pub(super) async fn settle(
    cluster: &Cluster,
    lease: &Lease,
    ended: &mpsc::UnboundedSender<String>,
    result: &Result<Option<StopReason>, String>,
    asked: &AskedCell,
    state_dir: &Path,
) {
    let (node, job, epoch) = (cluster.node(), &lease.job, lease.epoch);
    let outcome = match (asked_of(asked), result) {
        (Some(Asked::Rerun), _) => {
            settle_asked(cluster, lease, Some(Asked::Rerun), state_dir).await;
            let _ = ended.send(job.clone());
            return;
        }
        (_, Ok(Some(_))) => cluster.finish(lease).await.map(|()| "done"),
        (_, Err(e)) => cluster.fail(lease, e).await.map(|()| "failed"),
        (_, Ok(None)) => cluster.release(lease).await.map(|_| "released"),
    };
    match outcome {
        Ok(what) => info!(node, job = %job, epoch, lease = what, "job's lease settled"),
        Err(e) => warn!(node, job = %job, epoch, error = %e,
            "cannot settle the job's lease; it lapses after its length"),
    }
    let _ = ended.send(job.clone());
}

/// End a lease as a person asked ([`Asked`]): released (pause, a changed
/// file), or, for a rerun, the manifest set aside while this node still
/// holds the job, then its state wiped ([`Cluster::reset`]).
async fn settle_asked(cluster: &Cluster, lease: &Lease, asked: Option<Asked>, state_dir: &Path) {
    let (node, job, epoch) = (cluster.node(), &lease.job, lease.epoch);
    let outcome = match asked {
        Some(Asked::Rerun) => {
            let (dir, name) = (state_dir.to_path_buf(), job.clone());
            let moved = tokio::task::spawn_blocking(move || set_aside(&dir, &name))
                .await
                .map_err(|e| format!("set-aside task failed: {e}"))
                .and_then(|r| r);
            match moved {
                // A manifest left in place would carry the old rows into
                // the fresh run: keep the job's state, give it back, and
                // let the rerun be asked again.
                Err(e) => {
                    warn!(node, job = %job, epoch, error = %e, "cannot set the manifest aside: the rerun is not done");
                    cluster
                        .release(lease)
                        .await
                        .map(|_| "released (rerun not done)")
                }
                Ok(_) => cluster.reset(lease).await.map(|()| "reset for a rerun"),
            }
        }
        _ => cluster.release(lease).await.map(|_| "released"),
    };
    match outcome {
        Ok(what) => {
            info!(node, job = %job, epoch, ?asked, lease = what, "job's lease settled as asked")
        }
        Err(e) => warn!(node, job = %job, epoch, ?asked, error = %e,
            "cannot settle the job's lease as asked; it lapses after its length"),
    }
}
