//! `anthelion`: the structured-data crawler of Meusel, Mika and Blanco
//! (CIKM 2014, "Focused crawling for structured data", §3–§5).
//!
//! Two levels of choice. The arms of a bandit are hosts: a host's success
//! rate is (relevant + k·p) / (fetched + k), its share of relevant pages
//! smoothed towards a prior p with the weight of k pages: with the paper's
//! constants ([`AnthelionConfig::paper`]) Laplace's p = 1/2, k = 2 (the mean
//! of a Beta(1, 1) posterior), by default the success rate of all hosts so
//! far and k = 5. The paper scores a host by its raw share of relevant
//! pages; smoothed, a host never fetched scores p (tried before a host known
//! to be poor, after one known to be good), and a host with one relevant
//! page of one does not outrank one with 90 of 100. A
//! host's score is its success rate times the classifier's probability for
//! the best link queued on it (the paper's "success rate · best score"). The
//! bandit is λ-greedy with the paper's decay, λ_t = λ·m/(t + m), λ = 0.5, t
//! the number of choices made: with probability λ_t a uniformly random ready
//! host, else the host with the best score — the best one (the reference
//! code keeps the *last* host with a positive score, a bug), ties to the
//! host seen first.
//!
//! Departures from the paper's best configuration, each measured on the
//! structured-data bench's web (`bench::structured`, 150 hosts, 5400
//! pages, 1025 relevant, a budget of 1350 = 25 %) driven in memory
//! ([`crate::bench::structured::simulate`], one page at a time as the
//! paper's simulation, 5 seeds, relevant share at that budget; the variants
//! side by side: `bench::structured::tests::anthelion_variants`):
//!
//! - m = 100, not 10 000. The paper tuned m for a crawl of one million
//!   pages, where λ_t has fallen to 1 % of λ by the end; over a crawl of
//!   1350 choices m = 10 000 keeps λ_t ≈ 0.47 throughout: 626 of 1350
//!   choices were random (0.400). With m = 100, 141 are (0.538). (With the
//!   URL features alone m = 30 was best; see the last item.)
//! - A host is ranked by its success rate times its best queued link's
//!   probability. Home and listing pages carry no structured data, so a
//!   host's success rate falls while the crawler walks down to its items,
//!   and an untried host outranks it; the classifier already knows
//!   that a queued `/product/…` link is likely relevant (m = 100: 0.538 →
//!   0.559). The paper measured this product worse than the success rate
//!   alone on its web (0.550 vs 0.628 with λ = 0).
//! - The success rate is smoothed towards the success rate of all hosts so
//!   far with the weight of 5 pages (not towards 1/2): an untried host
//!   scores what the average host gave (a fifth here), so the crawl no
//!   longer wanders into every new host it sees before a known fair one
//!   (m = 100: 0.559 ± 0.027 → 0.575 ± 0.013; with m = 30 0.592 ± 0.013;
//!   weights 2 / 10 / 20 with m = 30: 0.582 / 0.577 / 0.564).
//! - The classifier's FTRL α is 0.3 (forager's default 0.1): it must know a
//!   host's item links after a few dozen pages (0.592 → 0.599 ± 0.011;
//!   α = 0.05: 0.564). This is the best of 17 variants on 5 seeds, so part
//!   of its margin over the next ones may be the seeds'.
//! - The classifier also reads the link's anchor text (its tokens, split as
//!   the URL's) and the tag path it was found at: the paper's features are
//!   the URL's only, but an ad box, a "related" box, a pager and a list of
//!   items lead to pages of different worth under URLs of the same shape.
//!   Measured on the default web and, so as not to fit one web, on two
//!   held-out ones (`StructuredWeb::new(150, 30, 2)` and `(…, 3)`), seeds
//!   1–5 each, relevant share at 25 % (bfs 0.259 / 0.232 / 0.157):
//!   URL features only, m = 30 (the defaults before) 0.599 ± 0.011 /
//!   0.528 ± 0.013 / 0.469 ± 0.013; anchor tokens 0.628 / 0.550 / 0.494;
//!   tag path 0.623 / 0.550 / 0.501; both 0.613 / 0.549 / 0.501; both with
//!   m = 100 0.633 ± 0.007 / 0.560 ± 0.015 / 0.503 ± 0.008 (2.44 / 2.41 /
//!   3.21 × bfs; with the tag path alone m = 100 also beat m = 30 on all
//!   three webs). Tried on the three webs and not kept (none better than
//!   the noise): a UCB bonus c·√(ln n / (fetched + 1)) on the success rate
//!   instead of or on top of λ-greedy (c 0.02–0.2: 0.527–0.593 on the
//!   default web), host counts discounted by age so a drained host falls
//!   faster (γ 0.7–0.95: 0.583–0.599), the tag path joined with the host,
//!   the best link's probability squared or square-rooted, exploration
//!   weighted by the best link's probability, λ = 0 (0.585).
//!
//! For scale: bfs 0.259 in the same simulation, and a crawler that knows
//! every page's relevance but may only fetch links it has seen
//! ([`crate::bench::structured::oracle_crawl`]) 0.759. With 64 requests in
//! flight (the engine's default across the web, one per host) every
//! strategy is spread over 64 hosts at once, most without structured data:
//! the paper's constants give 0.321 there. In the engine, with one request
//! in flight (the bench's setting), see docs/efficiency.md, "Structured data".
//!
//! Within the chosen host, the link an online FTRL-proximal classifier rates
//! most likely relevant goes first (ties to the lowest id), from Anthelion's
//! features ([`UrlFeatures::of_anthelion`]: URL tokens and whether the page
//! the link was found on was relevant) and, by default, its anchor text and
//! tag path. A link is scored once, when found (as `focused` does; the
//! paper re-scores nothing either): the engine pushes a restored frontier
//! back as ids and keys only, so a re-scored queue could not resume
//! exactly. The classifier is trained on every fetched HTML page: relevant
//! if the job saved it as a structured-data target, not relevant otherwise. The engine tells the page's
//! relevance through [`Feedback::PageRelevance`] *before* its links are
//! triaged, so that the links carry their parent's flag (the reward comes
//! only when the step settles, after its links were queued).
//!
//! Departures, all for bounded memory against hostile input: the relevance of
//! fetched pages is remembered for the last [`RECENT_PAGES`] pages only (a
//! link found on a page older than that, and a seed, has neither flag), and
//! at most [`MAX_HOSTS`] hosts are arms of their own — further hosts share
//! one arm. Every queued link is a frontier entry; nothing else grows with
//! the crawl.

