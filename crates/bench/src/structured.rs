//! The structured-data benchmark (ARCHITECTURE.md § Structured
//! data): a web of hosts of which a few embed structured data
//! ([`crate::sites::structured`]), crawled by a structured-data job with
//! each strategy and measured as the Anthelion paper measures: the share of
//! the HTML pages fetched that were relevant (≥ `min_statements` statements)
//! at budgets of 10 %, 25 % and 50 % of the web's pages, and the pages
//! fetched until 50 % and 90 % of its relevant pages were harvested.
//!
//! The ground truth runs forager's own extractor on every page of the web,
//! so a page is relevant when the crawler would find it so, whatever the
//! generator meant its markup to be. It keeps the web's links, for two
//! measures that need no engine: [`oracle_crawl`], what a crawler that knows
//! the truth fetches (the share the link structure allows, printed under the
//! table), and [`simulate`], a strategy driven in memory (how `anthelion`'s
//! constants were chosen; see its module documentation).

use super::report::{cell, MeanStd};
use super::runner::JobSetting;
use crate::sites::server::{Site, SiteRequest};
use crate::sites::structured::StructuredWeb;
use anyhow::Context;
use forager::engine::{CrawlObserver, RequestEvent, RequestKind, Runner};
use forager_core::config::{StructuredTargets, DEFAULT_MIN_STATEMENTS};
use forager_core::extract::structured::StructuredOptions;
use forager_core::extract::{extract_links, ExtractLimits, ScopeKind};
use forager_core::job::replay::{page_links, Answers, Replay};
use forager_core::mime::Preset;
use forager_core::strategy::{StrategyKind, StrategyStats};
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
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
    /// The statements of each relevant page (the extractor's count).
    pub statements: BTreeMap<String, u64>,
    /// Where a crawl starts.
    pub seeds: Vec<String>,
    /// Every page's links, in document order (the web's graph, for the
    /// oracle and the in-memory crawl).
    pub links: BTreeMap<String, Vec<String>>,
    /// Where each of a page's links was found, in the order of `links`
    /// (for the in-memory crawl's link records).
    pub places: BTreeMap<String, Vec<LinkPlace>>,
}

/// Where a link was found on its page: its tag path and anchor text, as the
/// crawler's link record carries them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkPlace {
    pub tag_path: forager_core::link::TagPath,
    pub anchor: String,
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
    truth.seeds = queue.iter().map(|u| u.to_string()).collect();
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
            truth.statements.insert(url.to_string(), total);
        } else if total > 0 {
            truth.thin.insert(url.to_string());
        }
        let mut out = Vec::with_capacity(page.links.len());
        let mut places = Vec::with_capacity(page.links.len());
        for l in page.links {
            out.push(l.url.to_string());
            places.push(LinkPlace {
                tag_path: l.tag_path.clone(),
                anchor: l.anchor.clone(),
            });
            if seen.insert(l.url.to_string()) {
                queue.push_back(l.url);
            }
        }
        truth.links.insert(url.to_string(), out);
        truth.places.insert(url.to_string(), places);
        truth.pages.insert(url.to_string());
    }
    Ok(truth)
}

