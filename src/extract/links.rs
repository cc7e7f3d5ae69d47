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
//! lilypond's documentation (README § Efficiency). The
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

use super::normalize::{normalize, resolve_with_encoding, LinkRejected, RejectCounts, UrlRules};
use super::structured::{Collector, FrameId, StructuredData, StructuredOptions};
use crate::link::TagPath;
use encoding_rs::Encoding;
use foldhash::fast::RandomState;
use lol_html::errors::RewritingError;
use lol_html::html_content::{DocumentEnd, TextChunk, TextType};
use lol_html::StartTag as LolStartTag;
use lol_html::{
    AsciiCompatibleEncoding, LocalName, Namespace, OutputSink, SharedMemoryLimiter,
    StartTagHandlingResult, Tag, Token, TokenCaptureFlags, TransformController, TransformStream,
    TransformStreamSettings,
};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use url::Url;

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
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits {
            max_links: 10_000,
            url_rules: UrlRules::default(),
            structured: None,
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

/// Charged to the parser's memory limiter per open element, in place of
/// what lol_html's selector VM charged for its own stack item (a name, two
/// vectors, counters and a handler descriptor: about this size by our count
/// of its fields, not measured), so a page nesting some 250 000 unclosed
/// elements is still cut as [`PageCut::ParserLimit`].
const OPEN_ELEMENT_BYTES: usize = 128;

/// One element open as lol_html's selector VM would track it, and who wants
/// to hear that it ended.
struct OpenElement {
    name: LocalName<'static>,
    /// [`State`]'s frame, when it pushed one.
    frame: Option<u64>,
    /// The structured-data collector's frame, when it pushed one.
    collector: Option<FrameId>,
}

/// The start tag reported to [`Controller::handle_start_tag`], waiting for
/// its token.
struct PendingStart {
    name: LocalName<'static>,
    ns: Namespace,
}

/// Drives lol_html's token stream directly (its `TransformController`).
///
/// Every start tag is captured; end tags are seen by name only, and the open
/// elements are kept here exactly as lol_html's selector VM keeps them
/// (`selectors_vm/stack.rs`): HTML void elements and self-closing foreign
/// ones are never pushed; an end tag pops the nearest open element of its
/// name and everything above it, innermost first, and does nothing when none
/// is open. The rewriter did that for us with a `*` handler and a boxed
/// end-tag handler per element: extraction on lilypond's documentation went
/// from 21.8 to 14.1 ms of CPU per MiB without them (README § Efficiency).
struct Controller<'s> {
    state: Rc<RefCell<State>>,
    source: Option<&'s [u8]>,
    /// Structured data is read: every text chunk is wanted.
    collecting: bool,
    open: Vec<OpenElement>,
    pending: Option<PendingStart>,
    memory_limiter: SharedMemoryLimiter,
    /// Where a `<meta charset>` sets the page's encoding; `None` when the
    /// header named one.
    meta_charset: Option<Arc<OnceLock<AsciiCompatibleEncoding>>>,
}

impl Controller<'_> {
    /// Start tags always; text while it may be anchor text (or structured
    /// data is read). `a_start`: the tag being reported is an `a`.
    fn flags(&self, a_start: bool) -> TokenCaptureFlags {
        let anchor_open = self.state.try_borrow().is_ok_and(|s| s.anchor.is_some());
        if self.collecting || a_start || anchor_open {
            TokenCaptureFlags::NEXT_START_TAG | TokenCaptureFlags::TEXT
        } else {
            TokenCaptureFlags::NEXT_START_TAG
        }
    }

    fn on_start_tag(&mut self, token: &LolStartTag<'_>) -> Result<(), RewritingError> {
        let Some(PendingStart { name: local, ns }) = self.pending.take() else {
            // lol_html reports every start tag before its token.
            debug_assert!(false, "start tag token without handle_start_tag");
            return Ok(());
        };
        let has_end = if ns == Namespace::Html {
            !is_void_element(&local)
        } else {
            !token.self_closing()
        };
        if has_end {
            // Charged before anyone sees the element, as the VM's push was.
            self.memory_limiter
                .increase_usage(OPEN_ELEMENT_BYTES)
                .map_err(RewritingError::MemoryLimitExceeded)?;
        }
        let tag = StartTag {
            el: token,
            source: self.source,
        };
        let name = tag.name();
        let Ok(mut state) = self.state.try_borrow_mut() else {
            // Only `LinkExtractor` borrows it, never while the stream runs.
            debug_assert!(false, "state borrowed during a write");
            return Ok(());
        };
        let frame = state.on_element(&tag, &name, has_end);
        let collector = match state.collector.as_mut() {
            Some(c) if tag.may_carry_collected_data(&name) => c.on_element(token, &name, has_end),
            _ => None,
        };
        drop(state);
        if let Some(encoding) = &self.meta_charset {
            if &*name == "meta" && encoding.get().is_none() {
                if let Some(charset) = meta_charset(token) {
                    let _ = encoding.set(charset);
                }
            }
        }
        if has_end {
            self.open.push(OpenElement {
                name: local,
                frame,
                collector,
            });
        }
        Ok(())
    }

    /// Pops the nearest open element named `name` and those above it,
    /// telling the state and the collector innermost first (as lol_html ran
    /// end-tag handlers).
    fn on_end_tag(&mut self, name: &LocalName<'_>) {
        let Some(index) = self.open.iter().rposition(|e| e.name == *name) else {
            return;
        };
        let popped = self.open.len() - index;
        self.memory_limiter
            .decrease_usage(popped * OPEN_ELEMENT_BYTES);
        let Ok(mut state) = self.state.try_borrow_mut() else {
            debug_assert!(false, "state borrowed during a write");
            self.open.truncate(index);
            return;
        };
        for element in self.open.drain(index..).rev() {
            if let Some(id) = element.frame {
                state.on_end(id);
            }
            if let (Some(id), Some(c)) = (element.collector, state.collector.as_mut()) {
                c.on_end(id);
            }
        }
    }
}

impl TransformController for Controller<'_> {
    fn initial_capture_flags(&self) -> TokenCaptureFlags {
        self.flags(false)
    }

    fn handle_start_tag(
        &mut self,
        name: LocalName<'_>,
        ns: Namespace,
    ) -> StartTagHandlingResult<Self> {
        let a_start = name == Tag::A;
        self.pending = Some(PendingStart {
            name: name.into_owned(),
            ns,
        });
        Ok(self.flags(a_start))
    }

    fn handle_end_tag(&mut self, name: LocalName<'_>) -> TokenCaptureFlags {
        self.on_end_tag(&name);
        self.flags(false)
    }

    fn handle_token(&mut self, token: &mut Token<'_>) -> Result<(), RewritingError> {
        match token {
            Token::StartTag(tag) => self.on_start_tag(tag),
            Token::TextChunk(chunk) => {
                if let Ok(mut state) = self.state.try_borrow_mut() {
                    state.on_text(chunk);
                    if let Some(c) = state.collector.as_mut().filter(|c| c.wants_text()) {
                        c.on_text(chunk.as_str());
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn handle_end(&mut self, _end: &mut DocumentEnd<'_>) -> Result<(), RewritingError> {
        Ok(())
    }

    fn should_emit_content(&self) -> bool {
        // We only read: no output at all.
        false
    }
}

/// HTML's void elements, as lol_html's selector VM lists them: never open.
fn is_void_element(name: &LocalName<'_>) -> bool {
    [
        Tag::Area,
        Tag::Base,
        Tag::Basefont,
        Tag::Bgsound,
        Tag::Br,
        Tag::Col,
        Tag::Embed,
        Tag::Hr,
        Tag::Img,
        Tag::Input,
        Tag::Keygen,
        Tag::Link,
        Tag::Meta,
        Tag::Param,
        Tag::Source,
        Tag::Track,
        Tag::Wbr,
    ]
    .into_iter()
    .any(|tag| *name == tag)
}

/// The encoding a `<meta charset>` or `<meta http-equiv=Content-Type
/// content=...>` names, read as lol_html's rewriter did
/// (`with_adjust_charset_on_meta_tag`).
fn meta_charset(token: &LolStartTag<'_>) -> Option<AsciiCompatibleEncoding> {
    if let Some(charset) = token
        .get_attribute("charset")
        .and_then(|cs| encoding_for_label(&cs))
    {
        return Some(charset);
    }
    token
        .get_attribute("http-equiv")
        .filter(|v| v.eq_ignore_ascii_case("Content-Type"))?;
    let mime: mime::Mime = token.get_attribute("content")?.parse().ok()?;
    encoding_for_label(mime.get_param("charset")?.as_str())
}

/// The encoding a charset label names, if lol_html can decode it (an
/// ASCII-compatible one).
fn encoding_for_label(label: &str) -> Option<AsciiCompatibleEncoding> {
    AsciiCompatibleEncoding::new(Encoding::for_label_no_replacement(label.as_bytes())?)
}

/// We only read; lol_html's output is not needed.
struct NullSink;

impl OutputSink for NullSink {
    fn handle_chunk(&mut self, _chunk: &[u8]) {}
}

/// The charset parameter of a Content-Type, if lol_html can decode it.
fn charset_from_content_type(content_type: &str) -> Option<AsciiCompatibleEncoding> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        encoding_for_label(value.trim().trim_matches(|c| c == '"' || c == '\''))
    })
}

/// The element kinds the implied-end-tag rules care about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    P,
    Li,
    /// `dd` and `dt` close each other.
    DdDt,
    Tr,
    /// `td` and `th`.
    Cell,
    /// `tbody`, `thead`, `tfoot`.
    TableSection,
    Table,
    Option,
    OptGroup,
    A,
    /// `h1`–`h6`.
    Heading,
    Button,
    Html,
    Body,
    /// `applet`, `caption`, `marquee`, `object`, `template`: they bound the
    /// HTML spec's "default scope", so a `p` or `a` outside them stays open.
    ScopeBoundary,
    Other,
}

