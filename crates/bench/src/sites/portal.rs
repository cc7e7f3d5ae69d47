//! Open-data portals whose catalogs reach files their HTML does not.
//!
//! [`Portal`] is CKAN-shaped: a home page, HTML listing pages of datasets
//! (ten a page), a page per dataset linking its files, and the CKAN Action
//! API's `package_search` answering JSON pages of `rows` datasets from
//! `start` (CKAN's own paging; at most 1 000 rows, its cap). Every
//! `api_only_every`-th dataset is *unlisted*: no HTML page links it, so its
//! files are reachable only through the API. [`DcatSite`] is a statistics
//! office with a few HTML pages and a DCAT catalog at `/catalog.ttl`, some
//! of whose distributions no page links. [`LyingPortal`] publishes catalogs
//! that lie: an API that claims 10⁹ datasets and pages on forever, whose
//! entries are HTML pages and dead links, and a `data.json` of 10⁶ entries.
//! [`FormSite`] keeps most of its tables behind a GET form (a year select
//! and region radios), beside a search form and a POST form;
//! [`HostileFormSite`] has a form of 10⁹ combinations. [`MarkupSite`]'s
//! dataset pages name files only in their schema.org `DataDownload`
//! markup, and its home page announces, by `<link rel="alternate">` only,
//! a DCAT catalog of more.
//! [`ScriptPortal`] draws its dataset list with a script from a JSON API;
//! [`HostileScripts`] serves pages whose scripts loop, reach for a private
//! address, never let the network idle, or ask for a thousand URLs.
//!
//! Each is a pure function of its parameters: the ground truth
//! ([`Portal::files`], [`DcatSite::files`]) needs no crawl. Must not know
//! anything of the crawl.

use super::server::{Site, SiteRequest, SiteResponse};
use std::fmt::Write;

/// Datasets listed per HTML listing page.
const PER_LISTING: usize = 10;
/// CKAN's cap on `rows`.
const CKAN_MAX_ROWS: usize = 1000;

/// A CKAN-shaped portal; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Portal {
    pub datasets: usize,
    pub files_per_dataset: usize,
    /// Every this many datasets is unlisted (reachable only through the API).
    pub api_only_every: usize,
    /// robots.txt disallows the API (`/api/`).
    pub robots_disallow_api: bool,
}

impl Default for Portal {
    fn default() -> Self {
        Portal {
            datasets: 30,
            files_per_dataset: 2,
            api_only_every: 3,
            robots_disallow_api: false,
        }
    }
}

impl Portal {
    fn unlisted(&self, d: usize) -> bool {
        self.api_only_every > 0 && d % self.api_only_every == 0
    }

    fn listed(&self) -> Vec<usize> {
        (0..self.datasets).filter(|&d| !self.unlisted(d)).collect()
    }

    fn file_path(d: usize, f: usize) -> String {
        format!("/files/ds-{d}-{f}.csv")
    }

    /// Every file's path (the ground truth), and whether only the API reaches it.
    pub fn files(&self) -> Vec<(String, bool)> {
        (0..self.datasets)
            .flat_map(|d| {
                (0..self.files_per_dataset).map(move |f| (Self::file_path(d, f), self.unlisted(d)))
            })
            .collect()
    }

    fn home(&self) -> String {
        let pages = self.listed().len().div_ceil(PER_LISTING).max(1);
        let mut h = String::from("<html><body><h1>Open data portal</h1><nav><a href=\"/about\">about</a></nav><ul class=\"pages\">");
        for p in 1..=pages {
            let _ = write!(h, "<li><a href=\"/dataset?page={p}\">page {p}</a></li>");
        }
        h.push_str("</ul></body></html>");
        h
    }

    fn listing(&self, page: usize) -> Option<String> {
        let listed = self.listed();
        let start = page.checked_sub(1)? * PER_LISTING;
        if start >= listed.len() {
            return None;
        }
        let mut h = String::from("<html><body><a href=\"/\">home</a><ul class=\"datasets\">");
        for d in listed.iter().skip(start).take(PER_LISTING) {
            let _ = write!(h, "<li><a href=\"/dataset/ds-{d}\">dataset {d}</a></li>");
        }
        h.push_str("</ul></body></html>");
        Some(h)
    }

    fn dataset(&self, d: usize) -> String {
        let mut h = format!(
            "<html><body><a href=\"/\">home</a><h1>dataset {d}</h1><ul class=\"resources\">"
        );
        for f in 0..self.files_per_dataset {
            let _ = write!(
                h,
                "<li><a href=\"{}\">file {f}</a></li>",
                Self::file_path(d, f)
            );
        }
        h.push_str("</ul></body></html>");
        h
    }

