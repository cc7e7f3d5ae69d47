//! One job's crawl loop.

use super::traps::{TrapGuard, DEFAULT_MAX_PATTERN_RUN};
use super::{CrawlObserver, Engine, EngineError, RequestEvent, RequestKind};
use crate::codec;
use crate::config::JobSpec;
use crate::extract::sitemap::{self, SITEMAP_TAG_PATH};
use crate::extract::{self, ExtractLimits, PageLinks, Scope, UrlRules};
use crate::fetch::{FetchError, Method, Politeness, Response, RobotsRules};
use crate::learn::{EarlyStop, EarlyStopConfig};
use crate::link::QueueKey;
use crate::link::{Link, LinkId, TagPath};
use crate::mime::{essence, Label, MimeFamily, TargetSet};
use crate::output::TargetDir;
use crate::store::{FrontierEntry, JobCounters, JobDelta, JobRecord, ManifestRow, StopReason};
use crate::strategy::{LabelSource, Strategy, StrategyStats, Triage};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tracing::{debug, info, warn};
use url::Url;

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
}

/// What one GET produced.
enum Fetched {
    /// An HTML page and the links on it.
    Page { url: Url, links: Box<PageLinks> },
    /// A target, saved.
    Target,
    /// Neither, an error, or nothing fetched (disallowed, out of scope, already seen).
    Nothing,
}

/// Runs one job: restore, loop, checkpoint.
pub struct Runner<'a> {
    engine: &'a Engine,
    spec: &'a JobSpec,
    targets: TargetSet,
    scope: Scope,
    limits: Arc<ExtractLimits>,
    politeness: Politeness,
    strategy: Box<dyn Strategy>,
    /// Records of the frontier links not committed yet, by id (the strategy
    /// holds only ids; committed records are read from the store when popped).
    links: HashMap<LinkId, FrontierEntry>,
    /// Hashes of every URL discovered (queued, fetched, dropped).
    seen: HashSet<u64>,
    next_link_id: u64,
    next_manifest_row: u64,
    counters: JobCounters,
    early_stop: EarlyStop,
    traps: TrapGuard,
    /// Links of the current step that are in the seen set but neither in the
    /// frontier nor done (fetch-now links, HEADs and redirect hops under way):
    /// if the step is cancelled they go back to the frontier, so none is lost.
    unsettled: HashMap<u64, Link>,
    delta: JobDelta,
    /// Manifest rows in `delta`, appended to `manifest.jsonl` once committed.
    uncommitted_rows: Vec<ManifestRow>,
    out: TargetDir,
    observer: &'a mut (dyn CrawlObserver + Send),
    last_checkpoint: Instant,
    /// Header latency of the last answered request, for its event.
    last_latency: Option<Duration>,
    /// The link the current step popped, to put back if the step is abandoned.
    in_step: Option<Popped>,
    /// `manifest.jsonl` missed rows (a failed append): rewrite it from the store.
    manifest_stale: bool,
    /// Origins whose robots.txt sitemaps were queued in this run.
    sitemap_origins: HashSet<String>,
}

