//! Streaming link extraction with tag paths (ARCHITECTURE.md § Crawl loop).
//!
//! Owns: one pass over a page that yields its links (with tag paths, anchor
//! texts, `<base href>`, meta refresh), whether it carries structured data,
//! and feeds the structured-data [`Collector`] when a job asks for it.
//!
//! lol_html tokenises; we drive its token interface directly (a
//! [`TransformController`] on a [`TransformStream`]) rather than its
//! `HtmlRewriter`, whose `*` element handler with a boxed end-tag handler per
//! element made extraction cost 21.8 instead of 14.1 ms of CPU per MiB on
//! lilypond's documentation (docs/efficiency.md, "CPU and memory of a crawl"). The
//! controller captures every start tag, sees end tags by name, keeps the open
//! elements as lol_html's selector VM does, and asks for text only while it
//! can be anchor text (or structured data is read). lol_html gives no tree, so
//! [`State`] keeps its own stack of open elements with HTML's implied end
//! tags (a block start closes an open `p`, `li` closes `li`, …) and pops
//! what the controller reports ended. The stack is kept as one string of
//! rendered segments (`/html/body/div.x`) plus offsets, so building a link's
//! tag path costs nothing. Tag names and attribute values are read from the
//! body's bytes where lol_html's source offsets point ([`StartTag`]), not
//! through its accessors, which allocate a `String` for each. What still
//! allocates per element: lol_html's list of its attributes.
//!
//! The token interface is behind lol_html's `_integration_test` feature,
//! outside its semver promise: the version is pinned in Cargo.toml.
//!
//! Files: this one holds the constants and the public API (the limits, the
//! results, [`extract_links`] and [`LinkExtractor`]); `controller.rs` drives
//! lol_html's token stream and reads charsets; `state.rs` is `State`, the
//! open elements and the links found; `start_tag.rs` is `StartTag`, reading
//! a start tag's name and attributes, and the text and attribute helpers;
//! `tests.rs` holds the unit tests.

mod controller;
mod start_tag;
mod state;

#[cfg(test)]
mod tests;

use super::normalize::{RejectCounts, UrlRules};
use super::structured::{StructuredData, StructuredOptions};
use crate::form::FormLimits;
use crate::link::TagPath;
use encoding_rs::Encoding;
use lol_html::{
    AsciiCompatibleEncoding, SharedMemoryLimiter, TransformStream, TransformStreamSettings,
};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use url::Url;

use controller::{charset_from_content_type, Controller, NullSink};
use state::State;

// Only linked to by the docs above.
#[cfg(doc)]
use {super::structured::Collector, lol_html::TransformController, start_tag::StartTag};

/// Deepest element nesting tracked; deeper elements share their ancestor's path.
const MAX_DEPTH: usize = 256;
/// Longest tag path of an open element; longer ones are not pushed (hostile pages).
const MAX_PATH_BYTES: usize = 2048;
const MAX_TAG_BYTES: usize = 64;
const MAX_CLASS_BYTES: usize = 256;
const MAX_ID_BYTES: usize = 128;
/// Anchor text kept per link, in characters.
const MAX_ANCHOR_CHARS: usize = 200;
/// Raw (whitespace-collapsed, not yet entity-decoded) anchor text buffered per link.
const MAX_ANCHOR_RAW_BYTES: usize = 1024;
/// lol_html's own buffers (one huge tag, its element stack); past this the
/// page is cut and reported as truncated.
const PARSER_MEMORY_LIMIT: usize = 32 << 20;
/// Bytes of distinct tag paths one page may produce. Every link record keeps
/// its path, so this bounds what a hostile page (each link under its own long
/// path) adds to the learner and the store; real pages use a few tens of KiB.
const MAX_PAGE_PATH_BYTES: usize = 512 * 1024;

