//! The status report: what `GET /status` and `GET /jobs/{name}` answer, what
//! `forager status` decodes and prints, and what `/metrics` is rendered from.

use super::jobs::{JobEntry, JobState, JobTable, Phase};
use super::live::{StatusClasses, TimeTotal};
use crate::store::{JobCounters, StopReason};
use forager_core::config::ConfigError;
use forager_core::strategy::ActionReport;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Top actions listed per job in `/status` (`/jobs/{name}` lists all the strategy reports).
pub const STATUS_TOP_ACTIONS: usize = 3;

/// The whole daemon.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusReport {
    pub version: String,
    pub pid: u32,
    /// Unix seconds.
    pub started_at: u64,
    pub uptime_secs: u64,
    pub jobs_dir: PathBuf,
    pub max_jobs: usize,
    /// Jobs crawling (paused ones not included).
    pub running: usize,
    /// Jobs that cannot write their state or targets and retry (disk full).
    #[serde(default)]
    pub paused: usize,
    pub pending: usize,
    /// All jobs' requests per minute.
    pub request_rate_per_min: f64,
    pub shutting_down: bool,
    /// The daemon config failed to reload (the previous one stays in force).
    pub daemon_config_error: Option<String>,
    /// Settings changed in the config file that only a restart applies.
    pub restart_required: Vec<String>,
    /// The jobs folder cannot be read (jobs keep their last known files).
    pub jobs_dir_error: Option<String>,
    pub jobs: Vec<JobStatus>,
    /// Every refused job file.
    pub config_errors: Vec<FileError>,
    /// With `[cluster]`: every node and every job of the cluster (`jobs`
    /// above are the ones this node runs).
    #[serde(default)]
    pub cluster: Option<ClusterReport>,
}

/// The whole cluster, as its database says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterReport {
    /// This node.
    pub node: String,
    /// Why the database could not be read for this report (the lists are then empty).
    pub error: Option<String>,
    pub nodes: Vec<ClusterNode>,
    pub jobs: Vec<ClusterJob>,
}

/// One node of the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterNode {
    pub name: String,
    /// `live`, `draining`, `left` (stopped cleanly) or `silent` (no beat for a lease: dead, or cut off).
    pub state: String,
    /// Unix seconds of its last heartbeat.
    pub heartbeat_at: u64,
    /// Seconds since, by the database's clock.
    pub heartbeat_age_secs: f64,
    /// Unix seconds.
    pub started_at: u64,
    /// Leases it held at its last beat.
    pub held: i64,
    pub max_jobs: i64,
}

/// One job of the cluster's registry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterJob {
    pub name: String,
    /// `active`, `paused`, `done` or `failed`.
    pub status: String,
    /// The node that runs it now (holds a running lease).
    pub node: Option<String>,
    /// The node whose lease lapsed, while no node has taken the job over yet.
    pub lapsed_from: Option<String>,
    /// Its fencing epoch: how many times a node took it.
    pub epoch: i64,
    /// Targets recorded in the database, by whichever node.
    pub targets: i64,
    pub failure: Option<String>,
}

impl ClusterJob {
    pub fn of(j: &forager_cluster::JobRow) -> ClusterJob {
        ClusterJob {
            name: j.name.clone(),
            status: j.status.clone(),
            node: j.owner.clone().filter(|_| j.leased),
            lapsed_from: j.owner.clone().filter(|_| !j.leased),
            epoch: j.epoch,
            targets: j.targets,
            failure: j.failure.clone(),
        }
    }
}

