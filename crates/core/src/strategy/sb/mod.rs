//! `sb`: the sleeping-bandit crawler of the sb-classifier paper (ARCHITECTURE.md § Crawl loop), the default.
//!
//! - [`Strategy::triage`]: a known label is used as is; otherwise the URL
//!   classifier predicts it (or, while warming up, asks for a HEAD). Targets
//!   are fetched at once; HTML links join the action of their tag path and
//!   wait in the frontier under it; "neither" links are dropped when their
//!   type is known (MIME filters, HEAD); links the neither-pattern learner
//!   predicts neither wait apart (below).
//! - [`Strategy::pop`]: t += 1, the awake action with the best AUER score,
//!   then one of its links (below).
//! - [`Feedback::Reward`]: the incremental mean reward of the popped action;
//!   the link itself trains the ranking within actions (below).
//! - [`Feedback::Label`]: free labels for the classifier.
//!
//! Which link of the chosen action (beyond the paper, [`LinkPick`]): the
//! paper takes one uniformly at random. forager keeps an action's links
//! apart by their exact tag path (the action's *members*) and picks the
//! member with a second AUER bandit — same score and rewards, the paper's
//! α = 2√2 (the bandit over actions has √2, [`ACTION_ALPHA`]), the
//! action's own selections as its clock — then a uniformly random link of
//! that member. Why: θ = 0.75 merges paths that differ in one or two
//! elements, e.g. the same listing markup in two sections whose `<body>`
//! classes differ (`body.page-events/…/dt/a` and `body.page-indicators/…/dt/a`
//! share 7 of 9 2-grams, cos 0.78). When one is a data section and the other
//! a large content section, the action's mean reward is diluted (0.04 on the
//! synthetic `sparse` site) and the paper's uniform pick finds the data
//! section's pages only in proportion to their share of the action, so sb
//! needed 3.6× the requests of breadth-first search there. The member
//! bandit finds the paying path inside the action at the cost of one try per
//! path; measured over 6 sites × 3 seeds: req@90 sb/bfs sparse 3.58 → 0.30,
//! small 1.00 → 0.56, the others equal or better. [`LinkPick::Uniform`]
//! keeps the paper's pick.
//!
//! Which link of the chosen member (beyond the paper, issue #41,
//! [`LeadRanker`]): once a page has been learnt from, the member's links
//! are scored by an FTRL model of where links lead (tokens of the link's
//! path and query, anchor text and referring page; trained in
//! [`Feedback::Reward`], which names the link, positive when the page yielded a target) and the
//! best is taken, or a uniformly random one with ε = 0.1 (at most 2 048
//! links scored per pick, sampled beyond). A reference section whose
//! thousands of pages share one tag path, a few percent of them linking
//! data, is one member to the bandits; only the words tell its productive
//! pages (`synthetic:rare`: req@90 100 → 48 %). The features of queued links
//! are computed at triage and saved, since a restored frontier comes back
//! as ids. The model's token weights are the job's prior for new jobs of the
//! same target kinds ([`Strategy::prior`], `engine/prior.rs`).
//!
//! Across actions (beyond the paper, [`LeadConfig::global_share`],
//! [`LeadConfig::cold_share`]): before any page of this job has yielded a
//! target, half of the picks skip the bandits and take a uniformly random
//! link of the whole frontier — a prior from another job does not end that
//! phase ([`LeadConfig::warm_share`], [`LeadConfig::prior_keep`]); after,
//! every pick first tries the link of the whole frontier the ranking scores
//! best, taken when it stands out, and the bandits choose when it does not.
//! The link so taken has its action and member counted as selected
//! ([`AuerBandit::select_arm`]), which get its reward.
//!
//! Links that are neither (beyond the paper, issue #18, [`NeitherPatterns`]):
//! before the classifier is asked, a link whose URL pattern (directory,
//! extension, query shape) has answered neither — another type, or a 4xx —
//! with p ≥ 0.8 is put in a *waiting* queue ([`WAITING_SLOT`]) served only
//! when no action has a link left: it is never dropped (unless the job's
//! `budget.neither_links` is `skip`: then one still predicted neither when
//! popped is, [`Confirm::SkipNeither`]), so coverage stays
//! whole, but it costs nothing before the rest of the site is crawled. An
//! ε-sample of them goes through the usual triage and its answer counts 1/ε
//! (LDCOC), so a pattern that turns out to hold pages is released. Links
//! queued under an action while their pattern was still unknown (or mostly
//! neither) are remembered as *suspects* and decided again when popped: if
//! their pattern is neither by then, they move to the waiting queue and the
//! action that chose them is rewarded 0 for each (a restore keeps them
//! waiting: the suspects are saved). The
//! classifier is not touched: a 3-class model cost sklearn's accuracy 85 %.
//! The action that chose a link that answered neither earns 0 for it, as
//! for a page without targets: a negative reward was measured and not kept
//! (`synthetic:variants`, α = 1.41, 5 seeds: req@90 32.4 ± 4.2 % with 0, 39.5
//! ± 2.7 with −0.5, 38.5 ± 5.3 with −1; the footer and breadcrumb actions
//! that carry the variant links carry pages too).
//! Why: on a Sphinx site sb spent a third of its requests before 90 % of the
//! targets on `_sources/*.txt` (DESIGN.md "Beyond the paper"). Measured on
//! `synthetic:variants` against `sb-binary` ([`SleepingBandit::binary`], sb
//! without it, kept to measure it), 5 seeds: neither requests before req@90
//! 340 → 26, req@90 64.3 → 45.2 % (deciding queued links again alone: 340 →
//! 58, 64.3 → 48.0 %); on small, deep, sparse, dense, sklearn and twisted
//! req@90 is equal or lower (within one standard deviation, twisted 16.7 →
//! 15.1 %).
//!
//! Saved: the action index, the bandit statistics (actions and members), the
//! classifier, the neither patterns, the suspects, the ranking within
//! actions with the features of the links it ranks, and the RNG; not the queues, which the engine pushes back in id
//! order after a restore. Each member's links are kept in id order and the
//! queue key names the member, so the restored queues are the saved ones and a
//! resumed crawl takes the decisions of an uninterrupted one.

use super::{
    ActionReport, Confirm, FeatureReport, Feedback, FreeSlot, LabelSource, MemberReport, Popped,
    SourceReport, Strategy, StrategyKind, StrategyStats, Triage,
};
use crate::codec::{self, CodecError};
use crate::learn::neither::LinkPattern;
use crate::learn::{
    ActionConfig, ActionId, ActionIndex, ArmStats, AuerBandit, AuerConfig, ClassifierConfig,
    LeadConfig, LeadPrior, LeadRanker, NeitherDecision, NeitherPatternConfig, NeitherPatterns,
    UrlClassifier, UrlClassifierWithoutTagPaths, Verdict,
};
use crate::link::{Link, LinkId, QueueKey};
use crate::mime::Label;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::collections::{btree_map, BTreeMap, BTreeSet, HashMap, VecDeque};

mod queues;
use queues::{locate, ActionQueue, Taken};

/// Actions listed by [`Strategy::stats`].
const TOP_ACTIONS: usize = 20;

