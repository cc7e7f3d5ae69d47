//! A web of many hosts, a few of which embed structured data, for
//! structured-data jobs and their benchmark (ARCHITECTURE.md
//! § Structured data).
//!
//! Host `i` of `n` is `site{i:04}.test` (each its own pay-level domain), of
//! one kind: hosts 0–4 are one of each kind (so that a small web has them
//! all), later ones are drawn from the seed — about 8 % shops, 6 % recipe
//! blogs, 5 % event sites, 8 % news sites and 73 % hosts with no structured
//! data at all (the Anthelion paper's web is sparse in structured data: most
//! hosts have none).
//!
//! Every host has a home page `/`, listing pages (`/category/{k}` and the
//! like, one per eight items) that list its items, an `/about` page, and its
//! items (`/product/{j}`, `/post/{j}`, `/event/{j}`, `/article/{j}`,
//! `/page/{j}`), reachable only through a listing page and their neighbours.
//! Items carry their kind's markup, and not all of them enough of it:
//!
//! - shops: JSON-LD schema.org `Product` with brand and offer (12
//!   statements), or, for one in five, only a name and SKU (3);
//! - recipe blogs: microdata `Recipe` with author and ingredients (10 or
//!   more), or a bare `Recipe` name (2), or a plain post;
//! - event sites: RDFa `Event` with place (8, `usesVocabulary` included), or
//!   a bare `Event` name (3);
//! - news sites: JSON-LD `NewsArticle` with author and publisher (9) for
//!   two articles in five, a `WebPage` name (2) or nothing for the others;
//! - other hosts: plain pages, one in ten with a JSON-LD `Organization` (2).
//!
//! Cross-host links: a home page's partners (its successor in a ring, so
//! that every host is reachable, and two others, one of them of its own kind
//! half the time, as blogrolls are), an item's "related" link to an item
//! anywhere, and an ad on every item and listing pointing at a shop's
//! product. The seeds are the home pages of hosts 4 and 5, which have no
//! structured data. Every answer is an HTML page; whether a page is relevant
//! is for the extractor to say (the benchmark's ground truth runs it on every
//! page), the labels here only choose the markup. The web is a pure function
//! of its parameters.

use super::rng::{hash, unit_of, Rng};
use super::server::{Site, SiteRequest, SiteResponse};
use std::sync::Arc;

/// The parameters of a structured-data web; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructuredWeb {
    pub hosts: usize,
    /// Items per host.
    pub per_host: usize,
    pub seed: u64,
    /// Every host under one registrable domain (`site0001.web.test`), so
    /// that politeness per pay-level domain makes the web one key; else
    /// each host is a registrable domain of its own (`site0001.test`).
    pub one_domain: bool,
}

/// What a host is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostKind {
    Shop,
    Recipes,
    Events,
    News,
    /// No structured data worth the name.
    Plain,
}

/// The markup the generator put on an item: what it meant, not what the
/// extractor finds (the ground truth asks the extractor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Markup {
    /// A full description (meant to reach 6 statements).
    Full,
    /// A few statements (meant to stay under 6).
    Thin,
    None,
}

/// Items per listing page.
const PER_LISTING: usize = 8;

impl HostKind {
    /// The path segments of its listing pages and its items.
    fn paths(self) -> (&'static str, &'static str) {
        match self {
            HostKind::Shop => ("category", "product"),
            HostKind::Recipes => ("tag", "post"),
            HostKind::Events => ("calendar", "event"),
            HostKind::News => ("section", "article"),
            HostKind::Plain => ("topic", "page"),
        }
    }
}

impl StructuredWeb {
    pub fn new(hosts: usize, per_host: usize, seed: u64) -> StructuredWeb {
        StructuredWeb {
            // One host of each kind and the two seeds.
            hosts: hosts.max(6),
            per_host: per_host.max(1),
            seed,
            one_domain: false,
        }
    }

