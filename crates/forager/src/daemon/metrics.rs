//! `GET /metrics`: the status report in the Prometheus text exposition format
//! (version 0.0.4), encoded by `prometheus-client` (the Prometheus project's
//! Rust client) from the same snapshot as `/status`, so the two never
//! disagree and a job that is purged simply stops appearing.
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
//! gets a histogram without buckets (`_sum`, `_count` and the `+Inf` bucket:
//! 3 series) — enough to see which job's site is slow, which the daemon-wide
//! buckets then place. Per-job bucketed histograms would be ~16 000 series
//! per family at 1 000 jobs.

use super::jobs::Phase;
use super::live::TimeTotal;
use super::report::{JobStatus, StatusReport};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

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

/// Upper bounds (seconds) of the cluster database's round trips: a
/// loopback server answers in a fraction of a millisecond, a remote one in
/// milliseconds, a stuck one at the pool's time-outs (5 and 10 s).
pub const DATABASE_BOUNDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A node's lease and database numbers (`[cluster]` only): handles on
/// shared counts, so the clone given to the cluster handle as its
/// observer records into the ones `/metrics` renders.
#[derive(Clone, Debug)]
pub struct ClusterMetrics {
    /// Leases this node holds now (set at each acquisition round).
    pub leases_held: Gauge,
    /// Leases granted to this node.
    pub leases_acquired: Counter,
    /// Of those, leases that had lapsed on another node: its jobs taken over.
    pub takeovers: Counter,
    /// Renewals that failed or found the lease lost.
    pub renew_failures: Counter,
    /// Round trips of the database operations that time the node's work
    /// (acquire, renew, heartbeat, checkpoint read and write, manifest, pacing).
    pub database_latency: Histogram,
}

impl Default for ClusterMetrics {
    fn default() -> Self {
        ClusterMetrics {
            leases_held: Gauge::default(),
            leases_acquired: Counter::default(),
            takeovers: Counter::default(),
            renew_failures: Counter::default(),
            database_latency: Histogram::new(DATABASE_BOUNDS.iter().copied()),
        }
    }
}

impl forager_cluster::Observer for ClusterMetrics {
    fn query(&self, _op: &'static str, elapsed: std::time::Duration) {
        self.database_latency.observe(elapsed.as_secs_f64());
    }

    fn renew_failed(&self) {
        self.renew_failures.inc();
    }
}

/// The daemon-wide distributions, fed by every job's observer. Each is one
/// short mutex per observation: at 1 000 requests per second that is a few
/// microseconds of holding per second, not a queue.
#[derive(Debug)]
pub struct DaemonHistograms {
    /// Send → response headers of every answered request, seconds.
    pub fetch_latency: Histogram,
    /// Duration of the store transaction that committed each job checkpoint, seconds.
    pub checkpoint_duration: Histogram,
    /// Job deltas in the transaction that committed each job checkpoint.
    pub checkpoint_group: Histogram,
    /// robots.txt fetches that failed (network, TLS, 5xx, 429), all jobs.
    pub robots_failures: Counter,
    /// Leases and the database, rendered only with `[cluster]`.
    pub cluster: ClusterMetrics,
}

impl Default for DaemonHistograms {
    fn default() -> Self {
        DaemonHistograms {
            fetch_latency: Histogram::new(FETCH_LATENCY_BOUNDS.iter().copied()),
            checkpoint_duration: Histogram::new(CHECKPOINT_BOUNDS.iter().copied()),
            checkpoint_group: Histogram::new(GROUP_BOUNDS.iter().copied()),
            robots_failures: Counter::default(),
            cluster: ClusterMetrics::default(),
        }
    }
}

