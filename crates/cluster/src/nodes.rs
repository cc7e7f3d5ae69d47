//! The nodes of the cluster and how free jobs are shared among them.
//!
//! Each node keeps one row of `forager_nodes` (schema v3): it *joins* when
//! it connects and *beats* at every tick of its main loop
//! ([`Cluster::heartbeat`]), saying how many jobs it holds, its `max_jobs`
//! and whether it drains. A node whose last beat is older than one lease is
//! taken for gone: its leases lapse in that time too. A clean stop
//! *leaves* ([`Cluster::leave`]), so that peers stop counting it at once.
//!
//! **Fair share.** Without it, the first node to ask after a node died
//! takes every job the dead one held whenever it has the slots, and its
//! idle peers get none: the take-over then runs on one machine. So each
//! acquisition round a node takes at most `ceil(free jobs / live nodes)`
//! (itself and every peer that beat within a lease and is not draining),
//! and no more than brings it to `ceil((free + held by live nodes) / live
//! nodes)` — an even spread — though always one job while any is free
//! and it has room, so a job is never left waiting on a peer that may
//! have just died ([`fair_share`]). What it left is there for the peers'
//! rounds, and for its own next round. A node that is alone (or whose
//! peers are all draining) takes all it has room for, so a lone node's
//! take-over is not slower; with busy peers that cannot take a job, the
//! share shrinks each round (20 free jobs: 10, 5, 3, 1, 1 at one round a
//! second).

use std::time::SystemTime;

use crate::{Cluster, Result};

/// What a node says of itself at each beat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beat {
    /// Leases it holds now.
    pub held: usize,
    /// Its `max_jobs`.
    pub max_jobs: usize,
    /// It gives its jobs back and takes no new one (`forager drain`).
    pub draining: bool,
}

/// What a beat learnt of the cluster, for this round's share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Census {
    /// Active jobs no node holds a running lease on.
    pub free_jobs: u64,
    /// Other nodes that beat within one lease and are not draining.
    pub live_peers: u64,
    /// Leases those peers held at their last beat.
    pub peers_held: u64,
}

/// One node of the cluster, as every node sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRow {
    pub name: String,
    pub started_at: SystemTime,
    pub heartbeat_at: SystemTime,
    /// Seconds since its last beat, by the database's clock.
    pub heartbeat_age: f64,
    /// It beat within one lease and has not left.
    pub live: bool,
    pub held: i64,
    pub max_jobs: i64,
    pub draining: bool,
    /// When it stopped cleanly (`None` while it runs, or if it died).
    pub left_at: Option<SystemTime>,
}