    /// The same web with every host under one registrable domain.
    pub fn under_one_domain(self) -> StructuredWeb {
        StructuredWeb {
            one_domain: true,
            ..self
        }
    }

    pub fn host_name(&self, i: usize) -> String {
        if self.one_domain {
            format!("site{i:04}.web.test")
        } else {
            format!("site{i:04}.test")
        }
    }

    pub fn kind(&self, i: usize) -> HostKind {
        const FIRST: [HostKind; 6] = [
            HostKind::Shop,
            HostKind::Recipes,
            HostKind::Events,
            HostKind::News,
            HostKind::Plain,
            HostKind::Plain,
        ];
        if let Some(k) = FIRST.get(i) {
            return *k;
        }
        match unit_of(hash(self.seed, &[10, i as u64])) {
            u if u < 0.08 => HostKind::Shop,
            u if u < 0.14 => HostKind::Recipes,
            u if u < 0.19 => HostKind::Events,
            u if u < 0.27 => HostKind::News,
            _ => HostKind::Plain,
        }
    }

    /// Listing pages per host.
    pub fn listings(&self) -> usize {
        self.per_host.div_ceil(PER_LISTING)
    }

    /// Every host, each its own [`Site`], for [`super::SiteServer::start`].
    pub fn sites(&self) -> Vec<(String, Arc<dyn Site>)> {
        (0..self.hosts)
            .map(|i| {
                let site: Arc<dyn Site> = Arc::new(StructuredHost {
                    web: *self,
                    index: i,
                });
                (self.host_name(i), site)
            })
            .collect()
    }

    /// The seeds of a crawl: two home pages without structured data.
    pub fn seeds(&self) -> Vec<String> {
        vec![self.home(4), self.home(5)]
    }

    pub fn home(&self, i: usize) -> String {
        format!("http://{}/", self.host_name(i))
    }

    pub fn listing_url(&self, i: usize, k: usize) -> String {
        let (list, _) = self.kind(i).paths();
        format!("http://{}/{list}/{k}", self.host_name(i))
    }

    pub fn item_url(&self, i: usize, j: usize) -> String {
        let (_, item) = self.kind(i).paths();
        format!("http://{}/{item}/{j}", self.host_name(i))
    }

