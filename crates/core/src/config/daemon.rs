//! The daemon's own configuration file (`/etc/forager/forager.toml`).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{quote, ConfigError};
use super::reader::{Node, Reader, Table};
use super::{first, read_config_file};

const FIELDS: &[&str] = &[
    "jobs_dir",
    "state_dir",
    "admin_listen",
    "admin_public",
    "max_jobs",
    "checkpoint_interval",
    "allow_private",
    "resolve",
    "log_format",
    "watch",
    "poll_interval",
    "cache_size",
    "parse_memory",
    "log_level",
    "http",
    "cluster",
];

/// Default of `parse_memory`: what the documents being parsed may hold at
/// once, across all jobs (docs/robustness.md has the figures behind it).
pub const DEFAULT_PARSE_MEMORY: u64 = 1 << 30;
/// Below this one honest document of 32 MiB could not be parsed at full speed.
pub const MIN_PARSE_MEMORY: u64 = 64 << 20;

/// The levels a `log_level` directive may name (tracing's, case-insensitive).
const LOG_LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

/// Shortest checkpoint or poll interval: below it the daemon would do nothing but that.
const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// Longest checkpoint or poll interval: beyond it a crash or an edit is noticed too late to be useful.
const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// Most concurrent jobs (the design target is 1 000 on two cores).
const MAX_JOBS: u64 = 1_000_000;
/// Smallest redb cache worth having.
const MIN_CACHE: u64 = 1 << 20;

/// How the daemon writes its logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (journald adds the time).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// How the daemon notices changes in the jobs folder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WatchMode {
    /// Kernel notifications (inotify…), debounced.
    #[default]
    Notify,
    /// Rescan every `poll_interval` (network filesystems, where notifications do not arrive).
    Poll,
}

/// Everything `forager daemon --config FILE` reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonConfig {
    /// Watched folder of job files. A relative path is taken from the config file's folder.
    pub jobs_dir: PathBuf,
    /// The store and the harvested targets. A relative path is taken from the config file's folder.
    pub state_dir: PathBuf,
    /// Admin HTTP API address; loopback unless `admin_public`.
    pub admin_listen: SocketAddr,
    /// Allow a non-loopback `admin_listen` (its read routes, the dashboard
    /// included, have no authentication; only purge needs the token).
    pub admin_public: bool,
    /// Jobs crawling at once; more wait their turn.
    pub max_jobs: usize,
    pub checkpoint_interval: Duration,
    /// Let crawls reach loopback, private and link-local addresses (tests, bench): the SSRF guard off.
    pub allow_private: bool,
    /// Host name (lower-case) → address to connect to instead of resolving it (tests).
    pub resolve: BTreeMap<String, SocketAddr>,
    pub log_format: LogFormat,
    /// Log filter in tracing's syntax (`"info"`, `"warn,forager::daemon=debug"`).
    /// `None` (the key absent): `RUST_LOG`, else `info`. `--log` on the
    /// command line overrides both. SIGHUP applies a change.
    pub log_level: Option<String>,
    pub watch: WatchMode,
    /// Rescan period when `watch = "poll"`.
    pub poll_interval: Duration,
    /// redb page cache, bytes, shared by every job. 16 MiB by default: with
    /// 1 000 small jobs it peaks 77 MiB lower than 64 MiB; one large job ran
    /// as fast, its CPU per request within the noise (docs/efficiency.md, "The daemon").
    pub cache_size: u64,
    /// Bytes that documents being parsed (RDF documents, pages of
    /// structured-data jobs) may hold at once across all jobs: a document
    /// waits for its share, or is cut, never the process aborted.
    pub parse_memory: u64,
    /// `[http]`: headers, per-host credentials and a proxy for every job
    /// (a job's own `[http]` wins where both say something). Read at start.
    pub http: crate::http_options::HttpOptions,
    /// `[cluster]`: this daemon is one node of a cluster sharing a PostgreSQL
    /// database (docs/cluster.md). `None`, the default: a machine alone, no database.
    pub cluster: Option<super::cluster::ClusterConfig>,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            jobs_dir: PathBuf::from("/etc/forager/jobs.d"),
            state_dir: PathBuf::from("/var/lib/forager"),
            admin_listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 7878),
            admin_public: false,
            max_jobs: 64,
            checkpoint_interval: Duration::from_secs(5),
            allow_private: false,
            resolve: BTreeMap::new(),
            log_format: LogFormat::Text,
            log_level: None,
            watch: WatchMode::Notify,
            poll_interval: Duration::from_secs(2),
            cache_size: 16 << 20,
            parse_memory: DEFAULT_PARSE_MEMORY,
            http: crate::http_options::HttpOptions::default(),
            cluster: None,
        }
    }
}

