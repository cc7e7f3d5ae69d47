//! Fetcher tests against servers started on 127.0.0.1 by each test.
//!
//! Timing assertions use the server's own arrival timestamps, never the
//! client's clock, and only lower bounds unless a test says why.

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body as AxBody;
use axum::extract::State;
use axum::http::{
    HeaderMap as AxHeaders, HeaderName, HeaderValue as AxValue, Method as AxMethod, StatusCode, Uri,
};
use axum::Router;
use futures_util::StreamExt;

use super::*;

const MS: Duration = Duration::from_millis(1);
const UA: &str = "forager-test/1.0 (+http://example.invalid/bot)";

/// What the test server saw of one request.
#[derive(Clone, Debug)]
struct Hit {
    host: String,
    path: String,
    method: String,
    user_agent: String,
    accept_encoding: String,
    at: Instant,
}

/// What the reply closure is told about a request.
struct Req {
    host: String,
    path: String,
    /// Earlier requests to the same host and path.
    seen: usize,
}

/// How the test server answers.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: ReplyBody,
    /// Sleep before answering (inside the handler: the request is "in flight").
    wait: Duration,
}

enum ReplyBody {
    Bytes(Vec<u8>),
    /// Sends these bytes, then never ends.
    Stall(Vec<u8>),
    /// Sends a small chunk every interval, forever.
    Drip(Duration),
}

impl Reply {
    fn ok(body: &str) -> Reply {
        Reply::status(200).body(body.as_bytes().to_vec())
    }
    fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: ReplyBody::Bytes(Vec::new()),
            wait: Duration::ZERO,
        }
    }
    fn body(mut self, body: Vec<u8>) -> Reply {
        self.body = ReplyBody::Bytes(body);
        self
    }
    fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    fn stall(mut self, first: Vec<u8>) -> Reply {
        self.body = ReplyBody::Stall(first);
        self
    }
    fn wait(mut self, wait: Duration) -> Reply {
        self.wait = wait;
        self
    }
}

type ReplyFn = dyn Fn(&Req) -> Reply + Send + Sync;

#[derive(Clone)]
struct Server {
    addr: SocketAddr,
    hits: Arc<Mutex<Vec<Hit>>>,
    /// Per host: (in flight now, max in flight seen).
    flight: Arc<Mutex<HashMap<String, (usize, usize)>>>,
    reply: Arc<ReplyFn>,
}

impl Server {
    async fn start(reply: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = Server {
            addr: listener.local_addr().unwrap(),
            hits: Arc::default(),
            flight: Arc::default(),
            reply: Arc::new(reply),
        };
        let app = Router::new().fallback(handle).with_state(server.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        server
    }

    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    fn hits_on(&self, host: &str, path: &str) -> Vec<Hit> {
        self.hits()
            .into_iter()
            .filter(|h| h.host == host && h.path == path)
            .collect()
    }

    fn max_in_flight(&self, host: &str) -> usize {
        self.flight.lock().unwrap().get(host).map_or(0, |f| f.1)
    }
}

async fn handle(
    State(s): State<Server>,
    method: AxMethod,
    uri: Uri,
    headers: AxHeaders,
) -> axum::response::Response {
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .split(':')
        .next()
        .unwrap_or("")
        .to_string();
    let path = uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.to_string());
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let user_agent = header("user-agent");
    let accept_encoding = header("accept-encoding");
    let seen = {
        let mut hits = s.hits.lock().unwrap();
        let seen = hits
            .iter()
            .filter(|h| h.host == host && h.path == path)
            .count();
        hits.push(Hit {
            host: host.clone(),
            path: path.clone(),
            method: method.to_string(),
            user_agent,
            accept_encoding,
            at: Instant::now(),
        });
        seen
    };
    {
        let mut flight = s.flight.lock().unwrap();
        let f = flight.entry(host.clone()).or_default();
        f.0 += 1;
        f.1 = f.1.max(f.0);
    }
    let reply = (s.reply)(&Req {
        host: host.clone(),
        path,
        seen,
    });
    tokio::time::sleep(reply.wait).await;
    s.flight.lock().unwrap().entry(host).or_default().0 -= 1;

