//! robots.txt: the rules of one origin for one user agent, their exportable
//! record, and the bounded in-memory cache the fetcher keeps per origin.
//!
//! Fetching (redirects, politeness, caps) lives in the fetcher itself
//! ([`Fetcher::robots`](super::Fetcher::robots)); this file only parses, decides
//! and caches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use texting_robots::Robot;
use url::Url;

/// A robots.txt that was fetched (or found missing) stays valid this long.
pub const ROBOTS_TTL: Duration = Duration::from_secs(24 * 3600);
/// After a 5xx, a 429 or a network error the origin is disallowed for now:
/// asked again after this, doubled at every failure in a row…
pub const ROBOTS_FIRST_RETRY: Duration = Duration::from_secs(1);
/// …up to this.
pub const ROBOTS_RETRY_AFTER_ERROR: Duration = Duration::from_secs(10 * 60);
/// The body is cut here (RFC 9309 asks crawlers to parse at least 500 KiB).
pub const ROBOTS_MAX_BYTES: u64 = 512 * 1024;
/// Redirect hops followed to reach the robots.txt (RFC 9309: at least five).
pub const ROBOTS_MAX_REDIRECTS: usize = 5;
/// Sitemap URLs kept from one robots.txt.
const MAX_SITEMAPS: usize = 1000;
/// A Crawl-delay larger than this is treated as this (the fetcher clamps to 60 s anyway).
const MAX_CRAWL_DELAY: Duration = Duration::from_secs(24 * 3600);

/// Cache bounds: origins kept, and raw robots bytes kept across origins.
const CACHE_MAX_ORIGINS: usize = 16_384;
const CACHE_MAX_BYTES: usize = 64 * 1024 * 1024;
/// Distinct user agents whose parsed rules are kept per origin.
const MAX_AGENTS_PER_ORIGIN: usize = 8;
/// How often the cache looks for entries to drop.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// What the last robots.txt fetch of an origin produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RobotsStatus {
    /// A 2xx body (possibly unparsable, which allows everything).
    Fetched,
    /// A 4xx, or too many redirects: everything is allowed.
    Missing,
    /// A 5xx, 429 or network error: everything is disallowed until a retry.
    Unavailable,
}

/// The persistent form of one origin's robots.txt: the store saves it and the
/// fetcher re-loads it with [`Fetcher::import_robots`](super::Fetcher::import_robots).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotsRecord {
    /// `scheme://host:port`, the cache key (see [`origin_key`]).
    pub origin: String,
    /// What the fetch produced.
    pub status: RobotsStatus,
    /// The raw body (at most [`ROBOTS_MAX_BYTES`]); empty unless `Fetched`.
    pub body: Vec<u8>,
    /// When it was fetched, milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// How long an `Unavailable` record holds (see [`RobotsRecord::retry_in`]).
    /// Not stored: after a restart an unreachable robots.txt is asked again
    /// after [`ROBOTS_FIRST_RETRY`].
    #[serde(skip)]
    pub(crate) unavailable_for: Duration,
    /// Why an `Unavailable` record is so (the fetch error, the status), for
    /// messages. Not stored, like `unavailable_for`.
    #[serde(skip)]
    pub(crate) error: Option<String>,
    /// Fetches in a row that found the origin unavailable, this one
    /// included (0 unless `Unavailable`). Not stored either.
    #[serde(skip)]
    pub(crate) failures: u32,
}

impl RobotsRecord {
    /// A record of what `origin` answered at `at` (the ground-truth walk builds
    /// its own, the way the fetcher does).
    pub fn new(origin: String, status: RobotsStatus, body: Vec<u8>, at: SystemTime) -> Self {
        let fetched_at_ms = at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        RobotsRecord {
            origin,
            status,
            body,
            fetched_at_ms,
            unavailable_for: Duration::ZERO,
            error: None,
            failures: 0,
        }
    }

    /// Why the origin is unavailable, when this fetch said.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// How long an `Unavailable` record keeps the origin disallowed.
    pub fn retry_in(&self) -> Duration {
        self.unavailable_for
            .clamp(ROBOTS_FIRST_RETRY, ROBOTS_RETRY_AFTER_ERROR)
    }

