//! Checkpoint figures (issue 6, item 7), measured with the real store and engine.
//!
//! 1. Checkpoint time and bytes of a job with 1 M frontier links and 100 k
//!    actions, crawled by the engine's own job core (`engine::replay`, its
//!    site answering from generated URLs): the first checkpoint (everything new) and steady-state ones
//!    (the runner's delta of ~5 s of crawling), time split into encode (what
//!    the job's thread does: `Strategy::save` + small codecs + MIME filter
//!    staging) and commit (`Store::commit`: value encoding and redb on the
//!    writer thread, fsync included).
//! 2. Time from start to first request when resuming that job (goal ≤ 2 s):
//!    `Engine::open` + `Runner::new` (load + restore) + the first request
//!    reaching a loopback server, with a warm and a cold page cache.
//! 3. Open/repair time after kill -9 on a ≥ 1 GiB store (goal ≤ 5 s): a child
//!    process (this binary, re-executed) commits back to back and is
//!    SIGKILLed; `Store::open` on the killed file is timed and its data read.
//! 4. Share of CPU spent checkpointing during a crawl of a synthetic site
//!    (goal ≤ 5 %): CPU of the `store-writer` thread plus the job-side encode
//!    (measured `Strategy::save` and MIME filter staging per checkpoint),
//!    over the crawler's CPU (process minus the site server's threads).
//!
//! Run: `cargo bench --bench checkpoint`. Environment knobs:
//! `FORAGER_CKPT_PARTS` (e.g. `1,2`; default all), `FORAGER_CKPT_STORE_MIB`
//! (size of the killed store, default 1024), `FORAGER_CKPT_KILLS` (default 10:
//! 2 after open, 2 after open and a quick-repair commit, the rest inside commits),
//! `FORAGER_CKPT_SITE` (synthetic preset of part 4, default `medium`),
//! `FORAGER_CKPT_FRONTIER` / `FORAGER_CKPT_ACTIONS` (defaults 1 000 000 / 100 000).

mod common;

use anyhow::{anyhow, bail, Context, Result};
use common::random_path;
use forager::engine::{CrawlObserver, Engine, EngineConfig, NoObserver, Runner};
use forager::fetch::FetchConfig;
use forager::store::{
    CommitReport, FrontierEntry, JobCounters, JobDelta, JobRecord, ManifestRow, Store,
};
use forager_bench::sites::server::{Site, SiteRequest, SiteResponse, SiteServer};
use forager_bench::sites::synthetic::{Preset, SyntheticSite};
use forager_core::codec;
use forager_core::config::JobSpec;
use forager_core::extract::{ExtractedLink, PageLinks};
use forager_core::job::replay::{self, Answers, Replay};
use forager_core::learn::{MimeFilterConfig, MimeFilters};
use forager_core::link::url_hash;
use forager_core::link::{Link, LinkId, QueueKey, TagPath};
use forager_core::mime::{Label, MimeFamily};
use forager_core::strategy::{SleepingBandit, Strategy, StrategyKind, StrategyStats};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write as _};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{watch, Notify};
use url::Url;

/// Set in the re-executed child of part 3: the state directory it commits to.
const CHILD_DIR_ENV: &str = "FORAGER_CKPT_CHILD_DIR";
/// The child's [`KillMoment`], by [`KillMoment::env`] name.
const CHILD_MODE_ENV: &str = "FORAGER_CKPT_CHILD_MODE";

/// Job name and RNG seed of the big job (parts 1 and 2).
const BIG_JOB: &str = "big";
const SEED: u64 = 1;
/// Host of the big job's links; mapped to the loopback server in part 2.
const BIG_HOST: &str = "stats.test";

/// Frontier links per page fetched before the first checkpoint (1 M links: 50 k pages).
const LINKS_PER_FETCHED_PAGE: usize = 20;
/// Steady-state checkpoints measured.
const STEADY_ROUNDS: usize = 12;
/// Pages one job fetches in a 5 s checkpoint interval (loopback pace is
/// higher, a 1 s politeness delay gives 5: this is the pessimistic middle).
const PAGES_PER_INTERVAL: usize = 50;
/// New (unseen) links per fetched page.
const NEW_LINKS_PER_PAGE: usize = 8;
/// Links under new tag paths on each page fetched while the actions are founded.
const FOUNDING_LINKS_PER_PAGE: usize = 5_000;

/// redb page cache, as `forager crawl` and the daemon default use.
const CACHE_BYTES: usize = 64 << 20;

const SECTIONS: &[&str] = &[
    "economy",
    "population",
    "labour",
    "prices",
    "trade",
    "health",
    "education",
    "environment",
    "agriculture",
    "energy",
    "transport",
    "housing",
    "justice",
    "tourism",
    "finance",
    "industry",
];
const WORDS: &[&str] = &[
    "annual",
    "quarterly",
    "regional",
    "survey",
    "estimates",
    "index",
    "release",
    "tables",
    "bulletin",
    "methodology",
    "household",
    "income",
    "national",
    "accounts",
    "monthly",
    "statistics",
    "report",
    "summary",
    "detailed",
    "provisional",
];
const TARGET_EXT: &[(&str, &str)] = &[
    ("csv", "text/csv"),
    (
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    ("pdf", "application/pdf"),
    ("zip", "application/zip"),
];

fn main() -> Result<()> {
    if let Ok(dir) = std::env::var(CHILD_DIR_ENV) {
        return child_main(Path::new(&dir));
    }
    let parts = Parts::from_env();
    let config = BenchConfig::from_env()?;
    let scratch = tempfile::Builder::new()
        .prefix("forager-ckpt-")
        .tempdir()
        .context("creating the scratch directory")?;
    eprintln!(
        "checkpoint bench: scratch {}, load {}",
        scratch.path().display(),
        load_average()
    );
    let mut report = Report::default();
    // The loopback servers of parts 2 and 4 run on their own threads, so
    // their CPU can be told apart from the crawler's.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("site-srv")
        .enable_all()
        .build()
        .context("building the server runtime")?;
    let resume_site = Arc::new(ResumeSite::default());
    let resume_server = server_rt.block_on(SiteServer::start(vec![(
        BIG_HOST.to_string(),
        resume_site.clone() as Arc<dyn Site>,
    )]))?;
    let big_dir = scratch.path().join("big");
    if parts.big || parts.resume {
        let costs = big_job_checkpoints(&big_dir, resume_server.port(), &config)?;
        report.big(&costs);
    }
    if parts.resume {
        let runs = resume_times(&big_dir, resume_server.addr(), &resume_site)?;
        let breakdown = restore_breakdown(&big_dir)?;
        report.resume(&ResumeCosts { runs, breakdown });
    }
    // Part 2 done: free the big state's disk before building the 1 GiB store.
    if big_dir.exists() {
        std::fs::remove_dir_all(&big_dir)
            .with_context(|| format!("removing {}", big_dir.display()))?;
    }
    if parts.kill {
        let kills = kill_and_reopen(&scratch.path().join("killed"), &config)?;
        report.kill(&kills);
    }
    if parts.crawl {
        for interval in [Duration::from_secs(5), Duration::from_secs(1)] {
            let share = crawl_share(&server_rt, scratch.path(), config.site, interval)?;
            report.crawl(&share);
        }
    }
    println!("{}", report.finish());
    Ok(())
}

/// Which parts to run (`FORAGER_CKPT_PARTS=1,3`).
struct Parts {
    big: bool,
    resume: bool,
    kill: bool,
    crawl: bool,
}

impl Parts {
    fn from_env() -> Parts {
        let wanted = std::env::var("FORAGER_CKPT_PARTS").unwrap_or_else(|_| "1,2,3,4".into());
        let has = |n: &str| wanted.split(',').any(|p| p.trim() == n);
        Parts {
            big: has("1"),
            resume: has("2"),
            kill: has("3"),
            crawl: has("4"),
        }
    }
}

struct BenchConfig {
    frontier: usize,
    actions: usize,
    store_bytes: u64,
    kills: usize,
    site: Preset,
}

impl BenchConfig {
    fn from_env() -> Result<BenchConfig> {
        fn num(name: &str, default: u64) -> Result<u64> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .replace('_', "")
                    .parse()
                    .with_context(|| format!("{name}={v:?} is not a number")),
                Err(_) => Ok(default),
            }
        }
        let site = match std::env::var("FORAGER_CKPT_SITE") {
            Ok(v) => v.parse()?,
            Err(_) => Preset::Medium,
        };
        Ok(BenchConfig {
            frontier: num("FORAGER_CKPT_FRONTIER", 1_000_000)? as usize,
            actions: num("FORAGER_CKPT_ACTIONS", 100_000)? as usize,
            store_bytes: num("FORAGER_CKPT_STORE_MIB", 1024)? << 20,
            kills: num("FORAGER_CKPT_KILLS", 10)? as usize,
            site,
        })
    }
}

