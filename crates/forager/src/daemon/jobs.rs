//! The job table: which job file declares which job, what each job is doing,
//! and what must happen next.
//!
//! Pure bookkeeping: it never reads files, spawns tasks or touches the store.
//! The supervisor feeds it whole-directory scans ([`JobTable::reconcile`]) and
//! runner reports ([`JobTable::report`]), and carries out the [`Action`]s it
//! returns. Every run of a job has a generation number, so a late report from
//! a run that was replaced (its file was edited) cannot overwrite the state of
//! the run that replaced it.
//!
//! A job's identity is its `name` field, not its file name. When two files
//! declare the same name, the file that already owns the job keeps it (else
//! the first in path order) and the other is reported as an error.

use super::live::LiveJob;
use crate::store::StopReason;
use forager_core::config::{ConfigError, JobSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// One job file as the latest scan read it.
#[derive(Clone, Debug)]
pub struct ScannedFile {
    pub path: PathBuf,
    pub parsed: Parsed,
}

/// What a job file says.
#[derive(Clone, Debug)]
pub enum Parsed {
    /// Boxed: a spec is large next to the error.
    Valid(Box<JobSpec>),
    /// Refused; `name` is the job it declares, when that much could be read.
    Invalid {
        error: ConfigError,
        name: Option<String>,
    },
}

/// Why a job that did not finish is not running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCause {
    /// Its job file was removed (or now declares another name).
    FileRemoved,
    /// The daemon is shutting down.
    Shutdown,
    /// The store holds state for it but no job file declares it.
    NoJobFile,
    /// Its runner stopped without being asked to (should not happen; reported rather than hidden).
    Interrupted,
}

impl StopCause {
    pub fn as_str(self) -> &'static str {
        match self {
            StopCause::FileRemoved => "job file removed; state kept until `forager purge`",
            StopCause::Shutdown => "daemon stopping; resumes at next start",
            StopCause::NoJobFile => "no job file declares it; state kept until `forager purge`",
            StopCause::Interrupted => "runner stopped unexpectedly",
        }
    }
}

/// What a job is doing.
#[derive(Clone, Debug, PartialEq)]
pub enum JobState {
    /// Waiting for a free slot (`max_jobs`), or for its previous run to checkpoint and exit.
    Pending,
    Running,
    /// Asked to stop; its runner is writing its last checkpoint.
    Stopping,
    /// Finished by itself: frontier empty, budget spent or early stop.
    Done {
        reason: StopReason,
    },
    /// Could not start or crashed; retried when its file changes.
    Failed {
        error: String,
    },
    /// Not running and not finished; its state is kept.
    Stopped {
        cause: StopCause,
    },
    /// Its file was never valid in this daemon's life, so there is nothing to run.
    Invalid,
    /// A person paused it (`forager pause`): its runner checkpointed and
    /// stopped, and it stays so — across daemon restarts too — until
    /// `forager resume` (or `rerun`, or `purge`).
    Paused {
        since: SystemTime,
    },
}

/// The name of a [`JobState`] without its payload, as the status API spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Pending,
    Running,
    /// Paused by a person (`forager pause`; the table's [`JobState::Paused`]),
    /// or running but unable to write its state or targets (disk full) while
    /// the engine retries: that one is reported by the job's runner, and
    /// [`super::report::job_status`] derives it from the live numbers.
    Paused,
    Stopping,
    Done,
    Failed,
    Stopped,
    Invalid,
}

impl Phase {
    pub const ALL: [Phase; 8] = [
        Phase::Pending,
        Phase::Running,
        Phase::Paused,
        Phase::Stopping,
        Phase::Done,
        Phase::Failed,
        Phase::Stopped,
        Phase::Invalid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "pending",
            Phase::Running => "running",
            Phase::Paused => "paused",
            Phase::Stopping => "stopping",
            Phase::Done => "done",
            Phase::Failed => "failed",
            Phase::Stopped => "stopped",
            Phase::Invalid => "invalid",
        }
    }
}

impl JobState {
    pub fn phase(&self) -> Phase {
        match self {
            JobState::Pending => Phase::Pending,
            JobState::Running => Phase::Running,
            JobState::Stopping => Phase::Stopping,
            JobState::Done { .. } => Phase::Done,
            JobState::Failed { .. } => Phase::Failed,
            JobState::Stopped { .. } => Phase::Stopped,
            JobState::Paused { .. } => Phase::Paused,
            JobState::Invalid => Phase::Invalid,
        }
    }

    /// Whether a runner task exists (or is about to) for this job.
    pub fn is_active(&self) -> bool {
        matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Stopping
        )
    }
}

