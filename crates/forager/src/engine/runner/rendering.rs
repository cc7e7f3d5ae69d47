//! The runner's side of `render` jobs (`crate::render` drives the browser):
//! whether a page read for links is rendered (`always`; `auto`: a script
//! shell on a site where rendering pays, `forager_core::render`), serving
//! every request the browser makes through this job's own fetch path (scope,
//! URL limits, robots.txt, then the fetcher: SSRF guard, politeness, counted
//! in the budget), and reading the rendered HTML through the same link
//! extraction as a fetched page. Links only the rendered page holds join the
//! page's links under tag paths marked [`RENDERED_PREFIX`].
//!
//! A render that fails (no browser, a crash, a page that cannot be read)
//! costs that render only: the page's own links stand.
//!
//! With `render.pages` ≥ 2 a page's render is a unit of its own
//! ([`Deferred`]): the page's own links are admitted at once, the render
//! waits for a page of the pool while the job goes on, and the links it
//! adds are admitted to the same step, which settles (and rewards its
//! action) after it. Up to `render.pages` renders run at once; with
//! `pages = 1` a page is rendered inside its own unit, before its links are
//! admitted, so a crawl with one request in flight stays a pure function of
//! its seed.

use super::*;
use crate::render::{Answer, RenderError, Renderer, Step, SubRequest};
use forager_core::config::RenderMode;
use forager_core::render::{RenderBook, ShellSignals, RENDERED_PREFIX};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of one answer handed to the browser (a script, a JSON list).
const MAX_SUB_BYTES: u64 = 8 << 20;
/// Response fields passed on to the page: what a script's fetch or a
/// redirect needs, nothing that sets state (cookies) in the browser.
const PASSED_FIELDS: &[&str] = &[
    "content-type",
    "location",
    "access-control-allow-origin",
    "access-control-allow-credentials",
];

/// Pages waiting for a page of the pool, per page of it, past which the job
/// starts no other unit (each waiting page holds its body).
pub(super) const BACKLOG_PER_PAGE: usize = 4;

/// A page read, whose render runs as a unit of its own.
#[derive(Debug)]
pub(super) struct Deferred {
    /// The link whose fetch gave the page (its depth, its trap run).
    link: Link,
    url: Url,
    content_type: Option<String>,
    body: Vec<u8>,
    /// The page's own links: the render adds only the others.
    known: HashSet<Url>,
}

/// A render job's renderer and what it learnt.
pub(super) struct Rendering {
    renderer: Renderer,
    book: Mutex<RenderBook>,
    /// Renders under way now, and the most there were at once.
    busy: AtomicU64,
    most_at_once: AtomicU64,
    /// Renders run as units of their own (`render.pages` ≥ 2).
    beside: bool,
    rendered: AtomicU64,
    failed: AtomicU64,
    skipped: AtomicU64,
    requests: AtomicU64,
    job: String,
}

impl Rendering {
    /// `None` for a job that never renders; an error when it should and no browser is found.
    pub(super) fn for_job(spec: &JobSpec) -> Result<Option<Rendering>, EngineError> {
        if !spec.render.enabled() {
            return Ok(None);
        }
        let renderer =
            Renderer::new(&spec.name, &spec.render).map_err(|e| EngineError::Render {
                job: spec.name.clone(),
                reason: e.to_string(),
            })?;
        Ok(Some(Rendering {
            renderer,
            book: Mutex::new(RenderBook::default()),
            busy: AtomicU64::new(0),
            most_at_once: AtomicU64::new(0),
            beside: spec.render.pages > 1,
            rendered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            job: spec.name.clone(),
        }))
    }

    /// Whether a render runs as a unit of its own, beside the job's others.
    pub(super) fn beside(&self) -> bool {
        self.beside
    }
}

/// A render under way, counted in [`Rendering::busy`] while it lives.
struct Busy<'a>(&'a Rendering);