    fn package_search(&self, req: &SiteRequest) -> String {
        let mut start = 0usize;
        let mut rows = 10usize;
        for (k, v) in req.query_pairs() {
            match k.as_str() {
                "start" => start = v.parse().unwrap_or(0),
                "rows" => rows = v.parse().unwrap_or(10).min(CKAN_MAX_ROWS),
                _ => {}
            }
        }
        let host = &req.host;
        let results: Vec<serde_json::Value> = (start..self.datasets)
            .take(rows)
            .map(|d| {
                let resources: Vec<serde_json::Value> = (0..self.files_per_dataset)
                    .map(|f| {
                        serde_json::json!({
                            "id": format!("r-{d}-{f}"),
                            "format": "CSV",
                            "url": format!("http://{host}{}", Self::file_path(d, f)),
                        })
                    })
                    .collect();
                serde_json::json!({"name": format!("ds-{d}"), "private": false, "resources": resources})
            })
            .collect();
        serde_json::json!({
            "help": format!("http://{host}/api/3/action/help_show?name=package_search"),
            "success": true,
            "result": {"count": self.datasets, "results": results},
        })
        .to_string()
    }
}

fn csv(path: &str) -> SiteResponse {
    SiteResponse::ok("text/csv", format!("id,path\n1,{path}\n"))
}

impl Site for Portal {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        if path == "/" {
            return SiteResponse::html(self.home());
        }
        if path == "/robots.txt" && self.robots_disallow_api {
            return SiteResponse::ok("text/plain", "User-agent: *\nDisallow: /api/\n");
        }
        if path == "/about" {
            return SiteResponse::html("<html><body><a href=\"/\">home</a> about us</body></html>");
        }
        if path == "/dataset" {
            let page = req
                .query_pairs()
                .into_iter()
                .find(|(k, _)| k == "page")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(1);
            return match self.listing(page) {
                Some(h) => SiteResponse::html(h),
                None => SiteResponse::not_found(),
            };
        }
        if let Some(d) = path
            .strip_prefix("/dataset/ds-")
            .and_then(|d| d.parse::<usize>().ok())
        {
            if d < self.datasets && !self.unlisted(d) {
                return SiteResponse::html(self.dataset(d));
            }
            return SiteResponse::not_found();
        }
        if path == "/api/3/action/package_search" {
            return SiteResponse::ok("application/json", self.package_search(req));
        }
        if self.files().iter().any(|(p, _)| p == path) {
            return csv(path);
        }
        SiteResponse::not_found()
    }
}

/// A statistics office with a DCAT catalog; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcatSite {
    pub tables: usize,
    /// Every this many tables is linked from no page (only the catalog has it).
    pub catalog_only_every: usize,
}

impl Default for DcatSite {
    fn default() -> Self {
        DcatSite {
            tables: 12,
            catalog_only_every: 2,
        }
    }
}

impl DcatSite {
    fn catalog_only(&self, t: usize) -> bool {
        self.catalog_only_every > 0 && t % self.catalog_only_every == 0
    }

    /// Every table's path, and whether only the catalog reaches it.
    pub fn files(&self) -> Vec<(String, bool)> {
        (0..self.tables)
            .map(|t| (format!("/tables/t{t}.csv"), self.catalog_only(t)))
            .collect()
    }

    fn catalog(&self, host: &str) -> String {
        let mut ttl = String::from(
            "@prefix dcat: <http://www.w3.org/ns/dcat#> .\n@prefix dct: <http://purl.org/dc/terms/> .\n",
        );
        let _ = writeln!(ttl, "<http://{host}/catalog> a dcat:Catalog .");
        for t in 0..self.tables {
            let _ = writeln!(
                ttl,
                "<http://{host}/catalog> dcat:dataset <http://{host}/ds/{t}> .\n<http://{host}/ds/{t}> a dcat:Dataset ; dct:title \"Table {t}\" ; dcat:distribution [ a dcat:Distribution ; dcat:mediaType \"text/csv\" ; dcat:downloadURL <http://{host}/tables/t{t}.csv> ] ."
            );
        }
        ttl
    }
}

impl Site for DcatSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        match path {
            "/" => {
                let mut h = String::from("<html><head><link rel=\"alternate\" type=\"text/turtle\" href=\"/catalog.ttl\"></head><body><h1>Statistics</h1><ul>");
                for (p, only) in self.files() {
                    if !only {
                        let _ = write!(h, "<li><a href=\"{p}\">{p}</a></li>");
                    }
                }
                h.push_str("</ul><a href=\"/methods\">methods</a></body></html>");
                SiteResponse::html(h)
            }
            "/methods" => SiteResponse::html("<html><body><a href=\"/\">home</a></body></html>"),
            "/catalog.ttl" => SiteResponse::ok("text/turtle", self.catalog(&req.host)),
            _ if self.files().iter().any(|(p, _)| p == path) => csv(path),
            _ => SiteResponse::not_found(),
        }
    }
}

/// Catalogs that lie; see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LyingPortal;

/// Entries per page of the lying API.
pub const LYING_PER_PAGE: usize = 10;
/// Entries of the lying `data.json`.
pub const LYING_DATA_JSON_ENTRIES: usize = 1_000_000;

