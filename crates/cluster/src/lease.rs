//! Job leases with fencing epochs (ARCHITECTURE.md § Cluster, *lease protocol*).
//!
//! - **Acquire**: one statement picks free jobs (no owner, or a lease that
//!   lapsed) with `FOR UPDATE SKIP LOCKED`, so nodes asking at once never
//!   wait on each other nor take the same job, and bumps each one's epoch.
//! - **Renew** every lease/3 ([`LeaseKeeper`]): only while owner and epoch
//!   are still this node's. A renewal that finds a newer epoch means the job
//!   was taken over: stop at once. A renewal that fails (database away) is
//!   retried until two thirds of the lease have passed since the last
//!   success, as this node's clock measures from *before* it sent that
//!   renewal; then the keeper says stop, leaving a third of the lease for the
//!   job to stop before the lease can lapse in the database.
//! - **Release** on a clean stop; **finish** when the job is done; **fail**
//!   when its run failed (kept with the reason until the file changes).
//! - **Fencing**: every durable write of a job locks the job's row `FOR KEY
//!   SHARE` where owner, epoch and an unexpired lease are the writer's
//!   ([`Lease::fence`]). That lock conflicts with an acquisition's `FOR
//!   UPDATE`, so a write and a take-over are ordered: a write either commits
//!   before the new epoch exists, or sees it and is refused. Renewals (a
//!   `NO KEY UPDATE`) do not wait on it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::{Cluster, ClusterError, Result};

/// A job this node holds: its name, the epoch its writes carry, and the job file's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub job: String,
    pub epoch: i64,
    /// The registered job file.
    pub spec: String,
    /// This node's clock just before the request that granted the lease:
    /// the database's expiry is at least this plus the lease length.
    pub since: Instant,
    /// The node whose lease had lapsed when this one was granted: a
    /// take-over (`None`: the job was free, new or released).
    pub taken_from: Option<String>,
}

