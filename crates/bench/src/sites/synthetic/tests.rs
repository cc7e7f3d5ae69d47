//! Tests: presets against their plans and a ground-truth walk, URLs, specs.

use super::layout::{max_items_within, NODE_BASE};
use super::render::{FilesMarkup, LOOKS};
use super::urls::{relative_href, session_id, Sort, Variant};
use super::*;
use crate::groundtruth::{walk, GroundTruth, WalkOptions};
use crate::sites::server::{Site, SiteRequest, SiteResponse};
use axum::http::StatusCode;
use std::collections::BTreeSet;
use url::Url;

fn start() -> Url {
    Url::parse("http://synth.test/").unwrap()
}

fn get(site: &SyntheticSite, pq: &str) -> SiteResponse {
    site.respond(&SiteRequest::get("synth.test", pq))
}

fn body_text(resp: SiteResponse) -> String {
    String::from_utf8(resp.body.read_capped(usize::MAX).bytes).unwrap()
}

fn ground_truth(site: &SyntheticSite) -> GroundTruth {
    walk(site, "synth.test", &start(), &WalkOptions::statistics())
}

/// The walk must find exactly what the plan promises, and nothing broken
/// but the deliberate error links.
fn check_against_plan(site: &SyntheticSite, gt: &GroundTruth) {
    let plan = site.plan();
    assert!(!gt.truncated);
    assert_eq!(gt.pages as u64, plan.html_pages, "HTML pages");
    assert_eq!(gt.targets.len() as u64, plan.targets, "targets");
    assert_eq!(
        gt.holder_pages as u64, plan.holders,
        "pages linking to targets"
    );
    for (url, status) in &gt.errors {
        let path = Url::parse(url).unwrap().path().to_string();
        let expected = ["/archive/", "/api/", "/restricted/", "/gone/"];
        let edit = site.params.variant_links && path.starts_with("/_edit/");
        assert!(
            edit || expected.iter().any(|p| path.starts_with(p)),
            "unexpected error {status} for {url}"
        );
    }
    assert!(gt.other_host.is_empty() && gt.out_of_scope.is_empty());
}

#[test]
fn small_preset_matches_its_plan_and_ranges() {
    let site = SyntheticSite::preset(Preset::Small, 7).unwrap();
    let gt = ground_truth(&site);
    check_against_plan(&site, &gt);
    let p = site.params();
    assert!((gt.pages as f64 - p.pages as f64).abs() <= 0.01 * p.pages as f64);
    assert!(
        (gt.target_density() - p.target_density).abs() < 0.005,
        "{}",
        gt.target_density()
    );
    assert!(
        (gt.holder_share() - p.holder_share).abs() < 0.005,
        "{}",
        gt.holder_share()
    );
    // Every kind of structure is there.
    assert!(gt.trap_links > 0, "calendar trap linked");
    assert!(!gt.robots_blocked.is_empty(), "print pages disallowed");
    assert!(gt.redirects > 0);
    assert!(gt.neither > 0, "images and _sources");
    assert!(!gt.errors.is_empty());
    let statuses: BTreeSet<u16> = gt.errors.values().copied().collect();
    assert!(statuses.len() >= 3, "{statuses:?}");
    let ext_less = gt.targets.iter().filter(|u| u.contains("/node/")).count();
    assert!(
        ext_less > 0 && ext_less < gt.targets.len() / 2,
        "{ext_less}"
    );
    for ext in ["csv", "xlsx", "pdf", "zip", "json"] {
        assert!(
            gt.targets.iter().any(|u| u.ends_with(ext)),
            "no .{ext} target"
        );
    }
}

