//! Job specifications (ARCHITECTURE.md § Job files): one TOML file per job in the jobs folder.

use std::path::Path;
use std::time::Duration;

use toml::de::DeValue;
use url::Url;

use super::error::{quote, ConfigError};
use super::http::{read_http, HTTP_FIELDS};
use super::reader::{Located, Node, Reader, Table};
use super::render::{read_render, RenderSpec};
use super::{first, read_config_file, units};
use crate::extract::structured::{
    StructuredOptions, DEFAULT_MAX_STATEMENTS, DEFAULT_MAX_STATEMENT_BYTES,
};
use crate::extract::{check_pattern, PolitenessPer, ScopeKind, UrlPatterns};
use crate::form::{self, FormLimits};
use crate::http_options::HttpOptions;
use crate::mime::{Preset, TargetSet};
use crate::rdf::Follow;
use crate::revisit::{RevisitPolicy, ScheduleConfig};
use crate::strategy::StrategyKind;

/// The user agent of a job that names none.
pub const DEFAULT_USER_AGENT: &str = concat!(
    "forager/",
    env!("CARGO_PKG_VERSION"),
    " (+https://github.com/forager-crawler/forager)"
);

/// Longest politeness delay accepted: beyond an hour a crawl is not a crawl, and the value is surely a typo.
/// Default size after which a new WARC file is started (the size Heritrix uses).
pub const DEFAULT_WARC_MAX_SIZE: u64 = 1 << 30;

pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// Longest job name.
pub const MAX_NAME_LEN: usize = 64;

/// Longest user agent accepted (servers cut long header values).
const MAX_USER_AGENT_LEN: usize = 512;

/// Range of `limits.max_url_len`: shorter than 16 refuses every real URL, longer than 64 KiB no server answers.
const URL_LEN_RANGE: (u64, u64) = (16, 65_536);

/// Range of `limits.max_links_per_page`: 0 would follow nothing; a million links is already a trap.
const LINKS_PER_PAGE_RANGE: (u64, u64) = (1, 1_000_000);

const TOP_FIELDS: &[&str] = &[
    "name",
    "seeds",
    "scope",
    "strategy",
    "seed",
    "targets",
    "budget",
    "politeness",
    "limits",
    "output",
    "http",
    "mode",
    "revisit",
    "render",
];
const REVISIT_FIELDS: &[&str] = &["min", "max", "policy"];
/// Default of `revisit.min`.
pub const DEFAULT_REVISIT_MIN: Duration = Duration::from_secs(3600);
/// Default of `revisit.max`.
pub const DEFAULT_REVISIT_MAX: Duration = Duration::from_secs(30 * 86_400);
const OUTPUT_FIELDS: &[&str] = &["warc", "warc_max_size", "crawl_log"];
const SCOPE_FIELDS: &[&str] = &["kind", "include", "exclude"];
/// Range of `output.warc_max_size`: below 1 MiB a job makes thousands of files; above 64 GiB no tool copes.
const WARC_SIZE_RANGE: (u64, u64) = (1 << 20, 64 << 30);
const TARGETS_FIELDS: &[&str] = &[
    "preset",
    "mime",
    "ext",
    "block_mime",
    "block_ext",
    "rdf",
    "rdf_follow",
    "structured_data",
    "min_statements",
    "max_statements",
    "max_statement_bytes",
    "prior",
    "catalogs",
    "forms",
    "max_form_links",
    "max_form_links_per_site",
];
/// What `targets.structured_data` may list.
const STRUCTURED_SYNTAXES: &[&str] = &["json-ld", "microdata", "rdfa", "microformats"];
/// Default of `targets.min_statements`: Anthelion marks a page relevant when
/// its extractor yields more than 5 statements.
pub const DEFAULT_MIN_STATEMENTS: u64 = 6;
/// Range of `targets.max_statements` (statements kept per page).
const MAX_STATEMENTS_RANGE: (u64, u64) = (1, 1_000_000);
/// Range of `targets.max_statement_bytes` (N-Quads bytes kept per page or
/// RDF document): below 4 KiB one long statement would cut a page; above
/// 4 GiB one document could take the memory of a machine.
const MAX_STATEMENT_BYTES_RANGE: (u64, u64) = (4 << 10, 4 << 30);
/// What `targets.rdf_follow` may list: the positions of a statement whose IRIs are links.
const RDF_FOLLOW: &[&str] = &["subjects", "objects", "predicates", "types"];
const BUDGET_FIELDS: &[&str] = &["requests", "bytes", "early_stop", "neither_links"];
const POLITENESS_FIELDS: &[&str] = &[
    "delay",
    "robots",
    "user_agent",
    "max_in_flight",
    "per",
    "look_ahead",
    "adaptive_delay",
    "max_delay",
    "max_backoff",
    "forgive_after",
];

/// Default `politeness.max_delay`: the most an adaptive delay may grow to.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(60);
/// Longest `politeness.max_backoff` and `forgive_after` accepted (a day).
pub const MAX_BACKOFF_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// Most requests one job may keep in flight (each on its own politeness key).
pub const MAX_IN_FLIGHT: u64 = 4096;
/// The largest `politeness.look_ahead` a job file may set.
pub const MAX_LOOK_AHEAD: u64 = 1 << 24;
/// The default `politeness.look_ahead` of a job whose strategy learns and
/// keeps several requests in flight. Measured with `forager bench --site
/// structured --look-ahead 1,4,16,64`: see docs/efficiency.md, *Many hosts in one job*.
pub const DEFAULT_LOOK_AHEAD: usize = 16;
/// Links a slot may pass over when nothing is learned (bfs, dfs, random):
/// enough that every slot is filled from whichever host is ready, as a web
/// of 1 000 hosts at one request per second each needs (a home page's 200
/// links come before the next host's).
const FILL_EVERY_SLOT_PER_STEP: usize = 4096;
const LIMITS_FIELDS: &[&str] = &[
    "max_body",
    "retries",
    "retry_for",
    "max_depth",
    "max_links_per_page",
    "max_url_len",
    "strip_params",
];

const SCOPES: &[(&str, ScopeKind)] = &[
    ("site", ScopeKind::Site),
    ("host", ScopeKind::Host),
    ("any", ScopeKind::Any),
];
const PRESETS: &[(&str, Preset)] = &[
    ("statistics", Preset::Statistics),
    ("documents", Preset::Documents),
    ("linked-data", Preset::LinkedData),
    ("structured", Preset::Structured),
    ("archives", Preset::Archives),
    ("none", Preset::None),
];

