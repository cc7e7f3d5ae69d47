//! A job's bookkeeping, with no I/O: what the crawl knows and what the next
//! checkpoint will commit. The async runner ([`super::Runner`]) is a thin
//! driver around it: it pops, fetches, and reports back here; everything it
//! decides about links is decided by [`JobCore`], so that it can be tested —
//! and replayed from a seed — without a network or a disk.
//!
//! # Invariants
//!
//! Every URL hash in `seen` is in exactly one of these places (checked by
//! [`JobCore::check_invariants`] in debug builds after every operation that
//! moves links):
//!
//! - **the frontier**: the strategy holds its id, or the link waits for its
//!   next try in `waiting_retries` (its record is in `links` until
//!   committed, in the store after);
//! - **in flight**: popped by a step that has not settled (`in_flight`); the
//!   stored frontier still has it, so a kill -9 loses nothing. A continuous
//!   job's revisit steps are in flight too, under ids the frontier never
//!   held; their URLs are in the revisit book (`core/revisits.rs`);
//! - **unsettled**: discovered by a step that has not settled, and neither
//!   queued nor done (a fetch-now link, a link being asked with HEAD, a
//!   redirect hop); its seen hash is held back from the checkpoint deltas
//!   until it settles, so after a kill -9 it is discovered again;
//! - **done**: fetched, dropped, or refused.
//!
//! A link leaves the stored frontier only when the step that popped it
//! settles. Abandoning steps (a stop, a failed write) puts every in-flight
//! and unsettled link back into the frontier.

use self::traps::{pattern_key, TrapGuard, DEFAULT_MAX_PATTERN_RUN};
use crate::codec;
use crate::config::{JobSpec, NeitherLinks};
use crate::extract::{self, PageLinks, Scope, UrlPatterns, UrlRules};
use crate::hash::IntHashBuilder;
use crate::learn::{EarlyStop, EarlyStopConfig};
use crate::link::{Link, LinkId, QueueKey, TagPath};
use crate::mime::Label;
use crate::record::SkipReason;
use crate::record::{FrontierEntry, JobCounters, JobDelta, JobRecord, ManifestRow, StopReason};
use crate::strategy::{Feedback, LabelSource, Strategy, StrategyStats, Triage};
pub use dispatch::{Held, NextStep, Readiness};

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use url::Url;

/// A link taken from the frontier by a step.
#[derive(Clone, Debug)]
pub struct Popped {
    pub id: LinkId,
    pub key: QueueKey,
    pub entry: FrontierEntry,
}

/// What a step did, for the reward of the action that chose its link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepTally {
    /// New, verified targets saved by the step (its page's links included).
    pub targets: u64,
    /// Requests it made (GET + HEAD, redirect hops included).
    pub requests: u64,
}

/// What to do with one newly discovered link, as the strategy decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Admitted {
    /// Queued in the frontier.
    Queued,
    /// Fetch it within the step (a predicted target); unsettled until then.
    FetchNow(Link),
    /// Ask the server with HEAD, then [`JobCore::after_head`]; unsettled until then.
    AskHead(Link),
    /// Never fetched.
    Dropped,
}

/// The links of a fetched page not admitted yet (see [`JobCore::admit_next`]).
pub struct PageAdmission {
    step: LinkId,
    /// Depth of the page's links.
    depth: u32,
    /// The page's own trap run.
    page_run: u32,
    page_pattern: u64,
    /// Shared as the referrer of every link admitted from the page.
    page_url: Arc<Url>,
    /// The tag path of the page's own link: a form's submission passes
    /// its provenance on to the links of the page it led to
    /// ([`crate::catalog::form_result_tag_path`]).
    page_tag_path: TagPath,
    links: std::vec::IntoIter<extract::ExtractedLink>,
}

/// A link not followed, and why (for the crawl log).
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    pub url: Url,
    pub reason: SkipReason,
    /// The page it was found on.
    pub from: Option<Url>,
}

/// What a HEAD request said about a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadAnswer {
    Label(Label),
    /// 4xx/5xx, disallowed, or redirected out of scope: never fetch it.
    Broken,
    /// The server would not say (no HEAD support, network error): let a GET tell.
    Unknown,
}

/// The rules a discovered link must pass before the strategy sees it.
#[derive(Clone, Debug)]
pub struct AdmitRules {
    pub scope: Scope,
    /// `[scope] include` / `exclude`.
    pub patterns: UrlPatterns,
    pub url_rules: UrlRules,
    /// Largest link depth from a seed; 0 = none.
    pub max_depth: u32,
    targets: crate::config::TargetsSpec,
}

impl AdmitRules {
    pub fn of(spec: &JobSpec) -> AdmitRules {
        AdmitRules {
            scope: Scope::new(spec.scope, &spec.seeds),
            patterns: spec.patterns.clone(),
            url_rules: UrlRules {
                max_len: spec.limits.max_url_len,
                strip_params: spec.limits.strip_params.clone(),
                ..UrlRules::default()
            },
            max_depth: spec.limits.max_depth,
            targets: spec.targets.clone(),
        }
    }
}

