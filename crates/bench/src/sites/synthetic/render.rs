//! The HTML of each page kind (home, static pages, listings, articles,
//! datasets, the calendar, print versions) in each section's markup.

use super::layout::{
    title_case, PageKind, UrlStyle, CALENDAR_START, LOOK_NAMES, SESSION_POOL, STATICS, WORDS,
};
use super::urls::{relative_href, session_id, Sort, Variant};
use super::{Pagination, SyntheticSite};
use crate::sites::rng::{hash, unit_of, Rng};
use std::fmt::Write as _;

/// The markup vocabulary of a section: class and id names and the layout of
/// listings, file blocks and related lists.
pub(super) struct Look {
    wrapper_open: &'static str,
    wrapper_close: &'static str,
    main_open: &'static str,
    main_close: &'static str,
    listing: ListingMarkup,
    pub(super) files: FilesMarkup,
    related_open: &'static str,
    related_close: &'static str,
}

#[derive(Clone, Copy)]
enum ListingMarkup {
    Table,
    List,
    Cards,
    DefList,
}

#[derive(Clone, Copy)]
pub(super) enum FilesMarkup {
    /// `table.files td a.dl`
    Table,
    /// `ul.downloads li span.file a.file-link`
    List,
    /// `div.resources div.resource-item a.btn.btn-download`
    Buttons,
    /// `div.field-attachments table.sticky-enabled td span.file a`
    Attachments,
}

/// In the order of [`LOOK_NAMES`].
pub(super) const LOOKS: [Look; LOOK_NAMES.len()] = [
    Look {
        wrapper_open: "<div class=\"container\"><div class=\"row\">",
        wrapper_close: "</div></div>",
        main_open: "<main id=\"content\" class=\"col-md-9\">",
        main_close: "</main>",
        listing: ListingMarkup::Table,
        files: FilesMarkup::Table,
        related_open: "<aside class=\"col-md-3 sidebar\"><h2>Related</h2><ul class=\"related\">",
        related_close: "</ul></aside>",
    },
    Look {
        wrapper_open: "<div id=\"page\" class=\"layout-container\"><div class=\"region region-content\">",
        wrapper_close: "</div></div>",
        main_open: "<div id=\"main\" class=\"node node--full\" role=\"main\">",
        main_close: "</div>",
        listing: ListingMarkup::List,
        files: FilesMarkup::Attachments,
        related_open: "<div class=\"block block-views\"><h2 class=\"block-title\">See also</h2><div class=\"item-list\"><ul>",
        related_close: "</ul></div></div>",
    },
    Look {
        wrapper_open: "<div class=\"l-page\"><div class=\"l-main\">",
        wrapper_close: "</div></div>",
        main_open: "<section class=\"main-content\" id=\"primary\">",
        main_close: "</section>",
        listing: ListingMarkup::Cards,
        files: FilesMarkup::Buttons,
        related_open: "<section class=\"more-like-this\"><h2>More like this</h2><ul class=\"teasers\">",
        related_close: "</ul></section>",
    },
    Look {
        wrapper_open: "<div class=\"document\"><div class=\"documentwrapper\">",
        wrapper_close: "</div></div>",
        main_open: "<div class=\"body\" role=\"main\">",
        main_close: "</div>",
        listing: ListingMarkup::DefList,
        files: FilesMarkup::List,
        related_open: "<div class=\"sphinxsidebar\"><h3>Related topics</h3><ul class=\"simple\">",
        related_close: "</ul></div>",
    },
];

impl SyntheticSite {
    // -- rendering ---------------------------------------------------------

