//! Actions: groups of links whose tag paths are alike (ARCHITECTURE.md § Crawl loop, sb-classifier Alg. 1).
//!
//! A tag path joins the action whose centroid is nearest by cosine similarity
//! when that similarity is at least θ (0.75), otherwise it founds a new action.
//! The centroid is the running mean of the action's member tag paths (the
//! paper's "mean of all projected tag paths"): each distinct path counts once,
//! a path seen again adds a link to its action without moving the centroid.
//! (The authors' code re-adds the vector for every link; that only pulls the
//! centroid towards the most repeated path, such as a menu on every page, and
//! would cost a centroid update per link.)
//!
//! The search is exact, not approximate (the paper used HNSW): exact search
//! gives the same answer however the index was built, so a job restored from a
//! checkpoint makes exactly the decisions an uninterrupted one would — an HNSW
//! graph rebuilt after a restart would not. It stays fast with:
//! - a memo tag-path string → action: a path seen before costs one hash lookup;
//! - an inverted index bucket → (action, centroid value) over the sparse
//!   centroids, searched with prefix filtering: the query's buckets with the
//!   longest posting lists (`[SOS]/html`, `html/body`, shared by nearly every
//!   action: lists of at least 10 % of the actions) are left out as long as a
//!   bound of what they can add to the cosine (the "suffix bound") stays
//!   below θ. The other lists accumulate partial cosines (postings hold the
//!   normalised centroid weight, and the accumulator is a small hash table
//!   that stays in cache, so this is a sequential scan); only candidates whose
//!   partial cosine plus the suffix bound can still beat θ and the best so
//!   far are verified exactly (random memory accesses, the expensive part). Leaving out only the near-universal lists
//!   was measured at 30 000 actions: 6× more postings accumulated than a
//!   maximal suffix, 30× fewer candidates verified.
//!
//! Centroids are kept as sums (cosine similarity does not see the 1/n factor).

use super::tagpath::{PathVectorizer, SparseVector, DIMENSIONS};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Identifier of an action within one job, in founding order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ActionId(pub u32);

impl fmt::Display for ActionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a{}", self.0)
    }
}

/// Tuning of the action index.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionConfig {
    /// Minimum cosine similarity to join an existing action (θ).
    pub threshold: f64,
}

impl Default for ActionConfig {
    fn default() -> Self {
        ActionConfig { threshold: 0.75 }
    }
}

/// Where a tag path went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub action: ActionId,
    /// The path founded this action.
    pub founded: bool,
    /// Which of the action's distinct tag paths this is, in first-seen order
    /// (the founding path is 0): the same path always gets the same member.
    pub member: u32,
}

/// Nearest action of a vector, with its cosine similarity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Nearest {
    pub action: ActionId,
    pub similarity: f64,
}

/// One coordinate of a centroid sum.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct CentroidEntry {
    bucket: u16,
    sum: f64,
    /// Position of this action in the bucket's posting list (rebuilt, not stored).
    #[serde(skip)]
    posting: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Action {
    founding_path: Arc<str>,
    /// Sum of member vectors, sorted by bucket.
    centroid: Vec<CentroidEntry>,
    /// Squared norm of `centroid`, updated incrementally (and stored, so a
    /// restored index computes bit-identical similarities).
    norm_sq: f64,
    /// Links assigned (a path seen twice counts twice).
    links: u64,
    /// Distinct tag paths assigned.
    paths: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct KnownPath {
    path: Arc<str>,
    action: ActionId,
}

/// An action's normalised weight in one bucket, as that bucket's posting list sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Posting {
    action: u32,
    /// centroid sum / centroid norm, in f32: only used for bounds (see `PRUNE_SLACK`).
    weight: f32,
}

/// Caps on what one job's index keeps, whatever a site serves (a hostile page
/// can put every link under a new, long tag path). Real sites need tens of
/// actions and a few thousand paths; the caps are far above that.
///
/// Actions: past this many, a path that joins no action goes to the last
/// one, the catch-all.
pub const MAX_ACTIONS: usize = 100_000;
/// Members of one action: past this many, new paths share the last member.
pub const MAX_MEMBERS: u32 = 1_024;
/// Distinct tag paths remembered (the memo), and their bytes: past either, a
/// new path is placed as usual but not remembered, moves no centroid, and
/// counts as its action's founding member.
pub const MAX_KNOWN_PATHS: usize = 500_000;
pub const MAX_KNOWN_BYTES: usize = 16 << 20;