/// One job's state between two checkpoints. See the module documentation.
pub struct JobCore {
    name: String,
    strategy_name: &'static str,
    seed: u64,
    strategy: Box<dyn Strategy>,
    rules: AdmitRules,
    /// Records of the frontier links not committed yet.
    links: records::LinkRecords,
    /// Hashes of every URL discovered (queued, in flight, unsettled, done).
    /// Every link of a page is looked up here, a cache miss each in a large
    /// set: `admit_next` prefetches a link's slot before its other checks.
    seen: seen::SeenSet,
    /// Seen hashes not in a delta yet (those of unsettled links wait there).
    seen_pending: Vec<u64>,
    /// Unsettled links by URL hash, with the step that owns them.
    unsettled: HashMap<u64, (LinkId, Link), IntHashBuilder>,
    in_flight: HashMap<LinkId, Popped, IntHashBuilder>,
    /// Popped links handed to the driver to wait for their politeness key
    /// (`dispatch.rs`): in the frontier still, neither begun nor released.
    held: usize,
    /// Of `held`, the links held aside: their origin is blocked
    /// (`dispatch.rs`), they do not count against `look_ahead`.
    held_aside: usize,
    /// What the job did, counted through [`JobCore::count`] (the drivers
    /// report; only the core adds up).
    counters: JobCounters,
    next_link_id: u64,
    next_manifest_row: u64,
    early_stop: EarlyStop,
    traps: TrapGuard,
    /// Form links still admitted per host (`[targets] forms`).
    form_budget: crate::form::SiteBudget,
    delta: JobDelta,
    /// Manifest rows in `delta`, appended to `manifest.jsonl` once committed.
    uncommitted_rows: Vec<ManifestRow>,
    /// Links whose fetch failed for a reason that may pass, by URL hash:
    /// tries so far and when the first failed. In memory only: after a
    /// restart a waiting link gets its tries afresh.
    retries: HashMap<u64, Retry, IntHashBuilder>,
    /// Retried links out of the strategy's sight until the job has begun
    /// this many steps, by (step, id). See [`RETRY_SPACING_STEPS`].
    waiting_retries: BTreeMap<(u64, LinkId), QueueKey>,
    /// Steps begun in this run: the clock of `waiting_retries`.
    steps_begun: u64,
    /// Links given up in this run after their last try.
    pub given_up: u64,
    /// Links refused in this run by the SSRF guard (a private destination
    /// while `allow_private` is off).
    pub refused_private: u64,
    /// Links not followed since [`JobCore::take_skipped`] (every time one is
    /// met; the log writes each once), when the job keeps a crawl log
    /// (`[output] crawl_log`); the runner drains it after every admit call.
    skipped: Vec<Skipped>,
    log_skips: bool,
    /// `budget.neither_links = "skip"`: links the strategy still predicts
    /// neither when they are popped are dropped, not fetched.
    skip_neither: bool,
    /// A continuous job's revisit book (`None` for a job that runs once);
    /// see `revisits.rs`.
    revisits: Option<crate::revisit::RevisitBook>,
    /// Steps under way that revisit a URL of the book, by step id.
    revisit_steps: HashMap<LinkId, revisits::RevisitStep>,
}

/// Steps of the job a retried link waits before its next try, doubling with
/// each try. Counted in steps, not seconds, so that a crawl stays a function
/// of its seed and of the answers it gets; a link waits no longer once the
/// strategy has nothing else, and the host's back-off then spaces the tries
/// in time. Without the wait the best link would be tried again at once,
/// and a page that always fails would stall its host for the whole back-off.
pub const RETRY_SPACING_STEPS: u64 = 16;

/// Retries of a link whose page broke while its host answered (HTTP 500 and
/// the like, [`crate::fetch::is_page_error`]), whatever `[limits] retries`
/// allows beyond: such a page is most often broken for good, and every try
/// is a request that finds nothing (Scrapy retries twice too).
pub const PAGE_ERROR_RETRIES: u32 = 2;

/// Why a fetch failed, when the failure may pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassingFault {
    /// The host answered that the page broke ([`crate::fetch::is_page_error`]).
    PageError,
    /// The host could not be reached, timed out, is overloaded or down (429,
    /// 502–504), cut the body, or its robots.txt could not be read.
    Outage,
}

/// The failed tries of one link.
#[derive(Clone, Copy, Debug)]
struct Retry {
    tries: u32,
    first_failed: std::time::Instant,
}

/// What became of a link whose fetch failed for a reason that may pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryVerdict {
    /// Back in the frontier for another try, after a wait ([`RETRY_SPACING_STEPS`]).
    Again { tries: u32 },
    /// Out of tries or of time: done, counted in `given_up`.
    GivenUp { tries: u32 },
}

/// A checkpoint's content, taken from the core.
pub struct Checkpoint {
    pub delta: JobDelta,
    /// The manifest rows it commits, for `manifest.jsonl` once it did.
    pub rows: Vec<ManifestRow>,
    /// Frontier ids whose records it commits: dropped from memory once it did.
    pub committed_links: Vec<LinkId>,
}

