//! The daemon (`forager daemon --config FILE`): a watched folder of job files,
//! many jobs at once on one tokio runtime, signals, systemd notification, and
//! the admin API (status JSON, Prometheus metrics).
//!
//! Owns: the job lifecycle — which file declares which job ([`jobs`]), when
//! a job starts, is restarted with a changed file, stops, waits for a slot —
//! the jobs-folder watcher ([`watch`], [`scan`]), signal handling
//! ([`signals`]), the systemd protocol ([`notify`]), live per-job numbers
//! ([`live`]), the status report and its table ([`report`]), `/metrics`
//! ([`metrics`]) and the admin HTTP server and client ([`admin`]).
//!
//! Must not touch: the crawl itself (it runs [`crate::engine::Runner`]s and
//! only observes them), the store's layout (it calls [`crate::store::Store`]),
//! or the config formats (it calls [`forager_core::config`]).
//!
//! # What a change to a job file does
//!
//! A changed file is applied at a safe point: the job's runner is stopped (it
//! writes a checkpoint) and a new runner starts with the new file, resuming
//! from that checkpoint. So:
//!
//! - `budget`, `politeness`, `limits`, `targets`, `scope`: applied, all
//!   learned state, the frontier and the seen set are kept. A job that was done
//!   because of its budget resumes when the budget grows. New limits and
//!   targets apply to links found from then on; links already queued stay.
//! - `seeds`: new seeds are not added to a resumed frontier (the stored state
//!   wins); purge the job to start from the new seeds.
//! - `strategy` or `seed`: the stored learned state belongs to the old ones,
//!   so the job is marked failed with the reason until it is purged
//!   (`forager purge NAME`) or the old values are put back.
//! - `name`: a different job — the old name stops (its state is kept), the
//!   new one starts fresh.
//!
//! An invalid file is reported (log, `/status`, with `FILE:LINE`) and the last
//! valid version of its job keeps running. A removed file stops its job and
//! keeps its state until it is purged.
//!
//! # What SIGHUP reloads
//!
//! `max_jobs` (more slots at once; fewer as running jobs finish),
//! `checkpoint_interval` (runs started afterwards), `watch`,
//! `poll_interval` and `log_level` (unless `--log` fixes the filter). Everything else — `jobs_dir`, `state_dir`,
//! `admin_listen`, `admin_public`, `allow_private`, `resolve`, `cache_size`,
//! `log_format` — needs a restart; a reload that changes them says so in the
//! log and in `/status` (`restart_required`). A config that does not parse is
//! refused and the running one stays.

pub mod admin;
mod cluster;
pub mod dashboard;
pub mod history;
pub mod jobs;
pub mod live;
pub mod logging;
pub mod metrics;
pub mod notify;
pub mod report;
pub mod scan;
pub mod signals;
pub mod watch;

pub use admin::{
    drain_via, drive_via, explain_of, job_of, metrics_of, purge_via, status_of as status,
    DrainReply, DriveAction, DriveReply, PurgeReply,
};
pub use report::{format_status, JobStatus, StatusReport};

use admin::Command;
use jobs::JobTable;
use report::DaemonInfo;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What the main loop, the runner tasks and the admin API share.
pub struct Shared {
    table: Mutex<JobTable>,
    info: Mutex<DaemonInfo>,
    commands: mpsc::UnboundedSender<Command>,
    /// Daemon-wide distributions; lock-free, every job's observer records into them.
    pub(crate) histograms: metrics::DaemonHistograms,
    /// With `[cluster]`: the database, for the cluster-wide view of `/status`.
    cluster: OnceLock<forager_cluster::Cluster>,
}

/// How long `/status` waits for the cluster database before it answers
/// with this node's jobs and the reason.
const CLUSTER_VIEW_TIMEOUT: Duration = Duration::from_secs(3);

impl Shared {
    pub(crate) fn new(
        table: JobTable,
        info: DaemonInfo,
        commands: mpsc::UnboundedSender<Command>,
    ) -> Self {
        Shared {
            table: Mutex::new(table),
            info: Mutex::new(info),
            commands,
            histograms: metrics::DaemonHistograms::default(),
            cluster: OnceLock::new(),
        }
    }

