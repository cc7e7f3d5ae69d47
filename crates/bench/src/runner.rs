//! Runs crawl jobs against loopback sites through the real engine and records
//! a per-request trace.
//!
//! The only differences from a production crawl: the site's host name maps to
//! 127.0.0.1 (a resolve override), private addresses are allowed, there is no
//! politeness delay, and each run gets a fresh state directory and fresh MIME
//! filters so no run learns from another.

use super::groundtruth::{self, GroundTruth, WalkOptions};
use crate::sites::server::Site;
use crate::sites::synthetic::{SyntheticSite, SyntheticSpec};
use anyhow::Context;
use forager::engine::{CrawlObserver, Engine, EngineConfig, RequestEvent, RequestKind, Runner};
use forager::fetch::FetchConfig;
use forager::store::JobCounters;
use forager_core::config::{JobSpec, NeitherLinks, TargetsSpec};
use forager_core::mime::{Label, Preset as MimePreset};
use forager_core::strategy::{StrategyKind, StrategyStats};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use url::Url;

/// A website under test.
#[derive(Clone)]
pub struct BenchSite {
    /// Short name used in tables, file names and plots.
    pub name: String,
    /// Host name it is served under (e.g. `small.test`).
    pub host: String,
    pub site: Arc<dyn Site>,
    /// Path and query of the start page.
    pub start_path: String,
    /// What the job harvests on this site.
    pub targets: TargetsSpec,
}

impl BenchSite {
    /// A synthetic site (a preset, maybe resized), served as `PRESET.synthetic.test`.
    pub fn synthetic(spec: SyntheticSpec) -> anyhow::Result<BenchSite> {
        let site = SyntheticSite::new(spec.params())?;
        Ok(BenchSite {
            name: format!("synthetic-{}", spec.name()),
            // The preset's host whatever the size: sb learns from whole URLs,
            // so `large:pages=100000` crawls exactly as `large` does.
            host: format!("{}.synthetic.test", spec.preset.name()),
            start_path: site.start_path().to_string(),
            site: Arc::new(site),
            targets: BenchSite::statistics_targets(),
        })
    }

    /// The start URL as the crawler sees it: the host name and no port (the
    /// resolve override of [`run_once`] supplies the server's).
    ///
    /// Why no port: the server's port is random, and every URL of the crawl
    /// would carry it. sb's URL classifier learns from the character 2-grams of
    /// the whole URL and the MIME Bloom filters hash it, so a different port
    /// gave different predictions and lookups, and two runs with the same seed
    /// on the same site took different decisions after a few thousand requests.
    pub fn start_url(&self) -> anyhow::Result<Url> {
        Url::parse(&format!("http://{}{}", self.host, self.start_path))
            .with_context(|| format!("start URL of bench site {}", self.name))
    }

    /// Walk the site in memory: its reachable pages and targets.
    pub fn ground_truth(&self) -> anyhow::Result<GroundTruth> {
        let mut opts = WalkOptions::new(self.targets.target_set());
        opts.max_pages = 5_000_000;
        let start = self.start_url()?;
        Ok(groundtruth::walk(
            self.site.as_ref(),
            &self.host,
            &start,
            &opts,
        ))
    }

    /// Targets of the `statistics` preset (synthetic sites).
    pub fn statistics_targets() -> TargetsSpec {
        JobSpec::new("x", Vec::new()).targets
    }

    /// Targets of the real documentation sites (shared/corpora/README.md):
    /// downloadable example code and data, not `text/plain` nor HTML.
    pub fn corpus_targets() -> TargetsSpec {
        let mut t = Self::statistics_targets();
        t.preset = MimePreset::None;
        t.mime = crate::sites::directory::CORPUS_TARGET_MIME
            .iter()
            .map(|m| m.to_string())
            .collect();
        t
    }
}

/// One request of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TraceRow {
    /// 1-based request number (GET + HEAD, redirect hops included).
    pub index: u64,
    pub kind: RequestKind,
    pub bytes: u64,
    /// This request saved a new target.
    pub target: bool,
    /// Its answer was neither a page nor a target: a 2xx of another type, or a 4xx.
    pub neither: bool,
}

