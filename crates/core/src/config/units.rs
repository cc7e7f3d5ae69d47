//! Sizes (`"20 GiB"`, `"512 MiB"`, `1048576`) and durations (`"1s"`, `"500ms"`) written in config files.
//!
//! Sizes are parsed by hand rather than with `bytesize`'s `FromStr`, which
//! saturates on overflow and rounds fractions silently: a typo in a budget
//! must be an error, not a different budget.

use std::time::Duration;

/// Units a size may carry, matched case-insensitively.
const SIZE_UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("tib", 1 << 40),
];

/// The unit list as error messages show it.
const SIZE_UNITS_HELP: &str = "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB";

/// Most decimal places a size may have ("1.5 GiB"); more is surely a typo.
const MAX_SIZE_DECIMALS: usize = 9;

/// Bytes in a size string: a number (decimals allowed, `_` between digits) and an optional unit.
///
/// The error says what is wrong with the text, without repeating the text.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty size".into());
    }
    let number_len = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (number, unit) = (&s[..number_len], s[number_len..].trim_start());
    if number.is_empty() {
        return Err(format!(
            "expected a number followed by an optional unit ({SIZE_UNITS_HELP})"
        ));
    }
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (number, None),
    };
    let whole = digits(whole).ok_or_else(|| format!("malformed number {number:?}"))?;
    let fraction = match fraction {
        Some(f) => Some(digits(f).ok_or_else(|| format!("malformed number {number:?}"))?),
        None => None,
    };
    if whole.is_empty() && fraction.as_deref().is_none_or(str::is_empty) {
        return Err(format!("malformed number {number:?}"));
    }
    let factor = if unit.is_empty() {
        1
    } else {
        SIZE_UNITS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(unit))
            .map(|&(_, factor)| factor)
            .ok_or_else(|| format!("unknown unit {unit:?} (expected one of: {SIZE_UNITS_HELP})"))?
    };
    let too_large = || "too large (at most 16 EiB)".to_string();
    // ".5 GiB" has an empty whole part: zero.
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_large())?
    };
    let mut bytes = whole
        .checked_mul(u128::from(factor))
        .ok_or_else(too_large)?;
    if let Some(fraction) = fraction.filter(|f| !f.is_empty()) {
        if fraction.len() > MAX_SIZE_DECIMALS {
            return Err(format!("more than {MAX_SIZE_DECIMALS} decimal places"));
        }
        let scale = 10u128.pow(fraction.len() as u32);
        let numerator: u128 = fraction.parse().map_err(|_| too_large())?;
        let part = numerator * u128::from(factor);
        if part % scale != 0 {
            return Err("not a whole number of bytes".into());
        }
        bytes += part / scale;
    }
    u64::try_from(bytes).map_err(|_| too_large())
}

/// The digits of `s` with `_` separators removed, when every `_` stands between two digits.
fn digits(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => out.push(char::from(c)),
            b'_' if i > 0
                && i + 1 < b.len()
                && b[i - 1].is_ascii_digit()
                && b[i + 1].is_ascii_digit() => {}
            _ => return None,
        }
    }
    Some(out)
}

/// A duration such as `"1s"`, `"500ms"`, `"1h 30min"`, `"0s"` (humantime syntax).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim()).map_err(|e| e.to_string())
}

/// A duration as a person writes it back (`1s`, `1h 30m`).
pub fn show_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// A byte count as a person writes it back: the largest binary unit that divides it.
pub fn show_size(bytes: u64) -> String {
    for (unit, factor) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if bytes >= factor && bytes % factor == 0 {
            return format!("{} {unit}", bytes / factor);
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_in_every_documented_form() {
        assert_eq!(parse_size("20 GiB"), Ok(20 << 30));
        assert_eq!(parse_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("512 mib"), Ok(512 << 20));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("1_000 KB"), Ok(1_000_000));
        assert_eq!(parse_size("3 MB"), Ok(3_000_000));
        assert_eq!(parse_size("2 GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("1 TiB"), Ok(1 << 40));
        assert_eq!(parse_size("1.5 KiB"), Ok(1536));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size(" 7 B "), Ok(7));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn bad_sizes_say_why() {
        assert_eq!(parse_size(""), Err("empty size".into()));
        assert_eq!(
            parse_size("20 GB2"),
            Err(
                "unknown unit \"GB2\" (expected one of: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
                    .into()
            )
        );
        assert_eq!(
            parse_size("20 G").map_err(|e| e.starts_with("unknown unit \"G\"")),
            Err(true)
        );
        assert_eq!(
            parse_size("GiB"),
            Err("expected a number followed by an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)".into())
        );
        assert_eq!(parse_size("-5"), parse_size("GiB"));
        assert_eq!(
            parse_size("1.2.3 MiB"),
            Err("malformed number \"1.2.3\"".into())
        );
        assert_eq!(parse_size("1__0"), Err("malformed number \"1__0\"".into()));
        assert_eq!(parse_size("_1"), Err("malformed number \"_1\"".into()));
        assert_eq!(parse_size(". MiB"), Err("malformed number \".\"".into()));
        assert_eq!(parse_size(".5 KiB"), Ok(512));
        assert_eq!(
            parse_size("1.1 B"),
            Err("not a whole number of bytes".into())
        );
        assert_eq!(
            parse_size("16777216 TiB"),
            Err("too large (at most 16 EiB)".into())
        );
        assert_eq!(
            parse_size("18446744073709551616"),
            Err("too large (at most 16 EiB)".into())
        );
        assert_eq!(
            parse_size("99999999999999999999999999999999999999999"),
            Err("too large (at most 16 EiB)".into())
        );
        assert_eq!(
            parse_size("1.0000000001 GiB"),
            Err("more than 9 decimal places".into())
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("1h 30min"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("1 sek")
            .unwrap_err()
            .contains("unknown time unit \"sek\""));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("99999999999999999999999h").is_err());
    }

    #[test]
    fn shown_values_read_back() {
        for b in [0, 1, 1024, 1536, 512 << 20, 20 << 30, 3 << 40, u64::MAX] {
            assert_eq!(parse_size(&show_size(b)), Ok(b), "{}", show_size(b));
        }
        assert_eq!(show_size(20 << 30), "20 GiB");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1s 500ms");
    }

    proptest! {
        #[test]
        fn size_parser_never_panics(s in "\\PC{0,40}") {
            let _ = parse_size(&s);
        }

        #[test]
        fn size_grammar_roundtrips(n in 0u64..1_000_000, unit in 0usize..SIZE_UNITS.len()) {
            let (name, factor) = SIZE_UNITS[unit];
            prop_assert_eq!(parse_size(&format!("{n} {name}")), Ok(n * factor));
            prop_assert_eq!(parse_size(&format!("{n}{}", name.to_uppercase())), Ok(n * factor));
        }

        #[test]
        fn duration_parser_never_panics(s in "[0-9a-zµ .+-]{0,30}") {
            let _ = parse_duration(&s);
        }
    }
}