impl<'a> Busy<'a> {
    /// Counts one more render; how many run now, this one included.
    fn start(r: &'a Rendering) -> (Busy<'a>, u64) {
        let now = r.busy.fetch_add(1, Ordering::Relaxed) + 1;
        r.most_at_once.fetch_max(now, Ordering::Relaxed);
        (Busy(r), now)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Rendering {
    fn drop(&mut self) {
        info!(
            job = %self.job,
            rendered = self.rendered.load(Ordering::Relaxed),
            failed = self.failed.load(Ordering::Relaxed),
            skipped_auto = self.skipped.load(Ordering::Relaxed),
            requests = self.requests.load(Ordering::Relaxed),
            browser_launches = self.renderer.launches(),
            pages = self.renderer.pages(),
            most_at_once = self.most_at_once.load(Ordering::Relaxed),
            "renders of this run"
        );
    }
}

impl Runner<'_> {
    /// The hook of a page read for links: when the job says so, renders it
    /// and adds the links only the rendered page holds to `links`, or, with
    /// renders beside the job's other units, queues its render for step
    /// `step` (the render unit admits what it adds).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn render_page(
        &self,
        step: LinkId,
        link: &Link,
        url: &Url,
        content_type: Option<&str>,
        body: &[u8],
        links: &mut PageLinks,
        tally: &mut StepTally,
    ) {
        let Some(r) = &self.rendering else {
            return;
        };
        let site = url.host_str().unwrap_or_default();
        if self.spec.render.mode == RenderMode::Auto {
            let signals = ShellSignals::of(body, links.links.len());
            if !signals.is_shell() {
                return;
            }
            if !lock(&r.book).should_render(site) {
                r.skipped.fetch_add(1, Ordering::Relaxed);
                debug!(job = %self.spec.name, url = %url, "render: a shell on a site where rendering has not paid; not rendered");
                return;
            }
        }
        if r.beside {
            let work = Deferred {
                link: link.clone(),
                url: url.clone(),
                content_type: content_type.map(str::to_string),
                body: body.to_vec(),
                known: links.links.iter().map(|l| l.url.clone()).collect(),
            };
            let mut driver = lock(&self.driver);
            // The step stays open until its render unit ends.
            if let Some((_, left)) = driver.open_steps.get_mut(&step) {
                *left += 1;
                driver.renders.push_back((step, Box::new(work)));
                return;
            }
            drop(driver);
            debug_assert!(false, "a render for {step}, which is not open");
        }
        let Some(rendered) = self.rendered_links(r, url, content_type, body, tally).await else {
            return;
        };
        let added = merge_rendered(links, rendered, self.limits.max_links);
        self.rendered_paid(r, url, added);
    }

    /// A render unit of step `step`: renders the page and admits the links
    /// only the rendered page holds; the links to fetch now.
    pub(super) async fn render_deferred(
        &self,
        step: LinkId,
        work: Deferred,
        out: &mut UnitOutcome,
    ) -> Result<Vec<Link>, EngineError> {
        let Some(r) = &self.rendering else {
            return Ok(Vec::new());
        };
        let tally = &mut out.tally;
        let Some(rendered) = self
            .rendered_links(
                r,
                &work.url,
                work.content_type.as_deref(),
                &work.body,
                tally,
            )
            .await
        else {
            return Ok(Vec::new());
        };
        let mut found = PageLinks {
            links: Vec::new(),
            base: rendered.base.clone(),
            structured_data: false,
            structured: None,
            cut: None,
            rejected: Default::default(),
        };
        let room = self.limits.max_links.saturating_sub(work.known.len());
        let added = add_rendered(&mut found, &work.known, rendered, room);
        self.rendered_paid(r, &work.url, added);
        if added == 0 {
            return Ok(Vec::new());
        }
        self.admit_links(step, &work.link, &work.url, found, tally, &mut out.asks)
            .await
    }

    /// What a render of `url` paid, for `auto`'s book and the log.
    fn rendered_paid(&self, r: &Rendering, url: &Url, added: usize) {
        let site = url.host_str().unwrap_or_default();
        lock(&r.book).record(site, added > 0);
        debug!(job = %self.spec.name, url = %url, new_links = added, "render: links the page's HTML lacked");
    }