    /// This (unavailable) record follows `previous`: when that one was
    /// unavailable too, wait twice as long before asking again.
    pub(crate) fn after(mut self, previous: Option<&RobotsRecord>) -> Self {
        if self.status == RobotsStatus::Unavailable {
            (self.unavailable_for, self.failures) = match previous {
                Some(p) if p.status == RobotsStatus::Unavailable => (
                    p.retry_in().saturating_mul(2),
                    p.failures.max(1).saturating_add(1),
                ),
                _ => (ROBOTS_FIRST_RETRY, 1),
            };
        }
        self
    }

    /// When the record was fetched.
    pub fn fetched_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.fetched_at_ms)
    }

    /// When the record must be fetched again.
    pub fn expires_at(&self) -> SystemTime {
        let ttl = match self.status {
            RobotsStatus::Fetched | RobotsStatus::Missing => ROBOTS_TTL,
            RobotsStatus::Unavailable => self.retry_in(),
        };
        self.fetched_at() + ttl
    }

    /// Valid at `now`; a record from the future (clock went back) is not.
    pub fn is_fresh(&self, now: SystemTime) -> bool {
        self.fetched_at() <= now && now < self.expires_at()
    }
}

/// The robots.txt rules of one origin as they apply to one user agent.
#[derive(Debug)]
pub struct RobotsRules {
    record: Arc<RobotsRecord>,
    agent: String,
    /// `None` when the body did not parse (everything allowed).
    robot: Option<Robot>,
    crawl_delay: Option<Duration>,
    sitemaps: Vec<Url>,
}

impl RobotsRules {
    /// Parses a record for the user agent of a job (full User-Agent string or token).
    pub fn from_record(record: RobotsRecord, user_agent: &str) -> RobotsRules {
        Self::parse(Arc::new(record), agent_token(user_agent))
    }

    fn parse(record: Arc<RobotsRecord>, agent: String) -> RobotsRules {
        let robot = match record.status {
            RobotsStatus::Fetched => parse_robot(&agent, &record.body, &record.origin),
            RobotsStatus::Missing | RobotsStatus::Unavailable => None,
        };
        let crawl_delay = robot
            .as_ref()
            .and_then(|r| r.delay)
            .and_then(delay_from_secs);
        let base = Url::parse(&record.origin).ok();
        let sitemaps = robot
            .as_ref()
            .map(|r| {
                r.sitemaps
                    .iter()
                    .filter_map(|s| resolve_sitemap(s, base.as_ref()))
                    .take(MAX_SITEMAPS)
                    .collect()
            })
            .unwrap_or_default();
        RobotsRules {
            record,
            agent,
            robot,
            crawl_delay,
            sitemaps,
        }
    }

    /// Whether this user agent may fetch `url` (a URL of this origin).
    pub fn allowed(&self, url: &Url) -> bool {
        match self.record.status {
            RobotsStatus::Missing => true,
            RobotsStatus::Unavailable => false,
            RobotsStatus::Fetched => self.robot.as_ref().is_none_or(|r| r.allowed(url.as_str())),
        }
    }

    /// The Crawl-delay for this agent, as written (the fetcher clamps it).
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// Sitemap URLs listed in the file (absolute http/https only).
    pub fn sitemaps(&self) -> &[Url] {
        &self.sitemaps
    }

    /// What the fetch produced: lets the engine tell "disallowed" from "not reachable yet".
    pub fn status(&self) -> RobotsStatus {
        self.record.status
    }

    /// Whether a fetched body failed to parse (and so allows everything).
    pub fn unparsable(&self) -> bool {
        self.record.status == RobotsStatus::Fetched && self.robot.is_none()
    }

    /// The origin these rules belong to.
    pub fn origin(&self) -> &str {
        &self.record.origin
    }

    /// The robots.txt product token the rules were selected for.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// When the rules were fetched.
    pub fn fetched_at(&self) -> SystemTime {
        self.record.fetched_at()
    }