/// The caps an index applies (the constants above; smaller in tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexCaps {
    pub actions: usize,
    pub members: u32,
    pub known_paths: usize,
    pub known_bytes: usize,
}

impl Default for IndexCaps {
    fn default() -> Self {
        IndexCaps {
            actions: MAX_ACTIONS,
            members: MAX_MEMBERS,
            known_paths: MAX_KNOWN_PATHS,
            known_bytes: MAX_KNOWN_BYTES,
        }
    }
}

/// Only buckets whose posting list holds at least this fraction of the
/// actions may be left out of the accumulation (see the module documentation).
const SUFFIX_MIN_FRACTION: f64 = 0.1;

/// Bounds prune only below this margin: f32 posting values and rounding can
/// never turn a pruned action into one at or above the bar.
const PRUNE_SLACK: f64 = 1e-5;

/// The action index of one job.
#[derive(Clone, Debug, Default)]
pub struct ActionIndex {
    config: ActionConfig,
    vectorizer: PathVectorizer,
    actions: Vec<Action>,
    /// Memo in first-seen order (stored); `lookup` is rebuilt from it.
    known: Vec<KnownPath>,
    lookup: HashMap<Arc<str>, MemoEntry>,
    /// Derived from `known`: per action, its known paths' slots in member order.
    member_slots: Vec<Vec<u32>>,
    /// Bucket → its postings, allocated for the buckets some centroid uses.
    postings: BucketPostings,
    scratch: SearchScratch,
    caps: IndexCaps,
    /// Bytes of the paths in `known` (derived).
    known_bytes: usize,
    /// Paths placed past a cap in this process (not stored: a count for logs).
    overflowed: u64,
}

/// Bucket → the actions whose centroid is non-zero there (never shrinks: sums
/// only grow) and the upper bound of their normalised weights there.
///
/// Sparse because the daemon runs a thousand jobs: a dense table of
/// [`DIMENSIONS`] lists and maxima cost 128 KiB per job before its first
/// request, while a job's centroids touch only the buckets its tag paths hash
/// to. `slot_of` (2 bytes a bucket, allocated on the first insert) points into
/// `lists`, which holds only the buckets in use. Invariant: every `slot_of`
/// entry is [`NO_SLOT`] or an index of `lists`; a bucket without a slot reads
/// as an empty list with maximum weight 0, exactly what the dense table held.
#[derive(Clone, Debug, Default)]
struct BucketPostings {
    slot_of: Vec<u16>,
    lists: Vec<PostingList>,
}

#[derive(Clone, Debug, Default)]
struct PostingList {
    postings: Vec<Posting>,
    max_weight: f64,
}

/// `slot_of` value of a bucket no centroid uses (DIMENSIONS < u16::MAX).
const NO_SLOT: u16 = u16::MAX;

/// What a bucket without a slot reads as.
static EMPTY_LIST: PostingList = PostingList {
    postings: Vec::new(),
    max_weight: 0.0,
};

impl BucketPostings {
    /// The list of `bucket` (empty when no centroid uses it).
    #[inline]
    fn get(&self, bucket: u16) -> &PostingList {
        match self.slot_of.get(usize::from(bucket)) {
            Some(&slot) if slot != NO_SLOT => &self.lists[usize::from(slot)],
            _ => &EMPTY_LIST,
        }
    }

    /// The list of `bucket`, created on first use.
    fn get_mut(&mut self, bucket: u16) -> &mut PostingList {
        debug_assert!(usize::from(bucket) < DIMENSIONS);
        if self.slot_of.is_empty() {
            self.slot_of = vec![NO_SLOT; DIMENSIONS];
        }
        let b = usize::from(bucket);
        if self.slot_of[b] == NO_SLOT {
            debug_assert!(self.lists.len() < DIMENSIONS);
            self.slot_of[b] = self.lists.len() as u16;
            self.lists.push(PostingList::default());
        }
        &mut self.lists[usize::from(self.slot_of[b])]
    }
}

#[derive(Clone, Debug, Default)]
struct SearchScratch {
    partial: Accumulator,
    order: Vec<QueryBucket>,
    stats: SearchStats,
}

const EMPTY_SLOT: u32 = u32::MAX;

/// Action → partial cosine for one search: open addressing sized to twice the
/// postings scanned, so it stays small (cache-resident) however many actions exist.
#[derive(Clone, Debug, Default)]
struct Accumulator {
    keys: Vec<u32>,
    sums: Vec<f32>,
    /// Occupied slots, in insertion order.
    used: Vec<u32>,
}

