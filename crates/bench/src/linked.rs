//! The linked-data benchmark (ARCHITECTURE.md § Linked
//! data): a web of RDF hosts ([`crate::sites::linked`], of any
//! [`Shape`](crate::sites::linked::Shape)) crawled by a linked-data job with
//! each strategy, as a user runs it — the default job of scope any unless a
//! [`JobSetting`] says otherwise — and measured as the LDCOC paper
//! measures: the share of the URIs dereferenced that were RDF (precision),
//! at budgets of 10 %, 25 % and 50 % of the web's URIs, and the URIs
//! dereferenced until 50 % and 90 % of its RDF documents were harvested;
//! with the requests those took (every GET and HEAD but robots.txt),
//! coverage (RDF documents harvested / the web's) and RDF documents per
//! minute.
//!
//! A URI is dereferenced once however many hops its answer takes: a
//! `303 See Other` and the GET of the document it points to are one URI, as
//! in the paper. With many requests in flight the hop need not follow the
//! 303 (other answers come between), so a dereference is counted at its
//! *final* answer — any GET answer but a 3xx, or a failure — and is RDF
//! when that answer saved a document. This needs nothing from the engine's
//! events; its one blind spot is a redirect the engine does not follow (its
//! target seen already, out of scope, past the hop limit): that URI is not
//! counted. The benchmark webs link no redirect target, so every 303 is
//! followed (`tests::dereferences_are_counted_at_their_final_answer`).

use super::report::{cell, MeanStd};
use super::runner::JobSetting;
use crate::sites::linked::{LinkedTruth, LinkedWeb};
use forager::engine::{CrawlObserver, RequestEvent, RequestKind, Runner};
use forager_core::extract::ScopeKind;
use forager_core::mime::Preset;
use forager_core::strategy::{StrategyKind, StrategyStats};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Budgets, as shares of the web's URIs, at which the RDF share is reported.
pub const BUDGETS: [f64; 3] = [0.10, 0.25, 0.50];
/// Shares of the web's RDF documents at which the URIs needed are reported.
pub const RDF_LEVELS: [f64; 2] = [0.5, 0.9];

/// One dereferenced URI of a run, in the order the run finished them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dereference {
    /// It gave an RDF document.
    pub rdf: bool,
    /// Requests the run had made when it finished (this one's included).
    pub requests: u64,
}

/// Records a run's dereferences from its requests (see the module
/// documentation: counted at their final answer).
#[derive(Default)]
struct DerefObserver {
    derefs: Vec<Dereference>,
    /// Every GET and HEAD answered or failed so far, robots.txt excepted.
    requests: u64,
}

impl CrawlObserver for DerefObserver {
    fn request(&mut self, e: &RequestEvent<'_>) {
        if e.url.path() == "/robots.txt" {
            return;
        }
        self.requests += 1;
        if e.kind != RequestKind::Get || e.status.is_some_and(|s| (300..400).contains(&s)) {
            return;
        }
        self.derefs.push(Dereference {
            rdf: e.saved_target,
            requests: self.requests,
        });
    }
}

/// What one run of one strategy produced.
#[derive(Clone, Debug)]
pub struct LinkedRun {
    pub strategy: StrategyKind,
    pub seed: u64,
    pub derefs: Vec<Dereference>,
    /// The engine's count of requests (robots.txt included).
    pub requests: u64,
    /// RDF documents the engine saved (checks the observer's count).
    pub targets: u64,
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
    /// Requests (GET and HEAD, robots.txt excluded) made until each level of
    /// [`RDF_LEVELS`] (`None`: never reached).
    pub requests_at: [Option<u64>; 2],
    /// RDF documents harvested, URIs dereferenced and requests made in the whole run.
    pub rdf: usize,
    pub derefs: usize,
    pub requests: u64,
    /// Share of the web's RDF documents harvested.
    pub coverage: f64,
    /// RDF documents harvested per minute of the run's wall time.
    pub per_minute: f64,
    pub accuracy: Option<f64>,
}

