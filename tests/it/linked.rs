//! Linked-data jobs through the real binary, on a loopback web of RDF hosts
//! (`sites::linked`): content negotiation and 303s, every syntax, N-Triples
//! under `text/plain`, the statements written exactly once — across kills —
//! and the `ldcoc` strategy fetching a larger share of RDF than `bfs`.

use crate::harness::bin;
use crate::harness::{manifest_by_final_url, Crawl, JobFile};
use forager::output::nquads;
use forager_bench::sites::linked::LinkedWeb;
use forager_bench::sites::server::{RequestRecord, SiteServer};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn job(name: &str, web: &LinkedWeb, strategy: &str) -> JobFile {
    let mut job = JobFile::new(name)
        .scope("any")
        .strategy(strategy)
        .delay("20ms")
        .no_early_stop()
        .set("targets", "preset", "\"linked-data\"")
        .set("politeness", "max_in_flight", 8);
    for s in web.seeds() {
        job = job.seed(s);
    }
    job
}

/// Statement → how many times the job's data files hold it, graph removed;
/// also checks that each statement's graph is the document it came from.
fn statements(state: &Path, job: &str) -> BTreeMap<String, usize> {
    let dir = state.join("targets").join(job);
    let mut out = BTreeMap::new();
    for line in nquads::read_statements(&dir).expect("read data.nq.gz") {
        let body = line.strip_suffix(" .").expect("a statement ends in ' .'");
        let (triple, graph) = body.rsplit_once(' ').expect("a graph");
        assert!(graph.starts_with("<http://"), "{line}");
        *out.entry(format!("{triple} .")).or_insert(0) += 1;
    }
    out
}

/// What a complete harvest holds: every statement of every RDF document reachable.
fn expected_statements(web: &LinkedWeb) -> BTreeSet<String> {
    web.walk()
        .rdf
        .iter()
        .flat_map(|uri| web.statements(uri).expect("an RDF URI"))
        .collect()
}

