//! Job leases with fencing epochs (ARCHITECTURE.md § Cluster, *lease protocol*).
//!
//! - **Acquire**: one statement picks free jobs (no owner, or a lease that
//!   lapsed) with `FOR UPDATE SKIP LOCKED`, so nodes asking at once never
//!   wait on each other nor take the same job, and bumps each one's epoch.
//! - **Renew** every lease/3 ([`LeaseKeeper`]): only while owner and epoch
//!   are still this node's. All the leases a node keeps are renewed by one
//!   task in one statement ([`Cluster::renew_all`]): a lease falling due
//!   takes along every other due within half a period, so that leases taken
//!   at different times soon share one renewal, and a node holding 20 jobs
//!   sends one statement per period, not 20. A lease the statement does not
//!   renew (a newer epoch: the job was taken over) stops at once. A
//!   renewal that fails (database away) is retried until two thirds of the
//!   lease have passed since the lease's last success, as this node's clock
//!   measures from *before* it sent that renewal; then its keeper says
//!   stop, leaving a third of the lease for the job to stop before the
//!   lease can lapse in the database.
//! - **Release** on a clean stop; **finish** when the job is done; **fail**
//!   when its run failed (kept with the reason until the file changes).
//! - **Fencing**: every durable write of a job locks the job's row `FOR KEY
//!   SHARE` where owner, epoch and an unexpired lease are the writer's
//!   ([`Lease::fence`]). That lock conflicts with an acquisition's `FOR
//!   UPDATE`, so a write and a take-over are ordered: a write either commits
//!   before the new epoch exists, or sees it and is refused. Renewals (a
//!   `NO KEY UPDATE`) do not wait on it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::sync::{watch, Notify};