#[derive(Clone, Copy, Debug)]
struct TagInfo {
    kind: Kind,
    /// A start tag of this element closes an open `p` (in button scope).
    closes_p: bool,
    /// HTML's "special" category minus `address`, `div`, `p`: stops the search
    /// for an `li`/`dd`/`dt` to close.
    stops_list_search: bool,
}

/// Kind and flags of an element by its (lower-case) tag name. Dispatches on
/// the length first: this runs for every element of every page.
fn classify(name: &str) -> TagInfo {
    const fn info(kind: Kind, closes_p: bool, stops_list_search: bool) -> TagInfo {
        TagInfo {
            kind,
            closes_p,
            stops_list_search,
        }
    }
    const OTHER: TagInfo = info(Kind::Other, false, false);
    // Block containers: close `p`, stop the list-item search.
    const BLOCK: TagInfo = info(Kind::Other, true, true);
    // Other "special" elements: stop the list-item search only.
    const SPECIAL: TagInfo = info(Kind::Other, false, true);
    const HEADING: TagInfo = info(Kind::Heading, true, true);
    const BOUNDARY: TagInfo = info(Kind::ScopeBoundary, false, true);
    match name.len() {
        1 => match name {
            "p" => info(Kind::P, true, false),
            "a" => info(Kind::A, false, false),
            _ => OTHER,
        },
        2 => match name {
            "li" => info(Kind::Li, true, true),
            "dd" | "dt" => info(Kind::DdDt, true, true),
            "tr" => info(Kind::Tr, false, true),
            "td" | "th" => info(Kind::Cell, false, true),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => HEADING,
            "ul" | "ol" | "dl" | "hr" => BLOCK,
            "br" => SPECIAL,
            _ => OTHER,
        },
        3 => match name {
            "div" => info(Kind::Other, true, false),
            "nav" | "dir" | "pre" | "xmp" => BLOCK,
            "img" | "col" | "wbr" => SPECIAL,
            _ => OTHER,
        },
        4 => match name {
            "html" => info(Kind::Html, false, true),
            "body" => info(Kind::Body, false, true),
            "main" | "menu" | "form" => BLOCK,
            "area" | "base" | "head" | "link" | "meta" => SPECIAL,
            _ => OTHER,
        },
        5 => match name {
            "table" => info(Kind::Table, true, true),
            "tbody" | "thead" | "tfoot" => info(Kind::TableSection, false, true),
            "aside" => BLOCK,
            "embed" | "frame" | "input" | "param" | "style" | "title" | "track" => SPECIAL,
            _ => OTHER,
        },
        6 => match name {
            "option" => info(Kind::Option, false, false),
            "button" => info(Kind::Button, false, true),
            "applet" | "object" => BOUNDARY,
            "center" | "dialog" | "figure" | "footer" | "header" | "hgroup" | "search" => BLOCK,
            "iframe" | "keygen" | "script" | "select" | "source" => SPECIAL,
            _ => OTHER,
        },
        7 => match name {
            "address" => info(Kind::Other, true, false),
            "caption" | "marquee" => BOUNDARY,
            "article" | "details" | "listing" | "section" | "summary" => BLOCK,
            "bgsound" | "noembed" => SPECIAL,
            _ => OTHER,
        },
        8 => match name {
            "optgroup" => info(Kind::OptGroup, false, false),
            "template" => BOUNDARY,
            "fieldset" => BLOCK,
            "basefont" | "colgroup" | "frameset" | "noframes" | "noscript" | "textarea" => SPECIAL,
            _ => OTHER,
        },
        9 => match name {
            "plaintext" => BLOCK,
            _ => OTHER,
        },
        10 => match name {
            "blockquote" | "figcaption" => BLOCK,
            _ => OTHER,
        },
        _ => OTHER,
    }
}

/// One open element.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// Identifies the element in its end-tag callback.
    id: u64,
    kind: Kind,
    stops_list_search: bool,
    /// Length of the path string before this element's segment.
    path_len: usize,
}

/// The link whose anchor text is being collected.
#[derive(Clone, Copy, Debug)]
struct OpenAnchor {
    frame_id: u64,
    link: usize,
}

/// Exact set of the URLs already kept on this page, without a second copy of
/// each URL string: a 64-bit hash points at the link holding it; the rare
/// different URL with the same hash goes to `collided`. Hashes are seeded per
/// page, so a hostile page cannot plan collisions.
#[derive(Default)]
struct SeenUrls {
    hasher: RandomState,
    by_hash: HashMap<u64, usize, RandomState>,
    collided: HashSet<String, RandomState>,
}

impl SeenUrls {
    fn contains(&self, url: &str, links: &[ExtractedLink]) -> bool {
        match self.by_hash.get(&self.hasher.hash_one(url)) {
            None => false,
            Some(&i) => {
                links.get(i).is_some_and(|l| l.url.as_str() == url) || self.collided.contains(url)
            }
        }
    }

    fn insert(&mut self, url: &str, index: usize) {
        match self.by_hash.entry(self.hasher.hash_one(url)) {
            Entry::Occupied(_) => {
                self.collided.insert(url.to_owned());
            }
            Entry::Vacant(slot) => {
                slot.insert(index);
            }
        }
    }
}

struct State {
    rules: UrlRules,
    max_links: usize,
    /// Encoding for non-ASCII query characters (legacy-encoded pages only).
    query_encoding: Option<&'static Encoding>,
    /// The page URL normalised: links equal to it are skipped.
    page: Url,
    base: Url,
    /// A `<base href>` was seen (only the first counts).
    base_seen: bool,
    /// A link was resolved: a later `<base>` must not change earlier links' base.
    base_frozen: bool,

    stack: Vec<Frame>,
    /// Concatenated segments of the open elements, e.g. `/html/body/div.x`.
    path: String,
    next_id: u64,

    links: Vec<ExtractedLink>,
    seen: SeenUrls,
    paths: HashSet<Arc<str>, RandomState>,
    /// Bytes of the strings in `paths`.
    path_bytes: usize,
    last_path: Option<Arc<str>>,
    /// What every `#…` link of the page resolves to (see [`State::resolve`]).
    fragment_target: Option<Result<Url, LinkRejected>>,
    anchor: Option<OpenAnchor>,
    anchor_raw: String,
    anchor_space_pending: bool,

    structured_data: bool,
    collector: Option<Collector>,
    cut: Option<PageCut>,
    rejected: RejectCounts,
}

impl State {
    fn new(
        page_url: &Url,
        limits: &ExtractLimits,
        query_encoding: Option<&'static Encoding>,
    ) -> Self {
        let mut page = page_url.clone();
        normalize(&mut page, &limits.url_rules);
        State {
            rules: limits.url_rules.clone(),
            max_links: limits.max_links,
            query_encoding,
            base: page_url.clone(),
            page,
            base_seen: false,
            base_frozen: false,
            stack: Vec::with_capacity(32),
            path: String::with_capacity(256),
            next_id: 0,
            links: Vec::new(),
            seen: SeenUrls::default(),
            paths: HashSet::default(),
            path_bytes: 0,
            last_path: None,
            fragment_target: None,
            anchor: None,
            anchor_raw: String::new(),
            anchor_space_pending: false,
            structured_data: false,
            collector: limits
                .structured
                .as_ref()
                .filter(|o| o.any())
                .map(|o| Collector::new(page_url, o)),
            cut: None,
            rejected: RejectCounts::default(),
        }
    }

    /// The first reason a page was cut is the one reported.
    fn cut_at(&mut self, why: PageCut) {
        self.cut.get_or_insert(why);
    }

    fn take_result(&mut self) -> PageLinks {
        PageLinks {
            links: std::mem::take(&mut self.links),
            base: self.base.clone(),
            structured_data: self.structured_data,
            structured: self.collector.take().map(Collector::finish),
            cut: self.cut,
            rejected: self.rejected,
        }
    }

