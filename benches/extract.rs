//! CPU cost of link extraction, with and without structured data (ARCHITECTURE.md § Measuring: the whole pipeline's budget is
//! 20 ms of CPU per MiB of HTML; extraction is its largest part).
//!
//! Pages are the synthetic `medium` site's, walked breadth-first in memory
//! from its home page (no sockets), so the input is what `bench --cpu` feeds
//! the extractor. `FORAGER_EXTRACT_FINGERPRINT=1` prints a digest of every
//! link, tag path and anchor instead of timing: equal digests before and after
//! a change to the extractor mean it found exactly the same things.
//! `FORAGER_EXTRACT_DIR=/path/to/html` adds the `.html` files under that
//! folder (a documentation tree such as sklearn's) as a third group, and to
//! the fingerprint; with `FORAGER_EXTRACT_STRUCTURED=1` as well, a second
//! digest covers that folder's structured data (every syntax, blank nodes
//! numbered per page). `FORAGER_EXTRACT_CPU=N` times N passes over each group
//! in this thread's CPU time instead of criterion's wall time (on a shared
//! machine, wall time measures the neighbours) and prints the median pass.

mod common;

use common::thread_cpu;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use forager_bench::sites::server::{Site, SiteRequest};
use forager_bench::sites::synthetic::{Preset, SyntheticSite};
use forager_core::extract::structured::StructuredOptions;
use forager_core::extract::{extract_links, ExtractLimits};
use sha2::{Digest, Sha256};
use std::collections::{HashSet, VecDeque};
use std::hint::black_box;
use url::Url;

const HOST: &str = "site.test";
const PAGES: usize = 2000;

struct Page {
    url: Url,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// The first `PAGES` HTML pages of the medium site, breadth-first.
fn pages() -> Vec<Page> {
    let site = SyntheticSite::preset(Preset::Medium, 1).expect("the medium preset builds");
    let limits = ExtractLimits::default();
    let start = Url::parse(&format!("http://{HOST}/")).expect("a valid start URL");
    let mut queue = VecDeque::from([start.clone()]);
    let mut seen = HashSet::from([start.to_string()]);
    let mut out = Vec::new();
    while let Some(url) = queue.pop_front() {
        if out.len() >= PAGES {
            break;
        }
        let pq = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let resp = site.respond(&SiteRequest::get(HOST, &pq));
        let content_type = resp.content_type().map(str::to_string);
        if !resp.status.is_success()
            || !content_type
                .as_deref()
                .is_some_and(|t| t.starts_with("text/html"))
        {
            continue;
        }
        let body = resp.body.read_capped(8 << 20).bytes;
        for link in extract_links(&body, &url, content_type.as_deref(), &limits).links {
            if link.url.host_str() == Some(HOST) && seen.insert(link.url.to_string()) {
                queue.push_back(link.url);
            }
        }
        out.push(Page {
            url,
            content_type,
            body,
        });
    }
    out
}

/// The `.html` files under `FORAGER_EXTRACT_DIR`, in path order, each at
/// `http://docs.test/<its path under the folder>`.
fn dir_pages() -> Vec<Page> {
    let Some(root) = std::env::var_os("FORAGER_EXTRACT_DIR") else {
        return Vec::new();
    };
    let root = std::path::PathBuf::from(root);
    let mut files = Vec::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(&root).ok()?.to_str()?.to_string();
            Some(Page {
                url: Url::parse(&format!("http://docs.test/{rel}")).ok()?,
                content_type: Some("text/html".to_string()),
                body: std::fs::read(&path).ok()?,
            })
        })
        .collect()
}

fn fingerprint(pages: &[Page]) -> String {
    let limits = ExtractLimits::default();
    let mut h = Sha256::new();
    let mut links = 0usize;
    for p in pages {
        let found = extract_links(&p.body, &p.url, p.content_type.as_deref(), &limits);
        h.update(format!(
            "{}|{}|{}|{:?}\n",
            found.base,
            found.structured_data,
            found.cut.is_some(),
            found.rejected
        ));
        for l in &found.links {
            links += 1;
            h.update(format!("{}\t{}\t{}\n", l.url, l.tag_path, l.anchor));
        }
    }
    format!("{} links, sha256 {}", links, hex::encode(h.finalize()))
}

/// Like [`fingerprint`] with structured data read (every syntax): each
/// page's statements, blank nodes numbered by first appearance on the page
/// (their labels are random), counts, JSON-LD errors and cut flag.
fn structured_fingerprint(pages: &[Page]) -> String {
    let limits = ExtractLimits {
        structured: Some(StructuredOptions::all()),
        ..ExtractLimits::default()
    };
    let mut h = Sha256::new();
    let mut statements = 0usize;
    for p in pages {
        let found = extract_links(&p.body, &p.url, p.content_type.as_deref(), &limits);
        for l in &found.links {
            h.update(format!("{}\t{}\t{}\n", l.url, l.tag_path, l.anchor));
        }
        let Some(data) = found.structured else {
            h.update("none\n");
            continue;
        };
        let mut blanks: Vec<String> = Vec::new();
        let mut name = |term: String| -> String {
            if !term.starts_with("_:") {
                return term;
            }
            let i = match blanks.iter().position(|b| *b == term) {
                Some(i) => i,
                None => {
                    blanks.push(term);
                    blanks.len() - 1
                }
            };
            format!("_:b{i}")
        };
        for t in &data.triples {
            statements += 1;
            let s = name(t.subject.to_string());
            let o = name(t.object.to_string());
            h.update(format!("{s} {} {o}\n", t.predicate));
        }
        h.update(format!(
            "{:?}|{}|{:?}|{}\n",
            data.counts, data.json_ld_invalid, data.first_error, data.cut
        ));
    }
    format!(
        "{} statements, sha256 {}",
        statements,
        hex::encode(h.finalize())
    )
}

