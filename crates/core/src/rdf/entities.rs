//! DTD entities in RDF/XML, measured before the parser sees them.
//!
//! `oxrdfxml` (0.2) reads `<!ENTITY name "value">` declarations from the
//! document type and expands them eagerly and without a limit: each value is
//! stored with the entities it names already replaced, and every `&name;` in
//! the body is replaced by that stored text. Ten entities of ten references
//! each (the "billion laughs", under 1 KB) make it allocate 3 GB for the last
//! one, and the process aborts (issue #36).
//!
//! What this module owns: computing, in one linear pass over the bytes and
//! without expanding anything, how many bytes those expansions would make,
//! so that [`super::parse_document`] refuses a document before parsing it.
//!
//! Why measure rather than refuse every entity, or every nested one: real
//! RDF/XML uses entities (ontology editors write `<!ENTITY xsd
//! "http://www.w3.org/2001/XMLSchema#">` and `rdf:datatype="&xsd;string"`
//! throughout), so refusing all of them loses real data; and refusing only
//! entities that name other entities is not enough — one 60 KB entity
//! referenced 100 000 times in the body amplifies as surely. Summing the
//! lengths bounds exactly what the parser will allocate for entities, both
//! shapes included.
//!
//! The scan is deliberately conservative: it reads every `<!ENTITY` in the
//! document (not only inside the document type) and every `&name;` (also in
//! comments and CDATA), takes the larger of two declarations of a name, and
//! charges every reference its entity's full text. It can only overestimate
//! what `oxrdfxml` does, never miss an expansion.

use std::collections::HashMap;

/// Bytes one reference to a predefined entity (`&lt;`…) or a character
/// reference (`&#x10FFFF;`) stands for, at most.
const MAX_BUILTIN_BYTES: u64 = 4;
/// Longest entity name looked up after a `&` (XML names in real documents are short).
const MAX_NAME_BYTES: usize = 256;

/// Why a document's entities were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntityBomb {
    /// The entity whose declaration went over, or `None` when the body's references did.
    pub entity: Option<String>,
    /// The bytes the expansions would have needed (saturated at `u64::MAX`).
    pub bytes: u64,
    pub limit: u64,
}

impl std::fmt::Display for EntityBomb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.entity {
            Some(name) => write!(
                f,
                "DTD entities refused: entity `{name}` would expand the document's entities to {} bytes, over the budget of {} bytes",
                self.bytes, self.limit
            ),
            None => write!(
                f,
                "DTD entities refused: their references would expand the document by {} bytes, over the budget of {} bytes",
                self.bytes, self.limit
            ),
        }
    }
}

/// Checks that expanding the entities `body` declares costs at most `limit`
/// bytes: the stored values of all entities together, plus the text every
/// reference in the document adds.
pub fn check_entities(body: &[u8], limit: u64) -> Result<(), EntityBomb> {
    const DECL: &[u8] = b"<!ENTITY";
    if find(body, DECL, 0).is_none() {
        return Ok(());
    }
    let mut stored: HashMap<&[u8], u64> = HashMap::new();
    let mut stored_total: u64 = 0;
    let mut from = 0;
    while let Some(at) = find(body, DECL, from) {
        from = at + DECL.len();
        let Some((name, value)) = declaration(&body[from..]) else {
            continue;
        };
        let len = expanded_len(value, &stored);
        stored_total = stored_total.saturating_add(len);
        let previous = stored.get(name).copied().unwrap_or(0);
        stored.insert(name, previous.max(len));
        if stored_total > limit {
            return Err(EntityBomb {
                entity: Some(String::from_utf8_lossy(name).into_owned()),
                bytes: stored_total,
                limit,
            });
        }
    }
    // Every reference in the document, declarations included (already
    // counted once above: counting them again only overestimates).
    let added = references_len(body, &stored);
    let total = stored_total.saturating_add(added);
    if total > limit {
        return Err(EntityBomb {
            entity: None,
            bytes: total,
            limit,
        });
    }
    Ok(())
}

/// `name "value">` after `<!ENTITY`, as oxrdfxml reads it (a parameter
/// entity's `%` skipped, the value in double quotes); `None` when oxrdfxml
/// would refuse it too (it stores nothing then).
fn declaration(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = trim_start(rest);
    let rest = rest.strip_prefix(b"%").map(trim_start).unwrap_or(rest);
    let name_end = rest.iter().position(|b| b.is_ascii_whitespace())?;
    let (name, rest) = rest.split_at(name_end);
    let rest = trim_start(rest).strip_prefix(b"\"")?;
    let value_end = rest.iter().position(|&b| b == b'"')?;
    Some((name, &rest[..value_end]))
}

/// The length of `value` once the entities it names are replaced by their stored text.
fn expanded_len(value: &[u8], stored: &HashMap<&[u8], u64>) -> u64 {
    let mut len = value.len() as u64;
    let mut i = 0;
    while let Some(amp) = value[i..].iter().position(|&b| b == b'&') {
        let start = i + amp + 1;
        match reference(&value[start..]) {
            Some(name) => {
                // The reference `&name;` gives way to its text.
                len = len
                    .saturating_sub(name.len() as u64 + 2)
                    .saturating_add(reference_bytes(name, stored));
                i = start + name.len() + 1;
            }
            None => i = start,
        }
    }
    len
}

