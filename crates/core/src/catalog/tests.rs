use super::*;
use proptest::prelude::*;

fn url(s: &str) -> Url {
    Url::parse(s).expect("a test URL")
}

fn urls(links: &PageLinks) -> Vec<(String, String)> {
    links
        .links
        .iter()
        .map(|l| (l.url.to_string(), l.tag_path.to_string()))
        .collect()
}

const CKAN_PAGE: &str = r#"{"help": "x", "success": true, "result": {"count": 250, "results": [
  {"name": "a", "resources": [{"url": "/files/a.csv", "format": "CSV"}, {"url": "https://other.test/b.xlsx"}]},
  {"name": "b", "resources": [{"url": 42}, {"nourl": true}, "junk"]},
  "not a package",
  {"name": "c", "resources": {"url": "/not-an-array.csv"}}
]}}"#;

#[test]
fn ckan_resources_and_next_page() {
    let base = url("http://portal.test/api/3/action/package_search?rows=100&start=0");
    let links = catalog_links(
        CatalogKind::Ckan,
        CKAN_PAGE.as_bytes(),
        &base,
        "application/json",
        &ExtractLimits::default(),
    );
    assert_eq!(
        urls(&links),
        vec![
            (
                "http://portal.test/files/a.csv".to_string(),
                CKAN_ENTRY.to_string()
            ),
            (
                "https://other.test/b.xlsx".to_string(),
                CKAN_ENTRY.to_string()
            ),
            (
                "http://portal.test/api/3/action/package_search?rows=100&start=100".to_string(),
                "[catalog ckan]".to_string()
            ),
        ]
    );
    assert!(links.cut.is_none());
}

#[test]
fn ckan_paging_stops_at_the_count_and_the_page_cap() {
    let page = |start: u64| {
        url(&format!(
            "http://p.test/api/3/action/package_search?q=x&rows=100&start={start}"
        ))
    };
    assert_eq!(
        ckan_next_page(&page(100), 250).map(|u| u.to_string()),
        Some("http://p.test/api/3/action/package_search?q=x&rows=100&start=200".to_string())
    );
    assert_eq!(ckan_next_page(&page(200), 250), None);
    // A claim of 10⁹ datasets still ends after MAX_CKAN_PAGES pages.
    let last = (MAX_CKAN_PAGES - 1) * 100;
    assert_eq!(ckan_next_page(&page(last), 1_000_000_000), None);
    assert!(ckan_next_page(&page(last - 100), 1_000_000_000).is_some());
    // No rows, bad numbers: no next page.
    assert_eq!(
        ckan_next_page(&url("http://p.test/s?rows=0&start=0"), 10),
        None
    );
    assert_eq!(
        ckan_next_page(&url("http://p.test/s?rows=x&start=0"), 10),
        None
    );
    assert_eq!(
        ckan_next_page(
            &url(&format!("http://p.test/s?rows=5&start={}", u64::MAX)),
            u64::MAX
        ),
        None
    );
}

#[test]
fn an_empty_ckan_page_has_no_next_page() {
    let base = url("http://p.test/api/3/action/package_search?rows=10&start=0");
    let body = r#"{"result": {"count": 1000000, "results": []}}"#;
    let links = catalog_links(
        CatalogKind::Ckan,
        body.as_bytes(),
        &base,
        "",
        &ExtractLimits::default(),
    );
    assert!(links.links.is_empty());
}

#[test]
fn data_json_distributions() {
    let base = url("http://agency.test/data.json");
    let body = r#"{"conformsTo": "https://project-open-data.cio.gov/v1.1/schema",
      "dataset": [
        {"title": "t", "distribution": [
          {"downloadURL": "http://agency.test/d/1.csv", "mediaType": "text/csv"},
          {"accessURL": "http://agency.test/api/x"}]},
        {"title": "u", "distribution": [{"downloadURL": ["not", "a", "string"]}]},
        {"title": "no distribution"}
      ]}"#;
    let links = catalog_links(
        CatalogKind::DataJson,
        body.as_bytes(),
        &base,
        "",
        &ExtractLimits::default(),
    );
    assert_eq!(
        urls(&links),
        vec![
            (
                "http://agency.test/d/1.csv".to_string(),
                DATA_JSON_DOWNLOAD.to_string()
            ),
            (
                "http://agency.test/api/x".to_string(),
                DATA_JSON_ACCESS.to_string()
            ),
        ]
    );
}

