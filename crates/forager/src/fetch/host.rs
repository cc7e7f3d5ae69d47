//! Per-host politeness state shared by every job: one request in flight, a
//! governor limiter for the gap between request starts, Retry-After blocks and
//! exponential back-off. The table forgets idle hosts so it stays bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use governor::clock::{Clock, MonotonicClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::FetchError;

/// A direct (un-keyed) limiter on std's monotonic clock, the clock tokio sleeps on.
type Limiter = RateLimiter<NotKeyed, InMemoryState, MonotonicClock, NoOpMiddleware<Instant>>;

/// Added to every non-zero period: starts are spaced on the client, and the
/// first request on a fresh connection reaches the server a connect later than
/// the next one on the pooled connection, so without it the server could see a
/// gap a fraction of a millisecond short of the delay.
const START_MARGIN: Duration = Duration::from_millis(1);

/// A larger period set by one job is dropped when no request asked for it this long.
const PERIOD_STALE_AFTER: Duration = Duration::from_secs(300);

/// How often the table looks for idle hosts to forget.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The back-off unit of a host with no delay: a failing server is not asked
/// again at once (the failed link comes back for another try).
const MIN_FAILURE_BACKOFF: Duration = Duration::from_millis(250);

/// Largest exponent of the back-off, so `period · 2^n` cannot overflow.
const MAX_BACKOFF_EXPONENT: u32 = 20;

/// Largest exponent of the back-off after failures that are all
/// [`Outcome::ServerError`]s.
const SERVER_ERROR_MAX_EXPONENT: u32 = 4;

/// What one exchange told us about the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The host answered (2xx–4xx except 429).
    Success,
    /// Connection error, timeout, 502/503/504, 429 without Retry-After,
    /// broken body: the host may be down or overloaded.
    Failure,
    /// Another 5xx (500 above all, see [`super::is_page_error`]): the host
    /// is up, one of its pages broke. Counts as a failure, but its back-off
    /// is the host's delay doubled for each one in a row but the first, at
    /// most 2^[`SERVER_ERROR_MAX_EXPONENT`] times: a site with a few broken
    /// pages is not slowed down, one whose every page breaks is.
    ServerError,
    /// 429/503 with a Retry-After of this (already clamped) length.
    RetryAfter(Duration),
}

/// The mutable politeness state of one host key.
#[derive(Debug)]
pub(crate) struct HostState {
    /// Current minimum gap between request starts (margin included); zero =
    /// no limiter. Always the largest live claim.
    period: Duration,
    /// The period each crawl run using the host asks for: the strictest run
    /// that uses the host *now* sets the pace, and a run's claim goes when it
    /// ends ([`HostState::release`]) or when it stops asking for a while.
    claims: Vec<Claim>,
    limiter: Option<Arc<Limiter>>,
    last_start: Option<Instant>,
    blocked_until: Option<Instant>,
    failures: u32,
    last_used: Instant,
}

/// One run's wanted period on a host.
#[derive(Clone, Copy, Debug)]
struct Claim {
    run: u64,
    period: Duration,
    asserted_at: Instant,
}

impl std::fmt::Debug for HostSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSlot")
            .field("state", &*self.state())
            .finish_non_exhaustive()
    }
}

impl HostState {
    fn new(now: Instant) -> Self {
        HostState {
            period: Duration::ZERO,
            claims: Vec::new(),
            limiter: None,
            last_start: None,
            blocked_until: None,
            failures: 0,
            last_used: now,
        }
    }

    /// Records the period run `run` wants; the host's period becomes the
    /// largest claim still live (a claim nobody re-asserts expires).
    fn adopt_period(&mut self, run: u64, wanted: Duration, now: Instant) {
        let wanted = if wanted.is_zero() {
            Duration::ZERO
        } else {
            wanted.saturating_add(START_MARGIN)
        };
        match self.claims.iter_mut().find(|c| c.run == run) {
            Some(c) => {
                c.period = wanted;
                c.asserted_at = now;
            }
            None => self.claims.push(Claim {
                run,
                period: wanted,
                asserted_at: now,
            }),
        }
        self.claims
            .retain(|c| now.saturating_duration_since(c.asserted_at) < PERIOD_STALE_AFTER);
        self.settle_period();
    }

