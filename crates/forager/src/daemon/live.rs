//! What a running job tells the status API: counters, request rate, response
//! classes, fetch latency, checkpoints, pauses, last error. Updated by the
//! job's observer on every request, read by `/status` and `/metrics`.
//!
//! One small mutex per job, so 1 000 jobs reporting at once never queue behind
//! one lock and a status request only blocks a job for a copy of its numbers.

use crate::store::{JobCounters, StopReason};
use forager_core::strategy::StrategyStats;
use serde::{Deserialize, Serialize};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

/// Width of the request-rate window.
const RATE_WINDOW_SECS: u64 = 60;

/// Longest error text kept (a URL can be 2 KiB; the status table must stay readable).
const MAX_ERROR_CHARS: usize = 300;

/// A job's live numbers behind their own lock.
#[derive(Debug, Default)]
pub struct LiveJob {
    inner: Mutex<LiveStats>,
}

impl LiveJob {
    pub fn lock(&self) -> MutexGuard<'_, LiveStats> {
        // Plain counters: a panic while holding them cannot leave them inconsistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Responses by HTTP status class, kept across daemon restarts (with the dashboard's history).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusClasses {
    pub informational: u64,
    pub success: u64,
    pub redirect: u64,
    pub client_error: u64,
    pub server_error: u64,
    /// No status line: network error, timeout, refused by the SSRF guard.
    pub failed: u64,
}

impl StatusClasses {
    pub fn record(&mut self, status: Option<u16>) {
        match status {
            None => self.failed += 1,
            Some(100..=199) => self.informational += 1,
            Some(200..=299) => self.success += 1,
            Some(300..=399) => self.redirect += 1,
            Some(400..=499) => self.client_error += 1,
            // Anything else a server sends is its fault.
            Some(_) => self.server_error += 1,
        }
    }

    /// `(label, count)` pairs as `/metrics` names them.
    pub fn labelled(&self) -> [(&'static str, u64); 6] {
        [
            ("1xx", self.informational),
            ("2xx", self.success),
            ("3xx", self.redirect),
            ("4xx", self.client_error),
            ("5xx", self.server_error),
            ("failed", self.failed),
        ]
    }
}

/// Requests per minute over a sliding window of one-second buckets.
#[derive(Clone, Debug)]
pub struct RateMeter {
    origin: Instant,
    buckets: [u32; RATE_WINDOW_SECS as usize],
    /// Second (since `origin`) of the newest bucket.
    newest: u64,
    first_event: Option<Instant>,
}

impl Default for RateMeter {
    fn default() -> Self {
        RateMeter::new(Instant::now())
    }
}

impl RateMeter {
    pub fn new(origin: Instant) -> Self {
        RateMeter {
            origin,
            buckets: [0; RATE_WINDOW_SECS as usize],
            newest: 0,
            first_event: None,
        }
    }

    fn second(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.origin).as_secs()
    }

    /// Move the window to `now`, clearing the buckets it leaves behind.
    fn advance(&mut self, now: Instant) {
        let sec = self.second(now);
        if sec <= self.newest {
            return;
        }
        let gap = (sec - self.newest).min(RATE_WINDOW_SECS);
        for s in (sec - gap + 1)..=sec {
            self.buckets[(s % RATE_WINDOW_SECS) as usize] = 0;
        }
        self.newest = sec;
    }

    pub fn record(&mut self, now: Instant) {
        self.advance(now);
        let slot = (self.second(now).max(self.newest) % RATE_WINDOW_SECS) as usize;
        self.buckets[slot] = self.buckets[slot].saturating_add(1);
        self.first_event.get_or_insert(now);
    }

    /// Events per minute over the last minute. A job younger than that is
    /// rated over its age, counting the gaps between its events and not the
    /// events themselves: n events in s seconds are n − 1 gaps, and counting n
    /// rated a job paced at 2/s at 137/min after 3.5 s.
    pub fn per_minute(&mut self, now: Instant) -> f64 {
        self.advance(now);
        let Some(first) = self.first_event else {
            return 0.0;
        };
        let total: u64 = self.buckets.iter().map(|&b| u64::from(b)).sum();
        let seen = now.saturating_duration_since(first);
        if seen >= Duration::from_secs(RATE_WINDOW_SECS) {
            return total as f64 * 60.0 / RATE_WINDOW_SECS as f64;
        }
        let gaps = total.saturating_sub(1).max(1);
        gaps as f64 * 60.0 / seen.max(Duration::from_secs(1)).as_secs_f64()
    }
}

