//! The portal benchmark (`forager bench --site portal:NAME`): each loopback
//! open-data portal of [`crate::sites::portal`] crawled by each strategy with
//! every combination of the link sources a job can switch on (`[targets]
//! catalogs`, `forms`; on the script-built portal, `render = "auto"` or
//! `"never"`), against the portal's own list of files.
//!
//! The ground truth is not a walk of the site (a walk follows page links
//! only, and the point of these portals is the files page links do not
//! reach) but the file list each portal publishes for its tests. A run's
//! figures are the share of those files it harvested, the requests it
//! needed to reach 90 % of them ([`RunResult::target_urls`] says which
//! request saved which file), and how its manifest says each was found.
//! Runs go through [`runner::run_once`], the engine the efficiency
//! benchmark measures, with only the job's `[targets]` switches changed.

use crate::report::{cell, MeanStd};
use crate::runner::{self, BenchSite, RunConfig, RunResult};
use crate::sites::portal::{DcatSite, FormSite, ListedCatalogs, MarkupSite, Portal, ScriptPortal};
use crate::sites::server::{Site, SiteServer};
use anyhow::{bail, Context};
use forager_core::config::NeitherLinks;
use forager_core::config::RenderMode;
use forager_core::form::FormLimits;
use forager_core::strategy::StrategyKind;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// The share of a portal's files at which requests are counted.
const LEVEL: f64 = 0.9;

/// A test portal of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortalKind {
    /// CKAN-shaped: a third of the datasets only in the Action API.
    Ckan,
    /// A statistics office whose DCAT catalog lists half the tables.
    Dcat,
    /// Four fifths of the tables behind GET forms.
    Forms,
    /// Files named only by schema.org markup or an alternate DCAT catalog.
    Markup,
    /// Catalogs at paths no well-known list has, announced by robots.txt,
    /// a sitemap and a JSON `<link rel="alternate">`.
    Listed,
    /// A script shell whose dataset list comes from a JSON API: three
    /// quarters of the files appear only once the page is rendered
    /// (needs Chromium).
    Script,
}

impl PortalKind {
    pub const ALL: [PortalKind; 6] = [
        PortalKind::Ckan,
        PortalKind::Dcat,
        PortalKind::Forms,
        PortalKind::Markup,
        PortalKind::Listed,
        PortalKind::Script,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PortalKind::Ckan => "ckan",
            PortalKind::Dcat => "dcat",
            PortalKind::Forms => "forms",
            PortalKind::Markup => "markup",
            PortalKind::Listed => "listed",
            PortalKind::Script => "script",
        }
    }

    /// The sources that reach what plain links do not on this portal: the
    /// script portal's is rendering, the others' catalogs and forms.
    pub fn sources_on(self) -> Sources {
        match self {
            PortalKind::Script => Sources {
                catalogs: false,
                forms: false,
                render: true,
            },
            _ => Sources::ALL,
        }
    }

    /// `portal:NAME` (or `portal:all`) as `--site` names it; `None` when
    /// `spec` names no portal.
    pub fn parse_spec(spec: &str) -> anyhow::Result<Option<Vec<PortalKind>>> {
        let Some(name) = spec.strip_prefix("portal:") else {
            if spec == "portal" {
                bail!(
                    "{spec:?}: expected portal:NAME, NAME one of ckan, dcat, forms, markup, listed, script or all"
                );
            }
            return Ok(None);
        };
        if name == "all" {
            return Ok(Some(PortalKind::ALL.to_vec()));
        }
        match PortalKind::ALL.into_iter().find(|k| k.name() == name) {
            Some(k) => Ok(Some(vec![k])),
            None => bail!(
                "{spec:?}: unknown portal {name:?}: expected ckan, dcat, forms, markup, listed, script or all"
            ),
        }
    }

    /// The site, the host it is served under, and its files (path and query).
    pub fn site(self) -> (Arc<dyn Site>, String, Vec<String>) {
        let host = format!("{}.portal.test", self.name());
        let (site, files): (Arc<dyn Site>, Vec<String>) = match self {
            PortalKind::Ckan => {
                let s = Portal::default();
                (Arc::new(s), s.files().into_iter().map(|f| f.0).collect())
            }
            PortalKind::Dcat => {
                let s = DcatSite::default();
                (Arc::new(s), s.files().into_iter().map(|f| f.0).collect())
            }
            PortalKind::Forms => {
                let s = FormSite::default();
                (Arc::new(s), s.files().into_iter().map(|f| f.0).collect())
            }
            PortalKind::Markup => {
                let s = MarkupSite::default();
                (Arc::new(s), s.files().into_iter().map(|f| f.0).collect())
            }
            PortalKind::Listed => {
                let s = ListedCatalogs::default();
                (Arc::new(s), s.files().into_iter().map(|f| f.0).collect())
            }
            PortalKind::Script => {
                let s = ScriptPortal::default();
                (Arc::new(s), s.files().into_iter().map(|f| f.0).collect())
            }
        };
        (site, host, files)
    }
}

