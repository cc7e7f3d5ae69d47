//! A continuous job's revisits, as the core keeps them: which fetched URLs
//! are in the [`RevisitBook`], the steps that revisit one, and what a revisit
//! paid. I/O-free like the rest of the core: the runner passes the time.
//!
//! A revisit is a step of its own: it takes a fresh link id (never stored in
//! the frontier), is in flight like a popped link (so the links its page
//! reveals are unsettled under it, see the core's invariants), and on a
//! cancel goes back to the book, due as it was — never to the frontier.
//!
//! # Attribution: when a revisit paid
//!
//! A revisit *paid* when it brought a new or changed target: the URL itself
//! is a target whose body changed, or the revisited page revealed links never
//! seen before (in scope and not dropped by the strategy) — targets the
//! strategy fetched within the step count, and so do links it queued, which
//! is how a listing page's new entries are found. Crediting queued links at
//! once, rather than when their targets are fetched later, keeps the whole
//! update of a revisit in its own step: it commits with the step's
//! checkpoint and resumes exactly after a kill.

use super::{JobCore, Popped};
use crate::link::{LinkId, QueueKey, TagPath};
use crate::record::{FrontierEntry, JobDelta};
use crate::revisit::{Change, RevisitBook, Validators};
use crate::{codec, job::StepTally};
use url::Url;

/// A step that revisits the book's URL of hash `hash`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RevisitStep {
    pub hash: u64,
    /// The URL was saved as a target (else it is a page).
    pub target: bool,
    /// Links never seen before that the revisited page revealed and the
    /// strategy kept (queued, fetched now or asked).
    pub revealed: u64,
    /// What the fetch found, once it did.
    pub change: Option<Change>,
}

impl RevisitStep {
    /// See the module documentation.
    pub fn paid(&self, tally: StepTally) -> bool {
        let changed_target = self.target && self.change == Some(Change::Changed);
        changed_target || tally.targets > 0 || self.revealed > 0
    }
}

/// The action of a link: its tag path, the group sb's actions start from
/// (a stable hash, the same on every machine and run).
pub fn action_of(tag_path: &TagPath) -> u64 {
    let mut cursor = std::io::Cursor::new(tag_path.as_str().as_bytes());
    murmur3::murmur3_x64_128(&mut cursor, 0x7265_7669).map_or(0, |h| h as u64)
}

impl JobCore {
    /// Whether the job harvests continuously.
    pub fn is_continuous(&self) -> bool {
        self.revisits.is_some()
    }

    /// Whether a continuous job has URLs to revisit.
    pub fn has_revisits(&self) -> bool {
        self.revisits.as_ref().is_some_and(|b| !b.is_empty())
    }

    pub fn revisit_book(&self) -> Option<&RevisitBook> {
        self.revisits.as_ref()
    }

    /// The stored book of a continuous job (ignored by a job that runs once).
    pub fn restore_revisits(
        &mut self,
        rows: &[(u64, Vec<u8>)],
        state: Option<&[u8]>,
    ) -> Result<(), codec::CodecError> {
        match &mut self.revisits {
            Some(book) => book.restore(rows, state),
            None => Ok(()),
        }
    }

    /// `link` was fetched (not as a revisit) and answered at `final_url`
    /// with `validators`: a continuous job keeps it in its book.
    pub fn note_fetched(
        &mut self,
        link: &crate::link::Link,
        final_url: &Url,
        target: bool,
        validators: Validators,
        now: u64,
    ) {
        let Some(book) = &mut self.revisits else {
            return;
        };
        let kept = crate::link::Link {
            url: final_url.clone(),
            ..link.clone()
        };
        let action = action_of(&link.tag_path);
        book.fetched(
            crate::link::url_hash(final_url),
            kept,
            target,
            action,
            validators,
            now,
        );
    }

    /// A revisit saved a changed body: its validators change in the same
    /// checkpoint as the new manifest row (see [`RevisitBook::set_validators`]).
    pub fn set_validators(&mut self, url: &Url, validators: Validators) {
        if let Some(book) = &mut self.revisits {
            book.set_validators(crate::link::url_hash(url), validators);
        }
    }

    /// Begin a step that revisits the due URL the book picks at `now` among
    /// those whose host is `ready`; `frontier_waiting`: the frontier has work
    /// too (they then take turns). Returns the step's id.
    pub fn begin_revisit(
        &mut self,
        now: u64,
        frontier_waiting: bool,
        ready: &dyn Fn(&crate::link::Link) -> bool,
    ) -> Option<LinkId> {
        let (hash, entry) = self
            .revisits
            .as_mut()?
            .take_due(now, frontier_waiting, ready)?;
        let id = LinkId(self.next_link_id);
        self.next_link_id += 1;
        let key = QueueKey::default();
        let entry_link = FrontierEntry {
            link: entry.link,
            key,
        };
        self.in_flight.insert(
            id,
            Popped {
                id,
                key,
                entry: entry_link,
            },
        );
        self.steps_begun += 1;
        self.revisit_steps.insert(
            id,
            RevisitStep {
                hash,
                target: entry.target,
                revealed: 0,
                change: None,
            },
        );
        self.debug_check();
        Some(id)
    }

    /// The validators a revisit step sends back, and whether its URL is a target.
    pub fn revisit_of(&self, step: LinkId) -> Option<(Validators, bool)> {
        let s = self.revisit_steps.get(&step)?;
        let e = self.revisits.as_ref()?.entry(s.hash)?;
        Some((e.validators.clone(), s.target))
    }