/// MIME types a job never downloads unless it says otherwise.
pub const DEFAULT_BLOCK_MIME: &[&str] = &["image/", "audio/", "video/"];

/// Extensions whose links are never followed unless the job says otherwise:
/// images, audio, video, fonts, style sheets and scripts — none is a target of any preset.
pub const DEFAULT_BLOCK_EXT: &[&str] = &[
    // images
    "jpg", "jpeg", "png", "gif", "bmp", "svg", "webp", "ico", "tif", "tiff", "avif", "heic",
    // audio
    "mp3", "wav", "ogg", "oga", "flac", "m4a", "aac", "opus", "wma", // video
    "mp4", "m4v", "avi", "mov", "mkv", "webm", "wmv", "flv", "mpg", "mpeg", "ogv", "3gp",
    // style, fonts, scripts
    "css", "woff", "woff2", "ttf", "eot", "otf", "js", "mjs",
];

/// Query keys that carry session ids: dropped from URLs so one page is not crawled once per session.
pub use crate::extract::DEFAULT_STRIP_PARAMS;

/// One job: what to crawl, how, and within which limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// Unique job name, `[a-z0-9_-]{1,64}`; names the job's state and output folders.
    pub name: String,
    /// Where the crawl starts (http/https only, never empty).
    pub seeds: Vec<Url>,
    pub scope: ScopeKind,
    /// `[scope] include` / `exclude`: URL patterns a link must pass, within the scope.
    pub patterns: UrlPatterns,
    pub strategy: StrategyKind,
    /// RNG seed: the same seed on the same site gives the same crawl.
    pub seed: u64,
    pub targets: TargetsSpec,
    pub budget: BudgetSpec,
    pub politeness: PolitenessSpec,
    pub limits: LimitsSpec,
    pub output: OutputSpec,
    /// `[http]`: extra headers, per-host credentials, a proxy (the daemon
    /// config's `[http]` fills in what the job leaves out).
    pub http: HttpOptions,
    /// `mode` and `[revisit]`: whether the job finishes or harvests continuously.
    pub mode: JobMode,
    /// `render`: pages built by scripts, rendered in headless Chromium.
    pub render: RenderSpec,
}

/// `mode = "once"` (the job finishes) or `"continuous"` (it revisits forever).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JobMode {
    #[default]
    Once,
    Continuous(RevisitSpec),
}

/// The `[revisit]` table of a continuous job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RevisitSpec {
    /// `revisit.min` and `revisit.max`.
    pub schedule: ScheduleConfig,
    pub policy: RevisitPolicy,
}

impl Default for RevisitSpec {
    fn default() -> Self {
        RevisitSpec {
            schedule: ScheduleConfig {
                min_secs: DEFAULT_REVISIT_MIN.as_secs(),
                max_secs: DEFAULT_REVISIT_MAX.as_secs(),
            },
            policy: RevisitPolicy::default(),
        }
    }
}

impl JobSpec {
    /// A job with every optional field at its default (for tests, bench and `forager crawl URL`).
    pub fn new(name: impl Into<String>, seeds: Vec<Url>) -> Self {
        JobSpec {
            name: name.into(),
            seeds,
            scope: ScopeKind::default(),
            patterns: UrlPatterns::default(),
            strategy: StrategyKind::Sb,
            seed: 1,
            targets: TargetsSpec::default(),
            budget: BudgetSpec::default(),
            politeness: PolitenessSpec::default(),
            limits: LimitsSpec::default(),
            output: OutputSpec::default(),
            http: HttpOptions::default(),
            mode: JobMode::Once,
            render: RenderSpec::default(),
        }
    }

    /// The revisit settings of a continuous job; `None` for a job that finishes.
    pub fn revisit(&self) -> Option<&RevisitSpec> {
        match &self.mode {
            JobMode::Once => None,
            JobMode::Continuous(r) => Some(r),
        }
    }

    /// Requests kept in flight: the job file's `politeness.max_in_flight`, else
    /// 1 within one site (one server: more would only queue on its key) and
    /// 64 across the web.
    pub fn max_in_flight(&self) -> usize {
        match (self.politeness.max_in_flight, self.scope) {
            (Some(n), _) => n as usize,
            (None, ScopeKind::Site | ScopeKind::Host) => 1,
            (None, ScopeKind::Any) => 64,
        }
    }

    /// How many links a free request slot may pass over to find one whose
    /// politeness key is ready: `politeness.look_ahead`, else 1 with one
    /// request in flight (the sequential crawl), [`DEFAULT_LOOK_AHEAD`] for
    /// a strategy that learns, and enough to fill every slot for one that
    /// does not (bfs, dfs, random). The trade between precision (spend
    /// requests where the strategy believes) and speed (keep every slot
    /// busy): see docs/efficiency.md, *Many hosts in one job*.
    pub fn look_ahead(&self) -> usize {
        let in_flight = self.max_in_flight();
        match self.politeness.look_ahead {
            Some(n) => n as usize,
            None if in_flight <= 1 => 1,
            None if self.strategy.learns() => DEFAULT_LOOK_AHEAD,
            None => in_flight.saturating_mul(FILL_EVERY_SLOT_PER_STEP),
        }
    }

    /// What one politeness key covers: `politeness.per`, else the scope's default.
    pub fn politeness_per(&self) -> PolitenessPer {
        self.politeness
            .per
            .unwrap_or_else(|| PolitenessPer::default_for(self.scope))
    }
}

/// The `[output]` table: what a job writes besides its target files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    /// Archive every exchange as WARC 1.1 under `targets/<job>/warc/`. Off by
    /// default: a WARC holds every target a second time (and every page), and
    /// a job whose file gains `warc = true` later gets WARC from then on only
    /// (`forager export --warc` covers what came before).
    pub warc: bool,
    /// A new WARC file is started once the current one reaches this size.
    pub warc_max_size: u64,
    /// Write `targets/<job>/crawl.log`: a JSON line per request and per link not followed.
    pub crawl_log: bool,
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            warc: false,
            warc_max_size: DEFAULT_WARC_MAX_SIZE,
            crawl_log: true,
        }
    }
}

