//! Frontier policies: which link to fetch next, and what to do with a new one.
//!
//! Owns: the ordering of the frontier (queues, actions, priorities), the
//! learners a policy uses (built from [`crate::learn`]) and its seeded RNG.
//! Must not touch: the network, the disk, the clock. The engine owns the link
//! records themselves (id → [`Link`], persisted in the store); a strategy keeps
//! only [`LinkId`]s and the [`QueueKey`] it chose for each, so a frontier can be
//! restored by pushing the stored entries back in id order.
//!
//! The engine drives a strategy like grep-searcher drives a `Sink`:
//!
//! 1. every new in-scope link goes through [`Strategy::triage`], which answers
//!    enqueue / fetch now / ask with HEAD / drop;
//! 2. when a request slot is free, [`Strategy::pop_ready`] gives the next
//!    link to fetch, chosen then, with every answer received so far taken
//!    into account (the engine never asks far ahead: see § Crawl loop in
//!    ARCHITECTURE.md); [`Strategy::confirm`] may still drop or defer it
//!    once its record is loaded, right before its request starts;
//! 3. every label the engine observes on a real response goes to
//!    [`Strategy::observe`] (free training data), and the number of new,
//!    verified targets found on a fetched page to [`Strategy::reward`].

mod anthelion;
mod baseline;
mod focused;
mod ldcoc;
mod sb;

pub use anthelion::{Anthelion, AnthelionConfig};
pub use baseline::{Bfs, Dfs, RandomOrder};
pub use focused::Focused;
pub use ldcoc::{Ldcoc, LdcocConfig};
pub use sb::SleepingBandit;

use crate::link::{Link, LinkId, QueueKey};
use crate::mime::Label;
use serde::{Deserialize, Serialize};

/// What to do with a newly discovered link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Triage {
    /// Put it in the frontier under this key.
    Enqueue(QueueKey),
    /// Fetch it right away (a predicted target); its reward goes to the page it was found on.
    FetchNow,
    /// Ask the server with a HEAD request, then triage again with the label.
    Head,
    /// Never fetch it.
    Drop,
}

/// What a strategy says of a link it popped, right before its request
/// starts ([`Strategy::confirm`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Confirm {
    /// Fetch it now.
    Fetch,
    /// Never fetch it: it leaves the frontier, counted as dropped.
    Drop,
    /// Not now: it goes back to the strategy under this key (the engine
    /// pushes it again), to be offered later, when the strategy's prediction
    /// changed or nothing better is left. It stays in the frontier.
    Defer(QueueKey),
}

/// A free request slot, as the engine offers it to
/// [`Strategy::pop_ready`].
pub struct FreeSlot<'a> {
    /// Whether a request to this host name could start now: no step of the
    /// job on its politeness key, and the key's delay passed.
    pub host_ready: &'a dyn Fn(&str) -> bool,
    /// How far down its own ranking a strategy may go to find a link it can
    /// fetch now: with 1, only its first choice (a slot stays empty while
    /// that host is not ready); with more, a lower-ranked link may take a
    /// slot its betters' hosts cannot. The job's `politeness.look_ahead`.
    pub look_ahead: usize,
}

impl FreeSlot<'_> {
    /// A slot where every host is ready and any link may go (a test, a
    /// replay with one step at a time).
    pub const ANY: FreeSlot<'static> = FreeSlot {
        host_ready: &|_| true,
        look_ahead: usize::MAX,
    };
}

/// How a label was learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelSource {
    Head,
    Get,
    /// The URL answered a client error (4xx) or could not be read: not a
    /// target, and not a page either. Classifiers of pages and targets skip
    /// it (a 404 says nothing of what the URL's kind of link holds); a
    /// learner of "is this URI worth a request" takes it as a negative.
    Error,
}

/// The strategies a job can name in its `strategy` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StrategyKind {
    Sb,
    Focused,
    Bfs,
    Dfs,
    Random,
    Ldcoc,
    Anthelion,
    /// sb without its neither patterns (sb before issue #18), to measure them.
    #[serde(rename = "sb-binary")]
    SbBinary,
}

impl StrategyKind {
    pub const ALL: [StrategyKind; 8] = [
        StrategyKind::Sb,
        StrategyKind::Focused,
        StrategyKind::Bfs,
        StrategyKind::Dfs,
        StrategyKind::Random,
        StrategyKind::Ldcoc,
        StrategyKind::Anthelion,
        StrategyKind::SbBinary,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::Sb => "sb",
            StrategyKind::Focused => "focused",
            StrategyKind::Bfs => "bfs",
            StrategyKind::Dfs => "dfs",
            StrategyKind::Random => "random",
            StrategyKind::Ldcoc => "ldcoc",
            StrategyKind::Anthelion => "anthelion",
            StrategyKind::SbBinary => "sb-binary",
        }
    }

    pub fn parse(name: &str) -> Option<StrategyKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the strategy learns, online, which links to fetch first
    /// (the baselines only order the frontier).
    pub fn learns(self) -> bool {
        !matches!(
            self,
            StrategyKind::Bfs | StrategyKind::Dfs | StrategyKind::Random
        )
    }

    /// A fresh strategy of this kind, seeded.
    pub fn build(self, seed: u64) -> Box<dyn Strategy> {
        match self {
            StrategyKind::Sb => Box::new(SleepingBandit::new(seed)),
            StrategyKind::Focused => Box::new(Focused::new(seed)),
            StrategyKind::Bfs => Box::new(Bfs::default()),
            StrategyKind::Dfs => Box::new(Dfs::default()),
            StrategyKind::Random => Box::new(RandomOrder::new(seed)),
            StrategyKind::Ldcoc => Box::new(Ldcoc::new(seed)),
            StrategyKind::Anthelion => Box::new(Anthelion::new(seed)),
            StrategyKind::SbBinary => Box::new(SleepingBandit::binary(seed)),
        }
    }
}

