//! A person's pause, resume and rerun of a job, wherever it runs
//! (`forager pause|resume|rerun` on any node, docs/cluster.md).
//!
//! A job moves between nodes, so what a person asks is kept in the job's
//! registry row, not in one node's store:
//!
//! - **pause**: `status = 'paused'`. No node leases a paused job; the node
//!   that holds it sees the status at its next round ([`Cluster::owned`]),
//!   stops the run (a last checkpoint goes to the database) and releases
//!   the lease. Renewals still succeed meanwhile, so that last checkpoint
//!   is written under a valid lease.
//! - **resume**: back to `active`: the next node with a free slot takes it
//!   from its checkpoint.
//! - **rerun**: a job nobody holds is wiped at once in one transaction
//!   (checkpoint, chunks and manifest rows deleted, the epoch bumped so a
//!   node that lost its lease cannot write into the fresh run). A job held
//!   by a live lease gets `requested = 'rerun'`: its node stops the run and
//!   wipes it under its own epoch ([`Cluster::reset`]), so that its manifest
//!   file is set aside while no other node can write it.

use crate::{Cluster, Lease, Result};

/// What a control call did, or why it did nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Done; the node that holds the job's lease now, which obeys at its next round.
    Done { owner: Option<String> },
    /// No job of that name in the registry.
    NotFound(String),
    /// The job is not in a state the call applies to (the reason).
    Conflict(String),
}

/// A job this node holds, as the registry says now: what its node must obey.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owned {
    pub name: String,
    pub epoch: i64,
    pub status: String,
    /// `Some("rerun")` when a rerun waits for this node.
    pub requested: Option<String>,
    /// The registered text's SHA-256: another than the lease's when the file changed.
    pub spec_sha256: Vec<u8>,
}

impl Cluster {
    /// Pause `job` (module doc).
    pub async fn pause(&self, job: &str) -> Result<Control> {
        let what = format!("pause job {job}");
        let client = self.client().await?;
        let row = client
            .query_opt(
                "UPDATE forager_jobs SET status = 'paused', updated_at = now()
                 WHERE name = $1 AND status = 'active'
                 RETURNING CASE WHEN lease_until > now() THEN owner END",
                &[&job],
            )
            .await
            .map_err(|e| self.query_error(&what, e))?;
        match row {
            Some(r) => {
                let owner: Option<String> = r.try_get(0).map_err(|e| self.query_error(&what, e))?;
                tracing::info!(
                    node = self.node(),
                    job,
                    owner = owner.as_deref(),
                    "job paused in the cluster"
                );
                Ok(Control::Done { owner })
            }
            None => self.refusal(job, "only an active job pauses").await,
        }
    }

