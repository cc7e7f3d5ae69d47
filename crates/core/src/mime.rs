//! What a response is: HTML to parse, a target to save, or neither.
//!
//! A job's [`TargetSet`] (from its `[targets]` table) turns a `Content-Type`
//! into a [`Label`]. Labels are job-relative, but the MIME Bloom filters are
//! shared by every job of the process, so they remember a URL's job-neutral
//! [`MimeFamily`]; [`TargetSet::label_of_family`] maps a family back to a label
//! when the family is unambiguous for this job (otherwise the URL is asked
//! again with a HEAD request).

use serde::{Deserialize, Serialize};

/// What a URL turned out (or is predicted) to be, for one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Label {
    /// A page to parse for links (any MIME type containing `html`).
    Html,
    /// A resource the job harvests.
    Target,
    /// Anything else: not parsed, not saved.
    Neither,
}

impl Label {
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Html => "html",
            Label::Target => "target",
            Label::Neither => "neither",
        }
    }
}

/// The lower-cased MIME essence of a `Content-Type` value (`text/csv; charset=x` → `text/csv`).
pub fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

const CSV: &[&str] = &[
    "text/csv",
    "application/csv",
    "text/x-csv",
    "application/x-csv",
    "text/comma-separated-values",
    "text/x-comma-separated-values",
    "text/tab-separated-values",
];
const SPREADSHEET: &[&str] = &[
    "application/vnd.ms-excel",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.oasis.opendocument.spreadsheet",
    "application/vnd.ms-excel.sheet.macroenabled.12",
];
const PDF: &[&str] = &["application/pdf", "application/x-pdf"];
const ARCHIVE: &[&str] = &[
    "application/zip",
    "application/x-zip-compressed",
    "application/zip-compressed",
    "application/x-tar",
    "application/x-gtar",
    "application/x-gzip",
    "application/gzip",
    "application/x-7z-compressed",
    "application/vnd.rar",
    "application/x-rar-compressed",
    "application/x-bzip2",
    "application/x-xz",
];
const STRUCTURED: &[&str] = &[
    "application/xml",
    "text/xml",
    "application/json",
    "text/json",
    "application/yaml",
    "application/x-yaml",
    "text/yaml",
    "text/x-yaml",
    "application/rss+xml",
    "application/geo+json",
    "application/vnd.geo+json",
    "application/x-ndjson",
    "application/ndjson",
    "application/x-ipynb+json",
    "application/vnd.apache.parquet",
    "application/x-netcdf",
    "application/x-hdf5",
    "application/x-hdf",
];
/// RDF syntaxes forager parses (the `linked-data` preset; see [`crate::rdf`]).
pub const RDF: &[&str] = &[
    "text/turtle",
    "application/x-turtle",
    "application/n-triples",
    "application/n-quads",
    "text/x-nquads",
    "application/trig",
    "application/rdf+xml",
    "application/ld+json",
    "text/n3",
    "text/rdf+n3",
];
/// File extensions of RDF documents (lower-case, no dot).
pub const RDF_EXTENSIONS: &[&str] = &["ttl", "nt", "nq", "trig", "rdf", "owl", "jsonld", "n3"];
const DOCUMENT: &[&str] = &[
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.oasis.opendocument.text",
    "application/vnd.oasis.opendocument.presentation",
    "application/vnd.ms-powerpoint",
    "application/rtf",
];

/// Types servers send when they do not say what a file is: for these, the
/// file's name decides (see [`TargetSet::classify_file`]).
pub const GENERIC_TYPES: &[&str] = &[
    "application/octet-stream",
    "binary/octet-stream",
    "application/binary",
    "text/plain",
    "application/download",
    "application/force-download",
    "application/x-download",
    "application/unknown",
];