/// A count of timed events and their total time (a Prometheus summary without quantiles).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeTotal {
    pub count: u64,
    /// Seconds, all events together.
    pub sum_secs: f64,
}

impl TimeTotal {
    pub fn add(&mut self, d: Duration) {
        self.count += 1;
        self.sum_secs += d.as_secs_f64();
    }

    /// Mean seconds per event, when there was one.
    pub fn mean_secs(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_secs / self.count as f64)
    }
}

/// Points kept per job curve; a full curve keeps every other point.
pub const MAX_CURVE_POINTS: usize = 512;

/// Targets harvested against requests made, kept across daemon restarts
/// ([`super::history`]): the
/// dashboard's plot. Bounded: when full, every other point goes (the first
/// and the newest stay), so a months-long job costs 8 KiB and keeps its shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Curve {
    /// (requests, targets), requests increasing.
    points: Vec<(u64, u64)>,
}

impl Curve {
    pub fn record(&mut self, requests: u64, targets: u64) {
        match self.points.last_mut() {
            Some(last) if last.0 == requests => last.1 = targets,
            Some(last) if last.0 > requests => {
                // Counters went back to the last checkpoint (a crash after the
                // history was saved): the points past it never happened.
                // (A purge or rerun starts a new curve with a fresh LiveJob.)
                self.points.retain(|p| p.0 < requests);
                self.points.push((requests, targets));
            }
            _ => self.points.push((requests, targets)),
        }
        if self.points.len() > MAX_CURVE_POINTS {
            let newest = self.points.len() - 1;
            let mut i = 0;
            self.points.retain(|_| {
                let keep = i % 2 == 0 || i == newest;
                i += 1;
                keep
            });
        }
        debug_assert!(self.points.windows(2).all(|w| w[0].0 < w[1].0));
    }

    pub fn points(&self) -> &[(u64, u64)] {
        &self.points
    }

    /// A curve as stored; points out of order or beyond the bound are dropped
    /// (the store's bytes are not trusted to keep the invariant).
    pub fn from_points(points: &[(u64, u64)]) -> Curve {
        let mut c = Curve::default();
        for &(requests, targets) in points {
            if c.points.last().is_none_or(|last| last.0 < requests) {
                c.record(requests, targets);
            }
        }
        c
    }
}

/// Most kinds of error a job tallies; the rest count as `other`.
pub const MAX_ERROR_KINDS: usize = 16;

/// Failed requests by kind (`HTTP 404`, `HTTP 503`, `network`): what a
/// finished job's errors were, for the dashboard and `/status`. Bounded, so
/// a server answering every status code costs [`MAX_ERROR_KINDS`] entries.
pub type ErrorKinds = std::collections::BTreeMap<String, u64>;

fn tally(kinds: &mut ErrorKinds, kind: &str) {
    let key = if kinds.contains_key(kind) || kinds.len() < MAX_ERROR_KINDS - 1 {
        kind
    } else {
        "other"
    };
    *kinds.entry(key.to_string()).or_insert(0) += 1;
}

/// Why and since when a job is paused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pause {
    /// What the engine could not write (clipped).
    pub error: String,
    pub since: SystemTime,
}