/// Something a driver (the runner, the replay) saw while it took a step,
/// for the job's counters: the core adds them up, so that every driver
/// counts alike ([`JobCore::count`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// A request sent (a redirect hop included); `head` for a HEAD.
    Request { head: bool },
    /// robots.txt requests (not in the requests the budget counts).
    RobotsFetches(u64),
    /// A URL robots.txt disallows.
    RobotsDisallowed,
    /// A redirect hop followed.
    Redirect,
    /// A redirect target the URL limits refuse.
    RejectedLink,
    /// A redirect target out of the job's scope.
    OutOfScope,
    /// An HTTP 4xx or 5xx answer.
    HttpError,
    /// A request or a body read that failed without an answer.
    FetchError,
    /// An HTML page read, `bytes` of body.
    Page { bytes: u64 },
    /// A response that was neither a page nor a target.
    Neither,
    /// Body bytes downloaded and not counted with a page.
    BodyBytes(u64),
    /// A target saved, of `bytes`.
    Target { bytes: u64 },
    /// A body or a page's links cut (once per response).
    Truncated,
    /// A link blocked by its extension, or a document on the poison list.
    Blocked,
}

impl JobCore {
    /// Count what a driver saw (see [`Count`]).
    pub fn count(&mut self, seen: Count) {
        let c = &mut self.counters;
        match seen {
            Count::Request { head } => {
                c.requests += 1;
                c.heads += u64::from(head);
            }
            Count::RobotsFetches(n) => c.robots_fetches += n,
            Count::RobotsDisallowed => c.robots_disallowed += 1,
            Count::Redirect => c.redirects += 1,
            Count::RejectedLink => c.rejected_links += 1,
            Count::OutOfScope => c.out_of_scope += 1,
            Count::HttpError => c.http_errors += 1,
            Count::FetchError => c.fetch_errors += 1,
            Count::Page { bytes } => {
                c.pages += 1;
                c.bytes += bytes;
            }
            Count::Neither => c.neither += 1,
            Count::BodyBytes(n) => c.bytes += n,
            Count::Target { bytes } => {
                c.targets += 1;
                c.target_bytes += bytes;
            }
            Count::Truncated => c.truncated += 1,
            Count::Blocked => c.blocked += 1,
        }
    }

    /// The job's counters as of now.
    pub fn counters(&self) -> &JobCounters {
        &self.counters
    }
}

impl JobCore {
    /// A fresh job: nothing seen, the strategy built from the spec.
    pub fn new(spec: &JobSpec) -> JobCore {
        JobCore {
            name: spec.name.clone(),
            strategy_name: spec.strategy.name(),
            seed: spec.seed,
            strategy: {
                let mut s = spec.strategy.build(spec.seed);
                s.use_targets(&spec.targets.target_set());
                s
            },
            rules: AdmitRules::of(spec),
            links: records::LinkRecords::default(),
            seen: seen::SeenSet::default(),
            seen_pending: Vec::new(),
            unsettled: HashMap::default(),
            in_flight: HashMap::default(),
            held: 0,
            held_aside: 0,
            counters: JobCounters::default(),
            next_link_id: 0,
            next_manifest_row: 0,
            early_stop: EarlyStop::new(EarlyStopConfig::default()),
            traps: TrapGuard::new(DEFAULT_MAX_PATTERN_RUN),
            form_budget: crate::form::SiteBudget::new(spec.targets.forms.map_or(0, |f| f.per_site)),
            delta: JobDelta::new(&spec.name),
            uncommitted_rows: Vec::new(),
            retries: HashMap::default(),
            waiting_retries: BTreeMap::new(),
            steps_begun: 0,
            given_up: 0,
            refused_private: 0,
            skipped: Vec::new(),
            log_skips: spec.output.crawl_log,
            skip_neither: spec.budget.neither_links == NeitherLinks::Skip,
            revisits: spec
                .revisit()
                .map(|r| crate::revisit::RevisitBook::new(r.schedule, r.policy)),
            revisit_steps: HashMap::new(),
        }
    }

    /// A fresh job crawled by `strategy` rather than the one its spec names
    /// (a test's or a benchmark's own configuration of it).
    pub fn with_strategy(spec: &JobSpec, strategy: Box<dyn Strategy>) -> JobCore {
        let mut core = JobCore::new(spec);
        core.strategy = strategy;
        core
    }

    /// Note a link not followed, for the crawl log.
    fn skip(&mut self, url: &Url, reason: SkipReason, from: Option<&Url>) {
        if self.log_skips {
            self.skipped.push(Skipped {
                url: url.clone(),
                reason,
                from: from.cloned(),
            });
        }
    }

    /// The links not followed since the last call.
    pub fn take_skipped(&mut self) -> Vec<Skipped> {
        std::mem::take(&mut self.skipped)
    }

