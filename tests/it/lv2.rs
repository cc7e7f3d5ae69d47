//! Real linked data: the Turtle of Debian's `lv2-dev` and `lv2-examples`
//! packages (LV2 plug-in specifications and examples, 97 files linking each
//! other by URI), served at http://lv2plug.in/ on loopback (`--resolve`) and
//! crawled from every bundle's `manifest.ttl`, as LV2 hosts discover them.
//! The crawl must harvest every reachable file, and `data.nq.gz` must hold
//! exactly each file's triples: the counts rdflib reads, committed with the
//! files' SHA-256 in `tests/data/lv2-golden.tsv` (`scripts/lv2-golden.py`).
//!
//! The packages are not in the repository: set `FORAGER_LV2_ROOT` to their
//! extracted `usr/lib/lv2` (`.ci/run` downloads them with apt and sets it,
//! with `FORAGER_REQUIRE_LV2=1` so that a missing folder fails CI). Without
//! them the test is compiled ignored (`have_lv2`, see `build.rs`).

use crate::harness::{Crawl, JobFile};
use forager::output::nquads;
use forager_bench::sites::directory::DirectorySite;
use forager_bench::sites::server::SiteServer;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

const HOST: &str = "lv2plug.in";

struct Golden {
    sha256: String,
    triples: usize,
    reachable: bool,
}

fn golden() -> BTreeMap<String, Golden> {
    let text = include_str!("../data/lv2-golden.tsv");
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "bad golden line {l:?}");
            let g = Golden {
                sha256: f[1].to_string(),
                triples: f[2].parse().expect("a count"),
                reachable: f[3] == "1",
            };
            (format!("http://{HOST}/{}", f[0]), g)
        })
        .collect()
}

/// The data's folder. The test is compiled only where `build.rs` found it or
/// `FORAGER_REQUIRE_LV2` demands it: a missing folder here is a failure.
fn lv2_root() -> PathBuf {
    match std::env::var_os("FORAGER_LV2_ROOT").map(PathBuf::from) {
        Some(root) if root.join("core.lv2/manifest.ttl").is_file() => root,
        other => panic!(
            "FORAGER_LV2_ROOT ({other:?}) is not an extracted usr/lib/lv2 of lv2-dev + \
             lv2-examples (see the module docs)"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_lv2),
    ignore = "needs lv2-dev + lv2-examples 1.18.4-2 extracted, named by FORAGER_LV2_ROOT (see .ci/run)"
)]
async fn a_crawl_of_the_lv2_specifications_holds_exactly_their_triples() {
    let root = lv2_root();
    let golden = golden();
    for (url, g) in &golden {
        let path = root.join(url.trim_start_matches(&format!("http://{HOST}/")));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let sha = forager_sha256(&bytes);
        assert_eq!(
            sha, g.sha256,
            "{url}: not the file the golden data was made from (another lv2 version? \
             regenerate tests/data/lv2-golden.tsv with scripts/lv2-golden.py)"
        );
    }
    let site = DirectorySite::new(&root).expect("serve the lv2 folder");
    let server = SiteServer::start(vec![(HOST.to_string(), Arc::new(site) as _)])
        .await
        .expect("start the server");
    let dir = tempfile::tempdir().unwrap();
    let mut job = JobFile::new("lv2")
        .scope("host")
        .strategy("bfs")
        .delay("1ms")
        .no_early_stop()
        .set("targets", "preset", "\"linked-data\"");
    for url in golden.keys().filter(|u| u.ends_with("/manifest.ttl")) {
        job = job.seed(url.clone());
    }
    let job = job.write(dir.path());
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

    // Every reachable file harvested once, with rdflib's triple count.
    let manifest = std::fs::read_to_string(state.join("targets/lv2/manifest.jsonl")).unwrap();
    let mut rows: BTreeMap<String, u64> = BTreeMap::new();
    for line in manifest.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let url = row["final_url"].as_str().unwrap().to_string();
        assert_eq!(row["rdf"]["errors"], 0, "{row}");
        let statements = row["rdf"]["statements"].as_u64().unwrap();
        assert!(
            rows.insert(url, statements).is_none(),
            "harvested twice: {row}"
        );
    }
    let want: BTreeMap<String, u64> = golden
        .iter()
        .filter(|(_, g)| g.reachable)
        .map(|(u, g)| (u.clone(), g.triples as u64))
        .collect();
    assert_eq!(rows, want);

    // data.nq.gz: each file's triples under its graph, each once.
    let mut per_graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in nquads::read_statements(&state.join("targets/lv2")).expect("read data.nq.gz") {
        let body = line.strip_suffix(" .").expect("a statement");
        let (triple, graph) = body.rsplit_once(' ').expect("a graph");
        let graph = graph
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_string();
        per_graph.entry(graph).or_default().push(triple.to_string());
    }
    for (graph, triples) in &per_graph {
        let distinct: std::collections::BTreeSet<&String> = triples.iter().collect();
        assert_eq!(
            distinct.len(),
            triples.len(),
            "{graph}: a triple written twice"
        );
    }
    let counts: BTreeMap<String, u64> = per_graph
        .into_iter()
        .map(|(g, t)| (g, t.len() as u64))
        .collect();
    assert_eq!(counts, want);
    let _ = server.shutdown().await;
}

fn forager_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
