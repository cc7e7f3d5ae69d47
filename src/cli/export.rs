//! `forager export JOB --to DIR`: a job's harvest as files or WARC, with an index.
//!
//! Reads the job's `manifest.jsonl` and target files only (see
//! [`forager::output::export`]), so it runs while the daemon runs the job.

use anyhow::Context;
use clap::{Args, ValueEnum};
use forager::output::export::{self, ExportSpec, Layout};
use forager::output::warc::DEFAULT_MAX_SIZE;
use forager_core::config;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

#[derive(Clone, Copy, ValueEnum)]
enum LayoutArg {
    /// host/path/of/file.csv
    Url,
    /// file.csv, named as the URL names it
    Flat,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Job name.
    job: String,
    /// Destination folder (created if missing; nothing is written outside it).
    #[arg(long)]
    to: PathBuf,
    /// How files are laid out.
    #[arg(long, value_enum, default_value = "url")]
    layout: LayoutArg,
    /// Only targets fetched since: 2026-11-01T12:00:00Z, 2026-11-01, or a duration ago (7d).
    #[arg(long)]
    since: Option<String>,
    /// Write WARC 1.1 (response and metadata records rebuilt from the manifest) instead of files.
    #[arg(long)]
    warc: bool,
    /// WARC rotation size, e.g. "1 GiB".
    #[arg(long, value_parser = config::parse_size)]
    warc_max_size: Option<u64>,
    /// Where state lives (default: the daemon config's state_dir, else ./forager-state).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Daemon config to take state_dir from (default: /etc/forager/forager.toml when installed).
    #[arg(long)]
    config: Option<PathBuf>,
}

pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        config::is_valid_job_name(&args.job),
        "invalid job name {:?}",
        args.job
    );
    let state_dir = match args.state_dir {
        Some(d) => d,
        None => super::default_state_dir(args.config.as_deref())?,
    };
    let job_dir = state_dir.join("targets").join(&args.job);
    anyhow::ensure!(
        job_dir.join("manifest.jsonl").exists(),
        "no manifest for job {:?} in {} (give --state-dir)",
        args.job,
        job_dir.display()
    );
    let since = args
        .since
        .as_deref()
        .map(|s| export::parse_since(s, SystemTime::now()))
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("--since")?;
    let spec = ExportSpec {
        job_dir,
        job: args.job,
        to: args.to,
        layout: match args.layout {
            LayoutArg::Url => Layout::Url,
            LayoutArg::Flat => Layout::Flat,
        },
        since,
        warc: args.warc,
        warc_max_size: args.warc_max_size.unwrap_or(DEFAULT_MAX_SIZE).max(1),
    };
    let report = export::export(&spec)?;
    println!(
        "{}: {} exported, {} already there, {} older than --since, {} missing, {} unreadable manifest lines; index in {}",
        spec.to.display(),
        report.exported,
        report.unchanged,
        report.skipped_old,
        report.missing,
        report.bad_lines,
        spec.to.join(export::INDEX_CSV).display()
    );
    Ok(if report.missing > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