    /// Restore what a checkpoint committed: the record, the frontier's keys in
    /// id order (records stay in the store until popped) and the seen set.
    /// The learner itself is decoded into [`JobCore::strategy_mut`] first (the
    /// runner does it on a second thread while the frontier loads).
    pub fn restore(
        &mut self,
        record: &JobRecord,
        frontier: Vec<(LinkId, QueueKey)>,
        seen: Vec<u64>,
    ) -> Result<(), codec::CodecError> {
        self.early_stop = codec::decode(&record.early_stop_state)?;
        self.traps = codec::decode(&record.trap_state)?;
        self.counters = record.counters.clone();
        self.next_link_id = record.next_link_id;
        self.next_manifest_row = record.next_manifest_row;
        self.seen = seen.into_iter().collect();
        for (id, key) in frontier {
            self.strategy.push(id, key);
        }
        Ok(())
    }

    pub fn strategy(&self) -> &dyn Strategy {
        self.strategy.as_ref()
    }

    pub fn strategy_mut(&mut self) -> &mut dyn Strategy {
        &mut *self.strategy
    }

    pub fn strategy_stats(&self) -> StrategyStats {
        self.strategy.stats()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn url_rules(&self) -> &UrlRules {
        &self.rules.url_rules
    }

    /// Whether `url` belongs to the job: within its scope, included by its
    /// patterns and not excluded.
    pub fn in_scope(&self, url: &Url) -> bool {
        self.rules.scope.contains(url) && self.rules.patterns.admits(url)
    }

    /// Links waiting in the frontier (not those in flight), held ones too.
    pub fn frontier_len(&self) -> usize {
        self.strategy.len() + self.waiting_retries.len() + self.held
    }

    /// Steps under way.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn seen_len(&self) -> usize {
        self.seen.len()
    }

    /// Queue every seed not seen yet (a new job, or seeds added to its file).
    /// Returns how many were new.
    pub fn add_seeds(&mut self, seeds: &[Url]) -> usize {
        let mut added = 0;
        for seed in seeds {
            let mut url = seed.clone();
            extract::normalize(&mut url, &self.rules.url_rules);
            if !self.mark_seen(&url) {
                continue;
            }
            let link = Link::seed(url);
            // Seeds are pages by assumption: the strategy only chooses their queue.
            let key = match self.strategy.triage(&link, Some(Label::Html)) {
                Triage::Enqueue(key) => key,
                _ => QueueKey::default(),
            };
            self.enqueue(link, key);
            added += 1;
        }
        self.debug_check();
        added
    }

    /// Queue the seeds again, seen or not: a job that stopped `unreachable`
    /// fetched nothing, so its next run (a restart, an edit of its file)
    /// starts over from them. Returns how many were queued (none while the
    /// frontier still holds links: the job is not over).
    pub fn requeue_seeds(&mut self, seeds: &[Url]) -> usize {
        if !self.strategy.is_empty() {
            return 0;
        }
        let mut added = 0;
        for seed in seeds {
            let mut url = seed.clone();
            extract::normalize(&mut url, &self.rules.url_rules);
            self.mark_seen(&url);
            let link = Link::seed(url);
            let key = match self.strategy.triage(&link, Some(Label::Html)) {
                Triage::Enqueue(key) => key,
                _ => QueueKey::default(),
            };
            self.enqueue(link, key);
            added += 1;
        }
        self.debug_check();
        added
    }

    /// Whether the job is finished for good before any work: its frontier was
    /// emptied by an earlier run, or its budget is spent.
    pub fn stored_stop_reason(&self, spec: &JobSpec) -> Option<StopReason> {
        // A continuous job with pages to revisit never runs out of work.
        if self.strategy.is_empty()
            && self.held == 0
            && self.in_flight.is_empty()
            && self.counters.requests > 0
            && !self.has_revisits()
        {
            return Some(StopReason::FrontierEmpty);
        }
        self.budget_exhausted(spec)
    }

    pub fn budget_exhausted(&self, spec: &JobSpec) -> Option<StopReason> {
        let b = &spec.budget;
        if b.requests > 0 && self.counters.requests >= b.requests {
            Some(StopReason::RequestBudget)
        } else if b.bytes > 0 && self.counters.bytes >= b.bytes {
            Some(StopReason::ByteBudget)
        } else {
            None
        }
    }

    /// Why no new step may start, if none may: budget, early stop. An empty
    /// frontier is the driver's to judge (steps in flight may still fill it).
    pub fn should_stop(&self, spec: &JobSpec) -> Option<StopReason> {
        if let Some(r) = self.budget_exhausted(spec) {
            return Some(r);
        }
        // The early stop judges a one-off crawl's harvest rate; a continuous
        // job's rate is that of its revisits, mostly of unchanged pages.
        if spec.budget.early_stop && !self.is_continuous() && self.early_stop.should_stop() {
            return Some(StopReason::EarlyStop);
        }
        None
    }

