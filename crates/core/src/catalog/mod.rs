//! Data catalogs as link sources: the machine-readable lists of datasets a
//! portal publishes beside its HTML (ARCHITECTURE.md § Crawl loop).
//!
//! Owns: which well-known paths of an origin are asked for a catalog
//! ([`well_known`]), the tag paths that mark a link as a catalog to read or
//! as a catalog's entry, what a manifest row says of how its file was found
//! ([`found_by`]), and reading a catalog body into links
//! ([`catalog_links`]): the CKAN Action API's `package_search`
//! (`result.results[].resources[].url`, with its next page), Project Open
//! Data's `data.json` (`dataset[].distribution[].downloadURL`/`accessURL`),
//! and DCAT in any RDF syntax [`crate::rdf`] parses (`dcat:downloadURL`,
//! `dcat:accessURL`, `dcat:distribution`).
//!
//! Must not touch: the network, the store, or learning. Like a sitemap's,
//! a catalog's links carry fixed tag paths of their own, so `sb` files them
//! under actions of their own and learns whether a catalog pays on a site.
//!
//! Bounded on hostile input: the body is capped by the caller
//! ([`MAX_CATALOG_BYTES`]), JSON arrays are read up to a fixed number of
//! entries and the rest skipped without being built, links stop at the
//! job's `max_links_per_page`, CKAN paging stops after [`MAX_CKAN_PAGES`]
//! pages, and serde_json's recursion limit bounds nesting.

pub mod schema_org;
pub mod source;

pub use source::{
    catalog_of, declared_label, form_result_tag_path, found_by, is_catalog_link, kind_of_url,
    listed_catalog, well_known, CatalogKind, CKAN_ENTRY, CKAN_ROWS, DATA_JSON_ACCESS,
    DATA_JSON_DOWNLOAD, DCAT_ACCESS, DCAT_DISTRIBUTION, DCAT_DOWNLOAD, FORM_PREFIX,
    FORM_RESULT_PREFIX,
};

use crate::extract::{resolve, RejectCounts};
use crate::extract::{ExtractLimits, ExtractedLink, PageCut, PageLinks};
use crate::link::TagPath;
use crate::rdf::{self, RdfSyntax};
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;
use url::Url;

/// Bytes of one catalog body read (a CKAN page of 1 000 datasets is ~2 MiB).
pub const MAX_CATALOG_BYTES: u64 = 8 << 20;
/// Pages of one CKAN `package_search` followed (with [`CKAN_ROWS`] rows a
/// page: 10 000 datasets), however many the API claims.
pub const MAX_CKAN_PAGES: u64 = 100;
/// Datasets read per catalog body; the rest are skipped unbuilt.
const MAX_DATASETS: usize = 10_000;
/// Resources (distributions) read per dataset.
const MAX_RESOURCES: usize = 100;

const DCAT: &str = "http://www.w3.org/ns/dcat#";

/// A sitemap's links with the catalogs among its entries retagged as
/// catalogs to read ([`listed_catalog`]), in a job that reads catalogs: a
/// portal whose sitemap lists its catalog at a path no well-known list has.
/// Nested sitemaps keep their tag path; the count of links is unchanged,
/// so the sitemap's own caps still bound the work.
pub fn retag_sitemap_catalogs(links: &mut PageLinks) {
    let mut seen: HashSet<String> = links
        .links
        .iter()
        .map(|l| l.url.as_str().to_string())
        .collect();
    for l in &mut links.links {
        if l.tag_path.as_str() != crate::extract::sitemap::SITEMAP_ENTRY_TAG_PATH {
            continue;
        }
        let Some((url, kind)) = listed_catalog(&l.url) else {
            continue;
        };
        if url != l.url && !seen.insert(url.as_str().to_string()) {
            continue;
        }
        l.url = url;
        l.tag_path = TagPath::new(kind.tag_path());
    }
}

/// The links of a catalog body of `kind`, fetched from `url` (with its
/// `content_type` essence, for DCAT's syntax). Never fails: garbage gives
/// no links.
pub fn catalog_links(
    kind: CatalogKind,
    body: &[u8],
    url: &Url,
    content_type: &str,
    limits: &ExtractLimits,
) -> PageLinks {
    let mut out = Collector::new(url, limits);
    match kind {
        CatalogKind::Ckan => ckan(body, url, &mut out),
        CatalogKind::DataJson => data_json(body, &mut out),
        CatalogKind::Dcat => dcat(body, url, content_type, limits, &mut out),
    }
    out.finish()
}

