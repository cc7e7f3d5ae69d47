//! RDFa 1.1 Lite (`vocab`, `typeof`, `property`, `resource`, `prefix`) and the
//! common RDFa Core attributes (`about`, `rel`, `rev`, `href`, `src`,
//! `content`, `datatype`), following the processing steps of RDFa Core 1.1
//! §7.5 with the HTML+RDFa rules for `head` and `body`.
//!
//! A plain literal takes the language of its element or nearest ancestor
//! (`lang`; `xml:lang` is not read: in HTML it must equal `lang`).
//! The initial context's prefixes and its three terms (`describedby`,
//! `license`, `role`: `<link rel="license">` is a statement) are known.
//! `inlist` values are gathered in the list mapping of the element that set
//! their subject and become an `rdf:List` when that element ends.
//! Left out, and why: XML literals (a statement's count does not depend on
//! them, only its object's datatype). An element with no RDFa attribute passes its parent's context on unchanged; a plain `href`/`src` is read only inside
//! an RDFa context (it may complete a hanging `rel`).

use super::{attr, blank, literal, resolve_iri, Collector, Syntax, TextOwner};
use lol_html::StartTag;
use oxrdf::vocab::rdf;
use oxrdf::{BlankNode, NamedNode, NamedOrBlankNode, Term};
use std::cell::RefCell;
use std::rc::Rc;
use url::Url;

/// Tokens read from one attribute.
const MAX_TOKENS: usize = 16;
/// Prefixes declared on one page.
const MAX_PREFIXES: usize = 256;
/// A prefix mapped to a longer IRI is ignored: no vocabulary's namespace is
/// near it, and every CURIE using the prefix would copy it (issue #36: a
/// 100 KB IRI used by 2 000 properties made 628 MB).
const MAX_PREFIX_IRI_BYTES: usize = 2048;

const USES_VOCABULARY: &str = "http://www.w3.org/ns/rdfa#usesVocabulary";