/// `GET /jobs/NAME` of a job this node does not run (another node holds
/// it, or none does): what the cluster's registry and manifest rows say of
/// it, asked on node `this`. Its live numbers (requests, rate, learners)
/// are on the node that runs it; `counters.targets` is the database's
/// count of its manifest rows, whichever node recorded them.
pub fn remote_job_status(this: &str, j: &forager_cluster::JobRow) -> JobStatus {
    let c = ClusterJob::of(j);
    let state = match (c.status.as_str(), &c.node) {
        ("done", _) => Phase::Done,
        ("failed", _) => Phase::Failed,
        ("paused", _) => Phase::Paused,
        (_, Some(_)) => Phase::Running,
        (_, None) => Phase::Pending,
    };
    let detail = match (&c.node, &c.lapsed_from) {
        (Some(n), _) => format!(
            "runs on node {n} (epoch {}); asked on node {this}: the numbers here are the cluster database's, \
             its live numbers are on {n}",
            c.epoch
        ),
        (None, Some(n)) => format!(
            "its lease on node {n} lapsed; the next node with a free slot takes it over from its last checkpoint"
        ),
        (None, None) => match c.status.as_str() {
            "paused" => format!("paused by `forager pause`; `forager resume {}` continues it on any node", c.name),
            "failed" => c.failure.clone().unwrap_or_else(|| "failed".to_string()),
            "done" => "done (in the cluster)".to_string(),
            _ => "waiting for a node with a free slot".to_string(),
        },
    };
    JobStatus {
        name: c.name.clone(),
        state,
        stop_reason: None,
        detail: Some(detail),
        warning: None,
        file: Some(PathBuf::from(format!("cluster:{}", c.name))),
        strategy: None,
        counters: JobCounters {
            targets: u64::try_from(c.targets).unwrap_or(0),
            ..JobCounters::default()
        },
        request_rate_per_min: 0.0,
        classifier_accuracy: None,
        actions: 0,
        top_actions: Vec::new(),
        frontier: None,
        poisoned: None,
        responses: Default::default(),
        fetch_latency: Default::default(),
        checkpoints: 0,
        checkpoint_time: Default::default(),
        last_checkpoint_at: None,
        paused_since: None,
        paused_by_user: c.status == "paused",
        errors_by_kind: Default::default(),
        next_revisit_at: None,
        last_error: c.failure.clone(),
        last_error_at: None,
        config_error: None,
        cluster: Some(c),
    }
}

impl ClusterReport {
    pub fn of(
        node: &str,
        jobs: &[forager_cluster::JobRow],
        nodes: &[forager_cluster::NodeRow],
    ) -> ClusterReport {
        ClusterReport {
            node: node.to_string(),
            error: None,
            nodes: nodes
                .iter()
                .map(|n| ClusterNode {
                    name: n.name.clone(),
                    state: if n.left_at.is_some() {
                        "left"
                    } else if !n.live {
                        "silent"
                    } else if n.draining {
                        "draining"
                    } else {
                        "live"
                    }
                    .to_string(),
                    heartbeat_at: unix_secs(n.heartbeat_at),
                    heartbeat_age_secs: n.heartbeat_age,
                    started_at: unix_secs(n.started_at),
                    held: n.held,
                    max_jobs: n.max_jobs,
                })
                .collect(),
            jobs: jobs.iter().map(ClusterJob::of).collect(),
        }
    }

    pub fn unread(node: &str, why: String) -> ClusterReport {
        ClusterReport {
            node: node.to_string(),
            error: Some(why),
            nodes: Vec::new(),
            jobs: Vec::new(),
        }
    }
}

/// One job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobStatus {
    pub name: String,
    pub state: Phase,
    pub stop_reason: Option<StopReason>,
    /// Why it is in this state, for a person (stop reason, failure, stop cause).
    pub detail: Option<String>,
    /// What its last run left to know, though it ended without error: a
    /// seed that answered 4xx/5xx, no target saved (`JobOutcome::warnings`).
    #[serde(default)]
    pub warning: Option<String>,
    pub file: Option<PathBuf>,
    pub strategy: Option<String>,
    pub counters: JobCounters,
    pub request_rate_per_min: f64,
    /// Online accuracy of the URL classifier, when it made predictions.
    pub classifier_accuracy: Option<f64>,
    pub actions: u64,
    pub top_actions: Vec<ActionReport>,
    /// Links waiting in the frontier: as of the last request while the job
    /// runs, as its run left them after; `None` before its first request.
    pub frontier: Option<u64>,
    /// Documents on the job's poison list (not read again), as its run last
    /// said; `None` before its first run in this daemon.
    #[serde(default)]
    pub poisoned: Option<u64>,
    /// Responses by status class, kept across daemon restarts (with the dashboard's history).
    pub responses: StatusClasses,
    /// Send → headers of the requests answered since the daemon started.
    #[serde(default)]
    pub fetch_latency: TimeTotal,
    /// Checkpoints committed since the daemon started.
    pub checkpoints: u64,
    /// Those checkpoints and their total commit time.
    #[serde(default)]
    pub checkpoint_time: TimeTotal,
    /// Unix seconds.
    pub last_checkpoint_at: Option<u64>,
    /// Unix seconds; set while the job is `paused`.
    #[serde(default)]
    pub paused_since: Option<u64>,
    /// `paused` because a person asked (`forager pause`), not because it
    /// cannot write; it stays paused until `forager resume`.
    #[serde(default)]
    pub paused_by_user: bool,
    /// Failed requests by kind (`HTTP 404`, `network`, …), kept across daemon restarts.
    #[serde(default)]
    pub errors_by_kind: std::collections::BTreeMap<String, u64>,
    /// Unix seconds; set while a continuous job waits: when its next revisit is due.
    #[serde(default)]
    pub next_revisit_at: Option<u64>,
    /// The last error seen (a failed request, a failed run, what paused the
    /// job). Kept after the job resumes: the state says whether it still holds.
    pub last_error: Option<String>,
    /// Unix seconds.
    pub last_error_at: Option<u64>,
    /// Its job file does not parse now; the last valid version is what runs.
    pub config_error: Option<FileError>,
    /// In a cluster, for a job another node runs (or none): its registry
    /// row, which node holds it (`GET /jobs/NAME` on any node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterJob>,
}

