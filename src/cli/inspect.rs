//! `forager check`, `forager explain`, `forager purge`: look at files and stored state.

use crate::config;
use crate::store::Store;
use crate::strategy::{StrategyKind, StrategyStats};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Validate files; one line per problem (every problem of a file, not only
/// its first), exit 1 when any file is invalid.
pub fn check(files: &[PathBuf], daemon: bool) -> anyhow::Result<ExitCode> {
    let mut ok = true;
    for f in files {
        let errors = match config::read_config_file(f) {
            Err(e) => vec![e],
            Ok(text) if daemon => match config::parse_daemon_all(&text, f) {
                Ok(d) => daemon_folders(&d, &text, f),
                Err(errors) => errors,
            },
            Ok(text) => config::parse_job_all(&text, f).err().unwrap_or_default(),
        };
        if errors.is_empty() {
            outln!("{}: ok", f.display());
        } else {
            ok = false;
            for e in errors {
                outln!("{e}");
            }
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What the daemon checks at start-up beyond the file itself: its jobs
/// folder must exist (it refuses to start otherwise), so `check --daemon`
/// refuses it too.
fn daemon_folders(d: &config::DaemonConfig, text: &str, file: &Path) -> Vec<config::ConfigError> {
    if d.jobs_dir.is_dir() {
        return Vec::new();
    }
    // The line of the `jobs_dir` key, when the file sets it (else the default is missing).
    let line = text
        .lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix("jobs_dir")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1);
    vec![config::ConfigError::new(
        file,
        line,
        "jobs_dir",
        format!(
            "{} is not a folder (the daemon would refuse to start; create it or fix jobs_dir)",
            d.jobs_dir.display()
        ),
    )]
}

#[derive(Args)]
pub struct ExplainArgs {
    /// Job name.
    job: String,
    /// Where state lives (default: the daemon config's state_dir, else ./forager-state).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Daemon config to take state_dir and the admin API address from (default: /etc/forager/forager.toml if present).
    #[arg(long)]
    config: Option<PathBuf>,
    /// How many actions to show.
    #[arg(long, default_value_t = 15)]
    top: usize,
}

#[derive(Args)]
pub struct PurgeArgs {
    /// Job name.
    job: String,
    /// Where state lives (default: the daemon config's state_dir, else ./forager-state).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Daemon config to take state_dir and the admin API address from (default: /etc/forager/forager.toml if present).
    #[arg(long)]
    config: Option<PathBuf>,
}

fn open_store(state_dir: Option<PathBuf>, config: Option<&Path>) -> anyhow::Result<Store> {
    let dir = match state_dir {
        Some(d) => d,
        None => super::default_state_dir(config)?,
    };
    anyhow::ensure!(
        dir.join("forager.redb").exists(),
        "no state database in {} (give --state-dir)",
        dir.display()
    );
    Ok(Store::open(&dir, 16 << 20)?)
}

pub fn explain(args: ExplainArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(args.state_dir, args.config.as_deref())?;
    let record = store
        .job_record(&args.job)?
        .with_context(|| format!("no stored state for job {:?}", args.job))?;
    let kind = StrategyKind::parse(&record.strategy)
        .with_context(|| format!("unknown stored strategy {:?}", record.strategy))?;
    let mut strategy = kind.build(record.seed);
    strategy
        .restore(&record.strategy_state)
        .map_err(|e| anyhow::anyhow!("stored learner state: {e}"))?;
    let loaded = store.load_job(&args.job)?;
    for (id, key) in loaded.frontier {
        strategy.push(id, key);
    }
    let stats = strategy.stats();
    print_explain(
        &args.job,
        &record.strategy,
        &record.counters,
        &stats,
        args.top,
    );
    Ok(ExitCode::SUCCESS)
}

fn print_explain(
    job: &str,
    strategy: &str,
    c: &crate::store::JobCounters,
    s: &StrategyStats,
    top: usize,
) {
    outln!(
        "job {job} ({strategy}): {} requests, {} pages, {} targets",
        c.requests,
        c.pages,
        c.targets
    );
    match s.classifier_accuracy() {
        Some(a) => outln!(
            "URL classifier: {:.1} % online accuracy over {} predictions",
            a * 100.0,
            s.classifier_predictions
        ),
        None => outln!("URL classifier: no predictions yet"),
    }
    if s.top_actions.is_empty() {
        outln!("no actions (strategy {strategy} does not group links)");
        return;
    }
    outln!("{} actions; best first:", s.actions);
    outln!(
        "{:>6} {:>8} {:>6} {:>8} {:>7}  tag path",
        "action",
        "links",
        "picks",
        "reward",
        "left"
    );
    for a in s.top_actions.iter().take(top) {
        outln!(
            "{:>6} {:>8} {:>6} {:>8.3} {:>7}  {}",
            a.id,
            a.links_seen,
            a.selections,
            a.mean_reward,
            a.links_left,
            a.tag_path
        );
        // Inside a group the member bandit may prefer a path other than the founding one.
        if let Some(m) = &a.best_member {
            outln!(
                "{:>6} {:>8} {:>6} {:>8.3} {:>7}  best of its {} paths: {}",
                "",
                "",
                m.selections,
                m.mean_reward,
                m.links_left,
                a.paths,
                m.tag_path
            );
        }
    }
}

pub fn purge(args: PurgeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match open_store(args.state_dir, args.config.as_deref()) {
        Ok(store) => runtime.block_on(store.purge(&args.job))?,
        // A running daemon holds the database: ask it instead.
        Err(local) => {
            let admin = crate::daemon::admin_address(args.config.as_deref())?;
            runtime
                .block_on(crate::daemon::purge_via(admin, &args.job))
                .with_context(|| format!("{local:#}; and the daemon at {admin} did not purge"))?;
        }
    }
    outln!("purged stored state of job {}", args.job);
    Ok(ExitCode::SUCCESS)
}

/// `forager status`: the daemon's jobs as a table (or JSON).
pub fn status(
    admin: Option<std::net::SocketAddr>,
    config: Option<&Path>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let admin = match admin {
        Some(a) => a,
        None => crate::daemon::admin_address(config)?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(crate::daemon::status(admin))?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", crate::daemon::format_status(&report));
    }
    Ok(ExitCode::SUCCESS)
}
