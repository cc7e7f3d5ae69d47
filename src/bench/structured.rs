//! The structured-data benchmark (issue #14, ARCHITECTURE.md § Structured
//! data): a web of hosts of which a few embed structured data
//! ([`crate::sites::structured`]), crawled by a structured-data job with
//! each strategy and measured as the Anthelion paper measures: the share of
//! the HTML pages fetched that were relevant (≥ `min_statements` statements)
//! at budgets of 10 %, 25 % and 50 % of the web's pages, and the pages
//! fetched until 50 % and 90 % of its relevant pages were harvested.
//!
//! The ground truth runs forager's own extractor on every page of the web,
//! so a page is relevant when the crawler would find it so, whatever the
//! generator meant its markup to be.

use super::report::MeanStd;
use crate::config::{StructuredTargets, DEFAULT_MIN_STATEMENTS};
use crate::engine::{CrawlObserver, RequestEvent, RequestKind, Runner};
use crate::extract::structured::StructuredOptions;
use crate::extract::{extract_links, ExtractLimits, ScopeKind};
use crate::mime::Preset;
use crate::sites::server::{Site, SiteRequest};
use crate::sites::structured::StructuredWeb;
use crate::strategy::{StrategyKind, StrategyStats};
use anyhow::Context;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use url::Url;

/// Budgets, as shares of the web's pages, at which the relevant share is reported.
pub const BUDGETS: [f64; 3] = [0.10, 0.25, 0.50];
/// Shares of the web's relevant pages at which the pages fetched are reported.
pub const LEVELS: [f64; 2] = [0.5, 0.9];
/// A page body read for the ground truth (the generator's are a few KiB).
const MAX_PAGE: usize = 1 << 20;

/// Every page reachable from the seeds, and the relevant ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StructuredTruth {
    pub pages: BTreeSet<String>,
    pub relevant: BTreeSet<String>,
    /// Pages with some statements, but fewer than the threshold.
    pub thin: BTreeSet<String>,
}

/// Walk `web` from its seeds in memory, extracting every page with the
/// crawler's extractor (all syntaxes, the default cap) and calling relevant
/// the pages with at least `min_statements`.
pub fn ground_truth(web: &StructuredWeb, min_statements: u64) -> anyhow::Result<StructuredTruth> {
    let sites: HashMap<String, Arc<dyn Site>> = web.sites().into_iter().collect();
    let limits = ExtractLimits {
        structured: Some(StructuredOptions::all()),
        ..ExtractLimits::default()
    };
    let mut truth = StructuredTruth::default();
    let mut queue: VecDeque<Url> = web
        .seeds()
        .iter()
        .map(|s| Url::parse(s).with_context(|| format!("seed {s}")))
        .collect::<anyhow::Result<_>>()?;
    let mut seen: BTreeSet<String> = queue.iter().map(|u| u.to_string()).collect();
    while let Some(url) = queue.pop_front() {
        let Some(site) = url.host_str().and_then(|h| sites.get(h)) else {
            continue;
        };
        let host = url.host_str().unwrap_or_default();
        let resp = site.respond(&SiteRequest::get(host, &url[url::Position::BeforePath..]));
        if resp.status != 200 {
            continue;
        }
        let content_type = resp.content_type().map(str::to_string);
        let body = resp.body.read_capped(MAX_PAGE).bytes;
        let page = extract_links(&body, &url, content_type.as_deref(), &limits);
        let total = page.structured.map_or(0, |d| d.counts.total());
        if total >= min_statements {
            truth.relevant.insert(url.to_string());
        } else if total > 0 {
            truth.thin.insert(url.to_string());
        }
        for l in page.links {
            if seen.insert(l.url.to_string()) {
                queue.push_back(l.url);
            }
        }
        truth.pages.insert(url.to_string());
    }
    Ok(truth)
}

/// Records the HTML pages a run fetched, in order. The engine reports a page
/// before it extracts it (its event cannot tell whether it was saved), so
/// relevance is read from the ground truth, which ran the same extractor;
/// [`StructuredRun::targets`] (the engine's count) checks the two agree.
#[derive(Default)]
struct PageObserver {
    pages: Vec<Url>,
}

impl CrawlObserver for PageObserver {
    fn request(&mut self, e: &RequestEvent<'_>) {
        // Every page of the web is HTML; robots.txt (404 here) is not a page.
        if e.kind == RequestKind::Get && e.url.path() != "/robots.txt" && e.status == Some(200) {
            self.pages.push(e.url.clone());
        }
    }
}

/// What one run of one strategy produced.
#[derive(Clone, Debug)]
pub struct StructuredRun {
    pub strategy: StrategyKind,
    pub seed: u64,
    /// The HTML pages fetched, in order.
    pub pages: Vec<Url>,
    pub requests: u64,
    /// Targets the engine saved (relevant pages, by its own extraction).
    pub targets: u64,
    pub stats: StrategyStats,
    pub wall: Duration,
}