    /// Run `run` ended: its claim goes, and the pace follows the runs left.
    pub(crate) fn release(&mut self, run: u64) {
        let before = self.claims.len();
        self.claims.retain(|c| c.run != run);
        if self.claims.len() != before {
            self.settle_period();
        }
    }

    fn settle_period(&mut self) {
        let period = self
            .claims
            .iter()
            .map(|c| c.period)
            .max()
            .unwrap_or(Duration::ZERO);
        if period != self.period {
            self.period = period;
            self.limiter = Quota::with_period(period)
                .map(|q| Arc::new(RateLimiter::direct_with_clock(q, MonotonicClock)));
        }
    }

    /// Either records a request start now (`None`) or says how long to wait.
    pub(crate) fn try_start(
        &mut self,
        run: u64,
        wanted: Duration,
        now: Instant,
    ) -> Option<Duration> {
        self.last_used = now;
        self.adopt_period(run, wanted, now);
        if let Some(until) = self.blocked_until {
            if until > now {
                return Some(until - now);
            }
            self.blocked_until = None;
        }
        // A limiter swapped in by `adopt_period` starts with a full burst, so
        // the last start must bridge the swap.
        if let Some(last) = self.last_start.filter(|_| !self.period.is_zero()) {
            let next = last + self.period;
            if next > now {
                return Some(next - now);
            }
        }
        if let Some(limiter) = &self.limiter {
            if let Err(not_until) = limiter.check() {
                return Some(not_until.wait_time_from(MonotonicClock.now()));
            }
        }
        // Taken after the limiter's own clock read, so the next guard above never
        // lets a request through that the limiter would still refuse.
        self.last_start = Some(Instant::now());
        None
    }

    /// How long until [`HostState::try_start`] could start a request for
    /// `wanted`, without recording anything; zero when it could now.
    pub(crate) fn wait_for(&self, wanted: Duration, now: Instant) -> Duration {
        let wanted = if wanted.is_zero() {
            Duration::ZERO
        } else {
            wanted.saturating_add(START_MARGIN)
        };
        let period = self.period.max(wanted);
        let mut wait = self
            .blocked_until
            .map_or(Duration::ZERO, |until| until.saturating_duration_since(now));
        if let Some(last) = self.last_start.filter(|_| !period.is_zero()) {
            wait = wait.max((last + period).saturating_duration_since(now));
        }
        wait
    }

    /// Updates failures and blocks from the outcome of an exchange.
    pub(crate) fn record(&mut self, outcome: Outcome, now: Instant, max_backoff: Duration) {
        self.last_used = now;
        match outcome {
            Outcome::Success => self.failures = 0,
            Outcome::Failure => {
                self.failures = self.failures.saturating_add(1);
                let exp = self.failures.min(MAX_BACKOFF_EXPONENT);
                let unit = self.period.max(MIN_FAILURE_BACKOFF);
                let backoff = unit.saturating_mul(1 << exp).min(max_backoff);
                if !backoff.is_zero() {
                    self.block_until(now + backoff);
                }
            }
            Outcome::ServerError => {
                self.failures = self.failures.saturating_add(1);
                let exp = (self.failures - 1).min(SERVER_ERROR_MAX_EXPONENT);
                let backoff = self.period.saturating_mul(1 << exp).min(max_backoff);
                if !backoff.is_zero() {
                    self.block_until(now + backoff);
                }
            }
            Outcome::RetryAfter(wait) => {
                self.failures = self.failures.saturating_add(1);
                self.block_until(now + wait.min(max_backoff));
            }
        }
    }

    fn block_until(&mut self, until: Instant) {
        self.blocked_until = Some(self.blocked_until.map_or(until, |b| b.max(until)));
    }

    /// How long the host is still blocked by Retry-After or back-off.
    pub(crate) fn blocked_for(&self, now: Instant) -> Option<Duration> {
        self.blocked_until
            .filter(|b| *b > now)
            .map(|b| b.saturating_duration_since(now))
    }

    /// Whether forgetting this state would lose nothing but the failure count.
    fn is_quiet(&self, now: Instant) -> bool {
        let unblocked = self.blocked_until.is_none_or(|b| b <= now);
        let spaced = self.last_start.is_none_or(|s| s + self.period <= now);
        unblocked && spaced
    }

