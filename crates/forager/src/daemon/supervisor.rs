//! The daemon's main loop: owns the engine, the runner tasks, the slots
//! (`max_jobs`) and the watcher; applies the job table's actions; handles
//! signals, reloads, purges and shutdown.
//!
//! Every change to the job table is made here or by a runner task reporting
//! on itself; the admin API only reads it (a purge is a message to this loop).

use super::admin::{self, Command, DriveAction, DriveOutcome, ExplainOutcome, PurgeOutcome};
use super::cluster::{self, JobLease, Node};
use super::history::JobNotes;
use super::jobs::{Action, DriveRefused, JobState, JobTable, PurgeRefused, RunReport};
use super::live::{LiveJob, RequestFacts};
use super::notify::{self, Heartbeat, Notifier};
use super::report::DaemonInfo;
use super::scan::Scanner;
use super::signals::{self, SignalEvent};
use super::watch::{self, Trigger, WatchHandle, WatchSettings};
use super::Shared;
use crate::engine::{
    CrawlObserver, Engine, EngineConfig, EngineError, RequestEvent, RequestKind, Runner,
};
use crate::fetch::{ClusterPacer, FetchConfig};
use crate::store::{CommitReport, JobCounters, StopReason};
use anyhow::Context;
use forager_core::config::{self, DaemonConfig, JobSpec};
use forager_core::strategy::StrategyStats;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{mpsc, oneshot, watch as channel, Semaphore};
use tokio::task::JoinHandle;
use tracing::{error, info, warn};

/// Longest wait for runners to checkpoint and exit at shutdown (systemd's TimeoutStopSec is 90 s).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(60);
/// Longest wait for the admin server to finish its open requests at shutdown.
const ADMIN_GRACE: Duration = Duration::from_secs(5);
/// Main-loop tick: heartbeat, finished-task pruning.
const TICK: Duration = Duration::from_secs(1);
/// STATUS= lines at most this often.
const STATUS_EVERY_TICKS: u32 = 5;
/// The dashboard's history is saved this often (ticks): a crash costs at most this much plot.
const HISTORY_EVERY_TICKS: u32 = 60;

/// A runner task of one job.
struct RunnerTask {
    stop: channel::Sender<bool>,
    join: JoinHandle<()>,
}

/// Everything a runner task needs.
struct JobTask {
    shared: Arc<Shared>,
    engine: Engine,
    spec: JobSpec,
    generation: u64,
    live: Arc<LiveJob>,
    slots: Arc<Semaphore>,
    stop: channel::Receiver<bool>,
    /// The job's previous run: it must have checkpointed and exited before this one opens the job.
    previous: Option<RunnerTask>,
    /// With `[cluster]`: the lease the job runs under.
    lease: Option<JobLease>,
}

/// Run the daemon with the config at `config_path` until SIGTERM or SIGINT.
pub async fn run(config_path: &Path) -> anyhow::Result<()> {
    let config = config::load_daemon(config_path).map_err(anyhow::Error::new)?;
    Daemon::start(config_path, config).await?.run().await
}

/// The running daemon.
struct Daemon {
    config_path: PathBuf,
    /// The config in force: restart-only fields keep their start-up values.
    config: DaemonConfig,
    engine: Engine,
    shared: Arc<Shared>,
    tasks: HashMap<String, RunnerTask>,
    slots: Arc<Semaphore>,
    slots_total: usize,
    /// `None` while a scan runs on the blocking pool.
    scanner: Option<Scanner>,
    watcher: Option<WatchHandle>,
    triggers_tx: mpsc::UnboundedSender<Trigger>,
    triggers: mpsc::UnboundedReceiver<Trigger>,
    commands: mpsc::UnboundedReceiver<Command>,
    signals: mpsc::UnboundedReceiver<SignalEvent>,
    notifier: Arc<Notifier>,
    heartbeat: Arc<Heartbeat>,
    watchdog: Option<JoinHandle<()>>,
    admin_stop: Option<oneshot::Sender<()>>,
    admin_task: Option<JoinHandle<std::io::Result<()>>>,
    /// Jobs whose live numbers were seeded from the store.
    seeded: HashSet<String>,
    /// File errors last logged, to log each new one once.
    logged_file_errors: BTreeMap<PathBuf, String>,
    last_status: String,
    ticks: u32,
    /// The `history_version` of each job's live numbers last saved to the store.
    saved_history: HashMap<String, u64>,
    /// With `[cluster]`: this node, its leases and registrations.
    node: Option<Node>,
    /// Runs of leased jobs say here that they settled their lease.
    lease_ended_tx: mpsc::UnboundedSender<String>,
    lease_ended: mpsc::UnboundedReceiver<String>,
}