// ---------------------------------------------------------------------------
// Measurement helpers

/// CPU time of the process and of each live thread, from /proc (10 ms ticks).
struct CpuSnapshot {
    process: Duration,
    threads: Vec<ThreadCpu>,
}

struct ThreadCpu {
    tid: u32,
    name: String,
    cpu: Duration,
}

/// `(comm, utime + stime)` of a `/proc/.../stat` line.
fn parse_stat(text: &str, ticks_per_s: f64) -> Option<(String, Duration)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    // Fields after the command: state is field 3, utime 14 and stime 15.
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((
        name,
        Duration::from_secs_f64((utime + stime) as f64 / ticks_per_s),
    ))
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a constant of the running system.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

impl CpuSnapshot {
    fn take() -> Result<CpuSnapshot> {
        let ticks = ticks_per_second();
        let own = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
        let (_, process) = parse_stat(&own, ticks).ok_or_else(|| anyhow!("bad /proc/self/stat"))?;
        let mut threads = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task").context("listing /proc/self/task")? {
            let entry = entry.context("listing /proc/self/task")?;
            let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            // A thread may exit between the listing and the read: skip it.
            let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Some((name, cpu)) = parse_stat(&text, ticks) {
                threads.push(ThreadCpu { tid, name, cpu });
            }
        }
        Ok(CpuSnapshot { process, threads })
    }

    /// CPU used since `earlier` by the threads named `name` (threads that
    /// exited in between are not counted).
    fn threads_since(&self, earlier: &CpuSnapshot, name: &str) -> Duration {
        self.threads
            .iter()
            .filter(|t| t.name == name)
            .map(|t| {
                let before = earlier
                    .threads
                    .iter()
                    .find(|e| e.tid == t.tid)
                    .map_or(Duration::ZERO, |e| e.cpu);
                t.cpu.saturating_sub(before)
            })
            .sum()
    }

    fn process_since(&self, earlier: &CpuSnapshot) -> Duration {
        self.process.saturating_sub(earlier.process)
    }
}

fn writer_cpu() -> Result<Duration> {
    let now = CpuSnapshot::take()?;
    Ok(now
        .threads
        .iter()
        .filter(|t| t.name == "store-writer")
        .map(|t| t.cpu)
        .sum())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn file_len(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("reading the size of {}", path.display()))?
        .len())
}

/// Min, median and max of some durations.
#[derive(Clone, Copy, Debug, Default)]
struct Spread {
    min: Duration,
    median: Duration,
    max: Duration,
}

impl Spread {
    fn of(values: impl IntoIterator<Item = Duration>) -> Spread {
        let mut v: Vec<Duration> = values.into_iter().collect();
        v.sort();
        match (v.first(), v.get(v.len() / 2), v.last()) {
            (Some(&min), Some(&median), Some(&max)) => Spread { min, median, max },
            _ => Spread::default(),
        }
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} / {} / {}",
            ms(self.min),
            ms(self.median),
            ms(self.max)
        )
    }
}

fn ms(d: Duration) -> String {
    let m = d.as_secs_f64() * 1e3;
    if m >= 100.0 {
        format!("{m:.0} ms")
    } else {
        format!("{m:.1} ms")
    }
}

fn size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

fn signed_size(delta: i64) -> String {
    if delta < 0 {
        format!("-{}", size(delta.unsigned_abs()))
    } else {
        format!("+{}", size(delta as u64))
    }
}

