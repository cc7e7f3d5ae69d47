//! End to end: `forager crawl` (the real binary) against the loopback fixture
//! site; every assertion is made on the server's own request log or on the
//! files the crawl wrote.

use forager_bench::sites::fixture::{FixtureSite, FIXTURE_HOST, OUTSIDE_HOST};
use forager_bench::sites::server::{min_start_gap, RequestRecord, SiteServer};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use crate::harness::bin;
use crate::harness::{Crawl, JobFile};

fn job_file(dir: &Path, name: &str, strategy: &str, port: u16) -> std::path::PathBuf {
    crate::harness::sites::fixture_job(name, port)
        .strategy(strategy)
        .rng_seed(7)
        .delay("20ms")
        .write(dir)
}

async fn crawl(job: &Path, state: &Path, port: u16) -> Output {
    Crawl::fixture(job, state, port).output().await
}

fn gets_by_path(log: &[RequestRecord]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in log
        .iter()
        .filter(|r| r.host == FIXTURE_HOST && r.method == "GET")
    {
        *m.entry(r.path_and_query.clone()).or_insert(0) += 1;
    }
    m
}

async fn check_strategy(strategy: &str) {
    let fixture = FixtureSite::new();
    let expected = fixture.expected_targets();
    let disallowed = fixture.disallowed_prefix();
    let crawl_delay = fixture.crawl_delay().unwrap();
    let server = SiteServer::start(fixture.sites()).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let job = job_file(
        tmp.path(),
        &format!("fixture-{strategy}"),
        strategy,
        server.port(),
    );
    let state = tmp.path().join("state");

    let out = crawl(&job, &state, server.port()).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "crawl failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("frontier empty"), "{stdout}");
    let log = server.log();

    // Every allowed target fetched exactly once.
    let gets = gets_by_path(&log);
    for t in &expected {
        assert_eq!(
            gets.get(t),
            Some(&1),
            "{strategy}: target {t} GETs: {gets:?}"
        );
    }
    // Nothing disallowed, nothing out of scope.
    for r in &log {
        assert_ne!(
            r.host, OUTSIDE_HOST,
            "{strategy}: out-of-scope request {r:?}"
        );
        assert!(
            !r.path_and_query.starts_with(disallowed),
            "{strategy}: disallowed request {r:?}"
        );
    }
    // Politeness: robots.txt's Crawl-delay between two request starts.
    let gap = min_start_gap(&log, FIXTURE_HOST).unwrap();
    assert!(
        gap >= crawl_delay,
        "{strategy}: gap {gap:?} < {crawl_delay:?}"
    );
    // One request in flight at a time.
    assert_eq!(server.max_in_flight(FIXTURE_HOST), 1);

    // The manifest lists exactly the expected targets, and each file holds its hash.
    let dir = state.join("targets").join(format!("fixture-{strategy}"));
    let manifest = std::fs::read_to_string(dir.join("manifest.jsonl")).unwrap();
    let mut paths = Vec::new();
    for line in manifest.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let url = url::Url::parse(row["final_url"].as_str().unwrap()).unwrap();
        let mut p = url.path().to_string();
        if let Some(q) = url.query() {
            p = format!("{p}?{q}");
        }
        let body = std::fs::read(dir.join(row["file"].as_str().unwrap())).unwrap();
        use sha2::Digest;
        assert_eq!(
            hex::encode(sha2::Sha256::digest(&body)),
            row["sha256"].as_str().unwrap()
        );
        assert_eq!(body.len() as u64, row["bytes"].as_u64().unwrap());
        paths.push(p);
    }
    paths.sort();
    assert_eq!(paths, expected, "{strategy}: manifest");
    // The crawl log names the links robots.txt kept it from, and those out of scope.
    let crawl_log = std::fs::read_to_string(dir.join("crawl.log")).unwrap();
    let skipped_for = |reason: &str| {
        crawl_log
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|l| l["event"] == "skip" && l["reason"] == reason)
            .map(|l| url::Url::parse(l["url"].as_str().unwrap()).unwrap())
            .collect::<Vec<_>>()
    };
    let robots = skipped_for("robots");
    assert!(
        !robots.is_empty() && robots.iter().all(|u| u.path().starts_with(disallowed)),
        "{strategy}: {robots:?}"
    );
    assert!(
        skipped_for("scope")
            .iter()
            .any(|u| u.host_str() == Some(OUTSIDE_HOST)),
        "{strategy}"
    );

    // robots.txt fetches are the fetcher's own, not the job's requests.
    let job_requests = log
        .iter()
        .filter(|r| r.path_and_query != "/robots.txt")
        .count();

    // Running the finished job again resumes from the store and sends no request.
    server.clear_log();
    let again = crawl(&job, &state, server.port()).await;
    assert!(again.status.success());
    let refetched = server.log();
    assert!(
        refetched.is_empty(),
        "{strategy}: resumed job requested {refetched:?}"
    );

    // `forager explain` reads the stored state: counters, classifier, link groups.
    let explain = crate::harness::bin::output(
        crate::harness::bin::command()
            .args(["explain", &format!("fixture-{strategy}"), "--state-dir"])
            .arg(&state),
    )
    .await;
    let text = String::from_utf8_lossy(&explain.stdout);
    eprintln!("{text}");
    assert!(explain.status.success(), "{text}");
    let head = format!("job fixture-{strategy} ({strategy}): {job_requests} requests");
    assert!(text.starts_with(&head), "{text}");
    if strategy == "sb" {
        assert!(text.contains("online accuracy over"), "{text}");
        assert!(text.contains("best first:"), "{text}");
        assert!(
            text.contains("  …/") || text.contains("  /html"),
            "a tag path: {text}"
        );
        assert!(
            text.contains("picks can exceed links"),
            "the columns explained: {text}"
        );
        // The ranking within actions, learnt from this job alone.
        assert!(
            text.contains("links within an action ranked by where they lead")
                && text.contains("started cold (no prior)"),
            "{text}"
        );
        // A new job with the same target kinds in the same store starts from
        // what this one learnt, unless it asks to start cold.
        for (name, prior, expect) in [
            ("fixture-sb-warm", true, "started from the prior"),
            ("fixture-sb-cold", false, "started cold (no prior)"),
        ] {
            let next = crate::harness::sites::fixture_job(name, server.port())
                .strategy(strategy)
                .rng_seed(7)
                .delay("20ms")
                .set("targets", "prior", prior)
                .write(tmp.path());
            let out = crawl(&next, &state, server.port()).await;
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let explain = crate::harness::bin::output(
                crate::harness::bin::command()
                    .args(["explain", name, "--state-dir"])
                    .arg(&state),
            )
            .await;
            let text = String::from_utf8_lossy(&explain.stdout);
            assert!(text.contains(expect), "{name}: {text}");
        }
    } else {
        assert!(text.contains("does not group links"), "{text}");
    }
    let _ = server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bfs_harvests_the_fixture_exactly_once_politely() {
    check_strategy("bfs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sb_harvests_the_fixture_exactly_once_politely() {
    check_strategy("sb").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_file_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\nseeds = [\"http://a.test/\"]\n\n[budget]\nrequests = \"many\"\n",
    )
    .unwrap();
    let out =
        crate::harness::bin::output(crate::harness::bin::command().arg("check").arg(&bad)).await;
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("bad.toml:5: budget.requests:"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_job_reuses_the_stored_robots_txt_and_finishes_the_harvest() {
    let fixture = FixtureSite::new();
    let expected = fixture.expected_targets();
    let server = SiteServer::start(fixture.sites()).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let job = job_file(tmp.path(), "fixture-budget", "bfs", server.port());
    let full = std::fs::read_to_string(&job).unwrap();
    std::fs::write(&job, format!("{full}\n[budget]\nrequests = 5\n")).unwrap();
    let state = tmp.path().join("state");

    let first = crawl(&job, &state, server.port()).await;
    assert!(String::from_utf8_lossy(&first.stdout).contains("request budget reached"));
    assert_eq!(gets_by_path(&server.log()).get("/robots.txt"), Some(&1));

    // A larger budget: the job resumes without asking for robots.txt again.
    server.clear_log();
    std::fs::write(&job, format!("{full}\n[budget]\nrequests = 0\n")).unwrap();
    let second = crawl(&job, &state, server.port()).await;
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(stdout.contains("frontier empty"), "{stdout}");
    let gets = gets_by_path(&server.log());
    assert_eq!(gets.get("/robots.txt"), None, "{gets:?}");
    let dir = state.join("targets").join("fixture-budget");
    let manifest = std::fs::read_to_string(dir.join("manifest.jsonl")).unwrap();
    assert_eq!(manifest.lines().count(), expected.len(), "{manifest}");
    let _ = server.shutdown().await;
}

/// A site whose data files are listed only in its sitemaps (robots.txt →
/// a sitemap index → a gzip-compressed urlset and a plain-text sitemap).
struct SitemapSite;

impl forager_bench::sites::server::Site for SitemapSite {
    fn respond(
        &self,
        req: &forager_bench::sites::server::SiteRequest,
    ) -> forager_bench::sites::server::SiteResponse {
        use forager_bench::sites::server::SiteResponse;
        use std::io::Write as _;
        match req.path.as_str() {
            "/robots.txt" => SiteResponse::ok(
                "text/plain",
                "User-agent: *\nDisallow: /private/\nSitemap: /sitemap-index.xml\n",
            ),
            "/" => SiteResponse::html(
                "<html><body><h1>Portal</h1><a href=\"/about.html\">About</a></body></html>"
                    .to_string(),
            ),
            "/about.html" => {
                SiteResponse::html("<html><body><p>Nothing here.</p></body></html>".to_string())
            }
            "/sitemap-index.xml" => SiteResponse::ok(
                "application/xml",
                "<?xml version=\"1.0\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <sitemap><loc>/sitemaps/data.xml.gz</loc></sitemap>\
                 <sitemap><loc>/sitemaps/more.txt</loc></sitemap></sitemapindex>",
            ),
            "/sitemaps/data.xml.gz" => {
                let xml = "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                    <url><loc>/about.html</loc></url>\
                    <url><loc>/data/only-in-sitemap.csv</loc></url>\
                    <url><loc>/private/secret.csv</loc></url></urlset>";
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(xml.as_bytes()).unwrap();
                SiteResponse::ok("application/gzip", gz.finish().unwrap())
            }
            "/sitemaps/more.txt" => SiteResponse::ok("text/plain", "/data/listed.xlsx\n"),
            "/data/only-in-sitemap.csv" => SiteResponse::ok("text/csv", "a,b\n1,2\n"),
            "/data/listed.xlsx" => SiteResponse::ok(
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                vec![0x50u8, 0x4b, 3, 4],
            ),
            "/private/secret.csv" => SiteResponse::ok("text/csv", "secret\n"),
            _ => SiteResponse::not_found(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_listed_in_robots_txt_are_a_source_of_links() {
    for strategy in ["bfs", "sb"] {
        let sites: Vec<(
            String,
            std::sync::Arc<dyn forager_bench::sites::server::Site>,
        )> = vec![(FIXTURE_HOST.to_string(), std::sync::Arc::new(SitemapSite))];
        let server = SiteServer::start(sites).await.unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let job = job_file(
            tmp.path(),
            &format!("sitemap-{strategy}"),
            strategy,
            server.port(),
        );
        let out = crawl(&job, &tmp.path().join("state"), server.port()).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let gets = gets_by_path(&server.log());
        for path in [
            "/sitemap-index.xml",
            "/sitemaps/data.xml.gz",
            "/sitemaps/more.txt",
            "/data/only-in-sitemap.csv",
            "/data/listed.xlsx",
            "/about.html",
        ] {
            assert_eq!(gets.get(path), Some(&1), "{strategy}: {path}: {gets:?}");
        }
        assert_eq!(
            gets.get("/private/secret.csv"),
            None,
            "robots.txt still rules"
        );
        let manifest = std::fs::read_to_string(
            tmp.path()
                .join("state/targets")
                .join(format!("sitemap-{strategy}"))
                .join("manifest.jsonl"),
        )
        .unwrap();
        assert_eq!(manifest.lines().count(), 2, "{strategy}: {manifest}");
        let _ = server.shutdown().await;
    }
}

/// SIGTERM, SIGINT and SIGHUP reach `forager crawl` through one signal stream:
/// each stops the job at a safe point with its state saved, and the same
/// command then finishes the harvest with every target exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stop_signal_saves_the_state_and_the_rerun_finishes() {
    let fixture = FixtureSite::new();
    let expected = fixture.expected_targets();
    let server = SiteServer::start(fixture.sites()).await.unwrap();
    let port = server.port();
    let tmp = tempfile::tempdir().unwrap();
    let job = job_file(tmp.path(), "fixture-signals", "bfs", port);
    let state = tmp.path().join("state");
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let requests_before = server.log().len();
        let mut child = bin::spawn(&mut Crawl::fixture(&job, &state, port).command());
        // Signal once the crawl has made a request of its own (the Crawl-delay
        // keeps it busy for seconds), so the stop lands mid-crawl.
        let exited = bin::until(&mut child, || server.log().len() > requests_before + 1).await;
        assert!(
            !exited,
            "signal {signal}: the crawl ended before its first request"
        );
        let pid = child.id().unwrap() as i32;
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let out = bin::finish(child).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "signal {signal}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("interrupted") || stdout.contains("frontier empty"),
            "signal {signal}: {stdout}"
        );
    }
    let last = crawl(&job, &state, port).await;
    let stdout = String::from_utf8_lossy(&last.stdout);
    assert!(stdout.contains("frontier empty"), "{stdout}");
    let gets = gets_by_path(&server.log());
    for t in &expected {
        assert_eq!(gets.get(t), Some(&1), "target {t} GETs: {gets:?}");
    }
    let _ = server.shutdown().await;
}

#[test]
fn a_job_file_parses_as_written() {
    let toml = JobFile::new("x")
        .seed("http://a.test/")
        .strategy("bfs")
        .rng_seed(7)
        .delay("20ms")
        .set("limits", "max_body", 1000)
        .no_early_stop()
        .toml();
    let spec = forager_core::config::parse_job(&toml, Path::new("x.toml")).expect("valid job");
    assert_eq!(spec.seed, 7);
    assert_eq!(spec.limits.max_body, 1000);
    assert!(!spec.budget.early_stop);
}

/// Servers label data files loosely: a CSV as `application/octet-stream`, a
/// TSV as `text/plain`, a download whose name is only in its
/// `Content-Disposition`. The `statistics` preset harvests them by their
/// file's name; a text file stays out, and a job's `ext` adds its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_files_under_generic_types_are_harvested_by_name() {
    use axum::http::{header, HeaderValue};
    use forager_bench::sites::server::{Site, SiteRequest, SiteResponse};
    use std::sync::Arc;
    struct LooseSite;
    impl Site for LooseSite {
        fn respond(&self, req: &SiteRequest) -> SiteResponse {
            let octets = "application/octet-stream";
            match req.path.as_str() {
                "/" => SiteResponse::html(
                    "<a href=/data/pop.csv>a</a><a href=/data/rates.tsv>b</a>\
                     <a href=/data/areas.geojson>c</a><a href=/data/raw.dat>d</a>\
                     <a href=/download?id=7>e</a><a href=/study.ipynb>f</a>\
                     <a href=/notes.txt>g</a><a href=/model.fit>h</a>",
                ),
                "/data/pop.csv" => SiteResponse::ok(octets, "year,pop\n2024,1\n"),
                "/data/rates.tsv" => SiteResponse::ok("text/plain", "year\trate\n"),
                "/data/areas.geojson" => SiteResponse::ok("application/geo+json", "{}"),
                "/data/raw.dat" => SiteResponse::ok("text/plain", "1 2 3\n"),
                "/download" => SiteResponse::ok(octets, "spss").with_header(
                    header::CONTENT_DISPOSITION,
                    HeaderValue::from_static("attachment; filename=\"survey.sav\""),
                ),
                "/study.ipynb" => SiteResponse::ok(octets, "{\"cells\": []}"),
                "/notes.txt" => SiteResponse::ok("text/plain", "notes\n"),
                "/model.fit" => SiteResponse::ok(octets, "fit"),
                _ => SiteResponse::not_found(),
            }
        }
    }
    let server = SiteServer::start(vec![(
        "loose.test".to_string(),
        Arc::new(LooseSite) as Arc<dyn Site>,
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let job = JobFile::new("loose")
        .seed("http://loose.test/")
        .strategy("bfs")
        .delay("0s")
        .set("targets", "ext", "[\"fit\"]")
        .write(dir.path());
    let state = dir.path().join("state");
    let out = Crawl::new(&job, &state)
        .allow_private()
        .resolve("loose.test", server.port())
        .output()
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = crate::harness::manifest_by_final_url(&state.join("targets").join("loose"));
    let got: Vec<&str> = rows
        .keys()
        .map(|u| u.strip_prefix("http://loose.test").unwrap_or(u))
        .collect();
    assert_eq!(
        got,
        [
            "/data/areas.geojson",
            "/data/pop.csv",
            "/data/rates.tsv",
            "/data/raw.dat",
            "/download?id=7",
            "/model.fit",
            "/study.ipynb"
        ]
    );
    let _ = server.shutdown().await;
}

/// `[scope] include` / `exclude`: links outside the included part of a site,
/// excluded ones and redirects out of it are never requested.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_and_exclude_patterns_bound_the_crawl() {
    use axum::http::StatusCode;
    use forager_bench::sites::server::{Site, SiteRequest, SiteResponse};
    use std::sync::Arc;
    struct Sections;
    impl Site for Sections {
        fn respond(&self, req: &SiteRequest) -> SiteResponse {
            let csv = "text/csv";
            match req.path_and_query().as_str() {
                "/" => SiteResponse::html(
                    "<a href=/data/>data</a><a href=/archive/>old</a><a href=/data/a.csv>a</a>\
                     <a href=/data/b.pdf>b</a><a href=/data/c.csv?print=1>c</a>",
                ),
                "/data/" => SiteResponse::html(
                    "<a href=/data/sub/d.csv>d</a><a href=/archive/e.csv>e</a>\
                     <a href=/data/moved>moved</a>",
                ),
                "/archive/" => SiteResponse::html("<a href=/archive/g.csv>g</a>"),
                "/data/moved" => SiteResponse::redirect(StatusCode::FOUND, "/archive/f.csv"),
                "/data/a.csv"
                | "/data/sub/d.csv"
                | "/archive/e.csv"
                | "/archive/f.csv"
                | "/archive/g.csv"
                | "/data/c.csv?print=1" => SiteResponse::ok(csv, "x,y\n1,2\n"),
                "/data/b.pdf" => SiteResponse::ok("application/pdf", "%PDF-1.4"),
                _ => SiteResponse::not_found(),
            }
        }
    }
    let server = SiteServer::start(vec![(
        "sections.test".to_string(),
        Arc::new(Sections) as Arc<dyn Site>,
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let job = JobFile::new("sections")
        .seed("http://sections.test/")
        .strategy("bfs")
        .delay("0s")
        .extra("[scope]\ninclude = [\"/data/**\"]\nexclude = [\"*.pdf\", \"re:[?&]print=\"]\n")
        .write(dir.path());
    let state = dir.path().join("state");
    let out = Crawl::new(&job, &state)
        .allow_private()
        .resolve("sections.test", server.port())
        .output()
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = crate::harness::manifest_by_final_url(&state.join("targets").join("sections"));
    let got: Vec<&str> = rows
        .keys()
        .map(|u| u.strip_prefix("http://sections.test").unwrap_or(u))
        .collect();
    assert_eq!(got, ["/data/a.csv", "/data/sub/d.csv"]);
    let mut asked: Vec<String> = server
        .log()
        .iter()
        .map(|r| r.path_and_query.clone())
        .filter(|p| p != "/robots.txt")
        .collect();
    asked.sort();
    assert_eq!(
        asked,
        [
            "/",
            "/data/",
            "/data/a.csv",
            "/data/moved",
            "/data/sub/d.csv"
        ],
        "{stdout}"
    );
    assert!(stdout.contains("5 out of scope"), "{stdout}");

    // The crawl log says what was asked and why the rest was not.
    let log_path = state.join("targets/sections/crawl.log");
    assert!(stdout.contains(&log_path.display().to_string()), "{stdout}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |event: &str| {
        let mut v: Vec<(String, String)> = lines
            .iter()
            .filter(|l| l["event"] == event)
            .map(|l| {
                let url = l["url"].as_str().unwrap();
                let url = url.strip_prefix("http://sections.test").unwrap_or(url);
                let what = match event {
                    "skip" => l["reason"].as_str().unwrap().to_string(),
                    _ => format!("{} {}", l["status"], l["label"].as_str().unwrap_or("-")),
                };
                (url.to_string(), what)
            })
            .collect();
        v.sort();
        v
    };
    let skipped = of("skip");
    let scope = |u: &str| (u.to_string(), "scope".to_string());
    assert_eq!(
        skipped,
        [
            scope("/archive/"),
            scope("/archive/e.csv"),
            scope("/archive/f.csv"),
            scope("/data/b.pdf"),
            scope("/data/c.csv?print=1"),
        ]
    );
    let requests = of("request");
    assert!(
        requests.contains(&("/data/a.csv".into(), "200 target".into())),
        "{requests:?}"
    );
    assert!(
        requests.contains(&("/data/moved".into(), "302 -".into())),
        "{requests:?}"
    );
    assert_eq!(requests.len(), asked.len(), "{requests:?}");
    assert!(lines.iter().all(|l| l["ts"].as_str().is_some()));
    let _ = server.shutdown().await;
}

#[tokio::test]
async fn http_options_reach_their_hosts_only_through_the_proxy_and_stay_secret() {
    use axum::http::StatusCode;
    use forager_bench::sites::server::{Site, SiteRequest, SiteResponse};
    use std::io::Read as _;
    use std::sync::Arc;
    const AUTH: &str = "Basic YWxpY2U6cGE1NQ=="; // alice:pa55
    /// Every request needs the job's header; `/data/` needs basic auth, `/members` the cookie.
    struct Vault;
    impl Site for Vault {
        fn respond(&self, req: &SiteRequest) -> SiteResponse {
            let get = |n: &str| req.headers.get(n).and_then(|v| v.to_str().ok());
            if get("x-team") != Some("data") {
                return SiteResponse::error(StatusCode::BAD_REQUEST);
            }
            match req.path.as_str() {
                "/" => SiteResponse::html(
                    "<a href=/data/1.csv>1</a><a href=/members>m</a><a href=http://open.test/>o</a>",
                ),
                "/members" if get("cookie") == Some("session=s3cret") => {
                    SiteResponse::html("<a href=/data/2.csv>2</a>")
                }
                "/members" => SiteResponse::error(StatusCode::FORBIDDEN),
                "/data/1.csv" | "/data/2.csv" if get("authorization") == Some(AUTH) => {
                    SiteResponse::ok("text/csv", "a,b\n1,2\n")
                }
                p if p.starts_with("/data/") => SiteResponse::error(StatusCode::UNAUTHORIZED),
                _ => SiteResponse::not_found(),
            }
        }
    }
    /// Another host: it must never see the vault's credentials.
    struct Open;
    impl Site for Open {
        fn respond(&self, req: &SiteRequest) -> SiteResponse {
            if req.headers.contains_key("cookie") || req.headers.contains_key("authorization") {
                return SiteResponse::error(StatusCode::BAD_REQUEST);
            }
            match req.path.as_str() {
                "/" => SiteResponse::html("<a href=/open.csv>x</a>"),
                "/open.csv" => SiteResponse::ok("text/csv", "c\n3\n"),
                _ => SiteResponse::not_found(),
            }
        }
    }
    // One loopback server plays the proxy: it routes by Host, and no host
    // name below resolves, so every answer proves the proxy carried it.
    let proxy = SiteServer::start(vec![
        ("vault.test".to_string(), Arc::new(Vault) as Arc<dyn Site>),
        ("open.test".to_string(), Arc::new(Open) as Arc<dyn Site>),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pw"), "pa55\n").unwrap();
    let job = JobFile::new("vault")
        .seed("http://vault.test/")
        .strategy("bfs")
        .scope("any")
        .delay("0s")
        .set("output", "warc", true)
        .extra(&format!(
            "[http]\nheaders = {{ X-Team = \"data\" }}\nproxy = \"http://127.0.0.1:{}\"\n\
             [http.hosts.\"vault.test\"]\ncookies = {{ session = \"s3cret\" }}\n\
             user = \"alice\"\npassword_file = \"{}\"\n",
            proxy.port(),
            dir.path().join("pw").display()
        ))
        .write(dir.path());
    let state = dir.path().join("state");
    let out = Crawl::new(&job, &state)
        .arg("--log")
        .arg("debug")
        .output()
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let rows = crate::harness::manifest_by_final_url(&state.join("targets").join("vault"));
    let got: Vec<&str> = rows.keys().map(String::as_str).collect();
    assert_eq!(
        got,
        [
            "http://open.test/open.csv",
            "http://vault.test/data/1.csv",
            "http://vault.test/data/2.csv"
        ],
        "{stderr}"
    );
    let log = proxy.log();
    assert!(
        log.iter().all(|r| r.status != 400),
        "a request without X-Team, or with leaked credentials: {log:?}"
    );
    assert!(log.iter().any(|r| r.host == "open.test"));
    // No secret in the log, nor in the archive's request records, nor in
    // the CDXJ index beside each WARC file (text).
    let mut warc = String::new();
    for entry in std::fs::read_dir(state.join("targets/vault/warc")).unwrap() {
        let path = entry.unwrap().path();
        let mut text = String::new();
        if path.extension().is_some_and(|e| e == "cdxj") {
            text = std::fs::read_to_string(&path).unwrap();
        } else {
            flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).unwrap())
                .read_to_string(&mut text)
                .unwrap();
        }
        warc.push_str(&text);
    }
    assert!(warc.contains("authorization: [redacted]"), "{warc}");
    for secret in ["pa55", "s3cret", "YWxpY2U6cGE1NQ"] {
        assert!(!stderr.contains(secret), "{secret} logged:\n{stderr}");
        assert!(!warc.contains(secret), "{secret} archived");
    }
}

/// `budget.neither_links = "skip"`: the links sb still predicts neither when
/// nothing else is left are never requested — each one is in the crawl log as
/// skipped, and each answered neither in the same crawl with `"last"` — and
/// every target is harvested all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_predicted_neither_are_skipped_when_the_job_says_so() {
    use forager_bench::sites::server::Site;
    use forager_bench::sites::synthetic::{Preset, SyntheticSite};
    use std::collections::BTreeSet;
    use std::sync::Arc;
    const HOST: &str = "variants.test";
    let dir = tempfile::tempdir().unwrap();
    let run = |mode: &'static str| {
        let dir = dir.path().to_path_buf();
        let site = SyntheticSite::preset(Preset::Variants, 1).unwrap();
        let start = site.start_path();
        let site: Arc<dyn Site> = Arc::new(site);
        async move {
            let server = SiteServer::start(vec![(HOST.to_string(), site)])
                .await
                .unwrap();
            let job = JobFile::new(&format!("variants-{mode}"))
                .seed(format!("http://{HOST}{start}"))
                .delay("0s")
                .no_early_stop()
                .set("budget", "neither_links", format!("\"{mode}\""))
                .write(&dir);
            let state = dir.join(format!("state-{mode}"));
            let stdout = Crawl::new(&job, &state)
                .allow_private()
                .resolve(HOST, server.port())
                .succeed()
                .await;
            let targets = state.join("targets").join(format!("variants-{mode}"));
            let rows: BTreeSet<String> = crate::harness::manifest_by_final_url(&targets)
                .into_keys()
                .collect();
            let log: Vec<serde_json::Value> = std::fs::read_to_string(targets.join("crawl.log"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let asked: Vec<RequestRecord> = server.log();
            let _ = server.shutdown().await;
            (rows, log, asked, stdout)
        }
    };
    let (rows_last, log_last, asked_last, _) = run("last").await;
    let (rows_skip, log_skip, asked_skip, stdout) = run("skip").await;

    assert!(rows_last.len() > 100, "{} targets", rows_last.len());
    assert_eq!(rows_skip, rows_last, "every target either way");
    let reason = |l: &serde_json::Value| l["reason"].as_str().map(str::to_string);
    assert!(
        log_last
            .iter()
            .all(|l| reason(l).as_deref() != Some("predicted_neither")),
        "nothing is skipped by default"
    );
    let skipped: BTreeSet<String> = log_skip
        .iter()
        .filter(|l| reason(l).as_deref() == Some("predicted_neither"))
        .map(|l| l["url"].as_str().unwrap().to_string())
        .collect();
    assert!(skipped.len() > 500, "{} skipped", skipped.len());
    let url = |r: &RequestRecord| format!("http://{}{}", r.host, r.path_and_query);
    let requested_skip: BTreeSet<String> = asked_skip.iter().map(url).collect();
    assert!(
        skipped.is_disjoint(&requested_skip),
        "a skipped link was requested"
    );
    // With "last" the same links were fetched, and none was a page or a target.
    let answered: BTreeMap<String, String> = log_last
        .iter()
        .filter(|l| l["event"] == "request")
        .map(|l| {
            let label = l["label"].as_str().unwrap_or("error").to_string();
            (l["url"].as_str().unwrap().to_string(), label)
        })
        .collect();
    for u in &skipped {
        let label = answered.get(u).map(String::as_str);
        assert!(matches!(label, Some("neither" | "error")), "{u}: {label:?}");
    }
    assert_eq!(
        asked_skip.len() + skipped.len(),
        asked_last.len(),
        "the requests saved are the links skipped"
    );
    let dropped = stdout
        .split(" dropped")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse::<usize>().ok());
    assert!(dropped >= Some(skipped.len()), "{stdout}");
}
