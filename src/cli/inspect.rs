//! `forager check`, `forager explain`, `forager purge`, `forager repair`: look at files and stored state.

use crate::config;
use crate::store::Store;
use crate::strategy::{StrategyKind, StrategyStats};
use anyhow::Context;
use clap::Args;
use std::collections::BTreeMap;
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
                Ok(d) => daemon_folders(&d, &text, f),
                Err(errors) => errors,
            },
            Ok(text) => config::parse_job_all(&text, f).err().unwrap_or_default(),
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

/// What the daemon checks at start-up beyond the file itself: its jobs
/// folder must exist (it refuses to start otherwise), so `check --daemon`
/// refuses it too.
fn daemon_folders(d: &config::DaemonConfig, text: &str, file: &Path) -> Vec<config::ConfigError> {
    if d.jobs_dir.is_dir() {
        return Vec::new();
    }
    // The line of the `jobs_dir` key, when the file sets it (else the default is missing).
    let line = text
        .lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix("jobs_dir")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1);
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
    for (id, key) in &loaded.frontier {
        strategy.push(*id, *key);
    }
    let stats = strategy.stats();
    let shown: Vec<u32> = stats
        .top_actions
        .iter()
        .take(args.top)
        .map(|a| a.id)
        .collect();
    // Two waiting links per shown action; a bounded number of reads, so a
    // frontier of millions costs no more than a glance.
    let mut examples: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (id, key) in loaded.frontier.iter().take(MAX_EXAMPLE_READS) {
        if !shown.contains(&key.slot) {
            continue;
        }
        let urls = examples.entry(key.slot).or_default();
        if urls.len() < EXAMPLES_PER_ACTION {
            if let Some(entry) = store.frontier_entry(&args.job, *id)? {
                urls.push(entry.link.url.to_string());
            }
        }
    }
    out!(
        "{}",
        format_explain(
            &args.job,
            &record.strategy,
            &record.counters,
            &stats,
            args.top,
            &examples,
        )
    );
    Ok(ExitCode::SUCCESS)
}

/// Example URLs shown per action.
const EXAMPLES_PER_ACTION: usize = 2;
/// Frontier records read at most for examples.
const MAX_EXAMPLE_READS: usize = 20_000;
/// Longest tag-path tail shown, in characters.
const MAX_TAIL_CHARS: usize = 72;

/// The segments (`/`-separated) every path starts with.
fn common_prefix<'a>(paths: impl Iterator<Item = &'a str>) -> String {
    let mut prefix: Option<Vec<&str>> = None;
    for p in paths {
        let segs: Vec<&str> = p.split('/').collect();
        prefix = Some(match prefix {
            None => segs,
            Some(pre) => pre
                .iter()
                .zip(&segs)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| *a)
                .collect(),
        });
    }
    prefix.map(|p| p.join("/")).unwrap_or_default()
}

/// `path` without `prefix`, cut from the left at a segment boundary to at most
/// [`MAX_TAIL_CHARS`]: the end of a tag path (the list, the cell, the anchor)
/// is what tells two actions apart.
fn tail(path: &str, prefix: &str) -> String {
    let rest = match path.strip_prefix(prefix) {
        Some(r) if !prefix.is_empty() => format!("…{r}"),
        _ => path.to_string(),
    };
    if rest.chars().count() <= MAX_TAIL_CHARS {
        return rest;
    }
    let chars: Vec<char> = rest.chars().collect();
    let mut kept: String = chars[chars.len() - (MAX_TAIL_CHARS - 1)..].iter().collect();
    if let Some(slash) = kept.find('/') {
        kept = kept[slash..].to_string();
    }
    format!("…{kept}")
}

/// A member path shown against its action's founding path: from the first
/// segment where they differ (that is what sets the member apart), cut on the
/// right to [`MAX_TAIL_CHARS`].
fn difference(member: &str, founding: &str) -> String {
    if member == founding {
        return "the one above".to_string();
    }
    let shared = common_prefix([member, founding].into_iter());
    let rest = match member.strip_prefix(shared.as_str()) {
        Some(r) if !shared.is_empty() => format!("…{r}"),
        _ => member.to_string(),
    };
    match rest.char_indices().nth(MAX_TAIL_CHARS) {
        Some((cut, _)) => format!("{}…", &rest[..cut]),
        None => rest,
    }
}