impl Daemon {
    /// Open everything; the admin API listens and the jobs folder is read before this returns.
    async fn start(config_path: &Path, config: DaemonConfig) -> anyhow::Result<Daemon> {
        // Signals first: a SIGTERM during start-up must not kill the process between two writes.
        let signals = signals::listen().context("installing signal handlers")?;
        // The database first: an unreachable one is a clear error at start,
        // before anything is opened or listened on.
        let node = match &config.cluster {
            Some(c) => Some(
                Node::connect(c, config.max_jobs, &config.state_dir)
                    .await
                    .with_context(|| format!("{}: [cluster]", config_path.display()))?,
            ),
            None => None,
        };
        if !config.jobs_dir.is_dir() {
            anyhow::bail!(
                "jobs_dir {} is not a folder (create it, or fix jobs_dir in {})",
                config.jobs_dir.display(),
                config_path.display()
            );
        }
        let listener = admin::bind(config.admin_listen).await?;
        let engine = open_engine(
            &config,
            node.as_ref().map(|n| ClusterPacer(n.cluster().clone())),
        )
        .await?;
        let stored = {
            let store = engine.store.clone();
            tokio::task::spawn_blocking(move || store.job_names())
                .await
                .context("listing stored jobs")?
                .context("listing stored jobs")?
        };
        let mut table = JobTable::new();
        for name in &stored {
            table.add_stored(name);
        }
        let saved_history = restore_notes(&engine, &mut table).await;
        let (commands_tx, commands) = mpsc::unbounded_channel();
        let info = DaemonInfo {
            started_at: SystemTime::now(),
            started: Instant::now(),
            jobs_dir: config.jobs_dir.clone(),
            max_jobs: config.max_jobs,
            daemon_config_error: None,
            restart_required: Vec::new(),
            jobs_dir_error: None,
        };
        let shared = Arc::new(Shared::new(table, info, commands_tx));
        let mut node = node;
        if let Some(n) = &mut node {
            shared.set_cluster(n.cluster().clone());
            n.set_metrics(shared.histograms.cluster.clone());
        }
        let token = admin::write_token(&config.state_dir)?;
        let guard = admin::Guard::new(config.admin_listen, token);
        let (admin_stop, admin_stopped) = oneshot::channel::<()>();
        let admin_task = admin::serve(listener, shared.clone(), guard, async {
            // A dropped sender also means stop.
            let _ = admin_stopped.await;
        });
        info!(address = %config.admin_listen, "admin API listening");
        let (triggers_tx, triggers) = mpsc::unbounded_channel();
        let (lease_ended_tx, lease_ended) = mpsc::unbounded_channel();
        let watcher = watch::spawn(
            WatchSettings::new(&config.jobs_dir, config.watch, config.poll_interval),
            triggers_tx.clone(),
        );
        let notifier = Arc::new(Notifier::from_env());
        let heartbeat = Arc::new(Heartbeat::default());
        let watchdog = notify::watchdog_interval().map(|every| {
            info!(every = ?every, "systemd watchdog enabled");
            // Silence (and a restart) once the main loop has not beaten for two ping periods.
            notify::spawn_watchdog(notifier.clone(), heartbeat.clone(), every, every * 2)
        });
        let mut daemon = Daemon {
            config_path: config_path.to_path_buf(),
            slots: Arc::new(Semaphore::new(config.max_jobs)),
            slots_total: config.max_jobs,
            scanner: Some(Scanner::new(&config.jobs_dir)),
            config,
            engine,
            shared,
            tasks: HashMap::new(),
            watcher: Some(watcher),
            triggers_tx,
            triggers,
            commands,
            signals,
            notifier,
            heartbeat,
            watchdog,
            admin_stop: Some(admin_stop),
            admin_task: Some(admin_task),
            seeded: HashSet::new(),
            logged_file_errors: BTreeMap::new(),
            last_status: String::new(),
            ticks: 0,
            saved_history,
            node,
            lease_ended_tx,
            lease_ended,
        };
        daemon.rescan(true).await;
        info!(
            jobs = daemon.shared.table().jobs().count(),
            stored = stored.len(),
            max_jobs = daemon.slots_total,
            "forager daemon ready"
        );
        let status = daemon.status_line();
        daemon.notifier.ready(&status);
        daemon.last_status = status;
        Ok(daemon)
    }

