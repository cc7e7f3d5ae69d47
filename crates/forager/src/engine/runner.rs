//! One job's crawl loop: a thin async driver around [`JobCore`].
//!
//! The driver keeps up to `max_in_flight` *units* of work under way. A step
//! is one link popped from the frontier: fetch it (robots.txt, redirects by
//! hand), read its links or save it, ask HEADs, fetch the links the strategy
//! wants now, then settle with the number of targets it found (the reward).
//! With more than one in flight, the HEADs a step's page asks for are units
//! of their own, each on its host's lane like a popped link (then the fetch
//! its answer wants); the step settles when its last unit ends. Units share
//! the core behind a mutex that is never held across an await, so every
//! decision about links is the core's, made in the order answers arrive.
//!
//! Politeness: a step starts only when its link's politeness key is ready —
//! no step of this job on it, and the host's delay passed (asked of the
//! fetcher). A link whose key is not ready waits in a bounded *parking*
//! queue while other hosts are served, so a slow or blocked host never
//! stalls the job. The fetcher enforces one request in flight and the delay
//! per key anyway, across all jobs; the parking only keeps the job busy.
//!
//! With `max_in_flight = 1` and a ready host, a step starts only after the
//! previous one settled: the crawl is the sequential one, and the same seed
//! gives the same crawl.
//!
//! This file holds the driver (starting, scheduling and settling units) and
//! the job's life (restore, run, stop); one stage per file beside it:
//! `robots.rs` (the robots.txt gate), `fetching.rs` (a request and what its
//! answer means), `targets.rs` (saving a target), `checkpoint.rs` (making
//! progress durable), and the job kinds' own steps, `structured.rs`,
//! `linked.rs`, `revisit.rs`, and `rendering.rs` (pages built by scripts).

use super::lanes::{Lanes, Parked, BUSY_RECHECK};
use super::{CrawlObserver, Engine, EngineError, RequestEvent, RequestKind};
use crate::fetch::{FetchError, Method, Politeness, Response, RobotsRules, RobotsStatus};
use crate::output::crawl_log::{CrawlLog, Event, LogLine, SkipReason};
use crate::output::TargetDir;
use crate::store::{ChangeKind, JobCounters, ManifestRow, StopReason};
use forager_core::catalog;
use forager_core::config::JobSpec;
use forager_core::extract::sitemap::{self, SITEMAP_TAG_PATH};
use forager_core::extract::{self, ExtractLimits, PageLinks, PageSources, UrlRules};
use forager_core::job::{
    Admitted, Count, HeadAnswer, JobCore, NextStep, PassingFault, Readiness, RetryVerdict,
    StepTally,
};
use forager_core::link::{Link, LinkId, TagPath};
use forager_core::mime::{essence, Label, MimeFamily, TargetSet};
use forager_core::strategy::{LabelSource, StrategyStats};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{watch, Notify};
use tracing::{debug, info, warn};
use url::Url;

mod catalogs;
mod checkpoint;
mod fetching;
mod linked;
mod parsing;
mod rendering;
mod revisit;
mod robots;
mod structured;
mod targets;

use fetching::parse_body;

/// A job that only waits says for what when the wait is at least this long
/// (a host's ordinary delay is not worth a line).
const WAIT_WORTH_SAYING: Duration = Duration::from_secs(2);

/// Redirect hops followed for one link (ARCHITECTURE.md § Politeness and safety).
const MAX_REDIRECTS: usize = 10;

/// Bytes of one HTML page read for link extraction (targets stream to disk
/// up to `limits.max_body`; pages are held in memory).
pub const MAX_PAGE_BYTES: u64 = 32 << 20;

/// How a job run ended.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    /// `None` when the run was interrupted (stop signal) before the job finished.
    pub stop: Option<StopReason>,
    pub counters: JobCounters,
    pub stats: StrategyStats,
    pub frontier_left: usize,
    pub duration: Duration,
    /// Links given up in this run after their last try.
    pub given_up: u64,
    /// Links refused in this run by the SSRF guard.
    pub refused_private: u64,
    /// Why the last link given up in this run failed its last try.
    pub last_failure: Option<String>,
    /// Seeds whose last answer in this run was an HTTP error: the seed's
    /// URL and that status (a seed that failed, then answered, is not here).
    pub failed_seeds: Vec<(Url, u16)>,
}

impl JobOutcome {
    /// Why nothing could be fetched, for a person, when the job stopped `unreachable`.
    pub fn unreachable_because(&self) -> Option<String> {
        if self.stop != Some(StopReason::Unreachable) {
            return None;
        }
        Some(if self.refused_private > 0 {
            format!(
                "{} link(s) refused by the SSRF guard: their hosts resolve to private or \
                 loopback addresses; pass --allow-private (or set allow_private = true \
                 in the daemon config) to crawl such hosts",
                self.refused_private
            )
        } else {
            let last = self
                .last_failure
                .as_deref()
                .map(|why| format!("; the last failed with: {why}"))
                .unwrap_or_default();
            format!(
                "every try of every link failed ({} given up{last}); the job \
                 tries its seeds again when it is run again",
                self.given_up
            )
        })
    }

    /// What a person should know about a run that ended without error but
    /// may not have done what was meant: seeds that answered 4xx/5xx, and a
    /// finished job that holds no target at all. A run cut short by a stop
    /// signal, and an `unreachable` one (an error of its own), say nothing here.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .failed_seeds
            .iter()
            .map(|(url, status)| format!("seed {url} answered HTTP {status}"))
            .collect();
        let finished = self.stop.is_some_and(|r| r != StopReason::Unreachable);
        if finished && self.counters.targets == 0 {
            out.push("no target saved: the job finished with nothing harvested".to_string());
        }
        out
    }
}

/// The key render units run under, never a politeness key (no host name
/// holds a NUL).
const RENDER_LANE: &str = "\0render";