    /// Renders `url` and extracts the rendered page's links; `None` when
    /// the render failed (said in the log, counted, and the site's book told).
    async fn rendered_links(
        &self,
        r: &Rendering,
        url: &Url,
        content_type: Option<&str>,
        body: &[u8],
        tally: &mut StepTally,
    ) -> Option<PageLinks> {
        let site = url.host_str().unwrap_or_default();
        let (busy, at_once) = Busy::start(r);
        let started = Instant::now();
        let before = tally.requests;
        let html = match self.run_render(r, url, content_type, body, tally).await {
            // The browser itself went away (killed, or crashed by any page of
            // the pool): every render under way failed with it, not only the
            // one that caused it, so each is tried once more on a new browser.
            // A page that kills every browser costs two launches, no more.
            Err(RenderError::Browser(e)) => {
                warn!(job = %self.spec.name, url = %url, error = %e, "render: the browser went away; rendering the page again on a new one");
                self.run_render(r, url, content_type, body, tally).await
            }
            // Pages of the pool may share a renderer process: a page past
            // `max_memory` crashes its neighbour with it. A crash while
            // another render was under way is tried once more; the page
            // that caused it crashes again and costs itself only.
            Err(RenderError::Crashed) if at_once > 1 || r.busy.load(Ordering::Relaxed) > 1 => {
                warn!(job = %self.spec.name, url = %url, "render: the renderer crashed while another page of the pool rendered; rendering the page once more");
                self.run_render(r, url, content_type, body, tally).await
            }
            other => other,
        };
        drop(busy);
        let requests = tally.requests - before;
        r.requests.fetch_add(requests, Ordering::Relaxed);
        let html = match html {
            Ok(html) => html,
            Err(e) => {
                r.failed.fetch_add(1, Ordering::Relaxed);
                lock(&r.book).record(site, false);
                warn!(job = %self.spec.name, url = %url, error = %e, at_once, "render failed; the page is read as fetched");
                return None;
            }
        };
        let limits = self.limits.clone();
        let page_url = url.clone();
        let rendered = parse_body(move || {
            extract::extract_links(html.as_bytes(), &page_url, Some("text/html"), &limits)
        })
        .await;
        let rendered = match rendered {
            Ok(l) => l,
            Err(e) => {
                r.failed.fetch_add(1, Ordering::Relaxed);
                warn!(job = %self.spec.name, url = %url, error = %e, "link extraction of a rendered page failed");
                return None;
            }
        };
        r.rendered.fetch_add(1, Ordering::Relaxed);
        info!(
            job = %self.spec.name,
            url = %url,
            ms = started.elapsed().as_millis() as u64,
            requests,
            links = rendered.links.len(),
            at_once,
            "page rendered"
        );
        Some(rendered)
    }

    async fn run_render(
        &self,
        r: &Rendering,
        url: &Url,
        content_type: Option<&str>,
        body: &[u8],
        tally: &mut StepTally,
    ) -> Result<String, RenderError> {
        let mut session = r.renderer.start(url, content_type, body).await?;
        loop {
            match session.next().await {
                Step::Request(req) => {
                    let answer =
                        tokio::time::timeout_at(session.deadline(), self.serve(&req, tally))
                            .await
                            .unwrap_or(Answer::Refused);
                    session.answer(req, answer).await;
                }
                Step::Settled { deadline } => {
                    if deadline {
                        warn!(job = %self.spec.name, url = %url, timeout = ?r.renderer.timeout(), "render: the page did not settle within render.timeout; its scripts were stopped and it is read as it is");
                    }
                    return session.finish(deadline).await;
                }
                Step::Failed(e) => {
                    session.abandon().await;
                    return Err(e);
                }
            }
        }
    }