/// A refused job file, located.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: String,
    pub reason: String,
    /// `FILE:LINE: FIELD: REASON` on one line.
    pub message: String,
    /// The job it belongs to, when known.
    pub job: Option<String>,
}

impl FileError {
    pub fn new(e: &ConfigError, job: Option<&str>) -> Self {
        FileError {
            file: e.file.clone(),
            line: e.line,
            field: e.field.clone(),
            reason: e.reason.clone(),
            message: e.to_string(),
            job: job.map(str::to_string),
        }
    }
}

/// Daemon-wide facts the table does not know.
#[derive(Clone, Debug)]
pub struct DaemonInfo {
    pub started_at: SystemTime,
    pub started: Instant,
    pub jobs_dir: PathBuf,
    pub max_jobs: usize,
    pub daemon_config_error: Option<String>,
    pub restart_required: Vec<String>,
    pub jobs_dir_error: Option<String>,
}

#[cfg(test)]
impl DaemonInfo {
    /// A daemon that just started on jobs folder `j`, for tests.
    pub(crate) fn for_tests(max_jobs: usize) -> DaemonInfo {
        DaemonInfo {
            started_at: SystemTime::now(),
            started: Instant::now(),
            jobs_dir: "j".into(),
            max_jobs,
            daemon_config_error: None,
            restart_required: vec![],
            jobs_dir_error: None,
        }
    }
}

pub fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The report of every job.
pub fn build(table: &JobTable, info: &DaemonInfo, now: Instant) -> StatusReport {
    let jobs: Vec<JobStatus> = table
        .jobs()
        .map(|e| job_status(e, now, STATUS_TOP_ACTIONS))
        .collect();
    let config_errors = table
        .file_errors()
        .map(|(_, p)| FileError::new(&p.error, p.job.as_deref()))
        .collect();
    StatusReport {
        version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        started_at: unix_secs(info.started_at),
        uptime_secs: now.saturating_duration_since(info.started).as_secs(),
        jobs_dir: info.jobs_dir.clone(),
        max_jobs: info.max_jobs,
        running: jobs.iter().filter(|j| j.state == Phase::Running).count(),
        paused: jobs.iter().filter(|j| j.state == Phase::Paused).count(),
        pending: table.count(Phase::Pending),
        // A fold from +0.0: an empty float sum is -0.0, which prints as "-0".
        request_rate_per_min: jobs.iter().fold(0.0, |sum, j| sum + j.request_rate_per_min),
        shutting_down: table.is_shutting_down(),
        daemon_config_error: info.daemon_config_error.clone(),
        restart_required: info.restart_required.clone(),
        jobs_dir_error: info.jobs_dir_error.clone(),
        jobs,
        config_errors,
        cluster: None,
    }
}

