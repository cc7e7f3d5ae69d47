//! Catalogs as link sources, through the real binary, on loopback portals
//! (`forager_bench::sites::portal`): a CKAN-shaped portal whose Action API
//! lists datasets no HTML page links, a statistics site whose DCAT catalog
//! does the same, and a portal whose catalogs lie. With `catalogs = true`
//! every file is harvested and the manifest
//! says which came from a catalog; with `catalogs = false` (the default)
//! exactly the catalog-only files are missing; a lying catalog costs
//! bounded requests; catalogs at paths no well-known list has are found
//! through robots.txt, a sitemap and `<link rel="alternate">`.

use crate::harness::portal::crawl_portal;
use crate::harness::sites::serve_host;
use forager_bench::sites::portal::{
    DcatSite, ListedCatalogs, LyingPortal, Portal, LISTED_CKAN, LISTED_DATA_JSON, LISTED_DCAT,
    LYING_PER_PAGE,
};
use forager_core::catalog::MAX_CKAN_PAGES;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// Crawls `host` with `strategy` and catalogs on or off; the manifest rows by final URL.
async fn crawl(
    dir: &Path,
    host: &str,
    port: u16,
    strategy: &str,
    catalogs: bool,
    extra: &[(&str, &str, &str)],
) -> BTreeMap<String, serde_json::Value> {
    let on = if catalogs { "true" } else { "false" };
    let mut set = vec![("targets", "catalogs", on)];
    set.extend_from_slice(extra);
    crawl_portal(dir, host, port, strategy, &set).await.rows
}