/// Gathers resolved, distinct links up to the job's cap.
struct Collector<'a> {
    base: &'a Url,
    limits: &'a ExtractLimits,
    links: Vec<ExtractedLink>,
    seen: HashSet<String>,
    rejected: RejectCounts,
    cut: Option<PageCut>,
}

impl<'a> Collector<'a> {
    fn new(base: &'a Url, limits: &'a ExtractLimits) -> Self {
        Collector {
            base,
            limits,
            links: Vec::new(),
            seen: HashSet::new(),
            rejected: RejectCounts::default(),
            cut: None,
        }
    }

    /// Whether more links are welcome.
    fn open(&self) -> bool {
        self.cut.is_none()
    }

    fn push(&mut self, raw: &str, tag_path: &'static str) {
        if self.links.len() >= self.limits.max_links {
            self.cut.get_or_insert(PageCut::MaxLinks);
            return;
        }
        match resolve(self.base, raw.trim(), &self.limits.url_rules) {
            Ok(url) => {
                if self.seen.insert(url.as_str().to_string()) {
                    self.links.push(ExtractedLink {
                        url,
                        tag_path: TagPath::new(tag_path),
                        anchor: String::new(),
                    });
                }
            }
            Err(kind) => self.rejected.add(kind),
        }
    }

    fn finish(self) -> PageLinks {
        PageLinks {
            links: self.links,
            base: self.base.clone(),
            structured_data: false,
            structured: None,
            cut: self.cut,
            rejected: self.rejected,
        }
    }
}

/// A JSON array read up to `N` entries; the rest are skipped without being
/// built (a catalog of 10⁶ entries costs a scan, not 10⁶ values). A value
/// that is not an array reads as empty.
struct Capped<T, const N: usize>(Vec<T>);

impl<T, const N: usize> Default for Capped<T, N> {
    fn default() -> Self {
        Capped(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Capped<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, const N: usize>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for V<T, N> {
            type Value = Capped<T, N>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while out.len() < N {
                    // An entry of the wrong shape is skipped, not fatal.
                    match seq.next_element::<Lenient<T>>()? {
                        Some(Lenient(Some(v))) => out.push(v),
                        Some(Lenient(None)) => {}
                        None => return Ok(Capped(out)),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Capped(out))
            }
            // Anything else (an object, a string, null) is no array: empty.
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Capped(Vec::new()))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Capped(Vec::new()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Capped(Vec::new()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Capped(Vec::new()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Capped(Vec::new()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Capped(Vec::new()))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Capped(Vec::new()))
            }
        }
        d.deserialize_any(V::<T, N>(PhantomData))
    }
}

/// A value of type `T`, or `None` when the JSON has another shape.
struct Lenient<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Buffered as a value first: an entry is small next to the body cap,
        // and serde_json's recursion limit bounds its depth.
        let v = serde_json::Value::deserialize(d)?;
        Ok(Lenient(T::deserialize(v).ok()))
    }
}

/// A string field, or nothing when it is another JSON type.
#[derive(Default)]
struct Text(Option<String>);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(Text(match v {
            serde_json::Value::String(s) => Some(s),
            _ => None,
        }))
    }
}

#[derive(Deserialize, Default)]
struct CkanResponse {
    #[serde(default)]
    result: Option<CkanResult>,
}

#[derive(Deserialize, Default)]
struct CkanResult {
    #[serde(default)]
    count: Option<serde_json::Value>,
    #[serde(default)]
    results: Capped<CkanPackage, MAX_DATASETS>,
}

#[derive(Deserialize, Default)]
struct CkanPackage {
    #[serde(default)]
    resources: Capped<CkanResource, MAX_RESOURCES>,
}

#[derive(Deserialize, Default)]
struct CkanResource {
    #[serde(default)]
    url: Text,
}

