//! Which link a free request slot gets: the step protocol's *choose*, with
//! no I/O, shared by the runner and the in-memory replay.
//!
//! A link is chosen when a slot is free, from the strategy as it is then —
//! with every answer received so far taken into account — never long before.
//! A strategy that chooses among hosts (anthelion, ldcoc: see
//! [`Strategy::pop`]) is told which hosts are ready and may leave
//! the slot empty rather than spend it on a host it ranks poorly. For the others, a popped link whose
//! politeness key is not ready is *held*: handed to the driver, which keeps
//! it in its key's lane until the key is ready ([`JobCore::begin_held`]);
//! while `look_ahead` links are held no more are popped, so the choice that
//! waits is at most that many choices old. (Before, the driver popped up to
//! 4 096 links per slot ahead; with the hosts of a web under one politeness
//! key, or one second between two requests to a host, those links were
//! fetched long after they were chosen, and anthelion did no better than
//! bfs.)
//!
//! A link whose *origin* is held back for a while (its robots.txt could
//! not be read, it keeps failing: [`Readiness::Blocked`]) is held *aside*:
//! it waits in its lane like any held link but does not count against
//! `look_ahead`, so a dead https port never takes the only look-ahead slot
//! of a crawl whose http port answers (the crawl froze for the whole
//! robots.txt back-off). Such links are bounded by the frontier. A driver
//! must say `Blocked` for such a link even while its key is taken by other
//! work ([`Readiness::on_taken_key`]): said `Busy`, it took the look-ahead
//! place again, and the http crawl waited for every robots.txt retry of
//! the https origin until that origin was given up.
//!
//! A held link is still in the frontier (the store still has it, and
//! [`JobCore::frontier_len`] counts it); the driver gives it back with
//! [`JobCore::release_held`] when it stops.
//!
//! Invariant: the held count is the number of [`Held`] links handed out
//! and neither begun nor released (debug-asserted where one comes back, and
//! when the steps are abandoned: none may be left out then).
//!
//! [`Strategy::pop`]: crate::strategy::Strategy::pop

use super::JobCore;
use crate::link::{LinkId, QueueKey};
use crate::record::FrontierEntry;
use crate::record::SkipReason;
use crate::strategy::{Confirm, FreeSlot, Popped};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// When a politeness key could take a request of this job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    Now,
    /// Its delay ends in this long.
    After(Duration),
    /// A request is on it (this job's or another's): ready when it ends.
    Busy,
    /// The URL's origin is held back this long, whatever its key's delay
    /// (robots.txt unavailable, back-off of failures): held aside.
    Blocked(Duration),
}

impl Readiness {
    /// The readiness of a URL whose politeness key is taken by other work
    /// of the job (a step on it, links waiting in its lane), from `self`,
    /// the URL's own readiness: `Busy`, unless its origin is held back.
    ///
    /// The origin's hold-back comes first because it decides where a held
    /// link counts: a `Blocked` link is held aside, outside `look_ahead`,
    /// while a `Busy` one takes a look-ahead place until its key frees. A
    /// link of a dead https origin popped while its host's lane was taken
    /// (by the links of that origin already held aside there) was held as
    /// `Busy`: it took the only look-ahead place of a one-request crawl,
    /// and the host's http links waited for the https origin's robots.txt
    /// back-off, every retry of it, until the origin was given up.
    /// Politeness stays per key (a `Now` or `After` URL still waits for the
    /// key); back-off is per origin.
    pub fn on_taken_key(self) -> Readiness {
        match self {
            Readiness::Blocked(d) => Readiness::Blocked(d),
            Readiness::Now | Readiness::After(_) | Readiness::Busy => Readiness::Busy,
        }
    }
}

/// A popped link waiting for its politeness key, in the driver's keeping.
#[derive(Debug)]
pub struct Held {
    id: LinkId,
    key: QueueKey,
    entry: FrontierEntry,
    /// Held aside: its origin is blocked, it does not count against `look_ahead`.
    aside: bool,
}

impl Held {
    pub fn id(&self) -> LinkId {
        self.id
    }

    pub fn url(&self) -> &Url {
        &self.entry.link.url
    }
}

/// What a free slot gets.
#[derive(Debug)]
pub enum NextStep {
    /// The step of this link began ([`JobCore::popped`] has its record).
    Begin(LinkId),
    /// A link popped whose key is not ready: keep it until the key is, then
    /// [`JobCore::begin_held`] (or [`JobCore::release_held`]); and ask again.
    Hold(Held),
    /// Nothing may start now. Ask again after this long, or, with `None`,
    /// when a step ends or links are queued.
    Wait(Option<Duration>),
    /// Nothing is left to fetch: the frontier is empty and nothing is held.
    Empty,
}

/// Pops one offer may make before it gives the slot up: a strategy that
/// defers links bounds its own churn, this bounds a faulty one.
const MAX_POPS_PER_OFFER: usize = 4096;