    #[cfg(test)]
    pub(crate) fn period(&self) -> Duration {
        self.period
    }

    #[cfg(test)]
    pub(crate) fn failures(&self) -> u32 {
        self.failures
    }
}

/// One host key: its in-flight gate and its state.
pub(crate) struct HostSlot {
    /// One permit: at most one request in flight per host key.
    gate: Arc<Semaphore>,
    state: Mutex<HostState>,
}

impl HostSlot {
    fn new(now: Instant) -> Self {
        HostSlot {
            gate: Arc::new(Semaphore::new(1)),
            state: Mutex::new(HostState::new(now)),
        }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, HostState> {
        // The state is a few plain fields, consistent after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for this host's turn: the in-flight permit first, then blocks and
    /// the limiter. The permit is returned to the caller, who holds it until
    /// the response body is done.
    pub(crate) async fn acquire(
        &self,
        run: u64,
        wanted: Duration,
    ) -> Result<OwnedSemaphorePermit, FetchError> {
        let permit = self
            .gate
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| FetchError::Shutdown)?;
        loop {
            let wait = self.state().try_start(run, wanted, Instant::now());
            match wait {
                None => return Ok(permit),
                // Never spin on a zero wait the clock has not caught up with.
                Some(d) => tokio::time::sleep(d.max(Duration::from_micros(100))).await,
            }
        }
    }

    pub(crate) fn record(&self, outcome: Outcome, max_backoff: Duration) {
        self.state().record(outcome, Instant::now(), max_backoff);
    }

    /// When a request for `wanted` could start: `None` while one is in flight.
    pub(crate) fn readiness(&self, wanted: Duration, now: Instant) -> Option<Duration> {
        if self.gate.available_permits() == 0 {
            return None;
        }
        Some(self.state().wait_for(wanted, now))
    }

    /// Moves the last request start to now (see [`super::Fetcher::send`]).
    pub(crate) fn mark_answered(&self) {
        let mut state = self.state();
        if state.last_start.is_some() {
            state.last_start = Some(Instant::now());
        }
    }
}

struct Slots {
    map: HashMap<String, Arc<HostSlot>>,
    last_sweep: Instant,
}

/// Host key → politeness slot, bounded: quiet hosts are forgotten after
/// `idle_ttl`, and beyond `max_hosts` the least recently used quiet ones go.
pub(crate) struct HostTable {
    slots: Mutex<Slots>,
    idle_ttl: Duration,
    max_hosts: usize,
}

impl HostTable {
    pub(crate) fn new(idle_ttl: Duration, max_hosts: usize) -> Self {
        HostTable {
            slots: Mutex::new(Slots {
                map: HashMap::new(),
                last_sweep: Instant::now(),
            }),
            idle_ttl,
            max_hosts: max_hosts.max(1),
        }
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The slot of `key`, created on first use.
    pub(crate) fn slot(&self, key: &str, now: Instant) -> Arc<HostSlot> {
        let mut slots = self.slots();
        let due = now.saturating_duration_since(slots.last_sweep) >= SWEEP_EVERY;
        if due || slots.map.len() >= self.max_hosts {
            self.sweep(&mut slots, now);
        }
        if let Some(slot) = slots.map.get(key) {
            return Arc::clone(slot);
        }
        let slot = Arc::new(HostSlot::new(now));
        slots.map.insert(key.to_string(), Arc::clone(&slot));
        slot
    }

    /// Run `run` ended: drop its claims on every host.
    pub(crate) fn release(&self, run: u64) {
        let slots: Vec<Arc<HostSlot>> = self.slots().map.values().cloned().collect();
        for slot in slots {
            slot.state().release(run);
        }
    }

    /// The slot of `key` if it exists (no creation).
    pub(crate) fn get(&self, key: &str) -> Option<Arc<HostSlot>> {
        self.slots().map.get(key).cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.slots().map.len()
    }

    fn sweep(&self, slots: &mut Slots, now: Instant) {
        slots.last_sweep = now;
        // Clones only happen under the table lock, so a count of 1 means no
        // request or response holds the slot right now.
        let evictable =
            |slot: &Arc<HostSlot>| Arc::strong_count(slot) == 1 && slot.state().is_quiet(now);
        let idle_ttl = self.idle_ttl;
        slots.map.retain(|_, slot| {
            let idle = now.saturating_duration_since(slot.state().last_used) >= idle_ttl;
            !(idle && evictable(slot))
        });
        if slots.map.len() < self.max_hosts {
            return;
        }
        // Over the cap: drop least recently used quiet hosts down to 3/4 of it,
        // so the next sweeps are not triggered at every insertion.
        let target = self.max_hosts * 3 / 4;
        let mut quiet: Vec<(Instant, String)> = slots
            .map
            .iter()
            .filter(|(_, slot)| evictable(slot))
            .map(|(key, slot)| (slot.state().last_used, key.clone()))
            .collect();
        quiet.sort_unstable();
        let excess = slots.map.len().saturating_sub(target);
        for (_, key) in quiet.into_iter().take(excess) {
            slots.map.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn wait_for_agrees_with_try_start() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        assert_eq!(s.wait_for(100 * MS, t0), Duration::ZERO);
        assert_eq!(s.try_start(1, 100 * MS, Instant::now()), None);
        let now = Instant::now();
        let wait = s.wait_for(100 * MS, now);
        assert!(wait > 90 * MS && wait <= 101 * MS, "{wait:?}");
        assert_eq!(s.wait_for(100 * MS, now + 200 * MS), Duration::ZERO);
        s.record(
            Outcome::RetryAfter(Duration::from_secs(5)),
            now,
            Duration::from_secs(60),
        );
        assert!(s.wait_for(Duration::ZERO, now) >= Duration::from_secs(4));
    }

    #[test]
    fn zero_delay_never_waits() {
        let now = Instant::now();
        let mut s = HostState::new(now);
        for _ in 0..100 {
            assert_eq!(s.try_start(1, Duration::ZERO, now), None);
        }
    }

    #[test]
    fn second_start_waits_for_the_period() {
        let mut s = HostState::new(Instant::now());
        assert_eq!(s.try_start(1, 100 * MS, Instant::now()), None);
        let wait = s.try_start(1, 100 * MS, Instant::now()).unwrap();
        assert!(wait > 90 * MS && wait <= 101 * MS, "{wait:?}");
    }

    #[test]
    fn larger_period_wins_and_expires_when_stale() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        s.adopt_period(1, 100 * MS, t0);
        s.adopt_period(2, 300 * MS, t0);
        assert_eq!(s.period(), 300 * MS + START_MARGIN);
        s.adopt_period(1, 100 * MS, t0 + Duration::from_secs(10));
        assert_eq!(
            s.period(),
            300 * MS + START_MARGIN,
            "a recent larger period must win"
        );
        s.adopt_period(
            1,
            100 * MS,
            t0 + PERIOD_STALE_AFTER + Duration::from_secs(1),
        );
        assert_eq!(s.period(), 100 * MS + START_MARGIN);
    }

    #[test]
    fn the_pace_follows_the_runs_using_the_host_now() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        s.adopt_period(1, 1000 * MS, t0);
        s.adopt_period(2, 300 * MS, t0);
        assert_eq!(
            s.period(),
            1000 * MS + START_MARGIN,
            "the strictest run wins"
        );
        // The 1 s job is edited to 300 ms: its old run ends, a new one starts.
        s.release(1);
        assert_eq!(
            s.period(),
            300 * MS + START_MARGIN,
            "the strictest run left"
        );
        s.adopt_period(3, 300 * MS, t0);
        assert_eq!(s.period(), 300 * MS + START_MARGIN);
        s.release(2);
        s.release(3);
        assert_eq!(s.period(), Duration::ZERO);
    }

