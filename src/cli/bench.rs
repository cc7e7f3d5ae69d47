//! `forager bench`, `forager demo` and the hidden `forager serve-site`.

use anyhow::{bail, Context};
use clap::Args;
use forager::store::{Store, TableUsage};
use forager_bench::changing;
use forager_bench::daemon_load;
use forager_bench::linked;
use forager_bench::multihost;
use forager_bench::portal::PortalKind;
use forager_bench::reference::{self, ReferenceCommand, RunSample};
use forager_bench::report::{self, RunFigures};
use forager_bench::runner::{
    clear_state_dir, run_once, run_once_with_prior, sanitize, BenchSite, RunConfig, RunResult,
};
use forager_bench::sites::directory::DirectorySite;
use forager_bench::sites::linked::LinkedWeb;
use forager_bench::sites::server::{Site, SiteServer};
use forager_bench::sites::structured::StructuredWeb;
use forager_bench::sites::synthetic::SyntheticSpec;
use forager_bench::sites::web::Web;
use forager_bench::structured;
use forager_core::config::NeitherLinks;
use forager_core::strategy::StrategyKind;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct BenchArgs {
    /// A site: `synthetic:PRESET[:SEED][:pages=N]` (small, medium, large, deep, sparse, dense,
    /// variants, rare, rare-blind; pages=N resizes the preset to N HTML pages, 100 to 100000000, e.g.
    /// synthetic:large:pages=1M),
    /// `dir:NAME=ROOT[:START_PAGE]`, or `linked[:HOSTS[:PER_HOST[:SEED]]]` (a web of
    /// linked data, default linked:100:30:1, measured with a linked-data job; also
    /// linked-sparse, default :64:24:1, RDF rare and buried under HTML, and linked-conneg,
    /// default :40:20:1, conneg-only hosts without RDF file names), or
    /// `structured[:HOSTS[:PAGES_PER_HOST[:SEED]]]` (a web of hosts of which a few embed
    /// JSON-LD, microdata or RDFa, default structured:150:30:1, measured with a
    /// structured-data job: relevant share of the HTML fetched at budgets of the web);
    /// repeatable (default: synthetic:small). Or, alone, a
    /// web of many hosts, `web:HOSTS[:PAGES[:LATENCY]]` (e.g. web:1000; PAGES per host,
    /// default 200; LATENCY added to every answer, e.g. 50ms): multi-host mode, one job
    /// (scope any, politeness per host, --delay) over every host for --warmup then
    /// --duration per strategy and seed; reports requests/s, CPU per request, peak RSS
    /// and, from the server's log, the most requests in flight on one host and the
    /// smallest gap between two requests to one host (mean ± std over --seeds). Or, alone,
    /// `changing[:SECTIONS[:SEED]]` (default changing:8:1): a site that publishes and revises
    /// files over simulated days, crawled by one continuous job per revisit policy
    /// (--policies) for --days simulated days of --day each at --budget requests a day;
    /// reports new files found, mean delay from publication to harvest and requests per
    /// new file (mean ± std over --seeds). Or `portal:NAME` (ckan, dcat, forms, markup,
    /// listed, script, or all): a loopback open-data portal whose catalogs, GET forms or
    /// scripts reach files no page links, crawled by each strategy (default sb,bfs) with
    /// every combination of `[targets] catalogs` and `forms` on and off (bfs: all or none;
    /// on `script`, which needs Chromium, `render = "auto"` and `"never"`), --seeds runs
    /// each; reports the share of the portal's files harvested and the requests to 90 % of
    /// them.
    #[arg(long = "site")]
    sites: Vec<String>,
    /// A file of `NAME ROOT START_PAGE` lines, as printed by shared/corpora/get-corpora.sh.
    #[arg(long)]
    corpora: Option<PathBuf>,
    /// Strategies to compare (default sb,focused,bfs,dfs,random; on a structured web
    /// anthelion,sb,focused,bfs,random, without anthelion where this build lacks it).
    #[arg(long, value_delimiter = ',')]
    strategies: Vec<String>,
    /// Runs (seeds 1..=N) per randomised strategy (sb, random, ldcoc, …); bfs, dfs and focused
    /// run once, except in multi-host mode, where every strategy runs N times.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// Where traces (CSV), tables (Markdown) and plots (SVG) go.
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// Start every sb run warm: first crawl this site (as for --site) once with sb,
    /// seed 1, and give what it learnt about which link words lead to targets to each
    /// measured run as the stored prior of its target kinds (a new job of a daemon
    /// that crawled that site). Without it every run starts cold.
    #[arg(long)]
    prior_from: Option<String>,
    /// Request budget per run (0: until the frontier is empty).
    #[arg(long, default_value_t = 0)]
    max_requests: u64,
    /// Let runs stop early (off: every run goes to the end, to draw whole curves).
    #[arg(long)]
    early_stop: bool,
    /// The jobs' `budget.neither_links`: `last` fetches the links sb predicts are neither
    /// a page nor a target after all others, `skip` never (sb only; see docs/jobs.md).
    #[arg(long, default_value = "last", value_parser = parse_neither_links)]
    neither_links: NeitherLinks,
    /// CPU mode: serve the first site from a child process, crawl it once with the
    /// first strategy, report pages/s, CPU per page and per MiB of HTML, peak RSS.
    /// With --reference: side by side with another crawler.
    #[arg(long)]
    cpu: bool,
    /// CPU mode: a reference crawler's command line, run with `sh -c`; `{url}` becomes the
    /// site's http://127.0.0.1:PORT/ start URL (no other URL allowed). Each of --runs
    /// rounds crawls the site with every --strategies, then with the reference; prints the
    /// medians of CPU ms per MiB of HTML and per request (requests and bytes from the
    /// site server's log) and their ratios to the reference's.
    #[arg(long, requires = "cpu")]
    reference: Option<String>,
    /// CPU mode with --reference: the reference's name in the table.
    #[arg(long, default_value = "reference", requires = "reference")]
    reference_name: String,
    /// CPU mode with --reference: interleaved rounds (at least 3, for a median).
    #[arg(long, default_value_t = 3, requires = "reference")]
    runs: usize,
    /// CPU mode with --reference: a reference run still going after this is killed.
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration, requires = "reference")]
    reference_timeout: Duration,
    /// Daemon load mode: the real daemon with --jobs site jobs (the first --site,
    /// default synthetic:medium, under one host name per job) for --warmup then
    /// --duration; reports aggregate requests/s, HTML pages/s, daemon CPU and RSS,
    /// and the time from SIGTERM to exit.
    #[arg(long)]
    daemon_load: bool,
    /// Cluster mode: N daemons on a PostgreSQL server the bench
    /// starts, each with --node-jobs jobs, against one daemon, over a web
    /// whose every response is --latency late; reports aggregate requests/s,
    /// CPU and database round trips per request, and the take-over time after
    /// a kill -9. Uses --warmup, --duration, --delay (default 10ms).
    #[arg(long, value_name = "N")]
    cluster: Option<usize>,
    /// Cluster mode: each node's max_jobs.
    #[arg(long, default_value_t = 20, requires = "cluster")]
    node_jobs: usize,
    /// Cluster mode: the server-side delay of every response.
    #[arg(long, default_value = "200ms", value_parser = humantime::parse_duration, requires = "cluster")]
    latency: Duration,
    /// Cluster mode: single / one-node pairs measured, alternating (AB, BA…);
    /// the CPU the cluster adds is the median of their differences.
    #[arg(long, default_value_t = 1, requires = "cluster")]
    rounds: usize,
    /// Cluster mode: the nodes' lease.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration, requires = "cluster")]
    lease: Duration,
    /// Daemon load: concurrent site jobs.
    #[arg(long, default_value_t = 1000)]
    jobs: usize,
    /// Daemon load and multi-host: the steady-state window measured.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Daemon load: time from every job listed to the window's start; multi-host:
    /// from the crawl's start.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    warmup: Duration,
    /// Politeness delay of every job: daemon load and multi-host default to 1s (one
    /// request per second per site or host); linked and structured webs to 0s.
    #[arg(long, value_parser = humantime::parse_duration)]
    delay: Option<Duration>,
    /// Multi-host, linked and structured webs: the job's politeness.max_in_flight
    /// (default: 64, that of scope any; 1 is the papers' sequential crawl).
    #[arg(long)]
    max_in_flight: Option<u32>,
    /// Linked and structured webs: the job's politeness.look_ahead, or several
    /// (comma-separated) to draw the curve of precision against speed (default: the
    /// strategy's own).
    #[arg(long, value_delimiter = ',')]
    look_ahead: Vec<u32>,
    /// Linked and structured webs: the job's politeness.per, `host` or `pld` (default:
    /// pld, that of scope any).
    #[arg(long, value_parser = parse_per)]
    per: Option<forager_core::extract::PolitenessPer>,
    /// Linked and structured webs: name every host of the web under one registrable
    /// domain (`site0001.web.test`, …), so that per-pld politeness makes them one key.
    #[arg(long)]
    one_domain: bool,
    /// Daemon load: how often /status is sampled.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    sample: Duration,
    /// Daemon load: the daemon's checkpoint_interval.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    checkpoint_interval: Duration,
    /// Daemon load: the daemon's cache_size (e.g. `32MiB`; default: the daemon's own).
    #[arg(long, value_parser = forager_core::config::parse_size)]
    cache_size: Option<u64>,
    /// Daemon load, multi-host and changing site: keep the work folder (job files, config,
    /// state, logs); CPU mode: keep the crawl's state folder.
    #[arg(long)]
    keep: bool,
    /// Changing site: simulated days per run (the first one, the first full pass, is not measured).
    #[arg(long, default_value_t = 7)]
    days: u32,
    /// Changing site: requests per simulated day, enforced as the job's politeness delay
    /// (--day / --budget) and checked from the server's log.
    #[arg(long, default_value_t = 400)]
    budget: u64,
    /// Changing site: the real length of a simulated day (at least 24s, so that the
    /// job's revisit.min of a simulated hour is at least 1s).
    #[arg(long, default_value = "24s", value_parser = humantime::parse_duration)]
    day: Duration,
    /// Changing site: the revisit policies compared (default learned,adaptive,fixed).
    #[arg(long, value_delimiter = ',')]
    policies: Vec<String>,
}