impl JobCore {
    /// Fill one free request slot (see the module documentation).
    ///
    /// `readiness` says when a URL's politeness key could take a request;
    /// `load` reads a committed frontier record from the store (the core
    /// keeps only records not committed yet). A link popped without a record
    /// is skipped for good, as the runner always did.
    pub fn next_step<E>(
        &mut self,
        readiness: &dyn Fn(&Url) -> Readiness,
        look_ahead: usize,
        load: &mut dyn FnMut(LinkId) -> Result<Option<FrontierEntry>, E>,
    ) -> Result<NextStep, E> {
        // The soonest moment a host looked at here becomes ready.
        let soonest: Cell<Option<Duration>> = Cell::new(None);
        let note = |r: Readiness| {
            if let Readiness::After(d) | Readiness::Blocked(d) = r {
                soonest.set(Some(soonest.get().map_or(d, |s: Duration| s.min(d))));
            }
            r
        };
        let host_ready = |host: &str| {
            let Ok(url) = Url::parse(&format!("http://{host}/")) else {
                return true;
            };
            note(readiness(&url)) == Readiness::Now
        };
        let slot = FreeSlot {
            host_ready: &host_ready,
            look_ahead,
        };
        let mut pops = 0;
        while self.held - self.held_aside < look_ahead.max(1) && pops < MAX_POPS_PER_OFFER {
            pops += 1;
            let Some((id, key)) = self.pop_for(&slot) else {
                break;
            };
            let entry = match self.links.remove(id) {
                Some(entry) => Some(entry),
                None => match load(id) {
                    Ok(entry) => entry,
                    Err(e) => {
                        self.unpop(id, key, None);
                        return Err(e);
                    }
                },
            };
            let Some(entry) = entry else {
                tracing::warn!(job = %self.name, link = %id, "frontier id without a link record; skipped");
                self.delta.frontier_removed.push(id);
                continue;
            };
            let mut held = Held {
                id,
                key,
                entry,
                aside: false,
            };
            match note(readiness(held.url())) {
                Readiness::Now => {}
                Readiness::Blocked(_) => {
                    held.aside = true;
                    self.held += 1;
                    self.held_aside += 1;
                    return Ok(NextStep::Hold(held));
                }
                Readiness::After(_) | Readiness::Busy => {
                    self.held += 1;
                    return Ok(NextStep::Hold(held));
                }
            }
            if let Some(id) = self.confirm_and_begin(held) {
                return Ok(NextStep::Begin(id));
            }
        }
        self.debug_check();
        if self.held == 0 && self.frontier_len() == 0 {
            return Ok(NextStep::Empty);
        }
        Ok(NextStep::Wait(soonest.get()))
    }

    /// A held link's key is ready: ask the strategy about it and begin its
    /// step (its id), or drop or defer it (`None`).
    pub fn begin_held(&mut self, held: Held) -> Option<LinkId> {
        self.unhold(&held);
        self.confirm_and_begin(held)
    }

    /// A held link goes back to the strategy unfetched (the job stops).
    pub fn release_held(&mut self, held: Held) {
        self.unhold(&held);
        self.links.put_back(held.id, held.entry);
        self.strategy.push(held.id, held.key);
    }

    fn unhold(&mut self, held: &Held) {
        debug_assert!(self.held > 0, "{} was not held", held.id);
        self.held = self.held.saturating_sub(1);
        if held.aside {
            debug_assert!(self.held_aside > 0, "{} was not held aside", held.id);
            self.held_aside = self.held_aside.saturating_sub(1);
        }
    }

    /// The strategy's link for a free slot; the soonest retry when the
    /// strategy has nothing at all (it need not wait then).
    fn pop_for(&mut self, slot: &FreeSlot<'_>) -> Option<(LinkId, QueueKey)> {
        self.release_due_retries();
        if let Some(popped) = self.strategy.pop(slot) {
            return Some(popped);
        }
        if !self.strategy.is_empty() {
            return None; // the strategy left the slot empty on purpose
        }
        let ((_, id), key) = self.waiting_retries.pop_first()?;
        Some((id, key))
    }

    /// Ask the strategy about a link whose key is ready, right before its
    /// request: begin its step (its id), or drop or defer it (`None`).
    fn confirm_and_begin(&mut self, h: Held) -> Option<LinkId> {
        let Held { id, key, entry, .. } = h;
        let link = &entry.link;
        let popped = Popped {
            id,
            link,
            key,
            skip_neither: self.skip_neither,
        };
        let verdict = match self.strategy.confirm(&popped) {
            Confirm::Fetch => Ok(()),
            Confirm::Drop => Err(SkipReason::Strategy),
            Confirm::SkipNeither => Err(SkipReason::PredictedNeither),
            Confirm::Defer(later) => {
                // Stored under its new key too: a resume must find it where
                // the strategy put it, not where it was first queued.
                let entry = Arc::new(FrontierEntry {
                    link: entry.link,
                    key: later,
                });
                self.delta.frontier_added.push((id, Arc::clone(&entry)));
                self.links.put_back_shared(id, entry);
                self.strategy.push(id, later);
                return None;
            }
        };
        match verdict {
            Ok(()) => {
                self.begin_step(id, key, Some(entry));
                Some(id)
            }
            Err(reason) => {
                self.delta.frontier_removed.push(id);
                self.counters.dropped += 1;
                self.skip(&link.url, reason, link.referrer.as_deref());
                self.debug_check();
                None
            }
        }
    }

    /// Links popped and held for their politeness key.
    pub fn held(&self) -> usize {
        self.held
    }
}
