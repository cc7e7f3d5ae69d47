//! Saving a target: its body streamed into the job's target folder while it
//! is hashed (and archived with `[output] warc`), then kept under its
//! content-hash name with a manifest row staged for the next checkpoint. The
//! files are [`crate::output`]'s; this file decides when a body is a target.

use super::*;

impl Runner<'_> {
    pub(super) async fn save_target(
        &self,
        link: &Link,
        url: Url,
        resp: Response,
        content_type: Option<String>,
        tally: &mut StepTally,
    ) -> Result<Fetched, EngineError> {
        let streamed = match self.stream_target(link, &url, resp, false).await? {
            Ok(streamed) => streamed,
            Err(failed) => return Ok(failed),
        };
        let change = self.change_of_new();
        self.keep_target(link, url, streamed, content_type, change, tally)
    }

    /// Stream a target's body into a temporary file, up to `limits.max_body`
    /// (`Err` with what to do when the body broke off). `sha1`: also take the
    /// body's SHA-1 (a revisit's WARC record names the payload by it).
    pub(super) async fn stream_target(
        &self,
        link: &Link,
        url: &Url,
        mut resp: Response,
        sha1: bool,
    ) -> Result<Result<Streamed, Fetched>, EngineError> {
        use sha1::Digest;
        let latency = resp.latency;
        let validators = self.validator_fields(&resp);
        let content_type = resp.content_type.clone();
        let mime = essence(content_type.as_deref().unwrap_or(""));
        let job = self.spec.name.clone();
        let out_err = |source| EngineError::Output {
            job: job.clone(),
            source,
        };
        // A file served as `application/octet-stream` is named by its name or bytes.
        let name = file_name_of(&resp);
        let mut file = self
            .out
            .begin_named(&mime, name.as_deref())
            .map_err(out_err)?;
        let mut sha1 = sha1.then(sha1::Sha1::new);
        let cap = self.spec.limits.max_body;
        let mut truncated = false;
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    let room = cap.saturating_sub(file.bytes()) as usize;
                    let take = chunk.len().min(room);
                    if let Err(e) = file.write(&chunk[..take]) {
                        file.abandon();
                        return Err(out_err(e));
                    }
                    if let Some(h) = &mut sha1 {
                        h.update(&chunk[..take]);
                    }
                    if take < chunk.len() {
                        truncated = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.core().count(Count::BodyBytes(file.bytes()));
                    file.abandon();
                    self.core().count(Count::FetchError);
                    self.fetch_failed(Method::Get, url, &e);
                    return Ok(Err(if e.may_pass() {
                        Fetched::retry(link, url, PassingFault::Outage, e.to_string())
                    } else {
                        Fetched::Nothing
                    }));
                }
            }
        }
        // Taken before `resp` goes: the WARC hook needs the exchange as it happened.
        let exchange = self.spec.output.warc.then(|| resp.exchange_head());
        Ok(Ok(Streamed {
            file,
            truncated,
            exchange,
            sha1: sha1.map(|h| crate::output::warc::base32(&h.finalize())),
            validators,
            latency,
        }))
    }

    /// Keep a streamed target: its file under its digest's name, its WARC
    /// records, its manifest row (with `change` in a continuous job) and its
    /// place in the revisit book.
    pub(super) fn keep_target(
        &self,
        link: &Link,
        url: Url,
        streamed: Streamed,
        content_type: Option<String>,
        change: Option<ChangeKind>,
        tally: &mut StepTally,
    ) -> Result<Fetched, EngineError> {
        let mime = essence(content_type.as_deref().unwrap_or(""));
        let job = self.spec.name.clone();
        let out_err = |source| EngineError::Output {
            job: job.clone(),
            source,
        };
        let Streamed {
            file,
            truncated,
            exchange,
            validators,
            latency,
            ..
        } = streamed;
        let sha256 = file.sha256_so_far();
        let saved = file.finish().map_err(out_err)?;
        self.archive(link, &url, exchange.as_ref(), &saved, truncated)
            .map_err(out_err)?;
        {
            let mut core = self.core();
            core.count(Count::BodyBytes(saved.bytes));
            core.count(Count::Target { bytes: saved.bytes });
        }
        if truncated {
            self.core().count(Count::Truncated);
        }
        let row = ManifestRow {
            url: link.url.to_string(),
            final_url: url.to_string(),
            mime,
            bytes: saved.bytes,
            sha256: saved.sha256,
            file: saved.file,
            referrer: link.referrer.as_ref().map(|u| u.to_string()),
            tag_path: link.tag_path.to_string(),
            fetched_at: rfc3339_now(),
            truncated,
            rdf: None,
            structured: None,
            change,
        };
        info!(job = %self.spec.name, url = %url, bytes = row.bytes, change = ?change, "target saved");
        self.emit(
            RequestKind::Get,
            &url,
            Some(200),
            row.bytes,
            Some(Label::Target),
            true,
            Some(latency),
        );
        if change != Some(ChangeKind::Changed) {
            // A new target rewards the step; a changed one pays its revisit instead.
            tally.targets += 1;
        }
        let mut core = self.core();
        core.add_manifest_row(row);
        // With the row, in the same checkpoint: a revisit repeated after a
        // kill finds this body and saves nothing twice.
        if let Some(fields) = validators {
            let v = forager_core::revisit::Validators::from_response(
                &fields,
                Some(sha256),
                SystemTime::now(),
            );
            if change == Some(ChangeKind::Changed) {
                core.set_validators(&url, v);
            } else {
                core.note_fetched(link, &url, true, v, unix_now());
            }
        }
        Ok(Fetched::Target)
    }

    /// On resume, once `manifest.jsonl` holds the committed `rows`: remove
    /// the target files no row names (see
    /// [`crate::output::TargetDir::remove_orphans`]). A failure costs disk
    /// space, not the crawl: it is logged and the job goes on.
    pub(super) fn remove_orphans(&self, rows: &[ManifestRow]) {
        self.remove_orphans_since(rows, None);
    }

    /// [`Self::remove_orphans`] for a job with no stored state, whose
    /// target folder may hold more than what a first run killed before its
    /// first checkpoint left: the files of a harvest whose store and
    /// manifest were both deleted by hand. Only files written since the
    /// store was created are taken for the first run's; where the file
    /// system does not keep creation times, nothing is removed.
    pub(super) fn remove_orphans_of_a_first_run(&self) {
        let created = std::fs::metadata(self.engine.store.path()).and_then(|m| m.created());
        match created {
            Ok(created) => self.remove_orphans_since(&[], Some(created)),
            Err(e) => {
                debug!(job = %self.spec.name, error = %e,
                    "no creation time for the store: files of a first run killed before its first checkpoint stay");
            }
        }
    }

    fn remove_orphans_since(&self, rows: &[ManifestRow], since: Option<SystemTime>) {
        let committed: HashSet<&str> = rows.iter().map(|r| r.file.as_str()).collect();
        match self.out.remove_orphans(&committed, since) {
            Ok(removed) if !removed.is_empty() => {
                info!(job = %self.spec.name, removed = removed.len(),
                    "target files without a committed manifest row removed (saved just before a crash; their work is redone)");
            }
            Ok(_) => {}
            Err(e) => {
                warn!(job = %self.spec.name, error = %e,
                    "could not look for target files without a manifest row; they stay");
            }
        }
    }
}