/// The prefixes of the RDFa Core initial context.
const INITIAL_PREFIXES: &[(&str, &str)] = &[
    ("as", "https://www.w3.org/ns/activitystreams#"),
    ("cc", "http://creativecommons.org/ns#"),
    ("csvw", "http://www.w3.org/ns/csvw#"),
    ("ctag", "http://commontag.org/ns#"),
    ("dc", "http://purl.org/dc/terms/"),
    ("dc11", "http://purl.org/dc/elements/1.1/"),
    ("dcat", "http://www.w3.org/ns/dcat#"),
    ("dcterms", "http://purl.org/dc/terms/"),
    ("dqv", "http://www.w3.org/ns/dqv#"),
    ("duv", "https://www.w3.org/ns/duv#"),
    ("foaf", "http://xmlns.com/foaf/0.1/"),
    ("gr", "http://purl.org/goodrelations/v1#"),
    ("grddl", "http://www.w3.org/2003/g/data-view#"),
    ("ical", "http://www.w3.org/2002/12/cal/icaltzd#"),
    ("jsonld", "http://www.w3.org/ns/json-ld#"),
    ("ldp", "http://www.w3.org/ns/ldp#"),
    ("ma", "http://www.w3.org/ns/ma-ont#"),
    ("oa", "http://www.w3.org/ns/oa#"),
    ("odrl", "http://www.w3.org/ns/odrl/2/"),
    ("og", "http://ogp.me/ns#"),
    ("org", "http://www.w3.org/ns/org#"),
    ("owl", "http://www.w3.org/2002/07/owl#"),
    ("prov", "http://www.w3.org/ns/prov#"),
    ("qb", "http://purl.org/linked-data/cube#"),
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfa", "http://www.w3.org/ns/rdfa#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("rev", "http://purl.org/stuff/rev#"),
    ("rif", "http://www.w3.org/2007/rif#"),
    ("rr", "http://www.w3.org/ns/r2rml#"),
    ("schema", "http://schema.org/"),
    ("sd", "http://www.w3.org/ns/sparql-service-description#"),
    ("sioc", "http://rdfs.org/sioc/ns#"),
    ("skos", "http://www.w3.org/2004/02/skos/core#"),
    ("skosxl", "http://www.w3.org/2008/05/skos-xl#"),
    ("sosa", "http://www.w3.org/ns/sosa/"),
    ("ssn", "http://www.w3.org/ns/ssn/"),
    ("time", "http://www.w3.org/2006/time#"),
    ("v", "http://rdf.data-vocabulary.org/#"),
    ("vcard", "http://www.w3.org/2006/vcard/ns#"),
    ("void", "http://rdfs.org/ns/void#"),
    ("wdr", "http://www.w3.org/2007/05/powder#"),
    ("wdrs", "http://www.w3.org/2007/05/powder-s#"),
    ("xhv", "http://www.w3.org/1999/xhtml/vocab#"),
    ("xml", "http://www.w3.org/XML/1998/namespace"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
];

/// The terms of the RDFa Core initial context, used where no `vocab` is in
/// force (matched without regard to case, as RDFa Core §7.4.3 allows).
const INITIAL_TERMS: &[(&str, &str)] = &[
    (
        "describedby",
        "http://www.w3.org/2007/05/powder-s#describedby",
    ),
    ("license", "http://www.w3.org/1999/xhtml/vocab#license"),
    ("role", "http://www.w3.org/1999/xhtml/vocab#role"),
];

/// The evaluation context an element hands to its descendants.
#[derive(Clone)]
pub(crate) struct Context {
    vocab: Option<Rc<str>>,
    /// Prefixes declared by ancestors, innermost last.
    prefixes: Rc<Vec<(String, String)>>,
    parent_subject: NamedOrBlankNode,
    parent_object: NamedOrBlankNode,
    /// `rel`/`rev` waiting for a subject.
    incomplete: Rc<Vec<Hanging>>,
    /// The lists `inlist` values go to (RDFa Core's list mapping), shared
    /// with the descendants that keep this subject.
    lists: Rc<ListMapping>,
    /// Set on the element that made `lists`: it emits them, with this
    /// subject, when it ends.
    lists_owner: Option<NamedOrBlankNode>,
}

/// A `rel`/`rev` whose object is the next subject a descendant sets.
#[derive(Clone)]
enum Hanging {
    Rel(NamedOrBlankNode, NamedNode),
    Rev(NamedOrBlankNode, NamedNode),
    /// `rel` with `inlist`: the subject joins this list.
    List(List),
}

/// One list's items in document order; a slot is `None` until its text value
/// arrives (the element's end).
type List = Rc<RefCell<Vec<Option<Term>>>>;

/// Predicate → list, in the order the predicates first appeared.
type ListMapping = RefCell<Vec<(NamedNode, List)>>;

/// The list for `predicate` in `lists`, made empty if it is not there.
fn list_for(lists: &ListMapping, predicate: &NamedNode) -> List {
    let mut lists = lists.borrow_mut();
    if let Some((_, list)) = lists.iter().find(|(p, _)| p == predicate) {
        return list.clone();
    }
    let list: List = Rc::default();
    lists.push((predicate.clone(), list.clone()));
    list
}

impl Context {
    fn initial(base: &Url) -> Context {
        let doc: NamedOrBlankNode = NamedNode::new_unchecked(base.as_str()).into();
        Context {
            vocab: None,
            prefixes: Rc::new(Vec::new()),
            parent_subject: doc.clone(),
            parent_object: doc,
            incomplete: Rc::new(Vec::new()),
            lists: Rc::default(),
            lists_owner: None,
        }
    }

    fn prefix(&self, name: &str) -> Option<&str> {
        let name_lower = name.to_ascii_lowercase();
        self.prefixes
            .iter()
            .rev()
            .find(|(p, _)| *p == name_lower)
            .map(|(_, iri)| iri.as_str())
            .or_else(|| {
                INITIAL_PREFIXES
                    .iter()
                    .find(|(p, _)| *p == name_lower)
                    .map(|(_, iri)| *iri)
            })
    }

    /// A CURIE with a known prefix, expanded.
    fn curie(&self, value: &str) -> Option<NamedNode> {
        let (prefix, reference) = value.split_once(':')?;
        if prefix == "_" {
            return None;
        }
        let ns = self.prefix(prefix)?;
        NamedNode::new(format!("{ns}{reference}")).ok()
    }

    /// A predicate or type: a term in the vocabulary, a CURIE, or an absolute IRI.
    fn term_or_curie_or_iri(&self, value: &str) -> Option<NamedNode> {
        if !value.contains(':') {
            let Some(vocab) = self.vocab.as_deref() else {
                return INITIAL_TERMS
                    .iter()
                    .find(|(term, _)| term.eq_ignore_ascii_case(value))
                    .map(|(_, iri)| NamedNode::new_unchecked(*iri));
            };
            return NamedNode::new(format!("{vocab}{value}")).ok();
        }
        if let Some(iri) = self.curie(value) {
            return Some(iri);
        }
        let url = Url::parse(value).ok()?;
        NamedNode::new(url.as_str()).ok()
    }

    /// `about` or `resource`: a safe CURIE, a CURIE, a blank node or a relative IRI.
    fn resource(&self, value: &str, base: &Url, blanks: &mut Blanks) -> Option<NamedOrBlankNode> {
        let value = value.trim_matches(super::is_html_whitespace);
        if let Some(safe) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            if let Some(label) = safe.strip_prefix("_:") {
                return Some(blanks.get(label).into());
            }
            return self.curie(safe).map(Into::into);
        }
        if let Some(label) = value.strip_prefix("_:") {
            return Some(blanks.get(label).into());
        }
        if let Some(iri) = self.curie(value) {
            return Some(iri.into());
        }
        resolve_iri(base, value).map(Into::into)
    }
}

