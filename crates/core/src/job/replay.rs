//! A job's [`JobCore`] driven against a site whose answers are known in
//! advance, with the store replaced by memory: the runner's protocol for one
//! step in flight (pop, GET, admit the page's links in page order with each
//! HEAD answered as it is asked, fetch the links wanted now, settle) with the
//! network replaced by [`Answers`]. Strategy tests and benchmarks use it so
//! that they exercise the engine's own bookkeeping and triage protocol, not a
//! copy of it.

pub use super::Checkpoint;
use super::{Admitted, Count, HeadAnswer, Held, JobCore, NextStep, Readiness, StepTally};
use crate::codec::CodecError;
use crate::config::JobSpec;
use crate::extract::{ExtractedLink, PageLinks, RejectCounts};
use crate::link::{Link, LinkId, QueueKey};
use crate::mime::Label;
use crate::record::{FrontierEntry, JobDelta, JobRecord};
use crate::strategy::{LabelSource, Strategy};
use std::collections::BTreeMap;
use std::sync::Arc;
use url::Url;

/// What the replayed site answers.
pub trait Answers {
    /// What a HEAD or a GET of `url` tells; `None` for a 404.
    fn label(&mut self, url: &Url) -> Option<Label>;
    /// The links of a page (asked of URLs labelled HTML only).
    fn links(&mut self, page: &Link) -> PageLinks;
    /// A target was fetched by the crawl's request number `requests`:
    /// whether it is a new one (the step's reward counts new targets).
    fn target(&mut self, link: &Link, requests: u64) -> bool;
    /// What the MIME filters already know of a discovered link's URL: the
    /// runner's lookup before triage, so a known page is queued without a
    /// HEAD. The default knows nothing.
    fn known(&self, _url: &Url) -> Option<Label> {
        None
    }
    /// A fetched page's relevance to a structured-data job (its embedded
    /// statements reach the job's threshold), or `None` for a job of
    /// another kind. A relevant page is a target, as the runner saves it;
    /// the strategy hears of it before the page's links are triaged.
    fn relevant(&mut self, _page: &Link) -> Option<bool> {
        None
    }
}

/// A page's links as link extraction hands them to the core, nothing cut,
/// rejected or structured: what an [`Answers::links`] of a made-up site returns.
pub fn page_links(base: &Url, links: Vec<ExtractedLink>) -> PageLinks {
    PageLinks {
        links,
        base: base.clone(),
        structured_data: false,
        structured: None,
        cut: None,
        rejected: RejectCounts::default(),
    }
}

/// A step the replay took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stepped {
    /// The popped link's id.
    pub id: LinkId,
    pub tally: StepTally,
}

/// One job replayed against [`Answers`]. Requests, HEADs, pages and targets
/// are counted in the core's counters, as the runner counts them.
pub struct Replay {
    pub core: JobCore,
    pub spec: JobSpec,
    /// Frontier records committed by [`Replay::checkpoint`]: what the store holds.
    stored: BTreeMap<LinkId, Arc<FrontierEntry>>,
    /// Seen hashes committed.
    stored_seen: Vec<u64>,
    /// The job record last committed.
    record: JobRecord,
    /// Links the core held for their politeness key, in the order it held them.
    held: Vec<Held>,
}

impl Replay {
    /// A new job of `spec` with its seeds queued, crawled by `strategy` (a
    /// strategy configured by the caller; `spec.strategy` is set to its kind).
    pub fn new(mut spec: JobSpec, strategy: Box<dyn Strategy>) -> Replay {
        spec.strategy = strategy.kind();
        let mut core = JobCore::with_strategy(&spec, strategy);
        core.add_seeds(&spec.seeds);
        Replay {
            core,
            spec,
            stored: BTreeMap::new(),
            stored_seen: Vec::new(),
            record: JobRecord::default(),
            held: Vec::new(),
        }
    }

    pub fn strategy(&mut self) -> &mut dyn Strategy {
        self.core.strategy_mut()
    }

    /// GET and HEAD requests so far.
    pub fn requests(&self) -> u64 {
        self.core.counters().requests
    }

    /// Choose the next link, as the runner does for a free slot with every
    /// host ready, and take its step; `None` when the frontier is empty.
    pub fn step(&mut self, site: &mut dyn Answers) -> Option<Stepped> {
        let id = self.begin_next(&|_| Readiness::Now, 1)?;
        let tally = self.take_step(id, site);
        self.core.settle_step(id, tally);
        Some(Stepped { id, tally })
    }