fn pct(part: Duration, whole: Duration) -> f64 {
    if whole.is_zero() {
        0.0
    } else {
        100.0 * part.as_secs_f64() / whole.as_secs_f64()
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Synthetic crawl material: URLs, tag paths, anchors shaped like a statistics site

struct UrlGen {
    rng: Xoshiro256PlusPlus,
    /// `host[:port]`.
    authority: String,
    next: u64,
}

impl UrlGen {
    fn new(authority: String, seed: u64) -> UrlGen {
        UrlGen {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            authority,
            next: 0,
        }
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.rng.random_range(0..WORDS.len())]
    }

    fn parse(text: &str) -> Result<Url> {
        Url::parse(text).with_context(|| format!("generated URL {text:?}"))
    }

    /// A new, never generated page URL (70–110 bytes).
    fn page(&mut self) -> Result<Url> {
        let n = self.next;
        self.next += 1;
        let sec = SECTIONS[self.rng.random_range(0..SECTIONS.len())];
        let year = self.rng.random_range(1995..2026);
        let (w1, w2, w3) = (self.word(), self.word(), self.word());
        let a = &self.authority;
        let text = match n % 4 {
            0 => format!("http://{a}/{sec}/{w1}-{w2}/{w3}-{n}.html"),
            1 => format!("http://{a}/{sec}/publications/{year}/{w1}-{w2}-{w3}?page={n}&lang=en"),
            2 => format!("http://{a}/node/{n}"),
            _ => format!("http://{a}/{sec}/{w1}/{w2}-{w3}-{year}/{n}/index.html"),
        };
        Self::parse(&text)
    }

    /// A new target URL.
    fn target(&mut self) -> Result<(Url, &'static str)> {
        let n = self.next;
        self.next += 1;
        let sec = SECTIONS[self.rng.random_range(0..SECTIONS.len())];
        let year = self.rng.random_range(1995..2026);
        let (w1, w2) = (self.word(), self.word());
        let (ext, mime) = TARGET_EXT[self.rng.random_range(0..TARGET_EXT.len())];
        let a = &self.authority;
        let url = Self::parse(&format!(
            "http://{a}/files/{sec}/{year}/{w1}-{w2}-{n}.{ext}"
        ))?;
        Ok((url, mime))
    }

    /// A new link found on a page: mostly pages, some targets, a few images
    /// (what a GET of it answers: [`truth_of`]).
    fn discovered(&mut self) -> Result<Url> {
        let roll = self.rng.random_range(0..100);
        if roll < 8 {
            Ok(self.target()?.0)
        } else if roll < 11 {
            let n = self.next;
            self.next += 1;
            Self::parse(&format!("http://{}/img/figure-{n}.png", self.authority))
        } else {
            self.page()
        }
    }

    fn anchor(&mut self) -> String {
        let n = self.rng.random_range(2..6);
        (0..n).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

/// What a GET of a generated URL answers.
fn truth_of(url: &Url) -> (Label, &'static str) {
    let path = url.path();
    if path.ends_with(".png") {
        return (Label::Neither, "image/png");
    }
    for (ext, mime) in TARGET_EXT {
        if path.strip_suffix(ext).is_some_and(|p| p.ends_with('.')) {
            return (Label::Target, mime);
        }
    }
    (Label::Html, "text/html")
}

// ---------------------------------------------------------------------------
// Part 1: the big job's checkpoints

/// Bytes of a delta, as the store writes them (encoded values; keys are
/// the job name and 8 bytes).
#[derive(Clone, Copy, Debug, Default)]
struct DeltaBytes {
    /// The learner's whole state (`Strategy::save`).
    strategy_state: u64,
    /// What the store wrote of it: the chunks that changed and the chunk
    /// index (`Store::state_bytes_written`, schema 6).
    state_written: u64,
    /// The job record without its learned state.
    record: u64,
    frontier: u64,
    frontier_rows: u64,
    removed_rows: u64,
    seen_rows: u64,
    manifest: u64,
    shared: u64,
}

impl DeltaBytes {
    fn total(&self, job: &str) -> u64 {
        let key = job.len() as u64 + 8;
        self.record
            + self.state_written
            + self.frontier
            + self.manifest
            + self.shared
            + key * (self.frontier_rows + self.seen_rows + self.removed_rows)
    }
}

/// What one checkpoint cost.
#[derive(Clone, Copy, Debug, Default)]
struct CheckpointCost {
    /// Job thread: the core's `take_checkpoint` (`Strategy::save`, small
    /// codecs, the seen hashes), MIME filter staging.
    encode: Duration,
    /// `Strategy::save` alone, timed on a call of its own just before
    /// (`encode` does the same work once more).
    save: Duration,
    /// `Store::commit`, from send to durable ack.
    commit: Duration,
    /// Writer thread's own measure of the transaction ([`CommitReport::duration`]).
    transaction: Duration,
    /// CPU of the writer thread during the commit.
    writer_cpu: Duration,
    /// What encoding the delta's values costs (done again on the bench thread
    /// to split `commit` into codec and redb).
    value_codec: Duration,
    bytes: DeltaBytes,
    file_growth: i64,
}

struct BigJobCosts {
    actions: usize,
    distinct_paths: usize,
    frontier: usize,
    seen: usize,
    manifest_rows: u64,
    build: Duration,
    /// Encoded size of the action index alone (within the strategy state).
    action_index_bytes: u64,
    /// Estimated encoded size of the index's tag-path memo (every distinct path).
    memo_bytes: u64,
    first: CheckpointCost,
    steady: Vec<CheckpointCost>,
    file_after_first: u64,
    file_after_steady: u64,
}

/// What the next page of the big job's site links to.
#[derive(Clone, Copy, Debug, Default)]
struct PagePlan {
    /// Pages under new tag paths (each founds or joins an action), known to
    /// the MIME filters.
    new_path_pages: usize,
    /// Pages under the site's existing tag paths, known to the MIME filters.
    known_pages: usize,
    /// Links the filters know nothing of (pages, targets, images), triaged
    /// by the learner alone.
    discovered: usize,
    /// Share of `discovered` under a new tag path.
    new_path_share: f64,
}

/// The big job's site: each page links to what [`PagePlan`] says, every
/// answer follows [`truth_of`], and what a GET or a HEAD tells is remembered
/// by the MIME filters as the engine does.
struct BigSite {
    gen: UrlGen,
    rng: Xoshiro256PlusPlus,
    /// Distinct tag paths, the first ones most used (templates).
    paths: Vec<TagPath>,
    filters: MimeFilters,
    plan: PagePlan,
    /// The last page's links the MIME filters know as pages: the runner
    /// queues them without a HEAD.
    known: HashSet<Url>,
    /// Targets fetched by the step being replayed, for its manifest rows.
    saved: Vec<(Link, &'static str)>,
    /// A generated URL that did not parse (the step is then an error).
    failed: Option<anyhow::Error>,
}

impl BigSite {
    /// A tag path for a new link: 80 % from the 2 000 first paths (a site's
    /// templates), else any known path.
    fn pick_path(&mut self) -> TagPath {
        let n = self.paths.len();
        let i = if self.rng.random_bool(0.8) {
            self.rng.random_range(0..n.min(2_000))
        } else {
            self.rng.random_range(0..n)
        };
        self.paths[i].clone()
    }

    fn new_path(&mut self) -> TagPath {
        let p = TagPath::new(random_path(&mut self.rng));
        self.paths.push(p.clone());
        p
    }

    fn link(&mut self, url: Url, tag_path: TagPath) -> ExtractedLink {
        ExtractedLink {
            url,
            tag_path,
            anchor: self.gen.anchor(),
        }
    }

    fn plan_links(&mut self) -> Result<Vec<ExtractedLink>> {
        let plan = self.plan;
        let mut links =
            Vec::with_capacity(plan.new_path_pages + plan.known_pages + plan.discovered);
        for i in 0..plan.new_path_pages + plan.known_pages {
            let path = if i < plan.new_path_pages {
                self.new_path()
            } else {
                self.pick_path()
            };
            let url = self.gen.page()?;
            self.known.insert(url.clone());
            links.push(self.link(url, path));
        }
        for _ in 0..plan.discovered {
            let found = self.gen.discovered()?;
            let path = if self.rng.random_bool(plan.new_path_share) {
                self.new_path()
            } else {
                self.pick_path()
            };
            links.push(self.link(found, path));
        }
        Ok(links)
    }
}

impl Answers for BigSite {
    fn label(&mut self, url: &Url) -> Option<Label> {
        let (label, mime) = truth_of(url);
        self.filters.insert(url, MimeFamily::of(mime));
        Some(label)
    }

    fn links(&mut self, page: &Link) -> PageLinks {
        // The previous page's admission is over: its known links were triaged.
        self.known.clear();
        let links = self.plan_links().unwrap_or_else(|e| {
            self.failed.get_or_insert(e);
            Vec::new()
        });
        replay::page_links(&page.url, links)
    }

    fn target(&mut self, link: &Link, _requests: u64) -> bool {
        self.saved.push((link.clone(), truth_of(&link.url).1));
        true
    }

    fn known(&self, url: &Url) -> Option<Label> {
        self.known.contains(url).then_some(Label::Html)
    }
}

/// The big job of part 1 (and the job part 2 resumes).
fn big_spec(port: u16) -> Result<JobSpec> {
    let seed = Url::parse(&format!("http://{BIG_HOST}:{port}/"))?;
    Ok(sb_spec(BIG_JOB, seed))
}

/// An sb job of one loopback seed, with no politeness delay and no budget.
fn sb_spec(name: &str, seed: Url) -> JobSpec {
    let mut spec = JobSpec::new(name, vec![seed]);
    spec.strategy = StrategyKind::Sb;
    spec.seed = SEED;
    spec.politeness.delay = Duration::ZERO;
    spec.budget.requests = 0;
    spec.budget.bytes = 0;
    spec.budget.early_stop = false;
    spec
}

/// The big job, crawled by the engine's own [`forager::engine::JobCore`]
/// (through [`Replay`]) against [`BigSite`].
struct BigJob {
    replay: Replay,
    site: BigSite,
    /// Manifest rows added (one per target saved).
    manifest_rows: u64,
}

impl BigJob {
    fn new(port: u16) -> Result<BigJob> {
        let spec = big_spec(port)?;
        Ok(BigJob {
            replay: Replay::new(spec, Box::new(SleepingBandit::new(SEED))),
            site: BigSite {
                gen: UrlGen::new(format!("{BIG_HOST}:{port}"), 17),
                rng: Xoshiro256PlusPlus::seed_from_u64(23),
                paths: Vec::new(),
                filters: MimeFilters::new(MimeFilterConfig::default()),
                plan: PagePlan::default(),
                known: HashSet::new(),
                saved: Vec::new(),
                failed: None,
            },
            manifest_rows: 0,
        })
    }

    /// The learner's state as the next checkpoint saves it, decoded: what
    /// the bench reads of sb (its action index) without reaching into the core.
    fn learner(&mut self) -> Result<SleepingBandit> {
        let mut sb = SleepingBandit::new(SEED);
        sb.restore(&self.replay.strategy().save())
            .context("decoding the job's learner state")?;
        Ok(sb)
    }

    fn frontier(&self) -> usize {
        self.replay.core.frontier_len()
    }

    /// One crawl step of the engine's core, the popped page linking to what `plan` says.
    fn step(&mut self, plan: PagePlan) -> Result<()> {
        self.site.plan = plan;
        if self.replay.step(&mut self.site).is_none() {
            bail!("the frontier ran dry");
        }
        if let Some(e) = self.site.failed.take() {
            return Err(e);
        }
        for (link, mime) in std::mem::take(&mut self.site.saved) {
            let row = manifest_row(&link, mime, self.manifest_rows);
            self.replay.core.add_manifest_row(row);
            self.manifest_rows += 1;
        }
        Ok(())
    }

    /// Everything before the first checkpoint: actions founded by new tag
    /// paths, the frontier filled, pages fetched along the way.
    fn build(&mut self, actions: usize, frontier: usize) -> Result<()> {
        let started = Instant::now();
        // Every path that founds or joins an action gets one link; the
        // learner is decoded after each page to count its actions.
        loop {
            let sb = self.learner()?;
            let have = sb.actions().len();
            if have >= actions {
                break;
            }
            if sb.actions().overflowed() > 0 {
                bail!(
                    "the learner's caps (learn::actions) stop the index at {have} actions, below the {actions} asked for"
                );
            }
            self.step(PagePlan {
                new_path_pages: (actions - have).min(FOUNDING_LINKS_PER_PAGE),
                ..PagePlan::default()
            })?;
        }
        eprintln!(
            "  {actions}+ actions from {} distinct tag paths in {:.1?}",
            self.site.paths.len(),
            started.elapsed()
        );
        // Fill the frontier: each page fetched links to known pages and
        // discovers a few links the filters do not know (labels, rewards,
        // targets and HEADs).
        let fill = PagePlan {
            known_pages: LINKS_PER_FETCHED_PAGE,
            discovered: 2,
            ..PagePlan::default()
        };
        while self.frontier() < frontier {
            self.step(fill)?;
        }
        let counters = self.replay.core.counters();
        eprintln!(
            "  frontier {} links, {} seen, {} pages fetched, {} targets, {} HEADs, {} dropped after {:.1?}",
            self.frontier(),
            self.replay.core.seen_len(),
            counters.pages,
            self.manifest_rows,
            counters.heads,
            counters.dropped,
            started.elapsed()
        );
        Ok(())
    }

    /// One checkpoint as `Runner::checkpoint` takes and commits it: the
    /// core's delta and record, the MIME filters staged, `Store::commit`.
    fn checkpoint(&mut self, store: &Store) -> Result<CheckpointCost> {
        let db = store.path().to_path_buf();
        let file_before = file_len(&db)?;
        // `Strategy::save` alone, on a call of its own: the checkpoint
        // below saves the same state again within `encode`.
        let save_started = Instant::now();
        std::hint::black_box(self.replay.strategy().save());
        let save = save_started.elapsed();
        let started = Instant::now();
        let mut taken = self.replay.take_checkpoint(now_secs());
        forager::engine::filters::stage(&mut self.site.filters, &mut taken.delta);
        let encode = started.elapsed();
        let delta = &taken.delta;

        // The writer encodes every value again inside `commit`: measure that
        // part here so the commit time splits into codec and redb.
        let codec_started = Instant::now();
        let mut bytes = DeltaBytes {
            strategy_state: delta
                .record
                .as_ref()
                .map_or(0, |r| r.strategy_state.len() as u64),
            record: delta.record.as_ref().map_or(0, |r| {
                (codec::encode(r).len() - r.strategy_state.len()) as u64
            }),
            frontier_rows: delta.frontier_added.len() as u64,
            removed_rows: delta.frontier_removed.len() as u64,
            seen_rows: delta.seen_added.len() as u64,
            ..DeltaBytes::default()
        };
        for (_, e) in &delta.frontier_added {
            bytes.frontier += codec::encode(e.as_ref()).len() as u64;
        }
        for (_, r) in &delta.manifest_added {
            bytes.manifest += codec::encode(r).len() as u64;
        }
        bytes.shared = delta
            .shared
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum();
        let value_codec = codec_started.elapsed();

        let mut commit = Duration::ZERO;
        let mut writer = Duration::ZERO;
        let state_before = store.state_bytes_written();
        let report: CommitReport = self.replay.commit_with(taken, |delta| {
            let cpu_before = writer_cpu()?;
            let commit_started = Instant::now();
            let report = store.commit_blocking(delta)?;
            commit = commit_started.elapsed();
            writer = writer_cpu()?.saturating_sub(cpu_before);
            Ok::<_, anyhow::Error>(report)
        })?;
        bytes.state_written = store.state_bytes_written() - state_before;
        let file_after = file_len(&db)?;
        Ok(CheckpointCost {
            encode,
            save,
            commit,
            transaction: report.duration,
            writer_cpu: writer,
            value_codec,
            bytes,
            file_growth: file_after as i64 - file_before as i64,
        })
    }
}

/// The manifest row of the `n`-th target saved.
fn manifest_row(link: &Link, mime: &str, n: u64) -> ManifestRow {
    let name = format!("{:064x}", url_hash(&link.url));
    ManifestRow {
        mime: mime.to_string(),
        sha256: name.clone(),
        referrer: link.referrer.as_ref().map(|u| u.to_string()),
        tag_path: link.tag_path.to_string(),
        ..common::csv_row(
            link.url.to_string(),
            20_000 + n % 50_000,
            format!("{name}.csv"),
        )
    }
}

fn big_job_checkpoints(dir: &Path, port: u16, config: &BenchConfig) -> Result<BigJobCosts> {
    eprintln!(
        "part 1: building a job with {} frontier links and {} actions",
        config.frontier, config.actions
    );
    let started = Instant::now();
    let mut job = BigJob::new(port)?;
    job.build(config.actions, config.frontier)?;
    let build = started.elapsed();
    let sb = job.learner()?;
    let action_index_bytes = codec::encode(sb.actions()).len() as u64;
    let frontier_at_first = job.frontier();
    // bincode: a varint length, the bytes, a varint action id (~3 bytes at 100 k).
    let memo_bytes = job
        .site
        .paths
        .iter()
        .map(|p| p.as_str().len() as u64 + 1 + 3)
        .sum();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let store = Store::open(dir, CACHE_BYTES)?;
    eprintln!("  first checkpoint");
    let first = job.checkpoint(&store)?;
    let file_after_first = file_len(store.path())?;
    eprintln!(
        "  first: encode {}, commit {}, {} written",
        ms(first.encode),
        ms(first.commit),
        size(first.bytes.total(BIG_JOB))
    );
    let steady_page = PagePlan {
        discovered: NEW_LINKS_PER_PAGE,
        // One new tag path every 8 links (3 of 25 per page in benches/learn.rs).
        new_path_share: 0.125,
        ..PagePlan::default()
    };
    let mut steady = Vec::new();
    for round in 0..STEADY_ROUNDS {
        for _ in 0..PAGES_PER_INTERVAL {
            job.step(steady_page)?;
        }
        let cost = job.checkpoint(&store)?;
        eprintln!(
            "  steady {round}: encode {} (save {}), commit {}, {} written ({} of a learned state of {}), file {}",
            ms(cost.encode),
            ms(cost.save),
            ms(cost.commit),
            size(cost.bytes.total(BIG_JOB)),
            size(cost.bytes.state_written),
            size(cost.bytes.strategy_state),
            signed_size(cost.file_growth)
        );
        steady.push(cost);
    }
    let file_after_steady = file_len(store.path())?;
    let sb = job.learner()?;
    Ok(BigJobCosts {
        actions: sb.actions().len(),
        distinct_paths: sb.actions().known_paths(),
        frontier: frontier_at_first,
        seen: job.replay.core.seen_len(),
        manifest_rows: job.manifest_rows,
        build,
        action_index_bytes,
        memo_bytes,
        first,
        steady,
        file_after_first,
        file_after_steady,
    })
}

// ---------------------------------------------------------------------------
// Part 2: resuming the big job

/// The seed host of the resumed job: notes when the first requests arrive.
#[derive(Default)]
struct ResumeSite {
    first_any: Mutex<Option<Instant>>,
    first_page: Mutex<Option<Instant>>,
    page_arrived: Notify,
}

impl ResumeSite {
    fn reset(&self) {
        *lock(&self.first_any) = None;
        *lock(&self.first_page) = None;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Site for ResumeSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let now = Instant::now();
        lock(&self.first_any).get_or_insert(now);
        if req.path == "/robots.txt" {
            return SiteResponse::ok("text/plain", "User-agent: *\nAllow: /\n");
        }
        let mut first_page = lock(&self.first_page);
        if first_page.is_none() {
            *first_page = Some(now);
            self.page_arrived.notify_one();
        }
        SiteResponse::html("<html><body><p>resumed</p></body></html>")
    }
}

#[derive(Clone, Copy, Debug)]
struct ResumeTime {
    cold: bool,
    open: Duration,
    runner_new: Duration,
    first_request: Duration,
    first_page: Duration,
    frontier: u64,
}

/// Drop the file's pages from the page cache, so the next open reads the disk.
fn evict_from_page_cache(path: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    // SAFETY: posix_fadvise only reads the descriptor, which `file` keeps open.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        bail!("posix_fadvise({}) failed: {rc}", path.display());
    }
    Ok(())
}

fn resume_times(dir: &Path, server: SocketAddr, site: &ResumeSite) -> Result<Vec<ResumeTime>> {
    eprintln!("part 2: resuming the job");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("crawl-rt")
        .enable_all()
        .build()
        .context("building the crawl runtime")?;
    let spec = big_spec(server.port())?;
    let mut out = Vec::new();
    for cold in [false, false, false, true, true] {
        if cold {
            evict_from_page_cache(&dir.join("forager.redb"))?;
        }
        site.reset();
        let t = rt.block_on(resume_once(dir, server, &spec, site, cold))?;
        eprintln!(
            "  {}: open {}, runner {}, first request {}, first page {}",
            if cold { "cold" } else { "warm" },
            ms(t.open),
            ms(t.runner_new),
            ms(t.first_request),
            ms(t.first_page)
        );
        out.push(t);
    }
    Ok(out)
}

/// Resume figures: whole resumes, and one `Runner::new` taken apart.
struct ResumeCosts {
    runs: Vec<ResumeTime>,
    breakdown: RestoreBreakdown,
}

/// Where `Runner::new`'s time goes, redone step by step with the public API.
#[derive(Clone, Copy, Debug)]
struct RestoreBreakdown {
    /// `Store::job_record`: read and decode the record (with the learned state).
    record: Duration,
    /// `Store::load_job`: read the frontier keys, seen set and manifest.
    load: Duration,
    /// `Strategy::restore`: decode the learned state, rebuild derived indexes
    /// (the runner does it on a second thread while `load` runs).
    restore: Duration,
    /// Collect the seen set.
    seen_set: Duration,
    /// Push the frontier's ids and keys into the strategy.
    pushes: Duration,
    frontier: usize,
    seen: usize,
}

fn restore_breakdown(dir: &Path) -> Result<RestoreBreakdown> {
    let store = Store::open(dir, CACHE_BYTES)?;
    let t = Instant::now();
    let record = store
        .job_record(BIG_JOB)?
        .ok_or_else(|| anyhow!("job {BIG_JOB} has no stored record"))?;
    let record_time = t.elapsed();
    let t = Instant::now();
    let loaded = store.load_job(BIG_JOB)?;
    let load = t.elapsed();
    let t = Instant::now();
    let mut sb = SleepingBandit::new(SEED);
    sb.restore(&record.strategy_state)?;
    let restore = t.elapsed();
    let frontier = loaded.frontier.len();
    let t = Instant::now();
    let seen: std::collections::HashSet<u64> = loaded.seen.into_iter().collect();
    let seen_set = t.elapsed();
    let t = Instant::now();
    for (id, key) in &loaded.frontier {
        sb.push(*id, *key);
    }
    let pushes = t.elapsed();
    Ok(RestoreBreakdown {
        record: record_time,
        load,
        restore,
        seen_set,
        pushes,
        frontier,
        seen: seen.len(),
    })
}

async fn resume_once(
    dir: &Path,
    server: SocketAddr,
    spec: &JobSpec,
    site: &ResumeSite,
    cold: bool,
) -> Result<ResumeTime> {
    let started = Instant::now();
    let engine = Engine::open(EngineConfig {
        state_dir: dir.to_path_buf(),
        fetch: FetchConfig {
            allow_private: true,
            resolve: vec![(BIG_HOST.to_string(), server)],
            ..FetchConfig::default()
        },
        checkpoint_interval: Duration::from_secs(5),
        cache_bytes: CACHE_BYTES,
    })?;
    let open = started.elapsed();
    let mut observer = NoObserver;
    let runner = Runner::new(&engine, spec, &mut observer)?;
    let runner_new = started.elapsed() - open;
    let (stop_tx, stop_rx) = watch::channel(false);
    let waiter = async {
        // A runner that fails before its first page must not hang the bench.
        let arrived =
            tokio::time::timeout(Duration::from_secs(60), site.page_arrived.notified()).await;
        let _ = stop_tx.send(true);
        arrived.is_ok()
    };
    let (outcome, arrived) = tokio::join!(runner.run(stop_rx), waiter);
    let outcome = outcome?;
    if !arrived {
        bail!("no page request reached the server within 60 s of the resume");
    }
    let since = |t: &Mutex<Option<Instant>>| {
        (*lock(t))
            .map(|at| at.saturating_duration_since(started))
            .ok_or_else(|| anyhow!("no request recorded"))
    };
    Ok(ResumeTime {
        cold,
        open,
        runner_new,
        first_request: since(&site.first_any)?,
        first_page: since(&site.first_page)?,
        frontier: outcome.frontier_left as u64,
    })
}

// ---------------------------------------------------------------------------
// Part 3: kill -9 during commits, then open a ≥ 1 GiB store

/// Frontier entries per bulk commit, and bulk commits per job.
const BULK_ROWS: usize = 100_000;
const BULK_COMMITS_PER_JOB: usize = 4;
/// Rows per commit of the child (a big checkpoint: ~6 MiB of frontier,
/// an 8 MiB learner state, 20 k seen keys).
const CHILD_ROWS: usize = 20_000;
const CHILD_STATE_BYTES: usize = 8 << 20;
const CHILD_JOB: &str = "writer";

/// Distinct frontier entries, reused with fresh ids to fill a store quickly.
fn entry_pool(count: usize, authority: &str) -> Result<Vec<FrontierEntry>> {
    let mut gen = UrlGen::new(authority.to_string(), 99);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(98);
    let paths: Vec<TagPath> = (0..500)
        .map(|_| TagPath::new(random_path(&mut rng)))
        .collect();
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let url = gen.page()?;
        let referrer = Some(std::sync::Arc::new(gen.page()?));
        out.push(FrontierEntry {
            link: Link {
                url,
                tag_path: paths[rng.random_range(0..paths.len())].clone(),
                anchor: gen.anchor(),
                depth: rng.random_range(1..12),
                referrer,
                pattern_run: 0,
            },
            key: QueueKey {
                slot: rng.random_range(0..100_000),
                score: 0.0,
            },
        });
    }
    Ok(out)
}

/// Frontier size of every bulk job, to check the reopened store.
struct BulkStore {
    jobs: Vec<(String, usize)>,
    bytes: u64,
    build: Duration,
}

fn build_bulk_store(dir: &Path, goal: u64) -> Result<BulkStore> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();
    let pool = entry_pool(20_000, "bulk.test")?;
    let store = Store::open(dir, CACHE_BYTES)?;
    let mut jobs: Vec<(String, usize)> = Vec::new();
    let mut batch = 0usize;
    while file_len(store.path())? < goal {
        let job = format!("bulk-{:02}", batch / BULK_COMMITS_PER_JOB);
        let first_id = (batch % BULK_COMMITS_PER_JOB * BULK_ROWS) as u64;
        let mut delta = JobDelta::new(&job);
        delta.frontier_added = (0..BULK_ROWS)
            .map(|i| {
                let id = first_id + i as u64;
                (
                    LinkId(id),
                    Arc::new(pool[(batch * 7919 + i) % pool.len()].clone()),
                )
            })
            .collect();
        delta.seen_added = (0..BULK_ROWS as u64)
            .map(|i| (first_id + i).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        delta.record = Some(JobRecord {
            strategy: "sb".into(),
            seed: SEED,
            next_link_id: first_id + BULK_ROWS as u64,
            ..JobRecord::default()
        });
        store.commit_blocking(delta)?;
        match jobs.last_mut() {
            Some((name, n)) if *name == job => *n += BULK_ROWS,
            _ => jobs.push((job, BULK_ROWS)),
        }
        batch += 1;
    }
    let bytes = file_len(store.path())?;
    drop(store);
    eprintln!(
        "  built a {} store ({} jobs, {} frontier rows) in {:.1?}",
        size(bytes),
        jobs.len(),
        batch * BULK_ROWS,
        started.elapsed()
    );
    Ok(BulkStore {
        jobs,
        bytes,
        build: started.elapsed(),
    })
}

/// The duration of a `commit N MICROS` line of the child.
fn commit_micros(line: &str) -> Option<u64> {
    let mut f = line.split_whitespace();
    (f.next() == Some("commit"))
        .then(|| f.nth(1).and_then(|v| v.parse().ok()))
        .flatten()
}

/// What the child does until it is killed.
fn child_main(dir: &Path) -> Result<()> {
    let mode = std::env::var(CHILD_MODE_ENV).unwrap_or_else(|_| "commit".into());
    let started = Instant::now();
    let store = Store::open(dir, CACHE_BYTES)?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "open {}", started.elapsed().as_micros())?;
    if mode == KillMoment::AfterOpenQuickCommit.env() {
        // One small commit with quick repair on, as a checkpoint makes.
        let mut delta = JobDelta::new(CHILD_JOB);
        delta.seen_added = vec![1];
        store.commit_blocking(delta)?;
    }
    if mode != KillMoment::DuringCommits.env() {
        // Killed after opening, before any checkpoint of its own.
        writeln!(stdout, "ready")?;
        stdout.flush()?;
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let pool = entry_pool(CHILD_ROWS, "writer.test")?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(now_secs());
    let mut state = vec![0u8; CHILD_STATE_BYTES];
    let start_id = store.job_record(CHILD_JOB)?.map_or(0, |r| r.next_link_id);
    let mut next_id = start_id;
    for n in 0u64.. {
        rng.fill(&mut state[..]);
        let mut delta = JobDelta::new(CHILD_JOB);
        delta.frontier_added = pool
            .iter()
            .enumerate()
            .map(|(i, e)| (LinkId(next_id + i as u64), Arc::new(e.clone())))
            .collect();
        // Keep the job's frontier bounded: drop the previous batch.
        if next_id >= start_id + CHILD_ROWS as u64 {
            delta.frontier_removed = (next_id - CHILD_ROWS as u64..next_id).map(LinkId).collect();
        }
        delta.seen_added = (next_id..next_id + CHILD_ROWS as u64).collect();
        next_id += CHILD_ROWS as u64;
        delta.record = Some(JobRecord {
            strategy: "sb".into(),
            seed: SEED,
            strategy_state: state.clone(),
            next_link_id: next_id,
            ..JobRecord::default()
        });
        // "begin" tells the parent a commit is under way, so it can kill inside it.
        writeln!(stdout, "begin {n}")?;
        stdout.flush()?;
        let t = Instant::now();
        store.commit_blocking(delta)?;
        writeln!(stdout, "commit {n} {}", t.elapsed().as_micros())?;
        if n == 0 {
            writeln!(stdout, "ready")?;
        }
        stdout.flush()?;
    }
    Ok(())
}

/// When the child is killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KillMoment {
    /// After `Store::open`, before its first checkpoint.
    AfterOpen,
    /// After `Store::open` and one tiny commit with quick repair (what a
    /// quick-repair schema commit at open would give).
    AfterOpenQuickCommit,
    /// Inside one of back-to-back checkpoint commits.
    DuringCommits,
}

impl KillMoment {
    const ALL: [KillMoment; 3] = [
        KillMoment::DuringCommits,
        KillMoment::AfterOpen,
        KillMoment::AfterOpenQuickCommit,
    ];

    fn env(self) -> &'static str {
        match self {
            KillMoment::AfterOpen => "idle",
            KillMoment::AfterOpenQuickCommit => "idle-committed",
            KillMoment::DuringCommits => "commit",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            KillMoment::AfterOpen => "after open, before the first checkpoint",
            KillMoment::AfterOpenQuickCommit => {
                "after open and one small quick-repair commit (the proposed fix)"
            }
            KillMoment::DuringCommits => "inside back-to-back checkpoint commits",
        }
    }
}

