//! The small hand-made site of the end-to-end crawl test.
//!
//! About forty resources under [`FIXTURE_HOST`], each there to catch one
//! mistake: HTML pages in four templates, targets of several MIME types (two
//! without a file extension, one behind a query string), 404 and 500 links,
//! a 3-hop redirect chain ending at a target, a redirect loop, a redirect
//! into the disallowed section, a robots.txt that disallows `/private/` and
//! sets a `Crawl-delay`, a gzip-encoded page whose links are the only way to
//! two targets, a 3 MiB page whose last link must be lost under a 1 MiB body
//! cap, links to another host ([`OUTSIDE_HOST`], out of scope), images, a
//! `text/plain` source file, duplicate links and fragments.
//!
//! What a correct crawl of `http://fixture.test:PORT/` with the `statistics`
//! preset, `max_body` = [`FIXTURE_MAX_BODY`] and robots obeyed does:
//! fetch every path of [`FixtureSite::expected_targets`] exactly once, never
//! request a path under [`FixtureSite::disallowed_prefix`], anything on
//! [`OUTSIDE_HOST`] nor [`FixtureSite::blocked_by_extension`], and keep at
//! least the crawl delay between two requests.

use super::server::{Body, Chunk, ChunkSource, Site, SiteRequest, SiteResponse};
use axum::http::{header, HeaderValue, StatusCode};
use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// Host name of the fixture site.
pub const FIXTURE_HOST: &str = "fixture.test";
/// Another host the fixture links to; out of scope, never to be requested.
pub const OUTSIDE_HOST: &str = "elsewhere.test";
/// The body cap the expectations assume (the test job's `limits.max_body`).
pub const FIXTURE_MAX_BODY: u64 = 1 << 20;
/// Size of `/big.html`; its last link lies beyond [`FIXTURE_MAX_BODY`].
pub const BIG_PAGE_BYTES: u64 = 3 << 20;
/// Crawl-delay of robots.txt unless changed with [`FixtureSite::with_crawl_delay`].
pub const DEFAULT_CRAWL_DELAY: Duration = Duration::from_millis(100);

const DISALLOWED: &str = "/private/";
/// The one target link past the body cap.
const LATE_TARGET: &str = "/big/late.csv";

/// One resource of the fixture.
#[derive(Clone, Debug)]
enum Resource {
    Html(String),
    /// HTML sent with `Content-Encoding: gzip`.
    GzipHtml(Bytes),
    File {
        mime: &'static str,
        body: Bytes,
    },
    /// The oversized page, streamed in chunks.
    Big(Bytes),
    Redirect {
        status: StatusCode,
        to: String,
    },
    Status(StatusCode),
}

/// The fixture site (see the module documentation).
#[derive(Clone, Debug)]
pub struct FixtureSite {
    resources: BTreeMap<String, Resource>,
    crawl_delay: Option<Duration>,
}

impl Default for FixtureSite {
    fn default() -> Self {
        FixtureSite::new()
    }
}

impl FixtureSite {
    pub fn new() -> Self {
        let mut site = FixtureSite {
            resources: BTreeMap::new(),
            crawl_delay: Some(DEFAULT_CRAWL_DELAY),
        };
        site.build();
        site
    }

    /// The same site with another robots.txt `Crawl-delay` (`None`: no line).
    pub fn with_crawl_delay(mut self, delay: Option<Duration>) -> Self {
        self.crawl_delay = delay;
        self
    }

    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// Both hosts, ready for [`super::SiteServer::start`].
    pub fn sites(self) -> Vec<(String, Arc<dyn Site>)> {
        vec![
            (FIXTURE_HOST.to_string(), Arc::new(self) as Arc<dyn Site>),
            (
                OUTSIDE_HOST.to_string(),
                Arc::new(OutsideSite) as Arc<dyn Site>,
            ),
        ]
    }

    /// Paths (with query) of the targets a correct crawl fetches, sorted,
    /// with `max_body` = [`FIXTURE_MAX_BODY`].
    pub fn expected_targets(&self) -> Vec<String> {
        self.expected_targets_for(FIXTURE_MAX_BODY)
    }