/// File extensions of the data formats statisticians and researchers use.
const DATA_EXTENSIONS: &[&str] = &[
    "csv", "tsv", "tab", "dat", "json", "ndjson", "jsonl", "geojson", "xml", "xls", "xlsx", "xlsm",
    "ods", "parquet", "feather", "arrow", "sav", "zsav", "por", "dta", "sas7bdat", "xpt", "rds",
    "rdata", "rda", "nc", "netcdf", "h5", "hdf5", "hdf", "sdmx", "ipynb", "yaml", "yml", "rdf",
    "ttl", "nt", "nq", "sqlite", "db", "dbf", "shp", "gpkg", "kml", "kmz",
];
const DOCUMENT_EXTENSIONS: &[&str] = &["pdf", "doc", "docx", "odt", "rtf", "ppt", "pptx", "odp"];
const ARCHIVE_EXTENSIONS: &[&str] = &["zip", "gz", "tgz", "tar", "7z", "bz2", "xz", "rar", "zst"];

/// The extension (lower-case, with its dot) under which files of a MIME
/// type are saved and usually named: one row per type essence, several
/// types may share an extension. The one table for both the name a saved
/// target gets (`forager::output`) and what a link's own name says of it
/// ([`TargetSet::names_target`]). `text/html` has no row: pages are never
/// saved as targets.
pub const TYPE_EXTENSIONS: &[(&str, &str)] = &[
    ("text/csv", ".csv"),
    ("application/csv", ".csv"),
    ("text/x-csv", ".csv"),
    ("application/x-csv", ".csv"),
    ("text/comma-separated-values", ".csv"),
    ("text/x-comma-separated-values", ".csv"),
    ("text/tab-separated-values", ".tsv"),
    ("application/vnd.ms-excel", ".xls"),
    (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ".xlsx",
    ),
    ("application/vnd.ms-excel.sheet.macroenabled.12", ".xlsm"),
    ("application/vnd.oasis.opendocument.spreadsheet", ".ods"),
    ("application/pdf", ".pdf"),
    ("application/x-pdf", ".pdf"),
    ("application/zip", ".zip"),
    ("application/x-zip-compressed", ".zip"),
    ("application/zip-compressed", ".zip"),
    ("application/x-tar", ".tar"),
    ("application/x-gtar", ".tar"),
    ("application/gzip", ".gz"),
    ("application/x-gzip", ".gz"),
    ("application/x-7z-compressed", ".7z"),
    ("application/vnd.rar", ".rar"),
    ("application/x-rar-compressed", ".rar"),
    ("application/xml", ".xml"),
    ("text/xml", ".xml"),
    ("application/rdf+xml", ".rdf"),
    ("application/rss+xml", ".rss"),
    ("application/json", ".json"),
    ("text/json", ".json"),
    ("application/x-ipynb+json", ".ipynb"),
    ("application/yaml", ".yaml"),
    ("application/x-yaml", ".yaml"),
    ("text/yaml", ".yaml"),
    ("text/x-yaml", ".yaml"),
    ("application/msword", ".doc"),
    (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ".docx",
    ),
    (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        ".pptx",
    ),
    ("application/vnd.oasis.opendocument.text", ".odt"),
    ("application/vnd.oasis.opendocument.presentation", ".odp"),
    ("text/x-python", ".py"),
    ("text/plain", ".txt"),
];

/// The extension (with its dot) [`TYPE_EXTENSIONS`] gives a MIME type's
/// essence, if it has a row. Only the table's own strings come out, so a
/// server's `Content-Type` never shapes a file name.
pub fn type_extension(essence: &str) -> Option<&'static str> {
    TYPE_EXTENSIONS
        .iter()
        .find(|&&(mime, _)| mime == essence)
        .map(|&(_, ext)| ext)
}

/// Job-neutral coarse class of a MIME type, remembered by the shared Bloom filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MimeFamily {
    Html,
    Csv,
    Spreadsheet,
    Pdf,
    Archive,
    Structured,
    Document,
    Image,
    Audio,
    Video,
    /// Other `text/*` types (e.g. `text/plain`, `text/x-python`).
    Text,
    /// Everything else.
    Other,
    /// RDF documents (added last: the stored filters of the others keep their index).
    Rdf,
}

impl MimeFamily {
    pub const ALL: [MimeFamily; 13] = [
        MimeFamily::Html,
        MimeFamily::Csv,
        MimeFamily::Spreadsheet,
        MimeFamily::Pdf,
        MimeFamily::Archive,
        MimeFamily::Structured,
        MimeFamily::Document,
        MimeFamily::Image,
        MimeFamily::Audio,
        MimeFamily::Video,
        MimeFamily::Text,
        MimeFamily::Other,
        MimeFamily::Rdf,
    ];

