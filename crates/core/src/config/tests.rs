//! Tests of the config module: examples, defaults, every error message, and no panic on any input.

use super::*;
use crate::extract::ScopeKind;
use crate::mime::{Label, Preset};
use crate::revisit::RevisitPolicy;
use crate::strategy::StrategyKind;
use proptest::prelude::*;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use url::Url;

const EXAMPLE_STATISTICS: &str = include_str!("../../../../config/jobs.d/example-statistics.toml");
const EXAMPLE_MINIMAL: &str = include_str!("../../../../config/jobs.d/example-minimal.toml");
const EXAMPLE_STRUCTURED: &str = include_str!("../../../../config/jobs.d/example-structured.toml");
const EXAMPLE_DAEMON: &str = include_str!("../../../../config/forager.toml");

const ORIGIN: &str = "jobs.d/x.toml";
const HEAD: &str = "name = \"x\"\nseeds = [\"https://a.test/\"]\n";

fn job(text: &str) -> JobSpec {
    match parse_job(text, Path::new(ORIGIN)) {
        Ok(j) => j,
        Err(e) => panic!("expected a valid job, got: {e}"),
    }
}

/// The one-line message for a job file that must be refused.
fn job_err(text: &str) -> String {
    match parse_job(text, Path::new(ORIGIN)) {
        Ok(j) => panic!("expected an error, got {j:?}"),
        Err(e) => e.to_string(),
    }
}

fn daemon(text: &str) -> DaemonConfig {
    match parse_daemon(text, Path::new("/etc/forager/forager.toml")) {
        Ok(d) => d,
        Err(e) => panic!("expected a valid config, got: {e}"),
    }
}

fn daemon_err(text: &str) -> String {
    match parse_daemon(text, Path::new("forager.toml")) {
        Ok(d) => panic!("expected an error, got {d:?}"),
        Err(e) => e.to_string(),
    }
}

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

// ---------------------------------------------------------------- examples and defaults

