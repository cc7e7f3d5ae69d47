//! The unvisited links of sb's actions: each action's links by member (exact
//! tag path), each member's in id order, taken uniformly, by the ranking
//! within actions, or by position across the whole frontier.
//!
//! Owns the queues' layout and the draws that take a link out of them.
//! Must not touch: the bandits, the learners' state (the ranking is read,
//! never trained, here), or anything saved: a restore rebuilds these queues
//! from the frontier the engine pushes back in id order, so the order kept
//! here is what makes a resumed crawl take the decisions of an
//! uninterrupted one.

use crate::learn::LeadRanker;
use crate::link::LinkId;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{btree_map, BTreeMap, HashMap};

/// Link ids of one action in increasing order, removable by position.
///
/// Chunks keep a removal at a random position cheap (a `Vec` of 100 000 ids
/// would move 400 KB per pop) while preserving the order a restore rebuilds.
#[derive(Clone, Debug, Default)]
pub(super) struct LinkBag {
    chunks: Vec<Vec<LinkId>>,
    len: usize,
}

const BAG_CHUNK: usize = 256;

impl LinkBag {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn push(&mut self, id: LinkId) {
        // A link pushed back (an earlier id) goes to its place in id order,
        // where a restore, which pushes the frontier in id order, puts it.
        if let Some(c) = self
            .chunks
            .iter()
            .position(|chunk| chunk.last().is_some_and(|&last| last > id))
        {
            let chunk = &mut self.chunks[c];
            let at = chunk.partition_point(|&x| x < id);
            chunk.insert(at, id);
            self.len += 1;
            return;
        }
        match self.chunks.last_mut() {
            Some(last) if last.len() < BAG_CHUNK => last.push(id),
            _ => {
                let mut chunk = Vec::with_capacity(BAG_CHUNK);
                chunk.push(id);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// The `index`-th id (in id order); `None` when out of range.
    pub(super) fn get(&self, mut index: usize) -> Option<LinkId> {
        for chunk in &self.chunks {
            if index < chunk.len() {
                return Some(chunk[index]);
            }
            index -= chunk.len();
        }
        None
    }

    /// Every id, in id order.
    pub(super) fn iter(&self) -> impl Iterator<Item = LinkId> + '_ {
        self.chunks.iter().flatten().copied()
    }

    /// Remove the `index`-th id (in id order); `None` when out of range.
    pub(super) fn remove_at(&mut self, mut index: usize) -> Option<LinkId> {
        let c = self.chunks.iter().position(|chunk| {
            if index < chunk.len() {
                true
            } else {
                index -= chunk.len();
                false
            }
        })?;
        let id = self.chunks[c].remove(index);
        if self.chunks[c].is_empty() {
            self.chunks.remove(c);
        }
        self.len -= 1;
        Some(id)
    }
}

/// The unvisited links of one action, by member path, each member's in id order.
#[derive(Clone, Debug, Default)]
pub(super) struct ActionQueue {
    members: BTreeMap<u32, LinkBag>,
    len: usize,
}

/// A link taken from an action's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Taken {
    pub(super) id: LinkId,
    pub(super) member: u32,
    /// It was the member's last link.
    pub(super) emptied_member: bool,
}

impl ActionQueue {
    /// Its members' links, by member, each in id order.
    pub(super) fn members(&self) -> &BTreeMap<u32, LinkBag> {
        &self.members
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn member_len(&self, member: u32) -> usize {
        self.members.get(&member).map_or(0, LinkBag::len)
    }

    pub(super) fn push(&mut self, id: LinkId, member: u32) {
        self.members.entry(member).or_default().push(id);
        self.len += 1;
    }

    /// A uniformly random link of `member`; `None` when it has none.
    pub(super) fn take_from_member(
        &mut self,
        member: u32,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Option<Taken> {
        let n = self.members.get(&member)?.len();
        self.remove(member, rng.random_range(0..n))
    }

    /// The link of `member` that `lead` scores best among at most
    /// `config.scan` of them, or (ε) a uniformly random one; `None` when it
    /// has none. Ties go to the first from a random starting point, so
    /// links that score alike are still taken in random order. The best is
    /// taken only when it stands out ([`LeadConfig::margin`] above the
    /// mean of those scored); otherwise the pick stays uniform.
    pub(super) fn take_ranked(
        &mut self,
        member: u32,
        lead: &LeadRanker,
        features: &HashMap<LinkId, Box<[u32]>>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Option<Taken> {
        let bag = self.members.get(&member)?;
        let n = bag.len();
        let config = lead.config();
        if n <= 1 || rng.random::<f64>() < config.epsilon {
            return self.remove(member, rng.random_range(0..n.max(1)));
        }
        let score = |id: LinkId| features.get(&id).map_or(0.0, |f| lead.score(f));
        let mut best: Option<(usize, f64)> = None;
        let (mut sum, mut scored) = (0.0, 0usize);
        let mut consider = |index: usize, id: LinkId| {
            let s = score(id);
            sum += s;
            scored += 1;
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((index, s));
            }
        };
        if n <= config.scan {
            let start = rng.random_range(0..n);
            for (index, id) in bag.iter().enumerate().skip(start) {
                consider(index, id);
            }
            for (index, id) in bag.iter().enumerate().take(start) {
                consider(index, id);
            }
        } else {
            for _ in 0..config.scan {
                let index = rng.random_range(0..n);
                if let Some(id) = bag.get(index) {
                    consider(index, id);
                }
            }
        }
        let (index, top) = best?;
        let mean = sum / scored.max(1) as f64;
        if top - mean < config.margin {
            return self.remove(member, rng.random_range(0..n));
        }
        self.remove(member, index)
    }

    /// A uniformly random link of the whole action (the paper's pick).
    pub(super) fn take_any(&mut self, rng: &mut Xoshiro256PlusPlus) -> Option<Taken> {
        if self.len == 0 {
            return None;
        }
        let mut index = rng.random_range(0..self.len);
        let member = self.members.iter().find_map(|(&member, bag)| {
            if index < bag.len() {
                Some(member)
            } else {
                index -= bag.len();
                None
            }
        })?;
        self.remove(member, index)
    }

    /// Remove the `index`-th link (in id order) of `member`.
    pub(super) fn remove(&mut self, member: u32, index: usize) -> Option<Taken> {
        let btree_map::Entry::Occupied(mut entry) = self.members.entry(member) else {
            return None;
        };
        let id = entry.get_mut().remove_at(index)?;
        let emptied_member = entry.get().is_empty();
        if emptied_member {
            entry.remove();
        }
        self.len -= 1;
        Some(Taken {
            id,
            member,
            emptied_member,
        })
    }
}

/// The `index`-th link of the whole frontier (actions in order, each
/// action's members in order, each member's links in id order), as (action,
/// member, index in the member, id); `None` past the end.
pub(super) fn locate(
    queues: &[ActionQueue],
    mut index: usize,
) -> Option<(u32, u32, usize, LinkId)> {
    for (arm, queue) in queues.iter().enumerate() {
        if index >= queue.len() {
            index -= queue.len();
            continue;
        }
        for (&member, bag) in &queue.members {
            if index < bag.len() {
                return Some((arm as u32, member, index, bag.get(index)?));
            }
            index -= bag.len();
        }
        return None;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn link_bag_keeps_id_order() {
        let mut bag = LinkBag::default();
        for i in 0..1000 {
            bag.push(LinkId(i));
        }
        assert_eq!(bag.remove_at(0), Some(LinkId(0)));
        assert_eq!(bag.remove_at(300), Some(LinkId(301)));
        assert_eq!(bag.remove_at(997), Some(LinkId(999)));
        assert_eq!(bag.remove_at(997), None);
        assert_eq!(bag.len(), 997);
        let mut rest = Vec::new();
        while let Some(id) = bag.remove_at(0) {
            rest.push(id.0);
        }
        assert!(rest.windows(2).all(|w| w[0] < w[1]));
        assert!(bag.is_empty() && bag.chunks.is_empty());
    }

    #[test]
    fn a_link_pushed_back_takes_its_place_in_id_order() {
        let mut bag = LinkBag::default();
        for i in (0..1000).filter(|i| i % 7 != 3) {
            bag.push(LinkId(i));
        }
        for i in (0..1000).filter(|i| i % 7 == 3).rev() {
            bag.push(LinkId(i));
        }
        assert_eq!(bag.len(), 1000);
        assert!(bag.iter().map(|id| id.0).eq(0..1000));
        assert_eq!(bag.get(500), Some(LinkId(500)));
        assert_eq!(bag.remove_at(3), Some(LinkId(3)));
    }

    #[test]
    fn action_queue_takes_every_link_once_and_reports_emptied_members() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut q = ActionQueue::default();
        for i in 0..30u64 {
            q.push(LinkId(i), (i % 3) as u32);
        }
        assert_eq!(q.take_from_member(7, &mut rng), None, "no such member");
        // Member 1 holds 1, 4, …, 28: ten takes empty it, the last says so.
        let mut from_one = Vec::new();
        for k in 0..10 {
            let t = q.take_from_member(1, &mut rng).unwrap();
            assert_eq!(t.member, 1);
            assert_eq!(t.emptied_member, k == 9);
            from_one.push(t.id.0);
        }
        from_one.sort_unstable();
        assert_eq!(from_one, (0..10).map(|k| 3 * k + 1).collect::<Vec<_>>());
        assert_eq!(q.take_from_member(1, &mut rng), None);
        let mut rest = Vec::new();
        while let Some(t) = q.take_any(&mut rng) {
            assert_eq!(u64::from(t.member), t.id.0 % 3, "taken with its own member");
            rest.push(t.id.0);
        }
        rest.sort_unstable();
        assert_eq!(rest, (0..30).filter(|i| i % 3 != 1).collect::<Vec<_>>());
        assert!(q.is_empty() && q.members.is_empty());
    }
}