    /// Every page of the web (all of them reachable from the seeds).
    pub fn pages(&self) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..self.hosts {
            out.push(self.home(i));
            out.push(format!("http://{}/about", self.host_name(i)));
            out.extend((0..self.listings()).map(|k| self.listing_url(i, k)));
            out.extend((0..self.per_host).map(|j| self.item_url(i, j)));
        }
        out
    }

    /// The markup of item `j` of host `i`.
    pub fn markup(&self, i: usize, j: usize) -> Markup {
        let u = unit_of(hash(self.seed, &[11, i as u64, j as u64]));
        match self.kind(i) {
            HostKind::Shop | HostKind::Events if u < 0.8 => Markup::Full,
            HostKind::Shop | HostKind::Events => Markup::Thin,
            HostKind::Recipes if u < 0.65 => Markup::Full,
            HostKind::Recipes if u < 0.8 => Markup::Thin,
            HostKind::News if u < 0.4 => Markup::Full,
            HostKind::News if u < 0.7 => Markup::Thin,
            HostKind::Plain if u < 0.1 => Markup::Thin,
            _ => Markup::None,
        }
    }

    /// A host other than `i`, of kind `kind` when there is one among a few
    /// draws (else any).
    fn other_host(&self, rng: &mut Rng, i: usize, kind: Option<HostKind>) -> usize {
        let mut any = None;
        for _ in 0..16 {
            let h = rng.below(self.hosts as u64) as usize;
            if h == i {
                continue;
            }
            any.get_or_insert(h);
            if kind.is_none_or(|k| self.kind(h) == k) {
                return h;
            }
        }
        any.unwrap_or((i + 1) % self.hosts)
    }

    /// A product of a shop other than `i` (an ad); host 0 is a shop.
    fn ad(&self, rng: &mut Rng, i: usize) -> String {
        let h = self.other_host(rng, i, Some(HostKind::Shop));
        let h = if self.kind(h) == HostKind::Shop { h } else { 0 };
        self.item_url(h, rng.below(self.per_host as u64) as usize)
    }

    fn home_page(&self, i: usize) -> String {
        let kind = self.kind(i);
        let host = self.host_name(i);
        let mut rng = Rng::new(self.seed, &[12, i as u64]);
        let mut html = format!(
            "<!doctype html><html><head><title>{host}</title>{}</head><body><nav>",
            organization(kind, &host, unit_of(hash(self.seed, &[13, i as u64])))
        );
        for k in 0..self.listings() {
            html.push_str(&format!(
                "<a href=\"{}\">Section {k}</a> ",
                self.listing_url(i, k)
            ));
        }
        html.push_str(
            "<a href=\"/about\">About</a></nav><aside class=\"partners\"><h2>Friends</h2><ul>",
        );
        let ring = (i + 1) % self.hosts;
        let same = self.other_host(&mut rng, i, Some(kind));
        let any = self.other_host(&mut rng, i, None);
        for h in [ring, same, any] {
            html.push_str(&format!(
                "<li><a href=\"{}\">{}</a></li>",
                self.home(h),
                self.host_name(h)
            ));
        }
        html.push_str("</ul></aside></body></html>");
        html
    }

    fn listing_page(&self, i: usize, k: usize) -> String {
        let mut rng = Rng::new(self.seed, &[14, i as u64, k as u64]);
        let mut html = format!(
            "<!doctype html><html><head><title>Section {k}</title></head><body><a href=\"/\">Home</a><ul class=\"items\">"
        );
        for j in (k..self.per_host).step_by(self.listings()) {
            html.push_str(&format!(
                "<li><a href=\"{}\">Item {j}</a></li>",
                self.item_url(i, j)
            ));
        }
        html.push_str(&format!(
            "</ul><div class=\"ad\"><a href=\"{}\">Special offer</a></div></body></html>",
            self.ad(&mut rng, i)
        ));
        html
    }

    fn item_page(&self, i: usize, j: usize) -> String {
        let kind = self.kind(i);
        let mut rng = Rng::new(self.seed, &[15, i as u64, j as u64]);
        let (head, body) = item_markup(kind, self.markup(i, j), j, &mut rng);
        let k = j % self.listings();
        let mut html = format!(
            "<!doctype html><html><head><title>Item {j}</title>{head}</head><body><nav><a href=\"/\">Home</a> <a href=\"{}\">Section {k}</a></nav><main>{body}<p>Some words about item {j}.</p></main><nav class=\"pager\">",
            self.listing_url(i, k)
        );
        if j > 0 {
            html.push_str(&format!(
                "<a href=\"{}\">Previous</a> ",
                self.item_url(i, j - 1)
            ));
        }
        if j + 1 < self.per_host {
            html.push_str(&format!("<a href=\"{}\">Next</a>", self.item_url(i, j + 1)));
        }
        let h = self.other_host(&mut rng, i, None);
        let related = self.item_url(h, rng.below(self.per_host as u64) as usize);
        html.push_str(&format!(
            "</nav><div class=\"related\"><a href=\"{related}\">You may also like</a></div><div class=\"ad\"><a href=\"{}\">Special offer</a></div></body></html>",
            self.ad(&mut rng, i)
        ));
        html
    }
}

/// A home page's JSON-LD `Organization` (2 statements), on one plain host in ten.
fn organization(kind: HostKind, host: &str, u: f64) -> String {
    if kind == HostKind::Plain && u < 0.1 {
        format!(
            r#"<script type="application/ld+json">{{"@context": "https://schema.org", "@type": "Organization", "name": "{host}"}}</script>"#
        )
    } else {
        String::new()
    }
}

