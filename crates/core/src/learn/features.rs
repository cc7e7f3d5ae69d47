//! Hashed URL features for the URL classifier (ARCHITECTURE.md § Crawl loop, LDCOC §4.2–4.3).
//!
//! A URL gives binary features with ids in a space of 2^22:
//! - every character 2-gram of the lower-cased URL (the sb-classifier's
//!   features) has its exact byte-pair code as id, in `0..2^16`: a pair has
//!   only 65 536 values, so hashing would only add collisions, and keeping
//!   them in a low range lets the model hold them in a small table that stays
//!   in cache (they are ~90 % of a URL's features);
//! - one more 2-gram, the last character with an end marker (`x$`, as
//!   fastText-style character n-grams mark word boundaries): beyond the
//!   paper. Without it nothing says where a URL *ends*: a trailing `/` or
//!   `.html` is lost among the other 2-grams, and `/node/8722` (a page) and
//!   `/node/8723` (a file, on the synthetic sites) differ in no position-free
//!   2-gram at all. Measured by replaying 18 crawls' labels (6 sites × 3
//!   seeds): online accuracy dense 96.5 → 97.2 %, deep 94.6 → 94.8 %,
//!   sklearn 99.0 → 99.2 %, the others within ±0.1;
//! - LDCOC's URL parts, lower-cased — scheme, host, each path segment, the
//!   extension of the last segment, each query key — and a bias feature (the
//!   intercept) are hashed with MurmurHash3, one seed per namespace (so the
//!   scheme `https` and a host `https` differ), into `2^16..2^22`.
//!
//! Features are binary (a repeated 2-gram counts once): FTRL's per-coordinate
//! learning rates assume it, and the sb-classifier paper found no gain in richer encodings.

use crate::hash::murmur3_32;
use std::borrow::Cow;
use url::{Position, Url};

/// log2 of the size of the feature space.
pub const FEATURE_BITS: u32 = 22;
/// Size of the feature space.
pub const FEATURE_SPACE: u32 = 1 << FEATURE_BITS;
/// Ids below this are character 2-grams: few, and read for every URL.
pub const HOT_FEATURES: u32 = 1 << 16;
/// Longest extension taken as one (`.tar.gz` gives `gz`; a dotted slug gives nothing).
const MAX_EXTENSION_LEN: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Namespace {
    Bias = 1,
    Bigram,
    Scheme,
    Host,
    Segment,
    Extension,
    QueryKey,
    // LDCOC's context features (`UrlFeatures::of_linked_data`).
    RefScheme,
    RefHost,
    RefSegment,
    RefExtension,
    RefQueryKey,
    Predicate,
    KnownType,
    // Anthelion's features (`UrlFeatures::of_anthelion`).
    Token,
    ParentRelevant,
    ParentNotRelevant,
    // sb's ranking of links within an action (`UrlFeatures::of_lead`).
    AnchorToken,
    RefToken,
    // The URL classifier's link context (`UrlFeatures::of_link`).
    TagElement,
    TagFromEnd,
}

impl Namespace {
    fn seed(self) -> u32 {
        // Distinct, well-spread seeds per namespace (golden-ratio multiples).
        (self as u32).wrapping_mul(0x9e37_79b1)
    }

    /// The name `forager explain` shows for a feature of this namespace.
    fn label(self) -> &'static str {
        match self {
            Namespace::Bias => "bias",
            Namespace::Bigram => "2-gram",
            Namespace::Scheme => "scheme",
            Namespace::Host => "host",
            Namespace::Segment => "segment",
            Namespace::Extension => "extension",
            Namespace::QueryKey => "query-key",
            Namespace::RefScheme => "referrer-scheme",
            Namespace::RefHost => "referrer-host",
            Namespace::RefSegment => "referrer-segment",
            Namespace::RefExtension => "referrer-extension",
            Namespace::RefQueryKey => "referrer-query-key",
            Namespace::Predicate => "predicate",
            Namespace::KnownType => "type",
            Namespace::Token => "token",
            Namespace::ParentRelevant => "parent-relevant",
            Namespace::ParentNotRelevant => "parent-not-relevant",
            Namespace::AnchorToken => "anchor",
            Namespace::RefToken => "referrer",
            Namespace::TagElement => "tag-element",
            Namespace::TagFromEnd => "tag-from-end",
        }
    }

    fn feature(self, bytes: &[u8]) -> u32 {
        if self == Namespace::Bigram {
            if let [a, b] = bytes {
                return bigram(*a, *b);
            }
        }
        hashed(bytes, self.seed())
    }
}

/// A hashed (not 2-gram) feature id: above the 2-grams.
fn hashed(bytes: &[u8], seed: u32) -> u32 {
    HOT_FEATURES + murmur3_32(bytes, seed) % (FEATURE_SPACE - HOT_FEATURES)
}