/// What `forager explain` prints.
fn format_explain(
    job: &str,
    strategy: &str,
    c: &crate::store::JobCounters,
    s: &StrategyStats,
    top: usize,
    examples: &BTreeMap<u32, Vec<String>>,
) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "job {job} ({strategy}): {} requests, {} pages, {} targets",
        c.requests, c.pages, c.targets
    );
    match s.classifier_accuracy() {
        Some(a) => {
            let _ = writeln!(
                o,
                "URL classifier: {:.1} % online accuracy over {} predictions",
                a * 100.0,
                s.classifier_predictions
            );
        }
        None => o.push_str("URL classifier: no predictions yet\n"),
    }
    if s.top_actions.is_empty() {
        let _ = writeln!(o, "no actions (strategy {strategy} does not group links)");
        return o;
    }
    let actions: Vec<_> = s.top_actions.iter().take(top).collect();
    let prefix = common_prefix(actions.iter().map(|a| a.tag_path.as_str()));
    let _ = writeln!(
        o,
        "{} actions (groups of links by where they sit on their pages); best first:",
        s.actions
    );
    o.push_str(
        "  links   links found in the action's places on the pages so far\n\
         \x20 picks   pages taken from it (a page whose fetch a stop interrupted is taken\n\
         \x20         again, so picks can exceed links)\n\
         \x20 reward  mean targets found per pick\n\
         \x20 left    links of the action still waiting in the frontier\n",
    );
    if !prefix.is_empty() && prefix != "/" {
        let _ = writeln!(o, "tag paths below start with {prefix} (shown as …)");
    }
    let _ = writeln!(
        o,
        "{:>6} {:>8} {:>6} {:>8} {:>7}  tag path",
        "action", "links", "picks", "reward", "left"
    );
    for a in actions {
        let _ = writeln!(
            o,
            "{:>6} {:>8} {:>6} {:>8.3} {:>7}  {}",
            a.id,
            a.links_seen,
            a.selections,
            a.mean_reward,
            a.links_left,
            tail(&a.tag_path, &prefix)
        );
        // Inside a group the member bandit may prefer a path other than the founding one.
        if let Some(m) = &a.best_member {
            let _ = writeln!(
                o,
                "{:>6} {:>8} {:>6} {:>8.3} {:>7}  best of its {} paths: {}",
                "",
                "",
                m.selections,
                m.mean_reward,
                m.links_left,
                a.paths,
                difference(&m.tag_path, &a.tag_path)
            );
        }
        for url in examples.get(&a.id).into_iter().flatten() {
            let _ = writeln!(o, "{:>40}  e.g. {url}", "");
        }
    }
    if examples.is_empty() {
        o.push_str(
            "(example URLs come from links still waiting; none is waiting under these actions)\n",
        );
    }
    o
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
    outln!("purged stored state of job {}", args.job);
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
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", crate::daemon::format_status(&report));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::{ActionReport, MemberReport};

    fn action(id: u32, path: &str) -> ActionReport {
        ActionReport {
            id,
            tag_path: path.to_string(),
            links_seen: 59,
            selections: 60,
            mean_reward: 0.5,
            links_left: 3,
            paths: 1,
            best_member: None,
        }
    }

    #[test]
    fn explain_elides_the_common_prefix_keeps_tails_and_shows_examples() {
        let deep = "/html/body.page/div.wrapper/div.container/div.row/div.col-main".repeat(8);
        let a = format!("{deep}/section.downloads/ul.files/li/a.csv");
        let b = format!("{deep}/nav.pager/ul/li.next/a");
        let member = format!("{deep}/section.downloads/ol.older/li/a");
        let mut first = action(3, &a);
        first.paths = 2;
        first.best_member = Some(MemberReport {
            tag_path: member,
            selections: 4,
            mean_reward: 1.5,
            links_left: 1,
        });
        let stats = StrategyStats {
            classifier_predictions: 10,
            classifier_correct: 9,
            actions: 2,
            capped_paths: 0,
            top_actions: vec![first, action(7, &b)],
        };
        let mut examples = BTreeMap::new();
        examples.insert(
            3,
            vec![
                "http://a.test/x.csv".to_string(),
                "http://a.test/y.csv".to_string(),
            ],
        );
        let text = format_explain(
            "j",
            "sb",
            &crate::store::JobCounters::default(),
            &stats,
            15,
            &examples,
        );
        // The prefix once, then short distinctive tails.
        assert_eq!(text.matches(&deep).count(), 1, "{text}");
        assert!(
            text.contains("  …/section.downloads/ul.files/li/a.csv"),
            "{text}"
        );
        assert!(text.contains("  …/nav.pager/ul/li.next/a"), "{text}");
        assert!(
            text.contains("best of its 2 paths: …/ol.older/li/a"),
            "{text}"
        );
        assert!(
            text.lines()
                .all(|l| l.chars().count() <= 140 || l.contains("start with")),
            "{text}"
        );
        // Two examples of action 3.
        assert!(
            text.contains("e.g. http://a.test/x.csv") && text.contains("e.g. http://a.test/y.csv"),
            "{text}"
        );
        // The columns are explained once, including why picks can exceed links.
        assert_eq!(text.matches("picks can exceed links").count(), 1, "{text}");
    }

    #[test]
    fn a_long_tail_is_cut_at_a_segment_on_the_left() {
        let path = format!("/html/body{}", "/div.some-long-class-name".repeat(10));
        let t = tail(&path, "/html");
        assert!(t.starts_with("…/div."), "{t}");
        assert!(t.chars().count() <= MAX_TAIL_CHARS + 1, "{t}");
        assert!(t.ends_with("/div.some-long-class-name"), "{t}");
    }
}