/// Blank nodes named in a page (`_:x`), each a fresh node unique across pages.
#[derive(Default)]
pub(crate) struct Blanks {
    named: Vec<(String, BlankNode)>,
}

impl Blanks {
    fn get(&mut self, label: &str) -> BlankNode {
        if let Some((_, node)) = self.named.iter().find(|(l, _)| l == label) {
            return node.clone();
        }
        let node = blank();
        if self.named.len() < MAX_PREFIXES {
            self.named.push((label.to_string(), node.clone()));
        }
        node
    }
}

/// Property statements waiting for their element's text.
#[derive(Default)]
pub(crate) struct Pending {
    props: Vec<PendingProp>,
    pub(crate) blanks: Blanks,
    prefixes_declared: usize,
    /// Items put in lists on this page (capped like statements: a list is
    /// emitted only when its element ends, so items must not pile up).
    list_items: usize,
}

struct PendingProp {
    subject: NamedOrBlankNode,
    predicates: Vec<NamedNode>,
    datatype: Option<NamedNode>,
    lang: Option<Rc<str>>,
    /// With `inlist`: the list slots the value fills instead of statements.
    slots: Vec<(List, usize)>,
}

/// Appends `item` to `list` (or reserves its slot, with `None`); returns the
/// slot, or `None` when the page's list items are used up.
fn push_item(c: &mut Collector, list: &List, item: Option<Term>) -> Option<usize> {
    if c.rdfa.list_items >= c.sink.max {
        c.sink.data.cut = true;
        return None;
    }
    c.rdfa.list_items += 1;
    let mut items = list.borrow_mut();
    items.push(item);
    Some(items.len() - 1)
}

/// The element's text arrived: emit its property statements.
pub(crate) fn complete(c: &mut Collector, pending: usize, text: String) {
    let Some(prop) = c.rdfa.props.get_mut(pending) else {
        return;
    };
    let subject = prop.subject.clone();
    let predicates = std::mem::take(&mut prop.predicates);
    let datatype = prop.datatype.take();
    let lang = prop.lang.take();
    for (list, slot) in std::mem::take(&mut prop.slots) {
        if let Some(item) = list.borrow_mut().get_mut(slot) {
            *item = Some(literal(text.clone(), datatype.clone(), lang.as_deref()));
        }
    }
    for p in predicates {
        c.sink.push(
            Syntax::Rdfa,
            subject.clone(),
            p,
            literal(text.clone(), datatype.clone(), lang.as_deref()),
        );
    }
}

fn tokens(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(super::is_html_whitespace)
        .filter(|t| !t.is_empty())
        .take(MAX_TOKENS)
}

const RDFA_ATTRIBUTES: [&str; 8] = [
    "vocab", "prefix", "typeof", "property", "about", "resource", "rel", "rev",
];