    /// Retried links whose wait is over go back to the strategy.
    fn release_due_retries(&mut self) {
        while let Some(entry) = self.waiting_retries.first_entry() {
            if entry.key().0 > self.steps_begun {
                break;
            }
            let ((_, id), key) = entry.remove_entry();
            self.strategy.push(id, key);
        }
    }

    /// Start the step of a popped link whose record is `entry`; with
    /// `None` (no record) the id leaves the frontier for good and no step
    /// begins. Returns whether a step began.
    pub fn begin_step(&mut self, id: LinkId, key: QueueKey, entry: Option<FrontierEntry>) -> bool {
        let started = match entry {
            Some(entry) => {
                self.in_flight.insert(id, Popped { id, key, entry });
                self.steps_begun += 1;
                true
            }
            None => {
                self.delta.frontier_removed.push(id);
                false
            }
        };
        self.debug_check();
        started
    }

    /// A popped link goes back to the strategy (its record could not be read).
    pub fn unpop(&mut self, id: LinkId, key: QueueKey, entry: Option<FrontierEntry>) {
        if let Some(entry) = entry {
            self.links.put_back(id, entry);
        }
        self.strategy.push(id, key);
    }

    /// The record of a step's link.
    pub fn popped(&self, id: LinkId) -> Option<&Popped> {
        self.in_flight.get(&id)
    }

    /// The step of `id` is done: its link leaves the stored frontier, the
    /// strategy gets its reward, the trap and early-stop counts learn from it.
    pub fn settle_step(&mut self, id: LinkId, tally: StepTally) {
        let Some(p) = self.in_flight.remove(&id) else {
            debug_assert!(false, "settling {id}, which is not in flight");
            return;
        };
        self.delta.frontier_removed.push(id);
        // What the step left unsettled (a refused hop, a failed fetch-now) is done.
        if !self.unsettled.is_empty() {
            self.unsettled.retain(|_, (step, _)| *step != id);
        }
        let reward = u32::try_from(tally.targets).unwrap_or(u32::MAX);
        self.strategy.learn(Feedback::Reward {
            id: p.id,
            link: &p.entry.link,
            key: p.key,
            targets: reward,
            fetched: tally.requests > 0,
        });
        self.traps.record_page(&p.entry.link.url, reward);
        if let (true, Some(referrer)) = (reward > 0, &p.entry.link.referrer) {
            self.traps.credit_referrer(referrer);
        }
        self.early_stop.record(tally.requests, tally.targets);
        self.debug_check();
    }

    /// Every step under way is cancelled: popped links go back under their
    /// own ids (the stored frontier still has them) and unsettled links go
    /// back to the frontier as new entries.
    pub fn abandon_all(&mut self) {
        self.abandon_revisits();
        debug_assert_eq!(
            self.held, 0,
            "held links are released before the steps are abandoned"
        );
        let mut popped: Vec<Popped> = self.in_flight.drain().map(|(_, p)| p).collect();
        popped.sort_by_key(|p| p.id);
        for p in popped {
            self.links.put_back(p.id, p.entry);
            self.strategy.push(p.id, p.key);
        }
        let mut links: Vec<Link> = self.unsettled.drain().map(|(_, (_, l))| l).collect();
        links.sort_by(|a, b| a.url.as_str().cmp(b.url.as_str()));
        for link in links {
            self.requeue(link);
        }
        self.debug_check();
    }

    /// A link that must not be lost but has no better place: back into the frontier.
    fn requeue(&mut self, link: Link) {
        let key = self.requeue_key(&link);
        self.enqueue(link, key);
    }

    /// The key of a link going back to the frontier.
    fn requeue_key(&mut self, link: &Link) -> QueueKey {
        match self.strategy.triage(link, Some(Label::Html)) {
            Triage::Enqueue(key) => key,
            _ => QueueKey::default(),
        }
    }

    /// A link of a step that could not be fetched (no budget left): back to
    /// the frontier as a new entry, for a larger budget. (A step's own popped
    /// link then leaves the stored frontier under its old id when it settles.)
    pub fn keep_for_later(&mut self, link: Link) {
        self.unsettled.remove(&crate::link::url_hash(&link.url));
        self.requeue(link);
        self.debug_check();
    }

    /// A fetch of `link` failed for a reason that may pass: try it again later
    /// (a new frontier entry) while `[limits] retries` and `retry_for` allow.
    pub fn retry_or_give_up(
        &mut self,
        link: Link,
        fault: PassingFault,
        spec: &JobSpec,
        now: std::time::Instant,
    ) -> RetryVerdict {
        let h = crate::link::url_hash(&link.url);
        let retry = self.retries.entry(h).or_insert(Retry {
            tries: 0,
            first_failed: now,
        });
        retry.tries += 1;
        let tries = retry.tries;
        let in_time = now.saturating_duration_since(retry.first_failed) < spec.limits.retry_for;
        let allowed = match fault {
            PassingFault::PageError => spec.limits.retries.min(PAGE_ERROR_RETRIES),
            PassingFault::Outage => spec.limits.retries,
        };
        if tries <= allowed && in_time {
            self.unsettled.remove(&h);
            let key = self.requeue_key(&link);
            let id = self.record_entry(link, key);
            // Pushed when its wait is over, or at a restore; what its triage
            // computed (sb: its ranking features) is kept for it now.
            self.strategy.triaged_for_later(id);
            let wait = RETRY_SPACING_STEPS << (tries - 1).min(16);
            self.waiting_retries
                .insert((self.steps_begun.saturating_add(wait), id), key);
            self.debug_check();
            RetryVerdict::Again { tries }
        } else {
            self.retries.remove(&h);
            self.unsettled.remove(&h);
            self.given_up += 1;
            RetryVerdict::GivenUp { tries }
        }
    }

