//! The process-wide budget for parsing: the bytes that documents being read
//! and parsed (RDF documents, pages of structured-data jobs) may hold at
//! once across every job of a process (issue #36: four daemon jobs each
//! parsing a 250 MB literal took 2.89 GB together; every document was under
//! its own cap, nothing capped them together).
//!
//! Owns: a byte semaphore and the leases drawn on it. A document *reserves*
//! its first share (with room for the statements it will write out) before
//! its body is read, waiting while it holds nothing; it *grows* while it reads (waiting a bounded time) and
//! while it parses (never waiting: the parse runs on a worker thread and
//! must not block it). A growth refused cuts the document, which is counted
//! like any cut; nothing here can abort the process or deadlock it: a lease
//! only ever waits without a deadline when it holds nothing, and a request
//! over the whole budget is clamped to it (that document then runs alone).
//!
//! Waiting is not tokio's `acquire`: a waiter there takes the permits that
//! are free while it waits for the rest, so a reservation queued behind a
//! parse would starve that parse's growth and cut it. Here a waiter takes
//! nothing until all it asks for is free, and is woken when a lease shrinks.
//!
//! Must not touch: what a document is or how it is parsed.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Permits are KiB: tokio's semaphore counts in `u32` per request.
const UNIT: u64 = 1024;
/// Growth during a parse is taken in steps of at least this many units, so
/// that a document of a million short statements asks the semaphore a few
/// hundred times, not a million.
const GROW_STEP_UNITS: u64 = 256;

/// Shared by every job of a process; cheap to clone.
#[derive(Clone)]
pub struct ParseBudget {
    sem: Arc<Semaphore>,
    /// Told whenever a lease gives bytes back.
    released: Arc<Notify>,
    total_units: u64,
}

impl std::fmt::Debug for ParseBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParseBudget")
            .field("bytes", &self.bytes())
            .field("available", &self.available())
            .finish()
    }
}

/// What one document holds of the budget; released when dropped.
pub struct ParseLease {
    sem: Arc<Semaphore>,
    released: Arc<Notify>,
    total_units: u64,
    permit: Option<OwnedSemaphorePermit>,
    /// Bytes the document asked for so far (the permit covers them, rounded up).
    used: u64,
}

fn units(bytes: u64) -> u64 {
    bytes.div_ceil(UNIT)
}

impl ParseBudget {
    pub fn new(bytes: u64) -> ParseBudget {
        let total_units = units(bytes).clamp(1, u64::from(u32::MAX));
        let permits = usize::try_from(total_units)
            .unwrap_or(usize::MAX)
            .min(Semaphore::MAX_PERMITS);
        ParseBudget {
            sem: Arc::new(Semaphore::new(permits)),
            released: Arc::new(Notify::new()),
            total_units: permits as u64,
        }
    }

    /// The whole budget, bytes.
    pub fn bytes(&self) -> u64 {
        self.total_units * UNIT
    }

    /// What no lease holds now, bytes.
    pub fn available(&self) -> u64 {
        self.sem.available_permits() as u64 * UNIT
    }

    /// Waits until `bytes` (at most the whole budget) are free.
    pub async fn reserve(&self, bytes: u64) -> ParseLease {
        self.reserve_with_room(bytes, 0).await
    }

    /// Waits until `bytes` and `room` more are free (at most the whole
    /// budget): the lease counts `bytes` as used, and later growth takes
    /// the room before it asks the budget. Room taken up front is what lets
    /// a large document write its statements out: asked for during the
    /// parse (never waiting), it would find the budget held by the next
    /// documents' reservations, and every large document would be cut.
    pub async fn reserve_with_room(&self, bytes: u64, room: u64) -> ParseLease {
        let mut lease = ParseLease {
            sem: self.sem.clone(),
            released: self.released.clone(),
            total_units: self.total_units,
            permit: None,
            used: 0,
        };
        let want = units(bytes.saturating_add(room)).clamp(1, self.total_units);
        lease.permit = Some(wait_for(&self.sem, &self.released, want).await);
        lease.used = bytes.min(want * UNIT);
        lease
    }
}

/// Takes `units` permits once all of them are free, taking none before.
async fn wait_for(sem: &Arc<Semaphore>, released: &Notify, units: u64) -> OwnedSemaphorePermit {
    let n = u32::try_from(units).unwrap_or(u32::MAX);
    loop {
        let woken = released.notified();
        tokio::pin!(woken);
        // Registered before the check: a release between the two wakes it.
        woken.as_mut().enable();
        if let Ok(permit) = sem.clone().try_acquire_many_owned(n) {
            return permit;
        }
        woken.await;
    }
}

impl Drop for ParseLease {
    fn drop(&mut self) {
        if self.permit.take().is_some() {
            self.released.notify_waiters();
        }
    }
}

impl ParseLease {
    /// Bytes held.
    pub fn held(&self) -> u64 {
        self.permit
            .as_ref()
            .map_or(0, |p| p.num_permits() as u64 * UNIT)
    }

