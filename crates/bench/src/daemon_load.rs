//! `forager bench --daemon-load`: the real daemon under many concurrent site
//! jobs, for the goal "one daemon on 2 cores runs 1 000 site jobs at 1
//! request/s per site, ≥ 900 pages/s in aggregate, RSS ≤ 4 GiB".
//!
//! Three processes, so that each one's CPU time and memory are its own: this
//! harness (it only samples), a site server child (`forager serve-site
//! --hosts N SITE`: one site served under N host names `site-0001.test` … on
//! one loopback port) and the daemon child (`forager daemon --config …`) with
//! N job files in a temporary jobs folder; the config's `[resolve]` maps the
//! host names to the site server and `allow_private = true` lets it through.
//!
//! Figures: aggregate rates from the `/status` counters, sampled every few
//! seconds, over a steady-state window after a warm-up; the daemon's CPU time
//! and RSS (now and peak, `VmHWM`) from `/proc`; fetch latency from the
//! `/metrics` histogram at the window's two ends; the time from SIGTERM to
//! the daemon's exit.
//!
//! "Pages" in the goal are fetches: every GET and HEAD is one page request
//! against the politeness budget of 1 request/s per site. HTML pages (the
//! `pages` counter) are reported beside them; the rest are targets, other
//! files and HEADs.
//!
//! Must not touch: the network beyond 127.0.0.1, files outside its work
//! folder (removed at the end unless kept), or any process it did not start.

use anyhow::{bail, Context};
use forager::daemon::StatusReport;
use std::fmt::Write as _;
use std::io::{BufRead, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longest wait for the daemon to list every job after it starts.
const READY_TIMEOUT: Duration = Duration::from_secs(180);
/// Longest wait for the daemon to exit after SIGTERM (systemd's TimeoutStopSec is 90 s).
const EXIT_TIMEOUT: Duration = Duration::from_secs(120);
/// Share of the allowed request rate the goal asks for (900 of 1 000 per second).
pub const GOAL_SHARE: f64 = 0.9;
/// The goal's memory ceiling.
pub const GOAL_RSS_BYTES: u64 = 4 << 30;

/// What to run.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The forager binary (this one): it serves the sites and runs the daemon.
    pub exe: PathBuf,
    pub jobs: usize,
    /// A site as `bench --site` takes it, e.g. `synthetic:medium`.
    pub site: String,
    /// Path of the seed on every host.
    pub start_path: String,
    pub strategy: String,
    /// Politeness delay of every job: the rate ceiling is `jobs / delay`.
    pub delay: Duration,
    pub warmup: Duration,
    /// The steady-state window after the warm-up.
    pub duration: Duration,
    pub sample_every: Duration,
    pub checkpoint_interval: Duration,
    /// The daemon's `cache_size` in bytes; `None`: its default.
    pub cache_size: Option<u64>,
    /// Job files, daemon config, state and logs go here.
    pub work_dir: PathBuf,
    /// Leave `work_dir` in place (state, logs) after the run.
    pub keep: bool,
}

/// Host name of site `i` (1-based): `site-0001.test`.
pub fn site_host(i: usize) -> String {
    format!("{}.test", job_name(i))
}

/// Job name of site `i` (1-based): `site-0001`.
pub fn job_name(i: usize) -> String {
    format!("site-{i:04}")
}

/// The job file of site `i`: scope host, no budget, no early stop, `delay` between requests.
pub fn job_file_text(i: usize, start_path: &str, strategy: &str, delay: Duration) -> String {
    let path = if start_path.starts_with('/') {
        start_path.to_string()
    } else {
        format!("/{start_path}")
    };
    format!(
        "name = \"{name}\"\n\
         seeds = [\"http://{host}{path}\"]\n\
         scope = \"host\"\n\
         strategy = \"{strategy}\"\n\
         [budget]\n\
         requests = 0\n\
         early_stop = false\n\
         [politeness]\n\
         delay = \"{delay}\"\n",
        name = job_name(i),
        host = site_host(i),
        delay = humantime::format_duration(delay),
    )
}

/// The daemon config: every job at once, sites on loopback, quiet logs.
pub fn daemon_config_text(
    admin: SocketAddr,
    server: SocketAddr,
    jobs: usize,
    checkpoint_interval: Duration,
    cache_size: Option<u64>,
) -> String {
    let mut text = format!(
        "jobs_dir = \"jobs.d\"\n\
         state_dir = \"state\"\n\
         admin_listen = \"{admin}\"\n\
         max_jobs = {jobs}\n\
         checkpoint_interval = \"{every}\"\n\
         allow_private = true\n\
         log_level = \"warn\"\n",
        jobs = jobs.max(1),
        every = humantime::format_duration(checkpoint_interval),
    );
    if let Some(bytes) = cache_size {
        let _ = writeln!(text, "cache_size = {bytes}");
    }
    text.push_str("[resolve]\n");
    for i in 1..=jobs {
        let _ = writeln!(text, "\"{}\" = \"{server}\"", site_host(i));
    }
    text
}

