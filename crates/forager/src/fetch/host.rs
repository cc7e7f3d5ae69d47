//! Per-host politeness state shared by every job: one request in flight, a
//! governor limiter for the gap between request starts, the adapted delay of
//! jobs that ask for one, and, per origin (scheme, host, port), Retry-After
//! blocks and the back-off of failures. A dead origin (an https port whose
//! TLS fails) so never holds back another origin of the same host (its http
//! port): only the in-flight gate and the delay are the host's. The formulas
//! are `forager_core::politeness`'s. The table forgets idle hosts so it
//! stays bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use governor::clock::{Clock, MonotonicClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use forager_core::politeness::{AdaptiveDelay, BackoffPolicy, FailureCount};

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

/// The period a claim of `wanted` stands for (see [`START_MARGIN`]).
fn with_margin(wanted: Duration) -> Duration {
    if wanted.is_zero() {
        Duration::ZERO
    } else {
        wanted.saturating_add(START_MARGIN)
    }
}

/// How often the table looks for idle hosts to forget.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The back-off unit of a host with no delay: a failing server is not asked
/// again at once (the failed link comes back for another try).
const MIN_FAILURE_BACKOFF: Duration = Duration::from_millis(250);

/// Largest exponent of the back-off after failures that are all
/// [`Outcome::ServerError`]s.
const SERVER_ERROR_MAX_EXPONENT: u32 = 4;

/// Origins of one key whose failures are tracked; beyond, the one least
/// blocked goes (its next failure starts its count again).
const MAX_ORIGINS_PER_KEY: usize = 16;

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
    /// Failures and blocks of the key's origins (at most [`MAX_ORIGINS_PER_KEY`]).
    origins: Vec<OriginBlock>,
    /// The delay adapted to the host's response time, for the jobs that ask
    /// for one (each clamps it to its own bounds); `None` before an answer.
    adapted: Option<Duration>,
    last_used: Instant,
}