    /// When the rules must be fetched again.
    pub fn expires_at(&self) -> SystemTime {
        self.record.expires_at()
    }

    /// Why the origin is unavailable, when known.
    pub fn error(&self) -> Option<&str> {
        self.record.error()
    }

    /// The persistent record (raw body and fetch time) for the store.
    pub fn export(&self) -> RobotsRecord {
        (*self.record).clone()
    }
}

fn parse_robot(agent: &str, body: &[u8], origin: &str) -> Option<Robot> {
    // A panic in the parser on hostile bytes must cost the rules, not the job.
    match std::panic::catch_unwind(|| Robot::new(agent, body)) {
        Ok(Ok(robot)) => Some(robot),
        Ok(Err(e)) => {
            // Worth a warning: the site's rules are not obeyed.
            tracing::warn!(origin, error = %e, "robots.txt unparsable, allowing all");
            None
        }
        Err(panic) => {
            let message = crate::panics::panic_message(&*panic).unwrap_or_default();
            tracing::warn!(origin, message, "robots.txt parser panicked, allowing all");
            None
        }
    }
}

fn delay_from_secs(secs: f32) -> Option<Duration> {
    if !secs.is_finite() || secs <= 0.0 {
        return None;
    }
    // Whole milliseconds: f32 makes 0.2 s into 200.000003 ms.
    let millis = (f64::from(secs) * 1000.0).round();
    let max = MAX_CRAWL_DELAY.as_millis() as f64;
    Some(Duration::from_millis(millis.min(max) as u64))
}

fn resolve_sitemap(raw: &str, base: Option<&Url>) -> Option<Url> {
    let raw = raw.trim();
    let url = match Url::parse(raw) {
        Ok(u) => u,
        Err(url::ParseError::RelativeUrlWithoutBase) => base?.join(raw).ok()?,
        Err(_) => return None,
    };
    matches!(url.scheme(), "http" | "https").then_some(url)
}

/// The robots.txt product token of a User-Agent string: its leading run of
/// letters, `_` and `-` (RFC 9309), lower-cased; `*` when there is none.
pub fn agent_token(user_agent: &str) -> String {
    let token: String = user_agent
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '_' || *c == '-')
        .collect();
    if token.is_empty() {
        "*".to_string()
    } else {
        token.to_ascii_lowercase()
    }
}

/// The cache key of a URL's origin: `scheme://host:port` with the port always written.
pub fn origin_key(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    Some(format!("{}://{}:{}", url.scheme(), host, port))
}

/// The robots.txt URL of a URL's origin.
pub(crate) fn robots_url(url: &Url) -> Url {
    let mut robots = url.clone();
    robots.set_path("/robots.txt");
    robots.set_query(None);
    robots.set_fragment(None);
    // Credentials of a page link are not meant for robots.txt; errors mean there were none.
    let _ = robots.set_username("");
    let _ = robots.set_password(None);
    robots
}

/// One origin in the cache.
pub(crate) struct OriginEntry {
    /// Held across a network fetch so concurrent jobs fetch an origin once.
    pub(crate) fetch_lock: tokio::sync::Mutex<()>,
    state: Mutex<OriginState>,
}

struct OriginState {
    record: Option<Arc<RobotsRecord>>,
    /// Parsed rules per agent token, most recent last.
    parsed: Vec<Arc<RobotsRules>>,
    last_used: Instant,
}

