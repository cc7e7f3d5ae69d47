//! Memory amplification in the RDF and structured-data paths (issue #36,
//! item 1): documents of a few hundred bytes to a megabyte that made the
//! parsers allocate gigabytes. Each must cost a crawl under
//! [`BOMB_RSS_LIMIT_KIB`], be cut or refused with a count and a log line,
//! and land on the job's poison list; a document that kills the process
//! while it is parsed must not kill it forever; a daemon serving them
//! beside healthy jobs stays up and finishes the healthy ones.

use super::harness::{
    crawl_cli, crawl_in_process_until, job_file, job_toml, quick_fetch, CliOptions,
};
use super::sites::HostileSite;
use super::{seed, serve, HOST};
use crate::harness::procfs::vm_hwm_kib;
use crate::harness::{Crawl, JobFile};
use axum::http::{header, HeaderValue};
use bytes::Bytes;
use forager::store::{PoisonReason, Store};
use forager_bench::sites::{Site, SiteResponse, SiteServer};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Peak RSS allowed to a crawl served one of the bombs (the issue's bar).
/// Measured: 60–140 MiB (a debug build); before the byte budgets, 1.2 GB to
/// an abort at 7.8 GB.
pub const BOMB_RSS_LIMIT_KIB: u64 = 300 * 1024;

/// The 879-byte RDF/XML "billion laughs" of the issue: ten entities of ten
/// references each, the last one 3 GB of "lol".
pub fn billion_laughs() -> String {
    let mut doc =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE rdf:RDF [\n<!ENTITY lol0 \"lol\">\n");
    for i in 1..10 {
        let refs: String = (0..10).map(|_| format!("&lol{};", i - 1)).collect();
        doc.push_str(&format!("<!ENTITY lol{i} \"{refs}\">\n"));
    }
    doc.push_str(
        "]>\n<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" \
         xmlns:ex=\"http://e.test/\">\n<rdf:Description rdf:about=\"http://a.test/s\">\
         <ex:p>&lol9;</ex:p></rdf:Description>\n</rdf:RDF>\n",
    );
    doc
}

/// A `@prefix` of a 64 KiB IRI and 20 000 short triples (523 KB): 3.9 GB of
/// N-Quads before.
pub fn turtle_prefix_bomb() -> String {
    let mut doc = format!("@prefix p: <http://bomb.test/{}> .\n", "a".repeat(64 << 10));
    for i in 0..20_000 {
        doc.push_str(&format!("p:s{i} p:p p:o{i} .\n"));
    }
    doc
}

/// A page whose JSON-LD maps a `@context` term to a 1 MB IRI and gives it
/// 10 000 values (1.09 MB): an abort at 7.8 GB before.
pub fn json_ld_context_bomb() -> String {
    let mut html = format!(
        "<!DOCTYPE html><html><head><script type=\"application/ld+json\">\
         {{\"@context\": {{\"t\": \"http://bomb.test/{}\"}}, \"@id\": \"http://bomb.test/s\", \"t\": [",
        "a".repeat(1 << 20)
    );
    for i in 0..10_000 {
        if i > 0 {
            html.push(',');
        }
        html.push_str(&format!("\"{i}\""));
    }
    html.push_str("]}</script></head><body><p>bomb</p></body></html>");
    html
}

/// RDFa `prefix` of a 100 KB IRI and 2 000 properties using it: 628 MB before.
pub fn rdfa_prefix_bomb() -> String {
    let mut html = format!(
        "<!DOCTYPE html><html><body><div prefix=\"p: http://bomb.test/{}\" about=\"/s\">",
        "a".repeat(100_000)
    );
    for i in 0..2_000 {
        html.push_str(&format!("<span property=\"p:x{i}\">v</span>"));
    }
    html.push_str("</div></body></html>");
    html
}

/// A small honest Turtle document with one link.
const HONEST_TURTLE: &str = "@prefix ex: <http://e.test/> .\n\
    <http://e.test/thing> ex:name \"thing\" ; ex:seeAlso <http://e.test/other> .\n";

/// A page with enough honest JSON-LD to be a structured-data target.
const HONEST_PAGE: &str = r#"<!DOCTYPE html><html><head><script type="application/ld+json">
{"@context": "https://schema.org", "@type": "Product", "name": "Kettle", "sku": "k-1",
 "description": "A kettle", "brand": "Acme",
 "offers": {"@type": "Offer", "price": "20", "priceCurrency": "EUR"}}
</script></head><body><p>honest</p></body></html>"#;

/// The hostile site: `/` links to `paths`, each answered from `docs`.
fn bomb_site(docs: Vec<(&'static str, &'static str, Bytes)>) -> HostileSite {
    let paths: Vec<&'static str> = docs.iter().map(|(p, _, _)| *p).collect();
    let docs = Arc::new(docs);
    HostileSite::new(&paths, move |req| {
        docs.iter()
            .find(|(p, _, _)| *p == req.path)
            .map(|(_, content_type, body)| SiteResponse::ok(content_type, body.clone()))
    })
}

fn linked_data_job(name: &str, port: u16) -> String {
    job_toml(
        name,
        &[seed(port)],
        "site",
        "[targets]\npreset = \"linked-data\"\n",
    )
}

fn row_of<'a>(
    rows: &'a [forager::store::ManifestRow],
    path: &str,
) -> Option<&'a forager::store::ManifestRow> {
    rows.iter().find(|r| r.final_url.ends_with(path))
}