impl Site for LyingPortal {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        match path {
            "/" => SiteResponse::html(
                "<html><body><a href=\"/files/real.csv\">the one real file</a></body></html>",
            ),
            "/files/real.csv" => csv(path),
            "/api/3/action/package_search" => {
                let start: usize = req
                    .query_pairs()
                    .into_iter()
                    .find(|(k, _)| k == "start")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                // Half the entries are HTML pages, half dead links.
                let results: Vec<serde_json::Value> = (0..LYING_PER_PAGE)
                    .map(|i| {
                        let n = start + i;
                        let url = if i % 2 == 0 {
                            format!("/page/{n}")
                        } else {
                            format!("/dead/{n}.csv")
                        };
                        serde_json::json!({"resources": [{"url": url}]})
                    })
                    .collect();
                SiteResponse::ok(
                    "application/json",
                    serde_json::json!({"success": true, "result": {"count": 1_000_000_000u64, "results": results}})
                        .to_string(),
                )
            }
            "/data.json" => {
                let mut body = String::with_capacity(LYING_DATA_JSON_ENTRIES * 60);
                body.push_str("{\"dataset\":[");
                for i in 0..LYING_DATA_JSON_ENTRIES {
                    if i > 0 {
                        body.push(',');
                    }
                    let _ = write!(
                        body,
                        "{{\"distribution\":[{{\"downloadURL\":\"/dead/j{i}.csv\"}}]}}"
                    );
                }
                body.push_str("]}");
                SiteResponse::ok("application/json", body)
            }
            p if p.starts_with("/page/") => {
                SiteResponse::html("<html><body>nothing here</body></html>")
            }
            _ => SiteResponse::not_found(),
        }
    }
}

/// A statistics office whose tables sit behind a GET form; see
/// [`FormSite::files`]. Its home page links the form page, a few "popular"
/// tables' result pages, a search form and a POST form (neither of which a
/// crawler should submit). The form page's form chooses a year (a
/// `<select>`) and a region (radio buttons); each submission is a result
/// page linking one CSV file. Every `linked_every`-th table is also linked
/// from the home page; the rest are reachable only through the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormSite {
    pub years: usize,
    pub regions: usize,
    pub linked_every: usize,
}

impl Default for FormSite {
    fn default() -> Self {
        FormSite {
            years: 10,
            regions: 4,
            linked_every: 4,
        }
    }
}

/// First year of [`FormSite`]'s select.
const FIRST_YEAR: usize = 2015;

impl FormSite {
    fn linked(&self, t: usize) -> bool {
        self.linked_every > 0 && t % self.linked_every == 0
    }

    fn result_path(&self, t: usize) -> String {
        let (y, r) = (t / self.regions, t % self.regions);
        format!("/tables?year={}&region=r{r}", FIRST_YEAR + y)
    }

    fn file_path(y: usize, r: usize) -> String {
        format!("/files/t-{}-r{r}.csv", FIRST_YEAR + y)
    }

    /// Every table's file, and whether only a form reaches it: the tables
    /// of the result pages, then a year's whole table, which the download
    /// form answers directly (a file whose own link is a form's).
    pub fn files(&self) -> Vec<(String, bool)> {
        let tables = (0..self.years * self.regions).map(|t| {
            let (y, r) = (t / self.regions, t % self.regions);
            (Self::file_path(y, r), !self.linked(t))
        });
        let years = (0..self.years).map(|y| (format!("/download?year={}", FIRST_YEAR + y), true));
        tables.chain(years).collect()
    }

    fn home(&self) -> String {
        let mut h = String::from(
            "<html><body><h1>Statistics office</h1>\
             <form role=\"search\" action=\"/search\"><input name=\"q\"><select name=\"in\"><option value=\"all\"><option value=\"tables\"></select></form>\
             <form method=\"post\" action=\"/subscribe\"><select name=\"topic\"><option value=\"a\"><option value=\"b\"></select></form>\
             <p><a href=\"/query\">choose a table</a></p><ul class=\"popular\">",
        );
        for t in (0..self.years * self.regions).filter(|&t| self.linked(t)) {
            let _ = write!(
                h,
                "<li><a href=\"{}\">table {t}</a></li>",
                self.result_path(t).replace('&', "&amp;")
            );
        }
        h.push_str("</ul></body></html>");
        h
    }

    fn query(&self) -> String {
        let mut h = String::from(
            "<html><body><a href=\"/\">home</a><form class=\"pick\" action=\"/tables\" method=\"get\"><select name=\"year\">",
        );
        for y in 0..self.years {
            let _ = write!(h, "<option value=\"{0}\">{0}</option>", FIRST_YEAR + y);
        }
        h.push_str("</select>");
        for r in 0..self.regions {
            let _ = write!(
                h,
                "<label><input type=\"radio\" name=\"region\" value=\"r{r}\"> region {r}</label>"
            );
        }
        h.push_str("<input type=\"submit\" value=\"Show\"></form><form class=\"download\" action=\"/download\"><select name=\"year\">");
        for y in 0..self.years {
            let _ = write!(h, "<option value=\"{0}\">{0}</option>", FIRST_YEAR + y);
        }
        h.push_str("</select><input type=\"submit\" value=\"Download\"></form></body></html>");
        h
    }

