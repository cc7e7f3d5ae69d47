//! Structured-data jobs through the real binary, on a loopback shop: a page
//! whose embedded statements reach `min_statements` is a target (HTML saved,
//! statements in `data.nq.gz` in the page's graph, counts per syntax in its
//! manifest row); pages under the threshold and plain pages are not, and
//! their links are still followed.

mod common;

use common::{manifest_by_final_url, Crawl, JobFile};
use forager::output::nquads;
use forager::sites::server::{Site, SiteRequest, SiteResponse, SiteServer};
use std::collections::BTreeMap;
use std::sync::Arc;

const HOST: &str = "shop.test";

/// Product: 6 JSON-LD statements (type, name, offers, Offer type, price, currency).
const PRODUCT: &str = r#"<html><head><script type="application/ld+json">
{"@context": "https://schema.org", "@type": "Product", "name": "Kettle",
 "offers": {"@type": "Offer", "price": "20", "priceCurrency": "EUR"}}
</script></head><body><a href="/">home</a><a href="/recipe">a recipe</a></body></html>"#;

/// Recipe: 7 microdata statements (type, name, 3 ingredients, author, Person type)
/// + 1 (the author's name) = 8, and an RDFa block of 3 (usesVocabulary, type, name).
const RECIPE: &str = r#"<html><body>
<div itemscope itemtype="http://schema.org/Recipe"><h1 itemprop="name">Soup</h1>
<span itemprop="recipeIngredient">a</span><span itemprop="recipeIngredient">b</span>
<span itemprop="recipeIngredient">c</span>
<div itemprop="author" itemscope itemtype="http://schema.org/Person"><span itemprop="name">Ann</span></div></div>
<div vocab="http://schema.org/" typeof="WebPage"><span property="name">Recipes</span></div>
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
            serde_json::json!({"json_ld": 0, "microdata": 8, "rdfa": 3, "microformats": 0, "json_ld_invalid": 0})
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
        for line in nquads::read_statements(&targets).expect("read data.nq.gz") {
            let body = line.strip_suffix(" .").expect("a statement");
            let (_, graph) = body.rsplit_once(' ').expect("a graph");
            *per_graph.entry(graph.to_string()).or_default() += 1;
        }
        let expect: BTreeMap<String, usize> = [("/deep", 6), ("/product", 6), ("/recipe", 11)]
            .into_iter()
            .map(|(p, n)| (format!("<http://{HOST}{p}>"), n))
            .collect();
        assert_eq!(per_graph, expect, "{strategy}");
    }
    let _ = server.shutdown().await;
}
