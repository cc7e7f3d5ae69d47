//! A job's include and exclude URL patterns (`[scope] include`, `exclude`).
//!
//! A pattern is a glob unless it starts with `re:`, then a regular
//! expression searched anywhere in the URL (anchor it with `^` to match a
//! prefix). What a glob is compared with depends on its form:
//!
//! - with `://` (`https://example.org/data/**`): the whole URL;
//! - starting with `/` (`/reports/*/tables/**`): the URL's path;
//! - otherwise (`*.csv`, `annual-*`): the last segment of the path.
//!
//! In a glob `*` and `?` never cross a `/`, `**` does (as in `.gitignore`),
//! and `[...]`/`{a,b}` are classes and alternatives (globset syntax).

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;
use std::fmt;
use url::Url;

/// One compiled pattern and the text it was written as.
#[derive(Clone)]
struct Pattern {
    source: String,
    matcher: Matcher,
}

#[derive(Clone)]
enum Matcher {
    Url(GlobMatcher),
    Path(GlobMatcher),
    FileName(GlobMatcher),
    Regex(Regex),
}

/// Why a pattern does not compile.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PatternError(String);

/// Longest pattern accepted (a regex's compiled size is bounded separately).
const MAX_PATTERN_LEN: usize = 2048;
/// Compiled size limit of one regex, so that a job file cannot make the
/// check of every link slow or large.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

impl Pattern {
    fn parse(source: &str) -> Result<Pattern, PatternError> {
        if source.is_empty() {
            return Err(PatternError("an empty pattern matches nothing".into()));
        }
        if source.len() > MAX_PATTERN_LEN {
            return Err(PatternError(format!("longer than {MAX_PATTERN_LEN} bytes")));
        }
        let matcher = if let Some(re) = source.strip_prefix("re:") {
            let regex = regex::RegexBuilder::new(re)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| {
                    PatternError(format!("not a regular expression: {}", regex_reason(&e)))
                })?;
            Matcher::Regex(regex)
        } else {
            let glob = GlobBuilder::new(source)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| PatternError(format!("not a glob: {}", e.kind())))?
                .compile_matcher();
            if source.contains("://") {
                Matcher::Url(glob)
            } else if source.starts_with('/') {
                Matcher::Path(glob)
            } else {
                Matcher::FileName(glob)
            }
        };
        Ok(Pattern {
            source: source.to_string(),
            matcher,
        })
    }

    fn matches(&self, url: &Url) -> bool {
        match &self.matcher {
            Matcher::Url(g) => g.is_match(url.as_str()),
            Matcher::Path(g) => g.is_match(url.path()),
            Matcher::FileName(g) => {
                let name = url.path().rsplit('/').next().unwrap_or_default();
                g.is_match(name)
            }
            Matcher::Regex(r) => r.is_match(url.as_str()),
        }
    }
}

