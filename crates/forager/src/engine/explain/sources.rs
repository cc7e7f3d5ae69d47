//! `forager explain`'s link sources: which ways of finding links paid on
//! the site. Files come from the manifest (`found_by`, every strategy);
//! picks and the targets they were rewarded with from sb's member paths
//! ([`SourceReport`]); links waiting from the stored frontier, read up to
//! [`MAX_FRONTIER_READS`] records so a frontier of millions costs a glance.

use crate::store::{ManifestRow, Store};
use forager_core::catalog::found_by;
use forager_core::link::{LinkId, QueueKey};
use forager_core::strategy::SourceReport;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Frontier records read to count waiting links by source.
pub(super) const MAX_FRONTIER_READS: usize = 20_000;

/// One row of the section.
#[derive(Default)]
struct Row {
    files: u64,
    picks: Option<u64>,
    rewarded: Option<f64>,
    waiting: u64,
}

/// Links waiting in `frontier` by source, from at most
/// [`MAX_FRONTIER_READS`] records; and whether that was all of them.
pub(super) fn waiting_by_source(
    store: &Store,
    job: &str,
    frontier: &[(LinkId, QueueKey)],
) -> anyhow::Result<(BTreeMap<&'static str, u64>, bool)> {
    let mut out = BTreeMap::new();
    for (id, _) in frontier.iter().take(MAX_FRONTIER_READS) {
        if let Some(entry) = store.frontier_entry(job, *id)? {
            *out.entry(found_by(entry.link.tag_path.as_str()))
                .or_insert(0) += 1;
        }
    }
    Ok((out, frontier.len() <= MAX_FRONTIER_READS))
}

/// The section's text.
pub(super) fn section(
    manifest: &[(u64, ManifestRow)],
    bandit: &[SourceReport],
    waiting: &BTreeMap<&'static str, u64>,
    all_waiting_read: bool,
) -> String {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    for (_, m) in manifest {
        rows.entry(found_by(&m.tag_path).to_string())
            .or_default()
            .files += 1;
    }
    for s in bandit {
        let r = rows.entry(s.source.clone()).or_default();
        r.picks = Some(s.picks);
        r.rewarded = Some(s.targets);
    }
    for (source, n) in waiting {
        rows.entry(source.to_string()).or_default().waiting = *n;
    }
    let mut o = String::new();
    if rows.is_empty() {
        o.push_str("link sources: no link found yet\n");
        return o;
    }
    o.push_str(
        "link sources (how each link was found), most files first:\n\
         \x20 files     targets saved whose manifest row says this source found them\n\
         \x20 picked    links the bandit took from the source's places (sb)\n\
         \x20 rewarded  targets those picks led to (sb)\n\
         \x20 waiting   links of the source still in the frontier\n",
    );
    let _ = writeln!(
        o,
        "  {:<20} {:>7} {:>7} {:>9} {:>8}",
        "source", "files", "picked", "rewarded", "waiting"
    );
    let mut ordered: Vec<(String, Row)> = rows.into_iter().collect();
    ordered.sort_by(|a, b| b.1.files.cmp(&a.1.files).then_with(|| a.0.cmp(&b.0)));
    for (source, r) in ordered {
        let _ = writeln!(
            o,
            "  {:<20} {:>7} {:>7} {:>9} {:>8}",
            source,
            r.files,
            r.picks.map_or("—".to_string(), |p| p.to_string()),
            r.rewarded.map_or("—".to_string(), |t| format!("{t:.1}")),
            r.waiting
        );
    }
    if !all_waiting_read {
        let _ = writeln!(
            o,
            "  (waiting: of the first {MAX_FRONTIER_READS} frontier links only)"
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tag_path: &str) -> (u64, ManifestRow) {
        (
            0,
            ManifestRow {
                url: "http://a.test/x.csv".into(),
                final_url: "http://a.test/x.csv".into(),
                mime: "text/csv".into(),
                bytes: 1,
                sha256: String::new(),
                file: String::new(),
                referrer: None,
                tag_path: tag_path.into(),
                fetched_at: String::new(),
                truncated: false,
                rdf: None,
                structured: None,
                change: None,
            },
        )
    }

    #[test]
    fn sources_are_counted_from_the_manifest_the_bandit_and_the_frontier() {
        let manifest = vec![
            row("[catalog ckan] results resources url"),
            row("[catalog ckan] results resources url"),
            row("/html/body/ul/li/a"),
        ];
        let bandit = vec![
            SourceReport {
                source: "page link".into(),
                picks: 30,
                targets: 1.0,
            },
            SourceReport {
                source: "catalog:ckan".into(),
                picks: 2,
                targets: 2.0,
            },
        ];
        let waiting = BTreeMap::from([("form", 5u64)]);
        let text = section(&manifest, &bandit, &waiting, false);
        let lines: Vec<&str> = text.lines().collect();
        let at = |s: &str| {
            lines
                .iter()
                .position(|l| l.trim_start().starts_with(s))
                .unwrap()
        };
        assert!(at("catalog:ckan") < at("page link"), "{text}");
        assert!(
            text.contains("  catalog:ckan               2       2       2.0        0"),
            "{text}"
        );
        assert!(
            text.contains("  page link                  1      30       1.0        0"),
            "{text}"
        );
        assert!(
            text.contains("  form                       0       —         —        5"),
            "{text}"
        );
        assert!(
            text.contains("of the first 20000 frontier links only"),
            "{text}"
        );
    }
}