/// Bytes the references of `body` add (their replacement text; the reference itself is not subtracted).
fn references_len(body: &[u8], stored: &HashMap<&[u8], u64>) -> u64 {
    let mut added: u64 = 0;
    let mut i = 0;
    while let Some(amp) = body[i..].iter().position(|&b| b == b'&') {
        let start = i + amp + 1;
        match reference(&body[start..]) {
            Some(name) => {
                if let Some(&len) = stored.get(name) {
                    added = added.saturating_add(len);
                }
                i = start + name.len() + 1;
            }
            None => i = start,
        }
    }
    added
}

/// The name of a reference starting after its `&`, up to its `;`.
fn reference(after_amp: &[u8]) -> Option<&[u8]> {
    let window = &after_amp[..after_amp.len().min(MAX_NAME_BYTES + 1)];
    let end = window.iter().position(|&b| b == b';')?;
    let name = &window[..end];
    let plausible = !name.is_empty()
        && name
            .iter()
            .all(|&b| !b.is_ascii_whitespace() && !matches!(b, b'&' | b'<' | b'>' | b'"'));
    plausible.then_some(name)
}

fn reference_bytes(name: &[u8], stored: &HashMap<&[u8], u64>) -> u64 {
    if let Some(&len) = stored.get(name) {
        return len;
    }
    // Predefined and character references; an unknown name is an error in
    // oxrdfxml, which stores nothing for that declaration.
    MAX_BUILTIN_BYTES
}

fn trim_start(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    &s[start..]
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The classic: `lol9` is 10⁹ copies of "lol".
    pub(crate) fn billion_laughs() -> String {
        let mut doc =
            String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE rdf:RDF [\n<!ENTITY lol0 \"lol\">\n");
        for i in 1..10 {
            let refs: String = (0..10).map(|_| format!("&lol{};", i - 1)).collect();
            doc.push_str(&format!("<!ENTITY lol{i} \"{refs}\">\n"));
        }
        doc.push_str(
            "]>\n<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns:ex=\"http://e.test/\">\n\
             <rdf:Description rdf:about=\"http://a.test/s\"><ex:p>&lol9;</ex:p></rdf:Description>\n</rdf:RDF>\n",
        );
        doc
    }

    #[test]
    fn the_billion_laughs_is_refused_at_its_declarations() {
        let doc = billion_laughs();
        assert!(doc.len() < 1024);
        let err = check_entities(doc.as_bytes(), 64 << 20).unwrap_err();
        assert_eq!(err.entity.as_deref(), Some("lol8"), "{err}");
        assert!(err.to_string().contains("refused"));
    }

    #[test]
    fn one_entity_referenced_many_times_is_refused_by_its_references() {
        let value = "x".repeat(60_000);
        let mut doc = format!("<!DOCTYPE rdf:RDF [ <!ENTITY big \"{value}\"> ]>\n<rdf:RDF>");
        for _ in 0..2_000 {
            doc.push_str("<ex:p>&big;</ex:p>");
        }
        let err = check_entities(doc.as_bytes(), 64 << 20).unwrap_err();
        assert_eq!(err.entity, None, "{err}");
        assert!(err.bytes > 100_000_000);
    }

    #[test]
    fn namespace_entities_of_real_documents_pass() {
        let mut doc = String::from(
            "<!DOCTYPE rdf:RDF [\n\
             <!ENTITY owl \"http://www.w3.org/2002/07/owl#\" >\n\
             <!ENTITY xsd \"http://www.w3.org/2001/XMLSchema#\" >\n\
             <!ENTITY % param \"&xsd;date\" >\n\
             ]>\n<rdf:RDF>",
        );
        for _ in 0..10_000 {
            doc.push_str("<owl:Class rdf:about=\"&owl;Thing\"/><x rdf:datatype=\"&xsd;string\">&amp;&#233;</x>");
        }
        assert_eq!(check_entities(doc.as_bytes(), 64 << 20), Ok(()));
        // Half a megabyte of references is over a budget of 100 KB.
        assert!(check_entities(doc.as_bytes(), 100_000).is_err());
    }

    #[test]
    fn documents_without_entities_cost_one_search() {
        assert_eq!(check_entities(b"<rdf:RDF>&amp;</rdf:RDF>", 0), Ok(()));
        // Unterminated or malformed declarations store nothing in oxrdfxml either.
        assert_eq!(
            check_entities(b"<!ENTITY a 'single quoted'> <!ENTITY", 0),
            Ok(())
        );
    }

    #[test]
    fn nesting_deeper_than_u64_saturates() {
        let mut doc = String::from("<!ENTITY a0 \"aaaaaaaaaa\">");
        for i in 1..40 {
            let refs: String = (0..10).map(|_| format!("&a{};", i - 1)).collect();
            doc.push_str(&format!("<!ENTITY a{i} \"{refs}\">"));
        }
        let err = check_entities(doc.as_bytes(), u64::MAX - 1).unwrap_err();
        assert_eq!(err.bytes, u64::MAX);
    }
}