    /// A link whose origin is given up (it failed more times in a row than
    /// `[limits] retries` allows a link): done without another try,
    /// counted in `given_up`.
    pub fn give_up(&mut self, link: &Link) {
        let h = crate::link::url_hash(&link.url);
        self.retries.remove(&h);
        self.unsettled.remove(&h);
        self.given_up += 1;
        self.debug_check();
    }

    /// A link was fetched: forget its failed tries.
    pub fn fetched(&mut self, url: &Url) {
        if !self.retries.is_empty() {
            self.retries.remove(&crate::link::url_hash(url));
        }
    }

    /// An unsettled link is done (fetched, refused, or failed for good).
    /// A no-op for a link that was not unsettled (a new page link the
    /// strategy queues or drops at once: the common case, which costs no hash).
    pub fn settle_link(&mut self, url: &Url) {
        if !self.unsettled.is_empty() {
            self.unsettled.remove(&crate::link::url_hash(url));
        }
    }

    fn enqueue(&mut self, link: Link, key: QueueKey) {
        let id = self.record_entry(link, key);
        self.strategy.push(id, key);
    }

    /// A new frontier record (stored at the next checkpoint), not yet in the strategy.
    fn record_entry(&mut self, link: Link, key: QueueKey) -> LinkId {
        let id = LinkId(self.next_link_id);
        self.next_link_id += 1;
        // Shared, not copied: the delta and the records hold one allocation.
        let entry = Arc::new(FrontierEntry { link, key });
        self.delta.frontier_added.push((id, Arc::clone(&entry)));
        self.links.insert_new(id, entry);
        id
    }

    /// Add a URL's hash to the seen set; false when it was there.
    fn mark_seen(&mut self, url: &Url) -> bool {
        self.mark_seen_hash(crate::link::url_hash(url))
    }

    /// [`JobCore::mark_seen`] of a URL hashed already.
    fn mark_seen_hash(&mut self, h: u64) -> bool {
        if !self.seen.insert(h) {
            return false;
        }
        self.seen_pending.push(h);
        true
    }

    /// Triage every new in-scope link of a page the step fetched. Links the
    /// strategy wants now or wants asked come back (unsettled); the rest are
    /// queued or dropped here. Every link is triaged before any HEAD it asks
    /// is answered: right when those HEADs are units of their own (many steps
    /// in flight); a driver that answers them in page order uses
    /// [`JobCore::start_admission`] and [`JobCore::admit_next`] instead, so
    /// that the strategy learns each answer before it triages the next link.
    pub fn admit_links(
        &mut self,
        step: LinkId,
        page: &Link,
        page_url: &Url,
        found: PageLinks,
        known_label: &dyn Fn(&Url) -> Option<Label>,
        spec: &JobSpec,
    ) -> Vec<Admitted> {
        let mut admission = self.start_admission(step, page, page_url, found);
        let mut out = Vec::with_capacity(admission.links.len());
        while let Some(admitted) = self.admit_next(&mut admission, known_label, spec) {
            out.push(admitted);
        }
        out
    }

    /// Begin admitting the links of a page the step fetched, one at a time
    /// ([`JobCore::admit_next`]).
    pub fn start_admission(
        &mut self,
        step: LinkId,
        page: &Link,
        page_url: &Url,
        found: PageLinks,
    ) -> PageAdmission {
        let r = &found.rejected;
        self.counters.rejected_links += r.bad_url + r.scheme + r.too_long + r.repeated_segments;
        PageAdmission {
            step,
            depth: page.depth + 1,
            page_run: page.pattern_run,
            // The page's side of every link's trap run, hashed once per page
            // rather than once per link (as `TrapGuard::run_of` would).
            page_pattern: pattern_key(page_url),
            page_url: Arc::new(page_url.clone()),
            page_tag_path: page.tag_path.clone(),
            links: found.links.into_iter(),
        }
    }

