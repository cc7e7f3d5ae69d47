//! Which links lead to pages that link targets: sb's ranking of the links of
//! one action (ARCHITECTURE.md § Crawl loop, beyond the paper).
//!
//! The bandits choose an action and a member tag path; every link of a
//! member looks alike to them. On a reference section whose thousands of
//! pages share one tag path and a few percent link data, the productive
//! links differ only in their words: `api/plotting/…` against
//! `api/core/…`, "Examples" against "Class reference". This learner is an
//! FTRL-proximal logistic regression over the tokens of a link's path and
//! query, its anchor text and its referring page's path
//! ([`UrlFeatures::of_lead`]), trained once per settled step: the link that
//! was fetched is positive when the page it led to yielded a target. sb
//! scores a member's links with it and fetches the best, except for an
//! ε-share of uniformly random picks that keep the labels honest (the type
//! classifier's LDCOC-style exploration, here at the pick).
//!
//! Its weights are over tokens only (no host, no whole URL), so they can
//! start another job warm ([`LeadRanker::prior`], [`LeadRanker::with_prior`]).
//!
//! Measured against sb with uniform picks inside a member (same build, 2
//! seeds, req@90 %): `synthetic:rare` 100.0 → 48.5, small 37.7 → 37.9,
//! sparse 4.9 → 5.2, deep 43.8 → 43.9, sklearn 54.4 → 54.1, twisted 13.7 →
//! 13.7: it halves the rare-target site and changes nothing measurable where
//! the bandits already separate the links that pay.

use super::features::UrlFeatures;
use super::ftrl::{FtrlConfig, FtrlModel};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use url::Url;

