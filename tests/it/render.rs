//! Pages built by scripts, through the real binary and a real headless
//! Chromium (`render`, docs/jobs.md): on a loopback portal whose dataset
//! list a script draws from a JSON API (`forager_bench::sites::portal::
//! ScriptPortal`), `render = "never"` misses the files only the script
//! links and `"always"`/`"auto"` harvest them all, marked `found_by =
//! "rendered"`; every request of the browser reaches the server through
//! forager (the server sees the script and the API asked once a render);
//! hostile scripts (a loop, a private address, a network that never idles,
//! a burst of requests) cost bounded time and requests and the job goes on;
//! `check` refuses a render job without a browser; `auto` renders no page of
//! a plain HTML site. Every test leaves no browser process behind.

use crate::harness::sites::serve_host;
use crate::harness::{Crawl, JobFile};
use forager_bench::sites::portal::{HostileScripts, ScriptPortal};
use forager_bench::sites::server::{Site, SiteRequest, SiteResponse};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The rows of a job's manifest by final URL.
fn manifest(state: &Path, job: &str) -> BTreeMap<String, serde_json::Value> {
    let text = std::fs::read_to_string(state.join("targets").join(job).join("manifest.jsonl"))
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| (v["final_url"].as_str().unwrap_or_default().to_string(), v))
        .collect()
}

/// Processes of browsers started by the forager runs whose temporary folder
/// is `tmp` (each test gives its runs its own, so tests running side by side
/// do not see each other's browsers), still alive after a grace of up to 5 s
/// (a process sent SIGKILL stays listed a moment).
fn browsers_left(tmp: &Path) -> Vec<String> {
    let needle = format!(
        "--user-data-dir={}",
        tmp.join("forager-chromium-").display()
    );
    let scan = || -> Vec<String> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| {
                let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                cmd.contains(&needle).then_some(cmd)
            })
            .collect()
    };
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = scan();
        if left.is_empty() || Instant::now() >= until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct Run {
    stdout: String,
    stderr: String,
    rows: BTreeMap<String, serde_json::Value>,
    took: Duration,
}

async fn crawl(dir: &Path, job: JobFile, host: &str, port: u16, allow_private: bool) -> Run {
    let name = job.name().to_string();
    let file = job.write(dir);
    let state = dir.join(format!("state-{name}"));
    // `forager crawl` logs at warn unless told: the lines these tests read
    // (a page rendered, a request refused, the renderer's summary) are info.
    let mut c = Crawl::new(&file, &state)
        .resolve(host, port)
        .arg("--log")
        .arg("info");
    if allow_private {
        c = c.allow_private();
    }
    let started = Instant::now();
    // The browser's profile folder goes in this test's own folder.
    let out = crate::harness::bin::output(c.command().env("TMPDIR", dir)).await;
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    Run {
        stdout,
        stderr,
        rows: manifest(&state, &name),
        took,
    }
}

/// One line of figures for the dated note (run with `--nocapture`): files,
/// wall time, and the crawl's and renderer's own summary lines.
fn measure(name: &str, run: &Run) {
    let summary: Vec<&str> = run
        .stdout
        .lines()
        .chain(run.stderr.lines())
        .filter(|l| {
            l.contains("requests") && (l.contains("renders of this run") || !l.contains("render"))
                || l.contains("browser ended")
        })
        .collect();
    eprintln!(
        "MEASURE {name}: files={} took_ms={} | {}",
        run.rows.len(),
        run.took.as_millis(),
        summary.join(" | ")
    );
}