use super::{ActionReport, Feedback, FreeSlot, Strategy, StrategyKind, StrategyStats, Triage};
use crate::codec::{self, CodecError};
use crate::hash::fingerprint64;
use crate::learn::{FtrlConfig, FtrlModel, ParentRelevance, UrlFeatures};
use crate::link::{Link, LinkId, QueueKey};
use crate::mime::Label;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};
use url::Url;

/// Fetched pages whose relevance is remembered for their links' parent flag.
pub const RECENT_PAGES: usize = 4096;
/// Hosts with an arm of their own; the others share the last arm.
pub const MAX_HOSTS: usize = 100_000;
/// Priority of a seed within its host (above any probability).
const SEED_SCORE: f32 = 2.0;

/// Tuning of `anthelion`: see the module documentation for where the
/// defaults depart from the paper's and why.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnthelionConfig {
    /// λ: the initial probability of a random host.
    pub lambda: f64,
    /// m: how slowly λ_t decays (the paper's 10 000 is
    /// [`AnthelionConfig::PAPER_DECAY`]).
    pub decay: f64,
    /// Score a host by its success rate times the classifier's best
    /// probability among its queued links (the paper's "success rate · best
    /// score"), not by its success rate alone.
    pub times_best: bool,
    /// The host prior: `None` smooths a host's success rate towards 1/2
    /// (Laplace, (relevant + 1) / (fetched + 2)); `Some(k)` towards the
    /// success rate of all hosts so far, with the weight of `k` pages, so an
    /// untried host scores what an average host has given, not 1/2.
    pub prior_weight: Option<f64>,
    /// Classifier features beyond the paper's URL tokens: the tokens of the
    /// link's anchor text (split as the URL's, a namespace of their own).
    pub anchor_tokens: bool,
    /// Classifier features beyond the paper's: the tag path the link was
    /// found at (an ad box, a pager, a list of items).
    pub tag_path: bool,
    pub ftrl: FtrlConfig,
}

impl Default for AnthelionConfig {
    fn default() -> Self {
        AnthelionConfig {
            lambda: 0.5,
            decay: 100.0,
            times_best: true,
            prior_weight: Some(5.0),
            anchor_tokens: true,
            tag_path: true,
            // A faster learner than forager's default (0.1): the classifier
            // must know a host's item links after a few dozen pages.
            ftrl: FtrlConfig {
                alpha: 0.3,
                ..FtrlConfig::default()
            },
        }
    }
}

impl AnthelionConfig {
    /// The paper's m, tuned for a crawl of one million pages.
    pub const PAPER_DECAY: f64 = 10_000.0;

    /// The paper's constants: m = 10 000, hosts scored by their success
    /// rate alone, URL tokens and parent flags only.
    pub fn paper() -> Self {
        AnthelionConfig {
            decay: Self::PAPER_DECAY,
            times_best: false,
            prior_weight: None,
            anchor_tokens: false,
            tag_path: false,
            ftrl: FtrlConfig::default(),
            ..Self::default()
        }
    }

    /// λ_t after `t` choices.
    pub fn lambda_at(&self, t: u64) -> f64 {
        self.lambda * self.decay / (t as f64 + self.decay)
    }
}

