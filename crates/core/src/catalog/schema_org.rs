//! schema.org `Dataset` / `DataDownload` markup as a catalog: the download
//! links a page's structured data names (the markup dataset search engines
//! index), read from the statements the extraction pass already produced
//! (`extract::structured`: JSON-LD, microdata, RDFa alike).
//!
//! What counts as a download: the `contentUrl` of a node that is a
//! `DataDownload` or the object of some `distribution`, and a
//! `distribution` whose object is an IRI with no `contentUrl` of its own
//! (then the IRI is the file, as DCAT's `dcat:distribution` is read). A
//! `contentUrl` of anything else (an `ImageObject`, a `VideoObject`) is not
//! a dataset's file and is left to the page's links. The node's
//! `encodingFormat` (a MIME type or a name such as `CSV`) becomes the link's
//! anchor text, so the lead model and the classifier see the format the
//! page declares before the file is fetched.
//!
//! Bounded: linear in the page's statements, which the structured-data
//! collector already caps per page.

use oxrdf::{NamedOrBlankNode, Term, Triple};
use std::collections::{HashMap, HashSet};

/// Tag path of a `contentUrl` of a dataset's download.
pub const CONTENT_URL: &str = "[catalog schema.org] contentUrl";
/// Tag path of a `distribution` that is itself the file's IRI.
pub const DISTRIBUTION: &str = "[catalog schema.org] distribution";

/// Characters of an `encodingFormat` kept as anchor text.
const MAX_FORMAT_CHARS: usize = 100;

/// One download a page's markup names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetDownload {
    /// As written (an IRI, or a literal to resolve against the page).
    pub raw: String,
    /// [`CONTENT_URL`] or [`DISTRIBUTION`].
    pub tag_path: &'static str,
    /// The node's `encodingFormat`, if it has one.
    pub format: Option<String>,
}

/// The schema.org local name of `iri`, under either of the scheme's
/// namespaces pages use.
fn schema_local(iri: &str) -> Option<&str> {
    iri.strip_prefix("http://schema.org/")
        .or_else(|| iri.strip_prefix("https://schema.org/"))
}

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// A subject as a term, to compare it with an object.
fn subject_term(s: &NamedOrBlankNode) -> Term {
    match s {
        NamedOrBlankNode::NamedNode(n) => Term::NamedNode(n.clone()),
        NamedOrBlankNode::BlankNode(b) => Term::BlankNode(b.clone()),
    }
}

/// A term's text when it is an IRI or a plain string (a JSON-LD page under
/// schema.org's `@vocab` gives `contentUrl` as a string literal).
fn as_link(t: &Term) -> Option<&str> {
    match t {
        Term::NamedNode(n) => Some(n.as_str()),
        Term::Literal(l) => Some(l.value()),
        _ => None,
    }
}