/// The paper's figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct StructuredFigures {
    /// Relevant share of the pages fetched within each budget of [`BUDGETS`]
    /// (of all it fetched, when the run ended before the budget).
    pub share: [f64; 3],
    /// Pages fetched until each level of [`LEVELS`] of the web's relevant
    /// pages, as % of the web's pages (`None`: never reached).
    pub req_at: [Option<f64>; 2],
    pub relevant: usize,
    pub fetched: usize,
    pub accuracy: Option<f64>,
}

impl StructuredRun {
    /// Per page fetched, whether the ground truth calls it relevant.
    pub fn relevance(&self, truth: &StructuredTruth) -> Vec<bool> {
        self.pages
            .iter()
            .map(|u| truth.relevant.contains(u.as_str()))
            .collect()
    }
}

pub fn figures(
    pages: &[bool],
    truth: &StructuredTruth,
    stats: &StrategyStats,
) -> StructuredFigures {
    let web = truth.pages.len().max(1);
    let share = BUDGETS.map(|b| {
        let n = ((b * web as f64).round() as usize).min(pages.len());
        let hit = pages[..n].iter().filter(|&&r| r).count();
        hit as f64 / n.max(1) as f64
    });
    let mut req_at = [None; 2];
    for (slot, level) in req_at.iter_mut().zip(LEVELS) {
        let need = (level * truth.relevant.len() as f64).ceil() as usize;
        let mut seen = 0;
        for (i, &r) in pages.iter().enumerate() {
            seen += usize::from(r);
            if seen >= need {
                *slot = Some(100.0 * (i + 1) as f64 / web as f64);
                break;
            }
        }
    }
    StructuredFigures {
        share,
        req_at,
        relevant: pages.iter().filter(|&&r| r).count(),
        fetched: pages.len(),
        accuracy: stats.classifier_accuracy(),
    }
}

/// Crawl `web` (served at `server` under all its host names) once with a
/// fresh state under `state_root`: a structured-data job (preset
/// `structured`, every syntax, the default `min_statements`), scope any, no
/// politeness delay, the scope's default requests in flight (so runs of one
/// seed differ a little), at most `max_requests` requests (0: until the
/// frontier is empty).
pub async fn run_once(
    server: SocketAddr,
    web: &StructuredWeb,
    strategy: StrategyKind,
    seed: u64,
    max_requests: u64,
    state_root: &Path,
) -> anyhow::Result<StructuredRun> {
    let name = format!("structured-{}-{seed}", strategy.name());
    let hosts = (0..web.hosts).map(StructuredWeb::host_name);
    let (engine, mut spec) =
        super::runner::web_engine(state_root, &name, hosts, server, &web.seeds())?;
    spec.scope = ScopeKind::Any;
    spec.strategy = strategy;
    spec.seed = seed;
    spec.targets.preset = Preset::Structured;
    spec.targets.structured = Some(StructuredTargets {
        options: StructuredOptions::all(),
        min_statements: DEFAULT_MIN_STATEMENTS,
    });
    spec.politeness.delay = Duration::ZERO;
    spec.budget.requests = max_requests;
    spec.budget.bytes = 0;
    spec.budget.early_stop = false;
    let mut observer = PageObserver::default();
    let started = Instant::now();
    let (_stop_tx, stop_rx) = watch::channel(false);
    let outcome = Runner::new(&engine, &spec, &mut observer)?
        .run(stop_rx)
        .await?;
    Ok(StructuredRun {
        strategy,
        seed,
        pages: observer.pages,
        requests: outcome.counters.requests,
        targets: outcome.counters.targets,
        stats: outcome.stats,
        wall: started.elapsed(),
    })
}

/// All runs of one strategy, summarised.
#[derive(Clone, Debug)]
pub struct StructuredSummary {
    pub strategy: StrategyKind,
    pub runs: usize,
    pub share: [Option<MeanStd>; 3],
    /// Over the runs; `None` when a run never reached the level.
    pub req_at: [Option<MeanStd>; 2],
    pub relevant: Option<MeanStd>,
    pub fetched: Option<MeanStd>,
    pub accuracy: Option<MeanStd>,
}

pub fn summarise(strategy: StrategyKind, figs: &[StructuredFigures]) -> StructuredSummary {
    let col = |f: &dyn Fn(&StructuredFigures) -> Option<f64>| -> Option<MeanStd> {
        let v: Option<Vec<f64>> = figs.iter().map(f).collect();
        v.and_then(|v| MeanStd::of(&v))
    };
    StructuredSummary {
        strategy,
        runs: figs.len(),
        share: [0, 1, 2].map(|i| col(&|f: &StructuredFigures| Some(f.share[i]))),
        req_at: [0, 1].map(|i| col(&|f: &StructuredFigures| f.req_at[i])),
        relevant: col(&|f| Some(f.relevant as f64)),
        fetched: col(&|f| Some(f.fetched as f64)),
        accuracy: col(&|f| f.accuracy.map(|a| a * 100.0)),
    }
}