/// CPU time and memory of a process, from `/proc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcFigures {
    /// User + system.
    pub cpu: Duration,
    /// Resident set now (`VmRSS`), bytes.
    pub rss: u64,
    /// Peak resident set (`VmHWM`), bytes.
    pub peak_rss: u64,
}

/// User + system CPU time from the text of `/proc/PID/stat`.
pub fn parse_stat_cpu(stat: &str, ticks_per_sec: u64) -> Option<Duration> {
    // The command name (field 2) is in parentheses and may hold spaces and ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of the file: the 12th and 13th after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let ticks = utime.checked_add(stime)?;
    let per_sec = ticks_per_sec.max(1);
    Some(
        Duration::from_secs(ticks / per_sec)
            + Duration::from_secs(ticks % per_sec) / per_sec as u32,
    )
}

/// A `KEY: N kB` line of `/proc/PID/status`, in bytes.
pub fn parse_status_kb(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.split(':').next() == Some(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

fn ticks_per_sec() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|&t| t > 0).unwrap_or(100)
}

/// The figures of process `pid`, while it runs.
pub fn proc_figures(pid: u32) -> Option<ProcFigures> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(ProcFigures {
        cpu: parse_stat_cpu(&stat, ticks_per_sec())?,
        rss: parse_status_kb(&status, "VmRSS").unwrap_or(0),
        peak_rss: parse_status_kb(&status, "VmHWM").unwrap_or(0),
    })
}

/// The jobs' counters added up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub requests: u64,
    pub heads: u64,
    pub pages: u64,
    pub targets: u64,
    pub bytes: u64,
    pub http_errors: u64,
    pub fetch_errors: u64,
}

impl Totals {
    pub fn of(r: &StatusReport) -> Self {
        r.jobs.iter().fold(Totals::default(), |t, j| {
            let c = &j.counters;
            Totals {
                requests: t.requests + c.requests,
                heads: t.heads + c.heads,
                pages: t.pages + c.pages,
                targets: t.targets + c.targets,
                bytes: t.bytes + c.bytes,
                http_errors: t.http_errors + c.http_errors,
                fetch_errors: t.fetch_errors + c.fetch_errors,
            }
        })
    }
}

/// Jobs by state at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateCounts {
    pub running: usize,
    pub paused: usize,
    pub pending: usize,
    pub done: usize,
    pub failed: usize,
    pub other: usize,
}

impl StateCounts {
    pub fn of(r: &StatusReport) -> Self {
        use forager::daemon::jobs::Phase;
        let mut c = StateCounts::default();
        for j in &r.jobs {
            match j.state {
                Phase::Running => c.running += 1,
                Phase::Paused => c.paused += 1,
                Phase::Pending => c.pending += 1,
                Phase::Done => c.done += 1,
                Phase::Failed => c.failed += 1,
                _ => c.other += 1,
            }
        }
        c
    }
}

/// One look at the daemon.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Since every job was listed.
    pub at: Duration,
    pub states: StateCounts,
    pub totals: Totals,
    pub daemon: Option<ProcFigures>,
    pub server_cpu: Option<Duration>,
}

/// Rates between two samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    pub secs: f64,
    pub requests: f64,
    pub gets: f64,
    pub html_pages: f64,
    pub targets: f64,
    pub bytes: f64,
    /// Requests that failed or answered 4xx/5xx, per second.
    pub errors: f64,
    /// Cores of the daemon (1.0 = one core busy all the time).
    pub daemon_cores: Option<f64>,
    pub server_cores: Option<f64>,
}

/// The rates from `a` to `b` (`b` later).
pub fn rates(a: &Sample, b: &Sample) -> Rates {
    let secs = b.at.saturating_sub(a.at).as_secs_f64();
    if secs <= 0.0 {
        return Rates::default();
    }
    let per = |x: u64, y: u64| y.saturating_sub(x) as f64 / secs;
    let (ta, tb) = (&a.totals, &b.totals);
    let cores =
        |x: Option<Duration>, y: Option<Duration>| Some(y?.saturating_sub(x?).as_secs_f64() / secs);
    Rates {
        secs,
        requests: per(ta.requests, tb.requests),
        gets: per(
            ta.requests.saturating_sub(ta.heads),
            tb.requests.saturating_sub(tb.heads),
        ),
        html_pages: per(ta.pages, tb.pages),
        targets: per(ta.targets, tb.targets),
        bytes: per(ta.bytes, tb.bytes),
        errors: per(
            ta.http_errors + ta.fetch_errors,
            tb.http_errors + tb.fetch_errors,
        ),
        daemon_cores: cores(a.daemon.map(|d| d.cpu), b.daemon.map(|d| d.cpu)),
        server_cores: cores(a.server_cpu, b.server_cpu),
    }
}