/// How many free jobs a node that holds `held` leases and has room for
/// `want` more takes this round (see the module doc): at most its fair
/// share of the free jobs and of an even spread, never less than one
/// while any is free and it has room.
pub fn fair_share(want: usize, held: usize, census: Census) -> usize {
    if want == 0 || census.free_jobs == 0 {
        return 0;
    }
    let nodes = census.live_peers.saturating_add(1);
    let of_free = census.free_jobs.div_ceil(nodes);
    let held = u64::try_from(held).unwrap_or(u64::MAX);
    let even = census
        .free_jobs
        .saturating_add(census.peers_held)
        .saturating_add(held)
        .div_ceil(nodes);
    let to_even = even.saturating_sub(held).max(1);
    usize::try_from(of_free.min(to_even))
        .unwrap_or(usize::MAX)
        .min(want)
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl Cluster {
    /// This node starts: its row is (re)made with a fresh start time.
    pub async fn join(&self, max_jobs: usize) -> Result<()> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO forager_nodes (name, max_jobs, held) VALUES ($1, $2, 0)
                 ON CONFLICT (name) DO UPDATE
                     SET started_at = now(), heartbeat_at = now(), max_jobs = EXCLUDED.max_jobs,
                         held = 0, draining = false, left_at = NULL",
                &[&self.node(), &count(max_jobs)],
            )
            .await
            .map_err(|e| self.query_error("join the cluster's nodes", e))?;
        Ok(())
    }

    /// Say this node is alive, with `beat`; returns the census this
    /// round's share is computed from. One round trip.
    pub async fn heartbeat(&self, beat: Beat) -> Result<Census> {
        self.timed("heartbeat", self.heartbeat_untimed(beat)).await
    }

    async fn heartbeat_untimed(&self, beat: Beat) -> Result<Census> {
        let what = "send this node's heartbeat";
        let client = self.client().await?;
        // The CTE's upsert is not visible to the counts (one snapshot), and
        // the peers' count leaves this node out anyway.
        let row = client
            .query_one(
                "WITH beat AS (
                     INSERT INTO forager_nodes AS n (name, max_jobs, held, draining)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (name) DO UPDATE
                         SET heartbeat_at = now(), max_jobs = EXCLUDED.max_jobs,
                             held = EXCLUDED.held, draining = EXCLUDED.draining, left_at = NULL
                     RETURNING 1
                 )
                 SELECT
                     (SELECT count(*) FROM forager_jobs
                      WHERE status = 'active'
                        AND (owner IS NULL OR lease_until IS NULL OR lease_until < now())),
                     count(*), coalesce(sum(held), 0)::bigint,
                     (SELECT count(*) FROM beat)
                 FROM forager_nodes
                 WHERE name <> $1 AND left_at IS NULL AND NOT draining
                   AND heartbeat_at > now() - $5::float8 * interval '1 second'",
                &[
                    &self.node(),
                    &count(beat.max_jobs),
                    &count(beat.held),
                    &beat.draining,
                    &self.lease_duration().as_secs_f64(),
                ],
            )
            .await
            .map_err(|e| self.query_error(what, e))?;
        let free: i64 = row.try_get(0).map_err(|e| self.query_error(what, e))?;
        let peers: i64 = row.try_get(1).map_err(|e| self.query_error(what, e))?;
        let peers_held: i64 = row.try_get(2).map_err(|e| self.query_error(what, e))?;
        Ok(Census {
            free_jobs: u64::try_from(free).unwrap_or(0),
            live_peers: u64::try_from(peers).unwrap_or(0),
            peers_held: u64::try_from(peers_held).unwrap_or(0),
        })
    }

    /// Take this round's fair share of the free jobs, up to `want`:
    /// beats, then acquires (see the module doc). The census is returned
    /// with the leases, for the log.
    pub async fn acquire_share(
        &self,
        want: usize,
        beat: Beat,
    ) -> Result<(Vec<crate::Lease>, Census)> {
        let census = self.heartbeat(beat).await?;
        let share = if beat.draining {
            0
        } else {
            fair_share(want, beat.held, census)
        };
        let leases = self.acquire(share).await?;
        Ok((leases, census))
    }

    /// This node stops cleanly: peers stop counting it at once.
    pub async fn leave(&self) -> Result<()> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE forager_nodes SET left_at = now(), held = 0 WHERE name = $1",
                &[&self.node()],
            )
            .await
            .map_err(|e| self.query_error("leave the cluster's nodes", e))?;
        Ok(())
    }

    /// Every node that ever joined, by name.
    pub async fn nodes(&self) -> Result<Vec<NodeRow>> {
        let what = "list the cluster's nodes";
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT name, started_at, heartbeat_at,
                        extract(epoch FROM now() - heartbeat_at)::float8,
                        left_at IS NULL AND heartbeat_at > now() - $1::float8 * interval '1 second',
                        held::bigint, max_jobs::bigint, draining, left_at
                 FROM forager_nodes ORDER BY name",
                &[&self.lease_duration().as_secs_f64()],
            )
            .await
            .map_err(|e| self.query_error(what, e))?;
        rows.iter()
            .map(|r| {
                Ok(NodeRow {
                    name: r.try_get(0)?,
                    started_at: r.try_get(1)?,
                    heartbeat_at: r.try_get(2)?,
                    heartbeat_age: r.try_get(3)?,
                    live: r.try_get(4)?,
                    held: r.try_get(5)?,
                    max_jobs: r.try_get(6)?,
                    draining: r.try_get(7)?,
                    left_at: r.try_get(8)?,
                })
            })
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(|e| self.query_error(what, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn census(free_jobs: u64, live_peers: u64, peers_held: u64) -> Census {
        Census {
            free_jobs,
            live_peers,
            peers_held,
        }
    }

    #[test]
    fn a_node_takes_its_share_of_the_free_jobs_not_all_of_them() {
        // A dead node's 20 jobs, two survivors, the other one busy: half.
        assert_eq!(fair_share(20, 0, census(20, 1, 20)), 10);
        // Rounded up: no job is left for want of a round.
        assert_eq!(fair_share(20, 0, census(21, 1, 20)), 11);
        assert_eq!(fair_share(20, 0, census(1, 2, 0)), 1);
        // Within the room the node has.
        assert_eq!(fair_share(3, 0, census(20, 1, 0)), 3);
        assert_eq!(fair_share(0, 0, census(20, 1, 0)), 0);
        // Nothing free, nothing taken.
        assert_eq!(fair_share(20, 0, census(0, 2, 0)), 0);
    }

    #[test]
    fn a_node_ahead_of_an_even_spread_leaves_the_jobs_to_its_peers_but_one() {
        // It took 10 of 20, its peer none yet: 10 free, an even spread is 10 each.
        assert_eq!(fair_share(10, 10, census(10, 1, 0)), 1);
        // Its peer, behind, takes up to the free share.
        assert_eq!(fair_share(20, 0, census(10, 1, 10)), 5);
    }

    #[test]
    fn a_lone_node_takes_all_it_has_room_for() {
        assert_eq!(fair_share(20, 0, census(60, 0, 0)), 20);
        assert_eq!(fair_share(100, 0, census(60, 0, 0)), 60);
        assert_eq!(fair_share(100, 40, census(60, 0, 0)), 60);
    }

    #[test]
    fn a_lone_taker_still_takes_every_free_job_within_a_few_rounds() {
        // Its one peer is full and never asks: the share shrinks, but
        // every job is taken, in about log2(free) rounds.
        let mut free = 20u64;
        let mut held = 0usize;
        let mut rounds = 0;
        while free > 0 {
            let n = fair_share(20 - held, held, census(free, 1, 20));
            free -= n as u64;
            held += n;
            rounds += 1;
        }
        assert_eq!((rounds, held), (5, 20));
    }

    #[test]
    fn two_nodes_taking_in_turn_end_near_evenly() {
        let (mut a, mut b, mut free) = (0usize, 0usize, 20u64);
        while free > 0 {
            let n = fair_share(20 - a, a, census(free, 1, b as u64));
            a += n;
            free -= n as u64;
            let n = fair_share(20 - b, b, census(free, 1, a as u64));
            b += n;
            free -= n as u64;
        }
        // One job a round always goes to a node that has room, so the
        // first to ask ends a little ahead: 12 and 8, never 20 and 0.
        assert_eq!((a, b), (12, 8));
    }
}
