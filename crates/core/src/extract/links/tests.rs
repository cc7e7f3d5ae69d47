//! Unit tests of link extraction: tag paths and implied end tags, links and
//! anchor texts, limits and charsets; property tests on generated tag soup
//! and bytes; an ignored throughput measure.

use super::start_tag::refresh_target;
use super::*;
use crate::extract::normalize::LinkRejected;
use proptest::prelude::*;
use std::collections::HashSet;

const PAGE: &str = "http://example.com/dir/page.html";

fn extract(html: &str) -> PageLinks {
    extract_links(
        html.as_bytes(),
        &Url::parse(PAGE).unwrap(),
        None,
        &ExtractLimits::default(),
    )
}

/// (url, tag path) of each link.
fn paths(html: &str) -> Vec<(String, String)> {
    extract(html)
        .links
        .into_iter()
        .map(|l| (l.url.to_string(), l.tag_path.to_string()))
        .collect()
}

fn only_path(html: &str) -> String {
    let p = paths(html);
    assert_eq!(p.len(), 1, "{p:?}");
    p[0].1.clone()
}

#[test]
fn design_example_path() {
    let html = r#"<!doctype html><html><head><title>t</title></head><body>
            <div class="content   main" id="x"><ul>
            <li><a class="download" href="/f.csv">CSV</a></li></ul></div></body></html>"#;
    assert_eq!(
        paths(html),
        vec![(
            "http://example.com/f.csv".to_string(),
            "/html/body/div.content main#x/ul/li/a.download".to_string()
        )]
    );
}

#[test]
fn a_byte_order_mark_does_not_shift_what_is_read_from_the_body() {
    // lol_html's source offsets must index the body as given, BOM included.
    let body = b"\xEF\xBB\xBF<div class=c><a href=/z>w</a></div><a href=x>y</a>";
    let page_url = Url::parse(PAGE).unwrap();
    let limits = ExtractLimits::default();
    let whole = extract_links(body, &page_url, None, &limits);
    let mut ex = LinkExtractor::new(&page_url, None, &limits);
    ex.write(body);
    assert_eq!(ex.finish(), whole);
    assert_eq!(whole.links.len(), 2);
}

#[test]
fn class_whitespace_and_empty_attributes() {
    assert_eq!(
        only_path("<div class=\"\n a\tb  \" id=\"\"><a href=x class=\"  \">x</a></div>"),
        "/div.a b/a"
    );
    assert_eq!(
        only_path("<DIV ID=Main CLASS=Big><A HREF=x>x</A></DIV>"),
        "/div.Big#Main/a"
    );
    assert_eq!(
        only_path("<div class=\"a&amp;b\" id=\"i&lt;\"><a href=x></a></div>"),
        "/div.a&b#i</a"
    );
}

#[test]
fn block_start_closes_p() {
    assert_eq!(
        only_path("<body><p>intro<div><a href=x>x</a></div></body>"),
        "/body/div/a"
    );
    assert_eq!(
        paths("<body><p>one<p><a href=1>1</a><p><a href=2>2</a></body>"),
        vec![
            ("http://example.com/dir/1".into(), "/body/p/a".into()),
            ("http://example.com/dir/2".into(), "/body/p/a".into())
        ]
    );
    // Inline elements do not close `p`.
    assert_eq!(only_path("<p>a <span><a href=x>x</a></span>"), "/p/span/a");
    // A `p` outside a scope boundary stays open inside it; `table` closes it.
    assert_eq!(
        only_path("<p>x<object><div><a href=x>x</a></div></object>"),
        "/p/object/div/a"
    );
    assert_eq!(
        only_path("<p>x<table><tr><td><a href=x>x</a></table>"),
        "/table/tr/td/a"
    );
}

#[test]
fn li_dd_dt_close_siblings() {
    let html = "<ul><li>one<li><a href=1>1</a><li><b><a href=2>2</a></ul><a href=3>3</a>";
    let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
    assert_eq!(got, ["/ul/li/a", "/ul/li/b/a", "/a"]);
    // A nested list does not close the outer item.
    assert_eq!(
        only_path("<ul><li>x<ul><li><a href=1>1</a></ul></ul>"),
        "/ul/li/ul/li/a"
    );
    let html = "<dl><dt>term<dd><a href=1>1</a><dt><a href=2>2</a></dl>";
    let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
    assert_eq!(got, ["/dl/dd/a", "/dl/dt/a"]);
}