/// The head and body markup of an item.
fn item_markup(kind: HostKind, markup: Markup, j: usize, rng: &mut Rng) -> (String, String) {
    let ld = |json: String| format!(r#"<script type="application/ld+json">{json}</script>"#);
    match (kind, markup) {
        (_, Markup::None) => (String::new(), format!("<h1>Item {j}</h1>")),
        (HostKind::Shop, Markup::Full) => (
            ld(format!(
                r#"{{"@context": "https://schema.org", "@type": "Product", "name": "Item {j}", "sku": "SKU-{j}", "description": "A fine thing", "brand": {{"@type": "Brand", "name": "Acme"}}, "offers": {{"@type": "Offer", "price": "{}.99", "priceCurrency": "EUR", "availability": "https://schema.org/InStock"}}}}"#,
                rng.between(3, 300)
            )),
            format!("<h1>Item {j}</h1>"),
        ),
        (HostKind::Shop, Markup::Thin) => (
            ld(format!(
                r#"{{"@context": "https://schema.org", "@type": "Product", "name": "Item {j}", "sku": "SKU-{j}"}}"#
            )),
            format!("<h1>Item {j}</h1>"),
        ),
        (HostKind::Recipes, Markup::Full) => {
            let mut body = format!(
                r#"<div itemscope itemtype="http://schema.org/Recipe"><h1 itemprop="name">Dish {j}</h1><div itemprop="author" itemscope itemtype="http://schema.org/Person"><span itemprop="name">Cook {}</span></div><time itemprop="cookTime" datetime="PT{}M">soon</time><ul>"#,
                rng.below(20),
                rng.between(10, 90)
            );
            for n in 0..rng.between(3, 6) {
                body.push_str(&format!(
                    r#"<li itemprop="recipeIngredient">ingredient {n}</li>"#
                ));
            }
            body.push_str("</ul></div>");
            (String::new(), body)
        }
        (HostKind::Recipes, Markup::Thin) => (
            String::new(),
            format!(
                r#"<div itemscope itemtype="http://schema.org/Recipe"><h1 itemprop="name">Dish {j}</h1></div>"#
            ),
        ),
        (HostKind::Events, Markup::Full) => (
            String::new(),
            format!(
                r#"<div vocab="http://schema.org/" typeof="Event"><h1 property="name">Event {j}</h1><time property="startDate" datetime="2025-{:02}-{:02}">then</time><div property="location" typeof="Place"><span property="name">Hall {}</span></div><p property="description">Come along.</p></div>"#,
                rng.between(1, 12),
                rng.between(1, 28),
                rng.below(10)
            ),
        ),
        (HostKind::Events, Markup::Thin) => (
            String::new(),
            format!(
                r#"<div vocab="http://schema.org/" typeof="Event"><h1 property="name">Event {j}</h1></div>"#
            ),
        ),
        (HostKind::News, Markup::Full) => (
            ld(format!(
                r#"{{"@context": "https://schema.org", "@type": "NewsArticle", "headline": "News {j}", "datePublished": "2025-03-{:02}", "author": {{"@type": "Person", "name": "Reporter {}"}}, "publisher": {{"@type": "Organization", "name": "The Daily"}}}}"#,
                rng.between(1, 28),
                rng.below(10)
            )),
            format!("<h1>News {j}</h1>"),
        ),
        // A news site's WebPage and a plain page's Organization: 2 statements.
        (HostKind::News | HostKind::Plain, Markup::Thin) => (
            ld(format!(
                r#"{{"@context": "https://schema.org", "@type": "WebPage", "name": "Page {j}"}}"#
            )),
            format!("<h1>Page {j}</h1>"),
        ),
        // The generator never gives a plain host full markup.
        (HostKind::Plain, Markup::Full) => (String::new(), format!("<h1>Item {j}</h1>")),
    }
}

/// One host of a [`StructuredWeb`].
struct StructuredHost {
    web: StructuredWeb,
    index: usize,
}

impl Site for StructuredHost {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path_and_query();
        let web = &self.web;
        let (list, item) = web.kind(self.index).paths();
        let number = |prefix: &str, below: usize| {
            path.strip_prefix('/')
                .and_then(|p| p.strip_prefix(prefix))
                .and_then(|p| p.strip_prefix('/'))
                .and_then(|j| j.parse::<usize>().ok())
                .filter(|&j| j < below)
        };
        if path == "/" {
            return SiteResponse::html(web.home_page(self.index));
        }
        if path == "/about" {
            return SiteResponse::html(format!(
                "<!doctype html><html><head><title>About</title></head><body><p>About {}.</p><a href=\"/\">Home</a></body></html>",
                self.web.host_name(self.index)
            ));
        }
        if let Some(k) = number(list, web.listings()) {
            return SiteResponse::html(web.listing_page(self.index, k));
        }
        if let Some(j) = number(item, web.per_host) {
            return SiteResponse::html(web.item_page(self.index, j));
        }
        SiteResponse::not_found()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet, VecDeque};

    /// Every `href` of a page (the generator's links are all absolute or
    /// root-relative), made absolute.
    fn hrefs(host: &str, html: &str) -> Vec<String> {
        html.split("href=\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .map(|h| {
                if h.starts_with('/') {
                    format!("http://{host}{h}")
                } else {
                    h.to_string()
                }
            })
            .collect()
    }

    #[test]
    fn every_page_is_reachable_from_the_seeds_and_answers_html() {
        let web = StructuredWeb::new(40, 12, 5);
        let sites: HashMap<String, Arc<dyn Site>> = web.sites().into_iter().collect();
        let mut seen: HashSet<String> = web.seeds().into_iter().collect();
        let mut queue: VecDeque<String> = seen.iter().cloned().collect();
        while let Some(u) = queue.pop_front() {
            let url = url::Url::parse(&u).unwrap();
            let host = url.host_str().unwrap();
            let resp = sites[host].respond(&SiteRequest::get(host, url.path()));
            assert_eq!(resp.status, 200, "{u}");
            assert_eq!(resp.content_type(), Some("text/html; charset=utf-8"), "{u}");
            let body = String::from_utf8(resp.body.read_capped(1 << 20).bytes).unwrap();
            for l in hrefs(host, &body) {
                if seen.insert(l.clone()) {
                    queue.push_back(l);
                }
            }
        }
        let pages: HashSet<String> = web.pages().into_iter().collect();
        assert_eq!(seen, pages, "exactly the web's pages are reachable");
    }

    #[test]
    fn most_hosts_have_no_structured_data_and_every_kind_exists() {
        let web = StructuredWeb::new(300, 10, 1);
        let kinds: Vec<HostKind> = (0..web.hosts).map(|i| web.kind(i)).collect();
        let plain = kinds.iter().filter(|&&k| k == HostKind::Plain).count();
        assert!((180..260).contains(&plain), "{plain} plain hosts of 300");
        for k in [
            HostKind::Shop,
            HostKind::Recipes,
            HostKind::Events,
            HostKind::News,
        ] {
            assert!(kinds.contains(&k), "{k:?}");
        }
        // Full, thin and bare items all occur.
        let marks: HashSet<Markup> = (0..web.hosts)
            .flat_map(|i| (0..10).map(move |j| (i, j)))
            .map(|(i, j)| web.markup(i, j))
            .collect();
        assert_eq!(marks.len(), 3);
        assert_eq!(web, StructuredWeb::new(300, 10, 1));
        assert_eq!(
            web.item_page(0, 3),
            StructuredWeb::new(300, 10, 1).item_page(0, 3),
            "a pure function of its parameters"
        );
    }
}
