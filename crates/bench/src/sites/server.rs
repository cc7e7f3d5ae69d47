//! The loopback HTTP server: several [`Site`]s behind one random port, chosen
//! by the `Host` header, with a log of every request it answered.
//!
//! Tests assert on the log, not on the crawler's own account: which URLs were
//! requested, how often, how far apart, how many at once per host.

use anyhow::{bail, Context, Result};
use axum::body::Body as AxumBody;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use bytes::Bytes;
use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use url::Url;

/// A website served by [`SiteServer`] and walked by the ground truth.
///
/// `respond` runs on the server's async workers: it must be quick (build the
/// page, read a small file). Slow or huge answers are expressed in the
/// response instead ([`SiteResponse::delay`], [`Body::Stream`]).
pub trait Site: Send + Sync {
    fn respond(&self, req: &SiteRequest) -> SiteResponse;

    /// Whether a URL path (with query) belongs to an infinite link space — a
    /// crawler trap. Only the ground-truth walk asks: it counts links into a
    /// trap but does not enumerate it, so the trap never inflates the site's
    /// reachable pages. The server serves trap pages like any other.
    fn is_trap(&self, _path_and_query: &str) -> bool {
        false
    }
}

/// One request as a [`Site`] sees it.
#[derive(Clone, Debug)]
pub struct SiteRequest {
    pub method: Method,
    /// Host name without port, lower-case.
    pub host: String,
    /// Path as sent, still percent-encoded, starting with `/`.
    pub path: String,
    /// Query string as sent, without `?`.
    pub query: Option<String>,
    pub headers: HeaderMap,
}

impl SiteRequest {
    /// A GET of `path_and_query` (e.g. `/a/b?x=1`) on `host`, with no headers.
    pub fn get(host: &str, path_and_query: &str) -> Self {
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q.to_string())),
            None => (path_and_query, None),
        };
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        SiteRequest {
            method: Method::GET,
            host: host.to_ascii_lowercase(),
            path,
            query,
            headers: HeaderMap::new(),
        }
    }

    /// The same request with another method.
    pub fn with_method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// `path?query`, as it appeared in the request line.
    pub fn path_and_query(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{}", self.path, q),
            None => self.path.clone(),
        }
    }

    pub fn is_head(&self) -> bool {
        self.method == Method::HEAD
    }

    /// Decoded `key=value` pairs of the query string, in order.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        match &self.query {
            Some(q) => url::form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Whether `Accept-Encoding` lists gzip.
    pub fn accepts_gzip(&self) -> bool {
        self.headers
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|e| e.trim().starts_with("gzip")))
    }
}

/// What a [`Site`] answers.
pub struct SiteResponse {
    pub status: StatusCode,
    /// Headers as sent. `Content-Length` is added from the body when known.
    pub headers: HeaderMap,
    pub body: Body,
    /// Wait this long before sending the status line (slow servers).
    pub delay: Option<Duration>,
}

impl fmt::Debug for SiteResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SiteResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body_len", &self.body.len())
            .field("delay", &self.delay)
            .finish()
    }
}

impl SiteResponse {
    /// A response with no headers and no body.
    pub fn new(status: StatusCode) -> Self {
        SiteResponse {
            status,
            headers: HeaderMap::new(),
            body: Body::Empty,
            delay: None,
        }
    }

    /// `200 OK` with a content type and a body.
    pub fn ok(content_type: &'static str, body: impl Into<Bytes>) -> Self {
        SiteResponse::new(StatusCode::OK)
            .with_header(header::CONTENT_TYPE, HeaderValue::from_static(content_type))
            .with_body(Body::Bytes(body.into()))
    }

    /// `200 OK` HTML page.
    pub fn html(body: impl Into<Bytes>) -> Self {
        SiteResponse::ok("text/html; charset=utf-8", body)
    }