/// Caps on what one page may produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtractLimits {
    /// Links kept per page; the rest are dropped and [`PageLinks::cut`] set.
    pub max_links: usize,
    pub url_rules: UrlRules,
    /// Structured data read in the same pass (`None`: none is read).
    pub structured: Option<StructuredOptions>,
    /// Link sources beyond the page's own links, read in the same pass.
    pub sources: PageSources,
}

/// Sources of links a page holds beside its `href`s (issue 40), each off
/// unless a job asks for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageSources {
    /// Read catalogs a page points at: the downloads of its schema.org
    /// `Dataset`/`DataDownload` markup ([`crate::catalog::schema_org`]) and
    /// the catalogs its `<link rel="alternate">` names: DCAT by an RDF type
    /// ([`DCAT_ALTERNATE_TYPES`]), a CKAN API or a `data.json` by
    /// `application/json` and the URL's shape
    /// ([`crate::catalog::kind_of_url`]).
    pub catalogs: bool,
    /// Enumerate the page's GET forms of choices into links, within these
    /// caps ([`crate::form`]); `None`: forms are not read.
    pub forms: Option<FormLimits>,
}

/// The types of a `<link rel="alternate">` read as a DCAT catalog when
/// [`PageSources::catalogs`] is on (the RDF syntaxes portals announce).
pub const DCAT_ALTERNATE_TYPES: [&str; 3] =
    ["application/rdf+xml", "text/turtle", "application/ld+json"];

/// Statements read from a page only for its catalog markup (a job that
/// does not keep structured data): enough for a dataset page with a few
/// hundred distributions, and small next to a structured-data job's cap.
pub const CATALOG_MARKUP_STATEMENTS: usize = 5_000;
/// Bytes of those statements as N-Quads.
pub const CATALOG_MARKUP_BYTES: u64 = 4 << 20;

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits {
            max_links: 10_000,
            url_rules: UrlRules::default(),
            structured: None,
            sources: PageSources::default(),
        }
    }
}

/// One link found on a page.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtractedLink {
    /// Absolute, normalised, http(s), fragment-free.
    pub url: Url,
    /// Path of the element that carried it; identical paths of one page share one string.
    pub tag_path: TagPath,
    /// Text inside the link element (and `alt` of images in it), whitespace
    /// collapsed, entities decoded, at most 200 characters.
    pub anchor: String,
}

/// Everything extracted from one HTML page.
#[derive(Clone, Debug, PartialEq)]
pub struct PageLinks {
    /// Unique links in document order (first occurrence wins).
    pub links: Vec<ExtractedLink>,
    /// The URL relative links were resolved against (`<base href>` or the page).
    pub base: Url,
    /// The page embeds JSON-LD, microdata or RDFa.
    pub structured_data: bool,
    /// Its statements, when [`ExtractLimits::structured`] asked for them.
    pub structured: Option<StructuredData>,
    /// Set when not every link of the page is in `links`, with the reason.
    pub cut: Option<PageCut>,
    /// Links refused by URL rules, per kind.
    pub rejected: RejectCounts,
}

/// Why a page's links are not all in [`PageLinks::links`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageCut {
    /// [`ExtractLimits::max_links`] was reached; later links were dropped.
    MaxLinks,
    /// The parser gave up on the page (a tag or an element stack over its
    /// memory limit); links past that point were not seen.
    ParserLimit,
    /// The body (a sitemap, once inflated) went over its size cap.
    BodyLimit,
    /// Its distinct tag paths went over [`MAX_PAGE_PATH_BYTES`]; the links
    /// from there on were dropped.
    TagPathBytes,
}

impl PageCut {
    /// For logs.
    pub fn as_str(self) -> &'static str {
        match self {
            PageCut::MaxLinks => "links over max_links_per_page dropped",
            PageCut::ParserLimit => "the HTML parser gave up (memory limit); later links unseen",
            PageCut::BodyLimit => "the body went over its size cap; later links unseen",
            PageCut::TagPathBytes => "too many bytes of distinct tag paths; later links dropped",
        }
    }
}