/// One action (a group of links with similar tag paths) as `forager explain` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionReport {
    pub id: u32,
    /// The first tag path that founded the action.
    pub tag_path: String,
    pub links_seen: u64,
    pub selections: u64,
    pub mean_reward: f64,
    pub links_left: u64,
    /// Distinct tag paths grouped in the action (its members).
    pub paths: u64,
    /// The member path that has paid best so far, when the action has several
    /// and one of them was picked (sb's member bandit).
    pub best_member: Option<MemberReport>,
}

/// One exact tag path inside an action, as `forager explain` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemberReport {
    pub tag_path: String,
    pub selections: u64,
    pub mean_reward: f64,
    pub links_left: u64,
}

/// What a strategy knows about itself, for status, explain and bench.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyStats {
    /// Online accuracy of the URL classifier: predictions made before the label was known.
    pub classifier_predictions: u64,
    pub classifier_correct: u64,
    pub actions: u64,
    /// Tag paths placed past one of the learner's caps since the job's
    /// process started (a hostile or enormous site; see `learn::actions`).
    #[serde(default)]
    pub capped_paths: u64,
    /// Best actions first (by mean reward, then selections); at most 20.
    pub top_actions: Vec<ActionReport>,
    /// The classifier's strongest features, by absolute weight, for the
    /// strategies that keep their names (`ldcoc`); at most 20.
    #[serde(default)]
    pub top_features: Vec<FeatureReport>,
    /// Links predicted neither a page nor a target by their URL pattern
    /// (sb): made to wait for the end of the crawl, and fetched at once as
    /// the ε-sample. Counted over the whole job.
    #[serde(default)]
    pub neither_waited: u64,
    #[serde(default)]
    pub neither_sampled: u64,
}

/// One feature of a URL classifier and its weight (positive: towards a target).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FeatureReport {
    pub name: String,
    pub weight: f64,
}

impl StrategyStats {
    pub fn classifier_accuracy(&self) -> Option<f64> {
        (self.classifier_predictions > 0)
            .then(|| self.classifier_correct as f64 / self.classifier_predictions as f64)
    }
}

/// A frontier policy. See the module documentation for the protocol.
pub trait Strategy: Send {
    fn kind(&self) -> StrategyKind;

    /// Decide what to do with a new in-scope link; `known` is its label when the
    /// MIME filters or a HEAD request already told it.
    fn triage(&mut self, link: &Link, known: Option<Label>) -> Triage;

    /// Add a link to the frontier under the key `triage` gave it. Ids arrive in
    /// increasing order, both during a crawl and when a frontier is restored.
    fn push(&mut self, id: LinkId, key: QueueKey);

    /// Remove and return the next link to fetch, with the key it was pushed under.
    fn pop(&mut self) -> Option<(LinkId, QueueKey)>;

    /// [`Strategy::pop`] for a free request slot of a job with many hosts.
    ///
    /// A strategy whose arms are hosts (it saw each link's URL at
    /// [`Strategy::triage`]) returns
    /// its best link on a host that `slot.host_ready` accepts among its
    /// `slot.look_ahead` best hosts, or `None` to leave the slot empty
    /// (the engine asks again when a host may have become ready); its own
    /// exploration (ε, λ) may pick any ready host, on purpose.
    ///
    /// The others return [`Strategy::pop`]: the engine holds a link whose
    /// host is not ready, up to `look_ahead` of them, and pops no more while
    /// that many wait, so no choice is made long before its request.
    fn pop_ready(&mut self, slot: &FreeSlot<'_>) -> Option<(LinkId, QueueKey)> {
        let _ = slot;
        self.pop()
    }

    /// A link just popped (its record loaded), right before its request
    /// starts: fetch it, drop it, or defer it. A strategy that decides when
    /// a link is *polled* rather than when it is found — LDCOC does, with
    /// the model as it is then — says so here; the others fetch every link
    /// they queued.
    fn confirm(&mut self, link: &Link, key: QueueKey) -> Confirm {
        let _ = (link, key);
        Confirm::Fetch
    }

    /// A link `id` just popped with `key`, in a job whose
    /// `budget.neither_links` is `skip`, asked before [`Strategy::confirm`]:
    /// `true` when the strategy made it wait as predicted neither and still
    /// predicts so. The engine then drops it (it leaves the frontier, counted
    /// as dropped) and the strategy must have forgotten it. Strategies that
    /// never predict neither keep every link.
    fn skip_predicted_neither(&mut self, id: LinkId, link: &Link, key: QueueKey) -> bool {
        let _ = (id, link, key);
        false
    }

    /// Links waiting in the frontier.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A label observed on a real response (HEAD or GET), for learning.
    fn observe(&mut self, _link: &Link, _label: Label, _source: LabelSource) {}

    /// The page popped with `key` was fetched and yielded `reward` new verified targets.
    fn reward(&mut self, _key: QueueKey, _reward: u32) {}

    /// A fetched HTML page of a structured-data job, `link` fetched as `url`
    /// (after redirects), is relevant (saved as a target) or not. Told before
    /// the page's links are triaged, so a strategy can use it for them.
    fn page_relevance(&mut self, _link: &Link, _url: &url::Url, _relevant: bool) {}

    /// Everything the strategy has learned (not its queues), encoded by the store codec.
    fn save(&self) -> Vec<u8>;

    /// Restore what [`Strategy::save`] produced; the engine pushes the frontier afterwards.
    fn restore(&mut self, bytes: &[u8]) -> Result<(), crate::codec::CodecError>;

    fn stats(&self) -> StrategyStats {
        StrategyStats::default()
    }
}