/// One job of the table.
#[derive(Debug)]
pub struct JobEntry {
    pub name: String,
    /// The job file that declares it; `None` once removed.
    pub file: Option<PathBuf>,
    /// The last valid version of its file.
    pub spec: Option<JobSpec>,
    pub state: JobState,
    /// Its file as it is now does not parse; the last valid version is what runs.
    pub config_error: Option<ConfigError>,
    /// Bumped at every start; runner reports carry it.
    pub generation: u64,
    /// The store may hold state for it (it ran, or state was found at start-up).
    pub stored: bool,
    /// Counters and rates, updated by its runner.
    pub live: Arc<LiveJob>,
    /// When its current run got a slot (picks the jobs a lowered `max_jobs` sends back to wait).
    pub started: Option<Instant>,
    /// Sent back to wait for a slot because `max_jobs` was lowered; cleared when it runs again.
    pub requeued: bool,
}

impl JobEntry {
    fn new(name: &str) -> Self {
        JobEntry {
            name: name.to_string(),
            file: None,
            spec: None,
            state: JobState::Invalid,
            config_error: None,
            generation: 0,
            stored: false,
            live: Arc::new(LiveJob::default()),
            started: None,
            requeued: false,
        }
    }
}

/// What the supervisor must do after a table change.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Run `spec` as generation `generation`. A runner of an earlier generation
    /// of this job must be stopped first and must have exited before this one starts.
    Start {
        name: String,
        spec: Box<JobSpec>,
        generation: u64,
    },
    /// Stop the job's runner (it checkpoints on the way out).
    Stop { name: String },
}

/// What a runner task tells the table.
#[derive(Clone, Debug, PartialEq)]
pub enum RunReport {
    /// It got a slot and is crawling.
    Started,
    /// It ended: `Ok(Some)` finished, `Ok(None)` stopped on request, `Err` failed.
    Finished(Result<Option<StopReason>, String>),
}

/// Why a purge is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PurgeRefused {
    #[error("no job named {0:?}")]
    NotFound(String),
    #[error("job {name:?} is {phase}: remove its job file (or wait until it is done) before purging it", phase = .phase.as_str())]
    Active { name: String, phase: Phase },
}

/// Why `pause`, `resume` or `rerun` is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DriveRefused {
    #[error("no job named {0:?}")]
    NotFound(String),
    /// The job is not in a state the command applies to; the text says why and what to do.
    #[error("{0}")]
    Conflict(String),
}

/// The job table.
#[derive(Debug, Default)]
pub struct JobTable {
    jobs: BTreeMap<String, JobEntry>,
    /// Every job file the last scan refused, with why (invalid, or a duplicate name).
    file_errors: BTreeMap<PathBuf, FileProblem>,
    shutting_down: bool,
}

/// A refused job file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileProblem {
    pub error: ConfigError,
    /// The job it belongs to, when known.
    pub job: Option<String>,
}

