//! Ground truth of a site: every page and target a crawler can reach,
//! found by walking the site in memory.
//!
//! The walk calls [`Site::respond`] directly (no sockets) and follows links
//! with the crawler's own extraction ([`forager_core::extract::extract_links`]) and
//! URL rules, its robots.txt parser ([`forager::fetch::robots::RobotsRules`]),
//! its scope rules and a job's [`TargetSet`]: ground truth = the targets that
//! are reachable, allowed and in scope. Redirects are followed by hand, each
//! hop checked like a link. Crawler traps are counted but not enumerated
//! ([`Site::is_trap`]), and `max_pages` / `max_depth` bound everything else.
//!
//! The walk is breadth-first, so a target's depth is its shortest link
//! distance from the start page.

use crate::floor::{self, Floor, GraphBuilder};
use crate::sites::server::{Site, SiteRequest};
use axum::http::{header, HeaderValue};
use forager::fetch::{origin_key, RobotsRecord, RobotsRules, RobotsStatus, ROBOTS_MAX_BYTES};
use forager_core::extract::ScopeKind;
use forager_core::extract::{extract_links, resolve, ExtractLimits, Scope};
use forager_core::mime::{Label, TargetSet};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::Read;
use std::sync::Arc;
use std::time::SystemTime;
use url::Url;

/// Turns a `Content-Type` into a label (usually [`TargetSet::classify`]).
pub type Classifier = Arc<dyn Fn(Option<&str>) -> Label + Send + Sync>;

/// How to walk.
#[derive(Clone)]
pub struct WalkOptions {
    pub classify: Classifier,
    /// Sent as `User-Agent` and used to pick the robots.txt group.
    pub user_agent: String,
    /// Obey robots.txt (as a job with `politeness.robots = true`).
    pub robots: bool,
    pub scope: ScopeKind,
    /// Stop after parsing this many HTML pages (reported as `truncated`).
    pub max_pages: usize,
    /// Links deeper than this (clicks from the start) are not followed.
    pub max_depth: Option<u32>,
    /// Bytes read per response, after decompression (the job's `max_body`).
    pub max_body: usize,
    /// Redirect hops followed per URL.
    pub max_redirects: usize,
    pub limits: ExtractLimits,
}

impl WalkOptions {
    /// Defaults of a crawl job (ARCHITECTURE.md § Job files, § Politeness and safety) classifying with `targets`.
    pub fn new(targets: TargetSet) -> Self {
        WalkOptions {
            classify: Arc::new(move |ct| targets.classify(ct)),
            user_agent: "forager-groundtruth".to_string(),
            robots: true,
            scope: ScopeKind::Site,
            max_pages: 2_000_000,
            max_depth: None,
            max_body: 512 << 20,
            max_redirects: 10,
            limits: ExtractLimits::default(),
        }
    }

    /// The `statistics` preset with multimedia blocked, as in a default job.
    pub fn statistics() -> Self {
        WalkOptions::new(TargetSet::new(
            forager_core::mime::Preset::Statistics,
            &[],
            &["image/".into(), "audio/".into(), "video/".into()],
        ))
    }

    /// The target set of the corpora sites (shared/corpora/README.md).
    pub fn corpora() -> Self {
        let extra: Vec<String> = crate::sites::directory::CORPUS_TARGET_MIME
            .iter()
            .map(|m| m.to_string())
            .collect();
        WalkOptions::new(TargetSet::new(
            forager_core::mime::Preset::None,
            &extra,
            &["image/".into(), "audio/".into(), "video/".into()],
        ))
    }
}

