//! Turning the bytes of a page into links the crawl can use (ARCHITECTURE.md § Crawl loop, § Politeness and safety).
//!
//! Owns: streaming HTML link extraction with lol_html ([`links`]: links from
//! `a`/`area`/`iframe`/`frame`/meta refresh, their tag paths, anchor text,
//! `<base href>`, entity decoding, structured-data detection), URL
//! normalisation and the URL trap rules ([`normalize`]: length, repeated path
//! segments, session ids), the job scope rules and politeness keys
//! ([`scope`]), include and exclude URL patterns ([`patterns`]), the links of
//! sitemaps listed in robots.txt ([`sitemap`]), and the structured data of a
//! page (JSON-LD, microdata, RDFa, microformats: [`structured`]), read in the
//! same pass as its links.
//!
//! Must not touch: the network, the store, or learning. Everything here is
//! pure and synchronous: bytes and URLs in, values out; the engine decides
//! what to do with the links (scope check, seen set, classifier, frontier).

pub mod links;
pub mod normalize;
pub mod patterns;
pub mod scope;
pub mod sitemap;
pub mod structured;

pub use links::{
    extract_links, ExtractLimits, ExtractedLink, LinkExtractor, PageCut, PageLinks, PageSources,
};
pub use normalize::{
    check_limits, normalize, resolve, LinkRejected, RejectCounts, UrlRules, DEFAULT_STRIP_PARAMS,
};
pub use patterns::{check_pattern, PatternError, UrlPatterns};
pub use scope::{politeness_key, PolitenessPer, Scope, ScopeKind};
