//! A web of linked data, for linked-data jobs and their benchmark.
//!
//! Host `i` of `n` is `lod{i:03}.test` (each its own pay-level domain; or
//! `lod{i:03}.web.test`, all under one, with [`LinkedWeb::under_one_domain`]),
//! of one of five kinds (`i % 5`):
//!
//! - 0, 1, 2: *data hosts* in the style of DBpedia: a thing's URI
//!   `/resource/{j}` answers `303 See Other` to its description `/data/{j}`,
//!   served by content negotiation in Turtle (kind 0), RDF/XML (1) or
//!   JSON-LD (2) — or to an HTML page `/about/{j}` for a client that asks
//!   for no RDF type;
//! - 3: a *dump host*: N-Triples under `text/plain` at `/nt/{j}` (even `j`,
//!   told by sniffing) and Turtle files `/doc/{j}.ttl` (odd `j`);
//! - 4: a *web host*: HTML pages `/page/{j}` linking other pages, and now
//!   and then a thing's URI.
//!
//! A description (15 statements) names its thing's type, label and two
//! other literals, three other things (`owl:sameAs`, `skos:related`, `ex:next`),
//! and URIs that are not RDF, drawn from shared pools as things are: a home
//! page and a page (HTML), two pictures (no file extension), a PDF (not
//! read), and three `rdfs:seeAlso` to dead links (404). About a quarter of
//! what a crawl reaches is RDF (the LDCOC paper's breadth-first crawls
//! fetched 30 %). The web holds no RDFa: forager does not extract it yet (it comes
//! with the structured-data extractor). The web is a pure function of its
//! parameters, so its ground truth ([`LinkedWeb::walk`]) needs no crawl, and
//! [`LinkedWeb::statements`] gives every statement a document holds.
//!
//! `ldcoc`'s constants were tuned on this shape ([`Shape::Classic`]); the
//! webs of [`shapes`] (RDF rare and buried, conneg-only hosts)
//! share its parameters and serialisers and are kept for measuring it on
//! webs it was not tuned on.

mod rdf;
mod shapes;
mod web;

pub use web::{LinkedWeb, Shape};

use super::rng::Rng;
use super::server::{Site, SiteRequest, SiteResponse};
use axum::http::{header, HeaderValue, StatusCode};
use rdf::{
    n_triples, rdf_links, render, wants_rdf, Object, Syntax, EX_COMMENT, EX_DATASET, EX_MODIFIED,
    EX_NEXT, EX_THING, FOAF_DEPICTION, FOAF_HOMEPAGE, FOAF_PAGE, OWL_SAME_AS, RDFS_LABEL,
    RDFS_SEE_ALSO, RDF_TYPE, SKOS_RELATED,
};
use std::collections::{BTreeSet, HashSet, VecDeque};
use std::sync::Arc;

/// What a host of the web is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// 303 to a description in Turtle, RDF/XML or JSON-LD.
    Data(Syntax),
    Dump,
    Web,
}

/// What a reachable URI is, in the ground truth.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkedTruth {
    /// Every URI a complete crawl dereferences (redirect targets not counted twice).
    pub uris: BTreeSet<String>,
    /// The URIs that lead to an RDF document (a thing's URI, a dump file).
    pub rdf: BTreeSet<String>,
}

impl LinkedWeb {
    /// A web of this module's shape.
    pub fn new(hosts: usize, per_host: usize, seed: u64) -> LinkedWeb {
        LinkedWeb {
            // At least one host of each kind.
            hosts: hosts.max(5),
            per_host: per_host.max(1),
            seed,
            shape: Shape::Classic,
            one_domain: false,
        }
    }

    /// A web of another shape (see [`shapes`]).
    pub fn with_shape(shape: Shape, hosts: usize, per_host: usize, seed: u64) -> LinkedWeb {
        let web = LinkedWeb::new(hosts, per_host, seed);
        LinkedWeb {
            hosts: hosts.max(shapes::min_hosts(shape)),
            per_host: per_host.max(shapes::min_per_host(shape)),
            shape,
            ..web
        }
    }

