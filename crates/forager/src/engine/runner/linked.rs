//! A linked-data job's RDF responses (ARCHITECTURE.md § Linked data): read,
//! parsed through [`parse_body`], saved as a target when they hold a statement
//! (the document as received, its statements appended to `data.nq.gz`), and
//! their IRIs handed back as links, like a page's.

use super::*;
use crate::output::nquads::document_key;
use crate::store::RdfStatements;
use forager_core::rdf::{parse_document_within, RdfLimits, RdfSyntax};

/// Bytes of one RDF document parsed in memory (a bigger `limits.max_body`
/// still bounds it lower).
pub const MAX_RDF_BYTES: u64 = 256 << 20;

/// A linked-data job asks for RDF by content negotiation (unless its
/// `[http]` headers name their own `Accept`).
pub(super) fn with_accept(spec: &JobSpec) -> forager_core::http_options::HttpOptions {
    let mut http = spec.http.clone();
    let named = http
        .headers
        .iter()
        .any(|(n, _)| n == reqwest::header::ACCEPT);
    if spec.targets.rdf && !named {
        http.headers.push((
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static(forager_core::rdf::ACCEPT),
        ));
    }
    http
}

impl Runner<'_> {
    /// Whether a 2xx response goes the linked-data way: an RDF type, or a
    /// generic type whose file name does not already make it another target
    /// (its first bytes then tell).
    pub(super) fn is_rdf_candidate(&self, essence: &str, url: &Url, label: Label) -> bool {
        if !self.spec.targets.rdf {
            return false;
        }
        if RdfSyntax::of_mime(essence).is_some() {
            return true;
        }
        let generic = essence.is_empty() || forager_core::mime::GENERIC_TYPES.contains(&essence);
        let rdf_name = RdfSyntax::of_response(essence, url, b"").is_some();
        generic && (rdf_name || label != Label::Target)
    }

    /// Read and parse an RDF candidate; see the module documentation.
    pub(super) async fn handle_rdf(
        &self,
        link: &Link,
        url: Url,
        resp: Response,
        tally: &mut StepTally,
    ) -> Result<Fetched, EngineError> {
        let latency = Some(resp.latency);
        if self.parsing.is_poisoned(&url) {
            return Ok(self.skip_poisoned(&url, latency));
        }
        let content_type = resp.content_type.clone();
        let mime = essence(content_type.as_deref().unwrap_or(""));
        // A document served as `text/plain` is named by its name (`.ttl`…).
        let name = file_name_of(&resp);
        let exchange = self.spec.output.warc.then(|| resp.exchange_head());
        let cap = self.spec.limits.max_body.min(MAX_RDF_BYTES);
        // Its share of the process-wide budget, before a byte is read.
        let mut lease = self.parse_lease(resp.content_length, cap).await;
        let body = match self.read_body_leased(&url, resp, cap, &mut lease).await {
            Ok(b) => b,
            Err(e) => return Ok(Fetched::after_failed_read(link, &url, &e)),
        };
        self.core().count(Count::BodyBytes(body.bytes.len() as u64));
        let Some(syntax) = RdfSyntax::of_response(&mime, &url, &body.bytes) else {
            // Not RDF after all (a text file, say): neither.
            self.core().observe(link, Label::Neither, LabelSource::Get);
            self.core().count(Count::Neither);
            self.emit(
                RequestKind::Get,
                &url,
                Some(200),
                body.bytes.len() as u64,
                Some(Label::Neither),
                false,
                latency,
            );
            return Ok(Fetched::Nothing);
        };
        let follow = self.spec.targets.rdf_follow;
        let limits = RdfLimits {
            max_links: self.limits.max_links,
            max_bytes: self.spec.targets.max_statement_bytes,
            max_link_bytes: self.limits.url_rules.max_len,
            ..RdfLimits::default()
        };
        let doc_url = url.clone();
        let mark = self.parsing.begin(&url);
        let parsed = parse_body(move || {
            parsing::crash_point();
            // Each statement written out is charged to the budget too.
            let doc =
                parse_document_within(&body.bytes, &doc_url, syntax, follow, limits, &mut |n| {
                    lease.try_grow(n)
                });
            (doc, body, lease)
        })
        .await;
        self.parsing.end(mark);
        let (doc, body, _lease) = match parsed {
            Ok(p) => p,
            Err(e) => {
                warn!(job = %self.spec.name, url = %url, error = %e, "RDF parsing failed");
                return Ok(Fetched::Nothing);
            }
        };
        if doc.errors > 0 {
            warn!(job = %self.spec.name, url = %url, syntax = syntax.as_str(), errors = doc.errors,
                statements = doc.statements, first = doc.first_error.as_deref().unwrap_or(""),
                "RDF document with errors: its good statements are kept");
        }
        if body.truncated || doc.cut {
            self.core().count(Count::Truncated);
            let reason = doc
                .cut_reason
                .map_or("body over its size cap", |r| r.as_str());
            warn!(job = %self.spec.name, url = %url, reason, statements = doc.statements,
                bytes = doc.nquads.len(), "RDF document cut at a limit; statements past it are lost");
        }
        if let Some(reason) = doc.cut_reason.filter(|r| r.blew_budget()) {
            let detail = format!(
                "{} ({} statements, {} bytes kept)",
                reason.as_str(),
                doc.statements,
                doc.nquads.len()
            );
            self.poison(&url, detail).await;
        }
        if doc.statements == 0 {
            self.core().observe(link, Label::Neither, LabelSource::Get);
            self.core().count(Count::Neither);
            self.emit(
                RequestKind::Get,
                &url,
                Some(200),
                body.bytes.len() as u64,
                Some(Label::Neither),
                false,
                latency,
            );
            return Ok(Fetched::Nothing);
        }
        self.core().observe(link, Label::Target, LabelSource::Get);
        let links = doc.page_links(&url, syntax, &self.limits.url_rules);
        let job = self.spec.name.clone();
        let out_err = |source| EngineError::Output {
            job: job.clone(),
            source,
        };
        let mut file = self
            .out
            .begin_named(&mime, name.as_deref())
            .map_err(out_err)?;
        if let Err(e) = file.write(&body.bytes) {
            file.abandon();
            return Err(out_err(e));
        }
        let saved = file.finish().map_err(out_err)?;
        self.archive(link, &url, exchange.as_ref(), &saved, body.truncated)
            .map_err(out_err)?;
        {
            let mut core = self.core();
            core.count(Count::Target { bytes: saved.bytes });
        }
        let key = document_key(&saved.sha256, url.as_str());
        let row = ManifestRow {
            url: link.url.to_string(),
            final_url: url.to_string(),
            mime,
            bytes: saved.bytes,
            sha256: saved.sha256.clone(),
            file: saved.file.clone(),
            referrer: link.referrer.as_ref().map(|u| u.to_string()),
            tag_path: link.tag_path.to_string(),
            fetched_at: rfc3339_now(),
            truncated: body.truncated || doc.cut,
            rdf: Some(RdfStatements {
                syntax: syntax.as_str().to_string(),
                statements: doc.statements,
                errors: doc.errors,
            }),
            structured: None,
            change: self.change_of_new(),
        };
        self.out
            .append_statements(&key, &doc.nquads, || self.core().add_manifest_row(row))
            .map_err(out_err)?;
        info!(job = %self.spec.name, url = %url, syntax = syntax.as_str(), statements = doc.statements, links = links.links.len(), "RDF document saved");
        self.emit(
            RequestKind::Get,
            &url,
            Some(200),
            saved.bytes,
            Some(Label::Target),
            true,
            latency,
        );
        tally.targets += 1;
        Ok(Fetched::Page {
            url,
            links: Box::new(links),
        })
    }
}
