//! The set of URL hashes a job has discovered.
//!
//! Every in-scope link of every page is looked up here, in a set that grows
//! with the crawl (hundreds of thousands of hashes, megabytes): each lookup
//! is a cache miss, and with `std`'s `HashSet` two (its control bytes, then
//! the slot written). This table keeps the hashes themselves in one array
//! (open addressing, linear probing), so a lookup touches one cache line, and
//! it can be *prefetched*: [`SeenSet::prefetch`] when a link's hash is known,
//! the scope and trap checks meanwhile, [`SeenSet::insert`] after. The keys
//! are URL hashes (uniform already); the slot is chosen from them mixed
//! again, so that crafted URLs cannot pile up on one slot more than on
//! `std`'s table. Grown at 7/8 full like `std`'s (hashbrown) table, so with
//! as many slots for as many hashes beyond a few, at 8 bytes a slot instead
//! of its 9: no more memory.

use crate::hash::mix64;

/// A set of `u64` hashes. Invariants (debug-asserted): `slots` is empty or a
/// power of two long and at most 7/8 full; `0` marks an empty slot (the hash
/// 0 itself is `zero`); `len` counts the hashes held, `zero` included; every
/// hash sits at its home slot or after it, with no empty slot in between.
#[derive(Clone, Debug, Default)]
pub(super) struct SeenSet {
    slots: Vec<u64>,
    len: usize,
    zero: bool,
}

/// Slots of a table's first allocation.
const MIN_SLOTS: usize = 16;

impl SeenSet {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    fn home(&self, h: u64) -> usize {
        debug_assert!(self.slots.len().is_power_of_two());
        // Truncation to usize keeps the low bits, which the mask then takes.
        (mix64(h) as usize) & (self.slots.len() - 1)
    }

    /// Start loading the cache line `h` would be found in, ahead of an
    /// [`SeenSet::insert`] or [`SeenSet::contains`] of it. Only a hint: no
    /// effect on the content.
    #[inline]
    pub(super) fn prefetch(&self, h: u64) {
        if self.slots.is_empty() {
            return;
        }
        let slot: *const u64 = &self.slots[self.home(h)];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint that never faults, and `slot` points
        // into `self.slots` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(slot.cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    pub(super) fn contains(&self, h: u64) -> bool {
        if h == 0 {
            return self.zero;
        }
        !self.slots.is_empty() && self.find(h).is_ok()
    }

    /// Where `h` (not 0) is, `Ok`, or the empty slot it would go to, `Err`:
    /// linear probing from its home slot. The table must have slots.
    #[inline]
    fn find(&self, h: u64) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(h);
        loop {
            match self.slots[i] {
                0 => return Err(i),
                s if s == h => return Ok(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Add `h`; false when it was there.
    pub(super) fn insert(&mut self, h: u64) -> bool {
        if h == 0 {
            let new = !self.zero;
            self.zero = true;
            self.len += usize::from(new);
            return new;
        }
        if (self.len + 1) * 8 > self.slots.len() * 7 {
            self.grow();
        }
        match self.find(h) {
            Ok(_) => false,
            Err(empty) => {
                self.slots[empty] = h;
                self.len += 1;
                true
            }
        }
    }

    /// Twice the slots (at least [`MIN_SLOTS`]), every hash moved over.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![0; size]);
        for h in old.into_iter().filter(|&h| h != 0) {
            // Each hash is held once: its slot in the new table is empty.
            if let Err(empty) = self.find(h) {
                self.slots[empty] = h;
            }
        }
        debug_assert!(self.len * 8 <= self.slots.len() * 7, "seen set over-full");
    }
}

impl FromIterator<u64> for SeenSet {
    fn from_iter<I: IntoIterator<Item = u64>>(hashes: I) -> Self {
        let mut set = SeenSet::default();
        for h in hashes {
            set.insert(h);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn zero_is_a_hash_like_any_other() {
        let mut s = SeenSet::default();
        assert!(!s.contains(0));
        assert!(s.insert(0));
        assert!(!s.insert(0));
        assert!(s.contains(0) && !s.contains(1));
        assert_eq!(s.len(), 1);
        assert!(s.insert(1));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn grows_at_seven_eighths() {
        let mut s = SeenSet::default();
        for h in 1..=14u64 {
            s.insert(h);
        }
        assert_eq!(s.slots.len(), 16, "14 of 16 slots is 7/8");
        s.insert(15);
        assert_eq!(s.slots.len(), 32);
        assert!((1..=15).all(|h| s.contains(h)));
    }

    proptest! {
        /// The same answers as std's set, whatever the hashes (colliding
        /// home slots included: few distinct low bits).
        #[test]
        fn behaves_as_a_hash_set(ops in proptest::collection::vec((any::<bool>(), prop_oneof![0u64..64, any::<u64>()]), 0..2000)) {
            let mut s = SeenSet::default();
            let mut std_set = HashSet::new();
            for (insert, h) in ops {
                s.prefetch(h);
                if insert {
                    prop_assert_eq!(s.insert(h), std_set.insert(h));
                } else {
                    prop_assert_eq!(s.contains(h), std_set.contains(&h));
                }
                prop_assert_eq!(s.len(), std_set.len());
            }
            let rebuilt: SeenSet = std_set.iter().copied().collect();
            prop_assert!(std_set.iter().all(|&h| rebuilt.contains(h)));
            prop_assert_eq!(rebuilt.len(), std_set.len());
        }
    }
}