/// Processes one element. Returns the context its descendants see (when it
/// differs from its parent's) and who gets its text, if a property needs it.
/// `trackable`: the element will report its end (not void, not too deep).
pub(crate) fn on_element(
    c: &mut Collector,
    el: &StartTag<'_>,
    name: &str,
    trackable: bool,
) -> (Option<Context>, Option<TextOwner>) {
    // A full page records nothing more (pending values would only pile up).
    if !c.sink.has_room() {
        return (None, None);
    }
    let has_rdfa = RDFA_ATTRIBUTES.iter().any(|a| el.has_attribute(a));
    let inside = c.rdfa_context();
    if !has_rdfa && inside.is_none() {
        return (None, None);
    }
    let parent = match inside {
        Some(ctx) => ctx.clone(),
        None => Context::initial(&c.base),
    };
    let base = c.base.clone();
    let mut ctx = parent.clone();
    ctx.lists_owner = None;
    let inlist = el.has_attribute("inlist");

    if let Some(v) = attr(el, "vocab") {
        let v = v.trim_matches(super::is_html_whitespace);
        if v.is_empty() {
            ctx.vocab = None;
        } else if let Some(iri) = resolve_iri(&base, v) {
            c.sink.push(
                Syntax::Rdfa,
                NamedNode::new_unchecked(base.as_str()).into(),
                NamedNode::new_unchecked(USES_VOCABULARY),
                iri.clone().into(),
            );
            ctx.vocab = Some(Rc::from(iri.as_str()));
        }
    }
    if let Some(p) = attr(el, "prefix") {
        let mut added = Vec::new();
        let mut words = tokens(&p);
        while let (Some(prefix), Some(iri)) = (words.next(), words.next()) {
            let Some(prefix) = prefix.strip_suffix(':') else {
                break;
            };
            if c.rdfa.prefixes_declared >= MAX_PREFIXES
                || prefix == "_"
                || iri.len() > MAX_PREFIX_IRI_BYTES
            {
                continue;
            }
            c.rdfa.prefixes_declared += 1;
            added.push((prefix.to_ascii_lowercase(), iri.to_string()));
        }
        // Each element that declares one copies its ancestors' prefixes:
        // only those that add one do, so the copies stay under
        // MAX_PREFIXES² / 2 entries of MAX_PREFIX_IRI_BYTES each.
        if !added.is_empty() {
            let mut declared = (*ctx.prefixes).clone();
            declared.extend(added);
            ctx.prefixes = Rc::new(declared);
        }
    }

    let property = attr(el, "property");
    let rel = attr(el, "rel");
    let rev = attr(el, "rev");
    let typeof_ = attr(el, "typeof");
    let content = attr(el, "content");
    // HTML+RDFa 1.1 § 3.1: a `datetime` attribute (`<time datetime=…>`) is
    // the value, not the element's text; `content` still comes first.
    let datetime = attr(el, "datetime");
    let datatype = attr(el, "datatype");
    let about = attr(el, "about").and_then(|v| ctx.resource(&v, &base, &mut c.rdfa.blanks));
    let resource = attr(el, "resource").and_then(|v| ctx.resource(&v, &base, &mut c.rdfa.blanks));
    let href = attr(el, "href").and_then(|v| resolve_iri(&base, &v).map(NamedOrBlankNode::from));
    let src = attr(el, "src").and_then(|v| resolve_iri(&base, &v).map(NamedOrBlankNode::from));

    // With `property` present, HTML+RDFa drops `rel`/`rev` terms that are not CURIEs or IRIs.
    let links = |value: &Option<String>| -> Vec<NamedNode> {
        value
            .as_deref()
            .map(|v| {
                tokens(v)
                    .filter(|t| property.is_none() || t.contains(':'))
                    .filter_map(|t| ctx.term_or_curie_or_iri(t))
                    .collect()
            })
            .unwrap_or_default()
    };
    let rels = links(&rel);
    let revs = links(&rev);
    let has_rel = !rels.is_empty() || !revs.is_empty();
    let head_or_body = matches!(name, "head" | "body" | "html");

    let mut typed = None;
    let mut object = None;
    let mut skip = false;
    let subject: NamedOrBlankNode;
    if !has_rel {
        if property.is_some() && content.is_none() && datatype.is_none() {
            subject = about
                .clone()
                .unwrap_or_else(|| parent.parent_object.clone());
            if typeof_.is_some() {
                let t = about
                    .clone()
                    .or_else(|| resource.clone())
                    .or_else(|| href.clone())
                    .or_else(|| src.clone())
                    .unwrap_or_else(|| blank().into());
                typed = Some(t.clone());
                object = Some(t);
            }
        } else {
            let named = about
                .clone()
                .or_else(|| resource.clone())
                .or_else(|| href.clone())
                .or_else(|| src.clone());
            subject = match named {
                Some(s) => s,
                None if head_or_body => parent.parent_object.clone(),
                None if typeof_.is_some() => blank().into(),
                None => {
                    skip = property.is_none();
                    parent.parent_object.clone()
                }
            };
            if typeof_.is_some() {
                typed = Some(subject.clone());
            }
        }
    } else {
        subject = match &about {
            Some(a) => a.clone(),
            None => parent.parent_object.clone(),
        };
        object = resource
            .clone()
            .or_else(|| href.clone())
            .or_else(|| src.clone());
        if typeof_.is_some() {
            typed = match &about {
                Some(a) => Some(a.clone()),
                None => {
                    let o = object.clone().unwrap_or_else(|| blank().into());
                    object = Some(o.clone());
                    Some(o)
                }
            };
        }
    }

    // RDFa Core §7.5 step 8: a new subject starts a new list mapping.
    if !skip && subject != parent.parent_object {
        ctx.lists = Rc::default();
        ctx.lists_owner = Some(subject.clone());
    }

    if let (Some(t), Some(types)) = (&typed, &typeof_) {
        for ty in tokens(types).filter_map(|ty| ctx.term_or_curie_or_iri(ty)) {
            c.sink
                .push(Syntax::Rdfa, t.clone(), rdf::TYPE.into_owned(), ty.into());
        }
    }
    if !skip {
        for hanging in parent.incomplete.iter() {
            match hanging {
                Hanging::Rev(s, p) => {
                    c.sink
                        .push(Syntax::Rdfa, subject.clone(), p.clone(), s.clone().into());
                }
                Hanging::Rel(s, p) => {
                    c.sink
                        .push(Syntax::Rdfa, s.clone(), p.clone(), subject.clone().into());
                }
                Hanging::List(list) => {
                    push_item(c, list, Some(subject.clone().into()));
                }
            }
        }
    }
    let mut incomplete = Vec::new();
    match &object {
        Some(o) => {
            for p in &rels {
                if inlist {
                    push_item(c, &list_for(&ctx.lists, p), Some(o.clone().into()));
                } else {
                    c.sink
                        .push(Syntax::Rdfa, subject.clone(), p.clone(), o.clone().into());
                }
            }
            for p in &revs {
                c.sink
                    .push(Syntax::Rdfa, o.clone(), p.clone(), subject.clone().into());
            }
        }
        None if has_rel => {
            for p in &rels {
                incomplete.push(if inlist {
                    Hanging::List(list_for(&ctx.lists, p))
                } else {
                    Hanging::Rel(subject.clone(), p.clone())
                });
            }
            for p in &revs {
                incomplete.push(Hanging::Rev(subject.clone(), p.clone()));
            }
            // RDFa Core 1.1 step 9: descendants with properties only hang off a fresh node.
            object = Some(blank().into());
        }
        None => {}
    }

    let mut text = None;
    if let Some(props) = &property {
        let predicates: Vec<NamedNode> = tokens(props)
            .filter_map(|p| ctx.term_or_curie_or_iri(p))
            .collect();
        let dt = datatype
            .as_deref()
            .map(|d| d.trim_matches(super::is_html_whitespace))
            .filter(|d| !d.is_empty())
            .and_then(|d| ctx.term_or_curie_or_iri(d));
        let value: Option<Term> = if let Some(content) = &content {
            Some(literal(content.clone(), dt.clone(), c.lang.as_deref()))
        } else if let Some(datetime) = &datetime {
            // Without a `datatype` attribute the type is the value's
            // lexical form's (§ 3.1); `datatype=""` asks for a plain literal.
            let dt = match &datatype {
                Some(_) => dt.clone(),
                None => datetime_type(datetime)
                    .and_then(|local| NamedNode::new(format!("{XSD}{local}")).ok()),
            };
            Some(literal(datetime.clone(), dt, c.lang.as_deref()))
        } else if datatype.is_none() && !has_rel {
            match resource
                .clone()
                .or_else(|| href.clone())
                .or_else(|| src.clone())
            {
                Some(iri) => Some(iri.into()),
                None => match (&typed, &about) {
                    (Some(t), None) => Some(t.clone().into()),
                    _ => None,
                },
            }
        } else {
            None
        };
        match value {
            Some(o) if inlist => {
                for p in &predicates {
                    push_item(c, &list_for(&ctx.lists, p), Some(o.clone()));
                }
            }
            Some(o) => {
                for p in predicates {
                    c.sink.push(Syntax::Rdfa, subject.clone(), p, o.clone());
                }
            }
            None if !predicates.is_empty() => {
                // A list keeps document order: the value's slot is taken now,
                // filled when its text has arrived.
                let mut slots = Vec::new();
                if inlist {
                    for p in &predicates {
                        let list = list_for(&ctx.lists, p);
                        if let Some(slot) = push_item(c, &list, None) {
                            slots.push((list, slot));
                        }
                    }
                }
                let index = c.rdfa.props.len();
                c.rdfa.props.push(PendingProp {
                    subject: subject.clone(),
                    predicates: if inlist { Vec::new() } else { predicates },
                    datatype: dt,
                    lang: c.lang.clone(),
                    slots,
                });
                if trackable {
                    text = Some(TextOwner::Rdfa(index));
                } else {
                    complete(c, index, String::new());
                }
            }
            None => {}
        }
    }

    if !trackable {
        // No end tag will come: its lists are complete now.
        close(c, &ctx);
        return (None, text);
    }
    if skip {
        ctx.incomplete = parent.incomplete.clone();
    } else {
        ctx.parent_subject = subject.clone();
        ctx.parent_object = object.unwrap_or(subject);
        ctx.incomplete = Rc::new(incomplete);
    }
    (Some(ctx), text)
}

