//! `manifest.jsonl` and `crawl.log` as line-oriented files, through the real
//! binary: whatever a page puts in an `id` or a `class` (which reach a
//! row's `tag_path`), every line splitter cuts the files where `\n` is and
//! nowhere else, and each line still reads back as the same JSON.

use crate::harness::{Crawl, JobFile};
use forager_bench::sites::server::{Site, SiteRequest, SiteResponse, SiteServer};
use std::sync::Arc;

const HOST: &str = "lines.test";

/// Characters that split a line for Unicode-aware splitters (Python's
/// `str.splitlines`, JavaScript's line terminators) but not for `\n`.
const SPLITTERS: [char; 5] = ['\u{2028}', '\u{2029}', '\u{85}', '\u{1c}', '\u{0b}'];

struct Separators;

impl Site for Separators {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        match req.path.as_str() {
            // Raw in the HTML: U+2028 and U+2029 in a class, NEL (U+0085)
            // and another C1 control (U+0086) in an id.
            "/" => SiteResponse::html(
                "<html><body><div class=\"box\u{2028}x para\u{2029}y\">\
                 <p id=\"n\u{85}l\u{86}\"><a href=\"/data.csv\">data</a></p></div>\
                 <a href=\"/more.csv\">more</a></body></html>",
            ),
            "/data.csv" => SiteResponse::ok("text/csv", "a,b\n1,2\n"),
            "/more.csv" => SiteResponse::ok("text/csv", "c,d\n3,4\n"),
            _ => SiteResponse::not_found(),
        }
    }
}

/// Lines as a Unicode-aware splitter sees them.
fn unicode_lines(text: &str) -> Vec<&str> {
    text.split(|c: char| c == '\n' || c == '\r' || c == '\u{0c}' || SPLITTERS.contains(&c))
        .filter(|l| !l.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unicode_line_separators_from_a_page_stay_escaped_in_both_files() {
    let sites: Vec<(String, Arc<dyn Site>)> = vec![(HOST.to_string(), Arc::new(Separators))];
    let server = SiteServer::start(sites).await.expect("start the site");
    let dir = tempfile::tempdir().expect("tempdir");
    let job = JobFile::new("lines")
        .seed(format!("http://{HOST}/"))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
        .set("output", "crawl_log", true)
        .write(dir.path());
    let state = dir.path().join("state");
    Crawl::new(&job, &state)
        .allow_private()
        .resolve(HOST, server.port())
        .succeed()
        .await;
    let targets = state.join("targets").join("lines");

    let manifest = std::fs::read_to_string(targets.join("manifest.jsonl")).expect("manifest");
    let rows: Vec<serde_json::Value> = manifest
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    assert_eq!(rows.len(), 2, "{manifest}");
    assert_eq!(
        unicode_lines(&manifest).len(),
        rows.len(),
        "a Unicode line splitter cuts a row: {manifest:?}"
    );
    // The value is unchanged: only its encoding escapes the separators.
    let data = rows
        .iter()
        .find(|r| {
            r["final_url"]
                .as_str()
                .is_some_and(|u| u.ends_with("/data.csv"))
        })
        .expect("the data row");
    let tag_path = data["tag_path"].as_str().expect("a tag path");
    for c in ['\u{2028}', '\u{2029}', '\u{85}', '\u{86}'] {
        assert!(tag_path.contains(c), "{c:?} lost from {tag_path:?}");
    }

    let log = std::fs::read_to_string(targets.join("crawl.log")).expect("crawl.log");
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() >= 3, "{log}");
    for line in &lines {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    }
    assert_eq!(unicode_lines(&log).len(), lines.len(), "{log:?}");
    let _ = server.shutdown().await;
}