/// The `[targets]` table: what the job harvests and what it never downloads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetsSpec {
    pub preset: Preset,
    /// Extra target MIME patterns (exact, or a prefix ending in `/`), lower-cased.
    pub mime: Vec<String>,
    /// MIME patterns never downloaded (the body is not read), lower-cased.
    pub block_mime: Vec<String>,
    /// Extra extensions (lower-case, no dot) that make a file sent under a
    /// generic type (`application/octet-stream`, `text/plain`…) a target.
    pub ext: Vec<String>,
    /// Extensions (lower-case, no dot) whose links are never fetched.
    pub block_ext: Vec<String>,
    /// Linked data: RDF responses are parsed, a document with a statement is
    /// a target, its statements go to `data.nq.gz` and its IRIs are links.
    pub rdf: bool,
    /// Which IRIs of a statement are links.
    pub rdf_follow: Follow,
    /// Bytes of N-Quads kept per RDF document and per structured-data page
    /// (each statement counted by its size); a document over it is cut.
    pub max_statement_bytes: u64,
    /// Structured-data pages: an HTML page whose embedded statements (of the
    /// syntaxes listed) reach `min_statements` is a target.
    pub structured: Option<StructuredTargets>,
    /// Start from what earlier jobs of the same target kinds learnt about
    /// which link words lead to targets (sb), kept in the state store;
    /// `false` starts cold.
    pub prior: bool,
    /// Read the data catalogs a seed's site publishes (CKAN's Action API,
    /// `data.json`, DCAT) as link sources (`forager_core::catalog`).
    /// Off by default: the cost is bounded (three well-known requests per
    /// seed origin, bounded catalog pages), but those requests change the
    /// request count of every crawl, and the Efficiency sites' req@90 has
    /// not been measured with them yet (docs/jobs.md, *Data catalogs*).
    pub catalogs: bool,
    /// Submit the GET forms of choices pages hold (`forms = true`), within
    /// `max_form_links` per form and `max_form_links_per_site` per host
    /// (`forager_core::form`); `None`: forms are not read. Off by default
    /// for the same reason as `catalogs`.
    pub forms: Option<FormLimits>,
}

/// `structured_data`, `min_statements` and `max_statements` of `[targets]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructuredTargets {
    /// The syntaxes read, and the per-page cap (`max_statements`).
    pub options: StructuredOptions,
    /// Statements (and microformats items) that make a page relevant.
    pub min_statements: u64,
}

impl Default for TargetsSpec {
    fn default() -> Self {
        TargetsSpec {
            preset: Preset::Statistics,
            mime: Vec::new(),
            ext: Vec::new(),
            block_mime: DEFAULT_BLOCK_MIME.iter().map(|s| s.to_string()).collect(),
            block_ext: DEFAULT_BLOCK_EXT.iter().map(|s| s.to_string()).collect(),
            rdf: false,
            rdf_follow: Follow::default(),
            max_statement_bytes: DEFAULT_MAX_STATEMENT_BYTES,
            prior: true,
            structured: None,
            catalogs: false,
            forms: None,
        }
    }
}

impl TargetsSpec {
    /// The MIME classifier of this job (a linked-data job harvests RDF
    /// whatever its preset).
    pub fn target_set(&self) -> TargetSet {
        let mut mime = self.mime.clone();
        let mut ext = self.ext.clone();
        if self.rdf {
            mime.extend(crate::mime::RDF.iter().map(|m| m.to_string()));
            ext.extend(crate::mime::RDF_EXTENSIONS.iter().map(|e| e.to_string()));
        }
        TargetSet::new(self.preset, &mime, &self.block_mime).with_extensions(&ext)
    }

    /// Whether the last path segment of `url` ends in a blocked extension (case-insensitive).
    pub fn blocks_extension(&self, url: &Url) -> bool {
        let Some(last) = url.path_segments().and_then(|mut s| s.next_back()) else {
            return false;
        };
        let Some((_, ext)) = last.rsplit_once('.') else {
            return false;
        };
        !ext.is_empty() && self.block_ext.iter().any(|b| b.eq_ignore_ascii_case(ext))
    }
}

/// The `[budget]` table: when a job stops by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetSpec {
    /// GET + HEAD requests (redirect hops count); 0 = unlimited.
    pub requests: u64,
    /// Bytes downloaded; 0 = unlimited.
    pub bytes: u64,
    /// Stop when new targets stop coming (ARCHITECTURE.md § Crawl loop, early stopping).
    pub early_stop: bool,
    /// What becomes of links sb predicts are neither a page nor a target.
    pub neither_links: NeitherLinks,
}

impl Default for BudgetSpec {
    fn default() -> Self {
        BudgetSpec {
            requests: 100_000,
            bytes: 20 << 30,
            early_stop: true,
            neither_links: NeitherLinks::Last,
        }
    }
}

/// `budget.neither_links`: links whose URL pattern has answered only
/// neither (`learn/neither.rs`, sb only) are fetched after every other link,
/// or never. Either way a sample of them is fetched while the crawl runs, so
/// a pattern that starts to hold pages or targets is noticed and its links
/// are fetched again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NeitherLinks {
    /// Fetched once nothing else is left: coverage stays complete.
    #[default]
    Last,
    /// Left unfetched: the job ends when only they are left, each one in the
    /// crawl log as skipped (`predicted_neither`).
    Skip,
}

impl NeitherLinks {
    pub const ALL: [(&'static str, NeitherLinks); 2] =
        [("last", NeitherLinks::Last), ("skip", NeitherLinks::Skip)];

    /// The value a job file names `name`.
    pub fn parse(name: &str) -> Option<NeitherLinks> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }
}

/// The `[politeness]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolitenessSpec {
    /// Minimum gap between two requests to one host (at most [`MAX_DELAY`]).
    pub delay: Duration,
    /// Obey robots.txt, including Crawl-delay.
    pub robots: bool,
    /// Sent on every request; printable ASCII, never empty.
    pub user_agent: String,
    /// Requests the job keeps in flight, never two on one politeness key;
    /// `None`: the scope's default ([`JobSpec::max_in_flight`]).
    pub max_in_flight: Option<u32>,
    /// What one politeness key covers; `None`: the scope's default ([`JobSpec::politeness_per`]).
    pub per: Option<PolitenessPer>,
    /// Links a free slot may pass over; `None`: the default ([`JobSpec::look_ahead`]).
    pub look_ahead: Option<u32>,
    /// A host's delay follows its response time within `[delay, max_delay]`
    /// ([`crate::politeness::AdaptiveDelay`]); off by default.
    pub adaptive_delay: bool,
    /// The most the adaptive delay may grow to (never below `delay`).
    pub max_delay: Duration,
    /// The longest back-off of an origin that keeps failing.
    pub max_backoff: Duration,
    /// An origin's failures are forgiven after this long without one.
    pub forgive_after: Duration,
}