    /// The main loop, then a clean shutdown.
    async fn run(mut self) -> anyhow::Result<()> {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.heartbeat.beat();
            tokio::select! {
                Some(signal) = self.signals.recv() => match signal {
                    SignalEvent::Shutdown { .. } => break,
                    SignalEvent::Reload => self.reload().await,
                },
                Some(first) = self.triggers.recv() => {
                    // Coalesce whatever else is queued: one scan answers them all.
                    let mut full = first.full;
                    while let Ok(t) = self.triggers.try_recv() {
                        full |= t.full;
                    }
                    self.rescan(full).await;
                }
                Some(command) = self.commands.recv() => self.command(command).await,
                Some(job) = self.lease_ended.recv() => {
                    if let Some(node) = &mut self.node {
                        node.ended(&job);
                    }
                    self.rescan(false).await;
                }
                _ = tick.tick() => self.tick().await,
            }
        }
        self.shutdown().await
    }

    /// Read the jobs folder and apply what changed.
    async fn rescan(&mut self, full: bool) {
        let mut scanner = self
            .scanner
            .take()
            .unwrap_or_else(|| Scanner::new(&self.config.jobs_dir));
        let scanned = tokio::task::spawn_blocking(move || {
            let files = scanner.scan(full);
            (scanner, files)
        })
        .await;
        let files = match scanned {
            Ok((scanner, files)) => {
                self.scanner = Some(scanner);
                files
            }
            Err(e) => Err(std::io::Error::other(format!("scan task failed: {e}"))),
        };
        let files = match files {
            Ok(files) => {
                if self.shared.info().jobs_dir_error.take().is_some() {
                    info!(dir = %self.config.jobs_dir.display(), "jobs folder readable again");
                }
                files
            }
            Err(e) => {
                let message = format!(
                    "cannot read jobs folder {}: {e}",
                    self.config.jobs_dir.display()
                );
                let mut info = self.shared.info();
                if info.jobs_dir_error.as_deref() != Some(message.as_str()) {
                    // Jobs keep their last known files: a passing NFS error must not stop them all.
                    error!("{message}; jobs keep running as they are");
                }
                info.jobs_dir_error = Some(message);
                return;
            }
        };
        let files = match &mut self.node {
            Some(node) => {
                node.register(&files).await;
                node.view(files)
            }
            None => files,
        };
        let actions = self.shared.table().reconcile(files);
        self.log_file_errors();
        self.seed_from_store().await;
        self.apply(actions);
    }

    /// Log each new invalid job file once, and each fixed one.
    fn log_file_errors(&mut self) {
        let now: BTreeMap<PathBuf, String> = self
            .shared
            .table()
            .file_errors()
            .map(|(p, e)| (p.to_path_buf(), e.error.to_string()))
            .collect();
        for (path, message) in &now {
            if self.logged_file_errors.get(path) != Some(message) {
                warn!("invalid job file: {message}");
            }
        }
        for path in self.logged_file_errors.keys() {
            if !now.contains_key(path) {
                info!(file = %path.display(), "job file no longer refused");
            }
        }
        self.logged_file_errors = now;
    }

    /// Give jobs seen for the first time the counters their stored state holds.
    async fn seed_from_store(&mut self) {
        let fresh: Vec<(String, Arc<LiveJob>)> = self
            .shared
            .table()
            .jobs()
            .filter(|e| !self.seeded.contains(&e.name))
            .map(|e| (e.name.clone(), e.live.clone()))
            .collect();
        if fresh.is_empty() {
            return;
        }
        let store = self.engine.store.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            fresh
                .into_iter()
                .map(|(name, live)| {
                    let record = store.job_record(&name);
                    (name, live, record)
                })
                .collect::<Vec<_>>()
        })
        .await;
        let Ok(loaded) = loaded else {
            return;
        };
        for (name, live, record) in loaded {
            match record {
                Ok(Some(record)) => {
                    let mut l = live.lock();
                    // A runner that already reported knows better than the store.
                    if l.counters == JobCounters::default() {
                        l.counters = record.counters;
                        l.stop = record.stop;
                    }
                }
                Ok(None) => {}
                Err(e) => warn!(job = %name, error = %e, "cannot read the job's stored record"),
            }
            self.seeded.insert(name);
        }
    }

    fn apply(&mut self, actions: impl IntoIterator<Item = Action>) {
        for action in actions {
            match action {
                Action::Start {
                    name,
                    spec,
                    generation,
                } => self.spawn_runner(name, *spec, generation),
                Action::Stop { name } => {
                    if let Some(t) = self.tasks.get(&name) {
                        info!(job = %name, "stopping job");
                        // The task may have ended already; then there is nothing to stop.
                        let _ = t.stop.send(true);
                    }
                }
            }
        }
    }

    fn spawn_runner(&mut self, name: String, mut spec: JobSpec, generation: u64) {
        spec.http = spec.http.over(&self.config.http);
        let previous = self.tasks.remove(&name).inspect(|t| {
            let _ = t.stop.send(true);
        });
        if previous.as_ref().is_some_and(|t| !t.join.is_finished()) {
            info!(job = %name, "job file changed: restarting the job at its next checkpoint");
        }
        let Some(live) = self.shared.table().get(&name).map(|e| e.live.clone()) else {
            return;
        };
        let lease = match &mut self.node {
            None => None,
            Some(node) => match node.lease_for_run(&name, &self.lease_ended_tx) {
                Some(l) => Some(l),
                None => {
                    // Only a leased job runs on a node; a restart of one
                    // whose run already ended waits to be leased again.
                    warn!(node = node.name(), job = %name, "not starting the job: this node holds no lease for it now");
                    self.shared
                        .table()
                        .report(&name, generation, RunReport::Finished(Ok(None)));
                    return;
                }
            },
        };
        let (stop_tx, stop_rx) = channel::channel(false);
        let task = JobTask {
            shared: self.shared.clone(),
            engine: self.engine.clone(),
            spec,
            generation,
            live,
            slots: self.slots.clone(),
            stop: stop_rx,
            previous,
            lease,
        };
        let join = tokio::spawn(job_task(task));
        self.tasks.insert(
            name,
            RunnerTask {
                stop: stop_tx,
                join,
            },
        );
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::Drive { job, action, reply } => {
                let outcome = self.drive(&job, action).await;
                // The client may have given up; the action happened anyway.
                let _ = reply.send(outcome);
            }
            Command::Drain { on, reply } => {
                let outcome = self.drain(on).await;
                // The client may have given up; the drain goes on anyway.
                let _ = reply.send(outcome);
            }
            Command::Purge { job, reply } => {
                let outcome = self.purge(&job).await;
                // The client may have given up; the purge happened anyway.
                let _ = reply.send(outcome);
            }
            Command::Explain { job, top, reply } => {
                // Reading a large frontier takes a while: off the main loop.
                let store = self.engine.store.clone();
                tokio::task::spawn_blocking(move || {
                    let outcome = match crate::engine::explain(&store, &job, top) {
                        Ok(Some(text)) => ExplainOutcome::Text(text),
                        Ok(None) => ExplainOutcome::NotFound(format!(
                            "no stored state for job {job:?} (it has not checkpointed yet, or was purged)"
                        )),
                        Err(e) => ExplainOutcome::Failed(format!("{e:#}")),
                    };
                    let _ = reply.send(outcome);
                });
            }
        }
    }

    /// `forager drain [--cancel]`: a cluster node gives its jobs back and
    /// takes no new one (or takes jobs again).
    async fn drain(&mut self, on: bool) -> DriveOutcome {
        if self.shared.table().is_shutting_down() {
            return DriveOutcome::Stopping;
        }
        let Some(node) = &mut self.node else {
            return DriveOutcome::Conflict(
                "drain is for a node of a cluster ([cluster] in the daemon config): \
                 a single daemon keeps its jobs; stop it with SIGTERM (systemctl stop forager), \
                 each job resumes from its checkpoint at the next start"
                    .to_string(),
            );
        };
        let name = node.name().to_string();
        let held = node.set_draining(on).await;
        // Beat at once: peers stop counting this node (or count it again).
        node.acquire(self.config.max_jobs).await;
        self.rescan(false).await;
        if on {
            info!(node = %name, held, "draining: the jobs checkpoint and release their leases; no new job is taken");
            DriveOutcome::Done(format!(
                "node {name} drains: {held} running jobs write a checkpoint to the cluster database and release their leases; \
                 it takes no new job until `forager drain --cancel` or a restart"
            ))
        } else {
            info!(node = %name, "drain cancelled: taking jobs again");
            DriveOutcome::Done(format!("node {name} takes jobs again"))
        }
    }

    /// `forager pause|resume|rerun JOB`.
    async fn drive(&mut self, job: &str, action: DriveAction) -> DriveOutcome {
        let refused = |e: DriveRefused| match e {
            DriveRefused::NotFound(_) => DriveOutcome::NotFound(e.to_string()),
            DriveRefused::Conflict(_) => DriveOutcome::Conflict(e.to_string()),
        };
        if let Some(node) = &mut self.node {
            // The job moves between nodes: what is asked is kept in its
            // registry row, and the node that holds it obeys (cluster.rs).
            let outcome = node.drive(job, action, &self.engine.state_dir).await;
            // This node may hold the job: obey now rather than at the next tick.
            if matches!(outcome, DriveOutcome::Done(_)) {
                self.node_round().await;
            }
            return outcome;
        }
        match action {
            DriveAction::Pause => {
                let stop = match self.shared.table().pause(job, SystemTime::now()) {
                    Ok(stop) => stop,
                    Err(e) => return refused(e),
                };
                info!(
                    job,
                    "job paused on request: it checkpoints and stops fetching until resumed"
                );
                self.apply([stop]);
                let mut message = format!(
                    "job {job} pauses: it writes a checkpoint and stops fetching; `forager resume {job}` continues it"
                );
                if let Err(e) = self.save_notes(vec![job.to_string()]).await {
                    message.push_str(&format!(
                        " (the pause could not be stored, so a daemon restart would resume it: {e})"
                    ));
                }
                DriveOutcome::Done(message)
            }
            DriveAction::Resume => {
                let start = match self.shared.table().resume(job) {
                    Ok(start) => start,
                    Err(e) => return refused(e),
                };
                info!(
                    job,
                    "job resumed on request: it continues from its checkpoint"
                );
                self.apply([start]);
                let mut message =
                    format!("job {job} resumes from its checkpoint (once a slot is free)");
                if let Err(e) = self.save_notes(vec![job.to_string()]).await {
                    message.push_str(&format!(
                        " (its stored pause could not be cleared, so a daemon restart would pause it again: {e})"
                    ));
                }
                DriveOutcome::Done(message)
            }
            DriveAction::Rerun => {
                if let Err(e) = self.shared.table().check_rerun(job) {
                    return refused(e);
                }
                match self.purge(job).await {
                    PurgeOutcome::Purged { .. } => {
                        info!(job, "job run again on request: from its seeds, with a fresh frontier, seen set and learned state");
                        DriveOutcome::Done(format!(
                            "job {job} runs again from its seeds (its previous manifest is kept as manifest.superseded-*.jsonl)"
                        ))
                    }
                    PurgeOutcome::NotFound(m) => DriveOutcome::NotFound(m),
                    PurgeOutcome::Conflict(m) => DriveOutcome::Conflict(m),
                    PurgeOutcome::Failed(m) => DriveOutcome::Failed(m),
                }
            }
        }
    }

    /// Store the notes (pause, dashboard history) of `jobs` as their live numbers are now.
    async fn save_notes(&mut self, jobs: Vec<String>) -> Result<(), String> {
        let mut versions = Vec::new();
        let notes: Vec<(String, Option<Vec<u8>>)> = {
            let table = self.shared.table();
            jobs.into_iter()
                .filter_map(|name| {
                    let e = table.get(&name)?;
                    let paused_at = match e.state {
                        JobState::Paused { since } => Some(since),
                        _ => None,
                    };
                    let live = e.live.lock();
                    versions.push((name.clone(), live.history_version));
                    let bytes = JobNotes::of(&live, paused_at).encode();
                    Some((name, Some(bytes)))
                })
                .collect()
        };
        if notes.is_empty() {
            return Ok(());
        }
        let store = self.engine.store.clone();
        let written = tokio::task::spawn_blocking(move || store.put_daemon_notes(&notes))
            .await
            .map_err(|e| format!("saving the dashboard history: {e}"))
            .and_then(|r| r.map_err(|e| e.to_string()));
        match written {
            Ok(()) => {
                self.saved_history.extend(versions);
                Ok(())
            }
            Err(e) => {
                warn!(error = %e, "cannot store the jobs' pause and dashboard history; retried later");
                Err(e)
            }
        }
    }

    /// Store the history of every job whose numbers changed since it was last saved.
    async fn save_changed_history(&mut self) {
        let changed: Vec<String> = self
            .shared
            .table()
            .jobs()
            .filter(|e| {
                let version = e.live.lock().history_version;
                self.saved_history.get(&e.name).copied().unwrap_or(0) != version
            })
            .map(|e| e.name.clone())
            .collect();
        // A failure is logged there and the jobs stay changed: the next round tries again.
        let _ = self.save_notes(changed).await;
    }

    async fn purge(&mut self, job: &str) -> PurgeOutcome {
        match self.shared.table().check_purge(job) {
            Ok(()) => {}
            Err(e @ PurgeRefused::NotFound(_)) => return PurgeOutcome::NotFound(e.to_string()),
            Err(e @ PurgeRefused::Active { .. }) => return PurgeOutcome::Conflict(e.to_string()),
        }
        // A job just paused may still be writing its last checkpoint, which would land after the purge.
        if self.tasks.get(job).is_some_and(|t| !t.join.is_finished()) {
            return PurgeOutcome::Conflict(format!(
                "job {job:?} is still writing its last checkpoint; try again in a moment"
            ));
        }
        if let Err(e) = self.engine.store.purge(job).await {
            error!(job, error = %e, "purge failed");
            return PurgeOutcome::Failed(format!("purging job {job:?}: {e}"));
        }
        match crate::output::set_aside_manifest(&self.engine.state_dir, job) {
            Ok(Some(aside)) => {
                info!(job, moved_to = %aside.display(), "manifest.jsonl moved aside")
            }
            Ok(None) => {}
            // The state is gone already; the next Engine::open moves it instead.
            Err(e) => warn!(job, error = %e, "could not move manifest.jsonl aside"),
        }
        info!(job, "job purged: stored state deleted (target files stay)");
        let (restarts, action) = {
            let mut table = self.shared.table();
            (table.restarts_after_purge(job), table.purged(job))
        };
        self.seeded.remove(job);
        self.saved_history.remove(job);
        // A finished task of the job may still be listed; its state is gone now.
        if let Some(t) = self.tasks.remove(job) {
            let _ = t.stop.send(true);
        }
        self.apply(action);
        PurgeOutcome::Purged { restarts }
    }

    /// SIGHUP: re-read the config, apply what can change live, rescan the jobs folder.
    async fn reload(&mut self) {
        self.notifier.reloading();
        match config::load_daemon(&self.config_path) {
            Err(e) => {
                error!("config reload refused, the running config stays: {e}");
                self.shared.info().daemon_config_error = Some(e.to_string());
            }
            Ok(new) => {
                // First, so that the rest of the reload logs at the new level.
                if new.log_level != self.config.log_level {
                    super::logging::reload_and_log(new.log_level.as_deref());
                }
                let restart = restart_required(&self.config, &new);
                if !restart.is_empty() {
                    warn!(settings = %restart.join(", "), "changed settings need a restart to apply");
                }
                if new.max_jobs != self.slots_total {
                    info!(
                        from = self.slots_total,
                        to = new.max_jobs,
                        "max_jobs changed"
                    );
                    self.resize_slots(new.max_jobs);
                    // Fewer slots than running jobs: the newest go back to wait, from
                    // a checkpoint, rather than run on above the limit until they end.
                    let back = self.shared.table().shrink(new.max_jobs);
                    let mut actions = Vec::new();
                    for (job, action) in back {
                        warn!(job = %job, max_jobs = new.max_jobs,
                            "max_jobs is below the running jobs: this job checkpoints and waits for a free slot, then resumes there");
                        actions.push(action);
                    }
                    self.apply(actions);
                }
                if new.checkpoint_interval != self.config.checkpoint_interval {
                    info!(every = ?new.checkpoint_interval, "checkpoint_interval changed (runs started from now on)");
                    self.engine.checkpoint_interval = new.checkpoint_interval;
                }
                let settings =
                    WatchSettings::new(&self.config.jobs_dir, new.watch, new.poll_interval);
                if self.watcher.as_ref().map(|w| &w.settings) != Some(&settings) {
                    self.watcher = None;
                    self.watcher = Some(watch::spawn(settings, self.triggers_tx.clone()));
                }
                if new.http != self.config.http {
                    info!("[http] changed (runs started from now on)");
                    self.config.http = new.http;
                }
                self.config.max_jobs = new.max_jobs;
                self.config.checkpoint_interval = new.checkpoint_interval;
                self.config.watch = new.watch;
                self.config.poll_interval = new.poll_interval;
                self.config.log_level = new.log_level;
                let mut info = self.shared.info();
                info.daemon_config_error = None;
                info.restart_required = restart;
                info.max_jobs = new.max_jobs;
            }
        }
        self.rescan(true).await;
        let status = self.status_line();
        self.notifier.ready(&status);
        self.last_status = status;
    }

    /// Change the number of slots. Shrinking takes slots as running jobs release them.
    fn resize_slots(&mut self, to: usize) {
        if to > self.slots_total {
            self.slots.add_permits(to - self.slots_total);
        } else {
            let excess = self.slots_total - to;
            let rest = excess - self.slots.forget_permits(excess);
            if rest > 0 {
                let slots = self.slots.clone();
                let rest = u32::try_from(rest).unwrap_or(u32::MAX);
                tokio::spawn(async move {
                    if let Ok(permits) = slots.acquire_many_owned(rest).await {
                        permits.forget();
                    }
                });
            }
        }
        self.slots_total = to;
    }

    async fn tick(&mut self) {
        self.tasks.retain(|_, t| !t.join.is_finished());
        let shutting_down = self.shared.table().is_shutting_down();
        if !shutting_down {
            self.node_round().await;
        }
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % HISTORY_EVERY_TICKS == 0 {
            self.save_changed_history().await;
        }
        if self.ticks % STATUS_EVERY_TICKS == 0 {
            let status = self.status_line();
            if status != self.last_status {
                self.notifier.status(&status);
                self.last_status = status;
            }
        }
    }

    /// A round of this cluster node: beat, take leases, obey what the
    /// registry asks of the held jobs; the table then sees the change.
    async fn node_round(&mut self) {
        let Some(node) = &mut self.node else {
            return;
        };
        if !node.acquire(self.config.max_jobs).await {
            return;
        }
        info!(
            node = node.name(),
            held = node.held(),
            "job leases acquired or asked to stop"
        );
        let fresh = node.take_fresh();
        {
            let mut table = self.shared.table();
            for job in &fresh {
                if table.forget_idle(job) {
                    self.seeded.remove(job);
                }
            }
        }
        self.rescan(false).await;
    }

    fn status_line(&self) -> String {
        notify::status_line(&self.shared.summary())
    }

    /// Stop every runner (each checkpoints), stop the API, close the store.
    async fn shutdown(mut self) -> anyhow::Result<()> {
        let actions = self.shared.table().begin_shutdown();
        let stopping = actions.len();
        let jobs = if stopping == 1 { "job" } else { "jobs" };
        self.notifier.stopping(&format!(
            "stopping: {stopping} {jobs} writing a last checkpoint"
        ));
        info!(jobs = stopping, "stopping");
        self.watcher = None;
        self.apply(actions);
        if let Some(node) = &self.node {
            // Peers count this node out now, so the jobs it is about to
            // release are shared between them alone.
            node.leave().await;
        }
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        let mut stuck = Vec::new();
        for (name, task) in self.tasks.drain() {
            let left = deadline.saturating_duration_since(Instant::now());
            // Beat while waiting: a slow final checkpoint is not a wedged daemon.
            let beating = async {
                loop {
                    self.heartbeat.beat();
                    tokio::time::sleep(TICK).await;
                }
            };
            tokio::select! {
                joined = tokio::time::timeout(left, task.join) => match joined {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => error!(job = %name, error = %e, "runner task crashed while stopping"),
                    Err(_) => stuck.push(name),
                },
                _ = beating => {}
            }
        }
        // Every run has ended: its numbers are final.
        self.save_changed_history().await;
        if let Some(stop) = self.admin_stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.admin_task.take() {
            match tokio::time::timeout(ADMIN_GRACE, task).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => warn!(error = %e, "admin API server error"),
                Ok(Err(e)) => warn!(error = %e, "admin API task failed"),
                Err(_) => warn!("admin API did not stop in time"),
            }
        }
        if let Some(w) = self.watchdog.take() {
            w.abort();
        }
        let store_path = self.engine.store.path().to_path_buf();
        drop(self.shared);
        // The last handle on the store: dropping it drains the writer and closes redb (blocking).
        let engine = self.engine;
        if let Err(e) = tokio::task::spawn_blocking(move || drop(engine)).await {
            error!(error = %e, "closing the store failed");
        }
        if !stuck.is_empty() {
            anyhow::bail!(
                "{} jobs did not stop within {:?} ({}); they resume from their last checkpoint",
                stuck.len(),
                SHUTDOWN_GRACE,
                stuck.join(", ")
            );
        }
        info!(store = %store_path.display(), "stopped cleanly");
        Ok(())
    }
}