/// What one GET produced.
enum Fetched {
    /// An HTML page (or an RDF document, saved as a target) and its links.
    Page { url: Url, links: Box<PageLinks> },
    /// A target, saved.
    Target,
    /// Neither, an error, or nothing fetched (disallowed, out of scope, already seen).
    Nothing,
    /// Failed for a reason that may pass: this link (the hop that failed) is
    /// to be tried again later.
    Retry {
        link: Link,
        fault: PassingFault,
        reason: String,
    },
}

impl Fetched {
    /// `link`, reached at `url` (a redirect hop, maybe), is to be tried again.
    fn retry(link: &Link, url: &Url, fault: PassingFault, reason: String) -> Fetched {
        Fetched::Retry {
            link: Link {
                url: url.clone(),
                ..link.clone()
            },
            fault,
            reason,
        }
    }

    /// What a step reports when reading `link`'s body (at `url`) failed: a
    /// retry when the fault may pass, else nothing.
    fn after_failed_read(link: &Link, url: &Url, e: &FetchError) -> Fetched {
        if e.may_pass() {
            Fetched::retry(link, url, PassingFault::Outage, e.to_string())
        } else {
            Fetched::Nothing
        }
    }
}

/// A target's body in a temporary file, not kept yet.
struct Streamed {
    file: crate::output::TargetFile,
    truncated: bool,
    exchange: Option<crate::exchange::ExchangeHead>,
    /// The body's SHA-1 in base32, when asked for.
    sha1: Option<String>,
    /// The response's validator fields, in a continuous job.
    validators: Option<Vec<(String, Vec<u8>)>>,
    latency: Duration,
}

/// What robots.txt says of a URL.
enum Gate {
    Allowed,
    Disallowed,
    /// robots.txt could not be read for a reason that may pass: "disallow for now" (RFC 9309).
    Unavailable(String),
}

/// What the driver alone touches between steps.
struct Driver {
    last_checkpoint: Instant,
    /// `manifest.jsonl` missed rows (a failed append): rewrite it from the store.
    manifest_stale: bool,
    /// HEADs to ask waiting for their politeness key, and the keys in use.
    lanes: Lanes,
    /// When the core, which left a slot empty, may have a link whose key
    /// is ready by then (the soonest end of a delay it looked at).
    choose_again: Option<Instant>,
    /// Steps with work still under way or parked (their own fetch, HEADs
    /// they asked for): what they found so far, and how many units are left.
    /// A step settles when its last unit ends.
    open_steps: HashMap<LinkId, (StepTally, usize)>,
    /// What the job said it waits for, while it only waits.
    waiting_for: Option<super::OriginWait>,
    /// Pages read whose render waits for a page of the pool, by step.
    renders: std::collections::VecDeque<(LinkId, Box<rendering::Deferred>)>,
    /// Render units under way (at most `render.pages`).
    rendering: usize,
}

/// One unit of a step's work, run on one politeness key: the step's popped
/// link, or a HEAD for a link its page gave (then the fetch the answer asks
/// for). With more than one step in flight, a step's HEADs are units of
/// their own, scheduled on their hosts' lanes like popped links, so that a
/// page with 200 links to ask does not hold the job for 200 delays while
/// other hosts wait (issue #12: sb made 1 request/s over 1 000 hosts).
#[derive(Debug)]
enum Unit {
    Popped,
    Ask(Box<Link>),
    /// The render of a page its step already read (`rendering.rs`): with
    /// `render.pages` ≥ 2 it runs beside the job's other units, on no
    /// politeness key of its own (each request of the browser waits for its
    /// host's turn in the fetcher, like any request of the job).
    Render(Box<rendering::Deferred>),
}

/// What a unit did: its requests and targets (for its step's reward) and
/// the links it left to ask with HEAD, as units of their own.
#[derive(Debug, Default)]
struct UnitOutcome {
    tally: StepTally,
    asks: Vec<Link>,
}

/// Runs one job: restore, loop, checkpoint.
pub struct Runner<'a> {
    engine: &'a Engine,
    spec: &'a JobSpec,
    targets: TargetSet,
    limits: Arc<ExtractLimits>,
    politeness: Politeness,
    max_in_flight: usize,
    /// How many links a free slot may pass over (`politeness.look_ahead`).
    look_ahead: usize,
    per: extract::PolitenessPer,
    core: Mutex<JobCore>,
    out: TargetDir,
    observer: Mutex<&'a mut (dyn CrawlObserver + Send)>,
    /// Origins whose robots.txt sitemaps were queued in this run.
    sitemap_origins: Mutex<HashSet<String>>,
    /// The seeds' origins whose well-known catalogs are still to be queued
    /// in this run (empty when the job reads no catalogs).
    catalog_origins: Mutex<HashSet<String>>,
    driver: Mutex<Driver>,
    /// `targets/<job>/crawl.log`, unless `[output] crawl_log = false` (or it cannot be opened).
    crawl_log: Mutex<Option<CrawlLog>>,
    /// Told when a step puts links in the frontier, so that the driver starts
    /// steps for them at once rather than when some unit ends: a unit may
    /// last long (a page's fetch-now links wait for their host's delay one
    /// by one), and a job over 1 000 hosts with one step under way made one
    /// request per second while its frontier held the whole first page.
    frontier_grew: Notify,
    /// Parses under way and the poison list (`parsing.rs`).
    parsing: parsing::Parsing,
    /// Seeds whose last answer in this run was an HTTP error, and that
    /// status (`JobOutcome::failed_seeds`). Bounded by the job's seeds.
    failed_seeds: Mutex<std::collections::BTreeMap<Url, u16>>,
    /// Why the last link given up failed (`JobOutcome::last_failure`).
    last_failure: Mutex<Option<String>>,
    /// A `render` job's browser and what it learnt (`rendering.rs`).
    rendering: Option<rendering::Rendering>,
}

impl Drop for Runner<'_> {
    fn drop(&mut self) {
        // However the run ended, the hosts it used no longer wait for its delay.
        self.engine.fetcher.end_run(self.politeness.run);
    }
}

