//! A website that changes over simulated days, for continuous jobs and the
//! revisit benchmark (`forager bench --site changing`).
//!
//! The site is one host, [`HOST`]. Its home page links to every section, a
//! few plain pages and an image (a link that is not a target). Section `k`
//! has a listing, newest first and paginated (`/s/k/`, `/s/k/?page=2`, …),
//! of the data files it has published (`/s/k/files/k-0042.csv`, `.xlsx`,
//! `.pdf` in turn), and an about page. Sections publish at rates that halve
//! from one section to the next ([`ChangingParams::busiest_per_day`] for
//! section 0), so a few are busy and the last ones almost dead. A share of
//! the files is revised in place at a known rate. Every publication and
//! revision time is drawn once, from the seed, when the site is built: the
//! site is a pure function of (parameters, seed, simulated time), and the
//! schedule is its ground truth ([`ChangingSite::publications`],
//! [`ChangingSite::revisions`]).
//!
//! Simulated time runs from 0 at the [`SimClock`]'s start, one simulated day
//! per [`SimClock::real_day`] of real time; the history (publications before
//! 0) is what a first crawl finds. Every answer carries an `ETag` (a digest of
//! the body) and a `Last-Modified` (when the content last changed, on the real
//! wall clock the simulated time maps to), and a conditional request whose
//! validator still holds gets `304 Not Modified`, as RFC 9110 § 13 has it:
//! `If-None-Match` first, `If-Modified-Since` only without it.
//!
//! Must not touch: anything of the crawl; like every site here it is plain
//! synchronous code behind [`Site`].

use super::rng::{hash, Rng};
use super::server::{Site, SiteRequest, SiteResponse};
use axum::http::{header, HeaderValue, StatusCode};
use bytes::Bytes;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The host name the site is served under.
pub const HOST: &str = "changing.test";
/// Seconds in a simulated day.
pub const DAY: i64 = 86_400;
/// Seconds in a simulated hour.
pub const HOUR: i64 = 3_600;

/// A moment of simulated time: seconds since the clock's start (negative:
/// the site's history, before the first crawl).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub i64);

impl SimTime {
    pub fn from_days(days: f64) -> SimTime {
        SimTime((days * DAY as f64).round() as i64)
    }

    pub fn days(self) -> f64 {
        self.0 as f64 / DAY as f64
    }

    pub fn hours(self) -> f64 {
        self.0 as f64 / HOUR as f64
    }
}

/// Maps real time to simulated time: simulated 0 is `real_zero` (and
/// `wall_zero` on the wall clock); one simulated day lasts `real_day`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimClock {
    pub real_zero: Instant,
    pub wall_zero: SystemTime,
    pub real_day: Duration,
}

impl SimClock {
    /// A clock whose simulated 0 is now.
    pub fn starting_now(real_day: Duration) -> SimClock {
        SimClock {
            real_zero: Instant::now(),
            wall_zero: SystemTime::now(),
            real_day,
        }
    }

    /// Simulated seconds per real second.
    fn speed(&self) -> f64 {
        DAY as f64 / self.real_day.as_secs_f64().max(1e-9)
    }

    /// The simulated time of a real instant (0 for instants before the start).
    pub fn sim_at(&self, at: Instant) -> SimTime {
        let real = at.saturating_duration_since(self.real_zero).as_secs_f64();
        SimTime((real * self.speed()).floor() as i64)
    }

    pub fn now(&self) -> SimTime {
        self.sim_at(Instant::now())
    }

    /// The real length of a simulated span.
    pub fn real_of(&self, sim_seconds: i64) -> Duration {
        Duration::from_secs_f64(sim_seconds.max(0) as f64 / self.speed())
    }

    /// The wall-clock moment a simulated time maps to (before `wall_zero`
    /// for the history).
    pub fn wall_of(&self, t: SimTime) -> SystemTime {
        let real = self.real_of(t.0.abs());
        if t.0 >= 0 {
            self.wall_zero + real
        } else {
            self.wall_zero
                .checked_sub(real)
                .unwrap_or(SystemTime::UNIX_EPOCH)
        }
    }
}