    /// An error status with a short HTML body naming it.
    pub fn error(status: StatusCode) -> Self {
        let reason = status.canonical_reason().unwrap_or("Error");
        let body = format!(
            "<!DOCTYPE html>\n<html><head><title>{code} {reason}</title></head>\
             <body><h1>{code} {reason}</h1></body></html>\n",
            code = status.as_u16()
        );
        SiteResponse::new(status)
            .with_header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            )
            .with_body(Body::Bytes(body.into()))
    }

    pub fn not_found() -> Self {
        SiteResponse::error(StatusCode::NOT_FOUND)
    }

    /// A redirect to `location` (absolute or relative, sent as given).
    /// A location that cannot be a header value becomes a 500, since it is a
    /// bug of the site, not something to send.
    pub fn redirect(status: StatusCode, location: &str) -> Self {
        match HeaderValue::from_str(location) {
            Ok(v) => SiteResponse::error(status).with_header(header::LOCATION, v),
            Err(_) => SiteResponse::error(StatusCode::INTERNAL_SERVER_ERROR),
        }
    }

    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    pub fn with_body(mut self, body: Body) -> Self {
        self.body = body;
        self
    }

    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// The `Content-Type` header, if it is valid text.
    pub fn content_type(&self) -> Option<&str> {
        self.header_str(header::CONTENT_TYPE)
    }

    /// The `Location` header, if it is valid text.
    pub fn location(&self) -> Option<&str> {
        self.header_str(header::LOCATION)
    }

    pub fn header_str(&self, name: HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A response body.
pub enum Body {
    Empty,
    Bytes(Bytes),
    /// Generated chunk by chunk, so huge or slow bodies cost no memory.
    Stream(StreamBody),
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Body::Empty => f.write_str("Body::Empty"),
            Body::Bytes(b) => write!(f, "Body::Bytes({} bytes)", b.len()),
            Body::Stream(s) => write!(f, "Body::Stream(length {:?})", s.length),
        }
    }
}

/// A body produced by a [`ChunkSource`].
pub struct StreamBody {
    /// Sent as `Content-Length` when known; `None` means chunked encoding.
    /// A source that yields a different number of bytes makes the server
    /// abort the connection (a way to test truncated responses).
    pub length: Option<u64>,
    pub source: Box<dyn ChunkSource>,
}

/// Produces a streamed body, one step at a time.
pub trait ChunkSource: Send + 'static {
    /// The next step, or `None` at the end of the body.
    fn next_chunk(&mut self) -> Option<Chunk>;
}

/// One step of a streamed body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chunk {
    Data(Bytes),
    /// Send nothing for this long (the in-memory walk skips pauses).
    Pause(Duration),
    /// Cut the connection here.
    Abort,
}

/// What [`Body::read_capped`] read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyRead {
    pub bytes: Vec<u8>,
    /// The body had more than the cap.
    pub truncated: bool,
    /// The stream ended with [`Chunk::Abort`].
    pub aborted: bool,
}

