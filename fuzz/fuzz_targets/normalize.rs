//! URL normalisation: never panics, is idempotent, never lengthens a URL, and
//! resolving a raw link gives a normalised URL that passes the trap checks.
#![no_main]

use forager_core::extract::{check_limits, normalize, resolve, UrlRules};
use libfuzzer_sys::fuzz_target;
use url::Url;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let rules = UrlRules::default();

    // As an absolute URL.
    if let Ok(mut url) = Url::parse(text) {
        let before = url.as_str().len();
        normalize(&mut url, &rules);
        assert!(
            url.as_str().len() <= before,
            "normalize lengthened {text:?} to {url}"
        );
        let once = url.clone();
        normalize(&mut url, &rules);
        assert_eq!(url, once, "normalize is not idempotent on {text:?}");
        let _ = check_limits(&url, &rules);
    }

    // As a raw href on a page.
    let base = Url::parse("https://www.site.test/a/b/c.html?q=1").expect("static URL");
    if let Ok(url) = resolve(&base, text, &rules) {
        assert!(matches!(url.scheme(), "http" | "https"));
        assert!(url.fragment().is_none());
        let mut again = url.clone();
        normalize(&mut again, &rules);
        assert_eq!(
            again, url,
            "resolve returned an unnormalised URL for {text:?}"
        );
        assert!(
            check_limits(&url, &rules).is_ok(),
            "resolve let a trap through: {url}"
        );
    }
});