    /// A start tag `name` (lower case); `has_end`: lol_html will report its
    /// end (it is not void). Returns the frame id to pass to
    /// [`State::on_end`] when it ends, if one was pushed.
    fn on_element(&mut self, tag: &StartTag<'_, '_, '_>, name: &str, has_end: bool) -> Option<u64> {
        let attrs = tag.scan(name);
        // Only elements that may carry it are looked at closely.
        if !self.structured_data && attrs.structured_hint {
            self.structured_data = has_structured_data(tag.el, name);
        }
        let info = classify(name);
        // A second `<html>`/`<body>` only merges attributes in browsers.
        match info.kind {
            Kind::Html if !self.stack.is_empty() => return None,
            Kind::Body if self.stack.iter().any(|f| f.kind == Kind::Body) => return None,
            _ => {}
        }
        self.close_implied(info);

        let path_len = self.path.len();
        self.push_segment(name, &attrs);

        let mut new_link = None;
        match name {
            "a" => {
                if let Some(href) = &attrs.href {
                    new_link = self.add_link(href);
                }
            }
            // An image-map area has no content: its `alt` is its anchor text.
            "area" => {
                if let Some(href) = &attrs.href {
                    if let Some(index) = self.add_link(href) {
                        if let (Some(alt), Some(link)) =
                            (tag.attr("alt"), self.links.get_mut(index))
                        {
                            link.anchor = anchor_text(&alt);
                        }
                    }
                }
            }
            "iframe" | "frame" => {
                if let Some(src) = tag.attr("src") {
                    new_link = self.add_link(&src);
                }
            }
            "base" => self.on_base(tag),
            "meta" => {
                let is_refresh = tag
                    .attr("http-equiv")
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("refresh"));
                if is_refresh {
                    if let Some(content) = tag.attr("content") {
                        if let Some(target) = refresh_target(&content) {
                            self.add_link(target);
                        }
                    }
                }
            }
            "img" if self.anchor.is_some() => {
                if let Some(alt) = tag.attr("alt") {
                    self.push_anchor_text(" ");
                    self.push_anchor_text(&alt);
                    self.push_anchor_text(" ");
                }
            }
            _ => {}
        }

        let frame_id =
            if has_end && self.stack.len() < MAX_DEPTH && self.path.len() <= MAX_PATH_BYTES {
                Some(self.push_frame(info, path_len))
            } else {
                None
            };
        if frame_id.is_none() {
            self.path.truncate(path_len);
        }

        if info.kind == Kind::A {
            // An `a` inside an `a` ends the first one's text in browsers.
            self.finish_anchor();
            if let (Some(link), Some(frame_id)) = (new_link, frame_id) {
                self.anchor = Some(OpenAnchor { frame_id, link });
                self.anchor_raw.clear();
                self.anchor_space_pending = false;
            }
        }
        frame_id
    }

    /// Pushes the element as open; void elements are never pushed (the
    /// caller knows), so every frame gets its [`State::on_end`].
    fn push_frame(&mut self, info: TagInfo, path_len: usize) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.stack.push(Frame {
            id,
            kind: info.kind,
            stops_list_search: info.stops_list_search,
            path_len,
        });
        id
    }

    /// The element `id` ended (or an ancestor did): pop it and everything above.
    /// Already closed by an implied end tag: nothing to do.
    fn on_end(&mut self, id: u64) {
        if let Some(i) = self.stack.iter().rposition(|f| f.id == id) {
            self.pop_to(i);
        }
    }

    fn pop_to(&mut self, index: usize) {
        let Some(frame) = self.stack.get(index).copied() else {
            return;
        };
        if let Some(anchor) = self.anchor {
            if self.stack[index..].iter().any(|f| f.id == anchor.frame_id) {
                self.finish_anchor();
            }
        }
        self.stack.truncate(index);
        self.path.truncate(frame.path_len);
    }

    /// Index of the nearest open element matching `wanted`, searching down
    /// from the current node and giving up at the first `stop` element.
    fn find_open(
        &self,
        wanted: impl Fn(&Frame) -> bool,
        stop: impl Fn(&Frame) -> bool,
    ) -> Option<usize> {
        for (i, frame) in self.stack.iter().enumerate().rev() {
            if wanted(frame) {
                return Some(i);
            }
            if stop(frame) {
                return None;
            }
        }
        None
    }

    fn close_matching(&mut self, wanted: impl Fn(&Frame) -> bool, stop: impl Fn(&Frame) -> bool) {
        if let Some(i) = self.find_open(wanted, stop) {
            self.pop_to(i);
        }
    }

    /// Closes every element above the nearest open one matching `context`.
    fn close_above(&mut self, context: impl Fn(&Frame) -> bool) {
        if let Some(i) = self.find_open(context, |f| f.kind == Kind::Html) {
            self.pop_to(i + 1);
        }
    }

    fn pop_current_if(&mut self, kind: Kind) {
        if self.stack.last().is_some_and(|f| f.kind == kind) {
            self.pop_to(self.stack.len() - 1);
        }
    }

    /// HTML's implied end tags for a start tag of `info` (the "in body" and
    /// table insertion modes, simplified to what changes a tag path).
    fn close_implied(&mut self, info: TagInfo) {
        match info.kind {
            Kind::Li => self.close_matching(|f| f.kind == Kind::Li, |f| f.stops_list_search),
            Kind::DdDt => self.close_matching(|f| f.kind == Kind::DdDt, |f| f.stops_list_search),
            _ => {}
        }
        if info.closes_p {
            self.close_matching(
                |f| f.kind == Kind::P,
                |f| {
                    matches!(
                        f.kind,
                        Kind::Html | Kind::Table | Kind::Cell | Kind::Button | Kind::ScopeBoundary
                    )
                },
            );
        }
        match info.kind {
            Kind::Heading => self.pop_current_if(Kind::Heading),
            // Row, cell and section starts close whatever is open inside the
            // nearest table context ("clear the stack back to a table ... context").
            Kind::Tr => self.close_above(|f| matches!(f.kind, Kind::Table | Kind::TableSection)),
            Kind::Cell => {
                self.close_above(|f| matches!(f.kind, Kind::Table | Kind::TableSection | Kind::Tr))
            }
            Kind::TableSection => self.close_above(|f| f.kind == Kind::Table),
            Kind::Option => self.pop_current_if(Kind::Option),
            Kind::OptGroup => {
                self.pop_current_if(Kind::Option);
                self.pop_current_if(Kind::OptGroup);
            }
            Kind::A => self.close_matching(
                |f| f.kind == Kind::A,
                |f| matches!(f.kind, Kind::Cell | Kind::ScopeBoundary | Kind::Html),
            ),
            Kind::Button => self.close_matching(
                |f| f.kind == Kind::Button,
                |f| {
                    matches!(
                        f.kind,
                        Kind::Html | Kind::Table | Kind::Cell | Kind::ScopeBoundary
                    )
                },
            ),
            _ => {}
        }
    }

    /// Appends `/tag.class1 class2#id` for an element named `name` to the path.
    fn push_segment(&mut self, name: &str, attrs: &ScannedAttributes<'_>) {
        self.path.push('/');
        push_capped(&mut self.path, name, MAX_TAG_BYTES);
        if let Some(class) = &attrs.class {
            let class = decode_attribute(class);
            let mut used = 0;
            for token in class.split(is_html_whitespace).filter(|t| !t.is_empty()) {
                if used >= MAX_CLASS_BYTES {
                    break;
                }
                self.path.push(if used == 0 { '.' } else { ' ' });
                used += 1;
                used += push_capped(&mut self.path, token, MAX_CLASS_BYTES - used);
            }
        }
        if let Some(id) = &attrs.id {
            if !id.is_empty() {
                self.path.push('#');
                push_capped(&mut self.path, &decode_attribute(id), MAX_ID_BYTES);
            }
        }
    }

    /// Resolves an attribute value and records it as a link of the current
    /// path; returns its index when it is new on this page.
    fn add_link(&mut self, raw: &str) -> Option<usize> {
        if self.cut.is_some() {
            return None;
        }
        self.base_frozen = true;
        let raw = decode_attribute(raw);
        let url = match self.resolve(&raw) {
            Ok(Some(url)) => url,
            Ok(None) => return None,
            Err(kind) => {
                self.rejected.add(kind);
                return None;
            }
        };
        if url.as_str() == self.page.as_str() || self.seen.contains(url.as_str(), &self.links) {
            return None;
        }
        if self.links.len() >= self.max_links {
            self.cut_at(PageCut::MaxLinks);
            return None;
        }
        let Some(tag_path) = self.intern_path() else {
            self.cut_at(PageCut::TagPathBytes);
            return None;
        };
        let index = self.links.len();
        self.seen.insert(url.as_str(), index);
        self.links.push(ExtractedLink {
            url,
            tag_path,
            anchor: String::new(),
        });
        Some(index)
    }

    /// [`resolve_with_encoding`] against the base, with `#…` links (headings'
    /// permalinks, tables of contents: 21 % of the `href`s of sklearn's
    /// documentation, 19 % of Twisted's) answered from one resolution per
    /// page: they all name the base itself once normalisation drops the
    /// fragment. `None` when that base is the page, never a link of its own.
    fn resolve(&mut self, raw: &str) -> Result<Option<Url>, LinkRejected> {
        let trimmed = raw.trim_matches(is_html_whitespace);
        if !trimmed.starts_with('#') {
            return resolve_with_encoding(&self.base, raw, &self.rules, self.query_encoding)
                .map(Some);
        }
        // The same length check as the full resolution, on the raw value.
        if trimmed.len() > self.rules.max_len.saturating_mul(4) {
            return Err(LinkRejected::TooLong);
        }
        let (base, rules, encoding) = (&self.base, &self.rules, self.query_encoding);
        let target = self
            .fragment_target
            .get_or_insert_with(|| resolve_with_encoding(base, "#", rules, encoding));
        match target {
            Ok(url) if url.as_str() == self.page.as_str() => Ok(None),
            Ok(url) => Ok(Some(url.clone())),
            Err(kind) => Err(*kind),
        }
    }

    /// The current path, shared with the page's links under the same one;
    /// `None` when it is new and the page's path bytes are spent.
    fn intern_path(&mut self) -> Option<TagPath> {
        // Links of one list come in a row with the same path: skip the hash.
        if let Some(last) = &self.last_path {
            if **last == *self.path {
                return Some(TagPath::new(Arc::clone(last)));
            }
        }
        let shared = match self.paths.get(self.path.as_str()) {
            Some(shared) => Arc::clone(shared),
            None => {
                if self.path_bytes + self.path.len() > MAX_PAGE_PATH_BYTES {
                    return None;
                }
                self.path_bytes += self.path.len();
                let shared: Arc<str> = Arc::from(self.path.as_str());
                self.paths.insert(Arc::clone(&shared));
                shared
            }
        };
        self.last_path = Some(Arc::clone(&shared));
        Some(TagPath::new(shared))
    }

    /// The first `<base href>` sets the base, unless a link was already
    /// resolved against the page URL (we cannot re-resolve it when streaming).
    fn on_base(&mut self, tag: &StartTag<'_, '_, '_>) {
        if self.base_seen {
            return;
        }
        let Some(href) = tag.attr("href") else {
            return;
        };
        self.base_seen = true;
        if self.base_frozen {
            return;
        }
        let href = decode_attribute(&href);
        let parsed = Url::options()
            .base_url(Some(&self.base))
            .parse(href.trim_matches(is_html_whitespace));
        if let Ok(base) = parsed {
            if matches!(base.scheme(), "http" | "https") {
                if let Some(c) = self.collector.as_mut() {
                    c.set_base(&base);
                }
                self.base = base;
                self.fragment_target = None;
            }
        }
    }

    fn on_text(&mut self, chunk: &TextChunk<'_>) {
        if self.anchor.is_some() && chunk.text_type() == TextType::Data {
            self.push_anchor_text(chunk.as_str());
        }
    }

    /// Buffers anchor text with whitespace runs collapsed as it arrives, so
    /// indentation does not eat the buffer.
    fn push_anchor_text(&mut self, text: &str) {
        for c in text.chars() {
            if self.anchor_raw.len() >= MAX_ANCHOR_RAW_BYTES {
                return;
            }
            if c.is_whitespace() {
                self.anchor_space_pending = !self.anchor_raw.is_empty();
            } else {
                if self.anchor_space_pending {
                    self.anchor_raw.push(' ');
                    self.anchor_space_pending = false;
                }
                self.anchor_raw.push(c);
            }
        }
    }

    /// Stores the collected text of the open anchor in its link.
    fn finish_anchor(&mut self) {
        let Some(anchor) = self.anchor.take() else {
            return;
        };
        let text = anchor_text(&self.anchor_raw);
        if let Some(link) = self.links.get_mut(anchor.link) {
            link.anchor = text;
        }
        self.anchor_raw.clear();
        self.anchor_space_pending = false;
    }
}

