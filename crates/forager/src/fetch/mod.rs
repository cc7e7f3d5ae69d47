//! HTTP for every job: one shared reqwest client, per-host politeness,
//! robots.txt, size and time caps, and the SSRF guard.
//!
//! Owns: the network. [`Fetcher::send`] performs exactly one exchange (no
//! automatic redirects: the engine follows `Location` by hand and checks each
//! hop), waiting for the host's turn first: one request in flight per host
//! key, at least the politeness delay between two request starts (a governor
//! limiter per host), Retry-After blocks and exponential back-off on repeated
//! failures. [`Fetcher::robots`] fetches, caches and parses robots.txt.
//! Bodies arrive decompressed and every cap counts decompressed bytes —
//! except at URLs naming a compressed file (`.gz`, `.tgz`, `.br`, `.zst`…):
//! those are asked for with `Accept-Encoding: identity` through a client that
//! decodes nothing, so the file saved is the one the URL denotes, even from a
//! server that labels its `.gz` files `Content-Encoding: gzip`.
//!
//! Must not touch: learning, the store (robots records are *exported* for it
//! to persist), or crawl decisions — which links to follow, scope and
//! robots verdicts on links are the engine's.

mod error;
mod host;
mod robots;
mod ssrf;

#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use reqwest::header::{
    HeaderMap, HeaderValue, ACCEPT, ACCEPT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION,
    RETRY_AFTER, USER_AGENT,
};
use url::{Host, Url};

use crate::exchange::{ExchangeHead, HttpHead};
use forager_core::http_options::{redacted_proxy, CaFile, HttpOptions};
use forager_core::politeness::{AdaptiveDelay, BackoffPolicy};

pub use error::{FetchError, TimeoutPhase};
pub use robots::{
    agent_token, origin_key, RobotsRecord, RobotsRules, RobotsStatus, ROBOTS_FIRST_RETRY,
    ROBOTS_MAX_BYTES, ROBOTS_MAX_REDIRECTS, ROBOTS_RETRY_AFTER_ERROR, ROBOTS_TTL,
};
pub use ssrf::is_forbidden_ip;

use error::{error_chain, find_in_chain, tls_failure, tls_hint};
use host::{HostSlot, HostTable, Outcome};
use robots::{robots_url, RobotsCache};
use ssrf::{ForbiddenAddress, GuardedResolver};

/// A robots.txt Crawl-delay is clamped to at most this.
pub const MAX_ROBOTS_CRAWL_DELAY: Duration = Duration::from_secs(60);
/// A host with no request for this long is forgotten (once quiet).
const HOST_IDLE_TTL: Duration = Duration::from_secs(3600);
/// Hosts tracked at most (least recently used quiet ones are dropped beyond).
const MAX_HOSTS: usize = 65_536;
/// Largest first allocation for a body, whatever Content-Length claims.
const MAX_PREALLOC: usize = 1024 * 1024;
/// The Accept value reqwest's client adds by default, set explicitly so the
/// recorded request is the one sent (an explicit value stops the default).
const ACCEPT_VALUE: &str = "*/*";
/// The Accept-Encoding value reqwest's decompression layer (tower-http, with
/// gzip, brotli, zstd and deflate on) would add; set explicitly for the same
/// reason. Decompression does not depend on who set the header.
const ACCEPT_ENCODING_VALUE: &str = "zstd,gzip,deflate,br";
/// Last-segment extensions of compressed files, fetched as sent (see the module doc).
const COMPRESSED_FILE_EXTENSIONS: &[&str] = &["gz", "tgz", "gzip", "br", "zst", "zstd", "z"];

/// Settings of the shared fetcher (daemon-wide, not per job).
#[derive(Clone, Debug)]
pub struct FetchConfig {
    /// Allow loopback, private and other reserved destinations (tests, bench, demo).
    pub allow_private: bool,
    /// Host-name overrides (e.g. `site-a.test` → `127.0.0.1:PORT`); trusted by the SSRF guard.
    /// A port in the URL wins over the port given here.
    pub resolve: Vec<(String, SocketAddr)>,
    /// TCP + TLS connection set-up.
    pub connect_timeout: Duration,
    /// Longest gap between two body chunks (and budget for the response head after connecting).
    pub read_timeout: Duration,
    /// Whole exchange, head and body.
    pub total_timeout: Duration,
    /// Response head larger than this is refused.
    pub max_header_bytes: usize,
    /// Longest Retry-After block or back-off of a host.
    pub max_backoff: Duration,
    /// With `[cluster]`: every request also takes a pacing reservation of
    /// its politeness key in the cluster's database, so the delay holds
    /// between the requests of all nodes, not only this one's.
    pub pacer: Option<ClusterPacer>,
}

/// The cluster's pacing ([`forager_cluster::Cluster::pace`]) as the fetcher uses it.
#[derive(Clone)]
pub struct ClusterPacer(pub forager_cluster::Cluster);