/// The parameters of a changing site; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangingParams {
    pub sections: usize,
    /// Publications per simulated day of section 0; section `k` has
    /// `busiest_per_day / 2^k`.
    pub busiest_per_day: f64,
    /// Files per listing page.
    pub per_page: usize,
    /// Simulated days of publications before time 0.
    pub history_days: u32,
    /// Simulated days after time 0 the schedule covers; later, nothing changes.
    pub horizon_days: u32,
    /// Share of the files that are revised in place after publication.
    pub revised_share: f64,
    /// Revisions per simulated day of a revised file.
    pub revisions_per_day: f64,
    pub seed: u64,
}

impl ChangingParams {
    /// The default site of `--site changing`: 8 sections from 8 files a day
    /// down to one every 16 days, 10 files per listing page, two weeks of
    /// history (about 230 files), a quarter of the files revised every two
    /// days on average.
    pub fn new(sections: usize, seed: u64) -> ChangingParams {
        ChangingParams {
            sections: sections.max(1),
            busiest_per_day: 8.0,
            per_page: 10,
            history_days: 14,
            horizon_days: 30,
            revised_share: 0.25,
            revisions_per_day: 0.5,
            seed,
        }
    }

    pub fn with_horizon_days(mut self, days: u32) -> ChangingParams {
        self.horizon_days = days;
        self
    }

    /// Publications per simulated day of section `k`.
    pub fn rate(&self, section: usize) -> f64 {
        self.busiest_per_day / f64::from(2u32.saturating_pow(section.min(31) as u32))
    }
}

/// The kinds of file the site publishes, in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Csv,
    Xlsx,
    Pdf,
}

impl FileKind {
    const ALL: [FileKind; 3] = [FileKind::Csv, FileKind::Xlsx, FileKind::Pdf];

    pub fn ext(self) -> &'static str {
        match self {
            FileKind::Csv => "csv",
            FileKind::Xlsx => "xlsx",
            FileKind::Pdf => "pdf",
        }
    }

    fn mime(self) -> &'static str {
        match self {
            FileKind::Csv => "text/csv",
            FileKind::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            FileKind::Pdf => "application/pdf",
        }
    }

    fn from_ext(ext: &str) -> Option<FileKind> {
        FileKind::ALL.into_iter().find(|k| k.ext() == ext)
    }
}

/// One published file and its whole life.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub section: usize,
    /// Index in its section, in order of publication.
    pub index: usize,
    pub kind: FileKind,
    pub published: SimTime,
    /// Revision times, increasing, all after `published`.
    pub revisions: Vec<SimTime>,
}

impl Item {
    pub fn path(&self) -> String {
        format!(
            "/s/{s}/files/{s}-{i:04}.{e}",
            s = self.section,
            i = self.index,
            e = self.kind.ext()
        )
    }

    /// The version served at `t` (0: as published), `None` before publication.
    pub fn version_at(&self, t: SimTime) -> Option<usize> {
        (t >= self.published).then(|| self.revisions.partition_point(|&r| r <= t))
    }

    /// When the version served at `t` appeared.
    fn modified_at(&self, t: SimTime) -> Option<SimTime> {
        let v = self.version_at(t)?;
        Some(if v == 0 {
            self.published
        } else {
            self.revisions[v - 1]
        })
    }
}

/// A file's publication, as the ground truth lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Publication {
    pub path: String,
    pub section: usize,
    pub at: SimTime,
}

/// A file's revision in place: from `at`, the file at `path` is `version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revision {
    pub path: String,
    pub version: usize,
    pub at: SimTime,
}

/// The site; cheap to share (`Arc`), built once per run.
#[derive(Debug)]
pub struct ChangingSite {
    params: ChangingParams,
    clock: SimClock,
    /// Per section, its items in order of publication.
    sections: Vec<Vec<Item>>,
}

/// Plain pages every crawl finds from the home page.
const PLAIN_PAGES: [(&str, &str); 3] = [
    ("/about", "About this office"),
    ("/contact", "Contact"),
    ("/help", "How to use our data"),
];

