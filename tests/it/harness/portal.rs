//! Crawls of the loopback portals (`forager_bench::sites::portal`) through
//! the real binary: the set-up `portal.rs` and `portal_sources.rs` share.

use super::{manifest_by_final_url, Crawl, JobFile};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A finished crawl: its manifest rows by final URL, and where it kept its state.
pub struct PortalCrawl {
    pub rows: BTreeMap<String, serde_json::Value>,
    pub state: PathBuf,
    pub job: String,
}

impl PortalCrawl {
    /// The final URLs it harvested.
    pub fn urls(&self) -> BTreeSet<String> {
        self.rows.keys().cloned().collect()
    }
}

/// Crawls `http://HOST/` (served on `port`) with `strategy` and the job
/// settings `set` (`(table, key, value)`, e.g. `("targets", "catalogs",
/// "true")`), without delay or early stop, to the end.
pub async fn crawl_portal(
    dir: &Path,
    host: &str,
    port: u16,
    strategy: &str,
    set: &[(&str, &str, &str)],
) -> PortalCrawl {
    let tag: String = set
        .iter()
        .map(|(_, k, v)| format!("-{k}{v}"))
        .collect::<String>()
        .replace('_', "");
    let job = format!("{}-{strategy}{tag}", host.replace('.', "-"));
    let mut file = JobFile::new(&job)
        .seed(format!("http://{host}/"))
        .strategy(strategy)
        .delay("1ms")
        .no_early_stop();
    for (table, key, value) in set {
        file = file.set(table, key, value);
    }
    let file = file.write(dir);
    let state = dir.join(format!("state-{job}"));
    Crawl::new(&file, &state)
        .allow_private()
        .resolve(host, port)
        .succeed()
        .await;
    let targets = state.join("targets").join(&job);
    // No URL twice.
    let _ = manifest_by_final_url(&targets);
    let text = std::fs::read_to_string(targets.join("manifest.jsonl")).unwrap_or_default();
    let rows = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| (v["final_url"].as_str().unwrap_or_default().to_string(), v))
        .collect();
    PortalCrawl { rows, state, job }
}

/// `http://HOST` before each path.
pub fn urls(host: &str, paths: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    paths
        .into_iter()
        .map(|p| format!("http://{host}{p}"))
        .collect()
}
