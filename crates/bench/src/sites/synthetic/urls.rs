//! URLs: each section's URL style, the path of every page, target, image,
//! short link and variant, and [`SyntheticSite::route`], which parses a
//! request back into what it names (anything else is a 404).

use super::layout::{
    PageKind, TargetKind, UrlStyle, CONTACT_GID, NODE_BASE, SESSION_POOL, STATICS, WORDS,
};
use super::SyntheticSite;
use crate::sites::rng::{hash, unit_of, Rng};
use axum::http::StatusCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sort {
    Asc,
    Desc,
}

/// A parsed request path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
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
pub(super) enum Variant {
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
    pub(super) fn path(self, gid: u64) -> String {
        match self {
            Variant::Source => format!("/_source/{gid}.txt"),
            Variant::Raw => format!("/_raw/{gid}.rst"),
            Variant::Preview => format!("/_preview/{gid}"),
            Variant::Edit => format!("/_edit/{gid}"),
        }
    }
}

/// Packages of a reference section's pages that link no file (with a tell).
const PACKAGES: [&str; 8] = [
    "core", "io", "linalg", "stats", "utils", "sparse", "signal", "optimize",
];
const PACKAGES_AND_PLOTTING: [&str; 9] = [
    "core", "io", "linalg", "stats", "utils", "sparse", "signal", "optimize", "plotting",
];

impl SyntheticSite {
    // -- addressing --------------------------------------------------------

    pub(super) fn stem(&self, tag: u64, id: u64, words: u64) -> String {
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

    pub(super) fn year_of(&self, tag: u64, id: u64) -> u64 {
        2000 + hash(self.params.seed, &[tag, id]) % 25
    }

    pub(super) fn listing_path(&self, sec: usize, k: u64) -> String {
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

    pub(super) fn sorted_path(&self, sec: usize, k: u64, sort: Sort) -> String {
        let base = self.listing_path(sec, k);
        let sep = if base.contains('?') { '&' } else { '?' };
        let dir = match sort {
            Sort::Asc => "asc",
            Sort::Desc => "desc",
        };
        format!("{base}{sep}sort={dir}")
    }

    pub(super) fn item_path(&self, sec: usize, i: u64) -> String {
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
            UrlStyle::Docs if s.stride > 1 => format!(
                "/{}/{}-{}-{}.html",
                s.slug,
                self.package_of(sec, i),
                self.stem(0x57, gid, 2),
                i
            ),
            UrlStyle::Docs => format!("/{}/{}-{}.html", s.slug, self.stem(0x57, gid, 2), i),
        }
    }

    /// The package of item `i` of a reference section (a stride above 1):
    /// with [`SyntheticParams::holder_tell`](super::SyntheticParams) the
    /// items that link targets are all in `plotting`, the others in another
    /// package; without it, any item is in any package.
    fn package_of(&self, sec: usize, i: u64) -> &'static str {
        let h = hash(self.params.seed, &[0xB2, sec as u64, i]) as usize;
        if self.params.holder_tell && self.holder_index(sec, i).is_some() {
            "plotting"
        } else if self.params.holder_tell {
            PACKAGES[h % PACKAGES.len()]
        } else {
            // "plotting" among the others, so no package is a tell.
            PACKAGES_AND_PLOTTING[h % PACKAGES_AND_PLOTTING.len()]
        }
    }

    pub(super) fn page_path(&self, gid: u64) -> Option<String> {
        Some(match self.kind_of(gid)? {
            PageKind::Home => "/".to_string(),
            PageKind::Static(n) => STATICS[n].0.to_string(),
            PageKind::Listing { sec, k } => self.listing_path(sec, k),
            PageKind::Item { sec, i } => self.item_path(sec, i),
        })
    }

    pub(super) fn target_is_extensionless(&self, tgid: u64) -> bool {
        unit_of(hash(self.params.seed, &[0x7B, tgid])) < self.params.extensionless_share
    }

    pub(super) fn target_path(&self, tgid: u64) -> Option<String> {
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

    pub(super) fn image_path(&self, n: u64) -> String {
        format!("/static/img/{}-{}.png", self.stem(0x1A, n, 1), n)
    }

    pub(super) fn source_path(&self, gid: u64) -> Option<String> {
        let p = self.page_path(gid)?;
        let stripped = p.strip_suffix(".html")?;
        Some(format!("/_sources{stripped}.txt"))
    }

    pub(super) fn calendar_path(year: u32, month: u32) -> String {
        format!("/calendar/{year:04}/{month:02}")
    }

    pub(super) fn redirect_path(r: u64, hop: u64) -> String {
        if hop == 0 {
            format!("/go/{r}")
        } else {
            format!("/go/{r}/{hop}")
        }
    }

    /// Hops of short link `r` and where it ends. Even `r` = 2·gid of a page,
    /// odd `r` = 2·tgid + 1 of a target.
    pub(super) fn redirect_plan(&self, r: u64) -> Option<(u64, String)> {
        let hops = 1 + hash(self.params.seed, &[0x60, r]) % 3;
        let dest = if r % 2 == 0 {
            self.page_path(r / 2)?
        } else {
            self.target_path(r / 2)?
        };
        Some((hops, dest))
    }

    pub(super) fn error_link(&self, gid: u64) -> (String, &'static str) {
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

    pub(super) fn route(&self, path: &str, query: Option<&str>) -> Option<Route> {
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

    pub(super) fn has_source_link(&self, gid: u64) -> bool {
        self.params.neither_links
            && matches!(self.kind_of(gid), Some(PageKind::Item { sec, .. })
                if self.sections[sec].style == UrlStyle::Docs)
    }

    /// The variant links of page `gid`: its source, and one more chosen by the seed.
    pub(super) fn variants_of(&self, gid: u64) -> [Variant; 2] {
        let second = match hash(self.params.seed, &[0x7A, gid]) % 3 {
            0 => Variant::Raw,
            1 => Variant::Preview,
            _ => Variant::Edit,
        };
        [Variant::Source, second]
    }

    pub(super) fn has_print_link(&self, gid: u64) -> bool {
        self.params.print_links
            && matches!(self.kind_of(gid), Some(PageKind::Item { sec, .. }) if !self.sections[sec].data)
    }
}

/// `href` written relative to the page at `from` (both absolute paths).
pub(super) fn relative_href(from: &str, to: &str) -> String {
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

pub(super) fn session_id(seed: u64, k: u64) -> String {
    format!("{:016x}", hash(seed, &[0x5E55, k]))
}