/// A draw from the exponential law of rate `per_day`, in simulated seconds (≥ 1).
fn exponential(rng: &mut Rng, per_day: f64) -> i64 {
    let u = rng.unit();
    let days = -(1.0 - u).ln() / per_day.max(1e-9);
    ((days * DAY as f64).ceil() as i64).max(1)
}

impl ChangingSite {
    pub fn new(params: ChangingParams, clock: SimClock) -> ChangingSite {
        let start = -i64::from(params.history_days) * DAY;
        let end = i64::from(params.horizon_days) * DAY;
        let sections = (0..params.sections)
            .map(|s| {
                let rate = params.rate(s);
                let mut rng = Rng::new(params.seed, &[0xC4A9, s as u64]);
                let mut items = Vec::new();
                let mut t = start;
                loop {
                    t += exponential(&mut rng, rate);
                    if t > end {
                        break;
                    }
                    let index = items.len();
                    let mut revisions = Vec::new();
                    let mut item_rng = Rng::new(params.seed, &[0x4E71, s as u64, index as u64]);
                    if item_rng.chance(params.revised_share) {
                        let mut r = t;
                        loop {
                            r += exponential(&mut item_rng, params.revisions_per_day);
                            if r > end {
                                break;
                            }
                            revisions.push(SimTime(r));
                        }
                    }
                    items.push(Item {
                        section: s,
                        index,
                        kind: FileKind::ALL[index % FileKind::ALL.len()],
                        published: SimTime(t),
                        revisions,
                    });
                }
                items
            })
            .collect();
        ChangingSite {
            params,
            clock,
            sections,
        }
    }

    pub fn params(&self) -> &ChangingParams {
        &self.params
    }

    pub fn clock(&self) -> &SimClock {
        &self.clock
    }

    /// The site under its host name, for [`super::SiteServer::start`].
    pub fn sites(self: &Arc<Self>) -> Vec<(String, Arc<dyn Site>)> {
        vec![(HOST.to_string(), Arc::clone(self) as Arc<dyn Site>)]
    }

