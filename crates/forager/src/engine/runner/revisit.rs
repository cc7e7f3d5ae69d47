//! A continuous job's revisits, as the runner drives them: which due URL
//! starts next, the conditional GET, what its answer costs (a 304 or an
//! identical body: no file, no manifest row; a changed target: a new file and
//! row, `change = "changed"`; a changed page: its links read again), and the
//! wait when nothing is due. Every decision is the core's and the book's
//! (`engine/core/revisits.rs`, `revisit/`).
//!
//! # How revisits and the frontier share a job's requests
//!
//! A due revisit and a frontier link take turns, one step each, while both
//! wait; with an empty frontier every step may be a revisit, and with
//! nothing due every step is the frontier's. Why: a due revisit is where new
//! targets appear (a listing page that changed), so it must not wait behind
//! a long frontier; but a site that publishes a lot must not starve the
//! frontier of the links its revisits reveal either. Half each bounds both
//! delays, and the request budget and politeness apply to both alike (a
//! revisit starts only when its host is ready, like a popped link).

use super::{lock, parse_body, unix_now, Driver, Fetched, Gate, Runner, Streamed, MAX_PAGE_BYTES};
use crate::engine::{EngineError, RequestKind, StepTally};
use crate::fetch::{Method, Response};
use crate::output::warc::{PROFILE_IDENTICAL_PAYLOAD, PROFILE_NOT_MODIFIED};
use crate::store::ChangeKind;
use forager_core::extract::{self, sitemap, ExtractLimits};
use forager_core::job::{Count, Readiness};
use forager_core::link::{Link, LinkId};
use forager_core::mime::Label;
use forager_core::revisit::{classify, conditional_headers, Change, Validators};
use sha2::Digest;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tracing::{debug, info, warn};
use url::Url;

/// How soon to look again when a revisit is due but could not start (its
/// host busy, or the frontier's turn).
const DUE_POLL: Duration = Duration::from_millis(100);

/// The response fields a URL's validators come from.
const VALIDATOR_FIELDS: [&str; 3] = ["etag", "last-modified", "date"];

