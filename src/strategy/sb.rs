//! TEMPORARY: replaced by the learn/strategy work in this session.
use super::{Bfs, QueueKey, Strategy, StrategyKind, Triage};
use crate::link::{Link, LinkId};
use crate::mime::Label;
use crate::store::codec::CodecError;

pub struct SleepingBandit(Bfs);
impl SleepingBandit {
    pub fn new(_seed: u64) -> Self {
        SleepingBandit(Bfs::default())
    }
}
impl Strategy for SleepingBandit {
    fn kind(&self) -> StrategyKind { self.0.kind() }
    fn triage(&mut self, link: &Link, known: Option<Label>) -> Triage { self.0.triage(link, known) }
    fn push(&mut self, id: LinkId, key: QueueKey) { self.0.push(id, key) }
    fn pop(&mut self) -> Option<(LinkId, QueueKey)> { self.0.pop() }
    fn len(&self) -> usize { self.0.len() }
    fn save(&self) -> Vec<u8> { self.0.save() }
    fn restore(&mut self, b: &[u8]) -> Result<(), CodecError> { self.0.restore(b) }
}