/// Extracts the links of a complete body (the engine calls this on a blocking thread).
pub fn extract_links(
    body: &[u8],
    page_url: &Url,
    content_type: Option<&str>,
    limits: &ExtractLimits,
) -> PageLinks {
    // The whole body is in hand: start tags are read from it instead of
    // through lol_html's allocating accessors (see [`StartTag`]).
    let mut extractor = LinkExtractor::build(page_url, content_type, limits, Some(body));
    extractor.write(body);
    extractor.finish()
}

/// Extracts links from a body fed in chunks as they arrive.
///
/// Not `Send` (the stream and this handle share the state through `Rc`):
/// create, feed and finish it on one thread.
pub struct LinkExtractor<'s> {
    /// `None` once the parser failed: a failed stream is poisoned.
    stream: Option<TransformStream<Controller<'s>, NullSink>>,
    state: Rc<RefCell<State>>,
}

impl LinkExtractor<'static> {
    /// An extractor for the page at `page_url`, whose `Content-Type` header
    /// (if any) may name its charset.
    pub fn new(page_url: &Url, content_type: Option<&str>, limits: &ExtractLimits) -> Self {
        LinkExtractor::build(page_url, content_type, limits, None)
    }
}

impl<'s> LinkExtractor<'s> {
    /// `source`, when given, is the whole body that will be written in one
    /// call: lol_html's source offsets then index it.
    fn build(
        page_url: &Url,
        content_type: Option<&str>,
        limits: &ExtractLimits,
        source: Option<&'s [u8]>,
    ) -> Self {
        let header_encoding = content_type.and_then(charset_from_content_type);
        let query_encoding = header_encoding
            .map(<&'static Encoding>::from)
            .filter(|enc| *enc != encoding_rs::UTF_8);
        let state = Rc::new(RefCell::new(State::new(page_url, limits, query_encoding)));
        let collecting = state.borrow().collector.is_some();
        let memory_limiter = SharedMemoryLimiter::new(PARSER_MEMORY_LIMIT);
        let next_encoding: Arc<OnceLock<AsciiCompatibleEncoding>> = Arc::new(OnceLock::new());
        let controller = Controller {
            state: Rc::clone(&state),
            source,
            collecting,
            open: Vec::with_capacity(32),
            pending: None,
            memory_limiter: memory_limiter.clone(),
            // A charset in the header wins over `<meta charset>` (HTML spec).
            meta_charset: header_encoding
                .is_none()
                .then(|| Arc::clone(&next_encoding)),
        };
        let stream = TransformStream::new(TransformStreamSettings {
            transform_controller: controller,
            output_sink: NullSink,
            // lol_html's `MemorySettings` default.
            preallocated_parsing_buffer_size: 1024,
            memory_limiter,
            encoding: header_encoding.unwrap_or_else(AsciiCompatibleEncoding::utf_8),
            next_encoding,
            // We only read: markup that is ambiguous for a rewriter is fine here.
            strict: false,
            graceful_bail_out_on_memory_limit_exceeded: false,
            graceful_bail_out_on_content_handler_error: false,
        });
        LinkExtractor {
            stream: Some(stream),
            state,
        }
    }

    /// Feeds the next chunk of the body. After a parser error (memory limit)
    /// further chunks are ignored and the result is marked truncated.
    pub fn write(&mut self, chunk: &[u8]) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        if stream.write(chunk).is_err() {
            // A failed stream is poisoned: it must be dropped, never ended.
            self.stream = None;
            self.state.borrow_mut().cut_at(PageCut::ParserLimit);
        }
    }

    /// Ends the body and returns what was found.
    pub fn finish(mut self) -> PageLinks {
        if let Some(mut stream) = self.stream.take() {
            if stream.end().is_err() {
                self.state.borrow_mut().cut_at(PageCut::ParserLimit);
            }
        }
        let mut state = self.state.borrow_mut();
        state.finish_anchor();
        state.take_result()
    }
}
