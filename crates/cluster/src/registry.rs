//! The shared job registry: a job file dropped into any node's folder (or
//! submitted) becomes one row, named by the job, holding the file's text so
//! that any node can run it.
//!
//! Registration is idempotent: the same name with the same content (SHA-256
//! of the text) changes nothing, however many nodes register it; a changed
//! text replaces the stored one and makes a finished or failed job active
//! again (a paused one stays paused). The node that holds the job sees the
//! new SHA-256 at its next round: it stops the run at a checkpoint and
//! releases the lease, and the job is leased again with the new text,
//! from its checkpoint (docs/cluster.md, *A job file edited while it runs*).

use sha2::{Digest, Sha256};
use std::time::SystemTime;

use crate::{Cluster, Result};

/// What [`Cluster::register`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// A new job.
    New,
    /// The name was registered with other content, now replaced.
    Updated,
    /// The name was registered with this very content: nothing changed.
    Unchanged,
}

/// One job of the registry, as every node sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRow {
    pub name: String,
    /// `active`, `done` or `failed`.
    pub status: String,
    /// Why its last run failed (status `failed`).
    pub failure: Option<String>,
    /// The node holding its lease, if any (it may have lapsed: see `lease_until`).
    pub owner: Option<String>,
    pub epoch: i64,
    pub lease_until: Option<SystemTime>,
    /// Whether the lease is still running (by the database's clock).
    pub leased: bool,
    pub spec_sha256: Vec<u8>,
    /// Manifest rows recorded for it (its targets, whichever node saved them).
    pub targets: i64,
}

impl Cluster {
    /// Register job `name` with its file's text (see the module doc).
    pub async fn register(&self, name: &str, spec: &str) -> Result<Registration> {
        let sha: Vec<u8> = Sha256::digest(spec.as_bytes()).to_vec();
        let client = self.client().await?;
        // `xmax = 0` tells an inserted row from an updated one; the WHERE of
        // DO UPDATE makes an identical registration return no row at all.
        let row = client
            .query_opt(
                "INSERT INTO forager_jobs AS j (name, spec, spec_sha256) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE
                     SET spec = EXCLUDED.spec, spec_sha256 = EXCLUDED.spec_sha256,
                         updated_at = now(), failure = NULL,
                         status = CASE WHEN j.status = 'paused' THEN 'paused' ELSE 'active' END
                     WHERE j.spec_sha256 <> EXCLUDED.spec_sha256
                 RETURNING (xmax = 0) AS inserted",
                &[&name, &spec, &sha],
            )
            .await
            .map_err(|e| self.query_error(&format!("register job {name}"), e))?;
        let outcome = match row {
            None => Registration::Unchanged,
            Some(row) => {
                let inserted: bool = row
                    .try_get(0)
                    .map_err(|e| self.query_error(&format!("register job {name}"), e))?;
                if inserted {
                    Registration::New
                } else {
                    Registration::Updated
                }
            }
        };
        tracing::debug!(node = self.node(), job = name, ?outcome, "job registered");
        Ok(outcome)
    }

    /// Every registered job, by name.
    pub async fn jobs(&self) -> Result<Vec<JobRow>> {
        let client = self.client().await?;
        let what = "list the registered jobs";
        let rows = client
            .query(
                "SELECT name, status, owner, epoch, lease_until,
                        coalesce(lease_until > now(), false), spec_sha256, failure,
                        (SELECT count(*) FROM forager_manifest m WHERE m.job = j.name)
                 FROM forager_jobs j ORDER BY name",
                &[],
            )
            .await
            .map_err(|e| self.query_error(what, e))?;
        rows.iter()
            .map(|r| {
                Ok(JobRow {
                    name: r.try_get(0)?,
                    status: r.try_get(1)?,
                    owner: r.try_get(2)?,
                    epoch: r.try_get(3)?,
                    lease_until: r.try_get(4)?,
                    leased: r.try_get(5)?,
                    spec_sha256: r.try_get(6)?,
                    failure: r.try_get(7)?,
                    targets: r.try_get(8)?,
                })
            })
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(|e| self.query_error(what, e))
    }
}