    let body = match reply.body {
        ReplyBody::Bytes(b) => AxBody::from(b),
        ReplyBody::Stall(first) => AxBody::from_stream(
            futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from(first))])
                .chain(futures_util::stream::pending()),
        ),
        ReplyBody::Drip(every) => {
            AxBody::from_stream(futures_util::stream::unfold((), move |()| async move {
                tokio::time::sleep(every).await;
                Some((Ok::<_, std::io::Error>(Bytes::from_static(b"x")), ()))
            }))
        }
    };
    let mut resp = axum::response::Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(reply.status).unwrap();
    for (k, v) in reply.headers {
        resp.headers_mut().append(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            AxValue::from_str(&v).unwrap(),
        );
    }
    resp
}

fn config(server: &Server) -> FetchConfig {
    FetchConfig {
        resolve: vec![
            ("site-a.test".to_string(), server.addr),
            ("site-b.test".to_string(), server.addr),
        ],
        ..FetchConfig::default()
    }
}

fn fetcher(server: &Server) -> Fetcher {
    Fetcher::new(config(server)).unwrap()
}

fn polite(delay: Duration) -> Politeness {
    Politeness {
        run: 0,
        delay,
        robots: true,
        user_agent: UA.to_string(),
        ..Politeness::default()
    }
}

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

async fn get(f: &Fetcher, u: &str, p: &Politeness) -> Result<Body, FetchError> {
    let u = url(u);
    let key = u.host_str().unwrap().to_string();
    f.send(Method::Get, &u, p, &key)
        .await?
        .read_capped(1 << 20)
        .await
}