/// Order of arms in reports, best first: highest mean reward, then most
/// selections, then lowest index.
fn best_first((ia, a): (u32, ArmStats), (ib, b): (u32, ArmStats)) -> std::cmp::Ordering {
    b.mean_reward
        .total_cmp(&a.mean_reward)
        .then(b.selections.cmp(&a.selections))
        .then(ia.cmp(&ib))
}

/// The queue key slot of links predicted neither: served after every action.
pub const WAITING_SLOT: u32 = u32::MAX;

/// Most links remembered as suspects (queued under an action while their
/// pattern might turn out neither, and those of them that were made to
/// wait); beyond it, new links are not decided again.
const MAX_SUSPECTS: usize = 1 << 16;

/// A link queued under an action while its URL pattern might still turn out
/// neither ([`NeitherPatterns::suspect`]): decided again when popped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Suspect {
    link: LinkPattern,
    /// Decided again and made to wait, away from this action: pushed back
    /// under it (a restore, a parked link), it goes to the waiting queue;
    /// popped from there, it is returned under it (the key it was pushed under).
    diverted_from: Option<ActionKey>,
}

/// An action and a member of it: the queue key of a link queued under an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct ActionKey {
    slot: u32,
    member: u32,
}

impl ActionKey {
    fn of(key: QueueKey) -> Self {
        ActionKey {
            slot: key.slot,
            member: member_of(key),
        }
    }

    fn queue_key(self) -> QueueKey {
        QueueKey {
            slot: self.slot,
            score: self.member as f32,
        }
    }
}

/// Largest member index a queue key carries exactly (an f32 holds integers up to 2^24).
const MAX_MEMBER: u32 = (1 << 24) - 1;

/// A fetched page's URL, as [`REFERRER_CREDIT`] remembers it.
fn page_fingerprint(url: &url::Url) -> u64 {
    crate::hash::fingerprint64(url.as_str().as_bytes())
}

/// The member a queue key names inside its action.
fn member_of(key: QueueKey) -> u32 {
    // Saturating cast: NaN and negatives give 0, huge values MAX_MEMBER at most.
    (key.score as u32).min(MAX_MEMBER)
}

/// FTRL's α of sb's URL classifier: 0.3, not ARCHITECTURE.md § Crawl loop's 0.1 (beyond the paper).
///
/// On sites where pages and files share a URL family and differ only in how
/// the URL ends (Drupal-like `/node/N`), the class prior of the family swings
/// as the crawl moves between sections, and at α = 0.1 the end-of-URL
/// weights never outgrow it: the synthetic `deep` site stayed at 94.6 %
/// online accuracy, below the 95 % bar. Measured with sb (α 0.1, 5 seeds →
/// α 0.3, 10 seeds): accuracy deep 94.6 → 97.4 %, dense 97.0 → 96.0 %,
/// small 95.8 → 95.4 %; sb's req@90 deep 50.1 → 44.8 %, small 53.8 → 47.4 %,
/// dense 65.4 → 65.8 %; sklearn and twisted 99.2–99.3 % either way (3 seeds).
/// A longer warm-up (20 labels) and a first-segment × last-character
/// feature were measured too and gained nothing on top of this.
/// (`focused` keeps 0.1: its own test, all targets no later than BFS on the
/// fake site, fails at 0.3.)
pub const CLASSIFIER_ALPHA: f64 = 0.3;

/// AUER's α of the bandit over actions: √2, not the paper's 2√2 (beyond the paper, issue #18).
///
/// sb's reward is a count of targets (2–3 per data page on the synthetic
/// sites), not a reward in [0, 1], so at α = 2√2 an action that never paid
/// keeps a bonus above a paying action's score for long: traced on
/// `synthetic:small` (seed 8), before 90 % of the targets 20 actions that
/// never found a target (sort links, the calendar trap, content sections'
/// related lists) were chosen 9 times each, about 180 of sb's 442 requests
/// for pages. At √2 they are chosen 2–7 times. The member bandits keep 2√2
/// ([`SbConfig::member_bandit`]): inside an action the paying path is
/// found by trying the paths (the `sparse` site), and lowering theirs
/// gained nothing on `small` (39.3 vs 39.4 % at 10 seeds).
/// Measured with sb, 5 seeds, req@90 % 2√2 → √2 (docs/bench/sb-alpha-2026-11-25.md):
/// small 47.3 ± 4.0 → 37.3 ± 5.4, deep 44.7 ± 0.9 → 42.9 ± 2.3, sparse 6.5
/// → 4.7, dense 64.3 ± 0.8 → 65.3 ± 1.2 (the one site it costs), sklearn
/// 57.0 → 54.7, twisted 15.3 → 14.1, variants 43.8 → 32.7; accuracy
/// 95.3–99.4 %. On small at 10 seeds, α 2√2 46.9 ± 4.8, 2 47.0, 1.7 43.5,
/// 1.41 39.4 ± 7.6, 1.2 40.6, 1 43.5 %.
pub const ACTION_ALPHA: f64 = std::f64::consts::SQRT_2;

/// Share of a page's reward credited to the action that chose its referring
/// page: 0, off (beyond the paper, issue #41; measured and not kept).
///
/// sb's reward is the targets found on the page an action chose, so an
/// action whose pages lead to data pages but hold none — the pager of a
/// reference section whose items link files one time in fifty — is worth 0
/// to the bandit however well it feeds the action that pays. Crediting the
/// referrer's action with a share of the page's reward (once, not further
/// up) was meant to make such listings worth fetching. Measured with the
/// ranking within actions on, 2 seeds, req@90 % with share 0 → 0.5 → 1 → 2:
/// `synthetic:rare` 48.5 → 42.3 → 46.1 → 40.1, small 37.9 → 41.6 → 49.7 →
/// 51.1, sparse 5.2 → 4.1 → 4.5 → 4.5, sklearn 54.1 → 55.8 → 56.4 → 56.8,
/// twisted 13.7 → 14.3 → 14.1 → 14.7: the gain on the rare-target site is
/// within its spread, and small and sklearn lose more than one standard
/// deviation of today's figures. The mechanism stays for measurement
/// ([`SbConfig::referrer_credit`]).
pub const REFERRER_CREDIT: f64 = 0.0;

/// Pages remembered with the action that chose them, for [`REFERRER_CREDIT`].
const MAX_CAME_FROM: usize = 1 << 16;

/// Tuning of the `sb` strategy (ARCHITECTURE.md § Crawl loop defaults, but [`CLASSIFIER_ALPHA`], [`ACTION_ALPHA`] and [`LinkPick`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SbConfig {
    pub actions: ActionConfig,
    /// The bandit over actions ([`ACTION_ALPHA`]).
    pub bandit: AuerConfig,
    /// The bandits over the member paths of each action (the paper's α = 2√2).
    pub member_bandit: AuerConfig,
    pub classifier: ClassifierConfig,
    /// Which link of the chosen action is fetched.
    pub pick: LinkPick,
    /// Links predicted neither by their URL pattern wait (see the module documentation).
    pub neither: NeitherPatternConfig,
    /// Which link of the chosen member: ranked by where links lead ([`LeadRanker`]).
    pub lead: LeadConfig,
    /// Share of a page's reward credited to the action (and member) that
    /// chose the page it was found on ([`REFERRER_CREDIT`]); 0: none.
    pub referrer_credit: f64,
}