fn portal_job(name: &str, strategy: &str, render: &str) -> JobFile {
    JobFile::new(name)
        .seed("http://scripts.test/")
        .strategy(strategy)
        .delay("1ms")
        .no_early_stop()
        .top("render", format!("\"{render}\""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs a headless chromium on PATH (apt-get install chromium)"
)]
async fn a_script_built_portal_is_harvested_only_when_rendered() {
    let host = "scripts.test";
    let portal = ScriptPortal::default();
    let files = portal.files();
    let all: BTreeSet<String> = files
        .iter()
        .map(|(p, _)| format!("http://{host}{p}"))
        .collect();
    let plain: BTreeSet<String> = files
        .iter()
        .filter(|(_, only_rendered)| !only_rendered)
        .map(|(p, _)| format!("http://{host}{p}"))
        .collect();
    assert!(plain.len() < all.len());
    let server = serve_host(host, Arc::new(portal)).await;
    let dir = tempfile::tempdir().expect("tempdir");

    let never = crawl(
        dir.path(),
        portal_job("never", "sb", "never"),
        host,
        server.port(),
        true,
    )
    .await;
    assert_eq!(never.rows.keys().cloned().collect::<BTreeSet<_>>(), plain);
    let asked = |path: &str| {
        server
            .log()
            .iter()
            .filter(|r| r.path_and_query == path)
            .count()
    };
    assert_eq!(
        asked("/app.js"),
        0,
        "never renders: the script is not fetched"
    );
    assert_eq!(asked("/api/datasets.json"), 0);

    for (mode, strategy) in [("always", "sb"), ("auto", "sb"), ("always", "bfs")] {
        let before = (asked("/app.js"), asked("/api/datasets.json"));
        let name = format!("{mode}-{strategy}");
        let run = crawl(
            dir.path(),
            portal_job(&name, strategy, mode),
            host,
            server.port(),
            true,
        )
        .await;
        let got: BTreeSet<String> = run.rows.keys().cloned().collect();
        assert_eq!(got, all, "{name}: {}", run.stderr);
        for (url, row) in &run.rows {
            // A file linked both from /featured and by the script is found
            // by whichever link came first; the others only by the script.
            if plain.contains(url) {
                assert!(
                    row["found_by"] == "page link" || row["found_by"] == "rendered",
                    "{name}: {url}: {row}"
                );
            } else {
                assert_eq!(row["found_by"], "rendered", "{name}: {url}");
            }
        }
        // The browser's requests went through forager to the server: the
        // script and its API were asked (once: only the home page is a shell
        // with a script).
        assert_eq!(asked("/app.js"), before.0 + 1, "{name}");
        assert_eq!(asked("/api/datasets.json"), before.1 + 1, "{name}");
        // `always` renders both HTML pages (the shell and /featured);
        // `auto` only the shell: /featured has links and no script.
        let renders = run.stderr.matches("page rendered").count();
        let want = if mode == "auto" { 1 } else { 2 };
        assert_eq!(renders, want, "{name}: {}", run.stderr);
        measure(&name, &run);
    }
    measure("never-sb", &never);
    let left = browsers_left(dir.path());
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs a headless chromium on PATH (apt-get install chromium)"
)]
async fn hostile_scripts_cost_bounded_time_and_requests_and_the_job_goes_on() {
    let host = "hostile-scripts.test";
    // A loopback server of the test's own that the page's script asks for:
    // the SSRF guard must refuse it, so it must never see a request.
    let private = serve_host("private.test", Arc::new(ScriptPortal::default())).await;
    let private_url = format!("http://127.0.0.1:{}/secret.json", private.port());
    let site = HostileScripts {
        private_url: private_url.clone(),
    };
    let server = serve_host(host, Arc::new(site)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let max_requests = 10;
    let timeout_s = 3;
    // A loopback test site needs --allow-private, which also lets the SSRF
    // guard pass loopback: the private address is refused here by the
    // job's scope, checked before the fetcher (the guard's own refusal of
    // a render's request is the fetcher's, as for any request).
    let job = JobFile::new("hostile")
        .seed(format!("http://{host}/"))
        .delay("1ms")
        .no_early_stop()
        .set("politeness", "robots", false)
        .extra(&format!(
            "[render]\nmode = \"always\"\ntimeout = \"{timeout_s}s\"\nmax_requests = {max_requests}\npages = 1\n"
        ));
    let run = crawl(dir.path(), job, host, server.port(), true).await;

    // The job went on: the plain file and the link the looping page drew
    // before it spun are harvested.
    let got: BTreeSet<String> = run.rows.keys().cloned().collect();
    for want in ["/files/after.csv", "/files/loop.csv"] {
        assert!(
            got.contains(&format!("http://{host}{want}")),
            "{want} missing: {got:?}\n{}",
            run.stderr
        );
    }
    // The private address: the browser's request reached forager's
    // interception (Chromium did not drop it itself), was refused by the
    // job's scope, logged, and never reached the server.
    assert!(private.log().is_empty(), "{:?}", private.log());
    assert!(
        run.stderr.lines().any(
            |l| l.contains("render: request refused: out of the job's scope")
                && l.contains(&private_url)
        ),
        "{}",
        run.stderr
    );
    // Four hostile pages plus the home page, each at most its timeout
    // (and a few seconds to stop scripts, read and close).
    assert!(
        run.took < Duration::from_secs(5 * (timeout_s + 6) + 20),
        "took {:?}",
        run.took
    );
    assert!(
        run.stderr.contains("did not settle within render.timeout"),
        "{}",
        run.stderr
    );
    // The page whose network never idles and the burst: at most
    // max_requests of their own each.
    let log = server.log();
    let ticks = log
        .iter()
        .filter(|r| r.path_and_query.starts_with("/tick"))
        .count();
    assert!(ticks <= 2 * max_requests, "{ticks} ticks");
    assert!(ticks > 0, "the scripts' requests never reached the server");
    let left = browsers_left(dir.path());
    assert!(left.is_empty(), "{left:?}");
    let _ = run.stdout;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_refuses_a_render_job_without_a_browser() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("r.toml");
    std::fs::write(
        &job,
        "name = \"r\"\nseeds = [\"http://a.test/\"]\n\n[render]\nmode = \"auto\"\nchromium = \"/nonexistent/chromium\"\n",
    )
    .expect("write the job");
    let out =
        crate::harness::bin::output(crate::harness::bin::command().arg("check").arg(&job)).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("r.toml:4: render: render = \"auto\" needs headless Chromium")
            && stdout.contains("/nonexistent/chromium"),
        "{stdout}"
    );
    // Without a browser on PATH either: the default look-up says what it tried.
    let bare = dir.path().join("bare.toml");
    std::fs::write(
        &bare,
        "name = \"bare\"\nseeds = [\"http://a.test/\"]\nrender = \"always\"\n",
    )
    .expect("write the job");
    let out = crate::harness::bin::output(
        crate::harness::bin::command()
            .arg("check")
            .arg(&bare)
            .env("PATH", dir.path()),
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("bare.toml:3: render:")
            && stdout.contains("chromium, chromium-browser, google-chrome"),
        "{stdout}"
    );
    // render = "never" needs nothing.
    let never = dir.path().join("never.toml");
    std::fs::write(
        &never,
        "name = \"never\"\nseeds = [\"http://a.test/\"]\nrender = \"never\"\n",
    )
    .expect("write the job");
    let out = crate::harness::bin::output(
        crate::harness::bin::command()
            .arg("check")
            .arg(&never)
            .env("PATH", dir.path()),
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs a headless chromium on PATH (apt-get install chromium)"
)]
async fn auto_renders_no_page_of_a_plain_html_site() {
    let host = "plain.test".to_string();
    let (server, start) = crate::harness::sites::serve_small_site(&host, 7).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let job = JobFile::new("plain-auto")
        .seed(format!("http://{host}{start}"))
        .delay("1ms")
        .no_early_stop()
        .top("render", "\"auto\"");
    let run = crawl(dir.path(), job, &host, server.port(), true).await;
    assert!(!run.rows.is_empty(), "{}", run.stderr);
    // The renderer's summary is there (so the info lines below would be
    // too) and says nothing was rendered and no browser started.
    assert!(
        run.stderr.lines().any(|l| l.contains("renders of this run")
            && l.contains("rendered=0")
            && l.contains("browser_launches=0")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("page rendered"), "{}", run.stderr);
    assert!(!run.stderr.contains("browser started"), "{}", run.stderr);
}

/// `SHELLS` script shells linked from the home page, each drawing links to
/// two files of its own from a JSON answer: every render pays, and a
/// render that fails costs exactly its shell's two files.
struct Shells;

const SHELLS: usize = 16;

impl Site for Shells {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path.as_str();
        if path == "/" {
            let links: String = (0..SHELLS)
                .map(|i| format!("<a href=\"/p/{i}\">{i}</a> "))
                .collect();
            return SiteResponse::html(format!("<html><body>{links}</body></html>"));
        }
        if let Some(n) = path.strip_prefix("/p/") {
            return SiteResponse::html(format!(
                "<!doctype html><html><head><script>fetch('/data/{n}.json').then(function (r) \
                 {{ return r.json(); }}).then(function (l) {{ l.forEach(function (f) {{ \
                 var a = document.createElement('a'); a.href = f; \
                 document.getElementById('app').appendChild(a); }}); }});</script></head>\
                 <body><div id=\"app\"></div><noscript>Needs JavaScript.</noscript></body></html>"
            ));
        }
        if let Some(n) = path
            .strip_prefix("/data/")
            .and_then(|r| r.strip_suffix(".json"))
        {
            return SiteResponse::ok(
                "application/json",
                format!("[\"/files/{n}-a.csv\", \"/files/{n}-b.csv\"]"),
            );
        }
        if path.starts_with("/files/") {
            return SiteResponse::ok("text/csv", "a,b\n1,2\n");
        }
        SiteResponse::not_found()
    }
}

