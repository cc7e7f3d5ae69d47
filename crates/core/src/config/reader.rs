//! A typed walk over a spanned TOML document that collects errors with their field path and line.
//!
//! Serde's derive would stop at the first error and describe it in its own
//! words; walking toml's spanned tree by hand lets every refusal carry the
//! exact field path (`targets.mime[2]`), the line of the offending key or
//! value, and a reason written for the person editing the file. A reader
//! records an error and returns `None`, so one pass reports every problem.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use toml::de::{DeTable, DeValue};

use super::error::{column_of, line_of, quote, ConfigError};
use super::units;

/// One located value of the document: where it is and what it is called.
#[derive(Clone, Copy)]
pub(crate) struct Node<'v> {
    pub value: &'v DeValue<'v>,
    pub span: Span,
}

/// A byte range in the document (kept `Copy`, unlike `Range`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

impl From<Range<usize>> for Span {
    fn from(r: Range<usize>) -> Self {
        Span {
            start: r.start,
            end: r.end,
        }
    }
}

/// A checked value with its field path and place, for checks that involve several fields.
pub(crate) struct Located<'v, T> {
    pub path: String,
    pub node: Node<'v>,
    pub value: T,
}

/// The entries of one TOML table, in file order, with the table's field path.
pub(crate) struct Table<'v> {
    pub path: String,
    entries: Vec<Entry<'v>>,
}

struct Entry<'v> {
    key: &'v str,
    key_span: Span,
    node: Node<'v>,
}

impl<'v> Table<'v> {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<Node<'v>> {
        self.entries.iter().find(|e| e.key == key).map(|e| e.node)
    }

    /// Every entry as (key, key span, value), in file order.
    pub fn entries(&self) -> impl Iterator<Item = (&'v str, Span, Node<'v>)> + '_ {
        self.entries.iter().map(|e| (e.key, e.key_span, e.node))
    }

    /// The field path of `key` in this table.
    pub fn child(&self, key: &str) -> String {
        child_path(&self.path, key)
    }
}