fn poison_list(state: &Path, job: &str) -> Vec<forager::store::PoisonEntry> {
    let store = Store::open(state, 1 << 20).expect("open the crawler's store");
    store.poison_list(job).expect("read the poison list")
}

#[track_caller]
fn assert_bomb_rss(peak_kib: u64) {
    assert!(peak_kib > 0, "peak RSS was not measured");
    assert!(
        peak_kib < BOMB_RSS_LIMIT_KIB,
        "crawler peak RSS {} MiB is over {} MiB",
        peak_kib / 1024,
        BOMB_RSS_LIMIT_KIB / 1024
    );
}

/// The billion laughs is refused before the parser expands an entity; the
/// honest document beside it is harvested.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdf_xml_billion_laughs_is_refused() {
    let laughs = billion_laughs();
    assert!(laughs.len() < 1024, "{} bytes", laughs.len());
    let site = bomb_site(vec![
        ("/laughs.rdf", "application/rdf+xml", Bytes::from(laughs)),
        (
            "/ok.ttl",
            "text/turtle",
            Bytes::from_static(HONEST_TURTLE.as_bytes()),
        ),
    ]);
    let (server, resolve) = serve(site).await;
    let job = linked_data_job("laughs", server.port());
    let out = crawl_cli(
        "laughs",
        job,
        CliOptions {
            resolve: vec![resolve],
            ..CliOptions::default()
        },
    )
    .await;
    out.assert_completed();
    assert_bomb_rss(out.peak_rss_kib);
    assert!(
        row_of(&out.manifest, "/ok.ttl").is_some(),
        "{:?}",
        out.manifest
    );
    assert!(row_of(&out.manifest, "/laughs.rdf").is_none());
    assert!(out.counters.truncated >= 1, "{:?}", out.counters);
    out.assert_logged(&["laughs.rdf", "DTD entities"]);
    out.assert_logged(&["laughs.rdf", "poison list"]);
    let list = poison_list(&out.state.path().join("state"), "laughs");
    assert!(
        list.iter()
            .any(|e| e.url.ends_with("/laughs.rdf") && e.reason == PoisonReason::OverBudget),
        "{list:?}"
    );
    let _ = server.shutdown().await;
}

/// The Turtle prefix bomb is cut at the document's byte budget: a row
/// marked truncated, a few hundred statements, not 20 000.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turtle_prefix_bomb_is_cut_at_its_byte_budget() {
    let bomb = turtle_prefix_bomb();
    let site = bomb_site(vec![("/prefix.ttl", "text/turtle", Bytes::from(bomb))]);
    let (server, resolve) = serve(site).await;
    let job = linked_data_job("prefix", server.port());
    let out = crawl_cli(
        "prefix",
        job,
        CliOptions {
            resolve: vec![resolve],
            kill_after: Some(Duration::from_secs(120)),
            ..CliOptions::default()
        },
    )
    .await;
    out.assert_completed();
    assert_bomb_rss(out.peak_rss_kib);
    let row = row_of(&out.manifest, "/prefix.ttl").expect("the cut document is kept");
    assert!(row.truncated);
    let statements = row.rdf.as_ref().map_or(0, |r| r.statements);
    // 64 MiB of ~192 KiB statements.
    assert!((300..400).contains(&statements), "{statements}");
    assert!(out.counters.truncated >= 1, "{:?}", out.counters);
    out.assert_logged(&["prefix.ttl", "max_statement_bytes"]);
    out.assert_logged(&["prefix.ttl", "poison list"]);
    let _ = server.shutdown().await;
}

