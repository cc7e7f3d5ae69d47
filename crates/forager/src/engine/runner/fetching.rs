//! One request and what its answer means: sending it through the fetcher
//! (redirects followed by hand, each hop re-checked), HEADs, GETs, and the
//! body of a 2xx answer — a page's links, a sitemap's, a catalog's
//! (`catalogs.rs`), or a target streamed to disk (`targets.rs`). Parsing runs through [`parse_body`]. Every
//! decision about the links found is the core's.

use super::*;
use crate::panics::panic_message;

/// A job's seed (depth 0, found on no page); a redirect chain from it is still the seed.
fn is_seed(link: &Link) -> bool {
    link.depth == 0 && link.referrer.is_none()
}

impl Runner<'_> {
    /// Send one request, counting it; a failure is already logged and counted.
    pub(super) async fn send(
        &self,
        method: Method,
        url: &Url,
        tally: &mut StepTally,
    ) -> Result<Response, FetchError> {
        self.send_with(method, url, tally, &[]).await
    }

    /// [`Runner::send`] with request fields of its own (a revisit's validators).
    pub(super) async fn send_with(
        &self,
        method: Method,
        url: &Url,
        tally: &mut StepTally,
        extra: &[(&'static str, String)],
    ) -> Result<Response, FetchError> {
        let key = self.host_key(url);
        let sent = self
            .engine
            .fetcher
            .send_with(method, url, &self.politeness, &key, extra)
            .await;
        // Counted once the fetcher returns: a stop that cancels this future
        // while it waits for the host's politeness slot sent nothing, and
        // neither did a request refused before it left (SSRF guard, bad URL).
        if let Err(e) = &sent {
            if !e.reached_network() {
                if matches!(e, FetchError::Forbidden { .. }) {
                    self.refused_by_guard(url, e);
                } else {
                    self.core().count(Count::FetchError);
                    self.fetch_failed(method, url, e);
                }
                return sent;
            }
        }
        tally.requests += 1;
        {
            let mut core = self.core();
            core.count(Count::Request {
                head: method == Method::Head,
            });
        }
        if let Err(e) = &sent {
            self.core().count(Count::FetchError);
            self.fetch_failed(method, url, e);
        }
        sent
    }

    /// The SSRF guard refused `url`: counted as a failure, never as a request.
    pub(super) fn refused_by_guard(&self, url: &Url, e: &FetchError) {
        {
            let mut core = self.core();
            core.count(Count::FetchError);
            core.refused_private += 1;
        }
        warn!(job = %self.spec.name, url = %url, error = %e, "refused by the SSRF guard; pass --allow-private (or allow_private = true in the daemon config) to crawl private addresses");
    }

    pub(super) fn fetch_failed(&self, method: Method, url: &Url, e: &FetchError) {
        warn!(job = %self.spec.name, url = %url, error = %e, "request failed");
        if let Some(log) = lock(&self.crawl_log).as_mut() {
            let error = e.to_string();
            log.write(&LogLine {
                method: Some(method_name(kind_of(method))),
                error: Some(&error),
                ..LogLine::new(Event::Request, url.as_str())
            });
        }
        self.emit(kind_of(method), url, None, 0, None, false, None);
    }

    /// Reads a 2xx answer's body up to `cap`; a failed read is counted and
    /// logged here, and handed back for the step to decide what it means.
    pub(super) async fn read_body(
        &self,
        url: &Url,
        resp: Response,
        cap: u64,
    ) -> Result<crate::fetch::Body, FetchError> {
        resp.read_capped(cap).await.inspect_err(|e| {
            self.core().count(Count::FetchError);
            self.fetch_failed(Method::Get, url, e);
        })
    }

    /// Follow one redirect hop: the next URL, if it may be fetched.
    /// `step`: the step that owns the hop (`None` for a HEAD: its hops are not fetched).
    fn redirect_target(
        &self,
        step: Option<LinkId>,
        from: &Link,
        location: Option<&Url>,
    ) -> Option<Url> {
        let mut core = self.core();
        core.count(Count::Redirect);
        let mut next = location?.clone();
        extract::normalize(&mut next, &self.limits.url_rules);
        // A Location header obeys the same trap rules as a link on a page.
        if extract::check_limits(&next, &self.limits.url_rules).is_err() {
            core.count(Count::RejectedLink);
            drop(core);
            self.log_skip(&next, SkipReason::Limits);
            return None;
        }
        if !core.in_scope(&next) {
            core.count(Count::OutOfScope);
            drop(core);
            self.log_skip(&next, SkipReason::Scope);
            return None;
        }
        if let Some(step) = step {
            if !core.admit_hop(step, from, &next) {
                return None;
            }
        }
        Some(next)
    }

    /// HEAD a link (following redirects) to learn its label.
    pub(super) async fn head(
        &self,
        link: &Link,
        tally: &mut StepTally,
    ) -> Result<HeadAnswer, EngineError> {
        let mut url = link.url.clone();
        for _ in 0..=MAX_REDIRECTS {
            match self.robots_gate(&url).await {
                Gate::Allowed => {}
                Gate::Disallowed => return Ok(HeadAnswer::Broken),
                // Let a GET tell, and be retried if it must.
                Gate::Unavailable(_) => return Ok(HeadAnswer::Unknown),
            }
            let Ok(resp) = self.send(Method::Head, &url, tally).await else {
                return Ok(HeadAnswer::Unknown);
            };
            let status = resp.status;
            self.emit(
                RequestKind::Head,
                &url,
                Some(status),
                0,
                None,
                false,
                Some(resp.latency),
            );
            match status {
                300..=399 => match self.redirect_target(None, link, resp.location.as_ref()) {
                    Some(next) => url = next,
                    None => return Ok(HeadAnswer::Broken),
                },
                200..=299 => {
                    let label = self.label_of(&resp);
                    self.remember_family(&link.url, resp.content_type.as_deref());
                    self.core().observe(link, label, LabelSource::Head);
                    return Ok(HeadAnswer::Label(label));
                }
                // Servers that do not implement HEAD still answer GET.
                405 | 501 => return Ok(HeadAnswer::Unknown),
                _ => {
                    self.core().count(Count::HttpError);
                    return Ok(HeadAnswer::Broken);
                }
            }
        }
        Ok(HeadAnswer::Broken)
    }

    /// GET a link, following redirects by hand; parse pages, save targets.
    pub(super) async fn fetch_link(
        &self,
        step: LinkId,
        link: &Link,
        tally: &mut StepTally,
    ) -> Result<Fetched, EngineError> {
        let mut url = link.url.clone();
        self.admit_catalogs(&url);
        for _ in 0..=MAX_REDIRECTS {
            let this = |fault, reason: String| Fetched::retry(link, &url, fault, reason);
            match self.robots_gate(&url).await {
                Gate::Allowed => {}
                Gate::Disallowed => return Ok(Fetched::Nothing),
                Gate::Unavailable(reason) => return Ok(this(PassingFault::Outage, reason)),
            }
            let resp = match self.send(Method::Get, &url, tally).await {
                Ok(resp) => resp,
                Err(e) if e.may_pass() => return Ok(this(PassingFault::Outage, e.to_string())),
                Err(_) => return Ok(Fetched::Nothing),
            };
            let status = resp.status;
            match status {
                300..=399 => {
                    self.emit_unread(&url, &resp);
                    match self.redirect_target(Some(step), link, resp.location.as_ref()) {
                        Some(next) => {
                            // The previous hop is settled: the chain goes on from `next`.
                            if url != link.url {
                                self.core().settle_link(&url);
                            }
                            url = next;
                            continue;
                        }
                        None => return Ok(Fetched::Nothing),
                    }
                }
                200..=299 => {
                    // A seed that failed earlier in this run (a 503, retried) answered.
                    if is_seed(link) {
                        lock(&self.failed_seeds).remove(&link.url);
                    }
                    let result = self
                        .handle_response(step, link, url.clone(), resp, tally)
                        .await;
                    // A page settles once its links are admitted; a failed write
                    // leaves the link unsettled, to go back to the frontier.
                    if matches!(result, Ok(Fetched::Target | Fetched::Nothing)) {
                        self.core().settle_link(&url);
                    }
                    return result;
                }
                _ => {
                    self.core().count(Count::HttpError);
                    self.emit_unread(&url, &resp);
                    // Named in the run's warnings (`JobOutcome::failed_seeds`):
                    // a job whose seed is a 404 otherwise just ends `frontier_empty`.
                    if is_seed(link) {
                        lock(&self.failed_seeds).insert(link.url.clone(), status);
                    }
                    if status == 429 || (500..=599).contains(&status) {
                        // The host's back-off (Retry-After included) is already set.
                        let fault = if crate::fetch::is_page_error(status) {
                            PassingFault::PageError
                        } else {
                            PassingFault::Outage
                        };
                        return Ok(this(fault, format!("HTTP {status}")));
                    }
                    debug!(job = %self.spec.name, url = %url, status, "HTTP error");
                    self.core()
                        .observe(link, Label::Neither, LabelSource::Error);
                    return Ok(Fetched::Nothing);
                }
            }
        }
        warn!(job = %self.spec.name, url = %link.url, "too many redirects");
        Ok(Fetched::Nothing)
    }

    /// A 2xx answer to a GET: decide from its type whether to read the body.
    async fn handle_response(
        &self,
        step: LinkId,
        link: &Link,
        url: Url,
        resp: Response,
        tally: &mut StepTally,
    ) -> Result<Fetched, EngineError> {
        let latency = Some(resp.latency);
        if sitemap::is_sitemap(&link.tag_path) {
            return Ok(self.handle_sitemap(link, url, resp, latency).await);
        }
        if let Some(kind) = catalog::catalog_of(&link.tag_path) {
            return Ok(self.handle_catalog(kind, link, url, resp, latency).await);
        }
        let fields = self.validator_fields(&resp);
        let content_type = resp.content_type.clone();
        let label = self.label_of(&resp);
        self.remember_family(&link.url, content_type.as_deref());
        if url != link.url {
            self.remember_family(&url, content_type.as_deref());
        }
        if self.is_rdf_candidate(&essence(content_type.as_deref().unwrap_or("")), &url, label) {
            return self.handle_rdf(link, url, resp, tally).await;
        }
        self.core().observe(link, label, LabelSource::Get);
        match label {
            Label::Html => {
                // Taken before the body is read: a page that turns out to be a
                // structured-data target is archived like any target.
                let exchange = (self.spec.output.warc && self.spec.targets.structured.is_some())
                    .then(|| resp.exchange_head());
                // A page is parsed in memory: its cap is smaller than a target's.
                let cap = self.spec.limits.max_body.min(MAX_PAGE_BYTES);
                // A page read for its structured data holds a share of the
                // process-wide parse budget, and is guarded like an RDF
                // document (`parsing.rs`).
                let structured = self.limits.structured.is_some();
                if structured && self.parsing.is_poisoned(&url) {
                    return Ok(self.skip_poisoned(&url, latency));
                }
                let mut lease = match structured {
                    true => Some(self.parse_lease(resp.content_length, cap).await),
                    false => None,
                };
                let body = match &mut lease {
                    Some(lease) => self.read_body_leased(&url, resp, cap, lease).await,
                    None => self.read_body(&url, resp, cap).await,
                };
                let body = match body {
                    Ok(b) => b,
                    Err(e) => return Ok(Fetched::after_failed_read(link, &url, &e)),
                };
                self.core().count(Count::Page {
                    bytes: body.bytes.len() as u64,
                });
                self.note_page(link, &url, fields, &body.bytes);
                let body_cut = body.truncated;
                if body_cut {
                    self.core().count(Count::Truncated);
                    warn!(job = %self.spec.name, url = %url, cap = cap, "page cut at its size cap; links past it are lost");
                }
                let page_bytes = body.bytes.len() as u64;
                // A structured-data job's page may turn out a target: its
                // request is reported once its extraction says so, so that
                // crawl.log shows it as a saved target (issue 39, point 3).
                let emit_page = |saved: bool| {
                    let label = if saved { Label::Target } else { label };
                    self.emit(
                        RequestKind::Get,
                        &url,
                        Some(200),
                        page_bytes,
                        Some(label),
                        saved,
                        latency,
                    );
                };
                if !structured {
                    emit_page(false);
                }
                let limits = self.limits.clone();
                let page_url = url.clone();
                let mime = essence(content_type.as_deref().unwrap_or(""));
                let mark = structured.then(|| self.parsing.begin(&url));
                let page_type = content_type.clone();
                let links = parse_body(move || {
                    if structured {
                        super::parsing::crash_point();
                    }
                    let links = extract::extract_links(
                        &body.bytes,
                        &page_url,
                        content_type.as_deref(),
                        &limits,
                    );
                    (links, body)
                })
                .await;
                if let Some(mark) = mark {
                    self.parsing.end(mark);
                }
                match links {
                    Ok((mut links, body)) => {
                        self.note_cut(&url, &links, body_cut);
                        // A `render` job may render the page: its script-built links join these.
                        self.render_page(
                            step,
                            link,
                            &url,
                            page_type.as_deref(),
                            &body.bytes,
                            &mut links,
                            tally,
                        )
                        .await;
                        let data = links.structured.take();
                        if let Some(data) = data.as_ref().filter(|d| d.over_bytes) {
                            self.core().count(Count::Truncated);
                            let detail = format!(
                                "structured data over targets.max_statement_bytes ({} statements, {} bytes kept){}",
                                data.triples.len(),
                                data.bytes,
                                data.first_error.as_deref().map(|e| format!("; {e}")).unwrap_or_default()
                            );
                            self.poison(&url, detail).await;
                        }
                        let relevant = self.is_relevant(data.as_ref());
                        if self.spec.targets.structured.is_some() {
                            self.core().page_relevance(link, &url, relevant);
                        }
                        let mut saved = Ok(false);
                        if relevant {
                            if let Some(data) = &data {
                                saved = self
                                    .save_structured_page(
                                        link,
                                        &url,
                                        structured::PageBody {
                                            mime,
                                            bytes: &body.bytes,
                                            truncated: body_cut,
                                            exchange: exchange.as_ref(),
                                        },
                                        data,
                                        tally,
                                    )
                                    .map(|()| true);
                            }
                        }
                        if structured {
                            emit_page(matches!(saved, Ok(true)));
                        }
                        saved?;
                        Ok(Fetched::Page {
                            url,
                            links: Box::new(links),
                        })
                    }
                    Err(e) => {
                        if structured {
                            emit_page(false);
                        }
                        warn!(job = %self.spec.name, url = %url, error = %e, "link extraction failed");
                        Ok(Fetched::Nothing)
                    }
                }
            }
            Label::Target => self.save_target(link, url, resp, content_type, tally).await,
            Label::Neither => {
                // Not read: a blocked or useless type costs no download.
                self.core().count(Count::Neither);
                self.emit(
                    RequestKind::Get,
                    &url,
                    Some(200),
                    0,
                    Some(label),
                    false,
                    latency,
                );
                Ok(Fetched::Nothing)
            }
        }
    }

    /// A page whose links were cut is counted (once, with a body already
    /// counted as cut) and logged: the links it lost are not in the frontier.
    pub(super) fn note_cut(&self, url: &Url, links: &PageLinks, body_counted: bool) {
        let Some(cut) = links.cut else {
            return;
        };
        if !body_counted {
            self.core().count(Count::Truncated);
        }
        warn!(job = %self.spec.name, url = %url, kept = links.links.len(), reason = cut.as_str(), "page cut: some of its links are lost");
    }

    /// A sitemap: its entries are links, like a page's (counted as a page).
    async fn handle_sitemap(
        &self,
        link: &Link,
        url: Url,
        resp: Response,
        latency: Option<Duration>,
    ) -> Fetched {
        let limits = self.limits.clone();
        self.handle_link_list(
            LinkList {
                source: "sitemap",
                cap: MAX_PAGE_BYTES,
            },
            link,
            url,
            resp,
            latency,
            move |body, url| {
                let mut links = sitemap::sitemap_links(body, url, &limits);
                // A portal's sitemap may list its catalog at a path no
                // well-known list has: read it as a catalog, not a page.
                if limits.sources.catalogs {
                    catalog::retag_sitemap_catalogs(&mut links);
                }
                links
            },
        )
        .await
    }

    /// A document that only lists links (a sitemap, a catalog): read up to
    /// `cap`, counted and logged as a page, parsed off the async workers by
    /// `parse`; a parser that panics costs this document only.
    pub(super) async fn handle_link_list(
        &self,
        list: LinkList,
        link: &Link,
        url: Url,
        resp: Response,
        latency: Option<Duration>,
        parse: impl FnOnce(&[u8], &Url) -> PageLinks + Send + 'static,
    ) -> Fetched {
        let fields = self.validator_fields(&resp);
        let Ok(body) = self.read_body(&url, resp, list.cap).await else {
            return Fetched::Nothing;
        };
        self.core().count(Count::Page {
            bytes: body.bytes.len() as u64,
        });
        self.note_page(link, &url, fields, &body.bytes);
        self.emit(
            RequestKind::Get,
            &url,
            Some(200),
            body.bytes.len() as u64,
            None,
            false,
            latency,
        );
        let source = list.source;
        let list_url = url.clone();
        let body_cut = body.truncated;
        match parse_body(move || parse(&body.bytes, &list_url)).await {
            Ok(links) => {
                info!(job = %self.spec.name, url = %url, source, links = links.links.len(), "link list read");
                self.note_cut(&url, &links, body_cut);
                Fetched::Page {
                    url,
                    links: Box::new(links),
                }
            }
            Err(e) => {
                warn!(job = %self.spec.name, url = %url, source, error = %e, "link list parsing failed");
                Fetched::Nothing
            }
        }
    }
}

/// What kind of link list a document is, and how much of it is read.
pub(super) struct LinkList {
    /// Its kind in the log (`sitemap`, a catalog kind).
    pub source: &'static str,
    /// Bytes read at most; what lies past them is lost.
    pub cap: u64,
}

/// Parsing a body panicked: that page is lost, never the job.
#[derive(Debug)]
pub(super) struct ParsePanicked(String);

impl std::fmt::Display for ParsePanicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the parser panicked: {}", self.0)
    }
}