#[derive(Args)]
pub struct ServeArgs {
    /// The site, as for `bench --site`.
    site: String,
    /// Serve it under this many host names, site-0001.test … (the daemon load bench); 0: its own name.
    #[arg(long, default_value_t = 0)]
    hosts: usize,
    /// Also serve it under the name 127.0.0.1, for a crawler given http://127.0.0.1:PORT/…
    /// (the reference of `bench --cpu --reference`).
    #[arg(long)]
    loopback_name: bool,
}

/// The politeness delay of the daemon-load and multi-host benchmarks when
/// `--delay` names none: the default job's.
const DEFAULT_WEB_DELAY: Duration = Duration::from_secs(1);

fn parse_per(s: &str) -> Result<forager_core::extract::PolitenessPer, String> {
    match s {
        "host" => Ok(forager_core::extract::PolitenessPer::Host),
        "pld" => Ok(forager_core::extract::PolitenessPer::Pld),
        _ => Err(format!("{s:?}: expected host or pld")),
    }
}

/// The job settings a linked or structured web is crawled with: the
/// default job of scope any at `--delay` (0s by default), or what the
/// flags override; one per `--look-ahead` value.
fn web_settings(args: &BenchArgs) -> Vec<forager_bench::runner::JobSetting> {
    let base = forager_bench::runner::JobSetting {
        delay: args.delay.unwrap_or(Duration::ZERO),
        max_in_flight: args.max_in_flight,
        look_ahead: None,
        per: args.per,
    };
    if args.look_ahead.is_empty() {
        return vec![base];
    }
    args.look_ahead
        .iter()
        .map(|&n| forager_bench::runner::JobSetting {
            look_ahead: Some(n),
            ..base
        })
        .collect()
}

/// [`web_settings`] for one strategy: a strategy that learns nothing runs
/// once, at its own default look-ahead (the curve is a learner's).
fn strategy_settings(
    args: &BenchArgs,
    kind: StrategyKind,
) -> Vec<forager_bench::runner::JobSetting> {
    let all = web_settings(args);
    if kind.learns() {
        return all;
    }
    all.into_iter()
        .take(1)
        .map(|s| forager_bench::runner::JobSetting {
            look_ahead: None,
            ..s
        })
        .collect()
}