/// A start tag's name and attributes, read from the page's own bytes when
/// the whole body is in hand (`source`, which lol_html's source offsets
/// index). lol_html's accessors return a new `String` for every name and
/// value read, and each lookup, even a miss, allocates a lower-cased copy of
/// the name asked for: that was a fifth of extraction's CPU. Only ASCII bytes
/// are read in place; anything else goes through lol_html, which decodes it
/// in the page's encoding. Every encoding lol_html accepts is
/// ASCII-compatible, so both paths return the same strings (the
/// `source_and_streaming_agree` property test holds them to it).
struct StartTag<'e, 't, 's> {
    el: &'e LolStartTag<'t>,
    source: Option<&'s [u8]>,
}

impl<'s> StartTag<'_, '_, 's> {
    /// The tag name, ASCII lower-cased (as `Element::tag_name`).
    fn name(&self) -> Cow<'s, str> {
        if let Some(raw) = self
            .source
            .and_then(|s| raw_tag_name(s, self.el.source_location().bytes().start))
        {
            return if raw.bytes().any(|b| b.is_ascii_uppercase()) {
                Cow::Owned(raw.to_ascii_lowercase())
            } else {
                Cow::Borrowed(raw)
            };
        }
        Cow::Owned(self.el.name())
    }

    /// One pass over the attributes for what every element is asked (tag
    /// paths, links, the structured flag); three lookups and a scan of their
    /// own were a fifth of extraction's CPU. `name`: the tag name.
    fn scan(&self, name: &str) -> ScannedAttributes<'s> {
        let mut found = ScannedAttributes::default();
        // Most elements have no attributes at all.
        if !self.has_attributes() {
            return found;
        }
        let Some(source) = self.source else {
            return self.scan_by_lookups(name);
        };
        let is_script = name == "script";
        for attr in self.el.attributes() {
            let Some(raw_name) = attr
                .name_source_location()
                .and_then(|at| source.get(at.bytes()))
            else {
                // Not from the source (never for a page we only read).
                return self.scan_by_lookups(name);
            };
            let slot = match raw_name.len() {
                2 if raw_name.eq_ignore_ascii_case(b"id") => &mut found.id,
                4 if raw_name.eq_ignore_ascii_case(b"href") => &mut found.href,
                5 if raw_name.eq_ignore_ascii_case(b"class") => &mut found.class,
                _ => {
                    found.structured_hint |= (is_script && raw_name.eq_ignore_ascii_case(b"type"))
                        || STRUCTURED_HINTS
                            .iter()
                            .any(|a| raw_name.eq_ignore_ascii_case(a.as_bytes()));
                    continue;
                }
            };
            // The first of a name counts, as `Element::get_attribute` has it.
            if slot.is_none() {
                *slot = Some(value_in(attr, source));
            }
        }
        found
    }

    /// [`Self::scan`] through lol_html's lookups (a body read in chunks).
    fn scan_by_lookups(&self, name: &str) -> ScannedAttributes<'s> {
        ScannedAttributes {
            class: self.attr("class"),
            id: self.attr("id"),
            href: self.attr("href"),
            structured_hint: self.has_script_type_or_any_of(name, &STRUCTURED_HINTS),
        }
    }

    /// Whether [`Collector::on_element`] must see the element: the
    /// selector the rewriter matched for it, `template, noscript,
    /// script[type], [itemscope], [itemprop], [id], [vocab], [prefix],
    /// [typeof], [property], [about], [resource], [rel], [rev], [href],
    /// [src], [lang], [class*="h-"]` (every syntax: the collector skips
    /// those it was not asked for). `class*=` compares the raw value, case
    /// sensitively, as lol_html's selector VM did.
    fn may_carry_collected_data(&self, name: &str) -> bool {
        const ANY: [&str; 14] = [
            "itemscope",
            "itemprop",
            "id",
            "vocab",
            "prefix",
            "typeof",
            "property",
            "about",
            "resource",
            "rel",
            "rev",
            "href",
            "src",
            "lang",
        ];
        if matches!(name, "template" | "noscript") {
            return true;
        }
        if !self.has_attributes() {
            return false;
        }
        self.has_script_type_or_any_of(name, &ANY)
            || self.attr("class").is_some_and(|class| class.contains("h-"))
    }

    /// A `script` with a `type`, or an element with one of the attributes
    /// `names` (any case).
    fn has_script_type_or_any_of(&self, name: &str, names: &[&str]) -> bool {
        let is_script = name == "script";
        self.any_attribute_named(|raw| {
            (is_script && raw.eq_ignore_ascii_case(b"type"))
                || names.iter().any(|a| raw.eq_ignore_ascii_case(a.as_bytes()))
        })
    }

    /// Whether an attribute's name (as written, any case) passes `wanted`.
    fn any_attribute_named(&self, wanted: impl Fn(&[u8]) -> bool) -> bool {
        match self.source {
            Some(source) => self.el.attributes().iter().any(|attr| {
                match attr
                    .name_source_location()
                    .and_then(|at| source.get(at.bytes()))
                {
                    Some(raw) => wanted(raw),
                    None => wanted(attr.name().as_bytes()),
                }
            }),
            None => self
                .el
                .attributes()
                .iter()
                .any(|attr| wanted(attr.name().as_bytes())),
        }
    }

    fn has_attributes(&self) -> bool {
        !self.el.attributes().is_empty()
    }

    /// The value of the first attribute called `name` (lower case), its
    /// character references untouched (as `Element::get_attribute`).
    fn attr(&self, name: &str) -> Option<Cow<'s, str>> {
        debug_assert!(!name.bytes().any(|b| b.is_ascii_uppercase()));
        let Some(source) = self.source else {
            return self.el.get_attribute(name).map(Cow::Owned);
        };
        for attr in self.el.attributes() {
            let Some(raw_name) = attr
                .name_source_location()
                .and_then(|at| source.get(at.bytes()))
            else {
                // Not from the source (never for a page we only read).
                return self.el.get_attribute(name).map(Cow::Owned);
            };
            if !raw_name.eq_ignore_ascii_case(name.as_bytes()) {
                continue;
            }
            return Some(value_in(attr, source));
        }
        None
    }
}

/// The attributes that may carry structured data, besides a `script`'s
/// `type`: what [`has_structured_data`] must look at.
const STRUCTURED_HINTS: [&str; 5] = ["itemscope", "itemtype", "typeof", "vocab", "property"];