/// Runs `parse`, the CPU work on a fetched body (links, a sitemap, RDF),
/// where it costs least.
///
/// On a multi-threaded runtime (the daemon's, which has more workers than
/// cores because workers already write and fsync target files) it runs on
/// this worker: handing every page to the blocking pool and back woke two
/// threads per page, and without that hand-off the daemon spends less CPU
/// per request (docs/efficiency.md, "The daemon"). On a current-thread runtime
/// (`forager crawl`) the one thread also drives every socket and timer, so
/// the parse goes to the blocking pool there.
pub(super) async fn parse_body<T: Send + 'static>(
    parse: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ParsePanicked> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse))
            .map_err(|panic| ParsePanicked(panic_message(&*panic).unwrap_or_default()))
    } else {
        tokio::task::spawn_blocking(parse)
            .await
            .map_err(|e| ParsePanicked(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_body;
    use std::thread;

    fn runtime(multi_thread: bool) -> tokio::runtime::Runtime {
        let mut builder = if multi_thread {
            tokio::runtime::Builder::new_multi_thread()
        } else {
            tokio::runtime::Builder::new_current_thread()
        };
        builder.build().expect("a test runtime")
    }

    #[test]
    fn a_parse_runs_on_the_worker_of_a_multi_threaded_runtime_only() {
        for multi_thread in [false, true] {
            let same_thread = runtime(multi_thread).block_on(async {
                let caller = thread::current().id();
                parse_body(move || thread::current().id() == caller).await
            });
            assert_eq!(
                same_thread.ok(),
                Some(multi_thread),
                "multi-threaded: {multi_thread}"
            );
        }
    }

    #[test]
    fn a_panicking_parse_fails_that_parse_only_on_either_runtime() {
        for multi_thread in [false, true] {
            runtime(multi_thread).block_on(async {
                let failed = parse_body(|| -> u8 { panic!("a hostile page") }).await;
                let message = failed.err().map(|e| e.to_string()).unwrap_or_default();
                assert!(message.contains("a hostile page"), "{message}");
                assert_eq!(parse_body(|| 8).await.ok(), Some(8));
            });
        }
    }
}