/// Which link sources a run's job switches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sources {
    pub catalogs: bool,
    pub forms: bool,
    /// `render = "auto"` (else `"never"`).
    pub render: bool,
}

impl Sources {
    pub const ALL: Sources = Sources {
        catalogs: true,
        forms: true,
        render: false,
    };
    pub const NONE: Sources = Sources {
        catalogs: false,
        forms: false,
        render: false,
    };

    /// As the table shows it: `catalogs+forms`, `catalogs`, `forms`,
    /// `render auto` or `none`.
    pub fn describe(self) -> &'static str {
        match (self.catalogs, self.forms, self.render) {
            (true, true, _) => "catalogs+forms",
            (true, false, _) => "catalogs",
            (false, true, _) => "forms",
            (false, false, true) => "render auto",
            (false, false, false) => "none",
        }
    }

    /// The combinations a strategy runs with on `portal`: a learner with
    /// each of catalogs and forms on and off (rendering on and off on the
    /// script portal), the others with the portal's sources on and off.
    fn for_strategy(kind: StrategyKind, portal: PortalKind) -> Vec<Sources> {
        let on = portal.sources_on();
        if kind.learns() && on == Sources::ALL {
            vec![
                Sources::ALL,
                Sources {
                    catalogs: true,
                    forms: false,
                    render: false,
                },
                Sources {
                    catalogs: false,
                    forms: true,
                    render: false,
                },
                Sources::NONE,
            ]
        } else {
            vec![on, Sources::NONE]
        }
    }
}

/// The figures of one run against the portal's files.
#[derive(Clone, Debug, PartialEq)]
pub struct PortalFigures {
    /// Distinct files of the portal harvested.
    pub harvested: usize,
    pub files: usize,
    /// The request that saved the file reaching 90 % of them.
    pub req_at_90: Option<u64>,
    pub requests: u64,
    /// Targets saved that are not among the portal's files (none on an honest run).
    pub strays: usize,
}

/// Figures of a run from its trace and the URLs of its saved targets, in
/// the same order ([`RunResult::target_urls`]); `files` are URLs.
pub fn figures(run: &RunResult, files: &BTreeSet<String>) -> anyhow::Result<PortalFigures> {
    let hits: Vec<u64> = run
        .trace
        .iter()
        .filter(|r| r.target)
        .map(|r| r.index)
        .collect();
    if hits.len() != run.target_urls.len() {
        bail!(
            "{} seed {}: {} target requests in the trace but {} target URLs",
            run.site,
            run.seed,
            hits.len(),
            run.target_urls.len()
        );
    }
    let need = (LEVEL * files.len() as f64).ceil() as usize;
    let mut got = BTreeSet::new();
    let mut strays = 0;
    let mut req_at_90 = None;
    for (index, url) in hits.iter().zip(&run.target_urls) {
        if !files.contains(url) {
            strays += 1;
            continue;
        }
        if got.insert(url.as_str()) && got.len() == need && req_at_90.is_none() {
            req_at_90 = Some(*index);
        }
    }
    if need == 0 {
        req_at_90 = Some(0);
    }
    Ok(PortalFigures {
        harvested: got.len(),
        files: files.len(),
        req_at_90,
        requests: run.counters.requests,
        strays,
    })
}

/// How the manifest of a finished run says its targets were found
/// (`found_by` → rows).
pub fn found_by(manifest: &Path) -> anyhow::Result<BTreeMap<String, usize>> {
    let text = match std::fs::read_to_string(manifest) {
        Ok(t) => t,
        // A run that saved nothing writes no manifest.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", manifest.display())),
    };
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let row: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not a JSON row", manifest.display(), i + 1))?;
        let by = row["found_by"].as_str().unwrap_or("(none)").to_string();
        *out.entry(by).or_insert(0) += 1;
    }
    Ok(out)
}

