//! `forager explain`: what a job's learner has made of the site, from its last
//! checkpoint — the actions (groups of links by where they sit on pages) best
//! first, with example URLs, and which link sources paid (`explain/sources.rs`). Read-only: it rebuilds the strategy from the
//! stored record in memory and writes nothing.

use crate::store::Store;
use anyhow::Context;
use forager_core::strategy::{StrategyKind, StrategyStats};
use std::collections::BTreeMap;

mod sources;

/// What `forager explain` prints for `job`, from its last checkpoint in
/// `store`; `None` when the job has no stored state.
pub fn explain(store: &Store, job: &str, top: usize) -> anyhow::Result<Option<String>> {
    let Some(record) = store.job_record(job)? else {
        return Ok(None);
    };
    let kind = StrategyKind::parse(&record.strategy)
        .with_context(|| format!("unknown stored strategy {:?}", record.strategy))?;
    let mut strategy = kind.build(record.seed);
    strategy
        .restore(&record.strategy_state)
        .map_err(|e| anyhow::anyhow!("stored learner state: {e}"))?;
    let loaded = store.load_job(job)?;
    for (id, key) in &loaded.frontier {
        strategy.push(*id, *key);
    }
    let stats = strategy.stats();
    let shown: Vec<u32> = stats.top_actions.iter().take(top).map(|a| a.id).collect();
    // Two waiting links per shown action; a bounded number of reads, so a
    // frontier of millions costs no more than a glance.
    let mut examples: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (id, key) in loaded.frontier.iter().take(MAX_EXAMPLE_READS) {
        if !shown.contains(&key.slot) {
            continue;
        }
        let urls = examples.entry(key.slot).or_default();
        if urls.len() < EXAMPLES_PER_ACTION {
            if let Some(entry) = store.frontier_entry(job, *id)? {
                urls.push(entry.link.url.to_string());
            }
        }
    }
    let mut text = format_explain(
        job,
        &record.strategy,
        &record.counters,
        &stats,
        top,
        &examples,
    );
    let (waiting, all_read) = sources::waiting_by_source(store, job, &loaded.frontier)?;
    text.push_str(&sources::section(
        &loaded.manifest,
        &stats.sources,
        &waiting,
        all_read,
    ));
    Ok(Some(text))
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
    if s.neither_waited + s.neither_sampled > 0 {
        let _ = writeln!(
            o,
            "links predicted neither page nor target by their URL pattern: {} made to wait for \
             the end, {} fetched at once as samples\n  (budget.neither_links = \"skip\" leaves \
             the waiting ones unfetched)",
            s.neither_waited, s.neither_sampled
        );
    }
    if strategy == StrategyKind::Sb.name() || strategy == StrategyKind::SbBinary.name() {
        lead_section(&mut o, s, top);
    }
    if strategy == StrategyKind::Ldcoc.name() {
        linked_data_sections(&mut o, s, top);
        return o;
    }
    if strategy == StrategyKind::Anthelion.name() {
        structured_data_sections(&mut o, s, top);
        return o;
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

/// sb's ranking of the links within an action: what it was trained on,
/// whether it started from a prior, and the tokens that weigh most.
fn lead_section(o: &mut String, s: &StrategyStats, top: usize) {
    use std::fmt::Write as _;
    let (positive, negative) = s.lead_examples;
    let prior = if s.lead_prior {
        "started from the prior learnt by earlier jobs of the same target kinds"
    } else {
        "started cold (no prior)"
    };
    let _ = writeln!(
        o,
        "links within an action ranked by where they lead: {} pages learnt from, {} of them linked targets\n  {prior}",
        positive + negative,
        positive
    );
    if s.lead_tokens.is_empty() {
        o.push_str(
            "  no token weighs anything yet: links of an action are taken at random
",
        );
        return;
    }
    o.push_str(
        "  tokens that count most (weight > 0 leads to pages with targets):
",
    );
    for f in s.lead_tokens.iter().take(top) {
        let _ = writeln!(o, "  {:>+8.3}  {}", f.weight, f.name);
    }
}

/// `ldcoc`'s part: its classifier's strongest features and the pay-level
/// domains (its round-robin's arms) that gave the most RDF.
fn linked_data_sections(o: &mut String, s: &StrategyStats, top: usize) {
    use std::fmt::Write as _;
    if s.top_features.is_empty() {
        o.push_str("strongest features: none trained yet\n");
    } else {
        o.push_str("strongest features (weight > 0 leans towards RDF, < 0 away from it):\n");
        for f in s.top_features.iter().take(top) {
            let _ = writeln!(o, "  {:>+8.3}  {}", f.weight, f.name);
        }
    }
    if s.top_actions.is_empty() {
        o.push_str("pay-level domains: none fetched yet\n");
        return;
    }
    let _ = writeln!(
        o,
        "{} pay-level domains; those that gave the most RDF first:",
        s.actions
    );
    let _ = writeln!(
        o,
        "{:>8} {:>8} {:>7} {:>7}  domain",
        "fetched", "RDF", "share", "left"
    );
    for a in s.top_actions.iter().take(top) {
        // `ldcoc` reports a PLD as an action: fetched as selections, the RDF share as its reward.
        let rdf = (a.mean_reward * a.selections as f64).round() as u64;
        let _ = writeln!(
            o,
            "{:>8} {:>8} {:>6.1}% {:>7}  {}",
            a.selections,
            rdf,
            a.mean_reward * 100.0,
            a.links_left,
            a.tag_path
        );
    }
}

/// `anthelion`'s part: the hosts (its bandit's arms) that gave the most
/// relevant pages. The score it ranks hosts by is not printed: it depends on
/// the share of all hosts and on the classifier's best queued link of each
/// host at the moment of a choice, which the stored stats do not hold; the
/// legend says how it is made (as docs/strategies.md does).
fn structured_data_sections(o: &mut String, s: &StrategyStats, top: usize) {
    use std::fmt::Write as _;
    if s.top_actions.is_empty() {
        o.push_str("hosts: none fetched yet\n");
        return;
    }
    let _ = writeln!(
        o,
        "{} hosts; those that gave the most pages with structured data first:",
        s.actions
    );
    o.push_str(
        "  fetched   HTML pages fetched from the host\n\
         \x20 relevant  of those, pages with enough structured data to be saved\n\
         \x20 share     relevant / fetched\n\
         \x20 left      links of the host still waiting in the frontier\n\
         The crawler ranks a host by its share smoothed towards the share of all\n\
         hosts with the weight of 5 pages (an untried host scores what the average\n\
         host gave), times the classifier's probability for the host's best queued\n\
         link; now and then it tries a random host (docs/strategies.md, anthelion).\n",
    );
    let _ = writeln!(
        o,
        "{:>8} {:>8} {:>7} {:>7}  host",
        "fetched", "relevant", "share", "left"
    );
    for a in s.top_actions.iter().take(top) {
        // `anthelion` reports a host as an action: fetched as selections, the relevant share as its reward.
        let relevant = (a.mean_reward * a.selections as f64).round() as u64;
        let _ = writeln!(
            o,
            "{:>8} {:>8} {:>6.1}% {:>7}  {}",
            a.selections,
            relevant,
            a.mean_reward * 100.0,
            a.links_left,
            a.tag_path
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager_core::strategy::{ActionReport, MemberReport};

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
    fn explain_of_ldcoc_shows_features_and_the_plds_that_gave_rdf() {
        let pld = |id, name: &str, fetched, rdf: u64| ActionReport {
            id,
            tag_path: name.to_string(),
            links_seen: fetched,
            selections: fetched,
            mean_reward: rdf as f64 / fetched as f64,
            links_left: 4,
            paths: 1,
            best_member: None,
        };
        let stats = StrategyStats {
            classifier_predictions: 200,
            classifier_correct: 180,
            actions: 7,
            capped_paths: 0,
            neither_waited: 0,
            neither_sampled: 0,
            top_actions: vec![pld(2, "lod002.test", 40, 30), pld(0, "lod000.test", 10, 5)],
            top_features: vec![
                forager_core::strategy::FeatureReport {
                    name: "segment=resource".into(),
                    weight: 2.5,
                },
                forager_core::strategy::FeatureReport {
                    name: "predicate=http://xmlns.com/foaf/0.1/homepage".into(),
                    weight: -1.25,
                },
            ],
            ..StrategyStats::default()
        };
        let text = format_explain(
            "lod",
            "ldcoc",
            &crate::store::JobCounters::default(),
            &stats,
            10,
            &BTreeMap::new(),
        );
        assert!(
            text.contains("90.0 % online accuracy over 200 predictions"),
            "{text}"
        );
        assert!(text.contains("  +2.500  segment=resource"), "{text}");
        assert!(
            text.contains("  -1.250  predicate=http://xmlns.com/foaf/0.1/homepage"),
            "{text}"
        );
        assert!(text.contains("7 pay-level domains"), "{text}");
        let first = text
            .lines()
            .position(|l| l.ends_with("lod002.test"))
            .unwrap();
        let second = text
            .lines()
            .position(|l| l.ends_with("lod000.test"))
            .unwrap();
        assert!(first < second, "{text}");
        assert!(
            text.contains("      40       30   75.0%       4  lod002.test"),
            "{text}"
        );
        assert!(
            !text.contains("tag path"),
            "no tag-path table for ldcoc: {text}"
        );
    }

    #[test]
    fn explain_of_anthelion_names_the_hosts_that_gave_the_most_relevant_pages() {
        let host = |id, name: &str, fetched, relevant: u64| ActionReport {
            id,
            tag_path: name.to_string(),
            links_seen: fetched,
            selections: fetched,
            mean_reward: relevant as f64 / fetched as f64,
            links_left: 2,
            paths: 1,
            best_member: None,
        };
        let stats = StrategyStats {
            classifier_predictions: 100,
            classifier_correct: 80,
            actions: 9,
            capped_paths: 0,
            neither_waited: 0,
            neither_sampled: 0,
            top_actions: vec![host(1, "shop.test", 38, 30), host(4, "news.test", 10, 3)],
            top_features: Vec::new(),
            ..StrategyStats::default()
        };
        let text = format_explain(
            "sd",
            "anthelion",
            &crate::store::JobCounters::default(),
            &stats,
            10,
            &BTreeMap::new(),
        );
        assert!(
            text.contains("80.0 % online accuracy over 100 predictions"),
            "{text}"
        );
        assert!(
            text.contains("9 hosts; those that gave the most pages with structured data first"),
            "{text}"
        );
        // 30 relevant of 38: share 78.9 %.
        assert!(
            text.contains("      38       30   78.9%       2  shop.test"),
            "{text}"
        );
        // The legend says how hosts are ranked as the strategy ranks them
        // (smoothed towards all hosts' share, times the best link's
        // probability), not the Laplace formula it once printed.
        assert!(text.contains("weight of 5 pages"), "{text}");
        assert!(text.contains("best queued"), "{text}");
        assert!(!text.contains("(fetched + 2)"), "{text}");
        let at = |h: &str| text.lines().position(|l| l.ends_with(h)).unwrap();
        assert!(at("shop.test") < at("news.test"), "{text}");
        assert!(!text.contains("tag path"), "no tag-path table: {text}");
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
            neither_waited: 940,
            neither_sampled: 12,
            top_actions: vec![first, action(7, &b)],
            top_features: Vec::new(),
            lead_tokens: vec![
                forager_core::strategy::FeatureReport {
                    name: "token=plotting".into(),
                    weight: 1.75,
                },
                forager_core::strategy::FeatureReport {
                    name: "anchor=class".into(),
                    weight: -0.5,
                },
            ],
            lead_examples: (3, 40),
            lead_prior: true,
            sources: Vec::new(),
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
        assert!(
            text.contains("by their URL pattern: 940 made to wait for the end, 12 fetched"),
            "{text}"
        );
        // The ranking within actions: its tokens and the prior.
        assert!(
            text.contains(
                "43 pages learnt from, 3 of them linked targets\n  started from the prior"
            ),
            "{text}"
        );
        assert!(text.contains("   +1.750  token=plotting"), "{text}");
        assert!(text.contains("   -0.500  anchor=class"), "{text}");
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
