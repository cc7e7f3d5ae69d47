//! Command-line interface: one submodule per command.
//!
//! Owns: argument parsing, logging set-up, human-readable output and exit
//! codes. Must not own crawl logic: every command calls into the library.

/// `println!` for command output: a closed stdout (`forager crawl | head`,
/// or `| tee` killed by the same Ctrl-C) ends the output quietly instead of
/// panicking with exit code 101; the crawl's state is already saved by then.
macro_rules! outln {
    () => {
        $crate::cli::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))
    };
}

/// `print!` for command output, with [`outln!`]'s handling of a closed stdout.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::text(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics: stderr may be a pipe whose reader is gone.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::out::error_line(format_args!($($arg)*))
    };
}

// The `demo` and `bench` commands and the test webs they serve come with
// the `bench` feature (on by default).
#[cfg(feature = "bench")]
mod bench;
mod crawl;
mod export;
mod inspect;
pub(crate) mod out;
mod progress;

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "forager",
    version,
    about = "A focused harvesting crawler: learns which links lead to data files and fetches those first"
)]
struct Cli {
    /// Log filter (tracing syntax, e.g. `info`, `forager=debug`); RUST_LOG works too.
    #[arg(long, global = true)]
    log: Option<String>,
    /// Log lines as JSON.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one job in the foreground until it finishes (frontier empty, budget, early stop) or Ctrl-C.
    #[command(after_help = "Exit codes:\n  \
        0  the job finished and saved targets, or it was stopped by Ctrl-C/SIGTERM (run it again to resume)\n  \
        1  an error, or the job stopped `unreachable`: nothing could be fetched\n  \
        2  bad command-line arguments\n  \
        3  the job finished, but a seed answered 4xx/5xx or no target was saved (see the summary's `warning` lines)")]
    Crawl(crawl::CrawlArgs),
    /// Validate job files (or a daemon config with --daemon); prints FILE:LINE: FIELD: REASON on errors.
    Check {
        /// The files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The files are daemon configs, not job files.
        #[arg(long)]
        daemon: bool,
    },
    /// Show why a job crawls where it does: its top actions and the classifier's accuracy.
    Explain(inspect::ExplainArgs),
    /// Copy a job's harvest to a folder (URL paths or flat, or WARC) with a CSV/JSON index; safe while the daemon runs.
    Export(export::ExportArgs),
    /// Delete everything stored for a job (frontier, learned state, manifest rows; target files stay).
    Purge(inspect::PurgeArgs),
    /// Register a job file in the cluster's database ([cluster] of the daemon config): one node of the cluster runs it.
    Submit(inspect::SubmitArgs),
    /// Pause a daemon's job: it writes a checkpoint and stops fetching until resumed (also across daemon restarts).
    Pause(inspect::DriveArgs),
    /// Resume a paused daemon job exactly where it stopped.
    Resume(inspect::DriveArgs),
    /// Run a finished, stopped or paused daemon job again from its seeds, as a fresh harvest (its job file must be in the jobs folder).
    Rerun(inspect::DriveArgs),
    /// Rebuild a damaged state database: move it aside and copy every job that still reads into a new one.
    Repair(inspect::RepairArgs),
    /// Run the harvesting service: watch the jobs folder, run jobs, serve the admin API.
    Daemon {
        /// The daemon config (see config/forager.toml).
        #[arg(long, default_value = forager::daemon::INSTALLED_CONFIG)]
        config: PathBuf,
    },
    /// Show the running daemon's jobs (from its admin API).
    Status {
        /// Admin API address (default: the config's admin_listen).
        #[arg(long)]
        admin: Option<std::net::SocketAddr>,
        /// The daemon config to read admin_listen from.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure harvest efficiency on loopback sites: strategies × sites × seeds.
    // Boxed: the bench's many options would make every command as large.
    #[cfg(feature = "bench")]
    Bench(Box<bench::BenchArgs>),
    /// Serve a synthetic site on loopback and crawl it with sb and bfs, side by side.
    #[cfg(feature = "bench")]
    Demo,
    /// Serve one bench site on 127.0.0.1 until stdin closes (used by `bench --cpu`).
    #[command(hide = true)]
    #[cfg(feature = "bench")]
    ServeSite(bench::ServeArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    forager::panics::install_quiet_hook();
    let cli = Cli::parse();
    match &cli.command {
        // The daemon's config says its log format and level, and SIGHUP may change the level.
        Command::Daemon { config } => {
            forager::daemon::logging::init(cli.log.as_deref(), cli.log_json, config)
        }
        // A foreground command shows a progress bar and warnings.
        _ => init_logging(cli.log.as_deref(), "warn", cli.log_json),
    }
    let result = match cli.command {
        Command::Crawl(args) => crawl::run(args),
        Command::Check { files, daemon } => inspect::check(&files, daemon),
        Command::Explain(args) => inspect::explain(args),
        Command::Export(args) => export::run(args),
        Command::Purge(args) => inspect::purge(args),
        Command::Submit(args) => inspect::submit(args),
        Command::Pause(args) => inspect::drive(args, forager::daemon::DriveAction::Pause),
        Command::Resume(args) => inspect::drive(args, forager::daemon::DriveAction::Resume),
        Command::Rerun(args) => inspect::drive(args, forager::daemon::DriveAction::Rerun),
        Command::Repair(args) => inspect::repair(args),
        Command::Daemon { config } => forager::daemon::main(&config).map(|()| ExitCode::SUCCESS),
        Command::Status {
            admin,
            config,
            json,
        } => inspect::status(admin, config.as_deref(), json),
        #[cfg(feature = "bench")]
        Command::Bench(args) => bench::bench(*args),
        #[cfg(feature = "bench")]
        Command::Demo => bench::demo(),
        #[cfg(feature = "bench")]
        Command::ServeSite(args) => bench::serve_site(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            errln!("forager: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(filter: Option<&str>, default_level: &str, json: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = match filter {
        Some(f) => EnvFilter::new(f),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level)),
    };
    // Colour codes only for a person at a terminal, not in `2> file` or a pipe.
    let builder = tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .with_writer(progress::LogWriter::default);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// Where state lives when the command line does not say: the daemon config's
/// `state_dir` when one is given or installed, else `./forager-state`.
pub(crate) fn default_state_dir(config: Option<&std::path::Path>) -> anyhow::Result<PathBuf> {
    let installed = std::path::Path::new("/etc/forager/forager.toml");
    let path = match config {
        Some(p) => Some(p.to_path_buf()),
        None if installed.exists() => Some(installed.to_path_buf()),
        None => None,
    };
    match path {
        Some(p) => Ok(forager_core::config::load_daemon(&p)?.state_dir),
        None => Ok(PathBuf::from("forager-state")),
    }
}

/// The runtime of a crawl run in the foreground (`forager crawl`, `bench
/// --cpu`): one thread drives the job and its connections, and link
/// extraction goes to the blocking pool. On a multi-threaded runtime the
/// runner sat on the main thread and each connection on a worker, so every
/// request crossed threads several times. One thread costs 16 % less CPU per
/// MiB of HTML on sklearn, for the same wall time (docs/bench/2026-11-history.md, "One thread per
/// foreground crawl").
fn crawl_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