/// One host: an arm.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Host {
    /// Its name (the host name the engine's readiness is asked about); empty
    /// for the shared arm of hosts past [`MAX_HOSTS`].
    name: String,
    /// HTML pages fetched from it, and how many were relevant.
    fetched: u64,
    relevant: u64,
}

impl Host {
    /// Laplace-smoothed success rate: the mean of a Beta(1, 1) posterior.
    fn score(&self) -> f64 {
        self.rate(0.5, 2.0)
    }

    /// Success rate smoothed towards `prior` with the weight of `weight` pages.
    fn rate(&self, prior: f64, weight: f64) -> f64 {
        debug_assert!(weight > 0.0 && (0.0..=1.0).contains(&prior));
        (self.relevant as f64 + weight * prior) / (self.fetched as f64 + weight)
    }
}

/// A queued link: greatest = highest score, then lowest id.
#[derive(Clone, Copy, Debug)]
struct Entry {
    score: f32,
    id: LinkId,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.id.cmp(&self.id))
    }
}

/// What `save` keeps: everything learned and the RNG (the queues come back
/// through `push` with their keys).
#[derive(Serialize, Deserialize)]
struct Saved {
    model: Vec<u8>,
    rng: Xoshiro256PlusPlus,
    hosts: Vec<Host>,
    choices: u64,
    recent: Vec<(u64, bool)>,
    predictions: u64,
    correct: u64,
    explored: u64,
}

/// The Anthelion strategy. See the module documentation.
pub struct Anthelion {
    config: AnthelionConfig,
    model: FtrlModel,
    rng: Xoshiro256PlusPlus,
    hosts: Vec<Host>,
    slot_of: HashMap<String, u32>,
    queues: HashMap<u32, BinaryHeap<Entry>>,
    /// Hosts with queued links, in slot order (deterministic iteration).
    waiting: BTreeSet<u32>,
    len: usize,
    /// Host choices made so far: the t of λ_t.
    choices: u64,
    /// Relevance of the last fetched pages by URL hash, oldest first.
    recent: VecDeque<(u64, bool)>,
    recent_map: HashMap<u64, bool>,
    predictions: u64,
    correct: u64,
    /// Host choices that were random (the exploring share of λ_t).
    explored: u64,
    /// HTML pages fetched over all hosts, and how many were relevant (the
    /// sums of the hosts' counts; kept for the host prior).
    total_fetched: u64,
    total_relevant: u64,
}

impl Anthelion {
    pub fn new(seed: u64) -> Self {
        Self::with_config(seed, AnthelionConfig::default())
    }

    pub fn with_config(seed: u64, config: AnthelionConfig) -> Self {
        Anthelion {
            config,
            model: FtrlModel::new(config.ftrl),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            hosts: Vec::new(),
            slot_of: HashMap::new(),
            queues: HashMap::new(),
            waiting: BTreeSet::new(),
            len: 0,
            choices: 0,
            recent: VecDeque::new(),
            recent_map: HashMap::new(),
            predictions: 0,
            correct: 0,
            explored: 0,
            total_fetched: 0,
            total_relevant: 0,
        }
    }

    /// Host choices made at random so far (exploration).
    pub fn explorations(&self) -> u64 {
        self.explored
    }

    fn slot(&mut self, url: &Url) -> u32 {
        let name = url.host_str().unwrap_or_default();
        if let Some(&slot) = self.slot_of.get(name) {
            return slot;
        }
        if self.hosts.len() < MAX_HOSTS {
            let slot = self.hosts.len() as u32;
            self.hosts.push(Host {
                name: name.to_string(),
                ..Host::default()
            });
            self.slot_of.insert(name.to_string(), slot);
            return slot;
        }
        // The shared arm of the hosts past the cap (created once, never named).
        if self.hosts.len() == MAX_HOSTS {
            self.hosts.push(Host::default());
        }
        MAX_HOSTS as u32
    }

    fn url_key(url: &Url) -> u64 {
        fingerprint64(url.as_str().as_bytes())
    }

    fn parent_of(&self, link: &Link) -> ParentRelevance {
        match link
            .referrer
            .as_ref()
            .and_then(|r| self.recent_map.get(&Self::url_key(r)))
        {
            Some(true) => ParentRelevance::Relevant,
            Some(false) => ParentRelevance::NotRelevant,
            None => ParentRelevance::Unknown,
        }
    }