#[test]
fn minimal_example_takes_every_default() {
    let j = parse_job(
        EXAMPLE_MINIMAL,
        Path::new("config/jobs.d/example-minimal.toml"),
    )
    .unwrap();
    assert_eq!(
        j,
        JobSpec::new("example-minimal", vec![url("https://www.bea.gov/")])
    );
    assert_eq!(j.scope, ScopeKind::Site);
    assert_eq!(j.strategy, StrategyKind::Sb);
    assert_eq!(j.seed, 1);
    assert_eq!(j.targets.preset, Preset::Statistics);
    assert_eq!(j.budget.requests, 100_000);
    assert_eq!(j.budget.bytes, 20 * 1024 * 1024 * 1024);
    assert!(j.budget.early_stop);
    assert_eq!(j.politeness.delay, Duration::from_secs(1));
    assert!(j.politeness.robots);
    assert_eq!(
        j.politeness.user_agent,
        format!(
            "forager/{} (+https://github.com/forager-crawler/forager)",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(j.limits.max_body, 512 * 1024 * 1024);
    assert_eq!(j.limits.max_depth, 0);
    assert_eq!(j.limits.max_links_per_page, 10_000);
    assert_eq!(j.limits.max_url_len, 2048);
    assert!(j.limits.strip_params.contains(&"jsessionid".to_string()));
    assert_eq!(j.targets.block_mime, vec!["image/", "audio/", "video/"]);
    for ext in ["jpg", "png", "mp4", "css", "woff2", "js"] {
        assert!(j.targets.block_ext.contains(&ext.to_string()), "{ext}");
    }
}

#[test]
fn statistics_example_spells_out_the_defaults() {
    let j = parse_job(EXAMPLE_STATISTICS, Path::new("example-statistics.toml")).unwrap();
    let mut expected = JobSpec::new("example-statistics", vec![url("https://www.bea.gov/")]);
    // The example's user agent is a fixed string; everything else is the default, written out.
    expected.politeness.user_agent =
        "forager/0.1 (+https://github.com/forager-crawler/forager)".into();
    assert_eq!(j, expected);
}

#[test]
fn statistics_example_names_every_field() {
    // A field missing from the example would be a field users never learn about.
    for key in [
        "name =",
        "seeds =",
        "scope =",
        "strategy =",
        "seed =",
        "mode =",
        "[targets]",
        "preset =",
        "mime =",
        "block_mime =",
        "block_ext =",
        "catalogs =",
        "[budget]",
        "requests =",
        "bytes =",
        "early_stop =",
        "neither_links =",
        "[politeness]",
        "delay =",
        "robots =",
        "user_agent =",
        "[limits]",
        "max_body =",
        "max_depth =",
        "max_links_per_page =",
        "max_url_len =",
        "strip_params =",
    ] {
        assert!(
            EXAMPLE_STATISTICS.lines().any(|l| l.starts_with(key)),
            "{key} missing"
        );
    }
}

#[test]
fn daemon_example_is_the_default() {
    let d = parse_daemon(EXAMPLE_DAEMON, Path::new("config/forager.toml")).unwrap();
    assert_eq!(d, DaemonConfig::default());
    assert!(d.admin_listen.ip().is_loopback());
    for key in [
        "jobs_dir",
        "state_dir",
        "admin_listen",
        "admin_public",
        "max_jobs",
        "checkpoint_interval",
        "allow_private",
        "watch",
        "poll_interval",
        "log_format",
        "cache_size",
        "[resolve]",
    ] {
        assert!(
            EXAMPLE_DAEMON.lines().any(|l| l.starts_with(key)),
            "{key} missing"
        );
    }
}

#[test]
fn example_jobs_are_job_files() {
    assert!(is_job_file(Path::new(
        "config/jobs.d/example-statistics.toml"
    )));
    assert!(is_job_file(Path::new("config/jobs.d/example-minimal.toml")));
}

#[test]
fn daemon_defaults() {
    let d = DaemonConfig::default();
    assert_eq!(d.jobs_dir, PathBuf::from("/etc/forager/jobs.d"));
    assert_eq!(d.state_dir, PathBuf::from("/var/lib/forager"));
    assert_eq!(
        d.admin_listen,
        "127.0.0.1:7878".parse::<SocketAddr>().unwrap()
    );
    assert!(!d.admin_public);
    assert_eq!(d.max_jobs, 64);
    assert_eq!(d.checkpoint_interval, Duration::from_secs(5));
    assert!(!d.allow_private);
    assert!(d.resolve.is_empty());
    assert_eq!(d.log_format, LogFormat::Text);
    assert_eq!(d.watch, WatchMode::Notify);
    assert_eq!(d.poll_interval, Duration::from_secs(2));
    assert_eq!(d.cache_size, 16 * 1024 * 1024);
    assert_eq!(daemon(""), d);
}

// ---------------------------------------------------------------- valid job files

#[test]
fn every_field_is_read() {
    let j = job(r#"
name = "bea_2-x"
seeds = ["https://www.bea.gov/", "http://apps.bea.gov/data?x=1"]
scope = "host"
strategy = "bfs"
seed = 42

[targets]
preset = "documents"
mime = ["Text/Tab-Separated-Values", "model/"]
block_mime = ["image/", "application/x-shockwave-flash"]
block_ext = ["JPG", "mp4"]

[budget]
requests = 0
bytes = 1048576
early_stop = false
neither_links = "last"

[politeness]
delay = "250ms"
robots = false
user_agent = "  research-bot/1.0 (+mailto:me@example.org)  "

[limits]
max_body = "1.5 KiB"
max_depth = 7
max_links_per_page = 500
max_url_len = 512
strip_params = ["SID", "utm_source"]
"#);
    assert_eq!(j.name, "bea_2-x");
    assert_eq!(
        j.seeds,
        vec![
            url("https://www.bea.gov/"),
            url("http://apps.bea.gov/data?x=1")
        ]
    );
    assert_eq!(j.scope, ScopeKind::Host);
    assert_eq!(j.strategy, StrategyKind::Bfs);
    assert_eq!(j.seed, 42);
    assert_eq!(j.targets.preset, Preset::Documents);
    assert_eq!(j.targets.mime, vec!["text/tab-separated-values", "model/"]);
    assert_eq!(
        j.targets.block_mime,
        vec!["image/", "application/x-shockwave-flash"]
    );
    assert_eq!(j.targets.block_ext, vec!["jpg", "mp4"]);
    assert_eq!(
        j.budget,
        BudgetSpec {
            requests: 0,
            bytes: 1 << 20,
            early_stop: false,
            neither_links: NeitherLinks::Last,
        }
    );
    assert_eq!(j.politeness.delay, Duration::from_millis(250));
    assert!(!j.politeness.robots);
    assert_eq!(
        j.politeness.user_agent,
        "research-bot/1.0 (+mailto:me@example.org)"
    );
    assert_eq!(
        j.limits,
        LimitsSpec {
            max_body: 1536,
            max_depth: 7,
            max_links_per_page: 500,
            max_url_len: 512,
            strip_params: vec!["sid".into(), "utm_source".into()],
            retries: 5,
            retry_for: std::time::Duration::from_secs(3600),
        }
    );
}

#[test]
fn every_strategy_and_scope_name_parses() {
    for k in StrategyKind::ALL {
        let j = job(&format!("{HEAD}strategy = \"{}\"\n", k.name()));
        assert_eq!(j.strategy, k);
    }
    for (name, scope) in [
        ("site", ScopeKind::Site),
        ("host", ScopeKind::Host),
        ("any", ScopeKind::Any),
    ] {
        assert_eq!(job(&format!("{HEAD}scope = \"{name}\"\n")).scope, scope);
    }
}

#[test]
fn dotted_keys_and_inline_tables_are_the_same_fields() {
    let a = job(&format!(
        "{HEAD}budget.requests = 5\npoliteness = {{ delay = \"0s\" }}\n"
    ));
    assert_eq!(a.budget.requests, 5);
    assert_eq!(a.politeness.delay, Duration::ZERO);
    assert_eq!(a.budget.bytes, BudgetSpec::default().bytes);
}

#[test]
fn sizes_accept_integers_and_unit_strings() {
    for (v, bytes) in [
        ("0", 0u64),
        ("1024", 1024),
        ("\"20 GiB\"", 20 << 30),
        ("\"512 MiB\"", 512 << 20),
        ("\"3 GB\"", 3_000_000_000),
        ("\"1_000\"", 1000),
    ] {
        assert_eq!(
            job(&format!("{HEAD}[budget]\nbytes = {v}\n")).budget.bytes,
            bytes,
            "{v}"
        );
    }
}

#[test]
fn preset_none_with_own_types() {
    let j = job(&format!(
        "{HEAD}[targets]\npreset = \"none\"\nmime = [\"image/\"]\nblock_mime = []\n"
    ));
    let set = j.targets.target_set();
    assert_eq!(set.classify(Some("image/png")), Label::Target);
    assert_eq!(set.classify(Some("text/csv")), Label::Neither);
}

#[test]
fn target_set_follows_the_spec() {
    let t = TargetsSpec::default().target_set();
    assert_eq!(t.classify(Some("text/csv")), Label::Target);
    assert_eq!(t.classify(Some("image/png")), Label::Neither);
    assert!(t.is_blocked("video/mp4"));
    let mut spec = TargetsSpec::default();
    spec.mime.push("text/plain".into());
    assert_eq!(
        spec.target_set().classify(Some("text/plain")),
        Label::Target
    );
}

#[test]
fn extension_blocking_reads_the_last_segment_only() {
    let t = TargetsSpec::default();
    for blocked in [
        "https://a.test/img/logo.png",
        "https://a.test/img/LOGO.PNG",
        "https://a.test/app.js?v=3",
        "https://a.test/a/b/font.woff2#x",
        "https://a.test/.jpg",
    ] {
        assert!(t.blocks_extension(&url(blocked)), "{blocked}");
    }
    for allowed in [
        "https://a.test/data.csv",
        "https://a.test/png/data",
        "https://a.test/photo.png/",
        "https://a.test/report.pdf?format=png",
        "https://a.test/",
        "https://a.test/file.",
        "https://a.test/jpg",
        "https://a.test/x.json",
        "mailto:a@b.png",
    ] {
        assert!(!t.blocks_extension(&url(allowed)), "{allowed}");
    }
    let none = TargetsSpec {
        block_ext: vec![],
        ..TargetsSpec::default()
    };
    assert!(!none.blocks_extension(&url("https://a.test/logo.png")));
}

// ---------------------------------------------------------------- job errors, exact messages

#[test]
fn wrong_type_names_field_line_and_both_types() {
    assert_eq!(
        job_err(&format!("{HEAD}\n[budget]\nrequests = \"100\"\n")),
        "jobs.d/x.toml:5: budget.requests: expected an integer, found a string"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\nrobots = \"yes\"\n")),
        "jobs.d/x.toml:4: politeness.robots: expected a boolean, found a string"
    );
    assert_eq!(
        job_err("name = \"x\"\nseeds = \"https://a.test/\"\n"),
        "jobs.d/x.toml:2: seeds: expected an array, found a string"
    );
    assert_eq!(
        job_err(&format!("{HEAD}targets = 5\n")),
        "jobs.d/x.toml:3: targets: expected a table, found an integer"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[[budget]]\nrequests = 1\n")),
        "jobs.d/x.toml:3: budget: expected a table, found an array"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[budget]\nbytes = 1.5\n")),
        "jobs.d/x.toml:4: budget.bytes: expected a size (bytes, or a string such as \"512 MiB\"), found a float"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\ndelay = 1\n")),
        "jobs.d/x.toml:4: politeness.delay: expected a duration string such as \"1s\" or \"500ms\", found an integer"
    );
    assert_eq!(
        job_err(&format!("{HEAD}seed = 1979-05-27\n")),
        "jobs.d/x.toml:3: seed: expected an integer, found a datetime"
    );
    assert_eq!(
        job_err("name = \"x\"\nseeds = [\"https://a.test/\", 7]\n"),
        "jobs.d/x.toml:2: seeds[1]: expected a string, found an integer"
    );
}

#[test]
fn bad_durations_and_sizes() {
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\ndelay = \"1 sek\"\n")),
        "jobs.d/x.toml:4: politeness.delay: invalid duration \"1 sek\": unknown time unit \"sek\", supported units: ns, us/µs, ms, sec, min, hours, days, weeks, months, years (and few variations)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\ndelay = \"2h\"\n")),
        "jobs.d/x.toml:4: politeness.delay: 2h is longer than the maximum of 1h"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[budget]\nbytes = \"20 GB2\"\n")),
        "jobs.d/x.toml:4: budget.bytes: invalid size \"20 GB2\": unknown unit \"GB2\" (expected one of: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[budget]\nbytes = -1\n")),
        "jobs.d/x.toml:4: budget.bytes: expected a non-negative integer, found -1"
    );
    assert_eq!(
        job_err(&format!(
            "{HEAD}[budget]\nrequests = 99999999999999999999\n"
        )),
        "jobs.d/x.toml:4: budget.requests: integer 99999999999999999999 is too large"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[limits]\nmax_body = \"0 MiB\"\n")),
        "jobs.d/x.toml:4: limits.max_body: must be larger than 0"
    );
}

#[test]
fn unknown_fields_at_every_level() {
    assert_eq!(
        job_err(&format!("{HEAD}\n\n[budget]\nrequests = 5\n\nrequsts = 7\n")),
        "jobs.d/x.toml:8: budget.requsts: unknown field (expected one of: requests, bytes, early_stop, neither_links)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}nmae = \"y\"\n")),
        "jobs.d/x.toml:3: nmae: unknown field (expected one of: name, seeds, scope, strategy, seed, targets, budget, politeness, limits, output, http, mode, revisit, render)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\npresets = \"none\"\n")),
        "jobs.d/x.toml:4: targets.presets: unknown field (expected one of: preset, mime, ext, block_mime, block_ext, rdf, rdf_follow, structured_data, min_statements, max_statements, max_statement_bytes, prior, catalogs, forms, max_form_links, max_form_links_per_site)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\ndelay = \"1s\"\ncrawl_delay = \"1s\"\n")),
        "jobs.d/x.toml:5: politeness.crawl_delay: unknown field (expected one of: delay, robots, user_agent, max_in_flight, per, look_ahead, adaptive_delay, max_delay, max_backoff, forgive_after)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[limits]\nmax_bodies = 1\n")),
        "jobs.d/x.toml:4: limits.max_bodies: unknown field (expected one of: max_body, retries, retry_for, max_depth, max_links_per_page, max_url_len, strip_params)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[limits.sub]\nx = 1\n")),
        "jobs.d/x.toml:3: limits.sub: unknown field (expected one of: max_body, retries, retry_for, max_depth, max_links_per_page, max_url_len, strip_params)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}budget = {{ requsts = 1 }}\n")),
        "jobs.d/x.toml:3: budget.requsts: unknown field (expected one of: requests, bytes, early_stop, neither_links)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}\"odd key\" = 1\n")),
        "jobs.d/x.toml:3: \"odd key\": unknown field (expected one of: name, seeds, scope, strategy, seed, targets, budget, politeness, limits, output, http, mode, revisit, render)"
    );
}

