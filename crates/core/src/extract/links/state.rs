//! [`State`]: the open elements with their tag paths and HTML's implied end
//! tags, the anchor whose text is being collected, and the links found.

use super::start_tag::{
    anchor_text, decode_attribute, has_structured_data, is_html_whitespace, push_capped,
    refresh_target, ScannedAttributes, StartTag,
};
use super::{
    ExtractLimits, ExtractedLink, PageCut, PageLinks, MAX_ANCHOR_RAW_BYTES, MAX_CLASS_BYTES,
    MAX_DEPTH, MAX_ID_BYTES, MAX_PAGE_PATH_BYTES, MAX_PATH_BYTES, MAX_TAG_BYTES,
};
use super::{CATALOG_MARKUP_BYTES, CATALOG_MARKUP_STATEMENTS, DCAT_ALTERNATE_TYPES};
use crate::catalog::schema_org::dataset_downloads;
use crate::catalog::source::{CatalogKind, FORM_PREFIX};
use crate::extract::normalize::{
    normalize, resolve_with_encoding, LinkRejected, RejectCounts, UrlRules,
};
use crate::extract::structured::{Collector, StructuredOptions};
use crate::form::{FormBuilder, FormLimits, FormTag};
use crate::link::TagPath;
use encoding_rs::Encoding;
use foldhash::fast::RandomState;
use lol_html::html_content::{TextChunk, TextType};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::Arc;
use url::Url;

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

/// A `<form>` whose fields are being read (forms do not nest in HTML).
struct OpenForm {
    /// Its element (`None` when too deep to be tracked: it ends with the page).
    frame: Option<u64>,
    /// The open `<select>` element, whose options belong to it.
    select: Option<u64>,
    builder: FormBuilder,
    /// `[form] ` and the form's own tag path: its links' one action.
    tag_path: String,
}

/// The link whose anchor text is being collected.
#[derive(Clone, Copy, Debug)]
pub(super) struct OpenAnchor {
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

pub(super) struct State {
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
    pub(super) anchor: Option<OpenAnchor>,
    anchor_raw: String,
    anchor_space_pending: bool,

    structured_data: bool,
    pub(super) collector: Option<Collector>,
    /// Read the page's catalog markup and `<link rel="alternate">` catalogs.
    catalogs: bool,
    /// The collector runs only for the catalog markup: its statements are
    /// not the job's and are dropped once read.
    collector_for_catalogs: bool,
    /// Caps of the GET forms read (`None`: forms are not read).
    forms: Option<FormLimits>,
    /// The form being read.
    form: Option<OpenForm>,
    cut: Option<PageCut>,
    rejected: RejectCounts,
}

impl State {
    pub(super) fn new(
        page_url: &Url,
        limits: &ExtractLimits,
        query_encoding: Option<&'static Encoding>,
    ) -> Self {
        let mut page = page_url.clone();
        normalize(&mut page, &limits.url_rules);
        let asked = limits.structured.as_ref().filter(|o| o.any());
        let catalogs = limits.sources.catalogs;
        let collector = match (asked, catalogs) {
            (Some(o), _) => Some(Collector::new(page_url, o)),
            // schema.org markup comes in all three RDF syntaxes; microformats
            // carry no downloads.
            (None, true) => Some(Collector::new(
                page_url,
                &StructuredOptions {
                    json_ld: true,
                    microdata: true,
                    rdfa: true,
                    microformats: false,
                    max_statements: CATALOG_MARKUP_STATEMENTS,
                    max_bytes: CATALOG_MARKUP_BYTES,
                },
            )),
            (None, false) => None,
        };
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
            collector_for_catalogs: asked.is_none() && collector.is_some(),
            collector,
            catalogs,
            forms: limits.sources.forms,
            form: None,
            cut: None,
            rejected: RejectCounts::default(),
        }
    }

