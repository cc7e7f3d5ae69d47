//! The RDF every linked-data web serves, whatever its shape: the
//! vocabulary, one statement's type, and the serialisers (Turtle, RDF/XML,
//! JSON-LD, N-Triples) with the content negotiation that picks one. It knows
//! nothing of hosts or URI patterns ([`super::web`], [`super::shapes`]).

use crate::sites::server::{SiteRequest, SiteResponse};
use axum::http::header;

pub(super) const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
pub(super) const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
pub(super) const RDFS_SEE_ALSO: &str = "http://www.w3.org/2000/01/rdf-schema#seeAlso";
pub(super) const OWL_SAME_AS: &str = "http://www.w3.org/2002/07/owl#sameAs";
pub(super) const SKOS_RELATED: &str = "http://www.w3.org/2004/02/skos/core#related";
pub(super) const EX_NEXT: &str = "http://vocab.lod.test/next";
pub(super) const EX_THING: &str = "http://vocab.lod.test/Thing";
pub(super) const EX_DATASET: &str = "http://vocab.lod.test/dataset";
pub(super) const FOAF_HOMEPAGE: &str = "http://xmlns.com/foaf/0.1/homepage";
pub(super) const FOAF_PAGE: &str = "http://xmlns.com/foaf/0.1/page";
pub(super) const FOAF_DEPICTION: &str = "http://xmlns.com/foaf/0.1/depiction";
pub(super) const EX_COMMENT: &str = "http://vocab.lod.test/comment";
pub(super) const EX_MODIFIED: &str = "http://vocab.lod.test/modified";

/// One statement: subject, predicate, object.
pub(super) type Statement = (String, &'static str, Object);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Syntax {
    Turtle,
    RdfXml,
    JsonLd,
}

/// An object of a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Object {
    Iri(String),
    Literal(String),
}

/// The IRIs a crawler follows from a description: objects, not types.
pub(super) fn rdf_links(description: Vec<Statement>) -> Vec<String> {
    description
        .into_iter()
        .filter(|(_, p, _)| *p != RDF_TYPE)
        .filter_map(|(_, _, o)| match o {
            Object::Iri(o) => Some(o),
            Object::Literal(_) => None,
        })
        .collect()
}

/// Whether a request's `Accept` asks for an RDF syntax.
pub(super) fn wants_rdf(req: &SiteRequest) -> bool {
    req.headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            [
                "text/turtle",
                "application/rdf+xml",
                "application/ld+json",
                "application/n-triples",
            ]
            .iter()
            .any(|t| v.contains(t))
        })
}

/// A description in `syntax`, with its type.
pub(super) fn render(syntax: Syntax, statements: &[Statement]) -> SiteResponse {
    match syntax {
        Syntax::Turtle => SiteResponse::ok("text/turtle; charset=utf-8", turtle(statements)),
        Syntax::RdfXml => SiteResponse::ok("application/rdf+xml", rdf_xml(statements)),
        Syntax::JsonLd => SiteResponse::ok("application/ld+json", json_ld(statements)),
    }
}

pub(super) fn n_triples(statements: &[(String, &'static str, Object)]) -> String {
    let mut out = String::from("# a dump served as text/plain\n");
    for (s, p, o) in statements {
        match o {
            Object::Iri(o) => out.push_str(&format!("<{s}> <{p}> <{o}> .\n")),
            Object::Literal(l) => out.push_str(&format!("<{s}> <{p}> \"{l}\" .\n")),
        }
    }
    out
}

fn turtle(statements: &[(String, &'static str, Object)]) -> String {
    let mut out = String::from(
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n\n",
    );
    for (s, p, o) in statements {
        let p = match *p {
            OWL_SAME_AS => "owl:sameAs".to_string(),
            RDF_TYPE => "a".to_string(),
            p if p.starts_with("http://xmlns.com/foaf/0.1/") => {
                format!("foaf:{}", &p["http://xmlns.com/foaf/0.1/".len()..])
            }
            p => format!("<{p}>"),
        };
        match o {
            Object::Iri(o) => out.push_str(&format!("<{s}> {p} <{o}> .\n")),
            Object::Literal(l) => out.push_str(&format!("<{s}> {p} \"{l}\" .\n")),
        }
    }
    out
}

fn rdf_xml(statements: &[(String, &'static str, Object)]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n",
    );
    for (s, p, o) in statements {
        // Split the predicate into a namespace and a local name.
        let cut = p.rfind(['#', '/']).map_or(0, |c| c + 1);
        let (ns, local) = p.split_at(cut);
        out.push_str(&format!("  <rdf:Description rdf:about=\"{s}\">"));
        match o {
            Object::Iri(o) => out.push_str(&format!(
                "<n:{local} xmlns:n=\"{ns}\" rdf:resource=\"{o}\"/>"
            )),
            Object::Literal(l) => {
                out.push_str(&format!("<n:{local} xmlns:n=\"{ns}\">{l}</n:{local}>"))
            }
        }
        out.push_str("</rdf:Description>\n");
    }
    out.push_str("</rdf:RDF>\n");
    out
}

fn json_ld(statements: &[(String, &'static str, Object)]) -> String {
    let nodes: Vec<serde_json::Value> = statements
        .iter()
        .map(|(s, p, o)| {
            let value = match (p, o) {
                (&RDF_TYPE, Object::Iri(o)) => return serde_json::json!({"@id": s, "@type": o}),
                (_, Object::Iri(o)) => serde_json::json!({"@id": o}),
                (_, Object::Literal(l)) => serde_json::json!({"@value": l}),
            };
            let mut node = serde_json::Map::new();
            node.insert("@id".into(), serde_json::Value::String(s.clone()));
            node.insert((*p).to_string(), serde_json::Value::Array(vec![value]));
            serde_json::Value::Object(node)
        })
        .collect();
    serde_json::Value::Array(nodes).to_string()
}