/// The element whose context is `ctx` ended: if it made the list mapping,
/// each list becomes an `rdf:List` (an empty one `rdf:nil`) of its subject.
pub(crate) fn close(c: &mut Collector, ctx: &Context) {
    let Some(subject) = &ctx.lists_owner else {
        return;
    };
    let lists = std::mem::take(&mut *ctx.lists.borrow_mut());
    for (predicate, list) in lists {
        let items: Vec<Term> = std::mem::take(&mut *list.borrow_mut())
            .into_iter()
            .flatten()
            .collect();
        let mut rest: Term = rdf::NIL.into_owned().into();
        for item in items.into_iter().rev() {
            let node: NamedOrBlankNode = blank().into();
            c.sink
                .push(Syntax::Rdfa, node.clone(), rdf::FIRST.into_owned(), item);
            c.sink
                .push(Syntax::Rdfa, node.clone(), rdf::REST.into_owned(), rest);
            rest = node.into();
        }
        c.sink.push(Syntax::Rdfa, subject.clone(), predicate, rest);
    }
}

/// The XML Schema datatypes namespace.
const XSD: &str = "http://www.w3.org/2001/XMLSchema#";

/// The XML Schema type HTML+RDFa 1.1 § 3.1 gives a `datetime` value by its
/// lexical form (`duration`, `dateTime`, `date`, `time`, `gYearMonth`,
/// `gYear`), `None` for anything else (then a plain literal).
fn datetime_type(value: &str) -> Option<&'static str> {
    let v = value.trim_matches(super::is_html_whitespace);
    if is_duration(v) {
        return Some("duration");
    }
    if let Some((date, time)) = v.split_once('T') {
        return (is_date(date) && is_time(time)).then_some("dateTime");
    }
    if is_date(v) {
        return Some("date");
    }
    if is_time(v) {
        return Some("time");
    }
    let (body, tz) = split_zone(v);
    if !tz {
        return None;
    }
    match body.split_once('-') {
        Some((y, m)) if is_year(y) && is_month(m) => Some("gYearMonth"),
        None if is_year(body) => Some("gYear"),
        _ => None,
    }
}