/// Second byte of the end-of-URL 2-gram: a serialised `Url` never holds a NUL
/// (control bytes are percent-encoded), so `(last, 0)` collides with no real pair.
const END_MARK: u8 = 0;

/// The id of a character 2-gram: its byte-pair code.
#[inline]
fn bigram(a: u8, b: u8) -> u32 {
    u32::from(a) << 8 | u32::from(b)
}

/// The features of one URL: unique ids in `0..2^22`, in extraction order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UrlFeatures {
    ids: Vec<u32>,
}

impl UrlFeatures {
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Features from raw ids (tests, other learners), deduplicated here.
    pub fn from_ids(ids: Vec<u32>) -> Self {
        let mut set = IdSet::with_room(ids.len());
        let ids = ids
            .into_iter()
            .map(|i| i % FEATURE_SPACE)
            .filter(|&i| set.insert(i))
            .collect();
        UrlFeatures { ids }
    }

    /// The features of `url`.
    pub fn of_url(url: &Url) -> Self {
        let room = url_id_room(url);
        let mut ids = Vec::with_capacity(room);
        // Deduplicating with a small hash set costs less than sorting ~80 ids.
        let mut set = IdSet::with_room(room);
        for_each_url_feature(url, |id| {
            if set.insert(id) {
                ids.push(id);
            }
        });
        UrlFeatures { ids }
    }

    /// The features of a link: those of its URL ([`UrlFeatures::of_url`]),
    /// then those of the tag path of the element that carried it
    /// ([`for_each_tag_path_feature`]; none for an empty path).
    pub fn of_link(url: &Url, tag_path: &str) -> Self {
        let room = url_id_room(url) + tag_path_id_room(tag_path);
        let mut ids = Vec::with_capacity(room);
        let mut set = IdSet::with_room(room);
        let mut push = |id| {
            if set.insert(id) {
                ids.push(id);
            }
        };
        for_each_url_feature(url, &mut push);
        for_each_tag_path_feature(tag_path, &mut push);
        UrlFeatures { ids }
    }
}

/// Elements at the end of a tag path that also give a feature with their
/// distance from the link: `a.file-icon` is the link itself, `span.file` its parent.
const TAG_FROM_END: usize = 4;

/// The ids a tag path gives at most: one per element, and [`TAG_FROM_END`] more.
pub(crate) fn tag_path_id_room(tag_path: &str) -> usize {
    tag_path.bytes().filter(|&b| b == b'/').count() + 1 + TAG_FROM_END
}

/// The features of the tag path of the element that carried a link (beyond
/// the paper), in this order: every element as written (tag, classes and
/// id: `span.file`, `a.reference download internal`) wherever it stands,
/// then the last [`TAG_FROM_END`] elements, each with its distance from the
/// end in its hash seed. Nothing for an empty path (a caller without one).
///
/// Why: the URL alone cannot tell a file from a page where both share a
/// URL family. On Drupal-like sites an attachment is `/node/8723` and a
/// page `/node/8722`; a crawl meets the attachments of a section before it
/// has seen any of them, and the URL's features, learnt from the pages of
/// that family, call them pages (the synthetic `deep` site: ~300 such
/// mistakes per crawl). The markup that carries the link says it at once,
/// from the files of other families it carried before: `span.file/a.file-icon`,
/// a download button, an attachments table. Chosen by replaying the labels
/// of 5 crawls per site through variants of the classifier (anchor tokens,
/// the referrer, the whole path as one token, elements by distance alone
/// gained less; docs/bench/2026-11-28-session7-classifier.md). Measured with
/// `forager bench`, sb, 5 seeds, URL only → with the tag path: online
/// accuracy small 95.4 → 98.9 %, deep 94.9 → 99.7 %, sklearn and twisted
/// unchanged (99.0, 99.1); req@90 ÷ floor small 1.35 → 1.25, deep 1.15 →
/// 1.06, sklearn 1.07 → 1.07, twisted 1.49 → 1.50 (± 0.09).
pub(crate) fn for_each_tag_path_feature(tag_path: &str, mut push: impl FnMut(u32)) {
    let elements = || tag_path.split('/').filter(|e| !e.is_empty());
    for element in elements() {
        push(Namespace::TagElement.feature(element.as_bytes()));
    }
    let seed = Namespace::TagFromEnd.seed();
    for (distance, element) in elements().rev().take(TAG_FROM_END).enumerate() {
        // One seed per distance: `0:a` and `1:a` differ without building a string.
        push(hashed(
            element.as_bytes(),
            seed.wrapping_add(distance as u32 + 1),
        ));
    }
}