    /// What the revisit of `step` found.
    pub fn revisit_found(&mut self, step: LinkId, change: Change) {
        if let Some(s) = self.revisit_steps.get_mut(&step) {
            s.change = Some(change);
        }
    }

    /// The page of step `step` revealed `n` new links the strategy kept.
    pub fn revealed(&mut self, step: LinkId, n: u64) {
        if let Some(s) = self.revisit_steps.get_mut(&step) {
            s.revealed += n;
        }
    }

    /// Settle step `id` at `now`: a revisit updates its schedule (and the
    /// learner); any other step is [`JobCore::settle_step`].
    pub fn settle(&mut self, id: LinkId, tally: StepTally, now: u64) {
        let Some(step) = self.revisit_steps.remove(&id) else {
            self.settle_step(id, tally);
            return;
        };
        self.in_flight.remove(&id);
        self.unsettled.retain(|_, (owner, _)| *owner != id);
        let change = step.change.unwrap_or(Change::Unknown);
        let paid = step.paid(tally);
        if let Some(book) = &mut self.revisits {
            book.revisited(step.hash, change, paid, now);
        }
        self.debug_check();
    }

    /// Every revisit under way is cancelled: due again as it was.
    pub(super) fn abandon_revisits(&mut self) {
        for (id, step) in std::mem::take(&mut self.revisit_steps) {
            self.in_flight.remove(&id);
            if let Some(book) = &mut self.revisits {
                book.release(step.hash);
            }
        }
    }

    /// When the soonest revisit not under way is due (seconds since the epoch).
    pub fn next_revisit_due(&self) -> Option<u64> {
        self.revisits.as_ref()?.next_due()
    }

    /// Put the book's changes since the last checkpoint into `delta`.
    pub(super) fn stage_revisits(&mut self, delta: &mut JobDelta) {
        if let Some(book) = &mut self.revisits {
            // After a failed commit `delta` already holds older rows: these follow them.
            let d = book.take_delta();
            delta.revisit_put.extend(d.entries);
            if d.state.is_some() {
                delta.revisit_state = d.state;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{JobMode, JobSpec, RevisitSpec};
    use crate::link::Link;
    use crate::revisit::{RevisitPolicy, ScheduleConfig};

    fn continuous() -> JobSpec {
        let mut spec = JobSpec::new("c", vec![Url::parse("http://a.test/").unwrap()]);
        spec.mode = JobMode::Continuous(RevisitSpec {
            schedule: ScheduleConfig {
                min_secs: 10,
                max_secs: 100,
            },
            policy: RevisitPolicy::Adaptive,
        });
        spec
    }

    fn page(path: &str) -> Link {
        Link::seed(Url::parse(&format!("http://a.test/{path}")).unwrap())
    }

    #[test]
    fn a_job_that_runs_once_keeps_no_book() {
        let mut core = JobCore::new(&JobSpec::new("o", vec![]));
        let l = page("a");
        core.note_fetched(&l, &l.url, false, Validators::default(), 0);
        assert!(!core.is_continuous() && !core.has_revisits());
        assert_eq!(core.begin_revisit(1000, false, &|_| true), None);
    }

    #[test]
    fn a_cancelled_revisit_goes_back_to_the_book_not_the_frontier() {
        let mut core = JobCore::new(&continuous());
        let l = page("a");
        core.note_fetched(&l, &l.url, false, Validators::default(), 0);
        assert_eq!(core.next_revisit_due(), Some(10));
        assert_eq!(core.begin_revisit(9, false, &|_| true), None);
        let id = core.begin_revisit(10, false, &|_| true).unwrap();
        assert_eq!(core.popped(id).unwrap().entry.link.url, l.url);
        assert_eq!(core.next_revisit_due(), None, "in flight");
        core.abandon_all();
        assert_eq!(core.frontier_len(), 0);
        assert_eq!(core.next_revisit_due(), Some(10));
        core.check_invariants();
    }

    #[test]
    fn a_revisit_pays_with_a_changed_target_or_new_links() {
        let mut core = JobCore::new(&continuous());
        for (path, target) in [("list", false), ("f.csv", true), ("same", false)] {
            let l = page(path);
            core.note_fetched(&l, &l.url, target, Validators::default(), 0);
        }
        let mut paid = Vec::new();
        while let Some(id) = core.begin_revisit(10, false, &|_| true) {
            let url = core.popped(id).unwrap().entry.link.url.clone();
            match url.path() {
                "/list" => {
                    core.revisit_found(id, Change::Changed);
                    core.revealed(id, 2);
                }
                "/f.csv" => core.revisit_found(id, Change::Changed),
                _ => core.revisit_found(id, Change::Changed), // a page that changed, nothing new
            }
            core.settle(id, StepTally::default(), 10);
            paid.push(url.path().to_string());
        }
        assert_eq!(paid.len(), 3);
        let book = core.revisit_book().unwrap();
        assert_eq!(
            book.stats().paid,
            2,
            "the listing and the file, not the page"
        );
        assert_eq!(book.stats().changed, 3);
        let mut delta = JobDelta::new("c");
        core.stage_revisits(&mut delta);
        assert_eq!(delta.revisit_put.len(), 3);
        assert!(delta.revisit_state.is_some());
    }

    #[test]
    fn actions_are_stable_tag_path_hashes() {
        let a = action_of(&TagPath::new("html/body/ul/li/a"));
        assert_eq!(a, action_of(&TagPath::new("html/body/ul/li/a")));
        assert_ne!(a, action_of(&TagPath::new("html/body/p/a")));
    }
}
