//! [`StartTag`]: a start tag's name and attributes read from the body's own
//! bytes; and the helpers for what they hold (anchor text, attribute
//! decoding, structured-data hints, meta refresh targets).

use super::MAX_ANCHOR_CHARS;
use lol_html::StartTag as LolStartTag;
use std::borrow::Cow;

// Only linked to by the docs below.
#[cfg(doc)]
use crate::extract::structured::Collector;

/// A start tag's name and attributes, read from the page's own bytes when
/// the whole body is in hand (`source`, which lol_html's source offsets
/// index). lol_html's accessors return a new `String` for every name and
/// value read, and each lookup, even a miss, allocates a lower-cased copy of
/// the name asked for: that was a fifth of extraction's CPU. Only ASCII bytes
/// are read in place; anything else goes through lol_html, which decodes it
/// in the page's encoding. Every encoding lol_html accepts is
/// ASCII-compatible, so both paths return the same strings (the
/// `source_and_streaming_agree` property test holds them to it).
pub(super) struct StartTag<'e, 't, 's> {
    pub(super) el: &'e LolStartTag<'t>,
    pub(super) source: Option<&'s [u8]>,
}

impl<'s> StartTag<'_, '_, 's> {
    /// The tag name, ASCII lower-cased (as `Element::tag_name`).
    pub(super) fn name(&self) -> Cow<'s, str> {
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
    pub(super) fn scan(&self, name: &str) -> ScannedAttributes<'s> {
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
    pub(super) fn may_carry_collected_data(&self, name: &str) -> bool {
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
    pub(super) fn attr(&self, name: &str) -> Option<Cow<'s, str>> {
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
pub(super) struct ScannedAttributes<'s> {
    pub(super) class: Option<Cow<'s, str>>,
    pub(super) id: Option<Cow<'s, str>>,
    pub(super) href: Option<Cow<'s, str>>,
    pub(super) structured_hint: bool,
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
pub(super) fn anchor_text(raw: &str) -> String {
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
pub(super) fn decode_attribute(raw: &str) -> std::borrow::Cow<'_, str> {
    if raw.contains('&') {
        htmlize::unescape_attribute(raw)
    } else {
        std::borrow::Cow::Borrowed(raw)
    }
}

pub(super) fn is_html_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

/// Appends at most `max` bytes of `text` (cut on a character boundary);
/// returns the number of bytes appended.
pub(super) fn push_capped(out: &mut String, text: &str, max: usize) -> usize {
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
pub(super) fn has_structured_data(el: &LolStartTag<'_>, name: &str) -> bool {
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
pub(super) fn refresh_target(content: &str) -> Option<&str> {
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
