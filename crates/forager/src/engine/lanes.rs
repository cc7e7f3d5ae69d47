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
//! Pure bookkeeping: when a lane is ready is asked of a caller's closure (the
//! fetcher's host table), never of the network or the clock inside.

use forager_core::job::{Held, Readiness};
use forager_core::link::{Link, LinkId};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
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

/// The lanes of one job. See the module documentation.
#[derive(Default)]
pub struct Lanes {
    queues: HashMap<String, VecDeque<Parked>>,
    /// Lanes with waiting links and no step of this job on them, by when they may be ready.
    timers: BinaryHeap<Reverse<(Instant, u64, String)>>,
    scheduled: HashSet<String>,
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
        self.schedule(&lane, now, &readiness);
    }

    /// Arm the lane's timer if it has waiting links and no step on it.
    fn schedule(&mut self, lane: &str, now: Instant, readiness: &impl Fn(&Parked) -> Readiness) {
        if self.is_busy(lane) || self.scheduled.contains(lane) {
            return;
        }
        let Some(first) = self.queues.get(lane).and_then(|q| q.front()) else {
            return;
        };
        let at = match readiness(first) {
            Readiness::Now => now,
            Readiness::After(d) => now + d,
            Readiness::Busy => now + BUSY_RECHECK,
        };
        self.sequence += 1;
        self.timers
            .push(Reverse((at, self.sequence, lane.to_string())));
        self.scheduled.insert(lane.to_string());
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
            let Reverse((_, _, lane)) = self.timers.pop()?;
            self.scheduled.remove(&lane);
            if self.is_busy(&lane) {
                continue; // armed again when its step ends
            }
            let Some(queue) = self.queues.get_mut(&lane) else {
                continue;
            };
            let Some(first) = queue.front() else {
                self.queues.remove(&lane);
                continue;
            };
            if readiness(first) != Readiness::Now {
                self.schedule(&lane, now, &readiness);
                continue;
            }
            let taken = queue.pop_front();
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
