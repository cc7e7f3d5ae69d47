//! Work that waits for its politeness key, and the keys the job's steps are on.
//!
//! A *lane* is one politeness key (a host, or a pay-level domain). Two kinds
//! of work wait here, each in its lane's queue in arrival order, while work
//! of ready lanes goes first: links the job core chose and *held* because
//! their key was not ready (`core/dispatch.rs`: at most the job's
//! `look_ahead` of them), and, with more than one step in flight, the HEADs
//! a fetched page asks for (units of their own). Lanes with
//! waiting links and no step on them sit in a timer heap by the moment they may
//! be ready, so finding a ready lane costs O(log lanes), not a scan.
//!
//! A lane's work is taken in arrival order among the work that is ready: a
//! link of an origin that is held back (its robots.txt unavailable, its
//! https port failing) waits while the links of the lane's other origins
//! (the same host's http port) go on, and the lane's timer is armed for the
//! soonest of them.
//!
//! Pure bookkeeping: when a lane is ready is asked of a caller's closure (the
//! fetcher's host table), never of the network or the clock inside.

use forager_core::job::{Held, Readiness};
use forager_core::link::{Link, LinkId};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Work waiting for its lane.
#[derive(Debug)]
pub enum Parked {
    /// A link to ask with HEAD: unsettled in the core, owned by `step`,
    /// the step that found it.
    Ask { step: LinkId, link: Link },
    /// A link the core chose, held for its key: its step begins there.
    Held(Held),
}

impl Parked {
    pub fn url(&self) -> &url::Url {
        match self {
            Parked::Ask { link, .. } => &link.url,
            Parked::Held(h) => h.url(),
        }
    }

    /// The id that orders work at the end of a job: the asking step's, or
    /// the held link's.
    fn id(&self) -> LinkId {
        match self {
            Parked::Ask { step, .. } => *step,
            Parked::Held(h) => h.id(),
        }
    }
}

/// How soon a lane held by another job is looked at again (and a slot the
/// core left empty offered again, when no delay it looked at ends sooner).
pub(super) const BUSY_RECHECK: Duration = Duration::from_millis(20);

/// When `p` may go, as seen at `now`.
fn ready_at(p: &Parked, now: Instant, readiness: &impl Fn(&Parked) -> Readiness) -> Instant {
    match readiness(p) {
        Readiness::Now => now,
        Readiness::After(d) | Readiness::Blocked(d) => now + d,
        Readiness::Busy => now + BUSY_RECHECK,
    }
}

/// The lanes of one job. See the module documentation.
#[derive(Default)]
pub struct Lanes {
    queues: HashMap<String, VecDeque<Parked>>,
    /// Lanes with waiting links and no step of this job on them, by when they may be ready.
    timers: BinaryHeap<Reverse<(Instant, u64, String)>>,
    /// The armed timer of each lane: when it fires. A timer in the heap
    /// that is not a lane's armed one was superseded by a sooner one.
    scheduled: HashMap<String, Instant>,
    /// Lanes with steps of this job under way, and how many.
    busy: HashMap<String, usize>,
    parked: usize,
    sequence: u64,
}

impl Lanes {
    /// Links waiting, all lanes together.
    pub fn parked(&self) -> usize {
        self.parked
    }

    pub fn is_busy(&self, lane: &str) -> bool {
        self.busy.contains_key(lane)
    }

    /// Whether a new link of `lane` may start at once: no step of the job on
    /// it, and no link of it waiting already (they go first).
    pub fn is_free(&self, lane: &str) -> bool {
        !self.is_busy(lane) && !self.queues.contains_key(lane)
    }

    /// A step starts on `lane`.
    pub fn start(&mut self, lane: &str) {
        *self.busy.entry(lane.to_string()).or_default() += 1;
    }

    /// A step on `lane` ended; its waiting links may go once it is ready.
    pub fn finish(&mut self, lane: &str, now: Instant, readiness: impl Fn(&Parked) -> Readiness) {
        if let Some(n) = self.busy.get_mut(lane) {
            *n -= 1;
            if *n == 0 {
                self.busy.remove(lane);
            }
        }
        self.schedule(lane, now, &readiness);
    }