#[derive(Clone, Debug)]
struct KillRound {
    moment: KillMoment,
    /// Time from the start of the targeted commit (or from "ready") to the kill.
    after: Duration,
    /// Commits the child finished before the kill.
    commits_done: u64,
    /// The targeted commit had not finished when the kill landed.
    inside_commit: bool,
    open: Duration,
    verify: Duration,
    rows_checked: usize,
}

struct KillCosts {
    store: BulkStore,
    rounds: Vec<KillRound>,
    clean_open: Duration,
}

fn kill_and_reopen(dir: &Path, config: &BenchConfig) -> Result<KillCosts> {
    eprintln!(
        "part 3: a {} store, {} kills",
        size(config.store_bytes),
        config.kills
    );
    let store = build_bulk_store(dir, config.store_bytes)?;
    let clean_open = {
        let t = Instant::now();
        let s = Store::open(dir, CACHE_BYTES)?;
        let d = t.elapsed();
        drop(s);
        d
    };
    let exe = std::env::current_exe().context("locating the bench binary")?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4242);
    let mut rounds = Vec::new();
    // Two kills of each idle kind, the rest inside commits.
    let moments = (0..config.kills).map(|k| match k {
        0 | 1 => KillMoment::AfterOpen,
        2 | 3 => KillMoment::AfterOpenQuickCommit,
        _ => KillMoment::DuringCommits,
    });
    for (k, moment) in moments.enumerate() {
        let idle = moment != KillMoment::DuringCommits;
        let mut child = Command::new(&exe)
            .env(CHILD_DIR_ENV, dir)
            .env(CHILD_MODE_ENV, moment.env())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the committing child")?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("child has no stdout"))?;
        let mut lines = BufReader::new(stdout).lines();
        let mut next_line = || -> Result<String> {
            match lines.next() {
                Some(line) => line.context("reading the child's output"),
                None => bail!("the child exited early"),
            }
        };
        let mut commits_done = 0u64;
        let mut first_commit = Duration::ZERO;
        loop {
            let line = next_line()?;
            if let Some(us) = commit_micros(&line) {
                commits_done += 1;
                first_commit = Duration::from_micros(us);
            }
            if line == "ready" {
                break;
            }
        }
        // Idle: any moment. Committing: a random point inside commit 1, 2 or 3
        // (a commit lasts about as long as the first one did).
        let target = rng.random_range(1..=3u64);
        let after = if idle {
            Duration::from_millis(rng.random_range(100..1_500))
        } else {
            loop {
                let line = next_line()?;
                if commit_micros(&line).is_some() {
                    commits_done += 1;
                }
                if line == format!("begin {target}") {
                    break;
                }
            }
            first_commit.mul_f64(rng.random_range(0.05..0.95))
        };
        std::thread::sleep(after);
        // std's Child::kill sends SIGKILL on Unix.
        child.kill().context("killing the child")?;
        child.wait().context("reaping the child")?;
        let mut target_done = false;
        while let Ok(line) = next_line() {
            if commit_micros(&line).is_some() {
                commits_done += 1;
                target_done |= line.starts_with(&format!("commit {target} "));
            }
        }
        let inside_commit = !idle && !target_done;
        let t = Instant::now();
        let reopened = Store::open(dir, CACHE_BYTES)
            .with_context(|| format!("reopening the store after kill {k}"))?;
        let open = t.elapsed();
        let t = Instant::now();
        let (name, expected) = &store.jobs[k % store.jobs.len()];
        let loaded = reopened.load_job(name)?;
        if loaded.frontier.len() != *expected {
            bail!(
                "after kill {k}, job {name} has {} frontier rows, expected {expected}",
                loaded.frontier.len()
            );
        }
        let names = reopened.job_names()?;
        if names.len() < store.jobs.len() {
            bail!("after kill {k}, only {} jobs are left", names.len());
        }
        if !idle && reopened.job_record(CHILD_JOB)?.is_none() {
            bail!("after kill {k}, the child's job record is missing");
        }
        let verify = t.elapsed();
        drop(reopened);
        eprintln!(
            "  kill {k} ({}) {} after ready, {commits_done} commits: open {}, verify {}",
            moment.env(),
            ms(after),
            ms(open),
            ms(verify)
        );
        rounds.push(KillRound {
            moment,
            after,
            commits_done,
            inside_commit,
            open,
            verify,
            rows_checked: loaded.frontier.len(),
        });
    }
    Ok(KillCosts {
        store,
        rounds,
        clean_open,
    })
}