#[test]
fn required_fields() {
    assert_eq!(
        job_err("seeds = [\"https://a.test/\"]\n"),
        "jobs.d/x.toml: name: missing required field"
    );
    assert_eq!(
        job_err("name = \"x\"\n"),
        "jobs.d/x.toml: seeds: missing required field"
    );
    assert_eq!(job_err(""), "jobs.d/x.toml: name: missing required field");
    assert_eq!(
        job_err("name = \"x\"\nseeds = []\n"),
        "jobs.d/x.toml:2: seeds: must list at least one URL"
    );
}

#[test]
fn names_and_seeds_are_checked() {
    assert_eq!(
        job_err("name = \"Bea Data\"\nseeds = [\"https://a.test/\"]\n"),
        "jobs.d/x.toml:1: name: invalid job name \"Bea Data\": use 1 to 64 characters among a-z, 0-9, '_' and '-'"
    );
    assert!(job_err(&format!(
        "name = \"{}\"\nseeds = [\"https://a.test/\"]\n",
        "a".repeat(65)
    ))
    .starts_with("jobs.d/x.toml:1: name: invalid job name"));
    job(&format!(
        "name = \"{}\"\nseeds = [\"https://a.test/\"]\n",
        "a".repeat(64)
    ));
    assert_eq!(
        job_err("name = \"\"\nseeds = [\"https://a.test/\"]\n"),
        "jobs.d/x.toml:1: name: invalid job name \"\": use 1 to 64 characters among a-z, 0-9, '_' and '-'"
    );
    assert_eq!(
        job_err("name = \"x\"\nseeds = [\"https://a.test/\", \"ftp://example.test/data\"]\n"),
        "jobs.d/x.toml:2: seeds[1]: not an http(s) URL: \"ftp://example.test/data\""
    );
    assert_eq!(
        job_err("name = \"x\"\nseeds = [\n  \"https://a.test/\",\n  \"a.test/page\",\n]\n"),
        "jobs.d/x.toml:4: seeds[1]: invalid URL \"a.test/page\": relative URL without a base"
    );
    assert_eq!(
        job_err("name = \"x\"\nseeds = [\"file:///etc/passwd\"]\n"),
        "jobs.d/x.toml:2: seeds[0]: not an http(s) URL: \"file:///etc/passwd\""
    );
    assert_eq!(
        job_err(&format!(
            "name = \"x\"\nseeds = [\"https://a.test/{}\"]\n[limits]\nmax_url_len = 100\n",
            "p".repeat(100)
        )),
        "jobs.d/x.toml:2: seeds[0]: URL is 115 bytes long, over limits.max_url_len (100)"
    );
}

#[test]
fn choices_list_the_alternatives() {
    assert_eq!(
        job_err(&format!("{HEAD}scope = \"hots\"\n")),
        "jobs.d/x.toml:3: scope: unknown value \"hots\" (expected one of: site, host, any)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}strategy = \"SB\"\n")),
        "jobs.d/x.toml:3: strategy: unknown value \"SB\" (expected one of: sb, focused, bfs, dfs, random, ldcoc, anthelion, sb-binary)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\npreset = \"stats\"\n")),
        "jobs.d/x.toml:4: targets.preset: unknown value \"stats\" (expected one of: statistics, documents, linked-data, structured, archives, none)"
    );
}

#[test]
fn targets_are_checked() {
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\nmime = [\"csv\"]\n")),
        "jobs.d/x.toml:4: targets.mime[0]: invalid MIME pattern \"csv\": expected \"type/subtype\" or \"type/\""
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\nmime = [\"text/csv\", \"model/*\"]\n")),
        "jobs.d/x.toml:4: targets.mime[1]: invalid MIME pattern \"model/*\": write \"model/\" for every model type"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\nblock_mime = [\"/png\"]\n")),
        "jobs.d/x.toml:4: targets.block_mime[0]: invalid MIME pattern \"/png\": expected \"type/subtype\" or \"type/\""
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\nmime = [\"image/png\"]\n")),
        "jobs.d/x.toml:4: targets.mime[0]: \"image/png\" is also blocked by targets.block_mime entry \"image/\" (a default: set targets.block_mime to change it)"
    );
    assert_eq!(
        job_err(&format!(
            "{HEAD}[targets]\nmime = [\"text/plain\"]\nblock_mime = [\"text/\"]\n"
        )),
        "jobs.d/x.toml:4: targets.mime[0]: \"text/plain\" is also blocked by targets.block_mime entry \"text/\""
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\npreset = \"none\"\n")),
        "jobs.d/x.toml:4: targets.mime: preset \"none\" and no mime types: the job would harvest nothing"
    );
    let errors = parse_job_all(
        &format!("{HEAD}[targets]\npreset = \"none\"\nmime = [\"csv\"]\n"),
        Path::new(ORIGIN),
    )
    .unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].field, "targets.mime[0]");
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\nblock_ext = [\"png\", \".jpg\"]\n")),
        "jobs.d/x.toml:4: targets.block_ext[1]: invalid extension \".jpg\": write extensions without dots (\"jpg\")"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\nblock_ext = [\"\"]\n")),
        "jobs.d/x.toml:4: targets.block_ext[0]: invalid extension \"\": use 1 to 32 letters, digits, '_', '-', '+' or '~'"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\next = [\"sav\", \".dta\"]\n")),
        "jobs.d/x.toml:4: targets.ext[1]: invalid extension \".dta\": write extensions without dots (\"dta\")"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\next = [\"mp4\"]\n")),
        "jobs.d/x.toml:4: targets.ext[0]: \"mp4\" is also in targets.block_ext: links ending in it are never fetched"
    );
    let spec = parse_job(
        &format!(
            "{HEAD}[targets]\npreset = \"none\"\nmime = [\"application/pdf\"]\next = [\"Sav\"]\n"
        ),
        Path::new(ORIGIN),
    )
    .unwrap();
    assert_eq!(spec.targets.ext, ["sav"]);
    assert_eq!(
        spec.targets
            .target_set()
            .classify_file(Some("application/octet-stream"), Some("survey.sav")),
        Label::Target
    );
}

#[test]
fn politeness_and_limits_are_checked() {
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\nuser_agent = \"  \"\n")),
        "jobs.d/x.toml:4: politeness.user_agent: must not be empty"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\nuser_agent = \"bot\\nX-Evil: 1\"\n")),
        "jobs.d/x.toml:4: politeness.user_agent: must be printable ASCII, found '\\n' in \"bot\\nX-Evil: 1\""
    );
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\nuser_agent = \"robot-é\"\n")),
        "jobs.d/x.toml:4: politeness.user_agent: must be printable ASCII, found 'é' in \"robot-é\""
    );
    assert_eq!(
        job_err(&format!("{HEAD}[limits]\nmax_url_len = 8\n")),
        "jobs.d/x.toml:4: limits.max_url_len: 8 is out of range (16 to 65536)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[limits]\nmax_links_per_page = 0\n")),
        "jobs.d/x.toml:4: limits.max_links_per_page: 0 is out of range (1 to 1000000)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[limits]\nmax_depth = 4294967296\n")),
        "jobs.d/x.toml:4: limits.max_depth: 4294967296 is out of range (0 to 4294967295)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[limits]\nstrip_params = [\"sid=1\"]\n")),
        "jobs.d/x.toml:4: limits.strip_params[0]: invalid query key \"sid=1\": 1 to 128 characters, none of '=', '&', '#', '?', ';' or spaces"
    );
}

