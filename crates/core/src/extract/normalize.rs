//! URL normalisation and link resolution (ARCHITECTURE.md § Crawl loop, § Politeness and safety; issue 7 item 2).
//!
//! Every URL the crawler compares, stores or counts goes through [`normalize`],
//! so that two spellings of one resource (`%7e` vs `~`, `#top` vs nothing, a
//! session id in the query) become one key in the seen set and the Bloom
//! filters. [`resolve`] turns a raw attribute value into such a URL, or says
//! why it refused it ([`LinkRejected`]), so the engine can count traps.

use encoding_rs::Encoding;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use url::{Host, Url};

/// Limits and normalisation rules for URLs found on pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlRules {
    /// Longest URL (after normalisation) the crawler accepts, in bytes.
    pub max_len: usize,
    /// A path segment appearing more than this many times marks a robot trap.
    pub max_repeated_segments: usize,
    /// Session-id keys removed from queries and `;key=value` path parameters
    /// (compared case-insensitively).
    pub strip_params: Vec<String>,
}

/// Session-id parameter names of the common server frameworks (Java, PHP,
/// ColdFusion, ASP, generic).
pub const DEFAULT_STRIP_PARAMS: [&str; 8] = [
    "jsessionid",
    "phpsessid",
    "sid",
    "sessionid",
    "sessid",
    "cfid",
    "cftoken",
    "aspsessionid",
];

impl Default for UrlRules {
    fn default() -> Self {
        UrlRules {
            max_len: 2048,
            max_repeated_segments: 3,
            strip_params: DEFAULT_STRIP_PARAMS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl UrlRules {
    fn strips(&self, key: &str) -> bool {
        !key.is_empty()
            && self
                .strip_params
                .iter()
                .any(|p| p.eq_ignore_ascii_case(key))
    }
}

/// Why a raw link was not turned into a crawlable URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub enum LinkRejected {
    /// Not parseable as a URL, even relative to the base.
    #[error("unparseable URL")]
    BadUrl,
    /// Not http or https (`mailto:`, `javascript:`, `data:`…).
    #[error("scheme is not http or https")]
    Scheme,
    /// Longer than [`UrlRules::max_len`] after normalisation.
    #[error("URL too long")]
    TooLong,
    /// A path segment repeats more than [`UrlRules::max_repeated_segments`] times.
    #[error("repeated path segments (robot trap)")]
    RepeatedSegments,
}

impl LinkRejected {
    /// Every kind, in a fixed order (for counters and metrics labels).
    pub const ALL: [LinkRejected; 4] = [
        LinkRejected::BadUrl,
        LinkRejected::Scheme,
        LinkRejected::TooLong,
        LinkRejected::RepeatedSegments,
    ];

    /// A stable snake_case name, usable as a metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkRejected::BadUrl => "bad_url",
            LinkRejected::Scheme => "scheme",
            LinkRejected::TooLong => "too_long",
            LinkRejected::RepeatedSegments => "repeated_segments",
        }
    }
}

/// Number of rejected links per [`LinkRejected`] kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectCounts {
    pub bad_url: u64,
    pub scheme: u64,
    pub too_long: u64,
    pub repeated_segments: u64,
}

impl RejectCounts {
    pub fn add(&mut self, kind: LinkRejected) {
        *self.slot(kind) += 1;
    }

    pub fn get(&self, kind: LinkRejected) -> u64 {
        match kind {
            LinkRejected::BadUrl => self.bad_url,
            LinkRejected::Scheme => self.scheme,
            LinkRejected::TooLong => self.too_long,
            LinkRejected::RepeatedSegments => self.repeated_segments,
        }
    }

    pub fn total(&self) -> u64 {
        LinkRejected::ALL.iter().map(|&k| self.get(k)).sum()
    }

    /// Adds another page's counts to these (saturating: counters never wrap).
    pub fn merge(&mut self, other: &RejectCounts) {
        for kind in LinkRejected::ALL {
            let slot = self.slot(kind);
            *slot = slot.saturating_add(other.get(kind));
        }
    }