    fn table(&self, req: &SiteRequest) -> Option<String> {
        let mut year = None;
        let mut region = None;
        for (k, v) in req.query_pairs() {
            match k.as_str() {
                "year" => year = v.parse::<usize>().ok()?.checked_sub(FIRST_YEAR),
                "region" => region = v.strip_prefix('r')?.parse::<usize>().ok(),
                _ => {}
            }
        }
        let (y, r) = (year?, region?);
        if y >= self.years || r >= self.regions {
            return None;
        }
        Some(format!(
            "<html><body><a href=\"/query\">another table</a><table><tr><td>{}</td></tr></table><a href=\"{}\">download CSV</a></body></html>",
            FIRST_YEAR + y,
            Self::file_path(y, r)
        ))
    }
}

impl Site for FormSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        match path {
            "/" => SiteResponse::html(self.home()),
            "/query" => SiteResponse::html(self.query()),
            "/download" => {
                let year = req
                    .query_pairs()
                    .into_iter()
                    .find(|(k, _)| k == "year")
                    .and_then(|(_, v)| v.parse::<usize>().ok())
                    .and_then(|y| y.checked_sub(FIRST_YEAR))
                    .filter(|&y| y < self.years);
                match year {
                    Some(y) => csv(&format!("/download?year={}", FIRST_YEAR + y)),
                    None => SiteResponse::not_found(),
                }
            }
            "/tables" => match self.table(req) {
                Some(h) => SiteResponse::html(h),
                None => SiteResponse::not_found(),
            },
            _ if self.files().iter().any(|(p, _)| p == path) => csv(path),
            _ => SiteResponse::not_found(),
        }
    }
}

/// A site whose one form has 10⁹ combinations (nine selects of ten
/// options); every submission answers an empty page. A crawler must pay a
/// bounded number of requests for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostileFormSite;

/// Selects of [`HostileFormSite`]'s form, and options of each.
pub const HOSTILE_FORM_FIELDS: usize = 9;
pub const HOSTILE_FORM_OPTIONS: usize = 10;

impl Site for HostileFormSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        match req.path.as_str() {
            "/" => {
                let mut h = String::from(
                    "<html><body><a href=\"/files/real.csv\">data</a><form action=\"/explore\">",
                );
                for f in 0..HOSTILE_FORM_FIELDS {
                    let _ = write!(h, "<select name=\"f{f}\">");
                    for o in 0..HOSTILE_FORM_OPTIONS {
                        let _ = write!(h, "<option value=\"{o}\">{o}</option>");
                    }
                    h.push_str("</select>");
                }
                h.push_str("</form></body></html>");
                SiteResponse::html(h)
            }
            "/files/real.csv" => csv("/files/real.csv"),
            "/explore" => SiteResponse::html("<html><body>no data for this choice</body></html>"),
            _ => SiteResponse::not_found(),
        }
    }
}

/// A page of thousands of GET forms, each of 10⁹ combinations (nine
/// selects of ten options, its own action): 10¹² submissions on one page.
/// Every submission answers an empty page. A crawler must pay a bounded
/// number of requests and bounded memory for it (the page's link cap, the
/// per-form and per-site form caps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormFloodSite {
    pub forms: usize,
}

impl Default for FormFloodSite {
    fn default() -> Self {
        FormFloodSite { forms: 2_000 }
    }
}

impl FormFloodSite {
    fn home(&self) -> String {
        let mut h = String::with_capacity(self.forms * 1_800);
        h.push_str("<html><body><a href=\"/files/real.csv\">data</a>");
        for k in 0..self.forms {
            let _ = write!(h, "<form action=\"/explore/{k}\">");
            for f in 0..HOSTILE_FORM_FIELDS {
                let _ = write!(h, "<select name=\"f{f}\">");
                for o in 0..HOSTILE_FORM_OPTIONS {
                    let _ = write!(h, "<option value=\"{o}\">");
                }
                h.push_str("</select>");
            }
            h.push_str("</form>");
        }
        h.push_str("</body></html>");
        h
    }
}

impl Site for FormFloodSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        match req.path.as_str() {
            "/" => SiteResponse::html(self.home()),
            "/files/real.csv" => csv("/files/real.csv"),
            p if p.starts_with("/explore/") => {
                SiteResponse::html("<html><body>no data for this choice</body></html>")
            }
            _ => SiteResponse::not_found(),
        }
    }
}

/// A site whose robots.txt names a sitemap of [`SITEMAP_FLOOD_ENTRIES`]
/// catalog URLs (`/c/N/data.json`), each a `data.json` of
/// [`SITEMAP_FLOOD_PER_CATALOG`] downloads that are dead links; one real
/// file is linked from the home page. What bounds a job with catalogs on:
/// the sitemap's body and link caps, then each catalog's.
#[derive(Clone, Copy, Debug, Default)]
pub struct SitemapFloodSite;

/// Catalog URLs the flooding sitemap lists.
pub const SITEMAP_FLOOD_ENTRIES: usize = 1_000_000;
/// Dead downloads each of its catalogs lists.
pub const SITEMAP_FLOOD_PER_CATALOG: usize = 5;