/// The main process (no `--type=`) of a browser `forager_pid` started.
fn browser_of(tmp: &Path, forager_pid: u32) -> Option<i32> {
    let needle = format!(
        "--user-data-dir={}",
        tmp.join(format!("forager-chromium-{forager_pid}-"))
            .display()
    );
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        (cmd.contains(&needle) && !cmd.contains("--type=")).then_some(pid)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs a headless chromium on PATH (apt-get install chromium)"
)]
async fn a_browser_killed_mid_crawl_costs_at_most_one_page() {
    let host = "shells.test";
    let server = serve_host(host, Arc::new(Shells)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let timeout_s = 10;
    let job = JobFile::new("killed")
        .seed(format!("http://{host}/"))
        .delay("1ms")
        .no_early_stop()
        .extra(&format!(
            "[render]\nmode = \"always\"\ntimeout = \"{timeout_s}s\"\n"
        ));
    let file = job.write(dir.path());
    let state = dir.path().join("state");
    let log = dir.path().join("stderr.log");
    let mut cmd = Crawl::new(&file, &state)
        .resolve(host, server.port())
        .allow_private()
        .arg("--log")
        .arg("info")
        .command();
    cmd.env("TMPDIR", dir.path())
        .stderr(std::process::Stdio::from(
            std::fs::File::create(&log).expect("stderr file"),
        ))
        .stdout(std::process::Stdio::null());
    let started = Instant::now();
    let mut child = crate::harness::bin::spawn(&mut cmd);
    let forager_pid = child.id().expect("a running forager");
    // Kill the browser once a few shells were rendered (their JSON asked).
    let rendered = || {
        server
            .log()
            .iter()
            .filter(|r| r.path_and_query.starts_with("/data/"))
            .count()
    };
    let mut killed = None;
    while started.elapsed() < Duration::from_secs(120) {
        if rendered() >= 3 {
            killed = browser_of(dir.path(), forager_pid);
            if let Some(pid) = killed {
                // SAFETY: kill(2) of a pid read from /proc, a browser this test's forager started.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let at = rendered();
    let status = crate::harness::bin::wait(&mut child).await;
    let took = started.elapsed();
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        killed.is_some(),
        "no browser to kill (at {at} renders)\n{stderr}"
    );
    assert!(at < SHELLS, "the crawl ended before the kill\n{stderr}");
    assert!(status.success(), "{stderr}");
    // A second browser took over, and at most one render failed: every
    // shell's files but at most one shell's are harvested.
    assert!(
        stderr.lines().any(|l| l.contains("renders of this run")
            && l.contains("browser_launches=2")
            && (l.contains("failed=0") || l.contains("failed=1"))),
        "{stderr}"
    );
    let rows = manifest(&state, "killed");
    assert!(
        rows.len() >= 2 * (SHELLS - 1),
        "{} files of {}\n{stderr}",
        rows.len(),
        2 * SHELLS
    );
    // The dead browser is noticed within a beat, not after a render's timeout.
    let renders = stderr.matches("page rendered").count();
    assert!(renders >= SHELLS - 1, "{renders} renders\n{stderr}");
    assert!(
        !stderr.contains("no new page in time"),
        "a render waited for the dead browser\n{stderr}"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}\n{stderr}");
    let left = browsers_left(dir.path());
    assert!(left.is_empty(), "{left:?}");
}

/// The renderer's summary line of a run (`renders of this run`).
fn summary(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("renders of this run"))
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs a headless chromium on PATH (apt-get install chromium)"
)]
async fn renders_run_side_by_side_up_to_render_pages() {
    let host = "shells.test";
    let server = serve_host(host, Arc::new(Shells)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    for pages in [1, 2, 3] {
        let name = format!("pages-{pages}");
        let job = JobFile::new(&name)
            .seed(format!("http://{host}/"))
            .delay("1ms")
            .no_early_stop()
            .extra(&format!(
                "[render]\nmode = \"always\"\npages = {pages}\ntimeout = \"10s\"\n"
            ));
        let run = crawl(dir.path(), job, host, server.port(), true).await;
        // Every shell's two files, whatever the pool.
        assert_eq!(run.rows.len(), 2 * SHELLS, "{name}\n{}", run.stderr);
        // The pool is used and bounded: `pages` renders at once at most,
        // and that many at some point (the crawl reads shells far faster
        // than they render, so renders wait for a page of the pool).
        let line = summary(&run.stderr);
        assert!(
            line.contains(&format!("most_at_once={pages}")),
            "{name}: {line}\n{}",
            run.stderr
        );
        assert!(line.contains("failed=0"), "{name}: {line}");
        measure(&name, &run);
    }
    let left = browsers_left(dir.path());
    assert!(left.is_empty(), "{left:?}");
}

/// Four script shells of [`Shells`] and a fifth page whose script allocates
/// without end, linked from the home page.
struct Hog;

impl Site for Hog {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        match req.path.as_str() {
            "/" => SiteResponse::html(
                "<html><body><a href=\"/hog\">hog</a> <a href=\"/p/0\">0</a> <a href=\"/p/1\">1</a> \
                 <a href=\"/p/2\">2</a> <a href=\"/p/3\">3</a></body></html>",
            ),
            // 50 arrays of 100 000 numbers (about 40 MB) per turn of the
            // event loop, all kept: past any heap cap within a second.
            "/hog" => SiteResponse::html(
                "<!doctype html><html><head><script>var keep = []; function grow() { \
                 for (var i = 0; i < 50; i++) { keep.push(new Array(100000).fill(i + 0.5)); } \
                 setTimeout(grow, 0); } grow();</script></head><body><div id=\"app\"></div>\
                 <noscript>Needs JavaScript.</noscript></body></html>",
            ),
            _ => Shells.respond(req),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs a headless chromium on PATH (apt-get install chromium)"
)]
async fn a_page_built_to_exhaust_memory_costs_that_page_only() {
    let host = "hog.test";
    let server = serve_host(host, Arc::new(Hog)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let timeout_s = 20;
    let job = JobFile::new("hog")
        .seed(format!("http://{host}/"))
        .delay("1ms")
        .no_early_stop()
        .extra(&format!(
            "[render]\nmode = \"always\"\npages = 2\ntimeout = \"{timeout_s}s\"\nmax_memory = \"64 MiB\"\n"
        ));
    let run = crawl(dir.path(), job, host, server.port(), true).await;
    // The hog's render failed: its renderer crashed at the cap, well before
    // the render's timeout.
    let hog: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("render failed") && l.contains(&format!("url=http://{host}/hog ")))
        .collect();
    assert_eq!(hog.len(), 1, "{}", run.stderr);
    assert!(hog[0].contains("crashed"), "{}", hog[0]);
    assert!(
        run.took < Duration::from_secs(timeout_s),
        "took {:?}",
        run.took
    );
    // That page only: the four shells beside it were rendered and their
    // files harvested, and the job ended well.
    let got: BTreeSet<String> = run.rows.keys().cloned().collect();
    let want: BTreeSet<String> = (0..4)
        .flat_map(|n| {
            ["a", "b"]
                .into_iter()
                .map(move |s| format!("http://{host}/files/{n}-{s}.csv"))
        })
        .collect();
    assert_eq!(got, want, "{}", run.stderr);
    let line = summary(&run.stderr);
    assert!(line.contains("failed=1"), "{line}\n{}", run.stderr);
    measure("hog", &run);
    let left = browsers_left(dir.path());
    assert!(left.is_empty(), "{left:?}");
}

/// Requests (the server's log, in order) until `want` distinct files of
/// `files` were answered; `None` when fewer were.
fn requests_to(
    log: &[forager_bench::sites::server::RequestRecord],
    files: &BTreeSet<String>,
    want: usize,
) -> Option<usize> {
    let mut got = BTreeSet::new();
    for (i, r) in log.iter().enumerate() {
        if r.status == 200 && files.contains(&r.path_and_query) {
            got.insert(r.path_and_query.clone());
            if got.len() >= want {
                return Some(i + 1);
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_chromium),
    ignore = "needs a headless chromium on PATH (apt-get install chromium)"
)]
async fn script_portal_files_and_requests_to_90_percent_over_five_seeds() {
    let host = "scripts.test";
    let portal = ScriptPortal::default();
    let files: BTreeSet<String> = portal.files().into_iter().map(|(p, _)| p).collect();
    let plain = portal.files().iter().filter(|(_, only)| !only).count();
    let want = (files.len() * 9).div_ceil(10);
    let server = serve_host(host, Arc::new(portal)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let seeds = 1..=5u64;
    for (strategy, mode) in [
        ("sb", "never"),
        ("sb", "auto"),
        ("sb", "always"),
        ("bfs", "never"),
        ("bfs", "always"),
    ] {
        let mut harvested = Vec::new();
        let mut to90 = Vec::new();
        let mut requests = Vec::new();
        for seed in seeds.clone() {
            let name = format!("{strategy}-{mode}-{seed}");
            let from = server.log().len();
            let run = crawl(
                dir.path(),
                portal_job(&name, strategy, mode).rng_seed(seed),
                host,
                server.port(),
                true,
            )
            .await;
            let log = server.log();
            let log = &log[from..];
            harvested.push(run.rows.len());
            requests.push(log.len());
            to90.push(requests_to(log, &files, want));
            // Plain links reach the featured files only; a render reaches all.
            let expect = if mode == "never" { plain } else { files.len() };
            assert_eq!(run.rows.len(), expect, "{name}\n{}", run.stderr);
        }
        let reached: Vec<usize> = to90.iter().flatten().copied().collect();
        let figure = if reached.len() == to90.len() {
            let mean = reached.iter().sum::<usize>() as f64 / reached.len() as f64;
            let var = reached
                .iter()
                .map(|&r| (r as f64 - mean).powi(2))
                .sum::<f64>()
                / reached.len() as f64;
            format!("{mean:.1} ± {:.1}", var.sqrt())
        } else {
            format!("not reached ({} of {} seeds)", reached.len(), to90.len())
        };
        eprintln!(
            "TABLE | {strategy} | {mode} | files {:?} of {} | requests {:?} | req@90 {figure} ({to90:?})",
            harvested,
            files.len(),
            requests
        );
    }
    let left = browsers_left(dir.path());
    assert!(left.is_empty(), "{left:?}");
}