/// What a walk found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroundTruth {
    /// Distinct HTML pages fetched (final URLs after redirects).
    pub pages: usize,
    /// Targets by final URL.
    pub targets: BTreeSet<String>,
    /// Target body bytes (each capped at `max_body`).
    pub target_bytes: u64,
    /// HTML body bytes (after decompression, capped).
    pub page_bytes: u64,
    /// HTML pages with at least one link that leads (possibly through
    /// redirects) to a target.
    pub holder_pages: usize,
    /// 2xx responses that are neither HTML nor a target.
    pub neither: usize,
    /// URLs answering 4xx/5xx (or a redirect without a usable `Location`),
    /// with their status.
    pub errors: BTreeMap<String, u16>,
    /// Redirect responses followed.
    pub redirects: usize,
    /// Redirect chains that came back to one of their own URLs or ran past
    /// `max_redirects`.
    pub redirect_loops: usize,
    /// In-scope URLs robots.txt disallows (never requested).
    pub robots_blocked: BTreeSet<String>,
    /// URLs out of the job's scope (never requested).
    pub out_of_scope: BTreeSet<String>,
    /// In-scope URLs of another host (this walk serves one host only).
    pub other_host: BTreeSet<String>,
    /// Distinct trap URLs linked from the site (not walked).
    pub trap_links: usize,
    /// Links not followed because of `max_depth`.
    pub beyond_depth: usize,
    /// Deepest page or target reached.
    pub max_depth: u32,
    pub target_depth_max: u32,
    pub target_depth_mean: f64,
    /// Responses cut at `max_body`.
    pub truncated_bodies: usize,
    /// The walk stopped at `max_pages`: the counts are lower bounds.
    pub truncated: bool,
    /// The oracle floor for 90 % of the targets ([`floor`]): what a crawler
    /// that knows the link graph fetches; `None` when the walk was truncated
    /// or the graph too large to keep.
    pub floor90: Option<Floor>,
}

impl GroundTruth {
    /// targets / (pages + targets).
    pub fn target_density(&self) -> f64 {
        let reach = self.reachable();
        if reach == 0 {
            0.0
        } else {
            self.targets.len() as f64 / reach as f64
        }
    }

    /// Share of HTML pages linking to at least one target.
    pub fn holder_share(&self) -> f64 {
        if self.pages == 0 {
            0.0
        } else {
            self.holder_pages as f64 / self.pages as f64
        }
    }

    /// Reachable pages + targets: the denominator of req@N.
    pub fn reachable(&self) -> usize {
        self.pages + self.targets.len()
    }
}

/// What one URL turned out to be (for the holder count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Unknown,
    Target,
    Redirect(u32),
    /// An HTML page.
    Page,
    Other,
}

/// Interned URLs, their outcomes and whether the walk has taken them.
#[derive(Default)]
struct Urls {
    ids: HashMap<String, u32>,
    outcome: Vec<Outcome>,
    /// Queued, or reached by a redirect: never requested twice.
    seen: Vec<bool>,
}

impl Urls {
    fn id(&mut self, url: &str) -> u32 {
        if let Some(&id) = self.ids.get(url) {
            return id;
        }
        let id = self.outcome.len() as u32;
        self.ids.insert(url.to_string(), id);
        self.outcome.push(Outcome::Unknown);
        self.seen.push(false);
        id
    }

    fn is_seen(&self, url: &str) -> bool {
        self.ids.get(url).is_some_and(|&id| self.seen[id as usize])
    }

    fn mark_seen(&mut self, url: &str) {
        let id = self.id(url);
        self.seen[id as usize] = true;
    }

    /// Whether `id` ends, through redirects, at a target.
    fn leads_to_target(&self, mut id: u32) -> bool {
        for _ in 0..=self.outcome.len().min(64) {
            match self.outcome[id as usize] {
                Outcome::Target => return true,
                Outcome::Redirect(next) => id = next,
                Outcome::Unknown | Outcome::Page | Outcome::Other => return false,
            }
        }
        false
    }

    /// Where `id` ends through redirects: `Ok` the URL id of a page, `Err`
    /// that of a target; `None` for anything else.
    fn end(&self, mut id: u32) -> Option<Result<u32, u32>> {
        for _ in 0..=self.outcome.len().min(64) {
            match self.outcome[id as usize] {
                Outcome::Redirect(next) => id = next,
                Outcome::Page => return Some(Ok(id)),
                Outcome::Target => return Some(Err(id)),
                Outcome::Unknown | Outcome::Other => return None,
            }
        }
        None
    }
}

/// Walk `site`, served under `host`, from `start` (whose host and port are
/// those of the served URLs, e.g. `http://site-a.test:8080/`).
pub fn walk(site: &dyn Site, host: &str, start: &Url, opts: &WalkOptions) -> GroundTruth {
    let mut w = Walker::new(site, host, start, opts);
    w.run();
    w.finish()
}

