//! Manifest rows in the database, so that every node's `status` and
//! `export` can see the targets of every job, wherever it ran.
//!
//! A row is keyed by (job, row number): the number is the row's place in
//! the job's manifest, which the checkpoint restores, so a node that takes a
//! job over and sends a row again (it was written after the last checkpoint
//! the old owner stored) writes the same row, never a second one. Rows are
//! written under the lease's fence like checkpoints.

use crate::{Cluster, Lease, Result};

impl Cluster {
    /// Record `rows` (row number, the manifest line's JSON) of `lease`'s job.
    /// A row number already recorded keeps its first row; returns how many were new.
    pub async fn record_manifest(&self, lease: &Lease, rows: &[(i64, &str)]) -> Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let what = format!(
            "job {} (epoch {}): record manifest rows",
            lease.job, lease.epoch
        );
        let numbers: Vec<i64> = rows.iter().map(|(n, _)| *n).collect();
        let texts: Vec<&str> = rows.iter().map(|(_, t)| *t).collect();
        let mut client = self.client().await?;
        let txn = client
            .transaction()
            .await
            .map_err(|e| self.query_error(&what, e))?;
        lease.fence(self, &txn).await?;
        let n = txn
            .execute(
                "INSERT INTO forager_manifest (job, row_no, epoch, node, row_json)
                 SELECT $1, n, $2, $3, t FROM unnest($4::bigint[], $5::text[]) AS r(n, t)
                 ON CONFLICT (job, row_no) DO NOTHING",
                &[&lease.job, &lease.epoch, &self.node(), &numbers, &texts],
            )
            .await
            .map_err(|e| self.query_error(&what, e))?;
        txn.commit().await.map_err(|e| self.query_error(&what, e))?;
        Ok(n)
    }

    /// Every recorded manifest row of `job`, in row order: (row number, node that recorded it, JSON).
    pub async fn manifest(&self, job: &str) -> Result<Vec<(i64, String, String)>> {
        let what = format!("job {job}: read manifest rows");
        let client = self.client().await?;
        client
            .query(
                "SELECT row_no, node, row_json FROM forager_manifest WHERE job = $1 ORDER BY row_no",
                &[&job],
            )
            .await
            .map_err(|e| self.query_error(&what, e))?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(|e| self.query_error(&what, e))
    }
}
