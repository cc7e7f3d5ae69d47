//! Structured data embedded in an HTML page, read in the same lol_html pass
//! that finds its links (ARCHITECTURE.md § Crawl loop, § Structured data).
//!
//! Owns: JSON-LD script bodies turned into RDF with `oxjsonld` ([`jsonld`]),
//! microdata mapped to triples as in the W3C "Microdata to RDF" note
//! ([`microdata`]), RDFa 1.1 Lite and the common RDFa Core attributes
//! ([`rdfa`]), and microformats2 root classes (`h-*`) counted as items.
//! Content of `<template>` and `<noscript>` does not count (comments are
//! never seen: lol_html reports them apart from text).
//!
//! Must not touch: the network, the store, learning. The [`Collector`] is
//! driven by `extract::links` (which drives lol_html's token stream) and turns
//! what it saw into [`StructuredData`] at the end of the page.
//!
//! Bounded on hostile pages: at most [`StructuredOptions::max_statements`]
//! statements and [`StructuredOptions::max_bytes`] bytes of N-Quads per page
//! (then [`StructuredData::cut`]; each statement counted by its serialised
//! size, so a JSON-LD `@context` term or an RDFa prefix mapped to a megabyte
//! IRI costs a megabyte per use, not one count: issue #36); one JSON-LD block, one
//! literal, the open elements tracked, the itemref ids and the values
//! collected per page are each capped, and every step is linear in the page
//! (a property's text is appended to at most [`MAX_OPEN_TEXTS`] open values).

pub mod jsonld;
pub mod microdata;
pub mod rdfa;

use lol_html::StartTag;
use oxrdf::{BlankNode, Literal, NamedNode, NamedOrBlankNode, Term, Triple};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::rc::Rc;
use url::Url;

/// Elements tracked at once (deeper ones pass their parent's context on).
const MAX_FRAMES: usize = 256;
/// Values whose text is being collected at once; text nested deeper than this
/// is not appended to the outer values (a hostile page nesting 10 000
/// `itemprop` elements costs 16 copies of its text, not 10 000).
pub const MAX_OPEN_TEXTS: usize = 16;
/// Characters of one literal collected from text content.
const MAX_LITERAL_BYTES: usize = 64 * 1024;
/// Bytes of text collected per page for literals.
const MAX_TEXT_BYTES: usize = 8 << 20;

/// The syntaxes read from a page, and the cap on what it may yield.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructuredOptions {
    pub json_ld: bool,
    pub microdata: bool,
    pub rdfa: bool,
    pub microformats: bool,
    /// Statements (and microformats items) kept per page.
    pub max_statements: usize,
    /// Bytes of the page's statements as N-Quads (graph = the page URL) kept.
    pub max_bytes: u64,
}

impl StructuredOptions {
    /// Every syntax, with the default cap.
    pub fn all() -> Self {
        StructuredOptions {
            json_ld: true,
            microdata: true,
            rdfa: true,
            microformats: true,
            max_statements: DEFAULT_MAX_STATEMENTS,
            max_bytes: DEFAULT_MAX_STATEMENT_BYTES,
        }
    }

    /// Whether any syntax is read at all.
    pub fn any(&self) -> bool {
        self.json_ld || self.microdata || self.rdfa || self.microformats
    }
}

/// Default of `[targets] max_statements`.
pub const DEFAULT_MAX_STATEMENTS: usize = 10_000;

/// Default of `[targets] max_statement_bytes`: N-Quads bytes kept per page
/// (here) and per RDF document (`rdf::RdfLimits`). 10 000 statements of a
/// real page take about 1.5 MB; 64 MiB leaves room for any honest page and
/// keeps a hostile one to a fraction of the memory of a crawler.
pub const DEFAULT_MAX_STATEMENT_BYTES: u64 = 64 << 20;

/// What one page held, per syntax.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyntaxCounts {
    pub json_ld: u64,
    pub microdata: u64,
    pub rdfa: u64,
    /// Microformats2 items (elements with an `h-*` root class); not RDF.
    pub microformats: u64,
}

impl SyntaxCounts {
    /// Statements and microformats items together: what `min_statements` is compared with.
    pub fn total(&self) -> u64 {
        self.json_ld + self.microdata + self.rdfa + self.microformats
    }
}

/// Which syntax a statement came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    JsonLd,
    Microdata,
    Rdfa,
}

