//! Structured-data jobs through the real binary, on a loopback shop: a page
//! whose embedded statements reach `min_statements` is a target (HTML saved,
//! statements in `data.nq.gz` in the page's graph, counts per syntax in its
//! manifest row); pages under the threshold and plain pages are not, and
//! their links are still followed.

use crate::harness::{manifest_by_final_url, Crawl, JobFile};
use forager::output::nquads;
use forager_bench::sites::server::{Site, SiteRequest, SiteResponse, SiteServer};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const HOST: &str = "shop.test";

/// Product: 6 JSON-LD statements (type, name, offers, Offer type, price, currency).
const PRODUCT: &str = r#"<html><head><script type="application/ld+json">
{"@context": "https://schema.org", "@type": "Product", "name": "Kettle",
 "offers": {"@type": "Offer", "price": "20", "priceCurrency": "EUR"}}
</script></head><body><a href="/">home</a><a href="/recipe">a recipe</a></body></html>"#;

/// Recipe: 7 microdata statements (type, name, 3 ingredients, author, Person type)
/// + 1 (the author's name) = 8, and an RDFa block of 4 (usesVocabulary, type, name,
///   and a `<time>` whose value is its `datetime`, not its text).
const RECIPE: &str = r#"<html><body>
<div itemscope itemtype="http://schema.org/Recipe"><h1 itemprop="name">Soup</h1>
<span itemprop="recipeIngredient">a</span><span itemprop="recipeIngredient">b</span>
<span itemprop="recipeIngredient">c</span>
<div itemprop="author" itemscope itemtype="http://schema.org/Person"><span itemprop="name">Ann</span></div></div>
<div vocab="http://schema.org/" typeof="WebPage"><span property="name">Recipes</span>
<time property="datePublished" datetime="2024-07-01">the first of July</time></div>
<a href="/thin">thin</a></body></html>"#;

/// 3 statements: under the default threshold of 6.
const THIN: &str = r#"<html><body><div itemscope itemtype="http://schema.org/Thing">
<span itemprop="name">x</span><span itemprop="description">y</span></div>
<a href="/deep">deeper</a></body></html>"#;

/// Only reachable through two pages without enough data.
const DEEP: &str = r#"<html><body><article class="h-entry"></article>
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Event",
 "name": "Fair", "startDate": "2024-07-01", "location": {"@type": "Place", "name": "Square"}}</script>