    /// One request of the browser, through this job's fetch path.
    async fn serve(&self, req: &SubRequest, tally: &mut StepTally) -> Answer {
        let mut url = req.url.clone();
        url.set_fragment(None);
        if extract::check_limits(&url, &self.limits.url_rules).is_err() {
            self.log_skip(&url, SkipReason::Limits);
            return Answer::Refused;
        }
        if !self.core().in_scope(&url) {
            info!(job = %self.spec.name, url = %url, "render: request refused: out of the job's scope");
            self.log_skip(&url, SkipReason::Scope);
            return Answer::Refused;
        }
        match self.robots_gate(&url).await {
            Gate::Allowed => {}
            Gate::Disallowed | Gate::Unavailable(_) => {
                info!(job = %self.spec.name, url = %url, "render: request refused: robots.txt");
                return Answer::Refused;
            }
        }
        // The SSRF guard, politeness and the budget's count are the fetcher's
        // and `send`'s, as for any request of the job; a refusal is logged there.
        let Ok(resp) = self.send(Method::Get, &url, tally).await else {
            return Answer::Refused;
        };
        let status = resp.status;
        let latency = resp.latency;
        let headers: Vec<(String, String)> = resp
            .headers()
            .iter()
            .filter(|(k, _)| PASSED_FIELDS.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        if !(200..=299).contains(&status) {
            self.emit(
                RequestKind::Get,
                &url,
                Some(status),
                0,
                None,
                false,
                Some(latency),
            );
            return Answer::Response {
                status,
                headers,
                body: Vec::new(),
            };
        }
        let Ok(body) = self.read_body(&url, resp, MAX_SUB_BYTES).await else {
            return Answer::Refused;
        };
        debug!(job = %self.spec.name, url = %url, kind = %req.resource_type, bytes = body.bytes.len(), "render: request served");
        self.emit(
            RequestKind::Get,
            &url,
            Some(status),
            body.bytes.len() as u64,
            None,
            false,
            Some(latency),
        );
        Answer::Response {
            status,
            headers,
            body: body.bytes,
        }
    }
}

/// Adds to `links` the links of `rendered` it lacks, under tag paths marked
/// rendered, up to `max_links` in all; how many were added.
fn merge_rendered(links: &mut PageLinks, rendered: PageLinks, max_links: usize) -> usize {
    let known: HashSet<Url> = links.links.iter().map(|l| l.url.clone()).collect();
    add_rendered(links, &known, rendered, max_links)
}

/// Adds to `links` the links of `rendered` not in `known`, under tag paths
/// marked rendered, until `links` holds `max_links`; how many were added.
fn add_rendered(
    links: &mut PageLinks,
    known: &HashSet<Url>,
    rendered: PageLinks,
    max_links: usize,
) -> usize {
    // One string per distinct tag path, as the extractor shares them.
    let mut paths: HashMap<TagPath, TagPath> = HashMap::new();
    let mut added = 0;
    for mut l in rendered.links {
        if known.contains(&l.url) {
            continue;
        }
        if links.links.len() >= max_links {
            links.cut = Some(extract::PageCut::MaxLinks);
            break;
        }
        l.tag_path = paths
            .entry(l.tag_path.clone())
            .or_insert_with(|| TagPath::new(format!("{RENDERED_PREFIX}{}", l.tag_path)))
            .clone();
        links.links.push(l);
        added += 1;
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use forager_core::extract::ExtractedLink;

    fn page(urls: &[&str]) -> PageLinks {
        let base = Url::parse("http://a.test/").expect("url");
        let mut p =
            extract::extract_links(b"", &base, Some("text/html"), &ExtractLimits::default());
        p.links = urls
            .iter()
            .map(|u| ExtractedLink {
                url: Url::parse(u).expect("url"),
                tag_path: TagPath::new("html body a"),
                anchor: String::new(),
            })
            .collect();
        p
    }

    #[test]
    fn only_links_the_html_lacked_are_added_marked_rendered() {
        let mut raw = page(&["http://a.test/about"]);
        let rendered = page(&["http://a.test/about", "http://a.test/f.csv"]);
        assert_eq!(merge_rendered(&mut raw, rendered, 100), 1);
        assert_eq!(raw.links.len(), 2);
        assert_eq!(raw.links[0].tag_path.as_str(), "html body a");
        assert_eq!(raw.links[1].tag_path.as_str(), "[rendered] html body a");
        assert_eq!(
            forager_core::catalog::found_by(raw.links[1].tag_path.as_str()),
            "rendered"
        );
    }

    #[test]
    fn the_page_cap_holds_for_rendered_links() {
        let mut raw = page(&["http://a.test/1"]);
        let rendered = page(&["http://a.test/2", "http://a.test/3", "http://a.test/4"]);
        assert_eq!(merge_rendered(&mut raw, rendered, 2), 1);
        assert_eq!(raw.links.len(), 2);
        assert_eq!(raw.cut, Some(extract::PageCut::MaxLinks));
    }
}
