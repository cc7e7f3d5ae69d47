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

/// Parses one block's body and adds its statements to the page.
pub(crate) fn parse_block(c: &mut Collector, body: &str, base: &Url) {
    let body = body.trim_matches(super::is_html_whitespace);
    if body.is_empty() {
        c.note_json_ld_error("empty JSON-LD block".to_string());
        return;
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
