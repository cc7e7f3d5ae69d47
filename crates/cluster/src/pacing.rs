//! Politeness across nodes: a per-key (host or pay-level domain) pacing
//! reservation in the database.
//!
//! One statement, `INSERT … ON CONFLICT DO UPDATE … RETURNING`, takes the
//! key's next free start time (or now, if that is past), moves it on by the
//! delay and hands back the slot: the row lock orders concurrent
//! reservations, so two slots of one key are never closer than the delay,
//! whichever node asks (the database's clock decides).
//!
//! One reservation per request cost a database round trip per request (and
//! the CPU of it: a pooled connection, a query, a wake-up of the
//! connection's task), so [`Cluster::pace`] reserves a *stretch* of the
//! key's time at once: `span = max(delay + SLACK, HOLD)`. The node then
//! starts requests to the key anywhere inside the stretch, at least `delay`
//! apart ([`Held::claim`]), and reserves again only once the stretch is
//! used up. A stretch this node leaves unused delays the other nodes on
//! that key by at most its span. When no other node reserved the key
//! since this node's last stretch (the key's next free start is still
//! that stretch's end, compared in the statement under the row's lock),
//! the stretch is [`LONG_FACTOR`] times longer: a node alone on a host
//! asks the database a few times less often, whatever the delay, and a
//! node that comes to share the host waits at most one long stretch, after
//! which both take short ones.
//!
//! The stretch's bounds are taken on this node's clock so that it can prove
//! them: it begins no earlier than the answer arrived plus the wait (which
//! is after the slot), and ends no later than the query was sent plus the
//! wait plus the span (which is before the next node's slot). A request may
//! start at `go` when `go + delay` is still inside, so the next node's first
//! request, at the end of the stretch or later, is at least `delay` after
//! it, and this node's last request of the stretch before, at least `delay`
//! before the stretch began. A request that misses the stretch (a node too
//! slow to start it in time) reserves again. Two requests to one key then
//! start at least `delay` apart, cluster-wide.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use crate::{Cluster, ClusterError, Result};

/// The shortest stretch of a key's time one reservation takes: a node
/// paces on its own inside it, without the database. Longer saves more
/// round trips with short delays, and makes another node that wants the
/// same key wait longer for a stretch this node leaves unused.
pub const HOLD: Duration = Duration::from_millis(250);

/// A key no other node reserved since this node's last stretch gets a
/// stretch this many times longer: a node alone on a host asks the
/// database a few times less, and a node that comes to share the host
/// waits at most one long stretch, after which both take short ones.
pub const LONG_FACTOR: u32 = 4;

/// Keys whose stretch has ended are dropped once this many are held.
const HELD_PRUNE_AT: usize = 4096;

/// The window a request has to start in after its slot, added to every
/// reservation's spacing. It must exceed a reservation's round trip (4 ms
/// median, 17 ms p99 measured on a loaded 2-core machine with a debug build,
/// docs/bench/2026-11-27-cluster.md); against politeness delays of a second
/// or more it costs about 2 % of a host's rate.
pub const SLACK: Duration = Duration::from_millis(25);

/// Reservations a request makes before [`Cluster::pace`] gives up.
const PACE_ATTEMPTS: u32 = 8;

/// A reserved start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// How long to wait from the moment the answer arrived (zero: go now).
    pub wait: Duration,
    /// The slot itself, by the database's clock.
    pub slot: SystemTime,
}

impl Cluster {
    /// Reserve the next start of a request to `key` at least `delay` after the previous one.
    pub async fn reserve(&self, key: &str, delay: Duration) -> Result<Reservation> {
        self.timed("reserve", self.reserve_untimed(key, delay))
            .await
    }

