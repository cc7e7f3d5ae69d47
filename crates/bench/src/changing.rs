//! `forager bench --site changing[:SECTIONS[:SEED]]`: continuous jobs over a
//! site that publishes and revises files over simulated days
//! ([`crate::sites::changing`]), one job per revisit policy (`learned`,
//! `adaptive`, `fixed`), against the revisit bar: "the learned schedule finds
//! ≥ 90 % of new targets with a mean delay ≤ half of the fixed-interval
//! recrawl's at the same daily budget, and never more requests per new target
//! than the adaptive baseline".
//!
//! Like the multi-host bench ([`super::multihost`]), the crawler is the real
//! binary (`forager crawl`, a `mode = "continuous"` job) and this harness
//! serves the site on loopback and keeps its request log. Each run gets a
//! fresh site whose simulated time 0 is the crawl's start; after `days`
//! simulated days the crawler gets SIGINT. The request budget per simulated
//! day is enforced through the job's politeness delay (one simulated day /
//! budget) and checked from the server's log (the busiest simulated day).
//!
//! Figures, from the server's log and the job's `manifest.jsonl` against the
//! site's schedule, over the measured window (from the end of the first
//! simulated day, which the first full pass takes, to the end of the run):
//! the share of the files published in the window that the manifest holds,
//! the mean delay from publication to harvest (the first `200` for the file
//! in the log) in simulated hours, the requests made in the window per new
//! file found, and the revisions in place whose version was downloaded.
//! Seeds vary both the site (its seed + run seed − 1) and the job's seed;
//! every policy sees the same sites. The pure part ([`figures`],
//! [`markdown`]) is tested without a crawl.
//!
//! Must not touch: the network beyond 127.0.0.1, files outside its work
//! folder (removed at the end unless kept), or any process it did not start.

use crate::multihost::stop as stop_child;
use crate::report::{cell, MeanStd};
use crate::sites::changing::{
    ChangingParams, ChangingSite, Publication, Revision, SimClock, SimTime, DAY, HOST, HOUR,
};
use crate::sites::server::{RequestRecord, SiteServer};
use anyhow::{bail, ensure, Context};
use axum::http::Method;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Simulated days before the measured window: the first full pass.
pub const WARMUP_DAYS: u32 = 1;
/// The job's `revisit.min`, in simulated time: one simulated hour.
pub const REVISIT_MIN: i64 = HOUR;
/// The job's `revisit.max`, in simulated time: a simulated week.
pub const REVISIT_MAX: i64 = 7 * DAY;
/// The shortest real simulated day: `revisit.min` (a simulated hour) must
/// be at least the 1 s the job file accepts.
pub const MIN_REAL_DAY: Duration = Duration::from_secs(24);
/// Share of new files the learned schedule must find.
pub const GOAL_SHARE: f64 = 0.9;
/// Largest ratio of the learned schedule's mean delay to the fixed recrawl's.
pub const GOAL_DELAY_RATIO: f64 = 0.5;

/// A revisit policy of a continuous job (`[revisit] policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Revisits follow what revisiting paid, per page and per action.
    Learned,
    /// StormCrawler's rule: changed halves the interval, unchanged ×1.5.
    Adaptive,
    /// Every page every `revisit.min`: a full recrawl as fast as the budget allows.
    Fixed,
}

