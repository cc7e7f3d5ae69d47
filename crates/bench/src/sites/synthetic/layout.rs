//! The layout of a site: its sections and the page and target ids each
//! spans, computed once by [`SyntheticSite::new`], and what a page id is.

use super::{validate, SectionPlan, SitePlan, SyntheticParams, SyntheticSite};
use crate::sites::rng::{hash, unit_of, Rng};
use anyhow::{bail, Result};
use bytes::Bytes;
use std::collections::HashMap;

// ---------------------------------------------------------------------------
// Layout

/// Static pages after the home page (gid 1..=4).
pub(super) const STATICS: [(&str, &str); 4] = [
    ("/about", "About us"),
    ("/legal", "Legal notice"),
    ("/contact", "Contact"),
    ("/sitemap", "Site map"),
];
const FIRST_SECTION_GID: u64 = 1 + STATICS.len() as u64;
pub(super) const CONTACT_GID: u64 = 3;
/// Distinct `sessionid` values on the footer's contact link.
pub(super) const SESSION_POOL: u64 = 8;
/// `/node/N` numbers start here; even N are pages, odd N targets.
pub(super) const NODE_BASE: u64 = 1000;
/// Month the menu's "Events" link opens.
pub(super) const CALENDAR_START: (u32, u32) = (2024, 5);

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

pub(super) const WORDS: [&str; 96] = [
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

/// The kinds of target file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TargetKind {
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

    pub(super) fn ext(self) -> &'static str {
        match self {
            TargetKind::Csv => "csv",
            TargetKind::Xlsx => "xlsx",
            TargetKind::Pdf => "pdf",
            TargetKind::Zip => "zip",
            TargetKind::Json => "json",
        }
    }

    pub(super) fn mime(self) -> &'static str {
        match self {
            TargetKind::Csv => "text/csv",
            TargetKind::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            TargetKind::Pdf => "application/pdf",
            TargetKind::Zip => "application/zip",
            TargetKind::Json => "application/json",
        }
    }

    pub(super) fn from_ext(ext: &str) -> Option<TargetKind> {
        TargetKind::ALL.into_iter().find(|k| k.ext() == ext)
    }
}

#[derive(Clone, Debug)]
pub(super) struct Section {
    pub(super) slug: String,
    pub(super) title: String,
    pub(super) data: bool,
    pub(super) style: UrlStyle,
    pub(super) look: usize,
    /// Global id of listing page 0; listings then items follow.
    page_off: u64,
    pub(super) listings: u64,
    pub(super) items: u64,
    /// Data sections: items that link targets (one in `stride`; all with 1).
    pub(super) holders: u64,
    /// Data sections: one item in `stride` links targets (see `holder_index`).
    pub(super) stride: u64,
    /// Data sections: global id of the first target.
    pub(super) target_off: u64,
    pub(super) targets: u64,
    primary: TargetKind,
    pub(super) files_prefix: &'static str,
}

/// What a page id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PageKind {
    Home,
    Static(usize),
    Listing { sec: usize, k: u64 },
    Item { sec: usize, i: u64 },
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
        // Each holder comes with `stride - 1` reference pages that link no file.
        let stride = u64::from(params.holder_stride.max(1));
        let data_holders = data_items.clone();
        for x in &mut data_items {
            *x *= stride;
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
            let (slug, items, holders) = if is_data {
                let name = unique_name(&data_names, di);
                di += 1;
                (name, data_items[di - 1], data_holders[di - 1])
            } else {
                let name = unique_name(&content_names, ci);
                ci += 1;
                (name, content_items[ci - 1], 0)
            };
            let reference = is_data && stride > 1;
            let listings = listings_for(items);
            let title = title_case(&slug);
            sections.push(Section {
                slug,
                title,
                data: is_data,
                // A reference section's URLs carry a package name (`/node/N` cannot).
                style: if reference {
                    UrlStyle::Docs
                } else {
                    UrlStyle::ALL[(s + style_shift) % 4]
                },
                look: (s + look_shift) % LOOK_NAMES.len(),
                page_off,
                listings,
                items,
                holders,
                stride: if is_data { stride } else { 1 },
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
                (targets * sections[s].holders / holders).max(sections[s].holders)
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
                look: LOOK_NAMES[s.look],
                listing_pages: s.listings,
                items: s.items,
                targets: s.targets,
                index_path: site.listing_path(i, 0),
            })
            .collect();
        Ok(site)
    }

    fn section_of_gid(&self, gid: u64) -> Option<usize> {
        if gid < FIRST_SECTION_GID || gid >= self.canonical_pages {
            return None;
        }
        let idx = self.sections.partition_point(|s| s.page_off <= gid);
        idx.checked_sub(1)
    }

    pub(super) fn kind_of(&self, gid: u64) -> Option<PageKind> {
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

    pub(super) fn item_gid(&self, sec: usize, i: u64) -> u64 {
        let s = &self.sections[sec];
        s.page_off + s.listings + i
    }

    pub(super) fn listing_gid(&self, sec: usize, k: u64) -> u64 {
        self.sections[sec].page_off + k
    }

    pub(super) fn target_section(&self, tgid: u64) -> Option<usize> {
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

    pub(super) fn target_kind(&self, tgid: u64, sec: usize) -> TargetKind {
        let h = hash(self.params.seed, &[0x7A, tgid]);
        if unit_of(h) < 0.55 {
            self.sections[sec].primary
        } else {
            TargetKind::ALL[(h % 5) as usize]
        }
    }

    /// The holder index of item `i` of section `sec` when it links targets:
    /// one item in each block of `stride`, at a seeded position.
    pub(super) fn holder_index(&self, sec: usize, i: u64) -> Option<u64> {
        let s = &self.sections[sec];
        if !s.data || i >= s.items {
            return None;
        }
        if s.stride <= 1 {
            return Some(i);
        }
        let block = i / s.stride;
        let slot = hash(self.params.seed, &[0xB1, sec as u64, block]) % s.stride;
        (i % s.stride == slot).then_some(block)
    }

    /// Section-local (first target, count) of holder `j` of section `sec`.
    ///
    /// Counts vary around the mean in pairs (+v, −v) so the prefix sum has a
    /// closed form: any holder's files are found without a table.
    pub(super) fn holder_targets(&self, sec: usize, j: u64) -> (u64, u64) {
        let s = &self.sections[sec];
        let n = s.holders.max(1);
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
}

/// The largest item count whose section (listings × `mult` + items) fits `budget`.
pub(super) fn max_items_within(budget: u64, mult: u64, pp: u64) -> u64 {
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

/// The markup vocabularies a section is drawn in (`render`'s `LOOKS`, in
/// this order), by the name a site plan reports.
pub(super) const LOOK_NAMES: [&str; 4] = ["bootstrap", "drupal", "cards", "sphinx"];

/// How a section names its URLs (`urls` builds and parses them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UrlStyle {
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
    pub(super) const ALL: [UrlStyle; 4] = [
        UrlStyle::Drupal,
        UrlStyle::Static,
        UrlStyle::Press,
        UrlStyle::Docs,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            UrlStyle::Drupal => "drupal",
            UrlStyle::Static => "static",
            UrlStyle::Press => "press",
            UrlStyle::Docs => "docs",
        }
    }
}

/// `some-slug_words` → `Some slug words`.
pub(super) fn title_case(slug: &str) -> String {
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