/// What a crawler that knows the truth fetches, in order, within `budget`
/// pages: an estimate of the best relevant share the web's link structure
/// allows (it may only fetch pages it has seen a link to, as any crawler).
/// Greedy, one page at a time: a discovered relevant page first; else the
/// discovered page that reveals the most undiscovered relevant pages among
/// its links, then among its links' links (a home page leads to listings,
/// listings to items); ties to the page discovered first. Greedy is not
/// proven optimal, so the bound is an estimate, but every figure of a real
/// crawler below it is room the link structure leaves.
pub fn oracle_crawl(truth: &StructuredTruth, budget: usize) -> Vec<String> {
    // Pages by index; links as indices.
    let index: HashMap<&str, usize> = truth
        .pages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_str(), i))
        .collect();
    let pages: Vec<&String> = truth.pages.iter().collect();
    let relevant: Vec<bool> = pages.iter().map(|p| truth.relevant.contains(*p)).collect();
    let links: Vec<Vec<usize>> = pages
        .iter()
        .map(|p| {
            truth.links.get(*p).map_or_else(Vec::new, |ls| {
                ls.iter()
                    .filter_map(|l| index.get(l.as_str()).copied())
                    .collect()
            })
        })
        .collect();
    let mut discovered = vec![false; pages.len()];
    // (relevant, new relevant links, new relevant at two hops), then first discovered.
    let value = |p: usize, discovered: &[bool]| -> (bool, usize, usize) {
        let near = links[p]
            .iter()
            .filter(|&&q| relevant[q] && !discovered[q])
            .count();
        let mut far: HashSet<usize> = HashSet::new();
        for &q in &links[p] {
            far.extend(
                links[q]
                    .iter()
                    .filter(|&&r| relevant[r] && !discovered[r] && !links[p].contains(&r)),
            );
        }
        (relevant[p], near, far.len())
    };
    // A max-heap with stale values: a page's value only falls as pages are
    // discovered, so a popped value that is still current is the best (lazy greedy).
    type Heap = BinaryHeap<((bool, usize, usize), std::cmp::Reverse<usize>, usize)>;
    let mut heap = Heap::new();
    let mut order = 0usize;
    let discover = |p: usize, discovered: &mut [bool], heap: &mut Heap, order: &mut usize| {
        if !discovered[p] {
            discovered[p] = true;
            heap.push((
                (relevant[p], usize::MAX, usize::MAX),
                std::cmp::Reverse(*order),
                p,
            ));
            *order += 1;
        }
    };
    for s in truth.seeds.iter().filter_map(|s| index.get(s.as_str())) {
        discover(*s, &mut discovered, &mut heap, &mut order);
    }
    let mut out = Vec::new();
    while out.len() < budget {
        let Some((v, first, p)) = heap.pop() else {
            break;
        };
        let now = value(p, &discovered);
        if now != v {
            heap.push((now, first, p));
            continue;
        }
        out.push(pages[p].clone());
        for &q in &links[p] {
            discover(q, &mut discovered, &mut heap, &mut order);
        }
    }
    out
}

/// Crawl the truth's web in memory with `strategy`: the job core's own
/// step protocol ([`Replay::crawl_concurrent`]) over a structured-data job
/// of scope any, with up to `in_flight` pages outstanding, one per host, no
/// delay (a page's links and relevance reach the strategy when it
/// completes, the oldest first), for at most `budget` pages. Per page
/// fetched, in completion order, whether it was relevant.
pub fn simulate(
    truth: &StructuredTruth,
    strategy: Box<dyn forager_core::strategy::Strategy>,
    budget: usize,
    in_flight: usize,
    look_ahead: usize,
) -> Vec<bool> {
    simulate_urls(truth, strategy, budget, in_flight, look_ahead)
        .iter()
        .map(|u| truth.relevant.contains(u.as_str()))
        .collect()
}

/// [`simulate`], the pages fetched in order.
pub fn simulate_urls(
    truth: &StructuredTruth,
    strategy: Box<dyn forager_core::strategy::Strategy>,
    budget: usize,
    in_flight: usize,
    look_ahead: usize,
) -> Vec<Url> {
    let seeds = truth
        .seeds
        .iter()
        .filter_map(|s| Url::parse(s).ok())
        .collect();
    let mut spec = forager_core::config::JobSpec::new("structured-replay", seeds);
    spec.scope = ScopeKind::Any;
    spec.targets.preset = Preset::Structured;
    spec.targets.structured = Some(StructuredTargets {
        options: StructuredOptions::all(),
        min_statements: DEFAULT_MIN_STATEMENTS,
    });
    spec.budget.early_stop = false;
    spec.limits.max_depth = 0;
    let mut replay = Replay::new(spec, strategy);
    let mut web = TruthAnswers {
        truth,
        fetched: Vec::new(),
    };
    replay.crawl_concurrent(
        &mut web,
        in_flight,
        forager_core::extract::PolitenessPer::Host,
        look_ahead,
        budget,
    );
    web.fetched
}

