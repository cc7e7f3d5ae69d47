//! Loopback servers and what a crawl left on disk.

use forager::sites::server::{Site, SiteServer};
use forager::sites::synthetic::{Preset, SyntheticSite};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The synthetic `small` site of `seed` served under `host` on loopback;
/// returns the server and the site's start path.
pub async fn serve_small_site(host: &str, seed: u64) -> (SiteServer, String) {
    let site = SyntheticSite::preset(Preset::Small, seed).unwrap();
    let start = site.start_path().to_string();
    let sites: Vec<(String, Arc<dyn Site>)> = vec![(host.to_string(), Arc::new(site))];
    (SiteServer::start(sites).await.unwrap(), start)
}

/// A job's `manifest.jsonl` as final URL → sha256; panics on a duplicate row.
pub fn manifest_by_final_url(job_targets: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(job_targets.join("manifest.jsonl")).unwrap_or_default();
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let prev = rows.insert(
            v["final_url"].as_str().unwrap().to_string(),
            v["sha256"].as_str().unwrap().to_string(),
        );
        assert!(prev.is_none(), "duplicate manifest row: {line}");
    }
    rows
}