    /// Every item of every section.
    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.sections.iter().flatten()
    }

    /// The item served at `path` (published or not).
    pub fn item(&self, path: &str) -> Option<&Item> {
        let rest = path.strip_prefix("/s/")?;
        let (section, rest) = rest.split_once("/files/")?;
        let section: usize = section.parse().ok()?;
        let (stem, ext) = rest.rsplit_once('.')?;
        let (s2, index) = stem.split_once('-')?;
        let item = self
            .sections
            .get(section)?
            .get(index.parse::<usize>().ok()?)?;
        // Only the one spelling the site links to (no `/s/01/`, no `3-42.csv`).
        (s2 == section.to_string() && item.path() == path && item.kind == FileKind::from_ext(ext)?)
            .then_some(item)
    }

    /// Every publication, in time order (history included).
    pub fn publications(&self) -> Vec<Publication> {
        let mut out: Vec<Publication> = self
            .items()
            .map(|i| Publication {
                path: i.path(),
                section: i.section,
                at: i.published,
            })
            .collect();
        out.sort_by(|a, b| (a.at, &a.path).cmp(&(b.at, &b.path)));
        out
    }

    /// Every revision in place, in time order.
    pub fn revisions(&self) -> Vec<Revision> {
        let mut out: Vec<Revision> = self
            .items()
            .flat_map(|i| {
                i.revisions.iter().enumerate().map(|(v, &at)| Revision {
                    path: i.path(),
                    version: v + 1,
                    at,
                })
            })
            .collect();
        out.sort_by(|a, b| (a.at, &a.path).cmp(&(b.at, &b.path)));
        out
    }

    /// Items of `section` published at or before `t`.
    fn visible(&self, section: usize, t: SimTime) -> &[Item] {
        let items = &self.sections[section];
        &items[..items.partition_point(|i| i.published <= t)]
    }

    /// Listing pages of `section` at `t` (at least one, maybe empty).
    pub fn listing_pages(&self, section: usize, t: SimTime) -> usize {
        self.visible(section, t)
            .len()
            .div_ceil(self.params.per_page.max(1))
            .max(1)
    }

    /// Distinct URLs of the site at `t`, robots.txt and the logo included:
    /// what a first full pass costs (one less for a job whose `block_ext`
    /// skips the logo, as the default does).
    pub fn urls_at(&self, t: SimTime) -> usize {
        // Home, the plain pages, the logo and robots.txt.
        let fixed = 1 + PLAIN_PAGES.len() + 1 + 1;
        fixed
            + (0..self.sections.len())
                .map(|s| 1 + self.listing_pages(s, t) + self.visible(s, t).len())
                .sum::<usize>()
    }

    /// When the site's plain pages were written: the start of its history.
    fn origin(&self) -> SimTime {
        SimTime(-i64::from(self.params.history_days) * DAY)
    }

    /// The answer to `req` at simulated time `t`: a pure function of the
    /// site and `t` (and of the clock's wall-clock mapping, for `Last-Modified`).
    pub fn respond_at(&self, req: &SiteRequest, t: SimTime) -> SiteResponse {
        let Some((content_type, body, modified)) = self.content(req, t) else {
            return SiteResponse::not_found();
        };
        let etag = format!("\"{:016x}\"", body_digest(&body));
        let wall = self.clock.wall_of(modified);
        let resp = if not_modified(req, &etag, wall) {
            SiteResponse::new(StatusCode::NOT_MODIFIED)
        } else {
            SiteResponse::ok(content_type, body)
        };
        let mut resp = resp.with_header(
            header::LAST_MODIFIED,
            HeaderValue::from_str(&httpdate::fmt_http_date(wall))
                .unwrap_or(HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT")),
        );
        if let Ok(v) = HeaderValue::from_str(&etag) {
            resp = resp.with_header(header::ETAG, v);
        }
        resp
    }

    /// Type, body and last change of what `req` names at `t`.
    fn content(&self, req: &SiteRequest, t: SimTime) -> Option<(&'static str, Bytes, SimTime)> {
        let path = req.path.as_str();
        let html = "text/html; charset=utf-8";
        match path {
            "/" => return Some((html, self.home().into(), self.origin())),
            "/robots.txt" => {
                return Some((
                    "text/plain; charset=utf-8",
                    Bytes::from_static(b"User-agent: *\nAllow: /\n"),
                    self.origin(),
                ))
            }
            "/img/logo.png" => return Some(("image/png", Bytes::from_static(PNG), self.origin())),
            _ => {}
        }
        if let Some((_, title)) = PLAIN_PAGES.iter().find(|(p, _)| *p == path) {
            return Some((html, self.plain(title).into(), self.origin()));
        }
        let rest = path.strip_prefix("/s/")?;
        let (digits, tail) = rest.split_once('/')?;
        let section: usize = digits.parse().ok()?;
        // One spelling per page: `/s/01/` is not `/s/1/`.
        if section >= self.sections.len() || digits != section.to_string() {
            return None;
        }
        match tail {
            "" => {
                let page = match req.query_pairs().as_slice() {
                    [] => 1,
                    [(k, v)] if k == "page" => v.parse().ok().filter(|&p| p >= 2)?,
                    _ => return None,
                };
                let body = self.listing(section, page, t)?;
                let newest = self
                    .visible(section, t)
                    .last()
                    .map_or(self.origin(), |i| i.published);
                Some((html, body.into(), newest))
            }
            "about" => Some((html, self.section_about(section).into(), self.origin())),
            _ => {
                let item = self.item(path)?;
                let version = item.version_at(t)?;
                Some((
                    item.kind.mime(),
                    file_body(&self.params, item, version),
                    item.modified_at(t)?,
                ))
            }
        }
    }

    fn nav(&self, out: &mut String) {
        out.push_str("<nav><a href=\"/\">Home</a>");
        for s in 0..self.sections.len() {
            let _ = write!(out, " <a href=\"/s/{s}/\">Section {s}</a>");
        }
        for (p, title) in PLAIN_PAGES {
            let _ = write!(out, " <a href=\"{p}\">{title}</a>");
        }
        out.push_str("</nav>");
    }

    fn page(&self, title: &str, main: &str) -> String {
        let mut out = format!(
            "<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\
             <header><img src=\"/img/logo.png\" alt=\"logo\"></header>"
        );
        self.nav(&mut out);
        let _ = writeln!(out, "<main><h1>{title}</h1>{main}</main></body></html>");
        out
    }

    fn home(&self) -> String {
        let mut main = String::from("<p>Statistics published by section.</p><ul>");
        for s in 0..self.sections.len() {
            let _ = write!(
                main,
                "<li><a href=\"/s/{s}/\">Section {s}: latest files</a> \
                 (<a href=\"/s/{s}/about\">about</a>)</li>"
            );
        }
        main.push_str("</ul><p><a href=\"/img/logo.png\">Our logo</a></p>");
        self.page("Statistics office", &main)
    }

    fn plain(&self, title: &str) -> String {
        self.page(title, "<p>Nothing to download here.</p>")
    }

    fn section_about(&self, section: usize) -> String {
        self.page(
            &format!("About section {section}"),
            &format!("<p>What section {section} publishes. <a href=\"/s/{section}/\">Latest files</a>.</p>"),
        )
    }

    /// Listing page `page` (1-based) of `section` at `t`, newest first;
    /// `None` past the last page.
    fn listing(&self, section: usize, page: usize, t: SimTime) -> Option<String> {
        let pages = self.listing_pages(section, t);
        if page > pages {
            return None;
        }
        let visible = self.visible(section, t);
        let per = self.params.per_page.max(1);
        let newest = visible.len().saturating_sub((page - 1) * per);
        let oldest = newest.saturating_sub(per);
        let mut main = String::from("<ul class=\"files\">");
        for item in visible[oldest..newest].iter().rev() {
            let _ = write!(
                main,
                "<li><a href=\"files/{name}\">Release {s}-{i} ({ext})</a> <time>day {d:.2}</time></li>",
                name = item.path().rsplit('/').next().unwrap_or_default(),
                s = section,
                i = item.index,
                ext = item.kind.ext().to_ascii_uppercase(),
                d = item.published.days()
            );
        }
        main.push_str("</ul><nav class=\"pages\">");
        let href = |p: usize| {
            if p == 1 {
                format!("/s/{section}/")
            } else {
                format!("/s/{section}/?page={p}")
            }
        };
        if page > 1 {
            let _ = write!(
                main,
                "<a rel=\"prev\" href=\"{}\">Newer</a> ",
                href(page - 1)
            );
        }
        for p in 1..=pages {
            let _ = write!(main, "<a href=\"{}\">{p}</a> ", href(p));
        }
        if page < pages {
            let _ = write!(
                main,
                "<a rel=\"next\" href=\"{}\">Older</a>",
                href(page + 1)
            );
        }
        let _ = write!(
            main,
            "</nav><p><a href=\"/s/{section}/about\">About this section</a></p>"
        );
        Some(self.page(&format!("Section {section}, page {page}"), &main))
    }
}

