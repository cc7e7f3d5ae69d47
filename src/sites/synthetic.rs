//! Synthetic websites generated on the fly from parameters and a seed.
//!
//! Modelled on the diversity of the sb-classifier paper's Table 1: from a
//! thousand to a million pages, 2 %–67 % targets, 1 %–40 % of the HTML pages
//! linking to targets, shallow portals or pagination chains ~90 pages deep.
//!
//! Nothing is stored: a page is a pure function of (seed, page id), so the
//! same parameters always give the same site, a page always has the same
//! links, and a million-page site costs a few kilobytes. At construction the
//! site only lays out its sections (a few numbers each); every URL is parsed
//! back into an id and answered only if it is exactly the URL the site itself
//! would link to (anything else is a 404), which keeps the link space finite
//! apart from the deliberate calendar trap.
//!
//! What a site is made of:
//! - a home portal, four static pages, and *sections*, each with its own URL
//!   style (Drupal-like `/node/N`, static `page-2.html`, WordPress-like
//!   `/page/2/`, Sphinx-like relative links) and its own markup (class and id
//!   names, listing and file-list layouts), so each section has distinct tag
//!   paths;
//! - *content* sections (listing pages → articles) and *data* sections
//!   (listing pages → dataset pages whose file block, e.g.
//!   `table.files td a.dl`, links the targets);
//! - on every page a navigation menu, breadcrumbs, a footer; related lists,
//!   pagination, sort links (`?sort=asc` near-duplicates), a session id on the
//!   footer's contact link, short links that redirect through 1–3 hops,
//!   links to 4xx/5xx URLs, images, Sphinx-like `_sources/*.txt`, print
//!   versions disallowed by robots.txt, and an infinite calendar.
//!
//! [`SyntheticSite::plan`] states what a crawler can reach (HTML pages,
//! targets, pages linking to targets); the tests check it against a
//! ground-truth walk.

use super::rng::{hash, unit_of, Rng};
use super::server::{Site, SiteRequest, SiteResponse};
use anyhow::{bail, Result};
use axum::http::{header, HeaderValue, StatusCode};
use bytes::Bytes;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::str::FromStr;

/// How listing pages link to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pagination {
    /// Previous / next only: page k is k clicks deep (portals like the
    /// paper's `ju`, depth ~90).
    Chain,
    /// First, last, and the `w` pages either side (Drupal's pager).
    Window(u32),
    /// Two either side plus jumps of ±10 and ±100, first and last: shallow.
    Jumps,
}

/// Parameters of a synthetic site. Build from a [`Preset`] and adjust.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticParams {
    /// Same parameters and seed → the same site, byte for byte.
    pub seed: u64,
    /// HTML pages a crawler can reach (distinct URLs after the crawler's URL
    /// normalisation, robots.txt respected, the calendar trap excluded).
    /// The plan hits it within a few pages ([`SitePlan::html_pages`]).
    pub pages: u64,
    /// targets / (HTML pages + targets), in (0, 0.95).
    pub target_density: f64,
    /// Share of HTML pages that link to at least one target, in (0, 0.6].
    /// Capped by the number of targets (each such page links ≥ 1 target).
    pub holder_share: f64,
    /// Number of sections, each with its own templates (2..=40).
    pub sections: u32,
    /// How many of them hold the targets (1..sections).
    pub data_sections: u32,
    /// Entries per listing page (≥ 2).
    pub per_page: u32,
    pub pagination: Pagination,
    /// Size range of HTML pages, bytes (pages are padded with text up to a
    /// size drawn in this range).
    pub page_bytes: (u32, u32),
    /// Size range of targets, bytes (log-uniform).
    pub target_bytes: (u32, u32),
    /// Share of targets served at an extension-less URL (`/node/9961`).
    pub extensionless_share: f64,
    /// Probability that an article or dataset page links to a 4xx/5xx URL.
    pub broken_link_share: f64,
    /// Probability that an article or dataset page carries a short link
    /// redirecting (1–3 hops of 301/302) to the next article or to a file.
    pub redirect_share: f64,
    /// Images and `_sources/*.txt` links (neither HTML nor target).
    pub neither_links: bool,
    /// `?sort=asc|desc` variants of every listing page (counted in `pages`)
    /// and `?sessionid=` on the footer's contact link (collapsed by the
    /// crawler's URL normalisation, so not counted).
    pub near_duplicates: bool,
    /// An infinite calendar (`/calendar/2024/05` → next month → …) linked
    /// from the menu: a crawler trap.
    pub calendar_trap: bool,
    /// "Print" links to `/print/…`, which robots.txt disallows.
    pub print_links: bool,
    /// On every page, links to variants of the page that are neither HTML
    /// nor a target, among the navigation and footer links (issue #18, the
    /// Sphinx pattern): "View source" (`/_source/N.txt`, `text/plain`) in the
    /// footer, and one of "Raw" (`/_raw/N.rst`, `text/x-rst`, footer),
    /// "Print preview" (`/_preview/N`, an extension-less `image/png`,
    /// breadcrumb) or "Edit" (`/_edit/N`, a 404, breadcrumb).
    pub variant_links: bool,
}

/// Named parameter sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Preset {
    /// ~1 k pages, 20 % targets.
    Small,
    /// ~10 k pages, 30 % targets.
    Medium,
    /// ~100 k pages, 25 % targets.
    Large,
    /// ~5 k pages behind pagination chains ~90 pages long.
    Deep,
    /// ~10 k pages, 2 % targets on 1 % of the pages.
    Sparse,
    /// ~5 k pages, 60 % targets.
    Dense,
    /// ~1.5 k pages, 15 % targets, and two links per page to source, raw,
    /// print-preview or broken variants of the page ([`SyntheticParams::variant_links`]).
    Variants,
}

impl Preset {
    pub const ALL: [Preset; 7] = [
        Preset::Small,
        Preset::Medium,
        Preset::Large,
        Preset::Deep,
        Preset::Sparse,
        Preset::Dense,
        Preset::Variants,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Small => "small",
            Preset::Medium => "medium",
            Preset::Large => "large",
            Preset::Deep => "deep",
            Preset::Sparse => "sparse",
            Preset::Dense => "dense",
            Preset::Variants => "variants",
        }
    }

    /// The preset's parameters with `seed`.
    pub fn params(self, seed: u64) -> SyntheticParams {
        let base = SyntheticParams {
            seed,
            pages: 1_000,
            target_density: 0.2,
            holder_share: 0.1,
            sections: 6,
            data_sections: 2,
            per_page: 15,
            pagination: Pagination::Jumps,
            page_bytes: (5 * 1024, 30 * 1024),
            target_bytes: (2 * 1024, 64 * 1024),
            extensionless_share: 0.15,
            broken_link_share: 0.03,
            redirect_share: 0.05,
            neither_links: true,
            near_duplicates: true,
            calendar_trap: true,
            print_links: true,
            variant_links: false,
        };
        match self {
            Preset::Small => base,
            Preset::Medium => SyntheticParams {
                pages: 10_000,
                target_density: 0.3,
                holder_share: 0.08,
                sections: 8,
                data_sections: 3,
                per_page: 20,
                pagination: Pagination::Window(4),
                ..base
            },
            Preset::Large => SyntheticParams {
                pages: 100_000,
                target_density: 0.25,
                holder_share: 0.05,
                sections: 12,
                data_sections: 4,
                per_page: 30,
                ..base
            },
            Preset::Deep => SyntheticParams {
                pages: 5_000,
                target_density: 0.3,
                holder_share: 0.18,
                sections: 6,
                data_sections: 1,
                per_page: 10,
                pagination: Pagination::Chain,
                ..base
            },
            Preset::Sparse => SyntheticParams {
                pages: 10_000,
                target_density: 0.02,
                holder_share: 0.01,
                sections: 8,
                data_sections: 2,
                per_page: 20,
                pagination: Pagination::Window(3),
                ..base
            },
            Preset::Dense => SyntheticParams {
                pages: 5_000,
                target_density: 0.6,
                holder_share: 0.2,
                sections: 6,
                data_sections: 2,
                per_page: 20,
                ..base
            },
            // Shaped like the Sphinx site of issue #18 (1 130 pages, 176
            // targets, a `_sources/*.txt` link on every page).
            Preset::Variants => SyntheticParams {
                pages: 1_500,
                target_density: 0.15,
                variant_links: true,
                ..base
            },
        }
    }
}

impl FromStr for Preset {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown synthetic preset {s:?}: expected one of small, medium, large, deep, sparse, dense, variants"
                )
            })
    }
}

/// HTML pages a site may have: a site's layout is a few numbers per section
/// whatever its size, so the bound only keeps page ids and counts far from
/// overflow.
pub const PAGES_RANGE: std::ops::RangeInclusive<u64> = 100..=100_000_000;

/// A synthetic site as named on the command line:
/// `PRESET[:SEED][:pages=N]`, e.g. `large`, `large:3`, `large:pages=1000000`
/// or `large:3:pages=1M` (the part after `synthetic:` in `--site`).
///
/// `pages=` rescales a preset to any size in [`PAGES_RANGE`] and keeps its other parameters (densities, section
/// count, pagination): a million-page site is the large preset ten times
/// over. The site is still laid out from a handful of numbers per section,
/// so its size costs no memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticSpec {
    pub preset: Preset,
    pub seed: u64,
    /// Replaces the preset's page count.
    pub pages: Option<u64>,
}

impl SyntheticSpec {
    /// The form accepted, for error messages.
    pub const FORM: &'static str =
        "PRESET[:SEED][:pages=N] (N like 1000000, 1_000_000, 200k or 1M)";

