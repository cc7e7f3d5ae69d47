//! Microdata (`itemscope`, `itemtype`, `itemprop`, `itemid`, `itemref`) →
//! triples, as in the W3C note "Microdata to RDF".
//!
//! Streaming makes `itemref` the hard part: an item may name elements that
//! come later in the page. So items and properties are recorded as they are
//! met (a property with its owner, the nearest enclosing item, and the ids of
//! the elements between that item and itself) and turned into triples at the
//! end of the page, when every `itemref` can be answered from an index of
//! ids. Each item emits its types, its own properties and its referenced
//! ones, each property once; predicates come from the item's vocabulary (the
//! first type's namespace, or the vocabulary of the item holding it).

use super::{attr, blank, literal, resolve_iri, Collector, Sink, Syntax, TextOwner};
use lol_html::StartTag;
use oxrdf::vocab::rdf;
use oxrdf::{NamedNode, NamedOrBlankNode, Term};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use url::Url;

/// Names in one `itemprop`, types in one `itemtype`, ids in one `itemref`.
const MAX_TOKENS: usize = 16;
/// Ids remembered between a property and its item.
const MAX_IDS: usize = 8;
/// Frames looked at to find a property's item.
const MAX_WALK: usize = 64;
/// Items and properties recorded per page (beyond the statement cap, they
/// could only be dropped later).
const MAX_RECORDS: usize = 200_000;

/// What an element contributed, kept while it is open.
#[derive(Default)]
pub(crate) struct FrameState {
    /// The item this element's `itemscope` made.
    item: Option<usize>,
    /// Its `id`, for the properties inside it that an `itemref` may name.
    id: Option<Box<str>>,
}

impl FrameState {
    pub(crate) fn is_tracked(&self) -> bool {
        self.item.is_some() || self.id.is_some()
    }
}

struct Item {
    subject: NamedOrBlankNode,
    types: Vec<NamedNode>,
    refs: Vec<Box<str>>,
    /// The item holding this one as a property value (its vocabulary is inherited).
    parent: Option<usize>,
}

enum Value {
    Text(String),
    Url(String),
    Item(usize),
}

struct Prop {
    owner: Option<usize>,
    ids: Vec<Box<str>>,
    names: Vec<Box<str>>,
    value: Value,
    /// The language of the property's element, for a text value.
    lang: Option<Rc<str>>,
}

/// A page's items and properties.
#[derive(Default)]
pub(crate) struct Items {
    items: Vec<Item>,
    props: Vec<Prop>,
}

impl Items {
    pub(crate) fn set_text(&mut self, prop: usize, text: String) {
        if let Some(p) = self.props.get_mut(prop) {
            p.value = Value::Text(text);
        }
    }

    fn full(&self) -> bool {
        self.items.len() + self.props.len() >= MAX_RECORDS
    }

    /// Turns everything recorded into triples (see the module documentation).
    pub(crate) fn emit(self, sink: &mut Sink, base: &Url) {
        let mut vocab: Vec<Option<String>> = Vec::with_capacity(self.items.len());
        for item in &self.items {
            let own = item.types.first().map(|t| vocabulary_of(t.as_str()));
            // Parents are recorded before their children.
            let inherited = item.parent.and_then(|p| vocab.get(p).cloned().flatten());
            vocab.push(own.or(inherited));
        }
        let mut owned: Vec<Vec<usize>> = vec![Vec::new(); self.items.len()];
        let mut by_id: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, prop) in self.props.iter().enumerate() {
            if let Some(slot) = prop.owner.and_then(|o| owned.get_mut(o)) {
                slot.push(i);
            }
            for id in &prop.ids {
                by_id.entry(id).or_default().push(i);
            }
        }
        for (i, item) in self.items.iter().enumerate() {
            for t in &item.types {
                sink.push(
                    Syntax::Microdata,
                    item.subject.clone(),
                    rdf::TYPE.into_owned(),
                    t.clone().into(),
                );
            }
            let mut done: HashSet<usize> = HashSet::new();
            let referenced = item
                .refs
                .iter()
                .flat_map(|id| by_id.get(&**id).into_iter().flatten());
            for &p in owned.get(i).into_iter().flatten().chain(referenced) {
                if !done.insert(p) {
                    continue;
                }
                let Some(prop) = self.props.get(p) else {
                    continue;
                };
                // An item never holds itself (an itemref to its own element).
                if matches!(prop.value, Value::Item(j) if j == i) {
                    continue;
                }
                let object = match &prop.value {
                    Value::Text(t) => literal(t.clone(), None, prop.lang.as_deref()),
                    Value::Url(u) => match resolve_iri(base, u) {
                        Some(iri) if !u.is_empty() => iri.into(),
                        _ => literal(u.clone(), None, None),
                    },
                    Value::Item(j) => match self.items.get(*j) {
                        Some(other) => Term::from(other.subject.clone()),
                        None => continue,
                    },
                };
                let vocab = vocab.get(i).and_then(|v| v.as_deref());
                for name in &prop.names {
                    if !sink.has_room() {
                        return;
                    }
                    if let Some(predicate) = predicate(name, vocab, base) {
                        sink.push(
                            Syntax::Microdata,
                            item.subject.clone(),
                            predicate,
                            object.clone(),
                        );
                    }
                }
            }
        }
    }
}