    /// The step the core begins for a free slot, given when each URL's
    /// politeness key is ready: a held link whose key is ready first, as the
    /// runner's lanes do; `None` when no link may start now.
    fn begin_next(
        &mut self,
        readiness: &dyn Fn(&Url) -> Readiness,
        look_ahead: usize,
    ) -> Option<LinkId> {
        while let Some(at) = self
            .held
            .iter()
            .position(|h| readiness(h.url()) == Readiness::Now)
        {
            let h = self.held.remove(at);
            if let Some(id) = self.core.begin_held(h) {
                return Some(id);
            }
        }
        let stored = &self.stored;
        let mut load = |id: LinkId| -> Result<Option<FrontierEntry>, std::convert::Infallible> {
            Ok(stored.get(&id).map(|e| FrontierEntry::clone(e)))
        };
        loop {
            match self.core.next_step(readiness, look_ahead, &mut load) {
                Ok(NextStep::Begin(id)) => return Some(id),
                Ok(NextStep::Hold(h)) => self.held.push(h),
                Ok(NextStep::Wait(_) | NextStep::Empty) => return None,
                Err(never) => match never {},
            }
        }
    }

    /// The work of step `id` (begun): its GET, its page's links admitted
    /// with each HEAD answered as it is asked, the links wanted now fetched
    /// in page order, as the runner does with one step in flight.
    fn take_step(&mut self, id: LinkId, site: &mut dyn Answers) -> StepTally {
        let mut tally = StepTally::default();
        let Some(link) = self.core.popped(id).map(|p| p.entry.link.clone()) else {
            return tally;
        };
        let mut work = vec![link];
        while let Some(link) = work.pop() {
            let now = self.get(id, &link, site, &mut tally);
            work.extend(now.into_iter().rev());
            self.core.settle_link(&link.url);
        }
        tally
    }

    /// Crawl with up to `in_flight` steps outstanding, one per politeness
    /// key (`per`), no delay: a step is chosen when a slot is free, with the
    /// answers of every step that completed before, and steps complete in
    /// the order they began (their work is done, and their links and
    /// reward reach the core, when they complete). Stops when nothing is
    /// left or after `max_steps` steps; returns the steps in completion order.
    pub fn crawl_concurrent(
        &mut self,
        site: &mut dyn Answers,
        in_flight: usize,
        per: crate::extract::PolitenessPer,
        look_ahead: usize,
        max_steps: usize,
    ) -> Vec<Stepped> {
        let mut outstanding: std::collections::VecDeque<(LinkId, String)> = Default::default();
        let mut done = Vec::new();
        let mut begun = 0;
        loop {
            if begun < max_steps && outstanding.len() < in_flight.max(1) {
                let busy: std::collections::HashSet<&str> =
                    outstanding.iter().map(|(_, k)| k.as_str()).collect();
                let readiness = |url: &Url| {
                    if busy.contains(crate::extract::politeness_key(url, per).as_str()) {
                        Readiness::Busy
                    } else {
                        Readiness::Now
                    }
                };
                if let Some(id) = self.begin_next(&readiness, look_ahead) {
                    let key = self
                        .core
                        .popped(id)
                        .map(|p| crate::extract::politeness_key(&p.entry.link.url, per))
                        .unwrap_or_default();
                    outstanding.push_back((id, key));
                    begun += 1;
                    continue;
                }
            }
            let Some((id, _)) = outstanding.pop_front() else {
                break;
            };
            let tally = self.take_step(id, site);
            self.core.settle_step(id, tally);
            done.push(Stepped { id, tally });
        }
        done
    }

    fn count_request(&mut self, tally: &mut StepTally, head: bool) {
        tally.requests += 1;
        self.core.count(Count::Request { head });
    }

    /// GET `link`; returns the links its page wants fetched now.
    fn get(
        &mut self,
        step: LinkId,
        link: &Link,
        site: &mut dyn Answers,
        tally: &mut StepTally,
    ) -> Vec<Link> {
        self.count_request(tally, false);
        let Some(label) = site.label(&link.url) else {
            self.core.count(Count::HttpError);
            self.core.observe(link, Label::Neither, LabelSource::Error);
            return Vec::new();
        };
        self.core.fetched(&link.url);
        self.core.observe(link, label, LabelSource::Get);
        match label {
            Label::Html => {
                self.core.count(Count::Page { bytes: 0 });
                if let Some(relevant) = site.relevant(link) {
                    self.core.page_relevance(link, &link.url, relevant);
                    if relevant {
                        self.core.count(Count::Target { bytes: 0 });
                        tally.targets += 1;
                    }
                }
                let found = site.links(link);
                self.admit(step, link, found, site, tally)
            }
            Label::Target => {
                if site.target(link, self.core.counters().requests) {
                    self.core.count(Count::Target { bytes: 0 });
                    tally.targets += 1;
                }
                Vec::new()
            }
            Label::Neither => {
                self.core.count(Count::Neither);
                Vec::new()
            }
        }
    }