    async fn reserve_untimed(&self, key: &str, delay: Duration) -> Result<Reservation> {
        let client = self.client().await?;
        let what = || format!("reserve a request slot for {key}");
        // Once per request: prepared once per pooled connection, not at
        // every call (an unprepared query is a parse round trip more, and
        // its CPU on both sides).
        let statement = client
            .prepare_cached(
                "WITH t AS (SELECT clock_timestamp() AS now)
                 INSERT INTO forager_pacing AS p (key, next_at)
                 SELECT $1, t.now + $2::float8 * interval '1 second' FROM t
                 ON CONFLICT (key) DO UPDATE
                     SET next_at = greatest(p.next_at, (SELECT now FROM t)) + $2::float8 * interval '1 second'
                 RETURNING p.next_at - $2::float8 * interval '1 second',
                           extract(epoch FROM p.next_at - $2::float8 * interval '1 second' - (SELECT now FROM t))::float8",
            )
            .await
            .map_err(|e| self.query_error(&what(), e))?;
        let row = client
            .query_one(&statement, &[&key, &delay.as_secs_f64()])
            .await
            .map_err(|e| self.query_error(&what(), e))?;
        let slot: SystemTime = row
            .try_get(0)
            .map_err(|e| self.query_error(&format!("reserve a request slot for {key}"), e))?;
        let wait: f64 = row
            .try_get(1)
            .map_err(|e| self.query_error(&format!("reserve a request slot for {key}"), e))?;
        let wait = Duration::try_from_secs_f64(wait.max(0.0)).unwrap_or(Duration::ZERO);
        Ok(Reservation { wait, slot })
    }
}

/// What [`Cluster::reserve_stretch`] took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stretch {
    /// Its slot (its first instant) and the wait for it.
    pub reservation: Reservation,
    /// Its length: the short or the long one asked for.
    pub span: Duration,
    /// Its end, by the database's clock: the key's next free start.
    pub end: SystemTime,
}

impl Cluster {
    /// Reserve a stretch of `key`'s time: `long` when the key's next free
    /// start is still `mine` (the end of this node's last stretch: no other
    /// node reserved the key since), else `short` (module doc).
    pub async fn reserve_stretch(
        &self,
        key: &str,
        short: Duration,
        long: Duration,
        mine: Option<SystemTime>,
    ) -> Result<Stretch> {
        self.timed(
            "reserve",
            self.reserve_stretch_untimed(key, short, long, mine),
        )
        .await
    }

    async fn reserve_stretch_untimed(
        &self,
        key: &str,
        short: Duration,
        long: Duration,
        mine: Option<SystemTime>,
    ) -> Result<Stretch> {
        let client = self.client().await?;
        let what = || format!("reserve a stretch of {key}'s time");
        // The key's row is locked first (`old`), so that the span chosen
        // from its next free start is the one the update moves on; a key
        // without a row yet gets the short span. The microseconds of `end`
        // come back as they went, so `mine` compares exactly.
        let statement = client
            .prepare_cached(
                "WITH t AS (SELECT clock_timestamp() AS now),
                      old AS (SELECT next_at FROM forager_pacing WHERE key = $1 FOR UPDATE),
                      s AS (SELECT CASE WHEN (SELECT next_at FROM old) = $4::timestamptz
                                        THEN $3::float8 ELSE $2::float8 END AS span)
                 INSERT INTO forager_pacing AS p (key, next_at)
                 SELECT $1, t.now + s.span * interval '1 second' FROM t, s
                 ON CONFLICT (key) DO UPDATE
                     SET next_at = greatest(p.next_at, (SELECT now FROM t))
                                   + (SELECT span FROM s) * interval '1 second'
                 RETURNING p.next_at,
                           (SELECT span FROM s),
                           p.next_at - (SELECT span FROM s) * interval '1 second',
                           extract(epoch FROM p.next_at - (SELECT span FROM s) * interval '1 second'
                                               - (SELECT now FROM t))::float8",
            )
            .await
            .map_err(|e| self.query_error(&what(), e))?;
        let row = client
            .query_one(
                &statement,
                &[&key, &short.as_secs_f64(), &long.as_secs_f64(), &mine],
            )
            .await
            .map_err(|e| self.query_error(&what(), e))?;
        let get = |e| self.query_error(&what(), e);
        let end: SystemTime = row.try_get(0).map_err(get)?;
        let span: f64 = row.try_get(1).map_err(get)?;
        let slot: SystemTime = row.try_get(2).map_err(get)?;
        let wait: f64 = row.try_get(3).map_err(get)?;
        let seconds = |x: f64| Duration::try_from_secs_f64(x.max(0.0)).unwrap_or(Duration::ZERO);
        Ok(Stretch {
            reservation: Reservation {
                wait: seconds(wait),
                slot,
            },
            span: seconds(span),
            end,
        })
    }
}