    /// The family of a MIME essence (see [`essence`]).
    pub fn of(essence: &str) -> MimeFamily {
        if essence.contains("html") {
            return MimeFamily::Html;
        }
        let listed = [
            (CSV, MimeFamily::Csv),
            (SPREADSHEET, MimeFamily::Spreadsheet),
            (PDF, MimeFamily::Pdf),
            (ARCHIVE, MimeFamily::Archive),
            (STRUCTURED, MimeFamily::Structured),
            (DOCUMENT, MimeFamily::Document),
            (RDF, MimeFamily::Rdf),
        ];
        for (types, family) in listed {
            if types.contains(&essence) {
                return family;
            }
        }
        match essence.split('/').next().unwrap_or("") {
            "image" => MimeFamily::Image,
            "audio" => MimeFamily::Audio,
            "video" => MimeFamily::Video,
            "text" => MimeFamily::Text,
            _ => MimeFamily::Other,
        }
    }

    /// The listed members of a closed family; `None` for open-ended families.
    fn members(self) -> Option<&'static [&'static str]> {
        match self {
            MimeFamily::Csv => Some(CSV),
            MimeFamily::Spreadsheet => Some(SPREADSHEET),
            MimeFamily::Pdf => Some(PDF),
            MimeFamily::Archive => Some(ARCHIVE),
            MimeFamily::Structured => Some(STRUCTURED),
            MimeFamily::Document => Some(DOCUMENT),
            MimeFamily::Rdf => Some(RDF),
            _ => None,
        }
    }

    /// The `type/` prefix that covers an open family entirely, if any.
    fn prefix(self) -> Option<&'static str> {
        match self {
            MimeFamily::Image => Some("image/"),
            MimeFamily::Audio => Some("audio/"),
            MimeFamily::Video => Some("video/"),
            MimeFamily::Text => Some("text/"),
            _ => None,
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Named target sets of ARCHITECTURE.md § Job files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// CSV, spreadsheets, PDF, archives, structured files, office documents (the sb paper's set).
    Statistics,
    /// PDF and office documents.
    Documents,
    /// Compressed archives.
    Archives,
    /// RDF documents in any syntax forager parses (linked data; implies `rdf = true`).
    #[serde(rename = "linked-data")]
    LinkedData,
    /// Web pages with structured data (JSON-LD, microdata, RDFa,
    /// microformats; implies `structured_data` = all four) and no file type.
    Structured,
    /// Nothing but what `mime` lists.
    None,
}

impl Preset {
    pub fn mime_types(self) -> Vec<&'static str> {
        match self {
            Preset::Statistics => {
                [CSV, SPREADSHEET, PDF, ARCHIVE, STRUCTURED, DOCUMENT, RDF].concat()
            }
            Preset::Documents => [PDF, DOCUMENT].concat(),
            Preset::Archives => ARCHIVE.to_vec(),
            Preset::LinkedData => RDF.to_vec(),
            Preset::Structured | Preset::None => Vec::new(),
        }
    }

    /// File extensions (lower-case, no dot) that make a file sent under a
    /// generic type a target.
    pub fn extensions(self) -> Vec<&'static str> {
        match self {
            Preset::Statistics => {
                [DATA_EXTENSIONS, DOCUMENT_EXTENSIONS, ARCHIVE_EXTENSIONS].concat()
            }
            Preset::Documents => DOCUMENT_EXTENSIONS.to_vec(),
            Preset::Archives => ARCHIVE_EXTENSIONS.to_vec(),
            Preset::LinkedData => RDF_EXTENSIONS.to_vec(),
            Preset::Structured | Preset::None => Vec::new(),
        }
    }
}

/// The extension (lower-cased, no dot) of a file name, if it has one.
pub fn extension_of(file_name: &str) -> Option<String> {
    let (stem, ext) = file_name.rsplit_once('.')?;
    (!stem.is_empty() && !ext.is_empty()).then(|| ext.to_ascii_lowercase())
}