/// Tuning of the within-action ranking.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeadConfig {
    /// Rank at all (`false`: the member's link is uniformly random, as before).
    pub enabled: bool,
    pub ftrl: FtrlConfig,
    /// Share of picks made uniformly at random once the ranking is in use.
    pub epsilon: f64,
    /// Most links of a member scored for one pick: a member with more is
    /// sampled (with replacement), which bounds a pick's cost on huge sites.
    pub scan: usize,
    /// Feature names remembered for `forager explain`.
    pub max_names: usize,
    /// The best-scored link is taken only when its logit exceeds the mean of
    /// the member's scored links by this much (e: about 2.7 times the odds);
    /// otherwise sb picks uniformly. Without it, a member whose links all
    /// look alike (a pager, a data listing whose every item pays) was taken
    /// in the order of small, meaningless score differences: measured on 5
    /// seeds, req@90 % deep 42.9 → 46.3 and dense 65.3 → 67.9, and the type
    /// classifier's online accuracy fell by 1–2 points on small, deep and
    /// dense (below 95 %).
    pub margin: f64,
    /// Weight of the credit one level up: when a page yields targets, the
    /// link that led to the page it was found on (a listing, an index) is
    /// trained as a positive too, with this weight; 0 turns it off. The
    /// pages that hold targets on a reference site are reached through
    /// listings that hold none: trained on direct rewards alone, the
    /// ranking learnt which items pay but never which listings lead to
    /// them. Measured on 5 seeds (req@90 ÷ floor, before → with it):
    /// `synthetic:rare` 34.1 ± 3.4 → 17.6 ± 3.2, small 1.61 → 1.58,
    /// sklearn 1.06 → 1.07, twisted 1.56 → 1.47 (weight 3: no better).
    ///
    /// Weight 2 (was 1), since the credit also reaches the page itself
    /// when a file it links was fetched later, through the queue: such a
    /// page was trained as a negative when it settled (its file links were
    /// taken for pages by a classifier that had seen no file yet), and a
    /// credit of 1 only cancelled that, so the words of the page that
    /// holds the files (`plotting` on `synthetic:rare`) stayed near 0 while
    /// the ranking chased the incidental words of its first positive
    /// (traced, session 9: after the first target, ~260 picks on other
    /// sections before the first `plotting` page). Measured (req@90 ÷
    /// floor, rare 10 seeds, weight 1 → 2 → 3): 5.70 ± 2.17 → 5.40 ±
    /// 2.30 → 5.32 ± 2.33, every seed fewer requests with 2 (604 → 507,
    /// 612 → 482, 1 018 → 964, …; the first target is unchanged). Held
    /// out (5 seeds; statsmodels 16, skimage 8), 1 → 2: statsmodels 13.55
    /// ± 7.99 → 11.75 ± 4.57, twisted 1.61 → 1.52, rare-blind 20.3 → 19.8,
    /// small, deep, sparse, dense, variants, sklearn within ±0.01;
    /// skimage 1.045 ± 0.005 → 1.060 ± 0.011 (4.8 requests more in 329).
    pub up_credit: f64,
    /// Weight of a page's positive when some of its targets were fetched
    /// at its triage because the type classifier had never trained on
    /// their extension (sb fetches those at once; see `strategy/sb`). Had
    /// they waited in the queue as predicted pages, each file's own step
    /// would have trained a positive carrying the page's words (as its
    /// referrer) and the credit one level up
    /// ([`LeadConfig::up_credit`]) the link to the page; fetched at the
    /// page's triage, they make the ranking's first lesson one example
    /// (traced on `synthetic:rare`, session 9). Measured with the fetch
    /// at once of unlearnt target extensions (`synthetic:rare`, 10
    /// seeds, req@90 ÷ floor; without that fetch 5.40 ± 2.30): weight 1
    /// → 5.94 ± 2.35, 2 → 5.79 ± 2.39, min(targets, 4) → 5.80 ± 2.39,
    /// 2 × min(targets, 4) → 5.91 ± 2.69 (9 seeds; weight 2 on the same
    /// 9: 5.85); weight 1 without the credit
    /// one level up for such a page → 6.71 ± 2.24. Held out, weight 1 → 2
    /// (base without the fetch in brackets): `synthetic:variants` (5
    /// seeds) 1.27 ± 0.12 → 1.20 ± 0.07 (1.17 ± 0.03), statsmodels (16)
    /// 11.11 ± 4.31 → 13.58 ± 6.95 (11.75 ± 4.57), twisted 1.60 → 1.57
    /// (1.52), small 1.18 → 1.16 (1.15).
    pub unlearnt_weight: f64,
    /// Share of picks made across the whole frontier once the job has a
    /// target of its own: the best-scored link of every action's queue (at
    /// most `scan` of them scored, sampled beyond), taken when it stands
    /// `global_margin` above their mean, its action and member counted as
    /// selected (their bandits get its reward); otherwise, and for the
    /// other picks, the bandits choose. 0 turns it off; 1 (the default)
    /// leaves the bandits the picks where the ranking cannot tell links
    /// apart. The bandits see an action's mean reward only: a listing
    /// action whose pages hold no target earns 0 however well its links
    /// lead, and a reference action where one page in 50 pays is worth
    /// about as much to them as one where none does. Measured on the
    /// tuning sites (3 seeds, req@90 ÷ floor, off → 0.5 alone → 0.5 with
    /// `cold_share` 0.5): `synthetic:rare` 18.7 → 15.4 → 7.0, small 1.54 →
    /// 1.35 → 1.40, sklearn 1.07 → 1.06 → 1.07, twisted 1.44 → 1.44 → 1.46
    /// (0.2 alone: small 1.68). Then (5 seeds, with `cold_share` 0.5, α of
    /// the ranking 0.3): 0.5 → 0.8 → 1: rare 7.45 → 6.50 → 6.27, small 1.35
    /// → 1.29 → 1.24, sklearn 1.07 → 1.06 → 1.03, twisted 1.49 → 1.52 →
    /// 1.56 (within one std, 0.09); on the held-out statsmodels 8.3 ± 3.7
    /// → 11.6 ± 6.9 (its std is about its mean).
    pub global_share: f64,
    /// Share of picks made uniformly at random over the whole frontier
    /// while the ranking cannot tell links apart yet (no page has yielded
    /// a target), its action and member counted as selected; otherwise
    /// the bandits choose. 0 turns it off. Before the first target, the
    /// bandits give every action the same share of picks, and a reference
    /// section of thousands of pages that share one tag path gets one
    /// action's share: on `synthetic:rare` (one item page in 50 links
    /// targets) the first target came after 771–3 626 requests, and 90 %
    /// of them ~180 requests later. A uniform link of the whole frontier
    /// weighs actions by the links they hold. Measured with `global_share`
    /// 0.5 (3 seeds, req@90 ÷ floor, cold share 0 → 0.5 → 1):
    /// `synthetic:rare` 15.4 → 7.0 → 9.2, small 1.35 → 1.40 → 1.38,
    /// sklearn 1.06 → 1.07 → 1.12, twisted 1.44 → 1.46 → 1.50.
    pub cold_share: f64,
    /// The margin of the pick across the whole frontier once the job has a
    /// target of its own ([`LeadConfig::global_share`]; a prior's picks
    /// before it keep [`LeadConfig::margin`]): the best-ranked link is taken when
    /// its logit exceeds the mean of the links scored by this much;
    /// otherwise the bandits choose. Lower than [`LeadConfig::margin`]
    /// (inside a member): just after the job's first target the ranking
    /// has few examples, its best link rarely stands a whole logit out,
    /// and the bandits then spent 300–450 picks before 90 % on sections
    /// the ranking already scored low (`synthetic:rare`, seeds whose first
    /// target came within ~500 requests; traced). Measured (req@90 ÷
    /// floor, 1 → 0.5; rare and small 10 seeds, sklearn and twisted 5):
    /// rare 6.22 ± 1.75 → 5.70 ± 2.17 (every seed it changes is better:
    /// 970 → 604, 755 → 612, 734 → 569, 803 → 701, 926 → 847 requests;
    /// the other five take their first target late and were unchanged),
    /// small 1.19 ± 0.03 → 1.17 ± 0.06, sklearn 1.03 → 1.03, twisted 1.58
    /// ± 0.09 → 1.61 ± 0.05. Instead of the bandits, a uniform link of the
    /// frontier (rare 6.35) or the best-ranked of 4 uniform ones (rare
    /// 5.88, twisted 1.65) was measured too and not kept.
    pub global_margin: f64,
    /// With a prior, before the job's own first target: the share of the
    /// picks not made uniformly (`1 - cold_share`) that take the link of
    /// the whole frontier the prior ranks best (when it stands `margin`
    /// above the mean); the rest go to the bandits. The uniform share is
    /// kept whatever the prior says, since a prior from another site can
    /// point at words that lead nowhere here. Before (a prior made the
    /// ranking ready and every cross-frontier pick ranked), statsmodels
    /// with sklearn's prior took 25.4 ± 11.5 % of the site to 90 % against
    /// 7.4 ± 3.3 cold. Measured (5 seeds, req@90 %, `prior_keep` 1):
    /// `warm_share` 0 → statsmodels 12.8 ± 11.3, `synthetic:rare:2` from
    /// `rare`'s prior 8.1 ± 2.6; 1 → 13.1 ± 14.5 and 6.0 ± 1.1.
    pub warm_share: f64,
    /// With a prior, at the job's own first target: the prior's weights are
    /// scaled by this (in 0..=1) and the gradients that set them forgotten
    /// ([`FtrlModel::soften`]), so that the site's own examples rule from
    /// then on; 1 keeps the prior as it is. A prior from another site
    /// (sklearn's words on statsmodels) kept misleading the picks after the
    /// job's first target. Measured on 5 seeds, req@90 % warm (cold: 7.4 ±
    /// 3.3 on statsmodels, 20.4 ± 16.4 on `synthetic:rare:2`), with
    /// `warm_share` 1: keep 1 → 13.1 ± 14.5 and 6.0 ± 1.1; 0.5 → 9.3 ± 6.8
    /// and 7.6 ± 0.6; 0 (forget it, and the site's negatives with it) →
    /// 10.9 ± 6.1 and 27.5 ± 13.6. Softening the prior from the first pick
    /// on instead was no better (statsmodels 13.8 ± 7.5).
    pub prior_keep: f64,
}

