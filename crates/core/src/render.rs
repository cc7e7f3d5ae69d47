//! What a `render` job decides, with no browser: whether a fetched page
//! looks like a *script shell* (an HTML page whose content a script draws),
//! whether rendering still pays on its site, which of a browser's requests
//! are worth making, and how links found only on the rendered page are
//! marked (docs/jobs.md, *Pages built by scripts*).
//!
//! Owns: the shell heuristic ([`ShellSignals`]), the per-site learning of
//! `render = "auto"` ([`RenderBook`]), the tag path of rendered links
//! ([`RENDERED_PREFIX`]), and which resource types a render fetches
//! ([`fetches_resource`]). Must not touch: the browser, the network, the
//! clock or randomness — the engine's `render/` module drives Chromium and
//! asks this one.

use std::collections::HashMap;

/// The tag path of a link found only once the page was rendered starts with
/// this: `sb` files such links under actions of their own, so it learns per
/// site whether they lead to targets, and a manifest row's `found_by` says
/// `rendered` ([`crate::catalog::found_by`]).
pub const RENDERED_PREFIX: &str = "[rendered] ";

/// A page with more links than this is not a shell, whatever its scripts:
/// its content is already in its HTML.
pub const MAX_SHELL_LINKS: usize = 5;
/// Visible text, in bytes, under which a page with scripts reads as empty.
pub const MAX_SHELL_TEXT: usize = 400;
/// Inline script bytes from which a page holds "a large script bundle".
pub const LARGE_INLINE_SCRIPT: usize = 4096;

/// What the raw HTML of a page says about whether scripts build it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShellSignals {
    /// Links the page's own HTML holds (from link extraction).
    pub links: usize,
    /// `<script>` elements, inline or not (JSON data blocks excluded).
    pub scripts: usize,
    /// Bytes inside inline `<script>` elements.
    pub inline_script_bytes: usize,
    /// A `<noscript>` element (the "please enable JavaScript" warning).
    pub noscript: bool,
    /// Bytes of text outside tags, scripts, styles and `<noscript>`, whitespace not counted.
    pub text_bytes: usize,
}

impl ShellSignals {
    /// Reads the signals of `html`, whose extraction found `links` links.
    /// A byte scan with no allocation: it runs on every page of an `auto` job.
    pub fn of(html: &[u8], links: usize) -> ShellSignals {
        let mut s = ShellSignals {
            links,
            ..ShellSignals::default()
        };
        let mut i = 0;
        while i < html.len() {
            if html[i] != b'<' {
                if !html[i].is_ascii_whitespace() {
                    s.text_bytes += 1;
                }
                i += 1;
                continue;
            }
            let rest = &html[i + 1..];
            if starts_with_tag(rest, b"script") {
                let open_end = find(html, i, b">").unwrap_or(html.len());
                let tag = &html[i..open_end];
                let close = find_ci(html, open_end, b"</script").unwrap_or(html.len());
                // A data block (`application/json`, `application/ld+json`) runs no code.
                if !contains_ci(tag, b"json") {
                    s.scripts += 1;
                    s.inline_script_bytes += close.saturating_sub(open_end + 1);
                }
                i = past_tag(html, close.max(open_end));
            } else if starts_with_tag(rest, b"style") {
                i = past_tag(html, find_ci(html, i + 1, b"</style").unwrap_or(html.len()));
            } else if starts_with_tag(rest, b"noscript") {
                s.noscript = true;
                i = past_tag(
                    html,
                    find_ci(html, i + 1, b"</noscript").unwrap_or(html.len()),
                );
            } else if rest.starts_with(b"!--") {
                i = find(html, i, b"-->").map_or(html.len(), |e| e + 3);
            } else {
                i = find(html, i, b">").map_or(html.len(), |e| e + 1);
            }
        }
        s
    }

    /// Whether the page looks like a script shell: few links, some script,
    /// and either a `<noscript>` warning, a large inline bundle, or next to
    /// no text of its own.
    pub fn is_shell(&self) -> bool {
        self.links <= MAX_SHELL_LINKS
            && self.scripts > 0
            && (self.noscript
                || self.inline_script_bytes >= LARGE_INLINE_SCRIPT
                || self.text_bytes < MAX_SHELL_TEXT)
    }
}

