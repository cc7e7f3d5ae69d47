//! Helpers shared by the integration tests.

use std::collections::BTreeMap;
use std::path::Path;

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