impl Site for SitemapFloodSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        // The Host header keeps the port the crawler was given, which the
        // sitemap's absolute URLs must carry too.
        let authority = req
            .headers
            .get(axum::http::header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(req.host.as_str())
            .to_string();
        let path = req.path.as_str();
        match path {
            "/" => SiteResponse::html(
                "<html><body><a href=\"/files/real.csv\">the one real file</a></body></html>",
            ),
            "/files/real.csv" => csv(path),
            "/robots.txt" => SiteResponse::ok(
                "text/plain",
                format!("User-agent: *\nSitemap: http://{authority}/sitemap.xml\n"),
            ),
            "/sitemap.xml" => {
                let mut body = String::with_capacity(SITEMAP_FLOOD_ENTRIES * 60);
                body.push_str("<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">");
                for i in 0..SITEMAP_FLOOD_ENTRIES {
                    let _ = write!(
                        body,
                        "<url><loc>http://{authority}/c/{i}/data.json</loc></url>"
                    );
                }
                body.push_str("</urlset>");
                SiteResponse::ok("application/xml", body)
            }
            p if p.starts_with("/c/") && p.ends_with("/data.json") => {
                let n = &p["/c/".len()..p.len() - "/data.json".len()];
                let mut body = String::from("{\"dataset\":[");
                for k in 0..SITEMAP_FLOOD_PER_CATALOG {
                    if k > 0 {
                        body.push(',');
                    }
                    let _ = write!(
                        body,
                        "{{\"distribution\":[{{\"downloadURL\":\"/dead/{n}-{k}.csv\"}}]}}"
                    );
                }
                body.push_str("]}");
                SiteResponse::ok("application/json", body)
            }
            _ => SiteResponse::not_found(),
        }
    }
}

/// A portal whose catalogs sit at paths no well-known list has, found only
/// the ways portals announce them: robots.txt's `Sitemap:` lines name a
/// sitemap index and a Project Open Data `data.json` (`/pod/data.json`);
/// the sitemap lists the pages and a DCAT catalog
/// (`/open/dcat-export.ttl`); the home page's `<link rel="alternate"
/// type="application/json">` names a CKAN Action API mounted under
/// `/ckan/`. Each catalog lists `per_catalog` files no page links; the
/// home page links `linked` more. See [`ListedCatalogs::files`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedCatalogs {
    pub per_catalog: usize,
    pub linked: usize,
}

impl Default for ListedCatalogs {
    fn default() -> Self {
        ListedCatalogs {
            per_catalog: 6,
            linked: 6,
        }
    }
}

/// Where [`ListedCatalogs`] keeps its catalogs.
pub const LISTED_CKAN: &str = "/ckan/api/3/action/package_search";
pub const LISTED_DATA_JSON: &str = "/pod/data.json";
pub const LISTED_DCAT: &str = "/open/dcat-export.ttl";

impl ListedCatalogs {
    /// Every file, and the catalog that alone reaches it (`ckan`,
    /// `data.json`, `dcat`; `None`: the home page links it).
    pub fn files(&self) -> Vec<(String, Option<&'static str>)> {
        let mut out: Vec<(String, Option<&'static str>)> = (0..self.linked)
            .map(|i| (format!("/files/linked-{i}.csv"), None))
            .collect();
        for kind in ["ckan", "data.json", "dcat"] {
            let stem = kind.replace('.', "-");
            out.extend(
                (0..self.per_catalog).map(|i| (format!("/files/{stem}-{i}.csv"), Some(kind))),
            );
        }
        out
    }

    fn of(&self, kind: &str) -> Vec<String> {
        self.files()
            .into_iter()
            .filter(|(_, k)| *k == Some(kind))
            .map(|(p, _)| p)
            .collect()
    }
}

impl Site for ListedCatalogs {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let host = &req.host;
        let path = req.path.as_str();
        match path {
            "/robots.txt" => SiteResponse::ok(
                "text/plain",
                format!(
                    "User-agent: *\nDisallow: /private/\nSitemap: http://{host}/maps/index.xml\nSitemap: http://{host}{LISTED_DATA_JSON}\n"
                ),
            ),
            "/maps/index.xml" => SiteResponse::ok(
                "application/xml",
                format!(
                    "<?xml version=\"1.0\"?><sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><sitemap><loc>http://{host}/maps/pages.xml</loc></sitemap></sitemapindex>"
                ),
            ),
            "/maps/pages.xml" => SiteResponse::ok(
                "application/xml",
                format!(
                    "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>http://{host}/</loc></url><url><loc>http://{host}/about</loc></url><url><loc>http://{host}{LISTED_DCAT}</loc></url></urlset>"
                ),
            ),
            "/" => {
                let mut h = format!(
                    "<html><head><link rel=\"alternate\" type=\"application/json\" href=\"{LISTED_CKAN}\"><link rel=\"alternate\" type=\"application/json\" href=\"/api/page.json\"></head><body><a href=\"/about\">about</a><ul>"
                );
                for (p, only) in self.files() {
                    if only.is_none() {
                        let _ = write!(h, "<li><a href=\"{p}\">{p}</a></li>");
                    }
                }
                h.push_str("</ul></body></html>");
                SiteResponse::html(h)
            }
            "/about" => SiteResponse::html("<html><body><a href=\"/\">home</a></body></html>"),
            LISTED_CKAN => {
                let results: Vec<serde_json::Value> = self
                    .of("ckan")
                    .into_iter()
                    .map(|p| serde_json::json!({"resources": [{"url": format!("http://{host}{p}")}]}))
                    .collect();
                let count = results.len();
                SiteResponse::ok(
                    "application/json",
                    serde_json::json!({"success": true, "result": {"count": count, "results": results}})
                        .to_string(),
                )
            }
            LISTED_DATA_JSON => {
                let dataset: Vec<serde_json::Value> = self
                    .of("data.json")
                    .into_iter()
                    .map(|p| serde_json::json!({"distribution": [{"downloadURL": format!("http://{host}{p}")}]}))
                    .collect();
                SiteResponse::ok(
                    "application/json",
                    serde_json::json!({"dataset": dataset}).to_string(),
                )
            }
            LISTED_DCAT => {
                let mut ttl = String::from("@prefix dcat: <http://www.w3.org/ns/dcat#> .\n");
                for (i, p) in self.of("dcat").into_iter().enumerate() {
                    let _ = writeln!(
                        ttl,
                        "<http://{host}/ds/{i}> a dcat:Dataset ; dcat:distribution [ dcat:downloadURL <http://{host}{p}> ] ."
                    );
                }
                SiteResponse::ok("text/turtle", ttl)
            }
            "/api/page.json" => SiteResponse::ok("application/json", "{\"title\": \"home\"}"),
            _ if self.files().iter().any(|(p, _)| p == path) => csv(path),
            _ => SiteResponse::not_found(),
        }
    }
}

