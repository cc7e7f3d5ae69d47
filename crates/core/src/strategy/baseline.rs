//! The baselines of the sb paper: breadth-first, depth-first and uniformly random order.
//!
//! They enqueue every link, never HEAD, never learn. Targets are found when
//! their turn in the queue comes.

use super::{FreeSlot, Strategy, StrategyKind, Triage};
use crate::codec::{self, CodecError};
use crate::link::QueueKey;
use crate::link::{Link, LinkId};
use crate::mime::Label;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

fn triage_all(known: Option<Label>) -> Triage {
    match known {
        Some(Label::Neither) => Triage::Drop,
        _ => Triage::Enqueue(QueueKey::default()),
    }
}

/// First in, first out.
#[derive(Default)]
pub struct Bfs {
    queue: VecDeque<LinkId>,
}

impl Strategy for Bfs {
    fn kind(&self) -> StrategyKind {
        StrategyKind::Bfs
    }
    fn triage(&mut self, _link: &Link, known: Option<Label>) -> Triage {
        triage_all(known)
    }
    fn push(&mut self, id: LinkId, _key: QueueKey) {
        self.queue.push_back(id);
    }
    fn pop(&mut self, _slot: &FreeSlot<'_>) -> Option<(LinkId, QueueKey)> {
        self.queue.pop_front().map(|id| (id, QueueKey::default()))
    }
    fn len(&self) -> usize {
        self.queue.len()
    }
    fn save(&self) -> Vec<u8> {
        codec::encode(&())
    }
    fn restore(&mut self, bytes: &[u8]) -> Result<(), CodecError> {
        codec::decode::<()>(bytes)
    }
}

/// Last in, first out.
#[derive(Default)]
pub struct Dfs {
    stack: Vec<LinkId>,
}

impl Strategy for Dfs {
    fn kind(&self) -> StrategyKind {
        StrategyKind::Dfs
    }
    fn triage(&mut self, _link: &Link, known: Option<Label>) -> Triage {
        triage_all(known)
    }
    fn push(&mut self, id: LinkId, _key: QueueKey) {
        self.stack.push(id);
    }
    fn pop(&mut self, _slot: &FreeSlot<'_>) -> Option<(LinkId, QueueKey)> {
        self.stack.pop().map(|id| (id, QueueKey::default()))
    }
    fn len(&self) -> usize {
        self.stack.len()
    }
    fn save(&self) -> Vec<u8> {
        codec::encode(&())
    }
    fn restore(&mut self, bytes: &[u8]) -> Result<(), CodecError> {
        codec::decode::<()>(bytes)
    }
}

/// A uniformly random frontier link each time (seeded).
pub struct RandomOrder {
    links: Vec<LinkId>,
    rng: Xoshiro256PlusPlus,
}

impl RandomOrder {
    pub fn new(seed: u64) -> Self {
        RandomOrder {
            links: Vec::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }
}

impl Strategy for RandomOrder {
    fn kind(&self) -> StrategyKind {
        StrategyKind::Random
    }
    fn triage(&mut self, _link: &Link, known: Option<Label>) -> Triage {
        triage_all(known)
    }
    fn push(&mut self, id: LinkId, _key: QueueKey) {
        self.links.push(id);
    }
    fn pop(&mut self, _slot: &FreeSlot<'_>) -> Option<(LinkId, QueueKey)> {
        if self.links.is_empty() {
            return None;
        }
        let i = self.rng.random_range(0..self.links.len());
        // Ordered removal keeps the list in id order, so a restored frontier is identical.
        Some((self.links.remove(i), QueueKey::default()))
    }
    fn len(&self) -> usize {
        self.links.len()
    }
    fn save(&self) -> Vec<u8> {
        codec::encode(&self.rng)
    }
    fn restore(&mut self, bytes: &[u8]) -> Result<(), CodecError> {
        self.rng = codec::decode(bytes)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(s: &mut dyn Strategy) -> Vec<u64> {
        std::iter::from_fn(|| s.pop(&FreeSlot::ANY).map(|(id, _)| id.0)).collect()
    }

    #[test]
    fn bfs_is_fifo_and_dfs_is_lifo() {
        let mut b = Bfs::default();
        let mut d = Dfs::default();
        for i in 0..5 {
            b.push(LinkId(i), QueueKey::default());
            d.push(LinkId(i), QueueKey::default());
        }
        assert_eq!(drain(&mut b), vec![0, 1, 2, 3, 4]);
        assert_eq!(drain(&mut d), vec![4, 3, 2, 1, 0]);
    }

    #[test]
    fn random_is_seeded_and_resumes_exactly() {
        let run = |seed| {
            let mut r = RandomOrder::new(seed);
            (0..50).for_each(|i| r.push(LinkId(i), QueueKey::default()));
            drain(&mut r)
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));

        let mut a = RandomOrder::new(3);
        (0..50).for_each(|i| a.push(LinkId(i), QueueKey::default()));
        let first: Vec<u64> = (0..10)
            .filter_map(|_| a.pop(&FreeSlot::ANY))
            .map(|(id, _)| id.0)
            .collect();
        let mut left: Vec<u64> = a.links.iter().map(|l| l.0).collect();
        left.sort();
        let mut b = RandomOrder::new(999);
        b.restore(&a.save()).unwrap();
        left.iter()
            .for_each(|&i| b.push(LinkId(i), QueueKey::default()));
        assert_eq!(drain(&mut a), drain(&mut b));
        assert_eq!(first.len(), 10);
    }
}