/// A link taken from the strategy by the step under way.
struct Popped {
    id: LinkId,
    key: QueueKey,
    entry: FrontierEntry,
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
        });
        let early_stop_config = EarlyStopConfig::default();
        let mut runner = Runner {
            engine,
            spec,
            targets: spec.targets.target_set(),
            scope: Scope::new(spec.scope, &spec.seeds),
            limits,
            politeness: Politeness {
                delay: spec.politeness.delay,
                robots: spec.politeness.robots,
                user_agent: spec.politeness.user_agent.clone(),
            },
            strategy: spec.strategy.build(spec.seed),
            links: HashMap::new(),
            seen: HashSet::new(),
            next_link_id: 0,
            next_manifest_row: 0,
            counters: JobCounters::default(),
            early_stop: EarlyStop::new(early_stop_config),
            traps: TrapGuard::new(DEFAULT_MAX_PATTERN_RUN),
            unsettled: HashMap::new(),
            delta: JobDelta::new(&spec.name),
            uncommitted_rows: Vec::new(),
            out,
            observer,
            last_checkpoint: Instant::now(),
            last_latency: None,
            in_step: None,
            manifest_stale: false,
            sitemap_origins: HashSet::new(),
        };
        runner.restore_or_seed()?;
        Ok(runner)
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
            self.seed_frontier();
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
        let strategy = &mut self.strategy;
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
        self.early_stop = codec::decode(&record.early_stop_state).map_err(restore_err)?;
        self.traps = codec::decode(&record.trap_state).map_err(restore_err)?;
        self.counters = record.counters;
        self.next_link_id = record.next_link_id;
        self.next_manifest_row = record.next_manifest_row;
        self.seen = loaded.seen.into_iter().collect();
        // Link records stay in the store until popped.
        let frontier = loaded.frontier.len();
        for (id, key) in loaded.frontier {
            self.strategy.push(id, key);
        }
        let rows: Vec<ManifestRow> = loaded.manifest.into_iter().map(|(_, r)| r).collect();
        self.out
            .rewrite_manifest(&rows)
            .map_err(|source| EngineError::Output {
                job: job.clone(),
                source,
            })?;
        info!(
            job = %job,
            frontier,
            seen = self.seen.len(),
            targets = rows.len(),
            "resumed from checkpoint"
        );
        Ok(())
    }

    fn seed_frontier(&mut self) {
        for seed in &self.spec.seeds {
            let mut url = seed.clone();
            extract::normalize(&mut url, &self.limits.url_rules);
            if !self.seen.insert(url_hash(&url)) {
                continue;
            }
            self.delta.seen_added.push(url_hash(&url));
            let link = Link::seed(url);
            // Seeds are pages by assumption: the strategy only chooses their queue.
            let key = match self.strategy.triage(&link, Some(Label::Html)) {
                Triage::Enqueue(key) => key,
                _ => Default::default(),
            };
            self.enqueue(link, key);
        }
    }

    fn enqueue(&mut self, link: Link, key: QueueKey) {
        let id = LinkId(self.next_link_id);
        self.next_link_id += 1;
        let entry = FrontierEntry { link, key };
        self.delta.frontier_added.push((id, entry.clone()));
        self.links.insert(id, entry);
        self.strategy.push(id, key);
    }

    /// Crawl until the job finishes or `stop` turns true; checkpoint on the way out.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) -> Result<JobOutcome, EngineError> {
        let started = Instant::now();
        let job = self.spec.name.clone();
        let mut reason = self.stored_stop_reason()?;
        if reason.is_none() {
            info!(job = %job, strategy = self.spec.strategy.name(), "crawl started");
        }
        let mut stopping = false;
        while reason.is_none() {
            if *stop.borrow() {
                stopping = true;
                break;
            }
            let stepped = tokio::select! {
                biased;
                // A closed channel (sender dropped) means stop too.
                _ = stop.changed() => {
                    self.abandon_step();
                    stopping = true;
                    break;
                }
                r = self.step() => r,
            };
            let mut failed = match stepped {
                Ok(r) => {
                    reason = r;
                    None
                }
                Err(e) if e.is_write_failure() => {
                    self.abandon_step();
                    Some(e)
                }
                Err(e) => return Err(e),
            };
            if failed.is_none()
                && reason.is_none()
                && self.last_checkpoint.elapsed() >= self.engine.checkpoint_interval
            {
                failed = self.checkpoint(None, false).await.err();
            }
            if let Some(e) = failed {
                if !e.is_write_failure() {
                    return Err(e);
                }
                if self.pause_until_writable(e, &mut stop).await {
                    stopping = true;
                    break;
                }
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
        let stats = self.strategy.stats();
        self.observer.finished(&self.counters, reason);
        match reason {
            Some(r) => {
                info!(job = %job, reason = r.as_str(), requests = self.counters.requests, targets = self.counters.targets, "crawl finished")
            }
            None => {
                info!(job = %job, requests = self.counters.requests, "crawl interrupted; state saved")
            }
        }
        Ok(JobOutcome {
            stop: reason,
            counters: self.counters.clone(),
            stats,
            frontier_left: self.strategy.len(),
            duration: started.elapsed(),
        })
    }

    /// A job that already finished stays finished unless its budget grew.
    fn stored_stop_reason(&self) -> Result<Option<StopReason>, EngineError> {
        if self.strategy.is_empty() && self.counters.requests > 0 {
            return Ok(Some(StopReason::FrontierEmpty));
        }
        Ok(self.budget_exhausted())
    }

    fn budget_exhausted(&self) -> Option<StopReason> {
        let b = &self.spec.budget;
        if b.requests > 0 && self.counters.requests >= b.requests {
            Some(StopReason::RequestBudget)
        } else if b.bytes > 0 && self.counters.bytes >= b.bytes {
            Some(StopReason::ByteBudget)
        } else {
            None
        }
    }

    /// One selection of the strategy: fetch the page, handle its links, reward.
    async fn step(&mut self) -> Result<Option<StopReason>, EngineError> {
        if let Some(r) = self.budget_exhausted() {
            return Ok(Some(r));
        }
        if self.spec.budget.early_stop && self.early_stop.should_stop() {
            return Ok(Some(StopReason::EarlyStop));
        }
        let Some((id, key)) = self.strategy.pop() else {
            return Ok(Some(StopReason::FrontierEmpty));
        };
        let entry = match self.links.remove(&id) {
            Some(entry) => Some(entry),
            None => match self.engine.store.frontier_entry(&self.spec.name, id) {
                Ok(entry) => entry,
                Err(e) => {
                    self.strategy.push(id, key);
                    return Err(e.into());
                }
            },
        };
        let Some(entry) = entry else {
            warn!(job = %self.spec.name, link = %id, "frontier id without a link record; skipped");
            self.delta.frontier_removed.push(id);
            return Ok(None);
        };
        self.in_step = Some(Popped {
            id,
            key,
            entry: entry.clone(),
        });
        let targets_before = self.counters.targets;
        let requests_before = self.counters.requests;
        let popped_url = entry.link.url.clone();
        let popped_referrer = entry.link.referrer.clone();
        let mut work = vec![entry.link];
        while let Some(link) = work.pop() {
            if self.budget_exhausted().is_some() {
                // Keep what could not be fetched: it stays in the frontier for a larger budget.
                self.unsettled.remove(&url_hash(&link.url));
                self.requeue(link);
                continue;
            }
            let fetched = self.get(&link).await?;
            if let Fetched::Page { url, links } = fetched {
                let now = self.admit_links(&link, &url, *links).await?;
                // A page is settled once its links are admitted, not before.
                self.unsettled.remove(&url_hash(&url));
                // Fetch predicted targets in page order.
                work.extend(now.into_iter().rev());
            }
            self.unsettled.remove(&url_hash(&link.url));
        }
        // Only a finished step removes its link from the stored frontier.
        self.delta.frontier_removed.push(id);
        self.in_step = None;
        self.unsettled.clear();
        let reward = (self.counters.targets - targets_before) as u32;
        self.strategy.reward(key, reward);
        self.traps.record_page(&popped_url, reward);
        if let (true, Some(referrer)) = (reward > 0, &popped_referrer) {
            self.traps.credit_referrer(referrer);
        }
        self.early_stop
            .record(self.counters.requests - requests_before, u64::from(reward));
        Ok(None)
    }

    /// Undo a step cancelled at an await point or stopped by a failed write:
    /// its popped link goes back under its own id (the stored frontier still
    /// has it) and every unsettled link goes back to the frontier.
    fn abandon_step(&mut self) {
        if let Some(p) = self.in_step.take() {
            self.links.insert(p.id, p.entry);
            self.strategy.push(p.id, p.key);
        }
        let mut links: Vec<Link> = self.unsettled.drain().map(|(_, l)| l).collect();
        links.sort_by(|a, b| a.url.as_str().cmp(b.url.as_str()));
        for link in links {
            self.requeue(link);
        }
    }

    fn requeue(&mut self, link: Link) {
        if let Triage::Enqueue(key) = self.strategy.triage(&link, Some(Label::Html)) {
            self.enqueue(link, key);
        } else {
            self.enqueue(link, Default::default());
        }
    }

    /// Triage every new in-scope link of a page; returns the links to fetch now.
    async fn admit_links(
        &mut self,
        page: &Link,
        page_url: &Url,
        found: PageLinks,
    ) -> Result<Vec<Link>, EngineError> {
        let r = &found.rejected;
        self.counters.rejected_links += r.bad_url + r.scheme + r.too_long + r.repeated_segments;
        let depth = page.depth + 1;
        let mut fetch_now = Vec::new();
        for l in found.links {
            if !self.scope.contains(&l.url) {
                self.counters.out_of_scope += 1;
                continue;
            }
            let pattern_run = TrapGuard::run_of(&l.url, page_url, page.pattern_run);
            if !self.traps.admits(&l.url, pattern_run) {
                self.counters.trap_links += 1;
                continue;
            }
            if self.spec.targets.blocks_extension(&l.url) {
                self.counters.blocked += 1;
                continue;
            }
            if self.spec.limits.max_depth > 0 && depth > self.spec.limits.max_depth {
                self.counters.rejected_links += 1;
                continue;
            }
            let h = url_hash(&l.url);
            if !self.seen.insert(h) {
                continue;
            }
            self.delta.seen_added.push(h);
            let link = Link {
                url: l.url,
                tag_path: l.tag_path,
                anchor: l.anchor,
                depth,
                referrer: Some(page_url.clone()),
                pattern_run,
            };
            self.unsettled.insert(h, link.clone());
            // A sitemap is read as a link source whatever its type says.
            let mut known = if sitemap::is_sitemap(&link.tag_path) {
                Some(Label::Html)
            } else {
                self.known_label(&link.url)
            };
            let mut asked = false;
            loop {
                match self.strategy.triage(&link, known) {
                    Triage::Enqueue(key) => {
                        self.unsettled.remove(&h);
                        self.enqueue(link, key);
                        break;
                    }
                    Triage::FetchNow => {
                        fetch_now.push(link);
                        break;
                    }
                    Triage::Drop => {
                        self.unsettled.remove(&h);
                        self.counters.dropped += 1;
                        break;
                    }
                    Triage::Head if asked || self.budget_exhausted().is_some() => {
                        // Already asked once, or no budget left to ask: let a GET tell.
                        known = Some(Label::Html);
                        asked = true;
                    }
                    Triage::Head => {
                        asked = true;
                        match self.head(&link).await? {
                            HeadAnswer::Label(label) => known = Some(label),
                            HeadAnswer::Broken => {
                                self.unsettled.remove(&h);
                                self.counters.dropped += 1;
                                break;
                            }
                            HeadAnswer::Unknown => known = Some(Label::Html),
                        }
                    }
                }
            }
        }
        Ok(fetch_now)
    }

    /// The label the shared MIME filters know for a URL, if certain for this job.
    fn known_label(&self, url: &Url) -> Option<Label> {
        let family = lock(&self.engine.filters).lookup(url)?;
        self.targets.label_of_family(family)
    }

    fn remember_family(&self, url: &Url, content_type: Option<&str>) {
        let family = MimeFamily::of(&essence(content_type.unwrap_or("")));
        lock(&self.engine.filters).insert(url, family);
    }

    fn host_key(&self, url: &Url) -> String {
        extract::politeness_key(url, self.spec.scope)
    }

    /// robots.txt check for one URL (fetches the file when needed).
    async fn robots_allow(&mut self, url: &Url) -> bool {
        if !self.politeness.robots {
            return true;
        }
        let key = self.host_key(url);
        match self
            .engine
            .fetcher
            .robots_counted(url, &self.politeness, &key)
            .await
        {
            Ok(verdict) => {
                self.counters.robots_fetches += u64::from(verdict.requests);
                self.admit_sitemaps(url, &verdict.rules);
                let ok = verdict.rules.allowed(url);
                if !ok {
                    self.counters.robots_disallowed += 1;
                    debug!(job = %self.spec.name, url = %url, "disallowed by robots.txt");
                }
                ok
            }
            Err(e) => {
                debug!(job = %self.spec.name, url = %url, error = %e, "robots.txt unavailable; not fetching");
                self.counters.robots_disallowed += 1;
                false
            }
        }
    }

    /// Queue the sitemaps robots.txt lists for this URL's origin, once per run
    /// (the seen set keeps them from being queued again after a restart).
    fn admit_sitemaps(&mut self, url: &Url, rules: &RobotsRules) {
        if rules.sitemaps().is_empty() {
            return;
        }
        let origin = url.origin().ascii_serialization();
        if !self.sitemap_origins.insert(origin.clone()) {
            return;
        }
        let robots_url = Url::parse(&format!("{origin}/robots.txt")).ok();
        for listed in rules.sitemaps() {
            let mut sitemap = listed.clone();
            extract::normalize(&mut sitemap, &self.limits.url_rules);
            if extract::check_limits(&sitemap, &self.limits.url_rules).is_err()
                || !self.scope.contains(&sitemap)
            {
                continue;
            }
            let h = url_hash(&sitemap);
            if !self.seen.insert(h) {
                continue;
            }
            self.delta.seen_added.push(h);
            debug!(job = %self.spec.name, sitemap = %sitemap, "sitemap from robots.txt queued");
            self.requeue(Link {
                url: sitemap,
                tag_path: TagPath::new(SITEMAP_TAG_PATH),
                anchor: String::new(),
                depth: 1,
                referrer: robots_url.clone(),
                pattern_run: 0,
            });
        }
    }

    /// Send one request, counting it; `None` when it failed (already logged and counted).
    async fn send(&mut self, method: Method, url: &Url) -> Option<Response> {
        let key = self.host_key(url);
        let sent = self
            .engine
            .fetcher
            .send(method, url, &self.politeness, &key)
            .await;
        // Counted once the fetcher returns: a stop that cancels this future
        // while it waits for the host's politeness slot sent nothing.
        self.counters.requests += 1;
        if method == Method::Head {
            self.counters.heads += 1;
        }
        match sent {
            Ok(resp) => {
                self.last_latency = Some(resp.latency);
                Some(resp)
            }
            Err(e) => {
                self.counters.fetch_errors += 1;
                self.fetch_failed(method, url, &e);
                None
            }
        }
    }

    fn fetch_failed(&mut self, method: Method, url: &Url, e: &FetchError) {
        warn!(job = %self.spec.name, url = %url, error = %e, "request failed");
        let event = RequestEvent {
            kind: kind_of(method),
            url,
            status: None,
            bytes: 0,
            label: None,
            saved_target: false,
            latency: None,
            counters: &self.counters,
        };
        self.observer.request(&event);
    }

    /// Follow one redirect hop: the next URL, if it may be fetched.
    fn redirect_target(
        &mut self,
        from: &Link,
        location: Option<&Url>,
        mark_seen: bool,
    ) -> Option<Url> {
        self.counters.redirects += 1;
        let mut next = location?.clone();
        extract::normalize(&mut next, &self.limits.url_rules);
        // A Location header obeys the same trap rules as a link on a page.
        if extract::check_limits(&next, &self.limits.url_rules).is_err() {
            self.counters.rejected_links += 1;
            return None;
        }
        if !self.scope.contains(&next) {
            self.counters.out_of_scope += 1;
            return None;
        }
        if mark_seen {
            let h = url_hash(&next);
            if !self.seen.insert(h) {
                return None;
            }
            self.delta.seen_added.push(h);
            let hop = Link {
                url: next.clone(),
                ..from.clone()
            };
            self.unsettled.insert(h, hop);
        }
        Some(next)
    }

    /// HEAD a link (following redirects) to learn its label.
    async fn head(&mut self, link: &Link) -> Result<HeadAnswer, EngineError> {
        let mut url = link.url.clone();
        for _ in 0..=MAX_REDIRECTS {
            if !self.robots_allow(&url).await {
                return Ok(HeadAnswer::Broken);
            }
            let Some(resp) = self.send(Method::Head, &url).await else {
                return Ok(HeadAnswer::Unknown);
            };
            let status = resp.status;
            self.emit(RequestKind::Head, &url, Some(status), 0, None, false);
            match status {
                300..=399 => match self.redirect_target(link, resp.location.as_ref(), false) {
                    Some(next) => url = next,
                    None => return Ok(HeadAnswer::Broken),
                },
                200..=299 => {
                    let label = self.targets.classify(resp.content_type.as_deref());
                    self.remember_family(&link.url, resp.content_type.as_deref());
                    self.strategy.observe(link, label, LabelSource::Head);
                    return Ok(HeadAnswer::Label(label));
                }
                // Servers that do not implement HEAD still answer GET.
                405 | 501 => return Ok(HeadAnswer::Unknown),
                _ => {
                    self.counters.http_errors += 1;
                    return Ok(HeadAnswer::Broken);
                }
            }
        }
        Ok(HeadAnswer::Broken)
    }

    /// GET a link, following redirects by hand; parse pages, save targets.
    async fn get(&mut self, link: &Link) -> Result<Fetched, EngineError> {
        let mut url = link.url.clone();
        for _ in 0..=MAX_REDIRECTS {
            if !self.robots_allow(&url).await {
                return Ok(Fetched::Nothing);
            }
            let Some(resp) = self.send(Method::Get, &url).await else {
                return Ok(Fetched::Nothing);
            };
            let status = resp.status;
            match status {
                300..=399 => {
                    self.emit(RequestKind::Get, &url, Some(status), 0, None, false);
                    match self.redirect_target(link, resp.location.as_ref(), true) {
                        Some(next) => {
                            // The previous hop is settled: the chain goes on from `next`.
                            if url != link.url {
                                self.unsettled.remove(&url_hash(&url));
                            }
                            url = next;
                            continue;
                        }
                        None => return Ok(Fetched::Nothing),
                    }
                }
                200..=299 => {
                    let result = self.got(link, url.clone(), resp).await;
                    // A page settles once its links are admitted; a failed write
                    // leaves the link unsettled, to go back to the frontier.
                    if matches!(result, Ok(Fetched::Target | Fetched::Nothing)) {
                        self.unsettled.remove(&url_hash(&url));
                    }
                    return result;
                }
                _ => {
                    self.counters.http_errors += 1;
                    self.emit(RequestKind::Get, &url, Some(status), 0, None, false);
                    debug!(job = %self.spec.name, url = %url, status, "HTTP error");
                    return Ok(Fetched::Nothing);
                }
            }
        }
        warn!(job = %self.spec.name, url = %link.url, "too many redirects");
        Ok(Fetched::Nothing)
    }

    /// A 2xx answer to a GET: decide from its type whether to read the body.
    async fn got(&mut self, link: &Link, url: Url, resp: Response) -> Result<Fetched, EngineError> {
        if sitemap::is_sitemap(&link.tag_path) {
            return Ok(self.got_sitemap(url, resp).await);
        }
        let content_type = resp.content_type.clone();
        let label = self.targets.classify(content_type.as_deref());
        self.remember_family(&link.url, content_type.as_deref());
        if url != link.url {
            self.remember_family(&url, content_type.as_deref());
        }
        self.strategy.observe(link, label, LabelSource::Get);
        match label {
            Label::Html => {
                // A page is parsed in memory: its cap is smaller than a target's.
                let cap = self.spec.limits.max_body.min(MAX_PAGE_BYTES);
                let body = match resp.read_capped(cap).await {
                    Ok(b) => b,
                    Err(e) => {
                        self.counters.fetch_errors += 1;
                        self.fetch_failed(Method::Get, &url, &e);
                        return Ok(Fetched::Nothing);
                    }
                };
                self.counters.pages += 1;
                self.counters.bytes += body.bytes.len() as u64;
                if body.truncated {
                    self.counters.truncated += 1;
                }
                self.emit(
                    RequestKind::Get,
                    &url,
                    Some(200),
                    body.bytes.len() as u64,
                    Some(label),
                    false,
                );
                let limits = self.limits.clone();
                let page_url = url.clone();
                let links = tokio::task::spawn_blocking(move || {
                    extract::extract_links(&body.bytes, &page_url, content_type.as_deref(), &limits)
                })
                .await;
                match links {
                    Ok(links) => Ok(Fetched::Page {
                        url,
                        links: Box::new(links),
                    }),
                    Err(e) => {
                        warn!(job = %self.spec.name, url = %url, error = %e, "link extraction failed");
                        Ok(Fetched::Nothing)
                    }
                }
            }
            Label::Target => self.save_target(link, url, resp, content_type).await,
            Label::Neither => {
                // Not read: a blocked or useless type costs no download.
                self.counters.neither += 1;
                self.emit(RequestKind::Get, &url, Some(200), 0, Some(label), false);
                Ok(Fetched::Nothing)
            }
        }
    }

    /// A sitemap: its entries are links, like a page's (counted as a page).
    async fn got_sitemap(&mut self, url: Url, resp: Response) -> Fetched {
        let body = match resp.read_capped(MAX_PAGE_BYTES).await {
            Ok(b) => b,
            Err(e) => {
                self.counters.fetch_errors += 1;
                self.fetch_failed(Method::Get, &url, &e);
                return Fetched::Nothing;
            }
        };
        self.counters.pages += 1;
        self.counters.bytes += body.bytes.len() as u64;
        self.emit(
            RequestKind::Get,
            &url,
            Some(200),
            body.bytes.len() as u64,
            None,
            false,
        );
        let limits = self.limits.clone();
        let sitemap_url = url.clone();
        let links = tokio::task::spawn_blocking(move || {
            sitemap::sitemap_links(&body.bytes, &sitemap_url, &limits)
        })
        .await;
        match links {
            Ok(links) => {
                info!(job = %self.spec.name, url = %url, links = links.links.len(), "sitemap read");
                Fetched::Page {
                    url,
                    links: Box::new(links),
                }
            }
            Err(e) => {
                warn!(job = %self.spec.name, url = %url, error = %e, "sitemap parsing failed");
                Fetched::Nothing
            }
        }
    }

    async fn save_target(
        &mut self,
        link: &Link,
        url: Url,
        mut resp: Response,
        content_type: Option<String>,
    ) -> Result<Fetched, EngineError> {
        let mime = essence(content_type.as_deref().unwrap_or(""));
        let job = self.spec.name.clone();
        let out_err = |source| EngineError::Output {
            job: job.clone(),
            source,
        };
        let mut file = self.out.begin(&mime).map_err(out_err)?;
        let cap = self.spec.limits.max_body;
        let mut truncated = false;
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    let room = cap.saturating_sub(file.bytes()) as usize;
                    let take = chunk.len().min(room);
                    if let Err(e) = file.write(&chunk[..take]) {
                        file.abandon();
                        return Err(out_err(e));
                    }
                    if take < chunk.len() {
                        truncated = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.counters.bytes += file.bytes();
                    file.abandon();
                    self.counters.fetch_errors += 1;
                    self.fetch_failed(Method::Get, &url, &e);
                    return Ok(Fetched::Nothing);
                }
            }
        }
        // Taken before `resp` goes: the WARC hook needs the exchange as it happened.
        let exchange = self.spec.output.warc.then(|| resp.exchange_head());
        drop(resp);
        let saved = file.finish().map_err(out_err)?;
        if let Some(head) = &exchange {
            let meta = crate::output::warc::Metadata {
                via: link.referrer.as_ref().map(|u| u.to_string()),
                tag_path: Some(link.tag_path.to_string()),
                label: Some("target".to_string()),
            };
            self.out
                .archive_target(
                    &self.spec.output,
                    url.as_str(),
                    head,
                    &saved,
                    truncated,
                    &meta,
                )
                .map_err(out_err)?;
        }
        self.counters.bytes += saved.bytes;
        self.counters.target_bytes += saved.bytes;
        self.counters.targets += 1;
        if truncated {
            self.counters.truncated += 1;
        }
        let row = ManifestRow {
            url: link.url.to_string(),
            final_url: url.to_string(),
            mime,
            bytes: saved.bytes,
            sha256: saved.sha256,
            file: saved.file,
            referrer: link.referrer.as_ref().map(|u| u.to_string()),
            tag_path: link.tag_path.to_string(),
            fetched_at: rfc3339_now(),
            truncated,
        };
        info!(job = %self.spec.name, url = %url, bytes = saved.bytes, "target saved");
        self.emit(
            RequestKind::Get,
            &url,
            Some(200),
            saved.bytes,
            Some(Label::Target),
            true,
        );
        self.delta
            .manifest_added
            .push((self.next_manifest_row, row.clone()));
        self.next_manifest_row += 1;
        self.uncommitted_rows.push(row);
        Ok(Fetched::Target)
    }

    fn emit(
        &mut self,
        kind: RequestKind,
        url: &Url,
        status: Option<u16>,
        bytes: u64,
        label: Option<Label>,
        saved_target: bool,
    ) {
        let event = RequestEvent {
            kind,
            url,
            status,
            bytes,
            label,
            saved_target,
            latency: self.last_latency,
            counters: &self.counters,
        };
        self.observer.request(&event);
    }

    /// Append the rows just committed to `manifest.jsonl`; after a failed
    /// append, rewrite the whole file from the store instead.
    fn write_manifest_file(&mut self) {
        let rows = std::mem::take(&mut self.uncommitted_rows);
        let result = if self.manifest_stale {
            self.engine
                .store
                .manifest_rows(&self.spec.name)
                .map_err(std::io::Error::other)
                .and_then(|all| self.out.rewrite_manifest(&all))
        } else {
            self.out.append_manifest(&rows)
        };
        self.manifest_stale = result.is_err();
        if let Err(e) = result {
            // The store holds the rows; the file is rewritten at the next checkpoint.
            warn!(job = %self.spec.name, error = %e, "could not write manifest.jsonl");
        }
    }

    /// A write failed: stop fetching, say why, and retry the checkpoint (with
    /// back-off) until it commits and the target folder takes a file again.
    /// Returns true when a stop signal came first.
    async fn pause_until_writable(
        &mut self,
        error: EngineError,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let mut said = error.to_string();
        warn!(job = %self.spec.name, error = %said, "cannot write; job paused until it can");
        self.observer.paused(&said);
        let mut wait = PAUSE_RETRY_MIN;
        loop {
            tokio::select! {
                biased;
                _ = stop.changed() => return true,
                _ = tokio::time::sleep(wait) => {}
            }
            let retried = match self.checkpoint(None, false).await {
                Ok(()) => self
                    .out
                    .probe_writable()
                    .map_err(|source| EngineError::Output {
                        job: self.spec.name.clone(),
                        source,
                    }),
                Err(e) => Err(e),
            };
            match retried {
                Ok(()) => {
                    info!(job = %self.spec.name, "writes succeed again; job resumed");
                    self.observer.resumed();
                    return false;
                }
                Err(e) => {
                    let now = e.to_string();
                    if now != said {
                        warn!(job = %self.spec.name, error = %now, "still cannot write");
                        self.observer.paused(&now);
                        said = now;
                    }
                    wait = (wait * 2).min(PAUSE_RETRY_MAX);
                }
            }
        }
    }

    /// Commit everything since the last checkpoint, atomically.
    /// `last`: the run ends with it (it then carries the shared state too).
    async fn checkpoint(
        &mut self,
        stop: Option<StopReason>,
        last: bool,
    ) -> Result<(), EngineError> {
        if !self.delta.manifest_added.is_empty() {
            // The rows about to be committed name files renamed since the
            // last checkpoint: their names must be on disk first.
            self.out.sync().map_err(|source| EngineError::Output {
                job: self.spec.name.clone(),
                source,
            })?;
        }
        let record = JobRecord {
            strategy: self.spec.strategy.name().to_string(),
            seed: self.spec.seed,
            counters: self.counters.clone(),
            strategy_state: self.strategy.save(),
            early_stop_state: codec::encode(&self.early_stop),
            trap_state: codec::encode(&self.traps),
            next_link_id: self.next_link_id,
            next_manifest_row: self.next_manifest_row,
            stop,
            updated_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        };
        let mut delta = std::mem::replace(&mut self.delta, JobDelta::new(&self.spec.name));
        delta.record = Some(record);
        if self.engine.claim_shared_staging(last) {
            super::filters::stage(&mut lock(&self.engine.filters), &mut delta);
            self.engine.robots.stage(&self.engine.fetcher, &mut delta);
        }
        let added: Vec<LinkId> = delta.frontier_added.iter().map(|(id, _)| *id).collect();
        let report = match self.engine.store.commit(delta).await {
            Ok(report) => {
                for id in added {
                    self.links.remove(&id);
                }
                report
            }
            Err(failed) => {
                // Keep the delta: the retry commits it with whatever comes after.
                let mut older = *failed.delta;
                older.record = None;
                self.delta.absorb_older(older);
                return Err(failed.error.into());
            }
        };
        debug!(job = %self.spec.name, ms = report.duration.as_millis() as u64, grouped = report.deltas, "checkpoint committed");
        self.write_manifest_file();
        self.last_checkpoint = Instant::now();
        let stats = self.strategy.stats();
        self.observer.checkpoint(&self.counters, &stats, &report);
        Ok(())
    }
}

enum HeadAnswer {
    Label(Label),
    /// 4xx/5xx, disallowed, or redirected out of scope: never fetch it.
    Broken,
    /// The server would not say (no HEAD support, network error): let a GET tell.
    Unknown,
}

fn kind_of(method: Method) -> RequestKind {
    match method {
        Method::Get => RequestKind::Get,
        Method::Head => RequestKind::Head,
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the filters cannot leave them inconsistent (inserts are idempotent).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Stable 64-bit hash of a normalised URL (MurmurHash3 x64/128, low half): the seen-set key.
pub fn url_hash(url: &Url) -> u64 {
    let mut cursor = std::io::Cursor::new(url.as_str().as_bytes());
    murmur3::murmur3_x64_128(&mut cursor, 0x666f_7261).map_or(0, |h| h as u64)
}

fn rfc3339_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