impl Default for SbConfig {
    fn default() -> Self {
        let mut classifier = ClassifierConfig::default();
        classifier.ftrl.alpha = CLASSIFIER_ALPHA;
        SbConfig {
            actions: ActionConfig::default(),
            bandit: AuerConfig {
                alpha: ACTION_ALPHA,
            },
            member_bandit: AuerConfig::default(),
            classifier,
            pick: LinkPick::default(),
            neither: NeitherPatternConfig::default(),
            lead: LeadConfig::default(),
            referrer_credit: REFERRER_CREDIT,
        }
    }
}

/// Which unvisited link of the selected action is fetched (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkPick {
    /// Uniformly at random among all of the action's links (the paper).
    Uniform,
    /// The member path with the best AUER score, then uniformly at random among its links.
    #[default]
    MemberBandit,
}

/// A frontier entry whose key names no known action (e.g. pushed without triage).
#[derive(Clone, Copy, Debug)]
struct QueuedLink {
    id: LinkId,
    key: QueueKey,
}

/// The sleeping-bandit strategy.
pub struct SleepingBandit {
    config: SbConfig,
    /// The job's targets ([`Strategy::use_targets`]): while the classifier
    /// is cold, a link whose file name has a target's extension is fetched
    /// instead of costing a HEAD. Configuration, not learnt state: never
    /// saved, given again when a job resumes.
    targets: Option<crate::mime::TargetSet>,
    actions: ActionIndex,
    bandit: AuerBandit,
    /// Per action: the bandit over its member paths (grown on demand).
    member_bandits: Vec<AuerBandit>,
    classifier: UrlClassifier,
    neither: NeitherPatterns,
    rng: Xoshiro256PlusPlus,
    queues: Vec<ActionQueue>,
    /// Served first, in push order: they belong to no action the bandit knows.
    orphans: VecDeque<QueuedLink>,
    /// Links predicted neither, in id order (whether they waited from their
    /// triage or from a later pop, so a restored queue is the saved one): served last.
    waiting: BTreeSet<LinkId>,
    /// Links queued under an action that are decided again when popped (saved).
    suspects: BTreeMap<LinkId, Suspect>,
    /// The suspect [`Strategy::triage`] just queued, for the [`Strategy::push`] that follows.
    pending: Option<LinkPattern>,
    /// Which links lead to pages that link targets: ranks a member's links.
    lead: LeadRanker,
    /// The ranking features of links queued under an action or in flight
    /// (computed at their triage; saved, since a restored frontier is pushed
    /// back as ids alone). Dropped when their step settles.
    lead_features: HashMap<LinkId, Box<[u32]>>,
    /// The features [`Strategy::triage`] just computed, for the push that follows.
    pending_lead: Option<Box<[u32]>>,
    /// The action (and member) that chose each page fetched lately, by URL
    /// fingerprint (saved), for [`REFERRER_CREDIT`]; the oldest forgotten first.
    came_from: HashMap<u64, ActionKey>,
    came_order: VecDeque<u64>,
    /// The ranking features of the links of pages fetched lately, by the
    /// page's URL fingerprint (saved), for the credit one level up
    /// ([`LeadConfig::up_credit`]); the oldest forgotten first.
    up_features: HashMap<u64, Box<[u32]>>,
    up_order: VecDeque<u64>,
    /// Per page whose links are being triaged (its URL fingerprint), how
    /// many of them the triage fetched at once as targets of an extension
    /// the classifier had not learnt; read and dropped when that page's
    /// step settles, once those fetches are done. Not saved: a restore
    /// cancels the steps under way. At most [`MAX_UP_FEATURES`] pages.
    unlearnt_from: HashMap<u64, u32>,
    /// Links made to wait were rewarded 0 when they left their action: the
    /// reward of their fetch, which comes under the action's key, is not
    /// counted again (per key, how many such fetches are under way; not saved,
    /// a restore pushes them back). Should another link of the same key settle
    /// first, its reward is the one not counted: rewards are not tied to links.
    prepaid: BTreeMap<ActionKey, u32>,
    len: usize,
    /// `Sb`, or `SbBinary` without the neither patterns.
    kind: StrategyKind,
    /// Seeds fresh learners when an older layout is restored.
    seed: u64,
}

/// Most fetched pages whose link's ranking features are kept for the credit
/// one level up: a page's links are mostly fetched within this many pages
/// of it on the sites measured (8 000 pages at most); ~6 MB in memory and
/// ~5 MB in the saved state at most.
const MAX_UP_FEATURES: usize = 1 << 16;

/// Most links whose ranking features are kept (~100 bytes each in memory,
/// ~80 in the saved state, which a checkpoint encodes whole): 13 MB at most
/// per job. Links queued past it score 0, so a huge frontier is ranked by
/// the links it holds first (no measured site comes near it).
const MAX_LEAD_FEATURES: usize = 1 << 17;