/// The structured data of one page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StructuredData {
    /// RDF statements in the order they were completed.
    pub triples: Vec<Triple>,
    pub counts: SyntaxCounts,
    /// JSON-LD blocks that were not valid JSON or JSON-LD (their good
    /// statements, if any, are kept).
    pub json_ld_invalid: u64,
    /// The first JSON-LD error, for the log.
    pub first_error: Option<String>,
    /// Set when a cap dropped statements.
    pub cut: bool,
    /// Set when the cap that did is [`StructuredOptions::max_bytes`].
    pub over_bytes: bool,
    /// Bytes of [`StructuredData::to_nquads`] for the page's URL, at most
    /// (counted statement by statement).
    pub bytes: u64,
}

impl StructuredData {
    /// The statements as N-Quads lines in the graph `graph` (the page URL).
    pub fn to_nquads(&self, graph: &str) -> String {
        let graph = NamedNode::new_unchecked(graph);
        let mut out = String::with_capacity(usize::try_from(self.bytes).unwrap_or(0));
        for t in &self.triples {
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{} {} {} {graph} .", t.subject, t.predicate, t.object);
        }
        out
    }
}

/// Statements gathered so far, under the page's caps.
pub(crate) struct Sink {
    pub(crate) max: usize,
    pub(crate) max_bytes: u64,
    /// What each line's graph (the page URL) adds.
    pub(crate) graph_bytes: u64,
    pub(crate) data: StructuredData,
    /// A page's statements form a set (RDF graphs do): a repeated one counts
    /// once. Two hashes per statement, not a copy of it: a copy would double
    /// what the byte budget lets a page hold.
    seen: HashSet<(u64, u64)>,
}

impl Sink {
    fn new(max: usize, max_bytes: u64, page: &Url) -> Self {
        Sink {
            max,
            max_bytes,
            graph_bytes: page.as_str().len() as u64 + 3,
            data: StructuredData::default(),
            seen: HashSet::new(),
        }
    }

    /// Room for one more statement or item; sets `cut` when there is none.
    pub(crate) fn has_room(&mut self) -> bool {
        let used = self.data.triples.len() as u64 + self.data.counts.microformats;
        if used >= self.max as u64 || self.data.over_bytes {
            self.data.cut = true;
            return false;
        }
        true
    }

    /// Whether `bytes` more fit in the byte budget; when they do not, the
    /// page is cut there (nothing after it is kept, so that what is kept is
    /// a prefix of the page's statements, as with the count).
    pub(crate) fn fits(&mut self, bytes: u64) -> bool {
        if self.data.bytes.saturating_add(bytes) > self.max_bytes {
            self.data.cut = true;
            self.data.over_bytes = true;
            return false;
        }
        true
    }

    pub(crate) fn push(&mut self, syntax: Syntax, s: NamedOrBlankNode, p: NamedNode, o: Term) {
        if !self.has_room() {
            return;
        }
        let triple = Triple::new(s, p, o);
        let fingerprint = fingerprint(&triple);
        if self.seen.contains(&fingerprint) {
            return;
        }
        let size = triple_bytes(&triple) + self.graph_bytes;
        if !self.fits(size) {
            return;
        }
        self.seen.insert(fingerprint);
        self.data.bytes += size;
        match syntax {
            Syntax::JsonLd => self.data.counts.json_ld += 1,
            Syntax::Microdata => self.data.counts.microdata += 1,
            Syntax::Rdfa => self.data.counts.rdfa += 1,
        }
        self.data.triples.push(triple);
    }
}

/// Two independent 64-bit hashes of a statement.
fn fingerprint(statement: &impl std::hash::Hash) -> (u64, u64) {
    use std::hash::Hasher;
    let hash = |salt: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(&salt, &mut h);
        statement.hash(&mut h);
        h.finish()
    };
    (hash(1), hash(2))
}

/// The bytes of a triple's N-Quads line without its graph, at most.
pub(crate) fn triple_bytes(t: &Triple) -> u64 {
    statement_bytes(&t.subject, &t.predicate, &t.object)
}