/// A stretch of a key's time this node reserved, on this node's clock (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    /// No request starts before this (the slot, or a moment after it).
    from: Instant,
    /// Every request starts at least its delay before this (the next
    /// node's slot, or a moment before it).
    until: Instant,
    /// The next request here starts no sooner: the last start plus its delay.
    next: Instant,
    /// The stretch's end by the database's clock: still the key's next free
    /// start at the next reservation if no other node reserved it since.
    end: SystemTime,
}

/// What [`Held::claim`] says of a request that wants to start now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Start now: the instant is recorded as the stretch's last start.
    Go(Instant),
    /// Ask again at this instant (the stretch or the next start is ahead).
    WaitUntil(Instant),
    /// The stretch cannot hold this request, late by this much: reserve again.
    Missed(Duration),
}

impl Held {
    /// The stretch of a reservation asked at `sent`, answered at `received`;
    /// `None` if it ends past what this machine's clock can count.
    pub(crate) fn new(sent: Instant, received: Instant, s: Stretch) -> Option<Held> {
        let from = received.checked_add(s.reservation.wait)?;
        Some(Held {
            from,
            until: sent.checked_add(s.reservation.wait)?.checked_add(s.span)?,
            next: from,
            end: s.end,
        })
    }

    /// May a request with `delay` start at `now`? Records the start if so.
    pub(crate) fn claim(&mut self, delay: Duration, now: Instant) -> Claim {
        let earliest = self.from.max(self.next);
        if earliest + delay > self.until {
            return Claim::Missed((earliest + delay).saturating_duration_since(self.until));
        }
        if earliest > now {
            return Claim::WaitUntil(earliest);
        }
        if now + delay > self.until {
            return Claim::Missed(now + delay - self.until);
        }
        self.next = now + delay;
        Claim::Go(now)
    }
}

/// Every key's stretch this node holds.
#[derive(Default)]
pub(crate) struct Holds(std::sync::Mutex<HashMap<String, Held>>);

impl Holds {
    fn claim(&self, key: &str, delay: Duration, now: Instant) -> Option<Claim> {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        held.get_mut(key).map(|h| h.claim(delay, now))
    }

    /// The end of this node's last stretch of `key`, by the database's clock.
    fn last_end(&self, key: &str) -> Option<SystemTime> {
        let held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        held.get(key).map(|h| h.end)
    }

    fn hold(&self, key: &str, h: Held, now: Instant) {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() >= HELD_PRUNE_AT {
            held.retain(|_, h| h.until > now);
        }
        held.insert(key.to_string(), h);
    }
}