#[derive(Serialize)]
struct StoredSbRef<'a> {
    actions: &'a ActionIndex,
    bandit: &'a AuerBandit,
    classifier: &'a UrlClassifier,
    rng: &'a Xoshiro256PlusPlus,
    member_bandits: &'a [AuerBandit],
    neither: &'a NeitherPatterns,
    suspects: &'a BTreeMap<LinkId, Suspect>,
    lead: &'a LeadRanker,
    /// In id order, so that the same state always encodes to the same bytes.
    lead_features: Vec<(LinkId, &'a [u32])>,
    /// Oldest first.
    came_from: Vec<(u64, ActionKey)>,
    /// Oldest first.
    up_features: Vec<(u64, &'a [u32])>,
}

/// The saved layout, read with the classifier of its time: `C` is
/// [`UrlClassifier`] for the current layout, [`UrlClassifierWithoutTagPaths`]
/// for the one saved before the URL classifier learnt from tag paths (the
/// fields are otherwise the same, so one struct reads both).
#[derive(Deserialize)]
struct StoredSb<C = UrlClassifier> {
    actions: ActionIndex,
    bandit: AuerBandit,
    classifier: C,
    rng: Xoshiro256PlusPlus,
    member_bandits: Vec<AuerBandit>,
    neither: NeitherPatterns,
    suspects: BTreeMap<LinkId, Suspect>,
    lead: LeadRanker,
    lead_features: Vec<(LinkId, Box<[u32]>)>,
    came_from: Vec<(u64, ActionKey)>,
    up_features: Vec<(u64, Box<[u32]>)>,
}

/// The layout saved before the credit one level up: restored with no page's
/// link features kept (the credit starts with the pages fetched next).
/// This and the older layouts hold a classifier without tag paths.
#[derive(Deserialize)]
struct StoredSbWithoutUp {
    actions: ActionIndex,
    bandit: AuerBandit,
    classifier: UrlClassifierWithoutTagPaths,
    rng: Xoshiro256PlusPlus,
    member_bandits: Vec<AuerBandit>,
    neither: NeitherPatterns,
    suspects: BTreeMap<LinkId, Suspect>,
    lead: LeadRanker,
    lead_features: Vec<(LinkId, Box<[u32]>)>,
    came_from: Vec<(u64, ActionKey)>,
}

/// The layout saved before links were ranked within an action: restored with a fresh ranking.
#[derive(Deserialize)]
struct StoredSbWithoutLead {
    actions: ActionIndex,
    bandit: AuerBandit,
    classifier: UrlClassifierWithoutTagPaths,
    rng: Xoshiro256PlusPlus,
    member_bandits: Vec<AuerBandit>,
    neither: NeitherPatterns,
    suspects: BTreeMap<LinkId, Suspect>,
}

/// The layout saved before suspects were decided again: restored without any.
#[derive(Deserialize)]
struct StoredSbWithoutSuspects {
    actions: ActionIndex,
    bandit: AuerBandit,
    classifier: UrlClassifierWithoutTagPaths,
    rng: Xoshiro256PlusPlus,
    member_bandits: Vec<AuerBandit>,
    neither: NeitherPatterns,
}

/// The layout saved before the neither patterns existed: restored with fresh ones.
#[derive(Deserialize)]
struct StoredSbWithoutNeither {
    actions: ActionIndex,
    bandit: AuerBandit,
    classifier: UrlClassifierWithoutTagPaths,
    rng: Xoshiro256PlusPlus,
    member_bandits: Vec<AuerBandit>,
}

/// The layout saved before member bandits existed: restored with fresh ones.
#[derive(Deserialize)]
struct StoredSbWithoutMembers {
    actions: ActionIndex,
    bandit: AuerBandit,
    classifier: UrlClassifierWithoutTagPaths,
    rng: Xoshiro256PlusPlus,
}

impl<C: Into<UrlClassifier>> StoredSb<C> {
    fn into_current(self) -> StoredSb {
        StoredSb {
            actions: self.actions,
            bandit: self.bandit,
            classifier: self.classifier.into(),
            rng: self.rng,
            member_bandits: self.member_bandits,
            neither: self.neither,
            suspects: self.suspects,
            lead: self.lead,
            lead_features: self.lead_features,
            came_from: self.came_from,
            up_features: self.up_features,
        }
    }
}

// Each older layout becomes the next newer one, the field it lacked made
// fresh: a layout is converted once, whatever its age, and a new layout
// adds one step here instead of a conversion of every older one.

impl StoredSbWithoutUp {
    fn newer(self) -> StoredSb<UrlClassifierWithoutTagPaths> {
        StoredSb {
            actions: self.actions,
            bandit: self.bandit,
            classifier: self.classifier,
            rng: self.rng,
            member_bandits: self.member_bandits,
            neither: self.neither,
            suspects: self.suspects,
            lead: self.lead,
            lead_features: self.lead_features,
            came_from: self.came_from,
            up_features: Vec::new(),
        }
    }
}

impl StoredSbWithoutLead {
    fn newer(self, lead: LeadRanker) -> StoredSbWithoutUp {
        StoredSbWithoutUp {
            actions: self.actions,
            bandit: self.bandit,
            classifier: self.classifier,
            rng: self.rng,
            member_bandits: self.member_bandits,
            neither: self.neither,
            suspects: self.suspects,
            lead,
            lead_features: Vec::new(),
            came_from: Vec::new(),
        }
    }
}

impl StoredSbWithoutSuspects {
    fn newer(self) -> StoredSbWithoutLead {
        StoredSbWithoutLead {
            actions: self.actions,
            bandit: self.bandit,
            classifier: self.classifier,
            rng: self.rng,
            member_bandits: self.member_bandits,
            neither: self.neither,
            suspects: BTreeMap::new(),
        }
    }
}

impl StoredSbWithoutNeither {
    fn newer(self, neither: NeitherPatterns) -> StoredSbWithoutSuspects {
        StoredSbWithoutSuspects {
            actions: self.actions,
            bandit: self.bandit,
            classifier: self.classifier,
            rng: self.rng,
            member_bandits: self.member_bandits,
            neither,
        }
    }
}

impl StoredSbWithoutMembers {
    fn newer(self) -> StoredSbWithoutNeither {
        StoredSbWithoutNeither {
            actions: self.actions,
            bandit: self.bandit,
            classifier: self.classifier,
            rng: self.rng,
            member_bandits: Vec::new(),
        }
    }
}

/// Every layout sb's state was saved in, newest first: [`Strategy::restore`]
/// fills in what an older one lacked ([`StoredLayout::into_current`]).
enum StoredLayout {
    Current(StoredSb),
    WithoutTagPaths(StoredSb<UrlClassifierWithoutTagPaths>),
    WithoutUp(StoredSbWithoutUp),
    WithoutLead(StoredSbWithoutLead),
    WithoutSuspects(StoredSbWithoutSuspects),
    WithoutNeither(StoredSbWithoutNeither),
    WithoutMembers(StoredSbWithoutMembers),
}

impl StoredLayout {
    /// The newest layout `bytes` decode as (each decode is whole: no
    /// trailing bytes, so an older layout never passes for a newer one's
    /// prefix); when none does, the current layout's error.
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let current = match codec::decode(bytes) {
            Ok(stored) => return Ok(StoredLayout::Current(stored)),
            Err(e) => e,
        };
        codec::decode(bytes)
            .map(StoredLayout::WithoutTagPaths)
            .or_else(|_| codec::decode(bytes).map(StoredLayout::WithoutUp))
            .or_else(|_| codec::decode(bytes).map(StoredLayout::WithoutLead))
            .or_else(|_| codec::decode(bytes).map(StoredLayout::WithoutSuspects))
            .or_else(|_| codec::decode(bytes).map(StoredLayout::WithoutNeither))
            .or_else(|_| codec::decode(bytes).map(StoredLayout::WithoutMembers))
            .map_err(|_| current)
    }

    /// The current layout: an older one steps up one layout at a time,
    /// with a fresh learner (`neither`, `lead`) for what it lacked.
    fn into_current(
        self,
        neither: &dyn Fn() -> NeitherPatterns,
        lead: &dyn Fn() -> LeadRanker,
    ) -> StoredSb {
        let newer = match self {
            StoredLayout::Current(stored) => return stored,
            StoredLayout::WithoutTagPaths(old) => return old.into_current(),
            StoredLayout::WithoutUp(old) => StoredLayout::WithoutTagPaths(old.newer()),
            StoredLayout::WithoutLead(old) => StoredLayout::WithoutUp(old.newer(lead())),
            StoredLayout::WithoutSuspects(old) => StoredLayout::WithoutLead(old.newer()),
            StoredLayout::WithoutNeither(old) => {
                StoredLayout::WithoutSuspects(old.newer(neither()))
            }
            StoredLayout::WithoutMembers(old) => StoredLayout::WithoutNeither(old.newer()),
        };
        newer.into_current(neither, lead)
    }
}

impl SleepingBandit {
    pub fn new(seed: u64) -> Self {
        Self::with_config(seed, SbConfig::default())
    }

    /// sb without the neither patterns (`sb-binary`): what sb was before issue #18.
    pub fn binary(seed: u64) -> Self {
        let mut config = SbConfig::default();
        config.neither.enabled = false;
        let mut sb = Self::with_config(seed, config);
        sb.kind = StrategyKind::SbBinary;
        sb
    }