/// Read the jobs' stored notes into `table` (pauses, dashboard history);
/// returns the history version each job starts from. A failure costs the
/// history, never the start.
async fn restore_notes(engine: &Engine, table: &mut JobTable) -> HashMap<String, u64> {
    let store = engine.store.clone();
    let notes = match tokio::task::spawn_blocking(move || store.daemon_notes()).await {
        Ok(Ok(notes)) => notes,
        Ok(Err(e)) => {
            warn!(error = %e, "cannot read the jobs' pauses and dashboard history; jobs start unpaused with empty plots");
            return HashMap::new();
        }
        Err(e) => {
            warn!(error = %e, "reading the jobs' pauses and dashboard history failed");
            return HashMap::new();
        }
    };
    let mut saved = HashMap::new();
    for (name, bytes) in notes {
        let notes = match JobNotes::decode(&bytes) {
            Ok(n) => n,
            Err(e) => {
                warn!(job = %name, error = %e, "the job's stored dashboard history does not read; it starts empty");
                continue;
            }
        };
        if let Some(since) = notes.paused_since() {
            info!(job = %name, "job stays paused, as it was asked to be (`forager resume` continues it)");
            table.add_paused(&name, since);
        }
        if let Some(e) = table.get(&name) {
            let mut live = e.live.lock();
            notes.restore_into(&mut live);
            saved.insert(name, live.history_version);
        }
    }
    saved
}