/// The JSON-LD context bomb and the RDFa prefix bomb, in a structured-data
/// job: refused (or ignored), the honest page still a target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_ld_and_rdfa_bombs_are_cut_in_a_structured_job() {
    let site = bomb_site(vec![
        (
            "/context.html",
            "text/html",
            Bytes::from(json_ld_context_bomb()),
        ),
        ("/prefix.html", "text/html", Bytes::from(rdfa_prefix_bomb())),
        (
            "/honest.html",
            "text/html",
            Bytes::from_static(HONEST_PAGE.as_bytes()),
        ),
    ]);
    let (server, resolve) = serve(site).await;
    let job = job_toml(
        "context",
        &[seed(server.port())],
        "site",
        "[targets]\npreset = \"structured\"\n",
    );
    let out = crawl_cli(
        "context",
        job,
        CliOptions {
            resolve: vec![resolve],
            kill_after: Some(Duration::from_secs(120)),
            ..CliOptions::default()
        },
    )
    .await;
    out.assert_completed();
    assert_bomb_rss(out.peak_rss_kib);
    assert!(
        row_of(&out.manifest, "/honest.html").is_some(),
        "{:?}",
        out.manifest
    );
    // The context bomb is refused from its measure (no statement of it is
    // kept, so the page is no target); the RDFa page's 100 KB prefix is
    // ignored, its 2 000 short statements kept.
    assert!(
        row_of(&out.manifest, "/context.html").is_none(),
        "{:?}",
        out.manifest
    );
    assert!(out.counters.truncated >= 1, "{:?}", out.counters);
    out.assert_logged(&["context.html", "refused"]);
    out.assert_logged(&["context.html", "poison list"]);
    // The data file holds what was kept, not gigabytes.
    let data = out.state.path().join("state/targets/context/data.nq.gz");
    let len = std::fs::metadata(&data).map_or(0, |m| m.len());
    assert!(len > 0 && len < 8 << 20, "{len} bytes");
    let _ = server.shutdown().await;
}

/// A page put on the poison list is not parsed again when a continuous job
/// revisits it: the revisit fetches it (a page is revisited whatever it
/// held) but counts it `blocked` instead of reading its body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_page_is_not_parsed_again_on_a_revisit() {
    // The bomb comes with a new ETag at every answer (a server that cannot
    // tell), so its revisits are answered in full, not 304.
    let answers = AtomicUsize::new(0);
    let bomb = Bytes::from(json_ld_context_bomb());
    let site = HostileSite::new(&["/context.html", "/honest.html"], move |req| {
        match req.path.as_str() {
            "/context.html" => {
                let n = answers.fetch_add(1, Ordering::Relaxed);
                Some(SiteResponse::ok("text/html", bomb.clone()).with_header(
                    header::ETAG,
                    HeaderValue::from_str(&format!("\"v{n}\"")).expect("an ETag"),
                ))
            }
            "/honest.html" => Some(SiteResponse::ok("text/html", HONEST_PAGE)),
            _ => None,
        }
    });
    let (server, resolve) = serve(site).await;
    let job = job_file(
        "revisited",
        &[seed(server.port())],
        "site",
        "[targets]\npreset = \"structured\"\n[revisit]\nmin = \"1s\"\nmax = \"2s\"\n",
    )
    .top("mode", "\"continuous\"")
    .toml();
    let bomb_fetches = || {
        server
            .log()
            .iter()
            .filter(|r| r.path_and_query == "/context.html")
            .count()
    };
    // A third fetch is only scheduled once the second (the first revisit)
    // was wholly dealt with: stopping at the second could cut it short.
    let out =
        crawl_in_process_until(&job, quick_fetch(vec![resolve]), || bomb_fetches() >= 3).await;
    assert!(bomb_fetches() >= 3, "the bomb page was not revisited");
    let list = poison_list(&out.state.path().join("state"), "revisited");
    assert!(
        list.iter()
            .any(|e| e.url.ends_with("/context.html") && e.reason == PoisonReason::OverBudget),
        "{list:?}"
    );
    // Its first fetch put it on the list; every later one was skipped, its
    // body never read again (one bomb's worth of bytes in all).
    let log: Vec<String> = server
        .log()
        .iter()
        .map(|r| r.path_and_query.clone())
        .collect();
    assert!(out.counters.blocked >= 1, "{:?}\n{log:?}", out.counters);
    let bomb = json_ld_context_bomb().len() as u64;
    assert!(out.counters.bytes < 2 * bomb, "{:?}", out.counters);
    assert!(
        row_of(&out.manifest, "/honest.html").is_some(),
        "{:?}",
        out.manifest
    );
    assert!(
        row_of(&out.manifest, "/context.html").is_none(),
        "{:?}",
        out.manifest
    );
    let _ = server.shutdown().await;
}