/// A job's numbers as its runner last reported them.
#[derive(Clone, Debug, Default)]
pub struct LiveStats {
    pub counters: JobCounters,
    pub stats: StrategyStats,
    /// Links waiting in the frontier, as of the last request; `None` before the first.
    pub frontier: Option<u64>,
    /// Documents on the poison list, as the runner last said.
    pub poisoned: Option<u64>,
    pub responses: StatusClasses,
    pub rate: RateMeter,
    /// Send → headers of the requests answered since the daemon started.
    pub fetch_latency: TimeTotal,
    /// Checkpoints committed since the daemon started, and how long their commits took.
    pub checkpoints: TimeTotal,
    pub last_checkpoint: Option<SystemTime>,
    /// Set while the engine cannot write the job's state or targets and keeps retrying.
    pub paused: Option<Pause>,
    /// Set while a continuous job waits for its next revisit: when it is due.
    pub waiting_until: Option<SystemTime>,
    /// Set while the job only waits for an origin held back.
    pub waiting_for: Option<crate::engine::OriginWait>,
    pub last_error: Option<String>,
    pub last_error_at: Option<SystemTime>,
    /// The stop reason the store or the last run recorded.
    pub stop: Option<StopReason>,
    /// What the last run that ended left to know (seeds that answered
    /// 4xx/5xx, no target saved), `; `-joined; cleared when a run starts.
    pub warning: Option<String>,
    /// Targets against requests, for the dashboard.
    pub curve: Curve,
    /// Failed requests by kind, kept across daemon restarts with the curve.
    pub errors: ErrorKinds,
    /// Bumped by every change the daemon's stored history holds, so its
    /// main loop saves only the jobs that changed.
    pub history_version: u64,
}

impl LiveStats {
    /// One GET or HEAD (or redirect hop) of the job.
    pub fn on_request(
        &mut self,
        request: &RequestFacts<'_>,
        counters: &JobCounters,
        frontier: u64,
        now: Instant,
    ) {
        let RequestFacts {
            method,
            url,
            status,
            latency,
        } = *request;
        self.counters.clone_from(counters);
        self.curve.record(counters.requests, counters.targets);
        self.frontier = Some(frontier);
        self.responses.record(status);
        self.rate.record(now);
        if let Some(latency) = latency {
            self.fetch_latency.add(latency);
        }
        self.history_version += 1;
        let error = match status {
            None => Some((
                "network".to_string(),
                "request failed (network error, timeout or refused)".to_string(),
            )),
            Some(s) if s >= 400 => Some((format!("HTTP {s}"), format!("HTTP {s}"))),
            Some(_) => None,
        };
        if let Some((kind, what)) = error {
            tally(&mut self.errors, &kind);
            self.last_error = Some(clip(&format!("{method} {url}: {what}")));
            self.last_error_at = Some(SystemTime::now());
        }
    }

    pub fn on_checkpoint(&mut self, counters: &JobCounters, stats: &StrategyStats, took: Duration) {
        self.counters.clone_from(counters);
        self.stats.clone_from(stats);
        self.checkpoints.add(took);
        self.last_checkpoint = Some(SystemTime::now());
        self.history_version += 1;
    }

    /// The engine cannot write the job's state or targets and retries. The
    /// error becomes `last_error` too, and stays there after the job resumes:
    /// `last_error` is what went wrong last, the phase says whether it still does.
    pub fn on_paused(&mut self, error: &str) {
        let error = clip(error);
        let now = SystemTime::now();
        // Repeated retries of one failure keep the time it began.
        let since = match &self.paused {
            Some(p) => p.since,
            None => now,
        };
        self.last_error = Some(error.clone());
        self.last_error_at = Some(now);
        self.paused = Some(Pause { error, since });
    }

    pub fn on_resumed(&mut self) {
        self.paused = None;
    }

    /// The run ended (finished, stopped or failed): it cannot be paused any more.
    pub fn on_finished(&mut self, counters: &JobCounters, stop: Option<StopReason>) {
        self.counters.clone_from(counters);
        self.stop = stop;
        self.paused = None;
        self.waiting_until = None;
        self.waiting_for = None;
        self.history_version += 1;
    }

    /// A run could not start or crashed.
    pub fn on_failure(&mut self, error: &str) {
        self.last_error = Some(clip(error));
        self.last_error_at = Some(SystemTime::now());
        self.paused = None;
        self.history_version += 1;
    }
}

