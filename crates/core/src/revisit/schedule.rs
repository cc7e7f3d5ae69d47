//! When to revisit a page: StormCrawler's adaptive rule per page, steered by
//! what revisits of the page's action (its tag-path group) have paid.
//!
//! Baseline (StormCrawler's `AdaptiveScheduler`): a page that changed is
//! revisited twice as often (its interval halves, down to `min`); a page that
//! did not is revisited less often (its interval grows by half, up to `max`).
//!
//! Learned part: a revisit *paid* when it brought a new or changed target.
//! [`RevisitLearner`] keeps, per action, how many revisits there were and how
//! many paid (a Beta(1, 1) prior). A page whose action pays more often than
//! the average action is due sooner than its adaptive interval says, one
//! that pays less often later (at most ×2 either way, always within
//! `[min, max]`), and among pages due at once, those of the best-paying
//! actions (with an exploration bonus for little-tried ones, UCB1) go first.
//! Listing pages of sections that publish often are thereby revisited first.
//!
//! Everything is integer seconds and serde data: a schedule and a learner
//! encoded with [`crate::codec`] resume exactly after a kill.

use crate::codec::{self, CodecError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Revisit interval bounds of a job (`revisit.min`, `revisit.max`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleConfig {
    pub min_secs: u64,
    pub max_secs: u64,
}

impl ScheduleConfig {
    /// Bounds of at least one second, `min ≤ max`.
    pub fn new(min: Duration, max: Duration) -> Result<ScheduleConfig, String> {
        let (min_secs, max_secs) = (min.as_secs(), max.as_secs());
        if min_secs == 0 {
            return Err("revisit.min must be at least 1 s".into());
        }
        if min_secs > max_secs {
            return Err(format!(
                "revisit.min ({min_secs} s) is larger than revisit.max ({max_secs} s)"
            ));
        }
        Ok(ScheduleConfig { min_secs, max_secs })
    }

    fn clamp(&self, secs: u64) -> u64 {
        secs.clamp(self.min_secs, self.max_secs)
    }

    /// The StormCrawler rule: changed → half (toward `min`), unchanged → ×1.5 (toward `max`).
    pub fn adapt(&self, interval: u64, changed: bool) -> u64 {
        let next = if changed {
            interval / 2
        } else {
            interval.saturating_add(interval / 2).max(interval + 1)
        };
        self.clamp(next)
    }
}

/// One page's revisit state (about 20 bytes encoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSchedule {
    /// The adaptive interval (seconds), before the learned adjustment.
    pub interval: u64,
    /// When the page is due next (seconds since the epoch).
    pub due: u64,
    pub visits: u32,
    /// Visits that brought a new or changed target.
    pub paid: u32,
}

impl PageSchedule {
    /// A page first fetched at `now`: due again after `min` (a new page's
    /// change rate is unknown; starting fast finds it out soonest).
    pub fn first(cfg: &ScheduleConfig, now: u64) -> PageSchedule {
        PageSchedule {
            interval: cfg.min_secs,
            due: now.saturating_add(cfg.min_secs),
            visits: 0,
            paid: 0,
        }
    }

    /// Records a revisit at `now` of a page of `action`, that `paid` or not,
    /// in the learner as well, and sets when the page is due next.
    pub fn visited(
        &mut self,
        cfg: &ScheduleConfig,
        learner: &mut RevisitLearner,
        action: u64,
        paid: bool,
        now: u64,
    ) {
        self.visits = self.visits.saturating_add(1);
        if paid {
            self.paid = self.paid.saturating_add(1);
        }
        learner.record(action, paid);
        self.interval = cfg.adapt(self.interval, paid);
        self.due = now.saturating_add(learner.adjusted_interval(cfg, action, self.interval));
    }

    /// Whether the page is due at `now`.
    pub fn is_due(&self, now: u64) -> bool {
        self.due <= now
    }
}

/// How revisits of one action went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionStats {
    pub revisits: u64,
    pub paid: u64,
}