    /// Triage the page's next new in-scope link; `None` once every link
    /// was seen. A link this returns as [`Admitted::AskHead`] may be asked
    /// and answered ([`JobCore::after_head`]) before the next call.
    pub fn admit_next(
        &mut self,
        page: &mut PageAdmission,
        known_label: &dyn Fn(&Url) -> Option<Label>,
        spec: &JobSpec,
    ) -> Option<Admitted> {
        let page_url = &page.page_url;
        let depth = page.depth;
        for l in page.links.by_ref() {
            if !self.in_scope(&l.url) {
                self.counters.out_of_scope += 1;
                self.skip(&l.url, SkipReason::Scope, Some(page_url));
                continue;
            }
            // The seen set's slot loads while the trap and extension checks run.
            let h = crate::link::url_hash(&l.url);
            self.seen.prefetch(h);
            let pattern_run = if pattern_key(&l.url) == page.page_pattern {
                page.page_run.saturating_add(1)
            } else {
                0
            };
            debug_assert_eq!(
                pattern_run,
                TrapGuard::run_of(&l.url, page_url, page.page_run)
            );
            if !self.traps.admits(&l.url, pattern_run) {
                self.counters.trap_links += 1;
                self.skip(&l.url, SkipReason::Trap, Some(page_url));
                continue;
            }
            if self.rules.targets.blocks_extension(&l.url) {
                self.counters.blocked += 1;
                self.skip(&l.url, SkipReason::BlockedExtension, Some(page_url));
                continue;
            }
            if self.rules.max_depth > 0 && depth > self.rules.max_depth {
                self.counters.rejected_links += 1;
                self.skip(&l.url, SkipReason::Limits, Some(page_url));
                continue;
            }
            if !self.mark_seen_hash(h) {
                continue;
            }
            // A form's submissions are capped per site (and per form by
            // the extractor): past the cap they are dropped for this run.
            if l.tag_path.as_str().starts_with(crate::catalog::FORM_PREFIX)
                && !self.form_budget.admit(l.url.host_str().unwrap_or(""))
            {
                self.counters.rejected_links += 1;
                self.skip(&l.url, SkipReason::Limits, Some(page_url));
                continue;
            }
            let tag_path = crate::catalog::form_result_tag_path(
                page.page_tag_path.as_str(),
                page_url,
                l.tag_path.as_str(),
                &l.url,
            )
            .unwrap_or(l.tag_path);
            let link = Link {
                url: l.url,
                tag_path,
                anchor: l.anchor,
                depth,
                referrer: Some(Arc::clone(page_url)),
                pattern_run,
            };
            let known = if extract::sitemap::is_sitemap(&link.tag_path)
                || crate::catalog::catalog_of(&link.tag_path).is_some()
            {
                // A sitemap or a catalog (a CKAN API's next page) is read as
                // a link source whatever its type says.
                Some(Label::Html)
            } else {
                known_label(&link.url)
            };
            let admitted = self.triage(page.step, link, known, spec, false);
            self.debug_check();
            return Some(admitted);
        }
        None
    }

    /// Queue a link found outside a page (a sitemap listed in robots.txt, a
    /// catalog at a well-known path):
    /// `include` patterns do not apply to it (its links are checked as any),
    /// `exclude` patterns do.
    pub fn admit_listed(&mut self, link: Link) -> bool {
        let wanted =
            self.rules.scope.contains(&link.url) && !self.rules.patterns.excludes(&link.url);
        if !wanted {
            self.skip(&link.url, SkipReason::Scope, link.referrer.as_deref());
            return false;
        }
        if !self.mark_seen(&link.url) {
            return false;
        }
        self.requeue(link);
        self.debug_check();
        true
    }

    /// One triage decision for a seen, in-scope link; `known` is its label if
    /// the MIME filters or a HEAD told it. `asked`: a HEAD was already made.
    pub fn triage(
        &mut self,
        step: LinkId,
        link: Link,
        mut known: Option<Label>,
        spec: &JobSpec,
        asked: bool,
    ) -> Admitted {
        loop {
            match self.strategy.triage(&link, known) {
                Triage::Enqueue(key) => {
                    self.settle_link(&link.url);
                    self.enqueue(link, key);
                    return Admitted::Queued;
                }
                Triage::FetchNow => {
                    self.unsettled
                        .insert(crate::link::url_hash(&link.url), (step, link.clone()));
                    return Admitted::FetchNow(link);
                }
                Triage::Drop => {
                    self.settle_link(&link.url);
                    self.counters.dropped += 1;
                    self.skip(&link.url, SkipReason::Strategy, link.referrer.as_deref());
                    return Admitted::Dropped;
                }
                Triage::Head if asked || self.budget_exhausted(spec).is_some() => {
                    // Already asked once, or no budget left to ask: let a GET tell.
                    known = Some(Label::Html);
                }
                Triage::Head => {
                    self.unsettled
                        .insert(crate::link::url_hash(&link.url), (step, link.clone()));
                    return Admitted::AskHead(link);
                }
            }
        }
    }

    /// What a HEAD said about a link [`Admitted::AskHead`] returned.
    pub fn after_head(
        &mut self,
        step: LinkId,
        link: Link,
        answer: HeadAnswer,
        spec: &JobSpec,
    ) -> Admitted {
        let admitted = match answer {
            HeadAnswer::Label(label) => self.triage(step, link, Some(label), spec, true),
            HeadAnswer::Unknown => self.triage(step, link, Some(Label::Html), spec, true),
            HeadAnswer::Broken => {
                self.unsettled.remove(&crate::link::url_hash(&link.url));
                self.counters.dropped += 1;
                self.skip(&link.url, SkipReason::Broken, link.referrer.as_deref());
                Admitted::Dropped
            }
        };
        self.debug_check();
        admitted
    }