/// Every feature id of `url` in extraction order, a repeated one as often as
/// it occurs ([`UrlFeatures::of_url`] keeps the first of each). Predicting
/// streams these instead of collecting them: no allocation per link when the
/// URL is lower-case already (nearly always), no set of every id.
pub(crate) fn for_each_url_feature(url: &Url, mut push: impl FnMut(u32)) {
    let full = url.as_str();
    let lower: Cow<'_, [u8]> = if full.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(full.bytes().map(|b| b.to_ascii_lowercase()).collect())
    } else {
        Cow::Borrowed(full.as_bytes())
    };
    let lower: &[u8] = &lower;
    push(Namespace::Bias.feature(b""));
    for gram in lower.windows(2) {
        push(bigram(gram[0], gram[1]));
    }
    if let Some(&last) = lower.last() {
        push(bigram(last, END_MARK));
    }
    // Url positions index its ASCII serialisation, so they index `lower` too.
    let part = |from: Position, to: Position| &lower[range(url, from, to)];
    push(Namespace::Scheme.feature(part(Position::BeforeScheme, Position::AfterScheme)));
    let host = part(Position::BeforeHost, Position::AfterHost);
    if !host.is_empty() {
        push(Namespace::Host.feature(host));
    }
    let path = part(Position::BeforePath, Position::AfterPath);
    let mut last_segment: &[u8] = b"";
    for segment in path.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
        push(Namespace::Segment.feature(segment));
        last_segment = segment;
    }
    if let Some(ext) = extension(last_segment) {
        push(Namespace::Extension.feature(ext));
    }
    let query = part(Position::BeforeQuery, Position::AfterQuery);
    for pair in query.split(|&b| b == b'&') {
        let key = pair.split(|&b| b == b'=').next().unwrap_or(b"");
        if !key.is_empty() {
            push(Namespace::QueryKey.feature(key));
        }
    }
}

/// The id [`for_each_url_feature`] gives the extension of `url`'s last
/// non-empty path segment (`py` for `/_downloads/3c08/plot_face.py`);
/// `None` when that segment has none. Lets the URL classifier ask whether
/// it has learnt from any link of that extension
/// ([`super::classifier::UrlClassifier::is_unfamiliar`]).
pub(crate) fn extension_feature(url: &Url) -> Option<u32> {
    let last = url.path().split('/').rfind(|s| !s.is_empty())?;
    let ext = extension(last.as_bytes())?;
    // At most MAX_EXTENSION_LEN bytes: lower-cased on the stack, as the
    // features of the lower-cased URL are.
    let mut lower = [0u8; MAX_EXTENSION_LEN];
    let lower = &mut lower[..ext.len()];
    lower.copy_from_slice(ext);
    lower.make_ascii_lowercase();
    Some(Namespace::Extension.feature(lower))
}

/// The context of a link found in linked data, for LDCOC's feature set
/// F+t+r+p (paper §4.3, its best): the URL's intrinsic parts, its type when
/// the MIME filters know it, the referring document's intrinsic parts, and
/// the predicates that led to it.
#[derive(Clone, Copy, Debug)]
pub struct LinkContext<'a> {
    pub url: &'a Url,
    /// The MIME family or label the filters know for the URL (`t`).
    pub known_type: Option<&'a str>,
    pub referrer: Option<&'a Url>,
    /// Predicate IRIs (`p`).
    pub predicates: &'a [&'a str],
}

impl UrlFeatures {
    /// LDCOC's features of a link (no character 2-grams: the paper's
    /// intrinsic features are the URL's parts). Namespaces keep a host
    /// of the link and the same host of the referrer apart.
    pub fn of_linked_data(ctx: LinkContext<'_>) -> UrlFeatures {
        let mut ids = Vec::with_capacity(24);
        let mut set = IdSet::with_room(24 + ctx.predicates.len());
        linked_data_parts(ctx, &mut |ns, bytes| {
            let id = ns.feature(bytes);
            if set.insert(id) {
                ids.push(id);
            }
        });
        UrlFeatures { ids }
    }

    /// The features of [`UrlFeatures::of_linked_data`] with readable names
    /// (`host=lod001.test`, `predicate=http://…#sameAs`), for `forager
    /// explain`: ids are hashes, so a name can only be kept, not recovered.
    pub fn linked_data_names(ctx: LinkContext<'_>) -> Vec<(u32, String)> {
        let mut out: Vec<(u32, String)> = Vec::with_capacity(24);
        linked_data_parts(ctx, &mut |ns, bytes| {
            let id = ns.feature(bytes);
            if !out.iter().any(|(i, _)| *i == id) {
                out.push((
                    id,
                    format!("{}={}", ns.label(), String::from_utf8_lossy(bytes)),
                ));
            }
        });
        out
    }
}