#[test]
fn table_cells_and_rows_close() {
    let html = "<table><tr><td>a<td><a href=1>1</a><tr><th>h<td><a href=2>2</a>\
                <tbody><tr><td><a href=3>3</a></table>";
    let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
    assert_eq!(
        got,
        ["/table/tr/td/a", "/table/tr/td/a", "/table/tbody/tr/td/a"]
    );
    // Unclosed content of a cell is closed by the next row.
    assert_eq!(
        only_path("<table><tr><td><div><span>x<tr><td><a href=4>4</a></table>"),
        "/table/tr/td/a"
    );
    // Nested tables keep their own rows.
    assert_eq!(
        only_path("<table><tr><td><table><tr><td>x<tr><td><a href=1>1</a></table></table>"),
        "/table/tr/td/table/tr/td/a"
    );
}

#[test]
fn void_elements_are_not_pushed() {
    assert_eq!(
        only_path("<div><br><img src=a.png><input type=text><hr/><a href=x>x</a></div>"),
        "/div/a"
    );
    assert_eq!(
        only_path("<p><br/><wbr><span><a href=x>x</a></span></p>"),
        "/p/span/a"
    );
}

#[test]
fn unclosed_misnested_and_stray_tags() {
    let html = "<div><span><a href=1>1</a></div><a href=2>2</a>";
    let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
    assert_eq!(got, ["/div/span/a", "/a"]);
    let html = "</span></div><section><b><i></b><a href=1>1</a></i></section><a href=2>2</a>";
    let got: Vec<String> = paths(html).into_iter().map(|p| p.1).collect();
    assert_eq!(got, ["/section/a", "/a"]);
    // Never closed at all.
    assert_eq!(only_path("<div><div><div><a href=x>x"), "/div/div/div/a");
}

#[test]
fn nested_anchor_closes_the_first() {
    let links = extract("<div><a href=1>one <a href=2>two</a> after</div>").links;
    let got: Vec<(&str, &str)> = links
        .iter()
        .map(|l| (l.tag_path.as_str(), l.anchor.as_str()))
        .collect();
    assert_eq!(got, [("/div/a", "one"), ("/div/a", "two")]);
}

#[test]
fn duplicate_html_and_body_tags_ignored() {
    assert_eq!(
        only_path("<html><body><html lang=en><body class=x><div><a href=1>1</a>"),
        "/html/body/div/a"
    );
}

#[test]
fn iframe_frame_area_and_meta_refresh() {
    let html = r#"<html><head><meta http-equiv="Refresh" content="0; URL='/moved'"></head>
            <body><map name=m><area class=r href="/area.pdf" alt=" Annual &amp;  report "></map>
            <iframe id=f src="/frame.html"></iframe>
            <frameset><frame src="left.html"></frameset></body></html>"#;
    assert_eq!(
        paths(html),
        vec![
            ("http://example.com/moved".into(), "/html/head/meta".into()),
            (
                "http://example.com/area.pdf".into(),
                "/html/body/map/area.r".into()
            ),
            (
                "http://example.com/frame.html".into(),
                "/html/body/iframe#f".into()
            ),
            (
                "http://example.com/dir/left.html".into(),
                "/html/body/frameset/frame".into()
            ),
        ]
    );
}

#[test]
fn area_alt_is_its_anchor() {
    let html = "<map><area href=\"/a.pdf\" alt=\" Annual &amp;\n report \"><area href=/b></map>";
    let anchors: Vec<String> = extract(html).links.into_iter().map(|l| l.anchor).collect();
    assert_eq!(anchors, ["Annual & report", ""]);
}

#[test]
fn refresh_content_parsing() {
    assert_eq!(refresh_target("0; url=/a"), Some("/a"));
    assert_eq!(refresh_target("5;URL = \"/b c\" trailing"), Some("/b c"));
    assert_eq!(refresh_target("1, /c"), Some("/c"));
    assert_eq!(refresh_target("3.5 ; url='/d"), Some("/d"));
    assert_eq!(refresh_target("10"), None);
    assert_eq!(refresh_target(" 0 ; "), None);
    assert_eq!(refresh_target("0; urlx"), Some("urlx"));
    assert_eq!(refresh_target("é; url=é"), Some("é; url=é"));
}

