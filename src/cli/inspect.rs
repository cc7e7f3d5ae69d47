//! `forager check`, `forager explain`, `forager purge`, `forager repair`: look at files and stored state;
//! `forager pause`, `resume`, `rerun`: drive a running daemon's jobs.

use anyhow::Context;
use clap::Args;
use forager::store::Store;
use forager_core::config;
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
                Ok(d) => {
                    let mut errors = daemon_folders(&d, &text, f);
                    errors.extend(cluster_database(&d, &text, f));
                    errors
                }
                Err(errors) => errors,
            },
            Ok(text) => match config::parse_job_all(&text, f) {
                Ok(job) => render_browser(&job, &text, f),
                Err(errors) => errors,
            },
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

/// A job that renders pages needs Chromium where it runs: `check` looks it
/// up as the engine would, so a missing browser is said before the job starts.
fn render_browser(job: &config::JobSpec, text: &str, file: &Path) -> Vec<config::ConfigError> {
    if !job.render.enabled() {
        return Vec::new();
    }
    let Err(e) = forager::render::find_chromium(&job.render) else {
        return Vec::new();
    };
    let line = text
        .lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with("[render]")
                || l.strip_prefix("render")
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1);
    vec![config::ConfigError::new(
        file,
        line,
        "render",
        format!(
            "render = \"{}\" needs headless Chromium: {e}",
            job.render.mode.name()
        ),
    )]
}

/// With `[cluster]`: whether the database answers (connect, then check or
/// create the schema, as a node's start would), said on a line of its own;
/// then a reminder of what a cluster needs of the jobs' target folders.
fn cluster_database(d: &config::DaemonConfig, text: &str, file: &Path) -> Vec<config::ConfigError> {
    let Some(cluster) = &d.cluster else {
        return Vec::new();
    };
    let line = line_of_key(text, "database");
    let mut errors = Vec::new();
    let probe = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| {
            rt.block_on(forager_cluster::Cluster::connect(cluster))
                .map_err(|e| e.to_string())
        });
    match probe {
        Ok((c, probe)) => {
            let schema = if probe.schema.from == probe.schema.version {
                format!("schema version {}", probe.schema.version)
            } else {
                format!(
                    "schema version {} (created from {})",
                    probe.schema.version, probe.schema.from
                )
            };
            outln!(
                "{}: cluster database answers: PostgreSQL {}, {schema}, this node is {:?}",
                file.display(),
                probe.server_version,
                c.node()
            );
            outln!(
                "{}: in a cluster, each job's targets folder must be one every node mounts (NFS, CephFS…): \
                 a job taken over writes where its last node wrote",
                file.display()
            );
        }
        Err(why) => errors.push(config::ConfigError::new(
            file,
            line,
            "cluster.database",
            why,
        )),
    }
    errors
}

/// The line (1-based) of the first line that starts with `key` (a key and its `=`, or a table header).
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| key.starts_with('[') || rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

