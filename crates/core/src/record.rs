//! What a job keeps between checkpoints: the values the store writes per
//! job, the delta one checkpoint commits, and why a link was not followed.
//! Changing one of the stored layouts means bumping the store's
//! `SCHEMA_VERSION` and migrating the rows already stored.
//!
//! Owns: these types. Must not touch: the store itself (crate `forager`),
//! which commits them.

use crate::link::Link;
use crate::link::LinkId;
use crate::link::QueueKey;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// A link waiting in the frontier, with the key its strategy gave it.
/// The key comes first: a resume decodes only the keys (a prefix of each
/// value) and reads a link's record when it is popped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrontierEntry {
    pub key: QueueKey,
    pub link: Link,
}

/// Why a job finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Nothing left to fetch.
    FrontierEmpty,
    /// `budget.requests` reached.
    RequestBudget,
    /// `budget.bytes` reached.
    ByteBudget,
    /// The harvest rate stayed below the early-stop threshold.
    EarlyStop,
    /// Nothing could be fetched: every link failed, retries included, for
    /// reasons that may pass (the origin never answered). Added last: the
    /// stored variant indices of the others do not move.
    Unreachable,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::FrontierEmpty => "frontier empty",
            StopReason::RequestBudget => "request budget reached",
            StopReason::ByteBudget => "byte budget reached",
            StopReason::EarlyStop => "early stop (harvest rate too low)",
            StopReason::Unreachable => "unreachable (nothing could be fetched; see the log)",
        }
    }
}

/// Running totals of a job (also what `/status` and the summary show).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCounters {
    /// GET + HEAD requests, redirect hops included (the budget counts these).
    pub requests: u64,
    pub heads: u64,
    /// robots.txt fetches (not in `requests`).
    pub robots_fetches: u64,
    pub pages: u64,
    pub targets: u64,
    /// Responses that were neither pages nor targets.
    pub neither: u64,
    /// Bytes of bodies downloaded (after decompression).
    pub bytes: u64,
    pub target_bytes: u64,
    pub redirects: u64,
    /// HTTP 4xx/5xx answers.
    pub http_errors: u64,
    /// Network failures: timeouts, resets, refused connections, SSRF refusals.
    pub fetch_errors: u64,
    pub robots_disallowed: u64,
    pub out_of_scope: u64,
    pub blocked: u64,
    /// Bodies cut at `max_body`, and pages whose links were cut (too many
    /// links, or the parser's memory limit): once per response.
    pub truncated: u64,
    /// Links rejected as malformed or traps (too long, repeated segments, too deep).
    pub rejected_links: u64,
    /// Links the strategy decided never to fetch.
    pub dropped: u64,
    /// Links refused because their URL pattern looks like an infinite space.
    pub trap_links: u64,
}

/// A job's small state, rewritten whole at each checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Strategy name and RNG seed the learned state belongs to.
    pub strategy: String,
    pub seed: u64,
    pub counters: JobCounters,
    /// [`crate::strategy::Strategy::save`] output. (Blobs go through serde as
    /// byte strings: the same bincode bytes as a `Vec<u8>`, ~3× faster to decode.)
    /// Stored empty since schema 6: the store keeps it in chunks
    /// (`store/state.rs`) and puts it back here when it reads the record.
    #[serde(with = "serde_bytes")]
    pub strategy_state: Vec<u8>,
    /// Encoded early-stop state.
    #[serde(with = "serde_bytes")]
    pub early_stop_state: Vec<u8>,
    /// Encoded per-pattern trap counts.
    #[serde(with = "serde_bytes")]
    pub trap_state: Vec<u8>,
    pub next_link_id: u64,
    pub next_manifest_row: u64,
    pub stop: Option<StopReason>,
    /// Seconds since the Unix epoch of the checkpoint.
    pub updated_at: u64,
}

/// One saved target, as in `manifest.jsonl` (ARCHITECTURE.md § Output).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestRow {
    pub url: String,
    pub final_url: String,
    pub mime: String,
    pub bytes: u64,
    pub sha256: String,
    /// File name under the job's target folder.
    pub file: String,
    pub referrer: Option<String>,
    pub tag_path: String,
    /// RFC 3339, UTC.
    pub fetched_at: String,
    pub truncated: bool,
    /// An RDF document's statements (linked-data jobs), also in `data.nq.gz`.
    #[serde(default)]
    pub rdf: Option<RdfStatements>,
    /// A structured-data page's statements per syntax, also in `data.nq.gz`.
    #[serde(default)]
    pub structured: Option<StructuredCounts>,
    /// In a continuous job: whether the URL was new, or a revisit found it
    /// changed (the row of its earlier version stays). `None` in a job that
    /// runs once.
    #[serde(default)]
    pub change: Option<ChangeKind>,
}