/// The truth's web as the replay sees it: every page HTML, a page's links
/// where the extractor found them, its relevance as the extractor judged it.
struct TruthAnswers<'a> {
    truth: &'a StructuredTruth,
    /// Pages fetched, in order.
    fetched: Vec<Url>,
}

impl Answers for TruthAnswers<'_> {
    fn label(&mut self, url: &Url) -> Option<forager_core::mime::Label> {
        self.truth
            .pages
            .contains(url.as_str())
            .then_some(forager_core::mime::Label::Html)
    }

    fn links(&mut self, page: &forager_core::link::Link) -> forager_core::extract::PageLinks {
        let key = page.url.as_str();
        let places = self.truth.places.get(key);
        let links = self
            .truth
            .links
            .get(key)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(i, l)| {
                let url = Url::parse(l).ok()?;
                let place = places.and_then(|p| p.get(i));
                Some(forager_core::extract::ExtractedLink {
                    url,
                    tag_path: place
                        .map_or_else(forager_core::link::TagPath::root, |p| p.tag_path.clone()),
                    anchor: place.map_or_else(String::new, |p| p.anchor.clone()),
                })
            })
            .collect();
        page_links(&page.url, links)
    }

    fn target(&mut self, _link: &forager_core::link::Link, _requests: u64) -> bool {
        false
    }

    fn relevant(&mut self, page: &forager_core::link::Link) -> Option<bool> {
        self.fetched.push(page.url.clone());
        Some(self.truth.relevant.contains(page.url.as_str()))
    }
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
    /// Share of the web's relevant pages the run harvested.
    pub coverage: f64,
    /// Relevant pages harvested per minute of the run's wall time.
    pub per_minute: f64,
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
    wall: Duration,
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
    let relevant = pages.iter().filter(|&&r| r).count();
    StructuredFigures {
        share,
        req_at,
        relevant,
        fetched: pages.len(),
        coverage: relevant as f64 / truth.relevant.len().max(1) as f64,
        per_minute: relevant as f64 / (wall.as_secs_f64() / 60.0).max(1e-9),
        accuracy: stats.classifier_accuracy(),
    }
}

/// Crawl `web` (served at `server` under all its host names) once with a
/// fresh state under `state_root`: a structured-data job (preset
/// `structured`, every syntax, the default `min_statements`), scope any,
/// politeness as `setting` says, at most `max_requests` requests (0: until
/// the frontier is empty).
pub async fn run_once(
    server: SocketAddr,
    web: &StructuredWeb,
    strategy: StrategyKind,
    seed: u64,
    setting: JobSetting,
    max_requests: u64,
    state_root: &Path,
) -> anyhow::Result<StructuredRun> {
    let name = format!("structured-{}-{seed}", strategy.name());
    let hosts = (0..web.hosts).map(|i| web.host_name(i));
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
    setting.apply(&mut spec);
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
    /// Per cent of the web's relevant pages harvested.
    pub coverage: Option<MeanStd>,
    pub per_minute: Option<MeanStd>,
    pub accuracy: Option<MeanStd>,
    /// The job's politeness, as the report prints it.
    pub setting: String,
}

