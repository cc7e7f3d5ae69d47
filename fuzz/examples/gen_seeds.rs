//! Writes the seed corpora of the fuzz targets under `fuzz/seeds/<target>/`:
//! small pages, robots files and stored values like those of the loopback
//! test sites. The files are committed; run this again after a change of the
//! stored types: `cargo run --manifest-path fuzz/Cargo.toml --example gen_seeds`.

use forager::fetch::{RobotsRecord, RobotsStatus};
use forager_core::link::{Link, TagPath};
use forager_core::codec::encode;
use forager::store::{FrontierEntry, JobCounters, JobRecord, ManifestRow, StopReason};
use forager_core::strategy::QueueKey;
use std::fs;
use std::path::{Path, PathBuf};
use url::Url;

const PAGES: [(&str, &str); 5] = [
    (
        "index",
        r#"<!DOCTYPE html><html><head><title>Statistics</title><base href="/data/"></head>
<body><nav class="top menu"><ul><li><a href="/">Home</a><li><a href="about.html">About</a></ul></nav>
<div class="content" id="main"><h1>Releases</h1>
<table><tr><td><a class="download" href="gdp-2024.csv">GDP &amp; income (CSV)</a><td><a href="gdp-2024.xlsx">XLSX</a>
<tr><td><a href="../reports/annual.pdf#page=2">Annual report</a></table>
<p>See <a href="HTTP://WWW.Site.Test:80/a/./b/../c?jsessionid=1&amp;x=%7e">the archive</a>
<p><area href="/map.zip"><iframe src="/frame.html"></iframe>
<a href="mailto:x@site.test">mail</a> <a href="javascript:void(0)">js</a></div>
<script type="application/ld+json">{"@type":"Dataset"}</script></body></html>"#,
    ),
    (
        "broken",
        "<html><body><p>unclosed <a href='/x'>one <b>bold <a href=\"/y\">two</b></p>\n<li>a<li>b<dd>c<dt>d<table><tr><td>cell<td><a href=/z?a=1&sid=abc#frag>z</a>\n<!-- comment <a href=/hidden> --><a href=\"/\u{00e9}t\u{00e9}\">accent</a><a href=\"//other.test/p\">other</a>",
    ),
    (
        "charset",
        "<html><head><meta charset=\"windows-1252\"></head><body><a href=\"/caf\u{00e9}?q=\u{00e9}\">caf\u{00e9}</a><a href=\"/a/a/a/a/a\">trap</a></body></html>",
    ),
    (
        "refresh",
        "<html><head><meta http-equiv=\"refresh\" content=\"0; url=/next.html\"></head><frameset><frame src=\"/f1.html\"></frameset></html>",
    ),
    (
        "deep",
        "<div><div><div><div><div><div><div><div><span class=\"a b c\" id=\"q\"><a href=\"/deep.csv\" class=\"x\">deep</a></span></div></div></div></div></div></div></div></div>",
    ),
];

const ROBOTS: [(&str, &str); 4] = [
    (
        "basic",
        "forager /private/x\nUser-agent: *\nDisallow: /private/\nAllow: /private/public\nCrawl-delay: 2\nSitemap: https://site.test/sitemap.xml\n",
    ),
    (
        "groups",
        "otherbot /a\nUser-agent: forager\nUser-agent: otherbot\nDisallow: /a$\nDisallow: /*.pdf\n\nUser-agent: *\nDisallow: /\n",
    ),
    ("empty", "forager /\n"),
    (
        "weird",
        "Forager/0.1 (+http://x) /%7euser\nUSER-AGENT : FORAGER\nDISALLOW:/%7Euser\ncrawl-delay: 1e30\nSitemap: /rel.xml\nSitemap: ftp://x\n# comment\n\u{feff}Disallow: /bom\n",
    ),
];

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    fs::create_dir_all(dir).expect("create seed folder");
    fs::write(dir.join(name), bytes).expect("write seed");
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("seeds");

    // extract_links: mode byte (content type), two split bytes, the page.
    for (i, (name, html)) in PAGES.iter().enumerate() {
        let mut bytes = vec![i as u8, 0, 40];
        bytes.extend_from_slice(html.as_bytes());
        write(&root.join("extract_links"), &format!("{name}.bin"), &bytes);
    }

    // normalize: raw links and absolute URLs.
    let urls = [
        "HTTP://Www.Site.Test:80/a/./b/../%7euser/%41?b=2&a=1&PHPSESSID=x#top",
        "https://site.test./x;jsessionid=ABC?sid=1&q=%e9",
        "../up/../../over?",
        "//other.test:8080/p?q",
        "http://[::ffff:127.0.0.1]:8080/",
        "http://0x7f.1/",
        "  /path with spaces/\u{00e9}\t",
        "https://site.test/a/a/a/a",
    ];
    for (i, u) in urls.iter().enumerate() {
        write(
            &root.join("normalize"),
            &format!("url{i}.txt"),
            u.as_bytes(),
        );
    }

    for (name, body) in ROBOTS {
        write(
            &root.join("robots"),
            &format!("{name}.txt"),
            body.as_bytes(),
        );
    }

    // codec_decode: type byte, then a stored value (version byte included).
    let url = Url::parse("https://site.test/data/gdp.csv").expect("static URL");
    let mut link = Link::seed(url.clone());
    link.tag_path = TagPath::new("/html/body/div.content main#x/ul/li/a.download");
    link.anchor = "GDP".into();
    link.depth = 2;
    link.referrer = Some(Url::parse("https://site.test/").expect("static URL"));
    let entry = FrontierEntry {
        link,
        key: QueueKey {
            slot: 3,
            score: 0.5,
        },
    };
    let counters = JobCounters {
        requests: 120,
        pages: 80,
        targets: 12,
        bytes: 1 << 20,
        ..JobCounters::default()
    };
    let record = JobRecord {
        strategy: "sb".into(),
        seed: 1,
        counters: counters.clone(),
        strategy_state: vec![1, 2, 3],
        early_stop_state: vec![1, 0],
        next_link_id: 99,
        next_manifest_row: 12,
        stop: Some(StopReason::FrontierEmpty),
        updated_at: 1_700_000_000,
        trap_state: Vec::new(),
    };
    let row = ManifestRow {
        url: url.to_string(),
        final_url: url.to_string(),
        mime: "text/csv".into(),
        bytes: 42,
        sha256: "00".repeat(32),
        file: format!("{}.csv", "00".repeat(32)),
        referrer: None,
        tag_path: "/html/body/a".into(),
        fetched_at: "2025-01-01T00:00:00Z".into(),
        truncated: false,
    };
    let robots = RobotsRecord {
        origin: "http://site.test:80".into(),
        status: RobotsStatus::Fetched,
        body: b"User-agent: *\nDisallow: /x\n".to_vec(),
        fetched_at_ms: 1_700_000_000_000,
    };
    let values: [(u8, &str, Vec<u8>); 5] = [
        (0, "frontier_entry", encode(&entry)),
        (1, "job_record", encode(&record)),
        (2, "manifest_row", encode(&row)),
        (3, "job_counters", encode(&counters)),
        (4, "robots_record", encode(&robots)),
    ];
    for (tag, name, value) in values {
        let mut bytes = vec![tag];
        bytes.extend_from_slice(&value);
        write(&root.join("codec_decode"), &format!("{name}.bin"), &bytes);
    }
    println!("seeds written under {}", root.display());
}
