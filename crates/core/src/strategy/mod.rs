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
//! 2. an enqueued link comes back under its id through [`Strategy::push`];
//! 3. when a request slot is free, [`Strategy::pop`] gives the next link to
//!    fetch, chosen then, with every answer received so far taken into
//!    account (the engine never asks far ahead: see § Crawl loop in
//!    ARCHITECTURE.md); [`Strategy::confirm`] may still drop or defer it
//!    once its record is loaded, right before its request starts;
//! 4. what the engine then learns goes to [`Strategy::learn`]: every label
//!    observed on a real response (free training data), whether a
//!    structured-data page was relevant, and the number of new, verified
//!    targets found through a fetched page (the reward of its choice);
//! 5. [`Strategy::save`] at each checkpoint, [`Strategy::restore`] on
//!    resume.

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
    /// Predicted neither a page nor a target, in a job that skips those
    /// (`budget.neither_links = "skip"`): it leaves the frontier, counted as
    /// dropped, and the strategy has forgotten it.
    SkipNeither,
}

/// A free request slot, as the engine offers it to [`Strategy::pop`].
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
    /// sb's ranking of links within an action: the tokens that count most
    /// (positive: towards pages that link targets); at most 20.
    #[serde(default)]
    pub lead_tokens: Vec<FeatureReport>,
    /// Links the ranking was trained on, (positive, negative).
    #[serde(default)]
    pub lead_examples: (u64, u64),
    /// The ranking started from a prior learnt by other jobs.
    #[serde(default)]
    pub lead_prior: bool,
    /// What each link source paid (sb): every member path of every action,
    /// summed by how its links were found (`catalog::found_by` of the path:
    /// page link, sitemap, catalog:KIND, form, …), most picked first.
    #[serde(default)]
    pub sources: Vec<SourceReport>,
}

/// The links of one source, as the bandit saw them: pages and files taken
/// from its member paths and the targets those picks were rewarded with.
/// Links fetched at triage (a predicted target, a
/// HEAD) are not picks; the manifest counts their files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceReport {
    /// `found_by` of the member paths: `page link`, `catalog:ckan`, `form`, …
    pub source: String,
    pub picks: u64,
    /// Sum of the rewards of those picks: targets found through them.
    pub targets: f64,
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
///
/// The engine calls it from one job's task only, one call at a time; every
/// method is a pure function of the strategy's state, its seed and the call,
/// so that a job replays from its seed and resumes from [`Strategy::save`].
pub trait Strategy: Send {
    /// Which strategy this is (for the job record, status and bench tables).
    fn kind(&self) -> StrategyKind;

    /// A new in-scope link, never seen by the job: enqueue it (under a key
    /// the strategy chooses), fetch it now, ask the server with HEAD, or
    /// drop it. `known` is its label when the MIME filters or a HEAD already
    /// told it; after a HEAD the same link is triaged again with its label.
    /// A link it enqueues comes back through [`Strategy::push`] under an id.
    fn triage(&mut self, link: &Link, known: Option<Label>) -> Triage;

    /// The job's targets, given once when the strategy is built for a job:
    /// a strategy that asks before it knows may read a link's own file name
    /// against them. The default ignores them.
    fn use_targets(&mut self, targets: &crate::mime::TargetSet) {
        let _ = targets;
    }

    /// Add a link to the frontier under the key [`Strategy::triage`] (or
    /// [`Confirm::Defer`]) gave it. Ids of new links arrive in increasing
    /// order, during a crawl and when a frontier is restored; a link
    /// deferred, held or given back when a job stops comes back under its
    /// own id. [`Strategy::len`] grows by one.
    fn push(&mut self, id: LinkId, key: QueueKey);

    /// The link [`Strategy::triage`] just enqueued was given `id` but comes
    /// to [`Strategy::push`] only later (a retry waiting for its turn, which
    /// is also in the stored frontier): what the strategy computed at its
    /// triage for the push that follows belongs to `id`, not to whatever
    /// link is pushed next. The default keeps nothing.
    fn triaged_for_later(&mut self, id: LinkId) {
        let _ = id;
    }