pub fn summarise(
    strategy: StrategyKind,
    setting: String,
    figs: &[StructuredFigures],
) -> StructuredSummary {
    StructuredSummary {
        strategy,
        setting,
        coverage: MeanStd::over(figs, |f| Some(100.0 * f.coverage)),
        per_minute: MeanStd::over(figs, |f| Some(f.per_minute)),
        runs: figs.len(),
        share: [0, 1, 2].map(|i| MeanStd::over(figs, |f| Some(f.share[i]))),
        req_at: [0, 1].map(|i| MeanStd::over(figs, |f| f.req_at[i])),
        relevant: MeanStd::over(figs, |f| Some(f.relevant as f64)),
        fetched: MeanStd::over(figs, |f| Some(f.fetched as f64)),
        accuracy: MeanStd::over(figs, |f| f.accuracy.map(|a| a * 100.0)),
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
        "| strategy | politeness | runs | precision @10 % | precision @25 % | precision @50 % | pages to 50 % of relevant (% of web) | pages to 90 % of relevant (% of web) | coverage % | relevant pages / min | relevant pages | pages fetched | classifier acc. % |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.strategy.name(),
            r.setting,
            r.runs,
            cell(r.share[0], 3),
            cell(r.share[1], 3),
            cell(r.share[2], 3),
            cell(r.req_at[0], 1),
            cell(r.req_at[1], 1),
            cell(r.coverage, 1),
            cell(r.per_minute, 0),
            cell(r.relevant, 0),
            cell(r.fetched, 0),
            cell(r.accuracy, 1),
        );
    }
    // What the link structure allows: the oracle's share at each budget.
    let web_pages = truth.pages.len();
    let oracle: Vec<bool> = oracle_crawl(truth, (BUDGETS[2] * web_pages as f64).round() as usize)
        .iter()
        .map(|u| truth.relevant.contains(u))
        .collect();
    let at = |b: f64| {
        let n = ((b * web_pages as f64).round() as usize).min(oracle.len());
        oracle[..n].iter().filter(|&&r| r).count() as f64 / n.max(1) as f64
    };
    let _ = writeln!(
        o,
        "\na crawler that knows which pages are relevant (greedy oracle, fetching only links it has seen): relevant share {:.3} @10 %, {:.3} @25 %, {:.3} @50 %",
        at(BUDGETS[0]),
        at(BUDGETS[1]),
        at(BUDGETS[2])
    );
    // Each strategy against bfs crawled with the same politeness but for the look-ahead.
    let bfs = rows
        .iter()
        .find(|r| r.strategy == StrategyKind::Bfs)
        .and_then(|r| r.share[1])
        .map(|m| m.mean);
    if let Some(b) = bfs {
        for r in rows.iter().filter(|r| r.strategy != StrategyKind::Bfs) {
            if let Some(s) = r.share[1] {
                let _ = writeln!(
                    o,
                    "\n{} ({}) / bfs precision at a budget of 25 % of the web: {:.2}",
                    r.strategy.name(),
                    r.setting,
                    s.mean / b.max(1e-9)
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

    /// Relevant share of the first `budget` pages of a crawl.
    fn share_at(pages: &[bool], budget: usize) -> f64 {
        let n = budget.min(pages.len());
        pages[..n].iter().filter(|&&r| r).count() as f64 / budget.max(1) as f64
    }

    #[test]
    fn the_oracle_fetches_only_links_it_has_seen_and_bounds_the_strategies() {
        use forager_core::strategy::{Anthelion, AnthelionConfig};
        // The bench's default web: what the module documentation of
        // `strategy::anthelion` quotes.
        let web = StructuredWeb::new(150, 30, 1);
        let truth = ground_truth(&web, DEFAULT_MIN_STATEMENTS).unwrap();
        let budget = truth.pages.len() / 4;
        let oracle = oracle_crawl(&truth, truth.pages.len());
        // Every page it fetches was linked from a page fetched before (or is a seed).
        let mut seen: HashSet<&str> = truth.seeds.iter().map(String::as_str).collect();
        for p in &oracle {
            assert!(seen.contains(p.as_str()), "{p} fetched before it was seen");
            seen.extend(truth.links[p].iter().map(String::as_str));
        }
        assert_eq!(oracle.len(), truth.pages.len(), "it reaches the whole web");
        let hits =
            |v: &[String]| -> Vec<bool> { v.iter().map(|u| truth.relevant.contains(u)).collect() };
        let oracle = share_at(&hits(&oracle), budget);
        let bfs = share_at(
            &simulate(&truth, StrategyKind::Bfs.build(1), budget, 1, 1),
            budget,
        );
        let (mut tuned, mut paper) = (0.0, 0.0);
        for seed in 1..=3 {
            let a = Box::new(Anthelion::new(seed));
            tuned += share_at(&simulate(&truth, a, budget, 1, 1), budget) / 3.0;
            let a = Box::new(Anthelion::with_config(seed, AnthelionConfig::paper()));
            paper += share_at(&simulate(&truth, a, budget, 1, 1), budget) / 3.0;
        }
        eprintln!("share at {budget} pages: oracle {oracle:.3}, anthelion {tuned:.3} (paper's constants {paper:.3}), bfs {bfs:.3}");
        assert!(
            oracle >= tuned && tuned > paper + 0.1,
            "{oracle} {tuned} {paper}"
        );
        assert!(tuned > 1.8 * bfs, "{tuned} vs bfs {bfs}");
    }

    /// Side by side in memory, one page in flight, relevant share at 25 %,
    /// on the default web (150 hosts, 30 items, seed 1) and two held-out
    /// ones (seeds 2 and 3), seeds 1–5 each, and its ratio to bfs:
    /// `cargo test --release -p forager-bench --lib structured::tests::anthelion_variants -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement (seconds in release), not a check"]
    fn anthelion_variants() {
        use forager_core::strategy::{Anthelion, AnthelionConfig};
        use std::fmt::Write as _;
        let webs: Vec<(StructuredTruth, usize, f64)> = [1, 2, 3]
            .into_iter()
            .map(|seed| {
                let truth =
                    ground_truth(&StructuredWeb::new(150, 30, seed), DEFAULT_MIN_STATEMENTS)
                        .unwrap();
                let budget = truth.pages.len() / 4;
                let bfs = share_at(
                    &simulate(&truth, StrategyKind::Bfs.build(1), budget, 1, 1),
                    budget,
                );
                (truth, budget, bfs)
            })
            .collect();
        let base = AnthelionConfig::default();
        // The defaults before anchor text and tag paths (commit b7ef8c1).
        let urls_only = AnthelionConfig {
            anchor_tokens: false,
            tag_path: false,
            decay: 30.0,
            ..base
        };
        let mut variants: Vec<(String, AnthelionConfig)> = vec![
            ("paper".into(), AnthelionConfig::paper()),
            ("URL tokens only, m 30".into(), urls_only),
            (
                "anchor tokens, m 30".into(),
                AnthelionConfig {
                    anchor_tokens: true,
                    ..urls_only
                },
            ),
            (
                "tag path, m 30".into(),
                AnthelionConfig {
                    tag_path: true,
                    ..urls_only
                },
            ),
            (
                "anchor + tag path, m 30".into(),
                AnthelionConfig {
                    decay: 30.0,
                    ..base
                },
            ),
            ("default (anchor + tag path, m 100)".into(), base),
        ];
        for decay in [10.0, 300.0] {
            variants.push((
                format!("default, m {decay}"),
                AnthelionConfig { decay, ..base },
            ));
        }
        for alpha in [0.2, 0.5] {
            let mut c = base;
            c.ftrl.alpha = alpha;
            variants.push((format!("default, alpha {alpha}"), c));
        }
        for (name, config) in variants {
            let mut line = format!("{name:28}");
            for (truth, budget, bfs) in &webs {
                let v: Vec<f64> = (1..=5)
                    .map(|seed| {
                        let a = Box::new(Anthelion::with_config(seed, config));
                        share_at(&simulate(truth, a, *budget, 1, 1), *budget)
                    })
                    .collect();
                let m = MeanStd::of(&v).unwrap();
                let _ = write!(
                    line,
                    " | {:.3} ± {:.3} ({:.2}x)",
                    m.mean,
                    m.std,
                    m.mean / bfs
                );
            }
            eprintln!("{line}");
        }
    }

    /// Where anthelion's budget goes, by host kind and page type, 5 seeds:
    /// `cargo test --release -p forager-bench --lib structured::tests::anthelion_budget -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement (seconds in release), not a check"]
    fn anthelion_budget() {
        use forager_core::strategy::Anthelion;
        for (hosts, per, wseed) in [(150, 30, 1), (150, 30, 2)] {
            let web = StructuredWeb::new(hosts, per, wseed);
            let truth = ground_truth(&web, DEFAULT_MIN_STATEMENTS).unwrap();
            let budget = truth.pages.len() / 4;
            let kind_of = |u: &Url| {
                let h = u.host_str().unwrap_or_default();
                let i: usize = h
                    .trim_start_matches("site")
                    .trim_end_matches(".test")
                    .parse()
                    .unwrap_or(0);
                web.kind(i)
            };
            let page_of = |u: &Url| match u.path().split('/').nth(1).unwrap_or("") {
                "" => "home",
                "about" => "about",
                "category" | "tag" | "calendar" | "section" | "topic" => "listing",
                _ => "item",
            };
            // Realistic ideal: a crawler that knows each host's item relevance
            // rate but not which item is relevant, fetching items only.
            let mut rates: Vec<(usize, usize)> = (0..web.hosts)
                .map(|i| {
                    let n = (0..web.per_host)
                        .filter(|&j| truth.relevant.contains(&web.item_url(i, j)))
                        .count();
                    (n, web.per_host)
                })
                .collect();
            rates.sort_by_key(|r| std::cmp::Reverse(r.0));
            let (mut got, mut left) = (0.0, budget);
            for (n, all) in rates {
                let take = all.min(left);
                got += n as f64 * take as f64 / all as f64;
                left -= take;
            }
            eprintln!(
                "web {hosts}:{per}:{wseed}: {} pages, {} relevant; items-only ideal {:.3}",
                truth.pages.len(),
                truth.relevant.len(),
                got / budget as f64
            );
            let mut table: BTreeMap<(String, &str), (usize, usize)> = BTreeMap::new();
            let mut hosts_seen = 0;
            for seed in 1..=5 {
                let order = simulate_urls(&truth, Box::new(Anthelion::new(seed)), budget, 1, 1);
                let mut hs = BTreeSet::new();
                for u in order.iter().take(budget) {
                    hs.insert(u.host_str().unwrap_or_default().to_string());
                    let e = table
                        .entry((format!("{:?}", kind_of(u)), page_of(u)))
                        .or_default();
                    e.0 += 1;
                    e.1 += usize::from(truth.relevant.contains(u.as_str()));
                }
                hosts_seen += hs.len();
            }
            eprintln!("  hosts touched per run {:.1}", hosts_seen as f64 / 5.0);
            for ((k, p), (n, r)) in &table {
                eprintln!(
                    "  {k:8} {p:8} fetched {:7.1} relevant {:7.1}",
                    *n as f64 / 5.0,
                    *r as f64 / 5.0
                );
            }
        }
    }

    #[test]
    fn shares_at_budgets_and_pages_to_levels() {
        let truth = StructuredTruth {
            pages: (0..20).map(|i| format!("p{i}")).collect(),
            relevant: (0..4).map(|i| format!("p{i}")).collect(),
            ..StructuredTruth::default()
        };
        let mut p = vec![false; 12];
        for i in [0, 1, 4, 9] {
            p[i] = true;
        }
        let f = figures(
            &p,
            &truth,
            &StrategyStats::default(),
            Duration::from_secs(30),
        );
        assert_eq!(f.share, [1.0, 3.0 / 5.0, 4.0 / 10.0]);
        assert_eq!(f.req_at, [Some(10.0), Some(50.0)]);
        assert_eq!((f.relevant, f.fetched), (4, 12));
        assert_eq!(f.coverage, 1.0);
        assert_eq!(f.per_minute, 8.0, "4 relevant pages in half a minute");
    }
}