/// The extension (lower-case, no dot) a body's first bytes announce, for
/// the formats with a magic number that servers often send under a generic
/// type; `None` when they say nothing certain. OLE2 files (`.xls` and `.doc`
/// alike) and ZIP-based office files are not told apart: OLE2 gets nothing,
/// every ZIP is `zip`.
pub fn sniff_extension(head: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"%PDF-", "pdf"),
        (b"PK\x03\x04", "zip"),
        (b"\x1f\x8b", "gz"),
        (b"7z\xbc\xaf\x27\x1c", "7z"),
        (b"Rar!\x1a\x07", "rar"),
        (b"\xfd7zXZ\x00", "xz"),
        (b"BZh", "bz2"),
        (b"PAR1", "parquet"),
        (b"\x89HDF\r\n\x1a\n", "h5"),
        (b"CDF\x01", "nc"),
        (b"CDF\x02", "nc"),
        (b"SQLite format 3\x00", "sqlite"),
    ];
    if let Some((_, ext)) = MAGIC.iter().find(|(magic, _)| head.starts_with(magic)) {
        return Some(ext);
    }
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if text.starts_with(b"<?xml") {
        return Some("xml");
    }
    // A JSON object opens with `{` then a key (a notebook is one).
    let mut rest = text.iter().skip_while(|b| b.is_ascii_whitespace());
    if rest.next() == Some(&b'{') {
        let next = rest.find(|b| !b.is_ascii_whitespace());
        if next == Some(&b'"') {
            return Some("json");
        }
    }
    None
}

/// The name of the file a response carries: `Content-Disposition`'s
/// `filename*` (RFC 6266/8187) or `filename`, else the URL's last path
/// segment (percent-decoded). `None` when neither names a file.
pub fn file_name(url: &url::Url, content_disposition: Option<&str>) -> Option<String> {
    if let Some(name) = content_disposition.and_then(disposition_file_name) {
        return Some(name);
    }
    let last = url.path_segments()?.next_back()?;
    let name = percent_encoding::percent_decode_str(last).decode_utf8_lossy();
    (!name.is_empty()).then(|| name.into_owned())
}

/// The file name of a `Content-Disposition` value; `filename*` wins.
fn disposition_file_name(value: &str) -> Option<String> {
    let mut plain = None;
    for param in value.split(';').skip(1) {
        let Some((key, raw)) = param.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let raw = raw.trim();
        if key == "filename*" {
            // charset'language'percent-encoded-name
            let encoded = raw.splitn(3, '\'').nth(2)?;
            let name = percent_encoding::percent_decode_str(encoded).decode_utf8_lossy();
            return base_name(&name);
        }
        if key == "filename" {
            plain = base_name(raw.trim_matches('"'));
        }
    }
    plain
}

/// The last component of a name a server sent (it may carry a path).
fn base_name(name: &str) -> Option<String> {
    let base = name.rsplit(['/', '\\']).next()?.trim();
    (!base.is_empty()).then(|| base.to_string())
}

/// One MIME pattern: an exact essence, or a prefix ending in `/` (`image/`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MimePattern(String);

impl MimePattern {
    pub fn new(pattern: &str) -> Self {
        MimePattern(pattern.trim().to_ascii_lowercase())
    }