impl ActionStats {
    /// Posterior mean of the chance that a revisit pays, Beta(1, 1) prior.
    pub fn payoff(&self) -> f64 {
        (self.paid as f64 + 1.0) / (self.revisits as f64 + 2.0)
    }
}

/// What revisiting each action has paid: per-action counts, in a sorted map
/// so that encoding and iteration are deterministic.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisitLearner {
    actions: BTreeMap<u64, ActionStats>,
    total: ActionStats,
}

/// The learned adjustment never moves an interval by more than this factor.
const MAX_FACTOR: f64 = 2.0;

impl RevisitLearner {
    pub fn record(&mut self, action: u64, paid: bool) {
        let s = self.actions.entry(action).or_default();
        s.revisits += 1;
        self.total.revisits += 1;
        if paid {
            s.paid += 1;
            self.total.paid += 1;
        }
    }

    pub fn stats(&self, action: u64) -> ActionStats {
        self.actions.get(&action).copied().unwrap_or_default()
    }

    /// The adaptive `interval` scaled by how this action pays against the
    /// average revisit (`average / action`, within [1/2, 2]), within `[min, max]`.
    pub fn adjusted_interval(&self, cfg: &ScheduleConfig, action: u64, interval: u64) -> u64 {
        let factor =
            (self.total.payoff() / self.stats(action).payoff()).clamp(1.0 / MAX_FACTOR, MAX_FACTOR);
        // Rounded: the result is an exact function of the counts on every machine.
        cfg.clamp((interval as f64 * factor).round() as u64)
    }

    /// Urgency of revisiting a due page of `action`: its payoff plus a UCB1
    /// bonus, so a little-tried action is not starved by an early bad luck.
    pub fn priority(&self, action: u64) -> f64 {
        let s = self.stats(action);
        let n = self.total.revisits as f64 + 1.0;
        s.payoff() + (2.0 * n.ln() / (s.revisits as f64 + 1.0)).sqrt()
    }

    /// Orders due pages `(page key, action, due)`: highest priority first,
    /// then the longest overdue, then by key (a total, deterministic order).
    pub fn order_due(&self, pages: &mut [(u64, u64, u64)]) {
        pages.sort_by(|a, b| {
            self.priority(b.1)
                .total_cmp(&self.priority(a.1))
                .then(a.2.cmp(&b.2))
                .then(a.0.cmp(&b.0))
        });
    }