<script type="application/ld+json">{"broken": </script></body></html>"#;

struct Shop;

impl Site for Shop {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        match req.path_and_query().as_str() {
            "/" => SiteResponse::html(
                "<html><body><a href=\"/product\">p</a><a href=\"/about\">about</a></body></html>",
            ),
            "/about" => SiteResponse::html("<html><body>about us</body></html>"),
            "/product" => SiteResponse::html(PRODUCT),
            "/recipe" => SiteResponse::html(RECIPE),
            "/thin" => SiteResponse::html(THIN),
            "/deep" => SiteResponse::html(DEEP),
            _ => SiteResponse::not_found(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relevant_pages_are_saved_with_their_statements() {
    let sites: Vec<(String, Arc<dyn Site>)> = vec![(HOST.to_string(), Arc::new(Shop))];
    let server = SiteServer::start(sites).await.expect("start the shop");
    let dir = tempfile::tempdir().expect("tempdir");
    for strategy in ["bfs", "sb"] {
        let name = format!("shop-{strategy}");
        let job = JobFile::new(&name)
            .seed(format!("http://{HOST}/"))
            .strategy(strategy)
            .delay("10ms")
            .no_early_stop()
            .set("targets", "preset", "\"structured\"")
            .write(dir.path());
        let state = dir.path().join(format!("state-{strategy}"));
        let out = Crawl::new(&job, &state)
            .allow_private()
            .resolve(HOST, server.port())
            .output()
            .await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        let targets = state.join("targets").join(&name);
        let by_url = manifest_by_final_url(&targets);
        let want: Vec<String> = ["/deep", "/product", "/recipe"]
            .iter()
            .map(|p| format!("http://{HOST}{p}"))
            .collect();
        assert_eq!(
            by_url.keys().cloned().collect::<Vec<_>>(),
            want,
            "{strategy}"
        );

        let manifest = std::fs::read_to_string(targets.join("manifest.jsonl")).expect("manifest");
        let rows: BTreeMap<String, serde_json::Value> = manifest
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON row"))
            .map(|v| (v["final_url"].as_str().unwrap_or_default().to_string(), v))
            .collect();
        let counts = |path: &str| rows[&format!("http://{HOST}{path}")]["structured"].clone();
        assert_eq!(
            counts("/product"),
            serde_json::json!({"json_ld": 6, "microdata": 0, "rdfa": 0, "microformats": 0, "json_ld_invalid": 0})
        );
        assert_eq!(
            counts("/recipe"),
            serde_json::json!({"json_ld": 0, "microdata": 8, "rdfa": 4, "microformats": 0, "json_ld_invalid": 0})
        );
        assert_eq!(
            counts("/deep"),
            serde_json::json!({"json_ld": 6, "microdata": 0, "rdfa": 0, "microformats": 1, "json_ld_invalid": 1})
        );
        // The saved file is the page as served.
        let product = &rows[&format!("http://{HOST}/product")];
        let file = targets.join(product["file"].as_str().expect("file"));
        assert_eq!(std::fs::read_to_string(file).expect("saved page"), PRODUCT);

        // Statements, once each, in their page's graph.
        let mut per_graph: BTreeMap<String, usize> = BTreeMap::new();
        let mut published = Vec::new();
        for line in nquads::read_statements(&targets).expect("read data.nq.gz") {
            if line.contains("datePublished") {
                published.push(line.clone());
            }
            let body = line.strip_suffix(" .").expect("a statement");
            let (_, graph) = body.rsplit_once(' ').expect("a graph");
            *per_graph.entry(graph.to_string()).or_default() += 1;
        }
        let expect: BTreeMap<String, usize> = [("/deep", 6), ("/product", 6), ("/recipe", 12)]
            .into_iter()
            .map(|(p, n)| (format!("<http://{HOST}{p}>"), n))
            .collect();
        assert_eq!(per_graph, expect, "{strategy}");
        // HTML+RDFa 1.1: a <time> element's value is its @datetime.
        assert_eq!(published.len(), 1, "{published:?}");
        assert!(
            published[0].contains("\"2024-07-01\"") && !published[0].contains("first of July"),
            "{published:?}"
        );

        // Issue 39, point 3: crawl.log shows each saved page as a saved
        // target, and the home page (no statements) as a page.
        let log = std::fs::read_to_string(targets.join("crawl.log")).expect("crawl.log");
        let requests: BTreeMap<String, serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
            .filter(|v| v["event"] == "request" && v["method"] == "GET")
            .map(|v| (v["url"].as_str().unwrap_or_default().to_string(), v))
            .collect();
        for path in ["/deep", "/product", "/recipe"] {
            let line = &requests[&format!("http://{HOST}{path}")];
            assert_eq!(line["label"], "target", "{path}: {line}");
            assert_eq!(line["saved"], true, "{path}: {line}");
        }
        let home = &requests[&format!("http://{HOST}/")];
        assert_eq!(home["label"], "page", "{home}");
        assert!(home.get("saved").is_none(), "{home}");
    }
    let _ = server.shutdown().await;
}

/// A web of `hosts` hosts: each has a home page linking to `pages` item pages
/// and to every other home; item pages link to the next item and to another
/// host's home. Items of the first `rich` hosts carry a product in JSON-LD
/// (6 statements: relevant), the others are plain.
struct Web {
    host: usize,
    hosts: usize,
    pages: usize,
    rich: usize,
}

impl Web {
    fn name(i: usize) -> String {
        format!("h{i}.test")
    }

    fn relevant_urls(pages: usize, rich: usize) -> Vec<String> {
        let mut v: Vec<String> = (0..rich)
            .flat_map(|h| (0..pages).map(move |p| format!("http://{}/item/{p}", Web::name(h))))
            .collect();
        v.sort();
        v
    }
}

impl Site for Web {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path_and_query();
        let others: String = (0..self.hosts)
            .filter(|&h| h != self.host)
            .map(|h| format!("<a href=\"http://{}/\">other</a>", Web::name(h)))
            .collect();
        if path == "/" {
            let items: String = (0..self.pages)
                .map(|p| format!("<a href=\"/item/{p}\">item</a>"))
                .collect();
            return SiteResponse::html(format!("<html><body>{items}{others}</body></html>"));
        }
        let Some(p) = path
            .strip_prefix("/item/")
            .and_then(|p| p.parse::<usize>().ok())
            .filter(|&p| p < self.pages)
        else {
            return SiteResponse::not_found();
        };
        let next = format!("<a href=\"/item/{}\">next</a>", (p + 1) % self.pages);
        let away = format!(
            "<a href=\"http://{}/\">away</a>",
            Web::name((self.host + p + 1) % self.hosts)
        );
        let data = if self.host < self.rich {
            format!(
                r#"<script type="application/ld+json">{{"@context": "https://schema.org",
 "@type": "Product", "name": "Item {p}", "offers": {{"@type": "Offer", "price": "{p}",
 "priceCurrency": "EUR"}}}}</script>"#
            )
        } else {
            String::new()
        };
        SiteResponse::html(format!(
            "<html><head>{data}</head><body>{next}{away}</body></html>"
        ))
    }
}

/// Issue #14 item 3: an `anthelion` job over several hosts harvests every
/// relevant page, and `forager explain` shows its hosts' success rates and
/// its classifier.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthelion_harvests_the_relevant_pages_of_a_multi_host_web() {
    let (hosts, pages, rich) = (5, 12, 2);
    let sites: Vec<(String, Arc<dyn Site>)> = (0..hosts)
        .map(|host| {
            let site: Arc<dyn Site> = Arc::new(Web {
                host,
                hosts,
                pages,
                rich,
            });
            (Web::name(host), site)
        })
        .collect();
    let server = SiteServer::start(sites).await.expect("start the web");
    let dir = tempfile::tempdir().expect("tempdir");
    let name = "web-anthelion";
    let job = JobFile::new(name)
        .seed(format!("http://{}/", Web::name(hosts - 1)))
        .scope("any")
        .strategy("anthelion")
        .delay("5ms")
        .no_early_stop()
        .set("targets", "preset", "\"structured\"")
        .set("politeness", "max_in_flight", 4)
        .write(dir.path());
    let state = dir.path().join("state");
    let mut crawl = Crawl::new(&job, &state).allow_private();
    for h in 0..hosts {
        crawl = crawl.resolve(&Web::name(h), server.port());
    }
    let out = crawl.output().await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let by_url = manifest_by_final_url(&state.join("targets").join(name));
    assert_eq!(
        by_url.keys().cloned().collect::<Vec<_>>(),
        Web::relevant_urls(pages, rich)
    );

    let explain = crate::harness::bin::output(
        crate::harness::bin::command()
            .args(["explain", name, "--state-dir"])
            .arg(&state),
    )
    .await;
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(explain.status.success(), "{text}");
    assert!(text.contains("online accuracy over"), "{text}");
    // The host that gave the most relevant pages first: a rich one, 12
    // relevant of its 13 pages (92.3 %).
    assert!(
        text.contains("hosts; those that gave the most pages with structured data first"),
        "{text}"
    );
    let first = text
        .lines()
        .find(|l| l.contains(".test"))
        .unwrap_or_default()
        .to_string();
    assert!(
        (first.contains("h0.test") || first.contains("h1.test"))
            && first.contains("      13       12   92.3%"),
        "{text}"
    );
    let _ = server.shutdown().await;
}