impl Accumulator {
    /// Empty the table and make room for `postings` insertions at load ≤ 1/2.
    fn reset(&mut self, postings: usize) {
        for &i in &self.used {
            self.keys[i as usize] = EMPTY_SLOT;
        }
        self.used.clear();
        let capacity = (postings.saturating_mul(2)).next_power_of_two().max(64);
        if self.keys.len() < capacity {
            self.keys = vec![EMPTY_SLOT; capacity];
            self.sums = vec![0.0; capacity];
        }
    }

    #[inline]
    fn add(&mut self, action: u32, x: f32) {
        let mask = self.keys.len() - 1;
        let mut i = crate::hash::mix64(u64::from(action)) as usize & mask;
        loop {
            let k = self.keys[i];
            if k == action {
                self.sums[i] += x;
                return;
            }
            if k == EMPTY_SLOT {
                self.keys[i] = action;
                self.sums[i] = x;
                self.used.push(i as u32);
                return;
            }
            i = (i + 1) & mask;
        }
    }
}

/// Work done by the nearest-centroid searches (for benchmarks and tuning).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    pub searches: u64,
    /// Posting entries accumulated.
    pub accumulated: u64,
    /// Candidates verified exactly (the others were pruned by their bound).
    pub scored: u64,
}

#[derive(Clone, Copy, Debug)]
struct QueryBucket {
    bucket: u16,
    posting_len: usize,
    /// Normalised query weight.
    weight: f64,
}

/// Where a known tag path sits: its slot in the memo, its member index in its action.
#[derive(Clone, Copy, Debug)]
struct MemoEntry {
    slot: u32,
    member: u32,
}

/// Exact cosine of a query with an action's centroid (one fixed summation
/// order, so the same inputs always give the same bits).
fn cosine(action: &Action, vector: &SparseVector, query_norm: f64) -> f64 {
    let mut dot = 0.0;
    for e in vector.entries() {
        if let Ok(i) = action
            .centroid
            .binary_search_by_key(&e.bucket, |c| c.bucket)
        {
            dot += f64::from(e.value) * action.centroid[i].sum;
        }
    }
    dot / (query_norm * action.norm_sq.sqrt())
}

impl ActionIndex {
    pub fn new(config: ActionConfig) -> Self {
        let mut index = ActionIndex {
            config,
            ..Default::default()
        };
        index.reset_derived();
        index
    }

    pub fn config(&self) -> ActionConfig {
        self.config
    }

    /// Change the tuning (e.g. after a restore: configuration is not stored).
    pub fn set_config(&mut self, config: ActionConfig) {
        self.config = config;
    }

    /// Number of actions.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Number of distinct tag paths seen.
    pub fn known_paths(&self) -> usize {
        self.known.len()
    }

    /// Work done by searches since this index was built or restored.
    pub fn search_stats(&self) -> SearchStats {
        self.scratch.stats
    }

    /// The tag path that founded `action`.
    pub fn founding_path(&self, action: ActionId) -> Option<&str> {
        self.actions
            .get(action.0 as usize)
            .map(|a| &*a.founding_path)
    }

    /// Links assigned to `action` so far.
    pub fn links(&self, action: ActionId) -> u64 {
        self.actions.get(action.0 as usize).map_or(0, |a| a.links)
    }

    /// Distinct tag paths assigned to `action` so far.
    pub fn paths(&self, action: ActionId) -> u64 {
        self.actions.get(action.0 as usize).map_or(0, |a| a.paths)
    }

    /// The action a link with this tag path belongs to.
    pub fn assign(&mut self, path: &str) -> Assignment {
        if let Some(&memo) = self.lookup.get(path) {
            let action = self.known[memo.slot as usize].action;
            self.actions[action.0 as usize].links += 1;
            return Assignment {
                action,
                founded: false,
                member: memo.member,
            };
        }
        let vector = self.vectorizer.vectorize(path);
        let joined = self
            .nearest(&vector)
            .filter(|n| n.similarity >= self.config.threshold);
        let remembered = self.known.len() < self.caps.known_paths
            && self.known_bytes + path.len() <= self.caps.known_bytes;
        if !remembered {
            // Placed, counted as a link, but neither remembered nor learned from.
            self.overflowed += 1;
            let (action, founded) = match joined {
                Some(n) => (n.action, false),
                None if self.actions.is_empty() => (self.found(Arc::from(path), &vector), true),
                None => (self.catch_all(), false),
            };
            if !founded {
                self.actions[action.0 as usize].links += 1;
            }
            // Member 0 (the founding path's) always exists: no member arm grows.
            return Assignment {
                action,
                founded,
                member: 0,
            };
        }
        let path: Arc<str> = Arc::from(path);
        let (action, founded) = match joined {
            Some(n) => {
                self.add_to_centroid(n.action, &vector);
                let a = &mut self.actions[n.action.0 as usize];
                a.links += 1;
                a.paths += 1;
                (n.action, false)
            }
            None if self.actions.len() < self.caps.actions => {
                (self.found(path.clone(), &vector), true)
            }
            None => {
                // The catch-all takes the path as it is: its centroid stays its own.
                self.overflowed += 1;
                let action = self.catch_all();
                let a = &mut self.actions[action.0 as usize];
                a.links += 1;
                a.paths += 1;
                (action, false)
            }
        };
        let slot = u32::try_from(self.known.len()).unwrap_or(u32::MAX);
        self.known_bytes += path.len();
        self.known.push(KnownPath {
            path: path.clone(),
            action,
        });
        let member = self.push_member_slot(action, slot);
        self.lookup.insert(path, MemoEntry { slot, member });
        debug_assert!(self.known.len() <= self.caps.known_paths);
        Assignment {
            action,
            founded,
            member,
        }
    }