impl PolitenessSpec {
    /// The adaptive delay of the job, when it asks for one.
    pub fn adaptive(&self) -> Option<crate::politeness::AdaptiveDelay> {
        self.adaptive_delay
            .then_some(crate::politeness::AdaptiveDelay {
                min: self.delay,
                max: self.max_delay.max(self.delay),
                // The delay a host asks for is its response time: Scrapy's
                // AutoThrottle with one request in flight per host.
                factor: 1.0,
            })
    }

    /// How the job backs off an origin that keeps failing.
    pub fn backoff(&self) -> crate::politeness::BackoffPolicy {
        crate::politeness::BackoffPolicy {
            max: self.max_backoff,
            forgive_after: self.forgive_after,
            jitter: crate::politeness::DEFAULT_JITTER,
        }
    }
}

impl Default for PolitenessSpec {
    fn default() -> Self {
        PolitenessSpec {
            delay: Duration::from_secs(1),
            robots: true,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            max_in_flight: None,
            per: None,
            look_ahead: None,
            adaptive_delay: false,
            max_delay: DEFAULT_MAX_DELAY,
            max_backoff: crate::politeness::BackoffPolicy::default().max,
            forgive_after: crate::politeness::BackoffPolicy::default().forgive_after,
        }
    }
}

/// The `[limits]` table: caps on what servers control.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitsSpec {
    /// Largest body read per response (after decompression); larger ones are cut. Never 0.
    pub max_body: u64,
    /// Largest link depth from a seed; 0 = none.
    pub max_depth: u32,
    /// Links kept from one page.
    pub max_links_per_page: usize,
    /// Longer URLs are dropped.
    pub max_url_len: usize,
    /// Query keys removed from every URL, lower-cased (compare case-insensitively).
    pub strip_params: Vec<String>,
    /// Fetches of one link that failed for a reason that may pass (refused
    /// or reset connection, time-out, DNS, 5xx, 429, robots.txt unreachable)
    /// are tried again this many times, with the host's back-off between
    /// tries, before the link is given up.
    pub retries: u32,
    /// …and never longer than this after its first failure.
    pub retry_for: Duration,
}

impl Default for LimitsSpec {
    fn default() -> Self {
        LimitsSpec {
            max_body: 512 << 20,
            max_depth: 0,
            max_links_per_page: 10_000,
            max_url_len: 2048,
            strip_params: DEFAULT_STRIP_PARAMS.iter().map(|s| s.to_string()).collect(),
            retries: 5,
            retry_for: Duration::from_secs(3600),
        }
    }
}

/// Parse and validate a job file's text; `origin` names the file in errors.
///
/// Returns the first problem in file order; see [`parse_job_all`] for all of them.
pub fn parse_job(text: &str, origin: &Path) -> Result<JobSpec, ConfigError> {
    parse_job_all(text, origin).map_err(first)
}

/// Parse and validate a job file's text, reporting every problem found (in file order, never empty).
pub fn parse_job_all(text: &str, origin: &Path) -> Result<JobSpec, Vec<ConfigError>> {
    let mut r = Reader::new(origin, text);
    let doc = r.parse_document().map_err(|e| vec![e])?;
    let root = r.root(&doc, TOP_FIELDS);
    let job = read_job(&mut r, &root);
    r.finish()?;
    // The reader recorded an error for every field it could not read, so `job` is complete here.
    job.ok_or_else(|| vec![ConfigError::new(origin, None, "", "invalid job file")])
}

/// Read, parse and validate a job file.
pub fn load_job(path: &Path) -> Result<JobSpec, ConfigError> {
    let text = read_config_file(path)?;
    parse_job(&text, path)
}

/// Whether `name` is a valid job name: 1 to 64 of `a-z`, `0-9`, `_`, `-`.
pub fn is_valid_job_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn read_job(r: &mut Reader<'_>, root: &Table<'_>) -> Option<JobSpec> {
    let name = match root.get("name") {
        Some(n) => r.string("name", n).and_then(|s| {
            if is_valid_job_name(s) {
                Some(s.to_owned())
            } else {
                r.invalid(
                    "name",
                    n,
                    format!(
                        "invalid job name {}: use 1 to {MAX_NAME_LEN} characters among a-z, 0-9, '_' and '-'",
                        quote(s)
                    ),
                );
                None
            }
        }),
        None => {
            r.error(None, "name", "missing required field");
            None
        }
    };
    let seeds = match root.get("seeds") {
        Some(n) => read_seeds(r, n),
        None => {
            r.error(None, "seeds", "missing required field");
            None
        }
    };
    let scope = optional(root, "scope", |n| read_scope(r, n));
    let strategies: Vec<(&str, StrategyKind)> =
        StrategyKind::ALL.iter().map(|k| (k.name(), *k)).collect();
    let strategy = optional(root, "strategy", |n| r.choice("strategy", n, &strategies));
    let seed = optional(root, "seed", |n| r.u64("seed", n));
    let targets = sub_table(r, root, "targets", TARGETS_FIELDS, read_targets);
    // `None` when the field is invalid (already reported): nothing to check against.
    let job_strategy = match strategy {
        None => Some(StrategyKind::Sb),
        Some(named) => named,
    };
    let budget = sub_table(r, root, "budget", BUDGET_FIELDS, |r, t| {
        read_budget(r, t, job_strategy)
    });
    let politeness = sub_table(r, root, "politeness", POLITENESS_FIELDS, read_politeness);
    let limits = sub_table(r, root, "limits", LIMITS_FIELDS, read_limits);
    let output = sub_table(r, root, "output", OUTPUT_FIELDS, read_output);
    let http = sub_table(r, root, "http", HTTP_FIELDS, read_http);
    let mode = read_mode(r, root);
    let render = optional(root, "render", |n| read_render(r, n));

    let seeds = seeds?;
    let limits = limits?;
    let scope = scope.unwrap_or(Some(ScopeSpec::default()))?;
    for seed in &seeds {
        if seed.value.as_str().len() > limits.max_url_len {
            r.invalid(
                &seed.path,
                seed.node,
                format!(
                    "URL is {} bytes long, over limits.max_url_len ({})",
                    seed.value.as_str().len(),
                    limits.max_url_len
                ),
            );
        }
    }
    Some(JobSpec {
        name: name?,
        seeds: seeds.into_iter().map(|s| s.value).collect(),
        scope: scope.kind,
        patterns: scope.patterns,
        strategy: strategy.unwrap_or(Some(StrategyKind::Sb))?,
        seed: seed.unwrap_or(Some(1))?,
        targets: targets?,
        budget: budget?,
        politeness: politeness?,
        limits,
        output: output?,
        http: http?,
        mode: mode?,
        render: render.unwrap_or(Some(RenderSpec::default()))?,
    })
}