struct Walker<'a> {
    site: &'a dyn Site,
    host: String,
    start: Url,
    opts: &'a WalkOptions,
    scope: Scope,
    robots: Option<RobotsRules>,
    gt: GroundTruth,
    urls: Urls,
    trap_seen: BTreeSet<String>,
    queue: VecDeque<(Url, u32)>,
    /// Per HTML page not yet known to link a target: the ids of its links
    /// whose outcome was still open when the page was parsed.
    page_links: Vec<Vec<u32>>,
    /// HTML pages known to link a target when they were parsed.
    holders_known: usize,
    target_depths: Vec<u32>,
    /// The link graph, for the floor.
    graph: GraphBuilder,
    /// Index of each target's URL id among the targets, in the order found.
    target_index: HashMap<u32, u32>,
}

impl<'a> Walker<'a> {
    fn new(site: &'a dyn Site, host: &str, start: &Url, opts: &'a WalkOptions) -> Self {
        let mut start = start.clone();
        forager_core::extract::normalize(&mut start, &opts.limits.url_rules);
        Walker {
            site,
            host: host.to_ascii_lowercase(),
            scope: Scope::new(opts.scope, std::slice::from_ref(&start)),
            start,
            opts,
            robots: None,
            gt: GroundTruth::default(),
            urls: Urls::default(),
            trap_seen: BTreeSet::new(),
            queue: VecDeque::new(),
            page_links: Vec::new(),
            holders_known: 0,
            target_depths: Vec::new(),
            graph: GraphBuilder::default(),
            target_index: HashMap::new(),
        }
    }

    fn request(&self, url: &Url) -> SiteRequest {
        let path_and_query = match url.query() {
            Some(q) => format!("{}?{}", url.path(), q),
            None => url.path().to_string(),
        };
        let mut req = SiteRequest::get(&self.host, &path_and_query);
        if let Ok(ua) = HeaderValue::from_str(&self.opts.user_agent) {
            req.headers.insert(header::USER_AGENT, ua);
        }
        req.headers
            .insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        req
    }

    fn load_robots(&mut self) {
        if !self.opts.robots {
            return;
        }
        let Ok(robots_url) = self.start.join("/robots.txt") else {
            return;
        };
        let resp = self.site.respond(&self.request(&robots_url));
        let status = resp.status;
        let gzip = is_gzip(resp.header_str(header::CONTENT_ENCODING));
        let body = resp.body.read_capped(ROBOTS_MAX_BYTES as usize);
        let (status, body) = if status.is_success() {
            let body = if gzip {
                gunzip(&body.bytes, ROBOTS_MAX_BYTES as usize).0
            } else {
                body.bytes
            };
            (RobotsStatus::Fetched, body)
        } else if status.is_server_error() || status.as_u16() == 429 {
            (RobotsStatus::Unavailable, Vec::new())
        } else {
            (RobotsStatus::Missing, Vec::new())
        };
        let Some(origin) = origin_key(&self.start) else {
            return;
        };
        let record = RobotsRecord::new(origin, status, body, SystemTime::now());
        self.robots = Some(RobotsRules::from_record(record, &self.opts.user_agent));
    }

    /// Whether the walk may request `url`; records why not.
    fn admissible(&mut self, url: &Url) -> bool {
        let s = url.as_str();
        if !self.scope.contains(url) {
            self.gt.out_of_scope.insert(s.to_string());
            return false;
        }
        if url.host_str() != self.start.host_str()
            || url.port_or_known_default() != self.start.port_or_known_default()
            || url.scheme() != self.start.scheme()
        {
            self.gt.other_host.insert(s.to_string());
            return false;
        }
        if let Some(robots) = &self.robots {
            if !robots.allowed(url) {
                self.gt.robots_blocked.insert(s.to_string());
                return false;
            }
        }
        let pq = match url.query() {
            Some(q) => format!("{}?{}", url.path(), q),
            None => url.path().to_string(),
        };
        if self.site.is_trap(&pq) {
            if self.trap_seen.insert(s.to_string()) {
                self.gt.trap_links += 1;
            }
            return false;
        }
        true
    }

    fn enqueue(&mut self, url: Url, depth: u32) {
        if self.urls.is_seen(url.as_str()) {
            return;
        }
        if self.opts.max_depth.is_some_and(|max| depth > max) {
            self.gt.beyond_depth += 1;
            return;
        }
        if !self.admissible(&url) {
            return;
        }
        self.urls.mark_seen(url.as_str());
        self.queue.push_back((url, depth));
    }

