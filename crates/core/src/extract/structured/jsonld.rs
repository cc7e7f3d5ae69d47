//! JSON-LD script blocks (`<script type="application/ld+json">`) → RDF with
//! `oxjsonld`.
//!
//! No remote document is ever fetched: the schema.org context, which nearly
//! every block on the web names by URL, is answered from memory with its
//! `@vocab` (`http://schema.org/`, as the published context says); any other
//! remote context is an error of that block. A bad block (invalid JSON,
//! invalid JSON-LD, an unknown remote context) is counted and yields no
//! statement, as a JSON-LD processor fails the whole document; it never
//! fails the page. The parser is lenient about IRIs (a relative `@type`
//! resolves against the page), as the web's JSON-LD needs.

use super::{Collector, Syntax};
use lol_html::StartTag;
use oxjsonld::{JsonLdParser, JsonLdRemoteDocument};
use oxrdf::{BlankNode, NamedOrBlankNode, Term};
use std::collections::HashMap;
use url::Url;

/// Bytes of one block parsed; a bigger one is counted invalid and skipped.
pub const MAX_BLOCK_BYTES: usize = 4 << 20;
/// Errors reported by the parser per block before the block is given up.
const MAX_ERRORS: usize = 16;

/// The context documents of schema.org, as pages name them.
const SCHEMA_ORG_CONTEXT: &[u8] = br#"{"@context":{"@vocab":"http://schema.org/"}}"#;

/// `<script type="application/ld+json">` (parameters and case ignored).
pub(crate) fn is_json_ld(el: &StartTag<'_>) -> bool {
    el.get_attribute("type").is_some_and(|t| {
        let media_type = t.split(';').next().unwrap_or_default();
        media_type
            .trim_matches(super::is_html_whitespace)
            .eq_ignore_ascii_case("application/ld+json")
    })
}

/// Whether a context URL names schema.org's context.
fn is_schema_org(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let Some(rest) = rest else {
        return false;
    };
    let rest = rest.strip_prefix("www.").unwrap_or(rest);
    matches!(
        rest.trim_end_matches('/'),
        "schema.org"
            | "schema.org/docs/jsonldcontext.json"
            | "schema.org/docs/jsonldcontext.jsonld"
    )
}

/// How far the measured bound of a block's expansion ([`expansion_bound`])
/// may exceed the byte budget before the block is refused: the bound counts
/// every node at the longest IRI the block could give it, which honest
/// documents stay far below, while the bombs it is for exceed it a
/// hundredfold.
pub const EXPANSION_SLACK: u64 = 4;

/// An upper bound of the bytes `oxjsonld` may hold while it expands a
/// JSON-LD document, from one pass over its JSON without building it.
///
/// Why: `oxjsonld` (0.2, not in its streaming profile) buffers a whole
/// object to find its `@context`, expands it, and turns it into quads in
/// one go, before the first statement reaches the caller. A context term
/// mapped to a 1 MB IRI and used by 10 000 values is 10 000 copies of the
/// IRI inside the parser (issue #36: an abort at 7.8 GB from a 1 MB page),
/// and no budget counted as statements come out can stop that. Every copy
/// comes from the context (a term, a prefix, `@vocab`, `@base`), from an
/// `@id` repeated as the subject or graph of each statement under it, or
/// from the page's URL: so each JSON node costs at most twice the longest
/// of those, plus its own bytes.
pub fn expansion_bound(body: &[u8], base_len: usize) -> Result<u64, String> {
    use serde::de::DeserializeSeed as _;
    let mut scan = Scan::default();
    let mut de = serde_json::Deserializer::from_slice(body);
    Node {
        scan: &mut scan,
        in_context: false,
        id: false,
    }
    .deserialize(&mut de)
    .map_err(|e| e.to_string())?;
    let longest = (scan.longest_context + scan.longest_id + base_len) as u64 + 16;
    Ok((body.len() as u64).saturating_add(scan.nodes.saturating_mul(2).saturating_mul(longest)))
}

#[derive(Default)]
struct Scan {
    nodes: u64,
    /// The longest string (key or value) inside any `@context`.
    longest_context: usize,
    /// The longest value of an `@id` key.
    longest_id: usize,
}

struct Node<'a> {
    scan: &'a mut Scan,
    in_context: bool,
    /// The value of an `@id` key.
    id: bool,
}