impl Policy {
    pub const ALL: [Policy; 3] = [Policy::Learned, Policy::Adaptive, Policy::Fixed];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Learned => "learned",
            Policy::Adaptive => "adaptive",
            Policy::Fixed => "fixed",
        }
    }

    pub fn parse(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The site a `--site` names, if it names the changing one:
/// `changing[:SECTIONS[:SEED]]` (default `changing:8:1`).
pub fn parse_changing(spec: &str) -> anyhow::Result<Option<ChangingParams>> {
    const FORM: &str = "changing[:SECTIONS[:SEED]]";
    let Some(rest) = spec.strip_prefix("changing") else {
        return Ok(None);
    };
    let mut values = [8u64, 1];
    if !rest.is_empty() {
        let Some(rest) = rest.strip_prefix(':') else {
            bail!("unknown site {spec:?}: expected {FORM}");
        };
        let parts: Vec<&str> = rest.split(':').collect();
        ensure!(parts.len() <= 2, "{spec:?}: expected {FORM}");
        for (slot, part) in values.iter_mut().zip(parts) {
            *slot = part
                .parse()
                .with_context(|| format!("{spec:?}: {part:?} is not a number (expected {FORM})"))?;
        }
    }
    let [sections, seed] = values;
    ensure!(
        (1..=20).contains(&sections),
        "{spec:?}: a changing site has 1 to 20 sections"
    );
    Ok(Some(ChangingParams::new(sections as usize, seed)))
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ChangingOptions {
    /// The forager binary (this one): it runs the crawls.
    pub exe: PathBuf,
    /// The site of run seed 1 (run seed `s` uses site seed `seed + s - 1`).
    pub params: ChangingParams,
    pub policies: Vec<Policy>,
    /// Runs per policy, seeds 1..=N.
    pub seeds: u64,
    /// Simulated days per run (the first is the warm-up).
    pub days: u32,
    /// Requests per simulated day (robots.txt included).
    pub budget_per_day: u64,
    /// Real length of a simulated day.
    pub real_day: Duration,
    /// Job files, config, state, logs; removed at the end unless `keep`.
    pub work_dir: PathBuf,
    pub keep: bool,
    /// `changing.md` and `changing.csv` go here.
    pub out: PathBuf,
}

impl ChangingOptions {
    /// The politeness delay that holds the budget: one simulated day / budget.
    pub fn delay(&self) -> Duration {
        self.real_day / u32::try_from(self.budget_per_day.max(1)).unwrap_or(u32::MAX)
    }

    /// The site of one run seed, its schedule covering the whole run.
    pub fn params_for(&self, seed: u64) -> ChangingParams {
        let mut p = self.params.with_horizon_days(self.days + 1);
        p.seed = self.params.seed.wrapping_add(seed.saturating_sub(1));
        p
    }

    fn check(&self) -> anyhow::Result<()> {
        ensure!(self.seeds > 0, "--seeds must be at least 1");
        ensure!(!self.policies.is_empty(), "no revisit policy to run");
        ensure!(
            self.days > WARMUP_DAYS,
            "--days must be more than {WARMUP_DAYS}: the first simulated day is the first full pass"
        );
        ensure!(
            self.budget_per_day > 0,
            "--budget must be at least 1 request a day"
        );
        ensure!(
            self.real_day >= MIN_REAL_DAY,
            "--day must be at least {} (revisit.min, a simulated hour, must be ≥ 1s)",
            humantime::format_duration(MIN_REAL_DAY)
        );
        ensure!(
            self.delay() >= Duration::from_millis(1),
            "--budget {} in a --day of {} leaves less than 1ms between requests",
            self.budget_per_day,
            humantime::format_duration(self.real_day)
        );
        Ok(())
    }
}

fn job_name(policy: Policy, seed: u64) -> String {
    format!("changing-{}-{seed}", policy.name())
}

/// A real duration as the job file writes it, rounded up to the millisecond
/// (a delay rounded down would let the crawl exceed its budget).
fn duration_text(d: Duration) -> String {
    format!("{}ms", d.as_micros().div_ceil(1000).max(1))
}

/// The real length of `sim_seconds` when a simulated day lasts `real_day`.
fn real_span(real_day: Duration, sim_seconds: i64) -> Duration {
    // In integers: a float product can fall a hair short (a simulated hour
    // of a 24 s day must be 1000ms, not 999ms, which the job file refuses).
    let sim = u128::try_from(sim_seconds.max(0)).unwrap_or(0);
    let nanos = real_day.as_nanos() * sim / DAY as u128;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The continuous job of one run: the whole site, the budget as a delay.
pub fn job_file_text(opts: &ChangingOptions, policy: Policy, seed: u64) -> String {
    format!(
        "name = \"{name}\"\n\
         seeds = [\"http://{HOST}/\"]\n\
         seed = {seed}\n\
         mode = \"continuous\"\n\
         [budget]\n\
         requests = 0\n\
         bytes = 0\n\
         early_stop = false\n\
         [politeness]\n\
         delay = \"{delay}\"\n\
         [revisit]\n\
         min = \"{min}\"\n\
         max = \"{max}\"\n\
         policy = \"{policy}\"\n",
        name = job_name(policy, seed),
        delay = duration_text(opts.delay()),
        min = duration_text(real_span(opts.real_day, REVISIT_MIN)),
        max = duration_text(real_span(opts.real_day, REVISIT_MAX)),
        policy = policy.name(),
    )
}

/// The config `forager crawl --config` reads: the site's host on the server.
pub fn config_text(server: std::net::SocketAddr) -> String {
    format!("allow_private = true\n[resolve]\n\"{HOST}\" = \"{server}\"\n")
}

/// One request of the server's log, in simulated time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimRequest {
    pub path: String,
    pub method: Method,
    pub status: u16,
    pub at: SimTime,
}

impl SimRequest {
    /// The log's requests to the site, in simulated time.
    pub fn of_log(log: &[RequestRecord], clock: &SimClock) -> Vec<SimRequest> {
        log.iter()
            .filter(|r| r.host == HOST)
            .map(|r| SimRequest {
                path: r.path_and_query.clone(),
                method: r.method.clone(),
                status: r.status,
                at: clock.sim_at(r.at),
            })
            .collect()
    }

    fn is_robots(&self) -> bool {
        self.path == "/robots.txt"
    }
}

/// One line of the job's `manifest.jsonl`, as far as the bench reads it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct ManifestLine {
    pub url: String,
    /// `"new"` or `"changed"` (continuous jobs).
    #[serde(default)]
    pub change: Option<String>,
}

impl ManifestLine {
    /// The path (and query) of the URL on the site, `None` for another host.
    fn site_path(&self) -> Option<String> {
        let url = url::Url::parse(&self.url).ok()?;
        if url.host_str() != Some(HOST) {
            return None;
        }
        Some(match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        })
    }
}

/// Every manifest line; a line that does not parse is an error (the job was
/// stopped cleanly, so none is torn).
pub fn read_manifest(path: &Path) -> anyhow::Result<Vec<ManifestLine>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a manifest row", path.display(), i + 1))
        })
        .collect()
}

