//! A structured-data job's relevant pages (ARCHITECTURE.md § Structured
//! data): an HTML page whose embedded statements reach `min_statements` is a
//! target. Its HTML is saved as any target, its statements appended to
//! `data.nq.gz` (graph = the page URL) under the same lock as its manifest
//! row (exact across a crash, as for linked data), and its links are still
//! followed. The page itself is the step's target, so its relevance is the
//! reward of whatever chose it (sb's action, focused's classifier). With
//! `[output] warc = true` its exchange is archived as any target's is.

use super::*;
use crate::output::nquads::document_key;
use crate::store::StructuredCounts;
use forager_core::extract::structured::StructuredData;

/// The page as received.
pub(super) struct PageBody<'a> {
    /// Its MIME essence.
    pub mime: String,
    pub bytes: &'a [u8],
    /// Cut at the page size cap.
    pub truncated: bool,
    /// The exchange as it happened, when the job archives its targets as WARC.
    pub exchange: Option<&'a crate::exchange::ExchangeHead>,
}

impl Runner<'_> {
    /// Whether the page's structured data makes it a target of this job.
    pub(super) fn is_relevant(&self, data: Option<&StructuredData>) -> bool {
        match (&self.spec.targets.structured, data) {
            (Some(wanted), Some(data)) => data.counts.total() >= wanted.min_statements,
            _ => false,
        }
    }

    /// Saves a relevant page; see the module documentation.
    pub(super) fn save_structured_page(
        &self,
        link: &Link,
        url: &Url,
        page: PageBody<'_>,
        data: &StructuredData,
        tally: &mut StepTally,
    ) -> Result<(), EngineError> {
        let job = self.spec.name.clone();
        let out_err = |source| EngineError::Output {
            job: job.clone(),
            source,
        };
        let mut file = self.out.begin(&page.mime).map_err(out_err)?;
        if let Err(e) = file.write(page.bytes) {
            file.abandon();
            return Err(out_err(e));
        }
        let saved = file.finish().map_err(out_err)?;
        // Before the row is staged, as for every target: a crash between the
        // two costs a record written twice, never a saved page without one.
        self.archive(link, url, page.exchange, &saved, page.truncated)
            .map_err(out_err)?;
        {
            let mut core = self.core();
            core.count(Count::Target { bytes: saved.bytes });
        }
        if data.cut {
            warn!(job = %self.spec.name, url = %url, kept = data.triples.len(),
                "page over targets.max_statements: the statements past it are lost");
        }
        if data.json_ld_invalid > 0 {
            warn!(job = %self.spec.name, url = %url, blocks = data.json_ld_invalid,
                first = data.first_error.as_deref().unwrap_or(""),
                "invalid JSON-LD blocks skipped; the page's other statements are kept");
        }
        let key = document_key(&saved.sha256, url.as_str());
        let counts = StructuredCounts {
            json_ld: data.counts.json_ld,
            microdata: data.counts.microdata,
            rdfa: data.counts.rdfa,
            microformats: data.counts.microformats,
            json_ld_invalid: data.json_ld_invalid,
        };
        let row = ManifestRow {
            url: link.url.to_string(),
            final_url: url.to_string(),
            mime: page.mime,
            bytes: saved.bytes,
            sha256: saved.sha256.clone(),
            file: saved.file.clone(),
            referrer: link.referrer.as_ref().map(|u| u.to_string()),
            tag_path: link.tag_path.to_string(),
            fetched_at: rfc3339_now(),
            truncated: page.truncated || data.cut,
            rdf: None,
            structured: Some(counts),
            change: self.change_of_new(),
        };
        let nquads = data.to_nquads(url.as_str());
        self.out
            .append_statements(&key, &nquads, || self.core().add_manifest_row(row))
            .map_err(out_err)?;
        info!(job = %self.spec.name, url = %url, json_ld = data.counts.json_ld,
            microdata = data.counts.microdata, rdfa = data.counts.rdfa,
            microformats = data.counts.microformats, "structured-data page saved");
        tally.targets += 1;
        Ok(())
    }
}