    pub fn matches(&self, essence: &str) -> bool {
        if self.0.ends_with('/') {
            essence.starts_with(&self.0)
        } else {
            essence == self.0
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What one job harvests, and what it never downloads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetSet {
    targets: Vec<MimePattern>,
    blocked: Vec<MimePattern>,
    /// Extensions (lower-case, no dot) of targets sent under a generic type.
    extensions: Vec<String>,
}

impl TargetSet {
    pub fn new(preset: Preset, extra: &[String], blocked: &[String]) -> Self {
        let mut targets: Vec<MimePattern> = preset
            .mime_types()
            .into_iter()
            .map(MimePattern::new)
            .collect();
        targets.extend(extra.iter().map(|m| MimePattern::new(m)));
        TargetSet {
            targets,
            blocked: blocked.iter().map(|m| MimePattern::new(m)).collect(),
            extensions: preset.extensions().iter().map(|e| e.to_string()).collect(),
        }
    }

    /// Also harvest files with these extensions (lower-case, no dot) sent
    /// under a generic type.
    pub fn with_extensions(mut self, extra: &[String]) -> Self {
        for e in extra {
            let e = e.to_ascii_lowercase();
            if !self.extensions.contains(&e) {
                self.extensions.push(e);
            }
        }
        self
    }

    /// The label of a response, from its `Content-Type` and, when that type
    /// is generic or missing ([`GENERIC_TYPES`]), from the name of its file
    /// (see [`file_name`]): a CSV sent as `application/octet-stream` is a target.
    pub fn classify_file(&self, content_type: Option<&str>, file_name: Option<&str>) -> Label {
        let label = self.classify(content_type);
        if label != Label::Neither {
            return label;
        }
        let e = content_type.map(essence).unwrap_or_default();
        let generic = e.is_empty() || GENERIC_TYPES.contains(&e.as_str());
        let named = file_name
            .and_then(extension_of)
            .is_some_and(|ext| self.extensions.contains(&ext));
        if generic && named && !self.is_blocked(&e) {
            Label::Target
        } else {
            Label::Neither
        }
    }

    /// Whether a URL's file name has the extension of one of the job's
    /// targets, or the one its target types are commonly saved under
    /// ([`TYPE_EXTENSIONS`]: `.py` for a job of `text/x-python`): what a
    /// link says of itself before anything is asked (`sb` takes it at its
    /// word while its classifier has not learnt that extension). A job given
    /// types only (the documentation corpora: Python sources, notebooks,
    /// archives) names no extension of its own.
    pub fn names_target(&self, url: &url::Url) -> bool {
        let name = url.path().rsplit('/').next().unwrap_or("");
        let Some(ext) = extension_of(name) else {
            return false;
        };
        self.extensions.contains(&ext)
            || TYPE_EXTENSIONS.iter().any(|&(mime, e)| {
                e[1..] == *ext
                    && !self.is_blocked(mime)
                    && self.targets.iter().any(|p| p.matches(mime))
            })
    }

    /// The label of a response with this `Content-Type` (a missing type is "neither").
    pub fn classify(&self, content_type: Option<&str>) -> Label {
        let Some(ct) = content_type else {
            return Label::Neither;
        };
        let e = essence(ct);
        if e.contains("html") {
            Label::Html
        } else if self.is_blocked(&e) {
            Label::Neither
        } else if self.targets.iter().any(|p| p.matches(&e)) {
            Label::Target
        } else {
            Label::Neither
        }
    }

    /// Blocked types are never downloaded (the body is not read).
    pub fn is_blocked(&self, essence: &str) -> bool {
        self.blocked.iter().any(|p| p.matches(essence))
    }

    /// The label every URL of `family` has for this job, when that is certain.
    pub fn label_of_family(&self, family: MimeFamily) -> Option<Label> {
        if family == MimeFamily::Html {
            return Some(Label::Html);
        }
        // Generic types live in these families, and there the file's name decides.
        if !self.extensions.is_empty() && matches!(family, MimeFamily::Text | MimeFamily::Other) {
            return None;
        }
        if let Some(members) = family.members() {
            let first = self.classify(Some(members[0]));
            return members[1..]
                .iter()
                .all(|m| self.classify(Some(m)) == first)
                .then_some(first);
        }
        // Open family: certain only when no pattern singles out part of it.
        let prefix = family.prefix();
        let covers = |p: &MimePattern| prefix.is_some_and(|pre| p.as_str() == pre);
        let touches = |p: &MimePattern| {
            if p.as_str().ends_with('/') {
                prefix == Some(p.as_str()) || family == MimeFamily::Other
            } else {
                MimeFamily::of(p.as_str()) == family
            }
        };
        if self.blocked.iter().any(covers) {
            return Some(Label::Neither);
        }
        if self.targets.iter().any(covers) && !self.blocked.iter().any(touches) {
            return Some(Label::Target);
        }
        if self.targets.iter().any(touches) {
            return None;
        }
        Some(Label::Neither)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats() -> TargetSet {
        TargetSet::new(
            Preset::Statistics,
            &[],
            &["image/".into(), "audio/".into(), "video/".into()],
        )
    }

    #[test]
    fn classify_follows_the_design() {
        let t = stats();
        assert_eq!(t.classify(Some("text/html; charset=utf-8")), Label::Html);
        assert_eq!(t.classify(Some("application/xhtml+xml")), Label::Html);
        assert_eq!(t.classify(Some("Text/CSV")), Label::Target);
        assert_eq!(t.classify(Some("application/pdf")), Label::Target);
        assert_eq!(t.classify(Some("image/png")), Label::Neither);
        assert_eq!(t.classify(Some("text/plain")), Label::Neither);
        assert_eq!(t.classify(None), Label::Neither);
    }

    #[test]
    fn families_map_back_to_labels_only_when_certain() {
        let t = stats();
        assert_eq!(t.label_of_family(MimeFamily::Csv), Some(Label::Target));
        assert_eq!(t.label_of_family(MimeFamily::Image), Some(Label::Neither));
        // Generic types are in these families: the file's name decides.
        assert_eq!(t.label_of_family(MimeFamily::Text), None);
        assert_eq!(t.label_of_family(MimeFamily::Other), None);
        let docs = TargetSet::new(Preset::None, &["application/pdf".into()], &[]);
        assert_eq!(docs.label_of_family(MimeFamily::Text), Some(Label::Neither));
        let py = TargetSet::new(Preset::None, &["text/x-python".into()], &[]);
        assert_eq!(py.label_of_family(MimeFamily::Text), None);
        assert_eq!(py.label_of_family(MimeFamily::Csv), Some(Label::Neither));
        let csv_only = TargetSet::new(Preset::None, &["text/csv".into()], &[]);
        assert_eq!(csv_only.label_of_family(MimeFamily::Csv), None);
        let images = TargetSet::new(Preset::None, &["image/".into()], &[]);
        assert_eq!(
            images.label_of_family(MimeFamily::Image),
            Some(Label::Target)
        );
    }

    #[test]
    fn the_type_table_has_one_row_per_type_and_safe_extensions() {
        let mut seen = std::collections::HashSet::new();
        for &(mime, ext) in TYPE_EXTENSIONS {
            assert!(seen.insert(mime), "{mime} twice");
            assert_eq!(essence(mime), mime, "{mime} is not an essence");
            assert!(!mime.contains("html"), "{mime}: pages are not saved");
            let name = ext.strip_prefix('.').unwrap_or("");
            assert!(
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
                "{mime}: {ext}"
            );
            assert_eq!(type_extension(mime), Some(ext));
        }
        assert_eq!(type_extension("text/html"), None);
        assert_eq!(type_extension("../../etc/passwd"), None);
    }

    #[test]
    fn a_wider_type_names_its_usual_extension() {
        let url = |u: &str| url::Url::parse(u).unwrap();
        // Any row of the table counts, aliases included.
        let rss = TargetSet::new(Preset::None, &["application/rss+xml".into()], &[]);
        assert!(rss.names_target(&url("http://d.test/feed.rss")));
        assert!(!rss.names_target(&url("http://d.test/feed.xml")));
        let csv = TargetSet::new(Preset::None, &["text/x-csv".into()], &[]);
        assert!(csv.names_target(&url("http://d.test/a/pop.CSV")));
        // A pattern of a whole top-level type names each of its rows.
        let text = TargetSet::new(Preset::None, &["text/".into()], &[]);
        assert!(text.names_target(&url("http://d.test/notes.txt")));
        assert!(text.names_target(&url("http://d.test/run.py")));
        assert!(!text.names_target(&url("http://d.test/report.pdf")));
    }

    #[test]
    fn a_job_of_types_names_the_files_of_those_types() {
        let url = |u: &str| url::Url::parse(u).unwrap();
        let corpus = TargetSet::new(
            Preset::None,
            &["text/x-python".into(), "application/x-ipynb+json".into()],
            &[],
        );
        let py = url("http://d.test/_downloads/3c08/plot_face.py");
        let nb = url("http://d.test/_downloads/3c09/plot_face.IPYNB");
        assert!(corpus.extensions.is_empty(), "no extension of its own");
        assert!(corpus.names_target(&py));
        assert!(corpus.names_target(&nb));
        for other in [
            "http://d.test/_sources/index.rst.txt",
            "http://d.test/_downloads/3c10/data.csv",
            "http://d.test/api/index.html",
            "http://d.test/node/8723",
        ] {
            assert!(!corpus.names_target(&url(other)), "{other}");
        }
        // A job's own extensions name targets as before.
        assert!(stats().names_target(&url("http://d.test/pop.sav")));
        // A blocked type is no target, whatever the job lists.
        let blocked = TargetSet::new(Preset::None, &["text/x-python".into()], &["text/".into()]);
        assert!(!blocked.names_target(&py));
    }

    #[test]
    fn files_under_generic_types_are_targets_by_name() {
        let t = stats();
        let f = |ct: Option<&str>, name: Option<&str>| t.classify_file(ct, name);
        assert_eq!(
            f(Some("application/octet-stream"), Some("pop.csv")),
            Label::Target
        );
        assert_eq!(
            f(Some("text/plain; charset=utf-8"), Some("pop.TSV")),
            Label::Target
        );
        assert_eq!(
            f(Some("application/force-download"), Some("survey.sav")),
            Label::Target
        );
        assert_eq!(f(None, Some("cube.nc")), Label::Target);
        assert_eq!(f(Some("text/plain"), Some("notes.dat")), Label::Target);
        assert_eq!(f(Some("text/plain"), Some("README.txt")), Label::Neither);
        assert_eq!(
            f(Some("text/plain"), Some("csv")),
            Label::Neither,
            "no stem"
        );
        assert_eq!(f(Some("application/octet-stream"), None), Label::Neither);
        // A specific type is believed, whatever the name says.
        assert_eq!(f(Some("image/png"), Some("x.csv")), Label::Neither);
        assert_eq!(f(Some("text/html"), Some("x.csv")), Label::Html);
        // Types the statistics preset now lists.
        assert_eq!(f(Some("text/tab-separated-values"), None), Label::Target);
        assert_eq!(f(Some("application/geo+json"), None), Label::Target);
        // Jobs add their own extensions.
        let none = TargetSet::new(Preset::None, &["application/pdf".into()], &[]);
        assert_eq!(
            none.classify_file(Some("application/octet-stream"), Some("a.csv")),
            Label::Neither
        );
        let custom = none.with_extensions(&["CSV".into()]);
        assert_eq!(
            custom.classify_file(Some("application/octet-stream"), Some("a.csv")),
            Label::Target
        );
    }

    #[test]
    fn magic_numbers_name_what_generic_types_hide() {
        assert_eq!(sniff_extension(b"%PDF-1.7\n"), Some("pdf"));
        assert_eq!(sniff_extension(b"PK\x03\x04rest"), Some("zip"));
        assert_eq!(sniff_extension(b"\x1f\x8b\x08"), Some("gz"));
        assert_eq!(sniff_extension(b"\xef\xbb\xbf<?xml version"), Some("xml"));
        assert_eq!(sniff_extension(b" {\n \"cells\": []"), Some("json"));
        assert_eq!(sniff_extension(b"{}"), None);
        assert_eq!(sniff_extension(b"year,value\n"), None);
        assert_eq!(sniff_extension(b"BZ"), None, "cut short");
        assert_eq!(sniff_extension(b""), None);
    }

    #[test]
    fn file_names_come_from_the_disposition_then_the_url() {
        let u = |s: &str| url::Url::parse(s).unwrap();
        let page = u("http://a.test/download?id=3");
        assert_eq!(file_name(&page, None).as_deref(), Some("download"));
        assert_eq!(
            file_name(&page, Some("attachment; filename=\"data 2024.csv\"")).as_deref(),
            Some("data 2024.csv")
        );
        assert_eq!(
            file_name(
                &page,
                Some("attachment; filename=x.txt; filename*=UTF-8''donn%C3%A9es.csv")
            )
            .as_deref(),
            Some("données.csv"),
            "filename* wins"
        );
        assert_eq!(
            file_name(&page, Some("attachment; filename=\"../../etc/passwd.csv\"")).as_deref(),
            Some("passwd.csv")
        );
        assert_eq!(
            file_name(&u("http://a.test/files/pop%20est.csv"), Some("inline")).as_deref(),
            Some("pop est.csv")
        );
        assert_eq!(file_name(&u("http://a.test/dir/"), None), None);
    }
}
