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
/// Rows asked per CKAN page (CKAN's own default is 10; 1 000 is its cap).
pub const CKAN_ROWS: u64 = 100;
/// Datasets read per catalog body; the rest are skipped unbuilt.
const MAX_DATASETS: usize = 10_000;
/// Resources (distributions) read per dataset.
const MAX_RESOURCES: usize = 100;

const DCAT: &str = "http://www.w3.org/ns/dcat#";

/// A kind of catalog forager reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CatalogKind {
    /// The CKAN Action API's `package_search` (JSON).
    Ckan,
    /// Project Open Data `data.json`.
    DataJson,
    /// A DCAT catalog in an RDF syntax (Turtle, RDF/XML, JSON-LD, …).
    Dcat,
}

impl CatalogKind {
    /// Its name in tag paths, manifests and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            CatalogKind::Ckan => "ckan",
            CatalogKind::DataJson => "data.json",
            CatalogKind::Dcat => "dcat",
        }
    }

    /// The tag path of a link to read as a catalog of this kind.
    pub fn tag_path(self) -> &'static str {
        match self {
            CatalogKind::Ckan => "[catalog ckan]",
            CatalogKind::DataJson => "[catalog data.json]",
            CatalogKind::Dcat => "[catalog dcat]",
        }
    }

    const ALL: [CatalogKind; 3] = [CatalogKind::Ckan, CatalogKind::DataJson, CatalogKind::Dcat];
}

/// Tag path of every catalog link and entry starts with this.
const CATALOG_PREFIX: &str = "[catalog ";
/// Tag path of a download a page's schema.org markup names
/// ([`schema_org`]).
const SCHEMA_ORG_PREFIX: &str = "[catalog schema.org]";
/// Tag path of a GET form's submission starts with this (`crate::form`).
pub const FORM_PREFIX: &str = "[form]";

/// Tag path of a link found on a page a form's submission led to starts
/// with this, before the link's own tag path ([`form_result_tag_path`]).
pub const FORM_RESULT_PREFIX: &str = "[form result] ";

/// Tag path of a CKAN resource URL.
pub const CKAN_ENTRY: &str = "[catalog ckan] results resources url";
/// Tag paths of a `data.json` distribution's URLs.
pub const DATA_JSON_DOWNLOAD: &str = "[catalog data.json] distribution downloadURL";
pub const DATA_JSON_ACCESS: &str = "[catalog data.json] distribution accessURL";
/// Tag paths of DCAT entries, by predicate.
pub const DCAT_DOWNLOAD: &str = "[catalog dcat] downloadURL";
pub const DCAT_ACCESS: &str = "[catalog dcat] accessURL";
pub const DCAT_DISTRIBUTION: &str = "[catalog dcat] distribution";

/// The catalog a link is, when it is one to read as such.
pub fn catalog_of(tag_path: &TagPath) -> Option<CatalogKind> {
    CatalogKind::ALL
        .into_iter()
        .find(|k| k.tag_path() == tag_path.as_str())
}

/// Whether a link came from a catalog (a catalog page or one of its entries).
pub fn is_catalog_link(tag_path: &str) -> bool {
    tag_path.starts_with(CATALOG_PREFIX)
}

/// How a file was found, from the tag path of the link that led to it (its
/// manifest row's `found_by`): `seed`, `page link`, `sitemap`, `rdf link`,
/// `rendered` (a link only the rendered page held), `catalog:KIND` (`ckan`,
/// `data.json`, `dcat`, `schema.org`) or `form`.
pub fn found_by(tag_path: &str) -> &'static str {
    if tag_path == "/" {
        return "seed";
    }
    if tag_path.starts_with(SCHEMA_ORG_PREFIX) {
        return "catalog:schema.org";
    }
    if tag_path.starts_with(FORM_PREFIX) || tag_path.starts_with(FORM_RESULT_PREFIX) {
        return "form";
    }
    if let Some(rest) = tag_path.strip_prefix(CATALOG_PREFIX) {
        for kind in CatalogKind::ALL {
            if rest.starts_with(kind.as_str()) && rest[kind.as_str().len()..].starts_with(']') {
                return match kind {
                    CatalogKind::Ckan => "catalog:ckan",
                    CatalogKind::DataJson => "catalog:data.json",
                    CatalogKind::Dcat => "catalog:dcat",
                };
            }
        }
        return "catalog";
    }
    if tag_path.starts_with(crate::render::RENDERED_PREFIX) {
        return "rendered";
    }
    if tag_path.starts_with("[sitemap]") {
        return "sitemap";
    }
    if tag_path.starts_with("rdf:") {
        return "rdf link";
    }
    "page link"
}

/// What a link's source declares it to be, for a learner that cannot tell
/// yet (`sb`'s URL classifier before its warm-up ends, when it would spend
/// a HEAD to ask): a catalog's entry or a page's schema.org download is a
/// file the catalog says is one (`Target`: fetched, and the answer's type
/// decides and teaches the classifier); a form's submission is a page of
/// results (`Html`: queued under the form's action, so the bandit decides
/// whether submitting pays). `None`: the source declares nothing (page
/// links, sitemap entries), and the HEAD is asked. A declaration that lies
/// costs the GET a HEAD would have preceded: a page is read as a page, a
/// file of another type is not read past its headers.
pub fn declared_label(tag_path: &str) -> Option<crate::mime::Label> {
    use crate::mime::Label;
    if tag_path.starts_with(FORM_PREFIX) {
        return Some(Label::Html);
    }
    let is_entry = tag_path.starts_with(CATALOG_PREFIX)
        && !CatalogKind::ALL.iter().any(|k| k.tag_path() == tag_path);
    is_entry.then_some(Label::Target)
}