    /// The link for a free request slot, taken out of the frontier, with
    /// the key it was pushed under; chosen now, with every answer received
    /// so far taken into account.
    ///
    /// A strategy whose arms are hosts (anthelion, ldcoc: it saw each
    /// link's URL at [`Strategy::triage`]) returns its best link on a host
    /// that `slot.host_ready` accepts among its `slot.look_ahead` best
    /// hosts, or `None` to leave the slot empty although it holds links
    /// (the engine offers a slot again when a host may have become ready);
    /// its own exploration (ε, λ) may pick any ready host, on purpose.
    ///
    /// The others ignore `slot` and return their next link: the engine
    /// holds a link whose host is not ready, up to `look_ahead` of them, so
    /// no choice is made long before its request. They return `None` only
    /// when they hold no link.
    fn pop(&mut self, slot: &FreeSlot<'_>) -> Option<(LinkId, QueueKey)>;

    /// A link [`Strategy::pop`] gave, its record loaded, right before its
    /// request starts: fetch it, drop it, or defer it. A strategy that
    /// decides when a link is *polled* rather than when it is found —
    /// LDCOC does, with the model as it is then — decides here; sb drops a
    /// link it still predicts neither when the job skips those
    /// ([`Confirm::SkipNeither`], only when `popped.skip_neither`). The
    /// default fetches every link.
    fn confirm(&mut self, popped: &Popped<'_>) -> Confirm {
        let _ = popped;
        Confirm::Fetch
    }

    /// Links in the frontier: pushed and not popped since.
    fn len(&self) -> usize;

    /// No link in the frontier.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the engine learned about a link: free training data. Each
    /// strategy takes the kinds of [`Feedback`] it learns from and ignores
    /// the others (the default ignores all).
    fn learn(&mut self, feedback: Feedback<'_>) {
        let _ = feedback;
    }

    /// What the strategy learnt that carries over to new jobs of the same
    /// target kinds (sb: which link words lead to targets; never URLs or
    /// hosts), encoded by [`crate::codec`]; `None` when it has nothing.
    fn prior(&self) -> Option<Vec<u8>> {
        None
    }

    /// Start a fresh job from what [`Strategy::prior`] of another job
    /// produced. Never called on a restored job (it has its own).
    fn use_prior(&mut self, bytes: &[u8]) -> Result<(), crate::codec::CodecError> {
        let _ = bytes;
        Ok(())
    }

    /// Everything the strategy has learned (not its queues: the engine
    /// stores the frontier itself), encoded by [`crate::codec`].
    fn save(&self) -> Vec<u8>;

    /// Restore what [`Strategy::save`] produced, on a fresh strategy of the
    /// same kind and seed; the engine pushes the stored frontier afterwards.
    /// On an error the strategy is left as new.
    fn restore(&mut self, bytes: &[u8]) -> Result<(), crate::codec::CodecError>;

    /// What the strategy knows about itself, for status, explain and bench.
    fn stats(&self) -> StrategyStats {
        StrategyStats::default()
    }
}

/// A popped link, as [`Strategy::confirm`] sees it.
pub struct Popped<'a> {
    pub id: LinkId,
    pub link: &'a Link,
    pub key: QueueKey,
    /// The job's `budget.neither_links` is `skip`: a link still predicted
    /// neither may be dropped ([`Confirm::SkipNeither`]).
    pub skip_neither: bool,
}

/// What the engine tells a strategy ([`Strategy::learn`]).
#[derive(Clone, Copy, Debug)]
pub enum Feedback<'a> {
    /// A label observed on a real response to `link` (HEAD, GET, or an
    /// error: see [`LabelSource`]).
    Label {
        link: &'a Link,
        label: Label,
        source: LabelSource,
    },
    /// The page popped with `key` was fetched, and `targets` new, verified
    /// targets were found through it: the reward of the choice that popped
    /// it. Told once per popped page, after its links were triaged. It
    /// names the link too (`id`, `link`), so a strategy can learn which
    /// links lead to targets and not only which arm (sb's ranking within an
    /// action). `fetched` is false when the step made no request at all
    /// (robots.txt refused its link, its origin was given up): the choice
    /// cost nothing, and nothing was learnt of where the link leads.
    Reward {
        id: LinkId,
        link: &'a Link,
        key: QueueKey,
        targets: u32,
        fetched: bool,
    },
    /// A fetched HTML page of a structured-data job, `link` fetched as
    /// `url` (after redirects), is relevant (saved as a target) or not.
    /// Told before the page's links are triaged, so a strategy can use it
    /// for them.
    PageRelevance {
        link: &'a Link,
        url: &'a url::Url,
        relevant: bool,
    },
}
