//! Making a job's progress durable: the checkpoint (target folder synced,
//! then the core's delta committed through the store), `manifest.jsonl`
//! after it, and the pause that holds a job while its disk refuses writes.

use super::*;

impl Runner<'_> {
    /// Append the rows just committed to `manifest.jsonl`; after a failed
    /// append, rewrite the whole file from the store instead.
    fn write_manifest_file(&self, rows: &[ManifestRow]) {
        let stale = lock(&self.driver).manifest_stale;
        let result = if stale {
            self.engine
                .store
                .manifest_rows(&self.spec.name)
                .map_err(std::io::Error::other)
                .and_then(|all| self.out.rewrite_manifest(&all))
        } else {
            self.out.append_manifest(rows)
        };
        lock(&self.driver).manifest_stale = result.is_err();
        if let Err(e) = result {
            // The store holds the rows; the file is rewritten at the next checkpoint.
            warn!(job = %self.spec.name, error = %e, "could not write manifest.jsonl");
        }
    }

    /// A write failed: stop fetching, say why, and retry the checkpoint (with
    /// back-off) until it commits and the target folder takes a file again.
    /// Returns true when a stop signal came first.
    pub(super) async fn pause_until_writable(
        &self,
        error: EngineError,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let mut said = error.to_string();
        warn!(job = %self.spec.name, error = %said, "cannot write; job paused until it can");
        lock(&self.observer).paused(&said);
        let mut wait = PAUSE_RETRY_MIN;
        loop {
            tokio::select! {
                biased;
                _ = stop.changed() => return true,
                _ = tokio::time::sleep(wait) => {}
            }
            let retried = match self.checkpoint(None, false).await {
                Ok(()) => self
                    .out
                    .probe_writable()
                    .map_err(|source| EngineError::Output {
                        job: self.spec.name.clone(),
                        source,
                    }),
                Err(e) => Err(e),
            };
            match retried {
                Ok(()) => {
                    info!(job = %self.spec.name, "writes succeed again; job resumed");
                    lock(&self.observer).resumed();
                    return false;
                }
                Err(e) => {
                    let now = e.to_string();
                    if now != said {
                        warn!(job = %self.spec.name, error = %now, "still cannot write");
                        lock(&self.observer).paused(&now);
                        said = now;
                    }
                    wait = (wait * 2).min(PAUSE_RETRY_MAX);
                }
            }
        }
    }

    /// Commit everything since the last checkpoint, atomically (steps may be
    /// in flight: what they hold back is described in [`super::core`]).
    /// `last`: the run ends with it (it then carries the shared state too).
    pub(super) async fn checkpoint(
        &self,
        stop: Option<StopReason>,
        last: bool,
    ) -> Result<(), EngineError> {
        self.log_skipped();
        if let Some(log) = lock(&self.crawl_log).as_mut() {
            log.flush();
        }
        let now_secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        // Under the data file's lock: its members of rows not in this delta follow those that are.
        let mut taken = self
            .out
            .seal_data(|| self.core().take_checkpoint(stop, now_secs))
            .map_err(|source| EngineError::Output {
                job: self.spec.name.clone(),
                source,
            })?;
        // The rows about to commit name files renamed (and statements
        // appended) before the take: make them durable first. WARC records
        // without a row (a revisit that saved nothing) are synced too, so
        // that their index lines follow within a checkpoint interval.
        if !taken.rows.is_empty() || self.out.warc_unsynced() {
            if let Err(source) = self.out.sync() {
                self.core().commit_failed(taken.delta, taken.rows);
                return Err(EngineError::Output {
                    job: self.spec.name.clone(),
                    source,
                });
            }
        }
        if self.engine.claim_shared_staging(last) {
            crate::engine::filters::stage(&mut lock(&self.engine.filters), &mut taken.delta);
            crate::engine::prior::stage(
                &self.spec.targets,
                self.core().strategy(),
                &mut taken.delta,
            );
            self.engine
                .robots
                .stage(&self.engine.fetcher, &mut taken.delta);
        }
        let report = match self.engine.store.commit(taken.delta).await {
            Ok(report) => {
                self.core().committed(&taken.committed_links);
                report
            }
            Err(failed) => {
                // Keep the delta: the retry commits it with whatever comes after.
                self.core().commit_failed(*failed.delta, taken.rows);
                return Err(failed.error.into());
            }
        };
        debug!(job = %self.spec.name, ms = report.duration.as_millis() as u64, grouped = report.deltas, "checkpoint committed");
        if lock(&self.observer).may_write_manifest() {
            self.write_manifest_file(&taken.rows);
        } else {
            // Rewritten from the store at the next checkpoint that may write it.
            lock(&self.driver).manifest_stale = true;
            warn!(job = %self.spec.name, rows = taken.rows.len(),
                "manifest.jsonl left alone: this run's lease may have lapsed, the file may be another node's now");
        }
        lock(&self.driver).last_checkpoint = Instant::now();
        let (counters, stats) = {
            let core = self.core();
            (core.counters().clone(), core.strategy_stats())
        };
        lock(&self.observer).checkpoint(&counters, &stats, &report);
        Ok(())
    }
}