/// The back-off state of one origin of a key.
#[derive(Debug)]
struct OriginBlock {
    /// `scheme://host:port` ([`super::origin_key`]).
    origin: String,
    failures: FailureCount,
    blocked_until: Option<Instant>,
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
            origins: Vec::new(),
            adapted: None,
            last_used: now,
        }
    }

    fn origin(&self, origin: &str) -> Option<&OriginBlock> {
        self.origins.iter().find(|o| o.origin == origin)
    }

    /// The block state of `origin`, created when new (the least blocked
    /// one goes when the key tracks too many).
    fn origin_mut(&mut self, origin: &str, now: Instant) -> &mut OriginBlock {
        if let Some(i) = self.origins.iter().position(|o| o.origin == origin) {
            return &mut self.origins[i];
        }
        if self.origins.len() >= MAX_ORIGINS_PER_KEY {
            let least = self
                .origins
                .iter()
                .enumerate()
                .min_by_key(|(_, o)| o.blocked_until.filter(|b| *b > now))
                .map(|(i, _)| i);
            if let Some(i) = least {
                self.origins.swap_remove(i);
            }
        }
        self.origins.push(OriginBlock {
            origin: origin.to_string(),
            failures: FailureCount::default(),
            blocked_until: None,
        });
        let last = self.origins.len() - 1;
        &mut self.origins[last]
    }

    /// How long `origin` is still blocked at `now`.
    fn origin_wait(&self, origin: &str, now: Instant) -> Duration {
        self.origin(origin)
            .and_then(|o| o.blocked_until)
            .map_or(Duration::ZERO, |until| until.saturating_duration_since(now))
    }

    /// Records the period run `run` wants; the host's period becomes the
    /// largest claim still live (a claim nobody re-asserts expires).
    fn adopt_period(&mut self, run: u64, wanted: Duration, now: Instant) {
        let wanted = with_margin(wanted);
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

    /// The period [`HostState::adopt_period`] would settle on if run `run`
    /// claimed `wanted` at `now`: its own earlier claim is replaced, not
    /// kept, so a delay that shrinks (the adaptive delay coming down) is
    /// seen by the very request that adopts it, not one request late.
    fn period_if_adopted(&self, run: u64, wanted: Duration, now: Instant) -> Duration {
        self.claims
            .iter()
            .filter(|c| {
                c.run != run && now.saturating_duration_since(c.asserted_at) < PERIOD_STALE_AFTER
            })
            .map(|c| c.period)
            .fold(with_margin(wanted), Duration::max)
    }

    /// Either records a request start now (`None`) or says how long to wait.
    pub(crate) fn try_start(
        &mut self,
        run: u64,
        wanted: Duration,
        origin: &str,
        now: Instant,
    ) -> Option<Duration> {
        self.last_used = now;
        self.adopt_period(run, wanted, now);
        let blocked = self.origin_wait(origin, now);
        if !blocked.is_zero() {
            return Some(blocked);
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

    /// How long until [`HostState::try_start`] could start a request of run
    /// `run` for `wanted`, without recording anything; zero when it could now.
    pub(crate) fn wait_for(
        &self,
        run: u64,
        wanted: Duration,
        origin: &str,
        now: Instant,
    ) -> Duration {
        let period = self.period_if_adopted(run, wanted, now);
        let mut wait = self.origin_wait(origin, now);
        if let Some(last) = self.last_start.filter(|_| !period.is_zero()) {
            wait = wait.max((last + period).saturating_duration_since(now));
        }
        wait
    }

    /// Updates the failures and block of `origin` from the outcome of an
    /// exchange: failures back off by `policy` (with `draw`, uniform in
    /// `[0, 1)`, for its jitter), a Retry-After blocks for what the server
    /// asked, at most `retry_cap`.
    pub(crate) fn record(
        &mut self,
        outcome: Outcome,
        origin: &str,
        now: Instant,
        retry_cap: Duration,
        policy: &BackoffPolicy,
        draw: f64,
    ) {
        self.last_used = now;
        let period = self.period;
        let o = self.origin_mut(origin, now);
        let backoff = match outcome {
            Outcome::Success => {
                o.failures.succeed();
                return;
            }
            Outcome::Failure => {
                let n = o.failures.fail(now, policy);
                policy.backoff(period.max(MIN_FAILURE_BACKOFF), n, draw)
            }
            Outcome::ServerError => {
                let n = o.failures.fail(now, policy);
                let exp = (n - 1).min(SERVER_ERROR_MAX_EXPONENT);
                policy.backoff(period, exp, draw)
            }
            Outcome::RetryAfter(wait) => {
                o.failures.fail(now, policy);
                // The server said how long: no jitter, no doubling.
                wait.min(retry_cap)
            }
        };
        if !backoff.is_zero() {
            o.block_until(now + backoff);
        }
    }

    /// Hold `origin` back until `until` without counting a failure (its
    /// robots.txt is cached as unavailable until then).
    pub(crate) fn block_origin(&mut self, origin: &str, until: Instant, now: Instant) {
        self.last_used = now;
        self.origin_mut(origin, now).block_until(until);
    }

    /// How long `origin` is still blocked by Retry-After or back-off.
    pub(crate) fn blocked_for(&self, origin: &str, now: Instant) -> Option<Duration> {
        Some(self.origin_wait(origin, now)).filter(|d| !d.is_zero())
    }

    /// The longest block of any origin of the key.
    pub(crate) fn longest_block(&self, now: Instant) -> Option<Duration> {
        self.origins
            .iter()
            .filter_map(|o| o.blocked_until)
            .map(|until| until.saturating_duration_since(now))
            .filter(|d| !d.is_zero())
            .max()
    }

    /// The adapted delay for a job with `policy`: its floor until the host answered.
    pub(crate) fn adapted(&self, policy: &AdaptiveDelay) -> Duration {
        self.adapted.map_or(policy.min, |d| policy.clamp(d))
    }

    /// An answer (or a failure: `ok` false) that took `latency` adapts the delay.
    pub(crate) fn observe_latency(&mut self, latency: Duration, ok: bool, policy: &AdaptiveDelay) {
        self.adapted = Some(policy.next(self.adapted, latency, ok));
    }

    /// Whether forgetting this state would lose nothing but failure counts.
    fn is_quiet(&self, now: Instant) -> bool {
        let unblocked = self.longest_block(now).is_none();
        let spaced = self.last_start.is_none_or(|s| s + self.period <= now);
        unblocked && spaced
    }

    #[cfg(test)]
    pub(crate) fn period(&self) -> Duration {
        self.period
    }

    #[cfg(test)]
    pub(crate) fn failures(&self, origin: &str) -> u32 {
        self.origin(origin).map_or(0, |o| {
            o.failures.count(Instant::now(), &BackoffPolicy::default())
        })
    }
}

impl OriginBlock {
    fn block_until(&mut self, until: Instant) {
        self.blocked_until = Some(self.blocked_until.map_or(until, |b| b.max(until)));
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
        origin: &str,
    ) -> Result<OwnedSemaphorePermit, FetchError> {
        // An origin held back waits before it takes the key's permit: held
        // while it waits, the permit would hold the host's other origins.
        loop {
            let blocked = self.state().blocked_for(origin, Instant::now());
            match blocked {
                Some(d) => tokio::time::sleep(d).await,
                None => break,
            }
        }
        let permit = self
            .gate
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| FetchError::Shutdown)?;
        loop {
            let wait = self.state().try_start(run, wanted, origin, Instant::now());
            match wait {
                None => return Ok(permit),
                // Never spin on a zero wait the clock has not caught up with.
                Some(d) => tokio::time::sleep(d.max(Duration::from_micros(100))).await,
            }
        }
    }

    /// Records an exchange's outcome for `origin` (see [`HostState::record`]),
    /// drawing the jitter here.
    pub(crate) fn record(
        &self,
        outcome: Outcome,
        origin: &str,
        retry_cap: Duration,
        policy: &BackoffPolicy,
    ) {
        let draw = rand::random::<f64>();
        self.state()
            .record(outcome, origin, Instant::now(), retry_cap, policy, draw);
    }

    /// When a request for `wanted` to `origin` could start: `None` while one
    /// is in flight on the key.
    pub(crate) fn readiness(
        &self,
        run: u64,
        wanted: Duration,
        origin: &str,
        now: Instant,
    ) -> Option<Duration> {
        if self.gate.available_permits() == 0 {
            return None;
        }
        Some(self.state().wait_for(run, wanted, origin, now))
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
    /// The origin the tests fail.
    const O: &str = "http://a.test:80";

    /// A back-off capped at `max`, without jitter (the tests draw 0).
    fn policy(max: Duration) -> BackoffPolicy {
        BackoffPolicy {
            max,
            forgive_after: Duration::from_secs(3600),
            jitter: 0.25,
        }
    }

    /// Records `outcome` at `at`, with Retry-After and back-off both capped
    /// at `cap` and no jitter.
    fn record(s: &mut HostState, outcome: Outcome, origin: &str, at: Instant, cap: Duration) {
        s.record(outcome, origin, at, cap, &policy(cap), 0.0);
    }

    #[test]
    fn a_shrinking_delay_is_seen_by_the_request_that_adopts_it() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        s.adopt_period(1, 250 * MS, t0);
        s.last_start = Some(t0);
        // Run 1's delay came down to 100 ms: its next request waits for that,
        // not for the 250 ms it claimed before.
        let wait = s.wait_for(1, 100 * MS, O, t0 + 50 * MS);
        assert_eq!(wait, 50 * MS + START_MARGIN);
        // Another run's live claim still holds the host to its larger delay.
        s.adopt_period(2, 250 * MS, t0);
        assert_eq!(
            s.wait_for(1, 100 * MS, O, t0 + 50 * MS),
            200 * MS + START_MARGIN
        );
        // A stale one no longer does.
        let later = t0 + PERIOD_STALE_AFTER + 50 * MS;
        s.last_start = Some(later - 50 * MS);
        assert_eq!(s.wait_for(1, 100 * MS, O, later), 50 * MS + START_MARGIN);
    }

    #[test]
    fn wait_for_agrees_with_try_start() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        assert_eq!(s.wait_for(1, 100 * MS, O, t0), Duration::ZERO);
        assert_eq!(s.try_start(1, 100 * MS, O, Instant::now()), None);
        let now = Instant::now();
        let wait = s.wait_for(1, 100 * MS, O, now);
        assert!(wait > 90 * MS && wait <= 101 * MS, "{wait:?}");
        assert_eq!(s.wait_for(1, 100 * MS, O, now + 200 * MS), Duration::ZERO);
        record(
            &mut s,
            Outcome::RetryAfter(Duration::from_secs(5)),
            O,
            now,
            Duration::from_secs(60),
        );
        assert!(s.wait_for(1, Duration::ZERO, O, now) >= Duration::from_secs(4));
    }

    #[test]
    fn zero_delay_never_waits() {
        let now = Instant::now();
        let mut s = HostState::new(now);
        for _ in 0..100 {
            assert_eq!(s.try_start(1, Duration::ZERO, O, now), None);
        }
    }

    #[test]
    fn second_start_waits_for_the_period() {
        let mut s = HostState::new(Instant::now());
        assert_eq!(s.try_start(1, 100 * MS, O, Instant::now()), None);
        let wait = s.try_start(1, 100 * MS, O, Instant::now()).unwrap();
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
        assert_eq!(s.try_start(1, 50 * MS, O, Instant::now()), None);
        // A job with a larger delay arrives: the fresh limiter would allow a burst.
        let wait = s.try_start(2, 200 * MS, O, Instant::now()).unwrap();
        assert!(wait > 150 * MS, "{wait:?}");
    }

    #[test]
    fn failures_back_off_exponentially_and_reset() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        s.adopt_period(1, 500 * MS, t0);
        let p = s.period();
        record(&mut s, Outcome::Failure, O, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(O, t0), Some(p * 2));
        record(&mut s, Outcome::Failure, O, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(O, t0), Some(p * 4));
        record(&mut s, Outcome::Failure, O, t0, Duration::from_millis(500));
        assert_eq!(s.blocked_for(O, t0), Some(p * 4), "a block never shrinks");
        for _ in 0..100 {
            record(&mut s, Outcome::Failure, O, t0, Duration::from_secs(600));
        }
        assert_eq!(
            s.blocked_for(O, t0),
            Some(Duration::from_secs(600)),
            "capped"
        );
        record(&mut s, Outcome::Success, O, t0, Duration::from_secs(600));
        assert_eq!(s.failures(O), 0);
    }

    #[test]
    fn server_errors_back_off_less_than_outages() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        record(
            &mut s,
            Outcome::ServerError,
            O,
            t0,
            Duration::from_secs(600),
        );
        assert_eq!(
            s.blocked_for(O, t0),
            None,
            "no delay, one broken page: no wait"
        );
        let mut s = HostState::new(t0);
        s.adopt_period(1, 500 * MS, t0);
        let unit = s.period();
        record(
            &mut s,
            Outcome::ServerError,
            O,
            t0,
            Duration::from_secs(600),
        );
        assert_eq!(s.blocked_for(O, t0), Some(unit), "the first: the delay");
        for _ in 0..10 {
            record(
                &mut s,
                Outcome::ServerError,
                O,
                t0,
                Duration::from_secs(600),
            );
        }
        assert_eq!(
            s.blocked_for(O, t0),
            Some(unit * (1 << SERVER_ERROR_MAX_EXPONENT))
        );
        let t1 = t0 + Duration::from_secs(60);
        record(&mut s, Outcome::Failure, O, t1, Duration::from_secs(600));
        assert_eq!(
            s.blocked_for(O, t1),
            Some(Duration::from_secs(600)),
            "an outage escalates, to the cap"
        );
    }

    #[test]
    fn retry_after_blocks_clamped() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        record(
            &mut s,
            Outcome::RetryAfter(Duration::from_secs(3600)),
            O,
            t0,
            Duration::from_secs(5),
        );
        assert_eq!(s.blocked_for(O, t0), Some(Duration::from_secs(5)));
        let wait = s
            .try_start(1, Duration::ZERO, O, t0 + Duration::from_secs(1))
            .unwrap();
        assert_eq!(wait, Duration::from_secs(4));
        assert_eq!(
            s.try_start(1, Duration::ZERO, O, t0 + Duration::from_secs(5)),
            None
        );
    }

    /// An https origin whose TLS fails must not hold back the http origin
    /// of the same host: only the gate and the delay are shared.
    #[test]
    fn a_failing_origin_never_holds_another_origin_of_its_host() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        let dead = "https://a.test:443";
        for _ in 0..6 {
            record(&mut s, Outcome::Failure, dead, t0, Duration::from_secs(600));
        }
        assert!(s
            .blocked_for(dead, t0)
            .is_some_and(|d| d >= Duration::from_secs(16)));
        assert_eq!(s.blocked_for(O, t0), None);
        assert_eq!(s.wait_for(1, Duration::ZERO, O, t0), Duration::ZERO);
        assert_eq!(s.try_start(1, Duration::ZERO, O, t0), None);
        assert!(s.try_start(1, Duration::ZERO, dead, t0).is_some());
        assert_eq!(s.longest_block(t0), s.blocked_for(dead, t0));
        assert_eq!(s.failures(O), 0);
        // A robots.txt block counts no failure, and is the origin's alone.
        s.block_origin(O, t0 + Duration::from_secs(3), t0);
        assert_eq!(s.failures(O), 0);
        assert_eq!(s.blocked_for(O, t0), Some(Duration::from_secs(3)));
    }

    #[test]
    fn the_origins_of_a_key_stay_bounded() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        for i in 0..100 {
            let origin = format!("http://h{i}.a.test:80");
            record(
                &mut s,
                Outcome::Failure,
                &origin,
                t0,
                Duration::from_secs(600),
            );
        }
        assert!(s.origins.len() <= MAX_ORIGINS_PER_KEY);
    }

    #[test]
    fn backoff_has_jitter_and_is_forgiven_after_a_quiet_time() {
        let t0 = Instant::now();
        let p = BackoffPolicy {
            max: Duration::from_secs(3600),
            forgive_after: Duration::from_secs(60),
            jitter: 0.25,
        };
        let mut s = HostState::new(t0);
        s.record(Outcome::Failure, O, t0, Duration::from_secs(600), &p, 0.0);
        s.record(Outcome::Failure, O, t0, Duration::from_secs(600), &p, 0.0);
        assert_eq!(s.blocked_for(O, t0), Some(MIN_FAILURE_BACKOFF * 4));
        let mut j = HostState::new(t0);
        j.record(Outcome::Failure, O, t0, Duration::from_secs(600), &p, 0.0);
        j.record(Outcome::Failure, O, t0, Duration::from_secs(600), &p, 0.99);
        let b = j.blocked_for(O, t0).unwrap();
        // The first block (0.5 s, no jitter) is shorter than the jittered second.
        assert!(
            b < MIN_FAILURE_BACKOFF * 4 && b >= MIN_FAILURE_BACKOFF * 3,
            "{b:?}"
        );
        // A minute without failure: the next one counts as the first.
        let later = t0 + Duration::from_secs(61);
        s.record(
            Outcome::Failure,
            O,
            later,
            Duration::from_secs(600),
            &p,
            0.0,
        );
        assert_eq!(s.blocked_for(O, later), Some(MIN_FAILURE_BACKOFF * 2));
    }

    #[test]
    fn the_adapted_delay_follows_the_host_within_each_jobs_bounds() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        let slow = AdaptiveDelay {
            min: 100 * MS,
            max: 2000 * MS,
            factor: 1.0,
        };
        let tight = AdaptiveDelay {
            max: 300 * MS,
            ..slow
        };
        assert_eq!(s.adapted(&slow), 100 * MS, "the floor before any answer");
        s.observe_latency(800 * MS, true, &slow);
        assert_eq!(s.adapted(&slow), 800 * MS);
        assert_eq!(s.adapted(&tight), 300 * MS, "each job's own ceiling");
        s.observe_latency(10 * MS, false, &slow);
        assert_eq!(s.adapted(&slow), 800 * MS, "an error never lowers it");
        s.observe_latency(10 * MS, true, &slow);
        assert!(s.adapted(&slow) < 800 * MS);
    }

    #[test]
    fn zero_period_failures_still_back_off() {
        let t0 = Instant::now();
        let mut s = HostState::new(t0);
        record(&mut s, Outcome::Failure, O, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(O, t0), Some(MIN_FAILURE_BACKOFF * 2));
        record(&mut s, Outcome::Failure, O, t0, Duration::from_secs(600));
        assert_eq!(s.blocked_for(O, t0), Some(MIN_FAILURE_BACKOFF * 4));
        assert_eq!(s.failures(O), 2);
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
            O,
            Duration::from_secs(600),
            &policy(Duration::from_secs(600)),
        );
        for i in 0..100u64 {
            drop(table.slot(&format!("h{i}.test"), t0));
        }
        assert!(table.get("blocked.test").is_some());
    }
}
