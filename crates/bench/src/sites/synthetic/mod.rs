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
//!
//! Where things are: this file holds the parameters, the presets and the
//! public [`SyntheticSite`] API; `layout.rs` lays the site out (sections and
//! their page and target ids); `urls.rs` builds every URL and parses it back
//! into an id; `render.rs` writes the HTML of each page kind; `serve.rs`
//! answers requests; `tests.rs` holds the tests.

mod layout;
mod render;
mod serve;
mod urls;

use anyhow::{bail, Result};
use bytes::Bytes;
use layout::Section;
use std::collections::HashMap;
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
    /// nor a target, among the navigation and footer links (the
    /// Sphinx pattern): "View source" (`/_source/N.txt`, `text/plain`) in the
    /// footer, and one of "Raw" (`/_raw/N.rst`, `text/x-rst`, footer),
    /// "Print preview" (`/_preview/N`, an extension-less `image/png`,
    /// breadcrumb) or "Edit" (`/_edit/N`, a 404, breadcrumb).
    pub variant_links: bool,
    /// In data sections, one item in `holder_stride` links targets; the
    /// others are reference pages with no file, listed beside them under the
    /// same markup (1: every item of a data section links targets). A
    /// section with a stride above 1 is a Sphinx-like reference
    /// (`/SECTION/PACKAGE-words-N.html`).
    pub holder_stride: u32,
    /// With a stride above 1: the items that link targets all sit in one
    /// package (`plotting-…`), the others in other packages, so the URL tells
    /// them apart; `false`: every item's package is drawn at random and
    /// nothing in a link tells.
    pub holder_tell: bool,
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
    /// ~8 k pages; a 2 000-page reference section whose listings give every
    /// page one tag path, one page in 50 linking targets (~100 in all), told
    /// by a package name in its URL ([`SyntheticParams::holder_stride`]).
    Rare,
    /// [`Preset::Rare`] where nothing in a link tells the pages with targets.
    RareBlind,
}

impl Preset {
    pub const ALL: [Preset; 9] = [
        Preset::Small,
        Preset::Medium,
        Preset::Large,
        Preset::Deep,
        Preset::Sparse,
        Preset::Dense,
        Preset::Variants,
        Preset::Rare,
        Preset::RareBlind,
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
            Preset::Rare => "rare",
            Preset::RareBlind => "rare-blind",
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
            holder_stride: 1,
            holder_tell: false,
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
            // Shaped like a Sphinx documentation site (1 130 pages, 176
            // targets, a `_sources/*.txt` link on every page).
            Preset::Variants => SyntheticParams {
                pages: 1_500,
                target_density: 0.15,
                variant_links: true,
                ..base
            },
            // Shaped like an API documentation site (plots on ~35
            // of 6 000 reference pages, all in one tag-path group).
            Preset::Rare | Preset::RareBlind => SyntheticParams {
                pages: 8_000,
                target_density: 0.012,
                holder_share: 0.005,
                sections: 6,
                data_sections: 1,
                per_page: 20,
                pagination: Pagination::Window(3),
                holder_stride: 50,
                holder_tell: self == Preset::Rare,
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
                    "unknown synthetic preset {s:?}: expected one of small, medium, large, deep, sparse, dense, variants, rare, rare-blind"
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
    if !(1..=1000).contains(&p.holder_stride) {
        bail!(
            "synthetic site: holder_stride = {} is outside [1, 1000]",
            p.holder_stride
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
mod tests;