    /// [`FixtureSite::expected_targets`] for another body cap: the late link
    /// of `/big.html` counts only when the whole page is read.
    pub fn expected_targets_for(&self, max_body: u64) -> Vec<String> {
        let mut t: Vec<String> = EXPECTED_TARGETS.iter().map(|s| s.to_string()).collect();
        if max_body >= BIG_PAGE_BYTES {
            t.push(LATE_TARGET.to_string());
        }
        t.sort();
        t
    }

    /// Paths of the HTML pages a correct crawl fetches, sorted.
    pub fn expected_pages(&self) -> Vec<String> {
        let mut p: Vec<String> = EXPECTED_PAGES.iter().map(|s| s.to_string()).collect();
        p.sort();
        p
    }

    /// Every path robots.txt disallows, that the site links to or redirects to.
    pub fn disallowed_paths(&self) -> Vec<String> {
        self.resources
            .keys()
            .filter(|p| p.starts_with(DISALLOWED))
            .cloned()
            .collect()
    }

    /// Links a job with the default `block_ext` (multimedia extensions) never
    /// requests. (`/media/photo` is an image too, but without an extension:
    /// a crawler may ask for its headers and must then leave its body.)
    pub fn blocked_by_extension(&self) -> Vec<String> {
        vec!["/img/logo.png".to_string()]
    }