// ---------------------------------------------------------------------------
// Part 4: CPU share of checkpoints in a crawl

#[derive(Default)]
struct CommitLog {
    commits: Vec<Duration>,
}

impl CrawlObserver for CommitLog {
    fn checkpoint(&mut self, _: &JobCounters, _: &StrategyStats, commit: &CommitReport) {
        self.commits.push(commit.duration);
    }
}

struct CrawlShare {
    site: &'static str,
    interval: Duration,
    wall: Duration,
    requests: u64,
    checkpoints: usize,
    commits: Spread,
    crawler_cpu: Duration,
    server_cpu: Duration,
    writer_cpu: Duration,
    /// `Strategy::save` on the final state (the largest), per checkpoint.
    save: Duration,
    /// MIME filters' part of a checkpoint, redone with as many URLs per checkpoint.
    filters: FilterCost,
    state_bytes: u64,
    actions: u64,
}

impl CrawlShare {
    /// Job-side encode, upper bound: every checkpoint at the final state's cost.
    fn encode_cpu(&self) -> Duration {
        (self.save + self.filters.stage) * self.checkpoints as u32
    }

    fn share(&self) -> f64 {
        pct(self.writer_cpu + self.encode_cpu(), self.crawler_cpu)
    }
}

fn crawl_share(
    server_rt: &tokio::runtime::Runtime,
    scratch: &Path,
    preset: Preset,
    interval: Duration,
) -> Result<CrawlShare> {
    eprintln!(
        "part 4: crawl of synthetic {} with checkpoints every {:?}",
        preset.name(),
        interval
    );
    const HOST: &str = "ckpt.test";
    let site = SyntheticSite::preset(preset, 1)?;
    let start = site.start_path().to_string();
    let server = server_rt.block_on(SiteServer::start(vec![(
        HOST.to_string(),
        Arc::new(site) as Arc<dyn Site>,
    )]))?;
    let state_dir = scratch.join(format!(
        "crawl-{}-{}ms",
        preset.name(),
        interval.as_millis()
    ));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("crawl-rt")
        .enable_all()
        .build()
        .context("building the crawl runtime")?;
    let seed = Url::parse(&format!("http://{HOST}:{}{start}", server.port()))?;
    let spec = sb_spec("cpu", seed);
    let mut result = rt.block_on(async {
        let engine = Engine::open(EngineConfig {
            state_dir: state_dir.clone(),
            fetch: FetchConfig {
                allow_private: true,
                resolve: vec![(HOST.to_string(), server.addr())],
                ..FetchConfig::default()
            },
            checkpoint_interval: interval,
            cache_bytes: CACHE_BYTES,
        })?;
        let mut log = CommitLog::default();
        let before = CpuSnapshot::take()?;
        let started = Instant::now();
        let (_stop_tx, stop_rx) = watch::channel(false);
        let outcome = Runner::new(&engine, &spec, &mut log)?.run(stop_rx).await?;
        let wall = started.elapsed();
        let after = CpuSnapshot::take()?;
        let server_cpu = after.threads_since(&before, "site-srv");
        let writer_cpu = after.threads_since(&before, "store-writer");
        let crawler_cpu = after.process_since(&before).saturating_sub(server_cpu);
        // Job-side cost of one checkpoint, on the final (largest) learned state.
        let record = engine
            .store
            .job_record(&spec.name)?
            .ok_or_else(|| anyhow!("the crawl left no job record"))?;
        let mut sb = SleepingBandit::new(SEED);
        sb.restore(&record.strategy_state)?;
        let save = Spread::of((0..5).map(|_| {
            let t = Instant::now();
            std::hint::black_box(sb.save());
            t.elapsed()
        }))
        .median;

        Ok::<_, anyhow::Error>(CrawlShare {
            site: preset.name(),
            interval,
            wall,
            requests: outcome.counters.requests,
            checkpoints: log.commits.len(),
            commits: Spread::of(log.commits.iter().copied()),
            crawler_cpu,
            server_cpu,
            writer_cpu,
            save,
            // Measured below, outside the runtime (the store's blocking commit).
            filters: FilterCost::default(),
            state_bytes: record.strategy_state.len() as u64,
            actions: outcome.stats.actions,
        })
    })?;
    drop(rt);
    server_rt.block_on(server.shutdown())?;
    let per_checkpoint = result.requests / (result.checkpoints as u64).max(1);
    result.filters = filter_checkpoint_cost(&scratch.join("filters"), per_checkpoint)?;
    if state_dir.exists() {
        std::fs::remove_dir_all(&state_dir)
            .with_context(|| format!("removing {}", state_dir.display()))?;
    }
    eprintln!(
        "  {} requests in {:.1?}, {} checkpoints, crawler CPU {}, writer CPU {}, save {}, share {:.2} %",
        result.requests,
        result.wall,
        result.checkpoints,
        ms(result.crawler_cpu),
        ms(result.writer_cpu),
        ms(result.save),
        result.share()
    );
    Ok(result)
}