/// URIs the crawler dereferenced (a 303's second hop is the same URI's).
fn dereferenced(log: &[RequestRecord]) -> usize {
    log.iter()
        .filter(|r| r.method == "GET")
        .filter(|r| r.path_and_query != "/robots.txt" && !r.path_and_query.starts_with("/data/"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linked_data_crawl_writes_every_statement_once() {
    let web = LinkedWeb::new(15, 6, 1);
    let server = crate::harness::sites::serve(web.sites()).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job("lod", &web, "bfs").write(dir.path());
    let state = dir.path().join("state");
    let out = Crawl::loopback(&job, &state)
        .resolve_all((0..web.hosts).map(|i| web.host_name(i)), server.port())
        .output()
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let truth = web.walk();
    let got = statements(&state, "lod");
    assert!(got.values().all(|&n| n == 1), "a statement written twice");
    let got: BTreeSet<String> = got.into_keys().collect();
    assert_eq!(got, expected_statements(&web));

    // One manifest row per RDF document, its statements counted.
    let manifest = std::fs::read_to_string(state.join("targets/lod/manifest.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = manifest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), truth.rdf.len());
    let mut syntaxes = BTreeSet::new();
    for row in &rows {
        // 15 statements, fewer when two links drawn at random coincide (a graph is a set).
        let url = row["url"].as_str().expect("a url");
        let distinct: BTreeSet<String> = web
            .statements(url)
            .expect("an RDF URI")
            .into_iter()
            .collect();
        assert_eq!(row["rdf"]["statements"], distinct.len(), "{row}");
        assert_eq!(row["rdf"]["errors"], 0, "{row}");
        syntaxes.insert(row["rdf"]["syntax"].as_str().unwrap().to_string());
    }
    // Turtle, RDF/XML and JSON-LD by negotiation; N-Triples sniffed under text/plain.
    assert_eq!(
        syntaxes,
        ["json-ld", "n-quads", "rdf-xml", "turtle"]
            .map(String::from)
            .into()
    );
    // 303 See Other as linked data prescribes: the row is the thing's URI,
    // the document it was sent to is the final URL and names the graph.
    for row in &rows {
        let (url, fin) = (
            row["url"].as_str().unwrap(),
            row["final_url"].as_str().unwrap(),
        );
        if let Some(j) = url.split("/resource/").nth(1) {
            assert_eq!(fin, url.replace("/resource/", "/data/"), "{row}");
            assert!(fin.ends_with(&format!("/data/{j}")));
        } else {
            assert_eq!(fin, url, "only things are redirected: {row}");
        }
    }
    // Things were negotiated to their data (an HTML Accept gets /about/).
    let log = server.log();
    assert!(log.iter().any(|r| r.path_and_query.starts_with("/data/")));
    assert!(!log.iter().any(|r| r.path_and_query.starts_with("/about/")));
    // Pictures and PDFs are not targets of a linked-data job, and not read.
    assert!(rows
        .iter()
        .all(|r| !r["final_url"].as_str().unwrap().ends_with(".pdf")));
    let _ = server.shutdown().await;
}

/// Kills at any moment leave no statement twice and lose none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_mid_crawl_leave_every_statement_once() {
    let web = LinkedWeb::new(15, 6, 2);
    let server = crate::harness::sites::serve(web.sites()).await;
    let dir = tempfile::tempdir().unwrap();
    let job = job("lod-kill", &web, "ldcoc")
        .set("targets", "preset", "\"linked-data\"")
        .write(dir.path());
    let state = dir.path().join("state");
    let run = Crawl::loopback(&job, &state)
        .resolve_all((0..web.hosts).map(|i| web.host_name(i)), server.port())
        .checkpoint_interval("150ms");
    for round in 0..5u64 {
        // Kill once the server has answered a few more requests each round.
        let before = server.log().len();
        let mut child = bin::spawn(&mut run.command());
        let requests = before + 5 + 5 * round as usize;
        bin::until(&mut child, || server.log().len() >= requests).await;
        bin::stop(&mut child, libc::SIGKILL).await;
    }
    let out = run.output().await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = statements(&state, "lod-kill");
    let twice: Vec<&String> = got.iter().filter(|(_, &n)| n > 1).map(|(s, _)| s).collect();
    assert!(twice.is_empty(), "written twice: {twice:?}");
    // Every document harvested (manifest rows, no duplicate) has all its statements.
    let harvested = manifest_by_final_url(&state.join("targets/lod-kill"));
    let mut want = BTreeSet::new();
    for url in harvested.keys() {
        let lines = web
            .statements(url)
            .unwrap_or_else(|| panic!("{url} is not RDF"));
        want.extend(lines);
    }
    let got: BTreeSet<String> = got.into_keys().collect();
    // A `/data/j` row holds the statements of `/resource/j`.
    assert_eq!(got, want);
    // What ldcoc learned, from the last checkpoint: its accuracy, its
    // strongest features by name and the PLDs that gave the most RDF.
    let explain = crate::harness::bin::output_blocking(
        crate::harness::bin::std_command()
            .args(["explain", "lod-kill", "--state-dir"])
            .arg(&state),
    );
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(
        explain.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&explain.stderr)
    );
    assert!(text.contains("online accuracy over"), "{text}");
    assert!(text.contains("strongest features (weight"), "{text}");
    assert!(
        text.contains("pay-level domains; those that gave the most RDF first"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.trim_end().ends_with("lod000.test")),
        "{text}"
    );
    let _ = server.shutdown().await;
}

/// ldcoc learns which URIs are RDF: at the same budget, a larger share of
/// what it dereferences is RDF than bfs's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ldcoc_fetches_a_larger_share_of_rdf_than_bfs() {
    let web = LinkedWeb::new(40, 25, 5);
    let truth = web.walk();
    let budget = truth.uris.len() / 4;
    let server = crate::harness::sites::serve(web.sites()).await;
    let mut share = BTreeMap::new();
    for strategy in ["bfs", "ldcoc"] {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("lod-{strategy}");
        let job = job(&name, &web, strategy)
            .set("budget", "requests", budget)
            .set("politeness", "max_in_flight", 1)
            .delay("1ms")
            .write(dir.path());
        let state = dir.path().join("state");
        server.clear_log();
        let out = Crawl::loopback(&job, &state)
            .resolve_all((0..web.hosts).map(|i| web.host_name(i)), server.port())
            .output()
            .await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rdf = manifest_by_final_url(&state.join("targets").join(&name)).len();
        let mut kinds = BTreeMap::new();
        for r in server.log() {
            let k = r.path_and_query.split('/').nth(1).unwrap_or("").to_string();
            *kinds.entry(k).or_insert(0) += 1;
        }
        eprintln!("{strategy}: {kinds:?}");
        share.insert(
            strategy,
            rdf as f64 / dereferenced(&server.log()).max(1) as f64,
        );
    }
    eprintln!("RDF share at a budget of {budget} requests: {share:?}");
    assert!(share["ldcoc"] > share["bfs"] * 1.3, "{share:?}");
    let _ = server.shutdown().await;
}

/// ldcoc as a user runs it — the default job of scope any: 64 requests in
/// flight, politeness per pay-level domain, no delay — declines what its
/// model ranks poorly but loses nothing: on a web of this module's shape and
/// on a conneg-only one (`sites::linked::shapes`), the crawl ends with every
/// RDF document reachable harvested, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ldcoc_at_the_default_config_harvests_every_rdf_document() {
    use forager_bench::sites::linked::Shape;
    for web in [
        LinkedWeb::new(20, 8, 3),
        LinkedWeb::with_shape(Shape::Conneg, 10, 12, 4),
    ] {
        let truth = web.walk();
        let server = crate::harness::sites::serve(web.sites()).await;
        let dir = tempfile::tempdir().unwrap();
        let name = format!("ldcoc-{}", web.shape.name());
        let mut job = JobFile::new(&name)
            .scope("any")
            .strategy("ldcoc")
            .delay("0s")
            .no_early_stop()
            .set("targets", "preset", "\"linked-data\"");
        for s in web.seeds() {
            job = job.seed(s);
        }
        let job = job.write(dir.path());
        let state = dir.path().join("state");
        let out = Crawl::loopback(&job, &state)
            .resolve_all((0..web.hosts).map(|i| web.host_name(i)), server.port())
            .output()
            .await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let manifest =
            std::fs::read_to_string(state.join("targets").join(&name).join("manifest.jsonl"))
                .unwrap();
        let mut harvested = BTreeSet::new();
        for line in manifest.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let url = row["url"].as_str().unwrap().to_string();
            assert!(harvested.insert(url), "a document saved twice: {line}");
        }
        assert_eq!(
            harvested,
            truth.rdf,
            "{}: coverage {} of {}",
            web.shape.name(),
            harvested.len(),
            truth.rdf.len()
        );
        let _ = server.shutdown().await;
    }
}