/// Parse and validate a daemon config's text; `origin` names the file in errors and anchors relative paths.
pub fn parse_daemon(text: &str, origin: &Path) -> Result<DaemonConfig, ConfigError> {
    parse_daemon_all(text, origin).map_err(first)
}

/// Like [`parse_daemon`], reporting every problem (in file order, never empty).
pub fn parse_daemon_all(text: &str, origin: &Path) -> Result<DaemonConfig, Vec<ConfigError>> {
    let mut r = Reader::new(origin, text);
    let doc = r.parse_document().map_err(|e| vec![e])?;
    let root = r.root(&doc, FIELDS);
    let config = read_daemon(&mut r, &root, origin);
    r.finish()?;
    config.ok_or_else(|| vec![ConfigError::new(origin, None, "", "invalid config file")])
}

/// Read, parse and validate the daemon config file.
///
/// Relative folders are made absolute here (against the working directory,
/// when the config file was named by a relative path): the daemon, `status`
/// and the logs then name the folders a person can find from anywhere.
pub fn load_daemon(path: &Path) -> Result<DaemonConfig, ConfigError> {
    let text = read_config_file(path)?;
    let mut config = parse_daemon(&text, path)?;
    for dir in [&mut config.jobs_dir, &mut config.state_dir] {
        if dir.is_relative() {
            if let Ok(abs) = std::path::absolute(&*dir) {
                *dir = abs;
            }
        }
    }
    Ok(config)
}

fn read_daemon(r: &mut Reader<'_>, t: &Table<'_>, origin: &Path) -> Option<DaemonConfig> {
    let d = DaemonConfig::default();
    let base = origin.parent().unwrap_or(Path::new(""));
    let dir = |r: &mut Reader<'_>, key: &str, default: PathBuf| match t.get(key) {
        None => Some(default),
        Some(n) => read_dir(r, key, n, base),
    };
    let jobs_dir = dir(r, "jobs_dir", d.jobs_dir);
    let state_dir = dir(r, "state_dir", d.state_dir);
    let admin_public = flag(r, t, "admin_public", d.admin_public);
    let admin_listen = match t.get("admin_listen") {
        None => Some(d.admin_listen),
        Some(n) => read_admin_listen(r, n, admin_public.unwrap_or(false)),
    };
    let max_jobs = match t.get("max_jobs") {
        None => Some(d.max_jobs),
        Some(n) => r
            .u64_in("max_jobs", n, 1, MAX_JOBS)
            .and_then(|v| usize::try_from(v).ok()),
    };
    let interval = |r: &mut Reader<'_>, key: &str, default: Duration| match t.get(key) {
        None => Some(default),
        Some(n) => r.duration_in(key, n, MIN_INTERVAL, MAX_INTERVAL),
    };
    let checkpoint_interval = interval(r, "checkpoint_interval", d.checkpoint_interval);
    let poll_interval = interval(r, "poll_interval", d.poll_interval);
    let allow_private = flag(r, t, "allow_private", d.allow_private);
    let resolve = match t.get("resolve") {
        None => Some(BTreeMap::new()),
        Some(n) => read_resolve(r, n, allow_private.unwrap_or(true)),
    };
    let log_format = match t.get("log_format") {
        None => Some(d.log_format),
        Some(n) => r.choice(
            "log_format",
            n,
            &[("text", LogFormat::Text), ("json", LogFormat::Json)],
        ),
    };
    let log_level = match t.get("log_level") {
        None => Some(None),
        Some(n) => read_log_level(r, n).map(Some),
    };
    let watch = match t.get("watch") {
        None => Some(d.watch),
        Some(n) => r.choice(
            "watch",
            n,
            &[("notify", WatchMode::Notify), ("poll", WatchMode::Poll)],
        ),
    };
    let cache_size = match t.get("cache_size") {
        None => Some(d.cache_size),
        Some(n) => r.size("cache_size", n).and_then(|b| {
            if b < MIN_CACHE {
                r.invalid("cache_size", n, "must be at least 1 MiB");
                None
            } else {
                Some(b)
            }
        }),
    };
    let parse_memory = match t.get("parse_memory") {
        None => Some(d.parse_memory),
        Some(n) => r.size("parse_memory", n).and_then(|b| {
            if b < MIN_PARSE_MEMORY {
                r.invalid("parse_memory", n, "must be at least 64 MiB");
                None
            } else {
                Some(b)
            }
        }),
    };
    let http = match t.get("http") {
        None => Some(crate::http_options::HttpOptions::default()),
        Some(n) => r
            .table("http", n, super::http::HTTP_FIELDS)
            .and_then(|h| super::http::read_http(r, &h)),
    };
    let cluster = match t.get("cluster") {
        None => Some(None),
        Some(n) => super::cluster::read_cluster(r, n).map(Some),
    };
    Some(DaemonConfig {
        cluster: cluster?,
        http: http?,
        jobs_dir: jobs_dir?,
        state_dir: state_dir?,
        admin_listen: admin_listen?,
        admin_public: admin_public?,
        max_jobs: max_jobs?,
        checkpoint_interval: checkpoint_interval?,
        allow_private: allow_private?,
        resolve: resolve?,
        log_format: log_format?,
        log_level: log_level?,
        watch: watch?,
        poll_interval: poll_interval?,
        cache_size: cache_size?,
        parse_memory: parse_memory?,
    })
}