fn bench_extract(c: &mut Criterion) {
    let pages = pages();
    if std::env::var_os("FORAGER_EXTRACT_FINGERPRINT").is_some() {
        println!("{} pages: {}", pages.len(), fingerprint(&pages));
        let dir = dir_pages();
        if !dir.is_empty() {
            println!(
                "{} pages from FORAGER_EXTRACT_DIR: {}",
                dir.len(),
                fingerprint(&dir)
            );
            if std::env::var_os("FORAGER_EXTRACT_STRUCTURED").is_some() {
                println!("structured: {}", structured_fingerprint(&dir));
            }
        }
        return;
    }
    if let Some(passes) = std::env::var("FORAGER_EXTRACT_CPU")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        cpu_passes("medium", &pages, passes);
        cpu_passes("dir", &dir_pages(), passes);
        return;
    }
    let bytes: usize = pages.iter().map(|p| p.body.len()).sum();
    let off = ExtractLimits::default();
    // Structured data read in the same pass (a `structured` job): the
    // difference between the two is what it costs per MiB of HTML.
    let on = ExtractLimits {
        structured: Some(StructuredOptions::all()),
        ..ExtractLimits::default()
    };
    let mut group = c.benchmark_group("extract");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(20);
    for (name, limits) in [("structured_off", &off), ("structured_on", &on)] {
        group.bench_function(format!("medium_{}_pages_{name}", pages.len()), |b| {
            b.iter(|| {
                for p in &pages {
                    black_box(extract_links(
                        black_box(&p.body),
                        &p.url,
                        p.content_type.as_deref(),
                        limits,
                    ));
                }
            })
        });
    }
    group.finish();

    let dir = dir_pages();
    if !dir.is_empty() {
        let bytes: usize = dir.iter().map(|p| p.body.len()).sum();
        let mut group = c.benchmark_group("extract_dir");
        group.throughput(Throughput::Bytes(bytes as u64));
        group.sample_size(10);
        group.bench_function(format!("{}_pages", dir.len()), |b| {
            b.iter(|| {
                for p in &dir {
                    black_box(extract_links(
                        black_box(&p.body),
                        &p.url,
                        p.content_type.as_deref(),
                        &off,
                    ));
                }
            })
        });
        group.finish();
    }

    // Pages full of JSON-LD, microdata and RDFa (the oracle corpus).
    let corpus = corpus_pages();
    let bytes: usize = corpus.iter().map(|p| p.body.len()).sum();
    let mut group = c.benchmark_group("extract_structured_corpus");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(20);
    for (name, limits) in [("structured_off", &off), ("structured_on", &on)] {
        group.bench_function(format!("{}_pages_{name}", corpus.len()), |b| {
            b.iter(|| {
                for p in &corpus {
                    black_box(extract_links(black_box(&p.body), &p.url, None, limits));
                }
            })
        });
    }
    group.finish();
}

/// Prints the median, lowest and highest CPU time of `passes` passes of
/// link extraction (structured data off) over `pages`.
fn cpu_passes(name: &str, pages: &[Page], passes: usize) {
    if pages.is_empty() || passes == 0 {
        return;
    }
    let limits = ExtractLimits::default();
    let mut times: Vec<f64> = (0..passes)
        .map(|_| {
            let start = thread_cpu();
            for p in pages {
                black_box(extract_links(
                    black_box(&p.body),
                    &p.url,
                    p.content_type.as_deref(),
                    &limits,
                ));
            }
            (thread_cpu() - start).as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let mib = pages.iter().map(|p| p.body.len()).sum::<usize>() as f64 / (1 << 20) as f64;
    let median = times[times.len() / 2];
    println!(
        "cpu {name}: {} pages, {mib:.1} MiB: median {median:.1} ms per pass ({:.1}–{:.1}), \
         {:.2} ms per MiB, {:.1} µs per page",
        pages.len(),
        times[0],
        times[times.len() - 1],
        median / mib,
        median * 1e3 / pages.len() as f64
    );
}

/// The pages of tests/data/structured.
fn corpus_pages() -> Vec<Page> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/structured");
    let mut out = Vec::new();
    for folder in ["own", "w3c-jsonld-html"] {
        let Ok(entries) = std::fs::read_dir(root.join(folder)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "html") {
                if let (Ok(body), Ok(url)) = (
                    std::fs::read(&path),
                    Url::parse(&format!(
                        "http://corpus.test/{}",
                        entry.file_name().to_string_lossy()
                    )),
                ) {
                    out.push(Page {
                        url,
                        content_type: None,
                        body,
                    });
                }
            }
        }
    }
    out
}

criterion_group!(benches, bench_extract);
criterion_main!(benches);
