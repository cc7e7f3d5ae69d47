//! Sitemaps (sitemaps.org) listed in robots.txt: a free source of links
//! (ARCHITECTURE.md § Politeness and safety). Reads the `<loc>` entries of a `<urlset>` or a
//! `<sitemapindex>`, plain-text sitemaps (one URL per line), and gzip-compressed
//! files of either, with the same URL rules and link cap as a page.
//!
//! The links carry fixed tag paths, so the strategy learns what sitemap
//! entries are worth like it learns any other part of a site.

use super::links::{ExtractLimits, ExtractedLink, PageCut, PageLinks};
use super::normalize::{resolve, RejectCounts};
use crate::link::TagPath;
use std::io::Read;
use url::Url;

/// Tag path of a sitemap (from robots.txt or a sitemap index): fetched as a sitemap.
pub const SITEMAP_TAG_PATH: &str = "[sitemap]";
/// Tag path of a URL a sitemap lists.
pub const SITEMAP_ENTRY_TAG_PATH: &str = "[sitemap] urlset url loc";

/// The sitemaps protocol caps a sitemap at 50 MB uncompressed.
const MAX_SITEMAP_BYTES: u64 = 50 << 20;

/// Whether a link is a sitemap to read as one.
pub fn is_sitemap(tag_path: &TagPath) -> bool {
    tag_path.as_str() == SITEMAP_TAG_PATH
}

/// The links of a sitemap body, gzip-compressed or not. Entries of a sitemap
/// index get [`SITEMAP_TAG_PATH`] (they are sitemaps too), others
/// [`SITEMAP_ENTRY_TAG_PATH`]. Never fails: garbage gives no links.
pub fn sitemap_links(body: &[u8], sitemap_url: &Url, limits: &ExtractLimits) -> PageLinks {
    let inflated;
    let mut cut = None;
    let body = if body.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        let mut reader = flate2::read::MultiGzDecoder::new(body).take(MAX_SITEMAP_BYTES + 1);
        // A broken stream keeps what inflated before the damage.
        let _ = reader.read_to_end(&mut out);
        if out.len() as u64 > MAX_SITEMAP_BYTES {
            out.truncate(MAX_SITEMAP_BYTES as usize);
            cut = Some(PageCut::BodyLimit);
        }
        inflated = out;
        &inflated[..]
    } else {
        body
    };
    let text = String::from_utf8_lossy(body);
    let (raw, tag_path) = if text.trim_start().starts_with('<') {
        let path = if root_element(&text) == Some("sitemapindex") {
            SITEMAP_TAG_PATH
        } else {
            SITEMAP_ENTRY_TAG_PATH
        };
        (loc_entries(&text), path)
    } else {
        let lines = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        (lines, SITEMAP_ENTRY_TAG_PATH)
    };
    let tag_path = TagPath::new(tag_path);
    let mut links = Vec::new();
    let mut rejected = RejectCounts::default();
    let mut seen = std::collections::HashSet::new();
    for entry in raw {
        if links.len() >= limits.max_links {
            cut.get_or_insert(PageCut::MaxLinks);
            break;
        }
        match resolve(sitemap_url, &entry, &limits.url_rules) {
            Ok(url) => {
                if seen.insert(url.as_str().to_string()) {
                    links.push(ExtractedLink {
                        url,
                        tag_path: tag_path.clone(),
                        anchor: String::new(),
                    });
                }
            }
            Err(kind) => rejected.add(kind),
        }
    }
    PageLinks {
        links,
        base: sitemap_url.clone(),
        structured_data: false,
        structured: None,
        cut,
        rejected,
    }
}

/// The text of every `<loc>` element (any namespace prefix), entities and CDATA decoded.
fn loc_entries(xml: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(open) = find_loc_open(rest) {
        rest = &rest[open..];
        let Some(end) = rest.find("</") else { break };
        let inner = rest[..end].trim();
        let inner = inner
            .strip_prefix("<![CDATA[")
            .and_then(|s| s.strip_suffix("]]>"))
            .map(str::to_string)
            .unwrap_or_else(|| htmlize::unescape(inner).into_owned());
        if !inner.is_empty() {
            out.push(inner.trim().to_string());
        }
        rest = &rest[end + 2..];
    }
    out
}