    /// The first reason a page was cut is the one reported.
    pub(super) fn cut_at(&mut self, why: PageCut) {
        self.cut.get_or_insert(why);
    }

    pub(super) fn take_result(&mut self) -> PageLinks {
        // A form left open at the end of the page ends with it.
        self.finish_form();
        let mut structured = self.collector.take().map(Collector::finish);
        if self.catalogs {
            if let Some(data) = &structured {
                // After the page's own links: a file both linked and named
                // by the markup keeps its page link (first occurrence wins).
                for d in dataset_downloads(&data.triples) {
                    let anchor = d.format.as_deref().map(anchor_text).unwrap_or_default();
                    self.add_source_link(&d.raw, d.tag_path, anchor);
                }
            }
        }
        if self.collector_for_catalogs {
            structured = None;
        }
        PageLinks {
            links: std::mem::take(&mut self.links),
            base: self.base.clone(),
            structured_data: self.structured_data,
            structured,
            cut: self.cut,
            rejected: self.rejected,
        }
    }

    /// A start tag `name` (lower case); `has_end`: lol_html will report its
    /// end (it is not void). Returns the frame id to pass to
    /// [`State::on_end`] when it ends, if one was pushed.
    pub(super) fn on_element(
        &mut self,
        tag: &StartTag<'_, '_, '_>,
        name: &str,
        has_end: bool,
    ) -> Option<u64> {
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

        if self.form.is_some() {
            self.on_form_field(tag, name);
        }
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
            "link" if self.catalogs => self.on_link_element(tag),
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
        if name == "form" && self.forms.is_some() && self.form.is_none() {
            self.open_form(tag, frame_id);
        }
        if frame_id.is_none() {
            self.path.truncate(path_len);
        }
        if name == "select" {
            if let Some(form) = self.form.as_mut() {
                form.select = frame_id;
            }
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
    pub(super) fn on_end(&mut self, id: u64) {
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
        if let Some(form) = self.form.as_mut() {
            let closed = |id: Option<u64>| {
                id.is_some_and(|id| self.stack[index..].iter().any(|f| f.id == id))
            };
            if closed(form.select) {
                form.select = None;
                form.builder.end_select();
            }
            if closed(form.frame) {
                self.finish_form();
            }
        }
        self.stack.truncate(index);
        self.path.truncate(frame.path_len);
    }

    /// A `<form>` start tag: read it when it may be a GET form of choices.
    fn open_form(&mut self, tag: &StartTag<'_, '_, '_>, frame: Option<u64>) {
        let attr = |n: &str| tag.attr(n).map(|v| decode_attribute(&v).into_owned());
        let (method, role, name, id, class, action_raw) = (
            attr("method"),
            attr("role"),
            attr("name"),
            attr("id"),
            attr("class"),
            attr("action"),
        );
        // An absent or empty action submits to the page itself.
        let action = match action_raw
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            None => Ok(Some(self.page.clone())),
            Some(raw) => self.resolve(raw),
        };
        let action = match action {
            Ok(Some(url)) => url,
            Ok(None) => self.page.clone(),
            Err(kind) => {
                self.rejected.add(kind);
                return;
            }
        };
        let builder = FormBuilder::new(
            FormTag {
                method: method.as_deref(),
                role: role.as_deref(),
                name: name.as_deref(),
                id: id.as_deref(),
                class: class.as_deref(),
                action_raw: action_raw.as_deref(),
            },
            action,
        );
        if !builder.open() {
            return;
        }
        self.form = Some(OpenForm {
            frame,
            select: None,
            builder,
            tag_path: format!("{FORM_PREFIX} {}", self.path),
        });
    }

    /// An element inside the open form that may be one of its fields.
    fn on_form_field(&mut self, tag: &StartTag<'_, '_, '_>, name: &str) {
        let Some(form) = self.form.as_mut() else {
            return;
        };
        if !form.builder.open() {
            return;
        }
        let attr = |n: &str| tag.attr(n).map(|v| decode_attribute(&v).into_owned());
        let disabled = tag.attr("disabled").is_some();
        match name {
            "input" => form.builder.input(
                attr("type").as_deref(),
                attr("name").as_deref(),
                attr("value").as_deref(),
                disabled,
            ),
            "select" => form.builder.select(attr("name").as_deref(), disabled),
            "option" => form.builder.option(attr("value").as_deref(), disabled),
            "textarea" => form.builder.textarea(disabled),
            _ => {}
        }
    }

    /// The open form ended: its submissions, up to the per-form cap, are
    /// links under its one tag path.
    fn finish_form(&mut self) {
        let (Some(form), Some(limits)) = (self.form.take(), self.forms) else {
            return;
        };
        let Ok(done) = form.builder.finish() else {
            return;
        };
        for url in done.submissions(limits.per_form) {
            if self.cut.is_some() {
                break;
            }
            // Already absolute and normalised by `resolve`; the query the
            // form set is normalised like any link's.
            self.add_source_link(url.as_str(), &form.tag_path, String::new());
        }
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

    /// A `<link rel="alternate">` whose type is an RDF syntax portals
    /// announce their DCAT catalog in: a catalog to read (tag path
    /// `[catalog dcat]`, like the well-known `/catalog.ttl`).
    fn on_link_element(&mut self, tag: &StartTag<'_, '_, '_>) {
        let alternate = tag.attr("rel").is_some_and(|rel| {
            rel.split(is_html_whitespace)
                .any(|r| r.eq_ignore_ascii_case("alternate"))
        });
        if !alternate {
            return;
        }
        let Some(ty) = tag.attr("type") else { return };
        let essence = ty.split(';').next().unwrap_or("").trim();
        let rdf = DCAT_ALTERNATE_TYPES
            .iter()
            .any(|t| t.eq_ignore_ascii_case(essence));
        let json = essence.eq_ignore_ascii_case("application/json");
        if !rdf && !json {
            return;
        }
        let Some(href) = tag.attr("href") else { return };
        let raw = decode_attribute(&href);
        if rdf {
            self.add_source_link(&raw, CatalogKind::Dcat.tag_path(), String::new());
            return;
        }
        // A JSON alternate is a catalog only when its URL says which (a
        // CKAN API, a `data.json`): a page's JSON twin is no catalog.
        let url = match self.resolve(&raw) {
            Ok(Some(url)) => url,
            Ok(None) => return,
            Err(kind) => {
                self.rejected.add(kind);
                return;
            }
        };
        if let Some((url, kind)) = crate::catalog::source::listed_catalog(&url) {
            if kind != CatalogKind::Dcat {
                self.add_source_link(url.as_str(), kind.tag_path(), String::new());
            }
        }
    }

    /// A link from a source other than the page's own links (a catalog the
    /// page names, a download of its markup, a form's submission), under
    /// a fixed tag path of that source: `sb` files it under an action of
    /// its own. The page's caps and its seen set apply as to any link.
    pub(super) fn add_source_link(&mut self, raw: &str, tag_path: &str, anchor: String) -> bool {
        if self.cut.is_some() {
            return false;
        }
        let url = match self.resolve(raw) {
            Ok(Some(url)) => url,
            Ok(None) => return false,
            Err(kind) => {
                self.rejected.add(kind);
                return false;
            }
        };
        if url.as_str() == self.page.as_str() || self.seen.contains(url.as_str(), &self.links) {
            return false;
        }
        if self.links.len() >= self.max_links {
            self.cut_at(PageCut::MaxLinks);
            return false;
        }
        let index = self.links.len();
        self.seen.insert(url.as_str(), index);
        self.links.push(ExtractedLink {
            url,
            tag_path: TagPath::new(tag_path),
            anchor,
        });
        true
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

    pub(super) fn on_text(&mut self, chunk: &TextChunk<'_>) {
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
    pub(super) fn finish_anchor(&mut self) {
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
