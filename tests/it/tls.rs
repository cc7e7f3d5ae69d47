//! Unreachable origins are loud and bounded, and https works with a job's
//! own trusted roots: through the real binary, against loopback servers
//! started here (plain ones, and TLS fronts with a test CA made afresh).

use crate::harness::sites::{serve_host, DeadPort};
use crate::harness::tls::{TestCa, TlsFront};
use crate::harness::{manifest_by_final_url, Crawl, JobFile};
use forager_bench::sites::server::{Site, SiteRequest, SiteResponse};
use forager_bench::sites::synthetic::{Preset, SyntheticSite};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HOST: &str = "mixed.test";

/// Files of the http origin, all linked from its two pages.
const HTTP_FILES: usize = 8;

/// An http site whose pages link to its own files and to files of the same
/// host's https origin (another port), whose TLS the job does not trust.
struct Mixed {
    https_port: u16,
}

impl Site for Mixed {
    fn respond(&self, req: &SiteRequest) -> SiteResponse {
        let path = req.path_and_query();
        let https = |i: usize| format!("https://{HOST}:{}/s/{i}.csv", self.https_port);
        let link = |href: String| format!("<a href=\"{href}\">{href}</a>\n");
        match path.as_str() {
            "/" | "/more.html" => {
                let (first, second) = if path == "/" { (0, 4) } else { (4, 8) };
                let mut body = String::from("<html><body>\n");
                for i in first..second {
                    body.push_str(&link(format!("/f/{i}.csv")));
                    body.push_str(&link(https(i)));
                }
                body.push_str(&link("/more.html".into()));
                SiteResponse::html(body)
            }
            p if p.starts_with("/f/") || p.starts_with("/s/") => {
                SiteResponse::ok("text/csv", format!("a,b\n1,{p}\n"))
            }
            _ => SiteResponse::not_found(),
        }
    }
}

/// The http crawl of a host goes on, and finishes, while the host's https
/// origin fails its TLS handshake: the failure is logged with the host and
/// the reason, the https origin is tried a bounded number of times, and
/// the http links never wait for the https origin's robots.txt back-off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_origin_is_crawled_whole_while_its_https_origin_fails_tls() {
    let tmp = tempfile::tempdir().unwrap();
    // The front's port must be known to the site: bind the front first on
    // a placeholder backend, then serve the site knowing it.
    let untrusted = TestCa::new("a CA the job does not trust");
    let server_of = |port| Arc::new(Mixed { https_port: port });
    // Ports: the front forwards to the plain server, which links to the front.
    let placeholder = serve_host(HOST, server_of(0)).await;
    let front = TlsFront::start(untrusted.server_config(&[HOST]), placeholder.port()).await;
    let server = serve_host(HOST, server_of(front.port())).await;
    let job = JobFile::new("mixed")
        .seed(format!("http://{HOST}:{}/", server.port()))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
        .set("limits", "retries", 2)
        .write(tmp.path());
    let state = tmp.path().join("state");
    let out = Crawl::loopback(&job, &state)
        .resolve(HOST, server.port())
        .output()
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("frontier empty"), "{stdout}");
    // Every file of the http origin, none of the https one.
    let saved = manifest_by_final_url(&state.join("targets/mixed"));
    let http_files = saved.keys().filter(|u| u.contains("/f/")).count();
    assert_eq!(http_files, HTTP_FILES, "{saved:?}\n{stderr}");
    assert!(!saved.keys().any(|u| u.starts_with("https:")), "{saved:?}");
    // Loud: the robots.txt failure names its URL, the host and the reason.
    let robots_url = format!("https://{HOST}:{}/robots.txt", front.port());
    assert!(
        stderr.contains("robots.txt unavailable") && stderr.contains(&robots_url),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("TLS handshake with {HOST} failed")),
        "{stderr}"
    );
    assert!(stderr.contains("UnknownIssuer"), "{stderr}");
    assert!(stderr.contains("ca_file"), "the hint: {stderr}");
    // Bounded: robots.txt of the https origin was asked once per try of
    // its links (a first try and two retries), no more.
    let tries = front.connections();
    assert!((2..=4).contains(&tries.len()), "{tries:?}");
    // Never held: every request of the http origin was answered before the
    // https origin's robots.txt was asked a second time (its first retry
    // comes after a back-off of at least a second; the http crawl, a dozen
    // loopback requests, needs far less).
    let last_http = server
        .log()
        .iter()
        .map(|r| r.at)
        .max()
        .expect("the http origin was crawled");
    // For the measurement notes (`--nocapture`).
    eprintln!(
        "http crawl ended {:?} after the first https try; second https try after {:?}",
        last_http.saturating_duration_since(tries[0]),
        tries[1].saturating_duration_since(tries[0]),
    );
    assert!(
        last_http < tries[1],
        "an http request waited for the https origin's back-off: last http request \
         {:?} after the first https try, second https try {:?} after it",
        last_http.saturating_duration_since(tries[0]),
        tries[1].saturating_duration_since(tries[0]),
    );
    let _ = placeholder.shutdown().await;
    let _ = server.shutdown().await;
}