/// `mode` and `[revisit]`; a `[revisit]` table without `mode = "continuous"`
/// is an error (it would be silently ignored otherwise).
fn read_mode(r: &mut Reader<'_>, root: &Table<'_>) -> Option<JobMode> {
    let continuous = optional(root, "mode", |n| {
        r.choice("mode", n, &[("once", false), ("continuous", true)])
    })
    .unwrap_or(Some(false))?;
    let Some(node) = root.get("revisit") else {
        return Some(if continuous {
            JobMode::Continuous(RevisitSpec::default())
        } else {
            JobMode::Once
        });
    };
    let t = r.table("revisit", node, REVISIT_FIELDS)?;
    if !continuous {
        r.invalid(
            "revisit",
            node,
            "[revisit] applies to continuous jobs only: add mode = \"continuous\" or remove it",
        );
        return None;
    }
    let d = RevisitSpec::default();
    let min = optional(&t, "min", |n| r.duration(&t.child("min"), n));
    let max = optional(&t, "max", |n| r.duration(&t.child("max"), n));
    let policy = optional(&t, "policy", |n| {
        r.choice(&t.child("policy"), n, &RevisitPolicy::ALL)
    });
    let min = min.unwrap_or(Some(DEFAULT_REVISIT_MIN))?;
    let max = max.unwrap_or(Some(DEFAULT_REVISIT_MAX))?;
    let schedule = match ScheduleConfig::new(min, max) {
        Ok(s) => s,
        Err(why) => {
            // Point at the bound that is wrong: `min` when it is below 1 s, else `max`.
            let (field, at) = match (t.get("min"), t.get("max")) {
                (Some(n), _) if min.as_secs() == 0 => ("min", n),
                (_, Some(n)) => ("max", n),
                (Some(n), None) => ("min", n),
                (None, None) => ("revisit", node),
            };
            let path = if field == "revisit" {
                field.to_string()
            } else {
                t.child(field)
            };
            r.invalid(&path, at, why);
            return None;
        }
    };
    Some(JobMode::Continuous(RevisitSpec {
        schedule,
        policy: policy.unwrap_or(Some(d.policy))?,
    }))
}

/// `scope = "site"`, or a `[scope]` table with `kind`, `include` and `exclude`.
#[derive(Clone, Default)]
struct ScopeSpec {
    kind: ScopeKind,
    patterns: UrlPatterns,
}

fn read_scope(r: &mut Reader<'_>, node: Node<'_>) -> Option<ScopeSpec> {
    if !matches!(node.value, DeValue::Table(_)) {
        let kind = r.choice("scope", node, SCOPES)?;
        return Some(ScopeSpec {
            kind,
            patterns: UrlPatterns::default(),
        });
    }
    let t = r.table("scope", node, SCOPE_FIELDS)?;
    let kind = optional(&t, "kind", |n| r.choice(&t.child("kind"), n, SCOPES));
    let mut list = |key: &str| match t.get(key) {
        Some(n) => r.strings_with(&t.child(key), n, |p| {
            check_pattern(p)
                .map(|()| p.to_string())
                .map_err(|e| format!("{}: {e}", quote(p)))
        }),
        None => Some(Vec::new()),
    };
    let (include, exclude) = (list("include"), list("exclude"));
    let patterns = match UrlPatterns::new(&include?, &exclude?) {
        Ok(p) => p,
        Err(e) => {
            r.invalid("scope", node, e.to_string());
            return None;
        }
    };
    Some(ScopeSpec {
        kind: kind.unwrap_or(Some(ScopeKind::default()))?,
        patterns,
    })
}

/// `Some(read(value))` when `key` is present, `None` when absent (the caller's default applies).
fn optional<'v, T>(
    table: &Table<'v>,
    key: &str,
    read: impl FnOnce(Node<'v>) -> Option<T>,
) -> Option<Option<T>> {
    table.get(key).map(read)
}

/// Read the sub-table `key` with `read`, or its defaults when absent; `None` when it had errors.
fn sub_table<'v, T: Default>(
    r: &mut Reader<'_>,
    root: &Table<'v>,
    key: &str,
    fields: &[&str],
    read: impl FnOnce(&mut Reader<'_>, &Table<'v>) -> Option<T>,
) -> Option<T> {
    match root.get(key) {
        None => Some(T::default()),
        Some(node) => {
            let table = r.table(key, node, fields)?;
            read(r, &table)
        }
    }
}

fn read_seeds<'v>(r: &mut Reader<'_>, node: Node<'v>) -> Option<Vec<Located<'v, Url>>> {
    let seeds = r.strings_located("seeds", node, check_seed)?;
    if seeds.is_empty() && matches!(node.value, DeValue::Array(a) if a.is_empty()) {
        r.invalid("seeds", node, "must list at least one URL");
        return None;
    }
    Some(seeds)
}

fn check_seed(s: &str) -> Result<Url, String> {
    let url = Url::parse(s.trim()).map_err(|e| format!("invalid URL {}: {e}", quote(s)))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!("not an http(s) URL: {}", quote(s)));
    }
    Ok(url)
}