    /// The classifier's features of a link: Anthelion's URL tokens and
    /// parent flag, then, as configured, its anchor text's tokens and its tag
    /// path. The extras are hashed with a namespace prefix into the same
    /// feature space (a rare collision with a URL token only shares a
    /// weight); the extractor caps anchor text, so their number is bounded.
    fn features(&self, link: &Link) -> UrlFeatures {
        let base = UrlFeatures::of_anthelion(&link.url, self.parent_of(link));
        let c = &self.config;
        if !(c.anchor_tokens || c.tag_path) {
            return base;
        }
        let id = |namespace: &[u8], value: &str| {
            let mut bytes = Vec::with_capacity(namespace.len() + value.len());
            bytes.extend_from_slice(namespace);
            bytes.extend_from_slice(value.as_bytes());
            fingerprint64(&bytes) as u32
        };
        let mut ids = base.ids().to_vec();
        if c.anchor_tokens {
            // As the URL's tokens: short ones dropped, numbers merged, case folded.
            for t in link
                .anchor
                .split(|ch: char| !ch.is_alphanumeric())
                .filter(|t| t.chars().count() >= 3)
            {
                if t.chars().all(|ch| ch.is_ascii_digit()) {
                    ids.push(id(b"anchor-number", ""));
                } else {
                    ids.push(id(b"anchor:", &t.to_lowercase()));
                }
            }
        }
        if c.tag_path {
            ids.push(id(b"tag-path:", link.tag_path.as_str()));
        }
        UrlFeatures::from_ids(ids)
    }

    fn remember(&mut self, url: &Url, relevant: bool) {
        let key = Self::url_key(url);
        if self.recent_map.insert(key, relevant).is_none() {
            self.recent.push_back((key, relevant));
        } else if let Some(e) = self.recent.iter_mut().rev().find(|e| e.0 == key) {
            e.1 = relevant;
        }
        while self.recent.len() > RECENT_PAGES {
            if let Some((old, _)) = self.recent.pop_front() {
                self.recent_map.remove(&old);
            }
        }
    }

    /// The prior of [`AnthelionConfig::prior_weight`]: the Laplace-smoothed
    /// success rate of all hosts together, and its weight.
    fn host_prior(&self) -> Option<(f64, f64)> {
        let k = self.config.prior_weight?;
        let p = (self.total_relevant as f64 + 1.0) / (self.total_fetched as f64 + 2.0);
        Some((p, k))
    }

    /// The host to serve next among those with queued links (see the module
    /// documentation), for a free slot: the best-scored host that is ready
    /// among the `slot.look_ahead` best, or, with probability λ_t, a random
    /// ready host (deliberate exploration). `None` leaves the slot empty:
    /// no host is ready, or the better hosts are all busy and exploration
    /// did not fire. Only a choice that returns a host counts as one (λ_t
    /// decays with choices, not with the engine's polls).
    fn choose(&mut self, slot: &FreeSlot<'_>) -> Option<u32> {
        if self.waiting.is_empty() {
            return None;
        }
        let host_ready = |s: u32| {
            self.hosts
                .get(s as usize)
                .is_none_or(|h| h.name.is_empty() || (slot.host_ready)(&h.name))
        };
        let ready: Vec<u32> = self
            .waiting
            .iter()
            .copied()
            .filter(|&s| host_ready(s))
            .collect();
        if ready.is_empty() {
            return None;
        }
        let lambda = self.config.lambda_at(self.choices);
        // One draw per offered slot with a ready host, so a restored run draws alike.
        let explore = self.rng.random::<f64>() < lambda;
        if explore {
            self.explored += 1;
            self.choices += 1;
            let i = self.rng.random_range(0..ready.len());
            return Some(ready[i]);
        }
        let prior = self.host_prior();
        let score = |s: u32| {
            let rate = self.hosts.get(s as usize).map_or(0.5, |h| match prior {
                None => h.score(),
                Some((p, k)) => h.rate(p, k),
            });
            if self.config.times_best {
                let best = self
                    .queues
                    .get(&s)
                    .and_then(|q| q.peek())
                    .map_or(0.0, |e| f64::from(e.score.min(1.0)));
                rate * best
            } else {
                rate
            }
        };
        // Best first, ties to the host seen first (the lowest slot).
        let order = |a: &(f64, u32), b: &(f64, u32)| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(Ordering::Equal)
                .then(a.1.cmp(&b.1))
        };
        let chosen = if slot.look_ahead >= self.waiting.len() {
            // Any ready host may go: the best of them.
            ready
                .iter()
                .map(|&s| (score(s), s))
                .min_by(order)
                .map(|(_, s)| s)
        } else {
            let mut ranked: Vec<(f64, u32)> = self.waiting.iter().map(|&s| (score(s), s)).collect();
            let k = slot.look_ahead.max(1);
            if ranked.len() > k {
                ranked.select_nth_unstable_by(k - 1, order);
                ranked.truncate(k);
            }
            ranked.sort_by(order);
            ranked.into_iter().map(|(_, s)| s).find(|&s| host_ready(s))
        };
        if chosen.is_some() {
            self.choices += 1;
        }
        chosen
    }
}

impl Strategy for Anthelion {
    fn kind(&self) -> StrategyKind {
        StrategyKind::Anthelion
    }

    fn triage(&mut self, link: &Link, known: Option<Label>) -> Triage {
        match known {
            // A target file the MIME filters already know: its reward goes to this page.
            Some(Label::Target) if link.referrer.is_some() => return Triage::FetchNow,
            Some(Label::Neither) => return Triage::Drop,
            _ => {}
        }
        let slot = self.slot(&link.url);
        let score = if link.referrer.is_none() {
            SEED_SCORE
        } else {
            let features = self.features(link);
            self.model.predict(&features) as f32
        };
        Triage::Enqueue(QueueKey { slot, score })
    }