/// `linked[-sparse|-conneg][:HOSTS[:PER_HOST[:SEED]]]`: a web of linked data
/// (`sites::linked`, `sites::linked::shapes`), its hosts under one registrable
/// domain with `one_domain`; `None` for another kind of site.
fn parse_linked(spec: &str, one_domain: bool) -> anyhow::Result<Option<LinkedWeb>> {
    use forager_bench::sites::linked::Shape;
    const FORM: &str = "linked[-sparse|-conneg][:HOSTS[:PER_HOST[:SEED]]]";
    // The longer names first: "linked" is a prefix of both.
    let Some((shape, rest)) = [
        (Shape::Sparse, [64u64, 24, 1]),
        (Shape::Conneg, [40, 20, 1]),
        (Shape::Classic, [100, 30, 1]),
    ]
    .into_iter()
    .find_map(|(shape, defaults)| {
        spec.strip_prefix(shape.name())
            .map(|rest| ((shape, defaults), rest))
    }) else {
        return Ok(None);
    };
    let (shape, mut values) = shape;
    if !rest.is_empty() {
        let Some(rest) = rest.strip_prefix(':') else {
            bail!("unknown site {spec:?}: expected {FORM}");
        };
        let parts: Vec<&str> = rest.split(':').collect();
        if parts.len() > 3 {
            bail!("{spec:?}: expected {FORM}");
        }
        for (slot, part) in values.iter_mut().zip(parts) {
            *slot = part
                .parse()
                .with_context(|| format!("{spec:?}: {part:?} is not a number"))?;
        }
    }
    let [hosts, per_host, seed] = values;
    anyhow::ensure!(
        (5..=10_000).contains(&hosts) && (1..=100_000).contains(&per_host),
        "{spec:?}: a linked web has 5 to 10000 hosts of 1 to 100000 things"
    );
    let web = LinkedWeb::with_shape(shape, hosts as usize, per_host as usize, seed);
    Ok(Some(if one_domain {
        web.under_one_domain()
    } else {
        web
    }))
}

/// `structured[:HOSTS[:PAGES_PER_HOST[:SEED]]]`: a web of structured data; `None`
/// for another kind of site.
fn parse_structured(spec: &str, one_domain: bool) -> anyhow::Result<Option<StructuredWeb>> {
    const FORM: &str = "structured[:HOSTS[:PAGES_PER_HOST[:SEED]]]";
    let Some(rest) = spec.strip_prefix("structured") else {
        return Ok(None);
    };
    let mut values = [150u64, 30, 1];
    if !rest.is_empty() {
        let Some(rest) = rest.strip_prefix(':') else {
            bail!("unknown site {spec:?}: expected {FORM}");
        };
        let parts: Vec<&str> = rest.split(':').collect();
        if parts.len() > 3 {
            bail!("{spec:?}: expected {FORM}");
        }
        for (slot, part) in values.iter_mut().zip(parts) {
            *slot = part
                .parse()
                .with_context(|| format!("{spec:?}: {part:?} is not a number (expected {FORM})"))?;
        }
    }
    let [hosts, per_host, seed] = values;
    anyhow::ensure!(
        (6..=10_000).contains(&hosts) && (1..=10_000).contains(&per_host),
        "{spec:?}: a structured web has 6 to 10000 hosts of 1 to 10000 pages"
    );
    let web = StructuredWeb::new(hosts as usize, per_host as usize, seed);
    Ok(Some(if one_domain {
        web.under_one_domain()
    } else {
        web
    }))
}

fn parse_site(spec: &str) -> anyhow::Result<BenchSite> {
    if let Some(rest) = spec.strip_prefix("synthetic:") {
        let synthetic: SyntheticSpec = rest
            .parse()
            .with_context(|| format!("bad synthetic site {spec:?}"))?;
        return BenchSite::synthetic(synthetic);
    }
    if let Some(rest) = spec.strip_prefix("dir:") {
        let (name, path) = rest
            .split_once('=')
            .with_context(|| format!("expected dir:NAME=ROOT[:START], found {spec:?}"))?;
        let (root, start) = match path.rsplit_once(':') {
            Some((r, s)) if !s.contains('/') || s.ends_with(".html") => (r, s),
            _ => (path, "index.html"),
        };
        return corpus_site(name, Path::new(root), start);
    }
    if spec.starts_with("linked") || spec.starts_with("structured") || spec.starts_with("changing")
    {
        bail!("{spec:?}: a linked, structured or changing site is only measured by `forager bench` itself (not --cpu, --daemon-load or serve-site)");
    }
    bail!(
        "unknown site {spec:?}: expected synthetic:PRESET[:SEED][:pages=N], dir:NAME=ROOT[:START] or \
         linked[:HOSTS[:PER_HOST[:SEED]]] (web:HOSTS runs alone, without --cpu or --daemon-load)"
    )
}

fn corpus_site(name: &str, root: &Path, start: &str) -> anyhow::Result<BenchSite> {
    anyhow::ensure!(
        root.is_dir(),
        "site root {} is not a folder",
        root.display()
    );
    Ok(BenchSite {
        name: name.to_string(),
        host: format!("{}.corpus.test", sanitize(name)),
        site: Arc::new(DirectorySite::new(root)?),
        start_path: format!("/{}", start.trim_start_matches('/')),
        targets: BenchSite::corpus_targets(),
    })
}

fn parse_corpora(path: &Path) -> anyhow::Result<Vec<BenchSite>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut sites = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [] => continue,
            [name, root, start] => sites.push(corpus_site(name, Path::new(root), start)?),
            _ => bail!(
                "{}:{}: expected NAME ROOT START_PAGE",
                path.display(),
                i + 1
            ),
        }
    }
    Ok(sites)
}

/// The default of --strategies.
const DEFAULT_STRATEGIES: &[&str] = &["sb", "focused", "bfs", "dfs", "random"];

