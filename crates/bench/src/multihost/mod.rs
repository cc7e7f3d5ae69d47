//! `forager bench --site web:HOSTS[:PAGES[:LATENCY]]`: one job over a web of
//! many hosts ([`crate::sites::web`]), for the goal "a job over 1 000 hosts at
//! `delay = "1s"` makes ≥ 900 requests per second, never two requests in
//! flight on one host, never two requests to one host closer than its delay".
//!
//! Two processes, so that the crawler's CPU time and memory are its own: this
//! harness serves the web on one loopback port, every host under its own name,
//! and keeps the server's request log; the crawler is the real binary
//! (`forager crawl`) with a job file (scope `any`, politeness per host: each
//! host of the web stands for a separate server) and a config whose
//! `[resolve]` maps every host name to the server. Each strategy runs once per
//! seed, each run in a fresh state folder, for `warmup + duration`, then gets
//! SIGINT (a crawl that ends sooner is measured up to its end).
//!
//! Figures: from the server's log, the request rate over the window after the
//! warm-up and its slowest 5 s, and per host the most requests in flight at
//! once and the smallest gap between two arrivals; from `/proc`, sampled every
//! second, the crawler's CPU time over the window and its peak RSS. With more
//! than one request in flight the order in which answers arrive changes from
//! run to run, so a crawl is not byte-reproducible even for one seed: the
//! report gives mean ± std over seeds ([`figures`]).
//!
//! Must not touch: the network beyond 127.0.0.1, files outside its work
//! folder (removed at the end unless kept), or any process it did not start.

pub mod figures;

use crate::daemon_load::proc_figures;
use crate::sites::server::SiteServer;
use crate::sites::web::Web;
use anyhow::{bail, ensure, Context};
use figures::{ProcSample, WebRun, WebSetting, Window, WindowFigures};
use forager_core::strategy::StrategyKind;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Pages per host when the site names none: 1 000 hosts then hold about
/// 270 000 requests, more than a 20 + 60 s run at 1 000 requests/s makes,
/// so the frontier never runs dry in the window.
pub const DEFAULT_PAGES: usize = 200;
/// The largest web this accepts (one `[resolve]` line per host).
pub const MAX_HOSTS: usize = 100_000;
const MAX_PAGES: usize = 1_000_000;
const MAX_LATENCY: Duration = Duration::from_secs(10);
/// How often the crawler's `/proc` figures are sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// Longest wait for the crawler to exit after SIGINT (it checkpoints first).
const EXIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The web a `--site` names, if it names one: `web:HOSTS[:PAGES[:LATENCY]]`
/// (LATENCY as `50ms`: added to every answer, like a server far away).
pub fn parse_web(spec: &str) -> anyhow::Result<Option<Web>> {
    let Some(rest) = spec.strip_prefix("web:") else {
        return Ok(None);
    };
    let mut parts = rest.split(':');
    let hosts: usize = parts.next().unwrap_or("").parse().with_context(|| {
        format!("{spec:?}: expected web:HOSTS[:PAGES[:LATENCY]], HOSTS a number")
    })?;
    ensure!(
        (1..=MAX_HOSTS).contains(&hosts),
        "{spec:?}: HOSTS must be between 1 and {MAX_HOSTS}"
    );
    let pages = match parts.next() {
        None => DEFAULT_PAGES,
        Some(p) => p
            .parse()
            .with_context(|| format!("{spec:?}: PAGES must be a number, found {p:?}"))?,
    };
    ensure!(
        (1..=MAX_PAGES).contains(&pages),
        "{spec:?}: PAGES must be between 1 and {MAX_PAGES}"
    );
    let latency = match parts.next() {
        None => Duration::ZERO,
        Some(l) => humantime::parse_duration(l).with_context(|| {
            format!("{spec:?}: LATENCY must be a duration like 50ms, found {l:?}")
        })?,
    };
    ensure!(
        latency <= MAX_LATENCY,
        "{spec:?}: LATENCY must be at most {}",
        humantime::format_duration(MAX_LATENCY)
    );
    if let Some(extra) = parts.next() {
        bail!("{spec:?}: unexpected {extra:?} after web:HOSTS:PAGES:LATENCY");
    }
    let mut web = Web::new(hosts).with_latency(latency);
    web.pages_per_host = pages;
    Ok(Some(web))
}