    pub fn encode(&self) -> Vec<u8> {
        codec::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<RevisitLearner, CodecError> {
        codec::decode(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg() -> ScheduleConfig {
        ScheduleConfig::new(Duration::from_secs(3600), Duration::from_secs(30 * 86_400)).unwrap()
    }

    #[test]
    fn the_adaptive_rule_halves_on_change_and_grows_by_half_otherwise() {
        let c = cfg();
        assert_eq!(c.adapt(86_400, true), 43_200);
        assert_eq!(c.adapt(86_400, false), 129_600);
        assert_eq!(c.adapt(4000, true), 3600, "never below min");
        assert_eq!(c.adapt(2_500_000, false), 2_592_000, "never above max");
        let tiny = ScheduleConfig::new(Duration::from_secs(1), Duration::from_secs(10)).unwrap();
        assert_eq!(tiny.adapt(1, false), 2, "an interval of 1 s still grows");
    }

    #[test]
    fn bad_bounds_are_refused() {
        assert!(ScheduleConfig::new(Duration::ZERO, Duration::from_secs(5)).is_err());
        assert!(ScheduleConfig::new(Duration::from_secs(9), Duration::from_secs(5)).is_err());
    }

    #[test]
    fn pages_of_paying_actions_come_back_sooner_and_go_first() {
        let c = cfg();
        let mut learner = RevisitLearner::default();
        let (listing, about) = (1u64, 2u64);
        for i in 0..40 {
            learner.record(listing, i % 4 != 0); // pays 3 times in 4
            learner.record(about, false);
        }
        let day = 86_400;
        assert!(learner.adjusted_interval(&c, listing, day) < day);
        assert!(learner.adjusted_interval(&c, about, day) > day);
        assert!(learner.priority(listing) > learner.priority(about));
        let mut due = vec![(10, about, 5), (11, listing, 9), (12, about, 1)];
        learner.order_due(&mut due);
        assert_eq!(due.iter().map(|d| d.0).collect::<Vec<_>>(), [11, 12, 10]);
    }

    #[test]
    fn a_page_is_due_after_its_interval() {
        let c = cfg();
        let mut learner = RevisitLearner::default();
        let mut page = PageSchedule::first(&c, 1000);
        assert!(!page.is_due(1000) && page.is_due(4600));
        page.visited(&c, &mut learner, 7, false, 4600);
        assert_eq!(page.interval, 5400);
        // One unpaid revisit among one: this action pays as the average does.
        assert_eq!(page.due, 4600 + 5400);
        assert_eq!((page.visits, page.paid), (1, 0));
    }

    proptest! {
        #[test]
        fn intervals_stay_in_bounds_and_move_the_right_way(
            min in 1u64..10_000, span in 0u64..1_000_000,
            outcomes in proptest::collection::vec((0u64..4, any::<bool>()), 1..200),
        ) {
            let c = ScheduleConfig::new(Duration::from_secs(min), Duration::from_secs(min + span)).unwrap();
            let mut learner = RevisitLearner::default();
            let mut page = PageSchedule::first(&c, 0);
            let mut now = 0;
            for (action, paid) in outcomes {
                let before = page.interval;
                page.visited(&c, &mut learner, action, paid, now);
                prop_assert!((c.min_secs..=c.max_secs).contains(&page.interval));
                prop_assert!((c.min_secs..=c.max_secs).contains(&(page.due - now)));
                if paid { prop_assert!(page.interval <= before) } else { prop_assert!(page.interval >= before) }
                now = page.due;
            }
        }

        #[test]
        fn steady_change_reaches_min_in_log_steps(min in 1u64..1000, ratio in 1u64..100_000) {
            let c = ScheduleConfig::new(Duration::from_secs(min), Duration::from_secs(min * ratio)).unwrap();
            let mut interval = c.max_secs;
            let steps = 64 - ratio.leading_zeros() as u64 + 1;
            for _ in 0..steps { interval = c.adapt(interval, true); }
            prop_assert_eq!(interval, c.min_secs);
        }

        #[test]
        fn a_better_paying_action_is_never_revisited_later(
            a_paid in 0u64..50, a_extra in 0u64..50, b_paid in 0u64..50, b_extra in 0u64..50,
            interval in 1u64..1_000_000,
        ) {
            let c = ScheduleConfig::new(Duration::from_secs(1), Duration::from_secs(2_000_000)).unwrap();
            let mut l = RevisitLearner::default();
            for i in 0..a_paid + a_extra { l.record(1, i < a_paid); }
            for i in 0..b_paid + b_extra { l.record(2, i < b_paid); }
            if l.stats(1).payoff() >= l.stats(2).payoff() {
                prop_assert!(l.adjusted_interval(&c, 1, interval) <= l.adjusted_interval(&c, 2, interval));
            }
        }

        #[test]
        fn an_encoded_learner_resumes_exactly(records in proptest::collection::vec((0u64..20, any::<bool>()), 0..300)) {
            let mut l = RevisitLearner::default();
            for (a, p) in &records { l.record(*a, *p); }
            let back = RevisitLearner::decode(&l.encode()).unwrap();
            prop_assert_eq!(&back, &l);
            let c = cfg();
            for a in 0..20 {
                prop_assert_eq!(back.adjusted_interval(&c, a, 86_400), l.adjusted_interval(&c, a, 86_400));
                prop_assert_eq!(back.priority(a).to_bits(), l.priority(a).to_bits());
            }
            let page = PageSchedule { interval: 7, due: 9, visits: 3, paid: 1 };
            prop_assert_eq!(codec::decode::<PageSchedule>(&codec::encode(&page)).unwrap(), page);
        }
    }
}