#[test]
fn variants_preset_links_every_page_to_two_variants_that_are_neither() {
    let site = SyntheticSite::preset(Preset::Variants, 4).unwrap();
    let gt = ground_truth(&site);
    check_against_plan(&site, &gt);
    assert!(
        (gt.target_density() - 0.15).abs() < 0.005,
        "{}",
        gt.target_density()
    );
    // A source link per canonical page and a second variant, 1/3 of them broken.
    let edits = gt.errors.keys().filter(|u| u.contains("/_edit/")).count() as u64;
    let served = gt.neither as u64;
    assert!(served >= site.canonical_pages, "{served} neither answers");
    assert!(
        edits > site.canonical_pages / 5 && edits < site.canonical_pages / 2,
        "{edits} edit links of {} pages",
        site.canonical_pages
    );
    // Each kind is served with its type, on the page's own variants only.
    let gid = (1..site.canonical_pages)
        .find(|&g| site.variants_of(g)[1] == Variant::Raw)
        .unwrap();
    let home = body_text(get(&site, &site.page_path(gid).unwrap()));
    for (kind, mime) in [
        (Variant::Source, "text/plain"),
        (Variant::Raw, "text/x-rst"),
    ] {
        let path = kind.path(gid);
        assert!(home.contains(&format!("href=\"{path}\"")), "{path} linked");
        let resp = get(&site, &path);
        assert_eq!(resp.status, StatusCode::OK);
        assert!(
            resp.content_type().is_some_and(|c| c.starts_with(mime)),
            "{path}"
        );
    }
    assert_eq!(
        get(&site, &Variant::Preview.path(gid)).status,
        StatusCode::NOT_FOUND
    );
    let gid = (1..site.canonical_pages)
        .find(|&g| site.variants_of(g)[1] == Variant::Preview)
        .unwrap();
    let resp = get(&site, &Variant::Preview.path(gid));
    assert!(resp
        .content_type()
        .is_some_and(|c| c.starts_with("image/png")));
    assert_eq!(
        get(&site, &format!("{}?x=1", Variant::Source.path(gid))).status,
        StatusCode::NOT_FOUND
    );
    // The other presets have none.
    let small = SyntheticSite::preset(Preset::Small, 4).unwrap();
    assert_eq!(
        get(&small, &Variant::Source.path(3)).status,
        StatusCode::NOT_FOUND
    );
    let page = body_text(get(&small, &small.page_path(3).unwrap()));
    assert!(!page.contains("/_source/") && !page.contains("/_edit/"));
}

#[test]
fn sparse_and_dense_presets_hit_their_densities() {
    for (preset, density, share) in [(Preset::Sparse, 0.02, 0.01), (Preset::Dense, 0.6, 0.2)] {
        let site = SyntheticSite::preset(preset, 3).unwrap();
        let gt = ground_truth(&site);
        check_against_plan(&site, &gt);
        assert!(
            (gt.target_density() - density).abs() < 0.003,
            "{preset:?}: {}",
            gt.target_density()
        );
        assert!(
            (gt.holder_share() - share).abs() < 0.003,
            "{preset:?}: {}",
            gt.holder_share()
        );
    }
}

#[test]
fn deep_preset_is_about_ninety_pages_deep() {
    let site = SyntheticSite::preset(Preset::Deep, 11).unwrap();
    assert!(
        (88..=95).contains(&site.plan().max_listing_pages),
        "{}",
        site.plan().max_listing_pages
    );
    let gt = ground_truth(&site);
    check_against_plan(&site, &gt);
    assert!(
        gt.target_depth_max >= 85,
        "target depth {}",
        gt.target_depth_max
    );
    assert!(
        gt.target_depth_mean >= 40.0,
        "mean target depth {}",
        gt.target_depth_mean
    );
    // Shallow presets stay shallow.
    let small = SyntheticSite::preset(Preset::Small, 11).unwrap();
    let gt = ground_truth(&small);
    assert!(
        gt.target_depth_max <= 15,
        "small target depth {}",
        gt.target_depth_max
    );
}

#[test]
fn same_seed_same_site_other_seed_other_site() {
    let a = SyntheticSite::preset(Preset::Small, 42).unwrap();
    let b = SyntheticSite::preset(Preset::Small, 42).unwrap();
    let c = SyntheticSite::preset(Preset::Small, 43).unwrap();
    assert_eq!(a.plan(), b.plan());
    let gta = ground_truth(&a);
    assert_eq!(gta, ground_truth(&b));
    for url in gta.targets.iter().take(50) {
        let pq = Url::parse(url).unwrap().path().to_string();
        assert_eq!(
            get(&a, &pq).body.read_capped(usize::MAX),
            get(&b, &pq).body.read_capped(usize::MAX)
        );
    }
    for gid in (0..a.canonical_pages).step_by(37) {
        let pq = a.page_path(gid).unwrap();
        assert_eq!(body_text(get(&a, &pq)), body_text(get(&b, &pq)), "{pq}");
    }
    assert_ne!(body_text(get(&a, "/")), body_text(get(&c, "/")));
}