/// `parent.key`, quoting the key the TOML way when it is not a bare key.
pub(crate) fn child_path(parent: &str, key: &str) -> String {
    // Long keys are quoted, which cuts them: a field path stays readable.
    let bare = !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let key = if bare { key.to_owned() } else { quote(key) };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

/// "a string", "an integer"… as a message says what it found.
fn kind_of(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The error collector of one document.
pub(crate) struct Reader<'t> {
    file: &'t Path,
    text: &'t str,
    errors: Vec<ConfigError>,
}

impl<'t> Reader<'t> {
    pub fn new(file: &'t Path, text: &'t str) -> Self {
        Reader {
            file,
            text,
            errors: Vec::new(),
        }
    }

    /// A path the file names, as the program must open it: a relative one
    /// is taken from the file's own folder, as a person reading the file
    /// expects (and as the daemon config's folders are), not from wherever
    /// the program was started.
    pub fn path_in_file(&self, named: &str) -> std::path::PathBuf {
        let p = Path::new(named);
        if p.is_relative() {
            self.file.parent().unwrap_or(Path::new("")).join(p)
        } else {
            p.to_path_buf()
        }
    }

    /// Parse `text` as TOML; a syntax error becomes a [`ConfigError`] with line and column.
    pub fn parse_document(&self) -> Result<toml::Spanned<DeTable<'t>>, ConfigError> {
        DeTable::parse(self.text).map_err(|e| self.syntax_error(&e))
    }

    fn syntax_error(&self, e: &toml::de::Error) -> ConfigError {
        let mut reason = e.message().replace(", expected nothing", "");
        // One line: toml may describe an error over several lines.
        reason = reason.lines().map(str::trim).collect::<Vec<_>>().join("; ");
        let span = e.span();
        if reason == "duplicate key" {
            if let Some(key) = span.as_ref().and_then(|s| self.text.get(s.clone())) {
                reason = format!("duplicate key {}", quote(key));
            }
        }
        match span {
            Some(s) => ConfigError::new(
                self.file,
                Some(line_of(self.text, s.start)),
                "",
                format!(
                    "invalid TOML (column {}): {reason}",
                    column_of(self.text, s.start)
                ),
            ),
            None => ConfigError::new(self.file, None, "", format!("invalid TOML: {reason}")),
        }
    }

    /// Record an error at `span` (or at no line).
    pub fn error(&mut self, span: Option<Span>, field: &str, reason: impl Into<String>) {
        let line = span.map(|s| line_of(self.text, s.start));
        self.errors
            .push(ConfigError::new(self.file, line, field, reason.into()));
    }

    /// Every error recorded, in file order (errors without a line last).
    pub fn finish(mut self) -> Result<(), Vec<ConfigError>> {
        if self.errors.is_empty() {
            return Ok(());
        }
        self.errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
        Err(self.errors)
    }

    /// The document's top-level table, refusing keys not in `known`.
    pub fn root<'v>(&mut self, doc: &'v toml::Spanned<DeTable<'v>>, known: &[&str]) -> Table<'v> {
        self.table_entries(String::new(), doc.get_ref(), Some(known))
    }

    /// A sub-table, refusing keys not in `known`; `None` (error recorded) when `node` is not a table.
    pub fn table<'v>(&mut self, path: &str, node: Node<'v>, known: &[&str]) -> Option<Table<'v>> {
        match node.value {
            DeValue::Table(t) => Some(self.table_entries(path.to_owned(), t, Some(known))),
            other => {
                self.type_error(path, node.span, "a table", other);
                None
            }
        }
    }

    /// A table whose keys are free (host names…), each entry handed back to the caller.
    pub fn open_table<'v>(&mut self, path: &str, node: Node<'v>) -> Option<Table<'v>> {
        match node.value {
            DeValue::Table(t) => Some(self.table_entries(path.to_owned(), t, None)),
            other => {
                self.type_error(path, node.span, "a table", other);
                None
            }
        }
    }

    fn table_entries<'v>(
        &mut self,
        path: String,
        t: &'v DeTable<'v>,
        known: Option<&[&str]>,
    ) -> Table<'v> {
        let mut entries: Vec<Entry<'v>> = t
            .iter()
            .map(|(k, v)| Entry {
                key: k.get_ref().as_ref(),
                key_span: k.span().into(),
                node: Node {
                    value: v.get_ref(),
                    span: v.span().into(),
                },
            })
            .collect();
        // toml sorts keys; users read files top to bottom.
        entries.sort_by_key(|e| e.key_span.start);
        if let Some(known) = known {
            for e in &entries {
                if !known.contains(&e.key) {
                    self.error(
                        Some(e.key_span),
                        &child_path(&path, e.key),
                        format!("unknown field (expected one of: {})", known.join(", ")),
                    );
                }
            }
        }
        Table { path, entries }
    }

    fn type_error(&mut self, field: &str, span: Span, expected: &str, found: &DeValue<'_>) {
        self.error(
            Some(span),
            field,
            format!("expected {expected}, found {}", kind_of(found)),
        );
    }

    /// Record a validation failure of `node`.
    pub fn invalid(&mut self, field: &str, node: Node<'_>, reason: impl Into<String>) {
        self.error(Some(node.span), field, reason);
    }

    pub fn string<'v>(&mut self, field: &str, node: Node<'v>) -> Option<&'v str> {
        match node.value {
            DeValue::String(s) => Some(s.as_ref()),
            other => {
                self.type_error(field, node.span, "a string", other);
                None
            }
        }
    }

    pub fn bool(&mut self, field: &str, node: Node<'_>) -> Option<bool> {
        match node.value {
            DeValue::Boolean(b) => Some(*b),
            other => {
                self.type_error(field, node.span, "a boolean", other);
                None
            }
        }
    }

    /// A non-negative integer that fits in a `u64`.
    pub fn u64(&mut self, field: &str, node: Node<'_>) -> Option<u64> {
        match node.value {
            DeValue::Integer(i) => {
                let digits = i.as_str();
                if digits.starts_with('-') && digits.trim_start_matches(['-', '0']).is_empty() {
                    return Some(0);
                }
                if digits.starts_with('-') {
                    self.invalid(
                        field,
                        node,
                        format!("expected a non-negative integer, found {i}"),
                    );
                    return None;
                }
                match u64::from_str_radix(digits.trim_start_matches('+'), i.radix()) {
                    Ok(n) => Some(n),
                    Err(_) => {
                        self.invalid(field, node, format!("integer {i} is too large"));
                        None
                    }
                }
            }
            other => {
                self.type_error(field, node.span, "an integer", other);
                None
            }
        }
    }

    /// A non-negative integer in `[min, max]`.
    pub fn u64_in(&mut self, field: &str, node: Node<'_>, min: u64, max: u64) -> Option<u64> {
        let n = self.u64(field, node)?;
        if n < min || n > max {
            self.invalid(field, node, format!("{n} is out of range ({min} to {max})"));
            return None;
        }
        Some(n)
    }

    /// A size: an integer of bytes, or a string such as `"512 MiB"`.
    pub fn size(&mut self, field: &str, node: Node<'_>) -> Option<u64> {
        match node.value {
            DeValue::Integer(_) => self.u64(field, node),
            DeValue::String(s) => match units::parse_size(s) {
                Ok(n) => Some(n),
                Err(why) => {
                    self.invalid(field, node, format!("invalid size {}: {why}", quote(s)));
                    None
                }
            },
            other => {
                self.type_error(
                    field,
                    node.span,
                    "a size (bytes, or a string such as \"512 MiB\")",
                    other,
                );
                None
            }
        }
    }

    /// A duration string such as `"1s"` or `"500ms"`.
    pub fn duration(&mut self, field: &str, node: Node<'_>) -> Option<Duration> {
        match node.value {
            DeValue::String(s) => match units::parse_duration(s) {
                Ok(d) => Some(d),
                Err(why) => {
                    self.invalid(field, node, format!("invalid duration {}: {why}", quote(s)));
                    None
                }
            },
            other => {
                self.type_error(
                    field,
                    node.span,
                    "a duration string such as \"1s\" or \"500ms\"",
                    other,
                );
                None
            }
        }
    }

    /// A duration in `[min, max]`.
    pub fn duration_in(
        &mut self,
        field: &str,
        node: Node<'_>,
        min: Duration,
        max: Duration,
    ) -> Option<Duration> {
        let d = self.duration(field, node)?;
        if d < min {
            let why = if d.is_zero() {
                "must be longer than 0s".to_owned()
            } else {
                format!(
                    "{} is shorter than the minimum of {}",
                    units::show_duration(d),
                    units::show_duration(min)
                )
            };
            self.invalid(field, node, why);
            return None;
        }
        if d > max {
            self.invalid(
                field,
                node,
                format!(
                    "{} is longer than the maximum of {}",
                    units::show_duration(d),
                    units::show_duration(max)
                ),
            );
            return None;
        }
        Some(d)
    }

    /// The elements of an array with their field paths (`field[i]`).
    pub fn array<'v>(&mut self, field: &str, node: Node<'v>) -> Option<Vec<(String, Node<'v>)>> {
        match node.value {
            DeValue::Array(items) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        (
                            format!("{field}[{i}]"),
                            Node {
                                value: v.get_ref(),
                                span: v.span().into(),
                            },
                        )
                    })
                    .collect(),
            ),
            other => {
                self.type_error(field, node.span, "an array", other);
                None
            }
        }
    }

    /// An array of strings, each checked (and normalised) by `check`, with where each one stands.
    ///
    /// `None` when the value is not an array; bad elements are recorded and skipped.
    pub fn strings_located<'v, T>(
        &mut self,
        field: &str,
        node: Node<'v>,
        check: impl Fn(&str) -> Result<T, String>,
    ) -> Option<Vec<Located<'v, T>>> {
        let items = self.array(field, node)?;
        let mut out = Vec::with_capacity(items.len());
        for (path, item) in items {
            let Some(s) = self.string(&path, item) else {
                continue;
            };
            match check(s) {
                Ok(value) => out.push(Located {
                    path,
                    node: item,
                    value,
                }),
                Err(why) => self.invalid(&path, item, why),
            }
        }
        Some(out)
    }

    /// [`Reader::strings_located`] without the places.
    pub fn strings_with<T>(
        &mut self,
        field: &str,
        node: Node<'_>,
        check: impl Fn(&str) -> Result<T, String>,
    ) -> Option<Vec<T>> {
        self.strings_located(field, node, check)
            .map(|items| items.into_iter().map(|l| l.value).collect())
    }

    /// One of a fixed set of names.
    pub fn choice<T: Copy>(
        &mut self,
        field: &str,
        node: Node<'_>,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let s = self.string(field, node)?;
        match choices.iter().find(|(name, _)| *name == s) {
            Some(&(_, v)) => Some(v),
            None => {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                self.invalid(
                    field,
                    node,
                    format!(
                        "unknown value {} (expected one of: {})",
                        quote(s),
                        names.join(", ")
                    ),
                );
                None
            }
        }
    }
}
