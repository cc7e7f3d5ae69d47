//! Which RDF syntax a response is in: its `Content-Type`, else its file
//! name, else its first bytes (linked-data servers often send N-Triples or
//! Turtle as `text/plain`, and files as `application/octet-stream`).

use oxrdfio::RdfFormat;
use url::Url;

/// The `Accept` header of a linked-data job: the syntaxes forager parses,
/// Turtle first (compact, and what most servers have), HTML last (its links).
pub const ACCEPT: &str = "text/turtle, application/n-triples;q=0.95, application/n-quads;q=0.9, \
     application/trig;q=0.9, application/rdf+xml;q=0.9, application/ld+json;q=0.8, \
     text/n3;q=0.7, text/html;q=0.5, application/xhtml+xml;q=0.5, */*;q=0.1";

/// An RDF syntax forager parses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RdfSyntax {
    Turtle,
    NTriples,
    NQuads,
    TriG,
    RdfXml,
    JsonLd,
    N3,
}

impl RdfSyntax {
    /// The name written in manifest rows and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            RdfSyntax::Turtle => "turtle",
            RdfSyntax::NTriples => "n-triples",
            RdfSyntax::NQuads => "n-quads",
            RdfSyntax::TriG => "trig",
            RdfSyntax::RdfXml => "rdf-xml",
            RdfSyntax::JsonLd => "json-ld",
            RdfSyntax::N3 => "n3",
        }
    }

    pub(crate) fn format(self) -> RdfFormat {
        match self {
            RdfSyntax::Turtle => RdfFormat::Turtle,
            RdfSyntax::NTriples => RdfFormat::NTriples,
            RdfSyntax::NQuads => RdfFormat::NQuads,
            RdfSyntax::TriG => RdfFormat::TriG,
            RdfSyntax::RdfXml => RdfFormat::RdfXml,
            RdfSyntax::JsonLd => RdfFormat::JsonLd {
                profile: Default::default(),
            },
            RdfSyntax::N3 => RdfFormat::N3,
        }
    }

    /// The syntax of a MIME essence (lower-case, no parameters), if RDF.
    /// Plain JSON and XML are not taken as RDF: most of it is not.
    pub fn of_mime(essence: &str) -> Option<RdfSyntax> {
        Some(match essence {
            "text/turtle" | "application/x-turtle" => RdfSyntax::Turtle,
            "application/n-triples" => RdfSyntax::NTriples,
            "application/n-quads" | "text/x-nquads" => RdfSyntax::NQuads,
            "application/trig" => RdfSyntax::TriG,
            "application/rdf+xml" => RdfSyntax::RdfXml,
            "application/ld+json" => RdfSyntax::JsonLd,
            "text/n3" | "text/rdf+n3" => RdfSyntax::N3,
            _ => return None,
        })
    }

    /// The syntax a file extension (lower-case, no dot) names, if RDF.
    pub fn of_extension(ext: &str) -> Option<RdfSyntax> {
        Some(match ext {
            "ttl" => RdfSyntax::Turtle,
            "nt" => RdfSyntax::NTriples,
            "nq" => RdfSyntax::NQuads,
            "trig" => RdfSyntax::TriG,
            "rdf" | "owl" => RdfSyntax::RdfXml,
            "jsonld" => RdfSyntax::JsonLd,
            "n3" => RdfSyntax::N3,
            _ => return None,
        })
    }

    /// The syntax of a response: its type when that names RDF; under a
    /// generic or missing type ([`crate::mime::GENERIC_TYPES`]) its file
    /// name's extension, else a look at its first bytes. `None`: not RDF.
    pub fn of_response(essence: &str, url: &Url, head: &[u8]) -> Option<RdfSyntax> {
        if let Some(s) = RdfSyntax::of_mime(essence) {
            return Some(s);
        }
        if !(essence.is_empty() || crate::mime::GENERIC_TYPES.contains(&essence)) {
            return None;
        }
        let named = url
            .path_segments()
            .and_then(|mut s| s.next_back())
            .and_then(|last| last.rsplit_once('.'))
            .and_then(|(_, ext)| RdfSyntax::of_extension(&ext.to_ascii_lowercase()));
        named.or_else(|| RdfSyntax::sniff(head))
    }

    /// Guess from the first bytes: Turtle directives, an RDF/XML root, or
    /// lines that start like N-Triples statements. Comments and blank lines
    /// are skipped; anything else is not RDF.
    pub fn sniff(head: &[u8]) -> Option<RdfSyntax> {
        let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
        let text = String::from_utf8_lossy(&head[..head.len().min(4096)]);
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))?;
        let lower = first.to_ascii_lowercase();
        if ["@prefix", "@base", "prefix ", "base "]
            .iter()
            .any(|d| lower.starts_with(d))
        {
            return Some(RdfSyntax::Turtle);
        }
        if lower.starts_with("<?xml") || lower.starts_with("<rdf:rdf") {
            return text.contains("rdf:RDF").then_some(RdfSyntax::RdfXml);
        }
        // `<s> <p> …` or `_:b <p> …`: a statement line (HTML starts `<!` or `<html`).
        let statement = (first.starts_with("<http") || first.starts_with("_:"))
            && first.trim_end().ends_with('.');
        statement.then_some(RdfSyntax::NQuads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn the_type_decides_when_it_names_rdf() {
        let u = url("http://a.test/x.html");
        assert_eq!(
            RdfSyntax::of_response("text/turtle", &u, b"<html>"),
            Some(RdfSyntax::Turtle)
        );
        assert_eq!(
            RdfSyntax::of_response("application/ld+json", &u, b""),
            Some(RdfSyntax::JsonLd)
        );
        assert_eq!(RdfSyntax::of_response("text/html", &u, b"@prefix"), None);
        assert_eq!(
            RdfSyntax::of_response("application/json", &u, b"{}"),
            None,
            "plain JSON is not JSON-LD"
        );
    }

    #[test]
    fn generic_types_are_told_by_name_then_by_content() {
        let ttl = url("http://a.test/data/lv2.ttl");
        assert_eq!(
            RdfSyntax::of_response("application/octet-stream", &ttl, b""),
            Some(RdfSyntax::Turtle)
        );
        let bare = url("http://a.test/resource/42");
        let nt = b"# dump\n\n<http://a.test/s> <http://a.test/p> \"o\" .\n";
        assert_eq!(
            RdfSyntax::of_response("text/plain", &bare, nt),
            Some(RdfSyntax::NQuads)
        );
        assert_eq!(
            RdfSyntax::of_response("text/plain", &bare, b"PREFIX ex: <http://e/>\n"),
            Some(RdfSyntax::Turtle)
        );
        assert_eq!(
            RdfSyntax::of_response("", &bare, b"<?xml version=\"1.0\"?>\n<rdf:RDF>"),
            Some(RdfSyntax::RdfXml)
        );
        assert_eq!(
            RdfSyntax::of_response("text/plain", &bare, b"hello world"),
            None
        );
        assert_eq!(
            RdfSyntax::of_response("text/plain", &bare, b"<?xml version=\"1.0\"?><feed/>"),
            None
        );
        assert_eq!(
            RdfSyntax::of_response("text/plain", &bare, b"<http://not a statement"),
            None
        );
    }
}