    /// Run as a node of `cluster`: `/status` shows the whole cluster and
    /// `/metrics` its lease and database metrics.
    pub(crate) fn set_cluster(&self, cluster: forager_cluster::Cluster) {
        cluster.set_observer(std::sync::Arc::new(self.histograms.cluster.clone()));
        let _ = self.cluster.set(cluster);
    }

    /// The job table. Hold it briefly; never across an await.
    pub(crate) fn table(&self) -> MutexGuard<'_, JobTable> {
        // Every table change is one call that leaves it consistent; a panic elsewhere cannot tear it.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn info(&self) -> MutexGuard<'_, DaemonInfo> {
        self.info.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The numbers of the STATUS= line, without building a whole report.
    pub(crate) fn summary(&self) -> notify::Summary {
        use jobs::Phase;
        let table = self.table();
        let now = Instant::now();
        // Running jobs waiting for a writable disk count as paused, beside
        // the jobs a person paused (which are not running: subtracting
        // those from the running ones would underflow).
        let waiting = table
            .jobs()
            .filter(|e| e.state.phase() == Phase::Running && e.live.lock().paused.is_some())
            .count();
        notify::Summary {
            running: table.count(Phase::Running) - waiting,
            paused: waiting + table.count(Phase::Paused),
            pending: table.count(Phase::Pending),
            done: table.count(Phase::Done),
            failed: table.count(Phase::Failed),
            requests_per_min: table
                .jobs()
                .fold(0.0, |sum, e| sum + e.live.lock().rate.per_minute(now)),
            config_errors: table.file_errors().count(),
        }
    }

    /// A snapshot of everything, for `/status` and `/metrics`.
    pub fn report(&self) -> StatusReport {
        let info = self.info().clone();
        let table = self.table();
        report::build(&table, &info, Instant::now())
    }

    /// [`Shared::report`] with, in a cluster, every node and every job of
    /// the cluster read from its database (or why it could not be).
    pub async fn full_report(&self) -> StatusReport {
        let mut report = self.report();
        if let Some(cluster) = self.cluster.get() {
            let read = async {
                let jobs = cluster.jobs().await?;
                let nodes = cluster.nodes().await?;
                Ok::<_, forager_cluster::ClusterError>((jobs, nodes))
            };
            let view = match tokio::time::timeout(CLUSTER_VIEW_TIMEOUT, read).await {
                Ok(Ok((jobs, nodes))) => report::ClusterReport::of(cluster.node(), &jobs, &nodes),
                Ok(Err(e)) => report::ClusterReport::unread(cluster.node(), e.to_string()),
                Err(_) => report::ClusterReport::unread(
                    cluster.node(),
                    format!("the cluster database did not answer within {CLUSTER_VIEW_TIMEOUT:?}"),
                ),
            };
            report.cluster = Some(view);
        }
        report
    }

    /// In a cluster, `GET /jobs/NAME` of a job this node does not run:
    /// `None` outside a cluster, `Some(Ok(None))` when the registry has no
    /// such job, an error when the database did not answer in time.
    pub async fn cluster_job(
        &self,
        name: &str,
    ) -> Option<Result<Option<report::JobStatus>, String>> {
        let cluster = self.cluster.get()?;
        let read = tokio::time::timeout(CLUSTER_VIEW_TIMEOUT, cluster.jobs()).await;
        Some(match read {
            Ok(Ok(jobs)) => Ok(jobs
                .iter()
                .find(|j| j.name == name)
                .map(|j| report::remote_job_status(cluster.node(), j))),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!(
                "the cluster database did not answer within {CLUSTER_VIEW_TIMEOUT:?}"
            )),
        })
    }

    /// `GET /metrics`: the report and the histograms, read together.
    pub fn metrics_text(&self) -> String {
        let cluster = self.cluster.get().map(|_| &self.histograms.cluster);
        metrics::render(self.report(), &self.histograms, cluster)
    }
}

mod supervisor;

pub use supervisor::run;

