//! Politeness across nodes: a per-key (host or pay-level domain) pacing
//! reservation in the database.
//!
//! One statement, `INSERT … ON CONFLICT DO UPDATE … RETURNING`, takes the
//! key's next free start time (or now, if that is past), moves it on by the
//! delay and hands back the slot: the row lock orders concurrent
//! reservations, so two slots of one key are never closer than the delay,
//! whichever node asks (the database's clock decides).
//!
//! A request that starts late (the node's scheduler, a slow answer) would
//! come closer than the delay to the next node's slot, so [`Cluster::pace`]
//! reserves `delay + SLACK` and lets the request start only inside
//! `[slot, slot + SLACK]`, as this node's clock can prove it: not before
//! the answer arrived plus the wait (which is after the slot), not after
//! the query was sent plus the wait plus [`SLACK`] (which is before the
//! slot plus the slack). A request that misses its window reserves again.
//! Two requests to one key then start at least `delay` apart, cluster-wide.

use std::time::{Duration, Instant, SystemTime};

use crate::{Cluster, ClusterError, Result};

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

impl Cluster {
    /// Wait for a slot of `key` and return the instant the request may
    /// start (now, or a moment ago): at least `delay` after any other
    /// request paced on `key` by any node (module doc). An error when the
    /// database cannot be asked, or when this node missed its window
    /// [`PACE_ATTEMPTS`] times running (a machine too loaded to keep the pace).
    pub async fn pace(&self, key: &str, delay: Duration) -> Result<Instant> {
        let mut late_by = Duration::ZERO;
        for attempt in 1..=PACE_ATTEMPTS {
            let sent = Instant::now();
            let r = self.reserve(key, delay + SLACK).await?;
            let received = Instant::now();
            // The slot is after `received + wait` minus nothing, and before `sent + wait`.
            tokio::time::sleep_until((received + r.wait).into()).await;
            let go = Instant::now();
            let latest = sent + r.wait + SLACK;
            if go <= latest {
                return Ok(go);
            }
            late_by = go - latest;
            tracing::debug!(node = self.node(), key, attempt, late_by = ?late_by, "missed a pacing window; reserving again");
        }
        Err(ClusterError::Config {
            why: format!(
                "node {}: missed the pacing window of {key} {PACE_ATTEMPTS} times (last by {late_by:?}): \
                 this machine is too loaded to keep the cluster's pace",
                self.node()
            ),
        })
    }
}