    /// The action that takes paths joining none once the cap of actions is reached.
    fn catch_all(&self) -> ActionId {
        debug_assert!(!self.actions.is_empty());
        ActionId(u32::try_from(self.actions.len() - 1).unwrap_or(u32::MAX))
    }

    /// Paths placed past one of the caps since this index was created or restored.
    pub fn overflowed(&self) -> u64 {
        self.overflowed
    }

    /// Record `slot` as `action`'s next member; returns its member index
    /// (past the cap of members, the last one, shared).
    fn push_member_slot(&mut self, action: ActionId, slot: u32) -> u32 {
        let i = action.0 as usize;
        if self.member_slots.len() <= i {
            self.member_slots.resize_with(i + 1, Vec::new);
        }
        next_member(&mut self.member_slots[i], slot, self.caps.members)
    }

    /// An empty index with other caps than the defaults.
    pub fn with_caps(config: ActionConfig, caps: IndexCaps) -> Self {
        debug_assert!(caps.actions > 0 && caps.members > 0);
        ActionIndex {
            caps,
            ..ActionIndex::new(config)
        }
    }

    /// The tag path of `action`'s `member`-th distinct path (see [`Assignment::member`]).
    pub fn member_path(&self, action: ActionId, member: u32) -> Option<&str> {
        let slot = *self
            .member_slots
            .get(action.0 as usize)?
            .get(member as usize)?;
        self.known.get(slot as usize).map(|k| &*k.path)
    }

    /// The action `path` would join now (`None`: it would found one), without
    /// changing anything but search buffers (for explain and tests).
    pub fn peek(&mut self, path: &str) -> Option<ActionId> {
        if let Some(&memo) = self.lookup.get(path) {
            return Some(self.known[memo.slot as usize].action);
        }
        self.nearest_path(path)
            .filter(|n| n.similarity >= self.config.threshold)
            .map(|n| n.action)
    }

    /// The nearest action of a tag path, searched as [`Self::assign`] would.
    pub fn nearest_path(&mut self, path: &str) -> Option<Nearest> {
        let vector = self.vectorizer.vectorize_preview(path);
        self.nearest(&vector)
    }