    /// Bytes asked for and granted so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Units to take for `bytes` more, or `None` when they are covered.
    fn shortfall(&self, bytes: u64) -> Option<(u64, u64)> {
        let need = units(self.used.saturating_add(bytes));
        let held = self.held() / UNIT;
        if need <= held {
            return None;
        }
        let exact = need - held;
        let step = exact.max(GROW_STEP_UNITS.min(self.total_units.saturating_sub(held)));
        Some((exact, step))
    }

    fn add(&mut self, permit: OwnedSemaphorePermit) {
        match &mut self.permit {
            Some(held) => held.merge(permit),
            None => self.permit = Some(permit),
        }
    }

    /// Takes `bytes` more if they are free now; never waits. `false`: the
    /// budget is spent, the caller cuts its document.
    pub fn try_grow(&mut self, bytes: u64) -> bool {
        let Some((exact, step)) = self.shortfall(bytes) else {
            self.used += bytes;
            return true;
        };
        for ask in [step, exact] {
            let Ok(n) = u32::try_from(ask) else { continue };
            if let Ok(permit) = self.sem.clone().try_acquire_many_owned(n) {
                self.add(permit);
                self.used += bytes;
                return true;
            }
        }
        false
    }

    /// Takes `bytes` more, waiting at most `patience` for them. Waiting
    /// while holding could deadlock leases that all wait for each other; the
    /// deadline turns that into a cut.
    pub async fn grow(&mut self, bytes: u64, patience: Duration) -> bool {
        if self.try_grow(bytes) {
            return true;
        }
        let Some((exact, _)) = self.shortfall(bytes) else {
            return true;
        };
        if exact > self.total_units {
            return false;
        }
        let acquire = wait_for(&self.sem, &self.released, exact);
        match tokio::time::timeout(patience, acquire).await {
            Ok(permit) => {
                self.add(permit);
                self.used += bytes;
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a test runtime")
    }

    #[test]
    fn leases_hold_their_bytes_until_dropped() {
        runtime().block_on(async {
            let budget = ParseBudget::new(10 << 20);
            let mut a = budget.reserve(4 << 20).await;
            assert_eq!(budget.available(), 6 << 20);
            assert!(a.try_grow(1 << 20));
            assert!(!a.try_grow(8 << 20), "over what is left");
            let b = budget.reserve(1 << 20).await;
            assert_eq!(budget.available(), (10 << 20) - a.held() - b.held());
            drop(a);
            drop(b);
            assert_eq!(budget.available(), 10 << 20);
        });
    }

    #[test]
    fn small_growths_are_counted_by_the_byte() {
        runtime().block_on(async {
            let budget = ParseBudget::new(1 << 20);
            let mut lease = budget.reserve(0).await;
            for _ in 0..10_000 {
                assert!(lease.try_grow(100));
            }
            assert_eq!(lease.used(), 1_000_000);
            assert!(lease.held() >= 1_000_000 && lease.held() <= 1 << 20);
            assert!(!lease.try_grow(100_000));
        });
    }

    #[test]
    fn a_reservation_waits_for_a_release_and_a_growth_gives_up() {
        runtime().block_on(async {
            let budget = ParseBudget::new(2 << 20);
            let mut first = budget.reserve(2 << 20).await;
            assert!(
                !first.grow(1, Duration::from_millis(20)).await,
                "nothing left to grow into"
            );
            let waiting = {
                let budget = budget.clone();
                tokio::spawn(async move { budget.reserve(1 << 20).await.held() })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!waiting.is_finished());
            drop(first);
            assert_eq!(waiting.await.ok(), Some(1 << 20));
        });
    }

    #[test]
    fn a_waiting_reservation_takes_nothing_from_a_parse_that_grows() {
        runtime().block_on(async {
            let budget = ParseBudget::new(10 << 20);
            let mut parsing = budget.reserve(4 << 20).await;
            let waiting = {
                let budget = budget.clone();
                tokio::spawn(async move { budget.reserve(8 << 20).await.held() })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(
                parsing.try_grow(5 << 20),
                "the waiter must not hold the free bytes"
            );
            drop(parsing);
            assert_eq!(waiting.await.ok(), Some(8 << 20));
        });
    }

    #[test]
    fn room_reserved_up_front_is_used_before_the_budget() {
        runtime().block_on(async {
            let budget = ParseBudget::new(10 << 20);
            let mut big = budget.reserve_with_room(4 << 20, 2 << 20).await;
            assert_eq!((big.used(), big.held()), (4 << 20, 6 << 20));
            let _other = budget.reserve(4 << 20).await;
            assert_eq!(budget.available(), 0);
            assert!(big.try_grow(2 << 20), "the room is the lease's own");
            assert!(!big.try_grow(1));
        });
    }

    #[test]
    fn a_request_over_the_whole_budget_takes_all_of_it() {
        runtime().block_on(async {
            let budget = ParseBudget::new(1 << 20);
            let lease = budget.reserve(u64::MAX).await;
            assert_eq!(lease.held(), 1 << 20);
            assert_eq!(budget.available(), 0);
        });
    }
}