impl std::fmt::Debug for ClusterPacer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterPacer(node {})", self.0.node())
    }
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            allow_private: false,
            resolve: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(600),
            max_header_bytes: 64 * 1024,
            max_backoff: Duration::from_secs(600),
            pacer: None,
        }
    }
}

/// The politeness settings of the job making a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Politeness {
    /// Minimum gap between two request starts to one host; zero = none.
    pub delay: Duration,
    /// Obey robots.txt, including its Crawl-delay.
    pub robots: bool,
    /// Sent on every request; its product token selects the robots.txt group.
    pub user_agent: String,
    /// The crawl run asking ([`Fetcher::new_run`]): a host is paced by the
    /// strictest delay among the runs using it now, and a run's claim goes
    /// with [`Fetcher::end_run`].
    pub run: u64,
    /// Extra headers, per-host credentials, the proxy and the extra trusted
    /// roots of the job.
    pub http: Arc<HttpOptions>,
    /// The job's adaptive delay (`[politeness] adaptive_delay`), if any.
    pub adaptive: Option<AdaptiveDelay>,
    /// How the job backs off an origin that keeps failing.
    pub backoff: BackoffPolicy,
}

impl Default for Politeness {
    /// No delay, robots.txt obeyed, the default user agent, no run, nothing
    /// added to requests, no adaptive delay, the default back-off.
    fn default() -> Self {
        Politeness {
            delay: Duration::ZERO,
            robots: true,
            user_agent: forager_core::config::DEFAULT_USER_AGENT.to_string(),
            run: 0,
            http: Arc::default(),
            adaptive: None,
            backoff: BackoffPolicy::default(),
        }
    }
}

/// The HTTP methods a crawler needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Fetch the resource.
    Get,
    /// Learn its type and size without the body.
    Head,
}

impl From<Method> for reqwest::Method {
    fn from(m: Method) -> Self {
        match m {
            Method::Get => reqwest::Method::GET,
            Method::Head => reqwest::Method::HEAD,
        }
    }
}

/// A body read up to a cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// The (decompressed) bytes, at most the cap.
    pub bytes: Vec<u8>,
    /// The body was longer than the cap and was cut.
    pub truncated: bool,
}

/// A robots lookup and how many requests it cost (redirect hops included).
#[derive(Clone, Debug)]
pub struct RobotsFetch {
    /// The rules for the job's user agent.
    pub rules: Arc<RobotsRules>,
    /// Requests sent on the network: 0 when served from the cache.
    pub requests: u32,
}

/// The shared fetcher: cheap to clone, one per daemon.
#[derive(Clone)]
pub struct Fetcher {
    inner: Arc<Inner>,
}

/// What sets a route apart: its proxy and the extra roots it trusts.
type RouteKey = (Option<String>, Option<Vec<Vec<u8>>>);

/// The HTTP clients for one route (direct, or through one proxy).
struct Clients {
    client: reqwest::Client,
    /// The same client without decompression, for compressed files.
    raw_client: reqwest::Client,
}

struct Inner {
    direct: Arc<Clients>,
    /// Clients through a proxy or trusting a job's `ca_file`, by the
    /// proxy's URL and the file's certificates; built when a job first asks.
    proxied: std::sync::Mutex<std::collections::HashMap<RouteKey, Arc<Clients>>>,
    /// robots.txt fetches that failed (network error, 5xx, 429, broken
    /// body), since the fetcher was built: a metric.
    robots_failures: std::sync::atomic::AtomicU64,
    cfg: FetchConfig,
    hosts: HostTable,
    robots: RobotsCache,
    /// The next [`Fetcher::new_run`] id (0 is for callers outside a run).
    runs: std::sync::atomic::AtomicU64,
}