#[test]
fn sections_have_distinct_templates_and_file_tag_paths() {
    let site = SyntheticSite::preset(Preset::Medium, 5).unwrap();
    let plan = site.plan();
    let styles: BTreeSet<&str> = plan.sections.iter().map(|s| s.url_style).collect();
    let looks: BTreeSet<&str> = plan.sections.iter().map(|s| s.look).collect();
    assert_eq!(styles.len(), 4);
    assert_eq!(looks.len(), 4);
    // A dataset page links its files under its section's file markup.
    let data = site.sections.iter().position(|s| s.data).unwrap();
    let html = body_text(get(&site, &site.item_path(data, 0)));
    let marker = match LOOKS[site.sections[data].look].files {
        FilesMarkup::Table => "class=\"dl\"",
        FilesMarkup::List => "class=\"file-link\"",
        FilesMarkup::Buttons => "class=\"btn btn-download\"",
        FilesMarkup::Attachments => "class=\"file-icon\"",
    };
    assert!(html.contains(marker), "{marker} missing");
    assert!(html.contains("id=\"main-menu\""), "menu on every page");
    assert!(html.contains("class=\"breadcrumb\""));
    assert!(html.contains("<footer"));
}

#[test]
fn pages_are_real_sized_html() {
    let site = SyntheticSite::preset(Preset::Small, 1).unwrap();
    let (lo, hi) = site.params().page_bytes;
    for gid in (0..site.canonical_pages).step_by(13) {
        let pq = site.page_path(gid).unwrap();
        let resp = get(&site, &pq);
        assert_eq!(resp.status, StatusCode::OK, "{pq}");
        assert_eq!(resp.content_type(), Some("text/html; charset=utf-8"));
        let html = body_text(resp);
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        assert!(
            html.len() >= lo as usize && html.len() <= hi as usize + 16 * 1024,
            "{pq}: {}",
            html.len()
        );
    }
}

#[test]
fn only_the_sites_own_urls_exist() {
    let site = SyntheticSite::preset(Preset::Small, 9).unwrap();
    let ok = |pq: &str| get(&site, pq).status;
    assert_eq!(ok("/"), StatusCode::OK);
    assert_eq!(ok("/?x=1"), StatusCode::NOT_FOUND);
    assert_eq!(ok("/robots.txt"), StatusCode::OK);
    assert_eq!(ok("/calendar/2024/05"), StatusCode::OK);
    assert_eq!(ok("/calendar/2024/13"), StatusCode::NOT_FOUND);
    assert_eq!(ok("/calendar/2024/5"), StatusCode::NOT_FOUND);
    let cal = body_text(get(&site, "/calendar/2024/12"));
    assert!(cal.contains("/calendar/2025/01") && cal.contains("/calendar/2024/11"));
    assert!(site.is_trap("/calendar/1999/01"));
    assert!(!site.is_trap("/news/"));
    // Extension-less targets and Drupal pages share /node/ with opposite parity.
    let t = (0..site.targets)
        .find(|&t| site.target_is_extensionless(t))
        .unwrap();
    let node = site.target_path(t).unwrap();
    let resp = get(&site, &node);
    assert_eq!(resp.status, StatusCode::OK);
    assert!(resp.content_type().is_some_and(|c| !c.contains("html")));
    let wrong_parity = format!("/node/{}", NODE_BASE + 2 * t);
    assert!(get(&site, &wrong_parity).status == StatusCode::NOT_FOUND || site.kind_of(t).is_some());
    // A file URL with another stem is not the file.
    let file = (0..site.targets)
        .find(|&t| !site.target_is_extensionless(t))
        .unwrap();
    let path = site.target_path(file).unwrap();
    let (dir, _) = path.rsplit_once('/').unwrap();
    assert_eq!(
        ok(&format!("{dir}/other_name-{file}.csv")),
        StatusCode::NOT_FOUND
    );
    assert_eq!(ok(&path), StatusCode::OK);
    assert_eq!(ok(&format!("{path}?x=1")), StatusCode::NOT_FOUND);
    // Listings past the end do not exist.
    let sec = 0;
    let n = site.sections[sec].listings;
    assert_eq!(ok(&site.listing_path(sec, n - 1)), StatusCode::OK);
    assert_eq!(ok(&site.listing_path(sec, n)), StatusCode::NOT_FOUND);
    assert_eq!(ok(&site.sorted_path(sec, 0, Sort::Desc)), StatusCode::OK);
    // Redirect chains end where the plan says.
    let mut pq = SyntheticSite::redirect_path(2 * site.item_gid(sec, 1), 0);
    let mut hops = 0;
    loop {
        let resp = get(&site, &pq);
        if !resp.status.is_redirection() {
            assert_eq!(resp.status, StatusCode::OK);
            break;
        }
        pq = resp.location().unwrap().to_string();
        hops += 1;
        assert!(hops <= 3);
    }
    assert_eq!(pq, site.item_path(sec, 1));
}