/// What one run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub site: String,
    pub strategy: StrategyKind,
    pub seed: u64,
    /// Empty unless [`RunConfig::trace`].
    pub trace: Vec<TraceRow>,
    /// The URL of each request that saved a target, in the order of
    /// [`RunResult::trace`]'s target rows (empty unless [`RunConfig::trace`]):
    /// a benchmark whose ground truth is a list of files (the portals) tells
    /// which of them a run harvested, and when.
    pub target_urls: Vec<String>,
    pub counters: JobCounters,
    pub stats: StrategyStats,
    pub wall: Duration,
    /// The prior the job left in its store for its target kinds
    /// ([`forager::engine::prior`]): what it learnt, to start other jobs warm.
    pub prior: Option<Vec<u8>>,
}

/// How to run one crawl.
#[derive(Clone, Copy, Debug)]
pub struct RunConfig {
    pub strategy: StrategyKind,
    pub seed: u64,
    /// Request budget (0 = unlimited).
    pub max_requests: u64,
    pub early_stop: bool,
    pub neither_links: NeitherLinks,
    /// Keep one [`TraceRow`] per request in [`RunResult::trace`] (24 bytes
    /// each: 40 MiB over a million-page crawl, which CPU mode, reporting
    /// only the counters, does not count against the crawler's memory).
    pub trace: bool,
}

struct TraceObserver {
    keep: bool,
    rows: Vec<TraceRow>,
    target_urls: Vec<String>,
}

impl CrawlObserver for TraceObserver {
    fn request(&mut self, e: &RequestEvent<'_>) {
        if !self.keep {
            return;
        }
        self.rows.push(TraceRow {
            index: e.counters.requests,
            kind: e.kind,
            bytes: e.bytes,
            target: e.saved_target,
            neither: e.label == Some(Label::Neither)
                || e.status.is_some_and(|s| (400..500).contains(&s)),
        });
        if e.saved_target {
            self.target_urls.push(e.url.to_string());
        }
    }
}

/// Crawl `site` (served at `server`) once with a fresh state under `state_root`.
pub async fn run_once(
    server: SocketAddr,
    site: &BenchSite,
    config: RunConfig,
    state_root: &Path,
) -> anyhow::Result<RunResult> {
    run_once_with_prior(server, site, config, state_root, None).await
}

/// [`run_once`], the fresh store holding `prior` (what [`RunResult::prior`]
/// of a crawl of another site gave) for the job's target kinds: the job
/// starts warm, as a new job of a daemon that crawled that site would.
pub async fn run_once_with_prior(
    server: SocketAddr,
    site: &BenchSite,
    config: RunConfig,
    state_root: &Path,
    prior: Option<&[u8]>,
) -> anyhow::Result<RunResult> {
    run_once_tuned(server, site, config, state_root, prior, |_| {}).await
}