    pub fn with_config(seed: u64, config: SbConfig) -> Self {
        SleepingBandit {
            targets: None,
            config,
            actions: ActionIndex::new(config.actions),
            bandit: AuerBandit::new(config.bandit),
            member_bandits: Vec::new(),
            classifier: UrlClassifier::new(config.classifier, seed),
            neither: NeitherPatterns::new(config.neither, seed),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            queues: Vec::new(),
            orphans: VecDeque::new(),
            waiting: BTreeSet::new(),
            suspects: BTreeMap::new(),
            pending: None,
            lead: LeadRanker::new(config.lead),
            lead_features: HashMap::new(),
            pending_lead: None,
            came_from: HashMap::new(),
            came_order: VecDeque::new(),
            up_features: HashMap::new(),
            up_order: VecDeque::new(),
            unlearnt_from: HashMap::new(),
            prepaid: BTreeMap::new(),
            len: 0,
            kind: StrategyKind::Sb,
            seed,
        }
    }

    /// Start the within-action ranking from another job's prior (a fresh
    /// job only: a restore brings back the job's own ranking).
    pub fn use_lead_prior(&mut self, prior: &LeadPrior) {
        self.lead = LeadRanker::with_prior(self.config.lead, prior);
    }

    /// What this job learnt about which links lead to targets, as a prior for others.
    pub fn lead_prior(&self) -> Option<LeadPrior> {
        self.lead.prior()
    }

    pub fn config(&self) -> SbConfig {
        self.config
    }

    /// The action index (for explain and tests).
    pub fn actions(&self) -> &ActionIndex {
        &self.actions
    }

    fn queue(&mut self, slot: u32) -> &mut ActionQueue {
        let i = slot as usize;
        if self.queues.len() <= i {
            self.queues.resize_with(i + 1, ActionQueue::default);
        }
        &mut self.queues[i]
    }

    fn member_bandit(&mut self, slot: u32) -> &mut AuerBandit {
        let i = slot as usize;
        if self.member_bandits.len() <= i {
            let config = self.config.member_bandit;
            self.member_bandits
                .resize_with(i + 1, || AuerBandit::new(config));
        }
        &mut self.member_bandits[i]
    }

    /// One link of action `arm` as [`SbConfig::pick`] says; `None` when it has none.
    fn take(&mut self, arm: u32) -> Option<Taken> {
        let i = arm as usize;
        match self.config.pick {
            LinkPick::Uniform => self.queues.get_mut(i)?.take_any(&mut self.rng),
            LinkPick::MemberBandit => {
                self.member_bandit(arm);
                let queue = self.queues.get_mut(i)?;
                let members = &mut self.member_bandits[i];
                let ranked = self.lead.is_ready();
                // Each pass either takes a link or puts one empty member to sleep, so this ends.
                while let Some(member) = members.select() {
                    let taken = if ranked {
                        queue.take_ranked(member, &self.lead, &self.lead_features, &mut self.rng)
                    } else {
                        queue.take_from_member(member, &mut self.rng)
                    };
                    match taken {
                        Some(taken) => {
                            if taken.emptied_member {
                                members.sleep(member);
                            }
                            return Some(taken);
                        }
                        None => members.sleep(member),
                    }
                }
                None
            }
        }
    }

    /// A share of picks ([`LeadConfig::global_share`]): the link of the
    /// whole frontier (every action's queue) that the ranking scores best,
    /// when it stands [`LeadConfig::global_margin`] (before the job's own
    /// first target, [`LeadConfig::margin`]) above the mean of those
    /// scored, its action and member counted as selected by their bandits
    /// (which get its reward). `None`: the bandits choose. The bandits see
    /// only an action's mean reward; a listing action whose every page
    /// holds no target earns 0, though the ranking knows which of its links
    /// lead to the pages that do.
    fn take_global(&mut self) -> Option<(u32, Taken)> {
        let config = self.config.lead;
        let own = self.lead.found_own();
        let (uniform, ranked) = if own {
            (0.0, config.global_share)
        } else if self.lead.is_ready() {
            // A prior, and no target of this site's own yet.
            (
                config.cold_share,
                (1.0 - config.cold_share) * config.warm_share,
            )
        } else {
            (config.cold_share, 0.0)
        };
        if uniform + ranked <= 0.0 || !config.enabled || self.config.pick != LinkPick::MemberBandit
        {
            return None;
        }
        let draw = self.rng.random::<f64>();
        if draw >= uniform + ranked {
            return None;
        }
        let total: usize = self.queues.iter().map(ActionQueue::len).sum();
        if total < 2 {
            return None;
        }
        if draw < uniform {
            let draw = self.rng.random_range(0..total);
            let (arm, member, index, _) = locate(&self.queues, draw)?;
            return self.take_counted(arm, member, index);
        }
        // Beyond `scan` links, a sample (drawn first: the ties draw from the same RNG).
        let draws: Vec<usize> = if total > config.scan {
            (0..config.scan)
                .map(|_| self.rng.random_range(0..total))
                .collect()
        } else {
            Vec::new()
        };
        let (lead, features) = (&self.lead, &self.lead_features);
        let score = |id: LinkId| features.get(&id).map_or(0.0, |f| lead.score(f));
        // (arm, member, index in the member, score); equal scores: one of them uniformly.
        let mut best: Option<(u32, u32, usize, f64)> = None;
        let (mut sum, mut scored, mut ties) = (0.0, 0usize, 0u32);
        let rng = &mut self.rng;
        let mut consider = |arm: u32, member: u32, index: usize, id: LinkId| {
            let s = score(id);
            sum += s;
            scored += 1;
            match best {
                Some((.., b)) if s < b => {}
                Some((.., b)) if s == b => {
                    ties += 1;
                    if rng.random_range(0..=ties) == 0 {
                        best = Some((arm, member, index, s));
                    }
                }
                _ => {
                    ties = 0;
                    best = Some((arm, member, index, s));
                }
            }
        };
        if total <= config.scan {
            for (arm, queue) in self.queues.iter().enumerate() {
                for (&member, bag) in queue.members() {
                    for (index, id) in bag.iter().enumerate() {
                        consider(arm as u32, member, index, id);
                    }
                }
            }
        } else {
            for draw in draws {
                if let Some((arm, member, index, id)) = locate(&self.queues, draw) {
                    consider(arm, member, index, id);
                }
            }
        }
        let (arm, member, index, top) = best?;
        // Before the job's own target (a prior's picks), the margin inside a member.
        let margin = if own {
            config.global_margin
        } else {
            config.margin
        };
        if top - sum / (scored.max(1) as f64) < margin {
            return None;
        }
        self.take_counted(arm, member, index)
    }

    /// Take the `index`-th link of `member` of action `arm`, counted as a
    /// selection of both by their bandits.
    fn take_counted(&mut self, arm: u32, member: u32, index: usize) -> Option<(u32, Taken)> {
        let taken = self.queues.get_mut(arm as usize)?.remove(member, index)?;
        self.bandit.select_arm(arm);
        let members = self.member_bandit(arm);
        members.select_arm(member);
        if taken.emptied_member {
            members.sleep(member);
        }
        Some((arm, taken))
    }

    /// One fetch of a diverted link of `from` is no longer awaited: `false`
    /// when none was.
    fn take_prepaid(&mut self, from: ActionKey) -> bool {
        let btree_map::Entry::Occupied(mut n) = self.prepaid.entry(from) else {
            return false;
        };
        *n.get_mut() -= 1;
        if *n.get() == 0 {
            n.remove();
        }
        true
    }