/// The vocabulary of a type: the type up to its last `#` or `/`.
fn vocabulary_of(t: &str) -> String {
    match t.rfind(['#', '/']) {
        Some(i) => t[..=i].to_string(),
        None => t.to_string(),
    }
}

/// A property name as a predicate: an absolute URL as it is, else in the
/// item's vocabulary, else in the page's own namespace (`page#name`).
fn predicate(name: &str, vocab: Option<&str>, base: &Url) -> Option<NamedNode> {
    if name.contains(':') {
        if let Ok(url) = Url::parse(name) {
            return NamedNode::new(url.as_str()).ok();
        }
    }
    match vocab {
        Some(v) => NamedNode::new(format!("{v}{name}")).ok(),
        None => {
            let mut page = base.clone();
            page.set_fragment(Some(name));
            NamedNode::new(page.as_str()).ok()
        }
    }
}

fn tokens(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(super::is_html_whitespace)
        .filter(|t| !t.is_empty())
        .take(MAX_TOKENS)
}

/// Records what `el` says; returns who gets its text when its value is its
/// text content. `trackable`: the element will report its end.
pub(crate) fn on_element(
    c: &mut Collector,
    el: &StartTag<'_>,
    name: &str,
    trackable: bool,
    state: &mut FrameState,
) -> Option<TextOwner> {
    let itemscope = el.has_attribute("itemscope");
    let itemprop = if el.has_attribute("itemprop") {
        attr(el, "itemprop")
    } else {
        None
    };
    if trackable {
        if let Some(id) = attr(el, "id").filter(|id| !id.is_empty()) {
            state.id = Some(id.into_boxed_str());
        }
    }
    if !itemscope && itemprop.is_none() {
        return None;
    }
    if c.md.full() {
        c.sink.data.cut = true;
        return None;
    }
    // The enclosing item, and the ids between it and this element.
    let mut owner = None;
    let mut ids: Vec<Box<str>> = Vec::new();
    if let Some(id) = &state.id {
        ids.push(id.clone());
    }
    for frame in c.frames.iter().rev().take(MAX_WALK) {
        if let Some(item) = frame.md.item {
            owner = Some(item);
            break;
        }
        if let Some(id) = &frame.md.id {
            if ids.len() < MAX_IDS {
                ids.push(id.clone());
            }
        }
    }
    let base = c.base.clone();
    let mut value = None;
    if itemscope {
        let subject = attr(el, "itemid")
            .and_then(|id| resolve_iri(&base, &id))
            .map(NamedOrBlankNode::from)
            .unwrap_or_else(|| blank().into());
        let types = attr(el, "itemtype")
            .map(|t| {
                tokens(&t)
                    .filter_map(|t| Url::parse(t).ok())
                    .filter_map(|u| NamedNode::new(u.as_str()).ok())
                    .collect()
            })
            .unwrap_or_default();
        let refs = attr(el, "itemref")
            .map(|r| tokens(&r).map(Box::from).collect())
            .unwrap_or_default();
        let index = c.md.items.len();
        c.md.items.push(Item {
            subject,
            types,
            refs,
            parent: itemprop.as_ref().and(owner),
        });
        if trackable {
            state.item = Some(index);
        }
        value = Some(Value::Item(index));
    }
    let itemprop = itemprop?;
    let names: Vec<Box<str>> = tokens(&itemprop).map(Box::from).collect();
    // A property outside every item, that no itemref can reach, says nothing.
    if names.is_empty() || (owner.is_none() && ids.is_empty()) {
        return None;
    }
    let mut wants_text = false;
    // Only a meta's content and text content are language-tagged text;
    // `data`, `meter` and `time` values are machine-readable.
    let mut lang = None;
    let value = match value {
        Some(v) => v,
        None => match name {
            "meta" => {
                lang = c.lang.clone();
                Value::Text(attr(el, "content").unwrap_or_default())
            }
            "audio" | "embed" | "iframe" | "img" | "source" | "track" | "video" => {
                Value::Url(attr(el, "src").unwrap_or_default())
            }
            "a" | "area" | "link" => Value::Url(attr(el, "href").unwrap_or_default()),
            "object" => Value::Url(attr(el, "data").unwrap_or_default()),
            "data" | "meter" => Value::Text(attr(el, "value").unwrap_or_default()),
            "time" if el.has_attribute("datetime") => {
                Value::Text(attr(el, "datetime").unwrap_or_default())
            }
            _ => {
                wants_text = trackable;
                lang = c.lang.clone();
                Value::Text(String::new())
            }
        },
    };
    let index = c.md.props.len();
    c.md.props.push(Prop {
        owner,
        ids,
        names,
        value,
        lang,
    });
    wants_text.then_some(TextOwner::Microdata(index))
}