    fn kind(i: usize) -> Kind {
        match i % 5 {
            0 => Kind::Data(Syntax::Turtle),
            1 => Kind::Data(Syntax::RdfXml),
            2 => Kind::Data(Syntax::JsonLd),
            3 => Kind::Dump,
            _ => Kind::Web,
        }
    }

    /// Every host, each its own [`Site`], for [`super::SiteServer::start`].
    pub fn sites(&self) -> Vec<(String, Arc<dyn Site>)> {
        (0..self.hosts)
            .map(|i| {
                let site: Arc<dyn Site> = Arc::new(LinkedHost {
                    web: *self,
                    index: i,
                });
                (self.host_name(i), site)
            })
            .collect()
    }

    /// The seeds of a crawl: the first thing of the first data host (a
    /// web page, for [`Shape::Sparse`]).
    pub fn seeds(&self) -> Vec<String> {
        match self.shape {
            Shape::Classic => vec![self.thing_uri(0, 0)],
            _ => shapes::seeds(self),
        }
    }

    /// The URI of thing `j` of RDF host `i` (kinds 0–3).
    pub fn thing_uri(&self, i: usize, j: usize) -> String {
        let host = self.host_name(i);
        match LinkedWeb::kind(i) {
            Kind::Data(_) => format!("http://{host}/resource/{j}"),
            Kind::Dump if j % 2 == 0 => format!("http://{host}/nt/{j}"),
            Kind::Dump => format!("http://{host}/doc/{j}.ttl"),
            Kind::Web => format!("http://{host}/page/{j}"),
        }
    }

    /// The URL of the document describing thing `j` of host `i`.
    pub fn document_url(&self, i: usize, j: usize) -> String {
        match LinkedWeb::kind(i) {
            Kind::Data(_) => format!("http://{}/data/{j}", self.host_name(i)),
            _ => self.thing_uri(i, j),
        }
    }

    /// A random RDF host (kinds 0–3) and thing.
    fn random_thing(&self, rng: &mut Rng) -> (usize, usize) {
        let groups = self.hosts.div_ceil(5);
        loop {
            let i = rng.below(groups as u64) as usize * 5 + rng.below(4) as usize;
            if i < self.hosts {
                return (i, rng.below(self.per_host as u64) as usize);
            }
        }
    }

    fn random_web_page(&self, rng: &mut Rng) -> String {
        let webs = self.hosts / 5;
        let i = rng.below(webs.max(1) as u64) as usize * 5 + 4;
        let i = if i < self.hosts { i } else { 4 };
        format!(
            "http://{}/page/{}",
            self.host_name(i),
            rng.below(self.per_host as u64)
        )
    }

    /// The statements of thing `j` of RDF host `i`, subject first.
    fn description(&self, i: usize, j: usize) -> Vec<(String, &'static str, Object)> {
        let subject = self.thing_uri(i, j);
        let host = self.host_name(i);
        let mut rng = Rng::new(self.seed, &[1, i as u64, j as u64]);
        let mut out = vec![
            (subject.clone(), RDF_TYPE, Object::Iri(EX_THING.to_string())),
            (
                subject.clone(),
                RDFS_LABEL,
                Object::Literal(format!("Thing {j} of {host}")),
            ),
        ];
        for p in [OWL_SAME_AS, SKOS_RELATED, EX_NEXT] {
            let (oi, oj) = self.random_thing(&mut rng);
            out.push((subject.clone(), p, Object::Iri(self.thing_uri(oi, oj))));
        }
        out.push((
            subject.clone(),
            FOAF_HOMEPAGE,
            Object::Iri(self.random_web_page(&mut rng)),
        ));
        out.push((
            subject.clone(),
            FOAF_PAGE,
            Object::Iri(self.random_web_page(&mut rng)),
        ));
        // Files and dead links are drawn from pools like things are, so
        // that a crawl discovers them at the pace it discovers things (a
        // breadth-first crawl's first quarter is then as RDF as the web).
        for _ in 0..2 {
            let (mi, mj) = self.random_thing(&mut rng);
            out.push((
                subject.clone(),
                FOAF_DEPICTION,
                Object::Iri(format!("http://{}/media/{mj}", self.host_name(mi))),
            ));
        }
        let (fi, fj) = self.random_thing(&mut rng);
        out.push((
            subject.clone(),
            EX_DATASET,
            Object::Iri(format!(
                "http://{}/files/{}.pdf",
                self.host_name(fi),
                fj / 2
            )),
        ));
        for _ in 0..3 {
            let (gi, gj) = self.random_thing(&mut rng);
            out.push((
                subject.clone(),
                RDFS_SEE_ALSO,
                Object::Iri(format!("http://{}/gone/{gj}", self.host_name(gi))),
            ));
        }
        for (p, value) in [
            (EX_COMMENT, format!("The {j}th thing described by {host}")),
            (EX_MODIFIED, format!("2019-06-{:02}", 1 + j % 28)),
        ] {
            out.push((subject.clone(), p, Object::Literal(value)));
        }
        out
    }