/// Issue #14 item 3: an `anthelion` job on the structured-data web, killed
/// with SIGKILL mid-crawl again and again and resumed, ends with every
/// relevant page's manifest row once and its statements in `data.nq.gz`
/// once: nothing lost, nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthelion_killed_mid_crawl_keeps_every_statement_once() {
    use forager_bench::sites::structured::StructuredWeb;
    use forager_bench::structured::ground_truth;
    let web = StructuredWeb::new(12, 10, 3);
    let truth = ground_truth(&web, 6).expect("ground truth");
    assert!(
        truth.relevant.len() > 10,
        "{} relevant",
        truth.relevant.len()
    );
    let server = SiteServer::start(web.sites()).await.expect("start the web");
    let dir = tempfile::tempdir().expect("tempdir");
    let name = "structured-kill";
    let mut job = JobFile::new(name)
        .scope("any")
        .strategy("anthelion")
        .delay("100ms")
        .no_early_stop()
        .set("targets", "preset", "\"structured\"")
        .set("politeness", "max_in_flight", 4);
    for s in web.seeds() {
        job = job.seed(s);
    }
    let job = job.write(dir.path());
    let state = dir.path().join("state");
    let mut run = Crawl::new(&job, &state)
        .allow_private()
        .checkpoint_interval("150ms");
    for i in 0..web.hosts {
        run = run.resolve(&web.host_name(i), server.port());
    }
    let targets = state.join("targets").join(name);
    let mut harvested_between_kills = Vec::new();
    for round in 0..5usize {
        // Kill after the server has answered a few more requests, never after
        // a fixed sleep: a slow start on a loaded machine must not turn the
        // kills into kills before the first request.
        let served_before = server.log().len();
        let mut child = crate::harness::bin::spawn(&mut run.command());
        let requests = served_before + 10 + 8 * round;
        crate::harness::bin::until(&mut child, || server.log().len() >= requests).await;
        crate::harness::bin::stop(&mut child, libc::SIGKILL).await;
        harvested_between_kills.push(manifest_by_final_url(&targets).len());
    }
    // The kills fell mid-crawl: some pages saved before the last, not all.
    assert!(
        harvested_between_kills
            .iter()
            .any(|&n| n > 0 && n < truth.relevant.len()),
        "{harvested_between_kills:?} of {}",
        truth.relevant.len()
    );
    let out = run.output().await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every relevant page once in the manifest (the helper panics on a
    // duplicate row), and nothing else.
    let by_url = manifest_by_final_url(&targets);
    assert_eq!(
        by_url.keys().cloned().collect::<BTreeSet<_>>(),
        truth.relevant
    );
    // Its statements once each, in its graph: as many as the extractor finds.
    let mut per_graph: BTreeMap<String, u64> = BTreeMap::new();
    let mut lines = BTreeSet::new();
    for line in nquads::read_statements(&targets).expect("read data.nq.gz") {
        let body = line.strip_suffix(" .").expect("a statement");
        let (_, graph) = body.rsplit_once(' ').expect("a graph");
        let graph = graph.trim_start_matches('<').trim_end_matches('>');
        *per_graph.entry(graph.to_string()).or_default() += 1;
        assert!(lines.insert(line.clone()), "written twice: {line}");
    }
    assert_eq!(per_graph, truth.statements);
    let _ = server.shutdown().await;
}

