//! A continuous job's revisit book: every fetched URL with its validators,
//! its schedule and its action, which of them are due, and in what order
//! they are revisited. Pure: the runner gives it every time and every
//! answer; it decides nothing about the network.
//!
//! # Invariants
//!
//! - `by_due` holds `(entry.schedule.due, hash)` for exactly the entries
//!   not in flight; an entry in flight is in `in_flight` only.
//! - `dirty` names entries changed since the last [`RevisitBook::take_delta`].

use super::schedule::{PageSchedule, RevisitLearner, ScheduleConfig};
use super::validators::{Change, Validators};
use crate::codec::{self, CodecError};
use crate::link::Link;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, HashSet};

/// How a continuous job orders and spaces its revisits (`revisit.policy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RevisitPolicy {
    /// StormCrawler's rule, steered by what each action's revisits paid;
    /// among due pages, the learner's priority goes first.
    #[default]
    Learned,
    /// StormCrawler's rule alone; due pages in the order they fell due.
    Adaptive,
    /// Every page every `min`: a full recrawl at a fixed interval.
    Fixed,
}

impl RevisitPolicy {
    pub const ALL: [(&'static str, RevisitPolicy); 3] = [
        ("learned", RevisitPolicy::Learned),
        ("adaptive", RevisitPolicy::Adaptive),
        ("fixed", RevisitPolicy::Fixed),
    ];

    pub fn name(self) -> &'static str {
        match self {
            RevisitPolicy::Learned => "learned",
            RevisitPolicy::Adaptive => "adaptive",
            RevisitPolicy::Fixed => "fixed",
        }
    }
}

/// What is kept of one fetched URL (one row of the store's `revisit` table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RevisitEntry {
    /// The link as fetched: its URL is the final one (after redirects), its
    /// anchor is dropped (not needed to revisit, and unbounded).
    pub link: Link,
    /// Saved as a target (a revisit that changed is a new file), else a page.
    pub target: bool,
    /// The action (tag-path group) of the link that found it.
    pub action: u64,
    pub validators: Validators,
    pub schedule: PageSchedule,
}

/// Counts of what revisits found, for status and the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisitStats {
    pub revisits: u64,
    /// The server answered 304 Not Modified.
    pub not_modified: u64,
    /// A body identical to the last one (nothing saved).
    pub same_digest: u64,
    /// A body that changed.
    pub changed: u64,
    /// Revisits that paid (see [`Change::paid`] and the runner's attribution).
    pub paid: u64,
}

/// The job-wide part of the book, saved whole at each checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RevisitState {
    pub learner: RevisitLearner,
    pub stats: RevisitStats,
    /// Whose turn the next step is when revisits and the frontier both wait.
    pub revisit_turn: bool,
}

/// Due pages considered at once for the learner's order: the longest overdue
/// this many are ranked. Bounds the work per step on a job of millions of
/// pages; when more are due, the oldest are the ones most worth ranking.
pub const DUE_WINDOW: usize = 256;

/// The revisit book of a continuous job. See the module documentation.
#[derive(Debug)]
pub struct RevisitBook {
    cfg: ScheduleConfig,
    policy: RevisitPolicy,
    entries: HashMap<u64, RevisitEntry>,
    by_due: BTreeSet<(u64, u64)>,
    in_flight: HashSet<u64>,
    dirty: BTreeSet<u64>,
    state: RevisitState,
    state_dirty: bool,
}

/// A checkpoint's share of the book: changed entries, encoded, and the state.
#[derive(Debug, Default)]
pub struct BookDelta {
    pub entries: Vec<(u64, Vec<u8>)>,
    pub state: Option<Vec<u8>>,
}

impl RevisitBook {
    pub fn new(cfg: ScheduleConfig, policy: RevisitPolicy) -> RevisitBook {
        RevisitBook {
            cfg,
            policy,
            entries: HashMap::new(),
            by_due: BTreeSet::new(),
            in_flight: HashSet::new(),
            dirty: BTreeSet::new(),
            state: RevisitState::default(),
            state_dirty: false,
        }
    }