fn read_targets(r: &mut Reader<'_>, t: &Table<'_>) -> Option<TargetsSpec> {
    let d = TargetsSpec::default();
    let preset_node = t.get("preset");
    let preset = match preset_node {
        Some(n) => r.choice(&t.child("preset"), n, PRESETS),
        None => Some(d.preset),
    };
    let mime = match t.get("mime") {
        Some(n) => r.strings_located(&t.child("mime"), n, check_mime_pattern),
        None => Some(Vec::new()),
    };
    let block_mime_given = t.get("block_mime").is_some();
    let block_mime = match t.get("block_mime") {
        Some(n) => r.strings_with(&t.child("block_mime"), n, check_mime_pattern),
        None => Some(d.block_mime),
    };
    let block_ext = match t.get("block_ext") {
        Some(n) => r.strings_with(&t.child("block_ext"), n, check_extension),
        None => Some(d.block_ext),
    };
    let ext = match t.get("ext") {
        Some(n) => r.strings_located(&t.child("ext"), n, check_extension),
        None => Some(Vec::new()),
    };
    let rdf = match t.get("rdf") {
        Some(n) => r.bool(&t.child("rdf"), n),
        None => preset.map(|p| p == Preset::LinkedData),
    };
    let rdf_follow = match t.get("rdf_follow") {
        Some(n) => read_rdf_follow(r, &t.child("rdf_follow"), n),
        None => Some(Follow::default()),
    };
    let max_statement_bytes = match t.get("max_statement_bytes") {
        Some(n) => {
            let field = t.child("max_statement_bytes");
            r.size(&field, n).and_then(|b| {
                let (lo, hi) = MAX_STATEMENT_BYTES_RANGE;
                if (lo..=hi).contains(&b) {
                    Some(b)
                } else {
                    r.invalid(&field, n, format!("must be between {lo} and {hi} bytes"));
                    None
                }
            })
        }
        None => Some(DEFAULT_MAX_STATEMENT_BYTES),
    };
    let structured = read_structured(r, t, preset, rdf, max_statement_bytes);
    let prior = match t.get("prior") {
        Some(n) => r.bool(&t.child("prior"), n),
        None => Some(d.prior),
    };
    let catalogs = match t.get("catalogs") {
        Some(n) => r.bool(&t.child("catalogs"), n),
        None => Some(d.catalogs),
    };
    let forms = match t.get("forms") {
        Some(n) => r.bool(&t.child("forms"), n),
        None => Some(false),
    };
    let per_form = match t.get("max_form_links") {
        Some(n) => r
            .u64_in(&t.child("max_form_links"), n, 1, 10_000)
            .and_then(|v| usize::try_from(v).ok()),
        None => Some(form::DEFAULT_PER_FORM),
    };
    let per_site = match t.get("max_form_links_per_site") {
        Some(n) => r
            .u64_in(&t.child("max_form_links_per_site"), n, 1, 1_000_000)
            .and_then(|v| usize::try_from(v).ok()),
        None => Some(form::DEFAULT_PER_SITE),
    };
    let forms = forms?.then_some(FormLimits {
        per_form: per_form?,
        per_site: per_site?,
    });
    let max_statement_bytes = max_statement_bytes?;
    let catalogs = catalogs?;
    let (preset, mime, block_mime, block_ext, ext, rdf, rdf_follow, structured) = (
        preset?,
        mime?,
        block_mime?,
        block_ext?,
        ext?,
        rdf?,
        rdf_follow?,
        structured?,
    );
    let prior = prior?;

    // A target type that is also blocked would never be downloaded: say so now, not after a silent crawl.
    let mut ok = true;
    for m in &mime {
        if let Some(b) = block_mime.iter().find(|b| covers(b, &m.value)) {
            let whose = if block_mime_given {
                ""
            } else {
                " (a default: set targets.block_mime to change it)"
            };
            r.invalid(
                &m.path,
                m.node,
                format!(
                    "{} is also blocked by targets.block_mime entry {}{whose}",
                    quote(&m.value),
                    quote(b)
                ),
            );
            ok = false;
        }
    }
    // A target extension that is also blocked would never be fetched.
    for e in &ext {
        if block_ext.iter().any(|b| b.eq_ignore_ascii_case(&e.value)) {
            r.invalid(
                &e.path,
                e.node,
                format!(
                    "{} is also in targets.block_ext: links ending in it are never fetched",
                    quote(&e.value)
                ),
            );
            ok = false;
        }
    }
    // Only when `mime` is truly empty: bad entries were reported already.
    let mime_listed = t
        .get("mime")
        .is_some_and(|n| matches!(n.value, DeValue::Array(a) if !a.is_empty()));
    if preset == Preset::None && !mime_listed && structured.is_none() {
        let field = t.child("mime");
        let why = "preset \"none\" and no mime types: the job would harvest nothing";
        match preset_node {
            Some(n) => r.invalid(&field, n, why),
            None => r.error(None, &field, why),
        }
        ok = false;
    }
    ok.then(|| TargetsSpec {
        preset,
        mime: mime.into_iter().map(|m| m.value).collect(),
        ext: ext
            .into_iter()
            .map(|e| e.value.to_ascii_lowercase())
            .collect(),
        block_mime,
        block_ext,
        rdf,
        rdf_follow,
        max_statement_bytes,
        structured,
        prior,
        catalogs,
        forms,
    })
}

/// `structured_data` (default: all four syntaxes under preset `structured`,
/// RDFa in a linked-data job, none otherwise), `min_statements` and
/// `max_statements`; the two counts need `structured_data`, and the cap must
/// leave room for the threshold.
fn read_structured(
    r: &mut Reader<'_>,
    t: &Table<'_>,
    preset: Option<Preset>,
    rdf: Option<bool>,
    max_bytes: Option<u64>,
) -> Option<Option<StructuredTargets>> {
    // Linked data reads RDFa from HTML, and one statement makes a document
    // relevant (LDCOC's measure: a response that yields a triple).
    let linked = rdf == Some(true) && t.get("structured_data").is_none();
    let syntaxes = match t.get("structured_data") {
        Some(n) => r.strings_with(&t.child("structured_data"), n, |s| {
            if STRUCTURED_SYNTAXES.contains(&s) {
                Ok(s.to_string())
            } else {
                Err(format!(
                    "{} is not one of {}",
                    quote(s),
                    STRUCTURED_SYNTAXES.join(", ")
                ))
            }
        }),
        None if preset == Some(Preset::Structured) => {
            Some(STRUCTURED_SYNTAXES.iter().map(|s| s.to_string()).collect())
        }
        None if linked => Some(vec!["rdfa".to_string()]),
        None => Some(Vec::new()),
    };
    let min = match t.get("min_statements") {
        Some(n) => r
            .u64_in(&t.child("min_statements"), n, 1, MAX_STATEMENTS_RANGE.1)
            .map(Some),
        None => Some(None),
    };
    let max = match t.get("max_statements") {
        Some(n) => r
            .u64_in(
                &t.child("max_statements"),
                n,
                MAX_STATEMENTS_RANGE.0,
                MAX_STATEMENTS_RANGE.1,
            )
            .map(Some),
        None => Some(None),
    };
    let (syntaxes, min, max) = (syntaxes?, min?, max?);
    if syntaxes.is_empty() {
        for (key, given) in [("min_statements", min), ("max_statements", max)] {
            if let (Some(_), Some(n)) = (given, t.get(key)) {
                let why = "needs targets.structured_data (or preset \"structured\")";
                r.invalid(&t.child(key), n, why);
            }
        }
        return (min.is_none() && max.is_none()).then_some(None);
    }
    let min_statements = min.unwrap_or(if linked { 1 } else { DEFAULT_MIN_STATEMENTS });
    let max_statements = max.unwrap_or(DEFAULT_MAX_STATEMENTS as u64);
    if max_statements < min_statements {
        let field = t.child("max_statements");
        let why = format!(
            "{max_statements} is under targets.min_statements ({min_statements}): no page could be relevant"
        );
        match t.get("max_statements").or_else(|| t.get("min_statements")) {
            Some(n) => r.invalid(&field, n, why),
            None => r.error(None, &field, why),
        }
        return None;
    }
    let has = |name: &str| syntaxes.iter().any(|s| s == name);
    Some(Some(StructuredTargets {
        options: StructuredOptions {
            json_ld: has("json-ld"),
            microdata: has("microdata"),
            rdfa: has("rdfa"),
            microformats: has("microformats"),
            max_statements: usize::try_from(max_statements).unwrap_or(usize::MAX),
            max_bytes: max_bytes.unwrap_or(DEFAULT_MAX_STATEMENT_BYTES),
        },
        min_statements,
    }))
}