/// A linked-data job reads RDFa from HTML through the structured-data
/// extractor: a page with one RDFa statement is a target (a linked-data
/// response is relevant when it yields a triple), its statement goes to
/// `data.nq.gz` in the page's graph, and a page without any is not saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdfa_pages_are_linked_data_too() {
    use forager_bench::sites::server::{Site, SiteRequest, SiteResponse};
    use std::sync::Arc;

    const HOST: &str = "people.test";
    struct People;
    impl Site for People {
        fn respond(&self, req: &SiteRequest) -> SiteResponse {
            match req.path_and_query().as_str() {
                "/" => SiteResponse::ok(
                    "text/turtle",
                    "<http://people.test/ann> <http://xmlns.com/foaf/0.1/knows> <http://people.test/bob> .\n",
                ),
                "/ann" => SiteResponse::html(
                    r#"<html><body><div vocab="http://xmlns.com/foaf/0.1/" resource="http://people.test/ann#me" typeof="Person"><a href="/">home</a></div></body></html>"#,
                ),
                "/bob" => SiteResponse::html("<html><body>no data here</body></html>"),
                _ => SiteResponse::not_found(),
            }
        }
    }
    let sites: Vec<(String, Arc<dyn Site>)> = vec![(HOST.to_string(), Arc::new(People))];
    let server = SiteServer::start(sites).await.expect("start the site");
    let dir = tempfile::tempdir().unwrap();
    let job = JobFile::new("people")
        .seed(format!("http://{HOST}/"))
        .scope("any")
        .strategy("bfs")
        .delay("10ms")
        .no_early_stop()
        .set("targets", "preset", "\"linked-data\"")
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
    let targets = state.join("targets/people");
    let saved: BTreeSet<String> = manifest_by_final_url(&targets).into_keys().collect();
    let want: BTreeSet<String> = ["/", "/ann"]
        .iter()
        .map(|p| format!("http://{HOST}{p}"))
        .collect();
    assert_eq!(saved, want);
    let got: BTreeSet<String> = nquads::read_statements(&targets)
        .expect("read data.nq.gz")
        .into_iter()
        .collect();
    let want: BTreeSet<String> = [
        "<http://people.test/ann> <http://xmlns.com/foaf/0.1/knows> <http://people.test/bob> <http://people.test/> .",
        "<http://people.test/ann> <http://www.w3.org/ns/rdfa#usesVocabulary> <http://xmlns.com/foaf/0.1/> <http://people.test/ann> .",
        "<http://people.test/ann#me> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://xmlns.com/foaf/0.1/Person> <http://people.test/ann> .",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(got, want);
    let _ = server.shutdown().await;
}