/// The settings that differ between `running` and `new` and only apply at the next start.
fn restart_required(running: &DaemonConfig, new: &DaemonConfig) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, differs: bool| {
        if differs {
            out.push(name.to_string());
        }
    };
    check("jobs_dir", running.jobs_dir != new.jobs_dir);
    check("state_dir", running.state_dir != new.state_dir);
    check("admin_listen", running.admin_listen != new.admin_listen);
    check("admin_public", running.admin_public != new.admin_public);
    check("allow_private", running.allow_private != new.allow_private);
    check("resolve", running.resolve != new.resolve);
    check("cache_size", running.cache_size != new.cache_size);
    check("parse_memory", running.parse_memory != new.parse_memory);
    check("log_format", running.log_format != new.log_format);
    check("cluster", running.cluster != new.cluster);
    out
}

async fn open_engine(config: &DaemonConfig, pacer: Option<ClusterPacer>) -> anyhow::Result<Engine> {
    let engine_config = EngineConfig {
        state_dir: config.state_dir.clone(),
        fetch: FetchConfig {
            allow_private: config.allow_private,
            resolve: config
                .resolve
                .iter()
                .map(|(h, a)| (h.clone(), *a))
                .collect(),
            pacer,
            ..FetchConfig::default()
        },
        checkpoint_interval: config.checkpoint_interval,
        cache_bytes: usize::try_from(config.cache_size).unwrap_or(usize::MAX),
    };
    // Opening redb (and repairing it after a crash) blocks: keep it off the async workers.
    let mut engine = tokio::task::spawn_blocking(move || Engine::open(engine_config))
        .await
        .context("opening the state store")?
        .with_context(|| format!("opening the state in {}", config.state_dir.display()))?;
    engine.parse_budget = crate::engine::ParseBudget::new(config.parse_memory);
    Ok(engine)
}