    fn slot(&mut self, kind: LinkRejected) -> &mut u64 {
        match kind {
            LinkRejected::BadUrl => &mut self.bad_url,
            LinkRejected::Scheme => &mut self.scheme,
            LinkRejected::TooLong => &mut self.too_long,
            LinkRejected::RepeatedSegments => &mut self.repeated_segments,
        }
    }
}

/// Normalises `url` in place: lower-case scheme and host and no default port
/// (done by the `url` crate's parser), no trailing dot on the host, upper-case
/// percent-escapes with unreserved characters decoded in path and query, dot
/// segments resolved, no fragment, no empty `?`, and no session-id parameters
/// (query keys and `;key=value` path parameters in [`UrlRules::strip_params`]).
///
/// Query parameters keep their order: servers may depend on it. Idempotent,
/// never panics, and never makes the URL longer.
pub fn normalize(url: &mut Url, rules: &UrlRules) {
    url.set_fragment(None);
    normalize_host(url);
    if !url.cannot_be_a_base() {
        if let Some(path) = normalized_path(url.path(), rules) {
            url.set_path(&path);
        }
    }
    match url.query() {
        Some("") => url.set_query(None),
        Some(query) => {
            if let Some(new_query) = normalized_query(query, rules) {
                url.set_query(if new_query.is_empty() {
                    None
                } else {
                    Some(&new_query)
                });
            }
        }
        None => {}
    }
}

/// Resolves a raw `href`/`src` value against `base` into a normalised
/// http(s) URL, or says why it cannot be crawled.
pub fn resolve(base: &Url, raw: &str, rules: &UrlRules) -> Result<Url, LinkRejected> {
    resolve_with_encoding(base, raw, rules, None)
}

/// [`resolve`] for a document in a legacy encoding: browsers percent-encode a
/// link's non-ASCII query characters in the page's encoding, not in UTF-8.
pub(crate) fn resolve_with_encoding(
    base: &Url,
    raw: &str,
    rules: &UrlRules,
    encoding: Option<&'static Encoding>,
) -> Result<Url, LinkRejected> {
    let raw = raw.trim_matches(is_html_whitespace);
    // Normalisation can shrink a URL (escapes decoded, dot segments, session
    // ids), but never by 4x: refuse before parsing megabytes of attribute.
    if raw.len() > rules.max_len.saturating_mul(4) {
        return Err(LinkRejected::TooLong);
    }
    let options = Url::options().base_url(Some(base));
    let encode: &dyn Fn(&str) -> Cow<'_, [u8]> = &|s| match encoding {
        Some(enc) => enc.encode(s).0,
        None => Cow::Borrowed(s.as_bytes()),
    };
    let options = match encoding {
        Some(enc) if enc != encoding_rs::UTF_8 => options.encoding_override(Some(encode)),
        _ => options,
    };
    let mut url = options.parse(raw).map_err(|_| LinkRejected::BadUrl)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(LinkRejected::Scheme);
    }
    normalize(&mut url, rules);
    check_limits(&url, rules)?;
    Ok(url)
}

/// The trap checks of [`resolve`] alone, for URLs that reach the crawler by
/// other ways (redirect targets, sitemaps): length and repeated segments.
pub fn check_limits(url: &Url, rules: &UrlRules) -> Result<(), LinkRejected> {
    if url.as_str().len() > rules.max_len {
        return Err(LinkRejected::TooLong);
    }
    if has_repeated_segments(url.path(), rules.max_repeated_segments) {
        return Err(LinkRejected::RepeatedSegments);
    }
    Ok(())
}

/// The ASCII whitespace of the HTML spec, stripped around attribute URLs.
fn is_html_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

/// `example.com.` and `example.com` name the same host.
fn normalize_host(url: &mut Url) {
    // Other schemes have opaque hosts, which the domain parser below would
    // rewrite (IDNA) into another, longer host.
    if !matches!(url.scheme(), "http" | "https") {
        return;
    }
    let trimmed = match url.host() {
        Some(Host::Domain(domain)) if domain.ends_with('.') => domain.trim_end_matches('.'),
        _ => return,
    };
    // Without its dots a host may read as something else (`0..` is a
    // domain, `0` an IPv4 address): only a host that stays a domain is changed.
    let Ok(Host::Domain(trimmed)) = Host::parse(trimmed) else {
        return;
    };
    // A domain that parsed once parses again; if it somehow did not, the URL
    // is left as it was.
    let _ = url.set_host(Some(&trimmed));
}