/// The figures of a run on a web with `truth`.
pub fn figures(
    derefs: &[Dereference],
    truth: &LinkedTruth,
    stats: &StrategyStats,
    wall: Duration,
) -> LinkedFigures {
    let web = truth.uris.len().max(1);
    let share = BUDGETS.map(|b| {
        let n = ((b * web as f64).round() as usize).min(derefs.len());
        let rdf = derefs[..n].iter().filter(|d| d.rdf).count();
        rdf as f64 / n.max(1) as f64
    });
    let mut req_at = [None; 2];
    let mut requests_at = [None; 2];
    for ((slot, requests), level) in req_at.iter_mut().zip(&mut requests_at).zip(RDF_LEVELS) {
        let need = (level * truth.rdf.len() as f64).ceil() as usize;
        let mut seen = 0;
        for (i, d) in derefs.iter().enumerate() {
            seen += usize::from(d.rdf);
            if seen >= need {
                *slot = Some(100.0 * (i + 1) as f64 / web as f64);
                *requests = Some(d.requests);
                break;
            }
        }
    }
    let rdf = derefs.iter().filter(|d| d.rdf).count();
    LinkedFigures {
        share,
        req_at,
        requests_at,
        rdf,
        derefs: derefs.len(),
        requests: derefs.last().map_or(0, |d| d.requests),
        coverage: rdf as f64 / truth.rdf.len().max(1) as f64,
        per_minute: rdf as f64 / (wall.as_secs_f64() / 60.0).max(1e-9),
        accuracy: stats.classifier_accuracy(),
    }
}

/// Crawl `web` (served at `server` under all its host names) once with a
/// fresh state under `state_root`: a linked-data job of scope any,
/// politeness as `setting` says (with [`JobSetting::SEQUENTIAL`], a run is a
/// function of its seed), at most `max_requests` requests (0: until the
/// frontier is empty).
pub async fn run_once(
    server: SocketAddr,
    web: &LinkedWeb,
    strategy: StrategyKind,
    seed: u64,
    setting: JobSetting,
    max_requests: u64,
    state_root: &Path,
) -> anyhow::Result<LinkedRun> {
    let name = format!("linked-{}-{seed}", strategy.name());
    let hosts = (0..web.hosts).map(|i| web.host_name(i));
    let (engine, mut spec) =
        super::runner::web_engine(state_root, &name, hosts, server, &web.seeds())?;
    spec.scope = ScopeKind::Any;
    spec.strategy = strategy;
    spec.seed = seed;
    spec.targets.preset = Preset::LinkedData;
    spec.targets.rdf = true;
    setting.apply(&mut spec);
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
        targets: outcome.counters.targets,
        stats: outcome.stats,
        wall: started.elapsed(),
    })
}

/// All runs of one strategy, summarised.
#[derive(Clone, Debug)]
pub struct LinkedSummary {
    pub strategy: StrategyKind,
    /// The job's politeness, as the report prints it.
    pub setting: String,
    pub runs: usize,
    pub share: [Option<MeanStd>; 3],
    /// Over the runs; `None` when a run never reached the level.
    pub req_at: [Option<MeanStd>; 2],
    pub requests_at: [Option<MeanStd>; 2],
    /// Per cent of the web's RDF documents harvested.
    pub coverage: Option<MeanStd>,
    pub per_minute: Option<MeanStd>,
    pub rdf: Option<MeanStd>,
    pub derefs: Option<MeanStd>,
    pub requests: Option<MeanStd>,
    pub accuracy: Option<MeanStd>,
}