/// What a continuous job's manifest row says of its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// First saved.
    New,
    /// Saved again by a revisit: its body differs from the last one saved.
    Changed,
}

/// A manifest row as schema version 4 stored it (before [`ManifestRow::change`]).
#[derive(Deserialize)]
pub struct ManifestRowV4 {
    url: String,
    final_url: String,
    mime: String,
    bytes: u64,
    sha256: String,
    file: String,
    referrer: Option<String>,
    tag_path: String,
    fetched_at: String,
    truncated: bool,
    rdf: Option<RdfStatements>,
    structured: Option<StructuredCounts>,
}

impl From<ManifestRowV4> for ManifestRow {
    fn from(v4: ManifestRowV4) -> ManifestRow {
        ManifestRow {
            url: v4.url,
            final_url: v4.final_url,
            mime: v4.mime,
            bytes: v4.bytes,
            sha256: v4.sha256,
            file: v4.file,
            referrer: v4.referrer,
            tag_path: v4.tag_path,
            fetched_at: v4.fetched_at,
            truncated: v4.truncated,
            rdf: v4.rdf,
            structured: v4.structured,
            change: None,
        }
    }
}

/// What a structured-data page held, as its manifest row says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructuredCounts {
    /// Statements from JSON-LD script blocks.
    pub json_ld: u64,
    pub microdata: u64,
    pub rdfa: u64,
    /// Microformats2 items (not RDF: not in the data file).
    pub microformats: u64,
    /// JSON-LD blocks that were not valid JSON or JSON-LD.
    pub json_ld_invalid: u64,
}

/// A manifest row as schema version 3 stored it (before [`ManifestRow::structured`]).
#[derive(Deserialize)]
pub struct ManifestRowV3 {
    url: String,
    final_url: String,
    mime: String,
    bytes: u64,
    sha256: String,
    file: String,
    referrer: Option<String>,
    tag_path: String,
    fetched_at: String,
    truncated: bool,
    rdf: Option<RdfStatements>,
}

impl From<ManifestRowV3> for ManifestRow {
    fn from(v3: ManifestRowV3) -> ManifestRow {
        ManifestRow {
            url: v3.url,
            final_url: v3.final_url,
            mime: v3.mime,
            bytes: v3.bytes,
            sha256: v3.sha256,
            file: v3.file,
            referrer: v3.referrer,
            tag_path: v3.tag_path,
            fetched_at: v3.fetched_at,
            truncated: v3.truncated,
            rdf: v3.rdf,
            structured: None,
            change: None,
        }
    }
}

/// What an RDF document held, as its manifest row says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RdfStatements {
    /// `turtle`, `n-triples`, `n-quads`, `trig`, `rdf-xml`, `json-ld` or `n3`.
    pub syntax: String,
    /// Statements written to the data file.
    pub statements: u64,
    /// Statements the parser refused.
    pub errors: u64,
}

/// A manifest row as schema version 2 stored it (before [`ManifestRow::rdf`]).
#[derive(Deserialize)]
pub struct ManifestRowV2 {
    url: String,
    final_url: String,
    mime: String,
    bytes: u64,
    sha256: String,
    file: String,
    referrer: Option<String>,
    tag_path: String,
    fetched_at: String,
    truncated: bool,
}

impl From<ManifestRowV2> for ManifestRow {
    fn from(v2: ManifestRowV2) -> ManifestRow {
        ManifestRow {
            url: v2.url,
            final_url: v2.final_url,
            mime: v2.mime,
            bytes: v2.bytes,
            sha256: v2.sha256,
            file: v2.file,
            referrer: v2.referrer,
            tag_path: v2.tag_path,
            fetched_at: v2.fetched_at,
            truncated: v2.truncated,
            rdf: None,
            structured: None,
            change: None,
        }
    }
}

/// Why a link was not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// robots.txt disallows it.
    Robots,
    /// Outside the job's scope, or its include/exclude patterns.
    Scope,
    /// Its extension is in `targets.block_ext`.
    BlockedExtension,
    /// The trap guard: a URL pattern repeating without reward.
    Trap,
    /// Deeper than `limits.max_depth`, or a URL the job's limits refuse.
    Limits,
    /// The strategy judged it not worth a request.
    Strategy,
    /// sb predicted it neither a page nor a target (its URL pattern answered
    /// only that), and the job's `budget.neither_links` is `skip`.
    PredictedNeither,
    /// A HEAD answered an error, or redirected out of scope.
    Broken,
}