/// The bytes of `item` at `version`: a pure function of the seed, item and version.
fn file_body(params: &ChangingParams, item: &Item, version: usize) -> Bytes {
    let mut rng = Rng::new(
        params.seed,
        &[
            0xF11E,
            item.section as u64,
            item.index as u64,
            version as u64,
        ],
    );
    let rows = 20 + rng.below(60);
    let mut out: Vec<u8> = Vec::new();
    match item.kind {
        FileKind::Csv => {
            out.extend_from_slice(b"year,region,value\n");
            for _ in 0..rows {
                let line = format!(
                    "{},{},{}\n",
                    2000 + rng.below(26),
                    rng.below(40),
                    rng.below(1_000_000)
                );
                out.extend_from_slice(line.as_bytes());
            }
        }
        FileKind::Pdf => {
            out.extend_from_slice(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\nstream\n");
            for _ in 0..rows * 4 {
                out.extend_from_slice(&rng.next_u64().to_le_bytes());
            }
            out.extend_from_slice(b"\nendstream\n%%EOF\n");
        }
        FileKind::Xlsx => {
            out.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00\x08\x00");
            for _ in 0..rows * 4 {
                out.extend_from_slice(&rng.next_u64().to_le_bytes());
            }
            out.extend_from_slice(b"PK\x05\x06");
        }
    }
    Bytes::from(out)
}

/// A stable 64-bit digest of a body, for its `ETag`.
fn body_digest(body: &[u8]) -> u64 {
    let words: Vec<u64> = body
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    hash(body.len() as u64, &words)
}

/// Whether a conditional request's validator still holds (RFC 9110 § 13.2.2:
/// `If-None-Match` decides when present; `If-Modified-Since`, to the second, otherwise).
fn not_modified(req: &SiteRequest, etag: &str, modified: SystemTime) -> bool {
    let inm: Vec<&str> = req
        .headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if !inm.is_empty() {
        // Weak comparison, as for GET: a `W/` prefix does not matter.
        return inm.iter().flat_map(|v| v.split(',')).any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == etag
        });
    }
    let Some(since) = req
        .headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok())
    else {
        return false;
    };
    let modified_secs = modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let since_secs = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    modified_secs <= since_secs
}