/// One job's status with at most `top` actions.
pub fn job_status(e: &JobEntry, now: Instant, top: usize) -> JobStatus {
    let mut live = e.live.lock();
    // A job that is not fetching has no rate, whatever its last minute held.
    let request_rate_per_min = match e.state {
        JobState::Running | JobState::Stopping => live.rate.per_minute(now),
        _ => 0.0,
    };
    // A run under way (or waiting to run) has no stop reason: the store's is its previous run's.
    let stop_reason = match &e.state {
        JobState::Done { reason } => Some(*reason),
        JobState::Pending | JobState::Running | JobState::Stopping | JobState::Paused { .. } => {
            None
        }
        _ => live.stop,
    };
    // Only a running job can be paused: the engine reports it, the table does not know.
    let paused = live
        .paused
        .as_ref()
        .filter(|_| matches!(e.state, JobState::Running | JobState::Stopping));
    let detail = match &e.state {
        JobState::Pending if e.requeued => Some(
            "waiting for a free slot: max_jobs was lowered below the running jobs, so this one \
             checkpointed and resumes from there when a slot frees"
                .to_string(),
        ),
        JobState::Pending => {
            Some("waiting for a free slot (max_jobs) or for its previous run to stop".to_string())
        }
        JobState::Paused { since } => Some(format!(
            "paused by `forager pause` at {}; `forager resume {}` continues it",
            humantime::format_rfc3339_seconds(*since),
            e.name
        )),
        JobState::Running => match (paused, live.waiting_until) {
            (Some(p), _) => Some(format!(
                "paused, retrying: cannot write its state or targets: {}",
                p.error
            )),
            (None, Some(at)) => Some(format!(
                "waiting: nothing due; next revisit at {}",
                humantime::format_rfc3339_seconds(at)
            )),
            (None, None) => live.waiting_for.as_ref().map(ToString::to_string),
        },
        JobState::Stopping => Some(match paused {
            Some(p) => format!(
                "stopping: its last checkpoint cannot be written yet ({}); retrying",
                p.error
            ),
            None => "stopping: writing its last checkpoint".to_string(),
        }),
        JobState::Done { reason } => Some(reason.as_str().to_string()),
        JobState::Failed { error } => Some(error.clone()),
        JobState::Stopped { cause } => Some(cause.as_str().to_string()),
        JobState::Invalid => e.config_error.as_ref().map(ToString::to_string),
    };
    let state = match (e.state.phase(), paused) {
        (Phase::Running, Some(_)) => Phase::Paused,
        (phase, _) => phase,
    };
    JobStatus {
        name: e.name.clone(),
        state,
        stop_reason,
        detail,
        warning: live.warning.clone(),
        file: e.file.clone(),
        strategy: e.spec.as_ref().map(|s| s.strategy.name().to_string()),
        counters: live.counters.clone(),
        request_rate_per_min,
        classifier_accuracy: live.stats.classifier_accuracy(),
        actions: live.stats.actions,
        top_actions: live.stats.top_actions.iter().take(top).cloned().collect(),
        frontier: live.frontier,
        poisoned: live.poisoned,
        responses: live.responses,
        fetch_latency: live.fetch_latency,
        checkpoints: live.checkpoints.count,
        checkpoint_time: live.checkpoints,
        last_checkpoint_at: live.last_checkpoint.map(unix_secs),
        paused_since: match &e.state {
            JobState::Paused { since } => Some(unix_secs(*since)),
            _ => paused.map(|p| unix_secs(p.since)),
        },
        paused_by_user: matches!(e.state, JobState::Paused { .. }),
        errors_by_kind: live.errors.clone(),
        next_revisit_at: live
            .waiting_until
            .filter(|_| matches!(e.state, JobState::Running))
            .map(unix_secs),
        last_error: live.last_error.clone(),
        last_error_at: live.last_error_at.map(unix_secs),
        config_error: e
            .config_error
            .as_ref()
            .map(|c| FileError::new(c, Some(&e.name))),
        cluster: None,
    }
}

/// `1.5 GiB`, `12 KiB`, `512 B`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if v < 10.0 {
        format!("{v:.1} {}", UNITS[unit])
    } else {
        format!("{v:.0} {}", UNITS[unit])
    }
}

