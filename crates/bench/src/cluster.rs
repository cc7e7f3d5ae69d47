//! `forager bench --cluster N`: what a cluster of
//! daemons on PostgreSQL buys and costs, on a latency-bound loopback web.
//!
//! The web: one site under one host name per job (`site-0001.test` …),
//! served by this process on 127.0.0.1; every response is delayed
//! server-side by `latency`, so a job's rate is bound by the latency, not
//! by the CPU: a node's throughput is its `max_jobs` jobs in flight, and N
//! nodes should reach N times one node's. Each page links to the next and
//! to one CSV target, without end.
//!
//! Three phases, each with a PostgreSQL server of its own started here
//! (initdb into the work folder, `pg_ctl start` on loopback; as root the
//! server runs as `postgres`), and daemons as child processes, so that each
//! daemon's CPU time is its own (`/proc/PID/stat`):
//!
//! 1. **single**: one daemon without `[cluster]`, `max_jobs` jobs;
//! 2. **one node**: the same with `[cluster]`: the CPU per request and the
//!    database round trips per request the cluster adds (its `/metrics`
//!    database-latency count over the requests). Phases 1 and 2 are run
//!    `rounds` times, alternating (AB, BA, AB…), and the CPU added is the
//!    median of the rounds' differences, with their spread: on a shared
//!    machine one window each says more about the neighbours than about
//!    the cluster;
//! 3. **N nodes**, each with `max_jobs`, N × `max_jobs` jobs: the
//!    aggregate requests/s against phase 1's;
//! 4. **take-over**: N nodes with (N − 1) × `max_jobs` jobs, so the
//!    survivors have room; one node is killed (-9) and the time until
//!    every job it held is leased by another node is measured (about one
//!    lease plus one round of the nodes).
//!
//! Rates are the daemons' own `/status` counters over a window after a
//! warm-up. Must not touch: the network beyond 127.0.0.1, files outside its
//! work folder (removed at the end unless kept), processes it did not start.

use crate::daemon_load::{job_file_text, job_name, proc_figures, site_host};
use crate::reference::median;
use crate::sites::{Site, SiteRequest, SiteResponse, SiteServer};
use anyhow::{bail, Context};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait for a daemon's admin API after it starts, and for every job to be leased.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest wait for the killed node's jobs to be taken over.
const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(120);
/// The metric every database round trip of a node is counted in.
const DB_COUNT: &str = "forager_cluster_database_latency_seconds_count";

/// What to run.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// The forager binary (this one): it runs the daemons.
    pub exe: PathBuf,
    /// Nodes of the cluster phase (≥ 2).
    pub nodes: usize,
    /// Each node's `max_jobs` (and the jobs of one node).
    pub max_jobs: usize,
    /// Server-side delay of every response.
    pub latency: Duration,
    /// Every job's politeness delay.
    pub delay: Duration,
    pub lease: Duration,
    pub checkpoint_interval: Duration,
    pub warmup: Duration,
    pub duration: Duration,
    /// Single / one-node pairs measured (≥ 1), alternating their order.
    pub rounds: usize,
    /// Job files, configs, state, the database and logs go here.
    pub work_dir: PathBuf,
    pub keep: bool,
}

/// One measured phase.
#[derive(Clone, Debug, Default)]
pub struct Phase {
    pub name: String,
    /// The single / one-node pair this phase belongs to (1-based; 0 for the others).
    pub round: usize,
    pub nodes: usize,
    pub jobs: usize,
    pub window: Duration,
    pub requests: u64,
    /// The daemons' CPU time over the window, added up.
    pub cpu: Duration,
    /// Database round trips over the window, all nodes (none without a cluster).
    pub db_round_trips: Option<u64>,
}

impl Phase {
    pub fn requests_per_sec(&self) -> f64 {
        self.requests as f64 / self.window.as_secs_f64().max(1e-9)
    }

    /// CPU milliseconds per request.
    pub fn cpu_ms_per_request(&self) -> f64 {
        self.cpu.as_secs_f64() * 1000.0 / (self.requests.max(1) as f64)
    }
}

/// Everything measured.
#[derive(Clone, Debug, Default)]
pub struct ClusterReport {
    pub options: String,
    pub phases: Vec<Phase>,
    /// Kill -9 of one node → every job it held leased by another.
    pub takeover: Option<Duration>,
    pub takeover_jobs: usize,
    pub load_average: String,
}