/// One strategy with one combination of sources over every seed.
#[derive(Clone, Debug)]
pub struct PortalRow {
    pub strategy: StrategyKind,
    pub sources: Sources,
    pub runs: usize,
    /// % of the portal's files harvested.
    pub share: MeanStd,
    /// Requests to 90 %, over the runs that got there.
    pub req_at_90: Option<MeanStd>,
    /// Runs that got to 90 %.
    pub reached: usize,
    /// The most files one run harvested, in % (what plain links can reach).
    pub best_share: f64,
    pub requests: MeanStd,
    /// Mean manifest rows per run by `found_by`.
    pub found_by: BTreeMap<String, f64>,
    pub strays: usize,
}

impl PortalRow {
    fn of(
        strategy: StrategyKind,
        sources: Sources,
        figs: &[PortalFigures],
        found: &[BTreeMap<String, usize>],
    ) -> PortalRow {
        let zero = MeanStd {
            mean: 0.0,
            std: 0.0,
            n: 0,
        };
        let share = |f: &PortalFigures| 100.0 * f.harvested as f64 / f.files.max(1) as f64;
        let shares: Vec<f64> = figs.iter().map(share).collect();
        let reached: Vec<f64> = figs
            .iter()
            .filter_map(|f| f.req_at_90.map(|r| r as f64))
            .collect();
        let mut by: BTreeMap<String, f64> = BTreeMap::new();
        for m in found {
            for (k, n) in m {
                *by.entry(k.clone()).or_insert(0.0) += *n as f64;
            }
        }
        let runs = figs.len().max(1) as f64;
        by.values_mut().for_each(|v| *v /= runs);
        PortalRow {
            strategy,
            sources,
            runs: figs.len(),
            share: MeanStd::of(&shares).unwrap_or(zero),
            req_at_90: MeanStd::of(&reached),
            reached: reached.len(),
            best_share: shares.iter().copied().fold(0.0, f64::max),
            requests: MeanStd::over(figs, |f| Some(f.requests as f64)).unwrap_or(zero),
            found_by: by,
            strays: figs.iter().map(|f| f.strays).sum(),
        }
    }
}

/// Every strategy of `kinds` with each of its combinations of sources, over
/// `seeds` seeds, on `portal`: the Markdown table and the quality bar's
/// verdict under it.
pub async fn bench(
    portal: PortalKind,
    kinds: &[StrategyKind],
    seeds: u64,
    max_requests: u64,
    neither_links: NeitherLinks,
    state_root: &Path,
) -> anyhow::Result<String> {
    let (site, host, paths) = portal.site();
    let files: BTreeSet<String> = paths.iter().map(|p| format!("http://{host}{p}")).collect();
    let server = SiteServer::start(vec![(host.clone(), site.clone())]).await?;
    let mut rows = Vec::new();
    for &kind in kinds {
        for sources in Sources::for_strategy(kind, portal) {
            let mut targets = BenchSite::statistics_targets();
            targets.catalogs = sources.catalogs;
            targets.forms = sources.forms.then(FormLimits::default);
            let bench_site = BenchSite {
                name: format!("portal-{}-{}", portal.name(), sources.describe()),
                host: host.clone(),
                site: site.clone(),
                start_path: "/".to_string(),
                targets,
            };
            let mut figs = Vec::new();
            let mut found = Vec::new();
            for seed in 1..=seeds.max(1) {
                let config = RunConfig {
                    strategy: kind,
                    seed,
                    max_requests,
                    // A run goes to the end: the share harvested is a figure.
                    early_stop: false,
                    neither_links,
                    trace: true,
                };
                let render = if sources.render {
                    RenderMode::Auto
                } else {
                    RenderMode::Never
                };
                let run = runner::run_once_tuned(
                    server.addr(),
                    &bench_site,
                    config,
                    state_root,
                    None,
                    |spec| spec.render.mode = render,
                )
                .await
                .with_context(|| {
                    format!(
                        "portal:{} {} sources {} seed {seed}",
                        portal.name(),
                        kind.name(),
                        sources.describe()
                    )
                })?;
                let f = figures(&run, &files)?;
                found.push(run_manifest_found_by(state_root, &bench_site, &config)?);
                tracing::info!(
                    portal = portal.name(),
                    strategy = kind.name(),
                    sources = sources.describe(),
                    seed,
                    harvested = f.harvested,
                    files = f.files,
                    req_at_90 = ?f.req_at_90,
                    requests = f.requests,
                    "portal run"
                );
                figs.push(f);
            }
            rows.push(PortalRow::of(kind, sources, &figs, &found));
        }
    }
    let _ = server.shutdown().await;
    Ok(markdown_table(portal, &host, files.len(), &rows))
}