    fn push(&mut self, id: LinkId, key: QueueKey) {
        self.queues.entry(key.slot).or_default().push(Entry {
            score: key.score,
            id,
        });
        self.waiting.insert(key.slot);
        self.len += 1;
    }

    fn pop(&mut self, free: &FreeSlot<'_>) -> Option<(LinkId, QueueKey)> {
        let slot = self.choose(free)?;
        let queue = self.queues.get_mut(&slot)?;
        let entry = queue.pop()?;
        if queue.is_empty() {
            self.queues.remove(&slot);
            self.waiting.remove(&slot);
        }
        self.len -= 1;
        Some((
            entry.id,
            QueueKey {
                slot,
                score: entry.score,
            },
        ))
    }

    fn len(&self) -> usize {
        self.len
    }

    fn save(&self) -> Vec<u8> {
        codec::encode(&Saved {
            model: codec::encode(&self.model),
            rng: self.rng.clone(),
            hosts: self.hosts.clone(),
            choices: self.choices,
            recent: self.recent.iter().copied().collect(),
            predictions: self.predictions,
            correct: self.correct,
            explored: self.explored,
        })
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), CodecError> {
        let saved: Saved = codec::decode(bytes)?;
        let mut model: FtrlModel = codec::decode(&saved.model)?;
        model.set_config(self.config.ftrl);
        self.model = model;
        self.rng = saved.rng;
        self.hosts = saved.hosts;
        self.hosts.truncate(MAX_HOSTS + 1);
        self.slot_of = self
            .hosts
            .iter()
            .enumerate()
            .take(MAX_HOSTS)
            .map(|(i, h)| (h.name.clone(), i as u32))
            .collect();
        self.choices = saved.choices;
        self.recent = saved.recent.into_iter().collect();
        while self.recent.len() > RECENT_PAGES {
            self.recent.pop_front();
        }
        self.recent_map = self.recent.iter().copied().collect();
        self.predictions = saved.predictions;
        self.correct = saved.correct;
        self.explored = saved.explored;
        self.total_fetched = self.hosts.iter().map(|h| h.fetched).sum();
        self.total_relevant = self.hosts.iter().map(|h| h.relevant).sum();
        self.queues.clear();
        self.waiting.clear();
        self.len = 0;
        Ok(())
    }

    fn stats(&self) -> StrategyStats {
        // The hosts that gave the most relevant pages (then the best scored),
        // as explain's "actions".
        let mut best: Vec<(u32, &Host)> = self
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| (i as u32, h))
            .filter(|(_, h)| h.fetched > 0)
            .collect();
        best.sort_by(|a, b| {
            b.1.relevant
                .cmp(&a.1.relevant)
                .then(b.1.score().total_cmp(&a.1.score()))
                .then(a.0.cmp(&b.0))
        });
        let top_actions = best
            .into_iter()
            .take(20)
            .map(|(slot, h)| ActionReport {
                id: slot,
                tag_path: if h.name.is_empty() {
                    "(other hosts)".to_string()
                } else {
                    h.name.clone()
                },
                links_seen: h.fetched,
                selections: h.fetched,
                mean_reward: h.relevant as f64 / h.fetched as f64,
                links_left: self.queues.get(&slot).map_or(0, |q| q.len() as u64),
                paths: 1,
                best_member: None,
            })
            .collect();
        StrategyStats {
            classifier_predictions: self.predictions,
            classifier_correct: self.correct,
            actions: self.hosts.len() as u64,
            capped_paths: 0,
            top_actions,
            top_features: Vec::new(),
            ..StrategyStats::default()
        }
    }

    fn learn(&mut self, feedback: Feedback<'_>) {
        if let Feedback::PageRelevance {
            link,
            url,
            relevant,
        } = feedback
        {
            self.page_relevance(link, url, relevant);
        }
    }
}