    /// The site's parameters (not yet validated: [`SyntheticSite::new`] does).
    pub fn params(&self) -> SyntheticParams {
        let mut params = self.preset.params(self.seed);
        if let Some(pages) = self.pages {
            params.pages = pages;
        }
        params
    }

    /// A short name: the preset's, with the page count when it was changed
    /// (`large`, `large-1000000p`).
    pub fn name(&self) -> String {
        match self.pages {
            Some(p) => format!("{}-{p}p", self.preset.name()),
            None => self.preset.name().to_string(),
        }
    }
}

impl FromStr for SyntheticSpec {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        let form = SyntheticSpec::FORM;
        let mut parts = s.split(':');
        let preset: Preset = parts.next().unwrap_or("").parse()?;
        let mut spec = SyntheticSpec {
            preset,
            seed: 1,
            pages: None,
        };
        let mut seed_given = false;
        for part in parts {
            if let Some((key, value)) = part.split_once('=') {
                if key.trim() != "pages" {
                    bail!("unknown option {key:?} (only pages=N; expected {form})");
                }
                if spec.pages.is_some() {
                    bail!("pages= given twice");
                }
                spec.pages = Some(
                    parse_count(value)
                        .map_err(|e| anyhow::anyhow!("pages={value:?}: {e} (expected {form})"))?,
                );
            } else if !seed_given && spec.pages.is_none() {
                spec.seed = part.trim().parse().map_err(|_| {
                    anyhow::anyhow!("seed {part:?} is not a number (expected {form})")
                })?;
                seed_given = true;
            } else {
                bail!("unexpected {part:?} (expected {form})");
            }
        }
        if let Some(p) = spec.pages {
            if !PAGES_RANGE.contains(&p) {
                bail!(
                    "pages={p} is outside [{}, {}]",
                    PAGES_RANGE.start(),
                    PAGES_RANGE.end()
                );
            }
        }
        Ok(spec)
    }
}

/// A count written `1000000`, `1_000_000`, `200k` or `1M` (k = 1 000,
/// M = 1 000 000: counts of pages, not bytes).
fn parse_count(text: &str) -> Result<u64> {
    let text = text.trim();
    let (digits, unit) = match text.as_bytes().last() {
        Some(b'k' | b'K') => (&text[..text.len() - 1], 1_000),
        Some(b'm' | b'M') => (&text[..text.len() - 1], 1_000_000),
        _ => (text, 1),
    };
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        bail!("not a whole number");
    }
    let n: u64 = digits.parse().map_err(|_| anyhow::anyhow!("too large"))?;
    n.checked_mul(unit)
        .ok_or_else(|| anyhow::anyhow!("too large"))
}

/// What a crawler can reach on the site (robots.txt respected, URLs
/// normalised as the crawler does, calendar trap excluded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SitePlan {
    /// Distinct HTML URLs.
    pub html_pages: u64,
    pub targets: u64,
    /// HTML pages linking to at least one target.
    pub holders: u64,
    /// Longest listing chain (pagination pages of the largest section).
    pub max_listing_pages: u64,
    pub sections: Vec<SectionPlan>,
}

impl SitePlan {
    pub fn target_density(&self) -> f64 {
        self.targets as f64 / (self.html_pages + self.targets) as f64
    }

    pub fn holder_share(&self) -> f64 {
        self.holders as f64 / self.html_pages as f64
    }
}

/// One section of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionPlan {
    pub slug: String,
    pub holds_targets: bool,
    pub url_style: &'static str,
    pub look: &'static str,
    pub listing_pages: u64,
    pub items: u64,
    pub targets: u64,
    /// Section index URL path.
    pub index_path: String,
}

// ---------------------------------------------------------------------------
// Layout

/// Static pages after the home page (gid 1..=4).
const STATICS: [(&str, &str); 4] = [
    ("/about", "About us"),
    ("/legal", "Legal notice"),
    ("/contact", "Contact"),
    ("/sitemap", "Site map"),
];
const FIRST_SECTION_GID: u64 = 1 + STATICS.len() as u64;
const CONTACT_GID: u64 = 3;
/// Distinct `sessionid` values on the footer's contact link.
const SESSION_POOL: u64 = 8;
/// `/node/N` numbers start here; even N are pages, odd N targets.
const NODE_BASE: u64 = 1000;
/// Month the menu's "Events" link opens.
const CALENDAR_START: (u32, u32) = (2024, 5);

const CONTENT_NAMES: [&str; 16] = [
    "news",
    "publications",
    "about-us",
    "events",
    "research",
    "topics",
    "regions",
    "press",
    "methodology",
    "blog",
    "help",
    "careers",
    "international",
    "education",
    "health",
    "economy",
];
const DATA_NAMES: [&str; 10] = [
    "datasets",
    "statistics",
    "data",
    "downloads",
    "open-data",
    "indicators",
    "surveys",
    "tables",
    "census",
    "time-series",
];
/// Where each data section's files live (not under the section's own path).
const FILE_PREFIXES: [&str; 4] = [
    "/sites/default/files",
    "/media/documents",
    "/uploads",
    "/download/file",
];

const WORDS: [&str; 96] = [
    "annual",
    "report",
    "population",
    "census",
    "regional",
    "survey",
    "labour",
    "market",
    "income",
    "household",
    "trade",
    "export",
    "import",
    "energy",
    "health",
    "education",
    "price",
    "index",
    "quarterly",
    "monthly",
    "estimate",
    "growth",
    "rate",
    "employment",
    "public",
    "finance",
    "budget",
    "deficit",
    "tourism",
    "housing",
    "transport",
    "water",
    "climate",
    "emission",
    "agriculture",
    "harvest",
    "industry",
    "production",
    "service",
    "sector",
    "wage",
    "poverty",
    "migration",
    "birth",
    "mortality",
    "crime",
    "justice",
    "court",
    "election",
    "turnout",
    "school",
    "student",
    "teacher",
    "hospital",
    "patient",
    "vaccine",
    "road",
    "traffic",
    "accident",
    "forest",
    "land",
    "use",
    "urban",
    "rural",
    "district",
    "county",
    "national",
    "account",
    "balance",
    "payment",
    "debt",
    "tax",
    "revenue",
    "spending",
    "inflation",
    "consumer",
    "business",
    "register",
    "enterprise",
    "innovation",
    "research",
    "digital",
    "internet",
    "access",
    "culture",
    "museum",
    "library",
    "sport",
    "youth",
    "ageing",
    "gender",
    "equality",
    "disability",
    "benefit",
    "pension",
    "insurance",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UrlStyle {
    /// `/{slug}`, `/{slug}?page=K`, items `/node/N`.
    Drupal,
    /// `/{slug}/index.html`, `/{slug}/page-K.html`, items `/{slug}/{year}/{stem}-{i}.html`.
    Static,
    /// `/{slug}/`, `/{slug}/page/K/`, items `/{slug}/{i}/{stem}/`.
    Press,
    /// `/{slug}/index.html`, `/{slug}/genindex-K.html`, items `/{slug}/{stem}-{i}.html`,
    /// relative hrefs and `_sources` links, like Sphinx.
    Docs,
}

impl UrlStyle {
    const ALL: [UrlStyle; 4] = [
        UrlStyle::Drupal,
        UrlStyle::Static,
        UrlStyle::Press,
        UrlStyle::Docs,
    ];

    fn name(self) -> &'static str {
        match self {
            UrlStyle::Drupal => "drupal",
            UrlStyle::Static => "static",
            UrlStyle::Press => "press",
            UrlStyle::Docs => "docs",
        }
    }
}

/// The markup vocabulary of a section: class and id names and the layout of
/// listings, file blocks and related lists.
struct Look {
    name: &'static str,
    wrapper_open: &'static str,
    wrapper_close: &'static str,
    main_open: &'static str,
    main_close: &'static str,
    listing: ListingMarkup,
    files: FilesMarkup,
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
enum FilesMarkup {
    /// `table.files td a.dl`
    Table,
    /// `ul.downloads li span.file a.file-link`
    List,
    /// `div.resources div.resource-item a.btn.btn-download`
    Buttons,
    /// `div.field-attachments table.sticky-enabled td span.file a`
    Attachments,
}

const LOOKS: [Look; 4] = [
    Look {
        name: "bootstrap",
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
        name: "drupal",
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
        name: "cards",
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
        name: "sphinx",
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

/// The kinds of target file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TargetKind {
    Csv,
    Xlsx,
    Pdf,
    Zip,
    Json,
}

impl TargetKind {
    const ALL: [TargetKind; 5] = [
        TargetKind::Csv,
        TargetKind::Xlsx,
        TargetKind::Pdf,
        TargetKind::Zip,
        TargetKind::Json,
    ];

    fn ext(self) -> &'static str {
        match self {
            TargetKind::Csv => "csv",
            TargetKind::Xlsx => "xlsx",
            TargetKind::Pdf => "pdf",
            TargetKind::Zip => "zip",
            TargetKind::Json => "json",
        }
    }

    fn mime(self) -> &'static str {
        match self {
            TargetKind::Csv => "text/csv",
            TargetKind::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            TargetKind::Pdf => "application/pdf",
            TargetKind::Zip => "application/zip",
            TargetKind::Json => "application/json",
        }
    }

    fn from_ext(ext: &str) -> Option<TargetKind> {
        TargetKind::ALL.into_iter().find(|k| k.ext() == ext)
    }
}

#[derive(Clone, Debug)]
struct Section {
    slug: String,
    title: String,
    data: bool,
    style: UrlStyle,
    look: usize,
    /// Global id of listing page 0; listings then items follow.
    page_off: u64,
    listings: u64,
    items: u64,
    /// Data sections: global id of the first target.
    target_off: u64,
    targets: u64,
    primary: TargetKind,
    files_prefix: &'static str,
}