/// What to run.
#[derive(Clone, Debug)]
pub struct WebOptions {
    /// The forager binary (this one): it runs the crawls.
    pub exe: PathBuf,
    pub web: Web,
    pub strategies: Vec<StrategyKind>,
    /// Runs per strategy, seeds 1..=N.
    pub seeds: u64,
    /// Politeness delay of the job.
    pub delay: Duration,
    /// `[politeness] max_in_flight`; `None`: the default of scope `any`.
    pub max_in_flight: Option<u32>,
    /// Request budget (0: none).
    pub max_requests: u64,
    pub warmup: Duration,
    /// The window measured after the warm-up.
    pub duration: Duration,
    /// Job files, config, state, logs; removed at the end unless `keep`.
    pub work_dir: PathBuf,
    pub keep: bool,
    /// Per-second request counts of every run (CSV) go here.
    pub out: PathBuf,
}

impl WebOptions {
    fn setting(&self) -> WebSetting {
        WebSetting {
            hosts: self.web.hosts,
            pages_per_host: self.web.pages_per_host,
            targets: self.web.targets().len(),
            delay: self.delay,
        }
    }
}

/// Job name of one run.
fn job_name(kind: StrategyKind, seed: u64) -> String {
    format!("web-{}-{seed}", kind.name())
}

/// The job of one run: the whole web from host 0, politeness per host.
pub fn job_file_text(opts: &WebOptions, kind: StrategyKind, seed: u64) -> String {
    let mut text = format!(
        "name = \"{name}\"\n\
         seeds = [\"http://{host}/\"]\n\
         scope = \"any\"\n\
         strategy = \"{strategy}\"\n\
         seed = {seed}\n\
         [budget]\n\
         requests = {requests}\n\
         bytes = 0\n\
         early_stop = false\n\
         [politeness]\n\
         delay = \"{delay}\"\n\
         per = \"host\"\n",
        name = job_name(kind, seed),
        host = Web::host_name(0),
        strategy = kind.name(),
        requests = opts.max_requests,
        delay = humantime::format_duration(opts.delay),
    );
    if let Some(n) = opts.max_in_flight {
        let _ = writeln!(text, "max_in_flight = {n}");
    }
    text
}

/// The config `forager crawl --config` reads: every host on the server.
pub fn config_text(web: &Web, server: std::net::SocketAddr) -> String {
    let mut text = String::from("allow_private = true\n[resolve]\n");
    for i in 0..web.hosts {
        let _ = writeln!(text, "\"{}\" = \"{server}\"", Web::host_name(i));
    }
    text
}

/// Run every strategy and seed; `progress` gets a line per run.
pub async fn run(opts: &WebOptions, progress: &mut dyn FnMut(&str)) -> anyhow::Result<String> {
    ensure!(opts.seeds > 0, "--seeds must be at least 1");
    ensure!(!opts.strategies.is_empty(), "no strategy to run");
    ensure!(
        !opts.duration.is_zero(),
        "--duration must be longer than 0s"
    );
    std::fs::create_dir_all(&opts.work_dir)
        .with_context(|| format!("creating {}", opts.work_dir.display()))?;
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating {}", opts.out.display()))?;
    let result = run_in(opts, progress).await;
    if !opts.keep {
        if let Err(e) = std::fs::remove_dir_all(&opts.work_dir) {
            progress(&format!(
                "could not remove {}: {e}",
                opts.work_dir.display()
            ));
        }
    }
    result
}

async fn run_in(opts: &WebOptions, progress: &mut dyn FnMut(&str)) -> anyhow::Result<String> {
    let server = SiteServer::start(opts.web.sites()).await?;
    let config = opts.work_dir.join("forager.toml");
    std::fs::write(&config, config_text(&opts.web, server.addr()))
        .with_context(|| format!("writing {}", config.display()))?;
    let targets: HashSet<String> = opts.web.targets().into_iter().collect();
    progress(&format!(
        "serving {} hosts on {} ({} targets); work folder {}",
        opts.web.hosts,
        server.addr(),
        targets.len(),
        opts.work_dir.display()
    ));
    let mut runs = Vec::new();
    for &kind in &opts.strategies {
        for seed in 1..=opts.seeds {
            let run = run_one(opts, &server, &config, &targets, kind, seed).await;
            let run = match run {
                Ok(r) => r,
                Err(e) => {
                    let _ = server.shutdown().await;
                    return Err(e);
                }
            };
            progress(&run_line(&run));
            runs.push(run);
        }
    }
    let _ = server.shutdown().await;
    Ok(figures::markdown(&opts.setting(), &runs))
}