/// What a [`LeaseKeeper`] says about its lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseSignal {
    /// Renewed in time: run on.
    Held,
    /// Stop the job now and write nothing more for it (the reason, for the log and `status`).
    Stop(String),
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl Cluster {
    /// Take up to `max` free jobs for this node (see the module doc).
    pub async fn acquire(&self, max: usize) -> Result<Vec<Lease>> {
        self.timed("acquire", self.acquire_untimed(max)).await
    }

    async fn acquire_untimed(&self, max: usize) -> Result<Vec<Lease>> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let what = "acquire job leases";
        let since = Instant::now();
        let rows = client
            .query(
                "UPDATE forager_jobs j
                 SET owner = $1, epoch = j.epoch + 1,
                     lease_until = now() + $2::float8 * interval '1 second'
                 FROM (SELECT name, owner FROM forager_jobs
                       WHERE status = 'active'
                         AND (owner IS NULL OR lease_until IS NULL OR lease_until < now())
                       ORDER BY lease_until NULLS FIRST, name
                       LIMIT $3
                       FOR UPDATE SKIP LOCKED) free
                 WHERE j.name = free.name
                 RETURNING j.name, j.epoch, j.spec, free.owner",
                &[&self.node(), &secs(self.lease_duration()), &limit],
            )
            .await
            .map_err(|e| self.query_error(what, e))?;
        let leases = rows
            .iter()
            .map(|r| {
                Ok(Lease {
                    job: r.try_get(0)?,
                    epoch: r.try_get(1)?,
                    spec: r.try_get(2)?,
                    since,
                    taken_from: r.try_get(3)?,
                })
            })
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            .map_err(|e| self.query_error(what, e))?;
        for l in &leases {
            tracing::info!(node = self.node(), job = %l.job, epoch = l.epoch, taken_from = l.taken_from.as_deref(), "job lease acquired");
        }
        Ok(leases)
    }

    /// Extend `lease` by the lease length from now; [`ClusterError::Fenced`]
    /// when another node took the job (its epoch moved on) or it was finished.
    /// A job paused by a person is still renewed: its node stops it at its
    /// next round and writes a last checkpoint under this lease.
    pub async fn renew(&self, lease: &Lease) -> Result<()> {
        self.timed("renew", self.renew_untimed(lease)).await
    }

    async fn renew_untimed(&self, lease: &Lease) -> Result<()> {
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE forager_jobs SET lease_until = now() + $4::float8 * interval '1 second'
                 WHERE name = $1 AND owner = $2 AND epoch = $3 AND status IN ('active', 'paused')",
                &[
                    &lease.job,
                    &self.node(),
                    &lease.epoch,
                    &secs(self.lease_duration()),
                ],
            )
            .await
            .map_err(|e| self.query_error(&format!("renew the lease of job {}", lease.job), e))?;
        if n == 0 {
            return Err(self.fenced(&lease.job, lease.epoch, "another node holds a newer epoch"));
        }
        Ok(())
    }

    /// Give the job back (a clean stop): any node may take it at once. A
    /// lease already lost is no error: there is nothing left to give.
    pub async fn release(&self, lease: &Lease) -> Result<bool> {
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE forager_jobs SET owner = NULL, lease_until = NULL
                 WHERE name = $1 AND owner = $2 AND epoch = $3",
                &[&lease.job, &self.node(), &lease.epoch],
            )
            .await
            .map_err(|e| self.query_error(&format!("release job {}", lease.job), e))?;
        tracing::info!(node = self.node(), job = %lease.job, epoch = lease.epoch, released = n == 1, "job lease released");
        Ok(n == 1)
    }

    /// Mark the job done under its epoch: no node leases it again until it
    /// is registered with new content. A job whose file changed while it
    /// ran (another SHA-256 than the lease's text) stays active instead: the
    /// new text runs next.
    pub async fn finish(&self, lease: &Lease) -> Result<()> {
        let sha: Vec<u8> = Sha256::digest(lease.spec.as_bytes()).to_vec();
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE forager_jobs
                 SET status = CASE WHEN spec_sha256 = $4 THEN 'done' ELSE status END,
                     owner = NULL, lease_until = NULL
                 WHERE name = $1 AND owner = $2 AND epoch = $3 AND lease_until > now()",
                &[&lease.job, &self.node(), &lease.epoch, &sha],
            )
            .await
            .map_err(|e| self.query_error(&format!("finish job {}", lease.job), e))?;
        if n == 0 {
            return Err(self.fenced(&lease.job, lease.epoch, "lease expired or taken over"));
        }
        Ok(())
    }

    /// Mark the job failed under its epoch, with why: no node leases it
    /// again until it is registered with new content (a run that fails
    /// here would most likely fail on every node in turn).
    pub async fn fail(&self, lease: &Lease, why: &str) -> Result<()> {
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE forager_jobs SET status = 'failed', failure = $4, owner = NULL, lease_until = NULL
                 WHERE name = $1 AND owner = $2 AND epoch = $3",
                &[&lease.job, &self.node(), &lease.epoch, &why],
            )
            .await
            .map_err(|e| self.query_error(&format!("mark job {} failed", lease.job), e))?;
        if n == 0 {
            return Err(self.fenced(&lease.job, lease.epoch, "taken over"));
        }
        tracing::warn!(node = self.node(), job = %lease.job, epoch = lease.epoch, reason = why, "job marked failed in the cluster");
        Ok(())
    }

    /// Renew `lease` in the background every lease/3 (see the module doc).
    pub fn keep(&self, lease: &Lease) -> LeaseKeeper {
        let (tx, rx) = watch::channel(LeaseSignal::Held);
        let clock = LeaseClock::new(lease.since + self.lease_duration() * 2 / 3);
        let task = tokio::spawn(keep(self.clone(), lease.clone(), tx, clock.clone()));
        LeaseKeeper {
            signal: rx,
            task,
            clock,
        }
    }
}

impl Lease {
    /// Inside a write's transaction: lock the job's row while this lease
    /// still holds it, or refuse the write (module doc, *fencing*).
    pub(crate) async fn fence(
        &self,
        cluster: &Cluster,
        txn: &deadpool_postgres::Transaction<'_>,
    ) -> Result<()> {
        let row = txn
            .query_opt(
                "SELECT 1 FROM forager_jobs
                 WHERE name = $1 AND owner = $2 AND epoch = $3 AND lease_until > now()
                 FOR KEY SHARE",
                &[&self.job, &cluster.node(), &self.epoch],
            )
            .await
            .map_err(|e| cluster.query_error(&format!("check the lease of job {}", self.job), e))?;
        match row {
            Some(_) => Ok(()),
            None => Err(cluster.fenced(&self.job, self.epoch, "lease expired or taken over")),
        }
    }
}

