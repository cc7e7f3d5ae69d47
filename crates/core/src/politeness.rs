//! Politeness policies as pure arithmetic: the delay a host earns from how
//! long it takes to answer (an adaptive delay, off by default), and how long
//! an origin that keeps failing waits before it is asked again (back-off
//! with jitter, a cap, and forgiveness after a quiet time).
//!
//! Owns the formulas and their bounds, nothing else: no clock (callers pass
//! `Instant`s), no randomness (callers pass a uniform draw in `[0, 1)`), no
//! I/O. The fetcher (`forager::fetch`, its host table) keeps the state per
//! host and origin and applies these to it; the job file's `[politeness]`
//! table ([`crate::config`]) gives the numbers.

use std::time::{Duration, Instant};

/// A host's delay that follows its response time, within `[min, max]`.
///
/// The update is Scrapy's AutoThrottle with a target concurrency of
/// `1 / factor` (Heritrix calls `factor` its *delay factor*): the delay a
/// response asks for is `factor × latency`; the new delay is the mean of the
/// old one and that, so one slow answer does not triple the delay at once;
/// an answer that is an error (a 4xx/5xx, or none) may raise the delay but
/// never lowers it, since an error page comes back fast while the server
/// struggles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptiveDelay {
    /// The lowest delay: the job's `delay`.
    pub min: Duration,
    /// The highest delay: the job's `max_delay`.
    pub max: Duration,
    /// Delay per second of response time: the job's `delay_factor`.
    pub factor: f64,
}

impl AdaptiveDelay {
    /// The delay after an answer that took `latency`, from `current` (the
    /// host's adapted delay so far; `None` before its first answer).
    pub fn next(&self, current: Option<Duration>, latency: Duration, ok: bool) -> Duration {
        let asked = self.clamp(latency.mul_f64(self.factor.max(0.0)));
        let Some(current) = current else {
            // The first answer: nothing to average with.
            return if ok { asked } else { asked.max(self.min) };
        };
        let current = self.clamp(current);
        let mean = (current + asked) / 2;
        let next = if ok { mean } else { mean.max(current) };
        self.clamp(next)
    }

    /// `d` within `[min, max]` (a `max` below `min` counts as `min`).
    pub fn clamp(&self, d: Duration) -> Duration {
        d.clamp(self.min, self.max.max(self.min))
    }
}

/// How an origin that fails waits: `unit × 2^failures`, at most `max`, drawn
/// down by up to `jitter` of itself so that many crawlers (or many origins
/// of one crawler) that failed together do not all come back at the same
/// instant; the failures are forgiven once the origin has been quiet (no
/// failure) for `forgive_after`. StormCrawler's fetcher does the same to a
/// host that keeps erroring.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackoffPolicy {
    /// The longest back-off: the job's `max_backoff`.
    pub max: Duration,
    /// Quiet time after which an origin's failures are forgotten: the job's
    /// `forgive_after`.
    pub forgive_after: Duration,
    /// Share of a back-off that the draw may take off, in `[0, 1]`.
    pub jitter: f64,
}

/// Largest exponent of a back-off, so `unit · 2^n` cannot overflow.
pub const MAX_BACKOFF_EXPONENT: u32 = 20;

/// The jitter of [`BackoffPolicy::default`]: a back-off is drawn in
/// `[0.75 b, b]`, never longer than the doubling says.
pub const DEFAULT_JITTER: f64 = 0.25;

impl Default for BackoffPolicy {
    fn default() -> Self {
        BackoffPolicy {
            max: Duration::from_secs(3600),
            forgive_after: Duration::from_secs(600),
            jitter: DEFAULT_JITTER,
        }
    }
}

impl BackoffPolicy {
    /// The wait after `failures` failures in a row, at `unit` per doubling,
    /// with `draw` uniform in `[0, 1)`. Zero when `unit` is zero.
    pub fn backoff(&self, unit: Duration, failures: u32, draw: f64) -> Duration {
        let exp = failures.min(MAX_BACKOFF_EXPONENT);
        let full = unit.saturating_mul(1 << exp).min(self.max);
        let cut = self.jitter.clamp(0.0, 1.0) * draw.clamp(0.0, 1.0);
        full.mul_f64(1.0 - cut)
    }
}

/// The failures in a row of one origin, forgiven after a quiet time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailureCount {
    count: u32,
    last: Option<Instant>,
}

impl FailureCount {
    /// A failure at `now`; returns the count, this one included. Failures
    /// older than the policy's quiet time are forgiven first.
    pub fn fail(&mut self, now: Instant, policy: &BackoffPolicy) -> u32 {
        if self.forgiven(now, policy) {
            self.count = 0;
        }
        self.count = self.count.saturating_add(1);
        self.last = Some(now);
        self.count
    }

    /// The origin answered: its failures are over.
    pub fn succeed(&mut self) {
        *self = FailureCount::default();
    }