impl Default for LeadConfig {
    fn default() -> Self {
        LeadConfig {
            enabled: true,
            // α = 0.3 as sb's type classifier, and no L1: with λ1 = 1 a token
            // needs about three positive examples before its weight leaves 0,
            // and on a site where one page in 50 pays, those take 150 random
            // picks; without it the first positive already ranks its tokens up.
            // α = 0.6 was measured with `global_share` 1 and not kept: on the
            // tuning sites (5 seeds, req@90 ÷ floor, α 0.3 → 0.6 → 1)
            // `synthetic:rare` 6.27 → 5.27 → 5.01, small 1.24 → 1.19 → 1.20,
            // sklearn 1.03 → 1.03 → 1.03, twisted 1.56 → 1.55 → 1.59, but
            // statsmodels (held out) 11.6 ± 6.9 → 15.3 ± 6.8: the faster
            // weights held the picks on the section of its first targets.
            ftrl: FtrlConfig {
                alpha: 0.3,
                l1: 0.0,
                ..FtrlConfig::default()
            },
            epsilon: 0.1,
            scan: 2048,
            max_names: 4096,
            margin: 1.0,
            up_credit: 2.0,
            unlearnt_weight: 2.0,
            global_share: 1.0,
            cold_share: 0.5,
            global_margin: 0.5,
            warm_share: 1.0,
            prior_keep: 0.5,
        }
    }
}

