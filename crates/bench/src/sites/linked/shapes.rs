//! Linked-data webs of other shapes than [`super`]'s, for measuring
//! `ldcoc` on webs it was not tuned on. They share
//! [`LinkedWeb`]'s parameters, host names and serialisers, but not its
//! vocabulary or URI patterns:
//!
//! - [`Shape::Sparse`] (`sp{i:03}.test`): RDF rare and buried. Seven hosts in
//!   eight are *web hosts*: HTML pages `/p/{j}` in a binary tree (page `j`
//!   links its children `2j+1`, `2j+2`), two pages of other web hosts, two
//!   files (a PDF, a JPEG without extension, a CSV under `/tables/`) and two
//!   dead links (`/old/{k}`, and a page number past the host's last); a page
//!   two levels down or deeper links a thing of a dataset one time in four.
//!   Every eighth host is a *dataset*: things `/entity/{j}` (even `j`) answer
//!   `303 See Other` to `/meta/{j}` in RDF/XML or Turtle, dumps
//!   `/dump/{j}.nt` (odd `j`) are N-Triples. A thing's description (Dublin
//!   Core, DCAT and schema.org terms) links two things of its dataset, one of
//!   another, a web page, two files and two dead links (one of them an
//!   `/entity/` past the dataset's last). The crawl starts at a web page;
//!   about one URI in twenty is RDF.
//! - [`Shape::Conneg`] (`kb{i:03}.test`): conneg-only hosts, no RDF file
//!   name anywhere. A thing `/id/{j}` answers by `Accept`: on hosts `i % 3 ==
//!   1` directly (`Vary: Accept`), on the others through a `303` to
//!   `/doc/{j}`, which negotiates. Six things in ten have RDF (Turtle,
//!   RDF/XML, JSON-LD or N-Triples by host); the others only an HTML page,
//!   whatever is asked, whose links lead on. Listing pages `/page/{k}`,
//!   pictures `/img/{k}` and PDFs `/files/{k}` carry no extension either;
//!   dead links are `/old/{k}` and things `/id/{j}` past a host's last, the
//!   same pattern as the live ones.
//!
//! Like [`super`]'s, each web is a pure function of its parameters:
//! [`description`] and [`links`] are what the server renders, so
//! [`LinkedWeb::walk`] is the ground truth.

use super::rdf::{
    n_triples, rdf_links, render, wants_rdf, Object, Statement, Syntax, FOAF_DEPICTION,
    OWL_SAME_AS, RDFS_LABEL, RDFS_SEE_ALSO, RDF_TYPE,
};
use super::web::{LinkedWeb, Shape};
use crate::sites::rng::Rng;
use crate::sites::server::{SiteRequest, SiteResponse};
use axum::http::{header, HeaderValue, StatusCode};

const DCT_TITLE: &str = "http://purl.org/dc/terms/title";
const DCT_IS_PART_OF: &str = "http://purl.org/dc/terms/isPartOf";
const DCT_HAS_PART: &str = "http://purl.org/dc/terms/hasPart";
const DCT_RELATION: &str = "http://purl.org/dc/terms/relation";
const DCT_DESCRIPTION: &str = "http://purl.org/dc/terms/description";
const DCAT_DATASET: &str = "http://www.w3.org/ns/dcat#Dataset";
const DCAT_DOWNLOAD: &str = "http://www.w3.org/ns/dcat#downloadURL";
const SCHEMA_PLACE: &str = "http://schema.org/Place";
const SCHEMA_WORK: &str = "http://schema.org/CreativeWork";
const SCHEMA_URL: &str = "http://schema.org/url";
const SCHEMA_NAME: &str = "http://schema.org/name";
const SCHEMA_ABOUT: &str = "http://schema.org/about";
const SCHEMA_MENTIONS: &str = "http://schema.org/mentions";
const SCHEMA_IMAGE: &str = "http://schema.org/image";
const SCHEMA_ENCODING: &str = "http://schema.org/encoding";
const SCHEMA_MODIFIED: &str = "http://schema.org/dateModified";
const FOAF_TOPIC_OF: &str = "http://xmlns.com/foaf/0.1/isPrimaryTopicOf";

/// Hosts a web of `shape` has at least (one of each kind).
pub(super) fn min_hosts(shape: Shape) -> usize {
    match shape {
        Shape::Classic => 5,
        Shape::Sparse => 16,
        Shape::Conneg => 4,
    }
}