fn strategies(names: &[String]) -> anyhow::Result<Vec<StrategyKind>> {
    if names.is_empty() {
        return Ok(DEFAULT_STRATEGIES
            .iter()
            .filter_map(|n| StrategyKind::parse(n))
            .collect());
    }
    names
        .iter()
        .map(|n| StrategyKind::parse(n.trim()).with_context(|| format!("unknown strategy {n:?}")))
        .collect()
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

pub fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if args.daemon_load {
        return daemon_load(&args);
    }
    if let Some(nodes) = args.cluster {
        return cluster(&args, nodes);
    }
    if let Some(params) = changing_site(&args)? {
        return changing(&args, params);
    }
    if let Some(web) = multihost_web(&args)? {
        return multihost(&args, web);
    }
    let mut sites: Vec<BenchSite> = Vec::new();
    let mut webs: Vec<LinkedWeb> = Vec::new();
    let mut structured_webs: Vec<StructuredWeb> = Vec::new();
    let mut portals: Vec<PortalKind> = Vec::new();
    for spec in &args.sites {
        if let Some(found) = PortalKind::parse_spec(spec)? {
            if args.cpu {
                bail!("--cpu measures a site, not a portal's link sources ({spec:?})");
            }
            portals.extend(found);
            continue;
        }
        if let Some(web) = parse_structured(spec, args.one_domain)? {
            if args.cpu {
                bail!("--cpu measures a site, not a structured web ({spec:?})");
            }
            structured_webs.push(web);
            continue;
        }
        match parse_linked(spec, args.one_domain)? {
            Some(web) if !args.cpu => webs.push(web),
            Some(_) => bail!("--cpu measures a site, not a linked web ({spec:?})"),
            None => sites.push(parse_site(spec)?),
        }
    }
    if let Some(c) = &args.corpora {
        sites.extend(parse_corpora(c)?);
    }
    if sites.is_empty() && webs.is_empty() && structured_webs.is_empty() && portals.is_empty() {
        sites.push(parse_site("synthetic:small")?);
    }
    let kinds = strategies(&args.strategies)?;
    if let Some(template) = &args.reference {
        let reference = ReferenceCommand::parse(template)?;
        let kinds = if args.strategies.is_empty() {
            vec![StrategyKind::Sb]
        } else {
            kinds
        };
        return cpu_reference(&args, &sites[0], &kinds, &reference);
    }
    if args.cpu {
        return cpu_mode(
            &args,
            &sites[0],
            kinds.first().copied().unwrap_or(StrategyKind::Sb),
        );
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let state_root = args.out.join("state");
    let rt = runtime()?;
    let prior = match &args.prior_from {
        Some(spec) => Some(rt.block_on(learn_prior(&parse_site(spec)?, &args, &state_root))?),
        None => None,
    };
    let mut markdown = String::new();
    for site in &sites {
        let table = rt.block_on(bench_site(
            site,
            &kinds,
            &args,
            &state_root,
            prior.as_deref(),
        ))?;
        outln!("{table}");
        markdown.push_str(&table);
        markdown.push('\n');
    }
    for web in &webs {
        let table = rt.block_on(bench_linked(web, &kinds, &args, &state_root))?;
        outln!("{table}");
        markdown.push_str(&table);
        markdown.push('\n');
    }
    // Anthelion's own comparison, by name so that the strategy works here
    // once it is built in.
    let structured_kinds = if args.strategies.is_empty() {
        ["anthelion", "sb", "focused", "bfs", "random"]
            .iter()
            .filter_map(|n| StrategyKind::parse(n))
            .collect()
    } else {
        kinds.clone()
    };
    for web in &structured_webs {
        let table = rt.block_on(bench_structured(web, &structured_kinds, &args, &state_root))?;
        outln!("{table}");
        markdown.push_str(&table);
        markdown.push('\n');
    }
    // sb side by side with bfs, as the table asks, unless named.
    let portal_kinds = if args.strategies.is_empty() {
        vec![StrategyKind::Sb, StrategyKind::Bfs]
    } else {
        kinds.clone()
    };
    for &portal in &portals {
        let table = rt.block_on(forager_bench::portal::bench(
            portal,
            &portal_kinds,
            args.seeds,
            args.max_requests,
            args.neither_links,
            &state_root,
        ))?;
        outln!("{table}");
        markdown.push_str(&table);
        markdown.push('\n');
    }
    let summary = args.out.join("summary.md");
    std::fs::write(&summary, &markdown)
        .with_context(|| format!("writing {}", summary.display()))?;
    let _ = std::fs::remove_dir_all(&state_root);
    errln!(
        "tables: {}; traces and plots in {}",
        summary.display(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Crawl `site` once with sb (seed 1) and return the prior it left.
async fn learn_prior(
    site: &BenchSite,
    args: &BenchArgs,
    state_root: &Path,
) -> anyhow::Result<Vec<u8>> {
    let server = SiteServer::start(vec![(site.host.clone(), site.site.clone())]).await?;
    let config = RunConfig {
        strategy: StrategyKind::Sb,
        seed: 1,
        max_requests: args.max_requests,
        early_stop: args.early_stop,
        neither_links: args.neither_links,
        trace: false,
    };
    let run = run_once(server.addr(), site, config, state_root).await?;
    let _ = server.shutdown().await;
    let (positive, negative) = run.stats.lead_examples;
    errln!(
        "prior: learnt on {} by sb (seed 1) from {} pages ({positive} with targets)",
        site.name,
        positive + negative
    );
    run.prior
        .with_context(|| format!("sb learnt no prior on {} (it found no target)", site.name))
}

async fn bench_site(
    site: &BenchSite,
    kinds: &[StrategyKind],
    args: &BenchArgs,
    state_root: &Path,
    prior: Option<&[u8]>,
) -> anyhow::Result<String> {
    let server = SiteServer::start(vec![(site.host.clone(), site.site.clone())]).await?;
    let truth = {
        let site = site.clone();
        tokio::task::spawn_blocking(move || site.ground_truth()).await??
    };
    errln!(
        "{}: {} pages, {} targets reachable, oracle floor for 90 %: {}",
        site.name,
        truth.pages,
        truth.targets.len(),
        truth
            .floor90
            .map_or("—".to_string(), |f| format!("{} requests", f.requests()))
    );
    let mut summaries = Vec::new();
    let mut first_runs: Vec<RunResult> = Vec::new();
    for &kind in kinds {
        let seeds = match kind {
            StrategyKind::Bfs | StrategyKind::Dfs | StrategyKind::Focused => 1,
            _ => args.seeds.max(1),
        };
        let mut figs: Vec<RunFigures> = Vec::new();
        for seed in 1..=seeds {
            let config = RunConfig {
                strategy: kind,
                seed,
                max_requests: args.max_requests,
                early_stop: args.early_stop,
                neither_links: args.neither_links,
                trace: true,
            };
            let warm = prior.filter(|_| matches!(kind, StrategyKind::Sb | StrategyKind::SbBinary));
            let run = run_once_with_prior(server.addr(), site, config, state_root, warm).await?;
            let f = report::figures(&run, &truth);
            errln!(
                "  {:<8} seed {seed}: {} requests, {} targets, req@90 {} (÷ floor {}) ({:.1} s)",
                kind.name(),
                run.counters.requests,
                run.counters.targets,
                f.req_at[2].map_or("—".into(), |v| format!("{v:.1} %")),
                f.vs_floor.map_or("—".into(), |v| format!("{v:.2}")),
                run.wall.as_secs_f64()
            );
            let csv = args.out.join(format!(
                "{}-{}-{seed}.csv",
                sanitize(&site.name),
                kind.name()
            ));
            report::write_trace_csv(&csv, &run.trace)?;
            figs.push(f);
            if seed == 1 {
                first_runs.push(run);
            }
        }
        summaries.push(report::summarise(kind, &figs));
    }
    let plot = args.out.join(format!("{}.svg", sanitize(&site.name)));
    let refs: Vec<&RunResult> = first_runs.iter().collect();
    report::write_plot(&plot, &site.name, &truth, &refs)?;
    let _ = server.shutdown().await;
    let mut table = report::markdown_table(&site.name, &truth, &summaries);
    table.push_str(&report::floor_line(&summaries));
    Ok(table)
}

/// Every strategy on a linked web (`bench::linked`), crawled with each of
/// [`web_settings`]: the paper's RDF share (precision) at budgets of the
/// web, the URIs and requests needed for 50 % / 90 % of its RDF, coverage
/// and RDF documents per minute.
async fn bench_linked(
    web: &LinkedWeb,
    kinds: &[StrategyKind],
    args: &BenchArgs,
    state_root: &Path,
) -> anyhow::Result<String> {
    let server = SiteServer::start(web.sites()).await?;
    let truth = {
        let web = *web;
        tokio::task::spawn_blocking(move || web.walk()).await?
    };
    errln!(
        "{} web: {} hosts, {} URIs reachable, {} RDF",
        web.shape.name(),
        web.hosts,
        truth.uris.len(),
        truth.rdf.len()
    );
    let mut rows = Vec::new();
    let mut csv = String::from("strategy,look_ahead,seed,dereference,requests,rdf\n");
    for &kind in kinds {
        let seeds = match kind {
            StrategyKind::Bfs | StrategyKind::Dfs | StrategyKind::Focused => 1,
            _ => args.seeds.max(1),
        };
        let settings = strategy_settings(args, kind);
        for setting in settings {
            let mut figs = Vec::new();
            for seed in 1..=seeds {
                let run = linked::run_once(
                    server.addr(),
                    web,
                    kind,
                    seed,
                    setting,
                    args.max_requests,
                    state_root,
                )
                .await?;
                let f = linked::figures(&run.derefs, &truth, &run.stats, run.wall);
                if run.targets != f.rdf as u64 {
                    errln!(
                        "  warning: {} seed {seed}: the engine saved {} RDF documents, the dereferences counted {}",
                        kind.name(),
                        run.targets,
                        f.rdf
                    );
                }
                errln!(
                    "  {:<8} look-ahead {:>7} seed {seed}: {} URIs, {} requests, {} RDF ({:.1} %), precision@25 % {:.3}, requests@90 % {}, {:.0} RDF/min ({:.1} s)",
                    kind.name(),
                    setting.look_ahead.map_or("default".to_string(), |n| n.to_string()),
                    f.derefs,
                    f.requests,
                    f.rdf,
                    100.0 * f.coverage,
                    f.share[1],
                    f.requests_at[1].map_or("—".to_string(), |r| r.to_string()),
                    f.per_minute,
                    run.wall.as_secs_f64()
                );
                for (i, d) in run.derefs.iter().enumerate() {
                    csv.push_str(&format!(
                        "{},{},{seed},{},{},{}\n",
                        kind.name(),
                        setting.look_ahead.unwrap_or(0),
                        i + 1,
                        d.requests,
                        u8::from(d.rdf)
                    ));
                }
                figs.push(f);
            }
            rows.push(linked::summarise(kind, setting.describe(kind), &figs));
        }
    }
    let trace = args.out.join(format!("{}.csv", web.shape.name()));
    std::fs::write(&trace, csv).with_context(|| format!("writing {}", trace.display()))?;
    let _ = server.shutdown().await;
    Ok(linked::markdown_table(web, &truth, &rows))
}

/// Every strategy on a structured web (`bench::structured`): the relevant
/// share of the HTML fetched at budgets of the web, and the pages needed for
/// 50 % / 90 % of its relevant pages.
async fn bench_structured(
    web: &StructuredWeb,
    kinds: &[StrategyKind],
    args: &BenchArgs,
    state_root: &Path,
) -> anyhow::Result<String> {
    let server = SiteServer::start(web.sites()).await?;
    let truth = {
        let web = *web;
        tokio::task::spawn_blocking(move || {
            structured::ground_truth(&web, forager_core::config::DEFAULT_MIN_STATEMENTS)
        })
        .await??
    };
    errln!(
        "structured web: {} hosts, {} pages reachable, {} relevant",
        web.hosts,
        truth.pages.len(),
        truth.relevant.len()
    );
    let mut rows = Vec::new();
    let mut csv = String::from("strategy,look_ahead,seed,page,relevant\n");
    for &kind in kinds {
        let seeds = match kind {
            StrategyKind::Bfs | StrategyKind::Dfs | StrategyKind::Focused => 1,
            _ => args.seeds.max(1),
        };
        let settings = strategy_settings(args, kind);
        for setting in settings {
            let mut figs = Vec::new();
            for seed in 1..=seeds {
                let run = structured::run_once(
                    server.addr(),
                    web,
                    kind,
                    seed,
                    setting,
                    args.max_requests,
                    state_root,
                )
                .await?;
                let hits = run.relevance(&truth);
                let f = structured::figures(&hits, &truth, &run.stats, run.wall);
                // The engine's own count of relevant pages must be the truth's.
                anyhow::ensure!(
                    run.targets == f.relevant as u64,
                    "{} seed {seed}: the engine saved {} relevant pages, the ground truth counts {} among those fetched",
                    kind.name(),
                    run.targets,
                    f.relevant
                );
                errln!(
                    "  {:<9} look-ahead {:>8} seed {seed}: {} pages, {} relevant, precision@25 % {:.3}, {:.0} relevant/min ({:.1} s)",
                    kind.name(),
                    setting.look_ahead.map_or("default".to_string(), |n| n.to_string()),
                    f.fetched,
                    f.relevant,
                    f.share[1],
                    f.per_minute,
                    run.wall.as_secs_f64()
                );
                for (i, hit) in hits.iter().enumerate() {
                    csv.push_str(&format!(
                        "{},{},{seed},{},{}\n",
                        kind.name(),
                        setting.look_ahead.unwrap_or(0),
                        i + 1,
                        u8::from(*hit)
                    ));
                }
                figs.push(f);
            }
            rows.push(structured::summarise(kind, setting.describe(kind), &figs));
        }
    }
    let trace = args.out.join("structured.csv");
    std::fs::write(&trace, csv).with_context(|| format!("writing {}", trace.display()))?;
    let _ = server.shutdown().await;
    Ok(structured::markdown_table(web, &truth, &rows))
}

/// Peak resident set size of this process, from /proc (Linux).
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// User + system CPU time of this process.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// What a crawl left on disk: the state database, table by table, and the
/// saved targets (CPU mode; a crawl of a million pages bounds the database).
struct StoreFootprint {
    db_bytes: u64,
    tables: anyhow::Result<Vec<TableUsage>>,
    targets_bytes: u64,
}

impl StoreFootprint {
    fn measure(state_dir: &Path) -> StoreFootprint {
        let db_bytes = std::fs::metadata(state_dir.join("forager.redb"))
            .map(|m| m.len())
            .unwrap_or(0);
        // The engine is closed: the database can be opened again to read its tables.
        let tables = Store::open(state_dir, 1 << 20)
            .and_then(|s| s.usage())
            .with_context(|| format!("reading the tables of {}", state_dir.display()));
        StoreFootprint {
            db_bytes,
            tables,
            targets_bytes: folder_bytes(&state_dir.join("targets")),
        }
    }

    fn print(&self) {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        outln!("state database  {:.1} MiB", mib(self.db_bytes));
        match &self.tables {
            Ok(tables) => {
                for t in tables.iter().filter(|t| t.entries > 0) {
                    outln!(
                        "  {:<14}{:>10} entries {:>9.1} MiB ({:.1} stored, {:.1} tree, {:.1} unused)",
                        t.name,
                        t.entries,
                        mib(t.total_bytes()),
                        mib(t.stored_bytes),
                        mib(t.metadata_bytes),
                        mib(t.fragmented_bytes)
                    );
                }
            }
            Err(e) => errln!("{e:#}"),
        }
        outln!("targets saved   {:.1} MiB", mib(self.targets_bytes));
    }
}

/// Bytes of the files under `dir` (0 when it is missing).
fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

fn cpu_mode(
    args: &BenchArgs,
    site_arg: &BenchSite,
    kind: StrategyKind,
) -> anyhow::Result<ExitCode> {
    let spec = args
        .sites
        .first()
        .cloned()
        .unwrap_or_else(|| "synthetic:small".to_string());
    // The site runs in a child process so that this process's CPU time is the crawler's alone.
    let exe = std::env::current_exe().context("locating the forager binary")?;
    let server = daemon_load::SiteProcess::spawn(&exe, &spec, 0, std::process::Stdio::inherit())?;
    let addr = server.addr;
    std::fs::create_dir_all(&args.out)?;
    let state_root = args.out.join("state-cpu");
    let rt = super::crawl_runtime()?;
    let config = RunConfig {
        strategy: kind,
        seed: 1,
        max_requests: args.max_requests,
        early_stop: args.early_stop,
        neither_links: args.neither_links,
        // Only the counters are reported: the crawler's memory without the bench's.
        trace: false,
    };
    let state_dir = clear_state_dir(&state_root, site_arg, &config)?;
    let cpu_before = cpu_time();
    let started = Instant::now();
    let run = rt.block_on(run_once(addr, site_arg, config, &state_root));
    let wall = started.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_before);
    if let Err(e) = server.stop() {
        errln!("stopping the site server: {e:#}");
    }
    let run = run?;
    let store = StoreFootprint::measure(&state_dir);
    let c = &run.counters;
    let html_mib = (c.bytes - c.target_bytes) as f64 / (1 << 20) as f64;
    outln!("site            {}", site_arg.name);
    outln!("strategy        {}", kind.name());
    outln!(
        "requests        {} ({} pages, {} targets)",
        c.requests,
        c.pages,
        c.targets
    );
    outln!("wall time       {:.1} s", wall.as_secs_f64());
    outln!(
        "pages/s         {:.0}",
        c.pages as f64 / wall.as_secs_f64().max(1e-9)
    );
    outln!(
        "CPU             {:.2} s (user + sys, crawler process only)",
        cpu.as_secs_f64()
    );
    outln!(
        "CPU per page    {:.3} ms",
        cpu.as_secs_f64() * 1000.0 / c.pages.max(1) as f64
    );
    outln!("HTML            {html_mib:.1} MiB");
    outln!(
        "CPU per MiB     {:.2} ms of HTML",
        cpu.as_secs_f64() * 1000.0 / html_mib.max(1e-9)
    );
    if let Some(rss) = peak_rss_bytes() {
        outln!("peak RSS        {:.1} MiB", rss as f64 / (1 << 20) as f64);
    }
    store.print();
    if args.keep {
        outln!("state kept in   {}", state_dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&state_root);
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench --cpu --reference CMD`: forager's strategies and the reference
/// crawler, interleaved over `--runs` rounds on the same loopback site.
fn cpu_reference(
    args: &BenchArgs,
    site: &BenchSite,
    kinds: &[StrategyKind],
    command: &ReferenceCommand,
) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.runs >= 3,
        "--runs {}: side by side needs at least 3 rounds, for a median",
        args.runs
    );
    // The child serves the site from its spec; `site` is the same one, parsed here.
    let spec = match (args.sites.first(), &args.corpora) {
        (Some(spec), _) => spec.clone(),
        (None, None) => "synthetic:small".to_string(),
        (None, Some(_)) => bail!(
            "--cpu --reference serves one --site; give a corpus as --site dir:NAME=ROOT[:START], \
             not --corpora"
        ),
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let exe = std::env::current_exe().context("locating the forager binary")?;
    // The site runs in a child process so that this process's CPU time is forager's alone.
    let mut server =
        daemon_load::SiteProcess::spawn_with(&exe, &spec, 0, true, std::process::Stdio::inherit())?;
    let url = url::Url::parse(&format!(
        "http://127.0.0.1:{}{}",
        server.addr.port(),
        site.start_path
    ))
    .with_context(|| format!("the reference's start URL for {}", site.name))?;
    let line = command.command_line(&url)?;
    errln!("reference ({}): {line}", args.reference_name);
    let state_root = args.out.join("state-cpu");
    let log = args.out.join("reference.log");
    let rt = super::crawl_runtime()?;
    let mut forager_runs: Vec<Vec<RunSample>> = vec![Vec::new(); kinds.len()];
    let mut reference_runs = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        for round in 1..=args.runs {
            for (kind, runs) in kinds.iter().zip(forager_runs.iter_mut()) {
                let config = RunConfig {
                    strategy: *kind,
                    seed: 1,
                    max_requests: args.max_requests,
                    early_stop: args.early_stop,
                    neither_links: args.neither_links,
                    // Side by side with a crawler that keeps nothing.
                    trace: false,
                };
                // Each round keeps its own folder until the last: on ext4 without a
                // journal, an inode freed in the last minutes is skipped (at a cost)
                // when the next file is created, so one round's clean-up would slow
                // the next round's target files.
                let round_root = state_root.join(format!("round-{round}"));
                clear_state_dir(&round_root, site, &config)?;
                let before = cpu_time();
                rt.block_on(run_once(server.addr, site, config, &round_root))?;
                let sample = RunSample {
                    cpu: cpu_time().saturating_sub(before),
                    served: server.tally()?,
                };
                errln!(
                    "  round {round}: forager {:<8} {}",
                    kind.name(),
                    describe(&sample)
                );
                runs.push(sample);
            }
            let cpu = reference::run_reference(&line, &log, args.reference_timeout)?;
            let sample = RunSample {
                cpu,
                served: server.tally()?,
            };
            anyhow::ensure!(
                sample.served.requests > 0,
                "the reference exited 0 but made no request to {url}: does the command crawl \
                 the URL it is given? Its output is in {}",
                log.display()
            );
            errln!(
                "  round {round}: {:<16} {}",
                args.reference_name,
                describe(&sample)
            );
            reference_runs.push(sample);
        }
        Ok(())
    })();
    if let Err(e) = server.stop() {
        errln!("stopping the site server: {e:#}");
    }
    let _ = std::fs::remove_dir_all(&state_root);
    result?;
    let rows: Vec<reference::CrawlerSummary> = kinds
        .iter()
        .zip(&forager_runs)
        .map(|(kind, runs)| reference::summarise(&format!("forager {}", kind.name()), runs))
        .collect();
    let table = reference::markdown_table(
        &site.name,
        &rows,
        &reference::summarise(&args.reference_name, &reference_runs),
    );
    out!("{table}");
    let saved = args
        .out
        .join(format!("cpu-reference-{}.md", sanitize(&site.name)));
    std::fs::write(&saved, &table).with_context(|| format!("writing {}", saved.display()))?;
    errln!(
        "table saved to {}; the reference's output in {}",
        saved.display(),
        log.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// One run's figures, for the progress lines.
fn describe(run: &RunSample) -> String {
    format!(
        "{} requests, {:.1} MiB of HTML, CPU {:.2} s: {} ms per MiB, {} ms per request",
        run.served.requests,
        run.html_mib(),
        run.cpu.as_secs_f64(),
        run.ms_per_mib().map_or("—".into(), |v| format!("{v:.2}")),
        run.ms_per_request()
            .map_or("—".into(), |v| format!("{v:.3}")),
    )
}

/// The web of multi-host mode, when `--site web:…` asks for it (alone).
fn multihost_web(args: &BenchArgs) -> anyhow::Result<Option<Web>> {
    let mut webs = Vec::new();
    for s in &args.sites {
        if let Some(web) = multihost::parse_web(s)? {
            webs.push(web);
        }
    }
    let Some(&web) = webs.first() else {
        return Ok(None);
    };
    if args.sites.len() > 1 || args.corpora.is_some() || args.cpu {
        bail!(
            "--site web:… runs the multi-host measurement on its own: give no other --site, \
             --corpora or --cpu"
        );
    }
    Ok(Some(web))
}

/// The changing site, when `--site changing…` asks for it (alone).
fn changing_site(
    args: &BenchArgs,
) -> anyhow::Result<Option<forager_bench::sites::changing::ChangingParams>> {
    let mut found = Vec::new();
    for s in &args.sites {
        if let Some(p) = changing::parse_changing(s)? {
            found.push(p);
        }
    }
    let Some(&params) = found.first() else {
        return Ok(None);
    };
    if args.sites.len() > 1 || args.corpora.is_some() || args.cpu {
        bail!(
            "--site changing… runs the revisit measurement on its own: give no other --site, \
             --corpora or --cpu"
        );
    }
    Ok(Some(params))
}

/// `bench --site changing…`: one continuous job per revisit policy and seed.
fn changing(
    args: &BenchArgs,
    params: forager_bench::sites::changing::ChangingParams,
) -> anyhow::Result<ExitCode> {
    let policies = if args.policies.is_empty() {
        changing::Policy::ALL.to_vec()
    } else {
        args.policies
            .iter()
            .map(|n| {
                changing::Policy::parse(n.trim()).with_context(|| {
                    format!("unknown revisit policy {n:?} (learned, adaptive, fixed)")
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let options = changing::ChangingOptions {
        exe: std::env::current_exe().context("locating the forager binary")?,
        params,
        policies,
        seeds: args.seeds,
        days: args.days,
        budget_per_day: args.budget,
        real_day: args.day,
        work_dir: std::env::temp_dir().join(format!("forager-changing-{}", std::process::id())),
        keep: args.keep,
        out: args.out.clone(),
    };
    let rt = runtime()?;
    let text = rt.block_on(changing::run(&options, &mut |line| errln!("{line}")))?;
    out!("{text}");
    errln!(
        "report saved to {}; one row per run in {}",
        options.out.join("changing.md").display(),
        options.out.join("changing.csv").display()
    );
    if args.keep {
        errln!("work folder kept: {}", options.work_dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench --site web:…`: one job over a web of many hosts.
fn multihost(args: &BenchArgs, web: Web) -> anyhow::Result<ExitCode> {
    let options = multihost::WebOptions {
        exe: std::env::current_exe().context("locating the forager binary")?,
        web,
        strategies: strategies(&args.strategies)?,
        seeds: args.seeds,
        delay: args.delay.unwrap_or(DEFAULT_WEB_DELAY),
        max_in_flight: args.max_in_flight,
        max_requests: args.max_requests,
        warmup: args.warmup,
        duration: args.duration,
        work_dir: std::env::temp_dir().join(format!("forager-web-{}", std::process::id())),
        keep: args.keep,
        out: args.out.clone(),
    };
    let rt = runtime()?;
    let text = rt.block_on(multihost::run(&options, &mut |line| errln!("{line}")))?;
    out!("{text}");
    let saved = args.out.join(format!("web-{}.md", web.hosts));
    std::fs::write(&saved, &text).with_context(|| format!("writing {}", saved.display()))?;
    errln!(
        "report saved to {}; requests per second of each run in {}",
        saved.display(),
        args.out.display()
    );
    if args.keep {
        errln!("work folder kept: {}", options.work_dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench --cluster N`: N daemons on PostgreSQL against one (forager_bench::cluster).
fn cluster(args: &BenchArgs, nodes: usize) -> anyhow::Result<ExitCode> {
    let options = forager_bench::cluster::ClusterOptions {
        exe: std::env::current_exe().context("locating the forager binary")?,
        nodes,
        max_jobs: args.node_jobs,
        latency: args.latency,
        delay: args.delay.unwrap_or(Duration::from_millis(10)),
        lease: args.lease,
        checkpoint_interval: args.checkpoint_interval,
        warmup: args.warmup,
        duration: args.duration,
        rounds: args.rounds,
        work_dir: std::env::temp_dir().join(format!("forager-cluster-{}", std::process::id())),
        keep: args.keep,
    };
    let report = forager_bench::cluster::run(&options, |line| errln!("{line}"))?;
    let text = forager_bench::cluster::format_report(&report);
    out!("{text}");
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let saved = args.out.join(format!("cluster-{nodes}.txt"));
    std::fs::write(&saved, &text).with_context(|| format!("writing {}", saved.display()))?;
    errln!("report saved to {}", saved.display());
    if args.keep {
        errln!("work folder kept: {}", options.work_dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench --daemon-load`: the real daemon under `--jobs` site jobs.
fn daemon_load(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let site = args
        .sites
        .first()
        .cloned()
        .unwrap_or_else(|| "synthetic:medium".to_string());
    // Checked here, so a typo fails before two processes start.
    let start_path = parse_site(&site)?.start_path;
    let strategy = strategies(&args.strategies)?
        .first()
        .copied()
        .unwrap_or(StrategyKind::Sb);
    let work_dir = std::env::temp_dir().join(format!("forager-load-{}", std::process::id()));
    let options = daemon_load::LoadOptions {
        exe: std::env::current_exe().context("locating the forager binary")?,
        jobs: args.jobs,
        site,
        start_path,
        strategy: strategy.name().to_string(),
        delay: args.delay.unwrap_or(DEFAULT_WEB_DELAY),
        warmup: args.warmup,
        duration: args.duration,
        sample_every: args.sample,
        checkpoint_interval: args.checkpoint_interval,
        cache_size: args.cache_size,
        work_dir,
        keep: args.keep,
    };
    let report = daemon_load::run(&options, |line| errln!("{line}"))?;
    let text = daemon_load::format_report(&report);
    out!("{text}");
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let saved = args.out.join(format!("daemon-load-{}.txt", args.jobs));
    std::fs::write(&saved, &text).with_context(|| format!("writing {}", saved.display()))?;
    errln!("report saved to {}", saved.display());
    if args.keep {
        errln!("work folder kept: {}", options.work_dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Serve one site on 127.0.0.1 until stdin closes (the child of `bench --cpu`
/// and, under `--hosts N` names, of `bench --daemon-load`).
pub fn serve_site(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let site = parse_site(&args.site)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut sites: Vec<(String, Arc<dyn Site>)> = if args.hosts == 0 {
            vec![(site.host.clone(), site.site.clone())]
        } else {
            // One site object behind every name: N sites cost the memory of one.
            (1..=args.hosts)
                .map(|i| (daemon_load::site_host(i), site.site.clone()))
                .collect()
        };
        if args.loopback_name {
            sites.push(("127.0.0.1".to_string(), site.site.clone()));
        }
        let server = SiteServer::start(sites).await?;
        outln!("listening {}", server.addr());
        std::io::stdout().flush()?;
        // The parent's commands, one a line: `tally` answers one JSON line of
        // what was served since the last tally; anything else, or stdin
        // closing, stops.
        let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { break };
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        while let Some(line) = lines.recv().await {
            if line.trim() != "tally" {
                break;
            }
            // A response still being sent when the log is cleared would write
            // its bytes into a record of the next run: let the crawler's last
            // connections close first (they do as its process or client ends).
            let settle = Instant::now() + Duration::from_secs(5);
            while Instant::now() < settle
                && server
                    .hosts()
                    .iter()
                    .any(|h| server.host_load(h).in_flight > 0)
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let served = reference::tally(&server.log());
            server.clear_log();
            outln!("{}", serde_json::to_string(&served)?);
            std::io::stdout().flush()?;
        }
        let _ = server.shutdown().await;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `forager demo`: a synthetic site crawled by sb and bfs, side by side.
pub fn demo() -> anyhow::Result<ExitCode> {
    let site = parse_site("synthetic:small")?;
    let rt = runtime()?;
    let tmp = std::env::temp_dir().join(format!("forager-demo-{}", std::process::id()));
    let result = rt.block_on(async {
        let server = SiteServer::start(vec![(site.host.clone(), site.site.clone())]).await?;
        let truth = {
            let site = site.clone();
            tokio::task::spawn_blocking(move || site.ground_truth()).await??
        };
        outln!(
            "Serving a synthetic website on http://{}:{}/: {} distinct pages and {} data files{}.",
            site.host,
            server.port(),
            truth.pages,
            truth.targets.len(),
            if truth.trap_links > 0 {
                ", and an endless calendar (a crawler trap, not counted in the pages)"
            } else {
                ""
            }
        );
        let mut runs = Vec::new();
        for kind in [StrategyKind::Sb, StrategyKind::Bfs] {
            outln!("Crawling it with {} …", kind.name());
            let config = RunConfig {
                strategy: kind,
                seed: 1,
                max_requests: 0,
                early_stop: false,
                neither_links: NeitherLinks::Last,
                // The figures are read from the trace.
                trace: true,
            };
            server.clear_log();
            let run = run_once(server.addr(), &site, config, &tmp).await?;
            // Pages fetched inside the trap, which the site's page count leaves out.
            let trapped = server
                .log()
                .iter()
                .filter(|r| r.method == "GET" && site.site.is_trap(&r.path_and_query))
                .count();
            runs.push((report::figures(&run, &truth), run, trapped));
        }
        let _ = server.shutdown().await;
        anyhow::Ok((truth, runs))
    });
    let _ = std::fs::remove_dir_all(&tmp);
    let (truth, runs) = result?;
    outln!();
    outln!("{:<44} {:>12} {:>12}", "", "sb", "bfs");
    let row = |label: &str, f: &dyn Fn(&RunFigures, &RunResult, usize) -> String| {
        outln!(
            "{:<44} {:>12} {:>12}",
            label,
            f(&runs[0].0, &runs[0].1, runs[0].2),
            f(&runs[1].0, &runs[1].1, runs[1].2)
        );
    };
    let pct = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.1} %"));
    row("requests (GET + HEAD)", &|_, r, _| {
        r.counters.requests.to_string()
    });
    row("  of which HEAD", &|_, r, _| r.counters.heads.to_string());
    row("pages fetched", &|_, r, _| r.counters.pages.to_string());
    row("  of which in the calendar trap", &|_, _, t| t.to_string());
    row("targets harvested", &|_, r, _| {
        format!("{}/{}", r.counters.targets, truth.targets.len())
    });
    row("requests for 50 % of targets (% of site)", &|f, _, _| {
        pct(f.req_at[0])
    });
    row("requests for 90 % of targets (% of site)", &|f, _, _| {
        pct(f.req_at[2])
    });
    row("classifier online accuracy", &|f, _, _| {
        pct(f.accuracy.map(|a| a * 100.0))
    });
    row("link groups (actions)", &|_, r, _| {
        r.stats.actions.to_string()
    });
    outln!();
    outln!(
        "% of site: requests made until then, as a share of the site's {} pages + {} data files",
        truth.pages,
        truth.targets.len()
    );
    outln!(
        "({} URLs; 100 % = as many requests as the site has pages and files). Pages fetched",
        truth.reachable()
    );
    outln!("exceed the site's pages by the trap pages a crawler walks before its guard stops it.");
    if let (Some(sb), Some(bfs)) = (runs[0].0.req_at[2], runs[1].0.req_at[2]) {
        outln!();
        outln!(
            "sb needed {:.2}× the requests of bfs to reach 90 % of the targets.",
            sb / bfs
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--neither-links`: the names a job file's `budget.neither_links` takes.
fn parse_neither_links(s: &str) -> Result<NeitherLinks, String> {
    NeitherLinks::parse(s).ok_or_else(|| {
        let names: Vec<&str> = NeitherLinks::ALL.iter().map(|(n, _)| *n).collect();
        format!("expected one of: {} (got {s:?})", names.join(", "))
    })
}