fn flag(r: &mut Reader<'_>, t: &Table<'_>, key: &str, default: bool) -> Option<bool> {
    match t.get(key) {
        None => Some(default),
        Some(n) => r.bool(key, n),
    }
}

fn read_dir(r: &mut Reader<'_>, field: &str, n: Node<'_>, base: &Path) -> Option<PathBuf> {
    let s = r.string(field, n)?;
    if s.trim().is_empty() {
        r.invalid(field, n, "must not be empty");
        return None;
    }
    if s.contains('\0') {
        r.invalid(field, n, "a path cannot contain a NUL character");
        return None;
    }
    let p = Path::new(s);
    Some(if p.is_relative() {
        base.join(p)
    } else {
        p.to_path_buf()
    })
}

/// A tracing filter whose every directive names a real level: a bare word
/// that is not a level (`"infoo"`) would silently mean "everything of target
/// infoo, nothing else", so it is refused.
fn read_log_level(r: &mut Reader<'_>, n: Node<'_>) -> Option<String> {
    let s = r.string("log_level", n)?;
    let text = s.trim();
    if text.is_empty() {
        r.invalid(
            "log_level",
            n,
            "must not be empty (e.g. \"info\", or \"warn,forager::daemon=debug\")",
        );
        return None;
    }
    // Spaces around directives and upper-case levels are the user's; tracing wants neither.
    let mut normalized = Vec::new();
    for directive in text.split(',').map(str::trim) {
        if directive.is_empty() {
            r.invalid("log_level", n, format!("empty directive in {}", quote(s)));
            return None;
        }
        let (target, level) = match directive.rsplit_once('=') {
            Some((t, l)) => (Some(t.trim()), l.trim()),
            None => (None, directive),
        };
        if target.is_some_and(str::is_empty) {
            r.invalid(
                "log_level",
                n,
                format!("directive {} has no target before '='", quote(directive)),
            );
            return None;
        }
        if !LOG_LEVELS.iter().any(|l| l.eq_ignore_ascii_case(level)) {
            let shape = if target.is_some() {
                "TARGET=LEVEL"
            } else {
                "a level or TARGET=LEVEL"
            };
            r.invalid(
                "log_level",
                n,
                format!(
                    "unknown level {} in {} (expected {shape}, levels: {})",
                    quote(level),
                    quote(directive),
                    LOG_LEVELS.join(", ")
                ),
            );
            return None;
        }
        let level = level.to_ascii_lowercase();
        normalized.push(match target {
            Some(t) => format!("{t}={level}"),
            None => level,
        });
    }
    let filter = normalized.join(",");
    // What the subscriber will parse: anything it still refuses is refused here, not at start.
    if let Err(e) = tracing_subscriber::EnvFilter::builder().parse(&filter) {
        r.invalid("log_level", n, format!("invalid filter {}: {e}", quote(s)));
        return None;
    }
    Some(filter)
}

fn read_admin_listen(r: &mut Reader<'_>, n: Node<'_>, public: bool) -> Option<SocketAddr> {
    let s = r.string("admin_listen", n)?;
    let Ok(addr) = s.trim().parse::<SocketAddr>() else {
        r.invalid(
            "admin_listen",
            n,
            format!(
                "invalid address {}: expected IP:PORT such as \"127.0.0.1:7878\" or \"[::1]:7878\"",
                quote(s)
            ),
        );
        return None;
    };
    if !addr.ip().is_loopback() && !public {
        r.invalid(
            "admin_listen",
            n,
            format!(
                "{addr} is not a loopback address and the admin API's read routes (status, dashboard, metrics) have no authentication; \
                 set admin_public = true to expose it anyway"
            ),
        );
        return None;
    }
    Some(addr)
}