/// A seed whose port refuses connections ends the job `unreachable` within
/// about a minute with the default retries, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_refusing_connections_ends_unreachable_within_a_minute_by_default() {
    let dead = DeadPort::new();
    let tmp = tempfile::tempdir().unwrap();
    let job = JobFile::new("refused")
        .seed(format!("http://{HOST}/"))
        .strategy("bfs")
        .delay("0s")
        .write(tmp.path());
    let started = Instant::now();
    // At the info level, so that the waits are logged too (the progress
    // line, off here, shows them at a terminal).
    let out = Crawl::loopback(&job, &tmp.path().join("state"))
        .resolve(HOST, dead.port())
        .arg("--log")
        .arg("info")
        .output()
        .await;
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("unreachable"), "{stdout}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    // Every robots.txt try is logged with its URL and error; the end names
    // the seed and the last error.
    let tries = stderr.matches("robots.txt unavailable").count();
    assert!(tries >= 3, "{stderr}");
    assert!(
        stderr.contains(&format!("http://{HOST}/robots.txt")),
        "{stderr}"
    );
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(
        stderr.contains(&format!("the last failed with: http://{HOST}/")),
        "{stderr}"
    );
    // While it only waits for the origin (back-offs of 2 s and more), it
    // says so once per wait, naming the origin and until when.
    assert!(
        stderr.contains(&format!("waiting for http://{HOST}:80 until ")),
        "{stderr}"
    );
}

/// A seed whose server answers every connection with random bytes (not
/// HTTP) ends the job `unreachable` within about a minute by default too,
/// naming what went wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_answering_random_bytes_ends_unreachable_within_a_minute_by_default() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let garbage = tokio::spawn(async move {
        // A fixed xorshift stream: the same bytes on every run.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        while let Ok((mut conn, _)) = listener.accept().await {
            let bytes: Vec<u8> = (0..512)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 24) as u8
                })
                .collect();
            let _ = conn.write_all(&bytes).await;
            let _ = conn.shutdown().await;
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let job = JobFile::new("garbage")
        .seed(format!("http://{HOST}/"))
        .strategy("bfs")
        .delay("0s")
        .write(tmp.path());
    let started = Instant::now();
    let out = Crawl::loopback(&job, &tmp.path().join("state"))
        .resolve(HOST, port)
        .output()
        .await;
    let took = started.elapsed();
    garbage.abort();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("unreachable"), "{stdout}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(
        stderr.matches("robots.txt unavailable").count() >= 3,
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("the last failed with: http://{HOST}/")),
        "{stderr}"
    );
}

fn small_site() -> SyntheticSite {
    SyntheticSite::preset(Preset::Small, 11).expect("small site")
}

/// A site served over https, crawled with and without its CA in `ca_file`.
async fn crawl_over_https(with_ca: bool) -> (std::process::Output, Vec<String>) {
    const SECURE: &str = "secure.test";
    let tmp = tempfile::tempdir().unwrap();
    let ca = TestCa::new("forager test CA");
    let site = small_site();
    let start = site.start_path().to_string();
    let server = serve_host(SECURE, Arc::new(site)).await;
    let front = TlsFront::start(ca.server_config(&[SECURE]), server.port()).await;
    let mut job = JobFile::new("secure")
        .seed(format!("https://{SECURE}:{}{start}", front.port()))
        .strategy("bfs")
        .delay("0s")
        .no_early_stop()
        .set("limits", "retries", 1);
    if with_ca {
        // Named relative to the job file's folder, as a user writes it
        // beside the job; the binary runs from another folder.
        let certs = tmp.path().join("certs");
        std::fs::create_dir_all(&certs).expect("a folder for the CA");
        ca.write_pem(&certs, "ca.pem");
        job = job.set("http", "ca_file", "\"certs/ca.pem\"");
    }
    let job = job.write(tmp.path());
    let state = tmp.path().join("state");
    let out = Crawl::loopback(&job, &state)
        .resolve(SECURE, front.port())
        .output()
        .await;
    let saved = manifest_by_final_url(&state.join("targets/secure"))
        .into_keys()
        .collect();
    let _ = server.shutdown().await;
    (out, saved)
}

/// `ca_file = "certs/ca.pem"`: relative to the job file's folder, not to
/// where forager was started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_over_https_is_crawled_with_its_ca_in_ca_file() {
    let (out, saved) = crawl_over_https(true).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!saved.is_empty(), "{stdout}\n{stderr}");
    assert!(
        saved.iter().all(|u| u.starts_with("https://secure.test:")),
        "{saved:?}"
    );
    assert!(!stderr.contains("TLS handshake"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_ca_file_an_https_site_fails_with_a_tls_error_naming_the_host() {
    let (out, saved) = crawl_over_https(false).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(saved.is_empty());
    assert!(stdout.contains("unreachable"), "{stdout}");
    assert!(
        stderr.contains(
            "TLS handshake with secure.test failed: invalid peer certificate: UnknownIssuer"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("[http] ca_file"), "{stderr}");
}

/// `forager check` reads `ca_file` and says what is wrong with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_says_what_is_wrong_with_a_ca_file() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("key.pem");
    std::fs::write(
        &key,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let missing = tmp.path().join("missing.pem");
    for (file, reason) in [
        (
            &key,
            "a PRIVATE KEY block; ca_file holds CERTIFICATE blocks only",
        ),
        (&missing, "cannot read"),
    ] {
        let job = JobFile::new("check-ca")
            .seed("https://a.test/")
            .set(
                "http",
                "ca_file",
                format!("{:?}", file.display().to_string()),
            )
            .write(tmp.path());
        let out =
            crate::harness::bin::output(crate::harness::bin::command().arg("check").arg(&job))
                .await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{stdout}");
        assert!(
            stdout.contains("check-ca.toml:5: http.ca_file:"),
            "{stdout}"
        );
        assert!(stdout.contains(reason), "{stdout}");
    }
    let good = TestCa::new("check CA").write_pem(tmp.path(), "ca.pem");
    let job = JobFile::new("check-ca")
        .seed("https://a.test/")
        .set(
            "http",
            "ca_file",
            format!("{:?}", good.display().to_string()),
        )
        .write(tmp.path());
    let out =
        crate::harness::bin::output(crate::harness::bin::command().arg("check").arg(&job)).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