/// `found_by` of a run's manifest, read where [`runner::run_once`] put it.
fn run_manifest_found_by(
    state_root: &Path,
    site: &BenchSite,
    config: &RunConfig,
) -> anyhow::Result<BTreeMap<String, usize>> {
    let job = runner::run_name(site, config);
    found_by(
        &state_root
            .join(&job)
            .join("targets")
            .join(&job)
            .join("manifest.jsonl"),
    )
}

/// The table of one portal, and the quality bar's verdict.
pub fn markdown_table(portal: PortalKind, host: &str, files: usize, rows: &[PortalRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "**portal:{}** ({host}) — {files} files\n",
        portal.name()
    );
    let _ = writeln!(
        out,
        "| strategy | sources | runs | files harvested % | requests to 90 % | runs reaching 90 % | requests | found by (mean rows per run) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for r in rows {
        let by: Vec<String> = r
            .found_by
            .iter()
            .map(|(k, v)| format!("{k} {v:.1}"))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {}/{} | {} | {} |",
            r.strategy.name(),
            r.sources.describe(),
            r.runs,
            r.share.show(1),
            cell(r.req_at_90.filter(|_| r.reached == r.runs), 1),
            r.reached,
            r.runs,
            r.requests.show(1),
            by.join(", ")
        );
    }
    out.push('\n');
    out.push_str(&verdict(rows, portal.sources_on()));
    if rows.iter().any(|r| r.strays > 0) {
        out.push_str("(some runs saved targets that are not among the portal's files)\n");
    }
    out
}