/// The one-line reason of a regex error (its syntax errors draw the pattern
/// over several lines, which an error message on one line cannot show).
fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .find_map(|l| l.strip_prefix("error: "))
        .map(str::to_string)
        .unwrap_or_else(|| text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Check one pattern as a job file gives it.
pub fn check_pattern(source: &str) -> Result<(), PatternError> {
    Pattern::parse(source).map(|_| ())
}

/// A job's include and exclude patterns. With no include pattern every URL
/// is included; an excluded URL is out whatever the includes say.
#[derive(Clone, Default)]
pub struct UrlPatterns {
    include: Vec<Pattern>,
    exclude: Vec<Pattern>,
}

impl UrlPatterns {
    /// Compile both lists; the error names the pattern that failed.
    pub fn new(include: &[String], exclude: &[String]) -> Result<UrlPatterns, PatternError> {
        let compile = |list: &[String]| -> Result<Vec<Pattern>, PatternError> {
            list.iter()
                .map(|p| Pattern::parse(p).map_err(|e| PatternError(format!("{p:?}: {e}"))))
                .collect()
        };
        Ok(UrlPatterns {
            include: compile(include)?,
            exclude: compile(exclude)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }

    /// The patterns as written: (include, exclude).
    pub fn sources(&self) -> (Vec<&str>, Vec<&str>) {
        fn of(list: &[Pattern]) -> Vec<&str> {
            list.iter().map(|p| p.source.as_str()).collect()
        }
        (of(&self.include), of(&self.exclude))
    }

    /// Whether an exclude pattern matches `url`.
    pub fn excludes(&self, url: &Url) -> bool {
        self.exclude.iter().any(|p| p.matches(url))
    }

    /// Whether `url` passes: included (or no include pattern) and not excluded.
    pub fn admits(&self, url: &Url) -> bool {
        let included = self.include.is_empty() || self.include.iter().any(|p| p.matches(url));
        included && !self.excludes(url)
    }
}

impl fmt::Debug for UrlPatterns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (include, exclude) = self.sources();
        f.debug_struct("UrlPatterns")
            .field("include", &include)
            .field("exclude", &exclude)
            .finish()
    }
}

impl PartialEq for UrlPatterns {
    fn eq(&self, other: &Self) -> bool {
        self.sources() == other.sources()
    }
}

impl Eq for UrlPatterns {}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    fn patterns(include: &[&str], exclude: &[&str]) -> UrlPatterns {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        UrlPatterns::new(&own(include), &own(exclude)).expect("valid patterns")
    }

    #[test]
    fn globs_match_the_url_the_path_or_the_file_name_by_their_form() {
        let p = patterns(&["https://site.test/data/*"], &[]);
        assert!(p.admits(&url("https://site.test/data/a.csv")));
        assert!(p.admits(&url("https://site.test/data/a.csv?v=2")));
        assert!(
            !p.admits(&url("https://site.test/data/2020/a.csv")),
            "* stays in a segment"
        );
        assert!(!p.admits(&url("https://site.test/other/a.csv")));

        let p = patterns(&["https://site.test/data/**"], &[]);
        assert!(p.admits(&url("https://site.test/data/2020/q1/a.csv")));

        let p = patterns(&["/reports/*/tables/**"], &[]);
        assert!(p.admits(&url("http://any.test/reports/2021/tables/x/y.xlsx")));
        assert!(!p.admits(&url("http://any.test/reports/2021/charts/y.png")));

        let p = patterns(&["*.{csv,xlsx}"], &[]);
        assert!(p.admits(&url("http://any.test/deep/down/file.csv")));
        assert!(p.admits(&url("http://any.test/file.xlsx?download=1")));
        assert!(!p.admits(&url("http://any.test/file.csv/view")));
    }

    #[test]
    fn exclude_wins_and_no_include_means_everything() {
        let p = patterns(&[], &["/archive/**", "re:[?&]print="]);
        assert!(p.admits(&url("http://a.test/news/1")));
        assert!(!p.admits(&url("http://a.test/archive/2001/1")));
        assert!(!p.admits(&url("http://a.test/news/1?print=1")));
        let p = patterns(&["/news/**"], &["*.pdf"]);
        assert!(p.admits(&url("http://a.test/news/a.csv")));
        assert!(!p.admits(&url("http://a.test/news/a.pdf")));
        assert!(!p.admits(&url("http://a.test/sport/a.csv")));
        assert!(UrlPatterns::default().admits(&url("http://a.test/")));
    }

    #[test]
    fn bad_patterns_say_which_and_why() {
        let own = |s: &str| vec![s.to_string()];
        let e = UrlPatterns::new(&own("re:(unclosed"), &[]).unwrap_err();
        assert!(
            e.to_string().contains("re:(unclosed") && e.to_string().contains("regular expression"),
            "{e}"
        );
        let e = UrlPatterns::new(&[], &own("/a/[z-a]")).unwrap_err();
        assert!(e.to_string().contains("not a glob"), "{e}");
        assert!(UrlPatterns::new(&own(""), &[]).is_err());
        assert!(check_pattern(&"x".repeat(MAX_PATTERN_LEN + 1)).is_err());
        let huge = format!("re:{}", "(a|b){1000}".repeat(20));
        assert!(
            check_pattern(&huge).is_err(),
            "a regex too large to compile is refused"
        );
    }
}