    /// The nearest action of `vector` among those that can reach θ; `None` when
    /// no action can. Ties go to the lowest action id.
    pub fn nearest(&mut self, vector: &SparseVector) -> Option<Nearest> {
        let qn = vector.norm();
        if qn == 0.0 || self.actions.is_empty() {
            return None;
        }
        let theta = self.config.threshold;
        let s = &mut self.scratch;
        s.stats.searches += 1;
        s.order.clear();
        for e in vector.entries() {
            s.order.push(QueryBucket {
                bucket: e.bucket,
                posting_len: self.postings.get(e.bucket).postings.len(),
                weight: f64::from(e.value) / qn,
            });
        }
        // Longest posting lists first: they are the ones worth leaving out.
        s.order.sort_unstable_by(|a, b| {
            b.posting_len
                .cmp(&a.posting_len)
                .then(a.bucket.cmp(&b.bucket))
        });
        let (mut suffix_sq, mut suffix_mw, mut suffix_bound, mut split) = (0.0f64, 0.0f64, 0.0, 0);
        let min_suffix_len = (self.actions.len() as f64 * SUFFIX_MIN_FRACTION) as usize;
        for q in &s.order {
            if q.posting_len < min_suffix_len {
                break;
            }
            let sq = suffix_sq + q.weight * q.weight;
            let mw = suffix_mw + q.weight * self.postings.get(q.bucket).max_weight;
            // Cauchy-Schwarz (normalised centroids are unit) and the per-bucket maxima.
            let bound = sq.sqrt().min(mw);
            if bound < theta - PRUNE_SLACK {
                (suffix_sq, suffix_mw, suffix_bound) = (sq, mw, bound);
                split += 1;
            } else {
                break;
            }
        }
        // An action sharing no prefix bucket has a cosine ≤ the suffix bound < θ.
        let scanned: usize = s.order[split..].iter().map(|q| q.posting_len).sum();
        s.stats.accumulated += scanned as u64;
        s.partial.reset(scanned);
        for q in &s.order[split..] {
            let w = q.weight as f32;
            for p in &self.postings.get(q.bucket).postings {
                s.partial.add(p.action, w * p.weight);
            }
        }
        let mut best: Option<Nearest> = None;
        for &slot in &s.partial.used {
            let upper = f64::from(s.partial.sums[slot as usize]) + suffix_bound;
            let bar = best.map_or(theta, |b| b.similarity.max(theta));
            if upper < bar - PRUNE_SLACK {
                continue;
            }
            let a = s.partial.keys[slot as usize];
            let action = &self.actions[a as usize];
            s.stats.scored += 1;
            let similarity = cosine(action, vector, qn);
            let better = match best {
                None => true,
                Some(b) => {
                    similarity > b.similarity || (similarity == b.similarity && a < b.action.0)
                }
            };
            if better {
                best = Some(Nearest {
                    action: ActionId(a),
                    similarity,
                });
            }
        }
        best
    }

    fn found(&mut self, path: Arc<str>, vector: &SparseVector) -> ActionId {
        let id = u32::try_from(self.actions.len()).unwrap_or(u32::MAX);
        self.actions.push(Action {
            founding_path: path,
            centroid: Vec::with_capacity(vector.entries().len()),
            norm_sq: 0.0,
            links: 1,
            paths: 1,
        });
        self.add_to_centroid(ActionId(id), vector);
        ActionId(id)
    }

    fn add_to_centroid(&mut self, action: ActionId, vector: &SparseVector) {
        let a = action.0 as usize;
        let act = &mut self.actions[a];
        for e in vector.entries() {
            let value = f64::from(e.value);
            match act.centroid.binary_search_by_key(&e.bucket, |c| c.bucket) {
                Ok(i) => {
                    let c = &mut act.centroid[i];
                    let old = c.sum;
                    c.sum += value;
                    act.norm_sq += c.sum * c.sum - old * old;
                }
                Err(i) => {
                    let list = &mut self.postings.get_mut(e.bucket).postings;
                    let posting = u32::try_from(list.len()).unwrap_or(u32::MAX);
                    act.centroid.insert(
                        i,
                        CentroidEntry {
                            bucket: e.bucket,
                            sum: value,
                            posting,
                        },
                    );
                    act.norm_sq += value * value;
                    list.push(Posting {
                        action: action.0,
                        weight: 0.0,
                    });
                }
            }
        }
        let norm = act.norm_sq.sqrt();
        if norm <= 0.0 {
            return;
        }
        // The norm changed: every posting of this action gets its new weight
        // (a join is rare next to searches, and a centroid has tens of entries).
        for c in &act.centroid {
            self.postings.get_mut(c.bucket).postings[c.posting as usize].weight =
                (c.sum / norm) as f32;
        }
        // Sums only grow, so the norm only grows: weights outside `vector` can only
        // fall, and the per-bucket maxima stay upper bounds by raising these alone.
        for e in vector.entries() {
            if let Ok(i) = act.centroid.binary_search_by_key(&e.bucket, |c| c.bucket) {
                let w = act.centroid[i].sum / norm;
                let m = &mut self.postings.get_mut(e.bucket).max_weight;
                if w > *m {
                    *m = w;
                }
            }
        }
    }

    fn reset_derived(&mut self) {
        self.postings = BucketPostings::default();
        self.scratch = SearchScratch::default();
    }