#[test]
fn contact_session_ids_are_a_small_fixed_pool() {
    let site = SyntheticSite::preset(Preset::Small, 2).unwrap();
    let sid = session_id(2, 5);
    assert_eq!(
        get(&site, &format!("/contact?sessionid={sid}")).status,
        StatusCode::OK
    );
    assert_eq!(
        get(&site, "/contact?sessionid=deadbeef").status,
        StatusCode::NOT_FOUND
    );
}

#[test]
fn relative_hrefs_resolve_back() {
    let base = Url::parse("http://h.test/sec/page-1.html").unwrap();
    for to in [
        "/",
        "/about",
        "/sec/x.html",
        "/other/y.html",
        "/node/1002",
        "/contact?sessionid=ab",
        "/a/b/c/",
    ] {
        let rel = relative_href(base.path(), to);
        assert_eq!(
            base.join(&rel).unwrap().path(),
            to.split('?').next().unwrap(),
            "{to} via {rel}"
        );
    }
    assert_eq!(relative_href("/sec/a.html", "/sec/b.html"), "b.html");
}

#[test]
fn parameters_are_validated() {
    let mut p = Preset::Small.params(1);
    p.target_density = 1.5;
    assert!(SyntheticSite::new(p).is_err());
    let mut p = Preset::Small.params(1);
    p.data_sections = p.sections;
    assert!(SyntheticSite::new(p).is_err());
    let mut p = Preset::Small.params(1);
    p.pages = 150;
    p.sections = 40;
    p.data_sections = 1;
    assert!(
        SyntheticSite::new(p).is_err(),
        "too few pages for the sections"
    );
    let mut p = Preset::Small.params(1);
    p.pages = 150;
    assert!(SyntheticSite::new(p).is_ok());
    assert_eq!("Deep".parse::<Preset>().unwrap(), Preset::Deep);
    assert!("huge".parse::<Preset>().is_err());
}

#[test]
fn specs_name_a_preset_a_seed_and_a_size() {
    let spec = |s: &str| s.parse::<SyntheticSpec>();
    let plain = spec("large").unwrap();
    assert_eq!(
        (plain.preset, plain.seed, plain.pages),
        (Preset::Large, 1, None)
    );
    assert_eq!(plain.name(), "large");
    assert_eq!(plain.params(), Preset::Large.params(1));
    assert_eq!(spec("deep:7").unwrap().seed, 7);
    for (text, pages) in [
        ("large:pages=1000000", 1_000_000),
        ("large:pages=1_000_000", 1_000_000),
        ("large:pages=1M", 1_000_000),
        ("large:pages=200k", 200_000),
        ("large:pages=100", 100),
    ] {
        let s = spec(text).unwrap();
        assert_eq!((s.seed, s.pages), (1, Some(pages)), "{text}");
        assert_eq!(s.params().pages, pages);
    }
    let s = spec("large:3:pages=1M").unwrap();
    assert_eq!((s.seed, s.pages), (3, Some(1_000_000)));
    assert_eq!(s.name(), "large-1000000p");
    // Everything but the page count is the preset's.
    let p = s.params();
    assert_eq!(
        SyntheticParams {
            pages: 100_000,
            ..p
        },
        Preset::Large.params(3)
    );
}