    /// The links of web page `j` of web host `i`: six pages and a thing.
    fn page_links(&self, i: usize, j: usize) -> Vec<String> {
        let mut rng = Rng::new(self.seed, &[2, i as u64, j as u64]);
        let mut links: Vec<String> = (0..6).map(|_| self.random_web_page(&mut rng)).collect();
        let (ti, tj) = self.random_thing(&mut rng);
        links.push(self.thing_uri(ti, tj));
        links
    }

    /// Every statement of the document a URI leads to, as N-Triples lines
    /// (`None` when the URI leads to no RDF).
    pub fn statements(&self, uri: &str) -> Option<Vec<String>> {
        let description = match self.shape {
            Shape::Classic => {
                let (i, j) = self.locate_thing(uri)?;
                self.description(i, j)
            }
            _ => shapes::description(self, uri)?,
        };
        Some(
            description
                .into_iter()
                .map(|(s, p, o)| match o {
                    Object::Iri(o) => format!("<{s}> <{p}> <{o}> ."),
                    Object::Literal(l) => format!("<{s}> <{p}> \"{l}\" ."),
                })
                .collect(),
        )
    }

    /// Whether `uri` leads to an RDF document.
    pub fn is_rdf(&self, uri: &str) -> bool {
        match self.shape {
            Shape::Classic => self.locate_thing(uri).is_some(),
            _ => shapes::description(self, uri).is_some(),
        }
    }

    /// The host and thing of a thing's URI or document URL on an RDF host.
    fn locate_thing(&self, uri: &str) -> Option<(usize, usize)> {
        if self.shape != Shape::Classic {
            return None;
        }
        let (i, path) = self.split(uri)?;
        let j: usize = match LinkedWeb::kind(i) {
            Kind::Data(_) => path
                .strip_prefix("/resource/")
                .or_else(|| path.strip_prefix("/data/"))?
                .parse()
                .ok()?,
            Kind::Dump => match path.strip_prefix("/nt/") {
                Some(j) => j.parse().ok().filter(|j: &usize| j % 2 == 0)?,
                None => path
                    .strip_prefix("/doc/")?
                    .strip_suffix(".ttl")?
                    .parse()
                    .ok()
                    .filter(|j: &usize| j % 2 == 1)?,
            },
            Kind::Web => return None,
        };
        (j < self.per_host).then_some((i, j))
    }

    /// The links of whatever `uri` is (a thing, a page), as a crawler that
    /// follows subjects and objects (not types) sees them.
    fn links_of(&self, uri: &str) -> Vec<String> {
        if let Some((i, j)) = self.locate_thing(uri) {
            return rdf_links(self.description(i, j));
        }
        if self.shape != Shape::Classic {
            return shapes::links(self, uri);
        }
        let Some((i, path)) = self.split(uri) else {
            return Vec::new();
        };
        let j = path
            .strip_prefix("/page/")
            .and_then(|j| j.parse::<usize>().ok());
        match j {
            Some(j) if LinkedWeb::kind(i) == Kind::Web && j < self.per_host => {
                self.page_links(i, j)
            }
            _ => Vec::new(),
        }
    }