/// One page of `package_search`: its resources' URLs, then the next page
/// when the API counts more datasets than this page reached.
fn ckan(body: &[u8], url: &Url, out: &mut Collector<'_>) {
    let Ok(resp) = serde_json::from_slice::<CkanResponse>(body) else {
        return;
    };
    let Some(result) = resp.result else { return };
    let returned = result.results.0.len() as u64;
    'packages: for package in result.results.0 {
        for resource in package.resources.0 {
            if !out.open() {
                break 'packages;
            }
            if let Some(u) = resource.url.0 {
                out.push(&u, CKAN_ENTRY);
            }
        }
    }
    let count = result.count.as_ref().and_then(serde_json::Value::as_u64);
    if let (Some(count), true) = (count, returned > 0) {
        if let Some(next) = ckan_next_page(url, count) {
            out.push(next.as_str(), CatalogKind::Ckan.tag_path());
        }
    }
}

/// The next `package_search` page after `url`, if the API's `count` says
/// there is one and paging is still within [`MAX_CKAN_PAGES`]. `start` grows
/// strictly, and the page number is computed from our own URL, so no answer
/// can make paging loop or run on.
pub fn ckan_next_page(url: &Url, count: u64) -> Option<Url> {
    let mut start = 0u64;
    let mut rows = 10u64; // CKAN's default when `rows` is absent.
    for (k, v) in url.query_pairs() {
        match &*k {
            "start" => start = v.parse().ok()?,
            "rows" => rows = v.parse().ok()?,
            _ => {}
        }
    }
    if rows == 0 {
        return None;
    }
    let next = start.checked_add(rows)?;
    if next >= count || next / rows >= MAX_CKAN_PAGES {
        return None;
    }
    Some(source::ckan_page(url, rows, next))
}

#[derive(Deserialize, Default)]
struct DataJson {
    #[serde(default)]
    dataset: Capped<PodDataset, MAX_DATASETS>,
}

#[derive(Deserialize, Default)]
struct PodDataset {
    #[serde(default)]
    distribution: Capped<PodDistribution, MAX_RESOURCES>,
}

#[derive(Deserialize, Default)]
#[allow(non_snake_case)] // The field names of the Project Open Data schema.
struct PodDistribution {
    #[serde(default)]
    downloadURL: Text,
    #[serde(default)]
    accessURL: Text,
}

fn data_json(body: &[u8], out: &mut Collector<'_>) {
    let Ok(doc) = serde_json::from_slice::<DataJson>(body) else {
        return;
    };
    'datasets: for dataset in doc.dataset.0 {
        for d in dataset.distribution.0 {
            if !out.open() {
                break 'datasets;
            }
            if let Some(u) = d.downloadURL.0 {
                out.push(&u, DATA_JSON_DOWNLOAD);
            }
            if let Some(u) = d.accessURL.0 {
                out.push(&u, DATA_JSON_ACCESS);
            }
        }
    }
}

/// DCAT: the bounded RDF parser reads the document; of its links, those
/// that are objects of `dcat:downloadURL`, `dcat:accessURL` or
/// `dcat:distribution` are entries (the rest — landing pages, publishers,
/// vocabulary — are not followed from a catalog).
fn dcat(
    body: &[u8],
    url: &Url,
    content_type: &str,
    limits: &ExtractLimits,
    out: &mut Collector<'_>,
) {
    let head = &body[..body.len().min(1024)];
    // A catalog asked for at a well-known `.ttl` path is Turtle whatever a
    // generic type says.
    let syntax = RdfSyntax::of_response(content_type, url, head).unwrap_or(RdfSyntax::Turtle);
    let rdf_limits = rdf::RdfLimits {
        max_links: limits.max_links.saturating_mul(4),
        max_bytes: MAX_CATALOG_BYTES * 4,
        ..rdf::RdfLimits::default()
    };
    let follow = rdf::Follow {
        subjects: false,
        objects: true,
        predicates: false,
        types: false,
    };
    let doc = rdf::parse_document(body, url, syntax, follow, rdf_limits);
    for l in &doc.links {
        if !out.open() {
            break;
        }
        let by = |local: &str| {
            l.predicates
                .iter()
                .any(|p| p.strip_prefix(DCAT) == Some(local))
        };
        let path = if by("downloadURL") {
            DCAT_DOWNLOAD
        } else if by("accessURL") {
            DCAT_ACCESS
        } else if by("distribution") {
            DCAT_DISTRIBUTION
        } else {
            continue;
        };
        out.push(l.url.as_str(), path);
    }
    if doc.cut {
        out.cut.get_or_insert(PageCut::ParserLimit);
    }
}

#[cfg(test)]
mod tests;