/// `Content-Type` of the exposition format.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The whole exposition: the report's jobs, the daemon-wide histograms
/// and, in a cluster, the node's lease and database metrics.
pub fn render(
    report: StatusReport,
    h: &DaemonHistograms,
    cluster: Option<&ClusterMetrics>,
) -> String {
    let mut registry = Registry::default();
    // `register` ends each help with a full stop itself.
    registry.register(
        "forager_build",
        "Version of the running forager daemon (always 1)",
        Info::new([("version", report.version.clone())]),
    );
    // Histograms are cheap handles on shared counts: registering clones per scrape shares them.
    registry.register_with_unit(
        "forager_fetch_latency",
        "Time from sending a request to its response headers, all jobs (failed requests are not timed)",
        Unit::Seconds,
        h.fetch_latency.clone(),
    );
    registry.register_with_unit(
        "forager_checkpoint_duration",
        "Duration of the store transaction that committed a job's checkpoint (one observation per job checkpoint; a group commit is seen by each job in it)",
        Unit::Seconds,
        h.checkpoint_duration.clone(),
    );
    registry.register(
        "forager_checkpoint_group_deltas",
        "Job checkpoints committed together in the transaction that carried a job's checkpoint",
        h.checkpoint_group.clone(),
    );
    registry.register(
        "forager_robots_failures",
        "robots.txt fetches that failed (network or TLS error, 5xx, 429), all jobs; the origin's links wait for the next try",
        h.robots_failures.clone(),
    );
    if let Some(c) = cluster {
        registry.register(
            "forager_cluster_leases_held",
            "Job leases this node holds",
            c.leases_held.clone(),
        );
        registry.register(
            "forager_cluster_leases_acquired",
            "Job leases granted to this node",
            c.leases_acquired.clone(),
        );
        registry.register(
            "forager_cluster_takeovers",
            "Job leases this node was granted after they lapsed on another node (jobs taken over)",
            c.takeovers.clone(),
        );
        registry.register(
            "forager_cluster_lease_renew_failures",
            "Lease renewals that failed (database away or slow) or found the lease taken over",
            c.renew_failures.clone(),
        );
        registry.register_with_unit(
            "forager_cluster_database_latency",
            "Round trip of this node's cluster database operations (acquire, renew, heartbeat, checkpoints, manifest rows, pacing)",
            Unit::Seconds,
            c.database_latency.clone(),
        );
    }
    registry.register_collector(Box::new(ReportCollector(report)));
    let mut out = String::new();
    // Writing to a String cannot fail, and every value here is encodable.
    let encoded = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
    debug_assert!(encoded.is_ok(), "{encoded:?}");
    out
}

/// The status report's numbers, as constant metrics of one scrape.
#[derive(Debug)]
struct ReportCollector(StatusReport);

/// A job's counter: metric name (without `_total`), help, value.
type JobCounter = (&'static str, &'static str, fn(&JobStatus) -> u64);

const JOB_COUNTERS: [JobCounter; 16] = [
    (
        "forager_job_requests",
        "GET and HEAD requests, redirect hops included (what the budget counts).",
        |j| j.counters.requests,
    ),
    ("forager_job_head_requests", "HEAD requests.", |j| {
        j.counters.heads
    }),
    (
        "forager_job_robots_fetches",
        "robots.txt fetches (not in requests).",
        |j| j.counters.robots_fetches,
    ),
    ("forager_job_pages", "HTML pages fetched.", |j| {
        j.counters.pages
    }),
    ("forager_job_targets", "Targets saved.", |j| {
        j.counters.targets
    }),
    (
        "forager_job_neither",
        "Responses that were neither pages nor targets.",
        |j| j.counters.neither,
    ),
    (
        "forager_job_bytes",
        "Body bytes downloaded, after decompression.",
        |j| j.counters.bytes,
    ),
    ("forager_job_target_bytes", "Bytes of saved targets.", |j| {
        j.counters.target_bytes
    }),
    ("forager_job_redirects", "Redirect hops followed.", |j| {
        j.counters.redirects
    }),
    (
        "forager_job_http_errors",
        "HTTP 4xx and 5xx answers.",
        |j| j.counters.http_errors,
    ),
    (
        "forager_job_fetch_errors",
        "Requests that failed without an answer (network, timeout, SSRF guard).",
        |j| j.counters.fetch_errors,
    ),
    (
        "forager_job_robots_disallowed",
        "URLs not fetched because robots.txt disallows them.",
        |j| j.counters.robots_disallowed,
    ),
    ("forager_job_truncated", "Bodies cut at max_body.", |j| {
        j.counters.truncated
    }),
    (
        "forager_job_blocked",
        "Links not fetched for their extension (targets.block_ext), and documents on the poison list not read.",
        |j| j.counters.blocked,
    ),
    (
        "forager_job_dropped_links",
        "Links the strategy decided never to fetch.",
        |j| j.counters.dropped,
    ),
    (
        "forager_job_checkpoints",
        "Checkpoints committed since the daemon started.",
        |j| j.checkpoints,
    ),
];

/// A job's gauge: metric name, help, value (absent when unknown).
type JobGauge = (&'static str, &'static str, fn(&JobStatus) -> Option<f64>);