#[test]
fn base_href_first_only_and_only_before_links() {
    let html = r#"<head><base href="https://cdn.example.org/files/"><base href="/other/"></head>
            <a href="a.csv">a</a>"#;
    let page = extract(html);
    assert_eq!(page.base.as_str(), "https://cdn.example.org/files/");
    assert_eq!(
        page.links[0].url.as_str(),
        "https://cdn.example.org/files/a.csv"
    );

    let html =
        r#"<a href="a.csv">a</a><base href="https://cdn.example.org/"><a href="b.csv">b</a>"#;
    let page = extract(html);
    assert_eq!(page.base.as_str(), PAGE);
    assert_eq!(page.links[1].url.as_str(), "http://example.com/dir/b.csv");

    // Relative base, and a non-http base ignored.
    let page = extract(r#"<base href="../up/"><a href=x>x</a>"#);
    assert_eq!(page.links[0].url.as_str(), "http://example.com/up/x");
    let page = extract(r#"<base href="javascript:alert(1)"><a href=x>x</a>"#);
    assert_eq!(page.links[0].url.as_str(), "http://example.com/dir/x");
}

#[test]
fn entities_in_href_are_decoded() {
    let got = paths(r#"<a href="/p?a=1&amp;b=2&copy=3&#x26;c=&#52;&lt;">x</a>"#);
    assert_eq!(got[0].0, "http://example.com/p?a=1&b=2&copy=3&c=4%3C");
    let got = paths("<a href=\"&#104;ttp://other.org/&quot;q\">x</a>");
    assert_eq!(got[0].0, "http://other.org/%22q");
}

#[test]
fn anchors_collapsed_decoded_truncated() {
    let html = "<a href=1>\n   Download\n <b>the</b>&nbsp;CSV &amp; <img alt='icon'> more  </a>\
                <a href=2><img src=i.png alt=\"Logo &amp; name\"></a>\
                <a href=3><script>var x = 1;</script>text</a>";
    let links = extract(html).links;
    let anchors: Vec<&str> = links.iter().map(|l| l.anchor.as_str()).collect();
    assert_eq!(
        anchors,
        ["Download the CSV & icon more", "Logo & name", "text"]
    );

    let long = format!("<a href=1>{}</a>", "word ".repeat(100));
    let anchor = &extract(&long).links[0].anchor;
    assert_eq!(anchor.chars().count(), 200);
    assert!(anchor.starts_with("word word"));

    let wide = format!("<a href=1>{}</a>", "é".repeat(300));
    assert_eq!(extract(&wide).links[0].anchor.chars().count(), 200);
}

#[test]
fn duplicates_self_links_and_fragments() {
    let html = r##"<a href="/a#one">first</a><a href="#top">top</a><a href="">self</a>
            <a href="page.html?#x">self again</a><div><a href="/a#two">second</a></div>
            <a href="HTTP://EXAMPLE.COM/a">third</a>"##;
    let links = extract(html).links;
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].url.as_str(), "http://example.com/a");
    assert_eq!(links[0].anchor, "first");
    assert_eq!(links[0].tag_path.as_str(), "/a");
}

#[test]
fn rejected_links_are_counted_by_kind() {
    let long = "x".repeat(3000);
    let html = format!(
        "<a href='mailto:a@b.c'>m</a><a href='javascript:void(0)'>j</a><a href='http://[::1'>b</a>\
         <a href='/{long}'>l</a><a href='/a/a/a/a/a'>t</a><a href='/ok'>ok</a>"
    );
    let page = extract(&html);
    assert_eq!(page.links.len(), 1);
    assert_eq!(page.rejected.get(LinkRejected::Scheme), 2);
    assert_eq!(page.rejected.get(LinkRejected::BadUrl), 1);
    assert_eq!(page.rejected.get(LinkRejected::TooLong), 1);
    assert_eq!(page.rejected.get(LinkRejected::RepeatedSegments), 1);
}

#[test]
fn max_links_truncates() {
    let html: String = (0..10).map(|i| format!("<a href=/{i}>{i}</a>")).collect();
    let limits = ExtractLimits {
        max_links: 4,
        ..ExtractLimits::default()
    };
    let page = extract_links(html.as_bytes(), &Url::parse(PAGE).unwrap(), None, &limits);
    assert_eq!(page.links.len(), 4);
    assert_eq!(page.cut, Some(PageCut::MaxLinks));
    assert_eq!(page.links[3].url.as_str(), "http://example.com/3");
    assert_eq!(extract(&html).cut, None);
    // Duplicates at the limit do not count as truncation.
    let html = "<a href=/0>0</a><a href=/0>0</a>";
    let limits = ExtractLimits {
        max_links: 1,
        ..ExtractLimits::default()
    };
    assert_eq!(
        extract_links(html.as_bytes(), &Url::parse(PAGE).unwrap(), None, &limits).cut,
        None
    );
}

#[test]
fn a_page_over_the_parser_memory_limit_is_cut() {
    // 300 000 unclosed elements: lol_html's element stack outgrows its limit.
    let mut html = String::from("<a href=/1>1</a>");
    html.push_str(&"<span class=x>".repeat(300_000));
    html.push_str("<a href=/2>2</a>");
    let page = extract(&html);
    assert_eq!(page.cut, Some(PageCut::ParserLimit));
    let urls: Vec<&str> = page.links.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(urls, ["http://example.com/1"]);
}

#[test]
fn long_distinct_tag_paths_are_capped_per_page() {
    // 2 000 links, each under its own ~1.5 KB path (six nested classes).
    let class = "c".repeat(240);
    let html: String = (0..2000)
        .map(|i| {
            let open: String = (0..6)
                .map(|d| format!("<div class=\"{class}{i}-{d}\">"))
                .collect();
            format!("{open}<a href=/{i}>{i}</a>{}", "</div>".repeat(6))
        })
        .collect();
    let page = extract(&html);
    assert_eq!(page.cut, Some(PageCut::TagPathBytes));
    let bytes: usize = page.links.iter().map(|l| l.tag_path.as_str().len()).sum();
    assert!(bytes <= MAX_PAGE_PATH_BYTES, "{bytes}");
    assert!(page.links.len() > 200, "{}", page.links.len());
}

#[test]
fn identical_paths_share_one_string() {
    let links = extract("<ul><li><a href=1>1</a><li><a href=2>2</a></ul><p><a href=3>3</a>").links;
    let ptr = |i: usize| links[i].tag_path.as_str().as_ptr();
    assert_eq!(links[0].tag_path, links[1].tag_path);
    assert_eq!(ptr(0), ptr(1));
    assert_ne!(ptr(0), ptr(2));
}

#[test]
fn structured_data_detection() {
    let cases = [
        (
            r#"<script type="application/ld+json">{"@type":"Dataset"}</script>"#,
            true,
        ),
        (
            r#"<script type=" Application/LD+JSON ; charset=utf-8">{}</script>"#,
            true,
        ),
        (r#"<script type="text/javascript">var a;</script>"#, false),
        (
            r#"<div itemscope itemtype="https://schema.org/Dataset"></div>"#,
            true,
        ),
        (r#"<span itemtype="x"></span>"#, true),
        (r#"<body vocab="https://schema.org/"></body>"#, true),
        (r#"<div typeof="Dataset"></div>"#, true),
        (r#"<span property="name">x</span>"#, true),
        (r#"<meta property="dc:title" content="x">"#, true),
        (
            r#"<meta property="og:title" content="x"><meta property="twitter:card">"#,
            false,
        ),
        (r#"<div class="itemscope">no</div>"#, false),
        (r#"<script type="text/plain" itemscope></script>"#, true),
        (r#"<DIV ItemScope>x</DIV>"#, true),
    ];
    for (html, expected) in cases {
        assert_eq!(extract(html).structured_data, expected, "{html}");
    }
}

#[test]
fn charset_from_header_and_meta() {
    // "Скачать" in windows-1251.
    let mut body = b"<a href=/x>".to_vec();
    body.extend_from_slice(&[0xD1, 0xEA, 0xE0, 0xF7, 0xE0, 0xF2, 0xFC]);
    body.extend_from_slice(b"</a>");
    let page_url = Url::parse(PAGE).unwrap();
    let limits = ExtractLimits::default();
    let page = extract_links(
        &body,
        &page_url,
        Some("text/html; charset=\"windows-1251\""),
        &limits,
    );
    assert_eq!(page.links[0].anchor, "Скачать");

    let mut with_meta = b"<meta charset=windows-1251>".to_vec();
    with_meta.extend_from_slice(&body);
    let page = extract_links(&with_meta, &page_url, Some("text/html"), &limits);
    assert_eq!(page.links[0].anchor, "Скачать");

    // Unsupported charsets fall back to UTF-8 and do not fail.
    let page = extract_links(
        b"<a href=/y>y</a>",
        &page_url,
        Some("text/html; charset=utf-16"),
        &limits,
    );
    assert_eq!(page.links[0].url.as_str(), "http://example.com/y");
    assert_eq!(charset_from_content_type("text/html;charset=bogus"), None);
}

#[test]
fn meta_http_equiv_content_type_sets_the_charset_unless_the_header_did() {
    // "Скачать" in windows-1251.
    let mut link = b"<a href=/x>".to_vec();
    link.extend_from_slice(&[0xD1, 0xEA, 0xE0, 0xF7, 0xE0, 0xF2, 0xFC]);
    link.extend_from_slice(b"</a>");
    let mut body =
        b"<meta http-equiv=content-type content='text/html; charset=windows-1251'>".to_vec();
    body.extend_from_slice(&link);
    let page_url = Url::parse(PAGE).unwrap();
    let limits = ExtractLimits::default();
    let page = extract_links(&body, &page_url, None, &limits);
    assert_eq!(page.links[0].anchor, "Скачать");
    // Only the first charset counts.
    let mut twice = b"<meta charset=windows-1251><meta charset=utf-8>".to_vec();
    twice.extend_from_slice(&link);
    let page = extract_links(&twice, &page_url, None, &limits);
    assert_eq!(page.links[0].anchor, "Скачать");
    // A charset in the header wins: the bytes stay invalid UTF-8.
    let page = extract_links(&body, &page_url, Some("text/html; charset=utf-8"), &limits);
    assert_ne!(page.links[0].anchor, "Скачать");
}

#[test]
fn ends_pop_as_lol_html_tracks_open_elements() {
    // An end tag closes the nearest open element of its name and every
    // one above it; one with no open element of its name does nothing.
    let page = extract(
        "<div><span><a href=/1>a</div>b</em><a href=/2>c</a><svg><a href=/3 />d</svg><a href=/4>e</a>",
    );
    let got: Vec<(&str, &str, &str)> = page
        .links
        .iter()
        .map(|l| (l.url.path(), l.tag_path.as_str(), l.anchor.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("/1", "/div/span/a", "a"),
            ("/2", "/a", "c"),
            // Self-closing in a foreign namespace: never open, no text.
            ("/3", "/svg/a", ""),
            ("/4", "/a", "e"),
        ]
    );
}

#[test]
fn invalid_utf8_and_binary_do_not_panic() {
    let page_url = Url::parse(PAGE).unwrap();
    let limits = ExtractLimits::default();
    let mut body = b"<a href=\"/\xff\xfe\">\xc3\x28 x</a>".to_vec();
    let page = extract_links(&body, &page_url, None, &limits);
    assert_eq!(page.links.len(), 1);
    assert_eq!(
        page.links[0].url.as_str(),
        "http://example.com/%EF%BF%BD%EF%BF%BD"
    );

    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    body.clear();
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        body.push((x >> 24) as u8);
    }
    let _ = extract_links(&body, &page_url, None, &limits);
    let _ = extract_links(
        b"<<<a href=<a =a><//a><!-- <a href=1>",
        &page_url,
        None,
        &limits,
    );
    let _ = extract_links(b"", &page_url, None, &limits);
}

#[test]
fn deep_nesting_is_capped() {
    let html = format!("{}<a href=x>x</a>", "<div class=level>".repeat(100_000));
    let page = extract(&html);
    assert_eq!(page.links.len(), 1);
    let path = page.links[0].tag_path.as_str();
    assert!(path.len() <= MAX_PATH_BYTES + 10, "{}", path.len());
    assert!(path.ends_with("/div.level/a"));
    // Long class and id values are capped.
    let html = format!(
        "<div class=\"{}\" id=\"{}\"><a href=x>x</a>",
        "c".repeat(5000),
        "i".repeat(5000)
    );
    let path = only_path(&html);
    assert_eq!(
        path.len(),
        "/div.".len() + MAX_CLASS_BYTES - 1 + 1 + MAX_ID_BYTES + "/a".len()
    );
}

#[test]
fn streaming_matches_one_shot() {
    let html = r#"<html><body class="b"><base href="/root/"><ul><li><a href="x&amp;y">A &amp; B</a>
            <li><a href='/z'>Z<img alt=zz></a></ul><table><tr><td><a href=t>T</a></table></body>"#;
    let page_url = Url::parse(PAGE).unwrap();
    let limits = ExtractLimits::default();
    let whole = extract_links(html.as_bytes(), &page_url, None, &limits);
    let mut ex = LinkExtractor::new(&page_url, None, &limits);
    for b in html.as_bytes() {
        ex.write(std::slice::from_ref(b));
    }
    assert_eq!(ex.finish(), whole);
    assert_eq!(whole.links.len(), 3);
}

#[test]
fn extract_links_runs_on_another_thread() {
    let page = std::thread::spawn(|| extract("<a href=/t>t</a>"))
        .join()
        .unwrap();
    assert_eq!(page.links.len(), 1);
}

/// Random tag soup built from the pieces the stack logic reacts to.
fn soup() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "<p>",
        "</p>",
        "<div class='a b'>",
        "</div>",
        "<li>",
        "</li>",
        "<ul>",
        "</ul>",
        "<td>",
        "<tr>",
        "<table>",
        "</table>",
        "<br>",
        "<img alt=i>",
        "<a href=/x>",
        "<a href='/y?a&amp;b'>",
        "</a>",
        "<area href=/z>",
        "<iframe src=/f>",
        "</iframe>",
        "text ",
        "&amp;",
        "<b>",
        "</i>",
        "<base href=/b/>",
        "<html>",
        "<body>",
        "<svg><a href=/s/></svg>",
        "<dd>",
        "<dt>",
        "<option>",
        "<h1>",
        "<h2>",
        "<button>",
        "<script>",
        "</script>",
        "<!--",
        "-->",
        "<select>",
        "<template>",
        "</template>",
        "<a href='#f'>",
        "<a href='mailto:x'>",
    ]);
    prop::collection::vec(piece, 0..60).prop_map(|v| v.concat())
}

/// Start tags in the spellings [`StartTag`] must read as lol_html does.
fn tag_piece() -> impl Strategy<Value = Vec<u8>> {
    let name = prop::sample::select(vec![
        "a", "A", "div", "DiV", "li", "p", "table", "td", "area", "base", "meta", "img", "iframe",
        "x\u{e9}", "b\0", "h1", "script", "SCRIPT",
    ]);
    let attr_name = prop::sample::select(vec![
        "href",
        "HREF",
        "Href",
        "class",
        "CLASS",
        "id",
        "Id",
        "alt",
        "src",
        "http-equiv",
        "content",
        "hr\u{e9}f",
        "data-x",
        "type",
        "TYPE",
        "itemscope",
        "ItemType",
        "typeof",
        "vocab",
        "property",
    ]);
    let value: BoxedStrategy<Vec<u8>> = prop_oneof![
        prop::sample::select(vec![
            "/x",
            "../y z",
            "caf\u{e9}",
            "a&amp;b",
            "",
            " a  b ",
            "refresh",
            "5; url=/r",
            "\u{3042}",
            "\0",
            "#f",
            "og:title",
            "application/ld+json",
            "name",
        ])
        .prop_map(|v| v.as_bytes().to_vec()),
        // Bytes that are not UTF-8 (Latin-1 or Shift_JIS text).
        prop::collection::vec(
            prop::sample::select(vec![b'a', 0xe9, 0x82, 0xa0, b'/']),
            0..4
        ),
    ]
    .boxed();
    let attr = (attr_name, prop::sample::select(vec![0u8, 1, 2, 3]), value).prop_map(
        |(name, quoting, value)| {
            let mut out = vec![b' '];
            out.extend_from_slice(name.as_bytes());
            match quoting {
                0 => {}
                1 => {
                    out.extend_from_slice(b"=\"");
                    out.extend_from_slice(&value);
                    out.push(b'"');
                }
                2 => {
                    out.extend_from_slice(b"='");
                    out.extend_from_slice(&value);
                    out.push(b'\'');
                }
                _ => {
                    out.push(b'=');
                    out.extend(value.iter().filter(|b| !b" '\">".contains(b)));
                }
            }
            out
        },
    );
    prop_oneof![
        3 => (name.clone(), prop::collection::vec(attr, 0..4), any::<bool>()).prop_map(
            |(name, attrs, self_closing)| {
                let mut out = format!("<{name}").into_bytes();
                for a in attrs {
                    out.extend(a);
                }
                out.extend_from_slice(if self_closing { b"/>" } else { b">" });
                out
            }
        ),
        1 => name.prop_map(|n| format!("</{n}>text ").into_bytes()),
        1 => Just(b"<meta charset=windows-1252>".to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn paths_are_well_formed_and_links_unique(html in soup(), split in 0usize..400) {
        let page_url = Url::parse(PAGE).unwrap();
        let limits = ExtractLimits { max_links: 5, ..ExtractLimits::default() };
        let whole = extract_links(html.as_bytes(), &page_url, None, &limits);
        prop_assert!(whole.links.len() <= 5);
        let mut seen = HashSet::new();
        for link in &whole.links {
            let path = link.tag_path.as_str();
            prop_assert!(path.starts_with('/'));
            let last = path.rsplit('/').next().unwrap_or_default();
            let tag = last.split(['.', '#']).next().unwrap_or_default();
            prop_assert!(matches!(tag, "a" | "area" | "iframe"), "{}", path);
            prop_assert!(link.url.fragment().is_none());
            prop_assert!(seen.insert(link.url.clone()));
            prop_assert!(link.anchor.chars().count() <= MAX_ANCHOR_CHARS);
        }
        // Chunk boundaries do not change the result.
        let cut = split.min(html.len());
        let mut ex = LinkExtractor::new(&page_url, None, &limits);
        ex.write(&html.as_bytes()[..cut]);
        ex.write(&html.as_bytes()[cut..]);
        prop_assert_eq!(ex.finish(), whole);
    }

    /// Tag names and attributes read from the body's bytes ([`StartTag`])
    /// give what lol_html's own accessors give: upper case, duplicate and
    /// value-less attributes, non-ASCII and legacy-encoded bytes, NULs.
    #[test]
    fn source_and_streaming_agree(
        pieces in prop::collection::vec(tag_piece(), 0..40),
        charset in prop::sample::select(vec![None, Some("utf-8"), Some("windows-1252"), Some("shift_jis")]),
    ) {
        let body = pieces.concat();
        let page_url = Url::parse(PAGE).unwrap();
        let content_type = charset.map(|c| format!("text/html; charset={c}"));
        let limits = ExtractLimits::default();
        let whole = extract_links(&body, &page_url, content_type.as_deref(), &limits);
        let mut ex = LinkExtractor::new(&page_url, content_type.as_deref(), &limits);
        ex.write(&body);
        prop_assert_eq!(ex.finish(), whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..2000)) {
        let page_url = Url::parse(PAGE).unwrap();
        let page = extract_links(&body, &page_url, Some("text/html; charset=shift_jis"), &ExtractLimits::default());
        prop_assert!(page.links.len() <= 10_000);
    }
}

/// A ~1 MiB page made of repeated `section(i)` snippets.
fn synthetic_page(section: impl Fn(usize) -> String) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><title>Stats</title>\
        <script type=\"application/ld+json\">{}</script></head><body class=\"page\">",
    );
    let mut i = 0;
    while html.len() < 1 << 20 {
        html.push_str(&section(i));
        i += 1;
    }
    html.push_str("</body></html>");
    html
}

/// `cargo test --release -p forager-core --lib extract:: -- --ignored --nocapture`
#[test]
#[ignore]
fn throughput_one_mib() {
    // Dense markup: ~30 bytes per element, ~7 000 links per MiB.
    let dense = synthetic_page(|i| {
        format!(
            "<div class=\"section row\" id=\"s{i}\"><h2>Section {i}</h2><p>Some text about the \
             data &amp; the methods, with <b>bold</b> and <i>italic</i> words.<br>\
             <img src=\"/img/{i}.png\" alt=\"chart\"></p><ul class=\"files\">\
             <li><a class=\"download\" href=\"/data/{i}/table.csv?v=1&amp;lang=en\">CSV table {i}</a>\
             <li><a href=\"../reports/{i}.pdf\">Report</a><li><a href=\"#top\">top</a></ul>\
             <table><tr><td>{i}<td><a href=\"/p/{i}.html\">page</a></table></div>\n"
        )
    });
    // Documentation-like prose: ~150 bytes per element, ~1 300 links per MiB.
    let prose = synthetic_page(|i| {
        format!(
            "<div class=\"section\" id=\"sec-{i}\"><h2>Heading {i}<a class=\"headerlink\" \
             href=\"#sec-{i}\">¶</a></h2><p>The quick brown fox jumps over the lazy dog while \
             the statistician reads the <a class=\"reference internal\" href=\"../api/mod{i}.html\">\
             module {i} reference</a> and the methodology notes, which explain how the \
             seasonally adjusted series are computed &amp; revised every quarter.</p>\
             <p>See also <code>function_{i}()</code> for details on weighting, sampling and \
             the treatment of missing values in the <em>annual</em> tables.</p></div>\n"
        )
    });
    for (name, html) in [("dense", dense), ("prose", prose)] {
        measure(name, &html);
    }
}

fn measure(name: &str, html: &str) {
    let page_url = Url::parse(PAGE).unwrap();
    let limits = ExtractLimits {
        max_links: usize::MAX,
        ..ExtractLimits::default()
    };
    let mib = html.len() as f64 / (1 << 20) as f64;
    let _warm = extract_links(html.as_bytes(), &page_url, None, &limits);
    // CPU time of this thread (Linux): wall time lies on a shared machine.
    let cpu_ns = || -> Option<u64> {
        let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        stat.split_whitespace().next()?.parse().ok()
    };
    let runs = 20;
    let (wall, cpu) = (std::time::Instant::now(), cpu_ns());
    let mut links = 0;
    for _ in 0..runs {
        links = extract_links(html.as_bytes(), &page_url, None, &limits)
            .links
            .len();
    }
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3 / runs as f64 / mib;
    let cpu_ms = match (cpu, cpu_ns()) {
        (Some(a), Some(b)) => format!("{:.1}", (b - a) as f64 / 1e6 / runs as f64 / mib),
        _ => "n/a".to_string(),
    };
    println!(
        "extract_links {name}: {mib:.2} MiB page, {links} links: {cpu_ms} ms CPU/MiB, \
         {wall_ms:.1} ms wall/MiB ({:.0} MiB/s wall)",
        1e3 / wall_ms
    );
}

// ------------------------------------------------- catalog sources (issue 40)

fn with_catalogs(html: &str, catalogs: bool) -> PageLinks {
    let limits = ExtractLimits {
        sources: PageSources {
            catalogs,
            ..PageSources::default()
        },
        ..ExtractLimits::default()
    };
    extract_links(html.as_bytes(), &Url::parse(PAGE).unwrap(), None, &limits)
}

const DATASET_PAGE: &str = r#"<html><head>
<link rel="alternate" type="text/turtle" href="/catalog/ds1.ttl">
<link rel="alternate" type="application/rss+xml" href="/feed.rss">
<link rel="stylesheet" type="text/css" href="/style.css">
<script type="application/ld+json">
{"@context": "https://schema.org", "@type": "Dataset", "name": "Budget",
 "image": {"@type": "ImageObject", "contentUrl": "/logo.png"},
 "distribution": [
   {"@type": "DataDownload", "contentUrl": "/files/budget.csv", "encodingFormat": "text/csv"},
   {"@type": "DataDownload", "contentUrl": "/files/linked.csv"}]}
</script></head><body>
<a href="/files/linked.csv">the same file, linked</a>
<div itemscope itemtype="https://schema.org/DataDownload">
  <a itemprop="contentUrl" href="/files/micro.xlsx">x</a><meta itemprop="encodingFormat" content="XLSX"></div>
</body></html>"#;

#[test]
fn catalog_markup_and_alternate_catalogs_are_links_when_asked() {
    let got: Vec<(String, String, String)> = with_catalogs(DATASET_PAGE, true)
        .links
        .into_iter()
        .map(|l| (l.url.to_string(), l.tag_path.to_string(), l.anchor))
        .collect();
    let want = |u: &str, p: &str, a: &str| {
        (
            format!("http://example.com{u}"),
            p.to_string(),
            a.to_string(),
        )
    };
    assert_eq!(
        got,
        vec![
            want("/catalog/ds1.ttl", "[catalog dcat]", ""),
            // A page link wins over the markup's entry for the same file.
            want("/files/linked.csv", "/html/body/a", "the same file, linked"),
            want("/files/micro.xlsx", "/html/body/div/a", "x"),
            want(
                "/files/budget.csv",
                "[catalog schema.org] contentUrl",
                "text/csv"
            ),
        ]
    );
    // Read for the markup only: the page's statements are not kept.
    assert!(with_catalogs(DATASET_PAGE, true).structured.is_none());
}

#[test]
fn without_catalogs_the_markup_gives_no_links() {
    let got: Vec<String> = with_catalogs(DATASET_PAGE, false)
        .links
        .into_iter()
        .map(|l| l.url.path().to_string())
        .collect();
    assert_eq!(got, vec!["/files/linked.csv", "/files/micro.xlsx"]);
}

#[test]
fn catalog_markup_links_keep_the_page_cap() {
    let mut html = String::from(
        r#"<script type="application/ld+json">{"@context":"https://schema.org","@type":"Dataset","distribution":["#,
    );
    for i in 0..50 {
        if i > 0 {
            html.push(',');
        }
        html.push_str(&format!(
            r#"{{"@type":"DataDownload","contentUrl":"/f/{i}.csv"}}"#
        ));
    }
    html.push_str("]}</script>");
    let limits = ExtractLimits {
        max_links: 10,
        sources: PageSources {
            catalogs: true,
            ..PageSources::default()
        },
        ..ExtractLimits::default()
    };
    let links = extract_links(html.as_bytes(), &Url::parse(PAGE).unwrap(), None, &limits);
    assert_eq!(links.links.len(), 10);
    assert_eq!(links.cut, Some(PageCut::MaxLinks));
}

// ------------------------------------------------------ GET forms (issue 40)

fn with_forms(html: &str, per_form: usize) -> Vec<(String, String)> {
    let limits = ExtractLimits {
        sources: PageSources {
            forms: Some(crate::form::FormLimits {
                per_form,
                per_site: 1_000,
            }),
            ..PageSources::default()
        },
        ..ExtractLimits::default()
    };
    extract_links(html.as_bytes(), &Url::parse(PAGE).unwrap(), None, &limits)
        .links
        .into_iter()
        .map(|l| (l.url.to_string(), l.tag_path.to_string()))
        .collect()
}

const FORMS_PAGE: &str = r#"<html><body>
<form class="pick" action="/tables" method="get">
  <input type="hidden" name="t" value="a&amp;b">
  <select name="year"><option value="2020">2020</option><option value="2021" selected>2021</option></select>
  <label><input type="radio" name="r" value="n"> N</label><label><input type="radio" name="r" value="s"> S</label>
  <input type="submit" value="Show">
</form>
<form method="post" action="/tables"><select name="y"><option value="1"><option value="2"></select></form>
<form role="search" action="/find"><select name="y"><option value="1"><option value="2"></select></form>
<form action="/q"><input name="q"><select name="y"><option value="1"><option value="2"></select></form>
<a href="/after">after</a>
</body></html>"#;

#[test]
fn a_get_form_of_choices_is_a_set_of_links_under_one_path() {
    let got = with_forms(FORMS_PAGE, 100);
    let form = "[form] /html/body/form.pick";
    let want = |q: &str| {
        (
            format!("http://example.com/tables?t=a%26b&{q}"),
            form.to_string(),
        )
    };
    assert_eq!(
        got,
        vec![
            want("year=2020&r=n"),
            want("year=2020&r=s"),
            want("year=2021&r=n"),
            want("year=2021&r=s"),
            (
                "http://example.com/after".to_string(),
                "/html/body/a".to_string()
            ),
        ]
    );
    // Capped per form; and off unless asked.
    assert_eq!(with_forms(FORMS_PAGE, 2).len(), 3);
    assert_eq!(paths(FORMS_PAGE).len(), 1);
}

#[test]
fn a_form_left_open_ends_with_the_page() {
    let got = with_forms(
        r#"<form action="/t"><select name="y"><option value="1"><option value="2">"#,
        100,
    );
    assert_eq!(got.len(), 2, "{got:?}");
}
