//! The daemon's side of a cluster (`[cluster]`, issue 38, docs/cluster.md):
//! job files are registered in the shared database, and this node runs the
//! jobs it holds a lease on, not the files of its own folder.
//!
//! - **Registration**: every valid job file a scan of the jobs folder finds
//!   is registered by name and SHA-256 ([`Node::register`]); the same text
//!   registered by several nodes is one job.
//! - **Leases**: each tick, a node holding fewer than `max_jobs` leases asks
//!   for more ([`Node::acquire`]). The job table is then fed one *virtual
//!   job file* per held lease, its text the registered one, so that the
//!   table starts and stops runners as it does for the files of one machine.
//! - **A run under a lease** ([`JobLease`]): before the runner opens the
//!   job, its checkpoint in the database replaces the node's local rows of
//!   it ([`restore`]); each local checkpoint is then mirrored to the
//!   database under the lease's epoch, with the new manifest rows
//!   ([`mirror`]); the lease keeper's *stop* stops the runner, which
//!   checkpoints locally; at the end the lease is finished (done) or
//!   released ([`settle`]) and the main loop hears of it.
//!
//! Must not touch: the database's protocol (forager-cluster), the crawl.

use super::jobs::{Parsed, ScannedFile};
use crate::store::{StopReason, Store};
use forager_cluster::{Cluster, Lease, LeaseKeeper, Registration};
use forager_core::config::{self, ClusterConfig, ConfigError};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

/// One job this node leases.
struct Held {
    lease: Lease,
    /// The registered text, parsed.
    parsed: Parsed,
    /// Renews the lease; the job's run takes it (and drops it when it ends).
    keeper: Option<LeaseKeeper>,
}

/// This node in the cluster.
pub(super) struct Node {
    cluster: Cluster,
    held: BTreeMap<String, Held>,
    /// SHA-256 of the text last registered from each local job file.
    registered: HashMap<PathBuf, Vec<u8>>,
}

/// What a run of a leased job needs: sent with it to its task.
pub(super) struct JobLease {
    pub cluster: Cluster,
    pub lease: Lease,
    pub keeper: LeaseKeeper,
    /// Told the job's name when the run has settled its lease.
    pub ended: mpsc::UnboundedSender<String>,
}

/// The path a leased job's virtual file shows under (in `status` and in errors).
fn virtual_path(job: &str) -> PathBuf {
    PathBuf::from(format!("cluster:{job}"))
}

impl Node {
    /// Connect as this node, or a clear error naming the node and the server.
    pub async fn connect(config: &ClusterConfig) -> anyhow::Result<Node> {
        let (cluster, probe) = Cluster::connect(config).await?;
        info!(
            node = cluster.node(),
            server_version = %probe.server_version,
            lease = ?cluster.lease_duration(),
            "running as a node of the cluster"
        );
        Ok(Node {
            cluster,
            held: BTreeMap::new(),
            registered: HashMap::new(),
        })
    }

    pub fn name(&self) -> &str {
        self.cluster.node()
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
        out.extend(self.held.iter().map(|(job, h)| ScannedFile {
            path: virtual_path(job),
            parsed: h.parsed.clone(),
        }));
        out
    }

    /// Lease free jobs up to `max_jobs` held; whether any was taken.
    pub async fn acquire(&mut self, max_jobs: usize) -> bool {
        let want = max_jobs.saturating_sub(self.held.len());
        if want == 0 {
            return false;
        }
        let leases = match self.cluster.acquire(want).await {
            Ok(l) => l,
            Err(e) => {
                warn!(node = self.name(), error = %e, "cannot acquire job leases; retrying");
                return false;
            }
        };
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
            self.held.insert(
                lease.job.clone(),
                Held {
                    lease,
                    parsed,
                    keeper: Some(keeper),
                },
            );
            taken = true;
        }
        taken
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
        })
    }

    /// A run ended and settled its lease: the job is no longer this node's.
    pub fn ended(&mut self, job: &str) {
        self.held.remove(job);
    }

    /// Leases held, for the log.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

/// Replace the local rows of the leased job with its checkpoint in the
/// database, or delete them when the database has none (a fresh job, or
/// one that never checkpointed: an older run on this node is stale).
pub(super) async fn restore(store: &Store, cluster: &Cluster, lease: &Lease) -> Result<(), String> {
    let job = lease.job.clone();
    let node = cluster.node().to_string();
    let epoch = lease.epoch;
    let checkpoint = cluster
        .read_checkpoint(&job)
        .await
        .map_err(|e| format!("restoring from the cluster: {e}"))?;
    let store = store.clone();
    let found = checkpoint.as_ref().map(|c| (c.epoch, c.seq, c.bytes.len()));
    tokio::task::spawn_blocking(move || match checkpoint {
        Some(c) => store.import_job(&job, &c.bytes),
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
        loop {
            let open = rx.changed().await.is_ok();
            let bump = *rx.borrow_and_update();
            if bump > written {
                match mirror_once(&store, &cluster, &lease, &mut recorded).await {
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

async fn mirror_once(
    store: &Store,
    cluster: &Cluster,
    lease: &Lease,
    recorded: &mut Option<u64>,
) -> Result<(), MirrorError> {
    let exported = {
        let store = store.clone();
        let job = lease.job.clone();
        tokio::task::spawn_blocking(move || store.export_job(&job))
            .await
            .map_err(|e| MirrorError::Other(format!("export task failed: {e}")))?
            .map_err(|e| MirrorError::Other(format!("reading the local checkpoint: {e}")))?
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
    let written = cluster
        .write_checkpoint(lease, &exported.bytes)
        .await
        .map_err(fenced)?;
    let rows: Vec<(i64, String)> = exported
        .manifest
        .iter()
        .filter(|(n, _)| recorded.is_none_or(|r| *n > r))
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
        chunks_put = written.chunks_put, bytes_put = written.bytes_put, manifest_rows = new,
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

/// After a run: a finished job is marked done in the registry, a failed
/// one failed (with the reason, until its file changes); a stopped one
/// gives the lease back, so another node (or this one) takes the job on
/// from its last checkpoint. A lease already lost needs nothing.
pub(super) async fn settle(
    cluster: &Cluster,
    lease: &Lease,
    ended: &mpsc::UnboundedSender<String>,
    result: &Result<Option<StopReason>, String>,
) {
    let (node, job, epoch) = (cluster.node(), &lease.job, lease.epoch);
    let outcome = match result {
        Ok(Some(_)) => cluster.finish(lease).await.map(|()| "done"),
        Err(e) => cluster.fail(lease, e).await.map(|()| "failed"),
        Ok(None) => cluster.release(lease).await.map(|_| "released"),
    };
    match outcome {
        Ok(what) => info!(node, job = %job, epoch, lease = what, "job's lease settled"),
        Err(e) => warn!(node, job = %job, epoch, error = %e,
            "cannot settle the job's lease; it lapses after its length"),
    }
    let _ = ended.send(job.clone());
}