fn run_line(r: &WebRun) -> String {
    let window = r.window.map_or("no window".to_string(), |w| {
        format!(
            "{:.1} requests/s over {:.1} s, CPU {:.3} ms per request, peak RSS {:.0} MiB",
            w.per_sec,
            w.length.as_secs_f64(),
            w.cpu_per_request_ms(),
            w.peak_rss as f64 / (1 << 20) as f64
        )
    });
    format!(
        "  {:<6} seed {}: {} requests, {} targets; {window}; most in flight on one host {}, {} in all{}",
        r.strategy.name(),
        r.seed,
        r.requests,
        r.targets,
        r.politeness.most_on_a_host,
        r.politeness.most_at_once,
        r.finished_after
            .map_or(String::new(), |d| format!("; finished after {:.1} s", d.as_secs_f64()))
    )
}

/// One crawl of the web, stopped after the window.
async fn run_one(
    opts: &WebOptions,
    server: &SiteServer,
    config: &Path,
    targets: &HashSet<String>,
    kind: StrategyKind,
    seed: u64,
) -> anyhow::Result<WebRun> {
    let name = job_name(kind, seed);
    let job = opts.work_dir.join(format!("{name}.toml"));
    std::fs::write(&job, job_file_text(opts, kind, seed))
        .with_context(|| format!("writing {}", job.display()))?;
    let log_path = opts.work_dir.join(format!("{name}.log"));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    server.clear_log();
    let started = Instant::now();
    let mut child = tokio::process::Command::new(&opts.exe)
        .arg("crawl")
        .arg(&job)
        .arg("--config")
        .arg(config)
        .arg("--state-dir")
        .arg(opts.work_dir.join(format!("state-{name}")))
        .arg("--no-progress")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("crawl log")?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} crawl", opts.exe.display()))?;
    let pid = child.id().context("the crawler exited at once")?;
    let warm_until = started + opts.warmup;
    let end = warm_until + opts.duration;
    let mut samples: Vec<ProcSample> = Vec::new();
    let mut finished = None;
    loop {
        if let Some(status) = child.try_wait().context("waiting for the crawler")? {
            finished = Some((status, started.elapsed()));
            break;
        }
        // Read while it runs: an exited process has no figures left.
        if let Some(p) = proc_figures(pid) {
            samples.push(ProcSample {
                at: Instant::now(),
                cpu: p.cpu,
                peak_rss: p.peak_rss,
            });
        }
        let now = Instant::now();
        if now >= end {
            break;
        }
        let next = (now + SAMPLE_EVERY).min(end);
        tokio::select! {
            status = child.wait() => {
                let status = status.context("waiting for the crawler")?;
                finished = Some((status, started.elapsed()));
                break;
            }
            _ = tokio::time::sleep_until(next.into()) => {}
        }
    }
    let finished_after = match finished {
        Some((status, after)) => {
            ensure!(
                status.success(),
                "the {name} crawl failed ({status}); see {}",
                log_path.display()
            );
            Some(after)
        }
        None => {
            stop(&mut child, pid).await.with_context(|| {
                format!("stopping the {name} crawl; see {}", log_path.display())
            })?;
            None
        }
    };
    let log = server.log();
    if let Err(e) = write_per_second(opts, &name, &log, started) {
        tracing::warn!(run = %name, error = %format!("{e:#}"), "per-second CSV not written");
    }
    Ok(WebRun {
        strategy: kind,
        seed,
        requests: log.len(),
        targets: figures::targets_fetched(&log, targets),
        window: Window::of(&samples, warm_until).map(|w| WindowFigures::of(&log, &w)),
        politeness: figures::politeness(&log),
        finished_after,
    })
}