/// The crawler's own request count, from the summary `forager crawl` prints
/// (`requests   N (… ; R robots.txt)`): (requests, robots.txt fetches).
pub fn crawler_requests(output: &str) -> Option<(u64, u64)> {
    let line = output.lines().find(|l| l.starts_with("requests "))?;
    let mut words = line.split_whitespace();
    words.next();
    let requests = words.next()?.parse().ok()?;
    let robots = line
        .rsplit_once(';')
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Some((requests, robots))
}

/// The simulated span measured: `[from, to)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub from: SimTime,
    pub to: SimTime,
}

impl Window {
    pub fn of_days(days: u32) -> Window {
        Window {
            from: SimTime(i64::from(WARMUP_DAYS) * DAY),
            to: SimTime(i64::from(days) * DAY),
        }
    }

    fn holds(&self, t: SimTime) -> bool {
        self.from <= t && t < self.to
    }
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFigures {
    pub policy: Policy,
    pub seed: u64,
    /// Files published in the window.
    pub published: usize,
    /// Of those, the ones the manifest holds.
    pub found: usize,
    /// Mean delay from publication to harvest of the files found, simulated hours.
    pub mean_delay_hours: Option<f64>,
    /// Revisions in place in the window, and those whose version was downloaded.
    pub revisions: usize,
    pub revisions_caught: usize,
    /// Requests in the window (robots.txt included), and of them answered 304.
    pub requests: usize,
    pub not_modified: usize,
    /// The most requests in one simulated day of the run (the budget's check).
    pub busiest_day: usize,
    /// Manifest rows marked `new` and `changed`.
    pub rows_new: usize,
    pub rows_changed: usize,
    /// Manifest rows that name no file the server had served with `200`
    /// (not on the site, or never fetched): must be 0.
    pub unpublished: usize,
    /// Requests in the server's whole log, robots.txt apart, and the crawler's own count.
    pub server_requests: usize,
    pub crawler_requests: Option<u64>,
}

impl RunFigures {
    pub fn share(&self) -> Option<f64> {
        (self.published > 0).then(|| self.found as f64 / self.published as f64)
    }

    pub fn requests_per_new(&self) -> Option<f64> {
        (self.found > 0).then(|| self.requests as f64 / self.found as f64)
    }

    pub fn revisions_share(&self) -> Option<f64> {
        (self.revisions > 0).then(|| self.revisions_caught as f64 / self.revisions as f64)
    }

    /// Whether the server's count and the crawler's agree. The job keeps one request in
    /// flight, and the stop that ends a run may cut it after the server logged it: that
    /// request is not the crawler's (its link stays unsettled), so the server may hold one more.
    pub fn request_counts_agree(&self) -> bool {
        self.crawler_requests
            .is_some_and(|c| (c..=c + 1).contains(&(self.server_requests as u64)))
    }
}

/// The ground truth a run is measured against.
pub struct Truth<'a> {
    pub publications: &'a [Publication],
    pub revisions: &'a [Revision],
    /// Whether a path is one of the site's files.
    pub is_file: &'a dyn Fn(&str) -> bool,
}

/// The figures of one run: a pure function of the site's schedule, the
/// server's log and the job's manifest.
pub fn figures(
    policy: Policy,
    seed: u64,
    truth: &Truth<'_>,
    log: &[SimRequest],
    manifest: &[ManifestLine],
    window: Window,
    crawler_requests: Option<u64>,
) -> RunFigures {
    // Times of the 200 answers to GETs, per path, in order.
    let mut fetched: HashMap<&str, Vec<SimTime>> = HashMap::new();
    for r in log
        .iter()
        .filter(|r| r.method == Method::GET && r.status == 200)
    {
        fetched.entry(r.path.as_str()).or_default().push(r.at);
    }
    fetched.values_mut().for_each(|v| v.sort_unstable());
    let paths: Vec<Option<String>> = manifest.iter().map(ManifestLine::site_path).collect();
    let harvested: HashSet<&str> = paths.iter().flatten().map(String::as_str).collect();
    let unpublished = paths
        .iter()
        .filter(|p| match p {
            None => true,
            Some(p) => !(truth.is_file)(p) || !fetched.contains_key(p.as_str()),
        })
        .count();
    let mut published = 0;
    let mut delays = Vec::new();
    for p in truth.publications.iter().filter(|p| window.holds(p.at)) {
        published += 1;
        if !harvested.contains(p.path.as_str()) {
            continue;
        }
        // The server serves a file only once published: its first 200 is the harvest.
        if let Some(first) = fetched.get(p.path.as_str()).and_then(|v| v.first()) {
            debug_assert!(*first >= p.at, "a file was served before its publication");
            delays.push((first.0 - p.at.0) as f64 / HOUR as f64);
        }
    }
    let found = truth
        .publications
        .iter()
        .filter(|p| window.holds(p.at) && harvested.contains(p.path.as_str()))
        .count();
    // A revision is caught when its version was downloaded: a 200 between
    // it and the file's next revision.
    let mut next_of: HashMap<&str, Vec<SimTime>> = HashMap::new();
    for r in truth.revisions {
        next_of.entry(r.path.as_str()).or_default().push(r.at);
    }
    let mut revisions = 0;
    let mut caught = 0;
    for r in truth.revisions.iter().filter(|r| window.holds(r.at)) {
        revisions += 1;
        let until = next_of
            .get(r.path.as_str())
            .and_then(|v| v.iter().find(|&&t| t > r.at).copied())
            .unwrap_or(SimTime(i64::MAX));
        if fetched
            .get(r.path.as_str())
            .is_some_and(|v| v.iter().any(|&t| t >= r.at && t < until))
        {
            caught += 1;
        }
    }
    let mut per_day: HashMap<i64, usize> = HashMap::new();
    for r in log {
        *per_day.entry(r.at.0.div_euclid(DAY)).or_insert(0) += 1;
    }
    let in_window = || log.iter().filter(|r| window.holds(r.at));
    RunFigures {
        policy,
        seed,
        published,
        found,
        mean_delay_hours: (!delays.is_empty())
            .then(|| delays.iter().sum::<f64>() / delays.len() as f64),
        revisions,
        revisions_caught: caught,
        requests: in_window().count(),
        not_modified: in_window().filter(|r| r.status == 304).count(),
        busiest_day: per_day.values().copied().max().unwrap_or(0),
        rows_new: manifest
            .iter()
            .filter(|m| m.change.as_deref() == Some("new"))
            .count(),
        rows_changed: manifest
            .iter()
            .filter(|m| m.change.as_deref() == Some("changed"))
            .count(),
        unpublished,
        server_requests: log.iter().filter(|r| !r.is_robots()).count(),
        crawler_requests,
    }
}

