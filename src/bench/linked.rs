//! The linked-data benchmark (issue #15, ARCHITECTURE.md § Linked data): a
//! web of RDF hosts ([`crate::sites::linked`]) crawled by a linked-data job
//! with each strategy, measured as the LDCOC paper measures: the share of the
//! URIs dereferenced that were RDF, at budgets of 10 %, 25 % and 50 % of the
//! web's URIs, and the URIs dereferenced until 50 % and 90 % of its RDF
//! documents were harvested.
//!
//! A URI is dereferenced once however many hops its answer takes: a
//! `303 See Other` and the GET of the document it points to are one URI, as
//! in the paper (the run keeps one request in flight, so a hop directly
//! follows the response that caused it).

use super::report::{cell, MeanStd};
use crate::engine::{CrawlObserver, RequestEvent, RequestKind, Runner};
use crate::extract::ScopeKind;
use crate::mime::Preset;
use crate::sites::linked::{LinkedTruth, LinkedWeb};
use crate::strategy::{StrategyKind, StrategyStats};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Budgets, as shares of the web's URIs, at which the RDF share is reported.
pub const BUDGETS: [f64; 3] = [0.10, 0.25, 0.50];
/// Shares of the web's RDF documents at which the URIs needed are reported.
pub const RDF_LEVELS: [f64; 2] = [0.5, 0.9];

/// One dereferenced URI of a run: whether it gave an RDF document.
pub type Dereference = bool;

/// Records a run's dereferences from its requests.
#[derive(Default)]
struct DerefObserver {
    derefs: Vec<Dereference>,
    /// The previous GET answered a redirect: the next GET is its hop.
    in_redirect: bool,
}

impl CrawlObserver for DerefObserver {
    fn request(&mut self, e: &RequestEvent<'_>) {
        if e.kind != RequestKind::Get || e.url.path() == "/robots.txt" {
            return;
        }
        let hop = std::mem::replace(
            &mut self.in_redirect,
            e.status.is_some_and(|s| (300..400).contains(&s)),
        );
        if hop {
            // The document a redirect led to: its outcome is the URI's.
            if let Some(last) = self.derefs.last_mut() {
                *last |= e.saved_target;
            }
        } else {
            self.derefs.push(e.saved_target);
        }
    }
}

/// What one run of one strategy produced.
#[derive(Clone, Debug)]
pub struct LinkedRun {
    pub strategy: StrategyKind,
    pub seed: u64,
    pub derefs: Vec<Dereference>,
    pub requests: u64,
    pub stats: StrategyStats,
    pub wall: Duration,
}

/// The paper's figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkedFigures {
    /// RDF share of the URIs dereferenced within each budget of [`BUDGETS`]
    /// (of all it dereferenced, when the run ended before the budget).
    pub share: [f64; 3],
    /// URIs dereferenced until each level of [`RDF_LEVELS`] of the web's RDF
    /// documents, as % of the web's URIs (`None`: never reached).
    pub req_at: [Option<f64>; 2],
    /// RDF documents harvested, and URIs dereferenced, in the whole run.
    pub rdf: usize,
    pub derefs: usize,
    pub accuracy: Option<f64>,
}

/// The figures of a run on a web with `truth`.
pub fn figures(
    derefs: &[Dereference],
    truth: &LinkedTruth,
    stats: &StrategyStats,
) -> LinkedFigures {
    let web = truth.uris.len().max(1);
    let share = BUDGETS.map(|b| {
        let n = ((b * web as f64).round() as usize).min(derefs.len());
        let rdf = derefs[..n].iter().filter(|&&r| r).count();
        rdf as f64 / n.max(1) as f64
    });
    let mut req_at = [None; 2];
    for (slot, level) in req_at.iter_mut().zip(RDF_LEVELS) {
        let need = (level * truth.rdf.len() as f64).ceil() as usize;
        let mut seen = 0;
        for (i, &r) in derefs.iter().enumerate() {
            seen += usize::from(r);
            if seen >= need {
                *slot = Some(100.0 * (i + 1) as f64 / web as f64);
                break;
            }
        }
    }
    LinkedFigures {
        share,
        req_at,
        rdf: derefs.iter().filter(|&&r| r).count(),
        derefs: derefs.len(),
        accuracy: stats.classifier_accuracy(),
    }
}

/// Crawl `web` (served at `server` under all its host names) once with a
/// fresh state under `state_root`: a linked-data job, one request in flight
/// (so that a run is a function of its seed), no politeness delay, at most
/// `max_requests` requests (0: until the frontier is empty).
pub async fn run_once(
    server: SocketAddr,
    web: &LinkedWeb,
    strategy: StrategyKind,
    seed: u64,
    max_requests: u64,
    state_root: &Path,
) -> anyhow::Result<LinkedRun> {
    let name = format!("linked-{}-{seed}", strategy.name());
    let hosts = (0..web.hosts).map(LinkedWeb::host_name);
    let (engine, mut spec) =
        super::runner::web_engine(state_root, &name, hosts, server, &web.seeds())?;
    spec.scope = ScopeKind::Any;
    spec.strategy = strategy;
    spec.seed = seed;
    spec.targets.preset = Preset::LinkedData;
    spec.targets.rdf = true;
    spec.politeness.delay = Duration::ZERO;
    spec.politeness.max_in_flight = Some(1);
    spec.budget.requests = max_requests;
    spec.budget.bytes = 0;
    spec.budget.early_stop = false;
    let mut observer = DerefObserver::default();
    let started = Instant::now();
    let (_stop_tx, stop_rx) = watch::channel(false);
    let outcome = Runner::new(&engine, &spec, &mut observer)?
        .run(stop_rx)
        .await?;
    Ok(LinkedRun {
        strategy,
        seed,
        derefs: observer.derefs,
        requests: outcome.counters.requests,
        stats: outcome.stats,
        wall: started.elapsed(),
    })
}