    /// Reward the action (and member) of `key` for one of its selections.
    fn reward_arm(&mut self, key: QueueKey, reward: u32) {
        // Only selections the bandit made can be rewarded (not orphans, not foreign keys).
        if self
            .bandit
            .stats(key.slot)
            .is_some_and(|s| s.selections > s.rewards)
        {
            self.bandit.reward(key.slot, f64::from(reward));
            // The member bandit selected it too unless the pick was uniform.
            if let Some(members) = self.member_bandits.get_mut(key.slot as usize) {
                let member = member_of(key);
                if members
                    .stats(member)
                    .is_some_and(|s| s.selections > s.rewards)
                {
                    members.reward(member, f64::from(reward));
                }
            }
        }
    }

    fn report(&self, id: u32) -> ActionReport {
        let stats = self.bandit.stats(id).unwrap_or_default();
        ActionReport {
            id,
            tag_path: self
                .actions
                .founding_path(ActionId(id))
                .unwrap_or_default()
                .to_owned(),
            links_seen: self.actions.links(ActionId(id)),
            selections: stats.selections,
            mean_reward: stats.mean_reward,
            links_left: self.queues.get(id as usize).map_or(0, |q| q.len() as u64),
            paths: self.actions.paths(ActionId(id)),
            best_member: self.best_member(id),
        }
    }

    /// What each link source paid: member paths summed by `found_by`. One
    /// pass over the member paths, which the learner's caps bound.
    fn sources(&self) -> Vec<SourceReport> {
        let mut by: HashMap<&'static str, SourceReport> = HashMap::new();
        for id in 0..self.actions.len() as u32 {
            let Some(members) = self.member_bandits.get(id as usize) else {
                continue;
            };
            for m in 0..members.arms() as u32 {
                let Some(path) = self.actions.member_path(ActionId(id), m) else {
                    continue;
                };
                let source = crate::catalog::found_by(path);
                let stats = members.stats(m).unwrap_or_default();
                let r = by.entry(source).or_insert_with(|| SourceReport {
                    source: source.to_string(),
                    ..SourceReport::default()
                });
                r.picks += stats.selections;
                r.targets += stats.mean_reward * stats.selections as f64;
            }
        }
        let mut out: Vec<SourceReport> = by.into_values().collect();
        out.sort_by(|a, b| b.picks.cmp(&a.picks).then_with(|| a.source.cmp(&b.source)));
        out
    }

    /// The member of action `id` with the best mean reward (then most picks, then
    /// lowest index) among those picked at least once; `None` with one member.
    fn best_member(&self, id: u32) -> Option<MemberReport> {
        if self.actions.paths(ActionId(id)) < 2 {
            return None;
        }
        let members = self.member_bandits.get(id as usize)?;
        let (member, stats) = (0..members.arms() as u32)
            .filter_map(|m| Some((m, members.stats(m)?)))
            .filter(|(_, s)| s.selections > 0)
            .min_by(|a, b| best_first(*a, *b))?;
        Some(MemberReport {
            tag_path: self.actions.member_path(ActionId(id), member)?.to_owned(),
            selections: stats.selections,
            mean_reward: stats.mean_reward,
            links_left: self
                .queues
                .get(id as usize)
                .map_or(0, |q| q.member_len(member) as u64),
        })
    }
}

impl Strategy for SleepingBandit {
    fn use_targets(&mut self, targets: &crate::mime::TargetSet) {
        self.targets = Some(targets.clone());
    }

    fn kind(&self) -> StrategyKind {
        self.kind
    }

    fn triage(&mut self, link: &Link, known: Option<Label>) -> Triage {
        self.pending = None;
        self.pending_lead = None;
        // Computed once for the neither learner (decision, suspect) and the classifier.
        let mut pattern = None;
        let label = match known {
            Some(label) => label,
            None => {
                let p = *pattern.insert(LinkPattern::of(&link.url));
                // Before the classifier, which then neither predicts nor remembers it.
                if self.neither.decide_link(p) == NeitherDecision::Wait {
                    return Triage::Enqueue(QueueKey {
                        slot: WAITING_SLOT,
                        score: 0.0,
                    });
                }
                // Past the warm-up, the shortcut of its `AskServer` arm
                // below (a link whose file name has a target's extension is
                // taken for a target) goes on for as long as the classifier
                // has never trained on a link of that extension: its
                // prediction for one is the class prior of the links it has
                // seen. On a gallery whose warm-up saw `.html` pages only
                // (scikit-image), the first downloads (`plot_x.py`,
                // `.ipynb`, `.zip`) were predicted pages and waited in the
                // queue: online accuracy 94.5 ± 2.4 % (8 seeds). Target
                // extensions only: session 8's rule fetched every link of
                // an unfamiliar extension (`_sources/….txt` too) and made
                // `synthetic:variants` and `dense` worse by more than one
                // std (docs/bench/2026-11-28-session9-sbcold2.md).
                if self.classifier.is_unfamiliar(&link.url)
                    && self
                        .targets
                        .as_ref()
                        .is_some_and(|t| t.names_target(&link.url))
                {
                    // Counted for the page's lesson when it settles
                    // ([`LeadConfig::unlearnt_weight`]).
                    if let Some(referrer) = link.referrer.as_deref() {
                        // Links name the page they were found on by its
                        // final URL, its step by the URL it was popped
                        // under: a redirected page's count is never read.
                        // Such counts would pile up; past the cap the map
                        // starts over, which costs only the pages then in
                        // flight their heavier positive.
                        if self.unlearnt_from.len() >= MAX_UP_FEATURES {
                            self.unlearnt_from.clear();
                        }
                        *self
                            .unlearnt_from
                            .entry(page_fingerprint(referrer))
                            .or_insert(0) += 1;
                    }
                    return Triage::FetchNow;
                }
                match self.classifier.classify_link(
                    &link.url,
                    p.url_fingerprint(),
                    link.tag_path.as_str(),
                ) {
                    // Cold: a link whose source says what it is (a
                    // catalog's download, a form's submission) is taken at
                    // its word instead of costing a HEAD; on the small
                    // portals these sources serve, the warm-up's HEADs were
                    // most of what sb paid over bfs (docs/bench
                    // 2026-11-28-session6-portals.md).
                    // So is a link whose file name has a target's
                    // extension: the GET's type decides, and teaches the
                    // classifier as a HEAD would have.
                    Verdict::AskServer => {
                        match crate::catalog::declared_label(link.tag_path.as_str()) {
                            Some(label) => label,
                            None if self
                                .targets
                                .as_ref()
                                .is_some_and(|t| t.names_target(&link.url)) =>
                            {
                                Label::Target
                            }
                            None => return Triage::Head,
                        }
                    }
                    Verdict::Predicted(p) => p.label,
                }
            }
        };
        match label {
            Label::Target => Triage::FetchNow,
            Label::Neither => Triage::Drop,
            Label::Html => {
                let before = self.actions.overflowed();
                let a = self.actions.assign(link.tag_path.as_str());
                if before == 0 && self.actions.overflowed() > 0 {
                    tracing::warn!(
                        actions = self.actions.len(),
                        known_paths = self.actions.known_paths(),
                        "the learner reached a cap (actions, members or remembered tag paths): new tag paths now share existing actions"
                    );
                }
                self.bandit.ensure_arms(self.actions.len());
                // Predicted a page: if its pattern may yet turn out neither, decide again at its pop.
                if let Some(p) = pattern.filter(|_| self.suspects.len() < MAX_SUSPECTS) {
                    self.pending = self.neither.suspect_link(p);
                }
                if self.config.lead.enabled && self.lead_features.len() < MAX_LEAD_FEATURES {
                    self.pending_lead = Some(LeadRanker::features(
                        &link.url,
                        &link.anchor,
                        link.referrer.as_deref(),
                    ));
                }
                Triage::Enqueue(QueueKey {
                    slot: a.action.0,
                    // The member rides in the key so a restored frontier refills the same members.
                    score: a.member.min(MAX_MEMBER) as f32,
                })
            }
        }
    }

