//! Politeness across nodes: a per-key (host or pay-level domain) pacing
//! reservation in the database.
//!
//! One statement, `INSERT … ON CONFLICT DO UPDATE … RETURNING`, takes the
//! key's next free start time (or now, if that is past), moves it on by the
//! delay and hands back the slot: the row lock orders concurrent
//! reservations, so two slots of one key are never closer than the delay,
//! whichever node asks (the database's clock decides). The caller waits
//! until its slot and starts its request then; a request that starts late
//! (the caller's scheduling) is later than its slot, never earlier.

use std::time::{Duration, SystemTime};

use crate::{Cluster, Result};

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
        let client = self.client().await?;
        let row = client
            .query_one(
                "WITH t AS (SELECT clock_timestamp() AS now)
                 INSERT INTO forager_pacing AS p (key, next_at)
                 SELECT $1, t.now + $2::float8 * interval '1 second' FROM t
                 ON CONFLICT (key) DO UPDATE
                     SET next_at = greatest(p.next_at, (SELECT now FROM t)) + $2::float8 * interval '1 second'
                 RETURNING p.next_at - $2::float8 * interval '1 second',
                           extract(epoch FROM p.next_at - $2::float8 * interval '1 second' - (SELECT now FROM t))::float8",
                &[&key, &delay.as_secs_f64()],
            )
            .await
            .map_err(|e| self.query_error(&format!("reserve a request slot for {key}"), e))?;
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