/// Local name of the document's root element (after the prolog and comments).
fn root_element(xml: &str) -> Option<&str> {
    let mut rest = xml;
    loop {
        let open = rest.find('<')? + 1;
        rest = &rest[open..];
        if rest.starts_with('?') || rest.starts_with('!') {
            continue;
        }
        let end = rest.find(|c: char| c == '>' || c == '/' || c.is_whitespace())?;
        let name = &rest[..end];
        return Some(name.rsplit(':').next().unwrap_or(name));
    }
}

/// Offset just past the next `<loc>` or `<prefix:loc>` start tag.
fn find_loc_open(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find('<') {
        let start = from + i + 1;
        let close = start + s[start..].find('>')?;
        let name = &s[start..close];
        let local = name.rsplit(':').next().unwrap_or(name).trim();
        if local == "loc" {
            return Some(close + 1);
        }
        from = close;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn base() -> Url {
        Url::parse("http://a.test/sitemap.xml").unwrap()
    }

    fn urls(p: &PageLinks) -> Vec<&str> {
        p.links.iter().map(|l| l.url.as_str()).collect()
    }

    #[test]
    fn a_urlset_gives_its_locations_as_entries() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/data/a.csv</loc><lastmod>2024-01-01</lastmod></url>
  <url><loc> http://a.test/page?x=1&amp;y=2 </loc></url>
  <url><loc><![CDATA[http://a.test/c d]]></loc></url>
  <url><loc>/relative</loc></url>
  <url><loc>http://a.test/data/a.csv</loc></url>
</urlset>"#;
        let p = sitemap_links(xml.as_bytes(), &base(), &ExtractLimits::default());
        assert_eq!(
            urls(&p),
            vec![
                "http://a.test/data/a.csv",
                "http://a.test/page?x=1&y=2",
                "http://a.test/c%20d",
                "http://a.test/relative",
            ]
        );
        assert!(p
            .links
            .iter()
            .all(|l| l.tag_path.as_str() == SITEMAP_ENTRY_TAG_PATH));
    }

    #[test]
    fn an_index_gives_sitemaps_and_gzip_is_read() {
        let xml = r#"<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
<sm:sitemap><sm:loc>http://a.test/s1.xml.gz</sm:loc></sm:sitemap></sm:sitemapindex>"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(xml.as_bytes()).unwrap();
        let p = sitemap_links(&gz.finish().unwrap(), &base(), &ExtractLimits::default());
        assert_eq!(urls(&p), vec!["http://a.test/s1.xml.gz"]);
        assert!(is_sitemap(&p.links[0].tag_path));
    }

    #[test]
    fn a_text_sitemap_has_one_url_per_line_and_limits_apply() {
        let text = "http://a.test/1\n\n  http://a.test/2  \nhttp://a.test/3\n";
        let limits = ExtractLimits {
            max_links: 2,
            ..ExtractLimits::default()
        };
        let p = sitemap_links(text.as_bytes(), &base(), &limits);
        assert_eq!(urls(&p), vec!["http://a.test/1", "http://a.test/2"]);
        assert!(p.cut.is_some());
        let long = format!(
            "<urlset><url><loc>http://a.test/{}</loc></url></urlset>",
            "x".repeat(5000)
        );
        let p = sitemap_links(long.as_bytes(), &base(), &ExtractLimits::default());
        assert!(p.links.is_empty());
        assert_eq!(p.rejected.too_long, 1);
    }

    #[test]
    fn a_gzip_bomb_is_cut_at_the_protocol_limit() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..60 {
            gz.write_all(&zeros).unwrap();
        }
        let p = sitemap_links(&gz.finish().unwrap(), &base(), &ExtractLimits::default());
        assert!(p.cut.is_some() && p.links.is_empty());
    }

    proptest! {
        #[test]
        fn never_panics_on_garbage(body in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let _ = sitemap_links(&body, &base(), &ExtractLimits::default());
        }

        #[test]
        fn never_panics_on_tag_soup(s in "[<>/:a-z!\\[\\] ]{0,200}") {
            let _ = sitemap_links(s.as_bytes(), &base(), &ExtractLimits::default());
        }
    }
}