/// Issue #36 item 2: with `[output] warc = true` a structured-data job
/// archives every page it saves as a target: each manifest row has a
/// response record of its URL whose payload digest is the saved file's, and
/// the pages under the threshold have none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_targets_are_archived_as_warc() {
    use forager::output::warc::{self, read};
    let sites: Vec<(String, Arc<dyn Site>)> = vec![(HOST.to_string(), Arc::new(Shop))];
    let server = SiteServer::start(sites).await.expect("start the shop");
    let dir = tempfile::tempdir().expect("tempdir");
    let name = "shop-warc";
    let job = JobFile::new(name)
        .seed(format!("http://{HOST}/"))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
        .set("targets", "preset", "\"structured\"")
        .set("output", "warc", true)
        .write(dir.path());
    let state = dir.path().join("state");
    let out = Crawl::new(&job, &state)
        .allow_private()
        .resolve(HOST, server.port())
        .output()
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let targets = state.join("targets").join(name);
    let rows = manifest_by_final_url(&targets);
    assert_eq!(rows.len(), 3, "{rows:?}");
    // No folder at all when nothing was archived.
    let files = warc::series(&targets.join("warc"), name).unwrap_or_default();
    let mut responses = Vec::new();
    for (_, path) in &files {
        let records = read::read_all(path).unwrap_or_else(|e| panic!("{e}"));
        for r in &records {
            r.check_digests().unwrap_or_else(|e| panic!("{e}"));
        }
        responses.extend(records.into_iter().filter(|r| r.kind() == "response"));
    }
    let text = std::fs::read_to_string(targets.join("manifest.jsonl")).expect("manifest");
    for line in text.lines() {
        let row: forager::store::ManifestRow = serde_json::from_str(line).expect("a row");
        let body = std::fs::read(targets.join(&row.file)).expect("the saved page");
        let digest = warc::sha1_label(&body);
        assert!(
            responses.iter().any(
                |r| r.field("WARC-Target-URI") == Some(row.final_url.as_str())
                    && r.field("WARC-Payload-Digest") == Some(digest.as_str())
                    && r.http_payload() == Some(&body[..])
            ),
            "{} saved but not archived ({} response records)",
            row.final_url,
            responses.len()
        );
    }
    let archived: BTreeSet<&str> = responses
        .iter()
        .filter_map(|r| r.field("WARC-Target-URI"))
        .collect();
    assert_eq!(
        archived,
        rows.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        "targets only"
    );
    let _ = server.shutdown().await;
}