#[test]
fn toml_syntax_errors_have_their_line() {
    assert_eq!(
        job_err("name = \"x\"\nseeds = [\"https://a.test/\"\n[budget]\n"),
        "jobs.d/x.toml:3: invalid TOML (column 1): missing comma between array elements, expected `,`"
    );
    assert_eq!(
        job_err("name = \"x\"\nname = \"y\"\n"),
        "jobs.d/x.toml:2: invalid TOML (column 1): duplicate key \"name\""
    );
    assert_eq!(
        job_err("name = \"x\nseeds = []\n"),
        "jobs.d/x.toml:1: invalid TOML (column 10): invalid basic string, expected `\"`"
    );
    assert_eq!(
        job_err("[budget\n"),
        "jobs.d/x.toml:1: invalid TOML (column 8): unclosed table, expected `]`"
    );
}

#[test]
fn all_errors_come_in_file_order() {
    let text = "seeds = [\"ftp://a\"]\nscope = \"x\"\n[budget]\nrequests = \"1\"\nbogus = 1\n";
    let errors = parse_job_all(text, Path::new(ORIGIN)).unwrap_err();
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        vec![
            "jobs.d/x.toml:1: seeds[0]: not an http(s) URL: \"ftp://a\"",
            "jobs.d/x.toml:2: scope: unknown value \"x\" (expected one of: site, host, any)",
            "jobs.d/x.toml:4: budget.requests: expected an integer, found a string",
            "jobs.d/x.toml:5: budget.bogus: unknown field (expected one of: requests, bytes, early_stop, neither_links)",
            "jobs.d/x.toml: name: missing required field",
        ]
    );
    assert_eq!(errors[2].line, Some(4));
    assert_eq!(errors[2].field, "budget.requests");
    assert_eq!(errors[2].reason, "expected an integer, found a string");
    assert_eq!(errors[2].file, PathBuf::from(ORIGIN));
}

#[test]
fn load_job_reads_the_file_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, EXAMPLE_MINIMAL).unwrap();
    assert_eq!(load_job(&good).unwrap().name, "example-minimal");

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\nseeds = [\"https://a.test/\"]\n[budget]\nrequests = \"1\"\n",
    )
    .unwrap();
    assert_eq!(
        load_job(&bad).unwrap_err().to_string(),
        format!(
            "{}:4: budget.requests: expected an integer, found a string",
            bad.display()
        )
    );

    let missing = dir.path().join("missing.toml");
    let e = load_job(&missing).unwrap_err();
    assert_eq!(e.file, missing);
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read: ", missing.display())),
        "{e}"
    );
}

// ---------------------------------------------------------------- daemon config

#[test]
fn daemon_every_field() {
    let d = daemon(
        r#"
jobs_dir = "jobs.d"
state_dir = "/srv/forager"
admin_listen = "[::1]:9000"
max_jobs = 1000
checkpoint_interval = "500ms"
allow_private = true
log_format = "json"
watch = "poll"
poll_interval = "10s"
cache_size = "1 GiB"

[resolve]
"Site-A.test" = "127.0.0.1:8080"
"site-b.test" = "[::1]:8081"
"#,
    );
    assert_eq!(d.jobs_dir, PathBuf::from("/etc/forager/jobs.d"));
    assert_eq!(d.state_dir, PathBuf::from("/srv/forager"));
    assert_eq!(d.admin_listen, "[::1]:9000".parse::<SocketAddr>().unwrap());
    assert_eq!(d.max_jobs, 1000);
    assert_eq!(d.checkpoint_interval, Duration::from_millis(500));
    assert!(d.allow_private);
    assert_eq!(d.log_format, LogFormat::Json);
    assert_eq!(d.watch, WatchMode::Poll);
    assert_eq!(d.poll_interval, Duration::from_secs(10));
    assert_eq!(d.cache_size, 1 << 30);
    assert_eq!(d.resolve.len(), 2);
    assert_eq!(
        d.resolve["site-a.test"],
        "127.0.0.1:8080".parse::<SocketAddr>().unwrap()
    );
    assert_eq!(
        d.resolve["site-b.test"],
        "[::1]:8081".parse::<SocketAddr>().unwrap()
    );
}

#[test]
fn relative_dirs_follow_the_config_file() {
    let d = parse_daemon(
        "jobs_dir = \"jobs.d\"\nstate_dir = \"../state\"\n",
        Path::new("forager.toml"),
    )
    .unwrap();
    assert_eq!(d.jobs_dir, PathBuf::from("jobs.d"));
    assert_eq!(d.state_dir, PathBuf::from("../state"));
    let d = parse_daemon("jobs_dir = \"jobs.d\"\n", Path::new("/tmp/t/forager.toml")).unwrap();
    assert_eq!(d.jobs_dir, PathBuf::from("/tmp/t/jobs.d"));
}

#[test]
fn admin_listen_stays_on_loopback_unless_told() {
    assert_eq!(
        daemon_err("admin_listen = \"0.0.0.0:7878\"\n"),
        "forager.toml:1: admin_listen: 0.0.0.0:7878 is not a loopback address and the admin API's read routes (status, dashboard, metrics) have no authentication; set admin_public = true to expose it anyway"
    );
    let d = daemon("admin_listen = \"0.0.0.0:7878\"\nadmin_public = true\n");
    assert_eq!(
        d.admin_listen,
        "0.0.0.0:7878".parse::<SocketAddr>().unwrap()
    );
    assert!(d.admin_public);
    assert_eq!(
        daemon("admin_listen = \"127.0.0.2:0\"\n")
            .admin_listen
            .port(),
        0
    );
    assert_eq!(
        daemon_err("admin_listen = \"localhost:7878\"\n"),
        "forager.toml:1: admin_listen: invalid address \"localhost:7878\": expected IP:PORT such as \"127.0.0.1:7878\" or \"[::1]:7878\""
    );
}

#[test]
fn resolve_overrides_are_checked() {
    assert_eq!(
        daemon_err("[resolve]\n\"site-a.test\" = \"127.0.0.1:8080\"\n"),
        "forager.toml:2: resolve.\"site-a.test\": 127.0.0.1:8080 is a private address and allow_private = false: the SSRF guard would refuse every request to site-a.test"
    );
    assert_eq!(
        daemon_err("allow_private = true\n[resolve]\n\"bad host!\" = \"127.0.0.1:8080\"\n"),
        "forager.toml:3: resolve.\"bad host!\": invalid host name \"bad host!\""
    );
    assert_eq!(
        daemon_err("allow_private = true\n[resolve]\n\"a.test\" = \"127.0.0.1\"\n"),
        "forager.toml:3: resolve.\"a.test\": invalid address \"127.0.0.1\": expected IP:PORT such as \"127.0.0.1:8080\""
    );
    assert_eq!(
        daemon_err("allow_private = true\n[resolve]\n\"a.test\" = 8080\n"),
        "forager.toml:3: resolve.\"a.test\": expected a string, found an integer"
    );
    assert_eq!(
        daemon_err("allow_private = true\n[resolve]\n\"a.test\" = \"127.0.0.1:1\"\n\"A.test\" = \"127.0.0.1:2\"\n"),
        "forager.toml:4: resolve.\"A.test\": host name listed twice (names are case-insensitive)"
    );
    assert_eq!(
        daemon_err("resolve = [\"a\"]\n"),
        "forager.toml:1: resolve: expected a table, found an array"
    );
    // A public address needs no opt-in (it is what DNS would have said).
    let d = daemon("[resolve]\n\"a.test\" = \"93.184.216.34:80\"\n");
    assert_eq!(d.resolve.len(), 1);
}