impl Clients {
    /// Both clients of a route. A proxy's own host name is trusted by the SSRF
    /// guard (an institutional proxy often has a private address); through a
    /// proxy, target names are resolved by the proxy, so the guard can only
    /// refuse IP-literal targets.
    fn build(
        cfg: &FetchConfig,
        proxy: Option<&Url>,
        ca: Option<&CaFile>,
    ) -> Result<Clients, FetchError> {
        let mut resolver = GuardedResolver::new(&cfg.resolve, cfg.allow_private);
        let proxy = match proxy {
            Some(url) => {
                if let Some(host) = url.host_str() {
                    resolver.trust(host);
                }
                let p = reqwest::Proxy::all(url.as_str()).map_err(|e| {
                    FetchError::Config(format!(
                        "proxy {}: {}",
                        redacted_proxy(url),
                        error_chain(&e)
                    ))
                })?;
                Some(p)
            }
            None => None,
        };
        let resolver = Arc::new(resolver);
        // Checked when the config was read; reqwest checks them again.
        let roots = match ca {
            Some(ca) => ca
                .certificates
                .iter()
                .map(|der| {
                    reqwest::Certificate::from_der(der).map_err(|e| {
                        FetchError::Config(format!("ca_file {}: {}", ca.path, error_chain(&e)))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let builder = || {
            let b = reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .referer(false)
                .connect_timeout(cfg.connect_timeout)
                .pool_idle_timeout(Duration::from_secs(90))
                .pool_max_idle_per_host(2)
                .tcp_keepalive(Duration::from_secs(60))
                .http2_max_header_list_size(u32::try_from(cfg.max_header_bytes).unwrap_or(u32::MAX))
                .dns_resolver(resolver.clone());
            let b = roots
                .iter()
                .fold(b, |b, root| b.add_root_certificate(root.clone()));
            match &proxy {
                Some(p) => b.proxy(p.clone()),
                None => b,
            }
        };
        let built = |b: reqwest::ClientBuilder| {
            b.build().map_err(|e| {
                FetchError::Config(format!("cannot build the HTTP client: {}", error_chain(&e)))
            })
        };
        Ok(Clients {
            client: built(builder())?,
            raw_client: built(builder().no_gzip().no_brotli().no_zstd().no_deflate())?,
        })
    }
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("cfg", &self.inner.cfg)
            .field("hosts", &self.inner.hosts.len())
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// Builds the shared HTTP client (rustls, decompression, no proxy, no
    /// automatic redirects, pooled keep-alive) behind the SSRF-guarded resolver.
    pub fn new(cfg: FetchConfig) -> Result<Fetcher, FetchError> {
        let direct = Arc::new(Clients::build(&cfg, None, None)?);
        Ok(Fetcher {
            inner: Arc::new(Inner {
                direct,
                proxied: std::sync::Mutex::new(std::collections::HashMap::new()),
                cfg,
                hosts: HostTable::new(HOST_IDLE_TTL, MAX_HOSTS),
                robots: RobotsCache::new(),
                runs: std::sync::atomic::AtomicU64::new(1),
                robots_failures: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// The clients for a job: direct, or through its proxy and trusting its
    /// `ca_file` (built once per proxy and set of roots).
    fn clients(&self, http: &HttpOptions) -> Result<Arc<Clients>, FetchError> {
        let (proxy, ca) = (http.proxy.as_ref(), http.ca.as_ref());
        if proxy.is_none() && ca.is_none() {
            return Ok(self.inner.direct.clone());
        }
        let key: RouteKey = (
            proxy.map(Url::to_string),
            ca.map(|ca| ca.certificates.clone()),
        );
        let mut proxied = self.inner.proxied.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = proxied.get(&key) {
            return Ok(c.clone());
        }
        let built = Arc::new(Clients::build(&self.inner.cfg, proxy, ca)?);
        proxied.insert(key, built.clone());
        Ok(built)
    }

    /// How long until a request to `url` under `host_key` could start:
    /// `Some(ZERO)` now, `None` while one is in flight on the key. The
    /// engine asks before it starts a step, so a busy host never holds a
    /// job's other hosts back; [`Fetcher::send`] still enforces both rules.
    pub fn readiness(
        &self,
        url: &Url,
        politeness: &Politeness,
        host_key: &str,
    ) -> Option<Duration> {
        let Some(slot) = self.inner.hosts.get(host_key) else {
            return Some(Duration::ZERO);
        };
        let wanted = self.wanted_period(url, politeness, &slot);
        slot.readiness(wanted, &origin_of(url), Instant::now())
    }

    /// Hold the requests to `url`'s origin back for `wait` (at most the
    /// longest back-off), without counting a failure: what an origin that
    /// cannot be asked now costs, e.g. while its robots.txt is unavailable
    /// and cached as such. The other origins of `host_key` go on.
    pub fn back_off(&self, url: &Url, host_key: &str, wait: Duration) {
        let now = Instant::now();
        let slot = self.inner.hosts.slot(host_key, now);
        let wait = wait.min(self.inner.cfg.max_backoff);
        slot.state().block_origin(&origin_of(url), now + wait, now);
    }

    /// How long `url`'s origin is still held back (Retry-After, back-off of
    /// failures, robots.txt unavailable), whatever the key's delay.
    pub fn origin_blocked(&self, url: &Url, host_key: &str) -> Option<Duration> {
        let slot = self.inner.hosts.get(host_key)?;
        let state = slot.state();
        state.blocked_for(&origin_of(url), Instant::now())
    }

    /// How many fetches in a row found the robots.txt of `url`'s origin
    /// unavailable (0 once it answered, or before it was asked).
    pub fn robots_failures_in_a_row(&self, url: &Url) -> u32 {
        origin_key(url)
            .and_then(|origin| self.inner.robots.peek_record(&origin))
            .filter(|r| r.status == RobotsStatus::Unavailable)
            .map_or(0, |r| r.failures)
    }

    /// robots.txt fetches that failed since the fetcher was built.
    pub fn robots_failures(&self) -> u64 {
        self.inner
            .robots_failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A new crawl run's id, for [`Politeness::run`].
    pub fn new_run(&self) -> u64 {
        self.inner
            .runs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// A run ended: the hosts it used are paced by the runs left.
    pub fn end_run(&self, run: u64) {
        self.inner.hosts.release(run);
    }

    /// The configuration the fetcher was built with.
    pub fn config(&self) -> &FetchConfig {
        &self.inner.cfg
    }

    /// Sends one request once it is `host_key`'s turn, and returns the response
    /// head; the body is read from the [`Response`].
    ///
    /// `host_key` is the politeness key (the host, or the pay-level domain for
    /// scope `any`). The in-flight permit of the host is held by the returned
    /// response until its body is finished or it is dropped: drop a response
    /// before sending the next request to the same host from the same task.
    pub async fn send(
        &self,
        method: Method,
        url: &Url,
        politeness: &Politeness,
        host_key: &str,
    ) -> Result<Response, FetchError> {
        self.send_with(method, url, politeness, host_key, &[]).await
    }

    /// [`Fetcher::send`] with request fields of its own: a revisit's
    /// `If-None-Match` / `If-Modified-Since` (from
    /// [`forager_core::revisit::conditional_headers`]). A value that is not a valid
    /// header value is left out (the request is then unconditional).
    pub async fn send_with(
        &self,
        method: Method,
        url: &Url,
        politeness: &Politeness,
        host_key: &str,
        extra: &[(&'static str, String)],
    ) -> Result<Response, FetchError> {
        validate_url(url)?;
        self.check_ip_literal(url)?;
        let user_agent = HeaderValue::from_str(&politeness.user_agent).map_err(|_| {
            FetchError::Config(format!(
                "user agent {:?} is not a valid header value",
                politeness.user_agent
            ))
        })?;
        let slot = self.inner.hosts.slot(host_key, Instant::now());
        let wanted = self.wanted_period(url, politeness, &slot);
        let origin = origin_of(url);
        let permit = slot.acquire(politeness.run, wanted, &origin).await?;
        let policy = &politeness.backoff;
        if let (Some(pacer), false) = (&self.inner.cfg.pacer, wanted.is_zero()) {
            // After this node's own pacing (which keeps one request per key
            // in flight here, and holds back an origin in back-off): the
            // database orders the nodes.
            if let Err(e) = pacer.0.pace(host_key, wanted).await {
                // Without the database only this node's spacing is known:
                // keep a whole delay more, so that a node that reserved
                // just before the outage is not crowded; the lease keeper
                // stops the job if the database stays away.
                tracing::warn!(node = pacer.0.node(), host = host_key, error = %e,
                    "cluster pacing unavailable: waiting one more delay instead");
                tokio::time::sleep(wanted).await;
            }
        }

        let cfg = &self.inner.cfg;
        let started = tokio::time::Instant::now();
        let deadline = started + cfg.total_timeout;
        let head_budget = cfg.connect_timeout.saturating_add(cfg.read_timeout);
        let (head_limit, head_phase, head_after) = if head_budget < cfg.total_timeout {
            (started + head_budget, TimeoutPhase::Headers, head_budget)
        } else {
            (deadline, TimeoutPhase::Total, cfg.total_timeout)
        };
        let clients = self.clients(&politeness.http)?;
        let (client, accept_encoding) = if names_compressed_file(url) {
            (&clients.raw_client, "identity")
        } else {
            (&clients.client, ACCEPT_ENCODING_VALUE)
        };
        let job_headers: Vec<_> = politeness.http.headers_for(url).collect();
        let mut builder = client
            .request(method.into(), url.clone())
            .header(USER_AGENT, user_agent)
            .header(ACCEPT_ENCODING, HeaderValue::from_static(accept_encoding));
        // A job's own Accept (a linked-data job's content negotiation) replaces the default.
        if !job_headers.iter().any(|(name, _)| *name == ACCEPT) {
            builder = builder.header(ACCEPT, HeaderValue::from_static(ACCEPT_VALUE));
        }
        for (name, value) in job_headers {
            builder = builder.header(name, value.clone());
        }
        for (name, value) in extra {
            if let Ok(value) = HeaderValue::from_str(value) {
                builder = builder.header(*name, value);
            }
        }
        let request = builder.build().map_err(|e| self.map_send_error(url, e))?;
        let request_headers = recorded_request_headers(url, request.headers());
        let sent_at = SystemTime::now();
        let sent = tokio::time::timeout_at(head_limit, client.execute(request)).await;
        // The server has surely seen the request once its answer (or failure) is
        // back: spacing from here keeps the gap the server sees ≥ the delay, even
        // when this request paid for a new connection and the next one does not.
        slot.mark_answered();
        let inner = match sent {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) => {
                let err = self.map_send_error(url, e);
                if err.is_host_failure() {
                    slot.record(Outcome::Failure, &origin, cfg.max_backoff, policy);
                    self.adapt(&slot, politeness, started.elapsed(), false);
                }
                if let FetchError::Forbidden { addr, .. } = &err {
                    tracing::warn!(%url, %addr, "SSRF guard refused a resolved address");
                }
                return Err(err);
            }
            Err(_) => {
                slot.record(Outcome::Failure, &origin, cfg.max_backoff, policy);
                self.adapt(&slot, politeness, started.elapsed(), false);
                return Err(FetchError::Timeout {
                    url: url.to_string(),
                    phase: head_phase,
                    after: head_after,
                });
            }
        };
        let latency = started.elapsed();

        let headers = inner.headers();
        let header_bytes: usize = headers
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum();
        if header_bytes > cfg.max_header_bytes {
            slot.record(Outcome::Failure, &origin, cfg.max_backoff, policy);
            tracing::warn!(%url, header_bytes, "response head over the limit");
            return Err(FetchError::TooManyHeaders {
                url: url.to_string(),
                limit: cfg.max_header_bytes,
            });
        }
        let status = inner.status().as_u16();
        let retry_after = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()))
            .map(|d| d.min(cfg.max_backoff));
        let location = if (300..400).contains(&status) {
            headers
                .get(LOCATION)
                .and_then(|v| url.join(String::from_utf8_lossy(v.as_bytes()).trim()).ok())
        } else {
            None
        };
        let content_type = headers
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let content_length = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());

        let outcome = match (status, retry_after) {
            (429 | 503, Some(wait)) => Outcome::RetryAfter(wait),
            (status, _) if is_page_error(status) => Outcome::ServerError,
            (429 | 500..=599, _) => Outcome::Failure,
            _ => Outcome::Success,
        };
        slot.record(outcome, &origin, cfg.max_backoff, policy);
        self.adapt(&slot, politeness, latency, (200..400).contains(&status));
        if outcome != Outcome::Success {
            tracing::info!(%url, status, host_key, blocked_for = ?slot.state().blocked_for(&origin, Instant::now()), "origin slowed down");
        }

        Ok(Response {
            status,
            method,
            request_headers,
            sent_at,
            url: url.clone(),
            location,
            content_type,
            content_length,
            retry_after,
            latency,
            inner,
            permit: Some(permit),
            slot,
            origin,
            backoff: politeness.backoff,
            deadline,
            read_timeout: cfg.read_timeout,
            total_timeout: cfg.total_timeout,
            max_backoff: cfg.max_backoff,
        })
    }

    /// A job with an adaptive delay learns the host's from this exchange.
    fn adapt(&self, slot: &HostSlot, politeness: &Politeness, latency: Duration, ok: bool) {
        if let Some(adaptive) = &politeness.adaptive {
            slot.state().observe_latency(latency, ok, adaptive);
        }
    }

    /// The robots.txt rules of `url`'s origin for the job's user agent.
    /// See [`Fetcher::robots_counted`] to learn whether a request was made.
    pub async fn robots(
        &self,
        url: &Url,
        politeness: &Politeness,
        host_key: &str,
    ) -> Result<Arc<RobotsRules>, FetchError> {
        self.robots_counted(url, politeness, host_key)
            .await
            .map(|f| f.rules)
    }

    /// Like [`Fetcher::robots`], also returning how many requests it cost.
    ///
    /// robots.txt is fetched once per origin per [`ROBOTS_TTL`] (shared by all
    /// jobs; concurrent callers wait for one fetch) through [`Fetcher::send`]
    /// with the job's politeness, following up to [`ROBOTS_MAX_REDIRECTS`]
    /// hops, body cut at [`ROBOTS_MAX_BYTES`]. 4xx allows all; 5xx, 429 and
    /// network errors disallow all for [`ROBOTS_FIRST_RETRY`], doubled while
    /// it keeps failing, up to [`ROBOTS_RETRY_AFTER_ERROR`];
    /// an unparsable body allows all. Errors only for an invalid URL or a
    /// destination refused by the SSRF guard. Like `send`, it waits for the
    /// host's permit: do not call it while holding a response of that host.
    pub async fn robots_counted(
        &self,
        url: &Url,
        politeness: &Politeness,
        host_key: &str,
    ) -> Result<RobotsFetch, FetchError> {
        validate_url(url)?;
        let origin = origin_key(url).ok_or_else(|| FetchError::InvalidUrl {
            url: url.to_string(),
            reason: "no origin",
        })?;
        let agent = agent_token(&politeness.user_agent);
        let entry = self.inner.robots.entry(&origin);
        let cached = |entry: &robots::OriginEntry| {
            entry
                .fresh_rules(&agent, SystemTime::now())
                .map(|rules| RobotsFetch { rules, requests: 0 })
        };
        if let Some(hit) = cached(&entry) {
            return Ok(hit);
        }
        let _fetching = entry.fetch_lock.lock().await;
        if let Some(hit) = cached(&entry) {
            return Ok(hit);
        }
        let (record, requests, failure) = self
            .download_robots(url, &origin, politeness, host_key)
            .await?;
        let mut record = record.after(entry.record().as_deref());
        record.error.clone_from(&failure);
        if let Some(error) = failure {
            // Loud: the origin's links wait for it, and a user must see why.
            self.inner
                .robots_failures
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let retry_at = humantime::format_rfc3339_seconds(record.expires_at());
            tracing::warn!(
                url = %robots_url(url),
                origin,
                error,
                retry_in = ?record.retry_in(),
                %retry_at,
                "robots.txt unavailable: the links of this origin wait until it is asked again"
            );
        }
        self.inner.robots.store(record.clone());
        let rules = entry
            .fresh_rules(&agent, SystemTime::now())
            // Only when the wall clock jumped during the fetch.
            .unwrap_or_else(|| Arc::new(RobotsRules::from_record(record, &agent)));
        Ok(RobotsFetch { rules, requests })
    }

    async fn download_robots(
        &self,
        page: &Url,
        origin: &str,
        politeness: &Politeness,
        host_key: &str,
    ) -> Result<(RobotsRecord, u32, Option<String>), FetchError> {
        let record = |status: RobotsStatus, body: Vec<u8>| {
            RobotsRecord::new(origin.to_string(), status, body, SystemTime::now())
        };
        // What made the origin unavailable, for the log.
        let down = |why: String, requests: u32| {
            (
                record(RobotsStatus::Unavailable, Vec::new()),
                requests,
                Some(why),
            )
        };
        let mut target = robots_url(page);
        let mut requests: u32 = 0;
        for hop in 0..=ROBOTS_MAX_REDIRECTS {
            // A hop to another host is paced under that host's own name.
            let key = if target.host_str() == page.host_str() {
                host_key.to_string()
            } else {
                target.host_str().unwrap_or_default().to_string()
            };
            let resp = match self.send(Method::Get, &target, politeness, &key).await {
                Ok(resp) => resp,
                Err(e) => {
                    if e.reached_network() {
                        requests += 1;
                        return Ok(down(e.to_string(), requests));
                    }
                    if hop == 0 {
                        return Err(e);
                    }
                    // A redirect to somewhere unfetchable: as if there were no robots.txt.
                    return Ok((record(RobotsStatus::Missing, Vec::new()), requests, None));
                }
            };
            requests += 1;
            let status = resp.status;
            if (200..300).contains(&status) {
                return Ok(match resp.read_capped(ROBOTS_MAX_BYTES).await {
                    Ok(body) => {
                        if body.truncated {
                            // RFC 9309: parse what fits; the rest of the file is ignored.
                            tracing::warn!(%target, limit = ROBOTS_MAX_BYTES, "robots.txt cut at the size limit; rules past it are ignored");
                        }
                        (record(RobotsStatus::Fetched, body.bytes), requests, None)
                    }
                    Err(e) => down(e.to_string(), requests),
                });
            }
            let next = resp.location.clone();
            // Releases the host permit before a hop to the same host.
            drop(resp);
            let status = match status {
                300..=399 => match next {
                    Some(next) if hop < ROBOTS_MAX_REDIRECTS => {
                        target = next;
                        continue;
                    }
                    _ => RobotsStatus::Missing,
                },
                400..=499 if status != 429 => RobotsStatus::Missing,
                _ => return Ok(down(format!("{target} answered HTTP {status}"), requests)),
            };
            return Ok((record(status, Vec::new()), requests, None));
        }
        Ok((record(RobotsStatus::Missing, Vec::new()), requests, None))
    }

    /// Loads a persisted robots record (kept if newer than the cached one).
    pub fn import_robots(&self, record: RobotsRecord) -> bool {
        self.inner.robots.store(record)
    }

    /// Every robots record currently cached, for a full persist.
    pub fn robots_records(&self) -> Vec<RobotsRecord> {
        self.inner.robots.records()
    }

    /// How long an origin of `host_key` is still blocked by Retry-After or
    /// back-off (the longest of them).
    pub fn blocked_for(&self, host_key: &str) -> Option<Duration> {
        self.inner
            .hosts
            .get(host_key)
            .and_then(|slot| slot.state().longest_block(Instant::now()))
    }

    /// Number of hosts whose politeness state is tracked (a status gauge).
    pub fn hosts_tracked(&self) -> usize {
        self.inner.hosts.len()
    }

    /// The gap this request asks for: the job's delay (adapted to the
    /// host's response time when the job asks for it), or robots.txt's
    /// Crawl-delay clamped to [delay, 60 s] when it is known and larger.
    fn wanted_period(&self, url: &Url, politeness: &Politeness, slot: &HostSlot) -> Duration {
        let mut period = match &politeness.adaptive {
            Some(adaptive) => politeness.delay.max(slot.state().adapted(adaptive)),
            None => politeness.delay,
        };
        if politeness.robots {
            let crawl_delay = origin_key(url)
                .and_then(|origin| {
                    self.inner
                        .robots
                        .peek(&origin, &agent_token(&politeness.user_agent))
                })
                .and_then(|rules| rules.crawl_delay());
            if let Some(cd) = crawl_delay {
                period = period.max(cd.min(MAX_ROBOTS_CRAWL_DELAY));
            }
        }
        period
    }

    /// IP-literal hosts skip the resolver, so the guard checks them here.
    fn check_ip_literal(&self, url: &Url) -> Result<(), FetchError> {
        if self.inner.cfg.allow_private {
            return Ok(());
        }
        let ip = match url.host() {
            Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
            _ => return Ok(()),
        };
        if is_forbidden_ip(ip) {
            tracing::warn!(%url, "SSRF guard refused an IP literal");
            return Err(FetchError::Forbidden {
                host: url.host_str().unwrap_or_default().to_string(),
                addr: ip,
            });
        }
        Ok(())
    }

    fn map_send_error(&self, url: &Url, err: reqwest::Error) -> FetchError {
        if let Some(f) = find_in_chain::<ForbiddenAddress>(&err) {
            return FetchError::Forbidden {
                host: f.host.clone(),
                addr: f.addr,
            };
        }
        if find_in_chain::<hyper::Error>(&err).is_some_and(hyper::Error::is_parse_too_large) {
            return FetchError::TooManyHeaders {
                url: url.to_string(),
                limit: self.inner.cfg.max_header_bytes,
            };
        }
        let cfg = &self.inner.cfg;
        if err.is_timeout() {
            let (phase, after) = if err.is_connect() {
                (TimeoutPhase::Connect, cfg.connect_timeout)
            } else {
                (TimeoutPhase::Headers, cfg.read_timeout)
            };
            return FetchError::Timeout {
                url: url.to_string(),
                phase,
                after,
            };
        }
        if let Some(tls) = tls_failure(&err) {
            return FetchError::Tls {
                url: url.to_string(),
                host: url.host_str().unwrap_or_default().to_string(),
                reason: tls.to_string(),
                hint: tls_hint(tls),
                source: err,
            };
        }
        let detail = error_chain(&err);
        if err.is_connect() {
            FetchError::Connect {
                url: url.to_string(),
                detail,
                source: err,
            }
        } else {
            FetchError::Http {
                url: url.to_string(),
                detail,
                source: err,
            }
        }
    }
}

/// The origin a URL's failures and blocks count against (its scheme, host
/// and port; the URL itself when it has none, which no request reaches).
fn origin_of(url: &Url) -> String {
    origin_key(url).unwrap_or_else(|| url.to_string())
}

/// The request fields as the server receives them: Host first (hyper adds it
/// from the URL's authority, with the port only when it is not the default),
/// then the fields set on the request.
fn recorded_request_headers(url: &Url, headers: &HeaderMap) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::with_capacity(headers.len() + 1);
    if !headers.contains_key(reqwest::header::HOST) {
        let host = url.host_str().unwrap_or_default();
        let host = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        out.push(("host".to_string(), host.into_bytes()));
    }
    // Credentials are not archived: a WARC file is copied and shared.
    out.extend(headers.iter().map(|(n, v)| {
        let value = if v.is_sensitive() {
            b"[redacted]".to_vec()
        } else {
            v.as_bytes().to_vec()
        };
        (n.as_str().to_string(), value)
    }));
    out
}

fn version_str(v: reqwest::Version) -> &'static str {
    match v {
        reqwest::Version::HTTP_09 => "HTTP/0.9",
        reqwest::Version::HTTP_10 => "HTTP/1.0",
        reqwest::Version::HTTP_2 => "HTTP/2.0",
        reqwest::Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

fn validate_url(url: &Url) -> Result<(), FetchError> {
    let reason = if !matches!(url.scheme(), "http" | "https") {
        "only http and https are fetched"
    } else if url.host().is_none() {
        "no host"
    } else {
        return Ok(());
    };
    Err(FetchError::InvalidUrl {
        url: url.to_string(),
        reason,
    })
}

/// Retry-After as a delay: delta-seconds or an HTTP date (past dates give zero).
/// Whether an HTTP status says that a page broke while its host is up: a
/// 5xx other than 502, 503 and 504, which say that the host or what stands
/// behind it is down or overloaded. Such a page is most often broken for good.
pub fn is_page_error(status: u16) -> bool {
    (500..=599).contains(&status) && !(502..=504).contains(&status)
}

pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whether the URL's last path segment names a compressed file (`x.csv.gz`).
fn names_compressed_file(url: &Url) -> bool {
    let last = url.path().rsplit('/').next().unwrap_or("");
    last.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && COMPRESSED_FILE_EXTENSIONS
                .iter()
                .any(|e| ext.eq_ignore_ascii_case(e))
    })
}

/// A response head, and its body on demand.
///
/// Holds its host's in-flight permit until the body is finished, an error
/// occurs, or it is dropped.
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    method: Method,
    /// The request's header fields as handed to the HTTP library (Host added as hyper adds it).
    request_headers: Vec<(String, Vec<u8>)>,
    sent_at: SystemTime,
    /// The URL requested (redirects are not followed).
    pub url: Url,
    /// For 3xx: the Location header resolved against `url`.
    pub location: Option<Url>,
    /// The raw Content-Type header.
    pub content_type: Option<String>,
    /// The Content-Length header (absent when the body is decompressed on the fly).
    pub content_length: Option<u64>,
    /// Retry-After, clamped to `max_backoff`.
    pub retry_after: Option<Duration>,
    /// From sending the request (after the politeness wait) to its headers.
    pub latency: Duration,
    inner: reqwest::Response,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    slot: Arc<HostSlot>,
    /// The origin a broken body counts against.
    origin: String,
    backoff: BackoffPolicy,
    deadline: tokio::time::Instant,
    read_timeout: Duration,
    total_timeout: Duration,
    max_backoff: Duration,
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("url", &self.url.as_str())
            .field("location", &self.location.as_ref().map(Url::as_str))
            .field("content_type", &self.content_type)
            .field("content_length", &self.content_length)
            .field("retry_after", &self.retry_after)
            .finish_non_exhaustive()
    }
}

impl Response {
    /// All response headers (after decompression removed Content-Encoding/Length).
    pub fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// The negotiated HTTP version, spelled as in a status line (`HTTP/1.1`, `HTTP/2.0`).
    pub fn http_version(&self) -> &'static str {
        version_str(self.inner.version())
    }

    /// The peer's address, when the connection knows it.
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.inner.remote_addr()
    }

    /// The request as sent and the response head as received, for archiving
    /// (WARC). Reading it changes nothing about the exchange. The header
    /// lists are in map order (fields grouped by name, first-seen order); the
    /// reason phrase is the server's when it sent a non-standard one.
    pub fn exchange_head(&self) -> ExchangeHead {
        let version = self.http_version();
        let target = match self.url.query() {
            Some(q) => format!("{}?{q}", self.url.path()),
            None => self.url.path().to_string(),
        };
        let method = match self.method {
            Method::Get => "GET",
            Method::Head => "HEAD",
        };
        let status = self.inner.status();
        let reason = self
            .inner
            .extensions()
            .get::<hyper::ext::ReasonPhrase>()
            .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned())
            .or_else(|| status.canonical_reason().map(str::to_string))
            .unwrap_or_default();
        ExchangeHead {
            request: HttpHead {
                start_line: format!("{method} {target} {version}"),
                headers: self.request_headers.clone(),
            },
            response: HttpHead {
                start_line: format!("{version} {} {reason}", status.as_u16())
                    .trim_end()
                    .to_string(),
                headers: self
                    .inner
                    .headers()
                    .iter()
                    .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                    .collect(),
            },
            remote_ip: self.remote_addr().map(|a| a.ip()),
            sent_at: self.sent_at,
        }
    }

    /// The next decompressed chunk of the body, `None` at the end. Each chunk
    /// must arrive within `read_timeout`, the whole body within `total_timeout`.
    /// After the end or an error it keeps returning `Ok(None)`.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, FetchError> {
        if self.permit.is_none() {
            return Ok(None);
        }
        let gap_limit = tokio::time::Instant::now() + self.read_timeout;
        let (limit, phase, after) = if gap_limit < self.deadline {
            (gap_limit, TimeoutPhase::Body, self.read_timeout)
        } else {
            (self.deadline, TimeoutPhase::Total, self.total_timeout)
        };
        match tokio::time::timeout_at(limit, self.inner.chunk()).await {
            Ok(Ok(Some(bytes))) => Ok(Some(bytes)),
            Ok(Ok(None)) => {
                self.permit = None;
                Ok(None)
            }
            Ok(Err(e)) => {
                self.fail();
                let url = self.url.to_string();
                Err(if e.is_timeout() {
                    FetchError::Timeout {
                        url,
                        phase: TimeoutPhase::Body,
                        after: self.read_timeout,
                    }
                } else {
                    FetchError::Body {
                        url,
                        detail: error_chain(&e),
                        source: e,
                    }
                })
            }
            Err(_) => {
                self.fail();
                Err(FetchError::Timeout {
                    url: self.url.to_string(),
                    phase,
                    after,
                })
            }
        }
    }

    /// Reads the body up to `cap` decompressed bytes; stops downloading as
    /// soon as the cap is exceeded, so a compression bomb is never inflated
    /// much beyond it (one decoder chunk at most).
    pub async fn read_capped(mut self, cap: u64) -> Result<Body, FetchError> {
        let cap = usize::try_from(cap).unwrap_or(usize::MAX);
        let hint = self
            .content_length
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        let mut bytes = Vec::with_capacity(hint.min(cap).min(MAX_PREALLOC));
        while let Some(chunk) = self.chunk().await? {
            let room = cap - bytes.len();
            if chunk.len() > room {
                bytes.extend_from_slice(&chunk[..room]);
                return Ok(Body {
                    bytes,
                    truncated: true,
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Body {
            bytes,
            truncated: false,
        })
    }

    /// Releases the host and counts a failure against it.
    fn fail(&mut self) {
        self.slot.record(
            Outcome::Failure,
            &self.origin,
            self.max_backoff,
            &self.backoff,
        );
        self.permit = None;
    }
}