    /// Failures in a row as of `now` (zero once forgiven).
    pub fn count(&self, now: Instant, policy: &BackoffPolicy) -> u32 {
        if self.forgiven(now, policy) {
            0
        } else {
            self.count
        }
    }

    fn forgiven(&self, now: Instant, policy: &BackoffPolicy) -> bool {
        self.last
            .is_some_and(|last| now.saturating_duration_since(last) >= policy.forgive_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn adaptive() -> AdaptiveDelay {
        AdaptiveDelay {
            min: 100 * MS,
            max: 2000 * MS,
            factor: 1.0,
        }
    }

    #[test]
    fn the_delay_follows_a_slow_host_up_and_a_fast_one_down_within_its_bounds() {
        let a = adaptive();
        // First answer: the delay is the response time, clamped.
        assert_eq!(a.next(None, 400 * MS, true), 400 * MS);
        assert_eq!(a.next(None, 10 * MS, true), 100 * MS, "never below min");
        assert_eq!(
            a.next(None, 10_000 * MS, true),
            2000 * MS,
            "never above max"
        );
        // Then the mean of the old delay and what the answer asks for.
        assert_eq!(a.next(Some(400 * MS), 800 * MS, true), 600 * MS);
        let mut d = 100 * MS;
        for _ in 0..20 {
            d = a.next(Some(d), 1500 * MS, true);
        }
        assert!(
            d > 1400 * MS && d <= 1500 * MS,
            "converges to the latency: {d:?}"
        );
        for _ in 0..20 {
            d = a.next(Some(d), MS, true);
        }
        assert!(d < 101 * MS, "and back down to min on a fast host: {d:?}");
    }

    #[test]
    fn an_error_never_lowers_the_delay() {
        let a = adaptive();
        assert_eq!(a.next(Some(800 * MS), 10 * MS, false), 800 * MS);
        assert_eq!(a.next(Some(800 * MS), 1600 * MS, false), 1200 * MS);
    }

    #[test]
    fn the_factor_scales_the_delay_per_second_of_response() {
        let a = AdaptiveDelay {
            factor: 5.0,
            ..adaptive()
        };
        assert_eq!(a.next(None, 200 * MS, true), 1000 * MS);
        // A max below min counts as min.
        let odd = AdaptiveDelay {
            min: 500 * MS,
            max: 100 * MS,
            factor: 1.0,
        };
        assert_eq!(odd.next(None, 5000 * MS, true), 500 * MS);
    }

    #[test]
    fn backoff_doubles_is_capped_and_jitter_only_shortens_it() {
        let p = BackoffPolicy {
            max: Duration::from_secs(60),
            forgive_after: Duration::from_secs(600),
            jitter: 0.25,
        };
        let unit = 500 * MS;
        assert_eq!(p.backoff(unit, 1, 0.0), 1000 * MS);
        assert_eq!(p.backoff(unit, 3, 0.0), 4000 * MS);
        assert_eq!(p.backoff(unit, 30, 0.0), Duration::from_secs(60), "capped");
        assert_eq!(p.backoff(Duration::ZERO, 5, 0.5), Duration::ZERO);
        // Every draw lands in [0.75 b, b].
        for i in 0..100 {
            let draw = f64::from(i) / 100.0;
            let b = p.backoff(unit, 3, draw);
            assert!(b <= 4000 * MS && b >= 3000 * MS, "{draw}: {b:?}");
        }
        // Two draws give two waits: origins that failed together spread out.
        assert_ne!(p.backoff(unit, 3, 0.1), p.backoff(unit, 3, 0.9));
        // Out-of-range inputs are clamped, never panic.
        assert_eq!(p.backoff(unit, 1, 7.0), 750 * MS);
        let wild = BackoffPolicy { jitter: 3.0, ..p };
        assert_eq!(wild.backoff(unit, 1, 0.5), 500 * MS);
    }

    #[test]
    fn failures_are_forgiven_after_a_quiet_time() {
        let p = BackoffPolicy {
            max: Duration::from_secs(3600),
            forgive_after: Duration::from_secs(600),
            jitter: 0.0,
        };
        let t0 = Instant::now();
        let mut f = FailureCount::default();
        assert_eq!(f.fail(t0, &p), 1);
        assert_eq!(f.fail(t0 + Duration::from_secs(10), &p), 2);
        assert_eq!(f.fail(t0 + Duration::from_secs(300), &p), 3);
        assert_eq!(f.count(t0 + Duration::from_secs(400), &p), 3);
        // Ten quiet minutes after the last failure: forgiven.
        let later = t0 + Duration::from_secs(300 + 600);
        assert_eq!(f.count(later, &p), 0);
        assert_eq!(f.fail(later, &p), 1, "counting starts again");
        f.succeed();
        assert_eq!(f.count(later, &p), 0);
    }
}
