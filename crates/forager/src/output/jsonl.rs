//! One JSON value per line, safe for every line splitter: `manifest.jsonl`
//! and `crawl.log`.
//!
//! JSON allows U+2028, U+2029 and the C1 controls (U+0080–U+009F, U+0085 NEL
//! among them) raw inside strings, and serde_json writes them so. But
//! splitters that follow Unicode's line breaks (Python's `str.splitlines`,
//! JavaScript's line terminators, many editors) cut a line there, and a
//! page's `id` or `class` — copied into a row's `tag_path` — is enough to put
//! one in a row. They are written as `\uXXXX` escapes instead: the same JSON
//! value, and `\n` stays the only line break in the file.

use serde::Serialize;
use std::io;

/// Appends `value` as one JSON line (ending in `\n`) to `buf`.
pub fn push_line<T: Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *buf, LineSafe);
    value.serialize(&mut ser).map_err(io::Error::other)?;
    buf.push(b'\n');
    Ok(())
}

/// Whether a line splitter may break a line at `c` (serde_json already
/// escapes the C0 controls: `\n`, `\r`, VT, FF, the separators 1C–1E).
fn breaks_lines(c: char) -> bool {
    matches!(c, '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}')
}

/// serde_json's compact output, with [`breaks_lines`] characters escaped.
struct LineSafe;

impl serde_json::ser::Formatter for LineSafe {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if breaks_lines(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unicode_line_breaks_are_escaped_and_the_value_is_unchanged() {
        let text = "a\u{2028}b\u{2029}c\u{85}d\u{80}e\u{9f}f\u{a0}g\u{7f}h\né";
        let mut buf = Vec::new();
        push_line(&mut buf, &serde_json::json!({ "tag_path": text })).unwrap();
        let line = std::str::from_utf8(&buf).unwrap();
        assert_eq!(line.lines().count(), 1);
        assert_eq!(
            line.split(['\u{2028}', '\u{2029}', '\u{85}', '\u{0b}', '\u{0c}', '\r'])
                .count(),
            1,
            "{line}"
        );
        assert!(
            line.contains(r"a\u2028b\u2029c\u0085d\u0080e\u009ff"),
            "{line}"
        );
        // U+00A0 and DEL break no line: left as they are, like every other character.
        assert!(line.contains("f\u{a0}g\u{7f}h"), "{line}");
        let back: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(back["tag_path"], text);
    }

    #[test]
    fn plain_rows_are_what_serde_json_writes() {
        let value = serde_json::json!({"url": "http://a.test/x\"y", "n": 3, "ok": true});
        let mut buf = Vec::new();
        push_line(&mut buf, &value).unwrap();
        let mut want = serde_json::to_vec(&value).unwrap();
        want.push(b'\n');
        assert_eq!(buf, want);
    }
}