#[test]
fn daemon_errors() {
    assert_eq!(
        daemon_err("max_job = 3\n"),
        "forager.toml:1: max_job: unknown field (expected one of: jobs_dir, state_dir, admin_listen, admin_public, max_jobs, checkpoint_interval, allow_private, resolve, log_format, watch, poll_interval, cache_size, parse_memory, log_level, http, cluster)"
    );
    assert_eq!(
        daemon_err("max_jobs = 0\n"),
        "forager.toml:1: max_jobs: 0 is out of range (1 to 1000000)"
    );
    assert_eq!(
        daemon_err("checkpoint_interval = \"0s\"\n"),
        "forager.toml:1: checkpoint_interval: must be longer than 0s"
    );
    assert_eq!(
        daemon_err("\npoll_interval = \"1ms\"\n"),
        "forager.toml:2: poll_interval: 1ms is shorter than the minimum of 10ms"
    );
    assert_eq!(
        daemon_err("poll_interval = \"2h\"\n"),
        "forager.toml:1: poll_interval: 2h is longer than the maximum of 1h"
    );
    assert_eq!(
        daemon_err("log_format = \"JSON\"\n"),
        "forager.toml:1: log_format: unknown value \"JSON\" (expected one of: text, json)"
    );
    assert_eq!(
        daemon_err("watch = \"inotify\"\n"),
        "forager.toml:1: watch: unknown value \"inotify\" (expected one of: notify, poll)"
    );
    assert_eq!(
        daemon_err("cache_size = \"1 KiB\"\n"),
        "forager.toml:1: cache_size: must be at least 1 MiB"
    );
    assert_eq!(
        daemon_err("jobs_dir = \"\"\n"),
        "forager.toml:1: jobs_dir: must not be empty"
    );
    assert_eq!(
        daemon_err("state_dir = 5\n"),
        "forager.toml:1: state_dir: expected a string, found an integer"
    );
    assert_eq!(
        daemon_err("allow_private = 1\n"),
        "forager.toml:1: allow_private: expected a boolean, found an integer"
    );
}

#[test]
fn load_daemon_reads_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forager.toml");
    std::fs::write(&path, "jobs_dir = \"jobs.d\"\nmax_jobs = 2\n").unwrap();
    let d = load_daemon(&path).unwrap();
    assert_eq!(d.jobs_dir, dir.path().join("jobs.d"));
    assert_eq!(d.max_jobs, 2);
    std::fs::write(&path, "max_jobs = \"2\"\n").unwrap();
    assert_eq!(
        load_daemon(&path).unwrap_err().to_string(),
        format!(
            "{}:1: max_jobs: expected an integer, found a string",
            path.display()
        )
    );
}

// ---------------------------------------------------------------- no panic on any input

/// What every outcome of a parse must satisfy: a valid spec, or a one-line error at a real line.
fn check_job_outcome(text: &str) -> Result<(), TestCaseError> {
    match parse_job(text, Path::new(ORIGIN)) {
        Ok(j) => {
            prop_assert!(is_valid_job_name(&j.name));
            prop_assert!(!j.seeds.is_empty());
            prop_assert!(j
                .seeds
                .iter()
                .all(|u| matches!(u.scheme(), "http" | "https")));
            prop_assert!(j.politeness.delay <= MAX_DELAY);
            prop_assert!(j.limits.max_body > 0);
            prop_assert!(!j.politeness.user_agent.is_empty());
            prop_assert!(j
                .politeness
                .user_agent
                .bytes()
                .all(|b| (b' '..=b'~').contains(&b)));
        }
        Err(e) => check_error(&e, text)?,
    }
    Ok(())
}

fn check_error(e: &ConfigError, text: &str) -> Result<(), TestCaseError> {
    let shown = e.to_string();
    prop_assert!(!shown.contains('\n') && !shown.contains('\r'), "{shown:?}");
    prop_assert!(shown.starts_with(ORIGIN), "{shown:?}");
    prop_assert!(!e.reason.is_empty());
    if let Some(line) = e.line {
        prop_assert!(
            line >= 1 && line <= text.split('\n').count(),
            "line {line} of {shown:?}"
        );
    }
    Ok(())
}

fn check_daemon_outcome(text: &str) -> Result<(), TestCaseError> {
    match parse_daemon(text, Path::new(ORIGIN)) {
        Ok(d) => {
            prop_assert!(d.admin_listen.ip().is_loopback() || d.admin_public);
            prop_assert!(d.max_jobs >= 1);
            prop_assert!(!d.poll_interval.is_zero() && !d.checkpoint_interval.is_zero());
        }
        Err(e) => check_error(&e, text)?,
    }
    Ok(())
}

/// Pieces of TOML, valid and not, that mutations splice into a job file.
const FRAGMENTS: &[&str] = &[
    "\n",
    "=",
    "\"",
    "'",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    ",",
    ".",
    "#",
    "\\",
    "\"\"\"",
    "-",
    "name",
    "seeds",
    "budget",
    "requests",
    "bytes",
    "delay",
    "limits",
    "targets",
    "mime",
    "\"1s\"",
    "\"20 GiB\"",
    "0",
    "-1",
    "1e999",
    "nan",
    "true",
    "1979-05-27T00:00:00Z",
    "\"https://a.test/\"",
    "\"ftp://x\"",
    "[]",
    "{}",
    "\u{0}",
    "\u{feff}",
    "é",
    "\r\n",
    "99999999999999999999999",
    "0x7fffffffffffffff",
    "\"\\u0000\"",
    "\"\\n\"",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete {
        at: usize,
        len: usize,
    },
    Insert {
        at: usize,
        fragment: usize,
    },
    Replace {
        at: usize,
        len: usize,
        fragment: usize,
    },
    Duplicate {
        at: usize,
        len: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let frag = 0..FRAGMENTS.len();
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), frag.clone()).prop_map(|(at, fragment)| Mutation::Insert { at, fragment }),
        (any::<usize>(), 1usize..10, frag).prop_map(|(at, len, fragment)| Mutation::Replace {
            at,
            len,
            fragment
        }),
        (any::<usize>(), 1usize..200).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
    ]
}