/// The downloads of a page's statements, in statement order, each URL once.
pub fn dataset_downloads(triples: &[Triple]) -> Vec<DatasetDownload> {
    // Nodes that are downloads: typed `DataDownload`, or some `distribution`.
    let mut downloads: HashSet<Term> = HashSet::new();
    let mut formats: HashMap<Term, String> = HashMap::new();
    let mut has_content_url: HashSet<Term> = HashSet::new();
    for t in triples {
        let p = t.predicate.as_str();
        if p == RDF_TYPE {
            if let Term::NamedNode(ty) = &t.object {
                if schema_local(ty.as_str()) == Some("DataDownload") {
                    downloads.insert(subject_term(&t.subject));
                }
            }
            continue;
        }
        match schema_local(p) {
            Some("distribution") => {
                downloads.insert(t.object.clone());
            }
            Some("encodingFormat") => {
                if let Term::Literal(l) = &t.object {
                    let f: String = l.value().trim().chars().take(MAX_FORMAT_CHARS).collect();
                    if !f.is_empty() {
                        formats.entry(subject_term(&t.subject)).or_insert(f);
                    }
                }
            }
            Some("contentUrl") => {
                has_content_url.insert(subject_term(&t.subject));
            }
            _ => {}
        }
    }
    if downloads.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for t in triples {
        let (raw, node, tag_path) = match schema_local(t.predicate.as_str()) {
            Some("contentUrl") => {
                let node = subject_term(&t.subject);
                if !downloads.contains(&node) {
                    continue;
                }
                (as_link(&t.object), node, CONTENT_URL)
            }
            Some("distribution") => match &t.object {
                Term::NamedNode(n) if !has_content_url.contains(&t.object) => {
                    (Some(n.as_str()), t.object.clone(), DISTRIBUTION)
                }
                _ => continue,
            },
            _ => continue,
        };
        let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
            continue;
        };
        if !seen.insert(raw) {
            continue;
        }
        out.push(DatasetDownload {
            raw: raw.to_string(),
            tag_path,
            format: formats.get(&node).cloned(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::{BlankNode, Literal, NamedNode};

    fn iri(s: &str) -> NamedNode {
        NamedNode::new(s).expect("a test IRI")
    }

    fn t(s: impl Into<NamedOrBlankNode>, p: &str, o: impl Into<Term>) -> Triple {
        Triple::new(s, iri(p), o)
    }

    const S: &str = "http://schema.org/";

    #[test]
    fn data_downloads_and_distributions() {
        let ds = iri("http://p.test/ds/1");
        let a = BlankNode::new("a").expect("id");
        let b = BlankNode::new("b").expect("id");
        let img = BlankNode::new("img").expect("id");
        let triples = vec![
            t(ds.clone(), RDF_TYPE, iri(&format!("{S}Dataset"))),
            t(ds.clone(), &format!("{S}distribution"), a.clone()),
            t(
                a.clone(),
                &format!("{S}contentUrl"),
                Literal::new_simple_literal("/f/a.csv"),
            ),
            t(
                a.clone(),
                &format!("{S}encodingFormat"),
                Literal::new_simple_literal("text/csv"),
            ),
            // Typed but not a distribution of anything: still a download.
            t(b.clone(), RDF_TYPE, iri("https://schema.org/DataDownload")),
            t(
                b.clone(),
                "https://schema.org/contentUrl",
                iri("http://p.test/f/b.xlsx"),
            ),
            // An image's contentUrl is not a dataset's file.
            t(img.clone(), RDF_TYPE, iri(&format!("{S}ImageObject"))),
            t(
                img,
                &format!("{S}contentUrl"),
                iri("http://p.test/logo.png"),
            ),
            // A distribution that is the file's IRI.
            t(
                ds.clone(),
                &format!("{S}distribution"),
                iri("http://p.test/f/c.json"),
            ),
            // Repeated: once.
            t(
                ds,
                &format!("{S}distribution"),
                iri("http://p.test/f/c.json"),
            ),
        ];
        let got = dataset_downloads(&triples);
        assert_eq!(
            got,
            vec![
                DatasetDownload {
                    raw: "/f/a.csv".into(),
                    tag_path: CONTENT_URL,
                    format: Some("text/csv".into())
                },
                DatasetDownload {
                    raw: "http://p.test/f/b.xlsx".into(),
                    tag_path: CONTENT_URL,
                    format: None
                },
                DatasetDownload {
                    raw: "http://p.test/f/c.json".into(),
                    tag_path: DISTRIBUTION,
                    format: None
                },
            ]
        );
    }

    #[test]
    fn a_page_without_datasets_gives_nothing() {
        let img = BlankNode::new("img").expect("id");
        let triples = vec![
            t(img.clone(), RDF_TYPE, iri(&format!("{S}ImageObject"))),
            t(
                img,
                &format!("{S}contentUrl"),
                iri("http://p.test/logo.png"),
            ),
        ];
        assert!(dataset_downloads(&triples).is_empty());
    }

    #[test]
    fn a_distribution_with_its_own_content_url_is_not_the_file() {
        let ds = iri("http://p.test/ds/1");
        let d = iri("http://p.test/ds/1#csv");
        let triples = vec![
            t(ds, &format!("{S}distribution"), d.clone()),
            t(d, &format!("{S}contentUrl"), iri("http://p.test/f/a.csv")),
        ];
        let got: Vec<_> = dataset_downloads(&triples)
            .into_iter()
            .map(|d| d.raw)
            .collect();
        assert_eq!(got, vec!["http://p.test/f/a.csv".to_string()]);
    }
}