/// The summary of one policy's runs.
#[derive(Clone, Debug)]
pub struct PolicySummary {
    pub policy: Policy,
    pub runs: usize,
    pub share: Option<MeanStd>,
    pub delay_hours: Option<MeanStd>,
    pub requests_per_new: Option<MeanStd>,
    pub revisions_share: Option<MeanStd>,
    pub not_modified_share: Option<MeanStd>,
    pub busiest_day: Option<MeanStd>,
}

/// Mean ± std of a figure over the runs that have it.
fn column(runs: &[&RunFigures], f: impl Fn(&RunFigures) -> Option<f64>) -> Option<MeanStd> {
    let values: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
    MeanStd::of(&values)
}

pub fn summarise(policy: Policy, runs: &[RunFigures]) -> PolicySummary {
    let mine: Vec<&RunFigures> = runs.iter().filter(|r| r.policy == policy).collect();
    PolicySummary {
        policy,
        runs: mine.len(),
        share: column(&mine, RunFigures::share),
        delay_hours: column(&mine, |r| r.mean_delay_hours),
        requests_per_new: column(&mine, RunFigures::requests_per_new),
        revisions_share: column(&mine, RunFigures::revisions_share),
        not_modified_share: column(&mine, |r| {
            (r.requests > 0).then(|| r.not_modified as f64 / r.requests as f64)
        }),
        busiest_day: column(&mine, |r| Some(r.busiest_day as f64)),
    }
}

/// The setting a report names.
#[derive(Clone, Debug)]
pub struct Setting {
    pub params: ChangingParams,
    pub days: u32,
    pub budget_per_day: u64,
    pub real_day: Duration,
    pub delay: Duration,
    /// URLs of the first run's site at time 0: the first full pass.
    pub first_pass: usize,
}