    fn run(&mut self) {
        self.load_robots();
        let start = self.start.clone();
        self.enqueue(start, 0);
        while let Some((url, depth)) = self.queue.pop_front() {
            if self.gt.pages >= self.opts.max_pages {
                self.gt.truncated = true;
                break;
            }
            self.visit(url, depth);
        }
    }

    /// Fetch `url` (following redirects) and handle what it is.
    fn visit(&mut self, url: Url, depth: u32) {
        let mut current = url;
        let mut hops = 0usize;
        let mut chain: Vec<String> = Vec::new();
        loop {
            chain.push(current.as_str().to_string());
            let id = self.urls.id(current.as_str());
            let resp = self.site.respond(&self.request(&current));
            let status = resp.status;
            if status.is_redirection() {
                let next = resp
                    .location()
                    .and_then(|loc| resolve(&current, loc, &self.opts.limits.url_rules).ok());
                let Some(next) = next else {
                    self.gt.errors.insert(current.to_string(), status.as_u16());
                    self.urls.outcome[id as usize] = Outcome::Other;
                    return;
                };
                self.gt.redirects += 1;
                hops += 1;
                let next_id = self.urls.id(next.as_str());
                self.urls.outcome[id as usize] = Outcome::Redirect(next_id);
                if hops > self.opts.max_redirects || chain.iter().any(|u| u == next.as_str()) {
                    self.gt.redirect_loops += 1;
                    return;
                }
                // Each hop is checked like a link; a known URL ends the chain.
                if self.urls.is_seen(next.as_str()) || !self.admissible(&next) {
                    return;
                }
                self.urls.mark_seen(next.as_str());
                current = next;
                continue;
            }
            if !status.is_success() {
                self.gt.errors.insert(current.to_string(), status.as_u16());
                self.urls.outcome[id as usize] = Outcome::Other;
                return;
            }
            let content_type = resp.content_type().map(str::to_string);
            let label = (self.opts.classify)(content_type.as_deref());
            let gzip = is_gzip(resp.header_str(header::CONTENT_ENCODING));
            self.gt.max_depth = self.gt.max_depth.max(depth);
            match label {
                Label::Neither => {
                    // Not downloaded by a crawler beyond the headers.
                    self.gt.neither += 1;
                    self.urls.outcome[id as usize] = Outcome::Other;
                }
                Label::Target => {
                    let (bytes, truncated) = self.read_body(resp.body, gzip);
                    self.gt.truncated_bodies += usize::from(truncated);
                    self.gt.target_bytes += bytes.len() as u64;
                    self.gt.targets.insert(current.to_string());
                    self.target_depths.push(depth);
                    self.urls.outcome[id as usize] = Outcome::Target;
                    let next = self.target_index.len() as u32;
                    self.target_index.entry(id).or_insert(next);
                }
                Label::Html => {
                    let (bytes, truncated) = self.read_body(resp.body, gzip);
                    self.gt.truncated_bodies += usize::from(truncated);
                    self.gt.page_bytes += bytes.len() as u64;
                    self.gt.pages += 1;
                    self.urls.outcome[id as usize] = Outcome::Page;
                    let links =
                        extract_links(&bytes, &current, content_type.as_deref(), &self.opts.limits);
                    // Most links (menus, footers) lead to pages already
                    // known: keep only the open ones, to bound memory.
                    let mut open = Vec::new();
                    let mut all = Vec::with_capacity(links.links.len());
                    let mut holder = false;
                    for link in links.links {
                        let link_id = self.urls.id(link.url.as_str());
                        all.push(link_id);
                        match self.urls.outcome[link_id as usize] {
                            Outcome::Other | Outcome::Page => {}
                            Outcome::Target => holder = true,
                            Outcome::Unknown | Outcome::Redirect(_) => open.push(link_id),
                        }
                        self.enqueue(link.url, depth + 1);
                    }
                    self.graph.page(id, all);
                    if holder {
                        self.holders_known += 1;
                    } else if !open.is_empty() {
                        self.page_links.push(open);
                    }
                }
            }
            return;
        }
    }