/// The char boundary at or before `at % (len + 1)`.
fn boundary(s: &str, at: usize) -> usize {
    let mut i = at % (s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &mut String, m: &Mutation) {
    match *m {
        Mutation::Delete { at, len } => {
            let a = boundary(text, at);
            let b = boundary(text, a.saturating_add(len).min(text.len()));
            text.replace_range(a..b, "");
        }
        Mutation::Insert { at, fragment } => {
            let a = boundary(text, at);
            text.insert_str(a, FRAGMENTS[fragment]);
        }
        Mutation::Replace { at, len, fragment } => {
            let a = boundary(text, at);
            let b = boundary(text, a.saturating_add(len).min(text.len()));
            text.replace_range(a..b, FRAGMENTS[fragment]);
        }
        Mutation::Duplicate { at, len } => {
            let a = boundary(text, at);
            let b = boundary(text, a.saturating_add(len).min(text.len()));
            let piece = text[a..b].to_owned();
            text.insert_str(b, &piece);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        check_job_outcome(&text)?;
        check_daemon_outcome(&text)?;
    }

    #[test]
    fn toml_looking_text_never_panics(text in "([a-z_.\"\\[\\]{}=, 0-9\n#-]|\\\\u[0-9]{4}|\"\"\"|é){0,200}") {
        check_job_outcome(&text)?;
        check_daemon_outcome(&text)?;
    }

    #[test]
    fn mutated_job_files_never_panic(
        base in prop_oneof![Just(EXAMPLE_STATISTICS), Just(EXAMPLE_MINIMAL)],
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut text = base.to_owned();
        for m in &mutations {
            apply(&mut text, m);
        }
        check_job_outcome(&text)?;
    }

    #[test]
    fn mutated_daemon_files_never_panic(mutations in proptest::collection::vec(mutation(), 1..6)) {
        let mut text = EXAMPLE_DAEMON.to_owned();
        for m in &mutations {
            apply(&mut text, m);
        }
        check_daemon_outcome(&text)?;
    }

    #[test]
    fn any_value_in_any_field_never_panics(
        table in prop_oneof![Just(""), Just("[targets]\n"), Just("[budget]\n"), Just("[politeness]\n"), Just("[limits]\n")],
        key in prop_oneof![
            Just("preset"), Just("mime"), Just("block_mime"), Just("block_ext"), Just("requests"),
            Just("bytes"), Just("early_stop"), Just("delay"), Just("robots"), Just("user_agent"),
            Just("max_body"), Just("max_depth"), Just("max_links_per_page"), Just("max_url_len"),
            Just("strip_params"), Just("scope"), Just("strategy"), Just("seed"),
        ],
        value in prop_oneof![
            any::<i64>().prop_map(|i| i.to_string()),
            any::<f64>().prop_map(|f| format!("{f:?}")),
            "\\PC{0,30}".prop_map(|s| format!("{s:?}")),
            "[0-9]{1,25} ?[KMGTkmgt]?i?[Bb]?".prop_map(|s| format!("{s:?}")),
            "[0-9]{1,25} ?(ns|ms|s|min|h|d|sek)".prop_map(|s| format!("{s:?}")),
            proptest::collection::vec("\\PC{0,12}", 0..4).prop_map(|v| format!("{v:?}")),
        ],
    ) {
        let text = format!("{HEAD}{table}{key} = {value}\n");
        check_job_outcome(&text)?;
    }
}

// ---------------------------------------------------------------- [output]

#[test]
fn output_defaults_to_no_warc_and_takes_a_size() {
    let j = job(HEAD);
    assert!(!j.output.warc);
    assert_eq!(j.output.warc_max_size, 1 << 30);
    let j = job(&format!(
        "{HEAD}[output]\nwarc = true\nwarc_max_size = \"100 MiB\"\n"
    ));
    assert!(j.output.warc);
    assert_eq!(j.output.warc_max_size, 100 << 20);
}

#[test]
fn output_errors_name_the_field() {
    assert_eq!(
        job_err(&format!("{HEAD}[output]\nwarc = \"yes\"\n")),
        "jobs.d/x.toml:4: output.warc: expected a boolean, found a string"
    );
    let small = job_err(&format!("{HEAD}[output]\nwarc_max_size = 1000\n"));
    assert!(
        small.starts_with("jobs.d/x.toml:4: output.warc_max_size: ")
            && small.contains("out of range"),
        "{small}"
    );
    let unknown = job_err(&format!("{HEAD}[output]\nwrac = true\n"));
    assert!(unknown.contains("output.wrac: unknown field"), "{unknown}");
}

#[test]
fn politeness_in_flight_and_key_default_by_scope() {
    let site = job(HEAD);
    assert_eq!(site.max_in_flight(), 1);
    assert_eq!(site.politeness_per(), crate::extract::PolitenessPer::Host);
    let any = job(&format!("{HEAD}scope = \"any\"\n"));
    assert_eq!(any.max_in_flight(), 64);
    assert_eq!(any.politeness_per(), crate::extract::PolitenessPer::Pld);
    let set = job(&format!(
        "{HEAD}scope = \"any\"\n[politeness]\nmax_in_flight = 8\nper = \"host\"\n"
    ));
    assert_eq!(set.max_in_flight(), 8);
    assert_eq!(set.politeness_per(), crate::extract::PolitenessPer::Host);
}

#[test]
fn politeness_in_flight_and_key_are_checked() {
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\nmax_in_flight = 0\n")),
        "jobs.d/x.toml:4: politeness.max_in_flight: 0 is out of range (1 to 4096)"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\nper = \"domain\"\n")),
        "jobs.d/x.toml:4: politeness.per: unknown value \"domain\" (expected one of: host, pld)"
    );
}

#[test]
fn scope_is_a_kind_or_a_table_with_include_and_exclude_patterns() {
    let j = job(&format!("{HEAD}scope = \"host\"\n"));
    assert_eq!(j.scope, ScopeKind::Host);
    assert!(j.patterns.is_empty());
    let j = job(&format!(
        "{HEAD}[scope]\nkind = \"any\"\ninclude = [\"https://a.test/data/**\", \"*.csv\"]\n\
         exclude = [\"re:[?&]print=\"]\n"
    ));
    assert_eq!(j.scope, ScopeKind::Any);
    let (include, exclude) = j.patterns.sources();
    assert_eq!(include, vec!["https://a.test/data/**", "*.csv"]);
    assert_eq!(exclude, vec!["re:[?&]print="]);
    let url = |s: &str| url::Url::parse(s).expect("test URL");
    assert!(j.patterns.admits(&url("https://a.test/data/x/y.json")));
    assert!(!j.patterns.admits(&url("https://a.test/data/y.csv?print=1")));
    // Without `kind` the table keeps the default scope.
    let j = job(&format!("{HEAD}[scope]\nexclude = [\"/archive/**\"]\n"));
    assert_eq!(j.scope, ScopeKind::Site);
}

#[test]
fn bad_scope_patterns_are_located() {
    assert_eq!(
        job_err(&format!(
            "{HEAD}[scope]\ninclude = [\"/ok/**\", \"re:(open\"]\n"
        )),
        "jobs.d/x.toml:4: scope.include[1]: \"re:(open\": not a regular expression: unclosed group"
    );
    let e = job_err(&format!("{HEAD}[scope]\nexclude = [\"/a/[z-a]\"]\n"));
    assert!(
        e.starts_with("jobs.d/x.toml:4: scope.exclude[0]: \"/a/[z-a]\": not a glob"),
        "{e}"
    );
    let e = job_err(&format!("{HEAD}[scope]\nkinds = \"site\"\n"));
    assert!(
        e.contains("scope.kinds: unknown field (expected one of: kind, include, exclude)"),
        "{e}"
    );
    let e = job_err(&format!("{HEAD}[scope]\nkind = \"sites\"\n"));
    assert!(
        e.contains("jobs.d/x.toml:4: scope.kind: unknown value \"sites\""),
        "{e}"
    );
}

#[test]
fn http_options_are_read_and_checked() {
    let j = job(&format!(
        "{HEAD}[http]\nheaders = {{ Accept-Language = \"en\" }}\nproxy = \"http://u:pw@proxy.lan:3128\"\n\
         [http.hosts.\"*.example.org\"]\nheaders = {{ Authorization = \"Bearer t0ken\" }}\n\
         [http.hosts.\"a.test\"]\ncookies = {{ sid = \"abc\", lang = \"en\" }}\nuser = \"alice\"\npassword = \"pw\"\n"
    ));
    assert_eq!(j.http.headers.len(), 1);
    assert_eq!(j.http.proxy.as_ref().unwrap().host_str(), Some("proxy.lan"));
    let sent: Vec<(String, String, bool)> = j
        .http
        .headers_for(&url::Url::parse("https://a.test/x").unwrap())
        .map(|(n, v)| {
            (
                n.to_string(),
                v.to_str().unwrap().to_string(),
                v.is_sensitive(),
            )
        })
        .collect();
    assert_eq!(
        sent,
        [
            ("accept-language".into(), "en".into(), false),
            ("cookie".into(), "sid=abc; lang=en".into(), true),
            ("authorization".into(), "Basic YWxpY2U6cHc=".into(), true),
        ]
    );
    let bearer = j
        .http
        .headers_for(&url::Url::parse("https://data.example.org/").unwrap())
        .find(|(n, _)| n.as_str() == "authorization")
        .map(|(_, v)| v.is_sensitive());
    assert_eq!(
        bearer,
        Some(true),
        "a host's Authorization header is secret"
    );
    assert!(!format!("{j:?}").contains("t0ken"));

    let all = |text: &str| match parse_job_all(&format!("{HEAD}{text}"), Path::new(ORIGIN)) {
        Ok(j) => panic!("expected errors, got {j:?}"),
        Err(e) => e.iter().map(ToString::to_string).collect::<Vec<_>>(),
    };
    let e = all(
        "[http]\nheaders = { Cookie = \"a=b\", User-Agent = \"x\" }\nproxy = \"socks5://p:1080\"\n\
         [http.hosts.\"bad host\"]\nuser = \"a\"\n\
         [http.hosts.\"b.test\"]\nuser = \"b\"\npassword_env = \"FORAGER_TEST_NO_SUCH_VARIABLE\"\n\
         [http.hosts.\"c.test\"]\npassword = \"x\"\ncookies = { \"a b\" = \"c\" }\n",
    );
    let expected = [
        "jobs.d/x.toml:4: http.headers.Cookie: cookie goes under [http.hosts.\"HOST\"]",
        "jobs.d/x.toml:4: http.headers.User-Agent: user-agent cannot be set here: set politeness.user_agent instead",
        "jobs.d/x.toml:5: http.proxy: must be an http:// or https:// URL",
        "jobs.d/x.toml:6: http.hosts.\"bad host\": \"bad host\" is not a host name",
        "jobs.d/x.toml:7: http.hosts.\"bad host\".user: a user needs one of password",
        "jobs.d/x.toml:10: http.hosts.\"b.test\".password_env: environment variable FORAGER_TEST_NO_SUCH_VARIABLE is not set",
        "jobs.d/x.toml:12: http.hosts.\"c.test\".password: a password needs a user",
        "jobs.d/x.toml:13: http.hosts.\"c.test\".cookies.\"a b\": not a valid cookie name",
    ];
    for want in expected {
        assert!(
            e.iter().any(|got| got.starts_with(want)),
            "{want}\nnot in {e:#?}"
        );
    }
    // The daemon config takes the same table.
    let d = parse_daemon(
        "[http]\nheaders = { X-Team = \"data\" }\n",
        Path::new("forager.toml"),
    )
    .unwrap();
    assert_eq!(d.http.headers.len(), 1);
    assert!(daemon_err("[http]\nproxy = 3\n").contains("http.proxy: expected a string"));
}