impl Body {
    /// Exact length, when known before sending.
    pub fn len(&self) -> Option<u64> {
        match self {
            Body::Empty => Some(0),
            Body::Bytes(b) => Some(b.len() as u64),
            Body::Stream(s) => s.length,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    pub fn stream(length: Option<u64>, source: impl ChunkSource) -> Body {
        Body::Stream(StreamBody {
            length,
            source: Box::new(source),
        })
    }

    /// Read in memory up to `cap` bytes, skipping pauses (for in-memory walks).
    pub fn read_capped(self, cap: usize) -> BodyRead {
        let mut out = BodyRead {
            bytes: Vec::new(),
            truncated: false,
            aborted: false,
        };
        let take = |data: &[u8], out: &mut BodyRead| {
            let room = cap.saturating_sub(out.bytes.len());
            if data.len() > room {
                out.truncated = true;
            }
            out.bytes.extend_from_slice(&data[..data.len().min(room)]);
        };
        match self {
            Body::Empty => {}
            Body::Bytes(b) => take(&b, &mut out),
            Body::Stream(mut s) => {
                while let Some(chunk) = s.source.next_chunk() {
                    match chunk {
                        Chunk::Data(d) => take(&d, &mut out),
                        Chunk::Pause(_) => {}
                        Chunk::Abort => {
                            out.aborted = true;
                            break;
                        }
                    }
                    if out.truncated {
                        break;
                    }
                }
            }
        }
        out
    }
}

/// One request the server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// Host name from the `Host` header, without port, lower-case.
    pub host: String,
    pub method: Method,
    pub path_and_query: String,
    pub status: u16,
    /// When the request reached the server.
    pub at: Instant,
    /// When the response body was finished or dropped (`None` while sending).
    pub done: Option<Instant>,
    /// Body bytes actually handed to the connection.
    pub bytes: u64,
    /// The answer's `Content-Type`, as the site set it: what tells HTML from
    /// the rest when the bench counts the MiB of HTML a crawler fetched.
    pub content_type: Option<String>,
    pub user_agent: Option<String>,
    /// The request's `If-None-Match`: a conditional revisit names the ETag it holds.
    pub if_none_match: Option<String>,
}

/// Load seen by one host so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostLoad {
    pub requests: u64,
    /// Requests whose response is still being sent.
    pub in_flight: usize,
    /// The most requests ever in flight at once.
    pub max_in_flight: usize,
}

/// Smallest gap between the starts of two consecutive requests to `host` in
/// `records` (`None` with fewer than two requests).
pub fn min_start_gap(records: &[RequestRecord], host: &str) -> Option<Duration> {
    let mut starts: Vec<Instant> = records
        .iter()
        .filter(|r| r.host == host)
        .map(|r| r.at)
        .collect();
    starts.sort();
    starts.windows(2).map(|w| w[1] - w[0]).min()
}

/// How many times each `path?query` of `host` was requested with `method`.
pub fn request_counts(
    records: &[RequestRecord],
    host: &str,
    method: &Method,
) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for r in records
        .iter()
        .filter(|r| r.host == host && r.method == *method)
    {
        *counts.entry(r.path_and_query.clone()).or_insert(0) += 1;
    }
    counts
}

#[derive(Default)]
struct LogState {
    records: Vec<RequestRecord>,
    hosts: HashMap<String, HostLoad>,
}

