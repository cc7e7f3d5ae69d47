//! One RDF document parsed: its statements as N-Quads in the document's own
//! graph, and the http(s) IRIs it names, for the frontier.
//!
//! Parsing is strict (IRIs and literals are checked), but a bad statement
//! costs only itself: the parsers resume at the next one, the document keeps
//! its good statements and counts its errors. Work is bounded: at most
//! [`RdfLimits::max_statements`] statements, [`RdfLimits::max_bytes`] bytes
//! of N-Quads and [`RdfLimits::max_errors`] errors per document, after which
//! the rest is not read ([`RdfDocument::cut_reason`] says which). Bytes are
//! counted per statement from its terms *before* its N-Quads line is built,
//! so one statement holding a megabyte IRI costs a megabyte of the budget and
//! a statement over what is left is never written out (issue #36: counts
//! alone let a 523 KB Turtle document with a 64 KiB `@prefix` make 3.9 GB).
//! RDF/XML is refused before parsing when its DTD entities would expand past
//! the same budget ([`super::entities`]). The parsers are streaming and
//! linear in the input; what a document may take beyond its size is the
//! byte budget, and the caller's allowance ([`parse_document_within`]), which
//! the engine charges to the process-wide parse budget.

use super::syntax::RdfSyntax;
use crate::extract::{
    check_limits, normalize, ExtractedLink, PageCut, PageLinks, RejectCounts, UrlRules,
};
use crate::link::TagPath;
use oxrdfio::{RdfParser, RdfSyntaxError};
use std::collections::HashMap;
use std::fmt::Write as _;
use url::Url;

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
/// Predicates remembered per link (the learner's context); the first ones seen.
const PREDICATES_PER_LINK: usize = 3;

/// Which IRIs of a statement become links (`[targets] rdf_follow`). Linked
/// data's default is subjects and objects; the objects of `rdf:type` (classes)
/// and predicates (properties) name vocabulary terms, followed only on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Follow {
    pub subjects: bool,
    pub objects: bool,
    pub predicates: bool,
    pub types: bool,
}

impl Default for Follow {
    fn default() -> Self {
        Follow {
            subjects: true,
            objects: true,
            predicates: false,
            types: false,
        }
    }
}

/// Default of [`RdfLimits::max_bytes`] (`[targets] max_statement_bytes`).
pub use crate::extract::structured::DEFAULT_MAX_STATEMENT_BYTES;

/// Bounds on one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdfLimits {
    pub max_statements: u64,
    pub max_links: usize,
    pub max_errors: u64,
    /// Bytes of N-Quads kept (each statement counted by its serialised size,
    /// graph included); also the most DTD entities may expand an RDF/XML
    /// document by.
    pub max_bytes: u64,
    /// An IRI longer than this is no link (the job's `max_url_len` would
    /// refuse it anyway): not copied into the link list.
    pub max_link_bytes: usize,
}

impl Default for RdfLimits {
    fn default() -> Self {
        RdfLimits {
            max_statements: 1_000_000,
            max_links: 10_000,
            max_errors: 1_000,
            max_bytes: DEFAULT_MAX_STATEMENT_BYTES,
            max_link_bytes: 64 << 10,
        }
    }
}

/// Why a document was not read to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdfCut {
    /// [`RdfLimits::max_statements`].
    Statements,
    /// [`RdfLimits::max_links`].
    Links,
    /// [`RdfLimits::max_errors`].
    Errors,
    /// [`RdfLimits::max_bytes`]: the document's own byte budget.
    Bytes,
    /// RDF/XML whose DTD entities would expand past the byte budget: not parsed at all.
    Entities,
    /// JSON-LD whose expansion could reach past the byte budget (measured
    /// by `extract::structured::jsonld::expansion_bound`): not parsed at all.
    Expansion,
    /// The caller's allowance refused more (the process-wide parse budget was spent).
    Memory,
}

impl RdfCut {
    /// For logs.
    pub fn as_str(self) -> &'static str {
        match self {
            RdfCut::Statements => "statements over the per-document cap",
            RdfCut::Links => "links over max_links_per_page",
            RdfCut::Errors => "too many errors",
            RdfCut::Bytes => "N-Quads bytes over targets.max_statement_bytes",
            RdfCut::Entities => "DTD entities would expand past targets.max_statement_bytes",
            RdfCut::Expansion => "JSON-LD expansion could reach past targets.max_statement_bytes",
            RdfCut::Memory => "the process-wide parse memory budget was spent",
        }
    }

    /// The document itself is over its budget (whoever fetches it again
    /// gets the same answer), not the process short of memory for a while.
    pub fn blew_budget(self) -> bool {
        matches!(self, RdfCut::Bytes | RdfCut::Entities | RdfCut::Expansion)
    }
}