/// The parts of a link LDCOC learns from, each with its namespace, in order.
fn linked_data_parts(ctx: LinkContext<'_>, push: &mut impl FnMut(Namespace, &[u8])) {
    push(Namespace::Bias, b"");
    let own = [
        Namespace::Scheme,
        Namespace::Host,
        Namespace::Segment,
        Namespace::Extension,
        Namespace::QueryKey,
    ];
    url_parts(ctx.url, own, push);
    if let Some(r) = ctx.referrer {
        let theirs = [
            Namespace::RefScheme,
            Namespace::RefHost,
            Namespace::RefSegment,
            Namespace::RefExtension,
            Namespace::RefQueryKey,
        ];
        url_parts(r, theirs, push);
    }
    if let Some(t) = ctx.known_type {
        push(Namespace::KnownType, t.as_bytes());
    }
    for p in ctx.predicates {
        push(Namespace::Predicate, p.as_bytes());
    }
}

/// Scheme, host, path segments, last extension and query keys of `url`,
/// lower-cased, in the given namespaces (in that order).
fn url_parts(url: &Url, ns: [Namespace; 5], push: &mut impl FnMut(Namespace, &[u8])) {
    let [scheme, host_ns, segment_ns, ext_ns, query_ns] = ns;
    push(scheme, url.scheme().as_bytes());
    if let Some(host) = url.host_str() {
        push(host_ns, host.to_ascii_lowercase().as_bytes());
    }
    let path = url.path().to_ascii_lowercase();
    let mut last: &[u8] = b"";
    for segment in path
        .as_bytes()
        .split(|&b| b == b'/')
        .filter(|s| !s.is_empty())
    {
        push(segment_ns, segment);
        last = segment;
    }
    if let Some(ext) = extension(last) {
        push(ext_ns, ext);
    }
    if let Some(query) = url.query() {
        for pair in query.split('&') {
            let key = pair.split('=').next().unwrap_or("");
            if !key.is_empty() {
                push(query_ns, key.to_ascii_lowercase().as_bytes());
            }
        }
    }
}

/// An empty slot of an id set: not a feature id (ids are below [`FEATURE_SPACE`]).
pub(crate) const NO_ID: u32 = u32::MAX;

/// A set of feature ids for one extraction (open addressing, load ≤ 1/2).
struct IdSet {
    slots: Vec<u32>,
}

impl IdSet {
    const EMPTY: u32 = NO_ID;

    fn with_room(items: usize) -> Self {
        IdSet {
            slots: vec![Self::EMPTY; id_set_slots(items)],
        }
    }

    /// True when `id` was not in the set yet.
    fn insert(&mut self, id: u32) -> bool {
        insert_id(&mut self.slots, id)
    }
}

/// The ids `url`'s features usually give: a 2-gram per byte and a few parts.
/// A URL of many one-byte segments or query keys gives up to half as many
/// again (one per two bytes), which a set of [`id_set_slots`] of this still
/// holds below full.
pub(crate) fn url_id_room(url: &Url) -> usize {
    url.as_str().len() + 12
}

/// Slots of an id set for `items` ids: a power of two, at least twice as
/// many (load ≤ 1/2, so a probe never runs long and never finds it full).
pub(crate) fn id_set_slots(items: usize) -> usize {
    (items * 2).next_power_of_two().max(16)
}

/// Insert `id` into an open-addressed set of [`NO_ID`]-initialised
/// `slots` (a power of two in length, kept at most half full by the caller);
/// true when `id` was not in it yet.
pub(crate) fn insert_id(slots: &mut [u32], id: u32) -> bool {
    debug_assert!(slots.len().is_power_of_two() && id != IdSet::EMPTY);
    let mask = slots.len() - 1;
    let mut i = (id.wrapping_mul(0x9e37_79b1) >> 7) as usize & mask;
    loop {
        match slots[i] {
            s if s == id => return false,
            IdSet::EMPTY => {
                slots[i] = id;
                return true;
            }
            _ => i = (i + 1) & mask,
        }
    }
}

/// The byte range of `url`'s serialisation between two positions.
fn range(url: &Url, from: Position, to: Position) -> std::ops::Range<usize> {
    let full = url.as_str();
    let whole = &url[from..to];
    // Slicing by Position returns a substring of the serialisation: recover its offset.
    let start = whole.as_ptr() as usize - full.as_ptr() as usize;
    start..start + whole.len()
}

/// `csv` for `data.csv`; `None` without a short alphanumeric extension.
fn extension(segment: &[u8]) -> Option<&[u8]> {
    let dot = segment.iter().rposition(|&b| b == b'.')?;
    let ext = &segment[dot + 1..];
    (dot > 0
        && !ext.is_empty()
        && ext.len() <= MAX_EXTENSION_LEN
        && ext.iter().all(u8::is_ascii_alphanumeric))
    .then_some(ext)
}

/// What Anthelion's classifier knows of the page a link was found on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParentRelevance {
    Relevant,
    NotRelevant,
    /// A seed, or a parent whose relevance is no longer remembered.
    Unknown,
}