/// The MIME filters' part of one checkpoint.
#[derive(Clone, Copy, Debug, Default)]
struct FilterCost {
    /// Taking the dirty chunks + staging, on the job's thread.
    stage: Duration,
    /// Chunk bytes staged.
    bytes: u64,
    /// What the same changes would stage with 512-byte chunks (64 words).
    bytes_512: u64,
    /// Writer CPU to commit those chunks alone.
    commit_cpu: Duration,
}

/// What the MIME filters add to a checkpoint after `urls` new URLs were
/// learned (default 1 M-URL filters, as the engine's), measured over 5
/// checkpoints committed to a fresh store under `dir`.
fn filter_checkpoint_cost(dir: &Path, urls: u64) -> Result<FilterCost> {
    const ROUNDS: u32 = 5;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let store = Store::open(dir, CACHE_BYTES)?;
    let mut filters = MimeFilters::new(MimeFilterConfig::default());
    let mut gen = UrlGen::new("stage.test".into(), 3);
    let mut stages = Vec::new();
    let mut bytes = 0;
    let mut bytes_512 = 0;
    let mut commit_cpu = Duration::ZERO;
    let snapshot = |f: &MimeFilters| -> Vec<Vec<u64>> {
        MimeFamily::ALL
            .iter()
            .map(|&m| f.words(m).to_vec())
            .collect()
    };
    let mut persisted = snapshot(&filters);
    for _ in 0..ROUNDS {
        for _ in 0..urls {
            let found = gen.discovered()?;
            filters.insert(&found, MimeFamily::of(truth_of(&found).1));
        }
        let now = snapshot(&filters);
        for (then, now) in persisted.iter().zip(&now) {
            let dirty = then
                .chunks(64)
                .zip(now.chunks(64))
                .filter(|(a, b)| a != b)
                .count();
            bytes_512 += dirty as u64 * 512;
        }
        persisted = now;
        let mut delta = JobDelta::new("stage");
        let t = Instant::now();
        forager::engine::filters::stage(&mut filters, &mut delta);
        stages.push(t.elapsed());
        bytes += delta
            .shared
            .iter()
            .map(|(_, v)| v.len() as u64)
            .sum::<u64>();
        let before = writer_cpu()?;
        store.commit_blocking(delta)?;
        commit_cpu += writer_cpu()?.saturating_sub(before);
    }
    drop(store);
    std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    Ok(FilterCost {
        stage: Spread::of(stages).median,
        bytes: bytes / u64::from(ROUNDS),
        bytes_512: bytes_512 / u64::from(ROUNDS),
        commit_cpu: commit_cpu / ROUNDS,
    })
}