    fn push(&mut self, id: LinkId, key: QueueKey) {
        self.len += 1;
        // Set by the triage of this very link (the engine pushes right after it); none on a restore.
        let pending = self.pending.take();
        let pending_lead = self.pending_lead.take();
        let diverted = self.suspects.get(&id).and_then(|s| s.diverted_from);
        if let Some(from) = diverted {
            // Parked after its pop (a restore starts with nothing prepaid): its fetch is not under way.
            self.take_prepaid(from);
        }
        if key.slot == WAITING_SLOT || diverted.is_some() {
            self.waiting.insert(id);
        } else if (key.slot as usize) < self.actions.len() {
            if let Some(link) = pending {
                self.suspects.insert(
                    id,
                    Suspect {
                        link,
                        diverted_from: None,
                    },
                );
            }
            if let Some(features) = pending_lead {
                self.lead_features.entry(id).or_insert(features);
            }
            // Triage computes features only below the cap, and each push adds one at most.
            debug_assert!(
                self.lead_features.len() <= MAX_LEAD_FEATURES,
                "ranking features of {} links kept, past the cap",
                self.lead_features.len()
            );
            let member = member_of(key);
            self.queue(key.slot).push(id, member);
            self.bandit.wake(key.slot);
            if self.config.pick == LinkPick::MemberBandit {
                self.member_bandit(key.slot).wake(member);
            }
        } else {
            self.orphans.push_back(QueuedLink { id, key });
        }
    }

    fn triaged_for_later(&mut self, id: LinkId) {
        // Left in `pending`, they went to the next link pushed (a retry
        // released, a link pushed back), and this one was queued without
        // its features: ranked as a link never seen, after a restore too.
        if let Some(link) = self.pending.take() {
            self.suspects.insert(
                id,
                Suspect {
                    link,
                    diverted_from: None,
                },
            );
        }
        if let Some(features) = self.pending_lead.take() {
            self.lead_features.entry(id).or_insert(features);
        }
    }

    fn pop(&mut self, _slot: &FreeSlot<'_>) -> Option<(LinkId, QueueKey)> {
        if let Some(q) = self.orphans.pop_front() {
            self.len -= 1;
            return Some((q.id, q.key));
        }
        // Each pass returns, puts one inconsistent arm to sleep or moves one link
        // from an action to the waiting queue, so this ends.
        loop {
            let (arm, taken) = match self.take_global() {
                Some(global) => global,
                None => {
                    let Some(arm) = self.bandit.select() else {
                        break;
                    };
                    let Some(taken) = self.take(arm) else {
                        self.bandit.sleep(arm);
                        continue;
                    };
                    (arm, taken)
                }
            };
            if self.queues[arm as usize].is_empty() {
                self.bandit.sleep(arm);
            }
            let key = QueueKey {
                slot: arm,
                score: taken.member as f32,
            };
            if let Some(suspect) = self.suspects.remove(&taken.id) {
                debug_assert!(
                    suspect.diverted_from.is_none(),
                    "a waiting link was queued under an action"
                );
                if self.neither.decide_link(suspect.link) == NeitherDecision::Wait {
                    // Its pattern turned out neither since it was queued: it waits, and the
                    // action that chose it earns nothing for it. Remembered until the end
                    // of the job, so that pushed back under its action it waits again.
                    self.reward_arm(key, 0);
                    self.suspects.insert(
                        taken.id,
                        Suspect {
                            diverted_from: Some(ActionKey::of(key)),
                            ..suspect
                        },
                    );
                    self.waiting.insert(taken.id);
                    continue;
                }
            }
            self.len -= 1;
            return Some((taken.id, key));
        }
        // Nothing better left: the links predicted neither.
        let id = self.waiting.pop_first()?;
        self.len -= 1;
        let key = match self.suspects.get(&id).and_then(|s| s.diverted_from) {
            Some(from) => {
                *self.prepaid.entry(from).or_default() += 1;
                from.queue_key()
            }
            None => QueueKey {
                slot: WAITING_SLOT,
                score: 0.0,
            },
        };
        Some((id, key))
    }

    fn len(&self) -> usize {
        self.len
    }

    fn prior(&self) -> Option<Vec<u8>> {
        self.lead.prior().map(|p| codec::encode(&p))
    }

    fn use_prior(&mut self, bytes: &[u8]) -> Result<(), CodecError> {
        let prior: LeadPrior = codec::decode(bytes)?;
        self.use_lead_prior(&prior);
        Ok(())
    }

    fn save(&self) -> Vec<u8> {
        codec::encode(&StoredSbRef {
            actions: &self.actions,
            bandit: &self.bandit,
            classifier: &self.classifier,
            rng: &self.rng,
            member_bandits: &self.member_bandits,
            neither: &self.neither,
            suspects: &self.suspects,
            lead: &self.lead,
            lead_features: {
                let mut v: Vec<(LinkId, &[u32])> = self
                    .lead_features
                    .iter()
                    .map(|(&id, f)| (id, &f[..]))
                    .collect();
                v.sort_unstable_by_key(|(id, _)| *id);
                v
            },
            came_from: self
                .came_order
                .iter()
                .filter_map(|h| Some((*h, *self.came_from.get(h)?)))
                .collect(),
            up_features: self
                .up_order
                .iter()
                .filter_map(|h| Some((*h, &self.up_features.get(h)?[..])))
                .collect(),
        })
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), CodecError> {
        // Older layouts get fresh learners for what they lacked (this job's seed).
        let stored = StoredLayout::decode(bytes)?.into_current(
            &|| NeitherPatterns::new(self.config.neither, self.seed),
            &|| LeadRanker::new(self.config.lead),
        );
        let mut actions = stored.actions;
        actions.set_config(self.config.actions);
        let mut bandit = stored.bandit;
        bandit.set_config(self.config.bandit);
        bandit.ensure_arms(actions.len());
        let mut member_bandits = stored.member_bandits;
        for members in &mut member_bandits {
            members.set_config(self.config.member_bandit);
        }
        let mut classifier = stored.classifier;
        classifier.set_config(self.config.classifier);
        let mut neither = stored.neither;
        neither.set_config(self.config.neither);
        self.neither = neither;
        self.actions = actions;
        self.bandit = bandit;
        self.member_bandits = member_bandits;
        self.classifier = classifier;
        self.rng = stored.rng;
        // The engine pushes the saved frontier next.
        self.queues.clear();
        self.orphans.clear();
        self.waiting.clear();
        self.suspects = stored.suspects;
        self.pending = None;
        let mut lead = stored.lead;
        lead.set_config(self.config.lead);
        self.lead = lead;
        self.lead_features = stored.lead_features.into_iter().collect();
        self.pending_lead = None;
        self.came_order = stored.came_from.iter().map(|(h, _)| *h).collect();
        self.came_from = stored.came_from.into_iter().collect();
        self.up_order = stored.up_features.iter().map(|(h, _)| *h).collect();
        self.up_features = stored.up_features.into_iter().collect();
        self.prepaid.clear();
        self.len = 0;
        Ok(())
    }