    /// The disallowed section: no request may start with it.
    pub fn disallowed_prefix(&self) -> &'static str {
        DISALLOWED
    }

    fn robots_txt(&self) -> String {
        let mut r = String::from("User-agent: *\nDisallow: /private/\n");
        if let Some(d) = self.crawl_delay {
            let _ = writeln!(r, "Crawl-delay: {}", d.as_secs_f64());
        }
        r
    }

    fn html(&mut self, path: &str, html: String) {
        self.resources
            .insert(path.to_string(), Resource::Html(html));
    }

    fn file(&mut self, path: &str, mime: &'static str, body: impl Into<Bytes>) {
        self.resources.insert(
            path.to_string(),
            Resource::File {
                mime,
                body: body.into(),
            },
        );
    }

    fn redirect(&mut self, path: &str, status: StatusCode, to: &str) {
        self.resources.insert(
            path.to_string(),
            Resource::Redirect {
                status,
                to: to.to_string(),
            },
        );
    }

    fn build(&mut self) {
        let outside = format!("http://{OUTSIDE_HOST}");
        // Portal template.
        self.html(
            "/",
            portal(
                "Fixture statistics office",
                &format!(
                    "<section class=\"blocks\">\
                     <div class=\"block\"><h2><a href=\"/data/\">Datasets</a></h2><p>All our data.</p></div>\
                     <div class=\"block\"><h2><a href=\"/news/\">News</a></h2></div>\
                     <div class=\"block\"><h2><a href=\"/docs/\">Documentation</a></h2></div>\
                     <div class=\"block\"><h2><a href=\"/private/\">Members area</a></h2>\
                     <p><a href=\"/private/secret.csv\">Members' data</a></p></div>\
                     <div class=\"block\"><h2>Elsewhere</h2><p><a href=\"{outside}/\">Partner site</a> \
                     <a href=\"{outside}/data.csv\">Partner data</a></p></div>\
                     <div class=\"block\"><h2>Quick links</h2><ul class=\"quick\">\
                     <li><a href=\"/go/1\">Latest release</a></li>\
                     <li><a href=\"/loop/a\">Old portal</a></li>\
                     <li><a href=\"/moved-report\">Annual report</a></li>\
                     <li><a href=\"/archive/\">Archive</a></li>\
                     <li><a href=\"/big.html\">Full register</a></li>\
                     <li><a href=\"/missing.html\">Survey results</a></li>\
                     <li><a href=\"/img/logo.png\">Logo</a></li>\
                     <li><a href=\"/media/photo\">Photo of the office</a></li>\
                     </ul></div></section>"
                ),
            ),
        );
        self.html(
            "/about.html",
            portal(
                "About",
                "<p>We publish statistics. <a href=\"/contact.html\">Contact us</a>.</p>",
            ),
        );
        self.html(
            "/contact.html",
            portal(
                "Contact",
                "<p>Write to us. <a href=\"/about.html#team\">Our team</a></p>",
            ),
        );

        // Catalogue template: targets under table.files td a.dl.
        self.html(
            "/data/",
            catalogue(
                "Datasets",
                "<table class=\"datasets\"><tr><td><a class=\"title\" href=\"population.html\">Population</a></td></tr>\
                 <tr><td><a class=\"title\" href=\"budget.html\">Budget</a></td></tr>\
                 <tr><td><a class=\"title\" href=\"trade.html\">Trade</a></td></tr>\
                 <tr><td><a class=\"title\" href=\"health.html\">Health</a></td></tr></table>",
            ),
        );
        let files = |rows: &[(&str, &str)]| {
            let mut t = String::from("<table class=\"files\">");
            for (href, name) in rows {
                let _ = write!(
                    t,
                    "<tr><td><a class=\"dl\" href=\"{href}\">{name}</a></td><td>data</td></tr>"
                );
            }
            t.push_str("</table>");
            t
        };
        self.html(
            "/data/population.html",
            catalogue(
                "Population",
                &files(&[
                    ("files/population-2020.csv", "population-2020.csv"),
                    ("/data/files/population-2021.xlsx", "population-2021.xlsx"),
                    ("files/population-2020.csv", "same file again"),
                ]),
            ),
        );
        self.html(
            "/data/budget.html",
            catalogue(
                "Budget",
                &files(&[
                    ("files/budget.pdf", "budget.pdf"),
                    ("node/17", "Budget table (CSV)"),
                    ("download/42", "Budget summary"),
                ]),
            ),
        );
        self.html(
            "/data/trade.html",
            catalogue(
                "Trade",
                &files(&[
                    ("export?id=3&amp;format=json", "Trade flows (JSON)"),
                    ("files/trade.zip", "trade.zip"),
                    ("broken.csv", "Trade by partner"),
                ]),
            ),
        );
        self.html(
            "/data/health.html",
            catalogue(
                "Health",
                &files(&[
                    ("files/health.csv", "health.csv"),
                    ("files/missing.csv", "hospitals.csv"),
                ]),
            ),
        );

        // Blog template with pagination.
        let titles = ["Census", "Budget", "Trade", "Health", "Prices", "Jobs"];
        for page in 1..=3usize {
            let mut body = String::from("<div class=\"posts\">");
            for n in (page - 1) * 2 + 1..=page * 2 {
                let _ = write!(
                    body,
                    "<article class=\"post\"><h2><a href=\"/news/2024/a-{n}.html\">{} released</a></h2>\
                     <p>Summary of the release.</p></article>",
                    titles[n - 1]
                );
            }
            body.push_str("</div><nav class=\"pager\">");
            if page > 1 {
                let prev = if page == 2 {
                    "/news/".to_string()
                } else {
                    format!("/news/page/{}/", page - 1)
                };
                let _ = write!(body, "<a rel=\"prev\" href=\"{prev}\">Newer</a> ");
            }
            if page < 3 {
                let _ = write!(
                    body,
                    "<a rel=\"next\" href=\"/news/page/{}/\">Older</a>",
                    page + 1
                );
            }
            body.push_str("</nav>");
            let path = if page == 1 {
                "/news/".to_string()
            } else {
                format!("/news/page/{page}/")
            };
            self.html(&path, blog(&format!("News, page {page}"), &body));
        }
        for n in 1..=6usize {
            let extra = match n {
                2 => "<p>The data: <a href=\"/data/files/health.csv#top\">health.csv</a>.</p>",
                4 => "<p>See the <a href=\"../../docs/usage.html\">usage guide</a>.</p>",
                _ => "",
            };
            let next = if n < 6 { n + 1 } else { 1 };
            self.html(
                &format!("/news/2024/a-{n}.html"),
                blog(
                    &format!("{} released", titles[n - 1]),
                    &format!(
                        "<article class=\"post full\"><p>Text of the release.</p>{extra}\
                         <ul class=\"related\"><li><a href=\"a-{next}.html\">Next release</a></li></ul></article>"
                    ),
                ),
            );
        }

        // Docs template: relative links, _sources, example data.
        let docs = [
            ("index", "Documentation"),
            ("intro", "Introduction"),
            ("install", "Installation"),
            ("usage", "Usage"),
            ("api", "API"),
        ];
        for (n, (name, title)) in docs.iter().enumerate() {
            let next = docs[(n + 1) % docs.len()].0;
            let extra = if *name == "usage" {
                "<p>Example: <a class=\"reference download internal\" href=\"examples/data.json\">data.json</a></p>"
            } else {
                ""
            };
            let path = if *name == "index" {
                "/docs/".to_string()
            } else {
                format!("/docs/{name}.html")
            };
            self.html(
                &path,
                docs_page(
                    title,
                    &format!(
                        "<p>{title} of the fixture.</p>{extra}\
                         <p><a class=\"reference internal\" href=\"{next}.html\">Next: {next}</a></p>\
                         <p><a href=\"_sources/{name}.rst.txt\" rel=\"nofollow\">Show source</a></p>"
                    ),
                ),
            );
            self.file(
                &format!("/docs/_sources/{name}.rst.txt"),
                "text/plain",
                format!("{title}\n=====\n"),
            );
        }
        // /docs/index.html is linked as "index.html" by the api page.
        self.redirect("/docs/index.html", StatusCode::MOVED_PERMANENTLY, "/docs/");

        // Targets.
        self.file("/data/files/population-2020.csv", "text/csv", csv(200));
        self.file(
            "/data/files/population-2021.xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            binary(b"PK\x03\x04", 4000),
        );
        self.file(
            "/data/files/budget.pdf",
            "application/pdf",
            binary(b"%PDF-1.4\n", 6000),
        );
        self.file("/data/node/17", "text/csv; charset=utf-8", csv(50));
        self.file(
            "/data/download/42",
            "application/pdf",
            binary(b"%PDF-1.5\n", 3000),
        );
        self.file(
            "/data/export?id=3&format=json",
            "application/json",
            "{\"rows\":[1,2,3]}\n",
        );
        self.file(
            "/data/files/trade.zip",
            "application/zip",
            binary(b"PK\x03\x04", 5000),
        );
        self.file("/data/files/health.csv", "text/csv", csv(80));
        self.file(
            "/docs/examples/data.json",
            "application/json",
            "{\"example\":true}\n",
        );
        self.file("/data/files/chain-final.csv", "text/csv", csv(10));
        self.file("/archive/old-2019.csv", "text/csv", csv(30));
        self.file(
            "/archive/old-2018.pdf",
            "application/pdf",
            binary(b"%PDF-1.3\n", 2000),
        );
        self.file("/big/early.csv", "text/csv", csv(5));
        self.file(LATE_TARGET, "text/csv", csv(5));

        // Errors, redirects, loops.
        self.resources.insert(
            "/data/broken.csv".into(),
            Resource::Status(StatusCode::INTERNAL_SERVER_ERROR),
        );
        self.redirect("/go/1", StatusCode::MOVED_PERMANENTLY, "/go/2");
        self.redirect("/go/2", StatusCode::FOUND, "/go/3");
        self.redirect(
            "/go/3",
            StatusCode::MOVED_PERMANENTLY,
            "/data/files/chain-final.csv",
        );
        self.redirect("/loop/a", StatusCode::MOVED_PERMANENTLY, "/loop/b");
        self.redirect("/loop/b", StatusCode::MOVED_PERMANENTLY, "/loop/a");
        // A redirect into the disallowed section: the hop must be checked.
        self.redirect(
            "/moved-report",
            StatusCode::MOVED_PERMANENTLY,
            "/private/report.pdf",
        );

        // Disallowed section: real pages and targets, never to be fetched.
        self.html(
            "/private/",
            portal(
                "Members",
                "<p><a href=\"secret.csv\">Secret</a> <a href=\"internal.html\">Internal</a></p>",
            ),
        );
        self.html(
            "/private/internal.html",
            portal("Internal", "<p><a href=\"report.pdf\">Report</a></p>"),
        );
        self.file("/private/secret.csv", "text/csv", csv(10));
        self.file(
            "/private/report.pdf",
            "application/pdf",
            binary(b"%PDF-1.4\n", 1000),
        );

        // Neither: images.
        self.file(
            "/img/logo.png",
            "image/png",
            binary(b"\x89PNG\r\n\x1a\n", 2000),
        );
        self.file(
            "/media/photo",
            "image/jpeg",
            binary(b"\xff\xd8\xff\xe0", 64 * 1024),
        );

        // The gzip page: its links are the only way to two targets.
        let archive = blog(
            "Archive",
            "<ul class=\"archive\"><li><a href=\"old-2019.csv\">2019 figures</a></li>\
             <li><a href=\"/archive/old-2018.pdf\">2018 report</a></li></ul>",
        );
        self.resources.insert(
            "/archive/".into(),
            Resource::GzipHtml(gzip(archive.as_bytes())),
        );

        // The oversized page: one target link at the start, one at the very end.
        self.resources
            .insert("/big.html".into(), Resource::Big(big_page()));
    }
}