fn digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

/// Four digits or more (a year past 9999 has more), with an optional `-`.
fn is_year(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    s.len() >= 4 && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_month(s: &str) -> bool {
    digits(s, 2) && matches!(s.parse::<u8>(), Ok(1..=12))
}

/// Splits an optional time zone (`Z`, `+hh:mm`, `-hh:mm`) off the end; the
/// flag is false when what looks like a zone is malformed.
fn split_zone(s: &str) -> (&str, bool) {
    if let Some(body) = s.strip_suffix('Z') {
        return (body, true);
    }
    if s.len() > 6 {
        let (body, zone) = s.split_at(s.len() - 6);
        let b = zone.as_bytes();
        // `-05:00` ends a zone; `-01-01` ends a date.
        if matches!(b[0], b'+' | b'-') && b[3] == b':' {
            return (body, digits(&zone[1..3], 2) && digits(&zone[4..], 2));
        }
    }
    (s, true)
}

/// `YYYY-MM-DD`, with an optional zone.
fn is_date(s: &str) -> bool {
    let (body, tz) = split_zone(s);
    let Some((rest, day)) = body.rsplit_once('-') else {
        return false;
    };
    let Some((year, month)) = rest.rsplit_once('-') else {
        return false;
    };
    tz && is_year(year)
        && is_month(month)
        && digits(day, 2)
        && matches!(day.parse::<u8>(), Ok(1..=31))
}

/// `hh:mm:ss` with optional fraction and zone (HTML also allows `hh:mm`).
fn is_time(s: &str) -> bool {
    let (body, tz) = split_zone(s);
    let mut parts = body.split(':');
    let (Some(h), Some(m)) = (parts.next(), parts.next()) else {
        return false;
    };
    let sec_ok = match parts.next() {
        None => true,
        Some(sec) => {
            let (whole, frac) = sec.split_once('.').unwrap_or((sec, "0"));
            digits(whole, 2) && !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit())
        }
    };
    tz && parts.next().is_none()
        && digits(h, 2)
        && digits(m, 2)
        && sec_ok
        && matches!(h.parse::<u8>(), Ok(0..=24))
        && matches!(m.parse::<u8>(), Ok(0..=59))
}