fn starts_with_tag(rest: &[u8], name: &[u8]) -> bool {
    rest.len() > name.len()
        && rest[..name.len()].eq_ignore_ascii_case(name)
        && matches!(rest[name.len()], b'>' | b' ' | b'\t' | b'\n' | b'\r' | b'/')
}

/// Just past the `>` of the tag starting at `at` (a closing tag): its name
/// is markup, not text of the page.
fn past_tag(html: &[u8], at: usize) -> usize {
    find(html, at, b">").map_or(html.len(), |e| e + 1)
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn find_ci(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| p + from)
}

fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    find_ci(hay, 0, needle).is_some()
}

/// Renders of a site that found nothing before `auto` stops rendering its shells.
pub const PROBE_RENDERS: u32 = 3;
/// Once a site's renders stopped paying, one shell in this many is still
/// rendered, so a site whose later pages are built by scripts is noticed.
pub const RECHECK_EVERY: u32 = 16;
/// Sites remembered at most; past it the site with the fewest renders is forgotten.
pub const MAX_SITES: usize = 4096;

/// What renders paid on one site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteRenders {
    /// Pages rendered.
    pub rendered: u32,
    /// Rendered pages that yielded a link their HTML lacked.
    pub paid: u32,
    /// Shells not rendered since the last render.
    pub skipped: u32,
}

/// `render = "auto"`'s per-site learning: a site's shells are rendered
/// while rendering pays there. Every site starts with [`PROBE_RENDERS`]
/// renders; a site whose renders paid keeps being rendered as long as at
/// least one render in four pays (a Laplace estimate: (paid + 1) /
/// (rendered + 2) ≥ ¼); a site where they stopped paying is rechecked once
/// in [`RECHECK_EVERY`] shells. Deterministic: same answers, same decisions.
#[derive(Clone, Debug, Default)]
pub struct RenderBook {
    sites: HashMap<String, SiteRenders>,
}

impl RenderBook {
    /// Whether a shell of `site` is to be rendered now. Counts a skip when not.
    pub fn should_render(&mut self, site: &str) -> bool {
        let entry = self.entry(site);
        let pays = entry.rendered < PROBE_RENDERS || 4 * (entry.paid + 1) >= entry.rendered + 2;
        if pays || entry.skipped + 1 >= RECHECK_EVERY {
            return true;
        }
        entry.skipped += 1;
        false
    }

    /// A render of a page of `site` ended; `paid`: it found a link the page's HTML lacked.
    pub fn record(&mut self, site: &str, paid: bool) {
        let entry = self.entry(site);
        entry.rendered = entry.rendered.saturating_add(1);
        entry.paid = entry.paid.saturating_add(u32::from(paid));
        entry.skipped = 0;
    }

    /// What is known of `site`.
    pub fn site(&self, site: &str) -> Option<SiteRenders> {
        self.sites.get(site).copied()
    }

    fn entry(&mut self, site: &str) -> &mut SiteRenders {
        if !self.sites.contains_key(site) && self.sites.len() >= MAX_SITES {
            // Bounded: the site least worth remembering makes room.
            if let Some(least) = self
                .sites
                .iter()
                .min_by(|a, b| a.1.rendered.cmp(&b.1.rendered).then(a.0.cmp(b.0)))
                .map(|(k, _)| k.clone())
            {
                self.sites.remove(&least);
            }
        }
        self.sites.entry(site.to_string()).or_default()
    }
}