impl Node<'_> {
    fn string(self, v: &str) {
        self.scan.nodes += 1;
        if self.in_context {
            self.scan.longest_context = self.scan.longest_context.max(v.len());
        }
        if self.id {
            self.scan.longest_id = self.scan.longest_id.max(v.len());
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Node<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Node<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.scan.nodes += 1;
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.scan.nodes += 1;
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.scan.nodes += 1;
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.scan.nodes += 1;
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.scan.nodes += 1;
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.string(v);
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.scan.nodes += 1;
        while seq
            .next_element_seed(Node {
                scan: &mut *self.scan,
                in_context: self.in_context,
                id: self.id,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.scan.nodes += 1;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if self.in_context {
                self.scan.longest_context = self.scan.longest_context.max(key.len());
            }
            map.next_value_seed(Node {
                scan: &mut *self.scan,
                in_context: self.in_context || key == "@context",
                id: key == "@id",
            })?;
        }
        Ok(())
    }
}

/// Parses one block's body and adds its statements to the page.
pub(crate) fn parse_block(c: &mut Collector, body: &str, base: &Url) {
    let body = body.trim_matches(super::is_html_whitespace);
    if body.is_empty() {
        c.note_json_ld_error("empty JSON-LD block".to_string());
        return;
    }
    let room = c.sink.max_bytes.saturating_sub(c.sink.data.bytes);
    match expansion_bound(body.as_bytes(), base.as_str().len()) {
        Ok(bound) if bound > room.saturating_mul(EXPANSION_SLACK) => {
            c.note_json_ld_error(format!(
                "JSON-LD block refused: expanding it could take {bound} bytes, over {EXPANSION_SLACK} × targets.max_statement_bytes"
            ));
            // Over the page's byte budget, as a statement too long would be.
            c.sink.fits(u64::MAX);
            return;
        }
        Ok(_) => {}
        Err(e) => {
            c.note_json_ld_error(format!("invalid JSON-LD block: {e}"));
            return;
        }
    }
    let parser = match JsonLdParser::new().lenient().with_base_iri(base.as_str()) {
        Ok(p) => p,
        Err(_) => JsonLdParser::new().lenient(),
    };
    let quads = parser
        .for_slice(body.as_bytes())
        .with_load_document_callback(|url, _options| {
            if is_schema_org(url) {
                Ok(JsonLdRemoteDocument {
                    document: SCHEMA_ORG_CONTEXT.to_vec(),
                    document_url: url.to_string(),
                })
            } else {
                Err(format!("remote context {url} is not loaded").into())
            }
        });
    // Blank node labels of a block are local to it; the data file is one
    // stream, so each gets a fresh, unique node.
    let mut renamed: HashMap<String, BlankNode> = HashMap::new();
    let mut rename = |b: BlankNode| -> BlankNode {
        renamed
            .entry(b.as_str().to_string())
            .or_insert_with(super::blank)
            .clone()
    };
    let mut errors = 0;
    let mut first_error = None;
    let mut block = Vec::new();
    let mut block_bytes = 0u64;
    let mut over_bytes = false;
    for quad in quads {
        match quad {
            Ok(q) => {
                // The page's caps bound one block too (a block past them is
                // cut anyway): counted while the parser streams, so that a
                // context term mapped to a megabyte IRI and used 10 000
                // times never holds more than the byte budget (issue #36).
                if block.len() >= c.sink.max {
                    c.sink.data.cut = true;
                    break;
                }
                let size = super::statement_bytes(&q.subject, &q.predicate, &q.object)
                    + c.sink.graph_bytes;
                block_bytes = block_bytes.saturating_add(size);
                if c.sink.data.bytes.saturating_add(block_bytes) > c.sink.max_bytes {
                    over_bytes = true;
                    break;
                }
                let subject = match q.subject {
                    NamedOrBlankNode::BlankNode(b) => rename(b).into(),
                    s => s,
                };
                let object = match q.object {
                    Term::BlankNode(b) => rename(b).into(),
                    o => o,
                };
                block.push((subject, q.predicate, object));
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert_with(|| e.to_string());
                if errors >= MAX_ERRORS {
                    break;
                }
            }
        }
    }
    if let Some(e) = first_error {
        c.note_json_ld_error(format!("invalid JSON-LD block: {e}"));
        return;
    }
    for (s, p, o) in block {
        c.sink.push(Syntax::JsonLd, s, p, o);
    }
    if over_bytes {
        // After the block's statements that fit: nothing later is kept.
        c.sink.fits(u64::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_org_context_urls() {
        for url in [
            "https://schema.org",
            "http://schema.org/",
            "https://www.schema.org/",
            "https://schema.org/docs/jsonldcontext.json",
        ] {
            assert!(is_schema_org(url), "{url}");
        }
        for url in [
            "https://schema.org.evil/",
            "https://example.org/schema.org",
            "schema.org",
        ] {
            assert!(!is_schema_org(url), "{url}");
        }
    }
}