/// The learner; see the module documentation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LeadRanker {
    #[serde(skip, default)]
    config: LeadConfig,
    model: FtrlModel,
    /// Readable names of the features trained on (first come, capped).
    names: BTreeMap<u32, String>,
    positives: u64,
    negatives: u64,
    /// The job started from another job's prior.
    prior_used: bool,
}

impl Default for LeadRanker {
    fn default() -> Self {
        LeadRanker::new(LeadConfig::default())
    }
}

/// One feature and its weight, for reports.
#[derive(Clone, Debug, PartialEq)]
pub struct LeadWeight {
    pub name: String,
    pub weight: f64,
}

/// What one job learnt, to start another: token weights and their names.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LeadPrior {
    pub model: FtrlModel,
    pub names: BTreeMap<u32, String>,
    /// Examples it was learnt from.
    pub examples: u64,
}

impl LeadRanker {
    pub fn new(config: LeadConfig) -> Self {
        LeadRanker {
            config,
            model: FtrlModel::new(config.ftrl),
            names: BTreeMap::new(),
            positives: 0,
            negatives: 0,
            prior_used: false,
        }
    }

    /// A ranker that starts from `prior`'s weights (another job's, same target kinds).
    pub fn with_prior(config: LeadConfig, prior: &LeadPrior) -> Self {
        let mut model = prior.model.clone();
        model.set_config(config.ftrl);
        LeadRanker {
            config,
            model,
            names: prior.names.clone(),
            positives: 0,
            negatives: 0,
            prior_used: true,
        }
    }

    /// What this job learnt, as a prior for others (`None` before any target led anywhere).
    pub fn prior(&self) -> Option<LeadPrior> {
        (self.positives > 0).then(|| LeadPrior {
            model: self.model.clone(),
            names: self.names.clone(),
            examples: self.positives + self.negatives,
        })
    }

    pub fn config(&self) -> LeadConfig {
        self.config
    }

    /// Configuration is not stored: given again after a restore.
    pub fn set_config(&mut self, config: LeadConfig) {
        self.config = config;
        self.model.set_config(config.ftrl);
    }