/// A link found in a document, with the predicates that led to it (as the
/// object of a statement; empty when it was only seen as a subject).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdfLink {
    pub url: Url,
    pub predicates: Vec<String>,
}

/// What a document held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RdfDocument {
    /// Statements kept (each one line of `nquads`).
    pub statements: u64,
    /// The statements as N-Quads, graph = the document's URL. Blank nodes
    /// get fresh labels per document, so two documents never share one.
    pub nquads: String,
    /// Distinct http(s) IRIs, fragment removed, in order of first mention;
    /// the document's own URL is not among them.
    pub links: Vec<RdfLink>,
    /// Statements the parser refused.
    pub errors: u64,
    pub first_error: Option<String>,
    /// The document was not read to its end (a limit was reached).
    pub cut: bool,
    /// The first limit that cut it.
    pub cut_reason: Option<RdfCut>,
    /// IRIs over [`RdfLimits::max_link_bytes`], not kept as links.
    pub too_long_links: u64,
}

/// The tag path of a link found in RDF: the syntax of the document that
/// carried it (as a tag path is where in an HTML page a link sat).
pub fn tag_path_of(syntax: RdfSyntax) -> TagPath {
    TagPath::new(format!("rdf:{}", syntax.as_str()))
}

impl RdfDocument {
    /// The document's links as a page's links, normalised and checked by
    /// the job's URL rules: the anchor text of each is the predicates that
    /// led to it (space-separated), its tag path names the syntax.
    pub fn page_links(&self, base: &Url, syntax: RdfSyntax, rules: &UrlRules) -> PageLinks {
        let tag_path = tag_path_of(syntax);
        let mut rejected = RejectCounts::default();
        rejected.too_long += self.too_long_links;
        let mut seen = std::collections::HashSet::new();
        let mut links = Vec::with_capacity(self.links.len());
        for l in &self.links {
            let mut url = l.url.clone();
            normalize(&mut url, rules);
            if let Err(kind) = check_limits(&url, rules) {
                rejected.add(kind);
                continue;
            }
            if seen.insert(url.to_string()) {
                links.push(ExtractedLink {
                    url,
                    tag_path: tag_path.clone(),
                    anchor: l.predicates.join(" "),
                });
            }
        }
        PageLinks {
            links,
            base: base.clone(),
            structured_data: false,
            structured: None,
            cut: match self.cut_reason {
                None => None,
                Some(RdfCut::Links) => Some(PageCut::MaxLinks),
                Some(_) => Some(PageCut::ParserLimit),
            },
            rejected,
        }
    }
}

impl RdfDocument {
    fn cut_by(&mut self, reason: RdfCut) {
        self.cut = true;
        self.cut_reason.get_or_insert(reason);
    }
}

/// Parse `body` (the document at `base`, in `syntax`).
pub fn parse_document(
    body: &[u8],
    base: &Url,
    syntax: RdfSyntax,
    follow: Follow,
    limits: RdfLimits,
) -> RdfDocument {
    parse_document_within(body, base, syntax, follow, limits, &mut |_| true)
}

