//! `forager crawl JOB.toml`: one job in the foreground.

use super::progress::ProgressObserver;
use anyhow::Context;
use clap::Args;
use forager::daemon::signals;
use forager::engine::{Engine, EngineConfig, JobOutcome, Runner};
use forager::fetch::FetchConfig;
use forager_core::config;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Args)]
pub struct CrawlArgs {
    /// The job file (TOML, see config/jobs.d/).
    job: PathBuf,
    /// Where state and targets live (default: the daemon config's state_dir, else ./forager-state).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Daemon config to take state_dir, allow_private, resolve and [http] from.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Allow loopback and private destinations (local test sites).
    #[arg(long)]
    allow_private: bool,
    /// Map a host name to an address, e.g. `--resolve site.test=127.0.0.1:8080` (repeatable).
    #[arg(long, value_parser = parse_resolve)]
    resolve: Vec<(String, SocketAddr)>,
    /// Checkpoint interval.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    checkpoint_interval: Duration,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
}

fn parse_resolve(s: &str) -> Result<(String, SocketAddr), String> {
    let (host, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("expected HOST=IP:PORT, found {s:?}"))?;
    let addr: SocketAddr = addr
        .parse()
        .map_err(|e| format!("{addr:?} is not IP:PORT: {e}"))?;
    Ok((host.to_ascii_lowercase(), addr))
}

pub fn run(args: CrawlArgs) -> anyhow::Result<ExitCode> {
    let mut spec = config::load_job(&args.job)?;
    let daemon = match &args.config {
        Some(p) => Some(config::load_daemon(p)?),
        None => None,
    };
    if let Some(d) = &daemon {
        spec.http = spec.http.over(&d.http);
    }
    let state_dir = match (&args.state_dir, &daemon) {
        (Some(d), _) => d.clone(),
        (None, Some(d)) => d.state_dir.clone(),
        (None, None) => super::default_state_dir(None)?,
    };
    let mut fetch = FetchConfig {
        allow_private: args.allow_private || daemon.as_ref().is_some_and(|d| d.allow_private),
        ..FetchConfig::default()
    };
    if let Some(d) = &daemon {
        fetch
            .resolve
            .extend(d.resolve.iter().map(|(h, a)| (h.clone(), *a)));
    }
    for (host, addr) in &args.resolve {
        if !fetch.allow_private && forager::fetch::is_forbidden_ip(addr.ip()) {
            anyhow::bail!(
                "--resolve {host}={addr}: {} is a private or loopback address, which the SSRF guard refuses; add --allow-private",
                addr.ip()
            );
        }
    }
    fetch.resolve.extend(args.resolve.iter().cloned());
    let runtime = super::crawl_runtime()?;
    let outcome = runtime.block_on(async {
        let engine = Engine::open(EngineConfig {
            state_dir: state_dir.clone(),
            fetch,
            checkpoint_interval: args.checkpoint_interval,
            cache_bytes: 64 << 20,
        })?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut signals = signals::listen().context("installing signal handlers")?;
        tokio::spawn(async move {
            // The first SIGINT/SIGTERM (or a hang-up of the terminal) stops the
            // job at a safe point; a second stop signal exits at once.
            // The receiver lives on, so that the signal thread sees the second one.
            while signals.recv().await.is_some() {
                if !*stop_tx.borrow() {
                    errln!(
                        "forager: stopping after the requests in flight (Ctrl-C again to abort)"
                    );
                    let _ = stop_tx.send(true);
                }
            }
        });
        let mut progress =
            ProgressObserver::new(!args.no_progress, &spec.name, spec.budget.requests);
        let runner = Runner::new(&engine, &spec, &mut progress)?;
        let outcome = runner.run(stop_rx).await?;
        anyhow::Ok(outcome)
    })?;
    print_summary(
        &spec.name,
        spec.strategy.name(),
        spec.output.crawl_log,
        &state_dir,
        &outcome,
    );
    if let Some(why) = outcome.unreachable_because() {
        errln!(
            "forager: job {}: nothing could be fetched: {why}",
            spec.name
        );
        return Ok(ExitCode::FAILURE);
    }
    // An interrupted run is not judged: it resumes where it stopped.
    if outcome.stop.is_some() && !outcome.warnings().is_empty() {
        return Ok(ExitCode::from(EXIT_HARVESTED_NOTHING));
    }
    Ok(ExitCode::SUCCESS)
}

/// Exit code of a job that finished, but a seed answered 4xx/5xx or no target
/// was saved: a script must not take it for a harvest (docs/FAQ.md, "exit codes").
pub const EXIT_HARVESTED_NOTHING: u8 = 3;

fn print_summary(
    job: &str,
    strategy: &str,
    crawl_log: bool,
    state_dir: &std::path::Path,
    o: &JobOutcome,
) {
    let c = &o.counters;
    let stop = o
        .stop
        .map_or("interrupted (resume with the same command)", |r| r.as_str());
    outln!("job        {job} ({strategy})");
    outln!("stopped    {stop}");
    outln!(
        "requests   {} ({} GET, {} HEAD, {} redirects; {} robots.txt)",
        c.requests,
        c.requests - c.heads,
        c.heads,
        c.redirects,
        c.robots_fetches
    );
    outln!("pages      {}", c.pages);
    outln!(
        "targets    {} ({})",
        c.targets,
        bytesize::ByteSize::b(c.target_bytes)
    );
    outln!("bytes      {}", bytesize::ByteSize::b(c.bytes));
    outln!(
        "errors     {} HTTP, {} network",
        c.http_errors,
        c.fetch_errors
    );
    outln!(
        "cut        {} (bodies over max_body, pages whose links were cut: see the log)",
        c.truncated
    );
    outln!(
        "skipped    {} robots, {} out of scope, {} blocked, {} rejected, {} traps, {} dropped",
        c.robots_disallowed,
        c.out_of_scope,
        c.blocked,
        c.rejected_links,
        c.trap_links,
        c.dropped
    );
    // Counted per occurrence while crawl.log names each URL once: say so,
    // or 1916 "out of scope" against 341 log lines looks like a bug.
    outln!(
        "           (links counted each time a page has them; rejected = malformed, not http(s), \
         over max_url_len, repeated path segments, deeper than max_depth)"
    );
    if crawl_log {
        outln!(
            "           every request and every link not followed, with why: {}",
            state_dir
                .join("targets")
                .join(job)
                .join(forager::output::crawl_log::LOG_NAME)
                .display()
        );
    }
    if o.stats.capped_paths > 0 {
        outln!(
            "learner    {} tag paths placed past its caps (see the log)",
            o.stats.capped_paths
        );
    }
    if let Some(acc) = o.stats.classifier_accuracy() {
        outln!(
            "classifier {:.1} % online accuracy ({} predictions), {} actions",
            acc * 100.0,
            o.stats.classifier_predictions,
            o.stats.actions
        );
    }
    outln!("frontier   {} links left", o.frontier_left);
    outln!("duration   {:.1} s", o.duration.as_secs_f64());
    outln!(
        "output     {}",
        state_dir.join("targets").join(job).display()
    );
    for warning in o.warnings() {
        outln!("warning    {warning}");
    }
}