/// A document the process dies parsing (the `parse` crash point kills it
/// there) is parsed again once, then skipped: no crash loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_that_kills_the_process_twice_is_poisoned() {
    let site = bomb_site(vec![(
        "/deadly.ttl",
        "text/turtle",
        Bytes::from_static(HONEST_TURTLE.as_bytes()),
    )]);
    let (server, (host, addr)) = serve(site).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let job_path = dir.path().join("deadly.toml");
    // Seeded at the document itself: in a linked-data job HTML pages are
    // parsed (for RDFa) under the same guard, and would meet the crash point first.
    let job = job_toml(
        "deadly",
        &[format!("http://{HOST}:{}/deadly.ttl", server.port())],
        "site",
        "[targets]\npreset = \"linked-data\"\n",
    );
    std::fs::write(&job_path, job).expect("job file");
    let state = dir.path().join("state");
    let run = Crawl::new(&job_path, &state)
        .checkpoint_interval("100ms")
        .allow_private()
        .resolve_to(&host, addr);
    for round in 1..=2 {
        let out = crate::harness::bin::output(
            run.command()
                .env("FORAGER_CRASH_AT", "parse:1")
                .env("RUST_LOG", "warn"),
        )
        .await;
        assert!(
            !out.status.success(),
            "round {round}: the crash point did not kill the process\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = crate::harness::bin::output(run.command().env("RUST_LOG", "warn")).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // It finishes, but its one document is skipped: nothing harvested, which
    // `forager crawl` reports with exit code 3 (issue 39), not a crash.
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("job finished with no target saved"),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("deadly.ttl") && l.contains("poison list")),
        "{stderr}"
    );
    let list = poison_list(&state, "deadly");
    assert!(
        list.iter().any(|e| e.url.ends_with("/deadly.ttl")
            && e.reason == PoisonReason::Crashed
            && e.strikes == 2),
        "{list:?}"
    );
    let store = Store::open(&state, 1 << 20).expect("open store");
    let rows = store.manifest_rows("deadly").expect("manifest");
    assert!(row_of(&rows, "/deadly.ttl").is_none(), "{rows:?}");
    let record = store
        .job_record("deadly")
        .expect("record")
        .expect("a record");
    assert!(record.counters.blocked >= 1, "{:?}", record.counters);
    drop(store);
    let _ = server.shutdown().await;
}

// ------------------------------------------------------------------ daemon

use crate::harness::daemon::DaemonProcess as Daemon;

/// Starts a daemon over `jobs` (name → job file text), `hosts` resolved to
/// `addr`; `extra`: more top-level config keys.
fn start_daemon(
    dir: &Path,
    addr: SocketAddr,
    hosts: &[String],
    jobs: &[(String, String)],
    extra: &str,
) -> (Daemon, SocketAddr) {
    let jobs_dir = dir.join("jobs.d");
    std::fs::create_dir_all(&jobs_dir).expect("jobs dir");
    for (name, text) in jobs {
        std::fs::write(jobs_dir.join(format!("{name}.toml")), text).expect("job file");
    }
    let admin: SocketAddr = crate::harness::sites::admin_addr();
    let config = format!(
        "jobs_dir = \"jobs.d\"\nstate_dir = \"state\"\nadmin_listen = \"{admin}\"\n\
         max_jobs = 64\ncheckpoint_interval = \"200ms\"\nallow_private = true\n{extra}\n\
         [resolve]\n"
    );
    let config: String = hosts
        .iter()
        .fold(config, |c, h| c + &format!("\"{h}\" = \"{addr}\"\n"));
    let config_path = dir.join("forager.toml");
    std::fs::write(&config_path, config).expect("config");
    let daemon = Daemon::start(
        crate::harness::bin::std_command()
            .arg("daemon")
            .arg("--config")
            .arg(&config_path)
            .env("RUST_LOG", "warn"),
        dir.join("daemon.log"),
    );
    (daemon, admin)
}