/// The report: the setting, one row per policy, what the bar asks, and the checks.
pub fn markdown(setting: &Setting, runs: &[RunFigures], policies: &[Policy]) -> String {
    let p = &setting.params;
    let mut out = String::new();
    let published = MeanStd::of(&runs.iter().map(|r| r.published as f64).collect::<Vec<_>>());
    let revisions = MeanStd::of(&runs.iter().map(|r| r.revisions as f64).collect::<Vec<_>>());
    let _ = writeln!(
        out,
        "**changing:{}:{}** — {} sections publishing {:.2} to {:.3} files a simulated day, \
         {} simulated days of {} each, a budget of {} requests a simulated day \
         (politeness delay {}), a first full pass of {} requests; measured from day \
         {WARMUP_DAYS} to day {}: {} new files published, {} revisions in place\n",
        p.sections,
        p.seed,
        p.sections,
        p.rate(0),
        p.rate(p.sections - 1),
        setting.days,
        humantime::format_duration(setting.real_day),
        setting.budget_per_day,
        humantime::format_duration(setting.delay),
        setting.first_pass,
        setting.days,
        cell(published, 1),
        cell(revisions, 1),
    );
    out.push_str(
        "| policy | runs | new files found | mean delay (sim. hours) | requests per new file \
         | revisions caught | 304 share | busiest day (requests) |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let summaries: Vec<PolicySummary> = policies.iter().map(|&k| summarise(k, runs)).collect();
    for s in &summaries {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            s.policy.name(),
            s.runs,
            cell(s.share, 3),
            cell(s.delay_hours, 1),
            cell(s.requests_per_new, 1),
            cell(s.revisions_share, 3),
            cell(s.not_modified_share, 3),
            cell(s.busiest_day, 0),
        );
    }
    out.push_str(
        "\nnew files found: share of the files published in the window that the job's \
         manifest holds. Mean delay: from publication to the first download, over the \
         files found, in simulated hours. Requests per new file: requests in the window \
         (robots.txt included) / new files found. Revisions caught: share of the revisions \
         in place whose version was downloaded before the next one. 304 share: requests in \
         the window answered Not Modified. Busiest day: the most requests in one simulated \
         day, from the server's log (the budget's check). Mean ± std over seeds.\n",
    );
    let by = |k: Policy| summaries.iter().find(|s| s.policy == k);
    let mut bar = Vec::new();
    if let Some(l) = by(Policy::Learned) {
        if let Some(share) = l.share {
            bar.push(format!(
                "learned finds {:.1} % of new files (bar ≥ {:.0} %): {}",
                share.mean * 100.0,
                GOAL_SHARE * 100.0,
                met(share.mean >= GOAL_SHARE)
            ));
        }
        if let (Some(ld), Some(fd)) = (l.delay_hours, by(Policy::Fixed).and_then(|f| f.delay_hours))
        {
            bar.push(format!(
                "learned's mean delay is {:.2}× fixed's ({:.1} h vs {:.1} h; bar ≤ {GOAL_DELAY_RATIO}): {}",
                ld.mean / fd.mean.max(1e-9),
                ld.mean,
                fd.mean,
                met(ld.mean <= GOAL_DELAY_RATIO * fd.mean)
            ));
        }
        if let (Some(lr), Some(ar)) = (
            l.requests_per_new,
            by(Policy::Adaptive).and_then(|a| a.requests_per_new),
        ) {
            bar.push(format!(
                "learned makes {:.1} requests per new file, adaptive {:.1} (bar: not more): {}",
                lr.mean,
                ar.mean,
                met(lr.mean <= ar.mean)
            ));
        }
    }
    if !bar.is_empty() {
        out.push_str("\nThe revisit bar, on the means:\n");
        for line in bar {
            let _ = writeln!(out, "- {line}");
        }
    }
    let over = runs
        .iter()
        .filter(|r| r.busiest_day as u64 > setting.budget_per_day + 1)
        .count();
    let unpublished: usize = runs.iter().map(|r| r.unpublished).sum();
    let mismatched = runs.iter().filter(|r| !r.request_counts_agree()).count();
    let _ = writeln!(
        out,
        "\nChecks: {over} of {} runs over the budget (+1 for the day's boundary); {unpublished} \
         manifest rows naming no file the server served; {mismatched} runs whose request count \
         (server's log, robots.txt apart) differs from the crawler's by more than the one \
         request a stop may cut.",
        runs.len()
    );
    out
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "missed"
    }
}

/// One line of the per-run CSV.
pub fn csv_header() -> &'static str {
    "policy,seed,published,found,share,mean_delay_hours,requests,requests_per_new,revisions,\
     revisions_caught,not_modified,busiest_day,rows_new,rows_changed,unpublished,server_requests,\
     crawler_requests\n"
}

pub fn csv_row(r: &RunFigures) -> String {
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
        r.policy.name(),
        r.seed,
        r.published,
        r.found,
        opt(r.share()),
        opt(r.mean_delay_hours),
        r.requests,
        opt(r.requests_per_new()),
        r.revisions,
        r.revisions_caught,
        r.not_modified,
        r.busiest_day,
        r.rows_new,
        r.rows_changed,
        r.unpublished,
        r.server_requests,
        r.crawler_requests.map_or(String::new(), |n| n.to_string()),
    )
}

/// Run every policy and seed; `progress` gets a line per run. Returns the
/// report (also written to `out/changing.md`, the runs to `out/changing.csv`).
pub async fn run(opts: &ChangingOptions, progress: &mut dyn FnMut(&str)) -> anyhow::Result<String> {
    opts.check()?;
    std::fs::create_dir_all(&opts.work_dir)
        .with_context(|| format!("creating {}", opts.work_dir.display()))?;
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating {}", opts.out.display()))?;
    let result = run_in(opts, progress).await;
    if !opts.keep {
        if let Err(e) = std::fs::remove_dir_all(&opts.work_dir) {
            progress(&format!(
                "could not remove {}: {e}",
                opts.work_dir.display()
            ));
        }
    }
    result
}

