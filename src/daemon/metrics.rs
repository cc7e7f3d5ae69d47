//! `GET /metrics`: the status report in the Prometheus text exposition format
//! (version 0.0.4), rendered by hand from the same snapshot as `/status`, so
//! the two never disagree and a job that is purged simply stops appearing.
//!
//! Job counters come from the store and survive restarts (they only go down
//! when a job is purged, which Prometheus treats as a counter reset).
//! Response classes, latencies and checkpoint counts are since the daemon started.
//!
//! # Cardinality
//!
//! With 1 000 jobs every per-job series costs 1 000 series, so distributions
//! are daemon-wide histograms ([`DaemonHistograms`]: fetch latency, checkpoint
//! commit time, checkpoint group size, ~15 series each), and each job only
//! gets a summary without quantiles (`_sum` and `_count`: 2 series) — enough
//! to see which job's site is slow, which the daemon-wide buckets then place.
//! Per-job histograms would be ~16 000 series per family at 1 000 jobs.

use super::jobs::Phase;
use super::live::TimeTotal;
use super::report::{JobStatus, StatusReport};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds (seconds) of the fetch-latency buckets: loopback answers in
/// under a millisecond, a distant or busy site in seconds, a timeout at 30 s.
pub const FETCH_LATENCY_BOUNDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Upper bounds (seconds) of the checkpoint-commit buckets: an fsync is a
/// millisecond on an SSD, a large group on a slow disk seconds.
pub const CHECKPOINT_BOUNDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Upper bounds of the group-size buckets (job deltas per store transaction).
pub const GROUP_BOUNDS: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// A histogram with fixed buckets, updated without a lock: every runner of
/// every job records into the same one, and a mutex there would be the one
/// place 1 000 jobs queue.
#[derive(Debug)]
pub struct AtomicHistogram {
    bounds: &'static [f64],
    /// Per bucket (not cumulative); the last one is `+Inf`.
    counts: Box<[AtomicU64]>,
    /// In millionths of the unit, so integer atomics suffice.
    sum_micros: AtomicU64,
}

/// A histogram read at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSnapshot {
    pub bounds: &'static [f64],
    /// Cumulative counts, one per bound, then `+Inf` (= `count`).
    pub cumulative: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl AtomicHistogram {
    /// `bounds` must be increasing.
    pub fn new(bounds: &'static [f64]) -> Self {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        AtomicHistogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: f64) {
        // NaN lands in +Inf; a negative value (it cannot happen for durations) in the first bucket.
        let slot = self
            .bounds
            .iter()
            .position(|&b| value <= b)
            .unwrap_or(self.bounds.len());
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        let micros = (value.max(0.0) * 1e6).round();
        // `as` saturates: an absurd value cannot wrap the sum.
        self.sum_micros.fetch_add(micros as u64, Ordering::Relaxed);
    }

    pub fn observe_duration(&self, d: Duration) {
        self.observe(d.as_secs_f64());
    }

    /// The counts now. `count` is the sum of the buckets read, so `+Inf`
    /// always equals `_count` even while other threads record.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut total = 0u64;
        let cumulative = self
            .counts
            .iter()
            .map(|c| {
                total = total.saturating_add(c.load(Ordering::Relaxed));
                total
            })
            .collect();
        HistogramSnapshot {
            bounds: self.bounds,
            cumulative,
            sum: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
            count: total,
        }
    }
}

/// The daemon-wide distributions, fed by every job's observer.
#[derive(Debug)]
pub struct DaemonHistograms {
    /// Send → response headers of every answered request, seconds.
    pub fetch_latency: AtomicHistogram,
    /// Duration of the store transaction that committed each job checkpoint, seconds.
    pub checkpoint_duration: AtomicHistogram,
    /// Job deltas in the transaction that committed each job checkpoint.
    pub checkpoint_group: AtomicHistogram,
}

impl Default for DaemonHistograms {
    fn default() -> Self {
        DaemonHistograms {
            fetch_latency: AtomicHistogram::new(FETCH_LATENCY_BOUNDS),
            checkpoint_duration: AtomicHistogram::new(CHECKPOINT_BOUNDS),
            checkpoint_group: AtomicHistogram::new(GROUP_BOUNDS),
        }
    }
}