    /// Rebuild everything derived from the stored fields.
    fn rebuild(&mut self) -> Result<(), String> {
        self.reset_derived();
        for (id, action) in self.actions.iter_mut().enumerate() {
            if !(action.norm_sq.is_finite() && action.norm_sq > 0.0) {
                return Err(format!("action {id}: invalid norm {}", action.norm_sq));
            }
            let norm = action.norm_sq.sqrt();
            let mut previous: Option<u16> = None;
            for c in &mut action.centroid {
                let b = usize::from(c.bucket);
                if b >= DIMENSIONS || previous.is_some_and(|p| p >= c.bucket) {
                    return Err(format!(
                        "action {id}: centroid buckets out of order or range"
                    ));
                }
                if !c.sum.is_finite() || c.sum <= 0.0 {
                    return Err(format!("action {id}: invalid centroid value {}", c.sum));
                }
                previous = Some(c.bucket);
                let list = self.postings.get_mut(c.bucket);
                c.posting = u32::try_from(list.postings.len()).unwrap_or(u32::MAX);
                list.postings.push(Posting {
                    action: id as u32,
                    weight: (c.sum / norm) as f32,
                });
                list.max_weight = list.max_weight.max(c.sum / norm);
            }
        }
        self.lookup = HashMap::with_capacity(self.known.len());
        self.member_slots = vec![Vec::new(); self.actions.len()];
        self.known_bytes = 0;
        for (slot, known) in self.known.iter().enumerate() {
            let Some(slots) = self.member_slots.get_mut(known.action.0 as usize) else {
                return Err(format!("tag path {:?} names a missing action", known.path));
            };
            let slot = slot as u32;
            let member = next_member(slots, slot, self.caps.members);
            self.known_bytes += known.path.len();
            if self
                .lookup
                .insert(known.path.clone(), MemoEntry { slot, member })
                .is_some()
            {
                return Err(format!("tag path {:?} stored twice", known.path));
            }
        }
        Ok(())
    }
}

/// Records `slot` as the next member of an action with these member slots;
/// returns its member index. Past `cap` members every path shares the last
/// one, whose slot is its first path's.
fn next_member(slots: &mut Vec<u32>, slot: u32, cap: u32) -> u32 {
    if slots.len() < cap as usize {
        slots.push(slot);
    }
    u32::try_from(slots.len() - 1).unwrap_or(u32::MAX)
}

/// What is stored: the vocabulary, the actions and the memo (configuration is not).
#[derive(Serialize)]
struct StoredIndexRef<'a> {
    vectorizer: &'a PathVectorizer,
    actions: &'a [Action],
    known: &'a [KnownPath],
}

#[derive(Deserialize)]
struct StoredIndex {
    vectorizer: PathVectorizer,
    actions: Vec<Action>,
    known: Vec<KnownPath>,
}

impl Serialize for ActionIndex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StoredIndexRef {
            vectorizer: &self.vectorizer,
            actions: &self.actions,
            known: &self.known,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ActionIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let stored = StoredIndex::deserialize(d)?;
        let mut index = ActionIndex {
            config: ActionConfig::default(),
            vectorizer: stored.vectorizer,
            actions: stored.actions,
            known: stored.known,
            ..Default::default()
        };
        index.rebuild().map_err(serde::de::Error::custom)?;
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;
    use proptest::prelude::*;

    #[test]
    fn caps_bound_actions_members_and_the_memo() {
        let caps = IndexCaps {
            actions: 3,
            members: 2,
            known_paths: 8,
            known_bytes: 1 << 20,
        };
        let mut index = ActionIndex::with_caps(ActionConfig::default(), caps);
        // Paths alike (one action, many members), then paths alike to nothing.
        let alike: Vec<String> = (0..6)
            .map(|i| format!("/html/body/main/div/ul/li/p/span/a.x{i}"))
            .collect();
        let unlike: Vec<String> = (0..20).map(|i| format!("/q{i}/r{i}/s{i}")).collect();
        let first: Vec<Assignment> = alike
            .iter()
            .chain(&unlike)
            .map(|p| index.assign(p))
            .collect();
        assert_eq!(index.len(), 3, "actions capped");
        assert!(index.known_paths() <= 8, "memo capped");
        assert!(
            first.iter().all(|a| a.member < 2),
            "members capped: {first:?}"
        );
        assert_eq!(
            first[0].action, first[5].action,
            "alike paths share an action"
        );
        assert!(index.overflowed() > 0);
        // Past the caps, a path goes to the catch-all (the last action) or
        // the action it joins, and a remembered one keeps its place.
        let again: Vec<Assignment> = alike
            .iter()
            .chain(&unlike)
            .map(|p| index.assign(p))
            .collect();
        for (a, b) in first.iter().zip(&again).take(8) {
            assert_eq!((a.action, a.member), (b.action, b.member));
        }
        assert!(again.iter().all(|a| a.action.0 < 3));
        // A restored index places every path as the original does.
        let mut restored: ActionIndex = codec::decode(&codec::encode(&index)).unwrap();
        restored.caps = caps;
        restored.rebuild().unwrap();
        for p in alike.iter().chain(&unlike) {
            assert_eq!(restored.assign(p), index.assign(p), "{p}");
        }
    }