/// The one token every number of a URL becomes (Anthelion: `/page/17` and
/// `/page/18` say the same thing).
const NUMBER_TOKEN: &str = "#num";
/// Tokens shorter than this are dropped (Anthelion's rule: `id`, `en`, `p`
/// carry noise rather than meaning).
const MIN_TOKEN_LEN: usize = 3;

/// Anthelion's URL tokens: the lower-cased URL split on every
/// non-alphanumeric character, tokens under 3 characters dropped, a token of
/// digits only replaced by one number token. Duplicates are kept here (the
/// features deduplicate). The short-token rule comes first, so `12` is dropped
/// and `2014` becomes the number token.
pub fn anthelion_tokens(url: &Url) -> Vec<String> {
    url.as_str()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| t.len() >= MIN_TOKEN_LEN)
        .map(|t| {
            if t.bytes().all(|b| b.is_ascii_digit()) {
                NUMBER_TOKEN.to_string()
            } else {
                t.to_ascii_lowercase()
            }
        })
        .collect()
}

impl UrlFeatures {
    /// Anthelion's link features (Meusel et al., CIKM 2014, §4): the hashed
    /// URL tokens of [`anthelion_tokens`], one flag for a relevant parent or
    /// one for a parent that was not (each set at most once: the reference
    /// code sets the "not relevant" one twice, which doubles its weight's
    /// step size for no reason), and a bias feature — a departure: the
    /// paper's classifier has no intercept, but FTRL without one has to learn
    /// the base rate in every token's weight.
    pub fn of_anthelion(url: &Url, parent: ParentRelevance) -> UrlFeatures {
        let mut ids = vec![Namespace::Bias.feature(b"")];
        ids.extend(
            anthelion_tokens(url)
                .iter()
                .map(|t| Namespace::Token.feature(t.as_bytes())),
        );
        match parent {
            ParentRelevance::Relevant => ids.push(Namespace::ParentRelevant.feature(b"")),
            ParentRelevance::NotRelevant => ids.push(Namespace::ParentNotRelevant.feature(b"")),
            ParentRelevance::Unknown => {}
        }
        UrlFeatures::from_ids(ids)
    }