/// [`parse_document`], asking `allow(bytes)` before each statement is
/// written out; a `false` cuts the document there ([`RdfCut::Memory`]).
pub fn parse_document_within(
    body: &[u8],
    base: &Url,
    syntax: RdfSyntax,
    follow: Follow,
    limits: RdfLimits,
    allow: &mut dyn FnMut(u64) -> bool,
) -> RdfDocument {
    let mut doc = RdfDocument::default();
    if syntax == RdfSyntax::RdfXml {
        if let Err(bomb) = super::entities::check_entities(body, limits.max_bytes) {
            doc.errors = 1;
            doc.first_error = Some(bomb.to_string());
            doc.cut_by(RdfCut::Entities);
            return doc;
        }
    }
    if syntax == RdfSyntax::JsonLd {
        use crate::extract::structured::jsonld::{expansion_bound, EXPANSION_SLACK};
        // Invalid JSON is left to the parser, which reports it statement by statement.
        if let Ok(bound) = expansion_bound(body, base.as_str().len()) {
            if bound > limits.max_bytes.saturating_mul(EXPANSION_SLACK) {
                doc.errors = 1;
                doc.first_error = Some(format!(
                    "JSON-LD refused: expanding it could take {bound} bytes, over {EXPANSION_SLACK} × the byte budget of {}",
                    limits.max_bytes
                ));
                doc.cut_by(RdfCut::Expansion);
                return doc;
            }
        }
    }
    let parser = match RdfParser::from_format(syntax.format()).with_base_iri(base.as_str()) {
        Ok(p) => p,
        // A `Url` always is an IRI; should one ever not be, parse without a base.
        Err(_) => RdfParser::from_format(syntax.format()),
    };
    let parser = parser.rename_blank_nodes();
    let graph = oxrdf::GraphName::NamedNode(oxrdf_named(base));
    let graph_bytes = base.as_str().len() as u64 + 2;
    let mut own = base.clone();
    own.set_fragment(None);
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut written: std::collections::HashSet<(u64, u64)> = std::collections::HashSet::new();
    for item in parser.for_slice(body) {
        let quad = match item {
            Ok(q) => q,
            Err(e) => {
                doc.errors += 1;
                if doc.first_error.is_none() {
                    doc.first_error = Some(describe(&e));
                }
                if doc.errors >= limits.max_errors {
                    doc.cut_by(RdfCut::Errors);
                    break;
                }
                continue;
            }
        };
        if doc.statements >= limits.max_statements {
            doc.cut_by(RdfCut::Statements);
            break;
        }
        let in_doc = oxrdf::Quad::new(quad.subject, quad.predicate, quad.object, graph.clone());
        // A graph is a set: a statement written twice in a document is one.
        if !written.insert(fingerprint(&in_doc)) {
            continue;
        }
        let size = quad_bytes(&in_doc, graph_bytes);
        if (doc.nquads.len() as u64).saturating_add(size) > limits.max_bytes {
            doc.cut_by(RdfCut::Bytes);
            break;
        }
        if !allow(size) {
            doc.cut_by(RdfCut::Memory);
            break;
        }
        doc.statements += 1;
        let predicate = in_doc.predicate.as_str();
        let mut add = |iri: &str, via: Option<&str>| {
            if iri.len() > limits.max_link_bytes {
                if iri.starts_with("http://") || iri.starts_with("https://") {
                    doc.too_long_links += 1;
                }
                return;
            }
            let Some(url) = link_url(iri, &own) else {
                return;
            };
            match index.get(url.as_str()) {
                Some(&i) => {
                    if let Some(p) = via {
                        let known = &mut doc.links[i].predicates;
                        if known.len() < PREDICATES_PER_LINK && !known.iter().any(|k| k == p) {
                            known.push(p.to_string());
                        }
                    }
                }
                None if doc.links.len() < limits.max_links => {
                    index.insert(url.to_string(), doc.links.len());
                    doc.links.push(RdfLink {
                        url,
                        predicates: via.map(|p| vec![p.to_string()]).unwrap_or_default(),
                    });
                }
                None => {
                    doc.cut = true;
                    doc.cut_reason.get_or_insert(RdfCut::Links);
                }
            }
        };
        if follow.subjects {
            if let oxrdf::NamedOrBlankNode::NamedNode(s) = &in_doc.subject {
                add(s.as_str(), None);
            }
        }
        if follow.predicates {
            add(predicate, None);
        }
        let is_type = predicate == RDF_TYPE;
        if (follow.objects && !is_type) || (follow.types && is_type) {
            if let oxrdf::Term::NamedNode(o) = &in_doc.object {
                add(o.as_str(), Some(predicate));
            }
        }
        // Writing to a String cannot fail.
        let _ = writeln!(doc.nquads, "{in_doc} .");
    }
    doc
}

/// The bytes of a statement's N-Quads line, at most (escapes counted at
/// their longest), from its terms: what the line would cost, known before
/// it is built.
pub fn quad_bytes(quad: &oxrdf::Quad, graph_bytes: u64) -> u64 {
    crate::extract::structured::statement_bytes(&quad.subject, &quad.predicate, &quad.object)
        + graph_bytes
        + 1
}