    fn read_body(&self, body: crate::sites::server::Body, gzip: bool) -> (Vec<u8>, bool) {
        let cap = self.opts.max_body;
        if gzip {
            // The cap counts decompressed bytes; the compressed body is
            // bounded generously so a bomb stops at the inflated cap.
            let raw = body.read_capped(cap.saturating_mul(4).max(1 << 20));
            let (bytes, truncated) = gunzip(&raw.bytes, cap);
            (bytes, truncated || raw.truncated)
        } else {
            let read = body.read_capped(cap);
            (read.bytes, read.truncated)
        }
    }

    fn finish(mut self) -> GroundTruth {
        self.gt.holder_pages = self.holders_known
            + self
                .page_links
                .iter()
                .filter(|links| links.iter().any(|&id| self.urls.leads_to_target(id)))
                .count();
        self.gt.target_depth_max = self.target_depths.iter().copied().max().unwrap_or(0);
        self.gt.target_depth_mean = if self.target_depths.is_empty() {
            0.0
        } else {
            self.target_depths
                .iter()
                .map(|&d| f64::from(d))
                .sum::<f64>()
                / self.target_depths.len() as f64
        };
        if !self.gt.truncated {
            let start = self.urls.ids.get(self.start.as_str()).copied();
            let urls = &self.urls;
            let target_index = &self.target_index;
            let graph = std::mem::take(&mut self.graph);
            let resolve = |id: u32| match urls.end(id)? {
                Ok(page) => Some(Ok(page)),
                Err(target) => target_index.get(&target).map(|&t| Err(t)),
            };
            self.gt.floor90 = start
                .and_then(|s| graph.finish(target_index.len(), s, resolve))
                .and_then(|g| floor::greedy_floor(&g, 0.9));
        }
        self.gt
    }
}

fn is_gzip(content_encoding: Option<&str>) -> bool {
    content_encoding.is_some_and(|e| e.trim().eq_ignore_ascii_case("gzip"))
}