impl JobTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, name: &str) -> Option<&JobEntry> {
        self.jobs.get(name)
    }

    /// Every job, by name.
    pub fn jobs(&self) -> impl Iterator<Item = &JobEntry> {
        self.jobs.values()
    }

    /// Every refused job file, by path.
    pub fn file_errors(&self) -> impl Iterator<Item = (&Path, &FileProblem)> {
        self.file_errors.iter().map(|(p, e)| (p.as_path(), e))
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// How many jobs are in `phase`.
    pub fn count(&self, phase: Phase) -> usize {
        self.jobs
            .values()
            .filter(|e| e.state.phase() == phase)
            .count()
    }

    /// Record a job the store holds state for (call before the first reconcile):
    /// it shows as stopped until a job file declares it.
    pub fn add_stored(&mut self, name: &str) {
        let e = self
            .jobs
            .entry(name.to_string())
            .or_insert_with(|| JobEntry::new(name));
        e.stored = true;
        if e.spec.is_none() && e.file.is_none() {
            e.state = JobState::Stopped {
                cause: StopCause::NoJobFile,
            };
        }
    }

    /// Bring the table in line with the job files found by a full scan of the
    /// jobs folder; returns what to start and stop.
    pub fn reconcile(&mut self, mut files: Vec<ScannedFile>) -> Vec<Action> {
        if self.shutting_down {
            return Vec::new();
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut file_errors = BTreeMap::new();
        // Job name → the files declaring it, in path order.
        let mut claims: BTreeMap<String, Vec<ScannedFile>> = BTreeMap::new();
        for f in files {
            let name = match &f.parsed {
                Parsed::Valid(spec) => Some(spec.name.clone()),
                // A broken edit belongs to the job its file declared until now,
                // whatever (if anything) it declares today.
                Parsed::Invalid { name, .. } => self.owner_of(&f.path).or_else(|| name.clone()),
            };
            match name {
                Some(name) => claims.entry(name).or_default().push(f),
                None => {
                    if let Parsed::Invalid { error, .. } = f.parsed {
                        file_errors.insert(f.path, FileProblem { error, job: None });
                    }
                }
            }
        }
        let mut actions = Vec::new();
        let unclaimed: Vec<String> = self
            .jobs
            .values()
            .filter(|e| e.file.is_some() && !claims.contains_key(&e.name))
            .map(|e| e.name.clone())
            .collect();
        for name in unclaimed {
            actions.extend(self.file_gone(&name));
        }
        for (name, mut claimants) in claims {
            let current = self.jobs.get(&name).and_then(|e| e.file.clone());
            let owner_at = claimants
                .iter()
                .position(|f| Some(&f.path) == current.as_ref())
                .unwrap_or(0);
            let owner = claimants.remove(owner_at);
            for other in claimants {
                let error = match other.parsed {
                    Parsed::Invalid { error, .. } => error,
                    Parsed::Valid(_) => ConfigError::new(
                        &other.path,
                        None,
                        "name",
                        format!(
                            "job {name:?} is already declared by {}; this file is ignored \
                             until that one is removed or renames its job",
                            owner.path.display()
                        ),
                    ),
                };
                file_errors.insert(
                    other.path,
                    FileProblem {
                        error,
                        job: Some(name.clone()),
                    },
                );
            }
            if let Parsed::Invalid { error, .. } = &owner.parsed {
                file_errors.insert(
                    owner.path.clone(),
                    FileProblem {
                        error: error.clone(),
                        job: Some(name.clone()),
                    },
                );
            }
            actions.extend(self.apply(&name, owner));
        }
        self.file_errors = file_errors;
        actions
    }

    /// The job whose file is `path`, if any.
    fn owner_of(&self, path: &Path) -> Option<String> {
        self.jobs
            .values()
            .find(|e| e.file.as_deref() == Some(path))
            .map(|e| e.name.clone())
    }

    /// A file now declares job `name`.
    fn apply(&mut self, name: &str, owner: ScannedFile) -> Option<Action> {
        let e = self
            .jobs
            .entry(name.to_string())
            .or_insert_with(|| JobEntry::new(name));
        e.file = Some(owner.path);
        match owner.parsed {
            Parsed::Valid(spec) => {
                e.config_error = None;
                let spec = *spec;
                let changed = e.spec.as_ref() != Some(&spec);
                e.spec = Some(spec);
                let start = match e.state {
                    JobState::Pending | JobState::Running => changed,
                    JobState::Done { .. } | JobState::Failed { .. } => changed,
                    // A person paused it: an edit applies when it is resumed.
                    JobState::Paused { .. } => false,
                    // Stopping: its file came back before its runner exited.
                    JobState::Stopping | JobState::Stopped { .. } | JobState::Invalid => true,
                };
                start.then(|| self.start(name)).flatten()
            }
            Parsed::Invalid { error, .. } => {
                e.config_error = Some(error);
                if e.spec.is_none() {
                    e.state = JobState::Invalid;
                }
                None
            }
        }
    }

    /// No file declares job `name` any more.
    fn file_gone(&mut self, name: &str) -> Option<Action> {
        let e = self.jobs.get_mut(name)?;
        e.file = None;
        e.config_error = None;
        match e.state {
            JobState::Pending | JobState::Running | JobState::Stopping => {
                e.state = JobState::Stopping;
                Some(Action::Stop {
                    name: name.to_string(),
                })
            }
            JobState::Invalid if e.stored => {
                e.state = JobState::Stopped {
                    cause: StopCause::NoJobFile,
                };
                None
            }
            JobState::Invalid => {
                self.jobs.remove(name);
                None
            }
            JobState::Done { .. }
            | JobState::Failed { .. }
            | JobState::Stopped { .. }
            | JobState::Paused { .. } => None,
        }
    }

    fn start(&mut self, name: &str) -> Option<Action> {
        let e = self.jobs.get_mut(name)?;
        let spec = e.spec.clone()?;
        e.generation += 1;
        e.state = JobState::Pending;
        Some(Action::Start {
            name: name.to_string(),
            spec: Box::new(spec),
            generation: e.generation,
        })
    }

    /// A runner task's news; ignored unless it comes from the job's current generation.
    pub fn report(&mut self, name: &str, generation: u64, report: RunReport) {
        let shutting_down = self.shutting_down;
        let Some(e) = self.jobs.get_mut(name) else {
            return;
        };
        if e.generation != generation {
            return;
        }
        if let JobState::Paused { .. } = e.state {
            // The run a pause stopped: its last words do not unpause the job,
            // unless it failed (then the failure is what a person must see).
            if let RunReport::Finished(Err(error)) = report {
                e.state = JobState::Failed { error };
            }
            return;
        }
        match report {
            RunReport::Started => {
                e.stored = true;
                e.started = Some(Instant::now());
                e.requeued = false;
                if e.state == JobState::Pending {
                    e.state = JobState::Running;
                }
            }
            RunReport::Finished(Ok(Some(reason))) => e.state = JobState::Done { reason },
            RunReport::Finished(Ok(None)) => {
                let cause = if shutting_down {
                    StopCause::Shutdown
                } else if e.file.is_none() {
                    StopCause::FileRemoved
                } else {
                    StopCause::Interrupted
                };
                e.state = JobState::Stopped { cause };
            }
            RunReport::Finished(Err(error)) => e.state = JobState::Failed { error },
        }
    }

    /// Record a job a person paused before the daemon last stopped (call before the first reconcile).
    pub fn add_paused(&mut self, name: &str, since: SystemTime) {
        let e = self
            .jobs
            .entry(name.to_string())
            .or_insert_with(|| JobEntry::new(name));
        e.stored = true;
        e.state = JobState::Paused { since };
    }

    /// `forager pause NAME`: a running or waiting job checkpoints and stops
    /// until it is resumed. Returns what to stop.
    pub fn pause(&mut self, name: &str, now: SystemTime) -> Result<Action, DriveRefused> {
        let e = self
            .jobs
            .get_mut(name)
            .ok_or_else(|| DriveRefused::NotFound(name.to_string()))?;
        match e.state {
            JobState::Running | JobState::Pending => {
                e.state = JobState::Paused { since: now };
                e.requeued = false;
                Ok(Action::Stop {
                    name: name.to_string(),
                })
            }
            JobState::Paused { .. } => Err(DriveRefused::Conflict(format!(
                "job {name:?} is already paused; `forager resume {name}` continues it"
            ))),
            ref other => Err(DriveRefused::Conflict(format!(
                "job {name:?} is {}, not running: only a running or waiting job can be paused",
                other.phase().as_str()
            ))),
        }
    }

    /// `forager resume NAME`: a paused job runs again from its checkpoint. Returns what to start.
    pub fn resume(&mut self, name: &str) -> Result<Action, DriveRefused> {
        let e = self
            .jobs
            .get(name)
            .ok_or_else(|| DriveRefused::NotFound(name.to_string()))?;
        match e.state {
            JobState::Paused { .. } => {}
            JobState::Running if e.live.lock().paused.is_some() => {
                return Err(DriveRefused::Conflict(format!(
                    "job {name:?} is paused because it cannot write its state or targets (disk full?);                      it resumes by itself as soon as it can"
                )))
            }
            ref other => {
                return Err(DriveRefused::Conflict(format!(
                    "job {name:?} is {}, not paused: only a job paused with `forager pause` can be resumed",
                    other.phase().as_str()
                )))
            }
        }
        self.runnable(name)?;
        if self.shutting_down {
            return Err(DriveRefused::Conflict("the daemon is stopping".into()));
        }
        self.start(name)
            .ok_or_else(|| DriveRefused::NotFound(name.to_string()))
    }

    /// Whether a valid job file declares job `name`, so that it can run.
    fn runnable(&self, name: &str) -> Result<(), DriveRefused> {
        let e = self
            .jobs
            .get(name)
            .ok_or_else(|| DriveRefused::NotFound(name.to_string()))?;
        if e.file.is_none() {
            return Err(DriveRefused::Conflict(format!(
                "no job file declares job {name:?} any more: put its file back in the jobs folder to run it"
            )));
        }
        if e.spec.is_none() {
            return Err(DriveRefused::Conflict(format!(
                "job {name:?}'s file is invalid: fix it first (see `forager status`)"
            )));
        }
        Ok(())
    }

    /// Whether job `name` may be run again from its seeds (`forager rerun`):
    /// it must have ended (done, stopped, failed) or be paused, and have a valid file.
    pub fn check_rerun(&self, name: &str) -> Result<(), DriveRefused> {
        let e = self
            .jobs
            .get(name)
            .ok_or_else(|| DriveRefused::NotFound(name.to_string()))?;
        match e.state {
            JobState::Done { .. }
            | JobState::Failed { .. }
            | JobState::Stopped { .. }
            | JobState::Paused { .. }
            | JobState::Invalid => {}
            ref other => {
                return Err(DriveRefused::Conflict(format!(
                    "job {name:?} is {}: pause it first (`forager pause {name}`) or wait until it is done",
                    other.phase().as_str()
                )))
            }
        }
        self.runnable(name)
    }

    /// `max_jobs` became `max_jobs`: the jobs that got their slot last, beyond
    /// that many, go back to waiting for one (each checkpoints first, and
    /// resumes exactly there). Returns what to start: a new run of each, which
    /// waits for its previous run to exit and then for a free slot.
    pub fn shrink(&mut self, max_jobs: usize) -> Vec<(String, Action)> {
        if self.shutting_down {
            return Vec::new();
        }
        let mut running: Vec<(Option<Instant>, String)> = self
            .jobs
            .values()
            .filter(|e| e.state == JobState::Running)
            .map(|e| (e.started, e.name.clone()))
            .collect();
        if running.len() <= max_jobs {
            return Vec::new();
        }
        // Newest first: the longest-running jobs keep their slots.
        running.sort_by(|a, b| b.cmp(a));
        let extra = running.len() - max_jobs;
        let mut out = Vec::new();
        for (_, name) in running.into_iter().take(extra) {
            if let Some(action) = self.start(&name) {
                if let Some(e) = self.jobs.get_mut(&name) {
                    e.requeued = true;
                }
                out.push((name, action));
            }
        }
        out
    }

    /// Stop everything for good: no job starts after this.
    pub fn begin_shutdown(&mut self) -> Vec<Action> {
        self.shutting_down = true;
        let mut actions = Vec::new();
        for e in self.jobs.values_mut() {
            if e.state.is_active() {
                e.state = JobState::Stopping;
                actions.push(Action::Stop {
                    name: e.name.clone(),
                });
            }
        }
        actions
    }

    /// Whether job `name` may be purged now.
    pub fn check_purge(&self, name: &str) -> Result<(), PurgeRefused> {
        let e = self
            .jobs
            .get(name)
            .ok_or_else(|| PurgeRefused::NotFound(name.to_string()))?;
        if e.state.is_active() {
            return Err(PurgeRefused::Active {
                name: name.to_string(),
                phase: e.state.phase(),
            });
        }
        Ok(())
    }

    /// Whether a valid job file still declares job `name`, so that
    /// [`JobTable::purged`] starts it again.
    pub fn restarts_after_purge(&self, name: &str) -> bool {
        self.jobs
            .get(name)
            .is_some_and(|e| e.file.is_some() && e.spec.is_some())
    }

    /// Job `name`'s stored state is gone: start it afresh if a file still
    /// declares it, else forget it.
    /// In a cluster, a job this node leases anew: an entry left from an
    /// earlier lease that ended (done, failed, stopped, its virtual file
    /// gone) is dropped, so that the lease's file starts a fresh run even
    /// with the same text (a rerun of a done job). Whether it was dropped.
    pub fn forget_idle(&mut self, name: &str) -> bool {
        let idle = self.jobs.get(name).is_some_and(|e| {
            e.file.is_none()
                && matches!(
                    e.state,
                    JobState::Done { .. } | JobState::Failed { .. } | JobState::Stopped { .. }
                )
        });
        if idle {
            self.jobs.remove(name);
        }
        idle
    }

    pub fn purged(&mut self, name: &str) -> Option<Action> {
        let e = self.jobs.get_mut(name)?;
        e.stored = false;
        e.live = Arc::new(LiveJob::default());
        e.requeued = false;
        if e.file.is_none() {
            self.jobs.remove(name);
            return None;
        }
        if e.spec.is_some() && !self.shutting_down {
            return self.start(name);
        }
        e.state = JobState::Invalid;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn spec(name: &str, requests: u64) -> JobSpec {
        let mut s = JobSpec::new(name, vec![Url::parse("http://a.test/").unwrap()]);
        s.budget.requests = requests;
        s
    }

    fn valid(path: &str, name: &str, requests: u64) -> ScannedFile {
        ScannedFile {
            path: PathBuf::from(path),
            parsed: Parsed::Valid(Box::new(spec(name, requests))),
        }
    }

    fn invalid(path: &str, name: Option<&str>) -> ScannedFile {
        ScannedFile {
            path: PathBuf::from(path),
            parsed: Parsed::Invalid {
                error: ConfigError::new(Path::new(path), Some(3), "budget.requests", "bad"),
                name: name.map(str::to_string),
            },
        }
    }

    fn started(actions: &[Action]) -> Vec<(&str, u64, u64)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Start {
                    name,
                    spec,
                    generation,
                } => Some((name.as_str(), spec.budget.requests, *generation)),
                Action::Stop { .. } => None,
            })
            .collect()
    }

    #[test]
    fn pause_resume_and_rerun_follow_the_state_and_say_why_not() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 5), valid("j/b.toml", "b", 5)]);
        t.report("a", 1, RunReport::Started);
        let now = SystemTime::now();
        assert_eq!(t.pause("a", now), Ok(Action::Stop { name: "a".into() }));
        assert_eq!(state(&t, "a"), JobState::Paused { since: now });
        // The stopped run's report does not unpause it; an edit does not restart it.
        t.report("a", 1, RunReport::Finished(Ok(None)));
        assert_eq!(state(&t, "a"), JobState::Paused { since: now });
        assert!(t
            .reconcile(vec![valid("j/a.toml", "a", 9), valid("j/b.toml", "b", 5)])
            .is_empty());
        let e = t.pause("a", now).unwrap_err().to_string();
        assert!(
            e.contains("already paused") && e.contains("forager resume a"),
            "{e}"
        );
        assert_eq!(t.pause("zz", now), Err(DriveRefused::NotFound("zz".into())));
        let e = t.resume("b").unwrap_err().to_string();
        assert!(e.contains("is pending, not paused"), "{e}");
        let e = t.check_rerun("b").unwrap_err().to_string();
        assert!(
            e.contains("is pending") && e.contains("forager pause b"),
            "{e}"
        );
        // Resumed with the edited file, as a new run.
        assert_eq!(started(&[t.resume("a").unwrap()]), vec![("a", 9, 2)]);
        assert_eq!(state(&t, "a"), JobState::Pending);
        t.report(
            "a",
            2,
            RunReport::Finished(Ok(Some(StopReason::FrontierEmpty))),
        );
        let e = t.pause("a", now).unwrap_err().to_string();
        assert!(e.contains("is done, not running"), "{e}");
        assert_eq!(t.check_rerun("a"), Ok(()));
        // Without its file a job can be neither resumed nor rerun.
        t.reconcile(vec![valid("j/b.toml", "b", 5)]);
        let e = t.check_rerun("a").unwrap_err().to_string();
        assert!(e.contains("no job file declares"), "{e}");
        // A pause found in the store holds over the first scan.
        let mut t = JobTable::new();
        t.add_paused("a", now);
        assert!(t.reconcile(vec![valid("j/a.toml", "a", 5)]).is_empty());
        assert_eq!(state(&t, "a"), JobState::Paused { since: now });
        assert_eq!(started(&[t.resume("a").unwrap()]), vec![("a", 5, 1)]);
    }

    #[test]
    fn a_lower_max_jobs_sends_the_newest_runs_back_to_wait() {
        let mut t = JobTable::new();
        t.reconcile(vec![
            valid("j/a.toml", "a", 5),
            valid("j/b.toml", "b", 5),
            valid("j/c.toml", "c", 5),
        ]);
        for name in ["a", "c", "b"] {
            t.report(name, 1, RunReport::Started);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(t.shrink(3).is_empty());
        let back = t.shrink(1);
        let names: Vec<&str> = back.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["b", "c"], "the newest two");
        assert_eq!(state(&t, "b"), JobState::Pending);
        assert!(t.get("b").unwrap().requeued);
        assert_eq!(state(&t, "a"), JobState::Running);
        // The old run's report is stale; the new one runs when it gets its slot.
        t.report("b", 1, RunReport::Finished(Ok(None)));
        assert_eq!(state(&t, "b"), JobState::Pending);
        t.report("b", 2, RunReport::Started);
        assert!(!t.get("b").unwrap().requeued);
    }

    fn stopped(actions: &[Action]) -> Vec<&str> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Stop { name } => Some(name.as_str()),
                Action::Start { .. } => None,
            })
            .collect()
    }

    fn state(t: &JobTable, name: &str) -> JobState {
        t.get(name).unwrap().state.clone()
    }

    #[test]
    fn new_files_start_jobs_and_reports_move_them_along() {
        let mut t = JobTable::new();
        let a = t.reconcile(vec![valid("j/b.toml", "b", 10), valid("j/a.toml", "a", 5)]);
        assert_eq!(started(&a), vec![("a", 5, 1), ("b", 10, 1)]);
        assert_eq!(state(&t, "a"), JobState::Pending);
        t.report("a", 1, RunReport::Started);
        assert_eq!(state(&t, "a"), JobState::Running);
        t.report(
            "a",
            1,
            RunReport::Finished(Ok(Some(StopReason::RequestBudget))),
        );
        assert_eq!(
            state(&t, "a"),
            JobState::Done {
                reason: StopReason::RequestBudget
            }
        );
        t.report("b", 1, RunReport::Finished(Err("boom".into())));
        assert_eq!(
            state(&t, "b"),
            JobState::Failed {
                error: "boom".into()
            }
        );
        assert_eq!(t.count(Phase::Done), 1);
        assert_eq!(t.count(Phase::Failed), 1);
    }

    #[test]
    fn an_unchanged_scan_does_nothing() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        t.report("a", 1, RunReport::Started);
        assert!(t.reconcile(vec![valid("j/a.toml", "a", 5)]).is_empty());
        assert_eq!(state(&t, "a"), JobState::Running);
    }

    #[test]
    fn an_edit_restarts_with_a_new_generation_and_stale_reports_are_ignored() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        t.report("a", 1, RunReport::Started);
        let a = t.reconcile(vec![valid("j/a.toml", "a", 50)]);
        assert_eq!(started(&a), vec![("a", 50, 2)]);
        // The old run's last words must not overwrite the new run's state.
        t.report("a", 1, RunReport::Finished(Ok(None)));
        assert_eq!(state(&t, "a"), JobState::Pending);
        t.report("a", 2, RunReport::Started);
        assert_eq!(state(&t, "a"), JobState::Running);
    }

    #[test]
    fn a_done_job_restarts_only_when_its_file_changes() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        t.report(
            "a",
            1,
            RunReport::Finished(Ok(Some(StopReason::RequestBudget))),
        );
        assert!(t.reconcile(vec![valid("j/a.toml", "a", 5)]).is_empty());
        let a = t.reconcile(vec![valid("j/a.toml", "a", 500)]);
        assert_eq!(started(&a), vec![("a", 500, 2)]);
    }

    #[test]
    fn a_failed_job_is_retried_when_its_file_changes() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        t.report("a", 1, RunReport::Finished(Err("strategy changed".into())));
        assert!(t.reconcile(vec![valid("j/a.toml", "a", 5)]).is_empty());
        assert_eq!(
            started(&t.reconcile(vec![valid("j/a.toml", "a", 6)])).len(),
            1
        );
    }

    #[test]
    fn a_removed_file_stops_the_job_and_keeps_it_listed() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        t.report("a", 1, RunReport::Started);
        let a = t.reconcile(vec![]);
        assert_eq!(stopped(&a), vec!["a"]);
        assert_eq!(state(&t, "a"), JobState::Stopping);
        t.report("a", 1, RunReport::Finished(Ok(None)));
        assert_eq!(
            state(&t, "a"),
            JobState::Stopped {
                cause: StopCause::FileRemoved
            }
        );
        assert!(t.get("a").unwrap().file.is_none());
        // Put back: it starts again.
        let a = t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        assert_eq!(started(&a), vec![("a", 5, 2)]);
    }

    #[test]
    fn a_file_back_before_its_runner_exited_starts_a_new_run() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        t.report("a", 1, RunReport::Started);
        t.reconcile(vec![]);
        let a = t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        assert_eq!(started(&a), vec![("a", 5, 2)]);
        t.report("a", 1, RunReport::Finished(Ok(None)));
        assert_eq!(state(&t, "a"), JobState::Pending);
    }

    #[test]
    fn an_invalid_edit_keeps_the_last_valid_version_running() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 5)]);
        t.report("a", 1, RunReport::Started);
        // A syntax error: the name cannot be read, but the path says whose file it is.
        let a = t.reconcile(vec![invalid("j/a.toml", None)]);
        assert!(a.is_empty(), "{a:?}");
        let e = t.get("a").unwrap();
        assert_eq!(e.state, JobState::Running);
        assert_eq!(e.spec.as_ref().unwrap().budget.requests, 5);
        assert_eq!(e.config_error.as_ref().unwrap().line, Some(3));
        let errors: Vec<_> = t.file_errors().collect();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].1.job.as_deref(), Some("a"));
        // Fixed with the same content as before: nothing to restart, the error is gone.
        assert!(t.reconcile(vec![valid("j/a.toml", "a", 5)]).is_empty());
        assert!(t.get("a").unwrap().config_error.is_none());
        assert_eq!(t.file_errors().count(), 0);
    }

    #[test]
    fn an_invalid_new_file_is_reported_and_runs_nothing() {
        let mut t = JobTable::new();
        let a = t.reconcile(vec![
            invalid("j/x.toml", None),
            invalid("j/y.toml", Some("y")),
        ]);
        assert!(a.is_empty());
        assert!(t.get("x").is_none());
        assert_eq!(state(&t, "y"), JobState::Invalid);
        assert_eq!(t.file_errors().count(), 2);
        // Fixed: it starts.
        let a = t.reconcile(vec![valid("j/y.toml", "y", 1)]);
        assert_eq!(started(&a), vec![("y", 1, 1)]);
        assert_eq!(t.file_errors().count(), 0);
        // An invalid job with no stored state disappears with its file.
        t.reconcile(vec![
            valid("j/y.toml", "y", 1),
            invalid("j/z.toml", Some("z")),
        ]);
        assert!(t.get("z").is_some());
        t.reconcile(vec![valid("j/y.toml", "y", 1)]);
        assert!(t.get("z").is_none());
    }

    #[test]
    fn a_second_file_with_the_same_name_is_an_error_until_the_first_goes() {
        let mut t = JobTable::new();
        let a = t.reconcile(vec![
            valid("j/b.toml", "dup", 2),
            valid("j/a.toml", "dup", 1),
        ]);
        // Path order decides on the first scan.
        assert_eq!(started(&a), vec![("dup", 1, 1)]);
        let errors: Vec<_> = t.file_errors().collect();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].0, Path::new("j/b.toml"));
        assert!(
            errors[0].1.error.reason.contains("j/a.toml"),
            "{:?}",
            errors[0]
        );
        // The owner keeps the job even when a file sorting before it appears.
        let a = t.reconcile(vec![
            valid("j/0.toml", "dup", 9),
            valid("j/a.toml", "dup", 1),
            valid("j/b.toml", "dup", 2),
        ]);
        assert!(a.is_empty(), "{a:?}");
        assert_eq!(t.file_errors().count(), 2);
        // The owner goes: the next file in path order takes over (a changed spec: restart).
        let a = t.reconcile(vec![
            valid("j/0.toml", "dup", 9),
            valid("j/b.toml", "dup", 2),
        ]);
        assert_eq!(started(&a), vec![("dup", 9, 2)]);
        assert_eq!(
            t.get("dup").unwrap().file.as_deref(),
            Some(Path::new("j/0.toml"))
        );
    }

    #[test]
    fn renaming_a_job_in_its_file_stops_the_old_name_and_starts_the_new() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "old", 1)]);
        t.report("old", 1, RunReport::Started);
        let a = t.reconcile(vec![valid("j/a.toml", "new", 1)]);
        assert_eq!(stopped(&a), vec!["old"]);
        assert_eq!(started(&a), vec![("new", 1, 1)]);
    }

    #[test]
    fn moving_a_file_keeps_the_job_running() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 1)]);
        t.report("a", 1, RunReport::Started);
        let a = t.reconcile(vec![valid("j/renamed.toml", "a", 1)]);
        assert!(a.is_empty(), "{a:?}");
        assert_eq!(
            t.get("a").unwrap().file.as_deref(),
            Some(Path::new("j/renamed.toml"))
        );
    }

    #[test]
    fn stored_jobs_without_files_are_listed_as_stopped() {
        let mut t = JobTable::new();
        t.add_stored("old");
        t.add_stored("a");
        let a = t.reconcile(vec![valid("j/a.toml", "a", 1)]);
        assert_eq!(started(&a), vec![("a", 1, 1)]);
        assert_eq!(
            state(&t, "old"),
            JobState::Stopped {
                cause: StopCause::NoJobFile
            }
        );
        // An invalid file for a stored job shows as invalid, and back to stopped when it goes.
        t.reconcile(vec![
            valid("j/a.toml", "a", 1),
            invalid("j/old.toml", Some("old")),
        ]);
        assert_eq!(state(&t, "old"), JobState::Invalid);
        t.reconcile(vec![valid("j/a.toml", "a", 1)]);
        assert_eq!(
            state(&t, "old"),
            JobState::Stopped {
                cause: StopCause::NoJobFile
            }
        );
    }

    #[test]
    fn shutdown_stops_every_active_job_and_blocks_new_starts() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 1), valid("j/b.toml", "b", 1)]);
        t.report("a", 1, RunReport::Started);
        t.report(
            "b",
            1,
            RunReport::Finished(Ok(Some(StopReason::FrontierEmpty))),
        );
        let a = t.begin_shutdown();
        assert_eq!(stopped(&a), vec!["a"]);
        assert!(t.reconcile(vec![valid("j/c.toml", "c", 1)]).is_empty());
        t.report("a", 1, RunReport::Finished(Ok(None)));
        assert_eq!(
            state(&t, "a"),
            JobState::Stopped {
                cause: StopCause::Shutdown
            }
        );
        assert_eq!(
            state(&t, "b"),
            JobState::Done {
                reason: StopReason::FrontierEmpty
            }
        );
    }

    #[test]
    fn purge_is_refused_while_active_and_restarts_a_declared_job() {
        let mut t = JobTable::new();
        t.reconcile(vec![valid("j/a.toml", "a", 1)]);
        t.report("a", 1, RunReport::Started);
        assert!(matches!(
            t.check_purge("a"),
            Err(PurgeRefused::Active {
                phase: Phase::Running,
                ..
            })
        ));
        assert_eq!(
            t.check_purge("zz"),
            Err(PurgeRefused::NotFound("zz".into()))
        );
        t.report("a", 1, RunReport::Finished(Err("strategy changed".into())));
        assert_eq!(t.check_purge("a"), Ok(()));
        let a = t.purged("a");
        assert_eq!(
            a,
            Some(Action::Start {
                name: "a".into(),
                spec: Box::new(spec("a", 1)),
                generation: 2
            })
        );
        // A job without a file is forgotten.
        t.report("a", 2, RunReport::Started);
        t.reconcile(vec![]);
        t.report("a", 2, RunReport::Finished(Ok(None)));
        assert_eq!(t.check_purge("a"), Ok(()));
        assert_eq!(t.purged("a"), None);
        assert!(t.get("a").is_none());
    }
}