/// Two independent 64-bit hashes of a statement: no two of a document's
/// million statements share both.
pub(crate) fn fingerprint(statement: &impl std::hash::Hash) -> (u64, u64) {
    use std::hash::Hasher;
    let hash = |salt: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(&salt, &mut h);
        statement.hash(&mut h);
        h.finish()
    };
    (hash(1), hash(2))
}

/// The document's URL as a graph name (a serialised `Url` is a valid IRI).
fn oxrdf_named(url: &Url) -> oxrdf::NamedNode {
    oxrdf::NamedNode::new_unchecked(url.as_str())
}

/// An IRI as a link: http(s) only, fragment removed, not the document itself.
fn link_url(iri: &str, own: &Url) -> Option<Url> {
    if !(iri.starts_with("http://") || iri.starts_with("https://")) {
        return None;
    }
    let mut url = Url::parse(iri).ok()?;
    url.set_fragment(None);
    (url != *own).then_some(url)
}

fn describe(e: &RdfSyntaxError) -> String {
    let mut s = e.to_string();
    if s.len() > 300 {
        let mut cut = 300;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("http://data.test/person/alice").unwrap()
    }

    const TURTLE: &str = r#"@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix ex: <http://data.test/vocab#> .
<#me> a foaf:Person ;
    foaf:name "Alice" ;
    foaf:knows <http://data.test/person/bob#me>, <http://other.test/carol> ;
    ex:seeAlso <http://data.test/person/bob>, <mailto:alice@data.test> ;
    ex:address [ ex:city "Paris" ] .
<http://other.test/carol> foaf:name "Carol" .
"#;

    #[test]
    fn statements_go_to_the_document_graph_and_iris_become_links() {
        let doc = parse_document(
            TURTLE.as_bytes(),
            &base(),
            RdfSyntax::Turtle,
            Follow::default(),
            RdfLimits::default(),
        );
        assert_eq!(doc.errors, 0, "{:?}", doc.first_error);
        assert_eq!(doc.statements, 9);
        assert_eq!(doc.nquads.lines().count(), 9);
        assert!(doc
            .nquads
            .lines()
            .all(|l| l.ends_with(" <http://data.test/person/alice> .")));
        let links: Vec<&str> = doc.links.iter().map(|l| l.url.as_str()).collect();
        // `<#me>` is the document itself; foaf:Person is a class (a type);
        // bob's `#me` and bob's page are one link; mailto is not http.
        assert_eq!(
            links,
            ["http://data.test/person/bob", "http://other.test/carol"]
        );
        assert_eq!(
            doc.links[0].predicates,
            [
                "http://xmlns.com/foaf/0.1/knows",
                "http://data.test/vocab#seeAlso"
            ]
        );
    }

    #[test]
    fn types_and_predicates_are_followed_on_demand() {
        let all = Follow {
            predicates: true,
            types: true,
            ..Follow::default()
        };
        let doc = parse_document(
            TURTLE.as_bytes(),
            &base(),
            RdfSyntax::Turtle,
            all,
            RdfLimits::default(),
        );
        let links: Vec<&str> = doc.links.iter().map(|l| l.url.as_str()).collect();
        assert!(links.contains(&"http://xmlns.com/foaf/0.1/Person"));
        assert!(links.contains(&"http://xmlns.com/foaf/0.1/name"));
        assert!(
            links.contains(&"http://data.test/vocab"),
            "fragment removed"
        );
    }

    #[test]
    fn a_statement_repeated_in_a_document_is_written_once() {
        let nt = "<http://a.test/s> <http://a.test/p> \"one\" .\n\
                  <http://a.test/s> <http://a.test/p> \"one\" .\n";
        let doc = parse_document(
            nt.as_bytes(),
            &base(),
            RdfSyntax::NTriples,
            Follow::default(),
            RdfLimits::default(),
        );
        assert_eq!((doc.statements, doc.nquads.lines().count()), (1, 1));
    }

    #[test]
    fn a_bad_statement_costs_only_itself() {
        let nt = "<http://a.test/s> <http://a.test/p> \"one\" .\n\
                  <http://a.test/s> <http://a.test/p> broken .\n\
                  <http://a.test/s> <http://a.test/p> <http://b.test/o> .\n";
        let doc = parse_document(
            nt.as_bytes(),
            &base(),
            RdfSyntax::NQuads,
            Follow::default(),
            RdfLimits::default(),
        );
        assert_eq!(doc.statements, 2);
        assert_eq!(doc.errors, 1);
        assert!(doc.first_error.is_some());
        assert!(!doc.cut);
    }

    #[test]
    fn limits_cut_the_document() {
        let mut nt = String::new();
        for i in 0..50 {
            let _ = writeln!(
                nt,
                "<http://a.test/s{i}> <http://a.test/p> <http://b.test/o{i}> ."
            );
        }
        let limits = RdfLimits {
            max_statements: 10,
            max_links: 5,
            max_errors: 3,
            ..RdfLimits::default()
        };
        let doc = parse_document(
            nt.as_bytes(),
            &base(),
            RdfSyntax::NTriples,
            Follow::default(),
            limits,
        );
        assert_eq!(doc.statements, 10);
        assert_eq!(doc.links.len(), 5);
        assert!(doc.cut);
        let garbage = "x\n".repeat(100);
        let doc = parse_document(
            garbage.as_bytes(),
            &base(),
            RdfSyntax::NTriples,
            Follow::default(),
            limits,
        );
        assert_eq!((doc.statements, doc.errors, doc.cut), (0, 3, true));
    }

    /// Issue #36: a `@prefix` of 64 KiB and 20 000 short triples each
    /// naming it three times (about 500 KB) made 3.9 GB of N-Quads.
    pub(crate) fn turtle_prefix_bomb(triples: usize) -> String {
        let mut doc = format!("@prefix p: <http://bomb.test/{}> .\n", "a".repeat(64 << 10));
        for i in 0..triples {
            let _ = writeln!(doc, "p:s{i} p:p p:o{i} .");
        }
        doc
    }

    #[test]
    fn statements_are_counted_by_their_bytes() {
        let bomb = turtle_prefix_bomb(20_000);
        assert!(bomb.len() < 600_000);
        let limits = RdfLimits {
            max_bytes: 4 << 20,
            ..RdfLimits::default()
        };
        let doc = parse_document(
            bomb.as_bytes(),
            &base(),
            RdfSyntax::Turtle,
            Follow::default(),
            limits,
        );
        assert_eq!(doc.cut_reason, Some(RdfCut::Bytes));
        assert!(doc.cut_reason.is_some_and(RdfCut::blew_budget));
        assert!(doc.nquads.len() as u64 <= limits.max_bytes);
        // Each statement is about 192 KiB: 21 fit in 4 MiB.
        assert_eq!(doc.statements, 21, "{}", doc.nquads.len());
        assert_eq!(doc.nquads.lines().count(), 21);
        // Every line is counted at most at its real size.
        for line in doc.nquads.lines() {
            assert!(line.len() > 3 * (64 << 10));
        }
        // Its IRIs are over the link length: none is copied into the links.
        assert!(doc.links.is_empty());
        assert_eq!(doc.too_long_links, 42);
    }

    #[test]
    fn a_statement_over_the_budget_is_never_written() {
        let nt = format!(
            "<http://a.test/s> <http://a.test/p> \"{}\" .\n<http://a.test/s> <http://a.test/p> \"small\" .\n",
            "\\n".repeat(600_000)
        );
        let limits = RdfLimits {
            max_bytes: 1 << 20,
            ..RdfLimits::default()
        };
        let doc = parse_document(
            nt.as_bytes(),
            &base(),
            RdfSyntax::NTriples,
            Follow::default(),
            limits,
        );
        assert_eq!((doc.statements, doc.nquads.len()), (0, 0));
        assert_eq!(doc.cut_reason, Some(RdfCut::Bytes));
    }

    #[test]
    fn the_bytes_counted_bound_the_lines_written() {
        let nt = "<http://a.test/s> <http://a.test/p> \"a \\\"quoted\\\" \\u0001 value\"@en .\n\
                  <http://a.test/s> <http://a.test/p> \"5\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n\
                  _:b <http://a.test/p> <http://b.test/o> .\n";
        let mut counted = 0;
        let doc = parse_document_within(
            nt.as_bytes(),
            &base(),
            RdfSyntax::NTriples,
            Follow::default(),
            RdfLimits::default(),
            &mut |n| {
                counted += n;
                true
            },
        );
        assert_eq!(doc.statements, 3, "{:?}", doc.first_error);
        assert!(
            counted >= doc.nquads.len() as u64,
            "{counted} {}",
            doc.nquads
        );
        assert!(counted < 2 * doc.nquads.len() as u64 + 64);
    }

    #[test]
    fn a_refused_allowance_cuts_the_document() {
        let mut nt = String::new();
        for i in 0..10 {
            let _ = writeln!(nt, "<http://a.test/s{i}> <http://a.test/p> \"v\" .");
        }
        let mut left = 3;
        let doc = parse_document_within(
            nt.as_bytes(),
            &base(),
            RdfSyntax::NTriples,
            Follow::default(),
            RdfLimits::default(),
            &mut |_| {
                left -= 1;
                left >= 0
            },
        );
        assert_eq!(doc.statements, 3);
        assert_eq!(doc.cut_reason, Some(RdfCut::Memory));
        assert!(!RdfCut::Memory.blew_budget());
    }

    #[test]
    fn rdf_xml_entity_bombs_are_refused_before_parsing() {
        let bomb = crate::rdf::entities::tests::billion_laughs();
        let doc = parse_document(
            bomb.as_bytes(),
            &base(),
            RdfSyntax::RdfXml,
            Follow::default(),
            RdfLimits::default(),
        );
        assert_eq!(doc.statements, 0);
        assert_eq!(doc.cut_reason, Some(RdfCut::Entities));
        assert!(doc
            .first_error
            .as_deref()
            .is_some_and(|e| e.contains("entit")));
        // Entities within the budget still work.
        let ok = r#"<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [ <!ENTITY ex "http://e.test/"> ]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://e.test/">
  <rdf:Description rdf:about="&ex;s"><ex:p rdf:resource="&ex;o"/></rdf:Description>
</rdf:RDF>"#;
        let doc = parse_document(
            ok.as_bytes(),
            &base(),
            RdfSyntax::RdfXml,
            Follow::default(),
            RdfLimits::default(),
        );
        assert_eq!(doc.statements, 1, "{:?}", doc.first_error);
        assert!(doc
            .nquads
            .contains("<http://e.test/s> <http://e.test/p> <http://e.test/o>"));
    }

    #[test]
    fn json_ld_context_bombs_are_refused_before_parsing() {
        let mut bomb = format!(
            "{{\"@context\": {{\"t\": \"http://bomb.test/{}\"}}, \"@id\": \"http://bomb.test/s\", \"t\": [",
            "a".repeat(100_000)
        );
        for i in 0..2_000 {
            bomb.push_str(if i > 0 { ",\"v\"" } else { "\"v\"" });
        }
        bomb.push_str("]}");
        let limits = RdfLimits {
            max_bytes: 1 << 20,
            ..RdfLimits::default()
        };
        let doc = parse_document(
            bomb.as_bytes(),
            &base(),
            RdfSyntax::JsonLd,
            Follow::default(),
            limits,
        );
        assert_eq!(doc.cut_reason, Some(RdfCut::Expansion));
        assert_eq!(doc.statements, 0);
    }

    #[test]
    fn every_syntax_parses() {
        let xml = r#"<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://e.test/">
  <rdf:Description rdf:about="http://a.test/s"><ex:p rdf:resource="http://b.test/o"/></rdf:Description>
</rdf:RDF>"#;
        let jsonld = r#"{"@id": "http://a.test/s", "http://e.test/p": {"@id": "http://b.test/o"}}"#;
        let trig = "<http://g.test/> { <http://a.test/s> <http://e.test/p> <http://b.test/o> . }";
        for (syntax, text) in [
            (RdfSyntax::RdfXml, xml),
            (RdfSyntax::JsonLd, jsonld),
            (RdfSyntax::TriG, trig),
        ] {
            let doc = parse_document(
                text.as_bytes(),
                &base(),
                syntax,
                Follow::default(),
                RdfLimits::default(),
            );
            assert_eq!(doc.statements, 1, "{syntax:?}: {:?}", doc.first_error);
            let links: Vec<&str> = doc.links.iter().map(|l| l.url.as_str()).collect();
            assert_eq!(links, ["http://a.test/s", "http://b.test/o"], "{syntax:?}");
            assert!(doc.nquads.ends_with("<http://data.test/person/alice> .\n"));
        }
    }
}