    fn stats(&self) -> StrategyStats {
        let accuracy = self.classifier.accuracy();
        let mut ids: Vec<u32> = (0..self.actions.len() as u32).collect();
        let ranked = |id: &u32| (*id, self.bandit.stats(*id).unwrap_or_default());
        let order = |a: &u32, b: &u32| best_first(ranked(a), ranked(b));
        if ids.len() > TOP_ACTIONS {
            ids.select_nth_unstable_by(TOP_ACTIONS - 1, order);
            ids.truncate(TOP_ACTIONS);
        }
        ids.sort_unstable_by(order);
        StrategyStats {
            classifier_predictions: accuracy.predictions,
            classifier_correct: accuracy.correct,
            actions: self.actions.len() as u64,
            capped_paths: self.actions.overflowed(),
            top_actions: ids.into_iter().map(|id| self.report(id)).collect(),
            top_features: Vec::new(),
            neither_waited: self.neither.counts().waited,
            neither_sampled: self.neither.counts().sampled,
            lead_tokens: self
                .lead
                .top(TOP_ACTIONS)
                .into_iter()
                .map(|w| FeatureReport {
                    name: w.name,
                    weight: w.weight,
                })
                .collect(),
            lead_examples: self.lead.examples(),
            lead_prior: self.lead.prior_used(),
            sources: self.sources(),
        }
    }

    fn confirm(&mut self, popped: &Popped<'_>) -> Confirm {
        if popped.skip_neither && self.skip_predicted_neither(popped.id, popped.link, popped.key) {
            Confirm::SkipNeither
        } else {
            Confirm::Fetch
        }
    }

    fn learn(&mut self, feedback: Feedback<'_>) {
        match feedback {
            Feedback::Label {
                link,
                label,
                source,
            } => self.observe(link, label, source),
            Feedback::Reward {
                id,
                link,
                key,
                targets,
                fetched,
            } => {
                self.reward(key, targets);
                self.settled(id, link, key, targets, fetched);
            }
            _ => {}
        }
    }
}

/// What the engine tells the strategy ([`Strategy::learn`]).
impl SleepingBandit {
    fn observe(&mut self, link: &Link, label: Label, source: LabelSource) {
        // A 4xx is neither to the patterns (a request for nothing), not a class to the classifier.
        self.neither.observe(
            &link.url,
            source == LabelSource::Error || label == Label::Neither,
        );
        if source == LabelSource::Error {
            return;
        }
        self.classifier
            .observe_link(&link.url, link.tag_path.as_str(), label);
    }

    fn reward(&mut self, key: QueueKey, reward: u32) {
        // The fetch of a link made to wait: its action was rewarded 0 for it already.
        if self.take_prepaid(ActionKey::of(key)) {
            return;
        }
        self.reward_arm(key, reward);
    }

    fn settled(&mut self, id: LinkId, link: &Link, key: QueueKey, reward: u32, fetched: bool) {
        let own = self.lead_features.remove(&id);
        // Some of this page's targets were fetched at its triage because
        // the classifier had not learnt their extension yet: its positive
        // weighs more ([`LeadConfig::unlearnt_weight`]).
        let unlearnt = self
            .unlearnt_from
            .remove(&page_fingerprint(&link.url))
            .is_some_and(|n| n > 0 && reward > 0);
        let weight = if unlearnt {
            self.config.lead.unlearnt_weight
        } else {
            1.0
        };
        // The same condition as the training below, for a positive.
        if fetched && reward > 0 && link.referrer.is_some() {
            self.lead.before_own_positive();
        }
        if fetched && self.config.lead.enabled && self.config.lead.up_credit > 0.0 {
            // The credit one level up ([`LeadConfig::up_credit`]): the link
            // that led to this page's referrer led to targets too.
            if let (true, Some(referrer)) = (reward > 0, &link.referrer) {
                if let Some(features) = self.up_features.get(&page_fingerprint(referrer)) {
                    self.lead.credit_up(features);
                }
            }
            if let Some(features) = own {
                let h = page_fingerprint(&link.url);
                if self.up_features.insert(h, features).is_none() {
                    self.up_order.push_back(h);
                    if self.up_order.len() > MAX_UP_FEATURES {
                        if let Some(old) = self.up_order.pop_front() {
                            self.up_features.remove(&old);
                        }
                    }
                }
            }
            debug_assert_eq!(
                self.up_order.len(),
                self.up_features.len(),
                "the pages whose link features are kept, and their order"
            );
        }
        let credit = self.config.referrer_credit;
        // Off by default ([`REFERRER_CREDIT`]): nothing is remembered then.
        if credit > 0.0 {
            if let (true, Some(referrer)) = (reward > 0, &link.referrer) {
                let from = self.came_from.get(&page_fingerprint(referrer)).copied();
                if let Some(from) = from {
                    let extra = credit * f64::from(reward);
                    self.bandit.credit(from.slot, extra);
                    if let Some(members) = self.member_bandits.get_mut(from.slot as usize) {
                        members.credit(from.member, extra);
                    }
                }
            }
            if (key.slot as usize) < self.actions.len() {
                let h = page_fingerprint(&link.url);
                if self.came_from.insert(h, ActionKey::of(key)).is_none() {
                    self.came_order.push_back(h);
                    if self.came_order.len() > MAX_CAME_FROM {
                        if let Some(old) = self.came_order.pop_front() {
                            self.came_from.remove(&old);
                        }
                    }
                }
            }
        }
        // Seeds and links found outside HTML carry no words worth learning;
        // a link never requested (robots.txt refused it) led nowhere we
        // know: counted as a negative, it made the prior's "pages learnt
        // from" exceed the crawl's requests (16 908 for 12 393 on `rare`,
        // its /print/ links) and taught the words of refused links as
        // words of empty pages.
        if fetched && link.referrer.is_some() {
            self.lead.train_weighted(
                &link.url,
                &link.anchor,
                link.referrer.as_deref(),
                reward > 0,
                if reward > 0 { weight } else { 1.0 },
            );
        }
    }

    fn skip_predicted_neither(&mut self, id: LinkId, link: &Link, key: QueueKey) -> bool {
        // Only links that waited (popped from the waiting queue) are judged again.
        let diverted = self.suspects.get(&id).and_then(|s| s.diverted_from);
        if key.slot != WAITING_SLOT && diverted.is_none() {
            return false;
        }
        if !self.neither.predicts_neither(&link.url) {
            // Its pattern was released by a sample that answered a page or a target.
            return false;
        }
        if let Some(from) = diverted {
            // Its action earned 0 for it when it was diverted; no fetch will follow its pop.
            self.take_prepaid(from);
            self.suspects.remove(&id);
        }
        self.lead_features.remove(&id);
        true
    }
}

/// An in-memory website crawled through the engine's job core, for strategy tests.
#[cfg(test)]
pub(super) mod fake_site;

#[cfg(test)]
mod tests;