/// Inflate at most `cap` bytes; a corrupt stream keeps what was inflated.
fn gunzip(data: &[u8], cap: usize) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut dec = flate2::read::GzDecoder::new(data).take(cap as u64 + 1);
    let _ = dec.read_to_end(&mut out);
    let truncated = out.len() > cap;
    out.truncate(cap);
    (out, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sites::directory::DirectorySite;
    use crate::sites::server::SiteResponse;
    use axum::http::StatusCode;

    /// A tiny site exercising what the walk must get right.
    struct Tiny;

    impl Site for Tiny {
        fn respond(&self, req: &SiteRequest) -> SiteResponse {
            let html = |s: &str| SiteResponse::html(format!("<html><body>{s}</body></html>"));
            match req.path_and_query().as_str() {
                "/robots.txt" => SiteResponse::ok("text/plain", "User-agent: *\nDisallow: /no/\n"),
                "/" => html(
                    "<a href='/a'>a</a><a href='/r1'>r</a><a href='/no/x.csv'>n</a>\
                     <a href='http://other.test/x.csv'>o</a><a href='/trap/1'>t</a>\
                     <a href='/img.png'>i</a><a href='/missing'>m</a><a href='/l1'>l</a>",
                ),
                "/a" => html("<a href='/b'>b</a><a href='/f.csv'>f</a><a href='/f.csv#x'>f</a>"),
                "/b" => html("<a href='/deep.pdf'>d</a>"),
                "/f.csv" => SiteResponse::ok("text/csv", "a,b\n"),
                "/deep.pdf" => SiteResponse::ok("application/pdf", "%PDF"),
                "/g.csv" => SiteResponse::ok("text/csv", "c\n"),
                "/r1" => SiteResponse::redirect(StatusCode::MOVED_PERMANENTLY, "/r2"),
                "/r2" => SiteResponse::redirect(StatusCode::FOUND, "/g.csv"),
                "/l1" => SiteResponse::redirect(StatusCode::MOVED_PERMANENTLY, "/l2"),
                "/l2" => SiteResponse::redirect(StatusCode::MOVED_PERMANENTLY, "/l1"),
                "/no/x.csv" => SiteResponse::ok("text/csv", "secret"),
                "/img.png" => SiteResponse::ok("image/png", "png"),
                p if p.starts_with("/trap/") => {
                    let n: u64 = p[6..].parse().unwrap_or(0);
                    html(&format!("<a href='/trap/{}'>next</a>", n + 1))
                }
                _ => SiteResponse::not_found(),
            }
        }

        fn is_trap(&self, path_and_query: &str) -> bool {
            path_and_query.starts_with("/trap/")
        }
    }

    fn tiny(opts: &WalkOptions) -> GroundTruth {
        walk(
            &Tiny,
            "tiny.test",
            &Url::parse("http://tiny.test/").unwrap(),
            opts,
        )
    }

    #[test]
    fn walk_finds_reachable_allowed_in_scope_targets() {
        let gt = tiny(&WalkOptions::statistics());
        let targets: Vec<&str> = gt.targets.iter().map(String::as_str).collect();
        assert_eq!(
            targets,
            [
                "http://tiny.test/deep.pdf",
                "http://tiny.test/f.csv",
                "http://tiny.test/g.csv"
            ]
        );
        assert_eq!(gt.pages, 3);
        assert_eq!(
            gt.holder_pages, 3,
            "/, /a and /b link targets (/ through redirects)"
        );
        assert_eq!(gt.target_depth_max, 3);
        assert_eq!(gt.redirects, 4);
        assert_eq!(gt.redirect_loops, 1);
        assert_eq!(gt.trap_links, 1);
        assert_eq!(gt.neither, 1);
        assert_eq!(gt.errors.len(), 1);
        assert!(gt.robots_blocked.contains("http://tiny.test/no/x.csv"));
        assert!(gt.out_of_scope.contains("http://other.test/x.csv"));
        assert_eq!(gt.target_bytes, 4 + 4 + 2);
        assert!((gt.target_density() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn bounds_are_respected() {
        let shallow = tiny(&WalkOptions {
            max_depth: Some(1),
            ..WalkOptions::statistics()
        });
        assert!(!shallow.targets.contains("http://tiny.test/deep.pdf"));
        assert!(shallow.beyond_depth > 0);
        let few = tiny(&WalkOptions {
            max_pages: 1,
            ..WalkOptions::statistics()
        });
        assert!(few.truncated);
        assert_eq!(few.pages, 1);
        let no_robots = tiny(&WalkOptions {
            robots: false,
            ..WalkOptions::statistics()
        });
        assert!(no_robots.targets.contains("http://tiny.test/no/x.csv"));
    }

    #[test]
    fn gunzip_caps_the_inflated_size() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut enc, &vec![b'a'; 100_000]).unwrap();
        let gz = enc.finish().unwrap();
        let (out, truncated) = gunzip(&gz, 1000);
        assert_eq!(out.len(), 1000);
        assert!(truncated);
        let (all, truncated) = gunzip(&gz, 200_000);
        assert_eq!(all.len(), 100_000);
        assert!(!truncated);
    }

    /// The real sites of shared/corpora (set FORAGER_CORPORA to the folder
    /// given to get-corpora.sh; skipped otherwise).
    #[test]
    fn corpora_ground_truth() {
        let Ok(dir) = std::env::var("FORAGER_CORPORA") else {
            eprintln!("FORAGER_CORPORA not set: corpora ground truth skipped");
            return;
        };
        let sites = [
            (
                "sklearn",
                "python-sklearn-doc/usr/share/doc/python-sklearn-doc/html",
                900..1000,
                540..600,
            ),
            (
                "twisted",
                "twisted-doc/usr/share/doc/twisted-doc/html",
                2300..2500,
                230..270,
            ),
        ];
        for (name, root, pages, targets) in sites {
            let site = DirectorySite::new(std::path::Path::new(&dir).join(root)).unwrap();
            let host = format!("{name}.test");
            let start = Url::parse(&format!("http://{host}/index.html")).unwrap();
            let gt = walk(&site, &host, &start, &WalkOptions::corpora());
            eprintln!(
                "{name}: {} pages, {} targets ({} bytes), {} neither, {} errors, {} holders, depth ≤ {}",
                gt.pages,
                gt.targets.len(),
                gt.target_bytes,
                gt.neither,
                gt.errors.len(),
                gt.holder_pages,
                gt.target_depth_max
            );
            assert!(pages.contains(&gt.pages), "{name}: {} pages", gt.pages);
            assert!(
                targets.contains(&gt.targets.len()),
                "{name}: {} targets",
                gt.targets.len()
            );
        }
    }
}