#[test]
fn bad_specs_say_what_is_wrong() {
    let err = |s: &str| format!("{:#}", s.parse::<SyntheticSpec>().unwrap_err());
    assert!(
        err("huge").contains("unknown synthetic preset"),
        "{}",
        err("huge")
    );
    assert!(err("large:x").contains("seed \"x\" is not a number"));
    assert!(err("large:pages=lots").contains("not a whole number"));
    assert!(err("large:pages=").contains("not a whole number"));
    assert!(err("large:pages=1.5M").contains("not a whole number"));
    assert!(err("large:pages=99").contains("outside [100, 100000000]"));
    assert!(err("large:pages=200M").contains("outside [100, 100000000]"));
    assert!(err("large:pages=99999999999999999999").contains("too large"));
    assert!(err("large:pages=20000000000000M").contains("too large"));
    assert!(err("large:size=10").contains("unknown option \"size\""));
    assert!(err("large:pages=1k:pages=2k").contains("given twice"));
    // The seed comes before the size, once.
    assert!(err("large:pages=1k:3").contains("unexpected \"3\""));
    assert!(err("large:3:4").contains("unexpected \"4\""));
}

/// A million-page site is laid out from a few numbers per section and
/// renders any of its pages on demand: nothing grows with its size.
#[test]
fn a_million_page_site_is_laid_out_without_holding_pages() {
    let site =
        SyntheticSite::new("large:pages=1M".parse::<SyntheticSpec>().unwrap().params()).unwrap();
    let plan = site.plan();
    assert!(
        (999_000..=1_001_000).contains(&plan.html_pages),
        "{}",
        plan.html_pages
    );
    // The large preset's density (25 % of pages + targets).
    assert!((plan.target_density() - 0.25).abs() < 0.01);
    assert_eq!(site.sections.len(), 12);
    // The last canonical page exists and is a page of real size.
    let last = site.page_path(site.canonical_pages - 1).unwrap();
    let resp = get(&site, &last);
    assert_eq!(resp.status, StatusCode::OK, "{last}");
    assert!(body_text(resp).len() > 5 * 1024);
    assert!(site.page_path(site.canonical_pages).is_none());
}

proptest::proptest! {
    /// Files of a data section are split among its holders without gap or
    /// overlap, every holder getting at least one.
    #[test]
    fn holder_files_tile_the_section(items in 1u64..300, extra in 0u64..3000, seed in 0u64..1000) {
        let mut site = SyntheticSite::preset(Preset::Small, seed).unwrap();
        let sec = site.sections.iter().position(|s| s.data).unwrap();
        site.sections[sec].items = items;
        site.sections[sec].holders = items;
        site.sections[sec].targets = items + extra;
        let mut next = 0;
        for j in 0..items {
            let (start, count) = site.holder_targets(sec, j);
            proptest::prop_assert_eq!(start, next);
            proptest::prop_assert!(count >= 1);
            next = start + count;
        }
        proptest::prop_assert_eq!(next, items + extra);
    }

    #[test]
    fn max_items_fits_the_budget(budget in 2u64..100_000, mult in 1u64..4, pp in 2u64..50) {
        let items = max_items_within(budget.max(mult + 1), mult, pp);
        let cost = |i: u64| mult * i.div_ceil(pp).max(1) + i;
        proptest::prop_assert!(cost(items) <= budget.max(mult + 1));
        proptest::prop_assert!(cost(items + 1) > budget.max(mult + 1));
    }
}

/// Rendering rate of one core (run: cargo test --release -p forager-bench --lib generation_rate -- --ignored --nocapture).
#[test]
#[ignore]
fn generation_rate() {
    let site = SyntheticSite::preset(Preset::Large, 1).unwrap();
    let t = std::time::Instant::now();
    let mut bytes = 0usize;
    let n = 20_000u64;
    for gid in 0..n {
        let pq = site.page_path(gid * 5 % site.canonical_pages).unwrap();
        bytes += get(&site, &pq).body.len().unwrap_or(0) as usize;
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{:.0} pages/s, {:.1} MiB/s",
        n as f64 / secs,
        bytes as f64 / secs / 1048576.0
    );
}