const JOB_GAUGES: [JobGauge; 8] = [
    (
        "forager_job_paused",
        "1 while the job cannot write its state or targets (disk full, I/O error) and retries.",
        |j| Some(if j.state == Phase::Paused { 1.0 } else { 0.0 }),
    ),
    (
        "forager_job_requests_per_minute",
        "Requests per minute over the last minute (0 when the job is not fetching).",
        |j| Some(j.request_rate_per_min),
    ),
    (
        "forager_job_classifier_accuracy",
        "Online accuracy of the URL classifier (predictions checked against the real type).",
        |j| j.classifier_accuracy,
    ),
    (
        "forager_job_actions",
        "Actions (link groups by tag path) the strategy knows.",
        |j| Some(j.actions as f64),
    ),
    (
        "forager_job_frontier_links",
        "Links waiting in the frontier (as of the job's last request).",
        |j| j.frontier.map(|n| n as f64),
    ),
    (
        "forager_job_poison_list",
        "Documents on the job's poison list, not read again: they crashed the process twice or blew their parse budget.",
        |j| j.poisoned.map(|n| n as f64),
    ),
    (
        "forager_job_last_checkpoint_timestamp_seconds",
        "Time of the job's last committed checkpoint, seconds since the Unix epoch.",
        |j| j.last_checkpoint_at.map(|t| t as f64),
    ),
    (
        "forager_job_config_error",
        "1 when the job's file is invalid now and its last valid version is kept.",
        |j| Some(if j.config_error.is_some() { 1.0 } else { 0.0 }),
    ),
];

/// A job's time total: metric name (without `_seconds`), help, value.
type JobTimes = (&'static str, &'static str, fn(&JobStatus) -> TimeTotal);

const JOB_TIMES: [JobTimes; 2] = [
    (
        "forager_job_fetch_latency",
        "Time from sending a request to its response headers since the daemon started (failed requests are not timed); no buckets, see forager_fetch_latency_seconds.",
        |j| j.fetch_latency,
    ),
    (
        "forager_job_checkpoint_duration",
        "Commit time of the job's checkpoints since the daemon started; no buckets.",
        |j| j.checkpoint_time,
    ),
];

impl Collector for ReportCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let r = &self.0;
        let mut gauge = |name: &str, help: &str, v: f64| {
            ConstGauge::new(v).encode(encoder.encode_descriptor(
                name,
                help,
                None,
                MetricType::Gauge,
            )?)
        };
        gauge(
            "forager_start_time_seconds",
            "Start time of the daemon, seconds since the Unix epoch.",
            r.started_at as f64,
        )?;
        gauge(
            "forager_max_jobs",
            "Jobs allowed to crawl at once (max_jobs).",
            r.max_jobs as f64,
        )?;
        gauge(
            "forager_invalid_job_files",
            "Job files refused (invalid, or declaring a job name another file already declares).",
            r.config_errors.len() as f64,
        )?;
        gauge(
            "forager_requests_per_minute",
            "Requests per minute of all jobs over the last minute.",
            r.request_rate_per_min,
        )?;
        let mut family =
            encoder.encode_descriptor("forager_jobs", "Jobs by state.", None, MetricType::Gauge)?;
        for phase in Phase::ALL {
            let n = r.jobs.iter().filter(|j| j.state == phase).count();
            ConstGauge::new(n as i64)
                .encode(family.encode_family(&[("state", phase.as_str())])?)?;
        }

        let jobs = r.jobs.as_slice();
        let mut family = encoder.encode_descriptor(
            "forager_job_state",
            "The job's current state (1 for its state).",
            None,
            MetricType::Gauge,
        )?;
        for j in jobs {
            let labels = [("job", j.name.as_str()), ("state", j.state.as_str())];
            ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
        }
        for (name, help, get) in JOB_COUNTERS {
            per_job(&mut encoder, name, help, MetricType::Counter, jobs, |j| {
                Some(ConstCounter::new(get(j)))
            })?;
        }
        let mut family = encoder.encode_descriptor(
            "forager_job_responses",
            "Responses by HTTP status class since the daemon started (failed: no status line).",
            None,
            MetricType::Counter,
        )?;
        for j in jobs {
            for (class, n) in j.responses.labelled() {
                let labels = [("job", j.name.as_str()), ("class", class)];
                ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
            }
        }
        for (name, help, get) in JOB_TIMES {
            let mut family = encoder.encode_descriptor(
                name,
                help,
                Some(&Unit::Seconds),
                MetricType::Histogram,
            )?;
            for j in jobs {
                let t = get(j);
                family
                    .encode_family(&[("job", j.name.as_str())])?
                    .encode_histogram::<NoLabelSet>(
                        t.sum_secs,
                        t.count,
                        &[(f64::INFINITY, t.count)],
                        None,
                    )?;
            }
        }
        for (name, help, get) in JOB_GAUGES {
            per_job(&mut encoder, name, help, MetricType::Gauge, jobs, |j| {
                get(j).map(ConstGauge::new)
            })?;
        }
        Ok(())
    }
}