fn read_resolve(
    r: &mut Reader<'_>,
    n: Node<'_>,
    allow_private: bool,
) -> Option<BTreeMap<String, SocketAddr>> {
    let table = r.open_table("resolve", n)?;
    let mut out = BTreeMap::new();
    let mut ok = true;
    for (host, key_span, value) in table.entries() {
        let field = table.child(host);
        let name = host.to_ascii_lowercase();
        if !is_host_name(&name) {
            r.error(
                Some(key_span),
                &field,
                format!("invalid host name {}", quote(host)),
            );
            ok = false;
            continue;
        }
        let Some(s) = r.string(&field, value) else {
            ok = false;
            continue;
        };
        let Ok(addr) = s.trim().parse::<SocketAddr>() else {
            r.invalid(
                &field,
                value,
                format!(
                    "invalid address {}: expected IP:PORT such as \"127.0.0.1:8080\"",
                    quote(s)
                ),
            );
            ok = false;
            continue;
        };
        if addr.port() == 0 {
            r.invalid(&field, value, "port 0 cannot be connected to");
            ok = false;
            continue;
        }
        if !allow_private && !is_public(addr.ip()) {
            r.invalid(
                &field,
                value,
                format!(
                    "{addr} is a private address and allow_private = false: \
                     the SSRF guard would refuse every request to {name}"
                ),
            );
            ok = false;
            continue;
        }
        if out.insert(name, addr).is_some() {
            r.error(
                Some(key_span),
                &field,
                "host name listed twice (names are case-insensitive)",
            );
            ok = false;
        }
    }
    ok.then_some(out)
}

/// A DNS host name: dot-separated labels of letters, digits and `-` (lower-case here).
fn is_host_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        })
}

/// Whether `ip` is a public unicast address (what the SSRF guard lets through by default).
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                // 100.64.0.0/10, carrier-grade NAT
                || (o[0] == 100 && (o[1] & 0xC0) == 64)
                // 0.0.0.0/8
                || o[0] == 0)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let seg0 = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // fc00::/7 unique local, fe80::/10 link-local
                || (seg0 & 0xFE00) == 0xFC00
                || (seg0 & 0xFFC0) == 0xFE80)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DaemonConfig, String> {
        parse_daemon(text, Path::new("forager.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn log_level_is_absent_by_default_and_read_when_given() {
        assert_eq!(parse("").unwrap().log_level, None);
        assert_eq!(
            parse("log_level = \"debug\"\n")
                .unwrap()
                .log_level
                .as_deref(),
            Some("debug")
        );
        assert_eq!(
            parse("log_level = \" warn, forager::daemon=DEBUG \"\n")
                .unwrap()
                .log_level
                .as_deref(),
            Some("warn,forager::daemon=debug")
        );
        assert_eq!(
            parse("log_level = \"off\"\n").unwrap().log_level.as_deref(),
            Some("off")
        );
    }

    #[test]
    fn log_level_errors_name_file_line_and_reason() {
        assert_eq!(
            parse("max_jobs = 2\nlog_level = \"infoo\"\n").unwrap_err(),
            "forager.toml:2: log_level: unknown level \"infoo\" in \"infoo\" \
             (expected a level or TARGET=LEVEL, levels: off, error, warn, info, debug, trace)"
        );
        assert_eq!(
            parse("log_level = \"info,forager=loud\"\n").unwrap_err(),
            "forager.toml:1: log_level: unknown level \"loud\" in \"forager=loud\" \
             (expected TARGET=LEVEL, levels: off, error, warn, info, debug, trace)"
        );
        assert_eq!(
            parse("log_level = \"\"\n").unwrap_err(),
            "forager.toml:1: log_level: must not be empty (e.g. \"info\", or \"warn,forager::daemon=debug\")"
        );
        assert_eq!(
            parse("log_level = \"info,,debug\"\n").unwrap_err(),
            "forager.toml:1: log_level: empty directive in \"info,,debug\""
        );
        assert_eq!(
            parse("log_level = \"=info\"\n").unwrap_err(),
            "forager.toml:1: log_level: directive \"=info\" has no target before '='"
        );
        assert_eq!(
            parse("\n\nlog_level = 3\n").unwrap_err(),
            "forager.toml:3: log_level: expected a string, found an integer"
        );
        // What tracing itself refuses (an unclosed span filter) is caught too.
        let e = parse("log_level = \"forager[span=debug\"\n").unwrap_err();
        assert!(e.starts_with("forager.toml:1: log_level: "), "{e}");
    }
}