    /// The id of Anthelion's parent flag (tests, explain).
    pub fn anthelion_parent_flag(relevant: bool) -> u32 {
        if relevant {
            Namespace::ParentRelevant.feature(b"")
        } else {
            Namespace::ParentNotRelevant.feature(b"")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(u: &str) -> UrlFeatures {
        UrlFeatures::of_url(&Url::parse(u).unwrap())
    }

    fn has(f: &UrlFeatures, ns: Namespace, bytes: &[u8]) -> bool {
        f.ids().contains(&ns.feature(bytes))
    }

    #[test]
    fn linked_data_features_keep_link_and_referrer_apart() {
        let url = Url::parse("http://data.test/id/Paris.ttl?x=1").unwrap();
        let referrer = Url::parse("http://data.test/doc/france").unwrap();
        let f = UrlFeatures::of_linked_data(LinkContext {
            url: &url,
            known_type: Some("rdf"),
            referrer: Some(&referrer),
            predicates: &["http://www.w3.org/2002/07/owl#sameAs"],
        });
        assert!(has(&f, Namespace::Host, b"data.test"));
        assert!(has(&f, Namespace::RefHost, b"data.test"));
        assert!(has(&f, Namespace::Segment, b"paris.ttl"));
        assert!(has(&f, Namespace::Extension, b"ttl"));
        assert!(has(&f, Namespace::RefSegment, b"france"));
        assert!(has(&f, Namespace::QueryKey, b"x"));
        assert!(has(&f, Namespace::KnownType, b"rdf"));
        assert!(has(
            &f,
            Namespace::Predicate,
            b"http://www.w3.org/2002/07/owl#sameAs"
        ));
        assert!(!has(&f, Namespace::Bigram, b"ht"), "no 2-grams");
        let alone = UrlFeatures::of_linked_data(LinkContext {
            url: &url,
            known_type: None,
            referrer: None,
            predicates: &[],
        });
        assert!(alone.len() < f.len());
        // The named features are the same ids, in the same order.
        let named = UrlFeatures::linked_data_names(LinkContext {
            url: &url,
            known_type: Some("rdf"),
            referrer: Some(&referrer),
            predicates: &["http://www.w3.org/2002/07/owl#sameAs"],
        });
        let ids: Vec<u32> = named.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, f.ids());
        let names: Vec<&str> = named.iter().map(|(_, n)| n.as_str()).collect();
        assert!(names.contains(&"referrer-segment=france"), "{names:?}");
        assert!(names.contains(&"predicate=http://www.w3.org/2002/07/owl#sameAs"));
    }

    #[test]
    fn parts_and_bigrams_are_present() {
        let f = features("HTTPS://Data.Example.org:8443/Stats/2024/Table.CSV?Year=1&fmt#frag");
        assert!(has(&f, Namespace::Bias, b""));
        assert!(has(&f, Namespace::Scheme, b"https"));
        assert!(has(&f, Namespace::Host, b"data.example.org"));
        assert!(has(&f, Namespace::Segment, b"stats"));
        assert!(has(&f, Namespace::Segment, b"2024"));
        assert!(has(&f, Namespace::Segment, b"table.csv"));
        assert!(has(&f, Namespace::Extension, b"csv"));
        assert!(has(&f, Namespace::QueryKey, b"year"));
        assert!(has(&f, Namespace::QueryKey, b"fmt"));
        assert!(has(&f, Namespace::Bigram, b"cs"));
        assert!(has(&f, Namespace::Bigram, b"ht"));
        // Namespaces keep equal strings apart.
        assert!(!has(&f, Namespace::Host, b"https"));
        let unique: std::collections::HashSet<u32> = f.ids().iter().copied().collect();
        assert_eq!(unique.len(), f.len(), "unique");
        assert!(f.ids().iter().all(|&i| i < FEATURE_SPACE));
        // 2-grams are their byte-pair codes; everything else is above them.
        assert!(f.ids().contains(&(u32::from(b'c') << 8 | u32::from(b's'))));
        assert!(has(&f, Namespace::Bias, b"") && Namespace::Bias.feature(b"") >= HOT_FEATURES);
    }

    #[test]
    fn the_last_character_is_marked() {
        let end = |u: &str, c: u8| features(u).ids().contains(&bigram(c, END_MARK));
        assert!(end("https://a.org/node/8723", b'3'));
        assert!(!end("https://a.org/node/8723", b'2'));
        assert!(end("https://a.org/node/8722", b'2'));
        assert!(end("https://a.org/Docs/", b'/'));
        // Only the end is marked, not every occurrence of the character.
        assert!(!end("https://a.org/node/3/x", b'3'));
        // A one-character path: its own 2-gram, and the same character marked as the end.
        let f = features("https://a.org/b");
        assert!(f.ids().contains(&bigram(b'/', b'b')));
        assert!(f.ids().contains(&bigram(b'b', END_MARK)));
    }

    #[test]
    fn tag_paths_give_their_elements_anywhere_and_the_last_ones_by_distance() {
        let url = Url::parse("https://a.org/node/8723").unwrap();
        let path = "/html/body.page-x/div#main/table.files/tbody/tr/td/span.file/a.file-icon";
        let f = UrlFeatures::of_link(&url, path);
        let of_url = features("https://a.org/node/8723");
        assert_eq!(&f.ids()[..of_url.len()], of_url.ids(), "the URL's first");
        let mut tag = Vec::new();
        for_each_tag_path_feature(path, |id| tag.push(id));
        assert_eq!(&f.ids()[of_url.len()..], &tag[..]);
        // 9 elements, the last 4 again by distance.
        assert_eq!(tag.len(), 9 + TAG_FROM_END);
        assert!(tag.len() <= tag_path_id_room(path));
        for element in [
            "html",
            "body.page-x",
            "div#main",
            "span.file",
            "a.file-icon",
        ] {
            assert!(
                has(&f, Namespace::TagElement, element.as_bytes()),
                "{element}"
            );
        }
        let seed = Namespace::TagFromEnd.seed();
        let at = |distance: u32, element: &str| {
            hashed(element.as_bytes(), seed.wrapping_add(distance + 1))
        };
        assert!(tag.contains(&at(0, "a.file-icon")));
        assert!(tag.contains(&at(1, "span.file")));
        assert!(tag.contains(&at(3, "tr")));
        assert!(
            !tag.contains(&at(4, "tbody")),
            "only the last {TAG_FROM_END}"
        );
        assert!(!tag.contains(&at(1, "a.file-icon")), "the distance counts");
        // The same element elsewhere is the same position-free feature.
        let mut other = Vec::new();
        for_each_tag_path_feature("/html/body/span.file/p/a", |id| other.push(id));
        assert!(other.contains(&Namespace::TagElement.feature(b"span.file")));
        assert!(!other.contains(&at(1, "span.file")));
        // No tag path, no features: the URL's alone.
        assert_eq!(UrlFeatures::of_link(&url, ""), of_url);
        let unique: std::collections::HashSet<u32> = f.ids().iter().copied().collect();
        assert_eq!(unique.len(), f.len(), "unique");
        assert!(f.ids().iter().all(|&i| i < FEATURE_SPACE));
    }

    #[test]
    fn the_extension_feature_is_the_one_the_url_features_hold() {
        for u in [
            "http://a.test/_downloads/3c08/plot_face.py",
            "http://a.test/data/File.CSV?x=1",
            "http://a.test/archive.tar.gz/",
        ] {
            let url = Url::parse(u).unwrap();
            let id = extension_feature(&url).unwrap();
            assert!(UrlFeatures::of_url(&url).ids().contains(&id), "{u}");
        }
        let csv = Url::parse("http://a.test/x/data.csv").unwrap();
        let upper = Url::parse("http://a.test/y/DATA.Csv").unwrap();
        assert_eq!(extension_feature(&csv), extension_feature(&upper));
        for u in [
            "http://a.test/",
            "http://a.test/node/8723",
            "http://a.test/events/",
        ] {
            assert_eq!(extension_feature(&Url::parse(u).unwrap()), None, "{u}");
        }
    }

    #[test]
    fn extensions_only_when_they_look_like_one() {
        assert_eq!(extension(b"file.csv"), Some(&b"csv"[..]));
        assert_eq!(extension(b"archive.tar.gz"), Some(&b"gz"[..]));
        assert_eq!(extension(b".hidden"), None);
        assert_eq!(extension(b"v1.2-release-notes"), None);
        assert_eq!(extension(b"page"), None);
        assert_eq!(extension(b"x.averyverylongext"), None);
    }

    #[test]
    fn repeated_bigrams_count_once_and_urls_differ() {
        let a = features("https://a.org/aaaa");
        let b = features("https://a.org/aaab");
        assert_ne!(a, b);
        assert_eq!(
            a.ids()
                .iter()
                .filter(|&&i| i == Namespace::Bigram.feature(b"aa"))
                .count(),
            1
        );
        let c = UrlFeatures::from_ids(vec![5, 3, 5, u32::MAX]);
        assert_eq!(c.ids(), &[5, 3, u32::MAX % FEATURE_SPACE]);
    }
    #[test]
    fn anthelion_tokens_split_drop_short_and_merge_numbers() {
        let url =
            Url::parse("https://Shop.example.org/en/p/Product-2014_12?id=7&colour=Red").unwrap();
        assert_eq!(
            anthelion_tokens(&url),
            vec!["https", "shop", "example", "org", "product", "#num", "colour", "red"]
        );
    }

    #[test]
    fn anthelion_parent_flags_are_set_once_and_exclusive() {
        let url = Url::parse("http://a.test/item/page").unwrap();
        let yes = UrlFeatures::anthelion_parent_flag(true);
        let no = UrlFeatures::anthelion_parent_flag(false);
        assert_ne!(yes, no);
        let count = |f: &UrlFeatures, id| f.ids().iter().filter(|&&i| i == id).count();
        let r = UrlFeatures::of_anthelion(&url, ParentRelevance::Relevant);
        let n = UrlFeatures::of_anthelion(&url, ParentRelevance::NotRelevant);
        let u = UrlFeatures::of_anthelion(&url, ParentRelevance::Unknown);
        assert_eq!((count(&r, yes), count(&r, no)), (1, 0));
        assert_eq!((count(&n, yes), count(&n, no)), (0, 1));
        assert_eq!((count(&u, yes), count(&u, no)), (0, 0));
        // bias + http, a.test → "test", item, page: the same tokens in all three.
        assert_eq!(u.len(), 5);
        assert_eq!(r.len(), 6);
        // Numbers are one token: two URLs differing only in a number have the same features.
        let a = Url::parse("http://a.test/item/1234").unwrap();
        let b = Url::parse("http://a.test/item/98765").unwrap();
        assert_eq!(
            UrlFeatures::of_anthelion(&a, ParentRelevance::Unknown),
            UrlFeatures::of_anthelion(&b, ParentRelevance::Unknown)
        );
    }
}

/// Most tokens taken from one anchor text (a long anchor is a paragraph, not a name).
const MAX_ANCHOR_TOKENS: usize = 12;

/// The tokens of a URL's path and query, as [`anthelion_tokens`] cuts
/// them, without the scheme and the host: what a link *says*, not where it
/// points, so that what is learnt on one site carries over to another.
fn path_tokens(url: &Url) -> impl Iterator<Item = Cow<'_, str>> {
    url[Position::BeforePath..Position::AfterQuery]
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| t.len() >= MIN_TOKEN_LEN)
        .map(token)
}