/// A family with one series per job, labelled `job`; a job whose value is unknown has none.
fn per_job<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    jobs: &[JobStatus],
    metric: impl Fn(&JobStatus) -> Option<M>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, kind)?;
    for j in jobs {
        if let Some(m) = metric(j) {
            m.encode(family.encode_family(&[("job", j.name.as_str())])?)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::live::StatusClasses;
    use crate::store::JobCounters;
    use std::collections::HashMap;

    fn job(name: &str, requests: u64) -> JobStatus {
        JobStatus {
            name: name.into(),
            state: Phase::Running,
            stop_reason: None,
            warning: None,
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
            poisoned: None,
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
            paused_by_user: false,
            errors_by_kind: Default::default(),
            next_revisit_at: None,
            last_error: None,
            last_error_at: None,
            config_error: None,
            cluster: None,
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
            cluster: None,
        }
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
        let text = render(report(), &DaemonHistograms::default(), None);
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
    #[ignore = "prints an exposition to read"]
    fn print_an_exposition() {
        println!("{}", render(report(), &DaemonHistograms::default(), None));
    }

    #[test]
    fn hostile_versions_cannot_break_the_format() {
        let mut r = report();
        r.version = "1\"} 0\nevil 1".into();
        let text = render(r, &DaemonHistograms::default(), None);
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
            h.fetch_latency.observe(ms / 1000.0);
        }
        h.checkpoint_duration.observe(0.002);
        for group in [1.0, 3.0, 3.0, 3.0] {
            h.checkpoint_group.observe(group);
        }
        let text = render(report(), &h, None);
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
    fn lease_and_database_metrics_only_in_a_cluster() {
        use forager_cluster::Observer;
        let h = DaemonHistograms::default();
        let c = &h.cluster;
        c.leases_held.set(3);
        c.leases_acquired.inc_by(5);
        c.takeovers.inc();
        c.query("renew", std::time::Duration::from_micros(700));
        c.query("acquire", std::time::Duration::from_millis(30));
        c.renew_failed();
        let single = render(report(), &h, None);
        assert!(!single.contains("forager_cluster"), "{single}");
        let (families, samples) = parse(&render(report(), &h, Some(c)));
        assert_eq!(
            families["forager_cluster_database_latency_seconds"].0,
            "histogram"
        );
        assert_eq!(get(&samples, "forager_cluster_leases_held", ""), Some(3.0));
        assert_eq!(
            get(&samples, "forager_cluster_leases_acquired_total", ""),
            Some(5.0)
        );
        assert_eq!(
            get(&samples, "forager_cluster_takeovers_total", ""),
            Some(1.0)
        );
        assert_eq!(
            get(&samples, "forager_cluster_lease_renew_failures_total", ""),
            Some(1.0)
        );
        let b = buckets(&samples, "forager_cluster_database_latency_seconds");
        let at = |le: &str| b.iter().find(|(l, _)| l == le).map(|x| x.1);
        assert_eq!(at("0.001"), Some(1.0));
        assert_eq!(at("0.05"), Some(2.0));
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
        let text = render(r, &DaemonHistograms::default(), None);
        let (families, samples) = parse(&text);
        assert_eq!(families["forager_job_fetch_latency_seconds"].0, "histogram");
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
        let text = render(r, &DaemonHistograms::default(), None);
        let series = text.lines().filter(|l| !l.starts_with('#')).count();
        let per_job = series as f64 / 1000.0;
        assert!(per_job < 40.0, "{per_job} series per job");
        // Per job only the `+Inf` bucket of its two bucketless histograms.
        let buckets = text
            .lines()
            .filter(|l| l.contains("job=\"j1\",le="))
            .collect::<Vec<_>>();
        assert_eq!(buckets.len(), 2, "{buckets:?}");
        assert!(
            buckets.iter().all(|l| l.contains("le=\"+Inf\"")),
            "{buckets:?}"
        );
    }

    #[test]
    fn concurrent_observations_are_all_counted() {
        let h = std::sync::Arc::new(DaemonHistograms::default());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u32 {
                        h.fetch_latency.observe(f64::from(i % 100 + t) / 1000.0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (_, samples) = parse(&render(report(), &h, None));
        assert_eq!(
            get(&samples, "forager_fetch_latency_seconds_count", ""),
            Some(40_000.0)
        );
        let b = buckets(&samples, "forager_fetch_latency_seconds");
        assert_eq!(b.last().unwrap().1, 40_000.0);
    }
}