fn paths(host: &str, files: &[(String, bool)], only: Option<bool>) -> BTreeSet<String> {
    files
        .iter()
        .filter(|(_, catalog_only)| only.is_none_or(|o| o == *catalog_only))
        .map(|(p, _)| format!("http://{host}{p}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ckan_api_reaches_the_datasets_no_page_links() {
    let host = "portal.test";
    let portal = Portal::default();
    let files = portal.files();
    let server = serve_host(host, Arc::new(portal)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    for strategy in ["sb", "bfs"] {
        let on = crawl(dir.path(), host, server.port(), strategy, true, &[]).await;
        let got: BTreeSet<String> = on.keys().cloned().collect();
        assert_eq!(got, paths(host, &files, None), "{strategy}, catalogs on");
        for url in paths(host, &files, Some(true)) {
            assert_eq!(on[&url]["found_by"], "catalog:ckan", "{strategy}: {url}");
        }
        let off = crawl(dir.path(), host, server.port(), strategy, false, &[]).await;
        let got: BTreeSet<String> = off.keys().cloned().collect();
        assert_eq!(
            got,
            paths(host, &files, Some(false)),
            "{strategy}, catalogs off"
        );
        assert!(off.values().all(|r| r["found_by"] == "page link"));
    }
    // With catalogs off, nothing was asked of the API by those jobs: every
    // API request of the log came from the catalog-on runs (two
    // strategies, at most a few pages each).
    let api = server
        .log()
        .iter()
        .filter(|r| r.path_and_query.starts_with("/api/"))
        .count();
    assert!((2..=8).contains(&api), "{api} API requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dcat_catalog_reaches_the_tables_no_page_links() {
    let host = "stats.test";
    let site = DcatSite::default();
    let files = site.files();
    let server = serve_host(host, Arc::new(site)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let on = crawl(dir.path(), host, server.port(), "sb", true, &[]).await;
    let got: BTreeSet<String> = on.keys().cloned().collect();
    assert_eq!(got, paths(host, &files, None));
    for url in paths(host, &files, Some(true)) {
        assert_eq!(on[&url]["found_by"], "catalog:dcat", "{url}");
    }
    let off = crawl(dir.path(), host, server.port(), "sb", false, &[]).await;
    let got: BTreeSet<String> = off.keys().cloned().collect();
    assert_eq!(got, paths(host, &files, Some(false)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_catalog_costs_bounded_requests() {
    let host = "liar.test";
    let server = serve_host(host, Arc::new(LyingPortal)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let max_links = 100u64;
    let on = crawl(
        dir.path(),
        host,
        server.port(),
        "sb",
        true,
        &[("limits", "max_links_per_page", "100")],
    )
    .await;
    // The one real file; no page or dead link became a target.
    assert_eq!(
        on.keys().cloned().collect::<Vec<_>>(),
        vec![format!("http://{host}/files/real.csv")]
    );
    let log = server.log();
    let api_pages = log
        .iter()
        .filter(|r| r.path_and_query.starts_with("/api/"))
        .count() as u64;
    assert!(api_pages <= MAX_CKAN_PAGES, "{api_pages} API pages");
    // A claim of 10⁹ datasets: at most MAX_CKAN_PAGES pages of entries; a
    // data.json of 10⁶: its body cap and the job's links cap.
    let bound = MAX_CKAN_PAGES * (1 + LYING_PER_PAGE as u64) + max_links + 10;
    assert!(
        (log.len() as u64) <= bound,
        "{} requests, bound {bound}",
        log.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_refuses_a_catalogs_switch_that_is_no_boolean() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\nseeds = [\"http://a.test/\"]\n\n[targets]\ncatalogs = \"yes\"\n",
    )
    .expect("write the job");
    let out =
        crate::harness::bin::output(crate::harness::bin::command().arg("check").arg(&bad)).await;
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("bad.toml:5: targets.catalogs: expected a boolean, found a string"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_txt_that_disallows_the_api_keeps_the_catalog_unread() {
    let host = "closed.test";
    let portal = Portal {
        robots_disallow_api: true,
        ..Portal::default()
    };
    let files = portal.files();
    let server = serve_host(host, Arc::new(portal)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let on = crawl(dir.path(), host, server.port(), "sb", true, &[]).await;
    let got: BTreeSet<String> = on.keys().cloned().collect();
    assert_eq!(got, paths(host, &files, Some(false)));
    assert!(
        !server
            .log()
            .iter()
            .any(|r| r.path_and_query.starts_with("/api/")),
        "the API was asked despite robots.txt"
    );
}

/// `forager explain` after a crawl of the CKAN-shaped portal with catalogs
/// on: a row per link source, whose files add up to the manifest's
/// `found_by`, and the catalog a source the bandit picked from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_shows_which_link_sources_paid() {
    let host = "explained.test";
    let server = serve_host(host, Arc::new(Portal::default())).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let run = crawl_portal(
        dir.path(),
        host,
        server.port(),
        "sb",
        &[("targets", "catalogs", "true")],
    )
    .await;
    let mut by: BTreeMap<String, u64> = BTreeMap::new();
    for row in run.rows.values() {
        *by.entry(row["found_by"].as_str().unwrap_or_default().to_string())
            .or_default() += 1;
    }
    assert_eq!(by.values().sum::<u64>(), 60, "{by:?}");
    let out = crate::harness::bin::output(
        crate::harness::bin::command()
            .arg("explain")
            .arg("--state-dir")
            .arg(&run.state)
            .arg(&run.job),
    )
    .await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("link sources (how each link was found)"),
        "{text}"
    );
    // The columns: source, files, picked, rewarded, waiting.
    let row = |source: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{source}  ")))
            .unwrap_or_else(|| panic!("no row for {source} in {text}"));
        line[line.find(source).unwrap_or(0) + source.len()..]
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    for (source, files) in &by {
        assert_eq!(row(source)[0], files.to_string(), "{source}: {text}");
    }
    // The catalog: its API pages were picked by the bandit (one a page,
    // 30 datasets at 100 rows: one), and they led to files.
    let ckan = row("catalog:ckan");
    let picked: u64 = ckan[1].parse().unwrap_or(0);
    let rewarded: f64 = ckan[2].parse().unwrap_or(0.0);
    assert!(picked >= 1, "{text}");
    assert!(rewarded > 0.0, "{text}");
    // Page links were picked too; everything was fetched, nothing waits.
    let pages = row("page link");
    assert!(pages[1].parse::<u64>().unwrap_or(0) >= 1, "{text}");
    assert_eq!(pages[3], "0", "{text}");
}

/// A portal whose three catalogs sit at paths no well-known list has:
/// robots.txt's `Sitemap:` names the `data.json`, the sitemap (through a
/// sitemap index) the DCAT file, the home page's JSON `<link
/// rel="alternate">` the CKAN API. Catalogs on: every file, each credited
/// to its catalog, each catalog asked once per crawl, the page's JSON twin
/// (an alternate that is no catalog) never asked. Off: the linked files
/// only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalogs_listed_by_robots_sitemaps_and_alternates_are_read() {
    let host = "listed.test";
    let site = ListedCatalogs::default();
    let files = site.files();
    let server = serve_host(host, Arc::new(site)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let all: BTreeSet<String> = files
        .iter()
        .map(|(p, _)| format!("http://{host}{p}"))
        .collect();
    let linked: BTreeSet<String> = files
        .iter()
        .filter(|(_, only)| only.is_none())
        .map(|(p, _)| format!("http://{host}{p}"))
        .collect();
    let catalog_requests = |server: &forager_bench::sites::server::SiteServer| {
        let log = server.log();
        [LISTED_CKAN, LISTED_DATA_JSON, LISTED_DCAT].map(|c| {
            log.iter()
                .filter(|r| r.path_and_query.starts_with(c))
                .count()
        })
    };
    for strategy in ["sb", "bfs"] {
        let before = catalog_requests(&server);
        let on = crawl(dir.path(), host, server.port(), strategy, true, &[]).await;
        let got: BTreeSet<String> = on.keys().cloned().collect();
        assert_eq!(got, all, "{strategy}, catalogs on");
        for (p, only) in &files {
            let want = match only {
                Some(kind) => format!("catalog:{kind}"),
                None => "page link".to_string(),
            };
            let row = &on[&format!("http://{host}{p}")];
            assert_eq!(row["found_by"], want.as_str(), "{strategy}: {p}");
        }
        // Each catalog once per crawl with catalogs on (GETs; a HEAD never
        // asks a catalog), however many ways it was announced.
        let after = catalog_requests(&server);
        let asked: Vec<usize> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        assert_eq!(asked, vec![1; 3], "{strategy}");
        // Off, the files no page links stay out of reach (the sitemap's
        // DCAT entry and robots.txt's `data.json` may still be asked, as
        // a page and as a sitemap: neither yields a link).
        let off = crawl(dir.path(), host, server.port(), strategy, false, &[]).await;
        // (The DCAT file, asked as a page, may be kept as a target of its
        // own when the preset takes RDF: only the CSV files count.)
        let got: BTreeSet<String> = off
            .keys()
            .filter(|u| u.ends_with(".csv"))
            .cloned()
            .collect();
        assert_eq!(got, linked, "{strategy}, catalogs off");
    }
    assert!(
        !server
            .log()
            .iter()
            .any(|r| r.path_and_query.starts_with("/api/page.json")),
        "a JSON alternate that is no catalog was asked"
    );
}