/// One run of one job: wait for the previous run and a slot, crawl, report.
async fn job_task(task: JobTask) {
    let JobTask {
        shared,
        engine,
        spec,
        generation,
        live,
        slots,
        mut stop,
        previous,
        lease,
    } = task;
    let name = spec.name.clone();
    if let Some(previous) = previous {
        // Two runners of one job at once would interleave their checkpoints.
        if let Err(e) = previous.join.await {
            error!(job = %name, error = %e, "previous run crashed");
        }
        drop(previous.stop);
    }
    let permit = tokio::select! {
        biased;
        // A closed channel (the daemon dropped us) means stop too.
        _ = stop.wait_for(|&s| s) => None,
        permit = slots.acquire_owned() => permit.ok(),
    };
    let Some(permit) = permit else {
        if let Some(l) = &lease {
            cluster::settle(
                &l.cluster,
                &l.lease,
                &l.ended,
                &Ok(None),
                &l.asked,
                &engine.state_dir,
            )
            .await;
        }
        shared
            .table()
            .report(&name, generation, RunReport::Finished(Ok(None)));
        return;
    };
    shared.table().report(&name, generation, RunReport::Started);
    info!(job = %name, generation, "job started");
    // Its own task, so a panic in the crawl marks the job failed instead of losing it.
    let mut observer = LiveObserver {
        job: name.clone(),
        live: live.clone(),
        shared: shared.clone(),
        mirror: None,
        lease: None,
    };
    let result = match lease {
        None => match tokio::spawn(run_job(engine, spec, observer, stop)).await {
            Ok(result) => result,
            Err(e) => Err(format!("runner crashed: {e}")),
        },
        Some(JobLease {
            cluster,
            lease,
            keeper,
            ended,
            asked,
        }) => {
            let node = cluster.node().to_string();
            let state_dir = engine.state_dir.clone();
            observer.lease = Some(keeper.clock());
            let (stop, done, forwarder) =
                cluster::stop_on_lease_loss(stop, keeper, name.clone(), node.clone());
            // A restore that fails (the database away) is no failure of
            // the job: its lease is given back, not marked failed.
            let mut restored = true;
            let result = match cluster::restore(&engine.store, &cluster, &lease, &state_dir).await {
                Err(e) => {
                    restored = false;
                    Err(e)
                }
                Ok(()) => {
                    let (mirror_tx, mirror) =
                        cluster::mirror(engine.store.clone(), cluster.clone(), lease.clone());
                    observer.mirror = Some(mirror_tx);
                    let result = match tokio::spawn(run_job(engine, spec, observer, stop)).await {
                        Ok(result) => result,
                        Err(e) => Err(format!("runner crashed: {e}")),
                    };
                    // The observer (and its sender) went with the run: the
                    // mirror writes the last checkpoint and ends.
                    if let Err(e) = mirror.await {
                        error!(node = %node, job = %name, error = %e, "checkpoint mirror task crashed");
                    }
                    result
                }
            };
            let _ = done.send(());
            // Renewing until the lease is settled; dropped right after.
            let _keeper = forwarder.await;
            let not_run = Ok(None);
            let settle_as = if restored { &result } else { &not_run };
            cluster::settle(&cluster, &lease, &ended, settle_as, &asked, &state_dir).await;
            result
        }
    };
    drop(permit);
    match &result {
        Ok(Some(reason)) => info!(job = %name, reason = reason.as_str(), "job done"),
        Ok(None) => info!(job = %name, "job stopped; state saved"),
        Err(e) => {
            error!(job = %name, error = %e, "job failed");
            live.lock().on_failure(e);
        }
    }
    // A run that panicked while paused never said it resumed.
    live.lock().on_resumed();
    shared
        .table()
        .report(&name, generation, RunReport::Finished(result));
}