use crate::{Cluster, Result};

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
        let renewed = self.renew_all(std::slice::from_ref(lease)).await?;
        if !renewed.contains(&(lease.job.clone(), lease.epoch)) {
            return Err(self.fenced(&lease.job, lease.epoch, "another node holds a newer epoch"));
        }
        Ok(())
    }

    /// Extend every one of `leases` that still holds by the lease length
    /// from now, in one statement; returns the (job, epoch) pairs renewed:
    /// a lease missing from it was taken over or finished.
    pub async fn renew_all(&self, leases: &[Lease]) -> Result<HashSet<(String, i64)>> {
        self.timed("renew", self.renew_all_untimed(leases)).await
    }

    async fn renew_all_untimed(&self, leases: &[Lease]) -> Result<HashSet<(String, i64)>> {
        if leases.is_empty() {
            return Ok(HashSet::new());
        }
        // In name order, as every multi-row lock here is taken.
        let mut pairs: Vec<(&str, i64)> =
            leases.iter().map(|l| (l.job.as_str(), l.epoch)).collect();
        pairs.sort_unstable();
        let names: Vec<&str> = pairs.iter().map(|p| p.0).collect();
        let epochs: Vec<i64> = pairs.iter().map(|p| p.1).collect();
        let what = if leases.len() == 1 {
            format!("renew the lease of job {}", leases[0].job)
        } else {
            format!("renew the leases of {} jobs", leases.len())
        };
        let client = self.client().await?;
        let rows = client
            .query(
                "UPDATE forager_jobs j SET lease_until = now() + $4::float8 * interval '1 second'
                 FROM unnest($2::text[], $3::int8[]) AS l(name, epoch)
                 WHERE j.name = l.name AND j.owner = $1 AND j.epoch = l.epoch
                   AND j.status IN ('active', 'paused')
                 RETURNING j.name, j.epoch",
                &[&self.node(), &names, &epochs, &secs(self.lease_duration())],
            )
            .await
            .map_err(|e| self.query_error(&what, e))?;
        rows.iter()
            .map(|r| Ok((r.try_get::<_, String>(0)?, r.try_get::<_, i64>(1)?)))
            .collect::<Result<HashSet<_>, tokio_postgres::Error>>()
            .map_err(|e| self.query_error(&what, e))
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

    /// Renew `lease` in the background every lease/3, with the node's
    /// other leases (see the module doc). Needs a Tokio runtime.
    pub fn keep(&self, lease: &Lease) -> LeaseKeeper {
        let (tx, rx) = watch::channel(LeaseSignal::Held);
        let length = self.lease_duration();
        let clock = LeaseClock::new(lease.since + length * 2 / 3);
        let renewals = self.inner.renewals.clone();
        let (id, start) = {
            let mut kept = renewals.lock();
            let id = kept.next_id;
            kept.next_id += 1;
            kept.leases.insert(
                id,
                Kept {
                    lease: lease.clone(),
                    tx,
                    clock: clock.clone(),
                    renewed_from: lease.since,
                    next: lease.since + length / 3,
                },
            );
            let start = !kept.running;
            kept.running = true;
            (id, start)
        };
        if start {
            tokio::spawn(renew_kept(self.clone()));
        } else {
            renewals.wake.notify_one();
        }
        LeaseKeeper {
            signal: rx,
            renewals,
            id,
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
    renewals: Arc<Renewals>,
    /// Its entry in `renewals`.
    id: u64,
    clock: LeaseClock,
}

/// The leases a node keeps, and the one task renewing them ([`renew_kept`]):
/// it runs while any lease is kept and ends with the last.
#[derive(Default)]
pub(crate) struct Renewals {
    kept: Mutex<KeptLeases>,
    /// A lease was added or dropped: the task looks again at what falls due.
    wake: Notify,
}

#[derive(Default)]
struct KeptLeases {
    leases: HashMap<u64, Kept>,
    next_id: u64,
    /// A [`renew_kept`] task runs.
    running: bool,
}

/// One kept lease.
struct Kept {
    lease: Lease,
    tx: watch::Sender<LeaseSignal>,
    clock: LeaseClock,
    /// The instant before the request that acquired or last renewed the
    /// lease: the database's expiry is at least this plus the length.
    renewed_from: Instant,
    /// When it falls due.
    next: Instant,
}

impl Renewals {
    fn lock(&self) -> std::sync::MutexGuard<'_, KeptLeases> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
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
        self.renewals.lock().leases.remove(&self.id);
        self.renewals.wake.notify_one();
    }
}

/// Renew the node's kept leases (module doc) until none is left: sleep
/// until the first falls due, renew it with every other due within half a
/// period in one statement, then say stop to each lease that was not
/// renewed (fenced) or could not be for two thirds of its length.
async fn renew_kept(cluster: Cluster) {
    let renewals = cluster.inner.renewals.clone();
    let length = cluster.lease_duration();
    let every = length / 3;
    let stop_after = length * 2 / 3;
    loop {
        let first_due = {
            let mut kept = renewals.lock();
            match kept.leases.values().map(|k| k.next).min() {
                Some(t) => t,
                None => {
                    // Under the lock: a lease kept from now on starts a new task.
                    kept.running = false;
                    return;
                }
            }
        };
        tokio::select! {
            () = tokio::time::sleep_until(first_due.into()) => {}
            () = renewals.wake.notified() => continue,
        }
        let now = Instant::now();
        let due: Vec<(u64, Lease, Instant)> = {
            let kept = renewals.lock();
            kept.leases
                .iter()
                .filter(|(_, k)| k.next <= now + every / 2)
                .map(|(id, k)| (*id, k.lease.clone(), k.renewed_from))
                .collect()
        };
        if due.is_empty() {
            continue;
        }
        let leases: Vec<Lease> = due.iter().map(|d| d.1.clone()).collect();
        let sent = Instant::now();
        // A renewal stuck on a dead connection must not outlive the first
        // of these leases' deadlines.
        let stop_by = due.iter().map(|d| d.2 + stop_after).min().unwrap_or(sent);
        let budget = stop_by
            .saturating_duration_since(sent)
            .max(Duration::from_millis(1));
        let outcome = tokio::time::timeout(budget, cluster.renew_all(&leases)).await;
        let failed = |n: usize| {
            if let Some(o) = cluster.observer() {
                for _ in 0..n {
                    o.renew_failed();
                }
            }
        };
        let mut kept = renewals.lock();
        match outcome {
            Ok(Ok(renewed)) => {
                for (id, lease, _) in &due {
                    let Some(k) = kept.leases.get_mut(id) else {
                        continue; // dropped meanwhile
                    };
                    if renewed.contains(&(lease.job.clone(), lease.epoch)) {
                        k.renewed_from = sent;
                        k.clock.set(sent + stop_after);
                        k.next = sent + every;
                        tracing::trace!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, "lease renewed");
                    } else {
                        failed(1);
                        let e = cluster.fenced(
                            &lease.job,
                            lease.epoch,
                            "another node holds a newer epoch",
                        );
                        k.clock.set(lease.since);
                        tracing::warn!(node = cluster.node(), job = %lease.job, epoch = lease.epoch, error = %e, "lease lost: stopping the job");
                        let _ = k.tx.send(LeaseSignal::Stop(e.to_string()));
                        kept.leases.remove(id);
                    }
                }
            }
            Ok(Err(e)) => {
                failed(due.len());
                tracing::warn!(node = cluster.node(), leases = due.len(), error = %e, "lease renewal failed; retrying");
                // Retry soon, but never past a lease's moment to say stop.
                let retry = Instant::now() + (length / 10).max(Duration::from_millis(50));
                for (id, ..) in &due {
                    if let Some(k) = kept.leases.get_mut(id) {
                        k.next = retry.min(k.renewed_from + stop_after);
                    }
                }
            }
            Err(_) => {
                failed(due.len());
                tracing::warn!(
                    node = cluster.node(),
                    leases = due.len(),
                    "lease renewal timed out"
                );
                let now = Instant::now();
                for (id, ..) in &due {
                    if let Some(k) = kept.leases.get_mut(id) {
                        k.next = now;
                    }
                }
            }
        }
        let now = Instant::now();
        let lapsing: Vec<u64> = kept
            .leases
            .iter()
            .filter(|(_, k)| now >= k.renewed_from + stop_after)
            .map(|(id, _)| *id)
            .collect();
        for id in lapsing {
            let Some(k) = kept.leases.remove(&id) else {
                continue;
            };
            let why = format!(
                "node {}: job {}: lease of epoch {} could not be renewed for {:?}; stopping before it lapses",
                cluster.node(),
                k.lease.job,
                k.lease.epoch,
                stop_after
            );
            tracing::warn!(node = cluster.node(), job = %k.lease.job, epoch = k.lease.epoch, "{why}");
            let _ = k.tx.send(LeaseSignal::Stop(why));
        }
    }
}
