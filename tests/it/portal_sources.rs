//! Page-borne link sources of issue 40 through the real binary, on loopback
//! sites (`forager_bench::sites::portal`): GET forms (a statistics site
//! whose tables sit behind a form, a form of 10⁹ combinations), schema.org
//! `DataDownload` markup and a DCAT catalog announced by `<link
//! rel="alternate">`. With the source on, every file is harvested and the
//! manifest names the source; off (the default), exactly the files only it
//! reaches are missing; a hostile form costs bounded requests.

use crate::harness::portal::{crawl_portal, urls};
use crate::harness::sites::serve_host;
use forager_bench::sites::portal::{FormSite, HostileFormSite, MarkupSite};
use forager_bench::sites::server::Site;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Crawls `host` with the `[targets]` switches given; the manifest rows by
/// final URL.
async fn crawl(
    dir: &Path,
    host: &str,
    port: u16,
    strategy: &str,
    targets: &[(&str, &str)],
) -> BTreeMap<String, serde_json::Value> {
    let set: Vec<(&str, &str, &str)> = targets.iter().map(|(k, v)| ("targets", *k, *v)).collect();
    crawl_portal(dir, host, port, strategy, &set).await.rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_form_reaches_the_tables_no_page_links() {
    let host = "forms.test";
    let site = FormSite::default();
    let files = site.files();
    let server = serve_host(host, Arc::new(site)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    for strategy in ["sb", "bfs"] {
        let on = crawl(
            dir.path(),
            host,
            server.port(),
            strategy,
            &[("forms", "true")],
        )
        .await;
        let got: BTreeSet<String> = on.keys().cloned().collect();
        assert_eq!(
            got,
            urls(host, files.iter().map(|(p, _)| p.clone())),
            "{strategy}, forms on"
        );
        // Provenance follows the path: a form's own submission that is a
        // file says `form`, and so does a file linked from the result page
        // a submission led to. The "popular" tables' files, whose result
        // pages the home page links (and the crawl reads before the form
        // page), say `page link`.
        for (p, only) in &files {
            let row = &on[&format!("http://{host}{p}")];
            let referrer = row["referrer"].as_str().unwrap_or_default();
            let want = if *only { "form" } else { "page link" };
            assert_eq!(row["found_by"], want, "{strategy}: {p} from {referrer}");
            if *only && !p.starts_with("/download?") {
                assert!(
                    referrer.contains("/tables?"),
                    "{strategy}: {p} from {referrer}"
                );
            }
        }
        let off = crawl(dir.path(), host, server.port(), strategy, &[]).await;
        let got: BTreeSet<String> = off.keys().cloned().collect();
        let linked = files
            .iter()
            .filter(|(_, only)| !only)
            .map(|(p, _)| p.clone());
        assert_eq!(got, urls(host, linked), "{strategy}, forms off");
    }
    // The search form and the POST form were never submitted.
    let log = server.log();
    assert!(
        !log.iter().any(|r| r.path_and_query.starts_with("/search")
            || r.path_and_query.starts_with("/subscribe")),
        "a search or POST form was submitted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_of_a_billion_combinations_costs_bounded_requests() {
    let host = "hostile-form.test";
    let server = serve_host(host, Arc::new(HostileFormSite)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let start = Instant::now();
    let on = crawl(
        dir.path(),
        host,
        server.port(),
        "sb",
        &[("forms", "true"), ("max_form_links", "50")],
    )
    .await;
    assert_eq!(
        on.keys().cloned().collect::<Vec<_>>(),
        vec![format!("http://{host}/files/real.csv")]
    );
    let log = server.log();
    let explore: BTreeSet<&str> = log
        .iter()
        .filter(|r| r.path_and_query.starts_with("/explore"))
        .map(|r| r.path_and_query.as_str())
        .collect();
    // The per-form cap: 50 distinct submissions of 10⁹; each costs a GET,
    // and during sb's warm-up a HEAD before it.
    assert!(
        (1..=50).contains(&explore.len()),
        "{} form URLs",
        explore.len()
    );
    assert!(log.len() <= 2 * 50 + 5, "{} requests", log.len());
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markup_and_alternate_catalogs_reach_files_no_page_links() {
    let host = "markup.test";
    let site = MarkupSite::default();
    let files = site.files();
    let server = serve_host(host, Arc::new(site)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let on = crawl(
        dir.path(),
        host,
        server.port(),
        "sb",
        &[("catalogs", "true")],
    )
    .await;
    let got: BTreeSet<String> = on.keys().cloned().collect();
    assert_eq!(got, urls(host, files.iter().map(|(p, _)| p.clone())));
    for (p, only) in &files {
        let want = match only {
            None => "page link",
            Some("schema.org") => "catalog:schema.org",
            Some(_) => "catalog:dcat",
        };
        assert_eq!(on[&format!("http://{host}{p}")]["found_by"], want, "{p}");
    }
    let off = crawl(dir.path(), host, server.port(), "sb", &[]).await;
    let got: BTreeSet<String> = off.keys().cloned().collect();
    let linked = files
        .iter()
        .filter(|(_, only)| only.is_none())
        .map(|(p, _)| p.clone());
    assert_eq!(got, urls(host, linked));
    // The site is a plain `Site`: the harness serves any.
    let _: &dyn Site = &MarkupSite::default();
}