    /// Walk the web from its seeds: every URI reachable, and those that are RDF.
    pub fn walk(&self) -> LinkedTruth {
        let mut truth = LinkedTruth::default();
        let mut queue: VecDeque<String> = self.seeds().into();
        let mut seen: HashSet<String> = queue.iter().cloned().collect();
        while let Some(uri) = queue.pop_front() {
            if self.is_rdf(&uri) {
                truth.rdf.insert(uri.clone());
            }
            for l in self.links_of(&uri) {
                if seen.insert(l.clone()) {
                    queue.push_back(l);
                }
            }
            truth.uris.insert(uri);
        }
        truth
    }
}

/// One host of a [`LinkedWeb`].
struct LinkedHost {
    web: LinkedWeb,
    index: usize,
}

impl LinkedHost {
    fn host(&self) -> String {
        self.web.host_name(self.index)
    }

    fn render(&self, syntax: Syntax, j: usize) -> SiteResponse {
        render(syntax, &self.web.description(self.index, j))
    }
}

impl Site for LinkedHost {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path_and_query();
        let web = &self.web;
        let number = |prefix: &str, suffix: &str| {
            path.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(suffix))
                .and_then(|j| j.parse::<usize>().ok())
                .filter(|&j| j < web.per_host)
        };
        if web.shape != Shape::Classic {
            return shapes::respond(web, self.index, req);
        }
        match LinkedWeb::kind(self.index) {
            Kind::Data(syntax) => {
                if let Some(j) = number("/resource/", "") {
                    let to = if wants_rdf(req) {
                        format!("/data/{j}")
                    } else {
                        format!("/about/{j}")
                    };
                    return SiteResponse::redirect(StatusCode::SEE_OTHER, &to);
                }
                if let Some(j) = number("/data/", "") {
                    return self.render(syntax, j);
                }
                if let Some(j) = number("/about/", "") {
                    let host = self.host();
                    return SiteResponse::html(format!(
                        "<!doctype html><title>Thing {j}</title><a href=\"http://{host}/data/{j}\">data</a>"
                    ));
                }
            }
            Kind::Dump => {
                if let Some(j) = number("/nt/", "").filter(|j| j % 2 == 0) {
                    let s = self.web.description(self.index, j);
                    return SiteResponse::ok("text/plain", n_triples(&s));
                }
                if let Some(j) = number("/doc/", ".ttl").filter(|j| j % 2 == 1) {
                    return self.render(Syntax::Turtle, j);
                }
            }
            Kind::Web => {
                if let Some(j) = number("/page/", "") {
                    let mut html = format!(
                        "<!doctype html><html><head><title>page {j}</title></head><body><ul>"
                    );
                    for l in self.web.page_links(self.index, j) {
                        html.push_str(&format!("<li><a href=\"{l}\">{l}</a></li>"));
                    }
                    html.push_str("</ul></body></html>");
                    return SiteResponse::html(html);
                }
            }
        }
        if number("/media/", "").is_some() {
            return SiteResponse::ok("image/png", &b"\x89PNG\r\n\x1a\n"[..]);
        }
        if number("/files/", ".pdf").is_some() {
            return SiteResponse::ok("application/pdf", &b"%PDF-1.4\n%%EOF\n"[..]);
        }
        SiteResponse::not_found()
            .with_header(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use url::Url;

    /// A request for `uri`, asking for RDF like a linked-data job or not.
    pub(crate) fn get(web: &LinkedWeb, uri: &str, rdf: bool) -> SiteResponse {
        let url = Url::parse(uri).unwrap();
        let host = url.host_str().unwrap().to_string();
        let mut req = SiteRequest::get(&host, &url[url::Position::BeforePath..]);
        if rdf {
            req.headers.insert(
                header::ACCEPT,
                HeaderValue::from_static("text/turtle, application/rdf+xml;q=0.9"),
            );
        }
        let sites: std::collections::HashMap<String, Arc<dyn Site>> =
            web.sites().into_iter().collect();
        sites[&host].respond(&req)
    }

    #[test]
    fn things_are_negotiated_and_others_are_not_rdf() {
        let web = LinkedWeb::new(10, 4, 7);
        let thing = web.thing_uri(1, 2);
        assert_eq!(get(&web, &thing, true).location(), Some("/data/2"));
        assert_eq!(get(&web, &thing, false).location(), Some("/about/2"));
        let host = web.host_name(1);
        assert_eq!(
            get(&web, &format!("http://{host}/gone/2-0"), true).status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get(&web, &format!("http://{host}/media/2"), true).content_type(),
            Some("image/png")
        );
        assert_eq!(
            get(&web, &format!("http://{host}/media/2-1"), true).status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get(&web, &web.thing_uri(3, 0), true).content_type(),
            Some("text/plain")
        );
    }

    #[test]
    fn the_walk_reaches_most_things_and_mixes_in_other_uris() {
        let web = LinkedWeb::new(50, 20, 3);
        let truth = web.walk();
        let things = 40 * 20;
        assert!(
            truth.rdf.len() > things * 8 / 10,
            "{} of {things}",
            truth.rdf.len()
        );
        let share = truth.rdf.len() as f64 / truth.uris.len() as f64;
        assert!((0.1..0.4).contains(&share), "RDF share {share}");
        assert_eq!(web.walk(), truth, "a pure function of its parameters");
    }

    #[test]
    fn the_linked_web_parses_to_exactly_its_statements() {
        // What the web serves is what forager's RDF parser reads back.
        use forager_core::rdf::{parse_document, Follow, RdfLimits, RdfSyntax};
        const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
        let web = LinkedWeb::new(10, 4, 7);
        for i in 0..4 {
            for j in 0..4 {
                let uri = web.thing_uri(i, j);
                let doc_url = web.document_url(i, j);
                let resp = get(&web, &doc_url, true);
                assert_eq!(resp.status, axum::http::StatusCode::OK, "{doc_url}");
                let crate::sites::Body::Bytes(body) = &resp.body else {
                    panic!("in memory")
                };
                let ct = resp
                    .content_type()
                    .unwrap()
                    .split(';')
                    .next()
                    .unwrap()
                    .to_string();
                let base = Url::parse(&doc_url).unwrap();
                let syntax = RdfSyntax::of_response(&ct, &base, body).unwrap();
                let doc =
                    parse_document(body, &base, syntax, Follow::default(), RdfLimits::default());
                assert_eq!(doc.errors, 0, "{doc_url}: {:?}", doc.first_error);
                let graph = format!(" <{doc_url}> .");
                let got: std::collections::BTreeSet<String> = doc
                    .nquads
                    .lines()
                    .map(|l| format!("{} .", l.strip_suffix(&graph).unwrap()))
                    .collect();
                let want: std::collections::BTreeSet<String> =
                    web.statements(&uri).unwrap().into_iter().collect();
                assert_eq!(got, want, "{doc_url} ({syntax:?})");
                // Subjects and objects, not the class of `rdf:type`, not the document.
                let mut iris = std::collections::BTreeSet::new();
                for line in &want {
                    let parts: Vec<&str> = line.split(' ').collect();
                    let iri = |t: &str| {
                        t.strip_prefix('<')
                            .and_then(|t| t.strip_suffix('>'))
                            .map(str::to_string)
                    };
                    iris.extend(iri(parts[0]));
                    if parts[1] != format!("<{RDF_TYPE}>") {
                        iris.extend(iri(parts[2]));
                    }
                }
                iris.remove(&doc_url);
                let links: std::collections::BTreeSet<String> =
                    doc.links.iter().map(|l| l.url.to_string()).collect();
                assert_eq!(links, iris, "{doc_url}");
            }
        }
    }
}