    pub(super) fn render_page(&self, gid: u64, sort: Option<Sort>) -> Option<String> {
        let kind = self.kind_of(gid)?;
        let path = match sort {
            Some(sort) => match kind {
                PageKind::Listing { sec, k } => self.sorted_path(sec, k, sort),
                _ => return None,
            },
            None => self.page_path(gid)?,
        };
        let (sec, title) = match kind {
            PageKind::Home => (None, "Home".to_string()),
            PageKind::Static(n) => (None, STATICS[n].1.to_string()),
            PageKind::Listing { sec, k } => (
                Some(sec),
                if k == 0 {
                    self.sections[sec].title.clone()
                } else {
                    format!("{} – page {}", self.sections[sec].title, k + 1)
                },
            ),
            PageKind::Item { sec, .. } => (Some(sec), title_case(&self.stem(0x71, gid, 4))),
        };
        let relative = sec.is_some_and(|s| self.sections[s].style == UrlStyle::Docs);
        let mut w = PageWriter {
            site: self,
            out: String::with_capacity(self.params.page_bytes.1 as usize + 4096),
            path: path.clone(),
            relative,
            rng: Rng::new(self.params.seed, &[0xB0, gid]),
        };
        let look = &LOOKS[sec.map_or(0, |s| self.sections[s].look)];
        w.head(&title, sec);
        w.breadcrumb(sec, &title, Some(gid));
        w.out.push_str(look.wrapper_open);
        w.out.push_str(look.main_open);
        let _ = write!(w.out, "<h1 class=\"page-title\">{title}</h1>");
        let mut related: Vec<u64> = Vec::new();
        match kind {
            PageKind::Home => w.home(),
            PageKind::Static(n) => w.static_page(n),
            PageKind::Listing { sec, k } => w.listing(sec, k, sort),
            PageKind::Item { sec, i } => related = w.item(sec, i, gid),
        }
        let size = self.page_size(gid);
        w.pad_to(size);
        w.out.push_str(look.main_close);
        if !related.is_empty() {
            w.out.push_str(look.related_open);
            for r in related {
                let href = self.page_path(r)?;
                let label = title_case(&self.stem(0x71, r, 4));
                w.out.push_str("<li>");
                w.link(&href, None, &label);
                w.out.push_str("</li>");
            }
            w.out.push_str(look.related_close);
        }
        w.out.push_str(look.wrapper_close);
        w.footer(gid, true);
        Some(w.out)
    }

    fn page_size(&self, gid: u64) -> usize {
        let (lo, hi) = self.params.page_bytes;
        let u = unit_of(hash(self.params.seed, &[0x51, gid]));
        // Skewed towards small pages, as on real sites.
        lo as usize + ((hi - lo) as f64 * u * u) as usize
    }

    pub(super) fn calendar_page(&self, year: u32, month: u32) -> String {
        let path = Self::calendar_path(year, month);
        let mut w = PageWriter {
            site: self,
            out: String::with_capacity(8192),
            path,
            relative: false,
            rng: Rng::new(self.params.seed, &[0xCA, u64::from(year), u64::from(month)]),
        };
        let title = format!("Events – {year:04}-{month:02}");
        w.head(&title, None);
        w.out
            .push_str("<div class=\"calendar-page\"><main id=\"calendar\">");
        let _ = write!(w.out, "<h1>{title}</h1><nav class=\"calendar-nav\">");
        let (py, pm) = if month == 1 {
            (year - 1, 12)
        } else {
            (year, month - 1)
        };
        let (ny, nm) = if month == 12 {
            (year + 1, 1)
        } else {
            (year, month + 1)
        };
        if py >= 1 {
            w.link(
                &Self::calendar_path(py, pm),
                Some("prev"),
                "‹ Previous month",
            );
        }
        if ny <= 9999 {
            w.link(&Self::calendar_path(ny, nm), Some("next"), "Next month ›");
        }
        w.out.push_str("</nav><table class=\"month\"><tr>");
        for d in 1..=28u32 {
            let _ = write!(w.out, "<td class=\"day\">{d}</td>");
            if d % 7 == 0 {
                w.out.push_str("</tr><tr>");
            }
        }
        w.out.push_str("</tr></table><ul class=\"events\">");
        // Events point at real articles, so the trap looks useful.
        let content: Vec<usize> = (0..self.sections.len())
            .filter(|&s| !self.sections[s].data && self.sections[s].items > 0)
            .collect();
        if let Some(&sec) = content.first() {
            for _ in 0..3 {
                let i = w.rng.below(self.sections[sec].items);
                let href = self.item_path(sec, i);
                let label = title_case(&self.stem(0x71, self.item_gid(sec, i), 4));
                w.out.push_str("<li class=\"event\">");
                w.link(&href, None, &label);
                w.out.push_str("</li>");
            }
        }
        w.out.push_str("</ul></main></div>");
        w.footer(u64::from(year) * 12 + u64::from(month), false);
        w.out
    }