/// The bytes of a statement's N-Quads line without its graph, at most:
/// what its line will cost, known before it is built.
pub fn statement_bytes(s: &NamedOrBlankNode, p: &NamedNode, o: &Term) -> u64 {
    let subject = match s {
        NamedOrBlankNode::NamedNode(n) => n.as_str().len() as u64 + 2,
        NamedOrBlankNode::BlankNode(b) => b.as_str().len() as u64 + 2,
    };
    // Three spaces, then " .\n".
    subject + p.as_str().len() as u64 + 2 + term_bytes(o) + 3 + 3
}

/// The serialised size of a term in N-Triples/N-Quads, at most (escapes
/// counted at their longest), known without serialising it.
pub fn term_bytes(term: &Term) -> u64 {
    match term {
        Term::NamedNode(n) => n.as_str().len() as u64 + 2,
        Term::BlankNode(b) => b.as_str().len() as u64 + 2,
        Term::Literal(l) => {
            // Quotes, then `@lang` or `^^<datatype>`: both counted, an upper bound.
            escaped_bytes(l.value())
                + 2
                + l.language().map_or(0, |t| t.len() as u64 + 1)
                + l.datatype().as_str().len() as u64
                + 4
        }
        #[allow(unreachable_patterns)]
        other => other.to_string().len() as u64,
    }
}

/// A literal's value once escaped, at most (`\"`, `\n`…: two bytes; other
/// control characters as `\uXXXX`: six).
fn escaped_bytes(value: &str) -> u64 {
    value
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0C => 2u64,
            0..=0x1F | 0x7F => 6,
            _ => 1,
        })
        .sum()
}

/// One element the collector follows until its end tag.
#[derive(Default)]
struct Frame {
    id: u64,
    /// `<template>` or `<noscript>`: nothing inside counts.
    suppress: bool,
    json_ld: bool,
    md: microdata::FrameState,
    rdfa: Option<rdfa::Context>,
    /// The element's `lang`, kept for its descendants' literals.
    lang: Option<Language>,
    /// Index in `texts` of the value this element's text goes to.
    text: Option<usize>,
}

/// A value whose text content is being collected.
pub(crate) struct OpenText {
    pub(crate) text: String,
    /// Who gets it when the element ends.
    pub(crate) owner: TextOwner,
}

#[derive(Clone, Copy)]
pub(crate) enum TextOwner {
    Microdata(usize),
    Rdfa(usize),
}

/// Follows a page's elements and text; see the module documentation.
pub struct Collector {
    opts: StructuredOptions,
    base: Url,
    frames: Vec<Frame>,
    next_id: u64,
    /// Depth of `<template>`/`<noscript>` frames open.
    suppressed: usize,
    json_ld_open: bool,
    json_ld_buf: String,
    json_ld_over: bool,
    texts: Vec<OpenText>,
    text_bytes: usize,
    sink: Sink,
    md: microdata::Items,
    rdfa: rdfa::Pending,
    /// The language of the element being processed (its own `lang`, else
    /// its nearest ancestor's), for the literals it yields.
    lang: Option<Rc<str>>,
}

/// A `lang` attribute as declared: `None` inside means `lang=""` (no language).
#[derive(Clone)]
struct Language(Option<Rc<str>>);

/// The element just seen asks for its end tag: call [`Collector::on_end`] with this id.
pub type FrameId = u64;

impl Collector {
    pub fn new(page: &Url, opts: &StructuredOptions) -> Self {
        Collector {
            opts: opts.clone(),
            base: page.clone(),
            frames: Vec::with_capacity(16),
            next_id: 0,
            suppressed: 0,
            json_ld_open: false,
            json_ld_buf: String::new(),
            json_ld_over: false,
            texts: Vec::new(),
            text_bytes: 0,
            sink: Sink::new(opts.max_statements, opts.max_bytes, page),
            md: microdata::Items::default(),
            rdfa: rdfa::Pending::default(),
            lang: None,
        }
    }

    /// The base URL changed (`<base href>`).
    pub fn set_base(&mut self, base: &Url) {
        self.base = base.clone();
    }

    /// Whether text chunks are wanted now (a value or a JSON-LD block is open).
    pub fn wants_text(&self) -> bool {
        self.suppressed == 0 && (self.json_ld_open || !self.texts.is_empty())
    }

