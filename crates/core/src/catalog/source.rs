//! What a link's tag path says of where it came from, and the catalogs a
//! URL names by its shape: the vocabulary every part of the crawler shares
//! about catalogs and forms (the extractor marks links with it, `sb` files
//! them under actions of their own, the manifest's `found_by` reads it).
//!
//! Owns: [`CatalogKind`], the tag-path prefixes of catalog, form and
//! form-result links, [`found_by`], [`declared_label`], the well-known
//! catalog paths of an origin and the URL shapes of catalogs.
//!
//! Must not touch: link extraction or catalog parsing (it sits below both:
//! the extractor imports it, and [`super`] parses catalog bodies with the
//! extractor's collector types), the network, the store, learning.

use crate::link::TagPath;
use url::Url;

/// Rows asked per CKAN page (CKAN's own default is 10; 1 000 is its cap).
pub const CKAN_ROWS: u64 = 100;

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

    pub(crate) const ALL: [CatalogKind; 3] =
        [CatalogKind::Ckan, CatalogKind::DataJson, CatalogKind::Dcat];
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
    Some((ckan_page(url, CKAN_ROWS, 0), kind))
}

/// `url` asking CKAN's `package_search` for `rows` rows from `start`: its
/// own `rows` and `start` replaced, the rest of its query kept in order.
pub(crate) fn ckan_page(url: &Url, rows: u64, start: u64) -> Url {
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
        q.append_pair("start", &start.to_string());
    }
    u
}