/// Polls the daemon until every job in `names` finished; fails if the
/// daemon exits or `within` passes. Returns the peak RSS seen, KiB.
async fn wait_for_jobs(
    daemon: &mut Daemon,
    admin: SocketAddr,
    names: &[String],
    within: Duration,
) -> u64 {
    let deadline = Instant::now() + within;
    let mut peak = 0;
    loop {
        if let Some(hwm) = vm_hwm_kib(daemon.child.id()) {
            peak = peak.max(hwm);
        }
        if let Ok(Some(status)) = daemon.child.try_wait() {
            panic!("the daemon exited ({status})\n{}", daemon.log());
        }
        if let Ok(report) = forager::daemon::status(admin).await {
            let done = names.iter().all(|n| {
                report
                    .jobs
                    .iter()
                    .any(|j| &j.name == n && j.stop_reason.is_some())
            });
            if done {
                return peak;
            }
        }
        assert!(
            Instant::now() < deadline,
            "jobs {names:?} did not finish within {within:?}\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every bomb of the issue in one hostile job, beside two healthy jobs:
/// the daemon stays up, every job finishes, the healthy ones harvest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_serving_the_bombs_stays_up_and_finishes_its_healthy_jobs() {
    let site = bomb_site(vec![
        (
            "/laughs.rdf",
            "application/rdf+xml",
            Bytes::from(billion_laughs()),
        ),
        (
            "/prefix.ttl",
            "text/turtle",
            Bytes::from(turtle_prefix_bomb()),
        ),
        (
            "/context.html",
            "text/html",
            Bytes::from(json_ld_context_bomb()),
        ),
        (
            "/ok.ttl",
            "text/turtle",
            Bytes::from_static(HONEST_TURTLE.as_bytes()),
        ),
    ]);
    let server = SiteServer::start(vec![(HOST.to_string(), Arc::new(site) as Arc<dyn Site>)])
        .await
        .expect("start site server");
    let dir = tempfile::tempdir().expect("temp dir");
    let seed = seed(server.port());
    let jobs = vec![
        (
            "hostile-ld".to_string(),
            job_toml(
                "hostile-ld",
                std::slice::from_ref(&seed),
                "site",
                "[targets]\npreset = \"linked-data\"\n",
            ),
        ),
        (
            "hostile-sd".to_string(),
            job_toml(
                "hostile-sd",
                std::slice::from_ref(&seed),
                "site",
                "[targets]\npreset = \"structured\"\n",
            ),
        ),
        (
            "healthy-a".to_string(),
            job_toml("healthy-a", std::slice::from_ref(&seed), "site", ""),
        ),
        (
            "healthy-b".to_string(),
            job_toml("healthy-b", &[seed], "site", ""),
        ),
    ];
    let (mut daemon, admin) =
        start_daemon(dir.path(), server.addr(), &[HOST.to_string()], &jobs, "");
    let names: Vec<String> = jobs.iter().map(|(n, _)| n.clone()).collect();
    let peak = wait_for_jobs(&mut daemon, admin, &names, Duration::from_secs(180)).await;
    eprintln!("daemon with the bombs: peak RSS {peak} KiB");
    let report = forager::daemon::status(admin).await.expect("status");
    for healthy in ["healthy-a", "healthy-b"] {
        let job = report
            .jobs
            .iter()
            .find(|j| j.name == healthy)
            .expect("listed");
        assert!(job.counters.targets >= 2, "{healthy}: {:?}", job.counters);
    }
    let ld = report
        .jobs
        .iter()
        .find(|j| j.name == "hostile-ld")
        .expect("listed");
    assert!(ld.counters.truncated >= 2, "{:?}", ld.counters);
    // The documents that blew their budget are on the poison list, and
    // status and /metrics say how many (checked against the store once the
    // daemon has let go of it); the healthy jobs' lists are empty.
    let listed = ld.poisoned.unwrap_or(0);
    assert!(listed >= 1, "nothing on hostile-ld's poison list: {ld:?}");
    let healthy = report
        .jobs
        .iter()
        .find(|j| j.name == "healthy-a")
        .expect("listed");
    assert_eq!(healthy.poisoned, Some(0));
    assert!(
        forager::daemon::format_status(&report).contains(&format!("  hostile-ld: {listed}\n")),
        "{}",
        forager::daemon::format_status(&report)
    );
    let metrics = reqwest::get(format!("http://{admin}/metrics"))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics body");
    let gauge = metrics
        .lines()
        .find_map(|l| l.strip_prefix("forager_job_poison_list{job=\"hostile-ld\"} "))
        .unwrap_or_else(|| panic!("no poison list gauge for hostile-ld in\n{metrics}"));
    assert_eq!(gauge.parse::<f64>().ok(), Some(listed as f64), "{gauge}");
    assert!(
        daemon.child.try_wait().ok().flatten().is_none(),
        "{}",
        daemon.log()
    );
    assert!(
        peak < 2 * BOMB_RSS_LIMIT_KIB,
        "daemon peak RSS {} MiB",
        peak / 1024
    );
    daemon.signal("TERM");
    assert!(
        daemon.wait(Duration::from_secs(30)).is_some(),
        "the daemon did not stop on SIGTERM\n{}",
        daemon.log()
    );
    let stored = poison_list(&dir.path().join("state"), "hostile-ld");
    assert_eq!(stored.len() as u64, listed, "{stored:?}");
    let _ = server.shutdown().await;
}

/// An N-Triples statement whose literal is `mib` MiB of `x`, sent a MiB
/// every `pause` (with its length announced): bodies of jobs crawling at
/// once overlap, as on a real network.
struct SlowLiteral {
    mib: usize,
    step: usize,
    pause: Duration,
}

/// Bodies past their first 8 MiB at once (the server only produces what
/// the client reads, a socket buffer ahead), and the most seen.
static SENDING: AtomicUsize = AtomicUsize::new(0);
static MOST_SENDING: AtomicUsize = AtomicUsize::new(0);

const SLOW_HEAD: &[u8] = b"<http://e.test/s> <http://e.test/p> \"";
const SLOW_TAIL: &[u8] = b"\" .\n";

impl forager_bench::sites::ChunkSource for SlowLiteral {
    fn next_chunk(&mut self) -> Option<forager_bench::sites::Chunk> {
        use forager_bench::sites::Chunk;
        let step = self.step;
        self.step += 1;
        if step == 16 {
            let now = SENDING.fetch_add(1, Ordering::SeqCst) + 1;
            MOST_SENDING.fetch_max(now, Ordering::SeqCst);
        }
        if step == 2 * self.mib + 1 {
            SENDING.fetch_sub(1, Ordering::SeqCst);
        }
        match step {
            0 => Some(Chunk::Data(Bytes::from_static(SLOW_HEAD))),
            n if n <= 2 * self.mib && n % 2 == 1 => {
                Some(Chunk::Data(Bytes::from(vec![b'x'; 1 << 20])))
            }
            n if n <= 2 * self.mib => match self.pause.is_zero() {
                true => self.next_chunk(),
                false => Some(Chunk::Pause(self.pause)),
            },
            n if n == 2 * self.mib + 1 => Some(Chunk::Data(Bytes::from_static(SLOW_TAIL))),
            _ => None,
        }
    }
}

/// What [`parse_budget_run`] saw.
struct BudgetRun {
    peak_rss_kib: u64,
    /// Jobs that harvested their document.
    harvested: usize,
}

/// `jobs` daemon jobs, each on its own host (jobs on one host take turns
/// anyway: politeness), each served an N-Triples literal of `mib` MiB a MiB
/// every `pause`, under `parse_memory`.
async fn parse_budget_run(
    jobs: usize,
    mib: usize,
    pause: Duration,
    parse_memory: &str,
) -> BudgetRun {
    let len = (SLOW_HEAD.len() + (mib << 20) + SLOW_TAIL.len()) as u64;
    let site = HostileSite::new(&["/big.nt"], move |req| {
        (req.path == "/big.nt").then(|| {
            SiteResponse::new(axum::http::StatusCode::OK)
                .with_header(
                    axum::http::header::CONTENT_TYPE,
                    axum::http::HeaderValue::from_static("application/n-triples"),
                )
                .with_body(forager_bench::sites::Body::stream(
                    Some(len),
                    SlowLiteral {
                        mib,
                        step: 0,
                        pause,
                    },
                ))
        })
    });
    let hosts: Vec<String> = (0..jobs).map(|i| format!("big{i}.test")).collect();
    let site: Arc<dyn Site> = Arc::new(site);
    let server = SiteServer::start(hosts.iter().map(|h| (h.clone(), site.clone())).collect())
        .await
        .expect("start site server");
    let dir = tempfile::tempdir().expect("temp dir");
    let max_body = ((mib as u64) << 20) + (1 << 20);
    let job_files: Vec<(String, String)> = hosts
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = format!("big-{i}");
            let text = JobFile::new(&name)
                .seed(format!("http://{host}:{}/big.nt", server.port()))
                .scope("site")
                .strategy("bfs")
                .no_early_stop()
                .delay("0s")
                .set("limits", "max_body", max_body)
                .extra("[targets]\npreset = \"linked-data\"\nmax_statement_bytes = \"1 GiB\"\n")
                .toml();
            (name, text)
        })
        .collect();
    let (mut daemon, admin) = start_daemon(
        dir.path(),
        server.addr(),
        &hosts,
        &job_files,
        &format!("parse_memory = \"{parse_memory}\""),
    );
    let names: Vec<String> = job_files.iter().map(|(n, _)| n.clone()).collect();
    let peak_rss_kib = wait_for_jobs(&mut daemon, admin, &names, Duration::from_secs(3600)).await;
    let report = forager::daemon::status(admin).await.expect("status");
    let harvested = report
        .jobs
        .iter()
        .filter(|j| names.contains(&j.name) && j.counters.targets == 1)
        .count();
    eprintln!(
        "{jobs} jobs × {mib} MiB literal, parse_memory {parse_memory}: peak RSS {peak_rss_kib} KiB, \
         {harvested} harvested, at most {} bodies read at once",
        MOST_SENDING.load(Ordering::SeqCst)
    );
    let _ = server.shutdown().await;
    BudgetRun {
        peak_rss_kib,
        harvested,
    }
}

