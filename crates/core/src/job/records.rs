//! The frontier records a job holds in memory (those not committed yet), by
//! link id.
//!
//! Ids are given in increasing order, and every link a page queues gets a
//! record: a hash map paid a hash, a probe into a table of up to a
//! checkpoint's worth of records (a cache miss each) and its rehashes for
//! every link. Records of new ids go to the back of a deque indexed by
//! `id - base` instead: a push, with lookups and removals by subtraction.
//! A record put back under an older id (a link parked or abandoned after a
//! commit) goes to a small side map, so an old id never stretches the deque.
//!
//! A new record is shared with the pending checkpoint delta (an `Arc`: the
//! link's URLs are not copied to be stored). A link popped while that delta
//! still holds its record copies it then ([`LinkRecords::remove`]); one popped
//! after the commit takes it as is.

use crate::link::LinkId;
use crate::record::FrontierEntry;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Frontier records by id. Invariants (debug-asserted): the deque's first
/// slot is filled (empty slots at the front are trimmed), `len` counts the
/// filled slots plus the side map, and no id is in both. The deque holds
/// only records of new ids, which the commit of their checkpoint removes,
/// so it spans at most the links queued since the last commit but one.
#[derive(Debug, Default)]
pub(super) struct LinkRecords {
    /// Id of `recent[0]`.
    base: u64,
    recent: VecDeque<Option<Arc<FrontierEntry>>>,
    older: HashMap<LinkId, Arc<FrontierEntry>, crate::hash::IntHashBuilder>,
    len: usize,
}

impl LinkRecords {
    /// The record of a new id, greater than every id inserted before.
    pub(super) fn insert_new(&mut self, id: LinkId, entry: Arc<FrontierEntry>) {
        if self.recent.is_empty() {
            self.base = id.0;
        }
        let end = self.base + self.recent.len() as u64;
        debug_assert!(id.0 >= end, "{id} is not a new id (next is #{end})");
        if id.0 < end {
            // Not new after all: kept right, if not fast.
            self.put_back_shared(id, entry);
            return;
        }
        // Ids the job gave to something else (a revisit step) leave a gap.
        for _ in end..id.0 {
            self.recent.push_back(None);
        }
        self.recent.push_back(Some(entry));
        self.len += 1;
    }

    /// A record going back under an id it had (a popped link parked or
    /// abandoned), or any id not known to be new: to the side map, even
    /// within the deque's range, because such a record is in no delta and
    /// no commit would remove it, so in the deque it could hold the front
    /// (and every later slot) for as long as it waits in the frontier.
    pub(super) fn put_back(&mut self, id: LinkId, entry: FrontierEntry) {
        self.put_back_shared(id, Arc::new(entry));
    }

    /// [`Links::put_back`] of a record a delta shares.
    pub(super) fn put_back_shared(&mut self, id: LinkId, entry: Arc<FrontierEntry>) {
        debug_assert!(!self.in_recent(id), "{id} has a record already");
        if self.older.insert(id, entry).is_none() {
            self.len += 1;
        }
    }

    /// Take a record out. It is copied only when the pending delta still
    /// shares it (the link was queued since the last checkpoint was taken).
    pub(super) fn remove(&mut self, id: LinkId) -> Option<FrontierEntry> {
        self.take(id).map(Arc::unwrap_or_clone)
    }

    /// Forget a record the store now holds (its delta committed), without
    /// copying it should a delta still share it.
    pub(super) fn drop_committed(&mut self, id: LinkId) {
        self.take(id);
    }

    fn take(&mut self, id: LinkId) -> Option<Arc<FrontierEntry>> {
        let recent = self.index(id).and_then(|i| self.recent[i].take());
        let removed = recent.or_else(|| self.older.remove(&id))?;
        self.len -= 1;
        self.trim_front();
        Some(removed)
    }

    pub(super) fn contains(&self, id: LinkId) -> bool {
        self.in_recent(id) || self.older.contains_key(&id)
    }