/// What [`StartTag::scan`] found: the first `class`, `id` and `href` (each
/// as [`StartTag::attr`] reads it) and whether an attribute of
/// [`STRUCTURED_HINTS`] (or a `script`'s `type`) is there.
#[derive(Default)]
struct ScannedAttributes<'s> {
    class: Option<Cow<'s, str>>,
    id: Option<Cow<'s, str>>,
    href: Option<Cow<'s, str>>,
    structured_hint: bool,
}

/// An attribute's value, its character references untouched: read in place
/// when it is ASCII, else decoded by lol_html in the page's encoding.
fn value_in<'s>(attr: &lol_html::html_content::Attribute<'_>, source: &'s [u8]) -> Cow<'s, str> {
    let raw_value = attr
        .value_source_location()
        .and_then(|at| source.get(at.bytes()))
        .filter(|v| v.is_ascii())
        .and_then(|v| std::str::from_utf8(v).ok());
    match raw_value {
        Some(value) => Cow::Borrowed(value),
        // Not ASCII, or no value (`<a href>`: an empty string, no allocation).
        None => Cow::Owned(attr.value()),
    }
}

/// The name of the start tag whose `<` is at `start` in `source`, when it is
/// plain ASCII (the tokenizer ends a tag name at whitespace, `/` or `>`).
fn raw_tag_name(source: &[u8], start: usize) -> Option<&str> {
    let rest = source.get(start..)?.strip_prefix(b"<")?;
    let end = rest
        .iter()
        .position(|b| matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ' | b'/' | b'>'))
        .unwrap_or(rest.len());
    let raw = &rest[..end];
    if raw.is_empty() || raw.iter().any(|&b| b == 0 || !b.is_ascii()) {
        return None;
    }
    std::str::from_utf8(raw).ok()
}

/// Entity-decoded anchor text, whitespace collapsed (again: `&nbsp;` decodes
/// to a space), at most [`MAX_ANCHOR_CHARS`] characters.
fn anchor_text(raw: &str) -> String {
    let decoded = htmlize::unescape(raw);
    let mut out = String::with_capacity(decoded.len().min(MAX_ANCHOR_CHARS * 2));
    let mut chars = 0;
    for word in decoded.split_whitespace() {
        if chars > 0 {
            if chars + 1 > MAX_ANCHOR_CHARS {
                break;
            }
            out.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars >= MAX_ANCHOR_CHARS {
                return out;
            }
            out.push(c);
            chars += 1;
        }
    }
    out
}

/// lol_html hands attribute values over with their character references
/// untouched; decode them as the HTML spec does for attributes
/// (`&copy=1` in a query stays as it is).
fn decode_attribute(raw: &str) -> std::borrow::Cow<'_, str> {
    if raw.contains('&') {
        htmlize::unescape_attribute(raw)
    } else {
        std::borrow::Cow::Borrowed(raw)
    }
}

fn is_html_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

/// Appends at most `max` bytes of `text` (cut on a character boundary);
/// returns the number of bytes appended.
fn push_capped(out: &mut String, text: &str, max: usize) -> usize {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
    end
}

/// Open Graph and its relatives use RDFa's `property` on `<meta>` on most
/// pages of the web; counting them would make every page "structured".
const OPEN_GRAPH_PREFIXES: [&str; 9] = [
    "og:", "fb:", "article:", "book:", "profile:", "music:", "video:", "product:", "twitter:",
];

/// JSON-LD, microdata or RDFa on this element (`name`: its tag name, lower case).
fn has_structured_data(el: &LolStartTag<'_>, name: &str) -> bool {
    if name == "script" {
        let is_json_ld = el.get_attribute("type").is_some_and(|t| {
            let media_type = t.split(';').next().unwrap_or_default().trim();
            media_type.eq_ignore_ascii_case("application/ld+json")
        });
        if is_json_ld {
            return true;
        }
    }
    if el.has_attribute("itemscope")
        || el.has_attribute("itemtype")
        || el.has_attribute("typeof")
        || el.has_attribute("vocab")
    {
        return true;
    }
    match el.get_attribute("property") {
        None => false,
        Some(_) if name != "meta" => true,
        Some(property) => {
            let property = property.trim().to_ascii_lowercase();
            !property.is_empty() && !OPEN_GRAPH_PREFIXES.iter().any(|p| property.starts_with(p))
        }
    }
}

