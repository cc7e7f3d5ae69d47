//! Link extraction with tag paths on arbitrary bytes: never panics, and every
//! link it returns is one the crawler may use (http(s), no fragment, within
//! the length cap, already normalised, unique, within the per-page cap), the
//! same whether the body arrives in one piece or in two chunks.
#![no_main]

use forager_core::extract::{
    extract_links, normalize, ExtractLimits, LinkExtractor, PageSources, UrlRules,
};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;
use url::Url;

const CONTENT_TYPES: [Option<&str>; 6] = [
    None,
    Some("text/html"),
    Some("text/html; charset=utf-8"),
    Some("text/html; charset=windows-1252"),
    Some("text/html; charset=\"shift_jis\""),
    Some("application/xhtml+xml; charset=utf-16"),
];

fuzz_target!(|data: &[u8]| {
    let [mode, split_hi, split_lo, body @ ..] = data else {
        return;
    };
    let content_type = CONTENT_TYPES[usize::from(*mode) % CONTENT_TYPES.len()];
    // Small caps now and then, so truncation paths are explored too.
    let limits = ExtractLimits {
        max_links: if mode & 0x80 != 0 { 3 } else { 10_000 },
        url_rules: UrlRules {
            max_len: if mode & 0x40 != 0 { 64 } else { 2048 },
            ..UrlRules::default()
        },
        // Catalog markup and `<link rel="alternate">` catalogs now and then.
        sources: PageSources {
            catalogs: mode & 0x20 != 0,
            forms: (mode & 0x10 != 0).then(forager_core::form::FormLimits::default),
        },
        ..ExtractLimits::default()
    };
    let page = Url::parse("http://site.test/dir/page.html?x=1").expect("static URL");
    let whole = extract_links(body, &page, content_type, &limits);

    assert!(
        whole.links.len() <= limits.max_links,
        "more links than the cap"
    );
    let mut seen = HashSet::new();
    for link in &whole.links {
        let url = &link.url;
        assert!(matches!(url.scheme(), "http" | "https"), "scheme of {url}");
        assert!(url.fragment().is_none(), "fragment kept in {url}");
        assert!(
            url.as_str().len() <= limits.url_rules.max_len,
            "too long: {url}"
        );
        let mut again = url.clone();
        normalize(&mut again, &limits.url_rules);
        assert_eq!(&again, url, "a returned link is not normalised");
        assert!(seen.insert(url.as_str()), "duplicate link {url}");
        assert!(
            link.tag_path.as_str().starts_with('/'),
            "tag path {}",
            link.tag_path
        );
        assert!(link.anchor.chars().count() <= 200, "anchor too long");
    }

    // Chunk boundaries must not change what is found.
    let split = (usize::from(*split_hi) << 8 | usize::from(*split_lo)) % (body.len() + 1);
    let mut streamed = LinkExtractor::new(&page, content_type, &limits);
    streamed.write(&body[..split]);
    streamed.write(&body[split..]);
    let streamed = streamed.finish();
    let key = |p: &forager_core::extract::PageLinks| -> Vec<(String, String)> {
        p.links
            .iter()
            .map(|l| (l.url.to_string(), l.tag_path.to_string()))
            .collect()
    };
    assert_eq!(
        key(&whole),
        key(&streamed),
        "split at {split} changed the links"
    );
});