/// `PnYnMnDTnHnMnS`, each part optional but at least one, with `T` before
/// any time part; seconds may have a fraction.
fn is_duration(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    let Some(rest) = s.strip_prefix('P') else {
        return false;
    };
    let (date, time) = match rest.split_once('T') {
        Some((_, "")) => return false,
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    fn parts(s: &str, units: &[u8], fraction_on: Option<u8>) -> Option<usize> {
        let mut count = 0;
        let mut next_unit = 0;
        let mut number = String::new();
        for b in s.bytes() {
            if b.is_ascii_digit() || (b == b'.' && fraction_on.is_some()) {
                number.push(b as char);
                continue;
            }
            let at = units[next_unit..].iter().position(|&u| u == b)? + next_unit;
            let fraction_ok = !number.contains('.') || fraction_on == Some(b);
            if number.is_empty() || number.starts_with('.') || number.ends_with('.') || !fraction_ok
            {
                return None;
            }
            number.clear();
            next_unit = at + 1;
            count += 1;
        }
        number.is_empty().then_some(count)
    }
    let Some(d) = parts(date, b"YMD", None) else {
        return false;
    };
    let t = match time {
        Some(t) => match parts(t, b"HMS", Some(b'S')) {
            Some(0) | None => return false,
            Some(n) => n,
        },
        None => 0,
    };
    d + t > 0
}

#[cfg(test)]
mod datetime_tests {
    use super::datetime_type;

    #[test]
    fn lexical_forms_of_datetime_values() {
        for (v, t) in [
            ("2024-05-01", Some("date")),
            ("2024-05-01Z", Some("date")),
            ("2024-05-01-05:00", Some("date")),
            ("2024-05-01T20:00:00Z", Some("dateTime")),
            ("2024-05-01T20:00:00.5+02:00", Some("dateTime")),
            ("20:00", Some("time")),
            ("20:00:01.25", Some("time")),
            ("P1Y2M", Some("duration")),
            ("PT1.5S", Some("duration")),
            ("-P3D", Some("duration")),
            ("2023-05", Some("gYearMonth")),
            ("1999", Some("gYear")),
            ("P", None),
            ("PT", None),
            ("P1.5Y", None),
            ("2024-13-01", None),
            ("2024-5-1", None),
            ("25:00", None),
            ("99", None),
            ("2024-05-01T", None),
            ("soon", None),
            ("", None),
        ] {
            assert_eq!(datetime_type(v), t, "{v:?}");
        }
    }
}