struct Shared {
    sites: HashMap<String, Arc<dyn Site>>,
    state: Mutex<LogState>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, LogState> {
        // A panic while holding the lock cannot leave the log inconsistent
        // (every update is a single push or counter change): keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Marks one request in flight; on drop records the bytes sent and the end.
struct InFlight {
    shared: Arc<Shared>,
    host: String,
    record: Option<usize>,
    sent: u64,
}

impl InFlight {
    fn begin(shared: &Arc<Shared>, host: &str) -> Self {
        let mut st = shared.state();
        let load = st.hosts.entry(host.to_string()).or_default();
        load.requests += 1;
        load.in_flight += 1;
        load.max_in_flight = load.max_in_flight.max(load.in_flight);
        InFlight {
            shared: Arc::clone(shared),
            host: host.to_string(),
            record: None,
            sent: 0,
        }
    }

    fn record(&mut self, rec: RequestRecord) {
        let mut st = self.shared.state();
        st.records.push(rec);
        self.record = Some(st.records.len() - 1);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut st = self.shared.state();
        if let Some(load) = st.hosts.get_mut(&self.host) {
            load.in_flight = load.in_flight.saturating_sub(1);
        }
        if let Some(rec) = self.record.and_then(|i| st.records.get_mut(i)) {
            rec.bytes = self.sent;
            rec.done = Some(Instant::now());
        }
    }
}

/// An in-process HTTP/1.1 server on 127.0.0.1 serving several sites.
pub struct SiteServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

/// How long [`SiteServer::shutdown`] waits for open responses to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

impl SiteServer {
    /// Bind a random port on 127.0.0.1 and serve `sites`, each under its host
    /// name (e.g. `site-a.test`; lower-cased, no port). Must be called inside
    /// a tokio runtime; the server runs on it until [`SiteServer::shutdown`]
    /// or drop.
    pub async fn start(sites: Vec<(String, Arc<dyn Site>)>) -> Result<SiteServer> {
        let mut map: HashMap<String, Arc<dyn Site>> = HashMap::new();
        for (host, site) in sites {
            let host = host.to_ascii_lowercase();
            if host.is_empty() || host.contains([':', '/', ' ', '?', '#', '@']) {
                bail!("invalid site host name {host:?}: expected a bare host like site-a.test");
            }
            Url::parse(&format!("http://{host}/"))
                .with_context(|| format!("site host name {host:?} is not a valid URL host"))?;
            if map.insert(host.clone(), site).is_some() {
                bail!("site host name {host:?} given twice");
            }
        }
        let shared = Arc::new(Shared {
            sites: map,
            state: Mutex::new(LogState::default()),
        });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .context("binding the site server to 127.0.0.1")?;
        let addr = listener
            .local_addr()
            .context("reading the site server's address")?;
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    // A dropped sender also means stop.
                    let _ = stopped.await;
                })
                .await
        });
        Ok(SiteServer {
            addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The served host names, sorted.
    pub fn hosts(&self) -> Vec<String> {
        let mut h: Vec<String> = self.shared.sites.keys().cloned().collect();
        h.sort();
        h
    }

    /// `http://HOST:PORT/` — map HOST to [`SiteServer::addr`] in the client.
    pub fn url_for(&self, host: &str) -> Result<Url> {
        Url::parse(&format!("http://{}:{}/", host, self.addr.port()))
            .with_context(|| format!("no URL for host {host:?}"))
    }

    /// Every request answered so far, in arrival order.
    pub fn log(&self) -> Vec<RequestRecord> {
        self.shared.state().records.clone()
    }

    /// Forget the log (per-host maxima are reset too; in-flight counts stay).
    pub fn clear_log(&self) {
        let mut st = self.shared.state();
        st.records.clear();
        for load in st.hosts.values_mut() {
            load.requests = 0;
            load.max_in_flight = load.in_flight;
        }
    }

    /// Load seen by `host` (requests for unknown hosts are counted too).
    pub fn host_load(&self, host: &str) -> HostLoad {
        self.shared
            .state()
            .hosts
            .get(&host.to_ascii_lowercase())
            .copied()
            .unwrap_or_default()
    }

    /// The most requests ever in flight at once for `host`.
    pub fn max_in_flight(&self, host: &str) -> usize {
        self.host_load(host).max_in_flight
    }

    /// Stop accepting, let open responses finish (up to a few seconds), stop.
    pub async fn shutdown(mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Some(mut task) = self.task.take() else {
            return Ok(());
        };
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await {
            Ok(joined) => joined
                .context("site server task failed")?
                .context("site server stopped with an error"),
            Err(_) => {
                // A client keeping a slow response open must not hang the test.
                task.abort();
                Ok(())
            }
        }
    }
}

impl Drop for SiteServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Host name of a request: `Host` header (or the URI's authority), no port.
fn request_host(req: &Request) -> String {
    let raw = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().host().map(str::to_string))
        .unwrap_or_default();
    strip_port(&raw).to_ascii_lowercase()
}

fn strip_port(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        // IPv6 literal: keep the brackets' content.
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.split(':').next().unwrap_or(authority)
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let at = Instant::now();
    let host = request_host(&req);
    let site_req = SiteRequest {
        method: req.method().clone(),
        host: host.clone(),
        path: req.uri().path().to_string(),
        query: req.uri().query().map(str::to_string),
        headers: req.headers().clone(),
    };
    let mut flight = InFlight::begin(&shared, &host);
    let resp = match shared.sites.get(&host) {
        Some(site) => conditional(site.respond(&site_req), &site_req.headers),
        None => SiteResponse::error(StatusCode::MISDIRECTED_REQUEST),
    };
    flight.record(RequestRecord {
        host,
        method: site_req.method.clone(),
        path_and_query: site_req.path_and_query(),
        status: resp.status.as_u16(),
        at,
        done: None,
        bytes: 0,
        content_type: resp.content_type().map(str::to_string),
        user_agent: site_req
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        if_none_match: site_req
            .headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    });
    if let Some(delay) = resp.delay {
        tokio::time::sleep(delay).await;
    }
    into_http(resp, site_req.is_head(), flight)
}

/// Every 200 answer with its body in memory gets a strong ETag (a digest of
/// the body) unless the site set one, and a request whose `If-None-Match`
/// names it gets 304 Not Modified without a body (RFC 9110 §13.1.2), as a
/// web server serving files does: what a continuous job's revisits meet.
fn conditional(mut resp: SiteResponse, request: &HeaderMap) -> SiteResponse {
    if resp.status != StatusCode::OK {
        return resp;
    }
    if !resp.headers.contains_key(header::ETAG) {
        let Body::Bytes(body) = &resp.body else {
            return resp;
        };
        use sha2::Digest;
        let digest = sha2::Sha256::digest(body);
        let tag = format!("\"{}\"", hex::encode(&digest[..12]));
        if let Ok(v) = HeaderValue::from_str(&tag) {
            resp.headers.insert(header::ETAG, v);
        }
    }
    let Some(etag) = resp.header_str(header::ETAG).map(str::to_string) else {
        return resp;
    };
    let asked = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Weak comparison (§13.1.2): `W/` prefixes do not matter.
    let strip = |t: &str| t.trim().trim_start_matches("W/").to_string();
    let matches = asked.trim() == "*" || asked.split(',').any(|t| strip(t) == strip(&etag));
    if !asked.is_empty() && matches {
        let mut not_modified = SiteResponse::new(StatusCode::NOT_MODIFIED);
        if let Ok(v) = HeaderValue::from_str(&etag) {
            not_modified.headers.insert(header::ETAG, v);
        }
        return not_modified;
    }
    resp
}

/// Build the HTTP response; the body stream owns `flight` so the request
/// stays "in flight" until its body is sent or dropped.
fn into_http(resp: SiteResponse, head: bool, flight: InFlight) -> Response {
    let SiteResponse {
        status,
        mut headers,
        body,
        ..
    } = resp;
    if let Some(len) = body.len() {
        headers
            .entry(header::CONTENT_LENGTH)
            .or_insert_with(|| HeaderValue::from(len));
    }
    let body = if head {
        drop(flight);
        AxumBody::empty()
    } else {
        let source = match body {
            Body::Empty => BodySource::Done,
            Body::Bytes(b) => BodySource::Once(b),
            Body::Stream(s) => BodySource::Chunks(s.source),
        };
        let state = Streaming { flight, source };
        AxumBody::from_stream(futures_util::stream::unfold(state, next_frame))
    };
    let mut out = Response::new(body);
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}

enum BodySource {
    Once(Bytes),
    Chunks(Box<dyn ChunkSource>),
    Done,
}

struct Streaming {
    flight: InFlight,
    source: BodySource,
}

async fn next_frame(mut st: Streaming) -> Option<(std::io::Result<Bytes>, Streaming)> {
    loop {
        let step = match &mut st.source {
            BodySource::Done => None,
            BodySource::Once(_) => match std::mem::replace(&mut st.source, BodySource::Done) {
                BodySource::Once(b) => Some(Chunk::Data(b)),
                _ => None,
            },
            BodySource::Chunks(src) => src.next_chunk(),
        };
        match step {
            None => return None,
            Some(Chunk::Data(b)) if b.is_empty() => continue,
            Some(Chunk::Data(b)) => {
                st.flight.sent += b.len() as u64;
                return Some((Ok(b), st));
            }
            Some(Chunk::Pause(d)) => tokio::time::sleep(d).await,
            Some(Chunk::Abort) => {
                st.source = BodySource::Done;
                return Some((Err(std::io::Error::other("body aborted by the site")), st));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Answers `/slow` after a pause mid-body, `/abort` with a cut body,
    /// `/r` with a redirect and everything else with a small page.
    struct Echo;

    struct Slow(u8);
    impl ChunkSource for Slow {
        fn next_chunk(&mut self) -> Option<Chunk> {
            self.0 += 1;
            match self.0 {
                1 => Some(Chunk::Data(Bytes::from_static(b"first "))),
                2 => Some(Chunk::Pause(Duration::from_millis(150))),
                3 => Some(Chunk::Data(Bytes::from_static(b"second"))),
                _ => None,
            }
        }
    }

    struct Cut(bool);
    impl ChunkSource for Cut {
        fn next_chunk(&mut self) -> Option<Chunk> {
            if self.0 {
                return Some(Chunk::Abort);
            }
            self.0 = true;
            Some(Chunk::Data(Bytes::from_static(b"partial")))
        }
    }

    impl Site for Echo {
        fn respond(&self, req: &SiteRequest) -> SiteResponse {
            match req.path.as_str() {
                "/slow" => {
                    SiteResponse::new(StatusCode::OK).with_body(Body::stream(Some(12), Slow(0)))
                }
                "/abort" => {
                    SiteResponse::new(StatusCode::OK).with_body(Body::stream(Some(100), Cut(false)))
                }
                "/r" => SiteResponse::redirect(StatusCode::MOVED_PERMANENTLY, "/target"),
                _ => SiteResponse::html(format!("<p>{} {}</p>", req.host, req.path_and_query())),
            }
        }
    }

    fn client(server: &SiteServer, hosts: &[&str]) -> reqwest::Client {
        let mut b = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none());
        for h in hosts {
            b = b.resolve(h, server.addr());
        }
        b.build().unwrap()
    }

    async fn two_sites() -> SiteServer {
        SiteServer::start(vec![
            ("a.test".to_string(), Arc::new(Echo) as Arc<dyn Site>),
            ("B.test".to_string(), Arc::new(Echo) as Arc<dyn Site>),
        ])
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn dispatches_by_host_and_logs() {
        let server = two_sites().await;
        let c = client(&server, &["a.test", "b.test", "c.test"]);
        let a = server.url_for("a.test").unwrap().join("x?y=1").unwrap();
        let body = c.get(a).send().await.unwrap().text().await.unwrap();
        assert_eq!(body, "<p>a.test /x?y=1</p>");
        let b = server.url_for("b.test").unwrap().join("z").unwrap();
        assert_eq!(
            c.get(b).send().await.unwrap().text().await.unwrap(),
            "<p>b.test /z</p>"
        );
        let unknown = server.url_for("c.test").unwrap();
        assert_eq!(c.get(unknown).send().await.unwrap().status(), 421);
        let log = server.log();
        assert_eq!(log.len(), 3);
        assert_eq!(log[0].host, "a.test");
        assert_eq!(log[0].path_and_query, "/x?y=1");
        assert_eq!(log[0].bytes, 20);
        assert!(log[0].done.is_some());
        assert_eq!(log[1].host, "b.test");
        assert_eq!(log[2].status, 421);
        assert_eq!(server.host_load("a.test").requests, 1);
        assert_eq!(server.max_in_flight("a.test"), 1);
        assert_eq!(server.hosts(), vec!["a.test", "b.test"]);
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn head_has_length_but_no_body_and_redirects_are_not_followed() {
        let server = two_sites().await;
        let c = client(&server, &["a.test"]);
        let url = server.url_for("a.test").unwrap().join("page").unwrap();
        let head = c.head(url).send().await.unwrap();
        assert_eq!(head.status(), 200);
        assert_eq!(head.headers()["content-length"], "19");
        assert_eq!(head.bytes().await.unwrap().len(), 0);
        let r = c
            .get(server.url_for("a.test").unwrap().join("r").unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 301);
        assert_eq!(r.headers()["location"], "/target");
        let log = server.log();
        assert_eq!(log[0].method, Method::HEAD);
        assert_eq!(log[0].bytes, 0);
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn streams_slow_bodies_and_tracks_concurrency() {
        let server = two_sites().await;
        let c = client(&server, &["a.test"]);
        let url = server.url_for("a.test").unwrap().join("slow").unwrap();
        let (r1, r2) = tokio::join!(c.get(url.clone()).send(), c.get(url).send());
        let (t1, t2) = (
            r1.unwrap().text().await.unwrap(),
            r2.unwrap().text().await.unwrap(),
        );
        assert_eq!(t1, "first second");
        assert_eq!(t2, t1);
        assert_eq!(server.max_in_flight("a.test"), 2);
        let log = server.log();
        assert!(log.iter().all(|r| r.bytes == 12));
        assert!(log
            .iter()
            .all(|r| r.done.unwrap() - r.at >= Duration::from_millis(150)));
        assert_eq!(server.host_load("a.test").in_flight, 0);
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn aborted_body_is_an_error_for_the_client() {
        let server = two_sites().await;
        let c = client(&server, &["a.test"]);
        let url = server.url_for("a.test").unwrap().join("abort").unwrap();
        // hyper may not have flushed the headers before the cut: either the
        // request or the body read must fail, never a silent short body.
        match c.get(url).send().await {
            Err(_) => {}
            Ok(resp) => assert!(resp.bytes().await.is_err()),
        }
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn raw_head_request_reports_the_get_length() {
        let server = two_sites().await;
        let addr = server.addr();
        let raw = tokio::task::spawn_blocking(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"HEAD /abc HTTP/1.1\r\nHost: a.test:1\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        })
        .await
        .unwrap();
        assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
        assert!(
            raw.to_ascii_lowercase().contains("content-length: 18"),
            "{raw}"
        );
        assert!(raw.ends_with("\r\n\r\n"), "HEAD must carry no body: {raw}");
        server.shutdown().await.unwrap();
    }

    #[test]
    fn gaps_and_counts_from_a_log() {
        let t0 = Instant::now();
        let rec = |host: &str, path: &str, ms: u64| RequestRecord {
            host: host.into(),
            method: Method::GET,
            path_and_query: path.into(),
            status: 200,
            at: t0 + Duration::from_millis(ms),
            done: None,
            bytes: 0,
            content_type: None,
            user_agent: None,
            if_none_match: None,
        };
        let log = vec![
            rec("a", "/", 0),
            rec("b", "/", 5),
            rec("a", "/x", 300),
            rec("a", "/x", 100),
        ];
        assert_eq!(min_start_gap(&log, "a"), Some(Duration::from_millis(100)));
        assert_eq!(min_start_gap(&log, "b"), None);
        let counts = request_counts(&log, "a", &Method::GET);
        assert_eq!(counts["/x"], 2);
        assert_eq!(counts["/"], 1);
    }

    #[test]
    fn read_capped_truncates_and_skips_pauses() {
        let read = Body::stream(None, Slow(0)).read_capped(8);
        assert_eq!(read.bytes, b"first se");
        assert!(read.truncated);
        let whole = Body::stream(None, Slow(0)).read_capped(100);
        assert_eq!(whole.bytes, b"first second");
        assert!(!whole.truncated && !whole.aborted);
        assert!(Body::stream(None, Cut(false)).read_capped(100).aborted);
    }

    #[test]
    fn request_helpers() {
        let mut r = SiteRequest::get("A.test", "/p?x=1&y=a%20b");
        assert_eq!(r.host, "a.test");
        assert_eq!(r.path, "/p");
        assert_eq!(r.path_and_query(), "/p?x=1&y=a%20b");
        assert_eq!(r.query_pairs()[1], ("y".to_string(), "a b".to_string()));
        assert!(!r.accepts_gzip());
        r.headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("br, gzip;q=0.5"),
        );
        assert!(r.accepts_gzip());
        assert_eq!(strip_port("[::1]:80"), "::1");
        assert_eq!(strip_port("x.test:8080"), "x.test");
    }
}