/// Chrome DevTools Protocol resource types a render fetches: the page,
/// its frames, its scripts and what scripts ask for. Images, fonts, style
/// sheets, media and the rest are refused unasked: they draw, they do not
/// add links, and each would cost a request of the job's budget.
pub fn fetches_resource(resource_type: &str) -> bool {
    matches!(
        resource_type,
        "Document" | "Script" | "XHR" | "Fetch" | "Other"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_shell_is_one() {
        let shell = br#"<!doctype html><html><head><title>Data</title>
            <script src="/app.js"></script></head>
            <body><div id="app">Loading...</div>
            <noscript>This portal needs JavaScript.</noscript></body></html>"#;
        let s = ShellSignals::of(shell, 0);
        assert_eq!(s.scripts, 1);
        assert!(s.noscript);
        assert!(s.text_bytes < 40, "{s:?}");
        assert!(s.is_shell());
    }

    #[test]
    fn a_page_of_links_or_text_is_no_shell() {
        let page = br#"<html><body><script>var a = 1;</script>
            <a href="/a.csv">a</a><a href="/b.csv">b</a><a href="/c">c</a>
            <a href="/d">d</a><a href="/e">e</a><a href="/f">f</a></body></html>"#;
        assert!(!ShellSignals::of(page, 6).is_shell());
        // No script: whatever its links, nothing would draw more.
        let plain = b"<html><body><p>nothing</p></body></html>";
        assert!(!ShellSignals::of(plain, 0).is_shell());
        // An article with a small script and much text.
        let article = format!(
            "<html><body><script>track()</script><p>{}</p></body></html>",
            "words ".repeat(200)
        );
        assert!(!ShellSignals::of(article.as_bytes(), 1).is_shell());
    }

    #[test]
    fn json_data_blocks_styles_and_comments_are_not_scripts_or_text() {
        let page = br#"<html><head><style>body { color: red }</style>
            <script type="application/ld+json">{"@type": "Dataset"}</script>
            <!-- <script>x()</script> --></head><body>hi</body></html>"#;
        let s = ShellSignals::of(page, 0);
        assert_eq!(s.scripts, 0, "{s:?}");
        assert_eq!(s.text_bytes, 2, "{s:?}");
        assert!(!s.is_shell());
    }

    #[test]
    fn a_large_inline_bundle_makes_a_shell_even_with_text() {
        let page = format!(
            "<html><body><p>{}</p><script>{}</script></body></html>",
            "text ".repeat(200),
            "x=1;".repeat(2000)
        );
        let s = ShellSignals::of(page.as_bytes(), 2);
        assert!(s.inline_script_bytes >= LARGE_INLINE_SCRIPT);
        assert!(s.is_shell());
    }

    #[test]
    fn unterminated_tags_end_the_scan() {
        for page in [
            &b"<script"[..],
            b"<script>x",
            b"<!-- x",
            b"<noscript>",
            b"<",
            b"<a",
        ] {
            let _ = ShellSignals::of(page, 0);
        }
    }

    #[test]
    fn a_site_whose_renders_pay_keeps_being_rendered() {
        let mut book = RenderBook::default();
        for _ in 0..50 {
            assert!(book.should_render("a.test"));
            book.record("a.test", true);
        }
    }

    #[test]
    fn a_site_whose_renders_never_pay_is_only_rechecked() {
        let mut book = RenderBook::default();
        let mut renders = 0;
        for _ in 0..(PROBE_RENDERS as usize + 10 * RECHECK_EVERY as usize) {
            if book.should_render("b.test") {
                renders += 1;
                book.record("b.test", false);
            }
        }
        // The probes, then one in RECHECK_EVERY.
        assert_eq!(renders, PROBE_RENDERS + 10, "{:?}", book.site("b.test"));
        // Another site is probed afresh.
        assert!(book.should_render("c.test"));
    }

    #[test]
    fn a_recheck_that_pays_reopens_the_site() {
        let mut book = RenderBook::default();
        for _ in 0..PROBE_RENDERS {
            book.record("d.test", false);
        }
        assert!(!book.should_render("d.test"));
        book.record("d.test", true);
        book.record("d.test", true);
        assert!(book.should_render("d.test"));
    }

    #[test]
    fn the_book_is_bounded() {
        let mut book = RenderBook::default();
        for i in 0..(MAX_SITES + 100) {
            book.record(&format!("s{i}.test"), false);
        }
        assert!(book.sites.len() <= MAX_SITES);
    }

    #[test]
    fn only_pages_scripts_and_what_scripts_ask_for_are_fetched() {
        for t in ["Document", "Script", "XHR", "Fetch", "Other"] {
            assert!(fetches_resource(t), "{t}");
        }
        for t in [
            "Image",
            "Stylesheet",
            "Font",
            "Media",
            "Ping",
            "WebSocket",
            "Manifest",
        ] {
            assert!(!fetches_resource(t), "{t}");
        }
    }
}