pub fn summarise(strategy: StrategyKind, setting: String, figs: &[LinkedFigures]) -> LinkedSummary {
    LinkedSummary {
        strategy,
        setting,
        runs: figs.len(),
        share: [0, 1, 2].map(|i| MeanStd::over(figs, |f| Some(f.share[i]))),
        req_at: [0, 1].map(|i| MeanStd::over(figs, |f| f.req_at[i])),
        requests_at: [0, 1].map(|i| MeanStd::over(figs, |f| f.requests_at[i].map(|r| r as f64))),
        coverage: MeanStd::over(figs, |f| Some(100.0 * f.coverage)),
        per_minute: MeanStd::over(figs, |f| Some(f.per_minute)),
        rdf: MeanStd::over(figs, |f| Some(f.rdf as f64)),
        derefs: MeanStd::over(figs, |f| Some(f.derefs as f64)),
        requests: MeanStd::over(figs, |f| Some(f.requests as f64)),
        accuracy: MeanStd::over(figs, |f| f.accuracy.map(|a| a * 100.0)),
    }
}

/// The Markdown table of a linked-data web.
pub fn markdown_table(web: &LinkedWeb, truth: &LinkedTruth, rows: &[LinkedSummary]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "**{} web** ({}:{}:{}:{}{}) — {} hosts, {} URIs reachable, {} of them RDF ({:.1} %)\n",
        web.shape.name(),
        web.shape.name(),
        web.hosts,
        web.per_host,
        web.seed,
        if web.one_domain {
            ", one registrable domain"
        } else {
            ""
        },
        web.hosts,
        truth.uris.len(),
        truth.rdf.len(),
        100.0 * truth.rdf.len() as f64 / truth.uris.len().max(1) as f64
    );
    o.push_str(
        "| strategy | politeness | runs | precision @10 % | precision @25 % | precision @50 % | URIs to 50 % of RDF (% of web) | URIs to 90 % of RDF (% of web) | requests to 50 % of RDF | requests to 90 % of RDF | coverage % | RDF documents / min | RDF documents | URIs dereferenced | requests | classifier acc. % |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.strategy.name(),
            r.setting,
            r.runs,
            cell(r.share[0], 3),
            cell(r.share[1], 3),
            cell(r.share[2], 3),
            cell(r.req_at[0], 1),
            cell(r.req_at[1], 1),
            cell(r.requests_at[0], 0),
            cell(r.requests_at[1], 0),
            cell(r.coverage, 1),
            cell(r.per_minute, 0),
            cell(r.rdf, 0),
            cell(r.derefs, 0),
            cell(r.requests, 0),
            cell(r.accuracy, 1),
        );
    }
    // Each learner against the bfs of the same table (same politeness but the look-ahead).
    let bfs = rows.iter().find(|r| r.strategy == StrategyKind::Bfs);
    if let Some(b) = bfs {
        for r in rows.iter().filter(|r| r.strategy != StrategyKind::Bfs) {
            if let (Some(l), Some(bs)) = (r.share[1], b.share[1]) {
                let _ = writeln!(
                    o,
                    "\n{} ({}) / bfs precision at a budget of 25 % of the web: {:.2}",
                    r.strategy.name(),
                    r.setting,
                    l.mean / bs.mean.max(1e-9)
                );
            }
            if let (Some(l), Some(bs)) = (r.requests_at[1], b.requests_at[1]) {
                let _ = writeln!(
                    o,
                    "\n{} ({}) / bfs requests to 90 % of the RDF documents: {:.2}",
                    r.strategy.name(),
                    r.setting,
                    l.mean / bs.mean.max(1e-9)
                );
            }
        }
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
        // Every URI took two requests (a 303 and its document, say).
        let mut d: Vec<Dereference> = (0..12)
            .map(|i| Dereference {
                rdf: false,
                requests: 2 * (i + 1),
            })
            .collect();
        for i in [0, 1, 4, 9] {
            d[i].rdf = true;
        }
        let half_minute = Duration::from_secs(30);
        let f = figures(&d, &t, &StrategyStats::default(), half_minute);
        // Budgets of 2, 5 and 10 URIs.
        assert_eq!(f.share, [1.0, 3.0 / 5.0, 4.0 / 10.0]);
        // 2 RDF documents after 2 URIs, 4 (90 % of 4, rounded up) after 10.
        assert_eq!(f.req_at, [Some(10.0), Some(50.0)]);
        assert_eq!(f.requests_at, [Some(4), Some(20)]);
        assert_eq!((f.rdf, f.derefs, f.requests, f.accuracy), (4, 12, 24, None));
        assert_eq!((f.coverage, f.per_minute), (1.0, 8.0));
        // A run that ended early: its shares over what it did, and a level never reached.
        let early: Vec<Dereference> = [true, false, false]
            .iter()
            .zip(1..)
            .map(|(&rdf, requests)| Dereference { rdf, requests })
            .collect();
        let f = figures(&early, &t, &StrategyStats::default(), half_minute);
        assert_eq!(f.share, [0.5, 1.0 / 3.0, 1.0 / 3.0]);
        assert_eq!((f.req_at, f.requests_at), ([None, None], [None, None]));
        assert_eq!(f.coverage, 0.25);
    }

    fn event<'a>(
        url: &'a Url,
        status: u16,
        saved: bool,
        c: &'a forager::store::JobCounters,
    ) -> RequestEvent<'a> {
        RequestEvent {
            kind: RequestKind::Get,
            url,
            status: (status != 0).then_some(status),
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
        let c = forager::store::JobCounters::default();
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
        let rdf: Vec<bool> = o.derefs.iter().map(|d| d.rdf).collect();
        assert_eq!(rdf, vec![true, false, false]);
        assert_eq!(o.derefs[0].requests, 2, "robots.txt is not a request here");
    }

    /// With many requests in flight, the answers of several dereferences
    /// interleave: two things' 303s come before either document, a page and
    /// a failure come between, a HEAD too. Each URI is still one dereference,
    /// finished (and RDF or not) by its final answer, in the order they finished.
    #[test]
    fn dereferences_are_counted_at_their_final_answer() {
        let c = forager::store::JobCounters::default();
        let u = |s: &str| Url::parse(s).unwrap();
        let (a, a_doc, b, b_doc, page, down, file) = (
            u("http://a.test/resource/1"),
            u("http://a.test/data/1"),
            u("http://b.test/id/7"),
            u("http://b.test/doc/7"),
            u("http://c.test/p/3"),
            u("http://d.test/x"),
            u("http://c.test/img/1"),
        );
        let mut o = DerefObserver::default();
        o.request(&event(&a, 303, false, &c));
        o.request(&event(&b, 303, false, &c));
        o.request(&event(&page, 200, false, &c));
        o.request(&RequestEvent {
            kind: RequestKind::Head,
            ..event(&file, 200, false, &c)
        });
        o.request(&event(&b_doc, 200, true, &c));
        o.request(&event(&down, 0, false, &c));
        o.request(&event(&a_doc, 200, true, &c));
        let got: Vec<(bool, u64)> = o.derefs.iter().map(|d| (d.rdf, d.requests)).collect();
        // page, b (its document), the failure, a (its document): 4 URIs of 7 requests.
        assert_eq!(got, vec![(false, 3), (true, 5), (false, 6), (true, 7)]);
        // The pairing of one-in-flight would have given a's outcome to the page.
        let t = LinkedTruth {
            uris: [&a, &b, &page, &down, &file]
                .iter()
                .map(|u| u.to_string())
                .collect(),
            rdf: [&a, &b].iter().map(|u| u.to_string()).collect(),
        };
        let f = figures(
            &o.derefs,
            &t,
            &StrategyStats::default(),
            Duration::from_secs(60),
        );
        assert_eq!((f.rdf, f.coverage, f.requests), (2, 1.0, 7));
        assert_eq!(f.requests_at, [Some(5), Some(7)]);
    }
}