/// Targets a correct crawl fetches with the default cap (paths with query).
const EXPECTED_TARGETS: [&str; 13] = [
    "/data/files/population-2020.csv",
    "/data/files/population-2021.xlsx",
    "/data/files/budget.pdf",
    "/data/node/17",
    "/data/download/42",
    "/data/export?id=3&format=json",
    "/data/files/trade.zip",
    "/data/files/health.csv",
    "/docs/examples/data.json",
    "/data/files/chain-final.csv",
    "/archive/old-2019.csv",
    "/archive/old-2018.pdf",
    "/big/early.csv",
];

/// HTML pages a correct crawl fetches (final URLs).
const EXPECTED_PAGES: [&str; 24] = [
    "/",
    "/about.html",
    "/contact.html",
    "/data/",
    "/data/population.html",
    "/data/budget.html",
    "/data/trade.html",
    "/data/health.html",
    "/news/",
    "/news/page/2/",
    "/news/page/3/",
    "/news/2024/a-1.html",
    "/news/2024/a-2.html",
    "/news/2024/a-3.html",
    "/news/2024/a-4.html",
    "/news/2024/a-5.html",
    "/news/2024/a-6.html",
    "/docs/",
    "/docs/intro.html",
    "/docs/install.html",
    "/docs/usage.html",
    "/docs/api.html",
    "/archive/",
    "/big.html",
];