/// First wait before retrying a paused job's checkpoint; it doubles up to the max.
const PAUSE_RETRY_MIN: Duration = Duration::from_secs(1);
const PAUSE_RETRY_MAX: Duration = Duration::from_secs(30);

impl<'a> Runner<'a> {
    /// Prepare a job: load its stored state if any, else start from its seeds.
    pub fn new(
        engine: &'a Engine,
        spec: &'a JobSpec,
        observer: &'a mut (dyn CrawlObserver + Send),
    ) -> Result<Runner<'a>, EngineError> {
        let out = TargetDir::create(&engine.state_dir, &spec.name).map_err(|source| {
            EngineError::Output {
                job: spec.name.clone(),
                source,
            }
        })?;
        let limits = Arc::new(ExtractLimits {
            max_links: spec.limits.max_links_per_page,
            url_rules: UrlRules {
                max_len: spec.limits.max_url_len,
                strip_params: spec.limits.strip_params.clone(),
                ..UrlRules::default()
            },
            structured: spec.targets.structured.as_ref().map(|s| s.options.clone()),
            sources: PageSources {
                catalogs: spec.targets.catalogs,
                forms: spec.targets.forms,
            },
        });
        let mut runner = Runner {
            engine,
            spec,
            targets: spec.targets.target_set(),
            limits,
            politeness: Politeness {
                delay: spec.politeness.delay,
                robots: spec.politeness.robots,
                user_agent: spec.politeness.user_agent.clone(),
                run: engine.fetcher.new_run(),
                http: Arc::new(linked::with_accept(spec)),
                adaptive: spec.politeness.adaptive(),
                backoff: spec.politeness.backoff(),
            },
            max_in_flight: spec.max_in_flight().max(1),
            look_ahead: spec.look_ahead(),
            per: spec.politeness_per(),
            core: Mutex::new(JobCore::new(spec)),
            out,
            observer: Mutex::new(observer),
            sitemap_origins: Mutex::new(HashSet::new()),
            catalog_origins: Mutex::new(catalogs::seed_origins(spec)),
            driver: Mutex::new(Driver {
                last_checkpoint: Instant::now(),
                manifest_stale: false,
                lanes: Lanes::default(),
                choose_again: None,
                open_steps: HashMap::new(),
                waiting_for: None,
                renders: std::collections::VecDeque::new(),
                rendering: 0,
            }),
            crawl_log: Mutex::new(None),
            frontier_grew: Notify::new(),
            parsing: parsing::Parsing::open(engine, &spec.name),
            failed_seeds: Mutex::new(std::collections::BTreeMap::new()),
            last_failure: Mutex::new(None),
            rendering: rendering::Rendering::for_job(spec)?,
        };
        if spec.output.crawl_log {
            match CrawlLog::open(runner.out.dir()) {
                Ok(log) => *lock(&runner.crawl_log) = Some(log),
                // A diagnostic: the crawl goes on without it.
                Err(e) => {
                    warn!(job = %spec.name, error = %e, "cannot open the crawl log; crawling without it")
                }
            }
        }
        runner.restore_or_seed()?;
        let poisoned = runner.parsing.poisoned();
        lock(&runner.observer).poison_list(poisoned);
        Ok(runner)
    }

    fn core(&self) -> MutexGuard<'_, JobCore> {
        lock(&self.core)
    }

    fn restore_or_seed(&mut self) -> Result<(), EngineError> {
        let job = self.spec.name.clone();
        let restore_err = |source| EngineError::Restore {
            job: job.clone(),
            source,
        };
        if let Err(e) = self.out.clean_partial() {
            warn!(job = %job, error = %e, "could not clean partial target files");
        }
        let Some(record) = self.engine.store.job_record(&job)? else {
            // Statements and files written before a first checkpoint that never came.
            self.reconcile_data(&[])?;
            self.remove_orphans_of_a_first_run();
            let mut core = self.core();
            // A fresh job only: a restored one has its own learnt state.
            if crate::engine::prior::load(
                &self.engine.store,
                &self.spec.targets,
                core.strategy_mut(),
            )? {
                info!(job = %job, "starting from the prior of earlier jobs of these target kinds");
            }
            core.add_seeds(&self.spec.seeds);
            return Ok(());
        };
        if record.strategy != self.spec.strategy.name() || record.seed != self.spec.seed {
            return Err(EngineError::StrategyChanged {
                job: job.clone(),
                stored: record.strategy,
                stored_seed: record.seed,
                wanted: self.spec.strategy.name().to_string(),
                wanted_seed: self.spec.seed,
            });
        }
        // The learner decodes on a second thread while the frontier loads:
        // the two dominate the time to the first request of a big job.
        let store = &self.engine.store;
        let core = self.core.get_mut().unwrap_or_else(|p| p.into_inner());
        let strategy = core.strategy_mut();
        let (restored, loaded) = std::thread::scope(|s| {
            let restoring = s.spawn(|| strategy.restore(&record.strategy_state));
            let loaded = store.load_job(&job);
            let restored = restoring
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (restored, loaded)
        });
        restored.map_err(restore_err)?;
        let loaded = loaded?;
        let frontier = loaded.frontier.len();
        core.restore(&record, loaded.frontier, loaded.seen)
            .map_err(restore_err)?;
        core.restore_revisits(&loaded.revisit, loaded.revisit_state.as_deref())
            .map_err(restore_err)?;
        // Seeds added to the job file since: crawled, even by a finished job.
        let mut new_seeds = core.add_seeds(&self.spec.seeds);
        if record.stop == Some(StopReason::Unreachable) {
            // Nothing was fetched last time: the fault may have passed.
            let again = core.requeue_seeds(&self.spec.seeds);
            if again > 0 {
                info!(job = %job, seeds = again, "the job found its origins unreachable last time; trying its seeds again");
            }
            new_seeds += again;
        }
        let seen = core.seen_len();
        let rows: Vec<ManifestRow> = loaded.manifest.into_iter().map(|(_, r)| r).collect();
        self.reconcile_data(&rows)?;
        self.out
            .rewrite_manifest(&rows)
            .map_err(|source| EngineError::Output {
                job: job.clone(),
                source,
            })?;
        self.remove_orphans(&rows);
        info!(
            job = %job,
            frontier,
            new_seeds,
            seen,
            targets = rows.len(),
            "resumed from checkpoint"
        );
        Ok(())
    }

    /// Drop from `data.nq.gz` the statements of documents whose rows never
    /// committed (they are fetched again).
    fn reconcile_data(&self, committed: &[ManifestRow]) -> Result<(), EngineError> {
        let keys: HashSet<String> = committed
            .iter()
            .filter(|r| r.rdf.is_some() || r.structured.is_some())
            .map(|r| crate::output::nquads::document_key(&r.sha256, &r.final_url))
            .collect();
        let found = self
            .out
            .reconcile_data(&keys)
            .map_err(|source| EngineError::Output {
                job: self.spec.name.clone(),
                source,
            })?;
        if found.dropped > 0 || found.cut_bytes > 0 {
            warn!(job = %self.spec.name, dropped = found.dropped, cut_bytes = found.cut_bytes,
                "data.nq.gz: statements of documents not checkpointed were dropped; they are fetched again");
        }
        Ok(())
    }

    /// Archive a saved target's exchange as WARC when the job asks for it,
    /// with what forager knew of the link that led to it.
    fn archive(
        &self,
        link: &Link,
        url: &Url,
        exchange: Option<&crate::exchange::ExchangeHead>,
        saved: &crate::output::SavedTarget,
        truncated: bool,
    ) -> std::io::Result<()> {
        let Some(head) = exchange else {
            return Ok(());
        };
        let meta = crate::output::warc::Metadata {
            via: link.referrer.as_ref().map(|u| u.to_string()),
            tag_path: Some(link.tag_path.to_string()),
            label: Some("target".to_string()),
        };
        self.out.archive_target(
            &self.spec.output,
            url.as_str(),
            head,
            saved,
            truncated,
            &meta,
        )
    }

    /// Crawl until the job finishes or `stop` turns true; checkpoint on the way out.
    pub async fn run(self, mut stop: watch::Receiver<bool>) -> Result<JobOutcome, EngineError> {
        let started = Instant::now();
        let job = self.spec.name.clone();
        let mut reason = self.core().stored_stop_reason(self.spec);
        if reason.is_none() {
            info!(job = %job, strategy = self.spec.strategy.name(), max_in_flight = self.max_in_flight, "crawl started");
        }
        let mut stopping = false;
        while reason.is_none() {
            match self.crawl(&mut stop).await {
                Ok(Some(r)) => reason = Some(self.finished_because(r)),
                Ok(None) => {
                    stopping = true;
                    break;
                }
                Err(e) if e.is_write_failure() => {
                    if self.pause_until_writable(e, &mut stop).await {
                        stopping = true;
                        break;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        // The last checkpoint waits for a full disk too, unless a stop is asked for.
        loop {
            match self.checkpoint(reason, true).await {
                Ok(()) => break,
                Err(e) if e.is_write_failure() && !stopping => {
                    stopping = self.pause_until_writable(e, &mut stop).await;
                }
                Err(e) => return Err(e),
            }
        }
        let (counters, stats, frontier_left) = {
            let core = self.core();
            (
                core.counters().clone(),
                core.strategy_stats(),
                core.frontier_len(),
            )
        };
        lock(&self.observer).finished(&counters, reason);
        match reason {
            Some(r) => {
                info!(job = %job, reason = r.as_str(), requests = counters.requests, targets = counters.targets, "crawl finished")
            }
            None => {
                info!(job = %job, requests = counters.requests, "crawl interrupted; state saved")
            }
        }
        let (given_up, refused_private) = {
            let core = self.core();
            (core.given_up, core.refused_private)
        };
        let failed_seeds: Vec<(Url, u16)> = std::mem::take(&mut *lock(&self.failed_seeds))
            .into_iter()
            .collect();
        let outcome = JobOutcome {
            stop: reason,
            counters,
            stats,
            frontier_left,
            duration: started.elapsed(),
            given_up,
            refused_private,
            failed_seeds,
            last_failure: lock(&self.last_failure).take(),
        };
        // Logged here, so that `forager crawl` and the daemon both say it.
        for (seed, status) in &outcome.failed_seeds {
            warn!(job = %job, seed = %seed, status, "seed answered an HTTP error");
        }
        if outcome.stop.is_some_and(|r| r != StopReason::Unreachable)
            && outcome.counters.targets == 0
        {
            warn!(job = %job, requests = outcome.counters.requests, pages = outcome.counters.pages, "job finished with no target saved");
        }
        Ok(outcome)
    }

    /// An empty frontier after nothing but failures means the origin never answered.
    fn finished_because(&self, reason: StopReason) -> StopReason {
        let core = self.core();
        let nothing = core.counters().pages == 0 && core.counters().targets == 0;
        let failed = core.given_up + core.refused_private;
        if reason == StopReason::FrontierEmpty && nothing && failed > 0 {
            warn!(job = %self.spec.name, given_up = core.given_up, refused_private = core.refused_private, "no link could be fetched: unreachable");
            return StopReason::Unreachable;
        }
        reason
    }

    /// Keep steps in flight until the job finishes (`Some(reason)`), a stop
    /// is asked for (`None`), or a write fails (`Err`). Whatever is in flight
    /// or parked when it returns is back in the frontier.
    async fn crawl(
        &self,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Option<StopReason>, EngineError> {
        let mut steps = FuturesUnordered::new();
        // Nothing to fetch and no revisit due: a continuous job waits.
        let mut waiting = false;
        let result = loop {
            if *stop.borrow() {
                break Ok(None);
            }
            let halt = self.core().should_stop(self.spec);
            // Past a halt no step begins, but the HEADs of steps under way
            // still run (past the budget without a request), so they settle.
            // Render units come on top of `max_in_flight`: a page waiting
            // for its scripts to settle holds no request slot.
            while steps.len() < self.max_in_flight + self.render_slots() {
                let room = self.plain_room(steps.len());
                match self.next_unit(halt.is_none(), room) {
                    Ok(Some((id, host_key, unit))) => {
                        steps.push(async move {
                            let r = self.run_unit(id, unit).await;
                            (id, host_key, r)
                        });
                    }
                    Ok(None) => break,
                    Err(e) => return self.unwind(steps, Err(e)),
                }
            }
            let mut idle = false;
            if steps.is_empty() {
                if let (Some(r), 0) = (halt, lock(&self.driver).open_steps.len()) {
                    break Ok(Some(r));
                }
                if lock(&self.driver).lanes.parked() == 0 && self.core().frontier_len() == 0 {
                    if !self.core().has_revisits() {
                        break Ok(Some(StopReason::FrontierEmpty));
                    }
                    idle = !self
                        .core()
                        .revisit_book()
                        .is_some_and(|b| b.has_due(unix_now()));
                }
            }
            if idle != waiting {
                waiting = idle;
                if let Err(e) = self.announce_waiting(waiting).await {
                    break Err(e);
                }
            }
            let room = self.plain_room(steps.len());
            let mut wake = {
                let driver = lock(&self.driver);
                let now = Instant::now();
                let choose = driver
                    .choose_again
                    .filter(|_| halt.is_none() && room)
                    .map(|at| at.saturating_duration_since(now));
                match (driver.lanes.next_wake(now), choose) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            };
            if halt.is_none() && room {
                if let Some(due) = self.revisit_wake() {
                    wake = Some(wake.map_or(due, |w| w.min(due)));
                }
            }
            self.say_what_it_waits_for(steps.is_empty());
            tokio::select! {
                biased;
                // A closed channel (sender dropped) means stop too.
                _ = stop.changed() => break Ok(None),
                Some((id, host_key, r)) = steps.next(), if !steps.is_empty() => {
                    self.release_key(&host_key);
                    match r {
                        Ok(outcome) => self.unit_done(id, outcome),
                        Err(e) => break Err(e),
                    }
                }
                _ = tokio::time::sleep(wake.unwrap_or(Duration::from_secs(3600))), if wake.is_some() => {}
                // One step at a time starts only when the previous one settled.
                _ = self.frontier_grew.notified(), if room => {}
            }
            let due =
                lock(&self.driver).last_checkpoint.elapsed() >= self.engine.checkpoint_interval;
            if due {
                if let Err(e) = self.checkpoint(None, false).await {
                    break Err(e);
                }
            }
        };
        self.unwind(steps, result)
    }

    /// With no step under way and links held back for their origin, say
    /// which origin the job waits for and until when (log, progress line,
    /// `/status`), once per change; and that it works again when a step runs.
    fn say_what_it_waits_for(&self, idle: bool) {
        let now = Instant::now();
        let wait = if idle {
            let readiness = |p: &Parked| self.readiness(p.url());
            let soonest = lock(&self.driver).lanes.soonest(now, readiness);
            soonest
                .filter(|(_, wait)| *wait >= WAIT_WORTH_SAYING)
                .and_then(|(url, wait)| {
                    Some(super::OriginWait {
                        origin: crate::fetch::origin_key(&url)?,
                        until: SystemTime::now() + wait,
                    })
                })
        } else {
            None
        };
        let mut driver = lock(&self.driver);
        let same = match (&driver.waiting_for, &wait) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                // A wait recomputed a moment later is the same wait.
                let drift = b
                    .until
                    .duration_since(a.until)
                    .or_else(|e| Ok::<_, ()>(e.duration()))
                    .unwrap_or_default();
                a.origin == b.origin && drift < WAIT_WORTH_SAYING
            }
            _ => false,
        };
        if same {
            return;
        }
        driver.waiting_for = wait.clone();
        drop(driver);
        if let Some(w) = &wait {
            info!(job = %self.spec.name, origin = %w.origin, until = %humantime::format_rfc3339_seconds(w.until), "{w}");
        }
        lock(&self.observer).waiting_for_origin(wait.as_ref());
    }

    /// End a crawl loop: cancel the steps still in flight and put every link
    /// they or the lanes held back into the frontier.
    fn unwind<S>(
        &self,
        steps: S,
        result: Result<Option<StopReason>, EngineError>,
    ) -> Result<Option<StopReason>, EngineError> {
        drop(steps);
        let parked = {
            let mut driver = lock(&self.driver);
            driver.open_steps.clear();
            driver.renders.clear();
            driver.rendering = 0;
            driver.choose_again = None;
            driver.lanes.drain()
        };
        let mut core = self.core();
        for p in parked {
            // HEADs waiting for their lane are unsettled links of their
            // steps: abandoning the steps puts them back.
            if let Parked::Held(h) = p {
                core.release_held(h);
            }
        }
        core.abandon_all();
        result
    }

    /// A unit of step `id` ended: count what it did, park the HEADs it left
    /// to ask, and settle the step when nothing of it is left.
    fn unit_done(&self, id: LinkId, outcome: UnitOutcome) {
        let now = Instant::now();
        let readiness = |p: &Parked| self.readiness(p.url());
        let mut driver = lock(&self.driver);
        let Some((tally, left)) = driver.open_steps.get_mut(&id) else {
            debug_assert!(false, "a unit of {id}, which is not open, ended");
            return;
        };
        tally.targets += outcome.tally.targets;
        tally.requests += outcome.tally.requests;
        *left = *left - 1 + outcome.asks.len();
        if *left == 0 {
            let tally = *tally;
            driver.open_steps.remove(&id);
            drop(driver);
            self.core().settle(id, tally, unix_now());
            return;
        }
        for link in outcome.asks {
            let lane = self.host_key(&link.url);
            driver
                .lanes
                .park(lane, Parked::Ask { step: id, link }, now, readiness);
        }
    }

    /// The next unit whose politeness key is ready: a HEAD an open step
    /// asked for or a link held for its key first, else — when `pop` — a
    /// due revisit or the link the job core chooses for the free slot
    /// (`core/dispatch.rs`; links it holds wait in their lanes).
    fn next_unit(
        &self,
        pop: bool,
        room: bool,
    ) -> Result<Option<(LinkId, String, Unit)>, EngineError> {
        let mut driver = lock(&self.driver);
        // A page waiting for its render first, even past a halt: its step
        // settles only once it ran.
        if driver.rendering < self.render_slots() {
            if let Some((id, work)) = driver.renders.pop_front() {
                driver.rendering += 1;
                return Ok(Some((id, RENDER_LANE.to_string(), Unit::Render(work))));
            }
        }
        if !room {
            return Ok(None);
        }
        let now = Instant::now();
        let readiness = |p: &Parked| self.readiness(p.url());
        loop {
            let ready = if pop {
                driver.lanes.take_ready(now, readiness)
            } else {
                // Halted: only the HEADs of open steps go on, so that they settle.
                driver.lanes.take_any_ask()
            };
            let Some((lane, p)) = ready else { break };
            match p {
                Parked::Ask { step, link } => {
                    driver.lanes.start(&lane);
                    return Ok(Some((step, lane, Unit::Ask(Box::new(link)))));
                }
                Parked::Held(h) => {
                    // Dropped or deferred by the strategy now: the next one.
                    let Some(id) = self.core().begin_held(h) else {
                        continue;
                    };
                    driver.lanes.start(&lane);
                    driver.open_steps.insert(id, (StepTally::default(), 1));
                    return Ok(Some((id, lane, Unit::Popped)));
                }
            }
        }
        if !pop {
            return Ok(None);
        }
        if let Some((id, lane)) = self.begin_revisit(&mut driver) {
            return Ok(Some((id, lane, Unit::Popped)));
        }
        driver.choose_again = None;
        loop {
            let next = {
                let lanes = &driver.lanes;
                // A taken lane makes a URL wait for its key, but never
                // hides that its origin is held back (`on_taken_key`).
                let lane_readiness = |url: &Url| {
                    let own = self.readiness(url);
                    if lanes.is_free(&self.host_key(url)) {
                        own
                    } else {
                        own.on_taken_key()
                    }
                };
                let store = &self.engine.store;
                let job = &self.spec.name;
                let mut load = |id: LinkId| store.frontier_entry(job, id);
                self.core()
                    .next_step(&lane_readiness, self.look_ahead, &mut load)?
            };
            match next {
                NextStep::Begin(id) => {
                    let Some(url) = self.core().popped(id).map(|p| p.entry.link.url.clone()) else {
                        debug_assert!(false, "{id} began without a record");
                        return Ok(None);
                    };
                    let lane = self.host_key(&url);
                    driver.lanes.start(&lane);
                    driver.open_steps.insert(id, (StepTally::default(), 1));
                    return Ok(Some((id, lane, Unit::Popped)));
                }
                NextStep::Hold(h) => {
                    let lane = self.host_key(h.url());
                    driver.lanes.park(lane, Parked::Held(h), now, readiness);
                }
                NextStep::Wait(after) => {
                    // A host the strategy wants may become ready before any
                    // step of this job ends: when its delay does, or, held by
                    // another job's request, when that ends (unknown: soon).
                    driver.choose_again = Some(now + after.unwrap_or(BUSY_RECHECK));
                    return Ok(None);
                }
                NextStep::Empty => return Ok(None),
            }
        }
    }

    /// When the fetcher would start a request to `url`: `Blocked` while
    /// its origin is held back (robots.txt unavailable, failures), so that
    /// the link waits aside and the host's other origins go on.
    fn readiness(&self, url: &Url) -> Readiness {
        let key = self.host_key(url);
        let fetcher = &self.engine.fetcher;
        if self.origin_given_up(url) {
            // Its step gives it up at the robots.txt gate, without a request.
            return Readiness::Now;
        }
        if let Some(blocked) = fetcher.origin_blocked(url, &key) {
            return Readiness::Blocked(blocked);
        }
        match fetcher.readiness(url, &self.politeness, &key) {
            Some(wait) if wait.is_zero() => Readiness::Now,
            Some(wait) => Readiness::After(wait),
            None => Readiness::Busy,
        }
    }

    /// Whether `url`'s origin failed its robots.txt more times in a row
    /// than `[limits] retries` allows a link: its links are given up.
    fn origin_given_up(&self, url: &Url) -> bool {
        self.politeness.robots
            && self.engine.fetcher.robots_failures_in_a_row(url) > self.spec.limits.retries
    }

    fn release_key(&self, host_key: &str) {
        if host_key == RENDER_LANE {
            let mut driver = lock(&self.driver);
            driver.rendering = driver.rendering.saturating_sub(1);
            return;
        }
        let readiness = |p: &Parked| self.readiness(p.url());
        lock(&self.driver)
            .lanes
            .finish(host_key, Instant::now(), readiness);
    }

    /// One unit of step `id`: fetch its popped link (or ask a HEAD and
    /// fetch the link if the answer says so), handle a page's links, fetch
    /// the links the strategy wants now. Returns what it found, for the
    /// reward, and the HEADs left to ask.
    async fn run_unit(&self, id: LinkId, unit: Unit) -> Result<UnitOutcome, EngineError> {
        let mut out = UnitOutcome::default();
        // A revisit's own URL is fetched with its validators, and never queued.
        let mut revisiting = matches!(unit, Unit::Popped) && self.core().revisit_of(id).is_some();
        let mut work: Vec<Link> = match unit {
            Unit::Popped => self
                .core()
                .popped(id)
                .map(|p| p.entry.link.clone())
                .into_iter()
                .collect(),
            Unit::Ask(link) => {
                let link = self.ask_head(id, *link, &mut out.tally).await?;
                self.log_skipped();
                link.into_iter().collect()
            }
            Unit::Render(work) => {
                // Fetch predicted targets in page order.
                let mut now = self.render_deferred(id, *work, &mut out).await?;
                now.reverse();
                now
            }
        };
        let tally = &mut out.tally;
        while let Some(link) = work.pop() {
            let revisit = std::mem::take(&mut revisiting);
            if self.core().budget_exhausted(self.spec).is_some() {
                // Keep what could not be fetched: it stays in the frontier for a larger budget.
                if !revisit {
                    self.core().keep_for_later(link);
                }
                continue;
            }
            let fetched = if revisit {
                self.revisit(id, &link, tally).await?
            } else {
                self.fetch_link(id, &link, tally).await?
            };
            match fetched {
                Fetched::Page { url, links } => {
                    self.core().fetched(&link.url);
                    let now = self
                        .admit_links(id, &link, &url, *links, tally, &mut out.asks)
                        .await?;
                    // A page is settled once its links are admitted, not before.
                    self.core().settle_link(&url);
                    // Fetch predicted targets in page order.
                    work.extend(now.into_iter().rev());
                }
                Fetched::Target => self.core().fetched(&link.url),
                Fetched::Retry {
                    link: failed,
                    fault,
                    reason,
                } => {
                    self.retry_later(failed, fault, &reason);
                    continue;
                }
                Fetched::Nothing => {}
            }
            self.core().settle_link(&link.url);
        }
        Ok(out)
    }

    /// Ask a HEAD for a link of step `step` and triage it by the answer;
    /// the link back when the strategy wants it fetched now.
    async fn ask_head(
        &self,
        step: LinkId,
        link: Link,
        tally: &mut StepTally,
    ) -> Result<Option<Link>, EngineError> {
        let mut next = Admitted::AskHead(link);
        loop {
            match next {
                Admitted::FetchNow(link) => return Ok(Some(link)),
                Admitted::AskHead(link) => {
                    // The budget bounds HEADs too: past it, the link waits unasked.
                    let answer = if self.core().budget_exhausted(self.spec).is_some() {
                        HeadAnswer::Unknown
                    } else {
                        self.head(&link, tally).await?
                    };
                    next = self.core().after_head(step, link, answer, self.spec);
                    if next == Admitted::Queued {
                        self.frontier_grew.notify_one();
                    }
                }
                Admitted::Queued | Admitted::Dropped => return Ok(None),
            }
        }
    }

    /// A fetch failed for a reason that may pass: back to the frontier, or given up.
    fn retry_later(&self, failed: Link, fault: PassingFault, reason: &str) {
        let url = failed.url.clone();
        if self.origin_given_up(&url) {
            // Its origin's robots.txt failed more often in a row than a link
            // may: trying each of its links that often again, one robots.txt
            // back-off after the other, would hold the job for hours.
            self.core().give_up(&failed);
            warn!(job = %self.spec.name, url = %url, reason, "fetch failed; given up with its origin");
            *lock(&self.last_failure) = Some(format!("{url}: {reason}"));
            return;
        }
        let verdict = self
            .core()
            .retry_or_give_up(failed, fault, self.spec, Instant::now());
        match verdict {
            RetryVerdict::Again { tries } => {
                info!(job = %self.spec.name, url = %url, tries, reason, "fetch failed; will try again")
            }
            RetryVerdict::GivenUp { tries } => {
                warn!(job = %self.spec.name, url = %url, tries, reason, "fetch failed; given up");
                *lock(&self.last_failure) = Some(format!("{url}: {reason}"));
            }
        }
    }

    /// Triage every new in-scope link of a page; returns the links to fetch
    /// now. The links the strategy wants asked with HEAD go to `asks` when
    /// the job keeps several steps in flight (units of their own); with one,
    /// nothing else could run meanwhile, and each is asked as it is triaged,
    /// in page order, so that the strategy learns its answer before it
    /// triages the next link, as the sequential crawl always did (sb's
    /// warm-up then ends after its first HEADs, not after a whole page).
    async fn admit_links(
        &self,
        step: LinkId,
        page: &Link,
        page_url: &Url,
        found: PageLinks,
        tally: &mut StepTally,
        asks: &mut Vec<Link>,
    ) -> Result<Vec<Link>, EngineError> {
        let known = |url: &Url| self.known_label(url);
        let mut admission = self.core().start_admission(step, page, page_url, found);
        let mut fetch_now = Vec::new();
        // Links the strategy kept (fetched now, asked or queued): what a revisit revealed.
        let mut kept = 0u64;
        loop {
            let next = self.core().admit_next(&mut admission, &known, self.spec);
            if matches!(next, Some(ref a) if !matches!(a, Admitted::Dropped)) {
                kept += 1;
            }
            match next {
                None => break,
                Some(Admitted::FetchNow(link)) => fetch_now.push(link),
                Some(Admitted::AskHead(link)) if self.max_in_flight > 1 => asks.push(link),
                Some(Admitted::AskHead(link)) => {
                    if let Some(link) = self.ask_head(step, link, tally).await? {
                        fetch_now.push(link);
                    }
                }
                Some(Admitted::Queued | Admitted::Dropped) => {}
            }
        }
        self.core().revealed(step, kept);
        self.frontier_grew.notify_one();
        self.log_skipped();
        Ok(fetch_now)
    }

    /// Write the links the core did not follow to the crawl log.
    fn log_skipped(&self) {
        let skipped = self.core().take_skipped();
        if let Some(log) = lock(&self.crawl_log).as_mut() {
            for s in skipped {
                log.skip(s.url.as_str(), s.reason, s.from.as_ref().map(Url::as_str));
            }
        }
    }

    /// A link not followed, seen by the runner itself (robots, redirects).
    fn log_skip(&self, url: &Url, reason: SkipReason) {
        if let Some(log) = lock(&self.crawl_log).as_mut() {
            log.skip(url.as_str(), reason, None);
        }
    }

    /// The label the shared MIME filters know for a URL, if certain for this job.
    fn known_label(&self, url: &Url) -> Option<Label> {
        let family = lock(&self.engine.filters).lookup(url)?;
        self.targets.label_of_family(family)
    }

    /// What a 2xx response is for this job: by its type, or by its file's
    /// name when the type is generic.
    fn label_of(&self, resp: &Response) -> Label {
        let name = file_name_of(resp);
        self.targets
            .classify_file(resp.content_type.as_deref(), name.as_deref())
    }

    fn remember_family(&self, url: &Url, content_type: Option<&str>) {
        let family = MimeFamily::of(&essence(content_type.unwrap_or("")));
        lock(&self.engine.filters).insert(url, family);
    }

    /// Render units that may run at once: `render.pages` when renders run
    /// beside the job's other units, else none (a render is part of its
    /// page's unit).
    fn render_slots(&self) -> usize {
        if self.rendering.as_ref().is_some_and(|r| r.beside()) {
            self.spec.render.pages.max(1) as usize
        } else {
            0
        }
    }

    /// Whether a unit other than a render may start with `in_flight` units
    /// under way: at most `max_in_flight` of them besides the renders, and
    /// none while the renders waiting for a page of the pool are more than
    /// [`rendering::BACKLOG_PER_PAGE`] per page (each holds its page's body,
    /// and a crawl running ahead of its renders learns from pages whose
    /// rendered links it has not seen yet).
    fn plain_room(&self, in_flight: usize) -> bool {
        let driver = lock(&self.driver);
        let backlog = rendering::BACKLOG_PER_PAGE * self.render_slots().max(1);
        in_flight.saturating_sub(driver.rendering) < self.max_in_flight
            && driver.renders.len() < backlog
    }

    fn host_key(&self, url: &Url) -> String {
        extract::politeness_key(url, self.per)
    }

    /// A GET answered with a status whose body is not read (a redirect, an
    /// error, a 304, a revisit that changed kind).
    fn emit_unread(&self, url: &Url, resp: &Response) {
        self.emit(
            RequestKind::Get,
            url,
            Some(resp.status),
            0,
            None,
            false,
            Some(resp.latency),
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &self,
        kind: RequestKind,
        url: &Url,
        status: Option<u16>,
        bytes: u64,
        label: Option<Label>,
        saved_target: bool,
        latency: Option<Duration>,
    ) {
        let (counters, frontier) = {
            let core = self.core();
            (core.counters().clone(), core.frontier_len() as u64)
        };
        // A failed request (no status) was logged with its error already.
        if let (Some(status), Some(log)) = (status, lock(&self.crawl_log).as_mut()) {
            log.write(&LogLine {
                method: Some(method_name(kind)),
                status: Some(status),
                bytes: Some(bytes),
                label: label.map(label_name),
                saved: saved_target,
                ms: latency.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                ..LogLine::new(Event::Request, url.as_str())
            });
        }
        let event = RequestEvent {
            kind,
            url,
            status,
            bytes,
            label,
            saved_target,
            latency,
            counters: &counters,
            frontier,
        };
        lock(&self.observer).request(&event);
    }
}

/// The name of the file a response carries (`Content-Disposition`, else the
/// URL's last segment): it labels a file served under a generic type, and
/// names its extension.
fn file_name_of(resp: &Response) -> Option<String> {
    let disposition = resp
        .headers()
        .get(reqwest::header::CONTENT_DISPOSITION)
        .and_then(|v| v.to_str().ok());
    forager_core::mime::file_name(&resp.url, disposition)
}

fn kind_of(method: Method) -> RequestKind {
    match method {
        Method::Get => RequestKind::Get,
        Method::Head => RequestKind::Head,
    }
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every guarded value here is consistent between statements: a panic
    // while holding one cannot leave it half-updated in a way that matters.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn method_name(kind: RequestKind) -> &'static str {
    match kind {
        RequestKind::Get => "GET",
        RequestKind::Head => "HEAD",
    }
}

/// What the crawl log calls a response's label.
fn label_name(label: Label) -> &'static str {
    match label {
        Label::Html => "page",
        Label::Target => "target",
        Label::Neither => "neither",
    }
}

/// Seconds since the Unix epoch (the revisit schedule's clock).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn rfc3339_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(
        stop: Option<StopReason>,
        targets: u64,
        failed_seeds: Vec<(Url, u16)>,
    ) -> JobOutcome {
        JobOutcome {
            stop,
            counters: JobCounters {
                targets,
                ..JobCounters::default()
            },
            stats: StrategyStats::default(),
            frontier_left: 0,
            duration: Duration::ZERO,
            given_up: 0,
            refused_private: 0,
            failed_seeds,
            last_failure: None,
        }
    }

    /// Issue 39, point 2: what `forager crawl` and `/status` warn about.
    #[test]
    fn warnings_name_failed_seeds_and_an_empty_harvest_of_a_finished_run() {
        let seed = Url::parse("http://a.test/missing").expect("test URL");
        let o = outcome(
            Some(StopReason::FrontierEmpty),
            0,
            vec![(seed.clone(), 404)],
        );
        assert_eq!(
            o.warnings(),
            [
                "seed http://a.test/missing answered HTTP 404",
                "no target saved: the job finished with nothing harvested"
            ]
        );
        // A harvest with a failed seed among others still names it.
        let o = outcome(Some(StopReason::FrontierEmpty), 3, vec![(seed, 503)]);
        assert_eq!(
            o.warnings(),
            ["seed http://a.test/missing answered HTTP 503"]
        );
        // A normal harvest, an interrupted run, an unreachable one (an error
        // of its own): nothing to warn about.
        assert!(outcome(Some(StopReason::RequestBudget), 1, vec![])
            .warnings()
            .is_empty());
        assert!(outcome(None, 0, vec![]).warnings().is_empty());
        assert!(outcome(Some(StopReason::Unreachable), 0, vec![])
            .warnings()
            .is_empty());
    }
}