/// What [`LiveStats::on_request`] needs to know of one request.
#[derive(Clone, Copy, Debug)]
pub struct RequestFacts<'a> {
    /// `GET` or `HEAD`.
    pub method: &'a str,
    pub url: &'a str,
    /// `None` when it failed before a status line.
    pub status: Option<u16>,
    /// Send → headers; `None` when it failed before them.
    pub latency: Option<Duration>,
}

/// `s` cut to [`MAX_ERROR_CHARS`] characters.
fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rate_counts_the_last_minute_only() {
        let t0 = Instant::now();
        let mut m = RateMeter::new(t0);
        assert_eq!(m.per_minute(t0), 0.0);
        for i in 0..120 {
            m.record(t0 + Duration::from_millis(500 * i));
        }
        // 2 per second for 60 s.
        let at = t0 + Duration::from_secs(60);
        let r = m.per_minute(at);
        assert!((r - 120.0).abs() <= 2.0, "{r}");
        // Two minutes of silence later, nothing.
        assert_eq!(m.per_minute(t0 + Duration::from_secs(200)), 0.0);
    }

    #[test]
    fn a_young_job_is_rated_over_its_age() {
        let t0 = Instant::now();
        let mut m = RateMeter::new(t0);
        for i in 0..10 {
            m.record(t0 + Duration::from_millis(100 * i));
        }
        // 10 requests 100 ms apart, 1.5 s after the first: 9 gaps in 1.5 s
        // (not 10 requests over a minute).
        let r = m.per_minute(t0 + Duration::from_millis(1500));
        assert!((r - 360.0).abs() < 1.0, "{r}");
    }

    #[test]
    fn a_curve_stays_bounded_and_keeps_its_ends() {
        let mut c = Curve::default();
        for r in 1..=100_000u64 {
            c.record(r, r / 10);
            c.record(r, r / 10 + 1);
        }
        let p = c.points();
        assert!(p.len() <= MAX_CURVE_POINTS, "{}", p.len());
        assert!(p.len() > MAX_CURVE_POINTS / 4);
        assert_eq!(p[0], (1, 1));
        assert_eq!(*p.last().unwrap(), (100_000, 10_001));
        // Counters back to an earlier checkpoint: the points after it go.
        c.record(3, 0);
        assert_eq!(c.points(), [(1, 1), (3, 0)]);
    }

    #[test]
    fn a_job_paced_at_two_per_second_is_never_rated_above_120_per_minute() {
        let t0 = Instant::now();
        let mut m = RateMeter::new(t0);
        for i in 0..300u64 {
            let at = t0 + Duration::from_millis(500 * i);
            m.record(at);
            for later in [0, 250, 499] {
                let r = m.per_minute(at + Duration::from_millis(later));
                assert!(r <= 120.0 + 1e-9, "{r}/min after event {i} (+{later} ms)");
            }
        }
        let r = m.per_minute(t0 + Duration::from_millis(500 * 299));
        assert!(r >= 117.0, "{r}");
    }

    proptest! {
        #[test]
        fn rate_never_exceeds_events_in_window(gaps in proptest::collection::vec(0u64..3000, 1..300)) {
            let t0 = Instant::now();
            let mut m = RateMeter::new(t0);
            let mut t = t0;
            let mut times = Vec::new();
            for g in gaps {
                t += Duration::from_millis(g);
                m.record(t);
                times.push(t);
            }
            let r = m.per_minute(t);
            // Every event of the last 61 s (bucket granularity) counted at most once.
            let recent = times.iter().filter(|&&e| t.duration_since(e) <= Duration::from_secs(61)).count();
            let age = t.duration_since(times[0]).clamp(Duration::from_secs(1), Duration::from_secs(60));
            let bound = recent as f64 * 60.0 / age.as_secs_f64();
            prop_assert!(r <= bound + 1e-9, "rate {} bound {}", r, bound);
            prop_assert!(r >= 0.0);
        }
    }

    #[test]
    fn status_classes_and_last_error() {
        let mut s = LiveStats::default();
        let c = JobCounters {
            requests: 3,
            ..Default::default()
        };
        let now = Instant::now();
        let req = |method, url, status, ms: Option<u64>| RequestFacts {
            method,
            url,
            status,
            latency: ms.map(Duration::from_millis),
        };
        s.on_request(
            &req("GET", "http://a.test/", Some(200), Some(10)),
            &c,
            7,
            now,
        );
        assert!(s.last_error.is_none());
        s.on_request(
            &req("GET", "http://a.test/x", Some(404), Some(30)),
            &c,
            6,
            now,
        );
        s.on_request(&req("HEAD", "http://a.test/y", None, None), &c, 5, now);
        s.on_request(
            &req("GET", "http://a.test/z", Some(302), Some(20)),
            &c,
            4,
            now,
        );
        assert_eq!(
            s.responses,
            StatusClasses {
                success: 1,
                redirect: 1,
                client_error: 1,
                failed: 1,
                ..Default::default()
            }
        );
        assert_eq!(s.counters.requests, 3);
        assert_eq!(s.frontier, Some(4), "as of the last request");
        // Only answered requests are timed: 3 of 4, 60 ms in all.
        assert_eq!(s.fetch_latency.count, 3);
        assert!((s.fetch_latency.sum_secs - 0.060).abs() < 1e-9);
        assert!((s.fetch_latency.mean_secs().unwrap() - 0.020).abs() < 1e-9);
        let e = s.last_error.as_deref().unwrap();
        assert!(e.starts_with("HEAD http://a.test/y: request failed"), "{e}");
        assert_eq!(
            s.errors
                .iter()
                .map(|(k, n)| (k.as_str(), *n))
                .collect::<Vec<_>>(),
            [("HTTP 404", 1), ("network", 1)]
        );
        s.on_failure(&"x".repeat(1000));
        assert_eq!(
            s.last_error.as_deref().unwrap().chars().count(),
            MAX_ERROR_CHARS + 1
        );
    }

    #[test]
    fn a_pause_is_the_last_error_until_cleared_and_keeps_its_start() {
        let mut s = LiveStats::default();
        assert_eq!(TimeTotal::default().mean_secs(), None);
        s.on_paused("writing checkpoint: No space left on device (os error 28)");
        let first = s.paused.clone().unwrap();
        assert!(first.error.contains("No space left"));
        assert_eq!(s.last_error.as_deref(), Some(first.error.as_str()));
        std::thread::sleep(Duration::from_millis(5));
        // The engine retries and reports again: still the same pause.
        s.on_paused("writing checkpoint: No space left on device (os error 28)");
        assert_eq!(s.paused.as_ref().unwrap().since, first.since);
        s.on_resumed();
        assert!(s.paused.is_none());
        // The error stays as the last one seen.
        assert!(s.last_error.as_deref().unwrap().contains("No space left"));
        // A run that ends while paused is not paused any more.
        s.on_paused(&"disk ".repeat(200));
        assert_eq!(
            s.paused.as_ref().unwrap().error.chars().count(),
            MAX_ERROR_CHARS + 1
        );
        s.on_finished(&JobCounters::default(), None);
        assert!(s.paused.is_none());
    }

    #[test]
    fn error_kinds_stay_bounded() {
        let mut kinds = ErrorKinds::new();
        for status in 400..600 {
            tally(&mut kinds, &format!("HTTP {status}"));
        }
        tally(&mut kinds, "HTTP 400");
        assert_eq!(kinds.len(), MAX_ERROR_KINDS);
        assert_eq!(kinds["HTTP 400"], 2);
        assert_eq!(kinds["other"], 200 - (MAX_ERROR_KINDS as u64 - 1));
    }

    #[test]
    fn checkpoints_are_counted_and_timed() {
        let mut s = LiveStats::default();
        let c = JobCounters {
            requests: 9,
            ..Default::default()
        };
        s.on_checkpoint(&c, &StrategyStats::default(), Duration::from_millis(4));
        s.on_checkpoint(&c, &StrategyStats::default(), Duration::from_millis(6));
        assert_eq!(s.checkpoints.count, 2);
        assert!((s.checkpoints.sum_secs - 0.010).abs() < 1e-9);
        assert_eq!(s.counters.requests, 9);
        assert!(s.last_checkpoint.is_some());
    }
}