    /// Admit a page's links one at a time, each HEAD answered before the
    /// next link is triaged (one step in flight); returns the links wanted now.
    fn admit(
        &mut self,
        step: LinkId,
        page: &Link,
        found: PageLinks,
        site: &mut dyn Answers,
        tally: &mut StepTally,
    ) -> Vec<Link> {
        let mut admission = self.core.start_admission(step, page, &page.url, found);
        let mut fetch_now = Vec::new();
        while let Some(mut next) =
            self.core
                .admit_next(&mut admission, &|url| site.known(url), &self.spec)
        {
            loop {
                match next {
                    Admitted::FetchNow(link) => {
                        fetch_now.push(link);
                        break;
                    }
                    Admitted::AskHead(link) => {
                        self.count_request(tally, true);
                        let answer = match site.label(&link.url) {
                            Some(label) => {
                                self.core.observe(&link, label, LabelSource::Head);
                                HeadAnswer::Label(label)
                            }
                            None => HeadAnswer::Broken,
                        };
                        next = self.core.after_head(step, link, answer, &self.spec);
                    }
                    Admitted::Queued | Admitted::Dropped => break,
                }
            }
        }
        fetch_now
    }

    /// Commit what was added since the last checkpoint, as the store would.
    pub fn checkpoint(&mut self) {
        let taken = self.take_checkpoint(0);
        let committed: Result<(), std::convert::Infallible> = self.commit_with(taken, |_| Ok(()));
        if let Err(never) = committed {
            match never {}
        }
    }

    /// The checkpoint the core would commit now (`now_secs` stamps its
    /// record), not committed yet: hand it to [`Replay::commit_with`]. A
    /// benchmark times this part as the job thread's encode.
    pub fn take_checkpoint(&mut self, now_secs: u64) -> Checkpoint {
        self.core.take_checkpoint(None, now_secs)
    }

    /// Commit a checkpoint taken by [`Replay::take_checkpoint`] through
    /// `store` (a benchmark's real [`crate::record::Store`], or nothing), as the
    /// runner does: the replay keeps its own copy of what the store then
    /// holds (popped links whose records the core dropped are read from it),
    /// and the core drops its committed records only once `store` succeeded.
    pub fn commit_with<R, E>(
        &mut self,
        checkpoint: Checkpoint,
        store: impl FnOnce(JobDelta) -> Result<R, E>,
    ) -> Result<R, E> {
        let delta = checkpoint.delta;
        let added = delta.frontier_added.clone();
        let removed = delta.frontier_removed.clone();
        let seen = delta.seen_added.clone();
        let record = delta.record.clone();
        let report = store(delta)?;
        self.stored.extend(added);
        for id in &removed {
            self.stored.remove(id);
        }
        self.stored_seen.extend(seen);
        if let Some(record) = record {
            self.record = record;
        }
        self.core.committed(&checkpoint.committed_links);
        Ok(report)
    }

    /// The committed frontier: each link's id and key.
    pub fn stored_frontier(&self) -> impl Iterator<Item = (LinkId, QueueKey)> + '_ {
        self.stored.iter().map(|(id, e)| (*id, e.key))
    }

    /// The job record of the last checkpoint.
    pub fn record(&self) -> &JobRecord {
        &self.record
    }

    /// Give the links held for their politeness key back to the strategy,
    /// as the runner does when a job stops; returns how many there were.
    pub fn release_held(&mut self) -> usize {
        let held = std::mem::take(&mut self.held);
        let n = held.len();
        for h in held {
            self.core.release_held(h);
        }
        n
    }

    /// Checkpoint, then the job as a restart would resume it from there:
    /// `strategy` (a fresh one) restores the committed learner state, the
    /// core the committed record, frontier keys and seen set.
    pub fn resume(&mut self, mut strategy: Box<dyn Strategy>) -> Result<Replay, CodecError> {
        self.checkpoint();
        strategy.restore(&self.record.strategy_state)?;
        let mut core = JobCore::with_strategy(&self.spec, strategy);
        core.restore(
            &self.record,
            self.stored_frontier().collect(),
            self.stored_seen.clone(),
        )?;
        Ok(Replay {
            core,
            spec: self.spec.clone(),
            stored: self.stored.clone(),
            stored_seen: self.stored_seen.clone(),
            record: self.record.clone(),
            held: Vec::new(),
        })
    }
}