/// [`run_once_with_prior`] with the job's spec changed by `tune` after the
/// benchmark's own settings (the portal benchmark's `render` mode).
pub async fn run_once_tuned(
    server: SocketAddr,
    site: &BenchSite,
    config: RunConfig,
    state_root: &Path,
    prior: Option<&[u8]>,
    tune: impl FnOnce(&mut JobSpec),
) -> anyhow::Result<RunResult> {
    let name = run_name(site, &config);
    let state_dir = clear_state_dir(state_root, site, &config)?;
    let engine = Engine::open(EngineConfig {
        state_dir,
        fetch: FetchConfig {
            allow_private: true,
            resolve: vec![(site.host.clone(), server)],
            ..FetchConfig::default()
        },
        // Checkpoints are part of the pipeline being measured, at the default pace.
        checkpoint_interval: Duration::from_secs(5),
        cache_bytes: 32 << 20,
    })?;
    let mut spec = JobSpec::new(&name, vec![site.start_url()?]);
    spec.strategy = config.strategy;
    spec.seed = config.seed;
    spec.targets = site.targets.clone();
    spec.politeness.delay = Duration::ZERO;
    spec.budget.requests = config.max_requests;
    spec.budget.bytes = 0;
    spec.budget.early_stop = config.early_stop;
    spec.budget.neither_links = config.neither_links;
    tune(&mut spec);
    let prior_key = forager::engine::prior::key(&spec.targets);
    if let Some(bytes) = prior {
        let mut delta = forager::store::JobDelta::new(&name);
        delta.stage_shared(std::iter::once((prior_key.clone(), bytes.to_vec())));
        engine
            .store
            .commit(delta)
            .await
            .map_err(|failed| anyhow::anyhow!("storing the prior: {}", failed.error))?;
    }
    let mut observer = TraceObserver {
        keep: config.trace,
        rows: Vec::new(),
        target_urls: Vec::new(),
    };
    let started = Instant::now();
    let (_stop_tx, stop_rx) = watch::channel(false);
    let outcome = Runner::new(&engine, &spec, &mut observer)?
        .run(stop_rx)
        .await?;
    Ok(RunResult {
        site: site.name.clone(),
        strategy: config.strategy,
        seed: config.seed,
        trace: observer.rows,
        target_urls: observer.target_urls,
        counters: outcome.counters,
        stats: outcome.stats,
        wall: started.elapsed(),
        prior: engine.store.shared(&prior_key)?,
    })
}

/// The job name of one run: its site, strategy and seed.
pub(crate) fn run_name(site: &BenchSite, config: &RunConfig) -> String {
    format!(
        "{}-{}-{}",
        sanitize(&site.name),
        config.strategy.name(),
        config.seed
    )
}

/// The state folder of one run, emptied of an earlier run's. A caller that
/// measures the run's CPU clears it first, since removing the files an
/// earlier run saved is not part of the crawl.
pub fn clear_state_dir(
    state_root: &Path,
    site: &BenchSite,
    config: &RunConfig,
) -> anyhow::Result<PathBuf> {
    let state_dir = state_root.join(run_name(site, config));
    if state_dir.exists() {
        std::fs::remove_dir_all(&state_dir)
            .with_context(|| format!("clearing {}", state_dir.display()))?;
    }
    Ok(state_dir)
}

/// Keep names usable as job names and file names.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// How a benchmark's job over a web of many hosts is configured beyond its
/// web: by default, the default job of scope `any` (64 requests in flight,
/// politeness per pay-level domain, the strategy's default look-ahead)
/// with no delay; each field overrides one setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobSetting {
    /// `politeness.delay`.
    pub delay: Duration,
    /// `politeness.max_in_flight` (`None`: the default of scope any).
    pub max_in_flight: Option<u32>,
    /// `politeness.look_ahead` (`None`: the strategy's default).
    pub look_ahead: Option<u32>,
    /// `politeness.per` (`None`: per pay-level domain, the default of scope any).
    pub per: Option<forager_core::extract::PolitenessPer>,
}

impl JobSetting {
    /// The paper's setting of the multi-host benchmarks: one request in
    /// flight, no delay (each choice made with every answer before it).
    pub const SEQUENTIAL: JobSetting = JobSetting {
        delay: Duration::ZERO,
        max_in_flight: Some(1),
        look_ahead: None,
        per: None,
    };

    /// Set these on `spec`.
    pub fn apply(&self, spec: &mut JobSpec) {
        spec.politeness.delay = self.delay;
        spec.politeness.max_in_flight = self.max_in_flight;
        spec.politeness.look_ahead = self.look_ahead;
        spec.politeness.per = self.per;
    }