/// Dataset pages whose schema.org markup names files no `<a>` links, and a
/// DCAT catalog announced only by `<link rel="alternate">` at a path no
/// well-known list has; see [`MarkupSite::files`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkupSite {
    pub datasets: usize,
    /// Tables listed only by the alternate catalog.
    pub catalog_tables: usize,
}

impl Default for MarkupSite {
    fn default() -> Self {
        MarkupSite {
            datasets: 8,
            catalog_tables: 4,
        }
    }
}

impl MarkupSite {
    /// Every file, and how it is reached: `Some("schema.org")` only through
    /// a page's markup, `Some("dcat")` only through the alternate catalog,
    /// `None` by a page link.
    pub fn files(&self) -> Vec<(String, Option<&'static str>)> {
        let mut out = Vec::new();
        for d in 0..self.datasets {
            out.push((format!("/files/d{d}-linked.csv"), None));
            out.push((format!("/files/d{d}-markup.csv"), Some("schema.org")));
        }
        for t in 0..self.catalog_tables {
            out.push((format!("/extra/e{t}.csv"), Some("dcat")));
        }
        out
    }

    fn dataset(&self, d: usize) -> String {
        let ld = serde_json::json!({
            "@context": "https://schema.org",
            "@type": "Dataset",
            "name": format!("Dataset {d}"),
            "distribution": [
                {"@type": "DataDownload", "contentUrl": format!("/files/d{d}-linked.csv"), "encodingFormat": "text/csv"},
                {"@type": "DataDownload", "contentUrl": format!("/files/d{d}-markup.csv"), "encodingFormat": "text/csv"},
            ],
        });
        format!(
            "<html><head><script type=\"application/ld+json\">{ld}</script></head><body><a href=\"/\">home</a><h1>Dataset {d}</h1><a href=\"/files/d{d}-linked.csv\">CSV</a></body></html>"
        )
    }

    fn catalog(&self, host: &str) -> String {
        let mut ttl = String::from("@prefix dcat: <http://www.w3.org/ns/dcat#> .\n");
        for t in 0..self.catalog_tables {
            let _ = writeln!(
                ttl,
                "<http://{host}/ds/e{t}> a dcat:Dataset ; dcat:distribution [ dcat:downloadURL <http://{host}/extra/e{t}.csv> ] ."
            );
        }
        ttl
    }
}

impl Site for MarkupSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        if path == "/" {
            let mut h = String::from("<html><head><link rel=\"alternate\" type=\"text/turtle\" href=\"/open/dcat-export\"></head><body><ul>");
            for d in 0..self.datasets {
                let _ = write!(h, "<li><a href=\"/dataset/{d}\">dataset {d}</a></li>");
            }
            h.push_str("</ul></body></html>");
            return SiteResponse::html(h);
        }
        if path == "/open/dcat-export" {
            return SiteResponse::ok("text/turtle", self.catalog(&req.host));
        }
        if let Some(d) = path
            .strip_prefix("/dataset/")
            .and_then(|d| d.parse::<usize>().ok())
        {
            if d < self.datasets {
                return SiteResponse::html(self.dataset(d));
            }
        }
        if self.files().iter().any(|(p, _)| p == path) {
            return csv(path);
        }
        SiteResponse::not_found()
    }
}