    pub(super) fn print_page(&self, gid: u64) -> Option<String> {
        let title = title_case(&self.stem(0x71, gid, 4));
        let mut rng = Rng::new(self.params.seed, &[0xB0, gid]);
        let mut out = format!(
            "<!DOCTYPE html>\n<html><head><title>{title} (print)</title></head><body class=\"print\"><h1>{title}</h1>"
        );
        for _ in 0..4 {
            out.push_str("<p>");
            paragraph(&mut out, &mut rng);
            out.push_str("</p>");
        }
        let back = self.page_path(gid)?;
        let _ = writeln!(
            out,
            "<p><a href=\"{back}\">Back to the article</a></p></body></html>"
        );
        Some(out)
    }
}

/// Writes one HTML page.
struct PageWriter<'a> {
    site: &'a SyntheticSite,
    out: String,
    /// Path of the page being written (for relative hrefs).
    path: String,
    /// Write hrefs relative to `path`, like Sphinx.
    relative: bool,
    rng: Rng,
}

impl PageWriter<'_> {
    fn link(&mut self, href: &str, class: Option<&str>, text: &str) {
        let href = if self.relative {
            relative_href(&self.path, href)
        } else {
            href.to_string()
        };
        let href = href.replace('&', "&amp;");
        match class {
            Some(c) => {
                let _ = write!(self.out, "<a class=\"{c}\" href=\"{href}\">{text}</a>");
            }
            None => {
                let _ = write!(self.out, "<a href=\"{href}\">{text}</a>");
            }
        }
    }

    fn head(&mut self, title: &str, sec: Option<usize>) {
        let site = self.site;
        let body_class = sec.map_or("front", |s| site.sections[s].slug.as_str());
        let _ = write!(
            self.out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title} | Statistics Office</title>\
             <link rel=\"stylesheet\" href=\"/static/site.css\">\
             <meta name=\"description\" content=\"{title}: official statistics, data and publications\">\
             </head>\n<body class=\"page-{body_class}\">\
             <header id=\"site-header\" class=\"header\"><div class=\"logo\">"
        );
        self.link("/", Some("brand"), "Statistics Office");
        self.out
            .push_str("</div><nav id=\"main-menu\" class=\"navbar\"><ul class=\"menu\">");
        self.out.push_str("<li class=\"menu-item\">");
        self.link("/", None, "Home");
        self.out.push_str("</li>");
        for s in 0..site.sections.len() {
            let href = site.listing_path(s, 0);
            self.out.push_str("<li class=\"menu-item\">");
            self.link(&href, None, &site.sections[s].title);
            self.out.push_str("</li>");
        }
        if site.params.calendar_trap {
            let (y, m) = CALENDAR_START;
            self.out.push_str("<li class=\"menu-item\">");
            self.link(&SyntheticSite::calendar_path(y, m), None, "Events");
            self.out.push_str("</li>");
        }
        self.out.push_str("<li class=\"menu-item\">");
        self.link("/about", None, "About");
        self.out.push_str("</li></ul></nav></header>\n");
    }

    /// `variants_of`: the page whose print-preview or edit link, if any, sits in the trail.
    fn breadcrumb(&mut self, sec: Option<usize>, title: &str, variants_of: Option<u64>) {
        self.out
            .push_str("<nav aria-label=\"breadcrumb\"><ol class=\"breadcrumb\"><li>");
        self.link("/", None, "Home");
        self.out.push_str("</li>");
        if let Some(s) = sec {
            let href = self.site.listing_path(s, 0);
            let site = self.site;
            self.out.push_str("<li>");
            self.link(&href, None, &site.sections[s].title);
            self.out.push_str("</li>");
        }
        if let Some(gid) = variants_of.filter(|_| self.site.params.variant_links) {
            for kind in self.site.variants_of(gid) {
                let text = match kind {
                    Variant::Preview => "Print preview",
                    Variant::Edit => "Edit this page",
                    Variant::Source | Variant::Raw => continue,
                };
                self.out.push_str("<li>");
                self.link(&kind.path(gid), None, text);
                self.out.push_str("</li>");
            }
        }
        let _ = writeln!(self.out, "<li class=\"active\">{title}</li></ol></nav>");
    }

    /// `variants`: `gid` is a page whose source and raw links belong here.
    fn footer(&mut self, gid: u64, variants: bool) {
        let site = self.site;
        self.out
            .push_str("\n<footer class=\"site-footer\"><div class=\"footer-links\">");
        if variants && site.params.variant_links {
            for kind in site.variants_of(gid) {
                let text = match kind {
                    Variant::Source => "View page source",
                    Variant::Raw => "Raw",
                    Variant::Preview | Variant::Edit => continue,
                };
                self.link(&kind.path(gid), None, text);
            }
        }
        self.link("/about", None, "About us");
        self.link("/legal", None, "Legal notice");
        let contact = if site.params.near_duplicates {
            format!(
                "/contact?sessionid={}",
                session_id(site.params.seed, gid % SESSION_POOL)
            )
        } else {
            "/contact".to_string()
        };
        self.link(&contact, None, "Contact");
        self.link("/sitemap", None, "Site map");
        self.out.push_str(
            "</div><p class=\"copyright\">© Statistics Office. Reuse is authorised provided the source is acknowledged.</p>\
             </footer>\n</body></html>\n",
        );
    }

    fn pad_to(&mut self, size: usize) {
        // The footer and closing tags add ~700 bytes.
        while self.out.len() + 700 < size {
            self.out.push_str("<p>");
            let mut p = String::with_capacity(600);
            paragraph(&mut p, &mut self.rng);
            self.out.push_str(&p);
            self.out.push_str("</p>\n");
        }
    }

    fn home(&mut self) {
        let site = self.site;
        self.out
            .push_str("<section class=\"portal\"><p class=\"lead\">");
        paragraph(&mut self.out, &mut self.rng);
        self.out.push_str("</p><div class=\"portal-sections\">");
        for s in 0..site.sections.len() {
            let sec = &site.sections[s];
            self.out.push_str("<div class=\"portal-block\"><h2>");
            self.link(&site.listing_path(s, 0), None, &sec.title);
            self.out.push_str("</h2><ul class=\"featured\">");
            for i in 0..sec.items.min(3) {
                let gid = site.item_gid(s, i);
                self.out.push_str("<li>");
                self.link(
                    &site.item_path(s, i),
                    None,
                    &title_case(&site.stem(0x71, gid, 4)),
                );
                self.out.push_str("</li>");
            }
            self.out.push_str("</ul></div>");
        }
        self.out.push_str("</div></section>");
    }

    fn static_page(&mut self, n: usize) {
        let site = self.site;
        if STATICS[n].0 == "/sitemap" {
            self.out.push_str("<ul class=\"sitemap\">");
            for s in 0..site.sections.len() {
                self.out.push_str("<li>");
                self.link(&site.listing_path(s, 0), None, &site.sections[s].title);
                self.out.push_str("</li>");
            }
            for (p, t) in STATICS {
                self.out.push_str("<li>");
                self.link(p, None, t);
                self.out.push_str("</li>");
            }
            self.out.push_str("</ul>");
        } else {
            for _ in 0..3 {
                self.out.push_str("<p>");
                paragraph(&mut self.out, &mut self.rng);
                self.out.push_str("</p>");
            }
        }
    }

    fn listing(&mut self, sec: usize, k: u64, sort: Option<Sort>) {
        let site = self.site;
        let s = &site.sections[sec];
        let look = &LOOKS[s.look];
        self.out.push_str("<div class=\"intro\"><p>");
        paragraph(&mut self.out, &mut self.rng);
        self.out.push_str("</p></div>");
        if site.params.near_duplicates {
            self.out.push_str("<div class=\"sort-options\">Sort: ");
            self.link(&site.sorted_path(sec, k, Sort::Asc), None, "oldest first");
            self.link(&site.sorted_path(sec, k, Sort::Desc), None, "newest first");
            self.out.push_str("</div>");
        }
        let pp = u64::from(site.params.per_page);
        let first = k * pp;
        let last = ((k + 1) * pp).min(s.items);
        let mut entries: Vec<u64> = (first..last).collect();
        if sort == Some(Sort::Desc) {
            entries.reverse();
        }
        let (open, close) = match look.listing {
            ListingMarkup::Table => (
                "<table class=\"views-table cols-3\"><thead><tr><th>Title</th><th>Date</th><th></th></tr></thead><tbody>",
                "</tbody></table>",
            ),
            ListingMarkup::List => ("<ul class=\"search-results\">", "</ul>"),
            ListingMarkup::Cards => ("<div class=\"card-deck\">", "</div>"),
            ListingMarkup::DefList => ("<dl class=\"index\">", "</dl>"),
        };
        self.out.push_str(open);
        for i in entries {
            let gid = site.item_gid(sec, i);
            let href = site.item_path(sec, i);
            let title = title_case(&site.stem(0x71, gid, 4));
            let date = format!(
                "{}-{:02}-{:02}",
                site.year_of(0x1E, gid),
                1 + hash(site.params.seed, &[0x1F, gid]) % 12,
                1 + hash(site.params.seed, &[0x20, gid]) % 28
            );
            let files = match site.holder_index(sec, i) {
                Some(j) => format!(" ({} files)", site.holder_targets(sec, j).1),
                None => String::new(),
            };
            match look.listing {
                ListingMarkup::Table => {
                    self.out
                        .push_str("<tr><td class=\"views-field views-field-title\">");
                    self.link(&href, None, &title);
                    let _ = write!(
                        self.out,
                        "{files}</td><td class=\"views-field-date\">{date}</td><td>"
                    );
                    self.link(&href, Some("more"), "Details");
                    self.out.push_str("</td></tr>");
                }
                ListingMarkup::List => {
                    self.out
                        .push_str("<li class=\"result\"><h3 class=\"title\">");
                    self.link(&href, None, &title);
                    let _ = write!(
                        self.out,
                        "</h3><p class=\"meta\">{date}{files}</p><p class=\"teaser\">"
                    );
                    self.words(24);
                    self.out.push(' ');
                    self.link(&href, Some("more-link"), "Read more");
                    self.out.push_str("</p></li>");
                }
                ListingMarkup::Cards => {
                    self.out.push_str(
                        "<div class=\"card\"><div class=\"card-body\"><h2 class=\"card-title\">",
                    );
                    self.link(&href, None, &title);
                    let _ = write!(self.out, "</h2><p class=\"card-text\">{date}{files} ");
                    self.words(16);
                    self.out.push_str("</p>");
                    self.link(&href, Some("btn btn-primary"), "Open");
                    self.out.push_str("</div></div>");
                }
                ListingMarkup::DefList => {
                    self.out.push_str("<dt>");
                    self.link(&href, Some("reference internal"), &title);
                    let _ = write!(self.out, "</dt><dd>{date}{files}</dd>");
                }
            }
        }
        self.out.push_str(close);
        self.pager(sec, k);
    }

    fn pager(&mut self, sec: usize, k: u64) {
        let site = self.site;
        let n = site.sections[sec].listings;
        if n <= 1 {
            return;
        }
        let mut pages: Vec<u64> = Vec::new();
        match site.params.pagination {
            Pagination::Chain => {}
            Pagination::Window(w) => {
                pages.push(0);
                let w = u64::from(w);
                pages.extend(k.saturating_sub(w)..=(k + w).min(n - 1));
                pages.push(n - 1);
            }
            Pagination::Jumps => {
                pages.push(0);
                pages.extend(k.saturating_sub(2)..=(k + 2).min(n - 1));
                for j in [10u64, 100] {
                    if k >= j {
                        pages.push(k - j);
                    }
                    if k + j < n {
                        pages.push(k + j);
                    }
                }
                pages.push(n - 1);
            }
        }
        pages.sort_unstable();
        pages.dedup();
        self.out
            .push_str("<nav class=\"pager\" role=\"navigation\"><ul class=\"pagination\">");
        if k > 0 {
            self.out.push_str("<li class=\"pager-previous\">");
            self.link(&site.listing_path(sec, k - 1), None, "‹ previous");
            self.out.push_str("</li>");
        }
        for p in pages {
            if p == k {
                let _ = write!(self.out, "<li class=\"pager-current\">{}</li>", p + 1);
            } else {
                self.out.push_str("<li class=\"pager-item\">");
                self.link(&site.listing_path(sec, p), None, &(p + 1).to_string());
                self.out.push_str("</li>");
            }
        }
        if k + 1 < n {
            self.out.push_str("<li class=\"pager-next\">");
            self.link(&site.listing_path(sec, k + 1), None, "next ›");
            self.out.push_str("</li>");
        }
        self.out.push_str("</ul></nav>");
    }

    /// Writes an article or dataset page; returns the related pages.
    fn item(&mut self, sec: usize, i: u64, gid: u64) -> Vec<u64> {
        let site = self.site;
        let s = &site.sections[sec];
        let p = &site.params;
        let _ = write!(
            self.out,
            "<div class=\"meta\"><span class=\"date\">{}</span> <span class=\"author\">{}</span></div>",
            site.year_of(0x1E, gid),
            title_case(&site.stem(0x72, gid, 2))
        );
        // Body text with inline links to neighbouring articles.
        let near = |d: i64| -> Option<u64> {
            let j = i as i64 + d;
            (j >= 0 && (j as u64) < s.items && j as u64 != i).then_some(j as u64)
        };
        for par in 0..3 {
            self.out.push_str("<p>");
            paragraph(&mut self.out, &mut self.rng);
            let d = self.rng.between(1, 6) as i64 * if par % 2 == 0 { 1 } else { -1 };
            if let Some(j) = near(d) {
                self.out.push(' ');
                let label = title_case(&site.stem(0x71, site.item_gid(sec, j), 3));
                self.link(&site.item_path(sec, j), None, &label);
            }
            self.out.push_str("</p>\n");
        }
        let holder = site.holder_index(sec, i);
        if let Some(j) = holder {
            self.files(sec, j);
        }
        if p.neither_links && self.rng.chance(0.3) {
            let n = self.rng.below(site.images);
            let img = site.image_path(n);
            let _ = write!(
                self.out,
                "<figure class=\"figure\"><img src=\"{img}\" alt=\"chart\"><figcaption>"
            );
            self.link(&img, Some("zoom"), "Enlarge chart");
            self.out.push_str("</figcaption></figure>");
        }
        self.out.push_str("<div class=\"page-tools\">");
        if site.has_source_link(gid) {
            if let Some(src) = site.source_path(gid) {
                self.link(&src, Some("source-link"), "Show source");
            }
        }
        if site.has_print_link(gid) {
            self.link(&format!("/print/{gid}"), Some("print"), "Print");
        }
        if self.rng.chance(p.redirect_share) {
            // Articles: short link to the next article; datasets: to their first file.
            let r = match holder {
                Some(j) => {
                    let (start, count) = site.holder_targets(sec, j);
                    (count > 0).then(|| 2 * (s.target_off + start) + 1)
                }
                None => near(1).map(|j| 2 * site.item_gid(sec, j)),
            };
            if let Some(r) = r {
                let label = if holder.is_some() {
                    "Permalink to the data"
                } else {
                    "Next article"
                };
                self.link(
                    &SyntheticSite::redirect_path(r, 0),
                    Some("shortlink"),
                    label,
                );
            }
        }
        if self.rng.chance(p.broken_link_share) {
            let (href, label) = site.error_link(gid);
            self.link(&href, None, label);
        }
        self.out.push_str("</div>");
        if p.calendar_trap && !s.data && self.rng.chance(0.1) {
            let y = 2000 + self.rng.below(30) as u32;
            let m = 1 + self.rng.below(12) as u32;
            self.out.push_str("<p class=\"event-date\">");
            self.link(
                &SyntheticSite::calendar_path(y, m),
                None,
                "See the event calendar",
            );
            self.out.push_str("</p>");
        }
        // Neighbours keep deep sections deep: no random shortcuts.
        [-3i64, -2, -1, 1, 2, 3]
            .into_iter()
            .filter_map(near)
            .map(|j| site.item_gid(sec, j))
            .collect()
    }

    /// The file block of holder `j` of section `sec`.
    fn files(&mut self, sec: usize, j: u64) {
        let site = self.site;
        let s = &site.sections[sec];
        let (start, count) = site.holder_targets(sec, j);
        let markup = LOOKS[s.look].files;
        let (open, close) = match markup {
            FilesMarkup::Table => (
                "<h2>Files</h2><table class=\"files\"><thead><tr><th>File</th><th>Format</th><th>Size</th></tr></thead><tbody>",
                "</tbody></table>",
            ),
            FilesMarkup::List => ("<h2>Downloads</h2><ul class=\"downloads\">", "</ul>"),
            FilesMarkup::Buttons => ("<div class=\"resources\"><h2>Data and resources</h2>", "</div>"),
            FilesMarkup::Attachments => (
                "<div class=\"field field-attachments\"><table class=\"sticky-enabled\"><tbody>",
                "</tbody></table></div>",
            ),
        };
        self.out.push_str(open);
        for t in s.target_off + start..s.target_off + start + count {
            let Some(href) = site.target_path(t) else {
                continue;
            };
            let kind = site.target_kind(t, sec);
            let name = format!("{}.{}", site.stem(0x7D, t, 2).replace('-', "_"), kind.ext());
            let fmt = kind.ext().to_ascii_uppercase();
            match markup {
                FilesMarkup::Table => {
                    self.out.push_str("<tr><td>");
                    self.link(&href, Some("dl"), &name);
                    let _ = write!(
                        self.out,
                        "</td><td>{fmt}</td><td>{} kB</td></tr>",
                        2 + t % 500
                    );
                }
                FilesMarkup::List => {
                    self.out.push_str("<li><span class=\"file\">");
                    self.link(&href, Some("file-link"), &name);
                    let _ = write!(self.out, "</span> <span class=\"format\">{fmt}</span></li>");
                }
                FilesMarkup::Buttons => {
                    let _ = write!(
                        self.out,
                        "<div class=\"resource-item\"><span class=\"heading\">{name}</span> <span class=\"label\">{fmt}</span> "
                    );
                    self.link(&href, Some("btn btn-download"), "Download");
                    self.out.push_str("</div>");
                }
                FilesMarkup::Attachments => {
                    self.out.push_str("<tr><td><span class=\"file\">");
                    // The icon and the name both link the file: duplicate links.
                    self.link(&href, Some("file-icon"), "");
                    self.link(&href, None, &name);
                    self.out.push_str("</span></td></tr>");
                }
            }
        }
        self.out.push_str(close);
    }

    fn words(&mut self, n: usize) {
        for k in 0..n {
            if k > 0 {
                self.out.push(' ');
            }
            let word: &&str = self.rng.pick(&WORDS);
            self.out.push_str(word);
        }
    }
}

/// Appends one paragraph of 3–6 sentences.
pub(super) fn paragraph(out: &mut String, rng: &mut Rng) {
    let sentences = rng.between(3, 6);
    for s in 0..sentences {
        if s > 0 {
            out.push(' ');
        }
        let n = rng.between(8, 16);
        for w in 0..n {
            let word = rng.pick(&WORDS);
            if w == 0 {
                let mut c = word.chars();
                if let Some(f) = c.next() {
                    out.push(f.to_ascii_uppercase());
                    out.push_str(c.as_str());
                }
            } else {
                out.push(' ');
                out.push_str(word);
            }
        }
        out.push('.');
    }
}