/// A chain site without end, each answer `latency` late.
struct SlowChain {
    latency: Duration,
}

impl Site for SlowChain {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        let page = |n: u64| {
            SiteResponse::html(format!(
                "<html><body><a href=\"/data/{n}.csv\">data</a><a href=\"/page/{}\">next</a></body></html>",
                n + 1
            ))
        };
        let number = |prefix: &str, suffix: &str| {
            path.strip_prefix(prefix)
                .and_then(|p| p.strip_suffix(suffix))
                .and_then(|n| n.parse::<u64>().ok())
        };
        let resp = if path == "/" {
            page(0)
        } else if let Some(n) = number("/page/", "") {
            page(n)
        } else if let Some(n) = number("/data/", ".csv") {
            SiteResponse::ok(
                "text/csv",
                format!("n,square\n{n},{}\n", n.saturating_mul(n)),
            )
        } else {
            SiteResponse::not_found()
        };
        resp.with_delay(self.latency)
    }
}

/// A PostgreSQL server of the bench's own (the tests' harness, returning
/// errors instead of panicking): stopped when dropped.
pub struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    user: Option<(u32, u32)>,
    pub port: u16,
}

/// The folder of `initdb` and `pg_ctl`: Debian's newest, else on `PATH`.
pub fn postgres_bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
}

/// uid and gid of `postgres`, from /etc/passwd (as root, the server must run as it).
pub fn postgres_user() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&"postgres") && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    })
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(l.local_addr().context("reading the free port")?.port())
}