/// `targets.rdf_follow`: a list of statement positions, none twice.
fn read_rdf_follow(r: &mut Reader<'_>, field: &str, node: Node<'_>) -> Option<Follow> {
    let names = r.strings_with(field, node, |s| {
        if RDF_FOLLOW.contains(&s) {
            Ok(s.to_string())
        } else {
            Err(format!(
                "{} is not one of {}",
                quote(s),
                RDF_FOLLOW.join(", ")
            ))
        }
    })?;
    let has = |n: &str| names.iter().any(|x| x == n);
    Some(Follow {
        subjects: has("subjects"),
        objects: has("objects"),
        predicates: has("predicates"),
        types: has("types"),
    })
}

/// Whether blocking pattern `block` blocks every type of pattern `target`.
fn covers(block: &str, target: &str) -> bool {
    if block.ends_with('/') {
        target.starts_with(block)
    } else {
        block == target
    }
}

/// A MIME pattern: `type/subtype` or `type/` (a whole top-level type), lower-cased.
pub fn check_mime_pattern(s: &str) -> Result<String, String> {
    let p = s.trim().to_ascii_lowercase();
    let Some((ty, sub)) = p.split_once('/') else {
        return Err(format!(
            "invalid MIME pattern {}: expected \"type/subtype\" or \"type/\"",
            quote(s)
        ));
    };
    if sub == "*" {
        return Err(format!(
            "invalid MIME pattern {}: write \"{ty}/\" for every {ty} type",
            quote(s)
        ));
    }
    // RFC 6838 restricted names.
    let token = |t: &str| {
        !t.is_empty()
            && t.len() <= 127
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    if !token(ty) || !(sub.is_empty() || token(sub)) {
        return Err(format!(
            "invalid MIME pattern {}: expected \"type/subtype\" or \"type/\"",
            quote(s)
        ));
    }
    Ok(p)
}

/// A file extension without the dot, lower-cased.
pub fn check_extension(s: &str) -> Result<String, String> {
    let e = s.trim();
    if e.contains('.') {
        return Err(format!(
            "invalid extension {}: write extensions without dots (\"{}\")",
            quote(s),
            e.rsplit('.').next().unwrap_or_default()
        ));
    }
    if e.is_empty()
        || e.len() > 32
        || !e
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'+' || b == b'~')
    {
        return Err(format!(
            "invalid extension {}: use 1 to 32 letters, digits, '_', '-', '+' or '~'",
            quote(s)
        ));
    }
    Ok(e.to_ascii_lowercase())
}

/// `strategy`: the job's, when it was valid (`neither_links = "skip"` asks
/// something of it).
fn read_budget(
    r: &mut Reader<'_>,
    t: &Table<'_>,
    strategy: Option<StrategyKind>,
) -> Option<BudgetSpec> {
    let d = BudgetSpec::default();
    let requests = optional(t, "requests", |n| r.u64(&t.child("requests"), n));
    let bytes = optional(t, "bytes", |n| r.size(&t.child("bytes"), n));
    let early_stop = optional(t, "early_stop", |n| r.bool(&t.child("early_stop"), n));
    let neither_links = optional(t, "neither_links", |n| {
        let field = t.child("neither_links");
        let choice = r.choice(&field, n, &NeitherLinks::ALL)?;
        match strategy {
            Some(s) if choice == NeitherLinks::Skip && s != StrategyKind::Sb => {
                r.invalid(
                    &field,
                    n,
                    format!(
                        "\"skip\" needs strategy = \"sb\", the only one that learns which links are neither (this job's is {})",
                        quote(s.name())
                    ),
                );
                None
            }
            _ => Some(choice),
        }
    });
    Some(BudgetSpec {
        requests: requests.unwrap_or(Some(d.requests))?,
        bytes: bytes.unwrap_or(Some(d.bytes))?,
        early_stop: early_stop.unwrap_or(Some(d.early_stop))?,
        neither_links: neither_links.unwrap_or(Some(d.neither_links))?,
    })
}

fn read_output(r: &mut Reader<'_>, t: &Table<'_>) -> Option<OutputSpec> {
    let d = OutputSpec::default();
    let warc = optional(t, "warc", |n| r.bool(&t.child("warc"), n));
    let crawl_log = optional(t, "crawl_log", |n| r.bool(&t.child("crawl_log"), n));
    let max_size = optional(t, "warc_max_size", |n| {
        let field = t.child("warc_max_size");
        let size = r.size(&field, n)?;
        let (lo, hi) = WARC_SIZE_RANGE;
        if !(lo..=hi).contains(&size) {
            r.invalid(
                &field,
                n,
                format!(
                    "{} is out of range ({} to {})",
                    super::show_size(size),
                    super::show_size(lo),
                    super::show_size(hi)
                ),
            );
            return None;
        }
        Some(size)
    });
    Some(OutputSpec {
        warc: warc.unwrap_or(Some(d.warc))?,
        warc_max_size: max_size.unwrap_or(Some(d.warc_max_size))?,
        crawl_log: crawl_log.unwrap_or(Some(d.crawl_log))?,
    })
}