async fn run_in(opts: &ChangingOptions, progress: &mut dyn FnMut(&str)) -> anyhow::Result<String> {
    progress(&format!(
        "{} policies × {} seeds, {} simulated days of {} each: about {} in all; work folder {}",
        opts.policies.len(),
        opts.seeds,
        opts.days,
        humantime::format_duration(opts.real_day),
        humantime::format_duration(Duration::from_secs(
            opts.real_day.as_secs()
                * u64::from(opts.days)
                * opts.seeds
                * opts.policies.len() as u64
        )),
        opts.work_dir.display()
    ));
    // The window starts after the first simulated day: the first pass must fit in it.
    let first_pass = ChangingSite::new(opts.params_for(1), SimClock::starting_now(opts.real_day))
        .urls_at(SimTime(0));
    if first_pass as u64 > opts.budget_per_day {
        progress(&format!(
            "warning: the site's first full pass ({first_pass} requests) exceeds a day's \
             budget ({}): the measured window starts before the first pass ends",
            opts.budget_per_day
        ));
    }
    let mut runs = Vec::new();
    let mut csv = String::from(csv_header());
    for seed in 1..=opts.seeds {
        for &policy in &opts.policies {
            let run = run_one(opts, policy, seed).await?;
            progress(&run_line(&run));
            csv.push_str(&csv_row(&run));
            runs.push(run);
        }
    }
    let setting = Setting {
        params: opts.params,
        days: opts.days,
        budget_per_day: opts.budget_per_day,
        real_day: opts.real_day,
        delay: opts.delay(),
        first_pass,
    };
    let text = markdown(&setting, &runs, &opts.policies);
    let csv_path = opts.out.join("changing.csv");
    std::fs::write(&csv_path, csv).with_context(|| format!("writing {}", csv_path.display()))?;
    let md_path = opts.out.join("changing.md");
    std::fs::write(&md_path, &text).with_context(|| format!("writing {}", md_path.display()))?;
    Ok(text)
}

fn run_line(r: &RunFigures) -> String {
    format!(
        "  {:<8} seed {}: {}/{} new files, mean delay {} h, {} requests in the window ({} per new file), \
         {}/{} revisions caught, busiest day {} requests; server {} requests, crawler {}",
        r.policy.name(),
        r.seed,
        r.found,
        r.published,
        r.mean_delay_hours.map_or("—".into(), |d| format!("{d:.1}")),
        r.requests,
        r.requests_per_new().map_or("—".into(), |d| format!("{d:.1}")),
        r.revisions_caught,
        r.revisions,
        r.busiest_day,
        r.server_requests,
        r.crawler_requests.map_or("?".into(), |n| n.to_string()),
    )
}