/// The URL of a `<meta http-equiv=refresh content="5; url=...">`, following
/// the HTML spec's declarative-refresh parsing; `None` when it reloads the page.
fn refresh_target(content: &str) -> Option<&str> {
    let s = content.trim_start_matches(is_html_whitespace);
    let s = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let s = s.trim_start_matches(is_html_whitespace);
    let s = s.strip_prefix([';', ',']).unwrap_or(s);
    let s = s.trim_start_matches(is_html_whitespace);
    let s = match s.get(..3) {
        Some(prefix) if prefix.eq_ignore_ascii_case("url") => {
            let rest = s[3..].trim_start_matches(is_html_whitespace);
            match rest.strip_prefix('=') {
                Some(rest) => rest.trim_start_matches(is_html_whitespace),
                None => s,
            }
        }
        _ => s,
    };
    let url = match s.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            let inner = &s[1..];
            inner.split(quote).next().unwrap_or(inner)
        }
        _ => s,
    };
    let url = url.trim_matches(is_html_whitespace);
    (!url.is_empty()).then_some(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::normalize::LinkRejected;
    use proptest::prelude::*;

    const PAGE: &str = "http://example.com/dir/page.html";

    fn extract(html: &str) -> PageLinks {
        extract_links(
            html.as_bytes(),
            &Url::parse(PAGE).unwrap(),
            None,
            &ExtractLimits::default(),
        )
    }

    /// (url, tag path) of each link.
    fn paths(html: &str) -> Vec<(String, String)> {
        extract(html)
            .links
            .into_iter()
            .map(|l| (l.url.to_string(), l.tag_path.to_string()))
            .collect()
    }

    fn only_path(html: &str) -> String {
        let p = paths(html);
        assert_eq!(p.len(), 1, "{p:?}");
        p[0].1.clone()
    }

    #[test]
    fn design_example_path() {
        let html = r#"<!doctype html><html><head><title>t</title></head><body>
            <div class="content   main" id="x"><ul>
            <li><a class="download" href="/f.csv">CSV</a></li></ul></div></body></html>"#;
        assert_eq!(
            paths(html),
            vec![(
                "http://example.com/f.csv".to_string(),
                "/html/body/div.content main#x/ul/li/a.download".to_string()
            )]
        );
    }

    #[test]
    fn a_byte_order_mark_does_not_shift_what_is_read_from_the_body() {
        // lol_html's source offsets must index the body as given, BOM included.
        let body = b"\xEF\xBB\xBF<div class=c><a href=/z>w</a></div><a href=x>y</a>";
        let page_url = Url::parse(PAGE).unwrap();
        let limits = ExtractLimits::default();
        let whole = extract_links(body, &page_url, None, &limits);
        let mut ex = LinkExtractor::new(&page_url, None, &limits);
        ex.write(body);
        assert_eq!(ex.finish(), whole);
        assert_eq!(whole.links.len(), 2);
    }

    #[test]
    fn class_whitespace_and_empty_attributes() {
        assert_eq!(
            only_path("<div class=\"\n a\tb  \" id=\"\"><a href=x class=\"  \">x</a></div>"),
            "/div.a b/a"
        );
        assert_eq!(
            only_path("<DIV ID=Main CLASS=Big><A HREF=x>x</A></DIV>"),
            "/div.Big#Main/a"
        );
        assert_eq!(
            only_path("<div class=\"a&amp;b\" id=\"i&lt;\"><a href=x></a></div>"),
            "/div.a&b#i</a"
        );
    }

    #[test]
    fn block_start_closes_p() {
        assert_eq!(
            only_path("<body><p>intro<div><a href=x>x</a></div></body>"),
            "/body/div/a"
        );
        assert_eq!(
            paths("<body><p>one<p><a href=1>1</a><p><a href=2>2</a></body>"),
            vec![
                ("http://example.com/dir/1".into(), "/body/p/a".into()),
                ("http://example.com/dir/2".into(), "/body/p/a".into())
            ]
        );
        // Inline elements do not close `p`.
        assert_eq!(only_path("<p>a <span><a href=x>x</a></span>"), "/p/span/a");
        // A `p` outside a scope boundary stays open inside it; `table` closes it.
        assert_eq!(
            only_path("<p>x<object><div><a href=x>x</a></div></object>"),
            "/p/object/div/a"
        );
        assert_eq!(
            only_path("<p>x<table><tr><td><a href=x>x</a></table>"),
            "/table/tr/td/a"
        );
    }

    #[test]
    fn li_dd_dt_close_siblings() {
        let html = "<ul><li>one<li><a href=1>1</a><li><b><a href=2>2</a></ul><a href=3>3</a>";
        let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
        assert_eq!(got, ["/ul/li/a", "/ul/li/b/a", "/a"]);
        // A nested list does not close the outer item.
        assert_eq!(
            only_path("<ul><li>x<ul><li><a href=1>1</a></ul></ul>"),
            "/ul/li/ul/li/a"
        );
        let html = "<dl><dt>term<dd><a href=1>1</a><dt><a href=2>2</a></dl>";
        let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
        assert_eq!(got, ["/dl/dd/a", "/dl/dt/a"]);
    }

    #[test]
    fn table_cells_and_rows_close() {
        let html = "<table><tr><td>a<td><a href=1>1</a><tr><th>h<td><a href=2>2</a>\
                    <tbody><tr><td><a href=3>3</a></table>";
        let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
        assert_eq!(
            got,
            ["/table/tr/td/a", "/table/tr/td/a", "/table/tbody/tr/td/a"]
        );
        // Unclosed content of a cell is closed by the next row.
        assert_eq!(
            only_path("<table><tr><td><div><span>x<tr><td><a href=4>4</a></table>"),
            "/table/tr/td/a"
        );
        // Nested tables keep their own rows.
        assert_eq!(
            only_path("<table><tr><td><table><tr><td>x<tr><td><a href=1>1</a></table></table>"),
            "/table/tr/td/table/tr/td/a"
        );
    }

    #[test]
    fn void_elements_are_not_pushed() {
        assert_eq!(
            only_path("<div><br><img src=a.png><input type=text><hr/><a href=x>x</a></div>"),
            "/div/a"
        );
        assert_eq!(
            only_path("<p><br/><wbr><span><a href=x>x</a></span></p>"),
            "/p/span/a"
        );
    }

    #[test]
    fn unclosed_misnested_and_stray_tags() {
        let html = "<div><span><a href=1>1</a></div><a href=2>2</a>";
        let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
        assert_eq!(got, ["/div/span/a", "/a"]);
        let html = "</span></div><section><b><i></b><a href=1>1</a></i></section><a href=2>2</a>";
        let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
        assert_eq!(got, ["/section/a", "/a"]);
        // Never closed at all.
        assert_eq!(only_path("<div><div><div><a href=x>x"), "/div/div/div/a");
    }

    #[test]
    fn nested_anchor_closes_the_first() {
        let links = extract("<div><a href=1>one <a href=2>two</a> after</div>").links;
        let got: Vec<(&str, &str)> = links
            .iter()
            .map(|l| (l.tag_path.as_str(), l.anchor.as_str()))
            .collect();
        assert_eq!(got, [("/div/a", "one"), ("/div/a", "two")]);
    }

    #[test]
    fn duplicate_html_and_body_tags_ignored() {
        assert_eq!(
            only_path("<html><body><html lang=en><body class=x><div><a href=1>1</a>"),
            "/html/body/div/a"
        );
    }

    #[test]
    fn iframe_frame_area_and_meta_refresh() {
        let html = r#"<html><head><meta http-equiv="Refresh" content="0; URL='/moved'"></head>
            <body><map name=m><area class=r href="/area.pdf" alt=" Annual &amp;  report "></map>
            <iframe id=f src="/frame.html"></iframe>
            <frameset><frame src="left.html"></frameset></body></html>"#;
        assert_eq!(
            paths(html),
            vec![
                ("http://example.com/moved".into(), "/html/head/meta".into()),
                (
                    "http://example.com/area.pdf".into(),
                    "/html/body/map/area.r".into()
                ),
                (
                    "http://example.com/frame.html".into(),
                    "/html/body/iframe#f".into()
                ),
                (
                    "http://example.com/dir/left.html".into(),
                    "/html/body/frameset/frame".into()
                ),
            ]
        );
    }

    #[test]
    fn area_alt_is_its_anchor() {
        let html =
            "<map><area href=\"/a.pdf\" alt=\" Annual &amp;\n report \"><area href=/b></map>";
        let anchors: Vec<String> = extract(html).links.into_iter().map(|l| l.anchor).collect();
        assert_eq!(anchors, ["Annual & report", ""]);
    }

    #[test]
    fn refresh_content_parsing() {
        assert_eq!(refresh_target("0; url=/a"), Some("/a"));
        assert_eq!(refresh_target("5;URL = \"/b c\" trailing"), Some("/b c"));
        assert_eq!(refresh_target("1, /c"), Some("/c"));
        assert_eq!(refresh_target("3.5 ; url='/d"), Some("/d"));
        assert_eq!(refresh_target("10"), None);
        assert_eq!(refresh_target(" 0 ; "), None);
        assert_eq!(refresh_target("0; urlx"), Some("urlx"));
        assert_eq!(refresh_target("é; url=é"), Some("é; url=é"));
    }

    #[test]
    fn base_href_first_only_and_only_before_links() {
        let html = r#"<head><base href="https://cdn.example.org/files/"><base href="/other/"></head>
            <a href="a.csv">a</a>"#;
        let page = extract(html);
        assert_eq!(page.base.as_str(), "https://cdn.example.org/files/");
        assert_eq!(
            page.links[0].url.as_str(),
            "https://cdn.example.org/files/a.csv"
        );

        let html =
            r#"<a href="a.csv">a</a><base href="https://cdn.example.org/"><a href="b.csv">b</a>"#;
        let page = extract(html);
        assert_eq!(page.base.as_str(), PAGE);
        assert_eq!(page.links[1].url.as_str(), "http://example.com/dir/b.csv");

        // Relative base, and a non-http base ignored.
        let page = extract(r#"<base href="../up/"><a href=x>x</a>"#);
        assert_eq!(page.links[0].url.as_str(), "http://example.com/up/x");
        let page = extract(r#"<base href="javascript:alert(1)"><a href=x>x</a>"#);
        assert_eq!(page.links[0].url.as_str(), "http://example.com/dir/x");
    }

    #[test]
    fn entities_in_href_are_decoded() {
        let got = paths(r#"<a href="/p?a=1&amp;b=2&copy=3&#x26;c=&#52;&lt;">x</a>"#);
        assert_eq!(got[0].0, "http://example.com/p?a=1&b=2&copy=3&c=4%3C");
        let got = paths("<a href=\"&#104;ttp://other.org/&quot;q\">x</a>");
        assert_eq!(got[0].0, "http://other.org/%22q");
    }

    #[test]
    fn anchors_collapsed_decoded_truncated() {
        let html =
            "<a href=1>\n   Download\n <b>the</b>&nbsp;CSV &amp; <img alt='icon'> more  </a>\
                    <a href=2><img src=i.png alt=\"Logo &amp; name\"></a>\
                    <a href=3><script>var x = 1;</script>text</a>";
        let links = extract(html).links;
        let anchors: Vec<&str> = links.iter().map(|l| l.anchor.as_str()).collect();
        assert_eq!(
            anchors,
            ["Download the CSV & icon more", "Logo & name", "text"]
        );

        let long = format!("<a href=1>{}</a>", "word ".repeat(100));
        let anchor = &extract(&long).links[0].anchor;
        assert_eq!(anchor.chars().count(), 200);
        assert!(anchor.starts_with("word word"));

        let wide = format!("<a href=1>{}</a>", "é".repeat(300));
        assert_eq!(extract(&wide).links[0].anchor.chars().count(), 200);
    }

    #[test]
    fn duplicates_self_links_and_fragments() {
        let html = r##"<a href="/a#one">first</a><a href="#top">top</a><a href="">self</a>
            <a href="page.html?#x">self again</a><div><a href="/a#two">second</a></div>
            <a href="HTTP://EXAMPLE.COM/a">third</a>"##;
        let links = extract(html).links;
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].url.as_str(), "http://example.com/a");
        assert_eq!(links[0].anchor, "first");
        assert_eq!(links[0].tag_path.as_str(), "/a");
    }

    #[test]
    fn rejected_links_are_counted_by_kind() {
        let long = "x".repeat(3000);
        let html = format!(
            "<a href='mailto:a@b.c'>m</a><a href='javascript:void(0)'>j</a><a href='http://[::1'>b</a>\
             <a href='/{long}'>l</a><a href='/a/a/a/a/a'>t</a><a href='/ok'>ok</a>"
        );
        let page = extract(&html);
        assert_eq!(page.links.len(), 1);
        assert_eq!(page.rejected.get(LinkRejected::Scheme), 2);
        assert_eq!(page.rejected.get(LinkRejected::BadUrl), 1);
        assert_eq!(page.rejected.get(LinkRejected::TooLong), 1);
        assert_eq!(page.rejected.get(LinkRejected::RepeatedSegments), 1);
    }

    #[test]
    fn max_links_truncates() {
        let html: String = (0..10).map(|i| format!("<a href=/{i}>{i}</a>")).collect();
        let limits = ExtractLimits {
            max_links: 4,
            ..ExtractLimits::default()
        };
        let page = extract_links(html.as_bytes(), &Url::parse(PAGE).unwrap(), None, &limits);
        assert_eq!(page.links.len(), 4);
        assert_eq!(page.cut, Some(PageCut::MaxLinks));
        assert_eq!(page.links[3].url.as_str(), "http://example.com/3");
        assert_eq!(extract(&html).cut, None);
        // Duplicates at the limit do not count as truncation.
        let html = "<a href=/0>0</a><a href=/0>0</a>";
        let limits = ExtractLimits {
            max_links: 1,
            ..ExtractLimits::default()
        };
        assert_eq!(
            extract_links(html.as_bytes(), &Url::parse(PAGE).unwrap(), None, &limits).cut,
            None
        );
    }

    #[test]
    fn a_page_over_the_parser_memory_limit_is_cut() {
        // 300 000 unclosed elements: lol_html's element stack outgrows its limit.
        let mut html = String::from("<a href=/1>1</a>");
        html.push_str(&"<span class=x>".repeat(300_000));
        html.push_str("<a href=/2>2</a>");
        let page = extract(&html);
        assert_eq!(page.cut, Some(PageCut::ParserLimit));
        let urls: Vec<&str> = page.links.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(urls, ["http://example.com/1"]);
    }

    #[test]
    fn long_distinct_tag_paths_are_capped_per_page() {
        // 2 000 links, each under its own ~1.5 KB path (six nested classes).
        let class = "c".repeat(240);
        let html: String = (0..2000)
            .map(|i| {
                let open: String = (0..6)
                    .map(|d| format!("<div class=\"{class}{i}-{d}\">"))
                    .collect();
                format!("{open}<a href=/{i}>{i}</a>{}", "</div>".repeat(6))
            })
            .collect();
        let page = extract(&html);
        assert_eq!(page.cut, Some(PageCut::TagPathBytes));
        let bytes: usize = page.links.iter().map(|l| l.tag_path.as_str().len()).sum();
        assert!(bytes <= MAX_PAGE_PATH_BYTES, "{bytes}");
        assert!(page.links.len() > 200, "{}", page.links.len());
    }

    #[test]
    fn identical_paths_share_one_string() {
        let links =
            extract("<ul><li><a href=1>1</a><li><a href=2>2</a></ul><p><a href=3>3</a>").links;
        let ptr = |i: usize| links[i].tag_path.as_str().as_ptr();
        assert_eq!(links[0].tag_path, links[1].tag_path);
        assert_eq!(ptr(0), ptr(1));
        assert_ne!(ptr(0), ptr(2));
    }

    #[test]
    fn structured_data_detection() {
        let cases = [
            (
                r#"<script type="application/ld+json">{"@type":"Dataset"}</script>"#,
                true,
            ),
            (
                r#"<script type=" Application/LD+JSON ; charset=utf-8">{}</script>"#,
                true,
            ),
            (r#"<script type="text/javascript">var a;</script>"#, false),
            (
                r#"<div itemscope itemtype="https://schema.org/Dataset"></div>"#,
                true,
            ),
            (r#"<span itemtype="x"></span>"#, true),
            (r#"<body vocab="https://schema.org/"></body>"#, true),
            (r#"<div typeof="Dataset"></div>"#, true),
            (r#"<span property="name">x</span>"#, true),
            (r#"<meta property="dc:title" content="x">"#, true),
            (
                r#"<meta property="og:title" content="x"><meta property="twitter:card">"#,
                false,
            ),
            (r#"<div class="itemscope">no</div>"#, false),
            (r#"<script type="text/plain" itemscope></script>"#, true),
            (r#"<DIV ItemScope>x</DIV>"#, true),
        ];
        for (html, expected) in cases {
            assert_eq!(extract(html).structured_data, expected, "{html}");
        }
    }

    #[test]
    fn charset_from_header_and_meta() {
        // "Скачать" in windows-1251.
        let mut body = b"<a href=/x>".to_vec();
        body.extend_from_slice(&[0xD1, 0xEA, 0xE0, 0xF7, 0xE0, 0xF2, 0xFC]);
        body.extend_from_slice(b"</a>");
        let page_url = Url::parse(PAGE).unwrap();
        let limits = ExtractLimits::default();
        let page = extract_links(
            &body,
            &page_url,
            Some("text/html; charset=\"windows-1251\""),
            &limits,
        );
        assert_eq!(page.links[0].anchor, "Скачать");

        let mut with_meta = b"<meta charset=windows-1251>".to_vec();
        with_meta.extend_from_slice(&body);
        let page = extract_links(&with_meta, &page_url, Some("text/html"), &limits);
        assert_eq!(page.links[0].anchor, "Скачать");

        // Unsupported charsets fall back to UTF-8 and do not fail.
        let page = extract_links(
            b"<a href=/y>y</a>",
            &page_url,
            Some("text/html; charset=utf-16"),
            &limits,
        );
        assert_eq!(page.links[0].url.as_str(), "http://example.com/y");
        assert_eq!(charset_from_content_type("text/html;charset=bogus"), None);
    }

    #[test]
    fn meta_http_equiv_content_type_sets_the_charset_unless_the_header_did() {
        // "Скачать" in windows-1251.
        let mut link = b"<a href=/x>".to_vec();
        link.extend_from_slice(&[0xD1, 0xEA, 0xE0, 0xF7, 0xE0, 0xF2, 0xFC]);
        link.extend_from_slice(b"</a>");
        let mut body =
            b"<meta http-equiv=content-type content='text/html; charset=windows-1251'>".to_vec();
        body.extend_from_slice(&link);
        let page_url = Url::parse(PAGE).unwrap();
        let limits = ExtractLimits::default();
        let page = extract_links(&body, &page_url, None, &limits);
        assert_eq!(page.links[0].anchor, "Скачать");
        // Only the first charset counts.
        let mut twice = b"<meta charset=windows-1251><meta charset=utf-8>".to_vec();
        twice.extend_from_slice(&link);
        let page = extract_links(&twice, &page_url, None, &limits);
        assert_eq!(page.links[0].anchor, "Скачать");
        // A charset in the header wins: the bytes stay invalid UTF-8.
        let page = extract_links(&body, &page_url, Some("text/html; charset=utf-8"), &limits);
        assert_ne!(page.links[0].anchor, "Скачать");
    }

    #[test]
    fn ends_pop_as_lol_html_tracks_open_elements() {
        // An end tag closes the nearest open element of its name and every
        // one above it; one with no open element of its name does nothing.
        let page = extract(
            "<div><span><a href=/1>a</div>b</em><a href=/2>c</a><svg><a href=/3 />d</svg><a href=/4>e</a>",
        );
        let got: Vec<(&str, &str, &str)> = page
            .links
            .iter()
            .map(|l| (l.url.path(), l.tag_path.as_str(), l.anchor.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("/1", "/div/span/a", "a"),
                ("/2", "/a", "c"),
                // Self-closing in a foreign namespace: never open, no text.
                ("/3", "/svg/a", ""),
                ("/4", "/a", "e"),
            ]
        );
    }

    #[test]
    fn invalid_utf8_and_binary_do_not_panic() {
        let page_url = Url::parse(PAGE).unwrap();
        let limits = ExtractLimits::default();
        let mut body = b"<a href=\"/\xff\xfe\">\xc3\x28 x</a>".to_vec();
        let page = extract_links(&body, &page_url, None, &limits);
        assert_eq!(page.links.len(), 1);
        assert_eq!(
            page.links[0].url.as_str(),
            "http://example.com/%EF%BF%BD%EF%BF%BD"
        );

        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        body.clear();
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            body.push((x >> 24) as u8);
        }
        let _ = extract_links(&body, &page_url, None, &limits);
        let _ = extract_links(
            b"<<<a href=<a =a><//a><!-- <a href=1>",
            &page_url,
            None,
            &limits,
        );
        let _ = extract_links(b"", &page_url, None, &limits);
    }

    #[test]
    fn deep_nesting_is_capped() {
        let html = format!("{}<a href=x>x</a>", "<div class=level>".repeat(100_000));
        let page = extract(&html);
        assert_eq!(page.links.len(), 1);
        let path = page.links[0].tag_path.as_str();
        assert!(path.len() <= MAX_PATH_BYTES + 10, "{}", path.len());
        assert!(path.ends_with("/div.level/a"));
        // Long class and id values are capped.
        let html = format!(
            "<div class=\"{}\" id=\"{}\"><a href=x>x</a>",
            "c".repeat(5000),
            "i".repeat(5000)
        );
        let path = only_path(&html);
        assert_eq!(
            path.len(),
            "/div.".len() + MAX_CLASS_BYTES - 1 + 1 + MAX_ID_BYTES + "/a".len()
        );
    }

    #[test]
    fn streaming_matches_one_shot() {
        let html = r#"<html><body class="b"><base href="/root/"><ul><li><a href="x&amp;y">A &amp; B</a>
            <li><a href='/z'>Z<img alt=zz></a></ul><table><tr><td><a href=t>T</a></table></body>"#;
        let page_url = Url::parse(PAGE).unwrap();
        let limits = ExtractLimits::default();
        let whole = extract_links(html.as_bytes(), &page_url, None, &limits);
        let mut ex = LinkExtractor::new(&page_url, None, &limits);
        for b in html.as_bytes() {
            ex.write(std::slice::from_ref(b));
        }
        assert_eq!(ex.finish(), whole);
        assert_eq!(whole.links.len(), 3);
    }

    #[test]
    fn extract_links_runs_on_another_thread() {
        let page = std::thread::spawn(|| extract("<a href=/t>t</a>"))
            .join()
            .unwrap();
        assert_eq!(page.links.len(), 1);
    }

    /// Random tag soup built from the pieces the stack logic reacts to.
    fn soup() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "<p>",
            "</p>",
            "<div class='a b'>",
            "</div>",
            "<li>",
            "</li>",
            "<ul>",
            "</ul>",
            "<td>",
            "<tr>",
            "<table>",
            "</table>",
            "<br>",
            "<img alt=i>",
            "<a href=/x>",
            "<a href='/y?a&amp;b'>",
            "</a>",
            "<area href=/z>",
            "<iframe src=/f>",
            "</iframe>",
            "text ",
            "&amp;",
            "<b>",
            "</i>",
            "<base href=/b/>",
            "<html>",
            "<body>",
            "<svg><a href=/s/></svg>",
            "<dd>",
            "<dt>",
            "<option>",
            "<h1>",
            "<h2>",
            "<button>",
            "<script>",
            "</script>",
            "<!--",
            "-->",
            "<select>",
            "<template>",
            "</template>",
            "<a href='#f'>",
            "<a href='mailto:x'>",
        ]);
        prop::collection::vec(piece, 0..60).prop_map(|v| v.concat())
    }

    /// Start tags in the spellings [`StartTag`] must read as lol_html does.
    fn tag_piece() -> impl Strategy<Value = Vec<u8>> {
        let name = prop::sample::select(vec![
            "a", "A", "div", "DiV", "li", "p", "table", "td", "area", "base", "meta", "img",
            "iframe", "x\u{e9}", "b\0", "h1", "script", "SCRIPT",
        ]);
        let attr_name = prop::sample::select(vec![
            "href",
            "HREF",
            "Href",
            "class",
            "CLASS",
            "id",
            "Id",
            "alt",
            "src",
            "http-equiv",
            "content",
            "hr\u{e9}f",
            "data-x",
            "type",
            "TYPE",
            "itemscope",
            "ItemType",
            "typeof",
            "vocab",
            "property",
        ]);
        let value: BoxedStrategy<Vec<u8>> = prop_oneof![
            prop::sample::select(vec![
                "/x",
                "../y z",
                "caf\u{e9}",
                "a&amp;b",
                "",
                " a  b ",
                "refresh",
                "5; url=/r",
                "\u{3042}",
                "\0",
                "#f",
                "og:title",
                "application/ld+json",
                "name",
            ])
            .prop_map(|v| v.as_bytes().to_vec()),
            // Bytes that are not UTF-8 (Latin-1 or Shift_JIS text).
            prop::collection::vec(
                prop::sample::select(vec![b'a', 0xe9, 0x82, 0xa0, b'/']),
                0..4
            ),
        ]
        .boxed();
        let attr = (attr_name, prop::sample::select(vec![0u8, 1, 2, 3]), value).prop_map(
            |(name, quoting, value)| {
                let mut out = vec![b' '];
                out.extend_from_slice(name.as_bytes());
                match quoting {
                    0 => {}
                    1 => {
                        out.extend_from_slice(b"=\"");
                        out.extend_from_slice(&value);
                        out.push(b'"');
                    }
                    2 => {
                        out.extend_from_slice(b"='");
                        out.extend_from_slice(&value);
                        out.push(b'\'');
                    }
                    _ => {
                        out.push(b'=');
                        out.extend(value.iter().filter(|b| !b" '\">".contains(b)));
                    }
                }
                out
            },
        );
        prop_oneof![
            3 => (name.clone(), prop::collection::vec(attr, 0..4), any::<bool>()).prop_map(
                |(name, attrs, self_closing)| {
                    let mut out = format!("<{name}").into_bytes();
                    for a in attrs {
                        out.extend(a);
                    }
                    out.extend_from_slice(if self_closing { b"/>" } else { b">" });
                    out
                }
            ),
            1 => name.prop_map(|n| format!("</{n}>text ").into_bytes()),
            1 => Just(b"<meta charset=windows-1252>".to_vec()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn paths_are_well_formed_and_links_unique(html in soup(), split in 0usize..400) {
            let page_url = Url::parse(PAGE).unwrap();
            let limits = ExtractLimits { max_links: 5, ..ExtractLimits::default() };
            let whole = extract_links(html.as_bytes(), &page_url, None, &limits);
            prop_assert!(whole.links.len() <= 5);
            let mut seen = HashSet::new();
            for link in &whole.links {
                let path = link.tag_path.as_str();
                prop_assert!(path.starts_with('/'));
                let last = path.rsplit('/').next().unwrap_or_default();
                let tag = last.split(['.', '#']).next().unwrap_or_default();
                prop_assert!(matches!(tag, "a" | "area" | "iframe"), "{}", path);
                prop_assert!(link.url.fragment().is_none());
                prop_assert!(seen.insert(link.url.clone()));
                prop_assert!(link.anchor.chars().count() <= MAX_ANCHOR_CHARS);
            }
            // Chunk boundaries do not change the result.
            let cut = split.min(html.len());
            let mut ex = LinkExtractor::new(&page_url, None, &limits);
            ex.write(&html.as_bytes()[..cut]);
            ex.write(&html.as_bytes()[cut..]);
            prop_assert_eq!(ex.finish(), whole);
        }

        /// Tag names and attributes read from the body's bytes ([`StartTag`])
        /// give what lol_html's own accessors give: upper case, duplicate and
        /// value-less attributes, non-ASCII and legacy-encoded bytes, NULs.
        #[test]
        fn source_and_streaming_agree(
            pieces in prop::collection::vec(tag_piece(), 0..40),
            charset in prop::sample::select(vec![None, Some("utf-8"), Some("windows-1252"), Some("shift_jis")]),
        ) {
            let body = pieces.concat();
            let page_url = Url::parse(PAGE).unwrap();
            let content_type = charset.map(|c| format!("text/html; charset={c}"));
            let limits = ExtractLimits::default();
            let whole = extract_links(&body, &page_url, content_type.as_deref(), &limits);
            let mut ex = LinkExtractor::new(&page_url, content_type.as_deref(), &limits);
            ex.write(&body);
            prop_assert_eq!(ex.finish(), whole);
        }

        #[test]
        fn arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..2000)) {
            let page_url = Url::parse(PAGE).unwrap();
            let page = extract_links(&body, &page_url, Some("text/html; charset=shift_jis"), &ExtractLimits::default());
            prop_assert!(page.links.len() <= 10_000);
        }
    }

    /// A ~1 MiB page made of repeated `section(i)` snippets.
    fn synthetic_page(section: impl Fn(usize) -> String) -> String {
        let mut html = String::from(
            "<!doctype html><html><head><title>Stats</title>\
            <script type=\"application/ld+json\">{}</script></head><body class=\"page\">",
        );
        let mut i = 0;
        while html.len() < 1 << 20 {
            html.push_str(&section(i));
            i += 1;
        }
        html.push_str("</body></html>");
        html
    }

    /// `cargo test --release --lib extract:: -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn throughput_one_mib() {
        // Dense markup: ~30 bytes per element, ~7 000 links per MiB.
        let dense = synthetic_page(|i| {
            format!(
                "<div class=\"section row\" id=\"s{i}\"><h2>Section {i}</h2><p>Some text about the \
                 data &amp; the methods, with <b>bold</b> and <i>italic</i> words.<br>\
                 <img src=\"/img/{i}.png\" alt=\"chart\"></p><ul class=\"files\">\
                 <li><a class=\"download\" href=\"/data/{i}/table.csv?v=1&amp;lang=en\">CSV table {i}</a>\
                 <li><a href=\"../reports/{i}.pdf\">Report</a><li><a href=\"#top\">top</a></ul>\
                 <table><tr><td>{i}<td><a href=\"/p/{i}.html\">page</a></table></div>\n"
            )
        });
        // Documentation-like prose: ~150 bytes per element, ~1 300 links per MiB.
        let prose = synthetic_page(|i| {
            format!(
                "<div class=\"section\" id=\"sec-{i}\"><h2>Heading {i}<a class=\"headerlink\" \
                 href=\"#sec-{i}\">¶</a></h2><p>The quick brown fox jumps over the lazy dog while \
                 the statistician reads the <a class=\"reference internal\" href=\"../api/mod{i}.html\">\
                 module {i} reference</a> and the methodology notes, which explain how the \
                 seasonally adjusted series are computed &amp; revised every quarter.</p>\
                 <p>See also <code>function_{i}()</code> for details on weighting, sampling and \
                 the treatment of missing values in the <em>annual</em> tables.</p></div>\n"
            )
        });
        for (name, html) in [("dense", dense), ("prose", prose)] {
            measure(name, &html);
        }
    }

    fn measure(name: &str, html: &str) {
        let page_url = Url::parse(PAGE).unwrap();
        let limits = ExtractLimits {
            max_links: usize::MAX,
            ..ExtractLimits::default()
        };
        let mib = html.len() as f64 / (1 << 20) as f64;
        let _warm = extract_links(html.as_bytes(), &page_url, None, &limits);
        // CPU time of this thread (Linux): wall time lies on a shared machine.
        let cpu_ns = || -> Option<u64> {
            let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
            stat.split_whitespace().next()?.parse().ok()
        };
        let runs = 20;
        let (wall, cpu) = (std::time::Instant::now(), cpu_ns());
        let mut links = 0;
        for _ in 0..runs {
            links = extract_links(html.as_bytes(), &page_url, None, &limits)
                .links
                .len();
        }
        let wall_ms = wall.elapsed().as_secs_f64() * 1e3 / runs as f64 / mib;
        let cpu_ms = match (cpu, cpu_ns()) {
            (Some(a), Some(b)) => format!("{:.1}", (b - a) as f64 / 1e6 / runs as f64 / mib),
            _ => "n/a".to_string(),
        };
        println!(
            "extract_links {name}: {mib:.2} MiB page, {links} links: {cpu_ms} ms CPU/MiB, \
             {wall_ms:.1} ms wall/MiB ({:.0} MiB/s wall)",
            1e3 / wall_ms
        );
    }
}