impl Cluster {
    /// Wait for `key`'s turn and return the instant the request may start
    /// (now, or a moment ago): at least `delay` after any other request
    /// paced on `key` by any node (module doc). An error when the database
    /// cannot be asked, or when this node missed its stretch
    /// [`PACE_ATTEMPTS`] times running (a machine too loaded to keep the pace).
    pub async fn pace(&self, key: &str, delay: Duration) -> Result<Instant> {
        let mut reserved = 0;
        let mut late_by = Duration::ZERO;
        loop {
            match self.inner.holds.claim(key, delay, Instant::now()) {
                Some(Claim::Go(go)) => return Ok(go),
                Some(Claim::WaitUntil(at)) => {
                    tokio::time::sleep_until(at.into()).await;
                    continue;
                }
                Some(Claim::Missed(by)) if reserved > 0 => {
                    late_by = by;
                    tracing::debug!(node = self.node(), key, attempt = reserved, late_by = ?by,
                        "missed a pacing stretch; reserving again");
                }
                Some(Claim::Missed(_)) | None => {}
            }
            if reserved == PACE_ATTEMPTS {
                return Err(ClusterError::Config {
                    why: format!(
                        "node {}: missed the pacing window of {key} {PACE_ATTEMPTS} times (last by {late_by:?}): \
                         this machine is too loaded to keep the cluster's pace",
                        self.node()
                    ),
                });
            }
            reserved += 1;
            let short = (delay + SLACK).max(HOLD);
            let mine = self.inner.holds.last_end(key);
            let sent = Instant::now();
            let s = self
                .reserve_stretch(key, short, short * LONG_FACTOR, mine)
                .await?;
            let r = s.reservation;
            let received = Instant::now();
            let Some(held) = Held::new(sent, received, s) else {
                return Err(ClusterError::Config {
                    why: format!(
                        "node {}: the database's next slot for {key} is {:?} away: \
                         not a pace this node can keep (forager_pacing row damaged?)",
                        self.node(),
                        r.wait
                    ),
                });
            };
            self.inner.holds.hold(key, held, received);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A stretch reserved with no wait: sent at t0, answered 2 ms later.
    fn stretch(t0: Instant, wait: Duration, span: Duration) -> Held {
        let s = Stretch {
            reservation: Reservation {
                wait,
                slot: SystemTime::UNIX_EPOCH,
            },
            span,
            end: SystemTime::UNIX_EPOCH,
        };
        Held::new(t0, t0 + 2 * MS, s).unwrap()
    }

    #[test]
    fn requests_inside_a_stretch_start_a_delay_apart() {
        let t0 = Instant::now();
        let mut h = stretch(t0, Duration::ZERO, 250 * MS);
        let delay = 10 * MS;
        assert_eq!(h.claim(delay, t0 + 2 * MS), Claim::Go(t0 + 2 * MS));
        // Too soon after the last start: wait for the delay.
        assert_eq!(h.claim(delay, t0 + 5 * MS), Claim::WaitUntil(t0 + 12 * MS));
        assert_eq!(h.claim(delay, t0 + 100 * MS), Claim::Go(t0 + 100 * MS));
        // The last start the stretch holds is its end minus the delay (sent + span − delay).
        assert_eq!(h.claim(delay, t0 + 240 * MS), Claim::Go(t0 + 240 * MS));
        assert_eq!(h.claim(delay, t0 + 250 * MS), Claim::Missed(10 * MS));
    }

    #[test]
    fn no_request_before_the_reserved_slot_nor_too_near_the_next_nodes() {
        let t0 = Instant::now();
        // The slot is 100 ms ahead: nothing before the answer plus the wait.
        let mut h = stretch(t0, 100 * MS, 250 * MS);
        assert_eq!(
            h.claim(10 * MS, t0 + 50 * MS),
            Claim::WaitUntil(t0 + 102 * MS)
        );
        // Ends at sent + wait + span: 350 ms; a 60 ms delay must start by 290 ms.
        assert_eq!(h.claim(60 * MS, t0 + 291 * MS), Claim::Missed(MS));
        assert_eq!(h.claim(60 * MS, t0 + 290 * MS), Claim::Go(t0 + 290 * MS));
    }

    #[test]
    fn a_stretch_too_short_for_the_delay_holds_nothing() {
        let t0 = Instant::now();
        // A delay longer than the span (asked with a smaller one): reserve again.
        let mut h = stretch(t0, Duration::ZERO, 250 * MS);
        assert!(matches!(h.claim(300 * MS, t0 + 2 * MS), Claim::Missed(_)));
    }

    #[test]
    fn a_full_stretch_says_missed_without_waiting() {
        let t0 = Instant::now();
        let mut h = stretch(t0, Duration::ZERO, 30 * MS);
        let delay = 20 * MS;
        assert_eq!(h.claim(delay, t0 + 2 * MS), Claim::Go(t0 + 2 * MS));
        // The next start could be at 22 ms, past the end minus the delay (10 ms).
        assert_eq!(h.claim(delay, t0 + 3 * MS), Claim::Missed(12 * MS));
    }

    #[test]
    fn a_slot_too_far_ahead_is_refused_not_a_panic() {
        let s = Stretch {
            reservation: Reservation {
                wait: Duration::MAX,
                slot: SystemTime::UNIX_EPOCH,
            },
            span: HOLD,
            end: SystemTime::UNIX_EPOCH,
        };
        let t0 = Instant::now();
        assert_eq!(Held::new(t0, t0, s), None);
    }

    #[test]
    fn held_keys_are_pruned_once_many_have_ended() {
        let holds = Holds::default();
        let t0 = Instant::now();
        for i in 0..HELD_PRUNE_AT {
            holds.hold(&format!("k{i}"), stretch(t0, Duration::ZERO, MS), t0);
        }
        holds.hold("live", stretch(t0, Duration::ZERO, 250 * MS), t0 + 10 * MS);
        let held = holds.0.lock().unwrap();
        assert_eq!(held.len(), 1, "only the stretch still running is kept");
        assert!(held.contains_key("live"));
    }
}