async fn run_job(
    engine: Engine,
    spec: JobSpec,
    mut observer: LiveObserver,
    stop: channel::Receiver<bool>,
) -> Result<Option<StopReason>, String> {
    let live = observer.live.clone();
    // A running job does not show its previous run's warning or stop reason.
    {
        let mut l = live.lock();
        l.warning = None;
        l.stop = None;
    }
    let runner = open_runner(&engine, &spec, &mut observer).map_err(|e| error_chain(&e))?;
    let outcome = runner.run(stop).await.map_err(|e| error_chain(&e))?;
    let unreachable = outcome.unreachable_because();
    let warnings = outcome.warnings();
    let mut l = live.lock();
    l.warning = (!warnings.is_empty()).then(|| warnings.join("; "));
    l.counters = outcome.counters;
    l.stats = outcome.stats;
    l.frontier = Some(outcome.frontier_left as u64);
    l.stop = outcome.stop;
    if let Some(why) = unreachable {
        l.on_failure(&format!("nothing could be fetched: {why}"));
    }
    Ok(outcome.stop)
}

/// Restore a job (reads the store, may take a while for a big job) without stalling an async worker.
fn open_runner<'a>(
    engine: &'a Engine,
    spec: &'a JobSpec,
    observer: &'a mut LiveObserver,
) -> Result<Runner<'a>, EngineError> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi_thread =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(|| Runner::new(engine, spec, observer))
    } else {
        Runner::new(engine, spec, observer)
    }
}

/// An error and its sources on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // `#[error(transparent)]` and friends repeat their source's text.
        if !s.ends_with(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = cause.source();
    }
    s
}

