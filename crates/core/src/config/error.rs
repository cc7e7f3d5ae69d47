//! The one error type of configuration files: `FILE:LINE: FIELD: REASON` on one line.

use std::fmt;
use std::path::{Path, PathBuf};

/// Longest user-supplied value quoted in a message, in characters (a message stays one readable line).
const MAX_QUOTED_CHARS: usize = 80;

/// What is wrong with a configuration or job file, and where.
///
/// `Display` writes exactly one line, `FILE:LINE: FIELD: REASON`; the line is
/// left out when unknown (a missing field, an unreadable file) and the field
/// when the problem is not one field's (a TOML syntax error). Control
/// characters from file names or values are escaped, so a log line or the
/// status API never receives a line break from a hostile file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file as the caller named it (the `origin` of `parse_*`).
    pub file: PathBuf,
    /// 1-based line, when the problem has a place in the file.
    pub line: Option<usize>,
    /// Dotted path of the field: `budget.requests`, `seeds[1]`, `resolve."a.test"`; empty for syntax errors.
    pub field: String,
    /// Why the value is refused, for a person.
    pub reason: String,
}

impl ConfigError {
    pub fn new(
        file: &Path,
        line: Option<usize>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        ConfigError {
            file: file.to_path_buf(),
            line,
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&one_line(&self.file.display().to_string()))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", one_line(&self.field))?;
        }
        write!(f, ": {}", one_line(&self.reason))
    }
}

impl std::error::Error for ConfigError {}

/// `s` with every control character escaped (`\n`, `\t`, `\u{1b}`…), so it cannot break a line.
pub(crate) fn one_line(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A user value quoted for a message: `"…"` with escapes, cut after [`MAX_QUOTED_CHARS`].
pub(crate) fn quote(s: &str) -> String {
    match s.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{:?}…", &s[..cut]),
        None => format!("{s:?}"),
    }
}

/// 1-based line of a byte offset in `text` (offsets past the end count as the last line).
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// 1-based column (in characters) of a byte offset in `text`.
pub(crate) fn column_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    let bytes = &text.as_bytes()[..end];
    let start = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |nl| nl + 1);
    // Count characters, not bytes: a non-ASCII key before the error must not shift the column.
    bytes[start..]
        .iter()
        .filter(|&&b| (b & 0xC0) != 0x80)
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_has_every_part_and_drops_the_missing_ones() {
        let p = Path::new("jobs.d/bea.toml");
        let e = ConfigError::new(p, Some(12), "budget.requests", "expected an integer");
        assert_eq!(
            e.to_string(),
            "jobs.d/bea.toml:12: budget.requests: expected an integer"
        );
        let e = ConfigError::new(p, None, "name", "missing required field");
        assert_eq!(
            e.to_string(),
            "jobs.d/bea.toml: name: missing required field"
        );
        let e = ConfigError::new(p, Some(3), "", "invalid TOML");
        assert_eq!(e.to_string(), "jobs.d/bea.toml:3: invalid TOML");
    }

    #[test]
    fn display_never_breaks_a_line() {
        let e = ConfigError::new(
            Path::new("a\nb.toml"),
            Some(1),
            "x\ry",
            "bad\u{1b}[2J\nvalue",
        );
        let s = e.to_string();
        assert!(
            !s.contains('\n') && !s.contains('\r') && !s.contains('\u{1b}'),
            "{s}"
        );
        assert_eq!(s, "a\\nb.toml:1: x\\ry: bad\\u{1b}[2J\\nvalue");
    }

    #[test]
    fn quote_escapes_and_truncates() {
        assert_eq!(quote("a\"b"), "\"a\\\"b\"");
        let long = "é".repeat(200);
        let q = quote(&long);
        assert!(q.ends_with('…'));
        assert_eq!(q.chars().filter(|&c| c == 'é').count(), MAX_QUOTED_CHARS);
    }

    #[test]
    fn positions_are_one_based_lines_and_char_columns() {
        let text = "a = 1\nb = \"é\" x\n";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 6), 2);
        assert_eq!(line_of(text, 10_000), 3);
        let x = text.find('x').unwrap();
        assert_eq!(column_of(text, x), 9);
        assert_eq!(column_of(text, 0), 1);
    }
}