    /// An element started that may carry structured data in any syntax
    /// (`extract::links` filters: `template`, `noscript`, `script[type]` and
    /// elements with one of the attributes the syntaxes read, or an `h-`
    /// class). `name`: its tag name, lower case. Returns an id when its end
    /// must be reported; `has_end` says whether it can have one.
    pub fn on_element(&mut self, el: &StartTag<'_>, name: &str, has_end: bool) -> Option<FrameId> {
        if matches!(name, "template" | "noscript") {
            if !has_end {
                return None;
            }
            self.suppressed += 1;
            return self.push(Frame {
                suppress: true,
                ..Frame::default()
            });
        }
        if self.suppressed > 0 {
            return None;
        }
        let mut frame = Frame::default();
        if self.opts.microdata || self.opts.rdfa {
            frame.lang = attr(el, "lang").map(|l| {
                let l = l.trim_matches(is_html_whitespace);
                Language((!l.is_empty()).then(|| Rc::from(l)))
            });
            self.lang = match &frame.lang {
                Some(Language(own)) => own.clone(),
                None => self.inherited_lang(),
            };
        }
        if self.opts.json_ld && name == "script" {
            if has_end && !self.json_ld_open && jsonld::is_json_ld(el) {
                self.json_ld_open = true;
                self.json_ld_buf.clear();
                self.json_ld_over = false;
                frame.json_ld = true;
                return self.push(frame);
            }
            return None;
        }
        if self.opts.microformats && microformats_root(el) && self.sink.has_room() {
            self.sink.data.counts.microformats += 1;
        }
        if self.opts.microdata {
            let can_track = has_end && self.frames.len() < MAX_FRAMES;
            let text = microdata::on_element(self, el, name, can_track, &mut frame.md);
            if let Some(owner) = text {
                frame.text = self.open_text(owner);
            }
        }
        if self.opts.rdfa {
            let trackable = has_end && self.frames.len() < MAX_FRAMES;
            // A void element (`<meta property content>`, `<link rel href>`)
            // has no children: its statements need no context or end tag.
            let (ctx, text) = rdfa::on_element(self, el, name, trackable);
            frame.rdfa = ctx;
            if let Some(owner) = text {
                // Both syntaxes on one element: two values, closed together.
                let index = self.open_text(owner);
                frame.text = frame.text.or(index);
            }
        }
        let tracked = frame.text.is_some()
            || frame.md.is_tracked()
            || frame.rdfa.is_some()
            || frame.json_ld
            || frame.lang.is_some();
        if tracked && has_end && self.frames.len() < MAX_FRAMES {
            self.push(frame)
        } else {
            // Not tracked: a value opened for it would never close.
            if let Some(i) = frame.text {
                self.close_text(i);
            }
            None
        }
    }

    fn push(&mut self, mut frame: Frame) -> Option<FrameId> {
        let id = self.next_id;
        self.next_id += 1;
        frame.id = id;
        self.frames.push(frame);
        Some(id)
    }

    fn open_text(&mut self, owner: TextOwner) -> Option<usize> {
        if self.texts.len() >= MAX_OPEN_TEXTS {
            // Deeper values get no text: an empty literal, still a statement.
            self.deliver_text(owner, String::new());
            return None;
        }
        self.texts.push(OpenText {
            text: String::new(),
            owner,
        });
        Some(self.texts.len() - 1)
    }

    fn close_text(&mut self, index: usize) {
        // Values close innermost first, so `index` is the last one.
        while self.texts.len() > index {
            if let Some(open) = self.texts.pop() {
                self.deliver_text(open.owner, open.text);
            }
        }
    }

    fn deliver_text(&mut self, owner: TextOwner, text: String) {
        match owner {
            TextOwner::Microdata(prop) => self.md.set_text(prop, text),
            TextOwner::Rdfa(pending) => {
                rdfa::complete(self, pending, text);
            }
        }
    }

    /// Text of the page (every chunk, in order).
    pub fn on_text(&mut self, text: &str) {
        if self.suppressed > 0 {
            return;
        }
        if self.json_ld_open {
            if self.json_ld_buf.len() + text.len() > jsonld::MAX_BLOCK_BYTES {
                self.json_ld_over = true;
            } else {
                self.json_ld_buf.push_str(text);
            }
            return;
        }
        if self.texts.is_empty() || self.text_bytes >= MAX_TEXT_BYTES {
            return;
        }
        for open in &mut self.texts {
            let room = MAX_LITERAL_BYTES.saturating_sub(open.text.len());
            let n = push_capped(&mut open.text, text, room);
            self.text_bytes += n;
        }
    }