/// The background renewal of one lease; dropping it stops renewing (the
/// lease then lapses after its length unless released).
pub struct LeaseKeeper {
    signal: watch::Receiver<LeaseSignal>,
    task: JoinHandle<()>,
    clock: LeaseClock,
}

/// Whether a lease still holds by this node's monotonic clock alone: until
/// two thirds of the lease after the last renewal was sent. Cheap and
/// synchronous, for writes outside the database (a shared folder) that
/// the epoch cannot fence: a node paused (SIGSTOP) past its lease knows on
/// waking, before any renewal, that its lease may be another node's now
/// (the monotonic clock runs while the process is stopped).
#[derive(Clone, Debug)]
pub struct LeaseClock(Arc<Mutex<Instant>>);

impl LeaseClock {
    fn new(until: Instant) -> Self {
        LeaseClock(Arc::new(Mutex::new(until)))
    }

    fn set(&self, until: Instant) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = until;
    }

    /// The lease holds now.
    pub fn holds(&self) -> bool {
        Instant::now() < *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl LeaseKeeper {
    /// The lease's own-clock deadline, shared with the renewals.
    pub fn clock(&self) -> LeaseClock {
        self.clock.clone()
    }

    /// The latest word on the lease.
    pub fn now(&self) -> LeaseSignal {
        self.signal.borrow().clone()
    }

    /// Wait until the keeper says stop, and why.
    pub async fn stopped(&mut self) -> String {
        loop {
            if let LeaseSignal::Stop(why) = &*self.signal.borrow_and_update() {
                return why.clone();
            }
            if self.signal.changed().await.is_err() {
                return "lease keeper ended".to_string();
            }
        }
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn keep(cluster: Cluster, lease: Lease, tx: watch::Sender<LeaseSignal>, clock: LeaseClock) {
    let length = cluster.lease_duration();
    let every = length / 3;
    // The instant before the request that acquired or last renewed the
    // lease: the database's expiry is at least this plus the length.
    let mut renewed_from = lease.since;
    let mut next = renewed_from + every;
    loop {
        tokio::time::sleep_until(next.into()).await;
        let sent = Instant::now();
        let stop_by = renewed_from + length * 2 / 3;
        // A renewal stuck on a dead connection must not outlive the deadline.
        let budget = stop_by
            .saturating_duration_since(sent)
            .max(Duration::from_millis(1));
        match tokio::time::timeout(budget, cluster.renew(&lease)).await {
            Ok(Ok(())) => {
                renewed_from = sent;
                clock.set(sent + length * 2 / 3);
                next = sent + every;
                tracing::trace!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, "lease renewed");
            }
            Ok(Err(e @ ClusterError::Fenced { .. })) => {
                if let Some(o) = cluster.observer() {
                    o.renew_failed();
                }
                clock.set(lease.since);
                tracing::warn!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, error = %e, "lease lost: stopping the job");
                let _ = tx.send(LeaseSignal::Stop(e.to_string()));
                return;
            }
            Ok(Err(e)) => {
                if let Some(o) = cluster.observer() {
                    o.renew_failed();
                }
                tracing::warn!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, error = %e, "lease renewal failed; retrying");
                // Retry soon, but never past the moment to say stop.
                next = (Instant::now() + (length / 10).max(Duration::from_millis(50))).min(stop_by);
            }
            Err(_) => {
                if let Some(o) = cluster.observer() {
                    o.renew_failed();
                }
                tracing::warn!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, "lease renewal timed out");
                next = Instant::now();
            }
        }
        if Instant::now() >= renewed_from + length * 2 / 3 {
            let why = format!(
                "node {}: job {}: lease of epoch {} could not be renewed for {:?}; stopping before it lapses",
                cluster.node(),
                lease.job,
                lease.epoch,
                length * 2 / 3
            );
            tracing::warn!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, "{why}");
            let _ = tx.send(LeaseSignal::Stop(why));
            return;
        }
    }
}
