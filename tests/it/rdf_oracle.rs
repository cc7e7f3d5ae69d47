//! The RDF parsers against an independent one: on the W3C Turtle, N-Triples,
//! N-Quads and RDF/XML test suites (positive syntax and evaluation tests, as
//! shipped in rdflib 7.6.0's source distribution, W3C test suite licence;
//! `tests/data/w3c/`), forager reads as many distinct triples from every file
//! as rdflib does. The golden counts are rdflib's, written by
//! `scripts/rdf-oracle.py` (its docstring says how to regenerate them).

use forager_core::rdf::{parse_document, Follow, RdfLimits, RdfSyntax};
use std::path::Path;
use url::Url;

const BASE: &str = "http://example.test/w3c/";

#[test]
fn triple_counts_equal_rdflibs_on_the_w3c_suites() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/w3c");
    let golden =
        std::fs::read_to_string(root.join("golden.tsv")).expect("tests/data/w3c/golden.tsv");
    let (mut compared, mut per_suite) = (0, std::collections::BTreeMap::new());
    let mut wrong = Vec::new();
    for line in golden.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [suite, name, count] = fields[..] else {
            panic!("bad golden line {line:?}")
        };
        if count == "rejected" {
            continue;
        }
        let want: u64 = count.parse().expect("a count");
        let syntax = match suite {
            "turtle" => RdfSyntax::Turtle,
            "ntriples" => RdfSyntax::NTriples,
            "nquads" => RdfSyntax::NQuads,
            "rdf-xml" => RdfSyntax::RdfXml,
            other => panic!("unknown suite {other}"),
        };
        let body = std::fs::read(root.join(suite).join(name)).expect("a suite file");
        let base = Url::parse(&format!("{BASE}{suite}/{name}")).unwrap();
        let limits = RdfLimits::default();
        let doc = parse_document(&body, &base, syntax, Follow::default(), limits);
        if doc.statements != want || doc.errors > 0 {
            wrong.push(format!(
                "{suite}/{name}: forager {} ({} errors: {:?}), rdflib {want}",
                doc.statements, doc.errors, doc.first_error
            ));
        }
        compared += 1;
        *per_suite.entry(suite).or_insert(0) += 1;
    }
    eprintln!("compared {compared} files: {per_suite:?}");
    assert!(compared > 400, "only {compared} files compared");
    assert!(
        wrong.is_empty(),
        "{} files differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