#[test]
fn dcat_turtle_download_access_and_distribution() {
    let base = url("http://stats.test/catalog.ttl");
    let body = r#"@prefix dcat: <http://www.w3.org/ns/dcat#> .
@prefix dct: <http://purl.org/dc/terms/> .
<http://stats.test/catalog> a dcat:Catalog ; dcat:dataset <http://stats.test/ds/1> .
<http://stats.test/ds/1> a dcat:Dataset ; dct:title "One" ;
  dcat:landingPage <http://stats.test/ds/1.html> ;
  dcat:distribution [ a dcat:Distribution ; dcat:downloadURL <http://stats.test/f/1.csv> ] ,
                    <http://stats.test/dist/2> .
<http://stats.test/dist/2> dcat:accessURL <http://stats.test/api/2> .
"#;
    let links = catalog_links(
        CatalogKind::Dcat,
        body.as_bytes(),
        &base,
        "text/turtle",
        &ExtractLimits::default(),
    );
    assert_eq!(
        urls(&links),
        vec![
            (
                "http://stats.test/f/1.csv".to_string(),
                DCAT_DOWNLOAD.to_string()
            ),
            (
                "http://stats.test/dist/2".to_string(),
                DCAT_DISTRIBUTION.to_string()
            ),
            (
                "http://stats.test/api/2".to_string(),
                DCAT_ACCESS.to_string()
            ),
        ]
    );
}

#[test]
fn a_huge_catalog_costs_a_scan_and_stops_at_the_link_cap() {
    let mut body = String::from(r#"{"result": {"count": 2000000, "results": ["#);
    for i in 0..200_000 {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&format!(r#"{{"resources":[{{"url":"/f/{i}.csv"}}]}}"#));
    }
    body.push_str("]}}");
    let limits = ExtractLimits {
        max_links: 500,
        ..ExtractLimits::default()
    };
    let base = url("http://p.test/api/3/action/package_search?rows=100&start=0");
    let links = catalog_links(CatalogKind::Ckan, body.as_bytes(), &base, "", &limits);
    assert_eq!(links.links.len(), 500);
    assert_eq!(links.cut, Some(PageCut::MaxLinks));
}

#[test]
fn found_by_names_each_source() {
    assert_eq!(found_by("/"), "seed");
    assert_eq!(found_by("/html/body/a"), "page link");
    assert_eq!(found_by("[sitemap] urlset url loc"), "sitemap");
    assert_eq!(found_by("rdf:turtle"), "rdf link");
    assert_eq!(found_by(CKAN_ENTRY), "catalog:ckan");
    assert_eq!(found_by(DATA_JSON_ACCESS), "catalog:data.json");
    assert_eq!(found_by(DCAT_DOWNLOAD), "catalog:dcat");
    assert_eq!(found_by("[catalog ckan]"), "catalog:ckan");
    assert_eq!(found_by(schema_org::CONTENT_URL), "catalog:schema.org");
    assert_eq!(found_by(schema_org::DISTRIBUTION), "catalog:schema.org");
    assert_eq!(found_by("[form] /html/body/form.years"), "form");
    for kind in CatalogKind::ALL {
        assert_eq!(catalog_of(&TagPath::new(kind.tag_path())), Some(kind));
        assert!(is_catalog_link(kind.tag_path()));
    }
    assert_eq!(catalog_of(&TagPath::new(CKAN_ENTRY)), None);
}

#[test]
fn well_known_paths_are_three_on_the_origin() {
    let got = well_known(&url("https://portal.test/some/page?x=1"));
    let got: Vec<String> = got.into_iter().map(|(u, _)| u.to_string()).collect();
    assert_eq!(
        got,
        vec![
            "https://portal.test/api/3/action/package_search?rows=100&start=0",
            "https://portal.test/data.json",
            "https://portal.test/catalog.ttl",
        ]
    );
}

#[test]
fn catalogs_are_known_by_their_urls_shape() {
    let kind = |s: &str| kind_of_url(&url(s));
    assert_eq!(
        kind("http://p.test/api/3/action/package_search"),
        Some(CatalogKind::Ckan)
    );
    assert_eq!(
        kind("http://p.test/ckan/api/action/package_search?q=x"),
        Some(CatalogKind::Ckan)
    );
    assert_eq!(
        kind("http://p.test/pod/data.json"),
        Some(CatalogKind::DataJson)
    );
    assert_eq!(
        kind("http://p.test/open/dcat-export.ttl"),
        Some(CatalogKind::Dcat)
    );
    assert_eq!(kind("http://p.test/Catalog.RDF"), Some(CatalogKind::Dcat));
    // An RDF file that does not say it is a catalog may be a target.
    assert_eq!(kind("http://p.test/data/people.ttl"), None);
    assert_eq!(kind("http://p.test/catalog.html"), None);
    assert_eq!(kind("http://p.test/api/page.json"), None);
    assert_eq!(kind("http://p.test/package_search"), None);
    assert_eq!(kind("http://p.test/"), None);
}

#[test]
fn a_listed_ckan_api_is_asked_for_full_pages() {
    let (u, k) = listed_catalog(&url(
        "http://p.test/ckan/api/3/action/package_search?q=x&start=5",
    ))
    .expect("a CKAN API");
    assert_eq!(k, CatalogKind::Ckan);
    assert_eq!(
        u.as_str(),
        "http://p.test/ckan/api/3/action/package_search?q=x&rows=100&start=0"
    );
    // Its own paging is kept.
    let own = url("http://p.test/api/3/action/package_search?rows=7&start=14");
    assert_eq!(listed_catalog(&own).map(|(u, _)| u), Some(own));
    assert_eq!(listed_catalog(&url("http://p.test/x.csv")), None);
}

#[test]
fn a_sitemaps_catalog_entries_become_catalogs_to_read() {
    use crate::extract::sitemap::{SITEMAP_ENTRY_TAG_PATH, SITEMAP_TAG_PATH};
    let entry = |u: &str, t: &str| ExtractedLink {
        url: url(u),
        tag_path: TagPath::new(t),
        anchor: String::new(),
    };
    let mut links = PageLinks {
        links: vec![
            entry("http://p.test/", SITEMAP_ENTRY_TAG_PATH),
            entry("http://p.test/open/dcat.ttl", SITEMAP_ENTRY_TAG_PATH),
            entry("http://p.test/pod/data.json", SITEMAP_ENTRY_TAG_PATH),
            entry(
                "http://p.test/api/3/action/package_search",
                SITEMAP_ENTRY_TAG_PATH,
            ),
            // A nested sitemap named like a catalog stays a sitemap.
            entry("http://p.test/catalog.rdf", SITEMAP_TAG_PATH),
        ],
        base: url("http://p.test/sitemap.xml"),
        structured_data: false,
        structured: None,
        cut: None,
        rejected: RejectCounts::default(),
    };
    retag_sitemap_catalogs(&mut links);
    assert_eq!(
        urls(&links),
        vec![
            (
                "http://p.test/".to_string(),
                SITEMAP_ENTRY_TAG_PATH.to_string()
            ),
            (
                "http://p.test/open/dcat.ttl".to_string(),
                "[catalog dcat]".to_string()
            ),
            (
                "http://p.test/pod/data.json".to_string(),
                "[catalog data.json]".to_string()
            ),
            (
                "http://p.test/api/3/action/package_search?rows=100&start=0".to_string(),
                "[catalog ckan]".to_string()
            ),
            (
                "http://p.test/catalog.rdf".to_string(),
                SITEMAP_TAG_PATH.to_string()
            ),
        ]
    );
}

#[test]
fn sources_declare_downloads_and_result_pages() {
    use crate::mime::Label;
    assert_eq!(declared_label(CKAN_ENTRY), Some(Label::Target));
    assert_eq!(declared_label(DCAT_DOWNLOAD), Some(Label::Target));
    assert_eq!(declared_label(DATA_JSON_ACCESS), Some(Label::Target));
    assert_eq!(declared_label(schema_org::CONTENT_URL), Some(Label::Target));
    assert_eq!(
        declared_label("[form] html body form.pick"),
        Some(Label::Html)
    );
    // A catalog to read is read as one already; page links, sitemap
    // entries and a form result page's links declare nothing.
    for kind in CatalogKind::ALL {
        assert_eq!(declared_label(kind.tag_path()), None);
    }
    assert_eq!(declared_label("html body a"), None);
    assert_eq!(declared_label("[sitemap] urlset url loc"), None);
    assert_eq!(declared_label("[form result] html body a"), None);
}

#[test]
fn links_of_a_form_result_page_are_found_by_the_form() {
    let form = "[form] html body form.pick";
    let result = url("http://s.test/tables?year=2016&region=r1");
    let file = url("http://s.test/files/t-2016-r1.csv");
    let got = form_result_tag_path(form, &result, "html body a", &file).expect("inherits");
    assert_eq!(got.as_str(), "[form result] html body a");
    assert_eq!(found_by(got.as_str()), "form");
    // The result list's next page (same path) inherits, and its links too.
    let next = url("http://s.test/tables?year=2016&region=r1&page=2");
    let page2 = form_result_tag_path(got.as_str(), &result, "html body nav a", &next)
        .expect("next page inherits");
    assert_eq!(page2.as_str(), "[form result] html body nav a");
    let second = form_result_tag_path(
        page2.as_str(),
        &next,
        "html body a",
        &url("http://s.test/tables?year=2016&region=r1&page=3"),
    );
    assert!(second.is_some());
    // A result page's other links are page links again: one hop.
    assert_eq!(
        form_result_tag_path(
            got.as_str(),
            &result,
            "html body a",
            &url("http://s.test/about")
        ),
        None
    );
    assert_eq!(
        form_result_tag_path(
            got.as_str(),
            &result,
            "html body a",
            &url("http://other.test/tables")
        ),
        None
    );
    // A page that no form led to passes nothing on.
    assert_eq!(
        form_result_tag_path("html body ul li a", &result, "html body a", &file),
        None
    );
    // A link that names its own source keeps it.
    assert_eq!(
        form_result_tag_path(form, &result, "[catalog dcat]", &file),
        None
    );
    assert_eq!(
        form_result_tag_path(form, &result, "[form] html body form", &file),
        None
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the bytes, every kind returns at most the cap of links,
    /// all http(s), and never panics.
    #[test]
    fn any_body_gives_bounded_http_links(body in proptest::collection::vec(any::<u8>(), 0..2048), cap in 1usize..20) {
        let limits = ExtractLimits { max_links: cap, ..ExtractLimits::default() };
        let base = url("http://p.test/api/3/action/package_search?rows=10&start=0");
        for kind in CatalogKind::ALL {
            let links = catalog_links(kind, &body, &base, "", &limits);
            prop_assert!(links.links.len() <= cap);
            for l in &links.links {
                prop_assert!(matches!(l.url.scheme(), "http" | "https"));
            }
        }
    }

    /// Paging only moves forward, and within the page cap.
    #[test]
    fn ckan_paging_moves_forward(start in 0u64..1_000_000, rows in 1u64..2000, count in 0u64..10_000_000) {
        let u = url(&format!("http://p.test/s?rows={rows}&start={start}"));
        if let Some(next) = ckan_next_page(&u, count) {
            let s: u64 = next.query_pairs().find(|(k, _)| k == "start").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
            prop_assert!(s > start && s < count);
            prop_assert!(s / rows < MAX_CKAN_PAGES);
        }
    }

    /// JSON catalogs of any shape built from the schema's keys never panic
    /// and give at most one link per URL string in them.
    #[test]
    fn ckan_shapes(n in 0usize..50, junk in 0usize..5) {
        let mut body = String::from(r#"{"result":{"count":5,"results":["#);
        for i in 0..n {
            if i > 0 { body.push(','); }
            match (i + junk) % 4 {
                0 => body.push_str(&format!(r#"{{"resources":[{{"url":"/f{i}.csv"}}]}}"#)),
                1 => body.push_str(r#"{"resources":null}"#),
                2 => body.push_str(r#"[1,2,{"url":"/x"}]"#),
                _ => body.push_str(r#"{"resources":[{"url":{"nested":[1]}}]}"#),
            }
        }
        body.push_str("]}}");
        let base = url("http://p.test/api/3/action/package_search?rows=10&start=0");
        let links = catalog_links(CatalogKind::Ckan, body.as_bytes(), &base, "", &ExtractLimits::default());
        let files = links.links.iter().filter(|l| l.tag_path.as_str() == CKAN_ENTRY).count();
        prop_assert_eq!(files, (0..n).filter(|i| (i + junk) % 4 == 0).count());
    }
}