/// A portal built by scripts: its home page is a *script shell* (a
/// `<script>`, an empty mount point, a `<noscript>` warning) whose script
/// fetches the dataset list from a JSON API (`/api/datasets.json`) and
/// inserts a link per file into the DOM. Only every `static_every`-th
/// dataset is also on a plain HTML page (`/featured`); the rest of the files
/// are reachable only once the page is rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptPortal {
    pub datasets: usize,
    pub files_per_dataset: usize,
    /// Every this many datasets is also linked from `/featured` (plain HTML).
    pub static_every: usize,
}

impl Default for ScriptPortal {
    fn default() -> Self {
        ScriptPortal {
            datasets: 12,
            files_per_dataset: 2,
            static_every: 4,
        }
    }
}

/// The script of [`ScriptPortal`]'s home page.
const PORTAL_APP_JS: &str = r#"(function () {
  var app = document.getElementById('app');
  fetch('/api/datasets.json')
    .then(function (r) { return r.json(); })
    .then(function (list) {
      app.textContent = '';
      var ul = document.createElement('ul');
      ul.className = 'datasets';
      list.datasets.forEach(function (d) {
        d.files.forEach(function (f) {
          var li = document.createElement('li');
          var a = document.createElement('a');
          a.href = f.url;
          a.textContent = d.title + ' (' + f.format + ')';
          li.appendChild(a);
          ul.appendChild(li);
        });
      });
      app.appendChild(ul);
    });
})();
"#;

impl ScriptPortal {
    fn featured(&self, d: usize) -> bool {
        self.static_every > 0 && d % self.static_every == 0
    }

    /// Every file's path (the ground truth), and whether only rendering reaches it.
    pub fn files(&self) -> Vec<(String, bool)> {
        (0..self.datasets)
            .flat_map(|d| {
                (0..self.files_per_dataset)
                    .map(move |f| (format!("/files/sp-{d}-{f}.csv"), !self.featured(d)))
            })
            .collect()
    }

    fn api(&self) -> String {
        let datasets: Vec<serde_json::Value> = (0..self.datasets)
            .map(|d| {
                let files: Vec<serde_json::Value> = (0..self.files_per_dataset)
                    .map(|f| serde_json::json!({"url": format!("/files/sp-{d}-{f}.csv"), "format": "CSV"}))
                    .collect();
                serde_json::json!({"title": format!("Dataset {d}"), "files": files})
            })
            .collect();
        serde_json::json!({ "datasets": datasets }).to_string()
    }
}

impl Site for ScriptPortal {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        match path {
            "/" => SiteResponse::html(
                "<!doctype html><html><head><title>Open data</title><script src=\"/app.js\" defer></script></head>\
                 <body><nav><a href=\"/featured\">featured datasets</a></nav><div id=\"app\">Loading datasets…</div>\
                 <noscript>This portal needs JavaScript.</noscript></body></html>",
            ),
            "/app.js" => SiteResponse::ok("application/javascript", PORTAL_APP_JS),
            "/api/datasets.json" => SiteResponse::ok("application/json", self.api()),
            "/featured" => {
                let mut h = String::from("<html><body><a href=\"/\">home</a><ul>");
                for (p, only_rendered) in self.files() {
                    if !only_rendered {
                        let _ = write!(h, "<li><a href=\"{p}\">{p}</a></li>");
                    }
                }
                h.push_str("</ul></body></html>");
                SiteResponse::html(h)
            }
            _ if self.files().iter().any(|(p, _)| p == path) => csv(path),
            _ => SiteResponse::not_found(),
        }
    }
}

/// Pages whose scripts are hostile, each a script shell linked from the home
/// page, which also links one plain file (`/files/after.csv`) the crawl must
/// still reach: `/loop` spins forever, `/private` asks for a loopback
/// address (`private_url`) that no job may fetch, `/never` asks for
/// `/tick?n=…` every 50 ms forever (the network never idles) and `/burst`
/// asks for 1 000 URLs at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostileScripts {
    /// What `/private`'s script fetches (a test's own loopback server).
    pub private_url: String,
}

fn shell(script: &str) -> SiteResponse {
    SiteResponse::html(format!(
        "<!doctype html><html><head><script>{script}</script></head><body><div id=\"app\"></div>\
         <noscript>Needs JavaScript.</noscript></body></html>"
    ))
}