/// What a page id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PageKind {
    Home,
    Static(usize),
    Listing { sec: usize, k: u64 },
    Item { sec: usize, i: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sort {
    Asc,
    Desc,
}

/// A parsed request path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Robots,
    Css,
    Page {
        gid: u64,
        sort: Option<Sort>,
    },
    Target(u64),
    Redirect {
        r: u64,
        hop: u64,
    },
    Image(u64),
    Source(u64),
    /// A variant of page `gid` ([`SyntheticParams::variant_links`]).
    Variant {
        gid: u64,
        kind: Variant,
    },
    Print(u64),
    Calendar {
        year: u32,
        month: u32,
    },
    Error(StatusCode),
}

/// What a variant link of a page serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    /// `/_source/N.txt`, `text/plain`: on every page.
    Source,
    /// `/_raw/N.rst`, `text/x-rst`.
    Raw,
    /// `/_preview/N`, `image/png` without an extension.
    Preview,
    /// `/_edit/N`: not served (404).
    Edit,
}

impl Variant {
    fn path(self, gid: u64) -> String {
        match self {
            Variant::Source => format!("/_source/{gid}.txt"),
            Variant::Raw => format!("/_raw/{gid}.rst"),
            Variant::Preview => format!("/_preview/{gid}"),
            Variant::Edit => format!("/_edit/{gid}"),
        }
    }
}

/// A generated website; see the module documentation.
pub struct SyntheticSite {
    params: SyntheticParams,
    plan: SitePlan,
    sections: Vec<Section>,
    by_slug: HashMap<String, usize>,
    /// Canonical (gid-addressed) pages: home, statics and every section page.
    canonical_pages: u64,
    targets: u64,
    images: u64,
    robots: Bytes,
    css: Bytes,
}

impl SyntheticSite {
    /// Lay out a site; fails on parameters outside their documented ranges.
    pub fn new(params: SyntheticParams) -> Result<SyntheticSite> {
        validate(&params)?;
        let seed = params.seed;
        let mult = if params.near_duplicates { 3 } else { 1 };
        let pp = u64::from(params.per_page);
        let listings_for = |items: u64| items.div_ceil(pp).max(1);
        let n_sections = params.sections as usize;
        let n_data = params.data_sections as usize;
        let n_content = n_sections - n_data;
        let p = params.pages;
        let fixed = FIRST_SECTION_GID;

        let wanted_targets =
            (params.target_density / (1.0 - params.target_density) * p as f64).round() as u64;
        let holders = ((params.holder_share * p as f64).round() as u64)
            .clamp(n_data as u64, wanted_targets.max(n_data as u64));

        // Data sections first: their size is set by the holders.
        let mut data_items = vec![holders / n_data as u64; n_data];
        for x in data_items
            .iter_mut()
            .take((holders % n_data as u64) as usize)
        {
            *x += 1;
        }
        let data_pages: u64 = data_items.iter().map(|&i| mult * listings_for(i) + i).sum();
        let min_content = n_content as u64 * (mult + 1);
        if p < fixed + data_pages + min_content {
            bail!(
                "synthetic site: {p} pages are too few for {holders} pages with targets in {n_data} data sections \
                 and {n_content} content sections (need at least {})",
                fixed + data_pages + min_content
            );
        }
        // Content sections share the rest in seeded proportions.
        let budget = p - fixed - data_pages;
        let weights: Vec<u64> = (0..n_content)
            .map(|c| 1 + hash(seed, &[0xC0, c as u64]) % 4)
            .collect();
        let wsum: u64 = weights.iter().sum();
        let mut content_items = Vec::with_capacity(n_content);
        let mut used = 0u64;
        for (c, w) in weights.iter().enumerate() {
            let share = if c + 1 == n_content {
                budget - used
            } else {
                budget * w / wsum
            };
            let items = max_items_within(share.max(mult + 1), mult, pp);
            used += mult * listings_for(items) + items;
            content_items.push(items);
        }

        // Names, styles and looks, shuffled by the seed.
        let mut rng = Rng::new(seed, &[0x5EC]);
        let content_names = shuffled(&CONTENT_NAMES, &mut rng);
        let data_names = shuffled(&DATA_NAMES, &mut rng);
        let style_shift = rng.below(4) as usize;
        let look_shift = rng.below(4) as usize;
        let prefix_shift = rng.below(4) as usize;
        let mut order: Vec<bool> = (0..n_sections).map(|i| i < n_data).collect();
        // Interleave data sections among content ones (deterministically).
        for i in (1..order.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }

        let mut sections = Vec::with_capacity(n_sections);
        let mut page_off = fixed;
        let (mut di, mut ci) = (0usize, 0usize);
        for (s, &is_data) in order.iter().enumerate() {
            let (slug, items) = if is_data {
                let name = unique_name(&data_names, di);
                di += 1;
                (name, data_items[di - 1])
            } else {
                let name = unique_name(&content_names, ci);
                ci += 1;
                (name, content_items[ci - 1])
            };
            let listings = listings_for(items);
            let title = title_case(&slug);
            sections.push(Section {
                slug,
                title,
                data: is_data,
                style: UrlStyle::ALL[(s + style_shift) % 4],
                look: (s + look_shift) % LOOKS.len(),
                page_off,
                listings,
                items,
                target_off: 0,
                targets: 0,
                primary: *rng.pick(&TargetKind::ALL),
                files_prefix: FILE_PREFIXES[(s + prefix_shift) % FILE_PREFIXES.len()],
            });
            page_off += listings + items;
        }
        let canonical_pages = page_off;
        let listing_total: u64 = sections.iter().map(|s| s.listings).sum();
        let html_pages = canonical_pages + (mult - 1) * listing_total;

        // Targets: the density is kept on the pages actually laid out.
        let targets = ((params.target_density / (1.0 - params.target_density)) * html_pages as f64)
            .round() as u64;
        let targets = targets.max(holders);
        let mut target_off = 0u64;
        let mut given = 0u64;
        let data_idx: Vec<usize> = (0..n_sections).filter(|&s| sections[s].data).collect();
        for (n, &s) in data_idx.iter().enumerate() {
            let t = if n + 1 == data_idx.len() {
                targets - given
            } else {
                (targets * sections[s].items / holders).max(sections[s].items)
            };
            sections[s].target_off = target_off;
            sections[s].targets = t;
            target_off += t;
            given += t;
        }

        let mut by_slug = HashMap::new();
        for (i, s) in sections.iter().enumerate() {
            by_slug.insert(s.slug.clone(), i);
        }
        let robots = Bytes::from(
            "# Generated site\nUser-agent: *\nDisallow: /print/\nDisallow: /admin/\n\n",
        );
        let css = Bytes::from_static(
            b"body{font-family:sans-serif;margin:0}nav ul{list-style:none}.files td{padding:2px}\n",
        );
        let mut site = SyntheticSite {
            images: (canonical_pages / 20).max(10),
            params,
            plan: SitePlan {
                html_pages,
                targets,
                holders,
                max_listing_pages: sections.iter().map(|s| s.listings).max().unwrap_or(0),
                sections: Vec::new(),
            },
            sections,
            by_slug,
            canonical_pages,
            targets,
            robots,
            css,
        };
        site.plan.sections = site
            .sections
            .iter()
            .enumerate()
            .map(|(i, s)| SectionPlan {
                slug: s.slug.clone(),
                holds_targets: s.data,
                url_style: s.style.name(),
                look: LOOKS[s.look].name,
                listing_pages: s.listings,
                items: s.items,
                targets: s.targets,
                index_path: site.listing_path(i, 0),
            })
            .collect();
        Ok(site)
    }

    /// A preset site.
    pub fn preset(preset: Preset, seed: u64) -> Result<SyntheticSite> {
        SyntheticSite::new(preset.params(seed))
    }

    pub fn params(&self) -> &SyntheticParams {
        &self.params
    }

    /// What a crawler can reach.
    pub fn plan(&self) -> &SitePlan {
        &self.plan
    }