/// Things or pages per host at least (a page tree two levels deep).
pub(super) fn min_per_host(shape: Shape) -> usize {
    match shape {
        Shape::Classic => 1,
        Shape::Sparse | Shape::Conneg => 8,
    }
}

pub(super) fn seeds(web: &LinkedWeb) -> Vec<String> {
    match web.shape {
        Shape::Sparse => vec![format!("http://{}/p/0", web.host_name(1))],
        _ => vec![conneg_thing(web, 0, 0)],
    }
}

/// The description of the RDF document `uri` leads to (`None`: no RDF).
pub(super) fn description(web: &LinkedWeb, uri: &str) -> Option<Vec<Statement>> {
    let (i, path) = web.split(uri)?;
    match web.shape {
        Shape::Sparse => {
            let j = sparse_thing_at(web, i, path)?;
            Some(sparse_description(web, i, j))
        }
        Shape::Conneg => {
            let j = number(path, "/id/", web.per_host)?;
            rdf_thing(web, i, j).then(|| conneg_description(web, i, j))
        }
        Shape::Classic => None,
    }
}

/// The links a crawler finds at `uri` (an RDF document's objects, an HTML
/// page's anchors; none for anything else).
pub(super) fn links(web: &LinkedWeb, uri: &str) -> Vec<String> {
    if let Some(d) = description(web, uri) {
        return rdf_links(d);
    }
    let Some((i, path)) = web.split(uri) else {
        return Vec::new();
    };
    match web.shape {
        Shape::Sparse if !sparse_data(i) => number(path, "/p/", web.per_host)
            .map(|j| sparse_page_links(web, i, j))
            .unwrap_or_default(),
        Shape::Conneg => {
            if let Some(j) = number(path, "/id/", web.per_host) {
                return conneg_html_links(web, i, j);
            }
            number(path, "/page/", conneg_pages(web))
                .map(|k| conneg_page_links(web, i, k))
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// The answer of host `i` of a web of another shape.
pub(super) fn respond(web: &LinkedWeb, i: usize, req: &SiteRequest) -> SiteResponse {
    let path = req.path_and_query();
    let answer = match web.shape {
        Shape::Sparse => sparse_respond(web, i, &path, req),
        Shape::Conneg => conneg_respond(web, i, &path, req),
        Shape::Classic => None,
    };
    if let Some(a) = answer {
        return a;
    }
    let files = web.per_host / 2 + 1;
    if number(&path, "/img/", files).is_some() {
        return SiteResponse::ok("image/jpeg", &b"\xff\xd8\xff\xe0\0\x10JFIF\0"[..]);
    }
    if number(&path, "/files/", files).is_some() || suffixed(&path, "/files/", ".pdf", files) {
        return SiteResponse::ok("application/pdf", &b"%PDF-1.4\n%%EOF\n"[..]);
    }
    if suffixed(&path, "/tables/", ".csv", files) {
        return SiteResponse::ok("text/csv", "station,value\nA,1\nB,2\n");
    }
    SiteResponse::not_found()
        .with_header(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))
}

/// `prefix{n}` with `n < below`.
fn number(path: &str, prefix: &str, below: usize) -> Option<usize> {
    path.strip_prefix(prefix)?
        .parse()
        .ok()
        .filter(|&n: &usize| n < below)
}

/// `prefix{n}suffix` with `n < below`.
fn suffixed(path: &str, prefix: &str, suffix: &str, below: usize) -> bool {
    path.strip_prefix(prefix)
        .and_then(|r| r.strip_suffix(suffix))
        .and_then(|n| n.parse::<usize>().ok())
        .is_some_and(|n| n < below)
}

fn html(title: &str, links: &[String]) -> SiteResponse {
    let mut out = format!("<!doctype html><html><head><title>{title}</title></head><body><ul>");
    for l in links {
        out.push_str(&format!("<li><a href=\"{l}\">{l}</a></li>"));
    }
    out.push_str("</ul></body></html>");
    SiteResponse::html(out)
}

// ---- linked-sparse ----

fn sparse_data(i: usize) -> bool {
    i % 8 == 0
}

fn sparse_syntax(i: usize) -> Syntax {
    if (i / 8) % 2 == 0 {
        Syntax::RdfXml
    } else {
        Syntax::Turtle
    }
}

fn sparse_thing(web: &LinkedWeb, i: usize, j: usize) -> String {
    let host = web.host_name(i);
    if j % 2 == 0 {
        format!("http://{host}/entity/{j}")
    } else {
        format!("http://{host}/dump/{j}.nt")
    }
}

/// The thing of dataset `i` at `path` (its URI, not its document's).
fn sparse_thing_at(web: &LinkedWeb, i: usize, path: &str) -> Option<usize> {
    if !sparse_data(i) {
        return None;
    }
    if let Some(j) = number(path, "/entity/", web.per_host) {
        return (j % 2 == 0).then_some(j);
    }
    let j: usize = path
        .strip_prefix("/dump/")?
        .strip_suffix(".nt")?
        .parse()
        .ok()?;
    (j % 2 == 1 && j < web.per_host).then_some(j)
}

fn random_dataset(web: &LinkedWeb, rng: &mut Rng) -> usize {
    rng.below(web.hosts.div_ceil(8) as u64) as usize * 8
}

fn random_web_host(web: &LinkedWeb, rng: &mut Rng) -> usize {
    loop {
        let i = rng.below(web.hosts as u64) as usize;
        if !sparse_data(i) {
            return i;
        }
    }
}

fn sparse_page(web: &LinkedWeb, rng: &mut Rng) -> String {
    let i = random_web_host(web, rng);
    format!(
        "http://{}/p/{}",
        web.host_name(i),
        rng.below(web.per_host as u64)
    )
}

/// A PDF, a picture or a table of a random web host (from a pool smaller
/// than the pages, so that a crawl meets the same files again).
fn sparse_file(web: &LinkedWeb, rng: &mut Rng) -> String {
    let host = web.host_name(random_web_host(web, rng));
    let k = rng.below((web.per_host / 2 + 1) as u64);
    match rng.below(3) {
        0 => format!("http://{host}/files/{k}.pdf"),
        1 => format!("http://{host}/img/{k}"),
        _ => format!("http://{host}/tables/{k}.csv"),
    }
}

fn sparse_page_links(web: &LinkedWeb, i: usize, j: usize) -> Vec<String> {
    let host = web.host_name(i);
    let mut rng = Rng::new(web.seed, &[30, i as u64, j as u64]);
    let mut out: Vec<String> = [2 * j + 1, 2 * j + 2]
        .into_iter()
        .filter(|&c| c < web.per_host)
        .map(|c| format!("http://{host}/p/{c}"))
        .collect();
    for _ in 0..2 {
        out.push(sparse_page(web, &mut rng));
    }
    for _ in 0..2 {
        out.push(sparse_file(web, &mut rng));
    }
    let old = web.host_name(random_web_host(web, &mut rng));
    out.push(format!(
        "http://{old}/old/{}",
        rng.below(web.per_host as u64)
    ));
    out.push(format!(
        "http://{host}/p/{}",
        web.per_host + rng.below(web.per_host as u64) as usize
    ));
    // Buried: only pages two levels down or deeper lead to data.
    if j >= 3 && rng.below(4) == 0 {
        let d = random_dataset(web, &mut rng);
        let t = rng.below(web.per_host as u64) as usize;
        out.push(sparse_thing(web, d, t));
    }
    out
}

fn sparse_description(web: &LinkedWeb, i: usize, j: usize) -> Vec<Statement> {
    let s = sparse_thing(web, i, j);
    let host = web.host_name(i);
    let mut rng = Rng::new(web.seed, &[31, i as u64, j as u64]);
    let iri = Object::Iri;
    let class = if j % 4 < 2 {
        DCAT_DATASET
    } else {
        SCHEMA_PLACE
    };
    let mut out = vec![
        (s.clone(), RDF_TYPE, iri(class.to_string())),
        (
            s.clone(),
            DCT_TITLE,
            Object::Literal(format!("Record {j} of {host}")),
        ),
    ];
    for p in [DCT_IS_PART_OF, DCT_HAS_PART] {
        let t = rng.below(web.per_host as u64) as usize;
        out.push((s.clone(), p, iri(sparse_thing(web, i, t))));
    }
    let d = random_dataset(web, &mut rng);
    let t = rng.below(web.per_host as u64) as usize;
    out.push((s.clone(), DCT_RELATION, iri(sparse_thing(web, d, t))));
    out.push((s.clone(), SCHEMA_URL, iri(sparse_page(web, &mut rng))));
    out.push((s.clone(), FOAF_DEPICTION, iri(sparse_file(web, &mut rng))));
    out.push((s.clone(), DCAT_DOWNLOAD, iri(sparse_file(web, &mut rng))));
    let old = web.host_name(random_web_host(web, &mut rng));
    out.push((
        s.clone(),
        RDFS_SEE_ALSO,
        iri(format!(
            "http://{old}/old/{}",
            rng.below(web.per_host as u64)
        )),
    ));
    out.push((
        s.clone(),
        RDFS_SEE_ALSO,
        iri(format!(
            "http://{host}/entity/{}",
            web.per_host + 2 * rng.below(web.per_host as u64) as usize
        )),
    ));
    out.push((
        s,
        DCT_DESCRIPTION,
        Object::Literal(format!("Measurements kept by {host}, series {j}")),
    ));
    out
}

fn sparse_respond(
    web: &LinkedWeb,
    i: usize,
    path: &str,
    req: &SiteRequest,
) -> Option<SiteResponse> {
    if !sparse_data(i) {
        let j = number(path, "/p/", web.per_host)?;
        return Some(html(&format!("page {j}"), &sparse_page_links(web, i, j)));
    }
    if let Some(j) = sparse_thing_at(web, i, path) {
        return Some(if j % 2 == 1 {
            let d = sparse_description(web, i, j);
            SiteResponse::ok("application/n-triples", n_triples(&d))
        } else if wants_rdf(req) {
            SiteResponse::redirect(StatusCode::SEE_OTHER, &format!("/meta/{j}"))
        } else {
            SiteResponse::redirect(StatusCode::SEE_OTHER, &format!("/about/{j}"))
        });
    }
    let even = |j: &usize| j % 2 == 0;
    if let Some(j) = number(path, "/meta/", web.per_host).filter(even) {
        return Some(render(sparse_syntax(i), &sparse_description(web, i, j)));
    }
    if let Some(j) = number(path, "/about/", web.per_host).filter(even) {
        return Some(html(&format!("Record {j}"), &[]));
    }
    None
}

// ---- linked-conneg ----

/// Hosts whose things answer themselves (no 303).
fn direct(i: usize) -> bool {
    i % 3 == 1
}

fn conneg_pages(web: &LinkedWeb) -> usize {
    web.per_host / 3 + 1
}

fn conneg_thing(web: &LinkedWeb, i: usize, j: usize) -> String {
    format!("http://{}/id/{j}", web.host_name(i))
}

/// Whether thing `j` of host `i` has RDF (the seed always has).
fn rdf_thing(web: &LinkedWeb, i: usize, j: usize) -> bool {
    (i, j) == (0, 0) || Rng::new(web.seed, &[40, i as u64, j as u64]).below(10) < 6
}

fn random_conneg_thing(web: &LinkedWeb, rng: &mut Rng) -> String {
    let i = rng.below(web.hosts as u64) as usize;
    conneg_thing(web, i, rng.below(web.per_host as u64) as usize)
}

fn random_host(web: &LinkedWeb, rng: &mut Rng) -> String {
    web.host_name(rng.below(web.hosts as u64) as usize)
}

fn conneg_description(web: &LinkedWeb, i: usize, j: usize) -> Vec<Statement> {
    let s = conneg_thing(web, i, j);
    let host = web.host_name(i);
    let mut rng = Rng::new(web.seed, &[41, i as u64, j as u64]);
    let iri = Object::Iri;
    let mut out = vec![
        (s.clone(), RDF_TYPE, iri(SCHEMA_WORK.to_string())),
        (
            s.clone(),
            SCHEMA_NAME,
            Object::Literal(format!("Work {j} at {host}")),
        ),
        (s.clone(), RDFS_LABEL, Object::Literal(format!("w{j}"))),
    ];
    for p in [OWL_SAME_AS, SCHEMA_ABOUT, SCHEMA_MENTIONS] {
        out.push((s.clone(), p, iri(random_conneg_thing(web, &mut rng))));
    }
    let pages = conneg_pages(web) as u64;
    let files = (web.per_host / 2 + 1) as u64;
    let h = random_host(web, &mut rng);
    out.push((
        s.clone(),
        FOAF_TOPIC_OF,
        iri(format!("http://{h}/page/{}", rng.below(pages))),
    ));
    let h = random_host(web, &mut rng);
    out.push((
        s.clone(),
        SCHEMA_IMAGE,
        iri(format!("http://{h}/img/{}", rng.below(files))),
    ));
    let h = random_host(web, &mut rng);
    out.push((
        s.clone(),
        SCHEMA_ENCODING,
        iri(format!("http://{h}/files/{}", rng.below(files))),
    ));
    let h = random_host(web, &mut rng);
    out.push((
        s.clone(),
        RDFS_SEE_ALSO,
        iri(format!(
            "http://{h}/id/{}",
            web.per_host + rng.below(web.per_host as u64) as usize
        )),
    ));
    let h = random_host(web, &mut rng);
    out.push((
        s.clone(),
        RDFS_SEE_ALSO,
        iri(format!("http://{h}/old/{}", rng.below(files))),
    ));
    out.push((
        s,
        SCHEMA_MODIFIED,
        Object::Literal(format!("2021-03-{:02}", 1 + j % 28)),
    ));
    out
}

/// The links of the HTML page of a thing without RDF (none for one with:
/// a linked-data crawler is never sent its page).
fn conneg_html_links(web: &LinkedWeb, i: usize, j: usize) -> Vec<String> {
    if rdf_thing(web, i, j) {
        return Vec::new();
    }
    let mut rng = Rng::new(web.seed, &[42, i as u64, j as u64]);
    let files = (web.per_host / 2 + 1) as u64;
    let mut out = vec![
        random_conneg_thing(web, &mut rng),
        random_conneg_thing(web, &mut rng),
    ];
    let h = random_host(web, &mut rng);
    out.push(format!(
        "http://{h}/page/{}",
        rng.below(conneg_pages(web) as u64)
    ));
    let h = random_host(web, &mut rng);
    out.push(format!("http://{h}/img/{}", rng.below(files)));
    let h = random_host(web, &mut rng);
    out.push(format!(
        "http://{h}/id/{}",
        web.per_host + rng.below(web.per_host as u64) as usize
    ));
    out
}

fn conneg_page_links(web: &LinkedWeb, i: usize, k: usize) -> Vec<String> {
    let mut rng = Rng::new(web.seed, &[43, i as u64, k as u64]);
    let files = (web.per_host / 2 + 1) as u64;
    let mut out: Vec<String> = (0..5).map(|_| random_conneg_thing(web, &mut rng)).collect();
    let h = random_host(web, &mut rng);
    out.push(format!(
        "http://{h}/page/{}",
        rng.below(conneg_pages(web) as u64)
    ));
    let h = random_host(web, &mut rng);
    out.push(format!("http://{h}/img/{}", rng.below(files)));
    let h = random_host(web, &mut rng);
    out.push(format!("http://{h}/files/{}", rng.below(files)));
    let h = random_host(web, &mut rng);
    out.push(format!("http://{h}/old/{}", rng.below(files)));
    out
}

/// Thing `j` of host `i` as `req` asks for it.
fn negotiated(web: &LinkedWeb, i: usize, j: usize, req: &SiteRequest) -> SiteResponse {
    let answer = if rdf_thing(web, i, j) && wants_rdf(req) {
        let d = conneg_description(web, i, j);
        match i % 4 {
            0 => render(Syntax::Turtle, &d),
            1 => render(Syntax::RdfXml, &d),
            2 => render(Syntax::JsonLd, &d),
            _ => SiteResponse::ok("application/n-triples", n_triples(&d)),
        }
    } else {
        html(&format!("Work {j}"), &conneg_html_links(web, i, j))
    };
    answer.with_header(header::VARY, HeaderValue::from_static("Accept"))
}

fn conneg_respond(
    web: &LinkedWeb,
    i: usize,
    path: &str,
    req: &SiteRequest,
) -> Option<SiteResponse> {
    if let Some(j) = number(path, "/id/", web.per_host) {
        return Some(if direct(i) {
            negotiated(web, i, j, req)
        } else {
            SiteResponse::redirect(StatusCode::SEE_OTHER, &format!("/doc/{j}"))
        });
    }
    if let Some(j) = number(path, "/doc/", web.per_host).filter(|_| !direct(i)) {
        return Some(negotiated(web, i, j, req));
    }
    let k = number(path, "/page/", conneg_pages(web))?;
    Some(html(&format!("List {k}"), &conneg_page_links(web, i, k)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sites::linked::tests::get;

    #[test]
    fn sparse_rdf_is_rare_buried_and_every_rdf_uri_is_served_as_rdf() {
        let web = LinkedWeb::with_shape(Shape::Sparse, 48, 24, 1);
        let truth = web.walk();
        let share = truth.rdf.len() as f64 / truth.uris.len() as f64;
        assert!((0.02..0.12).contains(&share), "RDF share {share}");
        // Most datasets' things reached; no seed or shallow page is RDF.
        assert!(truth.rdf.len() > 6 * 24 * 6 / 10, "{}", truth.rdf.len());
        assert!(!truth.rdf.contains(&web.seeds()[0]));
        for uri in &truth.rdf {
            let resp = get(&web, uri, true);
            let resp = match resp.location() {
                Some(to) => {
                    assert_eq!(resp.status, StatusCode::SEE_OTHER, "{uri}");
                    let host = web.host_name(web.split(uri).unwrap().0);
                    get(&web, &format!("http://{host}{to}"), true)
                }
                None => resp,
            };
            assert_eq!(resp.status, StatusCode::OK, "{uri}");
            let ct = resp.content_type().unwrap_or_default().to_string();
            assert!(
                [
                    "application/rdf+xml",
                    "text/turtle",
                    "application/n-triples"
                ]
                .iter()
                .any(|t| ct.starts_with(t)),
                "{uri}: {ct}"
            );
        }
        // Everything else answers something other than RDF: a page, a file or a 404.
        let mut dead = 0;
        for uri in truth.uris.difference(&truth.rdf) {
            let resp = get(&web, uri, true);
            assert!(resp.location().is_none(), "{uri}");
            let ct = resp.content_type().unwrap_or_default().to_string();
            assert!(!ct.contains("rdf") && !ct.contains("turtle") && !ct.contains("triples"));
            dead += usize::from(resp.status == StatusCode::NOT_FOUND);
        }
        assert!(
            dead * 10 > truth.uris.len(),
            "{dead} dead links of {}",
            truth.uris.len()
        );
        assert_eq!(web.walk(), truth, "a pure function of its parameters");
    }

    #[test]
    fn conneg_hosts_negotiate_without_rdf_file_names() {
        let web = LinkedWeb::with_shape(Shape::Conneg, 12, 15, 2);
        let truth = web.walk();
        let share = truth.rdf.len() as f64 / truth.uris.len() as f64;
        assert!((0.15..0.6).contains(&share), "RDF share {share}");
        for uri in &truth.uris {
            let last = uri.rsplit('/').next().unwrap_or_default();
            assert!(!last.contains('.'), "a file name: {uri}");
        }
        let mut redirected = 0;
        for uri in &truth.rdf {
            let (i, _) = web.split(uri).unwrap();
            let host = web.host_name(i);
            let follow = |rdf: bool| {
                let resp = get(&web, uri, rdf);
                match resp.location() {
                    Some(to) => get(&web, &format!("http://{host}{to}"), rdf),
                    None => resp,
                }
            };
            redirected += usize::from(get(&web, uri, true).location().is_some());
            let rdf = follow(true);
            assert_eq!(rdf.status, StatusCode::OK, "{uri}");
            assert!(
                !rdf.content_type().unwrap_or_default().contains("html"),
                "{uri}"
            );
            assert!(
                follow(false)
                    .content_type()
                    .unwrap_or_default()
                    .contains("html"),
                "{uri}"
            );
            assert_eq!(rdf.header_str(header::VARY), Some("Accept"));
        }
        assert!(
            redirected > 0 && redirected < truth.rdf.len(),
            "303s and direct answers"
        );
        // A thing without RDF is a page whatever is asked, and its links are walked.
        let html_things: Vec<&String> = truth
            .uris
            .iter()
            .filter(|u| u.contains("/id/") && !truth.rdf.contains(*u))
            .filter(|u| get(&web, u, true).status != StatusCode::NOT_FOUND)
            .collect();
        assert!(!html_things.is_empty());
        // Dead things look like live ones.
        assert!(truth
            .uris
            .iter()
            .any(|u| u.contains("/id/") && get(&web, u, true).status == StatusCode::NOT_FOUND));
        assert_eq!(web.walk(), truth);
    }

    #[test]
    fn one_domain_renames_hosts_only() {
        let web = LinkedWeb::with_shape(Shape::Conneg, 8, 8, 3);
        let one = web.under_one_domain();
        assert_eq!(one.host_name(1), "kb001.web.test");
        assert_eq!(web.host_name(1), "kb001.test");
        let (a, b) = (web.walk(), one.walk());
        assert_eq!(a.uris.len(), b.uris.len());
        assert_eq!(a.rdf.len(), b.rdf.len());
        assert_eq!(one.host_index("kb001.test"), None);
    }
}