/// What the engine tells the strategy ([`Strategy::learn`]).
impl Anthelion {
    fn page_relevance(&mut self, link: &Link, url: &Url, relevant: bool) {
        let slot = self.slot(&link.url);
        if let Some(h) = self.hosts.get_mut(slot as usize) {
            h.fetched += 1;
            h.relevant += u64::from(relevant);
        }
        self.total_fetched += 1;
        self.total_relevant += u64::from(relevant);
        let features = self.features(link);
        let p = self.model.predict(&features);
        self.predictions += 1;
        self.correct += u64::from((p >= 0.5) == relevant);
        self.model.train(&features, relevant, 1.0);
        self.remember(&link.url, relevant);
        if url != &link.url {
            // Links found on a redirected page name the final URL as their referrer.
            self.remember(url, relevant);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::TagPath;

    fn link(url: &str, from: &str) -> Link {
        Link {
            url: Url::parse(url).unwrap(),
            tag_path: TagPath::new("/html/body/a"),
            anchor: String::new(),
            depth: 1,
            referrer: Some(std::sync::Arc::new(Url::parse(from).unwrap())),
            pattern_run: 0,
        }
    }

    fn fetched(s: &mut Anthelion, url: &str, from: &str, relevant: bool) {
        let l = link(url, from);
        s.page_relevance(&l, &l.url, relevant);
    }

    fn queue(s: &mut Anthelion, l: &Link, id: u64) {
        match s.triage(l, Some(Label::Html)) {
            Triage::Enqueue(key) => s.push(LinkId(id), key),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lambda_decays_as_in_the_paper() {
        let c = AnthelionConfig::paper();
        assert_eq!(c.lambda_at(0), 0.5);
        assert_eq!(c.lambda_at(10_000), 0.25);
        assert!((c.lambda_at(90_000) - 0.05).abs() < 1e-12);
        assert!(c.lambda_at(1_000_000) < c.lambda_at(999_999));
        // forager's m: halved after 100 choices.
        let d = AnthelionConfig::default();
        assert_eq!(d.lambda_at(100), 0.25);
        assert!(d.lambda_at(1_350) < 0.04);
    }

    #[test]
    fn the_best_host_is_chosen_not_the_last_positive_one() {
        // No exploration: only the greedy choice is tested.
        let mut s = Anthelion::with_config(
            1,
            AnthelionConfig {
                lambda: 0.0,
                ..Default::default()
            },
        );
        // good: 9 of 10 relevant; fair: 1 of 10; poor: 0 of 10. "fair" comes last
        // in slot order and has a positive score: the reference code would take it.
        for (host, hits) in [("poor.test", 0), ("good.test", 9), ("fair.test", 1)] {
            for i in 0..10 {
                fetched(
                    &mut s,
                    &format!("http://{host}/p{i}"),
                    "http://x.test/",
                    i < hits,
                );
            }
        }
        let mut id = 0;
        for host in ["poor.test", "good.test", "fair.test"] {
            for i in 0..2 {
                queue(
                    &mut s,
                    &link(&format!("http://{host}/q{i}"), "http://x.test/"),
                    id,
                );
                id += 1;
            }
        }
        let slot_of = |s: &Anthelion, host: &str| s.slot_of[host];
        let hosts: Vec<u32> =
            std::iter::from_fn(|| s.pop(&FreeSlot::ANY).map(|(_, k)| k.slot)).collect();
        let (p, g, f) = (
            slot_of(&s, "poor.test"),
            slot_of(&s, "good.test"),
            slot_of(&s, "fair.test"),
        );
        assert_eq!(hosts, vec![g, g, f, f, p, p]);
        // A host that is not ready is passed over when the look-ahead allows;
        // with a look-ahead of one, or no host ready, the slot stays empty.
        queue(&mut s, &link("http://good.test/r", "http://x.test/"), 10);
        queue(&mut s, &link("http://fair.test/r", "http://x.test/"), 11);
        let not_good = |h: &str| h != "good.test";
        let first_only = FreeSlot {
            host_ready: &not_good,
            look_ahead: 1,
        };
        assert_eq!(s.pop(&first_only), None);
        let two = FreeSlot {
            host_ready: &not_good,
            look_ahead: 2,
        };
        assert_eq!(s.pop(&two).unwrap().0, LinkId(11));
        queue(&mut s, &link("http://fair.test/r2", "http://x.test/"), 12);
        let none = FreeSlot {
            host_ready: &|_| false,
            look_ahead: usize::MAX,
        };
        assert_eq!(s.pop(&none), None);
        assert_eq!(s.pop(&FreeSlot::ANY).unwrap().0, LinkId(10));
    }

    #[test]
    fn an_untried_host_gets_the_prior_of_the_hosts_seen() {
        // Three poor hosts (0 of 10) and one fair one (3 of 10): 3 of 40 pages
        // relevant so far. An untried host scores 1/2 under Laplace's prior
        // and outranks the fair host; under the global prior it scores about
        // what the average host gave, below the fair host.
        let order = |prior_weight| {
            let mut s = Anthelion::with_config(
                1,
                AnthelionConfig {
                    lambda: 0.0,
                    times_best: false,
                    prior_weight,
                    ..Default::default()
                },
            );
            for (host, hits) in [
                ("p1.test", 0),
                ("p2.test", 0),
                ("p3.test", 0),
                ("fair.test", 3),
            ] {
                for i in 0..10 {
                    fetched(
                        &mut s,
                        &format!("http://{host}/p{i}"),
                        "http://x.test/",
                        i < hits,
                    );
                }
            }
            queue(&mut s, &link("http://new.test/q", "http://x.test/"), 0);
            queue(&mut s, &link("http://fair.test/q", "http://x.test/"), 1);
            std::iter::from_fn(|| s.pop(&FreeSlot::ANY).map(|(id, _)| id.0)).collect::<Vec<_>>()
        };
        assert_eq!(order(None), vec![0, 1]);
        assert_eq!(order(Some(5.0)), vec![1, 0]);
        // The prior follows the crawl: restored, the totals are the hosts' sums.
        let mut a = Anthelion::new(2);
        fetched(&mut a, "http://a.test/1", "http://x.test/", true);
        fetched(&mut a, "http://b.test/1", "http://x.test/", false);
        let mut b = Anthelion::new(3);
        b.restore(&a.save()).unwrap();
        assert_eq!((b.total_fetched, b.total_relevant), (2, 1));
        assert_eq!(a.host_prior(), b.host_prior());
    }

    #[test]
    fn exploration_picks_random_ready_hosts_at_rate_lambda() {
        // λ = 1 and (practically) no decay: every choice is random; both hosts get picked.
        let mut s = Anthelion::with_config(
            5,
            AnthelionConfig {
                lambda: 1.0,
                decay: 1e15,
                ..Default::default()
            },
        );
        for i in 0..20 {
            fetched(
                &mut s,
                &format!("http://good.test/p{i}"),
                "http://x.test/",
                true,
            );
        }
        for i in 0..100 {
            let host = if i % 2 == 0 {
                "good.test"
            } else {
                "other.test"
            };
            queue(
                &mut s,
                &link(&format!("http://{host}/q{i}"), "http://x.test/"),
                i,
            );
        }
        let first: Vec<u32> = (0..20)
            .map(|_| s.pop(&FreeSlot::ANY).unwrap().1.slot)
            .collect();
        let other = s.slot_of["other.test"];
        let n = first.iter().filter(|&&h| h == other).count();
        assert!(
            (3..=17).contains(&n),
            "{n} of 20 random choices went to the other host"
        );
    }

    #[test]
    fn within_a_host_the_classifier_orders_links() {
        let mut s = Anthelion::new(3);
        for i in 0..200 {
            fetched(
                &mut s,
                &format!("http://shop.test/product/{i}"),
                "http://shop.test/",
                true,
            );
            fetched(
                &mut s,
                &format!("http://shop.test/blog/{i}"),
                "http://shop.test/",
                false,
            );
        }
        let from = "http://shop.test/";
        queue(&mut s, &link("http://shop.test/blog/9001", from), 0);
        queue(&mut s, &link("http://shop.test/product/9002", from), 1);
        queue(&mut s, &link("http://shop.test/blog/9003", from), 2);
        queue(&mut s, &link("http://shop.test/product/9004", from), 3);
        let order: Vec<u64> =
            std::iter::from_fn(|| s.pop(&FreeSlot::ANY).map(|(id, _)| id.0)).collect();
        assert_eq!(order, vec![1, 3, 0, 2]);
        let stats = s.stats();
        assert!(
            stats.classifier_accuracy().is_some_and(|a| a > 0.9),
            "{stats:?}"
        );
        assert_eq!(stats.top_actions[0].tag_path, "shop.test");
        assert_eq!(stats.top_actions[0].mean_reward, 0.5);
    }

    #[test]
    fn where_a_link_was_found_and_its_anchor_text_are_features() {
        // The same URL shapes, on pages that are not remembered (no parent
        // flag): only the tag path and the anchor text tell an ad, whose
        // products were relevant, from a "related" box, whose were not.
        let placed = |url: &str, tag: &str, anchor: &str| Link {
            tag_path: TagPath::new(tag),
            anchor: anchor.to_string(),
            ..link(url, "http://x.test/")
        };
        let ad = "/html/body/div.ad/a";
        let related = "/html/body/div.related/a";
        let train = |s: &mut Anthelion| {
            for i in 0..200 {
                let host = format!("h{}.test", i % 20);
                let l = placed(&format!("http://{host}/item/a{i}"), ad, "Special offer");
                s.page_relevance(&l, &l.url, true);
                let l = placed(
                    &format!("http://{host}/item/r{i}"),
                    related,
                    "You may also like",
                );
                s.page_relevance(&l, &l.url, false);
            }
        };
        let order = |config: AnthelionConfig| {
            let mut s = Anthelion::with_config(
                1,
                AnthelionConfig {
                    lambda: 0.0,
                    ..config
                },
            );
            train(&mut s);
            let links = [
                placed("http://new.test/item/r", related, "You may also like"),
                placed("http://new.test/item/a", ad, "Special offer"),
            ];
            for (id, l) in links.iter().enumerate() {
                queue(&mut s, l, id as u64);
            }
            std::iter::from_fn(|| s.pop(&FreeSlot::ANY).map(|(id, _)| id.0)).collect::<Vec<_>>()
        };
        // The paper's URL tokens alone cannot tell them apart: ties go to the lowest id.
        assert_eq!(order(AnthelionConfig::paper()), vec![0, 1]);
        for (anchor_tokens, tag_path) in [(true, false), (false, true), (true, true)] {
            let config = AnthelionConfig {
                anchor_tokens,
                tag_path,
                ..AnthelionConfig::default()
            };
            assert_eq!(
                order(config),
                vec![1, 0],
                "anchor {anchor_tokens}, tag path {tag_path}"
            );
        }
        // Anchor tokens as the URL's: short ones dropped, numbers merged, case folded.
        let s = Anthelion::new(1);
        let f = |anchor: &str| s.features(&placed("http://a.test/x", ad, anchor));
        assert_eq!(f("Item 2014"), f("ITEM 7777"));
        assert_eq!(f("an item"), f("item"));
        assert_ne!(f("item"), f("product"));
    }

    #[test]
    fn links_carry_their_parents_relevance() {
        let mut s = Anthelion::new(4);
        // Relevant pages link to relevant pages, whatever their URL.
        for i in 0..300 {
            let hub_rel = format!("http://a.test/hub/{}", i % 2);
            fetched(&mut s, &hub_rel, "http://a.test/", i % 2 == 0);
        }
        for i in 0..300 {
            let parent = format!("http://a.test/hub/{}", i % 2);
            fetched(
                &mut s,
                &format!("http://a.test/item/{i}"),
                &parent,
                i % 2 == 0,
            );
        }
        let yes = s.model.weight(UrlFeatures::anthelion_parent_flag(true));
        let no = s.model.weight(UrlFeatures::anthelion_parent_flag(false));
        assert!(yes > 0.0 && no < 0.0, "weights {yes} {no}");
        queue(
            &mut s,
            &link("http://a.test/item/x1", "http://a.test/hub/1"),
            0,
        );
        queue(
            &mut s,
            &link("http://a.test/item/x2", "http://a.test/hub/0"),
            1,
        );
        queue(
            &mut s,
            &link("http://a.test/item/x3", "http://unknown.test/"),
            2,
        );
        let order: Vec<u64> =
            std::iter::from_fn(|| s.pop(&FreeSlot::ANY).map(|(id, _)| id.0)).collect();
        assert_eq!(order, vec![1, 2, 0]);
    }

    #[test]
    fn memory_of_pages_and_hosts_is_bounded() {
        let mut s = Anthelion::new(1);
        for i in 0..(RECENT_PAGES + 500) {
            fetched(
                &mut s,
                &format!("http://a.test/{i}"),
                "http://a.test/",
                false,
            );
        }
        assert_eq!(s.recent.len(), RECENT_PAGES);
        assert_eq!(s.recent_map.len(), RECENT_PAGES);
        assert_eq!(s.hosts.len(), 1);
    }

    #[test]
    fn resumes_exactly_after_restore() {
        let mut a = Anthelion::new(11);
        let mut frontier: Vec<(LinkId, QueueKey)> = Vec::new();
        for i in 0..80u64 {
            let host = format!("h{}.test", i % 7);
            fetched(
                &mut a,
                &format!("http://{host}/p/{i}"),
                "http://x.test/",
                i % 3 == 0,
            );
            let l = link(
                &format!("http://{host}/q/{i}"),
                &format!("http://{host}/p/{i}"),
            );
            if let Triage::Enqueue(key) = a.triage(&l, None) {
                a.push(LinkId(i), key);
                frontier.push((LinkId(i), key));
            }
        }
        for _ in 0..5 {
            let (id, _) = a.pop(&FreeSlot::ANY).unwrap();
            frontier.retain(|(i, _)| *i != id);
        }
        let saved = a.save();
        let mut b = Anthelion::new(999);
        b.restore(&saved).unwrap();
        for (id, key) in &frontier {
            b.push(*id, *key);
        }
        assert_eq!(b.save(), saved);
        let mut popped = 0;
        loop {
            let (x, y) = (a.pop(&FreeSlot::ANY), b.pop(&FreeSlot::ANY));
            assert_eq!(x.map(|p| p.0), y.map(|p| p.0));
            if x.is_none() {
                break;
            }
            popped += 1;
        }
        assert_eq!(popped, 75);
        let l = link("http://h1.test/q/new", "http://h1.test/p/1");
        assert_eq!(a.triage(&l, None), b.triage(&l, None));
        assert_eq!(a.save(), b.save());
    }

    #[test]
    fn restore_rejects_garbage() {
        let mut s = Anthelion::new(1);
        assert!(s.restore(b"not a saved strategy").is_err());
        assert!(s.restore(&[]).is_err());
        let saved = Anthelion::new(2).save();
        assert!(s.restore(&saved[..saved.len() / 2]).is_err());
    }

    #[test]
    fn same_seed_same_decisions() {
        let run = |seed| {
            let mut s = Anthelion::new(seed);
            for i in 0..60u64 {
                queue(
                    &mut s,
                    &link(&format!("http://h{}.test/{i}", i % 5), "http://x.test/"),
                    i,
                );
            }
            std::iter::from_fn(|| s.pop(&FreeSlot::ANY).map(|(id, _)| id.0)).collect::<Vec<_>>()
        };
        assert_eq!(run(8), run(8));
    }
}