/// A Prometheus histogram as scraped: cumulative `(le, count)` pairs, sum, count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScrapedHistogram {
    pub buckets: Vec<(f64, f64)>,
    pub sum: f64,
    pub count: f64,
}

/// Histogram `name` out of an exposition text (`None` when absent).
pub fn scrape_histogram(text: &str, name: &str) -> Option<ScrapedHistogram> {
    let bucket = format!("{name}_bucket{{le=\"");
    let sum = format!("{name}_sum ");
    let count = format!("{name}_count ");
    let mut h = ScrapedHistogram::default();
    let (mut saw_sum, mut saw_count) = (false, false);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(&bucket) {
            let (le, v) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            h.buckets.push((le, v.trim().parse().ok()?));
        } else if let Some(v) = line.strip_prefix(&sum) {
            h.sum = v.trim().parse().ok()?;
            saw_sum = true;
        } else if let Some(v) = line.strip_prefix(&count) {
            h.count = v.trim().parse().ok()?;
            saw_count = true;
        }
    }
    (saw_sum && saw_count && !h.buckets.is_empty()).then_some(h)
}

impl ScrapedHistogram {
    /// What was observed between `earlier` and `self`.
    pub fn since(&self, earlier: &ScrapedHistogram) -> ScrapedHistogram {
        ScrapedHistogram {
            buckets: self
                .buckets
                .iter()
                .map(|&(le, v)| {
                    let before = earlier
                        .buckets
                        .iter()
                        .find(|(l, _)| *l == le)
                        .map_or(0.0, |b| b.1);
                    (le, (v - before).max(0.0))
                })
                .collect(),
            sum: (self.sum - earlier.sum).max(0.0),
            count: (self.count - earlier.count).max(0.0),
        }
    }

    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// The `q` quantile, interpolated in its bucket as Prometheus'
    /// `histogram_quantile` does; in the `+Inf` bucket, the largest finite bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count <= 0.0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let rank = q * self.count;
        let mut lower = (0.0, 0.0);
        for &(le, cum) in &self.buckets {
            if cum >= rank {
                if le.is_infinite() {
                    return Some(lower.0);
                }
                let in_bucket = cum - lower.1;
                let share = if in_bucket > 0.0 {
                    (rank - lower.1) / in_bucket
                } else {
                    1.0
                };
                return Some(lower.0 + (le - lower.0) * share);
            }
            lower = (le, cum);
        }
        Some(lower.0)
    }
}

/// Latency in the window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
}

fn latency_between(start: Option<&str>, end: Option<&str>, name: &str) -> Option<Latency> {
    let a = scrape_histogram(start?, name)?;
    let b = scrape_histogram(end?, name)?;
    let d = b.since(&a);
    Some(Latency {
        mean: d.mean()?,
        p50: d.quantile(0.5)?,
        p99: d.quantile(0.99)?,
    })
}

/// How the daemon stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitFigures {
    /// From SIGTERM to exit.
    pub after: Duration,
    pub code: Option<i32>,
    /// It did not exit in time and was killed.
    pub killed: bool,
}

/// Everything measured.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadReport {
    pub jobs: usize,
    pub site: String,
    pub strategy: String,
    pub delay: Duration,
    pub warmup: Duration,
    /// From the start of the daemon to every job listed.
    pub startup: Duration,
    pub samples: Vec<Sample>,
    /// Index in `samples` of the window's first and last sample.
    pub window: Option<(usize, usize)>,
    pub fetch_latency: Option<Latency>,
    pub checkpoint_latency: Option<Latency>,
    pub peak_rss: Option<u64>,
    pub exit: Option<ExitFigures>,
}

impl LoadReport {
    pub fn window_rates(&self) -> Option<Rates> {
        let (a, b) = self.window?;
        Some(rates(self.samples.get(a)?, self.samples.get(b)?))
    }

    /// Requests per second the politeness delay allows all jobs together.
    pub fn allowed_rate(&self) -> f64 {
        self.jobs as f64 / self.delay.as_secs_f64().max(1e-9)
    }

