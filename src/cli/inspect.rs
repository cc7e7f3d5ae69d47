//! `forager check`, `forager explain`, `forager purge`, `forager repair`: look at files and stored state.

use crate::config;
use crate::store::Store;
use crate::strategy::{StrategyKind, StrategyStats};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Validate files; one line per problem, exit 1 when any file is invalid.
pub fn check(files: &[PathBuf], daemon: bool) -> anyhow::Result<ExitCode> {
    let mut ok = true;
    for f in files {
        let result = if daemon {
            config::load_daemon(f).map(|_| ())
        } else {
            config::load_job(f).map(|_| ())
        };
        match result {
            Ok(()) => println!("{}: ok", f.display()),
            Err(e) => {
                ok = false;
                println!("{e}");
            }
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[derive(Args)]
pub struct ExplainArgs {
    /// Job name.
    job: String,
    #[arg(long)]
    state_dir: Option<PathBuf>,
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
    #[arg(long)]
    state_dir: Option<PathBuf>,
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
    println!(
        "job {job} ({strategy}): {} requests, {} pages, {} targets",
        c.requests, c.pages, c.targets
    );
    match s.classifier_accuracy() {
        Some(a) => println!(
            "URL classifier: {:.1} % online accuracy over {} predictions",
            a * 100.0,
            s.classifier_predictions
        ),
        None => println!("URL classifier: no predictions yet"),
    }
    if s.top_actions.is_empty() {
        println!("no actions (strategy {strategy} does not group links)");
        return;
    }
    println!("{} actions; best first:", s.actions);
    println!(
        "{:>6} {:>8} {:>6} {:>8} {:>7}  tag path",
        "action", "links", "picks", "reward", "left"
    );
    for a in s.top_actions.iter().take(top) {
        println!(
            "{:>6} {:>8} {:>6} {:>8.3} {:>7}  {}",
            a.id, a.links_seen, a.selections, a.mean_reward, a.links_left, a.tag_path
        );
        // Inside a group the member bandit may prefer a path other than the founding one.
        if let Some(m) = &a.best_member {
            println!(
                "{:>6} {:>8} {:>6} {:>8.3} {:>7}  best of its {} paths: {}",
                "", "", m.selections, m.mean_reward, m.links_left, a.paths, m.tag_path
            );
        }
    }
}

pub fn purge(args: PurgeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dir = match args.state_dir {
        Some(d) => d,
        None => super::default_state_dir(args.config.as_deref())?,
    };
    match open_store(Some(dir.clone()), None) {
        Ok(store) => {
            runtime.block_on(store.purge(&args.job))?;
            if let Some(aside) = crate::output::set_aside_manifest(&dir, &args.job)
                .with_context(|| format!("moving job {}'s manifest.jsonl aside", args.job))?
            {
                println!("previous manifest moved to {}", aside.display());
            }
        }
        // A running daemon holds the database: ask it instead (with the token it wrote there).
        Err(local) => {
            let admin = crate::daemon::admin_address(args.config.as_deref())?;
            runtime
                .block_on(crate::daemon::purge_via(admin, &dir, &args.job))
                .with_context(|| format!("{local:#}; and the daemon at {admin} did not purge"))?;
        }
    }
    println!("purged stored state of job {}", args.job);
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct RepairArgs {
    /// The state folder (holding forager.redb).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// The daemon config to take state_dir from.
    #[arg(long)]
    config: Option<PathBuf>,
}

/// `forager repair`: copy what can be read of a damaged store into a new one.
pub fn repair(args: RepairArgs) -> anyhow::Result<ExitCode> {
    let dir = match args.state_dir {
        Some(d) => d,
        None => super::default_state_dir(args.config.as_deref())?,
    };
    let report = crate::store::repair::repair(&dir, 16 << 20)
        .with_context(|| format!("repairing the state database in {}", dir.display()))?;
    println!("damaged database kept as {}", report.moved_to.display());
    if let Some(why) = &report.unopenable {
        println!("it could not be opened ({why}): nothing could be copied");
    }
    for job in &report.kept {
        println!("job {job}: copied");
    }
    for (job, why) in &report.lost {
        println!("job {job}: lost ({why}); it starts afresh");
    }
    println!(
        "shared rows (MIME filters, robots.txt copies): {} copied{}",
        report.shared_rows,
        if report.shared_incomplete {
            ", the rest unreadable"
        } else {
            ""
        }
    );
    // A lost job's manifest would be followed by its fresh run's rows for the same URLs.
    let store = Store::open(&dir, 16 << 20)?;
    for job in crate::output::jobs_with_manifests(&dir)? {
        if store.job_record(&job)?.is_none() {
            if let Some(aside) = crate::output::set_aside_manifest(&dir, &job)? {
                println!("job {job}: manifest moved to {}", aside.display());
            }
        }
    }
    Ok(if report.lost.is_empty() && report.unopenable.is_none() {
        ExitCode::SUCCESS
    } else {
        // Repaired, but something was lost: say so to scripts.
        ExitCode::from(2)
    })
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
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        crate::daemon::print_status(&report);
    }
    Ok(ExitCode::SUCCESS)
}