impl Site for FixtureSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        if req.path == "/robots.txt" {
            return SiteResponse::ok("text/plain", self.robots_txt());
        }
        let Some(resource) = self.resources.get(&req.path_and_query()) else {
            return SiteResponse::not_found();
        };
        match resource {
            Resource::Html(html) => SiteResponse::html(html.clone()),
            // Sent compressed whatever the request said, as some servers do.
            Resource::GzipHtml(gz) => SiteResponse::html(gz.clone())
                .with_header(header::CONTENT_ENCODING, HeaderValue::from_static("gzip")),
            Resource::File { mime, body } => SiteResponse::ok(mime, body.clone()),
            Resource::Big(page) => SiteResponse::ok("text/html; charset=utf-8", Bytes::new())
                .with_body(Body::stream(
                    Some(page.len() as u64),
                    ChunkedBytes {
                        data: page.clone(),
                        pos: 0,
                    },
                )),
            Resource::Redirect { status, to } => SiteResponse::redirect(*status, to),
            Resource::Status(status) => SiteResponse::error(*status),
        }
    }
}

/// The other host: a page and a data file, both out of scope.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutsideSite;

impl Site for OutsideSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        match req.path.as_str() {
            "/" => SiteResponse::html(portal(
                "Partner",
                "<p><a href=\"/data.csv\">Partner data</a></p>",
            )),
            "/data.csv" => SiteResponse::ok("text/csv", csv(10)),
            "/robots.txt" => SiteResponse::ok("text/plain", "User-agent: *\nDisallow:\n"),
            _ => SiteResponse::not_found(),
        }
    }
}

/// Streams a body in 64 KiB chunks.
struct ChunkedBytes {
    data: Bytes,
    pos: usize,
}