    /// Put work in its lane's queue.
    pub fn park(
        &mut self,
        lane: String,
        parked: Parked,
        now: Instant,
        readiness: impl Fn(&Parked) -> Readiness,
    ) {
        self.queues
            .entry(lane.clone())
            .or_default()
            .push_back(parked);
        self.parked += 1;
        if self.is_busy(&lane) {
            return; // armed when its step ends
        }
        // Only the new work can make the lane's timer sooner: no scan.
        let at = self
            .queues
            .get(&lane)
            .and_then(|q| q.back())
            .map(|p| ready_at(p, now, &readiness));
        if let Some(at) = at {
            self.arm(&lane, at);
        }
    }

    /// Arm the lane's timer for `at` unless it fires sooner already.
    fn arm(&mut self, lane: &str, at: Instant) {
        if self.scheduled.get(lane).is_some_and(|armed| *armed <= at) {
            return;
        }
        self.sequence += 1;
        self.timers
            .push(Reverse((at, self.sequence, lane.to_string())));
        self.scheduled.insert(lane.to_string(), at);
    }

    /// Arm the lane's timer for its soonest waiting work, if it has some
    /// and no step on it.
    fn schedule(&mut self, lane: &str, now: Instant, readiness: &impl Fn(&Parked) -> Readiness) {
        if self.is_busy(lane) {
            return;
        }
        let Some(queue) = self.queues.get(lane) else {
            return;
        };
        let mut soonest: Option<Instant> = None;
        for p in queue {
            let at = ready_at(p, now, readiness);
            soonest = Some(soonest.map_or(at, |s| s.min(at)));
            // Nothing is sooner than now: the common case costs one look.
            if at == now {
                break;
            }
        }
        if let Some(at) = soonest {
            self.arm(lane, at);
        }
    }

    /// The first waiting work of a lane that is ready now, taken out (the
    /// caller starts its step with [`Lanes::start`]).
    pub fn take_ready(
        &mut self,
        now: Instant,
        readiness: impl Fn(&Parked) -> Readiness,
    ) -> Option<(String, Parked)> {
        while let Some(Reverse((at, _, _))) = self.timers.peek() {
            if *at > now {
                return None;
            }
            let Reverse((at, _, lane)) = self.timers.pop()?;
            if self.scheduled.get(&lane) != Some(&at) {
                continue; // superseded by a sooner timer
            }
            self.scheduled.remove(&lane);
            if self.is_busy(&lane) {
                continue; // armed again when its step ends
            }
            let Some(queue) = self.queues.get_mut(&lane) else {
                continue;
            };
            if queue.is_empty() {
                self.queues.remove(&lane);
                continue;
            }
            // The first ready work, in arrival order: work of one origin is
            // ready together, so its order holds.
            let Some(at) = queue.iter().position(|p| readiness(p) == Readiness::Now) else {
                self.schedule(&lane, now, &readiness);
                continue;
            };
            let taken = queue.remove(at);
            if queue.is_empty() {
                self.queues.remove(&lane);
            } else {
                // The caller may not start a step with what it took (the
                // strategy drops or defers a held link): the links behind
                // it need a timer of their own, or nothing would ever wake
                // the lane, and a lane with links waiting is never free.
                self.schedule(&lane, now, &readiness);
            }
            if let Some(p) = taken {
                self.parked -= 1;
                return Some((lane, p));
            }
        }
        None
    }

    /// The waiting HEAD of the oldest step on a lane with no step of the
    /// job, ready or not (a job past its budget finishes the HEADs of its
    /// open steps, which then send nothing). A scan of every lane: for the
    /// end of a job only.
    pub fn take_any_ask(&mut self) -> Option<(String, Parked)> {
        let (lane, at) = self
            .queues
            .iter()
            .filter(|(lane, _)| !self.is_busy(lane))
            .flat_map(|(lane, q)| {
                q.iter()
                    .enumerate()
                    .filter(|(_, p)| matches!(p, Parked::Ask { .. }))
                    .map(move |(i, p)| (p.id(), lane, i))
            })
            .min()
            .map(|(_, lane, i)| (lane.clone(), i))?;
        let queue = self.queues.get_mut(&lane)?;
        let taken = queue.remove(at)?;
        if queue.is_empty() {
            self.queues.remove(&lane);
        }
        self.parked -= 1;
        Some((lane, taken))
    }