impl Runner<'_> {
    /// `Some(New)` for a target first saved by a continuous job.
    pub(super) fn change_of_new(&self) -> Option<ChangeKind> {
        self.spec.revisit().map(|_| ChangeKind::New)
    }

    /// The fields of `resp` its validators are made of, in a continuous job.
    pub(super) fn validator_fields(&self, resp: &Response) -> Option<Vec<(String, Vec<u8>)>> {
        self.spec.revisit()?;
        let headers = resp.headers();
        Some(
            VALIDATOR_FIELDS
                .iter()
                .filter_map(|name| {
                    let v = headers.get(*name)?;
                    Some((name.to_string(), v.as_bytes().to_vec()))
                })
                .collect(),
        )
    }

    /// A page was read: a continuous job keeps it in its book.
    pub(super) fn note_page(
        &self,
        link: &Link,
        url: &Url,
        fields: Option<Vec<(String, Vec<u8>)>>,
        body: &[u8],
    ) {
        let Some(fields) = fields else {
            return;
        };
        let sha: [u8; 32] = sha2::Sha256::digest(body).into();
        let v = Validators::from_response(&fields, Some(sha), SystemTime::now());
        self.core().note_fetched(link, url, false, v, unix_now());
    }

    /// Begin the step of a due revisit whose host is ready, if the book has
    /// one and it is its turn (module documentation); the step's lane is taken.
    pub(super) fn begin_revisit(&self, driver: &mut Driver) -> Option<(LinkId, String)> {
        if !self.core().has_revisits() {
            return None;
        }
        let frontier_waiting = driver.lanes.parked() > 0 || self.core().frontier_len() > 0;
        let lanes = &driver.lanes;
        let ready = |l: &Link| {
            lanes.is_free(&self.host_key(&l.url)) && self.readiness(&l.url) == Readiness::Now
        };
        let id = self
            .core()
            .begin_revisit(unix_now(), frontier_waiting, &ready)?;
        let url = self.core().popped(id)?.entry.link.url.clone();
        let lane = self.host_key(&url);
        driver.lanes.start(&lane);
        driver.open_steps.insert(id, (StepTally::default(), 1));
        Some((id, lane))
    }

    /// How long until a revisit may start: until the soonest is due, or a
    /// short poll when one is due already but could not start.
    pub(super) fn revisit_wake(&self) -> Option<Duration> {
        let due = self.core().next_revisit_due()?;
        let at = UNIX_EPOCH + Duration::from_secs(due);
        Some(match at.duration_since(SystemTime::now()) {
            Ok(wait) if !wait.is_zero() => wait,
            _ => DUE_POLL,
        })
    }

    /// The job starts or stops waiting for its next revisit: say so (log,
    /// status); on entering the wait, commit what the last steps did, so a
    /// kill during a long wait loses nothing.
    pub(super) async fn announce_waiting(&self, waiting: bool) -> Result<(), EngineError> {
        let next = self
            .core()
            .next_revisit_due()
            .map(|d| UNIX_EPOCH + Duration::from_secs(d));
        if waiting {
            self.checkpoint(None, false).await?;
            if let Some(at) = next {
                info!(job = %self.spec.name, next_due = %humantime::format_rfc3339_seconds(at), "nothing due; waiting for the next revisit");
            }
            lock(&self.observer).waiting(next);
        } else {
            lock(&self.observer).waiting(None);
        }
        Ok(())
    }

    /// Revisit `link` for step `step`: a GET with its validators, then what
    /// the answer says (module documentation). Never asks for a retry: a
    /// revisit that fails is due again at its next time.
    pub(super) async fn revisit(
        &self,
        step: LinkId,
        link: &Link,
        tally: &mut StepTally,
    ) -> Result<Fetched, EngineError> {
        let Some((previous, target)) = self.core().revisit_of(step) else {
            return self.fetch_link(step, link, tally).await;
        };
        let url = link.url.clone();
        if !matches!(self.robots_gate(&url).await, Gate::Allowed) {
            self.core().revisit_found(step, Change::Unknown);
            return Ok(Fetched::Nothing);
        }
        let conditions = conditional_headers(&previous);
        let Ok(resp) = self.send_with(Method::Get, &url, tally, &conditions).await else {
            self.core().revisit_found(step, Change::Unknown);
            return Ok(Fetched::Nothing);
        };
        let status = resp.status;
        debug!(job = %self.spec.name, url = %url, status, conditional = !conditions.is_empty(), "revisited");
        match status {
            304 => {
                self.emit_unread(&url, &resp);
                if target && self.spec.output.warc {
                    let head = resp.exchange_head();
                    self.archive_revisit(&url, &head, PROFILE_NOT_MODIFIED, &previous, None)?;
                }
                self.core().revisit_found(step, Change::NotModified);
                Ok(Fetched::Nothing)
            }
            200..=299 if target && self.label_of(&resp) == Label::Target => {
                self.revisit_target(step, link, url, resp, &previous, tally)
                    .await
            }
            200..=299 if !target && self.label_of(&resp) == Label::Html => {
                self.revisit_page(step, link, url, resp, &previous).await
            }
            _ => {
                // Gone, moved, broken, or no longer the same kind of thing:
                // nothing learned about change; due again at its next time.
                if !(200..=299).contains(&status) {
                    self.core().count(Count::HttpError);
                }
                self.emit_unread(&url, &resp);
                self.core().revisit_found(step, Change::Unknown);
                Ok(Fetched::Nothing)
            }
        }
    }

    /// A revisited target answered with a body: identical to the last one,
    /// nothing is kept; else it is saved as a new file with a new row.
    async fn revisit_target(
        &self,
        step: LinkId,
        link: &Link,
        url: Url,
        resp: Response,
        previous: &Validators,
        tally: &mut StepTally,
    ) -> Result<Fetched, EngineError> {
        let content_type = resp.content_type.clone();
        let warc = self.spec.output.warc;
        let streamed: Streamed = match self.stream_target(link, &url, resp, warc).await? {
            Ok(streamed) => streamed,
            Err(_) => {
                // The body broke off: nothing learned; due again at its next time.
                self.core().revisit_found(step, Change::Unknown);
                return Ok(Fetched::Nothing);
            }
        };
        let sha = streamed.file.sha256_so_far();
        let change = classify(Some(previous), 200, Some(&sha));
        self.core().revisit_found(step, change);
        if change != Change::SameDigest {
            return self.keep_target(
                link,
                url,
                streamed,
                content_type,
                Some(ChangeKind::Changed),
                tally,
            );
        }
        let bytes = streamed.file.bytes();
        streamed.file.abandon();
        self.core().count(Count::BodyBytes(bytes));
        self.emit(
            RequestKind::Get,
            &url,
            Some(200),
            bytes,
            Some(Label::Target),
            false,
            Some(streamed.latency),
        );
        if let (Some(head), Some(sha1)) = (&streamed.exchange, &streamed.sha1) {
            let digest = format!("sha1:{sha1}");
            self.archive_revisit(
                &url,
                head,
                PROFILE_IDENTICAL_PAYLOAD,
                previous,
                Some(&digest),
            )?;
        }
        Ok(Fetched::Nothing)
    }

    /// A revisited page answered with a body: identical, nothing more to do;
    /// changed, its links are read again (the new ones enter the frontier).
    async fn revisit_page(
        &self,
        step: LinkId,
        link: &Link,
        url: Url,
        resp: Response,
        previous: &Validators,
    ) -> Result<Fetched, EngineError> {
        let fields = self.validator_fields(&resp).unwrap_or_default();
        let latency = resp.latency;
        let content_type = resp.content_type.clone();
        // A page on the poison list killed the process or blew its budget
        // when it was parsed for structured data: it is not read again,
        // on a revisit either.
        if self.limits.structured.is_some() && self.parsing.is_poisoned(&url) {
            self.core().revisit_found(step, Change::Unknown);
            return Ok(self.skip_poisoned(&url, Some(latency)));
        }
        let Ok(body) = self.read_body(&url, resp, MAX_PAGE_BYTES).await else {
            self.core().revisit_found(step, Change::Unknown);
            return Ok(Fetched::Nothing);
        };
        self.core().count(Count::Page {
            bytes: body.bytes.len() as u64,
        });
        self.emit(
            RequestKind::Get,
            &url,
            Some(200),
            body.bytes.len() as u64,
            Some(Label::Html),
            false,
            Some(latency),
        );
        let sha: [u8; 32] = sha2::Sha256::digest(&body.bytes).into();
        let change = classify(Some(previous), 200, Some(&sha));
        {
            let mut core = self.core();
            core.revisit_found(step, change);
            if change == Change::Changed {
                let v = Validators::from_response(&fields, Some(sha), SystemTime::now());
                core.set_validators(&url, v);
            }
        }
        if change != Change::Changed {
            return Ok(Fetched::Nothing);
        }
        // A revisit follows links only: structured data is a first fetch's.
        // Without the structured pass the parse is a link extraction like
        // any page's, bounded by the page cap, and needs no share of the
        // parse budget nor a journal line (`parsing.rs`).
        let limits = ExtractLimits {
            structured: None,
            ..(*self.limits).clone()
        };
        let page_url = url.clone();
        let is_sitemap = sitemap::is_sitemap(&link.tag_path);
        // A revisited catalog is read as a catalog again (its new entries).
        let catalog = forager_core::catalog::catalog_of(&link.tag_path);
        let body_cut = body.truncated;
        let links = parse_body(move || {
            if is_sitemap {
                sitemap::sitemap_links(&body.bytes, &page_url, &limits)
            } else if let Some(kind) = catalog {
                let essence = forager_core::mime::essence(content_type.as_deref().unwrap_or(""));
                forager_core::catalog::catalog_links(
                    kind,
                    &body.bytes,
                    &page_url,
                    &essence,
                    &limits,
                )
            } else {
                extract::extract_links(&body.bytes, &page_url, content_type.as_deref(), &limits)
            }
        })
        .await;
        match links {
            Ok(links) => {
                self.note_cut(&url, &links, body_cut);
                debug_assert!(
                    links.structured.is_none(),
                    "no structured pass on a revisit"
                );
                Ok(Fetched::Page {
                    url,
                    links: Box::new(links),
                })
            }
            Err(e) => {
                warn!(job = %self.spec.name, url = %url, error = %e, "link extraction failed");
                Ok(Fetched::Nothing)
            }
        }
    }

    /// A WARC `revisit` record for a revisit that kept nothing.
    fn archive_revisit(
        &self,
        url: &Url,
        head: &crate::exchange::ExchangeHead,
        profile: &'static str,
        previous: &Validators,
        payload_digest: Option<&str>,
    ) -> Result<(), EngineError> {
        let captured = UNIX_EPOCH + Duration::from_secs(previous.fetched_at);
        self.out
            .archive_revisit(
                &self.spec.output,
                url.as_str(),
                head,
                profile,
                (url.as_str(), captured),
                payload_digest,
            )
            .map_err(|source| EngineError::Output {
                job: self.spec.name.clone(),
                source,
            })
    }
}