impl ChunkSource for ChunkedBytes {
    fn next_chunk(&mut self) -> Option<Chunk> {
        if self.pos >= self.data.len() {
            return None;
        }
        let end = (self.pos + (64 << 10)).min(self.data.len());
        let chunk = self.data.slice(self.pos..end);
        self.pos = end;
        Some(Chunk::Data(chunk))
    }
}

fn page(title: &str, body_class: &str, inner: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body class=\"{body_class}\"><header><nav class=\"menu\"><ul>\
         <li><a href=\"/\">Home</a></li><li><a href=\"/data/\">Data</a></li>\
         <li><a href=\"/news/\">News</a></li><li><a href=\"/docs/\">Docs</a></li>\
         <li><a href=\"/about.html\">About</a></li></ul></nav></header>\
         {inner}<footer><p>© Fixture office</p></footer></body></html>\n"
    )
}

fn portal(title: &str, inner: &str) -> String {
    page(
        title,
        "portal",
        &format!("<main class=\"portal\"><h1>{title}</h1>{inner}</main>"),
    )
}

fn catalogue(title: &str, inner: &str) -> String {
    page(
        title,
        "catalogue",
        &format!("<div id=\"content\"><h1>{title}</h1>{inner}</div>"),
    )
}

fn blog(title: &str, inner: &str) -> String {
    page(
        title,
        "blog",
        &format!("<div class=\"blog\"><h1 class=\"title\">{title}</h1>{inner}</div>"),
    )
}

fn docs_page(title: &str, inner: &str) -> String {
    page(
        title,
        "docs",
        &format!(
            "<div class=\"document\"><div class=\"body\" role=\"main\"><h1>{title}</h1>{inner}\
             <p><a href=\"index.html\">Contents</a></p></div></div>"
        ),
    )
}

fn csv(rows: usize) -> String {
    let mut s = String::from("year,value\n");
    for r in 0..rows {
        let _ = writeln!(s, "{},{}", 2000 + r % 25, r * 37 % 1000);
    }
    s
}

fn binary(magic: &[u8], len: usize) -> Vec<u8> {
    let mut v = magic.to_vec();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(x as u8);
    }
    v
}

fn gzip(data: &[u8]) -> Bytes {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(data);
    Bytes::from(enc.finish().unwrap_or_default())
}