fn show(v: Option<MeanStd>, digits: usize) -> String {
    match v {
        None => "—".to_string(),
        Some(m) if m.n > 1 => format!("{:.digits$} ± {:.digits$}", m.mean, m.std),
        Some(m) => format!("{:.digits$}", m.mean),
    }
}

/// The Markdown table of a structured-data web.
pub fn markdown_table(
    web: &StructuredWeb,
    truth: &StructuredTruth,
    rows: &[StructuredSummary],
) -> String {
    let mut o = String::new();
    let with_data = (0..web.hosts)
        .filter(|&i| web.kind(i) != crate::sites::structured::HostKind::Plain)
        .count();
    let _ = writeln!(
        o,
        "**structured web** — {} hosts ({} with structured data), {} pages, {} relevant ({:.1} %), {} with fewer than {} statements\n",
        web.hosts,
        with_data,
        truth.pages.len(),
        truth.relevant.len(),
        100.0 * truth.relevant.len() as f64 / truth.pages.len().max(1) as f64,
        truth.thin.len(),
        DEFAULT_MIN_STATEMENTS,
    );
    o.push_str(
        "| strategy | runs | relevant share @10 % | relevant share @25 % | relevant share @50 % | pages to 50 % of relevant (% of web) | pages to 90 % of relevant (% of web) | relevant pages | pages fetched | classifier acc. % |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.strategy.name(),
            r.runs,
            show(r.share[0], 3),
            show(r.share[1], 3),
            show(r.share[2], 3),
            show(r.req_at[0], 1),
            show(r.req_at[1], 1),
            show(r.relevant, 0),
            show(r.fetched, 0),
            show(r.accuracy, 1),
        );
    }
    let share = |name: &str| {
        let k = StrategyKind::parse(name)?;
        rows.iter()
            .find(|r| r.strategy == k)
            .and_then(|r| r.share[1])
            .map(|m| m.mean)
    };
    if let Some(b) = share("bfs") {
        for name in ["anthelion", "sb", "focused"] {
            if let Some(s) = share(name) {
                let _ = writeln!(
                    o,
                    "\n{name} / bfs relevant share at a budget of 25 % of the web: {:.2}",
                    s / b.max(1e-9)
                );
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sites::structured::Markup;

    #[test]
    fn the_extractor_decides_relevance_and_thin_pages_exist() {
        let web = StructuredWeb::new(60, 16, 2);
        let truth = ground_truth(&web, DEFAULT_MIN_STATEMENTS).unwrap();
        let pages: BTreeSet<String> = web.pages().into_iter().collect();
        assert_eq!(truth.pages, pages, "every page is reachable from the seeds");
        assert!(!truth.relevant.is_empty() && !truth.thin.is_empty());
        // The generator's full markup is what the extractor finds relevant,
        // its thin markup what it finds under the threshold, on every item.
        for i in 0..web.hosts {
            for j in 0..web.per_host {
                let url = web.item_url(i, j);
                let found = if truth.relevant.contains(&url) {
                    Markup::Full
                } else if truth.thin.contains(&url) {
                    Markup::Thin
                } else {
                    Markup::None
                };
                assert_eq!(found, web.markup(i, j), "{url}");
            }
        }
        // Hosts with no relevant page at all are the majority.
        let hosts_with = |set: &BTreeSet<String>| {
            set.iter()
                .filter_map(|u| Url::parse(u).ok()?.host_str().map(str::to_string))
                .collect::<BTreeSet<_>>()
                .len()
        };
        let with = hosts_with(&truth.relevant);
        assert!(
            with > 0 && with < web.hosts / 2,
            "{with} of {} hosts",
            web.hosts
        );
        let share = truth.relevant.len() as f64 / truth.pages.len() as f64;
        assert!((0.05..0.4).contains(&share), "relevant share {share}");
    }

    #[test]
    fn shares_at_budgets_and_pages_to_levels() {
        let truth = StructuredTruth {
            pages: (0..20).map(|i| format!("p{i}")).collect(),
            relevant: (0..4).map(|i| format!("p{i}")).collect(),
            thin: BTreeSet::new(),
        };
        let mut p = vec![false; 12];
        for i in [0, 1, 4, 9] {
            p[i] = true;
        }
        let f = figures(&p, &truth, &StrategyStats::default());
        assert_eq!(f.share, [1.0, 3.0 / 5.0, 4.0 / 10.0]);
        assert_eq!(f.req_at, [Some(10.0), Some(50.0)]);
        assert_eq!((f.relevant, f.fetched), (4, 12));
    }
}