    /// The element `id` ended (or an ancestor did): close it and everything above.
    pub fn on_end(&mut self, id: FrameId) {
        let Some(i) = self.frames.iter().rposition(|f| f.id == id) else {
            return;
        };
        while self.frames.len() > i {
            let Some(frame) = self.frames.pop() else {
                break;
            };
            self.close_frame(frame);
        }
    }

    fn close_frame(&mut self, frame: Frame) {
        if frame.suppress {
            self.suppressed = self.suppressed.saturating_sub(1);
            return;
        }
        if frame.json_ld {
            self.json_ld_open = false;
            let body = std::mem::take(&mut self.json_ld_buf);
            if self.json_ld_over {
                self.note_json_ld_error(format!(
                    "JSON-LD block over {} bytes, skipped",
                    jsonld::MAX_BLOCK_BYTES
                ));
            } else {
                let base = self.base.clone();
                jsonld::parse_block(self, &body, &base);
            }
        }
        if let Some(i) = frame.text {
            self.close_text(i);
        }
        // After its own text value, which may fill a slot of its lists.
        if let Some(ctx) = &frame.rdfa {
            rdfa::close(self, ctx);
        }
    }

    pub(crate) fn note_json_ld_error(&mut self, error: String) {
        self.sink.data.json_ld_invalid += 1;
        self.sink.data.first_error.get_or_insert(error);
    }

    /// Everything the page held; elements still open are closed first.
    pub fn finish(mut self) -> StructuredData {
        while let Some(frame) = self.frames.pop() {
            self.close_frame(frame);
        }
        let items = std::mem::take(&mut self.md);
        items.emit(&mut self.sink, &self.base);
        self.sink.data
    }

    /// The language the open elements declare (the innermost `lang`).
    fn inherited_lang(&self) -> Option<Rc<str>> {
        self.frames
            .iter()
            .rev()
            .find_map(|f| f.lang.as_ref())
            .and_then(|Language(l)| l.clone())
    }

    /// The frames open now, innermost last (for the syntaxes' context lookups).
    fn rdfa_context(&self) -> Option<&rdfa::Context> {
        self.frames.iter().rev().find_map(|f| f.rdfa.as_ref())
    }
}

/// An element with a microformats2 root class (`h-` and lower-case letters,
/// digits or hyphens, e.g. `h-entry`, `h-card`).
fn microformats_root(el: &StartTag<'_>) -> bool {
    let Some(class) = el.get_attribute("class") else {
        return false;
    };
    class.split(is_html_whitespace).any(|token| {
        token.strip_prefix("h-").is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
    })
}

pub(crate) fn is_html_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

/// Appends at most `max` bytes of `text` (cut on a character boundary).
fn push_capped(out: &mut String, text: &str, max: usize) -> usize {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
    end
}

/// An attribute value with its character references decoded.
pub(crate) fn attr(el: &StartTag<'_>, name: &str) -> Option<String> {
    let raw = el.get_attribute(name)?;
    Some(if raw.contains('&') {
        htmlize::unescape_attribute(&raw).into_owned()
    } else {
        raw
    })
}

/// `value` resolved against `base` as an absolute IRI, if it is one.
pub(crate) fn resolve_iri(base: &Url, value: &str) -> Option<NamedNode> {
    let value = value.trim_matches(is_html_whitespace);
    let url = base.join(value).ok()?;
    NamedNode::new(url.as_str()).ok()
}

/// A fresh blank node, unique across pages (the data file is one N-Quads stream).
pub(crate) fn blank() -> BlankNode {
    BlankNode::default()
}

/// A literal: typed when it has a datatype, else tagged with its language
/// when that is a well-formed BCP 47 tag, else simple.
pub(crate) fn literal(text: String, datatype: Option<NamedNode>, lang: Option<&str>) -> Term {
    match (datatype, lang) {
        (Some(dt), _) => Literal::new_typed_literal(text, dt).into(),
        (None, Some(lang)) => match Literal::new_language_tagged_literal(text.as_str(), lang) {
            Ok(tagged) => tagged.into(),
            Err(_) => Literal::new_simple_literal(text).into(),
        },
        (None, None) => Literal::new_simple_literal(text).into(),
    }
}

#[cfg(test)]
mod tests;