    /// The soonest waiting work and how long until it may go, when every
    /// lane waits (what a job that is only waiting tells its user).
    pub fn soonest(
        &self,
        now: Instant,
        readiness: impl Fn(&Parked) -> Readiness,
    ) -> Option<(url::Url, Duration)> {
        let (lane, at) = self.scheduled.iter().min_by_key(|(_, at)| **at)?;
        let wait = at.saturating_duration_since(now);
        let queue = self.queues.get(lane)?;
        let soonest = queue.iter().min_by_key(|p| match readiness(p) {
            Readiness::Now => Duration::ZERO,
            Readiness::After(d) | Readiness::Blocked(d) => d,
            Readiness::Busy => BUSY_RECHECK,
        })?;
        Some((soonest.url().clone(), wait))
    }

    /// How long until the soonest lane timer, if any.
    pub fn next_wake(&self, now: Instant) -> Option<Duration> {
        self.timers
            .peek()
            .map(|Reverse((at, _, _))| at.saturating_duration_since(now))
    }

    /// Empty every lane (the job stops): what waited, by id.
    pub fn drain(&mut self) -> Vec<Parked> {
        self.timers.clear();
        self.scheduled.clear();
        self.busy.clear();
        self.parked = 0;
        let mut all: Vec<Parked> = self.queues.drain().flat_map(|(_, q)| q).collect();
        all.sort_by_key(Parked::id);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn parked(id: u64, host: &str) -> Parked {
        let url = Url::parse(&format!("http://{host}/{id}")).expect("test URL");
        Parked::Ask {
            step: LinkId(id),
            link: Link::seed(url),
        }
    }

    #[test]
    fn ready_lanes_go_first_and_busy_ones_wait() {
        let now = Instant::now();
        let ready = |_: &Parked| Readiness::Now;
        let mut lanes = Lanes::default();
        lanes.start("a");
        lanes.park("a".into(), parked(1, "a"), now, ready);
        lanes.park("b".into(), parked(2, "b"), now, ready);
        assert!(!lanes.is_free("a") && !lanes.is_free("b"));
        let (lane, p) = lanes.take_ready(now, ready).expect("b is ready");
        assert_eq!((lane.as_str(), p.id()), ("b", LinkId(2)));
        assert!(lanes.take_ready(now, ready).is_none(), "a is busy");
        lanes.finish("a", now, ready);
        let (lane, p) = lanes.take_ready(now, ready).expect("a freed");
        assert_eq!((lane.as_str(), p.id()), ("a", LinkId(1)));
        assert_eq!(lanes.parked(), 0);
    }

    #[test]
    fn a_lane_whose_taken_work_does_not_start_still_wakes_for_the_rest() {
        let now = Instant::now();
        let ready = |_: &Parked| Readiness::Now;
        let mut lanes = Lanes::default();
        lanes.park("a".into(), parked(1, "a"), now, ready);
        lanes.park("a".into(), parked(2, "a"), now, ready);
        let (_, first) = lanes.take_ready(now, ready).expect("a is ready");
        assert_eq!(first.id(), LinkId(1));
        // Taken and not started (a held link the strategy deferred): no
        // `start`, so no `finish` will arm the lane again.
        assert_eq!(lanes.next_wake(now), Some(Duration::ZERO));
        let (_, second) = lanes.take_ready(now, ready).expect("the rest still wakes");
        assert_eq!(second.id(), LinkId(2));
        assert!(lanes.is_free("a"));
    }

    #[test]
    fn a_lane_whose_taken_work_starts_wakes_once_the_step_ends() {
        let now = Instant::now();
        let ready = |_: &Parked| Readiness::Now;
        let mut lanes = Lanes::default();
        lanes.park("a".into(), parked(1, "a"), now, ready);
        lanes.park("a".into(), parked(2, "a"), now, ready);
        let _ = lanes.take_ready(now, ready).expect("a is ready");
        lanes.start("a");
        assert!(lanes.take_ready(now, ready).is_none(), "a is busy");
        lanes.finish("a", now, ready);
        let (_, second) = lanes.take_ready(now, ready).expect("a freed");
        assert_eq!(second.id(), LinkId(2));
    }

    /// A held-back origin (an https port whose robots.txt is unavailable)
    /// at the head of its host's lane never holds the host's other origin.
    #[test]
    fn an_origin_that_waits_never_holds_the_other_origins_of_its_lane() {
        let now = Instant::now();
        let https = Parked::Ask {
            step: LinkId(1),
            link: Link::seed(Url::parse("https://a/1").expect("test URL")),
        };
        let wait = Duration::from_secs(256);
        let readiness = |p: &Parked| match p.url().scheme() {
            "https" => Readiness::Blocked(wait),
            _ => Readiness::Now,
        };
        let mut lanes = Lanes::default();
        lanes.park("a".into(), https, now, readiness);
        assert_eq!(lanes.next_wake(now), Some(wait));
        let (url, left) = lanes.soonest(now, readiness).expect("one waits");
        assert_eq!((url.as_str(), left), ("https://a/1", wait));
        lanes.park("a".into(), parked(2, "a"), now, readiness);
        lanes.park("a".into(), parked(3, "a"), now, readiness);
        // Work parked behind the waiting origin makes the lane's timer sooner.
        assert_eq!(lanes.next_wake(now), Some(Duration::ZERO));
        let (_, p) = lanes.take_ready(now, readiness).expect("http is ready");
        assert_eq!(p.id(), LinkId(2));
        lanes.start("a");
        lanes.finish("a", now, readiness);
        let (_, p) = lanes.take_ready(now, readiness).expect("http is ready");
        assert_eq!(p.id(), LinkId(3));
        lanes.start("a");
        lanes.finish("a", now, readiness);
        assert!(
            lanes.take_ready(now, readiness).is_none(),
            "https still waits"
        );
        assert_eq!(lanes.next_wake(now), Some(wait));
        let later = now + wait;
        let got = lanes.take_ready(later, |_: &Parked| Readiness::Now);
        assert_eq!(got.map(|(_, p)| p.id()), Some(LinkId(1)));
    }

    #[test]
    fn a_lane_inside_its_delay_wakes_when_it_ends() {
        let now = Instant::now();
        let mut lanes = Lanes::default();
        let wait = |_: &Parked| Readiness::After(Duration::from_millis(300));
        lanes.park("a".into(), parked(1, "a"), now, wait);
        assert!(lanes.take_ready(now, wait).is_none());
        assert_eq!(lanes.next_wake(now), Some(Duration::from_millis(300)));
        let later = now + Duration::from_millis(300);
        let got = lanes.take_ready(later, |_: &Parked| Readiness::Now);
        assert_eq!(got.map(|(_, p)| p.id()), Some(LinkId(1)));
    }

    #[test]
    fn heads_of_one_lane_keep_their_order_and_the_oldest_step_goes_first_at_the_end() {
        let now = Instant::now();
        let ready = |_: &Parked| Readiness::Now;
        let mut lanes = Lanes::default();
        for id in [5, 3, 9] {
            lanes.park("a".into(), parked(id, "a"), now, ready);
        }
        let (_, first) = lanes.take_ready(now, ready).expect("ready");
        assert_eq!(first.id(), LinkId(5), "ask order within a lane");
        let (_, oldest) = lanes.take_any_ask().expect("a is not busy");
        assert_eq!(oldest.id(), LinkId(3));
        lanes.start("a");
        assert!(lanes.take_any_ask().is_none(), "a is busy");
        let rest: Vec<LinkId> = lanes.drain().iter().map(Parked::id).collect();
        assert_eq!(rest, vec![LinkId(9)]);
        assert_eq!(lanes.parked(), 0);
    }
}