impl OriginEntry {
    fn new(now: Instant) -> Self {
        OriginEntry {
            fetch_lock: tokio::sync::Mutex::new(()),
            state: Mutex::new(OriginState {
                record: None,
                parsed: Vec::new(),
                last_used: now,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, OriginState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached record, fresh or not.
    pub(crate) fn record(&self) -> Option<Arc<RobotsRecord>> {
        self.state().record.clone()
    }

    /// The fresh rules for `agent`, parsing the cached record if needed.
    pub(crate) fn fresh_rules(&self, agent: &str, now: SystemTime) -> Option<Arc<RobotsRules>> {
        let record = {
            let mut st = self.state();
            st.last_used = Instant::now();
            let record = st.record.clone()?;
            if !record.is_fresh(now) {
                return None;
            }
            if let Some(rules) = st.parsed.iter().find(|r| r.agent == agent) {
                return Some(Arc::clone(rules));
            }
            record
        };
        // Parse outside the lock: a large file takes a while.
        let rules = Arc::new(RobotsRules::parse(Arc::clone(&record), agent.to_string()));
        let mut st = self.state();
        if st.record.as_ref().is_some_and(|r| Arc::ptr_eq(r, &record)) {
            if st.parsed.len() >= MAX_AGENTS_PER_ORIGIN {
                st.parsed.remove(0);
            }
            st.parsed.push(Arc::clone(&rules));
        }
        Some(rules)
    }

    /// Parsed rules for `agent` if already there (no parsing, no freshness check).
    fn parsed_rules(&self, agent: &str) -> Option<Arc<RobotsRules>> {
        self.state()
            .parsed
            .iter()
            .find(|r| r.agent == agent)
            .cloned()
    }

    /// Replaces the record (if `record` is newer) and drops stale parses.
    fn store(&self, record: Arc<RobotsRecord>) -> bool {
        let mut st = self.state();
        st.last_used = Instant::now();
        if st
            .record
            .as_ref()
            .is_some_and(|old| old.fetched_at_ms > record.fetched_at_ms)
        {
            return false;
        }
        st.record = Some(record);
        st.parsed.clear();
        true
    }

    fn body_len(&self) -> usize {
        self.state().record.as_ref().map_or(0, |r| r.body.len())
    }
}

struct CacheInner {
    map: HashMap<String, Arc<OriginEntry>>,
    last_sweep: Instant,
}

/// Origin → robots entry, bounded in origins and in raw bytes (LRU).
pub(crate) struct RobotsCache {
    inner: Mutex<CacheInner>,
}

impl RobotsCache {
    pub(crate) fn new() -> Self {
        RobotsCache {
            inner: Mutex::new(CacheInner {
                map: HashMap::new(),
                last_sweep: Instant::now(),
            }),
        }
    }

    fn inner(&self) -> MutexGuard<'_, CacheInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry of `origin`, created empty on first use.
    pub(crate) fn entry(&self, origin: &str) -> Arc<OriginEntry> {
        let mut inner = self.inner();
        if let Some(e) = inner.map.get(origin) {
            return Arc::clone(e);
        }
        let e = Arc::new(OriginEntry::new(Instant::now()));
        inner.map.insert(origin.to_string(), Arc::clone(&e));
        e
    }

    /// The cached record of `origin`, fresh or not, without creating an entry.
    pub(crate) fn peek_record(&self, origin: &str) -> Option<Arc<RobotsRecord>> {
        let entry = self.inner().map.get(origin).cloned()?;
        entry.record()
    }

    /// Parsed rules already in the cache, without I/O or parsing (for Crawl-delay).
    pub(crate) fn peek(&self, origin: &str, agent: &str) -> Option<Arc<RobotsRules>> {
        let entry = self.inner().map.get(origin).cloned()?;
        entry.parsed_rules(agent)
    }

    /// Stores a record under its origin; keeps the newer one. Returns whether it was stored.
    pub(crate) fn store(&self, record: RobotsRecord) -> bool {
        let record = Arc::new(record);
        let entry = self.entry(&record.origin);
        let stored = entry.store(record);
        drop(entry);
        self.maybe_sweep();
        stored
    }

    fn maybe_sweep(&self) {
        let mut inner = self.inner();
        let now = Instant::now();
        let due = now.saturating_duration_since(inner.last_sweep) >= SWEEP_EVERY;
        let over_count = inner.map.len() > CACHE_MAX_ORIGINS;
        if !(due || over_count) {
            return;
        }
        inner.last_sweep = now;
        let wall = SystemTime::now();
        // Drop expired records nobody is using (count 1: only the map holds it).
        inner.map.retain(|_, e| {
            let in_use = Arc::strong_count(e) > 1;
            let fresh = e.state().record.as_ref().is_some_and(|r| r.is_fresh(wall));
            in_use || fresh
        });
        let mut bytes: usize = inner.map.values().map(|e| e.body_len()).sum();
        if inner.map.len() <= CACHE_MAX_ORIGINS && bytes <= CACHE_MAX_BYTES {
            return;
        }
        let mut lru: Vec<(Instant, String)> = inner
            .map
            .iter()
            .filter(|(_, e)| Arc::strong_count(e) == 1)
            .map(|(k, e)| (e.state().last_used, k.clone()))
            .collect();
        lru.sort_unstable();
        for (_, key) in lru {
            if inner.map.len() <= CACHE_MAX_ORIGINS * 3 / 4 && bytes <= CACHE_MAX_BYTES * 3 / 4 {
                break;
            }
            if let Some(e) = inner.map.remove(&key) {
                bytes = bytes.saturating_sub(e.body_len());
            }
        }
    }

    /// Every record in the cache (for a full persist).
    pub(crate) fn records(&self) -> Vec<RobotsRecord> {
        let entries: Vec<Arc<OriginEntry>> = self.inner().map.values().cloned().collect();
        entries
            .iter()
            .filter_map(|e| e.state().record.as_ref().map(|r| (**r).clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(body: &str, ua: &str) -> RobotsRules {
        let rec = RobotsRecord::new(
            "http://site.test:80".into(),
            RobotsStatus::Fetched,
            body.as_bytes().to_vec(),
            SystemTime::now(),
        );
        RobotsRules::from_record(rec, ua)
    }

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn agent_token_is_the_product_name() {
        assert_eq!(agent_token("forager/0.1 (+https://x)"), "forager");
        assert_eq!(agent_token("My-Bot_2"), "my-bot_");
        assert_eq!(agent_token("  Googlebot"), "googlebot");
        assert_eq!(agent_token("/weird"), "*");
        assert_eq!(agent_token(""), "*");
    }

    #[test]
    fn agent_group_wins_over_star() {
        let body = "User-agent: *\nDisallow: /all\n\nUser-agent: forager\nDisallow: /mine\n";
        let ours = rules(body, "forager/0.1 (+http://e)");
        assert!(!ours.allowed(&u("http://site.test/mine/x")));
        assert!(ours.allowed(&u("http://site.test/all/x")));
        let other = rules(body, "otherbot/1.0");
        assert!(other.allowed(&u("http://site.test/mine/x")));
        assert!(!other.allowed(&u("http://site.test/all/x")));
    }

    #[test]
    fn crawl_delay_and_sitemaps() {
        let body = "User-agent: *\nCrawl-delay: 2.5\nDisallow:\nSitemap: https://site.test/s.xml\nSitemap: /rel.xml\nSitemap: ftp://x/y\n";
        let r = rules(body, "forager");
        assert_eq!(r.crawl_delay(), Some(Duration::from_millis(2500)));
        let maps: Vec<&str> = r.sitemaps().iter().map(Url::as_str).collect();
        assert_eq!(
            maps,
            ["https://site.test/s.xml", "http://site.test/rel.xml"]
        );
        assert!(r.allowed(&u("http://site.test/anything")));
    }

    #[test]
    fn silly_crawl_delays_are_sanitised() {
        assert_eq!(delay_from_secs(f32::NAN), None);
        assert_eq!(delay_from_secs(-3.0), None);
        assert_eq!(delay_from_secs(0.0), None);
        assert_eq!(delay_from_secs(f32::INFINITY), None);
        assert_eq!(delay_from_secs(1e30), Some(MAX_CRAWL_DELAY));
    }

    #[test]
    fn status_decides_without_body() {
        let at = SystemTime::now();
        let missing = RobotsRules::from_record(
            RobotsRecord::new("http://a:80".into(), RobotsStatus::Missing, vec![], at),
            "forager",
        );
        assert!(missing.allowed(&u("http://a/x")));
        let down = RobotsRules::from_record(
            RobotsRecord::new("http://a:80".into(), RobotsStatus::Unavailable, vec![], at),
            "forager",
        );
        assert!(!down.allowed(&u("http://a/x")));
        assert!(down.expires_at() < missing.expires_at());
    }

    #[test]
    fn binary_body_never_panics_and_allows() {
        let body: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let rec = RobotsRecord::new(
            "http://a:80".into(),
            RobotsStatus::Fetched,
            body,
            SystemTime::now(),
        );
        let r = RobotsRules::from_record(rec, "forager");
        assert!(r.allowed(&u("http://a/x")));
    }

    #[test]
    fn freshness_windows() {
        let now = SystemTime::now();
        let rec = RobotsRecord::new("o".into(), RobotsStatus::Fetched, vec![], now);
        assert!(rec.is_fresh(now));
        assert!(rec.is_fresh(now + Duration::from_secs(3600)));
        assert!(!rec.is_fresh(now + ROBOTS_TTL + Duration::from_secs(1)));
        assert!(
            !rec.is_fresh(now - Duration::from_secs(60)),
            "from the future"
        );
        let err = RobotsRecord::new("o".into(), RobotsStatus::Unavailable, vec![], now);
        assert!(err.is_fresh(now));
        assert!(!err.is_fresh(now + ROBOTS_FIRST_RETRY));
    }

    #[test]
    fn an_origin_unavailable_again_waits_twice_as_long_up_to_the_cap() {
        let now = SystemTime::now();
        let down = |prev: Option<&RobotsRecord>| {
            RobotsRecord::new("o".into(), RobotsStatus::Unavailable, vec![], now).after(prev)
        };
        let mut rec = down(None);
        assert_eq!(rec.retry_in(), ROBOTS_FIRST_RETRY);
        assert_eq!(rec.failures, 1);
        assert_eq!(
            down(Some(&down(Some(&rec)))).failures,
            3,
            "counted in a row"
        );
        let mut waits = vec![rec.retry_in()];
        for _ in 0..12 {
            rec = down(Some(&rec));
            waits.push(rec.retry_in());
        }
        assert_eq!(waits[1], ROBOTS_FIRST_RETRY * 2);
        assert_eq!(waits[4], ROBOTS_FIRST_RETRY * 16);
        assert_eq!(*waits.last().unwrap(), ROBOTS_RETRY_AFTER_ERROR);
        assert!(waits.windows(2).all(|w| w[0] <= w[1]));
        // An answer in between starts the count again.
        let up = RobotsRecord::new("o".into(), RobotsStatus::Missing, vec![], now);
        assert_eq!(down(Some(&up)).retry_in(), ROBOTS_FIRST_RETRY);
        assert_eq!(down(Some(&up)).failures, 1);
    }

    #[test]
    fn origin_and_robots_url() {
        assert_eq!(
            origin_key(&u("HTTP://Site.Test/a?b")).unwrap(),
            "http://site.test:80"
        );
        assert_eq!(
            origin_key(&u("https://s.test:8443/")).unwrap(),
            "https://s.test:8443"
        );
        assert_eq!(
            robots_url(&u("https://user:pw@s.test:8443/a/b?q#f")).as_str(),
            "https://s.test:8443/robots.txt"
        );
    }

    #[test]
    fn cache_keeps_the_newer_record_and_reparses() {
        let cache = RobotsCache::new();
        let t0 = SystemTime::now();
        let old = RobotsRecord::new(
            "http://a:80".into(),
            RobotsStatus::Fetched,
            b"Disallow: /x".to_vec(),
            t0,
        );
        let new = RobotsRecord::new(
            "http://a:80".into(),
            RobotsStatus::Fetched,
            b"Disallow: /y".to_vec(),
            t0 + Duration::from_secs(1),
        );
        assert!(cache.store(new.clone()));
        assert!(
            !cache.store(old),
            "an older record must not replace a newer one"
        );
        let r = cache
            .entry("http://a:80")
            .fresh_rules("forager", t0 + Duration::from_secs(2))
            .unwrap();
        assert!(r.allowed(&u("http://a/x")));
        assert!(!r.allowed(&u("http://a/y")));
        assert!(cache.peek("http://a:80", "forager").is_some());
        assert_eq!(cache.records(), vec![new]);
    }
}