// ---------------------------------------------------------------- structured data

#[test]
fn structured_preset_reads_every_syntax_with_anthelions_threshold() {
    let j = job(&format!("{HEAD}[targets]\npreset = \"structured\"\n"));
    let s = j.targets.structured.clone().expect("structured targets");
    assert_eq!(s.min_statements, 6);
    assert!(s.options.json_ld && s.options.microdata && s.options.rdfa && s.options.microformats);
    assert_eq!(
        s.options.max_statements,
        crate::extract::structured::DEFAULT_MAX_STATEMENTS
    );
    // No file type is a target of the preset.
    let set = j.targets.target_set();
    assert_eq!(set.classify(Some("text/csv")), Label::Neither);
    assert_eq!(set.classify(Some("application/pdf")), Label::Neither);
    assert_eq!(set.classify(Some("text/html")), Label::Html);
    // Not asked for: none.
    assert_eq!(job(HEAD).targets.structured, None);
    let example = job(EXAMPLE_STRUCTURED)
        .targets
        .structured
        .expect("the example's");
    assert_eq!(example, s);
}

#[test]
fn structured_data_fields_are_read_with_any_preset() {
    let j = job(&format!(
        "{HEAD}[targets]\nstructured_data = [\"json-ld\", \"rdfa\"]\nmin_statements = 10\nmax_statements = 500\n"
    ));
    let s = j.targets.structured.expect("structured targets");
    assert!(s.options.json_ld && s.options.rdfa);
    assert!(!s.options.microdata && !s.options.microformats);
    assert_eq!((s.min_statements, s.options.max_statements), (10, 500));
    assert_eq!(j.targets.preset, Preset::Statistics);
    // preset "none" with structured data harvests something: accepted.
    let j = job(&format!(
        "{HEAD}[targets]\npreset = \"none\"\nstructured_data = [\"microdata\"]\n"
    ));
    assert!(j.targets.structured.is_some());
}

#[test]
fn structured_data_errors_name_file_line_and_field() {
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\nstructured_data = [\"json-ld\", \"turtle\"]\n")),
        "jobs.d/x.toml:4: targets.structured_data[1]: \"turtle\" is not one of json-ld, microdata, rdfa, microformats"
    );
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\nmin_statements = 3\n")),
        "jobs.d/x.toml:4: targets.min_statements: needs targets.structured_data (or preset \"structured\")"
    );
    assert_eq!(
        job_err(&format!(
            "{HEAD}[targets]\npreset = \"structured\"\nmin_statements = 0\n"
        )),
        "jobs.d/x.toml:5: targets.min_statements: 0 is out of range (1 to 1000000)"
    );
    assert_eq!(
        job_err(&format!(
            "{HEAD}[targets]\npreset = \"structured\"\nmin_statements = 20\nmax_statements = 10\n"
        )),
        "jobs.d/x.toml:6: targets.max_statements: 10 is under targets.min_statements (20): no page could be relevant"
    );
}

#[test]
fn linked_data_jobs_read_rdfa_and_one_statement_is_relevant() {
    let s = job(&format!("{HEAD}[targets]\npreset = \"linked-data\"\n"))
        .targets
        .structured
        .expect("RDFa of a linked-data job");
    assert!(s.options.rdfa);
    assert!(!s.options.json_ld && !s.options.microdata && !s.options.microformats);
    assert_eq!(s.min_statements, 1);
    let rdf_only = job(&format!("{HEAD}[targets]\npreset = \"none\"\nrdf = true\n"));
    assert_eq!(rdf_only.targets.structured, Some(s));
    // The job's own choice wins.
    let own = job(&format!(
        "{HEAD}[targets]\npreset = \"linked-data\"\nstructured_data = [\"json-ld\"]\n"
    ))
    .targets
    .structured
    .expect("its own");
    assert!(own.options.json_ld && !own.options.rdfa);
    assert_eq!(own.min_statements, 6);
}

// ---------------------------------------------------------------- mode, [revisit]

#[test]
fn a_job_runs_once_unless_it_says_continuous() {
    assert_eq!(job(HEAD).mode, JobMode::Once);
    assert!(job(HEAD).revisit().is_none());
    let j = job(&format!("mode = \"continuous\"\n{HEAD}"));
    assert_eq!(j.mode, JobMode::Continuous(RevisitSpec::default()));
    let r = RevisitSpec::default();
    assert_eq!(
        (r.schedule.min_secs, r.schedule.max_secs),
        (3600, 30 * 86_400)
    );
    assert_eq!(r.policy, RevisitPolicy::Learned);
    let j = job(&format!(
        "mode = \"continuous\"\n{HEAD}[revisit]\nmin = \"1s\"\nmax = \"2h\"\npolicy = \"fixed\"\n"
    ));
    let r = j.revisit().unwrap();
    assert_eq!((r.schedule.min_secs, r.schedule.max_secs), (1, 7200));
    assert_eq!(r.policy, RevisitPolicy::Fixed);
    let j = job(&format!("mode = \"once\"\n{HEAD}"));
    assert_eq!(j.mode, JobMode::Once);
}

#[test]
fn revisit_errors_name_the_field() {
    let lone = job_err(&format!("{HEAD}[revisit]\nmin = \"1s\"\n"));
    assert!(
        lone.starts_with("jobs.d/x.toml:3: revisit: ") && lone.contains("mode = \"continuous\""),
        "{lone}"
    );
    let c = "mode = \"continuous\"\n";
    let zero = job_err(&format!("{c}{HEAD}[revisit]\nmin = \"500ms\"\n"));
    assert!(
        zero.starts_with("jobs.d/x.toml:5: revisit.min: ") && zero.contains("at least 1 s"),
        "{zero}"
    );
    let order = job_err(&format!("{c}{HEAD}[revisit]\nmin = \"2h\"\nmax = \"1h\"\n"));
    assert!(
        order.starts_with("jobs.d/x.toml:6: revisit.max: ") && order.contains("larger"),
        "{order}"
    );
    let policy = job_err(&format!("{c}{HEAD}[revisit]\npolicy = \"random\"\n"));
    assert!(
        policy.starts_with("jobs.d/x.toml:5: revisit.policy: ")
            && policy.contains("learned, adaptive, fixed"),
        "{policy}"
    );
    let mode = job_err(&format!("mode = \"forever\"\n{HEAD}"));
    assert!(mode.starts_with("jobs.d/x.toml:1: mode: "), "{mode}");
    let unknown = job_err(&format!("{c}{HEAD}[revisit]\nmni = \"1h\"\n"));
    assert!(unknown.contains("revisit.mni: unknown field"), "{unknown}");
}