    fn in_recent(&self, id: LinkId) -> bool {
        self.index(id).is_some_and(|i| self.recent[i].is_some())
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    fn index(&self, id: LinkId) -> Option<usize> {
        let i = usize::try_from(id.0.checked_sub(self.base)?).ok()?;
        (i < self.recent.len()).then_some(i)
    }

    fn trim_front(&mut self) {
        while let Some(None) = self.recent.front() {
            self.recent.pop_front();
            self.base += 1;
        }
        debug_assert!(
            self.len >= self.older.len()
                && self.recent.len() >= self.len - self.older.len()
                && self.recent.front().is_none_or(Option::is_some),
            "frontier records miscounted"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Link, QueueKey};
    use url::Url;

    fn entry(n: u64) -> FrontierEntry {
        FrontierEntry {
            link: Link::seed(Url::parse(&format!("http://a.test/{n}")).unwrap()),
            key: QueueKey::default(),
        }
    }

    fn url_of(e: &FrontierEntry) -> &str {
        e.link.url.as_str()
    }

    #[test]
    fn records_come_back_by_id_in_any_order() {
        let mut r = LinkRecords::default();
        for n in 10..20 {
            r.insert_new(LinkId(n), Arc::new(entry(n)));
        }
        // A gap: id 20 went to a revisit step.
        r.insert_new(LinkId(21), Arc::new(entry(21)));
        assert_eq!(r.len(), 11);
        assert!(!r.contains(LinkId(20)));
        assert!(r.remove(LinkId(20)).is_none());
        assert_eq!(
            r.remove(LinkId(15)).as_ref().map(url_of),
            Some("http://a.test/15")
        );
        assert!(r.remove(LinkId(15)).is_none());
        for n in 10..15 {
            assert_eq!(
                r.remove(LinkId(n)).as_ref().map(url_of),
                Some(&*format!("http://a.test/{n}"))
            );
        }
        // The front was trimmed up to the first record left.
        assert_eq!(r.base, 16);
        assert_eq!(r.len(), 5);
        assert!(r.contains(LinkId(21)) && !r.contains(LinkId(9)));
    }

    #[test]
    fn an_old_id_put_back_does_not_stretch_the_deque() {
        let mut r = LinkRecords::default();
        r.insert_new(LinkId(1_000_000), Arc::new(entry(1)));
        r.put_back(LinkId(3), entry(3));
        assert_eq!(r.recent.len(), 1);
        assert_eq!(r.len(), 2);
        assert!(r.contains(LinkId(3)));
        // Put back within the deque's range: to the side map too, so that
        // the deque's front is freed by the commit of its records.
        r.insert_new(LinkId(1_000_001), Arc::new(entry(2)));
        let e = r.remove(LinkId(1_000_001)).unwrap();
        r.put_back(LinkId(1_000_001), e);
        assert_eq!(r.older.len(), 2);
        assert!(r.contains(LinkId(1_000_001)));
        assert_eq!(
            r.remove(LinkId(3)).as_ref().map(url_of),
            Some("http://a.test/3")
        );
        assert!(r.remove(LinkId(1_000_000)).is_some());
        assert!(r.remove(LinkId(1_000_001)).is_some());
        assert_eq!(r.len(), 0);
        assert!(r.recent.is_empty());
        // Emptied: the next new id starts the deque afresh.
        r.insert_new(LinkId(5_000_000), Arc::new(entry(5)));
        assert_eq!((r.base, r.recent.len()), (5_000_000, 1));
    }

    #[test]
    fn a_record_shared_with_a_delta_is_copied_only_while_shared() {
        let mut r = LinkRecords::default();
        let shared = Arc::new(entry(7));
        let in_delta = Arc::clone(&shared);
        r.insert_new(LinkId(7), shared);
        r.insert_new(LinkId(8), Arc::new(entry(8)));
        // Popped while the delta holds it: a copy, the delta's left intact.
        let popped = r.remove(LinkId(7)).unwrap();
        assert_eq!(url_of(&popped), "http://a.test/7");
        assert_eq!(Arc::strong_count(&in_delta), 1);
        assert_eq!(url_of(&in_delta), "http://a.test/7");
        // Dropped once committed: gone, counted out.
        r.drop_committed(LinkId(8));
        assert!(!r.contains(LinkId(8)));
        assert_eq!(r.len(), 0);
    }
}