fn gaps(hits: &[Hit]) -> Vec<Duration> {
    let mut at: Vec<Instant> = hits.iter().map(|h| h.at).collect();
    at.sort();
    at.windows(2).map(|w| w[1] - w[0]).collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[tokio::test]
async fn delay_spaces_request_starts_per_host() {
    let server = Server::start(|_| Reply::ok("ok")).await;
    let f = fetcher(&server);
    let p = polite(100 * MS);
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let (f, p) = (f.clone(), p.clone());
            tokio::spawn(async move { get(&f, &format!("http://site-a.test/{i}"), &p).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let a: Vec<Hit> = server
        .hits()
        .into_iter()
        .filter(|h| h.host == "site-a.test")
        .collect();
    assert_eq!(a.len(), 4);
    for g in gaps(&a) {
        assert!(g >= 100 * MS, "gap {g:?} below the delay");
    }
    // Another host is not held back by site-a's limiter.
    let (a5, b1) = tokio::join!(
        get(&f, "http://site-a.test/5", &p),
        get(&f, "http://site-b.test/1", &p)
    );
    a5.unwrap();
    b1.unwrap();
    let a5_at = server.hits_on("site-a.test", "/5")[0].at;
    let b1_at = server.hits_on("site-b.test", "/1")[0].at;
    assert!(b1_at < a5_at, "site-b waited for site-a's delay");
}

#[tokio::test]
async fn one_request_in_flight_per_host() {
    let server = Server::start(|_| Reply::ok("slow").wait(40 * MS)).await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (f, p) = (f.clone(), p.clone());
            let host = if i % 2 == 0 {
                "site-a.test"
            } else {
                "site-b.test"
            };
            tokio::spawn(async move { get(&f, &format!("http://{host}/{i}"), &p).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(server.hits().len(), 8);
    assert_eq!(server.max_in_flight("site-a.test"), 1);
    assert_eq!(server.max_in_flight("site-b.test"), 1);
}

#[tokio::test]
async fn response_holds_the_host_until_its_body_is_done() {
    let server = Server::start(|_| Reply::ok("body")).await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let first = f
        .send(
            Method::Get,
            &url("http://site-a.test/first"),
            &p,
            "site-a.test",
        )
        .await
        .unwrap();
    let second = {
        let (f, p) = (f.clone(), p.clone());
        tokio::spawn(async move { get(&f, "http://site-a.test/second", &p).await })
    };
    tokio::time::sleep(150 * MS).await;
    assert!(
        server.hits_on("site-a.test", "/second").is_empty(),
        "second request overtook an unread body"
    );
    let body = first.read_capped(100).await.unwrap();
    assert_eq!(body.bytes, b"body");
    tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(server.hits_on("site-a.test", "/second").len(), 1);
}

#[tokio::test]
async fn retry_after_seconds_blocks_the_host() {
    let server = Server::start(|r| {
        if r.seen == 0 {
            Reply::status(429).header("retry-after", "1")
        } else {
            Reply::ok("fine")
        }
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let u = url("http://site-a.test/limited");
    let r = f.send(Method::Get, &u, &p, "site-a.test").await.unwrap();
    assert_eq!(r.status, 429);
    assert_eq!(r.retry_after, Some(Duration::from_secs(1)));
    drop(r);
    assert!(f.blocked_for("site-a.test").is_some_and(|d| d > 800 * MS));
    let body = get(&f, "http://site-a.test/limited", &p).await.unwrap();
    assert_eq!(body.bytes, b"fine");
    let g = gaps(&server.hits_on("site-a.test", "/limited"));
    assert!(g[0] >= Duration::from_secs(1), "Retry-After ignored: {g:?}");
}

#[tokio::test]
async fn retry_after_date_is_clamped_to_max_backoff() {
    let server = Server::start(|r| {
        if r.seen == 0 {
            let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3600));
            Reply::status(503).header("retry-after", &later)
        } else {
            Reply::ok("back")
        }
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        max_backoff: 300 * MS,
        ..config(&server)
    })
    .unwrap();
    let p = polite(Duration::ZERO);
    let r = f
        .send(Method::Get, &url("http://site-a.test/x"), &p, "site-a.test")
        .await
        .unwrap();
    assert_eq!(r.status, 503);
    assert_eq!(r.retry_after, Some(300 * MS), "an hour-long date clamped");
    drop(r);
    get(&f, "http://site-a.test/x", &p).await.unwrap();
    let g = gaps(&server.hits_on("site-a.test", "/x"));
    assert!(g[0] >= 300 * MS, "block not honoured: {g:?}");
    // Upper bound with a wide margin: the hour must not have been waited.
    assert!(g[0] < Duration::from_secs(5), "not clamped: {g:?}");
}

#[tokio::test]
async fn failures_back_off_exponentially_then_reset() {
    let server = Server::start(|r| {
        // 503 without Retry-After: the host is overloaded (a 500 backs off
        // less, see host::tests::server_errors_back_off_less_than_outages).
        if r.seen < 2 {
            Reply::status(503)
        } else {
            Reply::ok("ok")
        }
    })
    .await;
    let f = fetcher(&server);
    let p = polite(50 * MS);
    for _ in 0..4 {
        let r = f
            .send(
                Method::Get,
                &url("http://site-a.test/flaky"),
                &p,
                "site-a.test",
            )
            .await
            .unwrap();
        drop(r);
    }
    let g = gaps(&server.hits_on("site-a.test", "/flaky"));
    assert!(g[0] >= 100 * MS, "first back-off (2·delay) missing: {g:?}");
    assert!(g[1] >= 200 * MS, "second back-off (4·delay) missing: {g:?}");
    // After the success the next request only waits the delay; 8·delay would
    // be the back-off if the count had not been reset.
    assert!(
        g[2] >= 50 * MS && g[2] < 300 * MS,
        "not reset after success: {g:?}"
    );
}

#[tokio::test]
async fn connection_errors_count_as_failures() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let f = Fetcher::new(FetchConfig {
        resolve: vec![("dead.test".to_string(), closed)],
        ..FetchConfig::default()
    })
    .unwrap();
    let err = f
        .send(
            Method::Get,
            &url("http://dead.test/"),
            &polite(50 * MS),
            "dead.test",
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "connect", "{err}");
    assert!(
        f.blocked_for("dead.test").is_some(),
        "no back-off after a connection error"
    );
}

/// A `.gz` file sent with `Content-Encoding: gzip` (Apache's `AddEncoding`
/// habit) is the file the URL names: it is asked for as `identity` and kept
/// as sent. A page sent compressed is still decoded.
#[tokio::test]
async fn compressed_files_are_kept_as_sent() {
    let csv = b"year,value\n2024,1\n".to_vec();
    let file = gzip(&csv);
    let sent = file.clone();
    let server = Server::start(move |_| {
        Reply::ok("")
            .body(sent.clone())
            .header("content-encoding", "gzip")
            .header("content-type", "application/gzip")
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    for path in ["/data.csv.gz", "/dump.TGZ", "/x.zst"] {
        let r = f
            .send(
                Method::Get,
                &url(&format!("http://site-a.test{path}")),
                &p,
                "site-a.test",
            )
            .await
            .unwrap();
        let body = r.read_capped(1 << 20).await.unwrap();
        assert_eq!(body.bytes, file, "{path}: not the bytes sent");
    }
    for hit in server.hits() {
        let wanted = if hit.path == "/page.html" {
            "zstd,gzip,deflate,br"
        } else {
            "identity"
        };
        assert_eq!(hit.accept_encoding, wanted, "{}", hit.path);
    }
    let page = f
        .send(
            Method::Get,
            &url("http://site-a.test/page.html"),
            &p,
            "site-a.test",
        )
        .await
        .unwrap();
    assert_eq!(
        page.read_capped(1 << 20).await.unwrap().bytes,
        csv,
        "a page is decoded"
    );
    for (path, raw) in [
        ("/a.gz", true),
        ("/gz", false),
        ("/.gz", false),
        ("/a.gz/b", false),
        ("/a.tar.gz", true),
    ] {
        assert_eq!(
            super::names_compressed_file(&url(&format!("http://h{path}"))),
            raw,
            "{path}"
        );
    }
}

#[tokio::test]
async fn gzip_bomb_is_cut_after_decompression() {
    let bomb = gzip(&vec![0u8; 16 << 20]);
    assert!(bomb.len() < 100_000);
    let small = gzip(b"hello, small world");
    let server = Server::start(move |r| {
        let body = if r.path == "/bomb" {
            bomb.clone()
        } else {
            small.clone()
        };
        Reply::ok("")
            .body(body)
            .header("content-encoding", "gzip")
            .header("content-type", "text/html")
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let cap = 64 * 1024;
    let r = f
        .send(
            Method::Get,
            &url("http://site-a.test/bomb"),
            &p,
            "site-a.test",
        )
        .await
        .unwrap();
    assert_eq!(
        r.content_length, None,
        "compressed length is not the body length"
    );
    assert_eq!(r.content_type.as_deref(), Some("text/html"));
    let body = r.read_capped(cap).await.unwrap();
    assert!(body.truncated);
    assert_eq!(body.bytes.len() as u64, cap);
    assert!(body.bytes.iter().all(|b| *b == 0));

    // Decompression is streamed in small chunks, so stopping at the cap
    // bounds the memory: no chunk is anywhere near the 16 MiB.
    let mut r = f
        .send(
            Method::Get,
            &url("http://site-a.test/bomb"),
            &p,
            "site-a.test",
        )
        .await
        .unwrap();
    let first = r.chunk().await.unwrap().unwrap();
    assert!(first.len() <= 1 << 20, "a {} byte chunk", first.len());
    drop(r);

    let small = get(&f, "http://site-a.test/small", &p).await.unwrap();
    assert_eq!(small.bytes, b"hello, small world");
    assert!(!small.truncated);
}

#[tokio::test]
async fn cap_boundary_is_exact() {
    let server = Server::start(|_| Reply::ok("").body(vec![7u8; 1000])).await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let u = url("http://site-a.test/k");
    let exact = f
        .send(Method::Get, &u, &p, "site-a.test")
        .await
        .unwrap()
        .read_capped(1000)
        .await
        .unwrap();
    assert_eq!((exact.bytes.len(), exact.truncated), (1000, false));
    let cut = f
        .send(Method::Get, &u, &p, "site-a.test")
        .await
        .unwrap()
        .read_capped(999)
        .await
        .unwrap();
    assert_eq!((cut.bytes.len(), cut.truncated), (999, true));
}

#[tokio::test]
async fn head_sends_the_user_agent_and_reads_content_length() {
    let server = Server::start(|_| {
        Reply::ok("")
            .body(vec![1u8; 12345])
            .header("content-type", "text/csv")
    })
    .await;
    let f = fetcher(&server);
    let r = f
        .send(
            Method::Head,
            &url("http://site-a.test/data.csv"),
            &polite(Duration::ZERO),
            "site-a.test",
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.content_length, Some(12345));
    assert_eq!(r.content_type.as_deref(), Some("text/csv"));
    let hit = &server.hits()[0];
    assert_eq!(hit.method, "HEAD");
    assert_eq!(hit.user_agent, UA);
}

#[tokio::test]
async fn location_is_resolved_only_for_redirects() {
    let server = Server::start(|r| match r.path.as_str() {
        "/dir/sub/a" => Reply::status(302).header("location", "../b?x=1"),
        "/abs" => Reply::status(301).header("location", "https://other.test/z"),
        _ => Reply::ok("not a redirect").header("location", "/elsewhere"),
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let send = |path: &str| {
        let (f, p, u) = (
            f.clone(),
            p.clone(),
            url(&format!("http://site-a.test{path}")),
        );
        async move { f.send(Method::Get, &u, &p, "site-a.test").await.unwrap() }
    };
    let r = send("/dir/sub/a").await;
    assert_eq!(r.status, 302);
    assert_eq!(
        r.location.as_ref().map(Url::as_str),
        Some("http://site-a.test/dir/b?x=1")
    );
    drop(r);
    let r = send("/abs").await;
    assert_eq!(
        r.location.as_ref().map(Url::as_str),
        Some("https://other.test/z")
    );
    drop(r);
    let r = send("/plain").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.location, None);
}

#[tokio::test]
async fn oversized_response_heads_are_refused() {
    let server = Server::start(|r| match r.path.as_str() {
        "/big" => Reply::ok("x").header("x-big", &"a".repeat(100_000)),
        _ => {
            let mut reply = Reply::ok("x");
            for i in 0..300 {
                reply = reply.header(&format!("x-h{i}"), "v");
            }
            reply
        }
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let e = get(&f, "http://site-a.test/big", &p).await.unwrap_err();
    assert_eq!(e.kind(), "too_many_headers", "{e}");
    let e = get(&f, "http://site-a.test/many", &p).await.unwrap_err();
    assert_eq!(e.kind(), "too_many_headers", "{e}");
}

#[tokio::test]
async fn stalled_body_hits_the_read_timeout() {
    let server = Server::start(|r| match r.path.as_str() {
        "/stall" => Reply::ok("").body(Vec::new()).stall(b"first".to_vec()),
        "/slow-head" => Reply::ok("late").wait(Duration::from_secs(3)),
        _ => Reply {
            body: ReplyBody::Drip(20 * MS),
            ..Reply::status(200)
        },
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        read_timeout: 200 * MS,
        connect_timeout: 200 * MS,
        total_timeout: Duration::from_secs(2),
        ..config(&server)
    })
    .unwrap();
    let p = polite(Duration::ZERO);
    let mut r = f
        .send(
            Method::Get,
            &url("http://site-b.test/stall"),
            &p,
            "site-b.test",
        )
        .await
        .unwrap();
    assert_eq!(r.chunk().await.unwrap().as_deref(), Some(&b"first"[..]));
    let e = r.chunk().await.unwrap_err();
    assert!(
        matches!(
            e,
            FetchError::Timeout {
                phase: TimeoutPhase::Body,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        r.chunk().await.unwrap(),
        None,
        "a failed body stays finished"
    );

    let e = f
        .send(
            Method::Get,
            &url("http://site-a.test/slow-head"),
            &p,
            "site-a.test",
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            FetchError::Timeout {
                phase: TimeoutPhase::Headers,
                ..
            }
        ),
        "{e}"
    );

    // A body that trickles forever (slowloris) is stopped by the total timeout. The read
    // timeout is far above the drip's 20 ms gaps so that a loaded machine's scheduling
    // pause cannot end the body early as a read timeout.
    let f = Fetcher::new(FetchConfig {
        read_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(30),
        total_timeout: Duration::from_secs(1),
        ..config(&server)
    })
    .unwrap();
    let e = f
        .send(
            Method::Get,
            &url("http://site-b.test/drip"),
            &p,
            "site-b.test",
        )
        .await
        .unwrap()
        .read_capped(1 << 30)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            FetchError::Timeout {
                phase: TimeoutPhase::Total,
                ..
            }
        ),
        "{e}"
    );
}

#[tokio::test]
async fn ssrf_refuses_loopback_literals_unless_allowed() {
    let server = Server::start(|_| Reply::ok("secret")).await;
    let strict = Fetcher::new(FetchConfig::default()).unwrap();
    let p = polite(Duration::ZERO);
    let literal = url(&format!("http://127.0.0.1:{}/", server.addr.port()));
    let e = strict
        .send(Method::Get, &literal, &p, "127.0.0.1")
        .await
        .unwrap_err();
    match e {
        FetchError::Forbidden { addr, .. } => assert_eq!(addr, IpAddr::from([127, 0, 0, 1])),
        other => panic!("expected Forbidden, got {other}"),
    }
    let v6 = url(&format!("http://[::1]:{}/", server.addr.port()));
    let e = strict.send(Method::Get, &v6, &p, "::1").await.unwrap_err();
    assert_eq!(e.kind(), "forbidden");
    let e = strict.robots(&literal, &p, "127.0.0.1").await.unwrap_err();
    assert_eq!(e.kind(), "forbidden");
    assert!(
        server.hits().is_empty(),
        "a refused request reached the server"
    );

    let open = Fetcher::new(FetchConfig {
        allow_private: true,
        ..FetchConfig::default()
    })
    .unwrap();
    let body = open
        .send(Method::Get, &literal, &p, "127.0.0.1")
        .await
        .unwrap()
        .read_capped(100)
        .await
        .unwrap();
    assert_eq!(body.bytes, b"secret");
}

#[tokio::test]
async fn ssrf_checks_resolved_names_but_trusts_overrides() {
    let server = Server::start(|_| Reply::ok("secret")).await;
    let p = polite(Duration::ZERO);
    let port = server.addr.port();
    // `localhost` goes through the guarded resolver (no network: /etc/hosts).
    let by_name = url(&format!("http://localhost:{port}/"));
    let strict = Fetcher::new(FetchConfig::default()).unwrap();
    let e = strict
        .send(Method::Get, &by_name, &p, "localhost")
        .await
        .unwrap_err();
    match e {
        FetchError::Forbidden { addr, .. } => assert!(addr.is_loopback(), "{addr}"),
        other => panic!("expected Forbidden, got {other}"),
    }
    assert!(server.hits().is_empty());

    let open = Fetcher::new(FetchConfig {
        allow_private: true,
        ..FetchConfig::default()
    })
    .unwrap();
    let r = open
        .send(Method::Get, &by_name, &p, "localhost")
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    drop(r);

    // A configured override is trusted even with allow_private off…
    let mapped = fetcher(&server);
    assert!(!mapped.config().allow_private);
    let body = get(&mapped, "http://site-a.test/", &p).await.unwrap();
    assert_eq!(body.bytes, b"secret");
    // …but only under its own name: where a redirect from it may lead, a
    // private address is refused (the runner sends every hop through `send`).
    let hits = server.hits().len();
    for hop in [
        format!("http://127.0.0.1:{port}/secret"),
        format!("http://localhost:{port}/secret"),
        format!("http://[::ffff:127.0.0.1]:{port}/secret"),
        format!("http://0.0.0.0:{port}/secret"),
    ] {
        let e = mapped
            .send(Method::Get, &url(&hop), &p, "hop")
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "forbidden", "{hop}: {e}");
    }
    assert_eq!(
        server.hits().len(),
        hits,
        "a refused hop reached the server"
    );
}

#[tokio::test]
async fn invalid_requests_are_refused_before_the_network() {
    let server = Server::start(|_| Reply::ok("x")).await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let e = f
        .send(Method::Get, &url("ftp://site-a.test/x"), &p, "site-a.test")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "invalid_url");
    let bad_ua = Politeness {
        run: 0,
        user_agent: "bad\nagent".into(),
        ..p
    };
    let e = f
        .send(
            Method::Get,
            &url("http://site-a.test/x"),
            &bad_ua,
            "site-a.test",
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "config");
    assert!(server.hits().is_empty());
}

const ROBOTS: &str = "User-agent: *\nDisallow: /private\nCrawl-delay: 0.2\nSitemap: http://site-a.test/sitemap.xml\n\nUser-agent: forager-test\nDisallow: /no-test\n";

#[tokio::test]
async fn robots_rules_are_cached_and_crawl_delay_paces_the_host() {
    let server = Server::start(|r| match r.path.as_str() {
        "/robots.txt" => Reply::ok(ROBOTS).header("content-type", "text/plain"),
        _ => Reply::ok("page"),
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let page = url("http://site-a.test/index.html");
    let first = f.robots_counted(&page, &p, "site-a.test").await.unwrap();
    assert_eq!(first.requests, 1);
    let rules = first.rules;
    assert_eq!(rules.status(), RobotsStatus::Fetched);
    // Our own group applies, not `*`.
    assert!(!rules.allowed(&url("http://site-a.test/no-test/x")));
    assert!(rules.allowed(&url("http://site-a.test/private/x")));
    let star = f
        .robots(
            &page,
            &Politeness {
                run: 0,
                user_agent: "otherbot/2".into(),
                ..p.clone()
            },
            "site-a.test",
        )
        .await
        .unwrap();
    assert!(!star.allowed(&url("http://site-a.test/private/x")));
    assert_eq!(star.crawl_delay(), Some(200 * MS));
    assert_eq!(star.sitemaps(), &[url("http://site-a.test/sitemap.xml")]);

    let again = f.robots_counted(&page, &p, "site-a.test").await.unwrap();
    assert_eq!(again.requests, 0);
    assert_eq!(server.hits_on("site-a.test", "/robots.txt").len(), 1);

    // The `*` group's Crawl-delay paces a job whose delay is zero.
    for i in 0..3 {
        get(
            &f,
            &format!("http://site-a.test/p{i}"),
            &Politeness {
                run: 0,
                user_agent: "otherbot/2".into(),
                ..p.clone()
            },
        )
        .await
        .unwrap();
    }
    let pages: Vec<Hit> = server
        .hits()
        .into_iter()
        .filter(|h| h.path.starts_with("/p"))
        .collect();
    for g in gaps(&pages) {
        assert!(g >= 200 * MS, "Crawl-delay ignored: {g:?}");
    }
}

#[tokio::test]
async fn robots_errors_disallow_and_missing_allows() {
    let server = Server::start(|r| match (r.host.as_str(), r.path.as_str()) {
        ("site-a.test", "/robots.txt") => Reply::status(503),
        ("site-b.test", "/robots.txt") => Reply::status(404),
        _ => Reply::ok("x"),
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let down = f
        .robots(&url("http://site-a.test/"), &p, "site-a.test")
        .await
        .unwrap();
    assert_eq!(down.status(), RobotsStatus::Unavailable);
    assert!(!down.allowed(&url("http://site-a.test/anything")));
    assert!(
        down.expires_at() < SystemTime::now() + ROBOTS_TTL,
        "a 5xx must be retried sooner"
    );
    let missing = f
        .robots(&url("http://site-b.test/"), &p, "site-b.test")
        .await
        .unwrap();
    assert_eq!(missing.status(), RobotsStatus::Missing);
    assert!(missing.allowed(&url("http://site-b.test/anything")));
}

#[tokio::test]
async fn robots_network_error_disallows() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let f = Fetcher::new(FetchConfig {
        resolve: vec![("dead.test".to_string(), closed)],
        ..FetchConfig::default()
    })
    .unwrap();
    let got = f
        .robots_counted(
            &url("http://dead.test/x"),
            &polite(Duration::ZERO),
            "dead.test",
        )
        .await
        .unwrap();
    assert_eq!(got.requests, 1);
    assert_eq!(got.rules.status(), RobotsStatus::Unavailable);
    assert!(!got.rules.allowed(&url("http://dead.test/x")));
}

#[tokio::test]
async fn robots_redirects_are_followed_and_loops_end() {
    let server = Server::start(|r| match (r.host.as_str(), r.path.as_str()) {
        ("site-a.test", "/robots.txt") => Reply::status(301).header("location", "/real-robots.txt"),
        ("site-a.test", "/real-robots.txt") => Reply::ok("User-agent: *\nDisallow: /x\n"),
        ("site-b.test", _) => {
            Reply::status(302).header("location", &format!("/robots.txt?{}", r.seen + 1))
        }
        _ => Reply::status(404),
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let got = f
        .robots_counted(&url("http://site-a.test/"), &p, "site-a.test")
        .await
        .unwrap();
    assert_eq!(got.requests, 2);
    assert!(!got.rules.allowed(&url("http://site-a.test/x/1")));
    assert!(got.rules.allowed(&url("http://site-a.test/y")));

    let looped = f
        .robots_counted(&url("http://site-b.test/"), &p, "site-b.test")
        .await
        .unwrap();
    assert_eq!(looped.requests as usize, ROBOTS_MAX_REDIRECTS + 1);
    assert_eq!(looped.rules.status(), RobotsStatus::Missing);
    assert!(looped.rules.allowed(&url("http://site-b.test/y")));
}

#[tokio::test]
async fn robots_body_is_capped_and_binary_allows_all() {
    let mut huge = b"User-agent: *\nDisallow: /early\n".to_vec();
    huge.resize(2 << 20, b'#');
    let binary: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    let server = Server::start(move |r| match r.host.as_str() {
        "site-a.test" => Reply::ok("").body(huge.clone()),
        _ => Reply::ok("").body(binary.clone()),
    })
    .await;
    let f = fetcher(&server);
    let p = polite(Duration::ZERO);
    let big = f
        .robots(&url("http://site-a.test/"), &p, "site-a.test")
        .await
        .unwrap();
    assert_eq!(big.export().body.len() as u64, ROBOTS_MAX_BYTES);
    assert!(!big.allowed(&url("http://site-a.test/early")));
    let bin = f
        .robots(&url("http://site-b.test/"), &p, "site-b.test")
        .await
        .unwrap();
    assert!(bin.allowed(&url("http://site-b.test/anything")));
}

#[tokio::test]
async fn concurrent_robots_lookups_fetch_once() {
    let server = Server::start(|_| Reply::ok("User-agent: *\nDisallow: /x\n").wait(50 * MS)).await;
    let f = fetcher(&server);
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let f = f.clone();
            tokio::spawn(async move {
                f.robots_counted(
                    &url("http://site-a.test/"),
                    &polite(Duration::ZERO),
                    "site-a.test",
                )
                .await
                .unwrap()
                .requests
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 1);
    assert_eq!(server.hits_on("site-a.test", "/robots.txt").len(), 1);
}

#[tokio::test]
async fn robots_export_and_import_skip_the_network() {
    let server =
        Server::start(|_| Reply::ok("User-agent: *\nDisallow: /x\nCrawl-delay: 1\n")).await;
    let p = polite(Duration::ZERO);
    let page = url("http://site-a.test/");
    let a = fetcher(&server);
    let record = a.robots(&page, &p, "site-a.test").await.unwrap().export();
    assert_eq!(a.robots_records(), vec![record.clone()]);

    let b = fetcher(&server);
    assert!(b.import_robots(record.clone()));
    let got = b.robots_counted(&page, &p, "site-a.test").await.unwrap();
    assert_eq!(got.requests, 0);
    assert!(!got.rules.allowed(&url("http://site-a.test/x")));
    assert_eq!(got.rules.crawl_delay(), Some(Duration::from_secs(1)));
    assert_eq!(server.hits().len(), 1, "the import must save the fetch");

    // A stale record is fetched again.
    let stale = RobotsRecord {
        fetched_at_ms: record.fetched_at_ms - ROBOTS_TTL.as_millis() as u64 - 1,
        ..record
    };
    let c = fetcher(&server);
    c.import_robots(stale);
    assert_eq!(
        c.robots_counted(&page, &p, "site-a.test")
            .await
            .unwrap()
            .requests,
        1
    );
}

#[test]
fn retry_after_parses_seconds_and_dates() {
    let now = SystemTime::now();
    assert_eq!(
        parse_retry_after(" 120 ", now),
        Some(Duration::from_secs(120))
    );
    assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
    let date = httpdate::fmt_http_date(now + Duration::from_secs(90));
    let d = parse_retry_after(&date, now).unwrap();
    assert!(
        d > Duration::from_secs(88) && d <= Duration::from_secs(90),
        "{d:?}"
    );
    let past = httpdate::fmt_http_date(now - Duration::from_secs(90));
    assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
    assert_eq!(parse_retry_after("soon", now), None);
    assert_eq!(parse_retry_after("-5", now), None);
}

#[test]
fn default_config_matches_the_design() {
    let c = FetchConfig::default();
    assert!(!c.allow_private);
    assert_eq!(c.connect_timeout, Duration::from_secs(10));
    assert_eq!(c.read_timeout, Duration::from_secs(30));
    assert_eq!(c.total_timeout, Duration::from_secs(600));
    assert_eq!(c.max_header_bytes, 64 * 1024);
    assert_eq!(c.max_backoff, Duration::from_secs(600));
}