    #[test]
    fn limiter_swap_keeps_the_gap_from_the_last_start() {
        let mut s = HostState::new(Instant::now());
        assert_eq!(s.try_start(1, 50 * MS, Instant::now()), None);
        // A job with a larger delay arrives: the fresh limiter would allow a burst.
        let wait = s.try_start(2, 200 * MS, Instant::now()).unwrap();
        assert!(wait > 150 * MS, "{wait:?}");
    }

    #[test]
    fn failures_back_off_exponentially_and_reset() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        s.adopt_period(1, 500 * MS, t0);
        let p = s.period();
        s.record(Outcome::Failure, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(t0), Some(p * 2));
        s.record(Outcome::Failure, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(t0), Some(p * 4));
        s.record(Outcome::Failure, t0, Duration::from_millis(500));
        assert_eq!(s.blocked_for(t0), Some(p * 4), "a block never shrinks");
        for _ in 0..100 {
            s.record(Outcome::Failure, t0, Duration::from_secs(600));
        }
        assert_eq!(s.blocked_for(t0), Some(Duration::from_secs(600)), "capped");
        s.record(Outcome::Success, t0, Duration::from_secs(600));
        assert_eq!(s.failures(), 0);
    }

    #[test]
    fn server_errors_back_off_less_than_outages() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        s.record(Outcome::ServerError, t0, Duration::from_secs(600));
        assert_eq!(
            s.blocked_for(t0),
            None,
            "no delay, one broken page: no wait"
        );
        let mut s = HostState::new(t0);
        s.adopt_period(1, 500 * MS, t0);
        let unit = s.period();
        s.record(Outcome::ServerError, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(t0), Some(unit), "the first: the delay");
        for _ in 0..10 {
            s.record(Outcome::ServerError, t0, Duration::from_secs(600));
        }
        assert_eq!(
            s.blocked_for(t0),
            Some(unit * (1 << SERVER_ERROR_MAX_EXPONENT))
        );
        let t1 = t0 + Duration::from_secs(60);
        s.record(Outcome::Failure, t1, Duration::from_secs(600));
        assert_eq!(
            s.blocked_for(t1),
            Some(Duration::from_secs(600)),
            "an outage escalates, to the cap"
        );
    }

    #[test]
    fn retry_after_blocks_clamped() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        s.record(
            Outcome::RetryAfter(Duration::from_secs(3600)),
            t0,
            Duration::from_secs(5),
        );
        assert_eq!(s.blocked_for(t0), Some(Duration::from_secs(5)));
        let wait = s
            .try_start(1, Duration::ZERO, t0 + Duration::from_secs(1))
            .unwrap();
        assert_eq!(wait, Duration::from_secs(4));
        assert_eq!(
            s.try_start(1, Duration::ZERO, t0 + Duration::from_secs(5)),
            None
        );
    }

    #[test]
    fn zero_period_failures_still_back_off() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        s.record(Outcome::Failure, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(t0), Some(MIN_FAILURE_BACKOFF * 2));
        s.record(Outcome::Failure, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(t0), Some(MIN_FAILURE_BACKOFF * 4));
        assert_eq!(s.failures(), 2);
    }

    #[test]
    fn table_forgets_idle_hosts_but_not_busy_ones() {
        let table = HostTable::new(Duration::from_secs(3600), 1000);
        let t0 = Instant::now();
        let held = table.slot("busy.test", t0);
        drop(table.slot("idle.test", t0));
        assert_eq!(table.len(), 2);
        // Two hours later the next access sweeps.
        let later = t0 + Duration::from_secs(7200);
        drop(table.slot("new.test", later));
        assert!(table.get("idle.test").is_none());
        assert!(table.get("busy.test").is_some(), "a held slot must survive");
        assert!(table.get("new.test").is_some());
        drop(held);
    }

    #[test]
    fn table_stays_bounded_by_lru() {
        let table = HostTable::new(Duration::from_secs(3600), 100);
        let t0 = Instant::now();
        for i in 0..1000u64 {
            drop(table.slot(&format!("h{i}.test"), t0 + Duration::from_millis(i)));
        }
        assert!(table.len() <= 100, "{}", table.len());
        assert!(table.get("h999.test").is_some(), "most recent kept");
        assert!(table.get("h0.test").is_none(), "least recent dropped");
    }

    #[test]
    fn table_keeps_blocked_hosts_under_pressure() {
        let table = HostTable::new(Duration::from_secs(3600), 10);
        let t0 = Instant::now();
        table.slot("blocked.test", t0).record(
            Outcome::RetryAfter(Duration::from_secs(60)),
            Duration::from_secs(600),
        );
        for i in 0..100u64 {
            drop(table.slot(&format!("h{i}.test"), t0));
        }
        assert!(table.get("blocked.test").is_some());
    }
}