/// A 1×1 transparent PNG: the site's one link that is neither page nor target.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

impl Site for ChangingSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        self.respond_at(req, self.clock.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sites::server::SiteServer;

    /// A clock whose simulated 0 is a fixed wall-clock moment (2023-11-14).
    fn clock() -> SimClock {
        SimClock {
            real_zero: Instant::now(),
            wall_zero: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            real_day: Duration::from_secs(24),
        }
    }

    fn site(seed: u64) -> ChangingSite {
        ChangingSite::new(ChangingParams::new(8, seed).with_horizon_days(10), clock())
    }

    fn get(site: &ChangingSite, path: &str, t: SimTime) -> SiteResponse {
        site.respond_at(&SiteRequest::get(HOST, path), t)
    }

    fn body(resp: SiteResponse) -> String {
        String::from_utf8_lossy(&resp.body.read_capped(1 << 20).bytes).into_owned()
    }

    #[test]
    fn the_same_seed_makes_the_same_site_and_another_seed_another() {
        let (a, b, c) = (site(1), site(1), site(2));
        assert_eq!(a.publications(), b.publications());
        assert_eq!(a.revisions(), b.revisions());
        assert_ne!(a.publications(), c.publications());
        let t = SimTime::from_days(3.5);
        for p in a.publications().iter().take(40) {
            let (ra, rb) = (get(&a, &p.path, t), get(&b, &p.path, t));
            assert_eq!(ra.header_str(header::ETAG), rb.header_str(header::ETAG));
            assert_eq!(body(ra), body(rb));
        }
        assert_eq!(body(get(&a, "/s/0/", t)), body(get(&b, "/s/0/", t)));
    }

    #[test]
    fn sections_publish_at_their_rates_and_revisions_follow_publication() {
        let mut params = ChangingParams::new(6, 3).with_horizon_days(200);
        params.history_days = 0;
        let s = ChangingSite::new(params, clock());
        let pubs = s.publications();
        assert!(pubs.windows(2).all(|w| w[0].at <= w[1].at));
        for k in 0..6 {
            let n = pubs.iter().filter(|p| p.section == k).count() as f64;
            let expected = params.rate(k) * 200.0;
            // A Poisson count: within 5 standard deviations (and 3 events).
            assert!(
                (n - expected).abs() <= 5.0 * expected.sqrt() + 3.0,
                "section {k}: {n} publications, {expected} expected"
            );
        }
        // Busy sections and almost dead ones.
        assert!(s.sections[0].len() > 10 * s.sections[5].len().max(1));
        let revised = s.items().filter(|i| !i.revisions.is_empty()).count() as f64;
        let share = revised / s.items().count() as f64;
        assert!((0.15..0.35).contains(&share), "revised share {share}");
        for item in s.items() {
            assert!(item.revisions.windows(2).all(|w| w[0] < w[1]));
            assert!(item.revisions.iter().all(|&r| r > item.published));
            assert!(item.published.0 <= 200 * DAY);
            assert_eq!(s.item(&item.path()), Some(item));
        }
        let revisions = s.revisions();
        assert_eq!(
            revisions.len(),
            s.items().map(|i| i.revisions.len()).sum::<usize>()
        );
    }

    #[test]
    fn a_file_appears_on_its_listing_when_published_and_not_before() {
        let s = site(1);
        let item = s
            .items()
            .find(|i| i.section == 0 && i.published > SimTime(0))
            .cloned()
            .expect("section 0 publishes after time 0");
        let before = SimTime(item.published.0 - 1);
        let at = item.published;
        let name = item.path().rsplit('/').next().map(str::to_string).unwrap();
        assert_eq!(get(&s, &item.path(), before).status, StatusCode::NOT_FOUND);
        assert!(!body(get(&s, "/s/0/", before)).contains(&name));
        let file = get(&s, &item.path(), at);
        assert_eq!(file.status, StatusCode::OK);
        assert_eq!(file.content_type(), Some(item.kind.mime()));
        // Newest first: the new file is the first link of page 1.
        let listing = body(get(&s, "/s/0/", at));
        let first = listing.find("files/").unwrap();
        assert_eq!(&listing[first + 6..first + 6 + name.len()], name);
        // Older files move to the later pages, which all exist and link each other.
        let pages = s.listing_pages(0, at);
        assert!(pages >= 2, "two weeks of section 0 fill more than a page");
        let last = body(get(&s, &format!("/s/0/?page={pages}"), at));
        assert!(last.contains("rel=\"prev\"") && !last.contains("rel=\"next\""));
        assert!(last.contains(
            &s.sections[0][0]
                .path()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        ));
        for bad in [
            format!("/s/0/?page={}", pages + 1),
            "/s/0/?page=1".into(),
            "/s/00/".into(),
            "/s/99/".into(),
            "/s/0/files/0-12.csv".into(),
            "/nothing".into(),
        ] {
            assert_eq!(get(&s, &bad, at).status, StatusCode::NOT_FOUND, "{bad}");
        }
        // Home links every section, the plain pages and one image.
        let home = body(get(&s, "/", at));
        for link in [
            "/s/0/",
            "/s/7/",
            "/about",
            "/contact",
            "/help",
            "/img/logo.png",
        ] {
            assert!(home.contains(&format!("href=\"{link}\"")), "{link}");
        }
        assert_eq!(
            get(&s, "/img/logo.png", at).content_type(),
            Some("image/png")
        );
    }

    #[test]
    fn conditional_requests_get_304_until_the_content_changes() {
        let s = site(1);
        let item = s
            .items()
            .find(|i| i.revisions.iter().any(|r| r.0 > 0))
            .cloned()
            .expect("a file revised after time 0");
        let change = *item.revisions.iter().find(|r| r.0 > 0).unwrap();
        let t = SimTime(change.0 - 1);
        let first = get(&s, &item.path(), t);
        let etag = first.header_str(header::ETAG).unwrap().to_string();
        let modified = first.header_str(header::LAST_MODIFIED).unwrap().to_string();
        let ask = |inm: Option<&str>, ims: Option<&str>, at: SimTime| {
            let mut req = SiteRequest::get(HOST, &item.path());
            if let Some(v) = inm {
                req.headers
                    .insert(header::IF_NONE_MATCH, HeaderValue::from_str(v).unwrap());
            }
            if let Some(v) = ims {
                req.headers
                    .insert(header::IF_MODIFIED_SINCE, HeaderValue::from_str(v).unwrap());
            }
            s.respond_at(&req, at)
        };
        let same = ask(Some(&etag), None, t);
        assert_eq!(same.status, StatusCode::NOT_MODIFIED);
        assert!(same.body.is_empty());
        assert_eq!(same.header_str(header::ETAG), Some(etag.as_str()));
        assert_eq!(ask(Some(&format!("W/{etag}")), None, t).status, 304);
        assert_eq!(ask(Some(&format!("\"x\", {etag}")), None, t).status, 304);
        assert_eq!(ask(None, Some(&modified), t).status, 304);
        // If-None-Match decides when present, even against a valid date.
        assert_eq!(ask(Some("\"other\""), Some(&modified), t).status, 200);
        let old = httpdate::fmt_http_date(
            httpdate::parse_http_date(&modified).unwrap() - Duration::from_secs(5),
        );
        assert_eq!(ask(None, Some(&old), t).status, 200);
        // After the revision: a new body, a new ETag, a later Last-Modified.
        let changed = ask(Some(&etag), Some(&modified), change);
        assert_eq!(changed.status, StatusCode::OK);
        let new_etag = changed.header_str(header::ETAG).unwrap().to_string();
        assert_ne!(new_etag, etag);
        let new_modified = changed.header_str(header::LAST_MODIFIED).unwrap();
        assert_eq!(
            httpdate::parse_http_date(new_modified).unwrap(),
            httpdate::parse_http_date(&httpdate::fmt_http_date(s.clock.wall_of(change))).unwrap()
        );
        assert_eq!(ask(None, Some(&modified), change).status, 200);
        // A listing changes with each publication of its section, and only then.
        let pubs: Vec<SimTime> = s.sections[0]
            .iter()
            .map(|i| i.published)
            .filter(|p| p.0 > 0)
            .collect();
        let listing = |at: SimTime| {
            get(&s, "/s/0/", at)
                .header_str(header::ETAG)
                .map(str::to_string)
        };
        assert_eq!(listing(SimTime(pubs[1].0 - 1)), listing(pubs[0]));
        assert_ne!(listing(pubs[1]), listing(pubs[0]));
    }

    #[test]
    fn the_clock_maps_real_to_simulated_time() {
        let c = clock();
        assert_eq!(c.sim_at(c.real_zero), SimTime(0));
        assert_eq!(
            c.sim_at(c.real_zero + Duration::from_secs(24)),
            SimTime(DAY)
        );
        assert_eq!(
            c.sim_at(c.real_zero + Duration::from_secs(1)),
            SimTime(HOUR)
        );
        assert_eq!(c.real_of(DAY / 2), Duration::from_secs(12));
        assert_eq!(
            c.wall_of(SimTime(HOUR)),
            c.wall_zero + Duration::from_secs(1)
        );
        assert_eq!(
            c.wall_of(SimTime(-DAY)),
            c.wall_zero - Duration::from_secs(24)
        );
        assert_eq!(SimTime::from_days(1.5).hours(), 36.0);
    }

    /// Through the real server: the validators a client gets back make its
    /// next request a 304, and the server's log says so.
    #[tokio::test]
    async fn the_server_answers_conditional_requests() {
        let s = Arc::new(ChangingSite::new(
            ChangingParams::new(3, 1),
            SimClock::starting_now(Duration::from_secs(3600)),
        ));
        let server = SiteServer::start(s.sites()).await.unwrap();
        let client = reqwest::Client::builder()
            .no_proxy()
            .resolve(HOST, server.addr())
            .build()
            .unwrap();
        let url = server.url_for(HOST).unwrap().join("s/0/").unwrap();
        let first = client.get(url.clone()).send().await.unwrap();
        assert_eq!(first.status(), 200);
        let etag = first.headers()["etag"].clone();
        let modified = first.headers()["last-modified"].clone();
        let again = client
            .get(url.clone())
            .header("if-none-match", etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304);
        let by_date = client
            .get(url)
            .header("if-modified-since", modified)
            .send()
            .await
            .unwrap();
        assert_eq!(by_date.status(), 304);
        let statuses: Vec<u16> = server.log().iter().map(|r| r.status).collect();
        assert_eq!(statuses, vec![200, 304, 304]);
        server.shutdown().await.unwrap();
    }
}