    /// Resume a paused `job` (module doc).
    pub async fn resume(&self, job: &str) -> Result<Control> {
        let what = format!("resume job {job}");
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE forager_jobs SET status = 'active', updated_at = now()
                 WHERE name = $1 AND status = 'paused'",
                &[&job],
            )
            .await
            .map_err(|e| self.query_error(&what, e))?;
        if n == 0 {
            return self.refusal(job, "only a paused job resumes").await;
        }
        tracing::info!(node = self.node(), job, "job resumed in the cluster");
        Ok(Control::Done { owner: None })
    }

    /// Run `job` again from its seeds (module doc). `set_aside` is called
    /// when the job is wiped here, while its row is locked (no node can
    /// lease it meanwhile): it moves the job's manifest file aside; its
    /// error cancels the rerun.
    pub async fn rerun(
        &self,
        job: &str,
        set_aside: impl FnOnce() -> std::result::Result<(), String>,
    ) -> Result<Control> {
        let what = format!("rerun job {job}");
        let mut client = self.client().await?;
        let q = |e| self.query_error(&what, e);
        let txn = client.transaction().await.map_err(q)?;
        let row = txn
            .query_opt(
                "SELECT owner, coalesce(lease_until > now(), false) FROM forager_jobs
                 WHERE name = $1 FOR UPDATE",
                &[&job],
            )
            .await
            .map_err(q)?;
        let Some(row) = row else {
            return Ok(Control::NotFound(format!(
                "no job named {job:?} in the cluster registry"
            )));
        };
        let owner: Option<String> = row.try_get(0).map_err(q)?;
        let leased: bool = row.try_get(1).map_err(q)?;
        if leased {
            txn.execute(
                "UPDATE forager_jobs SET requested = 'rerun', status = 'active', failure = NULL,
                        updated_at = now()
                 WHERE name = $1",
                &[&job],
            )
            .await
            .map_err(q)?;
            txn.commit().await.map_err(q)?;
            tracing::info!(
                node = self.node(),
                job,
                owner = owner.as_deref(),
                "job rerun asked of its node"
            );
            return Ok(Control::Done { owner });
        }
        if let Err(why) = set_aside() {
            return Ok(Control::Conflict(format!(
                "job {job:?}: cannot set its manifest aside, so it is not rerun: {why}"
            )));
        }
        wipe(&txn, job).await.map_err(q)?;
        // The epoch moves on: a node whose lease lapsed can write nothing
        // into the fresh run.
        txn.execute(
            "UPDATE forager_jobs SET epoch = epoch + 1, owner = NULL, lease_until = NULL,
                    status = 'active', failure = NULL, requested = NULL, updated_at = now()
             WHERE name = $1",
            &[&job],
        )
        .await
        .map_err(q)?;
        txn.commit().await.map_err(q)?;
        tracing::info!(node = self.node(), job, "job wiped for a rerun");
        Ok(Control::Done { owner: None })
    }

    /// The holder of `lease` obeys a rerun: wipe the job's state in the
    /// database and give the job back, active and fresh, under its epoch.
    pub async fn reset(&self, lease: &Lease) -> Result<()> {
        let what = format!(
            "job {} (epoch {}): reset for a rerun",
            lease.job, lease.epoch
        );
        let mut client = self.client().await?;
        let q = |e| self.query_error(&what, e);
        let txn = client.transaction().await.map_err(q)?;
        let n = txn
            .execute(
                "UPDATE forager_jobs SET owner = NULL, lease_until = NULL, requested = NULL,
                        status = 'active', failure = NULL, updated_at = now()
                 WHERE name = $1 AND owner = $2 AND epoch = $3",
                &[&lease.job, &self.node(), &lease.epoch],
            )
            .await
            .map_err(q)?;
        if n == 0 {
            return Err(self.fenced(&lease.job, lease.epoch, "taken over before the rerun"));
        }
        wipe(&txn, &lease.job).await.map_err(q)?;
        txn.commit().await.map_err(q)?;
        tracing::info!(node = self.node(), job = %lease.job, epoch = lease.epoch, "job reset for a rerun");
        Ok(())
    }

    /// The jobs this node holds in the registry, with what a person asked
    /// of them (each round of the node: a pause, a rerun, a changed file).
    pub async fn owned(&self) -> Result<Vec<Owned>> {
        self.timed("owned", self.owned_untimed()).await
    }

    async fn owned_untimed(&self) -> Result<Vec<Owned>> {
        let what = "read the jobs this node holds";
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT name, epoch, status, requested, spec_sha256 FROM forager_jobs
                 WHERE owner = $1",
                &[&self.node()],
            )
            .await
            .map_err(|e| self.query_error(what, e))?;
        rows.iter()
            .map(|r| {
                Ok(Owned {
                    name: r.try_get(0)?,
                    epoch: r.try_get(1)?,
                    status: r.try_get(2)?,
                    requested: r.try_get(3)?,
                    spec_sha256: r.try_get(4)?,
                })
            })
            .collect::<std::result::Result<_, tokio_postgres::Error>>()
            .map_err(|e| self.query_error(what, e))
    }

    /// Why a control call changed nothing: no such job, or its status.
    async fn refusal(&self, job: &str, rule: &str) -> Result<Control> {
        let what = format!("read job {job}");
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT status FROM forager_jobs WHERE name = $1", &[&job])
            .await
            .map_err(|e| self.query_error(&what, e))?;
        Ok(match row {
            None => Control::NotFound(format!("no job named {job:?} in the cluster registry")),
            Some(r) => {
                let status: String = r.try_get(0).map_err(|e| self.query_error(&what, e))?;
                Control::Conflict(format!("job {job:?} is {status}: {rule}"))
            }
        })
    }
}

/// Delete a job's checkpoint, chunks and manifest rows (inside `txn`).
async fn wipe(
    txn: &deadpool_postgres::Transaction<'_>,
    job: &str,
) -> std::result::Result<(), tokio_postgres::Error> {
    for table in ["forager_checkpoints", "forager_chunks", "forager_manifest"] {
        txn.execute(&format!("DELETE FROM {table} WHERE job = $1"), &[&job])
            .await?;
    }
    Ok(())
}