/// All runs of one strategy, summarised.
#[derive(Clone, Debug)]
pub struct LinkedSummary {
    pub strategy: StrategyKind,
    pub runs: usize,
    pub share: [Option<MeanStd>; 3],
    /// Over the runs; `None` when a run never reached the level.
    pub req_at: [Option<MeanStd>; 2],
    pub rdf: Option<MeanStd>,
    pub derefs: Option<MeanStd>,
    pub accuracy: Option<MeanStd>,
}

pub fn summarise(strategy: StrategyKind, figs: &[LinkedFigures]) -> LinkedSummary {
    LinkedSummary {
        strategy,
        runs: figs.len(),
        share: [0, 1, 2].map(|i| MeanStd::over(figs, |f| Some(f.share[i]))),
        req_at: [0, 1].map(|i| MeanStd::over(figs, |f| f.req_at[i])),
        rdf: MeanStd::over(figs, |f| Some(f.rdf as f64)),
        derefs: MeanStd::over(figs, |f| Some(f.derefs as f64)),
        accuracy: MeanStd::over(figs, |f| f.accuracy.map(|a| a * 100.0)),
    }
}

/// The Markdown table of a linked-data web.
pub fn markdown_table(web: &LinkedWeb, truth: &LinkedTruth, rows: &[LinkedSummary]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "**linked web** — {} hosts, {} URIs reachable, {} of them RDF ({:.1} %)\n",
        web.hosts,
        truth.uris.len(),
        truth.rdf.len(),
        100.0 * truth.rdf.len() as f64 / truth.uris.len().max(1) as f64
    );
    o.push_str(
        "| strategy | runs | RDF share @10 % | RDF share @25 % | RDF share @50 % | URIs to 50 % of RDF (% of web) | URIs to 90 % of RDF (% of web) | RDF documents | URIs dereferenced | classifier acc. % |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.strategy.name(),
            r.runs,
            cell(r.share[0], 3),
            cell(r.share[1], 3),
            cell(r.share[2], 3),
            cell(r.req_at[0], 1),
            cell(r.req_at[1], 1),
            cell(r.rdf, 0),
            cell(r.derefs, 0),
            cell(r.accuracy, 1),
        );
    }
    let share = |k: StrategyKind| {
        rows.iter()
            .find(|r| r.strategy == k)
            .and_then(|r| r.share[1])
            .map(|m| m.mean)
    };
    if let (Some(l), Some(b)) = (share(StrategyKind::Ldcoc), share(StrategyKind::Bfs)) {
        let _ = writeln!(
            o,
            "\nldcoc / bfs RDF share at a budget of 25 % of the web: {:.2}",
            l / b.max(1e-9)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn truth(uris: usize, rdf: usize) -> LinkedTruth {
        LinkedTruth {
            uris: (0..uris).map(|i| format!("u{i}")).collect(),
            rdf: (0..rdf).map(|i| format!("u{i}")).collect(),
        }
    }

    #[test]
    fn shares_at_budgets_and_uris_to_rdf_levels() {
        // 20 URIs, 4 RDF; the run finds RDF at dereferences 1, 2, 5 and 10.
        let t = truth(20, 4);
        let mut d = vec![false; 12];
        for i in [0, 1, 4, 9] {
            d[i] = true;
        }
        let f = figures(&d, &t, &StrategyStats::default());
        // Budgets of 2, 5 and 10 URIs.
        assert_eq!(f.share, [1.0, 3.0 / 5.0, 4.0 / 10.0]);
        // 2 RDF documents after 2 URIs, 4 (90 % of 4, rounded up) after 10.
        assert_eq!(f.req_at, [Some(10.0), Some(50.0)]);
        assert_eq!((f.rdf, f.derefs, f.accuracy), (4, 12, None));
        // A run that ended early: its shares over what it did, and a level never reached.
        let f = figures(&[true, false, false], &t, &StrategyStats::default());
        assert_eq!(f.share, [0.5, 1.0 / 3.0, 1.0 / 3.0]);
        assert_eq!(f.req_at, [None, None]);
    }

    fn event<'a>(
        url: &'a Url,
        status: u16,
        saved: bool,
        c: &'a crate::store::JobCounters,
    ) -> RequestEvent<'a> {
        RequestEvent {
            kind: RequestKind::Get,
            url,
            status: Some(status),
            bytes: 0,
            label: None,
            saved_target: saved,
            latency: None,
            counters: c,
            frontier: 0,
        }
    }

    #[test]
    fn a_303_and_its_document_are_one_dereference() {
        let c = crate::store::JobCounters::default();
        let u = |s: &str| Url::parse(s).unwrap();
        let (thing, data, page, robots) = (
            u("http://a.test/resource/1"),
            u("http://a.test/data/1"),
            u("http://a.test/page/1"),
            u("http://a.test/robots.txt"),
        );
        let mut o = DerefObserver::default();
        o.request(&event(&robots, 404, false, &c));
        o.request(&event(&thing, 303, false, &c));
        o.request(&event(&data, 200, true, &c));
        o.request(&event(&page, 200, false, &c));
        o.request(&event(&thing, 404, false, &c));
        assert_eq!(o.derefs, vec![true, false, false]);
    }
}