    /// Whether the window met the goal's share of the allowed rate and its memory ceiling.
    pub fn goal_met(&self) -> Option<bool> {
        let r = self.window_rates()?;
        let rss = self.peak_rss?;
        Some(r.requests >= GOAL_SHARE * self.allowed_rate() && rss <= GOAL_RSS_BYTES)
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// One progress line per sample.
pub fn sample_line(prev: Option<&Sample>, s: &Sample) -> String {
    let mut line = format!(
        "t={:>5.0}s  running {:>5}  paused {:>3}  failed {:>3}",
        s.at.as_secs_f64(),
        s.states.running,
        s.states.paused,
        s.states.failed
    );
    if let Some(prev) = prev {
        let r = rates(prev, s);
        let _ = write!(
            line,
            "  req/s {:>7.1}  html/s {:>7.1}",
            r.requests, r.html_pages
        );
        if let Some(c) = r.daemon_cores {
            let _ = write!(line, "  daemon CPU {:>4.0}%", c * 100.0);
        }
    }
    if let Some(d) = s.daemon {
        let _ = write!(line, "  RSS {:>6.0} MiB", mib(d.rss));
    }
    line
}

/// The report as a table for a person (and docs/efficiency.md).
pub fn format_report(r: &LoadReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "daemon load: {} jobs on {} ({}, scope host, delay {}), warm-up {}",
        r.jobs,
        r.site,
        r.strategy,
        humantime::format_duration(r.delay),
        humantime::format_duration(r.warmup)
    );
    let _ = writeln!(
        out,
        "every job listed {:.1} s after the daemon started",
        r.startup.as_secs_f64()
    );
    let Some(w) = r.window_rates() else {
        out.push_str("no steady-state window: the run was too short to sample one\n");
        return out;
    };
    let allowed = r.allowed_rate();
    let row = |out: &mut String, label: &str, value: String| {
        let _ = writeln!(out, "  {label:<34} {value}");
    };
    let _ = writeln!(out, "steady-state window: {:.1} s", w.secs);
    row(
        &mut out,
        "requests/s (GET + HEAD)",
        format!(
            "{:.1}  ({:.1} % of the {allowed:.0}/s the delay allows)",
            w.requests,
            100.0 * w.requests / allowed.max(1e-9)
        ),
    );
    row(&mut out, "  GETs/s", format!("{:.1}", w.gets));
    row(&mut out, "  HTML pages/s", format!("{:.1}", w.html_pages));
    row(&mut out, "  targets saved/s", format!("{:.1}", w.targets));
    row(
        &mut out,
        "  errors/s (4xx/5xx/failed)",
        format!("{:.1}", w.errors),
    );
    row(
        &mut out,
        "body MiB/s",
        format!("{:.2}", w.bytes / (1u64 << 20) as f64),
    );
    if let Some(c) = w.daemon_cores {
        row(
            &mut out,
            "daemon CPU",
            format!(
                "{:.0} % of a core, {:.2} ms per request",
                c * 100.0,
                c * 1000.0 / w.requests.max(1e-9)
            ),
        );
    }
    if let Some(c) = w.server_cores {
        row(
            &mut out,
            "site server CPU",
            format!("{:.0} % of a core", c * 100.0),
        );
    }
    if let Some(l) = r.fetch_latency {
        row(
            &mut out,
            "fetch latency (send → headers)",
            format!(
                "mean {:.1} ms, p50 ≈ {:.1} ms, p99 ≈ {:.1} ms",
                l.mean * 1e3,
                l.p50 * 1e3,
                l.p99 * 1e3
            ),
        );
    }
    if let Some(l) = r.checkpoint_latency {
        row(
            &mut out,
            "checkpoint commit",
            format!("mean {:.1} ms, p99 ≈ {:.1} ms", l.mean * 1e3, l.p99 * 1e3),
        );
    }
    if let Some(last) = r.window.and_then(|(_, b)| r.samples.get(b)) {
        if let Some(d) = last.daemon {
            row(
                &mut out,
                "daemon RSS at the end",
                format!("{:.0} MiB", mib(d.rss)),
            );
        }
        let s = last.states;
        row(
            &mut out,
            "jobs at the end",
            format!(
                "{} running, {} paused, {} waiting, {} done, {} failed",
                s.running, s.paused, s.pending, s.done, s.failed
            ),
        );
    }
    if let Some(p) = r.peak_rss {
        row(
            &mut out,
            "daemon peak RSS (VmHWM)",
            format!("{:.0} MiB", mib(p)),
        );
    }
    if let Some(e) = r.exit {
        let how = match (e.killed, e.code) {
            (true, _) => "killed: it did not exit in time".to_string(),
            (false, Some(c)) => format!("exit status {c}"),
            (false, None) => "ended by a signal".to_string(),
        };
        row(
            &mut out,
            "SIGTERM → exit",
            format!("{:.2} s, {how}", e.after.as_secs_f64()),
        );
    }
    if let Some(met) = r.goal_met() {
        let _ = writeln!(
            out,
            "goal (≥ {:.0} requests/s, {:.0} % of the allowed rate; peak RSS ≤ {} GiB): {}",
            GOAL_SHARE * allowed,
            GOAL_SHARE * 100.0,
            GOAL_RSS_BYTES >> 30,
            if met { "met" } else { "MISSED" }
        );
    }
    out
}

/// A child process, killed if it is still running when dropped.
struct Guarded {
    child: Child,
    what: &'static str,
}

impl Guarded {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn exited(&mut self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        self.child
            .try_wait()
            .with_context(|| format!("waiting for the {}", self.what))
    }