/// Feeds a job's live numbers and the daemon-wide histograms from its runner's events.
struct LiveObserver {
    job: String,
    live: Arc<LiveJob>,
    shared: Arc<Shared>,
    /// With `[cluster]`: bumped at each checkpoint, for the mirror to the database.
    mirror: Option<channel::Sender<u64>>,
    /// With `[cluster]`: whether the lease still holds by this node's clock.
    lease: Option<forager_cluster::LeaseClock>,
}

impl CrawlObserver for LiveObserver {
    fn request(&mut self, event: &RequestEvent<'_>) {
        let method = match event.kind {
            RequestKind::Get => "GET",
            RequestKind::Head => "HEAD",
        };
        if let Some(latency) = event.latency {
            self.shared
                .histograms
                .fetch_latency
                .observe(latency.as_secs_f64());
        }
        let facts = RequestFacts {
            method,
            url: event.url.as_str(),
            status: event.status,
            latency: event.latency,
        };
        self.live
            .lock()
            .on_request(&facts, event.counters, event.frontier, Instant::now());
    }

    fn checkpoint(&mut self, counters: &JobCounters, stats: &StrategyStats, commit: &CommitReport) {
        let h = &self.shared.histograms;
        h.checkpoint_duration.observe(commit.duration.as_secs_f64());
        h.checkpoint_group.observe(commit.deltas as f64);
        self.live
            .lock()
            .on_checkpoint(counters, stats, commit.duration);
        if let Some(m) = &self.mirror {
            m.send_modify(|n| *n += 1);
        }
    }

    fn may_write_manifest(&self) -> bool {
        self.lease.as_ref().is_none_or(|l| l.holds())
    }

    fn paused(&mut self, error: &str) {
        let first = {
            let mut live = self.live.lock();
            let first = live.paused.is_none();
            live.on_paused(error);
            first
        };
        // The engine retries (and may report again) until it can write: log the pause once.
        if first {
            warn!(job = %self.job, error, "job paused: cannot write its state or targets; retrying");
        }
    }

    fn resumed(&mut self) {
        let was_paused = {
            let mut live = self.live.lock();
            let was = live.paused.is_some();
            live.on_resumed();
            was
        };
        if was_paused {
            info!(job = %self.job, "job resumed: its state and targets can be written again");
        }
    }

    fn finished(&mut self, counters: &JobCounters, stop: Option<StopReason>) {
        self.live.lock().on_finished(counters, stop);
    }

    fn waiting(&mut self, next_due: Option<std::time::SystemTime>) {
        self.live.lock().waiting_until = next_due;
    }

    fn robots_failed(&mut self, _origin: &str) {
        self.shared.histograms.robots_failures.inc();
    }

    fn poison_list(&mut self, documents: u64) {
        self.live.lock().poisoned = Some(documents);
    }

    fn waiting_for_origin(&mut self, wait: Option<&crate::engine::OriginWait>) {
        self.live.lock().waiting_for = wait.cloned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reload_names_the_settings_it_cannot_apply() {
        let a = DaemonConfig::default();
        let mut b = a.clone();
        b.max_jobs = 3;
        b.poll_interval = Duration::from_secs(9);
        assert!(restart_required(&a, &b).is_empty());
        b.state_dir = "/elsewhere".into();
        b.allow_private = true;
        assert_eq!(restart_required(&a, &b), vec!["state_dir", "allow_private"]);
    }

    #[test]
    fn the_observer_feeds_the_job_and_the_daemon_histograms() {
        use crate::daemon::report::DaemonInfo;
        let (tx, _rx) = mpsc::unbounded_channel();
        let info = DaemonInfo::for_tests(1);
        let shared = Arc::new(Shared::new(JobTable::new(), info, tx));
        let live = Arc::new(LiveJob::default());
        let mut observer = LiveObserver {
            job: "a".into(),
            live: live.clone(),
            shared: shared.clone(),
            mirror: None,
            lease: None,
        };
        let url = url::Url::parse("http://a.test/x").unwrap();
        let counters = JobCounters {
            requests: 2,
            ..Default::default()
        };
        for (status, latency) in [(Some(200), Some(Duration::from_millis(30))), (None, None)] {
            observer.request(&RequestEvent {
                kind: RequestKind::Get,
                url: &url,
                status,
                bytes: 10,
                label: None,
                saved_target: false,
                latency,
                counters: &counters,
                frontier: 9,
            });
        }
        observer.checkpoint(
            &counters,
            &StrategyStats::default(),
            &CommitReport {
                duration: Duration::from_millis(7),
                deltas: 5,
            },
        );
        let h = &shared.histograms;
        assert_eq!(h.fetch_latency.count(), 1, "a failed request is not timed");
        assert!((h.fetch_latency.sum() - 0.030).abs() < 1e-6);
        assert_eq!(h.checkpoint_duration.count(), 1);
        assert_eq!(h.checkpoint_group.count(), 1);
        assert_eq!(h.checkpoint_group.sum(), 5.0, "5 deltas in one commit");
        {
            let l = live.lock();
            assert_eq!(l.fetch_latency.count, 1);
            assert_eq!(l.checkpoints.count, 1);
            assert_eq!(l.responses.failed, 1);
        }
        observer.paused("No space left on device");
        assert!(live.lock().paused.is_some());
        observer.resumed();
        assert!(live.lock().paused.is_none());
        assert_eq!(
            live.lock().last_error.as_deref(),
            Some("No space left on device")
        );
    }

    #[test]
    fn error_chains_do_not_repeat_transparent_sources() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(error_chain(&e), "outer: inner");
    }
}