/// A token lower-cased, every number one token.
fn token(t: &str) -> Cow<'_, str> {
    if t.bytes().all(|b| b.is_ascii_digit()) {
        Cow::Borrowed(NUMBER_TOKEN)
    } else if t.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(t.to_ascii_lowercase())
    } else {
        Cow::Borrowed(t)
    }
}

/// The words of an anchor text: alphanumeric runs of at least 3 characters
/// (any script), lower-cased, numbers one token.
fn anchor_tokens(anchor: &str) -> impl Iterator<Item = Cow<'_, str>> {
    anchor
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.chars().count() >= MIN_TOKEN_LEN)
        .take(MAX_ANCHOR_TOKENS)
        .map(|t| {
            if t.chars().all(|c| c.is_ascii_digit()) {
                Cow::Borrowed(NUMBER_TOKEN)
            } else if t.chars().any(char::is_uppercase) {
                Cow::Owned(t.to_lowercase())
            } else {
                Cow::Borrowed(t)
            }
        })
}

/// The parts of a link sb's within-action ranking learns from, each with
/// its namespace: a bias, the tokens of the link's path and query, of its
/// anchor text and of the referring page's path and query. Hosts are left
/// out on purpose: the tokens are what a prior carries to other sites.
fn lead_parts(
    url: &Url,
    anchor: &str,
    referrer: Option<&Url>,
    push: &mut impl FnMut(Namespace, &str),
) {
    push(Namespace::Bias, "");
    for t in path_tokens(url) {
        push(Namespace::Token, &t);
    }
    for t in anchor_tokens(anchor) {
        push(Namespace::AnchorToken, &t);
    }
    if let Some(r) = referrer {
        for t in path_tokens(r) {
            push(Namespace::RefToken, &t);
        }
    }
}