    /// Wait for the exit at most `within`; kill it after that.
    fn wait_or_kill(&mut self, within: Duration) -> anyhow::Result<(Option<i32>, bool)> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.exited()? {
                return Ok((status.code(), false));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let status = self
            .child
            .wait()
            .with_context(|| format!("reaping the {}", self.what))?;
        Ok((status.code(), true))
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A site server child process (`forager serve-site`): it serves until its stdin closes.
pub struct SiteProcess {
    process: Guarded,
    /// Its stdout, past the greeting: the answers to `tally`.
    answers: std::io::BufReader<std::process::ChildStdout>,
    pub addr: SocketAddr,
}

impl SiteProcess {
    /// Start `exe serve-site [--hosts N] SITE`, read its `listening ADDR` line.
    /// `hosts` 0 serves the site under its own name.
    pub fn spawn(exe: &Path, site: &str, hosts: usize, log: Stdio) -> anyhow::Result<SiteProcess> {
        Self::spawn_with(exe, site, hosts, false, log)
    }

    /// As [`SiteProcess::spawn`]; `loopback_name` also serves the site under
    /// `127.0.0.1`, for a crawler given `http://127.0.0.1:PORT/…`.
    pub fn spawn_with(
        exe: &Path,
        site: &str,
        hosts: usize,
        loopback_name: bool,
        log: Stdio,
    ) -> anyhow::Result<SiteProcess> {
        let mut command = Command::new(exe);
        command.arg("serve-site");
        if hosts > 0 {
            command.args(["--hosts", &hosts.to_string()]);
        }
        if loopback_name {
            command.arg("--loopback-name");
        }
        let mut child = command
            .arg(site)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting the site server ({})", exe.display()))?;
        let stdout = child.stdout.take().context("site server stdout")?;
        let mut process = Guarded {
            child,
            what: "site server",
        };
        let mut answers = std::io::BufReader::new(stdout);
        let mut line = String::new();
        answers
            .read_line(&mut line)
            .context("reading the site server's address")?;
        let addr: SocketAddr = match line.trim().strip_prefix("listening ").map(str::parse) {
            Some(Ok(addr)) => addr,
            _ => {
                let status = process.exited().ok().flatten();
                bail!("unexpected site server greeting {line:?} (exit status {status:?})")
            }
        };
        Ok(SiteProcess {
            process,
            answers,
            addr,
        })
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// What the server answered since the last tally (or its start), from
    /// its log; the log starts over.
    pub fn tally(&mut self) -> anyhow::Result<super::reference::ServedTally> {
        let stdin = self
            .process
            .child
            .stdin
            .as_mut()
            .context("the site server's stdin is closed")?;
        stdin
            .write_all(b"tally\n")
            .and_then(|()| stdin.flush())
            .context("asking the site server for its tally")?;
        let mut line = String::new();
        self.answers
            .read_line(&mut line)
            .context("reading the site server's tally")?;
        serde_json::from_str(line.trim())
            .with_context(|| format!("the site server's tally {line:?}"))
    }

    /// Ask it to stop (close its stdin) and wait a little; kill it after that.
    pub fn stop(mut self) -> anyhow::Result<()> {
        if let Some(mut stdin) = self.process.child.stdin.take() {
            let _ = stdin.write_all(b"stop\n");
        }
        self.process.wait_or_kill(Duration::from_secs(10))?;
        Ok(())
    }
}

fn free_loopback_port() -> anyhow::Result<SocketAddr> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    l.local_addr().context("reading the free port")
}

/// The last `max` bytes of a log file, for an error message.
fn log_tail(path: &Path, max: u64) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut text = String::new();
    if len > max {
        use std::io::Seek;
        let _ = f.seek(std::io::SeekFrom::Start(len - max));
    }
    let mut bytes = Vec::new();
    let _ = f.read_to_end(&mut bytes);
    text.push_str(&String::from_utf8_lossy(&bytes));
    text
}

/// Run the benchmark; `progress` gets one line per sample.
pub fn run(opts: &LoadOptions, mut progress: impl FnMut(&str)) -> anyhow::Result<LoadReport> {
    anyhow::ensure!(opts.jobs > 0, "--jobs must be at least 1");
    anyhow::ensure!(!opts.delay.is_zero(), "--delay must be longer than 0s");
    anyhow::ensure!(
        !opts.sample_every.is_zero(),
        "--sample must be longer than 0s"
    );
    let work = &opts.work_dir;
    std::fs::create_dir_all(work.join("jobs.d"))
        .with_context(|| format!("creating {}", work.join("jobs.d").display()))?;
    let result = run_in(opts, &mut progress);
    if !opts.keep {
        // Thousands of target files: this can take a while on a slow disk.
        progress(&format!("removing the work folder {}", work.display()));
        if let Err(e) = std::fs::remove_dir_all(work) {
            progress(&format!("could not remove {}: {e}", work.display()));
        }
    }
    result
}

fn run_in(opts: &LoadOptions, progress: &mut dyn FnMut(&str)) -> anyhow::Result<LoadReport> {
    let work = &opts.work_dir;
    let server_log = std::fs::File::create(work.join("site-server.log"))
        .context("creating the site server's log")?;
    let server = SiteProcess::spawn(&opts.exe, &opts.site, opts.jobs, server_log.into())?;
    progress(&format!(
        "site server pid {} on {}: {} under {} host names",
        server.pid(),
        server.addr,
        opts.site,
        opts.jobs
    ));
    for i in 1..=opts.jobs {
        let path = work.join("jobs.d").join(format!("{}.toml", job_name(i)));
        std::fs::write(
            &path,
            job_file_text(i, &opts.start_path, &opts.strategy, opts.delay),
        )
        .with_context(|| format!("writing {}", path.display()))?;
    }
    let admin = free_loopback_port()?;
    let config = work.join("forager.toml");
    std::fs::write(
        &config,
        daemon_config_text(
            admin,
            server.addr,
            opts.jobs,
            opts.checkpoint_interval,
            opts.cache_size,
        ),
    )
    .with_context(|| format!("writing {}", config.display()))?;
    let daemon_log_path = work.join("daemon.log");
    let daemon_log =
        std::fs::File::create(&daemon_log_path).context("creating the daemon's log")?;
    let started = Instant::now();
    let child = Command::new(&opts.exe)
        .arg("daemon")
        .arg("--config")
        .arg(&config)
        .env_remove("RUST_LOG")
        .env_remove("NOTIFY_SOCKET")
        .stdin(Stdio::null())
        .stdout(daemon_log.try_clone().context("daemon log")?)
        .stderr(daemon_log)
        .spawn()
        .context("starting the daemon")?;
    let mut daemon = Guarded {
        child,
        what: "daemon",
    };
    progress(&format!(
        "daemon pid {}, admin API {admin}, work folder {}",
        daemon.pid(),
        work.display()
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the harness runtime")?;
    let died = |daemon: &mut Guarded| -> anyhow::Result<()> {
        if let Some(status) = daemon.exited()? {
            bail!(
                "the daemon exited early ({status}); its log ends with:\n{}",
                log_tail(&daemon_log_path, 4000)
            );
        }
        Ok(())
    };
    // Ready: the admin API answers and lists every job.
    loop {
        died(&mut daemon)?;
        if let Ok(r) = rt.block_on(forager::daemon::status(admin)) {
            if r.jobs.len() >= opts.jobs {
                break;
            }
        }
        if started.elapsed() > READY_TIMEOUT {
            bail!(
                "the daemon did not list {} jobs within {READY_TIMEOUT:?}; its log ends with:\n{}",
                opts.jobs,
                log_tail(&daemon_log_path, 4000)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let t0 = Instant::now();
    let startup = t0 - started;
    let end = opts.warmup + opts.duration;
    let mut samples: Vec<Sample> = Vec::new();
    let mut window_start: Option<usize> = None;
    let mut metrics_start: Option<String> = None;
    let mut next = Duration::ZERO;
    loop {
        let wait = next.saturating_sub(t0.elapsed());
        std::thread::sleep(wait);
        died(&mut daemon)?;
        let before = t0.elapsed();
        let report = rt.block_on(forager::daemon::status(admin))?;
        let after = t0.elapsed();
        let sample = Sample {
            // The counters were read somewhere in the round trip: take its middle.
            at: before + (after - before) / 2,
            states: StateCounts::of(&report),
            totals: Totals::of(&report),
            daemon: proc_figures(daemon.pid()),
            server_cpu: proc_figures(server.pid()).map(|p| p.cpu),
        };
        progress(&sample_line(samples.last(), &sample));
        let in_window = sample.at >= opts.warmup;
        samples.push(sample);
        if in_window && window_start.is_none() {
            window_start = Some(samples.len() - 1);
            metrics_start = rt.block_on(forager::daemon::metrics_of(admin)).ok();
        }
        if after >= end {
            break;
        }
        next += opts.sample_every;
        if next > end {
            next = end;
        }
    }
    let metrics_end = rt.block_on(forager::daemon::metrics_of(admin)).ok();
    let peak_rss = proc_figures(daemon.pid()).map(|p| p.peak_rss);
    let window = match window_start {
        Some(a) if a + 1 < samples.len() => Some((a, samples.len() - 1)),
        _ => None,
    };
    // SIGTERM: every job checkpoints, the store closes, exit 0.
    let term_at = Instant::now();
    let pid = libc::pid_t::try_from(daemon.pid()).context("daemon pid")?;
    // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        bail!(
            "sending SIGTERM to the daemon: {}",
            std::io::Error::last_os_error()
        );
    }
    let (code, killed) = daemon.wait_or_kill(EXIT_TIMEOUT)?;
    let exit = ExitFigures {
        after: term_at.elapsed(),
        code,
        killed,
    };
    server.stop()?;
    let start_text = metrics_start.as_deref();
    let end_text = metrics_end.as_deref();
    Ok(LoadReport {
        jobs: opts.jobs,
        site: opts.site.clone(),
        strategy: opts.strategy.clone(),
        delay: opts.delay,
        warmup: opts.warmup,
        startup,
        samples,
        window,
        fetch_latency: latency_between(start_text, end_text, "forager_fetch_latency_seconds"),
        checkpoint_latency: latency_between(
            start_text,
            end_text,
            "forager_checkpoint_duration_seconds",
        ),
        peak_rss,
        exit: Some(exit),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager_core::config::{parse_daemon, parse_job};
    use forager_core::extract::ScopeKind;

    #[test]
    fn generated_job_files_and_config_are_valid() {
        let job = job_file_text(7, "/", "sb", Duration::from_secs(1));
        let spec = parse_job(&job, Path::new("jobs.d/site-0007.toml")).unwrap();
        assert_eq!(spec.name, "site-0007");
        assert_eq!(spec.seeds[0].as_str(), "http://site-0007.test/");
        assert_eq!(spec.scope, ScopeKind::Host);
        assert_eq!(spec.politeness.delay, Duration::from_secs(1));
        assert_eq!(spec.budget.requests, 0);
        assert!(!spec.budget.early_stop);
        let server: SocketAddr = "127.0.0.1:4321".parse().unwrap();
        let admin: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let text = daemon_config_text(admin, server, 1000, Duration::from_secs(5), Some(32 << 20));
        let d = parse_daemon(&text, Path::new("/tmp/load/forager.toml")).unwrap();
        assert_eq!(d.max_jobs, 1000);
        assert_eq!(d.cache_size, 32 << 20);
        assert!(d.allow_private);
        assert_eq!(d.resolve.len(), 1000);
        assert_eq!(d.resolve["site-1000.test"], server);
        assert_eq!(d.jobs_dir, Path::new("/tmp/load/jobs.d"));
        assert_eq!(d.admin_listen, admin);
    }

    #[test]
    fn proc_files_are_read_even_with_odd_command_names() {
        // Field 2 holds spaces and a ')': the CPU fields are counted from the last ')'.
        let stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 500 0 0 0 \
                    250 50 0 0 20 0 9 0 100 1000000 2000 18446744073709551615";
        assert_eq!(parse_stat_cpu(stat, 100), Some(Duration::from_secs(3)));
        assert_eq!(parse_stat_cpu(stat, 1000), Some(Duration::from_millis(300)));
        assert_eq!(parse_stat_cpu("garbage", 100), None);
        let status = "Name:\tforager\nVmHWM:\t  409600 kB\nVmRSS:\t  204800 kB\n";
        assert_eq!(parse_status_kb(status, "VmHWM"), Some(400 << 20));
        assert_eq!(parse_status_kb(status, "VmRSS"), Some(200 << 20));
        assert_eq!(parse_status_kb(status, "VmSwap"), None);
        // This very process has both.
        let me = proc_figures(std::process::id()).unwrap();
        assert!(me.rss > 0 && me.peak_rss >= me.rss, "{me:?}");
    }

    fn sample(at_secs: u64, requests: u64, heads: u64, pages: u64, cpu_ms: u64) -> Sample {
        Sample {
            at: Duration::from_secs(at_secs),
            states: StateCounts::default(),
            totals: Totals {
                requests,
                heads,
                pages,
                ..Default::default()
            },
            daemon: Some(ProcFigures {
                cpu: Duration::from_millis(cpu_ms),
                rss: 100 << 20,
                peak_rss: 120 << 20,
            }),
            server_cpu: None,
        }
    }

    #[test]
    fn rates_are_deltas_over_time() {
        let a = sample(20, 1_000, 100, 600, 10_000);
        let b = sample(80, 55_000, 2_500, 33_000, 55_000);
        let r = rates(&a, &b);
        assert!((r.requests - 900.0).abs() < 1e-9);
        assert!((r.gets - 860.0).abs() < 1e-9);
        assert!((r.html_pages - 540.0).abs() < 1e-9);
        assert!((r.daemon_cores.unwrap() - 0.75).abs() < 1e-9);
        assert_eq!(r.server_cores, None);
        // No time between samples: no rates rather than infinities.
        assert_eq!(rates(&a, &a), Rates::default());
    }

    fn report(requests_per_sec: u64, peak_rss: u64) -> LoadReport {
        LoadReport {
            jobs: 1000,
            site: "synthetic:medium".into(),
            strategy: "sb".into(),
            delay: Duration::from_secs(1),
            warmup: Duration::from_secs(20),
            startup: Duration::from_secs(2),
            samples: vec![
                sample(20, 0, 0, 0, 0),
                sample(80, 60 * requests_per_sec, 0, 0, 60_000),
            ],
            window: Some((0, 1)),
            fetch_latency: Some(Latency {
                mean: 0.002,
                p50: 0.001,
                p99: 0.02,
            }),
            checkpoint_latency: None,
            peak_rss: Some(peak_rss),
            exit: Some(ExitFigures {
                after: Duration::from_millis(1500),
                code: Some(0),
                killed: false,
            }),
        }
    }

    #[test]
    fn the_goal_needs_both_the_rate_and_the_memory() {
        assert_eq!(report(950, 1 << 30).goal_met(), Some(true));
        assert_eq!(report(850, 1 << 30).goal_met(), Some(false));
        assert_eq!(report(950, 5 << 30).goal_met(), Some(false));
        let mut short = report(950, 1 << 30);
        short.window = None;
        assert_eq!(short.goal_met(), None);
        let text = format_report(&report(950, 1 << 30));
        assert!(text.contains("requests/s (GET + HEAD)"), "{text}");
        assert!(text.contains("950.0  (95.0 % of the 1000/s"), "{text}");
        let peak = text
            .lines()
            .find(|l| l.contains("daemon peak RSS (VmHWM)"))
            .unwrap();
        assert!(peak.ends_with(" 1024 MiB"), "{peak}");
        assert!(text.contains("1.50 s, exit status 0"), "{text}");
        assert!(text.ends_with("met\n"), "{text}");
        assert!(format_report(&report(850, 1 << 30)).contains("MISSED"));
        assert!(format_report(&short).contains("no steady-state window"));
    }

    const METRICS: &str = "\
# TYPE forager_fetch_latency_seconds histogram
forager_fetch_latency_seconds_bucket{le=\"0.001\"} 10
forager_fetch_latency_seconds_bucket{le=\"0.01\"} 60
forager_fetch_latency_seconds_bucket{le=\"0.1\"} 100
forager_fetch_latency_seconds_bucket{le=\"+Inf\"} 100
forager_fetch_latency_seconds_sum 1.5
forager_fetch_latency_seconds_count 100
forager_fetch_latency_seconds_other 3
";

    #[test]
    fn histograms_are_scraped_and_their_quantiles_interpolated() {
        let h = scrape_histogram(METRICS, "forager_fetch_latency_seconds").unwrap();
        assert_eq!(h.buckets.len(), 4);
        assert_eq!(h.count, 100.0);
        assert!((h.mean().unwrap() - 0.015).abs() < 1e-12);
        // The 50th of 100 is the 40th of the 50 in (1 ms, 10 ms]: 1 + 9 × 40/50 ms.
        assert!((h.quantile(0.5).unwrap() - 0.0082).abs() < 1e-12);
        // The 5th is half-way into the first bucket, from 0.
        assert!((h.quantile(0.05).unwrap() - 0.0005).abs() < 1e-12);
        assert_eq!(h.quantile(1.5), None);
        assert!(scrape_histogram(METRICS, "forager_checkpoint_duration_seconds").is_none());
        // The window's share: only what came after the first scrape.
        let earlier = ScrapedHistogram {
            buckets: vec![
                (0.001, 10.0),
                (0.01, 10.0),
                (0.1, 10.0),
                (f64::INFINITY, 10.0),
            ],
            sum: 0.005,
            count: 10.0,
        };
        let d = h.since(&earlier);
        assert_eq!(d.count, 90.0);
        assert_eq!(d.buckets[0], (0.001, 0.0));
        assert!((d.quantile(0.5).unwrap() - 0.0091).abs() < 1e-12);
        // Everything in +Inf: the largest finite bound is all one can say.
        let slow = ScrapedHistogram {
            buckets: vec![(0.1, 0.0), (f64::INFINITY, 5.0)],
            sum: 50.0,
            count: 5.0,
        };
        assert_eq!(slow.quantile(0.5), Some(0.1));
    }

    #[test]
    fn host_names_sort_in_job_order() {
        assert_eq!(site_host(1), "site-0001.test");
        assert_eq!(job_name(1000), "site-1000");
        assert!(site_host(9) < site_host(10));
    }
}