    /// The stored book: its entries (by URL hash) and its state.
    pub fn restore(
        &mut self,
        entries: &[(u64, Vec<u8>)],
        state: Option<&[u8]>,
    ) -> Result<(), CodecError> {
        for (hash, bytes) in entries {
            let entry: RevisitEntry = codec::decode(bytes)?;
            self.by_due.insert((entry.schedule.due, *hash));
            self.entries.insert(*hash, entry);
        }
        if let Some(bytes) = state {
            self.state = codec::decode(bytes)?;
        }
        self.debug_check();
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn stats(&self) -> RevisitStats {
        self.state.stats
    }

    pub fn entry(&self, hash: u64) -> Option<&RevisitEntry> {
        self.entries.get(&hash)
    }

    /// A URL was fetched outside a revisit (its first fetch, or fetched again
    /// through the frontier): its validators are the new ones, and a new URL
    /// is due after `min`.
    pub fn fetched(
        &mut self,
        hash: u64,
        mut link: Link,
        target: bool,
        action: u64,
        validators: Validators,
        now: u64,
    ) {
        link.anchor.clear();
        if let Some(e) = self.entries.get_mut(&hash) {
            e.validators = validators;
        } else {
            let schedule = PageSchedule::first(&self.cfg, now);
            if !self.in_flight.contains(&hash) {
                self.by_due.insert((schedule.due, hash));
            }
            self.entries.insert(
                hash,
                RevisitEntry {
                    link,
                    target,
                    action,
                    validators,
                    schedule,
                },
            );
        }
        self.dirty.insert(hash);
        self.debug_check();
    }

    /// A revisit saved a changed body: its validators are the new ones at
    /// once (in the same checkpoint as its manifest row), so that a revisit
    /// repeated after a kill finds the body identical and saves nothing twice.
    pub fn set_validators(&mut self, hash: u64, validators: Validators) {
        if let Some(e) = self.entries.get_mut(&hash) {
            e.validators = validators;
            self.dirty.insert(hash);
        }
    }

    /// When the soonest revisit not under way is due (seconds since the epoch).
    pub fn next_due(&self) -> Option<u64> {
        self.by_due.first().map(|(due, _)| *due)
    }

    /// Whether a revisit is due at `now`.
    pub fn has_due(&self, now: u64) -> bool {
        self.next_due().is_some_and(|due| due <= now)
    }

    /// The next revisit to make at `now` among due entries whose host is
    /// `ready`, marked in flight; `frontier_waiting` says whether the frontier
    /// also has work, and then revisits and the frontier take turns (one step
    /// each). With the learned policy, the best-paying action's page goes
    /// first among the [`DUE_WINDOW`] longest overdue; else the longest overdue.
    pub fn take_due(
        &mut self,
        now: u64,
        frontier_waiting: bool,
        ready: &dyn Fn(&Link) -> bool,
    ) -> Option<(u64, RevisitEntry)> {
        let mut due: Vec<(u64, u64, u64)> = self
            .by_due
            .iter()
            .take_while(|(d, _)| *d <= now)
            .filter_map(|&(d, h)| {
                let e = self.entries.get(&h)?;
                ready(&e.link).then_some((h, e.action, d))
            })
            .take(DUE_WINDOW)
            .collect();
        if due.is_empty() {
            return None;
        }
        if frontier_waiting {
            self.state.revisit_turn = !self.state.revisit_turn;
            self.state_dirty = true;
            if !self.state.revisit_turn {
                return None;
            }
        }
        if self.policy == RevisitPolicy::Learned {
            self.state.learner.order_due(&mut due);
        }
        let (hash, _, d) = due[0];
        self.by_due.remove(&(d, hash));
        self.in_flight.insert(hash);
        self.debug_check();
        self.entries.get(&hash).map(|e| (hash, e.clone()))
    }

    /// A revisit was cancelled (a stop, a failed write): due again as it was.
    pub fn release(&mut self, hash: u64) {
        if self.in_flight.remove(&hash) {
            if let Some(e) = self.entries.get(&hash) {
                self.by_due.insert((e.schedule.due, hash));
            }
        }
        self.debug_check();
    }

    /// A revisit at `now` ended with `change`; it `paid` (a new or changed
    /// target, see the runner's attribution). The next due time follows the policy.
    pub fn revisited(&mut self, hash: u64, change: Change, paid: bool, now: u64) {
        self.in_flight.remove(&hash);
        let Some(e) = self.entries.get_mut(&hash) else {
            return;
        };
        let s = &mut self.state.stats;
        s.revisits += 1;
        match change {
            Change::NotModified => s.not_modified += 1,
            Change::SameDigest => s.same_digest += 1,
            Change::Changed => s.changed += 1,
            Change::New | Change::Unknown => {}
        }
        if paid {
            s.paid += 1;
        }
        let learner = &mut self.state.learner;
        match self.policy {
            RevisitPolicy::Learned => e.schedule.visited(&self.cfg, learner, e.action, paid, now),
            RevisitPolicy::Adaptive => {
                // The learner still counts (for status), but does not steer.
                learner.record(e.action, paid);
                let s = &mut e.schedule;
                s.visits = s.visits.saturating_add(1);
                s.paid = s.paid.saturating_add(u32::from(paid));
                s.interval = self.cfg.adapt(s.interval, paid);
                s.due = now.saturating_add(s.interval);
            }
            RevisitPolicy::Fixed => {
                learner.record(e.action, paid);
                let s = &mut e.schedule;
                s.visits = s.visits.saturating_add(1);
                s.paid = s.paid.saturating_add(u32::from(paid));
                s.interval = self.cfg.min_secs;
                s.due = now.saturating_add(self.cfg.min_secs);
            }
        }
        self.by_due.insert((e.schedule.due, hash));
        self.dirty.insert(hash);
        self.state_dirty = true;
        self.debug_check();
    }

    /// What changed since the last call, encoded for the store.
    pub fn take_delta(&mut self) -> BookDelta {
        let entries = std::mem::take(&mut self.dirty)
            .into_iter()
            .filter_map(|h| self.entries.get(&h).map(|e| (h, codec::encode(e))))
            .collect();
        let state = std::mem::take(&mut self.state_dirty).then(|| codec::encode(&self.state));
        BookDelta { entries, state }
    }

    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            self.check_invariants();
        }
    }

    /// Panics when an invariant of the module documentation does not hold.
    pub fn check_invariants(&self) {
        assert_eq!(
            self.by_due.len() + self.in_flight.len(),
            self.entries.len(),
            "every entry is either due-indexed or in flight"
        );
        for (due, h) in &self.by_due {
            let e = self.entries.get(h);
            assert!(e.is_some_and(|e| e.schedule.due == *due), "stale due index");
            assert!(!self.in_flight.contains(h), "in flight and due-indexed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cfg() -> ScheduleConfig {
        ScheduleConfig::new(Duration::from_secs(10), Duration::from_secs(1000)).unwrap()
    }

    fn link(path: &str) -> Link {
        Link::seed(url::Url::parse(&format!("http://a.test/{path}")).unwrap())
    }

    fn book(policy: RevisitPolicy, pages: u64) -> RevisitBook {
        let mut b = RevisitBook::new(cfg(), policy);
        for h in 0..pages {
            b.fetched(
                h,
                link(&h.to_string()),
                false,
                h % 2,
                Validators::default(),
                100 + h,
            );
        }
        b
    }

    #[test]
    fn a_fetched_url_is_due_after_min_and_not_before() {
        let mut b = book(RevisitPolicy::Adaptive, 3);
        assert_eq!(b.next_due(), Some(110));
        assert!(b.take_due(109, false, &|_| true).is_none());
        let (h, e) = b.take_due(111, false, &|_| true).unwrap();
        assert_eq!((h, e.link.url.path()), (0, "/0"));
        assert_eq!(b.next_due(), Some(111), "the one in flight is not due");
        b.revisited(h, Change::NotModified, false, 111);
        assert_eq!(b.entry(0).unwrap().schedule.due, 111 + 15, "×1.5 unchanged");
        assert_eq!(b.stats().not_modified, 1);
    }

    #[test]
    fn hosts_not_ready_are_passed_over() {
        let mut b = book(RevisitPolicy::Adaptive, 3);
        let (h, _) = b.take_due(500, false, &|l| l.url.path() != "/0").unwrap();
        assert_eq!(h, 1);
        assert!(b.take_due(500, false, &|_| false).is_none());
    }

    #[test]
    fn revisits_and_the_frontier_take_turns() {
        let mut b = book(RevisitPolicy::Adaptive, 10);
        let taken: Vec<bool> = (0..6)
            .map(|_| b.take_due(1000, true, &|_| true).is_some())
            .collect();
        assert_eq!(taken, [true, false, true, false, true, false]);
        // With nothing else to do, every step is a revisit.
        assert!((0..4).all(|_| b.take_due(1000, false, &|_| true).is_some()));
    }

    #[test]
    fn the_learned_policy_takes_the_paying_action_first() {
        let mut b = book(RevisitPolicy::Learned, 4);
        // Action 1 (odd hashes) paid every time, action 0 never.
        for _ in 0..20 {
            b.state.learner.record(1, true);
            b.state.learner.record(0, false);
        }
        let (h, _) = b.take_due(1000, false, &|_| true).unwrap();
        assert_eq!(h % 2, 1, "page {h}");
        let mut adaptive = book(RevisitPolicy::Adaptive, 4);
        assert_eq!(adaptive.take_due(1000, false, &|_| true).unwrap().0, 0);
    }

    #[test]
    fn fixed_revisits_every_min_whatever_happened() {
        let mut b = book(RevisitPolicy::Fixed, 1);
        for (i, change) in [Change::NotModified, Change::Changed, Change::SameDigest]
            .into_iter()
            .enumerate()
        {
            let now = 1000 + i as u64 * 10;
            let (h, _) = b.take_due(now, false, &|_| true).unwrap();
            b.revisited(h, change, change.paid(), now);
            assert_eq!(b.entry(0).unwrap().schedule.due, now + 10);
        }
    }

    #[test]
    fn a_released_revisit_is_due_again_as_it_was() {
        let mut b = book(RevisitPolicy::Learned, 2);
        let (h, e) = b.take_due(1000, false, &|_| true).unwrap();
        b.release(h);
        assert_eq!(b.entry(h).unwrap().schedule, e.schedule);
        assert_eq!(b.next_due(), Some(110));
    }

    #[test]
    fn the_book_resumes_exactly_from_its_deltas() {
        let mut b = book(RevisitPolicy::Learned, 20);
        let mut stored: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut state = None;
        for round in 0..5u64 {
            let now = 2000 + round * 50;
            while let Some((h, _)) = b.take_due(now, round % 2 == 0, &|_| true) {
                b.revisited(h, Change::SameDigest, h % 3 == 0, now);
            }
            let d = b.take_delta();
            stored.extend(d.entries);
            state = d.state.or(state);
        }
        let rows: Vec<(u64, Vec<u8>)> = stored.into_iter().collect();
        let mut back = RevisitBook::new(cfg(), RevisitPolicy::Learned);
        back.restore(&rows, state.as_deref()).unwrap();
        assert_eq!(back.state, b.state);
        assert_eq!(back.by_due, b.by_due);
        for h in 0..20 {
            assert_eq!(back.entry(h), b.entry(h));
        }
    }

    #[test]
    fn an_entry_is_well_under_a_kibibyte() {
        let mut l = link("section/2026/report-on-something.html");
        l.referrer = Some(std::sync::Arc::new(
            url::Url::parse("http://a.test/section/2026/index.html").unwrap(),
        ));
        l.anchor = "x".repeat(5000);
        let mut b = RevisitBook::new(cfg(), RevisitPolicy::Learned);
        let v = Validators {
            etag: Some("\"0123456789abcdef0123456789abcdef\"".into()),
            last_modified: Some("Tue, 14 Nov 2023 22:13:20 GMT".into()),
            sha256: Some([7; 32]),
            fetched_at: 1_700_000_000,
        };
        b.fetched(1, l, true, 42, v, 0);
        let d = b.take_delta();
        let bytes = d.entries[0].1.len();
        // The row's key is 8 bytes plus the job name; the anchor is not kept.
        assert!(bytes < 400, "{bytes} bytes");
    }
}