fn read_politeness(r: &mut Reader<'_>, t: &Table<'_>) -> Option<PolitenessSpec> {
    let d = PolitenessSpec::default();
    let delay = optional(t, "delay", |n| {
        r.duration_in(&t.child("delay"), n, Duration::ZERO, MAX_DELAY)
    });
    let robots = optional(t, "robots", |n| r.bool(&t.child("robots"), n));
    let user_agent = optional(t, "user_agent", |n| {
        let field = t.child("user_agent");
        let s = r.string(&field, n)?;
        match check_user_agent(s) {
            Ok(ua) => Some(ua),
            Err(why) => {
                r.invalid(&field, n, why);
                None
            }
        }
    });
    let max_in_flight = optional(t, "max_in_flight", |n| {
        r.u64_in(&t.child("max_in_flight"), n, 1, MAX_IN_FLIGHT)
            .map(|v| v as u32)
    });
    let per = optional(t, "per", |n| {
        r.choice(
            &t.child("per"),
            n,
            &[("host", PolitenessPer::Host), ("pld", PolitenessPer::Pld)],
        )
    });
    let look_ahead = optional(t, "look_ahead", |n| {
        r.u64_in(&t.child("look_ahead"), n, 1, MAX_LOOK_AHEAD)
            .map(|v| v as u32)
    });
    let adaptive_delay = optional(t, "adaptive_delay", |n| {
        r.bool(&t.child("adaptive_delay"), n)
    });
    let max_delay = optional(t, "max_delay", |n| {
        r.duration_in(&t.child("max_delay"), n, Duration::ZERO, MAX_DELAY)
    });
    let max_backoff = optional(t, "max_backoff", |n| {
        r.duration_in(
            &t.child("max_backoff"),
            n,
            Duration::from_secs(1),
            MAX_BACKOFF_LIMIT,
        )
    });
    let forgive_after = optional(t, "forgive_after", |n| {
        r.duration_in(
            &t.child("forgive_after"),
            n,
            Duration::from_secs(1),
            MAX_BACKOFF_LIMIT,
        )
    });
    let delay = delay.unwrap_or(Some(d.delay));
    let max_delay = max_delay.unwrap_or(Some(d.max_delay));
    // A bound below the floor is a contradiction worth saying, not a silent clamp.
    if let (Some(low), Some(high), Some(node)) = (delay, max_delay, t.get("max_delay")) {
        if high < low {
            r.invalid(
                &t.child("max_delay"),
                node,
                format!(
                    "{} is shorter than delay ({}): the adaptive delay stays within [delay, max_delay]",
                    units::show_duration(high),
                    units::show_duration(low)
                ),
            );
            return None;
        }
    }
    Some(PolitenessSpec {
        delay: delay?,
        robots: robots.unwrap_or(Some(d.robots))?,
        user_agent: user_agent.unwrap_or(Some(d.user_agent))?,
        max_in_flight: max_in_flight.map_or(Some(None), |v| v.map(Some))?,
        per: per.map_or(Some(None), |v| v.map(Some))?,
        look_ahead: look_ahead.map_or(Some(None), |v| v.map(Some))?,
        adaptive_delay: adaptive_delay.unwrap_or(Some(d.adaptive_delay))?,
        max_delay: max_delay?,
        max_backoff: max_backoff.unwrap_or(Some(d.max_backoff))?,
        forgive_after: forgive_after.unwrap_or(Some(d.forgive_after))?,
    })
}

/// A user agent: non-empty printable ASCII (it goes into an HTTP header as is).
pub fn check_user_agent(s: &str) -> Result<String, String> {
    let ua = s.trim();
    if ua.is_empty() {
        return Err("must not be empty".into());
    }
    if ua.len() > MAX_USER_AGENT_LEN {
        return Err(format!("longer than {MAX_USER_AGENT_LEN} characters"));
    }
    if let Some(c) = ua.chars().find(|c| !(' '..='~').contains(c)) {
        return Err(format!(
            "must be printable ASCII, found {:?} in {}",
            c,
            quote(ua)
        ));
    }
    Ok(ua.to_owned())
}

fn read_limits(r: &mut Reader<'_>, t: &Table<'_>) -> Option<LimitsSpec> {
    let d = LimitsSpec::default();
    let max_body = optional(t, "max_body", |n| {
        let field = t.child("max_body");
        match r.size(&field, n)? {
            0 => {
                r.invalid(&field, n, "must be larger than 0");
                None
            }
            b => Some(b),
        }
    });
    let max_depth = optional(t, "max_depth", |n| {
        r.u64_in(&t.child("max_depth"), n, 0, u64::from(u32::MAX))
            .and_then(|v| u32::try_from(v).ok())
    });
    let max_links = optional(t, "max_links_per_page", |n| {
        let (lo, hi) = LINKS_PER_PAGE_RANGE;
        r.u64_in(&t.child("max_links_per_page"), n, lo, hi)
            .and_then(|v| usize::try_from(v).ok())
    });
    let max_url_len = optional(t, "max_url_len", |n| {
        let (lo, hi) = URL_LEN_RANGE;
        r.u64_in(&t.child("max_url_len"), n, lo, hi)
            .and_then(|v| usize::try_from(v).ok())
    });
    let strip_params = optional(t, "strip_params", |n| {
        r.strings_with(&t.child("strip_params"), n, check_param)
    });
    let retries = optional(t, "retries", |n| {
        r.u64_in(&t.child("retries"), n, 0, 100)
            .and_then(|v| u32::try_from(v).ok())
    });
    let retry_for = optional(t, "retry_for", |n| {
        r.duration_in(
            &t.child("retry_for"),
            n,
            Duration::ZERO,
            Duration::from_secs(7 * 24 * 3600),
        )
    });
    Some(LimitsSpec {
        retries: retries.unwrap_or(Some(d.retries))?,
        retry_for: retry_for.unwrap_or(Some(d.retry_for))?,
        max_body: max_body.unwrap_or(Some(d.max_body))?,
        max_depth: max_depth.unwrap_or(Some(d.max_depth))?,
        max_links_per_page: max_links.unwrap_or(Some(d.max_links_per_page))?,
        max_url_len: max_url_len.unwrap_or(Some(d.max_url_len))?,
        strip_params: strip_params.unwrap_or(Some(d.strip_params))?,
    })
}

/// A query key to strip: non-empty, no separators or spaces; lower-cased.
fn check_param(s: &str) -> Result<String, String> {
    let p = s.trim();
    if p.is_empty() || p.len() > 128 || p.chars().any(|c| "=&#?; ".contains(c) || c.is_control()) {
        return Err(format!(
            "invalid query key {}: 1 to 128 characters, none of '=', '&', '#', '?', ';' or spaces",
            quote(s)
        ));
    }
    Ok(p.to_ascii_lowercase())
}