    /// Whether scores can tell links apart yet: a page led to targets (or a
    /// prior gave weights). Until then sb picks uniformly. Ranking after
    /// negative examples alone (words of links that led nowhere below words
    /// never seen) was measured and not kept: it tried the one package not
    /// yet tried on `synthetic:rare` (req@90 51.4 → 42.3 %, 2 seeds, with the
    /// referrer credit on), but it
    /// fetches unusual links first everywhere, and the type classifier's
    /// online accuracy fell by 1–1.5 points on small, deep, dense and
    /// variants (5 seeds: small 95.3 → 93.9 %, deep 96.3 → 94.9 %), below the
    /// 95 % bar.
    pub fn is_ready(&self) -> bool {
        self.config.enabled && (self.positives > 0 || self.prior_used)
    }

    /// Whether a link this job fetched led to targets: a prior alone does
    /// not count (it may come from a site whose words mislead here).
    pub fn found_own(&self) -> bool {
        self.config.enabled && self.positives > 0
    }

    /// A page this job fetched is about to be trained as its first
    /// positive: the prior gives way ([`LeadConfig::prior_keep`]). Called
    /// before any training of that page (its referrer's credit included).
    pub fn before_own_positive(&mut self) {
        let keep = self.config.prior_keep;
        if self.config.enabled && self.prior_used && self.positives == 0 && keep < 1.0 {
            self.model.soften(keep.clamp(0.0, 1.0));
        }
    }

    pub fn prior_used(&self) -> bool {
        self.prior_used
    }

    /// (positive, negative) examples trained on.
    pub fn examples(&self) -> (u64, u64) {
        (self.positives, self.negatives)
    }

    /// The features of a link.
    pub fn features(url: &Url, anchor: &str, referrer: Option<&Url>) -> Box<[u32]> {
        UrlFeatures::of_lead(url, anchor, referrer)
            .ids()
            .to_vec()
            .into_boxed_slice()
    }

    /// The score of a link's features (a logit: higher leads to targets more often).
    pub fn score(&self, features: &[u32]) -> f64 {
        features.iter().map(|&f| self.model.weight(f)).sum()
    }

    /// The link (`url`, `anchor`, found on `referrer`) led to a page that
    /// yielded targets (`positive`) or none.
    pub fn train(&mut self, url: &Url, anchor: &str, referrer: Option<&Url>, positive: bool) {
        self.train_weighted(url, anchor, referrer, positive, 1.0);
    }

    /// [`Self::train`] with an importance weight (one example, counted once).
    pub fn train_weighted(
        &mut self,
        url: &Url,
        anchor: &str,
        referrer: Option<&Url>,
        positive: bool,
        weight: f64,
    ) {
        if !self.config.enabled {
            return;
        }
        let features = UrlFeatures::of_lead(url, anchor, referrer);
        self.model.train(&features, positive, weight);
        if positive {
            self.positives += 1;
        } else {
            self.negatives += 1;
        }
        if self.names.len() < self.config.max_names {
            for (id, name) in UrlFeatures::lead_names(url, anchor, referrer) {
                if self.names.len() >= self.config.max_names {
                    break;
                }
                self.names.entry(id).or_insert(name);
            }
        }
    }

    /// A page found through the link whose features are `features` yielded
    /// targets: that link led, one level up, to targets
    /// ([`LeadConfig::up_credit`]). Not counted among the examples (the
    /// link was counted when its own page settled).
    pub fn credit_up(&mut self, features: &[u32]) {
        let weight = self.config.up_credit;
        if !self.config.enabled || weight <= 0.0 {
            return;
        }
        let features = UrlFeatures::from_ids(features.to_vec());
        self.model.train(&features, true, weight);
    }