fn human_duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// The report as the table `forager status` prints.
pub fn format_status(r: &StatusReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "forager {} (pid {}), up {}: {} running, {}{} waiting (max_jobs {}), {:.0} req/min{}",
        r.version,
        r.pid,
        human_duration(r.uptime_secs),
        r.running,
        if r.paused > 0 {
            format!("{} paused, ", r.paused)
        } else {
            String::new()
        },
        r.pending,
        r.max_jobs,
        r.request_rate_per_min,
        if r.shutting_down {
            ", shutting down"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "jobs folder: {}", r.jobs_dir.display());
    if let Some(e) = &r.jobs_dir_error {
        let _ = writeln!(out, "jobs folder error: {e}");
    }
    if let Some(e) = &r.daemon_config_error {
        let _ = writeln!(out, "config reload failed (previous config in force): {e}");
    }
    if !r.restart_required.is_empty() {
        let _ = writeln!(
            out,
            "changed settings that need a restart: {}",
            r.restart_required.join(", ")
        );
    }
    out.push('\n');
    if r.jobs.is_empty() {
        out.push_str("no jobs\n");
    } else {
        let header = [
            "JOB", "STATE", "REQUESTS", "HEADS", "TARGETS", "BYTES", "FRONTIER", "REQ/MIN",
            "ACCURACY", "DETAIL",
        ];
        let rows: Vec<[String; 10]> = r
            .jobs
            .iter()
            .map(|j| {
                let mut detail = j.detail.clone().unwrap_or_default();
                if j.config_error.is_some() && j.state != Phase::Invalid {
                    if !detail.is_empty() {
                        detail.push_str("; ");
                    }
                    detail.push_str("job file invalid (see below), last valid version kept");
                }
                if let Some(w) = &j.warning {
                    if !detail.is_empty() {
                        detail.push_str("; ");
                    }
                    detail.push_str("warning: ");
                    detail.push_str(w);
                }
                [
                    j.name.clone(),
                    j.state.as_str().to_string(),
                    j.counters.requests.to_string(),
                    j.counters.heads.to_string(),
                    j.counters.targets.to_string(),
                    human_bytes(j.counters.bytes),
                    j.frontier
                        .map_or_else(|| "-".to_string(), |f| f.to_string()),
                    format!("{:.0}", j.request_rate_per_min),
                    j.classifier_accuracy
                        .map_or_else(|| "-".to_string(), |a| format!("{:.0}%", a * 100.0)),
                    detail,
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        // Numbers right-aligned, text left-aligned; the last column is not padded.
        let numeric = [
            false, false, true, true, true, true, true, true, true, false,
        ];
        let mut line = |cells: &[String]| {
            let mut s = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = widths[i].saturating_sub(cell.chars().count());
                if i + 1 == cells.len() {
                    s.push_str(cell);
                } else if numeric[i] {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(cell);
                } else {
                    s.push_str(cell);
                    s.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(&header.map(str::to_string));
        for row in &rows {
            line(row);
        }
    }
    let poisoned: Vec<(&str, u64)> = r
        .jobs
        .iter()
        .filter_map(|j| Some((j.name.as_str(), j.poisoned.filter(|&n| n > 0)?)))
        .collect();
    if !poisoned.is_empty() {
        out.push_str("\npoison lists (documents not read again; the log names them):\n");
        for (job, n) in poisoned {
            let _ = writeln!(out, "  {job}: {n}");
        }
    }
    if !r.config_errors.is_empty() {
        out.push_str("\ninvalid job files:\n");
        for e in &r.config_errors {
            let _ = writeln!(out, "  {}", e.message);
        }
    }
    if let Some(c) = &r.cluster {
        format_cluster(&mut out, c);
    }
    out
}

/// The cluster section of `forager status`: nodes, then every job with the node that runs it.
fn format_cluster(out: &mut String, c: &ClusterReport) {
    let _ = writeln!(out, "\ncluster (this node: {}):", c.node);
    if let Some(e) = &c.error {
        let _ = writeln!(out, "  cannot read the cluster database: {e}");
        return;
    }
    let nodes: Vec<Vec<String>> = c
        .nodes
        .iter()
        .map(|n| {
            vec![
                n.name.clone(),
                n.state.clone(),
                format!("{}/{}", n.held, n.max_jobs),
                format!("{:.0}s ago", n.heartbeat_age_secs.max(0.0)),
            ]
        })
        .collect();
    table(out, &["NODE", "STATE", "JOBS", "HEARTBEAT"], &nodes);
    out.push('\n');
    let jobs: Vec<Vec<String>> = c
        .jobs
        .iter()
        .map(|j| {
            let node = match (&j.node, &j.lapsed_from) {
                (Some(n), _) => n.clone(),
                (None, Some(n)) => format!("({n}: lease lapsed)"),
                (None, None) => "-".to_string(),
            };
            vec![
                j.name.clone(),
                j.status.clone(),
                node,
                j.epoch.to_string(),
                j.targets.to_string(),
                j.failure.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        out,
        &["JOB", "STATUS", "NODE", "EPOCH", "TARGETS", "DETAIL"],
        &jobs,
    );
}

/// A left-aligned table; the last column is not padded.
fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for cells in std::iter::once(&header).chain(rows) {
        let mut s = String::from("  ");
        for (i, cell) in cells.iter().enumerate() {
            s.push_str(cell);
            if i + 1 < cells.len() {
                let pad = widths[i].saturating_sub(cell.chars().count());
                s.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::jobs::{Parsed, RunReport, ScannedFile};
    use forager_core::config::JobSpec;
    use std::path::Path;
    use std::time::Duration;

    fn table() -> JobTable {
        let mut t = JobTable::new();
        let spec = JobSpec::new("alpha", vec![url::Url::parse("http://a.test/").unwrap()]);
        let mut spec_b = spec.clone();
        spec_b.name = "beta".into();
        t.reconcile(vec![
            ScannedFile {
                path: "j/a.toml".into(),
                parsed: Parsed::Valid(Box::new(spec)),
            },
            ScannedFile {
                path: "j/b.toml".into(),
                parsed: Parsed::Valid(Box::new(spec_b)),
            },
            ScannedFile {
                path: "j/bad.toml".into(),
                parsed: Parsed::Invalid {
                    error: ConfigError::new(
                        Path::new("j/bad.toml"),
                        Some(4),
                        "seeds[0]",
                        "not a URL",
                    ),
                    name: None,
                },
            },
        ]);
        t.report("alpha", 1, RunReport::Started);
        t.report(
            "beta",
            1,
            RunReport::Finished(Ok(Some(StopReason::RequestBudget))),
        );
        {
            let e = t.get("alpha").unwrap();
            let mut l = e.live.lock();
            l.counters.requests = 1234;
            l.counters.heads = 56;
            l.counters.targets = 7;
            l.counters.bytes = 3 << 20;
            l.stats.classifier_predictions = 10;
            l.stats.classifier_correct = 9;
            l.stats.top_actions = (0..5)
                .map(|i| ActionReport {
                    id: i,
                    tag_path: format!("/html/body/a{i}"),
                    ..Default::default()
                })
                .collect();
        }
        t
    }

    fn info() -> DaemonInfo {
        DaemonInfo::for_tests(4)
    }

    #[test]
    fn json_shape_is_stable() {
        let r = build(&table(), &info(), Instant::now());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["running"], 1);
        assert_eq!(v["max_jobs"], 4);
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 2);
        let a = &jobs[0];
        assert_eq!(a["name"], "alpha");
        assert_eq!(a["state"], "running");
        assert_eq!(a["counters"]["requests"], 1234);
        assert_eq!(a["counters"]["heads"], 56);
        assert_eq!(a["counters"]["targets"], 7);
        assert_eq!(a["classifier_accuracy"], 0.9);
        assert_eq!(
            a["top_actions"].as_array().unwrap().len(),
            STATUS_TOP_ACTIONS
        );
        assert_eq!(a["file"], "j/a.toml");
        let b = &jobs[1];
        assert_eq!(b["state"], "done");
        assert_eq!(b["stop_reason"], "request_budget");
        assert_eq!(b["detail"], "request budget reached");
        let errors = v["config_errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0]["line"], 4);
        assert_eq!(errors[0]["message"], "j/bad.toml:4: seeds[0]: not a URL");
        // The client decodes what the server encodes.
        let back: StatusReport = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn the_table_has_a_row_per_job_and_lists_bad_files() {
        let r = build(&table(), &info(), Instant::now());
        let text = format_status(&r);
        let lines: Vec<&str> = text.lines().collect();
        let header = lines.iter().position(|l| l.starts_with("JOB")).unwrap();
        assert!(lines[header + 1].starts_with("alpha"), "{text}");
        assert!(lines[header + 1].contains("running"));
        assert!(lines[header + 1].contains("1234"));
        assert!(lines[header + 1].contains("3.0 MiB"));
        assert!(lines[header + 1].contains("90%"));
        assert!(lines[header + 2].contains("request budget reached"));
        assert!(text.contains("j/bad.toml:4: seeds[0]: not a URL"), "{text}");
        // Columns line up: STATE starts at the same place on every row.
        let col = lines[header].find("STATE").unwrap();
        assert_eq!(&lines[header + 1][col..col + 7], "running");
        assert_eq!(&lines[header + 2][col..col + 4], "done");
    }

    #[test]
    fn a_paused_job_reads_paused_with_its_error_until_it_resumes() {
        let t = table();
        let disk_full = "writing checkpoint: No space left on device (os error 28)";
        t.get("alpha").unwrap().live.lock().on_paused(disk_full);
        let r = build(&t, &info(), Instant::now());
        assert_eq!((r.running, r.paused), (0, 1));
        let a = &r.jobs[0];
        assert_eq!(a.state, Phase::Paused);
        assert_eq!(a.last_error.as_deref(), Some(disk_full));
        assert!(a.paused_since.is_some());
        assert!(
            a.detail.as_deref().unwrap().contains("No space left"),
            "{a:?}"
        );
        let v = serde_json::to_value(a).unwrap();
        assert_eq!(v["state"], "paused");
        let text = format_status(&r);
        assert!(text.contains("0 running, 1 paused, 0 waiting"), "{text}");
        let row = text.lines().find(|l| l.starts_with("alpha")).unwrap();
        assert!(
            row.contains("paused") && row.contains("No space left"),
            "{row}"
        );
        // The table's own state is not touched: a finished job is never shown paused.
        let b = &r.jobs[1];
        assert_eq!(b.state, Phase::Done);

        t.get("alpha").unwrap().live.lock().on_resumed();
        let r = build(&t, &info(), Instant::now());
        let a = &r.jobs[0];
        assert_eq!(a.state, Phase::Running);
        assert_eq!((r.running, r.paused), (1, 0));
        assert_eq!(a.paused_since, None);
        assert_eq!(a.detail, None);
        // last_error is the last error seen, kept after the pause ends.
        assert_eq!(a.last_error.as_deref(), Some(disk_full));
    }

    #[test]
    fn a_stopping_job_that_cannot_write_stays_stopping() {
        let mut t = table();
        t.get("alpha")
            .unwrap()
            .live
            .lock()
            .on_paused("No space left on device");
        t.begin_shutdown();
        let r = build(&t, &info(), Instant::now());
        let a = &r.jobs[0];
        assert_eq!(a.state, Phase::Stopping);
        assert!(a
            .detail
            .as_deref()
            .unwrap()
            .contains("cannot be written yet"));
        assert!(a.paused_since.is_some());
    }

    #[test]
    fn only_a_fetching_job_has_a_rate_and_every_job_its_frontier() {
        let t = table();
        let now = Instant::now();
        for name in ["alpha", "beta"] {
            let mut l = t.get(name).unwrap().live.lock();
            for i in 0..10 {
                l.rate.record(now - Duration::from_millis(100 * (10 - i)));
            }
            l.frontier = Some(42);
        }
        let r = build(&t, &info(), now);
        let alpha = r.jobs.iter().find(|j| j.name == "alpha").unwrap();
        let beta = r.jobs.iter().find(|j| j.name == "beta").unwrap();
        assert!(alpha.request_rate_per_min > 0.0);
        assert_eq!(alpha.frontier, Some(42));
        assert_eq!(beta.state, Phase::Done);
        assert_eq!(beta.request_rate_per_min, 0.0, "finished: no rate");
        assert_eq!(r.request_rate_per_min, alpha.request_rate_per_min);
        let text = format_status(&r);
        assert!(text.contains("FRONTIER"), "{text}");
    }

    #[test]
    fn no_jobs_is_a_plain_zero_rate() {
        let r = build(&JobTable::new(), &info(), Instant::now());
        assert!(r.jobs.is_empty());
        assert!(r.request_rate_per_min.is_sign_positive());
        assert!(
            format_status(&r).contains(" 0 req/min"),
            "{}",
            format_status(&r)
        );
        assert!(format_status(&r).contains("no jobs"));
    }

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(20 << 30), "20 GiB");
        assert_eq!(human_duration(59), "59s");
        assert_eq!(human_duration(3661), "1h 1m");
        assert_eq!(human_duration(90_000), "1d 1h");
    }
}