/// The last lines of a crawl's output, for an error (the work folder may be removed).
fn log_tail(path: &Path) -> String {
    const LINES: usize = 8;
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(LINES)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// One continuous crawl of a fresh site for `days` simulated days.
async fn run_one(opts: &ChangingOptions, policy: Policy, seed: u64) -> anyhow::Result<RunFigures> {
    let name = job_name(policy, seed);
    let job = opts.work_dir.join(format!("{name}.toml"));
    std::fs::write(&job, job_file_text(opts, policy, seed))
        .with_context(|| format!("writing {}", job.display()))?;
    let log_path = opts.work_dir.join(format!("{name}.log"));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let state = opts.work_dir.join(format!("state-{name}"));
    // The site's simulated time 0 is the crawl's start.
    let clock = SimClock::starting_now(opts.real_day);
    let site = Arc::new(ChangingSite::new(opts.params_for(seed), clock));
    let server = SiteServer::start(site.sites()).await?;
    let config = opts.work_dir.join(format!("{name}-config.toml"));
    std::fs::write(&config, config_text(server.addr()))
        .with_context(|| format!("writing {}", config.display()))?;
    let mut child = tokio::process::Command::new(&opts.exe)
        .arg("crawl")
        .arg(&job)
        .arg("--config")
        .arg(&config)
        .arg("--state-dir")
        .arg(&state)
        .arg("--no-progress")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("crawl log")?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} crawl", opts.exe.display()))?;
    let pid = child.id().context("the crawler exited at once")?;
    let end: Instant = clock.real_zero + opts.real_day * opts.days;
    let exited = tokio::select! {
        status = child.wait() => Some(status.context("waiting for the crawler")?),
        _ = tokio::time::sleep_until(end.into()) => None,
    };
    match exited {
        Some(status) => {
            let _ = server.shutdown().await;
            bail!(
                "the {name} crawl ended by itself ({status}) before its {} simulated days: \
                 a continuous job never finishes; its last words:\n{}",
                opts.days,
                log_tail(&log_path)
            );
        }
        None => stop_child(&mut child, pid).await.with_context(|| {
            format!(
                "stopping the {name} crawl; its last words:\n{}",
                log_tail(&log_path)
            )
        })?,
    }
    let records = server.log();
    let _ = server.shutdown().await;
    let output = std::fs::read_to_string(&log_path)
        .with_context(|| format!("reading {}", log_path.display()))?;
    let manifest = read_manifest(&state.join("targets").join(&name).join("manifest.jsonl"))?;
    let log = SimRequest::of_log(&records, &clock);
    let publications = site.publications();
    let revisions = site.revisions();
    let is_file = |p: &str| site.item(p).is_some();
    let truth = Truth {
        publications: &publications,
        revisions: &revisions,
        is_file: &is_file,
    };
    Ok(figures(
        policy,
        seed,
        &truth,
        &log,
        &manifest,
        Window::of_days(opts.days),
        crawler_requests(&output).map(|(n, _)| n),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ChangingOptions {
        ChangingOptions {
            exe: PathBuf::from("forager"),
            params: ChangingParams::new(8, 1),
            policies: Policy::ALL.to_vec(),
            seeds: 2,
            days: 5,
            budget_per_day: 240,
            real_day: Duration::from_secs(48),
            work_dir: PathBuf::from("w"),
            keep: false,
            out: PathBuf::from("o"),
        }
    }

    #[test]
    fn sites_are_parsed_with_defaults_and_bad_ones_refused() {
        assert_eq!(parse_changing("web:10").unwrap(), None);
        assert_eq!(
            parse_changing("changing").unwrap(),
            Some(ChangingParams::new(8, 1))
        );
        assert_eq!(
            parse_changing("changing:3:7").unwrap(),
            Some(ChangingParams::new(3, 7))
        );
        for (bad, says) in [
            ("changingx", "expected changing"),
            ("changing:0", "1 to 20 sections"),
            ("changing:x", "not a number"),
            ("changing:3:1:2", "expected changing"),
        ] {
            let e = format!("{:#}", parse_changing(bad).unwrap_err());
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_budget_becomes_the_delay_and_bad_settings_are_refused() {
        let opts = options();
        assert_eq!(opts.delay(), Duration::from_millis(200));
        assert!(opts.check().is_ok());
        assert_eq!(opts.params_for(1).seed, 1);
        assert_eq!(opts.params_for(3).seed, 3);
        assert_eq!(opts.params_for(3).horizon_days, 6);
        for (change, says) in [
            (
                &(|o: &mut ChangingOptions| o.days = 1) as &dyn Fn(&mut ChangingOptions),
                "--days",
            ),
            (&|o| o.real_day = Duration::from_secs(10), "--day"),
            (&|o| o.budget_per_day = 0, "--budget"),
            (&|o| o.budget_per_day = 1_000_000, "less than 1ms"),
            (&|o| o.policies.clear(), "no revisit policy"),
        ] {
            let mut o = options();
            change(&mut o);
            let e = format!("{:#}", o.check().unwrap_err());
            assert!(e.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn the_job_file_states_the_continuous_interface() {
        let text = job_file_text(&options(), Policy::Adaptive, 2);
        let job: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(job["name"].as_str(), Some("changing-adaptive-2"));
        assert_eq!(job["mode"].as_str(), Some("continuous"));
        assert_eq!(job["seed"].as_integer(), Some(2));
        let revisit = job["revisit"].as_table().unwrap();
        assert_eq!(revisit["policy"].as_str(), Some("adaptive"));
        // A simulated hour and week of a 48 s day.
        assert_eq!(revisit["min"].as_str(), Some("2000ms"));
        assert_eq!(revisit["max"].as_str(), Some("336000ms"));
        assert_eq!(job["politeness"]["delay"].as_str(), Some("200ms"));
        assert_eq!(job["budget"]["requests"].as_integer(), Some(0));
        // The shortest day: revisit.min is exactly the 1s the job file accepts.
        let mut shortest = options();
        shortest.real_day = MIN_REAL_DAY;
        let job: toml::Table = toml::from_str(&job_file_text(&shortest, Policy::Fixed, 1)).unwrap();
        assert_eq!(job["revisit"]["min"].as_str(), Some("1000ms"));
        assert_eq!(duration_text(Duration::from_micros(3_428_571)), "3429ms");
        for d in ["2000ms", "336000ms", "200ms"] {
            assert!(forager_core::config::parse_duration(d).is_ok());
        }
        let server: std::net::SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let config =
            forager_core::config::parse_daemon(&config_text(server), Path::new("f.toml")).unwrap();
        assert!(config.allow_private);
        assert_eq!(config.resolve.get(HOST), Some(&server));
    }

    #[test]
    fn the_crawlers_summary_is_read() {
        let out = "job        changing-learned-1 (sb)\nstopped    interrupted\n\
                   requests   812 (800 GET, 12 HEAD, 0 redirects; 1 robots.txt)\npages      3\n";
        assert_eq!(crawler_requests(out), Some((812, 1)));
        assert_eq!(crawler_requests("nothing"), None);
    }

    fn req(path: &str, status: u16, hours: i64) -> SimRequest {
        SimRequest {
            path: path.into(),
            method: Method::GET,
            status,
            at: SimTime(hours * HOUR),
        }
    }

    fn row(path: &str, change: &str) -> ManifestLine {
        ManifestLine {
            url: format!("http://{HOST}{path}"),
            change: Some(change.into()),
        }
    }

    #[test]
    fn figures_follow_the_schedule_the_log_and_the_manifest() {
        let publication = |path: &str, hours: i64| Publication {
            path: path.into(),
            section: 0,
            at: SimTime(hours * HOUR),
        };
        let publications = vec![
            publication("/f/old.csv", -5),   // before the window: not counted
            publication("/f/a.csv", 30),     // found 2 h later
            publication("/f/b.csv", 40),     // found 6 h later
            publication("/f/c.csv", 50),     // never fetched
            publication("/f/late.csv", 200), // after the window
        ];
        let revisions = vec![
            Revision {
                path: "/f/a.csv".into(),
                version: 1,
                at: SimTime(60 * HOUR),
            },
            Revision {
                path: "/f/a.csv".into(),
                version: 2,
                at: SimTime(70 * HOUR),
            },
            Revision {
                path: "/f/b.csv".into(),
                version: 1,
                at: SimTime(80 * HOUR),
            },
        ];
        let files: HashSet<&str> = publications.iter().map(|p| p.path.as_str()).collect();
        let is_file = |p: &str| files.contains(p);
        let truth = Truth {
            publications: &publications,
            revisions: &revisions,
            is_file: &is_file,
        };
        let log = vec![
            req("/robots.txt", 200, 0),
            req("/", 200, 0),
            req("/f/old.csv", 200, 1),
            req("/f/a.csv", 200, 32),
            req("/f/b.csv", 200, 46),
            req("/f/a.csv", 304, 50),
            req("/f/a.csv", 200, 75), // version 2: version 1 was missed
            req("/f/b.csv", 304, 90), // a 304 after b's revision: not caught
            req("/", 304, 100),
        ];
        let manifest = vec![
            row("/f/old.csv", "new"),
            row("/f/a.csv", "new"),
            row("/f/b.csv", "new"),
            row("/f/a.csv", "changed"),
            row("/f/never.csv", "new"), // not a file the server served
        ];
        let window = Window::of_days(5); // hours 24 to 120
        let f = figures(Policy::Learned, 1, &truth, &log, &manifest, window, Some(8));
        assert_eq!((f.published, f.found), (3, 2));
        assert_eq!(f.mean_delay_hours, Some(4.0));
        assert_eq!((f.revisions, f.revisions_caught), (3, 1));
        assert_eq!((f.requests, f.not_modified), (6, 3));
        assert_eq!(f.busiest_day, 3); // hours 0, 0, 1 on day 0; 32, 46 on day 1…
        assert_eq!((f.rows_new, f.rows_changed), (4, 1));
        assert_eq!(f.unpublished, 1);
        assert_eq!((f.server_requests, f.crawler_requests), (8, Some(8)));
        assert_eq!(f.share(), Some(2.0 / 3.0));
        assert_eq!(f.requests_per_new(), Some(3.0));
        assert!(csv_row(&f).starts_with("learned,1,3,2,0.6667,4.0000,6,3.0000,3,1,3,3,4,1,1,8,8\n"));
        assert_eq!(
            csv_header().split(',').count(),
            csv_row(&f).split(',').count()
        );
    }

    #[test]
    fn the_report_names_the_setting_and_says_whether_the_bar_is_met() {
        let run = |policy, seed, found, delay, requests| RunFigures {
            policy,
            seed,
            published: 100,
            found,
            mean_delay_hours: Some(delay),
            revisions: 10,
            revisions_caught: 5,
            requests,
            not_modified: requests / 2,
            busiest_day: 240,
            rows_new: found,
            rows_changed: 5,
            unpublished: 0,
            server_requests: requests,
            crawler_requests: Some(requests as u64),
        };
        let runs = vec![
            run(Policy::Learned, 1, 95, 2.0, 950),
            run(Policy::Learned, 2, 93, 3.0, 930),
            run(Policy::Adaptive, 1, 80, 6.0, 960),
            run(Policy::Adaptive, 2, 82, 6.0, 984),
            run(Policy::Fixed, 1, 90, 12.0, 960),
            run(Policy::Fixed, 2, 90, 12.0, 960),
        ];
        let setting = Setting {
            params: ChangingParams::new(8, 1),
            days: 5,
            budget_per_day: 240,
            real_day: Duration::from_secs(48),
            delay: Duration::from_millis(200),
            first_pass: 265,
        };
        let text = markdown(&setting, &runs, &Policy::ALL);
        assert!(
            text.starts_with("**changing:8:1** — 8 sections publishing 8.00 to 0.06"),
            "{text}"
        );
        assert!(text.contains("a first full pass of 265 requests"), "{text}");
        assert!(text.contains("100.0 ± 0.0 new files published"), "{text}");
        assert!(
            text.contains(
                "| learned | 2 | 0.940 ± 0.014 | 2.5 ± 0.7 | 10.0 ± 0.0 | 0.500 ± 0.000 |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| fixed | 2 | 0.900 ± 0.000 | 12.0 ± 0.0 |"),
            "{text}"
        );
        assert!(
            text.contains("learned finds 94.0 % of new files (bar ≥ 90 %): met"),
            "{text}"
        );
        assert!(
            text.contains(
                "learned's mean delay is 0.21× fixed's (2.5 h vs 12.0 h; bar ≤ 0.5): met"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "learned makes 10.0 requests per new file, adaptive 12.0 (bar: not more): met"
            ),
            "{text}"
        );
        assert!(
            text.contains("Checks: 0 of 6 runs over the budget"),
            "{text}"
        );
        assert!(text.contains("0 runs whose request count"), "{text}");
        // A run over its budget, or counted differently by the crawler, shows.
        let mut bad = runs.clone();
        bad[0].busiest_day = 300;
        bad[1].crawler_requests = None;
        let text = markdown(&setting, &bad, &Policy::ALL);
        assert!(
            text.contains("Checks: 1 of 6 runs over the budget"),
            "{text}"
        );
        assert!(text.contains("1 runs whose request count"), "{text}");
        // The one request a stop cuts is the server's alone; two are a defect.
        let mut cut = runs.clone();
        cut[2].server_requests += 1;
        cut[3].server_requests += 2;
        assert!(cut[2].request_counts_agree() && !cut[3].request_counts_agree());
        let text = markdown(&setting, &cut, &Policy::ALL);
        assert!(text.contains("1 runs whose request count"), "{text}");
    }
}
