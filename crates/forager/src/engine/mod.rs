//! The job runner: the crawl loop of ARCHITECTURE.md § Crawl loop, shared by `forager crawl`, the
//! daemon and the benchmark.
//!
//! Owns: one job's in-memory state (link records, seen set, counters), the
//! order of operations of a crawl step, budgets, and checkpoints (it builds
//! the deltas the store commits). Must not own: HTTP details ([`crate::fetch`]),
//! HTML parsing ([`forager_core::extract`]), crawl policy ([`forager_core::strategy`]) or
//! storage layout ([`crate::store`]) — it calls them.
//!
//! A job keeps up to `politeness.max_in_flight` steps in flight, never two on
//! one politeness key; its bookkeeping is the I/O-free [`JobCore`] (`core.rs`,
//! with its invariants), the async [`Runner`] only drives it. With one step in
//! flight a crawl is a pure function of its seed and the site.

mod explain;
pub mod filters;
mod lanes;
mod observer;
pub mod parse_budget;
pub mod prior;
mod robots_cache;
mod runner;

pub use explain::explain;
pub use forager_core::job::{
    replay, Admitted, HeadAnswer, JobCore, PageAdmission, RetryVerdict, StepTally,
};
pub use observer::{CrawlObserver, LiveStatus, NoObserver, OriginWait, RequestEvent, RequestKind};
pub use parse_budget::{ParseBudget, ParseLease};
pub use runner::{JobOutcome, Runner};

use crate::fetch::Fetcher;
use crate::store::Store;
use forager_core::learn::{MimeFilterConfig, MimeFilters};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What every job of a process shares.
#[derive(Clone)]
pub struct Engine {
    pub fetcher: Fetcher,
    pub store: Store,
    /// The MIME Bloom filters: what any job learned of a URL's type, for all jobs.
    pub filters: Arc<Mutex<MimeFilters>>,
    pub state_dir: PathBuf,
    pub checkpoint_interval: Duration,
    /// Which robots.txt copies the store already holds.
    robots: Arc<robots_cache::PersistedRobots>,
    /// When a checkpoint last carried the process-wide state.
    shared_staged_at: Arc<Mutex<Instant>>,
    /// What documents being parsed may hold at once, across all jobs
    /// ([`forager_core::config::DEFAULT_PARSE_MEMORY`] unless the daemon's
    /// `parse_memory` says otherwise).
    pub parse_budget: ParseBudget,
}

/// How to open an [`Engine`].
pub struct EngineConfig {
    pub state_dir: PathBuf,
    pub fetch: crate::fetch::FetchConfig,
    pub checkpoint_interval: Duration,
    /// redb page cache.
    pub cache_bytes: usize,
}

impl Engine {
    /// Open the state database under `state_dir` and build the shared HTTP client.
    pub fn open(config: EngineConfig) -> anyhow::Result<Engine> {
        use anyhow::Context;
        std::fs::create_dir_all(&config.state_dir)
            .with_context(|| format!("creating state directory {}", config.state_dir.display()))?;
        let store = Store::open(&config.state_dir, config.cache_bytes)?;
        set_aside_orphan_manifests(&store, &config.state_dir)?;
        let fetcher = Fetcher::new(config.fetch).context("building the HTTP client")?;
        let mut filters = MimeFilters::new(MimeFilterConfig::default());
        filters::load(&store, &mut filters)?;
        let robots = Arc::new(robots_cache::PersistedRobots::load(&store, &fetcher)?);
        Ok(Engine {
            fetcher,
            store,
            filters: Arc::new(Mutex::new(filters)),
            state_dir: config.state_dir,
            checkpoint_interval: config.checkpoint_interval,
            robots,
            shared_staged_at: Arc::new(Mutex::new(Instant::now())),
            parse_budget: ParseBudget::new(forager_core::config::DEFAULT_PARSE_MEMORY),
        })
    }

    /// Whether this checkpoint carries the process-wide state (MIME filter
    /// chunks, robots.txt copies): one job's checkpoint per interval does it
    /// for all — a thousand jobs each copying it was most of a daemon's CPU —
    /// and a job's last checkpoint always does.
    fn claim_shared_staging(&self, last: bool) -> bool {
        let mut at = self
            .shared_staged_at
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if last || at.elapsed() >= self.checkpoint_interval {
            *at = Instant::now();
            return true;
        }
        false
    }
}

/// A job's `manifest.jsonl` with no stored state behind it (the job was
/// purged while no daemon ran, or the store was lost) belongs to a run that
/// cannot resume: move it aside, so a new run's rows do not follow it and
/// repeat its URLs.
fn set_aside_orphan_manifests(store: &Store, state_dir: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let jobs = crate::output::jobs_with_manifests(state_dir)
        .with_context(|| format!("listing {}", state_dir.join("targets").display()))?;
    for job in jobs {
        if store.job_record(&job)?.is_some() {
            continue;
        }
        let aside = crate::output::set_aside_manifest(state_dir, &job)
            .with_context(|| format!("moving job {job}'s manifest.jsonl aside"))?;
        if let Some(aside) = aside {
            tracing::warn!(
                job = %job,
                moved_to = %aside.display(),
                "manifest.jsonl without stored state (purged, or the store was lost): moved aside; the job starts afresh"
            );
        }
    }
    Ok(())
}

impl EngineError {
    /// The state or a target could not be written (disk full, I/O error): the
    /// job pauses and retries instead of failing. A damaged store is not
    /// one: no retry mends it, and its error names `forager repair`.
    pub fn is_write_failure(&self) -> bool {
        match self {
            EngineError::Store(crate::store::StoreError::Damaged { .. }) => false,
            EngineError::Store(_) | EngineError::Output { .. } => true,
            _ => false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("job {job}: target folder: {source}")]
    Output {
        job: String,
        #[source]
        source: std::io::Error,
    },
    #[error("job {job}: stored state does not decode: {source}")]
    Restore {
        job: String,
        #[source]
        source: forager_core::codec::CodecError,
    },
    #[error("job {job}: render: {reason}")]
    Render { job: String, reason: String },
    #[error("job {job}: stored state belongs to strategy {stored} (seed {stored_seed}); the job file now says {wanted} (seed {wanted_seed}). Run `forager purge {job}` to start it again")]
    StrategyChanged {
        job: String,
        stored: String,
        stored_seed: u64,
        wanted: String,
        wanted_seed: u64,
    },
}