/// The portal quality bar for one portal: every file with the sources
/// on, in at most half the requests sb needs to reach 90 % without them, or,
/// where plain links cannot reach 90 %, said so.
fn verdict(rows: &[PortalRow], on: Sources) -> String {
    let mut out = String::new();
    let find =
        |k: StrategyKind, s: Sources| rows.iter().find(|r| r.strategy == k && r.sources == s);
    for r in rows.iter().filter(|r| r.sources == on) {
        let all = r.share.mean >= 100.0 - 1e-9 && r.share.std == 0.0;
        let _ = writeln!(
            out,
            "- {} with {}: {} ({} % of the files, mean of {} runs)",
            r.strategy.name(),
            on.describe(),
            if all {
                "every file in every run"
            } else {
                "NOT every file"
            },
            r.share.show(1),
            r.runs
        );
    }
    if let (Some(on), Some(off)) = (
        find(StrategyKind::Sb, on),
        find(StrategyKind::Sb, Sources::NONE),
    ) {
        match (on.req_at_90.filter(|_| on.reached == on.runs), off.reached) {
            (_, 0) => {
                let _ = writeln!(
                    out,
                    "- sb without the sources never reaches 90 % (at most {:.1} % of the files): plain links cannot; the ≤ 0.5× ratio does not apply",
                    off.best_share
                );
            }
            (Some(on90), n) if n == off.runs => {
                let off90 = off.req_at_90.map_or(f64::NAN, |m| m.mean);
                let ratio = on90.mean / off90;
                let _ = writeln!(
                    out,
                    "- requests to 90 %, sb with the sources ÷ without: {ratio:.2} ({})",
                    if ratio <= 0.5 {
                        "≤ 0.5, met"
                    } else {
                        "> 0.5, NOT met"
                    }
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "- sb reaches 90 % in {}/{} runs with the sources and {}/{} without: no ratio",
                    on.reached, on.runs, off.reached, off.runs
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::TraceRow;
    use forager::engine::RequestKind;
    use forager::store::JobCounters;

    fn run(rows: &[(u64, Option<&str>)]) -> RunResult {
        RunResult {
            site: "p".into(),
            strategy: StrategyKind::Sb,
            seed: 1,
            trace: rows
                .iter()
                .map(|&(index, url)| TraceRow {
                    index,
                    kind: RequestKind::Get,
                    bytes: 10,
                    target: url.is_some(),
                    neither: false,
                })
                .collect(),
            target_urls: rows
                .iter()
                .filter_map(|(_, u)| u.map(str::to_string))
                .collect(),
            counters: JobCounters {
                requests: rows.last().map_or(0, |r| r.0),
                ..Default::default()
            },
            stats: Default::default(),
            wall: Default::default(),
            prior: None,
        }
    }

    #[test]
    fn requests_to_ninety_percent_count_only_the_portal_files() {
        let files: BTreeSet<String> = (0..10).map(|i| format!("http://p.test/{i}.csv")).collect();
        // 9 files are 90 %; a stray target in between does not count.
        let mut rows: Vec<(u64, Option<String>)> = Vec::new();
        let mut index = 0;
        for i in 0..9 {
            index += 2;
            rows.push((index - 1, None));
            rows.push((index, Some(format!("http://p.test/{i}.csv"))));
            if i == 4 {
                index += 1;
                rows.push((index, Some("http://p.test/other.csv".into())));
            }
        }
        let view: Vec<(u64, Option<&str>)> = rows.iter().map(|(i, u)| (*i, u.as_deref())).collect();
        let f = figures(&run(&view), &files).unwrap();
        assert_eq!(f.harvested, 9);
        assert_eq!(f.strays, 1);
        assert_eq!(f.req_at_90, Some(19));
        // Eight files: never 90 %.
        let f = figures(&run(&view[..view.len() - 2]), &files).unwrap();
        assert_eq!((f.harvested, f.req_at_90), (8, None));
    }

    #[test]
    fn a_trace_and_target_urls_that_disagree_are_an_error() {
        let mut r = run(&[(1, Some("http://p.test/0.csv"))]);
        r.target_urls.clear();
        assert!(figures(&r, &BTreeSet::new()).is_err());
    }

    #[test]
    fn the_verdict_says_where_plain_links_cannot_reach_ninety_percent() {
        let fig = |harvested, req| PortalFigures {
            harvested,
            files: 10,
            req_at_90: req,
            requests: 50,
            strays: 0,
        };
        let on = PortalRow::of(
            StrategyKind::Sb,
            Sources::ALL,
            &[fig(10, Some(30)), fig(10, Some(34))],
            &[],
        );
        let off = PortalRow::of(
            StrategyKind::Sb,
            Sources::NONE,
            &[fig(4, None), fig(5, None)],
            &[],
        );
        let text = verdict(&[on.clone(), off], Sources::ALL);
        assert!(
            text.contains("sb with catalogs+forms: every file in every run"),
            "{text}"
        );
        assert!(
            text.contains("never reaches 90 % (at most 50.0 %"),
            "{text}"
        );
        let slow = PortalRow::of(
            StrategyKind::Sb,
            Sources::NONE,
            &[fig(10, Some(40)), fig(10, Some(40))],
            &[],
        );
        let text = verdict(&[on.clone(), slow], Sources::ALL);
        assert!(text.contains("0.80 (> 0.5, NOT met)"), "{text}");
        let fast = PortalRow::of(
            StrategyKind::Sb,
            Sources::NONE,
            &[fig(10, Some(80)), fig(10, Some(80))],
            &[],
        );
        assert!(verdict(&[on, fast], Sources::ALL).contains("0.40 (≤ 0.5, met)"));
    }

    #[test]
    fn portal_names_parse_and_an_unknown_one_is_refused() {
        assert_eq!(
            PortalKind::parse_spec("portal:forms").unwrap(),
            Some(vec![PortalKind::Forms])
        );
        assert_eq!(
            PortalKind::parse_spec("portal:all")
                .unwrap()
                .map(|v| v.len()),
            Some(6)
        );
        assert_eq!(
            PortalKind::parse_spec("portal:script").unwrap(),
            Some(vec![PortalKind::Script])
        );
        assert!(PortalKind::Script.sources_on().render);
        assert_eq!(
            Sources::for_strategy(StrategyKind::Sb, PortalKind::Script)
                .into_iter()
                .map(Sources::describe)
                .collect::<Vec<_>>(),
            vec!["render auto", "none"]
        );
        assert_eq!(PortalKind::parse_spec("synthetic:small").unwrap(), None);
        assert!(PortalKind::parse_spec("portal:nope").is_err());
        assert!(PortalKind::parse_spec("portal").is_err());
    }
}