impl UrlFeatures {
    /// The features of a link for sb's within-action ranking (does the page
    /// it leads to link targets?): see [`lead_parts`].
    pub fn of_lead(url: &Url, anchor: &str, referrer: Option<&Url>) -> UrlFeatures {
        let mut ids = Vec::with_capacity(24);
        let mut set = IdSet::with_room(32);
        lead_parts(url, anchor, referrer, &mut |ns, t| {
            let id = ns.feature(t.as_bytes());
            // A set sized for 32 ids holds 64 at most at load 1/2: cap there.
            if ids.len() < 32 && set.insert(id) {
                ids.push(id);
            }
        });
        UrlFeatures { ids }
    }

    /// The features of [`UrlFeatures::of_lead`] with readable names
    /// (`token=plotting`, `anchor=download`), for `forager explain`.
    pub fn lead_names(url: &Url, anchor: &str, referrer: Option<&Url>) -> Vec<(u32, String)> {
        let mut out: Vec<(u32, String)> = Vec::with_capacity(24);
        lead_parts(url, anchor, referrer, &mut |ns, t| {
            let id = ns.feature(t.as_bytes());
            if out.len() < 32 && !out.iter().any(|(i, _)| *i == id) {
                let name = if t.is_empty() {
                    ns.label().to_string()
                } else {
                    format!("{}={t}", ns.label())
                };
                out.push((id, name));
            }
        });
        out
    }
}

#[cfg(test)]
mod lead_tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn lead_features_ignore_the_host_and_number_values() {
        let a = UrlFeatures::of_lead(&url("http://a.test/api/plotting/f-17.html"), "Plot 3", None);
        let b = UrlFeatures::of_lead(&url("http://b.test/api/plotting/f-18.html"), "plot 4", None);
        assert_eq!(a, b);
        let c = UrlFeatures::of_lead(&url("http://a.test/api/core/f-17.html"), "Plot 3", None);
        assert_ne!(a, c);
    }

    #[test]
    fn lead_features_keep_the_anchor_and_referrer_apart_from_the_url() {
        let u = url("http://a.test/examples/x.html");
        let in_url = UrlFeatures::of_lead(&u, "", None);
        let in_anchor = UrlFeatures::of_lead(&url("http://a.test/x.html"), "examples", None);
        let in_referrer = UrlFeatures::of_lead(
            &url("http://a.test/x.html"),
            "",
            Some(&url("http://a.test/examples/")),
        );
        let token = Namespace::Token.feature(b"examples");
        assert!(in_url.ids().contains(&token));
        assert!(!in_anchor.ids().contains(&token));
        assert!(in_anchor
            .ids()
            .contains(&Namespace::AnchorToken.feature(b"examples")));
        assert!(in_referrer
            .ids()
            .contains(&Namespace::RefToken.feature(b"examples")));
    }

    #[test]
    fn lead_names_match_the_features() {
        let u = url("http://a.test/Data/Download.CSV?year=2020");
        let f = UrlFeatures::of_lead(&u, "Get the data", Some(&url("http://a.test/stats/")));
        let names = UrlFeatures::lead_names(&u, "Get the data", Some(&url("http://a.test/stats/")));
        let ids: Vec<u32> = names.iter().map(|(i, _)| *i).collect();
        assert_eq!(ids, f.ids());
        assert!(names.iter().any(|(_, n)| n == "token=download"));
        assert!(names.iter().any(|(_, n)| n == "anchor=data"));
        assert!(names.iter().any(|(_, n)| n == "referrer=stats"));
        assert!(names.iter().any(|(_, n)| n == "token=#num"));
    }

    #[test]
    fn a_long_anchor_is_capped() {
        let words = "word ".repeat(200) + &(0..200).map(|i| format!("w{i}xx ")).collect::<String>();
        let f = UrlFeatures::of_lead(&url("http://a.test/"), &words, None);
        assert!(f.len() <= 32);
    }
}