// ---------------------------------------------------------------------------
// The printed tables

#[derive(Default)]
struct Report {
    out: String,
}

impl Report {
    fn line(&mut self, s: impl AsRef<str>) {
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    fn big(&mut self, c: &BigJobCosts) {
        self.line(format!(
            "\n## 1. Checkpoints of a job with {} frontier links (at the first checkpoint) and {} actions\n",
            c.frontier, c.actions
        ));
        self.line(format!(
            "State: {} distinct tag paths, {} seen URLs, {} manifest rows, built in {:.1?}; \
             strategy state {} (action index {}, of which the tag-path memo ≈ {}).\n",
            c.distinct_paths,
            c.seen,
            c.manifest_rows,
            c.build,
            size(c.first.bytes.strategy_state),
            size(c.action_index_bytes),
            size(c.memo_bytes)
        ));
        self.line(
            "| checkpoint | encode (job thread) | Strategy::save (own call) | commit (Store::commit) | \
             writer CPU | value codec (in commit) | bytes committed | learned state written / whole | frontier rows +/- | redb file growth |",
        );
        self.line("|---|---|---|---|---|---|---|---|---|---|");
        let row = |name: &str, k: &CheckpointCost| {
            format!(
                "| {name} | {} | {} | {} (txn {}) | {} | {} | {} | {} / {} | +{} / -{} | {} |",
                ms(k.encode),
                ms(k.save),
                ms(k.commit),
                ms(k.transaction),
                ms(k.writer_cpu),
                ms(k.value_codec),
                size(k.bytes.total(BIG_JOB)),
                size(k.bytes.state_written),
                size(k.bytes.strategy_state),
                k.bytes.frontier_rows,
                k.bytes.removed_rows,
                signed_size(k.file_growth)
            )
        };
        self.line(row("first (everything new)", &c.first));
        let s = &c.steady;
        let median = |f: &dyn Fn(&CheckpointCost) -> Duration| Spread::of(s.iter().map(f)).median;
        let mid = CheckpointCost {
            encode: median(&|k| k.encode),
            save: median(&|k| k.save),
            commit: median(&|k| k.commit),
            transaction: median(&|k| k.transaction),
            writer_cpu: median(&|k| k.writer_cpu),
            value_codec: median(&|k| k.value_codec),
            bytes: s.last().map(|k| k.bytes).unwrap_or_default(),
            file_growth: s.last().map_or(0, |k| k.file_growth),
        };
        self.line(row(
            &format!("steady state, median of {} (bytes: last)", s.len()),
            &mid,
        ));
        let max = |f: &dyn Fn(&CheckpointCost) -> Duration| Spread::of(s.iter().map(f)).max;
        self.line(format!(
            "\nSteady state, max: encode {}, commit {}. Job-side encode + writer CPU per \
             5 s interval = {:.1} % of one core. redb file: {} after the first checkpoint, {} \
             after {} steady ones.",
            ms(max(&|k| k.encode)),
            ms(max(&|k| k.commit)),
            pct(mid.encode + mid.writer_cpu, Duration::from_secs(5)),
            size(c.file_after_first),
            size(c.file_after_steady),
            s.len()
        ));
        let b = &mid.bytes;
        self.line(format!(
            "Last steady checkpoint's bytes: job record {} without its learned state, learned state \
             {} written of {}, frontier values {} ({} rows), seen keys {}, manifest {}, MIME filter chunks {}.",
            size(b.record),
            size(b.state_written),
            size(b.strategy_state),
            size(b.frontier),
            b.frontier_rows,
            b.seen_rows,
            size(b.manifest),
            size(b.shared)
        ));
    }

    fn resume(&mut self, costs: &ResumeCosts) {
        let r = &costs.runs;
        self.line("\n## 2. Start to first request when resuming that job (goal ≤ 2 s)\n");
        self.line("| page cache | runs | Engine::open | Runner::new (load + restore) | first request (any) | first page GET |");
        self.line("|---|---|---|---|---|---|");
        for cold in [false, true] {
            let runs: Vec<&ResumeTime> = r.iter().filter(|t| t.cold == cold).collect();
            if runs.is_empty() {
                continue;
            }
            let spread =
                |f: &dyn Fn(&ResumeTime) -> Duration| Spread::of(runs.iter().map(|t| f(t)));
            self.line(format!(
                "| {} | {} | {} | {} | {} | {} |",
                if cold {
                    "cold (fadvise DONTNEED)"
                } else {
                    "warm"
                },
                runs.len(),
                spread(&|t| t.open),
                spread(&|t| t.runner_new),
                spread(&|t| t.first_request),
                spread(&|t| t.first_page),
            ));
        }
        if let Some(t) = r.last() {
            self.line(format!(
                "\n(min / median / max; {} links left in the frontier after the last run)",
                t.frontier
            ));
        }
        let b = &costs.breakdown;
        self.line(format!(
            "\nRunner::new taken apart (warm): Store::job_record {}, Store::load_job {} ({} \
             frontier keys, {} seen keys), Strategy::restore {} (in parallel with load_job), \
             seen set {}, strategy pushes {}.",
            ms(b.record),
            ms(b.load),
            b.frontier,
            b.seen,
            ms(b.restore),
            ms(b.seen_set),
            ms(b.pushes)
        ));
    }

    fn kill(&mut self, k: &KillCosts) {
        self.line(format!(
            "\n## 3. Open after kill -9 on a {} store (goal ≤ 5 s)\n",
            size(k.store.bytes)
        ));
        self.line(format!(
            "Store: {} jobs, built in {:.1?}; clean open {}. A child commits back to back \
             (20 k frontier rows, an 8 MiB record, 20 k seen keys per commit) and is SIGKILLed.\n",
            k.store.jobs.len(),
            k.store.build,
            ms(k.clean_open)
        ));
        self.line("| kill moment | kills | open (min / median / max) | verify (load one job) | commits before kill | kill landed inside the commit |");
        self.line("|---|---|---|---|---|---|");
        for moment in KillMoment::ALL {
            let idle = moment != KillMoment::DuringCommits;
            let rounds: Vec<&KillRound> = k.rounds.iter().filter(|r| r.moment == moment).collect();
            if rounds.is_empty() {
                continue;
            }
            let commits: Vec<String> = rounds.iter().map(|r| r.commits_done.to_string()).collect();
            let inside = rounds.iter().filter(|r| r.inside_commit).count();
            self.line(format!(
                "| {} | {} | {} | {} ({} rows) | {} | {} |",
                moment.describe(),
                rounds.len(),
                Spread::of(rounds.iter().map(|r| r.open)),
                Spread::of(rounds.iter().map(|r| r.verify)),
                rounds.first().map_or(0, |r| r.rows_checked),
                commits.join(", "),
                if idle {
                    "-".to_string()
                } else {
                    format!("{inside} of {}", rounds.len())
                }
            ));
        }
        let afters: Vec<String> = k.rounds.iter().map(|r| ms(r.after)).collect();
        self.line(format!(
            "\nKill delays (into the targeted commit; idle: after open): {}",
            afters.join(", ")
        ));
    }

    fn crawl(&mut self, c: &CrawlShare) {
        if !self.out.contains("## 4.") {
            self.line("\n## 4. Share of CPU spent checkpointing during a crawl (goal ≤ 5 %)\n");
            self.line("| site | interval | requests | wall | checkpoints | commit (min / median / max) | crawler CPU | server CPU (excluded) | store-writer CPU | save + filter staging per checkpoint | MIME chunks per checkpoint (writer CPU; with 512 B chunks) | share | checkpoint CPU / wall |");
            self.line("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        }
        self.line(format!(
            "| synthetic {} ({} actions, state {}) | {:?} | {} | {:.1?} | {} | {} | {} | {} | {} | {} + {} | {} ({}; {}) | {:.2} % | {:.2} % of a core |",
            c.site,
            c.actions,
            size(c.state_bytes),
            c.interval,
            c.requests,
            c.wall,
            c.checkpoints,
            c.commits,
            ms(c.crawler_cpu),
            ms(c.server_cpu),
            ms(c.writer_cpu),
            ms(c.save),
            ms(c.filters.stage),
            size(c.filters.bytes),
            ms(c.filters.commit_cpu),
            size(c.filters.bytes_512),
            c.share(),
            pct(c.writer_cpu + c.encode_cpu(), c.wall)
        ));
    }

    fn finish(self) -> String {
        format!(
            "# Checkpoint figures (load {})\n{}",
            load_average(),
            self.out
        )
    }
}