    /// A redirect hop to fetch within the step: seen from now on, unsettled
    /// until the chain ends. `false` when it was seen already.
    pub fn admit_hop(&mut self, step: LinkId, from: &Link, next: &Url) -> bool {
        if !self.mark_seen(next) {
            return false;
        }
        let hop = Link {
            url: next.clone(),
            ..from.clone()
        };
        self.unsettled
            .insert(crate::link::url_hash(next), (step, hop));
        true
    }

    /// Tell the strategy whether a fetched page was relevant (see [`Feedback::PageRelevance`]).
    pub fn page_relevance(&mut self, link: &Link, url: &Url, relevant: bool) {
        self.strategy.learn(Feedback::PageRelevance {
            link,
            url,
            relevant,
        });
    }

    /// Feed the strategy a label observed on a real response.
    pub fn observe(&mut self, link: &Link, label: Label, source: LabelSource) {
        self.strategy.learn(Feedback::Label {
            link,
            label,
            source,
        });
    }

    /// A target was saved: its manifest row goes with the next checkpoint.
    pub fn add_manifest_row(&mut self, row: ManifestRow) {
        self.delta
            .manifest_added
            .push((self.next_manifest_row, row.clone()));
        self.next_manifest_row += 1;
        self.uncommitted_rows.push(row);
    }

    /// Take everything since the last checkpoint as one delta, with the job
    /// record. Seen hashes of unsettled links stay behind (module docs).
    pub fn take_checkpoint(&mut self, stop: Option<StopReason>, now_secs: u64) -> Checkpoint {
        let record = JobRecord {
            strategy: self.strategy_name.to_string(),
            seed: self.seed,
            counters: self.counters.clone(),
            strategy_state: self.strategy.save(),
            early_stop_state: codec::encode(&self.early_stop),
            trap_state: codec::encode(&self.traps),
            next_link_id: self.next_link_id,
            next_manifest_row: self.next_manifest_row,
            stop,
            updated_at: now_secs,
        };
        let mut delta = std::mem::replace(&mut self.delta, JobDelta::new(&self.name));
        // The next interval queues about as many links as this one: room for
        // them now rather than a doubling copy of every record as it grows.
        self.delta
            .frontier_added
            .reserve(delta.frontier_added.len());
        let unsettled = &self.unsettled;
        let (held, settled): (Vec<u64>, Vec<u64>) = std::mem::take(&mut self.seen_pending)
            .into_iter()
            .partition(|h| unsettled.contains_key(h));
        self.seen_pending = held;
        delta.seen_added = settled;
        delta.record = Some(record);
        self.stage_revisits(&mut delta);
        let committed_links = delta.frontier_added.iter().map(|(id, _)| *id).collect();
        Checkpoint {
            delta,
            rows: std::mem::take(&mut self.uncommitted_rows),
            committed_links,
        }
    }

    /// The checkpoint committed: its frontier records now live in the store.
    pub fn committed(&mut self, links: &[LinkId]) {
        for id in links {
            self.links.drop_committed(*id);
        }
    }

    /// The checkpoint failed: keep its delta so the retry commits it first.
    pub fn commit_failed(&mut self, mut older: JobDelta, rows: Vec<ManifestRow>) {
        older.record = None;
        // Its seen hashes go back to pending, in front of the newer ones.
        let mut seen = std::mem::take(&mut older.seen_added);
        seen.append(&mut self.seen_pending);
        self.seen_pending = seen;
        self.delta.absorb_older(older);
        let mut rows = rows;
        rows.append(&mut self.uncommitted_rows);
        self.uncommitted_rows = rows;
    }

    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            self.check_invariants();
        }
    }

    /// Panics when an invariant of the module documentation does not hold.
    pub fn check_invariants(&self) {
        for (h, (step, link)) in &self.unsettled {
            assert!(
                self.seen.contains(*h),
                "unsettled link {} is not in the seen set",
                link.url
            );
            assert!(
                self.in_flight.contains_key(step),
                "unsettled link {} belongs to {step}, which is not in flight",
                link.url
            );
        }
        for id in self.in_flight.keys() {
            assert!(
                !self.links.contains(*id),
                "{id} is in flight and in the frontier records"
            );
        }
        for (_, id) in self.waiting_retries.keys() {
            assert!(
                !self.in_flight.contains_key(id),
                "{id} is in flight and waiting for a retry"
            );
        }
        assert!(
            self.next_link_id >= self.links.len() as u64,
            "more frontier records than ids given"
        );
    }
}

mod dispatch;
mod records;
pub mod replay;
mod revisits;
mod seen;
#[cfg(test)]
mod tests;
pub mod traps;