    /// The named features with the largest weights, strongest first
    /// (positive: towards pages that link targets); at most `n`.
    pub fn top(&self, n: usize) -> Vec<LeadWeight> {
        let mut all: Vec<LeadWeight> = self
            .names
            .iter()
            .map(|(&id, name)| LeadWeight {
                name: name.clone(),
                weight: self.model.weight(id),
            })
            .filter(|w| w.weight != 0.0)
            .collect();
        all.sort_by(|a, b| {
            b.weight
                .abs()
                .total_cmp(&a.weight.abs())
                .then_with(|| a.name.cmp(&b.name))
        });
        all.truncate(n);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn trained() -> LeadRanker {
        let mut r = LeadRanker::default();
        let listing = url("http://a.test/api/genindex-2.html");
        for i in 0..40 {
            let pkg = if i % 10 == 0 { "plotting" } else { "core" };
            let u = url(&format!("http://a.test/api/{pkg}-thing-{i}.html"));
            r.train(&u, "Thing", Some(&listing), pkg == "plotting");
        }
        r
    }

    #[test]
    fn the_token_of_the_productive_links_ranks_them_first() {
        let r = trained();
        assert!(r.is_ready());
        let f = |s: &str| LeadRanker::features(&url(s), "Thing", None);
        let good = r.score(&f("http://b.test/api/plotting-other-99.html"));
        let bad = r.score(&f("http://b.test/api/core-other-99.html"));
        assert!(good > bad, "{good} vs {bad}");
        // The strongest features both ways: the package of the links that led
        // nowhere, and the one of those that led to targets.
        let top = r.top(3);
        let names: Vec<&str> = top.iter().map(|w| w.name.as_str()).collect();
        assert!(
            names.contains(&"token=plotting") && names.contains(&"token=core"),
            "{top:?}"
        );
        let best = top
            .iter()
            .max_by(|a, b| a.weight.total_cmp(&b.weight))
            .unwrap();
        assert_eq!(best.name, "token=plotting");
    }

    #[test]
    fn negative_examples_alone_leave_the_pick_uniform() {
        let mut r = LeadRanker::default();
        for i in 0..5 {
            let u = url(&format!("http://a.test/api/core-thing-{i}.html"));
            r.train(&u, "Thing", None, false);
        }
        assert!(!r.is_ready());
        r.train(
            &url("http://a.test/api/plotting-1.html"),
            "Thing",
            None,
            true,
        );
        assert!(r.is_ready());
    }

    #[test]
    fn the_credit_one_level_up_raises_the_listing_that_led_to_targets() {
        let mut r = trained();
        let f = |s: &str| LeadRanker::features(&url(s), "Index", None);
        let listing = f("http://a.test/api/modules-7.html");
        let other = f("http://a.test/api/glossary-7.html");
        let before = (r.score(&listing), r.score(&other), r.examples());
        r.credit_up(&listing);
        assert!(
            r.score(&listing) > before.0,
            "{} vs {}",
            r.score(&listing),
            before.0
        );
        assert!(r.score(&listing) - r.score(&other) > before.0 - before.1);
        assert_eq!(r.examples(), before.2, "no example counted");
        let mut off = trained();
        off.set_config(LeadConfig {
            up_credit: 0.0,
            ..LeadConfig::default()
        });
        off.credit_up(&listing);
        assert_eq!(off.score(&listing).to_bits(), before.0.to_bits());
    }

    #[test]
    fn a_page_credited_after_its_empty_settle_counts_nearly_as_one_that_paid() {
        // A page that holds files the classifier took for pages settles
        // empty (a negative); one of its files fetched later credits its
        // link one level up. The words it shares with the other pages of
        // its kind should then lead about as much as if it had paid at once.
        let listing = url("http://a.test/downloads/genindex-3.html");
        let holder = url("http://a.test/downloads/plotting-employment-disability-7.html");
        let anchor = "Employment disability";
        let features = LeadRanker::features(&holder, anchor, Some(&listing));
        let other = LeadRanker::features(
            &url("http://a.test/downloads/plotting-emission-traffic-9.html"),
            "Emission traffic",
            Some(&url("http://a.test/downloads/genindex-5.html")),
        );
        let late = |up_credit: f64| {
            let mut r = LeadRanker::new(LeadConfig {
                up_credit,
                ..LeadConfig::default()
            });
            r.train(&holder, anchor, Some(&listing), false);
            r.credit_up(&features);
            r.score(&other)
        };
        let mut paid = LeadRanker::default();
        paid.train(&holder, anchor, Some(&listing), true);
        let paid = paid.score(&other);
        let now = late(LeadConfig::default().up_credit);
        assert!(paid > 0.0 && now >= 0.5 * paid, "{now} vs {paid}");
        // The weight of 1 this replaced only cancelled the negative.
        let before = late(1.0);
        assert!(before < 0.5 * paid, "{before} vs {paid}");
    }

    #[test]
    fn untrained_it_is_not_ready_and_scores_zero() {
        let r = LeadRanker::default();
        assert!(!r.is_ready());
        assert_eq!(
            r.score(&LeadRanker::features(&url("http://a.test/x"), "", None)),
            0.0
        );
    }

    #[test]
    fn a_restored_ranker_scores_as_the_saved_one() {
        let r = trained();
        let back: LeadRanker = codec::decode(&codec::encode(&r)).unwrap();
        let mut back = back;
        back.set_config(r.config());
        let f = LeadRanker::features(&url("http://c.test/api/plotting-1.html"), "x", None);
        assert_eq!(r.score(&f).to_bits(), back.score(&f).to_bits());
        assert_eq!(r.examples(), back.examples());
        assert_eq!(codec::encode(&r), codec::encode(&back));
    }

    #[test]
    fn a_prior_starts_a_new_ranker_warm() {
        let prior = trained().prior().unwrap();
        let warm = LeadRanker::with_prior(LeadConfig::default(), &prior);
        assert!(warm.is_ready() && warm.prior_used());
        assert_eq!(warm.examples(), (0, 0));
        let f = |s: &str| LeadRanker::features(&url(s), "Thing", None);
        assert!(
            warm.score(&f("http://new.test/api/plotting-1.html"))
                > warm.score(&f("http://new.test/api/core-1.html"))
        );
        assert!(LeadRanker::default().prior().is_none());
    }

    #[test]
    fn at_its_own_first_target_a_warm_ranker_lets_the_prior_go() {
        let prior = trained().prior().unwrap();
        let f = |s: &str| LeadRanker::features(&url(s), "Thing", None);
        let plotting = f("http://new.test/api/plotting-1.html");
        let config = LeadConfig {
            prior_keep: 0.0,
            ..LeadConfig::default()
        };
        let mut warm = LeadRanker::with_prior(config, &prior);
        warm.train(
            &url("http://new.test/api/core-1.html"),
            "Thing",
            None,
            false,
        );
        let core = f("http://new.test/api/core-2.html");
        assert!(warm.score(&plotting) > warm.score(&core) && !warm.found_own());
        warm.before_own_positive();
        assert_eq!(warm.score(&plotting), 0.0, "the prior is gone");
        let page = url("http://new.test/notebooks/a.html");
        warm.train(&page, "Notebook", None, true);
        assert!(warm.found_own() && warm.is_ready());
        // Once the job has its own positive, nothing more is forgotten.
        let after = warm.score(&f("http://new.test/notebooks/b.html"));
        warm.before_own_positive();
        assert_eq!(warm.score(&f("http://new.test/notebooks/b.html")), after);
        // Kept as it is with prior_keep 1, and a cold ranker has nothing to let go.
        let keep_all = LeadConfig {
            prior_keep: 1.0,
            ..LeadConfig::default()
        };
        let mut kept = LeadRanker::with_prior(keep_all, &prior);
        let before = kept.score(&plotting);
        kept.before_own_positive();
        assert_eq!(kept.score(&plotting), before);
        let mut cold = trained();
        let before = cold.score(&plotting);
        cold.before_own_positive();
        assert_eq!(cold.score(&plotting), before);
    }
}