/// Serving rate over HTTP with the server confined to one thread (run:
/// cargo test --release -p forager-bench --lib serving_rate -- --ignored --nocapture).
#[test]
#[ignore]
fn serving_rate() {
    use crate::sites::SiteServer;
    use std::sync::Arc;
    let site = Arc::new(SyntheticSite::preset(Preset::Large, 1).unwrap());
    let paths: Vec<String> = (0..20_000u64)
        .map(|n| site.page_path(n * 5 % site.canonical_pages).unwrap())
        .collect();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = Arc::clone(&site);
    let server_thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let server =
                SiteServer::start(vec![("synth.test".to_string(), served as Arc<dyn Site>)])
                    .await
                    .unwrap();
            addr_tx.send(server.addr()).unwrap();
            let cpu0 = thread_cpu_secs();
            let _ = stop_rx.await;
            let cpu = thread_cpu_secs() - cpu0;
            server.shutdown().await.unwrap();
            cpu
        })
    });
    let addr = addr_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (n, secs, bytes) = rt.block_on(async move {
        let client = reqwest::Client::builder()
            .no_proxy()
            .resolve("synth.test", addr)
            .build()
            .unwrap();
        let base = format!("http://synth.test:{}", addr.port());
        let t = std::time::Instant::now();
        let mut bytes = 0usize;
        let mut tasks = tokio::task::JoinSet::new();
        for chunk in paths.chunks(paths.len() / 8) {
            let client = client.clone();
            let urls: Vec<String> = chunk.iter().map(|p| format!("{base}{p}")).collect();
            tasks.spawn(async move {
                let mut b = 0usize;
                for u in urls {
                    b += client
                        .get(u)
                        .send()
                        .await
                        .unwrap()
                        .bytes()
                        .await
                        .unwrap()
                        .len();
                }
                b
            });
        }
        while let Some(b) = tasks.join_next().await {
            bytes += b.unwrap();
        }
        (paths.len(), t.elapsed().as_secs_f64(), bytes)
    });
    let _ = stop_tx.send(());
    let server_cpu = server_thread.join().unwrap();
    println!(
        "served {n} pages in {secs:.2} s: {:.0} pages/s, {:.1} MiB/s; server thread CPU {server_cpu:.2} s = {:.0} pages per CPU-second",
        n as f64 / secs,
        bytes as f64 / secs / 1048576.0,
        n as f64 / server_cpu
    );
}

/// CPU time (user + system) of the calling thread, from /proc (Linux).
fn thread_cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

#[test]
fn rare_presets_hide_a_few_pages_with_targets_in_one_large_reference_section() {
    for preset in [Preset::Rare, Preset::RareBlind] {
        let site = SyntheticSite::preset(preset, 3).unwrap();
        let gt = ground_truth(&site);
        check_against_plan(&site, &gt);
        let sec = site.sections.iter().position(|s| s.data).unwrap();
        let s = &site.sections[sec];
        assert_eq!(s.stride, 50);
        assert_eq!(s.items, 50 * s.holders, "{preset:?}");
        assert!(s.items >= 1_500, "a large reference section: {}", s.items);
        // One holder per block of 50; every holder links its files.
        let holders: Vec<u64> = (0..s.items)
            .filter(|&i| site.holder_index(sec, i).is_some())
            .collect();
        assert_eq!(holders.len() as u64, s.holders);
        assert!(
            (gt.holder_share() - 0.005).abs() < 0.002,
            "{}",
            gt.holder_share()
        );
        // The package in the URL tells holders only in `rare`.
        let plotting = |i: u64| site.item_path(sec, i).contains("/plotting-");
        let told = holders.iter().filter(|&&i| plotting(i)).count();
        let others = (0..s.items)
            .filter(|&i| site.holder_index(sec, i).is_none() && plotting(i))
            .count();
        match preset {
            Preset::Rare => assert_eq!((told, others), (holders.len(), 0)),
            _ => {
                assert!(told < holders.len() / 2, "{told}");
                assert!(others > 100, "{others}");
            }
        }
        // Every item of the section is listed under one markup.
        let listing = body_text(get(&site, &site.listing_path(sec, 0)));
        // (Sphinx-like: the listing links its items by relative URLs.)
        let first = site.item_path(sec, 0);
        let file = first.rsplit('/').next().unwrap();
        assert!(listing.contains(&format!("href=\"{file}\"")), "{first}");
        // The floor needs about the holders, their listings and the targets.
        let floor = gt.floor90.unwrap();
        assert!(
            floor.pages >= s.holders * 9 / 10 && floor.pages < 400,
            "{floor:?}"
        );
    }
}

#[test]
fn a_stride_of_one_leaves_every_data_item_a_holder() {
    let site = SyntheticSite::preset(Preset::Small, 7).unwrap();
    for (sec, s) in site.sections.iter().enumerate().filter(|(_, s)| s.data) {
        assert_eq!(s.items, s.holders);
        assert!((0..s.items).all(|i| site.holder_index(sec, i) == Some(i)));
    }
}