/// SIGINT, as Ctrl-C: the crawler finishes the requests in flight,
/// checkpoints and exits 0. Killed if it takes longer than [`EXIT_TIMEOUT`].
pub(crate) async fn stop(child: &mut tokio::process::Child, pid: u32) -> anyhow::Result<()> {
    let pid = libc::pid_t::try_from(pid).context("crawler pid")?;
    // SAFETY: kill(2) on the pid of our own child, which has not been reaped
    // (try_wait saw it running and nothing else waits for it).
    if unsafe { libc::kill(pid, libc::SIGINT) } != 0 {
        bail!("sending SIGINT: {}", std::io::Error::last_os_error());
    }
    match tokio::time::timeout(EXIT_TIMEOUT, child.wait()).await {
        Ok(status) => {
            let status = status.context("waiting for the crawler")?;
            ensure!(status.success(), "it exited with {status} after SIGINT");
            Ok(())
        }
        Err(_) => {
            let _ = child.kill().await;
            bail!("it did not exit within {EXIT_TIMEOUT:?} of SIGINT and was killed")
        }
    }
}

fn write_per_second(
    opts: &WebOptions,
    name: &str,
    log: &[crate::sites::RequestRecord],
    started: Instant,
) -> anyhow::Result<()> {
    let mut csv = String::from("second,requests\n");
    for (s, n) in figures::per_second(log, started).into_iter().enumerate() {
        let _ = writeln!(csv, "{s},{n}");
    }
    let path = opts.out.join(format!(
        "web-{}-{}.csv",
        opts.web.hosts,
        name.trim_start_matches("web-")
    ));
    std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager_core::config::{parse_daemon, parse_job};
    use forager_core::extract::PolitenessPer;

    #[test]
    fn webs_are_parsed_with_defaults_and_bad_ones_refused() {
        assert_eq!(parse_web("synthetic:small").unwrap(), None);
        let web = parse_web("web:1000").unwrap().unwrap();
        assert_eq!((web.hosts, web.pages_per_host), (1000, DEFAULT_PAGES));
        assert_eq!(web.latency, Duration::ZERO);
        let web = parse_web("web:20:3:50ms").unwrap().unwrap();
        assert_eq!((web.hosts, web.pages_per_host), (20, 3));
        assert_eq!(web.latency, Duration::from_millis(50));
        for (bad, says) in [
            ("web:", "HOSTS a number"),
            ("web:0", "between 1 and"),
            ("web:many", "HOSTS a number"),
            ("web:10:x", "PAGES must be a number"),
            ("web:10:0", "PAGES must be between"),
            ("web:10:3:soon", "LATENCY must be a duration"),
            ("web:10:3:1h", "at most 10s"),
            ("web:10:3:1ms:x", "unexpected \"x\""),
        ] {
            let e = format!("{:#}", parse_web(bad).unwrap_err());
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    fn options() -> WebOptions {
        WebOptions {
            exe: PathBuf::from("forager"),
            web: Web::new(5),
            strategies: vec![StrategyKind::Sb],
            seeds: 1,
            delay: Duration::from_millis(1500),
            max_in_flight: Some(32),
            max_requests: 0,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(1),
            work_dir: PathBuf::from("w"),
            keep: false,
            out: PathBuf::from("o"),
        }
    }

    #[test]
    fn the_job_and_config_are_valid_and_say_what_is_measured() {
        let opts = options();
        let job = parse_job(
            &job_file_text(&opts, StrategyKind::Sb, 3),
            Path::new("web-sb-3.toml"),
        )
        .unwrap();
        assert_eq!(job.name, "web-sb-3");
        assert_eq!(job.seed, 3);
        assert_eq!(job.seeds[0].as_str(), "http://h0000.web.test/");
        assert_eq!(job.politeness.delay, Duration::from_millis(1500));
        assert_eq!(job.max_in_flight(), 32);
        assert_eq!(job.politeness_per(), PolitenessPer::Host);
        assert!(!job.budget.early_stop);
        let server: std::net::SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let config = parse_daemon(&config_text(&opts.web, server), Path::new("f.toml")).unwrap();
        assert!(config.allow_private);
        assert_eq!(config.resolve.len(), 5);
        assert_eq!(config.resolve.get("h0004.web.test"), Some(&server));
    }
}