#[test]
fn neither_links_skip_is_for_sb_only() {
    assert_eq!(job(HEAD).budget.neither_links, NeitherLinks::Last);
    let skip = job(&format!("{HEAD}[budget]\nneither_links = \"skip\"\n"));
    assert_eq!(skip.budget.neither_links, NeitherLinks::Skip);
    assert_eq!(
        job_err(&format!("{HEAD}[budget]\nneither_links = \"never\"\n")),
        "jobs.d/x.toml:4: budget.neither_links: unknown value \"never\" (expected one of: last, skip)"
    );
    assert_eq!(
        job_err(&format!(
            "{HEAD}strategy = \"bfs\"\n[budget]\nneither_links = \"skip\"\n"
        )),
        "jobs.d/x.toml:5: budget.neither_links: \"skip\" needs strategy = \"sb\", the only one that learns which links are neither (this job's is \"bfs\")"
    );
    // "last" is every strategy's way already.
    let bfs = job(&format!(
        "{HEAD}strategy = \"bfs\"\n[budget]\nneither_links = \"last\"\n"
    ));
    assert_eq!(bfs.budget.neither_links, NeitherLinks::Last);
}

/// The adaptive delay and the back-off of a failing origin: defaults, the
/// policies a job hands the fetcher, and clear errors.
#[test]
fn politeness_adaptive_delay_and_backoff() {
    let d = job(HEAD);
    assert!(!d.politeness.adaptive_delay, "off by default");
    assert_eq!(d.politeness.adaptive(), None);
    assert_eq!(d.politeness.max_backoff, Duration::from_secs(3600));
    assert_eq!(d.politeness.forgive_after, Duration::from_secs(600));
    let j = job(&format!(
        "{HEAD}[politeness]\ndelay = \"2s\"\nadaptive_delay = true\nmax_delay = \"30s\"\nmax_backoff = \"2h\"\nforgive_after = \"5m\"\n"
    ));
    let a = j.politeness.adaptive().expect("asked for");
    assert_eq!(
        (a.min, a.max),
        (Duration::from_secs(2), Duration::from_secs(30))
    );
    let b = j.politeness.backoff();
    assert_eq!(b.max, Duration::from_secs(7200));
    assert_eq!(b.forgive_after, Duration::from_secs(300));
    assert_eq!(
        job_err(&format!("{HEAD}[politeness]\ndelay = \"10s\"\nmax_delay = \"5s\"\n")),
        "jobs.d/x.toml:5: politeness.max_delay: 5s is shorter than delay (10s): the adaptive delay stays within [delay, max_delay]"
    );
    assert!(
        job_err(&format!("{HEAD}[politeness]\nmax_backoff = \"0s\"\n"))
            .contains("politeness.max_backoff: must be longer than 0s")
    );
    assert!(
        job_err(&format!("{HEAD}[politeness]\nforgive_after = \"30d\"\n"))
            .contains("politeness.forgive_after:")
    );
    assert!(
        job_err(&format!("{HEAD}[politeness]\nadaptive_delay = \"yes\"\n"))
            .contains("politeness.adaptive_delay:")
    );
}

/// `[http] ca_file` is read and checked with the job file.
#[test]
fn http_ca_file_is_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("ca.pem");
    std::fs::write(
        &good,
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0ZBQ0VDQUZFQ0FGRUNBRkVDQUZFMAoGCCqGSM49BAMC\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let j = job(&format!(
        "{HEAD}[http]\nca_file = {:?}\n",
        good.display().to_string()
    ));
    assert_eq!(j.http.ca.map(|c| c.certificates.len()), Some(1));
    let missing = dir.path().join("nope.pem");
    let err = job_err(&format!(
        "{HEAD}[http]\nca_file = {:?}\n",
        missing.display().to_string()
    ));
    assert!(
        err.starts_with("jobs.d/x.toml:4: http.ca_file: cannot read"),
        "{err}"
    );
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let err = job_err(&format!(
        "{HEAD}[http]\nca_file = {:?}\n",
        empty.display().to_string()
    ));
    assert!(err.contains("no certificate in it"), "{err}");
    let binary = dir.path().join("ca.der");
    std::fs::write(&binary, [0x30u8, 0x82, 0xff, 0xfe]).unwrap();
    let err = job_err(&format!(
        "{HEAD}[http]\nca_file = {:?}\n",
        binary.display().to_string()
    ));
    assert!(err.contains("not a PEM text file"), "{err}");
}

/// A relative `ca_file` or `password_file` is taken from the job file's
/// folder, as the daemon config's folders are from its own: a job file
/// moved with its certificate works from wherever forager is started.
#[test]
fn relative_files_of_http_follow_the_job_file() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.d");
    std::fs::create_dir_all(jobs.join("certs")).unwrap();
    std::fs::write(
        jobs.join("certs/ca.pem"),
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0ZBQ0VDQUZFQ0FGRUNBRkVDQUZFMAoGCCqGSM49BAMC\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    std::fs::write(jobs.join("alice.pw"), "s3cret\n").unwrap();
    let text = format!(
        "{HEAD}[http]\nca_file = \"certs/ca.pem\"\n\
         [http.hosts.\"a.test\"]\nuser = \"alice\"\npassword_file = \"alice.pw\"\n"
    );
    let j = parse_job(&text, &jobs.join("x.toml")).expect("relative to the job file");
    let ca = j.http.ca.expect("ca_file read");
    assert_eq!(ca.certificates.len(), 1);
    assert_eq!(
        Path::new(&ca.path),
        jobs.join("certs/ca.pem"),
        "messages name the file that was read"
    );
    let auth = j.http.hosts[0].authorization.as_ref().expect("basic auth");
    let expected = crate::http_options::basic_authorization("alice", "s3cret").unwrap();
    assert_eq!(auth, &expected);
    // The same text from another folder: the files are not there, and the
    // error names where they were looked for.
    let err = parse_job(&text, &dir.path().join("x.toml"))
        .unwrap_err()
        .to_string();
    let looked = dir.path().join("certs/ca.pem");
    assert!(
        err.contains(&format!("http.ca_file: cannot read {}", looked.display())),
        "{err}"
    );
    // The daemon config's [http] alike, from the config file's folder.
    let daemon = parse_daemon(
        "[http]\nca_file = \"jobs.d/certs/ca.pem\"\n",
        &dir.path().join("forager.toml"),
    )
    .expect("relative to the config file");
    assert_eq!(daemon.http.ca.map(|c| c.certificates.len()), Some(1));
    // An absolute path stays as written.
    let absolute = format!(
        "{HEAD}[http]\nca_file = {:?}\n",
        jobs.join("certs/ca.pem").display().to_string()
    );
    assert!(parse_job(&absolute, Path::new("elsewhere/x.toml")).is_ok());
}

// ---------------------------------------------------------------- catalogs

#[test]
fn catalogs_are_off_unless_asked_for() {
    assert!(!job(HEAD).targets.catalogs);
    for preset in ["statistics", "documents", "archives", "structured"] {
        let text = format!("{HEAD}[targets]\npreset = \"{preset}\"\ncatalogs = true\n");
        assert!(job(&text).targets.catalogs, "{preset}");
    }
    let off = format!("{HEAD}[targets]\ncatalogs = false\n");
    assert!(!job(&off).targets.catalogs);
}

#[test]
fn catalogs_must_be_a_bool() {
    assert_eq!(
        job_err(&format!("{HEAD}[targets]\ncatalogs = \"yes\"\n")),
        "jobs.d/x.toml:4: targets.catalogs: expected a boolean, found a string"
    );
}

// ------------------------------------------------------------------- forms

#[test]
fn forms_are_off_unless_asked_for_and_capped() {
    assert_eq!(job(HEAD).targets.forms, None);
    let on = job(&format!("{HEAD}[targets]\nforms = true\n"));
    assert_eq!(on.targets.forms, Some(crate::form::FormLimits::default()));
    let capped = job(&format!(
        "{HEAD}[targets]\nforms = true\nmax_form_links = 8\nmax_form_links_per_site = 100\n"
    ));
    assert_eq!(
        capped.targets.forms,
        Some(crate::form::FormLimits {
            per_form: 8,
            per_site: 100
        })
    );
    assert!(job_err(&format!(
        "{HEAD}[targets]\nforms = true\nmax_form_links = 0\n"
    ))
    .contains("targets.max_form_links"));
    assert!(job_err(&format!("{HEAD}[targets]\nforms = 1\n")).contains("targets.forms"));
}