    /// As a reader of a report sees it, e.g. `delay 1s, in flight 64 (default), per host, look-ahead 16 (default)`.
    pub fn describe(&self, strategy: forager_core::strategy::StrategyKind) -> String {
        let mut spec = JobSpec::new("setting", Vec::new());
        spec.scope = forager_core::extract::ScopeKind::Any;
        spec.strategy = strategy;
        self.apply(&mut spec);
        let default = |set: bool| if set { "" } else { " (default)" };
        let per = match spec.politeness_per() {
            forager_core::extract::PolitenessPer::Host => "host",
            forager_core::extract::PolitenessPer::Pld => "pay-level domain",
        };
        format!(
            "delay {}, in flight {}{}, per {per}{}, look-ahead {}{}",
            humantime::format_duration(self.delay),
            spec.max_in_flight(),
            default(self.max_in_flight.is_some()),
            default(self.per.is_some()),
            spec.look_ahead(),
            default(self.look_ahead.is_some()),
        )
    }
}

/// A fresh engine in `state_root/NAME` whose `hosts` all resolve to the
/// loopback `server`, and the spec of a job named `name` over `seeds`: the
/// set-up the benchmarks over webs of many hosts share.
pub(crate) fn web_engine(
    state_root: &Path,
    name: &str,
    hosts: impl Iterator<Item = String>,
    server: SocketAddr,
    seeds: &[String],
) -> anyhow::Result<(Engine, JobSpec)> {
    let state_dir = state_root.join(name);
    if state_dir.exists() {
        std::fs::remove_dir_all(&state_dir)
            .with_context(|| format!("clearing {}", state_dir.display()))?;
    }
    let engine = Engine::open(EngineConfig {
        state_dir,
        fetch: FetchConfig {
            allow_private: true,
            resolve: hosts.map(|h| (h, server)).collect(),
            ..FetchConfig::default()
        },
        checkpoint_interval: Duration::from_secs(5),
        cache_bytes: 32 << 20,
    })?;
    let seeds = seeds
        .iter()
        .map(|s| Url::parse(s).with_context(|| format!("seed {s}")))
        .collect::<anyhow::Result<Vec<Url>>>()?;
    Ok((engine, JobSpec::new(name, seeds)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sites::server::SiteServer;
    use forager::store::ManifestRow;

    /// The URLs of a run's saved targets, in the order they were harvested.
    fn harvested(state_root: &Path, job: &str) -> Vec<String> {
        let manifest = state_root
            .join(job)
            .join("targets")
            .join(job)
            .join("manifest.jsonl");
        std::fs::read_to_string(manifest)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<ManifestRow>(l).unwrap().url)
            .collect()
    }

    /// The server's port is random; a run's decisions must not depend on it.
    /// (When the port was part of every URL, sb's classifier and the MIME
    /// filters saw different URLs in each run.)
    #[tokio::test]
    async fn the_same_seed_takes_the_same_decisions_whatever_the_server_port() {
        let site = BenchSite::synthetic("small".parse().unwrap()).unwrap();
        // Both servers listen at once, so their ports differ.
        let a = SiteServer::start(vec![(site.host.clone(), site.site.clone())])
            .await
            .unwrap();
        let b = SiteServer::start(vec![(site.host.clone(), site.site.clone())])
            .await
            .unwrap();
        assert_ne!(a.port(), b.port());
        let config = RunConfig {
            strategy: StrategyKind::Sb,
            seed: 7,
            max_requests: 400,
            early_stop: false,
            neither_links: NeitherLinks::Last,
            trace: true,
        };
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let run_a = run_once(a.addr(), &site, config, dir_a.path())
            .await
            .unwrap();
        let run_b = run_once(b.addr(), &site, config, dir_b.path())
            .await
            .unwrap();
        // The budget is checked before each link; a redirect chain under way ends.
        assert!(
            (400..410).contains(&run_a.trace.len()),
            "{}",
            run_a.trace.len()
        );
        assert_eq!(run_a.trace, run_b.trace);
        let job = "synthetic-small-sb-7";
        let targets = harvested(dir_a.path(), job);
        assert!(!targets.is_empty());
        assert_eq!(targets, harvested(dir_b.path(), job));
        let _ = a.shutdown().await;
        let _ = b.shutdown().await;
    }
}