/// Everything one checkpoint of one job changes.
#[derive(Debug, Default)]
pub struct JobDelta {
    pub job: String,
    /// The job's small state, rewritten whole.
    pub record: Option<JobRecord>,
    /// Records shared with the job core's in-memory records (the core keeps
    /// each until its commit): queuing a link costs a count, not a copy of
    /// its URLs. Stored as the plain [`FrontierEntry`].
    pub frontier_added: Vec<(LinkId, Arc<FrontierEntry>)>,
    pub frontier_removed: Vec<LinkId>,
    pub seen_added: Vec<u64>,
    pub manifest_added: Vec<(u64, ManifestRow)>,
    /// Process-wide blobs to rewrite (name → bytes), e.g. MIME filter chunks.
    pub shared: Vec<(String, Vec<u8>)>,
    /// A continuous job's revisit rows to rewrite (URL hash → encoded entry).
    pub revisit_put: Vec<(u64, Vec<u8>)>,
    /// A continuous job's revisit state (learner, counts), rewritten whole.
    pub revisit_state: Option<Vec<u8>>,
}

impl JobDelta {
    pub fn new(job: &str) -> Self {
        JobDelta {
            job: job.to_string(),
            ..Default::default()
        }
    }

    /// Put an older delta that failed to commit in front of this one, so one
    /// commit carries both in order (an id added there may be removed here).
    pub fn absorb_older(&mut self, older: JobDelta) {
        fn prepend<T>(newer: &mut Vec<T>, mut older: Vec<T>) {
            older.append(newer);
            *newer = older;
        }
        if self.record.is_none() {
            self.record = older.record;
        }
        if self.revisit_state.is_none() {
            self.revisit_state = older.revisit_state;
        }
        prepend(&mut self.revisit_put, older.revisit_put);
        prepend(&mut self.frontier_added, older.frontier_added);
        prepend(&mut self.frontier_removed, older.frontier_removed);
        prepend(&mut self.seen_added, older.seen_added);
        prepend(&mut self.manifest_added, older.manifest_added);
        prepend(&mut self.shared, older.shared);
    }

    /// Stage process-wide blobs, each replacing a copy of it staged earlier
    /// (the first one, if an absorbed older delta holds a name twice). One
    /// index for the whole batch: a checkpoint stages thousands of MIME filter
    /// chunks, and one linear search per blob made staging quadratic (5 % of a
    /// crawl's CPU).
    pub fn stage_shared(&mut self, blobs: impl IntoIterator<Item = (String, Vec<u8>)>) {
        let mut index: HashMap<String, usize> = self
            .shared
            .iter()
            .enumerate()
            .rev() // so the first copy of a name is the one indexed
            .map(|(i, (name, _))| (name.clone(), i))
            .collect();
        for (name, bytes) in blobs {
            match index.get(&name) {
                Some(&i) => self.shared[i].1 = bytes,
                None => {
                    index.insert(name.clone(), self.shared.len());
                    self.shared.push((name, bytes));
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.record.is_none()
            && self.frontier_added.is_empty()
            && self.frontier_removed.is_empty()
            && self.seen_added.is_empty()
            && self.manifest_added.is_empty()
            && self.shared.is_empty()
            && self.revisit_put.is_empty()
            && self.revisit_state.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    /// The layout of [`JobRecord`] before its blobs were marked as byte strings.
    #[derive(Serialize)]
    struct RecordWithPlainVecs {
        strategy: String,
        seed: u64,
        counters: JobCounters,
        strategy_state: Vec<u8>,
        early_stop_state: Vec<u8>,
        trap_state: Vec<u8>,
        next_link_id: u64,
        next_manifest_row: u64,
        stop: Option<StopReason>,
        updated_at: u64,
    }

    #[test]
    fn byte_string_blobs_keep_the_stored_format() {
        let blob: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let old = RecordWithPlainVecs {
            strategy: "sb".into(),
            seed: 7,
            counters: JobCounters::default(),
            strategy_state: blob.clone(),
            early_stop_state: vec![1, 2, 3],
            trap_state: vec![],
            next_link_id: 9,
            next_manifest_row: 2,
            stop: Some(StopReason::FrontierEmpty),
            updated_at: 1,
        };
        let bytes = codec::encode(&old);
        let record: JobRecord = codec::decode(&bytes).unwrap();
        assert_eq!(record.strategy_state, blob);
        assert_eq!(record.early_stop_state, vec![1, 2, 3]);
        assert_eq!(codec::encode(&record), bytes);
    }
}