impl DaemonHistograms {
    pub fn snapshot(&self) -> HistogramsSnapshot {
        HistogramsSnapshot {
            fetch_latency: self.fetch_latency.snapshot(),
            checkpoint_duration: self.checkpoint_duration.snapshot(),
            checkpoint_group: self.checkpoint_group.snapshot(),
        }
    }
}

/// [`DaemonHistograms`] read at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramsSnapshot {
    pub fetch_latency: HistogramSnapshot,
    pub checkpoint_duration: HistogramSnapshot,
    pub checkpoint_group: HistogramSnapshot,
}

impl Default for HistogramsSnapshot {
    fn default() -> Self {
        DaemonHistograms::default().snapshot()
    }
}

/// `Content-Type` of the exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value escaped for the exposition format: `\`, `"` and line feeds.
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text escaped: `\` and line feeds.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers exactly, floats in Go's spelling of the specials.
fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

/// Writes metric families, each with its HELP and TYPE once.
struct Families {
    out: String,
}

impl Families {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], v: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, val)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(val));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", value(v));
    }

    fn histogram(&mut self, name: &str, help: &str, h: &HistogramSnapshot) {
        self.family(name, "histogram", help);
        let bucket = format!("{name}_bucket");
        for (bound, n) in h.bounds.iter().zip(&h.cumulative) {
            self.sample(&bucket, &[("le", &value(*bound))], *n as f64);
        }
        self.sample(&bucket, &[("le", "+Inf")], h.count as f64);
        self.sample(&format!("{name}_sum"), &[], h.sum);
        self.sample(&format!("{name}_count"), &[], h.count as f64);
    }

    /// A summary without quantiles per job: `NAME_sum` and `NAME_count`.
    fn per_job_summary(
        &mut self,
        jobs: &[JobStatus],
        name: &str,
        help: &str,
        get: impl Fn(&JobStatus) -> TimeTotal,
    ) {
        self.family(name, "summary", help);
        let (sum, count) = (format!("{name}_sum"), format!("{name}_count"));
        for j in jobs {
            let t = get(j);
            self.sample(&sum, &[("job", &j.name)], t.sum_secs);
            self.sample(&count, &[("job", &j.name)], t.count as f64);
        }
    }

    /// A family with one sample per job.
    fn per_job(
        &mut self,
        jobs: &[JobStatus],
        name: &str,
        kind: &str,
        help: &str,
        get: impl Fn(&JobStatus) -> Option<f64>,
    ) {
        self.family(name, kind, help);
        for j in jobs {
            if let Some(v) = get(j) {
                self.sample(name, &[("job", &j.name)], v);
            }
        }
    }
}

/// The whole exposition: the report's jobs and the daemon-wide histograms.
pub fn render(r: &StatusReport, h: &HistogramsSnapshot) -> String {
    let mut f = Families { out: String::new() };
    f.family(
        "forager_build_info",
        "gauge",
        "Version of the running forager daemon (always 1).",
    );
    f.sample("forager_build_info", &[("version", &r.version)], 1.0);
    f.family(
        "forager_start_time_seconds",
        "gauge",
        "Start time of the daemon, seconds since the Unix epoch.",
    );
    f.sample("forager_start_time_seconds", &[], r.started_at as f64);
    f.family(
        "forager_max_jobs",
        "gauge",
        "Jobs allowed to crawl at once (max_jobs).",
    );
    f.sample("forager_max_jobs", &[], r.max_jobs as f64);
    f.family("forager_jobs", "gauge", "Jobs by state.");
    for phase in Phase::ALL {
        let n = r.jobs.iter().filter(|j| j.state == phase).count();
        f.sample("forager_jobs", &[("state", phase.as_str())], n as f64);
    }
    f.family(
        "forager_invalid_job_files",
        "gauge",
        "Job files refused (invalid, or declaring a job name another file already declares).",
    );
    f.sample(
        "forager_invalid_job_files",
        &[],
        r.config_errors.len() as f64,
    );
    f.family(
        "forager_requests_per_minute",
        "gauge",
        "Requests per minute of all jobs over the last minute.",
    );
    f.sample("forager_requests_per_minute", &[], r.request_rate_per_min);
    f.histogram(
        "forager_fetch_latency_seconds",
        "Time from sending a request to its response headers, all jobs (failed requests are not timed).",
        &h.fetch_latency,
    );
    f.histogram(
        "forager_checkpoint_duration_seconds",
        "Duration of the store transaction that committed a job's checkpoint (one observation per job checkpoint; a group commit is seen by each job in it).",
        &h.checkpoint_duration,
    );
    f.histogram(
        "forager_checkpoint_group_deltas",
        "Job checkpoints committed together in the transaction that carried a job's checkpoint.",
        &h.checkpoint_group,
    );

    let jobs = r.jobs.as_slice();
    f.family(
        "forager_job_state",
        "gauge",
        "The job's current state (1 for its state).",
    );
    for j in jobs {
        f.sample(
            "forager_job_state",
            &[("job", &j.name), ("state", j.state.as_str())],
            1.0,
        );
    }
    type Counter = (&'static str, &'static str, fn(&JobStatus) -> u64);
    let counters: [Counter; 15] = [
        (
            "forager_job_requests_total",
            "GET and HEAD requests, redirect hops included (what the budget counts).",
            |j| j.counters.requests,
        ),
        ("forager_job_head_requests_total", "HEAD requests.", |j| {
            j.counters.heads
        }),
        (
            "forager_job_robots_fetches_total",
            "robots.txt fetches (not in requests).",
            |j| j.counters.robots_fetches,
        ),
        ("forager_job_pages_total", "HTML pages fetched.", |j| {
            j.counters.pages
        }),
        ("forager_job_targets_total", "Targets saved.", |j| {
            j.counters.targets
        }),
        (
            "forager_job_neither_total",
            "Responses that were neither pages nor targets.",
            |j| j.counters.neither,
        ),
        (
            "forager_job_bytes_total",
            "Body bytes downloaded, after decompression.",
            |j| j.counters.bytes,
        ),
        (
            "forager_job_target_bytes_total",
            "Bytes of saved targets.",
            |j| j.counters.target_bytes,
        ),
        (
            "forager_job_redirects_total",
            "Redirect hops followed.",
            |j| j.counters.redirects,
        ),
        (
            "forager_job_http_errors_total",
            "HTTP 4xx and 5xx answers.",
            |j| j.counters.http_errors,
        ),
        (
            "forager_job_fetch_errors_total",
            "Requests that failed without an answer (network, timeout, SSRF guard).",
            |j| j.counters.fetch_errors,
        ),
        (
            "forager_job_robots_disallowed_total",
            "URLs not fetched because robots.txt disallows them.",
            |j| j.counters.robots_disallowed,
        ),
        (
            "forager_job_truncated_total",
            "Bodies cut at max_body.",
            |j| j.counters.truncated,
        ),
        (
            "forager_job_dropped_links_total",
            "Links the strategy decided never to fetch.",
            |j| j.counters.dropped,
        ),
        (
            "forager_job_checkpoints_total",
            "Checkpoints committed since the daemon started.",
            |j| j.checkpoints,
        ),
    ];
    for (name, help, get) in counters {
        f.per_job(jobs, name, "counter", help, |j| Some(get(j) as f64));
    }
    f.family(
        "forager_job_responses_total",
        "counter",
        "Responses by HTTP status class since the daemon started (failed: no status line).",
    );
    for j in jobs {
        for (class, n) in j.responses.labelled() {
            f.sample(
                "forager_job_responses_total",
                &[("job", &j.name), ("class", class)],
                n as f64,
            );
        }
    }
    f.per_job_summary(
        jobs,
        "forager_job_fetch_latency_seconds",
        "Time from sending a request to its response headers since the daemon started (failed requests are not timed).",
        |j| j.fetch_latency,
    );
    f.per_job_summary(
        jobs,
        "forager_job_checkpoint_duration_seconds",
        "Commit time of the job's checkpoints since the daemon started.",
        |j| j.checkpoint_time,
    );
    f.per_job(
        jobs,
        "forager_job_paused",
        "gauge",
        "1 while the job cannot write its state or targets (disk full, I/O error) and retries.",
        |j| Some(if j.state == Phase::Paused { 1.0 } else { 0.0 }),
    );
    f.per_job(
        jobs,
        "forager_job_requests_per_minute",
        "gauge",
        "Requests per minute over the last minute.",
        |j| Some(j.request_rate_per_min),
    );
    f.per_job(
        jobs,
        "forager_job_classifier_accuracy",
        "gauge",
        "Online accuracy of the URL classifier (predictions checked against the real type).",
        |j| j.classifier_accuracy,
    );
    f.per_job(
        jobs,
        "forager_job_actions",
        "gauge",
        "Actions (link groups by tag path) the strategy knows.",
        |j| Some(j.actions as f64),
    );
    f.per_job(
        jobs,
        "forager_job_frontier_links",
        "gauge",
        "Links left in the frontier when the job's last run ended.",
        |j| j.frontier.map(|n| n as f64),
    );
    f.per_job(
        jobs,
        "forager_job_last_checkpoint_timestamp_seconds",
        "gauge",
        "Time of the job's last committed checkpoint, seconds since the Unix epoch.",
        |j| j.last_checkpoint_at.map(|t| t as f64),
    );
    f.per_job(
        jobs,
        "forager_job_config_error",
        "gauge",
        "1 when the job's file is invalid now and its last valid version is kept.",
        |j| Some(if j.config_error.is_some() { 1.0 } else { 0.0 }),
    );
    f.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::live::StatusClasses;
    use crate::store::JobCounters;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn job(name: &str, requests: u64) -> JobStatus {
        JobStatus {
            name: name.into(),
            state: Phase::Running,
            stop_reason: None,
            detail: None,
            file: None,
            strategy: Some("sb".into()),
            counters: JobCounters {
                requests,
                ..Default::default()
            },
            request_rate_per_min: 60.5,
            classifier_accuracy: None,
            actions: 3,
            top_actions: vec![],
            frontier: None,
            responses: StatusClasses {
                success: 4,
                ..Default::default()
            },
            fetch_latency: TimeTotal {
                count: 4,
                sum_secs: 0.5,
            },
            checkpoints: 2,
            checkpoint_time: TimeTotal {
                count: 2,
                sum_secs: 0.004,
            },
            last_checkpoint_at: Some(1_700_000_000),
            paused_since: None,
            last_error: None,
            last_error_at: None,
            config_error: None,
        }
    }

    fn report() -> StatusReport {
        StatusReport {
            version: "0.1.0".into(),
            pid: 1,
            started_at: 1_700_000_000,
            uptime_secs: 5,
            jobs_dir: "j".into(),
            max_jobs: 8,
            running: 2,
            paused: 0,
            pending: 0,
            request_rate_per_min: 121.0,
            shutting_down: false,
            daemon_config_error: None,
            restart_required: vec![],
            jobs_dir_error: None,
            jobs: vec![job("a", 10), job("b", 20)],
            config_errors: vec![],
        }
    }

    #[test]
    fn escapes_labels() {
        assert_eq!(escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label("a\nb"), "a\\nb");
        assert_eq!(value(f64::NAN), "NaN");
        assert_eq!(value(f64::INFINITY), "+Inf");
        assert_eq!(value(3.0), "3");
        assert_eq!(value(0.25), "0.25");
    }

    /// Family name → (type, times declared).
    type Declared = HashMap<String, (String, usize)>;
    /// (name, labels, value).
    type Sample = (String, String, f64);

    /// A minimal parser of the exposition format: every line a comment or `name{labels} value`.
    fn parse(text: &str) -> (Declared, Vec<Sample>) {
        let mut families: Declared = HashMap::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                let e = families
                    .entry(name.to_string())
                    .or_insert((kind.to_string(), 0));
                e.1 += 1;
                continue;
            }
            if line.starts_with("# HELP ") {
                continue;
            }
            assert!(!line.starts_with('#'), "unexpected comment {line}");
            let (series, v) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n.to_string(), l.trim_end_matches('}').to_string()),
                None => (series.to_string(), String::new()),
            };
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name}"
            );
            samples.push((name, labels, v.parse::<f64>().unwrap()));
        }
        (families, samples)
    }

    #[test]
    fn every_sample_belongs_to_one_declared_family() {
        let text = render(&report(), &HistogramsSnapshot::default());
        let (families, samples) = parse(&text);
        for (name, (_, declared)) in &families {
            assert_eq!(*declared, 1, "{name} declared {declared} times");
        }
        for (name, _, _) in &samples {
            assert!(family_of(name, &families).is_some(), "{name} has no TYPE");
        }
        assert_eq!(families["forager_job_requests_total"].0, "counter");
        assert_eq!(families["forager_job_requests_per_minute"].0, "gauge");
        let get = |name: &str, labels: &str| {
            samples
                .iter()
                .find(|(n, l, _)| n == name && l == labels)
                .map(|s| s.2)
        };
        assert_eq!(get("forager_job_requests_total", r#"job="b""#), Some(20.0));
        assert_eq!(
            get("forager_job_responses_total", r#"job="a",class="2xx""#),
            Some(4.0)
        );
        assert_eq!(get("forager_jobs", r#"state="running""#), Some(2.0));
        assert_eq!(get("forager_jobs", r#"state="done""#), Some(0.0));
        assert_eq!(
            get("forager_job_requests_per_minute", r#"job="a""#),
            Some(60.5)
        );
        // Unknown values are absent, not zero.
        assert_eq!(get("forager_job_classifier_accuracy", r#"job="a""#), None);
        assert_eq!(
            get("forager_job_checkpoints_total", r#"job="a""#),
            Some(2.0)
        );
    }

    #[test]
    fn hostile_versions_cannot_break_the_format() {
        let mut r = report();
        r.version = "1\"} 0\nevil 1".into();
        let text = render(&r, &HistogramsSnapshot::default());
        let (_, samples) = parse(&text);
        assert!(!samples.iter().any(|(n, _, _)| n == "evil"));
    }

    /// The family a sample belongs to: its own name, or a histogram's or
    /// summary's name without `_bucket`, `_sum` or `_count`.
    fn family_of<'a>(sample: &'a str, families: &Declared) -> Option<&'a str> {
        if families.contains_key(sample) {
            return Some(sample);
        }
        ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
            let base = sample.strip_suffix(suffix)?;
            let (kind, _) = families.get(base)?;
            let fits = match *suffix {
                "_bucket" => kind == "histogram",
                _ => kind == "histogram" || kind == "summary",
            };
            fits.then_some(base)
        })
    }

    fn get(samples: &[Sample], name: &str, labels: &str) -> Option<f64> {
        samples
            .iter()
            .find(|(n, l, _)| n == name && l == labels)
            .map(|s| s.2)
    }

    /// `(le, cumulative count)` of a histogram's buckets, in output order.
    fn buckets(samples: &[Sample], name: &str) -> Vec<(String, f64)> {
        let bucket = format!("{name}_bucket");
        samples
            .iter()
            .filter(|(n, _, _)| *n == bucket)
            .map(|(_, l, v)| {
                let le = l
                    .strip_prefix("le=\"")
                    .and_then(|l| l.strip_suffix('"'))
                    .unwrap();
                (le.to_string(), *v)
            })
            .collect()
    }

    #[test]
    fn histograms_are_cumulative_and_end_at_their_count() {
        let h = DaemonHistograms::default();
        for ms in [0.5, 0.9, 3.0, 40.0, 40.0, 700.0, 45_000.0] {
            h.fetch_latency
                .observe_duration(Duration::from_secs_f64(ms / 1000.0));
        }
        h.checkpoint_duration
            .observe_duration(Duration::from_millis(2));
        for group in [1.0, 3.0, 3.0, 3.0] {
            h.checkpoint_group.observe(group);
        }
        let text = render(&report(), &h.snapshot());
        let (families, samples) = parse(&text);
        assert_eq!(families["forager_fetch_latency_seconds"].0, "histogram");
        let b = buckets(&samples, "forager_fetch_latency_seconds");
        assert_eq!(b.len(), FETCH_LATENCY_BOUNDS.len() + 1);
        assert_eq!(b.last().unwrap(), &("+Inf".to_string(), 7.0));
        // ≤ 1 ms: 0.5 and 0.9; ≤ 5 ms: and 3; ≤ 50 ms: and both 40; ≤ 1 s: and 700; 45 s only in +Inf.
        let at = |le: &str| b.iter().find(|(l, _)| l == le).unwrap().1;
        assert_eq!(at("0.001"), 2.0);
        assert_eq!(at("0.0025"), 2.0);
        assert_eq!(at("0.005"), 3.0);
        assert_eq!(at("0.05"), 5.0);
        assert_eq!(at("1"), 6.0);
        assert_eq!(at("30"), 6.0);
        assert!(b.windows(2).all(|w| w[0].1 <= w[1].1), "{b:?}");
        let sum = get(&samples, "forager_fetch_latency_seconds_sum", "").unwrap();
        assert!((sum - 45.7844).abs() < 1e-4, "{sum}");
        assert_eq!(
            get(&samples, "forager_fetch_latency_seconds_count", ""),
            Some(7.0)
        );
        let g = buckets(&samples, "forager_checkpoint_group_deltas");
        assert_eq!(g[0], ("1".to_string(), 1.0));
        assert_eq!(g[1], ("2".to_string(), 1.0));
        assert_eq!(g[2], ("4".to_string(), 4.0));
        assert_eq!(
            get(&samples, "forager_checkpoint_duration_seconds_count", ""),
            Some(1.0)
        );
    }

    #[test]
    fn per_job_summaries_and_the_paused_gauge() {
        let mut r = report();
        r.jobs[1].state = Phase::Paused;
        r.jobs[1].fetch_latency = TimeTotal {
            count: 10,
            sum_secs: 2.5,
        };
        r.paused = 1;
        r.running = 1;
        let text = render(&r, &HistogramsSnapshot::default());
        let (families, samples) = parse(&text);
        assert_eq!(families["forager_job_fetch_latency_seconds"].0, "summary");
        assert_eq!(
            get(
                &samples,
                "forager_job_fetch_latency_seconds_sum",
                r#"job="b""#
            ),
            Some(2.5)
        );
        assert_eq!(
            get(
                &samples,
                "forager_job_fetch_latency_seconds_count",
                r#"job="b""#
            ),
            Some(10.0)
        );
        assert_eq!(
            get(
                &samples,
                "forager_job_checkpoint_duration_seconds_sum",
                r#"job="a""#
            ),
            Some(0.004)
        );
        assert_eq!(get(&samples, "forager_job_paused", r#"job="a""#), Some(0.0));
        assert_eq!(get(&samples, "forager_job_paused", r#"job="b""#), Some(1.0));
        assert_eq!(
            get(&samples, "forager_jobs", r#"state="paused""#),
            Some(1.0)
        );
        assert_eq!(
            get(&samples, "forager_jobs", r#"state="running""#),
            Some(1.0)
        );
        assert_eq!(
            get(&samples, "forager_job_state", r#"job="b",state="paused""#),
            Some(1.0)
        );
    }

    #[test]
    fn series_per_job_stay_bounded() {
        // 1 000 jobs must not cost a histogram each: count the series.
        let mut r = report();
        r.jobs = (0..1000).map(|i| job(&format!("j{i}"), i)).collect();
        let text = render(&r, &HistogramsSnapshot::default());
        let series = text.lines().filter(|l| !l.starts_with('#')).count();
        let per_job = series as f64 / 1000.0;
        assert!(per_job < 40.0, "{per_job} series per job");
        assert!(!text.contains("job=\"j1\",le="));
    }

    #[test]
    fn concurrent_observations_are_all_counted() {
        let h = std::sync::Arc::new(AtomicHistogram::new(FETCH_LATENCY_BOUNDS));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u32 {
                        h.observe(f64::from(i % 100 + t) / 1000.0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = h.snapshot();
        assert_eq!(s.count, 40_000);
        assert_eq!(*s.cumulative.last().unwrap(), 40_000);
    }

    proptest! {
        #[test]
        fn a_snapshot_places_every_value_in_its_bucket(values in proptest::collection::vec(0.0f64..60.0, 0..200)) {
            let h = AtomicHistogram::new(FETCH_LATENCY_BOUNDS);
            for &v in &values {
                h.observe(v);
            }
            let s = h.snapshot();
            prop_assert_eq!(s.count, values.len() as u64);
            prop_assert_eq!(s.cumulative.len(), FETCH_LATENCY_BOUNDS.len() + 1);
            for (i, &bound) in FETCH_LATENCY_BOUNDS.iter().enumerate() {
                let expected = values.iter().filter(|&&v| v <= bound).count() as u64;
                prop_assert_eq!(s.cumulative[i], expected, "le {}", bound);
            }
            let sum: f64 = values.iter().sum();
            // Each value is rounded to a microsecond.
            prop_assert!((s.sum - sum).abs() <= 1e-6 * values.len() as f64 + 1e-9);
        }
    }
}