/// The process-wide parse budget, scaled down (the issue's bar, 64 jobs
/// each served a 250 MB literal under 2 GB, is
/// [`measure_the_parse_budget_at_the_issue_scale`]): four jobs each served
/// a 48 MiB literal over five seconds, under a `parse_memory` of 160 MiB,
/// read and parse one after another (each takes three times its size of
/// the budget before a byte is read: its body, the parser's copy, room for
/// the statement it writes out).
/// Without the budget the four bodies arrive and are parsed together:
/// 596 MiB here, and 2.89 GB for four of 250 MB in the issue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parse_budget_bounds_documents_parsed_at_once() {
    let run = parse_budget_run(4, 48, Duration::from_millis(100), "160 MiB").await;
    assert_eq!(run.harvested, 4, "every document parsed in its turn");
    assert_eq!(
        MOST_SENDING.load(Ordering::SeqCst),
        1,
        "one body read at a time"
    );
    assert!(
        run.peak_rss_kib < 400 * 1024,
        "daemon peak RSS {} MiB",
        run.peak_rss_kib / 1024
    );
}

/// The issue's bar: 64 daemon jobs each served a 250 MB literal, peak RSS
/// under 2 GB with the default `parse_memory` (1 GiB). Minutes and 16 GB of
/// loopback traffic: run by hand (docs/robustness.md),
/// `cargo test --release --test it measure_the_parse_budget -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes of work; run by hand"]
async fn measure_the_parse_budget_at_the_issue_scale() {
    let run = parse_budget_run(64, 250, Duration::ZERO, "1 GiB").await;
    assert_eq!(run.harvested, 64);
    assert!(
        run.peak_rss_kib < 2 << 20,
        "daemon peak RSS {} MiB",
        run.peak_rss_kib / 1024
    );
}