    /// Brute force: cosine against every centroid, ties to the lowest id.
    fn brute_nearest(index: &ActionIndex, v: &SparseVector) -> Option<Nearest> {
        let qn = v.norm();
        let mut dense = vec![0.0f64; DIMENSIONS];
        for e in v.entries() {
            dense[usize::from(e.bucket)] = f64::from(e.value);
        }
        let mut best: Option<Nearest> = None;
        for (id, a) in index.actions.iter().enumerate() {
            let dot: f64 = a
                .centroid
                .iter()
                .map(|c| dense[usize::from(c.bucket)] * c.sum)
                .sum();
            let sim = dot / (qn * a.norm_sq.sqrt());
            if best.is_none_or(|b| sim > b.similarity) {
                best = Some(Nearest {
                    action: ActionId(id as u32),
                    similarity: sim,
                });
            }
        }
        best
    }

    #[test]
    fn similar_paths_share_an_action_and_different_ones_do_not() {
        let mut idx = ActionIndex::new(ActionConfig::default());
        let first = "/html/body/div.main/div.c/div.d/div.e/ul.files/li/a.download";
        let a = idx.assign(first);
        assert!(a.founded);
        assert_eq!(a.action, ActionId(0));
        // Same path: memo hit, same action.
        let b = idx.assign(first);
        assert_eq!(
            b,
            Assignment {
                action: ActionId(0),
                founded: false,
                member: 0,
            }
        );
        // The last element differs: 8 of 10 2-grams shared, cos = 0.8 ≥ θ → joins.
        let c = idx.assign("/html/body/div.main/div.c/div.d/div.e/ul.files/li/a.other");
        assert_eq!(c.action, ActionId(0), "cos ≥ θ joins");
        assert!(!c.founded);
        assert_eq!(c.member, 1, "the action's second distinct path");
        let d = idx.assign("/html/body/footer/p/span/a");
        assert!(d.founded);
        assert_eq!((d.action, d.member), (ActionId(1), 0));
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.links(ActionId(0)), 3);
        assert_eq!(idx.paths(ActionId(0)), 2);
        assert_eq!(idx.founding_path(ActionId(0)), Some(first));
        assert_eq!(idx.peek("/html/body/footer/p/span/a"), Some(ActionId(1)));
        // Peeking at unseen paths predicts assign without changing the index.
        let similar = "/html/body/div.main/div.c/div.d/div.e/ul.files/li/a.third";
        assert_eq!(idx.peek(similar), Some(ActionId(0)));
        assert_eq!(idx.peek("/html/body/form/select/option/a"), None);
        assert_eq!(idx.known_paths(), 3);
        let e = idx.assign(similar);
        assert_eq!((e.action, e.member), (ActionId(0), 2));
        // Members are derived on restore: the same paths get the same members.
        let mut restored: ActionIndex = codec::decode(&codec::encode(&idx)).unwrap();
        for (path, action, member) in [
            (first, 0, 0),
            ("/html/body/footer/p/span/a", 1, 0),
            (similar, 0, 2),
            (
                "/html/body/div.main/div.c/div.d/div.e/ul.files/li/a.other",
                0,
                1,
            ),
        ] {
            let r = restored.assign(path);
            assert_eq!((r.action, r.member), (ActionId(action), member), "{path}");
            assert_eq!(r, idx.assign(path));
            for index in [&idx, &restored] {
                assert_eq!(index.member_path(ActionId(action), member), Some(path));
            }
        }
        assert_eq!(idx.member_path(ActionId(0), 3), None);
        assert_eq!(idx.member_path(ActionId(2), 0), None);
    }

    #[test]
    fn threshold_decides_between_joining_and_founding() {
        // Two paths of 4 2-grams sharing 2: cos = 0.5.
        let p = "/html/body/a";
        let q = "/html/body/b";
        let mut strict = ActionIndex::new(ActionConfig { threshold: 0.75 });
        strict.assign(p);
        assert!(strict.assign(q).founded);
        let mut loose = ActionIndex::new(ActionConfig { threshold: 0.4 });
        loose.assign(p);
        assert!(!loose.assign(q).founded);
    }

    #[test]
    fn centroid_is_the_running_mean_of_member_paths() {
        let mut idx = ActionIndex::new(ActionConfig { threshold: 0.4 });
        idx.assign("/html/body/a");
        idx.assign("/html/body/a");
        idx.assign("/html/body/b");
        let a = &idx.actions[0];
        // Two distinct paths: [SOS]/html, html/body 2 × 0.25; the others 0.25 each.
        let mut sums: Vec<f64> = a.centroid.iter().map(|c| c.sum).collect();
        sums.sort_by(f64::total_cmp);
        assert_eq!(sums, vec![0.25, 0.25, 0.25, 0.25, 0.5, 0.5]);
        let exact: f64 = a.centroid.iter().map(|c| c.sum * c.sum).sum();
        assert!((a.norm_sq - exact).abs() < 1e-12, "incremental norm");
        assert_eq!((a.links, a.paths), (3, 2));
        // Postings hold the normalised centroid weights.
        for c in &a.centroid {
            let p = idx.postings.get(c.bucket).postings[c.posting as usize];
            assert_eq!((p.action, p.weight), (0, (c.sum / a.norm_sq.sqrt()) as f32));
        }
    }

    #[test]
    fn posting_lists_exist_only_for_buckets_in_use() {
        let mut idx = ActionIndex::new(ActionConfig::default());
        assert!(idx.postings.slot_of.is_empty() && idx.postings.lists.is_empty());
        idx.assign("/html/body/div/a");
        idx.assign("/html/body/table/tr/td/a");
        let mut used: Vec<u16> = idx
            .actions
            .iter()
            .flat_map(|a| a.centroid.iter().map(|c| c.bucket))
            .collect();
        used.sort_unstable();
        used.dedup();
        assert_eq!(idx.postings.lists.len(), used.len());
        for b in 0..DIMENSIONS as u16 {
            let list = idx.postings.get(b);
            assert_eq!(
                !list.postings.is_empty(),
                used.binary_search(&b).is_ok(),
                "{b}"
            );
            assert_eq!(list.max_weight > 0.0, used.binary_search(&b).is_ok(), "{b}");
        }
    }

    fn arb_path() -> impl Strategy<Value = String> {
        let tags = prop::sample::select(vec![
            "div", "div.a", "div.b", "ul", "li", "span", "p", "td", "tr", "table.x", "nav#top",
            "section",
        ]);
        prop::collection::vec(tags, 1..9).prop_map(|t| format!("/html/body/{}/a", t.join("/")))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn pruned_search_equals_brute_force(paths in prop::collection::vec(arb_path(), 1..80), probe in arb_path()) {
            let mut idx = ActionIndex::new(ActionConfig::default());
            for p in &paths {
                idx.assign(p);
            }
            let v = idx.vectorizer.vectorize(&probe);
            let fast = idx.nearest(&v).filter(|n| n.similarity >= 0.75);
            let slow = brute_nearest(&idx, &v).filter(|n| n.similarity >= 0.75);
            prop_assert_eq!(fast.map(|n| n.action), slow.map(|n| n.action));
        }

        #[test]
        fn restore_gives_the_same_assignments(paths in prop::collection::vec(arb_path(), 1..60), later in prop::collection::vec(arb_path(), 1..30)) {
            let mut a = ActionIndex::new(ActionConfig::default());
            for p in &paths {
                a.assign(p);
            }
            let bytes = codec::encode(&a);
            let mut b: ActionIndex = codec::decode(&bytes).unwrap();
            b.set_config(a.config());
            prop_assert_eq!(codec::encode(&b), bytes);
            for p in &later {
                prop_assert_eq!(a.assign(p), b.assign(p));
            }
            prop_assert_eq!(codec::encode(&a), codec::encode(&b));
        }
    }

    #[test]
    fn search_stats_count_scored_centroids() {
        let mut idx = ActionIndex::new(ActionConfig::default());
        idx.assign("/html/body/a");
        idx.assign("/html/body/footer/div.x/span/a");
        let before = idx.search_stats();
        assert_eq!(before.searches, 1, "the first path had nothing to search");
        idx.nearest_path("/html/body/footer/div.x/span/b");
        let after = idx.search_stats();
        assert_eq!(after.searches, 2);
        // Only the footer action shares a rare bucket; `/html/body/a` is pruned.
        assert_eq!(after.scored - before.scored, 1);
    }

    #[test]
    fn corrupt_state_is_rejected() {
        let mut a = ActionIndex::new(ActionConfig::default());
        a.assign("/html/body/a");
        a.known[0].action = ActionId(7);
        assert!(codec::decode::<ActionIndex>(&codec::encode(&a)).is_err());
    }
}