impl Postgres {
    /// initdb into `dir` (created) and start on loopback, with PostgreSQL's
    /// default durability (a measurement, not a test).
    pub fn start(dir: &Path) -> anyhow::Result<Postgres> {
        let bin = postgres_bin_dir().context(
            "PostgreSQL is missing: no initdb in /usr/lib/postgresql/*/bin or on PATH \
             (apt-get install postgresql); `bench --cluster` starts a server of its own",
        )?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let user = if root {
            let user = postgres_user()
                .context("running as root, PostgreSQL needs a `postgres` user to run as")?;
            std::os::unix::fs::chown(dir, Some(user.0), Some(user.1))
                .with_context(|| format!("chown {} to postgres", dir.display()))?;
            Some(user)
        } else {
            None
        };
        let mut pg = Postgres {
            dir: dir.to_path_buf(),
            bin,
            user,
            port: 0,
        };
        let data = dir.join("data");
        let data_s = data.to_str().context("a UTF-8 work folder")?.to_string();
        pg.run(
            &[
                "--no-sync",
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "-D",
                &data_s,
            ],
            "initdb",
        )?;
        let log = dir.join("server.log");
        let log_s = log.to_str().context("a UTF-8 work folder")?.to_string();
        // A port found free may be taken before the server binds it: try a few.
        for attempt in 0..5 {
            pg.port = free_port()?;
            let options = format!(
                "-c listen_addresses=127.0.0.1 -p {} -k {}",
                pg.port,
                dir.display()
            );
            let out = pg
                .command("pg_ctl")
                .args([
                    "start", "-w", "-t", "60", "-D", &data_s, "-l", &log_s, "-o", &options,
                ])
                .output()
                .context("running pg_ctl start")?;
            if out.status.success() {
                return Ok(pg);
            }
            if attempt == 4 {
                bail!(
                    "pg_ctl start failed: {}\n{}",
                    String::from_utf8_lossy(&out.stderr),
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
        }
        bail!("pg_ctl start failed")
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(self.bin.join(program));
        c.stdin(Stdio::null())
            .env("LC_ALL", "C")
            .current_dir(&self.dir);
        if let Some((uid, gid)) = self.user {
            c.uid(uid).gid(gid).env("HOME", &self.dir);
        }
        c
    }

    fn run(&self, args: &[&str], program: &str) -> anyhow::Result<()> {
        let out = self
            .command(program)
            .args(args)
            .output()
            .with_context(|| format!("running {program}"))?;
        if !out.status.success() {
            bail!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// The connection string (trust on loopback: no password).
    pub fn database(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self
            .command("pg_ctl")
            .args(["stop", "-w", "-m", "immediate", "-D"])
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A daemon child, killed if still running when dropped.
struct Daemon {
    child: Child,
    admin: SocketAddr,
    name: String,
    log: PathBuf,
}

impl Daemon {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child, which we have not reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, sig);
        }
    }

    /// SIGTERM, then wait at most 60 s; killed after that.
    fn stop(mut self) {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Start one daemon in `dir` with `jobs` (site numbers) in its folder.
fn start_daemon(
    opts: &ClusterOptions,
    dir: &Path,
    name: &str,
    jobs: &[usize],
    all_hosts: usize,
    server: SocketAddr,
    database: Option<&str>,
) -> anyhow::Result<Daemon> {
    let jobs_dir = dir.join("jobs.d");
    std::fs::create_dir_all(&jobs_dir)
        .with_context(|| format!("creating {}", jobs_dir.display()))?;
    std::fs::create_dir_all(dir.join("state"))?;
    for &i in jobs {
        let path = jobs_dir.join(format!("{}.toml", job_name(i)));
        std::fs::write(&path, job_file_text(i, "/", "bfs", opts.delay))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()?)
        .parse()
        .context("the admin address")?;
    let mut config = format!(
        "jobs_dir = \"jobs.d\"\n\
         state_dir = \"state\"\n\
         admin_listen = \"{admin}\"\n\
         max_jobs = {}\n\
         checkpoint_interval = \"{}\"\n\
         poll_interval = \"1s\"\n\
         allow_private = true\n\
         log_level = \"warn\"\n\
         [resolve]\n",
        opts.max_jobs,
        humantime::format_duration(opts.checkpoint_interval),
    );
    for i in 1..=all_hosts {
        let _ = writeln!(config, "\"{}\" = \"{server}\"", site_host(i));
    }
    if let Some(db) = database {
        let _ = write!(
            config,
            "[cluster]\ndatabase = \"{db}\"\nnode = \"{name}\"\nlease = \"{}\"\n",
            humantime::format_duration(opts.lease)
        );
    }
    let config_path = dir.join("forager.toml");
    std::fs::write(&config_path, config)
        .with_context(|| format!("writing {}", config_path.display()))?;
    let log = dir.join("daemon.log");
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let child = Command::new(&opts.exe)
        .arg("daemon")
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .with_context(|| format!("starting daemon {name} ({})", opts.exe.display()))?;
    Ok(Daemon {
        child,
        admin,
        name: name.to_string(),
        log,
    })
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(3000);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[start..].to_string()
}

/// Requests of the node's own jobs, and its database round trips (cluster only).
fn sample(rt: &tokio::runtime::Runtime, d: &Daemon) -> anyhow::Result<(u64, Option<u64>)> {
    let status = rt
        .block_on(forager::daemon::admin::status_of(d.admin))
        .with_context(|| format!("node {}: /status", d.name))?;
    let requests = status.jobs.iter().map(|j| j.counters.requests).sum();
    let metrics = rt
        .block_on(forager::daemon::admin::metrics_of(d.admin))
        .with_context(|| format!("node {}: /metrics", d.name))?;
    let db = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(DB_COUNT)?
                .strip_prefix(' ')?
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map(|v| v as u64);
    Ok((requests, db))
}

/// Wait until `ready` says so of the first daemon's `/status`, at most READY_TIMEOUT.
fn wait_for(
    rt: &tokio::runtime::Runtime,
    daemons: &[Daemon],
    what: &str,
    mut ready: impl FnMut(&forager::daemon::StatusReport) -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(s) = rt.block_on(forager::daemon::admin::status_of(daemons[0].admin)) {
            if ready(&s) {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!(
                "{what}: not within {:?}; log of {}:\n{}",
                READY_TIMEOUT,
                daemons[0].name,
                log_tail(&daemons[0].log)
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// One measured phase: `nodes` daemons (no database: single), `per_node` jobs each.
#[allow(clippy::too_many_arguments)]
fn phase(
    opts: &ClusterOptions,
    rt: &tokio::runtime::Runtime,
    server: SocketAddr,
    name: &str,
    nodes: usize,
    jobs: usize,
    cluster: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Phase> {
    let dir = opts.work_dir.join(name.replace(' ', "-"));
    // A fresh folder each time (the rounds run a phase again).
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let pg = if cluster {
        Some(Postgres::start(&dir.join("pg"))?)
    } else {
        None
    };
    let database = pg.as_ref().map(Postgres::database);
    let daemons = start_nodes(opts, &dir, nodes, jobs, server, database.as_deref())?;
    let want = jobs.min(nodes * opts.max_jobs);
    wait_for(rt, &daemons, "every job running", |s| match &s.cluster {
        Some(c) => c.jobs.iter().filter(|j| j.node.is_some()).count() >= want,
        None => s.running >= want,
    })?;
    progress(&format!(
        "{name}: {want} jobs running on {nodes} node(s); warm-up {:?}",
        opts.warmup
    ));
    std::thread::sleep(opts.warmup);
    let begin = daemons
        .iter()
        .map(|d| Ok((sample(rt, d)?, proc_figures(d.pid()).map(|p| p.cpu))))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let started = Instant::now();
    std::thread::sleep(opts.duration);
    let end = daemons
        .iter()
        .map(|d| Ok((sample(rt, d)?, proc_figures(d.pid()).map(|p| p.cpu))))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let window = started.elapsed();
    let mut out = Phase {
        name: name.to_string(),
        nodes,
        jobs: want,
        window,
        ..Phase::default()
    };
    for (((r0, db0), c0), ((r1, db1), c1)) in begin.into_iter().zip(end) {
        out.requests += r1.saturating_sub(r0);
        if let (Some(c0), Some(c1)) = (c0, c1) {
            out.cpu += c1.saturating_sub(c0);
        }
        if let (Some(a), Some(b)) = (db0, db1) {
            *out.db_round_trips.get_or_insert(0) += b.saturating_sub(a);
        }
    }
    progress(&format!(
        "{name}: {:.1} requests/s, {:.3} ms CPU/request",
        out.requests_per_sec(),
        out.cpu_ms_per_request()
    ));
    for d in daemons {
        d.stop();
    }
    drop(pg);
    Ok(out)
}

/// N nodes with room to spare; one killed: until its jobs are leased elsewhere.
fn takeover(
    opts: &ClusterOptions,
    rt: &tokio::runtime::Runtime,
    server: SocketAddr,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<(Duration, usize)> {
    let dir = opts.work_dir.join("takeover");
    let pg = Postgres::start(&dir.join("pg"))?;
    let database = pg.database();
    let jobs = (opts.nodes - 1) * opts.max_jobs;
    let mut daemons = start_nodes(opts, &dir, opts.nodes, jobs, server, Some(&database))?;
    let victim = format!("n{}", opts.nodes);
    wait_for(rt, &daemons, "every job running", |s| {
        s.cluster.as_ref().is_some_and(|c| {
            c.jobs.iter().filter(|j| j.node.is_some()).count() >= jobs
                && c.jobs
                    .iter()
                    .any(|j| j.node.as_deref() == Some(victim.as_str()))
        })
    })?;
    std::thread::sleep(opts.warmup);
    let held: Vec<String> = rt
        .block_on(forager::daemon::admin::status_of(daemons[0].admin))?
        .cluster
        .map(|c| {
            c.jobs
                .into_iter()
                .filter(|j| j.node.as_deref() == Some(victim.as_str()))
                .map(|j| j.name)
                .collect()
        })
        .unwrap_or_default();
    let Some(killed) = daemons.pop() else {
        bail!("no node to kill");
    };
    killed.signal(libc::SIGKILL);
    let at = Instant::now();
    progress(&format!(
        "take-over: {victim} killed (-9) holding {} jobs",
        held.len()
    ));
    let deadline = at + TAKEOVER_TIMEOUT;
    let took = loop {
        if let Ok(s) = rt.block_on(forager::daemon::admin::status_of(daemons[0].admin)) {
            let taken = s.cluster.as_ref().is_some_and(|c| {
                held.iter().all(|name| {
                    c.jobs
                        .iter()
                        .any(|j| &j.name == name && j.node.as_deref().is_some_and(|n| n != victim))
                })
            });
            if taken {
                break at.elapsed();
            }
        }
        if Instant::now() > deadline {
            bail!("the killed node's jobs were not taken over within {TAKEOVER_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(killed);
    for d in daemons {
        d.stop();
    }
    drop(pg);
    Ok((took, held.len()))
}

/// Run the benchmark; `progress` gets a line per step.
pub fn run(opts: &ClusterOptions, mut progress: impl FnMut(&str)) -> anyhow::Result<ClusterReport> {
    if opts.nodes < 2 {
        bail!("--cluster needs at least 2 nodes");
    }
    // Checked first: a missing PostgreSQL is said before anything starts.
    postgres_bin_dir().context(
        "PostgreSQL is missing: no initdb in /usr/lib/postgresql/*/bin or on PATH \
         (apt-get install postgresql); `bench --cluster` starts a server of its own",
    )?;
    std::fs::create_dir_all(&opts.work_dir)
        .with_context(|| format!("creating {}", opts.work_dir.display()))?;
    let result = run_in(opts, &mut progress);
    if !opts.keep {
        let _ = std::fs::remove_dir_all(&opts.work_dir);
    }
    result
}

fn run_in(opts: &ClusterOptions, progress: &mut dyn FnMut(&str)) -> anyhow::Result<ClusterReport> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let hosts = opts.nodes * opts.max_jobs;
    let site: Arc<dyn Site> = Arc::new(SlowChain {
        latency: opts.latency,
    });
    let server = rt.block_on(SiteServer::start(
        (1..=hosts).map(|i| (site_host(i), site.clone())).collect(),
    ))?;
    let addr = server.addr();
    let mut report = ClusterReport {
        options: format!(
            "{} nodes × max_jobs {}, response latency {:?} (server-side), politeness delay {:?}, \
             lease {:?}, checkpoint every {:?}, warm-up {:?}, window {:?}, {} round(s)",
            opts.nodes,
            opts.max_jobs,
            opts.latency,
            opts.delay,
            opts.lease,
            opts.checkpoint_interval,
            opts.warmup,
            opts.duration,
            opts.rounds
        ),
        ..ClusterReport::default()
    };
    let m = opts.max_jobs;
    for round in 1..=opts.rounds.max(1) {
        // AB, BA, AB…: a drift of the machine's load over the run falls on
        // both sides alike.
        let order = if round % 2 == 1 {
            [false, true]
        } else {
            [true, false]
        };
        for cluster in order {
            let name = if cluster { "one node" } else { "single" };
            let mut p = phase(opts, &rt, addr, name, 1, m, cluster, progress)?;
            p.round = round;
            report.phases.push(p);
        }
    }
    let name = format!("{} nodes", opts.nodes);
    report.phases.push(phase(
        opts,
        &rt,
        addr,
        &name,
        opts.nodes,
        opts.nodes * m,
        true,
        progress,
    )?);
    let (took, jobs) = takeover(opts, &rt, addr, progress)?;
    report.takeover = Some(took);
    report.takeover_jobs = jobs;
    report.load_average = std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string();
    drop(server);
    Ok(report)
}

/// The report, as text.
pub fn format_report(r: &ClusterReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "forager bench --cluster: {}", r.options);
    let _ = writeln!(
        out,
        "{:<10} {:>5} {:>5} {:>5} {:>9} {:>11} {:>14} {:>14}",
        "phase",
        "round",
        "nodes",
        "jobs",
        "requests",
        "requests/s",
        "CPU ms/request",
        "db trips/req"
    );
    for p in &r.phases {
        let _ = writeln!(
            out,
            "{:<10} {:>5} {:>5} {:>5} {:>9} {:>11.1} {:>14.3} {:>14}",
            p.name,
            if p.round > 0 {
                p.round.to_string()
            } else {
                "-".into()
            },
            p.nodes,
            p.jobs,
            p.requests,
            p.requests_per_sec(),
            p.cpu_ms_per_request(),
            p.db_round_trips
                .map(|d| format!("{:.2}", d as f64 / p.requests.max(1) as f64))
                .unwrap_or_else(|| "-".into())
        );
    }
    if let Some(added) = cpu_added(&r.phases) {
        let each: Vec<String> = added.rounds.iter().map(|d| format!("{d:+.3}")).collect();
        let _ = writeln!(
            out,
            "CPU added by the cluster: median {:+.3} ms per request over {} round(s) \
             (min {:+.3}, max {:+.3}; each: {}) (one node with [cluster] against one without; bar ≤ 0.1 ms)",
            added.median,
            added.rounds.len(),
            added.min,
            added.max,
            each.join(" ")
        );
    }
    let single_rates: Vec<f64> = r
        .phases
        .iter()
        .filter(|p| p.name == "single")
        .map(Phase::requests_per_sec)
        .collect();
    if let (Some(single), Some(many)) = (median(single_rates), r.phases.last()) {
        if many.nodes > 1 {
            let _ = writeln!(
                out,
                "aggregate requests/s, {} nodes against one node (median of the single rounds): {:.2}× (bar ≥ 2.7× for 3 nodes)",
                many.nodes,
                many.requests_per_sec() / single.max(1e-9)
            );
        }
    }
    if let Some(t) = r.takeover {
        let _ = writeln!(
            out,
            "take-over after kill -9: {:.2} s until the {} jobs of the killed node were leased by the others",
            t.as_secs_f64(),
            r.takeover_jobs
        );
    }
    let _ = writeln!(out, "load average at the end: {}", r.load_average);
    out
}

/// The CPU per request the cluster adds, round by round (one node with
/// `[cluster]` minus the single daemon of the same round), and its median
/// and spread; `None` without a complete round.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuAdded {
    pub rounds: Vec<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

pub fn cpu_added(phases: &[Phase]) -> Option<CpuAdded> {
    let of = |round: usize, name: &str| {
        phases
            .iter()
            .find(|p| p.round == round && p.name == name)
            .map(Phase::cpu_ms_per_request)
    };
    let mut rounds: Vec<usize> = phases.iter().map(|p| p.round).filter(|&r| r > 0).collect();
    rounds.dedup();
    let diffs: Vec<f64> = rounds
        .into_iter()
        .filter_map(|r| Some(of(r, "one node")? - of(r, "single")?))
        .collect();
    let median = median(diffs.clone())?;
    Some(CpuAdded {
        min: diffs.iter().copied().fold(f64::INFINITY, f64::min),
        max: diffs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        median,
        rounds: diffs,
    })
}

/// `nodes` daemons under `dir` (`n1`, `n2`…), the jobs `1..=jobs` dealt out
/// to their folders round-robin; `database`: their cluster, or none.
fn start_nodes(
    opts: &ClusterOptions,
    dir: &Path,
    nodes: usize,
    jobs: usize,
    server: SocketAddr,
    database: Option<&str>,
) -> anyhow::Result<Vec<Daemon>> {
    let mut daemons = Vec::new();
    for n in 0..nodes {
        let mine: Vec<usize> = (1..=jobs).filter(|i| i % nodes == n).collect();
        daemons.push(start_daemon(
            opts,
            &dir.join(format!("n{}", n + 1)),
            &format!("n{}", n + 1),
            &mine,
            jobs,
            server,
            database,
        )?);
    }
    Ok(daemons)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, round: usize, requests: u64, cpu_ms: u64) -> Phase {
        Phase {
            name: name.into(),
            round,
            nodes: 1,
            jobs: 1,
            window: Duration::from_secs(1),
            requests,
            cpu: Duration::from_millis(cpu_ms),
            db_round_trips: None,
        }
    }

    #[test]
    fn the_cpu_added_is_the_median_of_each_rounds_difference() {
        let phases = vec![
            phase("single", 1, 100, 50),    // 0.5 ms/request
            phase("one node", 1, 100, 70),  // 0.7: +0.2
            phase("one node", 2, 200, 100), // 0.5
            phase("single", 2, 200, 120),   // 0.6: -0.1
            phase("single", 3, 100, 40),    // 0.4
            phase("one node", 3, 100, 45),  // 0.45: +0.05
            phase("2 nodes", 0, 400, 300),
        ];
        let added = cpu_added(&phases).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert_eq!(added.rounds.len(), 3);
        assert!(close(added.rounds[0], 0.2) && close(added.rounds[1], -0.1));
        assert!(close(added.median, 0.05), "{added:?}");
        assert!(close(added.min, -0.1) && close(added.max, 0.2), "{added:?}");
    }

    #[test]
    fn no_complete_round_no_figure() {
        assert_eq!(cpu_added(&[phase("single", 1, 100, 50)]), None);
        assert_eq!(cpu_added(&[]), None);
    }
}
