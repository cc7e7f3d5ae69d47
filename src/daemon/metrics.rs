//! `GET /metrics`: the status report in the Prometheus text exposition format
//! (version 0.0.4), rendered by hand from the same snapshot as `/status`, so
//! the two never disagree and a job that is purged simply stops appearing.
//!
//! Job counters come from the store and survive restarts (they only go down
//! when a job is purged, which Prometheus treats as a counter reset).
//! Response classes and checkpoint counts are since the daemon started.

use super::jobs::Phase;
use super::report::{JobStatus, StatusReport};
use std::fmt::Write as _;

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

/// The whole exposition.
pub fn render(r: &StatusReport) -> String {
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
            checkpoints: 2,
            last_checkpoint_at: Some(1_700_000_000),
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
        let text = render(&report());
        let (families, samples) = parse(&text);
        for (name, (_, declared)) in &families {
            assert_eq!(*declared, 1, "{name} declared {declared} times");
        }
        for (name, _, _) in &samples {
            assert!(families.contains_key(name), "{name} has no TYPE");
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
        let text = render(&r);
        let (_, samples) = parse(&text);
        assert!(!samples.iter().any(|(n, _, _)| n == "evil"));
    }
}