/// True when any segment of `path` occurs more than `max` times (empty segments
/// from `//` included, the one after a trailing `/` excluded).
fn has_repeated_segments(path: &str, max: usize) -> bool {
    let path = path.strip_prefix('/').unwrap_or(path);
    let path = path.strip_suffix('/').unwrap_or(path);
    let count = path.bytes().filter(|&b| b == b'/').count() + 1;
    if count <= max {
        return false;
    }
    // Most paths are short: compare pairwise without allocating.
    if count <= 32 {
        let mut rest = path.split('/');
        while let Some(segment) = rest.next() {
            if rest.clone().filter(|s| *s == segment).count() >= max {
                return true;
            }
        }
        return false;
    }
    let mut segments: Vec<&str> = path.split('/').collect();
    segments.sort_unstable();
    segments.chunk_by(|a, b| a == b).any(|run| run.len() > max)
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Appends `s` to `out` with percent-escapes normalised: unreserved characters
/// decoded, the others written with upper-case hex. A `%` not followed by two
/// hex digits is kept as it is (browsers send it so), and a hex digit right
/// after such a `%` stays encoded, so that decoding never forms a new escape
/// (`%%330` must not become `%30`, which a second pass would decode).
fn push_normalized_escapes(s: &str, out: &mut String) {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut plain_start = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(hi), Some(lo)) = (hex_value(bytes[i + 1]), hex_value(bytes[i + 2])) {
                out.push_str(&s[plain_start..i]);
                let decoded = hi * 16 + lo;
                if is_unreserved(decoded)
                    && !(decoded.is_ascii_hexdigit() && ends_with_partial_escape(out))
                {
                    out.push(char::from(decoded));
                } else {
                    out.push('%');
                    out.push(char::from(HEX_UPPER[usize::from(hi)]));
                    out.push(char::from(HEX_UPPER[usize::from(lo)]));
                }
                i += 3;
                plain_start = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&s[plain_start..]);
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// `out` ends with `%` or `%` and one hex digit: one or two more hex digits
/// would make an escape that was not there.
fn ends_with_partial_escape(out: &str) -> bool {
    let b = out.as_bytes();
    match b {
        [.., b'%'] => true,
        [.., b'%', h] => h.is_ascii_hexdigit(),
        _ => false,
    }
}

/// True when `s` may have a percent-escape that [`push_normalized_escapes`]
/// changes (a cheap over-approximation to skip the rewrite).
fn escapes_need_work(s: &str) -> bool {
    s.as_bytes().windows(3).any(|w| {
        w[0] == b'%'
            && match (hex_value(w[1]), hex_value(w[2])) {
                (Some(hi), Some(lo)) => {
                    is_unreserved(hi * 16 + lo)
                        || w[1].is_ascii_lowercase()
                        || w[2].is_ascii_lowercase()
                }
                _ => false,
            }
    })
}

/// The normalised path, or `None` when `path` is already normal.
fn normalized_path(path: &str, rules: &UrlRules) -> Option<String> {
    let has_params = path.contains(';');
    if !has_params && !escapes_need_work(path) {
        return None;
    }
    let mut out = String::with_capacity(path.len());
    for (n, segment) in path.split('/').enumerate() {
        if n > 0 {
            out.push('/');
        }
        if !has_params || !segment.contains(';') {
            push_normalized_escapes(segment, &mut out);
            continue;
        }
        // `name;k=v;k2=v2`: drop the session-id parameters, keep the rest.
        let mut parts = segment.split(';');
        if let Some(name) = parts.next() {
            push_normalized_escapes(name, &mut out);
        }
        for param in parts {
            let key = param.split('=').next().unwrap_or(param);
            if !rules.strips(key) {
                out.push(';');
                push_normalized_escapes(param, &mut out);
            }
        }
    }
    (out != path).then_some(out)
}

/// The normalised query (possibly empty), or `None` when `query` is already normal.
fn normalized_query(query: &str, rules: &UrlRules) -> Option<String> {
    let strips_any = query
        .split('&')
        .any(|pair| rules.strips(pair.split('=').next().unwrap_or(pair)));
    if !strips_any && !escapes_need_work(query) {
        return None;
    }
    let mut out = String::with_capacity(query.len());
    let mut first = true;
    for pair in query.split('&') {
        let key = pair.split('=').next().unwrap_or(pair);
        if rules.strips(key) {
            continue;
        }
        if !first {
            out.push('&');
        }
        first = false;
        push_normalized_escapes(pair, &mut out);
    }
    (out != query).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `normalize` fuzz target: the trailing-dot rule ran the
    /// opaque host of a non-http URL through the domain parser, which
    /// IDNA-encoded it into a longer, different host.
    #[test]
    fn opaque_hosts_of_other_schemes_are_left_alone() {
        let mut url = Url::parse("lttps://ps\u{7f2}.\0\0\0").unwrap();
        let before = url.clone();
        normalize(&mut url, &UrlRules::default());
        assert_eq!(url.host_str(), before.host_str());
        assert!(url.as_str().len() <= before.as_str().len());
        let once = url.clone();
        normalize(&mut url, &UrlRules::default());
        assert_eq!(url, once);
        // http(s) hosts still lose their trailing dot.
        let mut web = Url::parse("http://Site.Test./a").unwrap();
        normalize(&mut web, &UrlRules::default());
        assert_eq!(web.as_str(), "http://site.test/a");
    }
    use proptest::prelude::*;

    fn norm(s: &str) -> String {
        let mut url = Url::parse(s).unwrap();
        normalize(&mut url, &UrlRules::default());
        url.to_string()
    }

    fn res(base: &str, raw: &str) -> Result<String, LinkRejected> {
        resolve(&Url::parse(base).unwrap(), raw, &UrlRules::default()).map(|u| u.to_string())
    }

    #[test]
    fn scheme_host_case_and_default_port() {
        assert_eq!(norm("HTTP://Example.COM:80/a"), "http://example.com/a");
        assert_eq!(norm("https://example.com:443/"), "https://example.com/");
        assert_eq!(
            norm("https://example.com:8443/"),
            "https://example.com:8443/"
        );
        assert_eq!(norm("http://example.com"), "http://example.com/");
    }

    #[test]
    fn trailing_dot_on_host_removed() {
        assert_eq!(norm("http://example.com./a"), "http://example.com/a");
        assert_eq!(norm("http://example.com../a"), "http://example.com/a");
        // `0..` is a domain, `0` would be an IPv4 address: left alone.
        assert_eq!(norm("http://0../"), "http://0../");
    }

    #[test]
    fn percent_escapes_normalised() {
        assert_eq!(
            norm("http://e.com/%7euser/%41%2f%2F"),
            "http://e.com/~user/A%2F%2F"
        );
        assert_eq!(norm("http://e.com/a%e2%82%ac"), "http://e.com/a%E2%82%AC");
        assert_eq!(norm("http://e.com/?q=%7e%3d%3D"), "http://e.com/?q=~%3D%3D");
        // A lone `%` is kept: it is not an escape.
        assert_eq!(norm("http://e.com/100%/x%zz"), "http://e.com/100%/x%zz");
        // Decoding never forms a new escape with a lone `%`.
        assert_eq!(norm("http://e.com/%%330"), "http://e.com/%%330");
        assert_eq!(norm("http://e.com/%3%30%41"), "http://e.com/%3%30A");
        // Non-ASCII is percent-encoded by the parser, with upper-case hex.
        assert_eq!(norm("http://e.com/é"), "http://e.com/%C3%A9");
    }

    #[test]
    fn dot_segments_resolved() {
        assert_eq!(norm("http://e.com/a/./b/../c"), "http://e.com/a/c");
        assert_eq!(norm("http://e.com/a/%2e%2E/c"), "http://e.com/c");
        assert_eq!(norm("http://e.com/../../x"), "http://e.com/x");
    }

    #[test]
    fn fragment_and_empty_query_dropped() {
        assert_eq!(norm("http://e.com/a#top"), "http://e.com/a");
        assert_eq!(norm("http://e.com/a?#x"), "http://e.com/a");
        assert_eq!(norm("http://e.com/a?"), "http://e.com/a");
    }

    #[test]
    fn session_ids_removed_order_kept() {
        assert_eq!(
            norm("http://e.com/p?b=2&PHPSESSID=abc&a=1&sid=9"),
            "http://e.com/p?b=2&a=1"
        );
        assert_eq!(norm("http://e.com/p?JSESSIONID=x"), "http://e.com/p");
        assert_eq!(
            norm("http://e.com/shop/cart;jsessionid=A1B2?x=1"),
            "http://e.com/shop/cart?x=1"
        );
        assert_eq!(
            norm("http://e.com/a;type=i;JSessionID=zz/b"),
            "http://e.com/a;type=i/b"
        );
        // Keys that merely contain a session key are kept.
        assert_eq!(
            norm("http://e.com/?side=1&sidx=2"),
            "http://e.com/?side=1&sidx=2"
        );
        // Empty pieces are not session ids and stay (servers may care).
        assert_eq!(norm("http://e.com/?a=1&&b=2"), "http://e.com/?a=1&&b=2");
    }

    #[test]
    fn custom_strip_list() {
        let rules = UrlRules {
            strip_params: vec!["utm_source".into()],
            ..UrlRules::default()
        };
        let mut url = Url::parse("http://e.com/?utm_source=x&sid=1").unwrap();
        normalize(&mut url, &rules);
        assert_eq!(url.as_str(), "http://e.com/?sid=1");
    }

    #[test]
    fn resolve_relative_and_whitespace() {
        assert_eq!(
            res("http://e.com/a/b.html", " c.csv\n"),
            Ok("http://e.com/a/c.csv".into())
        );
        assert_eq!(
            res("http://e.com/a/b.html", "../x#frag"),
            Ok("http://e.com/x".into())
        );
        assert_eq!(
            res("http://e.com/a/", "//other.org/p"),
            Ok("http://other.org/p".into())
        );
        assert_eq!(
            res("https://e.com/a/", "?q=1"),
            Ok("https://e.com/a/?q=1".into())
        );
    }

    #[test]
    fn resolve_rejects_schemes() {
        for raw in [
            "mailto:a@b.c",
            "javascript:void(0)",
            "data:text/plain,x",
            "ftp://e.com/f",
            "tel:+1",
        ] {
            assert_eq!(
                res("http://e.com/", raw),
                Err(LinkRejected::Scheme),
                "{raw}"
            );
        }
    }

    #[test]
    fn resolve_rejects_bad_urls() {
        assert_eq!(
            res("http://e.com/", "http://[::1"),
            Err(LinkRejected::BadUrl)
        );
        assert_eq!(
            res("http://e.com/", "http://exa mple.com/"),
            Err(LinkRejected::BadUrl)
        );
    }

    #[test]
    fn resolve_rejects_long_urls() {
        let long = format!("/{}", "a".repeat(2100));
        assert_eq!(res("http://e.com/", &long), Err(LinkRejected::TooLong));
        let huge = "b".repeat(100_000);
        assert_eq!(res("http://e.com/", &huge), Err(LinkRejected::TooLong));
        // Exactly at the limit passes.
        let base = "http://e.com/";
        let fits = "c".repeat(2048 - base.len());
        assert_eq!(res(base, &fits).map(|u| u.len()), Ok(2048));
    }

    #[test]
    fn resolve_rejects_repeated_segments() {
        assert_eq!(
            res("http://e.com/", "/a/b/a/c/a/d/a/"),
            Err(LinkRejected::RepeatedSegments)
        );
        assert_eq!(
            res("http://e.com/", "/a/b/a/c/a/"),
            Ok("http://e.com/a/b/a/c/a/".into())
        );
        assert_eq!(
            res("http://e.com/", "/cal/2024/cal/2024/cal/2024/cal/2024"),
            Err(LinkRejected::RepeatedSegments)
        );
        assert_eq!(
            res("http://e.com/", "/x////y"),
            Ok("http://e.com/x////y".into())
        );
        assert_eq!(
            res("http://e.com/", "/x/////y"),
            Err(LinkRejected::RepeatedSegments)
        );
    }

    #[test]
    fn legacy_encoding_query() {
        let base = Url::parse("http://e.com/").unwrap();
        let url = resolve_with_encoding(
            &base,
            "/p?q=é",
            &UrlRules::default(),
            Some(encoding_rs::WINDOWS_1252),
        )
        .unwrap();
        assert_eq!(url.as_str(), "http://e.com/p?q=%E9");
        let utf8 = resolve(&base, "/p?q=é", &UrlRules::default()).unwrap();
        assert_eq!(utf8.as_str(), "http://e.com/p?q=%C3%A9");
    }

    #[test]
    fn reject_counts() {
        let mut c = RejectCounts::default();
        c.add(LinkRejected::Scheme);
        c.add(LinkRejected::Scheme);
        c.add(LinkRejected::TooLong);
        assert_eq!(c.get(LinkRejected::Scheme), 2);
        assert_eq!(c.total(), 3);
        let mut d = RejectCounts::default();
        d.merge(&c);
        d.merge(&c);
        assert_eq!(d.scheme, 4);
        assert_eq!(d.bad_url, 0);
        let names: Vec<_> = LinkRejected::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            ["bad_url", "scheme", "too_long", "repeated_segments"]
        );
    }

    /// URL-ish strings rich in the things normalisation touches.
    fn url_strategy() -> impl Strategy<Value = String> {
        let scheme = prop::sample::select(vec!["http", "https", "HTTP", "ftp", "foo", "mailto"]);
        let host = "[a-zA-Z0-9.-]{0,12}(\\.)?(:[0-9]{1,5})?";
        let path = prop::collection::vec(
            "(%[0-9a-fA-F]{2}|%|[a-zA-Z0-9._~;=!$'()*+,:@é -]|\\.\\.|\\.|;jsessionid=[a-z0-9]{0,4}){0,6}",
            0..6,
        );
        let query =
            prop::option::of("(%[0-9a-fA-F]{2}|[a-zA-Z0-9=&;/?é ]|sid=1|&PHPSESSID=x){0,10}");
        let fragment = prop::option::of("[a-z#%]{0,5}");
        (scheme, host, path, query, fragment).prop_map(|(s, h, p, q, f)| {
            let mut u = format!("{s}://{h}/{}", p.join("/"));
            if let Some(q) = q {
                u.push('?');
                u.push_str(&q);
            }
            if let Some(f) = f {
                u.push('#');
                u.push_str(&f);
            }
            u
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn normalize_is_idempotent_and_shrinks(raw in url_strategy()) {
            if let Ok(original) = Url::parse(&raw) {
                let mut once = original.clone();
                normalize(&mut once, &UrlRules::default());
                let mut twice = once.clone();
                normalize(&mut twice, &UrlRules::default());
                prop_assert_eq!(once.as_str(), twice.as_str());
                prop_assert!(once.as_str().len() <= original.as_str().len());
                prop_assert!(once.fragment().is_none());
                prop_assert_ne!(once.query(), Some(""));
                // The serialisation reparses to the same URL.
                let reparsed = Url::parse(once.as_str()).unwrap();
                prop_assert_eq!(reparsed.as_str(), once.as_str());
            }
        }

        #[test]
        fn resolve_never_panics_and_is_a_fixpoint(raw in "\\PC{0,40}", rel in url_strategy()) {
            let base = Url::parse("http://example.com/dir/page.html?x=1").unwrap();
            let rules = UrlRules::default();
            for candidate in [raw.as_str(), rel.as_str()] {
                if let Ok(url) = resolve(&base, candidate, &rules) {
                    prop_assert!(matches!(url.scheme(), "http" | "https"));
                    prop_assert!(url.as_str().len() <= rules.max_len);
                    prop_assert!(url.fragment().is_none());
                    let again = resolve(&base, url.as_str(), &rules);
                    prop_assert_eq!(again, Ok(url));
                }
            }
        }
    }
}
