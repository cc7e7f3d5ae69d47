//! What a running job tells the outside: one event per request, and a live
//! status snapshot. The bench records traces from the events, the CLI drives a
//! progress bar, the daemon serves the snapshot.

use crate::store::{CommitReport, JobCounters, StopReason};
use forager_core::mime::Label;
use forager_core::strategy::StrategyStats;
use serde::Serialize;
use std::time::Duration;
use url::Url;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestKind {
    Get,
    Head,
}

/// One GET or HEAD the job made (each redirect hop is one).
#[derive(Debug)]
pub struct RequestEvent<'a> {
    pub kind: RequestKind,
    pub url: &'a Url,
    /// `None` when the request failed before a status line.
    pub status: Option<u16>,
    /// Body bytes read (0 for HEAD and unread bodies).
    pub bytes: u64,
    pub label: Option<Label>,
    /// A new target was saved by this request.
    pub saved_target: bool,
    /// From sending the request to its headers; `None` when it failed before them.
    pub latency: Option<Duration>,
    pub counters: &'a JobCounters,
    /// Links waiting in the frontier after this request (retries included).
    pub frontier: u64,
}

/// Receives a job's events; every method has a no-op default.
pub trait CrawlObserver: Send {
    fn request(&mut self, _event: &RequestEvent<'_>) {}
    /// Called after each committed checkpoint.
    fn checkpoint(
        &mut self,
        _counters: &JobCounters,
        _stats: &StrategyStats,
        _commit: &CommitReport,
    ) {
    }
    /// The job stopped fetching because its state or targets could not be
    /// written (disk full, I/O error); it retries and calls [`resumed`](Self::resumed).
    fn paused(&mut self, _error: &str) {}
    fn resumed(&mut self) {}
    /// A continuous job has nothing to fetch and waits for its next revisit,
    /// due at `next_due`; `None` when it works again.
    fn waiting(&mut self, _next_due: Option<std::time::SystemTime>) {}
    /// The job has nothing to do but wait for an origin held back (its
    /// robots.txt unavailable, its failures backed off); `None` when it
    /// works again.
    fn waiting_for_origin(&mut self, _wait: Option<&OriginWait>) {}
    /// A robots.txt fetch of this job failed (it was logged with its URL
    /// and error): the origin's links wait for the next try.
    fn robots_failed(&mut self, _origin: &str) {}
    /// The job's poison list holds `documents` URLs whose bodies are not
    /// read again (they crashed the process twice or blew their parse
    /// budget): called once when the run starts and again whenever a
    /// document is added.
    fn poison_list(&mut self, _documents: u64) {}
    fn finished(&mut self, _counters: &JobCounters, _stop: Option<StopReason>) {}
    /// Whether the run may still write the job's `manifest.jsonl`, which
    /// another process may own now: a cluster node whose lease may have
    /// lapsed (paused past it) must leave the file to the job's new node.
    /// The store's commit is this node's own and goes on either way.
    fn may_write_manifest(&self) -> bool {
        true
    }
}

/// What a job that is only waiting waits for: an origin, until a time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OriginWait {
    /// `scheme://host:port`.
    pub origin: String,
    pub until: std::time::SystemTime,
}

impl std::fmt::Display for OriginWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "waiting for {} until {}",
            self.origin,
            humantime::format_rfc3339_seconds(self.until)
        )
    }
}

/// Observes nothing.
pub struct NoObserver;
impl CrawlObserver for NoObserver {}

/// A job's state as the status API shows it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LiveStatus {
    pub counters: JobCounters,
    pub stats: StrategyStats,
    pub stop: Option<StopReason>,
    pub frontier: u64,
    pub last_error: Option<String>,
}