/// `/big.html`: [`BIG_PAGE_BYTES`] long, an early and a late target link.
fn big_page() -> Bytes {
    let head = page(
        "Full register",
        "register",
        "<main class=\"register\"><h1>Register</h1>\
         <p><a class=\"dl\" href=\"/big/early.csv\">First entries</a></p>",
    );
    // `page` closes the document; reopen the main part after its header.
    let head = head
        .split("<footer>")
        .next()
        .unwrap_or_default()
        .to_string();
    let tail = format!(
        "<p><a class=\"dl\" href=\"{LATE_TARGET}\">Last entries</a></p></main></body></html>\n"
    );
    let mut out = String::with_capacity(BIG_PAGE_BYTES as usize);
    out.push_str(&head);
    let filler = "<p>Entry: registered establishment, statistical unit, activity code 0000.</p>\n";
    while out.len() + tail.len() + filler.len() <= BIG_PAGE_BYTES as usize {
        out.push_str(filler);
    }
    while out.len() + tail.len() < BIG_PAGE_BYTES as usize {
        out.push(' ');
    }
    out.push_str(&tail);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groundtruth::{walk, WalkOptions};
    use std::collections::BTreeSet;
    use url::Url;

    fn start() -> Url {
        Url::parse(&format!("http://{FIXTURE_HOST}:8080/")).unwrap()
    }

    fn paths(urls: &BTreeSet<String>) -> Vec<String> {
        urls.iter()
            .map(|u| {
                let u = Url::parse(u).unwrap();
                match u.query() {
                    Some(q) => format!("{}?{q}", u.path()),
                    None => u.path().to_string(),
                }
            })
            .collect()
    }

    fn options(max_body: u64) -> WalkOptions {
        WalkOptions {
            max_body: max_body as usize,
            ..WalkOptions::statistics()
        }
    }

    #[test]
    fn ground_truth_matches_the_expectations() {
        let site = FixtureSite::new();
        let gt = walk(&site, FIXTURE_HOST, &start(), &options(FIXTURE_MAX_BODY));
        assert_eq!(paths(&gt.targets), site.expected_targets());
        assert_eq!(gt.pages, site.expected_pages().len());
        assert!(gt.holder_pages >= 8, "{}", gt.holder_pages);
        // Robots: the disallowed section is seen (links, a redirect hop) but never entered.
        let blocked = paths(&gt.robots_blocked);
        assert!(blocked
            .iter()
            .all(|p| p.starts_with(site.disallowed_prefix())));
        for p in ["/private/", "/private/secret.csv", "/private/report.pdf"] {
            assert!(
                blocked.contains(&p.to_string()),
                "{p} not seen as disallowed"
            );
        }
        assert!(site
            .disallowed_paths()
            .contains(&"/private/internal.html".to_string()));
        // The other host is out of scope.
        assert_eq!(gt.out_of_scope.len(), 2);
        assert!(gt.out_of_scope.iter().all(|u| u.contains(OUTSIDE_HOST)));
        assert_eq!(gt.redirect_loops, 1);
        let errors: BTreeMap<String, u16> = gt
            .errors
            .iter()
            .map(|(u, s)| (Url::parse(u).unwrap().path().to_string(), *s))
            .collect();
        assert_eq!(errors.get("/missing.html"), Some(&404));
        assert_eq!(errors.get("/data/files/missing.csv"), Some(&404));
        assert_eq!(errors.get("/data/broken.csv"), Some(&500));
        assert_eq!(gt.truncated_bodies, 1, "only /big.html is over the cap");
        // Images and the sources are neither.
        assert_eq!(gt.neither, 2 + 5);
    }

    #[test]
    fn a_bigger_cap_finds_the_late_target() {
        let site = FixtureSite::new();
        let gt = walk(&site, FIXTURE_HOST, &start(), &options(BIG_PAGE_BYTES));
        assert_eq!(
            paths(&gt.targets),
            site.expected_targets_for(BIG_PAGE_BYTES)
        );
        assert!(paths(&gt.targets).contains(&LATE_TARGET.to_string()));
        assert_eq!(gt.truncated_bodies, 0);
    }

    #[test]
    fn without_robots_the_private_section_is_reachable() {
        let site = FixtureSite::new();
        let opts = WalkOptions {
            robots: false,
            ..options(FIXTURE_MAX_BODY)
        };
        let gt = walk(&site, FIXTURE_HOST, &start(), &opts);
        let found = paths(&gt.targets);
        assert!(found.contains(&"/private/secret.csv".to_string()));
        assert!(found.contains(&"/private/report.pdf".to_string()));
    }

    #[test]
    fn robots_txt_and_special_responses() {
        let site = FixtureSite::new().with_crawl_delay(Some(Duration::from_millis(250)));
        let get = |p: &str| site.respond(&SiteRequest::get(FIXTURE_HOST, p));
        let robots = String::from_utf8(get("/robots.txt").body.read_capped(4096).bytes).unwrap();
        assert!(robots.contains("Disallow: /private/"));
        assert!(robots.contains("Crawl-delay: 0.25"));
        let rules = forager::fetch::RobotsRules::from_record(
            forager::fetch::RobotsRecord::new(
                "http://fixture.test:80".into(),
                forager::fetch::RobotsStatus::Fetched,
                robots.into_bytes(),
                std::time::UNIX_EPOCH,
            ),
            "forager/0.1",
        );
        assert_eq!(rules.crawl_delay(), Some(Duration::from_millis(250)));
        assert!(!rules.allowed(&Url::parse("http://fixture.test/private/x").unwrap()));
        assert!(rules.allowed(&Url::parse("http://fixture.test/data/").unwrap()));
        let no_delay = FixtureSite::new().with_crawl_delay(None);
        let text = no_delay
            .respond(&SiteRequest::get(FIXTURE_HOST, "/robots.txt"))
            .body
            .read_capped(4096)
            .bytes;
        assert!(!String::from_utf8(text).unwrap().contains("Crawl-delay"));

        let gz = get("/archive/");
        assert_eq!(gz.header_str(header::CONTENT_ENCODING), Some("gzip"));
        let raw = gz.body.read_capped(1 << 20).bytes;
        let mut html = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&raw[..]), &mut html)
            .unwrap();
        assert!(html.contains("old-2019.csv"));

        let big = get("/big.html");
        assert_eq!(big.body.len(), Some(BIG_PAGE_BYTES));
        let bytes = big.body.read_capped(usize::MAX).bytes;
        assert_eq!(bytes.len() as u64, BIG_PAGE_BYTES);
        let late = String::from_utf8_lossy(&bytes).rfind(LATE_TARGET).unwrap();
        assert!(
            late as u64 > BIG_PAGE_BYTES - 200,
            "late link at the very end"
        );
        assert!(String::from_utf8_lossy(&bytes).ends_with("</html>\n"));

        for p in site.blocked_by_extension() {
            assert!(get(&p)
                .content_type()
                .is_some_and(|c| c.starts_with("image/")));
        }
        assert_eq!(get("/go/1").location(), Some("/go/2"));
        assert_eq!(get("/nope").status, StatusCode::NOT_FOUND);
        assert_eq!(get("/data/export?id=3&format=json").status, StatusCode::OK);
        assert_eq!(
            get("/data/export?format=json&id=3").status,
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn site_is_small_and_deterministic() {
        let a = FixtureSite::new();
        assert!(
            (30..=70).contains(&a.resources.len()),
            "{}",
            a.resources.len()
        );
        let b = FixtureSite::new();
        for p in a.resources.keys() {
            let ra = a.respond(&SiteRequest::get(FIXTURE_HOST, p));
            let rb = b.respond(&SiteRequest::get(FIXTURE_HOST, p));
            assert_eq!(ra.status, rb.status);
            assert_eq!(ra.body.read_capped(1 << 22), rb.body.read_capped(1 << 22));
        }
    }

    /// Over HTTP: GET, HEAD, 404, redirects and gzip as a crawler sees them.
    #[tokio::test]
    async fn served_over_http() {
        let server = crate::sites::SiteServer::start(FixtureSite::new().sites())
            .await
            .unwrap();
        let client = |gzip: bool| {
            let mut b = reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .resolve(FIXTURE_HOST, server.addr())
                .resolve(OUTSIDE_HOST, server.addr());
            if !gzip {
                b = b.no_gzip();
            }
            b.build().unwrap()
        };
        let base = server.url_for(FIXTURE_HOST).unwrap();
        let c = client(true);
        let home = c.get(base.clone()).send().await.unwrap();
        assert_eq!(home.status(), 200);
        assert!(home.text().await.unwrap().contains("/data/"));
        let head = c.head(base.join("big.html").unwrap()).send().await.unwrap();
        assert_eq!(head.headers()["content-length"], BIG_PAGE_BYTES.to_string());
        let big = c.get(base.join("big.html").unwrap()).send().await.unwrap();
        assert_eq!(big.bytes().await.unwrap().len() as u64, BIG_PAGE_BYTES);
        let missing = c
            .get(base.join("missing.html").unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(missing.status(), 404);
        let hop = c.get(base.join("go/1").unwrap()).send().await.unwrap();
        assert_eq!(hop.status(), 301);
        assert_eq!(hop.headers()["location"], "/go/2");
        // reqwest inflates gzip itself; without it the encoding shows.
        let archive = base.join("archive/").unwrap();
        let text = c
            .get(archive.clone())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(text.contains("old-2019.csv"));
        let raw = client(false).get(archive).send().await.unwrap();
        assert_eq!(raw.headers()["content-encoding"], "gzip");
        let outside = server
            .url_for(OUTSIDE_HOST)
            .unwrap()
            .join("data.csv")
            .unwrap();
        assert_eq!(c.get(outside).send().await.unwrap().status(), 200);
        let log = server.log();
        assert_eq!(log.len(), 8);
        assert_eq!(log[1].method, axum::http::Method::HEAD);
        assert_eq!(log[2].bytes, BIG_PAGE_BYTES);
        assert_eq!(log.last().unwrap().host, OUTSIDE_HOST);
        server.shutdown().await.unwrap();
    }
}