    /// The URL path of the home page, where crawls start.
    pub fn start_path(&self) -> &'static str {
        "/"
    }

    // -- addressing --------------------------------------------------------

    fn section_of_gid(&self, gid: u64) -> Option<usize> {
        if gid < FIRST_SECTION_GID || gid >= self.canonical_pages {
            return None;
        }
        let idx = self.sections.partition_point(|s| s.page_off <= gid);
        idx.checked_sub(1)
    }

    fn kind_of(&self, gid: u64) -> Option<PageKind> {
        if gid == 0 {
            return Some(PageKind::Home);
        }
        if gid < FIRST_SECTION_GID {
            return Some(PageKind::Static(gid as usize - 1));
        }
        let sec = self.section_of_gid(gid)?;
        let s = &self.sections[sec];
        let local = gid - s.page_off;
        if local < s.listings {
            Some(PageKind::Listing { sec, k: local })
        } else {
            Some(PageKind::Item {
                sec,
                i: local - s.listings,
            })
        }
    }

    fn item_gid(&self, sec: usize, i: u64) -> u64 {
        let s = &self.sections[sec];
        s.page_off + s.listings + i
    }

    fn listing_gid(&self, sec: usize, k: u64) -> u64 {
        self.sections[sec].page_off + k
    }

    fn stem(&self, tag: u64, id: u64, words: u64) -> String {
        let mut rng = Rng::new(self.params.seed, &[tag, id]);
        let mut out = String::new();
        for n in 0..words {
            if n > 0 {
                out.push('-');
            }
            let word: &&str = rng.pick(&WORDS);
            out.push_str(word);
        }
        out
    }

    fn year_of(&self, tag: u64, id: u64) -> u64 {
        2000 + hash(self.params.seed, &[tag, id]) % 25
    }

    fn listing_path(&self, sec: usize, k: u64) -> String {
        let s = &self.sections[sec];
        match (s.style, k) {
            (UrlStyle::Drupal, 0) => format!("/{}", s.slug),
            (UrlStyle::Drupal, k) => format!("/{}?page={k}", s.slug),
            (UrlStyle::Static | UrlStyle::Docs, 0) => format!("/{}/index.html", s.slug),
            (UrlStyle::Static, k) => format!("/{}/page-{}.html", s.slug, k + 1),
            (UrlStyle::Docs, k) => format!("/{}/genindex-{}.html", s.slug, k + 1),
            (UrlStyle::Press, 0) => format!("/{}/", s.slug),
            (UrlStyle::Press, k) => format!("/{}/page/{}/", s.slug, k + 1),
        }
    }

    fn sorted_path(&self, sec: usize, k: u64, sort: Sort) -> String {
        let base = self.listing_path(sec, k);
        let sep = if base.contains('?') { '&' } else { '?' };
        let dir = match sort {
            Sort::Asc => "asc",
            Sort::Desc => "desc",
        };
        format!("{base}{sep}sort={dir}")
    }

    fn item_path(&self, sec: usize, i: u64) -> String {
        let s = &self.sections[sec];
        let gid = self.item_gid(sec, i);
        match s.style {
            UrlStyle::Drupal => format!("/node/{}", NODE_BASE + 2 * gid),
            UrlStyle::Static => format!(
                "/{}/{}/{}-{}.html",
                s.slug,
                self.year_of(0x1E, gid),
                self.stem(0x57, gid, 2),
                i
            ),
            UrlStyle::Press => format!("/{}/{}/{}/", s.slug, i, self.stem(0x57, gid, 3)),
            UrlStyle::Docs => format!("/{}/{}-{}.html", s.slug, self.stem(0x57, gid, 2), i),
        }
    }

    fn page_path(&self, gid: u64) -> Option<String> {
        Some(match self.kind_of(gid)? {
            PageKind::Home => "/".to_string(),
            PageKind::Static(n) => STATICS[n].0.to_string(),
            PageKind::Listing { sec, k } => self.listing_path(sec, k),
            PageKind::Item { sec, i } => self.item_path(sec, i),
        })
    }

    fn target_section(&self, tgid: u64) -> Option<usize> {
        if tgid >= self.targets {
            return None;
        }
        // Data sections have increasing target_off; content sections are skipped.
        self.sections
            .iter()
            .enumerate()
            .rev()
            .find(|(_, s)| s.data && s.target_off <= tgid)
            .map(|(i, _)| i)
    }

    fn target_kind(&self, tgid: u64, sec: usize) -> TargetKind {
        let h = hash(self.params.seed, &[0x7A, tgid]);
        if unit_of(h) < 0.55 {
            self.sections[sec].primary
        } else {
            TargetKind::ALL[(h % 5) as usize]
        }
    }

    fn target_is_extensionless(&self, tgid: u64) -> bool {
        unit_of(hash(self.params.seed, &[0x7B, tgid])) < self.params.extensionless_share
    }

    fn target_path(&self, tgid: u64) -> Option<String> {
        let sec = self.target_section(tgid)?;
        if self.target_is_extensionless(tgid) {
            return Some(format!("/node/{}", NODE_BASE + 2 * tgid + 1));
        }
        let s = &self.sections[sec];
        let kind = self.target_kind(tgid, sec);
        Some(format!(
            "{}/{}/{}-{}.{}",
            s.files_prefix,
            self.year_of(0x7C, tgid),
            self.stem(0x7D, tgid, 2).replace('-', "_"),
            tgid,
            kind.ext()
        ))
    }

    /// Section-local (first target, count) of data item `j` of section `sec`.
    ///
    /// Counts vary around the mean in pairs (+v, −v) so the prefix sum has a
    /// closed form: any holder's files are found without a table.
    fn holder_targets(&self, sec: usize, j: u64) -> (u64, u64) {
        let s = &self.sections[sec];
        let n = s.items.max(1);
        let base = s.targets / n;
        let rem = s.targets % n;
        let v = |k: u64| {
            if base >= 2 {
                hash(self.params.seed, &[0x9A, sec as u64, k]) % base
            } else {
                0
            }
        };
        // Holder j pairs with j ^ 1; the last one of an odd count has no partner.
        let paired = j % 2 == 1 || j + 1 < n;
        let extra = u64::from(j < rem);
        if !paired {
            return (j * base + j.min(rem), base + extra);
        }
        let vk = v(j / 2);
        if j % 2 == 0 {
            (j * base + j.min(rem), base + vk + extra)
        } else {
            (j * base + j.min(rem) + vk, base - vk + extra)
        }
    }

    fn image_path(&self, n: u64) -> String {
        format!("/static/img/{}-{}.png", self.stem(0x1A, n, 1), n)
    }

    fn source_path(&self, gid: u64) -> Option<String> {
        let p = self.page_path(gid)?;
        let stripped = p.strip_suffix(".html")?;
        Some(format!("/_sources{stripped}.txt"))
    }

    fn calendar_path(year: u32, month: u32) -> String {
        format!("/calendar/{year:04}/{month:02}")
    }

    fn redirect_path(r: u64, hop: u64) -> String {
        if hop == 0 {
            format!("/go/{r}")
        } else {
            format!("/go/{r}/{hop}")
        }
    }

    /// Hops of short link `r` and where it ends. Even `r` = 2·gid of a page,
    /// odd `r` = 2·tgid + 1 of a target.
    fn redirect_plan(&self, r: u64) -> Option<(u64, String)> {
        let hops = 1 + hash(self.params.seed, &[0x60, r]) % 3;
        let dest = if r % 2 == 0 {
            self.page_path(r / 2)?
        } else {
            self.target_path(r / 2)?
        };
        Some((hops, dest))
    }

    fn error_link(&self, gid: u64) -> (String, &'static str) {
        let h = hash(self.params.seed, &[0xE0, gid]);
        let n = h % 100_000;
        match h % 4 {
            0 => (format!("/archive/{n}.html"), "Archived version"),
            1 => (format!("/api/export?id={n}"), "Export (API)"),
            2 => (format!("/restricted/{n}"), "Members area"),
            _ => (format!("/gone/{n}"), "Previous edition"),
        }
    }

    // -- parsing -----------------------------------------------------------

    fn route(&self, path: &str, query: Option<&str>) -> Option<Route> {
        let pq = match query {
            Some(q) => format!("{path}?{q}"),
            None => path.to_string(),
        };
        let exact = |candidate: Option<String>| candidate.as_deref() == Some(pq.as_str());
        match path {
            "/robots.txt" if query.is_none() => return Some(Route::Robots),
            "/static/site.css" if query.is_none() => return Some(Route::Css),
            "/" if query.is_none() => return Some(Route::Page { gid: 0, sort: None }),
            _ => {}
        }
        if let Some(n) = STATICS.iter().position(|(p, _)| *p == path) {
            let gid = n as u64 + 1;
            return match query {
                None => Some(Route::Page { gid, sort: None }),
                Some(q) if gid == CONTACT_GID && self.params.near_duplicates => {
                    let sid = q.strip_prefix("sessionid=")?;
                    (0..SESSION_POOL)
                        .any(|k| session_id(self.params.seed, k) == sid)
                        .then_some(Route::Page { gid, sort: None })
                }
                Some(_) => None,
            };
        }
        let segs: Vec<&str> = path.split('/').skip(1).collect();
        match segs.first().copied() {
            Some("node") if segs.len() == 2 && query.is_none() => {
                let n: u64 = segs[1].parse().ok()?;
                let n = n.checked_sub(NODE_BASE)?;
                let route = if n % 2 == 0 {
                    Route::Page {
                        gid: n / 2,
                        sort: None,
                    }
                } else {
                    Route::Target(n / 2)
                };
                let canonical = match route {
                    Route::Page { gid, .. } => self.page_path(gid),
                    Route::Target(t) => self.target_path(t),
                    _ => None,
                };
                return exact(canonical).then_some(route);
            }
            Some("go") if query.is_none() && (2..=3).contains(&segs.len()) => {
                let r: u64 = segs[1].parse().ok()?;
                let hop: u64 = match segs.get(2) {
                    Some(h) => h.parse().ok()?,
                    None => 0,
                };
                let (hops, _) = self.redirect_plan(r)?;
                return (hop < hops && exact(Some(Self::redirect_path(r, hop))))
                    .then_some(Route::Redirect { r, hop });
            }
            Some("static") if segs.len() == 3 && segs[1] == "img" && query.is_none() => {
                let file = segs[2].strip_suffix(".png")?;
                let n: u64 = file.rsplit_once('-')?.1.parse().ok()?;
                return (n < self.images && exact(Some(self.image_path(n))))
                    .then_some(Route::Image(n));
            }
            Some("_sources") if query.is_none() && self.params.neither_links => {
                let page = format!(
                    "{}.html",
                    path.strip_prefix("/_sources")?.strip_suffix(".txt")?
                );
                let Some(Route::Page { gid, sort: None }) = self.route(&page, None) else {
                    return None;
                };
                return self.has_source_link(gid).then_some(Route::Source(gid));
            }
            Some(prefix @ ("_source" | "_raw" | "_preview"))
                if segs.len() == 2 && query.is_none() && self.params.variant_links =>
            {
                let (number, kind) = match prefix {
                    "_source" => (segs[1].strip_suffix(".txt")?, Variant::Source),
                    "_raw" => (segs[1].strip_suffix(".rst")?, Variant::Raw),
                    _ => (segs[1], Variant::Preview),
                };
                let gid: u64 = number.parse().ok()?;
                return (gid < self.canonical_pages
                    && self.variants_of(gid).contains(&kind)
                    && exact(Some(kind.path(gid))))
                .then_some(Route::Variant { gid, kind });
            }
            Some("print") if segs.len() == 2 && query.is_none() && self.params.print_links => {
                let gid: u64 = segs[1].parse().ok()?;
                return (self.has_print_link(gid) && exact(Some(format!("/print/{gid}"))))
                    .then_some(Route::Print(gid));
            }
            Some("calendar") if segs.len() == 3 && query.is_none() && self.params.calendar_trap => {
                let year: u32 = segs[1].parse().ok()?;
                let month: u32 = segs[2].parse().ok()?;
                let ok = (1..=9999).contains(&year)
                    && (1..=12).contains(&month)
                    && exact(Some(Self::calendar_path(year, month)));
                return ok.then_some(Route::Calendar { year, month });
            }
            Some("archive") => return Some(Route::Error(StatusCode::NOT_FOUND)),
            Some("api") => return Some(Route::Error(StatusCode::INTERNAL_SERVER_ERROR)),
            Some("restricted") => return Some(Route::Error(StatusCode::FORBIDDEN)),
            Some("gone") => return Some(Route::Error(StatusCode::GONE)),
            _ => {}
        }
        // A file with a target extension: `…/{stem}-{tgid}.{ext}`.
        let last = segs.last().copied().unwrap_or("");
        if let Some((stem, ext)) = last.rsplit_once('.') {
            if TargetKind::from_ext(ext).is_some() && query.is_none() {
                let tgid: u64 = stem.rsplit_once('-')?.1.parse().ok()?;
                return exact(self.target_path(tgid)).then_some(Route::Target(tgid));
            }
        }
        // Section pages.
        let sec = *self.by_slug.get(*segs.first()?)?;
        let s = &self.sections[sec];
        let (path_only_k, item): (Option<u64>, Option<u64>) = match s.style {
            UrlStyle::Drupal => {
                if segs.len() != 1 {
                    return None;
                }
                let k = query
                    .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("page=")))
                    .map(|v| v.parse::<u64>().ok())
                    .unwrap_or(Some(0))?;
                (Some(k), None)
            }
            UrlStyle::Static | UrlStyle::Docs => match segs.len() {
                2 if segs[1] == "index.html" => (Some(0), None),
                2 => {
                    let file = segs[1].strip_suffix(".html")?;
                    let n: u64 = file.rsplit_once('-')?.1.parse().ok()?;
                    let prefix = if s.style == UrlStyle::Static {
                        "page-"
                    } else {
                        "genindex-"
                    };
                    if file.starts_with(prefix) && n >= 2 {
                        (Some(n - 1), None)
                    } else {
                        (None, Some(n))
                    }
                }
                3 => {
                    let file = segs[2].strip_suffix(".html")?;
                    (None, Some(file.rsplit_once('-')?.1.parse().ok()?))
                }
                _ => return None,
            },
            UrlStyle::Press => match segs.len() {
                2 if segs[1].is_empty() => (Some(0), None),
                4 if segs[1] == "page" && segs[3].is_empty() => {
                    let n: u64 = segs[2].parse().ok()?;
                    (Some(n.checked_sub(1)?), None)
                }
                4 if segs[3].is_empty() => (None, Some(segs[1].parse().ok()?)),
                _ => return None,
            },
        };
        if let Some(k) = path_only_k {
            if k >= s.listings {
                return None;
            }
            let gid = self.listing_gid(sec, k);
            if exact(Some(self.listing_path(sec, k))) {
                return Some(Route::Page { gid, sort: None });
            }
            if self.params.near_duplicates {
                for sort in [Sort::Asc, Sort::Desc] {
                    if exact(Some(self.sorted_path(sec, k, sort))) {
                        return Some(Route::Page {
                            gid,
                            sort: Some(sort),
                        });
                    }
                }
            }
            return None;
        }
        let i = item?;
        if i >= s.items {
            return None;
        }
        exact(Some(self.item_path(sec, i))).then_some(Route::Page {
            gid: self.item_gid(sec, i),
            sort: None,
        })
    }

    fn has_source_link(&self, gid: u64) -> bool {
        self.params.neither_links
            && matches!(self.kind_of(gid), Some(PageKind::Item { sec, .. })
                if self.sections[sec].style == UrlStyle::Docs)
    }

    /// The variant links of page `gid`: its source, and one more chosen by the seed.
    fn variants_of(&self, gid: u64) -> [Variant; 2] {
        let second = match hash(self.params.seed, &[0x7A, gid]) % 3 {
            0 => Variant::Raw,
            1 => Variant::Preview,
            _ => Variant::Edit,
        };
        [Variant::Source, second]
    }

    fn has_print_link(&self, gid: u64) -> bool {
        self.params.print_links
            && matches!(self.kind_of(gid), Some(PageKind::Item { sec, .. }) if !self.sections[sec].data)
    }

    // -- rendering ---------------------------------------------------------

    fn render_page(&self, gid: u64, sort: Option<Sort>) -> Option<String> {
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

    fn target_body(&self, tgid: u64) -> Option<(&'static str, Bytes)> {
        let sec = self.target_section(tgid)?;
        let kind = self.target_kind(tgid, sec);
        let (lo, hi) = self.params.target_bytes;
        let u = unit_of(hash(self.params.seed, &[0x52, tgid]));
        let size = (f64::from(lo.max(64))
            * (f64::from(hi.max(lo.max(64))) / f64::from(lo.max(64))).powf(u))
            as usize;
        let mut rng = Rng::new(self.params.seed, &[0x53, tgid]);
        let mut out: Vec<u8> = Vec::with_capacity(size + 128);
        match kind {
            TargetKind::Csv => {
                out.extend_from_slice(b"year,region,indicator,value\n");
                while out.len() < size {
                    let _ = writeln!(
                        VecWriter(&mut out),
                        "{},R{:02},{},{}.{}",
                        2000 + rng.below(25),
                        rng.below(40),
                        rng.pick(&WORDS),
                        rng.below(100_000),
                        rng.below(10)
                    );
                }
            }
            TargetKind::Json => {
                let _ = write!(VecWriter(&mut out), "{{\"dataset\":{tgid},\"rows\":[");
                let mut first = true;
                while out.len() < size {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    let _ = write!(
                        VecWriter(&mut out),
                        "{{\"year\":{},\"indicator\":\"{}\",\"value\":{}}}",
                        2000 + rng.below(25),
                        rng.pick(&WORDS),
                        rng.below(1_000_000)
                    );
                }
                out.extend_from_slice(b"]}\n");
            }
            TargetKind::Pdf => {
                out.extend_from_slice(
                    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\nstream\n",
                );
                fill_random(&mut out, size, &mut rng);
                out.extend_from_slice(b"\nendstream\n%%EOF\n");
            }
            TargetKind::Zip | TargetKind::Xlsx => {
                out.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00\x08\x00");
                fill_random(&mut out, size, &mut rng);
                out.extend_from_slice(b"PK\x05\x06");
            }
        }
        Some((kind.mime(), Bytes::from(out)))
    }

    fn calendar_page(&self, year: u32, month: u32) -> String {
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

    fn print_page(&self, gid: u64) -> Option<String> {
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

impl Site for SyntheticSite {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let Some(route) = self.route(&req.path, req.query.as_deref()) else {
            return SiteResponse::not_found();
        };
        match route {
            Route::Robots => SiteResponse::ok("text/plain", self.robots.clone()),
            Route::Css => SiteResponse::ok("text/css", self.css.clone()),
            Route::Page { gid, sort } => match self.render_page(gid, sort) {
                Some(html) => SiteResponse::html(html),
                None => SiteResponse::not_found(),
            },
            Route::Target(tgid) => match self.target_body(tgid) {
                Some((mime, body)) => SiteResponse::ok(mime, body),
                None => SiteResponse::not_found(),
            },
            Route::Redirect { r, hop } => match self.redirect_plan(r) {
                Some((hops, dest)) => {
                    let location = if hop + 1 >= hops {
                        dest
                    } else {
                        Self::redirect_path(r, hop + 1)
                    };
                    // Mostly permanent, some temporary, as on real sites.
                    let status = if hash(self.params.seed, &[0x61, r, hop]) % 4 == 0 {
                        StatusCode::FOUND
                    } else {
                        StatusCode::MOVED_PERMANENTLY
                    };
                    SiteResponse::redirect(status, &location)
                }
                None => SiteResponse::not_found(),
            },
            Route::Image(n) => {
                let mut rng = Rng::new(self.params.seed, &[0x1B, n]);
                let mut png = PNG_1X1.to_vec();
                let size = 512 + rng.below(3584) as usize;
                fill_random(&mut png, size, &mut rng);
                SiteResponse::ok("image/png", png)
            }
            Route::Source(gid) => {
                let mut rng = Rng::new(self.params.seed, &[0xB0, gid]);
                let mut text = String::with_capacity(4096);
                for _ in 0..6 {
                    paragraph(&mut text, &mut rng);
                    text.push_str("\n\n");
                }
                SiteResponse::ok("text/plain", text)
            }
            Route::Variant { gid, kind } => {
                let mut rng = Rng::new(self.params.seed, &[0x7B, gid]);
                let mut text = String::with_capacity(4096);
                let title = title_case(&self.stem(0x71, gid, 4));
                match kind {
                    Variant::Source => {
                        let _ = write!(text, "{title}\n\n");
                        for _ in 0..6 {
                            paragraph(&mut text, &mut rng);
                            text.push_str("\n\n");
                        }
                        SiteResponse::ok("text/plain", text)
                    }
                    Variant::Raw => {
                        let _ = write!(text, "{title}\n{}\n\n", "=".repeat(title.len()));
                        for _ in 0..6 {
                            paragraph(&mut text, &mut rng);
                            text.push_str("\n\n");
                        }
                        SiteResponse::ok("text/x-rst", text)
                    }
                    Variant::Preview | Variant::Edit => {
                        let mut png = PNG_1X1.to_vec();
                        let size = 2048 + rng.below(8192) as usize;
                        fill_random(&mut png, size, &mut rng);
                        SiteResponse::ok("image/png", png)
                    }
                }
            }
            Route::Print(gid) => match self.print_page(gid) {
                Some(html) => SiteResponse::html(html),
                None => SiteResponse::not_found(),
            },
            Route::Calendar { year, month } => SiteResponse::html(self.calendar_page(year, month)),
            Route::Error(status) => SiteResponse::error(status),
        }
        .with_header(
            header::SERVER,
            HeaderValue::from_static("forager-synthetic"),
        )
    }

    fn is_trap(&self, path_and_query: &str) -> bool {
        self.params.calendar_trap && path_and_query.starts_with("/calendar/")
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
            let files = if s.data {
                format!(" ({} files)", site.holder_targets(sec, i).1)
            } else {
                String::new()
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
        if s.data {
            self.files(sec, i);
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
            let r = if s.data {
                let (start, count) = site.holder_targets(sec, i);
                (count > 0).then(|| 2 * (s.target_off + start) + 1)
            } else {
                near(1).map(|j| 2 * site.item_gid(sec, j))
            };
            if let Some(r) = r {
                let label = if s.data {
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

    fn files(&mut self, sec: usize, i: u64) {
        let site = self.site;
        let s = &site.sections[sec];
        let (start, count) = site.holder_targets(sec, i);
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
fn paragraph(out: &mut String, rng: &mut Rng) {
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

/// `href` written relative to the page at `from` (both absolute paths).
fn relative_href(from: &str, to: &str) -> String {
    let (to_path, query) = match to.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (to, None),
    };
    let from_dirs: Vec<&str> = from.split('?').next().unwrap_or("/").split('/').collect();
    let from_dirs = &from_dirs[1..from_dirs.len().saturating_sub(1).max(1)];
    let to_segs: Vec<&str> = to_path.split('/').skip(1).collect();
    let to_dirs = &to_segs[..to_segs.len().saturating_sub(1)];
    let common = from_dirs
        .iter()
        .zip(to_dirs.iter())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = "../".repeat(from_dirs.len() - common);
    out.push_str(&to_segs[common..].join("/"));
    if out.is_empty() {
        out.push_str("./");
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// The largest item count whose section (listings × `mult` + items) fits `budget`.
fn max_items_within(budget: u64, mult: u64, pp: u64) -> u64 {
    let cost = |items: u64| mult * items.div_ceil(pp).max(1) + items;
    // Start from the continuous estimate and walk to the exact answer.
    let mut items = (budget as f64 / (1.0 + mult as f64 / pp as f64)) as u64;
    while items > 1 && cost(items) > budget {
        items -= 1;
    }
    while cost(items + 1) <= budget {
        items += 1;
    }
    items.max(1)
}

fn session_id(seed: u64, k: u64) -> String {
    format!("{:016x}", hash(seed, &[0x5E55, k]))
}

fn shuffled(names: &[&str], rng: &mut Rng) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// The n-th name of a pool, suffixed once the pool is used up.
fn unique_name(pool: &[String], n: usize) -> String {
    let base = &pool[n % pool.len()];
    match n / pool.len() {
        0 => base.clone(),
        k => format!("{base}-{}", k + 1),
    }
}

fn title_case(slug: &str) -> String {
    let mut out = String::with_capacity(slug.len());
    for (n, w) in slug.split(['-', '_']).enumerate() {
        if n > 0 {
            out.push(' ');
        }
        let mut c = w.chars();
        if let Some(f) = c.next() {
            if n == 0 {
                out.push(f.to_ascii_uppercase());
            } else {
                out.push(f);
            }
            out.push_str(c.as_str());
        }
    }
    out
}

fn fill_random(out: &mut Vec<u8>, size: usize, rng: &mut Rng) {
    while out.len() < size {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
}

/// A valid 1×1 PNG; images are this plus padding.
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// `fmt::Write` over a byte vector.
struct VecWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn validate(p: &SyntheticParams) -> Result<()> {
    let in_range = |name: &str, v: f64, lo: f64, hi: f64| -> Result<()> {
        if !(lo..=hi).contains(&v) || v.is_nan() {
            bail!("synthetic site: {name} = {v} is outside [{lo}, {hi}]");
        }
        Ok(())
    };
    if !PAGES_RANGE.contains(&p.pages) {
        bail!(
            "synthetic site: pages = {} is outside [{}, {}]",
            p.pages,
            PAGES_RANGE.start(),
            PAGES_RANGE.end()
        );
    }
    in_range("target_density", p.target_density, 0.001, 0.95)?;
    in_range("holder_share", p.holder_share, 0.0001, 0.6)?;
    in_range("extensionless_share", p.extensionless_share, 0.0, 1.0)?;
    in_range("broken_link_share", p.broken_link_share, 0.0, 1.0)?;
    in_range("redirect_share", p.redirect_share, 0.0, 1.0)?;
    if !(2..=40).contains(&p.sections) {
        bail!(
            "synthetic site: sections = {} is outside [2, 40]",
            p.sections
        );
    }
    if p.data_sections == 0 || p.data_sections >= p.sections {
        bail!(
            "synthetic site: data_sections = {} must be in [1, sections - 1 = {}]",
            p.data_sections,
            p.sections - 1
        );
    }
    if p.per_page < 2 {
        bail!(
            "synthetic site: per_page = {} must be at least 2",
            p.per_page
        );
    }
    if let Pagination::Window(0) = p.pagination {
        bail!("synthetic site: a pagination window must be at least 1");
    }
    if p.page_bytes.0 > p.page_bytes.1 || p.page_bytes.1 > 64 << 20 {
        bail!(
            "synthetic site: page_bytes {:?} must be (min ≤ max ≤ 64 MiB)",
            p.page_bytes
        );
    }
    if p.target_bytes.0 > p.target_bytes.1 || p.target_bytes.1 > 1 << 30 {
        bail!(
            "synthetic site: target_bytes {:?} must be (min ≤ max ≤ 1 GiB)",
            p.target_bytes
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::groundtruth::{walk, GroundTruth, WalkOptions};
    use std::collections::BTreeSet;
    use url::Url;

    fn start() -> Url {
        Url::parse("http://synth.test/").unwrap()
    }

    fn get(site: &SyntheticSite, pq: &str) -> SiteResponse {
        site.respond(&SiteRequest::get("synth.test", pq))
    }

    fn body_text(resp: SiteResponse) -> String {
        String::from_utf8(resp.body.read_capped(usize::MAX).bytes).unwrap()
    }

    fn ground_truth(site: &SyntheticSite) -> GroundTruth {
        walk(site, "synth.test", &start(), &WalkOptions::statistics())
    }

    /// The walk must find exactly what the plan promises, and nothing broken
    /// but the deliberate error links.
    fn check_against_plan(site: &SyntheticSite, gt: &GroundTruth) {
        let plan = site.plan();
        assert!(!gt.truncated);
        assert_eq!(gt.pages as u64, plan.html_pages, "HTML pages");
        assert_eq!(gt.targets.len() as u64, plan.targets, "targets");
        assert_eq!(
            gt.holder_pages as u64, plan.holders,
            "pages linking to targets"
        );
        for (url, status) in &gt.errors {
            let path = Url::parse(url).unwrap().path().to_string();
            let expected = ["/archive/", "/api/", "/restricted/", "/gone/"];
            let edit = site.params.variant_links && path.starts_with("/_edit/");
            assert!(
                edit || expected.iter().any(|p| path.starts_with(p)),
                "unexpected error {status} for {url}"
            );
        }
        assert!(gt.other_host.is_empty() && gt.out_of_scope.is_empty());
    }

    #[test]
    fn small_preset_matches_its_plan_and_ranges() {
        let site = SyntheticSite::preset(Preset::Small, 7).unwrap();
        let gt = ground_truth(&site);
        check_against_plan(&site, &gt);
        let p = site.params();
        assert!((gt.pages as f64 - p.pages as f64).abs() <= 0.01 * p.pages as f64);
        assert!(
            (gt.target_density() - p.target_density).abs() < 0.005,
            "{}",
            gt.target_density()
        );
        assert!(
            (gt.holder_share() - p.holder_share).abs() < 0.005,
            "{}",
            gt.holder_share()
        );
        // Every kind of structure is there.
        assert!(gt.trap_links > 0, "calendar trap linked");
        assert!(!gt.robots_blocked.is_empty(), "print pages disallowed");
        assert!(gt.redirects > 0);
        assert!(gt.neither > 0, "images and _sources");
        assert!(!gt.errors.is_empty());
        let statuses: BTreeSet<u16> = gt.errors.values().copied().collect();
        assert!(statuses.len() >= 3, "{statuses:?}");
        let ext_less = gt.targets.iter().filter(|u| u.contains("/node/")).count();
        assert!(
            ext_less > 0 && ext_less < gt.targets.len() / 2,
            "{ext_less}"
        );
        for ext in ["csv", "xlsx", "pdf", "zip", "json"] {
            assert!(
                gt.targets.iter().any(|u| u.ends_with(ext)),
                "no .{ext} target"
            );
        }
    }

    #[test]
    fn variants_preset_links_every_page_to_two_variants_that_are_neither() {
        let site = SyntheticSite::preset(Preset::Variants, 4).unwrap();
        let gt = ground_truth(&site);
        check_against_plan(&site, &gt);
        assert!(
            (gt.target_density() - 0.15).abs() < 0.005,
            "{}",
            gt.target_density()
        );
        // A source link per canonical page and a second variant, 1/3 of them broken.
        let edits = gt.errors.keys().filter(|u| u.contains("/_edit/")).count() as u64;
        let served = gt.neither as u64;
        assert!(served >= site.canonical_pages, "{served} neither answers");
        assert!(
            edits > site.canonical_pages / 5 && edits < site.canonical_pages / 2,
            "{edits} edit links of {} pages",
            site.canonical_pages
        );
        // Each kind is served with its type, on the page's own variants only.
        let gid = (1..site.canonical_pages)
            .find(|&g| site.variants_of(g)[1] == Variant::Raw)
            .unwrap();
        let home = body_text(get(&site, &site.page_path(gid).unwrap()));
        for (kind, mime) in [
            (Variant::Source, "text/plain"),
            (Variant::Raw, "text/x-rst"),
        ] {
            let path = kind.path(gid);
            assert!(home.contains(&format!("href=\"{path}\"")), "{path} linked");
            let resp = get(&site, &path);
            assert_eq!(resp.status, StatusCode::OK);
            assert!(
                resp.content_type().is_some_and(|c| c.starts_with(mime)),
                "{path}"
            );
        }
        assert_eq!(
            get(&site, &Variant::Preview.path(gid)).status,
            StatusCode::NOT_FOUND
        );
        let gid = (1..site.canonical_pages)
            .find(|&g| site.variants_of(g)[1] == Variant::Preview)
            .unwrap();
        let resp = get(&site, &Variant::Preview.path(gid));
        assert!(resp
            .content_type()
            .is_some_and(|c| c.starts_with("image/png")));
        assert_eq!(
            get(&site, &format!("{}?x=1", Variant::Source.path(gid))).status,
            StatusCode::NOT_FOUND
        );
        // The other presets have none.
        let small = SyntheticSite::preset(Preset::Small, 4).unwrap();
        assert_eq!(
            get(&small, &Variant::Source.path(3)).status,
            StatusCode::NOT_FOUND
        );
        let page = body_text(get(&small, &small.page_path(3).unwrap()));
        assert!(!page.contains("/_source/") && !page.contains("/_edit/"));
    }

    #[test]
    fn sparse_and_dense_presets_hit_their_densities() {
        for (preset, density, share) in [(Preset::Sparse, 0.02, 0.01), (Preset::Dense, 0.6, 0.2)] {
            let site = SyntheticSite::preset(preset, 3).unwrap();
            let gt = ground_truth(&site);
            check_against_plan(&site, &gt);
            assert!(
                (gt.target_density() - density).abs() < 0.003,
                "{preset:?}: {}",
                gt.target_density()
            );
            assert!(
                (gt.holder_share() - share).abs() < 0.003,
                "{preset:?}: {}",
                gt.holder_share()
            );
        }
    }

    #[test]
    fn deep_preset_is_about_ninety_pages_deep() {
        let site = SyntheticSite::preset(Preset::Deep, 11).unwrap();
        assert!(
            (88..=95).contains(&site.plan().max_listing_pages),
            "{}",
            site.plan().max_listing_pages
        );
        let gt = ground_truth(&site);
        check_against_plan(&site, &gt);
        assert!(
            gt.target_depth_max >= 85,
            "target depth {}",
            gt.target_depth_max
        );
        assert!(
            gt.target_depth_mean >= 40.0,
            "mean target depth {}",
            gt.target_depth_mean
        );
        // Shallow presets stay shallow.
        let small = SyntheticSite::preset(Preset::Small, 11).unwrap();
        let gt = ground_truth(&small);
        assert!(
            gt.target_depth_max <= 15,
            "small target depth {}",
            gt.target_depth_max
        );
    }

    #[test]
    fn same_seed_same_site_other_seed_other_site() {
        let a = SyntheticSite::preset(Preset::Small, 42).unwrap();
        let b = SyntheticSite::preset(Preset::Small, 42).unwrap();
        let c = SyntheticSite::preset(Preset::Small, 43).unwrap();
        assert_eq!(a.plan(), b.plan());
        let gta = ground_truth(&a);
        assert_eq!(gta, ground_truth(&b));
        for url in gta.targets.iter().take(50) {
            let pq = Url::parse(url).unwrap().path().to_string();
            assert_eq!(
                get(&a, &pq).body.read_capped(usize::MAX),
                get(&b, &pq).body.read_capped(usize::MAX)
            );
        }
        for gid in (0..a.canonical_pages).step_by(37) {
            let pq = a.page_path(gid).unwrap();
            assert_eq!(body_text(get(&a, &pq)), body_text(get(&b, &pq)), "{pq}");
        }
        assert_ne!(body_text(get(&a, "/")), body_text(get(&c, "/")));
    }

    #[test]
    fn sections_have_distinct_templates_and_file_tag_paths() {
        let site = SyntheticSite::preset(Preset::Medium, 5).unwrap();
        let plan = site.plan();
        let styles: BTreeSet<&str> = plan.sections.iter().map(|s| s.url_style).collect();
        let looks: BTreeSet<&str> = plan.sections.iter().map(|s| s.look).collect();
        assert_eq!(styles.len(), 4);
        assert_eq!(looks.len(), 4);
        // A dataset page links its files under its section's file markup.
        let data = site.sections.iter().position(|s| s.data).unwrap();
        let html = body_text(get(&site, &site.item_path(data, 0)));
        let marker = match LOOKS[site.sections[data].look].files {
            FilesMarkup::Table => "class=\"dl\"",
            FilesMarkup::List => "class=\"file-link\"",
            FilesMarkup::Buttons => "class=\"btn btn-download\"",
            FilesMarkup::Attachments => "class=\"file-icon\"",
        };
        assert!(html.contains(marker), "{marker} missing");
        assert!(html.contains("id=\"main-menu\""), "menu on every page");
        assert!(html.contains("class=\"breadcrumb\""));
        assert!(html.contains("<footer"));
    }

    #[test]
    fn pages_are_real_sized_html() {
        let site = SyntheticSite::preset(Preset::Small, 1).unwrap();
        let (lo, hi) = site.params().page_bytes;
        for gid in (0..site.canonical_pages).step_by(13) {
            let pq = site.page_path(gid).unwrap();
            let resp = get(&site, &pq);
            assert_eq!(resp.status, StatusCode::OK, "{pq}");
            assert_eq!(resp.content_type(), Some("text/html; charset=utf-8"));
            let html = body_text(resp);
            assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
            assert!(
                html.len() >= lo as usize && html.len() <= hi as usize + 16 * 1024,
                "{pq}: {}",
                html.len()
            );
        }
    }

    #[test]
    fn only_the_sites_own_urls_exist() {
        let site = SyntheticSite::preset(Preset::Small, 9).unwrap();
        let ok = |pq: &str| get(&site, pq).status;
        assert_eq!(ok("/"), StatusCode::OK);
        assert_eq!(ok("/?x=1"), StatusCode::NOT_FOUND);
        assert_eq!(ok("/robots.txt"), StatusCode::OK);
        assert_eq!(ok("/calendar/2024/05"), StatusCode::OK);
        assert_eq!(ok("/calendar/2024/13"), StatusCode::NOT_FOUND);
        assert_eq!(ok("/calendar/2024/5"), StatusCode::NOT_FOUND);
        let cal = body_text(get(&site, "/calendar/2024/12"));
        assert!(cal.contains("/calendar/2025/01") && cal.contains("/calendar/2024/11"));
        assert!(site.is_trap("/calendar/1999/01"));
        assert!(!site.is_trap("/news/"));
        // Extension-less targets and Drupal pages share /node/ with opposite parity.
        let t = (0..site.targets)
            .find(|&t| site.target_is_extensionless(t))
            .unwrap();
        let node = site.target_path(t).unwrap();
        let resp = get(&site, &node);
        assert_eq!(resp.status, StatusCode::OK);
        assert!(resp.content_type().is_some_and(|c| !c.contains("html")));
        let wrong_parity = format!("/node/{}", NODE_BASE + 2 * t);
        assert!(
            get(&site, &wrong_parity).status == StatusCode::NOT_FOUND || site.kind_of(t).is_some()
        );
        // A file URL with another stem is not the file.
        let file = (0..site.targets)
            .find(|&t| !site.target_is_extensionless(t))
            .unwrap();
        let path = site.target_path(file).unwrap();
        let (dir, _) = path.rsplit_once('/').unwrap();
        assert_eq!(
            ok(&format!("{dir}/other_name-{file}.csv")),
            StatusCode::NOT_FOUND
        );
        assert_eq!(ok(&path), StatusCode::OK);
        assert_eq!(ok(&format!("{path}?x=1")), StatusCode::NOT_FOUND);
        // Listings past the end do not exist.
        let sec = 0;
        let n = site.sections[sec].listings;
        assert_eq!(ok(&site.listing_path(sec, n - 1)), StatusCode::OK);
        assert_eq!(ok(&site.listing_path(sec, n)), StatusCode::NOT_FOUND);
        assert_eq!(ok(&site.sorted_path(sec, 0, Sort::Desc)), StatusCode::OK);
        // Redirect chains end where the plan says.
        let mut pq = SyntheticSite::redirect_path(2 * site.item_gid(sec, 1), 0);
        let mut hops = 0;
        loop {
            let resp = get(&site, &pq);
            if !resp.status.is_redirection() {
                assert_eq!(resp.status, StatusCode::OK);
                break;
            }
            pq = resp.location().unwrap().to_string();
            hops += 1;
            assert!(hops <= 3);
        }
        assert_eq!(pq, site.item_path(sec, 1));
    }

    #[test]
    fn contact_session_ids_are_a_small_fixed_pool() {
        let site = SyntheticSite::preset(Preset::Small, 2).unwrap();
        let sid = session_id(2, 5);
        assert_eq!(
            get(&site, &format!("/contact?sessionid={sid}")).status,
            StatusCode::OK
        );
        assert_eq!(
            get(&site, "/contact?sessionid=deadbeef").status,
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn relative_hrefs_resolve_back() {
        let base = Url::parse("http://h.test/sec/page-1.html").unwrap();
        for to in [
            "/",
            "/about",
            "/sec/x.html",
            "/other/y.html",
            "/node/1002",
            "/contact?sessionid=ab",
            "/a/b/c/",
        ] {
            let rel = relative_href(base.path(), to);
            assert_eq!(
                base.join(&rel).unwrap().path(),
                to.split('?').next().unwrap(),
                "{to} via {rel}"
            );
        }
        assert_eq!(relative_href("/sec/a.html", "/sec/b.html"), "b.html");
    }

    #[test]
    fn parameters_are_validated() {
        let mut p = Preset::Small.params(1);
        p.target_density = 1.5;
        assert!(SyntheticSite::new(p).is_err());
        let mut p = Preset::Small.params(1);
        p.data_sections = p.sections;
        assert!(SyntheticSite::new(p).is_err());
        let mut p = Preset::Small.params(1);
        p.pages = 150;
        p.sections = 40;
        p.data_sections = 1;
        assert!(
            SyntheticSite::new(p).is_err(),
            "too few pages for the sections"
        );
        let mut p = Preset::Small.params(1);
        p.pages = 150;
        assert!(SyntheticSite::new(p).is_ok());
        assert_eq!("Deep".parse::<Preset>().unwrap(), Preset::Deep);
        assert!("huge".parse::<Preset>().is_err());
    }

    #[test]
    fn specs_name_a_preset_a_seed_and_a_size() {
        let spec = |s: &str| s.parse::<SyntheticSpec>();
        let plain = spec("large").unwrap();
        assert_eq!(
            (plain.preset, plain.seed, plain.pages),
            (Preset::Large, 1, None)
        );
        assert_eq!(plain.name(), "large");
        assert_eq!(plain.params(), Preset::Large.params(1));
        assert_eq!(spec("deep:7").unwrap().seed, 7);
        for (text, pages) in [
            ("large:pages=1000000", 1_000_000),
            ("large:pages=1_000_000", 1_000_000),
            ("large:pages=1M", 1_000_000),
            ("large:pages=200k", 200_000),
            ("large:pages=100", 100),
        ] {
            let s = spec(text).unwrap();
            assert_eq!((s.seed, s.pages), (1, Some(pages)), "{text}");
            assert_eq!(s.params().pages, pages);
        }
        let s = spec("large:3:pages=1M").unwrap();
        assert_eq!((s.seed, s.pages), (3, Some(1_000_000)));
        assert_eq!(s.name(), "large-1000000p");
        // Everything but the page count is the preset's.
        let p = s.params();
        assert_eq!(
            SyntheticParams {
                pages: 100_000,
                ..p
            },
            Preset::Large.params(3)
        );
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let err = |s: &str| format!("{:#}", s.parse::<SyntheticSpec>().unwrap_err());
        assert!(
            err("huge").contains("unknown synthetic preset"),
            "{}",
            err("huge")
        );
        assert!(err("large:x").contains("seed \"x\" is not a number"));
        assert!(err("large:pages=lots").contains("not a whole number"));
        assert!(err("large:pages=").contains("not a whole number"));
        assert!(err("large:pages=1.5M").contains("not a whole number"));
        assert!(err("large:pages=99").contains("outside [100, 100000000]"));
        assert!(err("large:pages=200M").contains("outside [100, 100000000]"));
        assert!(err("large:pages=99999999999999999999").contains("too large"));
        assert!(err("large:pages=20000000000000M").contains("too large"));
        assert!(err("large:size=10").contains("unknown option \"size\""));
        assert!(err("large:pages=1k:pages=2k").contains("given twice"));
        // The seed comes before the size, once.
        assert!(err("large:pages=1k:3").contains("unexpected \"3\""));
        assert!(err("large:3:4").contains("unexpected \"4\""));
    }

    /// A million-page site is laid out from a few numbers per section and
    /// renders any of its pages on demand: nothing grows with its size.
    #[test]
    fn a_million_page_site_is_laid_out_without_holding_pages() {
        let site = SyntheticSite::new("large:pages=1M".parse::<SyntheticSpec>().unwrap().params())
            .unwrap();
        let plan = site.plan();
        assert!(
            (999_000..=1_001_000).contains(&plan.html_pages),
            "{}",
            plan.html_pages
        );
        // The large preset's density (25 % of pages + targets).
        assert!((plan.target_density() - 0.25).abs() < 0.01);
        assert_eq!(site.sections.len(), 12);
        // The last canonical page exists and is a page of real size.
        let last = site.page_path(site.canonical_pages - 1).unwrap();
        let resp = get(&site, &last);
        assert_eq!(resp.status, StatusCode::OK, "{last}");
        assert!(body_text(resp).len() > 5 * 1024);
        assert!(site.page_path(site.canonical_pages).is_none());
    }

    proptest::proptest! {
        /// Files of a data section are split among its holders without gap or
        /// overlap, every holder getting at least one.
        #[test]
        fn holder_files_tile_the_section(items in 1u64..300, extra in 0u64..3000, seed in 0u64..1000) {
            let mut site = SyntheticSite::preset(Preset::Small, seed).unwrap();
            let sec = site.sections.iter().position(|s| s.data).unwrap();
            site.sections[sec].items = items;
            site.sections[sec].targets = items + extra;
            let mut next = 0;
            for j in 0..items {
                let (start, count) = site.holder_targets(sec, j);
                proptest::prop_assert_eq!(start, next);
                proptest::prop_assert!(count >= 1);
                next = start + count;
            }
            proptest::prop_assert_eq!(next, items + extra);
        }

        #[test]
        fn max_items_fits_the_budget(budget in 2u64..100_000, mult in 1u64..4, pp in 2u64..50) {
            let items = max_items_within(budget.max(mult + 1), mult, pp);
            let cost = |i: u64| mult * i.div_ceil(pp).max(1) + i;
            proptest::prop_assert!(cost(items) <= budget.max(mult + 1));
            proptest::prop_assert!(cost(items + 1) > budget.max(mult + 1));
        }
    }

    /// Rendering rate of one core (run: cargo test --release -- --ignored generation_rate --nocapture).
    #[test]
    #[ignore]
    fn generation_rate() {
        let site = SyntheticSite::preset(Preset::Large, 1).unwrap();
        let t = std::time::Instant::now();
        let mut bytes = 0usize;
        let n = 20_000u64;
        for gid in 0..n {
            let pq = site.page_path(gid * 5 % site.canonical_pages).unwrap();
            bytes += get(&site, &pq).body.len().unwrap_or(0) as usize;
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{:.0} pages/s, {:.1} MiB/s",
            n as f64 / secs,
            bytes as f64 / secs / 1048576.0
        );
    }

    /// Serving rate over HTTP with the server confined to one thread (run:
    /// cargo test --release --lib serving_rate -- --ignored --nocapture).
    #[test]
    #[ignore]
    fn serving_rate() {
        use crate::sites::SiteServer;
        use std::sync::Arc;
        let site = Arc::new(SyntheticSite::preset(Preset::Large, 1).unwrap());
        let paths: Vec<String> = (0..20_000u64)
            .map(|n| site.page_path(n * 5 % site.canonical_pages).unwrap())
            .collect();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let served = Arc::clone(&site);
        let server_thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let server =
                    SiteServer::start(vec![("synth.test".to_string(), served as Arc<dyn Site>)])
                        .await
                        .unwrap();
                addr_tx.send(server.addr()).unwrap();
                let cpu0 = thread_cpu_secs();
                let _ = stop_rx.await;
                let cpu = thread_cpu_secs() - cpu0;
                server.shutdown().await.unwrap();
                cpu
            })
        });
        let addr = addr_rx.recv().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (n, secs, bytes) = rt.block_on(async move {
            let client = reqwest::Client::builder()
                .no_proxy()
                .resolve("synth.test", addr)
                .build()
                .unwrap();
            let base = format!("http://synth.test:{}", addr.port());
            let t = std::time::Instant::now();
            let mut bytes = 0usize;
            let mut tasks = tokio::task::JoinSet::new();
            for chunk in paths.chunks(paths.len() / 8) {
                let client = client.clone();
                let urls: Vec<String> = chunk.iter().map(|p| format!("{base}{p}")).collect();
                tasks.spawn(async move {
                    let mut b = 0usize;
                    for u in urls {
                        b += client
                            .get(u)
                            .send()
                            .await
                            .unwrap()
                            .bytes()
                            .await
                            .unwrap()
                            .len();
                    }
                    b
                });
            }
            while let Some(b) = tasks.join_next().await {
                bytes += b.unwrap();
            }
            (paths.len(), t.elapsed().as_secs_f64(), bytes)
        });
        let _ = stop_tx.send(());
        let server_cpu = server_thread.join().unwrap();
        println!(
            "served {n} pages in {secs:.2} s: {:.0} pages/s, {:.1} MiB/s; server thread CPU {server_cpu:.2} s = {:.0} pages per CPU-second",
            n as f64 / secs,
            bytes as f64 / secs / 1048576.0,
            n as f64 / server_cpu
        );
    }

    /// CPU time (user + system) of the calling thread, from /proc (Linux).
    fn thread_cpu_secs() -> f64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
        // Fields after the parenthesised command name; utime and stime are 14 and 15.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (ticks(11) + ticks(12)) / 100.0
    }
}