impl Site for HostileScripts {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        match req.path.as_str() {
            "/" => SiteResponse::html(
                "<html><body><a href=\"/loop\">loop</a> <a href=\"/private\">private</a> \
                 <a href=\"/never\">never</a> <a href=\"/burst\">burst</a> \
                 <a href=\"/files/after.csv\">a file</a></body></html>",
            ),
            "/loop" => shell(
                "document.addEventListener('DOMContentLoaded', function () { \
                 var a = document.createElement('a'); a.href = '/files/loop.csv'; \
                 document.getElementById('app').appendChild(a); for (;;) {} });",
            ),
            "/private" => shell(&format!(
                "fetch({:?}).then(function (r) {{ return r.text(); }}).then(function (t) {{ \
                 document.getElementById('app').innerHTML = t; }});",
                self.private_url
            )),
            "/never" => {
                shell("var n = 0; setInterval(function () { fetch('/tick?n=' + (n++)); }, 50);")
            }
            "/burst" => shell("for (var i = 0; i < 1000; i++) { fetch('/tick?burst=' + i); }"),
            "/tick" => SiteResponse::ok("application/json", "{}"),
            "/files/after.csv" | "/files/loop.csv" => csv(req.path.as_str()),
            _ => SiteResponse::not_found(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// Up to `max` HTML pages of `site`, breadth first from `start`: (URL, body, links).
    fn html_pages(
        site: &dyn Site,
        host: &str,
        start: &str,
        max: usize,
    ) -> Vec<(String, Vec<u8>, usize)> {
        use crate::sites::server::Body;
        use forager_core::extract::{extract_links, ExtractLimits};
        let limits = ExtractLimits::default();
        let mut seen = std::collections::HashSet::new();
        let mut queue = std::collections::VecDeque::from([start.to_string()]);
        let mut pages = Vec::new();
        while let Some(path) = queue.pop_front() {
            if pages.len() >= max {
                break;
            }
            let resp = site.respond(&SiteRequest::get(host, &path));
            let html = resp
                .headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("text/html"));
            let Body::Bytes(body) = resp.body else {
                continue;
            };
            if !resp.status.is_success() || !html {
                continue;
            }
            let url = url::Url::parse(&format!("http://{host}{path}")).expect("a page URL");
            let links = extract_links(&body, &url, Some("text/html"), &limits);
            for l in &links.links {
                if l.url.host_str() == Some(host) {
                    let p = match l.url.query() {
                        Some(q) => format!("{}?{q}", l.url.path()),
                        None => l.url.path().to_string(),
                    };
                    if seen.insert(p.clone()) {
                        queue.push_back(p);
                    }
                }
            }
            pages.push((path, body.to_vec(), links.links.len()));
        }
        pages
    }

    #[test]
    fn no_page_of_the_efficiency_sites_looks_like_a_script_shell() {
        use crate::sites::fixture::{FixtureSite, FIXTURE_HOST};
        use crate::sites::synthetic::{Preset, SyntheticSite};
        use forager_core::render::ShellSignals;
        let mut sites: Vec<(String, Box<dyn Site>, String)> = Vec::new();
        for preset in Preset::ALL {
            let site = SyntheticSite::preset(preset, 1).expect("a preset");
            let start = site.start_path().to_string();
            sites.push((preset.name().to_string(), Box::new(site), start));
        }
        sites.push(("fixture".into(), Box::new(FixtureSite::new()), "/".into()));
        let mut checked = 0;
        for (name, site, start) in &sites {
            let host = if name == "fixture" {
                FIXTURE_HOST
            } else {
                "site.test"
            };
            let pages = html_pages(site.as_ref(), host, start, 400);
            assert!(!pages.is_empty(), "{name}: no page");
            for (path, body, links) in &pages {
                let s = ShellSignals::of(body, *links);
                assert!(!s.is_shell(), "{name}{path} reads as a script shell: {s:?}");
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked} pages");
        // The script portal's home page does.
        let portal = ScriptPortal::default();
        let home = html_pages(&portal, "scripts.test", "/", 1);
        let (_, body, links) = &home[0];
        assert!(ShellSignals::of(body, *links).is_shell());
    }

    #[test]
    fn three_quarters_of_the_form_site_is_behind_the_form() {
        let s = FormSite::default();
        let files = s.files();
        assert_eq!(files.len(), 50);
        assert_eq!(files.iter().filter(|(_, only)| *only).count(), 40);
        for t in 0..40 {
            let req = SiteRequest::get("stats.test", &s.result_path(t));
            assert!(s.table(&req).is_some_and(|h| h.contains(".csv")), "{t}");
        }
        assert!(s
            .table(&SiteRequest::get(
                "stats.test",
                "/tables?year=1999&region=r0"
            ))
            .is_none());
    }

    #[test]
    fn a_third_of_the_portal_is_api_only_and_the_api_pages_through_all() {
        let p = Portal::default();
        let files = p.files();
        assert_eq!(files.len(), 60);
        assert_eq!(files.iter().filter(|(_, only)| *only).count(), 20);
        let mut seen = 0;
        let mut start = 0;
        while start < p.datasets {
            let req = SiteRequest::get(
                "portal.test",
                &format!("/api/3/action/package_search?rows=7&start={start}"),
            );
            let r = p.package_search(&req);
            let v: serde_json::Value = serde_json::from_str(&r).unwrap_or_default();
            seen += v["result"]["results"].as_array().map_or(0, Vec::len);
            start += 7;
        }
        assert_eq!(seen, p.datasets);
    }
}