/// What the daemon checks at start-up beyond the file itself: its jobs
/// folder must exist (it refuses to start otherwise), so `check --daemon`
/// refuses it too.
fn daemon_folders(d: &config::DaemonConfig, text: &str, file: &Path) -> Vec<config::ConfigError> {
    if d.jobs_dir.is_dir() {
        return Vec::new();
    }
    // The line of the `jobs_dir` key, when the file sets it (else the default is missing).
    let line = line_of_key(text, "jobs_dir");
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

#[derive(Args)]
pub struct SubmitArgs {
    /// The job file.
    job: PathBuf,
    /// The daemon config whose [cluster] names the database (default: /etc/forager/forager.toml).
    #[arg(long, default_value = forager::daemon::INSTALLED_CONFIG)]
    config: PathBuf,
}

/// `forager submit JOB.toml`: check the job file, then register it in the
/// cluster's database as a node's watched folder would (once by name and
/// content: submitting the same file again changes nothing).
pub fn submit(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let daemon = config::load_daemon(&args.config).map_err(anyhow::Error::new)?;
    let Some(cluster) = &daemon.cluster else {
        anyhow::bail!(
            "{}: no [cluster] section: `forager submit` registers jobs in a cluster's database; \
             a single daemon runs the job files of its jobs folder",
            args.config.display()
        );
    };
    let text = config::read_config_file(&args.job).map_err(anyhow::Error::new)?;
    let spec = config::parse_job(&text, &args.job).map_err(anyhow::Error::new)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let outcome = rt.block_on(async {
        let (c, _) = forager_cluster::Cluster::connect(cluster).await?;
        c.register(&spec.name, &text).await
    });
    let outcome = outcome.with_context(|| format!("submitting job {:?}", spec.name))?;
    let what = match outcome {
        forager_cluster::Registration::New => "registered",
        forager_cluster::Registration::Updated => "registered with its new content",
        forager_cluster::Registration::Unchanged => "already registered with this content",
    };
    outln!("job {:?} {what}", spec.name);
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct DriveArgs {
    /// Job name.
    job: String,
    /// The daemon's state folder, where its admin token is (default: the daemon config's state_dir).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Daemon config to take state_dir and the admin API address from (default: /etc/forager/forager.toml if present).
    #[arg(long)]
    config: Option<PathBuf>,
}

/// `forager pause|resume|rerun JOB`: through the running daemon's admin API,
/// with the token it wrote to its state folder (so only its user and root may).
pub fn drive(args: DriveArgs, action: forager::daemon::DriveAction) -> anyhow::Result<ExitCode> {
    let dir = match args.state_dir {
        Some(d) => d,
        None => super::default_state_dir(args.config.as_deref())?,
    };
    let admin = forager::daemon::admin_address(args.config.as_deref())?;
    let reply = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(forager::daemon::drive_via(admin, &dir, &args.job, action))
        .with_context(|| {
            format!(
                "{} {}: the daemon did not do it (`forager {}` drives a running daemon)",
                action.as_str(),
                args.job,
                action.as_str()
            )
        })?;
    outln!("{}", reply.message);
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct DrainArgs {
    /// Take jobs again (end a drain).
    #[arg(long)]
    cancel: bool,
    /// Wait at most this many seconds for every lease to be released (0: do not wait).
    #[arg(long, default_value_t = 120)]
    wait: u64,
    /// The daemon's state folder, where its admin token is (default: the daemon config's state_dir).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Daemon config to take state_dir and the admin API address from (default: /etc/forager/forager.toml if present).
    #[arg(long)]
    config: Option<PathBuf>,
}

/// `forager drain [--cancel]`: through the running daemon's admin API (its
/// token, as `pause`); then wait until the cluster database shows no job
/// held by this node, so that stopping it afterwards costs nothing.
pub fn drain(args: DrainArgs) -> anyhow::Result<ExitCode> {
    let dir = match args.state_dir {
        Some(d) => d,
        None => super::default_state_dir(args.config.as_deref())?,
    };
    let admin = forager::daemon::admin_address(args.config.as_deref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let what = if args.cancel {
        "drain --cancel"
    } else {
        "drain"
    };
    let reply = rt
        .block_on(forager::daemon::drain_via(admin, &dir, !args.cancel))
        .with_context(|| format!("{what}: the daemon did not do it"))?;
    outln!("{}", reply.message);
    if args.cancel || args.wait == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(args.wait);
    loop {
        let report = rt.block_on(forager::daemon::status(admin))?;
        let still = match &report.cluster {
            Some(c) if c.error.is_none() => c
                .jobs
                .iter()
                .filter(|j| j.node.as_deref() == Some(c.node.as_str()))
                .count(),
            Some(c) => anyhow::bail!(
                "drain: cannot see the leases: {}",
                c.error.as_deref().unwrap_or("")
            ),
            None => anyhow::bail!("drain: the daemon at {admin} is not a node of a cluster"),
        };
        if still == 0 {
            outln!("drained: this node holds no job lease");
            return Ok(ExitCode::SUCCESS);
        }
        if std::time::Instant::now() >= deadline {
            anyhow::bail!(
                "drain: {still} jobs still leased by this node after {} s (their last checkpoints may be slow; `forager status` shows them)",
                args.wait
            );
        }
        // How often the daemon is asked; it orders nothing.
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
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

/// `forager explain`: from the store, or through the running daemon that holds it.
pub fn explain(args: ExplainArgs) -> anyhow::Result<ExitCode> {
    let dir = match args.state_dir {
        Some(d) => d,
        None => super::default_state_dir(args.config.as_deref())?,
    };
    let text = match open_store(Some(dir), None) {
        Ok(store) => forager::engine::explain(&store, &args.job, args.top)?
            .with_context(|| format!("no stored state for job {:?}", args.job))?,
        Err(local) if daemon_may_answer(&local) => {
            let admin = forager::daemon::admin_address(args.config.as_deref())?;
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(forager::daemon::explain_of(admin, &args.job, args.top))
                .with_context(|| format!("{local:#}; and asking the daemon at {admin} failed"))?
        }
        Err(local) => return Err(local),
    };
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// Whether opening the store failed because another process holds it.
fn is_locked(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<forager::store::StoreError>(),
        Some(forager::store::StoreError::Locked { .. })
    )
}

/// Whether a read-only question should go to the daemon: it holds the store,
/// or this user may read the state folder (group forager) but not open the
/// database, which redb opens for writing.
fn daemon_may_answer(e: &anyhow::Error) -> bool {
    use forager::store::StoreError;
    is_locked(e)
        || matches!(
            e.downcast_ref::<StoreError>(),
            Some(StoreError::Open {
                cause: redb::DatabaseError::Storage(redb::StorageError::Io(io)),
                ..
            }) if io.kind() == std::io::ErrorKind::PermissionDenied
        )
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
            if store.job_record(&args.job)?.is_none() {
                let names = store.job_names()?;
                anyhow::bail!(
                    "no stored state for job {:?} in {} (jobs with state: {})",
                    args.job,
                    dir.display(),
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                );
            }
            runtime.block_on(store.purge(&args.job))?;
            if let Some(aside) = forager::output::set_aside_manifest(&dir, &args.job)
                .with_context(|| format!("moving job {}'s manifest.jsonl aside", args.job))?
            {
                outln!("previous manifest moved to {}", aside.display());
            }
            outln!("purged stored state of job {}", args.job);
        }
        // A running daemon holds the database: ask it instead (with the token it wrote there).
        Err(local) if is_locked(&local) => {
            let admin = forager::daemon::admin_address(args.config.as_deref())?;
            let reply = runtime
                .block_on(forager::daemon::purge_via(admin, &dir, &args.job))
                .with_context(|| format!("{local:#}; and the daemon at {admin} did not purge"))?;
            outln!("purged stored state of job {}", args.job);
            if reply.restarts {
                outln!(
                    "its job file is still in the daemon's jobs folder: the job starts again from its seeds (remove the file to stop it)"
                );
            }
        }
        Err(local) => return Err(local),
    }
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
    let report = forager::store::repair::repair(&dir, 16 << 20)
        .with_context(|| format!("repairing the state database in {}", dir.display()))?;
    println!("damaged database kept as {}", report.moved_to.display());
    if let Some(added) = report.padded_bytes {
        println!(
            "it is {added} bytes shorter than its header says (cut short?): read from a copy padded with zeros"
        );
    }
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
    println!(
        "daemon notes (pauses, dashboard history): {} copied{}",
        report.notes_rows,
        if report.notes_incomplete {
            ", the rest unreadable"
        } else {
            ""
        }
    );
    // A lost job's manifest would be followed by its fresh run's rows for the same URLs.
    let store = Store::open(&dir, 16 << 20)?;
    for job in forager::output::jobs_with_manifests(&dir)? {
        if store.job_record(&job)?.is_none() {
            if let Some(aside) = forager::output::set_aside_manifest(&dir, &job)? {
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
        None => forager::daemon::admin_address(config)?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(forager::daemon::status(admin))?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", forager::daemon::format_status(&report));
    }
    Ok(ExitCode::SUCCESS)
}