/// Where the daemon's admin API listens when the user does not say:
/// `admin_listen` of the given daemon config, else of the installed one
/// (`/etc/forager/forager.toml`), else the default `127.0.0.1:7878`.
pub fn admin_address(config: Option<&std::path::Path>) -> anyhow::Result<std::net::SocketAddr> {
    let installed = std::path::Path::new(INSTALLED_CONFIG);
    let path = match config {
        Some(p) => Some(p),
        None if installed.exists() => Some(installed),
        None => None,
    };
    match path {
        Some(p) => Ok(forager_core::config::load_daemon(p)?.admin_listen),
        None => Ok(forager_core::config::DaemonConfig::default().admin_listen),
    }
}

/// The daemon config a packaged install uses.
pub const INSTALLED_CONFIG: &str = "/etc/forager/forager.toml";

/// `forager daemon --config FILE`: run the daemon on its own multi-threaded
/// runtime until SIGTERM/SIGINT; `Ok` means a clean stop (exit 0).
///
/// Logging is the caller's: set it up first with [`logging::init`], so that
/// `log_format` and `log_level` apply and SIGHUP can change the level.
pub fn main(config_path: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .enable_all()
        .thread_name("forager")
        .max_blocking_threads(blocking_threads(cores));
    // TOKIO_WORKER_THREADS, when set, is tokio's to apply.
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(worker_threads(cores));
    }
    let runtime = builder.build().context("starting the async runtime")?;
    let result = runtime.block_on(run(config_path));
    // A blocking task stuck in a syscall must not hold the exit hostage.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    result
}

/// Async workers for `cores` cores. More than the cores: a job's runner
/// parses pages and writes and fsyncs target files on its worker, and with one worker per core
/// (2 here) a single slow fsync stalls half of a thousand jobs. Measured with
/// 1 000 loopback jobs on 2 cores (docs/efficiency.md, "The daemon"): 2 workers sustained
/// 568 requests/s, 16 workers 804 requests/s.
pub fn worker_threads(cores: usize) -> usize {
    (cores * 4).clamp(16, 64)
}

/// Threads for blocking work (store reads, scans of the jobs folder; pages
/// are parsed on the async workers). Tokio's default of 512 lets a backlog of
/// blocking calls become hundreds of threads that only compete for the same
/// cores and each keep a stack.
pub fn blocking_threads(cores: usize) -> usize {
    (cores * 8).clamp(32, 256)
}

#[cfg(test)]
mod tests {
    use super::jobs::{Parsed, RunReport, ScannedFile};
    use super::*;
    use crate::store::StopReason;
    use forager_core::config::{ConfigError, JobSpec};

    #[test]
    fn thread_counts_stay_in_their_bounds() {
        assert_eq!(worker_threads(1), 16);
        assert_eq!(worker_threads(2), 16);
        assert_eq!(worker_threads(8), 32);
        assert_eq!(worker_threads(256), 64);
        assert_eq!(blocking_threads(2), 32);
        assert_eq!(blocking_threads(16), 128);
        assert_eq!(blocking_threads(1024), 256);
    }

    #[test]
    fn the_status_summary_counts_states_and_bad_files() {
        let spec = |name: &str| {
            Parsed::Valid(Box::new(JobSpec::new(
                name,
                vec![url::Url::parse("http://a.test/").unwrap()],
            )))
        };
        let mut table = JobTable::new();
        table.reconcile(vec![
            ScannedFile {
                path: "j/a.toml".into(),
                parsed: spec("a"),
            },
            ScannedFile {
                path: "j/b.toml".into(),
                parsed: spec("b"),
            },
            ScannedFile {
                path: "j/c.toml".into(),
                parsed: spec("c"),
            },
            ScannedFile {
                path: "j/x.toml".into(),
                parsed: Parsed::Invalid {
                    error: ConfigError::new(std::path::Path::new("j/x.toml"), Some(1), "", "bad"),
                    name: None,
                },
            },
        ]);
        table.report("a", 1, RunReport::Started);
        table.report("b", 1, RunReport::Finished(Ok(Some(StopReason::EarlyStop))));
        table
            .get("a")
            .unwrap()
            .live
            .lock()
            .rate
            .record(Instant::now());
        let info = DaemonInfo::for_tests(1);
        let (tx, _rx) = mpsc::unbounded_channel();
        let s = Shared::new(table, info, tx).summary();
        assert_eq!((s.running, s.pending, s.done, s.failed), (1, 1, 1, 0));
        assert_eq!(s.config_errors, 1);
        assert!(s.requests_per_min > 0.0);
    }
}