/// The tag path a link found on a page takes when the page was reached
/// through a form, so that its `found_by` follows the path to it: `None`
/// keeps the link's own.
///
/// The rule (docs/outputs.md, `found_by`): a link found on a page whose own
/// link was a form's submission (`[form] …`) is a *form result*
/// (`[form result] ` + its tag path), and so is a link found on a form
/// result page that stays on the same path as that page (the result list's
/// next pages, `/tables?…&page=2`). Nothing else inherits: a form result
/// page's link home or to another part of the site is a page link again,
/// so a form never claims the site around it. A link that already names a
/// source of its own (`[catalog …]`, `[form]`, `[rendered] `, `[sitemap]`)
/// keeps it. `sb` files form results under actions of their own, so it
/// learns whether what forms lead to pays, apart from the same-looking
/// links of ordinary pages.
pub fn form_result_tag_path(
    page_tag_path: &str,
    page_url: &Url,
    link_tag_path: &str,
    link_url: &Url,
) -> Option<TagPath> {
    if link_tag_path.starts_with('[') {
        return None;
    }
    let inherits = page_tag_path.starts_with(FORM_PREFIX)
        || (page_tag_path.starts_with(FORM_RESULT_PREFIX)
            && link_url.path() == page_url.path()
            && link_url.host_str() == page_url.host_str());
    inherits.then(|| TagPath::new(format!("{FORM_RESULT_PREFIX}{link_tag_path}")))
}

/// The catalogs asked for at every origin a catalog job reaches: CKAN's
/// `package_search` (first page), Project Open Data's `/data.json`, and a
/// DCAT catalog at `/catalog.ttl`. Three requests per origin at most; a
/// site without them answers three 404s, and the bandit learns the rest.
pub fn well_known(origin: &Url) -> Vec<(Url, CatalogKind)> {
    let paths = [
        (
            format!("/api/3/action/package_search?rows={CKAN_ROWS}&start=0"),
            CatalogKind::Ckan,
        ),
        ("/data.json".to_string(), CatalogKind::DataJson),
        ("/catalog.ttl".to_string(), CatalogKind::Dcat),
    ];
    paths
        .into_iter()
        .filter_map(|(p, k)| origin.join(&p).ok().map(|u| (u, k)))
        .collect()
}

/// The catalog a URL names by its shape, for links that arrive without a
/// catalog's tag path: a sitemap's entry, a robots.txt `Sitemap:` line, a
/// `<link rel="alternate">` of a JSON type. Recognised: CKAN's
/// `…/api/3/action/package_search` (or `…/api/action/package_search`, at
/// any mount point), a file named `data.json`, and an RDF file whose name
/// says it is a catalog (`catalog`, `dcat`; an RDF file that says nothing
/// may be a target of its own and stays one). Shape only: a URL that lies
/// costs one request read under the catalog's caps, which yields no links.
pub fn kind_of_url(url: &Url) -> Option<CatalogKind> {
    let path = url.path();
    let last = path.rsplit('/').next().unwrap_or("");
    if last == "package_search"
        && (path.ends_with("/api/3/action/package_search")
            || path.ends_with("/api/action/package_search"))
    {
        return Some(CatalogKind::Ckan);
    }
    if last.eq_ignore_ascii_case("data.json") {
        return Some(CatalogKind::DataJson);
    }
    let (stem, ext) = last.rsplit_once('.')?;
    let rdf = crate::mime::RDF_EXTENSIONS
        .iter()
        .any(|e| ext.eq_ignore_ascii_case(e));
    let stem = stem.to_ascii_lowercase();
    (rdf && (stem.contains("catalog") || stem.contains("dcat"))).then_some(CatalogKind::Dcat)
}

/// A catalog link found by its URL's shape ([`kind_of_url`]): the URL to
/// ask and its tag path. A CKAN API named without `rows` is asked for
/// [`CKAN_ROWS`] rows a page from the start (CKAN's default of 10 would
/// cost ten times the pages), the rest of its query kept.
pub fn listed_catalog(url: &Url) -> Option<(Url, CatalogKind)> {
    let kind = kind_of_url(url)?;
    if kind != CatalogKind::Ckan || url.query_pairs().any(|(k, _)| k == "rows") {
        return Some((url.clone(), kind));
    }
    let mut u = url.clone();
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "start")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    {
        let mut q = u.query_pairs_mut();
        q.clear();
        for (k, v) in &kept {
            q.append_pair(k, v);
        }
        q.append_pair("rows", &CKAN_ROWS.to_string());
        q.append_pair("start", "0");
    }
    Some((u, kind))
}

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
    let mut u = url.clone();
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "start" && k != "rows")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    {
        let mut q = u.query_pairs_mut();
        q.clear();
        for (k, v) in &kept {
            q.append_pair(k, v);
        }
        q.append_pair("rows", &rows.to_string());
        q.append_pair("start", &next.to_string());
    }
    Some(u)
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
